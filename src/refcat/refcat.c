/* refcat.c — reference catalogs: the five-column layout, FITS tables, cones, angles. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "refcat_internal.h"
#include "tide/fits.h"
#include "tide/instrument.h"
#include "tide/status.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static const char *const k_names[TIDE_RC_N] = {"RA", "DEC", "MAG", "MAGERR", "COLOR"};
static const char *const k_units[TIDE_RC_N] = {"deg", "deg", "mag", "mag", "mag"};
static const char *const k_comments[TIDE_RC_N] = {
    "right ascension (ICRS)", "declination (ICRS)", "reference magnitude",
    "error of MAG (NaN = unknown)", "colour index (NaN = unknown)"};

const char *tide_refcat_wanted(const tide_refcat_columns *cols, int k, int *required) {
    const char *given = NULL;
    if (cols) {
        const char *const m[TIDE_RC_N] = {cols->ra, cols->dec, cols->mag, cols->magerr,
                                          cols->color};
        given = m[k][0] ? m[k] : NULL;
    }
    *required = given != NULL || k <= TIDE_RC_MAG;
    return given ? given : k_names[k];
}

double tide_refcat_margin_deg(double radius_deg) {
    return 0.1 * radius_deg + 1.0 / 60.0;
}

int tide_refcat_table_init(tide_table *t, int64_t nrows) {
    tide_table_init(t);
    int st = 0;
    for (int k = 0; k < TIDE_RC_N && !st; k++)
        st = tide_table_add_column(t, k_names[k], TIDE_COL_F64, 1, k_units[k], k_comments[k], NULL);
    if (!st)
        st = tide_table_resize(t, nrows);
    if (st) {
        tide_table_free(t);
        return tide_error(TIDE_E_NOMEM, "refcat: no memory for %lld rows", (long long)nrows);
    }
    for (int k = 0; k < TIDE_RC_N; k++) {
        double *d = t->cols[k].data;
        for (int64_t i = 0; i < nrows; i++)
            d[i] = NAN;
    }
    return 0;
}

/* A column of any numeric type (or, for RA/DEC, text) as doubles into dst. */
static int column_to_f64(const tide_column *c, int64_t n, int k, const char *path, double *dst) {
    if (c->type != TIDE_COL_STR && c->repeat != 1)
        return tide_error(TIDE_E_FORMAT, "%s: column %s is a vector (%lld elements per row)", path,
                          c->name, (long long)c->repeat);
    for (int64_t i = 0; i < n; i++) {
        switch (c->type) {
        case TIDE_COL_F64: dst[i] = ((const double *)c->data)[i]; break;
        case TIDE_COL_F32: dst[i] = ((const float *)c->data)[i]; break;
        case TIDE_COL_I64: dst[i] = (double)((const int64_t *)c->data)[i]; break;
        case TIDE_COL_I32: dst[i] = ((const int32_t *)c->data)[i]; break;
        case TIDE_COL_I16: dst[i] = ((const int16_t *)c->data)[i]; break;
        case TIDE_COL_U8: dst[i] = ((const uint8_t *)c->data)[i]; break;
        case TIDE_COL_STR: {
            char buf[128];
            int64_t w = c->repeat < (int64_t)sizeof buf - 1 ? c->repeat : (int64_t)sizeof buf - 1;
            memcpy(buf, (const char *)c->data + i * c->repeat, (size_t)w);
            buf[w] = 0;
            const char *b = buf;
            while (*b == ' ')
                b++;
            if (!*b || !strcasecmp(b, "nan")) {
                dst[i] = NAN;
            } else if (tide_parse_angle(buf, k == TIDE_RC_RA, &dst[i])) {
                char *end = NULL;
                dst[i] = strtod(buf, &end);
                if (k <= TIDE_RC_DEC || end == buf)
                    return tide_error(TIDE_E_FORMAT, "%s: row %lld of column %s: '%s' is not %s",
                                      path, (long long)(i + 1), c->name, buf,
                                      k <= TIDE_RC_DEC ? "an angle" : "a number");
            }
            break;
        }
        }
    }
    return 0;
}

