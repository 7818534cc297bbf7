//! GPU tests: the kernel-side header against the Rust views, on a real device.
//!
//! Without a GPU each test prints one line saying it was skipped and passes; with
//! `DLMD_REQUIRE_GPU=1` a missing GPU fails instead.

use cudarc::driver::{CudaContext, CudaFunction, LaunchConfig, PushKernelArg};
use dlmd::cuda::{self, CudaError};
use dlmd::kernel::ViewParam;
use dlmd::layout::{Layout, Mapping, RelaxedMapping, StrideMapping};
use dlmd::{Device, Dims, LayoutLeft, LayoutRight, Mdspan};
use dlmd_tests::gpu;
use std::sync::Arc;

const KERNELS: &str = r#"

extern "C" __global__ void layout(long long* out) {
    typedef dlmd::view<float, 3> V;
    typedef dlmd::view<double, 0> S;
    out[0] = sizeof(V);
    out[1] = alignof(V);
    out[2] = (long long)((char*)&((V*)0)->offset - (char*)0);
    out[3] = (long long)((char*)&((V*)0)->extents - (char*)0);
    out[4] = (long long)((char*)&((V*)0)->strides - (char*)0);
    out[5] = (long long)((char*)&((V*)0)->span - (char*)0);
    out[6] = (long long)((char*)&((V*)0)->device - (char*)0);
    out[7] = sizeof(S);
    out[8] = (long long)((char*)&((S*)0)->span - (char*)0);
    out[9] = (long long)((char*)&((S*)0)->device - (char*)0);
}

extern "C" __global__ void offsets(dlmd::view<float, 3> v, long long* out) {
    long long n = v.size();
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
        long long idx[3];
        v.unravel(t, idx);
        // From the span's start, as the Rust mapping counts.
        out[t] = &v(idx[0], idx[1], idx[2]) - (v.data - v.offset);
    }
}
"#;

fn function(ctx: &Arc<CudaContext>, name: &str) -> CudaFunction {
    let kernels = cuda::Kernels::compile_cxx(ctx, KERNELS).expect("NVRTC compiles the header");
    kernels.function(name).unwrap()
}

#[test]
fn header_layout_matches_rust() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let mut out = stream.alloc_zeros::<i64>(10).unwrap();
    let func = function(&ctx, "layout");
    let mut launch = stream.launch_builder(&func);
    launch.arg(&mut out);
    // SAFETY: the kernel writes 10 values into `out`, which holds 10.
    unsafe { launch.launch(LaunchConfig::for_num_elems(1)) }.unwrap();
    let got = stream.clone_dtoh(&out).unwrap();
    type V = ViewParam<f32, 3>;
    type S = ViewParam<f64, 0>;
    assert_eq!(
        got,
        [
            size_of::<V>() as i64,
            align_of::<V>() as i64,
            std::mem::offset_of!(V, offset) as i64,
            std::mem::offset_of!(V, extents) as i64,
            std::mem::offset_of!(V, strides) as i64,
            std::mem::offset_of!(V, span) as i64,
            std::mem::offset_of!(V, device) as i64,
            size_of::<S>() as i64,
            std::mem::offset_of!(S, span) as i64,
            std::mem::offset_of!(S, device) as i64,
        ],
        "dlmd::view<T, R> of view.cuh is ViewParam<T, R>, field for field"
    );
}

