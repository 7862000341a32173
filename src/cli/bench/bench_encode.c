/* bench_encode.c — `tide bench --encode FILE`: how fast tide writes an image RICE_1
 * tile-compressed, beside cfitsio (the library fpack runs) on the same pixels:
 *   - tide's encoder alone (tile_encode.c: quantize and Rice-code every row tile), on 1 thread
 *     and on the context's threads;
 *   - on a machine with a GPU, tide_tile_encode_cuda with its copies;
 *   - the whole file: tide_fits_write_image_as(TIDE_FITS_RICE) of the pixels alone, and
 *     cfitsio writing the same image with RICE_1, q 4 and SUBTRACTIVE_DITHER_1 (fpack's
 *     defaults), both to a temporary file beside FILE's directory's default (TMPDIR).
 * The GPU's tiles are checked against the CPU's, byte for byte. */
#include <fitsio.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "cli/cli.h"
#include "io/fits/tile_encode.h"
#include "tide/ctx.h"
#include "tide/fits.h"

static const char *help =
    "usage: tide bench --encode FILE [OPTIONS]\n\n"
    "Time tide's RICE_1 encoder on FILE's image (floats quantized as fpack -q 4) on 1 thread\n"
    "and on --threads threads, the GPU encoder where there is one, and the whole compressed\n"
    "file written by tide and by cfitsio (fpack's library, its default options); print\n"
    "Mpix/s of each.\n\n"
    "options:\n"
    "  --repeats N   timed runs per figure; the median is reported [5]\n"
    "  --warmup N    untimed runs first [1]\n"
    "  --json FILE   also write the results as JSON to FILE ('-' = stdout)\n";

typedef struct enc_arg {
    tide_tile_encoded *e;
    const tide_image *im;
    int threads;
    char tmp[512];
} enc_arg;

static int do_encode(tide_ctx *ctx, void *p) {
    (void)ctx;
    enc_arg *a = p;
    return tide_tile_encode_cpu(a->e, a->im->pix, a->threads);
}

#ifdef TIDE_HAVE_CUDA
static int do_encode_gpu(tide_ctx *ctx, void *p) {
    enc_arg *a = p;
    return tide_tile_encode_cuda(ctx, a->e, a->im->pix);
}
#endif

static int do_write(tide_ctx *ctx, void *p) {
    (void)ctx;
    enc_arg *a = p;
    tide_image pix = *a->im;
    pix.mask = NULL;
    pix.var = NULL;
    return tide_fits_write_image_as(a->tmp, &pix, NULL, TIDE_FITS_RICE);
}

static int do_cfitsio(tide_ctx *ctx, void *p) {
    (void)ctx;
    enc_arg *a = p;
    fitsfile *f = NULL;
    int st = 0;
    long naxes[2] = {(long)a->im->width, (long)a->im->height};
    char spec[600];
    snprintf(spec, sizeof spec, "!%s", a->tmp);
    fits_create_file(&f, spec, &st);
    fits_set_compression_type(f, RICE_1, &st);
    fits_set_quantize_level(f, 4.0f, &st);
    fits_set_quantize_method(f, SUBTRACTIVE_DITHER_1, &st);
    fits_set_dither_seed(f, 1, &st);
    fits_create_img(f, FLOAT_IMG, 2, naxes, &st);
    fits_write_img(f, TFLOAT, 1, (LONGLONG)(a->im->width * a->im->height), a->im->pix, &st);
    fits_close_file(f, &st);
    fits_clear_errmsg();
    return st ? tide_error(TIDE_E_IO, "%s: cfitsio cannot write it (status %d)", a->tmp, st) : 0;
}

