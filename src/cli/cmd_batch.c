/* cmd_batch.c — `tide batch MANIFEST`: every task of a manifest (batch.h) on one warm task
 * runner (task.h), task after task, with a progress line and a summary. Under mpirun it
 * hands itself over to tide-batch-mpi (batch_mpi.c), installed beside it: only that program
 * links libmpi, so no other tide command pays OpenMPI's start-up. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "progress.h"
#include "tide/timer.h"

/* Started by mpirun (OpenMPI sets OMPI_COMM_WORLD_SIZE; PMIx launchers PMIX_RANK). */
static int under_mpirun(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK");
}

/* Run tide-batch-mpi from this program's directory with the same arguments; returns only
 * when it cannot (the exit code to give), after saying why. */
static int exec_mpi(int argc, char **argv) {
    char self[PATH_MAX], prog[PATH_MAX + 32];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "tide batch: error: cannot find this program: %s\n", strerror(errno));
        return 1;
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = 0;
    snprintf(prog, sizeof prog, "%s/tide-batch-mpi", self);
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (!args)
        return 1;
    args[0] = prog;
    for (int i = 0; i < argc; i++) /* argv[0] is "batch" */
        args[i + 1] = argv[i];
    execv(prog, args);
    fprintf(stderr,
            "tide batch: error: started by mpirun, but %s cannot be run (%s): tide was built "
            "without MPI (OpenMPI's libopenmpi-dev), or the program is not installed beside "
            "tide\n",
            prog, strerror(errno));
    free(args);
    return 1;
}

int tide_cmd_batch(int argc, char **argv) {
    if (under_mpirun()) /* every rank: tide-batch-mpi parses (rank 0 reports) */
        return exec_mpi(argc, argv);
    tide_batch_args a;
    int rc = tide_batch_parse_args(argc, argv, &a);
    if (rc) {
        tide_batch_args_free(&a);
        return rc < 0 ? 0 : rc;
    }
    tide_batch_manifest m;
    int st = tide_batch_manifest_read(a.manifest, a.outdir, &m);
    if (st) {
        tide_batch_args_free(&a);
        return tide_cli_fail("batch", st);
    }
    const double t0 = tide_now();
    tide_task_runner *r = tide_batch_runner(&a, -1);
    tide_batch_result *res = r ? calloc((size_t)(m.n ? m.n : 1), sizeof *res) : NULL;
    rc = 1;
    if (r && !res)
        tide_cli_fail("batch", tide_error(TIDE_E_NOMEM, "out of memory"));
    if (res && (rc = tide_batch_check_outputs(&a, &m, tide_task_runner_store(r))) == 0) {
        tide_progress pg;
        tide_progress_start(&pg, m.n, "tasks", a.progress, a.com.json);
        for (int64_t i = 0; i < m.n; i++) {
            tide_batch_run_entry(r, &m.e[i], a.retries, 0, &res[i]);
            tide_progress_step(&pg, tide_batch_failed(&res[i]));
        }
        tide_progress_end(&pg);
        rc = tide_batch_summary(&a, &m, res, 1, tide_now() - t0, tide_task_runner_ctx(r));
    }
    for (int64_t i = 0; res && i < m.n; i++)
        tide_batch_result_free(&res[i]);
    free(res);
    tide_task_runner_destroy(r);
    tide_batch_manifest_free(&m);
    tide_batch_args_free(&a);
    return rc;
}
