// What a per-thread closure returns is each thread's own (`Varying`): the kernel's uniform
// code cannot look into it, so it cannot branch on it around a barrier.
use dlmd::kernel::Block;

pub fn body(mut block: Block<'_, 256>) {
    let index = block.each(|lane| lane.index());
    if index == 0 {
        block.sync(());
    }
}

fn main() {}
