// `behind` issues the next product behind one still running, and its wait waits for that one
// alone. Accumulators already waited for (or never issued) have no group to wait behind: the
// warpgroup could not tell which groups the wait must see done.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, Cols, KByN, Keys, RowStats, Streams};
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
            let probs = stats.update(wg.wait(scores), 1.0, Keys::new(0, 0, 128, 128, false));
            let done = Accumulators::<bf16, Cols<128>>::zero();
            let both = wg.behind(done).mma_pv::<bf16, _, 64>(Accumulators::zero(), probs, consumer.second());
            let (_scores, running) = wg.wait(both);
            wg.store(part, stats.finish(wg.wait(running)), |_, x| bf16::from_f32(x));
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
