// Accumulators of a 2 × 4-warp tiling are held by 256 threads: stored by a block of 128, half
// the chunk would be left to threads that do not exist. The tiling's threads are the block's,
// checked where the kernel is compiled.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::mma::{Accumulators, M16N8K16};
use dlmd::{Const, DeviceMdspanMut, Dims};

type Chunk = (Const<128>, Const<128>);
type Acc = Accumulators<M16N8K16<bf16>, 2, 4, 4, 4>;

pub fn body(mut block: Block<'_, 128, (), Chunk>, acc: Acc, c: DeviceMdspanMut<'_, f32, Dims<2>>) {
    if let Some(chunk) = block.chunks(c).next() {
        let _ = block.store_accumulators(chunk, acc, |_, x| x);
    }
}

fn main() {
    let _ = body as fn(Block<'static, 128, (), Chunk>, Acc, DeviceMdspanMut<'static, f32, Dims<2>>);
}
