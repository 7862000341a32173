/* crossmatch.h — positional crossmatch of two lists of sky positions.
 *
 * For every position of list 1 the nearest position of list 2 within a radius, by
 * great-circle distance on the sphere (never "degrees of RA"): positions become unit vectors
 * and the angle is 2 asin(c / 2) of their chord c, which is accurate to ~1e-10 arcsec at
 * every separation up to the radius limit, across RA 0/360 and at the poles. Ties in
 * distance go to the lower list-2 index, so the result is a pure function of the inputs: the
 * CPU backend (a k-d tree on unit vectors) and the GPU backend (spatial hashing of the unit
 * vectors in cubes of the radius' size) decide with the same explicitly rounded arithmetic
 * and give identical pairs and separations, bit for bit, for any thread count. A pair at
 * exactly the radius matches.
 *
 * With `mutual`, a pair (i, j) is kept only when i is also the nearest list-1 position of j
 * (ties again to the lower index): a one-to-one match, as TOPCAT's "best match, symmetric".
 *
 * Backends. tide_crossmatch runs on the context's backend with arrays on its side: the k-d
 * tree on host arrays for a CPU context, spatial hashing on device arrays for a CUDA context
 * (queued on the context's stream). tide_crossmatch_host takes host arrays on any context and
 * picks the backend by size: small problems (n1 · n2 below TIDE_XMATCH_GPU_MIN_WORK) run on
 * the CPU even on a CUDA context, because the uploads and launches cost more than the search
 * (the crossover is measured by `tide bench --xmatch`). Scratch memory (device grid, host
 * tree) is cached in the context. */
#ifndef TIDE_CROSSMATCH_H
#define TIDE_CROSSMATCH_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Below this n1·n2 a CUDA context matches host arrays on the CPU. */
#define TIDE_XMATCH_GPU_MIN_WORK 1.0e8

/** Crossmatch options. */
typedef struct tide_xmatch_params {
    double radius_arcsec; /**< largest separation of a pair, arcsec [2.0]; > 0, <= 3600 */
    int mutual;           /**< 1: keep only mutual nearest neighbours [0] */
} tide_xmatch_params;

/** Defaults: radius 2″, not mutual. */
static inline tide_xmatch_params tide_xmatch_defaults(void) {
    tide_xmatch_params p = {2.0, 0};
    return p;
}

/** Match list 1 (@p n1 positions @p ra1, @p dec1, degrees) against list 2 (@p n2 positions).
 *  @p match (n1 elements) receives for each position of list 1 the index of its match in
 *  list 2, or -1; @p sep_arcsec (n1 elements, may be NULL) the separation in arcsec (NaN
 *  when unmatched). Positions with a NaN or infinite coordinate, or |dec| > 90, match nothing
 *  and are matched by nothing; any finite RA is taken modulo 360. @p p NULL means the
 *  defaults.
 *  Arrays live on the context's side: host memory for a CPU context, device memory for a
 *  CUDA context (then the call is asynchronous on the context's stream unless @p nmatched is
 *  requested). @p nmatched (may be NULL; always host memory) receives the number of matched
 *  list-1 positions.
 *  Errors: TIDE_E_INVAL (negative sizes, NULL arrays with n > 0, radius out of range),
 *  TIDE_E_RANGE (the GPU backend takes at most 2^30 positions per list), TIDE_E_NOMEM,
 *  TIDE_E_CUDA. Empty lists are not an error: every match is -1.
 *  Cost: CPU O((n1 + n2) log n2) plus O(n1 log n1) for the mutual check; GPU one sort of
 *  list 2 (and of list 1 when mutual) and one thread per list-1 position. Scratch is kept in
 *  the context, so repeated calls at the same sizes allocate nothing. */
TIDE_API int tide_crossmatch(tide_ctx *ctx, const double *ra1, const double *dec1, int64_t n1,
                             const double *ra2, const double *dec2, int64_t n2,
                             const tide_xmatch_params *p, int64_t *match, double *sep_arcsec,
                             int64_t *nmatched);

/** tide_crossmatch on host arrays for any context: on a CUDA context the positions are
 *  uploaded and matched on the GPU when n1 · n2 >= TIDE_XMATCH_GPU_MIN_WORK, else matched on
 *  the CPU. Same results either way. Returns when the results are on the host. */
TIDE_API int tide_crossmatch_host(tide_ctx *ctx, const double *ra1, const double *dec1, int64_t n1,
                                  const double *ra2, const double *dec2, int64_t n2,
                                  const tide_xmatch_params *p, int64_t *match, double *sep_arcsec,
                                  int64_t *nmatched);

/** Great-circle distance between two sky positions (degrees in), arcsec out: the haversine
 *  formula with its complement computed as a sum of squares, so it keeps ~1e-11 arcsec
 *  precision at every separation from 0 to 180 degrees. */
TIDE_API double tide_sky_separation_arcsec(double ra1, double dec1, double ra2, double dec2);

#ifdef __cplusplus
}
#endif
#endif
