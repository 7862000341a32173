/* index_build.c — astrometry.net index files from a local reference catalogue, through its
 * build-index machinery (what build-astrometry-index runs): uniformise the catalogue on a
 * HEALPix grid keeping the brightest stars per cell, build the star k-d tree, build quads
 * of the chosen diameter range per cell (hpquads), the code k-d tree, and merge the parts
 * into one index file. The scale numbers and their quad-diameter ranges are
 * build-astrometry-index's -P presets, so a scale-k file here serves the same fields as
 * astrometry.net's own index-42xx-k or Debian's tycho2-k files. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <astrometry/build-index.h>
#include <astrometry/errors.h>
#include <astrometry/healpix.h>
#include <astrometry/log.h>

#include "solve_internal.h"
#include "tide/fits.h"
#include "tide/outfile.h"
#include "tide/status.h"

/* Quad diameters bounding scale k..k+1, arcmin (build-astrometry-index -P presets). */
static const double k_scales[] = {2.0,   2.8,   4.0,   5.6,   8.0,    11.0,   16.0,
                                  22.0,  30.0,  42.0,  60.0,  85.0,   120.0,  170.0,
                                  240.0, 340.0, 480.0, 680.0, 1000.0, 1400.0, 2000.0};
enum { NSCALE = (int)(sizeof k_scales / sizeof k_scales[0]) - 1 };

void tide_index_build_params_init(tide_index_build_params *p) {
    memset(p, 0, sizeof *p);
    p->scale_lo = p->scale_hi = -1;
    p->index_id_base = 6000;
    p->ra_col = "RA";
    p->dec_col = "DEC";
    p->mag_col = "MAG";
    p->stars_per_cell = 10;
    p->passes = 16;
    p->jitter_arcsec = 1.0;
    p->prefix = "index-tide";
}

int tide_index_scales_for_fov(double fov_arcmin, int *lo, int *hi) {
    if (!(fov_arcmin >= k_scales[0]) || !(fov_arcmin <= k_scales[NSCALE]))
        return tide_error(TIDE_E_RANGE, "field of %g arcmin outside the index scales %g..%g",
                          fov_arcmin, k_scales[0], k_scales[NSCALE]);
    /* solve-field tries quads from 10 % of the field's smaller side to its diagonal: every
     * scale whose range meets [0.1 fov, fov] is useful. */
    int a = -1, b = -1;
    for (int k = 0; k < NSCALE; k++) {
        if (k_scales[k + 1] > 0.1 * fov_arcmin && k_scales[k] < fov_arcmin) {
            if (a < 0)
                a = k;
            b = k;
        }
    }
    if (a < 0)
        return tide_error(TIDE_E_RANGE, "no index scale fits a field of %g arcmin", fov_arcmin);
    *lo = a;
    *hi = b;
    return 0;
}

/* A column as doubles (F64 or F32); NULL with an error if missing or of another type. */
static double *column_f64(const tide_table *t, const char *name, int *st) {
    tide_column *c = tide_table_column(t, name);
    if (!c || c->repeat != 1 || (c->type != TIDE_COL_F64 && c->type != TIDE_COL_F32)) {
        *st = tide_error(TIDE_E_NOTFOUND, "reference catalogue: no numeric column '%s'", name);
        return NULL;
    }
    double *v = malloc((size_t)(t->nrows > 0 ? t->nrows : 1) * sizeof *v);
    if (!v) {
        *st = tide_error(TIDE_E_NOMEM, "reference catalogue: %lld rows", (long long)t->nrows);
        return NULL;
    }
    for (int64_t i = 0; i < t->nrows; i++)
        v[i] = c->type == TIDE_COL_F64 ? ((double *)c->data)[i] : ((float *)c->data)[i];
    return v;
}

/* Write the valid rows as a FITS table with RA, DEC, MAG (doubles) for astrometry.net's
 * fitstable reader. Returns the number of rows written in *nvalid. */
