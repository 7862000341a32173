/* amqp_link.h — one AMQP 0-9-1 connection to a RabbitMQ broker (librabbitmq), as the worker
 * and the publishers use it: a broker address without credentials, credentials from the
 * environment, durable queues, persistent messages with tide's headers, publisher confirms,
 * transactions (a publish and an ack that happen together or not at all) and consuming with
 * manual acks.
 *
 * Every call returns 0 or a negative TIDE_E_*: TIDE_E_INVAL for a bad address,
 * TIDE_E_IO when the broker cannot be reached or the connection was lost (the caller
 * reconnects), TIDE_E_DB never. The detail names the broker and what it answered. One link is
 * used by one thread. */
#ifndef TIDE_SERVICE_AMQP_LINK_H
#define TIDE_SERVICE_AMQP_LINK_H
#include <stddef.h>
#include <stdint.h>

/** A broker's address: amqp://HOST[:PORT][/VHOST]. */
typedef struct tide_amqp_addr {
    char host[256];
    int port;        /**< 5672 when the URL names none */
    char vhost[256]; /**< "/" when the URL names none; %2F-decoded */
    char user[128];  /**< from TIDE_AMQP_USER, else "guest" */
    char pass[256];  /**< from TIDE_AMQP_PASSWORD or the file TIDE_AMQP_PASSWORD_FILE names,
                          else "guest" (which RabbitMQ accepts from loopback only) */
} tide_amqp_addr;

/** Parse @p url and read the credentials from the environment. A URL carrying credentials
 *  (amqp://user:pass@host) is refused: they would show in `ps` and in logs. */
int tide_amqp_addr_parse(const char *url, tide_amqp_addr *a);

/** The text of the address for messages: "amqp://HOST:PORT/VHOST" (no credentials). */
void tide_amqp_addr_text(const tide_amqp_addr *a, char *out, size_t n);

/** A message's tide headers. */
typedef struct tide_amqp_meta {
    int attempts;        /**< x-tide-attempts: how many times it ran and failed [0] */
    const char *reason;  /**< x-tide-reason: why it is in the dead-letter queue [NULL] */
    const char *task_id; /**< message-id [NULL] */
    double submitted;    /**< x-tide-submitted: Unix time of the first submission, s [0: none] */
} tide_amqp_meta;

/** One delivered message. The body and strings stay valid until tide_amqp_delivery_free. */
typedef struct tide_amqp_delivery {
    uint64_t tag;      /**< the delivery tag to ack */
    int redelivered;   /**< the broker delivered it before (a consumer went away) */
    int attempts;      /**< x-tide-attempts, 0 when absent */
    char *body;        /**< the body, NUL-terminated */
    size_t len;        /**< its length */
    char reason[1024]; /**< x-tide-reason, "" when absent */
    double submitted;  /**< x-tide-submitted, 0 when absent */
} tide_amqp_delivery;

/** Release @p d's body and zero it. */
void tide_amqp_delivery_free(tide_amqp_delivery *d);

typedef struct tide_amqp tide_amqp;

/** Connect and log in, open channel 1; @p timeout_ms bounds the TCP connect and each later
 *  round trip. @p name is the connection's name shown by the broker ("tide worker", ...). */
int tide_amqp_connect(const tide_amqp_addr *a, int timeout_ms, const char *name, tide_amqp **out);

/** Declare durable queue @p queue (no auto-delete); *depth (may be NULL) gets the messages
 *  ready in it. A queue that exists with other arguments is an error naming it. */
int tide_amqp_declare(tide_amqp *l, const char *queue, int64_t *depth);

/** Put the channel in confirm mode: every publish then waits for the broker's ack. */
int tide_amqp_confirm_mode(tide_amqp *l);

/** Put the channel in transaction mode: publishes and acks take effect at tide_amqp_commit. */
int tide_amqp_tx_mode(tide_amqp *l);

/** Commit the channel's transaction. */
int tide_amqp_commit(tide_amqp *l);

/** Publish @p body (@p n bytes, JSON) to @p queue through the default exchange as a persistent
 *  message with @p meta's headers (NULL: none). In confirm mode, returns once the broker has
 *  taken responsibility for it (TIDE_E_IO when it refused it: nack or unroutable). */
int tide_amqp_publish(tide_amqp *l, const char *queue, const void *body, size_t n,
                      const tide_amqp_meta *meta);

/** Start consuming @p queue with manual acks, at most @p prefetch unacked messages. */
int tide_amqp_consume(tide_amqp *l, const char *queue, int prefetch);

/** Wait up to @p timeout_ms for the next delivery: 0 and *d filled, 1 when none came in time,
 *  or TIDE_E_IO when the connection or channel was closed (the detail says why). */
int tide_amqp_next(tide_amqp *l, int timeout_ms, tide_amqp_delivery *d);

/** Ack delivery @p tag (in transaction mode: at the next commit). */
int tide_amqp_ack(tide_amqp *l, uint64_t tag);

/** Give delivery @p tag back to the queue (requeue) for another consumer. */
int tide_amqp_requeue(tide_amqp *l, uint64_t tag);

/** Take one message from @p queue without consuming (basic.get): 0 and *d filled, 1 when the
 *  queue is empty. It stays the broker's until tide_amqp_ack(d->tag) (closing the link without
 *  the ack gives it back). Used to read a dead-letter queue. */
int tide_amqp_get(tide_amqp *l, const char *queue, tide_amqp_delivery *d);

/** Close the channel and the connection, politely when they are still open. NULL: no-op. */
void tide_amqp_close(tide_amqp *l);

#endif
