/* wincentroid_math.h — the windowed centroid of Source Extractor (XWIN/YWIN; SE manual,
 * "Windowed positional parameters"), once for the stages that iterate it: detect/ (the
 * catalogue's XWIN, YWIN) and psf/ (the centres of the PSF stars), on the CPU and the GPU.
 *
 * Each iteration sums, over the pixels of a window around the current centre (x, y), the
 * window-weighted value wi = w·I and its first moments wi·dx, wi·dy (dx, dy from the centre),
 * and moves the centre by 2 Σ wi dx / Σ wi (the factor 2 makes a Gaussian window of the
 * source's own width converge in a few steps). The window's shape, the pixels that count and
 * the stopping rule belong to each stage and stay there; the sums and the step are these. */
#ifndef TIDE_WINCENTROID_MATH_H
#define TIDE_WINCENTROID_MATH_H
#include "core/gpu/hd.h"

/** Add one pixel of weighted value @p wi at offset (dx, dy) from the current centre to the
 *  running sums Σ wi, Σ wi dx, Σ wi dy. */
TIDE_HD static inline void tide_win_add(double wi, double dx, double dy, double *sw, double *swx,
                                        double *swy) {
    *sw += wi;
    *swx += wi * dx;
    *swy += wi * dy;
}

/** The step (sx, sy) = 2 (Σ wi dx, Σ wi dy) / Σ wi from the summed window (sw > 0). */
TIDE_HD static inline void tide_win_step(double sw, double swx, double swy, double *sx,
                                         double *sy) {
    *sx = 2.0 * swx / sw;
    *sy = 2.0 * swy / sw;
}

#endif
