/* xray_lpsvd_cuda.cu — CUDA twin of the batched LPSVD (xray_lpsvd_cpu.c is the reference), over
 * a chunk of traces:
 *  - LPSVD of a trace of up to XRAY_GPU_NMAX samples in four kernels: the checks and the
 *    Householder QR of Hᵀ, the Jacobi SVD of its R factor, and the prediction polynomial with
 *    its roots, each one trace at a time per warp with its matrices in the warp's shared
 *    memory (xray_svd_lanes.h, xray_root_step), each warp taking the next trace from a
 *    counter as it finishes one; then xray_lpsvd_modes (selection, least squares) one trace
 *    per thread, running the CPU's function of xray_math.h unchanged, its workspace in local
 *    memory, which the hardware interleaves across threads (a warp's threads reading the
 *    same element make one coalesced access). The lane forms give the sequential code's
 *    bits. A longer trace runs all of LPSVD one trace per thread with its own slice of
 *    job->work (contiguous per thread: uncoalesced, slower).
 *  - the refinement (variable projection), one trace per warp (xray_lm.h): the lanes split the
 *    samples, the sums of the normal equations and the elimination, with the trace's state in
 *    the warp's slice of shared memory. One thread per trace kept ~2 KB of it in local memory,
 *    which no cache holds for 2048 threads an SM, and was 90% of the fit. Its warps too take
 *    their traces from a counter: the refinement runs from a few iterations to XRAY_LM_MAXIT.
 *  - the results packed for the copy back (xray_pack.h);
 *  - the chunks in a pipeline (xray_lpsvd_pipeline_cuda): each chunk's traces staged in
 *    page-locked memory and uploaded on a copy stream while the chunk before is fitted, its
 *    packed results copied back on that stream and unpacked by the host while the next is
 *    fitted (one chunk after another, the copies and the unpacking were ~10% of the fit).
 * The file is compiled without FMA contraction (CMakeLists.txt) so products and sums round as
 * on the CPU; what remains are the last-bit differences of CUDA's exp, log, sin, cos, atan2 and
 * pow. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gpu/cuda_check.h"
#include "tide/memory.h"
#include "xray/xray_kernels.h"
#include "xray/xray_lm.h"
#include "xray/xray_pack.h"
#include "xray/xray_svd_lanes.h"

#define XRAY_THREADS 64
/* Warps (traces) per block of the refinement: 4 × 8 KB of shared memory for 5 components. */
#define XRAY_LM_WARPS 4

/* The stages of a short trace (<= XRAY_GPU_NMAX samples), for LPSVD in three kernels: each
 * trace's R factor, then its V and σ (r × r, r × r, r doubles at trace * xray_svd_doubles(r)),
 * and how far it got (stage: XRAY_STAGE_DONE when xray_lpsvd_start settled it, else the
 * Jacobi sweeps, < 0 when they ran out). */
#define XRAY_STAGE_DONE (-1000)

/* TIDE_XRAY_KERNEL_TIMES=1: each kernel of the fit timed by CUDA events and the sums printed
 * on stderr after each batch (where the fit's time goes; the run waits on every event, so
 * the fit itself is a little slower). */
enum { XRAY_T_START, XRAY_T_SVD, XRAY_T_ROOTS, XRAY_T_FINISH, XRAY_T_REFINE, XRAY_T_N };
static const char *const xray_t_names[XRAY_T_N] = {"lpsvd start", "lpsvd svd", "lpsvd roots",
                                                   "lpsvd finish", "refine"};
static double xray_t_ms[XRAY_T_N];
static int xray_t_on = -1;

static int times_on(void) {
    if (xray_t_on < 0) {
        const char *v = getenv("TIDE_XRAY_KERNEL_TIMES");
        xray_t_on = v && strcmp(v, "0") != 0;
    }
    return xray_t_on;
}

/* An event on @p stream when timing (NULL otherwise). */
static cudaEvent_t time_mark(cudaStream_t stream) {
    cudaEvent_t e = NULL;
    if (times_on() && cudaEventCreate(&e) == cudaSuccess)
        cudaEventRecord(e, stream);
    return e;
}

/* Add the times between consecutive marks ev[0..n] to slots k0, k0 + 1, ...; the events
 * destroyed. */
