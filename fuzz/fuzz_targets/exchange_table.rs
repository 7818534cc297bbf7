//! DLPack's C exchange table, consumed through `dlmd::exchange` (what `dlmd::python`'s consumers
//! call once a type's table address is known): chains of tables of any versions linked through
//! `prev_api` (loops and dangling-free cycles among them), entries present or missing, and
//! entries that fail, return NULL, or hand over managed tensors of any version with any field
//! malformed. Oracles: the table found is the first of major version 1 within the chain limit,
//! with both required entries, or the newest table's version where none is; a loop is refused; an
//! entry's status is passed on; a foreign major version is released at once; every tensor handed
//! over is released exactly once; accepted views reach exactly the described bytes.
#![no_main]

use arbitrary::Arbitrary;
use dlmd::HostMdspanAliased;
use dlmd::dlpack::{
    DLDevice, DLDeviceType, DLManagedTensorVersioned, DLPackExchangeAPI, DLPackExchangeAPIHeader, DLPackVersion,
    DLTensor,
};
use dlmd::exchange::{EntryError, MAX_CHAIN, Resolved, TableError, export, lend, resolve, work_stream};
use dlmd::managed::ManagedError;
use dlmd::{Dims, LayoutStrideRelaxed, Mdspan, Shared};
use dlmd_fuzz::{Built, TensorFields, check_view, describe, inside};
use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};

