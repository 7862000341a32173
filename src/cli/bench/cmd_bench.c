/* cmd_bench.c — `tide bench`: time the compute primitives and put each figure beside its
 * floor (DESIGN §9), measured in the same run:
 *   - FFT correlation with 1 and with 5 kernels, beside (a) one R2C plus one C2R per kernel of
 *     the same padded size through the bare cuFFT/FFTW plans and (b) the bytes it must move
 *     (read the frame, write the outputs) over the measured copy bandwidth;
 *   - reductions (stats, median, sigma clip) beside one read of the frame over the bandwidth;
 *   - host<->device transfers of the frame (pinned memory), separately.
 * Timing uses tide_timer (CUDA events on the context's stream, a monotonic clock on the CPU);
 * each figure is the median of --repeats runs after --warmup untimed ones. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tide/outfile.h"
#include "bench_diff.h"
#include "bench_reduce.h"
#include "bench_util.h"
#include "cli/cli.h"

#define MAX_SIZES 16
#define NK_MAX 5

typedef struct corr_res {
    int nk;
    double setup_ms, ms, fft_floor_ms, bytes_floor_ms;
} corr_res;

typedef struct size_res {
    int64_t w, h, px, py;
    double r2c_ms, c2r_ms, h2d_ms, d2h_ms;
    corr_res corr[2];
    double stats_ms, median_ms, sigclip_ms, read_floor_ms;
    size_t peak_bytes;
} size_res;

typedef struct bench_opts {
    int64_t sizes[MAX_SIZES][2];
    int nsizes, repeats, warmup, kernel, measure, reduce;
    int pipeline, stars_sparse, stars_dense; /* --reduce: the whole reduction (bench_reduce.c) */
    const char *json_path;
} bench_opts;

static const char *help =
    "usage: tide bench [OPTIONS]\n\n"
    "Time FFT correlation (1 and 5 kernels), the bare FFT pair and the reductions at each frame\n"
    "size, beside their floors: the FFTs of the padded size and bytes moved over the copy\n"
    "bandwidth, both measured in the same run. Host<->device transfers are timed separately.\n\n"
    "options:\n"
    "  --sizes WxH[,WxH...]  frame sizes [2048x2048,3191x2129,4787x3193,7100x5325,14200x10650]\n"
    "  --repeats N           timed runs per figure; the median is reported [5]\n"
    "  --warmup N            untimed runs first [1]\n"
    "  --kernel K            odd kernel size K x K [15]\n"
    "  --fft-measure         plan FFTW with FFTW_MEASURE instead of FFTW_ESTIMATE\n"
    "  --no-reduce           skip the reductions\n"
    "  --xmatch              instead, benchmark the crossmatch (tide bench --xmatch --help)\n"
    "  --store               instead, benchmark catalog-store inserts (tide bench --store --help)\n"
    "  --calib               instead, time the complete reduce with calibration and store\n"
    "                        (tide bench --calib --help)\n"
    "  --worker              instead, the worker's sustained rate into a store beside cold\n"
    "                        tide reduce (tide bench --worker --help)\n"
    "  --decode FILE         instead, time tide's tile decoder beside cfitsio on FILE\n"
    "                        (tide bench --decode --help)\n"
    "  --stack FILE...       instead, time N frames read one by one and in one stack call,\n"
    "                        to the host and the device (tide bench --stack --help)\n"
    "  --mosaic              instead, time the reduction of a simulated 62-CCD exposure\n"
    "                        (tide bench --mosaic --help)\n"
    "  --file FRAME          instead, time FRAME reduced file to catalog on a warm job\n"
    "                        (tide bench --file --help)\n"
    "  --file FRAME          instead, time FRAME reduced file to catalog on a warm job\n"
    "                        (tide bench --file --help)\n"
    "  --encode FILE         instead, time tide's RICE_1 tile encoder beside cfitsio's (fpack's)\n"
    "                        on FILE's image (tide bench --encode --help)\n"
    "  --rb                  instead, time real/bogus scoring of 10,000 candidates\n"
    "                        (tide bench --rb --help)\n"
    "  --diff                instead, time the difference pipeline (tide diff) per stage and\n"
    "                        end to end, and its parts alone, on a simulated pair\n"
    "                        (tide bench --diff --help)\n"
    "  --reduce              instead, time the whole reduction (tide reduce) per stage and end\n"
    "                        to end on simulated frames, beside its floors and targets\n"
    "  --stars-sparse N      --reduce: stars on each sparse frame; 0 = none [300]\n"
    "  --stars-dense N       --reduce: stars on a 14200x10650 dense frame, scaled with the\n"
    "                        area (at least 2000) on smaller ones; 0 = none [130000]\n"
    "  --json FILE           also write the results as JSON to FILE ('-' = stdout)\n";

