/* batch_mpi.c — tide-batch-mpi, `tide batch` under mpirun (cmd_batch.c execs it there): the
 * same options, manifest, runner and summary (batch.h), the tasks handed out dynamically.
 *
 * A separate program so that only it links libmpi: every other tide command starts without
 * OpenMPI's initialisation. Rank 0 dispatches from its main thread (the only thread that
 * calls MPI: MPI_THREAD_FUNNELED), polling with MPI_Iprobe and a short sleep so that it does
 * not spin a core away from the ranks that compute, and, unless --rank0 dispatch, runs tasks
 * itself on a second thread that takes them from the same counter. A rank asks for its next
 * task by sending the result of the last one; rank 0 answers with a task's index or -1
 * (stop). Every rank has its own runner: device --device or its local rank modulo the GPUs
 * seen, threads --threads or the host's cores over the ranks on the host. An SQLite store is
 * opened once by rank 0 before any task is handed out (its schema made by one process), then
 * written by every rank: the store's busy timeout (5 s) lets each wait for another's
 * transaction. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "progress.h"
#include "tide/store.h"
#include "tide/timer.h"

enum { TAG_ASK = 1, TAG_GIVE = 2, MSG_MAX = 8192 };

/* The fixed part of a rank's message: the result of its last task, if any. */
typedef struct ask_head {
    int32_t has_result, no_runner, outcome, status;
    int64_t idx, nsources, ncandidates;
    double ms_total;
} ask_head;

/* Rank 0's state, shared by the dispatcher and its own worker thread. */
typedef struct dispatch {
    pthread_mutex_t mu;
    int64_t next; /* the next task to hand out */
    const tide_batch_args *a;
    const tide_batch_manifest *m;
    tide_batch_result *res;
    tide_progress pg;
    tide_task_runner *r; /* rank 0's own, or NULL */
} dispatch;

static int64_t take(dispatch *d) {
    pthread_mutex_lock(&d->mu);
    const int64_t i = d->next < d->m->n ? d->next++ : -1;
    pthread_mutex_unlock(&d->mu);
    return i;
}

static void *local_worker(void *arg) {
    dispatch *d = arg;
    for (int64_t i; (i = take(d)) >= 0;) {
        tide_batch_result one;
        tide_batch_run_entry(d->r, &d->m->e[i], d->a->retries, 0, &one);
        pthread_mutex_lock(&d->mu);
        d->res[i] = one;
        tide_progress_step(&d->pg, tide_batch_failed(&one));
        pthread_mutex_unlock(&d->mu);
    }
    return NULL;
}

static char *dup_field(const char *s) {
    return s[0] ? strdup(s) : NULL;
}

/* Take a rank's message: its result into d->res. */
static void take_result(dispatch *d, const char *buf, int len, int rank) {
    ask_head h;
    memcpy(&h, buf, sizeof h);
    if (!h.has_result || h.idx < 0 || h.idx >= d->m->n)
        return;
    const char *reason = buf + sizeof h;
    const char *output = reason + strnlen(reason, (size_t)len - sizeof h) + 1;
    tide_batch_result r;
    memset(&r, 0, sizeof r);
    r.outcome = h.outcome, r.status = h.status, r.rank = rank;
    r.nsources = h.nsources, r.ncandidates = h.ncandidates, r.ms_total = h.ms_total;
    r.reason = dup_field(reason);
    r.output = output < buf + len ? dup_field(output) : NULL;
    pthread_mutex_lock(&d->mu);
    d->res[h.idx] = r;
    tide_progress_step(&d->pg, tide_batch_failed(&r));
    pthread_mutex_unlock(&d->mu);
}

