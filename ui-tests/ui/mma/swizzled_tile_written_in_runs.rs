// `Block::write_runs` stores runs of `K` neighbours along a row as one vector: in a swizzled
// tile, a run of 16 `bf16` spans two 16-byte pieces that the swizzle moves apart, so the store
// would land on other elements. A swizzled tile is written by `fetch` or `write`, element by
// element, checked where the kernel is compiled.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightSwizzled, TileOf};
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::Const;

type Tiles = TileOf<bf16, (Const<8>, Const<64>), RightSwizzled<Swizzle128>>;

pub fn body(block: Block<'_, 32, Tiles>) {
    let (mut block, tile) = block.split();
    let _written = block.write_runs(tile, |[i, j]| [bf16::from_f32((i + j) as f32); 16]);
}

fn main() {
    let _ = body as fn(Block<'static, 32, Tiles>);
}
