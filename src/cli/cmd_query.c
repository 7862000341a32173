/* cmd_query.c — `tide query`: cone searches and image look-ups in a catalog store (SQLite or
 * PostgreSQL + Q3C, see tide/store.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cli.h"
#include "tide/refcat.h"
#include "tide/store.h"
#include "tide/store_cand.h"

static const char *help =
    "usage: tide query cone RA DEC RADIUS [--store URI] [--json | --csv] [--limit N]\n"
    "       tide query image FILE|CHECKSUM [--store URI] [--json] [--header]\n"
    "       tide query candidates [--cone RA DEC RADIUS] [--diff ID] [--store URI]\n"
    "                 [--json | --csv] [--limit N]\n"
    "       tide query object ID [--store URI] [--json | --csv]\n"
    "\n"
    "cone: every stored source within RADIUS (great circle) of RA, DEC, ordered by image id\n"
    "      then row. RA in degrees or hours as h:m:s (\"12:30:49.4\", \"12 30 49.4\"); DEC in\n"
    "      degrees or d:m:s; RADIUS in degrees, or with a unit: 2d (degrees), 3m or 3' (arcmin),\n"
    "      30s or 30\" (arcsec). Text output shows the main columns and the separation; --csv\n"
    "      and --json give every stored column plus SEP_ARCSEC.\n"
    "image: the images row of a frame, looked up by the checksum of FILE when it exists, else\n"
    "      by FILE as stored file name or as checksum.\n"
    "candidates: difference candidates written by tide diff --store, ordered by id; --cone\n"
    "      keeps those within RADIUS of RA, DEC (as for cone), --diff those of one difference.\n"
    "      --csv and --json give every stored column.\n"
    "object: one object (the candidates within the association radius of each other across\n"
    "      epochs) and its light curve: MJD, PS_FLUX, PS_FLUX_ERR, SNR of each detection.\n"
    "\n"
    "options:\n"
    "  --store URI    the catalog store [$TIDE_STORE, else tide-catalog.db in the current\n"
    "                 directory]: sqlite:PATH or PATH.db|.sqlite|.sqlite3 (SQLite, must exist),\n"
    "                 postgresql://... or pg:CONNINFO (\"pg:\" alone: the PG* environment\n"
    "                 variables and ~/.pg_service.conf); opened read-only: nothing is\n"
    "                 created or changed, a database that is not a tide store is refused\n"
    "  --csv          cone: CSV with a header row on stdout\n"
    "  --json         one JSON document on stdout\n"
    "  --limit N      cone, candidates: at most N rows, the first in the order above [all]\n"
    "  --cone RA DEC RADIUS   candidates: only those in this cone\n"
    "  --diff ID      candidates: only those of difference ID\n"
    "  --header       image: also print the stored catalog header\n"
    "  --help         this text\n"
    "\n"
    "exit status: 0 found (a cone with no source is success), 1 failure (store unreachable,\n"
    "image not found), 2 usage error\n";

/* RADIUS with an optional unit suffix -> degrees; -1 if malformed. */
static double parse_radius(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v < 0)
        return -1;
    double scale = 1;
    if (!*end || !strcmp(end, "d") || !strcasecmp(end, "deg"))
        scale = 1;
    else if (!strcmp(end, "m") || !strcmp(end, "'") || !strcasecmp(end, "arcmin"))
        scale = 1.0 / 60;
    else if (!strcmp(end, "s") || !strcmp(end, "\"") || !strcasecmp(end, "arcsec"))
        scale = 1.0 / 3600;
    else
        return -1;
    return v * scale;
}

static int parse_angle(const char *s, int hours, double *deg) {
    /* a plain number is degrees even for RA; sexagesimal RA is hours */
    char *end;
    double v = strtod(s, &end);
    if (end != s && !*end && isfinite(v)) {
        *deg = v;
        return 0;
    }
    return tide_parse_angle(s, hours, deg);
}

/* The SQLite file of a URI when it names one, else NULL. */
static const char *sqlite_path(const char *uri) {
    if (!strncmp(uri, "sqlite:", 7))
        return uri + 7;
    if (tide_store_uri_is_pg(uri))
        return NULL;
    return uri;
}

