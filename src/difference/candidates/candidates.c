/* candidates.c — difference-image candidates (dipole.h): the detection stage run on diff and
 * on -diff with rms = sqrt(var), then positive and negative detections closer than the merge
 * radius paired into dipoles (closest pairs first), the rest kept as single-sign candidates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "candidates_kernels.h"
#include "tide/dipole.h"
#include "tide/status.h"

void tide_candidate_params_default(tide_candidate_params *p) {
    memset(p, 0, sizeof *p);
    tide_detect_params_default(&p->det);
    p->psf = NULL;
    p->merge_radius = 0.0;
}

typedef struct cdet {
    double x, y, snr, flux;
    int32_t flags;
} cdet;

typedef struct cand {
    double x, y, snr, snr_pos, snr_neg, flux, xpos, ypos, xneg, yneg;
    int32_t kind, flags;
} cand;

typedef struct cpair {
    double d2;
    int64_t i, j;
} cpair;

/* The detections of im as a list. The S/N map is made and handed back in @p maps, or, when
 * @p snr is given, taken from it. */
static int detect_list(tide_ctx *ctx, const tide_image *im, const tide_image *rms,
                       const tide_candidate_params *p, const tide_image *snr,
                       tide_detect_maps *maps, cdet **out, int64_t *n) {
    tide_table t;
    tide_table_init(&t);
    *out = NULL;
    *n = 0;
    int st = snr ? tide_detect_with_snr(ctx, im, rms, p->psf, &p->det, snr, &t)
                 : tide_detect_ex(ctx, im, rms, p->psf, &p->det, &t, maps);
    if (!st && t.nrows > 0) {
        const double *x = tide_table_f64(&t, "XWIN"), *y = tide_table_f64(&t, "YWIN");
        const double *snr = tide_table_f64(&t, "SNR"), *fl = tide_table_f64(&t, "FLUX_ISO");
        const int32_t *flags = tide_table_i32(&t, "FLAGS");
        if (!x || !y || !snr || !fl || !flags)
            st = tide_error(TIDE_E_INTERNAL, "tide_diff_candidates: detection table lacks "
                                             "XWIN, YWIN, SNR, FLUX_ISO or FLAGS");
        else if (!(*out = malloc(sizeof **out * (size_t)t.nrows)))
            st = tide_error(TIDE_E_NOMEM, "tide_diff_candidates: out of memory");
        else {
            for (int64_t i = 0; i < t.nrows; i++) {
                cdet *d = &(*out)[i];
                d->x = x[i];
                d->y = y[i];
                d->snr = snr[i];
                d->flux = fl[i];
                d->flags = flags[i];
            }
            *n = t.nrows;
        }
    }
    tide_table_free(&t);
    return st;
}

/* A negative detection's x and index, for the sweep over x. */
typedef struct cxi {
    double x;
    int64_t j;
} cxi;

static int cmp_xi(const void *a, const void *b) {
    const cxi *p = a, *q = b;
    if (p->x != q->x)
        return p->x < q->x ? -1 : 1;
    return p->j < q->j ? -1 : p->j > q->j;
}

static int cmp_pair(const void *a, const void *b) {
    const cpair *p = a, *q = b;
    if (p->d2 != q->d2)
        return p->d2 < q->d2 ? -1 : 1;
    if (p->i != q->i)
        return p->i < q->i ? -1 : 1;
    return p->j < q->j ? -1 : p->j > q->j;
}

static int cmp_cand(const void *a, const void *b) {
    const cand *p = a, *q = b;
    if (p->snr != q->snr)
        return p->snr > q->snr ? -1 : 1;
    if (p->y != q->y)
        return p->y < q->y ? -1 : 1;
    return p->x < q->x ? -1 : p->x > q->x;
}

/* Pair positive and negative detections closer than R: all pairs within R (sweep over the
 * negatives sorted by x), closest first, each detection in at most one pair. */
