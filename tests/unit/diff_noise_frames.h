/* diff_noise_frames.h — random frames for the tests of tide_diffp_noise_scale (host and
 * device): Gaussian noise with a unit variance plane, masked / NaN / zero-variance pixels and
 * a few bright sources. */
#ifndef TIDE_TEST_DIFF_NOISE_FRAMES_H
#define TIDE_TEST_DIFF_NOISE_FRAMES_H
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tide/tide.h"

static uint64_t rng(uint64_t *s) {
    *s += 0x9E3779B97F4A7C15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double unif(uint64_t *s) {
    return ((double)(rng(s) >> 11) + 0.5) / 9007199254740992.0;
}

/* A w × h frame (row stride ≥ w) of Gaussian noise of sigma @p sig with variance plane 1,
 * a fraction @p bad of masked / NaN / zero-variance pixels and a few bright sources. */
static void make(tide_image *im, int64_t w, int64_t h, int64_t stride, double sig, double bad,
                 int with_mask, uint64_t seed) {
    memset(im, 0, sizeof *im);
    im->width = w, im->height = h, im->stride = stride, im->location = TIDE_HOST;
    const size_t n = (size_t)(stride * h);
    im->pix = malloc(n * sizeof(float));
    im->var = malloc(n * sizeof(float));
    im->mask = with_mask ? calloc(n, sizeof(uint16_t)) : NULL;
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        const double u1 = unif(&s), u2 = unif(&s);
        im->pix[i] = (float)(sig * sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
        im->var[i] = 1.0f;
        const double r = unif(&s);
        if (r < bad / 3 && im->mask)
            im->mask[i] = TIDE_MASK_COSMIC;
        else if (r < 2 * bad / 3)
            im->pix[i] = NAN;
        else if (r < bad)
            im->var[i] = 0.0f;
        if (unif(&s) < 1e-3)
            im->pix[i] += 500.0f; /* sources: the MAD ignores them */
    }
}

static void release(tide_image *im) {
    free(im->pix);
    free(im->var);
    free(im->mask);
}

#endif
