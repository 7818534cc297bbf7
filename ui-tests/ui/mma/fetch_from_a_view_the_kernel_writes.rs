// `cp.async` reads global memory that nothing writes while the kernel runs: from a view the
// kernel writes, another block's stores could race with the copies. `fetch` takes a `Shared`
// view, and a view the kernel writes is `Unique`.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::{Const, DeviceMdspanMut, Dims};

type Tiles = TileOf<bf16, (Const<128>, Const<32>), RightPadded<8>>;

pub fn body(block: Block<'_, 256, Tiles>, a: DeviceMdspanMut<'_, bf16, Dims<2>>) {
    let (mut block, tile) = block.split();
    let fetching = block.fetch(tile, &a, [0, 0]);
    let _written = block.landed(fetching);
}

fn main() {}
