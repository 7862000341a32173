/* batch.h — what `tide batch` (cmd_batch.c, one process) and `tide-batch-mpi` (batch_mpi.c,
 * the same under mpirun) share: the command line, the manifest, running one task with its
 * retries, and the summary. */
#ifndef TIDE_CLI_BATCH_H
#define TIDE_CLI_BATCH_H
#include <stdint.h>

#include "cli.h"
#include "cli_config.h"
#include "tide/task.h"

/** The command line of tide batch. */
typedef struct tide_batch_args {
    tide_cli_common com;  /**< --backend, --device, --threads, --log-*, --json */
    tide_cli_config cfg;  /**< --config, --default, --set */
    const char *manifest; /**< MANIFEST */
    const char *outdir;   /**< --outdir DIR, or NULL */
    const char *store;    /**< --store URI, or NULL */
    int progress;         /**< --progress 1, --no-progress 0, else -1: on a terminal */
    int retries;          /**< --retries N: reruns of a task that asks for a retry [2] */
    int device_given;     /**< --device was given (else MPI: the local rank modulo the GPUs) */
    int threads_given;    /**< --threads was given (else MPI: the host's cores shared out) */
    int dispatch_only;    /**< --rank0 dispatch: rank 0 hands out tasks and runs none [work] */
} tide_batch_args;

/** Parse argv: 0, 2 after a usage message, -1 after --help (printed). */
int tide_batch_parse_args(int argc, char **argv, tide_batch_args *a);

/** Free what the arguments own. */
void tide_batch_args_free(tide_batch_args *a);

/** One entry of a manifest: a task, or the reason it could not be read as one. */
typedef struct tide_batch_entry {
    tide_task task; /**< parsed (task.path NULL when bad) */
    char *id;       /**< the task's id, or "MANIFEST:LINE" of a bad entry (owned) */
    char *bad;      /**< why the entry is not a task, or NULL (owned) */
    char *output;   /**< the output it writes ("" = the store only) (owned) */
} tide_batch_entry;

/** A manifest read whole. */
typedef struct tide_batch_manifest {
    tide_batch_entry *e;
    int64_t n;
} tide_batch_manifest;

/** Read MANIFEST: JSON lines, one JSON array of tasks, or FITS paths one per line (see the
 *  help). An entry that is not a task, or that would write another's output, is kept with
 *  its reason (it counts as failed). Errors: TIDE_E_IO (unreadable), TIDE_E_FORMAT (a JSON
 *  array that does not parse). */
int tide_batch_manifest_read(const char *path, const char *outdir, tide_batch_manifest *m);

/** Free a manifest. */
void tide_batch_manifest_free(tide_batch_manifest *m);

/** Usage checks once the manifest is known: 0 or 2 after a message (no --outdir while a task
 *  has no "out" and there is no store). @p store is the runner's store ("" = none). */
int tide_batch_check_outputs(const tide_batch_args *a, const tide_batch_manifest *m,
                             const char *store);

/** The runner of the arguments; device @p device (-1: the arguments'). NULL after printing
 *  the error. */
tide_task_runner *tide_batch_runner(const tide_batch_args *a, int device);

/** What one task gave, kept for the summary. */
typedef struct tide_batch_result {
    int outcome; /**< tide_task_outcome; TIDE_TASK_RETRY still after the retries = failed */
    int status;  /**< the tide status of a failure */
    int rank;    /**< the rank that ran it */
    int64_t nsources, ncandidates;
    double ms_total;
    char *reason; /**< owned, or NULL */
    char *output; /**< owned, or NULL */
} tide_batch_result;

/** Run entry @p e on @p r into @p out (rank @p rank), rerunning it up to @p retries times
 *  after a second's pause while it asks for a retry. */
void tide_batch_run_entry(tide_task_runner *r, const tide_batch_entry *e, int retries, int rank,
                          tide_batch_result *out);

/** Free a result's strings. */
void tide_batch_result_free(tide_batch_result *r);

/** 1 when the result counts as a failure. */
int tide_batch_failed(const tide_batch_result *r);

/** Print the summary (text, or JSON with --json) to stdout and return the exit code: 0 when
 *  every task is done or incomplete, 1 when any failed. */
int tide_batch_summary(const tide_batch_args *a, const tide_batch_manifest *m,
                       const tide_batch_result *res, int nranks, double wall_s,
                       const tide_ctx *ctx);

/** The help text. */
extern const char *tide_batch_help;

#endif
