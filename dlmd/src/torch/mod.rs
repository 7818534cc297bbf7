//! torch operators implemented in Rust, called by torch's dispatcher with no Python in the
//! call: `torch.ops.<namespace>.<name>(…)`, `torch.compile` and CUDA graphs reach the Rust
//! kernel directly.
//!
//! The operators are registered through torch's stable C ABI (the functions behind
//! `STABLE_TORCH_LIBRARY`), which dlmd finds at run time in the torch the process has loaded
//! ([`Torch::get`]): building needs no libtorch, and one build serves every torch from 2.9 on.
//!
//! An operator is a Rust type implementing [`Op`]: its name, its parameters as Rust types
//! ([`Tensor`] read, [`TensorMut`] written in place, `f64`, `i64`, `bool`) and its returns
//! (new tensors made by [`Torch::empty`]). [`Torch::register`] gives torch the schema those
//! types make, so the kernel reads torch's stack as what it is, and implements it for dispatch
//! keys ([`DispatchKey`]). Every failure of a call (a tensor that does not fit, a panic) is
//! raised by torch as `RuntimeError`, naming the operator.
//!
//! - On the host, a tensor's views ([`Tensor::view`], [`TensorMut::view_mut`]) read and write
//!   elements by value, as every import's do: two arguments may share memory.
//! - On CUDA (feature `cuda`), [`Tensor::cuda`] gives the tensor as an import on torch's
//!   current stream of its device, for `#[dlmd::kernel]` launches queued there without a host
//!   wait, captured with the rest when torch captures a CUDA graph.
//!
//! A tensor's memory is kept for the call, and for a launch's kernel, by a new tensor of its
//! storage, whatever becomes of the argument (`set_` to another storage, freed); a storage
//! resized in place frees its old memory under all its tensors, as it does under torch's own
//! DLPack exports: an operator that calls back into Python must not let that code resize its
//! arguments' storage (`resize_` growing them, `untyped_storage().resize_`) while it holds
//! their views or imports.
//!
//! The version counter of each written tensor moves before the kernel runs, as torch's own
//! in-place operations move it (this one function, `torch::autograd::impl::bump_version`, is
//! torch's C++ API rather than its stable ABI).

mod abi;
mod entry;
mod error;
mod library;
mod op;
mod tensor;
#[cfg(test)]
mod tests;

pub use abi::{BoxedKernel, StableIValue, Torch};
pub use error::{OpError, TorchError};
pub use library::{DispatchKey, Registration};
pub use op::{Op, Param, Params, Returns, schema};
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub use tensor::CudaTensor;
pub use tensor::{Tensor, TensorMut};
