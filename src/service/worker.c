/* worker.c — `tide worker`'s loop: one broker thread (this one) and runner threads joined by
 * two in-memory queues, tasks to run and results to settle (worker.h says what happens to a
 * message). */
#include "tide/worker.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crash_ledger.h"
#include "worker_source.h"
#include "tide/status.h"

void tide_worker_opts_init(tide_worker_opts *o) {
    memset(o, 0, sizeof *o);
    o->queue_name = "frames";
    o->runners = 2;
    o->max_attempts = 3;
    tide_task_runner_opts_init(&o->runner);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One message in hand: taken from the broker on link generation @c gen, run by a runner, then
 * settled by the broker thread. */
typedef struct item {
    struct item *next;
    uint64_t tag;
    unsigned gen;
    int attempts; /* x-tide-attempts: failed runs before this one */
    int crashes;  /* runs that crashed a worker (crash_ledger.h), counted as attempts */
    uint64_t key; /* the body's key in the crash ledger */
    double submitted;
    char *body; /* the message as it came, published again as it is */
    size_t len;
    tide_task task;
    tide_task_result res;
    int abandoned; /* stopped while waiting for the store: give the message back */
} item;

typedef struct fifo {
    item *head, *tail;
    int64_t n;
} fifo;

static void fifo_push(fifo *q, item *it) {
    it->next = NULL;
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
    q->n++;
}

static item *fifo_pop(fifo *q) {
    item *it = q->head;
    if (it) {
        q->head = it->next;
        if (!q->head)
            q->tail = NULL;
        q->n--;
    }
    return it;
}

static void item_free(item *it) {
    if (!it)
        return;
    tide_task_free(&it->task);
    free(it->body);
    free(it);
}

typedef struct worker {
    const tide_worker_opts *o;
    volatile sig_atomic_t *stop;
    pthread_mutex_t mu;
    pthread_cond_t more; /* todo gained an item, or closing */
    fifo todo, settled;
    int closing;     /* runners: finish what you hold and leave */
    int64_t running; /* items a runner holds */
    tide_task_runner **runners;
    pthread_t *threads;
    int nthreads;
    const char *crash_on; /* TIDE_WORKER_CRASH_ON: tasks whose path holds it crash (tests) */
} worker;

/* Sleep @p s seconds in small steps, returning early when the worker is told to stop. */
static void nap(worker *w, double s) {
    double until = mono_s() + s;
    while (!*w->stop && mono_s() < until) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* A runner thread: tasks until closing. A task that asks to be retried is run again with
 * back-off, in hand, until it ends another way or the worker stops. */
typedef struct runner_arg {
    worker *w;
    tide_task_runner *r;
} runner_arg;

static void *runner_main(void *p) {
    runner_arg *a = p;
    worker *w = a->w;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->todo.head && !w->closing)
            pthread_cond_wait(&w->more, &w->mu);
        item *it = w->closing && !w->todo.head ? NULL : fifo_pop(&w->todo);
        if (it)
            w->running++;
        pthread_mutex_unlock(&w->mu);
        if (!it)
            break;
        tide_log_set_frame(it->task.id);
        crash_ledger_running(it->key);
        double backoff = 0.5;
        for (;;) {
            if (w->crash_on && strstr(it->task.path, w->crash_on))
                raise(SIGSEGV); /* fault injection (TIDE_WORKER_CRASH_ON): a poison message */
            tide_task_run(a->r, &it->task, &it->res);
            if (it->res.outcome != TIDE_TASK_RETRY)
                break;
            tide_log(&w->o->log, TIDE_LOG_WARN, "worker",
                     "%s: will retry in %.1f s, the frame stays in hand: %s", it->task.id, backoff,
                     it->res.reason);
            nap(w, backoff);
            if (*w->stop) {
                it->abandoned = 1;
                break;
            }
            backoff = backoff * 2 > 30 ? 30 : backoff * 2;
        }
        crash_ledger_running(0);
        tide_log_set_frame(NULL);
        pthread_mutex_lock(&w->mu);
        w->running--;
        fifo_push(&w->settled, it);
        pthread_mutex_unlock(&w->mu);
    }
    free(a);
    return NULL;
}

/* ---- the source side --------------------------------------------------------------------- */

/* The source and whether it is up; gen counts the links opened, so that a message taken on a
 * lost link (which the broker hands out again) is never settled on a later one. */
typedef struct link_state {
    tide_worker_source *src;
    int up;
    unsigned gen;
} link_state;

