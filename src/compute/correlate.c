/* correlate.c — FFT correlation of one frame with many small kernels: the algorithm, once,
 * for both backends.
 *
 * Per frame (or per tile, see choose_tiles): pad (one pass) -> forward R2C of the padded
 * frame (shared by all kernels) -> per kernel: product with the kernel's spectrum (one fused
 * pass) -> inverse C2R -> crop. Padded axes are tide_fft_good_size(W + kw - 1) (a tile: its
 * output size + kw - 1) so the circular result is the linear one.
 * The kernels' spectra come from small separable tables (correlate_kernels.h) built here in
 * double precision, once per correlator. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "correlate_kernels.h"
#include "fft_kernels.h"
#include "tide/ctx.h"
#include "tide/fft.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "core/ctx_internal.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* The n-th roots of unity, root[2m] + i root[2m+1] = exp(2 pi i m / n) for m < n, each from
 * cos and sin of its own reduced argument 2 pi m / n (so a table entry is the value a direct
 * evaluation of that phase gives, to the bit). On the context's threads. */
static double *roots_of_unity(int64_t n, int threads) {
    double *root = malloc((size_t)n * 2 * sizeof(double));
    if (!root)
        return NULL;
#pragma omp parallel for num_threads(threads > 0 ? threads : 1) schedule(static)
    for (int64_t m = 0; m < n; m++) {
        const double a = 2.0 * M_PI * (double)m / (double)n;
        root[2 * m] = cos(a);
        root[2 * m + 1] = sin(a);
    }
    return root;
}

/* The column table cols (py * 2 complex (w_v, p_v), stored as floats; correlate_kernels.h),
 * its phases from the roots of unity of py: w_v = root[v], p_v = root[-v ry mod py] / (px py),
 * conjugated for a convolution. */
static int build_cols(const struct tide_correlator *c, float *cols, int threads) {
    double *root = roots_of_unity(c->py, threads);
    if (!root)
        return tide_error(TIDE_E_NOMEM, "correlation column table");
    const double sign = c->opt.convolve ? -1.0 : 1.0;
    const double scale = 1.0 / ((double)c->px * (double)c->py);
    for (int64_t v = 0; v < c->py; v++) {
        int64_t m = (v * c->ry) % c->py; /* -v ry reduced into [0, py) */
        m = m ? c->py - m : 0;
        cols[4 * v] = (float)root[2 * v];
        cols[4 * v + 1] = (float)(sign * root[2 * v + 1]);
        cols[4 * v + 2] = (float)(root[2 * m] * scale);
        cols[4 * v + 3] = (float)(sign * root[2 * m + 1] * scale);
    }
    free(root);
    return TIDE_OK;
}

/* Tiling (CPU only). A 2-D FFT much larger than the caches runs at a fraction of the speed
 * of one that fits (FFTW on this project's 2-core machine: ~3 ns per point at 640-768 on a
 * side, ~10-17 ns at 2100), and a kernel spectrum costs kh complex multiply-adds per point.
 * So a large frame is correlated in tiles by overlap-save: each tile of P = ox + kw - 1
 * padded pixels per axis yields ox output pixels, the halo of kw - 1 read from the frame (or
 * its padding) around it, and the result is the same linear correlation as one big
 * transform up to float rounding. CUDA (cuFFT in device memory) keeps one transform. */
#define TILE_MAX 1024     /* longest tile side */
#define TILE_MIN_CORE 128 /* fewest output pixels per tile and axis */

/* The smallest m >= n of the form 2^a 3^b 5^c: the sizes FFTW's estimator handles best. */
static int64_t smooth235(int64_t n) {
    for (int64_t m = n < 2 ? 2 : n;; m++) {
        int64_t r = m;
        while (r % 2 == 0)
            r /= 2;
        while (r % 3 == 0)
            r /= 3;
        while (r % 5 == 0)
            r /= 5;
        if (r == 1)
            return m;
    }
}

