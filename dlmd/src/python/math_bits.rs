//! Tensors whose values are not their memory: torch's lazily negated and conjugated views.
//!
//! torch marks a view with a negative bit (`torch._neg_view(x)`, the imaginary part of a
//! conjugated tensor, `z.conj().imag`) or a conjugate bit (`z.conj()`) instead of computing
//! it: the memory holds the values before negation or conjugation, and every torch operation
//! applies the bit as it reads. DLPack has no such bit. torch's `__dlpack__` refuses the
//! conjugate bit but exports the negative bit as if it were not set, and its C exchange table
//! exports both. A consumer would then read `x` where torch reads `-x`, and write `x` where
//! torch then reads `-x`. So every import asks an object whose type has torch's math bits
//! (`is_neg`, `is_conj`, `resolve_neg`) for them first, and refuses a tensor with either set,
//! for reading and writing alike, naming the bit and the call that resolves it.

use super::interned::Remembered;
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;
use pyo3::{ffi, intern};

/// Whether each type seen has torch's math bits, by the type's address.
static HAS_MATH_BITS: Remembered<bool, 64> = Remembered::new();

/// Why a tensor with its negative bit set is refused.
pub(super) const NEGATIVE_BIT: &str = "the tensor has its negative bit set (a lazily negated view, such as torch._neg_view(x) or \
     z.conj().imag): its memory holds the values before negation, which DLPack cannot say; pass x.resolve_neg()";

/// Why a tensor with its conjugate bit set is refused.
pub(super) const CONJUGATE_BIT: &str = "the tensor has its conjugate bit set (a lazily conjugated view, such as z.conj()): its \
     memory holds the values before conjugation, which DLPack cannot say; pass z.resolve_conj()";

/// Refuses `obj` where it is a tensor with a math bit set (see the [module docs](self)), with
/// `BufferError`; objects of types without math bits cost one lookup of their type.
pub(super) fn refuse_math_bits(obj: &Bound<'_, PyAny>) -> PyResult<()> {
    if !has_math_bits(obj)? {
        return Ok(());
    }
    let py = obj.py();
    if obj.call_method0(intern!(py, "is_neg"))?.is_truthy()? {
        return Err(PyBufferError::new_err(NEGATIVE_BIT));
    }
    if obj.call_method0(intern!(py, "is_conj"))?.is_truthy()? {
        return Err(PyBufferError::new_err(CONJUGATE_BIT));
    }
    Ok(())
}

/// Whether `type(obj)` has torch's math bits, looked up once per type.
fn has_math_bits(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    // SAFETY: `obj` is a live object; its type pointer is read, not a new reference.
    let ty = unsafe { ffi::Py_TYPE(obj.as_ptr()) };
    if let Some(found) = HAS_MATH_BITS.find(ty.cast()) {
        return Ok(found);
    }
    let py = obj.py();
    let ty = obj.get_type();
    let has = ty.hasattr(intern!(py, "is_neg"))?
        && ty.hasattr(intern!(py, "is_conj"))?
        && ty.hasattr(intern!(py, "resolve_neg"))?;
    HAS_MATH_BITS.remember(ty.as_any(), has);
    Ok(has)
}
