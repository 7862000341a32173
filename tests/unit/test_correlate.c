/* test_correlate.c — FFT correlation and convolution on the CPU against direct float64
 * correlation, on awkward sizes, every kernel size, both paddings; NaN and mask handling;
 * strides; determinism; reuse of the one-shot correlator; bad arguments. */
#include <stdint.h>

#include "test_correlate_ref.h"
#include "tide/tide.h"
#include "tide_test.h"

/* Relative to the image's scale; float32 FFTs of these sizes stay near 1e-6. */
#define REL_TOL 2e-5

static double worst = 0.0;

/* Correlate one frame with nk kernels through tide_correlate and compare with the reference. */
static void run_case(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride, int64_t kw, int64_t kh,
                     int nk, int reflect, int convolve, double nan, double masked, uint16_t bits) {
    tide_image in = {0};
    in.width = w;
    in.height = h;
    in.stride = stride;
    in.location = TIDE_HOST;
    in.pix = malloc(sizeof(float) * (size_t)(stride * h));
    in.mask = masked > 0 ? calloc((size_t)(stride * h), sizeof(uint16_t)) : NULL;
    corr_fill(&in, (uint64_t)(w * 1000003 + h * 7 + kw), nan, masked);
    float *ks[8];
    const float *cks[8];
    for (int k = 0; k < nk; k++) {
        ks[k] = malloc(sizeof(float) * (size_t)(kw * kh));
        corr_kernel(ks[k], kw, kh, (uint64_t)(k * 31 + kw * 7 + kh));
        cks[k] = ks[k];
    }
    tide_image out[8];
    memset(out, 0, sizeof out);
    tide_correlate_options opt = {0};
    opt.pad = reflect ? TIDE_PAD_REFLECT : TIDE_PAD_ZERO;
    opt.mask_bits = bits;
    int st = convolve ? tide_convolve(ctx, &in, nk, cks, kw, kh, &opt, out)
                      : tide_correlate(ctx, &in, nk, cks, kw, kh, &opt, out);
    CHECK_OK(st);
    double *ref = malloc(sizeof(double) * (size_t)(w * h));
    for (int k = 0; k < nk && !st; k++) {
        corr_direct(&in, ks[k], kw, kh, reflect, convolve, bits, ref);
        double scale = corr_scale(&in, ks[k], kw, kh), err = 0.0;
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++) {
                double e = fabs(out[k].pix[y * out[k].stride + x] - ref[y * w + x]);
                if (!(e <= err))
                    err = e; /* NaN propagates as a failure */
            }
        err /= scale;
        if (err > worst)
            worst = err;
        if (!(err <= REL_TOL)) {
            fprintf(stderr, "%lld x %lld (stride %lld) kernel %lld x %lld #%d %s %s: rel err %g\n",
                    (long long)w, (long long)h, (long long)stride, (long long)kw, (long long)kh, k,
                    reflect ? "reflect" : "zero", convolve ? "convolve" : "correlate", err);
            CHECK(err <= REL_TOL);
        }
    }
    free(ref);
    for (int k = 0; k < nk; k++) {
        tide_image_free(ctx, &out[k]);
        free(ks[k]);
    }
    free(in.pix);
    free(in.mask);
}

static void test_sizes(tide_ctx *ctx) {
    static const int64_t sizes[][2] = {{1, 1},   {97, 89}, {4097, 3}, {3, 4097},
                                       {64, 48}, {31, 1},  {2, 7}};
    static const int64_t ksz[] = {1, 3, 5, 15};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t k = 0; k < sizeof ksz / sizeof ksz[0]; k++)
            for (int reflect = 0; reflect < 2; reflect++) {
                int convolve = (int)((s + k + (size_t)reflect) % 2);
                run_case(ctx, sizes[s][0], sizes[s][1], sizes[s][0], ksz[k], ksz[k], k == 2 ? 3 : 1,
                         reflect, convolve, 0.0, 0.0, 0);
            }
    /* non-square kernels, both orders of operation */
    run_case(ctx, 50, 41, 50, 3, 7, 2, 1, 0, 0.0, 0.0, 0);
    run_case(ctx, 50, 41, 50, 9, 1, 2, 0, 1, 0.0, 0.0, 0);
    run_case(ctx, 50, 41, 50, 1, 5, 1, 1, 1, 0.0, 0.0, 0);
}

static void test_masks_and_strides(tide_ctx *ctx) {
    /* NaN pixels and masked pixels count as zero; an unselected mask bit does nothing. */
    run_case(ctx, 83, 67, 83, 5, 5, 2, 0, 0, 0.02, 0.05, TIDE_MASK_BAD);
    run_case(ctx, 83, 67, 83, 5, 5, 1, 1, 0, 0.02, 0.05, TIDE_MASK_BAD);
    run_case(ctx, 83, 67, 83, 5, 5, 1, 1, 0, 0.02, 0.05, TIDE_MASK_SATURATED);
    /* a row stride wider than the frame */
    run_case(ctx, 61, 40, 70, 7, 3, 2, 1, 1, 0.0, 0.0, 0);
}