/* Padded size @p p, output pixels per tile @p o and tile count @p nt along an axis of @p n
 * pixels for a kernel of @p k: one transform when it fits in TILE_MAX (or tiling is off),
 * else the tile size up to TILE_MAX with the fewest padded pixels in all, ties to the
 * smaller. */
static void choose_tiles(int64_t n, int64_t k, int tile, int64_t *p, int64_t *o, int64_t *nt) {
    *p = tide_fft_good_size(n + k - 1);
    *o = n;
    *nt = 1;
    if (!tile || *p <= TILE_MAX || k - 1 + TILE_MIN_CORE > TILE_MAX)
        return;
    int64_t best = -1;
    for (int64_t q = smooth235(k - 1 + TILE_MIN_CORE); q <= TILE_MAX; q = smooth235(q + 1)) {
        const int64_t core = q - k + 1, cnt = (n + core - 1) / core, cost = cnt * q;
        if (best < 0 || cost < best) {
            best = cost;
            *p = q;
            *o = core;
            *nt = cnt;
        }
    }
}

static int check_args(int64_t width, int64_t height, int nk, const float *const *kernels,
                      int64_t kw, int64_t kh) {
    if (width < 1 || height < 1)
        return tide_error(TIDE_E_INVAL, "correlate: frame size %lld x %lld is not positive",
                          (long long)width, (long long)height);
    if (nk < 1 || !kernels)
        return tide_error(TIDE_E_INVAL, "correlate: %d kernels given; need at least one", nk);
    if (kw < 1 || kh < 1 || kw % 2 == 0 || kh % 2 == 0)
        return tide_error(TIDE_E_INVAL, "correlate: kernel size %lld x %lld must be odd",
                          (long long)kw, (long long)kh);
    for (int k = 0; k < nk; k++) {
        if (!kernels[k])
            return tide_error(TIDE_E_INVAL, "correlate: kernel %d is NULL", k);
        for (int64_t i = 0; i < kw * kh; i++)
            if (!isfinite(kernels[k][i]))
                return tide_error(TIDE_E_INVAL,
                                  "correlate: kernel %d has a non-finite value at "
                                  "(%lld, %lld)",
                                  k, (long long)(i % kw), (long long)(i / kw));
    }
    return TIDE_OK;
}