static int merge(const cdet *pos, int64_t np, const cdet *neg, int64_t nn, double R, cand **out,
                 int64_t *nout) {
    int st = 0;
    cxi *xs = malloc(sizeof *xs * (size_t)(nn > 0 ? nn : 1));
    int64_t *pm = malloc(sizeof *pm * (size_t)(np > 0 ? np : 1));
    int64_t *nm = malloc(sizeof *nm * (size_t)(nn > 0 ? nn : 1));
    cand *c = malloc(sizeof *c * (size_t)(np + nn > 0 ? np + nn : 1));
    cpair *pr = NULL;
    int64_t npair = 0, cap = 0;
    if (!xs || !pm || !nm || !c)
        st = TIDE_E_NOMEM;
    for (int64_t j = 0; !st && j < nn; j++) {
        xs[j].x = neg[j].x;
        xs[j].j = j;
        nm[j] = -1;
    }
    for (int64_t i = 0; !st && i < np; i++)
        pm[i] = -1;
    if (!st)
        qsort(xs, (size_t)nn, sizeof *xs, cmp_xi);
    for (int64_t i = 0; !st && i < np; i++) {
        /* first negative with x >= pos.x - R */
        int64_t lo = 0, hi = nn;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (xs[mid].x < pos[i].x - R)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (int64_t k = lo; k < nn && xs[k].x <= pos[i].x + R; k++) {
            const cdet *d = &neg[xs[k].j];
            const double dx = d->x - pos[i].x, dy = d->y - pos[i].y, d2 = dx * dx + dy * dy;
            if (!(d2 <= R * R))
                continue;
            if (npair == cap) {
                cap = cap ? 2 * cap : 64;
                cpair *g = realloc(pr, sizeof *pr * (size_t)cap);
                if (!g) {
                    st = TIDE_E_NOMEM;
                    break;
                }
                pr = g;
            }
            pr[npair].d2 = d2;
            pr[npair].i = i;
            pr[npair].j = xs[k].j;
            npair++;
        }
    }
    if (!st && npair)
        qsort(pr, (size_t)npair, sizeof *pr, cmp_pair);
    int64_t n = 0;
    for (int64_t k = 0; !st && k < npair; k++) {
        const int64_t i = pr[k].i, j = pr[k].j;
        if (pm[i] >= 0 || nm[j] >= 0)
            continue;
        pm[i] = j;
        nm[j] = i;
        cand *o = &c[n++];
        o->kind = TIDE_CAND_DIPOLE;
        o->xpos = pos[i].x;
        o->ypos = pos[i].y;
        o->xneg = neg[j].x;
        o->yneg = neg[j].y;
        o->x = 0.5 * (o->xpos + o->xneg);
        o->y = 0.5 * (o->ypos + o->yneg);
        o->snr_pos = pos[i].snr;
        o->snr_neg = neg[j].snr;
        o->snr = fmax(o->snr_pos, o->snr_neg);
        o->flux = pos[i].flux - neg[j].flux;
        o->flags = pos[i].flags | neg[j].flags;
    }
    for (int64_t i = 0; !st && i < np; i++) {
        if (pm[i] >= 0)
            continue;
        cand *o = &c[n++];
        o->kind = TIDE_CAND_POSITIVE;
        o->x = o->xpos = pos[i].x;
        o->y = o->ypos = pos[i].y;
        o->xneg = o->yneg = o->snr_neg = NAN;
        o->snr = o->snr_pos = pos[i].snr;
        o->flux = pos[i].flux;
        o->flags = pos[i].flags;
    }
    for (int64_t j = 0; !st && j < nn; j++) {
        if (nm[j] >= 0)
            continue;
        cand *o = &c[n++];
        o->kind = TIDE_CAND_NEGATIVE;
        o->x = o->xneg = neg[j].x;
        o->y = o->yneg = neg[j].y;
        o->xpos = o->ypos = o->snr_pos = NAN;
        o->snr = o->snr_neg = neg[j].snr;
        o->flux = -neg[j].flux;
        o->flags = neg[j].flags;
    }
    if (!st)
        qsort(c, (size_t)n, sizeof *c, cmp_cand);
    free(xs);
    free(pm);
    free(nm);
    free(pr);
    if (st) {
        free(c);
        return tide_error(st, "tide_diff_candidates: out of memory");
    }
    *out = c;
    *nout = n;
    return 0;
}

