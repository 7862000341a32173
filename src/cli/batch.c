/* batch.c — the parts of `tide batch` that the single process (cmd_batch.c) and the MPI
 * ranks (batch_mpi.c) share (batch.h): options, the manifest, one task with its retries and
 * the summary. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "tide/redact.h"

const char *tide_batch_help =
    "usage: tide batch MANIFEST [--outdir DIR] [--store URI] [OPTIONS]\n"
    "       mpirun -n N tide batch MANIFEST ...\n"
    "\n"
    "Run every task of MANIFEST on one warm context: each frame reduced as `tide reduce`\n"
    "does (its catalog to DIR/NAME.cat.fits and its rows to the store), each science frame\n"
    "differenced as `tide diff --template` does (into DIR/NAME/); NAME is the frame's file\n"
    "name without .fits, .fit, .fts, .gz. A task that fails is reported and the others go on.\n"
    "\n"
    "MANIFEST is one of\n"
    "  JSON lines   one task object a line (blank lines and lines starting with # skipped):\n"
    "               {\"path\": \"F.fits\", \"job\": \"reduce\"|\"diff\", \"template\": "
    "\"T.fits\",\n"
    "                \"id\": \"...\", \"out\": \"CATALOG|DIR\", \"options\": {\"KEY\": VALUE, "
    "...}}\n"
    "               (only path is required; options are configuration keys as --set takes\n"
    "               them, and refcat, index_dir, solve of tide reduce)\n"
    "  JSON array   one array of such task objects\n"
    "  a list       FITS paths, one a line: reduce tasks\n"
    "Relative paths are taken from the current directory.\n"
    "\n"
    "Under mpirun (OpenMPI), tide batch runs tide-batch-mpi, installed beside it: rank 0\n"
    "hands the tasks out one at a time to the rank that asks (and runs tasks itself unless\n"
    "--rank0 dispatch), every rank keeps one runner, on --device or else the GPU of its local\n"
    "rank modulo the GPUs seen, with --threads or else its share of the host's cores; all\n"
    "write one store (SQLite waits for another rank's lock up to 5 s). Rank 0 prints the\n"
    "summary.\n"
    "\n"
    "options:\n"
    "  --outdir DIR             where the outputs go [required unless every task names its\n"
    "                           \"out\" or there is a store: reduce tasks then go to the store\n"
    "                           only]\n"
    "  --store URI              the store of reduce tasks: sqlite:PATH or PATH.db,\n"
    "                           postgresql://... or pg:CONNINFO [store.uri, else $TIDE_STORE,\n"
    "                           else none]\n"
    "  --retries N              rerun a task that failed for a reason outside it (the store\n"
    "                           unreachable, out of memory) up to N times, a second apart [2]\n"
    "  --progress, --no-progress\n"
    "                           a status line on standard error (done, failed, rate, time\n"
    "                           left) [when standard error is a terminal and not --json]\n"
    "  --rank0 work|dispatch    under mpirun: rank 0 runs tasks too, or only hands them out\n"
    "                           [work]\n"
    "%s"
    "\n"
    "The summary: tasks, done, incomplete (written, without the calibration asked for),\n"
    "failed (each with its id and reason), wall time, rate and tasks per rank; --json prints\n"
    "it as one JSON object with every task's outcome.\n"
    "Exit codes: 0 every task done or incomplete, 1 a task failed (or nothing could run),\n"
    "2 usage error.\n";

int tide_batch_parse_args(int argc, char **argv, tide_batch_args *a) {
    const char *cmd = "batch";
    memset(a, 0, sizeof *a);
    tide_cli_common_init(&a->com);
    a->progress = -1;
    a->retries = 2;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            printf(tide_batch_help, tide_cli_config_help);
            printf("\n%s", tide_cli_common_help);
            return -1;
        }
        if (!strcmp(s, "--device"))
            a->device_given = 1;
        if (!strcmp(s, "--threads"))
            a->threads_given = 1;
        const int c = tide_cli_common_option(&a->com, cmd, argc, argv, &i);
        if (c < 0)
            return 2;
        if (c > 0)
            continue;
        const int k = tide_cli_config_option(&a->cfg, cmd, argc, argv, &i);
        if (k < 0)
            return 2;
        if (k > 0)
            continue;
        if (!strcmp(s, "--progress") || !strcmp(s, "--no-progress")) {
            a->progress = !strcmp(s, "--progress");
            continue;
        }
        const int needs = !strcmp(s, "--outdir") || !strcmp(s, "-o") || !strcmp(s, "--store") ||
                          !strcmp(s, "--retries") || !strcmp(s, "--rank0");
        if (needs && i + 1 >= argc)
            return tide_cli_usage_error(cmd, "option %s needs a value", s);
        if (!strcmp(s, "--outdir") || !strcmp(s, "-o")) {
            a->outdir = argv[++i];
        } else if (!strcmp(s, "--store")) {
            a->store = argv[++i];
        } else if (!strcmp(s, "--retries")) {
            double v;
            if (tide_cli_parse_number(argv[++i], &v) || v < 0 || v > 100 || v != (int)v)
                return tide_cli_usage_error(cmd, "--retries needs a count 0..100 (got '%s')",
                                            argv[i]);
            a->retries = (int)v;
        } else if (!strcmp(s, "--rank0")) {
            const char *v = argv[++i];
            if (strcmp(v, "work") && strcmp(v, "dispatch"))
                return tide_cli_usage_error(cmd, "--rank0 takes work or dispatch (got '%s')", v);
            a->dispatch_only = !strcmp(v, "dispatch");
        } else if (s[0] == '-' && s[1]) {
            return tide_cli_usage_error(cmd, "unknown option %s", s);
        } else if (a->manifest) {
            return tide_cli_usage_error(cmd, "one MANIFEST only (got '%s' and '%s')", a->manifest,
                                        s);
        } else {
            a->manifest = s;
        }
    }
    if (!a->manifest)
        return tide_cli_usage_error(cmd, "missing MANIFEST");
    return 0;
}

void tide_batch_args_free(tide_batch_args *a) {
    tide_cli_config_free(&a->cfg);
}

/* ---- the manifest ---------------------------------------------------------------------- */

