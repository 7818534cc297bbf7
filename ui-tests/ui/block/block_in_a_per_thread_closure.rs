// A per-thread closure is code each thread runs on its own; the block's work (another
// per-thread pass, a reduction, a barrier) must not start from it. The `Block` is not `Sync`,
// on the host (where kernel bodies are type-checked) as on the GPU, so such a closure cannot
// hold it.
use dlmd::kernel::Block;

pub fn body(block: Block<'_, 256>) {
    let _ = block.each(|lane| block.each(|other| other.index() + lane.index()));
}

fn main() {}
