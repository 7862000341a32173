/* cosmetics_cpu.c — CPU twins of the cosmetics kernels (cosmetics_kernels.h): plain loops over
 * rows with OpenMP, the per-pixel math from cosmetics_math.h. Counts are integer reductions,
 * so they do not depend on the thread count. */
#include <stdlib.h>
#include <string.h>

#include "phot/cosmetics_kernels.h"
#include "tide/status.h"

#define NT(ctx) ((ctx)->threads > 0 ? (ctx)->threads : 1)

int tide_cos_saturate_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *pix,
                          uint16_t *mask, float level) {
#pragma omp parallel for schedule(static) num_threads(NT(ctx))
    for (int64_t y = 0; y < g->h; y++)
        for (int64_t x = 0; x < g->w; x++) {
            const float v = pix[y * g->stride + x];
            if (isfinite(v) && v >= level)
                mask[y * g->stride + x] |= TIDE_MASK_SATURATED;
        }
    return 0;
}

/* Lines are processed in blocks of BLK; along columns the block walks rows so each row
 * segment is one cache line run. */
#define BLK 64

int tide_cos_bleed_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *pix, uint16_t *mask,
                       float hi, int axis, int grow, uint8_t *scratch) {
    /* A line l, position i: along columns l = x, i = y; along rows l = y, i = x. */
    const int64_t nlines = axis == 0 ? g->w : g->h, len = axis == 0 ? g->h : g->w;
    const int64_t ps_l = axis == 0 ? 1 : g->stride, ps_i = axis == 0 ? g->stride : 1;
    const int64_t ss_l = axis == 0 ? 1 : g->w, ss_i = axis == 0 ? g->w : 1;
    const int64_t nblk = (nlines + BLK - 1) / BLK;
#pragma omp parallel for schedule(dynamic, 1) num_threads(NT(ctx))
    for (int64_t b = 0; b < nblk; b++) {
        const int64_t l0 = b * BLK;
        const int nl = (int)(l0 + BLK <= nlines ? BLK : nlines - l0);
        int prev[BLK], dist[BLK];
        for (int k = 0; k < nl; k++)
            prev[k] = 0;
        for (int64_t i = 0; i < len; i++)
            for (int k = 0; k < nl; k++) {
                const int64_t p = (l0 + k) * ps_l + i * ps_i, s = (l0 + k) * ss_l + i * ss_i;
                scratch[s] = cos_bleed_fwd(pix[p], mask[p], hi, &prev[k]);
            }
        for (int k = 0; k < nl; k++) {
            prev[k] = 0;
            dist[k] = 1 << 30;
        }
        for (int64_t i = len - 1; i >= 0; i--)
            for (int k = 0; k < nl; k++) {
                const int64_t p = (l0 + k) * ps_l + i * ps_i, s = (l0 + k) * ss_l + i * ss_i;
                scratch[s] = cos_bleed_bwd(pix[p], mask[p], hi, scratch[s], grow, &prev[k],
                                           &dist[k]);
            }
        for (int k = 0; k < nl; k++)
            dist[k] = 1 << 30;
        for (int64_t i = 0; i < len; i++)
            for (int k = 0; k < nl; k++) {
                const int64_t p = (l0 + k) * ps_l + i * ps_i, s = (l0 + k) * ss_l + i * ss_i;
                if (cos_bleed_final(mask[p], scratch[s], grow, &dist[k]))
                    mask[p] |= TIDE_MASK_BLEED;
            }
    }
    return 0;
}

int tide_cos_badcol_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *pix,
                        const uint16_t *mask, const tide_cos_noise *nm, uint16_t excl, float k,
                        int minrun, uint8_t *blk, uint8_t *out) {
#pragma omp parallel for schedule(dynamic, 8) num_threads(NT(ctx))
    for (int64_t x = 0; x < g->w; x++)
        cos_col_scan(pix, mask, g, nm, excl, k, minrun, x, blk, out);
    return 0;
}

int tide_cos_hotcold_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *pix,
                         const uint16_t *mask, const tide_cos_noise *nm, const tide_cos_hot *hp,
                         uint8_t *flag) {
#pragma omp parallel for schedule(static) num_threads(NT(ctx))
    for (int64_t y = 0; y < g->h; y++)
        for (int64_t x = 0; x < g->w; x++)
            flag[y * g->w + x] = (uint8_t)cos_hotcold(pix, mask, g, nm, hp, x, y);
    return 0;
}

