/* test_gpu_psf.c — the PSF stage's CUDA kernels against their CPU twins, and the whole build
 * on both backends. Kernels: measurements (centroid, flux, S/N, size) and rejection bits
 * identical in kind and equal to 1e-8 relative; recentred stamps equal to 1e-5 of their peak;
 * at awkward sizes (1 star, a prime count, stamps 5, 19 and 63 pixels, with and without a
 * noise map, NaN / edge / masked / saturated candidates). Whole build: the same stars, the
 * model evaluated to 1e-4 of its peak, FWHMs to 1e-4 relative, host or device images, and a
 * second CUDA build bitwise equal to the first. Skipped without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tide/tide.h"
#include "tide_test.h"

#ifndef TIDE_HAVE_CUDA
int main(void) {
    (void)tide_test_failures;
    TIDE_TEST_SKIP("this build has no CUDA backend");
}
#else
#include "reduction/psf/psf_kernels.h"

typedef struct frame {
    tide_sim_frame f;
    tide_image sub, rms;
    int64_t n;
    double *x, *y, *flux;
} frame;

static void make_frame(tide_ctx *ctx, frame *fr, int64_t w, int64_t h, int64_t nstars) {
    memset(fr, 0, sizeof *fr);
    tide_sim_params p;
    tide_sim_params_default(&p);
    p.width = w;
    p.height = h;
    p.nstars = nstars;
    p.ngalaxies = nstars / 20;
    p.sky_grad = p.sky_quad = 0.0;
    p.with_mask = 1;
    p.seed = 23;
    CHECK_OK(tide_sim_run(ctx, &p, &fr->f, NULL));
    CHECK_OK(tide_image_alloc(ctx, &fr->sub, w, h, TIDE_HOST, TIDE_IMAGE_MASK));
    CHECK_OK(tide_image_alloc(ctx, &fr->rms, w, h, TIDE_HOST, 0));
    const double sig = sqrt(p.sky * p.gain + p.rdnoise * p.rdnoise) / p.gain;
    for (int64_t k = 0; k < w * h; k++) {
        fr->sub.pix[k] = (float)(fr->f.image.pix[k] - p.bias - p.sky);
        fr->sub.mask[k] = fr->f.image.mask[k];
        fr->rms.pix[k] = (float)(sig * (1.0 + 0.1 * (double)(k % 7) / 7.0));
    }
    const tide_table *t = &fr->f.truth;
    const double *X = tide_table_f64(t, "X_TRUE"), *Y = tide_table_f64(t, "Y_TRUE");
    const double *F = tide_table_f64(t, "FLUX");
    fr->n = t->nrows + 3;
    fr->x = malloc(sizeof(double) * (size_t)fr->n * 3);
    fr->y = fr->x + fr->n;
    fr->flux = fr->y + fr->n;
    for (int64_t i = 0; i < t->nrows; i++) { /* deterministic sub-pixel offsets */
        fr->x[i] = X[i] - 1.0 + 0.37 * sin(1.7 * (double)i);
        fr->y[i] = Y[i] - 1.0 + 0.29 * cos(2.3 * (double)i);
        fr->flux[i] = F[i];
    }
    const int64_t k = t->nrows; /* awkward candidates: NaN, off the edge, far outside */
    fr->x[k] = NAN, fr->y[k] = 50.0, fr->flux[k] = 1e4;
    fr->x[k + 1] = 2.0, fr->y[k + 1] = 3.0, fr->flux[k + 1] = 1e4;
    fr->x[k + 2] = -1e6, fr->y[k + 2] = 1e9, fr->flux[k + 2] = 1e4;
}

static void free_frame(tide_ctx *ctx, frame *fr) {
    tide_image_free(ctx, &fr->sub);
    tide_image_free(ctx, &fr->rms);
    tide_sim_frame_free(ctx, &fr->f);
    free(fr->x);
}

