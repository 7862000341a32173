/* candidates_cpu.c — CPU twin of the candidate-detection preparation. */
#include "candidates_kernels.h"

int tide_cand_prep_cpu(tide_ctx *ctx, const tide_cand_prep_job *job) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int64_t y = 0; y < job->height; y++)
        for (int64_t x = 0; x < job->width; x++)
            tide_cand_prep_pixel(job, x, y);
    return 0;
}

int tide_cand_negate_cpu(tide_ctx *ctx, float *a, int64_t n) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        a[i] = -a[i];
    return 0;
}
