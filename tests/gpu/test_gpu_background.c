/* test_gpu_background.c — the CUDA background estimate and noise model against their CPU
 * twins on awkward sizes (1×1, prime, smaller than a mesh, not multiples of the mesh, a
 * 20000×300 strip and its transpose), strides, NaN blocks, mask bits, mesh sizes wider than
 * the 256 lanes of a block, the smooth mode, host and device inputs; run-to-run bitwise
 * determinism. Skips (77) without a GPU.
 *
 * Tolerance: |gpu − cpu| <= 1e-6 × max(|cpu|, global RMS) per pixel (the "1e-6
 * relative"; the global RMS keeps near-zero RMS pixels meaningful). The implementation rounds
 * every operation explicitly and sums in one fixed order, so the maps are expected to be
 * bitwise equal; the number of differing pixels is printed. Summaries: same tolerance. */
#include <stdint.h>

#include "common/test_rng.h"
#include "tide/tide.h"
#include "tide_test.h"

#define REL 1e-6

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static double urand(void) {
    return trng_open(trng_xorshift64(&rs));
}
static double grand(void) {
    return sqrt(-2.0 * log(urand())) * cos(6.283185307179586 * urand());
}

/* Host frame w × h with row padding @p pad, sky + noise + stars, NaN blocks, mask bits. */
static void make_frame(tide_ctx *ctx, tide_image *im, int64_t w, int64_t h, int64_t pad,
                       double nan_frac, int masked) {
    CHECK_OK(tide_image_alloc(ctx, im, w + pad, h, TIDE_HOST, masked ? TIDE_IMAGE_MASK : 0));
    im->width = w;
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            double v = 1000.0 + 0.03 * x - 0.02 * y + 12.0 * grand();
            if (urand() < 0.002)
                v += 5000.0 * urand(); /* stars */
            im->pix[y * im->stride + x] = (float)v;
            if (masked)
                im->mask[y * im->stride + x] =
                    urand() < 0.05 ? (uint16_t)(1u << (int)(urand() * 10)) : 0;
        }
    const int64_t nblk = (int64_t)(nan_frac * 40);
    for (int64_t k = 0; k < nblk; k++) {
        const int64_t x0 = (int64_t)(urand() * w), y0 = (int64_t)(urand() * h);
        const int64_t bw = 1 + (int64_t)(urand() * (w / 4 + 1)),
                      bh = 1 + (int64_t)(urand() * (h / 4 + 1));
        for (int64_t y = y0; y < y0 + bh && y < h; y++)
            for (int64_t x = x0; x < x0 + bw && x < w; x++)
                im->pix[y * im->stride + x] = NAN;
    }
}

static void compare(const char *what, const tide_image *c, const tide_image *g, double scale) {
    double worst = 0.0;
    int64_t ndiff = 0;
    for (int64_t y = 0; y < c->height; y++)
        for (int64_t x = 0; x < c->width; x++) {
            const float a = c->pix[y * c->stride + x], b = g->pix[y * g->stride + x];
            if (memcmp(&a, &b, sizeof a))
                ndiff++;
            const double s = fabs(a) > scale ? fabs(a) : scale;
            const double e = fabs((double)a - b) / s;
            if (!(e <= worst))
                worst = e; /* NaN counts as a failure */
        }
    if (ndiff || !(worst <= REL))
        printf("  %s: %lld pixels not bitwise equal, worst relative %.3g\n", what, (long long)ndiff,
               worst);
    CHECK(worst <= REL);
}

static void to_host(tide_ctx *gpu, tide_image *im) {
    if (im->location != TIDE_DEVICE)
        return;
    tide_image h = {0};
    CHECK_OK(tide_image_clone(gpu, &h, im, TIDE_HOST));
    tide_image_free(gpu, im);
    *im = h;
}

