/* fft.c — the per-context FFT plan cache (ctx->ext[TIDE_EXT_FFT]) and good sizes.
 *
 * Plans are keyed by (direction, nx, ny, batch, effort) and live until the context goes. On a
 * CUDA context all plans share one workspace from the context's pool: they run one after the
 * other on ctx->stream, so one buffer as large as the largest need serves them all, and a
 * frame of 151 MP does not pay a workspace per plan. */
#include <stdlib.h>
#include <string.h>

#include "fft_kernels.h"
#include "tide/ctx.h"
#include "tide/fft.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "core/ctx_internal.h"

typedef struct fft_cache {
    struct tide_fft_plan **plans;
    int count, cap;
    tide_fft_effort effort;
    void *work; /* shared cuFFT workspace (device) */
    size_t work_bytes;
    struct tide_correlator *kept; /* tide_correlate's last correlator */
} fft_cache;

int64_t tide_fft_good_size(int64_t n) {
    if (n < 2)
        n = 2;
    if (n > INT64_MAX / 8)
        return -1;
    for (int64_t m = n;; m++) {
        int64_t r = m;
        static const int primes[4] = {2, 3, 5, 7};
        for (int i = 0; i < 4; i++)
            while (r % primes[i] == 0)
                r /= primes[i];
        if (r == 1)
            return m;
    }
}

static void plan_destroy(tide_ctx *ctx, struct tide_fft_plan *p) {
    if (!p)
        return;
#ifdef TIDE_HAVE_CUDA
    if (ctx->backend == TIDE_BACKEND_CUDA)
        tide_fft_plan_destroy_cuda(ctx, p);
    else
#endif
        tide_fft_plan_destroy_cpu(ctx, p);
    free(p);
}

static void cache_destroy(tide_ctx *ctx, void *data) {
    fft_cache *c = data;
    if (!c)
        return;
    tide_correlator_free(ctx, c->kept);
    c->kept = NULL;
    for (int i = 0; i < c->count; i++)
        plan_destroy(ctx, c->plans[i]);
    free(c->plans);
    if (c->work)
        tide_device_free(ctx, c->work);
    free(c);
}

static int cache_get(tide_ctx *ctx, fft_cache **out) {
    fft_cache *c = ctx->ext[TIDE_EXT_FFT].data;
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c)
            return tide_error(TIDE_E_NOMEM, "FFT plan cache");
        ctx->ext[TIDE_EXT_FFT].data = c;
        ctx->ext[TIDE_EXT_FFT].destroy = cache_destroy;
    }
    *out = c;
    return TIDE_OK;
}

void tide_fft_cache_clear(tide_ctx *ctx) {
    if (!ctx || !ctx->ext[TIDE_EXT_FFT].data)
        return;
    fft_cache *c = ctx->ext[TIDE_EXT_FFT].data;
    tide_fft_effort effort = c->effort;
    cache_destroy(ctx, c);
    ctx->ext[TIDE_EXT_FFT].data = NULL;
    /* Keep the chosen effort: it is a setting, not cached state. */
    if (effort != TIDE_FFT_ESTIMATE)
        tide_fft_set_effort(ctx, effort);
}

int tide_fft_cache_size(const tide_ctx *ctx) {
    const fft_cache *c = ctx->ext[TIDE_EXT_FFT].data;
    return c ? c->count : 0;
}

int tide_fft_set_effort(tide_ctx *ctx, tide_fft_effort effort) {
    if (effort != TIDE_FFT_ESTIMATE && effort != TIDE_FFT_MEASURE)
        return tide_error(TIDE_E_INVAL, "FFT planner effort %d is not ESTIMATE or MEASURE",
                          (int)effort);
    fft_cache *c = NULL;
    int st = cache_get(ctx, &c);
    if (st)
        return st;
    c->effort = effort;
    return TIDE_OK;
}

#ifdef TIDE_HAVE_CUDA
/* Make sure the shared workspace holds @p need bytes; on growth re-point every plan. */
static int work_reserve(tide_ctx *ctx, fft_cache *c, size_t need) {
    if (need <= c->work_bytes)
        return TIDE_OK;
    if (c->work)
        tide_device_free(ctx, c->work); /* stream-ordered: earlier transforms still see it */
    c->work = NULL;
    c->work_bytes = 0;
    int st = tide_device_alloc(ctx, need, &c->work);
    if (st)
        return tide_error_prefix(st, "cuFFT workspace of %zu bytes: ", need);
    c->work_bytes = need;
    for (int i = 0; i < c->count; i++)
        if ((st = tide_fft_plan_set_work_cuda(ctx, c->plans[i], c->work)))
            return st;
    return TIDE_OK;
}
#endif

