/* detect_deblend_math.h — multi-threshold deblending of one footprint (detect.h, step 4),
 * written once and run per parent by both backends (an OpenMP loop on the CPU, one thread per
 * parent on the GPU), so both give the same children.
 *
 * Source Extractor's scheme (Bertin & Arnouts 1996, A&AS 117, 393, §2.3): the footprint is
 * re-thresholded at nthresh levels spaced exponentially between the detection threshold and
 * its peak; at each level the pixels of every current object that stay above the level are
 * split into 8-connected branches (union-find over the parent's pixel list). A branch is
 * significant when it has at least minarea pixels and its summed S/N is at least mincont
 * times the parent's total; an object with two or more significant branches is replaced by
 * them. Pixels left outside the final objects are given to the object whose elliptical
 * Gaussian (moments of its pixels, amplitude its peak) is largest there.
 *
 * Scratch. Everything lives in one caller-provided block of tide_det_deblend_scratch_bytes(n,
 * minarea, limit) bytes: 4 neighbour links, union-find, owner, seed and root-map words per
 * pixel, one double per pixel, and per-object records for at most 2 min(limit, n/minarea) + 2
 * objects (each split adds at least one live object; live objects are disjoint and hold at
 * least minarea pixels, so the count is a true bound and nothing can overflow). */
#ifndef TIDE_DETECT_DEBLEND_MATH_H
#define TIDE_DETECT_DEBLEND_MATH_H
#include <math.h>
#include <stdint.h>

#include "core/hd.h"
#include "tide/detect.h"

/** Doubles per object record: sum v, v dx, v dy, v dx^2, v dy^2, v dx dy, peak. */
#define TIDE_DET_OBJ_NMOM 7

/** Object records a parent of @p n pixels needs. */
TIDE_HD static inline int64_t tide_det_deblend_ocap(int64_t n, int64_t minarea, int limit) {
    int64_t m = minarea > 0 ? n / minarea : n;
    if (m > limit) m = limit;
    return 2 * m + 2;
}

/** Scratch bytes for one parent of @p n pixels (a multiple of 8). */
TIDE_HD static inline int64_t tide_det_deblend_scratch_bytes(int64_t n, int64_t minarea,
                                                             int limit) {
    int64_t oc = tide_det_deblend_ocap(n, minarea, limit);
    int64_t b = 8 * (n + TIDE_DET_OBJ_NMOM * oc) + 4 * (8 * n + 4 * oc);
    return (b + 7) / 8 * 8;
}

TIDE_HD static inline int32_t tide_det_uf_find(int32_t *uf, int32_t i) {
    while (uf[i] != i) {
        uf[i] = uf[uf[i]];
        i = uf[i];
    }
    return i;
}

/* Union by smaller index: a component's root is its first pixel in list (raster) order. */
TIDE_HD static inline void tide_det_uf_union(int32_t *uf, int32_t a, int32_t b) {
    a = tide_det_uf_find(uf, a);
    b = tide_det_uf_find(uf, b);
    if (a < b) uf[b] = a;
    else if (b < a) uf[a] = b;
}

