/* test_prepare.c — one frame preparation (src/pipeline/prepare.h) for both pipelines: tide
 * reduce (tide_pipeline_run) and tide diff (its frame preparation) prepare the same frame
 * identically — the same background and RMS maps bit for bit, the same global sky, the same
 * cosmic rays — when the instrument values resolve alike; the shared step gives the same mask,
 * maps and background-subtracted pixels in the reduction's and the difference's modes; and the
 * two FWHM rules (5 stars, or 3 stars and a 25% clip). On the CPU. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pipeline/diff_internal.h"
#include "pipeline/prepare.h"
#include "tide/config.h"
#include "tide/instrument.h"
#include "tide/reduce.h"
#include "tide/tide.h"
#include "tide_test.h"
#include "common/diff_walkthrough.h"

static int same_bytes(const void *a, const void *b, size_t n) {
    return a && b && !memcmp(a, b, n);
}

/* The walkthrough's science frame with cosmic rays, a read noise and a saturation level. */
static void frame(tide_image *im, tide_header *h) {
    tide_image t;
    tide_header ht;
    walkthrough_pair(im, h, &t, &ht);
    tide_image_free(NULL, &t);
    tide_header_free(&ht);
    static const int hits[][2] = {{30, 40}, {100, 200}, {220, 20}, {77, 150}, {180, 240}};
    for (int k = 0; k < 5; k++)
        im->pix[hits[k][1] * im->stride + hits[k][0]] += 4000.0f;
    tide_header_set_dbl(h, "RDNOISE", 5.0, NULL);
    tide_header_set_dbl(h, "SATURATE", 9000.0, NULL);
}

