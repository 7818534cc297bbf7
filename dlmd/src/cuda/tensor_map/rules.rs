//! The copy engine's rules for the view a tensor map describes ([`check`]), apart from the
//! driver: each broken rule is its own [`TensorMapError`].

use super::TensorMapError;

/// The most elements a tensor map's extent may hold: 2^31 − 1, the largest coordinate of a
/// copy (`i32`; the driver itself takes up to 2^32).
const MAX_EXTENT: u64 = i32::MAX as u64;
/// A stride must be below this many bytes: 2^40.
const MAX_STRIDE: i128 = 1 << 40;

/// A view that passed the rules, as the driver takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Checked<const RANK: usize> {
    /// The address of element `[0, …, 0]`.
    pub(super) address: u64,
    /// The extents, outermost first.
    pub(super) extents: [u64; RANK],
    /// The strides, in elements, outermost first (the last is 1).
    pub(super) strides: [u64; RANK],
}

impl<const RANK: usize> Checked<RANK> {
    /// The strides in bytes of every dimension but the innermost, innermost first, as the
    /// driver takes them.
    pub(super) fn driver_strides(&self, element_bytes: usize) -> [u64; RANK] {
        let mut bytes = [0; RANK];
        // The strides of the dimensions before the last, innermost first; each checked below
        // 2^40 bytes.
        for (to, stride) in bytes.iter_mut().zip(self.strides.iter().rev().skip(1)) {
            *to = stride * element_bytes as u64;
        }
        bytes
    }

    /// The extents innermost first, as the driver takes them.
    pub(super) fn driver_extents(&self) -> [u64; RANK] {
        let mut extents = self.extents;
        extents.reverse();
        extents
    }
}

