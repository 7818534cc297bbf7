// Host and device memory are different address spaces: a host view never becomes a device view
// (copy the data instead). Only managed memory converts.
use dlmd::{dlmd, Device};

fn main() {
    let data = [0.0f32; 4];
    let md = dlmd!(&data, [4]);
    let _on_gpu = md.into_space(Device::new(0));
}