int tide_fft_plan_get(tide_ctx *ctx, tide_fft_dir dir, int64_t nx, int64_t ny, int batch,
                      tide_fft_plan **plan) {
    *plan = NULL;
    if (nx < 1 || ny < 1 || batch < 1)
        return tide_error(TIDE_E_INVAL, "FFT of %lld x %lld (batch %d): sizes must be positive",
                          (long long)nx, (long long)ny, batch);
    if (dir != TIDE_FFT_R2C && dir != TIDE_FFT_C2R)
        return tide_error(TIDE_E_INVAL, "FFT direction %d is not R2C or C2R", (int)dir);
    fft_cache *c = NULL;
    int st = cache_get(ctx, &c);
    if (st)
        return st;
    /* cuFFT ignores the effort; keying CUDA plans by it would only duplicate them. */
    tide_fft_effort effort = ctx->backend == TIDE_BACKEND_CUDA ? TIDE_FFT_ESTIMATE : c->effort;
    for (int i = 0; i < c->count; i++) {
        struct tide_fft_plan *p = c->plans[i];
        if (p->dir == dir && p->nx == nx && p->ny == ny && p->batch == batch &&
            p->effort == effort) {
            *plan = p;
            return TIDE_OK;
        }
    }
    if (c->count == c->cap) {
        int ncap = c->cap ? 2 * c->cap : 8;
        struct tide_fft_plan **n = realloc(c->plans, (size_t)ncap * sizeof *n);
        if (!n)
            return tide_error(TIDE_E_NOMEM, "FFT plan cache");
        c->plans = n;
        c->cap = ncap;
    }
    struct tide_fft_plan *p = calloc(1, sizeof *p);
    if (!p)
        return tide_error(TIDE_E_NOMEM, "FFT plan");
    p->dir = dir;
    p->nx = nx;
    p->ny = ny;
    p->batch = batch;
    p->effort = effort;
    st = TIDE_DISPATCH(ctx, tide_fft_plan_make, p);
#ifdef TIDE_HAVE_CUDA
    if (!st && ctx->backend == TIDE_BACKEND_CUDA) {
        st = work_reserve(ctx, c, p->work_bytes);
        if (!st && c->work)
            st = tide_fft_plan_set_work_cuda(ctx, p, c->work);
    }
#endif
    if (st) {
        if (p->handle)
            plan_destroy(ctx, p);
        else
            free(p);
        return st;
    }
    c->plans[c->count++] = p;
    tide_log(&ctx->log, TIDE_LOG_DEBUG, "fft", "new %s plan %lld x %lld batch %d (%d cached)",
             dir == TIDE_FFT_R2C ? "R2C" : "C2R", (long long)nx, (long long)ny, batch, c->count);
    *plan = p;
    return TIDE_OK;
}

int tide_fft_execute(tide_ctx *ctx, tide_fft_plan *plan, float *data) {
    if (!plan || !data)
        return tide_error(TIDE_E_INVAL, "FFT execute: NULL plan or data");
    return TIDE_DISPATCH(ctx, tide_fft_exec, plan, data);
}

int tide_fft_buffer_alloc(tide_ctx *ctx, int64_t floats, float **buf) {
    *buf = NULL;
    if (floats < 0)
        return tide_error(TIDE_E_INVAL, "FFT buffer of %lld floats", (long long)floats);
#ifdef TIDE_HAVE_CUDA
    if (ctx->backend == TIDE_BACKEND_CUDA) {
        void *p = NULL;
        int st = tide_device_alloc(ctx, (size_t)(floats ? floats : 1) * sizeof(float), &p);
        *buf = p;
        return st;
    }
#endif
    return tide_fft_buffer_alloc_cpu(ctx, floats, buf);
}

void tide_fft_buffer_free(tide_ctx *ctx, float *buf) {
    if (!buf)
        return;
#ifdef TIDE_HAVE_CUDA
    if (ctx->backend == TIDE_BACKEND_CUDA) {
        tide_device_free(ctx, buf);
        return;
    }
#endif
    tide_fft_buffer_free_cpu(ctx, buf);
}

struct tide_correlator *tide_fft_cache_take_correlator(tide_ctx *ctx) {
    fft_cache *c = ctx->ext[TIDE_EXT_FFT].data;
    if (!c)
        return NULL;
    struct tide_correlator *k = c->kept;
    c->kept = NULL;
    return k;
}

int tide_fft_cache_keep_correlator(tide_ctx *ctx, struct tide_correlator *k) {
    fft_cache *c = NULL;
    int st = cache_get(ctx, &c);
    if (st)
        return st;
    if (c->kept != k)
        tide_correlator_free(ctx, c->kept);
    c->kept = k;
    return TIDE_OK;
}
