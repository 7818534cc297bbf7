// Attention's forward step with each row's log-sum-exp: the output's chunks paired with the
// chunks of a view of their rows' values, each part taken apart, the output's elements and the
// rows' values stored each by its own store.
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
type Out<'a> = DeviceMdspanMut<'a, bf16, Dims<2>>;
type Lse<'a> = DeviceMdspanMut<'a, f32, Dims<1>>;

pub fn body(block: Attention<'_>, q: Map<'_>, k: Map<'_>, v: Map<'_>, o: Out<'_>, lse: Lse<'_>) {
    let (mut block, mut tiles) = block.split();
    let Some(chunks) = block.chunks(o).with_rows(lse) else { return };
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
            let scores = wg.wait(scores);
            let probs = stats.update(scores, 1.0, Keys::new(0, 0, 128, 128, false));
            let running = wg.mma_pv::<bf16, _, 64>(Accumulators::zero(), probs, consumer.second());
            let (acc, lse) = stats.finish_with_lse(wg.wait(running));
            let (part, rows) = part.split_rows();
            wg.store(part, acc, |_, x| bf16::from_f32(x));
            wg.store_rows(rows, lse, |_, x| x);
        },
    );
}

fn main() {
    let _ = body
        as fn(Attention<'static>, Map<'static>, Map<'static>, Map<'static>, Out<'static>, Lse<'static>);
}
