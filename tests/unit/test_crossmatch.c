/* test_crossmatch.c — the CPU crossmatch (k-d tree) against brute force O(n1 n2): the same
 * pairs exactly, on random fields, at the poles, across RA 0/360, with duplicates (ties),
 * NaN and out-of-range positions, empty lists, the mutual mode and radius edges; 1 and 2
 * threads give the same bits. A host emulation of the GPU's spatial hash (its cube and
 * bucket functions) gives the brute-force pairs too, with heavy collisions. Separations are checked
 * against an independent haversine (libm) to 1e-6 arcsec, and the shared sine/cosine against libm.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "astrometry/crossmatch_math.h"
#include "tide/crossmatch.h"
#include "tide/tide.h"
#include "tide_test.h"

static double rnd(unsigned long long *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* Brute force with the same pair math (crossmatch_math.h): match and squared chord. */
static void brute(const double *ra1, const double *de1, int64_t n1, const double *ra2,
                  const double *de2, int64_t n2, double radius, int mutual, int64_t *match,
                  double *sep) {
    const double s = sin(0.5 * radius / TIDE_XM_RAD2AS), r2 = 4.0 * s * s;
    double *v2 = malloc(sizeof(double) * 3 * (size_t)(n2 + 1));
    double *v1 = malloc(sizeof(double) * 3 * (size_t)(n1 + 1));
    for (int64_t j = 0; j < n2; j++)
        if (tide_xm_valid(ra2[j], de2[j]))
            tide_xm_unit(ra2[j], de2[j], v2 + 3 * j);
    for (int64_t i = 0; i < n1; i++)
        if (tide_xm_valid(ra1[i], de1[i]))
            tide_xm_unit(ra1[i], de1[i], v1 + 3 * i);
    for (int64_t i = 0; i < n1; i++) {
        int64_t best = -1;
        double bd = r2;
        if (tide_xm_valid(ra1[i], de1[i]))
            for (int64_t j = 0; j < n2; j++) {
                if (!tide_xm_valid(ra2[j], de2[j]))
                    continue;
                const double c2 = tide_xm_chord2(v1 + 3 * i, v2 + 3 * j);
                if (tide_xm_better(c2, j, bd, best)) {
                    bd = c2;
                    best = j;
                }
            }
        if (best >= 0 && mutual) {
            int64_t bi = -1;
            double bdi = r2;
            for (int64_t k = 0; k < n1; k++) {
                if (!tide_xm_valid(ra1[k], de1[k]))
                    continue;
                const double c2 = tide_xm_chord2(v2 + 3 * best, v1 + 3 * k);
                if (tide_xm_better(c2, k, bdi, bi)) {
                    bdi = c2;
                    bi = k;
                }
            }
            if (bi != i)
                best = -1;
        }
        match[i] = best;
        sep[i] = best >= 0 ? tide_xm_sep_arcsec(bd) : NAN;
    }
    free(v1);
    free(v2);
}

/* Run the k-d tree on a CPU context of @p threads and compare with brute force; also check
 * the separations against libm's haversine and that nothing closer was missed. */
