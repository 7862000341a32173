/* test_store_candidates.c — differences, candidates, cutouts and objects in the store
 * (store_cand.h) on SQLite and, when TIDE_TEST_PG names a server (tests/cli/test_diff_store.sh
 * starts one), on PostgreSQL: every column read back as written, cone searches equal to a
 * brute-force scan (RA wrap, the pole, 1" to 1 deg), association of two epochs into objects
 * of two detections, light curves, replacement of a re-run pair (objects recomputed, empty
 * ones removed), rollback of a bad difference, the cutout codec, and both stores holding the
 * same rows after the same writes. Public API only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tide/store.h"
#include "tide/store_cand.h"
#include "tide_test.h"

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static double unif(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* Field centres: one across RA 0/360, one at the north pole. */
static const double FIELD[2][2] = {{0.0, -30.0}, {45.0, 89.8}};

/* @p n candidates on a 20" grid (jittered by 5", so never two within 10") around field
 * @p fld, shifted by @p jit arcsec (a second epoch), with @p salt in the values. */
static void make_cands(tide_table *t, int64_t n, int fld, double jit, double salt) {
    tide_table_init(t);
    static const char *const f64[] = {"X_IMAGE", "Y_IMAGE", "ALPHA_J2000", "DELTA_J2000", "SNR",
                                      "FLUX",    "PS_FLUX", "PS_FLUX_ERR", "DIP_CHI2"};
    static const char *const i32[] = {"KIND", "FLAGS", "FIT_STATUS"};
    for (int k = 0; k < 9; k++)
        CHECK_OK(tide_table_add_column(t, f64[k], TIDE_COL_F64, 1, NULL, NULL, NULL));
    for (int k = 0; k < 3; k++)
        CHECK_OK(tide_table_add_column(t, i32[k], TIDE_COL_I32, 1, NULL, NULL, NULL));
    CHECK_OK(tide_table_resize(t, n));
    const int side = 40; /* fixed: the first rows of any n sit at the same places */
    uint64_t keep = rng;
    rng = 12345; /* the same grid and jitter for every epoch */
    for (int64_t r = 0; r < n; r++) {
        const double gx = (double)(r % side) - side / 2.0, gy = (double)(r / side) - side / 2.0;
        const double dx = (20 * gx + 10 * (unif() - 0.5)) / 3600,
                     dy = (20 * gy + 10 * (unif() - 0.5)) / 3600;
        const double dec = FIELD[fld][1] + dy + jit / 3600;
        double ra = FIELD[fld][0] + dx / cos(dec * 3.14159265358979 / 180);
        ra = fmod(ra + 360, 360);
        tide_table_f64(t, "ALPHA_J2000")[r] = ra;
        tide_table_f64(t, "DELTA_J2000")[r] = dec > 90 ? 180 - dec : dec;
    }
    rng = keep ^ (uint64_t)(salt * 1e6);
    for (int64_t r = 0; r < n; r++) {
        tide_table_f64(t, "X_IMAGE")[r] = 1 + 4000 * unif();
        tide_table_f64(t, "Y_IMAGE")[r] = 1 + 4000 * unif();
        tide_table_f64(t, "SNR")[r] = 5 + 100 * unif() + salt;
        tide_table_f64(t, "FLUX")[r] = r % 17 == 0 ? NAN : 1e4 * (unif() - 0.3);
        tide_table_f64(t, "PS_FLUX")[r] = 1e3 * unif() + salt;
        tide_table_f64(t, "PS_FLUX_ERR")[r] = r % 23 == 0 ? INFINITY : 10 * unif();
        tide_table_f64(t, "DIP_CHI2")[r] = r % 5 == 0 ? NAN : unif() * 1e-7;
        tide_table_i32(t, "KIND")[r] = (int32_t)(r % 3) - 1;
        tide_table_i32(t, "FLAGS")[r] = (int32_t)(unif() * 65536) - 100;
        tide_table_i32(t, "FIT_STATUS")[r] = r % 7 == 0 ? -1 : 0;
    }
}

