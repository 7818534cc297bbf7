//! dlmd's side of the comparison with CCCL (`benches/cccl/dlpack_cccl.cpp`): the same cases,
//! timed by the same method (the median of 21 samples, each the mean of a fixed number of
//! calls), printed in the same form, "<group>/<case> <median ns per call>", so that
//! `scripts/bench-cccl.sh` can run both sides in alternation and divide.
//!
//! As in the C++ program, each result is kept observable by letting its address escape.

use dlmd::dlpack::DLTensor;
use dlmd::layout::StrideMapping;
use dlmd::{Dims, HostMdspan, LayoutRight, LayoutStride, to_dlpack_tensor};
use std::hint::black_box;
use std::time::Instant;

/// The median over 21 samples of the mean time of one call, in nanoseconds.
fn median_ns(iterations: u32, mut f: impl FnMut()) -> f64 {
    let mut samples: Vec<f64> = (0..21)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iterations {
                f();
            }
            start.elapsed().as_nanos() as f64 / f64::from(iterations)
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn report(name: &str, ns: f64) {
    println!("{name} {ns:.3}");
}

/// Keeps a value observable without copying it: its address escapes, as with the C++ side's
/// `keep`, an empty `asm volatile` taking `&value`. An import keeps its whole `Result`: the view
/// when it succeeds (C++: `keep(md)`), the error when it fails (C++: `keep(e)` in the `catch`).
#[inline(always)]
fn keep<T>(value: &T) {
    black_box(value);
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument is a name filter, as for criterion.
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let wanted = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    // Each case's closure is timed by a `median_ns` monomorphised for it, so that it is inlined
    // into the timing loop as the C++ lambdas are.
    macro_rules! case {
        ($name:literal, $iterations:expr, $body:expr) => {
            if wanted($name) {
                report($name, median_ns($iterations, || $body));
            }
        };
    }
    let fast = 2_000_000;
    // The C++ error path throws and catches an exception (about a microsecond): fewer calls keep
    // each sample near the others' length.
    let slow = 20_000;

    let data = vec![0f32; 4 * 8 * 16 * 32];
    let r2: HostMdspan<'_, f32, Dims<2>> = HostMdspan::from_slice(&data[..], Dims::new([64, 256])).unwrap();
    let r4: HostMdspan<'_, f32, Dims<4>> = HostMdspan::from_slice(&data[..], Dims::new([4, 8, 16, 32])).unwrap();
    let stride = StrideMapping::new(Dims::new([4, 8, 16, 16]), [4096, 512, 32, 2]).unwrap();
    let s4: HostMdspan<'_, f32, Dims<4>, LayoutStride> = HostMdspan::from_slice_mapping(&data[..], stride).unwrap();
    let (p2, p4, ps4) = (black_box(&r2), black_box(&r4), black_box(&s4));

    case!("export+get/rank2 layout_right", fast, {
        let dl = to_dlpack_tensor(black_box(p2));
        let t: DLTensor = *dl.get();
        keep(&t);
    });
    case!("export+get/rank4 layout_right", fast, {
        let dl = to_dlpack_tensor(black_box(p4));
        let t: DLTensor = *dl.get();
        keep(&t);
    });
    case!("export+get/rank4 layout_stride", fast, {
        let dl = to_dlpack_tensor(black_box(ps4));
        let t: DLTensor = *dl.get();
        keep(&t);
    });

    let (d2, d4, ds4) = (to_dlpack_tensor(&r2), to_dlpack_tensor(&r4), to_dlpack_tensor(&s4));
    let (t2, t4, ts4): (DLTensor, DLTensor, DLTensor) = (*d2.get(), *d4.get(), *ds4.get());
    let (q2, q4, qs4) = (black_box(&t2), black_box(&t4), black_box(&ts4));
    case!("import/rank2 layout_right", fast, {
        // SAFETY: each tensor describes `data`, alive and never written while the benchmark runs.
        keep(&unsafe { HostMdspan::<f32, Dims<2>, LayoutRight>::from_dlpack(black_box(q2)) });
    });
    case!("import/rank4 layout_right", fast, {
        // SAFETY: each tensor describes `data`, alive and never written while the benchmark runs.
        keep(&unsafe { HostMdspan::<f32, Dims<4>, LayoutRight>::from_dlpack(black_box(q4)) });
    });
    case!("import/rank4 layout_stride", fast, {
        // SAFETY: each tensor describes `data`, alive and never written while the benchmark runs.
        keep(&unsafe { HostMdspan::<f32, Dims<4>, LayoutStride>::from_dlpack(black_box(qs4)) });
    });
    case!("import error/rank4 stride mismatch", slow, {
        // SAFETY: each tensor describes `data`, alive and never written while the benchmark runs.
        keep(&unsafe { HostMdspan::<f32, Dims<4>, LayoutRight>::from_dlpack(black_box(qs4)) });
    });
}
