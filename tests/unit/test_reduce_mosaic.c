/* test_reduce_mosaic.c — a mosaic exposure as one job (job.h, tide_reduce_job_run_mosaic):
 * a simulated 8-CCD exposure reduced in one call gives, CCD by CCD, the same catalog (row
 * for row, column for column, bit for bit) as each CCD reduced alone as FILE[N]; the store
 * holds the 8 CCDs as 8 images and a re-run (of the exposure or of one CCD) replaces them;
 * an exposure with one CCD all NaN writes the other 7 unchanged and flags the bad one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tide/fits.h"
#include "tide/job.h"
#include "tide/sim.h"
#include "tide/store.h"
#include "tide_test.h"

#define NCCD 8

static char dir[256];

/* A file of the test's directory; each call its own buffer (the test makes fewer than 64). */
static const char *path(const char *name) {
    static char buf[64][512];
    static int next;
    char *b = buf[next++ % 64];
    snprintf(b, sizeof buf[0], "%s/%s", dir, name);
    return b;
}

/* The exposure, CCD @p broken (0-based; -1 = none) all NaN. */
static int write_mosaic(tide_ctx *ctx, const tide_sim_mosaic *m, const char *file, int broken) {
    tide_header prim;
    int st = tide_sim_mosaic_primary(m, 1, &prim);
    tide_fits_mef *mef = NULL;
    if (!st)
        st = tide_fits_mef_begin(file, NULL, &prim, &mef);
    tide_header_free(&prim);
    for (int k = 0; !st && k < tide_sim_mosaic_count(m); k++) {
        tide_sim_frame f;
        st = tide_sim_mosaic_epoch(ctx, m, 1, k, &f);
        if (st)
            break;
        if (k == broken)
            for (int64_t i = 0; i < f.image.width * f.image.height; i++)
                f.image.pix[i] = NAN;
        st = tide_fits_mef_add_image(mef, &f.image, &f.header, tide_sim_mosaic_ccd(m, k)->extname);
        tide_sim_frame_free(ctx, &f);
    }
    if (st) {
        tide_fits_mef_abort(mef);
        return st;
    }
    return tide_fits_mef_commit(mef);
}

static void request(tide_reduce_request *rq, const char *frame, const char *cat,
                    const char *store) {
    tide_reduce_request_init(rq);
    rq->frame = frame;
    rq->catalog = cat;
    rq->cal.store = store;
    rq->have_bias = 1;
    rq->bias = 1000; /* the simulator's */
}

/* Tables equal column for column and bit for bit. */
static int same_table(const tide_table *a, const tide_table *b) {
    if (a->nrows != b->nrows || a->ncols != b->ncols)
        return 0;
    for (int c = 0; c < a->ncols; c++) {
        const tide_column *x = &a->cols[c], *y = &b->cols[c];
        if (strcmp(x->name, y->name) || x->type != y->type || x->repeat != y->repeat)
            return 0;
        const size_t bytes = (size_t)(a->nrows * x->repeat * tide_col_type_size(x->type));
        if (bytes && memcmp(x->data, y->data, bytes))
            return 0;
    }
    return 1;
}

/* CCD @p extname's table of catalog @p cat, and its header. */
static int read_ccd(const char *cat, const char *extname, tide_table *t, tide_header *h) {
    char spec[600];
    snprintf(spec, sizeof spec, "%s[%s]", cat, extname);
    return tide_fits_read_table(spec, t, h);
}

