/* candidates_cuda.cu — CUDA twins of the candidate-detection preparation and the S/N
 * negation: one thread a pixel. */
#include <cuda_runtime.h>
#include "core/gpu/cuda_check.h"
#include "candidates_kernels.h"

__global__ void cand_prep_kernel(const tide_cand_prep_job jb) {
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= jb.width * jb.height)
        return;
    tide_cand_prep_pixel(&jb, g % jb.width, g / jb.width);
}

extern "C" int tide_cand_prep_cuda(tide_ctx *ctx, const tide_cand_prep_job *job) {
    const int64_t n = job->width * job->height;
    if (n <= 0)
        return 0;
    const int64_t blocks = (n + 255) / 256;
    if (blocks > 2147483647LL)
        return tide_error(TIDE_E_RANGE, "candidates: frame too large");
    cand_prep_kernel<<<(unsigned)blocks, 256, 0, (cudaStream_t)ctx->stream>>>(*job);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

__global__ void cand_negate_kernel(float *a, int64_t n) {
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g < n)
        a[g] = -a[g];
}

extern "C" int tide_cand_negate_cuda(tide_ctx *ctx, float *a, int64_t n) {
    if (n <= 0)
        return 0;
    const int64_t blocks = (n + 255) / 256;
    if (blocks > 2147483647LL)
        return tide_error(TIDE_E_RANGE, "candidates: frame too large");
    cand_negate_kernel<<<(unsigned)blocks, 256, 0, (cudaStream_t)ctx->stream>>>(a, n);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