/* Rank 0: answer every rank's asks until each has been told to stop. */
static void serve(dispatch *d, int nworkers) {
    char *buf = malloc(MSG_MAX);
    int active = nworkers;
    while (buf && active > 0) {
        int flag = 0;
        MPI_Status s;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_ASK, MPI_COMM_WORLD, &flag, &s);
        if (!flag) { /* idle: leave the core to the ranks that compute */
            const struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
            continue;
        }
        int len = 0;
        MPI_Recv(buf, MSG_MAX, MPI_BYTE, s.MPI_SOURCE, TAG_ASK, MPI_COMM_WORLD, &s);
        MPI_Get_count(&s, MPI_BYTE, &len);
        if (len < (int)sizeof(ask_head))
            continue;
        take_result(d, buf, len, s.MPI_SOURCE);
        ask_head h;
        memcpy(&h, buf, sizeof h);
        int64_t give = h.no_runner ? -1 : take(d);
        MPI_Send(&give, 1, MPI_INT64_T, s.MPI_SOURCE, TAG_GIVE, MPI_COMM_WORLD);
        if (give < 0)
            active--;
    }
    free(buf);
}

/* Wait for @p rq without spinning: MPI's blocking calls poll a core at full speed, and on an
 * oversubscribed host (more ranks than cores) a rank waiting for its next task, or for the
 * others to finish, would take that core from a rank that computes. */
