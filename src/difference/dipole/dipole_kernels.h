/* dipole_kernels.h — the batched dipole-fit kernel, CPU and CUDA twins (DESIGN §3). */
#ifndef TIDE_DIPOLE_KERNELS_H
#define TIDE_DIPOLE_KERNELS_H
#include <stdint.h>
#include "tide/ctx.h"
#include "tide/dipole.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One batch; every pointer lives where the backend computes. */
typedef struct tide_dipole_job {
    int64_t n;
    int side;
    const float *pix, *var;
    const uint16_t *mask;  /* may be NULL */
    const double *x0, *y0; /* may be NULL */
    tide_dipole_params p;  /* p.psf in the backend's memory */
    tide_dipole_fit *out;
} tide_dipole_job;

int tide_dipole_batch_cpu(tide_ctx *ctx, const tide_dipole_job *job);
#ifdef TIDE_HAVE_CUDA
int tide_dipole_batch_cuda(tide_ctx *ctx, const tide_dipole_job *job);
#endif

/* Stamp cutting: im planes where the backend computes. */
typedef struct tide_stamp_job {
    const float *pix, *var;
    const uint16_t *mask;
    int64_t width, height, stride;
    int64_t n;
    const double *x, *y;
    int side;
    float *opix, *ovar;
    uint16_t *omask;
    double *cx, *cy; /* may be NULL */
} tide_stamp_job;

int tide_stamp_cut_cpu(tide_ctx *ctx, const tide_stamp_job *job);
#ifdef TIDE_HAVE_CUDA
int tide_stamp_cut_cuda(tide_ctx *ctx, const tide_stamp_job *job);
#endif

#ifdef __cplusplus
}
#endif
#endif
