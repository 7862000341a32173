/* diff_side.c — a job of the difference pipeline beside the caller's work (diff_side.h). */
#include "diff_side.h"

#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "tide/memory.h"
#include "tide/status.h"
#include "tide/timer.h"

static void side_run(tide_diffp_side *s, tide_ctx *ctx) {
    s->st = s->fn(ctx, s->arg);
    if (s->st)
        snprintf(s->err, sizeof s->err, "%s", tide_error_detail());
}

static void *side_thread(void *arg) {
    tide_diffp_side *s = arg;
    /* this thread's OpenMP teams: the helper's share of the cores */
    omp_set_num_threads(s->helper->threads > 0 ? s->helper->threads : 1);
    side_run(s, s->helper);
    return NULL;
}

void tide_diffp_side_start(tide_ctx *ctx, tide_diffp_side *s, int (*fn)(tide_ctx *, void *),
                           void *arg) {
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->fn = fn;
    s->arg = arg;
    tide_ctx *h = NULL;
    if (ctx->backend == TIDE_BACKEND_CUDA && tide_ctx_helper(ctx, &h) == TIDE_OK) {
        s->helper = h;
        tide_device_reset_peak(h);
        if (pthread_create(&s->thread, NULL, side_thread, s) == 0) {
            s->running = 1;
            s->threads = ctx->threads;
            s->omp_threads = omp_get_max_threads();
            ctx->threads = ctx->threads > h->threads ? ctx->threads - h->threads : 1;
            omp_set_num_threads(ctx->threads);
            return;
        }
        s->helper = NULL;
    }
    tide_error_clear(); /* no helper: the job runs here, now */
    side_run(s, ctx);
}

int tide_diffp_side_join(tide_diffp_side *s, size_t *peak) {
    if (peak)
        *peak = 0;
    if (s->running) {
        pthread_join(s->thread, NULL);
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
