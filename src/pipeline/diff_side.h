/* diff_side.h — work of the difference pipeline run beside the caller's: on a CUDA context, a
 * job on a second host thread with the context's helper (ctx.h: same device and pool, its own
 * stream), while the calling thread goes on with the context. The two split the CPU threads:
 * an OpenMP team larger than its share waits at every barrier for members the other thread
 * has preempted. Without a helper (CPU backend) the job runs at once on the context.
 * Internal to the pipeline. */
#ifndef TIDE_DIFF_SIDE_H
#define TIDE_DIFF_SIDE_H
#include <pthread.h>
#include <stddef.h>

#include "tide/ctx.h"

typedef struct tide_diffp_side {
    tide_ctx *ctx;    /* the caller's context */
    tide_ctx *helper; /* the job's context when it runs beside, else NULL */
    int (*fn)(tide_ctx *ctx, void *arg);
    void *arg;
    pthread_t thread;
    int running;              /* a thread runs fn */
    int threads, omp_threads; /* the caller's shares before the split */
    int st;                   /* fn's status */
    char err[512];            /* its error detail (per thread: carried back in here) */
} tide_diffp_side;

/** Start fn(job context, arg): beside the caller on the helper when @p ctx is a CUDA context
 *  (fn must then leave the helper's stream synchronised: tide_sync), else at once on @p ctx.
 *  While it runs beside, @p ctx has the CPU threads the helper does not. */
void tide_diffp_side_start(tide_ctx *ctx, tide_diffp_side *s, int (*fn)(tide_ctx *, void *),
                           void *arg);

/** Wait for the job; give the caller its threads back and merge the helper's timers into
 *  @p ctx. Returns fn's status, its detail restored on this thread; *peak (when non-NULL)
 *  receives the helper's peak device bytes (0 when the job ran on @p ctx). */
int tide_diffp_side_join(tide_diffp_side *s, size_t *peak);

#endif
