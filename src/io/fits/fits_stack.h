/* fits_stack.h — what the stack reader (fits_read_stack.c) needs of the single-image reader
 * and of the device: where each spec's device read should go, and the cuFile read of a plain
 * data unit (fits_cufile_cudaonly.c, fits_plain_cuda.cu). Not public. */
#ifndef TIDE_FITS_STACK_H
#define TIDE_FITS_STACK_H
#include <stdint.h>

#include "fits_fast_math.h"
#include "tide/ctx.h"
#include "tide/header.h"
#include "tide/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A plain data unit whose bytes the device can read and convert itself. */
typedef struct tide_fits_plain_unit {
    char path[1025];       /**< the file (no selector) */
    int hdu;               /**< 0-based HDU, for messages */
    int64_t width, height; /**< NAXIS1, NAXIS2 */
    int64_t offset;        /**< byte offset of the data unit in the file */
    int bitpix;            /**< 8, 16, 32 or -32 (unscaled) */
    tide_fits_iconv ic;    /**< the integers' scaling and BLANK */
} tide_fits_plain_unit;

/** Where a device read of a spec goes (tide_fits_device_route). */
enum {
    TIDE_ROUTE_HOST = 0,   /**< decode on the host, then upload */
    TIDE_ROUTE_DECODE = 1, /**< tide_fits_read_image_at(TIDE_DEVICE): the GPU's tile decoder
                                (RICE_1, GZIP_1, GZIP_2) */
    TIDE_ROUTE_PLAIN = 2   /**< a plain data unit (*u), which cuFile may read */
};

/** Open @p spec as tide_fits_read_image_at would and say how its device read should go:
 *  TIDE_ROUTE_* (>= 0), or the error that read would give. For TIDE_ROUTE_PLAIN *u is filled
 *  and, when @p hdr is non-NULL, the header read into it (initialised either way). */
int tide_fits_device_route(const char *spec, tide_fits_plain_unit *u, tide_header *hdr);

#ifdef TIDE_HAVE_CUDA
/** TIDE_CUFILE from the environment: 0 (off), else 1 ("1" or "auto", the default). */
int tide_fits_cufile_wanted(void);

/** Whether cuFile can be used at all in this process: libcufile.so.0 loaded and its driver
 *  opened, once (on first call); when not, why goes to the context's debug log. */
int tide_fits_cufile_usable(tide_ctx *ctx);

/** Whether cuFile refused a file on the file system of @p path earlier in this process
 *  (tide_fits_cufile_read remembers each refusal's file system): its plain units then go
 *  by the pinned path from the start. */
int tide_fits_cufile_refused(const char *path);

/** Remember that cuFile refused a file on the file system of @p path. */
void tide_fits_cufile_refuse(const char *path);

/** Read the plain unit @p u by cuFile into a new device image @p im (pixels and mask) and
 *  convert it there: 0; 1 when cuFile is not usable for it (nothing allocated; the reason on
 *  the context's debug log); or a negative TIDE_E_* (the device failed). Thread: the
 *  context's. */
int tide_fits_cufile_read(tide_ctx *ctx, const tide_fits_plain_unit *u, tide_image *im);

/** Convert the raw big-endian data unit @p d_raw of @p u (device memory) into @p d_pix and
 *  @p d_mask as tide_fits_fast_read_pixels does on the host, on the context's stream. */
int tide_fits_plain_convert_cuda(tide_ctx *ctx, const void *d_raw, const tide_fits_plain_unit *u,
                                 float *d_pix, uint16_t *d_mask);
#endif

#ifdef __cplusplus
}
#endif
#endif