static int open_store(const char *cmd, const char *uri, tide_store **s) {
    const char *path = sqlite_path(uri);
    struct stat sb;
    if (path && stat(path, &sb) != 0) {
        char shown[1300]; /* a mistyped postgresql:// URI lands here, password and all */
        fprintf(stderr,
                "tide %s: error: no catalog store at %s (give --store or set "
                "TIDE_STORE)\n",
                cmd, tide_redact_uri(path, shown, sizeof shown));
        return 1;
    }
    /* a query changes nothing: SQLite read-only, no schema created (store.h) */
    tide_store_options opt;
    tide_store_options_init(&opt);
    opt.read_only = 1;
    int st = tide_store_open(uri, &opt, s);
    return st ? tide_cli_fail(cmd, st) : 0;
}

static void print_num(FILE *f, const tide_column *c, int64_t r, int json) {
    if (c->type == TIDE_COL_I64) {
        fprintf(f, "%lld", (long long)((int64_t *)c->data)[r]);
        return;
    }
    double v = ((double *)c->data)[r];
    if (!isfinite(v))
        fputs(json ? "null" : isnan(v) ? "nan" : v > 0 ? "inf" : "-inf", f);
    else
        fprintf(f, "%.15g", v);
}

static void print_file(FILE *f, const tide_column *c, int64_t r, int mode) {
    char buf[1100];
    int64_t w = c->repeat < 1099 ? c->repeat : 1099;
    memcpy(buf, (char *)c->data + r * c->repeat, (size_t)w);
    buf[w] = 0;
    if (mode == 1) { /* CSV: quote when needed (RFC 4180) */
        if (strpbrk(buf, ",\"\n")) {
            fputc('"', f);
            for (char *p = buf; *p; p++) {
                if (*p == '"')
                    fputc('"', f);
                fputc(*p, f);
            }
            fputc('"', f);
        } else {
            fputs(buf, f);
        }
    } else if (mode == 2) {
        tide_cli_json_string(f, buf);
    } else {
        fputs(buf, f);
    }
}

