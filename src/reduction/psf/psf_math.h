/* psf_math.h — per-star math of the PSF kernels, shared by the CPU and CUDA twins
 * (DESIGN §3): Lanczos-3 weights and the windowed-centroid weight. */
#ifndef TIDE_PSF_MATH_H
#define TIDE_PSF_MATH_H
#include <math.h>
#include <stdint.h>

#include "core/gpu/hd.h"
#include "psf_kernels.h"
#include "reduction/wincentroid_math.h"
#include "tide/psf.h"

#define PSF_LANCZOS_A 3 /* taps on each side: 2a = 6 per axis */
#define PSF_PI 3.14159265358979323846

/** Lanczos-a kernel L(t) = sinc(t) sinc(t/a) for |t| < a (Duchon 1979). */
TIDE_HD static inline double psf_lanczos(double t) {
    if (t == 0.0)
        return 1.0;
    if (t <= -PSF_LANCZOS_A || t >= PSF_LANCZOS_A)
        return 0.0;
    const double pt = PSF_PI * t;
    return PSF_LANCZOS_A * sin(pt) * sin(pt / PSF_LANCZOS_A) / (pt * pt);
}

/** The 6 weights that interpolate at fractional offset @p f in [0, 1) from the samples at
 *  offsets -2..3 (tap k sits at k - 2), normalised to sum 1 so a constant stays constant. */
TIDE_HD static inline void psf_lanczos_weights(double f, double w[2 * PSF_LANCZOS_A]) {
    double s = 0.0;
    for (int k = 0; k < 2 * PSF_LANCZOS_A; k++) {
        w[k] = psf_lanczos(f - (double)(k - (PSF_LANCZOS_A - 1)));
        s += w[k];
    }
    for (int k = 0; k < 2 * PSF_LANCZOS_A; k++)
        w[k] /= s;
}

/** One axis of the Gaussian window of the XWIN centroid (Source Extractor manual, "Windowed
 *  positional parameters"): exp(-d^2 / (2 sigma^2)), inv2s2 = 1/(2 sigma^2). The window is
 *  separable, w(dx, dy) = w(dx) w(dy), so a box of side s needs 2s exponentials, not s^2;
 *  both backends form a pixel's weighted value as (w(dx) * w(dy)) * value. */
TIDE_HD static inline double psf_win_1d(double d, double inv2s2) {
    return exp(-d * d * inv2s2);
}

#define PSF_MAX_BOX (TIDE_PSF_MAX_STAMP + 2 * PSF_LANCZOS_A) /* widest box a kernel reads */

#define PSF_CENTROID_ITERS 30   /* XWIN iterations at most */
#define PSF_CENTROID_TOL 1.0e-4 /* pixels: stop when a step is smaller */

/** Where the windowed centroid of a star from (x0, y0) starts: the rounded pixel (*ix, *iy),
 *  the centre of its box of half-side R. Returns 0, TIDE_PSF_REJ_CENTROID for a start that is
 *  not finite, or TIDE_PSF_REJ_EDGE when the box leaves the w x h frame. */
TIDE_HD static inline int psf_centroid_start(double x0, double y0, int R, int64_t w, int64_t h,
                                             int64_t *ix, int64_t *iy) {
    if (!isfinite(x0) || !isfinite(y0))
        return TIDE_PSF_REJ_CENTROID;
    *ix = (int64_t)floor(x0 + 0.5);
    *iy = (int64_t)floor(y0 + 0.5);
    if (*ix - R < 0 || *iy - R < 0 || *ix + R >= w || *iy + R >= h)
        return TIDE_PSF_REJ_EDGE;
    return 0;
}

/** The end of one centroid iteration, from the window's sums (tide_win_add): move (*cx, *cy)
 *  by the windowed step and set *converged when both components are below PSF_CENTROID_TOL.
 *  Returns 0, or TIDE_PSF_REJ_CENTROID when the window holds no positive flux or the centre
 *  strays more than max_shift from the start (x0, y0). */