static void *dev_copy(tide_ctx *g, const void *h, size_t bytes) {
    void *d = NULL;
    CHECK_OK(tide_device_alloc(g, bytes ? bytes : 8, &d));
    if (bytes)
        CHECK_OK(tide_memcpy(g, d, 1, h, 0, bytes));
    return d;
}

/* Kernels on the first n candidates with stamp half-side h, with or without the rms map. */
static void compare_kernels(tide_ctx *c, tide_ctx *g, const frame *fr, const tide_image *dsub,
                            const tide_image *drms, int64_t n, int h, int use_rms,
                            double saturation) {
    psf_kparams kp;
    memset(&kp, 0, sizeof kp);
    const double fwhm = 3.0, sig = fwhm / 2.3548200450309493;
    kp.half = h;
    kp.cwin = (int)ceil(3 * sig) + 2 < h ? (int)ceil(3 * sig) + 2 : h;
    kp.inv2s2 = 1.0 / (2 * sig * sig);
    kp.max_shift = fwhm;
    kp.ap_r2 = 2.25 * fwhm * fwhm;
    kp.saturation = saturation;
    kp.snr_floor = n > 100 ? 10.0 : 0.0;
    kp.mask_bits = 0xFFFF & ~TIDE_MASK_INTERP;
    double *mc = malloc(sizeof(double) * (size_t)n * PSF_NMEAS * 2), *mg = mc + n * PSF_NMEAS;
    int32_t *fc = malloc(sizeof(int32_t) * (size_t)n * 2), *fg = fc + n;
    CHECK_OK(psf_measure_cpu(c, &fr->sub, use_rms ? &fr->rms : NULL, &kp, n, fr->x, fr->y, mc, fc));
    double *dx = dev_copy(g, fr->x, sizeof(double) * (size_t)n);
    double *dy = dev_copy(g, fr->y, sizeof(double) * (size_t)n);
    void *dm = NULL, *df = NULL;
    CHECK_OK(tide_device_alloc(g, sizeof(double) * (size_t)n * PSF_NMEAS, &dm));
    CHECK_OK(tide_device_alloc(g, sizeof(int32_t) * (size_t)n, &df));
    CHECK_OK(psf_measure_cuda(g, dsub, use_rms ? drms : NULL, &kp, n, dx, dy, dm, df));
    CHECK_OK(tide_memcpy(g, mg, 0, dm, 1, sizeof(double) * (size_t)n * PSF_NMEAS));
    CHECK_OK(tide_memcpy(g, fg, 0, df, 1, sizeof(int32_t) * (size_t)n));
    int64_t nflag = 0, ngood = 0;
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (fc[i] != fg[i]) {
            fprintf(stderr, "star %lld: flags cpu %d cuda %d\n", (long long)i, fc[i], fg[i]);
            nflag++;
            continue;
        }
        ngood += fc[i] == 0;
        for (int k = 0; k < PSF_NMEAS; k++) {
            const double a = mc[i * PSF_NMEAS + k], b = mg[i * PSF_NMEAS + k];
            const double d = fabs(a - b) / fmax(1.0, fabs(a));
            if (d > worst)
                worst = d;
        }
    }
    printf("measure n=%lld h=%d rms=%d sat=%g: %lld usable, flag mismatches %lld, worst rel "
           "%.3g\n",
           (long long)n, h, use_rms, saturation, (long long)ngood, (long long)nflag, worst);
    CHECK(nflag == 0);
    CHECK(worst < 1e-8);

    /* stamps of the stars both backends found usable (or all of the first ones when n is
     * tiny and none is) */
    int64_t m = 0;
    double *xs = malloc(sizeof(double) * (size_t)(n + 1) * 2), *ys = xs + n + 1;
    for (int64_t i = 0; i < n; i++)
        if (fc[i] == 0) {
            xs[m] = mc[i * PSF_NMEAS + PSF_M_XC];
            ys[m] = mc[i * PSF_NMEAS + PSF_M_YC];
            m++;
        }
    if (m > 0) {
        const int side = 2 * h + 1, npix = side * side;
        float *sc = malloc(sizeof(float) * (size_t)m * npix * 2), *sg = sc + m * npix;
        double *uc = malloc(sizeof(double) * (size_t)m * 2), *ug = uc + m;
        CHECK_OK(psf_extract_cpu(c, &fr->sub, &kp, m, xs, ys, sc, uc));
        double *dxs = dev_copy(g, xs, sizeof(double) * (size_t)m);
        double *dys = dev_copy(g, ys, sizeof(double) * (size_t)m);
        void *ds = NULL, *du = NULL;
        CHECK_OK(tide_device_alloc(g, sizeof(float) * (size_t)m * npix, &ds));
        CHECK_OK(tide_device_alloc(g, sizeof(double) * (size_t)m, &du));
        CHECK_OK(psf_extract_cuda(g, dsub, &kp, m, dxs, dys, ds, du));
        CHECK_OK(tide_memcpy(g, sg, 0, ds, 1, sizeof(float) * (size_t)m * npix));
        CHECK_OK(tide_memcpy(g, ug, 0, du, 1, sizeof(double) * (size_t)m));
        double ws = 0.0, wu = 0.0;
        for (int64_t s = 0; s < m; s++) {
            float pk = 0.0f;
            for (int k = 0; k < npix; k++)
                pk = fmaxf(pk, fabsf(sc[s * npix + k]));
            for (int k = 0; k < npix; k++)
                ws = fmax(ws, fabs(sc[s * npix + k] - sg[s * npix + k]) / (pk > 0 ? pk : 1.0f));
            wu = fmax(wu, fabs(uc[s] - ug[s]) / fmax(1.0, fabs(uc[s])));
        }
        printf("  extract %lld stamps of %d: worst |cpu - cuda| / peak %.3g, sums %.3g\n",
               (long long)m, side, ws, wu);
        CHECK(ws <= 1e-5);
        CHECK(wu <= 1e-9);
        tide_device_free(g, dxs), tide_device_free(g, dys), tide_device_free(g, ds);
        tide_device_free(g, du);
        free(sc), free(uc);
    }
    tide_device_free(g, dx), tide_device_free(g, dy), tide_device_free(g, dm);
    tide_device_free(g, df);
    free(mc), free(fc), free(xs);
}

