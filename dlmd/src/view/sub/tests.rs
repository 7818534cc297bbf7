//! The tests of `submdspan`: layouts, elements, errors and the compact fast path.

use super::*;
use crate::extents::Dims;
use crate::view::{HostMdspan, HostMdspanMut};

fn cube(data: &[i32]) -> HostMdspan<'_, i32, Dims<3>> {
    HostMdspan::from_slice(data, Dims::new([2, 3, 4])).unwrap()
}

#[test]
fn layouts_follow_the_mdspan_rules() {
    let data: Vec<i32> = (0..24).collect();
    let md = cube(&data);
    let _: HostMdspan<i32, Dims<2>, LayoutRight> = md.submdspan((1, .., ..)).unwrap();
    let _: HostMdspan<i32, Dims<2>, LayoutRight> = md.submdspan((1, 1..3, ..)).unwrap();
    let _: HostMdspan<i32, Dims<2>, LayoutStride> = md.submdspan((1, .., 1..3)).unwrap();
    let _: HostMdspan<i32, Dims<1>, LayoutStride> = md.submdspan((.., 0, 0)).unwrap();
    let _: HostMdspan<i32, Dims<1>, LayoutRight> = md.submdspan((0, 0, ..)).unwrap();
    let _: HostMdspan<i32, Dims<0>, LayoutRight> = md.submdspan((1, 2, 3)).unwrap();
    let left = HostMdspan::<i32, Dims<3>, LayoutLeft>::from_slice(&data, Dims::new([2, 3, 4])).unwrap();
    let _: HostMdspan<i32, Dims<2>, LayoutLeft> = left.submdspan((.., .., 2)).unwrap();
    let _: HostMdspan<i32, Dims<2>, LayoutLeft> = left.submdspan((.., 1..2, 2)).unwrap();
    let _: HostMdspan<i32, Dims<2>, LayoutStride> = left.submdspan((0, .., ..)).unwrap();
}

#[test]
fn every_element_matches_the_parent() {
    let data: Vec<i32> = (0..24).collect();
    let md = cube(&data);
    let sub = md.submdspan((1..2, 0..=2, 1..)).unwrap();
    for i in 0..1 {
        for j in 0..3 {
            for k in 0..3 {
                assert_eq!(sub[[i, j, k]], md[[1 + i, j, 1 + k]]);
            }
        }
    }
    let point = md.submdspan((1, 2, 3)).unwrap();
    assert_eq!(point[[]], 23);
}

#[test]
fn out_of_bounds_is_an_error() {
    let data: Vec<i32> = (0..24).collect();
    let md = cube(&data);
    assert_eq!(
        md.submdspan((2, .., ..)).unwrap_err(),
        SliceError::OutOfBounds {
            dim: 0,
            start: 2,
            end: 3,
            extent: 2
        }
    );
    assert!(md.submdspan((0, 2..5, ..)).is_err());
    assert!(md.submdspan((0, 3..3, ..)).unwrap().is_empty());
}

/// Slicing a view without elements whose strides are huge (any strides describe it) neither
/// overflows nor fails (found by the `view_index` fuzz target).
#[test]
fn empty_views_with_huge_strides_slice() {
    use crate::layout::{LayoutStrideRelaxed, RelaxedMapping};
    let none: [u8; 0] = [];
    let big = isize::MAX / 2;
    let m = RelaxedMapping::new(Dims::new([0, 5, 3]), [1, big, -big], 0).unwrap();
    let md = HostMdspan::<u8, Dims<3>, LayoutStrideRelaxed>::from_slice_mapping(&none, m).unwrap();
    let sub = md.submdspan((.., 4, 1..3)).unwrap();
    assert!(sub.is_empty());
    assert_eq!(sub.extents().to_array(), [0, 2]);
}

