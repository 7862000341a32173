/* psfphot_cuda.cu — CUDA twins of the PSF-fit kernel. Given stamps: one warp per source;
 * lanes stride the stamp in row-major order, the sums are combined by a fixed shuffle tree and
 * broadcast, so every lane solves the same system. From the model: one block per source
 * evaluates the local stamp into shared memory (basis combination, normalisation, separable
 * Lanczos-3 sub-pixel shift; psfphot_math.h, the CPU twin's steps) and fits it; block sums use a
 * fixed warp-shuffle tree then the warps in order (deterministic, no float atomics). */
#include <cuda_runtime.h>
#include <math.h>
#include "core/gpu/cuda_check.h"
#include "core/gpu/warp_sum.h"
#include "psfphot_kernels.h"
#include "psfphot_math.h"
#include "tide/photometry.h"

#define PF_WARPS 4

__global__ void psffit_kernel(const tide_psffit_job job) {
    const int lane = threadIdx.x & 31;
    const int64_t s = (int64_t)blockIdx.x * PF_WARPS + (threadIdx.x >> 5);
    if (s >= job.n)
        return;
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
        sm.spp = tide_warp_allsum(sm.spp);
        sm.sdp = tide_warp_allsum(sm.sdp);
        sm.sp = tide_warp_allsum(sm.sp);
        sm.sd = tide_warp_allsum(sm.sd);
        sm.s1 = tide_warp_allsum(sm.s1);
        sm.sdd = tide_warp_allsum(sm.sdd);
        sm.npix = tide_warp_allsum(sm.npix);
        ok = tide_psffit_solve(&sm, job.fit_bkg, &F, &B, &ferr, &chi2);
    }
    /* OR of the lanes' flags */
    for (int off = 16; off > 0; off >>= 1)
        fl |= __shfl_down_sync(0xffffffffu, fl, off);
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

#define PM_THREADS 128
#define PM_WARPS (PM_THREADS / 32)
#define PM_NSUM 7

