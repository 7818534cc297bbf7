// A specialised block's consumers write their rows of one matrix: a chunk that spans two
// matrices of a batch (`Const<2>` before the matrix's sides) would leave the second unwritten,
// each warpgroup's accumulators holding the rows of one. The kernel does not compile.
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
type Linear<'k> = Block<'k, 384, Pipeline<4, X, W>, (Const<2>, Const<128>, Const<256>)>;
type Y<'a> = DeviceMdspanMut<'a, bf16, Dims<3>>;

pub fn body(block: Linear<'_>, x: XMap<'_>, w: WMap<'_>, y: Y<'_>) {
    let (mut block, mut stages) = block.split();
    let chunks = block.chunks(y);
    block.specialise(
        &mut stages,
        chunks,
        |producer, [_, i0, j0]| producer.load(&x, [i0, 0], &w, [j0, 0]),
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
