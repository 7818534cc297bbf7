// A product over an exchange reads every consumer's panel: its depth is the exchange's columns
// (128 keys, 64 from each of two consumers), and its `B` tile must hold a row for each. The
// queries' tile of 64 rows is not the keys' of 128: multiplying the exchanged scores'
// gradient by it is refused when the kernel is built, where it would read past the tile.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, Cols, Exchange, Streams};
use dlmd::{Const, DeviceMdspanMut, Dims};

type Rows = TileOf<bf16, (Const<128>, Const<128>), Swizzle128>;
type Half = TileOf<bf16, (Const<64>, Const<128>), Swizzle128>;
type Map<'a> = TensorMap<'a, bf16, (Const<128>, Const<128>), Swizzle128>;
type HalfMap<'a> = TensorMap<'a, bf16, (Const<64>, Const<128>), Swizzle128>;
type Gradient<'k> = Block<'k, 384, (Streams<2, Rows, Half, Half, Rows>, Exchange<bf16, 128>), (Const<128>, Const<128>)>;

pub fn body(block: Gradient<'_>, k: Map<'_>, v: Map<'_>, q: HalfMap<'_>, dk: DeviceMdspanMut<'_, bf16, Dims<2>>) {
    let (mut block, (mut tiles, exchange)) = block.split();
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
            let ds = wg.exchange(&exchange, &st);
            // `dQ = dS · K` wants the keys' tile: the queries' has 64 rows, not 128.
            let dq = wg.mma_exchanged(Accumulators::<bf16, Cols<64>>::zero(), &ds, queries.by_n());
            let _dq = wg.wait(dq);
            drop(consumer.second());
            let acc = Accumulators::<bf16, Cols<128>>::zero();
            wg.store(part, acc, |_, x| bf16::from_f32(x));
        },
    );
}

fn main() {
    let _ = body as fn(Gradient<'static>, Map<'static>, Map<'static>, HalfMap<'static>, DeviceMdspanMut<'static, bf16, Dims<2>>);
}