static void compare(const char *what, int threads, const double *ra1, const double *de1, int64_t n1,
                    const double *ra2, const double *de2, int64_t n2, double radius, int mutual) {
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, threads);
    int64_t *m = malloc(sizeof(int64_t) * (size_t)(n1 + 1));
    int64_t *mb = malloc(sizeof(int64_t) * (size_t)(n1 + 1));
    double *s = malloc(sizeof(double) * (size_t)(n1 + 1));
    double *sb = malloc(sizeof(double) * (size_t)(n1 + 1));
    tide_xmatch_params p = tide_xmatch_defaults();
    p.radius_arcsec = radius;
    p.mutual = mutual;
    int64_t nm = -7;
    CHECK_OK(tide_crossmatch(ctx, ra1, de1, n1, ra2, de2, n2, &p, m, s, &nm));
    brute(ra1, de1, n1, ra2, de2, n2, radius, mutual, mb, sb);
    int64_t bad = 0, cnt = 0, badsep = 0;
    double worst = 0.0;
    for (int64_t i = 0; i < n1; i++) {
        cnt += m[i] >= 0;
        if (m[i] != mb[i] || memcmp(&s[i], &sb[i], sizeof(double)) != 0) {
            if (bad++ < 5)
                fprintf(stderr, "%s: i=%lld tree %lld (%.17g) brute %lld (%.17g)\n", what,
                        (long long)i, (long long)m[i], s[i], (long long)mb[i], sb[i]);
        }
        if (m[i] >= 0) {
            const double h = tide_sky_separation_arcsec(ra1[i], de1[i], ra2[m[i]], de2[m[i]]);
            const double e = fabs(h - s[i]);
            worst = e > worst ? e : worst;
            badsep += !(e <= 1e-6) || !(s[i] <= radius * (1 + 1e-12));
        }
    }
    if (bad || badsep || nm != cnt)
        fprintf(stderr,
                "%s (%d threads): %lld pair differences, %lld bad separations (worst "
                "%.3g arcsec), nmatched %lld of %lld\n",
                what, threads, (long long)bad, (long long)badsep, worst, (long long)nm,
                (long long)cnt);
    CHECK(bad == 0);
    CHECK(badsep == 0);
    CHECK(nm == cnt);
    printf("%-28s n1 %6lld n2 %6lld r %7.2f\" mutual %d threads %d: %6lld matched, "
           "sep vs haversine <= %.2g\"\n",
           what, (long long)n1, (long long)n2, radius, mutual, threads, (long long)cnt, worst);
    free(m);
    free(mb);
    free(s);
    free(sb);
    tide_ctx_destroy(ctx);
}

/* A field: n1 random positions in a cap of @p cap_deg around (ra0, dec0); list 2 holds each
 * of the first n1 * frac positions moved by ~@p jitter arcsec (shuffled), then @p extra
 * random ones. */
typedef struct field {
    double *ra1, *de1, *ra2, *de2;
    int64_t n1, n2;
} field;

static void cap_point(unsigned long long *sd, double ra0, double dec0, double cap, double *ra,
                      double *dec) {
    /* uniform on the sphere inside the cap, rotated to (ra0, dec0) */
    const double cmin = cos(cap * TIDE_XM_D2R);
    const double z = cmin + (1 - cmin) * rnd(sd), phi = 6.283185307179586 * rnd(sd);
    const double rr = sqrt(fmax(0.0, 1 - z * z));
    double v[3] = {rr * cos(phi), rr * sin(phi), z};
    const double th = (90.0 - dec0) * TIDE_XM_D2R, ph = ra0 * TIDE_XM_D2R;
    double x = v[0] * cos(th) + v[2] * sin(th), y = v[1], zz = -v[0] * sin(th) + v[2] * cos(th);
    double X = x * cos(ph) - y * sin(ph), Y = x * sin(ph) + y * cos(ph);
    double a = atan2(Y, X) / TIDE_XM_D2R;
    if (a < 0)
        a += 360.0;
    *ra = a;
    *dec = asin(fmax(-1.0, fmin(1.0, zz))) / TIDE_XM_D2R;
}

static field make_field(unsigned long long seed, int64_t n1, double frac, int64_t extra, double ra0,
                        double dec0, double cap, double jitter) {
    field f;
    unsigned long long sd = seed;
    int64_t nm = (int64_t)(frac * (double)n1);
    f.n1 = n1;
    f.n2 = nm + extra;
    f.ra1 = malloc(sizeof(double) * (size_t)(n1 + 1));
    f.de1 = malloc(sizeof(double) * (size_t)(n1 + 1));
    f.ra2 = malloc(sizeof(double) * (size_t)(f.n2 + 1));
    f.de2 = malloc(sizeof(double) * (size_t)(f.n2 + 1));
    for (int64_t i = 0; i < n1; i++)
        cap_point(&sd, ra0, dec0, cap, &f.ra1[i], &f.de1[i]);
    for (int64_t j = 0; j < nm; j++) {
        const double dd = jitter * (rnd(&sd) - 0.5) * 2 / 3600.0;
        const double da = jitter * (rnd(&sd) - 0.5) * 2 / 3600.0;
        f.de2[j] = fmax(-90.0, fmin(90.0, f.de1[j] + dd));
        f.ra2[j] = f.ra1[j] + da / fmax(1e-3, cos(f.de1[j] * TIDE_XM_D2R));
    }
    for (int64_t j = nm - 1; j > 0; j--) { /* shuffle so list order says nothing */
        int64_t k = (int64_t)(rnd(&sd) * (double)(j + 1));
        double t = f.ra2[j];
        f.ra2[j] = f.ra2[k];
        f.ra2[k] = t;
        t = f.de2[j];
        f.de2[j] = f.de2[k];
        f.de2[k] = t;
    }
    for (int64_t j = nm; j < f.n2; j++)
        cap_point(&sd, ra0, dec0, cap, &f.ra2[j], &f.de2[j]);
    return f;
}

