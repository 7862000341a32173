/* detect_vs_sep.c — issue 3's "detection alone at least 50x faster than sep on the same
 * background-subtracted frame, measured in the same run": one program, one frame, both
 * detectors.
 *
 * Per size: simulate a dense frame as `tide bench --reduce` does (130,000 stars on
 * 14200x10650, scaled with the area), estimate its background once with sep (Source
 * Extractor's mesh method, 64x64 meshes, 3x3 filter), subtract it, and give that frame and its
 * RMS map to
 *   - sep_extract (Debian's libsep, the C core of python3-sep; one thread, as sep runs):
 *     threshold 5 sigma of the RMS map, minarea 5, Source Extractor's 3x3 convolution kernel,
 *     32 deblending levels, contrast 0.005, cleaning on;
 *   - tide_detect on the context's backend (device-resident frame on CUDA): threshold 5 on the
 *     matched-filter S/N of a Gaussian of the frame's FWHM, minarea 5, 32 levels, 0.005 —
 *     the first detection pass of tide's reduction (the second one uses the PSF model).
 * Both produce a catalog with positions, shapes and fluxes. Medians of --repeats runs after
 * one warm-up (sep: of min(repeats, 3) runs on frames above 20 MP, which take seconds).
 *
 * Built only where libsep is found (CMake option; Debian libsep-dev). */
#include <math.h>
#include <stddef.h> /* sep.h uses size_t without including it */
#include <stdio.h>
#include <sep.h>
#include <stdlib.h>
#include <string.h>

#include "tide/tide.h"

#define MAXS 8
#define NPIX_151MP (14200.0 * 10650.0)

static int cmp_dbl(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* tide's timed stages, mean ms per detection (the timers' totals over @p runs calls). */
static void print_stages(const tide_ctx *ctx, int runs) {
    printf("  tide stages, ms per detection:");
    for (int i = 0; i < tide_timer_count(ctx); i++) {
        const char *name;
        double total;
        int calls;
        if (tide_timer_get(ctx, i, &name, &total, &calls) == 0)
            printf("%s %s %.3f", i ? "," : "", name, total / runs);
    }
    printf("\n");
}

