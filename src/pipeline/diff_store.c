/* diff_store.c — a difference's rows in the store (store_cand.h): the diffs row from the
 * result and the frames' headers, the candidate table as written to candidates.fits plus
 * each candidate's real/bogus features (RBF_*, rb.h, computed as tide diff --rb-model does,
 * so that `tide rb train --store` learns from the features the scores are made of), and each
 * candidate's cutouts cut from the result's images on the output grid. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"
#include "reduce_job_internal.h"
#include "tide/rb.h"
#include "tide/status.h"
#include "tide/store_cand.h"

/* Candidates that get cutouts, the first (highest S/N) ones: ~49 kB of floats each while
 * they are written, so a failed subtraction of 10^5 candidates cannot take gigabytes. */
#define DIFF_STORE_MAX_CUTOUTS 5000

/* FILE of FILE[ext] (a checksum is of the file). */
static void spec_file(const char *spec, char *out, size_t n) {
    snprintf(out, n, "%s", spec);
    char *b = strchr(out, '[');
    if (b)
        *b = '\0';
}

int tide_diffp_file_checksum(const char *spec, char *hex) {
    char path[4096];
    spec_file(spec, path, sizeof path);
    int st = tide_store_file_checksum(path, hex);
    /* a CCD of a mosaic is keyed as the reduction keys it, so an exposure's CCDs stay apart */
    return st ? st : tide_reduce_frame_key(spec, hex);
}

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Median per-pixel 1-sigma of the difference: sqrt of the median variance over a sample of
 * ~100,000 pixels with a finite, positive variance. */
static double diff_noise(const tide_image *d) {
    if (!d->var || d->width < 1 || d->height < 1)
        return NAN;
    const int64_t n = d->width * d->height, step = n / 100000 + 1;
    float *v = malloc(sizeof *v * (size_t)(n / step + 1));
    if (!v)
        return NAN;
    int64_t m = 0;
    for (int64_t i = 0; i < n; i += step) {
        const float x = d->var[(i / d->width) * d->stride + i % d->width];
        if (isfinite(x) && x > 0)
            v[m++] = x;
    }
    qsort(v, (size_t)m, sizeof *v, cmp_float);
    const double med = m ? v[m / 2] : NAN;
    free(v);
    return sqrt(med);
}

/* The header's cards as one text (80 characters each); malloc'd. */
static char *header_text(const tide_header *h) {
    char *t = malloc((size_t)h->ncards * 80 + 1);
    if (!t)
        return NULL;
    for (int i = 0; i < h->ncards; i++)
        snprintf(t + (size_t)i * 80, 81, "%-80.80s", h->cards[i]);
    t[(size_t)h->ncards * 80] = 0;
    return t;
}

/* The side x side box of @p a (minus @p b when non-NULL, plus it when @p sign > 0) centred on
 * pixel (cx, cy), NaN outside the frame. */
static void cut(const tide_image *a, const tide_image *b, int sign, int64_t cx, int64_t cy,
                int side, float *out) {
    const int h = side / 2;
    for (int v = 0; v < side; v++)
        for (int u = 0; u < side; u++) {
            const int64_t x = cx - h + u, y = cy - h + v;
            float val = NAN;
            if (x >= 0 && y >= 0 && x < a->width && y < a->height) {
                val = a->pix[y * a->stride + x];
                if (b)
                    val += (float)sign * b->pix[y * b->stride + x];
            }
            out[(size_t)v * (size_t)side + (size_t)u] = val;
        }
}

/* Cutouts of the first candidates: science, template and difference on the output grid
 * (science = diff + matched template, or the matched science; template = the matched
 * template, or matched science - diff) and the fit residual (stamp - model) where the
 * stamp was kept. *pix and *cuts malloc'd. */
