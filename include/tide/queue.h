/* queue.h — putting tasks (task.h) on a worker's RabbitMQ queue, and reading back the ones
 * that failed: what `tide submit` and `tide watch` do.
 *
 * Publishing is confirmed: tide_queue_submit returns once the broker has written the message
 * to its durable queue (a persistent message, so a broker restart keeps it). Each message
 * carries the task as JSON, the task's id as its message id and its submission time (the
 * header x-tide-submitted), from which the worker measures the latency from submit to commit.
 * Credentials come from the environment (worker.h). */
#ifndef TIDE_QUEUE_H
#define TIDE_QUEUE_H
#include <stdint.h>

#include "tide/export.h"
#include "tide/task.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tide_queue_publisher tide_queue_publisher;

/** Connect to @p url (amqp://HOST[:PORT][/VHOST]), declare the durable queue @p queue and its
 *  dead-letter queue QUEUE.failed, and ask for publisher confirms. Errors: TIDE_E_INVAL (the
 *  URL, credentials in it), TIDE_E_IO (the broker cannot be reached or refused). */
TIDE_API int tide_queue_publisher_open(const char *url, const char *queue,
                                       tide_queue_publisher **out);

/** Publish @p t and wait for the broker's confirm. Errors: TIDE_E_NOMEM, TIDE_E_IO. */
TIDE_API int tide_queue_submit(tide_queue_publisher *p, const tide_task *t);

/** Messages ready in the queue now (a passive look). */
TIDE_API int tide_queue_depth(tide_queue_publisher *p, int64_t *depth);

/** One message taken from the dead-letter queue. */
typedef struct tide_queue_failure {
    char *body;        /**< the message as it was submitted (free()) */
    char reason[1024]; /**< why it failed (x-tide-reason) */
    int attempts;      /**< how many times it ran */
} tide_queue_failure;

/** Take the next message of QUEUE.failed: 0 and *f filled, 1 when it is empty. With
 *  @p resubmit the message is first published again to the queue (attempts counted from 0)
 *  and confirmed, so it is never lost between the two queues. */
TIDE_API int tide_queue_take_failed(tide_queue_publisher *p, int resubmit, tide_queue_failure *f);

/** Close the connection. NULL is a no-op. */
TIDE_API void tide_queue_publisher_close(tide_queue_publisher *p);

#ifdef __cplusplus
}
#endif
#endif
