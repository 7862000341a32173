/* test_task_runner.c — the task runner of task.h on small simulated frames: a reduce task
 * writes the catalog `tide reduce` writes for the same frame and options, byte for byte (with
 * and without options of its own); the store alone, without a catalog; a missing file and a
 * file that is not FITS fail naming the file; a store that cannot be opened asks for a retry
 * and the next task after it is back is done. With TIDE_TEST_PG (tests/cli/test_task_pg.sh
 * starts a server) the same against PostgreSQL stopped and started again
 * (TIDE_TEST_PG_DOWN, TIDE_TEST_PG_UP: the shell commands that do it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tide/fits.h"
#include "tide/sim.h"
#include "tide/store_cand.h"
#include "tide/task.h"
#include "common/test_files.h"
#include "tide_test.h"

static char dir[256];

static const char *at(const char *name) {
    static char buf[8][700];
    static int next;
    char *b = buf[next++ % 8];
    snprintf(b, sizeof buf[0], "%s/%s", dir, name);
    return b;
}

static int same_file(const char *a, const char *b) {
    return tide_test_same_file(a, b) >= 0;
}

static int make_frame(tide_ctx *ctx, int k) {
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    sp.seed = (uint64_t)(20 + k);
    sp.width = 384, sp.height = 320;
    sp.nstars = 250;
    sp.ngalaxies = 5;
    tide_sim_frame f;
    int st = tide_sim_run(ctx, &sp, &f, NULL);
    if (st)
        return st;
    char name[32];
    snprintf(name, sizeof name, "frame%d.fits", k);
    st = tide_fits_write_image(at(name), &f.image, &f.header);
    tide_sim_frame_free(ctx, &f);
    return st;
}

static tide_task_runner *runner(const char *store, const char *outdir) {
    tide_task_runner_opts o;
    tide_task_runner_opts_init(&o);
    o.backend = "cpu";
    o.default_file = ""; /* as --default none */
    o.store = store;
    o.outdir = outdir;
    tide_task_runner *r = NULL;
    CHECK_OK(tide_task_runner_create(&o, &r));
    return r;
}

/* Run task @p json on @p r; the outcome is returned, the result left in *res. */
static tide_task_outcome run(tide_task_runner *r, const char *json, tide_task_result *res) {
    tide_task t;
    memset(res, 0, sizeof *res);
    res->outcome = TIDE_TASK_FAILED;
    CHECK_OK(tide_task_parse(json, strlen(json), &t));
    if (!t.path)
        return TIDE_TASK_FAILED;
    CHECK_OK(tide_task_run(r, &t, res));
    tide_task_free(&t);
    printf("%s: %s %s (%.1f ms, store %.1f ms)\n", json, tide_task_outcome_name(res->outcome),
           res->reason, res->ms_total, res->ms_store);
    return res->outcome;
}

static void has(const char *text, const char *what) {
    if (!strstr(text, what)) {
        fprintf(stderr, "\"%s\" does not name \"%s\"\n", text, what);
        tide_test_failures++;
    }
}

/* The PostgreSQL store stopped and started again under the runner. */
static void pg_restart(const char *bin) {
    const char *pg = getenv("TIDE_TEST_PG"), *down = getenv("TIDE_TEST_PG_DOWN"),
               *up = getenv("TIDE_TEST_PG_UP");
    if (!pg || !down || !up) {
        printf("no TIDE_TEST_PG, TIDE_TEST_PG_DOWN, TIDE_TEST_PG_UP: PostgreSQL part skipped\n");
        return;
    }
    tide_task_runner *r = runner(pg, NULL);
    if (!r)
        return;
    char task[800];
    tide_task_result *res = malloc(sizeof *res);
    snprintf(task, sizeof task, "{\"path\": \"%s\"}", at("frame1.fits"));
    CHECK(run(r, task, res) == TIDE_TASK_DONE);
    CHECK(res->image_id > 0 && res->output[0] == 0); /* the store only */
    CHECK(system(down) == 0);
    snprintf(task, sizeof task, "{\"path\": \"%s\"}", at("frame2.fits"));
    CHECK(run(r, task, res) == TIDE_TASK_RETRY);
    CHECK(res->status == TIDE_E_DB && res->image_id == -1);
    CHECK(system(up) == 0);
    CHECK(run(r, task, res) == TIDE_TASK_DONE); /* the runner connected again */
    CHECK(res->image_id > 0);
    free(res);
    tide_task_runner_destroy(r);
    (void)bin;
}

