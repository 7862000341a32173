/* bench_store.c — `tide bench --store`: time tide_store_put_frame of one frame's catalog
 * (130,000 rows by default, the columns and types of tide's calibrated catalog: ~60 numeric
 * values per row) on SQLite and on every PostgreSQL store given, beside the target
 * (200 ms per frame). Each figure is the median of --repeats inserts of new frames after one
 * untimed insert (which also adds the columns); one replacement of a stored frame (same
 * checksum: delete + insert) is timed too. The frames are deleted afterwards. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tide/outfile.h"
#include "bench_util.h"
#include "cli/cli.h"
#include "tide/store.h"

static const char *help =
    "usage: tide bench --store [--rows N] [--repeats N] [--store-uri URI ...] [--dir DIR]\n"
    "                  [--no-sqlite] [--json FILE]\n\n"
    "Time catalog-store inserts: one frame of N sources with the columns of tide's calibrated\n"
    "catalog, in one transaction, on SQLite (a new file in DIR) and on each store given with\n"
    "--store-uri (for PostgreSQL: postgresql://... or pg:CONNINFO; frames named\n"
    "bench-store-*.fits are written there and deleted at the end). Prints the median time\n"
    "of the inserts of new frames, rows per second, and the time to replace a frame.\n\n"
    "options:\n"
    "  --rows N         sources per frame [130000]\n"
    "  --repeats N      timed inserts per store; the median is reported [3]\n"
    "  --store-uri URI  also benchmark this store (repeatable, at most 8)\n"
    "  --dir DIR        where the SQLite file goes [a new directory in $TMPDIR or /tmp]\n"
    "  --no-sqlite      only the --store-uri stores\n"
    "  --json FILE      also write the results as JSON to FILE ('-' = stdout)\n";

#define MAX_URIS 9
#define TARGET_MS 200.0

typedef struct bench_res {
    const char *uri;
    const char *kind;
    double median_ms, min_ms, replace_ms;
    double cpu_ms; /* this process's CPU time per insert (median run): all of SQLite's work,
                      only the client's share for PostgreSQL */
    int ok;
} bench_res;

