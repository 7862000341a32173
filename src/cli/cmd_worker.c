/* cmd_worker.c — `tide worker`: take tasks from a RabbitMQ queue and run them on warm contexts
 * until SIGTERM (worker.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_config.h"
#include "tide/metrics.h"
#include "tide/worker.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

/* What the metrics hooks read: the worker's families, its stats, the device. */
typedef struct worker_watch {
    tide_worker_metrics wm;
    tide_metric *fallbacks; /* frames run on the CPU after the device ran out of memory */
    tide_metric *malformed_seen;
    const tide_worker_stats *stats;
    int64_t malformed_counted;
    int device; /* -1: CPU backend */
} worker_watch;

/* Each settled message: frames by what became of it, its stages, submit to commit. */
static void on_task(void *user, const tide_task *t, const tide_task_result *r, const char *status,
                    double e2e_s) {
    worker_watch *w = user;
    tide_metric_add(w->wm.frames, tide_metric_index(w->wm.frames, status), 1);
    if (r->fallback)
        tide_metric_add(w->fallbacks, 0, 1);
    if (strcmp(status, "done") && strcmp(status, "incomplete"))
        return;
    tide_metric *sg = w->wm.stage_seconds;
    tide_metric_observe(sg, TIDE_WM_READ, 1e-3 * r->ms_read);
    tide_metric_observe(sg, t->kind == TIDE_TASK_DIFF ? TIDE_WM_DIFF : TIDE_WM_REDUCE,
                        1e-3 * r->ms_compute);
    tide_metric_observe(sg, TIDE_WM_WRITE, 1e-3 * r->ms_write);
    if (t->kind == TIDE_TASK_REDUCE && r->image_id >= 0) {
        tide_metric_observe(sg, TIDE_WM_STORE, 1e-3 * r->ms_store);
        tide_metric_observe(w->wm.store_seconds, 0, 1e-3 * r->ms_store);
    }
    if (e2e_s >= 0)
        tide_metric_observe(w->wm.frame_seconds, 0, e2e_s);
}

/* At each scrape: the queue depth last seen, messages that were not tasks, device memory. */
static void on_scrape(tide_metrics *m, void *user) {
    (void)m;
    worker_watch *w = user;
    tide_metric_set(w->wm.queue_depth, 0, (double)w->stats->queue_depth);
    int64_t mal = w->stats->malformed;
    if (mal > w->malformed_counted) {
        tide_metric_add(w->wm.frames, TIDE_WM_FAILED, (double)(mal - w->malformed_counted));
        w->malformed_counted = mal;
    }
    size_t fr = 0, tot = 0;
    if (w->device >= 0 && !tide_cuda_memory(w->device, &fr, &tot)) {
        tide_metric_set(w->wm.device_memory, TIDE_WM_USED, (double)(tot - fr));
        tide_metric_set(w->wm.device_memory, TIDE_WM_TOTAL, (double)tot);
    }
}

/* /healthz: unhealthy while the broker is away. */
static int on_health(void *user, char *reason, size_t cap) {
    const worker_watch *w = user;
    if (!w->stats->connected) {
        snprintf(reason, cap, "not connected to the broker");
        return 1;
    }
    snprintf(reason, cap, "%lld in hand", (long long)w->stats->in_hand);
    return 0;
}

/* The crash ledger's directory when --state-dir is not given: systemd's StateDirectory=, else
 * the XDG state home; its parents are made (0700). 0, or 1 with the reason printed. */
static int default_state_dir(char *buf, size_t cap) {
    const char *sd = getenv("STATE_DIRECTORY"), *xdg = getenv("XDG_STATE_HOME"),
               *home = getenv("HOME");
    int n;
    if (sd && *sd)
        n = snprintf(buf, cap, "%s", sd);
    else if (xdg && *xdg)
        n = snprintf(buf, cap, "%s/tide", xdg);
    else if (home && *home)
        n = snprintf(buf, cap, "%s/.local/state/tide", home);
    else {
        fprintf(stderr, "tide worker: no --state-dir, and neither STATE_DIRECTORY, "
                        "XDG_STATE_HOME nor HOME is set\n");
        return 1;
    }
    if (n < 0 || (size_t)n >= cap) {
        fprintf(stderr, "tide worker: the state directory's name is too long\n");
        return 1;
    }
    for (char *p = buf + 1; *p; p++) /* the parents; the ledger makes the last one */
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0700) && errno != EEXIST) {
                fprintf(stderr, "tide worker: cannot create %s: %s\n", buf, strerror(errno));
                return 1;
            }
            *p = '/';
        }
    return 0;
}