static int cmd_cone(const char *uri, int argc, char **argv, int json, int csv, int64_t limit) {
    double ra, dec, rad;
    if (argc != 3)
        return tide_cli_usage_error("query", "cone needs RA DEC RADIUS");
    if (parse_angle(argv[0], 1, &ra))
        return tide_cli_usage_error("query", "bad RA '%s'", argv[0]);
    if (parse_angle(argv[1], 0, &dec) || dec < -90 || dec > 90)
        return tide_cli_usage_error("query", "bad DEC '%s'", argv[1]);
    if ((rad = parse_radius(argv[2])) < 0)
        return tide_cli_usage_error("query", "bad RADIUS '%s' (a number with d, m, ', s or \")",
                                    argv[2]);
    ra = fmod(ra, 360.0);
    if (ra < 0)
        ra += 360.0;
    tide_store *s = NULL;
    int rc = open_store("query", uri, &s);
    if (rc)
        return rc;
    tide_table t;
    tide_table_init(&t);
    int st = tide_store_cone(s, ra, dec, rad, limit, &t);
    tide_store_close(s);
    if (st) {
        tide_table_free(&t);
        return tide_cli_fail("query", st);
    }
    const double *a = tide_table_f64(&t, "ALPHA_J2000"), *d = tide_table_f64(&t, "DELTA_J2000");
    const tide_column *fc = tide_table_column(&t, "FILE");
    double *sep = malloc(sizeof *sep * (size_t)(t.nrows ? t.nrows : 1));
    if (!sep) {
        tide_table_free(&t);
        return tide_cli_fail("query", tide_error(TIDE_E_NOMEM, "separations"));
    }
    for (int64_t r = 0; r < t.nrows; r++)
        sep[r] = 3600 * tide_store_separation(ra, dec, a[r], d[r]);
    if (json) {
        printf("{\n  \"ra\": %.10g,\n  \"dec\": %.10g,\n  \"radius_deg\": %.10g,\n"
               "  \"count\": %lld,\n  \"sources\": [",
               ra, dec, rad, (long long)t.nrows);
        for (int64_t r = 0; r < t.nrows; r++) {
            printf("%s\n    {", r ? "," : "");
            for (int c = 0; c < t.ncols; c++) {
                printf("%s\"%s\": ", c ? ", " : "", t.cols[c].name);
                if (&t.cols[c] == fc)
                    print_file(stdout, fc, r, 2);
                else
                    print_num(stdout, &t.cols[c], r, 1);
            }
            printf(", \"SEP_ARCSEC\": %.6f}", sep[r]);
        }
        printf("%s]\n}\n", t.nrows ? "\n  " : "");
    } else if (csv) {
        for (int c = 0; c < t.ncols; c++)
            printf("%s,", t.cols[c].name);
        printf("SEP_ARCSEC\n");
        for (int64_t r = 0; r < t.nrows; r++) {
            for (int c = 0; c < t.ncols; c++) {
                if (&t.cols[c] == fc)
                    print_file(stdout, fc, r, 1);
                else
                    print_num(stdout, &t.cols[c], r, 0);
                putchar(',');
            }
            printf("%.6f\n", sep[r]);
        }
    } else {
        static const char *const show[] = {"IMAGE_ID", "NUMBER",      "ALPHA_J2000", "DELTA_J2000",
                                           "MAG_AUTO", "MAGERR_AUTO", "FLAGS"};
        const tide_column *cols[7];
        printf("%lld source%s within %.6g deg of (%.7f, %+.7f)\n", (long long)t.nrows,
               t.nrows == 1 ? "" : "s", rad, ra, dec);
        for (int k = 0; k < 7; k++) {
            cols[k] = tide_table_column(&t, show[k]);
            if (cols[k])
                printf("%-14s", show[k]);
        }
        printf("%-12s FILE\n", "SEP_ARCSEC");
        for (int64_t r = 0; r < t.nrows; r++) {
            for (int k = 0; k < 7; k++) {
                if (!cols[k])
                    continue;
                char b[64];
                if (cols[k]->type == TIDE_COL_I64)
                    snprintf(b, sizeof b, "%lld", (long long)((int64_t *)cols[k]->data)[r]);
                else
                    snprintf(b, sizeof b, k == 2 || k == 3 ? "%.7f" : "%.4f",
                             ((double *)cols[k]->data)[r]);
                printf("%-14s", b);
            }
            printf("%-12.3f ", sep[r]);
            print_file(stdout, fc, r, 0);
            putchar('\n');
        }
    }
    free(sep);
    tide_table_free(&t);
    return 0;
}

