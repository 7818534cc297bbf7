//! `add_index` and attention's forward and backward passes as the torch operators
//! `dlmd::add_index`, `dlmd::attention` and `dlmd::attention_backward`, whose kernels are
//! Rust: registered with torch's dispatcher through its stable C ABI (`dlmd::torch`), so a call
//! reaches the Rust kernel with no Python in between, on the CPU (`add_index`) and on CUDA
//! (torch's current stream). `torch_op.py` registers their fake implementations for
//! `torch.compile`, and attention's autograd formula.

use crate::dtype::{AddIndex as _, DType};
use dlmd::dlpack::DLDeviceType;
use dlmd::dlpack::{DLDataType, DLDataTypeCode, DLDevice};
use dlmd::torch::{DispatchKey, Op, OpError, Registration, Tensor, TensorMut, Torch};
use dlmd::{Dims, HostMdspanAliasedMut, LayoutStrideRelaxed};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::OnceLock;

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

/// The CUDA device of an attention call's tensors, and torch's functions for its outputs.
fn attention_device(q: &Tensor<'_>) -> Result<(DLDevice, &'static Torch), OpError> {
    let device = q.device()?;
    if device.device_type != dlmd::dlpack::DLDeviceType::CUDA {
        return Err(OpError::new("attention runs on CUDA tensors"));
    }
    let torch = Torch::get().map_err(|e| OpError::new(e.to_string()))?;
    Ok((device, torch))
}

/// Attention's kernels on `device`, or why they cannot run there (a GPU without `sm_90a`).
fn hopper(device: DLDevice) -> Result<&'static dlmd::cuda::Kernels, OpError> {
    crate::gpu::hopper_on(device.device_id as usize)
        .map_err(|e| OpError::new(format!("attention's kernels cannot run here: {e}")))
}

/// A new `float32` tensor of each query row's statistic: `q`'s first three extents.
fn rows(torch: &'static Torch, q: &Tensor<'_>, device: DLDevice) -> Result<TensorMut<'static>, OpError> {
    let shape = q.shape()?;
    if shape.len() != 4 {
        return Err(OpError::new(format!("q has extents {shape:?}: (b, h, s, d) expected")));
    }
    torch.empty(&shape[..3], DLDataType::new(DLDataTypeCode::FLOAT, 32, 1), device)
}

/// `attention(Tensor q, Tensor k, Tensor v, float scale, bool causal) -> (Tensor, Tensor)`:
/// `softmax(q · kᵀ · scale) · v` and each query row's log-sum-exp, new tensors (`q`'s shape and
/// type, and `float32` `(b, h_q, s_q)`), queued on torch's current stream without waiting.
/// `q` `(b, h_q, s_q, d)`, `k` and `v` `(b, h_kv, s_k, d)`, any strides a tensor map takes.
pub struct Attention;

impl Op for Attention {
    const NAME: &'static str = "attention";
    const PARAMS: &'static [&'static str] = &["q", "k", "v", "scale", "causal"];
    type Params<'a> = (Tensor<'a>, Tensor<'a>, Tensor<'a>, f64, bool);
    type Returns = (TensorMut<'static>, TensorMut<'static>);

    fn call((q, k, v, scale, causal): Self::Params<'_>) -> Result<Self::Returns, OpError> {
        let (device, torch) = attention_device(&q)?;
        let lse = rows(torch, &q, device)?;
        let o = torch.empty(&q.shape()?, q.dtype()?, device)?;
        {
            let [q, k, v] = [q.cuda()?, k.cuda()?, v.cuda()?];
            let (o, lse) = (o.cuda()?, lse.cuda()?);
            dlmd_example_hopper_kernels::attention_forward_imported(
                hopper(device)?,
                [&q, &k, &v],
                &o,
                &lse,
                scale as f32,
                causal,
            )
            .map_err(|e| OpError::new(e.to_string()))?;
        }
        Ok((o, lse))
    }
}

/// `attention_backward(Tensor grad, Tensor q, Tensor k, Tensor v, Tensor o, Tensor lse, float
/// scale, bool causal) -> (Tensor, Tensor, Tensor)`: the gradients of `q`, `k` and `v` for the
/// gradient `grad` of [`Attention`]'s output `o`, new tensors of the inputs' shapes and type,
/// queued on torch's current stream without waiting. Deterministic: each element is written
/// once. `grad` must have strides a tensor map takes (`torch_op.py`'s autograd formula passes
/// it contiguous).
pub struct AttentionBackward;

impl Op for AttentionBackward {
    const NAME: &'static str = "attention_backward";
    const PARAMS: &'static [&'static str] = &["grad", "q", "k", "v", "o", "lse", "scale", "causal"];
    type Params<'a> = (
        Tensor<'a>,
        Tensor<'a>,
        Tensor<'a>,
        Tensor<'a>,
        Tensor<'a>,
        Tensor<'a>,
        f64,
        bool,
    );
    type Returns = (TensorMut<'static>, TensorMut<'static>, TensorMut<'static>);

    fn call((grad, q, k, v, o, lse, scale, causal): Self::Params<'_>) -> Result<Self::Returns, OpError> {
        let (device, torch) = attention_device(&q)?;
        let delta = rows(torch, &q, device)?;
        let dtype = q.dtype()?;
        let [dq, mut dk, mut dv] = [
            torch.empty(&q.shape()?, dtype, device)?,
            torch.empty(&k.shape()?, dtype, device)?,
            torch.empty(&v.shape()?, dtype, device)?,
        ];
        if q.shape()?.get(2) == Some(&0) {
            // No query, as the forward pass takes: nothing flows back to the keys and values
            // (and the kernels' tensor maps take no empty extent).
            dk.zero()?;
            dv.zero()?;
            return Ok((dq, dk, dv));
        }
        {
            let [q, k, v, o, d_o, lse] = [q.cuda()?, k.cuda()?, v.cuda()?, o.cuda()?, grad.cuda()?, lse.cuda()?];
            let [dq, dk, dv, delta] = [dq.cuda()?, dk.cuda()?, dv.cuda()?, delta.cuda()?];
            dlmd_example_hopper_kernels::attention_backward_imported(
                hopper(device)?,
                [&q, &k, &v, &o, &d_o],
                &lse,
                &delta,
                [&dq, &dk, &dv],
                scale as f32,
                causal,
            )
            .map_err(|e| OpError::new(e.to_string()))?;
        }
        Ok((dq, dk, dv))
    }
}

/// Registers the operators whose kernels are Rust with torch (once; torch must be imported):
/// `dlmd::add_index` for the CPU and CUDA, `dlmd::attention` and `dlmd::attention_backward`
/// for CUDA.
#[pyfunction]
pub fn register_torch_ops() -> PyResult<()> {
    // Registered once, whatever the outcome: a failure is raised again at every call.
    static REGISTERED: OnceLock<Result<Vec<Registration>, String>> = OnceLock::new();
    let registered = REGISTERED.get_or_init(|| {
        let torch = Torch::get().map_err(|e| e.to_string())?;
        let error = |e: dlmd::torch::TorchError| e.to_string();
        Ok(vec![
            torch
                .register::<AddIndex>("dlmd", &[DispatchKey::Cpu, DispatchKey::Cuda])
                .map_err(error)?,
            torch
                .register::<Attention>("dlmd", &[DispatchKey::Cuda])
                .map_err(error)?,
            torch
                .register::<AttentionBackward>("dlmd", &[DispatchKey::Cuda])
                .map_err(error)?,
        ])
    });
    registered
        .as_ref()
        .map(|_| ())
        .map_err(|e| PyRuntimeError::new_err(e.clone()))
}