static int add_entry(tide_batch_manifest *m, int64_t *cap) {
    if (m->n == *cap) {
        const int64_t nc = *cap ? 2 * *cap : 64;
        tide_batch_entry *e = realloc(m->e, sizeof *e * (size_t)nc);
        if (!e)
            return tide_error(TIDE_E_NOMEM, "out of memory");
        m->e = e, *cap = nc;
    }
    memset(&m->e[m->n++], 0, sizeof m->e[0]);
    return 0;
}

/* Entry @p e from task text @p s (@p len bytes), found at @p where ("MANIFEST:LINE"). */
static int parse_entry(tide_batch_entry *e, const char *s, size_t len, const char *where) {
    const int st = tide_task_parse(s, len, &e->task);
    if (st == TIDE_E_NOMEM)
        return st;
    if (st) {
        /* named by its id (or path) when it has one, else by where it is */
        json_t *o = json_loadb(s, len, 0, NULL);
        const char *id = json_string_value(json_object_get(o, "id"));
        if (!id)
            id = json_string_value(json_object_get(o, "path"));
        const size_t n = strlen(where) + strlen(tide_error_detail()) + 4;
        e->bad = malloc(n);
        e->id = strdup(id && *id ? id : where);
        json_decref(o);
        if (!e->bad || !e->id)
            return tide_error(TIDE_E_NOMEM, "out of memory");
        if (strcmp(e->id, where))
            snprintf(e->bad, n, "%s: %s", where, tide_error_detail());
        else
            snprintf(e->bad, n, "%s", tide_error_detail());
        return 0;
    }
    e->id = strdup(e->task.id);
    return e->id ? 0 : tide_error(TIDE_E_NOMEM, "out of memory");
}

