/* stats_cpu.c — CPU (OpenMP) twins of the reduction kernels.
 *
 * The order of floating-point operations is the fixed one of include/tide/stats.h and is
 * independent of the thread count: threads only decide which chunks they compute, each chunk
 * is reduced alone, and the chunk partials are added afterwards in one pairwise tree. The
 * CUDA twins (stats_cuda.cu) perform the same additions in the same order. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "stats_kernels.h"
#include "stats_math.h"
#include "tide/status.h"

enum { CHUNK = TIDE_REDUCE_CHUNK, LANES = TIDE_REDUCE_LANES, ROWS = CHUNK / LANES };

static int nthreads(const tide_ctx *ctx) {
    return ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
}

/* Copy chunk c's pixels (and mask) into contiguous buffers; the tail past the image is NaN,
 * i.e. invalid, exactly as the GPU treats indices >= n. */
static void gather_chunk(const tide_reduce_view *v, int64_t c, float *buf, uint16_t *mbuf) {
    const int64_t n = v->width * v->height;
    int64_t idx = c * CHUNK, end = idx + CHUNK < n ? idx + CHUNK : n;
    int k = 0;
    while (idx < end) {
        const int64_t y = idx / v->width, x = idx % v->width;
        int64_t run = v->width - x;
        if (run > end - idx)
            run = end - idx;
        const int64_t off = y * v->stride + x;
        memcpy(buf + k, v->pix + off, (size_t)run * sizeof(float));
        if (v->mask)
            memcpy(mbuf + k, v->mask + off, (size_t)run * sizeof(uint16_t));
        else
            memset(mbuf + k, 0, (size_t)run * sizeof(uint16_t));
        k += (int)run;
        idx += run;
    }
    for (; k < CHUNK; k++) {
        buf[k] = NAN;
        mbuf[k] = 0;
    }
}

/* Pairwise tree over the lanes: stride 128, 64, ..., 1 (the GPU's shared-memory tree). */
static double lane_tree(double *acc) {
    for (int s = LANES / 2; s > 0; s >>= 1)
        for (int l = 0; l < s; l++)
            acc[l] = tide_reduce_add(acc[l], acc[l + s]);
    return acc[0];
}

static void chunk_moments(const tide_reduce_view *v, int64_t c, tide_reduce_moments *out) {
    float buf[CHUNK];
    uint16_t mbuf[CHUNK];
    double acc[LANES];
    gather_chunk(v, c, buf, mbuf);
    int64_t count = 0;
    uint32_t kmin = 0xFFFFFFFFu, kmax = 0;
    for (int l = 0; l < LANES; l++)
        acc[l] = 0.0;
    for (int j = 0; j < ROWS; j++) {
        for (int l = 0; l < LANES; l++) {
            const float x = buf[j * LANES + l];
            const int ok = tide_reduce_valid(x, mbuf[j * LANES + l], v->maskbits, v->lo, v->hi);
            acc[l] = tide_reduce_add(acc[l], ok ? (double)x : 0.0);
            if (ok) {
                const uint32_t k = tide_reduce_key(x);
                count++;
                kmin = k < kmin ? k : kmin;
                kmax = k > kmax ? k : kmax;
            }
        }
    }
    out->count = count;
    out->sum = lane_tree(acc);
    out->kmin = kmin;
    out->kmax = kmax;
}

static double chunk_m2(const tide_reduce_view *v, int64_t c, double mean) {
    float buf[CHUNK];
    uint16_t mbuf[CHUNK];
    double acc[LANES];
    gather_chunk(v, c, buf, mbuf);
    for (int l = 0; l < LANES; l++)
        acc[l] = 0.0;
    for (int j = 0; j < ROWS; j++) {
        for (int l = 0; l < LANES; l++) {
            const float x = buf[j * LANES + l];
            const int ok = tide_reduce_valid(x, mbuf[j * LANES + l], v->maskbits, v->lo, v->hi);
            acc[l] = tide_reduce_add(acc[l], ok ? tide_reduce_sqdev(x, mean) : 0.0);
        }
    }
    return lane_tree(acc);
}

