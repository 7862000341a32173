/* map_ops_cpu.c — CPU twins of the pipeline's kernels (plain loops, OpenMP over rows). */
#include "map_ops.h"

int tide_pipe_map_cpu(tide_ctx *ctx, int op, int64_t w, int64_t h, float *a, int64_t sa,
                      const float *b, int64_t sb, float c) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int64_t y = 0; y < h; y++) {
        float *ar = a + y * sa;
        const float *br = b ? b + y * sb : NULL;
        for (int64_t x = 0; x < w; x++)
            ar[x] = tide_pipe_map_one(op, ar[x], br ? br[x] : 0.0f, c);
    }
    return 0;
}

int tide_pipe_gather_cpu(tide_ctx *ctx, const float *img, int64_t stride, int64_t w, int64_t h,
                         int64_t n, const double *x, const double *y, float *out) {
    (void)ctx;
    for (int64_t i = 0; i < n; i++)
        out[i] = tide_pipe_gather_one(img, stride, w, h, x[i], y[i]);
    return 0;
}
