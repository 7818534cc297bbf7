//! ndarray ⇄ dlmd (`dlmd::ndarray`): arrays of rank 1–3 reshaped by ndarray's own operations
//! (slices with any step, reversed and permuted axes, broadcasts), converted to views of every
//! layout, read-only and read-write, and back; owned arrays of either order exported as managed
//! tensors. Oracles: every element holds its position in the base array, so an accepted view
//! must read at each index what ndarray reads there; a relaxed-stride view accepts every array;
//! a row-major (column-major) array fits `LayoutRight` (`LayoutLeft`); a mutable view writes
//! where ndarray then reads; the round trip back to ndarray gives the same array; an export is a
//! row-major tensor of the same elements, flagged copied exactly where the array was not
//! row-major.
#![no_main]

use arbitrary::Arbitrary;
use dlmd::HostMdspanAliased;
use dlmd::dlpack::{DLManagedTensorVersioned, IS_COPIED};
use dlmd::layout::Layout;
use dlmd::managed::ManagedTensor;
use dlmd::ndarray::{export, from_array_view, from_array_view_mut, to_array_view};
use dlmd::{Dims, Extents, LayoutLeft, LayoutRight, LayoutStride, LayoutStrideRelaxed};
use dlmd_fuzz::walk;
use ndarray::{
    Array, ArrayBase, ArrayView, Axis, Dim, Dimension, IntoDimension, Ix, NdIndex, RawData, ShapeBuilder, Slice,
};

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Op {
    /// `slice_axis(axis, start..end;step)`, bounds clamped to the axis.
    Slice {
        axis: u8,
        start: u8,
        end: u8,
        step: i8,
    },
    Invert(u8),
    Swap(u8, u8),
    /// Broadcast a length-1 axis to this length (read-only views only).
    Broadcast(u8, u8),
}

#[derive(Arbitrary, Debug)]
struct Input {
    rank: u8,
    shape: [u8; 3],
    fortran: bool,
    ops: Vec<Op>,
    layout: u8,
    mutable: bool,
    at: [u8; 3],
}

fn run<const R: usize, L: Layout>(input: &Input)
where
    Dim<[Ix; R]>: Dimension,
    [Ix; R]: IntoDimension<Dim = Dim<[Ix; R]>> + NdIndex<Dim<[Ix; R]>>,
{
    let shape: [usize; R] = core::array::from_fn(|d| usize::from(input.shape[d] % 6));
    let count: usize = shape.iter().product();
    let values: Vec<u32> = (0..count as u32).collect();
    let base = if input.fortran {
        Array::from_shape_vec(shape.f(), values)
    } else {
        Array::from_shape_vec(shape, values)
    }
    .expect("a shape of its element count");

    let mut view: ArrayView<'_, u32, Dim<[Ix; R]>> = base.view();
    let broadcast = reshape(&mut view, &input.ops);
    let index: [usize; R] = core::array::from_fn(|d| usize::from(input.at[d]));
    if !input.mutable {
        match broadcast {
            Some(to) => read::<R, L>(view.broadcast(to).expect("a length-1 axis broadcasts"), &index),
            None => read::<R, L>(view, &index),
        }
        return;
    }

    let mut written = base.clone();
    let mut target = written.view_mut();
    reshape(&mut target, &input.ops);
    let before = target.to_owned();
    let shape: [usize; R] = core::array::from_fn(|d| before.shape()[d]);
    let at: [usize; R] = core::array::from_fn(|d| index[d] % shape[d].max(1));
    let standard = target.is_standard_layout();
    let fortran = target.t().is_standard_layout();
    let strides = target.strides().to_vec();
    let accepted = match from_array_view_mut::<u32, Dims<R>, L, R>(target) {
        Ok(mut md) => {
            assert_eq!(md.extents().to_array(), shape, "extents differ");
            for ix in walk(&shape) {
                let i: [usize; R] = core::array::from_fn(|d| ix[d]);
                assert_eq!(md[i], before[i], "index {i:?} reads another element");
            }
            if md.size() > 0 {
                md[at] = u32::MAX;
            }
            true
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            false
        }
    };
    assert!(
        accepted || !must_accept::<L>(standard, fortran),
        "{} refused a mutable array of strides {strides:?}",
        L::NAME
    );
    let changed: Vec<usize> = written
        .iter()
        .zip(base.iter())
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(k, _)| k)
        .collect();
    if accepted && before.len() > 0 {
        // Values are unique: the element written is the one that held `before[at]`.
        let expected = base.iter().position(|&x| x == before[at]).expect("a value of the base");
        assert_eq!(changed, [expected], "the view wrote elsewhere");
    } else {
        assert!(changed.is_empty(), "a refused or empty view wrote");
    }
    export_and_check(before);
}

