// Per-thread closures are `Sync`: a `Cell` captured by reference would let each thread write
// its own value into the uniform code.
use core::cell::Cell;
use dlmd::kernel::Block;

pub fn body(mut block: Block<'_, 256>) {
    let mine = Cell::new(0);
    block.each(|lane| mine.set(lane.index()));
    if mine.get() == 0 {
        block.sync(());
    }
}

fn main() {}
