//! View → `DLTensor` → view, for every layout, ranks 0 to 6, empty tensors, static and dynamic
//! extents: the imported view reaches exactly the elements the exported one did.

use dlmd::extents::IndexArray;
use dlmd::layout::{Layout, Mapping, RelaxedMapping, StrideMapping};
use dlmd::{
    Const, Dims, DlElement, Dyn, Extents, HostMdspan, LayoutLeft, LayoutRight, LayoutStride, LayoutStrideRelaxed,
    Mdspan, to_dlpack_tensor,
};

/// Exports `view`, imports it as `Dims<R>` in layout `L`, and checks every element's address.
fn round_trip<T, E, L, const R: usize>(view: &HostMdspan<'_, T, E, L>)
where
    T: DlElement + PartialEq + std::fmt::Debug,
    T::Storage: dlmd::dtype::PlainStorage,
    E: Extents<Index = [usize; R]>,
    L: Layout,
{
    let dl = to_dlpack_tensor(view);
    let t = dl.get();
    assert_eq!(t.ndim as usize, R);
    // SAFETY: `t` describes `view`'s elements, borrowed for this function.
    let back = unsafe { HostMdspan::<T, Dims<R>, L>::from_dlpack(&t) }.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back.extents().to_array(), view.extents().to_array());
    assert_eq!(back.size(), view.size());
    for index in dlmd_tests::indices(view.extents().to_array()) {
        assert!(std::ptr::eq(&back[index], &view[index]), "{index:?}");
    }
    // SAFETY: as above; static extents are checked against the shape.
    let same = unsafe { HostMdspan::<T, E, L>::from_dlpack(&t) }.unwrap();
    assert_eq!(same.extents(), view.extents());
}

/// A view of `data` with `extents` in each of the four layouts, each round-tripped.
fn all_layouts<const R: usize>(extents: [usize; R]) {
    let count: usize = extents.iter().product();
    let data: Vec<u32> = (0..count as u32 * 2 + 1).collect();
    let dims = Dims::new(extents);
    round_trip(&HostMdspan::<u32, Dims<R>, LayoutRight>::from_slice(&data, dims).unwrap());
    round_trip(&HostMdspan::<u32, Dims<R>, LayoutLeft>::from_slice(&data, dims).unwrap());

    // Every other element, dimensions in reverse order of strides: a strided, non-compact view.
    let mut strides = [0usize; R];
    let mut step = 2;
    for d in 0..R {
        strides[d] = step;
        step *= extents[d].max(1);
    }
    let stride = StrideMapping::new(dims, strides).unwrap();
    round_trip(&HostMdspan::<u32, Dims<R>, LayoutStride>::from_slice_mapping(&data, stride).unwrap());

    // The first dimension reversed.
    let mut signed = <[usize; R] as IndexArray>::isize_zeros();
    let mut step = 1isize;
    for d in (0..R).rev() {
        signed[d] = step;
        step *= extents[d].max(1) as isize;
    }
    let mut offset = 0;
    if R > 0 && count > 0 {
        offset = (extents[0] - 1) * signed[0] as usize;
        signed[0] = -signed[0];
    }
    let relaxed = RelaxedMapping::new(dims, signed, offset).unwrap();
    let view = HostMdspan::<u32, Dims<R>, LayoutStrideRelaxed>::from_slice_mapping(&data, relaxed).unwrap();
    if R > 0 && count > 0 {
        let mut last_row = [0usize; R];
        last_row[0] = extents[0] - 1;
        assert_eq!(view[last_row], 0);
    }
    round_trip(&view);
}

#[test]
fn ranks_0_to_6() {
    all_layouts([]);
    all_layouts([5]);
    all_layouts([2, 3]);
    all_layouts([2, 1, 4]);
    all_layouts([3, 2, 2, 2]);
    all_layouts([1, 2, 3, 1, 2]);
    all_layouts([2, 2, 1, 3, 2, 2]);
}

#[test]
fn empty_tensors() {
    all_layouts([0]);
    all_layouts([3, 0]);
    all_layouts([0, 4, 2]);
    all_layouts([2, 3, 0, 1, 1, 2]);
}

#[test]
fn static_and_mixed_extents() {
    let data: Vec<f64> = (0..24).map(f64::from).collect();
    type Mixed = (Const<2>, Dyn, Const<4>);
    round_trip(&HostMdspan::<f64, Mixed>::from_slice(&data, (Const, Dyn(3), Const)).unwrap());
    round_trip(&HostMdspan::<f64, (Const<4>, Const<6>), LayoutLeft>::from_slice(&data, (Const, Const)).unwrap());
    round_trip(&HostMdspan::<f64, ()>::from_slice(&data[..1], ()).unwrap());
}

#[test]
fn vector_and_complex_elements() {
    let data = [[1.0f32, 2.0], [3.0, 4.0], [5.0, 6.0]];
    round_trip(&HostMdspan::<[f32; 2], Dims<1>>::from_slice(&data, Dims::new([3])).unwrap());
    let c: Vec<num_complex::Complex<f64>> = (0..4).map(|i| num_complex::Complex::new(i as f64, 1.0)).collect();
    round_trip(&HostMdspan::<_, Dims<2>>::from_slice(&c, Dims::new([2, 2])).unwrap());
}

#[test]
fn mutable_views_import_and_write() {
    let mut data = [0i16; 6];
    let mut md = dlmd::HostMdspanMut::<i16, Dims<2>>::from_slice_mut(&mut data, Dims::new([3, 2])).unwrap();
    {
        let dl = to_dlpack_tensor(&md);
        let t = dl.get();
        // SAFETY: `t` describes `md`'s elements; `md` is not used while `out` lives.
        let mut out: Mdspan<'_, i16, Dims<2>, LayoutRight, dlmd::Host, dlmd::Unique> =
            unsafe { dlmd::HostMdspanMut::from_dlpack(&t) }.unwrap();
        out[[2, 1]] = 9;
    }
    assert_eq!(md[[2, 1]], 9);
    md[[0, 0]] = 1;
    assert_eq!(data, [1, 0, 0, 0, 0, 9]);
}

#[test]
fn mappings_report_their_properties() {
    let m = StrideMapping::new(Dims::new([2, 3]), [1, 2]).unwrap();
    assert!(m.is_unique() && m.is_exhaustive() && m.is_strided());
    assert_eq!(m.required_span_size(), 6);
    let gaps = StrideMapping::new(Dims::new([2, 3]), [8, 2]).unwrap();
    assert!(gaps.is_unique() && !gaps.is_exhaustive());
    assert_eq!(gaps.required_span_size(), 13);
}
