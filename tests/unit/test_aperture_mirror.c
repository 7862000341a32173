/* test_aperture_mirror.c — the masked-pixel correction of aperture and Kron photometry
 * (src/reduction/photometry/aperture_pixel.h): a Gaussian star with masked wing pixels on one side
 * and a masked core pixel, as cosmic-ray cleaning leaves them on real frames, must give the flux of
 * the unmasked star. Scaling the remainder by area / unmasked area (the old correction) credits
 * each masked wing pixel with the aperture's mean surface brightness and comes out 3% high here;
 * replacing a masked pixel by the image at its mirror point about the centre (bilinear) is within
 * 0.2% (nearest-pixel mirrors alone: 0.6%). Also: the MASKED flag and the masked area are still
 * reported, a pixel whose mirror is masked too falls back to the scaling, and mask_correct 0 only
 * excludes. */
#include <math.h>
#include <string.h>
#include "tide/tide.h"
#include "tide_test.h"

static const double PI = 3.14159265358979323846;

/* a circular Gaussian of flux F and sigma s at (cx, cy), integrated over each pixel */
static void add_star(tide_image *im, double cx, double cy, double s, double F) {
    const double k = 1.0 / (sqrt(2.0) * s);
    for (int64_t j = 0; j < im->height; j++) {
        const double gy = 0.5 * (erf((j + 0.5 - cy) * k) - erf((j - 0.5 - cy) * k));
        for (int64_t i = 0; i < im->width; i++) {
            const double gx = 0.5 * (erf((i + 0.5 - cx) * k) - erf((i - 0.5 - cx) * k));
            im->pix[j * im->stride + i] = (float)(F * gx * gy);
        }
    }
}

int main(void) {
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    CHECK(ctx != NULL);
    tide_image im;
    CHECK_OK(tide_image_alloc(ctx, &im, 64, 64, TIDE_HOST, TIDE_IMAGE_MASK));
    const double cx = 30.37, cy = 28.61, sig = 1.9, F = 1.0e4, r = 5.0;
    add_star(&im, cx, cy, sig, F);
    memset(im.mask, 0, sizeof(uint16_t) * 64 * 64);
    tide_aper_params p;
    tide_aper_params_default(&p);
    p.mask_correct = 1;
    double truth, f, e, area, marea;
    int32_t fl, af;
    tide_aper_extra ex;
    memset(&ex, 0, sizeof ex);
    ex.area = &area;
    ex.masked_area = &marea;
    ex.aper_flags = &af;
    CHECK_OK(tide_aperture_photometry(ctx, &im, NULL, 1, &cx, &cy, 1, &r, &p, &truth, &e, &fl));
    CHECK(fl == 0);

    /* a cosmic-ray track grazing the wing (3-5 px from the centre, +x side) and the core
     * pixel nearest the centre */
    static const int wing[][2] = {{34, 27}, {34, 28}, {34, 29}, {34, 30},
                                  {35, 28}, {35, 29}, {33, 31}, {33, 32}};
    const int nw = (int)(sizeof wing / sizeof wing[0]);
    for (int k = 0; k < nw; k++)
        im.mask[wing[k][1] * 64 + wing[k][0]] = TIDE_MASK_COSMIC;
    im.mask[29 * 64 + 30] = TIDE_MASK_COSMIC;
    CHECK_OK(tide_aperture_photometry_ex(ctx, &im, NULL, 1, &cx, &cy, 1, &r, &p, &f, &e, &fl, &ex));
    printf("aperture r=5: truth %.2f, mirrored %.2f (ratio %.5f)\n", truth, f, f / truth);
    CHECK(fabs(f / truth - 1.0) < 0.002);
    CHECK(fl & TIDE_PHOT_MASKED);
    printf("  masked area %.3f px\n", marea);
    CHECK(marea > 7.0 && marea < 9.0); /* (35, 28) and (35, 29) lie partly outside */
    CHECK_CLOSE(area, PI * r * r, 1e-9);

    /* the old correction, for the record: unmasked sum × area / unmasked area */
    p.mask_correct = 0;
    double f0;
    CHECK_OK(
        tide_aperture_photometry_ex(ctx, &im, NULL, 1, &cx, &cy, 1, &r, &p, &f0, &e, &fl, &ex));
    const double scaled = f0 * area / (area - marea);
    printf("  uncorrected %.2f (ratio %.5f), area-scaled %.2f (ratio %.5f)\n", f0, f0 / truth,
           scaled, scaled / truth);
    CHECK(fabs(scaled / truth - 1.0) > 0.02); /* the scaling is the bias this test is about */
    CHECK(f0 < truth * 0.99 && (fl & TIDE_PHOT_MASKED));
    p.mask_correct = 1;

    /* Kron: the same pixels on a round source (a = b = sigma) */
    {
        tide_kron_params kp;
        tide_kron_params_default(&kp);
        kp.aper.mask_correct = 1;
        const double a = sig, b = sig, th = 0.0;
        double kr, kf, ke, kt;
        int32_t kfl;
        CHECK_OK(tide_kron_photometry(ctx, &im, NULL, 1, &cx, &cy, &a, &b, &th, &kp, &kr, &kf, &ke,
                                      &kfl));
        CHECK(kfl & TIDE_PHOT_MASKED);
        uint16_t *save = im.mask;
        im.mask = NULL;
        int32_t kfl0;
        double kr0;
        CHECK_OK(tide_kron_photometry(ctx, &im, NULL, 1, &cx, &cy, &a, &b, &th, &kp, &kr0, &kt, &ke,
                                      &kfl0));
        im.mask = save;
        printf("kron: truth %.2f, mirrored %.2f (ratio %.5f)\n", kt, kf, kf / kt);
        CHECK(kfl0 == 0);
        CHECK(fabs(kf / kt - 1.0) < 0.002);
    }

    /* pixels whose mirror points are masked as well (no bilinear set, no nearest pixel)
     * fall back to the scaling of the remainder: exact on a constant frame */
    for (int64_t k = 0; k < 64 * 64; k++)
        im.pix[k] = 3.0f;
    for (int k = 0; k < nw; k++) {
        const double mx = 2.0 * cx - wing[k][0], my = 2.0 * cy - wing[k][1];
        for (int dj = -1; dj <= 1; dj++)
            for (int di = -1; di <= 1; di++)
                im.mask[((int)floor(my + 0.5) + dj) * 64 + (int)floor(mx + 0.5) + di] =
                    TIDE_MASK_COSMIC;
    }
    CHECK_OK(tide_aperture_photometry_ex(ctx, &im, NULL, 1, &cx, &cy, 1, &r, &p, &f, &e, &fl, &ex));
    CHECK_CLOSE(f, 3.0 * PI * r * r, 1e-9);
    CHECK(fl & TIDE_PHOT_MASKED);

    tide_image_free(ctx, &im);
    tide_ctx_destroy(ctx);
    TIDE_TEST_RESULT();
}
