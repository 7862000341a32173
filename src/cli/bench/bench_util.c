/* bench_util.c — helpers shared by the `tide bench` families (bench_util.h). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "tide/fft.h"
#include "tide/memory.h"
#include "tide/timer.h"

int tide_bench_cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void tide_bench_range(const double *v, int n, double *lo, double *hi) {
    *lo = *hi = v[0];
    for (int k = 1; k < n; k++) {
        *lo = v[k] < *lo ? v[k] : *lo;
        *hi = v[k] > *hi ? v[k] : *hi;
    }
}

double tide_bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, tide_bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int tide_bench_time(tide_ctx *ctx, int repeats, int warmup, const char *stage, tide_bench_fn fn,
                    void *arg, double *ms) {
    double t[64];
    const int n = repeats < 64 ? repeats : 64;
    int st = 0;
    for (int i = 0; i < warmup && !st; i++)
        st = fn(ctx, arg);
    if (!st)
        st = tide_sync(ctx);
    for (int i = 0; i < n && !st; i++) {
        tide_timer tm;
        st = tide_timer_start(ctx, &tm, stage);
        if (!st)
            st = fn(ctx, arg);
        if (!st)
            st = tide_timer_stop(ctx, &tm, &t[i]);
    }
    if (!st)
        *ms = tide_bench_median(t, n);
    return st;
}

void tide_bench_utc_now(char out[32]) {
    const time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

double tide_bench_now_ms(void) {
    return 1e3 * tide_now();
}

int tide_bench_parse_sizes(const char *s, int64_t (*sizes)[2], int max, int64_t min_side, int *n) {
    *n = 0;
    while (*s) {
        char *end;
        const long long w = strtoll(s, &end, 10);
        if (end == s || (*end != 'x' && *end != 'X'))
            return -1;
        s = end + 1;
        const long long h = strtoll(s, &end, 10);
        if (end == s || w < min_side || h < min_side || *n == max)
            return -1;
        sizes[*n][0] = w, sizes[*n][1] = h;
        (*n)++;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return *n ? 0 : -1;
}

int tide_bench_int_opt(int argc, char **argv, int *i, const char *name, long long lo, long long hi,
                       long long *v) {
    if (strcmp(argv[*i], name) || *i + 1 >= argc)
        return 0;
    char *end;
    const long long x = strtoll(argv[++*i], &end, 10);
    if (end == argv[*i] || *end || x < lo || x > hi) {
        fprintf(stderr, "tide bench: %s %s is out of range (%lld..%lld)\n", name, argv[*i], lo, hi);
        return -1;
    }
    *v = x;
    return 1;
}

int tide_bench_common_arg(const char *cmd, const char *mode, const char *help, tide_cli_common *c,
                          int argc, char **argv, int *i, const char **json) {
    const char *a = argv[*i];
    if (!strcmp(a, mode))
        return TIDE_BENCH_ARG_TAKEN;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
        printf("%s\n%s", help, tide_cli_common_help);
        return TIDE_BENCH_ARG_EXIT_OK;
    }
    /* --json FILE here, before the common --json flag takes it */
    if (!strcmp(a, "--json") && *i + 1 < argc &&
        (argv[*i + 1][0] != '-' || !strcmp(argv[*i + 1], "-"))) {
        *json = argv[++*i];
        return TIDE_BENCH_ARG_TAKEN;
    }
    const int cm = tide_cli_common_option(c, cmd, argc, argv, i);
    return cm < 0 ? TIDE_BENCH_ARG_EXIT_USAGE : cm > 0 ? TIDE_BENCH_ARG_TAKEN : TIDE_BENCH_ARG_OWN;
}

