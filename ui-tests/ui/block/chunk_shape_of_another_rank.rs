// A block cuts a view by the chunk shape its type names, one side per dimension of the view: a
// shape of two sides says nothing of how to cut a view of one dimension.
use dlmd::kernel::Block;
use dlmd::{Const, DeviceMdspanMut, Dims};

pub fn body(mut block: Block<'_, 256, (), (Const<64>, Const<64>)>, out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    for chunk in block.chunks(out) {
        block.store(chunk, |_| 1.0);
    }
}

fn main() {}
