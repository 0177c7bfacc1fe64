#include "kernels.cuh"

namespace demo {
template <typename K>
void sort_keys(thrust::device_vector<K>& keys) {
  thrust::sort(keys.begin(), keys.end());
  thrust::sort(keys.begin(), keys.end(), thrust::greater<K>());
}
template void sort_keys<float>(thrust::device_vector<float>&);
template void sort_keys<double>(thrust::device_vector<double>&);
template void sort_keys<int32_t>(thrust::device_vector<int32_t>&);
template void sort_keys<int64_t>(thrust::device_vector<int64_t>&);
}  // namespace demo

extern "C" void demo_sort_f32(float* data, int n) {
  thrust::device_vector<float> v(data, data + n);
  demo::sort_keys(v);
  thrust::copy(v.begin(), v.end(), data);
}
