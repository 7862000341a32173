/* skycell.c — HEALPix NESTED cells and a conservative disc cover (see skycell.h).
 *
 * ang2pix follows the face/ring construction of Górski et al. (2005, ApJ 622, 759, §4-5) as in
 * the reference HEALPix library: equatorial zone |z| <= 2/3 and polar caps, then the (x, y)
 * position inside the base face, bit-interleaved for the NESTED index. The cover descends the
 * NESTED tree from the 12 base faces: a cell whose nearest possible point lies beyond the
 * radius is dropped, a cell entirely inside is taken whole (one index range), the rest are
 * split down to the stored order. "Nearest possible point" uses the largest distance from the
 * cell's centre to 36 points of its boundary times 1.5: the boundary curves are smooth and
 * their distance to the centre varies by far less than half between neighbouring samples, so
 * the bound can only be generous (a generous bound costs a few extra candidate cells, never
 * a missed source: every candidate is then tested by exact distance). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "skycell.h"
#include "tide/status.h"

static const double PI = 3.14159265358979323846;
static const int JRLL[12] = {2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4};
static const int JPLL[12] = {1, 3, 5, 7, 0, 2, 4, 6, 1, 3, 5, 7};

/* The low 30 bits of v moved to the even bit positions (the "binary magic numbers" spread:
 * each step doubles the gap between groups of bits; Warren, Hacker's Delight, 2nd ed., 7-2). */
static uint64_t spread_bits(uint64_t v) {
    v &= 0x3fffffffULL;
    v = (v | (v << 16)) & 0x0000ffff0000ffffULL;
    v = (v | (v << 8)) & 0x00ff00ff00ff00ffULL;
    v = (v | (v << 4)) & 0x0f0f0f0f0f0f0f0fULL;
    v = (v | (v << 2)) & 0x3333333333333333ULL;
    v = (v | (v << 1)) & 0x5555555555555555ULL;
    return v;
}

/* Interleave the bits of x (even positions) and y (odd positions); x, y < 2^30. */
static int64_t xy2nest(int64_t x, int64_t y) {
    return (int64_t)(spread_bits((uint64_t)x) | (spread_bits((uint64_t)y) << 1));
}

static void nest2xy(int64_t p, int64_t *x, int64_t *y) {
    int64_t a = 0, b = 0;
    for (int i = 0; i < 30; i++) {
        a |= ((p >> (2 * i)) & 1) << i;
        b |= ((p >> (2 * i + 1)) & 1) << i;
    }
    *x = a;
    *y = b;
}

int64_t tide_skycell_index(int order, double ra_deg, double dec_deg) {
    if (!isfinite(ra_deg) || !isfinite(dec_deg) || order < 0 || order > 29)
        return -1;
    const int64_t nside = (int64_t)1 << order;
    double dec = dec_deg > 90 ? 90 : dec_deg < -90 ? -90 : dec_deg;
    double z = sin(dec * PI / 180), za = fabs(z);
    double phi = fmod(ra_deg, 360.0);
    if (phi < 0)
        phi += 360.0;
    double tt = phi / 90.0; /* in [0, 4) */
    if (tt >= 4.0)
        tt = 0.0;
    int64_t face, ix, iy;
    if (za <= 2.0 / 3.0) { /* equatorial region */
        double t1 = (double)nside * (0.5 + tt), t2 = (double)nside * z * 0.75;
        int64_t jp = (int64_t)(t1 - t2), jm = (int64_t)(t1 + t2);
        int64_t ifp = jp / nside, ifm = jm / nside;
        face = ifp == ifm ? (ifp | 4) : ifp < ifm ? ifp : ifm + 8;
        ix = jm & (nside - 1);
        iy = nside - (jp & (nside - 1)) - 1;
    } else { /* polar caps */
        int64_t ntt = (int64_t)tt;
        if (ntt > 3)
            ntt = 3;
        double tp = tt - (double)ntt;
        /* 1 - |z| computed from cos(dec) near the poles, where 1 - sin loses digits */
        double c = cos(dec * PI / 180);
        double one_minus_za = c * c / (1.0 + za);
        double tmp = (double)nside * sqrt(3.0 * one_minus_za);
        int64_t jp = (int64_t)(tp * tmp), jm = (int64_t)((1.0 - tp) * tmp);
        if (jp > nside - 1)
            jp = nside - 1;
        if (jm > nside - 1)
            jm = nside - 1;
        if (z >= 0) {
            face = ntt;
            ix = nside - jm - 1;
            iy = nside - jp - 1;
        } else {
            face = ntt + 8;
            ix = jp;
            iy = jm;
        }
    }
    return face * nside * nside + xy2nest(ix, iy);
}

/* Unit vector of the point (x, y) in [0, 1]^2 of base face @p face. */
static void face_to_vec(int face, double x, double y, double v[3]) {
    double jr = JRLL[face] - x - y, nr, z;
    if (jr < 1) {
        nr = jr;
        z = 1 - nr * nr / 3.0;
    } else if (jr > 3) {
        nr = 4 - jr;
        z = nr * nr / 3.0 - 1;
    } else {
        nr = 1;
        z = (2 - jr) * 2.0 / 3.0;
    }
    double t = JPLL[face] * nr + x - y;
    if (t < 0)
        t += 8;
    if (t >= 8)
        t -= 8;
    double phi = nr < 1e-15 ? 0 : 0.25 * PI * t / nr;
    /* sin(theta) from nr in the caps keeps precision near the poles: 1 - z^2 = nr^2/3 (2 - nr^2/3)
     */
    double s2 = (jr < 1 || jr > 3) ? nr * nr / 3.0 * (2.0 - nr * nr / 3.0) : 1 - z * z;
    double st = sqrt(s2 > 0 ? s2 : 0);
    v[0] = st * cos(phi);
    v[1] = st * sin(phi);
    v[2] = z;
}

