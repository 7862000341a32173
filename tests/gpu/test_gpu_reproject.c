/* test_gpu_reproject.c — the CUDA resampling kernel against its CPU twin: every kernel, exact
 * (TAN-SIP) and grid mappings, host and device inputs, awkward sizes (1×1, primes, thin
 * strips), with NaN, BAD and variance planes. Images agree to 1e-5 relative (both are double
 * precision; differences come from FMA contraction and the device math library), masks bit
 * for bit (a tolerance of 1e-4 of the pixels for footprint taps landing exactly on a
 * boundary), coverage to 1e-6. Then a 4096² benchmark (device-resident, plan reused, median
 * of 10 after warm-up). Skipped without a GPU. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tide/tide.h"
#include "tide_test.h"

#define D2R 0.017453292519943295769

static double rnd(unsigned long long *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static tide_wcs *make_wcs(double scale, double rot, double crpix1, double crpix2, double sip,
                          int tpv) {
    tide_header h;
    tide_header_init(&h);
    const char *c1 = tpv ? "RA---TPV" : sip != 0 ? "RA---TAN-SIP" : "RA---TAN";
    const char *c2 = tpv ? "DEC--TPV" : sip != 0 ? "DEC--TAN-SIP" : "DEC--TAN";
    tide_header_set_str(&h, "CTYPE1", c1, NULL);
    tide_header_set_str(&h, "CTYPE2", c2, NULL);
    tide_header_set_dbl(&h, "CRVAL1", 10.5, NULL);
    tide_header_set_dbl(&h, "CRVAL2", -30.25, NULL);
    tide_header_set_dbl(&h, "CRPIX1", crpix1, NULL);
    tide_header_set_dbl(&h, "CRPIX2", crpix2, NULL);
    const double s = scale / 3600.0, c = cos(rot * D2R), sn = sin(rot * D2R);
    tide_header_set_dbl(&h, "CD1_1", -s * c, NULL);
    tide_header_set_dbl(&h, "CD1_2", s * sn, NULL);
    tide_header_set_dbl(&h, "CD2_1", s * sn, NULL);
    tide_header_set_dbl(&h, "CD2_2", s * c, NULL);
    if (tpv) { /* a mild cubic TPV (PV1_1 = PV2_1 = 1 are the identity terms) */
        tide_header_set_dbl(&h, "PV1_1", 1.0, NULL);
        tide_header_set_dbl(&h, "PV2_1", 1.0, NULL);
        tide_header_set_dbl(&h, "PV1_4", 2e-3, NULL);
        tide_header_set_dbl(&h, "PV1_7", 5e-3, NULL);
        tide_header_set_dbl(&h, "PV2_5", -3e-3, NULL);
        tide_header_set_dbl(&h, "PV2_9", 4e-3, NULL);
    } else if (sip != 0) {
        tide_header_set_int(&h, "A_ORDER", 3, NULL);
        tide_header_set_int(&h, "B_ORDER", 3, NULL);
        tide_header_set_dbl(&h, "A_2_0", sip * 2e-6, NULL);
        tide_header_set_dbl(&h, "A_0_2", -sip * 1e-6, NULL);
        tide_header_set_dbl(&h, "A_3_0", sip * 3e-10, NULL);
        tide_header_set_dbl(&h, "B_1_1", sip * 1.5e-6, NULL);
        tide_header_set_dbl(&h, "B_0_3", -sip * 2e-10, NULL);
    }
    tide_wcs *w = NULL;
    if (tide_wcs_from_header(&h, "gpu test", &w))
        fprintf(stderr, "%s\n", tide_error_detail());
    tide_header_free(&h);
    return w;
}

