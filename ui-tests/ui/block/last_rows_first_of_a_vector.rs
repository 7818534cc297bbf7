// `LastRowsFirst<Shape>` deals a matrix's chunks from its last chunk row (the dimension before
// the last): attention's causal chunks, longest first. A vector has no chunk rows, so the order
// would change nothing it names: a vector's shape is refused rather than dealt in memory order
// unannounced.
use dlmd::kernel::Block;
use dlmd::kernel::block::LastRowsFirst;
use dlmd::{Const, DeviceMdspanMut, Dims};

type Chunk = LastRowsFirst<(Const<256>,)>;

pub fn body(mut block: Block<'_, 256, (), Chunk>, out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    for chunk in block.chunks(out) {
        block.store(chunk, |_| 1.0);
    }
}

fn main() {
    let _ = body as fn(Block<'static, 256, (), Chunk>, DeviceMdspanMut<'static, f32, Dims<1>>);
}
