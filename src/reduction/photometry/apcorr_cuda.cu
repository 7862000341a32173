/* apcorr_cuda.cu — CUDA twins of the optimal-photometry per-source kernels: one thread per
 * source, the model table read from device memory. */
#include <cuda_runtime.h>
#include "core/gpu/cuda_check.h"
#include "apcorr_kernels.h"
#include "apcorr_math.h"
#include "tide/photometry.h"

__global__ void apcorr_radius_kernel(const tide_apcorr_table t, int64_t n, const double *snr,
                                     double *r, int32_t *flags) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int clipped;
        r[i] = tide_apcorr_law(&t, snr[i], &clipped);
        if (clipped)
            flags[i] |= TIDE_PHOT_APCORR_EXTRAP;
    }
}

__global__ void apcorr_apply_kernel(const tide_apcorr_table t, int64_t n, const double *x,
                                    const double *y, const double *r, double *flux,
                                    double *fluxerr) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        double c, ce;
        tide_apcorr_at(&t, r[i], x[i], y[i], &c, &ce);
        tide_apcorr_correct(flux[i], fluxerr[i], c, ce, &flux[i], &fluxerr[i]);
    }
}

static unsigned ac_grid(int64_t n) {
    const int64_t g = (n + 255) / 256;
    return (unsigned)(g > 65535 * 16 ? 65535 * 16 : g);
}

extern "C" int tide_apcorr_radius_cuda(tide_ctx *ctx, const tide_apcorr_table *t, int64_t n,
                                       const double *snr, double *r, int32_t *flags) {
    if (n <= 0)
        return 0;
    apcorr_radius_kernel<<<ac_grid(n), 256, 0, (cudaStream_t)ctx->stream>>>(*t, n, snr, r, flags);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

extern "C" int tide_apcorr_apply_cuda(tide_ctx *ctx, const tide_apcorr_table *t, int64_t n,
                                      const double *x, const double *y, const double *r,
                                      double *flux, double *fluxerr) {
    if (n <= 0)
        return 0;
    apcorr_apply_kernel<<<ac_grid(n), 256, 0, (cudaStream_t)ctx->stream>>>(*t, n, x, y, r, flux,
                                                                           fluxerr);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
