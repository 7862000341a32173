/* task.h — one unit of unattended work, as a queue message or a batch manifest names it, and a
 * runner that does task after task on one warm context.
 *
 * A task is a frame to reduce (the whole `tide reduce` job, tide/job.h) or a science frame to
 * difference against a template (the whole `tide diff` job, tide/diff_job.h). It is written
 * as one JSON object, the same in a message of `tide worker`'s queue, a line or an array
 * element of a `tide batch` manifest and what `tide submit` publishes:
 *
 *     {"path": "FRAME.fits", "job": "reduce" | "diff", "template": "TEMPLATE.fits",
 *      "id": "ANY TEXT", "out": "CATALOG.fits | DIRECTORY", "options": {...}}
 *
 * "path" is required; "job" is "reduce" when absent; "template" is required for "diff" and
 * refused for "reduce"; "id" (default: the path) names the task in logs, metrics and the
 * dead-letter queue; "out" is the catalog (reduce) or the output directory (diff), else one
 * is derived from the runner's output directory and the frame's name. "options" holds
 * configuration keys and values as `--set KEY=VALUE` gives them (a value may be a JSON
 * number, string, boolean or array) plus the calibration choices "refcat", "index_dir" and
 * "solve" of `tide reduce`. Unknown members are refused: a typo must not be silently run with
 * defaults.
 *
 * The runner keeps one context, one configuration and one reduce and one diff job for all
 * the tasks it runs (the warm state a worker exists to keep); a task with options runs with
 * the configuration those options derive from the runner's, on the same context. */
#ifndef TIDE_TASK_H
#define TIDE_TASK_H
#include <stddef.h>
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a task asks for. */
typedef enum tide_task_kind {
    TIDE_TASK_REDUCE = 0, /**< reduce one frame to a calibrated catalog (and the store) */
    TIDE_TASK_DIFF = 1    /**< difference one science frame against a template */
} tide_task_kind;

/** One parsed task. Strings are owned by the task; free it with tide_task_free. */
typedef struct tide_task {
    tide_task_kind kind;
    char *id;      /**< the task's name (the path when the message gave none) */
    char *path;    /**< the frame, FILE or FILE[ext] */
    char *tmpl;    /**< the template (diff), else NULL */
    char *out;     /**< the catalog (reduce) or directory (diff) asked for, else NULL */
    char *options; /**< the "options" object as compact JSON text, else NULL */
} tide_task;

/** Parse one task from JSON text @p text of @p len bytes (need not be NUL-terminated).
 *  Errors: TIDE_E_FORMAT with the reason ("task: not JSON at line 1 column 7: ...",
 *  "task: \"path\" is missing", "task: unknown member \"paht\"", an option that is not a
 *  configuration key...). On error *t is zeroed. */
TIDE_API int tide_task_parse(const char *text, size_t len, tide_task *t);

/** Write @p t as compact JSON into a new string (free()); NULL when out of memory. */
TIDE_API char *tide_task_to_json(const tide_task *t);

/** Release the task's strings and zero it. NULL is a no-op. */
TIDE_API void tide_task_free(tide_task *t);

/** The name of a frame's derived outputs (the runner's OUTDIR/NAME.cat.fits and OUTDIR/NAME/,
 *  `tide diff --template`'s DIR/NAME): @p path's file name without its directory, an HDU
 *  selector "[...]", and .gz or .fz, then .fits, .fit or .fts ("d/a.fits.gz[1]" gives "a").
 *  Written into @p out of @p cap bytes (cut to fit). */
TIDE_API void tide_task_stem(const char *path, char *out, size_t cap);

/** The output task @p t writes with output directory @p outdir (NULL: none): its "out", else
 *  OUTDIR/NAME.cat.fits (reduce) or OUTDIR/NAME (diff), NAME from tide_task_stem; "" when
 *  there is neither (a reduce task then goes to the store only). Into @p out of @p cap
 *  bytes. */
TIDE_API void tide_task_output(const tide_task *t, const char *outdir, char *out, size_t cap);

