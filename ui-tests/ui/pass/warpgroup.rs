// The warpgroup pipeline used as intended: `y = x · wᵀ` in `128 × 256` chunks, a producer
// filling four stages from tensor maps and two consumer warpgroups keeping one group of
// products running while they issue the next; and `y = x · b` with a row-major `b`, its
// `64 × 256` tiles (four boxes each) read MN-major. Built with `cargo build`, so the compile-time
// checks of `ui/warpgroup` run here too and accept it.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Accumulators, Cols, KByN, Pipeline};
use dlmd::{Const, DeviceMdspanMut, Dims};

type X = TileOf<bf16, (Const<128>, Const<64>), Swizzle128>;
type W = TileOf<bf16, (Const<256>, Const<64>), Swizzle128>;
type XMap<'a> = TensorMap<'a, bf16, (Const<128>, Const<64>), Swizzle128>;
type WMap<'a> = TensorMap<'a, bf16, (Const<256>, Const<64>), Swizzle128>;
type Linear<'k> = Block<'k, 384, Pipeline<4, X, W>, (Const<128>, Const<256>)>;

pub fn body(block: Linear<'_>, x: XMap<'_>, w: WMap<'_>, y: DeviceMdspanMut<'_, bf16, Dims<2>>) {
    let ([m, k], [n, k2]) = (x.extents(), w.extents());
    if k != k2 || y.extent(0) != m || y.extent(1) != n {
        return;
    }
    let steps = k.div_ceil(64);
    let (mut block, mut stages) = block.split();
    let chunks = block.chunks(y);
    block.specialise(
        &mut stages,
        chunks,
        |producer, [i0, j0]| {
            for s in 0..steps {
                producer.load(&x, [i0, 64 * s], &w, [j0, 64 * s]);
            }
        },
        |wg, consumer, part| {
            let _ = wg.index();
            let mut acc = wg.mma(Accumulators::<bf16, Cols<256>>::zero(), consumer.wait());
            for _ in 1..steps {
                let running = wg.mma(acc, consumer.wait());
                acc = wg.wait(running);
            }
            let acc = wg.wait(acc);
            wg.store(part, acc, |_, v| bf16::from_f32(v));
        },
    );
}

type B = KByN<TileOf<bf16, (Const<64>, Const<256>), Swizzle128>>;
type BMap<'a> = TensorMap<'a, bf16, (Const<64>, Const<256>), Swizzle128>;
type Matmul<'k> = Block<'k, 384, Pipeline<4, X, B>, (Const<128>, Const<256>)>;

pub fn matmul(block: Matmul<'_>, x: XMap<'_>, b: BMap<'_>, y: DeviceMdspanMut<'_, bf16, Dims<2>>) {
    let ([m, k], [k2, n]) = (x.extents(), b.extents());
    if k != k2 || y.extent(0) != m || y.extent(1) != n {
        return;
    }
    let steps = k.div_ceil(64);
    let (mut block, mut stages) = block.split();
    let chunks = block.chunks(y);
    block.specialise(
        &mut stages,
        chunks,
        |producer, [i0, j0]| {
            for s in 0..steps {
                producer.load(&x, [i0, 64 * s], &b, [64 * s, j0]);
            }
        },
        |wg, consumer, part| {
            let mut acc = wg.mma(Accumulators::<bf16, Cols<256>>::zero(), consumer.wait());
            for _ in 1..steps {
                let running = wg.mma(acc, consumer.wait());
                acc = wg.wait(running);
            }
            let acc = wg.wait(acc);
            wg.store(part, acc, |_, v| bf16::from_f32(v));
        },
    );
}

fn main() {
    let _ = body
        as fn(Linear<'static>, XMap<'static>, WMap<'static>, DeviceMdspanMut<'static, bf16, Dims<2>>);
    let _ = matmul
        as fn(Matmul<'static>, XMap<'static>, BMap<'static>, DeviceMdspanMut<'static, bf16, Dims<2>>);
}
