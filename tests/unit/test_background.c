/* test_background.c — the background estimate and noise model against known truth:
 * constant + gradient frames with Gaussian noise, NaN blocks, masks, tiny frames (1×1, smaller
 * than a mesh), a 20000×300 strip, strides, thread-count determinism, the smooth mode, bad
 * arguments; and the mode estimator's fast walk against Source Extractor's sequential one on
 * random histograms (exact equality). */
#include <stdint.h>

#include "common/test_rng.h"
#include "reduction/background/background_math.h"
#include "tide/tide.h"
#include "tide_test.h"

/* ---- deterministic noise ---------------------------------------------------------------- */
static uint64_t rng_state = 88172645463325252ull;
static double urand(void) {
    return trng_open(trng_xorshift64(&rng_state));
}
static double grand(void) {
    return sqrt(-2.0 * log(urand())) * cos(6.283185307179586 * urand());
}

/* sky(x, y) = b0 + gx·x + gy·y + q·((x − w/2)² + (y − h/2)²) */
typedef struct sky {
    double b0, gx, gy, q, sigma;
} sky;
static double sky_at(const sky *s, int64_t w, int64_t h, int64_t x, int64_t y) {
    const double dx = (double)x - w / 2.0, dy = (double)y - h / 2.0;
    return s->b0 + s->gx * x + s->gy * y + s->q * (dx * dx + dy * dy);
}
static void fill_sky(tide_image *im, const sky *s) {
    for (int64_t y = 0; y < im->height; y++)
        for (int64_t x = 0; x < im->width; x++)
            im->pix[y * im->stride + x] =
                (float)(sky_at(s, im->width, im->height, x, y) + s->sigma * grand());
}

/* Max and RMS of |map − truth| over the frame (NaN in the map counts as infinite). */
static int64_t err_x, err_y;
static void err_truth(const tide_image *m, const sky *s, double *mx, double *rms) {
    double e = 0, ss = 0;
    for (int64_t y = 0; y < m->height; y++)
        for (int64_t x = 0; x < m->width; x++) {
            double d =
                fabs((double)m->pix[y * m->stride + x] - sky_at(s, m->width, m->height, x, y));
            if (isnan(d))
                d = INFINITY;
            ss += d * d;
            if (!(d <= e)) {
                e = d;
                err_x = x;
                err_y = y;
            }
        }
    *mx = e;
    *rms = sqrt(ss / (double)(m->width * m->height));
}
static void range_of(const tide_image *m, double *lo, double *hi) {
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int64_t y = 0; y < m->height; y++)
        for (int64_t x = 0; x < m->width; x++) {
            const double v = m->pix[y * m->stride + x];
            if (!(v >= *lo))
                *lo = v;
            if (!(v <= *hi))
                *hi = v;
        }
}
static int same_bits(const tide_image *a, const tide_image *b) {
    for (int64_t y = 0; y < a->height; y++)
        if (memcmp(a->pix + y * a->stride, b->pix + y * b->stride,
                   sizeof(float) * (size_t)a->width))
            return 0;
    return 1;
}

