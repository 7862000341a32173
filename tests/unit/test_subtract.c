/* test_subtract.c — PSF-matched subtraction on the classic synthetic walkthrough: two 256x256
 * frames on one grid with three static stars and a faint mover, the science blurred by an
 * extra Gaussian of sigma 0.65 px. Static stars must cancel (aperture residual within 3x its
 * noise), the kernel sum must be the flux ratio (1, or the injected 1.25), constant and
 * spatially varying kernels both; a field whose PSF varies across the frame; the science
 * convolved when it is the sharper; decorrelation; masks; the FFT basis path; bad arguments. */
#include <stdint.h>
#include <stdio.h>

#include "common/subtract_synth.h"
#include "tide/tide.h"
#include "tide_test.h"

#define W 256
#define SIG_T 1.2739827 /* FWHM 3 px */
#define SIG_X 0.65

static const synth_star STATIC3[3] = {
    {60.3, 70.7, 30000.0}, {180.6, 90.2, 15000.0}, {120.1, 200.4, 8000.0}};

/* Sum of the difference and of its variance in a (2r+1)^2 box at (x, y). */
static void aper(const tide_image *d, double x, double y, int r, double *sum, double *sig) {
    double s = 0.0, v = 0.0;
    int64_t cx = (int64_t)floor(x + 0.5), cy = (int64_t)floor(y + 0.5);
    for (int64_t j = cy - r; j <= cy + r; j++)
        for (int64_t i = cx - r; i <= cx + r; i++) {
            s += d->pix[j * d->stride + i];
            v += d->var[j * d->stride + i];
        }
    *sum = s;
    *sig = sqrt(v);
}

/* Pair: template (sharp, sky 200, a stack of 4: noise variance / 4) and science (blurred, sky
 * 230, flux x scale) with a mover. Alard-Lupton treats the convolved frame as noiseless: with
 * a template as noisy as the science the kernel sum comes out ~1.2% low (noise in the
 * regressor; see equal_noise below), so the walkthrough uses a deeper template, as surveys
 * do. */
static void make_pair_depth(tide_image *sci, tide_image *tmpl, double scale, double sig_dx,
                            double depth) {
    synth_star t[4], s[4];
    memcpy(t, STATIC3, sizeof STATIC3);
    memcpy(s, STATIC3, sizeof STATIC3);
    t[3] = (synth_star){90.4, 150.2, 2500.0};
    s[3] = (synth_star){96.8, 146.1, 2500.0};
    double ss = sqrt(SIG_T * SIG_T + SIG_X * SIG_X);
    synth_render_depth(tmpl, W, W, 200.0, 1.0, t, 4, SIG_T, 0.0, 11, depth);
    synth_render(sci, W, W, 230.0, scale, s, 4, ss, sig_dx, 23);
}

static void make_pair(tide_image *sci, tide_image *tmpl, double scale, double sig_dx) {
    make_pair_depth(sci, tmpl, scale, sig_dx, 4.0);
}

/* Equal noise in both frames: the documented bias stays within 2%. */
static void equal_noise(tide_ctx *ctx) {
    tide_image sci, tmpl;
    make_pair_depth(&sci, &tmpl, 1.0, 0.0, 1.0);
    double fs = 2.3548 * sqrt(SIG_T * SIG_T + SIG_X * SIG_X), ft = 2.3548 * SIG_T;
    tide_subtract_result r;
    CHECK_OK(tide_subtract(ctx, &sci, &tmpl, fs, ft, NULL, &r));
    printf("equal noise: kernel sum %.5f\n", r.kernel_sum);
    CHECK_CLOSE(r.kernel_sum, 1.0, 0.02);
    tide_subtract_result_free(ctx, &r);
    synth_free(&sci);
    synth_free(&tmpl);
}

static void check_static(const tide_subtract_result *r, const char *what) {
    for (int k = 0; k < 3; k++) {
        double sum, sig;
        aper(&r->diff, STATIC3[k].x, STATIC3[k].y, 3, &sum, &sig);
        printf("%s: star %d residual %.1f (noise %.1f)\n", what, k, sum, sig);
        CHECK(fabs(sum) <= 3.0 * sig);
    }
}

