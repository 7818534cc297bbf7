//! Collectives over typed device views, through NCCL.
//!
//! NCCL is reached through cudarc's bindings and loaded at run time, as the driver is: the
//! crate builds without it, and where it cannot be loaded every call returns
//! [`NcclError::NoLibrary`] instead of panicking. cudarc looks for `libnccl.so` (and a few
//! versioned names) on the loader's path; pip's `nvidia-nccl-cu13` ships `lib/libnccl.so.2`,
//! which needs a `libnccl.so` link beside it in a directory of `LD_LIBRARY_PATH`.
//!
//! - A [`Communicator`] is one rank of a group of GPUs: [`Communicator::for_devices`] makes one
//!   per device for a process driving several GPUs, [`Communicator::init_rank`] one for a
//!   process per GPU, joined by a [`UniqueId`] that rank 0 makes and shares (a file with
//!   [`UniqueId::exchange_file`], or an environment variable with [`UniqueId::from_env`];
//!   [`Ranks::from_env`] reads torchrun's `RANK`, `WORLD_SIZE` and `LOCAL_RANK`).
//! - Collectives take device views: [`all_reduce`](Communicator::all_reduce),
//!   [`reduce`](Communicator::reduce), [`broadcast`](Communicator::broadcast),
//!   [`all_gather`](Communicator::all_gather), [`reduce_scatter`](Communicator::reduce_scatter),
//!   [`send`](Communicator::send) and [`recv`](Communicator::recv), with in-place forms. They
//!   are queued on the communicator's stream inside a [`cuda::scope`](crate::cuda::scope),
//!   which waits for them before the views it borrowed can go.
//! - The element type picks NCCL's data type at compile time ([`NcclElement`]): 8-, 32- and
//!   64-bit integers, `f16`, `bf16`, `f32`, `f64` and the FP8 formats, and derived newtypes
//!   and vectors of them (a vector of N lanes is N values). Other types (`bool`, `i16`,
//!   complex numbers), host views, non-contiguous layouts and different element types on the
//!   two sides do not compile. The loaded NCCL's version is checked for `bf16` (2.10) and FP8
//!   (2.24).
//! - Extents are checked before NCCL is called: equal for `all_reduce`, `reduce` and
//!   `broadcast`, world size × the input for `all_gather`'s output, and the reverse for
//!   `reduce_scatter`; each has its own [`NcclError`].
//!
//! One thread driving several communicators must group their calls with [`group`], as NCCL
//! requires; so must send/receive pairs that would otherwise wait for each other.

use crate::cuda::{CudaError, DeviceMemory, Scope};
use crate::dlpack::{DLDataType, DLDataTypeCode};
use crate::dtype::{ByteExact, DlElement, DlScalar, F8E4M3FN, F8E5M2};
use crate::extents::Extents;
use crate::layout::{CompactLayout, Mapping};
use crate::view::{Access, Mdspan, WriteAccess};
use cudarc::driver::CudaStream;
use cudarc::nccl::sys;
use half::{bf16, f16};
use std::ffi::{CStr, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// NCCL's data types, as dlmd maps element types to them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DataType {
    /// `ncclInt8`.
    Int8,
    /// `ncclUint8`.
    Uint8,
    /// `ncclInt32`.
    Int32,
    /// `ncclUint32`.
    Uint32,
    /// `ncclInt64`.
    Int64,
    /// `ncclUint64`.
    Uint64,
    /// `ncclFloat16`.
    Float16,
    /// `ncclFloat32`.
    Float32,
    /// `ncclFloat64`.
    Float64,
    /// `ncclBfloat16` (NCCL 2.10 and later).
    Bfloat16,
    /// `ncclFloat8e4m3` (NCCL 2.24 and later): OCP FP8 E4M3, dlmd's [`F8E4M3FN`].
    Float8E4M3,
    /// `ncclFloat8e5m2` (NCCL 2.24 and later): OCP FP8 E5M2, dlmd's [`F8E5M2`].
    Float8E5M2,
}

impl DataType {
    /// NCCL's data type for one lane of a DLPack data type, where it has one.
    ///
    /// ```
    /// use dlmd::dlpack::{DLDataType, DLDataTypeCode};
    /// use dlmd::nccl::DataType;
    /// assert_eq!(DataType::of(DLDataType::new(DLDataTypeCode::FLOAT, 32, 4)), Some(DataType::Float32));
    /// assert_eq!(DataType::of(DLDataType::new(DLDataTypeCode::INT, 16, 1)), None);
    /// ```
    pub const fn of(dtype: DLDataType) -> Option<Self> {
        const INT: u8 = DLDataTypeCode::INT.0;
        const UINT: u8 = DLDataTypeCode::UINT.0;
        const FLOAT: u8 = DLDataTypeCode::FLOAT.0;
        const BFLOAT: u8 = DLDataTypeCode::BFLOAT.0;
        const E4M3: u8 = DLDataTypeCode::FLOAT8_E4M3FN.0;
        const E5M2: u8 = DLDataTypeCode::FLOAT8_E5M2.0;
        Some(match (dtype.code, dtype.bits) {
            (INT, 8) => Self::Int8,
            (UINT, 8) => Self::Uint8,
            (INT, 32) => Self::Int32,
            (UINT, 32) => Self::Uint32,
            (INT, 64) => Self::Int64,
            (UINT, 64) => Self::Uint64,
            (FLOAT, 16) => Self::Float16,
            (FLOAT, 32) => Self::Float32,
            (FLOAT, 64) => Self::Float64,
            (BFLOAT, 16) => Self::Bfloat16,
            (E4M3, 8) => Self::Float8E4M3,
            (E5M2, 8) => Self::Float8E5M2,
            _ => return None,
        })
    }

