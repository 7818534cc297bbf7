use super::span::{strided_span, unchecked_bits};
use super::*;
use crate::extents::{Const, Dims};

#[test]
fn compact_strides() {
    let right = RightMapping::new(Dims::new([2, 3, 4])).unwrap();
    assert_eq!(right.strides(), [12, 4, 1]);
    assert_eq!(right.offset_of(&[1, 2, 3]), 23);
    let left = LeftMapping::new((Const::<2>, Const::<3>, Const::<4>)).unwrap();
    assert_eq!(left.strides(), [1, 2, 6]);
    assert_eq!(left.offset_of(&[1, 2, 3]), 1 + 4 + 18);
    assert_eq!(left.required_span_size(), 24);
}

#[test]
fn compact_from_strides_ignores_unit_dimensions() {
    let e = Dims::new([2, 1, 3]);
    assert!(RightMapping::from_strides(e, &[3, 99, 1], 0).is_ok());
    assert_eq!(
        RightMapping::from_strides(e, &[1, 1, 2], 0),
        Err(LayoutError::StrideMismatch {
            dim: 2,
            stride: 2,
            expected: 1,
            layout: "layout_right"
        })
    );
    assert!(LeftMapping::from_strides(e, &[1, 0, 2], 0).is_ok());
}

#[test]
fn uniqueness() {
    let e = Dims::new([2, 3]);
    assert!(StrideMapping::new(e, [3, 1]).unwrap().is_unique());
    assert!(StrideMapping::new(e, [6, 2]).unwrap().is_unique());
    assert!(!StrideMapping::new(e, [1, 1]).unwrap().is_unique());
    assert!(!StrideMapping::new(e, [2, 1]).unwrap().is_unique());
    assert!(!RelaxedMapping::new(e, [0, 1], 0).unwrap().is_unique());
    assert!(RelaxedMapping::new(e, [-3, 1], 3).unwrap().is_unique());
    assert!(StrideMapping::new(Dims::new([0, 3]), [1, 1]).unwrap().is_unique());
    assert!(
        RelaxedMapping::new(Dims::new([2, 0, 5]), [0, 0, 0], 0)
            .unwrap()
            .is_unique()
    );
}

#[test]
fn relaxed_offsets_cover_negative_strides() {
    let e = Dims::new([2, 3]);
    assert_eq!(
        RelaxedMapping::new(e, [-3, 1], 2),
        Err(LayoutError::OffsetTooSmall { offset: 2, needed: 3 })
    );
    let m = RelaxedMapping::new(e, [-3, -1], 5).unwrap();
    assert_eq!(m.offset_of(&[0, 0]), 5);
    assert_eq!(m.offset_of(&[1, 2]), 0);
    assert_eq!(m.required_span_size(), 6);
    let broadcast = RelaxedMapping::new(e, [0, 0], 0).unwrap();
    assert_eq!(broadcast.required_span_size(), 1);
}

#[test]
fn empty_extents_never_overflow() {
    let huge = usize::MAX / 2;
    assert_eq!(
        RightMapping::new(Dims::new([huge, huge, 0]))
            .unwrap()
            .required_span_size(),
        0
    );
    assert!(RightMapping::from_strides(Dims::new([0, huge, huge]), &[7, huge as isize, 1], 0).is_ok());
    assert!(StrideMapping::new(Dims::new([huge, 0, huge]), [huge, 1, huge]).is_ok());
    assert!(RelaxedMapping::new(Dims::new([huge, 0]), [-(huge as isize), 1], 0).is_ok());
}

#[test]
fn unchecked_bits_keep_products_and_sums_below_2_62() {
    for rank in 0..=70usize {
        let (e, s) = unchecked_bits(rank);
        let (max_n, max_s) = ((1u128 << e) - 1, (1u128 << s) - 1);
        let count = (0..rank).fold(1u128, |c, _| c.saturating_mul(max_n));
        let reach = rank as u128 * max_n.saturating_sub(1) * max_s;
        assert!(count < 1 << 62 && reach < 1 << 62, "rank {rank}: bits ({e}, {s})");
    }
    assert_eq!(unchecked_bits(4), (15, 45));
}

