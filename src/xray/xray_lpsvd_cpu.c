/* xray_lpsvd_cpu.c — the CPU twin of the batched LPSVD (the reference the CUDA kernels are held
 * to): OpenMP over traces, one workspace per thread, xray_math.h's LPSVD and xray_lm.h's
 * refinement (its lanes run one after another) per trace. */
#include <stdlib.h>

#include "tide/status.h"
#include "xray/xray_kernels.h"
#include "xray/xray_lm.h"

int xray_lpsvd_batch_cpu(tide_ctx *ctx, const xray_lp_job *job) {
    (void)ctx;
    const int n = job->n;
    const int64_t nlp = xray_lp_work_doubles(n), nlm = xray_lm_work_doubles(job->components);
    const int64_t nw = nlp > nlm ? nlp : nlm, ntr = job->ntr;
    int fail = 0;
#pragma omp parallel
    {
        double *w = malloc((size_t)nw * sizeof *w);
        if (!w) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(dynamic, 8)
        for (int64_t i = 0; i < ntr; i++)
            if (w) {
                const double *s = job->traces + i * n;
                xray_lpsvd(s, n, job->dt, job->components, w, &job->out[i]);
                job->out[i].refine_iter =
                    job->refine ? xray_lm_refine(s, n, job->dt, job->components, w, &job->out[i])
                                : 0;
            }
        free(w);
    }
    return fail ? tide_error(TIDE_E_NOMEM, "xray lpsvd: workspace of %lld doubles", (long long)nw)
                : 0;
}
