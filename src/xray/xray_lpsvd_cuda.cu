/* xray_lpsvd_cuda.cu — CUDA twin of the batched LPSVD (xray_lpsvd_cpu.c is the reference): one
 * trace per thread, running the CPU's per-trace functions of xray_math.h unchanged (the Jacobi
 * SVD, the Aberth roots, the least squares and the LM refinement are sequential and
 * data-dependent in their iteration counts, so the same code in the same order is what makes
 * the twins agree). The file is compiled without FMA contraction (CMakeLists.txt) so products
 * and sums round as on the CPU; what remains are the last-bit differences of CUDA's exp, log,
 * sin, cos, atan2 and pow. A trace of up to XRAY_GPU_NMAX samples keeps its samples and its
 * workspace in local memory, which the hardware interleaves across threads (a warp's threads
 * reading the same element make one coalesced access); a longer one uses its own slice of
 * job->work (contiguous per thread: uncoalesced, slower). */
#include <cuda_runtime.h>
#include <math.h>

#include "core/gpu/cuda_check.h"
#include "tide/memory.h"
#include "xray/xray_kernels.h"
#include "xray/xray_math.h"

#define XRAY_THREADS 64

/* Workspace doubles for traces of at most NMAX samples, a compile-time constant. */
template <int NMAX> struct xray_local_size {
    static constexpr int m = (3 * (NMAX - 1)) / 4, r = (NMAX - 1) - m,
                         p = TIDE_XRAY_MAX_COMPONENTS + 1, lp = XRAY_LP_WORK(NMAX, m, r, p),
                         nw = lp > XRAY_LM_WORK ? lp : XRAY_LM_WORK;
};

/* Short traces: the trace and the workspace in local memory (coalesced across the warp); one
 * instance per size class so that a 100-delay scan does not reserve the frame of 128. */
template <int NMAX>
__global__ static void __launch_bounds__(XRAY_THREADS)
    xray_lp_kernel_local(const double *traces, int64_t ntr, int n, double dt, int components,
                         int refine, tide_xray_lp_result *out) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= ntr)
        return;
    double w[xray_local_size<NMAX>::nw], s[NMAX];
    for (int j = 0; j < n; j++)
        s[j] = traces[i * n + j];
    tide_xray_lp_result r;
    xray_lpsvd(s, n, dt, components, w, &r);
    r.refine_iter = refine ? xray_lm_refine(s, n, dt, w, &r) : 0;
    out[i] = r;
}

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
    cudaStream_t stream = (cudaStream_t)ctx->stream;
    if (job->n <= XRAY_GPU_NMAX) {
        if (job->n <= 96)
            xray_lp_kernel_local<96><<<blocks, XRAY_THREADS, 0, stream>>>(
                job->traces, job->ntr, job->n, job->dt, job->components, job->refine, job->out);
        else
            xray_lp_kernel_local<XRAY_GPU_NMAX><<<blocks, XRAY_THREADS, 0, stream>>>(
                job->traces, job->ntr, job->n, job->dt, job->components, job->refine, job->out);
        const cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess)
            return 0;
        /* the local frames (61 KB a thread for 96 samples, 86 KB for 128, reserved for every
         * resident thread of the device) did not fit:
         * run the same code with the workspace in a device buffer instead */
        if (e != cudaErrorMemoryAllocation && e != cudaErrorLaunchOutOfResources)
            return tide_error(TIDE_E_CUDA, "xray lpsvd: kernel launch: %s", cudaGetErrorString(e));
    }
    xray_lp_job jb = *job;
    void *buf = NULL;
    if (!jb.work) {
        const int st = tide_device_alloc(ctx, sizeof(double) * (size_t)(job->ntr * nw), &buf);
        if (st)
            return st;
        jb.work = (double *)buf;
    }
    xray_lp_kernel<<<blocks, XRAY_THREADS, 0, stream>>>(jb, nw);
    const cudaError_t e = cudaGetLastError();
    tide_device_free(ctx, buf); /* stream-ordered: after the kernel */
    if (e != cudaSuccess)
        return tide_error(TIDE_E_CUDA, "xray lpsvd: kernel launch: %s", cudaGetErrorString(e));
    return 0;
}