/* A plain list's line: a reduce task of that path. */
static int path_entry(tide_batch_entry *e, const char *s, size_t len) {
    e->task.kind = TIDE_TASK_REDUCE;
    e->task.path = strndup(s, len);
    e->task.id = strndup(s, len);
    e->id = strndup(s, len);
    return e->task.path && e->task.id && e->id ? 0 : tide_error(TIDE_E_NOMEM, "out of memory");
}

static int read_array(const char *path, const char *text, size_t len, tide_batch_manifest *m) {
    json_error_t err;
    json_t *root = json_loadb(text, len, 0, &err);
    if (!json_is_array(root)) {
        json_decref(root);
        if (!root)
            return tide_error(TIDE_E_FORMAT, "%s: not JSON at line %d column %d: %s", path,
                              err.line > 0 ? err.line : 1, err.column > 0 ? err.column : 1,
                              err.text);
        return tide_error(TIDE_E_FORMAT, "%s: a manifest starting with [ is one JSON array", path);
    }
    int64_t cap = 0;
    int st = 0;
    size_t i;
    json_t *v;
    json_array_foreach(root, i, v) {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
        char where[1100];
        snprintf(where, sizeof where, "%s[%zu]", path, i);
        st = s ? add_entry(m, &cap) : tide_error(TIDE_E_NOMEM, "out of memory");
        if (!st)
            st = parse_entry(&m->e[m->n - 1], s, strlen(s), where);
        free(s);
        if (st)
            break;
    }
    json_decref(root);
    return st;
}

static int read_lines(const char *path, char *text, size_t len, tide_batch_manifest *m) {
    int64_t cap = 0;
    int st = 0, json = -1, line = 0;
    char *p = text, *end = text + len;
    while (!st && p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *e = nl ? nl : end;
        line++;
        char *b = p;
        p = nl ? nl + 1 : end;
        while (b < e && (*b == ' ' || *b == '\t'))
            b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
            e--;
        if (b == e || *b == '#')
            continue;
        if (json < 0) /* the first entry says which: a task object or a path */
            json = *b == '{';
        if ((st = add_entry(m, &cap)))
            break;
        char where[1100];
        snprintf(where, sizeof where, "%s:%d", path, line);
        st = json ? parse_entry(&m->e[m->n - 1], b, (size_t)(e - b), where)
                  : path_entry(&m->e[m->n - 1], b, (size_t)(e - b));
    }
    return st;
}

/* Mark entries that would write the output of an earlier one: the second run would replace
 * the first's files. */
static int outputs(tide_batch_manifest *m, const char *outdir) {
    for (int64_t i = 0; i < m->n; i++) {
        tide_batch_entry *e = &m->e[i];
        char o[4096];
        tide_task_output(&e->task, outdir, o, sizeof o);
        if (!(e->output = strdup(e->bad ? "" : o)))
            return tide_error(TIDE_E_NOMEM, "out of memory");
        for (int64_t j = 0; o[0] && !e->bad && j < i; j++) {
            if (m->e[j].bad || strcmp(m->e[j].output, o))
                continue;
            const size_t n = strlen(o) + strlen(m->e[j].id) + 64;
            if (!(e->bad = malloc(n)))
                return tide_error(TIDE_E_NOMEM, "out of memory");
            snprintf(e->bad, n, "%s: the output of task %s too", o, m->e[j].id);
        }
    }
    return 0;
}

