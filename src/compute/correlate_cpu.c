/* correlate_cpu.c — the CPU kernels of FFT correlation: OpenMP loops over rows, or for a tiled
 * correlator (correlate.c, choose_tiles) one tile per thread at a time.
 *
 * Unlike the GPU, which rebuilds each kernel's spectrum on the fly from the compact tables
 * (arithmetic is cheap there, memory traffic is not), the CPU expands the full spectra once per
 * correlator: kh complex multiply-adds per element per call would cost more than streaming
 * the stored spectrum. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "correlate_kernels.h"
#include "correlate_math.h"
#include "tide/status.h"

/* Per spectrum row v: the Horner recurrence over the kernel rows j runs for all u at once
 * (j outer, u inner) on split real and imaginary arrays (rre, rim: kh rows of cw; are, aim:
 * the accumulators), so the compiler vectorises across u without shuffles and the complex
 * multiply-adds of different u overlap instead of waiting on each other. Each element still
 * sees exactly the operations of the u-outer order (the same Horner steps from j = kh-1 down,
 * then the same phase product), so the spectrum is bitwise the same. */
static void spectrum_row(const float *restrict rre, const float *restrict rim,
                         const float *restrict t, int64_t cw, int64_t kh, float *restrict are,
                         float *restrict aim, float *restrict s) {
    for (int64_t u = 0; u < cw; u++)
        are[u] = aim[u] = 0.0f;
    const float w_re = t[0], w_im = t[1];
    for (int64_t j = kh - 1; j >= 0; j--) {
        const float *restrict pr = rre + j * cw, *restrict pi = rim + j * cw;
        for (int64_t u = 0; u < cw; u++)
            tide_corr_horner(&are[u], &aim[u], w_re, w_im, pr[u], pi[u]);
    }
    for (int64_t u = 0; u < cw; u++)
        tide_corr_cmul(are[u], aim[u], t[2], t[3], &s[2 * u], &s[2 * u + 1]);
}

int tide_corr_rows_cpu(tide_ctx *ctx, struct tide_correlator *c, const double *root) {
    const int threads = ctx->threads > 0 ? ctx->threads : 1;
    const int sign = c->opt.convolve ? -1 : 1;
#pragma omp parallel for num_threads(threads) schedule(static) collapse(2)
    for (int k = 0; k < c->nk; k++) {
        for (int64_t j = 0; j < c->kh; j++) {
            const float *kr = c->kernels + (size_t)k * (size_t)(c->kw * c->kh) + j * c->kw;
            float *r = c->rows + 2 * ((k * c->kh + j) * c->cw);
            for (int64_t u = 0; u < c->cw; u++)
                tide_corr_row_entry(kr, c->kw, c->rx, u, c->px, root, sign, r + 2 * u);
        }
    }
    return TIDE_OK;
}

int tide_corr_prepare_cpu(tide_ctx *ctx, struct tide_correlator *c) {
    int64_t per = c->py * c->cw * 2;
    int st = tide_fft_buffer_alloc(ctx, per * c->nk, &c->spec);
    if (st)
        return st;
    const int64_t cw = c->cw, kh = c->kh, py = c->py;
    /* the kernel's row table split into real and imaginary planes (shared, read-only) */
    float *split = malloc(sizeof(float) * 2 * (size_t)(kh * cw));
    if (!split)
        return tide_error(TIDE_E_NOMEM, "correlation: kernel spectrum scratch");
    int nomem = 0;
#pragma omp parallel num_threads(ctx->threads)
    {
        float *acc = malloc(sizeof(float) * 2 * (size_t)cw);
        if (!acc) {
#pragma omp atomic write
            nomem = 1;
        }
        for (int k = 0; k < c->nk; k++) {
            const float *rows = c->rows + 2 * (k * kh * cw);
            float *spec = c->spec + per * k;
#pragma omp for schedule(static)
            for (int64_t q = 0; q < kh * cw; q++) {
                split[q] = rows[2 * q];
                split[kh * cw + q] = rows[2 * q + 1];
            }
#pragma omp for schedule(static)
            for (int64_t v = 0; v < py; v++)
                if (acc)
                    spectrum_row(split, split + kh * cw, c->cols + 4 * v, cw, kh, acc, acc + cw,
                                 spec + 2 * v * cw);
        }
        free(acc);
    }
    free(split);
    if (nomem)
        return tide_error(TIDE_E_NOMEM, "correlation: kernel spectrum scratch");
    return TIDE_OK;
}

