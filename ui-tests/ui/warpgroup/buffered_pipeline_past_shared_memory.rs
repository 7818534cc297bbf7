// A `Buffered` pipeline keeps a buffer of 2304 bytes for each consumer warp (18 KiB for two
// consumer warpgroups) beside its stages: six stages of a `128 × 64` and a `160 × 64` `bf16`
// tile (36 KiB each) fit in a block's 227 KiB of shared memory, but not with the buffers. The
// kernel does not compile; `Pipeline<6, X, W>` (`Direct`) would.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Pipeline, Buffered};
use dlmd::{Const, DeviceMdspanMut, Dims};

type X = TileOf<bf16, (Const<128>, Const<64>), Swizzle128>;
type W = TileOf<bf16, (Const<160>, Const<64>), Swizzle128>;
type XMap<'a> = TensorMap<'a, bf16, (Const<128>, Const<64>), Swizzle128>;
type WMap<'a> = TensorMap<'a, bf16, (Const<160>, Const<64>), Swizzle128>;
type Linear<'k> = Block<'k, 384, Pipeline<6, X, W, Buffered>, (Const<128>, Const<160>)>;

pub fn body(block: Linear<'_>, x: XMap<'_>, w: WMap<'_>, y: DeviceMdspanMut<'_, bf16, Dims<2>>) {
    let (mut block, mut stages) = block.split();
    let chunks = block.chunks(y);
    block.specialise(
        &mut stages,
        chunks,
        |producer, [i0, j0]| producer.load(&x, [i0, 0], &w, [j0, 0]),
        |_, consumer, _| drop(consumer.wait()),
    );
}

fn main() {
    let _ = body
        as fn(Linear<'static>, XMap<'static>, WMap<'static>, DeviceMdspanMut<'static, bf16, Dims<2>>);
}
