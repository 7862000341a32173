/* apcorr_kernels.h — the per-source steps of S/N-optimal photometry, CPU and CUDA twins:
 * the radius from the law, and the correction of the aperture flux at that radius. The
 * aperture sum between them is tide_ap_sum (aperture_kernels.h) with per-source radii. */
#ifndef TIDE_APCORR_KERNELS_H
#define TIDE_APCORR_KERNELS_H
#include <stdint.h>
#include "apcorr_math.h"
#include "tide/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* r[i] = law(snr[i]); flags[i] |= TIDE_PHOT_APCORR_EXTRAP when clipped. */
int tide_apcorr_radius_cpu(tide_ctx *ctx, const tide_apcorr_table *t, int64_t n, const double *snr,
                           double *r, int32_t *flags);
/* flux[i], fluxerr[i] ← corrected in place with C(r[i]; x[i], y[i]). */
int tide_apcorr_apply_cpu(tide_ctx *ctx, const tide_apcorr_table *t, int64_t n, const double *x,
                          const double *y, const double *r, double *flux, double *fluxerr);
#ifdef TIDE_HAVE_CUDA
int tide_apcorr_radius_cuda(tide_ctx *ctx, const tide_apcorr_table *t, int64_t n, const double *snr,
                            double *r, int32_t *flags);
int tide_apcorr_apply_cuda(tide_ctx *ctx, const tide_apcorr_table *t, int64_t n, const double *x,
                           const double *y, const double *r, double *flux, double *fluxerr);
#endif

#ifdef __cplusplus
}
#endif
#endif
