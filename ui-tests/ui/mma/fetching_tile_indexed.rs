// The copies into a `Fetching` tile may not have landed: nothing reads it. It has no indexing
// (nor any reading method) until `landed` and a barrier make it `Readable`.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::{Const, DeviceMdspan, Dims};

type Tiles = TileOf<bf16, (Const<128>, Const<32>), RightPadded<8>>;

pub fn body(block: Block<'_, 256, Tiles>, a: DeviceMdspan<'_, bf16, Dims<2>>) {
    let (mut block, tile) = block.split();
    let fetching = block.fetch(tile, &a, [0, 0]);
    let _ = fetching[[0, 0]];
}

fn main() {}
