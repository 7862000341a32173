/* test_cosmetics.c — the cosmetics stage on frames built here: argument checks, tiny and
 * all-NaN frames, pure noise (no false flags), exact bleed-trail extents along columns and
 * rows, hot/cold pixels beside a sharp star, inpainting that keeps the defect bits and leaves
 * every other pixel untouched, thread-count independence, and without a gain the same masks
 * at any scale of the pixels. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_rng.h"
#include "tide/tide.h"
#include "tide_test.h"

static uint64_t rs = 1;
static double urand(void) {
    return trng_unit(trng_lcg64(&rs));
}
static double nrand(void) {
    double u = urand() + 1e-300, v = urand();
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* Sky of 1000 ADU with Poisson-like noise for gain 1, read noise 5 e-. */
static void sky(tide_image *im, uint64_t seed) {
    rs = seed;
    const double sig = sqrt(1000.0 + 25.0);
    for (int64_t i = 0; i < im->width * im->height; i++) {
        im->pix[i] = (float)(1000.0 + sig * nrand());
        im->mask[i] = 0;
    }
}

static void add_star(tide_image *im, double x0, double y0, double amp, double fwhm) {
    const double s = fwhm / 2.3548;
    for (int64_t y = 0; y < im->height; y++)
        for (int64_t x = 0; x < im->width; x++) {
            double r2 = (x - x0) * (x - x0) + (y - y0) * (y - y0);
            if (r2 < 100)
                im->pix[y * im->width + x] += (float)(amp * exp(-r2 / (2 * s * s)));
        }
}

static void params(tide_cosmetics_params *p) {
    tide_cosmetics_params_default(p);
    p->gain = 1.0;
    p->rdnoise = 5.0;
}

static int64_t count_bits(const tide_image *im, uint16_t bits) {
    int64_t c = 0;
    for (int64_t i = 0; i < im->width * im->height; i++)
        c += (im->mask[i] & bits) != 0;
    return c;
}

static void test_args(tide_ctx *ctx) {
    tide_image im;
    CHECK_OK(tide_image_alloc(ctx, &im, 8, 8, TIDE_HOST, 0));
    CHECK(tide_cosmetics_apply(ctx, &im, NULL, NULL) == TIDE_E_INVAL); /* no mask plane */
    tide_image_free(ctx, &im);
    CHECK_OK(tide_image_alloc(ctx, &im, 8, 8, TIDE_HOST, TIDE_IMAGE_MASK));
    tide_cosmetics_params p;
    params(&p);
    p.gain = -1; /* 0 is allowed: unknown */
    CHECK(tide_cosmetics_apply(ctx, &im, &p, NULL) == TIDE_E_INVAL);
    CHECK(strstr(tide_error_detail(), "gain") != NULL);
    params(&p);
    p.niter = 0;
    CHECK(tide_cosmetics_params_check(&p) == TIDE_E_INVAL);
    params(&p);
    p.bleed_frac = 1.5;
    CHECK(tide_cosmetics_params_check(&p) == TIDE_E_INVAL);
    CHECK_OK(tide_cosmetics_apply(ctx, &im, NULL, NULL)); /* defaults, all-zero frame */
    CHECK(count_bits(&im, 0xFFFF) == 0);
    tide_image_free(ctx, &im);
    CHECK(tide_cosmetics_params_size() == (int64_t)sizeof(tide_cosmetics_params));

    tide_header h;
    tide_header_init(&h);
    CHECK_OK(tide_header_set_dbl(&h, "SATURATE", 60000, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "EGAIN", 1.7, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "READNOIS", 4.5, NULL));
    params(&p);
    CHECK_OK(tide_cosmetics_params_from_header(&p, &h));
    CHECK(p.saturation == 60000 && p.gain == 1.7 && p.rdnoise == 4.5);
    CHECK_OK(tide_header_set_str(&h, "GAIN", "lots", NULL));
    CHECK(tide_cosmetics_params_from_header(&p, &h) == TIDE_E_FORMAT);
    tide_header_free(&h);
}

