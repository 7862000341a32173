/* diff_job.c — the whole `tide diff` of one science frame (diff_job.h): the outputs checked
 * against the inputs, the frames read, the difference run against a template read for the
 * pair or prepared once and kept warm on the job, and the outputs written all or nothing. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "diff_internal.h"
#include "tide/diff_job.h"
#include "tide/fits.h"
#include "tide/rb.h"
#include "tide/status.h"
#include "tide/timer.h"

struct tide_diff_job {
    tide_ctx *ctx;          /* borrowed */
    const tide_config *cfg; /* borrowed, may be NULL */
    tide_diff_template *t;  /* the warm template, or NULL */
    char *tmpl_path;        /* the file it was prepared from */
    char tmpl_sum[72];      /* its checksum, once a store needed it ("" until then) */
    tide_store *store;      /* the store of the last request that named one, or NULL */
    char *store_uri;        /* its URI */
    tide_rb_model *rb;      /* the real/bogus model of the requests, loaded once */
    char *rb_path;          /* the file it was loaded from */
};

/* The request's real/bogus model, loaded when the job holds no model of that file. */
static int job_rb_model(tide_diff_job *j, const char *path) {
    if (j->rb && !strcmp(j->rb_path, path))
        return 0;
    tide_rb_model_free(j->rb);
    free(j->rb_path);
    j->rb = NULL;
    j->rb_path = NULL;
    tide_rb_model *m = NULL;
    int st = tide_rb_model_load(path, &m);
    if (st)
        return st;
    if (!(j->rb_path = strdup(path))) {
        tide_rb_model_free(m);
        return tide_error(TIDE_E_NOMEM, "out of memory");
    }
    j->rb = m;
    return 0;
}

static double now_ms(void) {
    return 1e3 * tide_now();
}

void tide_diff_request_init(tide_diff_request *rq) {
    memset(rq, 0, sizeof *rq);
    rq->ntop = 16;
}

void tide_diff_report_free(tide_diff_report *r) {
    if (!r)
        return;
    tide_diff_result_free(&r->res);
    memset(r, 0, sizeof *r);
}

int tide_diff_job_create(tide_ctx *ctx, const tide_config *cfg, tide_diff_job **out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "tide_diff_job_create: NULL output");
    *out = NULL;
    if (!ctx)
        return tide_error(TIDE_E_INVAL, "tide_diff_job_create: NULL context");
    tide_diff_job *j = calloc(1, sizeof *j);
    if (!j)
        return tide_error(TIDE_E_NOMEM, "out of memory");
    j->ctx = ctx;
    j->cfg = cfg;
    *out = j;
    return 0;
}

static void drop_template(tide_diff_job *j) {
    tide_diff_template_free(j->ctx, j->t);
    free(j->tmpl_path);
    j->t = NULL;
    j->tmpl_path = NULL;
    j->tmpl_sum[0] = 0;
}

static void drop_store(tide_diff_job *j) {
    tide_store_close(j->store);
    free(j->store_uri);
    j->store = NULL;
    j->store_uri = NULL;
}

void tide_diff_job_destroy(tide_diff_job *j) {
    if (!j)
        return;
    tide_diffp_remove_wait();
    drop_template(j);
    drop_store(j);
    tide_rb_model_free(j->rb);
    free(j->rb_path);
    free(j);
}

/* The request's store, opened on first use and kept while later requests name it. */
static int job_store(tide_diff_job *j, const char *uri) {
    if (j->store && !strcmp(j->store_uri, uri))
        return 0;
    drop_store(j);
    if (!(j->store_uri = strdup(uri)))
        return tide_error(TIDE_E_NOMEM, "out of memory");
    const int st = tide_store_open(uri, NULL, &j->store);
    if (st)
        drop_store(j);
    return st;
}

/* A store setting: the request's when given (> 0), else the configuration's, else @p dflt. */
static double store_setting(const tide_diff_job *j, double given, const char *key, double dflt) {
    double v = 0;
    if (given > 0)
        return given;
    if (j->cfg && tide_config_is_set(j->cfg, key) && !tide_config_get_dbl(j->cfg, key, &v) && v > 0)
        return v;
    return dflt;
}

