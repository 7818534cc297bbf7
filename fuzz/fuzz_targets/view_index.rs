//! The index paths of views: mappings of every layout built from any extents, strides and
//! offset, views over a slice, `get`/`try_load` at any index, `submdspan` with any ranges and
//! indices, and the runtime of `dlmd!`. Oracles: every element a view reaches is the one the
//! mapping formula names and lies in the slice; out-of-bounds indices give `None`; a slice's
//! element is its parent's at the shifted index; `dlmd!`'s runtime agrees with the checked
//! constructors.
#![no_main]

use arbitrary::Arbitrary;
use dlmd::extents::IndexArray;
use dlmd::layout::{LeftMapping, RelaxedMapping, RightMapping, StrideMapping};
use dlmd::view::SubLayout;
use dlmd::{Dims, Extents, HostMdspan, Mapping};
use dlmd_fuzz::{index_of, walk};
use std::ops::Range;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Size {
    Small(u8),
    Any(usize),
}

impl Size {
    fn get(self) -> usize {
        match self {
            Size::Small(n) => usize::from(n % 9),
            Size::Any(n) => n,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Step {
    Small(i8),
    Any(isize),
}

impl Step {
    fn get(self) -> isize {
        match self {
            Step::Small(s) => isize::from(s % 16),
            Step::Any(s) => s,
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    rank: u8,
    layout: u8,
    extents: [Size; 4],
    strides: [Step; 4],
    offset: Size,
    len: u16,
    /// Per dimension: a range `start..end` (kept) or, when `drop`, the index `start`.
    slices: [(u8, u8); 4],
    drop_first: bool,
    probes: Vec<[u8; 4]>,
}

/// The elements are their own offsets, so a load names the offset it came from.
fn data(len: u16) -> Vec<u32> {
    (0..u32::from(len) % 2048).collect()
}

/// Every walked index of `view` reaches the element `mapping.offset_of` names, inside `data`;
/// probes outside the extents give `None`.
fn check<const R: usize, L: SubLayout>(view: HostMdspan<'_, u32, Dims<R>, L>, data: &[u32], input: &Input)
where
    Dims<R>: Slices,
{
    let extents = view.extents().to_array();
    let extents = extents.as_ref();
    for index in walk(extents) {
        let index = index_of::<Dims<R>>(&index);
        let offset = view.mapping().offset_of(&index);
        assert!(offset < view.mapping().required_span_size());
        let at = (view.as_ptr() as usize - data.as_ptr() as usize) / 4 + offset;
        assert!(
            at < data.len(),
            "index {index:?} reaches element {at} of {}",
            data.len()
        );
        assert_eq!(view[index], at as u32);
        assert_eq!(view.as_aliased().load(index), at as u32);
    }
    for probe in input.probes.iter().take(16) {
        let index = index_of::<Dims<R>>(&probe[..R].iter().map(|&p| usize::from(p)).collect::<Vec<_>>());
        let inside = index.as_ref().iter().zip(extents).all(|(i, n)| i < n);
        assert_eq!(view.get(index).is_some(), inside);
        assert_eq!(view.try_load(index).is_some(), inside);
    }
    Dims::<R>::slices(view, input);
}

/// The ranges the input picks, one per dimension.
fn ranges(input: &Input) -> [Range<usize>; 4] {
    core::array::from_fn(|k| {
        let (a, b) = input.slices[k];
        usize::from(a % 10)..usize::from(b % 10)
    })
}

/// Checks each element a slice reaches against the parent's element at `parent(j)`.
macro_rules! compare {
    ($view:expr, $sub:expr, |$j:ident| $parent:expr) => {
        match $sub {
            Ok(sub) => {
                for $j in walk(sub.extents().to_array().as_ref()) {
                    let sj = core::array::from_fn(|k| $j[k]);
                    assert_eq!(sub[sj], $view[$parent], "slice index {:?}", $j);
                }
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    };
}

/// Slices a view of this rank with the input's ranges (or an index for the first dimension).
trait Slices: Sized + dlmd::Extents {
    fn slices<L: SubLayout>(view: HostMdspan<'_, u32, Self, L>, input: &Input);
}

impl Slices for Dims<0> {
    fn slices<L: SubLayout>(_: HostMdspan<'_, u32, Self, L>, _: &Input) {}
}

impl Slices for Dims<1> {
    fn slices<L: SubLayout>(view: HostMdspan<'_, u32, Self, L>, input: &Input) {
        let r = ranges(input);
        if input.drop_first {
            compare!(view, view.submdspan((r[0].start,)), |j| [r[0].start + 0 * j.len()]);
        } else {
            compare!(view, view.submdspan((r[0].clone(),)), |j| [r[0].start + j[0]]);
        }
    }
}

impl Slices for Dims<2> {
    fn slices<L: SubLayout>(view: HostMdspan<'_, u32, Self, L>, input: &Input) {
        let r = ranges(input);
        if input.drop_first {
            compare!(view, view.submdspan((r[0].start, r[1].clone())), |j| [
                r[0].start,
                r[1].start + j[0]
            ]);
        } else {
            compare!(view, view.submdspan((r[0].clone(), r[1].clone())), |j| [
                r[0].start + j[0],
                r[1].start + j[1]
            ]);
        }
    }
}

impl Slices for Dims<3> {
    fn slices<L: SubLayout>(view: HostMdspan<'_, u32, Self, L>, input: &Input) {
        let r = ranges(input);
        if input.drop_first {
            compare!(view, view.submdspan((r[0].start, r[1].clone(), ..)), |j| [
                r[0].start,
                r[1].start + j[0],
                j[1]
            ]);
        } else {
            compare!(view, view.submdspan((r[0].clone(), .., r[2].clone())), |j| [
                r[0].start + j[0],
                j[1],
                r[2].start + j[2]
            ]);
        }
    }
}

impl Slices for Dims<4> {
    fn slices<L: SubLayout>(view: HostMdspan<'_, u32, Self, L>, input: &Input) {
        let r = ranges(input);
        compare!(
            view,
            view.submdspan((.., r[1].clone(), r[2].start, r[3].start..)),
            |j| [j[0], r[1].start + j[1], r[2].start, r[3].start + j[2]]
        );
    }
}

fn with_rank<const R: usize>(input: &Input)
where
    Dims<R>: Slices,
{
    let data = data(input.len);
    let dims: [usize; R] = core::array::from_fn(|k| input.extents[k].get());
    let extents = Dims::new(dims);
    let mut strides = <<Dims<R> as Extents>::Index as IndexArray>::isize_zeros();
    for (k, s) in strides.as_mut().iter_mut().enumerate() {
        *s = input.strides[k].get();
    }
    match input.layout % 4 {
        0 => {
            if let Ok(m) = RightMapping::new(extents) {
                if let Ok(view) = HostMdspan::from_slice_mapping(&data, m) {
                    let via_macro = dlmd::__private::compact_view::<u32, Dims<R>, dlmd::LayoutRight>(
                        &data[..m.required_span_size()],
                        extents.to_array(),
                        None,
                    );
                    assert_eq!(via_macro.mapping(), view.mapping());
                    check::<R, dlmd::LayoutRight>(view, &data, input);
                }
            }
        }
        1 => {
            if let Ok(m) = LeftMapping::new(extents) {
                if let Ok(view) = HostMdspan::from_slice_mapping(&data, m) {
                    check::<R, dlmd::LayoutLeft>(view, &data, input);
                }
            }
        }
        2 => {
            let positive = index_of::<Dims<R>>(&strides.as_ref().iter().map(|s| s.unsigned_abs()).collect::<Vec<_>>());
            if let Ok(m) = StrideMapping::new(extents, positive) {
                if let Ok(view) = HostMdspan::from_slice_mapping(&data, m) {
                    let via_macro =
                        dlmd::__private::strided_view::<u32, Dims<R>>(&data, extents.to_array(), None, positive);
                    assert_eq!(via_macro.mapping(), view.mapping());
                    check::<R, dlmd::LayoutStride>(view, &data, input);
                }
            }
        }
        _ => {
            if let Ok(m) = RelaxedMapping::new(extents, strides, input.offset.get()) {
                if let Ok(view) = HostMdspan::from_slice_mapping(&data, m) {
                    check::<R, dlmd::LayoutStrideRelaxed>(view, &data, input);
                }
            }
        }
    }
}

dlmd_fuzz::fuzz_cases!(|input: Input| {
    match input.rank % 5 {
        0 => with_rank::<0>(&input),
        1 => with_rank::<1>(&input),
        2 => with_rank::<2>(&input),
        3 => with_rank::<3>(&input),
        _ => with_rank::<4>(&input),
    }
});
