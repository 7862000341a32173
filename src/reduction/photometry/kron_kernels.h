/* kron_kernels.h — the batched Kron (AUTO) kernel, CPU and CUDA twins (DESIGN §3). */
#ifndef TIDE_KRON_KERNELS_H
#define TIDE_KRON_KERNELS_H
#include <stdint.h>
#include "aperture_kernels.h"
#include "tide/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tide_kron_job {
    tide_ap_planes im;
    int64_t n;
    const double *x, *y, *a, *b, *theta; /* theta in degrees */
    double kron_fact, min_radius, nsig;
    int subpix, mask_correct;
    double gain_eff;
    double *kron_radius, *flux, *fluxerr; /* n */
    int32_t *flags;                       /* n */
} tide_kron_job;

int tide_kron_cpu(tide_ctx *ctx, const tide_kron_job *job);
#ifdef TIDE_HAVE_CUDA
int tide_kron_cuda(tide_ctx *ctx, const tide_kron_job *job);
#endif

#ifdef __cplusplus
}
#endif
#endif
