/* cmd_index.c — `tide index build`: astrometry.net index files from a local reference
 * catalogue (FITS table or CSV with RA, DEC, MAG), so that narrow or simulated fields solve
 * offline (solve.h, tide_index_build).
 *
 * Exit codes: 0 built, 1 failed, 2 usage. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tide/fits.h"
#include "tide/solve.h"

static const char *help =
    "usage: tide index build CATALOG -o DIR [options]\n"
    "\n"
    "Build astrometry.net index files from a reference catalogue: a FITS table or a CSV file\n"
    "(first line: column names) with RA and DEC in degrees and a magnitude. One file per\n"
    "astrometry.net scale number k (quads of 2'..2000' in 20 steps, build-astrometry-index\n"
    "-P k), named DIR/PREFIX-kk.fits; `tide solve --index-dir DIR` then uses them.\n"
    "\n"
    "options:\n"
    "  -o, --out-dir DIR        output directory (created if missing) [required]\n"
    "  --fov-arcmin F           the field (smaller side) the indexes serve: scales with quads\n"
    "                           of 0.1 F .. F\n"
    "  --scale-lo K --scale-hi K  scale numbers to build instead (0..19)\n"
    "  --ra-col, --dec-col, --mag-col NAME  column names [RA, DEC, MAG]\n"
    "  --stars-per-cell N       brightest stars kept per HEALPix cell [10]\n"
    "  --passes N               quads per cell [16]\n"
    "  --jitter ARCSEC          catalogue positional error [1]\n"
    "  --prefix P               file name prefix [index-tide]\n"
    "  --index-id N             INDEXID of scale k is N + k [6000]\n";

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Read the numeric columns @p names (3) of a CSV file into F64 columns of @p t. */
static int read_csv(const char *path, const char *const names[3], tide_table *t) {
    FILE *f = fopen(path, "r");
    if (!f)
        return tide_error(TIDE_E_NOTFOUND, "%s: cannot open: %s", path, strerror(errno));
    char line[8192];
    int col[3] = {-1, -1, -1}, st = 0;
    if (!fgets(line, sizeof line, f)) {
        fclose(f);
        return tide_error(TIDE_E_EMPTY, "%s: empty file", path);
    }
    int k = 0;
    for (char *tok = strtok(line, ",\r\n"); tok; tok = strtok(NULL, ",\r\n"), k++) {
        while (*tok == ' ' || *tok == '"')
            tok++;
        size_t L = strlen(tok);
        while (L && (tok[L - 1] == ' ' || tok[L - 1] == '"'))
            tok[--L] = 0;
        for (int j = 0; j < 3; j++)
            if (col[j] < 0 && strcmp(tok, names[j]) == 0)
                col[j] = k;
    }
    for (int j = 0; j < 3; j++)
        if (col[j] < 0) {
            fclose(f);
            return tide_error(TIDE_E_NOTFOUND, "%s: no column '%s' in the first line", path,
                              names[j]);
        }
    for (int j = 0; j < 3 && !st; j++)
        st = tide_table_add_column(t, names[j], TIDE_COL_F64, 1, NULL, NULL, NULL);
    int64_t row = 0;
    long lineno = 1;
    while (!st && fgets(line, sizeof line, f)) {
        lineno++;
        if (strspn(line, " \r\n") == strlen(line))
            continue;
        double v[3] = {NAN, NAN, NAN};
        char *p = line;
        for (int c = 0; p; c++) {
            char *next = strchr(p, ',');
            if (next)
                *next++ = 0;
            for (int j = 0; j < 3; j++)
                if (c == col[j]) {
                    char *end;
                    v[j] = strtod(p, &end);
                    if (end == p)
                        v[j] = NAN;
                }
            p = next;
        }
        if ((st = tide_table_resize(t, row + 1)))
            break;
        for (int j = 0; j < 3; j++)
            tide_table_f64(t, names[j])[row] = v[j];
        row++;
    }
    fclose(f);
    (void)lineno;
    return st;
}

