//! CUDA streams passed across DLPack: checking a consumer's stream handle before the driver
//! dereferences it, and ordering a producer's work before a consumer's.

use super::event::relaxed;
use super::{CudaError, driver_available};
use cudarc::driver::{CudaContext, CudaStream, sys};

/// Makes work queued on `producer` visible to a consumer's `stream`, by DLPack's stream rules
/// for CUDA: `None` or `1` is the legacy default stream, `2` the per-thread default stream,
/// `-1` asks for no synchronisation, a value above 2 is a stream handle (checked by
/// [`check_stream`]), and `0` (ambiguous) and other negative values are refused. The ordering is
/// an event recorded on `producer` that the consumer's stream waits for, never a device-wide
/// synchronisation.
///
/// A consumer's stream that is capturing a CUDA graph (`torch.cuda.graph`) is left untouched
/// when the producer's stream has nothing in flight (the data is ready for the capture and every
/// replay), and refused with [`StreamError::Capture`](super::StreamError::Capture) otherwise: waiting there for work queued
/// outside the capture would break it. The check itself runs in relaxed capture mode, so that it
/// does not break the capture either.
pub fn sync_consumer_stream(producer: &CudaStream, stream: Option<isize>) -> Result<(), CudaError> {
    let handle = match stream {
        None | Some(1) => 0x1 as sys::CUstream, // CU_STREAM_LEGACY
        Some(2) => 0x2 as sys::CUstream,        // CU_STREAM_PER_THREAD
        Some(-1) => return Ok(()),
        Some(0) => {
            return Err(CudaError::Stream(super::StreamError::Value {
                value: 0,
                why: "ambiguous for CUDA; use 1 (legacy default) or 2 (per-thread default)",
            }));
        }
        Some(s) if s > 2 => check_stream(s as usize, producer.context())?,
        Some(value) => {
            return Err(CudaError::Stream(super::StreamError::Value {
                value,
                why: "not a CUDA stream (DLPack allows -1, 1, 2 or a stream handle)",
            }));
        }
    };
    // The null stream of a context is the legacy default stream: nothing to wait for there.
    if producer.cu_stream().is_null() && handle == 0x1 as sys::CUstream {
        return Ok(());
    }
    producer.context().bind_to_thread()?;
    if handle != 0x1 as sys::CUstream && capturing(handle)? {
        return if relaxed(|| idle(producer))? {
            Ok(())
        } else {
            Err(CudaError::Stream(super::StreamError::Capture {
                stream: handle as usize,
            }))
        };
    }
    let event = producer.record_event(None)?;
    // SAFETY: `handle` is a special handle or a stream of this context (`check_stream` asked the
    // driver, after refusing integers that cannot be handles); the event is live, and its
    // destruction after the wait is queued is allowed.
    unsafe { sys::cuStreamWaitEvent(handle, event.cu_event(), 0) }.result()?;
    Ok(())
}

/// Waits on the host for the work queued on a producer's stream of CUDA device `ordinal`: `0`
/// (NULL) or `1` for the legacy default stream, `2` for the per-thread one, or a stream handle
/// of the device's primary context (checked by [`check_stream`]). What a consumer does before
/// the host reads memory a producer's kernels may still write: managed or pinned memory
/// imported for the CPU.
pub fn wait_for_stream(ordinal: i32, stream: usize) -> Result<(), CudaError> {
    let ctx = super::scope::primary(ordinal)?;
    ctx.bind_to_thread()?;
    let handle = match stream {
        0 | 1 => 0x1 as sys::CUstream,
        2 => 0x2 as sys::CUstream,
        s => check_stream(s, &ctx)?,
    };
    // SAFETY: `handle` is a special handle or a stream of this context, which is bound.
    unsafe { sys::cuStreamSynchronize(handle) }.result()?;
    Ok(())
}

/// Whether `stream` (not the legacy default stream, which cannot capture) is capturing a graph.
fn capturing(stream: sys::CUstream) -> Result<bool, CudaError> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: `stream` is a special handle or a checked stream of the producer's context; the
    // status is written through a valid pointer.
    unsafe { sys::cuStreamIsCapturing(stream, &mut status) }.result()?;
    Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

