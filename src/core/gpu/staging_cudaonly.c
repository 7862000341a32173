/* staging_cudaonly.c — host<->device copies of pageable host memory through the context's
 * pinned staging ring (core_internal.h, used by tide_memcpy).
 *
 * Why: the driver copies pageable memory through its own small pinned bounce buffer with one
 * thread, ~5–10 GB/s on the GPU machine, so a 151 MP frame (605 MB) took ~100 ms to upload and
 * a 4096² difference with its planes ~190 ms to come back, while the link moves ~50 GB/s from
 * pinned memory. Here the host side of each chunk is copied by several threads (OpenMP) into
 * one of STAGE_NBUF pinned buffers while the DMA of the previous chunks runs on the context's
 * stream; events order the reuse of a buffer after its DMA. The ring is allocated on first use
 * and kept on the context (TIDE_EXT_STAGING), so a warm process pays for it once. Results are
 * bytes, so nothing about them depends on the chunking. */
#include <cuda_runtime.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"
#include "cuda_check.h"
#include "tide/status.h"
#include "core/ctx_internal.h"

#define STAGE_NBUF 3
#define STAGE_CHUNK ((size_t)16 << 20) /* bytes per buffer */
#define STAGE_SLICE ((size_t)1 << 20)  /* bytes per thread task */

typedef struct staging {
    unsigned char *buf[STAGE_NBUF];
    cudaEvent_t done[STAGE_NBUF];
    cudaStream_t side;  /* downloads that overlap the context's later work */
    cudaEvent_t queued; /* the context's stream up to a side download's start */
    int side_busy;      /* a side download was queued and not waited for */
} staging;

static void staging_destroy(tide_ctx *ctx, void *data) {
    (void)ctx;
    staging *s = data;
    for (int i = 0; i < STAGE_NBUF; i++) {
        if (s->buf[i])
            cudaFreeHost(s->buf[i]);
        if (s->done[i])
            cudaEventDestroy(s->done[i]);
    }
    if (s->side) {
        cudaStreamSynchronize(s->side);
        cudaStreamDestroy(s->side);
    }
    if (s->queued)
        cudaEventDestroy(s->queued);
    free(s);
}

static int staging_get(tide_ctx *ctx, staging **out) {
    staging *s = ctx->ext[TIDE_EXT_STAGING].data;
    if (!s) {
        if (!(s = calloc(1, sizeof *s)))
            return tide_error(TIDE_E_NOMEM, "staging ring");
        ctx->ext[TIDE_EXT_STAGING].data = s;
        ctx->ext[TIDE_EXT_STAGING].destroy = staging_destroy;
        for (int i = 0; i < STAGE_NBUF; i++) {
            TIDE_CUDA_TRY(cudaMallocHost((void **)&s->buf[i], STAGE_CHUNK));
            TIDE_CUDA_TRY(cudaEventCreateWithFlags(&s->done[i], cudaEventDisableTiming));
        }
    }
    *out = s;
    return TIDE_OK;
}

/* dst[0..n) = src[0..n) in slices, on the context's whole team (threads past the slices
 * wait at the end): a smaller team leaves pool threads asleep that the host stages after the
 * upload must wake (psf_lanczos.c's note). */
static void copy_parallel(void *dst, const void *src, size_t n, int threads) {
    const int64_t ns = (int64_t)((n + STAGE_SLICE - 1) / STAGE_SLICE);
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) schedule(static) if (ns > 1)
    for (int64_t k = 0; k < ns; k++) {
        const size_t o = (size_t)k * STAGE_SLICE, m = n - o < STAGE_SLICE ? n - o : STAGE_SLICE;
        memcpy((unsigned char *)dst + o, (const unsigned char *)src + o, m);
    }
}

int tide_host_is_pageable(const void *p) {
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError(); /* clear it: an unknown pointer is pageable host memory */
        return 1;
    }
    return a.type == cudaMemoryTypeUnregistered;
}