#[test]
fn fast_and_exact_spans_agree_at_the_bounds() {
    let (e, s) = unchecked_bits(4);
    for n in [(1usize << e) - 1, 1 << e, (1 << e) + 1] {
        for stride in [(1usize << s) - 1, 1 << s, (1 << s) + 1] {
            let extents = [3, n, 2, n];
            let strides = [stride, 1, n, 2 * n];
            let signed = strides.map(|x| x as isize);
            let exact = strided_span(&extents, &signed).map(|(span, _)| span);
            let fast = StrideMapping::from_strides(Dims::new(extents), &signed, 0).map(|m| m.required_span_size());
            assert_eq!(fast, exact, "extent {n}, stride {stride}");
        }
    }
    // Compact layouts: past the bound the exact check decides, with the same answers.
    let big = 1usize << unchecked_bits(2).0;
    assert!(RightMapping::from_strides(Dims::new([big, 3]), &[3, 1], 0).is_ok());
    assert_eq!(
        RightMapping::from_strides(Dims::new([big, 3]), &[4, 1], 0),
        Err(LayoutError::StrideMismatch {
            dim: 0,
            stride: 4,
            expected: 3,
            layout: "layout_right"
        })
    );
    assert_eq!(
        RightMapping::from_strides(Dims::new([1 << 40, 1 << 40]), &[1 << 40, 1], 0),
        Err(LayoutError::SpanOverflow)
    );
}

