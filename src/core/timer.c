/* timer.c — per-stage timers: CUDA events on a CUDA context, monotonic clock on the CPU. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core_internal.h"
#include "tide/ctx.h"
#include "tide/status.h"
#include "tide/timer.h"

#ifdef TIDE_HAVE_CUDA
#include <cuda_runtime.h>
#include "core/gpu/cuda_check.h"
#endif

typedef struct stage_total {
    char name[48];
    double ms;
    int calls;
} stage_total;

struct tide_timer_set {
    stage_total *items;
    int count, cap;
};

double tide_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int tide_timer_start(tide_ctx *ctx, tide_timer *t, const char *stage) {
    memset(t, 0, sizeof *t);
    t->stage = stage;
#ifdef TIDE_HAVE_CUDA
    if (ctx->backend == TIDE_BACKEND_CUDA) {
        cudaEvent_t e0, e1;
        TIDE_CUDA_TRY(cudaEventCreate(&e0));
        TIDE_CUDA_TRY(cudaEventCreate(&e1));
        TIDE_CUDA_TRY(cudaEventRecord(e0, (cudaStream_t)ctx->stream));
        t->ev0 = e0;
        t->ev1 = e1;
    }
#endif
    t->t0 = tide_now();
    return TIDE_OK;
}

static int add_total_n(tide_ctx *ctx, const char *stage, double ms, int calls) {
    if (!ctx->timers) {
        ctx->timers = calloc(1, sizeof *ctx->timers);
        if (!ctx->timers)
            return tide_error(TIDE_E_NOMEM, "timers");
    }
    struct tide_timer_set *s = ctx->timers;
    for (int i = 0; i < s->count; i++) {
        if (!strcmp(s->items[i].name, stage)) {
            s->items[i].ms += ms;
            s->items[i].calls += calls;
            return TIDE_OK;
        }
    }
    if (s->count == s->cap) {
        int ncap = s->cap ? 2 * s->cap : 16;
        stage_total *n = realloc(s->items, (size_t)ncap * sizeof *n);
        if (!n)
            return tide_error(TIDE_E_NOMEM, "timers");
        s->items = n;
        s->cap = ncap;
    }
    stage_total *it = &s->items[s->count++];
    snprintf(it->name, sizeof it->name, "%s", stage);
    it->ms = ms;
    it->calls = calls;
    return TIDE_OK;
}

static int add_total(tide_ctx *ctx, const char *stage, double ms) {
    return add_total_n(ctx, stage, ms, 1);
}

int tide_timer_stop(tide_ctx *ctx, tide_timer *t, double *ms) {
    double elapsed = 0.0;
#ifdef TIDE_HAVE_CUDA
    if (t->ev0) {
        cudaEvent_t e0 = t->ev0, e1 = t->ev1;
        float f = 0.0f;
        cudaError_t e = cudaEventRecord(e1, (cudaStream_t)ctx->stream);
        if (e == cudaSuccess)
            e = cudaEventSynchronize(e1);
        if (e == cudaSuccess)
            e = cudaEventElapsedTime(&f, e0, e1);
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        t->ev0 = t->ev1 = NULL;
        if (e != cudaSuccess)
            return tide_error(TIDE_E_CUDA, "timer for stage %s: %s", t->stage,
                              cudaGetErrorString(e));
        elapsed = f;
    } else
#endif
    {
        elapsed = 1e3 * (tide_now() - t->t0);
    }
    if (ms)
        *ms = elapsed;
    return add_total(ctx, t->stage ? t->stage : "?", elapsed);
}

int tide_timer_add(tide_ctx *ctx, const char *stage, double ms) {
    return add_total(ctx, stage ? stage : "?", ms);
}

int tide_timer_count(const tide_ctx *ctx) {
    return ctx->timers ? ctx->timers->count : 0;
}

int tide_timer_get(const tide_ctx *ctx, int i, const char **stage, double *total_ms, int *calls) {
    if (i < 0 || i >= tide_timer_count(ctx))
        return tide_error(TIDE_E_RANGE, "timer index %d out of range", i);
    const stage_total *it = &ctx->timers->items[i];
    if (stage)
        *stage = it->name;
    if (total_ms)
        *total_ms = it->ms;
    if (calls)
        *calls = it->calls;
    return TIDE_OK;
}

int tide_timer_merge(tide_ctx *to, tide_ctx *from) {
    int st = TIDE_OK;
    for (int i = 0; !st && i < tide_timer_count(from); i++)
        st = add_total_n(to, from->timers->items[i].name, from->timers->items[i].ms,
                         from->timers->items[i].calls);
    tide_timer_clear(from);
    return st;
}

void tide_timer_clear(tide_ctx *ctx) {
    if (ctx->timers)
        ctx->timers->count = 0;
}

void tide_timer_set_free(tide_ctx *ctx) {
    if (!ctx->timers)
        return;
    free(ctx->timers->items);
    free(ctx->timers);
    ctx->timers = NULL;
}
