// `specialise` invalidates the stages' barrier objects when it returns, and the next call refills
// the stages for the next chunk. A `Full` kept from one call into the next would read a stage the
// producer is overwriting. A role's handles are neither `Send` nor `Sync` (and live as long as
// the call, `'c`), so no shared place a role captures can hold one past its closure.
use std::sync::Mutex;
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, Cols, Full, Pipeline};
use dlmd::{Const, DeviceMdspanMut, Dims};

type X = TileOf<bf16, (Const<128>, Const<64>), Swizzle128>;
type W = TileOf<bf16, (Const<256>, Const<64>), Swizzle128>;
type XMap<'a> = TensorMap<'a, bf16, (Const<128>, Const<64>), Swizzle128>;
type WMap<'a> = TensorMap<'a, bf16, (Const<256>, Const<64>), Swizzle128>;
type Linear<'k> = Block<'k, 384, Pipeline<4, X, W>, (Const<128>, Const<256>)>;

pub fn body(block: Linear<'_>, x: XMap<'_>, w: WMap<'_>, y: DeviceMdspanMut<'_, bf16, Dims<2>>) {
    let (mut block, mut stages) = block.split();
    let kept: Mutex<Vec<Full<'_, 4, X, W>>> = Mutex::new(Vec::new());
    let chunks = block.chunks(y);
    block.specialise(
        &mut stages,
        chunks,
        |producer, [i0, j0]| producer.load(&x, [i0, 0], &w, [j0, 0]),
        |wg, consumer, part| {
            let running = wg.mma(Accumulators::<bf16, Cols<256>>::zero(), consumer.wait());
            let acc = wg.wait(running);
            kept.lock().unwrap().push(consumer.wait());
            wg.store(part, acc, |_, v| bf16::from_f32(v));
        },
    );
}

fn main() {
    let _ = body
        as fn(Linear<'static>, XMap<'static>, WMap<'static>, DeviceMdspanMut<'static, bf16, Dims<2>>);
}
