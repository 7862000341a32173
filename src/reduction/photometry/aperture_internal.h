/* aperture_internal.h — what the photometry stages share: moving per-source arrays to where
 * the context computes (one batch per array) and viewing images as kernel planes. */
#ifndef TIDE_APERTURE_INTERNAL_H
#define TIDE_APERTURE_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "aperture_kernels.h"
#include "tide/ctx.h"
#include "tide/image.h"
#include "tide/photometry.h"

#define TIDE_PHOT_MAXBUF 40

/** Buffers of one photometry call. On a CPU context inputs are used in place and outputs are
 *  written straight into the caller's arrays (scratch when the caller passed NULL); on CUDA
 *  every array is a device allocation from the context's pool. */
typedef struct tide_phot_mem {
    tide_ctx *ctx;
    int dev;
    int nbuf;
    void *buf[TIDE_PHOT_MAXBUF];
    int buf_dev[TIDE_PHOT_MAXBUF];
    tide_image img[2]; /* device copies of host images */
    int nimg;
} tide_phot_mem;

void tide_phot_mem_init(tide_phot_mem *m, tide_ctx *ctx);
void tide_phot_mem_free(tide_phot_mem *m);

/** An input array of @p bytes for the kernels (NULL stays NULL). */
int tide_phot_mem_in(tide_phot_mem *m, const void *host, size_t bytes, const void **kptr);

/** A kernel-written array of @p bytes, zeroed. On the CPU it is @p host_target itself when
 *  given. */
int tide_phot_mem_out(tide_phot_mem *m, void *host_target, size_t bytes, void **kptr);

/** Bring a kernel-written array back into @p host_target (no-op when it is the same array
 *  or host_target is NULL). */
int tide_phot_mem_fetch(tide_phot_mem *m, void *host_target, const void *kptr, size_t bytes);

/** Kernel planes of @p sub with the variance of @p var (or sub->var, or none). Host images
 *  on a CUDA context are uploaded (kept in m until tide_phot_mem_free); device images on a
 *  CPU context are refused. @p who names the caller in errors. */
int tide_phot_planes(tide_phot_mem *m, const char *who, const tide_image *sub,
                     const tide_image *var, uint16_t mask_bits, tide_ap_planes *pl);

/** Check that n positions are given (and n >= 0). */
int tide_phot_check_common(const char *who, tide_ctx *ctx, const tide_image *sub, int64_t n,
                           const double *x, const double *y);

/** Check aperture options (ncombine, annulus radii and size bound, clip sigma). */
int tide_phot_check_aper(const char *who, const tide_aper_params *p);

#endif