/* ---- Source Extractor's backguess as it is written: the sequential two-ended walk -------- */
static void ref_guess(const uint32_t *hist, const tide_bkg_hist *h, float *mode, float *sigma) {
    const int top = h->nlevels - 1;
    if (top <= 0) {
        *mode = h->mean;
        *sigma = 0.0f;
        return;
    }
    int lcut = 0, hcut = top;
    double sig = 10.0 * top, sig1 = 1.0, mea = 0, med = 0;
    for (int n = 100; n-- && sig >= 0.1 && fabs(sig / sig1 - 1.0) > 1e-4;) {
        sig1 = sig;
        uint64_t lowsum = 0, highsum = 0, sum = 0;
        double s1 = 0, s2 = 0;
        int lo = lcut, hi = hcut;
        for (int i = lcut; i <= hcut; i++) {
            if (lowsum < highsum)
                lowsum += hist[lo++];
            else
                highsum += hist[hi--];
            sum += hist[i];
            s1 += (double)hist[i] * i;
            s2 += (double)hist[i] * i * i;
        }
        if (hi >= 0) {
            const uint32_t a = lo <= top ? hist[lo] : 0, b = hist[hi], m = a > b ? a : b;
            med = hi + 0.5 + (m ? ((double)highsum - (double)lowsum) / (2.0 * m) : 0.0);
        } else
            med = 0.0;
        mea = sig = 0;
        if (sum) {
            mea = s1 / (double)sum;
            sig = s2 / (double)sum - mea * mea;
        }
        sig = sig > 0.0 ? sqrt(sig) : 0.0;
        double t = med - 3.0 * sig;
        lcut = t > 0.0 ? (int)(t + 0.5) : 0;
        t = med + 3.0 * sig;
        hcut = t < top ? (int)(t > 0.0 ? t + 0.5 : t - 0.5) : top;
        if (lcut > top)
            lcut = top + 1;
    }
    const double qz = h->qzero, qs = h->qscale;
    double m;
    if (sig > 0.0)
        m = fabs((mea - med) / sig) < 0.3 ? qz + (2.5 * med - 1.5 * mea) * qs : qz + med * qs;
    else
        m = qz + mea * qs;
    *mode = (float)m;
    *sigma = (float)(sig * qs);
}

static void test_walk(void) {
    static uint32_t hist[4096], c0[4097];
    static uint64_t c1[4097], c2[4097];
    int bad = 0;
    for (int trial = 0; trial < 3000; trial++) {
        const int n = 1 + (int)(urand() * (trial % 3 == 0 ? 30 : 4096));
        const int kind = trial % 4;
        for (int i = 0; i < n; i++) {
            const double z = (i - n * (0.3 + 0.4 * urand())) / (n * 0.1 + 1);
            uint32_t c = (uint32_t)(1000.0 * exp(-0.5 * z * z) * urand());
            if (kind == 1 && urand() < 0.7)
                c = 0; /* sparse: quantised data */
            if (kind == 2)
                c = (uint32_t)(urand() * 3);
            hist[i] = c;
        }
        tide_bkg_prefix(hist, n, c0, c1, c2);
        /* the walk alone, on random ranges */
        for (int r = 0; r < 5; r++) {
            int lo = (int)(urand() * n), hi = (int)(urand() * n);
            if (lo > hi) {
                const int t = lo;
                lo = hi;
                hi = t;
            }
            uint64_t ls = 0, hs = 0;
            int a = lo, b = hi;
            for (int i = lo; i <= hi; i++) {
                if (ls < hs)
                    ls += hist[a++];
                else
                    hs += hist[b--];
            }
            bad += tide_bkg_walk(c0, lo, hi) != a - lo;
        }
        tide_bkg_hist h;
        h.nlevels = n;
        h.mean = 100.0f;
        h.sigma = 10.0f;
        h.qzero = 50.0f;
        h.qscale = 100.0f / n;
        h.cste = 0.0f;
        float m1, s1, m2, s2;
        ref_guess(hist, &h, &m1, &s1);
        tide_bkg_guess(&h, c0, c1, c2, &m2, &s2);
        if (memcmp(&m1, &m2, sizeof m1) || memcmp(&s1, &s2, sizeof s1)) {
            if (bad < 5)
                fprintf(stderr, "guess differs: n=%d kind=%d %.9g/%.9g vs %.9g/%.9g\n", n, kind, m1,
                        s1, m2, s2);
            bad++;
        }
    }
    CHECK(bad == 0);
}

/* ---- truth tests ---------------------------------------------------------------------- */

