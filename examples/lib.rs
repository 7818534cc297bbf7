//! Runnable examples of dlmd: `cargo run --example NAME`. The library holds what several
//! examples share.

/// The median of timings (the upper one of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `len` pseudo-random values in `[-1, 1)` from `seed` (xorshift64, 24 bits a step): the
/// benchmarks' operands, varied as real data is (the tensor cores' clocks follow their
/// operands' bits, so a short repeating pattern runs faster than real data).
pub fn uniform(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// The timings of an alternated benchmark, one list a side, and their medians once the first
/// `warm_up` rounds are left out.
pub struct Sides {
    ms: Vec<Vec<f64>>,
    warm_up: usize,
}

impl Sides {
    /// `count` sides, none timed yet.
    pub fn new(count: usize, warm_up: usize) -> Self {
        Sides {
            ms: vec![Vec::new(); count],
            warm_up,
        }
    }

    /// Round `round`'s times, one a side in order (kept after the warm-up).
    pub fn push(&mut self, round: usize, times: &[f64]) {
        if round >= self.warm_up {
            self.ms.iter_mut().zip(times).for_each(|(side, &t)| side.push(t));
        }
    }

    /// Each side's median.
    pub fn medians(&self) -> Vec<f64> {
        self.ms.iter().map(|side| median(side.clone())).collect()
    }
}

/// The C++ side of the CUDA examples: kernels over `dlmd::view` compiled by NVRTC.
#[cfg(feature = "cuda")]
pub mod cxx {
    use cudarc::driver::{CudaContext, CudaFunction, LaunchConfig};
    use cudarc::nvrtc::Ptx;
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

    /// The classic tiled transpose in C++ over `dlmd::view<float, 2>` (`dst(i, j) = src(j,
    /// i)`): a 32 × 33 shared tile, blocks of 32 × 8 threads, one block per 32 × 32 chunk of
    /// `dst` in its memory order (grid-stride).
    pub const TRANSPOSE_CLASSIC: &str = r#"
extern "C" __global__ void transpose_classic(dlmd::view<float, 2> src, dlmd::view<float, 2> dst) {
    __shared__ float tile[32][33];
    long long rows = src.extent(0), cols = src.extent(1);
    long long chunk_rows = (cols + 31) / 32, chunk_cols = (rows + 31) / 32;
    int tx = threadIdx.x, ty = threadIdx.y;
    for (long long c = blockIdx.x; c < chunk_rows * chunk_cols; c += gridDim.x) {
        long long i0 = c / chunk_cols * 32, j0 = c % chunk_cols * 32;
        for (int a = ty; a < 32; a += 8) {
            long long r = j0 + a, k = i0 + tx;
            tile[a][tx] = (r < rows && k < cols) ? src(r, k) : 0.0f;
        }
        __syncthreads();
        for (int a = ty; a < 32; a += 8) {
            long long i = i0 + a, j = j0 + tx;
            if (i < cols && j < rows) dst(i, j) = tile[tx][a];
        }
        __syncthreads();
    }
}
"#;

    /// The tiled transpose in C++ over `dlmd::view<float, 2>` with the tiling of
    /// `examples/kernels`' `transpose_tiled`: a 64 × 65 shared tile, blocks of 256 threads,
    /// each thread reading four runs of four neighbours of `src` as `float4` (`__ldg`) and
    /// writing four runs of `dst` as `float4`, one block per 64 × 64 chunk of `dst` in its
    /// memory order (grid-stride). Runs the edge cuts short, or rows not 16-aligned, go one
    /// element at a time.
    pub const TRANSPOSE_TILED: &str = r#"
extern "C" __global__ void transpose_tiled(dlmd::view<float, 2> src, dlmd::view<float, 2> dst) {
    __shared__ float tile[64][65];
    long long rows = src.extent(0), cols = src.extent(1);
    long long chunk_rows = (cols + 63) / 64, chunk_cols = (rows + 63) / 64;
    int t = threadIdx.x, a0 = t / 16, b = t % 16 * 4;
    bool rows_aligned = src.stride(1) == 1 && src.stride(0) % 4 == 0 && (size_t)src.data % 16 == 0;
    bool cols_aligned = dst.stride(1) == 1 && dst.stride(0) % 4 == 0 && (size_t)dst.data % 16 == 0;
    for (long long c = blockIdx.x; c < chunk_rows * chunk_cols; c += gridDim.x) {
        long long i0 = c / chunk_cols * 64, j0 = c % chunk_cols * 64;
        float4 v[4];
        for (int m = 0; m < 4; ++m) {
            long long r = j0 + a0 + 16 * m, k = i0 + b;
            if (rows_aligned && r < rows && k + 3 < cols) {
                v[m] = __ldg((const float4*)&src(r, k));
            } else {
                float e[4];
                for (int q = 0; q < 4; ++q) e[q] = (r < rows && k + q < cols) ? src(r, k + q) : 0.0f;
                v[m] = make_float4(e[0], e[1], e[2], e[3]);
            }
        }
        for (int m = 0; m < 4; ++m) {
            float* p = &tile[a0 + 16 * m][b];
            p[0] = v[m].x; p[1] = v[m].y; p[2] = v[m].z; p[3] = v[m].w;
        }
        __syncthreads();
        for (int m = 0; m < 4; ++m) {
            int a = a0 + 16 * m;
            long long i = i0 + a, j = j0 + b;
            float4 w = make_float4(tile[b][a], tile[b + 1][a], tile[b + 2][a], tile[b + 3][a]);
            if (i < cols) {
                if (cols_aligned && j + 3 < rows) {
                    *(float4*)&dst(i, j) = w;
                } else {
                    float e[4] = {w.x, w.y, w.z, w.w};
                    for (int q = 0; q < 4; ++q) if (j + q < rows) dst(i, j + q) = e[q];
                }
            }
        }
        __syncthreads();
    }
}
"#;

    /// Row sums in C++ over `dlmd::view` the way CUB's `BlockReduce` does them: one block per
    /// row (grid-stride; any whole number of warps, up to 1024 threads), `float4` streaming
    /// loads (`__ldcs`, as the Rust kernels' partitions read), warp shuffles, the warps' sums
    /// through shared memory. Rows must be 16-aligned (`cols % 4 == 0`).
    pub const ROW_SUMS: &str = r#"
extern "C" __global__ void row_sums(dlmd::view<float, 2> x, dlmd::view<float, 1> sums) {
    __shared__ float warp_sums[2][32];
    long long rows = x.extent(0), cols = x.extent(1);
    int t = threadIdx.x, turn = 0;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float4* row = (const float4*)&x(r, 0);
        float s = 0.0f;
        for (long long j = t; j < cols / 4; j += blockDim.x) {
            float4 v = __ldcs(&row[j]);
            s += (v.x + v.y) + (v.z + v.w);
        }
        for (int m = 16; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
        if (t % 32 == 0) warp_sums[turn][t / 32] = s;
        __syncthreads();
        float total = t % 32 < blockDim.x / 32 ? warp_sums[turn][t % 32] : 0.0f;
        for (int m = 16; m > 0; m >>= 1) total += __shfl_xor_sync(0xffffffffu, total, m);
        if (t == 0) sums(r) = total;
        turn ^= 1;
    }
}
"#;

    /// The row sums of `examples/cuda/row_sums_cub.cu` (CUB's `BlockReduce`, built by nvcc):
    /// one entry point a block size, `row_sums_cub_<threads>(x, sums, rows, cols)`.
    pub struct RowSumsCub {
        functions: Vec<(usize, CudaFunction)>,
    }

    impl RowSumsCub {
        /// Loads the module (a cubin or PTX file) at `path` and its entry points for blocks of
        /// each of `threads`.
        pub fn load(ctx: &Arc<CudaContext>, path: &str, threads: &[usize]) -> Result<Self, Box<dyn Error>> {
            let module = ctx.load_module(Ptx::from_file(path))?;
            let functions = threads
                .iter()
                .map(|&t| Ok((t, module.load_function(&format!("row_sums_cub_{t}"))?)))
                .collect::<Result<_, Box<dyn Error>>>()?;
            Ok(Self { functions })
        }

        /// The entry point for blocks of `threads`, if the module has one.
        pub fn function(&self, threads: usize) -> Option<&CudaFunction> {
            self.functions.iter().find(|(t, _)| *t == threads).map(|(_, f)| f)
        }
    }
}

/// Timing work queued on a CUDA stream between two events.
#[cfg(feature = "cuda")]
pub mod timing {
    use cudarc::driver::{CudaStream, sys};
    use dlmd::cuda::{self, CudaError};
    use std::error::Error;
    use std::sync::Arc;

    const TIMING: Option<sys::CUevent_flags> = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);

    /// Times the work `f` queues on `stream` between two events, in milliseconds.
    pub fn time(
        stream: &Arc<CudaStream>,
        f: impl FnOnce() -> Result<(), Box<dyn Error>>,
    ) -> Result<f64, Box<dyn Error>> {
        let start = stream.record_event(TIMING)?;
        f()?;
        let end = stream.record_event(TIMING)?;
        end.synchronize()?;
        Ok(f64::from(start.elapsed_ms(&end)?))
    }

    /// Device work queued just before a timed span ([`Cover::time`], [`Cover::time_scoped`]):
    /// a 128 MiB device copy, during which the host makes the launch that follows. Without it
    /// the GPU waits, inside the span, for the host to check and launch the kernel (tens of
    /// microseconds for a scoped launch), and a kernel of 100 µs is timed 10% slow.
    pub struct Cover {
        from: cudarc::driver::CudaSlice<u8>,
        to: cudarc::driver::CudaSlice<u8>,
    }

    impl Cover {
        /// Two device buffers of 128 MiB on `stream`'s device.
        pub fn new(stream: &Arc<CudaStream>) -> Result<Self, Box<dyn Error>> {
            let bytes = 128 << 20;
            Ok(Self {
                from: stream.alloc_zeros(bytes)?,
                to: stream.alloc_zeros(bytes)?,
            })
        }

        fn queue(&mut self, stream: &Arc<CudaStream>) -> Result<(), Box<dyn Error>> {
            Ok(stream.memcpy_dtod(&self.from, &mut self.to)?)
        }

        /// [`time`] of `f`, after the cover's copy.
        pub fn time(
            &mut self,
            stream: &Arc<CudaStream>,
            f: impl FnOnce() -> Result<(), Box<dyn Error>>,
        ) -> Result<f64, Box<dyn Error>> {
            self.queue(stream)?;
            time(stream, f)
        }

        /// [`time_scoped`] of `launch`, after the cover's copy.
        pub fn time_scoped<'env>(
            &mut self,
            stream: &Arc<CudaStream>,
            launch: impl for<'s> FnOnce(&'s cuda::Scope<'s, 'env>) -> Result<(), CudaError>,
        ) -> Result<f64, Box<dyn Error>> {
            self.queue(stream)?;
            time_scoped(stream, launch)
        }
    }

    /// Times a launch in a `cuda::scope`: the closing event is queued inside the scope, before
    /// the scope waits for the stream, so the wait is not timed.
    pub fn time_scoped<'env>(
        stream: &Arc<CudaStream>,
        launch: impl for<'s> FnOnce(&'s cuda::Scope<'s, 'env>) -> Result<(), CudaError>,
    ) -> Result<f64, Box<dyn Error>> {
        let start = stream.record_event(TIMING)?;
        let end = cuda::scope(|s| {
            launch(s)?;
            Ok::<_, CudaError>(stream.record_event(TIMING)?)
        })?;
        end.synchronize()?;
        Ok(f64::from(start.elapsed_ms(&end)?))
    }
}

