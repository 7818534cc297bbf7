// A managed tensor's device label tells consumers where to read its memory: a `Vec` labelled as
// CUDA memory would send their kernels to a host address. Only the owner's maker knows where its
// memory is, so exporting under a device label is `unsafe` (`export_with`); `export` exports
// host memory.
use dlmd::Dims;
use dlmd::dlpack::{DLDevice, DLManagedTensorVersioned};
use dlmd::managed::export_with;

fn main() {
    let _ = export_with::<DLManagedTensorVersioned, _, _>(vec![1.0f32; 4], Dims::new([4]), 0, DLDevice::cuda(0));
}
