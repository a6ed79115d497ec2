// KEET example, fixed variant of transpose.cu: a block reads a 32x32 tile
// into shared memory with coalesced loads and writes it out transposed with
// coalesced stores. The tile has one padding column, so the column-wise
// shared-memory reads fall in 32 different banks (no bank conflicts). Same
// checksum as transpose.cu.
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

__global__ void transposeTiled(const float* in, float* out) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = in[y * N + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  out[y * N + x] = tile[threadIdx.x][threadIdx.y];
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
  transposeTiled<<<grid, block>>>(in, out);
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
