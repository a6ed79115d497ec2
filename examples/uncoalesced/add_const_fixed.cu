// KEET example, fixed variant of add_const.cu: the double3 array is treated
// as 3n doubles, so consecutive threads touch consecutive 8-byte words and a
// warp's loads and stores are fully coalesced. Same checksum as add_const.cu.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                             \
  do {                                                                          \
    cudaError_t err_ = (call);                                                  \
    if (err_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

__global__ void addConstDouble(int n, const double* in, double k, double* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + k;
}

int main() {
  const int n = 1 << 20;
  const double k = 10.0;
  size_t bytes = n * sizeof(double3);
  double3* host = static_cast<double3*>(std::malloc(bytes));
  for (int i = 0; i < n; ++i) host[i] = make_double3(i % 7, i % 11, i % 13);
  double3 *in = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&in, bytes));
  CHECK(cudaMalloc(&out, bytes));
  CHECK(cudaMemcpy(in, host, bytes, cudaMemcpyHostToDevice));
  int block = 256, grid = (3 * n + block - 1) / block;
  addConstDouble<<<grid, block>>>(3 * n, reinterpret_cast<const double*>(in), k, reinterpret_cast<double*>(out));
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(host, out, bytes, cudaMemcpyDeviceToHost));
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += host[i].x + host[i].y + host[i].z;
  std::printf("checksum %.1f\n", sum);
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  std::free(host);
  return 0;
}