/* Row b of the padded buffer X for the tile at (tx0, ty0). */
static void pad_row(const struct tide_correlator *c, const tide_image *in, int64_t tx0, int64_t ty0,
                    int64_t b, float *X) {
    const int64_t w = c->w, h = c->h, rx = c->rx, ry = c->ry, px = c->px, pitch = c->pitch;
    const int reflect = c->opt.pad == TIDE_PAD_REFLECT;
    const uint16_t bits = c->opt.mask_bits;
    const float *pix = in->pix;
    const uint16_t *mask = in->mask;
    const int64_t stride = in->stride;
    /* padded columns [a0, a1) show frame columns [0, w) directly */
    int64_t a0 = rx - tx0, a1 = w + rx - tx0;
    a0 = a0 < 0 ? 0 : (a0 > px ? px : a0);
    a1 = a1 < a0 ? a0 : (a1 > px ? px : a1);
    float *row = X + b * pitch;
    int64_t y = ty0 + b - ry;
    if (y >= 0 && y < h) {
        /* Interior row: the common case, a straight copy with cleaning. */
        const float *src = pix + y * stride + (tx0 + a0 - rx);
        const uint16_t *msk = mask ? mask + y * stride + (tx0 + a0 - rx) : NULL;
        for (int64_t a = a0; a < a1; a++)
            row[a] = tide_corr_clean(src[a - a0], msk ? msk[a - a0] : 0, bits);
        for (int64_t a = 0; a < a0; a++) {
            int64_t s = tide_corr_source(tx0 + a, ty0 + b, w, h, rx, ry, stride, reflect);
            row[a] = s < 0 ? 0.0f : tide_corr_clean(pix[s], mask ? mask[s] : 0, bits);
        }
        for (int64_t a = a1; a < pitch; a++) {
            int64_t s =
                a < px ? tide_corr_source(tx0 + a, ty0 + b, w, h, rx, ry, stride, reflect) : -1;
            row[a] = s < 0 ? 0.0f : tide_corr_clean(pix[s], mask ? mask[s] : 0, bits);
        }
    } else {
        for (int64_t a = 0; a < pitch; a++) {
            int64_t s =
                a < px ? tide_corr_source(tx0 + a, ty0 + b, w, h, rx, ry, stride, reflect) : -1;
            row[a] = s < 0 ? 0.0f : tide_corr_clean(pix[s], mask ? mask[s] : 0, bits);
        }
    }
}

/* Row v of Y = X * H_k. */
static void mul_row(const struct tide_correlator *c, int k, const float *X, float *Y, int64_t v) {
    const int64_t cw = c->cw, pitch = c->pitch;
    const float *spec = c->spec + (int64_t)k * c->py * cw * 2;
    const float *b = X + v * pitch, *s = spec + 2 * v * cw;
    float *o = Y + v * pitch;
    for (int64_t u = 0; u < cw; u++)
        tide_corr_cmul(b[2 * u], b[2 * u + 1], s[2 * u], s[2 * u + 1], &o[2 * u], &o[2 * u + 1]);
}

/* Output rows of the tile at (tx0, ty0) from Y. */
static void crop_row(const struct tide_correlator *c, const float *Y, int64_t tx0, int64_t ty0,
                     int64_t y, tide_image *out) {
    const int64_t nx = c->ox < c->w - tx0 ? c->ox : c->w - tx0;
    memcpy(out->pix + (ty0 + y) * out->stride + tx0, Y + (c->ry + y) * c->pitch + c->rx,
           (size_t)nx * sizeof(float));
}

int tide_corr_pad_cpu(tide_ctx *ctx, const struct tide_correlator *c, const tide_image *in) {
#pragma omp parallel for num_threads(ctx->threads) schedule(static)
    for (int64_t b = 0; b < c->py; b++)
        pad_row(c, in, c->tx0, c->ty0, b, c->X);
    return TIDE_OK;
}

int tide_corr_multiply_cpu(tide_ctx *ctx, const struct tide_correlator *c, int k) {
#pragma omp parallel for num_threads(ctx->threads) schedule(static)
    for (int64_t v = 0; v < c->py; v++)
        mul_row(c, k, c->X, c->Y, v);
    return TIDE_OK;
}

int tide_corr_crop_cpu(tide_ctx *ctx, const struct tide_correlator *c, tide_image *out) {
    const int64_t ny = c->oy < c->h - c->ty0 ? c->oy : c->h - c->ty0;
#pragma omp parallel for num_threads(ctx->threads) schedule(static)
    for (int64_t y = 0; y < ny; y++)
        crop_row(c, c->Y, c->tx0, c->ty0, y, out);
    return TIDE_OK;
}

int tide_corr_run_tiles_cpu(tide_ctx *ctx, const struct tide_correlator *c, const tide_image *in,
                            tide_image *out) {
    const int64_t nt = c->ntx * c->nty;
    int st = TIDE_OK;
#pragma omp parallel num_threads(c->nbuf)
    {
        const int t = omp_get_thread_num();
        float *X = c->tbuf[2 * t], *Y = c->nk == 1 ? X : c->tbuf[2 * t + 1];
#pragma omp for schedule(dynamic, 1)
        for (int64_t q = 0; q < nt; q++) {
            const int64_t tx0 = (q % c->ntx) * c->ox, ty0 = (q / c->ntx) * c->oy;
            const int64_t ny = c->oy < c->h - ty0 ? c->oy : c->h - ty0;
            for (int64_t b = 0; b < c->py; b++)
                pad_row(c, in, tx0, ty0, b, X);
            int e = tide_fft_execute(ctx, c->fwd, X);
            for (int k = 0; k < c->nk && !e; k++) {
                for (int64_t v = 0; v < c->py; v++)
                    mul_row(c, k, X, Y, v);
                e = tide_fft_execute(ctx, c->inv, Y);
                for (int64_t y = 0; y < ny && !e; y++)
                    crop_row(c, Y, tx0, ty0, y, &out[k]);
            }
            if (e) {
#pragma omp atomic write
                st = e;
            }
        }
    }
    return st;
}