static void test_tiny_and_nan(tide_ctx *ctx) {
    tide_cosmetics_params p;
    params(&p);
    p.saturation = 5000;
    p.inpaint = 1;
    tide_image im;
    CHECK_OK(tide_image_alloc(ctx, &im, 1, 1, TIDE_HOST, TIDE_IMAGE_MASK));
    im.pix[0] = 1e6f;
    tide_cosmetics_report r;
    CHECK_OK(tide_cosmetics_apply(ctx, &im, &p, &r));
    CHECK(im.mask[0] == TIDE_MASK_SATURATED && r.n_saturated == 1 && r.n_cosmic == 0);
    tide_image_free(ctx, &im);

    CHECK_OK(tide_image_alloc(ctx, &im, 37, 29, TIDE_HOST, TIDE_IMAGE_MASK));
    for (int64_t i = 0; i < 37 * 29; i++) {
        im.pix[i] = NAN;
        im.mask[i] = TIDE_MASK_NODATA;
    }
    CHECK_OK(tide_cosmetics_apply(ctx, &im, &p, &r));
    CHECK(count_bits(&im, (uint16_t)~TIDE_MASK_NODATA) == 0);
    CHECK(isnan(im.pix[100]));
    tide_image_free(ctx, &im);
}

/* Pure noise: nothing flagged (L.A.Cosmic at 4.5σ with objlim, hot/cold at 5σ). */
static void test_noise(tide_ctx *ctx) {
    tide_image im;
    CHECK_OK(tide_image_alloc(ctx, &im, 512, 512, TIDE_HOST, TIDE_IMAGE_MASK));
    sky(&im, 3);
    tide_cosmetics_params p;
    params(&p);
    tide_cosmetics_report r;
    CHECK_OK(tide_cosmetics_apply(ctx, &im, &p, &r));
    printf("pure noise 512x512: hot %lld cold %lld cosmic %lld\n", (long long)r.n_hot,
           (long long)r.n_cold, (long long)r.n_cosmic);
    CHECK(r.n_hot + r.n_cold <= 2);
    CHECK(r.n_cosmic <= 5);
    tide_image_free(ctx, &im);
}

/* A saturated run rows 20..29 of column 7 and pixels above the half level at rows 18, 19 and
 * 30 → BLEED on 18, 19, 30 and the grow (2) 16, 17, 31, 32; SATURATED on 20..29. */
static void test_bleed(tide_ctx *ctx, int axis) {
    const int64_t W = 15, H = 50;
    tide_image im;
    int64_t w = axis == 0 ? W : H, h = axis == 0 ? H : W;
    CHECK_OK(tide_image_alloc(ctx, &im, w, h, TIDE_HOST, TIDE_IMAGE_MASK));
    for (int64_t i = 0; i < w * h; i++)
        im.pix[i] = 1000.0f;
#define AT(l, i) im.pix[axis == 0 ? (i)*w + (l) : (l)*w + (i)]
#define MAT(l, i) im.mask[axis == 0 ? (i)*w + (l) : (l)*w + (i)]
    for (int i = 20; i < 30; i++)
        AT(7, i) = 40000.0f;
    AT(7, 18) = 25000.0f;
    AT(7, 19) = 39000.0f;
    AT(7, 30) = 30000.0f;
    AT(7, 40) = 30000.0f; /* high but not connected to saturation: not a trail */
    AT(3, 10) = 20000.0f; /* below the half level (bias 0, saturation 40000 → 20000 is in) */
    tide_cosmetics_params p;
    params(&p);
    p.saturation = 40000;
    p.bleed_axis = axis;
    p.hot = p.cold = p.cosmic = 0;
    tide_cosmetics_report r;
    CHECK_OK(tide_cosmetics_apply(ctx, &im, &p, &r));
    for (int i = 0; i < H; i++) {
        uint16_t want = 0;
        if (i >= 20 && i < 30)
            want = TIDE_MASK_SATURATED;
        else if (i >= 16 && i <= 32)
            want = TIDE_MASK_BLEED;
        if (MAT(7, i) != want)
            printf("axis %d line 7 pos %d: mask %x want %x\n", axis, i, MAT(7, i), want);
        CHECK(MAT(7, i) == want);
        CHECK(MAT(6, i) == 0 && MAT(8, i) == 0);
    }
    CHECK(MAT(3, 10) == 0);
    CHECK(r.n_saturated == 10 && r.n_bleed == 7);
#undef AT
#undef MAT
    tide_image_free(ctx, &im);
}