static void time_add(int k0, cudaEvent_t *ev, int n) {
    if (ev[n] && cudaEventSynchronize(ev[n]) != cudaSuccess)
        cudaGetLastError();
    for (int i = 0; i < n; i++) {
        float ms = 0.0f;
        if (ev[i] && ev[i + 1] && cudaEventElapsedTime(&ms, ev[i], ev[i + 1]) == cudaSuccess)
            xray_t_ms[k0 + i] += ms;
    }
    for (int i = 0; i <= n; i++)
        if (ev[i])
            cudaEventDestroy(ev[i]);
}

extern "C" void xray_kernel_times_report(int64_t ntr) {
    if (!times_on())
        return;
    fprintf(stderr, "xray kernel times (%lld traces):", (long long)ntr);
    for (int k = 0; k < XRAY_T_N; k++)
        fprintf(stderr, " %s %.1f ms%s", xray_t_names[k], xray_t_ms[k],
                k + 1 < XRAY_T_N ? "," : "\n");
    memset(xray_t_ms, 0, sizeof xray_t_ms);
}

static __host__ __device__ int64_t xray_svd_doubles(int r) {
    return 2 * (int64_t)r * r + r;
}

/* Workspace doubles of the three stages for traces of at most NMAX samples (compile-time
 * constants: the kernels keep them in local memory, interleaved across a warp's threads). */
template <int NMAX> struct xray_local_size {
    static constexpr int m = (3 * (NMAX - 1)) / 4, r = (NMAX - 1) - m,
                         p = TIDE_XRAY_MAX_COMPONENTS + 1, modes = XRAY_LP_MODES_WORK(NMAX, p);
};

/* The next trace for the calling warp, from the launch's counter: lane 0 takes it and the
 * warp shares it. The refinement runs from a few iterations to XRAY_LM_MAXIT, the Jacobi SVD
 * a varying number of sweeps; a warp that takes traces as it finishes them never idles while
 * the other warps of its block are still on a long one (with one trace a warp, most blocks of
 * the refinement waited for a 200-iteration trace: a third of the traces run that long). */
__device__ static int64_t xray_next_trace(unsigned long long *next) {
    unsigned long long i = 0;
    __syncwarp();
    if ((threadIdx.x & (XRAY_LANES - 1)) == 0)
        i = atomicAdd(next, 1ULL);
    return (int64_t)__shfl_sync(0xffffffffu, i, 0);
}

/* Stage 1, one trace at a time per warp (XRAY_START_WARPS a block, traces from @p next): lane
 * 0 checks the trace, the lanes fill Hᵀ (m × r, column stride m | 1 against bank conflicts)
 * in the warp's shared memory, and its R factor goes into the trace's slot by the lane-form
 * Householder QR (xray_svd_lanes.h). */
#define XRAY_START_WARPS 4
__global__ static void __launch_bounds__(XRAY_START_WARPS *XRAY_LANES)
    xray_lp_start_kernel(const double *traces, int64_t ntr, int n, double dt, int components,
                         double *svd, int *stage, tide_xray_lp_result *out,
                         unsigned long long *next) {
    extern __shared__ double xray_start_shared[];
    const int warp = (int)(threadIdx.x / XRAY_LANES), lane = (int)(threadIdx.x % XRAY_LANES);
    int m, r;
    xray_lp_sizes(n, &m, &r);
    const int lda = m | 1;
    double *B = xray_start_shared + warp * ((int64_t)lda * r + 2), *red = B + (int64_t)lda * r;
    for (int64_t i; (i = xray_next_trace(next)) < ntr;) {
        const double *s = traces + i * n;
        int go = 0;
        if (lane == 0)
            go = xray_lpsvd_check(s, n, dt, components, out + i);
        go = __shfl_sync(0xffffffffu, go, 0);
        if (!go) {
            if (lane == 0)
                stage[i] = XRAY_STAGE_DONE;
            continue;
        }
        for (int e = lane; e < m * r; e += XRAY_LANES)
            B[(e / m) * lda + e % m] = s[e / m + 1 + e % m];
        __syncwarp();
        xray_qr_r_lanes(B, lda, m, r, svd + i * xray_svd_doubles(r), red);
        if (lane == 0)
            stage[i] = 0;
    }
}

/* The column stride of R in a warp's shared memory: odd, so that the lanes forming the
 * products of a round's pairs (a column each, 8 r bytes apart) read from different banks; with
 * r = 24 even they met in two, and the SVD was bound by shared memory. */
static __host__ __device__ int xray_svd_lda(int r) {
    return r | 1;
}

/* Shared doubles of one warp of the SVD kernel: R (padded), V, σ and the lanes' scratch. */
static __host__ __device__ int64_t xray_svd_shared_doubles(int r) {
    return (int64_t)r * xray_svd_lda(r) + (int64_t)r * r + r + XRAY_SVD_LANES_SCRATCH(r);
}

