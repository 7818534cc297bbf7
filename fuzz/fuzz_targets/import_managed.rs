//! Managed tensors, versioned and legacy, with any version, flags and tensor fields, viewed as
//! the safe `ManagedTensor` API allows (shared and mutable, ranks 0–4, every layout, FP4 padded
//! elements among them). Oracles: the deleter runs exactly once (at once for a foreign major
//! version, else on drop); `READ_ONLY` refuses mutable views; FP4 needs `IS_SUBBYTE_TYPE_PADDED`
//! in a versioned tensor; accepted views reach exactly the described bytes.
#![no_main]

use arbitrary::Arbitrary;
use dlmd::dlpack::{
    DLDataTypeCode, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, IS_SUBBYTE_TYPE_PADDED,
    READ_ONLY,
};
use dlmd::layout::Layout;
use dlmd::managed::{ManagedError, ManagedTensor};
use dlmd::{Dims, HostMdspanAliased, HostMdspanAliasedMut};
use dlmd::{DlElement, Extents, F4E2M1FN, ImportError, LayoutLeft, LayoutRight, LayoutStride, LayoutStrideRelaxed};
use dlmd_fuzz::{Built, TensorFields, check_view, describe, inside};
use std::cell::Cell;

#[derive(Arbitrary, Debug)]
struct Input {
    versioned: bool,
    major: u8,
    minor: u8,
    flags: u64,
    deleter: bool,
    rank: u8,
    layout: u8,
    element: u8,
    views: Vec<bool>,
    fields: TensorFields,
}

thread_local! {
    static DELETES: Cell<usize> = const { Cell::new(0) };
}

unsafe extern "C" fn delete_versioned(_: *mut DLManagedTensorVersioned) {
    DELETES.with(|d| d.set(d.get() + 1));
}

unsafe extern "C" fn delete_legacy(_: *mut DLManagedTensor) {
    DELETES.with(|d| d.set(d.get() + 1));
}

fn views<T: DlElement, const R: usize, L: Layout>(tensor: &mut ManagedTensor, input: &Input, built: &Built) {
    let padded_ok = !<T::Storage as dlmd::ElementStorage>::IS_SUBBYTE_PADDED
        || (input.versioned && tensor.flags() & IS_SUBBYTE_TYPE_PADDED != 0);
    let described = describe(built, R, size_of::<T>());
    for &mutable in input.views.iter().take(4) {
        if mutable {
            match tensor.view_mut::<HostMdspanAliasedMut<'_, T, Dims<R>, L>>() {
                Ok(view) => {
                    assert!(!tensor_read_only(input), "a READ_ONLY tensor gave a mutable view");
                    assert!(padded_ok, "FP4 accepted without IS_SUBBYTE_TYPE_PADDED");
                    let d = described.as_ref().expect("accepted a tensor the importer must refuse");
                    check_view(&view, built, d);
                    if inside(built, d) {
                        if let Some(last) = dlmd_fuzz::walk(view.extents().to_array().as_ref()).last() {
                            let index = dlmd_fuzz::index_of::<dlmd::Dims<R>>(&last);
                            let x = view.load(index);
                            view.store(index, x);
                        }
                    }
                }
                Err(ImportError::ReadOnly) => assert!(tensor_read_only(input)),
                Err(e) => assert!(!e.to_string().is_empty()),
            }
        } else {
            match tensor.view::<HostMdspanAliased<'_, T, Dims<R>, L>>() {
                Ok(view) => {
                    assert!(padded_ok, "FP4 accepted without IS_SUBBYTE_TYPE_PADDED");
                    let d = described.as_ref().expect("accepted a tensor the importer must refuse");
                    check_view(&view, built, d);
                    if inside(built, d) {
                        let n = view.values().take(dlmd_fuzz::MAX_WALK).count();
                        assert!(d.empty || n > 0);
                    }
                }
                Err(e) => assert!(!e.to_string().is_empty()),
            }
        }
    }
}

fn tensor_read_only(input: &Input) -> bool {
    input.versioned && input.flags & READ_ONLY != 0
}

fn run<T: DlElement, const R: usize, L: Layout>(input: &Input) {
    let built = input.fields.build::<T>(R, DLDeviceType::CPU);
    if let Some(d) = describe(&built, R, size_of::<T>()) {
        // Outside the buffer the tensor breaks `from_raw_*`'s contract; dlmd reads the bytes
        // of `bool` elements.
        if !inside(&built, &d) && T::DTYPE.code == DLDataTypeCode::BOOL.0 {
            return;
        }
    }
    DELETES.with(|d| d.set(0));
    let result = if input.versioned {
        let mut managed = Box::new(DLManagedTensorVersioned {
            version: DLPackVersion {
                major: u32::from(input.major % 3),
                minor: u32::from(input.minor),
            },
            manager_ctx: core::ptr::null_mut(),
            deleter: input.deleter.then_some(delete_versioned as _),
            flags: input.flags,
            dl_tensor: built.tensor,
        });
        let major = managed.version.major;
        // SAFETY: `managed` and what it points into live until the end of this function; the
        // deleter only counts.
        let result = unsafe { ManagedTensor::from_raw(&mut *managed) };
        if major != 1 {
            assert!(matches!(result, Err(ManagedError::Version { .. })));
            assert_eq!(DELETES.with(Cell::get), usize::from(input.deleter));
            return;
        }
        result.map(|t| (t, Some(managed), None))
    } else {
        let mut managed = Box::new(DLManagedTensor {
            dl_tensor: built.tensor,
            manager_ctx: core::ptr::null_mut(),
            deleter: input.deleter.then_some(delete_legacy as _),
        });
        // SAFETY: as above.
        unsafe { ManagedTensor::from_raw(&mut *managed) }.map(|t| (t, None, Some(managed)))
    };
    let (mut tensor, versioned, legacy) = result.expect("a non-NULL tensor of major version 1 is taken");
    views::<T, R, L>(&mut tensor, input, &built);
    assert_eq!(DELETES.with(Cell::get), 0, "the deleter ran while the tensor was owned");
    drop(tensor);
    assert_eq!(
        DELETES.with(Cell::get),
        usize::from(input.deleter),
        "the deleter ran other than once"
    );
    drop((versioned, legacy));
}

fn with_layout<T: DlElement, const R: usize>(input: &Input) {
    match input.layout % 4 {
        0 => run::<T, R, LayoutRight>(input),
        1 => run::<T, R, LayoutLeft>(input),
        2 => run::<T, R, LayoutStride>(input),
        _ => run::<T, R, LayoutStrideRelaxed>(input),
    }
}

fn with_rank<T: DlElement>(input: &Input) {
    match input.rank % 5 {
        0 => with_layout::<T, 0>(input),
        1 => with_layout::<T, 1>(input),
        2 => with_layout::<T, 2>(input),
        3 => with_layout::<T, 3>(input),
        _ => with_layout::<T, 4>(input),
    }
}

dlmd_fuzz::fuzz_cases!(|input: Input| {
    match input.element % 4 {
        0 => with_rank::<i16>(&input),
        1 => with_rank::<bool>(&input),
        2 => with_rank::<F4E2M1FN>(&input),
        _ => with_rank::<f64>(&input),
    }
});