static void fill(tide_image *im, unsigned long long seed) {
    for (int64_t y = 0; y < im->height; y++)
        for (int64_t x = 0; x < im->width; x++) {
            const int64_t k = y * im->stride + x;
            const double dx = (double)x - 0.4 * (double)im->width;
            const double dy = (double)y - 0.6 * (double)im->height;
            im->pix[k] = (float)(100.0 + 30.0 * (rnd(&seed) - 0.5) +
                                 4000.0 * exp(-(dx * dx + dy * dy) / 8.0));
            im->var[k] = (float)(25.0 + 10.0 * rnd(&seed));
            im->mask[k] = 0;
            const double r = rnd(&seed);
            if (r < 0.003) {
                im->pix[k] = NAN;
                im->mask[k] = TIDE_MASK_NODATA;
            } else if (r < 0.006) {
                im->mask[k] = TIDE_MASK_BAD;
            }
        }
}

static void compare(const char *what, const tide_image *c, const tide_image *g,
                    const tide_image *cc, const tide_image *gc) {
    const int64_t n = c->width * c->height;
    double emax = 0, ecov = 0, evar = 0;
    int64_t nanmis = 0, maskmis = 0;
    for (int64_t i = 0; i < n; i++) {
        const double a = c->pix[i], b = g->pix[i];
        if (isnan(a) != isnan(b)) {
            nanmis++;
            continue;
        }
        if (c->mask[i] != g->mask[i])
            maskmis++;
        if (isnan(a))
            continue;
        emax = fmax(emax, fabs(a - b) / fmax(fabs(a), 1.0));
        evar = fmax(evar, fabs(c->var[i] - g->var[i]) / fmax(fabs(c->var[i]), 1e-3));
        ecov = fmax(ecov, fabs(cc->pix[i] - gc->pix[i]));
    }
    printf("  %-34s pix %.2e var %.2e cov %.2e, NaN mismatches %lld, mask mismatches %lld\n", what,
           emax, evar, ecov, (long long)nanmis, (long long)maskmis);
    CHECK(emax <= 1e-5);
    CHECK(evar <= 1e-5);
    CHECK(ecov <= 1e-6);
    CHECK((double)(nanmis + maskmis) <= 1e-4 * (double)n);
}