int main(void) {
    const char *bin = getenv("TIDE_BIN");
    if (!bin)
        TIDE_TEST_SKIP("TIDE_BIN is not set (run through ctest)");
    snprintf(dir, sizeof dir, "/tmp/tide-test-runner-XXXXXX");
    if (!mkdtemp(dir))
        TIDE_TEST_SKIP("no temporary directory");
    setenv("SOURCE_DATE_EPOCH", "1700000000", 1); /* PROCDATE, for byte-identical catalogs */
    unsetenv("TIDE_STORE");
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    if (!ctx)
        return TIDE_TEST_RESULT();
    for (int k = 1; k <= 2; k++)
        CHECK_OK(make_frame(ctx, k));
    tide_ctx_destroy(ctx);
    FILE *junk = fopen(at("junk.fits"), "w");
    if (junk) {
        fputs("this is not a FITS file\n", junk);
        fclose(junk);
    }
    char store[700], task[1600], cmd[4000];
    snprintf(store, sizeof store, "sqlite:%s", at("r.db"));
    tide_task_result *res = malloc(sizeof *res);
    tide_task_runner *r = runner(store, at("out"));
    if (!r || !res)
        return TIDE_TEST_RESULT();
    CHECK(!strcmp(tide_task_runner_store(r), store));
    CHECK(tide_task_runner_ctx(r) && tide_task_runner_ctx(r)->backend == TIDE_BACKEND_CPU);

    /* a reduce task: tide reduce's catalog, byte for byte; the store's row */
    snprintf(task, sizeof task, "{\"path\": \"%s\"}", at("frame1.fits"));
    CHECK(run(r, task, res) == TIDE_TASK_DONE);
    CHECK(!strcmp(res->output, at("out/frame1.cat.fits")));
    CHECK(res->nsources > 50 && res->image_id > 0 && res->status == 0 && !res->reason[0]);
    snprintf(cmd, sizeof cmd,
             "'%s' reduce '%s' -o '%s' --default none --backend cpu >/dev/null 2>&1", bin,
             at("frame1.fits"), at("cli1.fits"));
    CHECK(system(cmd) == 0);
    CHECK(same_file(at("out/frame1.cat.fits"), at("cli1.fits")));

    /* with options: the configuration derived for this task only, the store kept open */
    snprintf(task, sizeof task,
             "{\"path\": \"%s\", \"id\": \"opt\", \"out\": \"%s\", \"options\": "
             "{\"detect_thresh\": 4, \"aper_radii\": [2, 4]}}",
             at("frame2.fits"), at("opt2.fits"));
    CHECK(run(r, task, res) == TIDE_TASK_DONE);
    const int64_t nopt = res->nsources;
    snprintf(cmd, sizeof cmd,
             "'%s' reduce '%s' -o '%s' --default none --backend cpu --set detect_thresh=4 "
             "--set aper_radii=2,4 >/dev/null 2>&1",
             bin, at("frame2.fits"), at("cli2.fits"));
    CHECK(system(cmd) == 0);
    CHECK(same_file(at("opt2.fits"), at("cli2.fits")));
    snprintf(task, sizeof task, "{\"path\": \"%s\"}", at("frame2.fits"));
    CHECK(run(r, task, res) == TIDE_TASK_DONE); /* and the runner's own again after it */
    CHECK(res->nsources < nopt);                /* threshold 5 again, not 4 */

    /* failures of the task itself: FAILED, naming the file */
    snprintf(task, sizeof task, "{\"path\": \"%s\"}", at("missing.fits"));
    CHECK(run(r, task, res) == TIDE_TASK_FAILED);
    has(res->reason, "missing.fits");
    CHECK(res->status != 0 && res->output[0] == 0 && res->image_id == -1);
    snprintf(task, sizeof task, "{\"path\": \"%s\"}", at("junk.fits"));
    CHECK(run(r, task, res) == TIDE_TASK_FAILED);
    has(res->reason, "junk.fits");
    CHECK(access(at("out/junk.cat.fits"), F_OK) != 0);
    snprintf(task, sizeof task, "{\"path\": \"%s\", \"job\": \"diff\", \"template\": \"%s\"}",
             at("frame1.fits"), at("missing.fits"));
    CHECK(run(r, task, res) == TIDE_TASK_FAILED);
    has(res->reason, "missing.fits");
    tide_task_runner_destroy(r);

    /* the store alone; and no output at all */
    snprintf(store, sizeof store, "sqlite:%s", at("only.db"));
    r = runner(store, NULL);
    snprintf(task, sizeof task, "{\"path\": \"%s\"}", at("frame1.fits"));
    CHECK(run(r, task, res) == TIDE_TASK_DONE);
    CHECK(res->image_id > 0 && res->output[0] == 0);
    /* a diff task puts the difference, its candidates and objects into the runner's store */
    snprintf(cmd, sizeof cmd,
             "'%s' sim -o '%s' --epoch2 '%s' --width 384 --height 384 --nstars 150 --ngal 5 "
             "--seed 7 >/dev/null 2>&1",
             bin, at("tmpl.fits"), at("new.fits"));
    CHECK(system(cmd) == 0);
    snprintf(task, sizeof task,
             "{\"path\": \"%s\", \"job\": \"diff\", \"template\": \"%s\", \"out\": \"%s\"}",
             at("new.fits"), at("tmpl.fits"), at("dout"));
    CHECK(run(r, task, res) == TIDE_TASK_DONE);
    const int64_t did = res->image_id, ncand = res->ncandidates;
    CHECK(did > 0 && ncand > 0);
    CHECK(run(r, task, res) == TIDE_TASK_DONE); /* again: replaced, not added */
    CHECK(res->image_id > did && res->ncandidates == ncand);
    tide_task_runner_destroy(r);
    tide_store *ds = NULL;
    CHECK_OK(tide_store_open(store, NULL, &ds));
    int64_t nd = -1, nc = -1, no = -1;
    if (ds)
        CHECK_OK(tide_store_count_diffs(ds, &nd, &nc, NULL, &no));
    CHECK(nd == 1 && nc == ncand && no > 0 && no <= ncand);
    tide_store_close(ds);
    snprintf(task, sizeof task, "{\"path\": \"%s\"}", at("frame1.fits"));
    r = runner("", NULL);
    CHECK(run(r, task, res) == TIDE_TASK_FAILED);
    has(res->reason, "no output");
    snprintf(task, sizeof task, "{\"path\": \"%s\", \"job\": \"diff\", \"template\": \"%s\"}",
             at("frame1.fits"), at("frame2.fits"));
    CHECK(run(r, task, res) == TIDE_TASK_FAILED);
    has(res->reason, "needs \"out\"");
    tide_task_runner_destroy(r);

    /* a store that cannot be opened (its directory is missing): retry; back: done */
    snprintf(store, sizeof store, "sqlite:%s", at("later/s.db"));
    r = runner(store, NULL);
    snprintf(task, sizeof task, "{\"path\": \"%s\"}", at("frame1.fits"));
    CHECK(run(r, task, res) == TIDE_TASK_RETRY);
    CHECK(res->status == TIDE_E_DB);
    CHECK(mkdir(at("later"), 0755) == 0);
    CHECK(run(r, task, res) == TIDE_TASK_DONE);
    CHECK(res->image_id > 0);
    tide_task_runner_destroy(r);

    CHECK(tide_task_run(NULL, NULL, res) == TIDE_E_INVAL);
    tide_task_runner_destroy(NULL);
    pg_restart(bin);
    free(res);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return TIDE_TEST_RESULT();
}