static void test_gradient(tide_ctx *ctx) {
    const sky s = {1000.0, 0.05, -0.02, 0.0, 10.0};
    tide_image im = {0}, b = {0}, r = {0};
    CHECK_OK(tide_image_alloc(ctx, &im, 1000, 700, TIDE_HOST, 0));
    fill_sky(&im, &s);
    tide_bkg_summary sm;
    CHECK_OK(tide_background_estimate(ctx, &im, NULL, &b, &r, &sm));
    double mx, rm, lo, hi;
    err_truth(&b, &s, &mx, &rm);
    range_of(&r, &lo, &hi);
    printf("gradient 1000x700: max |bkg-truth| %.3f sigma at (%lld, %lld), rms %.3f sigma; rms "
           "map %.3f..%.3f; global rms %.4f\n",
           mx / s.sigma, (long long)err_x, (long long)err_y, rm / s.sigma, lo, hi, sm.global_rms);
    CHECK(sm.nx_mesh == 16 && sm.ny_mesh == 11 && sm.n_bad_mesh == 0);
    /* the mode of a 64² mesh scatters by ~0.05 sigma; corner meshes are neither filtered (SE's
     * window shrinks to 1x1 there) nor interior, so the extremes are at the corners */
    CHECK(mx <= 0.4 * s.sigma);
    CHECK(rm <= 0.05 * s.sigma);
    CHECK(lo >= 0.95 * s.sigma && hi <= 1.05 * s.sigma);
    CHECK_CLOSE(sm.global_rms, s.sigma, 0.02 * s.sigma);
    CHECK_CLOSE(sm.global_back, sky_at(&s, 1000, 700, 500, 350), 2.0);

    /* threads: 1 and 2 give the same bits; so does a second run */
    tide_ctx *c1 = tide_test_ctx(TIDE_BACKEND_CPU, 1);
    tide_image b1 = {0}, r1 = {0};
    CHECK_OK(tide_background_estimate(c1, &im, NULL, &b1, &r1, NULL));
    CHECK(same_bits(&b, &b1) && same_bits(&r, &r1));
    tide_image_free(c1, &b1);
    tide_image_free(c1, &r1);
    tide_ctx_destroy(c1);

    /* a strided view of the same pixels gives the same maps */
    tide_image st = {0}, bs = {0};
    CHECK_OK(tide_image_alloc(ctx, &st, 1013, 700, TIDE_HOST, 0));
    st.width = 1000;
    for (int64_t y = 0; y < 700; y++)
        memcpy(st.pix + y * st.stride, im.pix + y * im.stride, 1000 * sizeof(float));
    CHECK_OK(tide_background_estimate(ctx, &st, NULL, &bs, NULL, NULL));
    CHECK(same_bits(&b, &bs));
    st.width = 1013;
    tide_image_free(ctx, &st);
    tide_image_free(ctx, &bs);

    /* NaN blocks: whole meshes and pieces of meshes; the map stays close to the truth */
    for (int k = 0; k < 12; k++) {
        const int64_t x0 = (int64_t)(urand() * 900), y0 = (int64_t)(urand() * 600);
        const int64_t bw = 20 + (int64_t)(urand() * 130), bh = 20 + (int64_t)(urand() * 130);
        for (int64_t y = y0; y < y0 + bh && y < 700; y++)
            for (int64_t x = x0; x < x0 + bw && x < 1000; x++)
                im.pix[y * im.stride + x] = NAN;
    }
    for (int64_t y = 128; y < 256; y++) /* a 2x2-mesh hole */
        for (int64_t x = 192; x < 320; x++)
            im.pix[y * im.stride + x] = NAN;
    tide_image bn = {0}, rn = {0};
    CHECK_OK(tide_background_estimate(ctx, &im, NULL, &bn, &rn, &sm));
    err_truth(&bn, &s, &mx, &rm);
    range_of(&rn, &lo, &hi);
    printf("NaN blocks: %lld bad meshes; max |bkg-truth| %.3f sigma, rms %.3f sigma\n",
           (long long)sm.n_bad_mesh, mx / s.sigma, rm / s.sigma);
    CHECK(sm.n_bad_mesh >= 4);
    CHECK(mx <= 0.3 * s.sigma); /* filled meshes take neighbours' values: a gradient bias */
    CHECK(rm <= 0.06 * s.sigma);
    CHECK(lo >= 0.9 * s.sigma && hi <= 1.1 * s.sigma);
    tide_image_free(ctx, &bn);
    tide_image_free(ctx, &rn);
    tide_image_free(ctx, &im);
    tide_image_free(ctx, &b);
    tide_image_free(ctx, &r);
}