    /// The oldest NCCL version (`ncclGetVersion`'s number, 22400 for 2.24.0) with this type.
    pub const fn min_version(self) -> i32 {
        match self {
            Self::Bfloat16 => 21000,
            Self::Float8E4M3 | Self::Float8E5M2 => 22400,
            _ => 0,
        }
    }

    /// NCCL's name of the type.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Int8 => "ncclInt8",
            Self::Uint8 => "ncclUint8",
            Self::Int32 => "ncclInt32",
            Self::Uint32 => "ncclUint32",
            Self::Int64 => "ncclInt64",
            Self::Uint64 => "ncclUint64",
            Self::Float16 => "ncclFloat16",
            Self::Float32 => "ncclFloat32",
            Self::Float64 => "ncclFloat64",
            Self::Bfloat16 => "ncclBfloat16",
            Self::Float8E4M3 => "ncclFloat8e4m3",
            Self::Float8E5M2 => "ncclFloat8e5m2",
        }
    }

    /// The value cudarc's bindings pass to NCCL.
    pub const fn to_sys(self) -> sys::ncclDataType_t {
        use sys::ncclDataType_t as T;
        match self {
            Self::Int8 => T::ncclInt8,
            Self::Uint8 => T::ncclUint8,
            Self::Int32 => T::ncclInt32,
            Self::Uint32 => T::ncclUint32,
            Self::Int64 => T::ncclInt64,
            Self::Uint64 => T::ncclUint64,
            Self::Float16 => T::ncclFloat16,
            Self::Float32 => T::ncclFloat32,
            Self::Float64 => T::ncclFloat64,
            Self::Bfloat16 => T::ncclBfloat16,
            Self::Float8E4M3 => T::ncclFloat8e4m3,
            Self::Float8E5M2 => T::ncclFloat8e5m2,
        }
    }
}

/// A scalar element type NCCL reduces and moves: its data type follows from the element's
/// DLPack data type ([`DlElement::DTYPE`]) at compile time.
///
/// # Safety
///
/// `DATA_TYPE` is NCCL's type of exactly `Self`'s bytes (the one [`DataType::of`] gives for
/// `Self::DTYPE`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no NCCL data type",
    label = "NCCL cannot reduce or move this element type",
    note = "NCCL handles i8, u8, i32, u32, i64, u64, f16, bf16, f32, f64, F8E4M3FN and F8E5M2, \
            and derived newtypes and vectors of them"
)]
pub unsafe trait NcclScalar: DlScalar {
    /// NCCL's data type of one value.
    const DATA_TYPE: DataType;
}

macro_rules! nccl_scalars {
    ($($t:ty),* $(,)?) => {$(
        // SAFETY: the type's own DLPack data type, mapped by `DataType::of`.
        unsafe impl NcclScalar for $t {
            const DATA_TYPE: DataType = match DataType::of(<$t as DlElement>::DTYPE) {
                Some(t) => t,
                None => panic!("a scalar without an NCCL data type"),
            };
        }
    )*};
}
nccl_scalars!(i8, u8, i32, u32, i64, u64, f16, bf16, f32, f64, F8E4M3FN, F8E5M2);

/// An element type collectives take: a byte-exact [`DlElement`] whose lanes are of an
/// [`NcclScalar`] type (scalars, derived newtypes of them, and vectors of those). One element
/// is [`LANES`](DlElement::LANES) NCCL values.
pub trait NcclElement: DlElement<Storage = ByteExact> {
    /// NCCL's data type of one lane.
    const DATA_TYPE: DataType;
}

impl<T> NcclElement for T
where
    T: DlElement<Storage = ByteExact>,
    T::Scalar: NcclScalar,
{
    const DATA_TYPE: DataType = <T::Scalar as NcclScalar>::DATA_TYPE;
}

/// A reduction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// The sum.
    #[default]
    Sum,
    /// The product.
    Prod,
    /// The maximum.
    Max,
    /// The minimum.
    Min,
    /// The mean over the ranks.
    Avg,
}

impl ReduceOp {
    fn to_sys(self) -> sys::ncclRedOp_t {
        use sys::ncclRedOp_t as O;
        match self {
            Self::Sum => O::ncclSum,
            Self::Prod => O::ncclProd,
            Self::Max => O::ncclMax,
            Self::Min => O::ncclMin,
            Self::Avg => O::ncclAvg,
        }
    }
}

