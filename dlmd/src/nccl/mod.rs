//! Collectives over typed device views, through NCCL.
//!
//! NCCL is reached through cudarc's bindings and loaded at run time, as the driver is: the
//! crate builds without it, and where it cannot be loaded every call returns
//! [`NcclError::NoLibrary`] instead of panicking. cudarc looks for `libnccl.so` (and a few
//! versioned names) on the loader's path; pip's `nvidia-nccl-cu13` ships `lib/libnccl.so.2`,
//! which needs a `libnccl.so` link beside it in a directory of `LD_LIBRARY_PATH`.
//!
//! - A [`Communicator`] is one rank of a group of GPUs: [`Communicator::for_devices`] makes one
//!   per device for a process driving several GPUs, [`Communicator::init_rank`] one for a
//!   process per GPU, joined by a [`UniqueId`] that rank 0 makes and shares (a file with
//!   [`UniqueId::exchange_file`], the launcher's rendezvous address with [`Rendezvous`], or an
//!   environment variable with [`UniqueId::from_env`]; [`Ranks::from_env`] reads torchrun's
//!   `RANK`, `WORLD_SIZE` and `LOCAL_RANK`, [`Rendezvous::from_env`] its `MASTER_ADDR` and
//!   `MASTER_PORT`).
//! - Collectives take device views: [`all_reduce`](Communicator::all_reduce),
//!   [`reduce`](Communicator::reduce), [`broadcast`](Communicator::broadcast),
//!   [`all_gather`](Communicator::all_gather), [`reduce_scatter`](Communicator::reduce_scatter),
//!   [`send`](Communicator::send) and [`recv`](Communicator::recv), with in-place forms. They
//!   are queued on the communicator's stream inside a [`cuda::scope`](crate::cuda::scope),
//!   which waits for them before the views it borrowed can go.
//! - What a call writes (its output, or its buffer in place) is borrowed `&mut` until the scope
//!   has waited. For an aliased view (`AliasedMut`, an import's), which is `Copy`, the borrow
//!   excludes nothing, so each call also checks that what it writes shares no memory with what
//!   it reads, nor with work queued in a scope that has not ended
//!   ([`CudaError::ScopeOverlap`](crate::cuda::CudaError::ScopeOverlap)).
//! - The element type picks NCCL's data type at compile time ([`NcclElement`]): 8-, 32- and
//!   64-bit integers, `f16`, `bf16`, `f32`, `f64` and the FP8 formats, and derived newtypes
//!   and vectors of them (a vector of N lanes is N values). Other types (`bool`, `i16`,
//!   complex numbers), host views, non-contiguous layouts and different element types on the
//!   two sides do not compile. The loaded NCCL's version is checked for `bf16` (2.10) and FP8
//!   (2.24).
//! - Extents are checked before NCCL is called: equal for `all_reduce`, `reduce` and
//!   `broadcast`, world size × the input for `all_gather`'s output, and the reverse for
//!   `reduce_scatter`; each has its own [`NcclError`].
//!
//! One thread driving several communicators must group their calls with [`group`], as NCCL
//! requires; so must send/receive pairs that would otherwise wait for each other.
//!
//! The package, one concept a file: `dtype` (element types to NCCL's data types, reductions),
//! `error`, `runtime` (loading NCCL, its version, groups), `id` (unique ids and launcher
//! ranks), `rendezvous` (the id over TCP), `communicator`, `collectives`, and [`check`] (what
//! the collectives check before NCCL is called).

pub mod check;
mod collectives;
mod communicator;
mod dtype;
mod error;
mod id;
mod rendezvous;
mod runtime;

pub use communicator::Communicator;
pub use dtype::{DataType, NcclElement, NcclScalar, ReduceOp};
pub use error::NcclError;
pub use id::{Ranks, UniqueId};
pub use rendezvous::{PORT_VARIABLE, Rendezvous};
pub use runtime::{available, group, version};