static void test_mask(tide_ctx *ctx) {
    const sky s = {500.0, 0.0, 0.0, 0.0, 5.0};
    tide_image a = {0}, bimg = {0};
    CHECK_OK(tide_image_alloc(ctx, &a, 300, 257, TIDE_HOST, TIDE_IMAGE_MASK));
    fill_sky(&a, &s);
    CHECK_OK(tide_image_clone(ctx, &bimg, &a, TIDE_HOST));
    /* B: bright junk in masked regions (a saturated star, a cosmic-ray column) */
    for (int64_t y = 40; y < 120; y++)
        for (int64_t x = 50; x < 200; x++) {
            bimg.pix[y * bimg.stride + x] = 60000.0f;
            a.mask[y * a.stride + x] = bimg.mask[y * bimg.stride + x] = TIDE_MASK_SATURATED;
        }
    for (int64_t y = 0; y < 257; y++) {
        bimg.pix[y * bimg.stride + 250] = 1e30f;
        a.mask[y * a.stride + 250] = bimg.mask[y * bimg.stride + 250] = TIDE_MASK_COSMIC;
    }
    tide_image ba = {0}, ra = {0}, bb = {0}, rb = {0};
    tide_bkg_summary sa, sb;
    CHECK_OK(tide_background_estimate(ctx, &a, NULL, &ba, &ra, &sa));
    CHECK_OK(tide_background_estimate(ctx, &bimg, NULL, &bb, &rb, &sb));
    CHECK(same_bits(&ba, &bb) && same_bits(&ra, &rb)); /* masked values do not matter */
    CHECK(sa.global_back == sb.global_back && sa.global_rms == sb.global_rms);
    double mx, rm;
    err_truth(&bb, &s, &mx, &rm);
    printf("mask: max |bkg-truth| %.3f sigma at (%lld, %lld), rms %.3f sigma\n", mx / s.sigma,
           (long long)err_x, (long long)err_y, rm / s.sigma);
    CHECK(mx <= 0.4 * s.sigma && rm <= 0.07 * s.sigma);
    /* only the bits asked for exclude a pixel */
    tide_bkg_params p;
    tide_bkg_params_default(&p);
    p.mask_bits = TIDE_MASK_COSMIC;
    tide_image bc = {0};
    CHECK_OK(tide_background_estimate(ctx, &bimg, &p, &bc, NULL, NULL));
    err_truth(&bc, &s, &mx, &rm);
    CHECK(mx > 1.0 * s.sigma); /* the unmasked saturated block now pulls the background up */
    tide_image_free(ctx, &bc);
    tide_image_free(ctx, &ba);
    tide_image_free(ctx, &ra);
    tide_image_free(ctx, &bb);
    tide_image_free(ctx, &rb);
    tide_image_free(ctx, &a);
    tide_image_free(ctx, &bimg);
}

