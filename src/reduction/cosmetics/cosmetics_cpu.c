/* cosmetics_cpu.c — CPU twins of the cosmetics kernels (cosmetics_kernels.h): plain loops over
 * rows with OpenMP, the per-pixel math from cosmetics_math.h. Counts are integer reductions,
 * so they do not depend on the thread count. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cosmetics_internal.h"
#include "cosmetics_kernels.h"
#include "cosmetics_lines_math.h"
#include "cosmetics_median.h"
#include "tide/status.h"

#define NT(ctx) ((ctx)->threads > 0 ? (ctx)->threads : 1)

/* 1 when a pixel counts as a neighbour (hot/cold, bad columns): finite, no excluded bit. */
static inline uint8_t usable(float v, uint16_t m, uint16_t excl) {
    return (uint8_t)((fabsf(v) <= FLT_MAX) & ((m & excl) == 0));
}

int tide_cos_saturate_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *pix, uint16_t *mask,
                          float level) {
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
    /* A line without a SATURATED pixel gets no BLEED (sweep 1 marks nothing, so neither do
     * the others): only blocks of lines holding one are swept. */
    uint8_t *sat = calloc((size_t)nblk, 1);
    if (sat) {
#pragma omp parallel for schedule(static) num_threads(NT(ctx))
        for (int64_t b = 0; b < nblk; b++) {
            const int64_t l1 = (b + 1) * BLK < nlines ? (b + 1) * BLK : nlines;
            int any = 0;
            for (int64_t i = 0; i < len && !any; i++)
                for (int64_t l = b * BLK; l < l1; l++)
                    any |= (mask[l * ps_l + i * ps_i] & TIDE_MASK_SATURATED) != 0;
            sat[b] = (uint8_t)any;
        }
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(NT(ctx))
    for (int64_t b = 0; b < nblk; b++) {
        if (sat && !sat[b])
            continue;
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
                scratch[s] =
                    cos_bleed_bwd(pix[p], mask[p], hi, scratch[s], grow, &prev[k], &dist[k]);
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
    free(sat);
    return 0;
}

/* z of row y (cos_col_z): where the pixel and its four neighbours are all usable, directly
 * (the common case, no gathering); elsewhere by cos_col_z. */
static void col_z_row(const float *pix, const uint16_t *mask, const tide_cos_geom *g,
                      const tide_cos_noise *nm, uint16_t excl, int64_t y, float *restrict z) {
    const int64_t w = g->w;
    const float *restrict p = pix + y * g->stride;
    const uint16_t *restrict m = mask + y * g->stride;
    for (int64_t x = 0; x < w; x++) {
        if (x < 2 || x >= w - 2 ||
            !(usable(p[x - 2], m[x - 2], excl) & usable(p[x - 1], m[x - 1], excl) &
              usable(p[x], m[x], excl) & usable(p[x + 1], m[x + 1], excl) &
              usable(p[x + 2], m[x + 2], excl))) {
            z[x] = cos_col_z(pix, mask, g, nm, excl, x, y);
            continue;
        }
        z[x] = cos_col_zval(nm, p[x], cos_med4(p[x - 2], p[x - 1], p[x + 1], p[x + 2]));
    }
}

/* Bad columns: the same block signs and runs as cos_col_scan, in a cache-friendly order. A
 * column at a time (the GPU's order) walks the frame with a stride of one row per pixel; here
 * each band of COS_COL_BLOCK rows gets its z values row by row into a small buffer, then the
 * block signs of all its columns; the runs (which rarely read pixels again) follow per
 * column. The numbers are those of cos_col_z / cos_col_sign / cos_col_runs. */
int tide_cos_badcol_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *pix,
                        const uint16_t *mask, const tide_cos_noise *nm, uint16_t excl, float k,
                        int minrun, uint8_t *blk, uint8_t *out) {
    const int64_t w = g->w, h = g->h, nb = (h + COS_COL_BLOCK - 1) / COS_COL_BLOCK;
    int st = 0;
#pragma omp parallel num_threads(NT(ctx))
    {
        /* z of a band, then lo, hi and a NaN flag per column */
        float *zb = malloc((sizeof(float) * (COS_COL_BLOCK + 3)) * (size_t)w);
        if (!zb) {
#pragma omp atomic write
            st = 1;
        }
#pragma omp barrier
        if (!st) {
#pragma omp for schedule(static)
            for (int64_t y = 0; y < h; y++)
                memset(out + y * w, 0, (size_t)w);
#pragma omp for schedule(dynamic, 1)
            for (int64_t b = 0; b < nb; b++) {
                const int64_t y0 = b * COS_COL_BLOCK;
                const int rows = (int)(y0 + COS_COL_BLOCK <= h ? COS_COL_BLOCK : h - y0);
                for (int r = 0; r < rows; r++)
                    col_z_row(pix, mask, g, nm, excl, y0 + r, zb + r * w);
                /* Full blocks: the two middle values of every column by the network
                 * (cos_median of 32 is their mean), then per column the sign; columns
                 * with a NaN (unusable pixel) and a short last block go the plain way. */
                float *lo = zb + COS_COL_BLOCK * w, *hi = lo + w;
                uint8_t *nan = (uint8_t *)(hi + w);
                const int full = rows == COS_COL_BLOCK;
                if (full) {
                    tide_cos_mid32_cols(zb, w, w, lo, hi);
                    memset(nan, 0, (size_t)w);
                    for (int r = 0; r < rows; r++)
                        for (int64_t x = 0; x < w; x++)
                            nan[x] |= zb[r * w + x] != zb[r * w + x];
                }
                for (int64_t x = 0; x < w; x++) {
                    int s;
                    if (full && !nan[x]) {
                        const float m = tide_fmul(0.5f, tide_fadd(lo[x], hi[x]));
                        s = cos_col_sign_of(m, k);
                    } else {
                        float z[COS_COL_BLOCK];
                        int n = 0;
                        for (int r = 0; r < rows; r++) {
                            const float t = zb[r * w + x];
                            if (t == t)
                                z[n++] = t;
                        }
                        s = cos_col_sign(z, n, rows, k);
                    }
                    blk[b * w + x] = (uint8_t)(s > 0 ? 1 : (s < 0 ? 2 : 0));
                }
            }
#pragma omp for schedule(dynamic, 64)
            for (int64_t x = 0; x < w; x++)
                cos_col_runs(pix, mask, g, nm, excl, k, minrun, x, blk, out);
        }
        free(zb);
    }
    if (st) /* no scratch: the column order */
        for (int64_t x = 0; x < w; x++)
            cos_col_scan(pix, mask, g, nm, excl, k, minrun, x, blk, out);
    return 0;
}

/* Hot/cold pixels. The answer at every pixel is cos_hotcold's; a cheap vectorised screen
 * first proves it 0 for most pixels. Where the pixel and its 8 neighbours are all in the frame
 * and usable, the neighbours' median med lies in [mn, mx] (their min and max), and every
 * float step of cos_sigma is monotone, so (see cos_hotcold) a hot pixel needs v > mx and
 * v − mn > hot_sigma·σ(mn), a cold one v < mn and mx − v > cold_sigma·σ(mn). Other pixels
 * (edges, masked or non-finite neighbours) take the full test. */
int tide_cos_hotcold_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *pix,
                         const uint16_t *mask, const tide_cos_noise *nm, const tide_cos_hot *hp,
                         uint8_t *flag) {
    const int64_t w = g->w, h = g->h, ld = g->stride;
    const int screen = hp->isolation >= 0.0f && hp->hot_sigma >= 0.0f && hp->cold_sigma >= 0.0f;
#pragma omp parallel for schedule(static) num_threads(NT(ctx))
    for (int64_t y = 0; y < h; y++) {
        uint8_t *restrict f = flag + y * w;
        if (!screen || y == 0 || y == h - 1 || w < 3) {
            for (int64_t x = 0; x < w; x++)
                f[x] = (uint8_t)cos_hotcold(pix, mask, g, nm, hp, x, y);
            continue;
        }
        const float *restrict a = pix + (y - 1) * ld, *restrict b = a + ld, *restrict c = b + ld;
        const uint16_t *restrict ma = mask + (y - 1) * ld, *restrict mb = ma + ld,
                                 *restrict mc = mb + ld;
        const uint16_t ex = hp->excl;
        /* screen: 0 = surely nothing, 1 = maybe hot, 2 = maybe cold, 3 = full test */
        for (int64_t x = 1; x < w - 1; x++) {
            const uint8_t ok = usable(a[x - 1], ma[x - 1], ex) & usable(a[x], ma[x], ex) &
                               usable(a[x + 1], ma[x + 1], ex) & usable(b[x - 1], mb[x - 1], ex) &
                               usable(b[x], mb[x], ex) & usable(b[x + 1], mb[x + 1], ex) &
                               usable(c[x - 1], mc[x - 1], ex) & usable(c[x], mc[x], ex) &
                               usable(c[x + 1], mc[x + 1], ex);
            /* written as the packed min/max patterns; NaN only where ok == 0 */
            float mx = a[x - 1], mn = a[x - 1];
#define MXMN(u) (mx = mx < (u) ? (u) : mx, mn = (u) < mn ? (u) : mn)
            MXMN(a[x]), MXMN(a[x + 1]), MXMN(b[x - 1]), MXMN(b[x + 1]);
            MXMN(c[x - 1]), MXMN(c[x]), MXMN(c[x + 1]);
#undef MXMN
            const float v = b[x];
            const uint8_t s = (uint8_t)((mx < v) | ((v < mn) << 1));
            f[x] = (uint8_t)(s | (uint8_t)((ok ^ 1) * 3)); /* ok ? s : 3, branch-free */
        }
        f[0] = 3;
        f[w - 1] = 3;
        for (int64_t x = 0; x < w; x++) {
            const uint8_t s = f[x];
            if (!s)
                continue;
            int full = s == 3;
            if (!full) {
                const float v = b[x];
                float mx = a[x - 1], mn = a[x - 1];
                const float nb[7] = {a[x], a[x + 1], b[x - 1], b[x + 1], c[x - 1], c[x], c[x + 1]};
                for (int k = 0; k < 7; k++) {
                    mx = nb[k] > mx ? nb[k] : mx;
                    mn = nb[k] < mn ? nb[k] : mn;
                }
                const float sg = cos_sigma(nm, mn);
                full = s == 1 ? hp->do_hot && tide_fsub(v, mn) > tide_fmul(hp->hot_sigma, sg)
                              : hp->do_cold && tide_fsub(mx, v) > tide_fmul(hp->cold_sigma, sg);
            }
            f[x] = full ? (uint8_t)cos_hotcold(pix, mask, g, nm, hp, x, y) : (uint8_t)0;
        }
    }
    return 0;
}

