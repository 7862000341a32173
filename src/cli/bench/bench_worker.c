/* bench_worker.c — `tide bench --worker`: the worker's sustained rate, frame file on local
 * disk to committed store, beside the cold `tide reduce` of today on the same frames in the
 * same call (issue 17's speed target).
 *
 * The worker's engine runs on a list of task messages (tide_worker_run_list): the runner
 * threads, settling and the store exactly as `tide worker` runs them, without a broker (the
 * broker's own cost per message is measured by tests/cli/test_worker.sh's machine, not here).
 * All tasks are submitted at once, a backlog: the rate is the sustained one; the latencies are
 * each frame's service time (taken to committed) and its time from the backlog's start. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "cli/cli.h"
#include "tide/worker.h"

static const char *help =
    "usage: tide bench --worker [OPTIONS]\n"
    "\n"
    "Simulate one frame, write N copies of it (one header card apart, so each has its own\n"
    "checksum and is a new frame for the store), reduce them all through the worker's engine\n"
    "into a store and report the sustained rate, then run `tide reduce` cold (a process per\n"
    "frame) on a few of them into another store of the same kind.\n"
    "\n"
    "options:\n"
    "  --size WxH           frame size [2048x2048]\n"
    "  --stars N            stars in the frame [2000]\n"
    "  --frames N           frames through the worker [100]\n"
    "  --runners LIST       runner counts to measure, comma-separated [1,2]\n"
    "  --cold N             frames reduced cold by tide reduce [5]\n"
    "  --store URI          the store (an SQLite file is made in the work directory when it\n"
    "                       is not given; a PostgreSQL URI is used as it is, emptied first)\n"
    "  --workdir DIR        where frames and stores go [a new /tmp/tide-bench-worker.*]\n"
    "  --json FILE          the figures as JSON too (\"-\": only JSON, on stdout)\n";

typedef struct lat {
    double *svc, *e2e;
    int64_t n, cap;
} lat;

static void on_task(void *user, const tide_task *t, const tide_task_result *r, const char *status,
                    double e2e_s) {
    (void)t;
    lat *l = user;
    if (strcmp(status, "done") && strcmp(status, "incomplete"))
        return;
    if (l->n < l->cap) {
        l->svc[l->n] = r->ms_total;
        l->e2e[l->n++] = 1e3 * e2e_s;
    }
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int64_t n, double p) {
    if (n <= 0)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    int64_t k = (int64_t)ceil(p / 100.0 * (double)n) - 1;
    return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

/* `tide reduce FRAME -o CAT --store URI` as its own process; its wall time in ms, or -1. */
static double cold_reduce(const char *frame, const char *cat, const char *store,
                          const char *backend) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = 0;
    const double t0 = tide_bench_now_ms();
    pid_t pid = fork();
    if (pid == 0) {
        int nul = open("/dev/null", O_WRONLY);
        if (nul >= 0) {
            dup2(nul, 1);
            dup2(nul, 2);
        }
        execl(self, self, "reduce", frame, "-o", cat, "--store", store, "--backend", backend,
              (char *)NULL);
        _exit(127);
    }
    int ws = 0;
    if (pid < 0 || waitpid(pid, &ws, 0) < 0 || !WIFEXITED(ws) ||
        (WEXITSTATUS(ws) != 0 && WEXITSTATUS(ws) != 3))
        return -1;
    return tide_bench_now_ms() - t0;
}

/* Empty a store before a measurement: a new SQLite file, or PostgreSQL's tables truncated
 * (not deleted from: the next measurement would insert among dead rows and bloated indexes). */
static int fresh_store(const char *uri, int is_file) {
    if (is_file) {
        remove(uri);
        return TIDE_OK;
    }
    tide_store *s = NULL;
    tide_store_options so;
    tide_store_options_init(&so);
    int st = tide_store_open(uri, &so, &s);
    if (!st)
        st = tide_store_exec(s, "TRUNCATE sources, images");
    tide_store_close(s);
    return st;
}