int tide_correlator_create(tide_ctx *ctx, int64_t width, int64_t height, int nk,
                           const float *const *kernels, int64_t kw, int64_t kh,
                           const tide_correlate_options *opt, tide_correlator **out) {
    *out = NULL;
    int st = check_args(width, height, nk, kernels, kw, kh);
    if (st)
        return st;
    struct tide_correlator *c = calloc(1, sizeof *c);
    if (!c)
        return tide_error(TIDE_E_NOMEM, "correlator");
    c->backend = ctx->backend;
    c->w = width;
    c->h = height;
    c->kw = kw;
    c->kh = kh;
    c->rx = kw / 2;
    c->ry = kh / 2;
    const int tile = ctx->backend != TIDE_BACKEND_CUDA;
    choose_tiles(width, kw, tile, &c->px, &c->ox, &c->ntx);
    choose_tiles(height, kh, tile, &c->py, &c->oy, &c->nty);
    c->cw = tide_fft_complex_width(c->px);
    c->pitch = tide_fft_row_pitch(c->px);
    c->nk = nk;
    if (opt)
        c->opt = *opt;
    if (c->opt.pad != TIDE_PAD_ZERO && c->opt.pad != TIDE_PAD_REFLECT) {
        int pad = (int)c->opt.pad;
        free(c);
        return tide_error(TIDE_E_INVAL, "correlate: unknown padding mode %d", pad);
    }
    /* Kernel spectra in compact form (correlate_kernels.h): the phases are roots of unity of
     * the padded sizes, px + py cos/sin pairs in all; the rows (nk * kh * cw complex sums of
     * kw products, about 20 M at 151 MP) are built where the context computes. */
    size_t kn = (size_t)(kw * kh);
    c->kernels = malloc((size_t)nk * kn * sizeof(float));
    double *rootx = roots_of_unity(c->px, ctx->threads);
    float *cols_h = malloc((size_t)c->py * 4 * sizeof(float));
    if (!c->kernels || !rootx || !cols_h) {
        st = tide_error(TIDE_E_NOMEM, "correlator tables");
        goto fail;
    }
    for (int k = 0; k < nk; k++)
        memcpy(c->kernels + (size_t)k * kn, kernels[k], kn * sizeof(float));
    if ((st = build_cols(c, cols_h, ctx->threads)))
        goto fail;
    int64_t nrows = nk * kh * c->cw * 2, ncols = c->py * 4;
    int on_dev = ctx->backend == TIDE_BACKEND_CUDA;
    if ((st = tide_fft_buffer_alloc(ctx, nrows, &c->rows)) ||
        (st = tide_fft_buffer_alloc(ctx, ncols, &c->cols)) ||
        (st = TIDE_DISPATCH(ctx, tide_corr_rows, c, rootx)) ||
        (st = tide_memcpy(ctx, c->cols, on_dev, cols_h, 0, (size_t)ncols * sizeof(float))))
        goto fail;
    if ((st = tide_fft_plan_get(ctx, TIDE_FFT_R2C, c->px, c->py, 1, &c->fwd)) ||
        (st = tide_fft_plan_get(ctx, TIDE_FFT_C2R, c->px, c->py, 1, &c->inv)))
        goto fail;
    int64_t nbuf = c->py * c->pitch;
    if (c->ntx * c->nty > 1) {
        /* CPU tiles: a pair of tile buffers per thread (correlate_kernels.h) */
        c->nbuf = ctx->threads > 0 ? ctx->threads : 1;
        if ((int64_t)c->nbuf > c->ntx * c->nty)
            c->nbuf = (int)(c->ntx * c->nty);
        c->tbuf = calloc(2 * (size_t)c->nbuf, sizeof(float *));
        if (!c->tbuf) {
            st = tide_error(TIDE_E_NOMEM, "correlator tile buffers");
            goto fail;
        }
        for (int t = 0; t < 2 * c->nbuf; t++)
            if ((t % 2 == 0 || nk > 1) && (st = tide_fft_buffer_alloc(ctx, nbuf, &c->tbuf[t])))
                goto fail;
    } else {
        if ((st = tide_fft_buffer_alloc(ctx, nbuf, &c->X)))
            goto fail;
        if (nk == 1)
            c->Y = c->X; /* the product can overwrite the frame's spectrum: nobody else needs it */
        else if ((st = tide_fft_buffer_alloc(ctx, nbuf, &c->Y)))
            goto fail;
    }
    if ((st = TIDE_DISPATCH(ctx, tide_corr_prepare, c)))
        goto fail;
    free(rootx);
    free(cols_h);
    tide_log(&ctx->log, TIDE_LOG_DEBUG, "correlate",
             "%lld x %lld frame, %d kernel(s) %lld x %lld: padded to %lld x %lld (%lld x %lld "
             "tiles)",
             (long long)width, (long long)height, nk, (long long)kw, (long long)kh,
             (long long)c->px, (long long)c->py, (long long)c->ntx, (long long)c->nty);
    *out = c;
    return TIDE_OK;
fail:
    free(rootx);
    free(cols_h);
    tide_correlator_free(ctx, c);
    return st;
}

void tide_correlator_free(tide_ctx *ctx, tide_correlator *c) {
    if (!c)
        return;
    if (c->Y != c->X)
        tide_fft_buffer_free(ctx, c->Y);
    tide_fft_buffer_free(ctx, c->X);
    if (c->tbuf)
        for (int t = 0; t < 2 * c->nbuf; t++)
            tide_fft_buffer_free(ctx, c->tbuf[t]);
    free(c->tbuf);
    tide_fft_buffer_free(ctx, c->rows);
    tide_fft_buffer_free(ctx, c->cols);
    tide_fft_buffer_free(ctx, c->spec);
    free(c->kernels);
    free(c);
}

