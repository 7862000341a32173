/* fft.h — FFT plans cached per context, and FFT correlation/convolution of one image with
 * many small kernels.
 *
 * Two layers:
 *
 *  1. A plan cache. tide_fft_plan_get returns a 2-D real<->complex plan for a padded shape
 *     (and batch), made once per context and kept until tide_ctx_destroy or
 *     tide_fft_cache_clear. CPU contexts use FFTW (single precision, ctx->threads threads);
 *     CUDA contexts use cuFFT on ctx->stream with one workspace from the context's pool shared
 *     by all its plans. Every transform is in place, in FFTW's padded layout: a real row of nx
 *     values occupies 2*(nx/2+1) floats, so the same buffer holds the nx/2+1 complex values of
 *     that row after the forward transform. The inverse is unnormalised (a forward + inverse
 *     pair multiplies by nx*ny), as in FFTW and cuFFT.
 *
 *  2. Correlation. A tide_correlator holds everything needed to correlate (or convolve) frames
 *     of one size with a fixed set of kernels: the padded shape, the two plans, the padded
 *     buffers and the kernels' spectra in compact form. A run costs one forward real FFT of the
 *     padded frame (shared by all kernels) plus, per kernel, one fused spectrum product and
 *     one inverse real FFT; padding and cropping are one cheap pass each. tide_correlate is the
 *     one-shot form; it keeps its last correlator in the context so repeated calls with the same
 *     shape and kernels pay the setup once.
 *
 * Threading: FFTW's planner is process-global and not thread-safe, so every FFTW plan is made
 * and destroyed under one process-wide lock inside tide (executing plans needs no lock). A
 * context itself is used by one thread at a time (ctx.h).
 *
 * Masked data: pixels whose value is NaN or ±Inf, and pixels whose mask has any bit of the
 * correlator's mask_bits, are treated as 0 (they contribute nothing). Outputs are not masked;
 * callers decide how far a bad pixel's influence reaches (the kernel's footprint).
 *
 * Results are linear, not circular: each padded axis is at least W + kw - 1 long, so the output
 * equals direct correlation of the padded image (zero or reflected beyond the edges) to float
 * rounding, relative to the image's scale (max |pixel| × sum |kernel|). On a CPU context a frame
 * whose padded side would exceed 1024 is correlated in overlapping tiles of at most 1024 a side
 * (overlap-save, each tile padded by kw - 1 from the frame or its padding; the tiles run on
 * the context's threads): transforms that fit in cache run several times faster, and the result
 * is the same linear correlation. Deterministic: the same input on the same device gives
 * bitwise the same output. */
#ifndef TIDE_FFT_H
#define TIDE_FFT_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/image.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tide_ctx;

/* ---- sizes ------------------------------------------------------------------------------ */

/** The smallest n' >= max(n, 2) of the form 2^a 3^b 5^c 7^d (fast for FFTW and cuFFT).
 *  Returns -1 when n' would overflow int64_t. */
TIDE_API int64_t tide_fft_good_size(int64_t n);

/** Complex values per row of a real transform of length @p nx: nx/2 + 1. */
static inline int64_t tide_fft_complex_width(int64_t nx) {
    return nx / 2 + 1;
}

/** Floats per row of the in-place padded layout: 2 * (nx/2 + 1). */
static inline int64_t tide_fft_row_pitch(int64_t nx) {
    return 2 * (nx / 2 + 1);
}

/* ---- the plan cache --------------------------------------------------------------------- */

/** Direction of a real 2-D transform. */
typedef enum {
    TIDE_FFT_R2C = 0, /**< forward, real -> half-spectrum (sign -1) */
    TIDE_FFT_C2R = 1  /**< inverse, half-spectrum -> real (sign +1), unnormalised */
} tide_fft_dir;

