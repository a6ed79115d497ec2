// KEET example for `keet tune --sweep BLOCK_SIZE=...`: a grid-stride scale
// kernel whose block size is a compile-time parameter. Known problem: the
// default of 32 threads per block leaves most warp slots of an SM empty (the
// hardware's cap on resident blocks binds first: low theoretical occupancy;
// KEET: occupancy.block_size). Build with -DBLOCK_SIZE=N to try other sizes;
// the output (a checksum) does not depend on it.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 32
#endif

#define CHECK(call)                                                             \
  do {                                                                          \
    cudaError_t err_ = (call);                                                  \
    if (err_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

__global__ void __launch_bounds__(BLOCK_SIZE) scale(int n, float a, const float* x, float* y) {
  for (int i = blockIdx.x * BLOCK_SIZE + threadIdx.x; i < n; i += gridDim.x * BLOCK_SIZE) y[i] = a * x[i];
}

int main() {
  const int n = 1 << 24;
  size_t bytes = n * sizeof(float);
  float* host = static_cast<float*>(std::malloc(bytes));
  for (int i = 0; i < n; ++i) host[i] = float(i % 977);
  float *x = nullptr, *y = nullptr;
  CHECK(cudaMalloc(&x, bytes));
  CHECK(cudaMalloc(&y, bytes));
  CHECK(cudaMemcpy(x, host, bytes, cudaMemcpyHostToDevice));
  int blocks = (n + BLOCK_SIZE - 1) / BLOCK_SIZE;
  if (blocks > 65535 * 4) blocks = 65535 * 4;
  scale<<<blocks, BLOCK_SIZE>>>(n, 2.0f, x, y);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(host, y, bytes, cudaMemcpyDeviceToHost));
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += host[i];
  std::printf("checksum %.1f\n", sum);
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  std::free(host);
  return 0;
}
