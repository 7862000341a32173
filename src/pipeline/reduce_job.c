/* reduce_job.c — the whole `tide reduce` of one frame (job.h): the frame read and its
 * parameters resolved, every output begun, the reduction and the calibration while the file
 * is hashed, then every output and the store's rows together; and the warm state kept
 * across frames. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reduce_job_internal.h"
#include "tide/fits.h"
#include "tide/instrument.h"
#include "tide/status.h"
#include "tide/timer.h"

static double now_ms(void) {
    return 1e3 * tide_now();
}

int tide_reduce_job_create(tide_ctx *ctx, const tide_config *cfg, tide_reduce_job **out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "tide_reduce_job_create: NULL output");
    *out = NULL;
    if (!ctx || !cfg)
        return tide_error(TIDE_E_INVAL, "tide_reduce_job_create: NULL context or configuration");
    tide_reduce_job *j = calloc(1, sizeof *j);
    if (!j)
        return tide_error(TIDE_E_NOMEM, "out of memory");
    j->ctx = ctx;
    j->cfg = cfg;
    *out = j;
    return 0;
}

int tide_reduce_job_set_config(tide_reduce_job *j, const tide_config *cfg) {
    if (!j || !cfg)
        return tide_error(TIDE_E_INVAL, "tide_reduce_job_set_config: NULL job or configuration");
    j->cfg = cfg;
    return 0;
}

void tide_reduce_job_close_store(tide_reduce_job *j) {
    tide_store_close(j->store);
    free(j->store_uri);
    j->store = NULL;
    j->store_uri = NULL;
}

void tide_reduce_job_destroy(tide_reduce_job *j) {
    if (!j)
        return;
    tide_reduce_job_close_store(j);
    free(j);
}

void tide_reduce_report_free(tide_reduce_report *r) {
    if (!r)
        return;
    tide_pipeline_result_free(&r->res);
    memset(r, 0, sizeof *r);
}

/* The pipeline's parameters of the frame: the request's, or the configuration's with the
 * frame's instrument values, then the request's overrides. */
static int pipeline_params(const tide_reduce_job *j, const tide_reduce_request *rq,
                           const char *spec, const tide_instrument *inst, tide_pipeline_params *p) {
    int st = 0;
    if (rq->params) {
        *p = *rq->params;
    } else {
        tide_pipeline_params_default(p);
        st = tide_pipeline_params_from_config(p, j->cfg, inst);
    }
    if (st)
        return st;
    snprintf(p->source, sizeof p->source, "%s", spec);
    if (rq->naper) {
        p->naper = rq->naper;
        memcpy(p->aper_radii, rq->aper_radii, sizeof(double) * (size_t)rq->naper);
    }
    if (rq->have_bias)
        p->bias = rq->bias;
    if (rq->noise >= 0)
        p->noise = (tide_noise_source)rq->noise;
    if (rq->no_cosmetics)
        p->cosmetics = 0;
    if (rq->no_psf)
        p->psf = 0;
    if (rq->psf_fit_background)
        p->psffit.fit_background = 1;
    p->keep_maps = rq->back || rq->rms;
    st = tide_pipeline_params_check(p);
    return st ? tide_error_prefix(st, "%s: ", spec) : 0;
}

int tide_reduce_job_use_store(tide_reduce_job *j, const char *uri) {
    if (!uri[0] || (j->store_uri && !strcmp(j->store_uri, uri)))
        return 0;
    tide_reduce_job_close_store(j);
    j->store_uri = strdup(uri);
    return j->store_uri ? 0 : tide_error(TIDE_E_NOMEM, "out of memory");
}

void tide_reduce_report_incomplete(const char *spec, tide_reduce_report *out) {
    const tide_calib_result *c = &out->cal;
    if (!out->calibrated || (c->wcs_ok && !(c->nref > 0 && !c->zp_ok)))
        return;
    out->incomplete = 1;
    snprintf(out->warning, sizeof out->warning, "%s: catalog written without %s: %s", spec,
             !c->wcs_ok ? "sky positions" : "a zero point", !c->wcs_ok ? c->astrmsg : c->zpmsg);
}

int tide_reduce_frame_setup(tide_reduce_job *j, const tide_reduce_request *rq, const char *spec,
                            const tide_header *hdr, tide_pipeline_params *p, tide_calib_params *cp,
                            int *calibrated) {
    tide_instrument inst;
    int st = tide_instrument_resolve(j->cfg, hdr, spec, &inst);
    if (!st)
        st = pipeline_params(j, rq, spec, &inst, p);
    /* Calibration and store settings are checked before the frame is reduced, so a missing
     * reference catalog fails in milliseconds, not after the reduction. */
    if (!st)
        st = tide_reduce_calib_params(&rq->cal, j->cfg, &inst, spec, cp);
    *calibrated = !st && tide_reduce_calib_wanted(&rq->cal, cp);
    if (!st && cp->refcat[0] && !tide_store_uri_is_pg(cp->refcat) && access(cp->refcat, R_OK))
        st = tide_error(TIDE_E_IO, "reference catalog %s: %s", cp->refcat, strerror(errno));
    return st;
}