/** How a runner is set up; tide_task_runner_opts_init gives the values in brackets. */
typedef struct tide_task_runner_opts {
    const char *config_file; /**< --config FILE [NULL: the instrument's and default's] */
    const char *const *sets; /**< --set KEY=VALUE overrides, applied after the file [NULL] */
    int nsets;               /**< entries of sets [0] */
    const char *store;       /**< store URI of reduce tasks [NULL: the configuration's or
                                  $TIDE_STORE; "" = none] */
    const char *outdir;      /**< where derived outputs go [NULL: reduce tasks go to the
                                  store only; a diff task must then name "out"] */
    const char *backend;     /**< "auto", "cpu" or "cuda" ["auto"] */
    int device;              /**< CUDA device ordinal [0] */

    const char *default_file; /**< --default FILE ("" = none) [NULL: searched, as tide config] */
    const tide_ctx_options *ctx_options; /**< the context's options as a whole (threads,
                                              logger, device memory cap...), when given:
                                              backend and device above are then ignored [NULL] */
} tide_task_runner_opts;

/** Fill @p o with the defaults in brackets. */
TIDE_API void tide_task_runner_opts_init(tide_task_runner_opts *o);

/** How a task ended. */
typedef enum tide_task_outcome {
    TIDE_TASK_DONE = 0,       /**< every output written and committed */
    TIDE_TASK_INCOMPLETE = 1, /**< written, but the calibration asked for could not be made
                                   (tide reduce's exit 3): done, with a warning */
    TIDE_TASK_FAILED = 2,     /**< the task itself is bad (missing or malformed file, bad
                                   option...): running it again gives the same failure */
    TIDE_TASK_RETRY = 3       /**< something outside the task failed (the store is
                                   unreachable, out of device memory...): nothing was
                                   written; run it again later */
} tide_task_outcome;

/** What one task gave. */
typedef struct tide_task_result {
    tide_task_outcome outcome;
    int status;          /**< the tide status of a failure (0 otherwise) */
    char reason[1024];   /**< why it failed or is incomplete ("" when done) */
    char output[4096];   /**< the catalog or directory written ("" for the store only) */
    int64_t image_id;    /**< the store id of the result: the frame's images.id (reduce), the
                              difference's diffs.id (diff); -1 without a store */
    int64_t nsources;    /**< sources of a reduce task */
    int64_t ncandidates; /**< candidates of a diff task */
    double ms_read, ms_compute, ms_store, ms_write, ms_total; /**< wall times */
    int fallback; /**< 1: the device ran out of memory and the task ran again on the CPU
                       backend (the catalog's BACKEND card says cpu) */
} tide_task_result;

/** A sequence of tasks on one warm context. Used by one thread at a time. */
typedef struct tide_task_runner tide_task_runner;

/** Make a runner: the context on the backend and device asked for, the configuration, the
 *  jobs. Errors: TIDE_E_CONFIG, TIDE_E_NODEVICE, those of the context. */
TIDE_API int tide_task_runner_create(const tide_task_runner_opts *o, tide_task_runner **out);

/** Run one task and fill @p res. Returns 0 when the task ran to an outcome (any of the four:
 *  read res->outcome), negative only for a bug of the caller (NULL arguments). After a
 *  TIDE_TASK_RETRY caused by the store, the runner has closed its store so that the next task
 *  opens it again (a restarted database is found again). */
TIDE_API int tide_task_run(tide_task_runner *r, const tide_task *t, tide_task_result *res);

/** The store reduce tasks go to (the options', the configuration's or $TIDE_STORE; "" =
 *  none): a caller can tell before the first task whether tasks without an output directory
 *  have anywhere to go. The string lives as long as the runner. */
TIDE_API const char *tide_task_runner_store(const tide_task_runner *r);

/** The runner's context (its backend and device name, for a summary). */
TIDE_API const tide_ctx *tide_task_runner_ctx(const tide_task_runner *r);

/** Name of an outcome: "done", "incomplete", "failed", "retry". */
TIDE_API const char *tide_task_outcome_name(tide_task_outcome o);

/** Free the runner, its jobs, configuration and context. NULL is a no-op. */
TIDE_API void tide_task_runner_destroy(tide_task_runner *r);

#ifdef __cplusplus
}
#endif
#endif
