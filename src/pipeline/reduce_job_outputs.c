/* reduce_job_outputs.c — the reduce job's outputs (reduce_job_internal.h): the frame file's
 * checksum on a thread of its own, the catalog, CSV and maps staged together, and the
 * store's rows put in once every file is complete. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reduce_job_internal.h"
#include "tide/catalog.h"
#include "tide/fits.h"
#include "tide/status.h"
#include "tide/timer.h"

static double now_ms(void) {
    return 1e3 * tide_now();
}

/* FILE of FILE[ext] (the checksum is of the file). */
static void spec_file(const char *spec, char *out, size_t n) {
    snprintf(out, n, "%s", spec);
    char *b = strchr(out, '[');
    if (b)
        *b = '\0';
}

/* Threads the checksum may use while the frame is reduced: enough to finish well within the
 * reduction (~1.8 GB/s each with the SHA extensions), few enough not to oversubscribe the
 * cores the reduction's own OpenMP regions run on (a spinning barrier on a shared core is
 * slow). */
#define CHECKSUM_THREADS 3

static void *checksum_thread(void *arg) {
    tide_reduce_checksum *c = arg;
    omp_set_num_threads(CHECKSUM_THREADS); /* this thread's own OpenMP setting */
    c->status = tide_store_file_checksum(c->path, c->hex);
    if (c->status)
        snprintf(c->err, sizeof c->err, "%s", tide_error_detail());
    return NULL;
}

int tide_reduce_checksum_start(tide_reduce_checksum *c, const char *spec) {
    memset(c, 0, sizeof c[0]);
    spec_file(spec, c->path, sizeof c->path);
    if (pthread_create(&c->thread, NULL, checksum_thread, c)) {
        /* no thread: hash now, on this one */
        checksum_thread(c);
        return 0;
    }
    c->started = 1;
    return 0;
}

int tide_reduce_checksum_wait(tide_reduce_checksum *c) {
    if (c->started) {
        pthread_join(c->thread, NULL);
        c->started = 0;
    }
    return c->status ? tide_error(c->status, "%s", c->err) : 0;
}

/* The catalog as the store reads it, without touching the catalog: the same columns (their
 * data shared, not copied) plus NaN sky positions for a field that did not solve (stored, but
 * never found by a cone search). Release with free(view->cols) and free(*nan). */
static int store_view(const tide_table *cat, tide_table *view, double **nan) {
    *view = *cat;
    *nan = NULL;
    if (tide_table_column(cat, "ALPHA_J2000"))
        return 0;
    view->cols = malloc(sizeof(tide_column) * (size_t)(cat->ncols + 2));
    *nan = malloc(sizeof(double) * (size_t)(cat->nrows > 0 ? cat->nrows : 1));
    if (!view->cols || !*nan) {
        free(view->cols), free(*nan);
        view->cols = NULL, *nan = NULL;
        return tide_error(TIDE_E_NOMEM, "store: catalog view of %lld rows", (long long)cat->nrows);
    }
    if (cat->ncols > 0)
        memcpy(view->cols, cat->cols, sizeof(tide_column) * (size_t)cat->ncols);
    for (int64_t i = 0; i < cat->nrows; i++)
        (*nan)[i] = NAN;
    static const char *const names[2] = {"ALPHA_J2000", "DELTA_J2000"};
    for (int k = 0; k < 2; k++) {
        tide_column *c = &view->cols[cat->ncols + k];
        memset(c, 0, sizeof *c);
        snprintf(c->name, sizeof c->name, "%s", names[k]);
        snprintf(c->unit, sizeof c->unit, "deg");
        c->type = TIDE_COL_F64;
        c->repeat = 1;
        c->data = *nan;
    }
    view->ncols = view->cap_cols = cat->ncols + 2;
    return 0;
}

int tide_reduce_store_put(const char *uri, tide_store **store, const char *spec,
                          const char *checksum, const tide_header *frame_hdr,
                          const tide_pipeline_result *res, int64_t *image_id, double *ms) {
    const double t0 = now_ms();
    tide_store_frame f;
    tide_store_frame_init(&f);
    char path[1024];
    spec_file(spec, path, sizeof path);
    snprintf(f.file, sizeof f.file, "%s", spec);
    int st = 0;
    if (checksum)
        snprintf(f.checksum, sizeof f.checksum, "%s", checksum);
    else
        st = tide_store_file_checksum(path, f.checksum);
    /* The frame's own header gives DATE-OBS, EXPTIME, FILTER...; the catalog's (read second,
     * so it wins) the WCS summary, zero point and quality figures. */
    if (!st && frame_hdr)
        st = tide_store_frame_from_header(&f, frame_hdr);
    if (!st) {
        free(f.header), f.header = NULL;
        st = tide_store_frame_from_header(&f, &res->header);
    }
    tide_table view;
    double *nan = NULL;
    if (!st)
        st = store_view(&res->catalog, &view, &nan);
    if (!st && !*store)
        st = tide_store_open(uri, NULL, store);
    if (!st)
        st = tide_store_put_frame(*store, &f, &view, image_id);
    if (nan)
        free(view.cols), free(nan);
    tide_store_frame_free(&f);
    if (ms)
        *ms = now_ms() - t0;
    return st;
}

