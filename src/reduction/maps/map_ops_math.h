/* map_ops_math.h — the per-pixel and per-source formulas of the pipeline's own small
 * kernels, once for the CPU and CUDA twins (DESIGN §3). */
#ifndef TIDE_REDUCE_OPS_MATH_H
#define TIDE_REDUCE_OPS_MATH_H
#include <math.h>
#include <stdint.h>

#include "core/gpu/hd.h"

/** Elementwise operations of tide_pipe_map. */
enum {
    TIDE_PIPE_SUB = 0,      /**< a = a − b (background subtraction) */
    TIDE_PIPE_SQUARE = 1,   /**< a = a·a (RMS map to variance, in place) */
    TIDE_PIPE_ADD_CONST = 2 /**< a = a + c */
};

TIDE_HD static inline float tide_pipe_map_one(int op, float a, float b, float c) {
    switch (op) {
    case TIDE_PIPE_SUB: return a - b;
    case TIDE_PIPE_SQUARE: return a * a;
    default: return a + c;
    }
}

/** The pixel nearest to the 0-based position (x, y), clamped into the frame; the value
 *  there, or NaN when the position is not finite. Source Extractor samples BACKGROUND at the
 *  nearest pixel of the centroid in the same way. */
TIDE_HD static inline float tide_pipe_gather_one(const float *img, int64_t stride, int64_t w,
                                                 int64_t h, double x, double y) {
    if (!(x == x) || !(y == y) || x > 1e15 || x < -1e15 || y > 1e15 || y < -1e15)
        return NAN;
    int64_t ix = (int64_t)floor(x + 0.5), iy = (int64_t)floor(y + 0.5);
    ix = ix < 0 ? 0 : (ix >= w ? w - 1 : ix);
    iy = iy < 0 ? 0 : (iy >= h ? h - 1 : iy);
    return img[iy * stride + ix];
}

#endif
