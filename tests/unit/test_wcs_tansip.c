/* test_wcs_tansip.c — the compact TAN/TAN-SIP evaluator (CPU twin) against wcslib through
 * tide_wcs: pixel -> sky to 1e-9 degree, sky -> pixel to 1e-7 px, on the real SIP and TAN
 * files and on synthetic headers (order-9 SIP without AP/BP, LONPOLE != 180, a pole, the
 * low-order SIP terms wcslib drops), at awkward batch sizes. */
#include <fitsio.h>
#include <stdio.h>
#include <string.h>

#include "tide/tide.h"
#include "tide_test.h"

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

static double dlon(double a, double b) {
    double d = fmod(a - b, 360.0);
    if (d > 180)
        d -= 360;
    if (d < -180)
        d += 360;
    return d;
}

/* Deterministic pseudo-random numbers in [0, 1). */
static double rnd(unsigned long long *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* Compare the CPU twin with wcslib on n points spread over [x0, x1] x [y0, y1]. */
static void compare(tide_ctx *ctx, const tide_wcs *w, const char *what, int64_t n, double x0,
                    double x1, double y0, double y1) {
    tide_wcs_tansip t;
    CHECK_OK(tide_wcs_tansip_from_wcs(w, &t));
    double *buf = malloc(sizeof(double) * 10 * (size_t)(n > 0 ? n : 1));
    double *x = buf, *y = x + n, *ra = y + n, *de = ra + n, *raw = de + n, *dew = raw + n;
    double *xt = dew + n, *yt = xt + n, *xw = yt + n, *yw = xw + n;
    unsigned long long seed = 12345 + (unsigned long long)n;
    for (int64_t i = 0; i < n; i++) {
        x[i] = x0 + (x1 - x0) * rnd(&seed);
        y[i] = y0 + (y1 - y0) * rnd(&seed);
    }
    CHECK_OK(tide_wcs_tansip_pix2sky(ctx, &t, n, x, y, ra, de));
    CHECK_OK(tide_wcs_pix2sky(w, n, x, y, raw, dew));
    CHECK_OK(tide_wcs_tansip_sky2pix(ctx, &t, n, raw, dew, xt, yt));
    CHECK_OK(tide_wcs_sky2pix(w, n, raw, dew, xw, yw));
    double es = 0, ep = 0, er = 0;
    for (int64_t i = 0; i < n; i++) {
        es = fmax(es, fmax(fabs(dlon(ra[i], raw[i])) * cos(dew[i] * 0.017453292519943295),
                           fabs(de[i] - dew[i])));
        ep = fmax(ep, fmax(fabs(xt[i] - xw[i]), fabs(yt[i] - yw[i])));
        er = fmax(er, fmax(fabs(xt[i] - x[i]), fabs(yt[i] - y[i])));
        if (isnan(ra[i]) || isnan(xt[i]) || !(ra[i] >= 0 && ra[i] < 360))
            es = INFINITY;
    }
    printf("%-28s n=%-7lld pix2sky vs wcslib %.2e deg, sky2pix vs wcslib %.2e px, "
           "round trip %.2e px\n",
           what, (long long)n, es, ep, er);
    CHECK(es <= 1e-9);
    CHECK(ep <= 1e-7);
    CHECK(er <= 1e-8);
    free(buf);
}

static tide_wcs *from_file(const char *rel) {
    tide_header h;
    if (read_header(tide_test_data(rel), &h)) {
        tide_test_failures++;
        return NULL;
    }
    tide_wcs *w = NULL;
    CHECK_OK(tide_wcs_from_header(&h, rel, &w));
    tide_header_free(&h);
    return w;
}

static tide_wcs *make_tan(double ra0, double dec0, double lonpole, int sip_order, int inverse,
                          int low_terms) {
    tide_header h;
    tide_header_init(&h);
    const char *sfx = sip_order ? "-SIP" : "";
    char c1[32], c2[32];
    snprintf(c1, sizeof c1, "RA---TAN%s", sfx);
    snprintf(c2, sizeof c2, "DEC--TAN%s", sfx);
    tide_header_set_str(&h, "CTYPE1", c1, NULL);
    tide_header_set_str(&h, "CTYPE2", c2, NULL);
    tide_header_set_dbl(&h, "CRPIX1", 1021.3, NULL);
    tide_header_set_dbl(&h, "CRPIX2", 990.7, NULL);
    tide_header_set_dbl(&h, "CRVAL1", ra0, NULL);
    tide_header_set_dbl(&h, "CRVAL2", dec0, NULL);
    tide_header_set_dbl(&h, "CD1_1", -2.7e-4 * cos(0.3), NULL);
    tide_header_set_dbl(&h, "CD1_2", 2.7e-4 * sin(0.3), NULL);
    tide_header_set_dbl(&h, "CD2_1", 2.7e-4 * sin(0.3), NULL);
    tide_header_set_dbl(&h, "CD2_2", 2.7e-4 * cos(0.3), NULL);
    if (lonpole != 180)
        tide_header_set_dbl(&h, "LONPOLE", lonpole, NULL);
    if (sip_order) {
        unsigned long long seed = 99;
        tide_header_set_int(&h, "A_ORDER", sip_order, NULL);
        tide_header_set_int(&h, "B_ORDER", sip_order, NULL);
        for (int p = 0; p <= sip_order; p++)
            for (int q = 0; p + q <= sip_order; q++) {
                if (p + q < 2 && !low_terms)
                    continue;
                /* a few pixels of distortion at 1000 px from CRPIX */
                double scale = 3.0 / pow(1000.0, p + q);
                char k[32];
                snprintf(k, sizeof k, "A_%d_%d", p, q);
                tide_header_set_dbl(&h, k, scale * (rnd(&seed) - 0.5), NULL);
                snprintf(k, sizeof k, "B_%d_%d", p, q);
                tide_header_set_dbl(&h, k, scale * (rnd(&seed) - 0.5), NULL);
            }
        if (inverse) { /* a crude inverse: minus the quadratic forward terms */
            tide_header_set_int(&h, "AP_ORDER", 2, NULL);
            tide_header_set_int(&h, "BP_ORDER", 2, NULL);
            const char *keys[] = {"2_0", "1_1", "0_2"};
            for (int i = 0; i < 3; i++) {
                char k[32], kp[32];
                double v;
                snprintf(k, sizeof k, "A_%s", keys[i]);
                snprintf(kp, sizeof kp, "AP_%s", keys[i]);
                if (!tide_header_get_dbl(&h, k, &v))
                    tide_header_set_dbl(&h, kp, -v, NULL);
                snprintf(k, sizeof k, "B_%s", keys[i]);
                snprintf(kp, sizeof kp, "BP_%s", keys[i]);
                if (!tide_header_get_dbl(&h, k, &v))
                    tide_header_set_dbl(&h, kp, -v, NULL);
            }
        }
    }
    tide_wcs *w = NULL;
    CHECK_OK(tide_wcs_from_header(&h, "synthetic", &w));
    tide_header_free(&h);
    return w;
}

int main(void) {
    tide_ctx *ctx = NULL;
    tide_ctx_options opt = {0};
    opt.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&ctx, &opt));
    if (!ctx)
        return TIDE_TEST_RESULT();

    tide_wcs *w = from_file("wcs/sipsample.fits");
    if (w) {
        const int64_t sizes[] = {0, 1, 7, 4099, 65537};
        for (int i = 0; i < 5; i++)
            compare(ctx, w, "sipsample", sizes[i], -0.5, 255.5, -0.5, 255.5);
        tide_wcs_tansip t;
        CHECK_OK(tide_wcs_tansip_from_wcs(w, &t));
        CHECK(t.order[0] == 3 && t.order[1] == 3 && t.order[2] == 3 && t.order[3] == 3);
        CHECK_CLOSE(t.sip[0][3 * 4 / 2 + 2], -1.6847e-07, 0); /* A_1_2: d=3, q=2 */
        CHECK_CLOSE(t.sip[2][1 * 2 / 2 + 1], -6.4275e-07, 0); /* AP_0_1 */
        tide_wcs_free(w);
    }
    w = from_file("wcs/1904-66_TAN.fits"); /* CDELT form, CRVAL2 = -90: the pole */
    if (w) {
        compare(ctx, w, "1904-66_TAN (pole)", 5001, -0.5, 191.5, -0.5, 191.5);
        tide_wcs_free(w);
    }
    w = make_tan(359.9, 45.0, 180, 0, 0, 0);
    if (w) {
        compare(ctx, w, "TAN across RA 0", 1001, -500, 2500, -500, 2500);
        tide_wcs_free(w);
    }
    w = make_tan(120.0, -60.0, 120, 0, 0, 0);
    if (w) {
        compare(ctx, w, "TAN LONPOLE 120", 1001, 0, 2000, 0, 2000);
        tide_wcs_free(w);
    }
    w = make_tan(10.0, 89.99, 180, 3, 1, 0);
    if (w) {
        compare(ctx, w, "SIP 3 near the pole", 1001, 0, 2000, 0, 2000);
        tide_wcs_free(w);
    }
    w = make_tan(250.0, 30.0, 180, 9, 0, 0);
    if (w) {
        compare(ctx, w, "SIP 9 without AP/BP", 3001, 0, 2000, 0, 2000);
        tide_wcs_free(w);
    }
    w = make_tan(250.0, 30.0, 180, 4, 1, 1);
    if (w) {
        compare(ctx, w, "SIP 4 with A_0_0, A_1_0", 1001, 0, 2000, 0, 2000);
        tide_wcs_free(w);
    }

    /* A distortion that folds over (order 9 evaluated 2.5x beyond the region it is tame in):
     * sky -> pixel gives NaN or a pixel that maps back onto the sky point, never garbage. */
    w = make_tan(250.0, 30.0, 180, 9, 0, 0);
    if (w) {
        tide_wcs_tansip t;
        CHECK_OK(tide_wcs_tansip_from_wcs(w, &t));
        enum { NW = 20000 };
        static double x[NW], y[NW], ra[NW], de[NW], x2[NW], y2[NW], ra2[NW], de2[NW];
        unsigned long long seed = 5;
        for (int i = 0; i < NW; i++) {
            x[i] = 1021.3 + 5000 * (rnd(&seed) - 0.5);
            y[i] = 990.7 + 5000 * (rnd(&seed) - 0.5);
        }
        CHECK_OK(tide_wcs_tansip_pix2sky(ctx, &t, NW, x, y, ra, de));
        CHECK_OK(tide_wcs_tansip_sky2pix(ctx, &t, NW, ra, de, x2, y2));
        CHECK_OK(tide_wcs_tansip_pix2sky(ctx, &t, NW, x2, y2, ra2, de2));
        int nan = 0;
        double e = 0;
        for (int i = 0; i < NW; i++) {
            if (isnan(x2[i])) {
                nan++;
                continue;
            }
            e = fmax(e, fmax(fabs(dlon(ra2[i], ra[i])), fabs(de2[i] - de[i])));
        }
        printf("folded SIP 9: %d of %d unconverged (NaN); converged map back to %.2e deg\n", nan,
               NW, e);
        CHECK(e <= 1e-9);
        CHECK(nan < NW);
        tide_wcs_free(w);
    }

    /* other projections and TPV are refused with a clear error */
    const char *refused[] = {"wcs/1904-66_ZEA.fits", "wcs/tpv.fits"};
    for (int i = 0; i < 2; i++) {
        w = from_file(refused[i]);
        if (!w)
            continue;
        tide_wcs_tansip t;
        int st = tide_wcs_tansip_from_wcs(w, &t);
        printf("%s: %s: %s\n", refused[i], tide_strerror(st), tide_error_detail());
        CHECK(st == TIDE_E_UNSUPPORTED);
        CHECK(strstr(tide_error_detail(), refused[i]) != NULL);
        tide_wcs_free(w);
    }
    /* a far-hemisphere point has no gnomonic projection */
    w = make_tan(0.0, 0.0, 180, 0, 0, 0);
    if (w) {
        tide_wcs_tansip t;
        CHECK_OK(tide_wcs_tansip_from_wcs(w, &t));
        double ra = 180.0, de = 0.0, x, y;
        CHECK_OK(tide_wcs_tansip_sky2pix(ctx, &t, 1, &ra, &de, &x, &y));
        CHECK(isnan(x) && isnan(y));
        tide_wcs_free(w);
    }
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
