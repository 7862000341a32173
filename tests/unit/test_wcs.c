/* test_wcs.c — tide_wcs on the real files of ../shared/data/wcs/: round trips, header
 * write-back, summaries, errors (TNX, no WCS), frames (FK4), cubes, concurrent readers.
 * Agreement with astropy is tests/peer/test_wcs_astropy.py. */
#include <fitsio.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tide/tide.h"
#include "tide_test.h"

/* The primary header of a file through cfitsio (independent of tide's FITS reader). */
static int read_header(const char *path, tide_header *h) {
    fitsfile *f;
    int st = 0, nkeys = 0;
    char *cards = NULL;
    tide_header_init(h);
    if (fits_open_file(&f, path, READONLY, &st))
        return -1;
    fits_hdr2str(f, 0, NULL, 0, &cards, &nkeys, &st);
    int st2 = 0;
    fits_close_file(f, &st2);
    if (st)
        return -1;
    int rc = tide_header_parse(h, cards, nkeys);
    fits_free_memory(cards, &st2);
    return rc;
}

static tide_wcs *load(const char *rel) {
    tide_header h;
    const char *path = tide_test_data(rel);
    if (read_header(path, &h)) {
        fprintf(stderr, "cannot read %s\n", path);
        tide_test_failures++;
        return NULL;
    }
    tide_wcs *w = NULL;
    CHECK_OK(tide_wcs_from_header(&h, rel, &w));
    tide_header_free(&h);
    return w;
}

static double dlon(double a, double b) {
    double d = fmod(a - b, 360.0);
    if (d > 180)
        d -= 360;
    if (d < -180)
        d += 360;
    return d;
}

/* A grid of n x n pixels over a w x h frame (with a margin outside it). */
static int grid(int64_t w, int64_t h, int n, double *x, double *y) {
    int k = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            x[k] = -0.5 + (double)(w + 1) * i / (n - 1) - 0.3;
            y[k] = -0.5 + (double)(h + 1) * j / (n - 1) + 0.2;
            k++;
        }
    return k;
}

/* pix -> sky -> pix closes to 1e-6 px (1e-9 px is what we see), and to_header -> from_header
 * reproduces pix2sky to 1e-10 degree. */
static void test_file(const char *rel, int64_t width, int64_t height, int expect_sip,
                      int expect_tpv) {
    tide_wcs *w = load(rel);
    if (!w)
        return;
    enum { N = 21 };
    double x[N * N], y[N * N], ra[N * N], de[N * N], x2[N * N], y2[N * N];
    int n = grid(width, height, N, x, y);
    CHECK_OK(tide_wcs_pix2sky(w, n, x, y, ra, de));
    CHECK_OK(tide_wcs_sky2pix(w, n, ra, de, x2, y2));
    int valid = 0;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        if (isnan(ra[i]))
            continue;
        valid++;
        CHECK(ra[i] >= 0 && ra[i] < 360 && de[i] >= -90 && de[i] <= 90);
        double e = fmax(fabs(x2[i] - x[i]), fabs(y2[i] - y[i]));
        if (e > worst)
            worst = e;
    }
    printf("%-22s %3d/%d valid, round trip worst %.2e px\n", rel, valid, n, worst);
    CHECK(valid >= n * 3 / 4);
    CHECK(worst < 1e-6);

    tide_wcs_summary s;
    CHECK_OK(tide_wcs_summarize(w, width, height, &s));
    CHECK(s.has_sip == expect_sip);
    CHECK(s.has_tpv == expect_tpv);

    /* header write-back round trip, into a header that already holds the old keywords */
    tide_header h;
    CHECK(read_header(tide_test_data(rel), &h) == 0);
    CHECK_OK(tide_wcs_to_header(w, &h));
    tide_wcs *w2 = NULL;
    CHECK_OK(tide_wcs_from_header(&h, "written", &w2));
    if (w2) {
        double ra2[N * N], de2[N * N];
        CHECK_OK(tide_wcs_pix2sky(w2, n, x, y, ra2, de2));
        double e = 0;
        for (int i = 0; i < n; i++) {
            if (isnan(ra[i]) != isnan(ra2[i]))
                e = INFINITY;
            if (isnan(ra[i]))
                continue;
            e = fmax(e, fmax(fabs(dlon(ra2[i], ra[i])), fabs(de2[i] - de[i])));
        }
        printf("%-22s header round trip worst %.2e deg\n", rel, e);
        CHECK(e <= 1e-10);
        tide_wcs_summary s2;
        CHECK_OK(tide_wcs_summarize(w2, width, height, &s2));
        CHECK(s2.has_sip == expect_sip && s2.has_tpv == expect_tpv);
        CHECK(!strcmp(s2.ctype1, s.ctype1));
        tide_wcs_free(w2);
    }
    /* a second write into the written header changes nothing */
    tide_header h2;
    tide_header_init(&h2);
    CHECK_OK(tide_header_copy(&h2, &h));
    CHECK_OK(tide_wcs_to_header(w, &h2));
    CHECK(h2.ncards == h.ncards);
    if (h2.ncards == h.ncards)
        for (int i = 0; i < h.ncards; i++)
            CHECK(!strcmp(h.cards[i], h2.cards[i]));
    tide_header_free(&h2);
    tide_header_free(&h);
    tide_wcs_free(w);
}