int tide_cos_apply_cpu(tide_ctx *ctx, const tide_cos_geom *g, const uint8_t *flag, uint16_t *mask,
                       uint16_t bit1, uint16_t bit2, int64_t *nnew) {
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
                      const uint16_t *mask, float *dst, int64_t dld, uint16_t repl, uint16_t excl,
                      int nonfinite, int use_fallback, float fallback, uint8_t *flag) {
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

/* Rows per block of the median passes: the 5-row bands of a block stay in cache. */
#define MED_ROWS 32

int tide_cos_noise_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                       const tide_cos_noise *nm, float *N) {
    const int64_t w = g->w, nblk = (g->h + MED_ROWS - 1) / MED_ROWS;
#pragma omp parallel num_threads(NT(ctx))
    {
        float *cs = malloc(sizeof(float) * 5 * (size_t)w);
#pragma omp for schedule(static)
        for (int64_t b = 0; b < nblk; b++) {
            const int64_t y0 = b * MED_ROWS, y1 = y0 + MED_ROWS < g->h ? y0 + MED_ROWS : g->h;
            if (cs)
                tide_cos_med5_rows(W, w, w, g->h, y0, y1, N + y0 * w, w, cs);
            for (int64_t y = y0; y < y1; y++)
                for (int64_t x = 0; x < w; x++)
                    N[y * w + x] =
                        cos_sigma(nm, cs ? N[y * w + x] : cos_box_median(W, w, w, g->h, x, y, 2));
        }
        free(cs);
    }
    return 0;
}

