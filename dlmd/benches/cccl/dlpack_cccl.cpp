// The C++ reference for dlmd's `dlpack` benchmark: CCCL's cuda::to_dlpack_tensor and
// cuda::to_host_mdspan doing the same work on the same shapes. Prints one line per case:
// "<group>/<case> <median ns per call>".
//
// Build (needs CCCL >= 3.2 headers with <cuda/mdspan>'s DLPack conversions, and the CUDA
// toolkit's headers): see scripts/bench-cccl.sh.
#include <cuda/mdspan>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <vector>

namespace {

template <typename T>
inline void keep(const T& value) {
  asm volatile("" : : "r"(&value) : "memory");
}

template <typename F>
double median_ns(F&& f) {
  constexpr int iterations = 2'000'000;
  std::vector<double> samples;
  for (int rep = 0; rep < 21; ++rep) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
      f();
    }
    auto stop = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::nano>(stop - start).count() / iterations);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

void report(const char* name, double ns) { std::printf("%s %.3f\n", name, ns); }

}  // namespace

int main() {
  std::vector<float> data(4 * 8 * 16 * 32);
  using dims2 = cuda::std::dims<2>;
  using dims4 = cuda::std::dims<4>;
  cuda::host_mdspan<float, dims2> r2{data.data(), dims2{64, 256}};
  cuda::host_mdspan<float, dims4> r4{data.data(), dims4{4, 8, 16, 32}};
  using stride4 = cuda::std::layout_stride::mapping<dims4>;
  cuda::host_mdspan<float, dims4, cuda::std::layout_stride> s4{
      data.data(), stride4{dims4{4, 8, 16, 16}, cuda::std::array<size_t, 4>{4096, 512, 32, 2}}};

  auto* p2 = &r2;
  auto* p4 = &r4;
  auto* ps4 = &s4;
  keep(p2);
  keep(p4);
  keep(ps4);
  report("export+get/rank2 layout_right", median_ns([&] {
           auto dl = cuda::to_dlpack_tensor(*p2);
           DLTensor t = dl.get();
           keep(t);
         }));
  report("export+get/rank4 layout_right", median_ns([&] {
           auto dl = cuda::to_dlpack_tensor(*p4);
           DLTensor t = dl.get();
           keep(t);
         }));
  report("export+get/rank4 layout_stride", median_ns([&] {
           auto dl = cuda::to_dlpack_tensor(*ps4);
           DLTensor t = dl.get();
           keep(t);
         }));

  auto d2 = cuda::to_dlpack_tensor(r2);
  auto d4 = cuda::to_dlpack_tensor(r4);
  auto ds4 = cuda::to_dlpack_tensor(s4);
  DLTensor t2 = d2.get(), t4 = d4.get(), ts4 = ds4.get();
  DLTensor* q2 = &t2;
  DLTensor* q4 = &t4;
  DLTensor* qs4 = &ts4;
  keep(q2);
  keep(q4);
  keep(qs4);
  report("import/rank2 layout_right", median_ns([&] {
           auto md = cuda::to_host_mdspan<float, 2, cuda::std::layout_right>(*q2);
           keep(md);
         }));
  report("import/rank4 layout_right", median_ns([&] {
           auto md = cuda::to_host_mdspan<float, 4, cuda::std::layout_right>(*q4);
           keep(md);
         }));
  report("import/rank4 layout_stride", median_ns([&] {
           auto md = cuda::to_host_mdspan<float, 4, cuda::std::layout_stride>(*qs4);
           keep(md);
         }));
  report("import error/rank4 stride mismatch", median_ns([&] {
           try {
             auto md = cuda::to_host_mdspan<float, 4, cuda::std::layout_right>(*qs4);
             keep(md);
           } catch (const std::invalid_argument& e) {
             keep(e);
           }
         }));
  return 0;
}
