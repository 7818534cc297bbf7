//! oneAPI tensors (`kDLOneAPI`, any field malformed) imported as opaque views and placed with
//! `dlmd::oneapi::place_with`, asking a runtime that answers as the fuzzer says: any number of
//! root devices, any USM kind and root position per device, or no answer. Oracles: an empty view
//! is placed on the host without asking the runtime; otherwise a device id off the runtime's
//! devices, an address its context does not know, or an allocation of another device is each
//! its own error; device USM stays opaque; host and shared USM become a host view of the same
//! elements, whose `bool` bytes were checked, reaching exactly the described bytes.
#![no_main]

use arbitrary::Arbitrary;
use dlmd::dlpack::{DLDataTypeCode, DLDeviceType};
use dlmd::layout::Layout;
use dlmd::oneapi::{OneApiError, Placed, UsmKind, UsmRuntime, place_with};
use dlmd::space::{OneApi, Opaque};
use dlmd::view::Access;
use dlmd::{Dims, DlElement, LayoutLeft, LayoutRight, LayoutStride, LayoutStrideRelaxed, Mdspan, Shared, Unique};
use dlmd_fuzz::{TensorFields, check_view, describe, inside, walk};
use std::cell::Cell;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Kind {
    Device,
    Shared,
    Host,
}

#[derive(Arbitrary, Debug)]
struct Input {
    rank: u8,
    layout: u8,
    element: u8,
    mutable: bool,
    devices: u8,
    /// Per root device: what its platform's default context says of the address.
    answers: Vec<Option<(Kind, i8)>>,
    fields: TensorFields,
}

/// Answers as the input says, and counts the lookups.
struct Told<'a> {
    input: &'a Input,
    asked: Cell<usize>,
}

impl Told<'_> {
    fn answer(&self, index: usize) -> Option<(UsmKind, i32)> {
        let answer = self.input.answers.get(index).copied().flatten()?;
        let kind = match answer.0 {
            Kind::Device => UsmKind::Device,
            Kind::Shared => UsmKind::Shared,
            Kind::Host => UsmKind::Host,
        };
        Some((kind, i32::from(answer.1)))
    }
}

// SAFETY: the target places only tensors whose every described byte lies in its own host
// buffer (checked before `place_with` is called), which the host may read and write whatever
// kind is claimed.
unsafe impl UsmRuntime for Told<'_> {
    fn device_count(&self) -> usize {
        usize::from(self.input.devices % 5)
    }

    fn lookup(&self, _address: usize, index: usize) -> Option<(UsmKind, i32)> {
        assert!(
            index < self.device_count(),
            "asked about device {index} of {}",
            self.device_count()
        );
        self.asked.set(self.asked.get() + 1);
        self.answer(index)
    }
}