static int make_cutouts(const tide_diff_result *r, int side, float **pix, tide_store_cutout **cuts,
                        int64_t *ncut) {
    *pix = NULL;
    *cuts = NULL;
    *ncut = 0;
    const tide_table *t = &r->cands;
    const double *X = tide_table_f64(t, "X_IMAGE"), *Y = tide_table_f64(t, "Y_IMAGE");
    const int64_t n = t->nrows < DIFF_STORE_MAX_CUTOUTS ? t->nrows : DIFF_STORE_MAX_CUTOUTS;
    if (n < 1 || !X || !Y || !r->diff.pix || !r->matched.pix)
        return 0;
    const size_t big = (size_t)side * (size_t)side, small = (size_t)r->stamp * (size_t)r->stamp;
    const int64_t nres = r->stamps && r->models ? (r->nstamps < n ? r->nstamps : n) : 0;
    *pix = malloc(sizeof **pix * ((size_t)n * 3 * big + (size_t)nres * small + 1));
    *cuts = malloc(sizeof **cuts * (size_t)(4 * n));
    if (!*pix || !*cuts) {
        free(*pix), free(*cuts);
        *pix = NULL, *cuts = NULL;
        return tide_error(TIDE_E_NOMEM, "diff: cutouts of %lld candidates", (long long)n);
    }
    float *p = *pix;
    tide_store_cutout *c = *cuts;
    const int sci_convolved = r->convolved == 2;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(X[i]) || !isfinite(Y[i]))
            continue;
        const int64_t cx = (int64_t)llround(X[i] - 1), cy = (int64_t)llround(Y[i] - 1);
        for (int k = 0; k < 3; k++) {
            if (k == TIDE_CUTOUT_SCIENCE)
                sci_convolved ? cut(&r->matched, NULL, 0, cx, cy, side, p)
                              : cut(&r->diff, &r->matched, 1, cx, cy, side, p);
            else if (k == TIDE_CUTOUT_TEMPLATE)
                sci_convolved ? cut(&r->matched, &r->diff, -1, cx, cy, side, p)
                              : cut(&r->matched, NULL, 0, cx, cy, side, p);
            else
                cut(&r->diff, NULL, 0, cx, cy, side, p);
            *c++ = (tide_store_cutout){i, k, side, side, p};
            p += big;
        }
        if (i < nres) {
            const float *a = r->stamps + (size_t)i * small, *m = r->models + (size_t)i * small;
            for (size_t k = 0; k < small; k++)
                p[k] = a[k] - m[k];
            *c++ = (tide_store_cutout){i, TIDE_CUTOUT_RESIDUAL, r->stamp, r->stamp, p};
            p += small;
        }
    }
    *ncut = c - *cuts;
    return 0;
}

/* @p c (the candidates as written) into @p out, with RBF_VERSION and an RBF_<NAME> column per
 * feature of rb.h on the difference, the FWHM and the missing catalog of tide diff
 * --rb-model's scoring (diff_job.c). Candidates without the fit columns (none fitted) go
 * without features. */
static int with_features(const tide_diff_result *r, const tide_table *c, tide_table *out) {
    tide_table_init(out);
    int st = TIDE_OK;
    for (int j = 0; j < c->ncols && !st; j++) {
        const tide_column *a = &c->cols[j];
        st = tide_table_add_column(out, a->name, a->type, a->repeat, a->unit, a->comment, NULL);
    }
    if (!st)
        st = tide_table_resize(out, c->nrows);
    for (int j = 0; j < c->ncols && !st; j++)
        memcpy(out->cols[j].data, c->cols[j].data,
               (size_t)(c->nrows * c->cols[j].repeat * tide_col_type_size(c->cols[j].type)));
    if (st || c->nrows < 1 || !r->diff.pix || r->diff.location != TIDE_HOST ||
        !tide_table_column(c, "KIND"))
        return st;
    float *x = malloc((size_t)c->nrows * TIDE_RB_NFEAT * sizeof *x);
    if (!x)
        return tide_error(TIDE_E_NOMEM, "diff: features of %lld candidates", (long long)c->nrows);
    st = tide_rb_table_features(&r->diff, c, fmax(r->fwhm_sci, r->fwhm_tmpl), NULL, 0, x);
    if (!st)
        st = tide_table_add_column(out, "RBF_VERSION", TIDE_COL_I32, 1, NULL,
                                   "version of the real/bogus features (rb.h)", NULL);
    for (int k = 0; k < TIDE_RB_NFEAT && !st; k++) {
        char name[72];
        snprintf(name, sizeof name, "RBF_%s", tide_rb_feature_name(k));
        st = tide_table_add_column(out, name, TIDE_COL_F64, 1, NULL, NULL, NULL);
        double *v = st ? NULL : tide_table_f64(out, name);
        for (int64_t i = 0; v && i < c->nrows; i++)
            v[i] = x[i * TIDE_RB_NFEAT + k];
    }
    for (int64_t i = 0; !st && i < c->nrows; i++)
        tide_table_i32(out, "RBF_VERSION")[i] = TIDE_RB_FEATURES_VERSION;
    free(x);
    return st;
}

