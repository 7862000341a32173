/* xray_lpsvd_cuda.cu — CUDA twin of the batched LPSVD (xray_lpsvd_cpu.c is the reference), two
 * kernels over a chunk of traces:
 *  - LPSVD, one trace per thread, running the CPU's per-trace functions of xray_math.h
 *    unchanged (the Jacobi SVD, the Aberth roots and the least squares are sequential and
 *    data-dependent in their iteration counts, so the same code in the same order is what makes
 *    the twins agree). A trace of up to XRAY_GPU_NMAX samples keeps its samples and its
 *    workspace in local memory, which the hardware interleaves across threads (a warp's threads
 *    reading the same element make one coalesced access); a longer one uses its own slice of
 *    job->work (contiguous per thread: uncoalesced, slower).
 *  - the Levenberg–Marquardt refinement, one trace per warp (xray_lm.h): the lanes split the
 *    samples, the sums of the normal equations and the elimination, with the trace's state in
 *    the warp's slice of shared memory. One thread per trace kept ~2 KB of it in local memory,
 *    which no cache holds for 2048 threads an SM, and was 90% of the fit.
 * The file is compiled without FMA contraction (CMakeLists.txt) so products and sums round as
 * on the CPU; what remains are the last-bit differences of CUDA's exp, log, sin, cos, atan2 and
 * pow. */
#include <cuda_runtime.h>
#include <math.h>

#include "core/gpu/cuda_check.h"
#include "tide/memory.h"
#include "xray/xray_kernels.h"
#include "xray/xray_lm.h"

#define XRAY_THREADS 64
/* Warps (traces) per block of the refinement: 4 × 8 KB of shared memory for 5 components. */
#define XRAY_LM_WARPS 4

/* Workspace doubles for traces of at most NMAX samples, a compile-time constant. */
template <int NMAX> struct xray_local_size {
    static constexpr int m = (3 * (NMAX - 1)) / 4, r = (NMAX - 1) - m,
                         p = TIDE_XRAY_MAX_COMPONENTS + 1, nw = XRAY_LP_WORK(NMAX, m, r, p);
};

/* Short traces: the trace and the workspace in local memory (coalesced across the warp); one
 * instance per size class so that a 100-delay scan does not reserve the frame of 128. */
template <int NMAX>
__global__ static void __launch_bounds__(XRAY_THREADS)
    xray_lp_kernel_local(const double *traces, int64_t ntr, int n, double dt, int components,
                         tide_xray_lp_result *out) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= ntr)
        return;
    double w[xray_local_size<NMAX>::nw], s[NMAX];
    for (int j = 0; j < n; j++)
        s[j] = traces[i * n + j];
    tide_xray_lp_result r;
    xray_lpsvd(s, n, dt, components, w, &r);
    out[i] = r;
}

__global__ static void xray_lp_kernel(xray_lp_job jb, int64_t nw) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= jb.ntr)
        return;
    tide_xray_lp_result r;
    xray_lpsvd(jb.traces + i * jb.n, jb.n, jb.dt, jb.components, jb.work + i * nw, &r);
    jb.out[i] = r;
}

/* The refinement of out[i] (an LPSVD result) by warp i % XRAY_LM_WARPS of block
 * i / XRAY_LM_WARPS, its workspace the warp's nw doubles of the block's shared memory. */
__global__ static void __launch_bounds__(XRAY_LM_WARPS *XRAY_LANES)
    xray_lm_kernel(const double *traces, int64_t ntr, int n, double dt, int mcap, int64_t nw,
                   tide_xray_lp_result *out) {
    extern __shared__ double xray_lm_shared[];
    const int warp = (int)(threadIdx.x / XRAY_LANES);
    const int64_t i = (int64_t)blockIdx.x * XRAY_LM_WARPS + warp;
    if (i >= ntr)
        return; /* the whole warp: no lane of it waits at a __syncwarp */
    const int it = xray_lm_refine(traces + i * n, n, dt, mcap, xray_lm_shared + warp * nw, out + i);
    if (threadIdx.x % XRAY_LANES == 0)
        out[i].refine_iter = it;
}

static int launch_lpsvd(tide_ctx *ctx, const xray_lp_job *job) {
    const unsigned blocks = (unsigned)((job->ntr + XRAY_THREADS - 1) / XRAY_THREADS);
    cudaStream_t stream = (cudaStream_t)ctx->stream;
    if (job->n <= XRAY_GPU_NMAX) {
        if (job->n <= 96)
            xray_lp_kernel_local<96><<<blocks, XRAY_THREADS, 0, stream>>>(
                job->traces, job->ntr, job->n, job->dt, job->components, job->out);
        else
            xray_lp_kernel_local<XRAY_GPU_NMAX><<<blocks, XRAY_THREADS, 0, stream>>>(
                job->traces, job->ntr, job->n, job->dt, job->components, job->out);
        const cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess)
            return 0;
        /* the local frames (~30 KB a thread for 96 samples, reserved for every resident
         * thread of the device) did not fit: run the same code with the workspace in a
         * device buffer instead */
        if (e != cudaErrorMemoryAllocation && e != cudaErrorLaunchOutOfResources)
            return tide_error(TIDE_E_CUDA, "xray lpsvd: kernel launch: %s", cudaGetErrorString(e));
    }
    const int64_t nw = xray_lp_work_doubles(job->n);
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

static int launch_refine(tide_ctx *ctx, const xray_lp_job *job) {
    const int mcap = xray_lm_mode_cap(job->components);
    const int64_t nw = xray_lm_work_doubles(mcap);
    const size_t shared = sizeof(double) * (size_t)(nw * XRAY_LM_WARPS);
    /* beyond 48 KB a block's dynamic shared memory must be asked for (8 modes: 58 KB) */
    cudaError_t e = cudaFuncSetAttribute(xray_lm_kernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared);
    if (e != cudaSuccess)
        return tide_error(TIDE_E_CUDA, "xray refine: %zu bytes of shared memory a block: %s",
                          shared, cudaGetErrorString(e));
    const unsigned blocks = (unsigned)((job->ntr + XRAY_LM_WARPS - 1) / XRAY_LM_WARPS);
    xray_lm_kernel<<<blocks, XRAY_LM_WARPS * XRAY_LANES, shared, (cudaStream_t)ctx->stream>>>(
        job->traces, job->ntr, job->n, job->dt, mcap, nw, job->out);
    e = cudaGetLastError();
    if (e != cudaSuccess)
        return tide_error(TIDE_E_CUDA, "xray refine: kernel launch: %s", cudaGetErrorString(e));
    return 0;
}

extern "C" int xray_lpsvd_batch_cuda(tide_ctx *ctx, const xray_lp_job *job) {
    if (job->ntr <= 0)
        return 0;
    int st = launch_lpsvd(ctx, job);
    if (!st && job->refine)
        st = launch_refine(ctx, job);
    return st;
}