static void free_field(field *f) {
    free(f->ra1);
    free(f->de1);
    free(f->ra2);
    free(f->de2);
}

/* Host emulation of the CUDA spatial hash (crossmatch_cuda.cu) with its cube and bucket
 * functions (crossmatch_math.h): the cube ranges must never miss a pair. With @p buckets 0
 * the GPU's table size (a power of two >= 2 n2, at least 1024), else that many (collisions). */
typedef struct hash_pt {
    uint32_t key;
    int64_t j;
    double v[3];
} hash_pt;

static int cmp_hash_pt(const void *a, const void *b) {
    const hash_pt *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->j > y->j) - (x->j < y->j);
}

static void hash_match(const double *ra1, const double *de1, int64_t n1, const double *ra2,
                       const double *de2, int64_t n2, double radius, uint32_t buckets,
                       int64_t *match, double *sep) {
    const double s = sin(0.5 * radius / TIDE_XM_RAD2AS), r2 = 4.0 * s * s;
    const double m = tide_xm_hash_margin(sqrt(r2)), inv_h = tide_xm_hash_inv_side(r2);
    uint32_t T = 1024;
    while ((int64_t)T < 2 * n2)
        T *= 2;
    if (buckets)
        T = buckets;
    hash_pt *p = malloc(sizeof(hash_pt) * (size_t)(n2 + 1));
    int64_t n = 0;
    for (int64_t j = 0; j < n2; j++) {
        if (!tide_xm_valid(ra2[j], de2[j]))
            continue;
        tide_xm_unit(ra2[j], de2[j], p[n].v);
        p[n].j = j;
        p[n].key = tide_xm_bucket(tide_xm_cube(p[n].v[0], inv_h), tide_xm_cube(p[n].v[1], inv_h),
                                  tide_xm_cube(p[n].v[2], inv_h), T - 1);
        n++;
    }
    qsort(p, (size_t)n, sizeof *p, cmp_hash_pt);
    int64_t *start = calloc(T, sizeof(int64_t)), *end = calloc(T, sizeof(int64_t));
    for (int64_t k = 0; k < n; k++) {
        if (k == 0 || p[k - 1].key != p[k].key)
            start[p[k].key] = k;
        end[p[k].key] = k + 1;
    }
    for (int64_t i = 0; i < n1; i++) {
        int64_t best = -1;
        double bd = r2;
        if (tide_xm_valid(ra1[i], de1[i])) {
            double q[3];
            int64_t lo[3], hi[3];
            tide_xm_unit(ra1[i], de1[i], q);
            for (int a = 0; a < 3; a++) {
                tide_xm_cube_range(q[a], m, inv_h, &lo[a], &hi[a]);
                CHECK(hi[a] - lo[a] <= 1); /* at most 2 cubes per axis */
            }
            for (int64_t cx = lo[0]; cx <= hi[0]; cx++)
                for (int64_t cy = lo[1]; cy <= hi[1]; cy++)
                    for (int64_t cz = lo[2]; cz <= hi[2]; cz++) {
                        const uint32_t b = tide_xm_bucket(cx, cy, cz, T - 1);
                        for (int64_t k = start[b]; k < end[b]; k++) {
                            const double c2 = tide_xm_chord2(q, p[k].v);
                            if (tide_xm_better(c2, p[k].j, bd, best)) {
                                bd = c2;
                                best = p[k].j;
                            }
                        }
                    }
        }
        match[i] = best;
        sep[i] = best >= 0 ? tide_xm_sep_arcsec(bd) : NAN;
    }
    free(start);
    free(end);
    free(p);
}