/* The same call twice (second through the kept correlator) and through an explicit
 * correlator must give bitwise the same result; outputs given by the caller are used. */
static void test_determinism(tide_ctx *ctx) {
    tide_image in;
    CHECK_OK(tide_image_alloc(ctx, &in, 120, 77, TIDE_HOST, 0));
    corr_fill(&in, 99, 0.0, 0.0);
    float k0[25], k1[25];
    corr_kernel(k0, 5, 5, 1);
    corr_kernel(k1, 5, 5, 2);
    const float *ks[2] = {k0, k1};
    tide_image a[2] = {{0}}, b[2] = {{0}}, c[2] = {{0}};
    CHECK_OK(tide_correlate(ctx, &in, 2, ks, 5, 5, NULL, a));
    CHECK_OK(tide_image_alloc(ctx, &b[0], 120, 77, TIDE_HOST, 0));
    CHECK_OK(tide_image_alloc(ctx, &b[1], 120, 77, TIDE_HOST, 0));
    float *given = b[0].pix;
    CHECK_OK(tide_correlate(ctx, &in, 2, ks, 5, 5, NULL, b));
    CHECK(b[0].pix == given);
    tide_correlator *cor;
    CHECK_OK(tide_correlator_create(ctx, 120, 77, 2, ks, 5, 5, NULL, &cor));
    int64_t px = 0, py = 0;
    tide_correlator_shape(cor, &px, &py);
    CHECK(px == 125 && py == 81);
    CHECK_OK(tide_correlator_run(ctx, cor, &in, c));
    CHECK_OK(tide_correlator_run(ctx, cor, &in, c));
    for (int k = 0; k < 2; k++) {
        CHECK(!memcmp(a[k].pix, b[k].pix, sizeof(float) * 120 * 77));
        CHECK(!memcmp(a[k].pix, c[k].pix, sizeof(float) * 120 * 77));
        tide_image_free(ctx, &a[k]);
        tide_image_free(ctx, &b[k]);
        tide_image_free(ctx, &c[k]);
    }
    tide_correlator_free(ctx, cor);
    /* a changed kernel must not reuse the kept correlator's spectra */
    k0[12] += 1.0f;
    CHECK_OK(tide_correlate(ctx, &in, 1, ks, 5, 5, NULL, a));
    double ref[120 * 77];
    corr_direct(&in, k0, 5, 5, 0, 0, 0, ref);
    CHECK_CLOSE(a[0].pix[40 * 120 + 60], ref[40 * 120 + 60], 1e-5 * corr_scale(&in, k0, 5, 5));
    tide_image_free(ctx, &a[0]);
    tide_image_free(ctx, &in);
}

static void test_bad_args(tide_ctx *ctx) {
    tide_image in;
    CHECK_OK(tide_image_alloc(ctx, &in, 10, 10, TIDE_HOST, 0));
    float k[9] = {0}, kn[9] = {0};
    kn[4] = NAN;
    const float *ks[1] = {k}, *kns[1] = {kn};
    tide_image out[1] = {{0}};
    CHECK(tide_correlate(ctx, &in, 1, ks, 2, 3, NULL, out) == TIDE_E_INVAL); /* even */
    CHECK(tide_correlate(ctx, &in, 0, ks, 3, 3, NULL, out) == TIDE_E_INVAL);
    CHECK(tide_correlate(ctx, &in, 1, kns, 3, 3, NULL, out) == TIDE_E_INVAL);
    tide_correlate_options o = {0};
    o.pad = (tide_pad_mode)5;
    CHECK(tide_correlate(ctx, &in, 1, ks, 3, 3, &o, out) == TIDE_E_INVAL);
    tide_image wrong;
    CHECK_OK(tide_image_alloc(ctx, &wrong, 9, 10, TIDE_HOST, 0));
    CHECK(tide_correlate(ctx, &in, 1, ks, 3, 3, NULL, &wrong) == TIDE_E_INVAL);
    tide_image_free(ctx, &wrong);
    tide_image_free(ctx, &in);
}

int main(void) {
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    o.threads = 2;
    tide_ctx *ctx;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    if (!ctx)
        return TIDE_TEST_RESULT();
    test_sizes(ctx);
    test_masks_and_strides(ctx);
    test_determinism(ctx);
    test_bad_args(ctx);
    printf("worst relative error %.3g (tolerance %g)\n", worst, REL_TOL);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