static void run_case(tide_ctx *cpu, tide_ctx *gpu, int64_t w, int64_t h, int64_t pad,
                     double nan_frac, int masked, const tide_bkg_params *p, const char *name) {
    tide_image im = {0};
    make_frame(cpu, &im, w, h, pad, nan_frac, masked);
    tide_image bc = {0}, rc = {0}, bg = {0}, rg = {0}, bd = {0}, rd = {0}, bd2 = {0}, rd2 = {0};
    tide_bkg_summary sc, sg, sd;
    const int stc = tide_background_estimate(cpu, &im, p, &bc, &rc, &sc);
    const int stg = tide_background_estimate(gpu, &im, p, &bg, &rg, &sg); /* host in, host out */
    CHECK(stc == stg);
    printf("%s %lldx%lld pad %lld nan %.2f mask %d: status %d", name, (long long)w, (long long)h,
           (long long)pad, nan_frac, masked, stc);
    if (stc) {
        printf("\n");
        tide_image_free(cpu, &im);
        return;
    }
    printf(", %lldx%lld meshes, global %.6g / %.6g\n", (long long)sc.nx_mesh, (long long)sc.ny_mesh,
           sc.global_back, sc.global_rms);
    CHECK(bg.location == TIDE_HOST && rg.location == TIDE_HOST);
    const double scale = sc.global_rms > 0 ? sc.global_rms : 1.0;
    compare("background (host input)", &bc, &bg, scale);
    compare("rms (host input)", &rc, &rg, scale);
    CHECK(sc.nx_mesh == sg.nx_mesh && sc.ny_mesh == sg.ny_mesh);
    CHECK(sc.n_bad_mesh == sg.n_bad_mesh && sc.n_replaced == sg.n_replaced);
    CHECK_CLOSE(sc.global_back, sg.global_back, REL * (fabs(sc.global_back) + scale));
    CHECK_CLOSE(sc.global_rms, sg.global_rms, REL * scale);

    /* device input: device maps; twice, bitwise the same */
    tide_image din = {0};
    CHECK_OK(tide_image_clone(gpu, &din, &im, TIDE_DEVICE));
    CHECK_OK(tide_background_estimate(gpu, &din, p, &bd, &rd, &sd));
    CHECK(bd.location == TIDE_DEVICE && rd.location == TIDE_DEVICE);
    CHECK_OK(tide_background_estimate(gpu, &din, p, &bd2, &rd2, NULL));
    to_host(gpu, &bd);
    to_host(gpu, &rd);
    to_host(gpu, &bd2);
    to_host(gpu, &rd2);
    compare("background (device input)", &bc, &bd, scale);
    compare("rms (device input)", &rc, &rd, scale);
    int same = 1;
    for (int64_t y = 0; y < h; y++)
        same &=
            !memcmp(bd.pix + y * bd.stride, bd2.pix + y * bd2.stride, sizeof(float) * (size_t)w) &&
            !memcmp(rd.pix + y * rd.stride, rd2.pix + y * rd2.stride, sizeof(float) * (size_t)w);
    CHECK(same);

    /* noise model on the background map, both backends */
    tide_image vc = {0}, vg = {0};
    CHECK_OK(tide_noise_model(cpu, &bc, 1.7, 5.5, 3, &vc));
    CHECK_OK(tide_noise_model(gpu, &bc, 1.7, 5.5, 3, &vg));
    compare("noise model", &vc, &vg, 1e-30);
    tide_image_free(cpu, &vc);
    tide_image_free(gpu, &vg);

    tide_image_free(gpu, &din);
    tide_image *all[] = {&bc, &rc, &bg, &rg, &bd, &rd, &bd2, &rd2};
    for (int i = 0; i < 8; i++)
        tide_image_free(i < 2 ? cpu : gpu, all[i]);
    tide_image_free(cpu, &im);
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no usable GPU");
    tide_ctx *cpu = tide_test_ctx(TIDE_BACKEND_CPU, 0), *gpu = tide_test_ctx(TIDE_BACKEND_CUDA, 0);
    tide_bkg_params def, p2, p3, p4, p5;
    tide_bkg_params_default(&def);
    p2 = def; /* non-square meshes, a wide filter with a threshold */
    p2.mesh_w = 32;
    p2.mesh_h = 48;
    p2.filter_w = 5;
    p2.filter_h = 3;
    p2.filter_thresh = 0.5;
    p3 = def; /* meshes wider than the 256 lanes of a block, and only mask bit 3 counts */
    p3.mesh_w = 300;
    p3.mesh_h = 20;
    p3.mask_bits = 1u << 3;
    p4 = def; /* tiny meshes and a strict validity fraction */
    p4.mesh_w = p4.mesh_h = 7;
    p4.min_good_frac = 0.9;
    p5 = def; /* smooth mode */
    p5.mesh_w = p5.mesh_h = 128;
    p5.smooth_degree = 3;

    run_case(cpu, gpu, 1, 1, 0, 0.0, 0, &def, "default");
    run_case(cpu, gpu, 7, 5, 3, 0.0, 1, &def, "default");
    run_case(cpu, gpu, 63, 65, 0, 0.3, 1, &def, "default");
    run_case(cpu, gpu, 64, 64, 0, 0.0, 0, &def, "default");
    run_case(cpu, gpu, 129, 257, 5, 0.5, 1, &def, "default");
    run_case(cpu, gpu, 1000, 777, 0, 1.0, 1, &def, "default");
    run_case(cpu, gpu, 2051, 1999, 13, 0.5, 1, &def, "default");
    run_case(cpu, gpu, 20000, 300, 0, 0.3, 1, &def, "default");
    run_case(cpu, gpu, 300, 20000, 0, 0.3, 0, &def, "default");
    run_case(cpu, gpu, 1031, 997, 1, 0.4, 1, &p2, "mesh 32x48 filter 5x3 thr 0.5");
    run_case(cpu, gpu, 1031, 997, 0, 0.4, 1, &p3, "mesh 300x20 bits 0x8");
    run_case(cpu, gpu, 211, 199, 0, 0.6, 1, &p4, "mesh 7 frac 0.9");
    run_case(cpu, gpu, 1500, 1100, 0, 0.2, 1, &p5, "smooth 3");
    run_case(cpu, gpu, 4096, 4096, 0, 0.2, 1, &def, "default");

    /* an all-NaN frame fails the same way on both */
    tide_image im = {0}, b = {0};
    CHECK_OK(tide_image_alloc(cpu, &im, 100, 100, TIDE_HOST, 0));
    for (int i = 0; i < 10000; i++)
        im.pix[i] = NAN;
    CHECK(tide_background_estimate(gpu, &im, NULL, &b, NULL, NULL) == TIDE_E_EMPTY);
    tide_image_free(cpu, &im);

    /* timing of the 4096² estimate (both maps) on each backend, warm */
    make_frame(cpu, &im, 4096, 4096, 0, 0.0, 0);
    tide_image din = {0}, r = {0};
    CHECK_OK(tide_image_clone(gpu, &din, &im, TIDE_DEVICE));
    for (int k = 0; k < 2; k++) {
        double t0 = tide_now();
        CHECK_OK(tide_background_estimate(gpu, &din, NULL, &b, &r, NULL));
        tide_sync(gpu);
        double t1 = tide_now();
        tide_image_free(gpu, &b);
        tide_image_free(gpu, &r);
        if (k)
            printf("4096x4096 on the GPU (device frame, both maps): %.2f ms\n", (t1 - t0) * 1e3);
    }
    double t0 = tide_now();
    CHECK_OK(tide_background_estimate(cpu, &im, NULL, &b, &r, NULL));
    printf("4096x4096 on the CPU: %.1f ms\n", (tide_now() - t0) * 1e3);
    tide_image_free(cpu, &b);
    tide_image_free(cpu, &r);
    tide_image_free(gpu, &din);
    tide_image_free(cpu, &im);
    tide_ctx_destroy(cpu);
    tide_ctx_destroy(gpu);
    return TIDE_TEST_RESULT();
}