/* Stage 2, one trace at a time per warp (XRAY_SVD_WARPS a block, traces taken from @p next as
 * the warp finishes them): the Jacobi SVD of R in the warp's shared memory
 * (xray_svd_lanes.h), V and σ written back over the trace's slot. */
#define XRAY_SVD_WARPS 4
__global__ static void __launch_bounds__(XRAY_SVD_WARPS *XRAY_LANES)
    xray_lp_svd_kernel(int64_t ntr, int r, double *svd, int *stage, unsigned long long *next) {
    extern __shared__ double xray_svd_shared[];
    const int warp = (int)(threadIdx.x / XRAY_LANES), lane = (int)(threadIdx.x % XRAY_LANES);
    const int64_t nd = xray_svd_doubles(r);
    const int lda = xray_svd_lda(r);
    double *R = xray_svd_shared + warp * xray_svd_shared_doubles(r), *V = R + r * lda,
           *sig = V + r * r, *red = sig + r;
    for (int64_t i; (i = xray_next_trace(next)) < ntr;) {
        if (stage[i] == XRAY_STAGE_DONE)
            continue; /* the whole warp: every lane read the same stage */
        double *slot = svd + i * nd;
        for (int e = lane; e < r * r; e += XRAY_LANES)
            R[(e / r) * lda + e % r] = slot[e];
        __syncwarp();
        const int sweeps = xray_jacobi_svd_lanes(R, lda, r, r, V, sig, red);
        for (int e = lane; e < r * r + r; e += XRAY_LANES)
            slot[r * r + e] = V[e]; /* V then σ, as in the slot */
        if (lane == 0)
            stage[i] = sweeps;
    }
}

/* Doubles of one warp of the roots kernel: y (r), the polynomial (m + 1), the roots, their
 * next values (2m each), their flags and their steps' outcomes (m each). */
static __host__ __device__ int64_t xray_roots_shared_doubles(int m, int r) {
    return (int64_t)r + 7 * (int64_t)m + 1;
}

/* Stage 3, one trace at a time per warp (XRAY_ROOTS_WARPS a block, traces from @p next): the
 * model order and the prediction polynomial from V and σ (lane 0 y, the lanes a coefficient
 * each), then its roots by the simultaneous Aberth iteration with the lanes moving a root
 * each (xray_root_step: the sequential xray_roots' bits), into @p roots (2m a trace); stage
 * becomes the order for the finish, or XRAY_STAGE_DONE with the trace's reason. One thread
 * per trace kept the roots in local memory: ~85% of a 444 ms finish kernel per pixel. */
#define XRAY_ROOTS_WARPS 4
__global__ static void __launch_bounds__(XRAY_ROOTS_WARPS *XRAY_LANES)
    xray_lp_roots_kernel(const double *traces, int64_t ntr, int n, int components,
                         const double *svd, int *stage, double *roots, tide_xray_lp_result *out,
                         unsigned long long *next) {
    extern __shared__ double xray_roots_shared[];
    const int warp = (int)(threadIdx.x / XRAY_LANES), lane = (int)(threadIdx.x % XRAY_LANES);
    int m, r;
    xray_lp_sizes(n, &m, &r);
    double *y = xray_roots_shared + warp * xray_roots_shared_doubles(m, r), *c = y + r,
           *zr = c + m + 1, *zi = zr + m, *nz = zi + m, *done = nz + 2 * m, *flag = done + m;
    for (int64_t i; (i = xray_next_trace(next)) < ntr;) {
        const int sweeps = stage[i];
        if (sweeps == XRAY_STAGE_DONE)
            continue; /* the whole warp: every lane read the same stage */
        const double *s = traces + i * n, *slot = svd + i * xray_svd_doubles(r);
        int k = 0;
        if (lane == 0) {
            k = xray_lpsvd_order(slot + 2 * r * r, r, components, sweeps, out + i);
            if (k)
                xray_lpsvd_y(s, r, k, slot + r * r, slot + 2 * r * r, y);
            else
                stage[i] = XRAY_STAGE_DONE;
        }
        k = __shfl_sync(0xffffffffu, k, 0);
        if (!k)
            continue;
        __syncwarp();
        for (int j = lane; j < m; j += XRAY_LANES)
            c[j + 1] = xray_lpsvd_coef(s, r, y, j);
        if (lane == 0)
            c[0] = 1.0;
        __syncwarp();
        for (int j = lane; j < m; j += XRAY_LANES) {
            xray_root_start(c, m, j, zr, zi);
            done[j] = 0.0;
        }
        int conv = 0, fail = 0;
        for (int it = 1; it <= 1000 && !conv && !fail; it++) {
            __syncwarp();
            for (int j = lane; j < m; j += XRAY_LANES) {
                nz[j] = zr[j];
                nz[m + j] = zi[j];
                flag[j] =
                    done[j] != 0.0 ? 1.0 : xray_root_step(c, m, zr, zi, j, &nz[j], &nz[m + j]);
            }
            __syncwarp();
            conv = 1;
            for (int j = 0; j < m; j++) {
                fail |= flag[j] < 0.0;
                conv &= flag[j] > 0.0;
            }
            __syncwarp();
            for (int j = lane; j < m; j += XRAY_LANES) {
                done[j] = flag[j] > 0.0 ? 1.0 : 0.0;
                zr[j] = nz[j];
                zi[j] = nz[m + j];
            }
        }
        __syncwarp();
        if (fail || !conv) {
            if (lane == 0) {
                out[i].reason = TIDE_XRAY_R_ROOTS;
                stage[i] = XRAY_STAGE_DONE;
            }
            continue;
        }
        double *ro = roots + i * 2 * m;
        for (int j = lane; j < 2 * m; j += XRAY_LANES)
            ro[j] = zr[j]; /* zr then zi */
        if (lane == 0)
            stage[i] = k;
    }
}