/* tide reduce and the difference pipeline on the same frame. */
static void pipelines(tide_ctx *ctx, const tide_image *im, const tide_header *h) {
    /* tide reduce's cosmic-ray threshold is processing.cr_sigma (5), the difference
     * pipeline's the cosmetics default (4.5): the same here, to compare the preparations */
    const char *const sets[] = {"processing.cr_sigma=4.5"};
    tide_config *cfg = NULL;
    const tide_config_load_options lo = {"", NULL, sets, 1};
    CHECK_OK(tide_config_load(&cfg, &lo));
    tide_instrument inst;
    CHECK_OK(tide_instrument_resolve(cfg, h, "frame", &inst));
    tide_pipeline_params p;
    tide_pipeline_params_default(&p);
    CHECK_OK(tide_pipeline_params_from_config(&p, cfg, &inst));
    p.keep_maps = 1;
    tide_pipeline_result res;
    CHECK_OK(tide_pipeline_run(ctx, im, h, &p, &res));

    tide_bkg_params bkg;
    tide_bkg_params_default(&bkg);
    tide_cosmetics_params cos;
    tide_cosmetics_params_default(&cos);
    tide_diffp_frame f;
    const tide_diffp_input in = {im, h, NULL, "frame", 0, NAN, 0, NULL, cfg};
    CHECK_OK(tide_diffp_prepare_input(ctx, &in, 3.0, &bkg, &cos, &f));
    printf("reduce: sky %.6f rms %.6f, %lld cosmic; diff: sky %.6f rms %.6f, %lld cosmic "
           "(gain %g, saturation %g)\n",
           res.bkg.global_back, res.bkg.global_rms, (long long)res.cos.n_cosmic, f.sky, f.sky_rms,
           (long long)f.ncosmic, f.gain, f.saturate);
    CHECK(res.bkg.global_back == f.sky);
    CHECK(res.bkg.global_rms == f.sky_rms);
    CHECK(res.cos.n_cosmic == f.ncosmic);
    CHECK(res.cos.n_cosmic >= 3);
    CHECK(f.gain == 1.0 && f.saturate == 9000.0);

    /* the difference pipeline's preparation, its maps kept: reduce's maps bit for bit */
    tide_cosmetics_params dc = cos; /* as the difference pipeline completes them */
    dc.gain = f.gain;
    dc.rdnoise = 5.0;
    dc.saturation = f.saturate;
    const tide_prep_params dp = {.name = "frame",
                                 .cos = &dc,
                                 .cos_guard = 1,
                                 .bkg = &bkg,
                                 .variance = 1,
                                 .gain = f.gain,
                                 .saturate = f.saturate};
    tide_prepared d;
    CHECK_OK(tide_prep_frame(ctx, im, &dp, &d));
    const size_t nb = sizeof(float) * (size_t)(im->width * im->height);
    CHECK(res.back_map.width == d.bkg.width && res.back_map.stride == d.bkg.stride);
    CHECK(same_bytes(res.back_map.pix, d.bkg.pix, nb));
    CHECK(same_bytes(res.rms_map.pix, d.rms.pix, nb));
    CHECK(
        same_bytes(f.work.mask, d.work.mask, sizeof(uint16_t) * (size_t)(im->width * im->height)));
    tide_prep_frame_free(ctx, &d);
    tide_diffp_frame_free(ctx, &f);
    tide_pipeline_result_free(&res);

    /* without GAIN the gain is unknown (0: no Poisson term), as for tide reduce — not 1 */
    tide_header h2;
    tide_header_init(&h2);
    CHECK_OK(tide_header_copy(&h2, h));
    CHECK(tide_header_remove(&h2, "GAIN") == 1);
    const tide_diffp_input in2 = {im, &h2, NULL, "nogain", 0, NAN, 0, NULL, cfg};
    CHECK_OK(tide_diffp_prepare_input(ctx, &in2, 3.0, &bkg, &cos, &f));
    CHECK(f.gain == 0 && f.saturate == 9000.0);
    int differs = 0;
    for (int g = 0; g <= 1; g++) { /* its cosmetics ran with gain 0, and gain 1 is another mask */
        tide_cosmetics_params c0 = cos;
        c0.gain = g;
        c0.rdnoise = 5.0;
        c0.saturation = 9000.0;
        const tide_prep_params p0 = {.name = "nogain",
                                     .cos = &c0,
                                     .cos_guard = 1,
                                     .bkg = &bkg,
                                     .variance = 1,
                                     .gain = 0,
                                     .saturate = 9000.0};
        CHECK_OK(tide_prep_frame(ctx, im, &p0, &d));
        const int same = same_bytes(f.work.mask, d.work.mask,
                                    sizeof(uint16_t) * (size_t)(im->width * im->height));
        if (g == 0)
            CHECK(same);
        else
            differs = !same;
        tide_prep_frame_free(ctx, &d);
    }
    printf("no GAIN: cosmetics with gain 0; a gain of 1 %s the mask\n",
           differs ? "changes" : "would not change");
    tide_diffp_frame_free(ctx, &f);
    tide_header_free(&h2);
    tide_config_free(cfg);
}

/* The shared step in the reduction's mode and the difference's (without a saturation level
 * in either, so the variance pass flags nothing): the same mask, maps and pixels. */
