/* ctx.h — tide_ctx: everything a computation needs, and no globals.
 *
 * A context names its backend (CPU or CUDA), device and stream, owns the device memory pool,
 * the FFT plan cache and the stage timers, and carries the logger. Two contexts can run on two
 * GPUs in one process. A context is used by one thread at a time. */
#ifndef TIDE_CTX_H
#define TIDE_CTX_H
#include "tide/export.h"
#include <stddef.h>
#include <stdio.h>
#include "tide/log.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Backends. AUTO resolves to CUDA when a GPU is usable, else CPU. */
typedef enum { TIDE_BACKEND_AUTO = 0, TIDE_BACKEND_CPU = 1, TIDE_BACKEND_CUDA = 2 } tide_backend;

/** The most CPU threads a context takes (tide_ctx_create refuses more with TIDE_E_RANGE). */
#define TIDE_MAX_THREADS 1024

/** Options for tide_ctx_create. Zero-initialised means: auto backend, device 0, all cores,
 *  silent logger, no device memory cap. */
typedef struct tide_ctx_options {
    tide_backend backend;  /**< requested backend [AUTO] */
    int device;            /**< CUDA device ordinal [0] */
    int threads;           /**< CPU threads for OpenMP and FFTW, 0 to TIDE_MAX_THREADS; 0 = all
                                cores [0] */
    size_t device_mem_cap; /**< refuse device allocations beyond this many bytes; 0 = none [0] */
    tide_logger log;       /**< logger [silent] */
} tide_ctx_options;

struct tide_timer_set;

/** A computation context. Fields are public for the library's own stages; treat as read-only. */
typedef struct tide_ctx {
    tide_backend backend; /**< resolved: TIDE_BACKEND_CPU or TIDE_BACKEND_CUDA */
    int device;           /**< CUDA device ordinal (CUDA backend) */
    int threads;          /**< CPU threads in use */
    void *stream;         /**< cudaStream_t (CUDA backend), NULL otherwise */
    void *mempool;        /**< cudaMemPool_t of the device (CUDA backend) */
    size_t device_mem_cap;
    size_t device_bytes;      /**< bytes now allocated from the pool */
    size_t device_bytes_peak; /**< peak since the last tide_device_reset_peak */
    void *device_sizes;       /**< internal: pointer→size map for usage accounting */
    tide_logger log;
    struct tide_timer_set *timers; /**< per-stage timings (timer.h) */
    /** Internal: state the library's modules keep across calls (FFT plans, scratch, ...),
     *  released by their destructor in tide_ctx_destroy, newest first. */
    struct {
        void *data;
        void (*destroy)(struct tide_ctx *ctx, void *data);
    } ext[8];
    char device_name[128]; /**< "NVIDIA H200" or "CPU (N threads)" */
} tide_ctx;

/** Create a context. With TIDE_BACKEND_CUDA and no usable GPU (or a build without CUDA) this
 *  fails with TIDE_E_NODEVICE; with AUTO it falls back to the CPU and logs that at INFO. */
TIDE_API int tide_ctx_create(tide_ctx **out, const tide_ctx_options *opt);

/** Release the context, its pool, plans and timers. NULL is a no-op. */
TIDE_API void tide_ctx_destroy(tide_ctx *ctx);

/** The context's helper: a second context of the same backend, device and device pool with
 *  its own stream, plan caches and timers, for independent work that a second host thread runs
 *  beside the context's own (e.g. the two frames of a difference). It has half the context's
 *  CPU threads. Created on first use and kept (a warm process pays for its plans once) until
 *  tide_ctx_destroy(ctx); never destroy it yourself. Device memory it allocates can be handed
 *  to the context with tide_device_adopt (memory.h). */
TIDE_API int tide_ctx_helper(tide_ctx *ctx, tide_ctx **helper);

/** 1 if this build has the CUDA backend and at least one GPU is usable; *count devices. */
TIDE_API int tide_cuda_available(int *count);

/** Free and total memory of CUDA device @p device, bytes, as the driver reports them (every
 *  process's use counted). 0, or TIDE_E_NODEVICE (no such device, or a build without CUDA)
 *  with both set to 0. */
TIDE_API int tide_cuda_memory(int device, size_t *free_bytes, size_t *total_bytes);

/** Parse "auto", "cpu", "cuda" (also "gpu"); TIDE_E_INVAL otherwise. */
TIDE_API int tide_backend_parse(const char *s, tide_backend *out);

/** "cpu", "cuda" or "auto". */
TIDE_API const char *tide_backend_name(tide_backend b);

#ifdef __cplusplus
}
#endif
#endif
