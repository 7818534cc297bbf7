//! Owned exchange: tensors handed over with their ownership, as `DLManagedTensorVersioned` (or the
//! legacy `DLManagedTensor`; both are [`ManagedTensorAbi`], and every function here takes
//! either).
//!
//! - Import: [`ManagedTensor`] owns a producer's managed tensor and calls its deleter exactly once
//!   when dropped. Views of it are safe: the producer's promise was made once, in
//!   [`ManagedTensor::from_raw`]. DLPack shares
//!   the memory: the producer and other consumers (another import of the same array among them)
//!   may read and write it while the tensor lives, so the views are
//!   [aliased](crate::view::Aliased): elements are copied in and out by value, and `&T` / `&mut T`
//!   views come only from [`assume_unaliased`](crate::Mdspan::assume_unaliased) /
//!   [`assume_unique`](crate::Mdspan::assume_unique), whose contract states exclusivity.
//! - Export: [`export`] and [`export_with`] turn an owned buffer (`Vec<T>`,
//!   `Box<[T]>`, `Arc<[T]>`: a [`TensorOwner`], or dlmd's [`Array`](crate::Array)) into a managed tensor whose deleter frees it
//!   exactly once, from any thread. Versioned tensors carry `READ_ONLY` for shared buffers
//!   (`Arc<[T]>`) and `IS_SUBBYTE_TYPE_PADDED` for FP6/FP4 elements.
//!
//! ```
//! use dlmd::dlpack::DLManagedTensorVersioned;
//! use dlmd::managed::{export, ManagedTensor};
//! use dlmd::{Dims, HostMdspanAliased, LayoutRight};
//!
//! let raw = export::<DLManagedTensorVersioned>(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], Dims::new([2, 3])).unwrap();
//! // SAFETY: `raw` was just produced by dlmd and is handed over here.
//! let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
//! let md = tensor.view::<HostMdspanAliased<'_, f32, Dims<2>, LayoutRight>>().unwrap();
//! assert_eq!(md.load([1, 2]), 6.0);
//! // Dropping `tensor` calls the deleter, which frees the `Vec`.
//! ```

//!
//! The module is split by direction: `import.rs` (the owned import), `owner.rs` (buffers that can
//! back an export) and `export.rs` (the owned export), with `recycle.rs` (the export blocks a
//! thread keeps for reuse).

mod export;
mod import;
mod owner;
pub(crate) mod recycle;

#[cfg(doc)]
use crate::dlpack::ManagedTensorAbi;

pub use export::{export, export_with};
pub use import::{ManagedError, ManagedTensor, TensorView};
pub use owner::TensorOwner;
