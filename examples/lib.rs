//! Runnable examples of dlmd: `cargo run --example NAME`. The library holds what several
//! examples share.

/// The median of timings (the upper one of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The C++ side of the CUDA examples: kernels over `dlmd::view` compiled by NVRTC.
#[cfg(feature = "cuda")]
pub mod cxx {
    use cudarc::driver::{CudaContext, CudaFunction, LaunchConfig};
    use dlmd::cuda::Kernels;
    use std::error::Error;
    use std::sync::Arc;

    /// The C++ `add_index` over `dlmd::view<float, 3>` (`view.cuh`), compiled by NVRTC.
    pub const ADD_INDEX: &str = r#"
    // Each thread takes 4 consecutive elements of the last dimension: one 16-byte load and store
    // where the row is contiguous and aligned (the fast path), element by element otherwise.
    extern "C" __global__ void add_index(dlmd::view<float, 3> v) {
        long long i = blockIdx.z;
        long long j = (long long)blockIdx.y * blockDim.y + threadIdx.y;
        long long k = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;
        if (j >= v.extent(1) || k >= v.extent(2)) return;
        float* p = &v(i, j, k);
        float sum = (float)(i + j + k);
        if (v.stride(2) == 1 && k + 4 <= v.extent(2) && ((unsigned long long)p & 15) == 0) {
            float4 x = *reinterpret_cast<float4*>(p);
            x.x += sum; x.y += sum + 1.0f; x.z += sum + 2.0f; x.w += sum + 3.0f;
            *reinterpret_cast<float4*>(p) = x;
        } else {
            for (long long kk = k; kk < k + 4 && kk < v.extent(2); ++kk) v(i, j, kk) += (float)(i + j + kk);
        }
    }
    "#;

    /// The grid of [`ADD_INDEX`] for a view of `extents`.
    pub fn add_index_grid(extents: [usize; 3]) -> LaunchConfig {
        // 64 threads of 4 elements cover 256 of a row; 4 rows per block.
        let (x, y) = (64u32, 4u32);
        LaunchConfig {
            grid_dim: (
                (extents[2] as u32).div_ceil(4 * x),
                (extents[1] as u32).div_ceil(y),
                extents[0] as u32,
            ),
            block_dim: (x, y, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Compiles C++ `kernels` (with `view.cuh` before them) by NVRTC for `ctx`'s device and loads
    /// the function `name`.
    pub fn compile(ctx: &Arc<CudaContext>, kernels: &str, name: &str) -> Result<CudaFunction, Box<dyn Error>> {
        Ok(Kernels::compile_cxx(ctx, kernels)?.function(name)?)
    }

    /// The C++ transpose of a row-major matrix into a column-major one, the same partition as
    /// the Rust kernel's `Thread::for_each_mut` over the destination: `i` on the `x` threads,
    /// `j` on `y`, both grid-stride.
    pub const TRANSPOSE: &str = r#"
extern "C" __global__ void transpose(dlmd::view<float, 2> src, dlmd::view<float, 2> dst) {
    long long nx = (long long)gridDim.x * blockDim.x, ny = (long long)gridDim.y * blockDim.y;
    for (long long j = (long long)blockIdx.y * blockDim.y + threadIdx.y; j < dst.extent(1); j += ny)
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < dst.extent(0); i += nx)
            dst(i, j) = src(i, j);
}
"#;
}
