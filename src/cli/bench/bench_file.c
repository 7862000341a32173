/* bench_file.c — `tide bench --file FRAME` (issue 19): FRAME reduced file to catalog on one
 * warm job, as a long-running process (the worker) reduces one frame after another: read (and
 * decode, when tile-compressed), reduce, write the FITS catalog; the median of repeats after a
 * warm-up, with the read, reduce and write parts. The figure the issue asks of a 151 MP
 * RICE-compressed frame (<= 250 ms on the H200) is this one; scripts/gpu/run.sh's "file" mode
 * runs it on that frame, plain and compressed, with the GPU and the CPU tile decoders. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "cli/cli.h"

static const char *help =
    "usage: tide bench --file FRAME [--repeats R] [--warmup W] [--bias ADU] [--catalog FILE]\n"
    "                  [--json FILE]\n\n"
    "Time `tide reduce FRAME -o CATALOG` on one warm job (the context, its device pools and\n"
    "FFT plans kept from run to run, as the worker keeps them): reading and decoding FRAME\n"
    "(plain or tile-compressed), the reduction and the catalog's writing, the median of R runs\n"
    "after W warm-ups. Target on the GPU (issue 19): a 151 MP RICE-compressed frame in\n"
    "<= 250 ms. TIDE_GPU_TILE_DECODE=0 decodes tiles on the host instead.\n\n"
    "  --repeats R     timed runs [5]\n"
    "  --warmup W      untimed runs first [1]\n"
    "  --bias ADU      zero level still in the frame (tide sim's is 1000) [the header's]\n"
    "  --catalog FILE  where the catalog goes [a new file in /tmp, removed]\n";

/* The parts of the runs, milliseconds per run. */
typedef struct file_runs {
    double total[TIDE_BENCH_MAX_REPEATS], read[TIDE_BENCH_MAX_REPEATS];
    double reduce[TIDE_BENCH_MAX_REPEATS], write[TIDE_BENCH_MAX_REPEATS];
} file_runs;

/* Warm-ups then @p repeats timed runs of FRAME into CATALOG on @p job. */
static int run_frames(tide_reduce_job *job, const char *frame, const char *catalog, int have_bias,
                      double bias, int warmup, int repeats, file_runs *fr, long long *nsrc) {
    int st = 0;
    for (int r = 0; !st && r < warmup + repeats; r++) {
        tide_reduce_request rq;
        tide_reduce_request_init(&rq);
        rq.frame = frame, rq.catalog = catalog;
        rq.have_bias = have_bias, rq.bias = bias;
        rq.cal.store = ""; /* file to catalog: no store */
        tide_reduce_report rep;
        const double t0 = tide_bench_now_ms();
        st = tide_reduce_job_run(job, &rq, &rep);
        const double ms = tide_bench_now_ms() - t0;
        if (st)
            break;
        if (r >= warmup) {
            const int k = r - warmup;
            fr->total[k] = ms, fr->read[k] = rep.ms_read;
            fr->reduce[k] = rep.ms_reduce, fr->write[k] = rep.ms_outputs;
        }
        *nsrc = (long long)rep.res.n_sources;
        tide_reduce_report_free(&rep);
    }
    return st;
}

