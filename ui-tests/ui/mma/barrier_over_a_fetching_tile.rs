// A barrier does not wait for `cp.async` copies: past it, a `Fetching` tile's copies may still
// be in flight. A `Fetching` does not pass a barrier; `landed` waits for its copies first and
// gives back the `Written` tile that does.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::{Const, DeviceMdspan, Dims};

type Tiles = TileOf<bf16, (Const<128>, Const<32>), RightPadded<8>>;

pub fn body(block: Block<'_, 256, Tiles>, a: DeviceMdspan<'_, bf16, Dims<2>>) {
    let (mut block, tile) = block.split();
    let fetching = block.fetch(tile, &a, [0, 0]);
    let _readable = block.sync(fetching);
}

fn main() {}
