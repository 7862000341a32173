/* test_diff_noise_scale.c — tide_diffp_noise_scale (diff_fit.c), now rows of boxes in
 * parallel and medians by selection, gives bit for bit the factor of its serial, sorting
 * formulation (written out here) on random frames with masked pixels, NaN, zero variance,
 * odd and even box counts, widths that are not multiples of the box, a row stride, too few
 * boxes (factor 1) and the clamps at 0.25 and 16. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/diff_internal.h"
#include "tide/tide.h"
#include "tide_test.h"
#include "diff_noise_frames.h"

static int cmp_dbl(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The formulation before: one pass over the boxes in order, qsort medians. */
static double noise_scale_ref(const tide_image *d, double fwhm) {
    int b = (int)floor(1.5 * fwhm + 0.5) | 1;
    b = b < 3 ? 3 : (b > 31 ? 31 : b);
    if (!d->var || d->width < 3 * b || d->height < 3 * b)
        return 1.0;
    const int64_t nx = d->width / b, ny = d->height / b;
    double *z = malloc(sizeof(double) * (size_t)(nx * ny));
    int64_t n = 0;
    for (int64_t by = 0; by < ny; by++)
        for (int64_t bx = 0; bx < nx; bx++) {
            double s = 0, v = 0;
            int ok = 1;
            for (int64_t y = by * b; ok && y < (by + 1) * b; y++)
                for (int64_t x = bx * b; x < (bx + 1) * b; x++) {
                    const int64_t i = y * d->stride + x;
                    if ((d->mask && d->mask[i]) || !isfinite(d->pix[i]) || !(d->var[i] > 0)) {
                        ok = 0;
                        break;
                    }
                    s += d->pix[i];
                    v += d->var[i];
                }
            if (ok)
                z[n++] = s / sqrt(v);
        }
    double f = 1.0;
    if (n >= 50) {
        qsort(z, (size_t)n, sizeof *z, cmp_dbl);
        const double med = n % 2 ? z[n / 2] : 0.5 * (z[n / 2 - 1] + z[n / 2]);
        for (int64_t i = 0; i < n; i++)
            z[i] = fabs(z[i] - med);
        qsort(z, (size_t)n, sizeof *z, cmp_dbl);
        const double mad = n % 2 ? z[n / 2] : 0.5 * (z[n / 2 - 1] + z[n / 2]);
        const double sig = 1.482602218505602 * mad;
        f = sig * sig;
        f = f < 0.25 ? 0.25 : (f > 16 ? 16 : f);
    }
    free(z);
    return f;
}

static void same(int64_t w, int64_t h, int64_t stride, double sig, double bad, int with_mask,
                 double fwhm, uint64_t seed) {
    tide_image im;
    make(&im, w, h, stride, sig, bad, with_mask, seed);
    const double a = noise_scale_ref(&im, fwhm), b = tide_diffp_noise_scale(NULL, &im, fwhm);
    if (a != b)
        printf("%lldx%lld stride %lld sigma %g bad %g mask %d fwhm %g: %.17g vs %.17g\n",
               (long long)w, (long long)h, (long long)stride, sig, bad, with_mask, fwhm, a, b);
    CHECK(a == b);
    release(&im);
}

int main(void) {
    uint64_t seed = 7;
    for (int t = 0; t < 40; t++) {
        const int64_t w = 30 + (int64_t)(rng(&seed) % 300), h = 30 + (int64_t)(rng(&seed) % 300);
        const int64_t stride = w + (t % 3 == 0 ? (int64_t)(rng(&seed) % 7) : 0);
        const double sig = 0.3 + 3.0 * unif(&seed), bad = (t % 4) * 0.01;
        const double fwhm = 1.0 + 12.0 * unif(&seed);
        same(w, h, stride, sig, bad, t % 2, fwhm, 1000 + (uint64_t)t);
    }
    same(512, 512, 512, 1.0, 0.0, 1, 3.0, 1);  /* 1 exactly-ish: the common case */
    same(513, 511, 520, 0.1, 0.0, 0, 3.0, 2);  /* clamp at 0.25 */
    same(300, 300, 300, 20.0, 0.0, 0, 3.0, 3); /* clamp at 16 */
    same(30, 30, 30, 1.0, 0.0, 0, 3.0, 4);     /* 36 < 50 boxes: 1 */
    same(200, 200, 200, 1.0, 0.9, 1, 2.0, 5);  /* most boxes rejected */
    same(8, 300, 8, 1.0, 0.0, 0, 3.0, 6);      /* narrower than 3 boxes: 1 */
    /* the known values */
    tide_image im;
    make(&im, 30, 30, 30, 1.0, 0.0, 0, 4);
    CHECK(tide_diffp_noise_scale(NULL, &im, 3.0) == 1.0);
    release(&im);
    make(&im, 300, 300, 300, 20.0, 0.0, 0, 3);
    CHECK(tide_diffp_noise_scale(NULL, &im, 3.0) == 16.0);
    release(&im);
    make(&im, 1024, 1024, 1024, 1.0, 0.0, 0, 9);
    /* unit-variance noise: ~1 (the 0.1% sources inflate the MAD by a few %) */
    CHECK_CLOSE(tide_diffp_noise_scale(NULL, &im, 3.0), 1.0, 0.1);
    release(&im);
    return TIDE_TEST_RESULT();
}
