/* crossmatch_cuda.cu — the GPU crossmatch: spatial hashing of unit vectors.
 *
 * Space around the unit sphere is cut into cubes of side h >= 2 m, where m is the radius
 * chord plus a margin; a sphere of radius m then touches at most 2 cubes per axis, so a query
 * scans at most 8 cubes. Cubes are hashed into T = 2^k >= 2 n buckets (Teschner et al. 2003,
 * "Optimized spatial hashing for collision detection"); list 2 is sorted by bucket (CUB radix
 * sort, stable), bucket ranges are marked, and one thread per list-1 position scans the
 * buckets of its cubes. Collisions only cost time: every point of a bucket is tested with the
 * pair math of crossmatch_math.h and the explicit tie rule, so the result is the k-d tree's
 * bit for bit, whatever the order inside a bucket.
 *
 * Why the cube range is exact despite rounding: a point p matched to q has a computed squared
 * chord <= r2, so |p_k - q_k| <= rc (1 + 3e-16) on each axis; with m = rc (1 + 1e-12) + 1e-14
 * the exact value of p_k + 1 exceeds (q_k + 1) - m by more than the few ulps (<= 7e-16) that
 * rounding of the two sides can take away, and multiplication by 1/h and floor are monotonic:
 * cube(p_k) lies in [floor((q_k + 1 - m)/h), floor((q_k + 1 + m)/h)] as computed.
 *
 * Mutual mode hashes list 1 the same way and checks, for each pair (i, j), that j's nearest
 * list-1 position is i. No floating-point atomics; the match count is an integer sum. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <cub/device/device_radix_sort.cuh>

extern "C" {
#include "crossmatch_kernels.h"
#include "tide/memory.h"
#include "tide/status.h"
}
#include "crossmatch_math.h"
#include "core/gpu/cuda_check.h"

#define THREADS 256
/* Largest list the 32-bit bucket keys (T <= 2^31 plus the invalid sentinel) allow. */
#define MAX_POINTS ((int64_t)1 << 30)

/* ---- device scratch --------------------------------------------------------------------- */

/* One list hashed into buckets. */
typedef struct grid_buf {
    uint32_t *keys_in, *keys_out; /* bucket of each point; sorted */
    int64_t *vals_in, *vals_out;  /* index of each point; sorted by bucket */
    tide_xm_point *pts;           /* unit vectors in bucket order */
    uint32_t *start, *end;        /* bucket ranges in pts (T each) */
    size_t keys_in_b, keys_out_b, vals_in_b, vals_out_b, pts_b, start_b, end_b;
} grid_buf;

typedef struct dev_scratch {
    grid_buf g2, g1;
    void *cub_tmp;
    size_t cub_tmp_b;
    double *in; /* host-array path: ra1, dec1, ra2, dec2 uploaded */
    size_t in_b;
    int64_t *match;
    size_t match_b;
    double *sep;
    size_t sep_b;
    unsigned long long *count;
    size_t count_b;
} dev_scratch;

/* Make *buf hold at least @p need bytes (1/8 slack so growing sizes do not reallocate each
 * call); the pool makes the rare reallocation cheap. */
static int ensure(tide_ctx *ctx, void **buf, size_t *cap, size_t need) {
    if (*buf && *cap >= need)
        return TIDE_OK;
    tide_device_free(ctx, *buf);
    *buf = NULL;
    *cap = 0;
    const size_t want = (need < 256 ? 256 : need) + need / 8;
    int st = tide_device_alloc(ctx, want, buf);
    if (st)
        return tide_error_prefix(st, "crossmatch scratch (%zu bytes): ", want);
    *cap = want;
    return TIDE_OK;
}

#define ENSURE(ctx, field, bytes) ensure((ctx), (void **)&(field), &(field##_b), (bytes))

static void grid_free(tide_ctx *ctx, grid_buf *g) {
    tide_device_free(ctx, g->keys_in);
    tide_device_free(ctx, g->keys_out);
    tide_device_free(ctx, g->vals_in);
    tide_device_free(ctx, g->vals_out);
    tide_device_free(ctx, g->pts);
    tide_device_free(ctx, g->start);
    tide_device_free(ctx, g->end);
}

