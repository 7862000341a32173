/* crossmatch_kernels.h — the crossmatch backends (DESIGN §3): a k-d tree on the CPU
 * (crossmatch_kdtree.c), spatial hashing on the GPU (crossmatch_cuda.cu), both deciding
 * pairs with crossmatch_math.h; and the scratch they cache in ctx->ext[TIDE_EXT_XMATCH]
 * (crossmatch.c). Not public. */
#ifndef TIDE_CROSSMATCH_KERNELS_H
#define TIDE_CROSSMATCH_KERNELS_H
#include <stddef.h>
#include <stdint.h>

#include "tide/ctx.h"
#include "core/ctx_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One crossmatch, validated by crossmatch.c. Arrays on the backend's side; n1 > 0, n2 >= 0
 *  (an empty list 2 leaves every match -1). */
typedef struct tide_xm_job {
    const double *ra1, *dec1;
    int64_t n1;
    const double *ra2, *dec2;
    int64_t n2;
    double r2; /**< squared chord of the radius, (2 sin(r/2))^2: a pair matches when
                    tide_xm_chord2 <= r2 */
    int mutual;
    int64_t *match;    /**< n1 */
    double *sep;       /**< n1 or NULL */
    int64_t *nmatched; /**< host, or NULL */
} tide_xm_job;

/** A point of a k-d tree: unit vector and index in its list (32 bytes, one cache sector). */
typedef struct tide_xm_point {
    double v[3];
    int64_t j;
} tide_xm_point;

/** A k-d tree over the valid positions of one list (crossmatch_kdtree.c). Implicit layout:
 *  node k has children 2k+1 and 2k+2, and the node over the tree-order range [lo, hi) splits
 *  it at mid = lo + (hi - lo) / 2 on axis[k] at split[k] (points left <= split <= points
 *  right); the nodes of depth `depth` are leaves of at most TIDE_XM_LEAF points. */
typedef struct tide_xm_tree {
    int64_t n;                           /**< points in the tree */
    int depth;                           /**< levels of internal nodes */
    tide_xm_point *pts;                  /**< n points in tree order */
    double *split;                       /**< 2^depth - 1 */
    unsigned char *axis;                 /**< 2^depth - 1 */
    size_t pts_cap, split_cap, axis_cap; /**< allocated elements */
} tide_xm_tree;

#define TIDE_XM_LEAF 8

/** A list-1 position and its Morton key: the CPU queries in key order, so that consecutive
 *  queries walk the same part of the tree (cache hits). */
typedef struct tide_xm_order {
    uint64_t key;
    int64_t i;
} tide_xm_order;

/** Scratch cached in ctx->ext[TIDE_EXT_XMATCH]: the host trees (list 2, and list 1 for the
 *  mutual check) and the CUDA backend's device buffers. */
typedef struct tide_xm_scratch {
    tide_xm_tree tree2, tree1;
    tide_xm_order *order, *order_tmp; /**< list-1 positions in query order (kdtree.c) */
    size_t order_cap, order_tmp_cap;
    size_t *radix; /**< 65536 counters of the query-order sort */
    void *dev;     /**< crossmatch_cuda.cu's buffers (NULL until used) */
} tide_xm_scratch;

/** The context's scratch, created on first use; NULL when out of memory. */
tide_xm_scratch *tide_xm_scratch_get(tide_ctx *ctx);

/** Build @p t over the valid positions of (ra, dec) (n of them, host), OpenMP on the
 *  context's threads; deterministic. */
int tide_xm_tree_build(tide_ctx *ctx, tide_xm_tree *t, const double *ra, const double *dec,
                       int64_t n);

/** Index (in its list) of the nearest point of @p t to unit vector @p q with squared chord
 *  <= r2, ties to the lower index; -1 if none. *d2 receives its squared chord. */
int64_t tide_xm_tree_nearest(const tide_xm_tree *t, const double *q, double r2, double *d2);

/** Release a tree's memory. */
void tide_xm_tree_free(tide_xm_tree *t);

/** The match on host arrays with k-d trees (any context). */
int tide_xm_match_cpu(tide_ctx *ctx, const tide_xm_job *job);

#ifdef TIDE_HAVE_CUDA
/** The match on device arrays with spatial hashing, queued on the context's stream
 *  (synchronous only when job->nmatched is set). */
int tide_xm_match_cuda(tide_ctx *ctx, const tide_xm_job *job);

/** The match of host arrays on the GPU: upload into cached device buffers, match, download;
 *  returns with the results on the host. */
int tide_xm_match_host_cuda(tide_ctx *ctx, const tide_xm_job *job);

/** Free the device part of the scratch (crossmatch_cuda.cu). */
void tide_xm_cuda_scratch_free(tide_ctx *ctx, void *dev);
#endif

#ifdef __cplusplus
}
#endif
#endif
