/* bench_stack.c — `tide bench --stack FILE...`: N frames read one after the other beside
 * the same N in one tide_fits_read_stack call (issue 19, batched ingestion).
 *
 * Figures, each the median of --repeats runs after --warmup, for --frames N specs taken
 * from the FILEs in turn (a FILE may be given with a selector, FILE[1]):
 *   - to the host: N tide_fits_read_image calls on the context's threads, then one stack
 *     call;
 *   - on a machine with a GPU, to the device: N tide_fits_read_image_at(TIDE_DEVICE) calls,
 *     then one stack call with TIDE_CUFILE=0 (the pinned path), one with TIDE_CUFILE=1
 *     (cuFile where GPUDirect Storage serves the file system), and one gathering the frames
 *     into a contiguous device block; with the path each frame took.
 * The files are read once untimed first, so every figure reads from the page cache unless
 * the system drops it: this times the pipeline's own work, not the disk's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "cli/cli.h"
#include "tide/ctx.h"
#include "tide/fits.h"
#include "tide/memory.h"
#include "tide/status.h"

static const char *help =
    "usage: tide bench --stack FILE... [OPTIONS]\n\n"
    "Time --frames N frames (the FILEs in turn) read one by one and in one\n"
    "tide_fits_read_stack call, to the host and, with a GPU, to the device (the pinned path,\n"
    "cuFile, a contiguous stack); print ms, Mpix/s and the path each frame took.\n\n"
    "options:\n"
    "  --frames N    frames per run [8]\n"
    "  --repeats N   timed runs per figure; the median is reported [5]\n"
    "  --warmup N    untimed runs first [1]\n"
    "  --json FILE   also write the results as JSON to FILE ('-' = stdout)\n";

enum { MAX_FILES = 64 };

typedef struct stack_arg {
    const char **specs;
    int n;
    tide_location where;
    int flags;
    char paths[160]; /* the last stack call's paths, "pinned x8" */
} stack_arg;

static int do_serial(tide_ctx *ctx, void *p) {
    stack_arg *a = p;
    int st = 0;
    for (int i = 0; i < a->n && !st; i++) {
        tide_image im;
        st = tide_fits_read_image_at(ctx, a->specs[i], &im, NULL, a->where);
        tide_image_free(ctx, &im);
    }
    return st ? st : tide_sync(ctx);
}

static int do_stack(tide_ctx *ctx, void *p) {
    stack_arg *a = p;
    tide_fits_stack s;
    const int st = tide_fits_read_stack(ctx, a->specs, a->n, a->where, a->flags, &s);
    if (st)
        return st;
    int count[4] = {0, 0, 0, 0};
    for (int i = 0; i < s.n; i++)
        count[s.path[i]]++;
    size_t len = 0;
    a->paths[0] = 0;
    for (int k = 0; k < 4; k++)
        if (count[k])
            len +=
                (size_t)snprintf(a->paths + len, sizeof a->paths - len, "%s%s x%d", len ? ", " : "",
                                 tide_fits_path_name((tide_fits_path)k), count[k]);
    tide_fits_stack_free(ctx, &s);
    return 0;
}

/* Parse the command line: 0 go on, else the exit status. */
static int parse(int argc, char **argv, tide_cli_common *c, const char **files, int *nfiles,
                 long long *frames, int *repeats, int *warmup, const char **json) {
    long long v;
    for (int i = 1; i < argc; i++) {
        const int r =
            tide_bench_common_arg("bench --stack", "--stack", help, c, argc, argv, &i, json);
        if (r == TIDE_BENCH_ARG_EXIT_OK || r == TIDE_BENCH_ARG_EXIT_USAGE)
            return r == TIDE_BENCH_ARG_EXIT_OK ? 0 : 2;
        if (r == TIDE_BENCH_ARG_TAKEN)
            continue;
        int t = tide_bench_int_opt(argc, argv, &i, "--frames", 1, 4096, frames);
        if (!t && (t = tide_bench_int_opt(argc, argv, &i, "--repeats", 1, TIDE_BENCH_MAX_REPEATS,
                                          &v)) == 1)
            *repeats = (int)v;
        if (!t && (t = tide_bench_int_opt(argc, argv, &i, "--warmup", 0, 100, &v)) == 1)
            *warmup = (int)v;
        if (t < 0)
            return 2;
        if (t)
            continue;
        if (argv[i][0] == '-' || *nfiles >= MAX_FILES) {
            fprintf(stderr, "tide bench --stack: unknown option or too many files '%s'\n", argv[i]);
            return 2;
        }
        files[(*nfiles)++] = argv[i];
    }
    if (!*nfiles) {
        fprintf(stderr, "tide bench --stack: give the FILEs (see --help)\n");
        return 2;
    }
    return -1;
}