static int read_fits(const char *path, const tide_refcat_columns *cols, tide_table *out) {
    tide_table src;
    tide_table_init(&src);
    int st = tide_fits_read_table(path, &src, NULL);
    if (st) {
        if (st == TIDE_E_NOTFOUND)
            st = TIDE_E_IO; /* a missing file; a missing HDU reads the same to a user */
        return tide_error_prefix(st, "reference catalog %s: ", path);
    }
    if ((st = tide_refcat_table_init(out, src.nrows))) {
        tide_table_free(&src);
        return st;
    }
    for (int k = 0; k < TIDE_RC_N && !st; k++) {
        int required;
        const char *want = tide_refcat_wanted(cols, k, &required);
        const tide_column *c = NULL;
        for (int j = 0; j < src.ncols && !c; j++)
            if (!strcasecmp(src.cols[j].name, want))
                c = &src.cols[j];
        if (!c) {
            if (required)
                st = tide_error(TIDE_E_NOTFOUND, "%s: no column '%s' in the reference catalog",
                                path, want);
            continue;
        }
        st = column_to_f64(c, src.nrows, k, path, out->cols[k].data);
    }
    tide_table_free(&src);
    if (st)
        tide_table_free(out);
    return st;
}

int tide_refcat_read(const char *path, const tide_refcat_columns *cols, tide_table *out) {
    tide_table_init(out);
    if (!path || !*path)
        return tide_error(TIDE_E_INVAL, "refcat: no file name");
    /* The file itself, without a cfitsio selector "[...]" (FILE[1] for a FITS table). */
    char base[4096];
    snprintf(base, sizeof base, "%s", path);
    FILE *f = fopen(base, "rb");
    if (!f) {
        char *br = strchr(base, '[');
        if (br) {
            *br = 0;
            f = fopen(base, "rb");
        }
    }
    if (!f)
        return tide_error(TIDE_E_IO, "%s: cannot open the reference catalog: %s", path,
                          strerror(errno));
    unsigned char magic[9] = {0};
    size_t got = fread(magic, 1, 9, f);
    const int rerr = ferror(f);
    fclose(f);
    if (rerr)
        return tide_error(TIDE_E_IO, "%s: cannot read the reference catalog", path);
    const int fits = (got >= 9 && !memcmp(magic, "SIMPLE  =", 9)) ||
                     (got >= 2 && magic[0] == 0x1f && magic[1] == 0x8b);
    return fits ? read_fits(path, cols, out) : tide_refcat_read_csv(base, cols, out);
}

/* Great-circle distance in degrees, haversine form (accurate at small and large separations;
 * crossmatch.h's tide_sky_separation_arcsec is the same formula). */
static double sep_deg(double ra1, double dec1, double ra2, double dec2) {
    const double d2r = M_PI / 180.0;
    const double sd = sin(0.5 * (dec2 - dec1) * d2r), sa = sin(0.5 * (ra2 - ra1) * d2r);
    double h = sd * sd + cos(dec1 * d2r) * cos(dec2 * d2r) * sa * sa;
    h = h < 0 ? 0 : h > 1 ? 1 : h;
    return 2.0 * asin(sqrt(h)) / d2r;
}

int tide_refcat_cone(tide_table *t, double ra, double dec, double radius_deg, const char *name) {
    if (!isfinite(ra) || !isfinite(dec) || fabs(dec) > 90.0)
        return tide_error(TIDE_E_INVAL, "%s: cone centre (%g, %g) is not a sky position", name, ra,
                          dec);
    if (!(radius_deg > 0.0 && radius_deg <= 180.0))
        return tide_error(TIDE_E_INVAL, "%s: cone radius %g deg out of (0, 180]", name, radius_deg);
    double *col[TIDE_RC_N];
    for (int k = 0; k < TIDE_RC_N; k++) {
        col[k] = tide_table_f64(t, k_names[k]);
        if (!col[k])
            return tide_error(TIDE_E_INVAL, "%s: table has no F64 column %s", name, k_names[k]);
    }
    int64_t m = 0;
    for (int64_t i = 0; i < t->nrows; i++) {
        if (!(sep_deg(ra, dec, col[0][i], col[1][i]) <= radius_deg))
            continue;
        for (int k = 0; k < TIDE_RC_N; k++)
            col[k][m] = col[k][i];
        m++;
    }
    t->nrows = m;
    if (m == 0)
        return tide_error(TIDE_E_EMPTY, "%s: no reference star within %.4f deg of (%.6f, %.6f)",
                          name, radius_deg, ra, dec);
    return 0;
}

int tide_refcat_load(const char *path, const tide_refcat_columns *cols, double ra, double dec,
                     double radius_deg, tide_table *out) {
    int st = tide_refcat_read(path, cols, out);
    if (!st)
        st = tide_refcat_cone(out, ra, dec, radius_deg + tide_refcat_margin_deg(radius_deg), path);
    if (st)
        tide_table_free(out);
    return st;
}