static void radec_to_vec(double ra, double dec, double v[3]) {
    double a = ra * PI / 180, d = dec * PI / 180;
    v[0] = cos(d) * cos(a);
    v[1] = cos(d) * sin(a);
    v[2] = sin(d);
}

/* Angle between unit vectors, radians (atan2 form: accurate for tiny and near-pi angles). */
static double vec_angle(const double a[3], const double b[3]) {
    double cx = a[1] * b[2] - a[2] * b[1], cy = a[2] * b[0] - a[0] * b[2];
    double cz = a[0] * b[1] - a[1] * b[0];
    return atan2(sqrt(cx * cx + cy * cy + cz * cz), a[0] * b[0] + a[1] * b[1] + a[2] * b[2]);
}

void tide_skycell_center(int order, int64_t pix, double *ra_deg, double *dec_deg) {
    const int64_t nside = (int64_t)1 << order;
    int face = (int)(pix / (nside * nside));
    int64_t x, y;
    nest2xy(pix % (nside * nside), &x, &y);
    double v[3];
    face_to_vec(face, (x + 0.5) / nside, (y + 0.5) / nside, v);
    double ra = atan2(v[1], v[0]) * 180 / PI;
    *ra_deg = ra < 0 ? ra + 360 : ra;
    *dec_deg = atan2(v[2], sqrt(v[0] * v[0] + v[1] * v[1])) * 180 / PI;
}

typedef struct cover {
    int order;
    double c[3], r; /* disc centre, radius (rad) */
    int64_t *rg, n, cap;
    int st;
} cover;

static void add_range(cover *cv, int64_t lo, int64_t hi) {
    if (cv->st)
        return;
    if (cv->n && cv->rg[2 * cv->n - 1] + 1 == lo) { /* children come in order: merge */
        cv->rg[2 * cv->n - 1] = hi;
        return;
    }
    if (cv->n == cv->cap) {
        int64_t nc = cv->cap ? 2 * cv->cap : 64;
        int64_t *p = realloc(cv->rg, (size_t)nc * 2 * sizeof *p);
        if (!p) {
            cv->st = tide_error(TIDE_E_NOMEM, "store: sky cover of %lld ranges", (long long)nc);
            return;
        }
        cv->rg = p;
        cv->cap = nc;
    }
    cv->rg[2 * cv->n] = lo;
    cv->rg[2 * cv->n + 1] = hi;
    cv->n++;
}

/* Visit NESTED cell @p pix at level @p lev (depth-first, children in index order). */
static void visit(cover *cv, int lev, int64_t pix) {
    const int64_t nside = (int64_t)1 << lev;
    int face = (int)(pix / (nside * nside));
    int64_t ix, iy;
    nest2xy(pix % (nside * nside), &ix, &iy);
    double ctr[3], b[3];
    face_to_vec(face, (ix + 0.5) / nside, (iy + 0.5) / nside, ctr);
    double rad = 0;
    for (int k = 0; k <= 8; k++) {
        double t = (double)k / 8;
        const double pts[4][2] = {
            {ix + t, iy}, {ix + t, iy + 1.0}, {ix, iy + t}, {ix + 1.0, iy + t}};
        for (int e = 0; e < 4; e++) {
            face_to_vec(face, pts[e][0] / nside, pts[e][1] / nside, b);
            double a = vec_angle(ctr, b);
            if (a > rad)
                rad = a;
        }
    }
    double bound = 1.5 * rad + 1e-12;
    double d = vec_angle(ctr, cv->c);
    if (d - bound > cv->r)
        return; /* wholly outside */
    int shift = 2 * (cv->order - lev);
    if (lev == cv->order || d + bound <= cv->r) {
        add_range(cv, pix << shift, ((pix + 1) << shift) - 1);
        return;
    }
    for (int k = 0; k < 4; k++)
        visit(cv, lev + 1, 4 * pix + k);
}

int tide_skycell_cover(int order, double ra_deg, double dec_deg, double radius_deg,
                       int64_t **ranges, int64_t *nranges) {
    *ranges = NULL;
    *nranges = 0;
    if (order < 0 || order > 29 || !isfinite(ra_deg) || !isfinite(dec_deg) || !(radius_deg >= 0))
        return tide_error(TIDE_E_INVAL, "store: bad cone (%g, %g, radius %g) or order %d", ra_deg,
                          dec_deg, radius_deg, order);
    cover cv;
    memset(&cv, 0, sizeof cv);
    cv.order = order;
    radec_to_vec(ra_deg, dec_deg, cv.c);
    cv.r = radius_deg * PI / 180;
    if (radius_deg >= 180) {
        add_range(&cv, 0, 12 * ((int64_t)1 << (2 * order)) - 1);
    } else {
        for (int f = 0; f < 12 && !cv.st; f++)
            visit(&cv, 0, f);
    }
    if (cv.st) {
        free(cv.rg);
        return cv.st;
    }
    *ranges = cv.rg;
    *nranges = cv.n;
    return TIDE_OK;
}