static int cmd_image(const char *uri, int argc, char **argv, int json, int header) {
    if (argc != 1)
        return tide_cli_usage_error("query", "image needs one FILE or CHECKSUM");
    tide_store *s = NULL;
    int rc = open_store("query", uri, &s);
    if (rc)
        return rc;
    tide_store_frame f;
    int st = tide_store_image(s, argv[0], &f);
    tide_store_close(s);
    if (st)
        return tide_cli_fail("query", st);
    const char *txt[32];
    double num[32];
    /* the same fields, in the store's column order */
    static const char *const names[] = {
        "file",      "checksum",  "processed",  "tide_version", "date_obs",
        "mjd",       "exptime",   "filter",     "airmass",      "naxis1",
        "naxis2",    "ra_center", "dec_center", "scale_arcsec", "rotation_deg",
        "fov_w_deg", "fov_h_deg", "zp",         "ezp",          "zp_nstar",
        "maglim5",   "maglim3",   "nsources",   "fwhm",         "sky"};
    const int n = (int)(sizeof names / sizeof names[0]);
    const char *t[] = {f.file, f.checksum, f.processed, f.tide_version, f.date_obs};
    double v[] = {f.mjd,
                  f.exptime,
                  NAN,
                  f.airmass,
                  (double)f.naxis1,
                  (double)f.naxis2,
                  f.ra_center,
                  f.dec_center,
                  f.scale_arcsec,
                  f.rotation_deg,
                  f.fov_w_deg,
                  f.fov_h_deg,
                  f.zp,
                  f.ezp,
                  (double)f.zp_nstar,
                  f.maglim5,
                  f.maglim3,
                  (double)f.nsources,
                  f.fwhm,
                  f.sky};
    for (int i = 0; i < n; i++) {
        txt[i] = i < 5 ? t[i] : i == 7 ? f.filter : NULL;
        num[i] = i < 5 || i == 7 ? NAN : v[i - 5];
        if ((i == 9 || i == 10 || i == 19 || i == 22) && num[i] < 0)
            num[i] = NAN; /* unknown counts */
    }
    if (json) {
        printf("{\n  \"id\": %lld", (long long)f.id);
        for (int i = 0; i < n; i++) {
            printf(",\n  \"%s\": ", names[i]);
            if (txt[i])
                tide_cli_json_string(stdout, txt[i]);
            else if (isfinite(num[i]))
                printf("%.15g", num[i]);
            else
                printf("null");
        }
        if (header) {
            printf(",\n  \"header\": ");
            tide_cli_json_string(stdout, f.header ? f.header : "");
        }
        printf("\n}\n");
    } else {
        printf("%-14s %lld\n", "id", (long long)f.id);
        for (int i = 0; i < n; i++) {
            if (txt[i])
                printf("%-14s %s\n", names[i], txt[i]);
            else if (isfinite(num[i]))
                printf("%-14s %.10g\n", names[i], num[i]);
            else
                printf("%-14s -\n", names[i]);
        }
        size_t len = f.header ? strlen(f.header) : 0;
        printf("%-14s %zu cards%s\n", "header", len / 80, header ? ":" : "");
        for (size_t k = 0; header && k < len; k += 80)
            printf("%.80s\n", f.header + k);
    }
    tide_store_frame_free(&f);
    return 0;
}

/* Every column of @p t (I64 or F64) as CSV or JSON rows (the array's body), or for text the
 * columns named in @p show that exist. */
static void print_rows(const tide_table *t, int json, int csv, const char *const *show, int nshow,
                       int64_t limit) {
    const int64_t n = limit > 0 && limit < t->nrows ? limit : t->nrows;
    if (json) {
        for (int64_t r = 0; r < n; r++) {
            printf("%s\n    {", r ? "," : "");
            for (int c = 0; c < t->ncols; c++) {
                printf("%s\"%s\": ", c ? ", " : "", t->cols[c].name);
                print_num(stdout, &t->cols[c], r, 1);
            }
            printf("}");
        }
        printf("%s", n ? "\n  " : "");
        return;
    }
    if (csv) {
        for (int c = 0; c < t->ncols; c++)
            printf("%s%s", c ? "," : "", t->cols[c].name);
        printf("\n");
        for (int64_t r = 0; r < n; r++) {
            for (int c = 0; c < t->ncols; c++) {
                if (c)
                    putchar(',');
                print_num(stdout, &t->cols[c], r, 0);
            }
            putchar('\n');
        }
        return;
    }
    const tide_column *cols[16];
    for (int k = 0; k < nshow && k < 16; k++) {
        cols[k] = tide_table_column(t, show[k]);
        if (cols[k])
            printf("%-14s", show[k]);
    }
    printf("\n");
    for (int64_t r = 0; r < n; r++) {
        for (int k = 0; k < nshow && k < 16; k++) {
            if (!cols[k])
                continue;
            char b[64];
            if (cols[k]->type == TIDE_COL_I64)
                snprintf(b, sizeof b, "%lld", (long long)((int64_t *)cols[k]->data)[r]);
            else
                snprintf(b, sizeof b, strstr(show[k], "_J2000") ? "%.7f" : "%.6g",
                         ((double *)cols[k]->data)[r]);
            printf("%-14s", b);
        }
        putchar('\n');
    }
}

static int parse_id(const char *v, int64_t *id) {
    char *end;
    long long n = strtoll(v, &end, 10);
    if (end == v || *end || n < 0)
        return -1;
    *id = n;
    return 0;
}

