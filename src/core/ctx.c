/* ctx.c — context creation: resolve the backend, pick the device, make the stream and pool. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "ctx_internal.h"
#include "tide/ctx.h"
#include "tide/status.h"

#ifdef TIDE_HAVE_CUDA
#include <cuda_runtime.h>
#include <stdint.h>
#include "core/gpu/cuda_check.h"
#endif

int tide_cuda_available(int *count) {
    int n = 0;
#ifdef TIDE_HAVE_CUDA
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        n = 0;
    }
#endif
    if (count)
        *count = n;
    return n > 0;
}

int tide_cuda_memory(int device, size_t *free_bytes, size_t *total_bytes) {
    *free_bytes = *total_bytes = 0;
#ifdef TIDE_HAVE_CUDA
    int prev = 0, n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || device < 0 || device >= n ||
        cudaGetDevice(&prev) != cudaSuccess) {
        cudaGetLastError();
        return tide_error(TIDE_E_NODEVICE, "no CUDA device %d", device);
    }
    /* the current device is the calling thread's: set it for the query, then put it back */
    int st = TIDE_OK;
    if (cudaSetDevice(device) != cudaSuccess ||
        cudaMemGetInfo(free_bytes, total_bytes) != cudaSuccess) {
        cudaGetLastError();
        st = tide_error(TIDE_E_NODEVICE, "CUDA device %d: cannot read its memory", device);
    }
    cudaSetDevice(prev);
    return st;
#else
    return tide_error(TIDE_E_NODEVICE, "no CUDA device %d: tide was built without CUDA", device);
#endif
}

int tide_backend_parse(const char *s, tide_backend *out) {
    if (!strcmp(s, "auto"))
        *out = TIDE_BACKEND_AUTO;
    else if (!strcmp(s, "cpu"))
        *out = TIDE_BACKEND_CPU;
    else if (!strcmp(s, "cuda") || !strcmp(s, "gpu"))
        *out = TIDE_BACKEND_CUDA;
    else
        return tide_error(TIDE_E_INVAL, "unknown backend '%s' (auto, cpu, cuda)", s);
    return TIDE_OK;
}

const char *tide_backend_name(tide_backend b) {
    return b == TIDE_BACKEND_CPU ? "cpu" : b == TIDE_BACKEND_CUDA ? "cuda" : "auto";
}

#ifdef TIDE_HAVE_CUDA
/* Bind the device, create the stream and configure the pool to keep freed memory. */
static int cuda_setup(tide_ctx *ctx) {
    int n = 0;
    tide_cuda_available(&n);
    if (ctx->device < 0 || ctx->device >= n)
        return tide_error(TIDE_E_NODEVICE, "CUDA device %d requested but %d present", ctx->device,
                          n);
    TIDE_CUDA_TRY(cudaSetDevice(ctx->device));
    cudaStream_t s;
    TIDE_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    ctx->stream = s;
    cudaMemPool_t pool;
    TIDE_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, ctx->device));
    uint64_t keep = UINT64_MAX;
    TIDE_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    ctx->mempool = pool;
    struct cudaDeviceProp prop;
    TIDE_CUDA_TRY(cudaGetDeviceProperties(&prop, ctx->device));
    snprintf(ctx->device_name, sizeof ctx->device_name, "%.100s", prop.name);
    return TIDE_OK;
}
#endif

int tide_ctx_create(tide_ctx **out, const tide_ctx_options *opt) {
    *out = NULL;
    tide_ctx_options defaults;
    memset(&defaults, 0, sizeof defaults);
    if (!opt)
        opt = &defaults;
    /* libgomp gives every thread its own stack: a team of 100,000 exhausts the address space
     * and crashes inside the runtime, so an absurd request is refused here. */
    if (opt->threads < 0 || opt->threads > TIDE_MAX_THREADS)
        return tide_error(TIDE_E_RANGE, "threads = %d: must be 0 (all cores) to %d", opt->threads,
                          TIDE_MAX_THREADS);
    tide_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return tide_error(TIDE_E_NOMEM, "cannot allocate a context");
    ctx->device = opt->device;
    ctx->threads = opt->threads > 0 ? opt->threads : omp_get_max_threads();
    ctx->device_mem_cap = opt->device_mem_cap;
    ctx->log = opt->log;

    tide_backend want = opt->backend;
    if (want == TIDE_BACKEND_AUTO)
        want = tide_cuda_available(NULL) ? TIDE_BACKEND_CUDA : TIDE_BACKEND_CPU;
    if (want == TIDE_BACKEND_CUDA) {
#ifdef TIDE_HAVE_CUDA
        int st = cuda_setup(ctx);
        if (st) {
            tide_ctx_destroy(ctx);
            return st;
        }
#else
        free(ctx);
        return tide_error(TIDE_E_NODEVICE, "the CUDA backend was requested but this build of "
                                           "tide has none (built without nvcc)");
#endif
    }
    ctx->backend = want;
    if (want == TIDE_BACKEND_CPU) {
        snprintf(ctx->device_name, sizeof ctx->device_name, "CPU (%d threads)", ctx->threads);
        if (opt->backend == TIDE_BACKEND_AUTO)
            tide_log(&ctx->log, TIDE_LOG_INFO, "ctx", "no usable GPU: using the CPU backend");
    }
    tide_log(&ctx->log, TIDE_LOG_DEBUG, "ctx", "backend %s on %s", tide_backend_name(want),
             ctx->device_name);
    *out = ctx;
    return TIDE_OK;
}

void tide_ctx_destroy(tide_ctx *ctx) {
    if (!ctx)
        return;
    for (int i = TIDE_EXT_COUNT - 1; i >= 0; i--)
        if (ctx->ext[i].data && ctx->ext[i].destroy)
            ctx->ext[i].destroy(ctx, ctx->ext[i].data);
    tide_timer_set_free(ctx);
#ifdef TIDE_HAVE_CUDA
    if (ctx->stream) {
        cudaStreamSynchronize((cudaStream_t)ctx->stream);
        cudaStreamDestroy((cudaStream_t)ctx->stream);
    }
    if (ctx->mempool) {
        /* Give the kept memory back to the driver: the pool is the device's, shared. */
        cudaMemPoolTrimTo((cudaMemPool_t)ctx->mempool, 0);
    }
#endif
    tide_device_map_free(ctx->device_sizes);
    free(ctx);
}

static void helper_destroy(tide_ctx *ctx, void *data) {
    (void)ctx;
    tide_ctx_destroy(data);
}

int tide_ctx_helper(tide_ctx *ctx, tide_ctx **helper) {
    *helper = ctx->ext[TIDE_EXT_HELPER].data;
    if (*helper)
        return TIDE_OK;
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = ctx->backend;
    o.device = ctx->device;
    o.threads = ctx->threads > 1 ? ctx->threads / 2 : 1;
    o.log = ctx->log;
    int st = tide_ctx_create(helper, &o);
    if (st)
        return tide_error_prefix(st, "the context's helper: ");
    ctx->ext[TIDE_EXT_HELPER].data = *helper;
    ctx->ext[TIDE_EXT_HELPER].destroy = helper_destroy;
    return TIDE_OK;
}
