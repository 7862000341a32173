/* aperture_cuda.cu — CUDA twins of the aperture kernels.
 *
 * Sums: one warp per (source, radius). Lane l visits pixels l, l + 32, ... of the aperture's
 * bounding box in row-major order and the 32 partial sums are combined by a fixed shuffle tree, so
 * the result is bitwise the same on every run (no atomics). Annulus: one 256-thread block per
 * source gathers the annulus values into shared memory, sorts them (bitonic), and clips on
 * the sorted range with the lane order of TIDE_AP_LANES (the same as the CPU twin, and
 * without FMA contraction), so the background equals the CPU's. */
#include <cuda_runtime.h>
#include <math.h>
#include "core/box_walk.h"
#include "core/gpu/cuda_check.h"
#include "core/gpu/warp_sum.h"
#include "aperture_kernels.h"
#include "aperture_math.h"
#include "aperture_pixel.h"
#include "tide/photometry.h"

#define AP_WARPS_PER_BLOCK 4

/* One warp per (source, radius) pair o = s * nr + k: a growth curve of ~80 radii is ~80
 * warps working side by side, not one warp walking them in turn (each pair's sums are
 * independent, so the results are the same bits either way). */
__global__ void ap_sum_kernel(const tide_ap_job job) {
    const int lane = threadIdx.x & 31;
    const int64_t o = (int64_t)blockIdx.x * AP_WARPS_PER_BLOCK + (threadIdx.x >> 5);
    if (o >= job.n * job.nr)
        return; /* whole warps leave together */
    const int64_t s = o / job.nr;
    const int k = (int)(o - s * job.nr);
    const double cx = job.x[s], cy = job.y[s];
    const double bkg = job.bkg ? job.bkg[s] : 0.0, bkg_err = job.bkg_err ? job.bkg_err[s] : 0.0;
    {
        const double r = job.per_source ? job.radii[s * job.nr + k] : job.radii[k];
        const int ok = isfinite(cx) && isfinite(cy) && r > 0.0;
        tide_ap_acc a = tide_ap_acc_zero();
        if (ok) {
            int64_t x0, x1, y0, y1;
            tide_ap_range(cx, r, &x0, &x1);
            tide_ap_range(cy, r, &y0, &y1);
            tide_ap_warp_box(
                &a, &job.im, x0, x1, y0, y1, cx, cy, job.mask_correct, lane,
                [&](int64_t i, int64_t j) { return tide_ap_pixel_overlap(i, j, cx, cy, r); });
        }
        tide_ap_warp_total(&a);
        if (lane == 0) {
            int32_t fl;
            tide_ap_finalize(a.sf, a.sv, a.aval, a.amask, a.amiss, a.aout, bkg, bkg_err,
                             job.mask_correct, job.gain_eff, &job.flux[o], &job.fluxerr[o], &fl);
            if (!ok)
                fl |= TIDE_PHOT_FIT_FAILED;
            if (job.area)
                job.area[o] = a.aval + a.amiss; /* in the frame */
            if (job.masked_area)
                job.masked_area[o] = a.amask;
            if (job.aflags)
                job.aflags[o] |= fl; /* zeroed or pre-set by the caller */
        }
    }
}

