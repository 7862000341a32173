/* psfphot_cuda.cu — CUDA twin of the PSF-fit kernel: one warp per source; lanes stride the
 * stamp in row-major order, the six sums are combined by a fixed shuffle tree and broadcast,
 * so every lane solves the same system (deterministic, no atomics). */
#include <cuda_runtime.h>
#include <math.h>
#include "core/cuda_check.h"
#include "phot/psfphot_kernels.h"
#include "phot/psfphot_math.h"
#include "tide/photometry.h"

#define PF_WARPS 4

__device__ static inline double pf_allsum(double v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    return __shfl_sync(0xffffffffu, v, 0);
}

__global__ void psffit_kernel(const tide_psffit_job job) {
    const int lane = threadIdx.x & 31;
    const int64_t s = (int64_t)blockIdx.x * PF_WARPS + (threadIdx.x >> 5);
    if (s >= job.n) return;
    const tide_ap_planes &im = job.im;
    const double cx = job.x[s], cy = job.y[s];
    const int side = job.side;
    const float *P = job.stamps + (size_t)s * side * side;
    int32_t fl = 0;
    double F = 0.0, B = 0.0, ferr = 0.0, chi2 = 0.0;
    int ok = isfinite(cx) && isfinite(cy);
    const int passes = job.gain_eff > 0.0 ? 2 : 1;
    const double fr2 = job.fit_radius * job.fit_radius;
    const int npix = side * side;
    for (int pass = 0; ok && pass < passes; pass++) {
        tide_psffit_sums sm = {0, 0, 0, 0, 0, 0, 0};
        const int64_t i0 = tide_psffit_origin(cx, side), j0 = tide_psffit_origin(cy, side);
        for (int t = lane; t < npix; t += 32) {
            const int v = t / side, u = t % side;
            const int64_t i = i0 + u, j = j0 + v;
            if (job.fit_radius > 0.0 && (i - cx) * (i - cx) + (j - cy) * (j - cy) > fr2)
                continue;
            if (i < 0 || j < 0 || i >= im.width || j >= im.height) {
                fl |= TIDE_PHOT_TRUNCATED;
                continue;
            }
            const float d = im.pix[j * im.stride + i];
            const float sv = im.var[j * im.var_stride + i];
            const float p = P[t];
            if ((im.mask && (im.mask[j * im.stride + i] & im.mask_bits)) || !isfinite(d) ||
                !isfinite(sv) || !(sv > 0.0f) || !isfinite(p)) {
                fl |= TIDE_PHOT_MASKED;
                continue;
            }
            tide_psffit_add(&sm, d, p, tide_psffit_var(sv, pass ? F : 0.0, p, job.gain_eff));
        }
        sm.spp = pf_allsum(sm.spp);
        sm.sdp = pf_allsum(sm.sdp);
        sm.sp = pf_allsum(sm.sp);
        sm.sd = pf_allsum(sm.sd);
        sm.s1 = pf_allsum(sm.s1);
        sm.sdd = pf_allsum(sm.sdd);
        sm.npix = pf_allsum(sm.npix);
        ok = tide_psffit_solve(&sm, job.fit_bkg, &F, &B, &ferr, &chi2);
    }
    /* OR of the lanes' flags */
    for (int off = 16; off > 0; off >>= 1) fl |= __shfl_down_sync(0xffffffffu, fl, off);
    if (lane == 0) {
        if (!ok) {
            F = ferr = chi2 = NAN;
            fl |= TIDE_PHOT_FIT_FAILED;
        }
        job.flux[s] = F;
        job.fluxerr[s] = ferr;
        job.chi2[s] = chi2;
        job.flags[s] = fl;
    }
}

extern "C" int tide_psffit_cuda(tide_ctx *ctx, const tide_psffit_job *job) {
    if (job->n <= 0) return 0;
    const int64_t blocks = (job->n + PF_WARPS - 1) / PF_WARPS;
    if (blocks > 2147483647LL) return tide_error(TIDE_E_RANGE, "psf photometry: too many sources");
    psffit_kernel<<<(unsigned)blocks, 32 * PF_WARPS, 0, (cudaStream_t)ctx->stream>>>(*job);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
