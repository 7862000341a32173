/* reduce_mosaic.c — a mosaic exposure as one job (job.h, tide_reduce_job_run_mosaic): every
 * CCD reduced as tide_reduce_job_run reduces FILE[hdu], two at a time on the job's context
 * and its helper (reduce_mosaic_workers.c; device pools, FFT plans and the store stay warm),
 * its catalog HDU appended to the exposure's catalog in the exposure's order, its
 * side outputs staged, and, once every file is complete, one store transaction per CCD. A
 * CCD whose own data make it fail is flagged and the others still written.
 *
 * Batching several CCDs into one kernel launch is a later step: each CCD is one
 * tide_pipeline_run here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce_mosaic.h"
#include "tide/catalog.h"
#include "tide/status.h"
#include "tide/timer.h"

static double now_ms(void) {
    return 1e3 * tide_now();
}

void tide_reduce_mosaic_report_free(tide_reduce_mosaic_report *r) {
    if (!r)
        return;
    for (int k = 0; r->ccd && k < r->nccd; k++)
        tide_reduce_report_free(&r->ccd[k].rep);
    free(r->ccd);
    tide_fits_mosaic_plan_free(&r->plan);
    memset(r, 0, sizeof *r);
}

int tide_reduce_ccd_own_error(int st) {
    return st == TIDE_E_EMPTY || st == TIDE_E_INVAL || st == TIDE_E_FORMAT || st == TIDE_E_RANGE ||
           st == TIDE_E_UNSUPPORTED || st == TIDE_E_WCS || st == TIDE_E_NOSOLVE ||
           st == TIDE_E_NOTFOUND;
}

/* What the whole exposure is checked for before any CCD is read. */
static int check_request(const tide_reduce_job *j, const tide_reduce_request *rq,
                         const char *store) {
    if (rq->ldac)
        return tide_error(TIDE_E_UNSUPPORTED,
                          "%s: a mosaic's catalog is written as FITS (one table per CCD), not "
                          "FITS-LDAC",
                          rq->frame);
    if (rq->csv && !strcmp(rq->csv, "-"))
        return tide_error(TIDE_E_INVAL,
                          "%s: a mosaic's CSV is one file per CCD: give a file name, not -",
                          rq->frame);
    if (!rq->catalog && !rq->csv && !store[0])
        return tide_error(TIDE_E_INVAL, "%s: no output: no catalog, CSV or store", rq->frame);
    const char *const outs[4] = {rq->catalog, rq->csv, rq->back, rq->rms};
    (void)j;
    return tide_reduce_check_outputs(rq->frame, rq->config_files, rq->cal.refcat, store, outs);
}

/* The side outputs of a reduced CCD, each under its per-CCD name, staged in @p set. */
static int side_outputs(tide_outset *set, const tide_reduce_request *rq, const tide_reduce_ccd *c) {
    const char *paths[3] = {rq->csv, rq->back, rq->rms};
    int st = 0;
    for (int i = 0; i < 3 && !st; i++) {
        if (!paths[i])
            continue;
        char name[4200];
        tide_outfile *of = NULL;
        st = tide_reduce_ccd_path(paths[i], &c->where, name, sizeof name);
        if (!st)
            st = tide_outset_add(set, name, &of);
        if (st)
            break;
        const tide_pipeline_result *r = &c->rep.res;
        st = i == 0   ? tide_catalog_write_csv_to(of, &r->catalog)
             : i == 1 ? tide_fits_write_image_to(of, &r->back_map, NULL)
                      : tide_fits_write_image_to(of, &r->rms_map, NULL);
    }
    return st;
}

/* The CCD's catalog HDU (an empty table when it failed) appended to the exposure's catalog
 * (none without -o). */
static int catalog_hdu(tide_fits_mef *mef, const tide_header *hdr, const tide_reduce_ccd *c) {
    if (!mef)
        return 0;
    tide_header h;
    int st = tide_reduce_ccd_header(hdr, c, c->failed ? NULL : &c->rep.res.header, &h);
    if (st)
        return st;
    char extname[80];
    if (c->where.extname[0])
        snprintf(extname, sizeof extname, "%s", c->where.extname);
    else
        snprintf(extname, sizeof extname, "HDU%d", c->where.hdu);
    tide_table empty;
    tide_table_init(&empty);
    st = tide_fits_mef_add_table(mef, c->failed ? &empty : &c->rep.res.catalog, &h, extname);
    tide_header_free(&h);
    return st;
}

