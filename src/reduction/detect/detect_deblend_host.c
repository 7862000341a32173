/* detect_deblend_host.c — the large parents of a CUDA detection, deblended on the host
 * (detect_kernels.h, TIDE_DET_HOST_DEBLEND_*) with the very function the GPU and the CPU
 * backend run (detect_deblend_math.h).
 *
 * The large parents are handed out first (started last, a few big ones would leave the other
 * cores idle at the end): those of at least a quarter of the largest area, then the others,
 * each group in parent order (two passes instead of a sort, which would cost as much as it
 * saves). Each thread keeps one scratch block for all of its parents, grown (at least
 * doubled, at most to the largest parent's need) when a parent needs more. Parents are
 * independent, so the results do not depend on the order or the thread count. */
#include <omp.h>
#include <stdlib.h>

#include "detect_deblend_math.h"
#include "detect_kernels.h"
#include "tide/status.h"

int tide_det_deblend_host_batch(tide_ctx *ctx, int64_t nbig, const int64_t *area,
                                const int64_t *off, const int32_t *pidx, const float *pval,
                                const float *peak, int64_t width, double thresh, int nthresh,
                                double mincont, int64_t minarea, int limit, int32_t *local,
                                int32_t *nchild, int32_t *flags) {
    if (nbig <= 0)
        return 0;
    int64_t *order = malloc(sizeof(int64_t) * (size_t)nbig);
    if (!order)
        return tide_error(TIDE_E_NOMEM, "tide_detect: host deblending order");
    int64_t amax = 0, no = 0;
    for (int64_t b = 0; b < nbig; b++)
        if (area[b] > amax)
            amax = area[b];
    for (int64_t b = 0; b < nbig; b++)
        if (4 * area[b] >= amax)
            order[no++] = b;
    for (int64_t b = 0; b < nbig; b++)
        if (4 * area[b] < amax)
            order[no++] = b;
    const int64_t cap = tide_det_deblend_scratch_bytes(amax, minarea, limit) + 8;
    int failed = 0;
    /* the whole team even for a few parents (the idle ones wait at the end): a smaller team
     * leaves pool threads asleep that the next full team must wake (psf_lanczos.c's note) */
    const int nt = ctx && ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
#pragma omp parallel num_threads(nt) if (nbig > 1)
    {
        unsigned char *scratch = NULL;
        int64_t have = 0;
#pragma omp for schedule(dynamic, 1)
        for (int64_t r = 0; r < nbig; r++) {
            const int64_t b = order[r];
            const int64_t need = tide_det_deblend_scratch_bytes(area[b], minarea, limit) + 8;
            if (need > have) { /* grown geometrically, up to the largest parent's need */
                int64_t size = 2 * have < cap ? 2 * have : cap;
                if (size < need)
                    size = need;
                free(scratch);
                scratch = malloc((size_t)size);
                have = scratch ? size : 0;
            }
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
        }
        free(scratch);
    }
    free(order);
    return failed ? tide_error(TIDE_E_NOMEM, "tide_detect: host deblending scratch") : 0;
}

/* The threshold walks the parents largest first and stops where their pixels pass
 * TIDE_DET_HOST_DEBLEND_PIXELS; every answer is capped at TIDE_DET_HOST_DEBLEND_ALWAYS, so the
 * parents at least that large only count as one sum, and the others fit a histogram: two
 * passes instead of sorting every area (a 151 MP frame has ~40,000 parents). */
int64_t tide_det_deblend_host_area(const int64_t *area, int64_t np) {
    enum { LO = TIDE_DET_HOST_DEBLEND_AREA, HI = TIDE_DET_HOST_DEBLEND_ALWAYS };
    int64_t count[HI] = {0}, sum = 0;
    for (int64_t k = 0; k < np; k++) {
        if (area[k] >= HI)
            sum += area[k];
        else if (area[k] >= LO)
            count[area[k]]++;
    }
    if (sum > TIDE_DET_HOST_DEBLEND_PIXELS)
        return HI;
    for (int64_t a = HI - 1; a >= LO; a--) {
        if (sum + count[a] * a > TIDE_DET_HOST_DEBLEND_PIXELS)
            return a + 1;
        sum += count[a] * a;
    }
    return LO;
}
