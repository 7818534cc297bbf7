// A statistic of each column (a query's log-sum-exp, where the backward pass's tiles are
// transposed and the queries are columns) is held as the threads hold their columns of
// accumulators of one width: values made for 128 columns do not fit scores of 64, whose
// threads hold other columns.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, Queries, Streams};
use dlmd::{Const, DeviceMdspanMut, Dims};

type Rows = TileOf<bf16, (Const<128>, Const<64>), Swizzle128>;
type Half = TileOf<bf16, (Const<64>, Const<64>), Swizzle128>;
type Map<'a> = TensorMap<'a, bf16, (Const<128>, Const<64>), Swizzle128>;
type HalfMap<'a> = TensorMap<'a, bf16, (Const<64>, Const<64>), Swizzle128>;
type Gradient<'k> = Block<'k, 384, Streams<2, Rows, Half, Half, Rows>, (Const<128>, Const<64>)>;

pub fn body(block: Gradient<'_>, k: Map<'_>, v: Map<'_>, q: HalfMap<'_>, dk: DeviceMdspanMut<'_, bf16, Dims<2>>) {
    let (mut block, mut tiles) = block.split();
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
            let lse = wg.cols::<128>(|_| 0.0);
            let pt = wg.recompute_probs(st, &lse, 1.0, &Queries::new(0, 0, 64, 128, false));
            let _grads = consumer.second();
            wg.store(part, pt, |_, x| bf16::from_f32(x));
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
        );
}
