//! Holds of launches captured into a CUDA graph: what the kernel reaches lives as long as the
//! graph.
//!
//! A stream that captures a graph runs nothing: the kernel is recorded into the graph, which
//! may be instantiated and replayed any number of times after, until it is destroyed. No event
//! can say when the memory is last used, so the hold is tied to the graph instead, through a
//! CUDA *user object* (CUDA 11.3): the hold becomes the object's payload, the graph being
//! captured takes the only reference to it (`cuGraphRetainUserObject` with
//! `CU_GRAPH_USER_OBJECT_MOVE`), every instance made of the graph takes one more, and the driver
//! destroys the object once the graph and its instances are destroyed and their last launch is
//! done. Its destroy callback runs on a driver thread, which must not call CUDA: it only hands
//! the hold to the releasing thread ([`release::retire`](super::release)), which drops it.
//!
//! A captured launch over imports also captures, after its kernel, a node that records an event
//! each time the graph runs, and files its imported bytes under that event (`order`), so that a
//! later launch over the same memory on another stream waits for the graph's latest run. The
//! entries are part of the hold (`Held::filed`), and go with it.

use super::release::{self, Held};
use super::{CudaError, LaunchError};
use cudarc::driver::{CudaStream, DriverError, sys};
use std::sync::OnceLock;

/// `cuStreamGetCaptureInfo_v2` (CUDA 11.3): a capture's status, id and graph, and the nodes the
/// next captured node depends on.
type GetCaptureInfo = unsafe extern "C" fn(
    sys::CUstream,
    *mut sys::CUstreamCaptureStatus,
    *mut sys::cuuint64_t,
    *mut sys::CUgraph,
    *mut *const sys::CUgraphNode,
    *mut usize,
) -> sys::CUresult;

/// The driver's `cuStreamGetCaptureInfo_v2`, looked up once. cudarc binds it under one name or
/// another depending on the CUDA version it was built for (`_v2` up to 12.9, `_v3` from 12.3);
/// every driver from 11.3 on exports `_v2`, which is the one asked for.
fn capture_info() -> Option<GetCaptureInfo> {
    static ENTRY: OnceLock<Option<GetCaptureInfo>> = OnceLock::new();
    // SAFETY: `GetCaptureInfo` is the C signature of `cuStreamGetCaptureInfo_v2` (cuda.h).
    *ENTRY.get_or_init(|| unsafe { super::library::symbol(&["cuda", "nvcuda"], b"cuStreamGetCaptureInfo_v2\0") })
}

/// The graph `stream` is capturing into, or `None` where it captures none; refused where the
/// capture was invalidated (the launch could not be recorded) or the driver cannot name the
/// graph.
pub(crate) fn capture_graph(stream: &CudaStream, kernel: &'static str) -> Result<Option<sys::CUgraph>, CudaError> {
    use sys::CUstreamCaptureStatus::*;
    match stream.capture_status()? {
        CU_STREAM_CAPTURE_STATUS_NONE => return Ok(None),
        CU_STREAM_CAPTURE_STATUS_ACTIVE => {}
        _ => return Err(DriverError(sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED).into()),
    }
    let Some(get) = capture_info() else {
        return Err(CudaError::Launch(LaunchError::CaptureUnsupported { kernel }));
    };
    let mut status = CU_STREAM_CAPTURE_STATUS_NONE;
    let mut id: sys::cuuint64_t = 0;
    let mut graph: sys::CUgraph = core::ptr::null_mut();
    let mut dependencies: *const sys::CUgraphNode = core::ptr::null();
    let mut count: usize = 0;
    // SAFETY: `stream` is a live stream of its context; every output is a valid pointer to one
    // value of its type (the dependencies' array stays the driver's, and is not read).
    unsafe {
        get(
            stream.cu_stream(),
            &mut status,
            &mut id,
            &mut graph,
            &mut dependencies,
            &mut count,
        )
    }
    .result()?;
    if status != CU_STREAM_CAPTURE_STATUS_ACTIVE || graph.is_null() {
        return Err(DriverError(sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED).into());
    }
    Ok(Some(graph))
}

/// Moves `held` into `graph`, which a stream is capturing: it is dropped once the graph and
/// every instance of it are destroyed and their launches done. Call it before the kernel is
/// captured, so that a refusal leaves nothing in the graph unheld.
pub(crate) fn hold_for_graph(graph: sys::CUgraph, held: Held) -> Result<(), CudaError> {
    release::start_releaser();
    let payload = Box::into_raw(Box::new(held));
    let mut object: sys::CUuserObject = core::ptr::null_mut();
    // SAFETY: `payload` is a live box that the object owns from here (its destroy callback,
    // `retire`, frees it once); the flag is the one the driver requires. The callback makes no
    // CUDA call.
    let created = unsafe {
        sys::cuUserObjectCreate(
            &mut object,
            payload.cast(),
            Some(retire),
            1,
            sys::CUuserObject_flags_enum::CU_USER_OBJECT_NO_DESTRUCTOR_SYNC as core::ffi::c_uint,
        )
    };
    if let Err(e) = created.result() {
        // SAFETY: the driver refused the object, so the box is still only ours.
        drop(unsafe { Box::from_raw(payload) });
        return Err(e.into());
    }
    // SAFETY: `graph` is the graph being captured (the driver's answer above, valid until the
    // capture ends, which no other call here ends), to which the capture allows user objects;
    // the one reference `object` has is ours, and is moved to the graph.
    let retained = unsafe {
        sys::cuGraphRetainUserObject(
            graph,
            object,
            1,
            sys::CUuserObjectRetain_flags_enum::CU_GRAPH_USER_OBJECT_MOVE as core::ffi::c_uint,
        )
    };
    if let Err(e) = retained.result() {
        // The reference is still ours: releasing it destroys the object, and the hold goes to
        // the releasing thread like any other.
        // SAFETY: `object` is live with the one reference this thread owns, released once.
        let _ = unsafe { sys::cuUserObjectRelease(object, 1) };
        return Err(e.into());
    }
    Ok(())
}

/// The user object's destroy callback, on a driver thread: hands the hold over to the
/// releasing thread, calling no CUDA function (the driver forbids it there).
unsafe extern "C" fn retire(payload: *mut core::ffi::c_void) {
    // SAFETY: `payload` is the box `hold_for_graph` handed to the object, which the driver
    // destroys once, calling this once.
    let held = unsafe { Box::from_raw(payload.cast::<Held>()) };
    release::retire(*held);
}