static void test_sip_summary(void) {
    tide_wcs *w = load("wcs/sipsample.fits");
    if (!w)
        return;
    tide_wcs_summary s;
    CHECK_OK(tide_wcs_summarize(w, 256, 256, &s));
    printf("sipsample: centre %.6f %.6f scale %.5f\"/px rot %.4f fov %.4f x %.4f %s %g\n",
           s.ra_center, s.dec_center, s.scale_arcsec, s.rotation_deg, s.fov_x_deg, s.fov_y_deg,
           s.radesys, s.equinox);
    CHECK(!strcmp(s.ctype1, "RA---TAN-SIP") && !strcmp(s.ctype2, "DEC--TAN-SIP"));
    CHECK(!strcmp(s.radesys, "ICRS"));
    CHECK(isnan(s.equinox));
    /* PA = 137.36 (E of N, of axis 2) and PXSCAL = 1.2233 "/px in the header, both at CRPIX
     * and without the SIP terms; the centre is half a pixel away. */
    CHECK_CLOSE(s.rotation_deg, 137.36, 0.1);
    CHECK_CLOSE(s.scale_arcsec, 1.2233, 0.01);
    CHECK_CLOSE(s.ra_center, 202.4823, 0.01);
    CHECK_CLOSE(s.dec_center, 47.1751, 0.01);
    CHECK_CLOSE(s.fov_x_deg, 256 * 1.2233 / 3600, 0.003);
    CHECK_CLOSE(s.fov_y_deg, 256 * 1.2233 / 3600, 0.003);
    CHECK(!strcmp(tide_wcs_projection(w), "TAN"));
    tide_wcs_free(w);

    w = load("wcs/tpv.fits");
    if (!w)
        return;
    CHECK_OK(tide_wcs_summarize(w, 512, 512, &s));
    printf("tpv: centre %.6f %.6f scale %.5f\"/px rot %.4f %s\n", s.ra_center, s.dec_center,
           s.scale_arcsec, s.rotation_deg, s.radesys);
    CHECK(!strcmp(s.ctype1, "RA---TPV"));
    CHECK(s.has_tpv && !s.has_sip);
    CHECK_CLOSE(s.scale_arcsec, 0.27, 0.02); /* PIXSCAL1 = 0.270 */
    tide_wcs_free(w);
}

