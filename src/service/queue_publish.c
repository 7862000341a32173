/* queue_publish.c — confirmed publishing of tasks to a worker's queue and taking messages back
 * from its dead-letter queue (queue.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amqp_link.h"
#include "tide/queue.h"
#include "tide/status.h"

struct tide_queue_publisher {
    tide_amqp *pub;    /* confirm mode: the publishes */
    tide_amqp *reader; /* plain: passive declares and basic.get of the dead letters */
    char queue[256], failed[300];
};

int tide_queue_publisher_open(const char *url, const char *queue, tide_queue_publisher **out) {
    *out = NULL;
    if (!queue || !queue[0] || strlen(queue) > 200)
        return tide_error(TIDE_E_INVAL, "queue: a queue name of 1..200 characters is needed");
    tide_amqp_addr a;
    int st = tide_amqp_addr_parse(url, &a);
    if (st)
        return st;
    tide_queue_publisher *p = calloc(1, sizeof *p);
    if (!p)
        return tide_error(TIDE_E_NOMEM, "queue: out of memory");
    snprintf(p->queue, sizeof p->queue, "%s", queue);
    snprintf(p->failed, sizeof p->failed, "%s.failed", queue);
    st = tide_amqp_connect(&a, 10000, "tide submit", &p->pub);
    if (!st)
        st = tide_amqp_declare(p->pub, p->queue, NULL);
    if (!st)
        st = tide_amqp_declare(p->pub, p->failed, NULL);
    if (!st)
        st = tide_amqp_confirm_mode(p->pub);
    if (!st)
        st = tide_amqp_connect(&a, 10000, "tide submit (reader)", &p->reader);
    if (st) {
        tide_queue_publisher_close(p);
        return st;
    }
    *out = p;
    return TIDE_OK;
}

static double unix_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int tide_queue_submit(tide_queue_publisher *p, const tide_task *t) {
    char *body = tide_task_to_json(t);
    if (!body)
        return tide_error(TIDE_E_NOMEM, "queue: out of memory");
    tide_amqp_meta m = {0, NULL, t->id, unix_now()};
    int st = tide_amqp_publish(p->pub, p->queue, body, strlen(body), &m);
    free(body);
    return st;
}

int tide_queue_depth(tide_queue_publisher *p, int64_t *depth) {
    return tide_amqp_declare(p->reader, p->queue, depth);
}

int tide_queue_take_failed(tide_queue_publisher *p, int resubmit, tide_queue_failure *f) {
    memset(f, 0, sizeof *f);
    tide_amqp_delivery d;
    int st = tide_amqp_get(p->reader, p->failed, &d);
    if (st)
        return st;
    if (resubmit) {
        tide_amqp_meta m = {0, NULL, NULL, unix_now()};
        st = tide_amqp_publish(p->pub, p->queue, d.body, d.len, &m);
    }
    /* acked only once it is safely back in the queue: a failure leaves it where it was */
    if (!st)
        st = tide_amqp_ack(p->reader, d.tag);
    if (st) {
        tide_amqp_delivery_free(&d);
        return st;
    }
    f->body = d.body;
    d.body = NULL;
    snprintf(f->reason, sizeof f->reason, "%s", d.reason);
    f->attempts = d.attempts;
    tide_amqp_delivery_free(&d);
    return TIDE_OK;
}

void tide_queue_publisher_close(tide_queue_publisher *p) {
    if (!p)
        return;
    tide_amqp_close(p->pub);
    tide_amqp_close(p->reader);
    free(p);
}