void tide_correlator_shape(const tide_correlator *c, int64_t *px, int64_t *py) {
    if (px)
        *px = c->px;
    if (py)
        *py = c->py;
}

/* Allocate missing outputs where @p where says; check the given ones. */
static int prepare_outputs(tide_ctx *ctx, const struct tide_correlator *c, tide_image *out,
                           tide_location where) {
    for (int k = 0; k < c->nk; k++) {
        tide_image *o = &out[k];
        if (!o->pix) {
            int st = tide_image_alloc(ctx, o, c->w, c->h, where, 0);
            if (st)
                return st;
            continue;
        }
        if (o->width != c->w || o->height != c->h || o->stride < o->width)
            return tide_error(TIDE_E_INVAL,
                              "correlate: output %d is %lld x %lld, frame is "
                              "%lld x %lld",
                              k, (long long)o->width, (long long)o->height, (long long)c->w,
                              (long long)c->h);
        if (o->location == TIDE_DEVICE && ctx->backend != TIDE_BACKEND_CUDA)
            return tide_error(TIDE_E_INVAL,
                              "correlate: output %d is on the device but the "
                              "context is a CPU one",
                              k);
    }
    return TIDE_OK;
}

static int run_device_input(tide_ctx *ctx, tide_correlator *c, const tide_image *in,
                            tide_image *out) {
    if (c->tbuf) /* CPU tiles, in parallel */
        return tide_corr_run_tiles_cpu(ctx, c, in, out);
    int st = 0;
    for (int64_t ty = 0; ty < c->nty && !st; ty++)
        for (int64_t tx = 0; tx < c->ntx && !st; tx++) {
            c->tx0 = tx * c->ox;
            c->ty0 = ty * c->oy;
            st = TIDE_DISPATCH(ctx, tide_corr_pad, c, in);
            if (!st)
                st = tide_fft_execute(ctx, c->fwd, c->X);
            for (int k = 0; k < c->nk && !st; k++) {
                st = TIDE_DISPATCH(ctx, tide_corr_multiply, c, k);
                if (!st)
                    st = tide_fft_execute(ctx, c->inv, c->Y);
                if (!st)
                    st = TIDE_DISPATCH(ctx, tide_corr_crop, c, &out[k]);
            }
        }
    return st; /* stream-ordered: later work and copies to the host see the outputs */
}

int tide_correlator_run(tide_ctx *ctx, tide_correlator *c, const tide_image *in, tide_image *out) {
    if (!c || !in || !in->pix || !out)
        return tide_error(TIDE_E_INVAL, "correlate: NULL correlator, input or outputs");
    if (c->backend != ctx->backend)
        return tide_error(TIDE_E_INVAL, "correlate: correlator made for another backend");
    if (in->width != c->w || in->height != c->h || in->stride < in->width)
        return tide_error(TIDE_E_INVAL,
                          "correlate: input is %lld x %lld, correlator expects "
                          "%lld x %lld",
                          (long long)in->width, (long long)in->height, (long long)c->w,
                          (long long)c->h);
    if (in->location == TIDE_DEVICE && ctx->backend != TIDE_BACKEND_CUDA)
        return tide_error(TIDE_E_INVAL, "correlate: device input on a CPU context");
    int st = prepare_outputs(ctx, c, out, in->location);
    if (st)
        return st;
    if (ctx->backend == TIDE_BACKEND_CUDA && in->location == TIDE_HOST) {
        /* Upload once; the pad kernel reads the device copy. */
        tide_image dev;
        if ((st = tide_image_clone(ctx, &dev, in, TIDE_DEVICE)))
            return st;
        st = run_device_input(ctx, c, &dev, out);
        tide_image_free(ctx, &dev);
        return st;
    }
    return run_device_input(ctx, c, in, out);
}

