//! XLA's FFI: Rust handlers for XLA custom calls (`jax.ffi.ffi_call`), with XLA's buffers as
//! dlmd tensors and, on CUDA, kernels launched on XLA's stream.
//!
//! XLA calls a handler with a call frame ([`ffi::CallFrame`]): its arguments, results and
//! attributes, and an API table to ask for the stream and to report errors. Every part of the
//! frame is foreign data and is checked before use ([`Call`]): the size of each struct against
//! XLA's FFI API 0.3 (newer versions only append fields), the stage, the counts and kinds of
//! the lists, each buffer's rank, element type and extents, each attribute's kind and type.
//! Whatever is refused, or fails in the handler, or panics, is returned to XLA as an error
//! with a status code and a message ([`HandlerError`]), which JAX raises.
//!
//! A handler is a type implementing [`Handler`]; [`entry::<H>`](entry) is the C function to
//! register (from Python, [`python::xla_capsule`](crate::python::xla_capsule) wraps it for
//! `jax.ffi.register_ffi_target`).
//!
//! - On the host ([`Platform::Host`]), [`Call::arg`] and [`Call::ret`] give each buffer as a
//!   tensor whose views read and write elements by value, as every import's do: a result may
//!   share memory with an argument (`input_output_aliases`).
//! - On CUDA ([`Platform::Cuda`], feature `cuda`), [`Call::cuda_arg`] and [`Call::cuda_ret`]
//!   give each buffer as an import on XLA's stream: arguments of `#[dlmd::kernel]` launches
//!   queued there, checked as every import is, without a host wait. A handler whose launches
//!   are the same on every call can say so ([`ffi::Traits::COMMAND_BUFFER_COMPATIBLE`]), and
//!   XLA may capture it in a CUDA graph.
//!
//! Arguments are read-only: XLA may share them with other operations.

mod attribute;
mod buffer;
mod call;
mod dtype;
mod error;
pub mod ffi;
mod handler;
mod prefix;

pub use attribute::{Attribute, Scalar};
pub use buffer::Buffer;
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub use buffer::CudaBuffer;
pub use call::{Call, Platform};
pub use error::{FrameError, HandlerError, Side};
pub use handler::{Handler, entry};
