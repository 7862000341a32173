/* solve_refcat.c — tide_solve_refcat: plate-solve against a reference catalogue itself.
 *
 * A field that no installed index covers (a simulated sky, a field narrower than the
 * smallest Tycho-2 quads, a catalogue deeper than Tycho-2) can still be solved from the
 * reference stars fetched around its rough header: astrometry.net index files are built from
 * them (index_build.c: uniformise, star tree, quads, code tree), in a private temporary
 * directory, for the quad sizes the hinted field holds, and the hinted attempt of tide_solve
 * runs on them. The same quad matching and log-odds verification then decide, so a field
 * whose stars are not in the catalogue fails as it would against any index. The files are
 * removed before returning. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solve_internal.h"
#include "tide/outfile.h"
#include "tide/status.h"
#include "tide/timer.h"

/* Quad-diameter bounds of the index scales (index_build.c, build-astrometry-index -P). */
static const double k_scales[] = {2.0,   2.8,   4.0,   5.6,   8.0,    11.0,   16.0,
                                  22.0,  30.0,  42.0,  60.0,  85.0,   120.0,  170.0,
                                  240.0, 340.0, 480.0, 680.0, 1000.0, 1400.0, 2000.0};
enum { NSCALE = (int)(sizeof k_scales / sizeof k_scales[0]) - 1 };

/* Quads from a quarter of the field's smaller side to 0.8 of it: what a hinted solve tries
 * first (solver quads start at quad_size_min = 0.1 of the side, but quads of a few tenths of
 * the field have the most stars to choose from and verify best), and few enough scales that
 * building them costs tens of milliseconds for a thousand stars. */
#define REF_QUAD_LO 0.25
#define REF_QUAD_HI 0.8

/* The index keeps its brightest stars per HEALPix cell (10 per cell of a smallest quad's
 * size: a few hundred over the field), so a deep catalogue's faint stars only cost time:
 * 35,000 stars took ~1 s of CPU to build five scales, 586 took 0.1 s. The build is held to
 * the brightest REF_MAX_STARS. */
#define REF_MAX_STARS 4000

typedef struct mag_order {
    double mag;
    int64_t i;
} mag_order;