static int write_catalog(const tide_table *ref, const tide_index_build_params *p, const char *path,
                         int64_t *nvalid) {
    int st = 0;
    double *ra = column_f64(ref, p->ra_col, &st);
    double *de = ra ? column_f64(ref, p->dec_col, &st) : NULL;
    double *mg = de ? column_f64(ref, p->mag_col, &st) : NULL;
    tide_table t;
    tide_table_init(&t);
    if (!mg)
        goto done;
    int64_t n = 0;
    for (int64_t i = 0; i < ref->nrows; i++)
        if (isfinite(ra[i]) && isfinite(de[i]) && isfinite(mg[i]) && de[i] >= -90 && de[i] <= 90)
            n++;
    *nvalid = n;
    if (n < 4) {
        st = tide_error(TIDE_E_EMPTY,
                        "reference catalogue: %lld valid rows (RA, DEC, MAG "
                        "finite); at least 4 are needed",
                        (long long)n);
        goto done;
    }
    if ((st = tide_table_add_column(&t, "RA", TIDE_COL_F64, 1, "deg", NULL, NULL)) ||
        (st = tide_table_add_column(&t, "DEC", TIDE_COL_F64, 1, "deg", NULL, NULL)) ||
        (st = tide_table_add_column(&t, "MAG", TIDE_COL_F64, 1, "mag", NULL, NULL)) ||
        (st = tide_table_resize(&t, n)))
        goto done;
    double *ora = tide_table_f64(&t, "RA"), *ode = tide_table_f64(&t, "DEC"),
           *omg = tide_table_f64(&t, "MAG");
    int64_t j = 0;
    for (int64_t i = 0; i < ref->nrows; i++)
        if (isfinite(ra[i]) && isfinite(de[i]) && isfinite(mg[i]) && de[i] >= -90 && de[i] <= 90) {
            ora[j] = fmod(fmod(ra[i], 360.0) + 360.0, 360.0);
            ode[j] = de[i];
            omg[j] = mg[i];
            j++;
        }
    st = tide_fits_write_table(path, &t, NULL, "CATALOG");
done:
    tide_table_free(&t);
    free(ra);
    free(de);
    free(mg);
    return st;
}

static int make_dir(const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) == 0)
        return S_ISDIR(sb.st_mode) ? 0 : tide_error(TIDE_E_IO, "%s: not a directory", dir);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return tide_error(TIDE_E_IO, "%s: cannot create the directory: %s", dir, strerror(errno));
    return 0;
}

