/* cmd_watch.c — `tide watch DIR`: submit every complete FITS file that appears in a directory
 * to a worker's queue, for observatories whose cameras write files (inotify). */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "cli.h"
#include "submit.h"
#include "tide/queue.h"
#include "tide/status.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

static const char *help =
    "usage: tide watch DIR --queue amqp://HOST[:PORT][/VHOST] [OPTIONS]\n"
    "\n"
    "Submit every FITS file that appears in DIR to a worker's queue (as tide submit does),\n"
    "once it is complete: when the program writing it closes it, or when it is renamed into\n"
    "DIR (write FILE.part or .FILE, then rename: the usual way to publish a file whole).\n"
    "Names counted: *.fits, *.fit, *.fts, each optionally .gz or .fz, and *.fz; hidden files\n"
    "and *.part, *.tmp are not. A file written again is submitted again. The broker going\n"
    "away: the files are kept and submitted once it is back. Runs until SIGTERM or SIGINT.\n"
    "\n"
    "options:\n"
    "  --queue URL              the broker (required)\n"
    "  --queue-name NAME        the queue [frames]\n"
    "  --job reduce|diff        what to do with each file [reduce]\n"
    "  --template FILE          the template of diff tasks\n"
    "  --option KEY=VALUE       a task option (tide submit --help)\n"
    "  --existing               submit the files already in DIR first\n"
    "  --max N                  exit 0 after N files submitted\n";

/* A name tide watch submits. */
static int is_frame_name(const char *n) {
    if (n[0] == '.')
        return 0;
    static const char *const ends[] = {".fits",   ".fit",    ".fts",     ".fits.gz",
                                       ".fit.gz", ".fts.gz", ".fits.fz", ".fz"};
    size_t len = strlen(n);
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
        size_t e = strlen(ends[i]);
        if (len > e && !strcasecmp(n + len - e, ends[i]))
            return 1;
    }
    return 0;
}

/* The files waiting to be submitted, oldest first. */
typedef struct pending {
    char **path;
    int n, cap;
} pending;

static int pending_add(pending *p, const char *dir, const char *name) {
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        char **np = realloc(p->path, (size_t)cap * sizeof *np);
        if (!np)
            return -1;
        p->path = np;
        p->cap = cap;
    }
    size_t n = strlen(dir) + strlen(name) + 2;
    if (!(p->path[p->n] = malloc(n)))
        return -1;
    snprintf(p->path[p->n++], n, "%s/%s", dir, name);
    return 0;
}

static void pending_drop_first(pending *p) {
    free(p->path[0]);
    memmove(p->path, p->path + 1, (size_t)(p->n - 1) * sizeof *p->path);
    p->n--;
}

