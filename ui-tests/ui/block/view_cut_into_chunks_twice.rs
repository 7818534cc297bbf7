// A view is cut into chunks once per kernel: cut again with another shape, an element could
// belong to one block the first time and to another, running at the same time, the second.
// `Block::chunks` takes the view.
use dlmd::kernel::Block;
use dlmd::{Const, DeviceMdspanMut, Dims};

pub fn body(mut block: Block<'_, 256>, out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    for mut chunk in block.chunks(out, (Const::<256>,)) {
        block.store(&mut chunk, |_| 1.0);
    }
    for mut chunk in block.chunks(out, (Const::<512>,)) {
        block.store(&mut chunk, |_| 2.0);
    }
}

fn main() {}
