/* cmd_solve.c — `tide solve FILE`: plate-solve a source list with astrometry.net's index
 * files (solve.h), write the WCS as a FITS header file and/or print it as JSON.
 *
 * Exit codes: 0 solved, 1 not solved or an error (the message names the file and what was
 * tried), 2 usage. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "tide/fits.h"
#include "tide/outfile.h"
#include "tide/solve.h"

static const char *help =
    "usage: tide solve FILE [options]\n"
    "\n"
    "Plate-solve a source list with astrometry.net (in process). FILE is a FITS table of\n"
    "sources: X_IMAGE, Y_IMAGE (FITS 1-based, as Source Extractor and tide reduce write) with a\n"
    "FLUX_AUTO / FLUX_BEST / FLUX_ISO / FLUX column, or an astrometry.net xylist (X, Y 1-based,\n"
    "FLUX). The brightest sources are used. A hinted attempt (position and/or scale) runs\n"
    "first, then a blind one unless --no-blind.\n"
    "\n"
    "options:\n"
    "  --width W, --height H    frame size in pixels [IMAGEW / IMAGEH of the table header]\n"
    "  --index-dir DIR          astrometry.net index files [$TIDE_INDEX_DIR, else\n"
    "                           /usr/share/astrometry]\n"
    "  --ra DEG --dec DEG       pointing hint (degrees, or sexagesimal h:m:s / d:m:s)\n"
    "  --radius DEG             search radius around the hint [2 x the field diagonal]\n"
    "  --scale-lo A --scale-hi B  pixel-scale range, arcsec/pixel\n"
    "  --timeout S              wall-clock limit per attempt, seconds [$TIDE_SOLVE_TIMEOUT,\n"
    "                           else 60]\n"
    "  --no-blind               do not fall back to a blind solve\n"
    "  --nbright N              use the N brightest sources [500]\n"
    "  --uniformize N           spread them over about N cells of the field first, as\n"
    "                           solve-field does (its default: 10); 0 = plain brightness\n"
    "                           order [0]\n"
    "  --tweak-order N          1 = TAN, 2..9 = TAN-SIP of that order, 0 = none (the\n"
    "                           matched quad's TAN) [2]\n"
    "  --crpix-center           put the reference pixel at the frame centre\n"
    "  -o OUT.wcs               write the WCS as a FITS header file (atomically)\n"
    "\n"
    "exit status: 0 solved, 1 not solved or error, 2 usage error\n";

/* A numeric column as doubles (F32 or F64), or NULL. */
static double *col_f64(const tide_table *t, const char *name) {
    tide_column *c = tide_table_column(t, name);
    if (!c || c->repeat != 1 || (c->type != TIDE_COL_F64 && c->type != TIDE_COL_F32))
        return NULL;
    double *v = malloc((size_t)(t->nrows > 0 ? t->nrows : 1) * sizeof *v);
    if (!v)
        return NULL;
    for (int64_t i = 0; i < t->nrows; i++)
        v[i] = c->type == TIDE_COL_F64 ? ((double *)c->data)[i] : ((float *)c->data)[i];
    return v;
}

/* The header of a WCS as a FITS file with an empty primary HDU, written to a temporary name
 * and renamed over @p path (DESIGN §6). */
