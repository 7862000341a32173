/* png.h — greyscale PNG pictures of images and stamps, for people (libpng).
 *
 * Scientists look at a difference image, a kernel or a candidate's stamp long before they read
 * a table; these functions turn float images into 8-bit greyscale PNGs with the stretches
 * astronomers expect:
 *
 *  - limits: IRAF's zscale (Tody's DISPLAY task, as astropy's ZScaleInterval): a sample of at
 *    most 1000 finite pixels is sorted, a straight line is fitted to value against rank with
 *    iterative 2.5σ rejection (at most 5 passes), its slope is divided by the contrast [0.25]
 *    and the limits are median ∓ slope × rank distance to the ends, clamped to the sample's
 *    range; or min/max; or percentiles;
 *  - mapping: linear between the limits, or asinh (Lupton et al. 1999, AJ 118, 1406):
 *    v = asinh((x − lo)/s) / asinh((hi − lo)/s) with s = softening × (hi − lo), which shows
 *    faint wings and bright cores in one picture; with symmetric limits (lo = −hi) it is
 *    centred on zero, v = 1/2 + asinh(x/s) / (2 asinh(hi/s)).
 *
 * NaN pixels are drawn black. Rows are written top to bottom with FITS row 1 at the bottom,
 * as DS9 shows a frame. Every file is written atomically (staged in a private
 * directory beside the target, renamed when complete, removed on failure: outfile.h). Host memory
 * only. */
#ifndef TIDE_PNG_H
#define TIDE_PNG_H
#include "tide/export.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** How pixel values become grey levels. */
typedef enum {
    TIDE_STRETCH_LINEAR = 0, /**< linear between lo and hi */
    TIDE_STRETCH_ASINH = 1   /**< asinh between lo and hi (see header comment) */
} tide_stretch_kind;

/** How the limits are chosen when not given. */
typedef enum {
    TIDE_LIMITS_ZSCALE = 0,       /**< IRAF zscale (see header comment) */
    TIDE_LIMITS_MINMAX = 1,       /**< smallest and largest finite value */
    TIDE_LIMITS_SYMMETRIC = 2,    /**< ±max(|zscale limits|): zero is mid-grey (differences) */
    TIDE_LIMITS_PERCENTILE = 3,   /**< the lo_pct and hi_pct percentiles */
    TIDE_LIMITS_SYMMETRIC_PCT = 4 /**< ±(the hi_pct percentile of |value|): zero mid-grey,
                                       bright lobes of either sign not clipped (stamps) */
} tide_limits_kind;

/** A stretch. tide_png_stretch_default gives the values in brackets. */
typedef struct tide_png_stretch {
    tide_stretch_kind kind;  /**< mapping [LINEAR] */
    tide_limits_kind limits; /**< limit rule when lo/hi are NaN [ZSCALE] */
    double lo, hi;           /**< explicit limits; NaN = from the rule [NaN, NaN] */
    double contrast;         /**< zscale contrast [0.25] */
    double lo_pct, hi_pct;   /**< percentiles for TIDE_LIMITS_PERCENTILE [0.5, 99.5] */
    double softening;        /**< asinh softening, fraction of hi − lo [0.05] */
    int scale;               /**< integer magnification (pixel replication) [1] */
} tide_png_stretch;

/** Fill @p s with the defaults in brackets. */
TIDE_API void tide_png_stretch_default(tide_png_stretch *s);

/** Limits of a w × h image (row stride @p stride elements) by @p rule (contrast, lo_pct and
 *  hi_pct from @p s). An image without a finite pixel gives lo = 0, hi = 1; equal limits are
 *  widened to lo − 0.5, lo + 0.5. */
TIDE_API void tide_png_limits(const float *pix, int64_t w, int64_t h, int64_t stride,
                              const tide_png_stretch *s, double *lo, double *hi);

/** The candidate stamps' stretch, shared by tide diff's candidates.png and the review page
 *  (so both show the same stamps): asinh with softening 0.1 between symmetric limits from the
 *  99th percentile of |value| (zero mid-grey, lobes of either sign not clipped), scale 1. */
TIDE_API void tide_png_stamp_stretch(tide_png_stretch *s);

/** tide_png_write_image into memory: the PNG file's bytes into *out (malloc'd; free() it) and
 *  their count into *n. Errors as tide_png_write_image (TIDE_E_IO: the memory stream). */
TIDE_API int tide_png_encode_image(const float *pix, int64_t w, int64_t h, int64_t stride,
                                   const tide_png_stretch *s, unsigned char **out, size_t *n);

/** Write a w × h float image as an 8-bit greyscale PNG at @p path (atomic).
 *  Errors: TIDE_E_INVAL (no pixels, sizes), TIDE_E_IO (cannot create, write or rename; the
 *  detail names the path), TIDE_E_NOMEM. */
TIDE_API int tide_png_write_image(const char *path, const float *pix, int64_t w, int64_t h,
                                  int64_t stride, const tide_png_stretch *s);

/** Write a mosaic of @p n rows of @p ncol tiles, each tile a stamp × stamp float image
 *  (tiles[(i * ncol + j)] points to row-major stamp × stamp pixels; NULL = an empty tile).
 *  Every row shares the limits of its first tile (so a candidate's stamp, model and residual
 *  are drawn on one scale), taken by @p s's rule unless s->lo/hi are set. Tiles are magnified
 *  by s->scale and separated by a 2-pixel mid-grey gap. At most 4096 rows. */
TIDE_API int tide_png_write_mosaic(const char *path, int64_t n, int ncol, int stamp,
                                   const float *const *tiles, const tide_png_stretch *s);

#ifdef __cplusplus
}
#endif
#endif