/* Cutouts of the first @p n candidates, every kind, side 63 (residual 21). */
static float *make_cuts(int64_t n, tide_store_cutout *c) {
    float *pix = malloc(sizeof(float) * (size_t)(n * 4 * 63 * 63));
    for (int64_t i = 0; i < n * 4 * 63 * 63; i++)
        pix[i] = (float)(100 * unif() - 20 + (i % 97 == 0 ? 5e4 : 0));
    pix[7] = NAN;
    for (int64_t r = 0; r < n; r++)
        for (int k = 0; k < 4; k++) {
            tide_store_cutout *q = &c[4 * r + k];
            q->row = r;
            q->kind = k;
            q->w = q->h = k == TIDE_CUTOUT_RESIDUAL ? 21 : 63;
            q->pix = pix + (size_t)(4 * r + k) * 63 * 63;
        }
    return pix;
}

static void diff_row(tide_store_diff *d, const char *sci, const char *tmpl, double mjd) {
    tide_store_diff_init(d);
    tide_store_sha256_hex(sci, (int64_t)strlen(sci), d->sci_checksum);
    tide_store_sha256_hex(tmpl, (int64_t)strlen(tmpl), d->tmpl_checksum);
    snprintf(d->sci_file, sizeof d->sci_file, "%s", sci);
    snprintf(d->tmpl_file, sizeof d->tmpl_file, "%s", tmpl);
    d->mjd_sci = mjd;
    d->mjd_tmpl = 60000.5;
    d->naxis1 = d->naxis2 = 4096;
    d->kernel_sum = 1.0123;
    d->noise = 12.5;
    d->grid_header = "CTYPE1  = 'RA---TAN'";
}

static int same(double a, double b) {
    return (isnan(a) && isnan(b)) || a == b;
}

/* Every column of @p t read back for diff @p id, row for row. */
static void check_roundtrip(tide_store *s, int64_t id, const tide_table *t, double mjd) {
    tide_store_cand_query q;
    tide_store_cand_query_init(&q);
    q.diff_id = id;
    tide_table o;
    tide_table_init(&o);
    CHECK_OK(tide_store_candidates(s, &q, &o));
    CHECK(o.nrows == t->nrows);
    const int64_t *seq = tide_table_i64(&o, "SEQ");
    const double *m = tide_table_f64(&o, "MJD");
    CHECK(seq && m && tide_table_f64(&o, "SCORE") && tide_table_i64(&o, "OBJECT_ID"));
    int bad = 0;
    for (int64_t r = 0; seq && m && r < o.nrows && r < t->nrows; r++) {
        bad += seq[r] != r + 1 || m[r] != mjd;
        for (int j = 0; j < t->ncols; j++) {
            const tide_column *c = &t->cols[j], *oc = tide_table_column(&o, c->name);
            if (!oc) {
                bad++;
                continue;
            }
            if (c->type == TIDE_COL_I32)
                bad +=
                    oc->type != TIDE_COL_I64 || ((int64_t *)oc->data)[r] != ((int32_t *)c->data)[r];
            else
                bad += oc->type != TIDE_COL_F64 ||
                       !same(((double *)oc->data)[r], ((double *)c->data)[r]);
        }
    }
    CHECK(bad == 0);
    if (bad)
        printf("  %d values differ\n", bad);
    tide_table_free(&o);
}