/// Checks that the header maps every index of `view` to the offset the Rust mapping gives.
fn same_offsets<L: Layout>(ctx: &Arc<CudaContext>, view: &Mdspan<'_, f32, Dims<3>, L, Device>) {
    let stream = ctx.default_stream();
    let n = view.size();
    let mut out = stream.alloc_zeros::<i64>(n.max(1)).unwrap();
    let kv = view.kernel_view();
    let func = function(ctx, "offsets");
    let mut launch = stream.launch_builder(&func);
    launch.arg(&kv).arg(&mut out);
    // SAFETY: the kernel only computes addresses from the view and writes `n` values to `out`.
    unsafe { launch.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
    let got = stream.clone_dtoh(&out).unwrap();
    let e = view.extents().0;
    let mut t = 0;
    for i in 0..e[0] {
        for j in 0..e[1] {
            for k in 0..e[2] {
                let expected = view.mapping().offset_of(&[i, j, k]) as i64;
                assert_eq!(got[t], expected, "{} index [{i}, {j}, {k}]", L::NAME);
                t += 1;
            }
        }
    }
}

#[test]
fn header_indexing_matches_every_layout() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let extents = Dims::new([3, 4, 5]);
    let mut buffer = stream.alloc_zeros::<f32>(200).unwrap();
    let right = cuda::device_view::<f32, _, LayoutRight>(&buffer, extents).unwrap();
    same_offsets(&ctx, &right);
    let left = cuda::device_view::<f32, _, LayoutLeft>(&buffer, extents).unwrap();
    same_offsets(&ctx, &left);
    let base = cuda::device_view_mut::<f32, _, LayoutRight>(&mut buffer, Dims::new([200])).unwrap();
    let ptr = base.data_handle();
    // SAFETY: the mapping stays inside the 200 elements of `buffer`, borrowed by `base`.
    let strided = unsafe {
        Mdspan::<f32, Dims<3>, dlmd::LayoutStride, Device>::from_raw_parts(
            ptr,
            StrideMapping::new(extents, [1, 3 * 5 * 2, 3]).unwrap(),
            base.space(),
        )
    };
    same_offsets(&ctx, &strided);
    // SAFETY: as above; the offset 44 covers the negative strides (2·20 + 4·1).
    let relaxed = unsafe {
        Mdspan::<f32, Dims<3>, dlmd::LayoutStrideRelaxed, Device>::from_raw_parts(
            ptr,
            RelaxedMapping::new(extents, [-20, 5, -1], 44).unwrap(),
            base.space(),
        )
    };
    same_offsets(&ctx, &relaxed);
}

#[test]
fn pinned_and_managed_memory_views() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    // SAFETY: the pinned buffer is written below before it is read.
    let mut pinned = unsafe { ctx.alloc_pinned::<f32>(6) }.unwrap();
    pinned
        .as_mut_slice()
        .unwrap()
        .copy_from_slice(&[0., 1., 2., 3., 4., 5.]);
    let host = cuda::pinned_view::<f32, _, LayoutRight>(&pinned, Dims::new([2, 3])).unwrap();
    assert_eq!(host[[1, 2]], 5.0);

    // SAFETY: the unified buffer is written below before it is read.
    let mut unified = unsafe { ctx.alloc_unified::<i32>(4, true) }.unwrap();
    unified.as_mut_slice().unwrap().copy_from_slice(&[7, 8, 9, 10]);
    let managed = cuda::managed_view::<i32, _, LayoutRight>(&unified, Dims::new([4])).unwrap();
    assert_eq!(managed[[3]], 10);
    let on_host = managed.into_space(dlmd::Host);
    assert_eq!(on_host[[0]], 7);
    let on_device = managed.into_space(Device::new(0));
    assert_eq!(on_device.kernel_view().data.cast_const(), managed.as_ptr());
    drop(stream);
}

/// A rank-1 `DLTensor` over `slice`'s device memory, as a producer hands one over.
fn tensor_of<T: dlmd::DlElement + cudarc::driver::DeviceRepr>(
    slice: &cudarc::driver::CudaSlice<T>,
    shape: &mut [i64; 1],
    strides: &mut [i64; 1],
) -> dlmd::dlpack::DLTensor {
    dlmd::dlpack::DLTensor {
        data: cuda::device_view::<T, _, LayoutRight>(slice, Dims::new([shape[0] as usize]))
            .unwrap()
            .data_handle()
            .cast(),
        device: dlmd::dlpack::DLDevice::cuda(0),
        ndim: 1,
        dtype: T::DTYPE,
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    }
}

