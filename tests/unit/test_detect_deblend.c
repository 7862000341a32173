/* test_detect_deblend.c — the deblending of one parent (detect_deblend_math.h), which
 * visits only the pixels still active at each level, stops once a single branch can be left
 * and skips parents with one regional maximum, against the plain formulation it replaced
 * (kept below as the reference: every level walks every pixel): random blends of Gaussian
 * peaks with noise, plateaus of equal S/N, one-pixel strips and frame edges, across nthresh,
 * mincont, minarea and the deblend limit. Children, flags and the child of every pixel must
 * be identical. The host batch (largest parents first, one scratch block per thread) must
 * give the same as one call per parent at 1, 2 and 3 threads, and the host's share of the
 * parents (tide_det_deblend_host_area) the same as sorting the areas. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_rng.h"
#include "reduction/detect/detect_deblend_math.h"
#include "reduction/detect/detect_kernels.h"
#include "tide/tide.h"
#include "tide_test.h"

/* ---- the reference: the formulation before the active lists (same scratch layout minus the
 * active list, so tide_det_deblend_scratch_bytes is enough for it) ---------------------- */

static int32_t ref_lower_bound(const int32_t *pidx, int32_t lo, int32_t hi, int32_t key) {
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (pidx[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int32_t ref_deblend_one(int64_t n64, const int32_t *pidx, const float *val, int64_t width,
                               double thresh, double peak, int nthresh, double mincont,
                               int64_t minarea, int limit, unsigned char *scratch, int32_t *local,
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
    float *cpk = (float *)(olocal + oc);

    for (int32_t i = 0; i < n; i++)
        local[i] = 0;
    if (nthresh < 2 || mincont >= 1.0 || n64 < 2 * minarea || !(peak > thresh))
        return 1;

    /* Neighbour links to earlier pixels of the list: W, NW, N, NE. */
    for (int32_t i = 0; i < n; i++) {
        int32_t p = pidx[i];
        int64_t x = p % width;
        int32_t *l = nb + 4 * (int64_t)i;
        l[0] = l[1] = l[2] = l[3] = -1;
        if (x > 0 && i > 0 && pidx[i - 1] == p - 1)
            l[0] = i - 1;
        int32_t lo = x > 0 ? p - (int32_t)width - 1 : p - (int32_t)width;
        int32_t hi = x < width - 1 ? p - (int32_t)width + 1 : p - (int32_t)width;
        if (hi < 0)
            continue;
        int32_t j = ref_lower_bound(pidx, 0, i, lo);
        int k = 1;
        for (; j < i && pidx[j] <= hi && k < 4; j++)
            l[k++] = j;
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
        if (nact < 2 * minarea)
            break;
        for (int32_t i = 0; i < n; i++) {
            if (uf[i] < 0)
                continue;
            for (int m = 0; m < 4; m++) {
                int32_t j = nb[4 * (int64_t)i + m];
                if (j >= 0 && uf[j] >= 0 && owner[j] == owner[i])
                    tide_det_uf_union(uf, i, j);
            }
        }
        for (int32_t i = 0; i < n; i++) {
            if (uf[i] < 0)
                continue;
            int32_t r = tide_det_uf_find(uf, i);
            uf[i] = r;
            if (r == i) {
                cflux[i] = 0.0;
                cmap[i] = 0;
                cpk[i] = val[i];
            }
            cflux[r] += (double)val[i];
            cmap[r]++;
            if (val[i] > cpk[r])
                cpk[r] = val[i];
        }
        for (int64_t o = 0; o < nobj; o++)
            onsig[o] = 0;
        for (int32_t i = 0; i < n; i++)
            if (uf[i] == i && tide_det_branch_significant(cmap[i], cflux[i], (double)cpk[i], t,
                                                          minarea, minflux, thresh))
                onsig[owner[i]]++;
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
        for (int32_t i = 0; i < n; i++) {
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
        for (int32_t i = 0; i < n; i++) {
            int32_t s = seed[i];
            if (s >= 0 && s < nold && onsig[s] >= 2)
                seed[i] = uf[i] >= 0 ? cmap[uf[i]] : -1;
            if (uf[i] >= 0 && onsig[owner[i]] >= 2)
                owner[i] = cmap[uf[i]];
        }
        alive = newalive;
    }
    if (alive <= 1)
        return 1;

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

/* ---- random parents ------------------------------------------------------------------- */

static uint64_t rs = 12345;
static double urand(void) {
    return trng_unit(trng_lcg64(&rs));
}
static int irand(int n) {
    return (int)(urand() * n);
}

typedef struct frame {
    int64_t w, h;
    float *v;     /* w * h S/N */
    int32_t *lab; /* w * h component or -1 */
    int64_t ncomp;
    int64_t *off; /* ncomp + 1 */
    int32_t *idx; /* pixel lists in raster order */
    float *val;
    float *peak;
} frame;

/* A w x h frame of Gaussian peaks over noise, optionally quantised (plateaus, ties), then
 * its 8-connected components above thresh as raster-ordered lists (the labelling's form). */
static void make_frame(frame *f, int64_t w, int64_t h, double thresh) {
    f->w = w, f->h = h;
    const int64_t N = w * h;
    f->v = malloc(sizeof(float) * (size_t)N);
    f->lab = malloc(sizeof(int32_t) * (size_t)N);
    int32_t *stack = malloc(sizeof(int32_t) * (size_t)N);
    const int npk = irand(7);
    double px[8], py[8], pa[8], ps[8];
    for (int k = 0; k < npk; k++) {
        px[k] = urand() * (double)w, py[k] = urand() * (double)h;
        pa[k] = thresh * (1.5 + 60.0 * urand() * urand());
        ps[k] = 0.7 + 3.0 * urand();
    }
    const double noise = urand() < 0.3 ? 0.0 : thresh * 0.4 * urand();
    const double quant = urand() < 0.3 ? thresh * (0.05 + 0.5 * urand()) : 0.0;
    const double floor_ = urand() < 0.2 ? thresh * 1.2 : 0.0; /* a wide pedestal */
    for (int64_t p = 0; p < N; p++) {
        double x = (double)(p % w), y = (double)(p / w), s = floor_;
        for (int k = 0; k < npk; k++) {
            double dx = x - px[k], dy = y - py[k];
            s += pa[k] * exp(-0.5 * (dx * dx + dy * dy) / (ps[k] * ps[k]));
        }
        s += noise * (urand() - 0.5);
        if (quant > 0.0)
            s = floor(s / quant) * quant;
        f->v[p] = (float)s;
        f->lab[p] = -1;
    }
    /* components by flood fill, numbered by first pixel; then lists in raster order */
    f->ncomp = 0;
    for (int64_t p = 0; p < N; p++) {
        if (f->lab[p] >= 0 || !(f->v[p] >= (float)thresh))
            continue;
        int64_t ns = 0;
        stack[ns++] = (int32_t)p;
        f->lab[p] = (int32_t)f->ncomp;
        while (ns > 0) {
            int64_t q = stack[--ns], qx = q % w, qy = q / w;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int64_t nx = qx + dx, ny = qy + dy;
                    if (nx < 0 || ny < 0 || nx >= w || ny >= h)
                        continue;
                    int64_t r = ny * w + nx;
                    if (f->lab[r] >= 0 || !(f->v[r] >= (float)thresh))
                        continue;
                    f->lab[r] = (int32_t)f->ncomp;
                    stack[ns++] = (int32_t)r;
                }
        }
        f->ncomp++;
    }
    f->off = calloc((size_t)f->ncomp + 1, sizeof(int64_t));
    f->peak = malloc(sizeof(float) * (size_t)(f->ncomp + 1));
    for (int64_t p = 0; p < N; p++)
        if (f->lab[p] >= 0)
            f->off[f->lab[p] + 1]++;
    for (int64_t c = 0; c < f->ncomp; c++) {
        f->off[c + 1] += f->off[c];
        f->peak[c] = -INFINITY;
    }
    const int64_t tot = f->off[f->ncomp];
    f->idx = malloc(sizeof(int32_t) * (size_t)(tot + 1));
    f->val = malloc(sizeof(float) * (size_t)(tot + 1));
    int64_t *cur = malloc(sizeof(int64_t) * (size_t)(f->ncomp + 1));
    for (int64_t c = 0; c < f->ncomp; c++)
        cur[c] = f->off[c];
    for (int64_t p = 0; p < N; p++) {
        int32_t c = f->lab[p];
        if (c < 0)
            continue;
        f->idx[cur[c]] = (int32_t)p;
        f->val[cur[c]++] = f->v[p];
        if (f->v[p] > f->peak[c])
            f->peak[c] = f->v[p];
    }
    free(cur);
    free(stack);
}

static void free_frame(frame *f) {
    free(f->v), free(f->lab), free(f->off), free(f->idx), free(f->val), free(f->peak);
    memset(f, 0, sizeof *f);
}

typedef struct dparams {
    double thresh, mincont;
    int nthresh, limit;
    int64_t minarea;
} dparams;

static void random_params(dparams *d, double thresh) {
    static const int nth[] = {0, 1, 2, 3, 8, 32, 32, 32, 64};
    static const double mc[] = {0.0, 0.0001, 0.005, 0.005, 0.005, 0.05, 0.3, 1.0};
    static const int64_t ma[] = {1, 1, 2, 3, 5, 5, 8};
    static const int lim[] = {1, 2, 3, 1024, 1024, 1024};
    d->thresh = thresh;
    d->nthresh = nth[irand(9)];
    d->mincont = mc[irand(8)];
    d->minarea = ma[irand(7)];
    d->limit = lim[irand(6)];
}

static int64_t nsplit_seen, nlimit_seen, nparent_seen;

/* Every parent of one frame: the function against the reference. */
static void check_frame(const frame *f, const dparams *d) {
    for (int64_t c = 0; c < f->ncomp; c++) {
        const int64_t n = f->off[c + 1] - f->off[c];
        if (n < d->minarea)
            continue; /* the labelling drops them */
        const int32_t *idx = f->idx + f->off[c];
        const float *val = f->val + f->off[c];
        const int64_t sb = tide_det_deblend_scratch_bytes(n, d->minarea, d->limit) + 8;
        unsigned char *s1 = malloc((size_t)sb), *s2 = malloc((size_t)sb);
        int32_t *l1 = malloc(sizeof(int32_t) * (size_t)n);
        int32_t *l2 = malloc(sizeof(int32_t) * (size_t)n);
        memset(s1, 0xA5, (size_t)sb), memset(s2, 0x5A, (size_t)sb);
        int32_t f1 = 0, f2 = 0;
        const int32_t n1 =
            ref_deblend_one(n, idx, val, f->w, d->thresh, (double)f->peak[c], d->nthresh,
                            d->mincont, d->minarea, d->limit, s1, l1, &f1);
        const int32_t n2 =
            tide_det_deblend_one(n, idx, val, f->w, d->thresh, (double)f->peak[c], d->nthresh,
                                 d->mincont, d->minarea, d->limit, s2, l2, &f2);
        CHECK(n1 == n2);
        CHECK(f1 == f2);
        int same = 1;
        for (int64_t i = 0; i < n; i++)
            same &= l1[i] == l2[i];
        CHECK(same);
        if (n1 != n2 || f1 != f2 || !same)
            fprintf(stderr,
                    "  parent of %lld px in %lldx%lld: nchild %d / %d, flags %d / %d "
                    "(nthresh %d mincont %g minarea %lld limit %d)\n",
                    (long long)n, (long long)f->w, (long long)f->h, n1, n2, f1, f2, d->nthresh,
                    d->mincont, (long long)d->minarea, d->limit);
        nparent_seen++;
        nsplit_seen += n1 > 1;
        nlimit_seen += (f1 & TIDE_DETECT_FLAG_DEBLEND_LIMIT) != 0;
        free(s1), free(s2), free(l1), free(l2);
    }
}

static void test_random(void) {
    for (int trial = 0; trial < 3000; trial++) {
        int64_t w, h;
        switch (trial % 6) {
        case 0: w = 1, h = 1 + irand(60); break; /* a column */
        case 1: w = 1 + irand(60), h = 1; break; /* a row */
        case 2: w = 2 + irand(3), h = 2 + irand(40); break;
        default: w = 3 + irand(48), h = 3 + irand(48); break;
        }
        const double thresh = urand() < 0.5 ? 5.0 : 0.37 + urand();
        frame f;
        make_frame(&f, w, h, thresh);
        dparams d;
        random_params(&d, thresh);
        check_frame(&f, &d);
        d.nthresh = 32, d.mincont = 0.005, d.minarea = 3, d.limit = 1024; /* the defaults */
        check_frame(&f, &d);
        free_frame(&f);
    }
    printf("%lld parents, %lld split, %lld at the limit\n", (long long)nparent_seen,
           (long long)nsplit_seen, (long long)nlimit_seen);
    /* the cases must be exercised, not only the trivial ones */
    CHECK(nsplit_seen > 500);
    CHECK(nlimit_seen > 20);
}

/* Two equal peaks joined by a plateau, and a plateau at the top: the ties keep the levels. */
static void test_plateaus(void) {
    const int64_t w = 21, h = 7;
    frame f;
    memset(&f, 0, sizeof f);
    float v[21 * 7];
    for (int64_t p = 0; p < w * h; p++) {
        int64_t x = p % w, y = p / w;
        double a = 40.0 * exp(-0.5 * ((x - 4.0) * (x - 4.0) + (y - 3.0) * (y - 3.0)) / 2.0);
        double b = 40.0 * exp(-0.5 * ((x - 16.0) * (x - 16.0) + (y - 3.0) * (y - 3.0)) / 2.0);
        v[p] = (float)(6.0 + (a > b ? a : b));
        if (x >= 15 && x <= 17 && y >= 2 && y <= 4)
            v[p] = 46.0f; /* flat top */
    }
    int32_t idx[21 * 7];
    for (int64_t p = 0; p < w * h; p++)
        idx[p] = (int32_t)p;
    const int64_t n = w * h;
    const int64_t sb = tide_det_deblend_scratch_bytes(n, 3, 1024) + 8;
    unsigned char *s1 = malloc((size_t)sb), *s2 = malloc((size_t)sb);
    int32_t l1[21 * 7], l2[21 * 7], f1 = 0, f2 = 0;
    int32_t n1 = ref_deblend_one(n, idx, v, w, 5.0, 46.0, 32, 0.005, 3, 1024, s1, l1, &f1);
    int32_t n2 = tide_det_deblend_one(n, idx, v, w, 5.0, 46.0, 32, 0.005, 3, 1024, s2, l2, &f2);
    CHECK(n1 == 2 && n2 == 2);
    CHECK(f1 == f2 && (f2 & TIDE_DETECT_FLAG_DEBLENDED));
    CHECK(memcmp(l1, l2, sizeof l1) == 0);
    /* one flat-topped peak: a single branch whatever the ties */
    for (int64_t p = 0; p < n; p++) {
        int64_t x = p % w, y = p / w;
        v[p] = (float)(6.0 + 40.0 * exp(-0.02 * ((x - 10.0) * (x - 10.0) + (y - 3.0) * (y - 3.0))));
        if (v[p] > 40.0f)
            v[p] = 40.0f;
    }
    f1 = f2 = 0;
    n1 = ref_deblend_one(n, idx, v, w, 5.0, 40.0, 32, 0.005, 3, 1024, s1, l1, &f1);
    n2 = tide_det_deblend_one(n, idx, v, w, 5.0, 40.0, 32, 0.005, 3, 1024, s2, l2, &f2);
    CHECK(n1 == 1 && n2 == 1 && f1 == 0 && f2 == 0);
    CHECK(memcmp(l1, l2, sizeof l1) == 0);
    free(s1), free(s2);
}

/* The host batch at 1, 2 and 3 threads against one reference call per parent. */
static void test_batch(void) {
    for (int trial = 0; trial < 20; trial++) {
        frame f;
        make_frame(&f, 40 + irand(80), 40 + irand(80), 5.0);
        if (f.ncomp == 0) {
            free_frame(&f);
            continue;
        }
        const int64_t nb = f.ncomp, tot = f.off[nb];
        int64_t *area = malloc(sizeof(int64_t) * (size_t)nb);
        for (int64_t c = 0; c < nb; c++)
            area[c] = f.off[c + 1] - f.off[c];
        const size_t ptot = sizeof(int32_t) * (size_t)tot, pnb = sizeof(int32_t) * (size_t)nb;
        int32_t *lref = malloc(ptot), *lb = malloc(ptot);
        int32_t *nref = malloc(pnb), *nbt = malloc(pnb), *fb = malloc(pnb);
        int32_t *fref = calloc((size_t)nb, sizeof(int32_t));
        for (int64_t c = 0; c < nb; c++) {
            const int64_t sb = tide_det_deblend_scratch_bytes(area[c], 1, 1024) + 8;
            unsigned char *s = malloc((size_t)sb);
            nref[c] = ref_deblend_one(area[c], f.idx + f.off[c], f.val + f.off[c], f.w, 5.0,
                                      (double)f.peak[c], 32, 0.005, 1, 1024, s, lref + f.off[c],
                                      &fref[c]);
            free(s);
        }
        for (int nt = 1; nt <= 3; nt++) {
            tide_ctx_options o = {0};
            o.backend = TIDE_BACKEND_CPU;
            o.threads = nt;
            tide_ctx *ctx = NULL;
            CHECK_OK(tide_ctx_create(&ctx, &o));
            if (!ctx)
                break;
            memset(lb, 0x7F, sizeof(int32_t) * (size_t)tot);
            CHECK_OK(tide_det_deblend_host_batch(ctx, nb, area, f.off, f.idx, f.val, f.peak, f.w,
                                                 5.0, 32, 0.005, 1, 1024, lb, nbt, fb));
            CHECK(memcmp(lb, lref, sizeof(int32_t) * (size_t)tot) == 0);
            CHECK(memcmp(nbt, nref, sizeof(int32_t) * (size_t)nb) == 0);
            CHECK(memcmp(fb, fref, sizeof(int32_t) * (size_t)nb) == 0);
            tide_ctx_destroy(ctx);
        }
        free(area), free(lref), free(lb), free(nref), free(nbt), free(fref), free(fb);
        free_frame(&f);
    }
    /* no parents: nothing to do */
    CHECK_OK(tide_det_deblend_host_batch(NULL, 0, NULL, NULL, NULL, NULL, NULL, 1, 5.0, 32, 0.005,
                                         1, 1024, NULL, NULL, NULL));
}

/* The host's share (tide_det_deblend_host_area) against the sort it replaced. */
static int cmp_desc(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

static int64_t ref_host_area(const int64_t *area, int64_t np) {
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(np + 1));
    memcpy(v, area, sizeof(int64_t) * (size_t)np);
    qsort(v, (size_t)np, sizeof *v, cmp_desc);
    int64_t t = TIDE_DET_HOST_DEBLEND_AREA, sum = 0;
    for (int64_t k = 0; k < np && v[k] >= TIDE_DET_HOST_DEBLEND_AREA; k++) {
        sum += v[k];
        if (sum > TIDE_DET_HOST_DEBLEND_PIXELS) {
            t = v[k] + 1;
            break;
        }
    }
    free(v);
    return t < TIDE_DET_HOST_DEBLEND_ALWAYS ? t : TIDE_DET_HOST_DEBLEND_ALWAYS;
}

static void test_host_area(void) {
    int64_t *area = malloc(sizeof(int64_t) * 60000);
    int seen_lo = 0, seen_hi = 0, seen_mid = 0;
    for (int trial = 0; trial < 300; trial++) {
        const int64_t np = trial == 0 ? 0 : irand(trial < 150 ? 3000 : 60000);
        const double scale = 10.0 + 3000.0 * urand() * urand();
        for (int64_t k = 0; k < np; k++) {
            double u = urand();
            area[k] = 1 + (int64_t)(scale * u * u * u);
            if (urand() < 0.01)
                area[k] = TIDE_DET_HOST_DEBLEND_AREA - 1 + irand(3);
            if (urand() < 0.01)
                area[k] = TIDE_DET_HOST_DEBLEND_ALWAYS - 1 + irand(3);
        }
        const int64_t a = tide_det_deblend_host_area(area, np), r = ref_host_area(area, np);
        CHECK(a == r);
        if (a != r)
            fprintf(stderr, "  %lld parents: %lld, sorted %lld\n", (long long)np, (long long)a,
                    (long long)r);
        seen_lo += r == TIDE_DET_HOST_DEBLEND_AREA;
        seen_hi += r == TIDE_DET_HOST_DEBLEND_ALWAYS;
        seen_mid += r > TIDE_DET_HOST_DEBLEND_AREA && r < TIDE_DET_HOST_DEBLEND_ALWAYS;
    }
    CHECK(seen_lo > 10 && seen_hi > 10 && seen_mid > 10);
    free(area);
}

int main(void) {
    test_host_area();
    test_random();
    test_plateaus();
    test_batch();
    return TIDE_TEST_RESULT();
}