static int write_table(const cand *c, int64_t n, tide_table *t) {
    static const struct {
        const char *name, *unit, *comment;
        tide_col_type type;
    } cols[] = {
        {"X", "pixel", "candidate centre x, 0-based", TIDE_COL_F64},
        {"Y", "pixel", "candidate centre y, 0-based", TIDE_COL_F64},
        {"X_IMAGE", "pixel", "candidate centre x, FITS 1-based", TIDE_COL_F64},
        {"Y_IMAGE", "pixel", "candidate centre y, FITS 1-based", TIDE_COL_F64},
        {"KIND", "", "1 positive, -1 negative, 2 dipole", TIDE_COL_I32},
        {"SNR", "", "largest matched-filter S/N of its detections", TIDE_COL_F64},
        {"SNR_POS", "", "S/N of the positive detection", TIDE_COL_F64},
        {"SNR_NEG", "", "S/N of the negative detection", TIDE_COL_F64},
        {"FLUX", "", "isophotal flux, positive minus negative part", TIDE_COL_F64},
        {"XPOS", "pixel", "positive lobe x, 0-based", TIDE_COL_F64},
        {"YPOS", "pixel", "positive lobe y, 0-based", TIDE_COL_F64},
        {"XNEG", "pixel", "negative lobe x, 0-based", TIDE_COL_F64},
        {"YNEG", "pixel", "negative lobe y, 0-based", TIDE_COL_F64},
        {"FLAGS", "", "OR of the detections' FLAGS", TIDE_COL_I32},
    };
    const int ncol = (int)(sizeof cols / sizeof cols[0]);
    int st = 0;
    for (int k = 0; !st && k < ncol; k++)
        if (!tide_table_column(t, cols[k].name))
            st = tide_table_add_column(t, cols[k].name, cols[k].type, 1, cols[k].unit,
                                       cols[k].comment, NULL);
    if (!st)
        st = tide_table_resize(t, n);
    if (st)
        return st;
    double *X = tide_table_f64(t, "X"), *Y = tide_table_f64(t, "Y");
    double *XI = tide_table_f64(t, "X_IMAGE"), *YI = tide_table_f64(t, "Y_IMAGE");
    int32_t *K = tide_table_i32(t, "KIND"), *F = tide_table_i32(t, "FLAGS");
    double *S = tide_table_f64(t, "SNR"), *SP = tide_table_f64(t, "SNR_POS");
    double *SN = tide_table_f64(t, "SNR_NEG"), *FL = tide_table_f64(t, "FLUX");
    double *XP = tide_table_f64(t, "XPOS"), *YP = tide_table_f64(t, "YPOS");
    double *XN = tide_table_f64(t, "XNEG"), *YN = tide_table_f64(t, "YNEG");
    if (!X || !Y || !XI || !YI || !K || !F || !S || !SP || !SN || !FL || !XP || !YP || !XN || !YN)
        return tide_error(TIDE_E_INVAL, "tide_diff_candidates: the table has a column of the "
                                        "wrong type");
    for (int64_t i = 0; i < n; i++) {
        X[i] = c[i].x;
        Y[i] = c[i].y;
        XI[i] = c[i].x + 1.0;
        YI[i] = c[i].y + 1.0;
        K[i] = c[i].kind;
        F[i] = c[i].flags;
        S[i] = c[i].snr;
        SP[i] = c[i].snr_pos;
        SN[i] = c[i].snr_neg;
        FL[i] = c[i].flux;
        XP[i] = c[i].xpos;
        YP[i] = c[i].ypos;
        XN[i] = c[i].xneg;
        YN[i] = c[i].yneg;
    }
    return 0;
}

