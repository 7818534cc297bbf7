//! The guide's Hopper kernel (`dlmd::guide::tensor_cores`), as it prints it: `y = x · wᵀ` with a
//! producer warpgroup and two consumer warpgroups over four stages.

use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, Buffered, Cols, Pipeline};
use dlmd::{Const, DeviceMdspanMut, Dims};

/// A stage: 128 rows of `x` and 256 of `w`, 64 deep (one 128-byte swizzled row each).
pub type X = TileOf<bf16, (Const<128>, Const<64>), Swizzle128>;
pub type W = TileOf<bf16, (Const<256>, Const<64>), Swizzle128>;
/// A consumer warpgroup's `64 × 256` `f32` accumulators of `bf16` products.
pub type Acc = Accumulators<bf16, Cols<256>>;

/// `y = x · wᵀ`: a producer warpgroup and two consumers of `64 × 256` each, four stages; the
/// accumulators go out through shared memory and the bulk copy engine (`Buffered`).
#[dlmd::kernel(min_blocks_per_sm = 1)]
pub fn linear_bf16_simple(
    block: Block<'_, 384, Pipeline<4, X, W, Buffered>, (Const<128>, Const<256>)>,
    x: TensorMap<'_, bf16, (Const<128>, Const<64>), Swizzle128>,
    w: TensorMap<'_, bf16, (Const<256>, Const<64>), Swizzle128>,
    y: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    let ([m, k], [n, _]) = (x.extents(), w.extents());
    if w.extents()[1] != k || y.extent(0) != m || y.extent(1) != n {
        return;
    }
    let steps = k.div_ceil(64);
    let (mut block, mut stages) = block.split();
    let chunks = block.chunks(y);
    block.specialise(
        &mut stages,
        chunks,
        // One thread fills the stages, chunk after chunk; past the edges they fill with zeros.
        |producer, [i0, j0]| {
            for s in 0..steps {
                producer.load(&x, [i0, 64 * s], &w, [j0, 64 * s]);
            }
        },
        // Each consumer warpgroup: its 64 rows of the chunk, one group of products running
        // while the next is issued.
        |wg, consumer, part| {
            let mut acc = wg.mma(Acc::zero(), consumer.wait());
            for _ in 1..steps {
                let running = wg.mma(acc, consumer.wait());
                acc = wg.wait(running);
            }
            let acc = wg.wait(acc);
            wg.store(part, acc, |_, v| bf16::from_f32(v));
        },
    );
}
