/* rb_sources.c — the labelled examples of `tide rb train` (rb_sources.h): simulated pairs
 * with truth, and candidates labelled by a person. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb_sources.h"
#include "tide/diff.h"
#include "tide/fits.h"
#include "tide/sim.h"
#include "tide/status.h"

void rb_set_free(rb_set *s) {
    free(s->x);
    free(s->y);
    free(s->group);
    memset(s, 0, sizeof *s);
}

int rb_set_add(rb_set *s, const float *x, float y, int64_t group) {
    if (s->n == s->cap) {
        const int64_t cap = s->cap ? 2 * s->cap : 1024;
        float *nx = realloc(s->x, (size_t)cap * TIDE_RB_NFEAT * sizeof *nx);
        if (nx)
            s->x = nx;
        float *ny = realloc(s->y, (size_t)cap * sizeof *ny);
        if (ny)
            s->y = ny;
        int64_t *ng = realloc(s->group, (size_t)cap * sizeof *ng);
        if (ng)
            s->group = ng;
        if (!nx || !ny || !ng)
            return tide_error(TIDE_E_NOMEM, "rb train: out of memory for the examples");
        s->cap = cap;
    }
    memcpy(s->x + (size_t)s->n * TIDE_RB_NFEAT, x, TIDE_RB_NFEAT * sizeof *x);
    s->y[s->n] = y;
    s->group[s->n] = group;
    s->n++;
    return 0;
}

static void desc_add(rb_set *s, const char *phrase) {
    const size_t at = strlen(s->desc);
    snprintf(s->desc + at, sizeof s->desc - at, "%s%s", at ? "; " : "", phrase);
}

double rb_header_fwhm(const tide_header *h) {
    double a = NAN, b = NAN;
    tide_header_get_dbl(h, "FWHMSCI", &a);
    tide_header_get_dbl(h, "FWHMTMPL", &b);
    const double f = fmax(isfinite(a) ? a : 0, isfinite(b) ? b : 0);
    return f > 0 ? f : 3.0;
}

static double num_at(const tide_table *t, const char *name, int64_t i) {
    const tide_column *c = tide_table_column(t, name);
    if (!c)
        return NAN;
    switch (c->type) {
    case TIDE_COL_F64: return ((const double *)c->data)[i];
    case TIDE_COL_F32: return ((const float *)c->data)[i];
    case TIDE_COL_I16: return ((const int16_t *)c->data)[i];
    case TIDE_COL_I32: return ((const int32_t *)c->data)[i];
    case TIDE_COL_I64: return (double)((const int64_t *)c->data)[i];
    default: return NAN;
    }
}

/* The simulation of pair @p k: small frames, dense in changes so that a few pairs give
 * hundreds of real examples, with the seeing, sky and offsets varied from pair to pair. */
static void pair_params(tide_sim_params *p, uint64_t seed, int k, int size) {
    tide_sim_params_default(p);
    p->seed = seed;
    p->width = p->height = size;
    const double area = (double)size * size / (2048.0 * 2048.0);
    p->nstars = (int64_t)(2000 * area * (1 + 0.5 * (k % 3)));
    p->ngalaxies = (int64_t)(400 * area) + 5;
    p->e2_ntransient = (int64_t)(60 * area * 16) / 4 + 8;
    p->e2_nvariable = p->e2_ntransient;
    p->e2_nmoving = 3;
    p->e2_nsatellite = 1 + k % 3;
    p->fwhm = 2.4 + 0.35 * (k % 4);
    p->e2_fwhm_scale = 1.1 + 0.15 * (k % 3);
    p->e2_transparency = 0.75 + 0.05 * (k % 5);
    p->e2_dra = 10 + 7 * (k % 5);
    p->e2_ddec = -8 - 5 * (k % 3);
    p->cr_rate = 20 + 10 * (k % 3);
}

