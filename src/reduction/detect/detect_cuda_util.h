/* detect_cuda_util.h — helpers shared by the detection .cu files (include only from .cu):
 * deterministic exclusive prefix sums on the device and allocation shorthands. */
#ifndef TIDE_DETECT_CUDA_UTIL_H
#define TIDE_DETECT_CUDA_UTIL_H
#include <cuda_runtime.h>
#include <stdint.h>

#include "detect_kernels.h"
#include "tide/ctx.h"

/** Exclusive prefix sum of n values, in place allowed (in == out); *total (host) receives the
 *  sum when non-NULL. Integer sums: the result does not depend on the launch shape. */
int tide_det_scan_i32(tide_ctx *ctx, const int32_t *in, int32_t *out, int64_t n, int64_t *total);
int tide_det_scan_i64(tide_ctx *ctx, const int64_t *in, int64_t *out, int64_t n, int64_t *total);

/** Device allocation of n elements (n may be 0: one element is taken). */
int tide_det_dalloc(tide_ctx *ctx, size_t bytes, void **p);

/** Parents whose bounding box holds more pixels than this are gathered by a pass over the
 *  frame, not by one warp walking the box (detect_gather_cuda.cu). */
#define TIDE_DET_GATHER_WARP_MAX 16384

/** Pixels of the bounding box bb = {x0, y0, x1, y1}. */
static __device__ inline int64_t tide_det_box_pixels(const int32_t *bb) {
    return ((int64_t)bb[2] - bb[0] + 1) * ((int64_t)bb[3] - bb[1] + 1);
}

/** Each parent's on-pixels in raster order into w->pix_idx / w->pix_val from w->par_off
 *  (detect_gather_cuda.cu). @p has_big: whether any parent's box exceeds
 *  TIDE_DET_GATHER_WARP_MAX (the labelling reads it back with the pixel count); @p scratch:
 *  w->npix int32 of device scratch. */
int tide_det_gather_cuda(tide_ctx *ctx, const tide_image *snr, tide_det_work *w, int has_big,
                         int32_t *scratch);

static inline unsigned tide_det_blocks(int64_t n, int threads) {
    return (unsigned)((n + threads - 1) / threads);
}
#endif
