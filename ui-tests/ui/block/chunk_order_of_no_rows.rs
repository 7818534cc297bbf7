// The order the chunks are dealt in is part of the block's type, as their shape is, so every
// block deals them alike (an order chosen by a block's own values would give one chunk to two
// blocks). `Grouped<Shape, ROWS>` deals them in groups of `ROWS` chunk rows: a group of no rows
// deals nothing, and is refused.
use dlmd::kernel::Block;
use dlmd::kernel::block::Grouped;
use dlmd::{Const, DeviceMdspanMut, Dims};

type Chunk = Grouped<(Const<64>, Const<64>), 0>;

pub fn body(mut block: Block<'_, 256, (), Chunk>, out: DeviceMdspanMut<'_, f32, Dims<2>>) {
    for chunk in block.chunks(out) {
        block.store(chunk, |_| 1.0);
    }
}

fn main() {
    let _ = body as fn(Block<'static, 256, (), Chunk>, DeviceMdspanMut<'static, f32, Dims<2>>);
}
