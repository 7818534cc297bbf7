// A swizzled tile is read and written through the copy engine and `wgmma`, which swizzle
// addresses: it needs its swizzle's alignment and a phase the pipeline keeps. Declared directly
// in the block's tile set, it would be written and read by the threads as a plain tile. A
// `Swizzle` is not a tile layout; swizzled tiles live in a `Pipeline`.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::Const;

type X = TileOf<bf16, (Const<128>, Const<64>), Swizzle128>;

pub fn body(block: Block<'_, 256, X>) {
    let (mut block, x) = block.split();
    let x = block.write(x, |_| bf16::ONE);
    let _ = block.sync(x);
}

fn main() {
    let _ = body as fn(Block<'static, 256, X>);
}