/* Stage 4, one trace per thread: the modes from the roots (selection and least squares). */
template <int NMAX>
__global__ static void __launch_bounds__(XRAY_THREADS)
    xray_lp_finish_kernel(const double *traces, int64_t ntr, int n, double dt, const double *roots,
                          const int *stage, tide_xray_lp_result *out) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= ntr || stage[i] == XRAY_STAGE_DONE)
        return;
    int m, r;
    xray_lp_sizes(n, &m, &r);
    double w[xray_local_size<NMAX>::modes], s[NMAX];
    for (int j = 0; j < n; j++)
        s[j] = traces[i * n + j];
    const double *ro = roots + i * 2 * m;
    xray_lpsvd_modes(s, n, dt, stage[i], m, ro, ro + m, w, out + i);
}

/* Long traces: LPSVD in one kernel, one trace per thread, the workspace in job->work. */
__global__ static void xray_lp_kernel(xray_lp_job jb, int64_t nw) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= jb.ntr)
        return;
    tide_xray_lp_result r;
    xray_lpsvd(jb.traces + i * jb.n, jb.n, jb.dt, jb.components, jb.work + i * nw, &r);
    jb.out[i] = r;
}

/* The refinement of every out[i] (LPSVD results), each warp taking traces from @p next as it
 * finishes them, its workspace the warp's nw doubles of the block's shared memory. */
/* At least XRAY_LM_MIN_BLOCKS blocks an SM: the compiler's choice of 96 registers a thread
 * held 5 (20 warps an SM, for a kernel bound by latency); with 7 (at most 73 registers) the
 * per-pixel refinement took 918 ms on the H200 instead of 1,193, the maps the same. */
#define XRAY_LM_MIN_BLOCKS 7
__global__ static void __launch_bounds__(XRAY_LM_WARPS *XRAY_LANES, XRAY_LM_MIN_BLOCKS)
    xray_lm_kernel(const double *traces, int64_t ntr, int n, double dt, int components, int64_t nw,
                   tide_xray_lp_result *out, unsigned long long *next) {
    extern __shared__ double xray_lm_shared[];
    const int warp = (int)(threadIdx.x / XRAY_LANES);
    for (int64_t i; (i = xray_next_trace(next)) < ntr;) {
        const int it =
            xray_lm_refine(traces + i * n, n, dt, components, xray_lm_shared + warp * nw, out + i);
        if (threadIdx.x % XRAY_LANES == 0)
            out[i].refine_iter = it;
    }
}

/* Dynamic shared memory of a block beyond 48 KB must be asked for. */
template <typename K> static int allow_shared(K kernel, size_t bytes, const char *what) {
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e != cudaSuccess)
        return tide_error(TIDE_E_CUDA, "xray %s: %zu bytes of shared memory a block: %s", what,
                          bytes, cudaGetErrorString(e));
    return 0;
}

/* Blocks of @p warps warps that keep every SM as full as @p kernel (with @p shared bytes of
 * dynamic shared memory a block) allows, at most one warp for each of @p ntr traces: a launch
 * whose warps take traces from a counter needs no more than are resident at once. */