/// Whether `stream` has finished all the work queued on it.
fn idle(stream: &CudaStream) -> Result<bool, CudaError> {
    // SAFETY: a live stream of a live context (held by `stream`).
    match unsafe { sys::cuStreamQuery(stream.cu_stream()) } {
        sys::CUresult::CUDA_SUCCESS => Ok(true),
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        e => Err(CudaError::Driver(cudarc::driver::DriverError(e))),
    }
}

/// Checks that `value`, a stream handle a consumer passed as an integer (DLPack's `stream`
/// above 2), is a stream of `context`, without handing the driver a pointer that cannot be one.
///
/// A handle is an address in user space, aligned for the driver's stream object and above the
/// first page, and (on Linux) the kernel must find memory mapped there; `cuStreamGetCtx` must
/// then name `context`. An integer that fails these checks is refused rather than cast and
/// dereferenced by the driver, which crashes the process on an unmapped address. Memory that is
/// mapped but holds no stream is the one case left to the driver: a mapped, aligned address
/// given as `stream=` still reaches `cuStreamGetCtx`, which reads it as a stream object. That
/// is a limit of DLPack's integer streams, which no check on this side can lift: only the
/// driver knows its streams.
pub fn check_stream(value: usize, context: &CudaContext) -> Result<sys::CUstream, CudaError> {
    checked(value, context, false)
}

/// [`check_stream`] for a launch on an import's stream, where a handle the driver has named a
/// stream of on this thread is not asked about again: the kernel's answer is a system call,
/// which would cost more than the rest of a launch's checks, and the producer passes the same
/// few streams call after call. `cuStreamGetCtx` still names its context every time; a handle
/// whose stream was destroyed since, and whose memory the driver has unmapped, then reaches
/// it, where [`check_stream`] would refuse it. A destroyed stream is outside the producer's
/// contract (`WorkStream::from_raw`) either way.
pub(crate) fn check_launch_stream(value: usize, context: &CudaContext) -> Result<sys::CUstream, CudaError> {
    checked(value, context, true)
}

