/* test_detect.c — detection on synthetic frames (CPU): a grid of stars of known position and
 * S/N (completeness, centroid accuracy, fluxes, moments), pure noise (false detections), a
 * blended pair (deblending, flags), the deblend limit, a saturated star, NaN blocks, tiny and
 * strip-shaped frames, determinism and bad arguments. */
#include <stdint.h>

#include "common/detect_synth.h"
#include "tide/tide.h"
#include "tide_test.h"

static tide_ctx *cpu_ctx(void) {
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *ctx = NULL;
    if (tide_ctx_create(&ctx, &o))
        return NULL;
    return ctx;
}

/* A grid of isolated stars at S/N 10..200; every one found, centroids and fluxes right. */
static void test_grid(tide_ctx *ctx) {
    tide_image im, rms;
    const int64_t W = 400, H = 300;
    const double fwhm = 3.0, noise = 2.0;
    synth_frame(&im, &rms, W, H, noise, 11);
    enum { NX = 12, NY = 9 };
    double tx[NX * NY], ty[NX * NY], tf[NX * NY], ts[NX * NY];
    for (int j = 0; j < NY; j++)
        for (int i = 0; i < NX; i++) {
            int k = j * NX + i;
            tx[k] = 16.0 + 31.5 * i + 0.37 * synth_unif(5, (uint64_t)k);
            ty[k] = 15.0 + 32.3 * j + 0.41 * synth_unif(6, (uint64_t)k);
            ts[k] = 10.0 * pow(20.0, (double)k / (NX * NY - 1)); /* 10 .. 200 */
            tf[k] = synth_flux_for_snr(ts[k], fwhm, noise);
            synth_star(&im, tx[k], ty[k], tf[k], fwhm);
        }
    tide_detect_params p;
    tide_detect_params_default(&p);
    p.fwhm_guess = fwhm;
    tide_table t;
    tide_table_init(&t);
    tide_detect_maps maps;
    CHECK_OK(tide_detect_ex(ctx, &im, &rms, NULL, &p, &t, &maps));
    CHECK(maps.seg != NULL && maps.snr.pix != NULL);
    const double *snr = tide_table_f64(&t, "SNR"), *fl = tide_table_f64(&t, "FLUX_ISO");
    const double *xw = tide_table_f64(&t, "XWIN"), *yw = tide_table_f64(&t, "YWIN");
    const double *ex = tide_table_f64(&t, "ERRX_WIN"), *fw = tide_table_f64(&t, "FWHM");
    const double *a = tide_table_f64(&t, "A"), *b = tide_table_f64(&t, "B");
    const int32_t *flags = tide_table_i32(&t, "FLAGS");
    int found = 0, nbright = 0;
    double se2 = 0.0, pull2 = 0.0, snr_ratio = 0.0;
    for (int k = 0; k < NX * NY; k++) {
        int64_t r = synth_nearest(&t, tx[k], ty[k], 1.0);
        if (r < 0) {
            fprintf(stderr, "star %d at (%.2f, %.2f) S/N %.1f not found\n", k, tx[k], ty[k], ts[k]);
            continue;
        }
        found++;
        CHECK(flags[r] == 0);
        double dx = xw[r] - tx[k], dy = yw[r] - ty[k];
        pull2 += dx * dx / (ex[r] * ex[r]);
        snr_ratio += snr[r] / ts[k];
        if (ts[k] >= 50) {
            nbright++;
            se2 += dx * dx + dy * dy;
            CHECK(fabs(fw[r] - fwhm) < 0.1 * fwhm);
            CHECK(fabs(a[r] - b[r]) < 0.2 * a[r]);
            CHECK(fl[r] > 0.5 * tf[k] && fl[r] < 1.05 * tf[k]);
        }
    }
    double rms_c = sqrt(se2 / (2.0 * nbright));
    printf("grid: found %d / %d, rows %lld, XWIN rms (S/N >= 50) %.4f px = %.4f FWHM, "
           "pull rms %.3f, S/N ratio %.3f\n",
           found, NX * NY, (long long)t.nrows, rms_c, rms_c / fwhm, sqrt(pull2 / found),
           snr_ratio / found);
    CHECK(found == NX * NY);
    CHECK(t.nrows == NX * NY);
    CHECK(rms_c <= 0.05 * fwhm);
    CHECK(fabs(snr_ratio / found - 1.0) < 0.08);
    CHECK(sqrt(pull2 / found) > 0.6 && sqrt(pull2 / found) < 1.5);
    /* the segmentation map points at the rows */
    int64_t segok = 0;
    for (int64_t r = 0; r < t.nrows; r++) {
        int64_t xp = tide_table_i64(&t, "XPEAK")[r], yp = tide_table_i64(&t, "YPEAK")[r];
        segok += maps.seg[yp * W + xp] == r;
    }
    CHECK(segok == t.nrows);
    /* determinism: a second run is bitwise the same */
    tide_table t2;
    tide_table_init(&t2);
    CHECK_OK(tide_detect(ctx, &im, &rms, NULL, &p, &t2));
    CHECK(t2.nrows == t.nrows);
    if (t2.nrows == t.nrows && t.nrows > 0)
        CHECK(memcmp(tide_table_f64(&t, "XWIN"), tide_table_f64(&t2, "XWIN"),
                     sizeof(double) * (size_t)t.nrows) == 0);
    tide_table_free(&t2);
    tide_detect_maps_free(ctx, &maps);
    tide_table_free(&t);
    tide_image_free(NULL, &im);
    tide_image_free(NULL, &rms);
}