int tide_correlator_forward(tide_ctx *ctx, tide_correlator *c, const tide_image *in) {
    if (!c || !in || !in->pix)
        return tide_error(TIDE_E_INVAL, "correlate: NULL correlator or input");
    if (c->backend != ctx->backend)
        return tide_error(TIDE_E_INVAL, "correlate: correlator made for another backend");
    if (c->tbuf || c->nk < 2)
        return tide_error(TIDE_E_UNSUPPORTED,
                          "correlate: a tiled or single-kernel correlator "
                          "cannot keep a frame's spectrum (use tide_correlator_run)");
    if (in->width != c->w || in->height != c->h || in->stride < in->width)
        return tide_error(TIDE_E_INVAL,
                          "correlate: input is %lld x %lld, correlator expects "
                          "%lld x %lld",
                          (long long)in->width, (long long)in->height, (long long)c->w,
                          (long long)c->h);
    if (in->location == TIDE_DEVICE && ctx->backend != TIDE_BACKEND_CUDA)
        return tide_error(TIDE_E_INVAL, "correlate: device input on a CPU context");
    c->tx0 = 0;
    c->ty0 = 0;
    int st;
    if (ctx->backend == TIDE_BACKEND_CUDA && in->location == TIDE_HOST) {
        tide_image dev;
        if ((st = tide_image_clone(ctx, &dev, in, TIDE_DEVICE)))
            return st;
        st = TIDE_DISPATCH(ctx, tide_corr_pad, c, &dev);
        if (!st)
            st = tide_sync(ctx); /* the pad kernel reads dev */
        tide_image_free(ctx, &dev);
    } else {
        st = TIDE_DISPATCH(ctx, tide_corr_pad, c, in);
    }
    if (!st)
        st = tide_fft_execute(ctx, c->fwd, c->X);
    return st;
}

int tide_correlator_run_one(tide_ctx *ctx, tide_correlator *c, int k, tide_image *out) {
    if (!c || !out || k < 0 || k >= c->nk)
        return tide_error(TIDE_E_INVAL,
                          "correlate: NULL correlator/output or kernel index %d "
                          "outside 0..%d",
                          k, c ? c->nk - 1 : -1);
    if (c->tbuf || c->nk < 2)
        return tide_error(TIDE_E_UNSUPPORTED, "correlate: tide_correlator_run_one needs an "
                                              "untiled correlator of 2 or more kernels");
    tide_location where = ctx->backend == TIDE_BACKEND_CUDA ? TIDE_DEVICE : TIDE_HOST;
    if (!out->pix) {
        int st = tide_image_alloc(ctx, out, c->w, c->h, where, 0);
        if (st)
            return st;
    } else if (out->width != c->w || out->height != c->h || out->stride < out->width) {
        return tide_error(TIDE_E_INVAL, "correlate: output is %lld x %lld, frame is %lld x %lld",
                          (long long)out->width, (long long)out->height, (long long)c->w,
                          (long long)c->h);
    } else if (out->location == TIDE_DEVICE && ctx->backend != TIDE_BACKEND_CUDA) {
        return tide_error(TIDE_E_INVAL, "correlate: output is on the device but the context is "
                                        "a CPU one");
    }
    c->tx0 = 0;
    c->ty0 = 0;
    int st = TIDE_DISPATCH(ctx, tide_corr_multiply, c, k);
    if (!st)
        st = tide_fft_execute(ctx, c->inv, c->Y);
    if (!st)
        st = TIDE_DISPATCH(ctx, tide_corr_crop, c, out);
    return st; /* stream-ordered: later work and copies to the host see out */
}