/* Hot and cold pixels next to sharp (FWHM 1.8) and normal stars: the defects are found, the
 * star peaks are not flagged. */
static void test_hot_cold(tide_ctx *ctx) {
    tide_image im;
    CHECK_OK(tide_image_alloc(ctx, &im, 200, 200, TIDE_HOST, TIDE_IMAGE_MASK));
    sky(&im, 9);
    const double fw[4] = {1.8, 2.5, 3.0, 4.5};
    for (int k = 0; k < 16; k++)
        add_star(&im, 20.3 + 45 * (k % 4), 20.6 + 45 * (k / 4), 2000.0 * (1 + k), fw[k % 4]);
    const int64_t hx[5] = {60, 110, 150, 33, 180}, hy[5] = {30, 77, 150, 180, 12};
    for (int k = 0; k < 5; k++)
        im.pix[hy[k] * 200 + hx[k]] += 400.0f + 500.0f * k; /* >= 12σ */
    const int64_t cx = 120, cy = 130;
    im.pix[cy * 200 + cx] = 500.0f;
    tide_cosmetics_params p;
    params(&p);
    p.cosmic = 0;
    tide_cosmetics_report r;
    CHECK_OK(tide_cosmetics_apply(ctx, &im, &p, &r));
    for (int k = 0; k < 5; k++)
        CHECK(im.mask[hy[k] * 200 + hx[k]] == TIDE_MASK_HOT);
    CHECK(im.mask[cy * 200 + cx] == TIDE_MASK_COLD);
    CHECK(r.n_hot == 5 && r.n_cold == 1);
    /* and with the cosmic-ray pass on, no star pixel is flagged at all */
    memset(im.mask, 0, 200 * 200 * sizeof(uint16_t));
    p.cosmic = 1;
    p.hot = 0;
    CHECK_OK(tide_cosmetics_apply(ctx, &im, &p, &r));
    int64_t starflag = 0;
    for (int k = 0; k < 16; k++) {
        int64_t x0 = 20 + 45 * (k % 4), y0 = 20 + 45 * (k / 4);
        for (int64_t y = y0 - 3; y <= y0 + 3; y++)
            for (int64_t x = x0 - 3; x <= x0 + 3; x++)
                starflag += im.mask[y * 200 + x] != 0;
    }
    printf("cosmic pass on stars: %lld star pixels flagged, %lld cosmic in total\n",
           (long long)starflag, (long long)r.n_cosmic);
    CHECK(starflag == 0);
    for (int k = 0; k < 5; k++)
        CHECK(im.mask[hy[k] * 200 + hx[k]] == TIDE_MASK_COSMIC);
    tide_image_free(ctx, &im);
}

/* Without a gain (0: unknown) the noise is measured from the frame, so a frame in flux units
 * (~1e-18, as ESO's hbo.fits) or in large numbers gets the masks it gets in ADU. The frame of
 * test_hot_cold plus a sky gradient of 3σ across it, multiplied by 2^-60 (~8.7e-19) and 2^20
 * (exact in float: the masks must be identical bit for bit) and by 1e-18 with 1e-15 added (the
 * injected defects, nothing on the stars). With the old absolute floor
 * (max(m − bias, 1e-5) at gain 1) nothing was flagged at 2^-60 and most pixels at 2^20. */
