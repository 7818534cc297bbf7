// The backward pass reads a streamed tile twice (keys as `Kᵀ` in the scores, as `K` in the
// queries' gradient), so its products borrow it (`Landed::borrow`, `Landed::by_n`) instead of
// holding it. A borrowed tile cannot be released (dropped, which lets the producer refill the
// stage) while a product that reads it runs.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, Streams};
use dlmd::{Const, DeviceMdspanMut, Dims};

type Rows = TileOf<bf16, (Const<128>, Const<64>), Swizzle128>;
type Keys = TileOf<bf16, (Const<64>, Const<64>), Swizzle128>;
type Map<'a> = TensorMap<'a, bf16, (Const<128>, Const<64>), Swizzle128>;
type KeyMap<'a> = TensorMap<'a, bf16, (Const<64>, Const<64>), Swizzle128>;
type Gradient<'k> = Block<'k, 384, Streams<2, Rows, Keys, Keys, Rows>, (Const<128>, Const<64>)>;

pub fn body(block: Gradient<'_>, q: Map<'_>, d_o: Map<'_>, k: KeyMap<'_>, dq: DeviceMdspanMut<'_, bf16, Dims<2>>) {
    let (mut block, mut tiles) = block.split();
    let chunks = block.chunks(dq);
    block.specialise_streams(
        &mut tiles,
        chunks,
        |producer, [i0, _]| {
            producer.load_residents(&q, [i0, 0], &d_o, [i0, 0]);
            producer.load_first(&k, [0, 0]);
            producer.load_second(&k, [0, 0]);
        },
        |wg, consumer, part| {
            let (q_rows, _do_rows) = consumer.residents();
            let keys = consumer.first();
            let s = wg.mma_resident::<bf16, _, _, 64, _>(Accumulators::zero(), &q_rows, keys.borrow());
            drop(keys);
            let s = wg.wait(s);
            let _values = consumer.second();
            wg.store(part, s, |_, x| bf16::from_f32(x));
        },
    );
}

fn main() {
    let _ = body
        as fn(
            Gradient<'static>,
            Map<'static>,
            Map<'static>,
            KeyMap<'static>,
            DeviceMdspanMut<'static, bf16, Dims<2>>,
        );
}
