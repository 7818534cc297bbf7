//! A launch's disjointness check (`dlmd::kernel::disjoint`): up to six device views imported
//! from DLPack tensors over one buffer (so that they meet often), each read, written or updated
//! atomically (as `f32`, `u32` or `f64`) by the kernel, as a launcher hands their footprints to
//! the check. Oracles, in `i128`: the check refuses exactly when two views that may not share
//! memory have byte ranges that meet (each range computed here from the tensor's fields; atomic
//! views of one element type may share memory when their element boundaries agree), it names
//! the first such pair, and when it accepts, no element of a written or atomic view is reached
//! by another view that may not share it, and an element two atomic views share is the same
//! element of both (every element walked).
#![no_main]

use arbitrary::Arbitrary;
use dlmd::dlpack::{DLDataType, DLDevice, DLDeviceType, DLTensor};
use dlmd::kernel::disjoint::check_disjoint;
use dlmd::kernel::{Footprint, KernelParam, Use};
use dlmd::view::{Shared, Unique};
use dlmd::{Device, Dims, LayoutStrideRelaxed, Mdspan};

/// The buffer's length in `f32`s.
const BUFFER: usize = 256;

#[derive(Arbitrary, Debug)]
struct Arg {
    /// Elements into the buffer of element `[0, 0]`.
    at: u8,
    shape: [u8; 2],
    strides: [i8; 2],
    /// `None`: a scalar argument, which reaches no memory.
    used: Option<ArgUse>,
}

#[derive(Arbitrary, Debug, Clone, Copy, PartialEq)]
enum ArgUse {
    Read,
    Write,
    Atomic,
    /// Atomic updates as `u32`: the width of `f32`, another type.
    AtomicU32,
    /// Atomic updates as `f64`: twice the width.
    AtomicF64,
}

