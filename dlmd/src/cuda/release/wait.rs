//! Waiting for the holds recorded so far to end ([`wait_released`]).

use super::{CudaError, DELETERS, IS_RELEASER, Queue, RELEASED, Releaser, WORK, collect, is_done, queue};
use cudarc::driver::{DriverError, sys};
use std::sync::MutexGuard;

/// Waits until every hold recorded so far has ended: the kernels of the launches made before
/// the call are done and what they held is dropped (an imported tensor's deleter has returned).
/// Holds of launches captured into CUDA graphs last as long as their graphs and are not waited
/// for.
///
/// This is a host wait on the device. Deleters run on the releasing thread, and may take their
/// producer's locks: call it without holding one (from Python, with the GIL released), and
/// never from a deleter, which is refused with [`CudaError::WaitInDeleter`].
pub fn wait_released() -> Result<(), CudaError> {
    if IS_RELEASER.get() || DELETERS.get() > 0 {
        return Err(CudaError::WaitInDeleter);
    }
    let target = queue().recorded;
    let mut queue = queue();
    loop {
        // The event is taken only to wait for it here, and never dropped with the lock held
        // (the last reference destroys it, a driver call).
        let stopped = queue.releaser == Releaser::Stopped;
        let oldest = queue
            .pending
            .iter()
            .find(|p| p.seq <= target)
            .map(|p| (p.seq, stopped.then(|| p.event.clone())));
        let releasing = queue.releasing.iter().any(|&s| s <= target);
        match oldest {
            None if !releasing => return Ok(()),
            // Nothing releases in the background: wait for the oldest here, and release.
            Some((seq, Some(event))) => {
                drop(queue);
                // In relaxed capture mode, as every query here (`is_done`).
                let waited = crate::cuda::event::relaxed(|| Ok(event.synchronize()));
                // A failed wait may be another's error (binding the context returns the last
                // one it kept) or a capture's: the event itself says whether its kernel failed.
                let failed = match waited {
                    Ok(Err(_)) => is_done(&event).err(),
                    _ => None,
                };
                drop(event);
                match (waited, failed) {
                    (_, Some(e @ DriverError(sys::CUresult::CUDA_ERROR_DEINITIALIZED))) => return Err(e.into()),
                    // Not the kernel's failure: nothing is known of the hold.
                    (Err(e), _) => return Err(e),
                    // A failed kernel: the hold ends.
                    (Ok(_), Some(_)) => {
                        let _ = collect(Some(seq));
                    }
                    // Done, or not failed after all (asked again).
                    (Ok(_), None) => {
                        let _ = collect(None);
                    }
                }
                queue = self::queue();
            }
            // The releasing thread (or another caller) is on it.
            _ => {
                if queue.releaser == Releaser::Lingering {
                    // Not for launches to pause: this caller waits for them.
                    queue.asked += 1;
                    WORK.notify_one();
                }
                queue = wait_for_release(queue);
            }
        }
    }
}

/// Waits on [`RELEASED`], counted among its waiters.
pub(super) fn wait_for_release(mut queue: MutexGuard<'static, Queue>) -> MutexGuard<'static, Queue> {
    queue.waiters += 1;
    let mut queue = RELEASED.wait(queue).unwrap_or_else(|e| e.into_inner());
    queue.waiters -= 1;
    queue
}

#[cfg(test)]
mod tests {
    use super::super::{Held, release_completed};
    use super::*;
    use crate::DlElement;
    use crate::dlpack::{DLDevice, DLManagedTensorVersioned, DLPackVersion, DLTensor};
    use crate::managed::ManagedTensor;
    use std::sync::{Arc, Mutex};

    /// What the deleter below found `wait_released` to answer: refused or not.
    static REFUSED: Mutex<Option<bool>> = Mutex::new(None);

    /// A deleter that waits for the holds being released, its own among them.
    unsafe extern "C" fn waiting_deleter(managed: *mut DLManagedTensorVersioned) {
        let answer = wait_released();
        *REFUSED.lock().unwrap() = Some(matches!(answer, Err(CudaError::WaitInDeleter)));
        // SAFETY: the box made in the test, freed once (its shape and data are statics).
        drop(unsafe { Box::from_raw(managed) });
    }

    #[test]
    fn a_deleter_that_waits_for_the_holds_is_refused_on_a_launching_thread_too() {
        let _alone = super::super::tests::RETIRING.lock().unwrap_or_else(|e| e.into_inner());
        // Read by nobody (no view is made): statics, so that nothing is leaked.
        static SHAPE: [i64; 1] = [1];
        static DATA: [f32; 1] = [0.0];
        let managed = Box::new(DLManagedTensorVersioned {
            version: DLPackVersion::CURRENT,
            manager_ctx: core::ptr::null_mut(),
            deleter: Some(waiting_deleter),
            flags: 0,
            dl_tensor: DLTensor {
                data: DATA.as_ptr().cast_mut().cast(),
                device: DLDevice::CPU,
                ndim: 1,
                dtype: <f32 as DlElement>::DTYPE,
                shape: SHAPE.as_ptr().cast_mut(),
                strides: core::ptr::null_mut(),
                byte_offset: 0,
            },
        });
        // SAFETY: a versioned tensor owned here, handed over once; its deleter frees the box.
        let tensor = unsafe { ManagedTensor::from_raw(Box::into_raw(managed)) }.unwrap();
        // A graph's hold, as `retire` files it, dropped by this thread's pass (`collect`): where
        // the releasing thread took it first, it is refused there as well.
        queue().retired.push(Held {
            tensors: vec![Arc::new(tensor)],
            module: None,
            filed: None,
        });
        let _ = release_completed();
        assert_eq!(*REFUSED.lock().unwrap(), Some(true));
    }
}