#[test]
fn cuda_imports_check_the_pointer() {
    use dlmd::dlpack::{DLDevice, DLDeviceType};
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let slice = stream.alloc_zeros::<f32>(8).unwrap();
    let (mut shape, mut strides) = ([8i64], [1i64]);
    let mut t = tensor_of(&slice, &mut shape, &mut strides);
    // SAFETY: `t` describes the live allocation `slice`.
    let right = unsafe { cuda::place::<f32, 1, LayoutRight>(&t) };
    assert!(matches!(right, Ok(cuda::Placed::Device(_))));
    t.device.device_id = 1;
    // SAFETY: as above.
    let wrong = unsafe { cuda::place::<f32, 1, LayoutRight>(&t) };
    assert!(
        matches!(
            wrong,
            Err(CudaError::Placement(dlmd::cuda::PlacementError::WrongDevice {
                labelled: 1,
                actual: 0
            }))
        ),
        "{wrong:?}"
    );

    // SAFETY: written before read.
    let mut unified = unsafe { ctx.alloc_unified::<f32>(8, true) }.unwrap();
    unified.as_mut_slice().unwrap().fill(2.5);
    let managed = cuda::managed_view::<f32, _, LayoutRight>(&unified, Dims::new([8])).unwrap();
    t.data = managed.data_handle().cast();
    t.device = DLDevice {
        device_type: DLDeviceType::CUDA,
        device_id: 0,
    };
    // SAFETY: as above.
    match unsafe { cuda::place::<f32, 1, LayoutRight>(&t) }.unwrap() {
        cuda::Placed::Managed(m) => assert_eq!(m.into_space(dlmd::Host)[[7]], 2.5),
        other => panic!("managed memory labelled kDLCUDA imported as {other:?}"),
    }
}

#[test]
fn nvrtc_wrapper_reports_errors() {
    let Some(_ctx) = gpu() else { return };
    let err = cuda::compile_ptx("extern \"C\" __global__ void broken( {", Default::default()).unwrap_err();
    assert!(
        matches!(err, CudaError::Compile(dlmd::cuda::CompileError::Refused(_))),
        "{err}"
    );
}

#[test]
fn header_converts_to_cuda_std_mdspan() {
    let Some(ctx) = gpu() else { return };
    let source = r#"
extern "C" __global__ void mdspan_offsets(dlmd::view<float, 3> v, long long* out) {
    auto md = v.to_mdspan();
    long long t = 0;
    for (long long i = 0; i < v.extent(0); ++i)
        for (long long j = 0; j < v.extent(1); ++j)
            for (long long k = 0; k < v.extent(2); ++k)
                out[t++] = (&md(i, j, k) - v.data) - (&v(i, j, k) - v.data);
    out[t] = md.extent(0) * 10000 + md.extent(1) * 100 + md.extent(2);
}
"#;
    let options = cudarc::nvrtc::CompileOptions {
        include_paths: vec!["/usr/local/cuda/include/cccl".into(), "/usr/local/cuda/include".into()],
        options: vec!["-DDLMD_WITH_MDSPAN".into(), "--std=c++17".into()],
        ..Default::default()
    };
    let ptx = match cuda::compile_ptx(source, options) {
        Ok(ptx) => ptx,
        Err(e) => panic!("NVRTC with <cuda/std/mdspan>: {e}"),
    };
    let func = ctx.load_module(ptx).unwrap().load_function("mdspan_offsets").unwrap();
    let stream = ctx.default_stream();
    let buffer = stream.alloc_zeros::<f32>(200).unwrap();
    let base = cuda::device_view::<f32, _, LayoutRight>(&buffer, Dims::new([200])).unwrap();
    // SAFETY: the mapping stays inside the 200 elements of `buffer`, borrowed by `base`; the
    // kernel only compares addresses.
    let view = unsafe {
        Mdspan::<f32, Dims<3>, dlmd::LayoutStride, Device>::from_raw_parts(
            base.data_handle(),
            StrideMapping::new(Dims::new([3, 4, 5]), [1, 30, 3]).unwrap(),
            base.space(),
        )
    };
    let mut out = stream.alloc_zeros::<i64>(61).unwrap();
    let kv = view.kernel_view();
    let mut launch = stream.launch_builder(&func);
    launch.arg(&kv).arg(&mut out);
    // SAFETY: one thread writes 61 values into `out`, which holds 61.
    unsafe { launch.launch(LaunchConfig::for_num_elems(1)) }.unwrap();
    let got = stream.clone_dtoh(&out).unwrap();
    assert!(got[..60].iter().all(|&d| d == 0), "mdspan and view disagree: {got:?}");
    assert_eq!(got[60], 30405);
}

