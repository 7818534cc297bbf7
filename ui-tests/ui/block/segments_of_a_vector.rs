// Segments cut a view's rows (the dimension before the last: `total` of `1 × h × total × d`),
// each a sequence of a packed batch. A vector has no rows to cut: the kernel does not compile.
use dlmd::kernel::Block;
use dlmd::kernel::block::Segments;
use dlmd::{Const, DeviceMdspanMut, Dims, ManagedMdspan};

type Run = (Const<256>,);

pub fn body(
    mut block: Block<'_, 256, (), Run>,
    out: DeviceMdspanMut<'_, f32, Dims<1>>,
    cu: ManagedMdspan<'_, i32, Dims<1>>,
) {
    let Some(segments) = Segments::new(cu) else { return };
    // SAFETY: every thread makes `segments` from the parameter `cu`.
    let Some(chunks) = (unsafe { block.chunks(out).in_segments(segments) }) else { return };
    for chunk in chunks {
        block.store(chunk, |_| 1.0);
    }
}

fn main() {
    let _ = body
        as fn(
            Block<'static, 256, (), Run>,
            DeviceMdspanMut<'static, f32, Dims<1>>,
            ManagedMdspan<'static, i32, Dims<1>>,
        );
}
