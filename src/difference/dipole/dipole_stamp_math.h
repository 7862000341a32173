/* dipole_stamp_math.h — one pixel of a stamp cut, shared by the CPU and CUDA twins. */
#ifndef TIDE_DIPOLE_STAMP_MATH_H
#define TIDE_DIPOLE_STAMP_MATH_H
#include <math.h>
#include "core/gpu/hd.h"
#include "dipole_kernels.h"
#include "tide/image.h"

/* Central pixel of a stamp at (x, y): the nearest pixel (halves round up). */
TIDE_HD static inline int64_t stamp_centre(double x) {
    return (int64_t)floor(x + 0.5);
}

/* A stamp centre that maps to a pixel index. */
TIDE_HD static inline int stamp_ok(double x, double y) {
    return isfinite(x) && isfinite(y) && fabs(x) < 4e18 && fabs(y) < 4e18;
}

/* Cut pixel t of stamp s. */
TIDE_HD static inline void stamp_cut_pixel(const tide_stamp_job *jb, int64_t s, int64_t t) {
    const int side = jb->side, h = (side - 1) / 2;
    const double xs = jb->x[s], ys = jb->y[s];
    const int64_t o = s * side * side + t;
    const int ok = stamp_ok(xs, ys);
    const int64_t i = ok ? stamp_centre(xs) - h + t % side : -1;
    const int64_t j = ok ? stamp_centre(ys) - h + t / side : -1;
    if (i < 0 || j < 0 || i >= jb->width || j >= jb->height) {
        jb->opix[o] = NAN;
        jb->ovar[o] = NAN;
        if (jb->omask)
            jb->omask[o] = TIDE_MASK_NODATA;
        return;
    }
    const int64_t k = j * jb->stride + i;
    jb->opix[o] = jb->pix[k];
    jb->ovar[o] = jb->var ? jb->var[k] : 1.0f;
    if (jb->omask)
        jb->omask[o] = jb->mask ? jb->mask[k] : 0;
}

#endif
