/* subtract.h — PSF-matched image subtraction (Alard & Lupton 1998; Alard 2000).
 *
 * Two frames of the same sky on the same pixel grid, a science frame S and a template T. The
 * sharper one (the "reference" R, smaller FWHM) is convolved with a kernel K so that it matches
 * the other (the "target" I):
 *
 *     I(x, y) ~ sum_b a_b(x, y) (R * K_b)(x, y) + B(x, y)
 *
 * The kernel basis K_b is Gaussians times polynomials, exp(-(u^2+v^2)/2s^2) u^i v^j with
 * i + j <= degree (HOTPANTS defaults: 3 Gaussians with degrees 6, 4, 2; their widths come from
 * the two FWHMs: s_m = sqrt(s_I^2 - s_R^2) and 0.5 s_m, s_m, 2 s_m, as the HOTPANTS README
 * advises). Flux conservation (Alard 2000): the first basis has unit sum and every other
 * basis has zero sum, so the kernel sum (the photometric ratio) is the first coefficient,
 * which is kept constant over the field; the others are polynomials of degree
 * spatial_degree in x and y; B is a polynomial of degree bg_degree.
 *
 * The fit uses stamps (one per cell of a grid of cells about one stamp wide, centred on the
 * brightest unmasked local peak of the reference in the cell, if it stands stamp_snr sky
 * sigmas above the sky; pixels near masked
 * reference pixels, masked target pixels and frame edges get no weight). The normal equations
 * are accumulated per stamp in double precision from the basis-convolved reference at the
 * stamp pixels (direct convolution there, or with fft_basis one batched FFT correlation of
 * the frame with every basis kernel, gathered at the stamps), with
 * the spatial polynomials evaluated at the stamp centre (Alard 2000 §2), solved by Cholesky
 * with a condition check (ridge-regularised when ill-conditioned), and the worst stamps are
 * sigma-clipped on their chi^2 per pixel, refitting twice. A spatially varying fit is
 * preceded by a screen, the same clipped fit with a constant kernel and background, whose
 * clipping a bad stamp (a mover) cannot escape by dragging the fit; with n stamps left the
 * spatial and background degrees are lowered until each has at most n - 2 terms (with fewer
 * spare stamps a bad one cannot be told apart). The varying convolution is then
 * sum_p P_p(x, y) (R * K_p) with K_p = sum_b c_bp K_b: one correlation per polynomial term.
 *
 * A noisy reference biases a pixel fit's kernel sum low (noise in a regressor; ~1% when both
 * frames are equally deep). The kernel sum is instead taken from stamp sums, sum(I) - N (B +
 * k s) = k (sum(R * K_0) - N s) (s the reference's sky, B + k s the level the pixel fit gives
 * the sky: a ratio of sky-subtracted fluxes, whose regressor noise averages out over each
 * stamp), provided it agrees with the pixel fit to 3%, and the rest is refitted with it
 * fixed.
 *
 * The difference is always "science minus template": S - (T * K) - B when the template is
 * convolved (in the science frame's flux scale), (S * K) + B - T when the science is (in the
 * template's flux scale). Its variance is var_I + var_R * K_c^2 (K_c the kernel at the frame
 * centre; var_R K_c^2 is taken as var_R(x) sum K_c^2, exact where var_R is flat over the
 * kernel) and its mask is the target's mask OR the reference's mask grown by the kernel's
 * half-width, with TIDE_MASK_EDGE within that half-width of the frame edge.
 *
 * Optional decorrelation (Reiss & Lupton 2016, the Rubin "afterburner"): the difference is
 * convolved with phi(k) = sqrt((s_I^2 + k0^2 s_R^2) / (s_I^2 + |K(k)|^2 s_R^2)), k0 = the
 * kernel sum, so its noise is white again and S/N on it is honest.
 *
 * Both backends give the same results (images to 1e-5 relative); CUDA runs keep every image
 * on the device between steps. Deterministic: fixed-order double reductions, no atomics. */