static void walkthrough(tide_ctx *ctx) {
    tide_image sci, tmpl;
    make_pair(&sci, &tmpl, 1.0, 0.0);
    double fs = 2.3548 * sqrt(SIG_T * SIG_T + SIG_X * SIG_X), ft = 2.3548 * SIG_T;
    tide_subtract_params p;
    tide_subtract_params_default(&p);
    for (int sd = 0; sd <= 2; sd += 2) {
        p.spatial_degree = sd;
        tide_subtract_result r;
        CHECK_OK(tide_subtract(ctx, &sci, &tmpl, fs, ft, &p, &r));
        printf("spatial %d: kernel sum %.5f chi2/px %.3f nfit %lld stamps %d/%d cond %.3g "
               "reg %d\n",
               sd, r.kernel_sum, r.chi2 / (double)r.nfit, (long long)r.nfit, r.nstamps,
               r.nstamps_total, r.cond, r.regularised);
        CHECK(r.convolved == TIDE_SUB_CONVOLVE_TEMPLATE);
        CHECK_CLOSE(r.kernel_sum, 1.0, 0.01);
        CHECK(r.chi2 / (double)r.nfit < 1.5);
        check_static(&r, sd ? "varying" : "constant");
        /* the mover: positive lobe at its science position, negative at the template's */
        double sum, sig;
        aper(&r.diff, 96.8, 146.1, 3, &sum, &sig);
        CHECK(sum > 8.0 * sig);
        aper(&r.diff, 90.4, 150.2, 3, &sum, &sig);
        CHECK(sum < -8.0 * sig);
        /* the kernel at the centre is kernel_at there; its sum is kernel_sum */
        float *k = malloc(sizeof(float) * (size_t)(r.kernel_w * r.kernel_w));
        CHECK_OK(tide_subtract_kernel_at(&r, 127.5, 127.5, k));
        double ks = 0.0, dmax = 0.0;
        for (int i = 0; i < r.kernel_w * r.kernel_w; i++) {
            ks += k[i];
            dmax = fmax(dmax, fabs(k[i] - r.kernel_center[i]));
        }
        CHECK(dmax < 1e-6);
        CHECK_CLOSE(ks, r.kernel_sum, 1e-5);
        free(k);
        /* the background difference (30 ADU) is in the model: the sky of the difference is 0 */
        double bg = 0.0;
        int nb = 0;
        for (int64_t y = 20; y < 40; y++)
            for (int64_t x = 200; x < 230; x++, nb++)
                bg += r.diff.pix[y * W + x];
        CHECK(fabs(bg / nb) < 3.0);
        /* edges are masked */
        CHECK(r.diff.mask[0] & TIDE_MASK_EDGE);
        CHECK(!(r.diff.mask[128 * W + 128] & TIDE_MASK_EDGE));
        tide_subtract_result_free(ctx, &r);
    }
    synth_free(&sci);
    synth_free(&tmpl);
}

/* The science frame 1.25x brighter (transparency): the kernel sum is the ratio. */
static void flux_ratio(tide_ctx *ctx) {
    tide_image sci, tmpl;
    make_pair(&sci, &tmpl, 1.25, 0.0);
    double fs = 2.3548 * sqrt(SIG_T * SIG_T + SIG_X * SIG_X), ft = 2.3548 * SIG_T;
    tide_subtract_result r;
    CHECK_OK(tide_subtract(ctx, &sci, &tmpl, fs, ft, NULL, &r));
    printf("ratio 1.25: kernel sum %.5f, stamps %d/%d, chi2/px %.3f\n", r.kernel_sum, r.nstamps,
           r.nstamps_total, r.chi2 / (double)r.nfit);
    CHECK_CLOSE(r.kernel_sum, 1.25, 0.0125);
    check_static(&r, "ratio");
    tide_subtract_result_free(ctx, &r);
    synth_free(&sci);
    synth_free(&tmpl);
}

/* A field whose science PSF widens across x (extra blur 0.4 -> 1.1 px): 80 stars. The
 * spatially varying kernel leaves noise-like residuals; the constant one cannot. */
static double star_rms(const tide_subtract_result *r, const synth_star *st, int n) {
    double q = 0.0;
    int m = 0;
    for (int k = 0; k < n; k++) {
        if (st[k].x < 20 || st[k].y < 20 || st[k].x > W - 20 || st[k].y > W - 20)
            continue;
        double sum, sig;
        aper(&r->diff, st[k].x, st[k].y, 3, &sum, &sig);
        q += (sum / sig) * (sum / sig);
        m++;
    }
    return sqrt(q / m);
}

