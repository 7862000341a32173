/* diff.h — the difference pipeline: a science frame and a template of the same sky in,
 * a PSF-matched difference image and fitted candidates out (DESIGN §1, issue 5).
 *
 * Stage order (tide_diff_run):
 *
 *   1. WCS        both frames' celestial WCS (wcs.h); a frame without one is an error naming
 *                 the file. The output grid is the template's pixel grid [default], the
 *                 science frame's or a north-up grid covering both. Frames whose footprints do
 *                 not overlap on that grid are refused before any work (TIDE_E_RANGE).
 *   2. prepare    per frame, on its own grid: cosmetics (cosmic rays, hot pixels, bleed trails
 *                 flagged in the mask: cosmetics.h); Source Extractor's mesh background and RMS
 *                 (background.h); saturation (the frame's level, see config) flagged;
 *                 background subtracted; variance = rms² + max(pix − bkg, 0)/gain (the
 *                 frame's gain, else sky only). The steps are tide reduce's (one frame
 *                 preparation). On CUDA the two frames' stages 2-3 run side by side,
 *                 the template's on a second thread with the context's helper (ctx.h), each
 *                 with half the CPU threads. A template on the output grid also gets the
 *                 subtraction's sky noise here (tide_subtract_sky_noise), off the
 *                 subtraction's path, and a prepared template keeps it for every exposure.
 *   3. FWHM       per frame: matched-filter detection with a Gaussian of fwhm_guess
 *                 (detect.h) and the median FWHM of the clean (FLAGS without saturation,
 *                 truncation, masked pixels, deblending), isolated sources of S/N >= 20; fewer
 *                 than 3 such sources: fwhm_guess. Converted to output-grid pixels with the
 *                 ratio of the two frames' pixel scales.
 *   4. reproject  the other frame onto the output grid (reproject.h; Lanczos-3, flux
 *                 conserved, variance and mask propagated; NaN and NODATA where no input
 *                 lands).
 *   5. subtract   Alard–Lupton PSF-matched subtraction (subtract.h): difference, variance and
 *                 mask, matched image, kernel.
 *   5b. noise      the variance plane scaled to the measured noise of PSF-sized sums
 *                 (calibrate_var): resampling and convolution correlate the noise, and
 *                 without this the S/N of the candidates is too high (on a simulated 2048²
 *                 pair, 12 false candidates per 10^6 px at S/N 5 instead of ~0).
 *   6. candidates positive and negative detections on the difference S/N map, merged into
 *                 dipoles (dipole.h), with the matched PSF's FWHM (the broader of the two);
 *                 those centred on masked pixels (reject_bits) are dropped.
 *   7. fits       stamps cut where the context computes, batched Levenberg–Marquardt dipole and
 *                 point-source fits (dipole.h) of the max_fit highest-S/N candidates. By
 *                 default the PSF dipole with the difference's PSF: the reference PSF of
 *                 tide_psf_build (psf.h) on the unconvolved frame on the output grid, or, with
 *                 too few PSF stars, a circular Gaussian of its FWHM. With the shape fixed, the
 *                 lobe positions of an overlapping dipole are far better constrained than with
 *                 the free Gaussian dipole, whose widths trade against the lobe separation.
 *
 * Memory plan. On a CUDA context each frame is uploaded once; background, variance,
 * reprojection, subtraction, detection, stamp cutting and fits run on the device; only the
 * outputs (difference, matched image, candidate rows, the few stamps drawn) come back. The
 * difference and matched image are copied back on a side stream while the candidates are
 * searched, into host planes from the block cache (image.h): in a warm process they are
 * page-locked memory reused from the previous run, so the copies run by DMA and touch no fresh
 * page. On the CPU the result takes the subtraction's images over instead of copying them.
 * Peak device memory (tide_diff_result) adds the helper's peak to the context's (an upper
 * bound: the two need not coincide).
 *
 * Threads. With the side-by-side stages two OpenMP teams share the cores, and libgomp's idle
 * threads, spinning 300,000 iterations by default, preempt the working ones: on the 16-core
 * H200 host single runs of the 4096² pair took 92-121 ms beside a median of ~60. A program
 * that runs the pipeline should start with GOMP_SPINCOUNT=10000 in its environment (libgomp
 * reads it when it is loaded); the `tide` command sets it for `tide diff` (src/cli/omp_spin.c).
 *
 * Candidate columns (tide_diff_result.cands; FITS 1-based pixel coordinates on the output
 * grid): X_IMAGE, Y_IMAGE, SNR, FLUX [diff units], KIND (TIDE_CAND_*), DIP_XPOS, DIP_YPOS,
 * DIP_XNEG, DIP_YNEG (lobe centres) [pixel], DIP_FLUX (flux of one lobe) [diff units],
 * DIP_XPOS_ERR, DIP_YPOS_ERR, DIP_XNEG_ERR, DIP_YNEG_ERR, DIP_FLUX_ERR, DIP_SIGMA1,
 * DIP_SIGMA2 [pixel] (Gaussian dipole only, else NaN), DIP_CHI2, DIP_NPIX, PS_X, PS_Y, PS_FLUX,
 * PS_FLUX_ERR, PS_CHI2, FIT_STATUS (TIDE_DIPOLE_*; -1 = not fitted), PS_STATUS, ALPHA_J2000,
 * DELTA_J2000 [deg]. */