/* Pure noise: at most 1 false detection per 10^6 pixels at 5 sigma. */
static void test_noise(tide_ctx *ctx) {
    tide_image im, rms;
    const int64_t W = 1024, H = 1024;
    synth_frame(&im, &rms, W, H, 3.0, 99);
    tide_table t;
    tide_table_init(&t);
    CHECK_OK(tide_detect(ctx, &im, &rms, NULL, NULL, &t));
    printf("noise: %lld detections in %lld pixels at 5 sigma\n", (long long)t.nrows,
           (long long)(W * H));
    CHECK(t.nrows <= 1);
    tide_table_free(&t);
    /* an empty (all zero) frame: 0 rows, not an error, every column present */
    memset(im.pix, 0, sizeof(float) * (size_t)(W * H));
    tide_table_init(&t);
    CHECK_OK(tide_detect(ctx, &im, &rms, NULL, NULL, &t));
    CHECK(t.nrows == 0);
    CHECK(tide_table_f64(&t, "XWIN") != NULL && tide_table_i32(&t, "FLAGS") != NULL);
    tide_table_free(&t);
    tide_image_free(NULL, &im);
    tide_image_free(NULL, &rms);
}

/* Two stars 6.5 px apart (FWHM 3; the matched filter separates pairs from ~2 FWHM) are deblended;
 * with deblend_nthresh 0 they are one; with a limit of 1 the parent is kept and flagged. */