/* The parameters of a run: the request's (or the defaults) with the job's configuration. */
static void job_params(const tide_diff_job *j, const tide_diff_params *in, tide_diff_params *p) {
    if (in)
        *p = *in;
    else
        tide_diff_params_default(p);
    p->config = j->cfg;
}

int tide_diff_job_prepare(tide_diff_job *j, const char *tmpl, const tide_diff_params *pin,
                          double *ms) {
    if (ms)
        *ms = 0;
    if (!j || !tmpl)
        return tide_error(TIDE_E_INVAL, "tide_diff_job_prepare: NULL job or template");
    if (j->t && !strcmp(j->tmpl_path, tmpl))
        return 0;
    drop_template(j);
    const double t0 = now_ms();
    tide_diff_params p;
    job_params(j, pin, &p);
    snprintf(p.tmpl_name, sizeof p.tmpl_name, "%s", tmpl);
    j->tmpl_path = strdup(tmpl);
    if (!j->tmpl_path)
        return tide_error(TIDE_E_NOMEM, "out of memory");
    tide_image im = {0};
    tide_header h;
    tide_header_init(&h);
    int st = tide_fits_read_image(j->ctx, tmpl, &im, &h);
    if (!st)
        st = tide_diff_template_prepare(j->ctx, &im, &h, &p, &j->t);
    tide_image_free(j->ctx, &im);
    tide_header_free(&h);
    if (st) {
        drop_template(j);
        return st;
    }
    if (ms)
        *ms = now_ms() - t0;
    return 0;
}

/* The science frame @p sci_spec and, when @p tmpl_spec is non-NULL, the template into host
 * images with their headers, in one tide_fits_read_stack call: the two files are read and
 * decoded at the same time. The images and headers are moved out of the stack. */
static int read_pair(tide_ctx *ctx, const char *sci_spec, const char *tmpl_spec, tide_image *sci,
                     tide_header *hs, tide_image *tmpl, tide_header *ht) {
    const char *specs[2] = {sci_spec, tmpl_spec};
    tide_fits_stack s;
    const int st =
        tide_fits_read_stack(ctx, specs, tmpl_spec ? 2 : 1, TIDE_HOST, TIDE_FITS_STACK_HEADERS, &s);
    if (st)
        return st;
    *sci = s.im[0];
    *hs = s.hdr[0];
    memset(&s.im[0], 0, sizeof s.im[0]);
    tide_header_init(&s.hdr[0]);
    if (tmpl_spec) {
        *tmpl = s.im[1];
        *ht = s.hdr[1];
        memset(&s.im[1], 0, sizeof s.im[1]);
        tide_header_init(&s.hdr[1]);
    }
    tide_fits_stack_free(ctx, &s);
    return 0;
}

/* No output of @p rq may replace one of its inputs. */
static int check_request(const tide_diff_request *rq) {
    if (!rq || !rq->science || !rq->tmpl || !rq->outdir)
        return tide_error(TIDE_E_INVAL,
                          "tide_diff_job_run: the request needs a science frame, a template and "
                          "an output directory");
    if (rq->ninputs < 0 || (rq->ninputs && !rq->inputs))
        return tide_error(TIDE_E_INVAL, "tide_diff_job_run: bad list of inputs");
    for (int k = 0; k < rq->ninputs + 2; k++) {
        const char *in =
            k < rq->ninputs ? rq->inputs[k] : (k == rq->ninputs ? rq->science : rq->tmpl);
        const int st = tide_diff_check_outputs(rq->outdir, &in, 1);
        if (st)
            return st;
    }
    return 0;
}

