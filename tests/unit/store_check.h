/* store_check.h — checks shared by the SQLite and PostgreSQL store tests: catalogs in tide's
 * layout at awkward places (RA wrap, both poles, all sky), cone searches against a brute-force
 * scan, round trips of every column, replacement and rollback. */
#ifndef TIDE_TEST_STORE_CHECK_H
#define TIDE_TEST_STORE_CHECK_H
#include <math.h>
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/test_rng.h"
#include "tide/store.h"
#include "tide/tide.h"
#include "tide_test.h"

static uint64_t sc_rng = 88172645463325252ULL;
static double sc_unif(void) {
    return trng_unit(trng_xorshift64(&sc_rng));
}

/* A catalog of @p n sources: kind 0 around (0, 10) across RA 0/360, 1 within 2 deg of the
 * north pole, 2 uniform over the sky, 3 within 0.5 deg of the south pole. @p salt changes the
 * values (a re-processed frame). */
static int sc_catalog(tide_table *t, int64_t n, int kind, double salt) {
    tide_table_init(t);
    int st = 0;
    st |= tide_table_add_column(t, "NUMBER", TIDE_COL_I32, 1, "", NULL, NULL);
    st |= tide_table_add_column(t, "ALPHA_J2000", TIDE_COL_F64, 1, "deg", NULL, NULL);
    st |= tide_table_add_column(t, "DELTA_J2000", TIDE_COL_F64, 1, "deg", NULL, NULL);
    st |= tide_table_add_column(t, "X_IMAGE", TIDE_COL_F64, 1, "pixel", NULL, NULL);
    st |= tide_table_add_column(t, "FLUX_APER", TIDE_COL_F64, 3, "count", NULL, NULL);
    st |= tide_table_add_column(t, "MAG_AUTO", TIDE_COL_F32, 1, "mag", NULL, NULL);
    st |= tide_table_add_column(t, "FLAGS", TIDE_COL_I16, 1, "", NULL, NULL);
    st |= tide_table_add_column(t, "ISOAREA_IMAGE", TIDE_COL_I64, 1, "", NULL, NULL);
    st |= tide_table_add_column(t, "NOTE", TIDE_COL_STR, 8, "", NULL, NULL); /* not stored */
    st |= tide_table_resize(t, n);
    if (st)
        return st;
    int32_t *num = tide_table_i32(t, "NUMBER");
    double *ra = tide_table_f64(t, "ALPHA_J2000"), *dec = tide_table_f64(t, "DELTA_J2000");
    double *x = tide_table_f64(t, "X_IMAGE"), *fa = tide_table_f64(t, "FLUX_APER");
    float *mag = tide_table_f32(t, "MAG_AUTO");
    int16_t *fl = tide_table_column(t, "FLAGS")->data;
    int64_t *area = tide_table_i64(t, "ISOAREA_IMAGE");
    for (int64_t i = 0; i < n; i++) {
        double a, d;
        if (kind == 0) {
            a = fmod(359.0 + 2.0 * sc_unif(), 360.0);
            d = 9.0 + 2.0 * sc_unif();
        } else if (kind == 1) {
            a = 360.0 * sc_unif();
            d = 88.0 + 2.0 * sc_unif();
        } else if (kind == 2) {
            a = 360.0 * sc_unif();
            d = asin(2.0 * sc_unif() - 1.0) * 180.0 / M_PI;
        } else {
            a = 360.0 * sc_unif();
            d = -90.0 + 0.5 * sc_unif();
        }
        num[i] = (int32_t)(i + 1);
        ra[i] = a;
        dec[i] = d;
        x[i] = 1.0 + 2000.0 * sc_unif() + salt;
        for (int k = 0; k < 3; k++)
            fa[3 * i + k] = (k + 1) * 1000.0 * sc_unif() + salt;
        mag[i] = (float)(15.0 + 5.0 * sc_unif() + salt);
        fl[i] = (int16_t)(i % 7 == 0 ? 3 : 0);
        area[i] = (int64_t)(i * 3 + 1) + ((int64_t)1 << 40); /* needs 64 bits */
    }
    if (n > 4) {
        mag[3] = NAN; /* NaN survives the round trip */
        fa[3 * 4 + 1] = INFINITY;
        ra[n - 1] = 0.0; /* exactly on the wrap */
        dec[n - 1] = kind == 1 ? 90.0 : kind == 3 ? -90.0 : dec[n - 1];
    }
    return 0;
}

