// Chunks cut along segments (`cu_seqlens`) are disjoint only where every block reads the same
// offsets: `Segments` takes them from a read-only view. A view the kernel may write would let a
// block change them under another's reads; the kernel does not compile.
use dlmd::kernel::block::Segments;
use dlmd::{Dims, ManagedMdspanMut};

pub fn body(cu: ManagedMdspanMut<'_, i32, Dims<1>>) -> usize {
    Segments::new(cu).map_or(0, |s| s.count())
}

fn main() {
    let _ = body as fn(ManagedMdspanMut<'static, i32, Dims<1>>) -> usize;
}
