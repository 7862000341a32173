/* diff_walkthrough.h — the classic difference-imaging walkthrough for the tests: two 256x256
 * frames with three static stars and a mover, the science frame blurred by a Gaussian of
 * sigma 0.65 px and shifted by (20, -32) px with its TAN WCS moved to match. */
#ifndef TIDE_TEST_DIFF_WALKTHROUGH_H
#define TIDE_TEST_DIFF_WALKTHROUGH_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/test_rng.h"
#include "tide/tide.h"
#include "tide_test.h"

#define N 256

/* Deterministic normal deviates (xorshift64* + Box-Muller). */
static double gauss(uint64_t *s) {
    double u[2];
    for (int k = 0; k < 2; k++)
        u[k] = trng_open(trng_xorshift64s(s));
    return trng_box_muller(u[0], u[1]);
}

/* Pixel-integrated Gaussians of standard deviation sig on a sky, with noise sqrt(value). */
static void render(tide_image *im, const double (*src)[3], int n, double sig, double sky,
                   uint64_t seed) {
    tide_image_alloc(NULL, im, N, N, TIDE_HOST, TIDE_IMAGE_MASK);
    uint64_t s = seed;
    for (int y = 0; y < N; y++)
        for (int x = 0; x < N; x++) {
            double v = sky;
            for (int k = 0; k < n; k++) {
                const double r = sqrt(2.0) * sig;
                const double fx =
                    0.5 * (erf((x + 0.5 - src[k][0]) / r) - erf((x - 0.5 - src[k][0]) / r));
                const double fy =
                    0.5 * (erf((y + 0.5 - src[k][1]) / r) - erf((y - 0.5 - src[k][1]) / r));
                v += src[k][2] * fx * fy;
            }
            im->pix[y * N + x] = (float)(v + sqrt(v) * gauss(&s));
        }
}

static void header(tide_header *h, double dx, double dy) {
    tide_header_init(h);
    tide_header_set_str(h, "CTYPE1", "RA---TAN", NULL);
    tide_header_set_str(h, "CTYPE2", "DEC--TAN", NULL);
    tide_header_set_dbl(h, "CRVAL1", 150.0, NULL);
    tide_header_set_dbl(h, "CRVAL2", 2.2, NULL);
    tide_header_set_dbl(h, "CRPIX1", 128.5 + dx, NULL);
    tide_header_set_dbl(h, "CRPIX2", 128.5 + dy, NULL);
    tide_header_set_dbl(h, "CD1_1", -0.27 / 3600, NULL);
    tide_header_set_dbl(h, "CD1_2", 0.0, NULL);
    tide_header_set_dbl(h, "CD2_1", 0.0, NULL);
    tide_header_set_dbl(h, "CD2_2", 0.27 / 3600, NULL);
    tide_header_set_dbl(h, "GAIN", 1.0, NULL);
}

/* The walkthrough pair: template and science with their headers. */
static void walkthrough_pair(tide_image *sci, tide_header *hs, tide_image *tmpl, tide_header *ht) {
    const double sig_t = 1.2, sig_s = sqrt(1.2 * 1.2 + 0.65 * 0.65), sx = 20, sy = -32;
    double tsrc[4][3] = {
        {60.3, 90.7, 150000}, {150.6, 180.2, 100000}, {200.2, 70.5, 70000}, {110.25, 130.4, 12000}};
    double ssrc[4][3];
    for (int k = 0; k < 4; k++) {
        ssrc[k][0] = tsrc[k][0] + sx + (k == 3 ? 2.9 : 0);
        ssrc[k][1] = tsrc[k][1] + sy + (k == 3 ? 2.1 : 0);
        ssrc[k][2] = tsrc[k][2];
    }
    render(tmpl, tsrc, 4, sig_t, 1000.0, 12345);
    render(sci, ssrc, 4, sig_s, 1150.0, 67890);
    header(ht, 0, 0);
    header(hs, sx, sy);
}

#endif