static void test_tiny(tide_ctx *ctx) {
    tide_image im = {0}, b = {0}, r = {0};
    tide_bkg_summary sm;
    /* 1x1: the value itself, RMS 0 */
    CHECK_OK(tide_image_alloc(ctx, &im, 1, 1, TIDE_HOST, 0));
    im.pix[0] = 42.5f;
    CHECK_OK(tide_background_estimate(ctx, &im, NULL, &b, &r, &sm));
    CHECK(b.pix[0] == 42.5f && r.pix[0] == 0.0f);
    CHECK(sm.nx_mesh == 1 && sm.ny_mesh == 1 && sm.global_back == 42.5);
    CHECK(sm.global_rms == 1.0); /* SE: no positive mesh RMS -> 1 */
    tide_image_free(ctx, &b);
    tide_image_free(ctx, &r);
    /* 1x1 NaN: nothing to measure */
    im.pix[0] = NAN;
    CHECK(tide_background_estimate(ctx, &im, NULL, &b, &r, &sm) == TIDE_E_EMPTY);
    CHECK(b.pix == NULL && r.pix == NULL);
    tide_image_free(ctx, &im);

    /* frames smaller than one mesh, and sizes around the mesh size */
    const int64_t sizes[][2] = {{3, 2}, {10, 10}, {63, 65}, {64, 64}, {65, 1}, {1, 200}, {129, 67}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const sky s = {200.0, 0.0, 0.0, 0.0, 3.0};
        CHECK_OK(tide_image_alloc(ctx, &im, sizes[k][0], sizes[k][1], TIDE_HOST, 0));
        fill_sky(&im, &s);
        CHECK_OK(tide_background_estimate(ctx, &im, NULL, &b, &r, &sm));
        double mx, rm, lo, hi;
        err_truth(&b, &s, &mx, &rm);
        range_of(&r, &lo, &hi);
        const double n = (double)(sizes[k][0] * sizes[k][1]);
        /* the mode of n noisy pixels: a few sigma/sqrt(n), plus spline wiggle between meshes */
        CHECK(mx <= 6.0 * s.sigma / sqrt(n) + 0.2 * s.sigma);
        CHECK(lo >= 0.0 && hi <= 2.0 * s.sigma);
        CHECK(sm.nx_mesh == (sizes[k][0] + 63) / 64 && sm.ny_mesh == (sizes[k][1] + 63) / 64);
        tide_image_free(ctx, &b);
        tide_image_free(ctx, &r);
        tide_image_free(ctx, &im);
    }

    /* every mesh below half valid, but valid pixels exist: one mesh over the whole frame */
    const sky s = {100.0, 0.0, 0.0, 0.0, 2.0};
    CHECK_OK(tide_image_alloc(ctx, &im, 128, 128, TIDE_HOST, 0));
    fill_sky(&im, &s);
    for (int64_t i = 0; i < 128 * 128; i++)
        if (i % 3)
            im.pix[i] = NAN;
    CHECK_OK(tide_background_estimate(ctx, &im, NULL, &b, &r, &sm));
    CHECK(sm.nx_mesh == 1 && sm.ny_mesh == 1);
    CHECK_CLOSE(b.pix[0], 100.0, 0.3);
    CHECK_CLOSE(b.pix[0], b.pix[128 * 128 - 1], 0.0);
    tide_image_free(ctx, &b);
    tide_image_free(ctx, &r);
    for (int64_t i = 0; i < 128 * 128; i++)
        im.pix[i] = NAN;
    CHECK(tide_background_estimate(ctx, &im, NULL, &b, NULL, NULL) == TIDE_E_EMPTY);
    tide_image_free(ctx, &im);
}

static void test_strip(tide_ctx *ctx) {
    const sky s = {300.0, 0.001, 0.01, 0.0, 4.0};
    tide_image im = {0}, b = {0}, r = {0};
    CHECK_OK(tide_image_alloc(ctx, &im, 20000, 300, TIDE_HOST, 0));
    fill_sky(&im, &s);
    tide_bkg_summary sm;
    const double t0 = tide_now();
    CHECK_OK(tide_background_estimate(ctx, &im, NULL, &b, &r, &sm));
    const double t1 = tide_now();
    double mx, rm;
    err_truth(&b, &s, &mx, &rm);
    printf("strip 20000x300: %.1f ms, max |bkg-truth| %.3f sigma, rms %.3f sigma\n",
           (t1 - t0) * 1e3, mx / s.sigma, rm / s.sigma);
    CHECK(sm.nx_mesh == 313 && sm.ny_mesh == 5);
    CHECK(mx <= 0.3 * s.sigma && rm <= 0.04 * s.sigma);
    tide_image_free(ctx, &b);
    tide_image_free(ctx, &r);
    /* the transposed strip */
    tide_image_free(ctx, &im);
    CHECK_OK(tide_image_alloc(ctx, &im, 300, 20000, TIDE_HOST, 0));
    fill_sky(&im, &s);
    CHECK_OK(tide_background_estimate(ctx, &im, NULL, &b, &r, &sm));
    err_truth(&b, &s, &mx, &rm);
    printf("strip 300x20000: max |bkg-truth| %.3f sigma at (%lld, %lld), rms %.3f sigma\n",
           mx / s.sigma, (long long)err_x, (long long)err_y, rm / s.sigma);
    CHECK(sm.nx_mesh == 5 && sm.ny_mesh == 313);
    CHECK(mx <= 0.3 * s.sigma && rm <= 0.04 * s.sigma);
    tide_image_free(ctx, &b);
    tide_image_free(ctx, &r);
    tide_image_free(ctx, &im);
}