/* Cones of every size equal a brute-force scan of @p all (the stored candidates). */
static void check_cones(tide_store *s, const tide_table *all, int ncones) {
    const double *ra = tide_table_f64(all, "ALPHA_J2000"), *de = tide_table_f64(all, "DELTA_J2000");
    const int64_t *id = tide_table_i64(all, "CAND_ID");
    int bad = 0;
    int64_t found = 0;
    for (int c = 0; c < ncones; c++) {
        const int64_t r0 = (int64_t)(unif() * (double)all->nrows);
        const double rad = pow(10, -3.5 + 3.5 * unif()); /* 1" .. 1 deg */
        tide_store_cand_query q;
        tide_store_cand_query_init(&q);
        q.ra = fmod(ra[r0] + 0.002 * (unif() - 0.5) + 360, 360);
        q.dec = fmax(-90, fmin(90, de[r0] + 0.002 * (unif() - 0.5)));
        q.radius_deg = rad;
        tide_table o;
        tide_table_init(&o);
        CHECK_OK(tide_store_candidates(s, &q, &o));
        const int64_t *oid = tide_table_i64(&o, "CAND_ID");
        int64_t k = 0;
        for (int64_t r = 0; r < all->nrows; r++) {
            if (!(tide_store_separation(q.ra, q.dec, ra[r], de[r]) <= rad))
                continue;
            if (k >= o.nrows || oid[k] != id[r])
                bad++;
            k++;
        }
        bad += k != o.nrows;
        found += o.nrows;
        tide_table_free(&o);
    }
    printf("  %d cones: %lld candidates found, %d differences from brute force\n", ncones,
           (long long)found, bad);
    CHECK(bad == 0);
    CHECK(found > ncones);
}

static int64_t count_ndet(tide_store *s, int64_t ndet) {
    tide_table o;
    tide_table_init(&o);
    CHECK_OK(tide_store_objects(s, &o));
    const int64_t *nd = tide_table_i64(&o, "NDET");
    int64_t n = 0;
    for (int64_t r = 0; nd && r < o.nrows; r++)
        n += nd[r] == ndet;
    tide_table_free(&o);
    return n;
}

static void counts(tide_store *s, int64_t d, int64_t c, int64_t cut, int64_t o) {
    int64_t a = -1, b = -1, e = -1, f = -1;
    CHECK_OK(tide_store_count_diffs(s, &a, &b, &e, &f));
    if (a != d || b != c || e != cut || f != o)
        printf("  counts %lld %lld %lld %lld, expected %lld %lld %lld %lld\n", (long long)a,
               (long long)b, (long long)e, (long long)f, (long long)d, (long long)c, (long long)cut,
               (long long)o);
    CHECK(a == d && b == c && e == cut && f == o);
}

enum { N = 1500, NCUT = 6 };

/* The whole sequence on one store; @p snap gets every candidate and object after the two
 * epochs (for the comparison of the stores). */
