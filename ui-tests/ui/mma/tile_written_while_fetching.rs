// A tile handed to `fetch` is the copies' until they land: written meanwhile by the block, its
// elements would be overwritten by whichever lands last. `fetch` takes the tile by value, so it
// is gone until `landed` gives it back.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::{Const, DeviceMdspan, Dims};

type Tiles = TileOf<bf16, (Const<128>, Const<32>), RightPadded<8>>;

pub fn body(block: Block<'_, 256, Tiles>, a: DeviceMdspan<'_, bf16, Dims<2>>) {
    let (mut block, tile) = block.split();
    let _fetching = block.fetch(tile, &a, [0, 0]);
    let _written = block.write(tile, |_| bf16::ZERO);
}

fn main() {}