void tide_bench_collect_stages(const tide_ctx *ctx, tide_bench_stage *st, int *n, int max,
                               int rep) {
    const int nt = tide_timer_count(ctx);
    for (int i = 0; i < nt; i++) {
        const char *name;
        double ms;
        int calls;
        if (tide_timer_get(ctx, i, &name, &ms, &calls) || !strncmp(name, "bench.", 6))
            continue;
        int k = 0;
        while (k < *n && strcmp(st[k].name, name))
            k++;
        if (k == *n) {
            if (k == max)
                continue;
            (*n)++;
            snprintf(st[k].name, sizeof st[k].name, "%s", name);
        }
        st[k].samples[rep] = ms;
        st[k].calls = calls;
    }
}

typedef struct fft_arg {
    tide_fft_plan *plan;
    float *buf;
} fft_arg;

static int do_fft(tide_ctx *ctx, void *p) {
    fft_arg *a = p;
    return tide_fft_execute(ctx, a->plan, a->buf);
}

int tide_bench_fft_pair(tide_ctx *ctx, int64_t px, int64_t py, int repeats, int warmup,
                        double *r2c_ms, double *c2r_ms) {
    const int64_t n = py * tide_fft_row_pitch(px);
    fft_arg a = {NULL, NULL};
    int st = tide_fft_buffer_alloc(ctx, n, &a.buf);
    if (!st && ctx->backend == TIDE_BACKEND_CUDA)
        st = tide_memzero(ctx, a.buf, 1, (size_t)n * sizeof(float));
    else if (!st)
        memset(a.buf, 0, (size_t)n * sizeof(float));
    if (!st)
        st = tide_fft_plan_get(ctx, TIDE_FFT_R2C, px, py, 1, &a.plan);
    if (!st)
        st = tide_bench_time(ctx, repeats, warmup, "bench.fft_r2c", do_fft, &a, r2c_ms);
    if (!st)
        st = tide_fft_plan_get(ctx, TIDE_FFT_C2R, px, py, 1, &a.plan);
    if (!st)
        st = tide_bench_time(ctx, repeats, warmup, "bench.fft_c2r", do_fft, &a, c2r_ms);
    tide_fft_buffer_free(ctx, a.buf);
    return st;
}

int tide_bench_file_args(const char *cmd, const char *mode, const char *help, tide_cli_common *c,
                         int argc, char **argv, const char **path, const char **json, int *repeats,
                         int *warmup, tide_ctx **ctx, int *threads) {
    *path = NULL;
    *ctx = NULL;
    *repeats = 5;
    *warmup = 1;
    tide_cli_common_init(c);
    for (int i = 1; i < argc; i++) {
        int r = tide_bench_common_arg(cmd, mode, help, c, argc, argv, &i, json);
        if (r == TIDE_BENCH_ARG_EXIT_OK)
            return 0;
        if (r == TIDE_BENCH_ARG_EXIT_USAGE)
            return 2;
        if (r == TIDE_BENCH_ARG_TAKEN)
            continue;
        if ((!strcmp(argv[i], "--repeats") || !strcmp(argv[i], "--warmup")) && i + 1 < argc) {
            int v = atoi(argv[i + 1]);
            if (v < (argv[i][2] == 'r') || v > TIDE_BENCH_MAX_REPEATS) {
                fprintf(stderr, "tide %s: %s %s is out of range\n", cmd, argv[i], argv[i + 1]);
                return 2;
            }
            *(argv[i][2] == 'r' ? repeats : warmup) = v;
            i++;
        } else if (argv[i][0] != '-' && !*path) {
            *path = argv[i];
        } else {
            fprintf(stderr, "tide %s: unknown option '%s' (see --help)\n", cmd, argv[i]);
            return 2;
        }
    }
    if (!*path) {
        fprintf(stderr, "tide %s: give the FILE (see --help)\n", cmd);
        return 2;
    }
    c->ctx_opt.backend = TIDE_BACKEND_CPU;
    if (!(*ctx = tide_cli_make_ctx(c, cmd)))
        return 1;
    *threads = (*ctx)->threads > 0 ? (*ctx)->threads : omp_get_max_threads();
    return -1;
}
