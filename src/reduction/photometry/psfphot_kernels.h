/* psfphot_kernels.h — the batched PSF-fit kernel, CPU and CUDA twins (DESIGN §3). */
#ifndef TIDE_PSFPHOT_KERNELS_H
#define TIDE_PSFPHOT_KERNELS_H
#include <stdint.h>
#include "aperture_kernels.h"
#include "tide/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tide_psffit_job {
    tide_ap_planes im; /* var required */
    int64_t n;
    const double *x, *y;
    int side;
    const float *stamps; /* n * side * side, or NULL: evaluate the model below per source */
    /* the PSF model (when stamps is NULL), where the kernels run: stamp side = side */
    const float *basis; /* nbasis * side * side */
    const double *coef; /* nbasis * ncoef */
    int nbasis, degree, ncoef;
    int64_t model_w, model_h; /* frame the model's polynomial fields cover */
    double gain_eff, fit_radius;
    int fit_bkg;
    double *flux, *fluxerr, *chi2; /* n */
    int32_t *flags;                /* n */
} tide_psffit_job;

int tide_psffit_cpu(tide_ctx *ctx, const tide_psffit_job *job);
#ifdef TIDE_HAVE_CUDA
int tide_psffit_cuda(tide_ctx *ctx, const tide_psffit_job *job);
#endif

#ifdef __cplusplus
}
#endif
#endif
