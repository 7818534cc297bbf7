// A tile whose copies are in flight is `Fetching`: a second fetch into it would race with the
// first one's copies. `fetch` takes a `Writable` tile, and a `Fetching` is not one.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::{Const, DeviceMdspan, Dims};

type Tiles = TileOf<bf16, (Const<128>, Const<32>), RightPadded<8>>;

pub fn body(block: Block<'_, 256, Tiles>, a: DeviceMdspan<'_, bf16, Dims<2>>) {
    let (mut block, tile) = block.split();
    let fetching = block.fetch(tile, &a, [0, 0]);
    let _again = block.fetch(fetching, &a, [0, 32]);
}

fn main() {}