/// The elements `for_each_reached` visits are exactly those the indices reach, for every
/// rank-1 to rank-3 mapping of small extents and strides, signs and zeros included.
#[test]
#[cfg_attr(
    miri,
    ignore = "index arithmetic without unsafe code, thousands of sets: run natively and fuzzed"
)]
fn reached_offsets_are_exactly_the_indexed_ones() {
    use std::collections::BTreeSet;
    let strides: &[isize] = &[-6, -3, -2, -1, 0, 1, 2, 3, 4, 6];
    let mut checked = 0;
    for e0 in 0..4usize {
        for e1 in 1..4usize {
            for e2 in 1..5usize {
                for &s0 in strides {
                    for &s1 in strides {
                        for &s2 in strides {
                            let e = Dims::new([e0, e1, e2]);
                            let back = [(e0, s0), (e1, s1), (e2, s2)]
                                .iter()
                                .filter(|(n, s)| *s < 0 && *n > 0)
                                .map(|&(n, s)| (n - 1) * s.unsigned_abs())
                                .sum();
                            let m = RelaxedMapping::new(e, [s0, s1, s2], back).unwrap();
                            let start = m.offset() as isize - back as isize;
                            let mut want = BTreeSet::new();
                            for i in 0..e0 {
                                for j in 0..e1 {
                                    for k in 0..e2 {
                                        want.insert(m.offset_of(&[i, j, k]) as isize - start);
                                    }
                                }
                            }
                            let mut got = BTreeSet::new();
                            let mut calls = 0;
                            for_each_reached::<_, ()>(&m, |x| {
                                got.insert(x as isize);
                                calls += 1;
                                Ok(())
                            })
                            .unwrap();
                            assert_eq!(got, want, "extents {e:?} strides {:?}", [s0, s1, s2]);
                            if cfg!(feature = "std") {
                                assert!(calls <= m.required_span_size().max(1));
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(checked, 4 * 3 * 4 * strides.len().pow(3));
}

#[test]
fn reached_offsets_stop_at_the_first_error() {
    let m = RightMapping::new(Dims::new([3, 4])).unwrap();
    let mut seen = 0;
    let r = for_each_reached(&m, |x| {
        seen += 1;
        if x == 5 { Err(x) } else { Ok(()) }
    });
    assert_eq!(r, Err(5));
    assert!(seen <= 12);
}

#[test]
fn overflow_is_an_error() {
    assert_eq!(
        RightMapping::new(Dims::new([usize::MAX / 2, 3])),
        Err(LayoutError::SpanOverflow)
    );
    assert_eq!(
        StrideMapping::new(Dims::new([3, 2]), [isize::MAX as usize, 1]),
        Err(LayoutError::StrideReach {
            dim: 0,
            extent: 3,
            stride: isize::MAX as i64
        })
    );
    assert_eq!(
        StrideMapping::new(Dims::new([3]), [0]),
        Err(LayoutError::NonPositiveStride { dim: 0, stride: 0 })
    );
}

#[test]
fn a_stride_too_far_is_named_with_its_dimension() {
    // cupy 14.2's `a[::-1]` of 8 f32s: the byte stride -4 as unsigned, divided by 4.
    let cupy = ((1u128 << 64) - 4) / 4;
    let err = RelaxedMapping::from_strides(Dims::new([8]), &[cupy as isize], 0).unwrap_err();
    assert_eq!(
        err,
        LayoutError::StrideReach {
            dim: 0,
            extent: 8,
            stride: cupy as i64
        }
    );
    let message = err.to_string();
    assert!(
        message.starts_with("stride 4611686018427387903 of dimension 0 (extent 8) reaches further than isize"),
        "{message}"
    );
    assert!(
        message.contains("a stride of -1 elements whose byte stride (-4)"),
        "{message}"
    );
    assert!(message.contains("(4 bytes)"), "{message}");
    // `[::-1, ::-1]` of a 4 × 4 array: -16 and -4 bytes, as the reversal gives them.
    let rows = ((1u128 << 64) - 16) / 4;
    let err = RelaxedMapping::from_strides(Dims::new([4, 4]), &[rows as isize, cupy as isize], 0).unwrap_err();
    assert!(
        matches!(err, LayoutError::StrideReach { dim: 1, extent: 4, .. }),
        "the dimension that reaches furthest: {err:?}"
    );
    let err = RelaxedMapping::from_strides(Dims::new([4, 1]), &[rows as isize, 1], 0).unwrap_err();
    assert!(
        err.to_string()
            .contains("a stride of -4 elements whose byte stride (-16)"),
        "{err}"
    );
    // A merely huge stride gets no such guess.
    let err = RelaxedMapping::from_strides(Dims::new([3]), &[1 << 62], 0).unwrap_err();
    assert_eq!(
        err.to_string(),
        "stride 4611686018427387904 of dimension 0 (extent 3) reaches further than isize can count"
    );
    // Too many elements is another error.
    assert_eq!(
        RelaxedMapping::from_strides(Dims::new([1 << 40, 1 << 40]), &[1, 1], 0),
        Err(LayoutError::SpanOverflow)
    );
}

#[test]
fn unsigned_negatives_are_recognised_for_each_item_size() {
    for size in [2u32, 4, 8, 16, 32, 64] {
        for meant in [-1i64, -3, -1000, -(1 << 20)] {
            let bytes = meant * i64::from(size);
            let exported = u64::from_ne_bytes(bytes.to_ne_bytes()) / u64::from(size);
            assert_eq!(
                super::span::unsigned_negative(exported as i64),
                Some((meant, size)),
                "{meant} elements of {size} bytes"
            );
        }
    }
    for plain in [1i64, 7, 1 << 40, 1 << 62, -4, 0] {
        assert_eq!(super::span::unsigned_negative(plain), None, "{plain}");
    }
}

#[test]
fn a_stride_layout_refusing_negative_strides_names_the_relaxed_one() {
    let refused = LayoutError::NonPositiveStride { dim: 0, stride: -1 };
    let message = refused.to_string();
    assert!(
        message.starts_with("stride -1 of dimension 0 is not positive"),
        "{message}"
    );
    assert!(
        message.contains("LayoutStrideRelaxed takes zero and negative strides"),
        "{message}"
    );
}