int tide_cmd_index(int argc, char **argv) {
    const char *cmd = "index";
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        printf("%s", help);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "build"))
        return tide_cli_usage_error(cmd, "unknown action '%s' (expected: build)", argv[1]);
    tide_index_build_params p;
    tide_index_build_params_init(&p);
    const char *in = NULL, *out = NULL;
    double fov = 0, slo = -1, shi = -1, spc = 10, passes = 16, jitter = 1, id = 6000;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s", help);
            return 0;
        }
        const tide_cli_valopt vals[] = {{"-o", NULL, &out},
                                        {"--out-dir", NULL, &out},
                                        {"--fov-arcmin", &fov, NULL},
                                        {"--scale-lo", &slo, NULL},
                                        {"--scale-hi", &shi, NULL},
                                        {"--ra-col", NULL, &p.ra_col},
                                        {"--dec-col", NULL, &p.dec_col},
                                        {"--mag-col", NULL, &p.mag_col},
                                        {"--stars-per-cell", &spc, NULL},
                                        {"--passes", &passes, NULL},
                                        {"--jitter", &jitter, NULL},
                                        {"--prefix", NULL, &p.prefix},
                                        {"--index-id", &id, NULL}};
        const int v =
            tide_cli_value_option(cmd, vals, (int)(sizeof vals / sizeof vals[0]), argc, argv, &i);
        if (v < 0)
            return 2;
        if (v > 0)
            continue;
        if (a[0] == '-' && a[1])
            return tide_cli_usage_error(cmd, "unknown option %s", a);
        if (in)
            return tide_cli_usage_error(cmd, "more than one catalogue");
        in = a;
    }
    if (!in)
        return tide_cli_usage_error(cmd, "no reference catalogue given");
    if (!out)
        return tide_cli_usage_error(cmd, "no output directory (-o DIR)");
    if ((slo >= 0) != (shi >= 0))
        return tide_cli_usage_error(cmd, "--scale-lo and --scale-hi go together");
    if (slo >= 0) {
        if (slo != floor(slo) || shi != floor(shi) || slo > shi || shi > 19)
            return tide_cli_usage_error(cmd, "scale numbers must be integers 0 <= lo <= hi <= 19");
        p.scale_lo = (int)slo;
        p.scale_hi = (int)shi;
    } else if (!(fov > 0)) {
        return tide_cli_usage_error(cmd, "give --fov-arcmin or --scale-lo/--scale-hi");
    }
    p.fov_arcmin = fov;
    if (spc < 1 || passes < 1 || !(jitter > 0))
        return tide_cli_usage_error(cmd, "--stars-per-cell, --passes, --jitter must be positive");
    p.stars_per_cell = (int)spc;
    p.passes = (int)passes;
    p.jitter_arcsec = jitter;
    p.index_id_base = (int)id;
    { /* the index files against the catalogue (the scales as tide_index_build picks them) */
        int lo = p.scale_lo, hi = p.scale_hi;
        if (lo < 0 && tide_index_scales_for_fov(p.fov_arcmin, &lo, &hi))
            lo = 0, hi = -1; /* tide_index_build reports the bad field */
        for (int k = lo; k <= hi; k++) {
            char name[4200];
            snprintf(name, sizeof name, "%s/%s-%02d.fits", out,
                     p.prefix && *p.prefix ? p.prefix : "index-tide", k);
            const char *o = name;
            if (tide_cli_check_outputs(cmd, &in, 1, &o, 1))
                return 1;
        }
    }

    tide_table t;
    tide_table_init(&t);
    int st;
    if (ends_with(in, ".csv") || ends_with(in, ".CSV")) {
        const char *names[3] = {p.ra_col, p.dec_col, p.mag_col};
        st = read_csv(in, names, &t);
    } else {
        st = tide_fits_read_table(in, &t, NULL);
    }
    if (st) {
        tide_table_free(&t);
        tide_error_prefix(st, "%s: ", in);
        return tide_cli_fail(cmd, st);
    }
    char paths[64][4096];
    int nbuilt = 0;
    st = tide_index_build(&t, out, &p, paths, 64, &nbuilt);
    tide_table_free(&t);
    for (int i = 0; i < nbuilt && i < 64; i++)
        printf("%s\n", paths[i]);
    if (st) {
        tide_error_prefix(st, "%s: ", in);
        return tide_cli_fail(cmd, st);
    }
    return 0;
}
