// A swizzled tile permutes each row's 16-byte pieces row by row: no strided view describes
// where its elements are, so a view of it would read the wrong elements. `Tile::view` refuses
// a swizzled tile where the kernel is compiled; `Tile::get` reads its elements.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightSwizzled, TileOf};
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::Const;

type Tiles = TileOf<bf16, (Const<8>, Const<64>), RightSwizzled<Swizzle128>>;

pub fn body(block: Block<'_, 64, Tiles>) {
    let (mut block, tile) = block.split();
    let written = block.write(tile, |[i, j]| bf16::from_f32((i + j) as f32));
    let readable = block.sync(written);
    let _view = readable.view();
}

fn main() {
    let _ = body as fn(Block<'static, 64, Tiles>);
}
