/* detect_kernels.h — the state detection passes between its steps and the kernels its
 * algorithm (detect.c) needs from a backend (detect_*_cpu.c, detect_*_cuda.cu).
 *
 * Every array of tide_det_work lives where the context computes (host or device); the
 * backends allocate them and tide_det_work_free_{cpu,cuda} releases them. Per-pixel labels
 * are int32 (frames < 2^31 pixels, checked in detect.c). */
#ifndef TIDE_DETECT_KERNELS_H
#define TIDE_DETECT_KERNELS_H
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/detect.h"
#include "tide/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most basis stamps a PSF model may have (1 mean + 16 eigen-PSFs, psf.h), and most polynomial
 * terms per coefficient (degree 6). */
#define TIDE_DET_MAX_BASIS 17
#define TIDE_DET_MAX_COEF 28

/** What the per-pixel S/N combination needs besides the images. */
typedef struct tide_det_filter {
    int nbasis, ncoef, degree;
    double coef[TIDE_DET_MAX_BASIS * TIDE_DET_MAX_COEF];  /**< coef[b*ncoef+t] */
    double gram[TIDE_DET_MAX_BASIS * TIDE_DET_MAX_BASIS]; /**< <B_a, B_b> */
    int64_t width, height; /**< frame the polynomial's u, v are normalised to */
    uint16_t nodata_bits;  /**< mask bits that make S/N NaN */
} tide_det_filter;

/** Per-source measurement settings (passed by value to kernels). */
typedef struct tide_det_mparams {
    int64_t width, height;
    double fwhm_corner[4]; /**< PSF FWHM at (0,0), (W-1,0), (0,H-1), (W-1,H-1) */
    double saturation, gain;
    uint16_t bad_bits;
    int niter;
    double eps;
} tide_det_mparams;

/** Output columns of the measurement, one element per source (struct of arrays). */
enum {
    TIDE_DET_X = 0,
    TIDE_DET_Y,
    TIDE_DET_XWIN,
    TIDE_DET_YWIN,
    TIDE_DET_ERRX_WIN,
    TIDE_DET_ERRY_WIN,
    TIDE_DET_X2,
    TIDE_DET_Y2,
    TIDE_DET_XY,
    TIDE_DET_A,
    TIDE_DET_B,
    TIDE_DET_THETA,
    TIDE_DET_FWHM,
    TIDE_DET_PEAK,
    TIDE_DET_SNR,
    TIDE_DET_FLUX_ISO,
    TIDE_DET_FLUXERR_ISO,
    TIDE_DET_NF64
};

typedef struct tide_det_work {
    int64_t width, height, npix;
    /* labelling */
    int32_t *label; /**< npix: parent index or -1 (after minarea) */
    int64_t nparent;
    int64_t *par_area; /**< nparent */
    int32_t *par_bbox; /**< nparent * 4: x0, y0, x1, y1 (inclusive) */
    float *par_peak;   /**< nparent: peak S/N */
    int64_t *par_off;  /**< nparent + 1: offsets into the pixel lists */
    int32_t *pix_idx;  /**< total on-pixels: flat pixel index, raster order per parent */
    float *pix_val;    /**< total on-pixels: S/N */
    int64_t npixon;
    /* deblending */
    int64_t *scr_off; /**< nparent + 1: byte offsets of each parent's scratch */
    unsigned char *scratch;
    int32_t *pix_local;  /**< total on-pixels: child index inside the parent */
    int32_t *par_nchild; /**< nparent */
    int32_t *par_flags;  /**< nparent: DEBLENDED / DEBLEND_LIMIT */
    int64_t *child_off;  /**< nparent + 1: first source row of each parent */
    int64_t nsrc;
    int32_t *seg;        /**< npix: source row or -1 */
    int32_t *src_bbox;   /**< nsrc * 4 */
    int64_t *src_parent; /**< nsrc */
    /* measurements */
    double *f64;    /**< TIDE_DET_NF64 * nsrc, column-major: f64[c * nsrc + i] */
    int64_t *i64;   /**< 3 * nsrc: ISOAREA, XPEAK, YPEAK */
    int32_t *flags; /**< nsrc */
} tide_det_work;

/* ---- kernels: CPU twins ----------------------------------------------------------------- */

/** snr = combination of the nbasis correlations R[b] (see detect.h) with @p rms. */
int tide_det_snr_cpu(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                     const tide_image *R, const tide_det_filter *f, tide_image *snr);
/** Streamed form of tide_det_snr, one basis at a time (so one correlation image exists at a
 *  time): F (W*H doubles, row-major, width W, where the context computes) = sum over the bases
 *  given so far of c_b * R_b, in the order b = 0, 1, ... (b == 0 starts the sum from 0.0);
 *  the same double sum tide_det_snr forms, so the results are bitwise equal. */
