/* background_cpu.c — CPU twins of the background kernels (plain loops, OpenMP over meshes
 * and rows). The summation order inside a mesh is the lane order of background_math.h, the
 * order the CUDA block uses, so both backends produce the same bits. */
/* GCC will not if-convert float comparisons while it assumes they may trap, which keeps the
 * pixel loops scalar. No value depends on this (tide never inspects FP exception flags). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "background_kernels.h"
#include "background_math.h"
#include "tide/status.h"

#define BINS_CHUNK 1024 /* pixels whose bins are computed before counting */

/* Add one run of @p n pixels whose lanes are consecutive (lane[i] gets pixel i). Invalid or
 * cut pixels add +0.0, which leaves every partial sum unchanged (a sum that starts at +0 never
 * becomes -0), so this branch-free form gives the same bits as skipping them and the compiler
 * can vectorise it. */
static inline int64_t add_run(double *restrict s1, double *restrict s2, const float *restrict v,
                              const uint16_t *restrict m, uint16_t bits, int cut, float lo,
                              float hi, int64_t n) {
    /* isfinite as a comparison, and the loop-invariant cut as a flag, keep the body free of
     * branches. */
    const int nocut = cut == 0;
    int64_t cnt = 0;
    if (m) {
        for (int64_t i = 0; i < n; i++) {
            const float x = v[i];
            const int ok =
                (fabsf(x) <= FLT_MAX) & ((m[i] & bits) == 0) & (nocut | ((x <= hi) & (x >= lo)));
            const double d = (double)(ok ? x : 0.0f);
            s1[i] += d;
            s2[i] += tide_dmul(d, d);
            cnt += ok;
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            const float x = v[i];
            const int ok = (fabsf(x) <= FLT_MAX) & (nocut | ((x <= hi) & (x >= lo)));
            const double d = (double)(ok ? x : 0.0f);
            s1[i] += d;
            s2[i] += tide_dmul(d, d);
            cnt += ok;
        }
    }
    return cnt;
}

/* Lane sums of one mesh: count, sum and sum of squares of the pixels that are valid and, when
 * @p cut, inside [lo, hi]; lanes then added in the pairwise tree. A mesh row is split into
 * runs of consecutive lanes (at most two per 256 pixels). */
static void mesh_sums(const tide_image *im, uint16_t bits, int64_t x0, int64_t y0, int64_t mw,
                      int64_t mh, int cut, float lo, float hi, int64_t *n, double *sum,
                      double *sumsq) {
    double s1[TIDE_BKG_LANES], s2[TIDE_BKG_LANES];
    memset(s1, 0, sizeof s1);
    memset(s2, 0, sizeof s2);
    int64_t cnt = 0, k = 0;
    for (int64_t r = 0; r < mh; r++) {
        const float *row = im->pix + (y0 + r) * im->stride + x0;
        const uint16_t *mrow = im->mask ? im->mask + (y0 + r) * im->stride + x0 : NULL;
        for (int64_t c = 0; c < mw;) {
            const int64_t l = (k + c) & (TIDE_BKG_LANES - 1);
            int64_t len = TIDE_BKG_LANES - l;
            if (len > mw - c)
                len = mw - c;
            cnt += add_run(s1 + l, s2 + l, row + c, mrow ? mrow + c : NULL, bits, cut, lo, hi, len);
            c += len;
        }
        k += mw;
    }
    for (int s = TIDE_BKG_LANES / 2; s > 0; s >>= 1)
        for (int t = 0; t < s; t++) {
            s1[t] += s1[t + s];
            s2[t] += s2[t + s];
        }
    *n = cnt;
    *sum = s1[0];
    *sumsq = s2[0];
}

/* Histogram of one mesh row: bins first (vectorisable), then the counts. */
static void hist_row(uint32_t *hist, int *bins, const float *row, const uint16_t *mrow,
                     uint16_t bits, const tide_bkg_hist *h, int64_t n) {
    for (int64_t c = 0; c < n; c++) {
        const float x = row[c];
        const int ok = isfinite(x) & (mrow ? (mrow[c] & bits) == 0 : 1);
        const int b = tide_bkg_bin(ok ? x : NAN, h);
        bins[c] = b;
    }
    for (int64_t c = 0; c < n; c++)
        if (bins[c] >= 0)
            hist[bins[c]]++;
}

