/* cmd_review.c — `tide review add-reviewer|queue|serve|export` (issue 18): the review tools
 * over a candidate store (store_review.h) and the review page (review.h, docs/review.md). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "tide/fits.h"
#include "tide/outfile.h"
#include "tide/review.h"
#include "tide/store_cand.h"
#include "tide/store_review.h"

static const char *help =
    "usage: tide review add-reviewer --store URI NAME\n"
    "       tide review queue --store URI [--by uncertainty|disagreement|audit] [--limit N]\n"
    "                         [--reviewer NAME] [--seed S] [--json]\n"
    "       tide review serve --store URI [--listen HOST:PORT] [--seed S]\n"
    "       tide review export --store URI --format csv|fits -o FILE\n"
    "\n"
    "Human review of difference candidates (docs/review.md).\n"
    "  add-reviewer  add a reviewer and print their token (shown once; the store keeps its\n"
    "                SHA-256 only)\n"
    "  queue         candidate ids of a queue, one line each with the score: uncertainty\n"
    "                (|score - 0.5| ascending, the reviewer's unlabelled first),\n"
    "                disagreement (labels differ, or one contradicts the score), audit (a\n"
    "                random sample fixed by --seed)\n"
    "  serve         the review page and its JSON API [--listen 127.0.0.1:8080]; runs until\n"
    "                SIGINT or SIGTERM\n"
    "  export        every label with its candidate and reviewer, as CSV or a FITS table\n"
    "\n"
    "options:\n"
    "  --store URI   the candidate store (tide diff --store)\n"
    "  --by QUEUE    [uncertainty]\n"
    "  --limit N     [50]\n"
    "  --reviewer NAME  whose labels come last in the queue [nobody's]\n"
    "  --seed S      the audit sample's [1]\n";

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

static int open_store(const char *cmd, const char *uri, int read_only, tide_store **s) {
    tide_store_options opt;
    tide_store_options_init(&opt);
    opt.read_only = read_only;
    int st = tide_store_open(uri, &opt, s);
    return st ? tide_cli_fail(cmd, st) : 0;
}

static int write_csv_field(FILE *f, const char *v, size_t n) {
    fputc('"', f);
    for (size_t i = 0; i < n && v[i]; i++) {
        if (v[i] == '"')
            fputc('"', f);
        fputc(v[i], f);
    }
    return fputc('"', f) == EOF ? -1 : 0;
}

/* The labels table as CSV with a header line (texts quoted, NaN empty). */
static int write_csv(const char *path, const tide_table *t) {
    tide_outfile of;
    FILE *f = NULL;
    int st = tide_outfile_begin(&of, path);
    if (!st)
        st = tide_outfile_fopen(&of, &f);
    if (st) {
        tide_outfile_abort(&of);
        return st;
    }
    for (int j = 0; j < t->ncols; j++)
        fprintf(f, "%s%s", j ? "," : "", t->cols[j].name);
    fputc('\n', f);
    for (int64_t r = 0; r < t->nrows; r++) {
        for (int j = 0; j < t->ncols; j++) {
            const tide_column *c = &t->cols[j];
            if (j)
                fputc(',', f);
            if (c->type == TIDE_COL_I64)
                fprintf(f, "%lld", (long long)((const int64_t *)c->data)[r]);
            else if (c->type == TIDE_COL_F64) {
                const double v = ((const double *)c->data)[r];
                if (isfinite(v))
                    fprintf(f, "%.17g", v);
            } else
                write_csv_field(f, (const char *)c->data + r * c->repeat, (size_t)c->repeat);
        }
        fputc('\n', f);
    }
    if (fclose(f) != 0) {
        tide_outfile_abort(&of);
        return tide_error(TIDE_E_IO, "%s: write failed", path);
    }
    return tide_outfile_commit(&of);
}

