/* test_reduce.c — count/sum/min/max/mean/std over valid pixels against a naive float64
 * (long double) reference on awkward sizes, masks, NaN/Inf, strided images; bitwise
 * determinism across runs and thread counts; empty input. */
#include "tide_test.h"
#include "unit/test_reduce_ref.h"

/* Relative tolerance of sum/mean against the long-double reference: double accumulation of
 * <= 4e6 float values in a pairwise tree errs by far less than this. */
#define TOL_SUM 1e-12
#define TOL_STD 1e-10

static void check_one(tide_ctx *c1, tide_ctx *c2, const tide_image *im, uint16_t bits,
                      const char *what) {
    const int64_t npix = im->width * im->height;
    double *vals = (double *)malloc((size_t)(npix > 0 ? npix : 1) * sizeof(double));
    const int64_t n = ref_valid(im, bits, vals);
    const ref_stats_t r = ref_stats(vals, n);
    tide_stats a, b, a2;
    const int st = tide_reduce_stats(c1, im, bits, &a);
    if (n == 0) {
        CHECK(st == TIDE_E_EMPTY);
        CHECK(a.n_valid == 0 && isnan(a.mean) && isnan(a.std));
    } else {
        CHECK_OK(st);
        if (a.n_valid != n || !ref_close(a.sum, r.sum, TOL_SUM) ||
            !ref_close(a.mean, r.mean, TOL_SUM) || !ref_close(a.std, r.std, TOL_STD) ||
            a.min != r.min || a.max != r.max) {
            fprintf(stderr,
                    "%s %lldx%lld bits %x: n %lld/%lld sum %.17g/%.17g mean %.17g/%.17g "
                    "std %.17g/%.17g min %g/%g max %g/%g\n",
                    what, (long long)im->width, (long long)im->height, bits, (long long)a.n_valid,
                    (long long)n, a.sum, r.sum, a.mean, r.mean, a.std, r.std, a.min, r.min, a.max,
                    r.max);
            tide_test_failures++;
        }
    }
    CHECK(a.n_total == npix);
    /* Bitwise: a second run, and another thread count, give the same bytes. */
    tide_reduce_stats(c1, im, bits, &a2);
    tide_reduce_stats(c2, im, bits, &b);
    CHECK(memcmp(&a, &a2, sizeof a) == 0);
    CHECK(memcmp(&a, &b, sizeof a) == 0);
    free(vals);
}

static void run_size(tide_ctx *c1, tide_ctx *c2, int64_t w, int64_t h, uint64_t seed) {
    tide_image im;
    CHECK_OK(tide_image_alloc(c1, &im, w, h, TIDE_HOST, TIDE_IMAGE_MASK));
    ref_fill(&im, seed, 1000.0, 0.03, 0.06);
    check_one(c1, c2, &im, TIDE_REDUCE_ALL_BITS, "all-bits");
    check_one(c1, c2, &im, TIDE_MASK_NODATA, "nodata");
    check_one(c1, c2, &im, 0, "no-mask-bits");
    /* Same pixels without a mask plane. */
    uint16_t *m = im.mask;
    im.mask = NULL;
    check_one(c1, c2, &im, TIDE_REDUCE_ALL_BITS, "no-plane");
    im.mask = m;
    tide_image_free(c1, &im);
}

int main(void) {
    tide_ctx *c1 = tide_test_ctx(TIDE_BACKEND_CPU, 0), *c2 = tide_test_ctx(TIDE_BACKEND_CPU, 1);
    if (!c1 || !c2)
        return 1;
    const int64_t sizes[][2] = {{1, 1},    {97, 89}, {4097, 3},    {3, 4097},   {1, 4096},
                                {4096, 1}, {63, 65}, {1021, 1019}, {2048, 2049}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        run_size(c1, c2, sizes[i][0], sizes[i][1], 42 + i);

    /* A strided view (padding columns filled with garbage that must be ignored). */
    {
        const int64_t w = 97, h = 89, stride = 131;
        float *pix = (float *)malloc((size_t)(stride * h) * sizeof(float));
        uint16_t *mask = (uint16_t *)malloc((size_t)(stride * h) * sizeof(uint16_t));
        for (int64_t i = 0; i < stride * h; i++) {
            pix[i] = 1e30f;
            mask[i] = 0;
        }
        tide_image im = {w, h, stride, pix, mask, NULL, TIDE_HOST, 0};
        ref_fill(&im, 7, -50.0, 0.02, 0.05);
        check_one(c1, c2, &im, TIDE_REDUCE_ALL_BITS, "strided");
        free(pix);
        free(mask);
    }

    /* Large offset: two-pass std keeps full precision where sum of squares would not. */
    {
        tide_image im;
        CHECK_OK(tide_image_alloc(c1, &im, 513, 257, TIDE_HOST, 0));
        ref_fill(&im, 9, 1.0e6, 0.0, 0.0);
        check_one(c1, c2, &im, TIDE_REDUCE_ALL_BITS, "offset");
        tide_image_free(c1, &im);
    }

    /* Exact small case: 1×1 and hand values. */
    {
        tide_image im;
        CHECK_OK(tide_image_alloc(c1, &im, 5, 1, TIDE_HOST, TIDE_IMAGE_MASK));
        const float v[5] = {1.0f, NAN, -3.0f, 4.0f, 100.0f};
        memcpy(im.pix, v, sizeof v);
        im.mask[4] = TIDE_MASK_BAD;
        tide_stats s;
        CHECK_OK(tide_reduce_stats(c1, &im, TIDE_REDUCE_ALL_BITS, &s));
        CHECK(s.n_valid == 3 && s.n_total == 5);
        CHECK(s.sum == 2.0 && s.min == -3.0 && s.max == 4.0);
        CHECK_CLOSE(s.mean, 2.0 / 3.0, 1e-15);
        CHECK_CLOSE(s.std,
                    sqrt((pow(1 - 2.0 / 3, 2) + pow(-3 - 2.0 / 3, 2) + pow(4 - 2.0 / 3, 2)) / 3.0),
                    1e-15);
        CHECK_OK(tide_reduce_stats(c1, &im, TIDE_MASK_NODATA, &s));
        CHECK(s.n_valid == 4 && s.max == 100.0);
        /* All invalid: TIDE_E_EMPTY, NaN values, counts kept. */
        for (int i = 0; i < 5; i++)
            im.pix[i] = NAN;
        CHECK(tide_reduce_stats(c1, &im, TIDE_REDUCE_ALL_BITS, &s) == TIDE_E_EMPTY);
        CHECK(s.n_valid == 0 && s.n_total == 5 && isnan(s.mean) && isnan(s.min));
        tide_image_free(c1, &im);
    }

    /* Device image on a CPU context is a clear error. */
    {
        tide_image im = {4, 4, 4, NULL, NULL, NULL, TIDE_DEVICE, 0};
        float dummy[16] = {0};
        im.pix = dummy;
        tide_stats s;
        CHECK(tide_reduce_stats(c1, &im, 0, &s) == TIDE_E_INVAL);
    }
    tide_ctx_destroy(c1);
    tide_ctx_destroy(c2);
    return TIDE_TEST_RESULT();
}
