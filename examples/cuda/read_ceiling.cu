// How fast this GPU reads a 256 MiB f32 matrix (8192 x 8192, and the same bytes as 65536 x 1024),
// by the fastest CUDA C++ designs for row sums and for a plain streaming read: the ceiling that
// the cooperative row sums (examples/kernels: `row_sums_block`, `row_sums_block_wide`) are held
// against. Each span is timed as the Rust benchmarks time theirs: after a 128 MiB device copy
// between buffers of its own (it covers the launch and leaves none of the matrix in L2), the
// designs alternated, medians of 30. Every row-sum design is checked against the CPU (exact: the
// data are multiples of 1/8). Built and run on the GPU machine (scripts/gpu-run.sh), with
// row_sums_cub.cu beside it:
//     nvcc -O3 -arch=native -o read_ceiling read_ceiling.cu && ./read_ceiling
// CUB's row sums, whose `row_sums` the designs below share, and CUB's BlockReduce.
#include "row_sums_cub.cu"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t e = (call);                                                                  \
        if (e != cudaSuccess) {                                                                  \
            std::printf("read_ceiling: %s at line %d\n", cudaGetErrorString(e), __LINE__);       \
            std::exit(1);                                                                        \
        }                                                                                        \
    } while (0)

// One block per row (grid-stride), U float4 loads of a row in flight a thread, then CUB's block
// sum: the benchmark's CUB reference (row_sums_cub.cu) at other block sizes and load counts.
template <int T, int U>
__global__ void __launch_bounds__(T) rows_block(const float* __restrict__ x, float* __restrict__ sums, int rows, int cols) {
    row_sums<T, U>(x, sums, rows, cols);
}

// Whole rows copied into a ring of S shared buffers by the bulk-copy engine (TMA,
// `cp.async.bulk`), issued by one thread S rows ahead; the block sums a row from shared memory.
template <int T, int S>
__global__ void __launch_bounds__(T) rows_bulk(const float* __restrict__ x, float* __restrict__ sums, int rows, int cols) {
    extern __shared__ __align__(128) unsigned char ring[];
    using Reduce = cub::BlockReduce<float, T>;
    __shared__ typename Reduce::TempStorage temp;
    __shared__ __align__(8) unsigned long long full[S];
    const unsigned bytes = cols * 4;
    float* buf = reinterpret_cast<float*>(ring);
    auto bar = [&](int s) { return (unsigned)__cvta_generic_to_shared(&full[s]); };
    auto issue = [&](int r, int s) {
        unsigned dst = (unsigned)__cvta_generic_to_shared(buf + (size_t)s * cols);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar(s)), "r"(bytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(dst), "l"(x + (size_t)r * cols), "r"(bytes), "r"(bar(s)) : "memory");
    };
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar(s)));
        asm volatile("fence.mbarrier_init.release.cluster;");
        for (int s = 0; s < S; ++s)
            if (blockIdx.x + s * gridDim.x < rows) issue(blockIdx.x + s * gridDim.x, s);
    }
    __syncthreads();
    int k = 0;
    for (int r = blockIdx.x; r < rows; r += gridDim.x, ++k) {
        const int s = k % S;
        asm volatile("{\n .reg .pred p;\n wait: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra wait;\n}"
                     ::"r"(bar(s)), "r"((k / S) & 1) : "memory");
        const float4* row = reinterpret_cast<const float4*>(buf + (size_t)s * cols);
        float sum = 0.0f;
        for (int j = threadIdx.x; j < cols / 4; j += T) {
            float4 v = row[j];
            sum += (v.x + v.y) + (v.z + v.w);
        }
        float total = Reduce(temp).Sum(sum);
        if (threadIdx.x == 0) sums[r] = total;
        __syncthreads();  // every thread is done with buffer s
        if (threadIdx.x == 0 && r + S * gridDim.x < rows) {
            asm volatile("fence.proxy.async.shared::cta;");
            issue(r + S * gridDim.x, s);
        }
    }
}

// A plain streaming read of n float4, grid-stride with U loads in flight a thread; one atomic
// a warp (no row sums: the fastest a read of these bytes can be with ordinary loads).
template <int T, int U>
__global__ void __launch_bounds__(T) stream_read(const float4* __restrict__ x, size_t n, float* out) {
    float s = 0.0f;
    const size_t stride = (size_t)gridDim.x * T;
    size_t i = (size_t)blockIdx.x * T + threadIdx.x;
    for (; i + (U - 1) * stride < n; i += U * stride) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = __ldcs(x + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; ++u) s += (v[u].x + v[u].y) + (v[u].z + v[u].w);
    }
    for (; i < n; i += stride) {
        float4 v = __ldcs(x + i);
        s += (v.x + v.y) + (v.z + v.w);
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(~0u, s, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, s);
}

struct Design {
    std::string name;
    std::function<void()> launch;
    bool row_sums;
    std::vector<float> ms;
};

