/* tan_sip_cuda.cu — CUDA twins of the TAN/SIP kernels. The tide_wcs_tansip (under 2 KB) is
 * passed by value: kernel parameters sit in constant memory, and every thread reads the same
 * coefficient at the same time, which the constant cache broadcasts. Grid-stride loops, one
 * point per thread per step, double precision. */
#include <cuda_runtime.h>
#include "core/gpu/cuda_check.h"
#include "tan_sip_kernels.h"
#include "tan_sip_math.h"

static_assert(sizeof(tide_wcs_tansip) < 4000, "tide_wcs_tansip must fit the kernel parameters");

__global__ void tansip_pix2sky_kernel(const tide_wcs_tansip t, int64_t n, const double *x,
                                      const double *y, double *ra, double *dec) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        tide_tansip_pix2sky_one(&t, x[i], y[i], &ra[i], &dec[i]);
}

__global__ void tansip_sky2pix_kernel(const tide_wcs_tansip t, int64_t n, const double *ra,
                                      const double *dec, double *x, double *y) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        tide_tansip_sky2pix_one(&t, ra[i], dec[i], &x[i], &y[i]);
}

static unsigned grid_for(int64_t n, int block) {
    int64_t g = (n + block - 1) / block;
    return (unsigned)(g > 65535 * 16 ? 65535 * 16 : g); /* grid-stride beyond */
}

extern "C" int tide_tansip_pix2sky_cuda(tide_ctx *ctx, const tide_wcs_tansip *t, int64_t n,
                                        const double *x, const double *y, double *ra, double *dec) {
    if (n <= 0)
        return 0;
    const int block = 256;
    tansip_pix2sky_kernel<<<grid_for(n, block), block, 0, (cudaStream_t)ctx->stream>>>(*t, n, x, y,
                                                                                       ra, dec);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

extern "C" int tide_tansip_sky2pix_cuda(tide_ctx *ctx, const tide_wcs_tansip *t, int64_t n,
                                        const double *ra, const double *dec, double *x, double *y) {
    if (n <= 0)
        return 0;
    const int block = 256;
    tansip_sky2pix_kernel<<<grid_for(n, block), block, 0, (cudaStream_t)ctx->stream>>>(*t, n, ra,
                                                                                       dec, x, y);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
