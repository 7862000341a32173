/* map_ops.h — the pipeline's own kernels (DESIGN §3): background subtraction, RMS to
 * variance, and sampling a map at the sources. Pointers are host memory for the _cpu twins
 * and device memory for the _cuda twins; sizes in pixels, strides in elements. */
#ifndef TIDE_REDUCE_OPS_H
#define TIDE_REDUCE_OPS_H
#include <stdint.h>

#include "map_ops_math.h"
#include "tide/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** a = op(a, b, c) over a w × h region (b may be NULL unless op is TIDE_PIPE_SUB). */
int tide_pipe_map_cpu(tide_ctx *ctx, int op, int64_t w, int64_t h, float *a, int64_t sa,
                      const float *b, int64_t sb, float c);
/** out[i] = img at the pixel nearest (x[i], y[i]), for n positions. */
int tide_pipe_gather_cpu(tide_ctx *ctx, const float *img, int64_t stride, int64_t w, int64_t h,
                         int64_t n, const double *x, const double *y, float *out);
#ifdef TIDE_HAVE_CUDA
int tide_pipe_map_cuda(tide_ctx *ctx, int op, int64_t w, int64_t h, float *a, int64_t sa,
                       const float *b, int64_t sb, float c);
int tide_pipe_gather_cuda(tide_ctx *ctx, const float *img, int64_t stride, int64_t w, int64_t h,
                          int64_t n, const double *x, const double *y, float *out);
#endif

#ifdef __cplusplus
}
#endif
#endif
