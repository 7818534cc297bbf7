// `mma_with` hands its closure the block it borrows: the closure works through that argument.
// The block outside is borrowed by the call until the products are done, so the closure cannot
// reach it (and through it a barrier or a fetch the products would not see coming).
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightSwizzled, TileOf};
use dlmd::kernel::mma::M16N8K16;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::{Const, DeviceMdspan, Dims};

type TileA = TileOf<bf16, (Const<128>, Const<64>), RightSwizzled<Swizzle128>>;
type TileB = TileOf<bf16, (Const<64>, Const<128>), RightSwizzled<Swizzle128>>;

pub fn body(block: Block<'_, 128, (TileA, TileB, TileA)>, a: DeviceMdspan<'_, bf16, Dims<2>>) {
    let (mut block, (ta, tb, next)) = block.split();
    let fetching = block.fetch(ta, &a, [0, 0]);
    let landed = block.landed(fetching);
    let written = block.write(tb, |_| bf16::ZERO);
    let (ra, rb) = block.sync((landed, written));
    let acc = block.accumulators::<M16N8K16<bf16>, 2, 2, 4, 8>();
    let (_acc, _next) = block.mma_with(acc, &ra, &rb, |_| block.fetch(next, &a, [0, 64]));
}

fn main() {}