/* The catalog: names and types as tide reduce + calibration write them. */
static int make_catalog(tide_table *t, int64_t n) {
    static const struct {
        const char *name;
        tide_col_type type;
        int repeat;
    } cols[] = {{"NUMBER", TIDE_COL_I32, 1},        {"ALPHA_J2000", TIDE_COL_F64, 1},
                {"DELTA_J2000", TIDE_COL_F64, 1},   {"X_IMAGE", TIDE_COL_F64, 1},
                {"Y_IMAGE", TIDE_COL_F64, 1},       {"XWIN_IMAGE", TIDE_COL_F64, 1},
                {"YWIN_IMAGE", TIDE_COL_F64, 1},    {"ERRAWIN_IMAGE", TIDE_COL_F32, 1},
                {"ERRBWIN_IMAGE", TIDE_COL_F32, 1}, {"ERRTHETAWIN_IMAGE", TIDE_COL_F32, 1},
                {"XPEAK_IMAGE", TIDE_COL_I32, 1},   {"YPEAK_IMAGE", TIDE_COL_I32, 1},
                {"XY_IMAGE", TIDE_COL_F64, 1},      {"A_IMAGE", TIDE_COL_F32, 1},
                {"B_IMAGE", TIDE_COL_F32, 1},       {"THETA_IMAGE", TIDE_COL_F32, 1},
                {"ELONGATION", TIDE_COL_F32, 1},    {"ELLIPTICITY", TIDE_COL_F32, 1},
                {"FWHM_IMAGE", TIDE_COL_F32, 1},    {"ISOAREA_IMAGE", TIDE_COL_I32, 1},
                {"FLUX_ISO", TIDE_COL_F32, 1},      {"FLUXERR_ISO", TIDE_COL_F32, 1},
                {"FLUX_MAX", TIDE_COL_F32, 1},      {"FLUX_APER", TIDE_COL_F64, 3},
                {"FLUXERR_APER", TIDE_COL_F64, 3},  {"MAG_APER", TIDE_COL_F32, 3},
                {"MAGERR_APER", TIDE_COL_F32, 3},   {"FLUX_AUTO", TIDE_COL_F64, 1},
                {"FLUXERR_AUTO", TIDE_COL_F64, 1},  {"KRON_RADIUS", TIDE_COL_F32, 1},
                {"MAG_AUTO", TIDE_COL_F32, 1},      {"MAGERR_AUTO", TIDE_COL_F32, 1},
                {"FLUX_PSF", TIDE_COL_F64, 1},      {"FLUXERR_PSF", TIDE_COL_F64, 1},
                {"MAG_PSF", TIDE_COL_F32, 1},       {"MAGERR_PSF", TIDE_COL_F32, 1},
                {"BACKGROUND", TIDE_COL_F32, 1},    {"FLAGS", TIDE_COL_I16, 1},
                {"FLUX_OPT", TIDE_COL_F64, 1},      {"FLUXERR_OPT", TIDE_COL_F64, 1},
                {"MAG_OPT", TIDE_COL_F32, 1},       {"MAGERR_OPT", TIDE_COL_F32, 1},
                {"RAD_OPT", TIDE_COL_F32, 1},       {"SNR", TIDE_COL_F32, 1},
                {"CHI2_PSF", TIDE_COL_F32, 1},      {"PARENT", TIDE_COL_I32, 1},
                {"FLAGS_TIDE", TIDE_COL_I32, 1},    {"REF_RA", TIDE_COL_F64, 1},
                {"REF_DEC", TIDE_COL_F64, 1},       {"REF_MAG", TIDE_COL_F32, 1},
                {"REF_MAGERR", TIDE_COL_F32, 1},    {"REF_SEP", TIDE_COL_F32, 1}};
    tide_table_init(t);
    int st = 0;
    for (size_t c = 0; c < sizeof cols / sizeof cols[0] && !st; c++)
        st = tide_table_add_column(t, cols[c].name, cols[c].type, cols[c].repeat, NULL, NULL, NULL);
    if (!st)
        st = tide_table_resize(t, n);
    if (st)
        return st;
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    for (int c = 0; c < t->ncols; c++) {
        tide_column *col = &t->cols[c];
        int64_t m = n * col->repeat;
        for (int64_t i = 0; i < m; i++) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            double u = (double)(rng >> 11) / 9007199254740992.0;
            switch (col->type) {
            case TIDE_COL_F64: ((double *)col->data)[i] = 1000.0 * u; break;
            case TIDE_COL_F32: ((float *)col->data)[i] = (float)(30.0 * u); break;
            case TIDE_COL_I32: ((int32_t *)col->data)[i] = (int32_t)(i + 1); break;
            case TIDE_COL_I16: ((int16_t *)col->data)[i] = (int16_t)(rng & 7); break;
            default: break;
            }
        }
    }
    /* a 14200 x 10650 frame of 0.3"/px near (150, 2): 1.18 x 0.89 deg, rows in the raster
     * order in which detection numbers sources (y grows with the row, x at random) */
    double *ra = tide_table_f64(t, "ALPHA_J2000"), *dec = tide_table_f64(t, "DELTA_J2000");
    double *x = tide_table_f64(t, "X_IMAGE"), *y = tide_table_f64(t, "Y_IMAGE");
    for (int64_t i = 0; i < n; i++) {
        y[i] = 1.0 + 10649.0 * ((double)i + dec[i] / 1000.0) / (double)n;
        x[i] = 1.0 + 14199.0 * ra[i] / 1000.0;
        ra[i] = 149.41 + (x[i] - 7100.5) * 0.3 / 3600;
        dec[i] = 2.0 + (y[i] - 5325.5) * 0.3 / 3600;
    }
    return 0;
}

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static int put_timed(tide_store *s, const tide_table *t, const char *tag, int k, double *ms,
                     double *cpu) {
    tide_store_frame f;
    tide_store_frame_init(&f);
    snprintf(f.file, sizeof f.file, "bench-store-%s-%d.fits", tag, k);
    char key[128];
    snprintf(key, sizeof key, "tide bench --store %s %d", tag, k);
    tide_store_sha256_hex(key, (int64_t)strlen(key), f.checksum);
    double c0 = cpu_ms(), t0 = tide_bench_now_ms();
    int st = tide_store_put_frame(s, &f, t, NULL);
    *ms = tide_bench_now_ms() - t0;
    if (cpu)
        *cpu = cpu_ms() - c0;
    return st;
}

