/* test_gpu_psfphot.c — PSF photometry through a tide_psf_model on the CUDA backend (one
 * block per source evaluates the local stamp from the model and fits it) against the CPU
 * twin, which reproduces tide_psf_eval_pixel exactly (test_psfphot_model). Scene: 301 × 203
 * frame, a varying 3-basis degree-2 model, noise, a mask hole, a NaN; 517 positions, some near
 * or off the edges, two non-finite; also a 63-px stamp (the largest, shared-memory bound).
 * Criteria: flux and error within 1e-6 relative (block sums in another order), chi2 within
 * 1e-6 relative + 1e-9, flags identical, GPU bitwise identical run to run and between host and
 * device input images. Skipped (77) without a GPU. */
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

static int close_rel(const char *what, const double *a, const double *b, double rel, double fl) {
    int bad = 0;
    double worst = 0.0;
    for (int i = 0; i < N; i++) {
        if (isnan(a[i]) && isnan(b[i]))
            continue;
        const double d = fabs(a[i] - b[i]);
        if (!(d <= rel * fmax(fabs(a[i]), fabs(b[i])) + fl)) {
            if (bad++ < 5)
                fprintf(stderr, "%s[%d]: cpu %.15g gpu %.15g\n", what, i, a[i], b[i]);
        }
        if (fabs(a[i]) > 0 && d / fabs(a[i]) > worst)
            worst = d / fabs(a[i]);
    }
    printf("%-10s max rel diff %.3g, %d outside\n", what, worst, bad);
    return bad;
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no usable GPU");
    tide_ctx *cpu, *gpu;
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&cpu, &o));
    o.backend = TIDE_BACKEND_CUDA;
    CHECK_OK(tide_ctx_create(&gpu, &o));
    tide_psf_model m;
    make_model(&m);
    tide_image im, dim;
    CHECK_OK(tide_image_alloc(cpu, &im, W, H, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR));
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
    for (int i = 0; i < N; i += 3) {
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
    CHECK_OK(tide_image_clone(gpu, &dim, &im, TIDE_DEVICE));
    static double fa[N], ea[N], ca[N], fb[N], eb[N], cb[N], fc[N], ec[N], cc[N];
    static int32_t la[N], lb[N], lc[N];
    for (int cfg = 0; cfg < 5; cfg++) {
        tide_psffit_params p;
        tide_psffit_params_default(&p);
        p.gain = cfg & 1 ? 1.5 : 0.0;
        p.fit_background = cfg >= 2;
        p.fit_radius = cfg == 3 ? 5.5 : 0.0;
        tide_psf_model mm = m;
        if (cfg == 4) { /* the largest stamp: basis images padded with zeros to 63 px */
            const int S = TIDE_PSF_MAX_STAMP, o2 = (S - SIDE) / 2;
            mm.stamp = S;
            mm.basis = calloc((size_t)3 * S * S, sizeof(float));
            for (int b = 0; b < 3; b++)
                for (int j = 0; j < SIDE; j++)
                    for (int i = 0; i < SIDE; i++)
                        mm.basis[(size_t)b * S * S + (j + o2) * S + i + o2] =
                            m.basis[(size_t)b * SIDE * SIDE + j * SIDE + i];
        }
        CHECK_OK(tide_psf_photometry_ex(cpu, &im, NULL, &mm, N, x, y, &p, fa, ea, ca, la));
        CHECK_OK(tide_psf_photometry_ex(gpu, &dim, NULL, &mm, N, x, y, &p, fb, eb, cb, lb));
        printf("config %d:\n", cfg);
        CHECK(close_rel("flux", fa, fb, 1e-6, 0.0) == 0);
        CHECK(close_rel("fluxerr", ea, eb, 1e-6, 0.0) == 0);
        CHECK(close_rel("chi2", ca, cb, 1e-6, 1e-9) == 0);
        int fbad = 0;
        for (int i = 0; i < N; i++)
            fbad += la[i] != lb[i];
        CHECK(fbad == 0);
        /* run to run, and a host input image, give the same bits */
        CHECK_OK(tide_psf_photometry_ex(gpu, &im, NULL, &mm, N, x, y, &p, fc, ec, cc, lc));
        CHECK(memcmp(fb, fc, sizeof fb) == 0 && memcmp(eb, ec, sizeof eb) == 0 &&
              memcmp(cb, cc, sizeof cb) == 0 && memcmp(lb, lc, sizeof lb) == 0);
        if (cfg == 4)
            free(mm.basis);
    }
    free(st);
    tide_psf_free(&m);
    tide_image_free(gpu, &dim);
    tide_image_free(cpu, &im);
    tide_ctx_destroy(gpu);
    tide_ctx_destroy(cpu);
    return TIDE_TEST_RESULT();
}
