//! dlmd beside other users of cudarc and candle: this crate only has to build. Each feature is
//! one way an application or another crate (candle among them) chooses cudarc's features;
//! `scripts/compose-check.sh` checks every one.

use cudarc::driver::CudaSlice;
use dlmd::cuda::CudaError;
use dlmd::view::DeviceMdspan;
use dlmd::{Dims, LayoutRight};

/// A dlmd device view of the other crate's cudarc allocation: one cudarc type on both sides.
pub fn view_of(
    slice: &CudaSlice<f32>,
    rows: usize,
    cols: usize,
) -> Result<DeviceMdspan<'_, f32, Dims<2>, LayoutRight>, CudaError> {
    dlmd::cuda::device_view(slice, Dims::new([rows, cols]))
}

/// Whether NCCL can be used, whichever crate chose how it is reached.
pub fn nccl_loaded() -> bool {
    dlmd::nccl::available()
}

/// The sum of a candle tensor read through a dlmd view.
#[cfg(feature = "candle")]
pub fn sum_through_dlmd(t: &candle_core::Tensor) -> Result<f32, dlmd::candle::CandleError> {
    let borrowed = dlmd::candle::borrow(t);
    let view = borrowed.host_view::<f32, Dims<2>, dlmd::LayoutStride>()?;
    Ok(view.iter().sum())
}

#[cfg(all(test, feature = "candle"))]
mod tests {
    #[test]
    fn candle_and_dlmd_agree() {
        let t = candle_core::Tensor::arange(0f32, 6.0, &candle_core::Device::Cpu)
            .and_then(|t| t.reshape((2, 3)))
            .and_then(|t| t.t())
            .unwrap();
        assert_eq!(super::sum_through_dlmd(&t).unwrap(), 15.0);
    }
}