/// Why an NCCL operation could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NcclError {
    /// NCCL could not be loaded.
    #[error(
        "NCCL could not be loaded (libnccl.so on the loader's path); install it, e.g. pip's \
         nvidia-nccl-cu13, and link its lib/libnccl.so.2 as libnccl.so in a directory of LD_LIBRARY_PATH"
    )]
    NoLibrary,
    /// The loaded NCCL lacks a function dlmd calls.
    #[error("the loaded NCCL has no {0}: it is older than this operation needs")]
    MissingSymbol(&'static str),
    /// NCCL returned an error.
    #[error("{call}: {code:?} ({message})")]
    Nccl {
        /// The NCCL function.
        call: &'static str,
        /// What it returned.
        code: sys::ncclResult_t,
        /// NCCL's description, with its last error where it has one.
        message: String,
    },
    /// The loaded NCCL is too old for an element type.
    #[error("{data_type} needs NCCL {needs} or later; the loaded NCCL is {version}", data_type = .data_type.name())]
    Unsupported {
        /// The data type.
        data_type: DataType,
        /// The loaded NCCL's version number.
        version: i32,
        /// The version the type needs.
        needs: i32,
    },
    /// A view is on another device than the communicator.
    #[error("{op}: the view is on CUDA device {view} but the communicator's rank is on device {communicator}")]
    WrongDevice {
        /// The collective.
        op: &'static str,
        /// The view's device.
        view: i32,
        /// The communicator's device.
        communicator: i32,
    },
    /// The input and output of an elementwise collective differ in extents.
    #[error("{op}: the input's extents {send:?} and the output's {recv:?} must be equal")]
    SameExtents {
        /// The collective.
        op: &'static str,
        /// The input's extents.
        send: Vec<usize>,
        /// The output's extents.
        recv: Vec<usize>,
    },
    /// An `all_gather` output does not hold world size × the input.
    #[error(
        "all_gather: the output holds {recv} elements but must hold world size × input = {world} × {send} = {}",
        *.world as u128 * *.send as u128
    )]
    AllGatherExtents {
        /// Elements of the input.
        send: usize,
        /// Elements of the output.
        recv: usize,
        /// The number of ranks.
        world: usize,
    },
    /// A `reduce_scatter` input does not hold world size × the output.
    #[error(
        "reduce_scatter: the input holds {send} elements but must hold world size × output = {world} × {recv} = {}",
        *.world as u128 * *.recv as u128
    )]
    ReduceScatterExtents {
        /// Elements of the input.
        send: usize,
        /// Elements of the output.
        recv: usize,
        /// The number of ranks.
        world: usize,
    },
    /// A root or peer rank is not a rank of the communicator.
    #[error("{op}: rank {rank} is not one of the communicator's {world} ranks")]
    Rank {
        /// The operation.
        op: &'static str,
        /// The rank given.
        rank: usize,
        /// The number of ranks.
        world: usize,
    },
    /// A rank number or world size is out of range.
    #[error(
        "rank {rank} of world size {world}: the rank must be below the world size, which must be 1 to {}",
        c_int::MAX
    )]
    World {
        /// The rank given.
        rank: usize,
        /// The world size given.
        world: usize,
    },
    /// A unique id could not be read or shared.
    #[error("NCCL unique id: {0}")]
    UniqueId(String),
    /// A launcher's environment variable is missing or malformed.
    #[error("environment variable {name}: {why}")]
    Env {
        /// The variable.
        name: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// CUDA failed.
    #[error(transparent)]
    Cuda(#[from] CudaError),
}

impl From<cudarc::driver::DriverError> for NcclError {
    fn from(e: cudarc::driver::DriverError) -> Self {
        Self::Cuda(e.into())
    }
}

/// Whether NCCL can be loaded here.
pub fn available() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to open the shared library by the names cudarc uses.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

/// Calls into NCCL through cudarc: `NoLibrary` where it cannot be loaded, `MissingSymbol` where
/// the function is missing (cudarc panics then), NCCL's error where it returns one.
fn call(
    name: &'static str,
    comm: Option<sys::ncclComm_t>,
    f: impl FnOnce() -> sys::ncclResult_t,
) -> Result<(), NcclError> {
    if !available() {
        return Err(NcclError::NoLibrary);
    }
    let code = catch_unwind(AssertUnwindSafe(f)).map_err(|_| NcclError::MissingSymbol(name))?;
    match code {
        sys::ncclResult_t::ncclSuccess => Ok(()),
        code => {
            // SAFETY: takes a result code by value.
            let text = catch_unwind(|| unsafe { sys::ncclGetErrorString(code) }).unwrap_or(core::ptr::null());
            let mut message = if text.is_null() {
                String::new()
            } else {
                // SAFETY: NCCL returns a static NUL-terminated string for every result code.
                unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
            };
            if let Some(comm) = comm {
                // SAFETY: `comm` is a live communicator; the last error is a NUL-terminated
                // string NCCL keeps (possibly empty), or NULL.
                let last = catch_unwind(|| unsafe { sys::ncclGetLastError(comm) }).unwrap_or(core::ptr::null());
                if !last.is_null() {
                    // SAFETY: non-NULL, NUL-terminated, as above.
                    let last = unsafe { CStr::from_ptr(last) }.to_string_lossy();
                    if !last.is_empty() {
                        message = format!("{message}: {last}");
                    }
                }
            }
            Err(NcclError::Nccl {
                call: name,
                code,
                message,
            })
        }
    }
}

/// The loaded NCCL's version number (`ncclGetVersion`: 22809 for 2.28.9).
pub fn version() -> Result<i32, NcclError> {
    static VERSION: OnceLock<i32> = OnceLock::new();
    if let Some(v) = VERSION.get() {
        return Ok(*v);
    }
    let mut v: c_int = 0;
    // SAFETY: writes one `int` through a valid pointer.
    call("ncclGetVersion", None, || unsafe { sys::ncclGetVersion(&mut v) })?;
    Ok(*VERSION.get_or_init(|| v))
}

/// Checks that the loaded NCCL has `T`'s data type.
fn supported<T: NcclElement>() -> Result<(), NcclError> {
    let needs = T::DATA_TYPE.min_version();
    if needs > 0 {
        let version = version()?;
        if version < needs {
            return Err(NcclError::Unsupported {
                data_type: T::DATA_TYPE,
                version,
                needs,
            });
        }
    }
    Ok(())
}

/// Runs `f` between `ncclGroupStart` and `ncclGroupEnd`: the calls of one thread to several
/// communicators, or send/receive pairs, then start together. The group is ended also when
/// `f` fails; its error comes first.
pub fn group<R>(f: impl FnOnce() -> Result<R, NcclError>) -> Result<R, NcclError> {
    // SAFETY: no arguments.
    call("ncclGroupStart", None, || unsafe { sys::ncclGroupStart() })?;
    let out = catch_unwind(AssertUnwindSafe(f));
    // SAFETY: no arguments; ends the group started above.
    let ended = call("ncclGroupEnd", None, || unsafe { sys::ncclGroupEnd() });
    let out = out.unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
    ended?;
    Ok(out)
}

/// The id that joins the ranks of one communicator: rank 0 makes it with [`new`](Self::new)
/// and every rank passes it to [`Communicator::init_rank`].
#[derive(Clone, Copy)]
pub struct UniqueId(sys::ncclUniqueId);

impl core::fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "UniqueId({})", self.to_hex())
    }
}

