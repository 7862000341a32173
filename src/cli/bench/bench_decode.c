/* bench_decode.c — `tide bench --decode FILE`: how fast tide reads a tile-compressed image,
 * beside cfitsio reading the same file.
 *
 * Figures, each the median of --repeats runs after --warmup, in Mpix/s of image pixels:
 *   - tide's CPU decoder alone (tile_decode.c), on 1 thread and on the context's threads, from
 *     the data unit in memory (no I/O);
 *   - tide_fits_read_image on the context's threads: open, decode, no-data mask;
 *   - cfitsio's fits_read_pixll(TFLOAT, null NaN) of the whole image (one thread: cfitsio
 *     decodes tile after tile), the file opened outside the timing.
 *   - on a machine with a GPU, RICE_1, GZIP_1 and GZIP_2 through tide_tile_decode_cuda: upload
 *     of the data unit, the kernels, download of the image (gpu_ms; -1 without a GPU), and
 *     the whole read from the file into device memory as the reduce job reads on the GPU
 *     (tide_fits_read_image_at, TIDE_DEVICE: gpu_read_device_ms, issue 19's figure).
 * The decoder's pixels are checked against cfitsio's (bit for bit, NaNs alike) once, the
 * GPU's against the CPU decoder's. */
#include <fitsio.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "cli/cli.h"
#include "io/fits/fits_tile_read.h"
#include "tide/ctx.h"
#include "tide/fits.h"
#include "tide/memory.h"
#include "tide/timer.h"

static const char *help =
    "usage: tide bench --decode FILE [OPTIONS]\n\n"
    "Time tide's decoder of the first tile-compressed image of FILE (RICE_1, GZIP_1, GZIP_2)\n"
    "on 1 thread and on --threads threads, tide_fits_read_image, and cfitsio's fits_read_pixll\n"
    "on the same file; print Mpix/s of each.\n\n"
    "options:\n"
    "  --repeats N   timed runs per figure; the median is reported [5]\n"
    "  --warmup N    untimed runs first [1]\n"
    "  --json FILE   also write the results as JSON to FILE ('-' = stdout)\n";

typedef struct dec_arg {
    const tide_tile_image *ti;
    const uint8_t *data;
    float *out;
    int threads;
    const char *path;
    fitsfile *f;
    int64_t npix;
} dec_arg;

static int do_decode(tide_ctx *ctx, void *p) {
    (void)ctx;
    dec_arg *a = p;
    return tide_tile_decode_cpu(a->ti, a->data, a->out, a->threads);
}

#ifdef TIDE_HAVE_CUDA
static int do_decode_gpu(tide_ctx *ctx, void *p) {
    dec_arg *a = p;
    int st = tide_tile_decode_cuda(ctx, a->ti, a->data, a->out);
    return st == 1
               ? tide_error(TIDE_E_UNSUPPORTED, "%s: not a RICE_1 image the GPU decodes", a->path)
               : st;
}

#ifdef TIDE_HAVE_CUDA
/* 1 when the device decoder refuses a tile of @p ti (its status 2, which the decoder's
 * callers answer with the CPU twin), 0 when it decodes them all, -1 when it cannot say. */
static int device_refuses(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                          int64_t npix) {
    void *d = NULL;
    if (tide_device_alloc(ctx, sizeof(float) * (size_t)npix, &d))
        return -1;
    const int st = tide_tile_rice_to_device(ctx, ti, data, d, NULL);
    tide_sync(ctx);
    tide_device_free(ctx, d);
    return st == 2 ? 1 : st == 0 ? 0 : -1;
}
#endif

/* The file in the page cache to a device image (issue 19's figure): the whole read, header
 * and mask included, as the reduce job reads on the GPU; complete when the stream is. */
static int do_read_device(tide_ctx *ctx, void *p) {
    dec_arg *a = p;
    tide_image im;
    int st = tide_fits_read_image_at(ctx, a->path, &im, NULL, TIDE_DEVICE);
    if (!st)
        st = tide_sync(ctx);
    tide_image_free(ctx, &im);
    return st;
}
/* Where the device read's time goes: @p repeats more reads with TIDE_DECODE_TIMES=1, each
 * piece's measured time (io/fits: host clock for host parts, CUDA events for the device's)
 * written into @p out as the mean per read. The pieces of rice.run overlap (the file's reads, the
 * copies and the decoding run side by side), so they sum to more than it. */