static int write_wcs_file(const char *path, const tide_wcs *w, int64_t width, int64_t height) {
    tide_header h;
    tide_header_init(&h);
    int st = tide_header_set_bool(&h, "SIMPLE", 1, "file conforms to FITS standard");
    st = st ? st : tide_header_set_int(&h, "BITPIX", 8, NULL);
    st = st ? st : tide_header_set_int(&h, "NAXIS", 0, "no data: a WCS header");
    st = st ? st : tide_header_set_bool(&h, "EXTEND", 1, NULL);
    st = st ? st : tide_wcs_to_header(w, &h);
    st = st ? st : tide_header_set_int(&h, "IMAGEW", width, "image width, pixels");
    st = st ? st : tide_header_set_int(&h, "IMAGEH", height, "image height, pixels");
    if (st) {
        tide_header_free(&h);
        return st;
    }
    tide_outfile of;
    FILE *f = NULL;
    st = tide_outfile_begin(&of, path);
    if (!st)
        st = tide_outfile_fopen(&of, &f);
    if (st) {
        tide_outfile_abort(&of);
        tide_header_free(&h);
        return st;
    }
    int ok = 1;
    for (int i = 0; i < h.ncards; i++)
        ok &= fwrite(h.cards[i], 1, 80, f) == 80;
    char end[81];
    snprintf(end, sizeof end, "%-80s", "END");
    ok &= fwrite(end, 1, 80, f) == 80;
    long used = (long)(h.ncards + 1) * 80;
    for (long pad = (2880 - used % 2880) % 2880; pad > 0; pad--)
        ok &= fputc(' ', f) != EOF;
    ok &= fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok &= fclose(f) == 0;
    tide_header_free(&h);
    if (!ok) {
        st = tide_error(TIDE_E_IO, "%s: cannot write: %s", path, strerror(errno));
        tide_outfile_abort(&of);
        return st;
    }
    of.synced = 1;
    return tide_outfile_commit(&of);
}

static void print_json(const char *file, const tide_wcs *w, const tide_solve_info *in) {
    tide_wcs_tansip t;
    memset(&t, 0, sizeof t);
    int have = tide_wcs_tansip_from_wcs(w, &t) == 0;
    printf("{\n  \"file\": ");
    tide_cli_json_string(stdout, file);
    printf(",\n  \"solved\": true,\n  \"blind\": %s,\n", in->blind ? "true" : "false");
    if (have) {
        printf("  \"crval\": [%.12f, %.12f],\n", t.crval[0], t.crval[1]);
        printf("  \"crpix\": [%.6f, %.6f],\n", t.crpix[0], t.crpix[1]);
        printf("  \"cd\": [[%.12e, %.12e], [%.12e, %.12e]],\n", t.cd[0][0], t.cd[0][1], t.cd[1][0],
               t.cd[1][1]);
        printf("  \"sip_order\": %d,\n", t.order[0]);
    }
    printf("  \"ra_center\": %.8f,\n  \"dec_center\": %.8f,\n", in->ra_center, in->dec_center);
    printf("  \"scale_arcsec\": %.6f,\n  \"rotation_deg\": %.4f,\n", in->scale_arcsec,
           in->rotation_deg);
    printf("  \"parity\": %d,\n  \"index\": ", in->parity);
    tide_cli_json_string(stdout, in->index_name);
    printf(",\n  \"nmatch\": %d,\n  \"nconflict\": %d,\n  \"nfield\": %d,\n  \"logodds\": %.3f,\n",
           in->nmatch, in->nconflict, in->nfield, in->logodds);
    printf("  \"nused\": %lld,\n  \"ms_hinted\": %.3f,\n  \"ms_blind\": %.3f,\n  \"ms_total\": "
           "%.3f\n}\n",
           (long long)in->nused, in->ms_hinted, in->ms_blind, in->ms_total);
}

typedef struct solve_opts {
    const char *file, *index_dir, *out, *ra_s, *dec_s;
    double width, height, radius, scale_lo, scale_hi, timeout, nbright, tweak, uniformize;
    int no_blind, crpix_center;
} solve_opts;