#ifndef TIDE_DIFFPIPE_H
#define TIDE_DIFFPIPE_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/background.h"
#include "tide/config.h"
#include "tide/cosmetics.h"
#include "tide/ctx.h"
#include "tide/dipole.h"
#include "tide/header.h"
#include "tide/image.h"
#include "tide/reproject.h"
#include "tide/subtract.h"
#include "tide/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Which frame's pixel grid the difference is made on. */
typedef enum {
    TIDE_DIFF_GRID_TEMPLATE = 0, /**< the template's pixel grid (the science is resampled) */
    TIDE_DIFF_GRID_SCIENCE = 1,  /**< the science frame's grid (the template is resampled) */
    TIDE_DIFF_GRID_NORTHUP = 2   /**< a north-up TAN grid covering both at the finer scale
                                      (tide_reproject_northup; both are resampled) */
} tide_diff_grid;

/** Parameters of tide_diff_run; tide_diff_params_default gives the values in brackets. */
typedef struct tide_diff_params {
    tide_diff_grid grid;          /**< output grid [TEMPLATE] */
    double fwhm_sci, fwhm_tmpl;   /**< FWHMs in the frames' own pixels; <= 0: measured [0, 0] */
    double fwhm_guess;            /**< first-guess FWHM for the measurement, pixels [3.0] */
    double gain_sci, gain_tmpl;   /**< e-/ADU; <= 0: the frame's gain through @p config,
                                       else unknown: sky-only variance, no Poisson term in the
                                       cosmetics [0, 0] */
    double sat_sci, sat_tmpl;     /**< saturation levels, ADU; NaN: the frame's through @p
                                       config, else none [NaN, NaN] */
    const tide_config *config;    /**< instrument configuration through which each frame's gain,
                                       read noise and saturation are resolved, as by tide reduce
                                       (instrument.h: keyword map, camera defaults, overrides);
                                       read during the run, not kept. NULL: the built-in
                                       configuration (GAIN, RDNOISE, SATURATE) [NULL] */
    int cosmetics;                /**< 1: flag cosmic rays, hot/cold pixels, bad columns and bleed
                                       trails of both frames first (cosmetics.h) [1] */
    tide_cosmetics_params cos;    /**< their options (gain, read noise, saturation are each
                                       frame's, resolved as above) [cosmetics.h defaults] */
    tide_bkg_params bkg;          /**< background of both frames [Source Extractor's defaults] */
    tide_reproject_params reproj; /**< reprojection [Lanczos-3, flux-conserving] */
    tide_subtract_params sub;     /**< subtraction [subtract.h defaults]. With measured FWHMs
                                       the run sets sub.nstars to the clean stars behind them,
                                       and the subtraction lowers its spatial degree for them
                                       (and further, with the background's, for few usable
                                       stamps); the basis is kept whatever n */
    tide_candidate_params cand;   /**< candidates (det.fwhm_guess is set by the run) */
    tide_dipole_params dip;       /**< fits [TIDE_DIPOLE_PSF; psf NULL: the unconvolved
                                       frame's PSF model, else a Gaussian of its FWHM] */
    int calibrate_var;            /**< 1: scale the difference's variance plane so that sums over
                                       PSF-sized boxes of blank sky have unit normalised variance
                                       (robust: 1.4826 MAD), the resampled and convolved noise
                                       being correlated; the factor is VARSCALE [1] */
    uint16_t reject_bits;         /**< candidates with any of these mask bits in the 3 × 3
                                       pixels at their centre are dropped: residuals of saturated
                                       stars, bleed trails, bad columns, the edge band of the
                                       kernel [NODATA | SATURATED | BLEED | EDGE | BAD] */
    int stamp;                    /**< fit stamp side, odd pixels [21] */
    int64_t max_fit;              /**< most candidates fitted, highest S/N first [100000] */
    int64_t keep_stamps;          /**< stamps (and models) of the first candidates returned for
                                       pictures [16] */
    char sci_name[256], tmpl_name[256]; /**< file names for messages and the header [""] */
} tide_diff_params;

