/* image.c — allocation and copies of tide_image planes on the host or the device. */
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "checked.h"
#include "tide/ctx.h"
#include "tide/image.h"
#include "tide/memory.h"
#include "tide/status.h"

/* Allocate one plane of @p bytes where the image lives, zeroed when @p zero. Host planes go
 * through the block cache (host_blocks.c). */
static int plane_alloc(tide_ctx *ctx, tide_location where, size_t bytes, int zero, void **p) {
    if (where == TIDE_HOST) {
        *p = tide_host_block_alloc(bytes, zero);
        return *p ? TIDE_OK : tide_error(TIDE_E_NOMEM, "cannot allocate %zu bytes", bytes);
    }
    int st = tide_device_alloc(ctx, bytes, p);
    if (st || !zero)
        return st;
    return tide_memzero(ctx, *p, 1, bytes);
}

static void plane_free(tide_ctx *ctx, tide_location where, void *p) {
    if (where == TIDE_HOST) {
        if (!tide_host_block_free(p))
            free(p);
    } else {
        tide_device_free(ctx, p);
    }
}

int tide_image_alloc(tide_ctx *ctx, tide_image *im, int64_t width, int64_t height,
                     tide_location where, int planes) {
    memset(im, 0, sizeof *im);
    if (width <= 0 || height <= 0)
        return tide_error(TIDE_E_INVAL, "image size %lld x %lld is not positive", (long long)width,
                          (long long)height);
    size_t bytes4;
    if (tide_size_block(width, height, 1, sizeof(float), &bytes4))
        return tide_error(TIDE_E_RANGE, "image size %lld x %lld overflows the address space",
                          (long long)width, (long long)height);
    im->width = width;
    im->height = height;
    im->stride = width;
    im->location = where;
    im->owns = 1;
    size_t n = bytes4 / sizeof(float);
    void *p = NULL;
    const int zero = !(planes & TIDE_IMAGE_UNINIT);
    int st = plane_alloc(ctx, where, n * sizeof(float), zero, &p);
    im->pix = p;
    if (!st && (planes & TIDE_IMAGE_MASK)) {
        st = plane_alloc(ctx, where, n * sizeof(uint16_t), zero || (planes & TIDE_IMAGE_ZERO_MASK),
                         &p);
        im->mask = p;
    }
    if (!st && (planes & TIDE_IMAGE_VAR)) {
        st = plane_alloc(ctx, where, n * sizeof(float), zero, &p);
        im->var = p;
    }
    if (st)
        tide_image_free(ctx, im);
    return st;
}

void tide_image_free(tide_ctx *ctx, tide_image *im) {
    if (im->owns) {
        plane_free(ctx, im->location, im->pix);
        plane_free(ctx, im->location, im->mask);
        plane_free(ctx, im->location, im->var);
    }
    memset(im, 0, sizeof *im);
}

/* Copy one plane row by row when strides differ, in one call when both are contiguous. */
static int plane_copy(tide_ctx *ctx, void *dst, int64_t dstride, int dst_dev, const void *src,
                      int64_t sstride, int src_dev, int64_t w, int64_t h, size_t elem) {
    if (dstride == w && sstride == w)
        return tide_memcpy(ctx, dst, dst_dev, src, src_dev, (size_t)(w * h) * elem);
    for (int64_t y = 0; y < h; y++) {
        int st = tide_memcpy(ctx, (char *)dst + (size_t)(y * dstride) * elem, dst_dev,
                             (const char *)src + (size_t)(y * sstride) * elem, src_dev,
                             (size_t)w * elem);
        if (st)
            return st;
    }
    return TIDE_OK;
}

int tide_image_copy(tide_ctx *ctx, tide_image *dst, const tide_image *src) {
    if (dst->width != src->width || dst->height != src->height)
        return tide_error(TIDE_E_INVAL, "image copy between %lldx%lld and %lldx%lld",
                          (long long)src->width, (long long)src->height, (long long)dst->width,
                          (long long)dst->height);
    int dd = dst->location == TIDE_DEVICE, sd = src->location == TIDE_DEVICE;
    int st = plane_copy(ctx, dst->pix, dst->stride, dd, src->pix, src->stride, sd, src->width,
                        src->height, sizeof(float));
    if (!st && dst->mask && src->mask)
        st = plane_copy(ctx, dst->mask, dst->stride, dd, src->mask, src->stride, sd, src->width,
                        src->height, sizeof(uint16_t));
    if (!st && dst->var && src->var)
        st = plane_copy(ctx, dst->var, dst->stride, dd, src->var, src->stride, sd, src->width,
                        src->height, sizeof(float));
    return st;
}

int tide_image_clone(tide_ctx *ctx, tide_image *dst, const tide_image *src, tide_location where) {
    /* every plane is copied whole, so none needs zeroing first */
    int planes =
        (src->mask ? TIDE_IMAGE_MASK : 0) | (src->var ? TIDE_IMAGE_VAR : 0) | TIDE_IMAGE_UNINIT;
    int st = tide_image_alloc(ctx, dst, src->width, src->height, where, planes);
    if (!st)
        st = tide_image_copy(ctx, dst, src);
    if (st)
        tide_image_free(ctx, dst);
    return st;
}

int tide_image_download_start(tide_ctx *ctx, tide_image *dst, const tide_image *src) {
    if (src->location != TIDE_DEVICE || dst->location != TIDE_HOST)
        return tide_image_copy(ctx, dst, src);
    if (dst->width != src->width || dst->height != src->height)
        return tide_image_copy(ctx, dst, src); /* which reports the mismatch */
    const int contiguous = dst->stride == dst->width && src->stride == src->width;
    const size_t n = (size_t)(src->width * src->height);
    int st = contiguous ? tide_download_start(ctx, dst->pix, src->pix, n * sizeof(float))
                        : tide_image_copy(ctx, dst, src);
    if (!st && contiguous && dst->mask && src->mask)
        st = tide_download_start(ctx, dst->mask, src->mask, n * sizeof(uint16_t));
    if (!st && contiguous && dst->var && src->var)
        st = tide_download_start(ctx, dst->var, src->var, n * sizeof(float));
    return st;
}
