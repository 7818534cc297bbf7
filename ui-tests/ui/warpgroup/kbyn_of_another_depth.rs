// A stage's `B` tile holds as much of the products' depth as its `A` tile: `A` is one 128-byte
// swizzled row of `k` (64 `bf16`s), so a `k × n` `B` (`KByN`) has 64 rows. One of 32 rows would
// have `wgmma` read past it, into the next stage. The kernel does not compile.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, Cols, KByN, Pipeline};
use dlmd::{Const, DeviceMdspanMut, Dims};

type X = TileOf<bf16, (Const<128>, Const<64>), Swizzle128>;
type B = KByN<TileOf<bf16, (Const<32>, Const<256>), Swizzle128>>;
type XMap<'a> = TensorMap<'a, bf16, (Const<128>, Const<64>), Swizzle128>;
type BMap<'a> = TensorMap<'a, bf16, (Const<32>, Const<256>), Swizzle128>;
type Product<'k> = Block<'k, 384, Pipeline<4, X, B>, (Const<128>, Const<256>)>;

pub fn body(block: Product<'_>, x: XMap<'_>, b: BMap<'_>, y: DeviceMdspanMut<'_, bf16, Dims<2>>) {
    let (mut block, mut stages) = block.split();
    let chunks = block.chunks(y);
    block.specialise(
        &mut stages,
        chunks,
        |producer, [i0, j0]| producer.load(&x, [i0, 0], &b, [0, j0]),
        |wg, consumer, part| {
            let running = wg.mma(Accumulators::<bf16, Cols<256>>::zero(), consumer.wait());
            let acc = wg.wait(running);
            wg.store(part, acc, |_, v| bf16::from_f32(v));
        },
    );
}

fn main() {
    let _ = body as fn(Product<'static>, XMap<'static>, BMap<'static>, DeviceMdspanMut<'static, bf16, Dims<2>>);
}
