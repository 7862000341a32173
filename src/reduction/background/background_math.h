/* background_math.h — the per-mesh and per-pixel formulas of the background estimate, once
 * for the CPU and CUDA twins (DESIGN §3).
 *
 * The statistics follow Source Extractor's back.c (Bertin & Arnouts 1996, §3.1; the same
 * algorithm is in sep's background.c): first-pass mean/σ, a 2σ cut, a histogram of mean ± 5σ,
 * and the clipped-histogram mode. Arithmetic types (float or double) are the ones Source
 * Extractor uses, so mesh values match its own to float rounding.
 *
 * Every product that feeds an addition goes through tide_dmul / tide_fmul (core/gpu/unfused.h),
 * the _rn intrinsics on the device: nvcc would otherwise contract a*b+c into one FMA and the
 * GPU would differ from the CPU in the last bit. Division, sqrt and lone additions are
 * IEEE-rounded on both sides already. */
#ifndef TIDE_BACKGROUND_MATH_H
#define TIDE_BACKGROUND_MATH_H
#include <math.h>
#include <stdint.h>

#include "core/gpu/hd.h"
#include "core/gpu/unfused.h"

/* Lanes of the fixed summation order inside a mesh: pixel k of a mesh (row-major inside the
 * mesh) goes to lane k % TIDE_BKG_LANES, each lane adds in increasing k, and the lanes are
 * added in a pairwise tree (lane t += lane t + s for s = LANES/2, ..., 1). One CUDA block of
 * TIDE_BKG_LANES threads per mesh runs exactly this order. */
#define TIDE_BKG_LANES 256
/* Source Extractor's histogram constants (back.h): limits ±5σ, at most 4096 levels, about
 * 4 pixels per level of the mode (the bin count is sqrt(2/π)·5/4 per pixel). */
#define TIDE_BKG_QNSIGMA 5
#define TIDE_BKG_QMAXLEVELS 4096
#define TIDE_BKG_QSTEP 0.99735570100358175 /* sqrt(2/pi) * 5 / 4 */

/** A pixel counts when finite and no excluded mask bit is set. */
TIDE_HD static inline int tide_bkg_valid(float v, uint16_t m, uint16_t bits) {
    return isfinite(v) && (m & bits) == 0;
}

/** First pass: from count, sum and sum of squares of the valid pixels, the 2σ cuts of the
 *  second pass (Source Extractor stores them as floats). */
TIDE_HD static inline void tide_bkg_cuts(int64_t n, double sum, double sumsq, float *lcut,
                                         float *hcut) {
    const double mean = sum / (double)n;
    const double var = sumsq / (double)n - tide_dmul(mean, mean);
    const double sigma = var > 0.0 ? sqrt(var) : 0.0;
    *lcut = (float)(mean - tide_dmul(2.0, sigma));
    *hcut = (float)(mean + tide_dmul(2.0, sigma));
}

/** A mesh's histogram: where it sits and how fine it is (all floats, as in Source
 *  Extractor), and the second-pass mean and σ. */
typedef struct tide_bkg_hist {
    float mean, sigma;   /**< of the pixels inside the 2σ cuts */
    float qzero, qscale; /**< value of the lower edge of bin 0; bin width */
    float cste;          /**< 0.499999 - qzero / qscale: bin = int(v / qscale + cste) */
    int nlevels;         /**< bins */
} tide_bkg_hist;

/** Second pass: histogram geometry from the count, sum and sum of squares of the pixels
 *  inside the cuts (n >= 1). */
TIDE_HD static inline tide_bkg_hist tide_bkg_hist_setup(int64_t n, double sum, double sumsq) {
    tide_bkg_hist h;
    const double mean = sum / (double)n;
    const double var = sumsq / (double)n - tide_dmul(mean, mean);
    const double sigma = var > 0.0 ? sqrt(var) : 0.0;
    const double lv = tide_dmul(TIDE_BKG_QSTEP, (double)n) + 1.0;
    h.nlevels = lv >= (double)TIDE_BKG_QMAXLEVELS ? TIDE_BKG_QMAXLEVELS : (int)lv;
    h.mean = (float)mean;
    h.sigma = (float)sigma;
    h.qscale = sigma > 0.0 ? (float)(tide_dmul(2.0 * TIDE_BKG_QNSIGMA, sigma) / h.nlevels) : 1.0f;
    h.qzero = (float)(mean - tide_dmul((double)TIDE_BKG_QNSIGMA, sigma));
    h.cste = (float)(0.499999 - (double)(h.qzero / h.qscale));
    return h;
}