int tide_reduce_frame_compute(tide_reduce_job *j, const tide_image *im, const tide_header *hdr,
                              const tide_pipeline_params *p, const tide_calib_params *cp,
                              tide_reduce_report *out) {
    const double t0 = now_ms();
    int st = tide_pipeline_run(j->ctx, im, hdr, p, &out->res);
    const double t1 = now_ms();
    if (!st && out->calibrated)
        st = tide_calibrate_run(j->ctx, hdr, im->width, im->height, cp, &out->res, &out->cal);
    out->ms_reduce = t1 - t0, out->ms_calibrate = now_ms() - t1;
    return st;
}

int tide_reduce_job_run(tide_reduce_job *j, const tide_reduce_request *rq,
                        tide_reduce_report *out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "tide_reduce_job_run: NULL report");
    memset(out, 0, sizeof *out);
    out->image_id = -1;
    out->store = "";
    if (!j || !rq || !rq->frame)
        return tide_error(TIDE_E_INVAL, "tide_reduce_job_run: NULL job, request or frame");
    const double t0 = now_ms();
    const char *spec = rq->frame;
    tide_image im;
    tide_header hdr;
    memset(&im, 0, sizeof im);
    tide_header_init(&hdr);
    /* On the GPU the frame goes straight to the device: a RICE-compressed one is decoded
     * there and its pixels never cross the host (tide_fits_read_image_at) */
    int st = tide_fits_read_image_at(
        j->ctx, spec, &im, &hdr, j->ctx->backend == TIDE_BACKEND_CUDA ? TIDE_DEVICE : TIDE_HOST);
    tide_pipeline_params p;
    tide_calib_params cp;
    out->width = im.width, out->height = im.height;
    if (!st)
        st = tide_reduce_frame_setup(j, rq, spec, &hdr, &p, &cp, &out->calibrated);
    const char *store = tide_reduce_store_uri(&rq->cal, j->cfg);
    out->store = store;
    const char *const outs[4] = {rq->catalog, rq->csv, rq->back, rq->rms};
    if (!st && !rq->catalog && !rq->csv && !store[0]) /* a reduction nobody would see */
        st = tide_error(TIDE_E_INVAL, "%s: no output: no catalog, CSV or store", spec);
    if (!st) /* the configuration's reference catalog and store are known now */
        st = tide_reduce_check_outputs(spec, rq->config_files, cp.refcat, store, outs);
    /* Every output begun now (its private directory made): one that cannot be written fails
     * before the reduction, and nothing appears unless all of them (and the store) do. */
    tide_reduce_outputs staged;
    if (!st)
        st = tide_reduce_outputs_begin(&staged, rq->catalog, rq->ldac, rq->csv, rq->back, rq->rms);
    if (st)
        goto done;
    st = tide_fits_compress_config(j->cfg, &staged.how);
    if (st) {
        tide_reduce_outputs_abort(&staged);
        goto done;
    }
    /* The store's key (the file's checksum) is computed while the frame is reduced. */
    tide_reduce_checksum sum;
    memset(&sum, 0, sizeof sum);
    if (store[0])
        tide_reduce_checksum_start(&sum, spec);
    const double t1 = now_ms();
    st = tide_reduce_frame_compute(j, &im, &hdr, &p, &cp, out);
    const double t3 = now_ms();
    const int sum_st = store[0] ? tide_reduce_checksum_wait(&sum) : 0;
    if (!st)
        st = sum_st;
    if (!st && store[0])
        st = tide_reduce_frame_key(spec, sum.hex);
    if (!st)
        st = tide_reduce_job_use_store(j, store);
    const double t4 = now_ms();
    /* Every file and the store together: the files appear only when all are complete and
     * the store has committed (reduce_job_internal.h). */
    if (!st) {
        st = tide_reduce_outputs_commit(&staged, store, &j->store, spec, sum.hex, &hdr, &out->res,
                                        &out->image_id, &out->ms_store, &out->ms_write);
        if (st) /* the next frame opens the store afresh */
            tide_reduce_job_close_store(j);
    } else {
        tide_reduce_outputs_abort(&staged);
    }
    const double t5 = now_ms();
    out->ms_read = t1 - t0;
    out->ms_checksum_wait = t4 - t3, out->ms_outputs = t5 - t4;
    if (!st)
        tide_reduce_report_incomplete(spec, out);
done:
    tide_image_free(j->ctx, &im);
    tide_header_free(&hdr);
    if (st) {
        tide_reduce_report_free(out);
        out->image_id = -1;
        out->store = "";
    } else {
        out->ms_total = now_ms() - t0;
    }
    return st;
}