int tide_diff_job_run(tide_diff_job *j, const tide_diff_request *rq, tide_diff_report *out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "tide_diff_job_run: NULL report");
    memset(out, 0, sizeof *out);
    if (!j)
        return tide_error(TIDE_E_INVAL, "tide_diff_job_run: NULL job");
    int st = check_request(rq);
    if (st)
        return st;
    const double t0 = now_ms();
    /* a model or an output setting that cannot be used fails the request before any pixel
     * is read */
    if (rq->rb_model && (st = job_rb_model(j, rq->rb_model)))
        return st;
    tide_fits_compress how;
    if ((st = tide_fits_compress_config(j->cfg, &how)))
        return st;
    tide_diff_params p;
    job_params(j, rq->params, &p);
    p.keep_stamps = rq->ntop;
    const int use_store = rq->store && rq->store[0];
    if (use_store && p.keep_stamps < p.max_fit) /* each candidate's residual cutout */
        p.keep_stamps = p.max_fit < 5000 ? p.max_fit : 5000;
    snprintf(p.sci_name, sizeof p.sci_name, "%s", rq->science);
    snprintf(p.tmpl_name, sizeof p.tmpl_name, "%s", rq->tmpl);
    if (rq->warm) {
        const int had = j->t && !strcmp(j->tmpl_path, rq->tmpl);
        st = tide_diff_job_prepare(j, rq->tmpl, rq->params, &out->ms_template);
        out->template_prepared = !st && !had;
    }
    if (!st && rq->make_dir && mkdir(rq->make_dir, 0777) && errno != EEXIST)
        st = tide_error(TIDE_E_IO, "%s: cannot create the output directory: %s", rq->make_dir,
                        strerror(errno));
    tide_image sci = {0}, tmpl = {0};
    tide_header hs, ht;
    tide_header_init(&hs);
    tide_header_init(&ht);
    double t1 = now_ms();
    if (!st) /* science and template read side by side, each with half the cores */
        st = read_pair(j->ctx, rq->science, rq->warm ? NULL : rq->tmpl, &sci, &hs, &tmpl, &ht);
    out->ms_read = now_ms() - t1;
    t1 = now_ms();
    if (!st)
        st = rq->warm ? tide_diff_run_template(j->ctx, &sci, &hs, j->t, &p, &out->res)
                      : tide_diff_run(j->ctx, &sci, &hs, &tmpl, &ht, &p, &out->res);
    out->ms_diff = now_ms() - t1;
    tide_image_free(j->ctx, &sci);
    tide_image_free(j->ctx, &tmpl);
    /* the scores before the files and the rows, which both carry them */
    t1 = now_ms();
    if (!st && rq->rb_model) {
        st = tide_rb_score_table(j->rb, &out->res.diff, &out->res.cands,
                                 fmax(out->res.fwhm_sci, out->res.fwhm_tmpl), NULL, 0);
        if (!st)
            st = tide_header_set_str(&out->res.header, "RBMODEL", rq->rb_model,
                                     "real/bogus model of RB_SCORE");
    }
    out->ms_rb = now_ms() - t1;
    /* The files complete in a private directory, then the store's one transaction, then the
     * files into place (the reduce job's order): a failed transaction leaves no file, and a
     * rename failing after the commit leaves rows that re-running the pair replaces. */
    t1 = now_ms();
    tide_diffp_staged sg;
    memset(&sg, 0, sizeof sg);
    if (!st)
        /* the stamps kept for the store are not all drawn: --top's, or none for 0 */
        st = tide_diffp_write_stage(rq->outdir, &out->res,
                                    use_store && rq->ntop <= 0 ? -1 : rq->ntop, how, &sg);
    out->ms_write = now_ms() - t1;
    out->diff_id = -1;
    if (!st && use_store) {
        t1 = now_ms();
        st = job_store(j, rq->store);
        const tide_header *th = rq->warm ? &j->t->header : &ht;
        if (!st && rq->warm && !j->tmpl_sum[0]) /* the warm template's checksum, once */
            st = tide_diffp_file_checksum(rq->tmpl, j->tmpl_sum);
        const char *tsum = rq->warm ? j->tmpl_sum : NULL;
        if (!st)
            st = tide_diffp_store_put(
                j->store, rq->science, rq->tmpl, tsum, rq->outdir, &hs, th, &out->res,
                (int)store_setting(j, rq->cutout_px, "store.cutout_px", 63),
                store_setting(j, rq->object_radius_arcsec, "store.object_radius_arcsec", 1.0),
                &out->diff_id);
        if (st == TIDE_E_DB) /* a fresh connection for the next request */
            drop_store(j);
        out->ms_store = now_ms() - t1;
    }
    tide_header_free(&hs);
    tide_header_free(&ht);
    t1 = now_ms();
    if (!st)
        st = tide_diffp_write_place(&sg);
    else
        tide_diffp_write_abort(&sg);
    out->ms_write += now_ms() - t1;
    if (st) {
        tide_diff_report_free(out);
        return st;
    }
    out->ms_total = now_ms() - t0;
    return 0;
}