static void compare_hash(const char *what, const double *ra1, const double *de1, int64_t n1,
                         const double *ra2, const double *de2, int64_t n2, double radius) {
    const size_t nb = (size_t)(n1 + 1);
    int64_t *mb = malloc(nb * sizeof(int64_t)), *mh = malloc(nb * sizeof(int64_t));
    double *sb = malloc(nb * sizeof(double)), *sh = malloc(nb * sizeof(double));
    brute(ra1, de1, n1, ra2, de2, n2, radius, 0, mb, sb);
    const uint32_t tables[2] = {0, 16};
    for (int t = 0; t < 2; t++) {
        hash_match(ra1, de1, n1, ra2, de2, n2, radius, tables[t], mh, sh);
        int64_t bad = 0;
        for (int64_t i = 0; i < n1; i++)
            bad += mh[i] != mb[i] || memcmp(&sh[i], &sb[i], sizeof(double)) != 0;
        if (bad)
            fprintf(stderr, "%s: GPU hash emulation (%u buckets): %lld differences\n", what,
                    tables[t], (long long)bad);
        CHECK(bad == 0);
    }
    free(mb);
    free(mh);
    free(sb);
    free(sh);
}

static void run_field(const char *what, field f, double radius) {
    for (int mutual = 0; mutual < 2; mutual++)
        for (int t = 1; t <= 2; t++)
            compare(what, t, f.ra1, f.de1, f.n1, f.ra2, f.de2, f.n2, radius, mutual);
    compare_hash(what, f.ra1, f.de1, f.n1, f.ra2, f.de2, f.n2, radius);
}

static void test_trig(void) {
    unsigned long long sd = 11;
    double worst = 0.0;
    for (int k = 0; k < 200000; k++) {
        const double a = (rnd(&sd) - 0.5) * (k < 100000 ? 800.0 : 1e6);
        double s, c;
        tide_xm_sincosd(a, &s, &c);
        /* reference in long double: the reduction to radians rounds less than in double */
        const long double r = fmodl((long double)a, 360.0L) * 0.0174532925199432957692369L;
        const double e = fmax(fabs(s - (double)sinl(r)), fabs(c - (double)cosl(r)));
        worst = e > worst ? e : worst;
    }
    double s, c;
    tide_xm_sincosd(90.0, &s, &c);
    CHECK(s == 1.0 && c == 0.0);
    tide_xm_sincosd(-180.0, &s, &c);
    CHECK(s == 0.0 && c == -1.0);
    tide_xm_sincosd(30.0, &s, &c);
    CHECK_CLOSE(s, 0.5, 2e-16);
    printf("sincosd vs libm: worst %.3g\n", worst);
    CHECK(worst < 3e-16);
}

static void test_separation(void) {
    CHECK_CLOSE(tide_sky_separation_arcsec(0, 0, 90, 0), 324000.0, 1e-9);
    CHECK_CLOSE(tide_sky_separation_arcsec(10, 0, 190, 0), 648000.0, 1e-9);
    CHECK_CLOSE(tide_sky_separation_arcsec(0, 90, 123, -90), 648000.0, 1e-9);
    CHECK_CLOSE(tide_sky_separation_arcsec(0, 89.999, 180, 89.999), 7.2, 1e-9);
    CHECK_CLOSE(tide_sky_separation_arcsec(359.9999, 0, 0.0001, 0), 0.72, 1e-9);
    const double d2 = 20 + 1e-9; /* d2 - 20 is exact (Sterbenz) */
    CHECK_CLOSE(tide_sky_separation_arcsec(10, 20, 10, d2), (d2 - 20) * 3600, 1e-15);
    /* the chord form of the kernels, against the haversine */
    unsigned long long sd = 5;
    double worst = 0.0;
    for (int k = 0; k < 20000; k++) {
        const double ra = 360 * rnd(&sd), de = 180 * rnd(&sd) - 90;
        const double dd = (rnd(&sd) - 0.5) * 2 * (k % 2 ? 1e-3 : 0.5);
        const double ra2 = ra + (rnd(&sd) - 0.5) * 0.01, de2 = fmax(-90.0, fmin(90.0, de + dd));
        double a[3], b[3];
        tide_xm_unit(ra, de, a);
        tide_xm_unit(ra2, de2, b);
        const double h = tide_sky_separation_arcsec(ra, de, ra2, de2);
        if (h > 3600)
            continue;
        const double e = fabs(tide_xm_sep_arcsec(tide_xm_chord2(a, b)) - h);
        worst = e > worst ? e : worst;
    }
    printf("chord separation vs haversine (< 1 deg): worst %.3g arcsec\n", worst);
    CHECK(worst < 1e-6);
}