static const char *help =
    "usage: tide worker --queue amqp://HOST[:PORT][/VHOST] [OPTIONS]\n"
    "\n"
    "Take tasks from a RabbitMQ queue and run them, unattended, on warm contexts: a frame to\n"
    "reduce ({\"path\": FRAME}) or a science frame to difference against a template\n"
    "({\"path\": FRAME, \"job\": \"diff\", \"template\": TEMPLATE}); `tide submit` and `tide "
    "watch`\n"
    "publish them. A message is acked only once its outputs and store rows are committed. A\n"
    "task that fails is tried again up to --max-attempts times, then goes with its reason to\n"
    "the dead-letter queue NAME.failed (a message that is not a task goes there at once). A\n"
    "store or broker that goes away is waited for, the frame kept in hand. SIGTERM or SIGINT:\n"
    "finish the frames in hand, commit, ack, exit 0.\n"
    "\n"
    "Credentials come from TIDE_AMQP_USER and TIDE_AMQP_PASSWORD (or TIDE_AMQP_PASSWORD_FILE),\n"
    "never from the command line; without them guest/guest, which RabbitMQ accepts from\n"
    "loopback only. A PostgreSQL store's password comes from libpq's PGPASSWORD or PGPASSFILE.\n"
    "\n"
    "options:\n"
    "  --queue URL              the broker (required)\n"
    "  --queue-name NAME        the queue of tasks [frames]\n"
    "  --metrics HOST:PORT      serve GET /metrics (Prometheus) and /healthz there [none]\n"
    "  --store URI              the store of reduce tasks [store.uri, else $TIDE_STORE]\n"
    "  --outdir DIR             where catalogs (NAME.cat.fits) and difference directories\n"
    "                           go [none: reduce tasks go to the store only]\n"
    "  --prefetch N             unacked messages in hand [runners + 1]\n"
    "  --runners N              runner threads, each a warm context; the store's commit of one\n"
    "                           frame overlaps the next frame's computation [2]\n"
    "  --max-attempts N         runs of a failing task before it is dead-lettered [3]\n"
    "  --max-tasks N            exit 0 after N tasks ended [no limit]\n"
    "  --idle-exit SECONDS      exit 0 after this long without a message [never]\n"
    "  --state-dir DIR          the crash ledger: a task that crashes the worker is written down\n"
    "                           there, and after --max-attempts crashes dead-lettered unrun\n"
    "                           [$STATE_DIRECTORY (systemd), else $XDG_STATE_HOME/tide, else\n"
    "                           ~/.local/state/tide]\n";

