/* xray_lpsvd_cuda.cu — CUDA twin of the batched LPSVD (xray_lpsvd_cpu.c is the reference): one
 * trace per thread, running the CPU's per-trace functions of xray_math.h unchanged (the Jacobi
 * SVD, the Aberth roots, the least squares and the LM refinement are sequential and
 * data-dependent in their iteration counts, so the same code in the same order is what makes
 * the twins agree). The file is compiled without FMA contraction (CMakeLists.txt) so products
 * and sums round as on the CPU; what remains are the last-bit differences of CUDA's exp, log,
 * sin, cos, atan2 and pow. Each thread's workspace is its own slice of job->work. */
#include <cuda_runtime.h>
#include <math.h>

#include "core/gpu/cuda_check.h"
#include "xray/xray_kernels.h"
#include "xray/xray_math.h"

#define XRAY_THREADS 64

__global__ static void xray_lp_kernel(xray_lp_job jb, int64_t nw) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= jb.ntr)
        return;
    double *w = jb.work + i * nw;
    const double *s = jb.traces + i * jb.n;
    tide_xray_lp_result r;
    xray_lpsvd(s, jb.n, jb.dt, jb.components, w, &r);
    r.refine_iter = jb.refine ? xray_lm_refine(s, jb.n, jb.dt, w, &r) : 0;
    jb.out[i] = r;
}

extern "C" int xray_lpsvd_batch_cuda(tide_ctx *ctx, const xray_lp_job *job) {
    if (job->ntr <= 0)
        return 0;
    const int64_t nw = xray_lp_work_doubles(job->n);
    const unsigned blocks = (unsigned)((job->ntr + XRAY_THREADS - 1) / XRAY_THREADS);
    xray_lp_kernel<<<blocks, XRAY_THREADS, 0, (cudaStream_t)ctx->stream>>>(*job, nw);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
