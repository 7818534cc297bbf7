//! `all_reduce`: tensors of any DLPack producer, one per CUDA device, reduced in place by NCCL
//! from this one process.

use crate::gpu::{cuda_error, gpu};
use dlmd::Mdspan;
use dlmd::dlpack::DLDeviceType;
use dlmd::half::{bf16, f16};
use dlmd::managed::ManagedTensor;
use dlmd::nccl::{Communicator, DataType, NcclElement, NcclError, ReduceOp, group};
use dlmd::python::from_dlpack;
use dlmd::view::AliasedMut;
use dlmd::{Device, Dims, F8E4M3FN, F8E5M2, LayoutRight};
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::sync::Mutex;

/// Communicators made for each list of devices, kept for the next call.
static COMMUNICATORS: Mutex<Vec<(Vec<usize>, Vec<Communicator>)>> = Mutex::new(Vec::new());

fn nccl_error(e: NcclError) -> PyErr {
    PyRuntimeError::new_err(format!("NCCL: {e}"))
}

/// Reduces the tensors of `xs` with `op` ("sum", "prod", "max", "min" or "avg") and writes the
/// result into each of them, in place: one tensor per CUDA device, of one dtype and shape,
/// contiguous and row-major, from any DLPack producer (torch, cupy, MemArray). Element types are
/// those NCCL has: 8-, 32- and 64-bit integers, float16, bfloat16, float32, float64 and the FP8
/// formats. The producers' pending work is ordered before the reduction, which is finished when
/// the call returns.
#[pyfunction]
#[pyo3(signature = (xs, /, op = "sum"))]
pub fn all_reduce(xs: &Bound<'_, PyList>, op: &str) -> PyResult<()> {
    let op = match op {
        "sum" => ReduceOp::Sum,
        "prod" => ReduceOp::Prod,
        "max" => ReduceOp::Max,
        "min" => ReduceOp::Min,
        "avg" => ReduceOp::Avg,
        other => {
            return Err(PyValueError::new_err(format!(
                "op {other:?}: one of \"sum\", \"prod\", \"max\", \"min\", \"avg\""
            )));
        }
    };
    let mut tensors = xs.iter().map(|x| from_dlpack(&x)).collect::<PyResult<Vec<_>>>()?;
    let Some(first) = tensors.first() else {
        return Ok(());
    };
    let (dtype, ndim) = (first.dl_tensor().dtype, first.dl_tensor().ndim);
    let mut ordinals = Vec::new();
    for t in &tensors {
        let t = t.dl_tensor();
        if t.device.device_type != DLDeviceType::CUDA || t.device.device_id < 0 {
            return Err(PyBufferError::new_err("all_reduce takes CUDA tensors"));
        }
        if t.dtype != dtype || t.ndim != ndim {
            return Err(PyTypeError::new_err("all_reduce takes tensors of one dtype and rank"));
        }
        let ordinal = t.device.device_id as usize;
        if ordinals.contains(&ordinal) {
            return Err(PyValueError::new_err(format!(
                "all_reduce takes one tensor per device; two are on cuda:{ordinal}"
            )));
        }
        ordinals.push(ordinal);
    }
    let rank = usize::try_from(ndim).map_err(|_| PyValueError::new_err(format!("ndim {ndim} is negative")))?;
    let unsupported = || PyTypeError::new_err(format!("NCCL has no data type for {dtype}"));
    if dtype.lanes != 1 {
        return Err(unsupported());
    }
    match DataType::of(dtype).ok_or_else(unsupported)? {
        DataType::Int8 => reduce::<i8>(&mut tensors, &ordinals, rank, op),
        DataType::Uint8 => reduce::<u8>(&mut tensors, &ordinals, rank, op),
        DataType::Int32 => reduce::<i32>(&mut tensors, &ordinals, rank, op),
        DataType::Uint32 => reduce::<u32>(&mut tensors, &ordinals, rank, op),
        DataType::Int64 => reduce::<i64>(&mut tensors, &ordinals, rank, op),
        DataType::Uint64 => reduce::<u64>(&mut tensors, &ordinals, rank, op),
        DataType::Float16 => reduce::<f16>(&mut tensors, &ordinals, rank, op),
        DataType::Bfloat16 => reduce::<bf16>(&mut tensors, &ordinals, rank, op),
        DataType::Float32 => reduce::<f32>(&mut tensors, &ordinals, rank, op),
        DataType::Float64 => reduce::<f64>(&mut tensors, &ordinals, rank, op),
        DataType::Float8E4M3 => reduce::<F8E4M3FN>(&mut tensors, &ordinals, rank, op),
        DataType::Float8E5M2 => reduce::<F8E5M2>(&mut tensors, &ordinals, rank, op),
        _ => Err(unsupported()),
    }
}

fn reduce<T: NcclElement>(
    tensors: &mut [ManagedTensor],
    ordinals: &[usize],
    rank: usize,
    op: ReduceOp,
) -> PyResult<()> {
    let mut all = COMMUNICATORS.lock().unwrap_or_else(|e| e.into_inner());
    let at = match all.iter().position(|(o, _)| o == ordinals) {
        Some(at) => at,
        None => {
            // Each rank queues on its device's default stream, where the producers were asked
            // (with DLPack's default `stream`) to make the data ready.
            let streams = ordinals
                .iter()
                .map(|&o| gpu(o).map(|g| g.stream.clone()))
                .collect::<PyResult<Vec<_>>>()?;
            all.push((
                ordinals.to_vec(),
                Communicator::for_devices(&streams).map_err(nccl_error)?,
            ));
            all.len() - 1
        }
    };
    let comms = &all[at].1;
    with_rank!(rank, R => {
        let mut views = tensors
            .iter_mut()
            .map(|t| t.view_mut::<Mdspan<'_, T, Dims<R>, LayoutRight, Device, AliasedMut>>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(crate::import_error)?;
        dlmd::cuda::scope(|s| {
            group(|| {
                for (comm, view) in comms.iter().zip(views.iter_mut()) {
                    comm.all_reduce_in_place(s, view, op)?;
                }
                Ok(())
            })
        })
        .map_err(|e| match e {
            NcclError::Cuda(e) => cuda_error(e),
            e => nccl_error(e),
        })
    })
}