static void test_blend(tide_ctx *ctx) {
    tide_image im, rms;
    synth_frame(&im, &rms, 80, 60, 1.0, 7);
    const double f = synth_flux_for_snr(150, 3.0, 1.0);
    synth_star(&im, 35.2, 30.1, f, 3.0);
    synth_star(&im, 41.5, 31.7, 0.6 * f, 3.0); /* 6.5 px = 2.2 FWHM */
    tide_detect_params p;
    tide_detect_params_default(&p);
    tide_table t;
    tide_table_init(&t);
    CHECK_OK(tide_detect(ctx, &im, &rms, NULL, &p, &t));
    CHECK(t.nrows == 2);
    if (t.nrows == 2) {
        const int32_t *fl = tide_table_i32(&t, "FLAGS");
        CHECK((fl[0] & TIDE_DETECT_FLAG_DEBLENDED) && (fl[1] & TIDE_DETECT_FLAG_DEBLENDED));
        CHECK(synth_nearest(&t, 35.2, 30.1, 0.3) >= 0);
        CHECK(synth_nearest(&t, 41.5, 31.7, 0.3) >= 0);
        CHECK(tide_table_i64(&t, "PARENT")[0] == 0 && tide_table_i64(&t, "PARENT")[1] == 0);
    }
    tide_table_free(&t);
    p.deblend_nthresh = 0;
    tide_table_init(&t);
    CHECK_OK(tide_detect(ctx, &im, &rms, NULL, &p, &t));
    CHECK(t.nrows == 1);
    tide_table_free(&t);
    p.deblend_nthresh = 32;
    p.deblend_limit = 1;
    tide_table_init(&t);
    CHECK_OK(tide_detect(ctx, &im, &rms, NULL, &p, &t));
    CHECK(t.nrows == 1);
    if (t.nrows == 1)
        CHECK(tide_table_i32(&t, "FLAGS")[0] & TIDE_DETECT_FLAG_DEBLEND_LIMIT);
    tide_table_free(&t);
    tide_image_free(NULL, &im);
    tide_image_free(NULL, &rms);
}

/* A crowded patch: 40 stars in a 60x60 box all blended; the limit caps the split and flags. */
static void test_crowd_limit(tide_ctx *ctx) {
    tide_image im, rms;
    synth_frame(&im, &rms, 100, 100, 1.0, 8);
    for (int k = 0; k < 40; k++)
        synth_star(&im, 20 + 60 * synth_unif(1, (uint64_t)k), 20 + 60 * synth_unif(2, (uint64_t)k),
                   synth_flux_for_snr(60 + 200 * synth_unif(3, (uint64_t)k), 4.0, 1.0), 4.0);
    tide_detect_params p;
    tide_detect_params_default(&p);
    p.fwhm_guess = 4.0;
    tide_table t;
    tide_table_init(&t);
    CHECK_OK(tide_detect(ctx, &im, &rms, NULL, &p, &t));
    int64_t n_all = t.nrows;
    tide_table_free(&t);
    p.deblend_limit = 5;
    tide_table_init(&t);
    CHECK_OK(tide_detect(ctx, &im, &rms, NULL, &p, &t));
    int nlim = 0;
    for (int64_t i = 0; i < t.nrows; i++)
        nlim += (tide_table_i32(&t, "FLAGS")[i] & TIDE_DETECT_FLAG_DEBLEND_LIMIT) != 0;
    printf("crowd: %lld sources unlimited, %lld with limit 5 (%d flagged)\n", (long long)n_all,
           (long long)t.nrows, nlim);
    CHECK(n_all >= 20);
    CHECK(nlim >= 1);
    CHECK(t.nrows < n_all);
    tide_table_free(&t);
    tide_image_free(NULL, &im);
    tide_image_free(NULL, &rms);
}

/* One saturated star (flat-topped core with the SATURATED mask bit): one row, flag 4. */
static void test_saturated(tide_ctx *ctx) {
    tide_image im, rms;
    synth_frame(&im, &rms, 64, 64, 1.0, 9);
    synth_star(&im, 31.6, 32.2, 2e6, 3.0);
    int64_t nsat = 0;
    for (int64_t i = 0; i < 64 * 64; i++)
        if (im.pix[i] > 5e4f) {
            im.pix[i] = 5e4f;
            im.mask[i] |= TIDE_MASK_SATURATED;
            nsat++;
        }
    CHECK(nsat > 4);
    tide_table t;
    tide_table_init(&t);
    CHECK_OK(tide_detect(ctx, &im, &rms, NULL, NULL, &t));
    int64_t r = synth_nearest(&t, 31.6, 32.2, 1.0);
    CHECK(r >= 0);
    if (r >= 0)
        CHECK(tide_table_i32(&t, "FLAGS")[r] & TIDE_DETECT_FLAG_SATURATED);
    int64_t nsat_rows = 0;
    for (int64_t i = 0; i < t.nrows; i++)
        nsat_rows += (tide_table_i32(&t, "FLAGS")[i] & TIDE_DETECT_FLAG_SATURATED) != 0;
    printf("saturated: %lld rows, %lld flagged saturated\n", (long long)t.nrows,
           (long long)nsat_rows);
    CHECK(nsat_rows == 1);
    tide_table_free(&t);
    tide_image_free(NULL, &im);
    tide_image_free(NULL, &rms);
}