int main() {
    int device = 0, sms = 0;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const size_t n = 8192ull * 8192ull;
    const size_t cover_bytes = 128ull << 20;
    float *x, *sums, *out;
    void *cover_a, *cover_b;
    CHECK(cudaMalloc(&x, n * 4));
    CHECK(cudaMalloc(&sums, 65536 * 4));
    CHECK(cudaMalloc(&out, 4));
    CHECK(cudaMalloc(&cover_a, cover_bytes));
    CHECK(cudaMalloc(&cover_b, cover_bytes));
    std::vector<float> host(n);
    for (size_t i = 0; i < n; ++i) host[i] = (float)((int)((i * 7919) % 64) - 32) / 8.0f;
    CHECK(cudaMemcpy(x, host.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaFuncSetAttribute(rows_bulk<256, 3>, cudaFuncAttributeMaxDynamicSharedMemorySize, 3 * 32768));
    CHECK(cudaFuncSetAttribute(rows_bulk<128, 8>, cudaFuncAttributeMaxDynamicSharedMemorySize, 8 * 4096));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (const int rows : {8192, 65536}) {
        const int cols = (int)(n / rows);
        std::vector<Design> designs;
        auto add = [&](std::string name, std::function<void()> launch, bool row_sums) {
            designs.push_back({std::move(name), std::move(launch), row_sums, {}});
        };
        add("device copy of the same bytes (read + write)", [=] { CHECK(cudaMemcpyAsync(cover_a, x, n * 2, cudaMemcpyDeviceToDevice)); }, false);
        add("streaming read, 256 threads x 4 float4, 8 blocks an SM", [=] { stream_read<256, 4><<<sms * 8, 256>>>(x4, n / 4, out); }, false);
        if (cols == 8192) {
            add("row sums, CUB BlockReduce, 512 threads x 2 float4", [=] { rows_block<512, 2><<<rows, 512>>>(x, sums, rows, cols); }, true);
            add("row sums, CUB BlockReduce, 512 threads x 4 float4", [=] { rows_block<512, 4><<<rows, 512>>>(x, sums, rows, cols); }, true);
            add("row sums, CUB BlockReduce, 1024 threads x 2 float4", [=] { rows_block<1024, 2><<<rows, 1024>>>(x, sums, rows, cols); }, true);
            add("row sums, bulk copies (TMA) into 3 x 32 KiB, 256 threads", [=] { rows_bulk<256, 3><<<sms * 2, 256, 3 * 32768>>>(x, sums, rows, cols); }, true);
        } else {
            add("row sums, CUB BlockReduce, 128 threads x 2 float4", [=] { rows_block<128, 2><<<rows, 128>>>(x, sums, rows, cols); }, true);
            add("row sums, CUB BlockReduce, 256 threads x 1 float4", [=] { rows_block<256, 1><<<rows, 256>>>(x, sums, rows, cols); }, true);
            add("row sums, bulk copies (TMA) into 8 x 4 KiB, 128 threads", [=] { rows_bulk<128, 8><<<sms * 6, 128, 8 * 4096>>>(x, sums, rows, cols); }, true);
        }
        std::vector<double> expected(rows, 0.0);
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c) expected[r] += host[(size_t)r * cols + c];
        std::vector<float> got(rows);
        for (auto& d : designs) {
            if (!d.row_sums) continue;
            CHECK(cudaMemset(sums, 0xff, rows * 4));
            d.launch();
            CHECK(cudaGetLastError());
            CHECK(cudaDeviceSynchronize());
            CHECK(cudaMemcpy(got.data(), sums, rows * 4, cudaMemcpyDeviceToHost));
            for (int r = 0; r < rows; ++r) {
                if ((double)got[r] != expected[r]) {
                    std::printf("read_ceiling: %s: row %d sums to %g, the CPU to %g\n", d.name.c_str(), r, got[r], expected[r]);
                    return 1;
                }
            }
        }
        for (int round = 0; round < 31; ++round) {
            for (auto& d : designs) {
                CHECK(cudaMemcpyAsync(cover_b, cover_a, cover_bytes, cudaMemcpyDeviceToDevice));
                CHECK(cudaEventRecord(start));
                d.launch();
                CHECK(cudaEventRecord(stop));
                CHECK(cudaEventSynchronize(stop));
                CHECK(cudaGetLastError());
                float ms = 0.0f;
                CHECK(cudaEventElapsedTime(&ms, start, stop));
                if (round > 0) d.ms.push_back(ms);  // the first round warms up
            }
        }
        double best = 1e30;
        std::string best_name;
        for (auto& d : designs) {
            std::sort(d.ms.begin(), d.ms.end());
            const double ms = d.ms[d.ms.size() / 2];
            std::printf("read ceiling %dx%d f32: %-58s %.4f ms (%.0f GB/s)%s\n", rows, cols, d.name.c_str(), ms,
                        n * 4 / ms / 1e6, d.row_sums ? ", sums match the CPU" : "");
            if (d.name.rfind("device copy", 0) != 0 && ms < best) best = ms, best_name = d.name;
        }
        std::printf("read ceiling %dx%d f32: fastest read %.4f ms (%.0f GB/s): %s\n", rows, cols, best, n * 4 / best / 1e6,
                    best_name.c_str());
    }
    return 0;
}
