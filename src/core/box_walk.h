/* box_walk.h — a strided raster walk over a box, for the kernels where each lane visits
 * pixels t = lane, lane + step, ... of a box bw pixels wide: the column and row follow t by
 * additions, without the 64-bit division and remainder per pixel that t / bw and t % bw
 * cost on a GPU (tens of instructions each). The same pixels in the same order. */
#ifndef TIDE_BOX_WALK_H
#define TIDE_BOX_WALK_H
#include <stdint.h>

#include "core/gpu/hd.h"

/** Column and row of pixel @p t of a box @p bw wide (both 0 for an empty box, bw < 1). */
TIDE_HD static inline void tide_box_walk_start(int64_t t, int64_t bw, int64_t *col, int64_t *row) {
    *row = bw > 0 ? t / bw : 0;
    *col = bw > 0 ? t - *row * bw : 0;
}

/** Advance (col, row) by @p step pixels in raster order (bw >= 1). */
TIDE_HD static inline void tide_box_walk_step(int64_t step, int64_t bw, int64_t *col,
                                              int64_t *row) {
    *col += step;
    while (*col >= bw) {
        *col -= bw;
        (*row)++;
    }
}
#endif
