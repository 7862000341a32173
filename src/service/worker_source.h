/* worker_source.h — where a worker's messages come from and where they go: a RabbitMQ queue
 * (worker_amqp.c) or a list of task messages held in memory (worker_list.c, what
 * `tide bench --worker` measures without a broker). worker.c's loop runs on either.
 *
 * Every call returns 0 or a negative TIDE_E_*; an error of open, next, ack, forward or
 * requeue means the link is lost: the loop closes it, drops what it took on it and opens it
 * again with back-off. */
#ifndef TIDE_SERVICE_WORKER_SOURCE_H
#define TIDE_SERVICE_WORKER_SOURCE_H
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "amqp_link.h"
#include "tide/worker.h"

typedef struct tide_worker_source {
    void *impl;
    char where[600];  /**< the source for messages ("amqp://HOST:PORT/VHOST queue NAME") */
    char failed[512]; /**< the name of the dead-letter queue, for messages */
    /** Connect; *depth gets the messages ready. */
    int (*open)(void *impl, int prefetch, int64_t *depth);
    /** The next message within @p timeout_ms: 0 and *d, 1 none, negative: lost. */
    int (*next)(void *impl, int timeout_ms, tide_amqp_delivery *d);
    /** Settle message @p tag as done, durably. */
    int (*ack)(void *impl, uint64_t tag);
    /** Publish @p body again with @p m (to the dead-letter queue when @p to_failed, else to the
     *  queue) and settle @p tag, together or not at all. */
    int (*forward)(void *impl, int to_failed, uint64_t tag, const char *body, size_t len,
                   const tide_amqp_meta *m);
    /** Give message @p tag back for another consumer. */
    int (*requeue)(void *impl, uint64_t tag);
    /** Close the link (NULL-safe on a closed one). */
    void (*close)(void *impl);
    /** Free the source. */
    void (*destroy)(void *impl);
} tide_worker_source;

/** The RabbitMQ source of @p o (queue_url, queue_name). Errors: the URL's. */
int tide_worker_source_amqp(const tide_worker_opts *o, tide_worker_source *s);

/** The list source over @p n messages (copied). Errors: TIDE_E_NOMEM. */
int tide_worker_source_list(const char *const *messages, int64_t n, tide_worker_source *s);

/** Messages still unsettled in a list source (the loop stops when none is left). */
int64_t tide_worker_source_list_left(const tide_worker_source *s);

/** The worker's loop on @p src (worker.h says what it does); @p drain: stop once the source
 *  has no message left and nothing is in hand (a list source). */
int tide_worker_loop(const tide_worker_opts *o, tide_worker_source *src, int drain,
                     volatile sig_atomic_t *stop, tide_worker_stats *stats,
                     tide_worker_task_hook hook, void *user);

#endif
