/* device_memory.c — the context's stream-ordered device pool, transfers and pinned memory.
 *
 * Device memory comes from the device's cudaMemPool with its release threshold raised to
 * "keep everything", so after the first frame of a given shape the driver is never asked for
 * memory again (DESIGN §5). A small pointer→size map keeps current and peak usage exact. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"
#include "tide/ctx.h"
#include "tide/memory.h"
#include "tide/status.h"

#ifdef TIDE_HAVE_CUDA
#include <cuda_runtime.h>
#include "cuda_check.h"
#endif

/* Open-addressing map from device pointer to allocation size. */
typedef struct size_map {
    uintptr_t *keys; /* 0 = empty, 1 = deleted */
    size_t *vals;
    size_t cap, count;
} size_map;

#ifdef TIDE_HAVE_CUDA
static size_t slot_of(uintptr_t k, size_t cap) {
    return (size_t)((k >> 8) * 0x9E3779B97F4A7C15ull) & (cap - 1);
}

static int map_put(size_map *m, uintptr_t k, size_t v) {
    if ((m->count + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        uintptr_t *nk = calloc(ncap, sizeof *nk);
        size_t *nv = calloc(ncap, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return TIDE_E_NOMEM;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (m->keys[i] > 1) {
                size_t s = slot_of(m->keys[i], ncap);
                while (nk[s])
                    s = (s + 1) & (ncap - 1);
                nk[s] = m->keys[i];
                nv[s] = m->vals[i];
            }
        }
        free(m->keys);
        free(m->vals);
        m->keys = nk;
        m->vals = nv;
        m->cap = ncap;
    }
    size_t s = slot_of(k, m->cap);
    while (m->keys[s] > 1)
        s = (s + 1) & (m->cap - 1);
    m->keys[s] = k;
    m->vals[s] = v;
    m->count++;
    return TIDE_OK;
}

/* Remove @p k and return its size (0 if unknown). */
static size_t map_take(size_map *m, uintptr_t k) {
    if (!m || !m->cap)
        return 0;
    size_t s = slot_of(k, m->cap);
    for (size_t n = 0; n < m->cap && m->keys[s]; n++, s = (s + 1) & (m->cap - 1)) {
        if (m->keys[s] == k) {
            m->keys[s] = 1;
            m->count--;
            return m->vals[s];
        }
    }
    return 0;
}

#endif

void tide_device_map_free(void *p) {
    size_map *m = p;
    if (!m)
        return;
    free(m->keys);
    free(m->vals);
    free(m);
}

int tide_device_alloc(tide_ctx *ctx, size_t bytes, void **ptr) {
    *ptr = NULL;
#ifdef TIDE_HAVE_CUDA
    if (ctx->backend != TIDE_BACKEND_CUDA)
        return tide_error(TIDE_E_NODEVICE, "device allocation on a CPU context");
    if (ctx->device_mem_cap && ctx->device_bytes + bytes > ctx->device_mem_cap)
        return tide_error(TIDE_E_NOMEM,
                          "device allocation of %zu bytes exceeds the memory cap of %zu bytes "
                          "(%zu in use)",
                          bytes, ctx->device_mem_cap, ctx->device_bytes);
    if (!ctx->device_sizes) {
        ctx->device_sizes = calloc(1, sizeof(size_map));
        if (!ctx->device_sizes)
            return tide_error(TIDE_E_NOMEM, "device pool bookkeeping");
    }
    void *p = NULL;
    size_t ask = bytes ? bytes : 1;
    cudaError_t e =
        cudaMallocFromPoolAsync(&p, ask, (cudaMemPool_t)ctx->mempool, (cudaStream_t)ctx->stream);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return tide_error(TIDE_E_NOMEM, "device allocation of %zu bytes failed: %s", bytes,
                          cudaGetErrorString(e));
    }
    if (map_put(ctx->device_sizes, (uintptr_t)p, ask)) {
        cudaFreeAsync(p, (cudaStream_t)ctx->stream);
        return tide_error(TIDE_E_NOMEM, "device pool bookkeeping");
    }
    ctx->device_bytes += ask;
    if (ctx->device_bytes > ctx->device_bytes_peak)
        ctx->device_bytes_peak = ctx->device_bytes;
    *ptr = p;
    return TIDE_OK;
#else
    (void)ctx;
    (void)bytes;
    return tide_error(TIDE_E_NODEVICE, "this build of tide has no CUDA backend");
#endif
}

void tide_device_free(tide_ctx *ctx, void *ptr) {
    if (!ptr)
        return;
#ifdef TIDE_HAVE_CUDA
    ctx->device_bytes -= map_take(ctx->device_sizes, (uintptr_t)ptr);
    cudaFreeAsync(ptr, (cudaStream_t)ctx->stream);
#else
    (void)ctx;
#endif
}