static void run_store(const char *uri, tide_table *snap_c, tide_table *snap_o) {
    printf("store %s\n", uri);
    rng = 0x9E3779B97F4A7C15ULL; /* the same values on every store */
    tide_store *s = NULL;
    CHECK_OK(tide_store_open(uri, NULL, &s));
    if (!s)
        return;
    if (tide_store_get_kind(s) == TIDE_STORE_PG) { /* a server other tests used: anew */
        CHECK_OK(tide_store_exec(s, "DROP TABLE diffs, candidates, cutouts, objects, labels, "
                                    "reviewers"));
        tide_store_close(s);
        s = NULL;
        CHECK_OK(tide_store_open(uri, NULL, &s));
        if (!s)
            return;
    }
    tide_table a, b;
    tide_store_diff d;
    tide_store_cutout cut[4 * NCUT];
    float *pix = make_cuts(NCUT, cut);
    /* epoch 1 in both fields (half the candidates each: two tables, two diffs) */
    make_cands(&a, N, 0, 0, 0.25);
    diff_row(&d, "sci1.fits", "tmpl.fits", 60100.25);
    int64_t id1 = -1, id2 = -1, id3 = -1;
    CHECK_OK(tide_store_put_diff(s, &d, &a, cut, 4 * NCUT, 1.0, &id1));
    check_roundtrip(s, id1, &a, 60100.25);
    counts(s, 1, N, 4 * NCUT, N);
    tide_store_diff g;
    CHECK_OK(tide_store_get_diff(s, id1, &g));
    CHECK(!strcmp(g.sci_file, "sci1.fits") && g.naxis1 == 4096 && g.kernel_sum == 1.0123 &&
          g.nfit == -1 && g.ncand == N && isnan(g.fwhm_sci) && g.grid_header &&
          !strcmp(g.grid_header, "CTYPE1  = 'RA---TAN'"));
    tide_store_diff_free(&g);
    /* epoch 2: the same sources 0.3" away join their objects */
    make_cands(&b, N, 0, 0.3, 0.5);
    diff_row(&d, "sci2.fits", "tmpl.fits", 60130.75);
    CHECK_OK(tide_store_put_diff(s, &d, &b, cut, 4 * NCUT, 1.0, &id2));
    counts(s, 2, 2 * N, 8 * NCUT, N);
    CHECK(count_ndet(s, 2) == N);
    /* a light curve: object of candidate 1 */
    tide_table o;
    tide_table_init(&o);
    tide_store_cand_query q;
    tide_store_cand_query_init(&q);
    q.diff_id = id1;
    CHECK_OK(tide_store_candidates(s, &q, &o));
    const int64_t obj = o.nrows ? tide_table_i64(&o, "OBJECT_ID")[0] : -1;
    const int64_t cand1 = o.nrows ? tide_table_i64(&o, "CAND_ID")[0] : -1;
    tide_store_cand_query_init(&q);
    q.object_id = obj;
    CHECK_OK(tide_store_candidates(s, &q, &o));
    CHECK(o.nrows == 2);
    if (o.nrows == 2) {
        CHECK(tide_table_f64(&o, "MJD")[0] == 60100.25 && tide_table_f64(&o, "MJD")[1] == 60130.75);
        CHECK(tide_table_f64(&o, "PS_FLUX")[1] == tide_table_f64(&b, "PS_FLUX")[0]);
    }
    tide_store_object ob;
    CHECK_OK(tide_store_get_object(s, obj, &ob));
    CHECK(ob.ndet == 2 && ob.first_mjd == 60100.25 && ob.last_mjd == 60130.75);
    const double ra0 = tide_table_f64(&a, "ALPHA_J2000")[0],
                 de0 = tide_table_f64(&a, "DELTA_J2000")[0];
    CHECK(tide_store_separation(ob.ra, ob.dec, ra0, de0) * 3600 < 0.2); /* the mean: 0.15" */
    /* the pole field, then cones over everything */
    tide_table c;
    make_cands(&c, N, 1, 0, 0.75);
    diff_row(&d, "sci3.fits", "tmpl-pole.fits", 60200.0);
    CHECK_OK(tide_store_put_diff(s, &d, &c, NULL, 0, 1.0, &id3));
    check_roundtrip(s, id3, &c, 60200.0);
    CHECK_OK(tide_store_candidates(s, NULL, &o));
    CHECK(o.nrows == 3 * N);
    check_cones(s, &o, 150);
    /* a cutout back, within the quantisation */
    float *px = NULL;
    int w = 0, h = 0;
    CHECK_OK(tide_store_get_cutout(s, cand1, TIDE_CUTOUT_TEMPLATE, &px, &w, &h));
    CHECK(w == 63 && h == 63);
    double worst = 0;
    for (int i = 0; px && i < 63 * 63; i++)
        worst = fmax(worst, fabs(px[i] - cut[1].pix[i]) / 5e4);
    CHECK(worst <= 0.6 / 65534 * 1.0001);
    free(px);
    CHECK_OK(tide_store_get_cutout(s, cand1, TIDE_CUTOUT_RESIDUAL, &px, &w, &h));
    CHECK(w == 21 && h == 21);
    free(px);
    CHECK(tide_store_get_cutout(s, cand1 + NCUT, TIDE_CUTOUT_DIFF, &px, &w, &h) == TIDE_E_NOTFOUND);
    /* snapshot for the comparison of the stores */
    CHECK_OK(tide_store_candidates(s, NULL, snap_c));
    CHECK_OK(tide_store_objects(s, snap_o));
    /* re-running epoch 1 with 100 fewer candidates replaces its rows */
    tide_table a2;
    make_cands(&a2, N - 100, 0, 0, 0.9);
    diff_row(&d, "sci1.fits", "tmpl.fits", 60100.25);
    int64_t id1b = -1;
    CHECK_OK(tide_store_put_diff(s, &d, &a2, cut, 4 * NCUT, 1.0, &id1b));
    CHECK(id1b != id1);
    counts(s, 3, 3 * N - 100, 8 * NCUT, 2 * N);
    CHECK(count_ndet(s, 2) == N - 100 && count_ndet(s, 1) == 100 + N);
    check_roundtrip(s, id1b, &a2, 60100.25);
    CHECK(tide_store_get_diff(s, id1, &g) == TIDE_E_NOTFOUND);
    /* epoch 2 again with no candidate: its objects lose it, 100 of them are left empty */
    tide_table e;
    make_cands(&e, 0, 0, 0, 0);
    diff_row(&d, "sci2.fits", "tmpl.fits", 60130.75);
    CHECK_OK(tide_store_put_diff(s, &d, &e, NULL, 0, 1.0, NULL));
    counts(s, 3, 2 * N - 100, 4 * NCUT, 2 * N - 100);
    CHECK(count_ndet(s, 1) == 2 * N - 100);
    CHECK_OK(tide_store_get_object(s, obj, &ob));
    CHECK(ob.ndet == 1 && ob.last_mjd == 60100.25);
    /* a bad cutout rolls the whole difference back */
    tide_store_cutout badcut = cut[0];
    badcut.row = N + 5;
    diff_row(&d, "sci4.fits", "tmpl.fits", 60300.0);
    CHECK(tide_store_put_diff(s, &d, &a, &badcut, 1, 1.0, NULL) == TIDE_E_INVAL);
    counts(s, 3, 2 * N - 100, 4 * NCUT, 2 * N - 100);
    diff_row(&d, "sci1.fits", "tmpl.fits", 60100.25); /* nor may a failed re-run lose rows */
    CHECK(tide_store_put_diff(s, &d, &a, &badcut, 1, 1.0, NULL) == TIDE_E_INVAL);
    counts(s, 3, 2 * N - 100, 4 * NCUT, 2 * N - 100);
    CHECK(tide_store_put_diff(s, &d, &a, NULL, 0, 0.0, NULL) == TIDE_E_INVAL);
    /* the labels table takes the review tools' rows */
    CHECK_OK(tide_store_exec(s, "INSERT INTO reviewers (name, created) VALUES ('ann', 'now');"
                                "INSERT INTO labels (candidate_id, reviewer_id, label, time) "
                                "VALUES (1, 1, 'real', 'now')"));
    CHECK(tide_store_exec(s, "INSERT INTO labels (candidate_id, reviewer_id, label, time) "
                             "VALUES (1, 1, 'maybe', 'now')") == TIDE_E_DB);
    tide_store_close(s);
    /* read-only: queries work, writes are refused */
    tide_store_options opt;
    tide_store_options_init(&opt);
    opt.read_only = 1;
    CHECK_OK(tide_store_open(uri, &opt, &s));
    if (s) {
        CHECK_OK(tide_store_candidates(s, NULL, &o));
        CHECK(o.nrows == 2 * N - 100);
        CHECK(tide_store_put_diff(s, &d, &a, NULL, 0, 1.0, NULL) == TIDE_E_INVAL);
        tide_store_close(s);
    }
    /* two candidates of one difference 0.5" apart are two objects (one detection per object
     * and epoch); a later one between them joins the nearer */
    CHECK_OK(tide_store_open(uri, NULL, &s));
    if (s) {
        tide_table p;
        make_cands(&p, 2, 0, 0, 0.1);
        double *pra = tide_table_f64(&p, "ALPHA_J2000"), *pde = tide_table_f64(&p, "DELTA_J2000");
        pra[0] = pra[1] = 200.0;
        pde[0] = 10.0;
        pde[1] = 10.0 + 0.5 / 3600;
        int64_t n0 = 0, n1 = 0;
        CHECK_OK(tide_store_count_diffs(s, NULL, NULL, NULL, &n0));
        diff_row(&d, "pair1.fits", "tmpl.fits", 60400.0);
        CHECK_OK(tide_store_put_diff(s, &d, &p, NULL, 0, 1.0, NULL));
        CHECK_OK(tide_store_count_diffs(s, NULL, NULL, NULL, &n1));
        CHECK(n1 == n0 + 2);
        tide_table_resize(&p, 1);
        tide_table_f64(&p, "DELTA_J2000")[0] = 10.0 + 0.4 / 3600;
        diff_row(&d, "pair2.fits", "tmpl.fits", 60401.0);
        int64_t pid = -1;
        CHECK_OK(tide_store_put_diff(s, &d, &p, NULL, 0, 1.0, &pid));
        CHECK_OK(tide_store_count_diffs(s, NULL, NULL, NULL, &n1));
        CHECK(n1 == n0 + 2);
        tide_store_cand_query_init(&q);
        q.diff_id = pid;
        CHECK_OK(tide_store_candidates(s, &q, &o));
        CHECK(o.nrows == 1);
        if (o.nrows == 1) {
            CHECK_OK(tide_store_get_object(s, tide_table_i64(&o, "OBJECT_ID")[0], &ob));
            CHECK(ob.ndet == 2 && fabs(ob.dec - (10.0 + 0.45 / 3600)) * 3600 < 1e-6);
        }
        tide_table_free(&p);
        tide_store_close(s);
    }
    tide_table_free(&o);
    tide_table_free(&a);
    tide_table_free(&a2);
    tide_table_free(&b);
    tide_table_free(&c);
    tide_table_free(&e);
    free(pix);
}