/* Read the source list: 0-based x, y and flux (NULL when no flux column). */
static int read_sources(const solve_opts *o, double **x, double **y, double **fl, int64_t *n,
                        int64_t *w, int64_t *h) {
    tide_table t;
    tide_header hd;
    tide_header_init(&hd);
    int st = tide_fits_read_table(o->file, &t, &hd);
    if (st)
        return st;
    static const char *xs[] = {"X_IMAGE", "X", "X_TRUE"}, *ys[] = {"Y_IMAGE", "Y", "Y_TRUE"};
    static const char *fs[] = {"FLUX_AUTO", "FLUX_BEST", "FLUX_ISO", "FLUX_PSF", "FLUX"};
    *x = *y = *fl = NULL;
    for (int k = 0; k < 3 && !*x; k++) {
        *x = col_f64(&t, xs[k]);
        *y = *x ? col_f64(&t, ys[k]) : NULL;
        if (!*y) {
            free(*x);
            *x = NULL;
        }
    }
    for (int k = 0; k < 5 && !*fl; k++)
        *fl = col_f64(&t, fs[k]);
    *n = t.nrows;
    if (!*x)
        st = tide_error(TIDE_E_NOTFOUND, "%s: no X_IMAGE/Y_IMAGE or X/Y columns", o->file);
    else
        for (int64_t i = 0; i < t.nrows; i++) { /* FITS 1-based -> tide 0-based */
            (*x)[i] -= 1.0;
            (*y)[i] -= 1.0;
        }
    int64_t v;
    *w = o->width > 0 ? (int64_t)o->width : tide_header_get_int(&hd, "IMAGEW", &v) == 0 ? v : 0;
    *h = o->height > 0 ? (int64_t)o->height : tide_header_get_int(&hd, "IMAGEH", &v) == 0 ? v : 0;
    tide_error_clear();
    if (!st && (*w <= 0 || *h <= 0))
        st = tide_error(TIDE_E_INVAL,
                        "%s: the frame size is unknown (no IMAGEW/IMAGEH keywords): "
                        "give --width and --height",
                        o->file);
    tide_table_free(&t);
    tide_header_free(&hd);
    if (st) {
        free(*x);
        free(*y);
        free(*fl);
        *x = *y = *fl = NULL;
    }
    return st;
}