void tide_device_adopt(tide_ctx *to, tide_ctx *from, void *ptr) {
    if (!ptr || to == from)
        return;
#ifdef TIDE_HAVE_CUDA
    const size_t n = map_take(from->device_sizes, (uintptr_t)ptr);
    from->device_bytes -= n;
    if (!to->device_sizes)
        to->device_sizes = calloc(1, sizeof(size_map));
    /* without bookkeeping memory the pointer is still freed right, only not counted */
    if (to->device_sizes && map_put(to->device_sizes, (uintptr_t)ptr, n) == TIDE_OK) {
        to->device_bytes += n;
        if (to->device_bytes > to->device_bytes_peak)
            to->device_bytes_peak = to->device_bytes;
    }
#endif
}

void tide_device_usage(const tide_ctx *ctx, size_t *current, size_t *peak) {
    if (current)
        *current = ctx->device_bytes;
    if (peak)
        *peak = ctx->device_bytes_peak;
}

void tide_device_reset_peak(tide_ctx *ctx) {
    ctx->device_bytes_peak = ctx->device_bytes;
}

int tide_memcpy(tide_ctx *ctx, void *dst, int dst_on_device, const void *src, int src_on_device,
                size_t bytes) {
    if (!bytes)
        return TIDE_OK;
    if (!dst_on_device && !src_on_device) {
        memmove(dst, src, bytes);
        return TIDE_OK;
    }
#ifdef TIDE_HAVE_CUDA
    if (bytes >= TIDE_STAGED_MIN_BYTES && dst_on_device != src_on_device) {
        /* cached host blocks are page-locked on first use: then a direct DMA */
        const void *host = dst_on_device ? src : dst;
        if (!tide_host_block_pin(host, bytes) && tide_host_is_pageable(host))
            return dst_on_device ? tide_staged_upload(ctx, dst, src, bytes)
                                 : tide_staged_download(ctx, dst, src, bytes);
    }
    enum cudaMemcpyKind kind =
        dst_on_device ? (src_on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                      : cudaMemcpyDeviceToHost;
    TIDE_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, kind, (cudaStream_t)ctx->stream));
    /* Device to device stays stream-ordered: only the host needs to wait, and it reads
     * device memory only through a copy, which waits. (A wait costs ~50 us on the GPU
     * machine; the pipelines make dozens of such copies.) */
    if (kind != cudaMemcpyDeviceToDevice)
        TIDE_CUDA_TRY(cudaStreamSynchronize((cudaStream_t)ctx->stream));
    return TIDE_OK;
#else
    (void)ctx;
    return tide_error(TIDE_E_NODEVICE, "device copy in a build without CUDA");
#endif
}

int tide_download_start(tide_ctx *ctx, void *dst, const void *src, size_t bytes) {
#ifdef TIDE_HAVE_CUDA
    if (bytes >= TIDE_STAGED_MIN_BYTES && ctx->backend == TIDE_BACKEND_CUDA &&
        tide_host_block_pin(dst, bytes))
        return tide_side_download(ctx, dst, src, bytes);
#endif
    return tide_memcpy(ctx, dst, 0, src, ctx->backend == TIDE_BACKEND_CUDA, bytes);
}

int tide_download_wait(tide_ctx *ctx) {
#ifdef TIDE_HAVE_CUDA
    if (ctx->backend == TIDE_BACKEND_CUDA)
        return tide_side_wait(ctx);
#endif
    (void)ctx;
    return TIDE_OK;
}

int tide_memzero(tide_ctx *ctx, void *ptr, int on_device, size_t bytes) {
    if (!bytes)
        return TIDE_OK;
    if (!on_device) {
        memset(ptr, 0, bytes);
        return TIDE_OK;
    }
#ifdef TIDE_HAVE_CUDA
    /* stream-ordered, not waited for (as device-to-device copies) */
    TIDE_CUDA_TRY(cudaMemsetAsync(ptr, 0, bytes, (cudaStream_t)ctx->stream));
    return TIDE_OK;
#else
    (void)ctx;
    return tide_error(TIDE_E_NODEVICE, "device memset in a build without CUDA");
#endif
}

int tide_host_pinned_alloc(tide_ctx *ctx, size_t bytes, void **ptr) {
#ifdef TIDE_HAVE_CUDA
    if (ctx->backend == TIDE_BACKEND_CUDA) {
        TIDE_CUDA_TRY(cudaMallocHost(ptr, bytes ? bytes : 1));
        return TIDE_OK;
    }
#endif
    (void)ctx;
    *ptr = malloc(bytes ? bytes : 1);
    return *ptr ? TIDE_OK : tide_error(TIDE_E_NOMEM, "cannot allocate %zu host bytes", bytes);
}

void tide_host_pinned_free(tide_ctx *ctx, void *ptr) {
    if (!ptr)
        return;
#ifdef TIDE_HAVE_CUDA
    if (ctx->backend == TIDE_BACKEND_CUDA) {
        cudaFreeHost(ptr);
        return;
    }
#endif
    (void)ctx;
    free(ptr);
}

int tide_sync(tide_ctx *ctx) {
#ifdef TIDE_HAVE_CUDA
    if (ctx->backend == TIDE_BACKEND_CUDA)
        TIDE_CUDA_TRY(cudaStreamSynchronize((cudaStream_t)ctx->stream));
#endif
    (void)ctx;
    return TIDE_OK;
}
