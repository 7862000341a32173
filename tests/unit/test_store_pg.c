/* test_store_pg.c — the PostgreSQL + Q3C catalog store against a real server: the suite of
 * store_check.h (cones equal to brute force, round trips, replacement, rollback), a connection
 * killed in the middle of a frame's COPY (nothing written, the next call reconnects), the
 * URI forms, and reference-catalog cones. The server comes from tests/cli/test_store_pg.sh,
 * which starts a throw-away cluster and sets TIDE_TEST_PG (a store URI, e.g. "pg:") and the
 * PG* variables; without TIDE_TEST_PG the test is skipped. */
#include <stdlib.h>

#include "store_check.h"

static void test_killed_connection(tide_store *s) {
    int64_t n0 = 0, s0 = 0;
    CHECK_OK(tide_store_count(s, &n0, &s0));
    /* the server process of this very connection dies on the 500th row of the COPY */
    CHECK_OK(tide_store_exec(s, "CREATE FUNCTION tide_kill() RETURNS trigger AS $$ BEGIN "
                                "IF NEW.\"SEQ\" = 500 THEN PERFORM pg_terminate_backend("
                                "pg_backend_pid()); PERFORM pg_sleep(1); END IF; RETURN NEW; END "
                                "$$ LANGUAGE plpgsql;"
                                "CREATE TRIGGER tide_kill BEFORE INSERT ON sources FOR EACH ROW "
                                "EXECUTE FUNCTION tide_kill()"));
    tide_table t;
    tide_store_frame f;
    sc_frame(&f, "killed.fits", "killed.fits");
    CHECK_OK(sc_catalog(&t, 3000, 2, 0.75));
    int st = tide_store_put_frame(s, &f, &t, NULL);
    CHECK(st == TIDE_E_DB);
    printf("killed connection: %s\n", tide_error_detail());
    /* the next call reconnects; nothing of the frame is there */
    CHECK_OK(tide_store_exec(s, "DROP TRIGGER tide_kill ON sources; DROP FUNCTION tide_kill()"));
    int64_t n1 = -1, s1 = -1;
    CHECK_OK(tide_store_count(s, &n1, &s1));
    CHECK(n1 == n0 && s1 == s0);
    tide_store_frame g;
    CHECK(tide_store_image(s, "killed.fits", &g) == TIDE_E_NOTFOUND);
    /* and the frame goes in once the server lets it */
    CHECK_OK(tide_store_put_frame(s, &f, &t, NULL));
    CHECK_OK(tide_store_count(s, &n1, &s1));
    CHECK(n1 == n0 + 1 && s1 == s0 + 3000);
    /* the server ends the session between two calls (a restart, an administrator): the next
     * call reconnects by itself */
    tide_store *k = NULL;
    CHECK_OK(tide_store_open(getenv("TIDE_TEST_PG"), NULL, &k));
    if (k) {
        CHECK_OK(tide_store_exec(k, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                    "WHERE application_name = 'tide' AND pid <> pg_backend_pid()"));
        tide_store_close(k);
    }
    CHECK_OK(tide_store_count(s, &n1, &s1));
    CHECK(n1 == n0 + 1 && s1 == s0 + 3000);
    sc_frame(&f, "after-restart.fits", "after-restart.fits");
    k = NULL;
    CHECK_OK(tide_store_open(getenv("TIDE_TEST_PG"), NULL, &k));
    if (k) {
        CHECK_OK(tide_store_exec(k, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                    "WHERE application_name = 'tide' AND pid <> pg_backend_pid()"));
        tide_store_close(k);
    }
    CHECK_OK(tide_store_put_frame(s, &f, &t, NULL)); /* BEGIN finds the session gone */
    CHECK_OK(tide_store_delete_frame(s, f.checksum));
    tide_table_free(&t);
}

