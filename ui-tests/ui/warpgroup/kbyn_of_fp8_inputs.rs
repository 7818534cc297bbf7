// `wgmma` reads a `B` tile MN-major (`k × n`, `KByN`) for 16-bit inputs only: FP8 operands are
// K-major. A row-major FP8 `b` is loaded transposed (`n × k`) instead. The kernel does not
// compile.
use dlmd::dtype::F8E4M3FN;
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, Cols, KByN, Pipeline};
use dlmd::{Const, DeviceMdspanMut, Dims};

type X = TileOf<F8E4M3FN, (Const<128>, Const<128>), Swizzle128>;
type B = KByN<TileOf<F8E4M3FN, (Const<128>, Const<256>), Swizzle128>>;
type XMap<'a> = TensorMap<'a, F8E4M3FN, (Const<128>, Const<128>), Swizzle128>;
type BMap<'a> = TensorMap<'a, F8E4M3FN, (Const<128>, Const<256>), Swizzle128>;
type Product<'k> = Block<'k, 384, Pipeline<4, X, B>, (Const<128>, Const<256>)>;

pub fn body(block: Product<'_>, x: XMap<'_>, b: BMap<'_>, y: DeviceMdspanMut<'_, bf16, Dims<2>>) {
    let (mut block, mut stages) = block.split();
    let chunks = block.chunks(y);
    block.specialise(
        &mut stages,
        chunks,
        |producer, [i0, j0]| producer.load(&x, [i0, 0], &b, [0, j0]),
        |wg, consumer, part| {
            let running = wg.mma(Accumulators::<F8E4M3FN, Cols<256>>::zero(), consumer.wait());
            let acc = wg.wait(running);
            wg.store(part, acc, |_, v| bf16::from_f32(v));
        },
    );
}

fn main() {
    let _ = body as fn(Product<'static>, XMap<'static>, BMap<'static>, DeviceMdspanMut<'static, bf16, Dims<2>>);
}