static void varying(tide_ctx *ctx) {
    enum { N = 80 };
    synth_star st[N];
    uint64_t s = 99;
    for (int k = 0; k < N; k++) {
        st[k].x = 12.0 + (double)(synth_rng(&s) % 23200) / 100.0;
        st[k].y = 12.0 + (double)(synth_rng(&s) % 23200) / 100.0;
        st[k].flux = 3000.0 + (double)(synth_rng(&s) % 30000);
    }
    tide_image sci, tmpl;
    synth_render_depth(&tmpl, W, W, 200.0, 1.0, st, N, SIG_T, 0.0, 5, 4.0);
    /* science sigma^2 = sig_t^2 + blur^2 with blur going 0.4 -> 1.1: approximated by a
     * linear sigma over x (the render's model) from s(0) to s(W). */
    double s0 = sqrt(SIG_T * SIG_T + 0.16), s1 = sqrt(SIG_T * SIG_T + 1.21);
    synth_render(&sci, W, W, 200.0, 1.0, st, N, 0.5 * (s0 + s1), s1 - s0, 6);
    tide_subtract_params p;
    tide_subtract_params_default(&p);
    double rms[2];
    for (int i = 0; i < 2; i++) {
        p.spatial_degree = i ? 2 : 0;
        tide_subtract_result r;
        CHECK_OK(tide_subtract(ctx, &sci, &tmpl, 2.3548 * 0.5 * (s0 + s1), 3.0, &p, &r));
        rms[i] = star_rms(&r, st, N);
        printf("varying PSF, spatial degree %d: normalised star residual rms %.3f, kernel sum "
               "%.5f, %d stamps\n",
               p.spatial_degree, rms[i], r.kernel_sum, r.nstamps);
        CHECK_CLOSE(r.kernel_sum, 1.0, 0.01);
        tide_subtract_result_free(ctx, &r);
    }
    CHECK(rms[1] <= 1.5);
    CHECK(rms[1] < rms[0]);
    synth_free(&sci);
    synth_free(&tmpl);
}

/* The science is the sharper frame: it is convolved, and the difference keeps the sign
 * science - template (the mover's science lobe positive). */
static void convolve_science(tide_ctx *ctx) {
    tide_image a, b;
    make_pair(&a, &b, 1.0, 0.0); /* a: blurred, b: sharp */
    /* use the sharp frame as science: swap the roles */
    tide_subtract_result r;
    double fa = 2.3548 * sqrt(SIG_T * SIG_T + SIG_X * SIG_X), fb = 2.3548 * SIG_T;
    CHECK_OK(tide_subtract(ctx, &b, &a, fb, fa, NULL, &r));
    CHECK(r.convolved == TIDE_SUB_CONVOLVE_SCIENCE);
    CHECK_CLOSE(r.kernel_sum, 1.0, 0.01);
    check_static(&r, "science convolved");
    double sum, sig;
    aper(&r.diff, 90.4, 150.2, 3, &sum, &sig); /* b's mover position: science lobe */
    CHECK(sum > 8.0 * sig);
    tide_subtract_result_free(ctx, &r);
    /* forcing the template convolution (deconvolution-like) still runs */
    tide_subtract_params p;
    tide_subtract_params_default(&p);
    p.convolve = TIDE_SUB_CONVOLVE_TEMPLATE;
    p.spatial_degree = 0;
    CHECK_OK(tide_subtract(ctx, &b, &a, fb, fa, &p, &r));
    CHECK(r.convolved == TIDE_SUB_CONVOLVE_TEMPLATE);
    tide_subtract_result_free(ctx, &r);
    synth_free(&a);
    synth_free(&b);
}

/* Decorrelation whitens the noise: the normalised sky scatter is ~1 per pixel, and
 * neighbouring pixels are less correlated than before. */
static double lag1(const tide_image *d, double *nstd) {
    double c = 0.0, v = 0.0, q = 0.0;
    int n = 0;
    for (int64_t y = 10; y < 50; y++)
        for (int64_t x = 150; x < 240; x++) {
            double a = d->pix[y * W + x], b = d->pix[y * W + x + 1];
            c += a * b;
            v += a * a;
            q += a * a / d->var[y * W + x];
            n++;
        }
    *nstd = sqrt(q / n);
    return c / v;
}