/// cuBLAS, the reference of the tensor-core benchmarks (`tensor_cores`, `hopper`).
#[cfg(any(feature = "tensor-kernels", feature = "hopper-kernels"))]
pub mod blas {
    use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, sys::cublasOperation_t};
    use cudarc::driver::CudaSlice;
    use dlmd::half::{bf16, f16};
    #[cfg(feature = "hopper-kernels")]
    use dlmd::{Const, Dims, LayoutRight, cuda::TiledMap, kernel::swizzle::Swizzle128};
    use std::error::Error;

    /// The 16-bit input types of the references: `bf16` and `f16`, with their one and zero.
    pub trait Unit: Copy {
        /// 1.
        const ONE: Self;
        /// 0.
        const ZERO: Self;
    }

    impl Unit for bf16 {
        const ONE: Self = bf16::ONE;
        const ZERO: Self = bf16::ZERO;
    }

    impl Unit for f16 {
        const ONE: Self = f16::ONE;
        const ZERO: Self = f16::ZERO;
    }

    /// `c = a · b` (`weight`: `y = x · wᵀ`, `b` the row-major `n × k` weight) by cuBLAS, for
    /// row-major matrices: cuBLAS is column-major, so it computes `cᵀ = bᵀ · aᵀ`.
    pub fn cublas<T: Unit>(
        blas: &CudaBlas,
        (m, k, n): (usize, usize, usize),
        weight: bool,
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        c: &mut CudaSlice<T>,
    ) -> Result<(), Box<dyn Error>>
    where
        CudaBlas: Gemm<T>,
    {
        let config = GemmConfig {
            transa: if weight {
                cublasOperation_t::CUBLAS_OP_T
            } else {
                cublasOperation_t::CUBLAS_OP_N
            },
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: n as i32,
            n: m as i32,
            k: k as i32,
            alpha: T::ONE,
            lda: if weight { k as i32 } else { n as i32 },
            ldb: k as i32,
            beta: T::ZERO,
            ldc: n as i32,
        };
        // SAFETY: the three buffers hold the matrices the configuration describes (`m × k`,
        // `k × n` or `n × k`, `m × n`, tightly packed), on the handle's stream.
        unsafe { blas.gemm(config, b, a, c) }?;
        Ok(())
    }

    /// `got` against cuBLAS's `reference` for the check named `what`: element for element on
    /// small integers (`exact`), else by `‖got − reference‖ / ‖reference‖` below 10⁻² (NaN, an
    /// unwritten element, fails too). Prints the check's line.
    pub fn against_cublas(what: &str, exact: bool, got: &[bf16], reference: &[bf16]) -> Result<(), Box<dyn Error>> {
        if exact {
            let wrong = got
                .iter()
                .zip(reference)
                .filter(|(g, e)| g.to_bits() != e.to_bits())
                .count();
            if wrong != 0 {
                return Err(format!("{what} integers: {wrong} elements differ from cuBLAS").into());
            }
            println!("check {what} integers: all elements match cuBLAS");
        } else {
            let (mut diff, mut norm) = (0.0f64, 0.0f64);
            for (g, e) in got.iter().zip(reference) {
                let (g, e) = (g.to_f64(), e.to_f64());
                diff += (g - e) * (g - e);
                norm += e * e;
            }
            let rel = (diff / norm).sqrt();
            if rel.is_nan() || rel >= 1e-2 {
                return Err(format!("{what} random: relative error {rel:e} against cuBLAS").into());
            }
            println!("check {what} random: relative error {rel:.2e} against cuBLAS");
        }
        Ok(())
    }

    /// A tensor map of a `bf16` matrix with boxes of `R × C` in the 128-byte swizzle.
    #[cfg(feature = "hopper-kernels")]
    pub type Map<'a, const R: usize, const C: usize> = TiledMap<'a, bf16, (Const<R>, Const<C>), Swizzle128>;

    /// The tensor map of a row-major `bf16` matrix of `rows × cols` with boxes of `R × C` in
    /// the 128-byte swizzle: the maps the Hopper products take (`x`'s `128 × 64`, `w`'s
    /// `256 × 64`, a row-major `b`'s `64 × 256`).
    #[cfg(feature = "hopper-kernels")]
    pub fn tensor_map<const R: usize, const C: usize>(
        data: &CudaSlice<bf16>,
        [rows, cols]: [usize; 2],
    ) -> Result<Map<'_, R, C>, Box<dyn Error>> {
        let view = dlmd::cuda::device_view::<_, Dims<2>, LayoutRight>(data, Dims::new([rows, cols]))?;
        Ok(TiledMap::new(&view)?)
    }
}