/** Histogram bin of a valid pixel, or -1 outside the histogram. Float arithmetic and
 *  truncation toward zero as in Source Extractor (so values just below bin 0 land in it). */
TIDE_HD static inline int tide_bkg_bin(float v, const tide_bkg_hist *h) {
    const float f = v / h->qscale + h->cste;
    return (f > -1.0f && f < (float)h->nlevels) ? (int)f : -1;
}

/** Prefix sums of a histogram of n bins: c0[i] = sum of hist[b], c1[i] = sum of b·hist[b],
 *  c2[i] = sum of b²·hist[b], over b < i (i = 0..n). Integers, so any summation order gives
 *  the same arrays (the CUDA block computes them with a parallel scan). */
TIDE_HD static inline void tide_bkg_prefix(const uint32_t *hist, int n, uint32_t *c0, uint64_t *c1,
                                           uint64_t *c2) {
    uint32_t a = 0;
    uint64_t b = 0, c = 0;
    for (int i = 0; i < n; i++) {
        c0[i] = a;
        c1[i] = b;
        c2[i] = c;
        a += hist[i];
        b += (uint64_t)hist[i] * (uint64_t)i;
        c += (uint64_t)hist[i] * (uint64_t)i * (uint64_t)i;
    }
    c0[n] = a;
    c1[n] = b;
    c2[n] = c;
}

/** Where Source Extractor's two-ended walk over bins lo..hi stops. The walk takes nb = hi−lo+1
 *  steps; each adds the next bin from the low end when the low running count is smaller than
 *  the high one, else the next bin from the high end. With L(k) = count of the k lowest bins
 *  and H(m) = count of the m highest, that is the merge of the sorted sequences L and H (ties
 *  to H), so the number k of low bins taken is the smallest k with m = nb − k = 0 or
 *  H(m−1) <= L(k): found by bisection in O(log nb) instead of O(nb) steps. */
TIDE_HD static inline int tide_bkg_walk(const uint32_t *c0, int lo, int hi) {
    const int nb = hi - lo + 1;
    if (nb <= 0)
        return 0;
    int k0 = 0, k1 = nb; /* the answer is in [k0, k1]; the condition holds at k1 */
    while (k0 < k1) {
        const int k = k0 + (k1 - k0) / 2, m = nb - k;
        const uint32_t L = c0[lo + k] - c0[lo], Hm1 = c0[hi + 1] - c0[hi + 2 - m];
        if (Hm1 <= L)
            k1 = k;
        else
            k0 = k + 1;
    }
    return k0;
}

/** Source Extractor's mode estimate from a mesh histogram (backguess), given its prefix sums
 *  (tide_bkg_prefix): repeat at most 100 times, while σ >= 0.1 bin and σ changed by more than
 *  1e-4 relative: over bins lcut..hcut, the mean and σ, and the median found by the two-ended
 *  walk (tide_bkg_walk), interpolated inside the bin where the ends meet; then lcut, hcut =
 *  median ∓ 3σ rounded. Result: 2.5·median − 1.5·mean, or the median when |mean − median|
 *  >= 0.3σ (a crowded mesh), converted to data units; *sigma = σ in data units. The sums are
 *  exact integers, so this equals Source Extractor's loop bit for bit.
 *  Deviations from Source Extractor, in degenerate cases only: a 1-level histogram (a single
 *  pixel) gives its mean (SE returns qzero + mean·qscale = twice the value), and when both
 *  bins at the meeting point are empty the interpolation term is 0 (SE divides by zero). */
