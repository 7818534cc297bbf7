//! `view.cuh` against `ViewParam`, on the CPU: the header compiled as host C++ (the system's
//! `c++`, or `$CXX`) reads the bytes of Rust's `ViewParam<f32, 3>` of views of every layout,
//! negative strides included, and indexes them as a C++ kernel would. The same check runs on a
//! GPU through NVRTC in `tests/gpu.rs`.

use dlmd::kernel::ViewParam;
use dlmd::layout::{Layout, LeftMapping, Mapping, RelaxedMapping, RightMapping, StrideMapping};
use dlmd::space::Device;
use dlmd::view::Shared;
use dlmd::{Dims, Mdspan};
use std::io::Write;
use std::mem::offset_of;
use std::path::Path;
use std::process::{Command, Stdio};

const PROGRAM: &str = r#"
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include "dlmd/view.cuh"

typedef dlmd::view<float, 3> V;
typedef dlmd::view<double, 0> S;
static float buffer[1 << 16];

int main() {
    printf("%zu %zu %zu %zu %zu %zu %zu %zu %zu %zu\n", sizeof(V), alignof(V), offsetof(V, offset),
           offsetof(V, extents), offsetof(V, strides), offsetof(V, span), offsetof(V, device), sizeof(S),
           offsetof(S, span), offsetof(S, device));
    unsigned char bytes[sizeof(V)];
    while (fread(bytes, 1, sizeof bytes, stdin) == sizeof bytes) {
        V v;
        memcpy(&v, bytes, sizeof v);
        printf("%llu %lld %d %lld", (unsigned long long)(uintptr_t)v.data, v.span, v.device, v.size());
        // The same offsets over memory of this process: element (0, 0, 0) `offset` elements in.
        v.data = buffer + v.offset;
        for (long long t = 0; t < v.size(); ++t) {
            long long index[3];
            v.unravel(t, index);
            printf(" %lld", (long long)(&v(index[0], index[1], index[2]) - buffer));
        }
        printf("\n");
    }
    return 0;
}
"#;

/// The fields of `p` at the offsets Rust gives them, little-endian, padding zeroed: the bytes
/// a launch hands the driver.
fn bytes(p: &ViewParam<f32, 3>) -> Vec<u8> {
    let mut out = vec![0u8; size_of::<ViewParam<f32, 3>>()];
    let mut put = |at: usize, b: &[u8]| out[at..at + b.len()].copy_from_slice(b);
    put(
        offset_of!(ViewParam<f32, 3>, data),
        &(p.data as usize as u64).to_le_bytes(),
    );
    put(offset_of!(ViewParam<f32, 3>, offset), &p.offset.to_le_bytes());
    for d in 0..3 {
        put(
            offset_of!(ViewParam<f32, 3>, extents) + 8 * d,
            &p.extents[d].to_le_bytes(),
        );
        put(
            offset_of!(ViewParam<f32, 3>, strides) + 8 * d,
            &p.strides[d].to_le_bytes(),
        );
    }
    put(offset_of!(ViewParam<f32, 3>, span), &p.span.to_le_bytes());
    put(offset_of!(ViewParam<f32, 3>, device), &p.device.to_le_bytes());
    out
}

/// A device view of `data` through `mapping`, never read.
fn view<L: Layout>(
    data: &mut [f32],
    mapping: L::Mapping<Dims<3>>,
    ordinal: i32,
) -> Mdspan<'_, f32, Dims<3>, L, Device, Shared> {
    assert!(mapping.required_span_size() <= data.len());
    // SAFETY: `data` holds the span; the view is only turned into its parameter form, never
    // read or written, and `data` stays borrowed while it lives.
    unsafe { Mdspan::from_raw_parts(data.as_mut_ptr(), mapping, Device::new(ordinal)) }
}