/** Fill @p p with the defaults in brackets above. */
TIDE_API void tide_diff_params_default(tide_diff_params *p);

/** What a run produced; everything is host memory (tide_diff_result_free). */
typedef struct tide_diff_result {
    tide_image diff;    /**< difference with var and mask planes, output grid */
    tide_image matched; /**< the convolved (PSF-matched) frame on the output grid */
    tide_header header; /**< cards for the outputs: the output grid's WCS, DIFFSCI,
                             DIFFTMPL, DIFFGRID, FWHMSCI, FWHMTMPL, KSUM, KCHI2, KNFIT,
                             KCONV (1 template, 2 science convolved), KHALF, NCAND, NFIT,
                             NREJECT, VARSCALE */
    tide_table cands;   /**< candidates with fit columns (listed above) */
    int kernel_w;       /**< kernel side, pixels */
    float *kernel;      /**< kernel_w² kernel at the frame centre */
    float *kernel_grid; /**< 3 × 3 kernels at (0.1, 0.5, 0.9) of width and height, row
                             after row (y outer), kernel_w² each */
    int stamp;          /**< side of the kept stamps */
    int64_t nstamps;    /**< kept stamps (the first candidates) */
    float *stamps;      /**< nstamps × stamp² difference stamps */
    float *models;      /**< nstamps × stamp² fitted models: the dipole, or the point source
                             when its χ² is not worse (NaN where not fitted) */
    double fwhm_sci, fwhm_tmpl; /**< on the output grid, pixels */
    double kernel_sum, chi2;    /**< flux ratio and reduced χ² of the kernel fit */
    int64_t nfit_pix;           /**< pixels in the kernel fit */
    int convolved;              /**< 1 template, 2 science */
    int64_t nfitted;            /**< candidates fitted */
    int64_t nrejected;          /**< candidates dropped by reject_bits */
    double var_scale;           /**< factor applied to the variance (calibrate_var), else 1 */
    double ms_total;            /**< wall time of tide_diff_run, ms */
    size_t device_peak;         /**< peak device-pool bytes (0 on the CPU) */
} tide_diff_result;

/** Run the difference path (stage list above) on a science frame and a template.
 *  @p sci, @p tmpl: host images in ADU (mask planes optional) with their headers (each must
 *  hold a celestial WCS); not modified. @p p NULL: defaults. On success @p out holds the
 *  result (tide_diff_result_free); on failure it is empty.
 *  Errors: TIDE_E_NOTFOUND (a frame without WCS, naming it), TIDE_E_RANGE (no overlap),
 *  TIDE_E_INVAL, TIDE_E_EMPTY, TIDE_E_NOMEM, TIDE_E_CUDA and those of the stages. */
