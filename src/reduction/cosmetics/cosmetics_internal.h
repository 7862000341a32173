/* cosmetics_internal.h — what cosmetics.c and cosmetics_lacosmic.c share: the workspace of
 * one call (planes where the context computes) and the cosmic-ray pass. */
#ifndef TIDE_COSMETICS_INTERNAL_H
#define TIDE_COSMETICS_INTERNAL_H
#include <stddef.h>
#include <stdint.h>

#include "cosmetics_math.h"
#include "tide/cosmetics.h"

/** The noise model of @p p (cosmetics_math.h): with a gain, eq. 10's constants; without one
 *  (gain 0), the frame's noise σ = noise_rms as rdn2 = σ² in ADU². */
static inline tide_cos_noise tide_cos_noise_of(const tide_cosmetics_params *p) {
    tide_cos_noise nm;
    nm.gain = p->gain > 0.0 ? (float)p->gain : 0.0f;
    nm.rdn2 =
        p->gain > 0.0 ? (float)(p->rdnoise * p->rdnoise) : (float)(p->noise_rms * p->noise_rms);
    nm.bias = (float)p->bias;
    return nm;
}

/** The smallest, over sub-pixel positions, of the smaller moment eigenvalue that a
 *  pixel-sampled Gaussian of measured FWHM @p fwhm px has in the 3×3 box around its
 *  brightest pixel (cosmetics_psf.c). */
double tide_cos_psf_lmin(double fwhm);

/** The largest, over sub-pixel positions, share of its brightest pixel that such a Gaussian
 *  puts in a pixel 2 px (Chebyshev) from it. */
double tide_cos_psf_ring(double fwhm);

/** The star-like release test of @p p (cosmetics.h, psf_fwhm): off when psf_fwhm is 0. */
tide_cos_psf tide_cos_psf_of(const tide_cosmetics_params *p);

/** Scratch of one call, allocated once (host or device) before the passes run. */
typedef struct tide_cos_work {
    int on_device;
    uint8_t *flag, *flag2; /* w·h bytes each */
    uint8_t *flag3;        /* w·h bytes: L.A.Cosmic candidates; only with the cosmic-ray pass */
    float *W, *N, *S, *SP; /* w·h floats each; only with the cosmic-ray pass */
} tide_cos_work;

/** Take @p bytes on the host (malloc) or the context's device. */
int tide_cos_alloc(tide_ctx *ctx, int on_device, size_t bytes, void **p);
/** Release memory from tide_cos_alloc. NULL is a no-op. */
void tide_cos_free(tide_ctx *ctx, int on_device, void *p);

/** The L.A.Cosmic pass (cosmetics.h, pass 4) on image @p im with geometry @p g: fills the
 *  working frame, iterates detection and cleaning, sets TIDE_MASK_COSMIC. @p fallback fills
 *  pixels with no usable neighbour. Fills r->cosmic_iterations and cosmic_per_iter. */
int tide_cos_lacosmic(tide_ctx *ctx, tide_image *im, const tide_cos_geom *g,
                      const tide_cosmetics_params *p, tide_cos_work *wk, float fallback,
                      tide_cosmetics_report *r);

/** tide_cos_lacosmic with the CPU's tile updates of the later iterations on (@p incremental
 *  1, what tide_cos_lacosmic does) or off (0: every iteration over the whole frame, for the
 *  test that both give the same masks). */
int tide_cos_lacosmic_ex(tide_ctx *ctx, tide_image *im, const tide_cos_geom *g,
                         const tide_cosmetics_params *p, tide_cos_work *wk, float fallback,
                         tide_cosmetics_report *r, int incremental);

/* CPU-only helpers (cosmetics_cpu.c): the CPU skips the frame median behind the fill value
 * of pixels with no usable neighbour unless some pixel needs it (see run_passes). */

/** 1 when some pixel is finite and has none of @p bits (tide_reduce_median's valid pixels). */
int tide_cos_any_valid_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *pix,
                           const uint16_t *mask, uint16_t bits);

/** 1 when tide_cos_fill(repl, excl, nonfinite = 1) would use its fallback somewhere: a pixel
 *  with a @p repl bit or a non-finite value and no usable pixel in its 5×5 box. */
int tide_cos_fill_needs_fallback_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *pix,
                                     const uint16_t *mask, uint16_t repl, uint16_t excl);

#endif