/* Stripping removes the primary WCS with its SIP terms, and only that. */
static void test_strip(void) {
    tide_header h;
    const char *path = tide_test_data("wcs/sipsample.fits");
    if (read_header(path, &h)) {
        fprintf(stderr, "cannot read %s\n", path);
        tide_test_failures++;
        return;
    }
    CHECK_OK(tide_header_set_dbl(&h, "RA", 202.48, "pointing"));
    CHECK_OK(tide_header_set_str(&h, "CTYPE1A", "RA---TAN", "an alternate WCS"));
    const int before = h.ncards;
    tide_wcs_strip_header(&h);
    printf("strip: %d cards -> %d\n", before, h.ncards);
    CHECK(h.ncards < before);
    const char *gone[] = {"CTYPE1", "CRPIX2", "CRVAL1",   "CD1_1",  "A_ORDER",
                          "A_0_2",  "B_2_0",  "AP_ORDER", "RADESYS"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        CHECK(tide_header_find(&h, gone[i]) < 0);
    CHECK(tide_header_find(&h, "RA") >= 0 && tide_header_find(&h, "CTYPE1A") >= 0);
    tide_header_remove(&h, "CTYPE1A");
    tide_wcs *w = NULL;
    CHECK(tide_wcs_from_header(&h, "stripped", &w) == TIDE_E_NOTFOUND);
    tide_error_clear();
    tide_header_free(&h);
}

static void test_errors(void) {
    tide_header h;
    tide_wcs *w = (tide_wcs *)1;
    CHECK(read_header(tide_test_data("wcs/tnx.fits"), &h) == 0);
    int st = tide_wcs_from_header(&h, "tnx.fits[0]", &w);
    printf("tnx: %s: %s\n", tide_strerror(st), tide_error_detail());
    CHECK(st == TIDE_E_UNSUPPORTED);
    CHECK(w == NULL);
    CHECK(strstr(tide_error_detail(), "TNX") != NULL);
    CHECK(strstr(tide_error_detail(), "tnx.fits[0]") != NULL);
    tide_header_free(&h);

    CHECK(read_header(tide_test_data("sep/image.fits"), &h) == 0);
    st = tide_wcs_from_header(&h, "image.fits", &w);
    printf("no wcs: %s: %s\n", tide_strerror(st), tide_error_detail());
    CHECK(st == TIDE_E_NOTFOUND);
    CHECK(strstr(tide_error_detail(), "image.fits") != NULL);
    tide_header_free(&h);

    /* a linear (non-celestial) WCS */
    tide_header_init(&h);
    tide_header_set_int(&h, "NAXIS", 2, NULL);
    tide_header_set_str(&h, "CTYPE1", "LINEAR", NULL);
    tide_header_set_str(&h, "CTYPE2", "LINEAR", NULL);
    tide_header_set_dbl(&h, "CDELT1", 2.0, NULL);
    st = tide_wcs_from_header(&h, "linear", &w);
    CHECK(st == TIDE_E_NOTFOUND);
    tide_header_free(&h);

    /* ZPX through its CTYPE, and an unknown projection code */
    tide_header_init(&h);
    tide_header_set_str(&h, "CTYPE1", "RA---ZPX", NULL);
    tide_header_set_str(&h, "CTYPE2", "DEC--ZPX", NULL);
    st = tide_wcs_from_header(&h, "zpx.fits", &w);
    CHECK(st == TIDE_E_UNSUPPORTED && strstr(tide_error_detail(), "ZPX"));
    tide_header_set_str(&h, "CTYPE1", "RA---QQQ", NULL);
    tide_header_set_str(&h, "CTYPE2", "DEC--QQQ", NULL);
    st = tide_wcs_from_header(&h, "qqq.fits", &w);
    printf("unknown projection: %s: %s\n", tide_strerror(st), tide_error_detail());
    CHECK(st == TIDE_E_UNSUPPORTED && strstr(tide_error_detail(), "QQQ"));
    tide_header_free(&h);
}

/* A plain TAN header. */
static void tan_header(tide_header *h, double ra0, double dec0) {
    tide_header_init(h);
    tide_header_set_int(h, "NAXIS", 2, NULL);
    tide_header_set_int(h, "NAXIS1", 100, NULL);
    tide_header_set_int(h, "NAXIS2", 80, NULL);
    tide_header_set_str(h, "CTYPE1", "RA---TAN", NULL);
    tide_header_set_str(h, "CTYPE2", "DEC--TAN", NULL);
    tide_header_set_dbl(h, "CRPIX1", 50.5, NULL);
    tide_header_set_dbl(h, "CRPIX2", 40.5, NULL);
    tide_header_set_dbl(h, "CRVAL1", ra0, NULL);
    tide_header_set_dbl(h, "CRVAL2", dec0, NULL);
    tide_header_set_dbl(h, "CD1_1", -1e-3, NULL);
    tide_header_set_dbl(h, "CD1_2", 0.0, NULL);
    tide_header_set_dbl(h, "CD2_1", 0.0, NULL);
    tide_header_set_dbl(h, "CD2_2", 1e-3, NULL);
}

/* FK4 B1950: coordinates stay in the header's frame (CRPIX maps to CRVAL exactly) and the
 * summary names it; EPOCH stands in for EQUINOX in old headers. */
static void test_frames(void) {
    tide_header h;
    tan_header(&h, 150.0, 20.0);
    tide_header_set_str(&h, "RADESYS", "FK4", NULL);
    tide_header_set_dbl(&h, "EQUINOX", 1950.0, NULL);
    tide_wcs *w = NULL;
    CHECK_OK(tide_wcs_from_header(&h, "fk4", &w));
    if (w) {
        double x = 49.5, y = 39.5, ra, de;
        CHECK_OK(tide_wcs_pix2sky(w, 1, &x, &y, &ra, &de));
        CHECK_CLOSE(ra, 150.0, 1e-12);
        CHECK_CLOSE(de, 20.0, 1e-12);
        tide_wcs_summary s;
        CHECK_OK(tide_wcs_summarize(w, 100, 80, &s));
        CHECK(!strcmp(s.radesys, "FK4"));
        CHECK_CLOSE(s.equinox, 1950.0, 0);
        /* north up, east left: +y points north */
        CHECK_CLOSE(s.rotation_deg, 0.0, 1e-6);
        CHECK_CLOSE(s.scale_arcsec, 3.6, 1e-6);
        tide_wcs_free(w);
    }
    tide_header_free(&h);

    /* EQUINOX 1950 alone means FK4 (FITS WCS Paper II, Sect. 3.1) */
    tan_header(&h, 150.0, 20.0);
    tide_header_set_dbl(&h, "EPOCH", 1950.0, NULL);
    CHECK_OK(tide_wcs_from_header(&h, "epoch", &w));
    if (w) {
        tide_wcs_summary s;
        CHECK_OK(tide_wcs_summarize(w, 100, 80, &s));
        printf("EPOCH 1950: radesys %s equinox %g\n", s.radesys, s.equinox);
        CHECK(!strcmp(s.radesys, "FK4"));
        CHECK_CLOSE(s.equinox, 1950.0, 0);
        tide_wcs_free(w);
    }
    tide_header_free(&h);

    /* EQUINOX 2000 alone means FK5 */
    tan_header(&h, 150.0, 20.0);
    tide_header_set_dbl(&h, "EQUINOX", 2000.0, NULL);
    CHECK_OK(tide_wcs_from_header(&h, "fk5", &w));
    if (w) {
        tide_wcs_summary s;
        CHECK_OK(tide_wcs_summarize(w, 100, 80, &s));
        CHECK(!strcmp(s.radesys, "FK5"));
        tide_wcs_free(w);
    }
    tide_header_free(&h);

    /* +y pointing east: position angle +90 */
    tan_header(&h, 150.0, 20.0);
    tide_header_set_dbl(&h, "CD1_1", 0.0, NULL);
    tide_header_set_dbl(&h, "CD1_2", 1e-3, NULL);
    tide_header_set_dbl(&h, "CD2_1", 1e-3, NULL);
    tide_header_set_dbl(&h, "CD2_2", 0.0, NULL);
    CHECK_OK(tide_wcs_from_header(&h, "east", &w));
    if (w) {
        tide_wcs_summary s;
        CHECK_OK(tide_wcs_summarize(w, 100, 80, &s));
        CHECK_CLOSE(s.rotation_deg, 90.0, 1e-6);
        tide_wcs_free(w);
    }
    tide_header_free(&h);

    /* rotated 30 degrees (+y towards east of north), CD written with CROTA2 */
    tide_header_init(&h);
    tide_header_set_str(&h, "CTYPE1", "RA---TAN", NULL);
    tide_header_set_str(&h, "CTYPE2", "DEC--TAN", NULL);
    tide_header_set_dbl(&h, "CRPIX1", 50.5, NULL);
    tide_header_set_dbl(&h, "CRPIX2", 40.5, NULL);
    tide_header_set_dbl(&h, "CRVAL1", 10.0, NULL);
    tide_header_set_dbl(&h, "CRVAL2", -30.0, NULL);
    tide_header_set_dbl(&h, "CDELT1", -2e-4, NULL);
    tide_header_set_dbl(&h, "CDELT2", 2e-4, NULL);
    tide_header_set_dbl(&h, "CROTA2", 30.0, NULL);
    CHECK_OK(tide_wcs_from_header(&h, "crota", &w));
    if (w) {
        tide_wcs_summary s;
        CHECK_OK(tide_wcs_summarize(w, 100, 80, &s));
        printf("CROTA2 30: rotation %.6f scale %.6f\n", s.rotation_deg, s.scale_arcsec);
        /* PC = [[cos, -sin], [sin, cos]] (Paper II eq. 188): with east to the left, CROTA2
         * turns +y from north towards west */
        CHECK_CLOSE(s.rotation_deg, -30.0, 1e-6);
        CHECK_CLOSE(s.scale_arcsec, 0.72, 1e-6);
        tide_wcs_free(w);
    }
    tide_header_free(&h);
}

/* A cube: RA, DEC, FREQ; the celestial pair is kept. Also DEC on axis 1, RA on axis 2. */
static void test_axes(void) {
    tide_header h;
    tan_header(&h, 83.0, -5.0);
    tide_header_set_int(&h, "NAXIS", 3, NULL);
    tide_header_set_int(&h, "NAXIS3", 4, NULL);
    tide_header_set_str(&h, "CTYPE3", "FREQ", NULL);
    tide_header_set_dbl(&h, "CRVAL3", 1.4e9, NULL);
    tide_header_set_dbl(&h, "CDELT3", 1e6, NULL);
    tide_header_set_dbl(&h, "CRPIX3", 1.0, NULL);
    tide_wcs *w = NULL;
    CHECK_OK(tide_wcs_from_header(&h, "cube", &w));
    if (w) {
        double x = 49.5, y = 39.5 + 100, ra, de;
        CHECK_OK(tide_wcs_pix2sky(w, 1, &x, &y, &ra, &de));
        CHECK_CLOSE(ra, 83.0, 1e-9);
        CHECK(de > -5.0 + 0.09 && de < -5.0 + 0.11);
        tide_wcs_free(w);
    }
    tide_header_free(&h);

    tan_header(&h, 83.0, -5.0);
    tide_header_set_str(&h, "CTYPE1", "DEC--TAN", NULL);
    tide_header_set_str(&h, "CTYPE2", "RA---TAN", NULL);
    tide_header_set_dbl(&h, "CRVAL1", -5.0, NULL);
    tide_header_set_dbl(&h, "CRVAL2", 83.0, NULL);
    CHECK_OK(tide_wcs_from_header(&h, "swapped", &w));
    if (w) {
        double x = 49.5 + 100, y = 39.5, ra, de, x2, y2;
        CHECK_OK(tide_wcs_pix2sky(w, 1, &x, &y, &ra, &de));
        CHECK_CLOSE(ra, 83.0, 1e-9); /* axis 1 is Dec: x moves along Dec */
        CHECK(de < -5.0 - 0.09 && de > -5.0 - 0.11);
        CHECK_OK(tide_wcs_sky2pix(w, 1, &ra, &de, &x2, &y2));
        CHECK_CLOSE(x2, x, 1e-8);
        CHECK_CLOSE(y2, y, 1e-8);
        tide_wcs_free(w);
    }
    tide_header_free(&h);
}

/* Concurrent readers get bit-identical results to a serial call. */
enum { TN = 20000, NTHREADS = 24 };
typedef struct {
    const tide_wcs *w;
    const double *x, *y;
    double ra[TN], de[TN];
    int st;
} job;

static void *worker(void *arg) {
    job *j = arg;
    j->st = 0;
    for (int rep = 0; rep < 3 && !j->st; rep++)
        j->st = tide_wcs_pix2sky(j->w, TN, j->x, j->y, j->ra, j->de);
    return NULL;
}

static void test_threads(void) {
    tide_wcs *w = load("wcs/sipsample.fits");
    if (!w)
        return;
    static double x[TN], y[TN], ra[TN], de[TN];
    for (int i = 0; i < TN; i++) {
        x[i] = (i * 37) % 256 + 0.25;
        y[i] = (i * 91) % 256 - 0.25;
    }
    CHECK_OK(tide_wcs_pix2sky(w, TN, x, y, ra, de));
    static job jobs[NTHREADS];
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        jobs[t].w = w;
        jobs[t].x = x;
        jobs[t].y = y;
        pthread_create(&th[t], NULL, worker, &jobs[t]);
    }
    int same = 1;
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        CHECK(jobs[t].st == 0);
        same &= !memcmp(jobs[t].ra, ra, sizeof ra) && !memcmp(jobs[t].de, de, sizeof de);
    }
    CHECK(same);

    /* one large (internally parallel) batch equals small serial batches bit for bit */
    enum { BIG = 100003 };
    double *bx = malloc(sizeof(double) * BIG * 6), *by = bx + BIG, *br = by + BIG;
    double *bd = br + BIG, *sr = bd + BIG, *sd = sr + BIG;
    for (int i = 0; i < BIG; i++) {
        bx[i] = ((long long)i * 7919) % 2560 * 0.1 - 0.5;
        by[i] = ((long long)i * 104729) % 2560 * 0.1 - 0.5;
    }
    CHECK_OK(tide_wcs_pix2sky(w, BIG, bx, by, br, bd));
    for (int i0 = 0; i0 < BIG; i0 += 1000)
        CHECK_OK(tide_wcs_pix2sky(w, BIG - i0 < 1000 ? BIG - i0 : 1000, bx + i0, by + i0, sr + i0,
                                  sd + i0));
    CHECK(!memcmp(br, sr, sizeof(double) * BIG) && !memcmp(bd, sd, sizeof(double) * BIG));
    CHECK_OK(tide_wcs_sky2pix(w, BIG, br, bd, sr, sd));
    double e = 0;
    for (int i = 0; i < BIG; i++)
        e = fmax(e, fmax(fabs(sr[i] - bx[i]), fabs(sd[i] - by[i])));
    CHECK(e < 1e-6);
    free(bx);
    tide_wcs_free(w);
}

int main(void) {
    test_file("wcs/1904-66_TAN.fits", 192, 192, 0, 0);
    test_file("wcs/1904-66_ZEA.fits", 192, 192, 0, 0);
    test_file("wcs/1904-66_ZPN.fits", 192, 192, 0, 0);
    test_file("wcs/sipsample.fits", 256, 256, 1, 0);
    test_file("wcs/tpv.fits", 512, 512, 0, 1);
    test_sip_summary();
    test_strip();
    test_errors();
    test_frames();
    test_axes();
    test_threads();
    return TIDE_TEST_RESULT();
}
