/* test_gpu_correlate.c — CUDA FFT correlation against its CPU twin (relative 1e-5 of the
 * image's scale) and, on small frames, against direct float64 correlation; host and device
 * inputs and outputs, strides, NaN and masks, bitwise determinism; the kernels' row tables
 * bit for bit; the bare cuFFT plans against FFTW. Skips (77) without a GPU. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compute/correlate_kernels.h"
#include "tide/tide.h"
#include "tide_test.h"
#include "unit/test_correlate_ref.h"

#define REL_TOL 1e-5

static double worst_cpu = 0.0, worst_ref = 0.0;

static double max_rel(const tide_image *a, const tide_image *b, double scale) {
    double err = 0.0;
    for (int64_t y = 0; y < a->height; y++)
        for (int64_t x = 0; x < a->width; x++) {
            double e = fabs((double)a->pix[y * a->stride + x] - b->pix[y * b->stride + x]);
            if (!(e <= err))
                err = e;
        }
    return err / scale;
}

/* One frame through both backends. @p dev_in: the CUDA run gets a device input; @p dev_out:
 * it writes device outputs (copied back here to compare). */
static void run_case(tide_ctx *cpu, tide_ctx *gpu, int64_t w, int64_t h, int64_t stride, int64_t kw,
                     int64_t kh, int nk, int reflect, int convolve, double nan, double masked,
                     int dev_in, int dev_out) {
    tide_image in = {0};
    in.width = w;
    in.height = h;
    in.stride = stride;
    in.location = TIDE_HOST;
    in.pix = malloc(sizeof(float) * (size_t)(stride * h));
    in.mask = masked > 0 ? calloc((size_t)(stride * h), sizeof(uint16_t)) : NULL;
    corr_fill(&in, (uint64_t)(w * 7919 + h * 13 + kw), nan, masked);
    float *ks[8];
    const float *cks[8];
    for (int k = 0; k < nk; k++) {
        ks[k] = malloc(sizeof(float) * (size_t)(kw * kh));
        corr_kernel(ks[k], kw, kh, (uint64_t)(k * 17 + kw * 3 + kh));
        cks[k] = ks[k];
    }
    tide_correlate_options opt = {0};
    opt.pad = reflect ? TIDE_PAD_REFLECT : TIDE_PAD_ZERO;
    opt.convolve = convolve;
    opt.mask_bits = TIDE_MASK_BAD;
    tide_image oc[8], og[8], og2[8];
    memset(oc, 0, sizeof oc);
    memset(og, 0, sizeof og);
    memset(og2, 0, sizeof og2);
    CHECK_OK(tide_correlate(cpu, &in, nk, cks, kw, kh, &opt, oc));
    tide_image din = {0};
    const tide_image *gin = &in;
    if (dev_in) {
        /* a device copy with the same stride */
        CHECK_OK(tide_image_clone(gpu, &din, &in, TIDE_DEVICE));
        gin = &din;
    }
    for (int k = 0; k < nk; k++) {
        CHECK_OK(tide_image_alloc(gpu, &og[k], w, h, dev_out ? TIDE_DEVICE : TIDE_HOST, 0));
        CHECK_OK(tide_image_alloc(gpu, &og2[k], w, h, dev_out ? TIDE_DEVICE : TIDE_HOST, 0));
    }
    CHECK_OK(tide_correlate(gpu, gin, nk, cks, kw, kh, &opt, og));
    CHECK_OK(tide_correlate(gpu, gin, nk, cks, kw, kh, &opt, og2)); /* the kept correlator */
    double *ref = w * h * kw * kh <= 4000000 ? malloc(sizeof(double) * (size_t)(w * h)) : NULL;
    for (int k = 0; k < nk; k++) {
        tide_image hg = {0}, hg2 = {0};
        CHECK_OK(tide_image_clone(gpu, &hg, &og[k], TIDE_HOST));
        CHECK_OK(tide_image_clone(gpu, &hg2, &og2[k], TIDE_HOST));
        if (!hg.pix || !hg2.pix || !oc[k].pix)
            continue;
        CHECK(!memcmp(hg.pix, hg2.pix, sizeof(float) * (size_t)(w * h)));
        double scale = corr_scale(&in, ks[k], kw, kh);
        double e = max_rel(&hg, &oc[k], scale);
        if (e > worst_cpu)
            worst_cpu = e;
        if (!(e <= REL_TOL)) {
            fprintf(stderr, "%lld x %lld kernel %lld x %lld #%d %s %s: CUDA vs CPU rel %g\n",
                    (long long)w, (long long)h, (long long)kw, (long long)kh, k,
                    reflect ? "reflect" : "zero", convolve ? "conv" : "corr", e);
            CHECK(e <= REL_TOL);
        }
        if (ref) {
            corr_direct(&in, ks[k], kw, kh, reflect, convolve, TIDE_MASK_BAD, ref);
            tide_image r = {0};
            r.width = w;
            r.height = h;
            r.stride = w;
            float *rf = malloc(sizeof(float) * (size_t)(w * h));
            for (int64_t i = 0; i < w * h; i++)
                rf[i] = (float)ref[i];
            r.pix = rf;
            double er = max_rel(&hg, &r, scale);
            if (er > worst_ref)
                worst_ref = er;
            CHECK(er <= 2 * REL_TOL);
            free(rf);
        }
        tide_image_free(gpu, &hg);
        tide_image_free(gpu, &hg2);
    }
    free(ref);
    for (int k = 0; k < nk; k++) {
        tide_image_free(cpu, &oc[k]);
        tide_image_free(gpu, &og[k]);
        tide_image_free(gpu, &og2[k]);
        free(ks[k]);
    }
    tide_image_free(gpu, &din);
    free(in.pix);
    free(in.mask);
}

