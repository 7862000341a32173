/* test_gpu_reduce_pipeline.c — the reduction pipeline on the GPU against the CPU (issue 3,
 * "CPU and GPU"): the same detections, fluxes within 1e-5 relative, and the GPU catalog
 * bitwise identical from run to run (same context, a fresh context, host or device input).
 * Also the pipeline's own kernels (background subtraction, RMS to variance, sampling at the
 * sources) against their CPU twins on awkward sizes. Skips (77) without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduction/maps/map_ops.h"
#include "tide/tide.h"
#include "tide_test.h"

/* ---- the pipeline's kernels ------------------------------------------------------------ */

#ifdef TIDE_HAVE_CUDA
static void test_ops(tide_ctx *gpu) {
    static const int64_t sizes[][2] = {{1, 1}, {7, 3}, {257, 129}, {1031, 17}};
    for (int s = 0; s < 4; s++) {
        const int64_t w = sizes[s][0], h = sizes[s][1], sa = w + 3, n = sa * h;
        float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
        float *ref = malloc(sizeof(float) * (size_t)n), *got = malloc(sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            a[i] = (float)sin(0.37 * (double)i) * 100.0f;
            b[i] = (float)cos(0.11 * (double)i) * 7.0f;
        }
        void *da = NULL, *db = NULL;
        CHECK_OK(tide_device_alloc(gpu, sizeof(float) * (size_t)n, &da));
        CHECK_OK(tide_device_alloc(gpu, sizeof(float) * (size_t)n, &db));
        for (int op = 0; op < 3; op++) {
            memcpy(ref, a, sizeof(float) * (size_t)n);
            CHECK_OK(tide_pipe_map_cpu(NULL, op, w, h, ref, sa, b, sa, -1.5f));
            CHECK_OK(tide_memcpy(gpu, da, 1, a, 0, sizeof(float) * (size_t)n));
            CHECK_OK(tide_memcpy(gpu, db, 1, b, 0, sizeof(float) * (size_t)n));
            CHECK_OK(tide_pipe_map_cuda(gpu, op, w, h, da, sa, db, sa, -1.5f));
            CHECK_OK(tide_memcpy(gpu, got, 0, da, 1, sizeof(float) * (size_t)n));
            CHECK(memcmp(ref, got, sizeof(float) * (size_t)n) == 0);
        }
        /* gather at positions inside, on edges, outside (clamped) and NaN */
        enum { NP = 9 };
        double x[NP] = {0, 0.49, 0.51, (double)w - 1, (double)w + 5, -3, 2.5, NAN, 1e30};
        double y[NP] = {0, 0.2, (double)h - 1, 0.7, (double)h + 2, -1, 1.5, 0, 0};
        float r1[NP], r2[NP];
        CHECK_OK(tide_pipe_gather_cpu(NULL, a, sa, w, h, NP, x, y, r1));
        void *dx = NULL, *dy = NULL, *dout = NULL;
        CHECK_OK(tide_device_alloc(gpu, sizeof x, &dx));
        CHECK_OK(tide_device_alloc(gpu, sizeof y, &dy));
        CHECK_OK(tide_device_alloc(gpu, sizeof r2, &dout));
        CHECK_OK(tide_memcpy(gpu, da, 1, a, 0, sizeof(float) * (size_t)n));
        CHECK_OK(tide_memcpy(gpu, dx, 1, x, 0, sizeof x));
        CHECK_OK(tide_memcpy(gpu, dy, 1, y, 0, sizeof y));
        CHECK_OK(tide_pipe_gather_cuda(gpu, da, sa, w, h, NP, dx, dy, dout));
        CHECK_OK(tide_memcpy(gpu, r2, 0, dout, 1, sizeof r2));
        CHECK(memcmp(r1, r2, sizeof r1) == 0);
        CHECK(isnan(r1[7]) && isnan(r1[8]));
        tide_device_free(gpu, dx);
        tide_device_free(gpu, dy);
        tide_device_free(gpu, dout);
        tide_device_free(gpu, da);
        tide_device_free(gpu, db);
        free(a), free(b), free(ref), free(got);
    }
}

#endif

/* ---- whole pipeline -------------------------------------------------------------------- */

/* Every column of two tables byte for byte. */
static int tables_identical(const tide_table *a, const tide_table *b) {
    if (a->nrows != b->nrows || a->ncols != b->ncols)
        return 0;
    for (int j = 0; j < a->ncols; j++) {
        const tide_column *ca = &a->cols[j], *cb = &b->cols[j];
        if (strcmp(ca->name, cb->name) || ca->type != cb->type || ca->repeat != cb->repeat)
            return 0;
        const size_t bytes = (size_t)(a->nrows * ca->repeat * tide_col_type_size(ca->type));
        if (bytes && memcmp(ca->data, cb->data, bytes)) {
            fprintf(stderr, "column %s differs\n", ca->name);
            return 0;
        }
    }
    return 1;
}

