/* core_internal.h — links between core files that are not public API. */
#ifndef TIDE_CORE_INTERNAL_H
#define TIDE_CORE_INTERNAL_H
#include "tide/ctx.h"

/** Free the device pointer→size map kept in ctx->device_sizes (device_memory.c). */
void tide_device_map_free(void *map);

/** Free the context's stage timers (timer.c). */
void tide_timer_set_free(tide_ctx *ctx);

#include <stddef.h>

/** Host allocations of at least this many bytes go through the block cache (host_blocks.c). */
#define TIDE_HOST_BLOCK_MIN ((size_t)4 << 20)
/** @p bytes of host memory, zeroed when @p zero; blocks of TIDE_HOST_BLOCK_MIN bytes or more
 *  come from the process-wide cache of freed blocks when one fits. NULL when out of memory. */
void *tide_host_block_alloc(size_t bytes, int zero);
/** Give back memory from tide_host_block_alloc: 1 when it was a cached block (kept or
 *  released within the cap), 0 when it is not the cache's and the caller must free() it. */
int tide_host_block_free(void *ptr);
/** Release every idle cached block to the system. */
void tide_host_block_trim(void);
/** Bytes held by the cache in blocks not in use. */
size_t tide_host_block_idle_bytes(void);
/** 1 when [@p ptr, @p ptr + @p bytes) lies in a cached block that is page-locked, which this
 *  call does on first use in a CUDA build (0 without CUDA or when the system refuses). */
int tide_host_block_pin(const void *ptr, size_t bytes);

#ifdef TIDE_HAVE_CUDA
/** Copies of at least this many bytes between pageable host memory and the device go through
 *  the context's pinned staging ring (staging_cudaonly.c). */
#define TIDE_STAGED_MIN_BYTES ((size_t)1 << 20)
/** 1 when @p p is ordinary (pageable) host memory, 0 when pinned or device memory. */
int tide_host_is_pageable(const void *p);
/** Copy @p bytes from pageable host @p src to device @p dst through the staging ring; returns
 *  when the copy is complete. */
int tide_staged_upload(tide_ctx *ctx, void *dst, const void *src, size_t bytes);
/** Copy @p bytes from device @p src to pageable host @p dst through the staging ring, after
 *  the work already queued on the context's stream; returns when @p dst is complete. */
int tide_staged_download(tide_ctx *ctx, void *dst, const void *src, size_t bytes);
/** Queue a copy of @p bytes from device @p src to page-locked host @p dst on the context's
 *  side stream, after the work queued so far on its stream (tide_download_start). */
int tide_side_download(tide_ctx *ctx, void *dst, const void *src, size_t bytes);
/** Wait for the side stream's copies (tide_download_wait). */
int tide_side_wait(tide_ctx *ctx);
#endif

#endif
