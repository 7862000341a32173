/* worker.h — `tide worker`: a long-lived process that takes tasks (task.h) from a RabbitMQ
 * queue and runs them on warm contexts, unattended.
 *
 * One thread holds the broker link; runner threads (each with its own warm task runner:
 * context, configuration, jobs, store) run the tasks, so the store's commit of one frame
 * overlaps the computation of the next. A message is acked only after its task's outputs and
 * store rows are committed: a worker killed at any moment loses nothing (the broker gives the
 * unacked messages to the next consumer) and stores nothing twice (the store keys a frame by
 * its file's checksum, so a repeat replaces it).
 *
 * What happens to a message:
 *   - done or incomplete (task.h): acked;
 *   - not a task (not JSON, a bad member): to the dead-letter queue NAME.failed at once, with
 *     the reason in the header x-tide-reason;
 *   - failed (a missing or malformed file...): published again to NAME with x-tide-attempts
 *     counted up, and after max_attempts to NAME.failed with the reason;
 *   - retry (the store is unreachable, out of device memory): kept in hand and run again with
 *     back-off (0.5 s doubling to 30 s), never acked before it is committed.
 *   - a task that crashes the process (a fault in tide or a library it calls) is written down
 *     in the crash ledger of state_dir before the process dies; the next worker counts those
 *     crashes as attempts and, at max_attempts, sends the message to NAME.failed unrun with
 *     x-tide-reason "crashed the worker N times (SIGSEGV)" — a poison message ends instead of
 *     killing every worker forever. A worker killed from outside (SIGKILL) counts nothing.
 * Each of these publishes and its ack are one AMQP transaction: they happen together or not at
 * all. The broker going away: the worker reconnects with the same back-off; the frames in hand
 * are finished and the broker gives their messages again (running a frame twice stores it
 * once). Stop (SIGTERM: the flag the caller passes): take nothing more, finish the frames in
 * hand, commit, ack, give the rest back to the queue, return 0. */
#ifndef TIDE_WORKER_H
#define TIDE_WORKER_H
#include <signal.h>
#include <stdint.h>

#include "tide/export.h"
#include "tide/log.h"
#include "tide/task.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How a worker runs; tide_worker_opts_init gives the values in brackets. */
typedef struct tide_worker_opts {
    const char *queue_url;        /**< amqp://HOST[:PORT][/VHOST] (credentials: amqp_link) [NULL:
                                       required] */
    const char *queue_name;       /**< the queue of tasks; failures go to NAME.failed ["frames"] */
    int prefetch;                 /**< unacked messages the broker may hand out [runners + 1] */
    int runners;                  /**< runner threads, each a warm context [2] */
    int max_attempts;             /**< runs of a failing task before it is dead-lettered [3] */
    tide_task_runner_opts runner; /**< configuration, store, outputs, backend, device */
    int64_t max_tasks;            /**< stop after this many tasks ended [0: no limit] */
    double idle_exit_s;           /**< stop after this long with no message [0: never] */
    const char *state_dir;        /**< where the crash ledger lives (created 0700) [NULL: no
                                       ledger, crashes are not counted] */
    tide_logger log;              /**< where the worker logs (every line names its frame) */
} tide_worker_opts;

/** Fill @p o with the defaults in brackets. */
TIDE_API void tide_worker_opts_init(tide_worker_opts *o);

/** What a worker did, and what it sees now (read by its metrics; counters only grow). */
typedef struct tide_worker_stats {
    int64_t done, incomplete, failed_retried, dead_lettered, malformed, store_retries, reconnects,
        redelivered;
    int connected;       /**< 1 while the broker link is up */
    int64_t queue_depth; /**< messages ready in the queue when last declared */
    int64_t in_hand;     /**< tasks taken and not yet acked */
} tide_worker_stats;

/** Called by the worker after each message is settled (from the broker thread), for metrics:
 *  the task, its result, what became of the message (@p status: "done", "incomplete",
 *  "retried": published again to run again, "failed": dead-lettered), and the seconds since
 *  it was first submitted (-1 when unknown). May be NULL. */
typedef void (*tide_worker_task_hook)(void *user, const tide_task *t, const tide_task_result *r,
                                      const char *status, double e2e_s);

/** Run until @p *stop becomes non-zero (a signal handler sets it), max_tasks ended or the
 *  idle time ran out. @p stats (may be NULL) is updated as the worker goes, under no lock:
 *  each field is written by one thread and read as a snapshot. Returns 0 after a clean stop;
 *  a negative status when it could not start (runners, configuration, a bad URL) — a broker
 *  that is down is waited for, not an error. */
TIDE_API int tide_worker_run(const tide_worker_opts *o, volatile sig_atomic_t *stop,
                             tide_worker_stats *stats, tide_worker_task_hook hook, void *user);

/** The same engine on @p n task messages held in memory instead of a queue (all submitted at
 *  the call): runner threads, settling, retries and dead letters as above, returning once every
 *  message is settled. What `tide bench --worker` measures: the worker's rate and latencies
 *  without a broker. @p o's queue fields are not used. */
TIDE_API int tide_worker_run_list(const tide_worker_opts *o, const char *const *messages, int64_t n,
                                  tide_worker_stats *stats, tide_worker_task_hook hook, void *user);

#ifdef __cplusplus
}
#endif
#endif