extern "C" int tide_ap_sum_cuda(tide_ctx *ctx, const tide_ap_job *job) {
    if (job->n <= 0 || job->nr <= 0)
        return 0;
    const int64_t blocks = (job->n * job->nr + AP_WARPS_PER_BLOCK - 1) / AP_WARPS_PER_BLOCK;
    if (blocks > 2147483647LL)
        return tide_error(TIDE_E_RANGE, "aperture: too many sources");
    ap_sum_kernel<<<(unsigned)blocks, 32 * AP_WARPS_PER_BLOCK, 0, (cudaStream_t)ctx->stream>>>(
        *job);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

/* ---- annulus background ------------------------------------------------------------------ */

#define ANN_SORT_MAX 8192 /* power of two >= TIDE_PHOT_ANNULUS_MAX */
static_assert(ANN_SORT_MAX >= TIDE_PHOT_ANNULUS_MAX, "annulus sort buffer too small");
static_assert(TIDE_AP_LANES == 256, "the annulus block has TIDE_AP_LANES threads");

/* Σ v[lo..hi) (or Σ (v - m)²) in the lane order of the CPU twin: thread l adds l, l + 256,
 * ..., then a pairwise tree. No FMA contraction (explicit _rn intrinsics). */
__device__ static double block_lane_sum(const float *v, int lo, int hi, int squares, double m,
                                        double *red) {
    const int l = threadIdx.x;
    double acc = 0.0;
    for (int i = lo + l; i < hi; i += TIDE_AP_LANES) {
        if (squares) {
            const double d = __dsub_rn((double)v[i], m);
            acc = __dadd_rn(acc, __dmul_rn(d, d));
        } else {
            acc = __dadd_rn(acc, (double)v[i]);
        }
    }
    return tide_block_tree_sum<TIDE_AP_LANES>(acc, red);
}

__global__ void __launch_bounds__(TIDE_AP_LANES) ap_annulus_kernel(const tide_ann_job job) {
    __shared__ float v[ANN_SORT_MAX];
    __shared__ double red[TIDE_AP_LANES];
    __shared__ int count;
    __shared__ int range[2];
    const int64_t s = blockIdx.x;
    const tide_ap_planes &im = job.im;
    const double cx = job.x[s], cy = job.y[s];
    if (threadIdx.x == 0)
        count = 0;
    __syncthreads();
    if (isfinite(cx) && isfinite(cy)) {
        int64_t x0 = (int64_t)ceil(cx - job.rout), x1 = (int64_t)floor(cx + job.rout);
        int64_t y0 = (int64_t)ceil(cy - job.rout), y1 = (int64_t)floor(cy + job.rout);
        if (x0 < 0)
            x0 = 0;
        if (y0 < 0)
            y0 = 0;
        if (x1 >= im.width)
            x1 = im.width - 1;
        if (y1 >= im.height)
            y1 = im.height - 1;
        const double ri2 = job.rin * job.rin, ro2 = job.rout * job.rout;
        const int64_t bw = x1 - x0 + 1, npix = (x1 >= x0 && y1 >= y0) ? bw * (y1 - y0 + 1) : 0;
        int64_t col, row;
        tide_box_walk_start(threadIdx.x, bw, &col, &row);
        for (int64_t t = threadIdx.x; t < npix;
             t += blockDim.x, tide_box_walk_step(blockDim.x, bw, &col, &row)) {
            const int64_t j = y0 + row, i = x0 + col;
            const double dx = i - cx, dy = j - cy, d2 = dx * dx + dy * dy;
            double d, vv;
            if (d2 < ri2 || d2 >= ro2 || !tide_ap_read(&im, i, j, &d, &vv))
                continue;
            /* the order of arrival does not matter: the values are sorted next */
            const int slot = atomicAdd(&count, 1);
            if (slot < TIDE_PHOT_ANNULUS_MAX)
                v[slot] = (float)d;
        }
    }
    __syncthreads();
    const int nv = count < TIDE_PHOT_ANNULUS_MAX ? count : TIDE_PHOT_ANNULUS_MAX;
    if (nv < job.minpix || nv < 2) {
        if (threadIdx.x == 0) {
            job.bkg[s] = 0.0;
            job.bkg_err[s] = 0.0;
            job.flags[s] |= TIDE_PHOT_BKG_FAILED;
        }
        return;
    }
    int np = 1;
    while (np < nv)
        np <<= 1;
    for (int i = nv + threadIdx.x; i < np; i += blockDim.x)
        v[i] = INFINITY;
    __syncthreads();
    /* bitonic sort of v[0..np) ascending */
    for (int k = 2; k <= np; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int i = threadIdx.x; i < np; i += blockDim.x) {
                const int p = i ^ j;
                if (p > i) {
                    const float a = v[i], b = v[p];
                    const int up = (i & k) == 0;
                    if ((a > b) == up) {
                        v[i] = b;
                        v[p] = a;
                    }
                }
            }
            __syncthreads();
        }
    if (threadIdx.x == 0) {
        range[0] = 0;
        range[1] = nv;
    }
    __syncthreads();
    for (int it = 0; job.maxiters <= 0 || it < job.maxiters; it++) {
        const int lo = range[0], hi = range[1];
        const double mean = __ddiv_rn(block_lane_sum(v, lo, hi, 0, 0.0, red), (double)(hi - lo));
        const double sd =
            sqrt(__ddiv_rn(block_lane_sum(v, lo, hi, 1, mean, red), (double)(hi - lo)));
        int stop = 0;
        if (threadIdx.x == 0) {
            const double m = tide_ap_sorted_median(v, lo, hi);
            const int nlo = tide_ap_lower_bound(v, lo, hi, __dsub_rn(m, __dmul_rn(job.sigma, sd)));
            const int nhi = tide_ap_upper_bound(v, nlo, hi, __dadd_rn(m, __dmul_rn(job.sigma, sd)));
            if (!(nhi - nlo == hi - lo || nhi <= nlo)) {
                range[0] = nlo;
                range[1] = nhi;
            }
        }
        __syncthreads();
        stop = (range[0] == lo && range[1] == hi);
        __syncthreads();
        if (stop)
            break;
    }
    const int lo = range[0], hi = range[1];
    const double mean = __ddiv_rn(block_lane_sum(v, lo, hi, 0, 0.0, red), (double)(hi - lo));
    const double sd = sqrt(__ddiv_rn(block_lane_sum(v, lo, hi, 1, mean, red), (double)(hi - lo)));
    if (threadIdx.x == 0) {
        job.bkg[s] = tide_ap_sorted_median(v, lo, hi);
        job.bkg_err[s] = 1.2533141373155003 * sd / sqrt((double)(hi - lo));
    }
}

extern "C" int tide_ap_annulus_cuda(tide_ctx *ctx, const tide_ann_job *job) {
    if (job->n <= 0)
        return 0;
    if (job->n > 2147483647LL)
        return tide_error(TIDE_E_RANGE, "annulus: too many sources");
    ap_annulus_kernel<<<(unsigned)job->n, TIDE_AP_LANES, 0, (cudaStream_t)ctx->stream>>>(*job);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