static void test_refcat(const char *uri, tide_store *s) {
    /* a reference catalog table with a Q3C index, queried by its own column names */
    CHECK_OK(tide_store_exec(s, "CREATE SCHEMA refs; CREATE TABLE refs.\"Stars\" (ra_deg float8, "
                                "dec_deg float8, gmag real, e_gmag real, bp_rp real)"));
    char sql[256];
    int n = 5000;
    double *ra = malloc(sizeof *ra * (size_t)n), *dec = malloc(sizeof *dec * (size_t)n);
    double *mag = malloc(sizeof *mag * (size_t)n);
    for (int i = 0; i < n; i += 100) {
        char big[100 * 80 + 64];
        int k = snprintf(big, sizeof big, "INSERT INTO refs.\"Stars\" VALUES ");
        for (int j = i; j < i + 100; j++) {
            ra[j] = fmod(359.5 + sc_unif(), 360.0);
            dec[j] = -30.5 + sc_unif();
            mag[j] = (float)(12 + 8 * sc_unif());
            k += snprintf(big + k, sizeof big - (size_t)k, "%s(%.17g, %.17g, %.9g, 0.01, 0.8)",
                          j > i ? "," : "", ra[j], dec[j], mag[j]);
        }
        CHECK_OK(tide_store_exec(s, big));
    }
    snprintf(sql, sizeof sql, "CREATE INDEX ON refs.\"Stars\" (q3c_ang2ipix(ra_deg, dec_deg))");
    CHECK_OK(tide_store_exec(s, sql));
    tide_refcat_columns cols;
    memset(&cols, 0, sizeof cols);
    strcpy(cols.ra, "RA_DEG"); /* matched without regard to case */
    strcpy(cols.dec, "dec_deg");
    strcpy(cols.mag, "gmag");
    strcpy(cols.magerr, "e_gmag");
    tide_table out;
    tide_table_init(&out);
    const double cones[3][3] = {{0, -30, 0.2}, {359.9, -30.2, 0.05}, {0.3, -30, 1.0 / 3600}};
    for (int c = 0; c < 3; c++) {
        tide_table_free(&out);
        CHECK_OK(tide_store_refcat_cone(uri, "refs.Stars", &cols, cones[c][0], cones[c][1],
                                        cones[c][2], &out));
        int64_t want = 0;
        for (int i = 0; i < n; i++)
            want += tide_store_separation(cones[c][0], cones[c][1], ra[i], dec[i]) <= cones[c][2];
        CHECK(out.nrows == want);
        const double *m = tide_table_f64(&out, "MAG"), *col = tide_table_f64(&out, "COLOR");
        const double *e = tide_table_f64(&out, "MAGERR");
        CHECK(m && col && e);
        for (int64_t r = 0; m && r < out.nrows; r++) {
            CHECK(isnan(col[r]) && fabs(e[r] - 0.01) < 1e-6);
            if (r)
                CHECK(m[r] >= m[r - 1]);
        }
        if (c == 0)
            CHECK(want > 100);
    }
    tide_table_free(&out);
    CHECK(tide_store_refcat_cone(uri, "refs.missing", &cols, 0, -30, 0.1, &out) == TIDE_E_DB);
    strcpy(cols.color, "bp_rq");
    CHECK(tide_store_refcat_cone(uri, "refs.Stars", &cols, 0, -30, 0.1, &out) == TIDE_E_NOTFOUND);
    CHECK(tide_store_refcat_cone("x.db", "refs.Stars", &cols, 0, -30, 0.1, &out) == TIDE_E_INVAL);
    tide_table_free(&out);
    free(ra);
    free(dec);
    free(mag);
}

int main(void) {
    const char *uri = getenv("TIDE_TEST_PG");
    if (!uri || !*uri)
        TIDE_TEST_SKIP("TIDE_TEST_PG is not set (tests/cli/test_store_pg.sh starts a server)");
    tide_store *s = NULL;
    CHECK_OK(tide_store_open(uri, NULL, &s));
    if (!s)
        return TIDE_TEST_RESULT();
    CHECK(tide_store_get_kind(s) == TIDE_STORE_PG);
    sc_run_all(s,
               "CREATE FUNCTION tide_fail() RETURNS trigger AS $$ BEGIN IF NEW.\"SEQ\" = 500 "
               "THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$ "
               "LANGUAGE plpgsql; CREATE TRIGGER tide_fail BEFORE INSERT ON sources FOR EACH "
               "ROW EXECUTE FUNCTION tide_fail()",
               "DROP TRIGGER tide_fail ON sources; DROP FUNCTION tide_fail()", 300);
    test_killed_connection(s);
    /* a second handle (the URI form when given) sees the same rows; schema creation is
     * idempotent */
    const char *uri2 = getenv("TIDE_TEST_PG_URI");
    tide_store *s2 = NULL;
    CHECK_OK(tide_store_open(uri2 && *uri2 ? uri2 : uri, NULL, &s2));
    int64_t a = -1, b = -1, c = -2, d = -2;
    CHECK_OK(tide_store_count(s, &a, &b));
    if (s2)
        CHECK_OK(tide_store_count(s2, &c, &d));
    CHECK(a == c && b == d);
    tide_store_close(s2);
    /* a read-only handle reads the same rows and cannot write: the session's transactions are
     * read-only, also after a reconnection (issue 22) */
    tide_store_options ro;
    tide_store_options_init(&ro);
    ro.read_only = 1;
    tide_store *r = NULL;
    CHECK_OK(tide_store_open(uri, &ro, &r));
    if (r) {
        c = d = -2;
        CHECK_OK(tide_store_count(r, &c, &d));
        CHECK(a == c && b == d);
        CHECK(tide_store_exec(r, "CREATE TABLE tide_ro_probe (x int)") == TIDE_E_DB);
        CHECK(strstr(tide_error_detail(), "read-only") != NULL);
        CHECK_OK(tide_store_exec(s, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                    "WHERE application_name = 'tide' AND pid <> pg_backend_pid()"));
        c = d = -2;
        CHECK_OK(tide_store_count(r, &c, &d)); /* reconnects */
        CHECK(a == c && b == d);
        CHECK(tide_store_exec(r, "CREATE TABLE tide_ro_probe (x int)") == TIDE_E_DB);
        tide_store_close(r);
    }
    test_refcat(uri, s);
    tide_store_close(s);
    return TIDE_TEST_RESULT();
}