static void agree(tide_ctx *cpu, tide_ctx *gpu, int64_t W, int64_t H, int64_t OW, int64_t OH,
                  int tpv) {
    tide_wcs *win = make_wcs(0.26, 0.0, 0.5 * (double)W + 0.3, 0.5 * (double)H - 0.2, 1.0, tpv);
    tide_wcs *wout = make_wcs(0.3, 33.0, 0.5 * (double)OW - 1.7, 0.5 * (double)OH + 2.1, 0.0, 0);
    CHECK(win && wout);
    if (!win || !wout)
        return;
    tide_image in;
    CHECK_OK(tide_image_alloc(cpu, &in, W, H, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR));
    fill(&in, (unsigned long long)(W * 31 + H));
    for (int k = 0; k < 3; k++)
        for (int map = 1; map <= 2; map++) {
            if (tpv && map == 2)
                continue;
            tide_reproject_params p;
            tide_reproject_params_default(&p);
            p.kernel = (tide_resample_kind)k;
            p.map = (tide_reproject_map)map;
            tide_image oc, cc, og, cg;
            CHECK_OK(tide_reproject(cpu, &in, win, wout, OW, OH, &p, &oc, &cc));
            /* host input on the CUDA context */
            CHECK_OK(tide_reproject(gpu, &in, win, wout, OW, OH, &p, &og, &cg));
            char what[128];
            snprintf(what, sizeof what, "%lldx%lld->%lldx%lld %s %s host", (long long)W,
                     (long long)H, (long long)OW, (long long)OH, tide_resample_name(p.kernel),
                     tpv        ? "tpv"
                     : map == 1 ? "grid"
                                : "exact");
            if (oc.pix && og.pix)
                compare(what, &oc, &og, &cc, &cg);
            tide_image_free(gpu, &og);
            tide_image_free(gpu, &cg);
            /* device input: output stays on the device */
            tide_image din, dout, dcov, hout, hcov;
            CHECK_OK(tide_image_clone(gpu, &din, &in, TIDE_DEVICE));
            CHECK_OK(tide_reproject(gpu, &din, win, wout, OW, OH, &p, &dout, &dcov));
            CHECK(dout.location == TIDE_DEVICE);
            CHECK_OK(tide_image_clone(gpu, &hout, &dout, TIDE_HOST));
            CHECK_OK(tide_image_clone(gpu, &hcov, &dcov, TIDE_HOST));
            memcpy(what + strlen(what) - 4, "dev", 4);
            if (oc.pix && hout.pix)
                compare(what, &oc, &hout, &cc, &hcov);
            tide_image_free(gpu, &din);
            tide_image_free(gpu, &dout);
            tide_image_free(gpu, &dcov);
            tide_image_free(gpu, &hout);
            tide_image_free(gpu, &hcov);
            tide_image_free(cpu, &oc);
            tide_image_free(cpu, &cc);
        }
    tide_image_free(cpu, &in);
    tide_wcs_free(win);
    tide_wcs_free(wout);
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* 4096² onto a grid rotated by 1 degree: device-resident, plan reused. */
static void bench(tide_ctx *cpu, tide_ctx *gpu, int tpv) {
    const int64_t N = 4096;
    tide_wcs *win = make_wcs(0.26, 0.0, 2048.3, 2047.6, 1.0, tpv);
    tide_wcs *wout = make_wcs(0.26, 1.0, 2050.1, 2045.2, 0.0, 0);
    tide_image in, din, out, cov;
    CHECK_OK(tide_image_alloc(cpu, &in, N, N, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR));
    fill(&in, 99);
    CHECK_OK(tide_image_clone(gpu, &din, &in, TIDE_DEVICE));
    for (int k = 0; k < 3; k++) {
        tide_reproject_params p;
        tide_reproject_params_default(&p);
        p.kernel = (tide_resample_kind)k;
        tide_reproject_plan *pl = NULL;
        double t0 = tide_now();
        CHECK_OK(tide_reproject_plan_create(gpu, win, N, N, wout, N, N, &p, &pl));
        const double tplan = tide_now() - t0;
        if (!pl)
            break;
        tide_reproject_info inf;
        tide_reproject_plan_info(pl, &inf);
        double t[10];
        for (int r = -2; r < 10; r++) {
            tide_sync(gpu);
            t0 = tide_now();
            CHECK_OK(tide_reproject_execute(gpu, pl, &din, &out, &cov));
            tide_sync(gpu);
            if (r >= 0)
                t[r] = tide_now() - t0;
            tide_image_free(gpu, &out);
            tide_image_free(gpu, &cov);
        }
        qsort(t, 10, sizeof *t, cmp_d);
        printf("  bench 4096^2 %-8s %s: plan %.1f ms (grid step %g, err %.1e px), resample "
               "(pix+mask+var+coverage, device-resident) median %.3f ms, min %.3f ms\n",
               tide_resample_name(p.kernel), inf.exact ? "exact TAN-SIP" : "grid (TPV)",
               tplan * 1e3, inf.grid_step, inf.map_err_px, 0.5 * (t[4] + t[5]) * 1e3, t[0] * 1e3);
        tide_reproject_plan_free(gpu, pl);
    }
    tide_image_free(gpu, &din);
    tide_image_free(cpu, &in);
    tide_wcs_free(win);
    tide_wcs_free(wout);
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no usable GPU");
    tide_ctx *cpu = NULL, *gpu = NULL;
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&cpu, &o));
    o.backend = TIDE_BACKEND_CUDA;
    CHECK_OK(tide_ctx_create(&gpu, &o));
    if (!cpu || !gpu)
        return 1;
    agree(cpu, gpu, 1, 1, 1, 1, 0);
    agree(cpu, gpu, 257, 131, 263, 127, 0);
    agree(cpu, gpu, 1000, 37, 37, 1000, 0);
    agree(cpu, gpu, 613, 509, 600, 601, 0);
    agree(cpu, gpu, 613, 509, 600, 601, 1);
    bench(cpu, gpu, 0);
    bench(cpu, gpu, 1);
    tide_ctx_destroy(gpu);
    tide_ctx_destroy(cpu);
    return TIDE_TEST_RESULT();
}
