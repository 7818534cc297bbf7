//! The boxed kernel torch's dispatcher calls: the stack read as the operator's parameters, its
//! returns written back, and every failure raised as a C++ exception torch catches.

use super::abi::{StableIValue, Torch};
use super::error::OpError;
use super::op::{Op, Params, Returns};
use core::ffi::c_char;

/// The longest message raised, in bytes (a longer one is cut at a character's end).
const MESSAGE: usize = 1024;

/// The kernel of `O`, as torch's stable ABI calls it: the stack holds `num_args` values, which
/// the kernel owns, and gets `num_returns` back.
///
/// An error or a panic of the operator is raised as a C++ `std::runtime_error` ("`name`:
/// message"), which unwinds through this function into torch's dispatcher (Python raises it as
/// `RuntimeError`); nothing of Rust's is alive by then.
///
/// # Safety
///
/// torch calls it, for an operator whose schema is [`schema::<O>`](super::schema) (which
/// [`Torch::register`] makes sure of): `stack` holds `max(num_args, num_returns)` values, the
/// first `num_args` of them the arguments torch converted for that schema.
pub(crate) unsafe extern "C-unwind" fn boxed<O: Op>(stack: *mut StableIValue, num_args: u64, num_returns: u64) {
    // `register` found torch before registering this kernel.
    let Some(torch) = Torch::loaded() else {
        // Unreachable: nothing can be raised without torch's functions. The arguments leak.
        return;
    };
    let mut message = [0u8; MESSAGE];
    let failed = {
        // Nothing of torch's is called here, so a panic (none is expected) is caught, not let
        // through to torch's C++.
        let taken = std::panic::catch_unwind(|| {
            // SAFETY: the caller's.
            unsafe { take::<O>(torch, stack, num_args, num_returns) }
                .and_then(|(params, values)| separate::<O>(&params).map(|()| (params, values)))
        })
        .unwrap_or_else(|panic| {
            Err(OpError::new(std::format!(
                "panicked reading its arguments: {}",
                crate::panic::message(panic)
            )))
        });
        if let Ok((_, values)) = &taken {
            // May throw (an inference tensor): `taken` is dropped as the exception unwinds
            // through this frame, deleting the arguments' references; nothing was written.
            bump::<O>(torch, values);
        }
        let outcome = match taken {
            Err(e) => Ok(Err(e)),
            Ok((params, values)) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                let out = O::call(params)?;
                out.give(&mut values[..<O::Returns as Returns>::COUNT]);
                Ok(())
            })),
        };
        let failure = match outcome {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(std::format!("{}: {}", O::NAME, e.message())),
            Err(panic) => {
                let what = crate::panic::message(panic);
                let what = if what.is_empty() {
                    "a panic with an empty message"
                } else {
                    &what
                };
                Some(std::format!("{} panicked: {what}", O::NAME))
            }
        };
        failure.map(|text| {
            // Cut at a character's end, leaving room for the NUL; a NUL of the text's own would
            // end it early, so each is written as `?`.
            let mut end = text.len().min(MESSAGE - 1);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            for (to, &b) in message.iter_mut().zip(&text.as_bytes()[..end]) {
                *to = if b == 0 { b'?' } else { b };
            }
        })
    }
    .is_some();
    if failed {
        // SAFETY: a NUL-terminated message (the array's last byte is never written); this
        // throws, and the only values left in this frame are the array and a reference.
        unsafe { (torch.raise)(message.as_ptr().cast::<c_char>()) }
    }
}

/// The arguments on the stack, owned, and the stack (for the returns).
///
/// # Safety
///
/// As for [`boxed`].
unsafe fn take<'s, O: Op>(
    torch: &'static Torch,
    stack: *mut StableIValue,
    num_args: u64,
    num_returns: u64,
) -> Result<(O::Params<'s>, &'s mut [StableIValue]), OpError> {
    let params = <O::Params<'s> as Params<'s>>::COUNT;
    let returns = <O::Returns as Returns>::COUNT;
    if num_args != params as u64 || num_returns != returns as u64 || (stack.is_null() && params.max(returns) > 0) {
        // Not this operator's schema: what the values are is unknown, so they are left alone.
        return Err(OpError::new(std::format!(
            "called with {num_args} arguments and {num_returns} returns, where its schema has {params} and {returns}"
        )));
    }
    let values: &mut [StableIValue] = if params.max(returns) == 0 {
        &mut []
    } else {
        // SAFETY: torch's stack of `max(num_args, num_returns)` values (the caller), exclusive
        // for the call.
        unsafe { core::slice::from_raw_parts_mut(stack, params.max(returns)) }
    };
    // SAFETY: the first `params` values are the arguments of `O`'s schema (the caller).
    let taken = unsafe { <O::Params<'s> as Params<'s>>::take(&values[..params], torch, O::PARAMS) }?;
    Ok((taken, values))
}

/// Moves torch's version counter of every tensor the operator writes, as torch's in-place
/// operations do, so that autograd notices a tensor it saved was changed. (Throws, through
/// this, for an inference tensor outside inference mode: nothing is written then.)
fn bump<O: Op>(torch: &'static Torch, args: &[StableIValue]) {
    let args = &args[..<O::Params<'static> as Params<'static>>::COUNT];
    for (value, &(_, written)) in args.iter().zip(<O::Params<'static> as Params<'static>>::TYPES) {
        if written {
            // SAFETY: a live tensor reference (taken, so not NULL, and owned by the parameter
            // until the call ends).
            unsafe { (torch.bump_version)(core::ptr::with_exposed_provenance_mut(*value as usize)) }
        }
    }
}

/// Refuses a call where a tensor the operator reads shares memory with one it writes: torch
/// passes what its caller gives (the same tensor twice, two views of one), and a read
/// tensor's managed tensor says `READ_ONLY`, which nobody may write under. (Written tensors
/// may share memory: their views write by value, and a launch refuses written arguments that
/// overlap.)
fn separate<'a, O: Op>(params: &O::Params<'a>) -> Result<(), OpError> {
    let types = <O::Params<'a> as Params<'a>>::TYPES;
    let tensor = |&(ty, _): &(&str, bool)| ty == "Tensor";
    if !(types.iter().any(|t| tensor(t) && !t.1) && types.iter().any(|t| t.1)) {
        return Ok(());
    }
    for (r, _) in types.iter().enumerate().filter(|(_, t)| tensor(t) && !t.1) {
        let Some(read) = params.span(r).transpose()? else {
            continue;
        };
        for (w, _) in types.iter().enumerate().filter(|(_, t)| t.1) {
            let Some(written) = params.span(w).transpose()? else {
                continue;
            };
            if read.0 < written.1 && written.0 < read.1 {
                let name = |i: usize| O::PARAMS.get(i).copied().unwrap_or("?");
                return Err(OpError::new(std::format!(
                    "{} shares memory with {}, which the operator writes: pass a copy of {}",
                    name(r),
                    name(w),
                    name(r)
                )));
            }
        }
    }
    Ok(())
}