/* Stored value of output column @p name (a catalog column or NAME_k) at @p row, from the
 * catalog, as a double. */
static double sc_expected(const tide_table *t, const char *name, int64_t row, int *found) {
    *found = 1;
    for (int i = 0; i < t->ncols; i++) {
        const tide_column *c = &t->cols[i];
        if (c->type == TIDE_COL_STR)
            continue;
        for (int64_t e = 0; e < c->repeat; e++) {
            char nm[96];
            if (c->repeat == 1)
                snprintf(nm, sizeof nm, "%s", c->name);
            else
                snprintf(nm, sizeof nm, "%s_%lld", c->name, (long long)e + 1);
            if (strcmp(nm, name))
                continue;
            int64_t k = row * c->repeat + e;
            switch (c->type) {
            case TIDE_COL_F64: return ((double *)c->data)[k];
            case TIDE_COL_F32: return ((float *)c->data)[k];
            case TIDE_COL_I64: return (double)((int64_t *)c->data)[k];
            case TIDE_COL_I32: return ((int32_t *)c->data)[k];
            case TIDE_COL_I16: return ((int16_t *)c->data)[k];
            default: return ((uint8_t *)c->data)[k];
            }
        }
    }
    *found = 0;
    return 0;
}

static double sc_get(const tide_table *t, int col, int64_t row) {
    const tide_column *c = &t->cols[col];
    return c->type == TIDE_COL_I64 ? (double)((int64_t *)c->data)[row] : ((double *)c->data)[row];
}

/* Every stored row of image @p id equals the catalog @p t, column by column, in SEQ order. */
static void sc_check_roundtrip(tide_store *s, int64_t id, const tide_table *t, const char *file) {
    tide_table all;
    tide_table_init(&all);
    CHECK_OK(tide_store_all_sources(s, &all));
    const int64_t *ids = tide_table_i64(&all, "IMAGE_ID"), *seq = tide_table_i64(&all, "SEQ");
    CHECK(ids && seq);
    if (!ids || !seq)
        return;
    int64_t n = 0, bad = 0;
    const tide_column *fc = tide_table_column(&all, "FILE");
    for (int64_t r = 0; r < all.nrows; r++) {
        if (ids[r] != id)
            continue;
        if (seq[r] != n + 1)
            bad++;
        if (strncmp((char *)fc->data + r * fc->repeat, file, (size_t)fc->repeat))
            bad++;
        for (int c = 0; c < all.ncols; c++) {
            const char *nm = all.cols[c].name;
            if (!strcmp(nm, "IMAGE_ID") || !strcmp(nm, "SEQ") || !strcmp(nm, "FILE"))
                continue;
            int found;
            double e = sc_expected(t, nm, n, &found), v = sc_get(&all, c, r);
            if (!found)
                continue; /* a column of another frame */
            if (!(e == v || (isnan(e) && isnan(v)))) {
                if (bad < 5)
                    fprintf(stderr,
                            "round trip: image %lld row %lld %s: stored %.17g, "
                            "catalog %.17g\n",
                            (long long)id, (long long)n, nm, v, e);
                bad++;
            }
        }
        n++;
    }
    CHECK(n == t->nrows);
    CHECK(bad == 0);
    CHECK(tide_table_column(&all, "NOTE") == NULL);
    CHECK(tide_table_column(&all, "FLUX_APER_3") != NULL);
    tide_table_free(&all);
}

/* @p ncones cone searches against a brute-force scan of every stored source: the same rows in
 * the same order with the same values. */