/* Candidates of one simulated pair into @p s. */
static int sim_pair(tide_ctx *ctx, int k, uint64_t seed, int size, int64_t group, int quiet,
                    rb_set *s) {
    tide_sim_params sp;
    pair_params(&sp, seed, k, size);
    tide_sim_sky *sky = NULL;
    tide_sim_frame f1, f2;
    memset(&f1, 0, sizeof f1);
    memset(&f2, 0, sizeof f2);
    tide_diff_result r;
    memset(&r, 0, sizeof r);
    double *real = NULL, *stars = NULL;
    float *x = NULL;
    int st = tide_sim_sky_make(ctx, &sp, &sky);
    if (!st)
        st = tide_sim_epoch(ctx, sky, 1, &f1);
    if (!st)
        st = tide_sim_epoch(ctx, sky, 2, &f2);
    if (st)
        goto out;
    tide_diff_params dp;
    tide_diff_params_default(&dp);
    /* Every other pair keeps the candidates on flagged pixels (cosmic rays, hot pixels,
     * bleed trails, bad columns) that tide diff drops by default, so that the model meets
     * them: a pipeline without cosmetics would pass them on (its kernel fit, corrupted by
     * them, mis-subtracts every star, which no score can mend). */
    if (k % 2)
        dp.reject_bits = 0;
    /* One pair in three is searched down to S/N 3.5, for the noise peaks a survey meets
     * when it lowers its threshold (bogus: no change there). */
    if (k % 3 == 1)
        dp.cand.det.thresh = 3.5;
    dp.keep_stamps = 0;
    snprintf(dp.sci_name, sizeof dp.sci_name, "sim seed %llu epoch 2", (unsigned long long)seed);
    snprintf(dp.tmpl_name, sizeof dp.tmpl_name, "sim seed %llu epoch 1", (unsigned long long)seed);
    st = tide_diff_run(ctx, &f2.image, &f2.header, &f1.image, &f1.header, &dp, &r);
    if (st)
        goto out;
    /* The real changes on the template's grid (epoch 1 pixels, FITS 1-based): transients and
     * variables where epoch 2 has them, a moving object at both of its positions. */
    const tide_table *t1 = &f1.truth, *t2 = &f2.truth;
    const int64_t nmax = t1->nrows + t2->nrows;
    real = malloc((size_t)(nmax > 0 ? nmax : 1) * 2 * sizeof *real);
    stars = malloc((size_t)(t1->nrows > 0 ? t1->nrows : 1) * 2 * sizeof *stars);
    x = malloc((size_t)(r.cands.nrows > 0 ? r.cands.nrows : 1) * TIDE_RB_NFEAT * sizeof *x);
    if (!real || !stars || !x) {
        st = tide_error(TIDE_E_NOMEM, "rb train: out of memory");
        goto out;
    }
    int64_t nreal = 0, nstars = 0;
    for (int64_t i = 0; i < t2->nrows; i++) {
        const int type = (int)num_at(t2, "TYPE_ID", i);
        if (type != TIDE_SIM_TRANSIENT && type != TIDE_SIM_VARIABLE && type != TIDE_SIM_MOVING)
            continue;
        double ra = num_at(t2, "RA", i), dec = num_at(t2, "DEC", i), px, py;
        tide_sim_sky2pix(sky, 1, 1, &ra, &dec, &px, &py);
        real[2 * nreal] = px + 1;
        real[2 * nreal + 1] = py + 1;
        nreal++;
    }
    for (int64_t i = 0; i < t1->nrows; i++) {
        const int type = (int)num_at(t1, "TYPE_ID", i);
        if (type == TIDE_SIM_MOVING) {
            real[2 * nreal] = num_at(t1, "X_TRUE", i);
            real[2 * nreal + 1] = num_at(t1, "Y_TRUE", i);
            nreal++;
        }
        /* the reference catalog's stars: those tide_sim_refcat lists */
        if ((type == TIDE_SIM_STAR || type == TIDE_SIM_VARIABLE) &&
            num_at(t1, "MAG", i) <= sp.ref_maglim) {
            stars[2 * nstars] = num_at(t1, "X_TRUE", i);
            stars[2 * nstars + 1] = num_at(t1, "Y_TRUE", i);
            nstars++;
        }
    }
    const double fwhm = fmax(r.fwhm_sci, r.fwhm_tmpl);
    st = tide_rb_table_features(&r.diff, &r.cands, fwhm, k % 3 == 2 ? NULL : stars,
                                k % 3 == 2 ? 0 : nstars, x);
    if (st)
        goto out;
    /* Real within max(2, FWHM) of a change; between that and 3 FWHM a candidate may be a
     * fragment of one (a lobe, a blend) that a person would not call bogus: such are left
     * out rather than taught either way. */
    const double rmatch = fmax(2.0, fwhm), rnear = fmax(rmatch, 3.0 * fwhm);
    int64_t nr = 0, nskip = 0;
    for (int64_t c = 0; c < r.cands.nrows && !st; c++) {
        const double cx = num_at(&r.cands, "X_IMAGE", c), cy = num_at(&r.cands, "Y_IMAGE", c);
        double dmin = INFINITY;
        for (int64_t j = 0; j < nreal; j++)
            dmin = fmin(dmin, hypot(real[2 * j] - cx, real[2 * j + 1] - cy));
        if (dmin > rmatch && dmin <= rnear) {
            nskip++;
            continue;
        }
        nr += dmin <= rmatch;
        st = rb_set_add(s, x + (size_t)c * TIDE_RB_NFEAT, (float)(dmin <= rmatch), group);
    }
    if (!quiet)
        fprintf(stderr,
                "rb train: pair %d (seed %llu%s): %lld candidates, %lld real, %lld beside a "
                "real one left out\n",
                k, (unsigned long long)seed, dp.reject_bits ? "" : ", flagged pixels kept",
                (long long)r.cands.nrows, (long long)nr, (long long)nskip);
out:
    free(real);
    free(stars);
    free(x);
    tide_diff_result_free(&r);
    tide_sim_frame_free(ctx, &f1);
    tide_sim_frame_free(ctx, &f2);
    tide_sim_sky_free(sky);
    return st;
}

