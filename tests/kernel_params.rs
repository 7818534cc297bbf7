//! Views cross to a kernel as `KernelParam::Param` and come back unchecked: the round trip
//! returns the same view (pointer, mapping, space) for every layout, static and dynamic extents
//! and each access a kernel takes. The views here sit over host memory labelled as device or
//! managed memory and are never read: what is checked is the parameter form, which Miri runs
//! through too.

use dlmd::kernel::{KernelParam, ViewParam};
use dlmd::layout::Layout;
use dlmd::layout::{LeftMapping, Mapping, RelaxedMapping, RightMapping, StrideMapping};
use dlmd::space::{Device, Managed, MemorySpace};
use dlmd::view::{Access, Atomic, Shared, Unique};
use dlmd::{Const, Dims, Dyn, Extents, Mdspan};

/// A view of `data` through `mapping` in `space`, never read.
fn view<'a, E: Extents, L: Layout, S: MemorySpace, A: Access>(
    data: &'a mut [f32],
    mapping: L::Mapping<E>,
    space: S,
) -> Mdspan<'a, f32, E, L, S, A> {
    assert!(mapping.required_span_size() <= data.len());
    // SAFETY: `data` holds the span; the view is only converted, never read or written, and
    // `data` is borrowed mutably for as long as it lives.
    unsafe { Mdspan::from_raw_parts(data.as_mut_ptr(), mapping, space) }
}

/// `to_param` then `from_param` gives back the view, and the parameter carries its parts.
fn round_trip<E, L, S, A, const R: usize>(original: Mdspan<'_, f32, E, L, S, A>)
where
    E: Extents<Index = [usize; R]>,
    L: Layout,
    S: dlmd::kernel::KernelSpace,
    A: dlmd::kernel::KernelAccess,
    for<'v> Mdspan<'v, f32, E, L, S, A>: KernelParam<Param = ViewParam<f32, R>>,
{
    let param = original.to_param();
    // Element `[0, …]`, as `view.cuh`'s `data`; the span starts `offset` elements before it.
    assert_eq!(
        param.data,
        original.data_handle().wrapping_add(original.mapping().offset())
    );
    assert_eq!(param.offset, original.mapping().offset() as i64);
    assert_eq!(param.extents, original.extents().to_array().map(|e| e as i64));
    assert_eq!(param.strides, original.mapping().strides().map(|s| s as i64));
    assert_eq!(param.span, original.mapping().required_span_size() as i64);
    assert_eq!(param.device, original.space().device().device_id);
    // SAFETY: `param` comes from `to_param` of `original`, whose memory outlives the result.
    let back = unsafe { <Mdspan<'_, f32, E, L, S, A> as KernelParam>::from_param(param) };
    assert_eq!(back.data_handle(), original.data_handle());
    assert_eq!(back.mapping(), original.mapping());
    assert_eq!(back.space(), original.space());
}

#[test]
fn every_layout_comes_back_as_it_went() {
    let mut data = vec![0.0f32; 256];
    let right = RightMapping::new(Dims::new([3, 4, 5])).unwrap();
    round_trip(view::<_, dlmd::LayoutRight, _, Shared>(
        &mut data,
        right,
        Device::new(1),
    ));
    let left = LeftMapping::new((Const::<3>, Dyn(7))).unwrap();
    round_trip(view::<_, dlmd::LayoutLeft, _, Unique>(&mut data, left, Device::new(0)));
    let stride = StrideMapping::new(Dims::new([3, 4, 5]), [1, 30, 3]).unwrap();
    round_trip(view::<_, dlmd::LayoutStride, _, Atomic>(
        &mut data,
        stride,
        Managed::new(2),
    ));
    let relaxed = RelaxedMapping::new(Dims::new([3, 4, 5]), [-20, 5, -1], 44).unwrap();
    round_trip(view::<_, dlmd::LayoutStrideRelaxed, _, Shared>(
        &mut data,
        relaxed,
        Device::new(3),
    ));
    let scalar = RightMapping::new(()).unwrap();
    round_trip(view::<_, dlmd::LayoutRight, _, Unique>(
        &mut data,
        scalar,
        Managed::new(0),
    ));
}

#[test]
fn device_views_name_their_device_and_managed_ones_none() {
    let mut data = vec![0.0f32; 8];
    let mapping = RightMapping::new(Dims::new([8])).unwrap();
    let device = view::<_, dlmd::LayoutRight, _, Shared>(&mut data, mapping, Device::new(5));
    assert_eq!(device.device_ordinal(), Some(5));
    let managed = view::<_, dlmd::LayoutRight, _, Shared>(&mut data, mapping, Managed::new(5));
    assert_eq!(managed.device_ordinal(), None);
    assert_eq!(2.5f32.to_param(), 2.5);
    assert_eq!(7u64.device_ordinal(), None);
}