static void sc_check_cones(tide_store *s, int ncones) {
    tide_table all, got;
    tide_table_init(&all);
    tide_table_init(&got);
    CHECK_OK(tide_store_all_sources(s, &all));
    const double *ra = tide_table_f64(&all, "ALPHA_J2000"),
                 *dec = tide_table_f64(&all, "DELTA_J2000");
    const int64_t *ids = tide_table_i64(&all, "IMAGE_ID"), *seq = tide_table_i64(&all, "SEQ");
    CHECK(ra && dec && ids && seq && all.nrows > 0);
    if (!ra || !dec || !ids || !seq || !all.nrows)
        return;
    static const double fixed[][3] = {{0, 10, 1},        {359.999, 10, 0.5},  {0.0005, 9.5, 0.05},
                                      {0, 90, 2},        {123, 89.9, 0.3},    {0, -90, 0.3},
                                      {200, -89.8, 0.1}, {0, 10, 1.0 / 3600}, {45, 0, 5},
                                      {300, -30, 8},     {0, 0, 179.9}};
    const int nfixed = (int)(sizeof fixed / sizeof fixed[0]);
    int64_t total = 0, mism = 0;
    for (int k = 0; k < ncones + nfixed; k++) {
        double c_ra, c_dec, rad;
        if (k < nfixed) {
            c_ra = fixed[k][0];
            c_dec = fixed[k][1];
            rad = fixed[k][2];
        } else {
            int64_t j = (int64_t)(sc_unif() * (double)all.nrows);
            rad = pow(10.0, log10(1.0 / 3600) + sc_unif() * (log10(6.0) - log10(1.0 / 3600)));
            c_ra = fmod(ra[j] + (sc_unif() - 0.5) * rad + 360.0, 360.0);
            c_dec = dec[j] + (sc_unif() - 0.5) * rad;
            if (c_dec > 90)
                c_dec = 90;
            if (c_dec < -90)
                c_dec = -90;
            if (k % 5 == 0) /* some at the exact position of a source and with it at the edge */
                c_ra = ra[j], c_dec = dec[j];
        }
        int st = tide_store_cone(s, c_ra, c_dec, rad, 0, &got);
        CHECK_OK(st);
        if (st)
            continue;
        const int64_t *gid = tide_table_i64(&got, "IMAGE_ID"), *gseq = tide_table_i64(&got, "SEQ");
        int64_t m = 0, bad = 0;
        for (int64_t r = 0; r < all.nrows; r++) { /* all is in (IMAGE_ID, SEQ) order */
            if (!(tide_store_separation(c_ra, c_dec, ra[r], dec[r]) <= rad))
                continue;
            if (m >= got.nrows || gid[m] != ids[r] || gseq[m] != seq[r])
                bad++;
            else
                for (int c = 0; c < all.ncols; c++)
                    if (all.cols[c].type != TIDE_COL_STR) {
                        double a = sc_get(&all, c, r), b = sc_get(&got, c, m);
                        if (!(a == b || (isnan(a) && isnan(b))))
                            bad++;
                    }
            m++;
        }
        if (m != got.nrows || bad) {
            fprintf(stderr,
                    "cone (%.9g, %.9g, r %.6g deg): brute force %lld rows, store %lld, "
                    "%lld mismatches\n",
                    c_ra, c_dec, rad, (long long)m, (long long)got.nrows, (long long)bad);
            mism++;
        }
        total += m;
    }
    CHECK(mism == 0);
    CHECK(total > 1000); /* the cones did find sources */
    printf("cones: %d searches, %lld sources found, %lld mismatches\n", ncones + nfixed,
           (long long)total, (long long)mism);
    /* limit keeps the first rows of the order */
    CHECK_OK(tide_store_cone(s, 0, 90, 2, 0, &got));
    int64_t nfull = got.nrows;
    CHECK(nfull > 10);
    int64_t first_seq = nfull ? tide_table_i64(&got, "SEQ")[0] : -1;
    CHECK_OK(tide_store_cone(s, 0, 90, 2, 7, &got));
    CHECK(got.nrows == 7);
    CHECK(got.nrows && tide_table_i64(&got, "SEQ")[0] == first_seq);
    tide_table_free(&all);
    tide_table_free(&got);
}

static void sc_frame(tide_store_frame *f, const char *file, const char *sum_of) {
    tide_store_frame_init(f);
    snprintf(f->file, sizeof f->file, "%s", file);
    tide_store_sha256_hex(sum_of, (int64_t)strlen(sum_of), f->checksum);
    snprintf(f->date_obs, sizeof f->date_obs, "2026-11-30T01:02:03.5");
    f->mjd = 61009.04;
    f->exptime = 30;
    snprintf(f->filter, sizeof f->filter, "r");
    f->zp = 25.125;
    f->ezp = 0.004;
    f->zp_nstar = 321;
    f->naxis1 = 2048;
    f->naxis2 = 2048;
}

