// Shared templates: every kernel file instantiates thrust/cub algorithms over several key/value types, which is
// what makes sgl-kernel's translation units cost cicc seconds and GiBs each.
#pragma once
#include <cstdint>
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/transform.h>

namespace demo {

template <typename T>
__global__ void scale_kernel(T* x, T factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * factor;
}

template <typename T>
struct square {
  __host__ __device__ T operator()(T v) const { return v * v; }
};

}  // namespace demo
