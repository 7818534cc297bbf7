// Blocks add their shares of `dQ` to one `f32` accumulator atomically. An atomic view is not
// `Sync`: through `Thread::atomic_fetch_add` each thread could read its own value back and
// branch on it, splitting a warpgroup around its aligned instructions. So the roles' closures
// cannot capture one; wrapped as `Sums`, which only adds and returns nothing, they can, and
// `Warpgroup::add_to` takes that.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, Cols, Streams};
use dlmd::{Const, DeviceMdspanAtomic, DeviceMdspanMut, Dims};

type Rows = TileOf<bf16, (Const<128>, Const<64>), Swizzle128>;
type Half = TileOf<bf16, (Const<64>, Const<64>), Swizzle128>;
type Map<'a> = TensorMap<'a, bf16, (Const<128>, Const<64>), Swizzle128>;
type HalfMap<'a> = TensorMap<'a, bf16, (Const<64>, Const<64>), Swizzle128>;
type Gradient<'k> = Block<'k, 384, Streams<2, Rows, Half, Half, Rows>, (Const<128>, Const<64>)>;

pub fn body(
    block: Gradient<'_>,
    k: Map<'_>,
    v: Map<'_>,
    q: HalfMap<'_>,
    dk: DeviceMdspanMut<'_, bf16, Dims<2>>,
    dq: DeviceMdspanAtomic<'_, f32, Dims<2>>,
) {
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
            let _ = consumer.residents();
            drop((consumer.first(), consumer.second()));
            let _ = &dq;
            let acc = Accumulators::<bf16, Cols<64>>::zero();
            wg.store(part, acc, |_, x| bf16::from_f32(x));
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
