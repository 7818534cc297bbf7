// A block whose type names no chunk shape (`NoChunks`, the default) cuts no view: the shape is
// part of the kernel's signature, the same for the whole grid, never chosen in its body.
use dlmd::kernel::Block;
use dlmd::{DeviceMdspanMut, Dims};

pub fn body(mut block: Block<'_, 256>, out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    for chunk in block.chunks(out) {
        block.store(chunk, |_| 1.0);
    }
}

fn main() {}