static void decorrelation(tide_ctx *ctx) {
    tide_image sci, tmpl;
    make_pair_depth(&sci, &tmpl, 1.0, 0.0, 1.0);
    /* an equally noisy template makes the correlation visible */
    double fs = 2.3548 * sqrt(SIG_T * SIG_T + 1.2 * 1.2), ft = 2.3548 * SIG_T;
    synth_free(&sci);
    synth_star s[3];
    memcpy(s, STATIC3, sizeof s);
    synth_render(&sci, W, W, 200.0, 1.0, s, 3, fs / 2.3548, 0.0, 77);
    tide_subtract_params p;
    tide_subtract_params_default(&p);
    p.spatial_degree = 0;
    tide_subtract_result r0, r1;
    CHECK_OK(tide_subtract(ctx, &sci, &tmpl, fs, ft, &p, &r0));
    p.decorrelate = 1;
    CHECK_OK(tide_subtract(ctx, &sci, &tmpl, fs, ft, &p, &r1));
    double n0, n1;
    double c0 = lag1(&r0.diff, &n0), c1 = lag1(&r1.diff, &n1);
    printf("decorrelation: lag-1 correlation %.3f -> %.3f, normalised std %.3f -> %.3f\n", c0, c1,
           n0, n1);
    CHECK(c1 < 0.5 * c0);
    CHECK(fabs(c1) < 0.05);
    CHECK_CLOSE(n0, 1.0, 0.08);
    CHECK_CLOSE(n1, 1.0, 0.08);
    tide_subtract_result_free(ctx, &r0);
    tide_subtract_result_free(ctx, &r1);
    synth_free(&sci);
    synth_free(&tmpl);
}

/* A saturated patch in the template: excluded from the fit, grown by the kernel in the
 * difference mask; the fit is unchanged in quality. */
static void masks(tide_ctx *ctx) {
    tide_image sci, tmpl;
    make_pair(&sci, &tmpl, 1.0, 0.0);
    for (int64_t y = 30; y < 34; y++)
        for (int64_t x = 200; x < 204; x++) {
            tmpl.pix[y * W + x] = 1e6f;
            tmpl.mask[y * W + x] = TIDE_MASK_SATURATED;
        }
    double fs = 2.3548 * sqrt(SIG_T * SIG_T + SIG_X * SIG_X), ft = 2.3548 * SIG_T;
    tide_subtract_result r;
    CHECK_OK(tide_subtract(ctx, &sci, &tmpl, fs, ft, NULL, &r));
    CHECK(r.diff.mask[32 * W + 202] & TIDE_MASK_SATURATED);
    CHECK(r.diff.mask[32 * W + 203 + r.kernel_half] & TIDE_MASK_SATURATED);
    CHECK(!(r.diff.mask[32 * W + 204 + r.kernel_half] & TIDE_MASK_SATURATED));
    CHECK_CLOSE(r.kernel_sum, 1.0, 0.01);
    check_static(&r, "masked");
    tide_subtract_result_free(ctx, &r);
    synth_free(&sci);
    synth_free(&tmpl);
}

/* The basis at the stamps by direct convolution (default) and by the batched FFT correlator
 * of the whole frame agree to float rounding: the same fit, the same difference. */
static void fft_basis(tide_ctx *ctx) {
    tide_image sci, tmpl;
    make_pair(&sci, &tmpl, 1.0, 0.0);
    double fs = 2.3548 * sqrt(SIG_T * SIG_T + SIG_X * SIG_X), ft = 2.3548 * SIG_T;
    tide_subtract_params p;
    tide_subtract_params_default(&p);
    tide_subtract_result a, b;
    CHECK_OK(tide_subtract(ctx, &sci, &tmpl, fs, ft, &p, &a));
    p.fft_basis = 1;
    CHECK_OK(tide_subtract(ctx, &sci, &tmpl, fs, ft, &p, &b));
    double d = 0.0, scale = 0.0;
    for (int64_t i = 0; i < W * W; i++) {
        d = fmax(d, fabs(a.diff.pix[i] - b.diff.pix[i]));
        scale = fmax(scale, fabs(sci.pix[i]));
    }
    printf("direct vs FFT basis: max |d diff| %.3g (scale %.3g), kernel sums %.7f %.7f\n", d, scale,
           a.kernel_sum, b.kernel_sum);
    CHECK(d <= 1e-5 * scale);
    CHECK_CLOSE(a.kernel_sum, b.kernel_sum, 1e-5);
    CHECK(a.nstamps == b.nstamps);
    tide_subtract_result_free(ctx, &a);
    tide_subtract_result_free(ctx, &b);
    synth_free(&sci);
    synth_free(&tmpl);
}

