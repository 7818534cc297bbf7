// Accumulators are the lanes' registers of warp-wide instructions: handed to per-thread code,
// one lane's share would stand for the warp's, or a `mma.sync` be reached by only some of its
// lanes. They are not `Sync`, so no per-thread closure can capture them.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::mma::M16N8K16;

pub fn body(block: Block<'_, 256>) {
    let acc = block.accumulators::<M16N8K16<bf16>, 2, 4, 4, 4>();
    let _ = block.each(|lane| {
        if lane.index() < 128 {
            let _mine = &acc;
        }
    });
}

fn main() {}