/* |a - b| <= 1e-5 max(|a|, err): relative where the flux is measured, absolute (in units of
 * its own error) where it is consistent with zero. */
static int flux_close(double a, double b, double err) {
    if (isnan(a) && isnan(b))
        return 1;
    double scale = fabs(a) > err ? fabs(a) : err;
    return fabs(a - b) <= 1e-5 * scale;
}

static void compare_cpu_gpu(const tide_pipeline_result *c, const tide_pipeline_result *g,
                            const char *what) {
    const tide_table *tc = &c->catalog, *tg = &g->catalog;
    printf("%s: CPU %lld sources, GPU %lld; FWHM %.6f / %.6f; device peak %.1f MiB\n", what,
           (long long)tc->nrows, (long long)tg->nrows, c->psf.fwhm, g->psf.fwhm,
           (double)g->device_peak / 1048576.0);
    CHECK(tc->nrows == tg->nrows);
    CHECK(tc->nrows > 20);
    CHECK_CLOSE(c->psf.fwhm, g->psf.fwhm, 1e-4 * c->psf.fwhm);
    CHECK(c->psf_fallback == g->psf_fallback);
    CHECK(c->has_apcorr == g->has_apcorr);
    const double *xc = tide_table_f64(tc, "XWIN_IMAGE"), *yc = tide_table_f64(tc, "YWIN_IMAGE");
    const double *xg = tide_table_f64(tg, "XWIN_IMAGE"), *yg = tide_table_f64(tg, "YWIN_IMAGE");
    static const char *fluxes[][2] = {{"FLUX_APER", "FLUXERR_APER"},
                                      {"FLUX_AUTO", "FLUXERR_AUTO"},
                                      {"FLUX_PSF", "FLUXERR_PSF"},
                                      {"FLUX_OPT", "FLUXERR_OPT"}};
    const int naper = (int)tide_table_column(tc, "FLUX_APER")->repeat;
    int64_t unmatched = 0, bad_flux = 0, bad_flags = 0;
    double worst = 0;
    for (int64_t i = 0; i < tc->nrows; i++) {
        /* Rows come in the same order when the detections agree; find the partner anyway. */
        int64_t k = i < tg->nrows ? i : -1;
        if (k < 0 || hypot(xc[i] - xg[k], yc[i] - yg[k]) > 1e-3) {
            k = -1;
            for (int64_t j = 0; j < tg->nrows; j++)
                if (hypot(xc[i] - xg[j], yc[i] - yg[j]) <= 1e-3) {
                    k = j;
                    break;
                }
        }
        if (k < 0) {
            unmatched++;
            continue;
        }
        for (int f = 0; f < 4; f++) {
            const double *vc = tide_table_f64(tc, fluxes[f][0]);
            const double *vg = tide_table_f64(tg, fluxes[f][0]);
            const double *ec = tide_table_f64(tc, fluxes[f][1]);
            const int r = f == 0 ? naper : 1;
            for (int q = 0; q < r; q++) {
                const double a = vc[i * r + q], b = vg[k * r + q], e = ec[i * r + q];
                if (!flux_close(a, b, e)) {
                    if (bad_flux < 5)
                        fprintf(stderr, "source %lld %s[%d]: CPU %.9g GPU %.9g (err %.3g)\n",
                                (long long)i, fluxes[f][0], q, a, b, e);
                    bad_flux++;
                }
                if (isfinite(a) && isfinite(b) && fabs(a) > e)
                    worst = fmax(worst, fabs(a - b) / fabs(a));
            }
        }
        if (tide_table_i32(tc, "FLAGS_TIDE")[i] != tide_table_i32(tg, "FLAGS_TIDE")[k])
            bad_flags++;
    }
    printf("%s: unmatched %lld, fluxes beyond 1e-5 %lld, flag differences %lld, worst relative "
           "flux difference %.2e\n",
           what, (long long)unmatched, (long long)bad_flux, (long long)bad_flags, worst);
    CHECK(unmatched == 0);
    CHECK(bad_flux == 0);
    /* Flags come from thresholds (window convergence, fit validity) that FFT rounding can tip
     * for a source sitting on one: allow a few in a thousand. */
    CHECK(bad_flags * 200 <= tc->nrows);
}