fn run<T, const R: usize, L, A>(input: &Input)
where
    T: DlElement,
    T::Storage: dlmd::dtype::PlainStorage,
    L: Layout,
    A: Access,
{
    let built = input.fields.build::<T>(R, DLDeviceType::ONE_API);
    // SAFETY: the tensor points into `built`, alive for the view; an opaque import reads nothing.
    let Ok(view) = (unsafe { Mdspan::<T, Dims<R>, L, Opaque<OneApi>, A>::from_dlpack(&built.tensor) }) else {
        return;
    };
    let size = size_of::<T>();
    let d = describe(&built, R, size).expect("an opaque import accepted a tensor it must refuse");
    if !inside(&built, &d) {
        // A runtime that calls memory outside the buffer host memory would break its contract.
        return;
    }
    let (id, empty, ptr) = (view.space().id(), view.is_empty(), view.as_ptr());
    let runtime = Told {
        input,
        asked: Cell::new(0),
    };
    let count = runtime.device_count();
    let expected = usize::try_from(id)
        .ok()
        .filter(|&i| i < count)
        .map(|i| runtime.answer(i));
    let result = place_with(&runtime, view);
    if empty {
        assert_eq!(runtime.asked.get(), 0, "the runtime was asked about an empty view");
        assert!(
            matches!(result, Ok(Placed::Host(_, None))),
            "an empty view was not placed on the host"
        );
        return;
    }
    match result {
        Err(OneApiError::NoDevice { id: i, count: c }) => {
            assert_eq!((i, c), (id, count));
            assert!(expected.is_none(), "device {id} of {count} refused as missing");
        }
        Err(OneApiError::UnknownPointer { id: i }) => {
            assert_eq!(i, id);
            assert_eq!(expected, Some(None), "an address the runtime knows refused as unknown");
        }
        Err(OneApiError::WrongDevice { labelled, actual }) => {
            assert_eq!(labelled, id);
            assert!(matches!(expected, Some(Some((_, a))) if a == actual && a != id));
        }
        Err(OneApiError::Import(e)) => {
            assert_eq!(
                T::DTYPE.code,
                DLDataTypeCode::BOOL.0,
                "refused {e} for a non-bool element"
            );
            assert!(matches!(expected, Some(Some((k, a))) if a == id && k.host_accessible()));
            let start = built.start() as i128;
            let extents: Vec<usize> = d.extents.iter().map(|&n| n as usize).collect();
            let bad = walk(&extents).any(|index| {
                let at = (d.address(&index, size) - start) as usize;
                built.bytes()[at..at + size].iter().any(|&b| b > 1)
            });
            // Beyond the walked indices a bad byte may hide: only a clean walk of every index
            // would contradict the refusal, and the walk covers every index of small views.
            if d.extents.iter().map(|&n| n as u128).product::<u128>() <= dlmd_fuzz::MAX_WALK as u128 {
                assert!(bad, "bool bytes 0 and 1 refused");
            }
        }
        Err(e) => panic!("refused with {e}"),
        Ok(Placed::Device(v)) => {
            assert_eq!(expected, Some(Some((UsmKind::Device, id))));
            assert_eq!(v.as_ptr(), ptr);
        }
        Ok(Placed::Host(v, kind)) => {
            let Some(Some((k, a))) = expected else {
                panic!("placed on the host without the runtime's word")
            };
            assert!(k.host_accessible() && a == id && kind == Some(k));
            assert_eq!(v.as_ptr(), ptr);
            check_view(&v, &built, &d);
            if T::DTYPE.code == DLDataTypeCode::BOOL.0 {
                let start = built.start() as i128;
                let extents: Vec<usize> = d.extents.iter().map(|&n| n as usize).collect();
                for index in walk(&extents) {
                    let at = (d.address(&index, size) - start) as usize;
                    assert!(
                        built.bytes()[at..at + size].iter().all(|&b| b <= 1),
                        "a bool byte > 1 placed on the host"
                    );
                }
            }
        }
    }
}

fn with_access<T, const R: usize, L>(input: &Input)
where
    T: DlElement,
    T::Storage: dlmd::dtype::PlainStorage,
    L: Layout,
{
    match input.mutable {
        true => run::<T, R, L, Unique>(input),
        false => run::<T, R, L, Shared>(input),
    }
}

fn with_layout<T, const R: usize>(input: &Input)
where
    T: DlElement,
    T::Storage: dlmd::dtype::PlainStorage,
{
    match input.layout % 4 {
        0 => with_access::<T, R, LayoutRight>(input),
        1 => with_access::<T, R, LayoutLeft>(input),
        2 => with_access::<T, R, LayoutStride>(input),
        _ => with_access::<T, R, LayoutStrideRelaxed>(input),
    }
}

fn with_rank<T>(input: &Input)
where
    T: DlElement,
    T::Storage: dlmd::dtype::PlainStorage,
{
    match input.rank % 4 {
        0 => with_layout::<T, 0>(input),
        1 => with_layout::<T, 1>(input),
        2 => with_layout::<T, 2>(input),
        _ => with_layout::<T, 3>(input),
    }
}

dlmd_fuzz::fuzz_cases!(|input: Input| {
    match input.element % 3 {
        0 => with_rank::<bool>(&input),
        1 => with_rank::<u16>(&input),
        _ => with_rank::<f64>(&input),
    }
});