/// [`check_stream`], skipping the mapping question for a handle this thread checked before
/// where `remembered`.
fn checked(value: usize, context: &CudaContext, remembered: bool) -> Result<sys::CUstream, CudaError> {
    const PAGE: usize = 4096;
    // x86-64 and AArch64 Linux keep user space below 2^47 and 2^48.
    const USER_SPACE_END: usize = 1 << 48;
    let why = if value < PAGE {
        Some("a small integer, not a handle")
    } else if !value.is_multiple_of(align_of::<u64>()) {
        Some("not aligned like a driver object")
    } else if value >= USER_SPACE_END {
        Some("not an address in user space")
    } else {
        None
    };
    if let Some(why) = why {
        return Err(CudaError::Stream(super::StreamError::NotAStream { value, why }));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = remembered;
    #[cfg(target_os = "linux")]
    let known = remembered && CHECKED.with(|c| c.contains(value));
    #[cfg(target_os = "linux")]
    if !known && !mapped(value, STREAM_PROBE) {
        return Err(CudaError::Stream(super::StreamError::NotAStream {
            value,
            why: "no memory is mapped there",
        }));
    }
    if !driver_available() {
        return Err(CudaError::NoDriver);
    }
    let handle = value as sys::CUstream;
    let mut owner: sys::CUcontext = core::ptr::null_mut();
    // SAFETY: the driver reads the stream object behind `handle`, a plausible user-space address
    // (checked above, or for a launch on this thread before, when the driver found a stream
    // there; the consumer promises it is a live stream) and writes one `CUcontext` through a valid pointer.
    unsafe { sys::cuStreamGetCtx(handle, &mut owner) }.result()?;
    #[cfg(target_os = "linux")]
    CHECKED.with(|c| c.insert(value));
    if owner != context.cu_ctx() {
        return Err(CudaError::Stream(super::StreamError::NotAStream {
            value,
            why: "it belongs to another context",
        }));
    }
    Ok(handle)
}

#[cfg(target_os = "linux")]
std::thread_local! {
    /// Handles this thread found mapped and the driver then named a stream of: a producer
    /// passes the same few streams call after call, and asking the kernel about its memory
    /// (a system call) costs more than the rest of a launch's checks. A handle found here
    /// skips only that question; `cuStreamGetCtx` still names its context.
    static CHECKED: Recent = const { Recent::new() };
}

/// The last [`Recent::LEN`] distinct values inserted, most recent first (0 is no value:
/// stream handles are above the first page).
#[cfg(target_os = "linux")]
struct Recent(core::cell::Cell<[usize; Recent::LEN]>);

#[cfg(target_os = "linux")]
impl Recent {
    const LEN: usize = 8;

    const fn new() -> Self {
        Self(core::cell::Cell::new([0; Self::LEN]))
    }

    fn contains(&self, value: usize) -> bool {
        value != 0 && self.0.get().contains(&value)
    }

    /// Puts `value` first, dropping the oldest value (or `value`'s earlier place).
    fn insert(&self, value: usize) {
        let mut values = self.0.get();
        let at = values.iter().position(|&v| v == value).unwrap_or(Self::LEN - 1);
        values[..=at].rotate_right(1);
        values[0] = value;
        self.0.set(values);
    }
}

/// Bytes at a stream handle that must be mapped: the start of the driver's stream object.
#[cfg(target_os = "linux")]
const STREAM_PROBE: usize = 64;

/// Whether `len` bytes at `addr` are mapped readable in this process. The kernel copies them
/// with `process_vm_readv` (failing with `EFAULT`, not a fault, where they are not); where that
/// call is not allowed (some sandboxes), `/proc/self/maps` decides.
#[cfg(target_os = "linux")]
fn mapped(addr: usize, len: usize) -> bool {
    let mut buf = [0u8; STREAM_PROBE];
    let len = len.min(buf.len());
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut core::ffi::c_void,
        iov_len: len,
    };
    // SAFETY: the kernel writes at most `len` bytes into `buf`, which holds them, and reads the
    // remote range through its own checked copy: an unmapped address is an error, not a fault.
    // SAFETY: `getpid` has no preconditions.
    let pid = unsafe { libc::getpid() };
    // SAFETY: as above.
    let copied = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if copied >= 0 {
        return copied as usize == len;
    }
    if std::io::Error::last_os_error().raw_os_error() == Some(libc::EFAULT) {
        return false;
    }
    mapped_in_proc_maps(addr, len)
}

/// [`mapped`] from `/proc/self/maps`: one readable mapping holds the whole range.
#[cfg(target_os = "linux")]
fn mapped_in_proc_maps(addr: usize, len: usize) -> bool {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return false;
    };
    maps.lines().any(|line| {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            return false;
        };
        let Some((start, end)) = range.split_once('-') else {
            return false;
        };
        let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) else {
            return false;
        };
        perms.starts_with('r') && start <= addr && addr.saturating_add(len) <= end
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    #[cfg_attr(miri, ignore = "asks the kernel about this process's memory, which Miri cannot")]
    fn mapped_memory_is_told_from_unmapped() {
        let on_stack = [7u8; 128];
        let addr = on_stack.as_ptr() as usize;
        assert!(mapped(addr, 64));
        assert!(mapped_in_proc_maps(addr, 64));
        for unmapped in [0x1000usize, 0x10000, 0x1000_0000_0000] {
            assert!(!mapped(unmapped, 64), "{unmapped:#x}");
            assert!(!mapped_in_proc_maps(unmapped, 64), "{unmapped:#x}");
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn recent_handles_keep_the_last_eight_distinct_most_recent_first() {
        let recent = Recent::new();
        assert!(!recent.contains(0), "0 is no value");
        for v in 1..=8usize {
            recent.insert(v * 0x1000);
        }
        assert!((1..=8).all(|v| recent.contains(v * 0x1000)));
        // Inserting a value already there moves it first and drops nothing.
        recent.insert(0x1000);
        assert_eq!(recent.0.get()[0], 0x1000);
        assert!((1..=8).all(|v| recent.contains(v * 0x1000)));
        // A new value drops the oldest, now 0x2000.
        recent.insert(0x9000);
        assert!(!recent.contains(0x2000));
        assert!(recent.contains(0x9000) && recent.contains(0x1000) && recent.contains(0x3000));
        assert!(!recent.contains(0));
    }
}
