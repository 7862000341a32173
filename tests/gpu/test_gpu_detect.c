/* test_gpu_detect.c — CUDA detection against its CPU twin on awkward frames: a star grid of
 * odd size, a crowded field with blends, NaN blocks, a saturated star, 64x64 and 20000x300,
 * host and device inputs, a two-basis PSF model; the same rows (ISOAREA, peaks, flags,
 * parents), fluxes within 1e-5 relative, positions within 1e-6 px, S/N within 1e-4; the
 * segmentation maps equal; the GPU bitwise the same from run to run. Skips without a GPU. */
#include <stdint.h>

#include "common/detect_synth.h"
#include "tide/psf.h"
#include "tide/tide.h"
#include "tide_test.h"

static const char *F64[] = {"X",    "Y",    "XWIN", "YWIN",     "ERRX_WIN",   "ERRY_WIN",
                            "X2",   "Y2",   "XY",   "A",        "B",          "THETA",
                            "FWHM", "PEAK", "SNR",  "FLUX_ISO", "FLUXERR_ISO"};

static double tol_of(const char *name) {
    if (!strcmp(name, "SNR"))
        return 1e-4;
    if (!strcmp(name, "FLUX_ISO") || !strcmp(name, "FLUXERR_ISO") || !strcmp(name, "PEAK"))
        return 1e-5;
    return 1e-6;
}

static void compare(const char *what, const tide_table *a, const tide_table *b) {
    CHECK(a->nrows == b->nrows);
    if (a->nrows != b->nrows) {
        fprintf(stderr, "%s: CPU %lld rows, CUDA %lld rows\n", what, (long long)a->nrows,
                (long long)b->nrows);
        return;
    }
    const char *I64[] = {"ISOAREA", "XPEAK", "YPEAK", "PARENT"};
    int64_t bad = 0;
    for (int c = 0; c < 4; c++)
        for (int64_t i = 0; i < a->nrows; i++)
            bad += tide_table_i64(a, I64[c])[i] != tide_table_i64(b, I64[c])[i];
    for (int64_t i = 0; i < a->nrows; i++)
        bad += tide_table_i32(a, "FLAGS")[i] != tide_table_i32(b, "FLAGS")[i];
    double worst = 0.0;
    const char *wname = "";
    for (size_t c = 0; c < sizeof F64 / sizeof F64[0]; c++) {
        const double *x = tide_table_f64(a, F64[c]), *y = tide_table_f64(b, F64[c]);
        double tol = tol_of(F64[c]);
        for (int64_t i = 0; i < a->nrows; i++) {
            if (isnan(x[i]) && isnan(y[i]))
                continue;
            double rel = !strcmp(F64[c], "X") || !strcmp(F64[c], "Y") || !strcmp(F64[c], "XWIN") ||
                                 !strcmp(F64[c], "YWIN")
                             ? fabs(x[i] - y[i])
                             : fabs(x[i] - y[i]) / fmax(fabs(x[i]), 1e-30);
            if (!(rel <= tol))
                bad++;
            if (rel / tol > worst) {
                worst = rel / tol;
                wname = F64[c];
            }
        }
    }
    printf("%s: %lld rows, mismatches %lld, worst error %.3g of tolerance (%s)\n", what,
           (long long)a->nrows, (long long)bad, worst, wname);
    CHECK(bad == 0);
}

