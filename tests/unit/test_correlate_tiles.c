/* test_correlate_tiles.c — CPU correlation of frames too large for one cache-sized transform
 * is done in overlap-save tiles (correlate.c, choose_tiles): the result must still be the
 * linear correlation (checked against direct float64 correlation at every pixel), on frames
 * tiled along x only, y only and both, partial last tiles, both paddings, convolution,
 * NaN / masked pixels and a padded stride; tiles must not exceed 1024 on a side. */
#include <stdint.h>

#include "test_correlate_ref.h"
#include "tide/tide.h"
#include "tide_test.h"

#define REL_TOL 2e-5

static void run_case(tide_ctx *ctx, int64_t w, int64_t h, int64_t kw, int64_t kh, int nk,
                     int reflect, int convolve) {
    tide_image in = {0};
    in.width = w;
    in.height = h;
    in.stride = w + 3;
    in.location = TIDE_HOST;
    in.pix = malloc(sizeof(float) * (size_t)(in.stride * h));
    in.mask = calloc((size_t)(in.stride * h), sizeof(uint16_t));
    corr_fill(&in, (uint64_t)(w * 31 + h + kw), 0.001, 0.002);
    float *ks[4];
    const float *cks[4];
    for (int k = 0; k < nk; k++) {
        ks[k] = malloc(sizeof(float) * (size_t)(kw * kh));
        corr_kernel(ks[k], kw, kh, (uint64_t)(k * 17 + kw * 5 + kh));
        cks[k] = ks[k];
    }
    tide_correlate_options opt = {0};
    opt.pad = reflect ? TIDE_PAD_REFLECT : TIDE_PAD_ZERO;
    opt.mask_bits = TIDE_MASK_BAD;
    opt.convolve = convolve;
    tide_correlator *c = NULL;
    CHECK_OK(tide_correlator_create(ctx, w, h, nk, cks, kw, kh, &opt, &c));
    if (!c)
        return;
    int64_t px = 0, py = 0;
    tide_correlator_shape(c, &px, &py);
    CHECK(px <= 1024 && py <= 1024);
    CHECK(px >= kw && py >= kh);
    tide_image out[4];
    memset(out, 0, sizeof out);
    CHECK_OK(tide_correlator_run(ctx, c, &in, out));
    double *ref = malloc(sizeof(double) * (size_t)(w * h));
    for (int k = 0; k < nk; k++) {
        corr_direct(&in, ks[k], kw, kh, reflect, convolve, TIDE_MASK_BAD, ref);
        const double scale = corr_scale(&in, ks[k], kw, kh);
        double err = 0.0;
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++) {
                const double e = fabs(out[k].pix[y * out[k].stride + x] - ref[y * w + x]);
                if (!(e <= err))
                    err = e;
            }
        err /= scale;
        if (!(err <= REL_TOL))
            fprintf(stderr,
                    "%lld x %lld kernel %lld x %lld #%d %s %s: padded %lld x %lld, rel "
                    "err %g\n",
                    (long long)w, (long long)h, (long long)kw, (long long)kh, k,
                    reflect ? "reflect" : "zero", convolve ? "convolve" : "correlate",
                    (long long)px, (long long)py, err);
        CHECK(err <= REL_TOL);
        tide_image_free(ctx, &out[k]);
    }
    free(ref);
    tide_correlator_free(ctx, c);
    for (int k = 0; k < nk; k++)
        free(ks[k]);
    free(in.pix);
    free(in.mask);
}

int main(void) {
    tide_ctx *ctx = NULL;
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    if (!ctx)
        return 1;
    run_case(ctx, 2213, 37, 25, 7, 3, 0, 0);   /* x tiled, partial last tile */
    run_case(ctx, 41, 2089, 5, 31, 2, 1, 0);   /* y tiled, reflect */
    run_case(ctx, 1100, 1031, 9, 9, 1, 1, 1);  /* both axes, convolution */
    run_case(ctx, 1030, 1040, 3, 25, 2, 0, 0); /* both, flat and tall kernel */
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