extern "C" void tide_xm_cuda_scratch_free(tide_ctx *ctx, void *dev) {
    dev_scratch *d = (dev_scratch *)dev;
    grid_free(ctx, &d->g2);
    grid_free(ctx, &d->g1);
    tide_device_free(ctx, d->cub_tmp);
    tide_device_free(ctx, d->in);
    tide_device_free(ctx, d->match);
    tide_device_free(ctx, d->sep);
    tide_device_free(ctx, d->count);
    free(d);
}

static dev_scratch *scratch(tide_ctx *ctx) {
    tide_xm_scratch *s = tide_xm_scratch_get(ctx);
    if (!s)
        return NULL;
    if (!s->dev)
        s->dev = calloc(1, sizeof(dev_scratch));
    return (dev_scratch *)s->dev;
}

/* ---- hashing ---------------------------------------------------------------------------- */

/* What the kernels need of a hashed list (by value). */
typedef struct kgrid {
    const tide_xm_point *pts;
    const uint32_t *start, *end;
    uint32_t mask; /* T - 1 */
    double inv_h;  /* 1 / cube side */
    double m;      /* search half-width: radius chord plus margin */
} kgrid;

/* Bucket of each position (T = mask + 1 for an invalid one: sorted last, never scanned). */
static __global__ void k_prep(const double *ra, const double *dec, int64_t n, uint32_t mask,
                              double inv_h, uint32_t *keys, int64_t *vals) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    uint32_t key = mask + 1u;
    const double a = ra[i], d = dec[i];
    if (tide_xm_valid(a, d)) {
        double v[3];
        tide_xm_unit(a, d, v);
        key = tide_xm_bucket(tide_xm_cube(v[0], inv_h), tide_xm_cube(v[1], inv_h),
                             tide_xm_cube(v[2], inv_h), mask);
    }
    keys[i] = key;
    vals[i] = i;
}

/* Points in bucket order, and each bucket's [start, end) (buckets not seen stay [0, 0)). */
static __global__ void k_bounds(const uint32_t *keys, const int64_t *vals, int64_t n, uint32_t mask,
                                const double *ra, const double *dec, tide_xm_point *pts,
                                uint32_t *start, uint32_t *end) {
    const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n)
        return;
    const uint32_t key = keys[k];
    if (key > mask)
        return;
    const int64_t j = vals[k];
    tide_xm_point p;
    tide_xm_unit(ra[j], dec[j], p.v);
    p.j = j;
    pts[k] = p;
    if (k == 0 || keys[k - 1] != key)
        start[key] = (uint32_t)k;
    if (k == n - 1 || keys[k + 1] != key)
        end[key] = (uint32_t)(k + 1);
}

/* Nearest point of @p g to unit vector @p q within r2 (ties to the lower index), or -1. */
__device__ static int64_t grid_nearest(const kgrid &g, const double *q, double r2, double *d2) {
    int64_t lo[3], hi[3];
    for (int a = 0; a < 3; a++)
        tide_xm_cube_range(q[a], g.m, g.inv_h, &lo[a], &hi[a]);
    int64_t best = -1;
    double bd = r2;
    for (int64_t cx = lo[0]; cx <= hi[0]; cx++)
        for (int64_t cy = lo[1]; cy <= hi[1]; cy++)
            for (int64_t cz = lo[2]; cz <= hi[2]; cz++) {
                const uint32_t b = tide_xm_bucket(cx, cy, cz, g.mask);
                const uint32_t e = g.end[b];
                for (uint32_t k = g.start[b]; k < e; k++) {
                    const tide_xm_point p = g.pts[k];
                    const double c2 = tide_xm_chord2(q, p.v);
                    if (tide_xm_better(c2, p.j, bd, best)) {
                        bd = c2;
                        best = p.j;
                    }
                }
            }
    *d2 = bd;
    return best;
}

static __global__ void k_query(const double *ra, const double *dec, int64_t n, kgrid g, double r2,
                               int64_t *match, double *sep) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int64_t j = -1;
    double d2 = 0.0;
    const double a = ra[i], d = dec[i];
    if (tide_xm_valid(a, d)) {
        double q[3];
        tide_xm_unit(a, d, q);
        j = grid_nearest(g, q, r2, &d2);
    }
    match[i] = j;
    if (sep)
        sep[i] = j >= 0 ? tide_xm_sep_arcsec(d2) : NAN;
}

