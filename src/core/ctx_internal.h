/* ctx_internal.h — the library's side of tide_ctx: backend dispatch and extension slots.
 *
 * Both depend on how libtide was built (TIDE_HAVE_CUDA) and on which modules it holds, so they
 * are no part of the public ctx.h: a user's program never dispatches a kernel twin or owns a
 * slot. Every layer of src/ may include this header (docs/layers.txt names it shared). */
#ifndef TIDE_CTX_INTERNAL_H
#define TIDE_CTX_INTERNAL_H
#include "tide/ctx.h"

/** Slots of tide_ctx.ext; each owning module takes one and releases it through the slot's
 *  destructor, which tide_ctx_destroy calls newest first. */
enum {
    TIDE_EXT_FFT = 0,     /**< FFT plan cache (compute/fft.c) */
    TIDE_EXT_REDUCE = 1,  /**< reduction scratch (compute/stats.c) */
    TIDE_EXT_WCS = 2,     /**< reserved: world coordinates */
    TIDE_EXT_XMATCH = 3,  /**< crossmatch scratch (crossmatch.h) */
    TIDE_EXT_SOLVER = 4,  /**< loaded astrometry.net index files (solve.h) */
    TIDE_EXT_STAGING = 5, /**< pinned staging ring of pageable host<->device copies */
    TIDE_EXT_HELPER = 6,  /**< the helper context (tide_ctx_helper) */
    TIDE_EXT_RICE = 7,    /**< the GPU RICE decoder's streams and page-locked room */
    TIDE_EXT_COUNT = 8
};
#ifndef __cplusplus /* C11's form; nvcc's host pass is C++ */
_Static_assert(sizeof(((tide_ctx *)0)->ext) / sizeof(((tide_ctx *)0)->ext[0]) == TIDE_EXT_COUNT,
               "tide_ctx.ext holds TIDE_EXT_COUNT slots");
#endif

/** Call the _cpu or _cuda twin of a kernel entry point according to ctx->backend. Without
 *  CUDA in the build the CUDA branch is compiled out and a CUDA context cannot exist. */
#ifdef TIDE_HAVE_CUDA
#define TIDE_DISPATCH(ctx, fn, ...)                                                                \
    ((ctx)->backend == TIDE_BACKEND_CUDA ? fn##_cuda((ctx), __VA_ARGS__)                           \
                                         : fn##_cpu((ctx), __VA_ARGS__))
#else
#define TIDE_DISPATCH(ctx, fn, ...) fn##_cpu((ctx), __VA_ARGS__)
#endif

#endif