int tide_cos_apply_cpu(tide_ctx *ctx, const tide_cos_geom *g, const uint8_t *flag,
                       uint16_t *mask, uint16_t bit1, uint16_t bit2, int64_t *nnew) {
    int64_t n = 0;
#pragma omp parallel for schedule(static) reduction(+ : n) num_threads(NT(ctx))
    for (int64_t y = 0; y < g->h; y++)
        for (int64_t x = 0; x < g->w; x++) {
            const uint8_t f = flag[y * g->w + x];
            if (!f)
                continue;
            uint16_t *m = &mask[y * g->stride + x];
            const uint16_t old = *m;
            *m = (uint16_t)(old | ((f & 1) ? bit1 : 0) | ((f & 2) ? bit2 : 0));
            n += *m != old;
        }
    if (nnew)
        *nnew = n;
    return 0;
}

int tide_cos_fill_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *src, int64_t sld,
                      const uint16_t *mask, float *dst, int64_t dld, uint16_t repl,
                      uint16_t excl, int nonfinite, int use_fallback, float fallback,
                      uint8_t *flag) {
    const int inplace = (const float *)dst == src;
#pragma omp parallel for schedule(static) num_threads(NT(ctx))
    for (int64_t y = 0; y < g->h; y++)
        for (int64_t x = 0; x < g->w; x++) {
            const float v = src[y * sld + x];
            const int r = (mask[y * g->stride + x] & repl) || (nonfinite && !isfinite(v));
            uint8_t f = 0;
            if (r) {
                float m;
                if (cos_fill_value(src, sld, mask, g->stride, g->w, g->h, x, y, excl, &m)) {
                    dst[y * dld + x] = m;
                    f = COS_F_SET;
                } else if (use_fallback) {
                    dst[y * dld + x] = fallback;
                } else if (!inplace) {
                    dst[y * dld + x] = v;
                }
            } else if (!inplace) {
                dst[y * dld + x] = v;
            }
            if (flag)
                flag[y * g->w + x] = f;
        }
    return 0;
}

int tide_cos_noise_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                       const tide_cos_noise *nm, float *N) {
#pragma omp parallel for schedule(static) num_threads(NT(ctx))
    for (int64_t y = 0; y < g->h; y++)
        for (int64_t x = 0; x < g->w; x++)
            N[y * g->w + x] = cos_sigma(nm, cos_box_median(W, g->w, g->w, g->h, x, y, 2));
    return 0;
}

int tide_cos_laplace_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *W, const float *N,
                         float *S, float *SP, float low) {
    const int64_t w = g->w;
#pragma omp parallel num_threads(NT(ctx))
    {
#pragma omp for schedule(static)
        for (int64_t y = 0; y < g->h; y++)
            for (int64_t x = 0; x < w; x++)
                S[y * w + x] = COS_DIV(cos_lplus(W, w, w, g->h, x, y),
                                       COS_MUL(2.0f, N[y * w + x]));
#pragma omp for schedule(static)
        for (int64_t y = 0; y < g->h; y++)
            for (int64_t x = 0; x < w; x++) {
                const float s = S[y * w + x];
                SP[y * w + x] = s > low ? COS_SUB(s, cos_box_median(S, w, w, g->h, x, y, 2)) : s;
            }
    }
    return 0;
}

int tide_cos_candidates_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                            const float *N, const float *SP, const uint16_t *mask,
                            const tide_cos_lacos *lp, uint8_t *cand) {
#pragma omp parallel for schedule(dynamic, 16) num_threads(NT(ctx))
    for (int64_t y = 0; y < g->h; y++)
        for (int64_t x = 0; x < g->w; x++)
            cand[y * g->w + x] = (uint8_t)cos_candidate(W, N, SP, mask, g, lp, x, y);
    return 0;
}

int tide_cos_grow_cpu(tide_ctx *ctx, const tide_cos_geom *g, const uint8_t *in, const float *SP,
                      const uint16_t *mask, const tide_cos_lacos *lp, float thr, uint8_t *out) {
#pragma omp parallel for schedule(static) num_threads(NT(ctx))
    for (int64_t y = 0; y < g->h; y++)
        for (int64_t x = 0; x < g->w; x++)
            out[y * g->w + x] = (uint8_t)cos_grow_one(in, SP, mask, g, lp, thr, x, y);
    return 0;
}

int tide_cos_count_cpu(tide_ctx *ctx, const tide_cos_geom *g, const uint16_t *mask,
                       int64_t counts[16]) {
    int64_t c[16] = {0};
#pragma omp parallel for schedule(static) reduction(+ : c[:16]) num_threads(NT(ctx))
    for (int64_t y = 0; y < g->h; y++)
        for (int64_t x = 0; x < g->w; x++) {
            const uint16_t m = mask[y * g->stride + x];
            if (m)
                for (int b = 0; b < 16; b++)
                    c[b] += (m >> b) & 1;
        }
    memcpy(counts, c, sizeof c);
    return 0;
}