static void test_no_gain(tide_ctx *ctx) {
    const int64_t n = 200, np = n * n;
    tide_image im;
    CHECK_OK(tide_image_alloc(ctx, &im, n, n, TIDE_HOST, TIDE_IMAGE_MASK));
    sky(&im, 9);
    const double fw[4] = {1.8, 2.5, 3.0, 4.5};
    for (int k = 0; k < 16; k++)
        add_star(&im, 20.3 + 45 * (k % 4), 20.6 + 45 * (k / 4), 2000.0 * (1 + k), fw[k % 4]);
    for (int64_t i = 0; i < np; i++)
        im.pix[i] += (float)(0.5 * (double)(i % n)); /* 100 ADU across: ~3σ */
    const int64_t hx[5] = {60, 110, 150, 33, 180}, hy[5] = {30, 77, 150, 180, 12};
    for (int k = 0; k < 5; k++)
        im.pix[hy[k] * n + hx[k]] += 400.0f + 500.0f * k;
    im.pix[130 * n + 120] -= 500.0f;
    float *base = malloc(sizeof(float) * (size_t)np);
    uint16_t *ref = malloc(sizeof(uint16_t) * (size_t)np);
    CHECK(base && ref);
    if (!base || !ref) {
        free(base), free(ref);
        tide_image_free(ctx, &im);
        return;
    }
    memcpy(base, im.pix, sizeof(float) * (size_t)np);
    tide_cosmetics_params p;
    tide_cosmetics_params_default(&p);
    p.gain = 0.0;
    const double scale[4] = {1.0, ldexp(1.0, -60), ldexp(1.0, 20), 1e-18};
    for (int s = 0; s < 4; s++) {
        const double add = s == 3 ? 1e-15 : 0.0;
        for (int64_t i = 0; i < np; i++) {
            im.pix[i] = (float)((double)base[i] * scale[s] + add);
            im.mask[i] = 0;
        }
        tide_cosmetics_report r;
        CHECK_OK(tide_cosmetics_apply(ctx, &im, &p, &r));
        int64_t starflag = 0;
        for (int k = 0; k < 16; k++) {
            const int64_t x0 = 20 + 45 * (k % 4), y0 = 20 + 45 * (k / 4);
            for (int64_t y = y0 - 3; y <= y0 + 3; y++)
                for (int64_t x = x0 - 3; x <= x0 + 3; x++)
                    starflag += im.mask[y * n + x] != 0;
        }
        int hits = 0;
        for (int k = 0; k < 5; k++)
            hits += (im.mask[hy[k] * n + hx[k]] & (TIDE_MASK_HOT | TIDE_MASK_COSMIC)) != 0;
        printf("no gain, x%g + %g: hot %lld cold %lld cosmic %lld, %d of 5 defects, %lld star "
               "pixels\n",
               scale[s], add, (long long)r.n_hot, (long long)r.n_cold, (long long)r.n_cosmic, hits,
               (long long)starflag);
        CHECK(hits == 5 && (im.mask[130 * n + 120] & TIDE_MASK_COLD) && starflag == 0);
        CHECK(r.n_hot + r.n_cold + r.n_cosmic <= 12);
        if (s == 0)
            memcpy(ref, im.mask, sizeof(uint16_t) * (size_t)np);
        else if (s < 3)
            CHECK(memcmp(ref, im.mask, sizeof(uint16_t) * (size_t)np) == 0);
    }
    free(base);
    free(ref);
    tide_image_free(ctx, &im);
}

/* Inpainting: replaced pixels keep their defect bit and gain INTERP, take the median of their
 * clean 5×5 neighbours, and no other pixel changes by a single bit. */