int rb_source_sim(tide_ctx *ctx, int npairs, uint64_t seed, int size, int64_t group0, int quiet,
                  rb_set *s) {
    for (int k = 0; k < npairs; k++) {
        const int st = sim_pair(ctx, k, seed + (uint64_t)k, size, group0 + k, quiet, s);
        if (st)
            return st;
    }
    char d[256];
    snprintf(d, sizeof d, "sim: %d pairs of %dx%d, seeds %llu..%llu", npairs, size, size,
             (unsigned long long)seed, (unsigned long long)(seed + (uint64_t)npairs - 1));
    desc_add(s, d);
    return 0;
}

/* "1", "0", "real", "bogus" (any case): 1, 0; else -1. */
static int parse_label(const char *v) {
    char w[16];
    size_t n = 0;
    while (*v && isspace((unsigned char)*v))
        v++;
    while (v[n] && !isspace((unsigned char)v[n]) && v[n] != ',' && n + 1 < sizeof w) {
        w[n] = (char)tolower((unsigned char)v[n]);
        n++;
    }
    w[n] = 0;
    if (!strcmp(w, "1") || !strcmp(w, "real"))
        return 1;
    if (!strcmp(w, "0") || !strcmp(w, "bogus"))
        return 0;
    return -1;
}

int rb_source_labels(tide_ctx *ctx, const char *cands, const char *labels, const char *diff,
                     int64_t group0, rb_set *s) {
    char dpath[4200];
    if (!diff) {
        const char *sl = strrchr(cands, '/');
        snprintf(dpath, sizeof dpath, "%.*sdifference.fits", sl ? (int)(sl - cands + 1) : 0, cands);
        diff = dpath;
    }
    tide_table t;
    tide_table_init(&t);
    tide_image im;
    memset(&im, 0, sizeof im);
    tide_header h;
    tide_header_init(&h);
    float *x = NULL;
    FILE *f = NULL;
    int st = tide_fits_read_table(cands, &t, NULL);
    if (!st)
        st = tide_fits_read_image(ctx, diff, &im, &h);
    if (!st) {
        x = malloc((size_t)(t.nrows > 0 ? t.nrows : 1) * TIDE_RB_NFEAT * sizeof *x);
        st = x ? tide_rb_table_features(&im, &t, rb_header_fwhm(&h), NULL, 0, x)
               : tide_error(TIDE_E_NOMEM, "rb train: out of memory");
    }
    if (!st && !(f = fopen(labels, "r")))
        st = tide_error(TIDE_E_IO, "%s: cannot open the labels", labels);
    char line[512];
    long long lineno = 0, nl = 0;
    while (!st && fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p || *p == '#')
            continue;
        char *end;
        const long long row = strtoll(p, &end, 10);
        if (end == p) {
            if (nl == 0 && lineno == 1)
                continue; /* a header line */
            st = tide_error(TIDE_E_FORMAT, "%s:%lld: expected ROW,LABEL", labels, lineno);
            break;
        }
        while (*end == ' ' || *end == '\t')
            end++;
        const int lab = *end == ',' ? parse_label(end + 1) : -1;
        if (lab < 0 || row < 1 || row > t.nrows) {
            st = tide_error(TIDE_E_FORMAT,
                            "%s:%lld: needs ROW (1..%lld of %s) and a label 1/0/real/bogus", labels,
                            lineno, (long long)t.nrows, cands);
            break;
        }
        st = rb_set_add(s, x + (size_t)(row - 1) * TIDE_RB_NFEAT, (float)lab, group0 + row);
        nl++;
    }
    if (f)
        fclose(f);
    if (!st) {
        char d[600];
        snprintf(d, sizeof d, "labels: %lld rows of %s from %s", (long long)nl, cands, labels);
        desc_add(s, d);
    }
    free(x);
    tide_header_free(&h);
    tide_image_free(ctx, &im);
    tide_table_free(&t);
    return st;
}