/** Planner effort for FFTW plans made from now on. ESTIMATE plans instantly and is the default
 *  (MEASURE can take minutes on a 151 MP frame); MEASURE times candidate algorithms once per
 *  shape and can be 10-30 % faster afterwards. cuFFT ignores it. */
typedef enum { TIDE_FFT_ESTIMATE = 0, TIDE_FFT_MEASURE = 1 } tide_fft_effort;

/** An opaque cached plan; owned by the context's cache, never freed by the caller. */
typedef struct tide_fft_plan tide_fft_plan;

/** Set the planner effort for plans made after this call [TIDE_FFT_ESTIMATE]. Plans already
 *  cached keep theirs (the effort is part of the cache key). */
TIDE_API int tide_fft_set_effort(struct tide_ctx *ctx, tide_fft_effort effort);

/** Get (make on first use) the plan for @p batch in-place 2-D real transforms of @p ny rows by
 *  @p nx columns, in direction @p dir. Batch items follow each other in memory, each
 *  ny * tide_fft_row_pitch(nx) floats. The plan belongs to the context. TIDE_E_FFT when the
 *  library refuses the plan, TIDE_E_NOMEM when memory for it or its workspace runs out. */
TIDE_API int tide_fft_plan_get(struct tide_ctx *ctx, tide_fft_dir dir, int64_t nx, int64_t ny,
                               int batch, tide_fft_plan **plan);

/** Execute @p plan in place on @p data (host memory from tide_fft_buffer_alloc on a CPU
 *  context, device memory on a CUDA context, where it is queued on ctx->stream and not waited
 *  for). */
TIDE_API int tide_fft_execute(struct tide_ctx *ctx, tide_fft_plan *plan, float *data);

/** Allocate @p floats floats for transforms: SIMD-aligned host memory (fftwf_malloc) on a CPU
 *  context, device memory from the pool on a CUDA context. Contents undefined. */
TIDE_API int tide_fft_buffer_alloc(struct tide_ctx *ctx, int64_t floats, float **buf);

/** Free a buffer from tide_fft_buffer_alloc. NULL is a no-op. */
TIDE_API void tide_fft_buffer_free(struct tide_ctx *ctx, float *buf);

/** Forget every cached plan, workspace and correlator of the context (they are remade on
 *  demand). Called by tide_ctx_destroy. */
TIDE_API void tide_fft_cache_clear(struct tide_ctx *ctx);

/** Number of plans now cached in the context (for tests and benchmarks). */
TIDE_API int tide_fft_cache_size(const struct tide_ctx *ctx);

/* ---- correlation ------------------------------------------------------------------------ */

/** What lies beyond the image edges. */
typedef enum {
    TIDE_PAD_ZERO = 0,   /**< zeros */
    TIDE_PAD_REFLECT = 1 /**< mirror with the edge pixel repeated: ... c b a | a b c ... d |
                              d c ... (scipy.ndimage mode 'reflect', numpy pad 'symmetric');
                              repeated as often as the kernel needs on tiny images */
} tide_pad_mode;

/** Parameters of a correlator. Zero-initialised means: correlation, zero padding, no mask
 *  bits (only non-finite pixels are zeroed). */
typedef struct tide_correlate_options {
    tide_pad_mode pad;  /**< edge handling [TIDE_PAD_ZERO] */
    int convolve;       /**< 1: convolution (kernel flipped in x and y) [0: correlation] */
    uint16_t mask_bits; /**< input pixels with any of these mask bits count as 0 [0] */
} tide_correlate_options;

/** A reusable correlation set-up for one frame size and one set of kernels. */
typedef struct tide_correlator tide_correlator;

/** Make a correlator for @p width × @p height frames and @p nk kernels, each @p kw × @p kh
 *  (both odd; the centre pixel is the kernel's origin) given as host row-major float arrays
 *  kernels[k][j * kw + i]. Correlation means out(x, y) = sum_ij k(i, j) in(x + i - kw/2,
 *  y + j - kh/2); convolution uses k(-i, -j). The kernels are copied; their spectra are
 *  prepared here, once. Allocates all buffers (host or device per the context). */