impl ArgUse {
    /// The element size in bytes, and whether it is updated atomically (and as which of the
    /// three types).
    fn element(self) -> (i128, Option<u8>) {
        match self {
            ArgUse::Read | ArgUse::Write => (4, None),
            ArgUse::Atomic => (4, Some(0)),
            ArgUse::AtomicU32 => (4, Some(1)),
            ArgUse::AtomicF64 => (8, Some(2)),
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    args: Vec<Arg>,
}

type View<'a, T, A> = Mdspan<'a, T, Dims<2>, LayoutStrideRelaxed, Device, A>;

/// A view's footprint as a launcher computes it, or `None` where the importer refuses the
/// tensor (a mutable view whose strides map two indices to one element, a misaligned `f64`
/// view, say).
fn footprint(tensor: &DLTensor, used: ArgUse) -> Option<Footprint> {
    // SAFETY: the tensor points into the target's buffer, alive for the view; device views are
    // never read on the host, and nothing here reads or writes through them.
    unsafe {
        match used {
            ArgUse::Read => View::<f32, Shared>::from_dlpack(tensor).ok().map(|v| v.footprint()),
            ArgUse::Write => View::<f32, Unique>::from_dlpack(tensor).ok().map(|v| v.footprint()),
            ArgUse::Atomic => View::<f32, Unique>::from_dlpack(tensor)
                .ok()
                .map(|v| v.into_atomic().footprint()),
            ArgUse::AtomicU32 => View::<u32, Unique>::from_dlpack(tensor)
                .ok()
                .map(|v| v.into_atomic().footprint()),
            ArgUse::AtomicF64 => View::<f64, Unique>::from_dlpack(tensor)
                .ok()
                .map(|v| v.into_atomic().footprint()),
        }
    }
    .map(|f| f.expect("a view reaches memory"))
}

/// The byte ranges `[low, high)` of each element of `arg`, computed from its fields: element
/// `[0, 0]` is `at` `f32`s into the buffer, the strides count the view's own elements.
fn elements(base: i128, arg: &Arg, used: ArgUse) -> Vec<(i128, i128)> {
    let (size, _) = used.element();
    let mut out = Vec::new();
    for i in 0..i128::from(arg.shape[0] % 9) {
        for j in 0..i128::from(arg.shape[1] % 9) {
            let e = i * i128::from(arg.strides[0] % 40) + j * i128::from(arg.strides[1] % 40);
            let low = base + 4 * i128::from(arg.at) + size * e;
            out.push((low, low + size));
        }
    }
    out
}

/// Whether two arguments may share memory, from their uses and fields alone: both read, or
/// both atomic as one type with element `[0, 0]` of each a whole number of elements apart.
fn may_share(a: (&Arg, ArgUse), b: (&Arg, ArgUse)) -> bool {
    match (a.1.element(), b.1.element()) {
        _ if a.1 == ArgUse::Read && b.1 == ArgUse::Read => true,
        ((size, Some(s)), (_, Some(t))) if s == t => (4 * (i128::from(a.0.at) - i128::from(b.0.at))) % size == 0,
        _ => false,
    }
}

dlmd_fuzz::fuzz_cases!(|input: Input| {
    let buffer = vec![0f32; BUFFER];
    let base = buffer.as_ptr() as usize;
    let mut shapes = [[0i64; 2]; 6];
    let mut strides = [[0i64; 2]; 6];
    let mut footprints: Vec<Option<Footprint>> = Vec::new();
    let mut kept: Vec<(&Arg, ArgUse)> = Vec::new();
    for (k, arg) in input.args.iter().take(6).enumerate() {
        let Some(used) = arg.used else {
            footprints.push(None);
            continue;
        };
        shapes[k] = arg.shape.map(|n| i64::from(n % 9));
        strides[k] = arg.strides.map(|s| i64::from(s % 40));
        let dtype = match used {
            ArgUse::AtomicU32 => DLDataType::new(dlmd::dlpack::DLDataTypeCode::UINT, 32, 1),
            ArgUse::AtomicF64 => DLDataType::new(dlmd::dlpack::DLDataTypeCode::FLOAT, 64, 1),
            _ => DLDataType::new(dlmd::dlpack::DLDataTypeCode::FLOAT, 32, 1),
        };
        let tensor = DLTensor {
            data: buffer.as_ptr().cast_mut().cast(),
            device: DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id: 0,
            },
            ndim: 2,
            dtype,
            shape: shapes[k].as_mut_ptr(),
            strides: strides[k].as_mut_ptr(),
            byte_offset: 4 * u64::from(arg.at),
        };
        // Arguments the importer refuses never reach a launch.
        let Some(f) = footprint(&tensor, used) else { continue };
        let expected_use = match used {
            ArgUse::Read => Use::Read,
            ArgUse::Write => Use::Write,
            ArgUse::Atomic | ArgUse::AtomicU32 | ArgUse::AtomicF64 => Use::Atomic {
                dtype,
                size: used.element().0 as usize,
            },
        };
        assert_eq!(f.used, expected_use);
        footprints.push(Some(f));
        kept.push((arg, used));
    }

    // The byte range of each argument, from its fields alone.
    let ranges: Vec<Option<(i128, i128, (&Arg, ArgUse))>> = {
        let mut it = kept.iter();
        footprints
            .iter()
            .map(|f| {
                f.map(|_| {
                    let (arg, used) = it.next().unwrap();
                    let elements = elements(base as i128, arg, *used);
                    let low = elements.iter().map(|e| e.0).min().unwrap_or(0);
                    let high = elements.iter().map(|e| e.1).max().unwrap_or(0);
                    (low, high, (*arg, *used))
                })
            })
            .collect()
    };
    for (f, r) in footprints.iter().zip(&ranges) {
        if let (Some(f), Some((low, high, _))) = (f, r) {
            let (start, end) = (f.start as i128, f.start as i128 + f.bytes as i128);
            if low < high {
                assert_eq!((start, end), (*low, *high), "the footprint is the span of the elements");
            } else {
                assert_eq!(f.bytes, 0, "an empty view reaches nothing");
            }
        }
    }
    let mut expected = None;
    'pairs: for (i, a) in ranges.iter().enumerate() {
        let Some((a_low, a_high, a_use)) = *a else { continue };
        for (j, b) in ranges.iter().enumerate().skip(i + 1) {
            let Some((b_low, b_high, b_use)) = *b else { continue };
            let meet = a_low < a_high && b_low < b_high && a_low < b_high && b_low < a_high;
            if meet && !may_share(a_use, b_use) {
                expected = Some((i, j));
                break 'pairs;
            }
        }
    }
    let found = check_disjoint(&footprints);
    assert_eq!(found.err().map(|e| (e.first, e.second)), expected);

    // Accepted: no element of a written or atomic argument is reached by another argument
    // that may not share it, and atomic arguments that share memory share whole elements.
    if expected.is_none() {
        for (x, &(a, a_use)) in kept.iter().enumerate() {
            for &(b, b_use) in kept.iter().skip(x + 1) {
                if a_use == ArgUse::Read && b_use == ArgUse::Read {
                    continue;
                }
                let shared = may_share((a, a_use), (b, b_use));
                let eb = elements(base as i128, b, b_use);
                for (lo, hi) in elements(base as i128, a, a_use) {
                    for &(l, h) in &eb {
                        if lo < h && l < hi {
                            assert!(
                                shared && (lo, hi) == (l, h),
                                "an accepted launch reaches one element through two arguments, or part of one"
                            );
                        }
                    }
                }
            }
        }
    }
    drop(buffer);
});
