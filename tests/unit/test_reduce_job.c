/* test_reduce_job.c — the library's whole `tide reduce` job (job.h): two simulated frames
 * reduced and calibrated one after the other on one job (one context, one open store) give
 * catalogs byte-identical to `tide reduce` run on each frame alone; the store holds both
 * frames; an output that would replace an input is refused before anything is written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tide/catalog.h"
#include "tide/fits.h"
#include "tide/job.h"
#include "tide/sim.h"
#include "common/test_files.h"
#include "tide_test.h"

static char dir[256];

static const char *path(const char *name, int k) {
    static char buf[4][512];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s%d.fits", dir, name, k);
    return b;
}

/* Frame k (its own seed and pointing) and its reference catalog. */
static int make_frame(tide_ctx *ctx, int k) {
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    sp.seed = (uint64_t)(10 + k);
    sp.width = 768, sp.height = 640;
    sp.nstars = 500;
    sp.ra += 0.5 * k;
    tide_sim_frame f;
    tide_table ref;
    tide_table_init(&ref);
    int st = tide_sim_run(ctx, &sp, &f, &ref);
    if (st)
        return st;
    st = tide_fits_write_image(path("frame", k), &f.image, &f.header);
    if (!st)
        st = tide_catalog_write_fits(path("refcat", k), &ref, NULL);
    tide_table_free(&ref);
    tide_sim_frame_free(ctx, &f);
    return st;
}
static void request(tide_reduce_request *rq, int k, const char *store) {
    tide_reduce_request_init(rq);
    rq->frame = path("frame", k);
    rq->catalog = path("job", k);
    rq->cal.refcat = path("refcat", k);
    rq->cal.store = store;
    rq->have_bias = 1;
    rq->bias = 1000; /* the simulator's */
}

int main(void) {
    const char *bin = getenv("TIDE_BIN");
    if (!bin)
        TIDE_TEST_SKIP("TIDE_BIN is not set (run through ctest)");
    snprintf(dir, sizeof dir, "/tmp/tide-test-job-XXXXXX");
    if (!mkdtemp(dir))
        TIDE_TEST_SKIP("no temporary directory");
    setenv("SOURCE_DATE_EPOCH", "1700000000", 1); /* PROCDATE, for byte-identical catalogs */
    unsetenv("TIDE_STORE");
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    if (!ctx)
        return TIDE_TEST_RESULT();
    for (int k = 1; k <= 2; k++)
        CHECK_OK(make_frame(ctx, k));

    tide_config *cfg = NULL;
    tide_config_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.default_path = ""; /* as tide reduce --default none */
    CHECK_OK(tide_config_load(&cfg, &lo));
    tide_reduce_job *job = NULL;
    CHECK_OK(tide_reduce_job_create(ctx, cfg, &job));
    char store[600];
    snprintf(store, sizeof store, "sqlite:%s/job.db", dir);

    /* Two frames on one job: the second finds the store open and the context warm. */
    int64_t ids[3] = {0, 0, 0};
    for (int k = 1; k <= 2; k++) {
        tide_reduce_request rq;
        request(&rq, k, store);
        tide_reduce_report rep;
        CHECK_OK(tide_reduce_job_run(job, &rq, &rep));
        CHECK(rep.calibrated);
        CHECK(!rep.incomplete);
        CHECK(rep.cal.wcs_ok && rep.cal.zp_ok);
        CHECK(rep.res.wcs != NULL); /* the calibrated WCS */
        CHECK(rep.res.n_sources > 100);
        CHECK(!strcmp(rep.store, store));
        ids[k] = rep.image_id;
        printf("frame %d: %lld sources, astrometry %s, ZP %.4f, image %lld, %.1f ms\n", k,
               (long long)rep.res.n_sources, rep.cal.astrstat, rep.cal.zp.zp,
               (long long)rep.image_id, rep.ms_total);
        tide_reduce_report_free(&rep);
    }
    CHECK(ids[1] > 0 && ids[2] > 0 && ids[1] != ids[2]);

    /* The command, one process per frame, gives the same catalogs byte for byte. */
    for (int k = 1; k <= 2; k++) {
        char cmd[3000];
        snprintf(cmd, sizeof cmd,
                 "'%s' reduce '%s' -o '%s' --bias 1000 --refcat '%s' --default none "
                 "--backend cpu --store 'sqlite:%s/cli.db' >/dev/null",
                 bin, path("frame", k), path("cli", k), path("refcat", k), dir);
        CHECK(system(cmd) == 0);
        CHECK(tide_test_same_file(path("job", k), path("cli", k)) >= 0);
    }

    /* An output that is an input: refused, nothing written, the job still usable. */
    tide_reduce_request rq;
    request(&rq, 1, store);
    rq.catalog = path("refcat", 1);
    struct stat before, after;
    CHECK(stat(rq.catalog, &before) == 0);
    tide_reduce_report rep;
    CHECK(tide_reduce_job_run(job, &rq, &rep) == TIDE_E_INVAL);
    CHECK(stat(rq.catalog, &after) == 0 && after.st_size == before.st_size &&
          after.st_mtime == before.st_mtime);
    CHECK(rep.res.catalog.nrows == 0 && rep.image_id == -1);
    request(&rq, 2, store);
    CHECK_OK(tide_reduce_job_run(job, &rq, &rep));
    CHECK(rep.image_id > 0); /* the same file replaces its earlier run */
    tide_reduce_report_free(&rep);

    tide_reduce_job_destroy(job);
    tide_config_free(cfg);
    tide_ctx_destroy(ctx);
    char rm[400];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    if (system(rm) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return TIDE_TEST_RESULT();
}
