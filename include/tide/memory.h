/* memory.h — the device memory pool, transfers and large host buffers.
 *
 * tide plans memory per frame shape (DESIGN §5): workspaces are taken once, before the hot
 * path, from the context's device pool (stream-ordered, memory kept by the pool between frames
 * so steady state allocates nothing from the driver) and, on the host, from the cache of large
 * blocks (tide_host_alloc). Peak usage is tracked so benchmarks can report it. */
#ifndef TIDE_MEMORY_H
#define TIDE_MEMORY_H
#include "tide/export.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tide_ctx;

/* ---- device pool ----------------------------------------------------------------------- */

/** Allocate @p bytes of device memory on the context's device and stream from its pool.
 *  Returns TIDE_E_NODEVICE on a CPU context or a build without CUDA, TIDE_E_NOMEM when the
 *  device (or the context's memory cap) is full. */
TIDE_API int tide_device_alloc(struct tide_ctx *ctx, size_t bytes, void **ptr);

/** Return memory taken with tide_device_alloc to the pool (stream-ordered). NULL is a no-op. */
TIDE_API void tide_device_free(struct tide_ctx *ctx, void *ptr);

/** Hand device allocation @p ptr, made with tide_device_alloc on @p from, to @p to: both
 *  share the device pool (a context and its helper, ctx.h), and @p from's stream must have
 *  been synchronised. @p to then accounts for it and frees it. */
TIDE_API void tide_device_adopt(struct tide_ctx *to, struct tide_ctx *from, void *ptr);

/** Bytes currently allocated from the pool and the peak since the last reset. */
TIDE_API void tide_device_usage(const struct tide_ctx *ctx, size_t *current, size_t *peak);

/** Start a new peak measurement (peak = current). */
TIDE_API void tide_device_reset_peak(struct tide_ctx *ctx);

/** Copy @p bytes between host and device (or within either) on the context's stream.
 *  @p dst_on_device and @p src_on_device say where each pointer lives. A copy that reads or
 *  writes host memory is complete on return; a device-to-device copy is stream-ordered (the
 *  context's later work, and any later copy to the host, see its result). */
TIDE_API int tide_memcpy(struct tide_ctx *ctx, void *dst, int dst_on_device, const void *src,
                         int src_on_device, size_t bytes);

/** Start copying @p bytes from device @p src to host @p dst after the work queued so far on
 *  the context's stream. When @p dst is page-locked (a host image plane after its first
 *  device copy, see image.h) the copy runs on a side stream, overlapping the context's later
 *  work, and is complete only after tide_download_wait; the device memory must stay
 *  allocated until then. Otherwise it is complete on return (as tide_memcpy). */
TIDE_API int tide_download_start(struct tide_ctx *ctx, void *dst, const void *src, size_t bytes);

/** Wait until the copies started with tide_download_start are complete (no-op without any). */
TIDE_API int tide_download_wait(struct tide_ctx *ctx);

/** Set @p bytes at @p ptr to zero (on the device when @p on_device: stream-ordered, like a
 *  device-to-device copy). */
TIDE_API int tide_memzero(struct tide_ctx *ctx, void *ptr, int on_device, size_t bytes);

/** @p bytes of host memory for a large working buffer, uninitialised (NULL when out of
 *  memory). Buffers of 4 MiB or more come from the process-wide block cache that image planes
 *  use (image.h), so a warm process touches no fresh page, and are page-locked on their first
 *  copy to or from a device. Free with tide_host_free. */
TIDE_API void *tide_host_alloc(size_t bytes);

/** Free memory from tide_host_alloc (NULL is a no-op). */
TIDE_API void tide_host_free(void *ptr);

/** Page-locked host memory for fast transfers (plain malloc on a CPU context). */
TIDE_API int tide_host_pinned_alloc(struct tide_ctx *ctx, size_t bytes, void **ptr);
/** Free memory from tide_host_pinned_alloc. */
TIDE_API void tide_host_pinned_free(struct tide_ctx *ctx, void *ptr);

/** Wait until all work queued on the context's stream has finished (no-op on the CPU). */
TIDE_API int tide_sync(struct tide_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
