// Each lane holds other elements of the warp's accumulators: read in uniform code, a value
// would differ from lane to lane while the code treats it as one. Accumulators have no
// accessor; only the block's operations, and `store_accumulators` per element, use them.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::mma::M16N8K16;

pub fn body(block: Block<'_, 256>) {
    let acc = block.accumulators::<M16N8K16<bf16>, 2, 4, 4, 4>();
    let _first: f32 = acc.c[0][0][0];
}

fn main() {}
