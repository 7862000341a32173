/* worker_amqp.c — the worker's RabbitMQ source: one connection in transaction mode, so that
 * a publish and the ack of the message it replaces commit together. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/status.h"
#include "worker_source.h"

typedef struct amqp_source {
    tide_amqp_addr addr;
    char queue[256], failed[300];
    tide_amqp *l;
} amqp_source;

static int a_open(void *impl, int prefetch, int64_t *depth) {
    amqp_source *a = impl;
    int st = tide_amqp_connect(&a->addr, 10000, "tide worker", &a->l);
    if (!st)
        st = tide_amqp_declare(a->l, a->queue, depth);
    if (!st)
        st = tide_amqp_declare(a->l, a->failed, NULL);
    if (!st)
        st = tide_amqp_tx_mode(a->l);
    if (!st)
        st = tide_amqp_consume(a->l, a->queue, prefetch);
    if (st) {
        tide_amqp_close(a->l);
        a->l = NULL;
    }
    return st;
}

static int a_next(void *impl, int timeout_ms, tide_amqp_delivery *d) {
    amqp_source *a = impl;
    return tide_amqp_next(a->l, timeout_ms, d);
}

static int a_ack(void *impl, uint64_t tag) {
    amqp_source *a = impl;
    int st = tide_amqp_ack(a->l, tag);
    return st ? st : tide_amqp_commit(a->l);
}

static int a_forward(void *impl, int to_failed, uint64_t tag, const char *body, size_t len,
                     const tide_amqp_meta *m) {
    amqp_source *a = impl;
    int st = tide_amqp_publish(a->l, to_failed ? a->failed : a->queue, body, len, m);
    if (!st)
        st = tide_amqp_ack(a->l, tag);
    return st ? st : tide_amqp_commit(a->l);
}

static int a_requeue(void *impl, uint64_t tag) {
    amqp_source *a = impl;
    int st = tide_amqp_requeue(a->l, tag);
    return st ? st : tide_amqp_commit(a->l);
}

static void a_close(void *impl) {
    amqp_source *a = impl;
    tide_amqp_close(a->l);
    a->l = NULL;
}

static void a_destroy(void *impl) {
    a_close(impl);
    free(impl);
}

int tide_worker_source_amqp(const tide_worker_opts *o, tide_worker_source *s) {
    memset(s, 0, sizeof *s);
    if (strlen(o->queue_name) > 200)
        return tide_error(TIDE_E_INVAL, "worker: queue name longer than 200 characters");
    amqp_source *a = calloc(1, sizeof *a);
    if (!a)
        return tide_error(TIDE_E_NOMEM, "worker: out of memory");
    int st = tide_amqp_addr_parse(o->queue_url, &a->addr);
    if (st) {
        free(a);
        return st;
    }
    snprintf(a->queue, sizeof a->queue, "%s", o->queue_name);
    snprintf(a->failed, sizeof a->failed, "%s.failed", o->queue_name);
    char url[600];
    tide_amqp_addr_text(&a->addr, url, sizeof url);
    snprintf(s->where, sizeof s->where, "%.400s queue %s", url, a->queue);
    snprintf(s->failed, sizeof s->failed, "%s", a->failed);
    s->impl = a;
    s->open = a_open;
    s->next = a_next;
    s->ack = a_ack;
    s->forward = a_forward;
    s->requeue = a_requeue;
    s->close = a_close;
    s->destroy = a_destroy;
    return TIDE_OK;
}