/* S on the inner columns of one inner row (up, centre, down rows of W): the same terms and
 * sums as cos_lplus5, in two loops over chunks so that the compiler vectorises both (it does
 * not if-convert the clipping when it feeds the sum directly). */
#define LAP_CHUNK 256
static void laplace_row(const float *restrict up, const float *restrict c, const float *restrict dn,
                        const float *restrict N, int64_t w, float *restrict S) {
    float t0[LAP_CHUNK], t1[LAP_CHUNK], t2[LAP_CHUNK], t3[LAP_CHUNK];
    for (int64_t x0 = 1; x0 < w - 1; x0 += LAP_CHUNK) {
        const int64_t n = x0 + LAP_CHUNK < w - 1 ? LAP_CHUNK : w - 1 - x0;
        for (int64_t i = 0; i < n; i++) {
            const int64_t x = x0 + i;
            const float c2 = tide_fadd(c[x], c[x]);
            t0[i] = cos_lpterm(c2, c[x - 1], up[x]);
            t1[i] = cos_lpterm(c2, c[x + 1], up[x]);
            t2[i] = cos_lpterm(c2, c[x - 1], dn[x]);
            t3[i] = cos_lpterm(c2, c[x + 1], dn[x]);
        }
        for (int64_t i = 0; i < n; i++)
            S[x0 + i] =
                tide_fdiv(cos_lpsum(t0[i], t1[i], t2[i], t3[i]), tide_fmul(2.0f, N[x0 + i]));
    }
}