/* The catalog file, written into its staged temporary on its own thread while the other
 * files are written on the caller's. */
typedef struct write_job {
    tide_outfile *of;
    int ldac;
    const tide_header *frame_hdr;
    const tide_pipeline_result *res;
    int status;
    double ms;
    char err[256];
} write_job;

static void *write_thread(void *arg) {
    write_job *j = arg;
    const double t0 = now_ms();
    j->status =
        j->ldac ? tide_catalog_write_ldac_to(j->of, &j->res->catalog, j->frame_hdr, &j->res->header)
                : tide_catalog_write_fits_to(j->of, &j->res->catalog, &j->res->header);
    if (j->status)
        snprintf(j->err, sizeof j->err, "%s", tide_error_detail());
    j->ms = now_ms() - t0;
    return NULL;
}

/* "-" or an existing file that is not a regular one (a pipe, /dev/stdout): written in place
 * after the commit, since it cannot be renamed over. */
static int csv_stream(const char *csv) {
    struct stat sb;
    return csv && (!strcmp(csv, "-") || (stat(csv, &sb) == 0 && !S_ISREG(sb.st_mode)));
}

int tide_reduce_outputs_begin(tide_reduce_outputs *o, const char *cat, int ldac, const char *csv,
                              const char *back, const char *rms) {
    memset(o, 0, sizeof *o);
    tide_outset_init(&o->set);
    o->ldac = ldac;
    if (csv_stream(csv))
        o->csv_stream = csv;
    int st = tide_outset_add(&o->set, cat, &o->cat);
    if (!st && !o->csv_stream)
        st = tide_outset_add(&o->set, csv, &o->csv);
    if (!st)
        st = tide_outset_add(&o->set, back, &o->back);
    if (!st)
        st = tide_outset_add(&o->set, rms, &o->rms);
    if (st)
        tide_reduce_outputs_abort(o);
    return st;
}

void tide_reduce_outputs_abort(tide_reduce_outputs *o) {
    tide_outset_abort(&o->set);
}

int tide_reduce_outputs_commit(tide_reduce_outputs *o, const char *uri, tide_store **store,
                               const char *spec, const char *checksum, const tide_header *frame_hdr,
                               const tide_pipeline_result *res, int64_t *image_id, double *ms_store,
                               double *ms_write) {
    /* 1. Every file complete in its temporary: the catalog on a thread, the others here. */
    write_job j = {o->cat, o->ldac, frame_hdr, res, 0, 0, ""};
    pthread_t th;
    const int threaded = o->cat && !pthread_create(&th, NULL, write_thread, &j);
    if (o->cat && !threaded)
        write_thread(&j);
    int st = 0;
    if (o->csv)
        st = tide_catalog_write_csv_to(o->csv, &res->catalog);
    if (!st && o->back)
        st = tide_fits_write_image_to_as(o->back, &res->back_map, NULL, o->how);
    if (!st && o->rms)
        st = tide_fits_write_image_to_as(o->rms, &res->rms_map, NULL, o->how);
    if (threaded)
        pthread_join(th, NULL);
    if (ms_write)
        *ms_write = j.ms;
    if (!st && j.status)
        st = tide_error(j.status, "%s", j.err);
    /* 2. The store's one transaction, only once every file is complete. */
    if (!st && uri && uri[0])
        st = tide_reduce_store_put(uri, store, spec, checksum, frame_hdr, res, image_id, ms_store);
    /* 3. Every file into place (or none). A rename failing after the store committed leaves
     * the frame's rows in the store (re-running replaces them); the files are as before. */
    if (!st)
        st = tide_outset_commit(&o->set);
    tide_outset_abort(&o->set);
    if (!st && o->csv_stream)
        st = tide_catalog_write_csv(o->csv_stream, &res->catalog);
    return st;
}
