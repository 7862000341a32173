/* dipole_cuda.cu — CUDA twin of the batched dipole fits: one warp per fit, two per stamp (the
 * dipole and the point source, independent). Lanes stride the stamp (pixel t in lane t mod
 * 32), the normal-equation sums are merged by a fixed __shfl_down tree and broadcast, and
 * every lane runs the same Levenberg–Marquardt step on them, so the loop is warp-uniform (no
 * atomics, deterministic) and a converged fit's warp simply leaves. Also the stamp cutter:
 * one thread per stamp pixel. */
#include <cuda_runtime.h>
#include <math.h>
#include "core/gpu/cuda_check.h"
#include "core/gpu/warp_sum.h"
#include "dipole_kernels.h"
#include "dipole_math.h"
#include "dipole_stamp_math.h"

/* One warp per block, so each fit's warp frees its slot when it ends: with blocks of four
 * warps (two stamps' dipole and point-source fits) a block held all four slots until its
 * slowest dipole fit ended, while point sources take a few iterations and dipoles ~22 (up to
 * max_iter on a single-sign source). */
#define DIP_WARPS 1
/* Resident warps per multiprocessor the registers must allow: 12 (at most 170 registers a
 * thread; 168 with a few spilled measured as fast as 190 with none), as the earlier blocks of
 * four warps, three per multiprocessor, did. */
#define DIP_MIN_BLOCKS 12

/* Warp-wide best (score, index) under dip_better: a total order, so the result does not
 * depend on the combination order. */
__device__ static inline void dip_allbest(double *s, int *t) {
    for (int off = 16; off > 0; off >>= 1) {
        const double s2 = __shfl_xor_sync(0xffffffffu, *s, off);
        const int t2 = __shfl_xor_sync(0xffffffffu, *t, off);
        if (dip_better(s2, t2, *s, *t)) {
            *s = s2;
            *t = t2;
        }
    }
}

/* One fit's Levenberg–Marquardt loop for model KIND, a compile-time constant so that the
 * per-pixel sums and the warp reductions cover only the model's own parameters (a PSF dipole
 * has 5, a PSF point source 3, of DIP_MAXP = 8) and the sums stay in registers. */
template <int KIND>
__device__ static void dip_run_k(dip_lm *st, int lane, int side, const float *P, const float *V,
                                 const uint16_t *M, uint16_t bits, const float *psf, int psf_side) {
    const int npix = side * side, np = dip_nparam(KIND);
    while (!st->done) {
        double S[DIP_NSUM];
#pragma unroll
        for (int k = 0; k < DIP_NSUM; k++)
            S[k] = 0.0;
        dip_shape sh;
        dip_fit_shape(st->ptry, KIND, &sh);
        for (int t = lane; t < npix; t += DIP_LANES) {
            const double w = dip_weight(P[t], V[t], M ? M[t] : 0, bits);
            if (w > 0.0)
                dip_accum(KIND, &sh, psf, psf_side, (double)(t % side), (double)(t / side),
                          (double)P[t], w, S);
        }
#pragma unroll
        for (int a = 0; a < DIP_MAXP; a++) {
            if (a < np) {
#pragma unroll
                for (int b = a; b < DIP_MAXP; b++)
                    if (b < np)
                        S[dip_hidx(a, b)] = tide_warp_allsum(S[dip_hidx(a, b)]);
                S[DIP_NH + a] = tide_warp_allsum(S[DIP_NH + a]);
            }
        }
        S[DIP_NH + DIP_MAXP] = tide_warp_allsum(S[DIP_NH + DIP_MAXP]);
        S[DIP_NH + DIP_MAXP + 1] = tide_warp_allsum(S[DIP_NH + DIP_MAXP + 1]);
        dip_lm_step(st, S);
    }
}

__device__ static void dip_run(dip_lm *st, int lane, int side, const float *P, const float *V,
                               const uint16_t *M, uint16_t bits, const float *psf, int psf_side) {
    switch (st->kind) {
    case DIP_K_GDIP: dip_run_k<DIP_K_GDIP>(st, lane, side, P, V, M, bits, psf, psf_side); break;
    case DIP_K_GPS: dip_run_k<DIP_K_GPS>(st, lane, side, P, V, M, bits, psf, psf_side); break;
    case DIP_K_PDIP: dip_run_k<DIP_K_PDIP>(st, lane, side, P, V, M, bits, psf, psf_side); break;
    default: dip_run_k<DIP_K_PPS>(st, lane, side, P, V, M, bits, psf, psf_side); break;
    }
}

