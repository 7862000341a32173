/* detect_deblend_math.h — multi-threshold deblending of one footprint (detect.h, step 4),
 * written once and run per parent by both backends (an OpenMP loop on the CPU, one thread per
 * parent on the GPU), so both give the same children.
 *
 * Source Extractor's scheme (Bertin & Arnouts 1996, A&AS 117, 393, §2.3): the footprint is
 * re-thresholded at nthresh levels spaced exponentially between the detection threshold and
 * its peak; at each level the pixels of every current object that stay above the level are
 * split into 8-connected branches (union-find over the parent's pixel list). A branch is
 * significant when it has at least minarea pixels and its summed S/N is at least mincont
 * times the parent's total (SE's test), or when its peak stands out of the level by a
 * detection of its own (tide_det_branch_significant: the prominence test, which keeps faint
 * stars in the footprint of a bright one, where mincont of a huge total drops them); an
 * object with two or more significant branches is replaced by them. Pixels left outside the final
 * objects are given to the object whose elliptical Gaussian (moments of its pixels, amplitude its
 * peak) is largest there.
 *
 * Work. A level only visits the pixels still above the previous level (an ordered list that
 * shrinks as the levels rise), so a parent costs the sum of its level areas rather than
 * nthresh times its area. A parent whose S/N has a single regional maximum is not split at
 * all (every superlevel set of it is connected), and is recognised before the levels; the
 * others stop once the level passes their second highest local maximum (at most one branch
 * can be left above it). The results are those of visiting every pixel at every level
 * (tests/unit/test_detect_deblend.c keeps that formulation and compares).
 *
 * Scratch. Everything lives in one caller-provided block of tide_det_deblend_scratch_bytes(n,
 * minarea, limit) bytes: 4 neighbour links, union-find, owner, seed, root-map, active-list
 * and branch-peak words per pixel, one double per pixel, and per-object records for at most
 * 2 min(limit, n/minarea) + 2 objects (each split adds at least one live object; live objects
 * are disjoint and hold at least minarea pixels, so the count is a true bound and nothing can
 * overflow). */
#ifndef TIDE_DETECT_DEBLEND_MATH_H
#define TIDE_DETECT_DEBLEND_MATH_H
#include <math.h>
#include <stdint.h>

#include "core/gpu/hd.h"
#include "tide/detect.h"

/** Doubles per object record: sum v, v dx, v dy, v dx^2, v dy^2, v dx dy, peak. */
#define TIDE_DET_OBJ_NMOM 7

/** Object records a parent of @p n pixels needs. */
TIDE_HD static inline int64_t tide_det_deblend_ocap(int64_t n, int64_t minarea, int limit) {
    int64_t m = minarea > 0 ? n / minarea : n;
    if (m > limit)
        m = limit;
    return 2 * m + 2;
}

/** Scratch bytes for one parent of @p n pixels (a multiple of 8). */
TIDE_HD static inline int64_t tide_det_deblend_scratch_bytes(int64_t n, int64_t minarea,
                                                             int limit) {
    int64_t oc = tide_det_deblend_ocap(n, minarea, limit);
    int64_t b = 8 * (n + TIDE_DET_OBJ_NMOM * oc) + 4 * (10 * n + 4 * oc);
    return (b + 7) / 8 * 8;
}

/** Is a branch found at level @p t significant? Source Extractor's test: at least @p minarea
 *  pixels and a summed S/N of at least @p minflux (mincont times the parent's total). Or the
 *  prominence test: its highest S/N @p pk stands @p thresh noise units above the level, with
 *  at least 2 pixels: a detection on its own, whatever else shares the footprint. The noise
 *  of the S/N map is 1 where the sky dominates; the source's own Poisson noise adds to it in
 *  proportion to the S/N (variance ratio ~ t / (gain * sigma * sqrt(noise-equivalent area)),
 *  at most ~t for any detector with sigma >= 1 e-), so sqrt(1 + t) bounds it whatever the
 *  gain, and noise on a bright star's profile does not split off. */
