/* task_runner.c — task after task on one warm context (task.h): the configuration loaded
 * once, one reduce job (and its open store) and one diff job (and its prepared template)
 * kept across tasks; a task with options runs on a configuration derived from the runner's;
 * every failure classified as the task's own (FAILED) or the world's (RETRY). A frame that
 * runs the device out of memory is run again on the CPU backend (a lane of its own, made on
 * first need), so that memory never ends a frame: the catalog's BACKEND card says cpu and the
 * result says it fell back. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "task_internal.h"
#include "tide/diff_job.h"
#include "tide/job.h"
#include "tide/status.h"
#include "tide/timer.h"

/* A context and the jobs on it. */
typedef struct lane {
    tide_ctx *ctx;
    tide_reduce_job *reduce;
    tide_diff_job *diff; /* on cfg: keeps the template of the last diff task */
} lane;

struct tide_task_runner {
    tide_ctx *ctx;
    tide_config *cfg;
    tide_reduce_job *reduce;
    tide_diff_job *diff; /* on cfg: keeps the template of the last diff task */
    lane cpu;            /* the CPU fallback of a CUDA runner, made on first need */
    tide_ctx_options co; /* the context's options, for the fallback's */
    tide_diff_params dparams;
    char *store;    /* the options' store, or NULL: the configuration's */
    char *outdir;   /* or NULL */
    char *files[2]; /* the configuration files (instrument, default): never an output */
};

void tide_task_runner_opts_init(tide_task_runner_opts *o) {
    memset(o, 0, sizeof *o);
    o->backend = "auto";
}

const char *tide_task_outcome_name(tide_task_outcome o) {
    switch (o) {
    case TIDE_TASK_DONE: return "done";
    case TIDE_TASK_INCOMPLETE: return "incomplete";
    case TIDE_TASK_FAILED: return "failed";
    case TIDE_TASK_RETRY: return "retry";
    }
    return "unknown";
}

static char *dup_or_null(const char *s, int *st) {
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *st = tide_error(TIDE_E_NOMEM, "out of memory");
    return d;
}

/* The configuration: built-ins, default.json, the file, the overrides ("KEY=VALUE" without a
 * section is a processing key, as for --set). */
static int load_config(const tide_task_runner_opts *o, tide_config **out) {
    char **sets = o->nsets > 0 ? calloc((size_t)o->nsets, sizeof *sets) : NULL;
    if (o->nsets > 0 && !sets)
        return tide_error(TIDE_E_NOMEM, "out of memory");
    int st = 0;
    for (int k = 0; !st && k < o->nsets; k++) {
        const char *v = o->sets[k] ? o->sets[k] : "";
        const char *eq = strchr(v, '='), *dot = strchr(v, '.');
        if (!eq) {
            st = tide_error(TIDE_E_CONFIG, "--set needs SECTION.KEY=VALUE (got '%s')", v);
            break;
        }
        const size_t n = strlen(v) + 16;
        if (!(sets[k] = malloc(n)))
            st = tide_error(TIDE_E_NOMEM, "out of memory");
        else
            snprintf(sets[k], n, "%s%s", dot && dot < eq ? "" : "processing.", v);
    }
    if (!st) {
        tide_config_load_options lo;
        memset(&lo, 0, sizeof lo);
        lo.default_path = o->default_file;
        lo.instrument_path = o->config_file;
        lo.overrides = (const char *const *)sets;
        lo.noverrides = o->nsets;
        st = tide_config_load(out, &lo);
    }
    for (int k = 0; k < o->nsets && sets; k++)
        free(sets[k]);
    free(sets);
    return st;
}

int tide_task_runner_create(const tide_task_runner_opts *o, tide_task_runner **out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "tide_task_runner_create: NULL output");
    *out = NULL;
    tide_task_runner_opts def;
    if (!o) {
        tide_task_runner_opts_init(&def);
        o = &def;
    }
    tide_task_runner *r = calloc(1, sizeof *r);
    if (!r)
        return tide_error(TIDE_E_NOMEM, "out of memory");
    int st = 0;
    r->store = dup_or_null(o->store, &st);
    r->outdir = dup_or_null(o->outdir, &st);
    r->files[0] = dup_or_null(o->config_file, &st);
    r->files[1] = dup_or_null(o->default_file && o->default_file[0] ? o->default_file : NULL, &st);
    if (!st)
        st = load_config(o, &r->cfg);
    tide_ctx_options co;
    if (o->ctx_options) {
        co = *o->ctx_options;
    } else {
        memset(&co, 0, sizeof co);
        co.device = o->device;
        if (!st && tide_backend_parse(o->backend ? o->backend : "auto", &co.backend))
            st = tide_error(TIDE_E_INVAL, "backend \"%s\": auto, cpu or cuda", o->backend);
    }
    r->co = co;
    if (!st)
        st = tide_ctx_create(&r->ctx, &co);
    if (!st)
        st = tide_reduce_job_create(r->ctx, r->cfg, &r->reduce);
    if (!st)
        st = tide_diff_job_create(r->ctx, r->cfg, &r->diff);
    if (!st && r->outdir && mkdir(r->outdir, 0777) && errno != EEXIST)
        st = tide_error(TIDE_E_IO, "%s: cannot create the output directory: %s", r->outdir,
                        strerror(errno));
    tide_diff_params_default(&r->dparams);
    r->dparams.config = r->cfg;
    r->dparams.keep_stamps = 16; /* tide diff's --top */
    if (st) {
        tide_task_runner_destroy(r);
        return st;
    }
    *out = r;
    return 0;
}

