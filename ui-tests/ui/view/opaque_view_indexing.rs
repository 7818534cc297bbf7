// Memory of a oneAPI (or ROCm, Metal…) device is opaque to dlmd: its views have no host indexing.
use dlmd::space::OneApi;
use dlmd::{dlpack::DLTensor, to_opaque_mdspan, LayoutRight};

fn first(t: &DLTensor) -> f32 {
    let md = unsafe { to_opaque_mdspan::<OneApi, f32, 2, LayoutRight>(t) }.unwrap();
    md[[0, 0]]
}

fn main() {}