/* Mutual: drop (i, j) unless i is the nearest list-1 position (grid g1) of j. */
static __global__ void k_mutual(const double *ra2, const double *dec2, int64_t n1, kgrid g1,
                                double r2, int64_t *match, double *sep) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n1)
        return;
    const int64_t j = match[i];
    if (j < 0)
        return;
    double q[3], d2;
    tide_xm_unit(ra2[j], dec2[j], q);
    if (grid_nearest(g1, q, r2, &d2) != i) {
        match[i] = -1;
        if (sep)
            sep[i] = NAN;
    }
}

static __global__ void k_fill(int64_t n, int64_t *match, double *sep) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    match[i] = -1;
    if (sep)
        sep[i] = NAN;
}

/* Matched count: per-block integer count, one integer atomic per block. */
static __global__ void k_count(const int64_t *match, int64_t n, unsigned long long *count) {
    int c = 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        c += match[i] >= 0;
    __shared__ int s[THREADS];
    s[threadIdx.x] = c;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w)
            s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0 && s[0])
        atomicAdd(count, (unsigned long long)s[0]);
}

static unsigned blocks(int64_t n) {
    return (unsigned)((n + THREADS - 1) / THREADS);
}

/* Hash list (ra, dec) of n > 0 positions into @p gb; describe it in @p g. */
static int grid_build(tide_ctx *ctx, dev_scratch *d, grid_buf *gb, const double *ra,
                      const double *dec, int64_t n, double inv_h, double m, kgrid *g) {
    cudaStream_t s = (cudaStream_t)ctx->stream;
    int bits = 10;
    while (((int64_t)1 << bits) < 2 * n)
        bits++;
    const uint32_t T = (uint32_t)1 << bits;
    int st = ENSURE(ctx, gb->keys_in, (size_t)n * sizeof(uint32_t));
    if (!st)
        st = ENSURE(ctx, gb->keys_out, (size_t)n * sizeof(uint32_t));
    if (!st)
        st = ENSURE(ctx, gb->vals_in, (size_t)n * sizeof(int64_t));
    if (!st)
        st = ENSURE(ctx, gb->vals_out, (size_t)n * sizeof(int64_t));
    if (!st)
        st = ENSURE(ctx, gb->pts, (size_t)n * sizeof(tide_xm_point));
    if (!st)
        st = ENSURE(ctx, gb->start, (size_t)T * sizeof(uint32_t));
    if (!st)
        st = ENSURE(ctx, gb->end, (size_t)T * sizeof(uint32_t));
    if (st)
        return st;
    size_t tmp = 0;
    TIDE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, tmp, gb->keys_in, gb->keys_out,
                                                  gb->vals_in, gb->vals_out, (int)n, 0, bits + 1,
                                                  s));
    st = ENSURE(ctx, d->cub_tmp, tmp);
    if (st)
        return st;
    k_prep<<<blocks(n), THREADS, 0, s>>>(ra, dec, n, T - 1, inv_h, gb->keys_in, gb->vals_in);
    TIDE_CUDA_LAUNCHED();
    tmp = d->cub_tmp_b;
    TIDE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(d->cub_tmp, tmp, gb->keys_in, gb->keys_out,
                                                  gb->vals_in, gb->vals_out, (int)n, 0, bits + 1,
                                                  s));
    TIDE_CUDA_TRY(cudaMemsetAsync(gb->start, 0, (size_t)T * sizeof(uint32_t), s));
    TIDE_CUDA_TRY(cudaMemsetAsync(gb->end, 0, (size_t)T * sizeof(uint32_t), s));
    k_bounds<<<blocks(n), THREADS, 0, s>>>(gb->keys_out, gb->vals_out, n, T - 1, ra, dec, gb->pts,
                                           gb->start, gb->end);
    TIDE_CUDA_LAUNCHED();
    g->pts = gb->pts;
    g->start = gb->start;
    g->end = gb->end;
    g->mask = T - 1;
    g->inv_h = inv_h;
    g->m = m;
    return TIDE_OK;
}