int tide_det_snr_accum_cpu(tide_ctx *ctx, const tide_image *Rb, int b, const tide_det_filter *f,
                           double *F);
/** snr = F / (rms sqrt(E)) (or NaN) from the numerator of tide_det_snr_accum. */
int tide_det_snr_finish_cpu(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                            const double *F, const tide_det_filter *f, tide_image *snr);
/** Label pixels with snr >= thresh (8-connected), drop parents < minarea, fill parent
 *  arrays and pixel lists of @p w. */
int tide_det_label_cpu(tide_ctx *ctx, const tide_image *snr, double thresh, int64_t minarea,
                       tide_det_work *w);
/** Deblend every parent; fill child counts, the source arrays and the seg map. */
int tide_det_deblend_cpu(tide_ctx *ctx, tide_det_work *w, double thresh, int nthresh,
                         double mincont, int64_t minarea, int limit);
/** Measure every source. */
int tide_det_measure_cpu(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                         const tide_image *snr, const tide_det_mparams *mp, tide_det_work *w);
/** Release the work arrays. */
void tide_det_work_free_cpu(tide_ctx *ctx, tide_det_work *w);

/** How the CUDA backend splits deblending between the GPU and the host. One GPU thread walks a
 *  parent's pixels nthresh times with dependent memory accesses: measured on an H200, ~30
 *  microseconds per pixel, so a parent of a few hundred pixels kept the whole kernel waiting
 *  for milliseconds, while a host core does the same parent ~50x faster (~0.5 us per pixel).
 *  The parents of at least TIDE_DET_HOST_DEBLEND_AREA pixels therefore go to the host (in
 *  parallel over its cores, at the same time as the GPU does the others), largest first, as
 *  long as the host's share stays below TIDE_DET_HOST_DEBLEND_PIXELS pixels (a dense field's
 *  many mid-sized parents stay on the GPU then); parents of TIDE_DET_HOST_DEBLEND_ALWAYS
 *  pixels or more always go to the host. Same function, same results
 *  (detect_deblend_math.h). */
#define TIDE_DET_HOST_DEBLEND_AREA 48
#define TIDE_DET_HOST_DEBLEND_PIXELS 400000
#define TIDE_DET_HOST_DEBLEND_ALWAYS 1024

/** The smallest area the host takes among @p np parents of areas @p area:
 *  TIDE_DET_HOST_DEBLEND_AREA, raised so that the host's parents, largest first, hold at most
 *  TIDE_DET_HOST_DEBLEND_PIXELS pixels (parents of equal area go to the same side), but never
 *  above TIDE_DET_HOST_DEBLEND_ALWAYS. Linear in @p np. */
int64_t tide_det_deblend_host_area(const int64_t *area, int64_t np);

/** Deblend @p nbig parents on the host, in parallel over ctx->threads: parent b has
 *  @p area[b] pixels at offset @p off[b] of the packed arrays @p pidx / @p pval, peak S/N
 *  @p peak[b]; its child index per pixel goes to @p local (same packing), its child count to
 *  @p nchild[b] and its flags to @p flags[b]. */
int tide_det_deblend_host_batch(tide_ctx *ctx, int64_t nbig, const int64_t *area,
                                const int64_t *off, const int32_t *pidx, const float *pval,
                                const float *peak, int64_t width, double thresh, int nthresh,
                                double mincont, int64_t minarea, int limit, int32_t *local,
                                int32_t *nchild, int32_t *flags);

#ifdef TIDE_HAVE_CUDA
int tide_det_snr_cuda(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                      const tide_image *R, const tide_det_filter *f, tide_image *snr);
int tide_det_snr_accum_cuda(tide_ctx *ctx, const tide_image *Rb, int b, const tide_det_filter *f,
                            double *F);
int tide_det_snr_finish_cuda(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                             const double *F, const tide_det_filter *f, tide_image *snr);
int tide_det_label_cuda(tide_ctx *ctx, const tide_image *snr, double thresh, int64_t minarea,
                        tide_det_work *w);
int tide_det_deblend_cuda(tide_ctx *ctx, tide_det_work *w, double thresh, int nthresh,
                          double mincont, int64_t minarea, int limit);
int tide_det_measure_cuda(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                          const tide_image *snr, const tide_det_mparams *mp, tide_det_work *w);
void tide_det_work_free_cuda(tide_ctx *ctx, tide_det_work *w);
#endif

#ifdef __cplusplus
}
#endif
#endif