static void compare_models(const tide_psf_model *a, const tide_psf_model *b, double tol,
                           const char *what) {
    CHECK(a->nstars == b->nstars && a->nbasis == b->nbasis && a->stamp == b->stamp &&
          a->gaussian_fallback == b->gaussian_fallback);
    if (a->stamp != b->stamp)
        return;
    const int npix = a->stamp * a->stamp;
    float *sa = malloc(sizeof(float) * (size_t)npix * 2), *sb = sa + npix;
    double worst = 0.0;
    const double pos[5][2] = {{0, 0},
                              {a->width - 1.0, 0},
                              {0, a->height - 1.0},
                              {a->width - 1.0, a->height - 1.0},
                              {0.3 * a->width, 0.6 * a->height}};
    for (int k = 0; k < 5; k++) {
        CHECK_OK(tide_psf_eval(a, pos[k][0], pos[k][1], sa));
        CHECK_OK(tide_psf_eval(b, pos[k][0], pos[k][1], sb));
        float pk = 0.0f;
        for (int i = 0; i < npix; i++)
            pk = fmaxf(pk, sa[i]);
        for (int i = 0; i < npix; i++)
            worst = fmax(worst, fabs(sa[i] - sb[i]) / pk);
    }
    printf("model %s: %d stars, eval worst %.3g, FWHM %.6f vs %.6f\n", what, a->nstars, worst,
           a->fwhm, b->fwhm);
    CHECK(worst <= tol);
    CHECK(fabs(a->fwhm / b->fwhm - 1.0) <= tol);
    for (int c = 0; c < 4; c++)
        CHECK(fabs(a->fwhm_corner[c] / b->fwhm_corner[c] - 1.0) <= tol);
    free(sa);
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no GPU");
    tide_ctx *c = tide_test_ctx(TIDE_BACKEND_CPU, 0), *g = tide_test_ctx(TIDE_BACKEND_CUDA, 0);
    frame fr;
    make_frame(c, &fr, 1031, 777, 900);
    tide_image dsub, drms;
    CHECK_OK(tide_image_clone(g, &dsub, &fr.sub, TIDE_DEVICE));
    CHECK_OK(tide_image_clone(g, &drms, &fr.rms, TIDE_DEVICE));

    /* the awkward candidates last: move them to the front so small n sees them */
    const int64_t n = fr.n;
    for (int k = 0; k < 3; k++) {
        double t = fr.x[k];
        fr.x[k] = fr.x[n - 3 + k], fr.x[n - 3 + k] = t;
        t = fr.y[k];
        fr.y[k] = fr.y[n - 3 + k], fr.y[n - 3 + k] = t;
    }
    compare_kernels(c, g, &fr, &dsub, &drms, 1, 9, 1, 0.0);
    compare_kernels(c, g, &fr, &dsub, &drms, 4, 2, 1, 0.0);
    compare_kernels(c, g, &fr, &dsub, &drms, 97, 9, 1, 0.0);
    compare_kernels(c, g, &fr, &dsub, &drms, n, 9, 0, 0.0);
    compare_kernels(c, g, &fr, &dsub, &drms, n, 31, 1, 0.0);
    compare_kernels(c, g, &fr, &dsub, &drms, n, 9, 1, 3000.0);

    /* the whole build: CPU vs CUDA (device images, then host images), CUDA twice bitwise */
    tide_psf_params p;
    tide_psf_params_default(&p);
    tide_psf_model mc, mg, mg2, mh;
    CHECK_OK(tide_psf_build(c, &fr.sub, &fr.rms, fr.n, fr.x, fr.y, fr.flux, &p, &mc));
    CHECK_OK(tide_psf_build(g, &dsub, &drms, fr.n, fr.x, fr.y, fr.flux, &p, &mg));
    CHECK_OK(tide_psf_build(g, &dsub, &drms, fr.n, fr.x, fr.y, fr.flux, &p, &mg2));
    CHECK_OK(tide_psf_build(g, &fr.sub, &fr.rms, fr.n, fr.x, fr.y, fr.flux, &p, &mh));
    CHECK(!mc.gaussian_fallback && mc.nstars >= 20);
    compare_models(&mc, &mg, 1e-4, "cpu vs cuda");
    compare_models(&mg, &mh, 0.0, "cuda device vs host images");
    const int npix = mg.stamp * mg.stamp;
    CHECK(mg.nbasis == mg2.nbasis && mg.ncoef == mg2.ncoef);
    if (mg.nbasis == mg2.nbasis && mg.ncoef == mg2.ncoef) {
        CHECK(memcmp(mg.basis, mg2.basis, sizeof(float) * (size_t)npix * mg.nbasis) == 0);
        CHECK(memcmp(mg.coef, mg2.coef, sizeof(double) * (size_t)mg.ncoef * mg.nbasis) == 0);
        CHECK(mg.fwhm == mg2.fwhm);
    }
    tide_psf_free(&mc), tide_psf_free(&mg), tide_psf_free(&mg2), tide_psf_free(&mh);

    /* fallback on the GPU too */
    CHECK_OK(tide_psf_build(g, &dsub, &drms, 3, fr.x + 3, fr.y + 3, fr.flux + 3, &p, &mg));
    CHECK(mg.gaussian_fallback == 1);
    tide_psf_free(&mg);

    tide_image_free(g, &dsub);
    tide_image_free(g, &drms);
    free_frame(c, &fr);
    tide_ctx_destroy(g);
    tide_ctx_destroy(c);
    return TIDE_TEST_RESULT();
}
#endif
