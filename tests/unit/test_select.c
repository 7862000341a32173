/* test_select.c — median, percentiles (numpy 'linear') and sigma-clipped statistics
 * (astropy definition) against sort-based float64 references on awkward sizes, with NaN,
 * Inf, masks, ties, signed zeros; error cases. */
#include "tide_test.h"
#include "unit/test_reduce_ref.h"

static const double QS[] = {0.0,  0.1,  1.0,  2.5,  10.0, 25.0, 33.3, 50.0,
                            66.7, 75.0, 90.0, 97.5, 99.0, 99.9, 100.0};
#define NQ ((int)(sizeof QS / sizeof QS[0]))

static void check_image(tide_ctx *c, const tide_image *im, uint16_t bits, const char *what) {
    const int64_t npix = im->width * im->height;
    double *v = (double *)malloc((size_t)npix * sizeof(double));
    const int64_t n = ref_valid(im, bits, v);
    double med, pct[NQ];
    if (n == 0) {
        CHECK(tide_reduce_median(c, im, bits, &med) == TIDE_E_EMPTY);
        free(v);
        return;
    }
    qsort(v, (size_t)n, sizeof *v, ref_cmp);
    CHECK_OK(tide_reduce_median(c, im, bits, &med));
    /* Order statistics are exact, and the interpolation is the same formula: equality. */
    if (med != ref_median_sorted(v, n)) {
        fprintf(stderr, "%s %lldx%lld: median %.17g, want %.17g\n", what, (long long)im->width,
                (long long)im->height, med, ref_median_sorted(v, n));
        tide_test_failures++;
    }
    CHECK_OK(tide_reduce_percentiles(c, im, bits, QS, NQ, pct));
    for (int i = 0; i < NQ; i++) {
        const double want = ref_percentile_sorted(v, n, QS[i]);
        if (pct[i] != want) {
            fprintf(stderr, "%s %lldx%lld: p%g = %.17g, want %.17g\n", what, (long long)im->width,
                    (long long)im->height, QS[i], pct[i], want);
            tide_test_failures++;
        }
    }
    /* Sigma clipping, default parameters and a harder one. */
    const double sig[2] = {3.0, 2.0};
    const int its[2] = {5, 0};
    for (int k = 0; k < 2; k++) {
        tide_sigclip_params p = {sig[k], its[k]};
        tide_sigclip_result r;
        double *w = (double *)malloc((size_t)n * sizeof(double));
        memcpy(w, v, (size_t)n * sizeof(double));
        double rmean, rmed, rstd;
        int rit;
        const int64_t rn = ref_sigclip(w, n, sig[k], its[k], &rmean, &rmed, &rstd, &rit);
        CHECK_OK(tide_reduce_sigma_clip(c, im, bits, &p, &r));
        if (r.n_kept != rn || r.iterations != rit || !ref_close(r.mean, rmean, 1e-12) ||
            r.median != rmed || !ref_close(r.std, rstd, 1e-10)) {
            fprintf(stderr,
                    "%s %lldx%lld sigma %g: kept %lld/%lld it %d/%d mean %.17g/%.17g "
                    "median %.17g/%.17g std %.17g/%.17g\n",
                    what, (long long)im->width, (long long)im->height, sig[k], (long long)r.n_kept,
                    (long long)rn, r.iterations, rit, r.mean, rmean, r.median, rmed, r.std, rstd);
            tide_test_failures++;
        }
        free(w);
    }
    free(v);
}

int main(void) {
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *c = NULL;
    CHECK_OK(tide_ctx_create(&c, &o));
    if (!c)
        return 1;

    const int64_t sizes[][2] = {{1, 1},    {2, 1},   {97, 89},  {4097, 3},
                                {3, 4097}, {64, 64}, {509, 503}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        tide_image im;
        CHECK_OK(tide_image_alloc(c, &im, sizes[i][0], sizes[i][1], TIDE_HOST, TIDE_IMAGE_MASK));
        ref_fill(&im, 100 + i, 1000.0, 0.03, 0.06);
        check_image(c, &im, TIDE_REDUCE_ALL_BITS, "all-bits");
        check_image(c, &im, TIDE_MASK_NODATA, "nodata");
        /* Negative data across zero (key ordering of negative floats). */
        ref_fill(&im, 200 + i, -3.0, 0.01, 0.0);
        check_image(c, &im, TIDE_REDUCE_ALL_BITS, "negative");
        tide_image_free(c, &im);
    }

    /* Ties, signed zeros, integers (quantised data like int16 frames: many equal values). */
    {
        tide_image im;
        CHECK_OK(tide_image_alloc(c, &im, 331, 17, TIDE_HOST, 0));
        uint64_t s = 5;
        for (int64_t i = 0; i < 331 * 17; i++) {
            const uint64_t r = ref_rng_next(&s) % 23;
            im.pix[i] = r == 0 ? -0.0f : r == 1 ? 0.0f : (float)((int)r - 11);
        }
        check_image(c, &im, TIDE_REDUCE_ALL_BITS, "ties");
        /* Constant image: std 0, clipping keeps everything. */
        for (int64_t i = 0; i < 331 * 17; i++)
            im.pix[i] = 7.25f;
        check_image(c, &im, TIDE_REDUCE_ALL_BITS, "constant");
        tide_sigclip_result r;
        CHECK_OK(tide_reduce_sigma_clip(c, &im, 0, NULL, &r));
        CHECK(r.median == 7.25 && r.std == 0.0 && r.n_kept == 331 * 17 && r.iterations == 1);
        tide_image_free(c, &im);
    }

    /* Hand example: even count, median is the mean of the middle two. */
    {
        tide_image im;
        CHECK_OK(tide_image_alloc(c, &im, 4, 2, TIDE_HOST, 0));
        const float v[8] = {5.0f, NAN, 1.0f, 2.0f, 1e20f, -4.0f, NAN, 3.0f};
        memcpy(im.pix, v, sizeof v);
        double med, p[3];
        const double q[3] = {0.0, 25.0, 100.0};
        CHECK_OK(tide_reduce_median(c, &im, 0, &med));
        CHECK(med == 2.5); /* sorted -4 1 2 3 5 1e20 */
        CHECK_OK(tide_reduce_percentiles(c, &im, 0, q, 3, p));
        CHECK(p[0] == -4.0 && p[1] == 1.25 && p[2] == (double)1e20f);
        tide_image_free(c, &im);
    }

    /* Errors: percentile out of range, all-NaN, bad sigma. */
    {
        tide_image im;
        CHECK_OK(tide_image_alloc(c, &im, 4, 4, TIDE_HOST, 0));
        const double bad[1] = {100.5};
        double out[1];
        CHECK(tide_reduce_percentiles(c, &im, 0, bad, 1, out) == TIDE_E_RANGE);
        tide_sigclip_params p = {0.0, 5};
        tide_sigclip_result r;
        CHECK(tide_reduce_sigma_clip(c, &im, 0, &p, &r) == TIDE_E_RANGE);
        for (int i = 0; i < 16; i++)
            im.pix[i] = NAN;
        double med;
        const double q50[1] = {50.0};
        CHECK(tide_reduce_median(c, &im, 0, &med) == TIDE_E_EMPTY);
        CHECK(tide_reduce_percentiles(c, &im, 0, q50, 1, out) == TIDE_E_EMPTY);
        CHECK(tide_reduce_sigma_clip(c, &im, 0, NULL, &r) == TIDE_E_EMPTY);
        tide_image_free(c, &im);
    }
    tide_ctx_destroy(c);
    return TIDE_TEST_RESULT();
}