/* Print the medians (and the JSON line to @p json, when given). */
static void report(const tide_ctx *ctx, const char *frame, int repeats, long long nsrc,
                   file_runs *fr, const char *json) {
    double lo, hi;
    tide_bench_range(fr->total, repeats, &lo, &hi);
    const double med = tide_bench_median(fr->total, repeats);
    const double rd = tide_bench_median(fr->read, repeats);
    const double rc = tide_bench_median(fr->reduce, repeats);
    const double wr = tide_bench_median(fr->write, repeats);
    const char *dec = getenv("TIDE_GPU_TILE_DECODE");
    printf("%s: file to catalog median %.1f ms (%.1f..%.1f) over %d runs: read %.1f, reduce "
           "%.1f, outputs %.1f; %lld sources, %s backend (%s), TIDE_GPU_TILE_DECODE=%s\n",
           frame, med, lo, hi, repeats, rd, rc, wr, nsrc, tide_backend_name(ctx->backend),
           ctx->device_name, dec ? dec : "(unset)");
    FILE *f = json && strcmp(json, "-") ? fopen(json, "w") : json ? stdout : NULL;
    if (!f)
        return;
    char when[32];
    tide_bench_utc_now(when);
    fprintf(f,
            "{\"bench\": \"file\", \"date\": \"%s\", \"backend\": \"%s\", \"frame\": \"%s\", "
            "\"sources\": %lld, \"ms_median\": %.3f, \"ms_min\": %.3f, \"ms_max\": %.3f, "
            "\"ms_read\": %.3f, \"ms_reduce\": %.3f, \"ms_outputs\": %.3f}\n",
            when, tide_backend_name(ctx->backend), frame, nsrc, med, lo, hi, rd, rc, wr);
    if (f != stdout)
        fclose(f);
}

int tide_bench_file(int argc, char **argv) {
    const char *cmd = "bench", *json = NULL, *frame = NULL, *catalog = NULL;
    tide_cli_common c;
    tide_cli_common_init(&c);
    long long repeats = 5, warmup = 1;
    int have_bias = 0;
    double bias = 0;
    for (int i = 1; i < argc; i++) {
        const int r = tide_bench_common_arg(cmd, "--file", help, &c, argc, argv, &i, &json);
        if (r == TIDE_BENCH_ARG_EXIT_OK)
            return 0;
        if (r == TIDE_BENCH_ARG_EXIT_USAGE)
            return 2;
        if (r == TIDE_BENCH_ARG_TAKEN)
            continue;
        if (argv[i][0] != '-' && !frame) {
            frame = argv[i];
            continue;
        }
        int t =
            tide_bench_int_opt(argc, argv, &i, "--repeats", 1, TIDE_BENCH_MAX_REPEATS, &repeats);
        if (!t)
            t = tide_bench_int_opt(argc, argv, &i, "--warmup", 0, TIDE_BENCH_MAX_REPEATS, &warmup);
        if (!t && !strcmp(argv[i], "--catalog") && i + 1 < argc)
            catalog = argv[++i], t = 1;
        if (!t && !strcmp(argv[i], "--bias") && i + 1 < argc) {
            char *end;
            bias = strtod(argv[++i], &end);
            if (*end)
                return tide_cli_usage_error(cmd, "--bias needs a number, not '%s'", argv[i]);
            have_bias = 1, t = 1;
        }
        if (t < 0)
            return 2;
        if (!t)
            return tide_cli_usage_error(cmd, "unknown option '%s' for --file", argv[i]);
    }
    if (!frame)
        return tide_cli_usage_error(cmd, "--file needs a FRAME");
    char tmp[64] = "/tmp/tide-bench-file-XXXXXX", cat[128];
    if (!catalog) {
        if (!mkdtemp(tmp))
            return tide_cli_fail(cmd, tide_error(TIDE_E_IO, "cannot make a directory in /tmp"));
        snprintf(cat, sizeof cat, "%s/catalog.fits", tmp);
    }
    tide_ctx *ctx = tide_cli_make_ctx(&c, cmd);
    if (!ctx)
        return 1;
    tide_config *cfg = NULL;
    tide_config_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.default_path = "";
    int st = tide_config_load(&cfg, &lo);
    tide_reduce_job *job = NULL;
    if (!st)
        st = tide_reduce_job_create(ctx, cfg, &job);
    file_runs fr;
    long long nsrc = 0;
    if (!st)
        st = run_frames(job, frame, catalog ? catalog : cat, have_bias, bias, (int)warmup,
                        (int)repeats, &fr, &nsrc);
    const int rc = st ? tide_cli_fail(cmd, st) : 0;
    if (!st)
        report(ctx, frame, (int)repeats, nsrc, &fr, json);
    tide_reduce_job_destroy(job);
    tide_config_free(cfg);
    tide_ctx_destroy(ctx);
    if (!catalog) /* ours: leave nothing behind */
        unlink(cat), rmdir(tmp);
    return rc;
}