static void test_smooth(tide_ctx *ctx) {
    /* a curved sky with a broad "nebula"; the smooth mode (degree 2, large meshes) follows the
     * quadratic and ignores structure it cannot represent, the plain mode follows it */
    const sky s = {1000.0, 0.02, -0.01, 4e-5, 8.0};
    tide_image im = {0}, b = {0}, b2 = {0};
    CHECK_OK(tide_image_alloc(ctx, &im, 1024, 1024, TIDE_HOST, 0));
    fill_sky(&im, &s);
    tide_bkg_params p;
    tide_bkg_params_default(&p);
    p.mesh_w = p.mesh_h = 128;
    p.smooth_degree = 2;
    tide_bkg_summary sm;
    CHECK_OK(tide_background_estimate(ctx, &im, &p, &b, NULL, &sm));
    double mx, rm;
    err_truth(&b, &s, &mx, &rm);
    printf("smooth degree 2 on a quadratic sky: max %.3f sigma, rms %.3f sigma\n", mx / s.sigma,
           rm / s.sigma);
    /* mesh modes of a curved sky carry a small estimator bias (skewed mesh histograms) */
    CHECK(mx <= 0.15 * s.sigma && rm <= 0.06 * s.sigma);
    /* add a blob (50 px, 10 sigma): degree 2 keeps the quadratic, the plain 64-px map bends */
    for (int64_t y = 0; y < 1024; y++)
        for (int64_t x = 0; x < 1024; x++) {
            const double d2 = (double)((x - 300) * (x - 300) + (y - 700) * (y - 700));
            im.pix[y * im.stride + x] += (float)(80.0 * exp(-0.5 * d2 / (50.0 * 50.0)));
        }
    tide_image_free(ctx, &b);
    CHECK_OK(tide_background_estimate(ctx, &im, &p, &b, NULL, &sm));
    p.smooth_degree = 0;
    p.mesh_w = p.mesh_h = 64;
    CHECK_OK(tide_background_estimate(ctx, &im, &p, &b2, NULL, &sm));
    const double t = sky_at(&s, 1024, 1024, 300, 700);
    printf("blob centre: truth sky %.2f, smooth %.2f, plain %.2f\n", t, b.pix[700 * b.stride + 300],
           b2.pix[700 * b2.stride + 300]);
    CHECK(fabs(b.pix[700 * b.stride + 300] - t) < 0.5 * s.sigma);
    CHECK(b2.pix[700 * b2.stride + 300] - t > 1.0 * s.sigma);
    p.smooth_degree = 7;
    CHECK(tide_background_estimate(ctx, &im, &p, &b2, NULL, &sm) == TIDE_E_INVAL);
    tide_image_free(ctx, &b);
    tide_image_free(ctx, &b2);
    tide_image_free(ctx, &im);
}

