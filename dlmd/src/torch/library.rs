//! Registering operators with torch's dispatcher: the schema defined, and the Rust kernel
//! implemented for dispatch keys.

use super::abi::{LibraryHandle, Torch};
use super::error::TorchError;
use super::op::{Op, identifier, schema};
use std::ffi::CString;
use std::string::String;
use std::vec::Vec;

/// A dispatch key an operator is implemented for: where its tensors are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DispatchKey {
    /// Tensors on the CPU.
    Cpu,
    /// Tensors on a CUDA device.
    Cuda,
}

impl DispatchKey {
    /// torch's name of the key.
    pub fn name(self) -> &'static str {
        match self {
            DispatchKey::Cpu => "CPU",
            DispatchKey::Cuda => "CUDA",
        }
    }
}

/// An operator's registration with torch, which lasts for the rest of the process: torch may
/// be running the operator on any thread, and its definition must outlive those calls, so
/// dropping this leaves it registered. [`remove`](Self::remove) takes it away where the caller
/// knows no call is running or to come.
#[derive(Debug)]
#[must_use = "the operator stays registered; keep the registration to name it or remove it"]
pub struct Registration {
    torch: &'static Torch,
    /// The libraries torch made: the definition, then one per dispatch key.
    libraries: Vec<LibraryHandle>,
    name: String,
}

// SAFETY: torch's libraries are plain registration records, deleted from any thread under
// the dispatcher's own lock.
unsafe impl Send for Registration {}
// SAFETY: `&Registration` reaches nothing of torch's.
unsafe impl Sync for Registration {}

impl Registration {
    /// The operator's qualified name, `namespace::name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Takes the operator away from torch: its implementations, then its definition.
    ///
    /// # Safety
    ///
    /// No call of the operator is running, on any thread, and none is made from now on (torch
    /// reads the operator's entry in its dispatch table during a call, and after the kernel
    /// returns).
    pub unsafe fn remove(self) {
        // SAFETY: the caller's.
        unsafe { delete(self.torch, &self.libraries) }
    }
}

/// Deletes `libraries`, last first (the implementations before the definition).
///
/// # Safety
///
/// Libraries torch made, deleted once, and no call of the operator they register is running
/// or to come.
unsafe fn delete(torch: &Torch, libraries: &[LibraryHandle]) {
    for &library in libraries.iter().rev() {
        // SAFETY: the caller's.
        let _ = unsafe { (torch.delete_library)(library) };
    }
}

impl Torch {
    /// Defines the operator `O` in `namespace` (`torch.ops.<namespace>.<name>`), with the schema
    /// its types make ([`schema`]), and implements it for `keys` with its Rust kernel, which
    /// torch's dispatcher calls with no Python in between.
    ///
    /// The namespace may be defined elsewhere too (this is a fragment of it), but the operator
    /// must not be: a second definition is refused by torch, and so is the registration. Its
    /// fake implementation (for `torch.compile`) and autograd formula are registered as for
    /// any torch operator (`torch.library.register_fake`, `register_autograd`).
    pub fn register<O: Op>(&'static self, namespace: &str, keys: &[DispatchKey]) -> Result<Registration, TorchError> {
        let schema = schema::<O>()?;
        if !identifier(namespace) {
            return Err(TorchError::Schema {
                op: O::NAME.into(),
                why: "the namespace is not an identifier",
            });
        }
        let name = std::format!("{namespace}::{}", O::NAME);
        let c = |s: &str| CString::new(s).expect("identifiers and schemas hold no NUL");
        let (namespace, file) = (c(namespace), c(file!()));
        let mut registration = Registration {
            torch: self,
            libraries: Vec::new(),
            name: name.clone(),
        };
        // Until a kernel is registered nothing of the operator's can be running, and what was
        // made is deleted on failure; after, it stays (`Registration`).
        let refused = |what, status, libraries: &[LibraryHandle], implemented: bool| {
            if !implemented {
                // SAFETY: the libraries made for this registration, deleted once; no kernel of
                // the operator is registered, so no call of it is running.
                unsafe { delete(self, libraries) };
            }
            TorchError::Refused {
                what,
                name: name.clone(),
                status,
            }
        };
        let mut library = core::ptr::null_mut();
        // SAFETY: NUL-terminated strings and a place for the library.
        let status = unsafe { (self.init_fragment)(namespace.as_ptr(), file.as_ptr(), line!(), &mut library) };
        if status != 0 || library.is_null() {
            return Err(refused("a fragment of the namespace of", status, &[], false));
        }
        registration.libraries.push(library);
        // SAFETY: torch's library and a NUL-terminated schema.
        let status = unsafe { (self.def)(library, c(&schema).as_ptr()) };
        if status != 0 {
            return Err(refused("the definition of", status, &registration.libraries, false));
        }
        let op = c(O::NAME);
        let mut implemented = false;
        for key in keys {
            let mut library = core::ptr::null_mut();
            let key_name = c(key.name());
            // SAFETY: NUL-terminated strings and a place for the library.
            let status = unsafe {
                (self.init_impl)(
                    namespace.as_ptr(),
                    key_name.as_ptr(),
                    file.as_ptr(),
                    line!(),
                    &mut library,
                )
            };
            if status != 0 || library.is_null() {
                return Err(refused(
                    "an implementation library for",
                    status,
                    &registration.libraries,
                    implemented,
                ));
            }
            registration.libraries.push(library);
            // SAFETY: torch's library, a NUL-terminated name, and the kernel of the operator
            // whose schema was just defined from the same types (`boxed`'s contract).
            let status = unsafe { (self.implement)(library, op.as_ptr(), super::entry::boxed::<O>) };
            implemented |= status == 0;
            if status != 0 {
                return Err(refused(
                    "the implementation of",
                    status,
                    &registration.libraries,
                    implemented,
                ));
            }
        }
        Ok(registration)
    }
}
