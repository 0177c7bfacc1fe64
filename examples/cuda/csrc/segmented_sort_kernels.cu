#include "kernels.cuh"

namespace demo {
template <typename K, typename V>
void sort_pairs(thrust::device_vector<K>& keys, thrust::device_vector<V>& values) {
  thrust::sort_by_key(keys.begin(), keys.end(), values.begin());
  thrust::stable_sort_by_key(keys.begin(), keys.end(), values.begin(), thrust::greater<K>());
}
template void sort_pairs<float, int32_t>(thrust::device_vector<float>&, thrust::device_vector<int32_t>&);
template void sort_pairs<int32_t, float>(thrust::device_vector<int32_t>&, thrust::device_vector<float>&);
template void sort_pairs<int64_t, int64_t>(thrust::device_vector<int64_t>&, thrust::device_vector<int64_t>&);
}  // namespace demo
