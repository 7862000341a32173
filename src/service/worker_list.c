/* worker_list.c — a worker source over task messages held in memory: a queue without a
 * broker, for `tide bench --worker` (the engine's rate and latencies on their own). A task
 * published again goes to the tail; one dead-lettered is counted and dropped. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tide/status.h"
#include "worker_source.h"

typedef struct msg {
    const char *body; /* one of the source's bodies */
    size_t len;
    int attempts;
    double submitted;
} msg;

typedef struct list_source {
    char **bodies; /* the messages as given, owned; every msg points into these */
    int64_t nbodies;
    msg *ready; /* a ring of messages not yet handed out */
    int64_t cap, head, n;
    msg *out; /* handed out, by tag - 1 */
    int64_t nout, capout;
    int64_t unsettled; /* handed out and not settled + ready */
} list_source;

static int push(list_source *q, msg m) {
    if (q->n == q->cap) {
        int64_t cap = q->cap ? 2 * q->cap : 64;
        msg *r = malloc((size_t)cap * sizeof *r);
        if (!r)
            return tide_error(TIDE_E_NOMEM, "worker: out of memory");
        for (int64_t i = 0; i < q->n; i++)
            r[i] = q->ready[(q->head + i) % q->cap];
        free(q->ready);
        q->ready = r;
        q->cap = cap;
        q->head = 0;
    }
    q->ready[(q->head + q->n++) % q->cap] = m;
    return TIDE_OK;
}

static int l_open(void *impl, int prefetch, int64_t *depth) {
    (void)prefetch;
    *depth = ((list_source *)impl)->n;
    return TIDE_OK;
}

static int l_next(void *impl, int timeout_ms, tide_amqp_delivery *d) {
    (void)timeout_ms;
    list_source *q = impl;
    memset(d, 0, sizeof *d);
    if (!q->n)
        return 1;
    if (q->nout == q->capout) {
        int64_t cap = q->capout ? 2 * q->capout : 64;
        msg *o = realloc(q->out, (size_t)cap * sizeof *o);
        if (!o)
            return tide_error(TIDE_E_NOMEM, "worker: out of memory");
        q->out = o;
        q->capout = cap;
    }
    msg m = q->ready[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
    q->out[q->nout++] = m;
    d->tag = (uint64_t)q->nout;
    d->attempts = m.attempts;
    d->submitted = m.submitted;
    d->len = m.len;
    d->body = malloc(m.len + 1);
    if (!d->body)
        return tide_error(TIDE_E_NOMEM, "worker: out of memory");
    memcpy(d->body, m.body, m.len + 1);
    return 0;
}

static int l_ack(void *impl, uint64_t tag) {
    (void)tag;
    ((list_source *)impl)->unsettled--;
    return TIDE_OK;
}

static int l_forward(void *impl, int to_failed, uint64_t tag, const char *body, size_t len,
                     const tide_amqp_meta *m) {
    list_source *q = impl;
    (void)body;
    (void)len;
    if (to_failed) {
        q->unsettled--;
        return TIDE_OK;
    }
    msg again = q->out[tag - 1];
    again.attempts = m->attempts;
    return push(q, again);
}

static int l_requeue(void *impl, uint64_t tag) {
    list_source *q = impl;
    return push(q, q->out[tag - 1]);
}

static void l_close(void *impl) {
    (void)impl;
}

static void l_destroy(void *impl) {
    list_source *q = impl;
    for (int64_t i = 0; i < q->nbodies; i++)
        free(q->bodies[i]);
    free(q->bodies);
    free(q->ready);
    free(q->out);
    free(q);
}

int tide_worker_source_list(const char *const *messages, int64_t n, tide_worker_source *s) {
    memset(s, 0, sizeof *s);
    list_source *q = calloc(1, sizeof *q);
    if (!q)
        return tide_error(TIDE_E_NOMEM, "worker: out of memory");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    const double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    q->bodies = calloc(n > 0 ? (size_t)n : 1, sizeof *q->bodies);
    if (!q->bodies) {
        l_destroy(q);
        return tide_error(TIDE_E_NOMEM, "worker: out of memory");
    }
    for (int64_t i = 0; i < n; i++) {
        size_t len = strlen(messages[i]);
        q->bodies[i] = malloc(len + 1);
        if (!q->bodies[i]) {
            l_destroy(q);
            return tide_error(TIDE_E_NOMEM, "worker: out of memory");
        }
        memcpy(q->bodies[i], messages[i], len + 1);
        q->nbodies = i + 1;
        msg m = {q->bodies[i], len, 0, now}; /* all submitted at once: a backlog */
        if (push(q, m)) {
            l_destroy(q);
            return tide_error(TIDE_E_NOMEM, "worker: out of memory");
        }
    }
    q->unsettled = n;
    snprintf(s->where, sizeof s->where, "a list of %lld tasks", (long long)n);
    snprintf(s->failed, sizeof s->failed, "(the list's failures)");
    s->impl = q;
    s->open = l_open;
    s->next = l_next;
    s->ack = l_ack;
    s->forward = l_forward;
    s->requeue = l_requeue;
    s->close = l_close;
    s->destroy = l_destroy;
    return TIDE_OK;
}

int64_t tide_worker_source_list_left(const tide_worker_source *s) {
    return ((const list_source *)s->impl)->unsettled;
}
