// Device memory is not addressable by the CPU: a device view has no host indexing.
use dlmd::{DeviceMdspan, Dims};
use dlmd::{ LayoutRight, dlpack::DLTensor};

fn first(t: &DLTensor) -> f32 {
    let md = unsafe { DeviceMdspan::<f32, Dims<2>, LayoutRight>::from_dlpack(t) }.unwrap();
    md[[0, 0]]
}

fn main() {}
