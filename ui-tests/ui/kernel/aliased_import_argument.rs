// A launch passes a view imported from DLPack. Its producer shares the memory, so the view is
// aliased (`AliasedMut`), and a kernel's mutable parameter is a unique view, which no safe code
// makes of an aliased one: an import does not reach a launcher unchecked.
use dlmd::Mdspan;
use dlmd::view::AliasedMut;
use cudarc::driver::{CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels};
use dlmd::managed::ManagedTensor;
use dlmd::{Device, DeviceMdspanMut, Dims, LayoutRight};
use std::sync::Arc;

#[dlmd::kernel]
pub fn fill(_: dlmd::kernel::Thread, v: DeviceMdspanMut<'_, f32, Dims<1>>) {}

fn run(stream: &Arc<CudaStream>, kernels: &Kernels, tensor: &mut ManagedTensor) -> Result<(), CudaError> {
    let v = tensor.view_mut::<Mdspan<'_, f32, Dims<1>, LayoutRight, Device, AliasedMut>>()?;
    cuda::scope(|s| fill(s.launch(stream, kernels, LaunchConfig::for_num_elems(1)), v))
}

fn main() {}
