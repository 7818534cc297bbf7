//! `DLTensor` → view: every rank 0–8, every layout, host/device/managed spaces, shared and
//! mutable access, four element types, and any field malformed. An accepted view must reach
//! exactly the described bytes, inside the target's buffer; a refused one must name a reason,
//! and tensors the importer must refuse (wrong data type, NULL data with elements, misaligned,
//! a byte offset off the element size, NULL strides of DLPack ≥ 1.2, aliasing mutable views)
//! must be refused.
#![no_main]

use arbitrary::Arbitrary;
use dlmd::dlpack::{DLDataTypeCode, DLDeviceType};
use dlmd::layout::Layout;
use dlmd::space::MemorySpace;
use dlmd::view::Access;
use dlmd::{
    Device, Dims, DlElement, Host, LayoutLeft, LayoutRight, LayoutStride, LayoutStrideRelaxed, Managed, Mdspan,
};
use dlmd::{Shared, Unique};
use dlmd_fuzz::{Built, TensorFields, check_view, describe, inside, version, walk};

#[derive(Arbitrary, Debug)]
struct Input {
    rank: u8,
    layout: u8,
    space: u8,
    mutable: bool,
    element: u8,
    version: Option<(u8, u8)>,
    fields: TensorFields,
}

fn run<T, const R: usize, L, S, A>(input: &Input, device_type: DLDeviceType)
where
    T: DlElement,
    T::Storage: dlmd::dtype::PlainStorage,
    L: Layout,
    S: MemorySpace,
    A: Access,
{
    let built: Box<Built> = input.fields.build::<T>(R, device_type);
    let t = &built.tensor;
    let size = size_of::<T>();
    let described = describe(&built, R, size);
    let is_bool = T::DTYPE.code == DLDataTypeCode::BOOL.0;
    if let Some(d) = &described {
        // Outside the buffer the tensor breaks the importer's contract: fine only while dlmd
        // reads nothing, which it does for `bool` elements of host-readable memory.
        if !inside(&built, d) && S::HOST_READABLE && is_bool {
            return;
        }
    }
    let version = version(input.version);
    // SAFETY: `t` points into `built`, alive for the view; its shape and strides hold 8 values;
    // where dlmd may read elements, they lie inside the buffer (checked above).
    let result = unsafe { Mdspan::<T, Dims<R>, L, S, A>::from_dlpack_with_version(t, version) };
    let view = match result {
        Ok(view) => view,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    let d = described.expect("accepted a tensor with a wrong ndim, a NULL shape or a negative extent");
    assert_eq!(t.dtype, T::DTYPE, "accepted another data type");
    assert_eq!(
        t.byte_offset % size as u64,
        0,
        "accepted a byte offset off the element size"
    );
    if !d.empty {
        assert!(!t.data.is_null(), "accepted NULL data with elements");
        assert_eq!(d.element0 % align_of::<T>() as i128, 0, "accepted a misaligned tensor");
    }
    if R > 0 && t.strides.is_null() {
        assert!(
            version.is_none_or(|v| (v.major, v.minor) < (1, 2)),
            "accepted NULL strides from DLPack {version:?}"
        );
    }
    check_view(&view, &built, &d);
    if is_bool && S::HOST_READABLE && inside(&built, &d) {
        let start = built.start() as i128;
        let extents: Vec<usize> = d.extents.iter().map(|&n| n as usize).collect();
        for index in walk(&extents) {
            let at = (d.address(&index, size) - start) as usize;
            for &b in &built.bytes()[at..at + size] {
                assert!(b <= 1, "accepted a bool byte {b}");
            }
        }
    }
}

fn with_access<T, const R: usize, L, S>(input: &Input, device_type: DLDeviceType)
where
    T: DlElement,
    T::Storage: dlmd::dtype::PlainStorage,
    L: Layout,
    S: MemorySpace,
{
    if input.mutable {
        run::<T, R, L, S, Unique>(input, device_type)
    } else {
        run::<T, R, L, S, Shared>(input, device_type)
    }
}

fn with_space<T, const R: usize, L>(input: &Input)
where
    T: DlElement,
    T::Storage: dlmd::dtype::PlainStorage,
    L: Layout,
{
    match input.space % 4 {
        0 => with_access::<T, R, L, Host>(input, DLDeviceType::CPU),
        1 => with_access::<T, R, L, Host>(input, DLDeviceType::CUDA_HOST),
        2 => with_access::<T, R, L, Device>(input, DLDeviceType::CUDA),
        _ => with_access::<T, R, L, Managed>(input, DLDeviceType::CUDA_MANAGED),
    }
}

fn with_layout<T, const R: usize>(input: &Input)
where
    T: DlElement,
    T::Storage: dlmd::dtype::PlainStorage,
{
    match input.layout % 4 {
        0 => with_space::<T, R, LayoutRight>(input),
        1 => with_space::<T, R, LayoutLeft>(input),
        2 => with_space::<T, R, LayoutStride>(input),
        _ => with_space::<T, R, LayoutStrideRelaxed>(input),
    }
}

fn with_rank<T>(input: &Input)
where
    T: DlElement,
    T::Storage: dlmd::dtype::PlainStorage,
{
    match input.rank % 9 {
        0 => with_layout::<T, 0>(input),
        1 => with_layout::<T, 1>(input),
        2 => with_layout::<T, 2>(input),
        3 => with_layout::<T, 3>(input),
        4 => with_layout::<T, 4>(input),
        5 => with_layout::<T, 5>(input),
        6 => with_layout::<T, 6>(input),
        7 => with_layout::<T, 7>(input),
        _ => with_layout::<T, 8>(input),
    }
}

dlmd_fuzz::fuzz_cases!(|input: Input| {
    match input.element % 4 {
        0 => with_rank::<u8>(&input),
        1 => with_rank::<bool>(&input),
        2 => with_rank::<f32>(&input),
        _ => with_rank::<[f64; 2]>(&input),
    }
});
