/* reproject_cpu.c — CPU twin of the resampling kernel: rows spread over OpenMP threads; every
 * output pixel is computed independently, so the result does not depend on the thread
 * count. */
#include "reproject_kernels.h"

int tide_rp_resample_cpu(tide_ctx *ctx, const tide_rp_args *a) {
    const int nt = ctx->threads > 0 ? ctx->threads : 1;
#pragma omp parallel for schedule(dynamic, 4) num_threads(nt)
    for (int64_t y = 0; y < a->out_h; y++)
        for (int64_t x = 0; x < a->out_w; x++)
            tide_rp_pixel(a, x, y);
    return 0;
}