TIDE_HD static inline int psf_centroid_move(double swi, double sdx, double sdy, double x0,
                                            double y0, double max_shift, double *cx, double *cy,
                                            int *converged) {
    if (!(swi > 0.0))
        return TIDE_PSF_REJ_CENTROID;
    double stx, sty;
    tide_win_step(swi, sdx, sdy, &stx, &sty);
    *cx += stx;
    *cy += sty;
    if (fabs(*cx - x0) > max_shift || fabs(*cy - y0) > max_shift)
        return TIDE_PSF_REJ_CENTROID;
    *converged = fabs(stx) < PSF_CENTROID_TOL && fabs(sty) < PSF_CENTROID_TOL;
    return 0;
}

/** The pixel box a stamp of half-side h around (xc, yc) reads, Lanczos taps included:
 *  [floor(xc) - h - 2, floor(xc) + h + 3], likewise in y. */
TIDE_HD static inline void psf_stamp_box(double xc, double yc, int h, int64_t *xl, int64_t *xh,
                                         int64_t *yl, int64_t *yh) {
    const int64_t fx = (int64_t)floor(xc), fy = (int64_t)floor(yc);
    *xl = fx - h - (PSF_LANCZOS_A - 1);
    *xh = fx + h + PSF_LANCZOS_A;
    *yl = fy - h - (PSF_LANCZOS_A - 1);
    *yh = fy + h + PSF_LANCZOS_A;
}

/** Rejection bits one pixel of a stamp sets: a non-finite value or an excluded mask bit
 *  (MASKED), a value at or above the saturation level (SATURATED, when saturation > 0). */
TIDE_HD static inline int psf_pixel_reject(float v, uint16_t m, uint16_t bits, double sat) {
    if (!isfinite(v) || (m & bits))
        return TIDE_PSF_REJ_MASKED;
    if (sat > 0.0 && (double)v >= sat)
        return TIDE_PSF_REJ_SATURATED;
    return 0;
}

/** Fill the measurement columns from a stamp's sums: @p vap = sum of rms^2 over the cap
 *  aperture pixels (when use_rms), else the border ring's mean square sring / nring stands
 *  for the per-pixel variance. */
TIDE_HD static inline void psf_measure_finish(double *m, double sum, double fap, double vap,
                                              double cap, double sring, double nring, double peak,
                                              int use_rms, double sw, double swr2, double inv2s2) {
    double var_pix = use_rms ? (cap > 0.0 ? vap / cap : 0.0) : (nring > 0.0 ? sring / nring : 0.0);
    m[PSF_M_FLUX] = fap;
    m[PSF_M_NOISE] = sqrt(var_pix);
    m[PSF_M_SNR] = var_pix > 0.0 && cap > 0.0 ? fap / sqrt(var_pix * cap) : 0.0;
    m[PSF_M_PEAK] = peak;
    m[PSF_M_SUM] = sum;
    /* The Gaussian window (variance sw2 per axis) narrows what it sees: for a Gaussian source
     * of variance s2 the windowed variance is v = s2 sw2 / (s2 + sw2), so s2 = v sw2 / (sw2 - v).
     * A size indicator for star/galaxy separation, not a FWHM measurement. */
    const double sw2 = 0.5 / inv2s2, v = sw > 0.0 ? 0.5 * swr2 / sw : 0.0;
    m[PSF_M_FWHM] =
        v <= 0.0 ? 0.0 : (v >= 0.99 * sw2 ? 1e9 : 2.3548200450309493 * sqrt(v * sw2 / (sw2 - v)));
}

/** Lanczos-3 sample from the 6x6 taps whose top-left pixel is (x0, y0): rows weighted by wy,
 *  columns by wx, summed in double, rows outer. */
TIDE_HD static inline float psf_lanczos_sample(const float *pix, int64_t stride, int64_t x0,
                                               int64_t y0, const double *wx, const double *wy) {
    double acc = 0.0;
    for (int b = 0; b < 2 * PSF_LANCZOS_A; b++) {
        const float *row = pix + (y0 + b) * stride + x0;
        double r = 0.0;
        for (int a = 0; a < 2 * PSF_LANCZOS_A; a++)
            r += wx[a] * (double)row[a];
        acc += wy[b] * r;
    }
    return (float)acc;
}

#endif
