// `landed` waits for this thread's copies only: the pieces other threads copied are not sure to
// be seen until a barrier. The tile it returns is `Written`, and fragments are loaded from
// `Readable` tiles only, which the barrier after `landed` makes.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::kernel::mma::M16N8K16;
use dlmd::{Const, DeviceMdspan, Dims};

type Tiles = TileOf<bf16, (Const<128>, Const<32>), RightPadded<8>>;

pub fn body(block: Block<'_, 256, Tiles>, a: DeviceMdspan<'_, bf16, Dims<2>>) {
    let (mut block, tile) = block.split();
    let fetching = block.fetch(tile, &a, [0, 0]);
    let written = block.landed(fetching);
    let _ = block.load_a::<M16N8K16<bf16>, _, _, 2, 4, 4, 4>(&written, 0);
}

fn main() {}
