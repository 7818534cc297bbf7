// A tiling deals the chunk over `WM × WN` warps: 2 × 4 warps are 256 threads, and a block of
// 128 would leave half the chunk to warps that do not exist. The tiling's threads are the
// block's, checked where the kernel is compiled.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::mma::M16N8K16;

pub fn body(block: Block<'_, 128>) {
    let _acc = block.accumulators::<M16N8K16<bf16>, 2, 4, 4, 4>();
}

fn main() {
    let _ = body as fn(Block<'static, 128>);
}
