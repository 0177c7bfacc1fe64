#include "kernels.cuh"

namespace demo {
template <typename T>
void prefix_sums(thrust::device_vector<T>& x) {
  thrust::inclusive_scan(x.begin(), x.end(), x.begin());
  thrust::exclusive_scan(x.begin(), x.end(), x.begin(), T(0), thrust::maximum<T>());
}
template void prefix_sums<float>(thrust::device_vector<float>&);
template void prefix_sums<int32_t>(thrust::device_vector<int32_t>&);
template void prefix_sums<int64_t>(thrust::device_vector<int64_t>&);
}  // namespace demo