/* Every CCD into the store, keyed CHECKSUM[hdu]; a failed CCD's earlier rows removed. */
static int store_ccds(tide_reduce_job *j, const char *uri, const char *checksum,
                      const tide_header *hdrs, tide_reduce_mosaic_report *out) {
    int st = tide_reduce_job_use_store(j, uri);
    if (!st && !j->store)
        st = tide_store_open(uri, NULL, &j->store);
    for (int k = 0; !st && k < out->nccd; k++) {
        tide_reduce_ccd *c = &out->ccd[k];
        char key[72];
        snprintf(key, sizeof key, "%s", checksum);
        st = tide_reduce_ccd_key(key, c->where.hdu);
        if (!st && c->failed) {
            st = tide_store_delete_frame(j->store, key);
            if (st == TIDE_E_NOTFOUND)
                st = 0, tide_error_clear();
        } else if (!st) {
            st = tide_reduce_store_put(uri, &j->store, c->spec, key, &hdrs[k], &c->rep.res,
                                       &c->rep.image_id, &c->rep.ms_store);
            c->rep.store = uri;
        }
    }
    if (st) /* the next frame opens the store afresh */
        tide_reduce_job_close_store(j);
    return st;
}

/* Flag CCD @p c as failed (status @p st) with the detail its worker kept in c->error; log it. */
static void flag_failed(tide_reduce_job *j, tide_reduce_ccd *c, int st,
                        tide_reduce_mosaic_report *out) {
    c->failed = 1;
    char detail[sizeof c->error];
    snprintf(detail, sizeof detail, "%s", c->error);
    snprintf(c->error, sizeof c->error, "%s: %s", tide_strerror(st), detail);
    tide_reduce_report_free(&c->rep);
    c->rep.image_id = -1;
    if (!out->nfailed++)
        snprintf(out->warning, sizeof out->warning, "%s: CCD not reduced: %s", c->spec, c->error);
    tide_log(&j->ctx->log, TIDE_LOG_WARN, "reduce", "%s: CCD not reduced, flagged: %s", c->spec,
             c->error);
}

/* The CCDs reduced by the workers (reduce_mosaic_workers.c), taken here in the exposure's
 * order as they complete: each catalog HDU appended, the side outputs staged and the maps
 * released. */
static int run_ccds(tide_reduce_job *j, const tide_reduce_request *rq, tide_fits_mef *mef,
                    tide_outset *set, tide_header *hdrs, tide_reduce_mosaic_report *out) {
    tide_reduce_ccd_pool *pool = NULL;
    int st = tide_reduce_ccd_pool_start(j, rq, out, hdrs, &pool);
    for (int k = 0; !st && k < out->nccd; k++) {
        tide_reduce_ccd *c = &out->ccd[k];
        int reduced = 0;
        const int rs = tide_reduce_ccd_pool_wait(pool, k, &reduced);
        if (!reduced) /* the pool stopped on an earlier CCD's error */
            break;
        if (rs && !tide_reduce_ccd_own_error(rs)) {
            st = tide_error(rs, "%s", c->error);
            break;
        }
        if (rs)
            flag_failed(j, c, rs, out);
        else if (c->rep.incomplete && !out->nincomplete++ && !out->warning[0])
            snprintf(out->warning, sizeof out->warning, "%s", c->rep.warning);
        st = catalog_hdu(mef, &hdrs[k], c);
        if (!st && !c->failed)
            st = side_outputs(set, rq, c);
        /* the maps are written: only the catalog stays, for the store */
        tide_image_free(j->ctx, &c->rep.res.back_map);
        tide_image_free(j->ctx, &c->rep.res.rms_map);
    }
    tide_reduce_ccd_pool_finish(pool);
    if (!st && out->nfailed == out->nccd)
        st = tide_error(TIDE_E_EMPTY, "%s: no CCD could be reduced (%s)", rq->frame,
                        out->ccd[0].error);
    return st;
}

