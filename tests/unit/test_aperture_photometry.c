/* test_aperture_photometry.c — tide_aperture_photometry and tide_kron_photometry on frames
 * whose answers are known in closed form: constant images (flux = value × π r², error from
 * the variance and the gain), a masked and a NaN pixel (excluded, reported, optionally
 * corrected), apertures crossing the edge, the local annulus background with outliers,
 * per-source radii, argument errors, and Kron radii of elliptical Gaussians. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "reduction/photometry/aperture_math.h"
#include "tide/tide.h"
#include "tide_test.h"

static const double PI = 3.14159265358979323846;

static void fill(tide_image *im, float v) {
    for (int64_t i = 0; i < im->width * im->height; i++)
        im->pix[i] = v;
}

/* pixel-integrated elliptical Gaussian is not separable; sample 8x8 per pixel instead */
static void add_gauss(tide_image *im, double cx, double cy, double sa, double sb, double th,
                      double flux) {
    const double c = cos(th), s = sin(th);
    for (int64_t j = 0; j < im->height; j++)
        for (int64_t i = 0; i < im->width; i++) {
            double acc = 0.0;
            for (int b = 0; b < 8; b++)
                for (int a = 0; a < 8; a++) {
                    const double dx = i - 0.5 + (a + 0.5) / 8 - cx,
                                 dy = j - 0.5 + (b + 0.5) / 8 - cy;
                    const double u = c * dx + s * dy, v = -s * dx + c * dy;
                    acc += exp(-0.5 * (u * u / (sa * sa) + v * v / (sb * sb)));
                }
            im->pix[j * im->stride + i] += (float)(flux * acc / 64.0 / (2 * PI * sa * sb));
        }
}

