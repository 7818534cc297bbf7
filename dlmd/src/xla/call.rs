//! A call frame, checked: its counts, kinds and sizes once, each buffer as a tensor when the
//! handler asks for it.

use super::attribute::Attribute;
use super::buffer::{Buffer, borrowed};
use super::error::{FrameError, Side};
use super::ffi::{self, ArgType, ExecutionStage, RetType};
use crate::dlpack::{DLDevice, DLDeviceType};
use core::ffi::c_void;
use std::string::ToString;

/// Where a handler's buffers live, which the platform it is registered for decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Platform {
    /// XLA's CPU backend (`platform="cpu"`): host memory.
    Host,
    /// XLA's CUDA backend (`platform="CUDA"`): memory of the call's device, work on XLA's
    /// stream.
    Cuda,
}

/// One list of a frame: its kinds and entries, `len` of each.
#[derive(Clone, Copy)]
struct List<'a, K> {
    kinds: &'a [K],
    entries: &'a [*mut c_void],
}

impl<'a, K> List<'a, K> {
    /// The list a frame's `size`, `types` and `entries` describe.
    ///
    /// # Safety
    ///
    /// Unless `size` is 0, `types` and `entries` point to `size` values each, valid for `'a`.
    unsafe fn new(side: Side, size: i64, kinds: *const K, entries: *const *mut c_void) -> Result<Self, FrameError> {
        let len = usize::try_from(size)
            .ok()
            .filter(|&n| n <= isize::MAX as usize / size_of::<*mut c_void>())
            .ok_or(FrameError::Count { side, count: size })?;
        if len == 0 {
            return Ok(Self {
                kinds: &[],
                entries: &[],
            });
        }
        if kinds.is_null() || entries.is_null() {
            return Err(FrameError::Null(match side {
                Side::Argument => "argument list",
                Side::Result => "result list",
            }));
        }
        Ok(Self {
            // SAFETY: `len` values at each non-NULL pointer, valid for `'a` (the caller); their
            // types (C enums of `int` width as integer newtypes, pointers) have no invalid values.
            kinds: unsafe { core::slice::from_raw_parts(kinds, len) },
            // SAFETY: as above.
            entries: unsafe { core::slice::from_raw_parts(entries, len) },
        })
    }
}

/// A call frame XLA passed a handler, checked: the sizes of its structs against XLA's FFI API
/// 0.3, its stage, the counts and lists of its arguments, results and attributes. Each buffer is
/// checked when the handler takes it ([`arg`](Self::arg), [`ret`](Self::ret)), and each
/// attribute when the handler reads it ([`attr`](Self::attr)).
///
/// Everything taken from a `Call` borrows it: nothing outlives the call, as XLA's buffers do
/// not.
pub struct Call<'a> {
    api: &'a ffi::Api,
    ctx: *mut ffi::ExecutionContext,
    args: List<'a, ArgType>,
    rets: List<'a, RetType>,
    attrs: super::attribute::Attrs<'a>,
    platform: Platform,
    device: DLDevice,
}

