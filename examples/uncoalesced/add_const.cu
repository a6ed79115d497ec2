// KEET example: adds a constant to an array of double3 (24-byte elements).
// Known problem: each thread loads and stores one double3, so a warp's
// accesses are strided by 24 bytes and split into many sectors per request
// (uncoalesced global accesses; KEET: memory.uncoalesced_global).
// The fixed variant is add_const_fixed.cu. Output: a checksum, the same for both.
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

__global__ void addConstDouble3(int n, const double3* in, double k, double3* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    double3 v = in[i];
    v.x += k;
    v.y += k;
    v.z += k;
    out[i] = v;
  }
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
  int block = 256, grid = (n + block - 1) / block;
  addConstDouble3<<<grid, block>>>(n, in, k, out);
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
