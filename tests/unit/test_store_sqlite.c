/* test_store_sqlite.c — the SQLite catalog store: HEALPix cells and disc covers, SHA-256,
 * URI dispatch, cone searches equal to a brute-force scan (RA wrap, poles, 1" to degrees),
 * round trips of every column, replacement of a re-processed frame, rollback of a frame that
 * fails half-way, an unreachable PostgreSQL server failing fast after bounded retries, and the
 * background WAL checkpointer (frames reach the file while the store is open). */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "store/skycell.h"
#include "store_check.h"

static void test_sha256(void) {
    char h[72];
    tide_store_sha256_hex("abc", 3, h); /* FIPS 180-4 examples */
    CHECK(!strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    tide_store_sha256_hex("", 0, h);
    CHECK(!strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    tide_store_sha256_hex(m, (int64_t)strlen(m), h);
    CHECK(!strcmp(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    /* a file, read in chunks: a million 'a' (FIPS 180-2 appendix B.3) */
    char path[] = "/tmp/tide-sha-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    char *buf = malloc(1000000);
    memset(buf, 'a', 1000000);
    CHECK(write(fd, buf, 1000000) == 1000000);
    close(fd);
    free(buf);
    CHECK_OK(tide_store_file_checksum(path, h));
    CHECK(!strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    unlink(path);
    CHECK(tide_store_file_checksum("/nonexistent/x.fits", h) == TIDE_E_IO);
}

/* Every point lies in the cell whose centre is near it; centres map back to their cell; cell
 * indices cover 0 .. 12 nside^2 - 1; covers contain the cell of every point inside a disc. */
static void test_skycell(void) {
    const int order = TIDE_SKYCELL_ORDER;
    const int64_t ncell = 12 * ((int64_t)1 << (2 * order));
    const double cell_deg = sqrt(41252.96 / (double)ncell); /* mean cell size */
    int bad_center = 0, bad_dist = 0, bad_range = 0;
    for (int i = 0; i < 200000; i++) {
        double ra = 360.0 * sc_unif(), dec = asin(2.0 * sc_unif() - 1.0) * 180.0 / M_PI;
        if (i % 10 == 0) /* near the poles and on the zone boundaries */
            dec = (i % 20 ? 1 : -1) * (90.0 - 0.01 * sc_unif());
        if (i % 10 == 1)
            dec = asin(2.0 / 3.0) * 180.0 / M_PI + (sc_unif() - 0.5) * 1e-6;
        int64_t p = tide_skycell_index(order, ra, dec);
        if (p < 0 || p >= ncell) {
            bad_range++;
            continue;
        }
        double cra, cdec;
        tide_skycell_center(order, p, &cra, &cdec);
        if (tide_skycell_index(order, cra, cdec) != p)
            bad_center++;
        if (tide_store_separation(ra, dec, cra, cdec) > 1.5 * cell_deg)
            bad_dist++;
    }
    CHECK(bad_range == 0 && bad_center == 0 && bad_dist == 0);
    CHECK(tide_skycell_index(order, NAN, 0) == -1);
    CHECK(tide_skycell_index(order, 360.0, 0) == tide_skycell_index(order, 0.0, 0));
    CHECK(tide_skycell_index(0, 0.5, 0) == 4); /* base face 4 is centred on (0, 0) */
    CHECK(tide_skycell_index(0, 45, 60) == 0 && tide_skycell_index(0, 45, -60) == 8);

    /* covers: every random point within the radius has its cell in the ranges */
    int missed = 0;
    int64_t maxr = 0;
    for (int k = 0; k < 300; k++) {
        double ra = 360.0 * sc_unif(), dec = asin(2.0 * sc_unif() - 1.0) * 180.0 / M_PI;
        if (k % 7 == 0)
            dec = 89.99;
        if (k % 7 == 1)
            ra = 0.0001;
        double rad = pow(10.0, -3.5 + 4.3 * sc_unif());
        int64_t *rg = NULL, nrg = 0;
        CHECK_OK(tide_skycell_cover(order, ra, dec, rad, &rg, &nrg));
        if (nrg > maxr)
            maxr = nrg;
        for (int i = 1; i < nrg; i++)
            CHECK(rg[2 * i] > rg[2 * i - 1] + 1); /* sorted, merged */
        for (int j = 0; j < 400; j++) {
            /* a point at a random distance up to the radius (more near the edge) */
            double t = sqrt(sc_unif()) * rad, pa = 2 * M_PI * sc_unif();
            double d0 = dec * M_PI / 180, tt = t * M_PI / 180;
            double sd = sin(d0) * cos(tt) + cos(d0) * sin(tt) * cos(pa);
            double pd = asin(sd > 1 ? 1 : sd < -1 ? -1 : sd);
            double pr =
                ra * M_PI / 180 + atan2(sin(pa) * sin(tt) * cos(d0), cos(tt) - sin(d0) * sin(pd));
            double pra = fmod(pr * 180 / M_PI + 720.0, 360.0), pdec = pd * 180 / M_PI;
            if (!(tide_store_separation(ra, dec, pra, pdec) <= rad))
                continue;
            int64_t p = tide_skycell_index(order, pra, pdec);
            int in = 0;
            for (int64_t i = 0; i < nrg && !in; i++)
                in = p >= rg[2 * i] && p <= rg[2 * i + 1];
            missed += !in;
        }
        free(rg);
    }
    CHECK(missed == 0);
    printf("skycell: covers checked, at most %lld ranges\n", (long long)maxr);
    int64_t *rg = NULL, nrg = 0;
    CHECK_OK(tide_skycell_cover(order, 10, 20, 180, &rg, &nrg));
    CHECK(nrg == 1 && rg[0] == 0 && rg[1] == ncell - 1);
    free(rg);
    clock_t c0 = clock();
    CHECK_OK(tide_skycell_cover(order, 10, 20, 5, &rg, &nrg));
    printf("skycell: 5 deg cone -> %lld ranges in %.1f ms\n", (long long)nrg,
           1e3 * (double)(clock() - c0) / CLOCKS_PER_SEC);
    free(rg);
    CHECK(tide_skycell_cover(order, 10, 20, -1, &rg, &nrg) == TIDE_E_INVAL);
}

static void test_dispatch(void) {
    tide_store *s = NULL;
    CHECK(tide_store_open("mysql://x", NULL, &s) == TIDE_E_INVAL && !s);
    CHECK(tide_store_open("", NULL, &s) == TIDE_E_INVAL);
    CHECK(tide_store_open("sqlite:/nonexistent/dir/x.db", NULL, &s) == TIDE_E_DB && !s);

    /* an unreachable server: TIDE_E_DB after the bounded retries, quickly, naming the target
     * and never the password */
    tide_store_options o;
    tide_store_options_init(&o);
    CHECK(o.connect_attempts == 3 && o.retry_delay_ms == 200);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int st = tide_store_open("postgresql://tide:s3cret@127.0.0.1:1/catalog", &o, &s);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    CHECK(st == TIDE_E_DB && !s);
    const char *d = tide_error_detail();
    printf("unreachable: %.2f s: %s\n", sec, d);
    CHECK(strstr(d, "127.0.0.1") && strstr(d, "port=1") && strstr(d, "dbname=catalog"));
    CHECK(strstr(d, "3 attempts"));
    CHECK(!strstr(d, "s3cret"));
    CHECK(sec >= 0.65 && sec < 5.0); /* waited 0.2 + 0.5 s between the three attempts */
    o.connect_attempts = 1;
    tide_table rc;
    tide_table_init(&rc);
    CHECK(tide_store_refcat_cone("pg:host=127.0.0.1 port=1 password=s3cret connect_timeout=2",
                                 "refcat", NULL, 10, 20, 1, &rc) == TIDE_E_DB);
    CHECK(!strstr(tide_error_detail(), "s3cret"));
}

/* The images row from a catalog header: the values the pipeline writes, the WCS summary. */
static void test_frame_from_header(void) {
    tide_header h;
    tide_header_init(&h);
    CHECK_OK(tide_header_set_int(&h, "NAXIS1", 2000, NULL));
    CHECK_OK(tide_header_set_int(&h, "NAXIS2", 1000, NULL));
    CHECK_OK(tide_header_set_str(&h, "DATE-OBS", "2026-11-30T01:02:03", NULL));
    CHECK_OK(tide_header_set_dbl(&h, "MJD-OBS", 61009.5, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "EXPTIME", 60, NULL));
    CHECK_OK(tide_header_set_str(&h, "FILTER", "g", NULL));
    CHECK_OK(tide_header_set_dbl(&h, "AIRMASS", 1.25, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "ZP", 24.75, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "EZP", 0.003, NULL));
    CHECK_OK(tide_header_set_int(&h, "CATNSTAR", 150, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "MAGLIM5", 21.5, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "MAGLIM3", 22.05, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "SKYLEVEL", 812.5, NULL));
    CHECK_OK(tide_header_set_str(&h, "CTYPE1", "RA---TAN", NULL));
    CHECK_OK(tide_header_set_str(&h, "CTYPE2", "DEC--TAN", NULL));
    CHECK_OK(tide_header_set_dbl(&h, "CRPIX1", 1000.5, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "CRPIX2", 500.5, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "CRVAL1", 150.0, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "CRVAL2", 2.0, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "CD1_1", -1.0 / 3600, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "CD1_2", 0, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "CD2_1", 0, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "CD2_2", 1.0 / 3600, NULL));
    tide_store_frame f;
    tide_store_frame_init(&f);
    CHECK_OK(tide_store_frame_from_header(&f, &h));
    CHECK(f.naxis1 == 2000 && f.naxis2 == 1000 && f.mjd == 61009.5 && f.exptime == 60);
    CHECK(!strcmp(f.filter, "g") && !strcmp(f.date_obs, "2026-11-30T01:02:03"));
    CHECK(f.airmass == 1.25 && f.zp == 24.75 && f.ezp == 0.003 && f.zp_nstar == 150);
    CHECK(f.maglim5 == 21.5 && f.maglim3 == 22.05 && f.sky == 812.5);
    CHECK_CLOSE(f.ra_center, 150.0, 1e-9);
    CHECK_CLOSE(f.dec_center, 2.0, 1e-9);
    CHECK_CLOSE(f.scale_arcsec, 1.0, 1e-9);
    CHECK_CLOSE(f.fov_w_deg, 2000.0 / 3600, 1e-5); /* TAN: great circle, 0.016" short */
    CHECK_CLOSE(f.fov_h_deg, 1000.0 / 3600, 1e-5);
    CHECK(f.header && strlen(f.header) % 80 == 0 && strstr(f.header, "MAGLIM5 ="));
    tide_store_frame_free(&f);
    CHECK(f.header == NULL);
    tide_header_free(&h);
}

static int64_t file_size(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* The background checkpointer: after a put the frame reaches the database file while the
 * store stays open (SQLite's own checkpoint, now a backstop at 16384 pages, would leave it in
 * the WAL); a second handle reading between puts sees every frame; after close the WAL is
 * gone and a fresh handle reads everything. */
static void test_checkpointer(const char *dir) {
    char path[300], wal[310];
    snprintf(path, sizeof path, "%s/ckpt.db", dir);
    snprintf(wal, sizeof wal, "%s-wal", path);
    tide_store *s = NULL, *r = NULL;
    CHECK_OK(tide_store_open(path, NULL, &s));
    CHECK_OK(tide_store_open(path, NULL, &r));
    if (!s || !r) {
        tide_store_close(s);
        tide_store_close(r);
        return;
    }
    int64_t total = 0;
    for (int k = 0; k < 6; k++) {
        tide_table t;
        CHECK_OK(sc_catalog(&t, 4000 + 500 * k, k % 4, 0.25 * k));
        tide_store_frame f;
        char name[32];
        snprintf(name, sizeof name, "ckpt-%d.fits", k);
        sc_frame(&f, name, name);
        int64_t before = file_size(path), id = -1;
        CHECK_OK(tide_store_put_frame(s, &f, &t, &id));
        total += t.nrows;
        /* the checkpoint runs on its own thread: wait for the file to grow (at most 5 s) */
        int64_t after = file_size(path);
        for (int w = 0; w < 500 && after <= before; w++) {
            struct timespec ts = {0, 10000000L};
            nanosleep(&ts, NULL);
            after = file_size(path);
        }
        CHECK(after > before);
        int64_t ni = -1, ns = -1;
        CHECK_OK(tide_store_count(r, &ni, &ns));
        CHECK(ni == k + 1 && ns == total);
        tide_table_free(&t);
    }
    tide_store_close(r);
    tide_store_close(s);
    CHECK(file_size(wal) <= 0); /* the last close checkpoints and removes the WAL */
    CHECK_OK(tide_store_open(path, NULL, &s));
    int64_t ni = -1, ns = -1;
    if (s)
        CHECK_OK(tide_store_count(s, &ni, &ns));
    CHECK(ni == 6 && ns == total);
    tide_store_close(s);
}

int main(void) {
    test_frame_from_header();
    test_sha256();
    test_skycell();
    test_dispatch();

    char dir[] = "/tmp/tide-store-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/catalog.db", dir);
    tide_store *s = NULL;
    CHECK_OK(tide_store_open(path, NULL, &s));
    if (s) {
        CHECK(tide_store_get_kind(s) == TIDE_STORE_SQLITE);
        sc_run_all(s,
                   "CREATE TRIGGER tide_fail BEFORE INSERT ON sources WHEN NEW.SEQ = 500 "
                   "BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
                   "DROP TRIGGER tide_fail", 300);
        int64_t ni = 0, ns = 0;
        CHECK_OK(tide_store_count(s, &ni, &ns));
        tide_store_close(s);
        /* reopened through the sqlite: form, the rows are all there */
        char uri[300];
        snprintf(uri, sizeof uri, "sqlite:%s", path);
        s = NULL;
        CHECK_OK(tide_store_open(uri, NULL, &s));
        int64_t ni2 = -1, ns2 = -1;
        if (s)
            CHECK_OK(tide_store_count(s, &ni2, &ns2));
        CHECK(ni2 == ni && ns2 == ns);
        tide_store_close(s);
    }
    test_checkpointer(dir);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    return TIDE_TEST_RESULT();
}