/* The plan, the per-CCD names and the log of the HDUs that are not CCDs. */
static int plan_ccds(tide_reduce_job *j, const tide_reduce_request *rq,
                     tide_reduce_mosaic_report *out) {
    int st = tide_fits_mosaic_plan_make(rq->frame, &out->plan);
    if (!st && out->plan.nccd == 0)
        st =
            tide_error(TIDE_E_INVAL,
                       "%s: not a mosaic (an empty primary and two or more image HDUs)", rq->frame);
    if (st)
        return st;
    for (int i = 0; i < out->plan.nskipped; i++)
        tide_log(&j->ctx->log, TIDE_LOG_INFO, "reduce", "%s: HDU %d (%s) skipped: %s", rq->frame,
                 out->plan.skipped[i].hdu, out->plan.skipped[i].what, out->plan.skipped[i].why);
    out->nccd = out->plan.nccd;
    out->ccd = calloc((size_t)out->nccd, sizeof *out->ccd);
    if (!out->ccd)
        return tide_error(TIDE_E_NOMEM, "%s: out of memory for %d CCDs", rq->frame, out->nccd);
    for (int k = 0; k < out->nccd; k++) {
        tide_reduce_ccd *c = &out->ccd[k];
        c->where = out->plan.ccd[k];
        c->rep.image_id = -1;
        c->rep.store = "";
        snprintf(c->spec, sizeof c->spec, "%s[%d]", rq->frame, c->where.hdu);
    }
    return 0;
}

/* The catalog's primary HDU: the exposure's primary cards and NCCDS. */
static int primary_header(const tide_reduce_request *rq, int nccd, tide_header *h) {
    int st = tide_fits_read_hdu_header(rq->frame, 0, h);
    if (st)
        return st;
    st = tide_header_set_int(h, "NCCDS", nccd, "CCDs of the exposure: one table each");
    if (st)
        tide_header_free(h);
    return st;
}

int tide_reduce_job_run_mosaic(tide_reduce_job *j, const tide_reduce_request *rq,
                               tide_reduce_mosaic_report *out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "tide_reduce_job_run_mosaic: NULL report");
    memset(out, 0, sizeof *out);
    out->store = "";
    if (!j || !rq || !rq->frame)
        return tide_error(TIDE_E_INVAL, "tide_reduce_job_run_mosaic: NULL job, request or frame");
    const double t0 = now_ms();
    const char *store = tide_reduce_store_uri(&rq->cal, j->cfg);
    int st = check_request(j, rq, store);
    if (!st)
        st = plan_ccds(j, rq, out);
    tide_header *hdrs = NULL;
    if (!st && !(hdrs = calloc((size_t)out->nccd, sizeof *hdrs)))
        st = tide_error(TIDE_E_NOMEM, "%s: out of memory for %d headers", rq->frame, out->nccd);
    /* The outputs: the catalog begun before any CCD is reduced, so one that cannot be written
     * fails at once; the side outputs join the set CCD by CCD. */
    tide_outset set;
    tide_outset_init(&set);
    tide_outfile *catf = NULL;
    tide_fits_mef *mef = NULL;
    tide_header prim;
    tide_header_init(&prim);
    if (!st)
        st = tide_outset_add(&set, rq->catalog, &catf);
    if (!st)
        st = primary_header(rq, out->nccd, &prim);
    if (!st && catf)
        st = tide_fits_mef_begin(NULL, catf, &prim, &mef);
    tide_reduce_checksum sum;
    memset(&sum, 0, sizeof sum);
    if (!st && store[0]) /* the file's checksum is computed while the CCDs are reduced */
        tide_reduce_checksum_start(&sum, rq->frame);
    if (!st)
        st = run_ccds(j, rq, mef, &set, hdrs, out);
    const int sum_st = store[0] ? tide_reduce_checksum_wait(&sum) : 0;
    if (!st && mef) {
        st = tide_fits_mef_commit(mef);
        mef = NULL;
    }
    if (!st)
        st = sum_st;
    if (!st && store[0])
        st = store_ccds(j, store, sum.hex, hdrs, out);
    if (!st)
        st = tide_outset_commit(&set);
    tide_fits_mef_abort(mef);
    tide_outset_abort(&set);
    tide_header_free(&prim);
    for (int k = 0; hdrs && k < out->nccd; k++)
        tide_header_free(&hdrs[k]);
    free(hdrs);
    if (st) {
        tide_reduce_mosaic_report_free(out);
        out->store = "";
        return st;
    }
    out->store = store;
    out->ms_total = now_ms() - t0;
    return 0;
}
