/* detect_cuda_util.h — helpers shared by the detection .cu files (include only from .cu):
 * deterministic exclusive prefix sums on the device and allocation shorthands. */
#ifndef TIDE_DETECT_CUDA_UTIL_H
#define TIDE_DETECT_CUDA_UTIL_H
#include <cuda_runtime.h>
#include <stdint.h>

#include "phot/detect_kernels.h"
#include "tide/ctx.h"

/** Exclusive prefix sum of n values, in place allowed (in == out); *total (host) receives the
 *  sum when non-NULL. Integer sums: the result does not depend on the launch shape. */
int tide_det_scan_i32(tide_ctx *ctx, const int32_t *in, int32_t *out, int64_t n, int64_t *total);
int tide_det_scan_i64(tide_ctx *ctx, const int64_t *in, int64_t *out, int64_t n, int64_t *total);

/** Device allocation of n elements (n may be 0: one element is taken). */
int tide_det_dalloc(tide_ctx *ctx, size_t bytes, void **p);

/** Each parent's on-pixels in raster order into w->pix_idx / w->pix_val from w->par_off
 *  (detect_gather_cuda.cu); @p scratch: w->npix int32 of device scratch. */
int tide_det_gather_cuda(tide_ctx *ctx, const tide_image *snr, tide_det_work *w,
                         int32_t *scratch);

static inline unsigned tide_det_blocks(int64_t n, int threads) {
    return (unsigned)((n + threads - 1) / threads);
}
#endif