static void device_breakdown(tide_ctx *ctx, dec_arg *a, int repeats, char *out, size_t cap) {
    size_t len = 0;
    out[0] = 0;
    const char *was = getenv("TIDE_DECODE_TIMES");
    setenv("TIDE_DECODE_TIMES", "1", 1);
    tide_timer_clear(ctx);
    int st = 0;
    const double t0 = tide_now();
    for (int i = 0; i < repeats && !st; i++)
        st = do_read_device(ctx, a);
    const double wall = 1e3 * (tide_now() - t0) / (repeats > 0 ? repeats : 1);
    if (was)
        setenv("TIDE_DECODE_TIMES", was, 1);
    else
        unsetenv("TIDE_DECODE_TIMES");
    if (st) {
        fprintf(stderr, "device read breakdown: %s\n", tide_error_detail());
        return;
    }
    static const char *what[][2] = {
        {"read.open", "host: open, scan, checks"},
        {"read.load", "host: raw header, layout, table rows"},
        {"read.alloc", "device image and mask"},
        {"read.device", "the device decode, whole (rice.*)"},
        {"rice.prep", "  host: descriptors, conversions, chunks"},
        {"rice.run", "  host: the pipeline call, whole"},
        {"rice.fill", "    host: file read into page-locked ring"},
        {"rice.h2d", "    device: copies of the unit (summed)"},
        {"rice.decode", "    device: first decode start to last end"},
        {"rice.tail", "    device: decoding after the last copy"},
        {"rice.convert", "    device: conversion and mask"},
        {"rice.wait", "    host: final wait for the stream"},
        {"read.device_refused", "decode refused: read on the host"},
        {"read.rest", "host: close (and any host read)"},
    };
    len += (size_t)snprintf(out + len, cap - len,
                            "  device read breakdown, mean of %d reads (%.3f ms each, wall):\n",
                            repeats, wall);
    for (size_t k = 0; k < sizeof what / sizeof *what; k++)
        for (int i = 0; i < tide_timer_count(ctx); i++) {
            const char *name;
            double ms;
            int calls;
            if (len < cap && !tide_timer_get(ctx, i, &name, &ms, &calls) &&
                !strcmp(name, what[k][0]))
                len += (size_t)snprintf(out + len, cap - len, "    %-20s %8.3f ms  %s\n", name,
                                        ms / (calls ? calls : 1), what[k][1]);
        }
}

#endif

static int do_read(tide_ctx *ctx, void *p) {
    dec_arg *a = p;
    tide_image im;
    int st = tide_fits_read_image(ctx, a->path, &im, NULL);
    if (!st)
        tide_image_free(ctx, &im);
    return st;
}

static int do_cfitsio(tide_ctx *ctx, void *p) {
    (void)ctx;
    dec_arg *a = p;
    int st = 0, any = 0;
    float nan = NAN;
    LONGLONG fp[3] = {1, 1, 1};
    fits_read_pixll(a->f, TFLOAT, fp, (LONGLONG)a->npix, &nan, a->out, &any, &st);
    if (st == NUM_OVERFLOW)
        st = 0;
    fits_clear_errmsg();
    return st ? tide_error(TIDE_E_FORMAT, "%s: cfitsio cannot read it (status %d)", a->path, st)
              : 0;
}

static int same_bits(const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!(isnan(a[i]) && !isfinite(b[i])) && memcmp(&a[i], &b[i], 4))
            return 0;
    return 1;
}

