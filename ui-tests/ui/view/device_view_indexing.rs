// Device memory is not addressable by the CPU: a device view has no host indexing.
use dlmd::{to_device_mdspan, LayoutRight, dlpack::DLTensor};

fn first(t: &DLTensor) -> f32 {
    let md = unsafe { to_device_mdspan::<f32, 2, LayoutRight>(t) }.unwrap();
    md[[0, 0]]
}

fn main() {}