static void wait_gently(MPI_Request *rq) {
    const struct timespec ts = {0, 200000};
    for (int done = 0;;) {
        MPI_Test(rq, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        nanosleep(&ts, NULL);
    }
}

/* The exit code of rank 0 to every rank, waited for gently. */
static void share_rc(int *rc) {
    MPI_Request rq;
    MPI_Ibcast(rc, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq);
    wait_gently(&rq);
}

/* A rank other than 0: ask, run, ask again with the result. */
static void work(const tide_batch_args *a, const tide_batch_manifest *m, tide_task_runner *r,
                 int rank) {
    char *buf = malloc(MSG_MAX);
    ask_head h;
    memset(&h, 0, sizeof h);
    h.no_runner = !r || !buf;
    int len = (int)sizeof h + 2;
    for (;;) {
        if (buf) {
            memcpy(buf, &h, sizeof h);
            if (!h.has_result)
                buf[sizeof h] = buf[sizeof h + 1] = 0;
        }
        MPI_Request sq;
        MPI_Isend(buf ? buf : (char *)&h, buf ? len : (int)sizeof h, MPI_BYTE, 0, TAG_ASK,
                  MPI_COMM_WORLD, &sq);
        wait_gently(&sq);
        int64_t idx = -1;
        MPI_Request rq;
        MPI_Irecv(&idx, 1, MPI_INT64_T, 0, TAG_GIVE, MPI_COMM_WORLD, &rq);
        wait_gently(&rq);
        if (idx < 0 || idx >= m->n)
            break;
        tide_batch_result one;
        tide_batch_run_entry(r, &m->e[idx], a->retries, rank, &one);
        h.has_result = 1, h.idx = idx, h.outcome = one.outcome, h.status = one.status;
        h.nsources = one.nsources, h.ncandidates = one.ncandidates, h.ms_total = one.ms_total;
        /* reason and output, each NUL-terminated and cut to fit */
        const size_t room = MSG_MAX - sizeof h;
        const int nr = snprintf(buf + sizeof h, room / 4, "%s", one.reason ? one.reason : "");
        const size_t at = sizeof h + (size_t)(nr < (int)(room / 4) ? nr : (int)(room / 4) - 1) + 1;
        const int no = snprintf(buf + at, MSG_MAX - at, "%s", one.output ? one.output : "");
        len = (int)(at + (size_t)(no < (int)(MSG_MAX - at) ? no : (int)(MSG_MAX - at) - 1) + 1);
        tide_batch_result_free(&one);
    }
    free(buf);
}

/* An SQLite store made by one process before the ranks write it. */
static void prime_store(const char *uri) {
    if (!uri || !uri[0] || tide_store_uri_is_pg(uri))
        return;
    tide_store *s = NULL;
    if (!tide_store_open(uri, NULL, &s))
        tide_store_close(s);
}

/* Standard output and error to /dev/null while a rank other than 0 parses what rank 0
 * reports: 0, or -1 when they stay as they are. */
static int saved_fd[2] = {-1, -1};

static int quiet_begin(void) {
    fflush(stdout);
    fflush(stderr);
    saved_fd[0] = dup(1), saved_fd[1] = dup(2);
    FILE *null = fopen("/dev/null", "w");
    if (saved_fd[0] < 0 || saved_fd[1] < 0 || !null) {
        if (null)
            fclose(null);
        return -1;
    }
    dup2(fileno(null), 1);
    dup2(fileno(null), 2);
    fclose(null);
    return 0;
}

static void quiet_end(int q) {
    if (q < 0)
        return;
    fflush(stdout);
    fflush(stderr);
    for (int k = 0; k < 2; k++) {
        dup2(saved_fd[k], k + 1);
        close(saved_fd[k]);
        saved_fd[k] = -1;
    }
}

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

int main(int argc, char **argv) {
    int prov = 0, rank = 0, size = 1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* argv[1] is "batch" (tide execs this program with its own arguments) */
    const int skip = argc > 1 && !strcmp(argv[1], "batch") ? 1 : 0;
    /* rank 0 alone says what is wrong with the command line (or prints --help) */
    const int quiet = rank != 0 ? quiet_begin() : -1;
    tide_batch_args a;
    int rc = tide_batch_parse_args(argc - skip, argv + skip, &a);
    tide_batch_manifest m;
    memset(&m, 0, sizeof m);
    if (!rc) {
        const int st = tide_batch_manifest_read(a.manifest, a.outdir, &m);
        if (st)
            rc = tide_cli_fail("batch", st);
    }
    quiet_end(quiet);
    /* one rank's usage or manifest error stops all */
    int worst = rc < 0 ? 0 : rc, any = 0;
    MPI_Allreduce(&worst, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rc < 0 || any) {
        rc = rc < 0 ? 0 : any;
        goto out;
    }
    const int lrank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", rank);
    const int lsize = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", size);
    int device = -1, ngpu = 0;
    if (!a.device_given && !tide_cuda_available(&ngpu) && ngpu > 0)
        device = lrank % ngpu;
    if (!a.threads_given) {
        const long cores = sysconf(_SC_NPROCESSORS_ONLN);
        const int share = (int)(cores > 0 ? cores : 1) / (lsize > 0 ? lsize : 1);
        a.com.ctx_opt.threads = share > 0 ? share : 1;
    }
    const int dispatch_only = a.dispatch_only && size > 1;
    const double t0 = tide_now(); /* as tide batch: the runners' start counts */
    tide_task_runner *r = rank == 0 && dispatch_only ? NULL : tide_batch_runner(&a, device);
    if (rank != 0) {
        work(&a, &m, r, rank);
        tide_task_runner_destroy(r);
        share_rc(&rc);
        goto out;
    }
    /* rank 0 */
    dispatch d;
    memset(&d, 0, sizeof d);
    pthread_mutex_init(&d.mu, NULL);
    d.a = &a, d.m = &m, d.r = r;
    d.res = calloc((size_t)(m.n ? m.n : 1), sizeof *d.res);
    const char *store = r ? tide_task_runner_store(r) : a.store ? a.store : "";
    rc = d.res ? tide_batch_check_outputs(&a, &m, store) : 1;
    if (rc)
        d.next = m.n; /* hand nothing out: every rank is told to stop */
    else
        prime_store(store);
    tide_progress_start(&d.pg, m.n, "tasks", a.progress, a.com.json);
    pthread_t th;
    const int local = !rc && r && !pthread_create(&th, NULL, local_worker, &d);
    serve(&d, size - 1);
    if (local)
        pthread_join(th, NULL);
    tide_progress_end(&d.pg);
    if (!rc) {
        for (int64_t i = d.next; i < m.n; i++) { /* every runner failed to start */
            d.res[i].outcome = TIDE_TASK_FAILED;
            d.res[i].reason = strdup("no rank could run it (no runner)");
        }
        rc = tide_batch_summary(&a, &m, d.res, size, tide_now() - t0, tide_task_runner_ctx(r));
    }
    for (int64_t i = 0; d.res && i < m.n; i++)
        tide_batch_result_free(&d.res[i]);
    free(d.res);
    pthread_mutex_destroy(&d.mu);
    tide_task_runner_destroy(r);
    share_rc(&rc);
out:
    tide_batch_manifest_free(&m);
    tide_batch_args_free(&a);
    MPI_Finalize();
    return rc;
}
