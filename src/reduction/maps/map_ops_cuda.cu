/* map_ops_cuda.cu — CUDA twins of the pipeline's kernels: grid-stride loops, one element
 * per thread per step, the formulas of map_ops_math.h. */
#include <cuda_runtime.h>

#include "core/gpu/cuda_check.h"
#include "map_ops.h"

__global__ void pipe_map_kernel(int op, int64_t w, int64_t h, float *a, int64_t sa, const float *b,
                                int64_t sb, float c) {
    const int64_t n = w * h;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t y = i / w, x = i - y * w;
        float *p = a + y * sa + x;
        *p = tide_pipe_map_one(op, *p, b ? b[y * sb + x] : 0.0f, c);
    }
}

__global__ void pipe_gather_kernel(const float *img, int64_t stride, int64_t w, int64_t h,
                                   int64_t n, const double *x, const double *y, float *out) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = tide_pipe_gather_one(img, stride, w, h, x[i], y[i]);
}

static unsigned grid_for(int64_t n, int block) {
    int64_t g = (n + block - 1) / block;
    return (unsigned)(g > 65535 * 16 ? 65535 * 16 : (g < 1 ? 1 : g));
}

extern "C" int tide_pipe_map_cuda(tide_ctx *ctx, int op, int64_t w, int64_t h, float *a, int64_t sa,
                                  const float *b, int64_t sb, float c) {
    if (w <= 0 || h <= 0)
        return 0;
    const int block = 256;
    pipe_map_kernel<<<grid_for(w * h, block), block, 0, (cudaStream_t)ctx->stream>>>(op, w, h, a,
                                                                                     sa, b, sb, c);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

extern "C" int tide_pipe_gather_cuda(tide_ctx *ctx, const float *img, int64_t stride, int64_t w,
                                     int64_t h, int64_t n, const double *x, const double *y,
                                     float *out) {
    if (n <= 0)
        return 0;
    const int block = 256;
    pipe_gather_kernel<<<grid_for(n, block), block, 0, (cudaStream_t)ctx->stream>>>(
        img, stride, w, h, n, x, y, out);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