int tide_cmd_watch(int argc, char **argv) {
    const char *cmd = "watch";
    tide_cli_common com;
    tide_cli_common_init(&com);
    const char *url = NULL, *queue = "frames", *job = "reduce", *tmpl = NULL, *dir = NULL;
    double max = 0;
    int existing = 0, rc = 0, fd = -1;
    json_t *opts = json_object();
    pending pend = {0};
    tide_queue_publisher *p = NULL;
    const tide_cli_valopt vals[] = {
        {"--queue", NULL, &url},     {"--queue-name", NULL, &queue}, {"--job", NULL, &job},
        {"--template", NULL, &tmpl}, {"--max", &max, NULL},
    };
    for (int i = 1; i < argc; i++) {
        int r;
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s\n%s", help, tide_cli_common_help);
            goto done;
        } else if (!strcmp(a, "--existing")) {
            existing = 1;
        } else if (!strcmp(a, "--option")) {
            if (i + 1 >= argc || tide_submit_add_option(opts, argv[i + 1])) {
                rc = tide_cli_usage_error(cmd, "--option needs KEY=VALUE");
                goto done;
            }
            i++;
        } else if ((r = tide_cli_common_option(&com, cmd, argc, argv, &i)) ||
                   (r = tide_cli_value_option(cmd, vals, (int)(sizeof vals / sizeof *vals), argc,
                                              argv, &i))) {
            if (r < 0) {
                rc = 2;
                goto done;
            }
        } else if (a[0] == '-' && a[1]) {
            rc = tide_cli_usage_error(cmd, "unknown option '%s'", a);
            goto done;
        } else if (!dir) {
            dir = a;
        } else {
            rc = tide_cli_usage_error(cmd, "one DIR only ('%s')", a);
            goto done;
        }
    }
    if (!dir || !url) {
        rc = tide_cli_usage_error(cmd, "needs DIR and --queue URL");
        goto done;
    }
    if (strcmp(job, "reduce") && strcmp(job, "diff")) {
        rc = tide_cli_usage_error(cmd, "--job is reduce or diff, not '%s'", job);
        goto done;
    }
    if (!strcmp(job, "diff") != (tmpl != NULL)) {
        rc = tide_cli_usage_error(cmd, "--template goes with --job diff, and only with it");
        goto done;
    }
    fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd < 0 || inotify_add_watch(fd, dir, IN_CLOSE_WRITE | IN_MOVED_TO | IN_ONLYDIR) < 0) {
        rc = tide_cli_fail(cmd, tide_error(errno == ENOENT ? TIDE_E_NOTFOUND : TIDE_E_IO,
                                           "%s: cannot watch: %s", dir, strerror(errno)));
        goto done;
    }
    if (existing) {
        struct dirent **names = NULL;
        int n = scandir(dir, &names, NULL, alphasort);
        for (int k = 0; k < n; k++) {
            char full[PATH_MAX];
            struct stat sb;
            snprintf(full, sizeof full, "%s/%s", dir, names[k]->d_name);
            if (is_frame_name(names[k]->d_name) && !stat(full, &sb) && S_ISREG(sb.st_mode))
                pending_add(&pend, dir, names[k]->d_name);
            free(names[k]);
        }
        free(names);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    fprintf(stderr, "tide watch: watching %s\n", dir);
    int64_t sent = 0;
    double backoff = 0.5, next_try = 0;
    while (!stop_flag && !(max > 0 && sent >= (int64_t)max)) {
        /* publish what waits, connecting first when needed */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
        while (pend.n && now >= next_try && !(max > 0 && sent >= (int64_t)max)) {
            if (!p && tide_queue_publisher_open(url, queue, &p)) {
                fprintf(stderr, "tide watch: cannot reach the broker (%s); again in %.1f s\n",
                        tide_error_detail(), backoff);
                next_try = now + backoff;
                backoff = backoff * 2 > 30 ? 30 : backoff * 2;
                break;
            }
            backoff = 0.5;
            tide_task base = {.kind = strcmp(job, "diff") ? TIDE_TASK_REDUCE : TIDE_TASK_DIFF,
                              .path = pend.path[0],
                              .tmpl = (char *)tmpl};
            tide_task t;
            char reason[1200];
            if (tide_submit_task(&base, opts, NULL, &t, reason, sizeof reason)) {
                fprintf(stderr, "tide watch: not submitted: %s\n", reason);
                pending_drop_first(&pend);
                continue;
            }
            int st = tide_queue_submit(p, &t);
            tide_task_free(&t);
            if (st) { /* the broker went away: keep the file, reconnect */
                fprintf(stderr, "tide watch: %s\n", tide_error_detail());
                tide_queue_publisher_close(p);
                p = NULL;
                break;
            }
            if (com.json)
                printf("{\"submitted\": \"%s\"}\n", pend.path[0]);
            else
                printf("submitted %s\n", pend.path[0]);
            fflush(stdout);
            sent++;
            pending_drop_first(&pend);
        }
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, pend.n ? 100 : 500) <= 0)
            continue;
        char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t len = read(fd, buf, sizeof buf);
        for (char *q = buf; len > 0 && q < buf + len;) {
            struct inotify_event *ev = (struct inotify_event *)q;
            if (ev->len && !(ev->mask & IN_ISDIR) && is_frame_name(ev->name))
                pending_add(&pend, dir, ev->name);
            q += sizeof *ev + ev->len;
        }
    }
    if (pend.n)
        fprintf(stderr, "tide watch: stopped with %d file%s not submitted\n", pend.n,
                pend.n == 1 ? "" : "s");
done:
    for (int k = 0; k < pend.n; k++)
        free(pend.path[k]);
    free(pend.path);
    tide_queue_publisher_close(p);
    if (fd >= 0)
        close(fd);
    json_decref(opts);
    return rc;
}
