/* test_psfphot_model.c — PSF photometry through a tide_psf_model evaluates each source's
 * stamp inside the fit kernel (psfphot_math.h); on the CPU that must reproduce exactly what
 * the stamps of tide_psf_eval_pixel give through tide_psf_photometry_stamps. Scene: 301 × 203
 * frame, stars of a varying PSF model (3 basis images, degree-2 fields), noise, a mask hole and
 * NaNs; 517 positions, some near or off the edges, two non-finite. Criteria: flux, error, chi2
 * bitwise equal and flags equal, for 1 and 2 passes (gain), with and without background and
 * fit radius. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "common/test_rng.h"
#include "tide/tide.h"
#include "tide_test.h"

#define W 301
#define H 203
#define N 517
#define SIDE 17

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static double urand(void) {
    return trng_open(trng_xorshift64(&rng));
}

/* a 3-basis model: a Gaussian, and two anti-symmetric perturbations */
static void make_model(tide_psf_model *m) {
    memset(m, 0, sizeof *m);
    m->width = W;
    m->height = H;
    m->stamp = SIDE;
    m->nbasis = 3;
    m->degree = 2;
    m->ncoef = 6;
    m->basis = calloc((size_t)3 * SIDE * SIDE, sizeof(float));
    m->coef = calloc(3 * 6, sizeof(double));
    const int h = SIDE / 2;
    for (int j = 0; j < SIDE; j++)
        for (int i = 0; i < SIDE; i++) {
            const double dx = i - h, dy = j - h, r2 = dx * dx + dy * dy;
            m->basis[j * SIDE + i] = (float)exp(-r2 / (2 * 1.4 * 1.4));
            m->basis[SIDE * SIDE + j * SIDE + i] = (float)(dx * exp(-r2 / 8.0) * 0.05);
            m->basis[2 * SIDE * SIDE + j * SIDE + i] =
                (float)((dx * dx - dy * dy) * exp(-r2 / 6.0) * 0.02);
        }
    const double c[18] = {1,    0.02, -0.01, 0.005, 0.003, -0.004, 0.1, 0.3,  -0.2,
                          0.05, 0.0,  0.1,   -0.05, 0.1,   0.25,   0.0, -0.1, 0.07};
    memcpy(m->coef, c, sizeof c);
}

int main(void) {
    tide_ctx *ctx;
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    tide_psf_model m;
    make_model(&m);
    tide_image im;
    CHECK_OK(tide_image_alloc(ctx, &im, W, H, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR));
    static double x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = -4.0 + (W + 8.0) * urand();
        y[i] = -4.0 + (H + 8.0) * urand();
    }
    x[7] = NAN;
    y[11] = INFINITY;
    float *st = malloc(sizeof(float) * SIDE * SIDE);
    for (int64_t k = 0; k < (int64_t)W * H; k++) {
        im.pix[k] = (float)(8.0 * (urand() - 0.5));
        im.var[k] = (float)(16.0 + 4.0 * urand());
    }
    for (int i = 0; i < N; i += 3) { /* a third of them are stars */
        if (!isfinite(x[i]) || !isfinite(y[i]))
            continue;
        CHECK_OK(tide_psf_eval_pixel(&m, x[i], y[i], st));
        const int64_t i0 = (int64_t)floor(x[i] + 0.5) - SIDE / 2,
                      j0 = (int64_t)floor(y[i] + 0.5) - SIDE / 2;
        const double F = 200.0 + 5000.0 * urand();
        for (int v = 0; v < SIDE; v++)
            for (int u = 0; u < SIDE; u++)
                if (i0 + u >= 0 && i0 + u < W && j0 + v >= 0 && j0 + v < H)
                    im.pix[(j0 + v) * W + i0 + u] += (float)(F * st[v * SIDE + u]);
    }
    for (int j = 90; j < 96; j++)
        for (int i = 140; i < 150; i++)
            im.mask[j * W + i] = TIDE_MASK_COSMIC;
    im.pix[50 * W + 60] = NAN;
    /* the stamps the old path built on the host */
    float *stamps = calloc((size_t)N * SIDE * SIDE, sizeof(float));
    for (int i = 0; i < N; i++)
        if (isfinite(x[i]) && isfinite(y[i]))
            CHECK_OK(tide_psf_eval_pixel(&m, x[i], y[i], stamps + (size_t)i * SIDE * SIDE));
    static double fa[N], ea[N], ca[N], fb[N], eb[N], cb[N];
    static int32_t la[N], lb[N];
    for (int cfg = 0; cfg < 4; cfg++) {
        tide_psffit_params p;
        tide_psffit_params_default(&p);
        p.gain = cfg & 1 ? 1.5 : 0.0;
        p.fit_background = cfg >= 2;
        p.fit_radius = cfg == 3 ? 5.5 : 0.0;
        CHECK_OK(
            tide_psf_photometry_stamps(ctx, &im, NULL, N, x, y, SIDE, stamps, &p, fa, ea, ca, la));
        CHECK_OK(tide_psf_photometry_ex(ctx, &im, NULL, &m, N, x, y, &p, fb, eb, cb, lb));
        int bad = 0, nfail = 0;
        for (int i = 0; i < N; i++) {
            const int same =
                (memcmp(&fa[i], &fb[i], sizeof(double)) == 0 || (isnan(fa[i]) && isnan(fb[i]))) &&
                (memcmp(&ea[i], &eb[i], sizeof(double)) == 0 || (isnan(ea[i]) && isnan(eb[i]))) &&
                (memcmp(&ca[i], &cb[i], sizeof(double)) == 0 || (isnan(ca[i]) && isnan(cb[i]))) &&
                la[i] == lb[i];
            if (!same && bad++ < 5)
                fprintf(
                    stderr,
                    "cfg %d source %d: stamps %.17g %.17g %.17g %d, model %.17g %.17g %.17g %d\n",
                    cfg, i, fa[i], ea[i], ca[i], la[i], fb[i], eb[i], cb[i], lb[i]);
            nfail += (lb[i] & TIDE_PHOT_FIT_FAILED) != 0;
        }
        printf("config %d: %d of %d differ, %d fits failed\n", cfg, bad, N, nfail);
        CHECK(bad == 0);
        CHECK(nfail >= 2 && nfail < N / 4);
    }
    /* an invalid model is refused */
    {
        tide_psf_model bad = m;
        bad.ncoef = 5;
        double f, e;
        CHECK(tide_psf_photometry_ex(ctx, &im, NULL, &bad, 1, x, y, NULL, &f, &e, NULL, NULL) ==
              TIDE_E_INVAL);
    }
    free(st);
    free(stamps);
    tide_psf_free(&m);
    tide_image_free(ctx, &im);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