#[test]
#[cfg_attr(miri, ignore = "runs a C++ compiler")]
fn the_header_reads_view_params_field_for_field() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("view_header");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("main.cpp"), PROGRAM).unwrap();
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let built = Command::new(&cxx)
        .args(["-std=c++17", "-Wall", "-Werror", "-I", dlmd::cuda::INCLUDE_DIR, "-o"])
        .arg(dir.join("main"))
        .arg(dir.join("main.cpp"))
        .output()
        .unwrap_or_else(|e| panic!("{cxx} (set CXX for another C++ compiler): {e}"));
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));

    let mut data = vec![0f32; 512];
    let base = data.as_ptr() as usize;
    let mut params = Vec::new();
    let right = RightMapping::new(Dims::new([3, 4, 5])).unwrap();
    let left = LeftMapping::new(Dims::new([2, 3, 4])).unwrap();
    let stride = StrideMapping::new(Dims::new([3, 2, 4]), [1, 40, 3]).unwrap();
    let relaxed = RelaxedMapping::new(Dims::new([3, 4, 5]), [-20, 5, -1], 44).unwrap();
    let broadcast = RelaxedMapping::new(Dims::new([2, 3, 2]), [0, 1, 0], 0).unwrap();
    params.push((
        ViewParam::of(&view::<dlmd::LayoutRight>(&mut data, right, 0)),
        right.extents().0,
        right.offset_of(&[0, 0, 0]),
    ));
    let mut offsets: Vec<Vec<i64>> = Vec::new();
    let mut record = |m: &dyn Fn(&[usize; 3]) -> usize, e: [usize; 3]| {
        let mut o = Vec::new();
        for i in 0..e[0] {
            for j in 0..e[1] {
                for k in 0..e[2] {
                    o.push(m(&[i, j, k]) as i64);
                }
            }
        }
        offsets.push(o);
    };
    record(&|i| right.offset_of(i), right.extents().0);
    params.push((
        ViewParam::of(&view::<dlmd::LayoutLeft>(&mut data, left, 1)),
        left.extents().0,
        0,
    ));
    record(&|i| left.offset_of(i), left.extents().0);
    params.push((
        ViewParam::of(&view::<dlmd::LayoutStride>(&mut data, stride, 2)),
        stride.extents().0,
        0,
    ));
    record(&|i| stride.offset_of(i), stride.extents().0);
    params.push((
        ViewParam::of(&view::<dlmd::LayoutStrideRelaxed>(&mut data, relaxed, 3)),
        relaxed.extents().0,
        44,
    ));
    record(&|i| relaxed.offset_of(i), relaxed.extents().0);
    params.push((
        ViewParam::of(&view::<dlmd::LayoutStrideRelaxed>(&mut data, broadcast, 4)),
        broadcast.extents().0,
        0,
    ));
    record(&|i| broadcast.offset_of(i), broadcast.extents().0);

    let mut child = Command::new(dir.join("main"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        for (p, _, _) in &params {
            stdin.write_all(&bytes(p)).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let layout: Vec<usize> = lines.next().unwrap().split(' ').map(|x| x.parse().unwrap()).collect();
    type V = ViewParam<f32, 3>;
    type S = ViewParam<f64, 0>;
    assert_eq!(
        layout,
        [
            size_of::<V>(),
            align_of::<V>(),
            offset_of!(V, offset),
            offset_of!(V, extents),
            offset_of!(V, strides),
            offset_of!(V, span),
            offset_of!(V, device),
            size_of::<S>(),
            offset_of!(S, span),
            offset_of!(S, device),
        ],
        "dlmd::view<T, R> is laid out as ViewParam<T, R>"
    );
    for (k, ((p, extents, first), expected)) in params.iter().zip(&offsets).enumerate() {
        let fields: Vec<i64> = lines
            .next()
            .unwrap()
            .split(' ')
            .map(|x| x.parse::<i128>().unwrap() as i64)
            .collect();
        assert_eq!(
            fields[0] as u64 as usize,
            base + 4 * first,
            "view {k}: data is element [0, 0, 0]"
        );
        assert_eq!(fields[0] as u64 as usize, p.data as usize);
        assert_eq!(fields[1], p.span, "view {k}: span");
        assert_eq!(fields[2], k as i64, "view {k}: device");
        assert_eq!(fields[3], extents.iter().product::<usize>() as i64, "view {k}: size");
        assert_eq!(&fields[4..], &expected[..], "view {k}: offsets from the span's start");
    }
    assert!(lines.next().is_none());
}