static int64_t count_images(const char *store) {
    tide_store *s = NULL;
    int64_t n = -1;
    if (!tide_store_open(store, NULL, &s))
        tide_store_count(s, &n, NULL);
    tide_store_close(s);
    return n;
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/tide-test-mosaic-XXXXXX");
    if (!mkdtemp(dir))
        TIDE_TEST_SKIP("no temporary directory");
    setenv("SOURCE_DATE_EPOCH", "1700000000", 1); /* PROCDATE, for identical catalogs */
    unsetenv("TIDE_STORE");
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    if (!ctx)
        return TIDE_TEST_RESULT();
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    sp.seed = 19;
    sp.width = 512, sp.height = 1024;
    sp.nstars = 300, sp.ngalaxies = 10;
    tide_sim_mosaic *m = NULL;
    CHECK_OK(tide_sim_mosaic_make(ctx, &sp, NCCD, 100, &m));
    CHECK(tide_sim_mosaic_count(m) == NCCD);
    CHECK_OK(write_mosaic(ctx, m, path("exp.fits"), -1));
    CHECK_OK(write_mosaic(ctx, m, path("broken.fits"), 2));
    tide_fits_mosaic_plan plan;
    CHECK_OK(tide_fits_mosaic_plan_make(path("exp.fits"), &plan));
    CHECK(plan.nccd == NCCD);
    CHECK(plan.nskipped == 1); /* the empty primary */
    CHECK(plan.ccd[3].hdu == 4);
    CHECK(plan.ccd[3].ccdnum == 4);
    CHECK(!strcmp(plan.ccd[3].extname, "CCD04"));
    CHECK(tide_fits_mosaic_find(&plan, "CCD06", -1) == 5);
    CHECK(tide_fits_mosaic_find(&plan, "", 7) == 6);
    tide_fits_mosaic_plan_free(&plan);
    /* one CCD named: not a mosaic */
    char one[600];
    snprintf(one, sizeof one, "%s[2]", path("exp.fits"));
    CHECK_OK(tide_fits_mosaic_plan_make(one, &plan));
    CHECK(plan.nccd == 0);

    tide_config *cfg = NULL;
    tide_config_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.default_path = ""; /* as tide reduce --default none */
    CHECK_OK(tide_config_load(&cfg, &lo));
    tide_reduce_job *job = NULL;
    CHECK_OK(tide_reduce_job_create(ctx, cfg, &job));
    const char *store = path("store.db");

    /* 1. the exposure in one call */
    tide_reduce_request rq;
    request(&rq, path("exp.fits"), path("cat.fits"), store);
    rq.csv = path("cat.csv");
    tide_reduce_mosaic_report rep;
    CHECK_OK(tide_reduce_job_run_mosaic(job, &rq, &rep));
    CHECK(rep.nccd == NCCD);
    CHECK(rep.nfailed == 0);
    int64_t nsrc = 0;
    for (int k = 0; k < rep.nccd; k++)
        nsrc += rep.ccd[k].rep.res.n_sources;
    CHECK(nsrc > 8 * 50);
    tide_reduce_mosaic_report_free(&rep);
    CHECK(access(path("cat.CCD05.csv"), R_OK) == 0);
    CHECK(count_images(store) == NCCD);

    /* 2. each CCD alone, as FILE[N], into the same store: the same catalog bit for bit, and
     * its store rows replace the exposure's (still 8 images) */
    for (int k = 0; k < NCCD; k++) {
        char spec[600], ext[16];
        snprintf(spec, sizeof spec, "%s[%d]", path("exp.fits"), k + 1);
        snprintf(ext, sizeof ext, "CCD%02d", k + 1);
        tide_reduce_request r1;
        request(&r1, spec, path("single.fits"), store);
        tide_reduce_report one_rep;
        CHECK_OK(tide_reduce_job_run(job, &r1, &one_rep));
        tide_reduce_report_free(&one_rep);
        tide_table a, b;
        tide_header ha, hb;
        CHECK_OK(read_ccd(path("cat.fits"), ext, &a, &ha));
        CHECK_OK(tide_fits_read_table(path("single.fits"), &b, &hb));
        CHECK(a.nrows > 0);
        CHECK(same_table(&a, &b));
        char stat[16] = "", frame[80] = "";
        CHECK_OK(tide_header_get_str(&ha, "CCDSTAT", stat, sizeof stat));
        CHECK(!strcmp(stat, "OK"));
        int64_t ccdnum = 0;
        CHECK_OK(tide_header_get_int(&ha, "CCDNUM", &ccdnum));
        CHECK(ccdnum == k + 1);
        CHECK_OK(tide_header_get_str(&ha, "FRAME", frame, sizeof frame));
        CHECK(strstr(frame, "exp.fits[") != NULL);
        tide_table_free(&a), tide_table_free(&b);
        tide_header_free(&ha), tide_header_free(&hb);
    }
    CHECK(count_images(store) == NCCD);

    /* 3. the exposure again: its 8 images replaced, not added */
    request(&rq, path("exp.fits"), path("cat2.fits"), store);
    CHECK_OK(tide_reduce_job_run_mosaic(job, &rq, &rep));
    tide_reduce_mosaic_report_free(&rep);
    CHECK(count_images(store) == NCCD);

    /* 4. one CCD all NaN: flagged, the 7 others written as before */
    request(&rq, path("broken.fits"), path("broken_cat.fits"), path("broken.db"));
    CHECK_OK(tide_reduce_job_run_mosaic(job, &rq, &rep));
    CHECK(rep.nfailed == 1);
    CHECK(rep.ccd[2].failed);
    CHECK(strstr(rep.warning, "broken.fits[3]") != NULL);
    tide_reduce_mosaic_report_free(&rep);
    CHECK(count_images(path("broken.db")) == NCCD - 1);
    for (int k = 0; k < NCCD; k++) {
        char ext[16], stat[16] = "";
        snprintf(ext, sizeof ext, "CCD%02d", k + 1);
        tide_table a, b;
        tide_header ha, hb;
        CHECK_OK(read_ccd(path("broken_cat.fits"), ext, &a, &ha));
        CHECK_OK(tide_header_get_str(&ha, "CCDSTAT", stat, sizeof stat));
        if (k == 2) {
            CHECK(!strcmp(stat, "FAILED"));
            CHECK(a.nrows == 0);
            CHECK(tide_header_find(&ha, "CCDMSG") >= 0);
        } else {
            CHECK(!strcmp(stat, "OK"));
            CHECK_OK(read_ccd(path("cat.fits"), ext, &b, &hb));
            CHECK(same_table(&a, &b));
            tide_table_free(&b), tide_header_free(&hb);
        }
        tide_table_free(&a), tide_header_free(&ha);
    }

    /* 5. a frame that is not a mosaic is refused by the mosaic call */
    request(&rq, one, path("x.fits"), NULL);
    CHECK(tide_reduce_job_run_mosaic(job, &rq, &rep) == TIDE_E_INVAL);

    tide_reduce_job_destroy(job);
    tide_config_free(cfg);
    tide_sim_mosaic_free(m);
    tide_ctx_destroy(ctx);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return TIDE_TEST_RESULT();
}