static void test_errors_and_empty(void) {
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *ctx = NULL;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    double ra[3] = {1, 2, 3}, de[3] = {0, 0, 0}, s[3];
    int64_t m[3] = {5, 5, 5}, nm = 9;
    tide_xmatch_params p = tide_xmatch_defaults();
    CHECK(p.radius_arcsec == 2.0 && p.mutual == 0);
    /* empty list 2: every match -1, separation NaN */
    CHECK_OK(tide_crossmatch(ctx, ra, de, 3, NULL, NULL, 0, &p, m, s, &nm));
    CHECK(m[0] == -1 && m[1] == -1 && m[2] == -1 && isnan(s[0]) && isnan(s[2]) && nm == 0);
    nm = 9;
    CHECK_OK(tide_crossmatch(ctx, NULL, NULL, 0, ra, de, 3, &p, NULL, NULL, &nm));
    CHECK(nm == 0);
    CHECK_OK(tide_crossmatch_host(ctx, NULL, NULL, 0, NULL, NULL, 0, NULL, NULL, NULL, NULL));
    /* bad arguments */
    CHECK(tide_crossmatch(ctx, ra, de, -1, ra, de, 3, &p, m, s, NULL) == TIDE_E_INVAL);
    CHECK(tide_crossmatch(ctx, ra, de, 3, ra, de, -1, &p, m, s, NULL) == TIDE_E_INVAL);
    CHECK(tide_crossmatch(ctx, NULL, de, 3, ra, de, 3, &p, m, s, NULL) == TIDE_E_INVAL);
    CHECK(tide_crossmatch(ctx, ra, de, 3, ra, NULL, 3, &p, m, s, NULL) == TIDE_E_INVAL);
    CHECK(tide_crossmatch(ctx, ra, de, 3, ra, de, 3, &p, NULL, s, NULL) == TIDE_E_INVAL);
    CHECK(tide_crossmatch(NULL, ra, de, 3, ra, de, 3, &p, m, s, NULL) == TIDE_E_INVAL);
    const double bad_r[] = {0.0, -1.0, NAN, INFINITY, 3600.0001};
    for (int k = 0; k < 5; k++) {
        p.radius_arcsec = bad_r[k];
        CHECK(tide_crossmatch(ctx, ra, de, 3, ra, de, 3, &p, m, s, NULL) == TIDE_E_INVAL);
        CHECK(tide_crossmatch_host(ctx, ra, de, 3, ra, de, 3, &p, m, s, NULL) == TIDE_E_INVAL);
    }
    /* NULL params = defaults; matching a list with itself */
    CHECK_OK(tide_crossmatch(ctx, ra, de, 3, ra, de, 3, NULL, m, NULL, &nm));
    CHECK(m[0] == 0 && m[1] == 1 && m[2] == 2 && nm == 3);
    tide_ctx_destroy(ctx);
}

/* Radius edges: a pair 1e-6 (relative) inside the radius matches, 1e-6 outside does not,
 * along a meridian, over the north pole and across RA 0/360 on the equator (all great
 * circles, so the separation is known exactly); radii from 1e-3 arcsec to the 3600 limit. */
static void test_radius_edges(void) {
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *ctx = NULL;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    const double radii[] = {1e-3, 1.0, 2.0, 60.0, 3600.0}, eps = 1e-6;
    for (int k = 0; k < 5; k++) {
        const double r = radii[k], in = r * (1 - eps) / 3600, out = r * (1 + eps) / 3600;
        double ra1[4] = {10, 200, 300, 360 - out / 2}, de1[4] = {20, -30, 89.99, 0};
        double ra2[4] = {10, 200, 120, out / 2}, de2[4], s[4];
        int64_t m[4];
        de2[0] = 20 + in;
        de2[1] = -30 - out;
        de2[2] = 90.0 - (in - 0.01); /* over the pole; above 90 (invalid) when in < 0.01 deg */
        de2[3] = 0;
        tide_xmatch_params p = {r, 0};
        CHECK_OK(tide_crossmatch(ctx, ra1, de1, 4, ra2, de2, 4, &p, m, s, NULL));
        CHECK(m[0] == 0);
        CHECK(m[1] == -1);
        CHECK(m[2] == (in > 0.01 ? 2 : -1));
        CHECK(m[3] == -1);
        CHECK_CLOSE(s[0], r * (1 - eps), 1e-9 + 1e-12 * r);
        compare("radius edge", 1, ra1, de1, 4, ra2, de2, 4, r, 0);
        compare_hash("radius edge", ra1, de1, 4, ra2, de2, 4, r);
    }
    tide_ctx_destroy(ctx);
}

