// `mma_with` runs its closure while the first step's fragments are loading and the later steps'
// are still to be read from the operand tiles. The closure gets the block, to fetch other
// stages, but the operand tiles stay borrowed through it: handing one to a barrier, which would
// make it writable and let a fetch refill it under the products, does not compile.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightSwizzled, TileOf};
use dlmd::kernel::mma::M16N8K16;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::{Const, DeviceMdspan, Dims};

type TileA = TileOf<bf16, (Const<128>, Const<64>), RightSwizzled<Swizzle128>>;
type TileB = TileOf<bf16, (Const<64>, Const<128>), RightSwizzled<Swizzle128>>;

pub fn body(block: Block<'_, 128, (TileA, TileB)>, a: DeviceMdspan<'_, bf16, Dims<2>>) {
    let (mut block, (ta, tb)) = block.split();
    let fetching = block.fetch(ta, &a, [0, 0]);
    let landed = block.landed(fetching);
    let written = block.write(tb, |_| bf16::ZERO);
    let (ra, rb) = block.sync((landed, written));
    let acc = block.accumulators::<M16N8K16<bf16>, 2, 2, 4, 8>();
    let (_acc, _) = block.mma_with(acc, &ra, &rb, |block| {
        let writable = block.sync(ra);
        block.fetch(writable, &a, [0, 64])
    });
}

fn main() {}
