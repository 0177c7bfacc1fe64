#include "kernels.cuh"

namespace demo {
template <typename T>
T sum_of_squares(const thrust::device_vector<T>& x) {
  return thrust::transform_reduce(x.begin(), x.end(), square<T>(), T(0), thrust::plus<T>());
}
template <typename T>
void scale(thrust::device_vector<T>& x, T factor) {
  int n = static_cast<int>(x.size());
  scale_kernel<T><<<(n + 255) / 256, 256>>>(thrust::raw_pointer_cast(x.data()), factor, n);
}
template float sum_of_squares<float>(const thrust::device_vector<float>&);
template double sum_of_squares<double>(const thrust::device_vector<double>&);
template int64_t sum_of_squares<int64_t>(const thrust::device_vector<int64_t>&);
template void scale<float>(thrust::device_vector<float>&, float);
template void scale<double>(thrust::device_vector<double>&, double);
}  // namespace demo
