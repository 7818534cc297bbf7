//! `y = x · b` on `bf16` for any shape: the `wgmma` kernel where the copy engine can read both
//! operands, `mma.sync` otherwise. The copy engine reads rows of a multiple of 16 bytes from a
//! 16-byte aligned start; `TiledMap::new` refuses other views by name, and that refusal is what
//! picks the other kernel (`examples/tensor-kernels`' `matmul_bf16`, `sm_80` and later, any
//! extents and strides).

use super::{grid, ints, transpose, upload};
use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig};
use dlmd::cuda::{self, Kernels, TensorMapError, TiledMap};
use dlmd::half::bf16;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::{Const, Dims, LayoutRight};
use dlmd_example_hopper_kernels as hk;
use dlmd_example_tensor_kernels as tc;
use std::error::Error;
use std::sync::Arc;

/// The kernel a product ran on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Path {
    /// `wgmma`, the operands brought by the copy engine (`hopper-kernels`' `matmul_bf16`).
    Wgmma,
    /// `mma.sync`, the operands brought by every thread (`tensor-kernels`' `matmul_bf16`).
    MmaSync,
}

/// Whether `TiledMap::new` refused a view for a rule of the copy engine (which another kernel
/// does not need), rather than for a fault.
fn copy_engine_rule(e: &TensorMapError) -> bool {
    matches!(
        e,
        TensorMapError::Alignment { .. } | TensorMapError::RowStride { .. } | TensorMapError::InnerStride { .. }
    )
}

/// `y = x · b`, `x` row-major `m × k`, `b` row-major `k × n`, `y` row-major `m × n`, on the
/// `wgmma` kernel where both operands' maps can be made, else on `mma.sync`.
#[allow(clippy::too_many_arguments)]
pub(super) fn matmul(
    stream: &Arc<CudaStream>,
    (hopper, tensor): (&Kernels, &Kernels),
    (m, k, n): (usize, usize, usize),
    x: &CudaSlice<bf16>,
    b: &CudaSlice<bf16>,
    y: &mut CudaSlice<bf16>,
) -> Result<Path, Box<dyn Error>> {
    let xv = cuda::device_view::<_, Dims<2>, LayoutRight>(x, Dims::new([m, k]))?;
    let bv = cuda::device_view::<_, Dims<2>, LayoutRight>(b, Dims::new([k, n]))?;
    let mut yv = cuda::device_view_mut::<_, Dims<2>, LayoutRight>(y, Dims::new([m, n]))?;
    let maps = TiledMap::<bf16, (Const<128>, Const<64>), Swizzle128>::new(&xv)
        .and_then(|xm| TiledMap::<bf16, (Const<64>, Const<256>), Swizzle128>::new(&bv).map(|bm| (xm, bm)));
    match maps {
        Ok((xm, bm)) => {
            let config = grid(stream, m, n, true)?;
            cuda::scope(|s| hk::matmul_bf16(s.launch(stream, hopper, config), xm.map(), bm.map(), yv.as_view_mut()))?;
            Ok(Path::Wgmma)
        }
        Err(e) if copy_engine_rule(&e) => {
            let config = LaunchConfig {
                grid_dim: ((m.div_ceil(128) * n.div_ceil(128)).max(1) as u32, 1, 1),
                block_dim: (tc::GEMM_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            cuda::scope(|s| {
                let args = tc::MatmulBf16Args {
                    a: xv,
                    b: bv,
                    c: yv.as_view_mut(),
                };
                tc::matmul_bf16(s.launch(stream, tensor, config), args)
            })?;
            Ok(Path::MmaSync)
        }
        Err(e) => Err(e.into()),
    }
}

/// [`matmul`] against the CPU on small integers (exact), on shapes each path takes: `n` a
/// multiple of 8 (rows of `b` of whole 16-byte pieces) goes to `wgmma`, other `n` or `k` to
/// `mma.sync`.
pub(super) fn check(stream: &Arc<CudaStream>, modules: (&Kernels, &Kernels)) -> Result<(), Box<dyn Error>> {
    for ((m, k, n), path) in [
        ((100, 72, 296), Path::Wgmma),
        ((100, 72, 300), Path::MmaSync),
        ((65, 100, 24), Path::MmaSync),
        ((1, 3, 5), Path::MmaSync),
    ] {
        let (x, w) = (ints(m * k, 7, 9), ints(n * k, 5, 7));
        let b = transpose(&w, n, k);
        let want: Vec<bf16> = (0..m * n)
            .map(|i| bf16::from_f32((0..k).map(|p| x[i / n * k + p] * b[p * n + i % n]).sum()))
            .collect();
        let (dx, db) = (upload(stream, &x, bf16::from_f32)?, upload(stream, &b, bf16::from_f32)?);
        let mut y = upload(stream, &vec![f32::NAN; m * n], bf16::from_f32)?;
        let took = matmul(stream, modules, (m, k, n), &dx, &db, &mut y)?;
        let got = stream.clone_dtoh(&y)?;
        let wrong = got
            .iter()
            .zip(&want)
            .filter(|(g, w)| g.to_bits() != w.to_bits())
            .count();
        if took != path || wrong != 0 {
            return Err(format!(
                "x · b {m}x{k}x{n}: on {took:?} (expected {path:?}), {wrong} elements differ from the CPU"
            )
            .into());
        }
        println!(
            "check x · b {m}x{k}x{n} on {took:?}: all {} elements match the CPU",
            m * n
        );
    }
    Ok(())
}