void tide_task_runner_destroy(tide_task_runner *r) {
    if (!r)
        return;
    tide_diff_job_destroy(r->diff);
    tide_reduce_job_destroy(r->reduce);
    if (r->ctx)
        tide_ctx_destroy(r->ctx);
    tide_diff_job_destroy(r->cpu.diff);
    tide_reduce_job_destroy(r->cpu.reduce);
    if (r->cpu.ctx)
        tide_ctx_destroy(r->cpu.ctx);
    tide_config_free(r->cfg);
    free(r->store);
    free(r->outdir);
    free(r->files[0]);
    free(r->files[1]);
    free(r);
}

const char *tide_task_runner_store(const tide_task_runner *r) {
    if (!r)
        return "";
    if (r->store)
        return r->store;
    const char *v = NULL;
    if (tide_config_is_set(r->cfg, "store.uri") && !tide_config_get_str(r->cfg, "store.uri", &v) &&
        v)
        return v;
    v = getenv("TIDE_STORE");
    return v ? v : "";
}

const tide_ctx *tide_task_runner_ctx(const tide_task_runner *r) {
    return r ? r->ctx : NULL;
}

/* The CPU lane of a CUDA runner, made on first need: 0, or its error. */
static int cpu_lane(tide_task_runner *r) {
    if (r->cpu.ctx)
        return 0;
    tide_ctx_options co = r->co;
    co.backend = TIDE_BACKEND_CPU;
    co.device_mem_cap = 0;
    int st = tide_ctx_create(&r->cpu.ctx, &co);
    if (!st)
        st = tide_reduce_job_create(r->cpu.ctx, r->cfg, &r->cpu.reduce);
    if (!st)
        st = tide_diff_job_create(r->cpu.ctx, r->cfg, &r->cpu.diff);
    if (st) {
        tide_diff_job_destroy(r->cpu.diff);
        tide_reduce_job_destroy(r->cpu.reduce);
        if (r->cpu.ctx)
            tide_ctx_destroy(r->cpu.ctx);
        memset(&r->cpu, 0, sizeof r->cpu);
    }
    return st;
}

/* A status as an outcome: what the world did wrong (a store down, memory) is worth a retry;
 * what the task did wrong is not. */
static tide_task_outcome classify(int st) {
    switch (st) {
    case TIDE_E_DB:
    case TIDE_E_NOMEM:
    case TIDE_E_CUDA:
    case TIDE_E_TIMEOUT: return TIDE_TASK_RETRY;
    default: return TIDE_TASK_FAILED;
    }
}

static void fail(tide_task_result *res, int st) {
    res->outcome = classify(st);
    res->status = st;
    const char *d = tide_error_detail();
    snprintf(res->reason, sizeof res->reason, "%s", d && d[0] ? d : tide_strerror(st));
}

static int run_reduce(tide_task_runner *r, lane *L, const tide_task *t, const tide_task_opts *to,
                      const tide_config *cfg, tide_task_result *res) {
    tide_reduce_request rq;
    tide_reduce_request_init(&rq);
    rq.frame = t->path;
    tide_task_output(t, r->outdir, res->output, sizeof res->output);
    rq.catalog = res->output[0] ? res->output : NULL;
    rq.config_files[0] = r->files[0];
    rq.config_files[1] = r->files[1];
    rq.cal.store = r->store;
    rq.cal.refcat = to->refcat;
    rq.cal.index_dir = to->index_dir;
    rq.cal.solve = to->solve;
    int st = tide_reduce_job_set_config(L->reduce, cfg);
    tide_reduce_report rep;
    memset(&rep, 0, sizeof rep);
    if (!st)
        st = tide_reduce_job_run(L->reduce, &rq, &rep);
    tide_reduce_job_set_config(L->reduce, r->cfg);
    if (st) {
        res->output[0] = 0;
        return st;
    }
    res->outcome = rep.incomplete ? TIDE_TASK_INCOMPLETE : TIDE_TASK_DONE;
    if (rep.incomplete)
        snprintf(res->reason, sizeof res->reason, "%s", rep.warning);
    res->image_id = rep.image_id;
    res->nsources = rep.res.n_sources;
    res->ms_read = rep.ms_read;
    res->ms_compute = rep.ms_reduce + rep.ms_calibrate;
    res->ms_store = rep.ms_store;
    res->ms_write = rep.ms_write;
    tide_reduce_report_free(&rep);
    return 0;
}