/* The frame values a header gives (MJD-OBS, FILTER...) through the store's own reading. */
static int frame_of(const tide_header *h, tide_store_frame *f) {
    tide_store_frame_init(f);
    return h ? tide_store_frame_from_header(f, h) : 0;
}

int tide_diffp_store_put(tide_store *store, const char *sci, const char *tmpl, const char *tmpl_sum,
                         const char *outdir, const tide_header *sci_hdr,
                         const tide_header *tmpl_hdr, const tide_diff_result *r, int cutout_px,
                         double radius_arcsec, int64_t *diff_id) {
    tide_store_diff d;
    tide_store_diff_init(&d);
    int st = tide_diffp_file_checksum(sci, d.sci_checksum);
    if (!st && tmpl_sum && tmpl_sum[0])
        snprintf(d.tmpl_checksum, sizeof d.tmpl_checksum, "%s", tmpl_sum);
    else if (!st)
        st = tide_diffp_file_checksum(tmpl, d.tmpl_checksum);
    if (st)
        return st;
    snprintf(d.sci_file, sizeof d.sci_file, "%s", sci);
    snprintf(d.tmpl_file, sizeof d.tmpl_file, "%s", tmpl);
    snprintf(d.outdir, sizeof d.outdir, "%s", outdir ? outdir : "");
    tide_store_frame fs, ft, fg;
    st = frame_of(sci_hdr, &fs);
    if (!st)
        st = frame_of(tmpl_hdr, &ft);
    tide_store_frame_init(&fg);
    fg.naxis1 = r->diff.width; /* the grid's summary needs its size */
    fg.naxis2 = r->diff.height;
    if (!st)
        st = tide_store_frame_from_header(&fg, &r->header);
    d.mjd_sci = fs.mjd;
    d.mjd_tmpl = ft.mjd;
    snprintf(d.filter, sizeof d.filter, "%s", fs.filter);
    d.naxis1 = r->diff.width;
    d.naxis2 = r->diff.height;
    d.ra_center = fg.ra_center;
    d.dec_center = fg.dec_center;
    d.scale_arcsec = fg.scale_arcsec;
    tide_store_frame_free(&fs);
    tide_store_frame_free(&ft);
    tide_store_frame_free(&fg);
    if (st)
        return st;
    d.fwhm_sci = r->fwhm_sci;
    d.fwhm_tmpl = r->fwhm_tmpl;
    d.kernel_sum = r->kernel_sum;
    d.kernel_chi2 = r->chi2;
    d.kernel_w = r->kernel_w;
    d.kernel_nfit = r->nfit_pix;
    d.convolved = r->convolved;
    d.var_scale = r->var_scale;
    d.noise = diff_noise(&r->diff);
    d.ncand = r->cands.nrows;
    d.nfit = r->nfitted;
    d.nreject = r->nrejected;
    char *hdr = header_text(&r->header);
    d.grid_header = hdr;
    float *pix = NULL;
    tide_store_cutout *cuts = NULL;
    int64_t ncut = 0;
    st = hdr ? make_cutouts(r, cutout_px, &pix, &cuts, &ncut)
             : tide_error(TIDE_E_NOMEM, "diff: header text");
    tide_table rows;
    tide_table_init(&rows);
    if (!st)
        st = with_features(r, &r->cands, &rows);
    if (!st)
        st = tide_store_put_diff(store, &d, &rows, cuts, ncut, radius_arcsec, diff_id);
    tide_table_free(&rows);
    free(pix);
    free(cuts);
    free(hdr);
    return st;
}
