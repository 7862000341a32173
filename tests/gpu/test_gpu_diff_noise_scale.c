/* test_gpu_diff_noise_scale.c — the difference's noise scale (tide_diffp_noise_scale) on a
 * device image, where the box sums and both medians run on the GPU (two radix sorts), against
 * the host's (selection, in parallel for large counts): bit for bit the same factor, on random
 * frames with masked, NaN and zero-variance pixels, odd and even box counts, row strides, too
 * few boxes, the clamps, and a 4096² frame (342k boxes, the host's parallel selection). */
#include <stdio.h>

#include "pipeline/diff_internal.h"
#include "tide/memory.h"
#include "tide/tide.h"
#include "tide_test.h"
#include "unit/diff_noise_frames.h"

static void same(tide_ctx *gpu, tide_ctx *cpu, int64_t w, int64_t h, int64_t stride, double sig,
                 double bad, int with_mask, double fwhm, uint64_t seed) {
    tide_image im, dev;
    memset(&dev, 0, sizeof dev);
    make(&im, w, h, stride, sig, bad, with_mask, seed);
    CHECK_OK(tide_image_clone(gpu, &dev, &im, TIDE_DEVICE));
    const double a = tide_diffp_noise_scale(cpu, &im, fwhm);
    const double b = tide_diffp_noise_scale(gpu, &dev, fwhm);
    if (a != b)
        printf("%lldx%lld stride %lld sigma %g bad %g mask %d fwhm %g: host %.17g device %.17g\n",
               (long long)w, (long long)h, (long long)stride, sig, bad, with_mask, fwhm, a, b);
    CHECK(a == b);
    tide_image_free(gpu, &dev);
    release(&im);
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no GPU");
    tide_ctx *gpu = tide_test_ctx(TIDE_BACKEND_CUDA, 0), *cpu = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    if (!gpu || !cpu)
        return TIDE_TEST_RESULT();
    uint64_t seed = 11;
    for (int t = 0; t < 30; t++) {
        const int64_t w = 30 + (int64_t)(rng(&seed) % 600), h = 30 + (int64_t)(rng(&seed) % 600);
        const int64_t stride = w + (t % 3 == 0 ? (int64_t)(rng(&seed) % 7) : 0);
        const double sig = 0.3 + 3.0 * unif(&seed), bad = (t % 4) * 0.01;
        const double fwhm = 1.0 + 12.0 * unif(&seed);
        same(gpu, cpu, w, h, stride, sig, bad, t % 2, fwhm, 2000 + (uint64_t)t);
    }
    same(gpu, cpu, 513, 511, 520, 0.1, 0.0, 0, 3.0, 2);  /* clamp at 0.25 */
    same(gpu, cpu, 300, 300, 300, 20.0, 0.0, 0, 3.0, 3); /* clamp at 16 */
    same(gpu, cpu, 30, 30, 30, 1.0, 0.0, 0, 3.0, 4);     /* 36 < 50 boxes: 1 */
    same(gpu, cpu, 200, 200, 200, 1.0, 0.9, 1, 2.0, 5);  /* most boxes rejected */
    /* 585² = 342,225 boxes (odd) and 584 x 585 (even), as in tide diff at 4096² */
    same(gpu, cpu, 4096, 4096, 4096, 1.0, 0.001, 1, 4.35, 6);
    same(gpu, cpu, 4090, 4096, 4100, 1.3, 0.002, 0, 4.35, 7);
    tide_ctx_destroy(gpu);
    tide_ctx_destroy(cpu);
    return TIDE_TEST_RESULT();
}
