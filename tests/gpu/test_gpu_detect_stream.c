/* test_gpu_detect_stream.c — the streamed matched filter on CUDA (detect.c matched_filter):
 * tide_correlator_forward + tide_correlator_run_one (and _run_one_view) give bitwise
 * tide_correlator_run's outputs on the device; tide_det_snr_accum_cuda +
 * tide_det_snr_finish_cuda give bitwise tide_det_snr_cuda's S/N map (the same per-pixel
 * double sums, detect_filter_math.h); and the CUDA accumulate/finish give their CPU twins'
 * bits on the same correlation images (the shared row form, each operation rounded on its
 * own), NaN at the same pixels. Awkward sizes, NaN / masked / zero-rms pixels, 2..6 bases.
 * Skips without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_rng.h"
#include "tide/fft.h"
#include "tide/tide.h"
#include "tide_test.h"

#ifndef TIDE_HAVE_CUDA
int main(void) {
    (void)tide_test_failures;
    TIDE_TEST_SKIP("this build has no CUDA backend");
}
#else
#include "reduction/detect/detect_kernels.h"

static uint64_t rs = 11;
static double urand(void) {
    return trng_unit(trng_lcg64(&rs));
}

/* Host copies of two images (device or host) compared row by row, bitwise. */
static int same_bits(tide_ctx *g, const tide_image *a, const tide_image *b) {
    tide_image ha = {0}, hb = {0};
    CHECK_OK(tide_image_clone(g, &ha, a, TIDE_HOST));
    CHECK_OK(tide_image_clone(g, &hb, b, TIDE_HOST));
    int eq = ha.pix && hb.pix;
    for (int64_t y = 0; eq && y < a->height; y++)
        eq = !memcmp(ha.pix + y * ha.stride, hb.pix + y * hb.stride, sizeof(float) * a->width);
    tide_image_free(g, &ha);
    tide_image_free(g, &hb);
    return eq;
}

