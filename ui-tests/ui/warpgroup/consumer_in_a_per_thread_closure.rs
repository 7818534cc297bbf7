// A consumer's side of the pipeline counts the stages its warpgroup has taken, the same count in
// each of its 128 threads, and a stage is released once by each of its warps. Taken from a
// per-thread closure (here `store`'s), each thread would take stages of its own, the counts
// would part, and the stage's barrier would see arrivals from some warps many times. `Consumer`
// is not `Sync`, so no per-thread closure can capture it.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, Cols, Pipeline};
use dlmd::{Const, DeviceMdspanMut, Dims};

type X = TileOf<bf16, (Const<128>, Const<64>), Swizzle128>;
type W = TileOf<bf16, (Const<256>, Const<64>), Swizzle128>;
type XMap<'a> = TensorMap<'a, bf16, (Const<128>, Const<64>), Swizzle128>;
type WMap<'a> = TensorMap<'a, bf16, (Const<256>, Const<64>), Swizzle128>;
type Linear<'k> = Block<'k, 384, Pipeline<4, X, W>, (Const<128>, Const<256>)>;

pub fn body(block: Linear<'_>, x: XMap<'_>, w: WMap<'_>, y: DeviceMdspanMut<'_, bf16, Dims<2>>) {
    let (mut block, mut stages) = block.split();
    let chunks = block.chunks(y);
    block.specialise(
        &mut stages,
        chunks,
        |producer, [i0, j0]| producer.load(&x, [i0, 0], &w, [j0, 0]),
        |wg, consumer, part| {
            let running = wg.mma(Accumulators::<bf16, Cols<256>>::zero(), consumer.wait());
            let acc = wg.wait(running);
            wg.store(part, acc, |_, v| {
                let _stage = consumer.wait();
                bf16::from_f32(v)
            });
        },
    );
}

fn main() {
    let _ = body
        as fn(Linear<'static>, XMap<'static>, WMap<'static>, DeviceMdspanMut<'static, bf16, Dims<2>>);
}
