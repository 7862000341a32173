/* sim_psf_math.h — the simulator's per-pixel PSF math, shared by every renderer.
 *
 * An elliptical Moffat profile (Moffat 1969, A&A 3, 455):
 *     I(x, y) ∝ (1 + q)^-beta,  q = cxx dx² + 2 cxy dx dy + cyy dy²,
 * with q = (x'/a)² + (y'/b)² along the ellipse axes, a = alpha/sqrt(1-e), b = alpha·sqrt(1-e)
 * (so a·b = alpha², and the geometric-mean FWHM is 2 alpha sqrt(2^(1/beta) - 1)). A pixel's
 * value is the profile integrated over the pixel: the mean of nsub×nsub sub-samples near the
 * core, where the profile curves fast, and the value at the pixel centre further out. */
#ifndef TIDE_SIM_PSF_MATH_H
#define TIDE_SIM_PSF_MATH_H
#include <math.h>

#include "core/gpu/hd.h"

/** Moffat alpha for a FWHM (pixels) and beta. */
TIDE_HD static inline double sim_moffat_alpha(double fwhm, double beta) {
    return fwhm / (2.0 * sqrt(pow(2.0, 1.0 / beta) - 1.0));
}

/** (1 + q)^-beta, with the common beta = 3 done without pow. */
TIDE_HD static inline float sim_moffat_core(float q, float beta) {
    if (beta == 3.0f) {
        float t = 1.0f / (1.0f + q);
        return t * t * t;
    }
    return expf(-beta * log1pf(q));
}

/** Unnormalised Moffat integrated over the pixel whose centre is (dx, dy) from the source
 *  centre: nsub×nsub sub-samples when @p sub, else the centre value. */
TIDE_HD static inline float sim_moffat_pixel(float dx, float dy, float cxx, float cxy, float cyy,
                                             float beta, int nsub, int sub) {
    if (!sub) {
        float q = cxx * dx * dx + 2.0f * cxy * dx * dy + cyy * dy * dy;
        return sim_moffat_core(q, beta);
    }
    const float step = 1.0f / (float)nsub, off = -0.5f + 0.5f * step;
    float acc = 0.0f;
    for (int j = 0; j < nsub; j++) {
        float sy = dy + off + step * (float)j;
        float row = 0.0f;
        for (int i = 0; i < nsub; i++) {
            float sx = dx + off + step * (float)i;
            float q = cxx * sx * sx + 2.0f * cxy * sx * sy + cyy * sy * sy;
            row += sim_moffat_core(q, beta);
        }
        acc += row;
    }
    return acc * step * step;
}

#endif