static void test_args(tide_ctx *ctx) {
    tide_image im = {0}, b = {0};
    CHECK_OK(tide_image_alloc(ctx, &im, 50, 50, TIDE_HOST, 0));
    tide_bkg_params p;
    tide_bkg_params_default(&p);
    CHECK(p.mesh_w == 64 && p.mesh_h == 64 && p.filter_w == 3 && p.filter_h == 3 &&
          p.filter_thresh == 0.0 && p.mask_bits == 0xFFFF && p.min_good_frac == 0.5);
    p.mesh_w = 0;
    CHECK(tide_background_estimate(ctx, &im, &p, &b, NULL, NULL) == TIDE_E_INVAL);
    tide_bkg_params_default(&p);
    p.filter_h = 0;
    CHECK(tide_background_estimate(ctx, &im, &p, &b, NULL, NULL) == TIDE_E_INVAL);
    tide_bkg_params_default(&p);
    p.filter_thresh = -1;
    CHECK(tide_background_estimate(ctx, &im, &p, &b, NULL, NULL) == TIDE_E_INVAL);
    CHECK(tide_background_estimate(ctx, NULL, NULL, &b, NULL, NULL) == TIDE_E_INVAL);
    tide_image dev = im;
    dev.location = TIDE_DEVICE;
    CHECK(tide_background_estimate(ctx, &dev, NULL, &b, NULL, NULL) == TIDE_E_INVAL);
    CHECK(strstr(tide_error_detail(), "device") != NULL);
    /* meshes one column wide, filter 1: each mesh is one constant column, so the map is the
     * frame itself (x nodes sit at pixel centres; a single mesh row interpolates linearly) */
    for (int i = 0; i < 2500; i++)
        im.pix[i] = (float)((i % 50) % 7);
    tide_bkg_params_default(&p);
    p.mesh_w = 1;
    p.filter_w = p.filter_h = 1;
    CHECK_OK(tide_background_estimate(ctx, &im, &p, &b, NULL, NULL));
    int eq = 1;
    for (int i = 0; i < 2500; i++)
        eq &= b.pix[i] == im.pix[i];
    CHECK(eq);
    tide_image_free(ctx, &b);
    /* both maps optional */
    tide_bkg_summary sm;
    CHECK_OK(tide_background_estimate(ctx, &im, NULL, NULL, NULL, &sm));
    CHECK(sm.nx_mesh == 1);
    tide_image_free(ctx, &im);
}

static void test_noise(tide_ctx *ctx) {
    tide_image b = {0}, v = {0};
    CHECK_OK(tide_image_alloc(ctx, &b, 7, 3, TIDE_HOST, 0));
    for (int i = 0; i < 21; i++)
        b.pix[i] = (float)(100 * i);
    b.pix[5] = NAN;
    b.pix[6] = -50.0f;
    const double gain = 2.5, rn = 4.0;
    CHECK_OK(tide_noise_model(ctx, &b, gain, rn, 4, &v));
    for (int i = 0; i < 21; i++) {
        if (i == 5) {
            CHECK(isnan(v.pix[i]));
            continue;
        }
        const double sky = b.pix[i] > 0 ? b.pix[i] : 0.0;
        const double want = (sky / gain + (rn / gain) * (rn / gain)) / 4.0;
        CHECK_CLOSE(v.pix[i], want, 1e-6 * want + 1e-12);
    }
    tide_image_free(ctx, &v);
    /* a frame of pure Poisson sky: the model matches the measured variance (one frame) */
    tide_image im = {0}, bk = {0}, rm = {0};
    CHECK_OK(tide_image_alloc(ctx, &im, 512, 512, TIDE_HOST, 0));
    const double level = 900.0; /* ADU; gain 2 -> 1800 e-, sigma_e = 42.4 */
    for (int64_t i = 0; i < 512 * 512; i++)
        im.pix[i] = (float)(level + (sqrt(level * 2.0) * grand() + rn * grand()) / 2.0);
    CHECK_OK(tide_background_estimate(ctx, &im, NULL, &bk, &rm, NULL));
    CHECK_OK(tide_noise_model(ctx, &bk, 2.0, rn, 1, &v));
    const double model = sqrt(v.pix[256 * 512 + 256]), meas = rm.pix[256 * 512 + 256];
    printf("noise model: modelled sigma %.3f, measured mesh RMS %.3f ADU\n", model, meas);
    CHECK_CLOSE(model, meas, 0.03 * meas);
    CHECK(tide_noise_model(ctx, &bk, 0.0, rn, 1, &v) == TIDE_E_INVAL);
    CHECK(tide_noise_model(ctx, &bk, 2.0, -1.0, 1, &v) == TIDE_E_INVAL);
    CHECK(tide_noise_model(ctx, &bk, 2.0, rn, 0, &v) == TIDE_E_INVAL);
    tide_image_free(ctx, &v);
    tide_image_free(ctx, &bk);
    tide_image_free(ctx, &rm);
    tide_image_free(ctx, &im);
    tide_image_free(ctx, &b);
}

int main(void) {
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    test_walk();
    test_gradient(ctx);
    test_mask(ctx);
    test_tiny(ctx);
    test_strip(ctx);
    test_smooth(ctx);
    test_args(ctx);
    test_noise(ctx);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
