/* reduce_mosaic_workers.c — the CCDs of a mosaic exposure reduced by two workers at once
 * (reduce_mosaic.h): the job's context and its helper (tide_ctx_helper: same device and pool,
 * its own stream and plans), each on a host thread of its own, taking the next CCD as it
 * finishes one; each reads its CCD (to the device on a CUDA context), sets it up, reduces and
 * calibrates it.
 *
 * Why: a 2k x 4k CCD is too small to fill the GPU, and one context runs its host work, its
 * transfers and its kernels one after the other: 62 CCDs back to back on one context took
 * 1.8 s on the H200, ~30 ms a CCD, with one CCD read ahead on a thread. With two workers one
 * CCD's host work and reading overlap the other's kernels.
 *
 * The writer (reduce_mosaic.c) takes the CCDs in order as they complete, so the catalog's
 * HDUs keep the exposure's order. A CCD's error detail is per thread: the worker keeps it
 * in the CCD's error field. An error that is not the CCD's own stops the pool: no worker
 * takes another CCD. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce_mosaic.h"
#include "tide/status.h"
#include "tide/timer.h"

enum { POOL_WORKERS = 2 };

typedef struct pool_worker {
    struct tide_reduce_ccd_pool *pool;
    tide_reduce_job job; /* the exposure's job on this worker's context */
    pthread_t thread;
    int started;
} pool_worker;

struct tide_reduce_ccd_pool {
    const tide_reduce_request *rq;
    tide_reduce_mosaic_report *out;
    tide_header *hdrs;
    int next;    /* the next CCD a worker takes */
    int stop;    /* no worker takes another */
    int *done;   /* per CCD: reduced (its status in status[k]) */
    int *status; /* per CCD */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pool_worker w[POOL_WORKERS];
    int nw;
};

static double now_ms(void) {
    return 1e3 * tide_now();
}

/* Read, set up, reduce and calibrate CCD @p c on @p j into c->rep; an error's detail is kept
 * in c->error. */
static int reduce_ccd(tide_reduce_job *j, const tide_reduce_request *rq, tide_reduce_ccd *c,
                      tide_header *hdr) {
    const double t0 = now_ms();
    tide_image im;
    int st = tide_fits_read_image_at(
        j->ctx, c->spec, &im, hdr, j->ctx->backend == TIDE_BACKEND_CUDA ? TIDE_DEVICE : TIDE_HOST);
    c->rep.width = im.width, c->rep.height = im.height;
    c->rep.image_id = -1;
    c->rep.ms_read = now_ms() - t0;
    tide_pipeline_params p;
    tide_calib_params cp;
    if (!st)
        st = tide_reduce_frame_setup(j, rq, c->spec, hdr, &p, &cp, &c->rep.calibrated);
    if (!st)
        st = tide_reduce_frame_compute(j, &im, hdr, &p, &cp, &c->rep);
    tide_image_free(j->ctx, &im);
    if (!st)
        tide_reduce_report_incomplete(c->spec, &c->rep);
    if (st) {
        snprintf(c->error, sizeof c->error, "%s", tide_error_detail());
        tide_error_clear();
    }
    return st;
}

static void *worker_main(void *arg) {
    pool_worker *w = arg;
    struct tide_reduce_ccd_pool *p = w->pool;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        const int k = p->stop || p->next >= p->out->nccd ? -1 : p->next++;
        pthread_mutex_unlock(&p->lock);
        if (k < 0)
            break;
        const int rs = reduce_ccd(&w->job, p->rq, &p->out->ccd[k], &p->hdrs[k]);
        pthread_mutex_lock(&p->lock);
        p->status[k] = rs;
        p->done[k] = 1;
        if (rs && !tide_reduce_ccd_own_error(rs))
            p->stop = 1;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
    }
    return NULL;
}

static void pool_free(struct tide_reduce_ccd_pool *p) {
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->changed);
    free(p->done);
    free(p->status);
    free(p);
}

int tide_reduce_ccd_pool_start(tide_reduce_job *j, const tide_reduce_request *rq,
                               tide_reduce_mosaic_report *out, tide_header *hdrs,
                               tide_reduce_ccd_pool **pool) {
    *pool = NULL;
    struct tide_reduce_ccd_pool *p = calloc(1, sizeof *p);
    if (!p)
        return tide_error(TIDE_E_NOMEM, "%s: out of memory", rq->frame);
    p->rq = rq, p->out = out, p->hdrs = hdrs;
    p->done = calloc((size_t)out->nccd, sizeof *p->done);
    p->status = calloc((size_t)out->nccd, sizeof *p->status);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    if (!p->done || !p->status) {
        pool_free(p);
        return tide_error(TIDE_E_NOMEM, "%s: out of memory", rq->frame);
    }
    tide_ctx *helper = NULL;
    const int nw = out->nccd > 1 && !tide_ctx_helper(j->ctx, &helper) ? POOL_WORKERS : 1;
    tide_error_clear(); /* no helper: the job's context alone */
    for (int i = 0; i < nw; i++) {
        pool_worker *w = &p->w[i];
        w->pool = p;
        w->job = *j;
        if (i > 0)
            w->job.ctx = helper;
        w->started = !pthread_create(&w->thread, NULL, worker_main, w);
        p->nw += w->started;
    }
    if (!p->nw) { /* no thread could be made: the CCDs on this one, in order */
        pool_worker *w = &p->w[0];
        worker_main(w);
    }
    *pool = p;
    return 0;
}

int tide_reduce_ccd_pool_wait(tide_reduce_ccd_pool *p, int k, int *reduced) {
    pthread_mutex_lock(&p->lock);
    /* a CCD no worker took (the pool stopped) will never be done */
    while (!p->done[k] && !(p->stop && k >= p->next))
        pthread_cond_wait(&p->changed, &p->lock);
    *reduced = p->done[k];
    const int st = p->done[k] ? p->status[k] : 0;
    pthread_mutex_unlock(&p->lock);
    return st;
}

void tide_reduce_ccd_pool_finish(tide_reduce_ccd_pool *p) {
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < POOL_WORKERS; i++)
        if (p->w[i].started)
            pthread_join(p->w[i].thread, NULL);
    pool_free(p);
}
