// A stage that the tensor cores have read in this phase may still be read by a slower warp:
// refilled by `cp.async` before a barrier, it would be overwritten under that warp's
// `ldmatrix`. `fetch` takes a `Writable` tile, which only the barrier after the reads makes.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::kernel::mma::M16N8K16;
use dlmd::{Const, DeviceMdspan, Dims};

type TileA = TileOf<bf16, (Const<128>, Const<32>), RightPadded<8>>;
type TileB = TileOf<bf16, (Const<32>, Const<128>), RightPadded<8>>;

pub fn body(
    block: Block<'_, 256, (TileA, TileB)>,
    a: DeviceMdspan<'_, bf16, Dims<2>>,
    b: DeviceMdspan<'_, bf16, Dims<2>>,
) {
    let (mut block, (ta, tb)) = block.split();
    let fa = block.fetch(ta, &a, [0, 0]);
    let fb = block.fetch(tb, &b, [0, 0]);
    let (wa, wb) = (block.landed(fa), block.landed(fb));
    let (ra, rb) = block.sync((wa, wb));
    let acc = block.accumulators::<M16N8K16<bf16>, 2, 4, 4, 4>();
    let _acc = block.mma(acc, &ra, &rb);
    // The next step into the stage just multiplied, with no barrier between.
    let _next = block.fetch(ra, &a, [0, 32]);
}

fn main() {}
