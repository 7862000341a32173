/* cosmetics_math.h — per-pixel math of the cosmetics stage, shared by the CPU and CUDA twins
 * (DESIGN §3). Every formula exists here once.
 *
 * Identical masks on both backends need identical arithmetic: every float operation goes
 * through COS_ADD/SUB/MUL/DIV/SQRT, which are the IEEE round-to-nearest intrinsics on the
 * device (never fused into an FMA, never approximated) and plain operators on the host (the
 * C11 build does not contract). Medians are exact (insertion sort), neighbourhoods outside the
 * frame are clamped to the edge (scipy.ndimage mode 'nearest') where a full box is needed. */
#ifndef TIDE_COSMETICS_MATH_H
#define TIDE_COSMETICS_MATH_H
#include <math.h>
#include <stdint.h>

#include "core/hd.h"
#include "tide/image.h"

#ifdef __CUDA_ARCH__
#define COS_ADD(a, b) __fadd_rn((a), (b))
#define COS_SUB(a, b) __fsub_rn((a), (b))
#define COS_MUL(a, b) __fmul_rn((a), (b))
#define COS_DIV(a, b) __fdiv_rn((a), (b))
#define COS_SQRT(a) __fsqrt_rn(a)
#else
#define COS_ADD(a, b) ((a) + (b))
#define COS_SUB(a, b) ((a) - (b))
#define COS_MUL(a, b) ((a) * (b))
#define COS_DIV(a, b) ((a) / (b))
#define COS_SQRT(a) sqrtf(a)
#endif

/** Flags in the byte scratch planes. */
enum { COS_F_HOT = 1, COS_F_COLD = 2, COS_F_SET = 1 };

/** Frame geometry: pixels and mask share `stride`; scratch planes have stride w. */
typedef struct tide_cos_geom {
    int64_t w, h, stride;
} tide_cos_geom;

/** Noise model constants (van Dokkum 2001, eq. 10), all float so both sides round alike. */
typedef struct tide_cos_noise {
    float gain, rdn2, bias; /* e-/ADU, read noise² (e-²), ADU */
} tide_cos_noise;

/** Hot/cold test constants. */
typedef struct tide_cos_hot {
    float hot_sigma, cold_sigma, isolation, ratio;
    int do_hot, do_cold;
    uint16_t excl; /* neighbours and pixels with these bits are ignored */
} tide_cos_hot;

/** L.A.Cosmic test constants. */
typedef struct tide_cos_lacos {
    float sigclip, objlim;
    uint16_t excl;    /* pixels with these bits are never flagged */
    int protect;      /* Chebyshev radius around SATURATED|BLEED with no flag */
} tide_cos_lacos;