/* Median ms of o->repeats timed calls after o->warmup untimed ones (bench_util.c). */
static int time_median(tide_ctx *ctx, const bench_opts *o, const char *stage, tide_bench_fn fn,
                       void *arg, double *ms) {
    return tide_bench_time(ctx, o->repeats, o->warmup, stage, fn, arg, ms);
}

/* ---- the timed operations --------------------------------------------------------------- */

typedef struct copy_arg {
    void *dst, *src;
    int dst_dev, src_dev;
    size_t bytes;
    int threads;
} copy_arg;

static int do_copy(tide_ctx *ctx, void *p) {
    copy_arg *a = p;
    if (a->dst_dev || a->src_dev)
        return tide_memcpy(ctx, a->dst, a->dst_dev, a->src, a->src_dev, a->bytes);
    /* Host: one memcpy per thread so the figure is the machine's bandwidth, not one core's. */
    const size_t chunk = (a->bytes + (size_t)a->threads - 1) / (size_t)a->threads;
#pragma omp parallel for num_threads(a->threads) schedule(static)
    for (int t = 0; t < a->threads; t++) {
        size_t off = (size_t)t * chunk;
        if (off < a->bytes)
            memcpy((char *)a->dst + off, (const char *)a->src + off,
                   off + chunk <= a->bytes ? chunk : a->bytes - off);
    }
    return TIDE_OK;
}

typedef struct corr_arg {
    tide_correlator *c;
    const tide_image *in;
    tide_image *out;
} corr_arg;

static int do_corr(tide_ctx *ctx, void *p) {
    corr_arg *a = p;
    return tide_correlator_run(ctx, a->c, a->in, a->out);
}

typedef struct reduce_arg {
    const tide_image *im;
    int which; /* 0 stats, 1 median, 2 sigma clip */
} reduce_arg;

static int do_reduce(tide_ctx *ctx, void *p) {
    reduce_arg *a = p;
    if (a->which == 0) {
        tide_stats s;
        return tide_reduce_stats(ctx, a->im, TIDE_REDUCE_ALL_BITS, &s);
    }
    if (a->which == 1) {
        double m;
        return tide_reduce_median(ctx, a->im, TIDE_REDUCE_ALL_BITS, &m);
    }
    tide_sigclip_result r;
    return tide_reduce_sigma_clip(ctx, a->im, TIDE_REDUCE_ALL_BITS, NULL, &r);
}

/* ---- measurements ----------------------------------------------------------------------- */

/* Copy bandwidth in bytes per millisecond, counting bytes read plus bytes written. */
static int measure_bandwidth(tide_ctx *ctx, const bench_opts *o, size_t bytes, double *bpms) {
    int dev = ctx->backend == TIDE_BACKEND_CUDA;
    copy_arg a = {NULL, NULL, dev, dev, bytes, ctx->threads > 0 ? ctx->threads : 1};
    void **ends[2] = {&a.src, &a.dst};
    int st = 0;
    for (int k = 0; k < 2 && !st; k++)
        st = dev ? tide_device_alloc(ctx, bytes, ends[k])
                 : tide_host_pinned_alloc(ctx, bytes, ends[k]);
    if (!st && !dev) {
        memset(a.src, 1, bytes); /* touch the pages outside the timing */
        memset(a.dst, 0, bytes);
    } else if (!st) {
        st = tide_memcpy(ctx, a.dst, 1, a.src, 1, bytes); /* first touch */
    }
    double ms = 0.0;
    if (!st)
        st = time_median(ctx, o, "bench.memcpy", do_copy, &a, &ms);
    if (!st)
        *bpms = 2.0 * (double)bytes / (ms > 0 ? ms : 1e-9);
    if (dev) {
        tide_device_free(ctx, a.src);
        tide_device_free(ctx, a.dst);
    } else {
        tide_host_pinned_free(ctx, a.src);
        tide_host_pinned_free(ctx, a.dst);
    }
    return st;
}

