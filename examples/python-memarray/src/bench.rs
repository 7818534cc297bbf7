//! What the benchmarks (`bench*.py`) and tests call beside the module's API: one consumer path
//! at a time, with nothing around it (`import_tensor`, `borrow_tensor`, `import_batch`), and the
//! switch between the C exchange table and `__dlpack__` (`use_exchange_api`).

use crate::import;
use dlmd::python::with_dlpack_borrowed;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Imports `x` through DLPack and releases it at once, returning its rank: the consumer side
/// alone, for benchmarks.
#[pyfunction]
#[pyo3(signature = (x, /))]
pub(crate) fn import_tensor(x: &Bound<'_, PyAny>) -> PyResult<i32> {
    Ok(import(x)?.dl_tensor().ndim)
}

/// Lends `x`'s tensor through DLPack's non-owning exchange (the C exchange table where `x`'s
/// type publishes one, `__dlpack__` otherwise) and returns its rank: the borrowed consumer path
/// alone, for benchmarks.
#[pyfunction]
#[pyo3(signature = (x, /))]
pub(crate) fn borrow_tensor(x: &Bound<'_, PyAny>) -> PyResult<i32> {
    with_dlpack_borrowed(x, |t| t.dl_tensor().ndim)
}

/// Imports every object of `xs` and releases it at once, returning how many: the per-tensor
/// cost of one consumer path without a Python call per tensor, for benchmarks. `how` is
/// `"owned"` (an owning import, through the C exchange table where there is one), `"borrowed"`
/// (the non-owning one), `"borrowed+stream"` (the non-owning one, asking the producer's work
/// stream too), `"borrowed+writes"` (the non-owning one, asking whether it may be written, as a
/// consumer that writes does), `"dlpack"` (an owning import through `__dlpack__` and a capsule) or `"table"`
/// (the producer's non-owning table entry alone, called directly: the floor under
/// `"borrowed"`).
#[pyfunction]
#[pyo3(signature = (xs, how, /))]
pub(crate) fn import_batch(xs: &Bound<'_, pyo3::types::PyList>, how: &str) -> PyResult<usize> {
    let mut ndim = 0i64;
    match how {
        "owned" => {
            for x in xs.iter() {
                ndim += i64::from(import(&x)?.dl_tensor().ndim);
            }
        }
        "borrowed" => {
            for x in xs.iter() {
                ndim += i64::from(with_dlpack_borrowed(&x, |t| t.dl_tensor().ndim)?);
            }
        }
        "borrowed+stream" => {
            for x in xs.iter() {
                let stream = with_dlpack_borrowed(&x, |t| t.work_stream())??;
                ndim += stream.is_default() as i64;
            }
        }
        "borrowed+writes" => {
            for x in xs.iter() {
                let refused = with_dlpack_borrowed(&x, |t| t.writes_refused())??;
                ndim += refused.is_none() as i64;
            }
        }
        "table" => {
            // The floor under "borrowed": the producer's own non-owning entry, called directly
            // (every object of one type), without dlmd's consumer around it.
            let Some(first) = xs.iter().next() else {
                return Ok(0);
            };
            let ty = first.get_type();
            let lend = dlmd::python::exchange_table_of(&ty)?
                .and_then(|api| api.dltensor_from_py_object_no_sync)
                .ok_or_else(|| PyValueError::new_err("the type publishes no non-owning table entry"))?;
            for x in xs.iter() {
                if !x.get_type().is(&ty) {
                    return Err(PyValueError::new_err("every object must be of one type"));
                }
                let mut t = std::mem::MaybeUninit::<dlmd::dlpack::DLTensor>::uninit();
                // SAFETY: the entry of `x`'s type's table takes a live object of that type,
                // borrowed for the call, and a writable DLTensor; the GIL is held.
                let status = unsafe { lend(x.as_ptr().cast(), t.as_mut_ptr()) };
                if status != 0 {
                    return Err(PyErr::take(x.py()).unwrap_or_else(|| PyValueError::new_err("the entry failed")));
                }
                // SAFETY: the entry filled the tensor (it returned 0).
                ndim += i64::from(unsafe { t.assume_init() }.ndim);
            }
        }
        "dlpack" => {
            let before = dlmd::python::exchange_api_enabled();
            dlmd::python::set_exchange_api_enabled(false);
            let result = xs.iter().try_for_each(|x| {
                ndim += i64::from(import(&x)?.dl_tensor().ndim);
                Ok::<_, PyErr>(())
            });
            dlmd::python::set_exchange_api_enabled(before);
            result?;
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "how must be \"owned\", \"borrowed\", \"borrowed+stream\", \"borrowed+writes\", \"dlpack\" or \"table\", not {other:?}"
            )));
        }
    }
    std::hint::black_box(ndim);
    Ok(xs.len())
}

/// Whether this module's consumers (`MemArray.from_dlpack`, `add_index`, `import_tensor`…) take
/// a producer's DLPack C exchange table where its type publishes one (on by default); off, they
/// always call `__dlpack__`. Returns the previous setting.
#[pyfunction]
#[pyo3(signature = (enabled, /))]
pub(crate) fn use_exchange_api(enabled: bool) -> bool {
    let before = dlmd::python::exchange_api_enabled();
    dlmd::python::set_exchange_api_enabled(enabled);
    before
}