static int by_mag(const void *pa, const void *pb) {
    const mag_order *a = pa, *b = pb;
    if (a->mag != b->mag)
        return a->mag < b->mag ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* The brightest REF_MAX_STARS finite rows of @p ref (RA, DEC, MAG) into @p out. */
static int brightest(const tide_table *ref, tide_table *out) {
    const double *ra = tide_table_f64(ref, "RA"), *de = tide_table_f64(ref, "DEC"),
                 *mg = tide_table_f64(ref, "MAG");
    if (!ra || !de || !mg)
        return tide_error(TIDE_E_NOTFOUND, "refcat solve: the catalogue needs double columns "
                                           "RA, DEC and MAG");
    mag_order *o = malloc((size_t)(ref->nrows > 0 ? ref->nrows : 1) * sizeof *o);
    if (!o)
        return tide_error(TIDE_E_NOMEM, "refcat solve: %lld stars", (long long)ref->nrows);
    int64_t n = 0;
    for (int64_t i = 0; i < ref->nrows; i++)
        if (isfinite(ra[i]) && isfinite(de[i]) && isfinite(mg[i]))
            o[n].mag = mg[i], o[n].i = i, n++;
    qsort(o, (size_t)n, sizeof *o, by_mag);
    if (n > REF_MAX_STARS)
        n = REF_MAX_STARS;
    int st = tide_table_add_column(out, "RA", TIDE_COL_F64, 1, "deg", NULL, NULL);
    if (!st)
        st = tide_table_add_column(out, "DEC", TIDE_COL_F64, 1, "deg", NULL, NULL);
    if (!st)
        st = tide_table_add_column(out, "MAG", TIDE_COL_F64, 1, "mag", NULL, NULL);
    if (!st)
        st = tide_table_resize(out, n);
    if (!st) {
        double *ora = tide_table_f64(out, "RA"), *ode = tide_table_f64(out, "DEC"),
               *omg = tide_table_f64(out, "MAG");
        for (int64_t k = 0; k < n; k++) {
            ora[k] = ra[o[k].i];
            ode[k] = de[o[k].i];
            omg[k] = mg[o[k].i];
        }
    }
    free(o);
    return st;
}

int tide_solve_refcat(const tide_table *ref, const double *x, const double *y, const double *flux,
                      int64_t n, const tide_solve_params *p, tide_wcs **wcs,
                      tide_solve_info *info) {
    if (wcs)
        *wcs = NULL;
    if (info)
        memset(info, 0, sizeof *info);
    if (!ref || !p)
        return tide_error(TIDE_E_INVAL, "refcat solve: no catalogue or parameters");
    if (!p->has_position || !(p->scale_hi > 0))
        return tide_error(TIDE_E_INVAL, "refcat solve: needs a position and a pixel-scale hint");
    const double t0 = tide_now();
    const double side = (double)(p->width < p->height ? p->width : p->height);
    const double fov_lo = side * p->scale_lo / 60.0, fov_hi = side * p->scale_hi / 60.0;
    const double qlo = REF_QUAD_LO * fov_lo, qhi = REF_QUAD_HI * fov_hi;
    int lo = -1, hi = -1;
    for (int k = 0; k < NSCALE; k++)
        if (k_scales[k + 1] > qlo && k_scales[k] < qhi) {
            if (lo < 0)
                lo = k;
            hi = k;
        }
    if (lo < 0)
        return tide_error(TIDE_E_NOSOLVE,
                          "refcat solve: a field of %.3g' has quads of %.3g'..%.3g', outside "
                          "the index scales %g'..%g'",
                          fov_hi, qlo, qhi, k_scales[0], k_scales[NSCALE]);
    const char *tmp = getenv("TMPDIR");
    char base[4096], dir[4200];
    snprintf(base, sizeof base, "%s/tide-refcat-index", tmp && *tmp ? tmp : "/tmp");
    int st = tide_outfile_mkdtemp(base, dir, sizeof dir);
    if (st)
        return st;
    tide_table bright;
    tide_table_init(&bright);
    const tide_table *cat = ref;
    if (ref->nrows > REF_MAX_STARS) {
        st = brightest(ref, &bright);
        if (st)
            goto done;
        cat = &bright;
    }
    tide_index_build_params bp;
    tide_index_build_params_init(&bp);
    bp.prefix = "index-refcat";
    /* One scale at a time: a scale too coarse for the catalogue's extent (no quad of that
     * size fits) is skipped, not a failure of the others. */
    int built = 0;
    char why[512] = "";
    for (int k = lo; k <= hi; k++) {
        bp.scale_lo = bp.scale_hi = k;
        int nb = 0;
        const int bs = tide_index_build(cat, dir, &bp, NULL, 0, &nb);
        if (bs == TIDE_E_NOMEM) {
            st = bs;
            goto done;
        }
        if (bs) {
            snprintf(why, sizeof why, "%s", tide_error_detail());
            tide_error_clear();
        }
        built += nb;
    }
    if (!built) {
        st = tide_error(TIDE_E_NOSOLVE,
                        "refcat solve: no index could be built from %lld "
                        "reference stars for quads of %.3g'..%.3g'%s%s",
                        (long long)ref->nrows, qlo, qhi, why[0] ? ": " : "", why);
        goto done;
    }
    tide_solver *s = NULL;
    st = tide_solver_open(dir, &s);
    if (!st) {
        tide_solve_params q = *p;
        q.blind_fallback = 0; /* the catalogue covers the hinted cone only */
        q.timeout_s = p->timeout_s - (tide_now() - t0);
        if (!(q.timeout_s > 0.05))
            q.timeout_s = 0.05;
        st = tide_solve(s, x, y, flux, n, &q, wcs, info);
        if (info && !st)
            snprintf(info->index_name, sizeof info->index_name,
                     "reference catalogue (%d "
                     "scale%s)",
                     built, built == 1 ? "" : "s");
        tide_solver_free(s);
    }
done:
    tide_table_free(&bright);
    tide_outfile_remove_tree(dir);
    return st;
}
