//! Random, often malformed, `DLTensor`s into the importer: it never panics, and every view it
//! accepts maps each index to exactly the element the tensor describes.

use dlmd::dlpack::{DLDataType, DLDevice, DLTensor};
use dlmd::layout::{Layout, Mapping};
use dlmd::{Dims, DlElement, Extents, HostMdspan, LayoutLeft, LayoutRight, LayoutStride, LayoutStrideRelaxed, Mdspan};
use proptest::prelude::*;

/// A tensor's fields, generated; pointers are filled in against a buffer.
#[derive(Debug, Clone)]
struct Spec {
    ndim: i32,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    /// Offset in bytes of `data` from the middle of the buffer.
    data_offset: isize,
    null_data: bool,
    byte_offset: u64,
    dtype_matches: bool,
}

fn spec() -> impl Strategy<Value = Spec> {
    // Mostly well-formed, so that many tensors are accepted and their views checked.
    let data_offset = prop_oneof![8 => (-8isize..8).prop_map(|k| 8 * k), 1 => -64isize..64];
    let byte_offset = prop_oneof![8 => (0u64..5).prop_map(|k| 8 * k), 1 => 0u64..40];
    (
        0usize..=4,
        prop::bool::weighted(0.25),
        prop::bool::weighted(0.1),
        data_offset,
        byte_offset,
        prop::bool::weighted(0.9),
        prop::bool::weighted(0.9),
    )
        .prop_flat_map(
            |(rank, null_strides, null_data, data_offset, byte_offset, dtype_matches, ndim_matches)| {
                let shape =
                    prop::collection::vec(prop_oneof![8 => 0i64..5, 1 => -3i64..0, 1 => Just(i64::MAX / 3)], rank);
                let strides = prop::collection::vec(
                    prop_oneof![8 => -6i64..7, 1 => Just(i64::MIN), 1 => Just(1 << 50)],
                    rank,
                );
                (shape, strides).prop_map(move |(shape, strides)| Spec {
                    ndim: if ndim_matches { rank as i32 } else { rank as i32 + 1 },
                    shape,
                    strides: (!null_strides).then_some(strides),
                    data_offset,
                    null_data: null_data && byte_offset % 3 == 0,
                    byte_offset,
                    dtype_matches,
                })
            },
        )
}

