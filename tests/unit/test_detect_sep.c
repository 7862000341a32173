/* test_detect_sep.c — detection against Source Extractor on sep's test frame
 * ($TIDE_SHARED_DATA/sep/image.fits, catalog image.cat made with DETECT_THRESH 1.5 on a
 * 3x3 "all-ground" filter of FWHM 2, no deblending). Source Extractor thresholds the
 * filtered image at 1.5 x the unfiltered rms; tide's kernel here is a Gaussian of FWHM 2, whose
 * filtered noise is sqrt(sum k^2) / sum k = 0.333 of the rms, so the same isophote is S/N
 * 1.5 / 0.333 = 4.5. At least 95% of the FLAGS = 0 objects must be found within 1 px
 * (barycentre X, Y against X_IMAGE, Y_IMAGE), with deblending off as in default.sex and with
 * tide's default deblending; with SE's own back.fits / rms.fits and with
 * tide_background_estimate. */
#include <stdint.h>
#include <stdio.h>

#include "tide/background.h"
#include "tide/tide.h"
#include "tide_test.h"

#define MAXOBJ 256

static int read_cat(double *x, double *y, int *flags) {
    FILE *f = fopen(tide_test_data("sep/image.cat"), "r");
    if (!f)
        return -1;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < MAXOBJ) {
        if (line[0] == '#')
            continue;
        double v[22];
        int k = 0;
        char *s = line, *e;
        while (k < 22) {
            v[k] = strtod(s, &e);
            if (e == s)
                break;
            s = e;
            k++;
        }
        if (k < 21)
            continue;
        x[n] = v[1] - 1.0; /* FITS 1-based -> 0-based */
        y[n] = v[2] - 1.0;
        flags[n] = (int)v[k - 1];
        n++;
    }
    fclose(f);
    return n;
}

static double match(tide_ctx *ctx, const tide_image *sub, const tide_image *rms, const double *cx,
                    const double *cy, const int *cf, int n, double mincont, const char *what) {
    tide_detect_params p;
    tide_detect_params_default(&p);
    p.thresh = 4.5;
    p.fwhm_guess = 2.0;
    p.deblend_mincont = mincont;
    tide_table t;
    tide_table_init(&t);
    CHECK_OK(tide_detect(ctx, sub, rms, NULL, &p, &t));
    const double *x = tide_table_f64(&t, "X"), *y = tide_table_f64(&t, "Y");
    const double *xw = tide_table_f64(&t, "XWIN"), *yw = tide_table_f64(&t, "YWIN");
    int n0 = 0, found = 0, found_all = 0;
    double dwin = 0.0;
    for (int i = 0; i < n; i++) {
        int ok = 0;
        for (int64_t r = 0; r < t.nrows && !ok; r++)
            if ((x[r] - cx[i]) * (x[r] - cx[i]) + (y[r] - cy[i]) * (y[r] - cy[i]) <= 1.0) {
                ok = 1;
                dwin += hypot(xw[r] - x[r], yw[r] - y[r]);
            }
        if (!ok && getenv("DET_DEBUG")) {
            double bd = 1e9, bx = 0, by = 0;
            for (int64_t r = 0; r < t.nrows; r++) {
                double d = hypot(x[r] - cx[i], y[r] - cy[i]);
                if (d < bd) {
                    bd = d;
                    bx = x[r];
                    by = y[r];
                }
            }
            printf("  missed SE (%.2f, %.2f) flags %d: nearest tide (%.2f, %.2f) at %.2f px\n",
                   cx[i], cy[i], cf[i], bx, by, bd);
        }
        found_all += ok;
        if (cf[i] == 0) {
            n0++;
            found += ok;
        }
    }
    double frac = n0 ? (double)found / n0 : 0.0;
    printf("%s: %lld tide sources, SE %d objects (%d with FLAGS=0); FLAGS=0 found within 1 px: "
           "%d (%.1f%%), all flags: %d; mean |WIN - isophotal centre| %.3f px\n",
           what, (long long)t.nrows, n, n0, found, 100 * frac, found_all,
           found_all ? dwin / found_all : 0.0);
    tide_table_free(&t);
    return frac;
}

int main(void) {
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *ctx = NULL;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    double cx[MAXOBJ], cy[MAXOBJ];
    int cf[MAXOBJ];
    int n = read_cat(cx, cy, cf);
    CHECK(n == 65);
    tide_image im, back, rms;
    CHECK_OK(tide_fits_read_image(ctx, tide_test_data("sep/image.fits"), &im, NULL));
    CHECK_OK(tide_fits_read_image(ctx, tide_test_data("sep/back.fits"), &back, NULL));
    CHECK_OK(tide_fits_read_image(ctx, tide_test_data("sep/rms.fits"), &rms, NULL));
    if (tide_test_failures)
        return TIDE_TEST_RESULT();
    tide_image sub;
    CHECK_OK(tide_image_clone(ctx, &sub, &im, TIDE_HOST));
    for (int64_t i = 0; i < im.width * im.height; i++)
        sub.pix[i] = im.pix[i] - back.pix[i];
    CHECK(match(ctx, &sub, &rms, cx, cy, cf, n, 1.0, "SE maps, no deblending") >= 0.95);
    CHECK(match(ctx, &sub, &rms, cx, cy, cf, n, 0.005, "SE maps, deblending") >= 0.95);

    tide_image b2, r2;
    int st = tide_background_estimate(ctx, &im, NULL, &b2, &r2, NULL);
    CHECK_OK(st);
    if (!st) {
        for (int64_t i = 0; i < im.width * im.height; i++)
            sub.pix[i] = im.pix[i] - b2.pix[i];
        CHECK(match(ctx, &sub, &r2, cx, cy, cf, n, 0.005, "tide background, deblending") >= 0.95);
        tide_image_free(ctx, &b2);
        tide_image_free(ctx, &r2);
    }
    tide_image_free(ctx, &sub);
    tide_image_free(ctx, &im);
    tide_image_free(ctx, &back);
    tide_image_free(ctx, &rms);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