int tide_bench_copy_bandwidth(tide_ctx *ctx, int repeats, int warmup, size_t bytes, double *bpms) {
    bench_opts o;
    memset(&o, 0, sizeof o);
    o.repeats = repeats;
    o.warmup = warmup;
    return measure_bandwidth(ctx, &o, bytes, bpms);
}

static void make_kernels(float *k, int n, int ksz) {
    int r = ksz / 2;
    for (int i = 0; i < n; i++) {
        double s = 1.0 + 0.5 * i, sum = 0.0;
        float *ki = k + (size_t)i * (size_t)(ksz * ksz);
        for (int y = -r; y <= r; y++)
            for (int x = -r; x <= r; x++)
                sum += ki[(y + r) * ksz + x + r] = (float)exp(-0.5 * (x * x + y * y) / (s * s));
        for (int j = 0; j < ksz * ksz; j++)
            ki[j] = (float)(ki[j] / sum);
    }
}

static int bench_corr(tide_ctx *ctx, const bench_opts *o, const tide_image *in, int nk, double bpms,
                      size_res *r, corr_res *cr) {
    float *kbuf = malloc(sizeof(float) * (size_t)(NK_MAX * o->kernel * o->kernel));
    if (!kbuf)
        return tide_error(TIDE_E_NOMEM, "bench kernels");
    make_kernels(kbuf, nk, o->kernel);
    const float *ks[NK_MAX];
    for (int k = 0; k < nk; k++)
        ks[k] = kbuf + (size_t)k * (size_t)(o->kernel * o->kernel);
    tide_image out[NK_MAX];
    memset(out, 0, sizeof out);
    corr_arg a = {NULL, in, out};
    tide_timer tm;
    cr->nk = nk;
    int st = tide_timer_start(ctx, &tm, "bench.corr_setup");
    if (!st)
        st = tide_correlator_create(ctx, in->width, in->height, nk, ks, o->kernel, o->kernel, NULL,
                                    &a.c);
    if (!st)
        st = tide_sync(ctx);
    if (!st)
        st = tide_timer_stop(ctx, &tm, &cr->setup_ms);
    for (int k = 0; k < nk && !st; k++)
        st = tide_image_alloc(ctx, &out[k], in->width, in->height, in->location, 0);
    if (!st)
        tide_correlator_shape(a.c, &r->px, &r->py);
    if (!st)
        st = time_median(ctx, o, "bench.correlate", do_corr, &a, &cr->ms);
    size_t peak = 0;
    tide_device_usage(ctx, NULL, &peak);
    if (peak > r->peak_bytes)
        r->peak_bytes = peak;
    double bytes = (double)(1 + nk) * (double)(in->width * in->height) * sizeof(float);
    cr->bytes_floor_ms = bytes / bpms;
    for (int k = 0; k < nk; k++)
        tide_image_free(ctx, &out[k]);
    tide_correlator_free(ctx, a.c);
    free(kbuf);
    return st;
}

static int bench_transfers(tide_ctx *ctx, const bench_opts *o, const tide_image *host,
                           const tide_image *dev, size_res *r) {
    size_t bytes = (size_t)(host->width * host->height) * sizeof(float);
    void *pinned = NULL;
    int st = tide_host_pinned_alloc(ctx, bytes, &pinned);
    if (st)
        return st;
    memcpy(pinned, host->pix, bytes);
    copy_arg up = {dev->pix, pinned, 1, 0, bytes, 1}, down = {pinned, dev->pix, 0, 1, bytes, 1};
    st = time_median(ctx, o, "bench.h2d", do_copy, &up, &r->h2d_ms);
    if (!st)
        st = time_median(ctx, o, "bench.d2h", do_copy, &down, &r->d2h_ms);
    tide_host_pinned_free(ctx, pinned);
    return st;
}

