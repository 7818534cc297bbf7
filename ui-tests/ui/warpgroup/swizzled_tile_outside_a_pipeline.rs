// A pipeline's swizzled tile is read and written through the copy engine and `wgmma`, which
// swizzle addresses: it needs its swizzle's alignment and a phase the pipeline keeps. A bare
// `Swizzle` is therefore not a layout of a block's tiles: such tiles live in a `Pipeline`. A
// block's own swizzled tiles, filled by `cp.async` and read by `ldmatrix`, are
// `RightSwizzled<S>` or `LeftSwizzled<S>`.
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