/// A `kDLCUDA` bool tensor whose pointer the driver reports as managed is host-readable, so its
/// bytes are checked as a host import's are (it came back unchecked before).
#[test]
fn managed_bools_labelled_cuda_are_checked() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    // SAFETY: managed memory of 3 bytes, written from the host below before any read.
    let mut managed = unsafe { ctx.alloc_unified::<u8>(3, true) }.unwrap();
    stream.synchronize().unwrap();
    managed.as_mut_slice().unwrap().copy_from_slice(&[1, 0, 2]);
    let ptr = managed.as_slice().unwrap().as_ptr();
    let mut shape = [3i64];
    let mut strides = [1i64];
    let t = dlmd::dlpack::DLTensor {
        data: ptr.cast_mut().cast(),
        device: dlmd::dlpack::DLDevice::cuda(0),
        ndim: 1,
        dtype: <bool as dlmd::DlElement>::DTYPE,
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    // SAFETY: `t` describes the 3 managed bytes, alive and unwritten while the view lives.
    let err = unsafe { cuda::place::<bool, 1, LayoutRight>(&t) }.unwrap_err();
    assert!(
        matches!(
            err,
            CudaError::Import(dlmd::ImportError::InvalidBool { offset: 2, value: 2 })
        ),
        "{err}"
    );
    managed.as_mut_slice().unwrap()[2] = 1;
    // SAFETY: as above.
    match unsafe { cuda::place::<bool, 1, LayoutRight>(&t) }.unwrap() {
        cuda::Placed::Managed(view) => assert!(view[[2]] && !view[[1]]),
        cuda::Placed::Device(_) => panic!("managed memory viewed as device memory"),
    }
}

/// Integers a consumer passes as `stream` are checked before the driver sees them: small,
/// unaligned or non-user-space values are refused by value, a real stream is accepted.
#[test]
fn stream_integers_are_checked() {
    let Some(ctx) = gpu() else { return };
    for bad in [3usize, 4097, 1 << 60] {
        assert!(
            matches!(
                cuda::check_stream(bad, &ctx),
                Err(CudaError::Stream(dlmd::cuda::StreamError::NotAStream { .. }))
            ),
            "{bad:#x}"
        );
    }
    let stream = ctx.new_stream().unwrap();
    let handle = stream.cu_stream() as usize;
    assert_eq!(cuda::check_stream(handle, &ctx).unwrap() as usize, handle);
}

#[test]
fn a_stale_device_copy_is_not_downloaded() {
    use dlmd::cuda::{Current, MirroredArray};
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let mut array = MirroredArray::<f32, Dims<1>, LayoutRight>::zeros(&stream, Dims::new([8])).unwrap();
    array.host_mut().unwrap().fill(3.0);
    // Only the host copy holds the threes: the device copy's zeros are stale.
    let mut out = vec![-1.0f32; 8];
    assert!(matches!(
        array.download_pageable(&mut out),
        Err(CudaError::Stale {
            want: "device",
            current: Current::Host
        })
    ));
    assert_eq!(out, [-1.0; 8], "nothing was copied");
    array.to_device().unwrap();
    array.download_pageable(&mut out).unwrap();
    assert_eq!(out, [3.0; 8]);
}

