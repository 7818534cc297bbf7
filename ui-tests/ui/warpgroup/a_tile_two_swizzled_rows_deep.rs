// `wgmma` reads its `A` tile K-major, one 128-byte swizzled row of `k` a row (64 `bf16`s): a
// tile 128 deep is two column panels, which the descriptor of one row cannot describe. Make
// the stage 64 deep (the tensor map may still fill wider tiles, as `KByN` operands use). The
// kernel does not compile.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, Cols, Pipeline};
use dlmd::{Const, DeviceMdspanMut, Dims};

type X = TileOf<bf16, (Const<128>, Const<128>), Swizzle128>;
type W = TileOf<bf16, (Const<256>, Const<128>), Swizzle128>;
type XMap<'a> = TensorMap<'a, bf16, (Const<128>, Const<128>), Swizzle128>;
type WMap<'a> = TensorMap<'a, bf16, (Const<256>, Const<128>), Swizzle128>;
type Linear<'k> = Block<'k, 384, Pipeline<2, X, W>, (Const<128>, Const<256>)>;

pub fn body(block: Linear<'_>, x: XMap<'_>, w: WMap<'_>, y: DeviceMdspanMut<'_, bf16, Dims<2>>) {
    let (mut block, mut stages) = block.split();
    let chunks = block.chunks(y);
    block.specialise(
        &mut stages,
        chunks,
        |producer, [i0, j0]| producer.load(&x, [i0, 0], &w, [j0, 0]),
        |wg, consumer, part| {
            let running = wg.mma(Accumulators::<bf16, Cols<256>>::zero(), consumer.wait());
            let acc = wg.wait(running);
            wg.store(part, acc, |_, v| bf16::from_f32(v));
        },
    );
}

fn main() {
    let _ = body as fn(Linear<'static>, XMap<'static>, WMap<'static>, DeviceMdspanMut<'static, bf16, Dims<2>>);
}
