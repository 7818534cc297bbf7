// `cp.async` copies the tile in pieces of 16 bytes along its fastest dimension: rows of 4
// `bf16` (8 bytes) would have each piece run into the next row. The tile's fastest dimension
// holds a multiple of 16 bytes, checked where the kernel is compiled.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::{Const, DeviceMdspan, Dims};

type Tiles = TileOf<bf16, (Const<128>, Const<4>)>;

pub fn body(block: Block<'_, 256, Tiles>, a: DeviceMdspan<'_, bf16, Dims<2>>) {
    let (mut block, tile) = block.split();
    let fetching = block.fetch(tile, &a, [0, 0]);
    let _written = block.landed(fetching);
}

fn main() {
    let _ = body as fn(Block<'static, 256, Tiles>, DeviceMdspan<'static, bf16, Dims<2>>);
}