/* The whole suite on an open, empty store. @p fail_on / @p fail_off: SQL that makes an insert
 * of the row with SEQ 500 fail (a trigger) and removes it again. */
static void sc_run_all(tide_store *s, const char *fail_on, const char *fail_off, int ncones) {
    const char *files[4] = {"wrap.fits", "north.fits", "sky.fits", "south.fits"};
    const int64_t rows[4] = {3000, 2500, 6000, 800};
    tide_table cat[4];
    int64_t id[4];
    int64_t nimg = -1, nsrc = -1;
    for (int k = 0; k < 4; k++) {
        tide_store_frame f;
        sc_frame(&f, files[k], files[k]);
        CHECK_OK(sc_catalog(&cat[k], rows[k], k, 0));
        CHECK_OK(tide_store_put_frame(s, &f, &cat[k], &id[k]));
    }
    CHECK_OK(tide_store_count(s, &nimg, &nsrc));
    CHECK(nimg == 4 && nsrc == 3000 + 2500 + 6000 + 800);
    for (int k = 0; k < 4; k++)
        sc_check_roundtrip(s, id[k], &cat[k], files[k]);
    sc_check_cones(s, ncones);

    /* the image row, by file and by checksum */
    tide_store_frame g;
    CHECK_OK(tide_store_image(s, "north.fits", &g));
    CHECK(g.id == id[1]);
    CHECK(!strcmp(g.filter, "r") && !strcmp(g.date_obs, "2026-11-30T01:02:03.5"));
    CHECK(g.zp == 25.125 && g.zp_nstar == 321 && g.nsources == 2500 && isnan(g.airmass));
    CHECK(g.processed[0] && g.tide_version[0]);
    char sum[72];
    tide_store_sha256_hex("sky.fits", 8, sum);
    tide_store_frame_free(&g);
    CHECK_OK(tide_store_image(s, sum, &g));
    CHECK(g.id == id[2] && !strcmp(g.file, "sky.fits"));
    tide_store_frame_free(&g);
    CHECK(tide_store_image(s, "nothing.fits", &g) == TIDE_E_NOTFOUND);

    /* re-processing replaces: same checksum, fewer rows, other values */
    tide_table again;
    tide_store_frame f;
    sc_frame(&f, "sky-again.fits", "sky.fits");
    CHECK_OK(sc_catalog(&again, 1234, 2, 0.5));
    int64_t id2 = -1;
    CHECK_OK(tide_store_put_frame(s, &f, &again, &id2));
    CHECK(id2 != id[2]);
    CHECK_OK(tide_store_count(s, &nimg, &nsrc));
    CHECK(nimg == 4 && nsrc == 3000 + 2500 + 1234 + 800);
    sc_check_roundtrip(s, id2, &again, "sky-again.fits");
    tide_table all;
    tide_table_init(&all);
    CHECK_OK(tide_store_all_sources(s, &all));
    int64_t old = 0;
    for (int64_t r = 0; r < all.nrows; r++)
        old += tide_table_i64(&all, "IMAGE_ID")[r] == id[2];
    CHECK(old == 0);

    /* a failure in the middle of a frame leaves the store as it was */
    CHECK_OK(tide_store_exec(s, fail_on));
    tide_table big;
    sc_frame(&f, "fails.fits", "fails.fits");
    CHECK_OK(sc_catalog(&big, 2000, 2, 0.25));
    int st = tide_store_put_frame(s, &f, &big, NULL);
    CHECK(st == TIDE_E_DB);
    printf("injected failure: %s\n", tide_error_detail());
    /* also when it replaces a frame: the old frame must survive */
    sc_frame(&f, "north-again.fits", "north.fits");
    st = tide_store_put_frame(s, &f, &big, NULL);
    CHECK(st == TIDE_E_DB);
    CHECK_OK(tide_store_exec(s, fail_off));
    int64_t n2 = -1, s2 = -1;
    CHECK_OK(tide_store_count(s, &n2, &s2));
    CHECK(n2 == nimg && s2 == nsrc);
    tide_table all2;
    tide_table_init(&all2);
    CHECK_OK(tide_store_all_sources(s, &all2));
    CHECK(all2.nrows == all.nrows);
    sc_check_roundtrip(s, id[1], &cat[1], "north.fits");
    /* a new column in a later frame is added; older rows read NaN there */
    CHECK_OK(tide_table_add_column(&big, "MAG_PSF", TIDE_COL_F64, 1, "mag", NULL, NULL));
    for (int64_t r = 0; r < big.nrows; r++)
        tide_table_f64(&big, "MAG_PSF")[r] = 17.0 + r * 1e-3;
    sc_frame(&f, "newcol.fits", "newcol.fits");
    int64_t id3 = -1;
    CHECK_OK(tide_store_put_frame(s, &f, &big, &id3));
    sc_check_roundtrip(s, id3, &big, "newcol.fits");
    CHECK_OK(tide_store_cone(s, 0, 10, 0.5, 0, &all2));
    CHECK(all2.nrows > 0 && tide_table_f64(&all2, "MAG_PSF") &&
          isnan(tide_table_f64(&all2, "MAG_PSF")[0]));
    /* a later frame with wider types under known names (FLAGS int32 beyond int16, MAG_AUTO
     * float64 with digits a float32 lacks) reads back exactly, and so do the older frames */
    tide_table wide;
    tide_table_init(&wide);
    CHECK_OK(tide_table_add_column(&wide, "ALPHA_J2000", TIDE_COL_F64, 1, "deg", NULL, NULL));
    CHECK_OK(tide_table_add_column(&wide, "DELTA_J2000", TIDE_COL_F64, 1, "deg", NULL, NULL));
    CHECK_OK(tide_table_add_column(&wide, "FLAGS", TIDE_COL_I32, 1, "", NULL, NULL));
    CHECK_OK(tide_table_add_column(&wide, "MAG_AUTO", TIDE_COL_F64, 1, "mag", NULL, NULL));
    CHECK_OK(tide_table_resize(&wide, 300));
    for (int64_t r = 0; r < wide.nrows; r++) {
        tide_table_f64(&wide, "ALPHA_J2000")[r] = 10 + sc_unif();
        tide_table_f64(&wide, "DELTA_J2000")[r] = -20 + sc_unif();
        tide_table_i32(&wide, "FLAGS")[r] = 70000 + (int32_t)r;
        tide_table_f64(&wide, "MAG_AUTO")[r] = 0.1 + 15 * sc_unif();
    }
    tide_store_frame fw;
    sc_frame(&fw, "wide.fits", "wide.fits");
    int64_t idw = -1;
    CHECK_OK(tide_store_put_frame(s, &fw, &wide, &idw));
    sc_check_roundtrip(s, idw, &wide, "wide.fits");
    sc_check_roundtrip(s, id[1], &cat[1], "north.fits");
    CHECK_OK(tide_store_delete_frame(s, fw.checksum));
    tide_table_free(&wide);
    /* deleting a frame removes its image row and all its sources, nothing else */
    CHECK_OK(tide_store_count(s, &n2, &s2));
    CHECK_OK(tide_store_delete_frame(s, f.checksum));
    int64_t n3 = -1, s3 = -1;
    CHECK_OK(tide_store_count(s, &n3, &s3));
    CHECK(n3 == n2 - 1 && s3 == s2 - big.nrows);
    CHECK(tide_store_delete_frame(s, f.checksum) == TIDE_E_NOTFOUND);
    CHECK(tide_store_image(s, "newcol.fits", &g) == TIDE_E_NOTFOUND);
    /* bad input: no sky columns */
    tide_table nosky;
    tide_table_init(&nosky);
    CHECK_OK(tide_table_add_column(&nosky, "X_IMAGE", TIDE_COL_F64, 1, NULL, NULL, NULL));
    CHECK(tide_store_put_frame(s, &f, &nosky, NULL) == TIDE_E_NOTFOUND);
    CHECK(tide_store_cone(s, 0, 95, 1, 0, &all2) == TIDE_E_INVAL);
    tide_table_free(&nosky);
    tide_table_free(&all);
    tide_table_free(&all2);
    tide_table_free(&again);
    tide_table_free(&big);
    for (int k = 0; k < 4; k++)
        tide_table_free(&cat[k]);
}

#endif