static void cleanup(tide_store *s, const char *tag, int n) {
    for (int k = 0; k < n; k++) {
        char key[128], sum[72];
        snprintf(key, sizeof key, "tide bench --store %s %d", tag, k);
        tide_store_sha256_hex(key, (int64_t)strlen(key), sum);
        tide_store_delete_frame(s, sum);
    }
}

static int bench_one(const char *uri, const tide_table *t, int repeats, bench_res *r) {
    tide_store *s = NULL;
    r->uri = uri;
    int st = tide_store_open(uri, NULL, &s);
    if (st)
        return tide_cli_fail("bench", st);
    r->kind = tide_store_get_kind(s) == TIDE_STORE_PG ? "postgresql" : "sqlite";
    char tag[32];
    snprintf(tag, sizeof tag, "%ld", (long)getpid());
    double ms[64], cpu[64], x;
    st = put_timed(s, t, tag, 0, &x, NULL); /* warm-up: columns, caches */
    for (int k = 0; k < repeats && !st; k++)
        st = put_timed(s, t, tag, k + 1, &ms[k], &cpu[k]);
    if (!st) /* the same checksum as the first timed frame: a replacement */
        st = put_timed(s, t, tag, 1, &r->replace_ms, NULL);
    if (st) {
        int rc = tide_cli_fail("bench", st);
        cleanup(s, tag, repeats + 1);
        tide_store_close(s);
        return rc;
    }
    qsort(cpu, (size_t)repeats, sizeof cpu[0], tide_bench_cmp_double);
    r->cpu_ms = cpu[repeats / 2];
    qsort(ms, (size_t)repeats, sizeof ms[0], tide_bench_cmp_double);
    r->median_ms = repeats % 2 ? ms[repeats / 2] : 0.5 * (ms[repeats / 2 - 1] + ms[repeats / 2]);
    r->min_ms = ms[0];
    r->ok = 1;
    cleanup(s, tag, repeats + 1);
    tide_store_close(s);
    return 0;
}

