/* test_diff_job.c — the library's whole `tide diff` job (diff_job.h): two simulated science
 * frames differenced one after the other against one template on one job give outputs
 * byte-identical to `tide diff --template`, the template is prepared once, a run replaced by
 * a new one leaves nothing behind once the job ends, and an output directory that would
 * replace an input is refused before anything is read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/diff_job.h"
#include "common/test_files.h"
#include "tide_test.h"

static char dir[256];

static const char *path(const char *name) {
    static char buf[4][512];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", dir, name);
    return b;
}
/* The template and science frame k of the pair simulated with epoch-2 offset @p dra. */
static int simulate(const char *bin, int k, double dra) {
    char cmd[2000];
    snprintf(cmd, sizeof cmd,
             "'%s' sim -o '%s/tmpl%d.fits' --epoch2 '%s/sci%d.fits' --width 512 --height 512 "
             "--nstars 300 --seed 7 --e2-dra %g >/dev/null 2>&1",
             bin, dir, k, dir, k, dra);
    return system(cmd);
}

/* One warm request on @p job: science frame @p sci into @p out (its parent @p make_dir created
 * when not NULL); the status, the report into *rep. */
static int run_one(tide_diff_job *job, const char *sci, const char *out, const char *make_dir,
                   const tide_diff_params *p, tide_diff_report *rep) {
    tide_diff_request rq;
    tide_diff_request_init(&rq);
    rq.science = sci;
    rq.tmpl = path("tmpl1.fits");
    rq.outdir = out;
    rq.make_dir = make_dir;
    rq.params = p;
    rq.warm = 1;
    return tide_diff_job_run(job, &rq, rep);
}

int main(void) {
    const char *bin = getenv("TIDE_BIN");
    if (!bin)
        TIDE_TEST_SKIP("TIDE_BIN is not set (run through ctest)");
    snprintf(dir, sizeof dir, "/tmp/tide-test-diffjob-XXXXXX");
    if (!mkdtemp(dir))
        TIDE_TEST_SKIP("no temporary directory");
    setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
    /* the same seed: one sky; tmpl1 is the template of both science frames */
    CHECK(simulate(bin, 1, 40) == 0);
    CHECK(simulate(bin, 2, 20) == 0);
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    if (!ctx)
        return TIDE_TEST_RESULT();

    tide_config *cfg = NULL;
    tide_config_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.default_path = ""; /* as tide diff --default none */
    CHECK_OK(tide_config_load(&cfg, &lo));
    tide_diff_job *job = NULL;
    CHECK_OK(tide_diff_job_create(ctx, cfg, &job));
    tide_diff_params p;
    tide_diff_params_default(&p);

    /* Two science frames on one job: the second finds the template warm. */
    char job_dir[300];
    snprintf(job_dir, sizeof job_dir, "%s/job", dir);
    for (int k = 1; k <= 2; k++) {
        char sci[300], out[300];
        snprintf(sci, sizeof sci, "%s/sci%d.fits", dir, k);
        snprintf(out, sizeof out, "%s/sci%d", job_dir, k);
        tide_diff_report rep;
        CHECK_OK(run_one(job, sci, out, job_dir, &p, &rep));
        CHECK(rep.template_prepared == (k == 1));
        CHECK(k == 1 ? rep.ms_template > 0 : rep.ms_template == 0);
        CHECK(rep.res.cands.nrows > 0);
        printf("science %d: %lld candidates, template %s (%.1f ms), %.1f ms\n", k,
               (long long)rep.res.cands.nrows, rep.template_prepared ? "prepared" : "warm",
               rep.ms_template, rep.ms_total);
        tide_diff_report_free(&rep);
    }

    /* The command on both frames gives the same files byte for byte. */
    char cmd[3000];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' diff --backend cpu --default none --template '%s' '%s' '%s' "
             "-o '%s/cli' >/dev/null",
             dir, bin, path("tmpl1.fits"), path("sci1.fits"), path("sci2.fits"), dir);
    CHECK(system(cmd) == 0);
    static const char *const files[] = {"difference.fits", "candidates.fits", "kernel.fits",
                                        "kernel.png",      "matched.png",     "difference.png",
                                        "candidates.png"};
    for (int k = 1; k <= 2; k++)
        for (int f = 0; f < 7; f++) {
            char a[400], b[400];
            snprintf(a, sizeof a, "%s/job/sci%d/%s", dir, k, files[f]);
            snprintf(b, sizeof b, "%s/cli/sci%d/%s", dir, k, files[f]);
            if (!(tide_test_same_file(a, b) >= 0))
                fprintf(stderr, "differs: %s %s\n", a, b);
            CHECK(tide_test_same_file(a, b) >= 0);
        }

    /* The first frame again into its directory: the previous run is replaced, and removed
     * beside the job (gone once the job ends, below). */
    {
        char out[300];
        snprintf(out, sizeof out, "%s/sci1", job_dir);
        tide_diff_report rep;
        CHECK_OK(run_one(job, path("sci1.fits"), out, NULL, &p, &rep));
        tide_diff_report_free(&rep);
        char a[400], b[400];
        snprintf(a, sizeof a, "%s/job/sci1/difference.fits", dir);
        snprintf(b, sizeof b, "%s/cli/sci1/difference.fits", dir);
        CHECK(tide_test_same_file(a, b) >= 0);
    }

    /* An input inside the output directory: refused, the job still warm and usable. */
    char in[400], out[300];
    snprintf(in, sizeof in, "%s/job/sci1/difference.fits", dir);
    snprintf(out, sizeof out, "%s/job/sci1", dir);
    tide_diff_report rep;
    CHECK(run_one(job, in, out, NULL, &p, &rep) == TIDE_E_INVAL);
    CHECK(rep.res.cands.nrows == 0 && !rep.template_prepared);

    tide_diff_job_destroy(job);
    snprintf(cmd, sizeof cmd, "test \"$(ls -A '%s')\" = \"$(printf 'sci1\\nsci2')\"", job_dir);
    CHECK(system(cmd) == 0); /* the replaced run removed, nothing else left */
    tide_config_free(cfg);
    tide_ctx_destroy(ctx);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return TIDE_TEST_RESULT();
}
