/* cmd_submit.c — `tide submit`: put frames (or a manifest's tasks) on a worker's queue with
 * publisher confirms, or take back what the workers dead-lettered (queue.h). */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "batch.h"
#include "cli.h"
#include "progress.h"
#include "submit.h"
#include "tide/queue.h"

static const char *help =
    "usage: tide submit --queue amqp://HOST[:PORT][/VHOST] [OPTIONS] FILE...\n"
    "       tide submit --queue URL --manifest MANIFEST\n"
    "       tide submit --queue URL --failed [--resubmit]\n"
    "\n"
    "Publish one task per FILE to a worker's queue (tide worker), each confirmed by the broker\n"
    "before the next: a frame to reduce, or with --job diff a science frame to difference\n"
    "against --template. Paths are made absolute (the worker runs elsewhere); a FILE that does\n"
    "not exist is refused and named. --manifest publishes the tasks of a tide batch manifest.\n"
    "--failed takes the messages of the dead-letter queue NAME.failed and prints each as a JSON\n"
    "line (the task, the reason, the attempts); --resubmit puts each back on the queue first.\n"
    "Credentials: TIDE_AMQP_USER and TIDE_AMQP_PASSWORD or TIDE_AMQP_PASSWORD_FILE.\n"
    "\n"
    "options:\n"
    "  --queue URL              the broker (required)\n"
    "  --queue-name NAME        the queue [frames]\n"
    "  --job reduce|diff        what to do with each FILE [reduce]\n"
    "  --template FILE          the template of diff tasks\n"
    "  --option KEY=VALUE       a task option (a configuration key, or refcat, index_dir,\n"
    "                           solve); VALUE is JSON when it parses as JSON, else a string\n"
    "  --manifest FILE          publish a manifest's tasks (tide batch --help)\n"
    "  --failed                 take the dead letters (see above)\n"
    "  --resubmit               with --failed: publish each back to the queue\n"
    "  --progress, --no-progress  a progress line on a terminal [on a terminal]\n"
    "  --json                   a JSON summary on stdout\n";

/* --failed: take each dead letter, print it as a JSON line. */
static int take_failed(tide_queue_publisher *p, int resubmit, int json) {
    int64_t n = 0;
    for (;;) {
        tide_queue_failure f;
        int st = tide_queue_take_failed(p, resubmit, &f);
        if (st == 1)
            break;
        if (st)
            return tide_cli_fail("submit", st);
        json_t *task = json_loads(f.body, 0, NULL);
        json_t *line =
            json_pack("{s:o, s:s, s:i, s:b}", "task", task ? task : json_string(f.body), "reason",
                      f.reason, "attempts", f.attempts, "resubmitted", resubmit);
        char *s = line ? json_dumps(line, JSON_COMPACT) : NULL;
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(line);
        free(f.body);
        n++;
    }
    if (!json)
        fprintf(stderr, "tide submit: %lld dead letter%s taken%s\n", (long long)n,
                n == 1 ? "" : "s", resubmit ? " and resubmitted" : "");
    return 0;
}

