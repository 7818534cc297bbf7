// Sum buffers hold one buffer for each warp of the block's consumer warpgroups, which
// `add_rows_to` finds by the warpgroup's index. A block of 384 threads has two consumers, so
// its buffers are `SumBuffers<2>`; `SumBuffers<1>` would give the second consumer's warps no
// buffer of their own, and is refused when the kernel is built.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, Cols, Streams, SumBuffers, Sums};
use dlmd::{Const, DeviceMdspanAtomic, DeviceMdspanMut, Dims};

type Rows = TileOf<bf16, (Const<128>, Const<64>), Swizzle128>;
type Half = TileOf<bf16, (Const<64>, Const<64>), Swizzle128>;
type Map<'a> = TensorMap<'a, bf16, (Const<128>, Const<64>), Swizzle128>;
type HalfMap<'a> = TensorMap<'a, bf16, (Const<64>, Const<64>), Swizzle128>;
type Gradient<'k> = Block<'k, 384, (Streams<2, Rows, Half, Half, Rows>, SumBuffers<1>), (Const<128>, Const<64>)>;

pub fn body(
    block: Gradient<'_>,
    k: Map<'_>,
    v: Map<'_>,
    q: HalfMap<'_>,
    dk: DeviceMdspanMut<'_, bf16, Dims<2>>,
    dq: DeviceMdspanAtomic<'_, f32, Dims<2>>,
) {
    let dq = Sums::new(dq);
    let (mut block, (mut tiles, buffers)) = block.split();
    let chunks = block.chunks(dk);
    block.specialise_streams(
        &mut tiles,
        chunks,
        |producer, [n0, _]| {
            producer.load_residents(&k, [n0, 0], &v, [n0, 0]);
            producer.load_first(&q, [0, 0]);
            producer.load_second(&q, [0, 0]);
        },
        |wg, consumer, part| {
            let (k_rows, _v_rows) = consumer.residents();
            let queries = consumer.first();
            let st = wg.mma_resident::<bf16, _, _, 64, _>(Accumulators::zero(), &k_rows, queries.borrow());
            let st = wg.wait(st);
            drop(consumer.second());
            wg.add_rows_to(&dq, &buffers, [0, 0], 64, st, |_, x| x);
            wg.store(part, Accumulators::<bf16, Cols<64>>::zero(), |_, x| bf16::from_f32(x));
        },
    );
}

fn main() {
    let _ = body
        as fn(
            Gradient<'static>,
            Map<'static>,
            Map<'static>,
            HalfMap<'static>,
            DeviceMdspanMut<'static, bf16, Dims<2>>,
            DeviceMdspanAtomic<'static, f32, Dims<2>>,
        );
}