int tide_bench_worker(int argc, char **argv) {
    const char *cmd = "bench";
    tide_cli_common c;
    tide_cli_common_init(&c);
    const char *size = "2048x2048", *store = NULL, *workdir = NULL, *json = NULL, *runners = "1,2";
    double frames = 100, stars = 2000, cold = 5;
    const tide_cli_valopt vals[] = {
        {"--size", NULL, &size},   {"--store", NULL, &store},     {"--workdir", NULL, &workdir},
        {"--json", NULL, &json},   {"--runners", NULL, &runners}, {"--frames", &frames, NULL},
        {"--stars", &stars, NULL}, {"--cold", &cold, NULL},
    };
    for (int i = 1; i < argc; i++) {
        int r;
        if (!strcmp(argv[i], "--worker"))
            continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("%s\n%s", help, tide_cli_common_help);
            return 0;
        }
        /* ours first: the common options' --json is a flag, ours takes the file */
        if ((r = tide_cli_value_option(cmd, vals, (int)(sizeof vals / sizeof *vals), argc, argv,
                                       &i)) ||
            (r = tide_cli_common_option(&c, cmd, argc, argv, &i))) {
            if (r < 0)
                return 2;
            continue;
        }
        return tide_cli_usage_error(cmd, "unknown option %s for --worker", argv[i]);
    }
    int64_t sz[1][2];
    int nsz = 0;
    if (tide_bench_parse_sizes(size, sz, 1, 64, &nsz) || nsz != 1 || frames < 1 || cold < 0)
        return tide_cli_usage_error(cmd, "--size WxH (one), --frames >= 1, --cold >= 0");
    int nr = 0, rlist[8];
    for (const char *p = runners; *p && nr < 8;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 64)
            return tide_cli_usage_error(cmd, "--runners: a list of 1..64");
        rlist[nr++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }
    char dir[1024];
    if (workdir) {
        snprintf(dir, sizeof dir, "%s", workdir);
        mkdir(dir, 0755);
    } else {
        snprintf(dir, sizeof dir, "/tmp/tide-bench-worker.XXXXXX");
        if (!mkdtemp(dir))
            return tide_cli_fail(cmd, tide_error(TIDE_E_IO, "cannot make a directory in /tmp"));
    }
    const int64_t nf = (int64_t)frames;
    tide_ctx *ctx = tide_cli_make_ctx(&c, cmd);
    if (!ctx)
        return 1;
    /* the frame, then its copies */
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    sp.width = sz[0][0], sp.height = sz[0][1];
    sp.nstars = (int64_t)stars;
    tide_sim_frame f;
    int st = tide_sim_run(ctx, &sp, &f, NULL);
    char **msgs = calloc((size_t)nf, sizeof *msgs);
    char path[1200];
    const double tw = tide_bench_now_ms();
    for (int64_t k = 0; !st && k < nf; k++) {
        snprintf(path, sizeof path, "%s/f%05lld.fits", dir, (long long)k);
        tide_header_set_int(&f.header, "BENCHCPY", k, "copy of the benchmark frame");
        st = tide_fits_write_image(path, &f.image, &f.header);
        size_t len = strlen(path) + 32;
        if (!st && !(msgs[k] = malloc(len)))
            st = tide_error(TIDE_E_NOMEM, "out of memory");
        if (!st)
            snprintf(msgs[k], len, "{\"path\": \"%s\"}", path);
    }
    const double write_ms = tide_bench_now_ms() - tw;
    if (!st)
        tide_sim_frame_free(ctx, &f);
    const char *backend = tide_backend_name(ctx->backend);
    tide_ctx_destroy(ctx);
    if (st) {
        for (int64_t k = 0; k < nf; k++)
            free(msgs[k]);
        free(msgs);
        return tide_cli_fail(cmd, st);
    }
    char wstore[1200], cstore[1200];
    const int is_file = !store || !tide_store_uri_is_pg(store);
    snprintf(wstore, sizeof wstore, "%s", store ? store : "");
    if (!store)
        snprintf(wstore, sizeof wstore, "%s/worker.db", dir);
    snprintf(cstore, sizeof cstore, "%s", is_file ? "" : wstore);
    if (is_file)
        snprintf(cstore, sizeof cstore, "%s/cold.db", dir);

    FILE *jf = NULL;
    const int json_only = json && !strcmp(json, "-");
    if (json)
        jf = json_only ? stdout : fopen(json, "w");
    if (!json_only)
        printf("tide bench --worker: %lld frames of %lldx%lld (%lld stars), %s backend, store %s\n"
               "  (frames written in %.0f ms, not counted)\n",
               (long long)nf, (long long)sz[0][0], (long long)sz[0][1], (long long)sp.nstars,
               backend, is_file ? "SQLite" : "PostgreSQL", write_ms);
    if (jf)
        fprintf(jf,
                "{\"size\": [%lld, %lld], \"frames\": %lld, \"backend\": \"%s\", \"store\": "
                "\"%s\", \"worker\": [",
                (long long)sz[0][0], (long long)sz[0][1], (long long)nf, backend,
                is_file ? "sqlite" : "postgresql");
    lat l = {calloc((size_t)nf, sizeof(double)), calloc((size_t)nf, sizeof(double)), 0, nf};
    for (int ri = 0; ri < nr && !st; ri++) {
        if ((st = fresh_store(wstore, is_file)))
            break;
        tide_worker_opts o;
        tide_worker_opts_init(&o);
        o.runners = rlist[ri];
        o.runner.store = wstore;
        o.runner.ctx_options = &c.ctx_opt;
        tide_worker_stats stats;
        memset(&stats, 0, sizeof stats);
        l.n = 0;
        const double t0 = tide_bench_now_ms();
        st = tide_worker_run_list(&o, (const char *const *)msgs, nf, &stats, on_task, &l);
        const double ms = tide_bench_now_ms() - t0;
        if (st)
            break;
        const int64_t ok = stats.done + stats.incomplete;
        const double rate = 1e3 * (double)ok / ms;
        const double s50 = pct(l.svc, l.n, 50), s99 = pct(l.svc, l.n, 99);
        const double e50 = pct(l.e2e, l.n, 50), e99 = pct(l.e2e, l.n, 99);
        if (!json_only)
            printf("  worker, %d runner%s: %lld of %lld frames stored in %.0f ms: %.2f frames/s; "
                   "service p50 %.1f ms, p99 %.1f ms; from the backlog's start p50 %.0f ms, "
                   "p99 %.0f ms\n",
                   rlist[ri], rlist[ri] == 1 ? "" : "s", (long long)ok, (long long)nf, ms, rate,
                   s50, s99, e50, e99);
        if (jf)
            fprintf(jf,
                    "%s{\"runners\": %d, \"stored\": %lld, \"ms\": %.1f, \"frames_per_s\": %.3f, "
                    "\"service_p50_ms\": %.2f, \"service_p99_ms\": %.2f, \"backlog_p50_ms\": "
                    "%.1f, \"backlog_p99_ms\": %.1f}",
                    ri ? ", " : "", rlist[ri], (long long)ok, ms, rate, s50, s99, e50, e99);
        if (ok != nf)
            st = tide_error(TIDE_E_INTERNAL, "the worker stored %lld of %lld frames", (long long)ok,
                            (long long)nf);
    }
    /* the cold command, a process per frame, into a fresh store of the same kind */
    double cold_ms[64];
    int nc = 0;
    if (!st && cold > 0 && !(st = fresh_store(cstore, is_file))) {
        for (int64_t k = 0; k < (int64_t)cold && k < nf && nc < 64; k++) {
            char frame[1200], cat[1200];
            snprintf(frame, sizeof frame, "%s/f%05lld.fits", dir, (long long)k);
            snprintf(cat, sizeof cat, "%s/cold%05lld.cat.fits", dir, (long long)k);
            double ms = cold_reduce(frame, cat, cstore, backend);
            if (ms < 0) {
                st = tide_error(TIDE_E_INTERNAL, "tide reduce %s failed", frame);
                break;
            }
            cold_ms[nc++] = ms;
        }
    }
    const double cmed = pct(cold_ms, nc, 50);
    if (!st && !json_only && nc)
        printf("  cold tide reduce, a process per frame: median %.0f ms over %d frames = %.2f "
               "frames/s\n",
               cmed, nc, 1e3 / cmed);
    if (jf) {
        fprintf(jf, "], \"cold_reduce_median_ms\": %.1f, \"cold_frames\": %d}\n", nc ? cmed : -1.0,
                nc);
        if (!json_only)
            fclose(jf);
    }
    for (int64_t k = 0; k < nf; k++)
        free(msgs[k]);
    free(msgs);
    free(l.svc);
    free(l.e2e);
    if (!workdir && !st) {
        for (int64_t k = 0; k < nf; k++) {
            snprintf(path, sizeof path, "%s/f%05lld.fits", dir, (long long)k);
            remove(path);
            snprintf(path, sizeof path, "%s/cold%05lld.cat.fits", dir, (long long)k);
            remove(path);
        }
        snprintf(path, sizeof path, "%s/worker.db", dir);
        remove(path);
        snprintf(path, sizeof path, "%s/cold.db", dir);
        remove(path);
        rmdir(dir);
    }
    return st ? tide_cli_fail(cmd, st) : 0;
}