/* First index in [lo, hi) of the sorted list with pidx >= key. */
TIDE_HD static inline int32_t tide_det_lower_bound(const int32_t *pidx, int32_t lo, int32_t hi,
                                                   int32_t key) {
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (pidx[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/** Deblend one parent: @p n pixels with flat indices @p pidx (raster order) and S/N @p val in a
 *  frame @p width wide, detection threshold @p thresh, peak S/N @p peak. Writes the child index
 *  of every pixel to @p local (children numbered by first pixel), ORs TIDE_DETECT_FLAG_* into
 *  *flags and returns the number of children (>= 1). */
TIDE_HD static inline int32_t tide_det_deblend_one(int64_t n64, const int32_t *pidx,
                                                   const float *val, int64_t width, double thresh,
                                                   double peak, int nthresh, double mincont,
                                                   int64_t minarea, int limit,
                                                   unsigned char *scratch, int32_t *local,
                                                   int32_t *flags) {
    const int32_t n = (int32_t)n64;
    const int64_t oc = tide_det_deblend_ocap(n64, minarea, limit);
    double *cflux = (double *)scratch;
    double *omom = cflux + n;
    int32_t *nb = (int32_t *)(omom + TIDE_DET_OBJ_NMOM * oc);
    int32_t *uf = nb + 4 * (int64_t)n;
    int32_t *owner = uf + n;
    int32_t *seed = owner + n;
    int32_t *cmap = seed + n;
    int32_t *onsig = cmap + n;
    int32_t *oalive = onsig + oc;
    int32_t *olocal = oalive + oc;

    for (int32_t i = 0; i < n; i++) local[i] = 0;
    if (nthresh < 2 || mincont >= 1.0 || n64 < 2 * minarea || !(peak > thresh))
        return 1;

    /* Neighbour links to earlier pixels of the list: W, NW, N, NE. */
    for (int32_t i = 0; i < n; i++) {
        int32_t p = pidx[i];
        int64_t x = p % width;
        int32_t *l = nb + 4 * (int64_t)i;
        l[0] = l[1] = l[2] = l[3] = -1;
        if (x > 0 && i > 0 && pidx[i - 1] == p - 1) l[0] = i - 1;
        int32_t lo = x > 0 ? p - (int32_t)width - 1 : p - (int32_t)width;
        int32_t hi = x < width - 1 ? p - (int32_t)width + 1 : p - (int32_t)width;
        if (hi < 0) continue;
        int32_t j = tide_det_lower_bound(pidx, 0, i, lo);
        int k = 1;
        for (; j < i && pidx[j] <= hi && k < 4; j++) l[k++] = j;
    }

    double total = 0.0;
    for (int32_t i = 0; i < n; i++) {
        total += (double)val[i];
        owner[i] = 0;
        seed[i] = 0;
    }
    const double minflux = mincont * total;
    int64_t nobj = 1, alive = 1;
    oalive[0] = 1;

    for (int k = 1; k < nthresh; k++) {
        double t = thresh * pow(peak / thresh, (double)k / (double)nthresh);
        int64_t nact = 0;
        for (int32_t i = 0; i < n; i++) {
            if (owner[i] >= 0 && (double)val[i] >= t) {
                uf[i] = i;
                nact++;
            } else {
                uf[i] = -1;
                owner[i] = -1;
            }
        }
        if (nact < 2 * minarea) break;
        for (int32_t i = 0; i < n; i++) {
            if (uf[i] < 0) continue;
            for (int m = 0; m < 4; m++) {
                int32_t j = nb[4 * (int64_t)i + m];
                if (j >= 0 && uf[j] >= 0 && owner[j] == owner[i]) tide_det_uf_union(uf, i, j);
            }
        }
        for (int32_t i = 0; i < n; i++) {
            if (uf[i] < 0) continue;
            int32_t r = tide_det_uf_find(uf, i);
            uf[i] = r;
            if (r == i) {
                cflux[i] = 0.0;
                cmap[i] = 0;
            }
            cflux[r] += (double)val[i];
            cmap[r]++;
        }
        for (int64_t o = 0; o < nobj; o++) onsig[o] = 0;
        for (int32_t i = 0; i < n; i++)
            if (uf[i] == i && cmap[i] >= minarea && cflux[i] >= minflux) onsig[owner[i]]++;
        int64_t newalive = alive, nsplit = 0;
        for (int64_t o = 0; o < nobj; o++)
            if (oalive[o] && onsig[o] >= 2) {
                newalive += onsig[o] - 1;
                nsplit++;
            }
        if (newalive == alive) continue;
        if (newalive > limit || nobj + (newalive - alive) + nsplit > oc) {
            *flags |= TIDE_DETECT_FLAG_DEBLEND_LIMIT;
            for (int32_t i = 0; i < n; i++) local[i] = 0;
            return 1;
        }
        const int64_t nold = nobj;
        for (int32_t i = 0; i < n; i++) {
            if (uf[i] != i) continue;
            int32_t o = owner[i];
            if (onsig[o] >= 2 && cmap[i] >= minarea && cflux[i] >= minflux) {
                cmap[i] = (int32_t)nobj;
                oalive[nobj] = 1;
                onsig[nobj] = 0;
                nobj++;
            } else {
                cmap[i] = -1;
            }
        }
        for (int64_t o = 0; o < nold; o++)
            if (oalive[o] && onsig[o] >= 2) oalive[o] = 0;
        for (int32_t i = 0; i < n; i++) {
            int32_t s = seed[i];
            if (s >= 0 && s < nold && onsig[s] >= 2)
                seed[i] = uf[i] >= 0 ? cmap[uf[i]] : -1;
            if (uf[i] >= 0 && onsig[owner[i]] >= 2) owner[i] = cmap[uf[i]];
        }
        alive = newalive;
    }
    if (alive <= 1) return 1;

    /* Elliptical Gaussian of every live object from the S/N moments of its seed pixels,
     * about the parent's first pixel (conditioning). */
    const int64_t xr = pidx[0] % width, yr = pidx[0] / width;
    for (int64_t o = 0; o < nobj; o++)
        for (int m = 0; m < TIDE_DET_OBJ_NMOM; m++) omom[TIDE_DET_OBJ_NMOM * o + m] = 0.0;
    for (int32_t i = 0; i < n; i++) {
        int32_t s = seed[i];
        if (s < 0) continue;
        double v = (double)val[i];
        double dx = (double)(pidx[i] % width - xr), dy = (double)(pidx[i] / width - yr);
        double *m = omom + TIDE_DET_OBJ_NMOM * (int64_t)s;
        m[0] += v;
        m[1] += v * dx;
        m[2] += v * dy;
        m[3] += v * dx * dx;
        m[4] += v * dy * dy;
        m[5] += v * dx * dy;
        if (v > m[6]) m[6] = v;
    }
    for (int64_t o = 0; o < nobj; o++) {
        if (!oalive[o]) continue;
        double *m = omom + TIDE_DET_OBJ_NMOM * o;
        double s = m[0] > 0.0 ? m[0] : 1.0;
        double mx = m[1] / s, my = m[2] / s;
        double cxx = m[3] / s - mx * mx, cyy = m[4] / s - my * my, cxy = m[5] / s - mx * my;
        if (cxx * cyy - cxy * cxy < 1.0 / 144.0) { /* SE's guard for thin objects */
            cxx += 1.0 / 12.0;
            cyy += 1.0 / 12.0;
        }
        double det = cxx * cyy - cxy * cxy;
        if (!(det > 0.0)) {
            cxx = cyy = 1.0;
            cxy = 0.0;
            det = 1.0;
        }
        /* store: centre, inverse covariance, log amplitude */
        m[0] = mx;
        m[1] = my;
        m[2] = cyy / det;
        m[3] = cxx / det;
        m[4] = -cxy / det;
        m[5] = log(m[6] > 0.0 ? m[6] : 1e-30);
    }
    for (int32_t i = 0; i < n; i++) {
        if (seed[i] >= 0) {
            local[i] = seed[i];
            continue;
        }
        double dx = (double)(pidx[i] % width - xr), dy = (double)(pidx[i] / width - yr);
        double best = 0.0;
        int32_t bo = -1;
        for (int64_t o = 0; o < nobj; o++) {
            if (!oalive[o]) continue;
            const double *m = omom + TIDE_DET_OBJ_NMOM * o;
            double ex = dx - m[0], ey = dy - m[1];
            double sc = m[5] - 0.5 * (m[2] * ex * ex + m[3] * ey * ey + 2.0 * m[4] * ex * ey);
            if (bo < 0 || sc > best) {
                best = sc;
                bo = (int32_t)o;
            }
        }
        local[i] = bo;
    }
    /* Number the children by their first pixel. */
    for (int64_t o = 0; o < nobj; o++) olocal[o] = -1;
    int32_t next = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t o = local[i];
        if (olocal[o] < 0) olocal[o] = next++;
        local[i] = olocal[o];
    }
    *flags |= TIDE_DETECT_FLAG_DEBLENDED;
    return next;
}

#endif