int tide_bench_encode(int argc, char **argv) {
    const char *cmd = "bench --encode", *path = NULL, *json = NULL;
    tide_cli_common c;
    tide_ctx *ctx = NULL;
    int repeats, warmup, threads;
    const int rc = tide_bench_file_args(cmd, "--encode", help, &c, argc, argv, &path, &json,
                                        &repeats, &warmup, &ctx, &threads);
    if (rc >= 0)
        return rc;
    tide_image im;
    tide_tile_enc_plan plan;
    tide_tile_encoded e = {0};
    int st = tide_fits_read_image(NULL, path, &im, NULL);
    if (!st)
        st = tide_tile_enc_plan_init(&plan, TIDE_ENC_F32, im.width, im.height, im.stride, 0, 0,
                                     tide_tile_enc_seed(im.pix, im.width));
    if (!st)
        st = tide_tile_encoded_alloc(&e, &plan);
    enc_arg a = {&e, &im, 1, ""};
    const char *tmpdir = getenv("TMPDIR");
    snprintf(a.tmp, sizeof a.tmp, "%s/tide_bench_encode_%d.fits", tmpdir ? tmpdir : "/tmp",
             (int)getpid());
    double ms1 = 0, msn = 0, mswrite = 0, mscf = 0, msgpu = -1;
    if (!st)
        st = tide_bench_time(ctx, repeats, warmup, "bench.encode1", do_encode, &a, &ms1);
    a.threads = threads;
    if (!st)
        st = tide_bench_time(ctx, repeats, warmup, "bench.encodeN", do_encode, &a, &msn);
    int64_t bytes = 0;
    for (int64_t k = 0; !st && k < plan.ntiles; k++)
        bytes += e.out[k].nbytes;
    if (!st)
        st = tide_bench_time(ctx, repeats, warmup, "bench.write", do_write, &a, &mswrite);
    if (!st)
        st = tide_bench_time(ctx, repeats, warmup, "bench.cfitsio", do_cfitsio, &a, &mscf);
    unlink(a.tmp);
    int gpu_same = -1;
#ifdef TIDE_HAVE_CUDA
    tide_ctx *gctx = NULL;
    tide_tile_encoded g = {0};
    if (!st && tide_cuda_available(NULL) && !tide_tile_encoded_alloc(&g, &plan)) {
        tide_ctx_options go = c.ctx_opt;
        go.backend = TIDE_BACKEND_CUDA;
        if (!tide_ctx_create(&gctx, &go)) {
            enc_arg ga = {&g, &im, threads, ""};
            if (!tide_bench_time(gctx, repeats, warmup, "bench.encode_gpu", do_encode_gpu, &ga,
                                 &msgpu)) {
                gpu_same = 1;
                for (int64_t k = 0; k < plan.ntiles; k++)
                    gpu_same &= g.out[k].nbytes == e.out[k].nbytes &&
                                !memcmp(g.slots + k * plan.cap, e.slots + k * plan.cap,
                                        (size_t)e.out[k].nbytes);
            } else {
                fprintf(stderr, "tide %s: GPU: %s\n", cmd, tide_error_detail());
            }
            tide_ctx_destroy(gctx);
        }
        tide_tile_encoded_free(&g);
    }
#endif
    if (!st) {
        const double mp = (double)(im.width * im.height) / 1e6;
        printf("%s: %lld x %lld floats, %lld row tiles, %.2f bits per pixel\n", path,
               (long long)im.width, (long long)im.height, (long long)plan.ntiles,
               8.0 * (double)bytes / (double)(im.width * im.height));
        printf("  tide encoder, 1 thread        %8.2f ms  %9.1f Mpix/s\n", ms1, mp / ms1 * 1e3);
        printf("  tide encoder, %2d threads      %8.2f ms  %9.1f Mpix/s\n", threads, msn,
               mp / msn * 1e3);
        if (msgpu >= 0)
            printf("  tide GPU encoder (with copies) %7.2f ms  %9.1f Mpix/s; %s the CPU's\n", msgpu,
                   mp / msgpu * 1e3, gpu_same == 1 ? "byte for byte" : "DIFFERENT from");
        printf("  tide file (write_image_as)    %8.2f ms  %9.1f Mpix/s\n", mswrite,
               mp / mswrite * 1e3);
        printf("  cfitsio file (fpack's code)   %8.2f ms  %9.1f Mpix/s\n", mscf, mp / mscf * 1e3);
        printf("  tide / cfitsio: %.1fx (encoder, 1 thread), %.1fx (file, %d threads)\n",
               mscf / ms1, mscf / mswrite, threads);
        FILE *j = !json ? NULL : strcmp(json, "-") ? fopen(json, "w") : stdout;
        if (j) {
            fprintf(j,
                    "{\"file\": \"%s\", \"pixels\": %lld, \"threads\": %d, "
                    "\"tide_1thread_ms\": %.4f, \"tide_ms\": %.4f, \"tide_file_ms\": %.4f, "
                    "\"cfitsio_file_ms\": %.4f, \"gpu_ms\": %.4f, \"gpu_same\": %s}\n",
                    path, (long long)(im.width * im.height), threads, ms1, msn, mswrite, mscf,
                    msgpu, gpu_same != 0 ? "true" : "false");
            if (j != stdout)
                fclose(j);
        }
    }
    if (st)
        fprintf(stderr, "tide %s: %s\n", cmd, tide_error_detail());
    tide_tile_encoded_free(&e);
    tide_image_free(NULL, &im);
    tide_ctx_destroy(ctx);
    return st ? 1 : gpu_same != 0 ? 0 : 1;
}