/// Imports `spec` as rank `R`, layout `L`, shared or mutable; checks what is accepted.
fn check<T: DlElement, const R: usize, L: Layout>(spec: &Spec, buffer: &mut [u64])
where
    T::Storage: dlmd::dtype::PlainStorage,
{
    let mut shape = spec.shape.clone();
    let mut strides = spec.strides.clone();
    let middle = buffer.as_mut_ptr().cast::<u8>().wrapping_add(buffer.len() * 4);
    let t = DLTensor {
        data: if spec.null_data {
            std::ptr::null_mut()
        } else {
            middle.wrapping_offset(spec.data_offset).cast()
        },
        device: DLDevice::CPU,
        ndim: spec.ndim,
        dtype: if spec.dtype_matches {
            T::DTYPE
        } else {
            DLDataType { bits: 7, ..T::DTYPE }
        },
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut().map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset: spec.byte_offset,
    };
    if spec.shape.len() != R {
        return;
    }
    // SAFETY: `shape` and `strides` hold `R` values when `ndim == R` (otherwise the importer
    // stops at the rank check). No view below is dereferenced: addresses are only compared.
    let shared = unsafe { HostMdspan::<T, Dims<R>, L>::from_dlpack(&t) };
    // SAFETY: as above.
    let unique = unsafe { Mdspan::<T, Dims<R>, L, dlmd::Host, dlmd::Unique>::from_dlpack(&t) };
    if let Ok(view) = &unique {
        assert!(view.mapping().is_unique());
        assert!(shared.is_ok());
    }
    let Ok(view) = shared else { return };
    assert_eq!(spec.ndim as usize, R);
    let extents: [usize; R] = std::array::from_fn(|d| spec.shape[d] as usize);
    assert_eq!(view.extents().to_array(), extents);
    if extents.contains(&0) {
        return;
    }
    let element0 = (t.data as usize + t.byte_offset as usize) as isize;
    let described_strides: [i64; R] = match &spec.strides {
        Some(s) => std::array::from_fn(|d| s[d]),
        None => {
            let mut s = [0i64; R];
            let mut step = 1i64;
            for d in (0..R).rev() {
                s[d] = step;
                step *= extents[d] as i64;
            }
            s
        }
    };
    let size = size_of::<T>() as isize;
    let described = |index: &[usize; R]| -> isize {
        element0
            + (0..R)
                .map(|d| index[d] as isize * described_strides[d] as isize * size)
                .sum::<isize>()
    };
    let actual = |index: &[usize; R]| view.as_ptr().wrapping_add(view.mapping().offset_of(index)) as isize;
    let count: usize = extents.iter().product();
    if count > 4096 {
        // Too many to walk: the corners bound every index's address.
        for corner in 0..(1usize << R) {
            let index: [usize; R] = std::array::from_fn(|d| if corner >> d & 1 == 1 { extents[d] - 1 } else { 0 });
            assert_eq!(actual(&index), described(&index), "index {index:?}");
        }
        return;
    }
    // Where every described element lies in the buffer, the view is read too: each load must
    // give the bytes at the described address (the buffer holds each byte's own position).
    let start = buffer.as_ptr() as isize;
    let end = start + (buffer.len() * 8) as isize;
    let inside = dlmd_tests::indices(extents)
        .iter()
        .all(|i| described(i) >= start && described(i) + size <= end);
    for index in dlmd_tests::indices(extents) {
        assert_eq!(actual(&index), described(&index), "index {index:?}");
        if inside {
            let at = (described(&index) - start) as usize;
            let bytes = &bytes_of(buffer)[at..at + size as usize];
            assert_eq!(value_bytes(&view[index]), bytes, "index {index:?}");
            assert_eq!(value_bytes(&view.as_aliased().load(index)), bytes, "index {index:?}");
        }
    }
}

/// The bytes of one element.
fn value_bytes<T: DlElement>(value: &T) -> Vec<u8> {
    // SAFETY: the elements here (integers, floats, arrays of them) have no padding, so every
    // byte of `value` is initialised.
    unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
}

/// The buffer's bytes.
fn bytes_of(buffer: &[u64]) -> &[u8] {
    // SAFETY: `u64`s are initialised bytes, 8 each.
    unsafe { std::slice::from_raw_parts(buffer.as_ptr().cast::<u8>(), buffer.len() * 8) }
}

fn all_layouts<T: DlElement, const R: usize>(spec: &Spec, buffer: &mut [u64])
where
    T::Storage: dlmd::dtype::PlainStorage,
{
    check::<T, R, LayoutRight>(spec, buffer);
    check::<T, R, LayoutLeft>(spec, buffer);
    check::<T, R, LayoutStride>(spec, buffer);
    check::<T, R, LayoutStrideRelaxed>(spec, buffer);
}

proptest! {
    // Miri interprets every step: fewer cases there, the same properties.
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 24 } else { 2000 },
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        .. ProptestConfig::default()
    })]

    #[test]
    fn importer_never_panics_and_stays_in_the_described_span(spec in spec()) {
        // Each byte holds its position (mod 256), so a load shows which bytes it read.
        let mut buffer: Vec<u64> = (0..256u64)
            .map(|k| u64::from_le_bytes(std::array::from_fn(|b| (8 * k as usize + b) as u8)))
            .collect();
        all_layouts::<u8, 0>(&spec, &mut buffer);
        all_layouts::<i32, 1>(&spec, &mut buffer);
        all_layouts::<f32, 2>(&spec, &mut buffer);
        all_layouts::<[u16; 2], 3>(&spec, &mut buffer);
        all_layouts::<f64, 4>(&spec, &mut buffer);
    }
}
