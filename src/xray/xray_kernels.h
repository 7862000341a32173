/* xray_kernels.h — the batched LPSVD kernel's CPU and CUDA twins (DESIGN §3); the dispatch,
 * argument checks and transfers are tide_xray_lpsvd_batch's (xray_lpsvd.c). */
#ifndef TIDE_XRAY_KERNELS_H
#define TIDE_XRAY_KERNELS_H
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/xray.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Traces of at most this many samples run on the GPU with the workspace in each thread's
 *  local memory (a fixed-size array: the hardware interleaves it across threads, so the
 *  threads of a warp touching the same element make one coalesced access); longer ones with
 *  slices of a device buffer (job->work). */
#define XRAY_GPU_NMAX 128

/** One batch; traces and results live where the backend computes. */
typedef struct xray_lp_job {
    const double *traces; /**< ntr × n */
    int64_t ntr;
    int n;
    double dt;
    int components, refine;
    tide_xray_lp_result *out;
    double *work; /**< CUDA with n > XRAY_GPU_NMAX: ntr × xray_lp_work_doubles(n) device
                       doubles; otherwise unused */
} xray_lp_job;

int xray_lpsvd_batch_cpu(tide_ctx *ctx, const xray_lp_job *job);
#ifdef TIDE_HAVE_CUDA
int xray_lpsvd_batch_cuda(tide_ctx *ctx, const xray_lp_job *job);
/** Pack @p ntr device results (their first @p k modes) into the device arrays @p pi
 *  (XRAY_PACK_INTS each) and @p pd (xray_pack_doubles(k) each) for the copy back
 *  (xray_pack.h). */
/** Called by xray_lpsvd_pipeline_cuda with the packed results (xray_pack.h) of the @p m
 *  traces from @p s0, while the device works on the next chunk. */
typedef void (*xray_chunk_done_fn)(void *arg, int64_t s0, int64_t m, const int *pi,
                                   const double *pd);

/** The CUDA twin over every trace of @p job, whose traces are in host memory (job->out and
 *  job->work unused): chunks of @p chunk traces in turn, each copied from page-locked staging
 *  to the device while the one before is fitted, its packed results copied back and handed
 *  to @p done while the next is fitted. */
int xray_lpsvd_pipeline_cuda(tide_ctx *ctx, const xray_lp_job *job, int64_t chunk,
                             xray_chunk_done_fn done, void *arg);
/** With TIDE_XRAY_KERNEL_TIMES=1 in the environment, print on stderr the time each kernel of
 *  the fit took, summed since the last report, over @p ntr traces; nothing otherwise. */
void xray_kernel_times_report(int64_t ntr);
int xray_pack_batch_cuda(tide_ctx *ctx, const tide_xray_lp_result *res, int64_t ntr, int k, int *pi,
                         double *pd);
#endif

#ifdef __cplusplus
}
#endif
#endif