/// A reversed range is an error, not an underflow (found by the `view_index` fuzz target).
#[test]
#[allow(clippy::reversed_empty_ranges)]
fn reversed_ranges_are_an_error() {
    let data: Vec<i32> = (0..24).collect();
    let md = cube(&data);
    assert_eq!(
        md.submdspan((0, 2..1, ..)).unwrap_err(),
        SliceError::OutOfBounds {
            dim: 1,
            start: 2,
            end: 1,
            extent: 3
        }
    );
    assert!(md.submdspan((1, .., 3..=1)).is_err());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: if cfg!(miri) { 16 } else { 512 },
        // Miri's isolation has no working directory for the regression file.
        failure_persistence: if cfg!(miri) {
            None
        } else {
            proptest::prelude::ProptestConfig::default().failure_persistence
        },
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Slices that keep a compact layout (built from their extents alone, unchecked) reach
    /// the very elements of their parent, for any extents, empty ones included.
    #[test]
    fn compact_slices_reach_their_parents_elements(
        e in proptest::array::uniform3(0usize..5),
        i in 0usize..5,
        a in 0usize..5,
        b in 0usize..5,
    ) {
        let data: Vec<i32> = (0..e.iter().product::<usize>() as i32).collect();
        let right = HostMdspan::<i32, Dims<3>>::from_slice(&data, Dims::new(e)).unwrap();
        let left = HostMdspan::<i32, Dims<3>, LayoutLeft>::from_slice(&data, Dims::new(e)).unwrap();
        let fits = i < e[0] && a <= b && b <= e[1];
        let rows: Result<HostMdspan<i32, Dims<2>, LayoutRight>, _> = right.submdspan((i, a..b, ..));
        proptest::prop_assert_eq!(rows.is_ok(), fits);
        if let Ok(rows) = rows {
            proptest::prop_assert_eq!(rows.extents().to_array(), [b - a, e[2]]);
            for j in 0..b - a {
                for k in 0..e[2] {
                    proptest::prop_assert!(core::ptr::eq(&rows[[j, k]], &right[[i, a + j, k]]));
                }
            }
        }
        let fits = i < e[2] && a <= b && b <= e[1];
        let cols: Result<HostMdspan<i32, Dims<2>, LayoutLeft>, _> = left.submdspan((.., a..b, i));
        proptest::prop_assert_eq!(cols.is_ok(), fits);
        if let Ok(cols) = cols {
            proptest::prop_assert_eq!(cols.extents().to_array(), [e[0], b - a]);
            for j in 0..e[0] {
                for k in 0..b - a {
                    proptest::prop_assert!(core::ptr::eq(&cols[[j, k]], &left[[j, a + k, i]]));
                }
            }
        }
        let whole: HostMdspan<i32, Dims<3>, LayoutRight> = right.submdspan((.., .., ..)).unwrap();
        proptest::prop_assert_eq!(whole.mapping(), right.mapping());
        proptest::prop_assert_eq!(whole.data_handle(), right.data_handle());
        // Rank 1 from the last dimension, with an inclusive range, and rank 0.
        let fits = i < e[0] && a < e[1] && b < e[2];
        let run: Result<HostMdspan<i32, Dims<1>, LayoutRight>, _> = right.submdspan((i, a, ..=b));
        proptest::prop_assert_eq!(run.is_ok(), fits);
        if let Ok(run) = run {
            for k in 0..=b {
                proptest::prop_assert!(core::ptr::eq(&run[[k]], &right[[i, a, k]]));
            }
            let point: HostMdspan<i32, Dims<0>, LayoutRight> = run.submdspan((b,)).unwrap();
            proptest::prop_assert!(core::ptr::eq(&point[[]], &right[[i, a, b]]));
        }
    }

    /// The same at rank 5, where the walk of the type rules is longest.
    #[test]
    fn compact_slices_of_rank_five(
        e in proptest::array::uniform5(0usize..4),
        i in 0usize..4,
        a in 0usize..4,
        b in 0usize..4,
    ) {
        let data: Vec<i32> = (0..e.iter().product::<usize>() as i32).collect();
        let right = HostMdspan::<i32, Dims<5>>::from_slice(&data, Dims::new(e)).unwrap();
        let left = HostMdspan::<i32, Dims<5>, LayoutLeft>::from_slice(&data, Dims::new(e)).unwrap();
        let sub: Result<HostMdspan<i32, Dims<3>, LayoutRight>, _> = right.submdspan((i, 0, a..=b, .., ..));
        if let Ok(sub) = sub {
            for (j, k, l) in (0..sub.extent(0)).flat_map(|j| (0..e[3]).flat_map(move |k| (0..e[4]).map(move |l| (j, k, l)))) {
                proptest::prop_assert!(core::ptr::eq(&sub[[j, k, l]], &right[[i, 0, a + j, k, l]]));
            }
        } else {
            proptest::prop_assert!(!(i < e[0] && e[1] > 0 && a <= b && b < e[2]));
        }
        let sub: Result<HostMdspan<i32, Dims<2>, LayoutLeft>, _> = left.submdspan((.., ..b, i, a, 0));
        if let Ok(sub) = sub {
            for (j, k) in (0..e[0]).flat_map(|j| (0..sub.extent(1)).map(move |k| (j, k))) {
                proptest::prop_assert!(core::ptr::eq(&sub[[j, k]], &left[[j, k, i, a, 0]]));
            }
        } else {
            proptest::prop_assert!(!(b <= e[1] && i < e[2] && a < e[3] && e[4] > 0));
        }
    }
}