int tide_bench_store(int argc, char **argv) {
    int64_t rows = 130000;
    int repeats = 3, sqlite = 1;
    const char *uris[MAX_URIS], *dir = NULL, *json = NULL;
    int nuri = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--store"))
            continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return 0;
        }
        if (!strcmp(a, "--no-sqlite")) {
            sqlite = 0;
            continue;
        }
        int val = !strcmp(a, "--rows") || !strcmp(a, "--repeats") || !strcmp(a, "--store-uri") ||
                  !strcmp(a, "--dir") || !strcmp(a, "--json");
        if (!val)
            return tide_cli_usage_error("bench", "unknown option %s for --store", a);
        if (i + 1 >= argc)
            return tide_cli_usage_error("bench", "option %s needs a value", a);
        const char *v = argv[++i];
        char *end;
        if (!strcmp(a, "--rows")) {
            long long n = strtoll(v, &end, 10);
            if (end == v || *end || n < 1 || n > 100000000)
                return tide_cli_usage_error("bench", "bad value '%s' for --rows", v);
            rows = n;
        } else if (!strcmp(a, "--repeats")) {
            long n = strtol(v, &end, 10);
            if (end == v || *end || n < 1 || n > 64)
                return tide_cli_usage_error("bench", "bad value '%s' for --repeats", v);
            repeats = (int)n;
        } else if (!strcmp(a, "--store-uri")) {
            if (nuri == MAX_URIS - 1)
                return tide_cli_usage_error("bench", "at most %d --store-uri", MAX_URIS - 1);
            uris[nuri++] = v;
        } else if (!strcmp(a, "--dir")) {
            dir = v;
        } else {
            json = v;
        }
    }
    tide_table t;
    int st = make_catalog(&t, rows);
    if (st)
        return tide_cli_fail("bench", st);
    char tmp[1100] = "", path[1200] = "";
    if (sqlite) {
        if (dir) {
            snprintf(path, sizeof path, "%s/tide-bench-store-%ld.db", dir, (long)getpid());
        } else {
            const char *td = getenv("TMPDIR");
            snprintf(tmp, sizeof tmp, "%s/tide-bench-store-XXXXXX", td && *td ? td : "/tmp");
            if (!mkdtemp(tmp)) {
                tide_table_free(&t);
                return tide_cli_fail("bench", tide_error(TIDE_E_IO, "%s: cannot create", tmp));
            }
            snprintf(path, sizeof path, "%s/bench.db", tmp);
        }
    }
    bench_res res[MAX_URIS];
    memset(res, 0, sizeof res);
    int n = 0, rc = 0;
    if (sqlite)
        rc |= bench_one(path, &t, repeats, &res[n++]);
    for (int k = 0; k < nuri; k++)
        rc |= bench_one(uris[k], &t, repeats, &res[n++]);
    if (sqlite) { /* the file, its WAL and shared-memory files */
        char f[1300];
        const char *suf[3] = {"", "-wal", "-shm"};
        for (int k = 0; k < 3; k++) {
            snprintf(f, sizeof f, "%s%s", path, suf[k]);
            unlink(f);
        }
        if (tmp[0])
            rmdir(tmp);
    }
    int64_t nval = 0;
    for (int c = 0; c < t.ncols; c++)
        nval += t.cols[c].repeat;
    printf("store inserts: one frame of %lld sources x %d columns (%lld numeric values per "
           "row), median of %d; target %.0f ms\n",
           (long long)rows, t.ncols, (long long)nval, repeats, TARGET_MS);
    printf("%-11s %10s %10s %10s %12s %11s %7s  %s\n", "store", "insert ms", "best ms",
           "client CPU", "rows/s", "replace ms", "target", "uri");
    for (int k = 0; k < n; k++) {
        if (!res[k].ok)
            continue;
        char shown[1300];
        printf("%-11s %10.1f %10.1f %10.1f %12.0f %11.1f %7s  %s\n", res[k].kind, res[k].median_ms,
               res[k].min_ms, res[k].cpu_ms, 1e3 * (double)rows / res[k].median_ms,
               res[k].replace_ms, res[k].median_ms <= TARGET_MS ? "met" : "missed",
               tide_redact_uri(res[k].uri, shown, sizeof shown));
    }
    if (json) {
        tide_outfile of;
        FILE *f = stdout;
        const int to_file = strcmp(json, "-") != 0;
        int st = to_file ? tide_outfile_open(&of, json, &f) : 0;
        if (st) {
            tide_table_free(&t);
            return tide_cli_fail("bench", st);
        }
        fprintf(f,
                "{\n  \"bench\": \"store\",\n  \"tide_version\": \"%s\",\n  \"rows\": %lld,\n"
                "  \"target_ms\": %.0f,\n  \"stores\": [",
                TIDE_VERSION_STRING, (long long)rows, TARGET_MS);
        int first = 1;
        for (int k = 0; k < n; k++) {
            if (!res[k].ok)
                continue;
            fprintf(f,
                    "%s\n    {\"kind\": \"%s\", \"insert_ms\": %.3f, \"best_ms\": %.3f, "
                    "\"client_cpu_ms\": %.3f, \"rows_per_s\": %.0f, \"replace_ms\": %.3f}",
                    first ? "" : ",", res[k].kind, res[k].median_ms, res[k].min_ms, res[k].cpu_ms,
                    1e3 * (double)rows / res[k].median_ms, res[k].replace_ms);
            first = 0;
        }
        fprintf(f, "\n  ]\n}\n");
        if (to_file && (st = tide_outfile_close(&of, f)) != 0) {
            tide_table_free(&t);
            return tide_cli_fail("bench", st);
        }
    }
    tide_table_free(&t);
    return rc ? 1 : 0;
}