/* One figure: run @p fn, print its line. */
static int figure(tide_ctx *ctx, int repeats, int warmup, const char *what, tide_bench_fn fn,
                  stack_arg *a, double mpix, double *ms) {
    *ms = -1;
    a->paths[0] = 0;
    const int st = tide_bench_time(ctx, repeats, warmup, "bench.stack", fn, a, ms);
    if (st) {
        fprintf(stderr, "tide bench --stack: %s: %s\n", what, tide_error_detail());
        return st;
    }
    printf("  %-34s %9.2f ms  %8.1f Mpix/s%s%s\n", what, *ms, mpix / *ms * 1e3,
           a->paths[0] ? "  " : "", a->paths);
    return 0;
}

int tide_bench_stack(int argc, char **argv) {
    tide_cli_common c;
    tide_cli_common_init(&c);
    const char *files[MAX_FILES], *json = NULL;
    int nfiles = 0, repeats = 5, warmup = 1;
    long long frames = 8;
    const int rc = parse(argc, argv, &c, files, &nfiles, &frames, &repeats, &warmup, &json);
    if (rc >= 0)
        return rc;
    const char **specs = malloc(sizeof *specs * (size_t)frames);
    if (!specs)
        return 1;
    for (long long i = 0; i < frames; i++)
        specs[i] = files[i % nfiles];
    int64_t npix = 0;
    int st = 0;
    for (int i = 0; i < nfiles && !st; i++) { /* sizes, and the files into the page cache */
        tide_image im;
        st = tide_fits_read_image(NULL, files[i], &im, NULL);
        npix += st ? 0 : im.width * im.height * ((frames - i + nfiles - 1) / nfiles);
        tide_image_free(NULL, &im);
    }
    c.ctx_opt.backend = TIDE_BACKEND_CPU;
    tide_ctx *ctx = st ? NULL : tide_cli_make_ctx(&c, "bench --stack");
    if (!ctx) {
        if (st)
            fprintf(stderr, "tide bench --stack: %s\n", tide_error_detail());
        free(specs);
        return 1;
    }
    const double mp = (double)npix / 1e6;
    double ms[6] = {-1, -1, -1, -1, -1, -1};
    char paths[3][160] = {"", "", ""};
    stack_arg a = {specs, (int)frames, TIDE_HOST, 0, ""};
    printf("%lld frames of %d file(s), %.1f Mpix in all, %d threads\n", frames, nfiles, mp,
           ctx->threads);
    st = figure(ctx, repeats, warmup, "host, one by one", do_serial, &a, mp, &ms[0]);
    if (!st)
        st = figure(ctx, repeats, warmup, "host, one stack call", do_stack, &a, mp, &ms[1]);
    tide_ctx *gpu = NULL;
    c.ctx_opt.backend = TIDE_BACKEND_CUDA;
    if (!st && tide_cuda_available(NULL) && (gpu = tide_cli_make_ctx(&c, "bench --stack"))) {
        a.where = TIDE_DEVICE;
        st = figure(gpu, repeats, warmup, "device, one by one", do_serial, &a, mp, &ms[2]);
        const char *what[3] = {"device, stack, TIDE_CUFILE=0", "device, stack, TIDE_CUFILE=1",
                               "device, contiguous stack"};
        for (int k = 0; k < 3 && !st; k++) {
            setenv("TIDE_CUFILE", k ? "1" : "0", 1);
            a.flags = k == 2 ? TIDE_FITS_STACK_CONTIGUOUS : 0;
            st = figure(gpu, repeats, warmup, what[k], do_stack, &a, mp, &ms[3 + k]);
            snprintf(paths[k], sizeof paths[k], "%s", a.paths);
        }
        tide_ctx_destroy(gpu);
    }
    FILE *j = st || !json ? NULL : strcmp(json, "-") ? fopen(json, "w") : stdout;
    if (j) {
        fprintf(j,
                "{\"frames\": %lld, \"files\": %d, \"mpix\": %.3f, \"threads\": %d, "
                "\"host_serial_ms\": %.3f, \"host_stack_ms\": %.3f, \"device_serial_ms\": %.3f, "
                "\"device_stack_pinned_ms\": %.3f, \"device_stack_cufile_ms\": %.3f, "
                "\"device_stack_contiguous_ms\": %.3f, \"paths_pinned\": \"%s\", "
                "\"paths_cufile\": \"%s\"}\n",
                frames, nfiles, mp, ctx->threads, ms[0], ms[1], ms[2], ms[3], ms[4], ms[5],
                paths[0], paths[1]);
        if (j != stdout)
            fclose(j);
    }
    tide_ctx_destroy(ctx);
    free(specs);
    return st ? 1 : 0;
}