int tide_batch_manifest_read(const char *path, const char *outdir, tide_batch_manifest *m) {
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "rb");
    if (!f)
        return tide_error(TIDE_E_IO, "%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    int st = text ? 0 : tide_error(TIDE_E_NOMEM, "out of memory");
    while (!st) {
        if (len == cap) {
            char *t = realloc(text, cap *= 2);
            if (!t) {
                st = tide_error(TIDE_E_NOMEM, "out of memory");
                break;
            }
            text = t;
        }
        const size_t n = fread(text + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f))
                st = tide_error(TIDE_E_IO, "%s: %s", path, strerror(errno));
            break;
        }
    }
    fclose(f);
    size_t k = 0;
    while (!st && k < len &&
           (text[k] == ' ' || text[k] == '\t' || text[k] == '\n' || text[k] == '\r'))
        k++;
    if (!st)
        st = k < len && text[k] == '[' ? read_array(path, text, len, m)
                                       : read_lines(path, text, len, m);
    free(text);
    if (!st)
        st = outputs(m, outdir);
    if (st)
        tide_batch_manifest_free(m);
    return st;
}

void tide_batch_manifest_free(tide_batch_manifest *m) {
    for (int64_t i = 0; i < m->n; i++) {
        tide_task_free(&m->e[i].task);
        free(m->e[i].id);
        free(m->e[i].bad);
        free(m->e[i].output);
    }
    free(m->e);
    memset(m, 0, sizeof *m);
}

int tide_batch_check_outputs(const tide_batch_args *a, const tide_batch_manifest *m,
                             const char *store) {
    if (a->outdir)
        return 0;
    for (int64_t i = 0; i < m->n; i++) {
        const tide_batch_entry *e = &m->e[i];
        if (e->bad || e->task.out || (e->task.kind == TIDE_TASK_REDUCE && store[0]))
            continue;
        return tide_cli_usage_error("batch", "task %s has nowhere to go: give --outdir DIR%s",
                                    e->id,
                                    e->task.kind == TIDE_TASK_REDUCE ? " or --store URI" : "");
    }
    return 0;
}

tide_task_runner *tide_batch_runner(const tide_batch_args *a, int device) {
    tide_ctx_options co = a->com.ctx_opt;
    if (device >= 0)
        co.device = device;
    tide_task_runner_opts o;
    tide_task_runner_opts_init(&o);
    o.config_file = a->cfg.instrument;
    o.default_file = a->cfg.def;
    o.sets = (const char *const *)a->cfg.sets;
    o.nsets = a->cfg.nsets;
    o.store = a->store;
    o.outdir = a->outdir;
    o.ctx_options = &co;
    tide_task_runner *r = NULL;
    const int st = tide_task_runner_create(&o, &r);
    if (st) {
        tide_cli_fail("batch", st);
        return NULL;
    }
    return r;
}

/* ---- running and summing up ------------------------------------------------------------ */

void tide_batch_result_free(tide_batch_result *r) {
    free(r->reason);
    free(r->output);
    memset(r, 0, sizeof *r);
}

int tide_batch_failed(const tide_batch_result *r) {
    return r->outcome == TIDE_TASK_FAILED || r->outcome == TIDE_TASK_RETRY;
}

void tide_batch_run_entry(tide_task_runner *r, const tide_batch_entry *e, int retries, int rank,
                          tide_batch_result *out) {
    memset(out, 0, sizeof *out);
    out->rank = rank;
    if (e->bad) {
        out->outcome = TIDE_TASK_FAILED;
        out->status = TIDE_E_FORMAT;
        out->reason = strdup(e->bad);
        return;
    }
    tide_task_result *res = malloc(sizeof *res);
    if (!res) {
        out->outcome = TIDE_TASK_RETRY;
        out->status = TIDE_E_NOMEM;
        return;
    }
    for (int k = 0;; k++) {
        tide_task_run(r, &e->task, res);
        if (res->outcome != TIDE_TASK_RETRY || k >= retries)
            break;
        sleep(1); /* the store may be coming back */
    }
    out->outcome = res->outcome;
    out->status = res->status;
    out->nsources = res->nsources;
    out->ncandidates = res->ncandidates;
    out->ms_total = res->ms_total;
    if (res->reason[0])
        out->reason = strdup(res->reason);
    if (res->output[0])
        out->output = strdup(res->output);
    free(res);
}

