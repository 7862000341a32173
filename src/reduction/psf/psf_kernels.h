/* psf_kernels.h — the batched per-star kernels of the PSF stage, CPU and CUDA twins
 * (DESIGN §3). Images and arrays are host memory for the _cpu twins and device memory for the
 * _cuda twins; one call handles every star (one GPU block per star). */
#ifndef TIDE_PSF_KERNELS_H
#define TIDE_PSF_KERNELS_H
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What the kernels need to know besides the images. */
typedef struct psf_kparams {
    int half;           /**< stamp half-side h (side 2h + 1) */
    int cwin;           /**< half-side of the centroid box around the rounded start */
    double inv2s2;      /**< centroid window 1 / (2 sigma^2) */
    double max_shift;   /**< centroid may move at most this far from the start, pixels */
    double ap_r2;       /**< S/N aperture radius squared, pixels^2 */
    double saturation;  /**< reject at or above this value; 0 = no test */
    double snr_floor;   /**< a quick S/N at the start position below this: rejected (SNR)
                             before the centroid iterations (needs the rms map); 0 = off */
    uint16_t mask_bits; /**< reject a star with one of these bits in its stamp */
} psf_kparams;

/** Columns of the per-star measurement array (n * PSF_NMEAS doubles, star-major). */
enum {
    PSF_M_XC = 0, /**< windowed centroid x (0-based) */
    PSF_M_YC,     /**< windowed centroid y */
    PSF_M_FLUX,   /**< flux in the S/N aperture */
    PSF_M_SNR,    /**< flux / its noise */
    PSF_M_PEAK,   /**< brightest pixel of the stamp */
    PSF_M_NOISE,  /**< per-pixel noise sigma (aperture mean of rms^2, square-rooted) */
    PSF_M_SUM,    /**< sum of the stamp's pixels */
    PSF_M_FWHM,   /**< Gaussian-equivalent FWHM from the windowed second moment */
    PSF_NMEAS
};

/** Measure n candidates at (x, y): centroid, flux, S/N, peak, noise, and the rejection bits
 *  TIDE_PSF_REJ_EDGE / MASKED / SATURATED / CENTROID / SNR in flags[i] (0 = usable).
 *  @p rms may have pix NULL (no noise map: stamp border RMS instead). */
int psf_measure_cpu(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                    const psf_kparams *kp, int64_t n, const double *x, const double *y,
                    double *meas, int32_t *flags);

/** Cut n stamps of side 2h+1 resampled (Lanczos-3) so (xc, yc) is the central pixel, and
 *  divide each by its sum; sums[i] = the sum before (stamp left as resampled when <= 0).
 *  The caller guarantees every star passed psf_measure without EDGE. */
int psf_extract_cpu(tide_ctx *ctx, const tide_image *sub, const psf_kparams *kp, int64_t n,
                    const double *xc, const double *yc, float *stamps, double *sums);

#ifdef TIDE_HAVE_CUDA
int psf_measure_cuda(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                     const psf_kparams *kp, int64_t n, const double *x, const double *y,
                     double *meas, int32_t *flags);
int psf_extract_cuda(tide_ctx *ctx, const tide_image *sub, const psf_kparams *kp, int64_t n,
                     const double *xc, const double *yc, float *stamps, double *sums);
#endif

#ifdef __cplusplus
}
#endif
#endif
