// KEET example: matrix transpose, one element per thread.
// Known problem: reads are coalesced but each warp's writes go down a column,
// 4 KiB apart, so every store touches its own sector (uncoalesced global
// stores; KEET: memory.uncoalesced_global). The fixed variant,
// transpose_tiled.cu, goes through a padded shared-memory tile. Output: a
// checksum of the transposed matrix, the same for both.
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

constexpr int N = 2048;
constexpr int TILE = 32;

__global__ void transposeNaive(const float* in, float* out) {
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  out[x * N + y] = in[y * N + x];
}

int main() {
  size_t bytes = size_t(N) * N * sizeof(float);
  float* host = static_cast<float*>(std::malloc(bytes));
  for (int i = 0; i < N * N; ++i) host[i] = float(i % 1021);
  float *in = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&in, bytes));
  CHECK(cudaMalloc(&out, bytes));
  CHECK(cudaMemcpy(in, host, bytes, cudaMemcpyHostToDevice));
  dim3 block(TILE, TILE), grid(N / TILE, N / TILE);
  transposeNaive<<<grid, block>>>(in, out);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(host, out, bytes, cudaMemcpyDeviceToHost));
  double sum = 0;
  for (int i = 0; i < N * N; ++i) sum += double(host[i]) * (i % 3);
  std::printf("checksum %.1f\n", sum);
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  std::free(host);
  return 0;
}