/* Duplicates and ties: identical positions go to the lower index; in mutual mode two
 * identical list-1 positions compete for one list-2 position and the lower i wins. */
static void test_ties(void) {
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *ctx = NULL;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    double ra2[5] = {50, 50.0001, 50, 50, 12}, de2[5] = {10, 10, 10, 10, -5};
    double ra1[4] = {50, 50, 12, 410}, de1[4] = {10, 10, -5, 10}, s[4];
    int64_t m[4];
    tide_xmatch_params p = {1.0, 0};
    CHECK_OK(tide_crossmatch(ctx, ra1, de1, 4, ra2, de2, 5, &p, m, s, NULL));
    CHECK(m[0] == 0 && m[1] == 0 && m[2] == 4 && m[3] == 0); /* ra 410 == ra 50 */
    CHECK(s[0] == 0.0 && s[3] < 1e-9);
    p.mutual = 1;
    CHECK_OK(tide_crossmatch(ctx, ra1, de1, 4, ra2, de2, 5, &p, m, s, NULL));
    CHECK(m[0] == 0 && m[1] == -1 && m[2] == 4 && m[3] == -1);
    compare("ties", 1, ra1, de1, 4, ra2, de2, 5, 1.0, 0);
    compare("ties mutual", 2, ra1, de1, 4, ra2, de2, 5, 1.0, 1);
    compare_hash("ties", ra1, de1, 4, ra2, de2, 5, 1.0);
    tide_ctx_destroy(ctx);
    /* many exact duplicates in a random field */
    field f = make_field(77, 2000, 0.9, 200, 120.0, -40.0, 0.05, 0.5);
    for (int64_t j = 0; j + 1 < f.n2; j += 3) {
        f.ra2[j + 1] = f.ra2[j];
        f.de2[j + 1] = f.de2[j];
    }
    for (int64_t i = 0; i + 1 < f.n1; i += 5) {
        f.ra1[i + 1] = f.ra1[i];
        f.de1[i + 1] = f.de1[i];
    }
    run_field("duplicates", f, 2.0);
    free_field(&f);
}

static void test_nan(void) {
    field f = make_field(31, 3000, 0.8, 500, 10.0, 5.0, 0.2, 0.3);
    const double bad[] = {NAN, INFINITY, -INFINITY, 91.0, -90.5};
    for (int64_t i = 0; i < f.n1; i += 7) {
        if (i % 2)
            f.ra1[i] = bad[(i / 7) % 3];
        else
            f.de1[i] = bad[(i / 7) % 5];
    }
    for (int64_t j = 0; j < f.n2; j += 5) {
        if (j % 2)
            f.de2[j] = bad[(j / 5) % 5];
        else
            f.ra2[j] = bad[(j / 5) % 3];
    }
    run_field("NaN and out of range", f, 1.5);
    free_field(&f);
}

/* A list large enough for the parallel paths (query order sort, build tasks): 1 and 2
 * threads, against the hash emulation (itself checked against brute force above), mutual
 * against its definition from a forward and a reverse match, and every 97th position
 * against brute force. */