template <typename K>
static unsigned resident_blocks(K kernel, int warps, size_t shared, int64_t ntr) {
    const int threads = warps * XRAY_LANES;
    const int64_t need = (ntr + warps - 1) / warps;
    int dev = 0, sms = 1, per = 1;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel, threads, shared) !=
            cudaSuccess ||
        per < 1) {
        cudaGetLastError(); /* no figure: one block a trace group, as many as needed */
        return (unsigned)need;
    }
    const int64_t b = (int64_t)sms * per;
    return (unsigned)(b < need ? b : need);
}

/* @p n zeroed trace counters for launches, in the context's pool (stream-ordered). */
static int trace_counter(tide_ctx *ctx, void **counter, int n) {
    const size_t bytes = sizeof(unsigned long long) * (size_t)n;
    int st = tide_device_alloc(ctx, bytes, counter);
    if (!st && cudaMemsetAsync(*counter, 0, bytes, (cudaStream_t)ctx->stream) != cudaSuccess)
        st = tide_error(TIDE_E_CUDA, "xray: trace counter: %s",
                        cudaGetErrorString(cudaGetLastError()));
    return st;
}

/* The last launch's error as a status; *frame_full (when given) set when it was that the
 * threads' local frames did not fit the device (the one-kernel path may then run instead). */
static int launched(const char *what, int *frame_full) {
    const cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        return 0;
    if (frame_full)
        *frame_full = e == cudaErrorMemoryAllocation || e == cudaErrorLaunchOutOfResources;
    return tide_error(TIDE_E_CUDA, "xray %s: kernel launch: %s", what, cudaGetErrorString(e));
}

/* LPSVD of a short trace in three kernels: the checks and QR, then the Jacobi SVD of R, one
 * trace at a time per warp; the finish one trace per thread. */
template <int NMAX>
static int launch_stages(tide_ctx *ctx, const xray_lp_job *job, int *frame_full) {
    int m, r;
    xray_lp_sizes(job->n, &m, &r);
    if (r < 1)
        r = 1; /* too short: stage 1 settles every trace */
    const int64_t nd = xray_svd_doubles(r);
    const unsigned blocks = (unsigned)((job->ntr + XRAY_THREADS - 1) / XRAY_THREADS);
    const size_t shared = sizeof(double) * (size_t)(xray_svd_shared_doubles(r) * XRAY_SVD_WARPS);
    const size_t sshared = sizeof(double) * (size_t)(((int64_t)(m | 1) * r + 2) * XRAY_START_WARPS);
    const size_t rshared =
        sizeof(double) * (size_t)(xray_roots_shared_doubles(m, r) * XRAY_ROOTS_WARPS);
    cudaStream_t stream = (cudaStream_t)ctx->stream;
    void *svd = NULL, *stage = NULL, *next = NULL, *roots = NULL;
    int st = tide_device_alloc(ctx, sizeof(double) * (size_t)(job->ntr * nd), &svd);
    if (!st)
        st = tide_device_alloc(ctx, sizeof(int) * (size_t)job->ntr, &stage);
    if (!st)
        st = tide_device_alloc(ctx, sizeof(double) * (size_t)(job->ntr * (2 * m > 0 ? 2 * m : 1)),
                               &roots);
    if (!st)
        st = trace_counter(ctx, &next, 3); /* the start's, the SVD's and the roots' */
    if (!st)
        st = allow_shared(xray_lp_svd_kernel, shared, "lpsvd");
    if (!st)
        st = allow_shared(xray_lp_start_kernel, sshared, "lpsvd start");
    if (!st)
        st = allow_shared(xray_lp_roots_kernel, rshared, "lpsvd roots");
    cudaEvent_t ev[5] = {time_mark(stream), NULL, NULL, NULL, NULL};
    if (!st) {
        const unsigned sblocks =
            resident_blocks(xray_lp_start_kernel, XRAY_START_WARPS, sshared, job->ntr);
        xray_lp_start_kernel<<<sblocks, XRAY_START_WARPS * XRAY_LANES, sshared, stream>>>(
            job->traces, job->ntr, job->n, job->dt, job->components, (double *)svd, (int *)stage,
            job->out, (unsigned long long *)next);
        st = launched("lpsvd start", NULL);
        ev[1] = time_mark(stream);
    }
    if (!st) {
        const unsigned wblocks =
            resident_blocks(xray_lp_svd_kernel, XRAY_SVD_WARPS, shared, job->ntr);
        xray_lp_svd_kernel<<<wblocks, XRAY_SVD_WARPS * XRAY_LANES, shared, stream>>>(
            job->ntr, r, (double *)svd, (int *)stage, (unsigned long long *)next + 1);
        st = launched("lpsvd svd", NULL);
        ev[2] = time_mark(stream);
    }
    if (!st) {
        const unsigned rblocks =
            resident_blocks(xray_lp_roots_kernel, XRAY_ROOTS_WARPS, rshared, job->ntr);
        xray_lp_roots_kernel<<<rblocks, XRAY_ROOTS_WARPS * XRAY_LANES, rshared, stream>>>(
            job->traces, job->ntr, job->n, job->components, (const double *)svd, (int *)stage,
            (double *)roots, job->out, (unsigned long long *)next + 2);
        st = launched("lpsvd roots", NULL);
        ev[3] = time_mark(stream);
    }
    if (!st) {
        xray_lp_finish_kernel<NMAX><<<blocks, XRAY_THREADS, 0, stream>>>(
            job->traces, job->ntr, job->n, job->dt, (const double *)roots, (const int *)stage,
            job->out);
        st = launched("lpsvd finish", frame_full);
        ev[4] = time_mark(stream);
    }
    time_add(XRAY_T_START, ev, 4);
    tide_device_free(ctx, roots); /* stream-ordered: after the kernels */
    tide_device_free(ctx, next);
    tide_device_free(ctx, stage);
    tide_device_free(ctx, svd);
    return st;
}