static int cmd_candidates(const char *uri, int argc, const tide_store_cand_query *q, int json,
                          int csv, int64_t limit) {
    if (argc != 0)
        return tide_cli_usage_error("query", "candidates takes options only (--cone, --diff)");
    tide_store *s = NULL;
    int rc = open_store("query", uri, &s);
    if (rc)
        return rc;
    tide_table t;
    tide_table_init(&t);
    int st = tide_store_candidates(s, q, &t);
    tide_store_close(s);
    if (st) {
        tide_table_free(&t);
        return tide_cli_fail("query", st);
    }
    const int64_t n = limit > 0 && limit < t.nrows ? limit : t.nrows;
    static const char *const show[] = {"CAND_ID",     "DIFF_ID", "OBJECT_ID", "MJD", "ALPHA_J2000",
                                       "DELTA_J2000", "SNR",     "FLUX",      "KIND"};
    if (json)
        printf("{\n  \"count\": %lld,\n  \"candidates\": [", (long long)n);
    else if (!csv)
        printf("%lld candidate%s\n", (long long)n, n == 1 ? "" : "s");
    print_rows(&t, json, csv, show, 9, limit);
    if (json)
        printf("]\n}\n");
    tide_table_free(&t);
    return 0;
}

static int cmd_object(const char *uri, int argc, char **argv, int json, int csv) {
    int64_t id;
    if (argc != 1 || parse_id(argv[0], &id))
        return tide_cli_usage_error("query", "object needs one object ID");
    tide_store *s = NULL;
    int rc = open_store("query", uri, &s);
    if (rc)
        return rc;
    tide_store_object o;
    int st = tide_store_get_object(s, id, &o);
    tide_table t;
    tide_table_init(&t);
    tide_store_cand_query q;
    tide_store_cand_query_init(&q);
    q.object_id = id;
    if (!st)
        st = tide_store_candidates(s, &q, &t);
    tide_store_close(s);
    if (st) {
        tide_table_free(&t);
        return tide_cli_fail("query", st);
    }
    /* the light curve: one row per detection, in time order (ids grow with insertion) */
    static const char *const lc[] = {"MJD", "PS_FLUX", "PS_FLUX_ERR", "SNR", "DIFF_ID", "CAND_ID"};
    tide_table c;
    tide_table_init(&c);
    st = 0;
    for (int k = 0; k < 6 && !st; k++) {
        const tide_column *src = tide_table_column(&t, lc[k]);
        int idx;
        st = tide_table_add_column(&c, lc[k],
                                   src && src->type == TIDE_COL_I64 ? TIDE_COL_I64 : TIDE_COL_F64,
                                   1, NULL, NULL, &idx);
    }
    if (!st)
        st = tide_table_resize(&c, t.nrows);
    for (int k = 0; k < 6 && !st; k++) {
        const tide_column *src = tide_table_column(&t, lc[k]);
        for (int64_t r = 0; r < t.nrows; r++)
            if (c.cols[k].type == TIDE_COL_I64)
                ((int64_t *)c.cols[k].data)[r] = src ? ((int64_t *)src->data)[r] : -1;
            else
                ((double *)c.cols[k].data)[r] = src ? ((double *)src->data)[r] : NAN;
    }
    /* sort by MJD (a stable insertion sort: light curves are short) */
    for (int64_t i = 1; !st && i < c.nrows; i++)
        for (int64_t j = i;
             j > 0 && ((double *)c.cols[0].data)[j] < ((double *)c.cols[0].data)[j - 1]; j--)
            for (int k = 0; k < 6; k++) {
                if (c.cols[k].type == TIDE_COL_I64) {
                    int64_t *a = c.cols[k].data, tmp = a[j];
                    a[j] = a[j - 1], a[j - 1] = tmp;
                } else {
                    double *a = c.cols[k].data, tmp = a[j];
                    a[j] = a[j - 1], a[j - 1] = tmp;
                }
            }
    tide_table_free(&t);
    if (st) {
        tide_table_free(&c);
        return tide_cli_fail("query", st);
    }
    if (json) {
        printf("{\n  \"id\": %lld,\n  \"ra\": %.10f,\n  \"dec\": %.10f,\n  \"ndet\": %lld,\n"
               "  \"first_mjd\": %.8f,\n  \"last_mjd\": %.8f,\n  \"detections\": [",
               (long long)o.id, o.ra, o.dec, (long long)o.ndet, o.first_mjd, o.last_mjd);
        print_rows(&c, 1, 0, lc, 6, 0);
        printf("]\n}\n");
    } else if (csv) {
        print_rows(&c, 0, 1, lc, 6, 0);
    } else {
        printf("object %lld at (%.7f, %+.7f): %lld detection%s, MJD %.5f .. %.5f\n",
               (long long)o.id, o.ra, o.dec, (long long)o.ndet, o.ndet == 1 ? "" : "s", o.first_mjd,
               o.last_mjd);
        print_rows(&c, 0, 0, lc, 6, 0);
    }
    tide_table_free(&c);
    return 0;
}