int tide_cos_laplace_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *W, const float *N,
                         float *S, float *SP, float low) {
    const int64_t w = g->w, nblk = (g->h + MED_ROWS - 1) / MED_ROWS;
#pragma omp parallel num_threads(NT(ctx))
    {
#pragma omp for schedule(static)
        for (int64_t y = 0; y < g->h; y++) {
            if (y == 0 || y == g->h - 1 || w < 3) {
                for (int64_t x = 0; x < w; x++)
                    S[y * w + x] =
                        tide_fdiv(cos_lplus(W, w, w, g->h, x, y), tide_fmul(2.0f, N[y * w + x]));
                continue;
            }
            laplace_row(W + (y - 1) * w, W + y * w, W + (y + 1) * w, N + y * w, w, S + y * w);
            for (int64_t x = 0; x < w; x += w - 1) /* the edge columns */
                S[y * w + x] =
                    tide_fdiv(cos_lplus(W, w, w, g->h, x, y), tide_fmul(2.0f, N[y * w + x]));
        }
        /* SP = S - med5(S) where S > low: the medians of a block first (all of them, the
         * vectorised network is cheaper than picking pixels), written into SP, then used. */
        float *cs = malloc(sizeof(float) * 5 * (size_t)w);
#pragma omp for schedule(static)
        for (int64_t b = 0; b < nblk; b++) {
            const int64_t y0 = b * MED_ROWS, y1 = y0 + MED_ROWS < g->h ? y0 + MED_ROWS : g->h;
            if (cs)
                tide_cos_med5_rows(S, w, w, g->h, y0, y1, SP + y0 * w, w, cs);
            for (int64_t y = y0; y < y1; y++)
                for (int64_t x = 0; x < w; x++) {
                    const float s = S[y * w + x];
                    const float m =
                        cs ? SP[y * w + x] : (s > low ? cos_box_median(S, w, w, g->h, x, y, 2) : 0);
                    SP[y * w + x] = s > low ? tide_fsub(s, m) : s;
                }
        }
        free(cs);
    }
    return 0;
}

int tide_cos_candidates_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *W, const float *N,
                            const float *SP, const uint16_t *mask, const tide_cos_lacos *lp,
                            uint8_t *cand) {
#pragma omp parallel for schedule(dynamic, 16) num_threads(NT(ctx))
    for (int64_t y = 0; y < g->h; y++)
        for (int64_t x = 0; x < g->w; x++)
            cand[y * g->w + x] = (uint8_t)cos_candidate(W, N, SP, mask, g, lp, x, y);
    return 0;
}

int tide_cos_grow_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *W, const uint8_t *in,
                      const float *SP, const uint16_t *mask, const tide_cos_lacos *lp, float thr,
                      uint8_t *out) {
#pragma omp parallel for schedule(static) num_threads(NT(ctx))
    for (int64_t y = 0; y < g->h; y++)
        for (int64_t x = 0; x < g->w; x++)
            out[y * g->w + x] = (uint8_t)cos_grow_one(W, in, SP, mask, g, lp, thr, x, y);
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

int tide_cos_any_valid_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *pix,
                           const uint16_t *mask, uint16_t bits) {
    int any = 0;
#pragma omp parallel for schedule(static) reduction(| : any) num_threads(NT(ctx))
    for (int64_t y = 0; y < g->h; y++) {
        int a = 0;
        for (int64_t x = 0; x < g->w; x++)
            a |= usable(pix[y * g->stride + x], mask[y * g->stride + x], bits);
        any |= a;
    }
    return any;
}

int tide_cos_fill_needs_fallback_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *pix,
                                     const uint16_t *mask, uint16_t repl, uint16_t excl) {
    int need = 0;
#pragma omp parallel for schedule(static) reduction(| : need) num_threads(NT(ctx))
    for (int64_t y = 0; y < g->h; y++)
        for (int64_t x = 0; x < g->w; x++) {
            const int64_t i = y * g->stride + x;
            float m;
            if (((mask[i] & repl) || !isfinite(pix[i])) &&
                !cos_fill_value(pix, g->stride, mask, g->stride, g->w, g->h, x, y, excl, &m))
                need = 1;
        }
    return need;
}