/// An inclusive range that ends at `usize::MAX` selects past every extent, and one an
/// iterator used up selects nothing, as a Rust slice reads them.
#[test]
fn inclusive_ranges_neither_wrap_nor_revive() {
    let none: [i32; 0] = [];
    let md = HostMdspan::<i32, Dims<2>>::from_slice(&none, Dims::new([usize::MAX, 0])).unwrap();
    assert!(md.submdspan((0..=usize::MAX, ..)).is_err());
    assert!(md.submdspan((usize::MAX - 1..=usize::MAX, ..)).is_err());
    assert!(md.submdspan((..=usize::MAX, ..)).is_err());
    let data: Vec<i32> = (0..24).collect();
    let md = cube(&data);
    let mut used = 0..=2usize;
    used.by_ref().for_each(drop);
    let sub = md.submdspan((1, used, ..)).unwrap();
    assert_eq!(sub.extents().to_array(), [0, 4]);
    let mut rows = 0..=1usize;
    rows.by_ref().for_each(drop);
    assert!(md.submdspan((rows, 0, 0)).is_ok());
    assert_eq!(md.submdspan((0, 1..=2, 3)).unwrap()[[1]], 11);
}

#[test]
fn mutable_slices_write_through() {
    let mut data = [0i32; 12];
    let mut md = HostMdspanMut::<i32, Dims<2>>::from_slice_mut(&mut data, Dims::new([3, 4])).unwrap();
    let mut col = md.submdspan_mut((.., 2)).unwrap();
    col.fill(7);
    assert_eq!(data, [0, 0, 7, 0, 0, 0, 7, 0, 0, 0, 7, 0]);
}

#[test]
fn relaxed_slices_keep_negative_strides() {
    use crate::layout::RelaxedMapping;
    let data: Vec<i32> = (0..6).collect();
    // Rows reversed: index [i, j] is element (1 - i) * 3 + j.
    let mapping = RelaxedMapping::new(Dims::new([2, 3]), [-3, 1], 3).unwrap();
    let md = HostMdspan::<i32, Dims<2>, LayoutStrideRelaxed>::from_slice_mapping(&data, mapping).unwrap();
    assert_eq!(md[[0, 0]], 3);
    let sub = md.submdspan((.., 1..3)).unwrap();
    assert_eq!(sub[[0, 0]], 4);
    assert_eq!(sub[[1, 1]], 2);
}
