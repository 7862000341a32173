/* timer.h — per-stage timers. On a CUDA context a stage is timed with CUDA events on the
 * context's stream (device time, not launch time); on the CPU with a monotonic clock. Timings
 * accumulate per stage name in the context and can be listed for logs and benchmarks. */
#ifndef TIDE_TIMER_H
#define TIDE_TIMER_H
#include "tide/export.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tide_ctx;

/** One running measurement. */
typedef struct tide_timer {
    const char *stage; /**< stage name (a string literal or one that outlives the timer) */
    double t0;         /**< host start time, seconds */
    void *ev0, *ev1;   /**< cudaEvent_t pair on a CUDA context */
} tide_timer;

/** Start timing @p stage. */
TIDE_API int tide_timer_start(struct tide_ctx *ctx, tide_timer *t, const char *stage);

/** Stop, add the elapsed milliseconds to the stage's total in the context, and return them
 *  in *ms if non-NULL (waits for the stream on a CUDA context). */
TIDE_API int tide_timer_stop(struct tide_ctx *ctx, tide_timer *t, double *ms);

/** Add @p ms measured by the caller to @p stage's total (one call): for work that runs
 *  beside the stream, e.g. on the host while the device computes, which a stream-event
 *  timer cannot see. */
TIDE_API int tide_timer_add(struct tide_ctx *ctx, const char *stage, double ms);

/** Number of stages timed so far. */
TIDE_API int tide_timer_count(const struct tide_ctx *ctx);

/** The i-th stage: its name, total milliseconds and number of calls. */
TIDE_API int tide_timer_get(const struct tide_ctx *ctx, int i, const char **stage, double *total_ms,
                            int *calls);

/** Add every stage total of @p from (e.g. a helper context, ctx.h) to @p to, calls included,
 *  and clear @p from's. */
TIDE_API int tide_timer_merge(struct tide_ctx *to, struct tide_ctx *from);

/** Forget all stage totals. */
TIDE_API void tide_timer_clear(struct tide_ctx *ctx);

/** Host monotonic clock in seconds. */
TIDE_API double tide_now(void);

#ifdef __cplusplus
}
#endif
#endif