static void run_pair(tide_ctx *cpu, tide_ctx *gpu, const char *what, const tide_image *im,
                     const tide_image *rms, const tide_psf_model *psf,
                     const tide_detect_params *p) {
    tide_table a, b, c;
    tide_table_init(&a);
    tide_table_init(&b);
    tide_table_init(&c);
    tide_detect_maps ma, mb;
    CHECK_OK(tide_detect_ex(cpu, im, rms, psf, p, &a, &ma));
    CHECK_OK(tide_detect_ex(gpu, im, rms, psf, p, &b, &mb));
    compare(what, &a, &b);
    /* segmentation maps equal */
    const int64_t n = im->width * im->height;
    int32_t *seg = malloc(sizeof(int32_t) * (size_t)n);
    if (mb.seg && ma.seg) {
        CHECK_OK(tide_memcpy(gpu, seg, 0, mb.seg, 1, sizeof(int32_t) * (size_t)n));
        int64_t diff = 0;
        for (int64_t i = 0; i < n; i++)
            diff += seg[i] != ma.seg[i];
        CHECK(diff == 0);
    }
    free(seg);
    /* bitwise reproducible on the GPU, device inputs too */
    tide_image dim, drms;
    CHECK_OK(tide_image_clone(gpu, &dim, im, TIDE_DEVICE));
    CHECK_OK(tide_image_clone(gpu, &drms, rms, TIDE_DEVICE));
    CHECK_OK(tide_detect(gpu, &dim, &drms, psf, p, &c));
    CHECK(c.nrows == b.nrows);
    if (c.nrows == b.nrows && b.nrows > 0)
        for (size_t k = 0; k < sizeof F64 / sizeof F64[0]; k++)
            CHECK(memcmp(tide_table_f64(&b, F64[k]), tide_table_f64(&c, F64[k]),
                         sizeof(double) * (size_t)b.nrows) == 0);
    tide_image_free(gpu, &dim);
    tide_image_free(gpu, &drms);
    tide_detect_maps_free(cpu, &ma);
    tide_detect_maps_free(gpu, &mb);
    tide_table_free(&a);
    tide_table_free(&b);
    tide_table_free(&c);
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no CUDA device");
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *cpu = NULL, *gpu = NULL;
    CHECK_OK(tide_ctx_create(&cpu, &o));
    o.backend = TIDE_BACKEND_CUDA;
    CHECK_OK(tide_ctx_create(&gpu, &o));
    if (!cpu || !gpu)
        return TIDE_TEST_RESULT();
    tide_detect_params p;
    tide_detect_params_default(&p);

    /* star grid, odd size */
    tide_image im, rms;
    synth_frame(&im, &rms, 397, 301, 2.0, 31);
    for (int k = 0; k < 120; k++)
        synth_star(&im, 5 + 387 * synth_unif(1, (uint64_t)k), 5 + 291 * synth_unif(2, (uint64_t)k),
                   synth_flux_for_snr(8 + 300 * synth_unif(3, (uint64_t)k), 3.0, 2.0), 3.0);
    run_pair(cpu, gpu, "grid 397x301", &im, &rms, NULL, &p);
    /* with NaN blocks and a saturated star */
    synth_star(&im, 200.4, 150.6, 3e6, 3.0);
    for (int64_t i = 0; i < im.width * im.height; i++) {
        int64_t x = i % im.width, y = i / im.width;
        if (im.pix[i] > 4e4f) {
            im.pix[i] = 4e4f;
            im.mask[i] |= TIDE_MASK_SATURATED;
        }
        if ((x / 37 + y / 29) % 5 == 0 && x > 250) {
            im.pix[i] = NAN;
            im.mask[i] = TIDE_MASK_NODATA;
        }
    }
    run_pair(cpu, gpu, "NaN blocks + saturated", &im, &rms, NULL, &p);
    tide_image_free(NULL, &im);
    tide_image_free(NULL, &rms);

    /* crowded: blends and the deblend limit */
    synth_frame(&im, &rms, 257, 263, 1.0, 32);
    for (int k = 0; k < 400; k++)
        synth_star(&im, 256 * synth_unif(4, (uint64_t)k), 262 * synth_unif(5, (uint64_t)k),
                   synth_flux_for_snr(10 + 400 * synth_unif(6, (uint64_t)k), 4.0, 1.0), 4.0);
    p.fwhm_guess = 4.0;
    run_pair(cpu, gpu, "crowded 257x263", &im, &rms, NULL, &p);
    p.deblend_limit = 3;
    run_pair(cpu, gpu, "crowded, limit 3", &im, &rms, NULL, &p);
    tide_detect_params_default(&p);

    /* a two-basis PSF model varying over the field */
    tide_psf_model psf;
    memset(&psf, 0, sizeof psf);
    psf.width = im.width;
    psf.height = im.height;
    psf.stamp = 15;
    psf.nbasis = 2;
    psf.degree = 1;
    psf.ncoef = 3;
    float basis[2 * 15 * 15];
    double coef[6] = {1.0, 0.0, 0.0, 0.0, 0.3, -0.2};
    for (int j = 0; j < 15; j++)
        for (int i = 0; i < 15; i++) {
            double dx = i - 7, dy = j - 7;
            basis[j * 15 + i] = (float)exp(-0.5 * (dx * dx + dy * dy) / (1.7 * 1.7));
            basis[225 + j * 15 + i] = (float)((dx * dx - dy * dy) * 0.02 * basis[j * 15 + i]);
        }
    psf.basis = basis;
    psf.coef = coef;
    psf.fwhm = 4.0;
    for (int c = 0; c < 4; c++)
        psf.fwhm_corner[c] = 3.6 + 0.2 * c;
    run_pair(cpu, gpu, "two-basis PSF", &im, &rms, &psf, &p);
    tide_image_free(NULL, &im);
    tide_image_free(NULL, &rms);

    /* small and strip-shaped frames, an empty frame */
    const int64_t sz[3][2] = {{64, 64}, {20000, 300}, {1, 1}};
    for (int s = 0; s < 3; s++) {
        synth_frame(&im, &rms, sz[s][0], sz[s][1], 1.0, 40 + (uint64_t)s);
        for (int k = 0; k < sz[s][0] / 20; k++)
            synth_star(&im, sz[s][0] * synth_unif(7, (uint64_t)k),
                       sz[s][1] * synth_unif(8, (uint64_t)k), synth_flux_for_snr(30, 3, 1), 3.0);
        char what[64];
        snprintf(what, sizeof what, "%lld x %lld", (long long)sz[s][0], (long long)sz[s][1]);
        run_pair(cpu, gpu, what, &im, &rms, NULL, &p);
        tide_image_free(NULL, &im);
        tide_image_free(NULL, &rms);
    }
    synth_frame(&im, &rms, 300, 200, 0.0, 1);
    run_pair(cpu, gpu, "empty", &im, &rms, NULL, &p);
    tide_image_free(NULL, &im);
    tide_image_free(NULL, &rms);

    tide_ctx_destroy(cpu);
    tide_ctx_destroy(gpu);
    return TIDE_TEST_RESULT();
}
