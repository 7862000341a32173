/* test_rb.c — the real/bogus features on constructed stamps (a PSF-like point source, a hot
 * pixel, a dipole, a column trail, masked and off-image pixels), the AUC against a count of
 * every real/bogus pair, and the model: trained on separable rows, saved, loaded, the same
 * scores, a model of another feature version refused, and the satellite trails of tide sim
 * (truth rows; the frame bit for bit the same without them). */
#include "tide/rb.h"
#include "tide_test.h"

#define SIDE 21
#define H (SIDE / 2)

static float pix[SIDE * SIDE], var[SIDE * SIDE];
static uint16_t msk[SIDE * SIDE];

/* A deterministic Gaussian deviate (Box–Muller on a fixed LCG). */
static double gauss_noise(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = ((*s >> 11) + 0.5) / 9007199254740992.0;
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    const double v = ((*s >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* Unit-variance noise plus @p a times a Gaussian of FWHM @p fwhm at (x, y) from the centre. */
static void stamp(double a, double fwhm, double x, double y, uint64_t seed) {
    const double s = fwhm / 2.3548;
    for (int j = 0; j < SIDE; j++)
        for (int i = 0; i < SIDE; i++) {
            const double dx = i - H - x, dy = j - H - y;
            pix[j * SIDE + i] =
                (float)(a * exp(-0.5 * (dx * dx + dy * dy) / (s * s)) + 0.3 * gauss_noise(&seed));
            var[j * SIDE + i] = 0.09f;
            msk[j * SIDE + i] = 0;
        }
}

static void features_at(double fwhm, double flux, int kind, double dx, double dy, float *f) {
    tide_rb_candidate c;
    memset(&c, 0, sizeof c);
    c.side = SIDE;
    c.pix = pix;
    c.var = var;
    c.mask = msk;
    c.fwhm = fwhm;
    c.dx = dx;
    c.dy = dy;
    c.snr = 20;
    c.flux = flux;
    c.kind = kind;
    c.dip_chi2 = c.ps_chi2 = c.npix = NAN;
    c.lobe_dx = c.lobe_dy = c.ps_dx = c.ps_dy = c.ps_flux = c.ps_flux_err = NAN;
    c.fit_status = c.ps_status = -1;
    c.star_dist = NAN;
    tide_rb_features(&c, f);
}

static void features(double fwhm, double flux, int kind, float *f) {
    features_at(fwhm, flux, kind, 0, 0, f);
}

static int feature_index(const char *name) {
    for (int i = 0; i < TIDE_RB_NFEAT; i++)
        if (!strcmp(tide_rb_feature_name(i), name))
            return i;
    return -1;
}
#define F(name) f[feature_index(name)]

static void test_features(void) {
    float f[TIDE_RB_NFEAT];
    CHECK(tide_rb_feature_name(TIDE_RB_NFEAT) == NULL && tide_rb_feature_name(-1) == NULL);
    /* a PSF-like point source: moments of the PSF's size, round, one-signed, not sharp */
    stamp(10, 4.0, 0, 0, 1);
    features(4.0, 100, TIDE_CAND_POSITIVE, f);
    CHECK(F("FWHM_RATIO") > 0.7 && F("FWHM_RATIO") < 1.1);
    CHECK(F("ELLIP") < 0.15);
    CHECK(F("NEG_FRAC") == 0 && F("LOBE_RATIO") < 0.05);
    CHECK(F("SHARPNESS") < 0.1);
    CHECK(F("MASK_FRAC") == 0 && F("BAD_FRAC") == 0);
    CHECK(isnan(F("STAR_DIST")) && isnan(F("DCHI2_RED")));
    const float psf_sharp = F("SHARPNESS");
    /* a hot pixel: far sharper than the PSF */
    stamp(0, 4.0, 0, 0, 2);
    pix[H * SIDE + H] = 20;
    features(4.0, 20, TIDE_CAND_POSITIVE, f);
    CHECK(F("FWHM_RATIO") < 0.35);
    CHECK(F("SHARPNESS") > 0.5 && F("SHARPNESS") > 5 * psf_sharp);
    /* a dipole: both signs, balanced */
    stamp(10, 4.0, 2, 0, 3);
    for (int j = 0; j < SIDE; j++)
        for (int i = 0; i < SIDE; i++) {
            const double dx = i - H + 2, dy = j - H;
            pix[j * SIDE + i] -= (float)(10 * exp(-0.5 * (dx * dx + dy * dy) / (1.7 * 1.7)));
        }
    features(4.0, 1, TIDE_CAND_DIPOLE, f);
    CHECK(F("LOBE_RATIO") > 0.7);
    CHECK(F("NEG_FRAC") > 0.1);
    /* a negative source reads as a positive one: the sign comes from FLUX */
    stamp(-10, 4.0, 0, 0, 1);
    features(4.0, -100, TIDE_CAND_NEGATIVE, f);
    CHECK(F("FWHM_RATIO") > 0.7 && F("NEG_FRAC") == 0);
    /* a bleed trail: a bright column, elongated along it */
    stamp(0, 4.0, 0, 0, 4);
    for (int j = 0; j < SIDE; j++)
        pix[j * SIDE + H] = 8;
    features(4.0, 100, TIDE_CAND_POSITIVE, f);
    CHECK(F("COL_ROW") > 5);
    CHECK(F("ELLIP") > 0.6);
    /* masked and off-image pixels */
    stamp(10, 4.0, 0, 0, 5);
    for (int k = 0; k < SIDE * 3; k++)
        msk[k] = 1;
    for (int k = SIDE * SIDE - SIDE; k < SIDE * SIDE; k++)
        pix[k] = NAN;
    features(4.0, 100, TIDE_CAND_POSITIVE, f);
    CHECK_CLOSE(F("MASK_FRAC"), 3.0 / SIDE, 1e-6);
    CHECK_CLOSE(F("BAD_FRAC"), 1.0 / SIDE, 1e-6);
    /* no variance: the stamp's own scatter, so z is still ~ S/N */
    stamp(10, 4.0, 0, 0, 1);
    tide_rb_candidate c;
    memset(&c, 0, sizeof c);
    c.side = SIDE;
    c.pix = pix;
    c.fwhm = 4;
    c.flux = 1;
    c.star_dist = 6;
    tide_rb_features(&c, f);
    CHECK(F("FWHM_RATIO") > 0.7 && F("FWHM_RATIO") < 1.1);
    CHECK_CLOSE(F("STAR_DIST"), 1.5, 1e-6);
}

/* A candidate table of one row on a constructed difference, against the one-stamp call. */
static void test_table(void) {
    tide_image im;
    memset(&im, 0, sizeof im);
    CHECK_OK(tide_image_alloc(NULL, &im, 64, 48, TIDE_HOST, TIDE_IMAGE_VAR | TIDE_IMAGE_MASK));
    stamp(10, 3.0, 0.3, -0.2, 7);
    for (int64_t k = 0; k < 64 * 48; k++)
        im.var[k] = 0.09f;
    for (int j = 0; j < SIDE; j++)
        for (int i = 0; i < SIDE; i++)
            im.pix[(20 - H + j) * 64 + 30 - H + i] = pix[j * SIDE + i];
    tide_table t;
    tide_table_init(&t);
    const char *cols[] = {"X_IMAGE", "Y_IMAGE", "SNR", "FLUX"};
    for (int k = 0; k < 4; k++)
        CHECK_OK(tide_table_add_column(&t, cols[k], TIDE_COL_F64, 1, NULL, NULL, NULL));
    float f[TIDE_RB_NFEAT], g[TIDE_RB_NFEAT];
    CHECK_OK(tide_table_resize(&t, 1));
    /* KIND is required: the error names it */
    CHECK(tide_rb_table_features(&im, &t, 3.0, NULL, 0, f) == TIDE_E_INVAL);
    CHECK(strstr(tide_error_detail(), "KIND") != NULL);
    CHECK_OK(tide_table_add_column(&t, "KIND", TIDE_COL_I32, 1, NULL, NULL, NULL));
    tide_table_f64(&t, "X_IMAGE")[0] = 31.3; /* FITS 1-based: pixel 30 + 0.3 */
    tide_table_f64(&t, "Y_IMAGE")[0] = 20.8;
    tide_table_f64(&t, "SNR")[0] = 20;
    tide_table_f64(&t, "FLUX")[0] = 100;
    tide_table_i32(&t, "KIND")[0] = 1;
    const double star[2] = {31.3 + 6, 20.8};
    CHECK_OK(tide_rb_table_features(&im, &t, 3.0, star, 1, f));
    features_at(3.0, 100, TIDE_CAND_POSITIVE, 0.3, -0.2, g);
    for (int i = 10; i < 16; i++) /* the stamp features: the same pixels and centre */
        CHECK_CLOSE(f[i], g[i], 1e-6);
    CHECK_CLOSE(f[feature_index("STAR_DIST")], 2.0, 1e-6);
    /* many stars, in no order: the nearest, as a brute-force search finds it */
    double many[2 * 200], best = INFINITY;
    uint64_t sd = 5;
    for (int k = 0; k < 200; k++) {
        many[2 * k] = 1 + 63 * (0.5 + 0.2 * gauss_noise(&sd));
        many[2 * k + 1] = 1 + 47 * (0.5 + 0.2 * gauss_noise(&sd));
        best = fmin(best, hypot(many[2 * k] - 31.3, many[2 * k + 1] - 20.8));
    }
    CHECK_OK(tide_rb_table_features(&im, &t, 3.0, many, 200, f));
    CHECK_CLOSE(f[feature_index("STAR_DIST")], best / 3.0, 1e-6);
    CHECK_CLOSE(f[feature_index("MASK_FRAC")], 0, 0);
    tide_table_free(&t);
    tide_image_free(NULL, &im);
}

static void test_auc(void) {
    const float s1[] = {0.9f, 0.8f, 0.7f, 0.1f}, y1[] = {1, 1, 0, 0};
    CHECK_CLOSE(tide_rb_auc(s1, y1, 4, NULL, NULL, NULL), 1.0, 1e-12);
    const float y2[] = {0, 0, 1, 1};
    CHECK_CLOSE(tide_rb_auc(s1, y2, 4, NULL, NULL, NULL), 0.0, 1e-12);
    const float s3[] = {0.5f, 0.5f, 0.5f, 0.5f};
    CHECK_CLOSE(tide_rb_auc(s3, y1, 4, NULL, NULL, NULL), 0.5, 1e-12);
    CHECK(isnan(tide_rb_auc(s1, s3, 4, NULL, NULL, NULL))); /* one class */
    /* random scores with ties: the fraction of (real, bogus) pairs ordered right, ties half */
    enum { N = 500 };
    float s[N], y[N];
    uint64_t seed = 9;
    for (int i = 0; i < N; i++) {
        y[i] = gauss_noise(&seed) > 0.3;
        s[i] = (float)(floor(4 * (gauss_noise(&seed) + y[i])) / 4);
    }
    double good = 0, pairs = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            if (y[i] > 0.5f && y[j] < 0.5f) {
                pairs++;
                good += s[i] > s[j] ? 1 : s[i] == s[j] ? 0.5 : 0;
            }
    double fpr[N + 1], tpr[N + 1];
    int64_t np = 0;
    CHECK_CLOSE(tide_rb_auc(s, y, N, fpr, tpr, &np), good / pairs, 1e-12);
    CHECK(np >= 2 && fpr[0] == 0 && tpr[0] == 0 && fpr[np - 1] == 1 && tpr[np - 1] == 1);
}

static void test_model(void) {
    enum { N = 400 };
    float *x = calloc((size_t)N * TIDE_RB_NFEAT, sizeof *x), y[N], s[N], s2[N];
    uint64_t seed = 11;
    for (int i = 0; i < N; i++) {
        y[i] = (float)(i % 2);
        for (int k = 0; k < TIDE_RB_NFEAT; k++)
            x[i * TIDE_RB_NFEAT + k] = (float)gauss_noise(&seed);
        x[i * TIDE_RB_NFEAT + 10] += 3 * y[i]; /* FWHM_RATIO separates the classes */
        if (i % 7 == 0)
            x[i * TIDE_RB_NFEAT + 17] = NAN; /* missing values are allowed */
    }
    tide_rb_train_params p;
    tide_rb_train_params_default(&p);
    p.rounds = 30;
    tide_rb_model *m = NULL;
    const int st = tide_rb_train(x, y, N, &p, &m);
    if (st == TIDE_E_UNSUPPORTED) {
        printf("no libxgboost: model part skipped (%s)\n", tide_error_detail());
        free(x);
        return;
    }
    CHECK_OK(st);
    CHECK(tide_rb_train(x, y, 1, &p, &(tide_rb_model *){NULL}) == TIDE_E_INVAL);
    CHECK_OK(tide_rb_predict(m, x, N, 1, s));
    CHECK(tide_rb_auc(s, y, N, NULL, NULL, NULL) > 0.99);
    double gain[TIDE_RB_NFEAT];
    CHECK_OK(tide_rb_model_importance(m, gain));
    for (int k = 0; k < TIDE_RB_NFEAT; k++)
        CHECK(k == 10 || gain[k] < gain[10]);
    CHECK_OK(tide_rb_model_set(m, "training_set", "test rows"));
    const char *path = "test_rb_model.json";
    CHECK_OK(tide_rb_model_save(m, path));
    tide_rb_model *m2 = NULL;
    CHECK_OK(tide_rb_model_load(path, &m2));
    if (m2) {
        CHECK_OK(tide_rb_predict(m2, x, N, 2, s2));
        int same = 1;
        for (int i = 0; i < N; i++)
            same &= s[i] == s2[i];
        CHECK(same);
        CHECK(tide_rb_model_get(m2, "training_set") &&
              !strcmp(tide_rb_model_get(m2, "training_set"), "test rows"));
        CHECK(tide_rb_model_get(m2, "features") &&
              !strncmp(tide_rb_model_get(m2, "features"), "SNR,KIND,", 9));
    }
    /* a model of another feature version is refused, naming the file */
    CHECK_OK(tide_rb_model_set(m, "tide_rb_version", "999"));
    CHECK_OK(tide_rb_model_save(m, path));
    tide_rb_model *m3 = NULL;
    CHECK(tide_rb_model_load(path, &m3) == TIDE_E_FORMAT && m3 == NULL);
    CHECK(strstr(tide_error_detail(), path) != NULL);
    FILE *f = fopen(path, "w");
    fputs("{\"not\": \"a model\"}", f);
    fclose(f);
    CHECK(tide_rb_model_load(path, &m3) == TIDE_E_FORMAT);
    remove(path);
    tide_rb_model_free(m);
    tide_rb_model_free(m2);
    free(x);
}

static void test_sim_trails(void) {
    tide_sim_params p;
    tide_sim_params_default(&p);
    p.width = p.height = 256;
    p.nstars = 60;
    p.ngalaxies = 5;
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 1);
    tide_sim_sky *a = NULL, *b = NULL;
    tide_sim_frame fa, fb, fa1, fb1;
    CHECK_OK(tide_sim_sky_make(ctx, &p, &a));
    p.e2_nsatellite = 2;
    CHECK_OK(tide_sim_sky_make(ctx, &p, &b));
    CHECK_OK(tide_sim_epoch(ctx, a, 2, &fa));
    CHECK_OK(tide_sim_epoch(ctx, b, 2, &fb));
    CHECK_OK(tide_sim_epoch(ctx, a, 1, &fa1));
    CHECK_OK(tide_sim_epoch(ctx, b, 1, &fb1));
    /* epoch 1 is the same with trails asked for: they are epoch 2's */
    CHECK(!memcmp(fa1.image.pix, fb1.image.pix, 256 * 256 * sizeof(float)));
    CHECK(fb.truth.nrows == fa.truth.nrows + 2);
    int64_t nsat = 0, ndiff = 0;
    const tide_column *tid = tide_table_column(&fb.truth, "TYPE_ID");
    for (int64_t i = 0; i < fb.truth.nrows; i++)
        if (((int16_t *)tid->data)[i] == TIDE_SIM_SATELLITE) {
            nsat++;
            CHECK(tide_table_f32(&fb.truth, "RE")[i] > 0);
            CHECK(!strncmp((char *)tide_table_column(&fb.truth, "TYPE")->data + i * 10, "satellite",
                           9));
        }
    CHECK(nsat == 2);
    for (int64_t k = 0; k < 256 * 256; k++)
        ndiff += fa.image.pix[k] != fb.image.pix[k];
    CHECK(ndiff > 200); /* the trails' pixels */
    CHECK(!strcmp(tide_sim_type_name(TIDE_SIM_SATELLITE), "satellite"));
    tide_sim_frame_free(ctx, &fa);
    tide_sim_frame_free(ctx, &fb);
    tide_sim_frame_free(ctx, &fa1);
    tide_sim_frame_free(ctx, &fb1);
    tide_sim_sky_free(a);
    tide_sim_sky_free(b);
    tide_ctx_destroy(ctx);
}

int main(void) {
    test_features();
    test_table();
    test_auc();
    test_model();
    test_sim_trails();
    return TIDE_TEST_RESULT();
}
