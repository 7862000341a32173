/* diff_ops_cuda.cu — CUDA twins of the difference pipeline's kernels (diff_ops.h):
 * grid-stride loops over the formulas of diff_ops_math.h. */
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#include "pipeline/diff_ops.h"

__global__ void diffp_prepare_kernel(int64_t w, int64_t h, int64_t stride, float *pix,
                                     uint16_t *mask, float *var, const float *bkg,
                                     const float *rms, float gain, float saturate) {
    const int64_t n = w * h;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t y = k / w, x = k - y * w, i = y * stride + x;
        tide_diffp_prepare_one(pix + i, bkg[k], rms[k], mask + i, var + i, gain, saturate);
    }
}

extern "C" int tide_diffp_prepare_cuda(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride,
                                       float *pix, uint16_t *mask, float *var, const float *bkg,
                                       const float *rms, float gain, float saturate) {
    if (w <= 0 || h <= 0)
        return 0;
    const int block = 256;
    int64_t g = (w * h + block - 1) / block;
    if (g > 65535 * 16)
        g = 65535 * 16;
    diffp_prepare_kernel<<<(unsigned)g, block, 0, (cudaStream_t)ctx->stream>>>(
        w, h, stride, pix, mask, var, bkg, rms, gain, saturate);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

__global__ void diffp_scale_kernel(int64_t w, int64_t h, int64_t stride, float *a, float f) {
    const int64_t n = w * h;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t y = k / w, x = k - y * w;
        a[y * stride + x] *= f;
    }
}

extern "C" int tide_diffp_scale_cuda(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride,
                                     float *a, float f) {
    if (w <= 0 || h <= 0)
        return 0;
    const int block = 256;
    int64_t g = (w * h + block - 1) / block;
    if (g > 65535 * 16)
        g = 65535 * 16;
    diffp_scale_kernel<<<(unsigned)g, block, 0, (cudaStream_t)ctx->stream>>>(w, h, stride, a, f);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

/* One thread per box; a warp's boxes are neighbours along x, so its rows are read together. */
__global__ void diffp_boxz_kernel(int64_t nx, int64_t ny, int64_t stride, const float *pix,
                                  const uint16_t *mask, const float *var, int b, double *z) {
    const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= nx * ny)
        return;
    const int64_t by = k / nx, bx = k - by * nx;
    z[k] = tide_diffp_box_z(pix, mask, var, stride, b, bx, by);
}

extern "C" int tide_diffp_boxz_cuda(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride,
                                    const float *pix, const uint16_t *mask, const float *var,
                                    int b, double *z) {
    const int64_t n = (w / b) * (h / b);
    if (n <= 0)
        return 0;
    diffp_boxz_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)ctx->stream>>>(
        w / b, h / b, stride, pix, mask, var, b, z);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
