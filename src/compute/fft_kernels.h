/* fft_kernels.h — what the plan cache (fft.c) needs from a backend: make, execute and destroy
 * one in-place 2-D real plan. FFTW in fft_cpu.c, cuFFT in fft_cuda.cu. */
#ifndef TIDE_FFT_KERNELS_H
#define TIDE_FFT_KERNELS_H
#include <stddef.h>
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/fft.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A cached plan: the key and the backend's handle. */
struct tide_fft_plan {
    tide_fft_dir dir;
    int64_t nx, ny; /**< real transform size: ny rows of nx */
    int batch;
    tide_fft_effort effort;
    void *handle;      /**< fftwf_plan, or the cufftHandle stored as an integer */
    size_t work_bytes; /**< cuFFT workspace the plan needs (0 on the CPU) */
};

/** Make p->handle for the key in *p; TIDE_E_FFT on refusal. */
int tide_fft_plan_make_cpu(tide_ctx *ctx, struct tide_fft_plan *p);
/** Execute in place on @p data. */
int tide_fft_exec_cpu(tide_ctx *ctx, struct tide_fft_plan *p, float *data);
/** Destroy p->handle. */
void tide_fft_plan_destroy_cpu(tide_ctx *ctx, struct tide_fft_plan *p);
/** fftwf_malloc / fftwf_free. */
int tide_fft_buffer_alloc_cpu(tide_ctx *ctx, int64_t floats, float **buf);
void tide_fft_buffer_free_cpu(tide_ctx *ctx, float *buf);

#ifdef TIDE_HAVE_CUDA
/** Make the cuFFT plan bound to ctx->stream, without a workspace; sets p->work_bytes. */
int tide_fft_plan_make_cuda(tide_ctx *ctx, struct tide_fft_plan *p);
/** Give the plan its workspace (at least p->work_bytes of device memory). */
int tide_fft_plan_set_work_cuda(tide_ctx *ctx, struct tide_fft_plan *p, void *work);
/** Queue the transform on ctx->stream. */
int tide_fft_exec_cuda(tide_ctx *ctx, struct tide_fft_plan *p, float *data);
void tide_fft_plan_destroy_cuda(tide_ctx *ctx, struct tide_fft_plan *p);
#endif

/* ---- links between fft.c and correlate.c ------------------------------------------------ */

struct tide_correlator;
/** Take the correlator kept by tide_correlate (NULL if none); the cache forgets it. */
struct tide_correlator *tide_fft_cache_take_correlator(tide_ctx *ctx);
/** Keep @p c for the next tide_correlate (frees the one kept before). */
int tide_fft_cache_keep_correlator(tide_ctx *ctx, struct tide_correlator *c);

#ifdef __cplusplus
}
#endif

#endif