/* Build one scale into @p final (via a temporary name in the same directory). */
static int build_one(const char *catalog, const char *final, const char *dir, int k,
                     const tide_index_build_params *p) {
    index_params_t ip;
    build_index_defaults(&ip);
    ip.racol = "RA";
    ip.deccol = "DEC";
    ip.sortcol = "MAG";
    ip.sortasc = TRUE; /* brightest (smallest magnitude) first */
    ip.sweeps = p->stars_per_cell;
    ip.passes = p->passes;
    ip.jitter = p->jitter_arcsec;
    ip.qlo = k_scales[k];
    ip.qhi = k_scales[k + 1];
    /* One healpix cell per smallest quad: side qlo / sqrt(2), so that quads of the wanted
     * size centred in a cell exist wherever there are stars; uniformisation on the same grid. */
    ip.Nside = (int)ceil(healpix_nside_for_side_length_arcmin(ip.qlo / sqrt(2.0)));
    if (ip.Nside < 1)
        ip.Nside = 1;
    ip.UNside = ip.Nside;
    ip.indexid = p->index_id_base + k;
    ip.scanoccupied = TRUE; /* a local catalogue covers a small part of the sky */
    ip.inmemory = TRUE;     /* no temporary files in /tmp */
    ip.tempdir = dir;
    tide_outfile of;
    int st = tide_outfile_begin(&of, final);
    if (st)
        return st;
    const char *tmp = of.tmp; /* astrometry.net creates it by name, in our private dir */
    /* Parts of the build machinery (k-d tree dumps, progress dots) printf to stdout without
     * going through astrometry.net's logger. The library never prints: stdout's descriptor
     * points at /dev/null for the duration of the build (flushed on both sides, so nothing
     * of the caller's is lost and nothing of astrometry.net's leaks). This is process-wide;
     * index building is a batch step, not something a worker does while others print. */
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    int devnull = open("/dev/null", O_WRONLY);
    if (saved >= 0 && devnull >= 0)
        dup2(devnull, STDOUT_FILENO);
    errors_start_logging_to_string();
    int r = build_index_files(catalog, 1, tmp, &ip);
    char *why = errors_stop_logging_to_string("; ");
    fflush(stdout);
    if (saved >= 0 && devnull >= 0)
        dup2(saved, STDOUT_FILENO);
    if (saved >= 0)
        close(saved);
    if (devnull >= 0)
        close(devnull);
    if (r != 0) {
        tide_outfile_abort(&of);
        /* hpquads fails when no quad of this size can be made from the stars. */
        st = tide_error(TIDE_E_EMPTY,
                        "index scale %d (quads %g'..%g'): astrometry.net could "
                        "not build it (too few stars for quads of this size?)%s%s",
                        k, ip.qlo, ip.qhi, why && *why ? ": " : "", why ? why : "");
    } else {
        st = tide_outfile_commit(&of);
    }
    free(why);
    return st;
}

int tide_index_build(const tide_table *ref, const char *out_dir, const tide_index_build_params *p,
                     char (*paths)[4096], int npaths, int *nbuilt) {
    if (nbuilt)
        *nbuilt = 0;
    if (!ref || !out_dir || !*out_dir || !p)
        return tide_error(TIDE_E_INVAL, "index build: no catalogue, directory or parameters");
    int lo = p->scale_lo, hi = p->scale_hi;
    if (lo < 0 || hi < 0) {
        if (!(p->fov_arcmin > 0))
            return tide_error(TIDE_E_INVAL, "index build: give scale numbers or a field of view");
        int st = tide_index_scales_for_fov(p->fov_arcmin, &lo, &hi);
        if (st)
            return st;
    }
    if (lo < 0 || hi >= NSCALE || lo > hi)
        return tide_error(TIDE_E_RANGE, "index build: scales %d..%d outside 0..%d", lo, hi,
                          NSCALE - 1);
    if (p->stars_per_cell < 1 || p->passes < 1 || !(p->jitter_arcsec > 0))
        return tide_error(TIDE_E_INVAL, "index build: stars per cell, passes and jitter must be "
                                        "positive");
    tide_solve_quiet_astrometry();
    int st = make_dir(out_dir);
    if (st)
        return st;
    /* The cleaned catalogue astrometry.net reads by name: in a private directory of ours, so
     * nobody can swap it between its writing and its reading. */
    char priv[4200], catalog[4300];
    snprintf(catalog, sizeof catalog, "%s/catalog.fits", out_dir);
    st = tide_outfile_mkdtemp(catalog, priv, sizeof priv);
    if (st)
        return st;
    snprintf(catalog, sizeof catalog, "%s/catalog.fits", priv);
    int64_t nvalid = 0;
    st = write_catalog(ref, p, catalog, &nvalid);
    int built = 0;
    for (int k = lo; !st && k <= hi; k++) {
        char final[4096];
        snprintf(final, sizeof final, "%s/%s-%02d.fits", out_dir,
                 p->prefix && *p->prefix ? p->prefix : "index-tide", k);
        st = build_one(catalog, final, out_dir, k, p);
        if (!st) {
            if (paths && built < npaths)
                snprintf(paths[built], sizeof paths[built], "%s", final);
            built++;
        }
    }
    tide_outfile_remove_tree(priv);
    if (nbuilt)
        *nbuilt = built;
    return st;
}
