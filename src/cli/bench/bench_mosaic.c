/* bench_mosaic.c — `tide bench --mosaic` (issue 19): a simulated mosaic exposure (62 CCDs of
 * 2048 x 4096 by default, DECam's) reduced file to catalog by tide_reduce_job_run_mosaic on
 * one warm job, the median of repeats after a warm-up. Target on the GPU: <= 1.5 s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "cli/cli.h"
#include "cli/sim_write.h"

static const char *help =
    "usage: tide bench --mosaic [--ccds N] [--width W] [--height H] [--nstars N]\n"
    "                  [--repeats R] [--warmup W] [--dir DIR] [--json FILE]\n\n"
    "Simulate a mosaic exposure (tide sim --ccds), then time `tide reduce EXPOSURE.fits -o\n"
    "CATALOG.fits` of it on one warm job (every CCD on one context, back to back), the median\n"
    "of R runs after W warm-ups. Target on the GPU: 62 CCDs of 2048 x 4096 in <= 1.5 s.\n\n"
    "  --ccds N      CCDs [62]\n"
    "  --width W     CCD width [2048]\n"
    "  --height H    CCD height [4096]\n"
    "  --nstars N    stars per CCD [4000]\n"
    "  --repeats R   timed runs [3]\n"
    "  --warmup W    untimed runs first [1]\n"
    "  --dir DIR     where the exposure and the catalog go [a new directory in /tmp]\n";

/* The exposure of @p nccd CCDs into @p path. */
static int make_exposure(tide_ctx *ctx, int nccd, int64_t w, int64_t h, int64_t nstars,
                         const char *path, double *seconds) {
    tide_sim_params p;
    tide_sim_params_default(&p);
    p.width = w, p.height = h, p.nstars = nstars;
    p.ngalaxies = nstars / 20;
    tide_sim_mosaic *m = NULL;
    tide_cli_sim_mosaic_summary sum;
    int st = tide_sim_mosaic_make(ctx, &p, nccd, 150, &m);
    if (!st)
        st = tide_cli_sim_mosaic_write(ctx, m, 1, path, NULL, &sum);
    tide_sim_mosaic_free(m);
    *seconds = st ? 0 : sum.seconds;
    return st;
}

/* The option @p name's value in 1..@p hi (0..hi for --warmup) into *v: 1 when taken, -1 when
 * bad, 0 when not it. */
static int int_opt(int argc, char **argv, int *i, const char *name, long long hi, long long *v) {
    const long long lo = strcmp(name, "--warmup") ? 1 : 0;
    if (strcmp(argv[*i], name) || *i + 1 >= argc)
        return 0;
    char *end;
    const long long x = strtoll(argv[++*i], &end, 10);
    if (*end || x < lo || x > hi) {
        fprintf(stderr, "tide bench: %s %s is out of range (%lld..%lld)\n", name, argv[*i], lo, hi);
        return -1;
    }
    *v = x;
    return 1;
}

