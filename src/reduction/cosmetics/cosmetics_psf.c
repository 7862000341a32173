/* cosmetics_psf.c — the constants of the test that releases star-like hot and cosmic-ray
 * candidates (cos_psf_like, cosmetics_math.h) from the stars' FWHM: once per call, on the
 * host, in double precision; both backends then compare with the same float thresholds.
 *
 * A star's narrowest moment, and its widest wing. In the 3×3 box around its brightest pixel,
 * a pixel-sampled circular Gaussian has a moment matrix whose smaller eigenvalue depends on
 * where in that pixel the star's centre falls (the box cuts the wings asymmetrically), and
 * so does the share of the peak that pixels 2 px out hold; the test needs the smallest
 * eigenvalue and the largest share over those positions, which by symmetry are found on the
 * quarter [0, 0.5]² of the pixel, here on a 21 × 21 grid. */
#include <math.h>

#include "cosmetics_internal.h"

/* The Gaussian behind a FWHM measured on the pixels (second moments, as tide's detection and
 * Source Extractor's FWHM_IMAGE give it): the pixel adds its own variance 1/12 px² to the
 * optics', which the sampled model below adds back by integrating over each pixel. A
 * measured FWHM below a pixel's own (0.68 px) keeps σ 0.2 px. */
static double optics_sigma(double fwhm) {
    const double s = fwhm / (2.0 * sqrt(2.0 * log(2.0)));
    const double v = s * s - 1.0 / 12.0;
    return v > 0.04 ? sqrt(v) : 0.2;
}

/* Flux of a unit Gaussian of standard deviation s centred at c in the pixel [i − ½, i + ½]. */
static double pixel_flux(double s, double c, int i) {
    const double k = 1.0 / (s * sqrt(2.0));
    return 0.5 * (erf((i + 0.5 - c) * k) - erf((i - 0.5 - c) * k));
}

/* The smaller eigenvalue of the 3×3 moment matrix of a Gaussian centred at (u, v). */
static double box_lmin(double s, double u, double v) {
    double s0 = 0, sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            const double d = pixel_flux(s, u, dx) * pixel_flux(s, v, dy);
            s0 += d;
            sx += dx * d;
            sy += dy * d;
            sxx += dx * dx * d;
            syy += dy * dy * d;
            sxy += dx * dy * d;
        }
    const double mx = sx / s0, my = sy / s0;
    const double xx = sxx / s0 - mx * mx, yy = syy / s0 - my * my, xy = sxy / s0 - mx * my;
    return 0.5 * (xx + yy) - sqrt(0.25 * (xx - yy) * (xx - yy) + xy * xy);
}

/* The brightest pixel 2 px (Chebyshev) from the peak pixel over the peak's, for a Gaussian
 * centred at (u, v) in the peak pixel: the nearest such pixel, (2, 0) or (2, 1) towards the
 * centre, holds the most. */
static double ring_ratio(double s, double u, double v) {
    const double p = pixel_flux(s, u, 0) * pixel_flux(s, v, 0);
    const double a = pixel_flux(s, u, 2) * pixel_flux(s, v, 0);
    const double b = pixel_flux(s, u, 2) * pixel_flux(s, v, 1);
    return (a > b ? a : b) / p;
}

double tide_cos_psf_lmin(double fwhm) {
    const double s = optics_sigma(fwhm);
    double best = INFINITY;
    for (int j = 0; j <= 20; j++)
        for (int i = 0; i <= 20; i++) {
            const double l = box_lmin(s, 0.025 * i, 0.025 * j);
            best = l < best ? l : best;
        }
    return best;
}

double tide_cos_psf_ring(double fwhm) {
    const double s = optics_sigma(fwhm);
    double worst = 0.0;
    for (int j = 0; j <= 20; j++)
        for (int i = 0; i <= 20; i++) {
            const double r = ring_ratio(s, 0.025 * i, 0.025 * j);
            worst = r > worst ? r : worst;
        }
    return worst;
}

tide_cos_psf tide_cos_psf_of(const tide_cosmetics_params *p) {
    tide_cos_psf ps;
    ps.on = p->psf_fwhm > 0.0;
    ps.var_min = ps.on ? (float)(p->psf_width * tide_cos_psf_lmin(p->psf_fwhm)) : 0.0f;
    ps.round_min = (float)p->psf_round;
    /* Real PSFs have wings a Gaussian lacks (a Moffat of β 2 and FWHM 2.5 px puts 45% of its
     * peak 1.5 px from its centre): 1.5 times the Gaussian's worst case, and never below
     * half the peak, a level a narrow star's wing 2 px out does not reach. */
    const double ring = ps.on ? 1.5 * tide_cos_psf_ring(p->psf_fwhm) : 1.0;
    ps.ring_max = (float)(ring < 0.5 ? 0.5 : (ring > 1.0 ? 1.0 : ring));
    /* 2σ: on sky, a pixel passes by noise alone 2.3% of the time, so a faint one-pixel hit
     * seldom gains a width; a star bright enough to matter (S/N >= 30 at FWHM 1.3 px puts
     * ~12σ in its side pixels) keeps all of its 3×3 core. */
    ps.clip = 2.0f;
    ps.nm = tide_cos_noise_of(p);
    return ps;
}
