// Per-thread closures are `Fn`: they cannot write what they capture, so a thread's index does
// not leak into the uniform code through a variable.
use dlmd::kernel::Block;

pub fn body(mut block: Block<'_, 256>) {
    let mut mine = 0;
    block.each(|lane| mine = lane.index());
    if mine == 0 {
        block.sync(());
    }
}

fn main() {}
