/* subtract_cpu.c — CPU twins of the subtraction kernels (subtract_kernels.h): plain loops,
 * OpenMP over stamps or rows; every sum in a fixed order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "subtract_kernels.h"
#include "subtract_math.h"
#include "tide/status.h"

static inline uint16_t mask_of(const tide_image *im, int64_t idx) {
    return im->mask ? im->mask[idx] : 0;
}

int tide_sub_select_cpu(tide_ctx *ctx, const tide_image *ref, const tide_image *tgt,
                        const tide_sub_geom *g, int ncx, int ncy, int margin, float vmin,
                        int64_t *centre) {
    (void)ctx;
    int64_t w = g->width, h = g->height;
#pragma omp parallel for schedule(dynamic)
    for (int cell = 0; cell < ncx * ncy; cell++) {
        int cx = cell % ncx, cy = cell / ncx;
        int64_t x0 = w * cx / ncx, x1 = w * (cx + 1) / ncx;
        int64_t y0 = h * cy / ncy, y1 = h * (cy + 1) / ncy;
        if (x0 < margin)
            x0 = margin;
        if (y0 < margin)
            y0 = margin;
        if (x1 > w - margin)
            x1 = w - margin;
        if (y1 > h - margin)
            y1 = h - margin;
        int64_t best = -1;
        float bv = 0.0f;
        for (int64_t y = y0; y < y1; y++)
            for (int64_t x = x0; x < x1; x++) {
                float v = ref->pix[y * ref->stride + x];
                if (!(v >= vmin) ||
                    !tide_sub_usable(v, mask_of(ref, y * ref->stride + x), g->bits) ||
                    !tide_sub_peak(ref->pix, ref->stride, x, y) ||
                    !tide_sub_usable(tgt->pix[y * tgt->stride + x],
                                     mask_of(tgt, y * tgt->stride + x), g->bits))
                    continue;
                if (best < 0 || v > bv) {
                    best = y * w + x;
                    bv = v;
                }
            }
        centre[cell] = best;
    }
    return TIDE_OK;
}

int tide_sub_weights_cpu(tide_ctx *ctx, const tide_image *ref, const tide_image *tgt,
                         const tide_sub_geom *g, float var_ref_const, float var_tgt_const,
                         const int64_t *centre, float *W, float *D) {
    (void)ctx;
    int64_t w = g->width, h = g->height;
    int kh = g->kh;
#pragma omp parallel for schedule(dynamic)
    for (int s = 0; s < g->ns; s++) {
        float *ws = W + (size_t)s * (size_t)g->npx;
        float *ones = D + ((size_t)s * (size_t)g->nc + (size_t)(g->nc - 3)) * (size_t)g->npx;
        float *rvar = ones + g->npx, *tv = rvar + g->npx;
        for (int64_t i = 0; i < g->npx; i++) {
            ws[i] = 0.0f;
            ones[i] = 1.0f;
            tv[i] = 0.0f;
            rvar[i] = 0.0f;
            if (centre[s] < 0)
                continue;
            int64_t x, y;
            tide_sub_stamp_pixel(centre[s], i, g->hs, w, &x, &y);
            if (x < kh || y < kh || x >= w - kh || y >= h - kh)
                continue;
            int64_t ti = y * tgt->stride + x;
            float t = tgt->pix[ti];
            if (!tide_sub_usable(t, mask_of(tgt, ti), g->bits))
                continue;
            int ok = 1;
            for (int64_t yy = y - kh; yy <= y + kh && ok; yy++)
                for (int64_t xx = x - kh; xx <= x + kh; xx++) {
                    int64_t ri = yy * ref->stride + xx;
                    if (!tide_sub_usable(ref->pix[ri], mask_of(ref, ri), g->bits)) {
                        ok = 0;
                        break;
                    }
                }
            if (!ok)
                continue;
            float vt = tgt->var ? tgt->var[ti] : var_tgt_const;
            float vr = ref->var ? ref->var[y * ref->stride + x] : var_ref_const;
            float v = vt + vr;
            if (!(v > 0.0f) || !isfinite(v))
                continue;
            ws[i] = 1.0f / v;
            tv[i] = t;
            rvar[i] = v;
        }
    }
    return TIDE_OK;
}

int tide_sub_gather_cpu(tide_ctx *ctx, const tide_image *im, const tide_sub_geom *g, int col,
                        const int64_t *centre, float *D) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int s = 0; s < g->ns; s++) {
        float *d = D + ((size_t)s * (size_t)g->nc + (size_t)col) * (size_t)g->npx;
        for (int64_t i = 0; i < g->npx; i++) {
            if (centre[s] < 0) {
                d[i] = 0.0f;
                continue;
            }
            int64_t x, y;
            tide_sub_stamp_pixel(centre[s], i, g->hs, g->width, &x, &y);
            float v = im->pix[y * im->stride + x];
            d[i] = isfinite(v) ? v : 0.0f;
        }
    }
    return TIDE_OK;
}

int tide_sub_basis_stamps_cpu(tide_ctx *ctx, const tide_image *ref, const tide_sub_geom *g,
                              const float *kernels, int nb, const int64_t *centre, float *D) {
    (void)ctx;
    int kh = g->kh, kw = 2 * kh + 1;
    int64_t sw = 2 * g->hs + 1, pw = sw + 2 * kh; /* stamp with its kernel halo */
    int err = 0;
