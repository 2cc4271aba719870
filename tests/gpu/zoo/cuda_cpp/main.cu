// A plain CUDA C++ program, no Python: templated kernels in a namespace, a kernel in an anonymous
// namespace, a device-lambda kernel (--extended-lambda), an extern "C" kernel, and NVTX push/pop
// ranges per step: step > phase_a | phase_b. Built and run by run.sh.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define CHECK(call)                                                                    \
  do {                                                                                 \
    cudaError_t err = (call);                                                          \
    if (err != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

namespace zoo {
template <typename T>
__global__ void saxpy(int n, T a, const T* x, T* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

template <int Block>
__global__ void block_sum(const float* x, float* out, int n) {
  __shared__ float partial[Block];
  int i = blockIdx.x * Block + threadIdx.x;
  partial[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int stride = Block / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}

template <typename F>
__global__ void apply(int n, F f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) f(i);
}
}  // namespace zoo

namespace {
__global__ void normalize_rows(float* m, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += m[r * cols + c] * m[r * cols + c];
  float scale = rsqrtf(sum + 1e-6f);
  for (int c = 0; c < cols; ++c) m[r * cols + c] *= scale;
}
}  // namespace

extern "C" __global__ void stencil5(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 2 && i < n - 2) out[i] = (in[i - 2] + in[i - 1] + in[i] + in[i + 1] + in[i + 2]) * 0.2f;
}

int main(int argc, char** argv) {
  int steps = 20;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
  const int n = 1 << 20, rows = 1024, cols = 256, threads = 256, blocks = (n + threads - 1) / threads;
  float *x, *y, *z, *m, *sum;
  double *xd, *yd;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMalloc(&z, n * sizeof(float)));
  CHECK(cudaMalloc(&m, rows * cols * sizeof(float)));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMalloc(&xd, n * sizeof(double)));
  CHECK(cudaMalloc(&yd, n * sizeof(double)));
  std::vector<float> host(n, 1.0f);
  CHECK(cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(y, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(m, host.data(), rows * cols * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(xd, 0, n * sizeof(double)));
  CHECK(cudaMemset(yd, 0, n * sizeof(double)));
  for (int step = 0; step < steps; ++step) {
    nvtxRangePushA("step");
    nvtxRangePushA("phase_a");
    zoo::saxpy<float><<<blocks, threads>>>(n, 0.5f, x, y);
    zoo::apply<<<blocks, threads>>>(n, [=] __device__(int i) { z[i] = y[i] * 2.0f - x[i]; });
    if (step % 2 == 0) zoo::saxpy<double><<<blocks, threads>>>(n, 0.25, xd, yd);
    nvtxRangePop();
    nvtxRangePushA("phase_b");
    normalize_rows<<<(rows + 127) / 128, 128>>>(m, rows, cols);
    CHECK(cudaMemset(sum, 0, sizeof(float)));
    zoo::block_sum<256><<<blocks, 256>>>(z, sum, n);
    stencil5<<<blocks, threads>>>(z, x, n);
    nvtxRangePop();
    nvtxRangePop();
  }
  float result = 0.0f;
  CHECK(cudaMemcpy(&result, sum, sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaDeviceSynchronize());
  std::printf("cuda_cpp: %d steps, sum %.3f\n", steps, result);
  return 0;
}