static int bench_size(tide_ctx *ctx, const bench_opts *o, double bpms, size_res *r) {
    tide_image host = {0}, dev = {0};
    int st = tide_image_alloc(ctx, &host, r->w, r->h, TIDE_HOST, 0);
    if (st)
        return st;
    uint32_t s = 2024u;
    for (int64_t i = 0; i < r->w * r->h; i++) {
        s = s * 1664525u + 1013904223u;
        host.pix[i] = 100.0f + (float)(s >> 8) * (1.0f / 16777216.0f);
    }
    const tide_image *in = &host;
    int cuda = ctx->backend == TIDE_BACKEND_CUDA;
    tide_device_reset_peak(ctx);
    if (cuda) {
        st = tide_image_clone(ctx, &dev, &host, TIDE_DEVICE);
        in = &dev;
        if (!st)
            st = bench_transfers(ctx, o, &host, &dev, r);
    }
    if (!st)
        st = bench_corr(ctx, o, in, 1, bpms, r, &r->corr[0]);
    if (!st)
        st = bench_corr(ctx, o, in, NK_MAX, bpms, r, &r->corr[1]);
    if (!st)
        st = tide_bench_fft_pair(ctx, r->px, r->py, o->repeats, o->warmup, &r->r2c_ms, &r->c2r_ms);
    for (int i = 0; i < 2; i++)
        r->corr[i].fft_floor_ms = r->r2c_ms + r->corr[i].nk * r->c2r_ms;
    r->read_floor_ms = (double)(r->w * r->h) * sizeof(float) / (bpms / 2.0);
    if (!st && o->reduce) {
        reduce_arg a = {in, 0};
        st = time_median(ctx, o, "bench.stats", do_reduce, &a, &r->stats_ms);
        a.which = 1;
        if (!st)
            st = time_median(ctx, o, "bench.median", do_reduce, &a, &r->median_ms);
        a.which = 2;
        if (!st)
            st = time_median(ctx, o, "bench.sigclip", do_reduce, &a, &r->sigclip_ms);
    }
    tide_image_free(ctx, &dev);
    tide_image_free(ctx, &host);
    /* Each size is its own workload: drop its plans and buffers before the next. */
    tide_fft_cache_clear(ctx);
    return st;
}

/* ---- output ----------------------------------------------------------------------------- */

static void print_text(FILE *f, const tide_ctx *ctx, const bench_opts *o, double bpms,
                       const size_res *r, int n) {
    fprintf(f, "tide bench: %s on %s; median of %d after %d warm-up; kernel %dx%d\n",
            tide_backend_name(ctx->backend), ctx->device_name, o->repeats, o->warmup, o->kernel,
            o->kernel);
    fprintf(f, "copy bandwidth %.1f GB/s (read + write)\n\n", bpms * 1e-6);
    fprintf(f, "%-12s %-12s %8s %8s | %9s %9s %9s | %9s %9s %9s", "frame", "padded", "R2C ms",
            "C2R ms", "corr1 ms", "fft floor", "B floor", "corr5 ms", "fft floor", "B floor");
    if (ctx->backend == TIDE_BACKEND_CUDA)
        fprintf(f, " | %7s %7s", "h2d ms", "d2h ms");
    if (o->reduce)
        fprintf(f, " | %8s %8s %8s %8s", "stats", "median", "sigclip", "rd floor");
    fputc('\n', f);
    for (int i = 0; i < n; i++) {
        char a[32], b[32];
        snprintf(a, sizeof a, "%lldx%lld", (long long)r[i].w, (long long)r[i].h);
        snprintf(b, sizeof b, "%lldx%lld", (long long)r[i].px, (long long)r[i].py);
        fprintf(f, "%-12s %-12s %8.3f %8.3f | %9.3f %9.3f %9.3f | %9.3f %9.3f %9.3f", a, b,
                r[i].r2c_ms, r[i].c2r_ms, r[i].corr[0].ms, r[i].corr[0].fft_floor_ms,
                r[i].corr[0].bytes_floor_ms, r[i].corr[1].ms, r[i].corr[1].fft_floor_ms,
                r[i].corr[1].bytes_floor_ms);
        if (ctx->backend == TIDE_BACKEND_CUDA)
            fprintf(f, " | %7.3f %7.3f", r[i].h2d_ms, r[i].d2h_ms);
        if (o->reduce)
            fprintf(f, " | %8.3f %8.3f %8.3f %8.3f", r[i].stats_ms, r[i].median_ms, r[i].sigclip_ms,
                    r[i].read_floor_ms);
        fputc('\n', f);
    }
}