impl UniqueId {
    /// A fresh id (`ncclGetUniqueId`), made on rank 0.
    pub fn new() -> Result<Self, NcclError> {
        let mut id = sys::ncclUniqueId { internal: [0; 128] };
        // SAFETY: writes one `ncclUniqueId` through a valid pointer.
        call("ncclGetUniqueId", None, || unsafe { sys::ncclGetUniqueId(&mut id) })?;
        Ok(Self(id))
    }

    /// The id's 128 bytes.
    pub fn to_bytes(&self) -> [u8; 128] {
        self.0.internal.map(|c| c as u8)
    }

    /// The id of 128 bytes made by [`to_bytes`](Self::to_bytes) on another rank.
    pub fn from_bytes(bytes: [u8; 128]) -> Self {
        Self(sys::ncclUniqueId {
            internal: bytes.map(|b| b as core::ffi::c_char),
        })
    }

    /// The id as 256 lowercase hexadecimal digits, to pass in an environment variable or a file.
    pub fn to_hex(&self) -> String {
        self.to_bytes().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The id from [`to_hex`](Self::to_hex)'s text (surrounding whitespace ignored).
    pub fn from_hex(text: &str) -> Result<Self, NcclError> {
        let text = text.trim();
        if text.len() != 256 || !text.is_ascii() {
            return Err(NcclError::UniqueId(format!(
                "expected 256 hexadecimal digits, found {} characters",
                text.chars().count()
            )));
        }
        let mut bytes = [0u8; 128];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16)
                .map_err(|_| NcclError::UniqueId(format!("{:?} is not hexadecimal", &text[2 * i..2 * i + 2])))?;
        }
        Ok(Self::from_bytes(bytes))
    }

    /// The id in environment variable `name` (as [`to_hex`](Self::to_hex) writes it), set by
    /// whatever started the ranks.
    pub fn from_env(name: &'static str) -> Result<Self, NcclError> {
        let text = std::env::var(name).map_err(|e| NcclError::Env {
            name,
            why: e.to_string(),
        })?;
        Self::from_hex(&text)
    }

    /// Shares an id through a file all ranks can reach: rank 0 makes a fresh id and writes it to
    /// `path` (atomically: written beside it, then renamed); the others wait until it appears,
    /// up to `timeout`. Remove the file before starting the next group with the same path.
    pub fn exchange_file(path: impl AsRef<Path>, rank: usize, timeout: Duration) -> Result<Self, NcclError> {
        let path = path.as_ref();
        let io = |what: &str, e: std::io::Error| NcclError::UniqueId(format!("{what} {}: {e}", path.display()));
        if rank == 0 {
            let id = Self::new()?;
            let mut partial = path.as_os_str().to_owned();
            partial.push(format!(".{}.partial", std::process::id()));
            std::fs::write(&partial, id.to_hex()).map_err(|e| io("writing beside", e))?;
            std::fs::rename(&partial, path).map_err(|e| io("renaming into", e))?;
            return Ok(id);
        }
        let start = Instant::now();
        loop {
            match std::fs::read_to_string(path) {
                Ok(text) => return Self::from_hex(&text),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("reading", e)),
            }
            if start.elapsed() >= timeout {
                return Err(NcclError::UniqueId(format!(
                    "rank {rank}: {} did not appear within {timeout:?}; is rank 0 running?",
                    path.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The ranks as a launcher such as torchrun describes them in `RANK`, `WORLD_SIZE` and
/// `LOCAL_RANK`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ranks {
    /// This process's rank.
    pub rank: usize,
    /// The number of ranks.
    pub world_size: usize,
    /// This process's rank on its host: the usual device ordinal.
    pub local_rank: usize,
}

impl Ranks {
    /// Reads `RANK`, `WORLD_SIZE` and `LOCAL_RANK` (`LOCAL_RANK` defaults to `RANK`).
    pub fn from_env() -> Result<Self, NcclError> {
        fn read(name: &'static str) -> Result<Option<usize>, NcclError> {
            match std::env::var(name) {
                Ok(v) => v.trim().parse().map(Some).map_err(|e| NcclError::Env {
                    name,
                    why: format!("{v:?}: {e}"),
                }),
                Err(std::env::VarError::NotPresent) => Ok(None),
                Err(e) => Err(NcclError::Env {
                    name,
                    why: e.to_string(),
                }),
            }
        }
        let missing = |name| NcclError::Env {
            name,
            why: "not set (start the ranks with torchrun or set it)".into(),
        };
        let rank = read("RANK")?.ok_or_else(|| missing("RANK"))?;
        let world_size = read("WORLD_SIZE")?.ok_or_else(|| missing("WORLD_SIZE"))?;
        let local_rank = read("LOCAL_RANK")?.unwrap_or(rank);
        if rank >= world_size {
            return Err(NcclError::World {
                rank,
                world: world_size,
            });
        }
        Ok(Self {
            rank,
            world_size,
            local_rank,
        })
    }
}

/// One rank of an NCCL communicator, on one CUDA device, queueing its work on one stream.
///
/// It may move to another thread but not be used from two at once (NCCL's rule). Dropping it
/// destroys the communicator (`ncclCommDestroy`).
#[derive(Debug)]
pub struct Communicator {
    comm: sys::ncclComm_t,
    stream: Arc<CudaStream>,
    rank: usize,
    world: usize,
    ordinal: i32,
}

// SAFETY: an NCCL communicator may be used from any thread, one at a time; `&self` methods
// that call NCCL are not offered through `Sync` (the type is `!Sync`, as the raw pointer is).
unsafe impl Send for Communicator {}

impl Drop for Communicator {
    fn drop(&mut self) {
        // Errors cannot be reported from here; the communicator is gone either way.
        // SAFETY: `comm` is a live communicator, destroyed once.
        let _ = call("ncclCommDestroy", None, || unsafe { sys::ncclCommDestroy(self.comm) });
    }
}

fn c_rank(rank: usize, world: usize) -> Result<(c_int, c_int), NcclError> {
    match (c_int::try_from(rank), c_int::try_from(world)) {
        (Ok(r), Ok(w)) if r < w => Ok((r, w)),
        _ => Err(NcclError::World { rank, world }),
    }
}

fn ordinal_of(stream: &Arc<CudaStream>) -> Result<i32, NcclError> {
    let ordinal = stream.context().ordinal();
    i32::try_from(ordinal).map_err(|_| CudaError::Ordinal(ordinal).into())
}

/// The element count and pointer of a contiguous device view, checked to be on `ordinal`.
fn buffer<T, E, L, S, A>(
    op: &'static str,
    ordinal: i32,
    view: &Mdspan<'_, T, E, L, S, A>,
) -> Result<(usize, usize), NcclError>
where
    T: NcclElement,
    E: Extents,
    L: CompactLayout,
    S: DeviceMemory,
    A: Access,
{
    if view.space().ordinal() != ordinal {
        return Err(NcclError::WrongDevice {
            op,
            view: view.space().ordinal(),
            communicator: ordinal,
        });
    }
    // A view's span is memory that exists, so its count of lanes fits `usize`.
    let count = view.mapping().required_span_size() * usize::from(T::LANES);
    Ok((count, view.data_handle() as usize))
}

fn same_extents<E: Extents, E2: Extents<Index = E::Index>>(
    op: &'static str,
    send: &E,
    recv: &E2,
) -> Result<(), NcclError> {
    let (s, r) = (send.to_array(), recv.to_array());
    if s.as_ref() != r.as_ref() {
        return Err(NcclError::SameExtents {
            op,
            send: s.as_ref().to_vec(),
            recv: r.as_ref().to_vec(),
        });
    }
    Ok(())
}

impl Communicator {
    /// One communicator per stream, for one process driving several GPUs: rank `i` is on
    /// `streams[i]`'s device and queues its work there (`ncclCommInitAll`). The devices must be
    /// distinct.
    pub fn for_devices(streams: &[Arc<CudaStream>]) -> Result<Vec<Self>, NcclError> {
        let world = streams.len();
        c_rank(0, world)?;
        let devices = streams
            .iter()
            .map(|s| ordinal_of(s).map(|o| o as c_int))
            .collect::<Result<Vec<_>, _>>()?;
        let mut comms = vec![core::ptr::null_mut(); world];
        // SAFETY: `comms` has room for `world` communicators and `devices` lists `world`
        // ordinals.
        call("ncclCommInitAll", None, || unsafe {
            sys::ncclCommInitAll(comms.as_mut_ptr(), world as c_int, devices.as_ptr())
        })?;
        Ok(comms
            .into_iter()
            .zip(streams)
            .enumerate()
            .map(|(rank, (comm, stream))| Self {
                comm,
                stream: stream.clone(),
                rank,
                world,
                ordinal: devices[rank],
            })
            .collect())
    }

    /// Rank `rank` of `world` ranks, one per process (or thread), on `stream`'s device: every
    /// rank calls it with the same `id`, and it returns once all have
    /// (`ncclCommInitRank`).
    pub fn init_rank(stream: Arc<CudaStream>, id: &UniqueId, rank: usize, world: usize) -> Result<Self, NcclError> {
        let (r, w) = c_rank(rank, world)?;
        let ordinal = ordinal_of(&stream)?;
        stream.context().bind_to_thread()?;
        let mut comm = core::ptr::null_mut();
        // SAFETY: writes one communicator through a valid pointer; the device is the one bound
        // to this thread above, as NCCL takes it.
        call("ncclCommInitRank", None, || unsafe {
            sys::ncclCommInitRank(&mut comm, w, id.0, r)
        })?;
        Ok(Self {
            comm,
            stream,
            rank,
            world,
            ordinal,
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn world_size(&self) -> usize {
        self.world
    }

    /// The CUDA device of this rank.
    pub fn device(&self) -> crate::space::Device {
        crate::space::Device::new(self.ordinal)
    }

    /// The stream this rank's work is queued on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Common to every collective: the element type is supported, the stream's context is
    /// bound and the scope waits for it.
    fn prepare<T: NcclElement>(&self, scope: &Scope<'_, '_>) -> Result<sys::cudaStream_t, NcclError> {
        supported::<T>()?;
        self.stream.context().bind_to_thread()?;
        scope.queued_on(&self.stream);
        Ok(self.stream.cu_stream() as sys::cudaStream_t)
    }

    fn peer(&self, op: &'static str, rank: usize) -> Result<c_int, NcclError> {
        if rank >= self.world {
            return Err(NcclError::Rank {
                op,
                rank,
                world: self.world,
            });
        }
        Ok(rank as c_int)
    }

    /// Reduces `send` over all ranks with `op` into every rank's `recv` (of the same extents).
    #[allow(clippy::too_many_arguments)]
    pub fn all_reduce<'scope, 'v, 'w, T, E, E2, L, S, A, W>(
        &self,
        scope: &Scope<'scope, '_>,
        send: &Mdspan<'v, T, E, L, S, A>,
        recv: &mut Mdspan<'w, T, E2, L, S, W>,
        op: ReduceOp,
    ) -> Result<(), NcclError>
    where
        'v: 'scope,
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        E2: Extents<Index = E::Index>,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
        A: Access,
    {
        const OP: &str = "all_reduce";
        same_extents(OP, send.extents(), recv.extents())?;
        let (count, s) = buffer(OP, self.ordinal, send)?;
        let (_, r) = buffer(OP, self.ordinal, recv)?;
        let stream = self.prepare::<T>(scope)?;
        // SAFETY: `send` and `recv` are contiguous spans of `count` values of the type on this
        // rank's device, alive until the scope ends (which waits for the stream); `recv` is
        // borrowed exclusively.
        call(OP, Some(self.comm), || unsafe {
            sys::ncclAllReduce(
                s as *const c_void,
                r as *mut c_void,
                count,
                T::DATA_TYPE.to_sys(),
                op.to_sys(),
                self.comm,
                stream,
            )
        })
    }

    /// [`all_reduce`](Self::all_reduce) with `buf` as both input and output.
    pub fn all_reduce_in_place<'scope, 'w, T, E, L, S, W>(
        &self,
        scope: &Scope<'scope, '_>,
        buf: &mut Mdspan<'w, T, E, L, S, W>,
        op: ReduceOp,
    ) -> Result<(), NcclError>
    where
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
    {
        const OP: &str = "all_reduce_in_place";
        let (count, b) = buffer(OP, self.ordinal, buf)?;
        let stream = self.prepare::<T>(scope)?;
        // SAFETY: as in `all_reduce`, with one buffer, which NCCL allows.
        call(OP, Some(self.comm), || unsafe {
            sys::ncclAllReduce(
                b as *const c_void,
                b as *mut c_void,
                count,
                T::DATA_TYPE.to_sys(),
                op.to_sys(),
                self.comm,
                stream,
            )
        })
    }

    /// Reduces `send` over all ranks with `op` into `recv` on rank `root` (the other ranks'
    /// `recv` is not written, but must have the same extents).
    #[allow(clippy::too_many_arguments)]
    pub fn reduce<'scope, 'v, 'w, T, E, E2, L, S, A, W>(
        &self,
        scope: &Scope<'scope, '_>,
        send: &Mdspan<'v, T, E, L, S, A>,
        recv: &mut Mdspan<'w, T, E2, L, S, W>,
        op: ReduceOp,
        root: usize,
    ) -> Result<(), NcclError>
    where
        'v: 'scope,
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        E2: Extents<Index = E::Index>,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
        A: Access,
    {
        const OP: &str = "reduce";
        same_extents(OP, send.extents(), recv.extents())?;
        let root = self.peer(OP, root)?;
        let (count, s) = buffer(OP, self.ordinal, send)?;
        let (_, r) = buffer(OP, self.ordinal, recv)?;
        let stream = self.prepare::<T>(scope)?;
        // SAFETY: as in `all_reduce`; `root` is a rank of the communicator.
        call(OP, Some(self.comm), || unsafe {
            sys::ncclReduce(
                s as *const c_void,
                r as *mut c_void,
                count,
                T::DATA_TYPE.to_sys(),
                op.to_sys(),
                root,
                self.comm,
                stream,
            )
        })
    }

    /// Copies `send` of rank `root` into every rank's `recv` (of the same extents); `send` is
    /// read on `root` only.
    pub fn broadcast<'scope, 'v, 'w, T, E, E2, L, S, A, W>(
        &self,
        scope: &Scope<'scope, '_>,
        send: &Mdspan<'v, T, E, L, S, A>,
        recv: &mut Mdspan<'w, T, E2, L, S, W>,
        root: usize,
    ) -> Result<(), NcclError>
    where
        'v: 'scope,
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        E2: Extents<Index = E::Index>,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
        A: Access,
    {
        const OP: &str = "broadcast";
        same_extents(OP, send.extents(), recv.extents())?;
        let root = self.peer(OP, root)?;
        let (count, s) = buffer(OP, self.ordinal, send)?;
        let (_, r) = buffer(OP, self.ordinal, recv)?;
        let stream = self.prepare::<T>(scope)?;
        // SAFETY: as in `reduce`.
        call(OP, Some(self.comm), || unsafe {
            sys::ncclBroadcast(
                s as *const c_void,
                r as *mut c_void,
                count,
                T::DATA_TYPE.to_sys(),
                root,
                self.comm,
                stream,
            )
        })
    }

    /// [`broadcast`](Self::broadcast) with `buf` as both input (on `root`) and output.
    pub fn broadcast_in_place<'scope, 'w, T, E, L, S, W>(
        &self,
        scope: &Scope<'scope, '_>,
        buf: &mut Mdspan<'w, T, E, L, S, W>,
        root: usize,
    ) -> Result<(), NcclError>
    where
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
    {
        const OP: &str = "broadcast_in_place";
        let root = self.peer(OP, root)?;
        let (count, b) = buffer(OP, self.ordinal, buf)?;
        let stream = self.prepare::<T>(scope)?;
        // SAFETY: as in `broadcast`, with one buffer, which NCCL allows.
        call(OP, Some(self.comm), || unsafe {
            sys::ncclBroadcast(
                b as *const c_void,
                b as *mut c_void,
                count,
                T::DATA_TYPE.to_sys(),
                root,
                self.comm,
                stream,
            )
        })
    }

    /// Gathers every rank's `send` into every rank's `recv`, in rank order: `recv` holds world
    /// size × `send`'s elements (a leading extent of the world size, in a row-major layout).
    pub fn all_gather<'scope, 'v, 'w, T, E, E2, L, S, A, W>(
        &self,
        scope: &Scope<'scope, '_>,
        send: &Mdspan<'v, T, E, L, S, A>,
        recv: &mut Mdspan<'w, T, E2, L, S, W>,
    ) -> Result<(), NcclError>
    where
        'v: 'scope,
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        E2: Extents,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
        A: Access,
    {
        const OP: &str = "all_gather";
        let (count, s) = buffer(OP, self.ordinal, send)?;
        let (total, r) = buffer(OP, self.ordinal, recv)?;
        if count.checked_mul(self.world) != Some(total) {
            return Err(NcclError::AllGatherExtents {
                send: send.size(),
                recv: recv.size(),
                world: self.world,
            });
        }
        let stream = self.prepare::<T>(scope)?;
        // SAFETY: `send` holds `count` values and `recv` world × `count` (checked), contiguous
        // on this rank's device, alive until the scope ends; `recv` is borrowed exclusively.
        call(OP, Some(self.comm), || unsafe {
            sys::ncclAllGather(
                s as *const c_void,
                r as *mut c_void,
                count,
                T::DATA_TYPE.to_sys(),
                self.comm,
                stream,
            )
        })
    }

    /// Reduces `send` over all ranks with `op` and scatters the result: rank `i`'s `recv` gets
    /// the `i`-th of world size equal parts. `send` holds world size × `recv`'s elements.
    pub fn reduce_scatter<'scope, 'v, 'w, T, E, E2, L, S, A, W>(
        &self,
        scope: &Scope<'scope, '_>,
        send: &Mdspan<'v, T, E, L, S, A>,
        recv: &mut Mdspan<'w, T, E2, L, S, W>,
        op: ReduceOp,
    ) -> Result<(), NcclError>
    where
        'v: 'scope,
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        E2: Extents,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
        A: Access,
    {
        const OP: &str = "reduce_scatter";
        let (total, s) = buffer(OP, self.ordinal, send)?;
        let (count, r) = buffer(OP, self.ordinal, recv)?;
        if count.checked_mul(self.world) != Some(total) {
            return Err(NcclError::ReduceScatterExtents {
                send: send.size(),
                recv: recv.size(),
                world: self.world,
            });
        }
        let stream = self.prepare::<T>(scope)?;
        // SAFETY: `recv` holds `count` values and `send` world × `count` (checked), as in
        // `all_gather`.
        call(OP, Some(self.comm), || unsafe {
            sys::ncclReduceScatter(
                s as *const c_void,
                r as *mut c_void,
                count,
                T::DATA_TYPE.to_sys(),
                op.to_sys(),
                self.comm,
                stream,
            )
        })
    }

    /// Sends `view` to rank `peer`, which receives it with [`recv`](Self::recv) into a view of
    /// as many elements. Pair sends and receives that wait for each other in a [`group`].
    pub fn send<'scope, 'v, T, E, L, S, A>(
        &self,
        scope: &Scope<'scope, '_>,
        view: &Mdspan<'v, T, E, L, S, A>,
        peer: usize,
    ) -> Result<(), NcclError>
    where
        'v: 'scope,
        T: NcclElement,
        E: Extents,
        L: CompactLayout,
        S: DeviceMemory,
        A: Access,
    {
        const OP: &str = "send";
        let peer = self.peer(OP, peer)?;
        let (count, s) = buffer(OP, self.ordinal, view)?;
        let stream = self.prepare::<T>(scope)?;
        // SAFETY: `view` is a contiguous span of `count` values on this rank's device, alive
        // until the scope ends; `peer` is a rank of the communicator.
        call(OP, Some(self.comm), || unsafe {
            sys::ncclSend(
                s as *const c_void,
                count,
                T::DATA_TYPE.to_sys(),
                peer,
                self.comm,
                stream,
            )
        })
    }

    /// Receives into `view` what rank `peer` sends with [`send`](Self::send).
    pub fn recv<'scope, 'w, T, E, L, S, W>(
        &self,
        scope: &Scope<'scope, '_>,
        view: &mut Mdspan<'w, T, E, L, S, W>,
        peer: usize,
    ) -> Result<(), NcclError>
    where
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
    {
        const OP: &str = "recv";
        let peer = self.peer(OP, peer)?;
        let (count, r) = buffer(OP, self.ordinal, view)?;
        let stream = self.prepare::<T>(scope)?;
        // SAFETY: as in `send`; `view` is borrowed exclusively.
        call(OP, Some(self.comm), || unsafe {
            sys::ncclRecv(r as *mut c_void, count, T::DATA_TYPE.to_sys(), peer, self.comm, stream)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::F8E8M0FNU;
    use num_complex::Complex;

    fn of<T: NcclElement>() -> DataType {
        T::DATA_TYPE
    }

    #[test]
    fn element_types_map_to_nccl_types() {
        assert_eq!(of::<i8>(), DataType::Int8);
        assert_eq!(of::<u8>(), DataType::Uint8);
        assert_eq!(of::<i32>(), DataType::Int32);
        assert_eq!(of::<u32>(), DataType::Uint32);
        assert_eq!(of::<i64>(), DataType::Int64);
        assert_eq!(of::<u64>(), DataType::Uint64);
        assert_eq!(of::<f16>(), DataType::Float16);
        assert_eq!(of::<bf16>(), DataType::Bfloat16);
        assert_eq!(of::<f32>(), DataType::Float32);
        assert_eq!(of::<f64>(), DataType::Float64);
        assert_eq!(of::<F8E4M3FN>(), DataType::Float8E4M3);
        assert_eq!(of::<F8E5M2>(), DataType::Float8E5M2);
        // Vectors are their lanes.
        assert_eq!(of::<[f32; 4]>(), DataType::Float32);
        assert_eq!(of::<[bf16; 2]>(), DataType::Bfloat16);
    }

    #[test]
    fn nccl_numbers_are_ncclh() {
        // The values of `ncclDataType_t` in nccl.h (2.24 and later).
        let expected = [
            (DataType::Int8, 0),
            (DataType::Uint8, 1),
            (DataType::Int32, 2),
            (DataType::Uint32, 3),
            (DataType::Int64, 4),
            (DataType::Uint64, 5),
            (DataType::Float16, 6),
            (DataType::Float32, 7),
            (DataType::Float64, 8),
            (DataType::Bfloat16, 9),
            (DataType::Float8E4M3, 10),
            (DataType::Float8E5M2, 11),
        ];
        for (t, n) in expected {
            assert_eq!(t.to_sys() as u32, n, "{}", t.name());
        }
        assert_eq!(ReduceOp::Sum.to_sys() as u32, 0);
        assert_eq!(ReduceOp::Avg.to_sys() as u32, 4);
    }

    #[test]
    fn dlpack_types_without_nccl_types() {
        for dtype in [
            DLDataType::new(DLDataTypeCode::INT, 16, 1),
            DLDataType::new(DLDataTypeCode::UINT, 16, 1),
            <bool as DlElement>::DTYPE,
            <Complex<f32> as DlElement>::DTYPE,
            <F8E8M0FNU as DlElement>::DTYPE,
            DLDataType::new(DLDataTypeCode::FLOAT, 8, 1),
            DLDataType::new(DLDataTypeCode::INT, 128, 1),
        ] {
            assert_eq!(DataType::of(dtype), None, "{dtype}");
        }
    }

    #[test]
    fn versions_needed() {
        assert_eq!(DataType::Float32.min_version(), 0);
        assert_eq!(DataType::Bfloat16.min_version(), 21000);
        assert_eq!(DataType::Float8E5M2.min_version(), 22400);
    }

    #[test]
    fn unique_ids_round_trip_through_hex() {
        let bytes: [u8; 128] = core::array::from_fn(|i| (i * 37 + 5) as u8);
        let id = UniqueId::from_bytes(bytes);
        let hex = id.to_hex();
        assert_eq!(hex.len(), 256);
        assert_eq!(UniqueId::from_hex(&format!(" {hex}\n")).unwrap().to_bytes(), bytes);
        assert!(matches!(UniqueId::from_hex("abc"), Err(NcclError::UniqueId(_))));
        let bad = format!("zz{}", &hex[2..]);
        let e = UniqueId::from_hex(&bad).unwrap_err();
        assert!(e.to_string().contains("\"zz\" is not hexadecimal"), "{e}");
        // Multi-byte text of 256 bytes is refused without slicing inside a character.
        let wide = "é".repeat(128);
        assert!(matches!(UniqueId::from_hex(&wide), Err(NcclError::UniqueId(_))));
    }

    #[test]
    fn a_missing_environment_variable_is_named() {
        let e = UniqueId::from_env("DLMD_TEST_VARIABLE_NOBODY_SETS").unwrap_err();
        assert!(
            matches!(
                e,
                NcclError::Env {
                    name: "DLMD_TEST_VARIABLE_NOBODY_SETS",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn extent_errors_say_what_is_needed() {
        let e = NcclError::AllGatherExtents {
            send: 6,
            recv: 6,
            world: 2,
        };
        assert_eq!(
            e.to_string(),
            "all_gather: the output holds 6 elements but must hold world size × input = 2 × 6 = 12"
        );
        let e = NcclError::ReduceScatterExtents {
            send: 5,
            recv: 3,
            world: 2,
        };
        assert!(e.to_string().contains("2 × 3 = 6"), "{e}");
        let e = NcclError::SameExtents {
            op: "all_reduce",
            send: vec![2, 3],
            recv: vec![3, 2],
        };
        assert!(
            e.to_string().contains("[2, 3]") && e.to_string().contains("[3, 2]"),
            "{e}"
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "loads NCCL, a foreign library Miri cannot run")]
    fn no_library_is_an_error_not_a_panic() {
        if available() {
            return;
        }
        assert!(matches!(UniqueId::new(), Err(NcclError::NoLibrary)));
        assert!(matches!(version(), Err(NcclError::NoLibrary)));
        assert!(matches!(group(|| Ok(())), Err(NcclError::NoLibrary)));
    }
}