TIDE_HD static inline int tide_det_branch_significant(int32_t npix, double flux, double pk,
                                                      double t, int64_t minarea, double minflux,
                                                      double thresh) {
    if (npix >= minarea && flux >= minflux)
        return 1;
    return npix >= 2 && pk - t >= thresh * sqrt(1.0 + t);
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
    if (a < b)
        uf[b] = a;
    else if (b < a)
        uf[a] = b;
}

/** Deblend one parent: @p n pixels with flat indices @p pidx (raster order) and S/N @p val in a
 *  frame @p width wide, detection threshold @p thresh, peak S/N @p peak. Writes the child index
 *  of every pixel to @p local (children numbered by first pixel), ORs TIDE_DETECT_FLAG_* into
 *  *flags and returns the number of children (>= 1). */
TIDE_HD static inline int32_t
tide_det_deblend_one(int64_t n64, const int32_t *pidx, const float *val, int64_t width,
                     double thresh, double peak, int nthresh, double mincont, int64_t minarea,
                     int limit, unsigned char *scratch, int32_t *local, int32_t *flags) {
    const int32_t n = (int32_t)n64;
    const int64_t oc = tide_det_deblend_ocap(n64, minarea, limit);
    double *cflux = (double *)scratch;
    double *omom = cflux + n;
    int32_t *nb = (int32_t *)(omom + TIDE_DET_OBJ_NMOM * oc);
    int32_t *uf = nb + 4 * (int64_t)n;
    int32_t *owner = uf + n;
    int32_t *seed = owner + n;
    int32_t *cmap = seed + n;
    int32_t *act = cmap + n;
    int32_t *onsig = act + n;
    int32_t *oalive = onsig + oc;
    int32_t *olocal = oalive + oc;
    float *cpk = (float *)(olocal + oc); /* a branch root's highest S/N */

    for (int32_t i = 0; i < n; i++)
        local[i] = 0;
    if (nthresh < 2 || mincont >= 1.0 || n64 < 2 * minarea || !(peak > thresh))
        return 1;

    /* Neighbour links to earlier pixels of the list, slot 0..3 = W, NW, N, NE (-1: none).
     * The row above starts at a list position that only grows with i (the list is sorted). */
    int32_t j0 = 0;
    for (int32_t i = 0; i < n; i++) {
        const int64_t p = pidx[i], x = p % width, up = p - width;
        int32_t *l = nb + 4 * (int64_t)i;
        l[0] = l[1] = l[2] = l[3] = -1;
        if (x > 0 && i > 0 && pidx[i - 1] == p - 1)
            l[0] = i - 1;
        if (up < 0)
            continue;
        const int64_t lo = x > 0 ? up - 1 : up, hi = x < width - 1 ? up + 1 : up;
        while (j0 < i && pidx[j0] < lo)
            j0++;
        for (int32_t j = j0; j < i && pidx[j] <= hi; j++)
            l[2 + (int)(pidx[j] - up)] = j;
    }
    /* A single regional maximum: when every pixel but one has a strictly higher neighbour,
     * every pixel climbs to that one through pixels no lower than itself, so every level's
     * pixels are one branch and nothing splits (ties fall through to the levels). */
    for (int32_t i = 0; i < n; i++)
        seed[i] = 0; /* 1: has a strictly higher neighbour */
    for (int32_t i = 0; i < n; i++)
        for (int m = 0; m < 4; m++) {
            const int32_t j = nb[4 * (int64_t)i + m];
            if (j < 0)
                continue;
            if (val[j] > val[i])
                seed[i] = 1;
            else if (val[i] > val[j])
                seed[j] = 1;
        }
    /* Every branch at every level holds a pixel without a strictly higher neighbour (its
     * highest: a neighbour outside the branch left the active pixels at a level its S/N was
     * below), so once the level passes the second highest of those pixels, at most one
     * branch is left and nothing can split any more. */
    int32_t ntop = 0;
    float top1 = -INFINITY, top2 = -INFINITY;
    for (int32_t i = 0; i < n; i++) {
        if (seed[i])
            continue;
        ntop++;
        if (val[i] > top1) {
            top2 = top1;
            top1 = val[i];
        } else if (val[i] > top2) {
            top2 = val[i];
        }
    }
    if (ntop < 2)
        return 1;

    double total = 0.0;
    for (int32_t i = 0; i < n; i++) {
        total += (double)val[i];
        owner[i] = 0;
        act[i] = i;
    }
    const double minflux = mincont * total;
    int64_t nobj = 1, alive = 1;
    oalive[0] = 1;

    /* act[0..na) lists the pixels still active, in list order. A pixel leaving it keeps its
     * owner of the moment as its seed; that seed becomes -1 if the object splits later (see
     * after the loop). While a pixel is active, its seed is its owner. */
    int32_t na = n;
    for (int k = 1; k < nthresh; k++) {
        double t = thresh * pow(peak / thresh, (double)k / (double)nthresh);
        if (t > (double)top2)
            break;
        int32_t nact = 0;
        for (int32_t a = 0; a < na; a++) {
            const int32_t i = act[a];
            if (owner[i] >= 0 && (double)val[i] >= t) {
                uf[i] = i;
                act[nact++] = i;
            } else {
                uf[i] = -1;
                seed[i] = owner[i];
                owner[i] = -1;
            }
        }
        na = nact;
        if (nact < 2 * minarea)
            break;
        /* Branches: 8-connected components of the active pixels. Adjacent active pixels
         * always share their owner (they were in one branch at every level before), so
         * owners need no test. The raster-scan decision tree of Wu, Otoo & Suzuki (2009,
         * Pattern Anal. Appl. 12, 117) skips the links that join pixels already joined: NW,
         * W and NE all touch N, and NW touches W. A root is its component's first pixel
         * whatever the order of the unions. */
        for (int32_t a = 0; a < na; a++) {
            const int32_t i = act[a];
            const int32_t *l = nb + 4 * (int64_t)i;
            if (l[2] >= 0 && uf[l[2]] >= 0) {
                tide_det_uf_union(uf, i, l[2]);
                continue;
            }
            if (l[0] >= 0 && uf[l[0]] >= 0)
                tide_det_uf_union(uf, i, l[0]);
            else if (l[1] >= 0 && uf[l[1]] >= 0)
                tide_det_uf_union(uf, i, l[1]);
            if (l[3] >= 0 && uf[l[3]] >= 0)
                tide_det_uf_union(uf, i, l[3]);
        }
        /* Roots and sums. A pixel's link points to an earlier active pixel, already pointed
         * at its root, so one step finds it. Each root's sum runs over its pixels in list
         * order (kept in a register while consecutive pixels share the root). */
        int32_t cr = -1, cn = 0;
        double cs = 0.0;
        float cp = 0.0f;
        for (int32_t a = 0; a < na; a++) {
            const int32_t i = act[a];
            const int32_t r = uf[uf[i]];
            uf[i] = r;
            if (r != cr) {
                if (cr >= 0) {
                    cflux[cr] = cs;
                    cmap[cr] = cn;
                    cpk[cr] = cp;
                }
                cr = r;
                cs = r == i ? 0.0 : cflux[r];
                cn = r == i ? 0 : cmap[r];
                cp = r == i ? val[i] : cpk[r];
            }
            cs += (double)val[i];
            cn++;
            if (val[i] > cp)
                cp = val[i];
        }
        if (cr >= 0) {
            cflux[cr] = cs;
            cmap[cr] = cn;
            cpk[cr] = cp;
        }
        for (int64_t o = 0; o < nobj; o++)
            onsig[o] = 0;
        for (int32_t a = 0; a < na; a++) {
            const int32_t i = act[a];
            if (uf[i] == i && tide_det_branch_significant(cmap[i], cflux[i], (double)cpk[i], t,
                                                          minarea, minflux, thresh))
                onsig[owner[i]]++;
        }
        int64_t newalive = alive, nsplit = 0;
        for (int64_t o = 0; o < nobj; o++)
            if (oalive[o] && onsig[o] >= 2) {
                newalive += onsig[o] - 1;
                nsplit++;
            }
        if (newalive == alive)
            continue;
        if (newalive > limit || nobj + (newalive - alive) + nsplit > oc) {
            *flags |= TIDE_DETECT_FLAG_DEBLEND_LIMIT;
            for (int32_t i = 0; i < n; i++)
                local[i] = 0;
            return 1;
        }
        const int64_t nold = nobj;
        for (int32_t a = 0; a < na; a++) {
            const int32_t i = act[a];
            if (uf[i] != i)
                continue;
            int32_t o = owner[i];
            if (onsig[o] >= 2 && tide_det_branch_significant(cmap[i], cflux[i], (double)cpk[i], t,
                                                             minarea, minflux, thresh)) {
                cmap[i] = (int32_t)nobj;
                oalive[nobj] = 1;
                onsig[nobj] = 0;
                nobj++;
            } else {
                cmap[i] = -1;
            }
        }
        for (int64_t o = 0; o < nold; o++)
            if (oalive[o] && onsig[o] >= 2)
                oalive[o] = 0;
        for (int32_t a = 0; a < na; a++) {
            const int32_t i = act[a];
            if (onsig[owner[i]] >= 2)
                owner[i] = cmap[uf[i]];
        }
        alive = newalive;
    }
    if (alive <= 1)
        return 1;
    /* Seeds. The pixels still active have their owner. A pixel that left keeps the owner it
     * had then, unless that object split later: a split hands on only the pixels still
     * above the level, and ends the object (nothing else does), so the others lose their
     * seed, as the per-level update of every pixel did. */
    for (int32_t a = 0; a < na; a++)
        seed[act[a]] = owner[act[a]];
    for (int32_t i = 0; i < n; i++) {
        const int32_t s = seed[i];
        seed[i] = s >= 0 && oalive[s] ? s : -1;
    }

    /* Elliptical Gaussian of every live object from the S/N moments of its seed pixels,
     * about the parent's first pixel (conditioning). */
    const int64_t xr = pidx[0] % width, yr = pidx[0] / width;
    for (int64_t o = 0; o < nobj; o++)
        for (int m = 0; m < TIDE_DET_OBJ_NMOM; m++)
            omom[TIDE_DET_OBJ_NMOM * o + m] = 0.0;
    for (int32_t i = 0; i < n; i++) {
        int32_t s = seed[i];
        if (s < 0)
            continue;
        double v = (double)val[i];
        double dx = (double)(pidx[i] % width - xr), dy = (double)(pidx[i] / width - yr);
        double *m = omom + TIDE_DET_OBJ_NMOM * (int64_t)s;
        m[0] += v;
        m[1] += v * dx;
        m[2] += v * dy;
        m[3] += v * dx * dx;
        m[4] += v * dy * dy;
        m[5] += v * dx * dy;
        if (v > m[6])
            m[6] = v;
    }
    for (int64_t o = 0; o < nobj; o++) {
        if (!oalive[o])
            continue;
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
            if (!oalive[o])
                continue;
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
    for (int64_t o = 0; o < nobj; o++)
        olocal[o] = -1;
    int32_t next = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t o = local[i];
        if (olocal[o] < 0)
            olocal[o] = next++;
        local[i] = olocal[o];
    }
    *flags |= TIDE_DETECT_FLAG_DEBLENDED;
    return next;
}

#endif