#pragma omp parallel
    {
        float *patch = malloc((size_t)(pw * pw) * sizeof *patch);
        if (!patch) {
#pragma omp atomic write
            err = 1;
        }
#pragma omp for schedule(dynamic)
        for (int s = 0; s < g->ns; s++) {
            if (!patch)
                continue;
            float *ds = D + (size_t)s * (size_t)g->nc * (size_t)g->npx;
            if (centre[s] < 0) {
                memset(ds, 0, (size_t)nb * (size_t)g->npx * sizeof *ds);
                continue;
            }
            int64_t x0 = centre[s] % g->width - g->hs - kh, y0 = centre[s] / g->width - g->hs - kh;
            for (int64_t j = 0; j < pw; j++)
                for (int64_t i = 0; i < pw; i++) {
                    int64_t idx = (y0 + j) * ref->stride + x0 + i;
                    float v = ref->pix[idx];
                    patch[j * pw + i] = tide_sub_usable(v, mask_of(ref, idx), g->bits) ? v : 0.0f;
                }
            /* row by row, the kernel's taps outermost: the innermost loop runs along the
             * stamp row over contiguous memory and vectorises (float sums of <= 17^2 terms:
             * ~1e-6 relative, as the FFT path) */
            for (int b = 0; b < nb; b++) {
                const float *k = kernels + (size_t)b * (size_t)(kw * kw);
                float *d = ds + (size_t)b * (size_t)g->npx;
                for (int64_t py = 0; py < sw; py++) {
                    float *acc = d + py * sw;
                    for (int64_t px = 0; px < sw; px++)
                        acc[px] = 0.0f;
                    for (int jy = 0; jy < kw; jy++) {
                        const float *pr = patch + (py + jy) * pw;
                        for (int jx = 0; jx < kw; jx++) {
                            const float kv = k[jy * kw + jx];
                            const float *src = pr + jx;
                            for (int64_t px = 0; px < sw; px++)
                                acc[px] += kv * src[px];
                        }
                    }
                }
            }
        }
        free(patch);
    }
    return err ? tide_error(TIDE_E_NOMEM, "subtract: stamp patch") : TIDE_OK;
}

int tide_sub_normal_cpu(tide_ctx *ctx, const tide_sub_geom *g, const float *D, const float *W,
                        double *Q) {
    (void)ctx;
    int nc = g->nc;
    int64_t npx = g->npx;
#pragma omp parallel for schedule(dynamic)
    for (int s = 0; s < g->ns; s++) {
        const float *ds = D + (size_t)s * (size_t)nc * (size_t)npx;
        const float *ws = W + (size_t)s * (size_t)npx;
        double *q = Q + (size_t)s * (size_t)nc * (size_t)nc;
        for (int a = 0; a < nc; a++)
            for (int b = a; b < nc; b++) {
                const float *da = ds + (size_t)a * (size_t)npx, *db = ds + (size_t)b * (size_t)npx;
                double acc = tide_sub_normal_tile(0.0, ws, da, db, (int)npx);
                q[a * nc + b] = acc;
                q[b * nc + a] = acc;
            }
    }
    return TIDE_OK;
}

int tide_sub_combine_cpu(tide_ctx *ctx, const tide_sub_model *m, const tide_image *tgt,
                         tide_image *diff, tide_image *matched) {
    (void)ctx;
    int64_t w = tgt->width, h = tgt->height;
#pragma omp parallel for schedule(static)
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            int64_t idx = y * w + x;
            double mod = tide_sub_model_at(m, x, y, w, h, idx);
            float t = tgt->pix[y * tgt->stride + x];
            matched->pix[y * matched->stride + x] = (float)mod;
            diff->pix[y * diff->stride + x] = (float)(m->sign * ((double)t - mod));
            if (diff->var) {
                float vt = tgt->var ? tgt->var[y * tgt->stride + x] : m->var_tgt_const;
                float vc =
                    m->k2 * (m->var_ref ? m->var_ref[y * m->var_ref_stride + x] : m->var_ref_const);
                diff->var[y * diff->stride + x] = (vt + vc) * m->var_scale;
            }
        }
    return TIDE_OK;
}

