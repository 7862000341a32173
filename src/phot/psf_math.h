/* psf_math.h — per-star math of the PSF kernels, shared by the CPU and CUDA twins
 * (DESIGN §3): Lanczos-3 weights and the windowed-centroid weight. */
#ifndef TIDE_PSF_MATH_H
#define TIDE_PSF_MATH_H
#include <math.h>

#include "core/hd.h"

#define PSF_LANCZOS_A 3 /* taps on each side: 2a = 6 per axis */
#define PSF_PI 3.14159265358979323846

/** Lanczos-a kernel L(t) = sinc(t) sinc(t/a) for |t| < a (Duchon 1979). */
TIDE_HD static inline double psf_lanczos(double t) {
    if (t == 0.0) return 1.0;
    if (t <= -PSF_LANCZOS_A || t >= PSF_LANCZOS_A) return 0.0;
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
    for (int k = 0; k < 2 * PSF_LANCZOS_A; k++) w[k] /= s;
}

/** Gaussian window weight of the XWIN centroid (Source Extractor manual, "Windowed
 *  positional parameters"): exp(-r^2 / (2 sigma^2)), with inv2s2 = 1/(2 sigma^2). */
TIDE_HD static inline double psf_win_weight(double dx, double dy, double inv2s2) {
    return exp(-(dx * dx + dy * dy) * inv2s2);
}

#endif