static void bad_args(tide_ctx *ctx) {
    tide_image a, b;
    synth_render(&a, 64, 64, 100.0, 1.0, NULL, 0, 1.0, 0.0, 3);
    synth_render(&b, 64, 60, 100.0, 1.0, NULL, 0, 1.0, 0.0, 4);
    tide_subtract_result r;
    CHECK(tide_subtract(ctx, &a, &b, 3.0, 3.0, NULL, &r) == TIDE_E_INVAL);
    CHECK(strstr(tide_error_detail(), "64 x 60") != NULL);
    tide_subtract_params p;
    tide_subtract_params_default(&p);
    p.spatial_degree = 9;
    CHECK(tide_subtract(ctx, &a, &a, 3.0, 3.0, &p, &r) == TIDE_E_INVAL);
    synth_free(&b);
    synth_render(&b, 12, 12, 100.0, 1.0, NULL, 0, 1.0, 0.0, 4);
    CHECK(tide_subtract(ctx, &b, &b, 3.0, 3.0, NULL, &r) == TIDE_E_RANGE);
    synth_free(&a);
    synth_free(&b);
}

/* The template's sky noise given (measured once with tide_subtract_sky_noise, as the
 * difference pipeline does in the template's preparation) gives the very result of measuring
 * it in the subtraction, whichever frame is convolved; a given variance that is not positive is
 * refused. */
static void given_sky(tide_ctx *ctx) {
    tide_image a, b;
    make_pair(&a, &b, 1.0, 0.0); /* a: blurred, b: sharp */
    const double fa = 2.3548 * sqrt(SIG_T * SIG_T + SIG_X * SIG_X), fb = 2.3548 * SIG_T;
    for (int k = 0; k < 2; k++) {
        const tide_image *sci = k ? &b : &a, *tmpl = k ? &a : &b;
        const double fs = k ? fb : fa, ft = k ? fa : fb;
        tide_subtract_params p;
        tide_subtract_params_default(&p);
        p.decorrelate = 1;
        tide_subtract_result r0, r1;
        CHECK_OK(tide_subtract(ctx, sci, tmpl, fs, ft, &p, &r0));
        CHECK_OK(tide_subtract_sky_noise(ctx, tmpl, p.mask_bits, &p.tmpl_sky, &p.tmpl_var));
        CHECK(p.tmpl_var > 0);
        p.tmpl_sky_known = 1;
        CHECK_OK(tide_subtract(ctx, sci, tmpl, fs, ft, &p, &r1));
        CHECK(r0.convolved == r1.convolved &&
              r0.convolved == (k ? TIDE_SUB_CONVOLVE_SCIENCE : TIDE_SUB_CONVOLVE_TEMPLATE));
        CHECK(r0.kernel_sum == r1.kernel_sum && r0.chi2 == r1.chi2);
        CHECK(r0.decor_sigma_ref == r1.decor_sigma_ref);
        CHECK(r0.decor_sigma_target == r1.decor_sigma_target);
        CHECK(memcmp(r0.diff.pix, r1.diff.pix,
                     sizeof(float) * (size_t)(r0.diff.stride * r0.diff.height)) == 0);
        tide_subtract_result_free(ctx, &r0);
        tide_subtract_result_free(ctx, &r1);
        p.tmpl_var = 0.0;
        CHECK(tide_subtract(ctx, sci, tmpl, fs, ft, &p, &r1) == TIDE_E_INVAL);
        tide_error_clear();
    }
    synth_free(&a);
    synth_free(&b);
}

int main(void) {
    tide_ctx *ctx = NULL;
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    walkthrough(ctx);
    equal_noise(ctx);
    flux_ratio(ctx);
    varying(ctx);
    convolve_science(ctx);
    given_sky(ctx);
    decorrelation(ctx);
    masks(ctx);
    fft_basis(ctx);
    bad_args(ctx);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