/* NaN blocks (mask NODATA): no error, nothing detected inside them, stars outside found; a
 * star touching a block is flagged. */
static void test_nan_blocks(tide_ctx *ctx) {
    tide_image im, rms;
    const int64_t W = 200, H = 160;
    synth_frame(&im, &rms, W, H, 1.0, 10);
    synth_star(&im, 50.3, 40.7, synth_flux_for_snr(80, 3, 1), 3.0);
    synth_star(&im, 150.3, 120.2, synth_flux_for_snr(80, 3, 1), 3.0);
    synth_star(&im, 101.0, 80.0, synth_flux_for_snr(80, 3, 1), 3.0); /* beside a block */
    for (int64_t y = 0; y < H; y++)
        for (int64_t x = 0; x < W; x++)
            if ((x / 25 + y / 25) % 3 == 0 && !(x >= 40 && x < 60 && y >= 30 && y < 50) &&
                !(x >= 140 && x < 160 && y >= 110 && y < 130) &&
                !(x >= 97 && x < 107 && y >= 75 && y < 85)) {
                im.pix[y * W + x] = NAN;
                im.mask[y * W + x] = TIDE_MASK_NODATA;
            }
    tide_table t;
    tide_table_init(&t);
    tide_detect_maps maps;
    CHECK_OK(tide_detect_ex(ctx, &im, &rms, NULL, NULL, &t, &maps));
    CHECK(synth_nearest(&t, 50.3, 40.7, 1.0) >= 0);
    CHECK(synth_nearest(&t, 150.3, 120.2, 1.0) >= 0);
    int64_t bad = 0;
    for (int64_t i = 0; i < W * H; i++)
        if (im.mask[i] & TIDE_MASK_NODATA)
            bad += maps.seg[i] >= 0 || !isnan(maps.snr.pix[i]);
    CHECK(bad == 0);
    printf("nan blocks: %lld rows\n", (long long)t.nrows);
    CHECK(t.nrows <= 5);
    for (int64_t i = 0; i < t.nrows; i++)
        CHECK(isfinite(tide_table_f64(&t, "XWIN")[i]));
    tide_detect_maps_free(ctx, &maps);
    tide_table_free(&t);
    tide_image_free(NULL, &im);
    tide_image_free(NULL, &rms);
}

/* Small and strip-shaped frames; stars at the very edge are flagged truncated. */
static void test_shapes(tide_ctx *ctx) {
    const int64_t sz[3][2] = {{64, 64}, {20000, 300}, {7, 5}};
    for (int s = 0; s < 3; s++) {
        int64_t W = sz[s][0], H = sz[s][1];
        tide_image im, rms;
        synth_frame(&im, &rms, W, H, 1.0, 20 + (uint64_t)s);
        int nst = 0;
        double xs[64], ys[64];
        if (W >= 64) {
            for (int64_t x = 20; x < W - 10 && nst < 60; x += W / 40 + 20) {
                xs[nst] = (double)x + 0.3;
                ys[nst] = 10.0 + (double)((nst * 17) % (H - 20));
                synth_star(&im, xs[nst], ys[nst], synth_flux_for_snr(40, 3, 1), 3.0);
                nst++;
            }
            synth_star(&im, 0.2, H / 2.0, synth_flux_for_snr(60, 3, 1), 3.0); /* at the edge */
        }
        tide_table t;
        tide_table_init(&t);
        CHECK_OK(tide_detect(ctx, &im, &rms, NULL, NULL, &t));
        int found = 0;
        for (int k = 0; k < nst; k++)
            found += synth_nearest(&t, xs[k], ys[k], 1.0) >= 0;
        CHECK(found == nst);
        if (W >= 64) {
            int64_t r = synth_nearest(&t, 0.2, H / 2.0, 1.5);
            CHECK(r >= 0);
            if (r >= 0)
                CHECK(tide_table_i32(&t, "FLAGS")[r] & TIDE_DETECT_FLAG_TRUNCATED);
        }
        printf("%lld x %lld: %d / %d stars, %lld rows\n", (long long)W, (long long)H, found, nst,
               (long long)t.nrows);
        tide_table_free(&t);
        tide_image_free(NULL, &im);
        tide_image_free(NULL, &rms);
    }
}

