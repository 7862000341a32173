/* aperture_kernels.h — the batched aperture kernels, CPU and CUDA twins (DESIGN §3).
 * A job holds pointers the backend can read: host memory for _cpu, device memory for _cuda.
 * One source per OpenMP iteration on the CPU, one warp (sums) or one block (annulus sort)
 * per source on the GPU. */
#ifndef TIDE_APERTURE_KERNELS_H
#define TIDE_APERTURE_KERNELS_H
#include <stdint.h>
#include "tide/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The image planes a kernel reads. var may be NULL (no sky variance term); mask may be
 *  NULL. */
typedef struct tide_ap_planes {
    const float *pix;
    const uint16_t *mask;
    const float *var;
    int64_t width, height, stride, var_stride;
    uint16_t mask_bits;
} tide_ap_planes;

/** Circular apertures: for source i and aperture k the radius is radii[k], or
 *  radii[i * nr + k] when per_source. Outputs are n*nr each (area/masked_area/aflags may be
 *  NULL; aflags is OR-ed into, so it must be zeroed or hold earlier flags); bkg/bkg_err (n,
 *  per-pixel local background and its error) may be NULL. */
typedef struct tide_ap_job {
    tide_ap_planes im;
    int64_t n;
    const double *x, *y;
    int nr;
    int per_source;
    const double *radii;
    const double *bkg, *bkg_err;
    int mask_correct;
    double gain_eff; /* gain · ncombine, <= 0: no Poisson term */
    double *flux, *fluxerr, *area, *masked_area;
    int32_t *aflags;
} tide_ap_job;

/** Local background: sigma-clipped median of the pixels whose centres lie in
 *  rin <= d < rout, d the distance to the position. */
typedef struct tide_ann_job {
    tide_ap_planes im;
    int64_t n;
    const double *x, *y;
    double rin, rout, sigma;
    int maxiters, minpix;
    double *bkg, *bkg_err; /* n */
    int32_t *flags;        /* n, OR-ed */
} tide_ann_job;

int tide_ap_sum_cpu(tide_ctx *ctx, const tide_ap_job *job);
int tide_ap_annulus_cpu(tide_ctx *ctx, const tide_ann_job *job);
#ifdef TIDE_HAVE_CUDA
int tide_ap_sum_cuda(tide_ctx *ctx, const tide_ap_job *job);
int tide_ap_annulus_cuda(tide_ctx *ctx, const tide_ann_job *job);
#endif

#ifdef __cplusplus
}
#endif
#endif