static void json_corr(FILE *f, const corr_res *c) {
    fprintf(f,
            "{\"kernels\": %d, \"ms\": %.6g, \"setup_ms\": %.6g, \"fft_floor_ms\": %.6g, "
            "\"bytes_floor_ms\": %.6g, \"ratio_to_fft_floor\": %.4g}",
            c->nk, c->ms, c->setup_ms, c->fft_floor_ms, c->bytes_floor_ms,
            c->fft_floor_ms > 0 ? c->ms / c->fft_floor_ms : 0.0);
}

static void print_json(FILE *f, const tide_ctx *ctx, const bench_opts *o, double bpms,
                       const size_res *r, int n) {
    char date[32];
    tide_bench_utc_now(date);
    fprintf(f,
            "{\n  \"tide_version\": \"%s\",\n  \"date\": \"%s\",\n  \"backend\": \"%s\",\n"
            "  \"device\": ",
            TIDE_VERSION_STRING, date, tide_backend_name(ctx->backend));
    tide_cli_json_string(f, ctx->device_name);
    fprintf(f,
            ",\n  \"threads\": %d,\n  \"repeats\": %d,\n  \"warmup\": %d,\n"
            "  \"kernel_size\": %d,\n  \"fft_effort\": \"%s\",\n"
            "  \"copy_bandwidth_GBps\": %.6g,\n  \"sizes\": [",
            ctx->threads, o->repeats, o->warmup, o->kernel, o->measure ? "measure" : "estimate",
            bpms * 1e-6);
    for (int i = 0; i < n; i++) {
        const size_res *s = &r[i];
        fprintf(f,
                "%s\n    {\"width\": %lld, \"height\": %lld, \"megapixels\": %.4g, "
                "\"padded\": [%lld, %lld],\n     \"fft_r2c_ms\": %.6g, \"fft_c2r_ms\": %.6g, "
                "\"fft_pair_ms\": %.6g,\n     \"correlate\": [",
                i ? "," : "", (long long)s->w, (long long)s->h, (double)(s->w * s->h) * 1e-6,
                (long long)s->px, (long long)s->py, s->r2c_ms, s->c2r_ms, s->r2c_ms + s->c2r_ms);
        json_corr(f, &s->corr[0]);
        fputs(",\n                   ", f);
        json_corr(f, &s->corr[1]);
        fputs("],\n     \"transfer\": ", f);
        if (ctx->backend == TIDE_BACKEND_CUDA) {
            double mb = (double)(s->w * s->h) * sizeof(float);
            fprintf(f,
                    "{\"bytes\": %.0f, \"h2d_ms\": %.6g, \"d2h_ms\": %.6g, "
                    "\"h2d_GBps\": %.6g, \"d2h_GBps\": %.6g, \"pinned\": true}",
                    mb, s->h2d_ms, s->d2h_ms, mb / s->h2d_ms * 1e-6, mb / s->d2h_ms * 1e-6);
        } else {
            fputs("null", f);
        }
        fputs(",\n     \"reduce\": ", f);
        if (o->reduce)
            fprintf(f,
                    "{\"stats_ms\": %.6g, \"median_ms\": %.6g, \"sigma_clip_ms\": %.6g, "
                    "\"read_floor_ms\": %.6g}",
                    s->stats_ms, s->median_ms, s->sigclip_ms, s->read_floor_ms);
        else
            fputs("null", f);
        fprintf(f, ",\n     \"peak_device_bytes\": %zu}", s->peak_bytes);
    }
    fputs("\n  ]\n}\n", f);
}

