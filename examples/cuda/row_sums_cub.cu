// Row sums of a row-major f32 matrix written with CUB, the reference the cooperative row sums
// (examples/kernels: `row_sums_block`, `row_sums_block_wide`) are measured against, at their
// block sizes and at 1024 threads (the fastest here on an H100): one block
// per row (grid-stride), `float4` loads (evict-first, read-only), a per-thread sum and
// `cub::BlockReduce`. Rows must be a multiple of four elements and 16-byte aligned, as the
// benchmark's are. Built on the GPU machine by nvcc (scripts/gpu-run.sh):
//     nvcc -O3 -arch=native -cubin -o row_sums_cub.cubin row_sums_cub.cu
// and given to `examples/cooperative.rs --bench --cub row_sums_cub.cubin`.
#include <cub/block/block_reduce.cuh>

// IN_FLIGHT loads of a row a thread issued together (the loop unrolled that many times);
// examples/cuda/read_ceiling.cu times other counts.
template <int THREADS, int IN_FLIGHT = 2>
__device__ void row_sums(const float* __restrict__ x, float* __restrict__ sums, int rows, int cols) {
    using Reduce = cub::BlockReduce<float, THREADS>;
    __shared__ typename Reduce::TempStorage temp;
    const int runs = cols / 4;
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const float4* row = reinterpret_cast<const float4*>(x + (size_t)r * cols);
        float s = 0.0f;
#pragma unroll IN_FLIGHT
        for (int j = threadIdx.x; j < runs; j += THREADS) {
            float4 v = __ldcs(row + j);
            s += (v.x + v.y) + (v.z + v.w);
        }
        float total = Reduce(temp).Sum(s);
        if (threadIdx.x == 0) sums[r] = total;
        // `temp` is written again by the next row's reduction.
        __syncthreads();
    }
}

extern "C" __global__ void __launch_bounds__(128) row_sums_cub_128(const float* x, float* sums, int rows, int cols) {
    row_sums<128>(x, sums, rows, cols);
}

extern "C" __global__ void __launch_bounds__(1024) row_sums_cub_1024(const float* x, float* sums, int rows, int cols) {
    row_sums<1024>(x, sums, rows, cols);
}

extern "C" __global__ void __launch_bounds__(512) row_sums_cub_512(const float* x, float* sums, int rows, int cols) {
    row_sums<512>(x, sums, rows, cols);
}
