//! `add_index` as the torch operator `dlmd::add_index`, whose kernel is Rust: registered with
//! torch's dispatcher through its stable C ABI (`dlmd::torch`), so a call reaches the Rust
//! kernel with no Python in between, on the CPU and on CUDA (torch's current stream).
//! `torch_op.py` registers its fake implementation for `torch.compile`.

use crate::dtype::{AddIndex as _, DType};
use dlmd::dlpack::DLDeviceType;
use dlmd::torch::{DispatchKey, Op, OpError, Registration, TensorMut, Torch};
use dlmd::{Dims, HostMdspanAliasedMut, LayoutStrideRelaxed};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::Mutex;

/// `add_index(Tensor(a!) x) -> ()`: adds to each element of `x` the sum of its indices, in
/// place. On a GPU the kernel is queued on torch's current stream, without waiting.
pub struct AddIndex;

impl Op for AddIndex {
    const NAME: &'static str = "add_index";
    const PARAMS: &'static [&'static str] = &["x"];
    type Params<'a> = (TensorMut<'a>,);
    type Returns = ();

    fn call((mut x,): Self::Params<'_>) -> Result<(), OpError> {
        let device = x.device()?;
        if device.device_type == DLDeviceType::CUDA {
            let kernels = crate::gpu::kernels_on(device.device_id as usize).map_err(OpError::new)?;
            let x = x.cuda()?;
            return dlmd_memarray_kernels::add_index(kernels, &x).map_err(|e| OpError::new(e.to_string()));
        }
        let unsupported = |r| {
            Err(OpError::new(format!(
                "add_index has no kernel for rank {r} (ranks 0 to 4)"
            )))
        };
        let dtype = x.dtype()?;
        if dtype == <bool as dlmd::DlElement>::DTYPE {
            // Bytes: any byte but 0 is true, and 0 or 1 is written.
            return dlmd::with_rank!(x.rank()?, [0, 1, 2, 3, 4], R => {
                x.bool_bytes_mut::<HostMdspanAliasedMut<'_, u8, Dims<R>, LayoutStrideRelaxed>>()?
                    .update(|index, b| u8::from(b != 0 || index.iter().sum::<usize>() != 0));
                Ok(())
            }, r => unsupported(r));
        }
        let dtype =
            DType::from_dlpack(dtype).ok_or_else(|| OpError::new(format!("add_index takes no {dtype} tensors")))?;
        with_dtype!(dtype, T => dlmd::with_rank!(x.rank()?, [0, 1, 2, 3, 4], R => {
            x.view_mut::<HostMdspanAliasedMut<'_, T, Dims<R>, LayoutStrideRelaxed>>()?.update(|index, mut v| {
                v.add_index(index.iter().sum());
                v
            });
            Ok(())
        }, r => unsupported(r)))
    }
}

/// Registers the operators whose kernels are Rust with torch (once; torch must be imported):
/// `dlmd::add_index` for the CPU and CUDA.
#[pyfunction]
pub fn register_torch_ops() -> PyResult<()> {
    static REGISTERED: Mutex<Vec<Registration>> = Mutex::new(Vec::new());
    let mut registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    if registered.is_empty() {
        let torch = Torch::get().map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        let registration = torch
            .register::<AddIndex>("dlmd", &[DispatchKey::Cpu, DispatchKey::Cuda])
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        registered.push(registration);
    }
    Ok(())
}
