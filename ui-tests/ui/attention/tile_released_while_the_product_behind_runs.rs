// A wait on products issued one behind another sees only the older done: the younger still
// reads its tile (here the keys, lent `by_n`), which cannot be released until the younger's
// own wait. Dropping the tile's handle first would let the producer refill it under the product.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, KByN, Streams};
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
            let keys = consumer.first();
            let scores = wg.mma_resident::<bf16, _, _, 128, _>(Accumulators::zero(), &q_rows, keys.borrow());
            let scores = wg.wait(scores);
            let again = wg.mma_resident::<bf16, _, _, 128, _>(Accumulators::zero(), &q_rows, keys.borrow());
            let both = wg.behind(again).mma_acc::<bf16, _, 128, 64, _>(Accumulators::zero(), scores, keys.by_n());
            let (_again, running) = wg.wait(both);
            drop(keys);
            let acc = wg.wait(running);
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