static int parse_sizes(const char *s, int64_t (*sz)[2], int *n) {
    *n = 0;
    while (*s && *n < MAXS) {
        long long w, h;
        int used = 0;
        if (sscanf(s, "%lldx%lld%n", &w, &h, &used) != 2 || w < 64 || h < 64)
            return -1;
        sz[*n][0] = w, sz[*n][1] = h, (*n)++;
        s += used;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return *n > 0 ? 0 : -1;
}

/* The background-subtracted frame (sub) and RMS map of a simulated dense frame, by sep. */
static int make_frame(int64_t w, int64_t h, int64_t nstars, tide_image *sub, float **rms,
                      double *fwhm) {
    tide_ctx *cpu = NULL;
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    int st = tide_ctx_create(&cpu, &o);
    if (st)
        return st;
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    sp.width = w, sp.height = h, sp.nstars = nstars;
    *fwhm = sp.fwhm;
    tide_sim_frame fr;
    memset(&fr, 0, sizeof fr);
    st = tide_sim_run(cpu, &sp, &fr, NULL);
    tide_ctx_destroy(cpu);
    if (st)
        return st;
    *sub = fr.image;
    fr.image.owns = 0;
    tide_sim_frame_free(NULL, &fr);
    sep_image im = {sub->pix, NULL,   NULL,   NULL, SEP_TFLOAT,     0,   0,
                    0,        (int)w, (int)h, 0.0,  SEP_NOISE_NONE, 1.0, 0.0};
    sep_bkg *bk = NULL;
    int se = sep_background(&im, 64, 64, 3, 3, 0.0, &bk);
    *rms = malloc(sizeof(float) * (size_t)(w * h));
    if (!se && *rms)
        se = sep_bkg_subarray(bk, sub->pix, SEP_TFLOAT);
    if (!se && *rms)
        se = sep_bkg_rmsarray(bk, *rms, SEP_TFLOAT);
    sep_bkg_free(bk);
    if (se || !*rms)
        return tide_error(TIDE_E_INTERNAL, "sep background failed (%d)", se);
    return 0;
}

int main(int argc, char **argv) {
    int64_t sz[MAXS][2] = {{2048, 2048}, {14200, 10650}};
    int nsz = 2, repeats = 5;
    const char *backend = "auto";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            if (parse_sizes(argv[++i], sz, &nsz)) {
                fprintf(stderr, "detect_vs_sep: --sizes WxH[,WxH...] (got '%s')\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) {
            repeats = atoi(argv[++i]);
            if (repeats < 1 || repeats > 50) {
                fprintf(stderr, "detect_vs_sep: --repeats 1..50\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            backend = argv[++i];
        } else {
            fprintf(stderr, "usage: detect_vs_sep [--sizes WxH,...] [--repeats N] "
                            "[--backend auto|cpu|cuda]\n");
            return 2;
        }
    }
    tide_ctx *ctx = NULL;
    tide_ctx_options o = {0};
    o.backend = !strcmp(backend, "cpu")    ? TIDE_BACKEND_CPU
                : !strcmp(backend, "cuda") ? TIDE_BACKEND_CUDA
                                           : TIDE_BACKEND_AUTO;
    if (tide_ctx_create(&ctx, &o)) {
        fprintf(stderr, "detect_vs_sep: %s\n", tide_error_detail());
        return 1;
    }
    printf("detection alone, tide (%s, %s) vs sep %s (libsep, 1 thread), same "
           "background-subtracted dense frame; medians\ntarget (issue 3): tide >= 50x faster\n\n",
           tide_backend_name(ctx->backend), ctx->device_name, "1.2");
    printf("%-13s %8s %10s %8s %10s %9s  %s\n", "frame", "tide n", "tide ms", "sep n", "sep ms",
           "sep/tide", "target");
    sep_set_sub_object_limit(4096);
    int rc = 0;
    for (int k = 0; k < nsz && !rc; k++) {
        const int64_t w = sz[k][0], h = sz[k][1];
        int64_t nstars = (int64_t)llround(130000.0 * (double)(w * h) / NPIX_151MP);
        if (nstars < 2000)
            nstars = 2000;
        tide_image sub;
        float *rms = NULL;
        double fwhm = 3.0;
        memset(&sub, 0, sizeof sub);
        int st = make_frame(w, h, nstars, &sub, &rms, &fwhm);
        /* tide: the frame and RMS map where the context computes */
        tide_image hr = {w, h, w, rms, NULL, NULL, TIDE_HOST, 0}, dsub = {0}, drms = {0};
        const int dev = ctx->backend == TIDE_BACKEND_CUDA;
        if (!st && dev)
            st = tide_image_clone(ctx, &dsub, &sub, TIDE_DEVICE);
        if (!st && dev)
            st = tide_image_clone(ctx, &drms, &hr, TIDE_DEVICE);
        tide_detect_params dp;
        tide_detect_params_default(&dp);
        dp.fwhm_guess = fwhm;
        double tt[51], ts[51];
        int64_t ntide = 0, nsep = 0;
        for (int r = 0; r <= repeats && !st; r++) {
            tide_table t;
            tide_table_init(&t);
            tide_sync(ctx);
            const double t0 = tide_now();
            st = tide_detect(ctx, dev ? &dsub : &sub, dev ? &drms : &hr, NULL, &dp, &t);
            if (!st)
                st = tide_sync(ctx);
            if (r > 0)
                tt[r - 1] = 1e3 * (tide_now() - t0);
            else
                tide_timer_clear(ctx); /* the stage breakdown is of the timed runs */
            ntide = t.nrows;
            tide_table_free(&t);
        }
        /* sep's pixel stack must hold the frame's above-threshold pixels (its default of
         * 300,000 overflows on a dense 151 MP frame), and it is allocated per call, so no
         * larger than that */
        sep_set_extract_pixstack((size_t)(w * h / 20 > 300000 ? w * h / 20 : 300000));
        const int nsep_runs = w * h > 20000000 ? (repeats < 3 ? repeats : 3) : repeats;
        static const float conv[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
        sep_image im = {sub.pix, rms,    NULL,   NULL, SEP_TFLOAT,       SEP_TFLOAT, 0,
                        0,       (int)w, (int)h, 0.0,  SEP_NOISE_STDDEV, 1.0,        0.0};
        for (int r = 0; r < nsep_runs && !st; r++) {
            sep_catalog *cat = NULL;
            const double t0 = tide_now();
            const int se = sep_extract(&im, 5.0f, SEP_THRESH_REL, 5, conv, 3, 3, SEP_FILTER_CONV,
                                       32, 0.005, 1, 1.0, &cat);
            ts[r] = 1e3 * (tide_now() - t0);
            if (se) {
                char msg[128];
                sep_get_errmsg(se, msg);
                st = tide_error(TIDE_E_INTERNAL, "sep_extract: %s", msg);
            } else {
                nsep = cat->nobj;
            }
            sep_catalog_free(cat);
        }
        if (st) {
            fprintf(stderr, "detect_vs_sep: %lldx%lld: %s\n", (long long)w, (long long)h,
                    tide_error_detail());
            rc = 1;
        } else {
            const double mt = median(tt, repeats), ms = median(ts, nsep_runs);
            char fr[32];
            snprintf(fr, sizeof fr, "%lldx%lld", (long long)w, (long long)h);
            printf("%-13s %8lld %10.2f %8lld %10.1f %8.1fx  %s\n", fr, (long long)ntide, mt,
                   (long long)nsep, ms, ms / mt, ms / mt >= 50.0 ? "met" : "NOT met");
            print_stages(ctx, repeats);
            fflush(stdout);
        }
        tide_image_free(ctx, &dsub);
        tide_image_free(ctx, &drms);
        tide_image_free(NULL, &sub);
        free(rms);
    }
    tide_ctx_destroy(ctx);
    return rc;
}