int tide_staged_upload(tide_ctx *ctx, void *dst, const void *src, size_t bytes) {
    staging *s;
    int st = staging_get(ctx, &s);
    if (st)
        return st;
    cudaStream_t stream = (cudaStream_t)ctx->stream;
    const size_t nchunk = (bytes + STAGE_CHUNK - 1) / STAGE_CHUNK;
    for (size_t i = 0; i < nchunk; i++) {
        const int b = (int)(i % STAGE_NBUF);
        const size_t o = i * STAGE_CHUNK, n = bytes - o < STAGE_CHUNK ? bytes - o : STAGE_CHUNK;
        if (i >= STAGE_NBUF) /* the buffer's previous DMA must be over */
            TIDE_CUDA_TRY(cudaEventSynchronize(s->done[b]));
        copy_parallel(s->buf[b], (const unsigned char *)src + o, n, ctx->threads);
        TIDE_CUDA_TRY(cudaMemcpyAsync((unsigned char *)dst + o, s->buf[b], n,
                                      cudaMemcpyHostToDevice, stream));
        TIDE_CUDA_TRY(cudaEventRecord(s->done[b], stream));
    }
    TIDE_CUDA_TRY(cudaStreamSynchronize(stream));
    return TIDE_OK;
}

int tide_staged_download(tide_ctx *ctx, void *dst, const void *src, size_t bytes) {
    staging *s;
    int st = staging_get(ctx, &s);
    if (st)
        return st;
    cudaStream_t stream = (cudaStream_t)ctx->stream;
    const size_t nchunk = (bytes + STAGE_CHUNK - 1) / STAGE_CHUNK;
    /* DMA runs STAGE_NBUF chunks ahead of the host copies out of the ring */
    for (size_t i = 0; i < nchunk + STAGE_NBUF; i++) {
        if (i >= STAGE_NBUF) {
            const size_t j = i - STAGE_NBUF;
            if (j >= nchunk)
                break;
            const int b = (int)(j % STAGE_NBUF);
            const size_t o = j * STAGE_CHUNK, n = bytes - o < STAGE_CHUNK ? bytes - o : STAGE_CHUNK;
            TIDE_CUDA_TRY(cudaEventSynchronize(s->done[b]));
            copy_parallel((unsigned char *)dst + o, s->buf[b], n, ctx->threads);
        }
        if (i < nchunk) {
            const int b = (int)(i % STAGE_NBUF);
            const size_t o = i * STAGE_CHUNK, n = bytes - o < STAGE_CHUNK ? bytes - o : STAGE_CHUNK;
            TIDE_CUDA_TRY(cudaMemcpyAsync(s->buf[b], (const unsigned char *)src + o, n,
                                          cudaMemcpyDeviceToHost, stream));
            TIDE_CUDA_TRY(cudaEventRecord(s->done[b], stream));
        }
    }
    return TIDE_OK;
}

int tide_side_download(tide_ctx *ctx, void *dst, const void *src, size_t bytes) {
    staging *s = NULL;
    int st = staging_get(ctx, &s);
    if (st)
        return st;
    if (!s->side) {
        TIDE_CUDA_TRY(cudaStreamCreateWithFlags(&s->side, cudaStreamNonBlocking));
        TIDE_CUDA_TRY(cudaEventCreateWithFlags(&s->queued, cudaEventDisableTiming));
    }
    /* after everything queued so far on the context's stream, then concurrently with it */
    TIDE_CUDA_TRY(cudaEventRecord(s->queued, (cudaStream_t)ctx->stream));
    TIDE_CUDA_TRY(cudaStreamWaitEvent(s->side, s->queued, 0));
    TIDE_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s->side));
    s->side_busy = 1;
    return TIDE_OK;
}

int tide_side_wait(tide_ctx *ctx) {
    staging *s = ctx->ext[TIDE_EXT_STAGING].data;
    if (!s || !s->side_busy)
        return TIDE_OK;
    s->side_busy = 0;
    TIDE_CUDA_TRY(cudaStreamSynchronize(s->side));
    return TIDE_OK;
}