/* Open the source; 0 or its error. */
static int link_open(worker *w, link_state *ls, tide_worker_stats *stats) {
    int64_t depth = 0;
    int pf = w->o->prefetch > 0 ? w->o->prefetch : w->nthreads + 1;
    int st = ls->src->open(ls->src->impl, pf, &depth);
    if (st)
        return st;
    ls->up = 1;
    ls->gen++;
    if (stats) {
        stats->queue_depth = depth;
        stats->connected = 1;
    }
    tide_log(&w->o->log, TIDE_LOG_INFO, "worker", "connected to %s (%lld ready)", ls->src->where,
             (long long)depth);
    return TIDE_OK;
}

/* Drop a lost link: the broker gives its unacked messages to the next consumer, so the tasks
 * taken on it that no runner has begun are dropped too (they come again). */
static void link_lost(worker *w, link_state *ls, tide_worker_stats *stats) {
    tide_log(&w->o->log, TIDE_LOG_WARN, "worker", "lost the broker: %s", tide_error_detail());
    ls->src->close(ls->src->impl);
    ls->up = 0;
    if (stats) {
        stats->connected = 0;
        stats->reconnects++;
    }
    pthread_mutex_lock(&w->mu);
    item *it;
    while ((it = fifo_pop(&w->todo)))
        item_free(it);
    pthread_mutex_unlock(&w->mu);
}

/* Settle one item whose runner is done with it. Returns the link's error, if any. */
static int settle(worker *w, link_state *ls, item *it, tide_worker_stats *stats,
                  tide_worker_task_hook hook, void *user, int64_t *ended) {
    if (it->gen != ls->gen || !ls->up)
        return TIDE_OK; /* taken on a lost link: the broker hands it out again */
    tide_worker_source *src = ls->src;
    const tide_task_result *r = &it->res;
    const char *id = it->task.id;
    int st = TIDE_OK;
    const char *status = "done";
    tide_log_set_frame(id);
    if (it->abandoned) {
        st = src->requeue(src->impl, it->tag);
        tide_log_set_frame(NULL);
        return st;
    }
    if (r->outcome == TIDE_TASK_DONE || r->outcome == TIDE_TASK_INCOMPLETE) {
        st = src->ack(src->impl, it->tag);
        if (!st)
            crash_ledger_settled(it->key);
        if (r->outcome == TIDE_TASK_INCOMPLETE)
            status = "incomplete";
        if (!st && stats)
            r->outcome == TIDE_TASK_DONE ? stats->done++ : stats->incomplete++;
        if (!st)
            tide_log(&w->o->log, TIDE_LOG_INFO, "worker", "%s: %s in %.1f ms%s%s", id, status,
                     r->ms_total, r->reason[0] ? ": " : "", r->reason);
    } else {
        const int last = it->attempts + it->crashes + 1 >= w->o->max_attempts;
        tide_amqp_meta m = {it->attempts + 1, r->reason, id, it->submitted};
        st = src->forward(src->impl, last, it->tag, it->body, it->len, &m);
        if (!st && last)
            crash_ledger_settled(it->key);
        status = last ? "failed" : "retried";
        if (!st && stats)
            last ? stats->dead_lettered++ : stats->failed_retried++;
        if (!st && last)
            tide_log(&w->o->log, TIDE_LOG_ERROR, "worker", "%s: failed %d times, to %s: %s", id,
                     it->attempts + 1, src->failed, r->reason);
        else if (!st)
            tide_log(&w->o->log, TIDE_LOG_WARN, "worker", "%s: failed (attempt %d of %d): %s", id,
                     it->attempts + 1, w->o->max_attempts, r->reason);
    }
    if (!st) {
        (*ended)++;
        if (hook)
            hook(user, &it->task, r, status, it->submitted > 0 ? now_s() - it->submitted : -1);
    }
    tide_log_set_frame(NULL);
    return st;
}

/* A message that is not a task: to the dead-letter queue at once, with why. */
static int reject_malformed(worker *w, link_state *ls, const tide_amqp_delivery *d,
                            tide_worker_stats *stats, int64_t *ended) {
    char reason[1024];
    snprintf(reason, sizeof reason, "%s", tide_error_detail());
    tide_amqp_meta m = {d->attempts + 1, reason, NULL, d->submitted};
    int st = ls->src->forward(ls->src->impl, 1, d->tag, d->body, d->len, &m);
    if (!st) {
        if (stats)
            stats->malformed++;
        (*ended)++;
        tide_log(&w->o->log, TIDE_LOG_ERROR, "worker", "a message that is not a task, to %s: %s",
                 ls->src->failed, reason);
    }
    return st;
}