int tide_correlator_run_one_view(tide_ctx *ctx, tide_correlator *c, int k, tide_image *view) {
    if (!c || !view || k < 0 || k >= c->nk)
        return tide_error(TIDE_E_INVAL,
                          "correlate: NULL correlator/view or kernel index %d "
                          "outside 0..%d",
                          k, c ? c->nk - 1 : -1);
    if (c->tbuf || c->nk < 2)
        return tide_error(TIDE_E_UNSUPPORTED, "correlate: tide_correlator_run_one_view needs an "
                                              "untiled correlator of 2 or more kernels");
    c->tx0 = 0;
    c->ty0 = 0;
    int st = TIDE_DISPATCH(ctx, tide_corr_multiply, c, k);
    if (!st)
        st = tide_fft_execute(ctx, c->inv, c->Y);
    if (!st)
        st = tide_sync(ctx);
    if (st)
        return st;
    /* the crop's source: out(x, y) = Y[(y + ry) * pitch + x + rx] (tide_corr_crop) */
    memset(view, 0, sizeof *view);
    view->width = c->w;
    view->height = c->h;
    view->stride = c->pitch;
    view->pix = c->Y + c->ry * c->pitch + c->rx;
    view->location = ctx->backend == TIDE_BACKEND_CUDA ? TIDE_DEVICE : TIDE_HOST;
    view->owns = 0;
    return TIDE_OK;
}

int tide_correlator_streams(const tide_correlator *c) {
    return c && !c->tbuf && c->nk >= 2;
}

/* Does @p c serve this request unchanged? */
static int correlator_matches(const struct tide_correlator *c, const tide_ctx *ctx, int64_t w,
                              int64_t h, int nk, const float *const *kernels, int64_t kw,
                              int64_t kh, const tide_correlate_options *opt) {
    if (c->backend != ctx->backend || c->w != w || c->h != h || c->nk != nk || c->kw != kw ||
        c->kh != kh || c->opt.pad != opt->pad || !c->opt.convolve != !opt->convolve ||
        c->opt.mask_bits != opt->mask_bits)
        return 0;
    size_t kn = (size_t)(kw * kh);
    for (int k = 0; k < nk; k++)
        if (memcmp(c->kernels + (size_t)k * kn, kernels[k], kn * sizeof(float)))
            return 0;
    return 1;
}

int tide_correlate(tide_ctx *ctx, const tide_image *in, int nk, const float *const *kernels,
                   int64_t kw, int64_t kh, const tide_correlate_options *opt, tide_image *out) {
    tide_correlate_options o;
    memset(&o, 0, sizeof o);
    if (opt)
        o = *opt;
    if (!in)
        return tide_error(TIDE_E_INVAL, "correlate: NULL input");
    int st = check_args(in->width, in->height, nk, kernels, kw, kh);
    if (st)
        return st;
    struct tide_correlator *c = tide_fft_cache_take_correlator(ctx);
    if (c && !correlator_matches(c, ctx, in->width, in->height, nk, kernels, kw, kh, &o)) {
        /* Free first: a 151 MP frame's buffers should not exist twice. */
        tide_correlator_free(ctx, c);
        c = NULL;
    }
    if (!c &&
        (st = tide_correlator_create(ctx, in->width, in->height, nk, kernels, kw, kh, &o, &c)))
        return st;
    st = tide_correlator_run(ctx, c, in, out);
    int keep = tide_fft_cache_keep_correlator(ctx, c);
    if (keep)
        tide_correlator_free(ctx, c);
    return st ? st : keep;
}

int tide_convolve(tide_ctx *ctx, const tide_image *in, int nk, const float *const *kernels,
                  int64_t kw, int64_t kh, const tide_correlate_options *opt, tide_image *out) {
    tide_correlate_options o;
    memset(&o, 0, sizeof o);
    if (opt)
        o = *opt;
    o.convolve = 1;
    return tide_correlate(ctx, in, nk, kernels, kw, kh, &o, out);
}