#[test]
fn copies_between_aliased_views_may_not_write_what_other_queued_work_reaches() {
    use dlmd::view::AliasedMut;
    let Some(ctx) = gpu() else { return };
    let (s1, s2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let a = s1.clone_htod(&[1.0f32; 256]).unwrap();
    let b = s1.clone_htod(&[2.0f32; 256]).unwrap();
    let c = s1.clone_htod(&[3.0f32; 256]).unwrap();
    s1.synchronize().unwrap();
    // Each slice as an import sees it: a `DLTensor` viewed as an aliased, `Copy` view.
    let ([mut sa, mut sb, mut sc], [mut da, mut db, mut dc]) = ([[256i64]; 3], [[1i64]; 3]);
    let (ta, tb, tc) = (
        tensor_of(&a, &mut sa, &mut da),
        tensor_of(&b, &mut sb, &mut db),
        tensor_of(&c, &mut sc, &mut dc),
    );
    // SAFETY: each describes a live allocation of 256 `f32`s, which outlives the views, and
    // nothing else touches it during the test.
    let import = |t| {
        // SAFETY: as above.
        unsafe { Mdspan::<f32, Dims<1>, LayoutRight, Device, AliasedMut>::from_dlpack(t) }.unwrap()
    };
    let (mut va, mut vb, vc) = (import(&ta), import(&tb), import(&tc));

    // A copy onto itself (its source a copy of its destination view).
    let src = va;
    let e = cuda::scope(|s| s.copy(&s1, &src, &mut va)).unwrap_err();
    assert!(
        matches!(
            e,
            CudaError::ScopeOverlap {
                operation: "copy",
                with_queued: false
            }
        ),
        "{e}"
    );
    // Two copies into one memory on two streams, or a read of memory a queued copy writes.
    let mut vb2 = vb;
    let e = cuda::scope(|s| {
        s.copy(&s1, &vc, &mut vb)?;
        s.copy(&s2, &va, &mut vb2)
    })
    .unwrap_err();
    assert!(matches!(e, CudaError::ScopeOverlap { with_queued: true, .. }), "{e}");
    let e = cuda::scope(|s| {
        s.copy(&s1, &vc, &mut vb)?;
        s.copy(&s2, &vb2, &mut va)
    })
    .unwrap_err();
    assert!(matches!(e, CudaError::ScopeOverlap { with_queued: true, .. }), "{e}");
    // Two readers of one source are fine, and once a scope has ended its memory is free again.
    cuda::scope(|s| {
        s.copy(&s1, &vc, &mut va)?;
        s.copy(&s2, &vc, &mut vb)
    })
    .unwrap();
    assert_eq!(s1.clone_dtoh(&a).unwrap(), [3.0; 256]);
    assert_eq!(s1.clone_dtoh(&b).unwrap(), [3.0; 256]);
}

#[test]
fn imported_device_bools_are_not_copied_into_memory_rust_reads_as_bool() {
    use dlmd::DlElement;
    use dlmd::view::{Aliased, AliasedMut};
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    // Bytes a producer may hold under a bool data type (torch: a uint8 tensor viewed as bool).
    let bytes = stream.clone_htod(&[0u8, 1, 2, 255]).unwrap();
    let (mut shape, mut strides) = ([4i64], [1i64]);
    let mut t = tensor_of(&bytes, &mut shape, &mut strides);
    t.dtype = bool::DTYPE;
    // SAFETY: `t` describes the live allocation `bytes`, which outlives the views.
    let src = unsafe { Mdspan::<bool, Dims<1>, LayoutRight, Device, Aliased>::from_dlpack(&t) }.unwrap();
    let mut out = stream.alloc_zeros::<bool>(4).unwrap();
    let mut dst = cuda::device_view_mut::<bool, Dims<1>, LayoutRight>(&mut out, Dims::new([4])).unwrap();
    let e = cuda::scope(|s| s.copy(&stream, &src, &mut dst)).unwrap_err();
    assert!(
        matches!(e, CudaError::Import(dlmd::import::ImportError::UncheckedBool { .. })),
        "{e}"
    );
    // Into another import they stay bytes: allowed.
    let other = stream.clone_htod(&[0u8; 4]).unwrap();
    let (mut shape2, mut strides2) = ([4i64], [1i64]);
    let mut t2 = tensor_of(&other, &mut shape2, &mut strides2);
    t2.dtype = bool::DTYPE;
    // SAFETY: as above, for `other`.
    let mut aliased = unsafe { Mdspan::<bool, Dims<1>, LayoutRight, Device, AliasedMut>::from_dlpack(&t2) }.unwrap();
    cuda::scope(|s| s.copy(&stream, &src, &mut aliased)).unwrap();
    assert_eq!(stream.clone_dtoh(&other).unwrap(), [0, 1, 2, 255]);
}

/// A module of one empty kernel, `noop`, for PTX ISA `version` and architecture `target`.
fn noop_module(version: &str, target: &str) -> String {
    format!(".version {version}\n.target {target}\n.address_size 64\n\n.visible .entry noop()\n{{\n\tret;\n}}\n")
}

/// A module is checked against the device and the driver before the driver sees it: an
/// architecture the device does not have, or a PTX ISA newer than any driver compiles, is
/// refused by name; a portable architecture the device has loads.
#[test]
fn modules_the_device_cannot_run_are_refused_by_name() {
    let Some(ctx) = gpu() else { return };
    let device = ctx.compute_capability().unwrap();

    // `sm_100a` runs on compute capability 10.0 only (an H100 is 9.0).
    let blackwell = cuda::Kernels::load(&ctx, &noop_module("8.6", "sm_100a"));
    if device != (10, 0) {
        match blackwell {
            Err(CudaError::Module(cuda::ModuleError::Arch { module, device: found })) => {
                assert_eq!((module.as_str(), found), ("sm_100a", device));
            }
            other => panic!("sm_100a on compute capability {device:?}: {other:?}"),
        }
    }

    // `sm_80` runs on 8.0 and every later device.
    let ampere = cuda::Kernels::load(&ctx, &noop_module("7.0", "sm_80"));
    if device >= (8, 0) {
        let kernels = ampere.expect("sm_80 PTX loads on a later device");
        kernels.function("noop").expect("its kernel is there");
    } else {
        assert!(matches!(ampere, Err(CudaError::Module(cuda::ModuleError::Arch { .. }))));
    }

    // No driver compiles PTX ISA 99.0.
    match cuda::Kernels::load(&ctx, &noop_module("99.0", "sm_80")) {
        Err(CudaError::Module(cuda::ModuleError::PtxIsa { module: (99, 0), .. })) if device >= (8, 0) => {}
        Err(CudaError::Module(cuda::ModuleError::Arch { .. })) if device < (8, 0) => {}
        other => panic!("PTX ISA 99.0: {other:?}"),
    }

    // A header without `.target`, or not PTX's at all, is refused before the driver sees it.
    assert!(matches!(
        cuda::Kernels::load(&ctx, ".version 7.0\n.address_size 64\n"),
        Err(CudaError::Module(cuda::ModuleError::NoTarget))
    ));
    assert!(matches!(
        cuda::Kernels::load(&ctx, "not PTX\0"),
        Err(CudaError::Module(cuda::ModuleError::Header(_)))
    ));
}

#[test]
fn tensor_maps_are_made_from_views_the_copy_engine_can_read_and_refused_by_name_otherwise() {
    use dlmd::Const;
    use dlmd::cuda::{TensorMapError, TiledMap};
    use dlmd::half::bf16;
    use dlmd::kernel::KernelParam;
    use dlmd::kernel::swizzle::Swizzle128;
    type Box64 = (Const<64>, Const<64>);

    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();

    // Ragged: 1000 rows are not a multiple of the box's 64.
    let a = stream.alloc_zeros::<bf16>(1000 * 64).unwrap();
    let view = cuda::device_view::<_, _, LayoutRight>(&a, Dims([1000, 64])).unwrap();
    let map = TiledMap::<_, Box64, Swizzle128>::new(&view).unwrap();
    assert_eq!(map.extents(), [1000, 64]);
    let param = map.map();
    assert_eq!(param.extents(), [1000, 64]);
    // The encoded map travels in the parameter itself (its first field), which the kernel
    // declares 64-byte aligned and reads in place.
    assert_eq!(param.map() as usize, (&raw const param) as usize, "{map:?}");
    assert_eq!(param.device_ordinal(), Some(0));
    let footprint = param.footprint().unwrap();
    assert_eq!(
        (footprint.start, footprint.bytes),
        (view.data_handle() as usize, 1000 * 64 * 2)
    );

    // A view starting 2 bytes in: columns 1..65 of rows of 72 (144 bytes, a multiple of 16).
    let b = stream.alloc_zeros::<bf16>(8 * 72).unwrap();
    let rows = cuda::device_view::<_, _, LayoutRight>(&b, Dims([8, 72])).unwrap();
    let shifted = rows.submdspan((.., 1..65)).unwrap();
    let err = TiledMap::<_, Box64, Swizzle128>::new(&shifted).unwrap_err();
    assert!(matches!(err, TensorMapError::Alignment { .. }), "{err}");

    // Rows of 100 `bf16`s are 200 bytes apart, not a multiple of 16.
    let c = stream.alloc_zeros::<bf16>(8 * 100).unwrap();
    let narrow = cuda::device_view::<_, _, LayoutRight>(&c, Dims([8, 100])).unwrap();
    let err = TiledMap::<_, Box64, Swizzle128>::new(&narrow).unwrap_err();
    assert!(matches!(err, TensorMapError::RowStride { bytes: 200, .. }), "{err}");

    // Column-major: a row's elements are 64 apart.
    let d = stream.alloc_zeros::<bf16>(64 * 8).unwrap();
    let columns = cuda::device_view::<_, _, LayoutLeft>(&d, Dims([64, 8])).unwrap();
    let err = TiledMap::<_, Box64, Swizzle128>::new(&columns).unwrap_err();
    assert!(
        matches!(err, TensorMapError::InnerStride { dim: 1, stride: 64 }),
        "{err}"
    );
}