int tide_sub_mask_cpu(tide_ctx *ctx, const tide_image *ref, const tide_image *tgt,
                      const tide_sub_geom *g, tide_image *diff) {
    (void)ctx;
    int64_t w = g->width, h = g->height;
    int kh = g->kh;
    uint16_t *tmp = malloc((size_t)(w * h) * sizeof *tmp);
    if (!tmp)
        return tide_error(TIDE_E_NOMEM, "subtract: mask scratch %lld x %lld", (long long)w,
                          (long long)h);
        /* Separable box OR: rows, then columns (the OR of a box is the OR of its column ORs). */
#pragma omp parallel for schedule(static)
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            uint16_t o = 0;
            if (ref->mask) {
                int64_t a = x - kh < 0 ? 0 : x - kh, b = x + kh >= w ? w - 1 : x + kh;
                for (int64_t xx = a; xx <= b; xx++)
                    o |= ref->mask[y * ref->stride + xx];
            }
            tmp[y * w + x] = o & g->bits;
        }
#pragma omp parallel for schedule(static)
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            uint16_t o = 0;
            int64_t a = y - kh < 0 ? 0 : y - kh, b = y + kh >= h ? h - 1 : y + kh;
            for (int64_t yy = a; yy <= b; yy++)
                o |= tmp[yy * w + x];
            if (tgt->mask)
                o |= tgt->mask[y * tgt->stride + x];
            if (x < kh || y < kh || x >= w - kh || y >= h - kh)
                o |= TIDE_MASK_EDGE;
            diff->mask[y * diff->stride + x] = o;
        }
    free(tmp);
    return TIDE_OK;
}

/* tide_sub_pairs: G[r][kb..kb+B) over the stamps in order, B products in registers (B = 8
 * or 24: the monomial products of spatial degree <= 1 fit one block of 8, those of degree 2
 * one of 24; more registers spill). Each output is one chain over j, so the order is fixed. */
#define PAIR_ROWS 32 /* column pairs per task */
#define PAIR_ROW_FN(B)                                                                             \
    static void pair_row_##B(const double *qr, const double *PP, int m, int nppad, double *g) {    \
        for (int kb = 0; kb < nppad; kb += B) {                                                    \
            double acc[B] = {0};                                                                   \
            const double *pp = PP + kb;                                                            \
            for (int j = 0; j < m; j++, pp += nppad) {                                             \
                double q = qr[j];                                                                  \
                for (int k = 0; k < B; k++)                                                        \
                    acc[k] = tide_dadd(acc[k], tide_dmul(q, pp[k]));                               \
            }                                                                                      \
            for (int k = 0; k < B; k++)                                                            \
                g[kb + k] = acc[k];                                                                \
        }                                                                                          \
    }
PAIR_ROW_FN(8)
PAIR_ROW_FN(24)

int tide_sub_pairs_cpu(tide_ctx *ctx, const double *Q, int nc, const int *kept, int m,
                       const int *off, int R, const double *PP, int nppad, double *G) {
    (void)ctx;
    int err = 0;
    /* each task gathers its column pairs over the stamps (contiguous in j), then runs over
     * the stamps in order */
#pragma omp parallel if (m * R > 20000)
    {
        double *qt = malloc((size_t)PAIR_ROWS * (size_t)(m ? m : 1) * sizeof *qt);
        if (!qt) {
#pragma omp atomic write
            err = 1;
        }
#pragma omp for schedule(dynamic)
        for (int ra = 0; ra < R; ra += PAIR_ROWS) {
            if (!qt)
                continue;
            int rb = ra + PAIR_ROWS < R ? ra + PAIR_ROWS : R;
            for (int j = 0; j < m; j++) {
                const double *q = Q + (size_t)kept[j] * (size_t)nc * (size_t)nc;
                for (int r = ra; r < rb; r++)
                    qt[(size_t)(r - ra) * m + j] = q[off[r]];
            }
            for (int r = ra; r < rb; r++) {
                const double *qr = qt + (size_t)(r - ra) * m;
                if (nppad == 8)
                    pair_row_8(qr, PP, m, nppad, G + (size_t)r * nppad);
                else
                    pair_row_24(qr, PP, m, nppad, G + (size_t)r * nppad);
            }
        }
        free(qt);
    }
    return err ? tide_error(TIDE_E_NOMEM, "subtract: normal equations (%d column pairs)", R)
               : TIDE_OK;
}
