/* side_job.c — a pipeline job beside the caller's work (side_job.h). */
#include "pipeline/side_job.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/memory.h"
#include "tide/status.h"
#include "tide/timer.h"

static void side_run(tide_pipe_side *s, tide_ctx *ctx) {
    s->st = s->fn(ctx, s->arg);
    if (s->st)
        snprintf(s->err, sizeof s->err, "%s", tide_error_detail());
}

/* The side jobs' thread: one per context, kept from its first job to the context's end, so
 * its OpenMP team is made once, not once per job (a new thread's first parallel region
 * starts a new team of threads). One job at a time. */
typedef struct side_worker {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    tide_pipe_side *job; /* the job given and not yet finished; NULL when idle */
    int quit;
} side_worker;

static void *worker_main(void *arg) {
    side_worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->job && !w->quit)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->job)
            break; /* quit, idle */
        tide_pipe_side *s = w->job;
        pthread_mutex_unlock(&w->mu);
        /* this thread's OpenMP teams: the helper's share of the cores */
        omp_set_num_threads(s->helper->threads > 0 ? s->helper->threads : 1);
        side_run(s, s->helper);
        pthread_mutex_lock(&w->mu);
        w->job = NULL;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void worker_destroy(tide_ctx *ctx, void *data) {
    (void)ctx;
    side_worker *w = data;
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* The context's worker, started on first use; NULL when no thread can be made. */
static side_worker *worker_of(tide_ctx *ctx) {
    side_worker *w = ctx->ext[TIDE_EXT_SIDE].data;
    if (w)
        return w;
    w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return NULL;
    }
    ctx->ext[TIDE_EXT_SIDE].data = w;
    ctx->ext[TIDE_EXT_SIDE].destroy = worker_destroy;
    return w;
}

void tide_pipe_side_start(tide_ctx *ctx, tide_pipe_side *s, int (*fn)(tide_ctx *, void *),
                           void *arg) {
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->fn = fn;
    s->arg = arg;
    tide_ctx *h = NULL;
    side_worker *w = NULL;
    if (ctx->backend == TIDE_BACKEND_CUDA && tide_ctx_helper(ctx, &h) == TIDE_OK &&
        (w = worker_of(ctx)) != NULL) {
        pthread_mutex_lock(&w->mu);
        const int idle = w->job == NULL;
        if (idle) {
            s->helper = h;
            tide_device_reset_peak(h);
            s->running = 1;
            s->threads = ctx->threads;
            s->omp_threads = omp_get_max_threads();
            ctx->threads = ctx->threads > h->threads ? ctx->threads - h->threads : 1;
            omp_set_num_threads(ctx->threads);
            w->job = s;
            pthread_cond_broadcast(&w->cv);
        }
        pthread_mutex_unlock(&w->mu);
        if (idle)
            return;
    }
    tide_error_clear(); /* no helper, or it is busy: the job runs here, now */
    side_run(s, ctx);
}

int tide_pipe_side_join(tide_pipe_side *s, size_t *peak) {
    if (peak)
        *peak = 0;
    if (s->running) {
        side_worker *w = s->ctx->ext[TIDE_EXT_SIDE].data;
        pthread_mutex_lock(&w->mu);
        while (w->job == s)
            pthread_cond_wait(&w->cv, &w->mu);
        pthread_mutex_unlock(&w->mu);
        s->running = 0;
        s->ctx->threads = s->threads;
        omp_set_num_threads(s->omp_threads);
    }
    if (s->helper) {
        if (peak) {
            size_t cur = 0;
            tide_device_usage(s->helper, &cur, peak);
        }
        const int tst = tide_timer_merge(s->ctx, s->helper);
        if (!s->st)
            s->st = tst;
        else
            return tide_error(s->st, "%s", s->err);
    }
    return s->st;
}