impl<'a> Call<'a> {
    /// Checks the frame at `frame`, whose API table `api` already passed
    /// [`check_api`](super::handler::check_api).
    ///
    /// # Safety
    ///
    /// `frame` points to a call frame XLA passed a handler, valid for `'a`, whose
    /// `struct_size` is true; so is every struct it points to, as far as each one's
    /// `struct_size` says, and every list holds as many values as its count says.
    pub(crate) unsafe fn new(
        frame: &'a ffi::CallFrame,
        api: &'a ffi::Api,
        platform: Platform,
    ) -> Result<Self, FrameError> {
        if frame.struct_size < ffi::CallFrame::STRUCT_SIZE {
            return Err(FrameError::StructSize {
                what: "XLA_FFI_CallFrame",
                found: frame.struct_size,
                expected: ffi::CallFrame::STRUCT_SIZE,
            });
        }
        for (what, found, expected) in [
            ("XLA_FFI_Args", frame.args.struct_size, ffi::Args::STRUCT_SIZE),
            ("XLA_FFI_Rets", frame.rets.struct_size, ffi::Rets::STRUCT_SIZE),
            ("XLA_FFI_Attrs", frame.attrs.struct_size, ffi::Attrs::STRUCT_SIZE),
        ] {
            if found < expected {
                return Err(FrameError::StructSize { what, found, expected });
            }
        }
        if frame.stage != ExecutionStage::EXECUTE {
            return Err(FrameError::Stage(frame.stage));
        }
        // SAFETY: the lists hold as many values as their counts say, valid for `'a` (caller).
        let args = unsafe { List::new(Side::Argument, frame.args.size, frame.args.types, frame.args.args)? };
        // SAFETY: as above.
        let rets = unsafe { List::new(Side::Result, frame.rets.size, frame.rets.types, frame.rets.rets)? };
        // SAFETY: as above.
        let attrs = unsafe { super::attribute::Attrs::new(&frame.attrs)? };
        let mut call = Self {
            api,
            ctx: frame.ctx,
            args,
            rets,
            attrs,
            platform,
            device: DLDevice::CPU,
        };
        if platform == Platform::Cuda {
            call.device = DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id: call.device_ordinal()?,
            };
        }
        Ok(call)
    }

    /// The platform the handler is registered for.
    pub fn platform(&self) -> Platform {
        self.platform
    }

    /// The device the buffers are on: the CPU, or the CUDA device XLA runs the call on.
    pub fn device(&self) -> DLDevice {
        self.device
    }

    /// The number of arguments.
    pub fn arg_count(&self) -> usize {
        self.args.entries.len()
    }

    /// The number of results.
    pub fn ret_count(&self) -> usize {
        self.rets.entries.len()
    }

    /// Argument `index` as a read-only tensor on the call's device, checked: a buffer, its
    /// struct's size, its rank, its element type's DLPack type. Its views
    /// ([`Buffer::view`]) check their element type, rank and static extents against it.
    pub fn arg(&self, index: usize) -> Result<Buffer<'a>, FrameError> {
        self.buffer(Side::Argument, index)
    }

    /// Result `index` as a writable tensor on the call's device, checked as [`arg`](Self::arg)
    /// checks. A result may share its memory with an argument (`input_output_aliases`): both
    /// are views of elements by value (`Aliased`, `AliasedMut`), never references, and a kernel
    /// launch refuses a written argument that overlaps another.
    pub fn ret(&self, index: usize) -> Result<Buffer<'a>, FrameError> {
        self.buffer(Side::Result, index)
    }

    /// Buffer `index` of `side`.
    fn buffer(&self, side: Side, index: usize) -> Result<Buffer<'a>, FrameError> {
        let (is_buffer, kind, entry) = match side {
            Side::Argument => {
                let (kind, entry) = entry(side, index, &self.args)?;
                (kind == ArgType::BUFFER, kind.0, entry)
            }
            Side::Result => {
                let (kind, entry) = entry(side, index, &self.rets)?;
                (kind == RetType::BUFFER, kind.0, entry)
            }
        };
        if !is_buffer {
            return Err(FrameError::NotBuffer { side, index, kind });
        }
        // SAFETY: a buffer entry points to an `XLA_FFI_Buffer` valid for `'a` (`new`).
        unsafe { borrowed(entry.cast(), side, index, self.device) }
    }

    /// The attribute `name`, as `T`: a scalar of `T`'s XLA type, a string (`&str`), or an
    /// array of scalars (`&[T]`).
    pub fn attr<T: Attribute<'a>>(&self, name: &str) -> Result<T, FrameError> {
        self.attrs.get(name)
    }

    /// The names of the call's attributes, in XLA's order (sorted).
    pub fn attr_names(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.attrs.names()
    }

    /// The CUDA stream XLA runs the call on: work the handler queues there runs after XLA's
    /// writes of the arguments and before XLA's reads of the results.
    #[cfg(feature = "cuda")]
    #[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
    pub fn stream(&self) -> Result<crate::exchange::WorkStream, FrameError> {
        let no_stream = |message: &str| FrameError::Context {
            what: "stream",
            message: message.to_string(),
        };
        if self.platform != Platform::Cuda {
            return Err(no_stream("the handler is not registered for CUDA"));
        }
        if self.api.struct_size < ffi::Api::THROUGH_STREAM_GET {
            return Err(no_stream("XLA's API table has no XLA_FFI_Stream_Get"));
        }
        let get = self
            .api
            .stream_get
            .ok_or_else(|| no_stream("XLA_FFI_Stream_Get is NULL"))?;
        let mut args = ffi::StreamGetArgs {
            struct_size: ffi::StreamGetArgs::STRUCT_SIZE,
            extension_start: core::ptr::null_mut(),
            ctx: self.ctx,
            stream: core::ptr::null_mut(),
        };
        // SAFETY: XLA's own entry, with arguments of its version's size and the call's context.
        let error = unsafe { get(&mut args) };
        // SAFETY: an error XLA's API returned, owned here, through the table it came from.
        unsafe { super::error::take_error(self.api, error) }.map_err(|m| no_stream(&m))?;
        // SAFETY: XLA's FFI contract: the call's buffers are ready on the stream it gives, which
        // lives for the call and while work queued on it runs (it is the executor's stream).
        Ok(unsafe { crate::exchange::WorkStream::from_raw(args.stream as usize) })
    }

    /// Argument `index` as a CUDA import on XLA's stream ([`stream`](Self::stream)): a kernel
    /// argument ([`Imported::arg`](crate::cuda::Imported::arg)) whose launch
    /// ([`Imported::launch`](crate::cuda::Imported::launch)) is queued on that stream, without a
    /// host wait, and checked as every import is (element type, rank, static extents, layout,
    /// the span inside one allocation of the device, written arguments disjoint). The buffer
    /// is lent ([`Imported::lent`](crate::cuda::Imported::lent)): XLA keeps it for the work the
    /// call queues, so a launch holds nothing and, with kernels
    /// [loaded for the process](crate::cuda::Kernels::leak), records no event.
    #[cfg(feature = "cuda")]
    #[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
    pub fn cuda_arg(&self, index: usize) -> Result<super::buffer::CudaBuffer<'a>, FrameError> {
        let stream = self.stream()?;
        self.arg(index).map(|b| b.on_stream(stream))
    }

    /// Result `index` as a CUDA import on XLA's stream, as [`cuda_arg`](Self::cuda_arg) gives an
    /// argument, writable.
    #[cfg(feature = "cuda")]
    #[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
    pub fn cuda_ret(&self, index: usize) -> Result<super::buffer::CudaBuffer<'a>, FrameError> {
        let stream = self.stream()?;
        self.ret(index).map(|b| b.on_stream(stream))
    }

    /// The ordinal of the CUDA device XLA runs the call on.
    fn device_ordinal(&self) -> Result<i32, FrameError> {
        let no_device = |message: &str| FrameError::Context {
            what: "device ordinal",
            message: message.to_string(),
        };
        if self.api.struct_size < ffi::Api::STRUCT_SIZE {
            return Err(no_device("XLA's API table has no XLA_FFI_DeviceOrdinal_Get"));
        }
        let get = self
            .api
            .device_ordinal_get
            .ok_or_else(|| no_device("XLA_FFI_DeviceOrdinal_Get is NULL"))?;
        let mut args = ffi::DeviceOrdinalGetArgs {
            struct_size: ffi::DeviceOrdinalGetArgs::STRUCT_SIZE,
            extension_start: core::ptr::null_mut(),
            ctx: self.ctx,
            device_ordinal: -1,
        };
        // SAFETY: XLA's own entry, with arguments of its version's size and the call's context.
        let error = unsafe { get(&mut args) };
        // SAFETY: an error XLA's API returned, owned here, through the table it came from.
        unsafe { super::error::take_error(self.api, error) }.map_err(|m| no_device(&m))?;
        if args.device_ordinal < 0 {
            return Err(no_device(&std::format!("XLA gave ordinal {}", args.device_ordinal)));
        }
        Ok(args.device_ordinal)
    }
}

/// Entry `index` of a list, with its kind.
fn entry<K: Copy>(side: Side, index: usize, list: &List<'_, K>) -> Result<(K, *mut c_void), FrameError> {
    match (list.kinds.get(index), list.entries.get(index)) {
        (Some(&kind), Some(&entry)) => Ok((kind, entry)),
        _ => Err(FrameError::Missing {
            side,
            index,
            count: list.entries.len(),
        }),
    }
}

impl core::fmt::Debug for Call<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Call")
            .field("platform", &self.platform)
            .field("device", &self.device)
            .field("args", &self.arg_count())
            .field("rets", &self.ret_count())
            .field("attrs", &self.attr_names().collect::<std::vec::Vec<_>>())
            .finish()
    }
}