int tide_cmd_query(int argc, char **argv) {
    const char *uri = getenv("TIDE_STORE");
    if (!uri || !*uri)
        uri = "tide-catalog.db";
    int json = 0, csv = 0, header = 0;
    int64_t limit = 0;
    tide_store_cand_query cq;
    tide_store_cand_query_init(&cq);
    char *pos[8];
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--csv")) {
            csv = 1;
        } else if (!strcmp(a, "--header")) {
            header = 1;
        } else if (!strcmp(a, "--cone")) {
            if (i + 3 >= argc)
                return tide_cli_usage_error("query", "--cone needs RA DEC RADIUS");
            if (parse_angle(argv[i + 1], 1, &cq.ra))
                return tide_cli_usage_error("query", "bad RA '%s'", argv[i + 1]);
            if (parse_angle(argv[i + 2], 0, &cq.dec) || cq.dec < -90 || cq.dec > 90)
                return tide_cli_usage_error("query", "bad DEC '%s'", argv[i + 2]);
            if ((cq.radius_deg = parse_radius(argv[i + 3])) < 0)
                return tide_cli_usage_error("query", "bad RADIUS '%s'", argv[i + 3]);
            cq.ra = fmod(fmod(cq.ra, 360.0) + 360.0, 360.0);
            i += 3;
        } else if (!strcmp(a, "--diff")) {
            if (i + 1 >= argc || parse_id(argv[i + 1], &cq.diff_id))
                return tide_cli_usage_error("query", "--diff needs a difference ID");
            i++;
        } else if (!strcmp(a, "--store") || !strcmp(a, "--limit")) {
            if (i + 1 >= argc)
                return tide_cli_usage_error("query", "option %s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--store")) {
                uri = v;
            } else {
                char *end;
                long long n = strtoll(v, &end, 10);
                if (end == v || *end || n < 1)
                    return tide_cli_usage_error("query", "bad value '%s' for --limit", v);
                limit = n;
            }
        } else if (a[0] == '-' && a[1] == '-') {
            return tide_cli_usage_error("query", "unknown option %s", a);
        } else if (npos < 8) {
            pos[npos++] = argv[i]; /* RA/DEC may start with '-': only "--x" is an option */
        } else {
            return tide_cli_usage_error("query", "too many arguments");
        }
    }
    if (json && csv)
        return tide_cli_usage_error("query", "--json and --csv exclude each other");
    if (npos == 0)
        return tide_cli_usage_error("query", "say cone, image, candidates or object");
    if (!strcmp(pos[0], "cone"))
        return cmd_cone(uri, npos - 1, pos + 1, json, csv, limit);
    if (!strcmp(pos[0], "image"))
        return cmd_image(uri, npos - 1, pos + 1, json, header);
    if (!strcmp(pos[0], "candidates"))
        return cmd_candidates(uri, npos - 1, &cq, json, csv, limit);
    if (!strcmp(pos[0], "object"))
        return cmd_object(uri, npos - 1, pos + 1, json, csv);
    return tide_cli_usage_error("query", "unknown query '%s' (cone, image, candidates or object)",
                                pos[0]);
}