/* The bare plans: cuFFT R2C of random data against FFTW's. */
static void test_plans(tide_ctx *cpu, tide_ctx *gpu, int64_t nx, int64_t ny, int batch) {
    int64_t n = ny * tide_fft_row_pitch(nx) * batch;
    float *h = malloc(sizeof(float) * (size_t)n), *back = malloc(sizeof(float) * (size_t)n);
    float *hc, *d;
    CHECK_OK(tide_fft_buffer_alloc(cpu, n, &hc));
    CHECK_OK(tide_fft_buffer_alloc(gpu, n, &d));
    uint64_t s = 5;
    for (int64_t i = 0; i < n; i++)
        h[i] = hc[i] = (float)(corr_uniform(&s) - 0.5);
    CHECK_OK(tide_memcpy(gpu, d, 1, h, 0, sizeof(float) * (size_t)n));
    tide_fft_plan *pc, *pg;
    CHECK_OK(tide_fft_plan_get(cpu, TIDE_FFT_R2C, nx, ny, batch, &pc));
    CHECK_OK(tide_fft_plan_get(gpu, TIDE_FFT_R2C, nx, ny, batch, &pg));
    CHECK_OK(tide_fft_execute(cpu, pc, hc));
    CHECK_OK(tide_fft_execute(gpu, pg, d));
    CHECK_OK(tide_memcpy(gpu, back, 0, d, 1, sizeof(float) * (size_t)n));
    double err = 0.0, scale = sqrt((double)(nx * ny));
    for (int64_t i = 0; i < n; i++)
        if (fabs(back[i] - hc[i]) > err)
            err = fabs(back[i] - hc[i]);
    CHECK(err <= 1e-4 * scale);
    CHECK_OK(tide_fft_plan_get(gpu, TIDE_FFT_C2R, nx, ny, batch, &pg));
    CHECK_OK(tide_fft_execute(gpu, pg, d));
    CHECK_OK(tide_memcpy(gpu, back, 0, d, 1, sizeof(float) * (size_t)n));
    int64_t pitch = tide_fft_row_pitch(nx);
    err = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (i % pitch < nx && fabs(back[i] / (double)(nx * ny) - h[i]) > err)
            err = fabs(back[i] / (double)(nx * ny) - h[i]);
    CHECK(err <= 1e-5);
    free(h);
    free(back);
    tide_fft_buffer_free(cpu, hc);
    tide_fft_buffer_free(gpu, d);
}

