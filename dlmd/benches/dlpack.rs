//! Nanoseconds per call of the DLPack conversions: view → `DLTensor` (export and `get()`),
//! `DLTensor` → view (import), and an import that fails its last check.
//!
//! Run with `cargo bench -p dlmd --bench dlpack`. The C++ reference is CCCL's
//! `cuda::to_dlpack_tensor` / `cuda::to_host_mdspan` doing the same work.

use criterion::{Criterion, criterion_group, criterion_main};
use dlmd::HostMdspanMut;
use dlmd::dlpack::DLTensor;
use dlmd::layout::StrideMapping;
use dlmd::{Dims, HostMdspan, LayoutRight, LayoutStride, to_dlpack_tensor};
use std::hint::black_box;
use std::time::Duration;

type Views<'a> = (
    HostMdspan<'a, f32, Dims<2>>,
    HostMdspan<'a, f32, Dims<4>>,
    HostMdspan<'a, f32, Dims<4>, LayoutStride>,
);

/// The three views measured: rank 2 and 4 row-major, and rank 4 strided (every other column).
fn views(data: &[f32]) -> Views<'_> {
    let r2 = HostMdspan::from_slice(data, Dims::new([64, 256])).unwrap();
    let r4 = HostMdspan::from_slice(data, Dims::new([4, 8, 16, 32])).unwrap();
    let stride = StrideMapping::new(Dims::new([4, 8, 16, 16]), [4096, 512, 32, 2]).unwrap();
    let s4 = HostMdspan::from_slice_mapping(data, stride).unwrap();
    (r2, r4, s4)
}

fn export(c: &mut Criterion) {
    let data = vec![0f32; 4 * 8 * 16 * 32];
    let (r2, r4, s4) = views(&data);
    let mut group = c.benchmark_group("export+get");
    group.bench_function("rank2 layout_right", |b| {
        b.iter(|| *to_dlpack_tensor(black_box(&r2)).get())
    });
    group.bench_function("rank4 layout_right", |b| {
        b.iter(|| *to_dlpack_tensor(black_box(&r4)).get())
    });
    group.bench_function("rank4 layout_stride", |b| {
        b.iter(|| *to_dlpack_tensor(black_box(&s4)).get())
    });
    group.finish();
}

fn import(c: &mut Criterion) {
    let data = vec![0f32; 4 * 8 * 16 * 32];
    let (r2, r4, s4) = views(&data);
    let (d2, d4, ds4) = (to_dlpack_tensor(&r2), to_dlpack_tensor(&r4), to_dlpack_tensor(&s4));
    let (t2, t4, ts4) = (d2.get(), d4.get(), ds4.get());
    let mut group = c.benchmark_group("import");
    group.bench_function("rank2 layout_right", |b| {
        // SAFETY: each tensor describes `data`, alive and unwritten during the benchmark.
        b.iter(|| unsafe { HostMdspan::<f32, Dims<2>, LayoutRight>::from_dlpack(black_box(&t2)) }.map(|v| v.as_ptr()))
    });
    group.bench_function("rank4 layout_right", |b| {
        // SAFETY: as above.
        b.iter(|| unsafe { HostMdspan::<f32, Dims<4>, LayoutRight>::from_dlpack(black_box(&t4)) }.map(|v| v.as_ptr()))
    });
    group.bench_function("rank4 layout_stride", |b| {
        // SAFETY: as above.
        b.iter(|| unsafe { HostMdspan::<f32, Dims<4>, LayoutStride>::from_dlpack(black_box(&ts4)) }.map(|v| v.as_ptr()))
    });
    group.bench_function("rank4 layout_stride mutable", |b| {
        b.iter(|| {
            // SAFETY: as above; the mutable view is dropped at once and never written.
            unsafe { HostMdspanMut::<f32, Dims<4>, LayoutStride>::from_dlpack(black_box(&ts4)) }.map(|v| v.as_ptr())
        })
    });
    group.finish();

    // The error path: a strided tensor imported as layout_right fails the last check.
    let strided: DLTensor = *ts4;
    let mut group = c.benchmark_group("import error");
    group.bench_function("rank4 stride mismatch", |b| {
        b.iter(|| {
            // SAFETY: as above; the import fails before any data access.
            unsafe { HostMdspan::<f32, Dims<4>, LayoutRight>::from_dlpack(black_box(&strided)) }.map(|v| v.as_ptr())
        })
    });
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! { name = benches; config = config(); targets = export, import }
criterion_main!(benches);
