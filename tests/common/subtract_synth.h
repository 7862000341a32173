/* subtract_synth.h — synthetic frame pairs for the subtraction tests: pixel-integrated
 * Gaussian stars on a flat sky with Poisson-like Gaussian noise (gain 1) and its variance. */
#ifndef TEST_SUBTRACT_SYNTH_H
#define TEST_SUBTRACT_SYNTH_H
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/test_rng.h"
#include "tide/tide.h"

typedef struct synth_star {
    double x, y, flux;
} synth_star;

static uint64_t synth_rng(uint64_t *s) {
    return trng_xorshift64(s);
}
static double synth_gauss(uint64_t *s) {
    double u = ((double)(synth_rng(s) >> 11) + 0.5) / 9007199254740992.0;
    double v = ((double)(synth_rng(s) >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* Pixel-integrated unit-flux Gaussian of sigma s centred at c, over pixel [i-0.5, i+0.5]. */
static double synth_pix(double i, double c, double s) {
    const double r = 1.0 / (sqrt(2.0) * s);
    return 0.5 * (erf((i + 0.5 - c) * r) - erf((i - 0.5 - c) * r));
}

/* Render: sky + stars with PSF sigma sig(x) = sig0 + sig_dx * (x / w - 0.5); scale multiplies
 * everything (a transparency change); noise of variance (sky + stars) * scale (gain 1 on the
 * unscaled frame, then scaled), divided by depth (a template stacked from depth frames).
 * seed 0 = no noise. */
static void synth_render_depth(tide_image *im, int64_t w, int64_t h, double sky, double scale,
                               const synth_star *st, int n, double sig0, double sig_dx,
                               uint64_t seed, double depth) {
    memset(im, 0, sizeof *im);
    im->width = w;
    im->height = h;
    im->stride = w;
    im->location = TIDE_HOST;
    im->owns = 0;
    im->pix = calloc((size_t)(w * h), sizeof(float));
    im->var = calloc((size_t)(w * h), sizeof(float));
    im->mask = calloc((size_t)(w * h), sizeof(uint16_t));
    double *acc = calloc((size_t)(w * h), sizeof(double));
    for (int k = 0; k < n; k++) {
        double s = sig0 + sig_dx * (st[k].x / (double)w - 0.5);
        int r = (int)ceil(6.0 * s) + 2;
        double px[64], py[64];
        for (int d = -r; d <= r; d++) {
            px[d + r] = synth_pix(floor(st[k].x + 0.5) + d, st[k].x, s);
            py[d + r] = synth_pix(floor(st[k].y + 0.5) + d, st[k].y, s);
        }
        for (int dy = -r; dy <= r; dy++)
            for (int dx = -r; dx <= r; dx++) {
                int64_t x = (int64_t)floor(st[k].x + 0.5) + dx;
                int64_t y = (int64_t)floor(st[k].y + 0.5) + dy;
                if (x < 0 || y < 0 || x >= w || y >= h)
                    continue;
                acc[y * w + x] += st[k].flux * px[dx + r] * py[dy + r];
            }
    }
    uint64_t rs = seed ? seed : 1;
    for (int64_t i = 0; i < w * h; i++) {
        double m = sky + acc[i];
        double v = m / depth; /* gain 1, stacked depth frames */
        double val = m + (seed ? sqrt(v) * synth_gauss(&rs) : 0.0);
        im->pix[i] = (float)(val * scale);
        im->var[i] = (float)(v * scale * scale);
    }
    free(acc);
}

static void synth_render(tide_image *im, int64_t w, int64_t h, double sky, double scale,
                         const synth_star *st, int n, double sig0, double sig_dx, uint64_t seed) {
    synth_render_depth(im, w, h, sky, scale, st, n, sig0, sig_dx, seed, 1.0);
}

static void synth_free(tide_image *im) {
    free(im->pix);
    free(im->var);
    free(im->mask);
    memset(im, 0, sizeof *im);
}
#endif
