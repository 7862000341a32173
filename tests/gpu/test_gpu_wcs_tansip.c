/* test_gpu_wcs_tansip.c — the CUDA TAN/SIP kernels against their CPU twin: pixel -> sky to
 * 1e-10 degree and sky -> pixel to 1e-8 px (both are double precision; differences come
 * only from FMA contraction and the device math library), at awkward batch sizes, with an
 * order-9 SIP without AP/BP (pure Newton) and the real Spitzer SIP. Skipped without a GPU. */
#include <stdio.h>
#include <string.h>

#include "tide/tide.h"
#include "tide_test.h"

static double rnd(unsigned long long *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static double dlon(double a, double b) {
    double d = fmod(a - b, 360.0);
    if (d > 180)
        d -= 360;
    if (d < -180)
        d += 360;
    return d;
}

/* A TAN-SIP of order @p order (random coefficients, a few px at @p reach px from CRPIX),
 * no AP/BP. With reach 1000 an order-9 distortion reaches ~2000 px at the frame corners and
 * folds over there: sky -> pixel has no unique answer. */
static int make_wcs(int order, double reach, tide_wcs **w) {
    tide_header h;
    tide_header_init(&h);
    tide_header_set_str(&h, "CTYPE1", order ? "RA---TAN-SIP" : "RA---TAN", NULL);
    tide_header_set_str(&h, "CTYPE2", order ? "DEC--TAN-SIP" : "DEC--TAN", NULL);
    tide_header_set_dbl(&h, "CRPIX1", 2048.5, NULL);
    tide_header_set_dbl(&h, "CRPIX2", 1024.25, NULL);
    tide_header_set_dbl(&h, "CRVAL1", 359.95, NULL);
    tide_header_set_dbl(&h, "CRVAL2", -42.0, NULL);
    tide_header_set_dbl(&h, "CD1_1", -1.1e-4, NULL);
    tide_header_set_dbl(&h, "CD1_2", 2e-5, NULL);
    tide_header_set_dbl(&h, "CD2_1", 2.1e-5, NULL);
    tide_header_set_dbl(&h, "CD2_2", 1.1e-4, NULL);
    unsigned long long seed = 7;
    if (order) {
        tide_header_set_int(&h, "A_ORDER", order, NULL);
        tide_header_set_int(&h, "B_ORDER", order, NULL);
        for (int p = 0; p <= order; p++)
            for (int q = 0; p + q <= order; q++) {
                if (p + q < 2)
                    continue;
                double scale = 3.0 / pow(reach, p + q);
                char k[32];
                snprintf(k, sizeof k, "A_%d_%d", p, q);
                tide_header_set_dbl(&h, k, scale * (rnd(&seed) - 0.5), NULL);
                snprintf(k, sizeof k, "B_%d_%d", p, q);
                tide_header_set_dbl(&h, k, scale * (rnd(&seed) - 0.5), NULL);
            }
    }
    int st = tide_wcs_from_header(&h, "synthetic", w);
    tide_header_free(&h);
    return st;
}

/* @p wild: the distortion folds over; sky -> pixel must then give NaN or a right answer on
 * each backend, and the backends need only agree where both converged. */
static void agree(tide_ctx *cpu, tide_ctx *gpu, const tide_wcs_tansip *t, const char *what,
                  int64_t n, double w, double h, int wild) {
    const size_t bytes = sizeof(double) * (size_t)n;
    double *hb = malloc(bytes * 8);
    double *x = hb, *y = x + n, *ra = y + n, *de = ra + n, *xc = de + n, *yc = xc + n;
    double *rg = yc + n, *dg = rg + n;
    unsigned long long seed = 3 + (unsigned long long)n;
    for (int64_t i = 0; i < n; i++) {
        x[i] = -0.5 + w * rnd(&seed);
        y[i] = -0.5 + h * rnd(&seed);
    }
    CHECK_OK(tide_wcs_tansip_pix2sky(cpu, t, n, x, y, ra, de));
    CHECK_OK(tide_wcs_tansip_sky2pix(cpu, t, n, ra, de, xc, yc));

    void *d[4] = {0};
    for (int k = 0; k < 4; k++)
        CHECK_OK(tide_device_alloc(gpu, bytes, &d[k]));
    double *dx = d[0], *dy = d[1], *dra = d[2], *dde = d[3];
    CHECK_OK(tide_memcpy(gpu, dx, 1, x, 0, bytes));
    CHECK_OK(tide_memcpy(gpu, dy, 1, y, 0, bytes));
    CHECK_OK(tide_wcs_tansip_pix2sky(gpu, t, n, dx, dy, dra, dde));
    CHECK_OK(tide_memcpy(gpu, rg, 0, dra, 1, bytes));
    CHECK_OK(tide_memcpy(gpu, dg, 0, dde, 1, bytes));
    /* sky -> pixel from the CPU's sky positions, into the (reused) x, y buffers */
    CHECK_OK(tide_memcpy(gpu, dra, 1, ra, 0, bytes));
    CHECK_OK(tide_memcpy(gpu, dde, 1, de, 0, bytes));
    CHECK_OK(tide_wcs_tansip_sky2pix(gpu, t, n, dra, dde, dx, dy));
    if (n >= 1000000) { /* throughput, for the report (not a check): best of 5 */
        double best_p = INFINITY, best_s = INFINITY;
        for (int r = 0; r < 5; r++) {
            CHECK_OK(tide_sync(gpu));
            double t0 = tide_now();
            CHECK_OK(tide_wcs_tansip_pix2sky(gpu, t, n, dx, dy, dra, dde));
            CHECK_OK(tide_sync(gpu));
            double t1 = tide_now();
            CHECK_OK(tide_wcs_tansip_sky2pix(gpu, t, n, dra, dde, dx, dy));
            CHECK_OK(tide_sync(gpu));
            double t2 = tide_now();
            best_p = fmin(best_p, t1 - t0);
            best_s = fmin(best_s, t2 - t1);
        }
        printf("%-16s n=%-8lld GPU time: pix2sky %.3f ms (%.2f ns/pt), sky2pix %.3f ms\n", what,
               (long long)n, best_p * 1e3, best_p * 1e9 / (double)n, best_s * 1e3);
        /* restore the inputs of the sky -> pixel comparison */
        CHECK_OK(tide_memcpy(gpu, dra, 1, ra, 0, bytes));
        CHECK_OK(tide_memcpy(gpu, dde, 1, de, 0, bytes));
        CHECK_OK(tide_wcs_tansip_sky2pix(gpu, t, n, dra, dde, dx, dy));
    }
    double *xg = x, *yg = y; /* the inputs are no longer needed */
    double *x0 = malloc(bytes * 2), *y0 = x0 + n;
    memcpy(x0, x, bytes);
    memcpy(y0, y, bytes);
    CHECK_OK(tide_memcpy(gpu, xg, 0, dx, 1, bytes));
    CHECK_OK(tide_memcpy(gpu, yg, 0, dy, 1, bytes));
    CHECK_OK(tide_sync(gpu));
    double es = 0, ep = 0, er = 0, ec = 0;
    int64_t nan_g = 0, nan_c = 0;
    for (int64_t i = 0; i < n; i++) {
        es = fmax(es, fmax(fabs(dlon(rg[i], ra[i])), fabs(dg[i] - de[i])));
        if (isnan(rg[i]))
            es = INFINITY;
        nan_g += isnan(xg[i]);
        nan_c += isnan(xc[i]);
        if (isnan(xg[i]) || isnan(xc[i]))
            continue;
        ep = fmax(ep, fmax(fabs(xg[i] - xc[i]), fabs(yg[i] - yc[i])));
        er = fmax(er, fmax(fabs(xg[i] - x0[i]), fabs(yg[i] - y0[i])));
        ec = fmax(ec, fmax(fabs(xc[i] - x0[i]), fabs(yc[i] - y0[i])));
    }
    printf("%-16s n=%-8lld GPU vs CPU: pix2sky %.2e deg, sky2pix %.2e px; round trip GPU "
           "%.2e px, CPU %.2e px; unconverged GPU %lld CPU %lld\n",
           what, (long long)n, es, ep, er, ec, (long long)nan_g, (long long)nan_c);
    CHECK(es <= 1e-10);
    if (!wild) {
        CHECK(nan_g == 0 && nan_c == 0);
        CHECK(ep <= 1e-8);
        CHECK(er <= 1e-7);
        CHECK(ec <= 1e-7);
    } else {
        /* where the distortion folds, a pixel is right if it maps back onto the sky point */
        double *rb = malloc(bytes * 2), *db = rb + n, eb = 0;
        for (int pass = 0; pass < 2; pass++) {
            const double *px = pass ? xc : xg, *py = pass ? yc : yg;
            CHECK_OK(tide_wcs_tansip_pix2sky(cpu, t, n, px, py, rb, db));
            for (int64_t i = 0; i < n; i++)
                if (!isnan(px[i]))
                    eb = fmax(eb, fmax(fabs(dlon(rb[i], ra[i])), fabs(db[i] - de[i])));
        }
        printf("%-16s converged pixels map back onto the sky point to %.2e deg\n", "", eb);
        CHECK(eb <= 1e-9);
        free(rb);
    }
    for (int k = 0; k < 4; k++)
        tide_device_free(gpu, d[k]);
    free(x0);
    free(hb);
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no usable GPU");
    tide_ctx *cpu = NULL, *gpu = NULL;
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&cpu, &o));
    o.backend = TIDE_BACKEND_CUDA;
    CHECK_OK(tide_ctx_create(&gpu, &o));
    if (!cpu || !gpu)
        return TIDE_TEST_RESULT();

    const int64_t sizes[] = {1, 17, 1000, 65537, 1000003};
    const int orders[] = {0, 3, 9, 9};
    const double reach[] = {2300, 2300, 2300, 1000};
    for (int k = 0; k < 4; k++) {
        tide_wcs *w = NULL;
        CHECK_OK(make_wcs(orders[k], reach[k], &w));
        if (!w)
            continue;
        tide_wcs_tansip t;
        CHECK_OK(tide_wcs_tansip_from_wcs(w, &t));
        char what[32];
        snprintf(what, sizeof what, "SIP %d%s", orders[k], k == 3 ? " folded" : "");
        for (int i = 0; i < 5; i++)
            agree(cpu, gpu, &t, what, sizes[i], 4096, 2048, k == 3);
        tide_wcs_free(w);
    }

    /* the far hemisphere is NaN on both backends */
    tide_wcs *w = NULL;
    CHECK_OK(make_wcs(0, 2300, &w));
    if (w) {
        tide_wcs_tansip t;
        CHECK_OK(tide_wcs_tansip_from_wcs(w, &t));
        double ra[2] = {179.95, 359.95}, de[2] = {42.0, -42.0}, xy[4];
        void *d = NULL;
        CHECK_OK(tide_device_alloc(gpu, 8 * sizeof(double), &d));
        if (d) {
            double *dd = d;
            CHECK_OK(tide_memcpy(gpu, dd, 1, ra, 0, sizeof ra));
            CHECK_OK(tide_memcpy(gpu, dd + 2, 1, de, 0, sizeof de));
            CHECK_OK(tide_wcs_tansip_sky2pix(gpu, &t, 2, dd, dd + 2, dd + 4, dd + 6));
            CHECK_OK(tide_memcpy(gpu, xy, 0, dd + 4, 1, sizeof xy));
            CHECK(isnan(xy[0]) && isnan(xy[2])); /* x, y of the far point */
            CHECK_CLOSE(xy[1], 2047.5, 1e-8);    /* CRVAL maps to CRPIX */
            CHECK_CLOSE(xy[3], 1023.25, 1e-8);
            tide_device_free(gpu, d);
        }
        tide_wcs_free(w);
    }
    tide_ctx_destroy(gpu);
    tide_ctx_destroy(cpu);
    return TIDE_TEST_RESULT();
}