#[derive(Arbitrary, Debug, Clone)]
struct Table {
    major: u8,
    minor: u8,
    /// The index (modulo the chain's length) of the table `prev_api` points to, or NULL.
    prev: Option<u8>,
    export: bool,
    lend: bool,
    stream: bool,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Answer {
    /// Fails with this status (0 becomes -1).
    Fail(i32),
    /// Returns 0 and NULL.
    Null,
    /// Returns 0 and a tensor.
    Tensor,
}

#[derive(Arbitrary, Debug)]
struct Input {
    tables: Vec<Table>,
    /// Which table's address is published.
    published: u8,
    export_answer: Answer,
    major: u8,
    lend_answer: Answer,
    stream_status: i32,
    stream: usize,
    device: (i32, i32),
    fields: TensorFields,
}

thread_local! {
    /// What the entries of this run's tables answer.
    static SCRIPT: RefCell<Option<Script>> = const { RefCell::new(None) };
    static DELETES: Cell<usize> = const { Cell::new(0) };
}

struct Script {
    export: Answer,
    lend: Answer,
    stream: (i32, usize),
    managed: *mut DLManagedTensorVersioned,
    tensor: DLTensor,
}

unsafe extern "C" fn delete(_: *mut DLManagedTensorVersioned) {
    DELETES.with(|d| d.set(d.get() + 1));
}

fn status(s: i32) -> c_int {
    if s == 0 { -1 } else { s }
}

unsafe extern "C" fn export_entry(_: *mut c_void, out: *mut *mut DLManagedTensorVersioned) -> c_int {
    SCRIPT.with_borrow(|s| {
        let s = s.as_ref().expect("a script");
        let (code, value) = match s.export {
            Answer::Fail(c) => (status(c), core::ptr::null_mut()),
            Answer::Null => (0, core::ptr::null_mut()),
            Answer::Tensor => (0, s.managed),
        };
        // SAFETY: `export` passes a writable pointer.
        unsafe { *out = value };
        code
    })
}

unsafe extern "C" fn lend_entry(_: *mut c_void, out: *mut DLTensor) -> c_int {
    SCRIPT.with_borrow(|s| {
        let s = s.as_ref().expect("a script");
        match s.lend {
            Answer::Fail(c) => status(c),
            Answer::Null | Answer::Tensor => {
                // SAFETY: `lend` passes a writable tensor.
                unsafe { *out = s.tensor };
                0
            }
        }
    })
}

unsafe extern "C" fn stream_entry(_: DLDeviceType, _: i32, out: *mut *mut c_void) -> c_int {
    SCRIPT.with_borrow(|s| {
        let (code, stream) = s.as_ref().expect("a script").stream;
        // SAFETY: `work_stream` passes a writable pointer.
        unsafe { *out = stream as *mut c_void };
        code
    })
}

/// What `resolve` must answer for the chain, walked here by index.
fn expected(tables: &[Table], published: usize) -> Result<(usize, Option<DLPackVersion>), TableError> {
    let mut at = published;
    for _ in 0..MAX_CHAIN {
        let t = &tables[at];
        if t.major == 1 {
            if !t.export {
                return Err(TableError::MissingEntry("managed_tensor_from_py_object_no_sync"));
            }
            if !t.stream {
                return Err(TableError::MissingEntry("current_work_stream"));
            }
            return Ok((at, None));
        }
        match t.prev {
            None => {
                let newest = &tables[published];
                return Ok((
                    published,
                    Some(DLPackVersion {
                        major: u32::from(newest.major),
                        minor: u32::from(newest.minor),
                    }),
                ));
            }
            Some(p) => at = usize::from(p) % tables.len(),
        }
    }
    Err(TableError::Loop)
}

fn views(tensor: &DLTensor, built: &Built) {
    let d = describe(built, 2, 4);
    // SAFETY: the tensor points into `built`, alive for the view, with 8 shape and stride values.
    if let Ok(view) = unsafe { Mdspan::<f32, Dims<2>, LayoutStrideRelaxed, dlmd::Host, Shared>::from_dlpack(tensor) } {
        let d = d.expect("accepted a tensor the importer must refuse");
        check_view(&view, built, &d);
        if inside(built, &d) {
            let _ = view.iter().take(dlmd_fuzz::MAX_WALK).count();
        }
    }
}

dlmd_fuzz::fuzz_cases!(|input: Input| {
    if input.tables.is_empty() || input.tables.len() > 40 {
        return;
    }
    let mut tables: Vec<Box<DLPackExchangeAPI>> = input
        .tables
        .iter()
        .map(|t| {
            Box::new(DLPackExchangeAPI {
                header: DLPackExchangeAPIHeader {
                    version: DLPackVersion {
                        major: u32::from(t.major % 3),
                        minor: u32::from(t.minor),
                    },
                    prev_api: core::ptr::null_mut(),
                },
                managed_tensor_allocator: None,
                managed_tensor_from_py_object_no_sync: t.export.then_some(export_entry as _),
                managed_tensor_to_py_object_no_sync: None,
                dltensor_from_py_object_no_sync: t.lend.then_some(lend_entry as _),
                current_work_stream: t.stream.then_some(stream_entry as _),
            })
        })
        .collect();
    let addresses: Vec<*mut DLPackExchangeAPIHeader> = tables
        .iter_mut()
        .map(|t| (&mut **t as *mut DLPackExchangeAPI).cast())
        .collect();
    for (table, t) in tables.iter_mut().zip(&input.tables) {
        table.header.prev_api = t
            .prev
            .map_or(core::ptr::null_mut(), |p| addresses[usize::from(p) % addresses.len()]);
    }
    let model: Vec<Table> = input
        .tables
        .iter()
        .map(|t| Table {
            major: t.major % 3,
            ..t.clone()
        })
        .collect();
    let published = usize::from(input.published) % tables.len();

    // SAFETY: every address and link is a table boxed above, alive for the run.
    let found = unsafe { resolve(addresses[published]) };
    let api = match (found, expected(&model, published)) {
        (Ok(Resolved::Usable(api)), Ok((at, None))) => {
            assert_eq!(
                api as *const DLPackExchangeAPI as usize, addresses[at] as usize,
                "another table found"
            );
            api
        }
        (Ok(Resolved::Unknown(v)), Ok((_, Some(w)))) => {
            assert_eq!(v, w, "the unknown table's version");
            return;
        }
        (Err(e), Err(f)) => {
            assert_eq!(e, f);
            return;
        }
        (got, want) => panic!("resolve gave {got:?}, expected {want:?}"),
    };

    let built = input.fields.build::<f32>(2, DLDeviceType::CPU);
    let mut managed = Box::new(DLManagedTensorVersioned {
        version: DLPackVersion {
            major: u32::from(input.major % 3),
            minor: 3,
        },
        manager_ctx: core::ptr::null_mut(),
        deleter: Some(delete),
        flags: 0,
        dl_tensor: built.tensor,
    });
    SCRIPT.set(Some(Script {
        export: input.export_answer,
        lend: input.lend_answer,
        stream: (input.stream_status, input.stream),
        managed: &mut *managed,
        tensor: built.tensor,
    }));
    DELETES.set(0);

    // SAFETY: `api` came from `resolve`; its entries ignore the object and hand over `managed`,
    // whose tensor points into `built`, alive for the run.
    match unsafe { export(api, core::ptr::null_mut()) } {
        Ok(tensor) => {
            assert!(matches!(input.export_answer, Answer::Tensor) && input.major % 3 == 1);
            // SAFETY: as above: `tensor` describes `built`.
            if let Ok(view) = tensor.view::<HostMdspanAliased<'_, f32, Dims<2>, LayoutStrideRelaxed>>() {
                let d = describe(&built, 2, 4).expect("accepted a tensor the importer must refuse");
                check_view(&view, &built, &d);
            }
            assert_eq!(DELETES.get(), 0, "released while held");
            drop(tensor);
            assert_eq!(DELETES.get(), 1, "not released exactly once");
        }
        Err(EntryError::Status { status: s, .. }) => {
            assert!(matches!(input.export_answer, Answer::Fail(c) if status(c) == s));
        }
        Err(EntryError::NoTensor) => assert!(matches!(input.export_answer, Answer::Null)),
        Err(EntryError::Managed(ManagedError::Version { major })) => {
            assert!(matches!(input.export_answer, Answer::Tensor));
            assert_eq!(major, u32::from(input.major % 3));
            assert_ne!(major, 1);
            assert_eq!(DELETES.get(), 1, "a foreign major version not released at once");
        }
        Err(e) => panic!("export refused with {e}"),
    }

    // SAFETY: as above.
    match unsafe { lend(api, core::ptr::null_mut()) } {
        None => assert!(api.dltensor_from_py_object_no_sync.is_none()),
        Some(Ok(tensor)) => {
            assert!(!matches!(input.lend_answer, Answer::Fail(_)));
            views(&tensor, &built);
        }
        Some(Err(EntryError::Status { status: s, .. })) => {
            assert!(matches!(input.lend_answer, Answer::Fail(c) if status(c) == s));
        }
        Some(Err(e)) => panic!("lend refused with {e}"),
    }

    let device = DLDevice {
        device_type: DLDeviceType(input.device.0),
        device_id: input.device.1,
    };
    // SAFETY: as above.
    match unsafe { work_stream(api, device) } {
        Ok(stream) if device.device_type == DLDeviceType::CPU => assert!(stream.is_default()),
        Ok(stream) => {
            assert_eq!(input.stream_status, 0);
            assert_eq!(stream.handle() as usize, input.stream);
        }
        Err(EntryError::Status { status: s, .. }) => {
            assert_ne!(device.device_type, DLDeviceType::CPU);
            assert_eq!(s, input.stream_status);
            assert_ne!(s, 0);
        }
        Err(e) => panic!("work_stream refused with {e}"),
    }
    SCRIPT.set(None);
    drop(managed);
});
