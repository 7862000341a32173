/* detect_synth.h — synthetic frames for the detection tests: pixel-integrated Gaussian
 * stars on white Gaussian noise from a counter-based generator (deterministic). */
#ifndef TEST_DETECT_SYNTH_H
#define TEST_DETECT_SYNTH_H
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_rng.h"
#include "tide/tide.h"

/* uniform in (0, 1): draw @p i of the counter-based stream @p seed (one splitmix64 step from
 * a key made of both, so a pixel's value does not depend on the order of the draws) */
static inline double synth_unif(uint64_t seed, uint64_t i) {
    uint64_t key = seed * 0x100000001B3ull + i;
    return trng_open(trng_splitmix64(&key));
}

static inline double synth_gauss(uint64_t seed, uint64_t i) {
    double u1 = synth_unif(seed, 2 * i), u2 = synth_unif(seed, 2 * i + 1);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Host image w x h (with mask) of white noise of sigma @p noise; rms image constant. */
static inline void synth_frame(tide_image *im, tide_image *rms, int64_t w, int64_t h, double noise,
                               uint64_t seed) {
    tide_image_alloc(NULL, im, w, h, TIDE_HOST, TIDE_IMAGE_MASK);
    tide_image_alloc(NULL, rms, w, h, TIDE_HOST, 0);
    for (int64_t i = 0; i < w * h; i++) {
        im->pix[i] = noise > 0 ? (float)(noise * synth_gauss(seed, (uint64_t)i)) : 0.0f;
        rms->pix[i] = (float)(noise > 0 ? noise : 1.0);
    }
}

/* Add a pixel-integrated Gaussian of total flux @p flux and FWHM @p fwhm at 0-based (x0, y0). */
static inline void synth_star(tide_image *im, double x0, double y0, double flux, double fwhm) {
    double s = fwhm / 2.3548200450309493, r = ceil(5.0 * s) + 1;
    double k = 1.0 / (sqrt(2.0) * s);
    for (int64_t y = (int64_t)floor(y0 - r); y <= (int64_t)ceil(y0 + r); y++) {
        if (y < 0 || y >= im->height)
            continue;
        double fy = 0.5 * (erf((y + 0.5 - y0) * k) - erf((y - 0.5 - y0) * k));
        for (int64_t x = (int64_t)floor(x0 - r); x <= (int64_t)ceil(x0 + r); x++) {
            if (x < 0 || x >= im->width)
                continue;
            double fx = 0.5 * (erf((x + 0.5 - x0) * k) - erf((x - 0.5 - x0) * k));
            im->pix[y * im->stride + x] += (float)(flux * fx * fy);
        }
    }
}

/* Matched-filter S/N of a Gaussian star of flux f and FWHM fw on noise sigma (approximately
 * f / (sigma sqrt(4 pi s^2)) for a well-sampled star). */
static inline double synth_flux_for_snr(double snr, double fwhm, double noise) {
    double s = fwhm / 2.3548200450309493;
    return snr * noise * sqrt(4.0 * 3.141592653589793 * s * s);
}

/* Index of the nearest row to (x, y) within @p r pixels (XWIN/YWIN), or -1. */
static inline int64_t synth_nearest(const tide_table *t, double x, double y, double r) {
    const double *xw = tide_table_f64(t, "XWIN"), *yw = tide_table_f64(t, "YWIN");
    int64_t best = -1;
    double bd = r * r;
    for (int64_t i = 0; i < t->nrows; i++) {
        double d = (xw[i] - x) * (xw[i] - x) + (yw[i] - y) * (yw[i] - y);
        if (d <= bd) {
            bd = d;
            best = i;
        }
    }
    return best;
}

#endif