int tide_bench_decode(int argc, char **argv) {
    const char *cmd = "bench --decode", *path = NULL, *json = NULL;
    tide_cli_common c;
    tide_ctx *ctx = NULL;
    int repeats, warmup, threads;
    const int rc = tide_bench_file_args(cmd, "--decode", help, &c, argc, argv, &path, &json,
                                        &repeats, &warmup, &ctx, &threads);
    if (rc >= 0)
        return rc;
    tide_tile_image *ti = NULL;
    uint8_t *data = NULL;
    float *mine = NULL, *ref = NULL;
    fitsfile *f = NULL;
    int cst = 0;
    int st = tide_fits_tile_load(path, &ti, &data);
    const int64_t npix = st ? 0 : ti->lay.znaxis[0] * (ti->lay.ndim > 1 ? ti->lay.znaxis[1] : 1);
    if (!st && (!(mine = malloc(sizeof(float) * (size_t)npix)) ||
                !(ref = malloc(sizeof(float) * (size_t)npix))))
        st = tide_error(TIDE_E_NOMEM, "%s: no memory for %lld pixels", path, (long long)npix);
    if (!st && fits_open_image(&f, path, READONLY, &cst))
        st = tide_error(TIDE_E_FORMAT, "%s: cfitsio cannot open it (status %d)", path, cst);
    double ms1 = 0, msn = 0, msread = 0, mscf = 0;
    dec_arg a = {ti, data, mine, 1, path, f, npix};
    if (!st)
        st = tide_bench_time(ctx, repeats, warmup, "bench.decode1", do_decode, &a, &ms1);
    a.threads = threads;
    if (!st)
        st = tide_bench_time(ctx, repeats, warmup, "bench.decodeN", do_decode, &a, &msn);
    if (!st)
        st = tide_bench_time(ctx, repeats, warmup, "bench.read", do_read, &a, &msread);
    a.out = ref;
    if (!st)
        st = tide_bench_time(ctx, repeats, warmup, "bench.cfitsio", do_cfitsio, &a, &mscf);
    int same = !st && same_bits(mine, ref, npix);
    /* RICE_1 / GZIP on the GPU, where there is one: upload, decode, convert, download */
    double msgpu = -1, msdev = -1;
    char breakdown[2048] = "";
    int gpu_same = -1, gpu_refused = -1;
#ifdef TIDE_HAVE_CUDA
    tide_ctx *gctx = NULL;
    const int on_gpu = (ti->lay.codec == CODEC_RICE && !ti->lossless) ||
                       ti->lay.codec == CODEC_GZIP1 || ti->lay.codec == CODEC_GZIP2;
    if (!st && on_gpu && tide_cuda_available(NULL)) {
        tide_ctx_options go = c.ctx_opt;
        go.backend = TIDE_BACKEND_CUDA;
        float *g = malloc(sizeof(float) * (size_t)npix);
        if (g && !tide_ctx_create(&gctx, &go)) {
            dec_arg ga = {ti, data, g, threads, path, NULL, npix};
            if (!tide_bench_time(gctx, repeats, warmup, "bench.decode_gpu", do_decode_gpu, &ga,
                                 &msgpu))
                gpu_same = !memcmp(g, mine, sizeof(float) * (size_t)npix);
            /* the GPU decoder hands a tile it refuses to the CPU twin, which gives the same
             * bits: whether the device did the work shows only in its own status */
            if (ti->lay.codec == CODEC_RICE)
                gpu_refused = device_refuses(gctx, ti, data, npix);
            else
                fprintf(stderr, "tide %s: GPU: %s\n", cmd, tide_error_detail());
            if (tide_bench_time(gctx, repeats, warmup, "bench.read_device", do_read_device, &ga,
                                &msdev))
                fprintf(stderr, "tide %s: read to the device: %s\n", cmd, tide_error_detail());
            else if (ti->lay.codec == CODEC_RICE)
                device_breakdown(gctx, &ga, repeats, breakdown, sizeof breakdown);
            tide_ctx_destroy(gctx);
        }
        free(g);
    }
#endif
    if (!st) {
        const char *codec[] = {"RICE_1", "GZIP_1", "GZIP_2", "HCOMPRESS_1", "PLIO_1", "NOCOMPRESS"};
        double mp = (double)npix / 1e6;
        printf("%s: %lld x %lld, ZBITPIX %d, %s, %lld tiles\n", path, (long long)ti->lay.znaxis[0],
               (long long)(npix / ti->lay.znaxis[0]), ti->lay.zbitpix, codec[ti->lay.codec],
               (long long)ti->lay.ntiles);
        printf("  tide decoder, 1 thread      %8.2f ms  %9.1f Mpix/s\n", ms1, mp / ms1 * 1e3);
        printf("  tide decoder, %2d threads    %8.2f ms  %9.1f Mpix/s\n", threads, msn,
               mp / msn * 1e3);
        printf("  tide_fits_read_image, %2d    %8.2f ms  %9.1f Mpix/s\n", threads, msread,
               mp / msread * 1e3);
        printf("  cfitsio fits_read_pixll     %8.2f ms  %9.1f Mpix/s\n", mscf, mp / mscf * 1e3);
        if (msgpu >= 0)
            printf("  tide GPU decoder (with copies) %5.2f ms  %9.1f Mpix/s; %s the CPU's%s\n",
                   msgpu, mp / msgpu * 1e3, gpu_same == 1 ? "bit for bit" : "DIFFERENT from",
                   gpu_refused == 1   ? "; the device REFUSED a tile (the CPU twin decoded)"
                   : gpu_refused == 0 ? "; decoded on the device"
                                      : "");
        if (msdev >= 0)
            printf("  file to device memory (tide_fits_read_image_at) %5.2f ms  %9.1f Mpix/s\n",
                   msdev, mp / msdev * 1e3);
        fputs(breakdown, stdout);
        printf("  tide / cfitsio: %.1fx (1 thread), %.1fx (%d threads); pixels %s\n", mscf / ms1,
               mscf / msn, threads, same ? "bit for bit equal" : "DIFFER");
        FILE *j = !json ? NULL : strcmp(json, "-") ? fopen(json, "w") : stdout;
        if (j) {
            fprintf(j,
                    "{\"file\": \"%s\", \"pixels\": %lld, \"threads\": %d, "
                    "\"tide_1thread_ms\": %.4f, \"tide_ms\": %.4f, \"tide_read_ms\": %.4f, "
                    "\"cfitsio_ms\": %.4f, \"gpu_ms\": %.4f, \"gpu_read_device_ms\": %.4f, "
                    "\"bit_exact\": %s}\n",
                    path, (long long)npix, threads, ms1, msn, msread, mscf, msgpu, msdev,
                    same && gpu_same != 0 ? "true" : "false");
            if (j != stdout)
                fclose(j);
        }
    }
    if (st)
        fprintf(stderr, "tide %s: %s\n", cmd, tide_error_detail());
    if (f)
        fits_close_file(f, &cst);
    free(mine);
    free(ref);
    tide_host_free(data);
    free(ti);
    tide_ctx_destroy(ctx);
    return st ? 1 : same && gpu_same != 0 ? 0 : 1;
}