/* ---- the command ------------------------------------------------------------------------ */

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int tide_cmd_bench(int argc, char **argv) {
    const char *cmd = "bench";
    /* Other benchmark families have their own options and files. */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--xmatch"))
            return tide_bench_xmatch(argc, argv);
        if (!strcmp(argv[i], "--store"))
            return tide_bench_store(argc, argv);
        if (!strcmp(argv[i], "--calib"))
            return tide_bench_calib(argc, argv);
        if (!strcmp(argv[i], "--diff"))
            return tide_bench_diff(argc, argv);
        if (!strcmp(argv[i], "--worker"))
            return tide_bench_worker(argc, argv);
        if (!strcmp(argv[i], "--decode"))
            return tide_bench_decode(argc, argv);
        if (!strcmp(argv[i], "--stack"))
            return tide_bench_stack(argc, argv);
        if (!strcmp(argv[i], "--encode"))
            return tide_bench_encode(argc, argv);
        if (!strcmp(argv[i], "--rb"))
            return tide_bench_rb(argc, argv);
        if (!strcmp(argv[i], "--mosaic"))
            return tide_bench_mosaic(argc, argv);
        if (!strcmp(argv[i], "--file"))
            return tide_bench_file(argc, argv);
    }
    tide_cli_common c;
    tide_cli_common_init(&c);
    bench_opts o;
    memset(&o, 0, sizeof o);
    tide_bench_parse_sizes("2048x2048,3191x2129,4787x3193,7100x5325,14200x10650", o.sizes,
                           MAX_SIZES, 1, &o.nsizes);
    o.repeats = 5;
    o.warmup = 1;
    o.kernel = 15;
    o.reduce = 1;
    o.stars_sparse = 300;
    o.stars_dense = 130000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s\n%s", help, tide_cli_common_help);
            return 0;
        }
        if (!strcmp(a, "--json") && i + 1 < argc && argv[i + 1][0] != '-') {
            o.json_path = argv[++i];
            continue;
        }
        if (!strcmp(a, "--json") && i + 1 < argc && !strcmp(argv[i + 1], "-")) {
            o.json_path = argv[++i];
            continue;
        }
        int r = tide_cli_common_option(&c, cmd, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r > 0)
            continue;
        int takes = !strcmp(a, "--sizes") || !strcmp(a, "--repeats") || !strcmp(a, "--warmup") ||
                    !strcmp(a, "--kernel") || !strcmp(a, "--stars-sparse") ||
                    !strcmp(a, "--stars-dense");
        if (takes && i + 1 >= argc)
            return tide_cli_usage_error(cmd, "option %s needs a value", a);
        if (!strcmp(a, "--sizes")) {
            if (tide_bench_parse_sizes(argv[++i], o.sizes, MAX_SIZES, 1, &o.nsizes))
                return tide_cli_usage_error(cmd, "bad --sizes '%s' (WxH[,WxH...], at most %d)",
                                            argv[i], MAX_SIZES);
        } else if (!strcmp(a, "--repeats")) {
            if (parse_int(argv[++i], 1, 64, &o.repeats))
                return tide_cli_usage_error(cmd, "bad --repeats '%s' (1..64)", argv[i]);
        } else if (!strcmp(a, "--warmup")) {
            if (parse_int(argv[++i], 0, 100, &o.warmup))
                return tide_cli_usage_error(cmd, "bad --warmup '%s' (0..100)", argv[i]);
        } else if (!strcmp(a, "--kernel")) {
            if (parse_int(argv[++i], 1, 255, &o.kernel) || o.kernel % 2 == 0)
                return tide_cli_usage_error(cmd, "bad --kernel '%s' (odd, 1..255)", argv[i]);
        } else if (!strcmp(a, "--fft-measure")) {
            o.measure = 1;
        } else if (!strcmp(a, "--no-reduce")) {
            o.reduce = 0;
        } else if (!strcmp(a, "--reduce")) {
            o.pipeline = 1;
        } else if (!strcmp(a, "--stars-sparse") || !strcmp(a, "--stars-dense")) {
            if (parse_int(argv[i + 1], 0, 100000000,
                          !strcmp(a, "--stars-sparse") ? &o.stars_sparse : &o.stars_dense))
                return tide_cli_usage_error(cmd, "bad %s '%s' (0..100000000)", a, argv[i + 1]);
            i++;
        } else {
            return tide_cli_usage_error(cmd, "unknown option '%s'", a);
        }
    }
    if (o.pipeline && o.stars_sparse == 0 && o.stars_dense == 0)
        return tide_cli_usage_error(cmd, "--reduce with no stars, sparse or dense: no frame");
    tide_ctx *ctx = tide_cli_make_ctx(&c, cmd);
    if (!ctx)
        return 1;
    int st = o.measure ? tide_fft_set_effort(ctx, TIDE_FFT_MEASURE) : TIDE_OK;
    size_t biggest = 0;
    for (int i = 0; i < o.nsizes; i++) {
        size_t b = (size_t)(o.sizes[i][0] * o.sizes[i][1]) * sizeof(float);
        if (b > biggest)
            biggest = b;
    }
    /* Large enough to stream from memory rather than cache, small enough to stay cheap. */
    size_t bw_bytes = 4 * biggest;
    if (bw_bytes < ((size_t)64 << 20))
        bw_bytes = (size_t)64 << 20;
    if (bw_bytes > ((size_t)1 << 30))
        bw_bytes = (size_t)1 << 30;
    double bpms = 0.0;
    if (!st)
        st = measure_bandwidth(ctx, &o, bw_bytes, &bpms);
    if (o.pipeline) {
        int js = c.json || (o.json_path && !strcmp(o.json_path, "-"));
        tide_br_opts ro = {(const int64_t(*)[2])o.sizes,
                           o.nsizes,
                           o.repeats,
                           o.warmup,
                           o.stars_sparse,
                           o.stars_dense,
                           1,
                           o.json_path,
                           js};
        if (!st)
            st = tide_bench_reduce(ctx, &ro, bpms);
        tide_ctx_destroy(ctx);
        return st ? tide_cli_fail(cmd, st) : 0;
    }
    size_res res[MAX_SIZES];
    memset(res, 0, sizeof res);
    int done = 0;
    for (int i = 0; i < o.nsizes && !st; i++, done++) {
        res[i].w = o.sizes[i][0];
        res[i].h = o.sizes[i][1];
        tide_log(&ctx->log, TIDE_LOG_INFO, "bench", "frame %lld x %lld", (long long)res[i].w,
                 (long long)res[i].h);
        st = bench_size(ctx, &o, bpms, &res[i]);
        if (st)
            tide_error_prefix(st, "frame %lld x %lld: ", (long long)res[i].w, (long long)res[i].h);
    }
    if (st) {
        tide_ctx_destroy(ctx);
        return tide_cli_fail(cmd, st);
    }
    int json_stdout = c.json || (o.json_path && !strcmp(o.json_path, "-"));
    if (!json_stdout)
        print_text(stdout, ctx, &o, bpms, res, done);
    if (json_stdout)
        print_json(stdout, ctx, &o, bpms, res, done);
    if (o.json_path && strcmp(o.json_path, "-")) {
        tide_outfile of;
        FILE *f = NULL;
        int st = tide_outfile_open(&of, o.json_path, &f);
        if (!st) {
            print_json(f, ctx, &o, bpms, res, done);
            st = tide_outfile_close(&of, f);
        }
        if (st) {
            tide_ctx_destroy(ctx);
            return tide_cli_fail(cmd, st);
        }
    }
    tide_ctx_destroy(ctx);
    return 0;
}
