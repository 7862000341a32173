/* noise_ops.h — the difference pipeline's own kernels (DESIGN §3). Pointers are host memory
 * for the _cpu twins and device memory for the _cuda twins; strides in elements. */
#ifndef TIDE_DIFF_OPS_H
#define TIDE_DIFF_OPS_H
#include <stdint.h>

#include "noise_ops_math.h"
#include "tide/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** tide_diffp_prepare_one over a w × h frame: pix, mask and var share @p stride; bkg and rms
 *  are w × h maps of stride w. */
int tide_diffp_prepare_cpu(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride, float *pix,
                           uint16_t *mask, float *var, const float *bkg, const float *rms,
                           float gain, float saturate);
/** a[y * stride + x] *= f over a w × h region. */
int tide_diffp_scale_cpu(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride, float *a, float f);
/** z[by * nx + bx] = tide_diffp_box_z of every box of side @p b (nx = w / b, ny = h / b). */
int tide_diffp_boxz_cpu(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride, const float *pix,
                        const uint16_t *mask, const float *var, int b, double *z);
#ifdef TIDE_HAVE_CUDA
int tide_diffp_boxz_cuda(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride, const float *pix,
                         const uint16_t *mask, const float *var, int b, double *z);
/** The median of the n box values z (device memory; NaN are left out), the median of their
 *  absolute deviations from it, and how many were not NaN: by two radix sorts, the same order
 *  statistics as tide_median_f64 on the host, so the same values. NaN results when none is
 *  valid. */
int tide_diffp_median_mad_cuda(tide_ctx *ctx, const double *z, int64_t n, int64_t *nvalid,
                               double *med, double *mad);
int tide_diffp_scale_cuda(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride, float *a, float f);
int tide_diffp_prepare_cuda(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride, float *pix,
                            uint16_t *mask, float *var, const float *bkg, const float *rms,
                            float gain, float saturate);
#endif

#ifdef __cplusplus
}
#endif
#endif
