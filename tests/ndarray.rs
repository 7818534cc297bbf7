//! ndarray interop against ndarray's own indexing: every layout and stride sign, both ways,
//! read-only and read-write, static extents, owned exports.

use dlmd::dlpack::{DLManagedTensorVersioned, DLTensor};
use dlmd::extents::{Const, Dyn, Extents};
use dlmd::layout::{Layout, LayoutError};
use dlmd::managed::ManagedTensor;
use dlmd::ndarray::{export, from_array_view, from_array_view_mut, to_array_view, to_array_view_mut};
use dlmd::{Dims, LayoutLeft, LayoutRight, LayoutStride, LayoutStrideRelaxed, ViewError};
use ndarray::{Array, Array2, Array3, ArrayView, Axis, Dim, Dimension, ShapeBuilder, Slice};
use proptest::prelude::*;

/// A rank-3 array of distinct values, sliced with a step per axis (negative steps run
/// backwards) and its axes permuted: every stride sign and order ndarray makes.
#[derive(Debug, Clone)]
struct Case {
    base: [usize; 3],
    steps: [isize; 3],
    perm: [usize; 3],
}

fn cases() -> impl Strategy<Value = Case> {
    let step = prop_oneof![Just(1isize), Just(2), Just(-1), Just(-2), Just(3)];
    (
        [0usize..5, 0usize..5, 0usize..5],
        [step.clone(), step.clone(), step],
        Just([0usize, 1, 2]).prop_shuffle(),
    )
        .prop_map(|(base, steps, perm)| Case { base, steps, perm })
}

fn base(case: &Case) -> Array3<i64> {
    Array::from_shape_fn(case.base, |(i, j, k)| (i * 10_000 + j * 100 + k) as i64)
}

fn shaped<'a>(a: ArrayView<'a, i64, Dim<[usize; 3]>>, case: &Case) -> ArrayView<'a, i64, Dim<[usize; 3]>> {
    let mut v = a;
    for (axis, &step) in case.steps.iter().enumerate() {
        v.slice_axis_inplace(Axis(axis), Slice::new(0, None, step));
    }
    v.permuted_axes(case.perm)
}

/// Whether `L` describes `a` as dlmd reads strides: those of extent-0/1 axes are ignored.
fn fits<L: Layout>(a: &ArrayView<'_, i64, Dim<[usize; 3]>>) -> bool {
    let shape = a.shape();
    let strides = a.strides();
    let mattering = |d: usize| shape[d] > 1;
    match L::NAME {
        "layout_right" | "layout_left" => {
            let order: Vec<usize> = if L::NAME == "layout_right" {
                vec![2, 1, 0]
            } else {
                vec![0, 1, 2]
            };
            let mut expected = 1isize;
            for &d in &order {
                if mattering(d) && strides[d] != expected {
                    return false;
                }
                expected *= shape[d].max(1) as isize;
            }
            true
        }
        "layout_stride" => (0..3).all(|d| !mattering(d) || strides[d] > 0),
        _ => true,
    }
}

fn check_layout<L: Layout>(a: ArrayView<'_, i64, Dim<[usize; 3]>>) -> Result<(), TestCaseError> {
    let fits = fits::<L>(&a) && !a.is_empty();
    match from_array_view::<_, Dims<3>, L, 3>(a) {
        Ok(view) => {
            for (index, value) in a.indexed_iter() {
                let index = [index.0, index.1, index.2];
                prop_assert_eq!(view[index], *value, "{} at {:?}", L::NAME, index);
            }
            // Back to ndarray: the same elements at the same addresses.
            let back = to_array_view(view);
            prop_assert_eq!(back.shape(), a.shape());
            prop_assert_eq!(&back, &a);
            if !a.is_empty() {
                prop_assert_eq!(back.as_ptr(), a.as_ptr());
            }
        }
        Err(e) => prop_assert!(
            !fits,
            "{} refused {:?} strides {:?}: {e}",
            L::NAME,
            a.shape(),
            a.strides()
        ),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 6 } else { 256 },
        // Miri runs isolated from the file system, where failures would be saved.
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        .. ProptestConfig::default()
    })]

    #[test]
    fn views_index_as_ndarray_does(case in cases()) {
        let a = base(&case);
        let v = shaped(a.view(), &case);
        check_layout::<LayoutStrideRelaxed>(v)?;
        // Relaxed takes every ndarray view.
        prop_assert!(from_array_view::<_, Dims<3>, LayoutStrideRelaxed, 3>(v).is_ok());
        check_layout::<LayoutStride>(v)?;
        check_layout::<LayoutRight>(v)?;
        check_layout::<LayoutLeft>(v)?;
    }

    #[test]
    fn writes_through_either_side_show_in_the_other(case in cases()) {
        let mut a = base(&case);
        let want = {
            let mut b = a.clone();
            let mut v = b.view_mut();
            for (axis, &step) in case.steps.iter().enumerate() {
                v.slice_axis_inplace(Axis(axis), Slice::new(0, None, step));
            }
            let mut v = v.permuted_axes(case.perm);
            v.indexed_iter_mut().for_each(|((i, j, k), x)| *x = 2 * (-((i * 100 + j * 10 + k) as i64) - 1));
            b
        };
        {
            let mut v = a.view_mut();
            for (axis, &step) in case.steps.iter().enumerate() {
                v.slice_axis_inplace(Axis(axis), Slice::new(0, None, step));
            }
            let v = v.permuted_axes(case.perm);
            let shape = [v.shape()[0], v.shape()[1], v.shape()[2]];
            let mut view = from_array_view_mut::<_, Dims<3>, LayoutStrideRelaxed, 3>(v).unwrap();
            for i in 0..shape[0] {
                for j in 0..shape[1] {
                    for k in 0..shape[2] {
                        view[[i, j, k]] = -((i * 100 + j * 10 + k) as i64) - 1;
                    }
                }
            }
            // Through the ndarray view of the dlmd view: the values written, doubled in place.
            let mut back = to_array_view_mut(view);
            for ((i, j, k), x) in back.indexed_iter_mut() {
                prop_assert_eq!(*x, -((i * 100 + j * 10 + k) as i64) - 1);
                *x *= 2;
            }
        }
        prop_assert_eq!(a, want);
    }
}

