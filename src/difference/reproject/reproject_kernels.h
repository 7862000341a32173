/* reproject_kernels.h — the one kernel reprojection needs from a backend (DESIGN §3): resample
 * every output pixel with tide_rp_pixel (reproject_math.h). The _cpu twin loops over rows
 * with OpenMP, the _cuda twin runs one thread per output pixel on the context's stream; both
 * evaluate the same double-precision math, so they agree to float rounding. */
#ifndef TIDE_REPROJECT_KERNELS_H
#define TIDE_REPROJECT_KERNELS_H
#include "reproject_math.h"
#include "tide/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Resample all out_w × out_h pixels described by @p a (pointers in host memory). */
int tide_rp_resample_cpu(tide_ctx *ctx, const tide_rp_args *a);
#ifdef TIDE_HAVE_CUDA
/** The same with every pointer of @p a (tin/tout and grid included) in device memory; queued
 *  on the context's stream. */
int tide_rp_resample_cuda(tide_ctx *ctx, const tide_rp_args *a);
#endif

#ifdef __cplusplus
}
#endif
#endif
