//! A launch's disjointness check (`dlmd::kernel::disjoint`): up to six device views imported
//! from DLPack tensors over one buffer (so that they meet often), each read, written or updated
//! atomically by the kernel, as a launcher hands their footprints to the check. Oracles, in
//! `i128`: the check refuses exactly when two views that may not share memory have byte ranges
//! that meet (each range computed here from the tensor's fields), it names the first such pair,
//! and when it accepts, no element of a written or atomic view is reached by another view that
//! may not share it (every element walked).
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

#[derive(Arbitrary, Debug, Clone, Copy)]
enum ArgUse {
    Read,
    Write,
    Atomic,
}

#[derive(Arbitrary, Debug)]
struct Input {
    args: Vec<Arg>,
}

type View<'a, A> = Mdspan<'a, f32, Dims<2>, LayoutStrideRelaxed, Device, A>;

/// A view's footprint as a launcher computes it, or `None` where the importer refuses the
/// tensor (a mutable view whose strides map two indices to one element, say).
fn footprint(tensor: &DLTensor, used: ArgUse) -> Option<Footprint> {
    // SAFETY: the tensor points into the target's buffer, alive for the view; device views are
    // never read on the host, and nothing here reads or writes through them.
    unsafe {
        match used {
            ArgUse::Read => View::<Shared>::from_dlpack(tensor).ok().map(|v| v.footprint()),
            ArgUse::Write => View::<Unique>::from_dlpack(tensor).ok().map(|v| v.footprint()),
            ArgUse::Atomic => View::<Unique>::from_dlpack(tensor)
                .ok()
                .map(|v| v.into_atomic().footprint()),
        }
    }
    .map(|f| f.expect("a view reaches memory"))
}

/// The byte ranges `[low, high)` of each element of `arg`, computed from its fields.
fn elements(base: i128, arg: &Arg) -> Vec<(i128, i128)> {
    let mut out = Vec::new();
    for i in 0..i128::from(arg.shape[0] % 9) {
        for j in 0..i128::from(arg.shape[1] % 9) {
            let e = i128::from(arg.at) + i * i128::from(arg.strides[0] % 40) + j * i128::from(arg.strides[1] % 40);
            out.push((base + 4 * e, base + 4 * e + 4));
        }
    }
    out
}

dlmd_fuzz::fuzz_cases!(|input: Input| {
    let buffer = vec![0f32; BUFFER];
    let base = buffer.as_ptr() as usize;
    let mut shapes = [[0i64; 2]; 6];
    let mut strides = [[0i64; 2]; 6];
    let mut footprints: Vec<Option<Footprint>> = Vec::new();
    let mut kept: Vec<(&Arg, Use)> = Vec::new();
    for (k, arg) in input.args.iter().take(6).enumerate() {
        let Some(used) = arg.used else {
            footprints.push(None);
            continue;
        };
        shapes[k] = arg.shape.map(|n| i64::from(n % 9));
        strides[k] = arg.strides.map(|s| i64::from(s % 40));
        let tensor = DLTensor {
            data: buffer.as_ptr().cast_mut().cast(),
            device: DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id: 0,
            },
            ndim: 2,
            dtype: DLDataType::new(dlmd::dlpack::DLDataTypeCode::FLOAT, 32, 1),
            shape: shapes[k].as_mut_ptr(),
            strides: strides[k].as_mut_ptr(),
            byte_offset: 4 * u64::from(arg.at),
        };
        // Arguments the importer refuses never reach a launch.
        let Some(f) = footprint(&tensor, used) else { continue };
        let expected_use = match used {
            ArgUse::Read => Use::Read,
            ArgUse::Write => Use::Write,
            ArgUse::Atomic => Use::Atomic,
        };
        assert_eq!(f.used, expected_use);
        footprints.push(Some(f));
        kept.push((arg, expected_use));
    }

    // The byte range of each argument, from its fields alone.
    let ranges: Vec<Option<(i128, i128, Use)>> = {
        let mut it = kept.iter();
        footprints
            .iter()
            .map(|f| {
                f.map(|_| {
                    let (arg, used) = it.next().unwrap();
                    let elements = elements(base as i128, arg);
                    let low = elements.iter().map(|e| e.0).min().unwrap_or(0);
                    let high = elements.iter().map(|e| e.1).max().unwrap_or(0);
                    (low, high, *used)
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
            if meet && !a_use.may_share_with(b_use) {
                expected = Some((i, j));
                break 'pairs;
            }
        }
    }
    let found = check_disjoint(&footprints);
    assert_eq!(found.err().map(|e| (e.first, e.second)), expected);

    // Accepted: no element of a written or atomic argument is reached by another argument
    // that may not share it.
    if expected.is_none() {
        for (x, (a, a_use)) in kept.iter().enumerate() {
            for (b, b_use) in kept.iter().skip(x + 1) {
                if a_use.may_share_with(*b_use) {
                    continue;
                }
                let eb = elements(base as i128, b);
                for (lo, hi) in elements(base as i128, a) {
                    assert!(
                        !eb.iter().any(|&(l, h)| lo < h && l < hi),
                        "an accepted launch reaches one element through two arguments"
                    );
                }
            }
        }
    }
    drop(buffer);
});