/// Applies `ops` to `view`; returns the shape to broadcast to, where a broadcast op names an axis
/// of length 1 after the others (broadcasting last).
fn reshape<S: RawData, const R: usize>(view: &mut ArrayBase<S, Dim<[Ix; R]>>, ops: &[Op]) -> Option<[usize; R]>
where
    Dim<[Ix; R]>: Dimension,
{
    let mut broadcast = None;
    for op in ops.iter().take(6) {
        match *op {
            Op::Slice { axis, start, end, step } => {
                let axis = usize::from(axis) % R;
                let n = view.len_of(Axis(axis)) as isize;
                let (start, end) = (isize::from(start) % (n + 1), isize::from(end) % (n + 1));
                let step = if step == 0 {
                    1
                } else {
                    isize::from(step) % 4 + isize::from(step % 4 == 0)
                };
                view.slice_axis_inplace(Axis(axis), Slice::new(start.min(end), Some(end.max(start)), step));
            }
            Op::Invert(axis) => view.invert_axis(Axis(usize::from(axis) % R)),
            Op::Swap(a, b) => view.swap_axes(usize::from(a) % R, usize::from(b) % R),
            Op::Broadcast(axis, n) => broadcast = Some((usize::from(axis) % R, usize::from(n % 5))),
        }
    }
    broadcast
        .filter(|&(axis, _)| view.len_of(Axis(axis)) == 1)
        .map(|(axis, n)| {
            let mut to = [0usize; R];
            to.copy_from_slice(view.shape());
            to[axis] = n;
            to
        })
}

/// Whether layout `L` must take an array: a relaxed-stride layout every one, `LayoutRight` a
/// row-major one, `LayoutLeft` a column-major one.
fn must_accept<L: Layout>(standard: bool, fortran: bool) -> bool {
    match L::NAME {
        "layout_stride_relaxed" => true,
        "layout_right" => standard,
        "layout_left" => fortran,
        _ => false,
    }
}

fn read<const R: usize, L: Layout>(view: ArrayView<'_, u32, Dim<[Ix; R]>>, index: &[usize; R])
where
    Dim<[Ix; R]>: Dimension,
    [Ix; R]: IntoDimension<Dim = Dim<[Ix; R]>> + NdIndex<Dim<[Ix; R]>>,
{
    let standard = view.is_standard_layout();
    let fortran = view.t().is_standard_layout();
    let shape: [usize; R] = core::array::from_fn(|d| view.shape()[d]);
    match from_array_view::<u32, Dims<R>, L, R>(view.clone()) {
        Ok(md) => {
            assert_eq!(md.extents().to_array(), shape, "extents differ");
            for ix in walk(&shape) {
                let i: [usize; R] = core::array::from_fn(|d| ix[d]);
                assert_eq!(md[i], view[i], "index {i:?} reads another element");
            }
            let at: [usize; R] = core::array::from_fn(|d| index[d] % shape[d].max(1));
            if md.size() > 0 {
                assert_eq!(md.get(at), Some(&view[at]));
            }
            let back = to_array_view(md);
            assert_eq!(back, view, "the round trip changed the array");
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            assert!(
                !must_accept::<L>(standard, fortran),
                "{} refused an array of strides {:?}: {e}",
                L::NAME,
                view.strides()
            );
        }
    }
}

fn export_and_check<const R: usize>(array: Array<u32, Dim<[Ix; R]>>)
where
    Dim<[Ix; R]>: Dimension,
{
    let standard = array.is_standard_layout();
    let expected: Vec<u32> = array.iter().copied().collect();
    let raw = export::<DLManagedTensorVersioned, u32, R>(array).expect("a host array exports");
    // SAFETY: a fresh export, handed over.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.expect("dlmd's own export");
    assert_eq!(
        tensor.flags() & IS_COPIED != 0,
        !standard,
        "IS_COPIED where the array was {standard}"
    );
    let md = tensor
        .view::<HostMdspanAliased<'_, u32, Dims<R>, LayoutRight>>()
        .expect("a row-major export");
    assert_eq!(
        md.values().collect::<Vec<_>>(),
        expected,
        "the export holds other elements"
    );
}

fn with_layout<const R: usize>(input: &Input)
where
    Dim<[Ix; R]>: Dimension,
    [Ix; R]: IntoDimension<Dim = Dim<[Ix; R]>> + NdIndex<Dim<[Ix; R]>>,
{
    match input.layout % 4 {
        0 => run::<R, LayoutRight>(input),
        1 => run::<R, LayoutLeft>(input),
        2 => run::<R, LayoutStride>(input),
        _ => run::<R, LayoutStrideRelaxed>(input),
    }
}

dlmd_fuzz::fuzz_cases!(|input: Input| {
    match input.rank % 3 {
        0 => with_layout::<1>(&input),
        1 => with_layout::<2>(&input),
        _ => with_layout::<3>(&input),
    }
});