static void run(tide_ctx *cpu, tide_ctx *gpu, int64_t w, int64_t h, int nb, int deg, int64_t ks) {
    float *kb = malloc(sizeof(float) * (size_t)(nb * ks * ks));
    const float *kp[6];
    for (int b = 0; b < nb; b++) {
        kp[b] = kb + b * ks * ks;
        for (int64_t q = 0; q < ks * ks; q++)
            kb[b * ks * ks + q] = (float)(b == 0 ? urand() : 0.2 * (urand() - 0.5));
    }
    tide_det_filter f;
    memset(&f, 0, sizeof f);
    f.nbasis = nb;
    f.degree = deg;
    f.ncoef = (deg + 1) * (deg + 2) / 2;
    f.width = w + 3;
    f.height = h;
    f.nodata_bits = TIDE_MASK_NODATA;
    for (int b = 0; b < nb; b++)
        for (int k = 0; k < f.ncoef; k++)
            f.coef[b * f.ncoef + k] =
                b == 0 ? (k == 0 ? 1.0 : 0.05 * (urand() - 0.5)) : 0.2 * (urand() - 0.5);
    for (int a = 0; a < nb; a++)
        for (int b = 0; b < nb; b++) {
            double s = 0;
            for (int64_t q = 0; q < ks * ks; q++)
                s += (double)kp[a][q] * (double)kp[b][q];
            f.gram[a * nb + b] = s;
        }
    tide_image sub = {0}, rms = {0}, dsub = {0}, drms = {0};
    CHECK_OK(tide_image_alloc(cpu, &sub, w, h, TIDE_HOST, TIDE_IMAGE_MASK));
    CHECK_OK(tide_image_alloc(cpu, &rms, w, h, TIDE_HOST, 0));
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            const int64_t i = y * sub.stride + x;
            const double t = urand();
            sub.pix[i] = t < 0.01 ? NAN : (float)(urand() - 0.5 + (urand() < 0.01 ? 50 : 0));
            sub.mask[i] = t > 0.99 ? TIDE_MASK_NODATA : t > 0.98 ? TIDE_MASK_BAD : 0;
            rms.pix[y * rms.stride + x] = t > 0.01 && t < 0.015 ? 0.0f : (float)(1 + urand());
        }
    CHECK_OK(tide_image_clone(gpu, &dsub, &sub, TIDE_DEVICE));
    CHECK_OK(tide_image_clone(gpu, &drms, &rms, TIDE_DEVICE));
    tide_correlate_options opt = {0};
    opt.mask_bits = TIDE_MASK_NODATA | TIDE_MASK_BAD;

    /* 1. on the device: streamed == one pass, bitwise */
    tide_correlator *c = NULL;
    tide_image R[6], Rb = {0}, snr1 = {0}, snr2 = {0};
    memset(R, 0, sizeof R);
    CHECK_OK(tide_correlator_create(gpu, w, h, nb, kp, ks, ks, &opt, &c));
    CHECK(tide_correlator_streams(c) == 1);
    CHECK_OK(tide_correlator_run(gpu, c, &dsub, R));
    CHECK_OK(tide_image_alloc(gpu, &snr1, w, h, TIDE_DEVICE, 0));
    CHECK_OK(tide_image_alloc(gpu, &snr2, w, h, TIDE_DEVICE, 0));
    CHECK_OK(tide_det_snr_cuda(gpu, &dsub, &drms, R, &f, &snr1));
    double *dF = NULL;
    CHECK_OK(tide_device_alloc(gpu, sizeof(double) * (size_t)(w * h), (void **)&dF));
    CHECK_OK(tide_correlator_forward(gpu, c, &dsub));
    for (int b = 0; b < nb; b++) {
        CHECK_OK(tide_correlator_run_one(gpu, c, b, &Rb));
        CHECK(same_bits(gpu, &Rb, &R[b]));
        tide_image view;
        CHECK_OK(tide_correlator_run_one_view(gpu, c, b, &view));
        CHECK(view.owns == 0 && view.location == TIDE_DEVICE);
        CHECK(same_bits(gpu, &view, &R[b]));
        /* alternate: the accumulation reads the copy or the view */
        CHECK_OK(tide_det_snr_accum_cuda(gpu, b % 2 ? &view : &Rb, b, &f, dF));
    }
    CHECK_OK(tide_det_snr_finish_cuda(gpu, &dsub, &drms, dF, &f, &snr2));
    int eq = same_bits(gpu, &snr1, &snr2);
    if (!eq)
        fprintf(stderr, "%lld x %lld, %d bases: CUDA streamed S/N differs from one pass\n",
                (long long)w, (long long)h, nb);
    CHECK(eq);
    tide_correlator_free(gpu, c);

    /* 2. twins on the same correlation images (the device ones, copied to the host) */
    tide_image hR[6], hsnr = {0}, gsnr = {0};
    memset(hR, 0, sizeof hR);
    double *F = malloc(sizeof(double) * (size_t)(w * h));
    CHECK_OK(tide_image_alloc(cpu, &hsnr, w, h, TIDE_HOST, 0));
    for (int b = 0; b < nb; b++) {
        CHECK_OK(tide_image_clone(gpu, &hR[b], &R[b], TIDE_HOST));
        CHECK_OK(tide_det_snr_accum_cpu(cpu, &hR[b], b, &f, F));
    }
    CHECK_OK(tide_det_snr_finish_cpu(cpu, &sub, &rms, F, &f, &hsnr));
    CHECK_OK(tide_image_clone(gpu, &gsnr, &snr2, TIDE_HOST));
    int64_t bad = 0;
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            const float a = hsnr.pix[y * hsnr.stride + x], g = gsnr.pix[y * gsnr.stride + x];
            if (isnan(a) || isnan(g))
                bad += isnan(a) != isnan(g);
            else
                bad += memcmp(&a, &g, sizeof a) != 0;
        }
    if (bad)
        fprintf(stderr, "%lld x %lld, %d bases: %lld pixels differ CPU/CUDA\n", (long long)w,
                (long long)h, nb, (long long)bad);
    CHECK(bad == 0);

    free(F);
    tide_device_free(gpu, dF);
    for (int b = 0; b < nb; b++) {
        tide_image_free(gpu, &R[b]);
        tide_image_free(cpu, &hR[b]);
    }
    tide_image_free(gpu, &Rb);
    tide_image_free(gpu, &snr1);
    tide_image_free(gpu, &snr2);
    tide_image_free(gpu, &dsub);
    tide_image_free(gpu, &drms);
    tide_image_free(cpu, &hsnr);
    tide_image_free(cpu, &gsnr);
    tide_image_free(cpu, &sub);
    tide_image_free(cpu, &rms);
    free(kb);
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no CUDA device");
    tide_ctx *cpu = tide_test_ctx(TIDE_BACKEND_CPU, 0), *gpu = tide_test_ctx(TIDE_BACKEND_CUDA, 0);
    if (!cpu || !gpu)
        return 1;
    run(cpu, gpu, 300, 41, 6, 2, 9);
    run(cpu, gpu, 257, 130, 2, 1, 5);
    run(cpu, gpu, 1031, 67, 4, 3, 13);
    run(cpu, gpu, 1, 1, 3, 0, 3);
    tide_ctx_destroy(gpu);
    tide_ctx_destroy(cpu);
    return TIDE_TEST_RESULT();
}
#endif