static void test_codec(void) {
    float v[1000], back[1000];
    int16_t q[1000];
    for (int i = 0; i < 1000; i++)
        v[i] = (float)(1e3 * (unif() - 0.5) + (i == 3 ? 1e5 : 0));
    v[10] = NAN;
    double z, sc;
    tide_cutout_encode(v, 1000, q, &z, &sc);
    tide_cutout_decode(q, 1000, z, sc, back);
    double worst = 0;
    for (int i = 0; i < 1000; i++)
        if (i != 10)
            worst = fmax(worst, fabs(back[i] - v[i]));
    CHECK(isnan(back[10]) && worst <= 0.5 * sc * 1.001 + 1e-3);
    float flat[4] = {7, 7, 7, 7};
    tide_cutout_encode(flat, 4, q, &z, &sc);
    tide_cutout_decode(q, 4, z, sc, back);
    CHECK(back[0] == 7 && back[3] == 7);
}

static void compare_tables(const tide_table *x, const tide_table *y, const char *what) {
    int bad = x->nrows != y->nrows || x->ncols != y->ncols;
    for (int j = 0; j < x->ncols && !bad; j++) {
        const tide_column *a = &x->cols[j], *b = tide_table_column(y, a->name);
        if (!b || a->type != b->type) {
            bad++;
            break;
        }
        int64_t col_bad = 0;
        for (int64_t r = 0; r < x->nrows; r++)
            col_bad += a->type == TIDE_COL_I64
                           ? ((int64_t *)a->data)[r] != ((int64_t *)b->data)[r]
                           : !same(((double *)a->data)[r], ((double *)b->data)[r]);
        if (col_bad)
            printf("  column %s: %lld rows differ\n", a->name, (long long)col_bad);
        bad += (int)col_bad;
    }
    printf("%s: %lld rows, %d differences between SQLite and PostgreSQL\n", what,
           (long long)x->nrows, bad);
    CHECK(bad == 0);
}

int main(void) {
    test_codec();
    char path[] = "/tmp/tide-cand-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    unlink(path);
    char uri[64];
    snprintf(uri, sizeof uri, "sqlite:%s", path);
    tide_table c1, o1, c2, o2;
    tide_table_init(&c1), tide_table_init(&o1), tide_table_init(&c2), tide_table_init(&o2);
    run_store(uri, &c1, &o1);
    const char *pg = getenv("TIDE_TEST_PG");
    if (pg && *pg) {
        run_store(pg, &c2, &o2);
        compare_tables(&c1, &c2, "candidates");
        compare_tables(&o1, &o2, "objects");
    } else {
        printf("PostgreSQL part skipped (no TIDE_TEST_PG)\n");
    }
    tide_table_free(&c1), tide_table_free(&o1), tide_table_free(&c2), tide_table_free(&o2);
    char side[96];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    return tide_test_failures ? 1 : 0;
}
