//! Integration tests of dlmd; the tests are the `[[test]]` targets beside this file.

use dlmd::DlElement;
use dlmd::cuda::{self, CudaError};
use dlmd::dlpack::{DLDevice, DLTensor};
use std::io::Write;
use std::sync::Arc;

/// Device 0's context for a GPU test, or `None` after printing why the test is skipped: without
/// a GPU a test prints one line and passes, unless `DLMD_REQUIRE_GPU=1`, which makes a missing
/// GPU fail it.
pub fn gpu() -> Option<Arc<cudarc::driver::CudaContext>> {
    match cuda::context(0) {
        Ok(ctx) => Some(ctx),
        Err(e @ (CudaError::NoDriver | CudaError::Driver(_))) => {
            if std::env::var("DLMD_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("DLMD_REQUIRE_GPU=1 but no GPU: {e}");
            }
            skipped(format_args!("no GPU: {e}"));
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// Says that a test is skipped, and why: `SKIPPED (why)` on stderr, past the test harness's
/// capture so that it is seen, in one write so that the harness's own lines do not land inside
/// it (`.ci/run` counts these lines' skips).
pub fn skipped(why: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().write_all(format!("SKIPPED ({why})\n").as_bytes());
}

/// A CPU tensor over `data` with the given shape and strides (NULL when `None`); the arrays must
/// outlive its use.
pub fn tensor<T: DlElement>(data: &mut [T], shape: &mut [i64], strides: Option<&mut [i64]>) -> DLTensor {
    DLTensor {
        data: data.as_mut_ptr().cast(),
        device: DLDevice::CPU,
        ndim: shape.len() as i32,
        dtype: T::DTYPE,
        shape: shape.as_mut_ptr(),
        strides: strides.map_or(core::ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset: 0,
    }
}

/// Every index of `extents`, row-major.
pub fn indices<const R: usize>(extents: [usize; R]) -> Vec<[usize; R]> {
    let mut out = Vec::new();
    if extents.contains(&0) {
        return out;
    }
    let mut index = [0; R];
    loop {
        out.push(index);
        let mut carried = true;
        for d in (0..R).rev() {
            index[d] += 1;
            if index[d] < extents[d] {
                carried = false;
                break;
            }
            index[d] = 0;
        }
        if carried {
            return out;
        }
    }
}

/// A row-major view of `extents` over `slice` from element `from`, as a framework's `x[1:]` is
/// once imported: a view that need not start where its allocation does, nor aligned beyond its
/// element.
///
/// # Panics
///
/// Where the view's elements do not lie inside `slice`.
pub fn view_from<'s, T: DlElement + cudarc::driver::DeviceRepr>(
    stream: &Arc<cudarc::driver::CudaStream>,
    slice: &'s mut cudarc::driver::CudaSlice<T>,
    from: usize,
    extents: [usize; 2],
) -> dlmd::DeviceMdspanMut<'s, T, dlmd::Dims<2>> {
    use cudarc::driver::DevicePtrMut;
    use dlmd::layout::CompactLayout;
    assert!(from + extents[0] * extents[1] <= slice.len());
    let mapping = <dlmd::LayoutRight as CompactLayout>::mapping(dlmd::Dims::new(extents)).unwrap();
    let ordinal = i32::try_from(slice.ordinal()).unwrap();
    let (base, _write) = slice.device_ptr_mut(stream);
    // SAFETY: the elements from `from` lie inside the allocation (asserted) of device
    // `ordinal`, initialised by the caller on `stream` (on which the launches that take the view
    // run, after that copy); `slice` stays borrowed for the view's life, so nothing else reads
    // or writes it meanwhile.
    unsafe {
        dlmd::DeviceMdspanMut::from_raw_parts(
            (base as usize as *mut T).wrapping_add(from),
            mapping,
            dlmd::space::Device::new(ordinal),
        )
    }
}
