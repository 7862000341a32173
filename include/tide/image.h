/* image.h — tide_image: float32 pixels, a uint16 mask of named bits, optional variance.
 *
 * Pixels are stored row-major, x fastest; pixel (x, y) is at pix[y * stride + x]. Inside
 * tide coordinates are 0-based pixel centres; catalogs and messages use FITS 1-based
 * (see tide_pix_to_fits in coords.h). An image lives either on the host or on the device
 * of the context that allocated it. */
#ifndef TIDE_IMAGE_H
#define TIDE_IMAGE_H
#include "tide/export.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tide_ctx;

/** Mask bits. A pixel with any bit set is excluded from statistics unless a stage says
 *  otherwise. Stages own their bits; new bits are added here so every bit has one meaning. */
enum {
    TIDE_MASK_NODATA = 1 << 0,    /**< BLANK, NaN or Inf in the input, or outside coverage */
    TIDE_MASK_SATURATED = 1 << 1, /**< at or above the saturation level */
    TIDE_MASK_BAD = 1 << 2,       /**< bad pixel or column from a bad-pixel mask */
    TIDE_MASK_HOT = 1 << 3,       /**< isolated hot pixel */
    TIDE_MASK_COLD = 1 << 4,      /**< isolated cold pixel */
    TIDE_MASK_COSMIC = 1 << 5,    /**< cosmic-ray hit */
    TIDE_MASK_BLEED = 1 << 6,     /**< bleed trail of a saturated star */
    TIDE_MASK_EDGE = 1 << 7,      /**< too close to the frame edge for the stage at hand */
    TIDE_MASK_INTERP = 1 << 8,    /**< value was interpolated (inpainted) */
    TIDE_MASK_USER = 1 << 9       /**< set by the user's own mask */
};

/** Where an image's buffers live. */
typedef enum { TIDE_HOST = 0, TIDE_DEVICE = 1 } tide_location;

/** Optional planes requested at allocation; TIDE_IMAGE_UNINIT: leave the planes' contents
 *  undefined instead of zeroing them (for callers that write every pixel), and with it
 *  TIDE_IMAGE_ZERO_MASK: all but the mask plane, which is zeroed (for readers that only set
 *  the bits of flagged pixels). */
enum { TIDE_IMAGE_MASK = 1, TIDE_IMAGE_VAR = 2, TIDE_IMAGE_UNINIT = 4, TIDE_IMAGE_ZERO_MASK = 8 };

/** A 2-D float32 image with optional mask and variance planes. */
typedef struct tide_image {
    int64_t width;          /**< pixels per row (NAXIS1) */
    int64_t height;         /**< rows (NAXIS2) */
    int64_t stride;         /**< elements between rows (>= width) */
    float *pix;             /**< pixel values */
    uint16_t *mask;         /**< mask bits or NULL */
    float *var;             /**< variance or NULL */
    tide_location location; /**< host or device */
    int owns;               /**< 1 when tide_image_free must release the buffers */
} tide_image;

/** Allocate a zeroed width×height image (stride = width) on the host or on the context's
 *  device, with the planes named in @p planes (TIDE_IMAGE_MASK | TIDE_IMAGE_VAR, plus
 *  TIDE_IMAGE_UNINIT to skip the zeroing). Host planes of 4 MiB or more come from a
 *  process-wide cache of freed planes (TIDE_HOST_CACHE_MB in the environment caps the idle
 *  memory it keeps [4096]; 0 turns it off), so a warm process touches no fresh page; on a CUDA
 *  build they are page-locked on their first copy to or from the device. */
TIDE_API int tide_image_alloc(struct tide_ctx *ctx, tide_image *im, int64_t width, int64_t height,
                              tide_location where, int planes);

/** Release an image's buffers (if it owns them) and zero the struct. */
TIDE_API void tide_image_free(struct tide_ctx *ctx, tide_image *im);

/** Allocate @p dst like @p src (same planes and size) at @p where and copy every plane. */
TIDE_API int tide_image_clone(struct tide_ctx *ctx, tide_image *dst, const tide_image *src,
                              tide_location where);

/** Copy the planes both images have; sizes must match, locations may differ. */
TIDE_API int tide_image_copy(struct tide_ctx *ctx, tide_image *dst, const tide_image *src);

/** Start copying the planes both images have from device image @p src into host image @p dst
 *  (same size): with page-locked host planes the copies overlap the context's later work and
 *  are complete after tide_download_wait (memory.h), before which @p src must not be freed;
 *  otherwise (or for any other pair of locations) the copy is complete on return. */
TIDE_API int tide_image_download_start(struct tide_ctx *ctx, tide_image *dst,
                                       const tide_image *src);

/** Number of pixels (width × height). */
static inline int64_t tide_image_npix(const tide_image *im) {
    return im->width * im->height;
}

#ifdef __cplusplus
}
#endif
#endif