TIDE_API int tide_diff_run(tide_ctx *ctx, const tide_image *sci, const tide_header *sci_hdr,
                           const tide_image *tmpl, const tide_header *tmpl_hdr,
                           const tide_diff_params *p, tide_diff_result *out);

/** A template prepared once for any number of science frames: stages 1-3 (WCS, cosmetics,
 *  background, variance, FWHM and its clean stars) done on the template, kept where the
 *  context computes (on CUDA ~10 bytes a pixel of device memory). A survey differencing
 *  exposure after exposure against one template pays for them once. */
typedef struct tide_diff_template tide_diff_template;

/** Prepare @p tmpl (host image in ADU with its header, which must hold a celestial WCS) as
 *  tide_diff_run would, with @p p's template settings (tmpl_name, gain_tmpl, sat_tmpl,
 *  fwhm_tmpl, fwhm_guess, bkg, cosmetics, cos; NULL: defaults). @p tmpl is not kept. On
 *  success *out is the template (tide_diff_template_free); on failure NULL. Errors: those of
 *  tide_diff_run's stages 1-3. */
TIDE_API int tide_diff_template_prepare(tide_ctx *ctx, const tide_image *tmpl,
                                        const tide_header *hdr, const tide_diff_params *p,
                                        tide_diff_template **out);

/** tide_diff_run against a prepared template: the same stages and results as with the
 *  template frame itself, without preparing it again. The output grid is the template's
 *  (p->grid must be TIDE_DIFF_GRID_TEMPLATE, else TIDE_E_INVAL); the template settings of
 *  @p p are those given to tide_diff_template_prepare, not @p p's. The template is read, not
 *  changed, so it serves any number of runs (one at a time, with the context it was prepared
 *  with). */
TIDE_API int tide_diff_run_template(tide_ctx *ctx, const tide_image *sci,
                                    const tide_header *sci_hdr, const tide_diff_template *tmpl,
                                    const tide_diff_params *p, tide_diff_result *out);

/** Release a prepared template (with the context it was prepared with). NULL is a no-op. */
TIDE_API void tide_diff_template_free(tide_ctx *ctx, tide_diff_template *t);

/** Release a result and zero it. NULL is a no-op. */
TIDE_API void tide_diff_result_free(tide_diff_result *r);

/** Write a result into directory @p dir, all or nothing: every file is written into a fresh
 *  hidden directory beside @p dir, which is renamed to @p dir when complete (an existing
 *  @p dir is replaced only when it is empty or holds nothing but a previous run's files;
 *  otherwise TIDE_E_IO). Files:
 *   difference.fits   difference (primary, float32) + MASK + VAR, with the output WCS
 *   candidates.fits   the candidate table (HDU 1, EXTNAME CANDIDATES)
 *   kernel.fits       the kernel at the frame centre (primary) and the 3 × 3 kernel grid
 *                     as one mosaic image (HDU "KGRID")
 *   kernel.png, matched.png, difference.png, candidates.png (rows: stamp, model,
 *   residual of the first @p ntop candidates; omitted when there is none)
 *  @p ntop <= 0: all kept stamps. A previous run that is replaced is renamed away before
 *  the new one is placed and removed on a thread of its own after the call returns (~40 ms
 *  of unlinking for 4096², which then overlaps the caller's next work); the next
 *  tide_diff_write and the process's exit wait for it. Errors: TIDE_E_IO naming the path,
 *  TIDE_E_NOMEM. */
TIDE_API int tide_diff_write(const char *dir, const tide_diff_result *r, int64_t ntop);

/** Refuse (TIDE_E_INVAL naming both) an input of @p inputs that is one of the files
 *  tide_diff_write would replace in @p dir (same device and inode, tide_outputs_check), before
 *  any work: replacing the directory would destroy it. */
TIDE_API int tide_diff_check_outputs(const char *dir, const char *const *inputs, int nin);

#ifdef __cplusplus
}
#endif
#endif