static int run_diff(tide_task_runner *r, lane *L, const tide_task *t, const tide_config *cfg,
                    tide_task_result *res) {
    tide_diff_request rq;
    tide_diff_request_init(&rq);
    tide_task_output(t, r->outdir, res->output, sizeof res->output);
    if (!t->out && r->outdir)
        rq.make_dir = r->outdir;
    if (!res->output[0]) {
        return tide_error(TIDE_E_INVAL, "%s: a diff task needs \"out\" or an output directory",
                          t->path);
    }
    const char *ins[2];
    int nin = 0;
    for (int k = 0; k < 2; k++)
        if (r->files[k])
            ins[nin++] = r->files[k];
    rq.science = t->path;
    rq.tmpl = t->tmpl;
    rq.outdir = res->output;
    tide_diff_params p = r->dparams;
    p.config = cfg;
    rq.params = &p;
    rq.ntop = 16;
    /* As `tide diff --template`: on the template's grid, the template prepared once for a
     * run of science frames against it. */
    rq.warm = 1;
    rq.inputs = ins;
    rq.ninputs = nin;
    /* the runner's store takes the difference's rows too (store_cand.h) */
    rq.store = tide_task_runner_store(r);
    tide_diff_job *job = L->diff, *own = NULL; /* a task with options: a job of its own */
    int st = cfg == r->cfg ? 0 : tide_diff_job_create(L->ctx, cfg, &own);
    if (own)
        job = own;
    tide_diff_report rep;
    memset(&rep, 0, sizeof rep);
    if (!st)
        st = tide_diff_job_run(job, &rq, &rep);
    tide_diff_job_destroy(own);
    if (st) {
        res->output[0] = 0;
        return st;
    }
    res->outcome = TIDE_TASK_DONE;
    res->ncandidates = rep.res.cands.nrows;
    res->ms_read = rep.ms_read + rep.ms_template;
    res->ms_compute = rep.ms_diff;
    res->ms_write = rep.ms_write;
    res->ms_store = rep.ms_store;
    res->image_id = rep.diff_id;
    tide_diff_report_free(&rep);
    return 0;
}

int tide_task_run(tide_task_runner *r, const tide_task *t, tide_task_result *res) {
    if (!res)
        return tide_error(TIDE_E_INVAL, "tide_task_run: NULL result");
    memset(res, 0, sizeof *res);
    res->image_id = -1;
    if (!r || !t || !t->path)
        return tide_error(TIDE_E_INVAL, "tide_task_run: NULL runner, task or path");
    const double t0 = tide_now();
    tide_error_clear();
    tide_task_opts to;
    tide_config *own = NULL;
    int st = tide_task_opts_parse(t->options, t->kind, &to);
    if (!st && to.nsets)
        st = tide_task_opts_config(r->cfg, &to, &own);
    const tide_config *cfg = own ? own : r->cfg;
    lane main_lane = {r->ctx, r->reduce, r->diff};
    const int parsed = !st;
    if (parsed)
        st = t->kind == TIDE_TASK_REDUCE ? run_reduce(r, &main_lane, t, &to, cfg, res)
                                         : run_diff(r, &main_lane, t, cfg, res);
    if (parsed && st == TIDE_E_NOMEM && r->ctx->backend == TIDE_BACKEND_CUDA && !cpu_lane(r)) {
        /* the device ran out of memory (a frame larger than it, or a cap): the CPU backend
         * gives the same answers, later */
        tide_log(&r->ctx->log, TIDE_LOG_WARN, "task",
                 "%s: the device ran out of memory (%s); running it on the CPU backend", t->path,
                 tide_error_detail());
        memset(res, 0, sizeof *res);
        res->image_id = -1;
        tide_error_clear();
        st = t->kind == TIDE_TASK_REDUCE ? run_reduce(r, &r->cpu, t, &to, cfg, res)
                                         : run_diff(r, &r->cpu, t, cfg, res);
        res->fallback = 1;
    }
    if (st)
        fail(res, st);
    if (st && res->outcome == TIDE_TASK_RETRY && t->kind == TIDE_TASK_REDUCE) {
        /* The store (or the device) failed under the task: a fresh job opens the store
         * again on the next task, so a restarted database is found again. */
        tide_reduce_job *j = NULL;
        if (!tide_reduce_job_create(r->ctx, r->cfg, &j)) {
            tide_reduce_job_destroy(r->reduce);
            r->reduce = j;
        }
        if (r->cpu.ctx && !tide_reduce_job_create(r->cpu.ctx, r->cfg, &j)) {
            tide_reduce_job_destroy(r->cpu.reduce);
            r->cpu.reduce = j;
        }
    }
    tide_task_opts_free(&to);
    tide_config_free(own);
    res->ms_total = 1e3 * (tide_now() - t0);
    return 0;
}