static int launch_lpsvd(tide_ctx *ctx, const xray_lp_job *job) {
    if (job->n <= XRAY_GPU_NMAX) {
        int frame_full = 0;
        const int st = job->n <= 96 ? launch_stages<96>(ctx, job, &frame_full)
                                    : launch_stages<XRAY_GPU_NMAX>(ctx, job, &frame_full);
        /* the local frames (~40 KB a thread for 96 samples, reserved for every resident
         * thread of the device) did not fit: run the one-kernel code with the workspace in a
         * device buffer instead */
        if (!frame_full)
            return st;
        tide_error_clear();
    }
    const int64_t nw = xray_lp_work_doubles(job->n);
    const unsigned blocks = (unsigned)((job->ntr + XRAY_THREADS - 1) / XRAY_THREADS);
    xray_lp_job jb = *job;
    void *buf = NULL;
    if (!jb.work) {
        const int st = tide_device_alloc(ctx, sizeof(double) * (size_t)(job->ntr * nw), &buf);
        if (st)
            return st;
        jb.work = (double *)buf;
    }
    xray_lp_kernel<<<blocks, XRAY_THREADS, 0, (cudaStream_t)ctx->stream>>>(jb, nw);
    const int st = launched("lpsvd", NULL);
    tide_device_free(ctx, buf); /* stream-ordered: after the kernel */
    return st;
}

static int launch_refine(tide_ctx *ctx, const xray_lp_job *job) {
    const int64_t nw = xray_lm_work_doubles(job->components);
    const size_t shared = sizeof(double) * (size_t)(nw * XRAY_LM_WARPS); /* 5 components: 32 KB */
    void *next = NULL;
    int st = allow_shared(xray_lm_kernel, shared, "refine");
    if (!st)
        st = trace_counter(ctx, &next, 1);
    if (st)
        return st;
    const unsigned blocks = resident_blocks(xray_lm_kernel, XRAY_LM_WARPS, shared, job->ntr);
    cudaEvent_t ev[2] = {time_mark((cudaStream_t)ctx->stream), NULL};
    xray_lm_kernel<<<blocks, XRAY_LM_WARPS * XRAY_LANES, shared, (cudaStream_t)ctx->stream>>>(
        job->traces, job->ntr, job->n, job->dt, job->components, nw, job->out,
        (unsigned long long *)next);
    st = launched("refine", NULL);
    ev[1] = time_mark((cudaStream_t)ctx->stream);
    time_add(XRAY_T_REFINE, ev, 1);
    tide_device_free(ctx, next); /* stream-ordered: after the kernel */
    return st;
}

__global__ static void xray_pack_kernel(const tide_xray_lp_result *res, int64_t ntr, int k, int *pi,
                                        double *pd) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < ntr)
        xray_pack(res + i, k, pi + i * XRAY_PACK_INTS, pd + i * xray_pack_doubles(k));
}