__global__ void __launch_bounds__(PM_THREADS) psffit_model_kernel(const tide_psffit_job job) {
    extern __shared__ double pm_sh[]; /* R: npix doubles, then the stamp: npix floats */
    __shared__ double c[1 + TIDE_PSF_MAX_K];
    __shared__ double wx[2 * PSF_LANCZOS_A], wy[2 * PSF_LANCZOS_A];
    __shared__ double red[PM_NSUM][PM_WARPS];
    __shared__ int flsh;
    const int tid = threadIdx.x;
    const int64_t s = blockIdx.x;
    const tide_ap_planes &im = job.im;
    const double cx = job.x[s], cy = job.y[s];
    if (!isfinite(cx) || !isfinite(cy)) { /* uniform over the block */
        if (tid == 0) {
            job.flux[s] = job.fluxerr[s] = job.chi2[s] = NAN;
            job.flags[s] = TIDE_PHOT_FIT_FAILED;
        }
        return;
    }
    const int side = job.side, npix = side * side;
    double *R = pm_sh;
    float *cen = (float *)(pm_sh + npix), *P = cen; /* P overwrites cen after the row pass */
    int ix, iy;
    double frx, fry;
    psfphot_shift_setup(cx, cy, &ix, &iy, &frx, &fry);
    if (tid < job.nbasis)
        c[tid] = psfphot_coef(job.coef, job.ncoef, job.degree, tid, psfphot_scaled(cx, job.model_w),
                              psfphot_scaled(cy, job.model_h));
    if (tid == 32)
        psf_lanczos_weights(frx, wx);
    if (tid == 64)
        psf_lanczos_weights(fry, wy);
    if (tid == 0)
        flsh = 0;
    __syncthreads();
    /* centred model, normalised to sum 1 */
    double part[PM_NSUM] = {0, 0, 0, 0, 0, 0, 0};
    for (int p = tid; p < npix; p += PM_THREADS) {
        const double v = psfphot_centred(job.basis, npix, job.nbasis, c, p);
        cen[p] = (float)v;
        part[0] += v;
    }
    tide_block_sums_by_warp<PM_WARPS>(part, 1, red);
    if (part[0] != 0.0) {
        const double inv = 1.0 / part[0];
        for (int p = tid; p < npix; p += PM_THREADS)
            cen[p] = (float)((double)cen[p] * inv);
    }
    __syncthreads();
    /* shifted to the source's sub-pixel offset (row pass, column pass), normalised again */
    for (int p = tid; p < npix; p += PM_THREADS)
        R[p] = psfphot_shift_row(cen, side, p % side, p / side, ix, wx);
    __syncthreads();
    part[0] = 0.0;
    for (int p = tid; p < npix; p += PM_THREADS) {
        const double acc = psfphot_shift_col(R, side, p % side, p / side, iy, wy);
        P[p] = (float)acc;
        part[0] += acc;
    }
    tide_block_sums_by_warp<PM_WARPS>(part, 1, red);
    if (part[0] != 0.0) {
        const double sum = part[0];
        for (int p = tid; p < npix; p += PM_THREADS)
            P[p] = (float)((double)P[p] / sum);
    }
    __syncthreads();
    /* the fit: the CPU twin's passes */
    int32_t fl = 0;
    double F = 0.0, B = 0.0, ferr = 0.0, chi2 = 0.0;
    int ok = 1;
    const int passes = job.gain_eff > 0.0 ? 2 : 1;
    const double fr2 = job.fit_radius * job.fit_radius;
    const int64_t i0 = tide_psffit_origin(cx, side), j0 = tide_psffit_origin(cy, side);
    for (int pass = 0; ok && pass < passes; pass++) {
        tide_psffit_sums sm = {0, 0, 0, 0, 0, 0, 0};
        for (int t = tid; t < npix; t += PM_THREADS) {
            const float p = P[t];
            float d, sv;
            const int32_t r = psfphot_pixel(&im, i0 + t % side, j0 + t / side, cx, cy,
                                            job.fit_radius, fr2, p, &d, &sv);
            if (r) {
                if (r > 0)
                    fl |= r;
                continue;
            }
            tide_psffit_add(&sm, d, p, tide_psffit_var(sv, pass ? F : 0.0, p, job.gain_eff));
        }
        double v[PM_NSUM] = {sm.spp, sm.sdp, sm.sp, sm.sd, sm.s1, sm.sdd, sm.npix};
        tide_block_sums_by_warp<PM_WARPS>(v, PM_NSUM, red);
        sm.spp = v[0];
        sm.sdp = v[1];
        sm.sp = v[2];
        sm.sd = v[3];
        sm.s1 = v[4];
        sm.sdd = v[5];
        sm.npix = v[6];
        ok = tide_psffit_solve(&sm, job.fit_bkg, &F, &B, &ferr, &chi2);
    }
    if (fl)
        atomicOr(&flsh, fl); /* integer OR: order-free */
    __syncthreads();
    if (tid == 0) {
        fl = flsh;
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
    if (job->n <= 0)
        return 0;
    if (!job->stamps) {
        if (job->n > 2147483647LL)
            return tide_error(TIDE_E_RANGE, "psf photometry: too many sources");
        /* R (double) + stamp (float) per pixel: <= 47.6 kB at the largest stamp (63²), with
         * the static arrays still inside the default 48 kB */
        const size_t shm = (sizeof(double) + sizeof(float)) * (size_t)job->side * job->side;
        psffit_model_kernel<<<(unsigned)job->n, PM_THREADS, shm, (cudaStream_t)ctx->stream>>>(*job);
        TIDE_CUDA_LAUNCHED();
        return 0;
    }
    const int64_t blocks = (job->n + PF_WARPS - 1) / PF_WARPS;
    if (blocks > 2147483647LL)
        return tide_error(TIDE_E_RANGE, "psf photometry: too many sources");
    psffit_kernel<<<(unsigned)blocks, 32 * PF_WARPS, 0, (cudaStream_t)ctx->stream>>>(*job);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
