// `cp.async` writes its 16 bytes 16-aligned: with rows of 32 `bf16` padded by 4 (72 bytes
// apart), every other row's pieces would be misaligned. A fetched tile's lines start a
// multiple of 16 bytes apart, checked where the kernel is compiled.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::{Const, DeviceMdspan, Dims};

type Tiles = TileOf<bf16, (Const<128>, Const<32>), RightPadded<4>>;

pub fn body(block: Block<'_, 256, Tiles>, a: DeviceMdspan<'_, bf16, Dims<2>>) {
    let (mut block, tile) = block.split();
    let fetching = block.fetch(tile, &a, [0, 0]);
    let _written = block.landed(fetching);
}

fn main() {
    let _ = body as fn(Block<'static, 256, Tiles>, DeviceMdspan<'static, bf16, Dims<2>>);
}