TIDE_HD static inline int64_t cos_clamp(int64_t i, int64_t n) {
    return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

/** Sort v[0..n) ascending (insertion sort: n <= 49, deterministic, no NaN in input). */
TIDE_HD static inline void cos_sort(float *v, int n) {
    for (int i = 1; i < n; i++) {
        float x = v[i];
        int j = i - 1;
        while (j >= 0 && v[j] > x) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = x;
    }
}

/** Median of v[0..n), n >= 1 (sorts v): middle value, or the mean of the two middle ones. */
TIDE_HD static inline float cos_median(float *v, int n) {
    cos_sort(v, n);
    if (n & 1)
        return v[n / 2];
    return COS_MUL(0.5f, COS_ADD(v[n / 2 - 1], v[n / 2]));
}

/** σ in ADU at local level m (ADU): sqrt(g·max(m − bias, 1e-5) + rn²)/g (eq. 10). */
TIDE_HD static inline float cos_sigma(const tide_cos_noise *nm, float m) {
    float s = COS_SUB(m, nm->bias);
    if (!(s > 1e-5f))
        s = 1e-5f;
    return COS_DIV(COS_SQRT(COS_ADD(COS_MUL(nm->gain, s), nm->rdn2)), nm->gain);
}

/** Median of the (2r+1)² box of a (stride ld) around (x, y), edges clamped; r <= 3. */
TIDE_HD static inline float cos_box_median(const float *a, int64_t ld, int64_t w, int64_t h,
                                           int64_t x, int64_t y, int r) {
    float v[49];
    int n = 0;
    for (int dy = -r; dy <= r; dy++) {
        const float *row = a + cos_clamp(y + dy, h) * ld;
        for (int dx = -r; dx <= r; dx++)
            v[n++] = row[cos_clamp(x + dx, w)];
    }
    return cos_median(v, n);
}

/** L⁺ of van Dokkum 2001, eqs. 2–5, at one pixel without building the 2×-subsampled image:
 *  each pixel becomes a 2×2 block of its own value, the Laplacian kernel
 *  [[0,-1,0],[-1,4,-1],[0,-1,0]] at a sub-pixel sees two neighbours inside the block (equal to
 *  I) and one horizontal (left or right) and one vertical (up or down) neighbour outside it,
 *  so the four sub-pixel responses are 2I − I_h − I_v; negatives are clipped (eq. 4) and the
 *  block is averaged back (eq. 5). Edges replicate (the subsampled frame's symmetric
 *  boundary). cos_lplus5 is the value from the centre c and its left, right, up and down
 *  neighbours; cos_lpterm one clipped response 2I − I_h − I_v (c2 = 2I). */
TIDE_HD static inline float cos_lpterm(float c2, float h, float v) {
    const float t = COS_SUB(COS_SUB(c2, h), v);
    return t > 0.0f ? t : 0.0f;
}
/** The block average of the four clipped responses (in this order). */
TIDE_HD static inline float cos_lpsum(float t0, float t1, float t2, float t3) {
    float s = 0.0f;
    s = COS_ADD(s, t0);
    s = COS_ADD(s, t1);
    s = COS_ADD(s, t2);
    s = COS_ADD(s, t3);
    return COS_MUL(0.25f, s);
}
TIDE_HD static inline float cos_lplus5(float c, float l, float r, float u, float d) {
    const float c2 = COS_ADD(c, c);
    return cos_lpsum(cos_lpterm(c2, l, u), cos_lpterm(c2, r, u), cos_lpterm(c2, l, d),
                     cos_lpterm(c2, r, d));
}

/** cos_lplus5 at (x, y) of a (stride ld), edges replicated. */
TIDE_HD static inline float cos_lplus(const float *a, int64_t ld, int64_t w, int64_t h,
                                      int64_t x, int64_t y) {
    const float c = a[y * ld + x];
    const float l = a[y * ld + cos_clamp(x - 1, w)], r = a[y * ld + cos_clamp(x + 1, w)];
    const float u = a[cos_clamp(y - 1, h) * ld + x], d = a[cos_clamp(y + 1, h) * ld + x];
    return cos_lplus5(c, l, r, u, d);
}

/** F from the 49 3×3 medians m3[7·(dy + 3) + dx + 3] around a pixel (sorts m3). */
TIDE_HD static inline float cos_fine_of(float m3[49]) {
    const float centre = m3[24];
    return COS_SUB(centre, cos_median(m3, 49));
}

/** Fine-structure value F = med3(I) − med7(med3(I)) at (x, y) (van Dokkum 2001, eq. 11),
 *  edges clamped: the 7×7 median of the 3×3 medians around (x, y). */
TIDE_HD static inline float cos_fine(const float *a, int64_t ld, int64_t w, int64_t h,
                                     int64_t x, int64_t y) {
    float m3[49];
    int n = 0;
    for (int dy = -3; dy <= 3; dy++)
        for (int dx = -3; dx <= 3; dx++)
            m3[n++] = cos_box_median(a, ld, w, h, cos_clamp(x + dx, w), cos_clamp(y + dy, h), 1);
    return cos_fine_of(m3);
}

/** 1 when a pixel within Chebyshev distance r of (x, y) is SATURATED or BLEED. */
TIDE_HD static inline int cos_near_saturation(const uint16_t *mask, int64_t ld, int64_t w,
                                              int64_t h, int64_t x, int64_t y, int r) {
    const int64_t y0 = y - r < 0 ? 0 : y - r, y1 = y + r >= h ? h - 1 : y + r;
    const int64_t x0 = x - r < 0 ? 0 : x - r, x1 = x + r >= w ? w - 1 : x + r;
    for (int64_t j = y0; j <= y1; j++)
        for (int64_t i = x0; i <= x1; i++)
            if (mask[j * ld + i] & (TIDE_MASK_SATURATED | TIDE_MASK_BLEED))
                return 1;
    return 0;
}

/** Hot/cold decision at (x, y): COS_F_HOT, COS_F_COLD or 0 (see cosmetics.h, pass 3). Only
 *  in-frame, finite neighbours without excluded bits count; fewer than 3 of the 8 means no
 *  decision.
 *
 *  Order of work (the answer is that of the plain test): with hot_sigma, cold_sigma and
 *  isolation >= 0 (cosmetics_params_check), a hot pixel has v − med > 0 and v − max >
 *  isolation·(v − med) >= 0, so v > max of the 8; a cold one has v < min. Most pixels are
 *  neither, and skip the median; the outer ring (for the hot ratio test) is read only for a
 *  pixel that passed the other hot tests. The medians do not depend on the order in which
 *  the values were gathered. */
TIDE_HD static inline int cos_hotcold(const float *pix, const uint16_t *mask,
                                      const tide_cos_geom *g, const tide_cos_noise *nm,
                                      const tide_cos_hot *hp, int64_t x, int64_t y) {
    const int64_t ld = g->stride;
    const float v = pix[y * ld + x];
    if (!isfinite(v) || (mask[y * ld + x] & hp->excl))
        return 0;
    float nb[8];
    int n8 = 0;
    for (int dy = -1; dy <= 1; dy++) {
        const int64_t yy = y + dy;
        if (yy < 0 || yy >= g->h)
            continue;
        for (int dx = -1; dx <= 1; dx++) {
            const int64_t xx = x + dx;
            if ((dx == 0 && dy == 0) || xx < 0 || xx >= g->w)
                continue;
            const float u = pix[yy * ld + xx];
            if (isfinite(u) && !(mask[yy * ld + xx] & hp->excl))
                nb[n8++] = u;
        }
    }
    if (n8 < 3)
        return 0;
    float mx = nb[0], mn = nb[0];
    for (int i = 1; i < n8; i++) {
        mx = nb[i] > mx ? nb[i] : mx;
        mn = nb[i] < mn ? nb[i] : mn;
    }
    if (hp->isolation >= 0.0f && hp->hot_sigma >= 0.0f && hp->cold_sigma >= 0.0f &&
        !(v > mx) && !(v < mn))
        return 0;
    const float med = cos_median(nb, n8);
    const float sig = cos_sigma(nm, med);
    if (hp->do_hot) {
        const float e = COS_SUB(v, med);
        if (e > COS_MUL(hp->hot_sigma, sig) && COS_SUB(v, mx) > COS_MUL(hp->isolation, e)) {
            float ring[16];
            int nr = 0;
            for (int dy = -2; dy <= 2; dy++) {
                const int64_t yy = y + dy;
                if (yy < 0 || yy >= g->h)
                    continue;
                for (int dx = -2; dx <= 2; dx++) {
                    const int64_t xx = x + dx;
                    if ((dx >= -1 && dx <= 1 && dy >= -1 && dy <= 1) || xx < 0 || xx >= g->w)
                        continue;
                    const float u = pix[yy * ld + xx];
                    if (isfinite(u) && !(mask[yy * ld + xx] & hp->excl))
                        ring[nr++] = u;
                }
            }
            const float rm = nr >= 3 ? cos_median(ring, nr) : med;
            if (e > COS_MUL(hp->ratio, COS_SUB(med, rm)))
                return COS_F_HOT;
        }
    }
    if (hp->do_cold) {
        const float d = COS_SUB(med, v);
        if (d > COS_MUL(hp->cold_sigma, sig) && COS_SUB(mn, v) > COS_MUL(hp->isolation, d))
            return COS_F_COLD;
    }
    return 0;
}

/** cos_hotcold with a screen that proves the answer 0 for most pixels without the median
 *  (the CPU twin's screen, per pixel): where (x, y) is inside the frame's 1-pixel border and it
 *  and its 8 neighbours are usable, the neighbours' median med lies in [mn, mx] (their min and
 *  max) and every float step of cos_sigma is monotone, so a hot pixel needs v > mx and
 *  v − mn > hot_sigma·σ(mn), a cold one v < mn and mx − v > cold_sigma·σ(mn) (with the
 *  thresholds >= 0 as cos_hotcold's own shortcut assumes). Pixels that pass, and all others,
 *  take cos_hotcold. The same answer as cos_hotcold everywhere. */
TIDE_HD static inline int cos_hotcold_screened(const float *pix, const uint16_t *mask,
                                               const tide_cos_geom *g,
                                               const tide_cos_noise *nm,
                                               const tide_cos_hot *hp, int64_t x, int64_t y) {
    const int64_t ld = g->stride;
    if (x >= 1 && x < g->w - 1 && y >= 1 && y < g->h - 1 && hp->isolation >= 0.0f &&
        hp->hot_sigma >= 0.0f && hp->cold_sigma >= 0.0f) {
        const float *a = pix + (y - 1) * ld + x, *b = a + ld, *c = b + ld;
        const uint16_t *ma = mask + (y - 1) * ld + x, *mb = ma + ld, *mc = mb + ld;
        const uint16_t mor = (uint16_t)(ma[-1] | ma[0] | ma[1] | mb[-1] | mb[0] | mb[1] |
                                        mc[-1] | mc[0] | mc[1]);
        const float u[8] = {a[-1], a[0], a[1], b[-1], b[1], c[-1], c[0], c[1]};
        const float v = b[0];
        int fin = isfinite(v);
        float mx = u[0], mn = u[0];
        for (int k = 0; k < 8; k++) {
            fin &= isfinite(u[k]);
            mx = u[k] > mx ? u[k] : mx;
            mn = u[k] < mn ? u[k] : mn;
        }
        if (fin && !(mor & hp->excl)) {
            if (!(v > mx) && !(v < mn))
                return 0;
            const float sg = cos_sigma(nm, mn);
            const int maybe = v > mx
                                  ? hp->do_hot && COS_SUB(v, mn) > COS_MUL(hp->hot_sigma, sg)
                                  : hp->do_cold && COS_SUB(mx, v) > COS_MUL(hp->cold_sigma, sg);
            if (!maybe)
                return 0;
        }
    }
    return cos_hotcold(pix, mask, g, nm, hp, x, y);
}

/** Median of the usable pixels of the 5×5 box around (x, y) of src: in frame, finite, no
 *  `excl` bit. Returns 0 when none (out untouched), 1 with *out set. */
TIDE_HD static inline int cos_fill_value(const float *src, int64_t sld, const uint16_t *mask,
                                         int64_t mld, int64_t w, int64_t h, int64_t x,
                                         int64_t y, uint16_t excl, float *out) {
    float v[24];
    int n = 0;
    for (int dy = -2; dy <= 2; dy++) {
        const int64_t yy = y + dy;
        if (yy < 0 || yy >= h)
            continue;
        for (int dx = -2; dx <= 2; dx++) {
            const int64_t xx = x + dx;
            if ((dx == 0 && dy == 0) || xx < 0 || xx >= w)
                continue;
            const float u = src[yy * sld + xx];
            if (isfinite(u) && !(mask[yy * mld + xx] & excl))
                v[n++] = u;
        }
    }
    if (n == 0)
        return 0;
    *out = cos_median(v, n);
    return 1;
}

/** A pixel may be flagged as a cosmic ray: no excluded bit, not near saturation. */
TIDE_HD static inline int cos_may_flag(const uint16_t *mask, const tide_cos_geom *g,
                                       const tide_cos_lacos *lp, int64_t x, int64_t y) {
    if (mask[y * g->stride + x] & lp->excl)
        return 0;
    return lp->protect <= 0 ||
           !cos_near_saturation(mask, g->stride, g->w, g->h, x, y, lp->protect);
}

/** The last step of cos_candidate, for a pixel that may be flagged with S' = sp > sigclip,
 *  fine structure F and noise n. */
TIDE_HD static inline int cos_candidate_f(float sp, float F, float n, const tide_cos_lacos *lp) {
    float f = COS_DIV(F, n);
    if (!(f > 0.01f))
        f = 0.01f;
    return COS_DIV(sp, f) > lp->objlim;
}

/** Candidate test at (x, y) (eqs. 11–13): S' > σ_lim and S'/f > f_lim with
 *  f = max(F/N, 0.01), the fine-structure contrast in units of the noise as lacosmic.cl. */
TIDE_HD static inline int cos_candidate(const float *W, const float *N, const float *SP,
                                        const uint16_t *mask, const tide_cos_geom *g,
                                        const tide_cos_lacos *lp, int64_t x, int64_t y) {
    const int64_t i = y * g->w + x;
    if (!(SP[i] > lp->sigclip) || !cos_may_flag(mask, g, lp, x, y))
        return 0;
    return cos_candidate_f(SP[i], cos_fine(W, g->w, g->w, g->h, x, y), N[i], lp);
}

/** Growth step of the detection (lacosmic.cl): a flaggable pixel with S' > thr next to (or
 *  on) a pixel of `in` in its 3×3 box. */
TIDE_HD static inline int cos_grow_one(const uint8_t *in, const float *SP, const uint16_t *mask,
                                       const tide_cos_geom *g, const tide_cos_lacos *lp,
                                       float thr, int64_t x, int64_t y) {
    if (!(SP[y * g->w + x] > thr))
        return 0;
    int any = 0;
    for (int64_t j = y - 1; j <= y + 1 && !any; j++) {
        if (j < 0 || j >= g->h)
            continue;
        for (int64_t i = x - 1; i <= x + 1; i++)
            if (i >= 0 && i < g->w && in[j * g->w + i]) {
                any = 1;
                break;
            }
    }
    return any && cos_may_flag(mask, g, lp, x, y);
}

/* ---- bad columns ---------------------------------------------------------------------------
 * z(x, y) = (I − m)/σ(m) with m the median of the pixels 1 and 2 columns either side on the
 * same row: a column that differs from its neighbours shows a residual of constant sign over
 * many rows, while stars and noise do not. Per column, the median z over blocks of
 * COS_COL_BLOCK rows (at least half of them usable) marks a block when |median| > k; runs of
 * at least `minrun` marked blocks of one sign are bad, extended pixel by pixel into the
 * neighbouring blocks while z keeps that sign beyond k/2 (a partial column starts mid-block). */
#define COS_COL_BLOCK 32

/** Median of four values without sorting: the mean of the two middle ones, max of the pair
 *  minima and min of the pair maxima (the same two numbers the sort would give). */
TIDE_HD static inline float cos_med4(float a, float b, float c, float d) {
    const float lo1 = b < a ? b : a, hi1 = b < a ? a : b;
    const float lo2 = d < c ? d : c, hi2 = d < c ? c : d;
    const float m1 = lo1 < lo2 ? lo2 : lo1, m2 = hi2 < hi1 ? hi2 : hi1;
    return COS_MUL(0.5f, COS_ADD(m1, m2));
}

/** z of a pixel of value v whose neighbours' median is m. */
TIDE_HD static inline float cos_col_zval(const tide_cos_noise *nm, float v, float m) {
    return COS_DIV(COS_SUB(v, m), cos_sigma(nm, m));
}

/** Column residual z at (x, y), or NaN when the pixel or too many neighbours are unusable. */
TIDE_HD static inline float cos_col_z(const float *pix, const uint16_t *mask,
                                      const tide_cos_geom *g, const tide_cos_noise *nm,
                                      uint16_t excl, int64_t x, int64_t y) {
    const int64_t ld = g->stride;
    const float v = pix[y * ld + x];
    if (!isfinite(v) || (mask[y * ld + x] & excl))
        return NAN;
    float nb[4];
    int n = 0;
    for (int dx = -2; dx <= 2; dx++) {
        const int64_t xx = x + dx;
        if (dx == 0 || xx < 0 || xx >= g->w)
            continue;
        const float u = pix[y * ld + xx];
        if (isfinite(u) && !(mask[y * ld + xx] & excl))
            nb[n++] = u;
    }
    if (n < 2)
        return NAN;
    const float m = n == 4 ? cos_med4(nb[0], nb[1], nb[2], nb[3]) : cos_median(nb, n);
    return cos_col_zval(nm, v, m);
}

/** Block sign from the n usable z values of a block of @p rows rows (sorts z): +1 / -1
 *  when the median is beyond ±k, 0 when it is not or too few rows are usable. */
TIDE_HD static inline int cos_col_sign_of(float m, float k) {
    return m > k ? 1 : (m < -k ? -1 : 0);
}
TIDE_HD static inline int cos_col_sign(float *z, int n, int rows, float k) {
    if (rows < COS_COL_BLOCK / 2 || 2 * n < rows)
        return 0;
    return cos_col_sign_of(cos_median(z, n), k);
}

/** Median z of rows [y0, y0 + COS_COL_BLOCK) of column x, as +1 / -1 / 0 against k. */
TIDE_HD static inline int cos_col_block(const float *pix, const uint16_t *mask,
                                        const tide_cos_geom *g, const tide_cos_noise *nm,
                                        uint16_t excl, float k, int64_t x, int64_t y0) {
    float z[COS_COL_BLOCK];
    int n = 0, rows = 0;
    for (int64_t y = y0; y < y0 + COS_COL_BLOCK && y < g->h; y++, rows++) {
        const float t = cos_col_z(pix, mask, g, nm, excl, x, y);
        if (t == t)
            z[n++] = t;
    }
    return cos_col_sign(z, n, rows, k);
}

/** Runs of column x: from the block signs blk (stride w, one row per block, +1 → 1, -1 → 2),
 *  set out = 1 (stride w) on runs of at least `minrun` blocks of one sign, extended pixel by
 *  pixel while z keeps that sign beyond k/2. Writes only the 1s. */
TIDE_HD static inline void cos_col_runs(const float *pix, const uint16_t *mask,
                                        const tide_cos_geom *g, const tide_cos_noise *nm,
                                        uint16_t excl, float k, int minrun, int64_t x,
                                        const uint8_t *blk, uint8_t *out) {
    const int64_t w = g->w, nb = (g->h + COS_COL_BLOCK - 1) / COS_COL_BLOCK;
    const float half = COS_MUL(0.5f, k);
    int64_t b = 0;
    while (b < nb) {
        const uint8_t s = blk[b * w + x];
        int64_t e = b;
        while (e < nb && s && blk[e * w + x] == s)
            e++;
        if (!s || e - b < minrun) {
            b = s ? e : b + 1;
            continue;
        }
        const int64_t y0 = b * COS_COL_BLOCK, y1 = e * COS_COL_BLOCK < g->h ? e * COS_COL_BLOCK : g->h;
        for (int64_t y = y0; y < y1; y++)
            out[y * w + x] = 1;
        /* extend while z keeps the sign beyond k/2 */
        for (int64_t y = y0 - 1; y >= 0; y--) {
            const float t = cos_col_z(pix, mask, g, nm, excl, x, y);
            if (!(s == 1 ? t > half : t < -half))
                break;
            out[y * w + x] = 1;
        }
        for (int64_t y = y1; y < g->h; y++) {
            const float t = cos_col_z(pix, mask, g, nm, excl, x, y);
            if (!(s == 1 ? t > half : t < -half))
                break;
            out[y * w + x] = 1;
        }
        b = e;
    }
}

/** Mark the bad segments of column x in out (stride w, 1 = bad), using blk (stride w, one
 *  row per block) as scratch for the block signs (stored +1 → 1, -1 → 2). */
TIDE_HD static inline void cos_col_scan(const float *pix, const uint16_t *mask,
                                        const tide_cos_geom *g, const tide_cos_noise *nm,
                                        uint16_t excl, float k, int minrun, int64_t x,
                                        uint8_t *blk, uint8_t *out) {
    const int64_t w = g->w, nb = (g->h + COS_COL_BLOCK - 1) / COS_COL_BLOCK;
    for (int64_t y = 0; y < g->h; y++)
        out[y * w + x] = 0;
    for (int64_t b = 0; b < nb; b++) {
        const int s = cos_col_block(pix, mask, g, nm, excl, k, x, b * COS_COL_BLOCK);
        blk[b * w + x] = (uint8_t)(s > 0 ? 1 : (s < 0 ? 2 : 0));
    }
    cos_col_runs(pix, mask, g, nm, excl, k, minrun, x, blk, out);
}

/* ---- bleed trails: three sweeps along each line (column or row) ---------------------------
 * Sweep 1 (forward) marks pixels whose high run contains a saturated pixel at or before them;
 * sweep 2 (backward) completes the run with saturated pixels after them and marks pixels
 * within `grow` before a run pixel; sweep 3 (forward) adds pixels within `grow` after one.
 * State per line is two small integers, so the CPU runs lines in blocks (rows outer, cache
 * friendly) and the GPU one line per thread (coalesced along columns). Scratch bits: */
enum { COS_B_FWD = 1, COS_B_RUN = 2, COS_B_GROW = 4 };

/** Sweep 1 at one pixel. *prev: 1 if the previous pixel was marked. */
TIDE_HD static inline uint8_t cos_bleed_fwd(float v, uint16_t m, float hi, int *prev) {
    const int sat = (m & TIDE_MASK_SATURATED) != 0;
    const int high = sat || (isfinite(v) && v >= hi);
    *prev = high && (sat || *prev);
    return *prev ? (uint8_t)COS_B_FWD : (uint8_t)0;
}

/** Sweep 2 at one pixel (walking backward). *prev as above, *dist pixels since the last run
 *  pixel (start large). Returns the new scratch byte. */
TIDE_HD static inline uint8_t cos_bleed_bwd(float v, uint16_t m, float hi, uint8_t s, int grow,
                                            int *prev, int *dist) {
    const int sat = (m & TIDE_MASK_SATURATED) != 0;
    const int high = sat || (isfinite(v) && v >= hi);
    *prev = high && (sat || *prev);
    const int run = *prev || (s & COS_B_FWD);
    *dist = run ? 0 : (*dist < 1 << 30 ? *dist + 1 : *dist);
    return (uint8_t)((run ? COS_B_RUN : 0) | (*dist <= grow ? COS_B_GROW : 0));
}

/** Sweep 3 at one pixel (forward): 1 when the pixel gets BLEED. */
TIDE_HD static inline int cos_bleed_final(uint16_t m, uint8_t s, int grow, int *dist) {
    *dist = (s & COS_B_RUN) ? 0 : (*dist < 1 << 30 ? *dist + 1 : *dist);
    const int in = (s & COS_B_GROW) || *dist <= grow;
    return in && !(m & TIDE_MASK_SATURATED);
}

/* ---- bleed trails, segmented: the same bits with a short serial depth (the GPU's form) ----
 * What the three sweeps compute: a pixel is RUN when it is high (SATURATED, or finite and
 * >= hi) and its maximal high run along the line contains a SATURATED pixel (sweep 1 finds
 * one at or before it in the run, sweep 2 one at or after it); it gets BLEED when it is not
 * SATURATED and some RUN pixel lies within ±grow along the line (sweep 2's GROW bit looks
 * ahead, sweep 3 behind; a RUN pixel is within 0 of itself).
 *
 * Here a line is cut into segments of COS_SEG pixels (the last may be shorter):
 *   1. per segment, with carries 0: all-high?, does the tail run (ending at its last pixel)
 *      hold a SATURATED pixel (sweep 1's state at the end), does the head run (starting at
 *      its first pixel; sweep 2's state at the start), any SATURATED, first/last pixel high;
 *   2. per line, the carries: sweep 1's state entering segment s is FEND of s − 1, or, when
 *      s − 1 is all high, also the carry entering s − 1 (cos_bleed_carry); sweep 2 mirrored;
 *   3. per segment that holds a RUN pixel, RUN bits by the two sweeps started from the
 *      carries (cos_bleed_seg_run);
 *   4. per segment, BLEED from the RUN bits within ±grow (cos_bleed_seg_grow), reading RUN
 *      only in segments that hold one (scratch elsewhere is never written).
 * tests/unit/test_cosmetics_scan.c checks it against the sweeps on random lines. */
#define COS_SEG 128
/* Unrolled on the device, so that a thread has several pixels' loads in flight. */
#ifdef __CUDA_ARCH__
#define COS_UNROLL8 _Pragma("unroll 8")
#else
#define COS_UNROLL8
#endif
enum {
    COS_S_ALL = 1,   /* every pixel high */
    COS_S_FEND = 2,  /* tail run holds a SATURATED pixel (forward state at the end, carry 0) */
    COS_S_BEND = 4,  /* head run holds one (backward state at the start, carry 0) */
    COS_S_SAT = 8,   /* some pixel SATURATED */
    COS_S_HEAD = 16, /* first pixel high */
    COS_S_TAIL = 32, /* last pixel high */
    COS_S_CINF = 64, /* forward carry in: the run entering from the left holds one */
    COS_S_CINB = 128 /* backward carry in: the run entering from the right holds one */
};

/** Segments of a line of @p len pixels. */
TIDE_HD static inline int64_t cos_bleed_nseg(int64_t len) { return (len + COS_SEG - 1) / COS_SEG; }

/** The high test of the sweeps (cos_bleed_fwd). */
TIDE_HD static inline int cos_bleed_high(float v, uint16_t m, float hi) {
    return (m & TIDE_MASK_SATURATED) || (isfinite(v) && v >= hi);
}

/** Step 1: summary of the @p n (>= 1) pixels pix[i·ps], mask[i·ps] of one segment. */
TIDE_HD static inline uint8_t cos_bleed_seg_sum(const float *pix, const uint16_t *mask,
                                                int64_t ps, int64_t n, float hi) {
    int all = 1, fend = 0, bend = 0, head_open = 1, any = 0, first = 0, last = 0;
    COS_UNROLL8
    for (int64_t i = 0; i < n; i++) {
        const uint16_t m = mask[i * ps];
        const int sat = (m & TIDE_MASK_SATURATED) != 0;
        const int high = cos_bleed_high(pix[i * ps], m, hi);
        if (i == 0)
            first = high;
        last = high;
        all &= high;
        any |= sat;
        fend = high && (sat || fend);
        head_open &= high;
        bend |= head_open && sat;
    }
    return (uint8_t)((all ? COS_S_ALL : 0) | (fend ? COS_S_FEND : 0) | (bend ? COS_S_BEND : 0) |
                     (any ? COS_S_SAT : 0) | (first ? COS_S_HEAD : 0) |
                     (last ? COS_S_TAIL : 0));
}

/** Step 2 on one line: set CINF / CINB in its @p nseg summaries sum[s·sst]. */
TIDE_HD static inline void cos_bleed_carry(uint8_t *sum, int64_t sst, int64_t nseg) {
    int c = 0;
    for (int64_t s = 0; s < nseg; s++) {
        const uint8_t b = (uint8_t)((sum[s * sst] & ~COS_S_CINF) | (c ? COS_S_CINF : 0));
        sum[s * sst] = b;
        c = (b & COS_S_FEND) || ((b & COS_S_ALL) && c);
    }
    c = 0;
    for (int64_t s = nseg - 1; s >= 0; s--) {
        const uint8_t b = (uint8_t)((sum[s * sst] & ~COS_S_CINB) | (c ? COS_S_CINB : 0));
        sum[s * sst] = b;
        c = (b & COS_S_BEND) || ((b & COS_S_ALL) && c);
    }
}

/** 1 when a segment with (carried) summary @p b holds a RUN pixel: a SATURATED one, or a
 *  run entering from either side through a high end pixel. */
TIDE_HD static inline int cos_bleed_hasrun(uint8_t b) {
    return (b & COS_S_SAT) || ((b & COS_S_CINF) && (b & COS_S_HEAD)) ||
           ((b & COS_S_CINB) && (b & COS_S_TAIL));
}

/** Step 3 on one segment of @p n pixels with carried summary @p b: scr[i·ss] = COS_B_RUN on
 *  RUN pixels, else 0 (the two sweeps of cos_bleed_fwd / cos_bleed_bwd from the carries). */
TIDE_HD static inline void cos_bleed_seg_run(const float *pix, const uint16_t *mask, int64_t ps,
                                             int64_t n, float hi, uint8_t b, uint8_t *scr,
                                             int64_t ss) {
    int prev = (b & COS_S_CINF) != 0;
    for (int64_t i = 0; i < n; i++)
        scr[i * ss] = cos_bleed_fwd(pix[i * ps], mask[i * ps], hi, &prev);
    prev = (b & COS_S_CINB) != 0;
    for (int64_t i = n - 1; i >= 0; i--) {
        const int bwd = cos_bleed_fwd(pix[i * ps], mask[i * ps], hi, &prev) != 0;
        scr[i * ss] = (uint8_t)((bwd || (scr[i * ss] & COS_B_FWD)) ? COS_B_RUN : 0);
    }
}

/** RUN at position j of a line (scr stride ss, summaries stride sst). */
TIDE_HD static inline int cos_bleed_run_at(const uint8_t *scr, int64_t ss, const uint8_t *sum,
                                           int64_t sst, int64_t j) {
    return cos_bleed_hasrun(sum[(j / COS_SEG) * sst]) && (scr[j * ss] & COS_B_RUN);
}

/** Step 4 on pixels [i0, i1) of a line of @p len pixels (mask stride ps; scr, sum as in
 *  cos_bleed_run_at): mask |= BLEED where not SATURATED and a RUN pixel is within ±grow.
 *  Walks forward once: `last` is the last RUN at or before i, `nxt` the first RUN in
 *  [i, i + grow] (positions up to p − 1 already looked at, each once). */
TIDE_HD static inline void cos_bleed_seg_grow(uint16_t *mask, int64_t ps, const uint8_t *scr,
                                              int64_t ss, const uint8_t *sum, int64_t sst,
                                              int64_t len, int64_t i0, int64_t i1, int grow) {
    const int64_t j0 = i0 - grow > 0 ? i0 - grow : 0;
    const int64_t j1 = i1 - 1 + grow < len - 1 ? i1 - 1 + grow : len - 1;
    int any = 0;
    for (int64_t s = j0 / COS_SEG; s <= j1 / COS_SEG && !any; s++)
        any = cos_bleed_hasrun(sum[s * sst]);
    if (!any)
        return;
    int64_t last = i0 - grow - 1; /* none within reach */
    for (int64_t j = i0 - 1; j >= j0; j--)
        if (cos_bleed_run_at(scr, ss, sum, sst, j)) {
            last = j;
            break;
        }
    int64_t nxt = -1, p = i0;
    for (int64_t i = i0; i < i1; i++) {
        const int64_t lim = i + grow < len - 1 ? i + grow : len - 1;
        while (nxt < i && p <= lim) {
            if (cos_bleed_run_at(scr, ss, sum, sst, p))
                nxt = p;
            p++;
        }
        if (nxt == i)
            last = i;
        if ((nxt >= i || i - last <= grow) && !(mask[i * ps] & TIDE_MASK_SATURATED))
            mask[i * ps] |= TIDE_MASK_BLEED;
    }
}

/** Where the lines of the bleed pass lie: @p nlines lines of @p len pixels, @p nseg segments
 *  each; pixel i of line l at l·ps_l + i·ps_i (pix/mask), at l·ss_l + i·ss_i (scratch).
 *  Segment s of line l has its summary at sum[s·nlines + l] (consecutive lines adjacent, so
 *  along columns the threads of a warp read consecutive pixels of a row). */
typedef struct tide_cos_lines {
    int64_t nlines, len, nseg, ps_l, ps_i, ss_l, ss_i;
} tide_cos_lines;

TIDE_HD static inline tide_cos_lines cos_bleed_lines(const tide_cos_geom *g, int axis) {
    tide_cos_lines L;
    L.nlines = axis == 0 ? g->w : g->h;
    L.len = axis == 0 ? g->h : g->w;
    L.nseg = cos_bleed_nseg(L.len);
    L.ps_l = axis == 0 ? 1 : g->stride;
    L.ps_i = axis == 0 ? g->stride : 1;
    L.ss_l = axis == 0 ? 1 : g->w;
    L.ss_i = axis == 0 ? g->w : 1;
    return L;
}

/** Steps 1, 3 and 4 for work item t = s·nlines + l (segment s of line l), 0 <= t <
 *  nlines·nseg; step 2 is cos_bleed_carry(sum + l, nlines, nseg) per line. */
TIDE_HD static inline void cos_bleed_t_sum(const tide_cos_lines *L, const float *pix,
                                           const uint16_t *mask, float hi, uint8_t *sum,
                                           int64_t t) {
    const int64_t s = t / L->nlines, l = t - s * L->nlines, i0 = s * COS_SEG;
    const int64_t n = L->len - i0 < COS_SEG ? L->len - i0 : COS_SEG;
    const int64_t o = l * L->ps_l + i0 * L->ps_i;
    sum[t] = cos_bleed_seg_sum(pix + o, mask + o, L->ps_i, n, hi);
}
TIDE_HD static inline void cos_bleed_t_run(const tide_cos_lines *L, const float *pix,
                                           const uint16_t *mask, float hi, const uint8_t *sum,
                                           uint8_t *scr, int64_t t) {
    const uint8_t b = sum[t];
    if (!cos_bleed_hasrun(b))
        return;
    const int64_t s = t / L->nlines, l = t - s * L->nlines, i0 = s * COS_SEG;
    const int64_t n = L->len - i0 < COS_SEG ? L->len - i0 : COS_SEG;
    const int64_t o = l * L->ps_l + i0 * L->ps_i;
    cos_bleed_seg_run(pix + o, mask + o, L->ps_i, n, hi, b, scr + l * L->ss_l + i0 * L->ss_i,
                      L->ss_i);
}
TIDE_HD static inline void cos_bleed_t_grow(const tide_cos_lines *L, uint16_t *mask,
                                            const uint8_t *scr, const uint8_t *sum, int grow,
                                            int64_t t) {
    const int64_t s = t / L->nlines, l = t - s * L->nlines, i0 = s * COS_SEG;
    const int64_t i1 = L->len < i0 + COS_SEG ? L->len : i0 + COS_SEG;
    cos_bleed_seg_grow(mask + l * L->ps_l, L->ps_i, scr + l * L->ss_l, L->ss_i, sum + l,
                       L->nlines, L->len, i0, i1, grow);
}

#endif
