// dlmd kernel-side views: the C++ twin of dlmd::kernel::ViewParam<T, R>, for NVRTC, nvcc and
// plain C++ host code.
//
// A dlmd device view passed to a kernel by value arrives as dlmd::view<T, R>, the same bytes a
// Rust kernel (#[dlmd::kernel]) receives: the address of element (0, ..., 0); how many elements
// before it the span starts (where negative strides reach); R extents and R strides (in
// elements); the span's length in elements; the device ordinal; all fixed-width. Indexing
// matches the Rust view exactly: element (i0, ..., iR-1) is data[sum(i_k * stride_k)].
#pragma once

#ifdef DLMD_WITH_MDSPAN
#include <cuda/std/array>
#include <cuda/std/mdspan>
#endif

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define DLMD_HOST_DEVICE __host__ __device__
#else
#define DLMD_HOST_DEVICE
#endif

namespace dlmd {

template <typename T, int R>
struct view {
  static_assert(R > 0, "rank-0 views are dlmd::view<T, 0>, specialised below");
  // Element (0, ..., 0).
  T* data;
  // How many elements before `data` the span starts.
  long long offset;
  long long extents[R];
  long long strides[R];
  // The elements the span holds, from data - offset.
  long long span;
  // The CUDA device ordinal of the memory.
  int device;

  DLMD_HOST_DEVICE static constexpr int rank() { return R; }

  DLMD_HOST_DEVICE long long extent(int r) const { return extents[r]; }
  DLMD_HOST_DEVICE long long stride(int r) const { return strides[r]; }

  DLMD_HOST_DEVICE long long size() const {
    long long n = 1;
    for (int r = 0; r < R; ++r) n *= extents[r];
    return n;
  }

  // Element at a full multi-index, as many indices as the rank.
  template <typename... I>
  DLMD_HOST_DEVICE T& operator()(I... index) const {
    static_assert(sizeof...(I) == R, "a dlmd::view<T, R> takes exactly R indices");
    const long long idx[R] = {static_cast<long long>(index)...};
    long long at = 0;
    for (int r = 0; r < R; ++r) at += idx[r] * strides[r];
    return data[at];
  }

  // Whether the strides are row-major and compact, so `data[i]` walks the elements in index
  // order: the fast path for element-wise kernels.
  DLMD_HOST_DEVICE bool is_contiguous() const {
    long long expected = 1;
    for (int r = R - 1; r >= 0; --r) {
      if (extents[r] > 1 && strides[r] != expected) return false;
      expected *= extents[r];
    }
    return true;
  }

  // The multi-index of the i-th element in row-major order (the slow path: one division per
  // dimension).
  DLMD_HOST_DEVICE void unravel(long long i, long long (&index)[R]) const {
    for (int r = R - 1; r >= 0; --r) {
      index[r] = i % extents[r];
      i /= extents[r];
    }
  }

#ifdef DLMD_WITH_MDSPAN
  // The same view as a cuda::std::mdspan with layout_stride (define DLMD_WITH_MDSPAN, and give
  // the CCCL include path, to have it).
  DLMD_HOST_DEVICE cuda::std::mdspan<T, cuda::std::dextents<long long, R>, cuda::std::layout_stride>
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
  long long offset;
  long long span;
  int device;
  DLMD_HOST_DEVICE static constexpr int rank() { return 0; }
  DLMD_HOST_DEVICE long long size() const { return 1; }
  DLMD_HOST_DEVICE T& operator()() const { return *data; }
};

// The layout Rust's ViewParam<T, R> has (asserted there too): 8-byte steps, the device last.
static_assert(sizeof(view<float, 3>) == 80 && alignof(view<float, 3>) == 8, "dlmd::view<T, 3> is 80 bytes");
static_assert(sizeof(view<double, 1>) == 48, "dlmd::view<T, 1> is 48 bytes");
static_assert(sizeof(view<double, 0>) == 32, "dlmd::view<T, 0> is 32 bytes");

}  // namespace dlmd