int tide_cmd_solve(int argc, char **argv) {
    const char *cmd = "solve";
    tide_cli_common com;
    tide_cli_common_init(&com);
    solve_opts o;
    memset(&o, 0, sizeof o);
    o.timeout = 60;
    const char *env_timeout = getenv("TIDE_SOLVE_TIMEOUT");
    double envt;
    if (env_timeout && *env_timeout) {
        if (tide_cli_parse_number(env_timeout, &envt) || !(envt > 0))
            return tide_cli_usage_error(cmd, "bad TIDE_SOLVE_TIMEOUT '%s' in the environment",
                                        env_timeout);
        o.timeout = envt;
    }
    o.nbright = 500;
    o.tweak = 2;
    o.uniformize = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s\n%s", help, tide_cli_common_help);
            return 0;
        }
        const int c = tide_cli_common_option(&com, cmd, argc, argv, &i);
        if (c < 0)
            return 2;
        if (c > 0)
            continue;
        if (!strcmp(a, "--no-blind")) {
            o.no_blind = 1;
            continue;
        }
        if (!strcmp(a, "--crpix-center")) {
            o.crpix_center = 1;
            continue;
        }
        const tide_cli_valopt vals[] = {{"--width", &o.width, NULL},
                                        {"--height", &o.height, NULL},
                                        {"--radius", &o.radius, NULL},
                                        {"--scale-lo", &o.scale_lo, NULL},
                                        {"--scale-hi", &o.scale_hi, NULL},
                                        {"--timeout", &o.timeout, NULL},
                                        {"--nbright", &o.nbright, NULL},
                                        {"--uniformize", &o.uniformize, NULL},
                                        {"--tweak-order", &o.tweak, NULL},
                                        {"--index-dir", NULL, &o.index_dir},
                                        {"-o", NULL, &o.out},
                                        {"--ra", NULL, &o.ra_s},
                                        {"--dec", NULL, &o.dec_s}};
        const int v =
            tide_cli_value_option(cmd, vals, (int)(sizeof vals / sizeof vals[0]), argc, argv, &i);
        if (v < 0)
            return 2;
        if (v > 0)
            continue;
        if (a[0] == '-' && a[1])
            return tide_cli_usage_error(cmd, "unknown option %s", a);
        if (o.file)
            return tide_cli_usage_error(cmd, "more than one input file");
        o.file = a;
    }
    if (!o.file)
        return tide_cli_usage_error(cmd, "no source list given");
    if (tide_cli_check_outputs(cmd, &o.file, 1, &o.out, 1))
        return 1;
    if (!!o.ra_s != !!o.dec_s)
        return tide_cli_usage_error(cmd, "--ra and --dec go together");
    if (o.scale_hi > 0 && o.scale_lo > o.scale_hi)
        return tide_cli_usage_error(cmd, "--scale-lo %g is above --scale-hi %g", o.scale_lo,
                                    o.scale_hi);
    if (!(o.timeout > 0))
        return tide_cli_usage_error(cmd, "--timeout must be > 0");
    if (o.nbright < 4 || o.nbright != floor(o.nbright))
        return tide_cli_usage_error(cmd, "--nbright must be an integer >= 4");
    if (o.uniformize < 0 || o.uniformize > 10000 || o.uniformize != floor(o.uniformize))
        return tide_cli_usage_error(cmd, "--uniformize must be an integer 0..10000");
    if (o.tweak < 0 || o.tweak > 9 || o.tweak != floor(o.tweak))
        return tide_cli_usage_error(cmd, "--tweak-order must be 0..9");

    tide_solve_params p;
    tide_solve_params_init(&p);
    if (o.ra_s) {
        if (tide_parse_angle(o.ra_s, 1, &p.ra) || tide_parse_angle(o.dec_s, 0, &p.dec) ||
            !(p.dec >= -90 && p.dec <= 90))
            return tide_cli_usage_error(cmd, "bad --ra/--dec '%s' '%s'", o.ra_s, o.dec_s);
        p.has_position = 1;
        p.radius_deg = o.radius;
    }
    p.scale_lo = o.scale_lo;
    p.scale_hi = o.scale_hi > 0 ? o.scale_hi : 0;
    if (p.scale_hi == 0)
        p.scale_lo = 0;
    p.timeout_s = o.timeout;
    p.blind_fallback = !o.no_blind;
    p.nbright = (int64_t)o.nbright;
    p.uniformize = (int)o.uniformize;
    p.tweak_order = (int)o.tweak;
    p.crpix_center = o.crpix_center;

    double *x = NULL, *y = NULL, *fl = NULL;
    int64_t n = 0, w = 0, h = 0;
    int st = read_sources(&o, &x, &y, &fl, &n, &w, &h);
    if (st)
        return tide_cli_fail(cmd, st);
    p.width = w;
    p.height = h;
    char dir[4096];
    st = tide_solve_index_dir(o.index_dir, NULL, dir, sizeof dir);
    tide_solver *s = NULL;
    if (!st)
        st = tide_solver_open(dir, &s);
    tide_wcs *wcs = NULL;
    tide_solve_info info;
    memset(&info, 0, sizeof info);
    if (!st)
        st = tide_solve(s, x, y, fl, n, &p, &wcs, &info);
    free(x);
    free(y);
    free(fl);
    tide_solver_free(s);
    if (st) {
        tide_error_prefix(st, "%s: ", o.file);
        return tide_cli_fail(cmd, st);
    }
    if (o.out && (st = write_wcs_file(o.out, wcs, w, h)) != 0) {
        tide_wcs_free(wcs);
        return tide_cli_fail(cmd, st);
    }
    if (com.json)
        print_json(o.file, wcs, &info);
    else
        printf("%s: solved (%s) with %s: centre RA %.6f Dec %.6f, %.4f arcsec/px, rotation "
               "%.2f deg, %d matches, %.0f ms\n",
               o.file, info.blind ? "blind" : "hinted", info.index_name, info.ra_center,
               info.dec_center, info.scale_arcsec, info.rotation_deg, info.nmatch, info.ms_total);
    tide_wcs_free(wcs);
    return 0;
}