int tide_cmd_submit(int argc, char **argv) {
    const char *cmd = "submit";
    tide_cli_common com;
    tide_cli_common_init(&com);
    const char *url = NULL, *queue = "frames", *job = "reduce", *tmpl = NULL, *manifest = NULL;
    int failed = 0, resubmit = 0, progress = -1, rc = 0;
    json_t *opts = json_object();
    const char **files = calloc((size_t)argc, sizeof *files);
    int nfiles = 0;
    tide_queue_publisher *p = NULL;
    json_t *refused = json_array();
    tide_batch_manifest m = {0};
    const tide_cli_valopt vals[] = {
        {"--queue", NULL, &url},     {"--queue-name", NULL, &queue},  {"--job", NULL, &job},
        {"--template", NULL, &tmpl}, {"--manifest", NULL, &manifest},
    };
    if (!opts || !files || !refused) {
        rc = tide_cli_fail(cmd, tide_error(TIDE_E_NOMEM, "out of memory"));
        goto done;
    }
    for (int i = 1; i < argc; i++) {
        int r;
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s\n%s", help, tide_cli_common_help);
            goto done;
        } else if (!strcmp(a, "--failed")) {
            failed = 1;
        } else if (!strcmp(a, "--resubmit")) {
            resubmit = 1;
        } else if (!strcmp(a, "--progress")) {
            progress = 1;
        } else if (!strcmp(a, "--no-progress")) {
            progress = 0;
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
        } else {
            files[nfiles++] = a;
        }
    }
    if (!url) {
        rc = tide_cli_usage_error(cmd, "missing --queue amqp://HOST[:PORT][/VHOST]");
        goto done;
    }
    if (strcmp(job, "reduce") && strcmp(job, "diff")) {
        rc = tide_cli_usage_error(cmd, "--job is reduce or diff, not '%s'", job);
        goto done;
    }
    if (!failed && !manifest && nfiles == 0) {
        rc = tide_cli_usage_error(cmd, "no FILE to submit");
        goto done;
    }
    if ((failed && (manifest || nfiles)) || (manifest && nfiles) || (resubmit && !failed)) {
        rc = tide_cli_usage_error(cmd, "give FILEs, --manifest or --failed [--resubmit]: one");
        goto done;
    }
    if (!strcmp(job, "diff") != (tmpl != NULL) && !manifest && !failed) {
        rc = tide_cli_usage_error(cmd, "--template goes with --job diff, and only with it");
        goto done;
    }
    if (manifest) {
        int st = tide_batch_manifest_read(manifest, NULL, &m);
        if (st) {
            rc = tide_cli_fail(cmd, st);
            goto done;
        }
    }
    int st = tide_queue_publisher_open(url, queue, &p);
    if (st) {
        rc = tide_cli_fail(cmd, st);
        goto done;
    }
    if (failed) {
        rc = take_failed(p, resubmit, com.json);
        goto done;
    }
    int64_t total = manifest ? m.n : nfiles, sent = 0;
    tide_progress pr;
    tide_progress_start(&pr, total, "tasks", progress, com.json);
    for (int64_t k = 0; k < total; k++) {
        tide_task t = {0};
        st = 0;
        char reason[1200] = "";
        const char *name = manifest ? m.e[k].id : files[k];
        if (manifest) {
            if (m.e[k].bad)
                snprintf(reason, sizeof reason, "%s", m.e[k].bad);
            else
                tide_submit_task(&m.e[k].task, NULL, NULL, &t, reason, sizeof reason);
        } else {
            tide_task base = {.kind = strcmp(job, "diff") ? TIDE_TASK_REDUCE : TIDE_TASK_DIFF,
                              .path = (char *)files[k],
                              .tmpl = (char *)tmpl};
            tide_submit_task(&base, opts, NULL, &t, reason, sizeof reason);
        }
        if (!reason[0] && (st = tide_queue_submit(p, &t)))
            snprintf(reason, sizeof reason, "%s", tide_error_detail());
        tide_task_free(&t);
        if (reason[0]) {
            json_array_append_new(refused, json_pack("{s:s, s:s}", "task", name, "reason", reason));
            if (!com.json)
                fprintf(stderr, "tide submit: not submitted: %s\n", reason);
            if (st == TIDE_E_IO) { /* the broker went away: the rest would fail too */
                tide_progress_step(&pr, 1);
                break;
            }
        } else {
            sent++;
        }
        tide_progress_step(&pr, reason[0] != 0);
    }
    tide_progress_end(&pr);
    if (com.json) {
        json_t *sum = json_pack("{s:s, s:I, s:I, s:O}", "queue", queue, "submitted",
                                (json_int_t)sent, "tasks", (json_int_t)total, "refused", refused);
        char *s = sum ? json_dumps(sum, JSON_COMPACT) : NULL;
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(sum);
    } else {
        printf("submitted %lld of %lld tasks to %s\n", (long long)sent, (long long)total, queue);
    }
    rc = sent == total ? 0 : 1;
done:
    tide_queue_publisher_close(p);
    tide_batch_manifest_free(&m);
    json_decref(refused);
    json_decref(opts);
    free(files);
    return rc;
}
