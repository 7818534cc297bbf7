// A block writes global memory through chunks of a mutable view; a read-only view has none.
use dlmd::kernel::Block;
use dlmd::{Const, DeviceMdspan, Dims};

pub fn body(block: Block<'_, 256, (), (Const<256>,)>, src: DeviceMdspan<'_, f32, Dims<1>>) {
    for _chunk in block.chunks(src) {}
}

fn main() {}