/* Mask bits in a footprint set the cosmic-ray and masked flags; a clean star has neither. */
static void test_mask_flags(tide_ctx *ctx) {
    tide_image im, rms;
    synth_frame(&im, &rms, 120, 60, 1.0, 12);
    const double f = synth_flux_for_snr(100, 3, 1);
    synth_star(&im, 20.2, 30.4, f, 3.0);
    synth_star(&im, 60.2, 30.4, f, 3.0);
    synth_star(&im, 100.2, 30.4, f, 3.0);
    im.mask[31 * 120 + 21] |= TIDE_MASK_COSMIC;
    im.mask[30 * 120 + 61] |= TIDE_MASK_BAD;
    tide_table t;
    tide_table_init(&t);
    CHECK_OK(tide_detect(ctx, &im, &rms, NULL, NULL, &t));
    int64_t a = synth_nearest(&t, 20.2, 30.4, 1.0), b = synth_nearest(&t, 60.2, 30.4, 1.0),
            c = synth_nearest(&t, 100.2, 30.4, 1.0);
    CHECK(a >= 0 && b >= 0 && c >= 0);
    if (a >= 0 && b >= 0 && c >= 0) {
        const int32_t *fl = tide_table_i32(&t, "FLAGS");
        CHECK(fl[a] & TIDE_DETECT_FLAG_COSMIC);
        CHECK(fl[a] & TIDE_DETECT_FLAG_APER_INCOMPLETE); /* excluded from the window */
        CHECK(fl[b] & TIDE_DETECT_FLAG_MASKED);
        CHECK(fl[c] == 0);
    }
    tide_table_free(&t);
    tide_image_free(NULL, &im);
    tide_image_free(NULL, &rms);
}

static void test_bad_args(tide_ctx *ctx) {
    tide_image im, rms;
    synth_frame(&im, &rms, 32, 32, 1.0, 1);
    tide_table t;
    tide_table_init(&t);
    tide_detect_params p;
    tide_detect_params_default(&p);
    p.thresh = 0;
    CHECK(tide_detect(ctx, &im, &rms, NULL, &p, &t) == TIDE_E_INVAL);
    tide_detect_params_default(&p);
    p.minarea = 0;
    CHECK(tide_detect(ctx, &im, &rms, NULL, &p, &t) == TIDE_E_INVAL);
    CHECK(tide_detect(ctx, &im, NULL, NULL, NULL, &t) == TIDE_E_INVAL);
    tide_image small;
    tide_image_alloc(NULL, &small, 16, 32, TIDE_HOST, 0);
    CHECK(tide_detect(ctx, &im, &small, NULL, NULL, &t) == TIDE_E_INVAL);
    CHECK(strstr(tide_error_detail(), "rms") != NULL);
    tide_image_free(NULL, &small);
    tide_table_free(&t);
    tide_image_free(NULL, &im);
    tide_image_free(NULL, &rms);
}

int main(void) {
    tide_ctx *ctx = cpu_ctx();
    CHECK(ctx != NULL);
    if (!ctx)
        return 1;
    test_grid(ctx);
    test_noise(ctx);
    test_blend(ctx);
    test_crowd_limit(ctx);
    test_saturated(ctx);
    test_nan_blocks(ctx);
    test_shapes(ctx);
    test_mask_flags(ctx);
    test_bad_args(ctx);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