int tide_bkg_mesh_stats_cpu(tide_ctx *ctx, const tide_bkg_plan *p, const tide_image *im,
                            float *mesh) {
    int nomem = 0;
#pragma omp parallel num_threads(ctx->threads)
    {
        /* histogram, its prefix sums (c1, c2 first: 8-byte aligned) and the bin buffer */
        const size_t nl = TIDE_BKG_QMAXLEVELS + 1;
        uint64_t *c1 = malloc(sizeof(uint64_t) * 2 * nl + sizeof(uint32_t) * 2 * nl +
                              sizeof(int) * BINS_CHUNK);
        uint64_t *c2 = c1 ? c1 + nl : NULL;
        uint32_t *hist = c1 ? (uint32_t *)(c2 + nl) : NULL, *c0 = hist ? hist + nl : NULL;
        int *bins = c0 ? (int *)(c0 + nl) : NULL;
        if (!hist) {
#pragma omp atomic write
            nomem = 1;
        }
#pragma omp for schedule(dynamic, 4)
        for (int64_t m = 0; m < p->nmesh; m++) {
            if (!hist)
                continue;
            int64_t x0, y0, mw, mh, n;
            double sum, sumsq;
            tide_bkg_mesh_box(m % p->nx, m / p->nx, p->w, p->h, p->bw, p->bh, p->nx, p->ny, &x0,
                              &y0, &mw, &mh);
            mesh[2 * m] = mesh[2 * m + 1] = NAN;
            mesh_sums(im, p->mask_bits, x0, y0, mw, mh, 0, 0.0f, 0.0f, &n, &sum, &sumsq);
            if (n == 0 || (float)n < (float)((double)(mw * mh) * p->min_good_frac))
                continue;
            float lo, hi;
            tide_bkg_cuts(n, sum, sumsq, &lo, &hi);
            mesh_sums(im, p->mask_bits, x0, y0, mw, mh, 1, lo, hi, &n, &sum, &sumsq);
            if (n == 0)
                continue;
            const tide_bkg_hist h = tide_bkg_hist_setup(n, sum, sumsq);
            memset(hist, 0, sizeof(uint32_t) * (size_t)h.nlevels);
            for (int64_t r = 0; r < mh; r++) {
                const float *row = im->pix + (y0 + r) * im->stride + x0;
                const uint16_t *mrow = im->mask ? im->mask + (y0 + r) * im->stride + x0 : NULL;
                for (int64_t c = 0; c < mw; c += BINS_CHUNK)
                    hist_row(hist, bins, row + c, mrow ? mrow + c : NULL, p->mask_bits, &h,
                             mw - c < BINS_CHUNK ? mw - c : BINS_CHUNK);
            }
            tide_bkg_prefix(hist, h.nlevels, c0, c1, c2);
            tide_bkg_guess(&h, c0, c1, c2, &mesh[2 * m], &mesh[2 * m + 1]);
        }
        free(c1);
    }
    return nomem ? tide_error(TIDE_E_NOMEM, "background: out of memory for mesh histograms")
                 : TIDE_OK;
}

/* Column tables of the x interpolation (tide_bkg_xweights, split into arrays so the pixel
 * loop vectorises) and the first column of each segment. */
typedef struct xtab {
    float *dx, *cdx, *cdx2m1, *dx2m1;
    int64_t *first; /* nx: columns [first[s], first[s+1]) use segment s; first[nx-1] = w */
} xtab;

static int xtab_make(const tide_bkg_plan *p, xtab *t) {
    const int64_t w = p->w, nx = p->nx;
    t->dx = malloc(sizeof(float) * (size_t)(4 * w) + sizeof(int64_t) * (size_t)(nx + 1));
    if (!t->dx)
        return tide_error(TIDE_E_NOMEM, "background: out of memory interpolating");
    t->cdx = t->dx + w;
    t->cdx2m1 = t->cdx + w;
    t->dx2m1 = t->cdx2m1 + w;
    t->first = (int64_t *)(t->dx2m1 + w);
    for (int64_t s = 0; s <= nx; s++)
        t->first[s] = w;
    t->first[0] = 0;
    if (nx < 2)
        return TIDE_OK;
    int64_t prev = 0;
    for (int64_t x = 0; x < w; x++) {
        const tide_bkg_xw xw = tide_bkg_xweights(x, p->bw, nx);
        t->dx[x] = xw.dx;
        t->cdx[x] = xw.cdx;
        t->cdx2m1[x] = xw.cdx2m1;
        t->dx2m1[x] = xw.dx2m1;
        for (; prev < xw.s; prev++)
            t->first[prev + 1] = x;
    }
    return TIDE_OK;
}

