/* core_internal.h — links between core files that are not public API. */
#ifndef TIDE_CORE_INTERNAL_H
#define TIDE_CORE_INTERNAL_H
#include "tide/ctx.h"

/** Free the device pointer→size map kept in ctx->device_sizes (device_memory.c). */
void tide_device_map_free(void *map);

/** Free the context's stage timers (timer.c). */
void tide_timer_set_free(tide_ctx *ctx);

#ifdef TIDE_HAVE_CUDA
#include <stddef.h>
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
#endif

#endif