static void run_frame(tide_ctx *cpu, tide_ctx *gpu, int64_t w, int64_t h, int64_t nstars,
                      uint64_t seed) {
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    sp.width = w;
    sp.height = h;
    sp.nstars = nstars;
    sp.ngalaxies = nstars / 20;
    sp.seed = seed;
    tide_sim_frame fr;
    memset(&fr, 0, sizeof fr);
    CHECK_OK(tide_sim_run(cpu, &sp, &fr, NULL));
    tide_pipeline_params p;
    tide_pipeline_params_default(&p);
    p.gain = sp.gain;
    p.rdnoise = sp.rdnoise;
    p.bias = sp.bias;
    p.saturate = sp.bias + sp.fullwell / sp.gain;
    char what[64];
    snprintf(what, sizeof what, "%lldx%lld, %lld stars", (long long)w, (long long)h,
             (long long)nstars);

    tide_pipeline_result rc, rg1, rg2, rg3, rg4;
    CHECK_OK(tide_pipeline_run(cpu, &fr.image, &fr.header, &p, &rc));
    CHECK_OK(tide_pipeline_run(gpu, &fr.image, &fr.header, &p, &rg1));
    compare_cpu_gpu(&rc, &rg1, what);
    /* run to run on one context, then on a fresh context */
    CHECK_OK(tide_pipeline_run(gpu, &fr.image, &fr.header, &p, &rg2));
    CHECK(tables_identical(&rg1.catalog, &rg2.catalog));
    tide_ctx *gpu2 = tide_test_ctx(TIDE_BACKEND_CUDA, 0);
    CHECK_OK(tide_pipeline_run(gpu2, &fr.image, &fr.header, &p, &rg3));
    CHECK(tables_identical(&rg1.catalog, &rg3.catalog));
    /* a device frame gives the same catalog as a host frame, and is left untouched */
    tide_image dev;
    CHECK_OK(tide_image_clone(gpu, &dev, &fr.image, TIDE_DEVICE));
    CHECK_OK(tide_pipeline_run(gpu, &dev, &fr.header, &p, &rg4));
    CHECK(tables_identical(&rg1.catalog, &rg4.catalog));
    tide_image back;
    CHECK_OK(tide_image_clone(gpu, &back, &dev, TIDE_HOST));
    CHECK(memcmp(back.pix, fr.image.pix, sizeof(float) * (size_t)(w * h)) == 0);
    /* the headers agree except for the backend and device */
    CHECK(rg1.header.ncards == rc.header.ncards);
    tide_image_free(gpu, &back);
    tide_image_free(gpu, &dev);
    tide_pipeline_result_free(&rc);
    tide_pipeline_result_free(&rg1);
    tide_pipeline_result_free(&rg2);
    tide_pipeline_result_free(&rg3);
    tide_pipeline_result_free(&rg4);
    tide_ctx_destroy(gpu2);
    tide_sim_frame_free(cpu, &fr);
}

/* An empty field on the GPU: no error, no row, the fallbacks set. */
static void run_empty(tide_ctx *cpu, tide_ctx *gpu) {
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    sp.width = 301;
    sp.height = 233;
    sp.nstars = 0;
    sp.ngalaxies = 0;
    sp.defects = 0;
    sp.e2_nmoving = 0;
    tide_sim_frame fr;
    memset(&fr, 0, sizeof fr);
    CHECK_OK(tide_sim_run(cpu, &sp, &fr, NULL));
    tide_pipeline_params p;
    tide_pipeline_params_default(&p);
    p.bias = sp.bias;
    tide_pipeline_result rc, rg;
    CHECK_OK(tide_pipeline_run(cpu, &fr.image, NULL, &p, &rc));
    CHECK_OK(tide_pipeline_run(gpu, &fr.image, NULL, &p, &rg));
    CHECK(rc.catalog.nrows == rg.catalog.nrows);
    CHECK(rg.catalog.nrows <= 1);
    CHECK(rg.psf_fallback == 1);
    CHECK(rg.catalog.ncols == rc.catalog.ncols);
    tide_pipeline_result_free(&rc);
    tide_pipeline_result_free(&rg);
    tide_sim_frame_free(cpu, &fr);
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no usable GPU");
    tide_ctx *cpu = tide_test_ctx(TIDE_BACKEND_CPU, 0), *gpu = tide_test_ctx(TIDE_BACKEND_CUDA, 0);
    if (!cpu || !gpu)
        return TIDE_TEST_RESULT();
#ifdef TIDE_HAVE_CUDA
    test_ops(gpu);
#endif
    run_frame(cpu, gpu, 1031, 777, 900, 21);   /* odd sizes, a varying PSF */
    run_frame(cpu, gpu, 2048, 2048, 3000, 22); /* the size */
    run_empty(cpu, gpu);
    tide_ctx_destroy(gpu);
    tide_ctx_destroy(cpu);
    return TIDE_TEST_RESULT();
}
