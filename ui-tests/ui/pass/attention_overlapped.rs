// Attention's steps overlapped, as `Warpgroup::behind` takes them: the next tile's scores run
// first and this tile's `P · V` behind them; a product from accumulators lent (`mma_acc_kept`)
// runs behind another, the accumulators read on.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, KByN, Keys, RowStats, Streams};
use dlmd::{Const, DeviceMdspanMut, Dims};

type Tile = TileOf<bf16, (Const<128>, Const<64>), Swizzle128>;
type Map<'a> = TensorMap<'a, bf16, (Const<128>, Const<64>), Swizzle128>;
type Attention<'k> = Block<'k, 384, Streams<2, Tile, Tile, KByN<Tile>>, (Const<128>, Const<64>)>;

pub fn body(block: Attention<'_>, q: Map<'_>, k: Map<'_>, v: Map<'_>, o: DeviceMdspanMut<'_, bf16, Dims<2>>) {
    let (mut block, mut tiles) = block.split();
    let chunks = block.chunks(o);
    block.specialise_streams(
        &mut tiles,
        chunks,
        |producer, [i0, _]| {
            producer.load_resident(&q, [i0, 0]);
            producer.load_first(&k, [0, 0]);
            producer.load_second(&v, [0, 0]);
        },
        |wg, consumer, part| {
            let q_rows = consumer.resident();
            let mut stats = RowStats::new(wg);
            let scores = wg.mma_resident::<bf16, _, _, 128, _>(Accumulators::zero(), &q_rows, consumer.first());
            let probs = stats.update(wg.wait(scores), 1.0, Keys::new(0, 0, 256, 256, false));
            // The next tile's scores first, this tile's `P · V` behind them.
            let keys = consumer.first();
            let next = wg.mma_resident::<bf16, _, _, 128, _>(Accumulators::zero(), &q_rows, keys.borrow());
            let both = wg.behind(next).mma_pv::<bf16, _, 64>(Accumulators::zero(), probs, consumer.second());
            let (next, running) = wg.wait(both);
            let acc = wg.wait(running);
            // A product from the scores, lent, behind another product of the same keys.
            let again = wg.mma_resident::<bf16, _, _, 128, _>(Accumulators::zero(), &q_rows, keys.borrow());
            let both = wg.behind(again).mma_acc_kept::<bf16, _, 128, 64, _>(acc, &next, keys.by_n());
            let (_again, running) = wg.wait(both);
            let probs = stats.update(next, 1.0, Keys::new(0, 128, 256, 256, false));
            let acc = wg.wait(running);
            drop(keys);
            let running = wg.mma_pv::<bf16, _, 64>(acc, probs, consumer.second());
            let acc = stats.finish(wg.wait(running));
            wg.store(part, acc, |_, x| bf16::from_f32(x));
        },
    );
}

fn main() {
    let _ = body
        as fn(
            Attention<'static>,
            Map<'static>,
            Map<'static>,
            Map<'static>,
            DeviceMdspanMut<'static, bf16, Dims<2>>,
        );
}
