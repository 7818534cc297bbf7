// A view is cut into chunks once per kernel, so that each of its elements belongs to one block
// for the whole kernel, and each chunk is handed out once. `Block::chunks` takes the view.
use dlmd::kernel::Block;
use dlmd::{Const, DeviceMdspanMut, Dims};

pub fn body(mut block: Block<'_, 256, (), (Const<256>,)>, out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    for chunk in block.chunks(out) {
        block.store(chunk, |_| 1.0);
    }
    for chunk in block.chunks(out) {
        block.store(chunk, |_| 2.0);
    }
}

fn main() {}