static void modes(tide_ctx *ctx, const tide_image *im) {
    tide_bkg_params bkg;
    tide_bkg_params_default(&bkg);
    tide_cosmetics_params cos;
    tide_cosmetics_params_default(&cos);
    const tide_prep_params rp = {.name = "r",
                                 .cos = &cos,
                                 .bkg = &bkg,
                                 .timers = {"t.upload", "t.cosmetics", "t.background"}};
    const tide_prep_params dp = {.name = "d",
                                 .cos = &cos,
                                 .cos_guard = 1,
                                 .bkg = &bkg,
                                 .variance = 1,
                                 .gain = 1.0,
                                 .saturate = NAN};
    tide_prepared r, d;
    CHECK_OK(tide_prep_frame(ctx, im, &rp, &r));
    CHECK_OK(tide_prep_frame(ctx, im, &dp, &d));
    const int64_t n = im->width * im->height;
    CHECK(r.work.var == NULL && d.work.var != NULL);
    CHECK(same_bytes(r.work.mask, d.work.mask, sizeof(uint16_t) * (size_t)n));
    CHECK(same_bytes(r.work.pix, d.work.pix, sizeof(float) * (size_t)n));
    CHECK(same_bytes(r.bkg.pix, d.bkg.pix, sizeof(float) * (size_t)n));
    printf("modes: %lld and %lld cosmic-ray pixels\n", (long long)r.cr.n_cosmic,
           (long long)d.cr.n_cosmic);
    CHECK(r.cr.n_cosmic == d.cr.n_cosmic && r.cr.n_cosmic >= 3 && !d.cos_dropped);
    CHECK(r.bkgs.global_back == d.bkgs.global_back);
    int calls = 0, found = 0;
    for (int i = 0; i < tide_timer_count(ctx); i++) {
        const char *name;
        double ms;
        int c;
        if (!tide_timer_get(ctx, i, &name, &ms, &c) && !strcmp(name, "t.background"))
            found = 1, calls = c;
    }
    CHECK(found && calls == 2); /* the estimate and the subtraction */

    /* first pass and FWHM on the prepared frame: the reduction's rule needs 5 stars, the
     * difference's 3, and the walkthrough has 4 */
    tide_detect_params det;
    tide_detect_params_default(&det);
    tide_table t;
    tide_table_init(&t);
    CHECK_OK(tide_prep_first_pass(ctx, &r.work, &r.rms, &det, NULL, &t));
    const tide_prep_fwhm_rule rr = TIDE_PREP_FWHM_REDUCE, dr = TIDE_PREP_FWHM_DIFF;
    int64_t nr = -1, nd = -1;
    const double fr = tide_prep_fwhm(&t, &rr, &nr), fd = tide_prep_fwhm(&t, &dr, &nd);
    printf("first pass: %lld sources; FWHM reduce %.4f (%lld), diff %.4f (%lld)\n",
           (long long)t.nrows, fr, (long long)nr, fd, (long long)nd);
    CHECK(fr == 0 && nr == 0);
    CHECK(fd > 2.0 && fd < 4.5 && nd >= 3);
    tide_table_free(&t);
    tide_prep_frame_free(ctx, &r);
    tide_prep_frame_free(ctx, &d);
}

/* The FWHM rules on a table made by hand. */
static void fwhm_rules(void) {
    tide_table t;
    tide_table_init(&t);
    enum { NROW = 8 };
    const double fw[NROW] = {3.0, 3.1, 2.9, 3.05, 9.0, 3.0, 120.0, 0.4};
    const double snr[NROW] = {50, 50, 50, 50, 50, 10, 50, 50};
    const int32_t fl[NROW] = {0, 0, 0, 0, 0, 0, 0, 0};
    CHECK_OK(tide_table_add_column(&t, "FWHM", TIDE_COL_F64, 1, NULL, NULL, NULL));
    CHECK_OK(tide_table_add_column(&t, "SNR", TIDE_COL_F64, 1, NULL, NULL, NULL));
    CHECK_OK(tide_table_add_column(&t, "FLAGS", TIDE_COL_I32, 1, NULL, NULL, NULL));
    CHECK_OK(tide_table_resize(&t, NROW));
    memcpy(tide_table_f64(&t, "FWHM"), fw, sizeof fw);
    memcpy(tide_table_f64(&t, "SNR"), snr, sizeof snr);
    memcpy(tide_table_i32(&t, "FLAGS"), fl, sizeof fl);
    const tide_prep_fwhm_rule rr = TIDE_PREP_FWHM_REDUCE, dr = TIDE_PREP_FWHM_DIFF;
    int64_t nr = 0, nd = 0;
    /* reduce: 3.0 3.1 2.9 3.05 9.0 120 -> median 3.075; diff: 120 out, then 9.0 clipped */
    CHECK(tide_prep_fwhm(&t, &rr, &nr) == 0.5 * (3.05 + 3.1) && nr == 6);
    CHECK(tide_prep_fwhm(&t, &dr, &nd) == 0.5 * (3.0 + 3.05) && nd == 4);
    tide_table_free(&t);
}

int main(void) {
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    if (!ctx)
        return TIDE_TEST_RESULT();
    tide_image im;
    tide_header h;
    frame(&im, &h);
    pipelines(ctx, &im, &h);
    modes(ctx, &im);
    fwhm_rules();
    tide_image_free(ctx, &im);
    tide_header_free(&h);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
