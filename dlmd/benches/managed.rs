//! Owned exchange, against dlpark 0.10 doing the same work in the same run: export a `Vec<f32>`
//! of 1024 elements as a versioned managed tensor, import it back as a rank-1 view, read one
//! element, and release it (the deleter frees the `Vec`).
//!
//! Run with `cargo bench -p dlmd --bench managed`.

use criterion::{Criterion, criterion_group, criterion_main};
use dlmd::HostMdspanAliased;
use dlmd::dlpack::DLManagedTensorVersioned;
use dlmd::managed::{ManagedTensor, export};
use dlmd::{Dims, LayoutRight};
use std::hint::black_box;
use std::time::Duration;

fn dlmd_round_trip(data: Vec<f32>) -> f32 {
    let raw = export::<DLManagedTensorVersioned>(data, Dims::new([1024])).unwrap();
    // SAFETY: `raw` was just produced by dlmd and is handed over.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    let view = tensor
        .view::<HostMdspanAliased<'_, f32, Dims<1>, LayoutRight>>()
        .unwrap();
    view.load([1023])
}

fn dlpark_round_trip(mut data: Vec<f32>) -> f32 {
    use dlpark::ffi::{DLDataType, DLDataTypeCode, DLDevice, DLDeviceType};
    use dlpark::metadata::Fixed;
    let ptr = data.as_mut_ptr();
    let mut init = Fixed::<1, _, _>::new([1024i64], [1i64])
        .initialize(Box::new(data))
        .unwrap();
    init.set_data(ptr.cast())
        .set_dtype(DLDataType {
            code: DLDataTypeCode(2),
            bits: 32,
            lanes: 1,
        })
        .set_device(DLDevice {
            device_type: DLDeviceType(1),
            device_id: 0,
        });
    // SAFETY: the descriptor points at the `Vec` the context owns, with its shape and strides.
    let tensor: dlpark::versioned::Dlpack = unsafe { init.finish() };
    let view = tensor.validate().unwrap();
    // SAFETY: a CPU tensor of 1024 `f32`, alive while `tensor` is.
    let slice = unsafe { view.cpu_slice::<f32>() }.unwrap();
    slice[1023]
}

fn round_trip(c: &mut Criterion) {
    assert_eq!(dlmd_round_trip(vec![2.0; 1024]), 2.0);
    assert_eq!(dlpark_round_trip(vec![2.0; 1024]), 2.0);
    let mut group = c.benchmark_group("export+import Vec<f32> 1K versioned");
    group.bench_function("dlmd", |b| {
        b.iter_batched(
            || vec![1.0f32; 1024],
            |v| black_box(dlmd_round_trip(v)),
            criterion::BatchSize::SmallInput,
        )
    });
    group.bench_function("dlpark 0.10", |b| {
        b.iter_batched(
            || vec![1.0f32; 1024],
            |v| black_box(dlpark_round_trip(v)),
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! { name = benches; config = config(); targets = round_trip }
criterion_main!(benches);