TIDE_HD static inline void tide_bkg_guess(const tide_bkg_hist *h, const uint32_t *c0,
                                          const uint64_t *c1, const uint64_t *c2, float *mode,
                                          float *sigma) {
    const int top = h->nlevels - 1;
    if (top <= 0) {
        *mode = h->mean;
        *sigma = 0.0f;
        return;
    }
    int lcut = 0, hcut = top;
    double sig = 10.0 * top, sig1 = 1.0, mea = 0.0, med = 0.0;
    for (int it = 0; it < 100 && sig >= 0.1 && fabs(sig / sig1 - 1.0) > 1e-4; it++) {
        sig1 = sig;
        const int nb = hcut - lcut + 1;
        const int k = tide_bkg_walk(c0, lcut, hcut), m = nb > 0 ? nb - k : 0;
        const int a = lcut + k, b = hcut - m; /* next bin of each end when they met */
        uint32_t lowsum = 0, highsum = 0;
        uint64_t sum = 0, s1 = 0, s2 = 0;
        if (nb > 0) {
            lowsum = c0[a] - c0[lcut];
            highsum = c0[hcut + 1] - c0[b + 1];
            sum = c0[hcut + 1] - c0[lcut];
            s1 = c1[hcut + 1] - c1[lcut];
            s2 = c2[hcut + 1] - c2[lcut];
        }
        if (b >= 0) {
            const uint32_t ha = a <= top ? c0[a + 1] - c0[a] : 0u, hb = c0[b + 1] - c0[b];
            const uint32_t hm = ha > hb ? ha : hb;
            med = (double)b + 0.5;
            if (hm > 0)
                med += ((double)highsum - (double)lowsum) / (2.0 * (double)hm);
        } else {
            med = 0.0;
        }
        mea = 0.0;
        sig = 0.0;
        if (sum) {
            mea = (double)s1 / (double)sum;
            sig = (double)s2 / (double)sum - tide_dmul(mea, mea);
        }
        sig = sig > 0.0 ? sqrt(sig) : 0.0;
        double t = med - tide_dmul(3.0, sig);
        lcut = t > 0.0 ? (int)(t + 0.5) : 0;
        t = med + tide_dmul(3.0, sig);
        hcut = t < (double)top ? (int)(t > 0.0 ? t + 0.5 : t - 0.5) : top;
        if (lcut > top)
            lcut = top + 1; /* an empty range, as in Source Extractor */
    }
    const double qz = (double)h->qzero, qs = (double)h->qscale;
    double md;
    if (sig > 0.0)
        md = fabs((mea - med) / sig) < 0.3
                 ? qz + tide_dmul(tide_dmul(2.5, med) - tide_dmul(1.5, mea), qs)
                 : qz + tide_dmul(med, qs);
    else
        md = qz + tide_dmul(mea, qs);
    *mode = (float)md;
    *sigma = (float)tide_dmul(sig, qs);
}

/* ---- interpolation ------------------------------------------------------------------- */

/** Geometry of mesh (i, j): first pixel and size (the last column and row are partial). */
TIDE_HD static inline void tide_bkg_mesh_box(int64_t i, int64_t j, int64_t w, int64_t h, int64_t bw,
                                             int64_t bh, int64_t nx, int64_t ny, int64_t *x0,
                                             int64_t *y0, int64_t *mw, int64_t *mh) {
    *x0 = i * bw;
    *y0 = j * bh;
    *mw = i == nx - 1 ? w - *x0 : bw;
    *mh = j == ny - 1 ? h - *y0 : bh;
}

/** Weights of row y on the mesh rows: the spline along y is evaluated between node rows
 *  j and j+1 as cdy·B[j] + dy·B[j+1] + cdy3·D[j] + dy3·D[j+1], node j at y = (j + 0.5)·bh
 *  (Source Extractor's convention: dy = y/bh − 0.5 in float), extrapolating from the end
 *  segments. Needs ny >= 2. */
typedef struct tide_bkg_yw {
    int64_t j;
    float cdy, dy, cdy3, dy3;
} tide_bkg_yw;

TIDE_HD static inline tide_bkg_yw tide_bkg_yweights(int64_t y, int64_t bh, int64_t ny) {
    tide_bkg_yw r;
    float dy = (float)((double)((float)y / (float)bh) - 0.5);
    int64_t j = (int64_t)dy;
    dy -= (float)j;
    if (j < 0) {
        j = 0;
        dy = (float)((double)dy - 1.0);
    } else if (j >= ny - 1) {
        const int64_t jj = ny - 2;
        dy = (float)((double)dy + (double)(j - jj));
        j = jj;
    }
    r.j = j;
    r.dy = dy;
    r.cdy = 1.0f - dy;
    r.dy3 = tide_fmul(tide_fmul(dy, dy), dy) - dy;
    r.cdy3 = tide_fmul(tide_fmul(r.cdy, r.cdy), r.cdy) - r.cdy;
    return r;
}