/* The kernels' row tables (tide_corr_rows) on both backends, bit for bit, for a frame the CPU
 * does not tile (so both pad to the same size): correlation and convolution. */
static void test_rows(tide_ctx *cpu, tide_ctx *gpu, int64_t kw, int64_t kh, int nk, int convolve) {
    float *k = malloc(sizeof(float) * (size_t)(nk * kw * kh));
    const float *kp[8];
    for (int64_t i = 0; i < nk * kw * kh; i++)
        k[i] = (float)((i * 7919) % 1013) / 1013.0f - 0.3f;
    for (int q = 0; q < nk; q++)
        kp[q] = k + (size_t)q * (size_t)(kw * kh);
    tide_correlate_options opt = {0};
    opt.convolve = convolve;
    tide_correlator *a = NULL, *b = NULL;
    CHECK_OK(tide_correlator_create(cpu, 509, 263, nk, kp, kw, kh, &opt, &a));
    CHECK_OK(tide_correlator_create(gpu, 509, 263, nk, kp, kw, kh, &opt, &b));
    if (a && b) {
        CHECK(a->px == b->px && a->cw == b->cw && a->ntx == 1);
        const size_t n = (size_t)(nk * kh * a->cw) * 2;
        float *hb = malloc(sizeof(float) * n);
        CHECK_OK(tide_memcpy(gpu, hb, 0, b->rows, 1, sizeof(float) * n));
        const int same = memcmp(a->rows, hb, sizeof(float) * n) == 0;
        printf("row tables %lldx%lld x %d, %s: %s\n", (long long)kw, (long long)kh, nk,
               convolve ? "convolution" : "correlation", same ? "bit-identical" : "DIFFERENT");
        CHECK(same);
        free(hb);
    }
    tide_correlator_free(cpu, a);
    tide_correlator_free(gpu, b);
    free(k);
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no GPU");
    tide_ctx *cpu = tide_test_ctx(TIDE_BACKEND_CPU, 0), *gpu = tide_test_ctx(TIDE_BACKEND_CUDA, 0);
    if (!cpu || !gpu)
        return TIDE_TEST_RESULT();
    test_rows(cpu, gpu, 21, 21, 6, 0);
    test_rows(cpu, gpu, 9, 5, 1, 1);
    test_plans(cpu, gpu, 97, 89, 1);
    test_plans(cpu, gpu, 128, 30, 3);
    static const int64_t sizes[][2] = {{1, 1}, {97, 89}, {4097, 3}, {3, 4097}, {256, 255}};
    static const int64_t ksz[] = {1, 3, 5, 15};
    int n = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t k = 0; k < sizeof ksz / sizeof ksz[0]; k++)
            for (int reflect = 0; reflect < 2; reflect++, n++)
                run_case(cpu, gpu, sizes[s][0], sizes[s][1], sizes[s][0], ksz[k], ksz[k],
                         k == 3 ? 3 : 1, reflect, n % 3 == 0, 0.0, 0.0, n % 2, (n / 2) % 2);
    /* kernels taller than one shared-memory chunk of the product kernel (32 rows) */
    run_case(cpu, gpu, 300, 211, 300, 5, 41, 2, 1, 0, 0.0, 0.0, 1, 1);
    /* NaN and masked pixels, a padded stride, both locations */
    run_case(cpu, gpu, 509, 263, 520, 7, 7, 2, 0, 0, 0.01, 0.02, 1, 0);
    run_case(cpu, gpu, 509, 263, 520, 7, 7, 2, 1, 1, 0.01, 0.02, 0, 1);
    /* a realistic frame: 5 kernels */
    run_case(cpu, gpu, 2048, 2048, 2048, 15, 15, 5, 1, 0, 0.001, 0.001, 1, 1);
    printf("worst relative difference: CUDA vs CPU %.3g, CUDA vs direct %.3g\n", worst_cpu,
           worst_ref);
    tide_ctx_destroy(gpu);
    tide_ctx_destroy(cpu);
    return TIDE_TEST_RESULT();
}
