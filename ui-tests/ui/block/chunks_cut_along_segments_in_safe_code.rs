// A view's chunks cut along segments are disjoint only where every block and thread cuts along
// the same offsets. The chunk shape is a type, the same in every block; the offsets are values,
// which a block could choose by its index (as here) or build in its own memory, and the
// compiler cannot tell. So the cut is `unsafe`, its contract that the offsets are one kernel
// parameter for all: in safe code the kernel does not compile.
use dlmd::kernel::Block;
use dlmd::kernel::block::Segments;
use dlmd::{Const, DeviceMdspanMut, Dims, ManagedMdspan};

type Rows = (Const<64>, Const<32>);

pub fn body(
    mut block: Block<'_, 256, (), Rows>,
    out: DeviceMdspanMut<'_, f32, Dims<2>>,
    a: ManagedMdspan<'_, i32, Dims<1>>,
    b: ManagedMdspan<'_, i32, Dims<1>>,
) {
    let offsets = if block.index() == 0 { a } else { b };
    let Some(segments) = Segments::new(offsets) else { return };
    let Some(chunks) = block.chunks(out).in_segments(segments) else { return };
    for chunk in chunks {
        block.store(chunk, |_| 1.0);
    }
}

fn main() {
    let _ = body
        as fn(
            Block<'static, 256, (), Rows>,
            DeviceMdspanMut<'static, f32, Dims<2>>,
            ManagedMdspan<'static, i32, Dims<1>>,
            ManagedMdspan<'static, i32, Dims<1>>,
        );
}
