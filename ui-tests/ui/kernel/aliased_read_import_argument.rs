// A read-only view of an imported tensor is aliased (`Aliased`): its producer may write the
// memory meanwhile. A kernel's read-only parameter is a `Shared` view, which no safe code makes
// of an aliased one; the checked way in is `Imported::arg`, which orders the launch on the
// producer's stream and checks the arguments against each other.
use dlmd::Mdspan;
use dlmd::view::Aliased;
use cudarc::driver::LaunchConfig;
use dlmd::cuda::{CudaError, Imported, Kernels};
use dlmd::{Device, DeviceMdspan, DeviceMdspanMut, Dims, LayoutRight};

#[dlmd::kernel]
pub fn copy(_: dlmd::kernel::Thread, src: DeviceMdspan<'_, f32, Dims<1>>, dst: DeviceMdspanMut<'_, f32, Dims<1>>) {}

fn run(x: &Imported, y: &Imported, kernels: &Kernels) -> Result<(), CudaError> {
    let src = x.tensor().view::<Mdspan<'_, f32, Dims<1>, LayoutRight, Device, Aliased>>()?;
    copy(x.launch(kernels, LaunchConfig::for_num_elems(16))?, src, y.arg()?)
}

fn main() {}