static void test_large(void) {
    field f = make_field(9, 60000, 0.8, 15000, 210.0, -20.0, 1.0, 0.3);
    const int64_t n1 = f.n1, n2 = f.n2;
    const double radius = 1.0;
    int64_t *m[2][2], *mh = malloc(sizeof(int64_t) * (size_t)n1);
    int64_t *rev = malloc(sizeof(int64_t) * (size_t)n2);
    double *sp[2][2], *sh = malloc(sizeof(double) * (size_t)n1);
    double *srev = malloc(sizeof(double) * (size_t)n2);
    for (int t = 0; t < 2; t++) {
        tide_ctx_options o;
        memset(&o, 0, sizeof o);
        o.backend = TIDE_BACKEND_CPU;
        o.threads = t + 1;
        tide_ctx *ctx = NULL;
        CHECK_OK(tide_ctx_create(&ctx, &o));
        for (int mu = 0; mu < 2; mu++) {
            m[t][mu] = malloc(sizeof(int64_t) * (size_t)n1);
            sp[t][mu] = malloc(sizeof(double) * (size_t)n1);
            tide_xmatch_params p = {radius, mu};
            const double t0 = tide_now();
            CHECK_OK(tide_crossmatch(ctx, f.ra1, f.de1, n1, f.ra2, f.de2, n2, &p, m[t][mu],
                                     sp[t][mu], NULL));
            printf("large field %lld x %lld, %d thread(s), mutual %d: %.1f ms\n", (long long)n1,
                   (long long)n2, t + 1, mu, (tide_now() - t0) * 1e3);
        }
        tide_ctx_destroy(ctx);
    }
    hash_match(f.ra1, f.de1, n1, f.ra2, f.de2, n2, radius, 0, mh, sh);
    hash_match(f.ra2, f.de2, n2, f.ra1, f.de1, n1, radius, 0, rev, srev);
    int64_t bad = 0, badmu = 0, badb = 0, nmu = 0;
    for (int64_t i = 0; i < n1; i++) {
        for (int t = 0; t < 2; t++)
            bad += m[t][0][i] != mh[i] || memcmp(&sp[t][0][i], &sh[i], sizeof(double)) != 0;
        const int64_t j = mh[i], want = j >= 0 && rev[j] == i ? j : -1;
        for (int t = 0; t < 2; t++)
            badmu += m[t][1][i] != want ||
                     (want >= 0 && memcmp(&sp[t][1][i], &sh[i], sizeof(double)) != 0);
        nmu += want >= 0;
    }
    for (int64_t i = 0; i < n1; i += 97) {
        int64_t mb;
        double sb;
        brute(f.ra1 + i, f.de1 + i, 1, f.ra2, f.de2, n2, radius, 0, &mb, &sb);
        badb += mb != mh[i];
    }
    printf("large field: %lld forward and %lld mutual differences, %lld of the sampled "
           "brute-force; %lld mutual pairs\n",
           (long long)bad, (long long)badmu, (long long)badb, (long long)nmu);
    CHECK(bad == 0);
    CHECK(badmu == 0);
    CHECK(badb == 0);
    CHECK(nmu > n1 / 2);
    for (int t = 0; t < 2; t++)
        for (int mu = 0; mu < 2; mu++) {
            free(m[t][mu]);
            free(sp[t][mu]);
        }
    free(mh);
    free(sh);
    free(rev);
    free(srev);
    free_field(&f);
}

int main(void) {
    test_trig();
    test_separation();
    test_errors_and_empty();
    test_radius_edges();
    test_ties();
    test_nan();
    test_large();
    field f = make_field(1, 6000, 0.8, 1500, 180.0, 30.0, 1.0, 0.3);
    run_field("random 1-degree field", f, 1.0);
    free_field(&f);
    f = make_field(2, 4000, 0.8, 1000, 0.0, 0.0, 0.5, 0.3); /* RA 0/360 wrap */
    for (int64_t j = 0; j < f.n2; j += 4) /* the same position written as ra - 360 or + 360 */
        f.ra2[j] += f.ra2[j] > 180 ? -360.0 : 360.0;
    run_field("RA wrap 0/360", f, 1.0);
    free_field(&f);
    f = make_field(3, 4000, 0.8, 1000, 0.0, 90.0, 0.3, 0.3); /* north pole */
    f.de1[0] = 90.0;
    f.ra1[0] = 17.0;
    f.de2[0] = 90.0;
    f.ra2[0] = 250.0;
    run_field("north pole", f, 1.0);
    free_field(&f);
    f = make_field(4, 4000, 0.8, 1000, 33.0, -89.9, 0.2, 0.3); /* near the south pole */
    run_field("south pole", f, 2.0);
    free_field(&f);
    f = make_field(5, 5000, 0.5, 5000, 250.0, 60.0, 0.1, 20.0); /* crowded, large radius */
    run_field("crowded, radius 30\"", f, 30.0);
    free_field(&f);
    f = make_field(6, 1500, 0.5, 1500, 90.0, 0.0, 20.0, 2000.0); /* wide, radius 1 degree */
    run_field("wide, radius 3600\"", f, 3600.0);
    free_field(&f);
    return TIDE_TEST_RESULT();
}
