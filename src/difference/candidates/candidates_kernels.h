/* candidates_kernels.h — the per-pixel preparation of candidate detection (rms = sqrt(var),
 * negated difference, negated S/N map), CPU and CUDA twins (DESIGN §3). */
#ifndef TIDE_CANDIDATES_KERNELS_H
#define TIDE_CANDIDATES_KERNELS_H
#include <math.h>
#include <stdint.h>
#include "core/gpu/hd.h"
#include "tide/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tide_cand_prep_job {
    const float *pix, *var; /* input, row stride `stride` */
    int64_t width, height, stride;
    float *rms, *neg; /* output, same stride */
} tide_cand_prep_job;

/* One pixel: the noise map and the negated difference (NaN where the variance is unusable). */
TIDE_HD static inline void tide_cand_prep_pixel(const tide_cand_prep_job *jb, int64_t x,
                                                int64_t y) {
    const int64_t i = y * jb->stride + x, o = i;
    const float v = jb->var[i];
    jb->rms[o] = (isfinite(v) && v > 0.0f) ? sqrtf(v) : NAN;
    jb->neg[o] = -jb->pix[i];
}

int tide_cand_prep_cpu(tide_ctx *ctx, const tide_cand_prep_job *job);
/* a[i] = -a[i], i < n: the S/N map of the difference into that of its negation. */
int tide_cand_negate_cpu(tide_ctx *ctx, float *a, int64_t n);
#ifdef TIDE_HAVE_CUDA
int tide_cand_prep_cuda(tide_ctx *ctx, const tide_cand_prep_job *job);
int tide_cand_negate_cuda(tide_ctx *ctx, float *a, int64_t n);
#endif

#ifdef __cplusplus
}
#endif
#endif