#[test]
fn broadcast_views_are_read_only_and_relaxed() {
    let a = ndarray::arr1(&[1.0f32, 2.0, 3.0]);
    let b = a.broadcast((4, 3)).unwrap();
    assert_eq!(b.strides(), &[0, 1]);
    let view = from_array_view::<_, Dims<2>, LayoutStrideRelaxed, 2>(b.view()).unwrap();
    assert_eq!((view[[3, 2]], view.stride(0)), (3.0, 0));
    for refused in [
        from_array_view::<_, Dims<2>, LayoutStride, 2>(b.view()).map(|_| ()),
        from_array_view::<_, Dims<2>, LayoutRight, 2>(b.view()).map(|_| ()),
    ] {
        assert!(matches!(refused, Err(ViewError::Layout(_))), "{refused:?}");
    }
    assert_eq!(to_array_view(view), b);
}

#[test]
fn static_extents_are_checked() {
    let a = Array2::<u8>::zeros((2, 5));
    let ok = from_array_view::<_, (Const<2>, Dyn), LayoutRight, 2>(a.view()).unwrap();
    assert_eq!(ok.extents().to_array(), [2, 5]);
    let wrong = from_array_view::<_, (Const<3>, Dyn), LayoutRight, 2>(a.view());
    assert!(matches!(wrong, Err(ViewError::Extents(_))), "{wrong:?}");
}

#[test]
fn overlapping_mutable_views_are_refused_where_ndarray_cannot_make_them() {
    // ndarray never makes an overlapping mutable view, so a mutable view of every shape it does
    // make converts; a strided layout that cannot describe it is a layout error, not a copy.
    let mut a = Array2::<i32>::zeros((3, 4));
    let flipped = a.slice_mut(ndarray::s![..;-1, ..]);
    let refused = from_array_view_mut::<_, Dims<2>, LayoutStride, 2>(flipped);
    assert!(
        matches!(refused, Err(ViewError::Layout(LayoutError::NonPositiveStride { .. }))),
        "{refused:?}"
    );
}

fn exported(raw: *mut DLManagedTensorVersioned) -> ManagedTensor {
    // SAFETY: dlmd just made the tensor and hands it over.
    unsafe { ManagedTensor::from_raw(raw) }.unwrap()
}

fn values(t: &DLTensor) -> Vec<i32> {
    // SAFETY: the tensor is a live export of this test, read while it lives.
    let view = unsafe { dlmd::HostMdspan::<i32, Dims<2>, LayoutRight>::from_dlpack(t) }.unwrap();
    view.iter().copied().collect()
}

#[test]
fn owned_arrays_export_without_a_copy_when_row_major() {
    let a = Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as i32);
    let ptr = a.as_ptr();
    let tensor = exported(export::<DLManagedTensorVersioned, _, 2>(a).unwrap());
    assert_eq!(tensor.dl_tensor().data.cast::<i32>().cast_const(), ptr);
    assert!(!tensor.is_copied());
    assert_eq!(values(tensor.dl_tensor()), [0, 1, 2, 3, 4, 5]);

    // Column-major: copied into row-major order, and flagged so.
    let f = Array::from_shape_vec((2, 3).f(), vec![0, 3, 1, 4, 2, 5]).unwrap();
    assert_eq!(f[[0, 1]], 1);
    let tensor = exported(export::<DLManagedTensorVersioned, _, 2>(f).unwrap());
    assert!(tensor.is_copied());
    assert_eq!(values(tensor.dl_tensor()), [0, 1, 2, 3, 4, 5]);

    // Negative strides in an owned array (inverted axis): copied too.
    let mut g = Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as i32);
    g.invert_axis(Axis(1));
    let tensor = exported(export::<DLManagedTensorVersioned, _, 2>(g).unwrap());
    assert!(tensor.is_copied());
    assert_eq!(values(tensor.dl_tensor()), [2, 1, 0, 5, 4, 3]);
}

#[test]
fn rank_zero_and_empty_arrays() {
    let a = ndarray::arr0(7u16);
    let view = from_array_view::<_, Dims<0>, LayoutRight, 0>(a.view()).unwrap();
    assert_eq!(view[[]], 7);
    assert_eq!(to_array_view(view)[[]], 7);
    let e = Array2::<f64>::zeros((0, 3));
    let view = from_array_view::<_, Dims<2>, LayoutStrideRelaxed, 2>(e.view()).unwrap();
    assert!(view.is_empty());
    assert_eq!(to_array_view(view).shape(), &[0, 3]);
    let _ = Dim::<[usize; 2]>::zeros(2);
}