/* A task that crashed a worker as often as it may fail: to the dead-letter queue, unrun. */
static int reject_poison(worker *w, link_state *ls, item *it, tide_worker_stats *stats,
                         int64_t *ended) {
    char reason[256];
    snprintf(reason, sizeof reason, "crashed the worker %d time%s (%s)", it->crashes,
             it->crashes == 1 ? "" : "s", crash_ledger_signal(it->key));
    tide_amqp_meta m = {it->attempts + it->crashes, reason, it->task.id, it->submitted};
    int st = ls->src->forward(ls->src->impl, 1, it->tag, it->body, it->len, &m);
    if (!st) {
        crash_ledger_settled(it->key);
        if (stats)
            stats->dead_lettered++;
        (*ended)++;
        tide_log_set_frame(it->task.id);
        tide_log(&w->o->log, TIDE_LOG_ERROR, "worker", "%s: %s, to %s", it->task.id, reason,
                 ls->src->failed);
        tide_log_set_frame(NULL);
    }
    item_free(it);
    return st;
}

/* Take one delivery: parse it and hand it to the runners (or dead-letter it). */
static int take(worker *w, link_state *ls, tide_amqp_delivery *d, tide_worker_stats *stats,
                int64_t *ended) {
    item *it = calloc(1, sizeof *it);
    if (!it)
        return tide_error(TIDE_E_NOMEM, "worker: out of memory");
    if (tide_task_parse(d->body, d->len, &it->task)) {
        free(it);
        return reject_malformed(w, ls, d, stats, ended);
    }
    it->tag = d->tag;
    it->gen = ls->gen;
    it->attempts = d->attempts;
    it->key = crash_ledger_key(d->body, d->len);
    it->crashes = crash_ledger_count(it->key);
    it->submitted = d->submitted;
    it->body = d->body;
    it->len = d->len;
    d->body = NULL;
    if (stats && d->redelivered)
        stats->redelivered++;
    if (it->crashes > 0 && it->attempts + it->crashes >= w->o->max_attempts)
        return reject_poison(w, ls, it, stats, ended);
    pthread_mutex_lock(&w->mu);
    fifo_push(&w->todo, it);
    pthread_cond_signal(&w->more);
    pthread_mutex_unlock(&w->mu);
    return TIDE_OK;
}

static int start_runners(worker *w) {
    int n = w->o->runners > 0 ? w->o->runners : 1;
    w->runners = calloc((size_t)n, sizeof *w->runners);
    w->threads = calloc((size_t)n, sizeof *w->threads);
    if (!w->runners || !w->threads)
        return tide_error(TIDE_E_NOMEM, "worker: out of memory");
    for (int i = 0; i < n; i++) {
        int st = tide_task_runner_create(&w->o->runner, &w->runners[i]);
        if (st)
            return st;
    }
    for (int i = 0; i < n; i++) {
        runner_arg *a = malloc(sizeof *a);
        if (!a)
            return tide_error(TIDE_E_NOMEM, "worker: out of memory");
        a->w = w;
        a->r = w->runners[i];
        if (pthread_create(&w->threads[i], NULL, runner_main, a)) {
            free(a);
            return tide_error(TIDE_E_INTERNAL, "worker: cannot start a runner thread: %s",
                              strerror(errno));
        }
        w->nthreads++;
    }
    return TIDE_OK;
}

static void stop_runners(worker *w) {
    pthread_mutex_lock(&w->mu);
    w->closing = 1;
    pthread_cond_broadcast(&w->more);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->nthreads; i++)
        pthread_join(w->threads[i], NULL);
    int n = w->o->runners > 0 ? w->o->runners : 1;
    for (int i = 0; w->runners && i < n; i++)
        tide_task_runner_destroy(w->runners[i]);
    free(w->runners);
    free(w->threads);
    item *it;
    while ((it = fifo_pop(&w->todo)))
        item_free(it);
    while ((it = fifo_pop(&w->settled)))
        item_free(it);
}

