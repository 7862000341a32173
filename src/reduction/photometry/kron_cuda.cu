/* kron_cuda.cu — CUDA twin of the Kron kernel: one warp per source, lanes stride the pixel
 * box in row-major order, partial sums combined by a fixed shuffle tree (deterministic). */
#include <cuda_runtime.h>
#include <math.h>
#include "core/box_walk.h"
#include "core/gpu/cuda_check.h"
#include "core/gpu/warp_sum.h"
#include "aperture_math.h"
#include "aperture_pixel.h"
#include "kron_kernels.h"
#include "kron_math.h"
#include "tide/photometry.h"

#define KR_WARPS 4

__global__ void kron_kernel(const tide_kron_job job) {
    const int lane = threadIdx.x & 31;
    const int64_t s = (int64_t)blockIdx.x * KR_WARPS + (threadIdx.x >> 5);
    if (s >= job.n)
        return;
    const double cx = job.x[s], cy = job.y[s];
    const tide_kron_geom g = tide_kron_geometry(job.a[s], job.b[s], job.theta[s]);
    if (!g.ok || !isfinite(cx) || !isfinite(cy)) {
        if (lane == 0) {
            job.flux[s] = 0.0;
            job.fluxerr[s] = 0.0;
            if (job.kron_radius)
                job.kron_radius[s] = 0.0;
            job.flags[s] = TIDE_PHOT_FIT_FAILED;
        }
        return;
    }
    int64_t x0, x1, y0, y1;
    tide_kron_box(&g, cx, cy, job.nsig, &x0, &x1, &y0, &y1);
    if (x0 < 0)
        x0 = 0;
    if (y0 < 0)
        y0 = 0;
    if (x1 >= job.im.width)
        x1 = job.im.width - 1;
    if (y1 >= job.im.height)
        y1 = job.im.height - 1;
    double r1 = 0.0, v1 = 0.0;
    const double ns2 = job.nsig * job.nsig;
    if (x1 >= x0 && y1 >= y0) {
        const int64_t bw = x1 - x0 + 1, npix = bw * (y1 - y0 + 1);
        int64_t col, row;
        tide_box_walk_start(lane, bw, &col, &row);
        for (int64_t t = lane; t < npix; t += 32, tide_box_walk_step(32, bw, &col, &row)) {
            const int64_t j = y0 + row, i = x0 + col;
            const double dx = i - cx, dy = j - cy;
            const double r2 = g.cxx * dx * dx + g.cyy * dy * dy + g.cxy * dx * dy;
            double d, v;
            if (r2 > ns2 || !tide_ap_read(&job.im, i, j, &d, &v))
                continue;
            r1 += sqrt(r2) * d;
            v1 += d;
        }
    }
    r1 = tide_warp_allsum(r1);
    v1 = tide_warp_allsum(v1);
    int failed;
    const double K = tide_kron_radius(r1, v1, job.kron_fact, job.min_radius, &failed);
    tide_kron_box(&g, cx, cy, K, &x0, &x1, &y0, &y1);
    tide_ap_acc a = tide_ap_acc_zero();
    tide_ap_warp_box(&a, &job.im, x0, x1, y0, y1, cx, cy, job.mask_correct, lane,
                     [&](int64_t i, int64_t j) {
                         return tide_ap_ellipse_frac(i - cx, j - cy, g.cxx, g.cyy, g.cxy, K,
                                                     g.reach, job.subpix);
                     });
    tide_ap_warp_total(&a);
    if (lane == 0) {
        int32_t af;
        tide_ap_finalize(a.sf, a.sv, a.aval, a.amask, a.amiss, a.aout, 0.0, 0.0, job.mask_correct,
                         job.gain_eff, &job.flux[s], &job.fluxerr[s], &af);
        if (job.kron_radius)
            job.kron_radius[s] = K;
        job.flags[s] = af | (failed ? TIDE_PHOT_FIT_FAILED : 0);
    }
}

extern "C" int tide_kron_cuda(tide_ctx *ctx, const tide_kron_job *job) {
    if (job->n <= 0)
        return 0;
    const int64_t blocks = (job->n + KR_WARPS - 1) / KR_WARPS;
    if (blocks > 2147483647LL)
        return tide_error(TIDE_E_RANGE, "kron: too many sources");
    kron_kernel<<<(unsigned)blocks, 32 * KR_WARPS, 0, (cudaStream_t)ctx->stream>>>(*job);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
