/* reproject_cuda.cu — CUDA twin of the resampling kernel: one thread per output pixel, 32×8
 * blocks so a warp reads neighbouring input pixels of one or two rows (the footprints of
 * neighbouring outputs overlap and hit L1). The arguments travel by value; the two TAN/SIP
 * structures they point to live in device memory (their addresses are uniform across a
 * warp, so each coefficient load is one broadcast). */
#include <cuda_runtime.h>

#include "core/gpu/cuda_check.h"
#include "reproject_kernels.h"

__global__ void rp_resample_kernel(const tide_rp_args a) {
    const int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t y = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (x < a.out_w && y < a.out_h)
        tide_rp_pixel(&a, x, y);
}

extern "C" int tide_rp_resample_cuda(tide_ctx *ctx, const tide_rp_args *a) {
    if (a->out_w <= 0 || a->out_h <= 0)
        return 0;
    const dim3 block(32, 8);
    const int64_t gx = (a->out_w + 31) / 32, gy = (a->out_h + 7) / 8;
    if (gy > 65535)
        return tide_error(TIDE_E_RANGE,
                          "reproject: output of %lld rows is too tall for one "
                          "launch",
                          (long long)a->out_h);
    const dim3 grid((unsigned)gx, (unsigned)gy);
    rp_resample_kernel<<<grid, block, 0, (cudaStream_t)ctx->stream>>>(*a);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
