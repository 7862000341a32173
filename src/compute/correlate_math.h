/* correlate_math.h — per-element math of FFT correlation, shared by the CPU and CUDA twins.
 *
 * Layout (see correlate.c): the padded real buffer holds the image shifted by the kernel's
 * half-size (rx, ry), so padded column a holds image column a - rx; columns [w + 2 rx, px)
 * and rows [h + 2 ry, py) are zero, which makes the circular correlation of the FFT equal the
 * linear one on [0, w) x [0, h). */
#ifndef TIDE_CORRELATE_MATH_H
#define TIDE_CORRELATE_MATH_H
#include <math.h>
#include <stdint.h>

#include "core/gpu/hd.h"
#include "core/gpu/unfused.h"

/** One entry of a kernel's row table (correlate_kernels.h): rows_k[j][u] =
 *  sum_i k[j][i] exp(+s 2 pi i u (i - rx) / px) for the kernel row @p kr (kw taps), with
 *  the phases read from the roots of unity of px (root[2m], root[2m + 1] = cos, sin of
 *  2 pi m / px; the phase index steps by u mod px along the row). Summed in double over i in
 *  order, each product and sum rounded on its own (core/gpu/unfused.h: nvcc would otherwise
 *  fuse them), then rounded to float: the same bits on both backends. */
TIDE_HD static inline void tide_corr_row_entry(const float *kr, int64_t kw, int64_t rx, int64_t u,
                                               int64_t px, const double *root, int sign,
                                               float *out) {
    int64_t m = (u * rx) % px; /* the phase index of i = 0, -u rx, reduced into [0, px) */
    m = m ? px - m : 0;
    const int64_t step = u % px;
    double re = 0.0, im = 0.0;
    for (int64_t i = 0; i < kw; i++) {
        const double kv = (double)kr[i], c = root[2 * m], sn = sign * root[2 * m + 1];
        re = tide_dadd(re, tide_dmul(kv, c));
        im = tide_dadd(im, tide_dmul(kv, sn));
        m += step;
        if (m >= px)
            m -= px;
    }
    out[0] = (float)re;
    out[1] = (float)im;
}

/** Mirror an index into [0, n) with the edge sample repeated (period 2n), so that
 *  -1 -> 0, -2 -> 1, n -> n - 1: scipy.ndimage's 'reflect'. Works for any distance. */
TIDE_HD static inline int64_t tide_corr_reflect(int64_t i, int64_t n) {
    int64_t period = 2 * n;
    int64_t m = i % period;
    if (m < 0)
        m += period;
    return m < n ? m : period - 1 - m;
}

/** A pixel's contribution: its value, or 0 when it is NaN/Inf or carries a mask bit in
 *  @p bits. */
TIDE_HD static inline float tide_corr_clean(float v, uint16_t m, uint16_t bits) {
    return (isfinite(v) && !(m & bits)) ? v : 0.0f;
}

/** Offset (y * stride + x) of the input pixel that padded position (a, b) shows, or -1 when it
 *  shows zero padding. */
TIDE_HD static inline int64_t tide_corr_source(int64_t a, int64_t b, int64_t w, int64_t h,
                                               int64_t rx, int64_t ry, int64_t stride,
                                               int reflect) {
    int64_t x = a - rx, y = b - ry;
    if (x >= w + rx || y >= h + ry)
        return -1; /* beyond the halo: the zeros that keep the result linear */
    if (x < 0 || x >= w || y < 0 || y >= h) {
        if (!reflect)
            return -1;
        x = tide_corr_reflect(x, w);
        y = tide_corr_reflect(y, h);
    }
    return y * stride + x;
}

/** One Horner step of a kernel spectrum, acc = acc * w + r (complex, interleaved pairs):
 *  H(u, v) = p_v * sum_j rows[j][u] w_v^j is evaluated from j = kh-1 down to 0 so each term
 *  costs one complex multiply-add and no table look-up; with |w_v| = 1 the rounding error grows
 *  only linearly in kh (Higham, Accuracy and Stability of Numerical Algorithms, §5.1). */
TIDE_HD static inline void tide_corr_horner(float *acc_re, float *acc_im, float w_re, float w_im,
                                            float r_re, float r_im) {
    float re = *acc_re * w_re - *acc_im * w_im + r_re;
    float im = *acc_re * w_im + *acc_im * w_re + r_im;
    *acc_re = re;
    *acc_im = im;
}

/** (c_re, c_im) = a * b, complex. */
TIDE_HD static inline void tide_corr_cmul(float a_re, float a_im, float b_re, float b_im,
                                          float *c_re, float *c_im) {
    float re = a_re * b_re - a_im * b_im;
    float im = a_re * b_im + a_im * b_re;
    *c_re = re;
    *c_im = im;
}

#endif