int tide_cmd_review(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        printf("%s", help);
        return argc < 2 ? 2 : 0;
    }
    const char *sub = argv[1];
    char cmd[64];
    snprintf(cmd, sizeof cmd, "review %s", sub);
    const char *uri = NULL, *by = "uncertainty", *listen = "127.0.0.1:8080", *format = NULL,
               *out = NULL, *name = NULL, *reviewer = NULL;
    double limit = 50, seed = 1;
    int json = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s", help);
            return 0;
        }
        if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        }
        if (a[0] != '-') {
            if (name)
                return tide_cli_usage_error(cmd, "one NAME only (got '%s')", a);
            name = a;
            continue;
        }
        if (i + 1 >= argc)
            return tide_cli_usage_error(cmd, "%s: unknown option or missing value", a);
        const char *val = argv[++i];
        if (!strcmp(a, "--store"))
            uri = val;
        else if (!strcmp(a, "--by"))
            by = val;
        else if (!strcmp(a, "--listen"))
            listen = val;
        else if (!strcmp(a, "--format"))
            format = val;
        else if (!strcmp(a, "-o") || !strcmp(a, "--output"))
            out = val;
        else if (!strcmp(a, "--reviewer"))
            reviewer = val;
        else if (!strcmp(a, "--limit") || !strcmp(a, "--seed")) {
            double *v = !strcmp(a, "--limit") ? &limit : &seed;
            if (tide_cli_parse_number(val, v) || *v < 0 || *v > 1e15 || *v != (double)(int64_t)*v)
                return tide_cli_usage_error(cmd, "%s takes a whole number >= 0 (got '%s')", a, val);
        } else
            return tide_cli_usage_error(cmd, "unknown option %s", a);
    }
    if (!uri)
        return tide_cli_usage_error(cmd, "needs --store URI");
    const int add = !strcmp(sub, "add-reviewer"), queue = !strcmp(sub, "queue"),
              serve = !strcmp(sub, "serve"), export = !strcmp(sub, "export");
    if (!add && !queue && !serve && !export)
        return tide_cli_usage_error("review", "unknown subcommand '%s'", sub);
    if (name && !add)
        return tide_cli_usage_error(cmd, "unexpected argument '%s'", name);
    if (add && !name)
        return tide_cli_usage_error(cmd, "needs the reviewer's NAME");
    const int kind = tide_review_queue_parse(by);
    if (queue && kind < 0)
        return tide_cli_usage_error(cmd, "--by uncertainty, disagreement or audit");
    if (queue && (limit < 1 || limit > 1e7))
        return tide_cli_usage_error(cmd, "--limit 1..10000000");
    if (export && (!out || !format || (strcmp(format, "csv") && strcmp(format, "fits"))))
        return tide_cli_usage_error(cmd, "needs --format csv|fits and -o FILE");
    if (export && !tide_store_uri_is_pg(uri)) { /* never write the labels over the store */
        const char *db = strncmp(uri, "sqlite:", 7) ? uri : uri + 7;
        if (tide_cli_check_outputs(cmd, &db, 1, &out, 1))
            return 1;
    }
    tide_store *s = NULL;
    int rc = open_store(cmd, uri, queue || export, &s);
    if (rc)
        return rc;
    int st = 0;
    if (add) {
        char token[TIDE_REVIEW_TOKEN_LEN + 1];
        int64_t id = -1;
        if (!(st = tide_store_add_reviewer(s, name, token, &id))) {
            if (json)
                printf("{\"reviewer_id\": %lld, \"name\": \"%s\", \"token\": \"%s\"}\n",
                       (long long)id, name, token);
            else
                printf("%s\n", token);
            fprintf(stderr, "tide review: reviewer %s (id %lld) added; the token is shown once\n",
                    name, (long long)id);
        }
    } else if (queue) {
        int64_t rid = -1, n = 0;
        int64_t *ids = malloc((size_t)limit * sizeof *ids);
        st = ids ? 0 : tide_error(TIDE_E_NOMEM, "review queue: %.0f ids", limit);
        if (!st && reviewer)
            st = tide_store_reviewer_id(s, reviewer, &rid);
        if (!st)
            st = tide_store_review_queue(s, kind, rid, (int64_t)limit, (uint64_t)seed, ids, &n);
        for (int64_t i = 0; !st && i < n; i++) {
            tide_store_cand_query q;
            tide_store_cand_query_init(&q);
            q.cand_id = ids[i];
            tide_table t;
            tide_table_init(&t);
            double score = NAN;
            if (!tide_store_candidates(s, &q, &t) && t.nrows == 1)
                score = tide_table_f64(&t, "SCORE")[0];
            tide_table_free(&t);
            if (json && isfinite(score))
                printf("%s{\"id\": %lld, \"score\": %.6f}", i ? ", " : "[", (long long)ids[i],
                       score);
            else if (json)
                printf("%s{\"id\": %lld, \"score\": null}", i ? ", " : "[", (long long)ids[i]);
            else if (isfinite(score))
                printf("%lld %.6f\n", (long long)ids[i], score);
            else
                printf("%lld -\n", (long long)ids[i]);
        }
        if (!st && json)
            printf("%s]\n", n ? "" : "[");
        free(ids);
    } else if (serve) {
        tide_review_server *srv = NULL;
        if (!(st = tide_review_serve(s, listen, (uint64_t)seed, &srv))) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_signal;
            sigemptyset(&sa.sa_mask);
            sigaction(SIGTERM, &sa, NULL);
            sigaction(SIGINT, &sa, NULL);
            signal(SIGPIPE, SIG_IGN);
            printf("tide review: serving %s on port %d\n", uri, tide_review_server_port(srv));
            fflush(stdout);
            while (!stop_flag)
                pause();
            tide_review_server_stop(srv);
        }
    } else {
        tide_table t;
        tide_table_init(&t);
        st = tide_store_labels(s, -1, &t);
        if (!st)
            st = !strcmp(format, "csv") ? write_csv(out, &t)
                                        : tide_fits_write_table(out, &t, NULL, "LABELS");
        if (!st)
            fprintf(stderr, "tide review: %lld labels written to %s\n", (long long)t.nrows, out);
        tide_table_free(&t);
    }
    tide_store_close(s);
    return st ? tide_cli_fail(cmd, st) : 0;
}
