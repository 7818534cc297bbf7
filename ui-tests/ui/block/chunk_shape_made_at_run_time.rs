// A chunk shape is a type, the same in every block: a shape made at run time could differ from
// block to block (64 in the first, 32 in the others), and blocks that cut one view with
// different shapes own overlapping chunks, so that two blocks write one element. `Block::chunks`
// takes a tuple of `Const::<N>` and `Whole` sides.
use dlmd::kernel::Block;
use dlmd::{DeviceMdspanMut, Dims};

pub fn body(mut block: Block<'_, 256>, out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let side = if block.index() == 0 { 64 } else { 32 };
    for mut chunk in block.chunks(out, [side]) {
        block.store(&mut chunk, |_| 1.0);
    }
}

fn main() {}
