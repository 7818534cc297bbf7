// `Tile::get_run` reads `K` neighbours along a row as one vector: in a swizzled tile, the 8
// `bf16` from column 4 lie in two 16-byte pieces that the swizzle moves apart, so the vector
// would hold other elements. A swizzled tile is read element by element (`get`, `get_or`) or
// as `mma` operands, checked where the kernel is compiled.
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
    let _run = readable.get_run::<8>([0, 4]);
}

fn main() {
    let _ = body as fn(Block<'static, 64, Tiles>);
}