static void test_inpaint(tide_ctx *ctx) {
    tide_image im, orig;
    CHECK_OK(tide_image_alloc(ctx, &im, 64, 64, TIDE_HOST, TIDE_IMAGE_MASK));
    sky(&im, 5);
    for (int k = 0; k < 6; k++) /* a track */
        im.pix[30 * 64 + 20 + k] += 3000.0f;
    im.pix[10 * 64 + 50] += 5000.0f; /* a hot pixel */
    CHECK_OK(tide_image_clone(ctx, &orig, &im, TIDE_HOST));
    tide_cosmetics_params p;
    params(&p);
    p.inpaint = 1;
    tide_cosmetics_report r;
    CHECK_OK(tide_cosmetics_apply(ctx, &im, &p, &r));
    CHECK(r.n_interp == r.n_cosmic + r.n_hot && r.n_interp >= 7);
    for (int64_t i = 0; i < 64 * 64; i++) {
        const uint16_t m = im.mask[i];
        if (m & (TIDE_MASK_COSMIC | TIDE_MASK_HOT)) {
            CHECK(m & TIDE_MASK_INTERP);
            CHECK(fabsf(im.pix[i] - 1000.0f) < 100.0f);
        } else {
            CHECK(m == 0);
            CHECK(memcmp(&im.pix[i], &orig.pix[i], sizeof(float)) == 0);
        }
    }
    CHECK(im.mask[30 * 64 + 22] == (TIDE_MASK_COSMIC | TIDE_MASK_INTERP));
    CHECK(im.mask[10 * 64 + 50] == (TIDE_MASK_HOT | TIDE_MASK_INTERP));
    tide_image_free(ctx, &im);
    tide_image_free(ctx, &orig);
}

/* One thread or two: the same mask. */
static void test_threads(void) {
    tide_ctx *c1 = tide_test_ctx(TIDE_BACKEND_CPU, 1), *c2 = tide_test_ctx(TIDE_BACKEND_CPU, 2);
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    sp.width = 397;
    sp.height = 611;
    sp.nstars = 400;
    sp.cr_rate = 3000;
    sp.seed = 3;
    tide_sim_frame f;
    CHECK_OK(tide_sim_run(c1, &sp, &f, NULL));
    tide_image a, b;
    CHECK_OK(tide_image_alloc(c1, &a, sp.width, sp.height, TIDE_HOST, TIDE_IMAGE_MASK));
    CHECK_OK(tide_image_alloc(c1, &b, sp.width, sp.height, TIDE_HOST, TIDE_IMAGE_MASK));
    const size_t n = (size_t)(sp.width * sp.height);
    memcpy(a.pix, f.image.pix, n * sizeof(float));
    memcpy(b.pix, f.image.pix, n * sizeof(float));
    tide_cosmetics_params p;
    tide_cosmetics_params_default(&p);
    CHECK_OK(tide_cosmetics_params_from_header(&p, &f.header));
    p.bias = sp.bias;
    p.inpaint = 1;
    tide_cosmetics_report ra, rb;
    CHECK_OK(tide_cosmetics_apply(c1, &a, &p, &ra));
    CHECK_OK(tide_cosmetics_apply(c2, &b, &p, &rb));
    CHECK(memcmp(a.mask, b.mask, n * sizeof(uint16_t)) == 0);
    CHECK(memcmp(a.pix, b.pix, n * sizeof(float)) == 0);
    CHECK(ra.n_cosmic == rb.n_cosmic && ra.n_cosmic > 50);
    tide_image_free(c1, &a);
    tide_image_free(c1, &b);
    tide_sim_frame_free(c1, &f);
    tide_ctx_destroy(c1);
    tide_ctx_destroy(c2);
}

int main(void) {
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    test_args(ctx);
    test_tiny_and_nan(ctx);
    test_noise(ctx);
    test_bleed(ctx, 0);
    test_bleed(ctx, 1);
    test_hot_cold(ctx);
    test_inpaint(ctx);
    test_no_gain(ctx);
    test_threads();
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