TIDE_API int tide_correlator_create(struct tide_ctx *ctx, int64_t width, int64_t height, int nk,
                                    const float *const *kernels, int64_t kw, int64_t kh,
                                    const tide_correlate_options *opt, tide_correlator **out);

/** Correlate @p in (width × height as created; any stride; host on a CPU context, host or
 *  device on a CUDA context) with every kernel, writing out[0..nk-1]. An output whose pix is
 *  NULL is allocated (width × height, pixels only) where @p in lives; otherwise it must have
 *  the frame's size and may live on the host or the device. Outputs' mask and var planes are
 *  left untouched. On a CUDA context the call returns when the outputs are complete. */
TIDE_API int tide_correlator_run(struct tide_ctx *ctx, tide_correlator *c, const tide_image *in,
                                 tide_image *out);

/** Kernel by kernel, for callers that cannot hold nk outputs at once: pad and forward-
 *  transform @p in (as tide_correlator_run) and keep its spectrum in the correlator, for
 *  tide_correlator_run_one. Only for correlators where tide_correlator_streams is 1
 *  (untiled, 2 or more kernels), else TIDE_E_UNSUPPORTED. The spectrum stays valid until the
 *  next tide_correlator_forward or tide_correlator_run on @p c. */
TIDE_API int tide_correlator_forward(struct tide_ctx *ctx, tide_correlator *c,
                                     const tide_image *in);

/** Correlate the frame given to the last tide_correlator_forward with kernel @p k only
 *  (0 <= k < nk), writing @p out (allocated where the context computes when its pix is NULL;
 *  else the frame's size, host or device). Bitwise the output tide_correlator_run gives for
 *  kernel k; the call returns when @p out is complete. */
TIDE_API int tide_correlator_run_one(struct tide_ctx *ctx, tide_correlator *c, int k,
                                     tide_image *out);

/** tide_correlator_run_one without the copy: @p view becomes a non-owning image (the frame's
 *  size, stride the padded row pitch, where the context computes) over the correlator's own
 *  result buffer, bitwise what tide_correlator_run_one would write. Valid until the next
 *  call on @p c (forward, run, run_one, run_one_view) or its release; do not free it. Saves
 *  one frame-sized image per kernel when the caller only reads the result. */
TIDE_API int tide_correlator_run_one_view(struct tide_ctx *ctx, tide_correlator *c, int k,
                                          tide_image *view);

/** 1 when @p c supports tide_correlator_forward / _run_one / _run_one_view (untiled, nk >= 2),
 *  else 0. */
TIDE_API int tide_correlator_streams(const tide_correlator *c);

/** Padded transform shape chosen by the correlator (for benchmarks and logs): of one tile
 *  when a CPU correlator works in tiles. */
TIDE_API void tide_correlator_shape(const tide_correlator *c, int64_t *px, int64_t *py);

/** Release a correlator. NULL is a no-op. */
TIDE_API void tide_correlator_free(struct tide_ctx *ctx, tide_correlator *c);

/** One-shot correlation of @p in with @p nk kernels (see tide_correlator_create and _run;
 *  @p opt may be NULL for defaults). The correlator is kept in the context and reused while
 *  the frame size, kernels and options stay the same. */
TIDE_API int tide_correlate(struct tide_ctx *ctx, const tide_image *in, int nk,
                            const float *const *kernels, int64_t kw, int64_t kh,
                            const tide_correlate_options *opt, tide_image *out);

/** tide_correlate with opt->convolve forced to 1: out = in ⊛ k. */
TIDE_API int tide_convolve(struct tide_ctx *ctx, const tide_image *in, int nk,
                           const float *const *kernels, int64_t kw, int64_t kh,
                           const tide_correlate_options *opt, tide_image *out);

#ifdef __cplusplus
}
#endif
#endif