int tide_diff_candidates(tide_ctx *ctx, const tide_image *diff, const tide_candidate_params *pin,
                         tide_table *cands) {
    const char *who = "tide_diff_candidates";
    if (!ctx || !diff || !cands)
        return tide_error(TIDE_E_INVAL, "%s: NULL argument", who);
    if (!diff->pix || !diff->var)
        return tide_error(TIDE_E_INVAL, "%s: the difference needs pixels and a variance", who);
    if (diff->width < 1 || diff->height < 1 || diff->stride < diff->width)
        return tide_error(TIDE_E_INVAL, "%s: bad image size", who);
    tide_candidate_params p;
    if (pin)
        p = *pin;
    else
        tide_candidate_params_default(&p);
    const double R = p.merge_radius > 0.0 ? p.merge_radius : 2.0 * p.det.fwhm_guess;
    if (!(R > 0.0) || !isfinite(R))
        return tide_error(TIDE_E_INVAL, "%s: merge radius %g is not positive", who, R);
    const int dev = diff->location == TIDE_DEVICE;
    if (dev && ctx->backend != TIDE_BACKEND_CUDA)
        return tide_error(TIDE_E_INVAL, "%s: a CPU context needs a host image", who);

    /* rms and -diff, with the input's stride so the mask plane can be shared. */
    tide_image rms = {0}, neg = {0};
    const tide_location loc = dev ? TIDE_DEVICE : TIDE_HOST;
    int st = tide_image_alloc(ctx, &rms, diff->stride, diff->height, loc, 0);
    if (!st)
        st = tide_image_alloc(ctx, &neg, diff->stride, diff->height, loc, 0);
    if (!st) {
        tide_cand_prep_job jb = {diff->pix,    diff->var, diff->width, diff->height,
                                 diff->stride, rms.pix,   neg.pix};
        if (dev) {
#ifdef TIDE_HAVE_CUDA
            st = tide_cand_prep_cuda(ctx, &jb);
#else
            st = tide_error(TIDE_E_NODEVICE, "%s: built without CUDA", who);
#endif
        } else {
            st = tide_cand_prep_cpu(ctx, &jb);
        }
    }
    cdet *pos = NULL, *ng = NULL;
    int64_t np = 0, nn = 0;
    if (!st) {
        tide_image sv = *diff, rv = rms, nv = neg;
        sv.var = NULL;
        sv.owns = rv.owns = nv.owns = 0;
        rv.width = nv.width = diff->width;
        nv.mask = diff->mask;
        /* The negative detections reuse the S/N map negated: the matched filter is linear
         * and IEEE negation exact, so it is the map of -diff to the bit, without a second
         * filtering. */
        tide_detect_maps maps;
        memset(&maps, 0, sizeof maps);
        st = detect_list(ctx, &sv, &rv, &p, NULL, &maps, &pos, &np);
        if (!st) {
            const int64_t n = maps.snr.width * maps.snr.height;
            if (maps.location == TIDE_DEVICE) { /* a CUDA context's map, whatever diff's */
#ifdef TIDE_HAVE_CUDA
                st = tide_cand_negate_cuda(ctx, maps.snr.pix, n);
#endif
            } else {
                st = tide_cand_negate_cpu(ctx, maps.snr.pix, n);
            }
        }
        if (!st)
            st = detect_list(ctx, &nv, &rv, &p, &maps.snr, NULL, &ng, &nn);
        tide_detect_maps_free(ctx, &maps);
    }
    tide_image_free(ctx, &neg);
    tide_image_free(ctx, &rms);
    cand *c = NULL;
    int64_t nc = 0;
    if (!st)
        st = merge(pos, np, ng, nn, R, &c, &nc);
    if (!st)
        st = write_table(c, nc, cands);
    free(c);
    free(pos);
    free(ng);
    return st;
}