/// The rules of the module docs, for a view of rank `RANK` (2 to 5) whose element
/// `[0, …, 0]` is at `address`, with `extents` and `strides` (in elements, outermost first)
/// and elements of `element_bytes` bytes: no driver involved, and no panic whatever the
/// numbers.
pub(super) fn check<const RANK: usize>(
    address: usize,
    extents: [usize; RANK],
    strides: [isize; RANK],
    element_bytes: usize,
) -> Result<Checked<RANK>, TensorMapError> {
    if !(2..=5).contains(&RANK) {
        return Err(TensorMapError::Rank { rank: RANK });
    }
    for (dim, &extent) in extents.iter().enumerate() {
        if extent == 0 || extent as u64 > MAX_EXTENT {
            return Err(TensorMapError::Extent { dim, extent });
        }
    }
    let (rows, cols) = (RANK - 2, RANK - 1);
    if strides[cols] != 1 {
        return Err(TensorMapError::InnerStride {
            dim: cols,
            stride: strides[cols],
        });
    }
    let mut checked = Checked {
        address: address as u64,
        extents: extents.map(|e| e as u64),
        strides: [1; RANK],
    };
    // Innermost first, so that a dimension of extent 1, whose stride no element is reached
    // by, can take the stride of the one inside it.
    let mut inner_bytes = (extents[cols] as u128 * element_bytes as u128).next_multiple_of(16) as i128;
    for dim in (0..cols).rev() {
        // Exact in `i128`: both factors fit 64 bits.
        // A dimension of extent 1 takes the inner one's, whatever it was given: a stride no
        // element is reached by need not follow the rules (nor be a row long).
        let bytes = if extents[dim] == 1 {
            inner_bytes
        } else {
            strides[dim] as i128 * element_bytes as i128
        };
        if dim == rows {
            let row_bytes = extents[cols] as u128 * element_bytes as u128;
            if bytes <= 0 || bytes % 16 != 0 || bytes >= MAX_STRIDE || (bytes as u128) < row_bytes {
                return Err(TensorMapError::RowStride { bytes, row_bytes });
            }
        } else if bytes <= 0 || bytes % 16 != 0 || bytes >= MAX_STRIDE {
            return Err(TensorMapError::Stride { dim, bytes });
        }
        // Positive, a multiple of 16 (so of the element's size) and below 2^40 bytes.
        checked.strides[dim] = (bytes / element_bytes as i128) as u64;
        inner_bytes = bytes;
    }
    if !address.is_multiple_of(16) {
        return Err(TensorMapError::Alignment { address });
    }
    Ok(checked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BF16: usize = 2;

    #[test]
    fn tensor_map_check_accepts_a_padded_row_major_matrix() {
        let checked = check(0x7f00_0000_0100, [1000, 100], [104, 1], BF16).unwrap();
        assert_eq!(checked.extents, [1000, 100]);
        assert_eq!(checked.strides, [104, 1]);
        assert_eq!(checked.driver_strides(BF16), [208, 0]);
        assert_eq!(checked.driver_extents(), [100, 1000]);
    }

    #[test]
    fn tensor_map_check_accepts_heads_seen_across_rows() {
        // `b × s × h × d = 2 × 250 × 8 × 128` seen as `b × h × s × d`: heads closer than rows.
        let checked = check(0x1000, [2, 8, 250, 128], [250 * 1024, 128, 1024, 1], BF16).unwrap();
        assert_eq!(checked.strides, [250 * 1024, 128, 1024, 1]);
        assert_eq!(checked.driver_extents(), [128, 250, 8, 2]);
        assert_eq!(checked.driver_strides(BF16), [2048, 256, 512_000, 0]);
        // Three tensors packed along a head's columns (`qkv.unbind`): rows 3 · 1024 apart.
        assert!(check(0x1000, [2, 8, 250, 128], [250 * 3072, 128, 3072, 1], BF16).is_ok());
    }

    #[test]
    fn tensor_map_check_gives_dimensions_of_one_a_stride() {
        // Torch gives a dimension of extent 1 a stride of its choosing, 1 here.
        let checked = check(0x1000, [1, 8, 256, 64], [1, 64 * 256, 64, 1], BF16).unwrap();
        assert_eq!(checked.strides, [64 * 256, 64 * 256, 64, 1]);
        // One row: its stride is the row, padded to 16 bytes.
        let checked = check(0x1000, [4, 1, 20], [24, 3, 1], BF16).unwrap();
        assert_eq!(checked.strides, [24, 24, 1]);
        // A valid stride shorter than a row, on a rows dimension of one row (a stride no
        // element is reached by), and at rank 3.
        let checked = check(0x1000, [1, 64], [8, 1], BF16).unwrap();
        assert_eq!(checked.strides, [64, 1]);
        let checked = check(0x1000, [3, 1, 64], [64, 8, 1], BF16).unwrap();
        assert_eq!(checked.strides, [64, 64, 1]);
        let checked = check(0x1000, [1, 2_147_483_647], [16, 1], 1).unwrap();
        assert_eq!(checked.driver_strides(1)[0], 1 << 31);
        // A dimension of more than one element keeps the rules.
        let err = check(0x1000, [2, 8, 256, 64], [1, 64 * 256, 64, 1], BF16).unwrap_err();
        assert!(matches!(err, TensorMapError::Stride { dim: 0, bytes: 2 }), "{err}");
    }

    #[test]
    fn tensor_map_check_refuses_bad_batch_strides_and_ranks() {
        let err = check(0x1000, [2, 4, 64], [-4096, 64, 1], BF16).unwrap_err();
        assert!(matches!(err, TensorMapError::Stride { dim: 0, bytes: -8192 }), "{err}");
        let err = check(0x1000, [2, 4, 64], [0, 64, 1], BF16).unwrap_err();
        assert!(matches!(err, TensorMapError::Stride { dim: 0, bytes: 0 }), "{err}");
        let err = check(0x1000, [2, 4, 64], [1 << 39, 64, 1], BF16).unwrap_err();
        assert!(matches!(err, TensorMapError::Stride { dim: 0, .. }), "{err}");
        // Any order of positive multiples of 16 bytes: the batch's steps need not be ordered.
        assert!(check(0x1000, [2, 3, 4, 64], [8, 4096, 64, 1], BF16).is_ok());
        let err = check(0x1000, [2, 2, 2, 2, 2, 64], [8192, 4096, 2048, 1024, 64, 1], BF16).unwrap_err();
        assert!(matches!(err, TensorMapError::Rank { rank: 6 }), "{err}");
        let err = check(0x1000, [64], [1], BF16).unwrap_err();
        assert!(matches!(err, TensorMapError::Rank { rank: 1 }), "{err}");
        let err = check(0x1000, [2, 4, 64], [4096, 64, 2], BF16).unwrap_err();
        assert!(
            matches!(err, TensorMapError::InnerStride { dim: 2, stride: 2 }),
            "{err}"
        );
    }

    #[test]
    fn tensor_map_check_refuses_a_misaligned_start() {
        let err = check(0x1002, [4, 64], [64, 1], BF16).unwrap_err();
        assert!(matches!(err, TensorMapError::Alignment { address: 0x1002 }), "{err}");
    }

    #[test]
    fn tensor_map_check_refuses_a_strided_row() {
        let err = check(0x1000, [4, 64], [64, 2], BF16).unwrap_err();
        assert!(
            matches!(err, TensorMapError::InnerStride { dim: 1, stride: 2 }),
            "{err}"
        );
        // Column-major data: dimension 1 walks whole columns.
        let err = check(0x1000, [64, 4], [1, 64], BF16).unwrap_err();
        assert!(
            matches!(err, TensorMapError::InnerStride { dim: 1, stride: 64 }),
            "{err}"
        );
    }

    #[test]
    fn tensor_map_check_refuses_bad_row_strides() {
        // (row stride, columns, the stride's bytes)
        let cases: [(isize, usize, i128); 5] = [
            // 100 `bf16`s are 200 bytes, not a multiple of 16.
            (100, 100, 200),
            // Rows walked backwards, and one row repeated.
            (-64, 64, -128),
            (0, 64, 0),
            // Shorter than a row of 64.
            (56, 64, 112),
            // 2^40 bytes.
            (1 << 39, 64, 1 << 40),
        ];
        for (stride, cols, bytes) in cases {
            let err = check(0x1000, [4, cols], [stride, 1], BF16).unwrap_err();
            assert!(
                matches!(err, TensorMapError::RowStride { bytes: b, .. } if b == bytes),
                "stride {stride}: {err}"
            );
        }
    }

    #[test]
    fn tensor_map_check_refuses_empty_and_huge_extents() {
        let err = check(0x1000, [0, 64], [64, 1], BF16).unwrap_err();
        assert!(matches!(err, TensorMapError::Extent { dim: 0, extent: 0 }), "{err}");
        let err = check(0x1000, [4, 1 << 31], [1 << 33, 1], 1).unwrap_err();
        assert!(matches!(err, TensorMapError::Extent { dim: 1, .. }), "{err}");
        // 2^31 − 1 itself is allowed.
        assert!(check(0x1000, [(1 << 31) - 1, 16], [16, 1], 1).is_ok());
    }

    #[test]
    fn tensor_map_errors_name_the_fix() {
        let message = check(0x1000, [4, 100], [100, 1], BF16).unwrap_err().to_string();
        assert!(
            message.contains("200 bytes") && message.contains("multiple of 16"),
            "{message}"
        );
    }

    /// The rules, written out directly, for a matrix (rank 2) and a batch of them (rank 3).
    fn allowed<const RANK: usize>(
        address: usize,
        extents: [usize; RANK],
        strides: [isize; RANK],
        element_bytes: usize,
    ) -> bool {
        let extents_ok = extents.iter().all(|&e| (1..=(1u128 << 31) - 1).contains(&(e as u128)));
        let (rows, cols) = (RANK - 2, RANK - 1);
        let stride_ok = |bytes: i128| bytes > 0 && bytes % 16 == 0 && bytes < 1 << 40;
        let row = extents[cols] as i128 * element_bytes as i128;
        let row_bytes = strides[rows] as i128 * element_bytes as i128;
        let rows_ok = (stride_ok(row_bytes) && row_bytes >= row) || extents[rows] == 1;
        let batch_ok = (0..rows).all(|d| extents[d] == 1 || stride_ok(strides[d] as i128 * element_bytes as i128));
        extents_ok && strides[cols] == 1 && rows_ok && batch_ok && address.is_multiple_of(16)
    }

    fn extent() -> impl Strategy<Value = usize> {
        prop_oneof![
            0usize..300,
            Just((1 << 31) - 1),
            Just(1 << 31),
            Just((1 << 32) + 1),
            any::<usize>()
        ]
    }

    fn stride() -> impl Strategy<Value = isize> {
        prop_oneof![
            -300isize..300,
            (1isize..40).prop_map(|k| k * 16),
            Just(1 << 39),
            Just((1 << 37) - 8),
            any::<isize>()
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 4096,
            // Miri's isolation has no working directory for the regression file (with
            // `--include-ignored`).
            failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
            ..ProptestConfig::default()
        })]

        #[test]
        #[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
        fn tensor_map_check_accepts_exactly_the_rules(
            address in prop_oneof![(0usize..256).prop_map(|a| a * 16), 0usize..4096, any::<usize>()],
            rows in extent(),
            cols in extent(),
            row_stride in stride(),
            inner in prop_oneof![Just(1isize), stride()],
            element_bytes in prop_oneof![Just(1usize), Just(2), Just(4), Just(8)],
        ) {
            let result = check(address, [rows, cols], [row_stride, inner], element_bytes);
            let expected = allowed(address, [rows, cols], [row_stride, inner], element_bytes);
            prop_assert_eq!(result.is_ok(), expected, "{:?}", result);
            if let Ok(checked) = result {
                if rows > 1 {
                    prop_assert_eq!(checked.strides[0], row_stride as u64);
                }
                prop_assert_eq!(checked.address, address as u64);
            }
        }

        #[test]
        #[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
        fn tensor_map_check_of_a_batch_accepts_exactly_the_rules(
            address in prop_oneof![(0usize..256).prop_map(|a| a * 16), any::<usize>()],
            batch in prop_oneof![Just(1usize), extent()],
            rows in extent(),
            cols in extent(),
            batch_stride in stride(),
            row_stride in stride(),
            element_bytes in prop_oneof![Just(1usize), Just(2), Just(4), Just(8)],
        ) {
            let (extents, strides) = ([batch, rows, cols], [batch_stride, row_stride, 1]);
            let result = check(address, extents, strides, element_bytes);
            prop_assert_eq!(result.is_ok(), allowed(address, extents, strides, element_bytes), "{:?}", result);
            if let Ok(checked) = result {
                // Every stride the driver gets keeps its rules, whatever was given for a
                // dimension of one element.
                for (d, bytes) in checked.driver_strides(element_bytes)[..2].iter().enumerate() {
                    prop_assert!(*bytes > 0 && bytes % 16 == 0 && *bytes < 1 << 40, "{} {}", d, bytes);
                }
                if batch > 1 {
                    prop_assert_eq!(checked.strides[0], batch_stride as u64);
                }
            }
        }

        #[test]
        #[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
        fn tensor_map_check_accepts_padded_row_major_views(
            piece in 0usize..(1 << 40),
            rows in 1usize..=(1 << 31) - 1,
            cols in 1usize..=4096,
            pad in 0usize..8,
            element_bytes in prop_oneof![Just(1usize), Just(2), Just(4), Just(8)],
        ) {
            // Rows padded to a multiple of 16 bytes, then `pad` more pieces.
            let stride_bytes = (cols * element_bytes).div_ceil(16) * 16 + 16 * pad;
            let strides = [(stride_bytes / element_bytes) as isize, 1];
            let checked = check(16 * piece, [rows, cols], strides, element_bytes);
            prop_assert!(checked.is_ok(), "{:?}", checked);
        }
    }
}