#ifndef TIDE_SUBTRACT_H
#define TIDE_SUBTRACT_H
#include "tide/export.h"
#include <stdint.h>
#include "tide/image.h"
#ifdef __cplusplus
extern "C" {
#endif
struct tide_ctx;

/** Which frame is convolved. */
enum { TIDE_SUB_AUTO = 0, TIDE_SUB_CONVOLVE_TEMPLATE = 1, TIDE_SUB_CONVOLVE_SCIENCE = 2 };

/** Parameters of tide_subtract. Set with tide_subtract_params_default, then change fields. */
typedef struct tide_subtract_params {
    int kernel_half;    /**< kernel half-width in px; kernel is (2h+1)^2 [0: auto, max(3,
                             ceil(4 * widest basis sigma))] */
    int ngauss;         /**< Gaussians in the basis, 1..4 [3] */
    double sigmas[4];   /**< their sigmas in px [0: from the FWHMs, 0.5 s_m, s_m, 2 s_m] */
    int degrees[4];     /**< polynomial degree per Gaussian [6, 4, 2] */
    int spatial_degree; /**< degree of the kernel's spatial variation [2]; 0 = constant */
    int bg_degree;      /**< degree of the differential background polynomial [1] */
    int convolve;       /**< TIDE_SUB_AUTO (the sharper frame), _TEMPLATE or _SCIENCE [AUTO] */
    uint16_t mask_bits; /**< mask bits that exclude pixels from the fit and that are grown by
                             the kernel in the difference mask [NODATA|SATURATED|BAD|HOT|
                             COSMIC|BLEED|USER] */
    int decorrelate;    /**< 1: apply the decorrelation afterburner to the difference [0] */
    int nstamps_x;      /**< stamp grid columns [0: auto, up to 20] */
    int nstamps_y;      /**< stamp grid rows [0: auto, up to 20] */
    int stamp_half;     /**< stamp half-width in px [0: kernel_half + ceil(max FWHM)] */
    double stamp_snr;   /**< a stamp's peak must exceed the reference's sky by this many
                             sky sigmas [10] (pure-noise stamps bias the kernel sum low) */
    double clip_sigma;  /**< stamps whose chi^2/pixel exceeds median + clip_sigma * 1.4826 MAD
                             are dropped and the fit redone [3.0] */
    int clip_iter;      /**< clipping rounds [2] */
    int fft_basis;      /**< 1: the basis-convolved reference comes from one batched FFT
                             correlation of the whole frame with every basis kernel, gathered
                             at the stamps; 0: direct convolution at the stamp pixels only,
                             the same values to float rounding and far fewer operations when
                             stamps cover a few % of the frame [0] */
    int tmpl_sky_known; /**< 1: tmpl_sky, tmpl_var are the template's tide_subtract_sky_noise
                             with these mask_bits, measured beforehand (a template prepared
                             once for many exposures) instead of here [0] */
    double tmpl_sky, tmpl_var;
    int64_t nstars; /**< clean stars behind the frames' measured FWHMs (the fewer of the
                         two), or -1 when not counted [-1]: with n >= 0 the spatial degree
                         is first lowered for them (tide_subtract_degree_for_stars) */
} tide_subtract_params;

/** The kernel's spatial degree for @p nstars clean stars: a spatially varying kernel needs
 *  stars spread over the field, so @p degree is lowered until there are more stars than
 *  polynomial terms, down to a constant kernel (0). @p nstars < 0: @p degree unchanged. */
TIDE_API int tide_subtract_degree_for_stars(int degree, int64_t nstars);

/** Fill @p p with the defaults above. */
TIDE_API void tide_subtract_params_default(tide_subtract_params *p);

/** The result of a subtraction. Images live where the inputs lived (host or device). */
typedef struct tide_subtract_result {
    tide_image diff;      /**< difference (pix, var, mask) */
    tide_image matched;   /**< the convolved frame plus background (pix only) */
    double kernel_sum;    /**< sum of the kernel (flux ratio target / reference) */
    double chi2;          /**< chi^2 of the final fit over the kept stamps */
    double cond;          /**< condition number of the (Jacobi-scaled) normal matrix */
    int64_t nfit;         /**< pixels with weight in the final fit */
    int nstamps;          /**< stamps kept in the final fit */
    int nstamps_total;    /**< stamps tried */
    int regularised;      /**< 1 when a ridge was added to solve an ill-conditioned system */
    int flux_from_stamps; /**< 1 when the kernel sum came from stamp sums (see above) */
    int convolved;        /**< TIDE_SUB_CONVOLVE_TEMPLATE or _SCIENCE: which frame was */
    int kernel_half;      /**< the kernel is kernel_w x kernel_w, kernel_w = 2 kernel_half + 1 */
    int kernel_w;
    float *kernel_center; /**< host kernel at the frame centre, kernel_w^2, row-major */
    /* the solved model (for tide_subtract_kernel_at); treat as opaque */
    int64_t width, height;
    int spatial_degree, npoly;
    int spatial_degree_stars; /**< the degree asked of the fit: spatial_degree of the
                                   parameters after the star rule, before the stamps' */
    float *kernel_terms;      /**< npoly kernels K_p (host), npoly * kernel_w^2 */
    double *bg_coef;          /**< background polynomial coefficients */
    int bg_degree;
    double decor_sigma_ref, decor_sigma_target; /**< noise levels used (rms, ADU) */
} tide_subtract_result;

/** The frame tide_subtract convolves for these parameters and FWHMs (px, <= 0 unknown):
 *  p->convolve when set, else the sharper frame (TIDE_SUB_CONVOLVE_SCIENCE when
 *  0 < fwhm_sci < fwhm_tmpl, TIDE_SUB_CONVOLVE_TEMPLATE otherwise). @p p NULL: defaults. */
TIDE_API int tide_subtract_convolved(const tide_subtract_params *p, double fwhm_sci,
                                     double fwhm_tmpl);

/** The sky level and noise of a frame as tide_subtract measures them on each input: the
 *  sigma-clipped median and std (tide_reduce_sigma_clip's defaults) of rows spread over the
 *  frame (~256k pixels), pixels with @p mask_bits excluded; @p var = std² as a float, 1 when
 *  that is not positive. Where the context computes. For a template measured once
 *  (tide_subtract_params.tmpl_sky_known). */
TIDE_API int tide_subtract_sky_noise(struct tide_ctx *ctx, const tide_image *im, uint16_t mask_bits,
                                     double *sky, double *var);

/** PSF-matched subtraction of @p tmpl from @p sci (same size and grid; host images, or device
 *  images on a CUDA context). @p fwhm_sci and @p fwhm_tmpl are the frames' PSF FWHMs in px
 *  (used to choose the frame to convolve and the basis widths; <= 0 means unknown: the
 *  template is then convolved and the basis sigmas default to HOTPANTS' 0.7, 1.5, 3.0 px).
 *  Variance planes are used as weights when present (they should include the sources'
 *  Poisson noise, or bright stars' stamps look bad and are clipped); otherwise each frame's
 *  variance is its sigma-clipped sky noise squared (tide_subtract_sky_noise, or the
 *  template's given in @p p). @p p may be NULL for defaults. @p r is filled (free with
 *  tide_subtract_result_free). TIDE_E_EMPTY when too few usable stamps remain, TIDE_E_RANGE
 *  when the normal equations cannot be solved even regularised. */
TIDE_API int tide_subtract(struct tide_ctx *ctx, const tide_image *sci, const tide_image *tmpl,
                           double fwhm_sci, double fwhm_tmpl, const tide_subtract_params *p,
                           tide_subtract_result *r);

/** The kernel at pixel (@p x, @p y) (0-based) into @p k (kernel_w^2 floats, row-major;
 *  correlation convention: matched(x,y) = sum_ij k(i,j) ref(x+i-h, y+j-h)). */
TIDE_API int tide_subtract_kernel_at(const tide_subtract_result *r, double x, double y, float *k);

/** Release everything the result holds and zero it. */
TIDE_API void tide_subtract_result_free(struct tide_ctx *ctx, tide_subtract_result *r);

#ifdef __cplusplus
}
#endif
#endif
