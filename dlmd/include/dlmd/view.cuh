// dlmd kernel-side views: the C++ twin of dlmd::cuda::KernelView<T, R>, for NVRTC and nvcc.
//
// A dlmd device view passed to a kernel by value arrives as dlmd::view<T, R>: the pointer to the
// start of the span, then R extents and R strides (in elements), as 64-bit integers. Indexing
// matches the Rust view exactly: element (i0, ..., iR-1) is data[offset + sum(i_k * stride_k)],
// where offset is folded into `data` before launch.
#pragma once

#ifdef DLMD_WITH_MDSPAN
#include <cuda/std/array>
#include <cuda/std/mdspan>
#endif

namespace dlmd {

template <typename T, int R>
struct view {
  static_assert(R > 0, "rank-0 views are dlmd::view<T, 0>, specialised below");
  T* data;
  long long extents[R];
  long long strides[R];

  __host__ __device__ static constexpr int rank() { return R; }

  __host__ __device__ long long extent(int r) const { return extents[r]; }
  __host__ __device__ long long stride(int r) const { return strides[r]; }

  __host__ __device__ long long size() const {
    long long n = 1;
    for (int r = 0; r < R; ++r) n *= extents[r];
    return n;
  }

  // Element at a full multi-index, as many indices as the rank.
  template <typename... I>
  __host__ __device__ T& operator()(I... index) const {
    static_assert(sizeof...(I) == R, "a dlmd::view<T, R> takes exactly R indices");
    const long long idx[R] = {static_cast<long long>(index)...};
    long long offset = 0;
    for (int r = 0; r < R; ++r) offset += idx[r] * strides[r];
    return data[offset];
  }

  // Whether the strides are row-major and compact, so `data[i]` walks the elements in index
  // order: the fast path for element-wise kernels.
  __host__ __device__ bool is_contiguous() const {
    long long expected = 1;
    for (int r = R - 1; r >= 0; --r) {
      if (extents[r] > 1 && strides[r] != expected) return false;
      expected *= extents[r];
    }
    return true;
  }

  // The multi-index of the i-th element in row-major order (the slow path: one division per
  // dimension).
  __host__ __device__ void unravel(long long i, long long (&index)[R]) const {
    for (int r = R - 1; r >= 0; --r) {
      index[r] = i % extents[r];
      i /= extents[r];
    }
  }

#ifdef DLMD_WITH_MDSPAN
  // The same view as a cuda::std::mdspan with layout_stride (define DLMD_WITH_MDSPAN, and give
  // the CCCL include path, to have it).
  __host__ __device__ cuda::std::mdspan<T, cuda::std::dextents<long long, R>, cuda::std::layout_stride>
  to_mdspan() const {
    cuda::std::array<long long, R> e{}, s{};
    for (int r = 0; r < R; ++r) {
      e[r] = extents[r];
      s[r] = strides[r];
    }
    using E = cuda::std::dextents<long long, R>;
    return {data, cuda::std::layout_stride::mapping<E>(E(e), s)};
  }
#endif
};

template <typename T>
struct view<T, 0> {
  T* data;
  __host__ __device__ static constexpr int rank() { return 0; }
  __host__ __device__ long long size() const { return 1; }
  __host__ __device__ T& operator()() const { return *data; }
};

}  // namespace dlmd