extern "C" int tide_xm_match_cuda(tide_ctx *ctx, const tide_xm_job *job) {
    cudaStream_t s = (cudaStream_t)ctx->stream;
    const int64_t n1 = job->n1, n2 = job->n2;
    if (n1 > MAX_POINTS || n2 > MAX_POINTS)
        return tide_error(TIDE_E_RANGE,
                          "crossmatch: lists of %lld and %lld positions; the GPU "
                          "backend takes at most %lld each",
                          (long long)n1, (long long)n2, (long long)MAX_POINTS);
    dev_scratch *d = scratch(ctx);
    if (!d)
        return tide_error(TIDE_E_NOMEM, "crossmatch: no memory for scratch");
    int st = TIDE_OK;
    if (n2 == 0) {
        k_fill<<<blocks(n1), THREADS, 0, s>>>(n1, job->match, job->sep);
        TIDE_CUDA_LAUNCHED();
    } else {
        const double m = tide_xm_hash_margin(sqrt(job->r2));
        const double inv_h = tide_xm_hash_inv_side(job->r2);
        kgrid g2, g1;
        st = grid_build(ctx, d, &d->g2, job->ra2, job->dec2, n2, inv_h, m, &g2);
        if (st)
            return st;
        k_query<<<blocks(n1), THREADS, 0, s>>>(job->ra1, job->dec1, n1, g2, job->r2, job->match,
                                               job->sep);
        TIDE_CUDA_LAUNCHED();
        if (job->mutual) {
            st = grid_build(ctx, d, &d->g1, job->ra1, job->dec1, n1, inv_h, m, &g1);
            if (st)
                return st;
            k_mutual<<<blocks(n1), THREADS, 0, s>>>(job->ra2, job->dec2, n1, g1, job->r2,
                                                    job->match, job->sep);
            TIDE_CUDA_LAUNCHED();
        }
    }
    if (job->nmatched) {
        st = ENSURE(ctx, d->count, sizeof(unsigned long long));
        if (st)
            return st;
        TIDE_CUDA_TRY(cudaMemsetAsync(d->count, 0, sizeof(unsigned long long), s));
        const unsigned nb = blocks(n1) < 1024 ? blocks(n1) : 1024;
        k_count<<<nb, THREADS, 0, s>>>(job->match, n1, d->count);
        TIDE_CUDA_LAUNCHED();
        unsigned long long c = 0;
        st = tide_memcpy(ctx, &c, 0, d->count, 1, sizeof c);
        if (st)
            return st;
        *job->nmatched = (int64_t)c;
    }
    return TIDE_OK;
}

extern "C" int tide_xm_match_host_cuda(tide_ctx *ctx, const tide_xm_job *job) {
    dev_scratch *d = scratch(ctx);
    if (!d)
        return tide_error(TIDE_E_NOMEM, "crossmatch: no memory for scratch");
    const int64_t n1 = job->n1, n2 = job->n2;
    const size_t b1 = (size_t)n1 * sizeof(double), b2 = (size_t)n2 * sizeof(double);
    int st = ENSURE(ctx, d->in, 2 * (b1 + b2));
    if (!st)
        st = ENSURE(ctx, d->match, (size_t)n1 * sizeof(int64_t));
    if (!st && job->sep)
        st = ENSURE(ctx, d->sep, b1);
    if (st)
        return st;
    double *ra1 = d->in, *dec1 = ra1 + n1, *ra2 = dec1 + n1, *dec2 = ra2 + n2;
    st = tide_memcpy(ctx, ra1, 1, job->ra1, 0, b1);
    if (!st)
        st = tide_memcpy(ctx, dec1, 1, job->dec1, 0, b1);
    if (!st && n2)
        st = tide_memcpy(ctx, ra2, 1, job->ra2, 0, b2);
    if (!st && n2)
        st = tide_memcpy(ctx, dec2, 1, job->dec2, 0, b2);
    if (st)
        return st;
    tide_xm_job dj = *job;
    dj.ra1 = ra1;
    dj.dec1 = dec1;
    dj.ra2 = ra2;
    dj.dec2 = dec2;
    dj.match = d->match;
    dj.sep = job->sep ? d->sep : NULL;
    st = tide_xm_match_cuda(ctx, &dj);
    if (!st)
        st = tide_memcpy(ctx, job->match, 0, d->match, 1, (size_t)n1 * sizeof(int64_t));
    if (!st && job->sep)
        st = tide_memcpy(ctx, job->sep, 0, d->sep, 1, b1);
    return st;
}
