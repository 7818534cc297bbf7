//! `dlmd!` builds the view its arguments describe.

use dlmd::{Const, Dyn, HostMdspan, HostMdspanMut, LayoutLeft, LayoutRight, LayoutStride, dlmd};

#[test]
fn static_extents_over_an_array() {
    let data = [1, 2, 3, 4, 5, 6];
    let md: HostMdspan<'_, i32, (Const<2>, Const<3>), LayoutRight> = dlmd!(&data, [2, 3]);
    assert_eq!(md[[1, 2]], 6);
    let left: HostMdspan<'_, i32, (Const<2>, Const<3>), LayoutLeft> = dlmd!(&data, [2, 3], layout_left);
    assert_eq!(left[[1, 0]], 2);
}

#[test]
fn dynamic_and_inferred_extents() {
    let data: Vec<u8> = (0..24).collect();
    let n = 4;
    let md: HostMdspan<'_, u8, (Const<2>, Dyn, Dyn)> = dlmd!(&data, [2, _, n]);
    assert_eq!(md.extent(1), 3);
    assert_eq!(md[[1, 2, 3]], 23);
    let slice: &[u8] = &data[..12];
    let flat = dlmd!(slice, [_]);
    assert_eq!(flat.size(), 12);
}

#[test]
fn mutable_views_write_through() {
    let mut data = [0.0f64; 6];
    let mut md: HostMdspanMut<'_, f64, (Const<3>, Const<2>)> = dlmd!(&mut data, [3, 2]);
    md[[2, 1]] = 5.0;
    md.fill(1.0);
    md[[0, 0]] = 2.0;
    assert_eq!(data, [2.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
}

#[test]
fn strided_views() {
    let data: Vec<i16> = (0..12).collect();
    // Every other column of a 3×4 row-major matrix.
    let md: HostMdspan<'_, i16, (Const<3>, Const<2>), LayoutStride> =
        dlmd!(&data, [3, 2], layout_stride, strides = [4, 2]);
    assert_eq!(md[[2, 1]], 10);
    // Strides that agree with the layout are accepted (and checked at compile time).
    let right = dlmd!(&data, [3, 4], layout_right, strides = [4, 1]);
    assert_eq!(right[[1, 1]], 5);
}

#[test]
fn rank_zero() {
    let mut x = 7u32;
    assert_eq!(dlmd!(&x, [])[[]], 7);
    let mut m = dlmd!(&mut x, []);
    m[[]] = 8;
    assert_eq!(x, 8);
}

#[test]
#[should_panic(expected = "dlmd!: the mapping needs 8 elements but the slice holds 6")]
fn run_time_extents_that_do_not_fit_panic() {
    let data = vec![0u8; 6];
    let rows = 4;
    let _ = dlmd!(&data, [rows, 2]);
}

#[test]
#[should_panic(expected = "cannot infer extent 1")]
fn inferred_extents_must_divide() {
    let data = vec![0u8; 7];
    let _ = dlmd!(&data, [2, _]);
}
