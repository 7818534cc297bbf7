// The tensor cores' `m16n8k16` with `f32` accumulators takes `f16` or `bf16` inputs only: an
// atom of `f32` is not one (`f32` is not an `MmaInput`).
use dlmd::kernel::Block;
use dlmd::kernel::mma::M16N8K16;

pub fn body(block: Block<'_, 256>) {
    let _acc = block.accumulators::<M16N8K16<f32>, 2, 4, 4, 4>();
}

fn main() {}