extern "C" int xray_pack_batch_cuda(tide_ctx *ctx, const tide_xray_lp_result *res, int64_t ntr,
                                    int k, int *pi, double *pd) {
    if (ntr <= 0)
        return 0;
    const unsigned blocks = (unsigned)((ntr + 255) / 256);
    xray_pack_kernel<<<blocks, 256, 0, (cudaStream_t)ctx->stream>>>(res, ntr, k, pi, pd);
    return launched("pack", NULL);
}

extern "C" int xray_lpsvd_batch_cuda(tide_ctx *ctx, const xray_lp_job *job) {
    if (job->ntr <= 0)
        return 0;
    int st = launch_lpsvd(ctx, job);
    if (!st && job->refine)
        st = launch_refine(ctx, job);
    return st;
}

/* The buffers of xray_lpsvd_pipeline_cuda: two of each for the chunks in flight. */
typedef struct xray_pipe {
    double *hin[2]; /* page-locked staging of a chunk's traces */
    int *hpi[2];    /* page-locked packed results */
    double *hpd[2];
    void *dtr[2], *dpi[2], *dpd[2], *dres, *dw;
    cudaStream_t copy;
    cudaEvent_t up[2], kdone[2], down[2];
} xray_pipe;

static int pipe_error(const char *what, cudaError_t e) {
    return tide_error(e == cudaErrorMemoryAllocation ? TIDE_E_NOMEM : TIDE_E_CUDA, "xray %s: %s",
                      what, cudaGetErrorString(e));
}

static void pipe_free(tide_ctx *ctx, xray_pipe *p) {
    if (p->copy)
        cudaStreamSynchronize(p->copy);
    cudaStreamSynchronize((cudaStream_t)ctx->stream);
    for (int b = 0; b < 2; b++) {
        tide_host_pinned_free(ctx, p->hin[b]);
        tide_host_pinned_free(ctx, p->hpi[b]);
        tide_host_pinned_free(ctx, p->hpd[b]);
        tide_device_free(ctx, p->dtr[b]);
        tide_device_free(ctx, p->dpi[b]);
        tide_device_free(ctx, p->dpd[b]);
        if (p->up[b])
            cudaEventDestroy(p->up[b]);
        if (p->kdone[b])
            cudaEventDestroy(p->kdone[b]);
        if (p->down[b])
            cudaEventDestroy(p->down[b]);
    }
    tide_device_free(ctx, p->dres);
    tide_device_free(ctx, p->dw);
    if (p->copy)
        cudaStreamDestroy(p->copy);
}

static int pipe_make(tide_ctx *ctx, xray_pipe *p, const xray_lp_job *job, int64_t chunk) {
    const int64_t npd = xray_pack_doubles(job->components), nw = xray_lp_work_doubles(job->n);
    const size_t bin = sizeof(double) * (size_t)(chunk * job->n),
                 bpi = sizeof(int) * (size_t)(chunk * XRAY_PACK_INTS),
                 bpd = sizeof(double) * (size_t)(chunk * npd);
    int st = 0;
    cudaError_t e = cudaStreamCreateWithFlags(&p->copy, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        p->copy = NULL;
        return pipe_error("copy stream", e);
    }
    for (int b = 0; !st && b < 2; b++) {
        st = tide_host_pinned_alloc(ctx, bin, (void **)&p->hin[b]);
        if (!st)
            st = tide_host_pinned_alloc(ctx, bpi, (void **)&p->hpi[b]);
        if (!st)
            st = tide_host_pinned_alloc(ctx, bpd, (void **)&p->hpd[b]);
        if (!st)
            st = tide_device_alloc(ctx, bin, &p->dtr[b]);
        if (!st)
            st = tide_device_alloc(ctx, bpi, &p->dpi[b]);
        if (!st)
            st = tide_device_alloc(ctx, bpd, &p->dpd[b]);
        cudaEvent_t *ev[3] = {&p->up[b], &p->kdone[b], &p->down[b]};
        for (int i = 0; !st && i < 3; i++)
            if ((e = cudaEventCreateWithFlags(ev[i], cudaEventDisableTiming)) != cudaSuccess) {
                *ev[i] = NULL;
                st = pipe_error("event", e);
            }
    }
    if (!st)
        st = tide_device_alloc(ctx, sizeof(tide_xray_lp_result) * (size_t)chunk, &p->dres);
    if (!st && job->n > XRAY_GPU_NMAX)
        st = tide_device_alloc(ctx, sizeof(double) * (size_t)(chunk * nw), &p->dw);
    return st;
}

/* Chunk k's traces into staging buffer k % 2 and on to the device (copy stream), once chunk
 * k - 2's copy from that buffer and its fit on the device are done. */