int tide_reduce_moments_cpu(tide_ctx *ctx, const tide_reduce_view *v, tide_reduce_moments *out) {
    const int64_t nch = tide_reduce_nchunks(v->width * v->height);
    tide_reduce_scratch *s = tide_reduce_scratch_get(ctx);
    if (!s)
        return tide_error(TIDE_E_NOMEM, "reduce: no memory for scratch");
    int st = tide_reduce_scratch_ensure(ctx, &s->h_part, &s->h_part_bytes,
                                        (size_t)nch * sizeof(tide_reduce_moments), 0);
    if (st)
        return st;
    tide_reduce_moments *p = (tide_reduce_moments *)s->h_part;
#pragma omp parallel for schedule(static) num_threads(nthreads(ctx))
    for (int64_t c = 0; c < nch; c++)
        chunk_moments(v, c, &p[c]);
    /* Chunk tree: stride 1, 2, 4, ... (the GPU's combine kernel does the same pairs). */
    for (int64_t w = 1; w < nch; w <<= 1)
        for (int64_t i = 0; i + w < nch; i += 2 * w) {
            p[i].count += p[i + w].count;
            p[i].sum = tide_reduce_add(p[i].sum, p[i + w].sum);
            p[i].kmin = p[i + w].kmin < p[i].kmin ? p[i + w].kmin : p[i].kmin;
            p[i].kmax = p[i + w].kmax > p[i].kmax ? p[i + w].kmax : p[i].kmax;
        }
    if (nch > 0) {
        *out = p[0];
    } else {
        out->count = 0;
        out->sum = 0.0;
        out->kmin = 0xFFFFFFFFu;
        out->kmax = 0;
    }
    return TIDE_OK;
}

int tide_reduce_m2_cpu(tide_ctx *ctx, const tide_reduce_view *v, double mean, double *m2) {
    const int64_t nch = tide_reduce_nchunks(v->width * v->height);
    tide_reduce_scratch *s = tide_reduce_scratch_get(ctx);
    if (!s)
        return tide_error(TIDE_E_NOMEM, "reduce: no memory for scratch");
    int st = tide_reduce_scratch_ensure(ctx, &s->h_part, &s->h_part_bytes,
                                        (size_t)nch * sizeof(double), 0);
    if (st)
        return st;
    double *p = (double *)s->h_part;
#pragma omp parallel for schedule(static) num_threads(nthreads(ctx))
    for (int64_t c = 0; c < nch; c++)
        p[c] = chunk_m2(v, c, mean);
    for (int64_t w = 1; w < nch; w <<= 1)
        for (int64_t i = 0; i + w < nch; i += 2 * w)
            p[i] = tide_reduce_add(p[i], p[i + w]);
    *m2 = nch > 0 ? p[0] : 0.0;
    return TIDE_OK;
}

int tide_reduce_hist_cpu(tide_ctx *ctx, const tide_reduce_view *v, int level,
                         const uint32_t *prefix, int ntargets, uint64_t *hist) {
    if (level < 0 || level >= TIDE_RSEL_LEVELS || ntargets < 1 || ntargets > TIDE_RSEL_MAX_TARGETS)
        return tide_error(TIDE_E_INTERNAL, "reduce: bad histogram request (level %d, %d targets)",
                          level, ntargets);
    const int nt = level == 0 ? 1 : ntargets;
    const int shift = tide_rsel_shift(level), nbins = tide_rsel_nbins(level);
    const int hshift = level == 0 ? 32 : tide_rsel_shift(level - 1);
    memset(hist, 0, (size_t)ntargets * TIDE_RSEL_BINS * sizeof(uint64_t));
#pragma omp parallel num_threads(nthreads(ctx))
    {
        /* Thread-private counts; integer sums do not depend on the merge order. */
        uint32_t h[TIDE_RSEL_MAX_TARGETS * TIDE_RSEL_BINS];
        memset(h, 0, sizeof h);
#pragma omp for schedule(static)
        for (int64_t y = 0; y < v->height; y++) {
            const float *row = v->pix + y * v->stride;
            const uint16_t *mrow = v->mask ? v->mask + y * v->stride : NULL;
            for (int64_t x = 0; x < v->width; x++) {
                const float val = row[x];
                if (!tide_reduce_valid(val, mrow ? mrow[x] : 0, v->maskbits, v->lo, v->hi))
                    continue;
                const uint32_t k = tide_reduce_key(val);
                const uint32_t digit = (k >> shift) & (uint32_t)(nbins - 1);
                if (level == 0) {
                    h[digit]++;
                    continue;
                }
                const uint32_t hi = k >> hshift;
                for (int t = 0; t < nt; t++)
                    if (hi == prefix[t])
                        h[t * TIDE_RSEL_BINS + digit]++;
            }
        }
#pragma omp critical(tide_reduce_hist_merge)
        for (int b = 0; b < nt * TIDE_RSEL_BINS; b++)
            hist[b] += h[b];
    }
    return TIDE_OK;
}
