/* bench_rb.c — `tide bench --rb --model MODEL`: the time to score N candidates (issue 18's
 * target: 10,000 in ≤ 10 ms), features and prediction apart, on one thread and on the
 * context's. The candidates are planted on a simulated 2048² difference of unit noise: half
 * PSF-like sources, a quarter single hot pixels, a quarter dipoles, with 2000 catalog stars;
 * the times do not depend on what the stamps hold, only on their number. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "tide/rb.h"

static const char *help =
    "usage: tide bench --rb --model MODEL.json [--n N] [--repeats R] [OPTIONS]\n"
    "\n"
    "Time real/bogus scoring (tide rb score, tide diff --rb-model) of N candidates: the\n"
    "features from their stamps, the model's prediction, and both, on 1 thread and on the\n"
    "context's threads (--threads). Medians of R runs after one untimed run.\n"
    "\n"
    "options:\n"
    "  --model FILE   a model of tide rb train [required]\n"
    "  --n N          candidates [10000]\n"
    "  --repeats R    timed runs [11]\n";

/* CPU time of the calling thread, ms: on a shared machine the 1-thread wall time also
 * counts the time the thread waited for a core. */
static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* A deterministic uniform deviate in [0, 1). */
static double uni(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* The difference and its candidate table (tide diff's columns). */
static int make_scene(int64_t n, tide_image *im, tide_table *t, double **stars) {
    const int64_t W = 2048, Hh = 2048;
    int st = tide_image_alloc(NULL, im, W, Hh, TIDE_HOST, TIDE_IMAGE_VAR | TIDE_IMAGE_MASK);
    if (st)
        return st;
    uint64_t s = 42;
    for (int64_t k = 0; k < W * Hh; k++) {
        const double u = uni(&s), v = uni(&s);
        im->pix[k] = (float)(sqrt(-2 * log(u + 1e-300)) * cos(6.283185307179586 * v));
        im->var[k] = 1.0f;
    }
    tide_table_init(t);
    static const char *f64[] = {"X_IMAGE",  "Y_IMAGE",  "SNR",      "FLUX",        "DIP_XPOS",
                                "DIP_YPOS", "DIP_XNEG", "DIP_YNEG", "DIP_CHI2",    "DIP_NPIX",
                                "PS_X",     "PS_Y",     "PS_FLUX",  "PS_FLUX_ERR", "PS_CHI2"};
    for (size_t k = 0; !st && k < sizeof f64 / sizeof f64[0]; k++)
        st = tide_table_add_column(t, f64[k], TIDE_COL_F64, 1, NULL, NULL, NULL);
    static const char *i32[] = {"KIND", "FIT_STATUS", "PS_STATUS"};
    for (size_t k = 0; !st && k < 3; k++)
        st = tide_table_add_column(t, i32[k], TIDE_COL_I32, 1, NULL, NULL, NULL);
    if (!st)
        st = tide_table_resize(t, n);
    *stars = malloc(2000 * 2 * sizeof **stars);
    if (st || !*stars)
        return st ? st : tide_error(TIDE_E_NOMEM, "bench rb: out of memory");
    for (int k = 0; k < 4000; k++)
        (*stars)[k] = 1 + 2047 * uni(&s);
    const double sig = 3.0 / 2.3548;
    for (int64_t i = 0; i < n; i++) {
        const double x = 20 + 2008 * uni(&s), y = 20 + 2008 * uni(&s), a = 5 + 40 * uni(&s);
        const int kind = (int)(i % 4); /* 0, 1: source; 2: hot pixel; 3: dipole */
        for (int dy = -8; dy <= 8; dy++)
            for (int dx = -8; dx <= 8; dx++) {
                const int64_t px = (int64_t)x + dx, py = (int64_t)y + dy;
                const double rx = px - x, ry = py - y,
                             g = exp(-0.5 * (rx * rx + ry * ry) / (sig * sig));
                const double rx2 = rx - 2, g2 = exp(-0.5 * (rx2 * rx2 + ry * ry) / (sig * sig));
                im->pix[py * W + px] += (float)(kind < 2 ? a * g : kind == 3 ? a * (g - g2) : 0);
            }
        if (kind == 2)
            im->pix[(int64_t)y * W + (int64_t)x] += (float)(3 * a);
        double *c[15];
        for (int k = 0; k < 15; k++)
            c[k] = tide_table_f64(t, f64[k]);
        c[0][i] = x + 1, c[1][i] = y + 1, c[2][i] = a, c[3][i] = 10 * a;
        c[4][i] = x + 1, c[5][i] = y + 1, c[6][i] = x - 1, c[7][i] = y + 1;
        c[8][i] = 441 * (1 + uni(&s)), c[9][i] = 441, c[10][i] = x + 1, c[11][i] = y + 1;
        c[12][i] = 10 * a, c[13][i] = 2, c[14][i] = 441 * (1 + uni(&s));
        tide_table_i32(t, "KIND")[i] = kind == 3 ? 2 : 1;
        tide_table_i32(t, "FIT_STATUS")[i] = 0;
        tide_table_i32(t, "PS_STATUS")[i] = 0;
    }
    return 0;
}

int tide_bench_rb(int argc, char **argv) {
    const char *cmd = "bench --rb";
    tide_cli_common com;
    tide_cli_common_init(&com);
    const char *model = NULL;
    double n = 10000, reps = 11;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--rb"))
            continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s\n%s", help, tide_cli_common_help);
            return 0;
        }
        const int c = tide_cli_common_option(&com, cmd, argc, argv, &i);
        if (c < 0)
            return 2;
        if (c > 0)
            continue;
        if (i + 1 >= argc)
            return tide_cli_usage_error(cmd, "%s: unknown option or missing value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--model"))
            model = v;
        else if (!strcmp(a, "--n") || !strcmp(a, "--repeats")) {
            double x;
            if (tide_cli_parse_number(v, &x) || x < 1 || x > 1e7 || x != floor(x))
                return tide_cli_usage_error(cmd, "%s needs a count >= 1 (got '%s')", a, v);
            *(!strcmp(a, "--n") ? &n : &reps) = x;
        } else
            return tide_cli_usage_error(cmd, "unknown option %s", a);
    }
    if (!model)
        return tide_cli_usage_error(cmd, "needs --model MODEL.json");
    tide_ctx *ctx = tide_cli_make_ctx(&com, cmd);
    if (!ctx)
        return 1;
    tide_rb_model *m = NULL;
    tide_image im;
    memset(&im, 0, sizeof im);
    tide_table t;
    tide_table_init(&t);
    double *stars = NULL;
    const int64_t nc = (int64_t)n;
    const int R = (int)reps;
    float *x = malloc((size_t)nc * TIDE_RB_NFEAT * sizeof *x), *s = malloc((size_t)nc * sizeof *s);
    double *tf = malloc(sizeof *tf * (size_t)R), *tp = malloc(sizeof *tp * (size_t)R);
    double *cf = malloc(sizeof *cf * (size_t)R), *cp = malloc(sizeof *cp * (size_t)R);
    int st =
        x && s && tf && tp && cf && cp ? 0 : tide_error(TIDE_E_NOMEM, "bench rb: out of memory");
    if (!st)
        st = tide_rb_model_load(model, &m);
    if (!st)
        st = make_scene(nc, &im, &t, &stars);
    const int nth[2] = {1, ctx->threads};
    double med[2][2] = {{0}}, cpu[2] = {0};
    for (int k = 0; k < 2 && !st; k++) {
        omp_set_num_threads(nth[k]);
        for (int r = -1; r < R && !st; r++) {
            const double t0 = tide_bench_now_ms(), c0 = cpu_ms();
            st = tide_rb_table_features(&im, &t, 3.0, stars, 2000, x);
            const double t1 = tide_bench_now_ms(), c1 = cpu_ms();
            if (!st)
                st = tide_rb_predict(m, x, nc, nth[k], s);
            const double t2 = tide_bench_now_ms(), c2 = cpu_ms();
            if (r >= 0)
                tf[r] = t1 - t0, tp[r] = t2 - t1, cf[r] = c1 - c0, cp[r] = c2 - c1;
        }
        med[k][0] = tide_bench_median(tf, R);
        med[k][1] = tide_bench_median(tp, R);
        if (k == 0)
            cpu[0] = tide_bench_median(cf, R), cpu[1] = tide_bench_median(cp, R);
    }
    omp_set_num_threads(ctx->threads);
    if (!st) {
        if (com.json) {
            printf("{\"candidates\": %lld, \"threads\": %d, \"ms_features_1\": %.3f, "
                   "\"ms_predict_1\": %.3f, \"ms_features\": %.3f, \"ms_predict\": %.3f, "
                   "\"ms_total\": %.3f, \"cpu_ms_features_1\": %.3f, \"cpu_ms_predict_1\": "
                   "%.3f}\n",
                   (long long)nc, ctx->threads, med[0][0], med[0][1], med[1][0], med[1][1],
                   med[1][0] + med[1][1], cpu[0], cpu[1]);
        } else {
            printf("real/bogus scoring of %lld candidates (median of %d):\n", (long long)nc, R);
            for (int k = 0; k < 2; k++)
                printf("  %2d thread%s: features %8.3f ms, prediction %8.3f ms, total %8.3f ms\n",
                       nth[k], nth[k] == 1 ? " " : "s", med[k][0], med[k][1],
                       med[k][0] + med[k][1]);
            printf("  1 thread's CPU time: features %8.3f ms, prediction %8.3f ms\n", cpu[0],
                   cpu[1]);
        }
    }
    free(x), free(s), free(tf), free(tp), free(cf), free(cp), free(stars);
    tide_table_free(&t);
    tide_image_free(NULL, &im);
    tide_rb_model_free(m);
    tide_ctx_destroy(ctx);
    return st ? tide_cli_fail(cmd, st) : 0;
}