int main(void) {
    tide_ctx *ctx;
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    tide_image im, var;
    CHECK_OK(tide_image_alloc(ctx, &im, 64, 48, TIDE_HOST, TIDE_IMAGE_MASK));
    CHECK_OK(tide_image_alloc(ctx, &var, 64, 48, TIDE_HOST, 0));
    fill(&im, 2.0f);
    fill(&var, 0.5f);
    const double radii[3] = {1.5, 3.0, 6.2};
    double x[3] = {20.3, 1.0, 40.5}, y[3] = {17.6, 1.0, 30.5};
    double f[9], e[9];
    int32_t fl[3];
    tide_aper_params p;
    tide_aper_params_default(&p);

    /* constant frame: exact areas, errors from the variance */
    CHECK_OK(tide_aperture_photometry(ctx, &im, &var, 3, x, y, 3, radii, &p, f, e, fl));
    for (int k = 0; k < 3; k++) {
        CHECK_CLOSE(f[k], 2.0 * PI * radii[k] * radii[k], 1e-9);
        CHECK_CLOSE(e[k], sqrt(0.5 * PI * radii[k] * radii[k]), 1e-9);
        CHECK_CLOSE(f[6 + k], 2.0 * PI * radii[k] * radii[k], 1e-9);
    }
    CHECK(fl[0] == 0 && fl[2] == 0);
    CHECK(fl[1] & TIDE_PHOT_TRUNCATED);
    CHECK_CLOSE(f[3], 2.0 * PI * 1.5 * 1.5, 1e-9);          /* touches the edge: still whole */
    CHECK(f[5] < 2.0 * PI * 6.2 * 6.2 * 0.5 && f[5] > 0.0); /* about a quarter plus */
    /* the sky-variance image may also come from the image's own var plane */
    {
        tide_image im2;
        CHECK_OK(tide_image_alloc(ctx, &im2, 64, 48, TIDE_HOST, TIDE_IMAGE_VAR));
        fill(&im2, 2.0f);
        for (int64_t i = 0; i < 64 * 48; i++)
            im2.var[i] = 0.5f;
        double f2[9], e2[9];
        CHECK_OK(tide_aperture_photometry(ctx, &im2, NULL, 3, x, y, 3, radii, NULL, f2, e2, NULL));
        CHECK_CLOSE(e2[2], e[2], 1e-12);
        tide_image_free(ctx, &im2);
    }
    /* gain: Poisson term F / (gain · ncombine) */
    p.gain = 4.0;
    p.ncombine = 2;
    CHECK_OK(tide_aperture_photometry(ctx, &im, &var, 1, x, y, 3, radii, &p, f, e, fl));
    for (int k = 0; k < 3; k++)
        CHECK_CLOSE(e[k] * e[k], 0.5 * PI * radii[k] * radii[k] + f[k] / 8.0, 1e-9);
    p.gain = 0.0;
    p.ncombine = 1;

    /* a masked pixel and a NaN pixel: excluded, reported, corrected on request */
    const double w1 = tide_ap_pixel_overlap(21, 18, 20.3, 17.6, 3.0);
    const double w2 = tide_ap_pixel_overlap(19, 16, 20.3, 17.6, 3.0);
    CHECK(w1 > 0.99 && w2 > 0.99);
    im.mask[18 * 64 + 21] = TIDE_MASK_COSMIC;
    im.pix[16 * 64 + 19] = NAN;
    double area[3], marea[3];
    int32_t af[3];
    tide_aper_extra ex;
    memset(&ex, 0, sizeof ex);
    ex.area = area;
    ex.masked_area = marea;
    ex.aper_flags = af;
    CHECK_OK(tide_aperture_photometry_ex(ctx, &im, &var, 1, x, y, 3, radii, &p, f, e, fl, &ex));
    CHECK_CLOSE(f[1], 2.0 * (PI * 9.0 - w1 - w2), 1e-9);
    CHECK_CLOSE(marea[1], w1 + w2, 1e-12);
    CHECK_CLOSE(area[1], PI * 9.0, 1e-9);
    CHECK(fl[0] & TIDE_PHOT_MASKED);
    CHECK((af[1] & TIDE_PHOT_MASKED) && (af[2] & TIDE_PHOT_MASKED));
    p.mask_correct = 1;
    CHECK_OK(tide_aperture_photometry(ctx, &im, &var, 1, x, y, 3, radii, &p, f, e, fl));
    CHECK_CLOSE(f[1], 2.0 * PI * 9.0, 1e-9);
    /* a mask bit outside mask_bits is ignored */
    p.mask_correct = 0;
    p.mask_bits = TIDE_MASK_NODATA;
    CHECK_OK(tide_aperture_photometry(ctx, &im, &var, 1, x, y, 3, radii, &p, f, e, fl));
    CHECK_CLOSE(f[1], 2.0 * (PI * 9.0 - w2), 1e-9);
    tide_aper_params_default(&p);
    im.mask[18 * 64 + 21] = 0;
    im.pix[16 * 64 + 19] = 2.0f;

    /* per-source radii equal the common-radius results */
    {
        double rr[3] = {3.0, 6.2, 1.5}, fr[3], er[3], fc[9], ec[9];
        CHECK_OK(tide_aperture_photometry_r(ctx, &im, &var, 3, x, y, rr, NULL, fr, er, NULL));
        CHECK_OK(tide_aperture_photometry(ctx, &im, &var, 3, x, y, 3, radii, NULL, fc, ec, NULL));
        CHECK_CLOSE(fr[0], fc[1], 1e-12);
        CHECK_CLOSE(fr[1], fc[5], 1e-12);
        CHECK_CLOSE(fr[2], fc[6], 1e-12);
    }

    /* local annulus background: constant 5 + a star + outliers in the annulus */
    {
        tide_image s;
        CHECK_OK(tide_image_alloc(ctx, &s, 80, 80, TIDE_HOST, 0));
        fill(&s, 5.0f);
        add_gauss(&s, 40.2, 39.7, 1.5, 1.5, 0.0, 1000.0);
        s.pix[40 * 80 + 52] = 500.0f; /* in the 10..16 annulus */
        s.pix[30 * 80 + 30] = -300.0f;
        s.pix[52 * 80 + 36] = 1e4f;
        double xs = 40.2, ys = 39.7, r = 6.0, fs, es, bk, be;
        tide_aper_params_default(&p);
        p.bkgann_in = 10.0;
        p.bkgann_out = 16.0;
        memset(&ex, 0, sizeof ex);
        ex.bkg = &bk;
        ex.bkg_err = &be;
        int32_t f1;
        CHECK_OK(
            tide_aperture_photometry_ex(ctx, &s, NULL, 1, &xs, &ys, 1, &r, &p, &fs, &es, &f1, &ex));
        CHECK_CLOSE(bk, 5.0, 1e-6); /* the star's wing in the annulus is < 1e-9 */
        CHECK_CLOSE(fs, 1000.0 * (1.0 - exp(-0.5 * 36.0 / 2.25)), 0.5);
        CHECK(f1 == 0);
        /* a too-large annulus is refused, not truncated */
        p.bkgann_out = 60.0;
        CHECK(tide_aperture_photometry(ctx, &s, NULL, 1, &xs, &ys, 1, &r, &p, &fs, &es, NULL) ==
              TIDE_E_RANGE);
        /* too few annulus pixels: flagged, nothing subtracted */
        p.bkgann_in = 1.0;
        p.bkgann_out = 1.5;
        p.bkgann_minpix = 50;
        CHECK_OK(tide_aperture_photometry(ctx, &s, NULL, 1, &xs, &ys, 1, &r, &p, &fs, &es, &f1));
        CHECK(f1 & TIDE_PHOT_BKG_FAILED);
        tide_image_free(ctx, &s);
    }

    /* arguments */
    {
        double bad = 0.0;
        CHECK(tide_aperture_photometry(ctx, &im, &var, 1, x, y, 1, &bad, NULL, f, e, NULL) ==
              TIDE_E_INVAL);
        CHECK_OK(
            tide_aperture_photometry(ctx, &im, &var, 0, NULL, NULL, 3, radii, NULL, f, e, NULL));
        double nanx = NAN;
        CHECK_OK(tide_aperture_photometry(ctx, &im, &var, 1, &nanx, y, 1, radii, NULL, f, e, fl));
        CHECK(fl[0] & TIDE_PHOT_FIT_FAILED);
        CHECK(f[0] == 0.0);
    }

    /* Kron: elliptical Gaussians. Within moment_nsig = 6 the first moment of a Gaussian in
     * ellipse units is sqrt(π/2), so K = 2.5 sqrt(π/2) = 3.133 and the flux fraction inside
     * is 1 - exp(-K²/2); with the SE minimum 3.5 the radius is 3.5. */
    {
        tide_image g;
        CHECK_OK(tide_image_alloc(ctx, &g, 96, 96, TIDE_HOST, 0));
        fill(&g, 0.0f);
        const double sa = 3.0, sb = 1.8, th = 0.6;
        add_gauss(&g, 47.3, 48.6, sa, sb, th, 5000.0);
        double gx = 47.3, gy = 48.6, ga = sa, gb = sb, gt = th * 180.0 / PI, kr, kf, ke;
        int32_t kfl;
        tide_kron_params kp;
        tide_kron_params_default(&kp);
        kp.min_radius = 0.0;
        CHECK_OK(tide_kron_photometry(ctx, &g, NULL, 1, &gx, &gy, &ga, &gb, &gt, &kp, &kr, &kf, &ke,
                                      &kfl));
        const double K = 2.5 * sqrt(PI / 2.0);
        printf("Kron: K = %.4f (Gaussian %.4f), flux %.2f (expected %.2f)\n", kr, K, kf,
               5000.0 * (1.0 - exp(-K * K / 2.0)));
        CHECK_CLOSE(kr, K, 0.02 * K);
        CHECK_CLOSE(kf, 5000.0 * (1.0 - exp(-kr * kr / 2.0)), 0.003 * 5000.0);
        CHECK(kfl == 0);
        tide_kron_params_default(&kp);
        CHECK_OK(tide_kron_photometry(ctx, &g, NULL, 1, &gx, &gy, &ga, &gb, &gt, &kp, &kr, &kf, &ke,
                                      &kfl));
        CHECK_CLOSE(kr, 3.5, 1e-12);
        CHECK_CLOSE(kf, 5000.0 * (1.0 - exp(-3.5 * 3.5 / 2.0)), 0.003 * 5000.0);
        /* swapping A and B with THETA + 90 describes the same ellipse */
        double ga2 = sb, gb2 = sa, gt2 = gt + 90.0, kr2, kf2, ke2;
        CHECK_OK(tide_kron_photometry(ctx, &g, NULL, 1, &gx, &gy, &ga2, &gb2, &gt2, &kp, &kr2, &kf2,
                                      &ke2, &kfl));
        CHECK_CLOSE(kf2, kf, 1e-6 * kf);
        tide_image_free(ctx, &g);
    }
    tide_image_free(ctx, &im);
    tide_image_free(ctx, &var);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