static int pipe_stage(xray_pipe *p, const xray_lp_job *job, int64_t s0, int64_t m, int b) {
    cudaError_t e = cudaEventSynchronize(p->up[b]);
    if (e != cudaSuccess)
        return pipe_error("staging", e);
    const size_t bytes = sizeof(double) * (size_t)(m * job->n);
    memcpy(p->hin[b], job->traces + s0 * job->n, bytes);
    if ((e = cudaStreamWaitEvent(p->copy, p->kdone[b], 0)) != cudaSuccess ||
        (e = cudaMemcpyAsync(p->dtr[b], p->hin[b], bytes, cudaMemcpyHostToDevice, p->copy)) !=
            cudaSuccess ||
        (e = cudaEventRecord(p->up[b], p->copy)) != cudaSuccess)
        return pipe_error("trace upload", e);
    return 0;
}

/* Chunk k fitted on the context's stream after its upload, packed once the copy back of
 * chunk k - 2 has left buffer k % 2, and copied back on the copy stream. */
static int pipe_fit(tide_ctx *ctx, xray_pipe *p, const xray_lp_job *job, int64_t m, int b) {
    cudaStream_t cs = (cudaStream_t)ctx->stream;
    cudaError_t e;
    if ((e = cudaStreamWaitEvent(cs, p->up[b], 0)) != cudaSuccess)
        return pipe_error("fit", e);
    xray_lp_job jb = *job;
    jb.traces = (const double *)p->dtr[b];
    jb.ntr = m;
    jb.out = (tide_xray_lp_result *)p->dres;
    jb.work = (double *)p->dw;
    int st = xray_lpsvd_batch_cuda(ctx, &jb);
    if (!st && (e = cudaStreamWaitEvent(cs, p->down[b], 0)) != cudaSuccess)
        st = pipe_error("fit", e);
    if (!st)
        st = xray_pack_batch_cuda(ctx, (const tide_xray_lp_result *)p->dres, m, job->components,
                                  (int *)p->dpi[b], (double *)p->dpd[b]);
    if (st)
        return st;
    const size_t bpi = sizeof(int) * (size_t)(m * XRAY_PACK_INTS),
                 bpd = sizeof(double) * (size_t)(m * xray_pack_doubles(job->components));
    if ((e = cudaEventRecord(p->kdone[b], cs)) != cudaSuccess ||
        (e = cudaStreamWaitEvent(p->copy, p->kdone[b], 0)) != cudaSuccess ||
        (e = cudaMemcpyAsync(p->hpi[b], p->dpi[b], bpi, cudaMemcpyDeviceToHost, p->copy)) !=
            cudaSuccess ||
        (e = cudaMemcpyAsync(p->hpd[b], p->dpd[b], bpd, cudaMemcpyDeviceToHost, p->copy)) !=
            cudaSuccess ||
        (e = cudaEventRecord(p->down[b], p->copy)) != cudaSuccess)
        return pipe_error("result download", e);
    return 0;
}

extern "C" int xray_lpsvd_pipeline_cuda(tide_ctx *ctx, const xray_lp_job *job, int64_t chunk,
                                        xray_chunk_done_fn done, void *arg) {
    if (job->ntr <= 0)
        return 0;
    if (chunk > job->ntr)
        chunk = job->ntr;
    xray_pipe p;
    memset(&p, 0, sizeof p);
    int st = pipe_make(ctx, &p, job, chunk);
    const int64_t nch = (job->ntr + chunk - 1) / chunk;
    /* chunk k + 1 staged and queued before chunk k's results are waited for and unpacked: the
     * host's copies and unpacking run while the device fits */
    for (int64_t k = 0; !st && k <= nch; k++) {
        if (k < nch) {
            const int64_t s0 = k * chunk, m = job->ntr - s0 < chunk ? job->ntr - s0 : chunk;
            st = pipe_stage(&p, job, s0, m, (int)(k & 1));
            if (!st)
                st = pipe_fit(ctx, &p, job, m, (int)(k & 1));
        }
        if (!st && k > 0) {
            const int b = (int)((k - 1) & 1);
            const int64_t s0 = (k - 1) * chunk, m = job->ntr - s0 < chunk ? job->ntr - s0 : chunk;
            const cudaError_t e = cudaEventSynchronize(p.down[b]);
            if (e != cudaSuccess)
                st = pipe_error("fit", e);
            else
                done(arg, s0, m, p.hpi[b], p.hpd[b]);
        }
    }
    pipe_free(ctx, &p);
    return st;
}