/* One map row: interpolated nodes and their x coefficients for row y, then every pixel,
 * segment by segment (the expression of tide_bkg_cubic with the weights from the table). */
static void interp_row(const tide_bkg_plan *p, const float *plane4, int64_t y, const xtab *t,
                       float *node, float *dnode, float *restrict out) {
    const int64_t nx = p->nx, np = p->nmesh;
    const float *V = plane4 + TIDE_BKG_V * np, *DV = plane4 + TIDE_BKG_DV * np;
    const float *XV = plane4 + TIDE_BKG_XV * np, *XDV = plane4 + TIDE_BKG_XDV * np;
    if (p->ny > 1) {
        const tide_bkg_yw w = tide_bkg_yweights(y, p->bh, p->ny);
        for (int64_t i = 0; i < nx; i++) {
            node[i] = tide_bkg_node(V, DV, nx, &w, i);
            dnode[i] = tide_bkg_node(XV, XDV, nx, &w, i);
        }
    } else {
        for (int64_t i = 0; i < nx; i++) {
            node[i] = V[i];
            dnode[i] = 0.0f;
        }
    }
    if (nx == 1) {
        for (int64_t x = 0; x < p->w; x++)
            out[x] = node[0];
        return;
    }
    const float *restrict dx = t->dx, *restrict cdx = t->cdx;
    const float *restrict a = t->cdx2m1, *restrict b = t->dx2m1;
    for (int64_t s = 0; s < nx - 1; s++) {
        const float lo = node[s], hi = node[s + 1], dlo = dnode[s], dhi = dnode[s + 1];
        for (int64_t x = t->first[s]; x < t->first[s + 1]; x++)
            out[x] = cdx[x] * (lo + a[x] * dlo) + dx[x] * (hi + b[x] * dhi);
    }
}

int tide_bkg_interp_cpu(tide_ctx *ctx, const tide_bkg_plan *p, const float *coef, tide_image *bkg,
                        tide_image *rms) {
    xtab t;
    int st = xtab_make(p, &t);
    if (st)
        return st;
    int nomem = 0;
#pragma omp parallel num_threads(ctx->threads)
    {
        float *node = malloc(sizeof(float) * (size_t)(2 * p->nx));
        if (!node) {
#pragma omp atomic write
            nomem = 1;
        }
#pragma omp for schedule(static)
        for (int64_t y = 0; y < p->h; y++) {
            if (!node)
                continue;
            if (bkg)
                interp_row(p, coef, y, &t, node, node + p->nx, bkg->pix + y * bkg->stride);
            if (rms)
                interp_row(p, coef + 4 * p->nmesh, y, &t, node, node + p->nx,
                           rms->pix + y * rms->stride);
        }
        free(node);
    }
    free(t.dx);
    return nomem ? tide_error(TIDE_E_NOMEM, "background: out of memory interpolating") : TIDE_OK;
}

int tide_bkg_poly_cpu(tide_ctx *ctx, const tide_bkg_plan *p, const tide_bkg_poly *poly,
                      tide_image *bkg, tide_image *rms) {
#pragma omp parallel for num_threads(ctx->threads) schedule(static)
    for (int64_t y = 0; y < p->h; y++)
        for (int m = 0; m < 2; m++) {
            tide_image *out = m ? rms : bkg;
            if (!out)
                continue;
            const tide_bkg_poly *q = &poly[m];
            float *row = out->pix + y * out->stride;
            for (int64_t x = 0; x < p->w; x++)
                row[x] = tide_bkg_poly_at(q->nt, q->pa, q->pb, q->c, q->su, q->ou, q->sv, q->ov, x,
                                          y, p->bw, p->bh);
        }
    return TIDE_OK;
}

int tide_noise_model_cpu(tide_ctx *ctx, const tide_image *bkg, double inv_gain, double rn2g2,
                         double inv_n, tide_image *var) {
#pragma omp parallel for num_threads(ctx->threads) schedule(static)
    for (int64_t y = 0; y < bkg->height; y++) {
        const float *b = bkg->pix + y * bkg->stride;
        float *v = var->pix + y * var->stride;
        for (int64_t x = 0; x < bkg->width; x++)
            v[x] = tide_noise_var(b[x], inv_gain, rn2g2, inv_n);
    }
    return TIDE_OK;
}
