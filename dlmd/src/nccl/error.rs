//! [`NcclError`]: every way a collective, a communicator or a unique id can fail.

use super::DataType;
use crate::cuda::CudaError;
use cudarc::nccl::sys;
use std::ffi::c_int;

/// Why an NCCL operation could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NcclError {
    /// NCCL could not be loaded.
    #[error(
        "NCCL could not be loaded (libnccl.so on the loader's path); install it, e.g. pip's \
         nvidia-nccl-cu13, and link its lib/libnccl.so.2 as libnccl.so in a directory of LD_LIBRARY_PATH"
    )]
    NoLibrary,
    /// The loaded NCCL lacks a function dlmd calls.
    #[error("the loaded NCCL has no {0}: it is older than this operation needs")]
    MissingSymbol(&'static str),
    /// NCCL returned an error.
    #[error("{call}: {code:?} ({message})")]
    Nccl {
        /// The NCCL function.
        call: &'static str,
        /// What it returned.
        code: sys::ncclResult_t,
        /// NCCL's description, with its last error where it has one.
        message: String,
    },
    /// The loaded NCCL is too old for an element type.
    #[error("{data_type} needs NCCL {needs} or later; the loaded NCCL is {version}", data_type = .data_type.name())]
    Unsupported {
        /// The data type.
        data_type: DataType,
        /// The loaded NCCL's version number.
        version: i32,
        /// The version the type needs.
        needs: i32,
    },
    /// A view is on another device than the communicator.
    #[error("{op}: the view is on CUDA device {view} but the communicator's rank is on device {communicator}")]
    WrongDevice {
        /// The collective.
        op: &'static str,
        /// The view's device.
        view: i32,
        /// The communicator's device.
        communicator: i32,
    },
    /// The input and output of an elementwise collective differ in extents.
    #[error("{op}: the input's extents {send:?} and the output's {recv:?} must be equal")]
    SameExtents {
        /// The collective.
        op: &'static str,
        /// The input's extents.
        send: Vec<usize>,
        /// The output's extents.
        recv: Vec<usize>,
    },
    /// An `all_gather` output does not hold world size × the input.
    #[error(
        "all_gather: the output holds {recv} elements but must hold world size × input = {world} × {send} = {}",
        *.world as u128 * *.send as u128
    )]
    AllGatherExtents {
        /// Elements of the input.
        send: usize,
        /// Elements of the output.
        recv: usize,
        /// The number of ranks.
        world: usize,
    },
    /// A `reduce_scatter` input does not hold world size × the output.
    #[error(
        "reduce_scatter: the input holds {send} elements but must hold world size × output = {world} × {recv} = {}",
        *.world as u128 * *.recv as u128
    )]
    ReduceScatterExtents {
        /// Elements of the input.
        send: usize,
        /// Elements of the output.
        recv: usize,
        /// The number of ranks.
        world: usize,
    },
    /// A root or peer rank is not a rank of the communicator.
    #[error("{op}: rank {rank} is not one of the communicator's {world} ranks")]
    Rank {
        /// The operation.
        op: &'static str,
        /// The rank given.
        rank: usize,
        /// The number of ranks.
        world: usize,
    },
    /// A rank number or world size is out of range.
    #[error(
        "rank {rank} of world size {world}: the rank must be below the world size, which must be 1 to {}",
        c_int::MAX
    )]
    World {
        /// The rank given.
        rank: usize,
        /// The world size given.
        world: usize,
    },
    /// A unique id could not be read or shared.
    #[error("NCCL unique id: {0}")]
    UniqueId(String),
    /// The unique id could not be handed over at a [`Rendezvous`](super::Rendezvous).
    #[error("NCCL id rendezvous at {address}: {why}")]
    Rendezvous {
        /// The host and port.
        address: String,
        /// What went wrong, and on which rank.
        why: String,
    },
    /// A launcher's environment variable is missing or malformed.
    #[error("environment variable {name}: {why}")]
    Env {
        /// The variable.
        name: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// CUDA failed.
    #[error(transparent)]
    Cuda(#[from] CudaError),
}

impl From<cudarc::driver::DriverError> for NcclError {
    fn from(e: cudarc::driver::DriverError) -> Self {
        Self::Cuda(e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extent_errors_say_what_is_needed() {
        let e = NcclError::AllGatherExtents {
            send: 6,
            recv: 6,
            world: 2,
        };
        assert_eq!(
            e.to_string(),
            "all_gather: the output holds 6 elements but must hold world size × input = 2 × 6 = 12"
        );
        let e = NcclError::ReduceScatterExtents {
            send: 5,
            recv: 3,
            world: 2,
        };
        assert!(e.to_string().contains("2 × 3 = 6"), "{e}");
        let e = NcclError::SameExtents {
            op: "all_reduce",
            send: vec![2, 3],
            recv: vec![3, 2],
        };
        assert!(
            e.to_string().contains("[2, 3]") && e.to_string().contains("[3, 2]"),
            "{e}"
        );
    }
}
