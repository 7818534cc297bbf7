// Each consumer warpgroup of a specialised block writes 64 rows of the chunk: with two consumers
// (384 threads) a chunk holds at most 128. Rows past them would be left unwritten, with no
// warpgroup to hold them. The kernel does not compile.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, Cols, Pipeline};
use dlmd::{Const, DeviceMdspanMut, Dims};

type X = TileOf<bf16, (Const<128>, Const<64>), Swizzle128>;
type W = TileOf<bf16, (Const<256>, Const<64>), Swizzle128>;
type XMap<'a> = TensorMap<'a, bf16, (Const<128>, Const<64>), Swizzle128>;
type WMap<'a> = TensorMap<'a, bf16, (Const<256>, Const<64>), Swizzle128>;
type Linear<'k> = Block<'k, 384, Pipeline<4, X, W>, (Const<256>, Const<256>)>;
type Y<'a> = DeviceMdspanMut<'a, bf16, Dims<2>>;

pub fn body(block: Linear<'_>, x: XMap<'_>, w: WMap<'_>, y: Y<'_>) {
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
    let _ = body as fn(Linear<'static>, XMap<'static>, WMap<'static>, Y<'static>);
}
