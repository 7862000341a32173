/* detect_deblend_host.c — the large parents of a CUDA detection, deblended on the host
 * (detect_kernels.h, TIDE_DET_HOST_DEBLEND_*) with the very function the GPU and the CPU
 * backend run (detect_deblend_math.h). */
#include <omp.h>
#include <stdlib.h>

#include "phot/detect_deblend_math.h"
#include "phot/detect_kernels.h"
#include "tide/status.h"

int tide_det_deblend_host_batch(tide_ctx *ctx, int64_t nbig, const int64_t *area,
                                const int64_t *off, const int32_t *pidx, const float *pval,
                                const float *peak, int64_t width, double thresh, int nthresh,
                                double mincont, int64_t minarea, int limit, int32_t *local,
                                int32_t *nchild, int32_t *flags) {
    int failed = 0;
    const int nt = ctx && ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t b = 0; b < nbig; b++) {
        unsigned char *scratch =
            malloc((size_t)tide_det_deblend_scratch_bytes(area[b], minarea, limit) + 8);
        if (!scratch) {
#pragma omp atomic write
            failed = 1;
            continue;
        }
        int32_t fl = 0;
        nchild[b] = tide_det_deblend_one(area[b], pidx + off[b], pval + off[b], width, thresh,
                                         (double)peak[b], nthresh, mincont, minarea, limit,
                                         scratch, local + off[b], &fl);
        flags[b] = fl;
        free(scratch);
    }
    return failed ? tide_error(TIDE_E_NOMEM, "tide_detect: host deblending scratch") : 0;
}