/* Two warps per stamp, one fitting the dipole, the other the point source, side by side and
 * independently (each fills its own fields of the output), so a stamp takes the time of its
 * slower fit instead of the sum of both and no warp waits for another. The dipole fits come
 * first in the grid (warps 0..n-1), the point sources after them: the long fits start first
 * and the short ones fill the slots that free up. */
__global__ void __launch_bounds__(32 * DIP_WARPS, DIP_MIN_BLOCKS)
    dipole_kernel(const tide_dipole_job jb) {
    const int lane = threadIdx.x & 31;
    const int64_t w = (int64_t)blockIdx.x * DIP_WARPS + (threadIdx.x >> 5);
    const int is_ps = w >= jb.n;
    const int64_t s = is_ps ? w - jb.n : w;
    if (s >= jb.n)
        return;
    const tide_dipole_params &p = jb.p;
    const int side = jb.side, npix = side * side;
    const float *P = jb.pix + s * npix, *V = jb.var + s * npix;
    const uint16_t *M = jb.mask ? jb.mask + s * npix : NULL;
    const float *psf = p.psf ? p.psf + (p.psf_per_stamp ? s * p.psf_side * p.psf_side : 0) : NULL;
    /* Start pixels: the dipole's lobes from the most positive and most negative S/N, the
     * point source from the largest |S/N|. */
    int tp = -1, tn = -1;
    double sp = NAN, sn = NAN;
    for (int t = lane; t < npix; t += DIP_LANES) {
        const double sc = dip_score(P, V, M, p.mask_bits, side, t);
        if (is_ps) {
            if (dip_better(fabs(sc), t, sp, tp))
                sp = fabs(sc), tp = t;
        } else {
            if (dip_better(sc, t, sp, tp))
                sp = sc, tp = t;
            if (dip_better(-sc, t, sn, tn))
                sn = -sc, tn = t;
        }
    }
    dip_allbest(&sp, &tp);
    if (!is_ps)
        dip_allbest(&sn, &tn);
    const int kind = (p.model == TIDE_DIPOLE_PSF ? DIP_K_PDIP : DIP_K_GDIP) + is_ps;
    double q[DIP_MAXP];
    dip_lm st;
    dip_start(kind, side, tp, is_ps ? -1 : tn, p.sigma_guess, q);
    dip_lm_init(&st, kind, q, p.max_iter, p.tol, p.lambda0, side);
    if (is_ps ? (tp < 0 || !p.fit_ps) : (tp < 0 || tn < 0 || tp == tn)) {
        st.status = TIDE_DIPOLE_BADINPUT;
        st.done = 1;
    }
    dip_run(&st, lane, side, P, V, M, p.mask_bits, psf, p.psf_side);
    if (lane == 0) {
        const double h = (double)((side - 1) / 2);
        const double ox = jb.x0 ? jb.x0[s] - h : 0.0, oy = jb.y0 ? jb.y0[s] - h : 0.0;
        if (is_ps)
            dip_finish_ps(&st, p.fit_ps, ox, oy, &jb.out[s]);
        else
            dip_finish_dipole(&st, ox, oy, &jb.out[s]);
    }
}

extern "C" int tide_dipole_batch_cuda(tide_ctx *ctx, const tide_dipole_job *job) {
    if (job->n <= 0)
        return 0;
    const int64_t blocks = (2 * job->n + DIP_WARPS - 1) / DIP_WARPS; /* two warps a stamp */
    if (blocks > 2147483647LL)
        return tide_error(TIDE_E_RANGE, "dipole fits: too many stamps");
    dipole_kernel<<<(unsigned)blocks, 32 * DIP_WARPS, 0, (cudaStream_t)ctx->stream>>>(*job);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

__global__ void stamp_cut_kernel(const tide_stamp_job jb, int64_t total) {
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= total)
        return;
    const int64_t np = (int64_t)jb.side * jb.side;
    const int64_t s = g / np, t = g % np;
    stamp_cut_pixel(&jb, s, t);
    if (t == 0) {
        const int ok = stamp_ok(jb.x[s], jb.y[s]);
        if (jb.cx)
            jb.cx[s] = ok ? (double)stamp_centre(jb.x[s]) : NAN;
        if (jb.cy)
            jb.cy[s] = ok ? (double)stamp_centre(jb.y[s]) : NAN;
    }
}

extern "C" int tide_stamp_cut_cuda(tide_ctx *ctx, const tide_stamp_job *job) {
    const int64_t total = job->n * (int64_t)job->side * job->side;
    if (total <= 0)
        return 0;
    const int64_t blocks = (total + 255) / 256;
    if (blocks > 2147483647LL)
        return tide_error(TIDE_E_RANGE, "stamp cut: too many pixels");
    stamp_cut_kernel<<<(unsigned)blocks, 256, 0, (cudaStream_t)ctx->stream>>>(*job, total);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