/** One interpolated node of row y: a 4-term combination of the rows j, j+1 of a value plane
 *  @p v and its y-derivative plane @p d (each nx wide), in Source Extractor's order. */
TIDE_HD static inline float tide_bkg_node(const float *v, const float *d, int64_t nx,
                                          const tide_bkg_yw *w, int64_t i) {
    const int64_t a = w->j * nx + i, b = a + nx;
    return tide_fmul(w->cdy, v[a]) + tide_fmul(w->dy, v[b]) + tide_fmul(w->cdy3, d[a]) +
           tide_fmul(w->dy3, d[b]);
}

/** Where pixel column x sits along a row of nx >= 2 nodes: segment s (nodes s, s+1), offset
 *  dx from node s, and the factors of Source Extractor's cubic. Node i is at the mesh centre
 *  (i + 0.5)·bw − 0.5; Source Extractor switches segment half a mesh past each inner node and
 *  extrapolates the end segments. Independent of the row, so the CPU tabulates it once. */
typedef struct tide_bkg_xw {
    int64_t s;
    float dx, cdx;
    float cdx2m1, dx2m1; /**< cdx² − 1, dx² − 1 */
} tide_bkg_xw;

TIDE_HD static inline tide_bkg_xw tide_bkg_xweights(int64_t x, int64_t bw, int64_t nx) {
    tide_bkg_xw r;
    const int64_t hb = bw / 2;
    int64_t s = x < hb + bw ? 0 : (x - hb) / bw;
    if (s > nx - 2)
        s = nx - 2;
    r.s = s;
    r.dx = (float)(((double)x + 0.5) / (double)bw - 0.5 - (double)s);
    r.cdx = 1.0f - r.dx;
    r.cdx2m1 = tide_fmul(r.cdx, r.cdx) - 1.0f;
    r.dx2m1 = tide_fmul(r.dx, r.dx) - 1.0f;
    return r;
}

/** Cubic between two nodes (lo, hi) with scaled second derivatives (dlo, dhi), at the offset
 *  of @p w: Source Extractor's expression cdx·(lo + (cdx²−1)·dlo) + dx·(hi + (dx²−1)·dhi),
 *  in float. */
TIDE_HD static inline float tide_bkg_cubic(float lo, float hi, float dlo, float dhi,
                                           const tide_bkg_xw *w) {
    return tide_fmul(w->cdx, lo + tide_fmul(w->cdx2m1, dlo)) +
           tide_fmul(w->dx, hi + tide_fmul(w->dx2m1, dhi));
}

/* ---- smooth mode --------------------------------------------------------------------- */

/** Value of a smooth-mode polynomial (background_kernels.h: tide_bkg_poly) at pixel (x, y):
 *  powers and terms in double, each product rounded on its own, terms added in order. Takes
 *  the struct's fields so that this header does not depend on the kernels header. */
TIDE_HD static inline float tide_bkg_poly_at(int nt, const int *pa, const int *pb, const double *c,
                                             double su, double ou, double sv, double ov, int64_t x,
                                             int64_t y, int64_t bw, int64_t bh) {
    const double u = tide_dmul(((double)x + 0.5) / (double)bw - 0.5, su) - ou;
    const double v = tide_dmul((double)y / (double)bh - 0.5, sv) - ov;
    double up[7], vp[7];
    up[0] = vp[0] = 1.0;
    for (int i = 1; i < 7; i++) {
        up[i] = tide_dmul(up[i - 1], u);
        vp[i] = tide_dmul(vp[i - 1], v);
    }
    double f = 0.0;
    for (int t = 0; t < nt; t++)
        f = f + tide_dmul(c[t], tide_dmul(up[pa[t]], vp[pb[t]]));
    return (float)f;
}

/* ---- noise model ----------------------------------------------------------------------- */

/** Modelled variance (ADU²) of the average of ncombine exposures at sky level b (ADU):
 *  (max(b, 0)/gain + rn²/gain²) / ncombine, with inv_gain = 1/gain, rn2g2 = (rn/gain)² and
 *  inv_n = 1/ncombine precomputed in double on the host. NaN stays NaN. */
TIDE_HD static inline float tide_noise_var(float b, double inv_gain, double rn2g2, double inv_n) {
    if (isnan(b))
        return b;
    const double sky = b > 0.0f ? (double)b : 0.0;
    return (float)tide_dmul(tide_dmul(sky, inv_gain) + rn2g2, inv_n);
}

#endif