int tide_cmd_worker(int argc, char **argv) {
    const char *cmd = "worker";
    tide_cli_common com;
    tide_cli_common_init(&com);
    tide_cli_config cfg = {0};
    tide_worker_opts o;
    tide_worker_opts_init(&o);
    double prefetch = -1, runners = -1, attempts = -1, max_tasks = -1, idle = -1;
    const char *store = NULL, *outdir = NULL, *metrics = NULL, *state_dir = NULL;
    char state_buf[4096];
    const tide_cli_valopt vals[] = {
        {"--queue", NULL, &o.queue_url},     {"--queue-name", NULL, &o.queue_name},
        {"--store", NULL, &store},           {"--outdir", NULL, &outdir},
        {"--prefetch", &prefetch, NULL},     {"--runners", &runners, NULL},
        {"--max-attempts", &attempts, NULL}, {"--max-tasks", &max_tasks, NULL},
        {"--idle-exit", &idle, NULL},        {"--metrics", NULL, &metrics},
        {"--state-dir", NULL, &state_dir},
    };
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        int r;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("%s\n%s\n%s", help, tide_cli_config_help, tide_cli_common_help);
            tide_cli_config_free(&cfg);
            return 0;
        }
        if ((r = tide_cli_common_option(&com, cmd, argc, argv, &i)) ||
            (r = tide_cli_config_option(&cfg, cmd, argc, argv, &i)) ||
            (r = tide_cli_value_option(cmd, vals, (int)(sizeof vals / sizeof *vals), argc, argv,
                                       &i))) {
            if (r < 0) {
                rc = 2;
                goto done;
            }
            continue;
        }
        rc = tide_cli_usage_error(cmd, "unknown argument '%s'", argv[i]);
        goto done;
    }
    if (!o.queue_url) {
        rc = tide_cli_usage_error(cmd, "missing --queue amqp://HOST[:PORT][/VHOST]");
        goto done;
    }
    if (!o.queue_name[0]) {
        rc = tide_cli_usage_error(cmd, "--queue-name is empty");
        goto done;
    }
    if ((runners >= 0 && (runners < 1 || runners > 64)) || (attempts >= 0 && attempts < 1) ||
        (prefetch >= 0 && (prefetch < 1 || prefetch > 65535))) {
        rc = tide_cli_usage_error(cmd, "--runners is 1..64, --max-attempts >= 1, --prefetch "
                                       "1..65535");
        goto done;
    }
    if (runners > 0)
        o.runners = (int)runners;
    if (attempts > 0)
        o.max_attempts = (int)attempts;
    if (prefetch > 0)
        o.prefetch = (int)prefetch;
    if (max_tasks > 0)
        o.max_tasks = (int64_t)max_tasks;
    if (idle > 0)
        o.idle_exit_s = idle;
    if (!state_dir && default_state_dir(state_buf, sizeof state_buf)) {
        rc = 1;
        goto done;
    }
    o.state_dir = state_dir ? state_dir : state_buf;
    o.runner.config_file = cfg.instrument;
    o.runner.default_file = cfg.def;
    o.runner.sets = (const char *const *)cfg.sets;
    o.runner.nsets = cfg.nsets;
    o.runner.store = store;
    o.runner.outdir = outdir;
    o.runner.ctx_options = &com.ctx_opt;
    o.log = com.ctx_opt.log;
    if (o.log.level < TIDE_LOG_INFO)
        o.log.level = TIDE_LOG_INFO; /* a service says what it does */

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    tide_worker_stats stats;
    memset(&stats, 0, sizeof stats);
    worker_watch watch;
    memset(&watch, 0, sizeof watch);
    watch.stats = &stats;
    watch.device = com.ctx_opt.backend == TIDE_BACKEND_CPU || !tide_cuda_available(NULL)
                       ? -1
                       : com.ctx_opt.device;
    tide_metrics *m = NULL;
    tide_metrics_server *srv = NULL;
    int st = TIDE_OK;
    if (metrics) {
        st = tide_metrics_create(&m);
        if (!st)
            st = tide_metrics_worker(m, &watch.wm);
        if (!st)
            st = tide_metrics_counter(m, "tide_device_fallbacks_total",
                                      "frames run again on the CPU backend after the device ran "
                                      "out of memory",
                                      NULL, NULL, 0, &watch.fallbacks);
        if (!st) {
            tide_metrics_on_scrape(m, on_scrape, &watch);
            st = tide_metrics_serve(m, metrics, on_health, &watch, &srv);
        }
        if (!st)
            tide_log(&o.log, TIDE_LOG_INFO, "worker", "metrics on http://%s/metrics (port %d)",
                     metrics, tide_metrics_server_port(srv));
    }
    if (!st)
        st = tide_worker_run(&o, &stop_flag, &stats, m ? on_task : NULL, &watch);
    tide_metrics_server_stop(srv);
    tide_metrics_destroy(m);
    if (st) {
        rc = tide_cli_fail(cmd, st);
        goto done;
    }
    if (com.json)
        printf("{\"done\": %lld, \"incomplete\": %lld, \"failed_retried\": %lld, "
               "\"dead_lettered\": %lld, \"malformed\": %lld, \"reconnects\": %lld, "
               "\"redelivered\": %lld}\n",
               (long long)stats.done, (long long)stats.incomplete, (long long)stats.failed_retried,
               (long long)stats.dead_lettered, (long long)stats.malformed,
               (long long)stats.reconnects, (long long)stats.redelivered);
done:
    tide_cli_config_free(&cfg);
    return rc;
}