int tide_worker_loop(const tide_worker_opts *o, tide_worker_source *src, int drain,
                     volatile sig_atomic_t *stop, tide_worker_stats *stats,
                     tide_worker_task_hook hook, void *user) {
    link_state ls = {src, 0, 0};
    worker w;
    memset(&w, 0, sizeof w);
    w.o = o;
    w.stop = stop;
    w.crash_on = getenv("TIDE_WORKER_CRASH_ON");
    if (w.crash_on && !*w.crash_on)
        w.crash_on = NULL;
    int st = o->state_dir ? crash_ledger_open(o->state_dir, o->queue_name) : TIDE_OK;
    if (st)
        return st;
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.more, NULL);
    st = start_runners(&w);
    if (st) {
        stop_runners(&w);
        crash_ledger_close();
        return st;
    }
    double backoff = 0.5, last_msg = mono_s();
    int64_t ended = 0;
    int draining = 0;
    for (;;) {
        if (!draining && (*stop || (o->max_tasks > 0 && ended >= o->max_tasks) ||
                          (o->idle_exit_s > 0 && mono_s() - last_msg > o->idle_exit_s) ||
                          (drain && tide_worker_source_list_left(src) == 0))) {
            draining = 1;
            tide_log(&o->log, TIDE_LOG_INFO, "worker",
                     "stopping: finishing the frames in hand, giving the rest back");
            /* tasks not begun go back to the queue */
            pthread_mutex_lock(&w.mu);
            item *it;
            fifo back = {0};
            while ((it = fifo_pop(&w.todo)))
                fifo_push(&back, it);
            pthread_mutex_unlock(&w.mu);
            while ((it = fifo_pop(&back))) {
                if (ls.up && it->gen == ls.gen)
                    src->requeue(src->impl, it->tag);
                item_free(it);
            }
        }
        if (!ls.up) {
            if (draining)
                break; /* nothing in hand can be acked without a link; the broker requeues */
            if (link_open(&w, &ls, stats)) {
                tide_log(&o->log, TIDE_LOG_WARN, "worker",
                         "cannot reach the broker (%s); again in %.1f s", tide_error_detail(),
                         backoff);
                nap(&w, backoff);
                backoff = backoff * 2 > 30 ? 30 : backoff * 2;
                continue;
            }
            backoff = 0.5;
        }
        /* settle what the runners finished */
        for (;;) {
            pthread_mutex_lock(&w.mu);
            item *it = fifo_pop(&w.settled);
            pthread_mutex_unlock(&w.mu);
            if (!it)
                break;
            st = settle(&w, &ls, it, stats, hook, user, &ended);
            item_free(it);
            if (st) {
                link_lost(&w, &ls, stats);
                break;
            }
        }
        if (!ls.up)
            continue;
        pthread_mutex_lock(&w.mu);
        int64_t in_hand = w.todo.n + w.running + w.settled.n;
        int64_t waiting = w.todo.n;
        pthread_mutex_unlock(&w.mu);
        if (stats)
            stats->in_hand = in_hand;
        if (draining) {
            if (in_hand == 0)
                break;
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        /* Always wait on the link, even with every runner busy: librabbitmq answers the
         * broker's heartbeats only inside its calls, and the prefetch bounds what comes. A
         * list source has no prefetch: it is asked only while a runner could start. */
        if (drain && waiting >= w.nthreads) {
            struct timespec ts = {0, 200 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        tide_amqp_delivery d;
        int got = src->next(src->impl, 100, &d);
        if (got < 0) {
            link_lost(&w, &ls, stats);
            continue;
        }
        if (got == 0) {
            last_msg = mono_s();
            st = take(&w, &ls, &d, stats, &ended);
            tide_amqp_delivery_free(&d);
            if (st)
                link_lost(&w, &ls, stats);
        } else if (in_hand > 0) {
            last_msg = mono_s();
            if (drain) {
                struct timespec ts = {0, 200 * 1000};
                nanosleep(&ts, NULL);
            }
        }
    }
    stop_runners(&w);
    crash_ledger_close();
    src->close(src->impl);
    if (stats)
        stats->connected = 0;
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.more);
    tide_log(&o->log, TIDE_LOG_INFO, "worker", "stopped after %lld tasks", (long long)ended);
    return TIDE_OK;
}

int tide_worker_run(const tide_worker_opts *o, volatile sig_atomic_t *stop,
                    tide_worker_stats *stats, tide_worker_task_hook hook, void *user) {
    if (!o || !stop || !o->queue_url || !o->queue_name || !o->queue_name[0])
        return tide_error(TIDE_E_INVAL, "worker: no queue given");
    tide_worker_source src;
    int st = tide_worker_source_amqp(o, &src);
    if (st)
        return st;
    st = tide_worker_loop(o, &src, 0, stop, stats, hook, user);
    src.destroy(src.impl);
    return st;
}

int tide_worker_run_list(const tide_worker_opts *o, const char *const *messages, int64_t n,
                         tide_worker_stats *stats, tide_worker_task_hook hook, void *user) {
    if (!o || (n > 0 && !messages))
        return tide_error(TIDE_E_INVAL, "worker: no messages given");
    tide_worker_source src;
    int st = tide_worker_source_list(messages, n, &src);
    if (st)
        return st;
    static volatile sig_atomic_t never;
    st = tide_worker_loop(o, &src, 1, &never, stats, hook, user);
    src.destroy(src.impl);
    return st;
}