int tide_bench_mosaic(int argc, char **argv) {
    const char *cmd = "bench", *json = NULL, *dir = NULL;
    tide_cli_common c;
    tide_cli_common_init(&c);
    long long nccd = 62, w = 2048, h = 4096, nstars = 4000, repeats = 3, warmup = 1;
    for (int i = 1; i < argc; i++) {
        const int r = tide_bench_common_arg(cmd, "--mosaic", help, &c, argc, argv, &i, &json);
        if (r == TIDE_BENCH_ARG_EXIT_OK)
            return 0;
        if (r == TIDE_BENCH_ARG_EXIT_USAGE)
            return 2;
        if (r == TIDE_BENCH_ARG_TAKEN)
            continue;
        int t = int_opt(argc, argv, &i, "--ccds", TIDE_SIM_MAX_CCDS, &nccd);
        if (!t)
            t = int_opt(argc, argv, &i, "--width", 100000, &w);
        if (!t)
            t = int_opt(argc, argv, &i, "--height", 100000, &h);
        if (!t)
            t = int_opt(argc, argv, &i, "--nstars", 10000000, &nstars);
        if (!t)
            t = int_opt(argc, argv, &i, "--repeats", TIDE_BENCH_MAX_REPEATS, &repeats);
        if (!t)
            t = int_opt(argc, argv, &i, "--warmup", TIDE_BENCH_MAX_REPEATS, &warmup);
        if (!t && !strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i], t = 1;
        if (t < 0)
            return 2;
        if (!t)
            return tide_cli_usage_error(cmd, "unknown option '%s' for --mosaic", argv[i]);
    }
    char tmp[256] = "/tmp/tide-bench-mosaic-XXXXXX";
    if (!dir && !(dir = mkdtemp(tmp)))
        return tide_cli_fail(cmd, tide_error(TIDE_E_IO, "cannot make a directory in /tmp"));
    char expo[1200], cat[1200];
    snprintf(expo, sizeof expo, "%s/exposure.fits", dir);
    snprintf(cat, sizeof cat, "%s/catalog.fits", dir);
    tide_ctx *ctx = tide_cli_make_ctx(&c, cmd);
    if (!ctx)
        return 1;
    double sim_s = 0;
    int st = make_exposure(ctx, (int)nccd, w, h, nstars, expo, &sim_s);
    tide_config *cfg = NULL;
    tide_config_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.default_path = "";
    if (!st)
        st = tide_config_load(&cfg, &lo);
    tide_reduce_job *job = NULL;
    if (!st)
        st = tide_reduce_job_create(ctx, cfg, &job);
    double ms[TIDE_BENCH_MAX_REPEATS];
    long long nsrc = 0;
    for (int r = 0; !st && r < warmup + repeats; r++) {
        tide_reduce_request rq;
        tide_reduce_request_init(&rq);
        rq.frame = expo, rq.catalog = cat;
        rq.have_bias = 1, rq.bias = 1000; /* the simulator's */
        tide_reduce_mosaic_report rep;
        const double t0 = tide_bench_now_ms();
        st = tide_reduce_job_run_mosaic(job, &rq, &rep);
        if (r >= warmup)
            ms[r - warmup] = tide_bench_now_ms() - t0;
        nsrc = 0;
        for (int k = 0; !st && k < rep.nccd; k++)
            nsrc += (long long)rep.ccd[k].rep.res.n_sources;
        if (!st)
            tide_reduce_mosaic_report_free(&rep);
    }
    int rc = 0;
    if (st) {
        rc = tide_cli_fail(cmd, st);
    } else {
        double lo_ms, hi_ms;
        tide_bench_range(ms, (int)repeats, &lo_ms, &hi_ms);
        const double med = tide_bench_median(ms, (int)repeats);
        FILE *f = json && strcmp(json, "-") ? fopen(json, "w") : json ? stdout : NULL;
        printf("mosaic: %lld CCDs of %lld x %lld (%.0f Mpix), simulated in %.1f s\n"
               "reduce file to catalog: median %.1f ms (%.1f..%.1f) over %lld runs, %lld "
               "sources, %s backend (%s); target on the GPU <= 1500 ms\n",
               nccd, w, h, (double)(nccd * w * h) / 1e6, sim_s, med, lo_ms, hi_ms, repeats, nsrc,
               tide_backend_name(ctx->backend), ctx->device_name);
        if (f) {
            char when[32];
            tide_bench_utc_now(when);
            fprintf(f,
                    "{\"bench\": \"mosaic\", \"date\": \"%s\", \"backend\": \"%s\", "
                    "\"ccds\": %lld, \"width\": %lld, \"height\": %lld, \"sources\": %lld, "
                    "\"ms_median\": %.3f, \"ms_min\": %.3f, \"ms_max\": %.3f, "
                    "\"target_ms\": 1500}\n",
                    when, tide_backend_name(ctx->backend), nccd, w, h, nsrc, med, lo_ms, hi_ms);
            if (f != stdout)
                fclose(f);
        }
    }
    tide_reduce_job_destroy(job);
    tide_config_free(cfg);
    tide_ctx_destroy(ctx);
    if (dir == tmp) { /* ours: leave nothing behind */
        unlink(expo), unlink(cat), rmdir(tmp);
    }
    return rc;
}