static void json_str_member(FILE *f, const char *key, const char *v, const char *tail) {
    char red[4200];
    fprintf(f, "\"%s\": ", key);
    tide_cli_json_string(f, tide_redact_uri(v ? v : "", red, sizeof red));
    fputs(tail, f);
}

int tide_batch_summary(const tide_batch_args *a, const tide_batch_manifest *m,
                       const tide_batch_result *res, int nranks, double wall_s,
                       const tide_ctx *ctx) {
    int64_t done = 0, inc = 0, failed = 0;
    int64_t *per = calloc((size_t)(nranks > 0 ? nranks : 1), sizeof *per);
    for (int64_t i = 0; i < m->n; i++) {
        const tide_batch_result *r = &res[i];
        done += r->outcome == TIDE_TASK_DONE;
        inc += r->outcome == TIDE_TASK_INCOMPLETE;
        failed += tide_batch_failed(r);
        if (per && r->rank >= 0 && r->rank < nranks && !m->e[i].bad)
            per[r->rank]++;
    }
    const double rate = wall_s > 0 ? (double)m->n / wall_s : 0;
    FILE *f = stdout;
    if (a->com.json) {
        fprintf(f, "{\n  \"tasks\": %lld,\n  \"done\": %lld,\n  \"incomplete\": %lld,\n",
                (long long)m->n, (long long)done, (long long)inc);
        fprintf(f, "  \"failed\": %lld,\n  \"wall_s\": %.3f,\n  \"rate\": %.4f,\n",
                (long long)failed, wall_s, rate);
        fprintf(f, "  \"backend\": \"%s\",\n  \"ranks\": %d,\n  \"per_rank\": [",
                ctx ? tide_backend_name(ctx->backend) : "", nranks);
        for (int k = 0; k < nranks; k++)
            fprintf(f, "%s%lld", k ? ", " : "", per ? (long long)per[k] : 0LL);
        fprintf(f, "],\n  \"results\": [");
        for (int64_t i = 0; i < m->n; i++) {
            const tide_batch_result *r = &res[i];
            fprintf(f, "%s\n    {", i ? "," : "");
            json_str_member(f, "id", m->e[i].id, ", ");
            fprintf(f, "\"outcome\": \"%s\", \"rank\": %d, ",
                    tide_batch_failed(r) ? "failed"
                                         : tide_task_outcome_name((tide_task_outcome)r->outcome),
                    r->rank);
            json_str_member(f, "output", r->output, ", ");
            fprintf(f, "\"n_sources\": %lld, \"n_candidates\": %lld, \"ms_total\": %.3f, ",
                    (long long)r->nsources, (long long)r->ncandidates, r->ms_total);
            json_str_member(f, "reason", r->reason, "}");
        }
        fprintf(f, "\n  ]\n}\n");
    } else {
        fprintf(f, "%lld tasks: %lld done, %lld incomplete, %lld failed in %.2f s (%.3f tasks/s",
                (long long)m->n, (long long)done, (long long)inc, (long long)failed, wall_s, rate);
        if (ctx)
            fprintf(f, ", %s backend", tide_backend_name(ctx->backend));
        fprintf(f, ")\n");
        if (nranks > 1) {
            fprintf(f, "  tasks per rank:");
            for (int k = 0; k < nranks; k++)
                fprintf(f, " %lld", per ? (long long)per[k] : 0LL);
            fprintf(f, "\n");
        }
        for (int64_t i = 0; i < m->n; i++) {
            const tide_batch_result *r = &res[i];
            if (!tide_batch_failed(r) && r->outcome != TIDE_TASK_INCOMPLETE)
                continue;
            char red[1200];
            fprintf(f, "  %s %s: %s\n", tide_batch_failed(r) ? "failed" : "incomplete", m->e[i].id,
                    tide_redact_uri(r->reason ? r->reason : "", red, sizeof red));
        }
    }
    free(per);
    return failed ? 1 : 0;
}
