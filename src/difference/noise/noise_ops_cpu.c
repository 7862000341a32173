/* noise_ops_cpu.c — CPU twins of the difference pipeline's kernels (noise_ops.h). */
#include "noise_ops.h"

int tide_diffp_prepare_cpu(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride, float *pix,
                           uint16_t *mask, float *var, const float *bkg, const float *rms,
                           float gain, float saturate) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            const int64_t i = y * stride + x;
            tide_diffp_prepare_one(pix + i, bkg[y * w + x], rms[y * w + x], mask + i, var + i, gain,
                                   saturate);
        }
    return 0;
}

int tide_diffp_scale_cpu(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride, float *a, float f) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++)
            a[y * stride + x] *= f;
    return 0;
}

int tide_diffp_boxz_cpu(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride, const float *pix,
                        const uint16_t *mask, const float *var, int b, double *z) {
    (void)ctx;
    const int64_t nx = w / b, ny = h / b;
#pragma omp parallel for schedule(static)
    for (int64_t by = 0; by < ny; by++)
        for (int64_t bx = 0; bx < nx; bx++)
            z[by * nx + bx] = tide_diffp_box_z(pix, mask, var, stride, b, bx, by);
    return 0;
}
