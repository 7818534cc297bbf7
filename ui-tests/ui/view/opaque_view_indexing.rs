// Memory of a oneAPI (or ROCm, Metal…) device is opaque to dlmd: its views have no host indexing.
use dlmd::{OpaqueMdspan, Dims};
use dlmd::space::OneApi;
use dlmd::{dlpack::DLTensor, LayoutRight};

fn first(t: &DLTensor) -> f32 {
    let md = unsafe { OpaqueMdspan::<f32, Dims<2>, OneApi, LayoutRight>::from_dlpack(t) }.unwrap();
    md[[0, 0]]
}

fn main() {}
