/* test_refcat.c — reference catalogs: CSV (strict RFC 4180, sexagesimal angles, errors with
 * FILE:LINE), FITS tables, column mappings, cones (RA wrap, pole, margin), the user command
 * (no shell, placeholders, exit status, time limit, its process group killed) and the per-field
 * cache. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tide/fits.h"
#include "tide/refcat.h"
#include "tide/instrument.h"
#include "tide/status.h"
#include "tide_test.h"

static char dir[256];

static const char *path_in(const char *name) {
    static char buf[4][512];
    static int k = 0;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static double col(const tide_table *t, const char *name, int64_t i) {
    const double *d = tide_table_f64(t, name);
    return d ? d[i] : -999;
}

static void test_angles(void) {
    double v;
    CHECK_OK(tide_parse_angle("10:00:00", 1, &v));
    CHECK_CLOSE(v, 150.0, 1e-12);
    CHECK_OK(tide_parse_angle("10 30 36.0", 1, &v));
    CHECK_CLOSE(v, 157.65, 1e-12);
    CHECK_OK(tide_parse_angle("-00:30:00", 0, &v));
    CHECK_CLOSE(v, -0.5, 1e-12);
    CHECK_OK(tide_parse_angle("+02:12", 0, &v));
    CHECK_CLOSE(v, 2.2, 1e-12);
    CHECK_OK(tide_parse_angle(" 150.25 ", 1, &v)); /* a plain number is degrees */
    CHECK_CLOSE(v, 150.25, 1e-12);
    CHECK(tide_parse_angle("10:61:00", 1, &v) == TIDE_E_FORMAT);
    CHECK(tide_parse_angle("10.5:30:00", 1, &v) == TIDE_E_FORMAT);
    CHECK(tide_parse_angle("abc", 0, &v) == TIDE_E_FORMAT);
    CHECK(tide_parse_angle("", 0, &v) == TIDE_E_FORMAT);
    CHECK(tide_parse_angle("1:2:3:4", 0, &v) == TIDE_E_FORMAT);
}

static void test_csv(void) {
    const char *p = path_in("a.csv");
    write_text(p, "id,ra,Dec,mag,magerr,color,\"note, quoted\"\r\n"
                  "1,150.0,2.2,12.5,0.01,0.6,\"a \"\"star\"\"\"\r\n"
                  "\n"
                  "2,10:00:01.5,+02:12:36,13.25,,nan,\"two\nlines\"\n"
                  "3, 150.01 , -0.5 ,14,0.02,1.1,x");
    tide_table t;
    CHECK_OK(tide_refcat_read(p, NULL, &t));
    CHECK(t.nrows == 3 && t.ncols == 5);
    CHECK(!strcmp(t.cols[0].name, "RA") && !strcmp(t.cols[4].name, "COLOR"));
    CHECK_CLOSE(col(&t, "RA", 1), 150.00625, 1e-12);
    CHECK_CLOSE(col(&t, "DEC", 1), 2.21, 1e-12);
    CHECK(isnan(col(&t, "MAGERR", 1)) && isnan(col(&t, "COLOR", 1)));
    CHECK_CLOSE(col(&t, "MAG", 1), 13.25, 0);
    CHECK_CLOSE(col(&t, "RA", 2), 150.01, 0);
    CHECK_CLOSE(col(&t, "COLOR", 2), 1.1, 0);
    tide_table_free(&t);

    /* a mapping; MAGERR and COLOR absent with default names: NaN */
    p = path_in("b.csv");
    write_text(p, "RAJ2000,DEJ2000,rmag\n150,2,15.5\n");
    tide_refcat_columns cm;
    memset(&cm, 0, sizeof cm);
    snprintf(cm.ra, sizeof cm.ra, "RAJ2000");
    snprintf(cm.dec, sizeof cm.dec, "DEJ2000");
    snprintf(cm.mag, sizeof cm.mag, "RMAG");
    CHECK_OK(tide_refcat_read(p, &cm, &t));
    CHECK(t.nrows == 1 && col(&t, "MAG", 0) == 15.5 && isnan(col(&t, "COLOR", 0)));
    tide_table_free(&t);
    /* without the mapping: RA is missing */
    CHECK(tide_refcat_read(p, NULL, &t) == TIDE_E_NOTFOUND);
    CHECK(strstr(tide_error_detail(), "'RA'") && strstr(tide_error_detail(), "b.csv"));
    CHECK(t.nrows == 0 && t.ncols == 0);
    /* a mapped optional column that is missing is an error */
    snprintf(cm.color, sizeof cm.color, "g_r");
    CHECK(tide_refcat_read(p, &cm, &t) == TIDE_E_NOTFOUND);
    CHECK(strstr(tide_error_detail(), "g_r") != NULL);

    /* errors with FILE:LINE */
    p = path_in("c.csv");
    write_text(p, "RA,DEC,MAG\n1,2,3\n\n4,x5,6\n");
    CHECK(tide_refcat_read(p, NULL, &t) == TIDE_E_FORMAT);
    CHECK(strstr(tide_error_detail(), "c.csv:4:") && strstr(tide_error_detail(), "x5"));
    write_text(p, "RA,DEC,MAG\n1,2,3\n4,5\n");
    CHECK(tide_refcat_read(p, NULL, &t) == TIDE_E_FORMAT);
    CHECK(strstr(tide_error_detail(), "c.csv:3:") != NULL);
    write_text(p, "RA,DEC,MAG\n1,2,\"3\n");
    CHECK(tide_refcat_read(p, NULL, &t) == TIDE_E_FORMAT);
    CHECK(strstr(tide_error_detail(), "unterminated") != NULL);
    write_text(p, "RA,DEC,MAG\n1,2,3\"x\"\n");
    CHECK(tide_refcat_read(p, NULL, &t) == TIDE_E_FORMAT);
    write_text(p, "RA,DEC,MAG\n1,,3\n"); /* RA and DEC may not be empty */
    CHECK(tide_refcat_read(p, NULL, &t) == TIDE_E_FORMAT);
    write_text(p, "");
    CHECK(tide_refcat_read(p, NULL, &t) == TIDE_E_FORMAT);
    write_text(p, "RA,DEC,MAG\n"); /* a header alone: zero rows, not an error */
    CHECK_OK(tide_refcat_read(p, NULL, &t));
    CHECK(t.nrows == 0);
    tide_table_free(&t);
    /* missing file */
    CHECK(tide_refcat_read(path_in("nope.csv"), NULL, &t) == TIDE_E_IO);
    CHECK(strstr(tide_error_detail(), "nope.csv") != NULL);
    CHECK(tide_refcat_read(path_in("nope.fits[1]"), NULL, &t) == TIDE_E_IO);
}

static void test_fits(void) {
    tide_table src;
    tide_table_init(&src);
    CHECK_OK(tide_table_add_column(&src, "ID", TIDE_COL_I32, 1, NULL, NULL, NULL));
    CHECK_OK(tide_table_add_column(&src, "ra", TIDE_COL_F64, 1, "deg", NULL, NULL));
    CHECK_OK(tide_table_add_column(&src, "DEC", TIDE_COL_F32, 1, "deg", NULL, NULL));
    CHECK_OK(tide_table_add_column(&src, "MAG", TIDE_COL_I16, 1, "mag", NULL, NULL));
    CHECK_OK(tide_table_add_column(&src, "RA_S", TIDE_COL_STR, 16, NULL, NULL, NULL));
    CHECK_OK(tide_table_resize(&src, 2));
    double *ra = tide_table_f64(&src, "ra");
    float *de = tide_table_f32(&src, "DEC");
    int16_t *mg = tide_table_column(&src, "MAG")->data;
    char *rs = tide_table_column(&src, "RA_S")->data;
    ra[0] = 359.999, de[0] = -1.5f, mg[0] = 12;
    ra[1] = 0.002, de[1] = -1.5f, mg[1] = 13;
    memcpy(rs, "23:59:59.76     ", 16);
    memcpy(rs + 16, "00:00:00.48     ", 16);
    const char *p = path_in("r.fits");
    CHECK_OK(tide_fits_write_table(p, &src, NULL, "REFCAT"));
    tide_table t;
    CHECK_OK(tide_refcat_read(p, NULL, &t));
    CHECK(t.nrows == 2 && t.ncols == 5);
    CHECK_CLOSE(col(&t, "RA", 0), 359.999, 0);
    CHECK_CLOSE(col(&t, "DEC", 1), -1.5, 0);
    CHECK_CLOSE(col(&t, "MAG", 1), 13, 0);
    CHECK(isnan(col(&t, "MAGERR", 0)) && isnan(col(&t, "COLOR", 1)));
    tide_table_free(&t);
    /* a text RA column through the mapping (sexagesimal hours) */
    tide_refcat_columns cm;
    memset(&cm, 0, sizeof cm);
    snprintf(cm.ra, sizeof cm.ra, "ra_s");
    char spec[600];
    snprintf(spec, sizeof spec, "%s[1]", p);
    CHECK_OK(tide_refcat_read(spec, &cm, &t));
    CHECK_CLOSE(col(&t, "RA", 0), 359.999, 1e-9);
    CHECK_CLOSE(col(&t, "RA", 1), 0.002, 1e-9);
    /* cone across RA = 0: both stars are 0.0015 deg from (0.0005, -1.5) */
    CHECK_OK(tide_refcat_cone(&t, 0.0005, -1.5, 0.002, "r.fits"));
    CHECK(t.nrows == 2);
    CHECK_OK(tide_refcat_cone(&t, 0.0015, -1.5, 0.001, "r.fits"));
    CHECK(t.nrows == 1 && fabs(col(&t, "RA", 0) - 0.002) < 1e-9);
    CHECK(tide_refcat_cone(&t, 180, 10, 1, "r.fits") == TIDE_E_EMPTY);
    CHECK(strstr(tide_error_detail(), "r.fits: no reference star within 1.0000 deg of "
                                      "(180.000000, 10.000000)") != NULL);
    CHECK(tide_refcat_cone(&t, 0, 91, 1, "x") == TIDE_E_INVAL);
    CHECK(tide_refcat_cone(&t, 0, 0, 0, "x") == TIDE_E_INVAL);
    tide_table_free(&t);
    snprintf(cm.ra, sizeof cm.ra, "NOPE");
    CHECK(tide_refcat_read(p, &cm, &t) == TIDE_E_NOTFOUND);
    CHECK(strstr(tide_error_detail(), "NOPE") && strstr(tide_error_detail(), "r.fits"));
    tide_table_free(&src);
}

static void test_cone_pole_and_load(void) {
    /* stars around the north pole at every RA: all 0.5 deg from the pole */
    char text[8192];
    int len = snprintf(text, sizeof text, "RA,DEC,MAG\n");
    for (int k = 0; k < 24; k++)
        len += snprintf(text + len, sizeof text - (size_t)len, "%d,89.5,%d\n", k * 15, 10 + k);
    len += snprintf(text + len, sizeof text - (size_t)len, "0,0,20\n");
    const char *p = path_in("pole.csv");
    write_text(p, text);
    tide_table t;
    /* radius 0.45 + margin (0.045 + 1/60 = 0.0617) > 0.5: the 24 pole stars, not (0, 0) */
    CHECK_OK(tide_refcat_load(p, NULL, 0, 90, 0.45, &t));
    CHECK(t.nrows == 24);
    tide_table_free(&t);
    CHECK(tide_refcat_load(p, NULL, 0, 90, 0.40, &t) == TIDE_E_EMPTY);
    CHECK(strstr(tide_error_detail(), "pole.csv") != NULL);
    CHECK(t.nrows == 0 && t.ncols == 0);
    CHECK_CLOSE(tide_refcat_margin_deg(0.45), 0.045 + 1.0 / 60, 1e-15);
}

static void test_command(void) {
    char **argv = NULL;
    int argc = 0, names_out = 0;
    /* words are split before substitution; quotes group; nothing else is special */
    CHECK_OK(tide_refcat_command_argv("q --cone '{ra} {dec}' r={radius} \"a;b|c\" $HOME {out}", 150,
                                      -2.5, 0.25, "/tmp/x", &argv, &argc, &names_out));
    CHECK(argc == 7 && names_out == 1);
    if (argc == 7) {
        CHECK(!strcmp(argv[0], "q") && !strcmp(argv[1], "--cone"));
        CHECK(!strcmp(argv[2], "150.000000000 -2.500000000"));
        CHECK(!strcmp(argv[3], "r=0.250000000"));
        CHECK(!strcmp(argv[4], "a;b|c")); /* no shell: kept as text */
        CHECK(!strcmp(argv[5], "$HOME")); /* no variables */
        CHECK(!strcmp(argv[6], "/tmp/x"));
        CHECK(argv[7] == NULL);
    }
    tide_refcat_argv_free(argv);
    CHECK(tide_refcat_command_argv("q {nope}", 0, 0, 1, NULL, &argv, &argc, &names_out) ==
          TIDE_E_INVAL);
    CHECK(strstr(tide_error_detail(), "{nope}") != NULL);
    CHECK(tide_refcat_command_argv("q 'open", 0, 0, 1, NULL, &argv, &argc, &names_out) ==
          TIDE_E_INVAL);
    CHECK(tide_refcat_command_argv("   ", 0, 0, 1, NULL, &argv, &argc, &names_out) == TIDE_E_INVAL);

    const char *p = path_in("cmd.csv");
    write_text(p, "RA,DEC,MAG\n150,2.2,12\n150.1,2.2,13\n160,2.2,14\n");
    char tpl[1024];
    tide_table t;
    /* to standard output */
    snprintf(tpl, sizeof tpl, "cat %s", p);
    CHECK_OK(tide_refcat_from_command(tpl, 150, 2.2, 0.5, NULL, 10, &t));
    CHECK(t.nrows == 2);
    tide_table_free(&t);
    /* to {out} */
    snprintf(tpl, sizeof tpl, "cp %s {out}", p);
    CHECK_OK(tide_refcat_from_command(tpl, 160, 2.2, 0.5, NULL, 10, &t));
    CHECK(t.nrows == 1 && col(&t, "MAG", 0) == 14);
    tide_table_free(&t);
    /* the RA is exactly one argument: `test` exits 0 (then the empty output is an empty
     * CSV, TIDE_E_FORMAT) only when it gets the three words it expects, else 1 (TIDE_E_IO) */
    CHECK(tide_refcat_from_command("test {ra} = 150.000000000", 150, 0, 1, NULL, 10, &t) ==
          TIDE_E_FORMAT);
    CHECK(tide_refcat_from_command("test {ra} = 151.000000000", 150, 0, 1, NULL, 10, &t) ==
          TIDE_E_IO);
    /* failures */
    CHECK(tide_refcat_from_command("false", 0, 0, 1, NULL, 10, &t) == TIDE_E_IO);
    CHECK(strstr(tide_error_detail(), "status 1") != NULL);
    CHECK(tide_refcat_from_command("/nonexistent/prog {ra}", 0, 0, 1, NULL, 10, &t) == TIDE_E_IO);
    CHECK(strstr(tide_error_detail(), "/nonexistent/prog") != NULL);
    CHECK(tide_refcat_from_command("sleep 5", 0, 0, 1, NULL, 0.3, &t) == TIDE_E_TIMEOUT);
    snprintf(tpl, sizeof tpl, "cat %s", p);
    CHECK(tide_refcat_from_command(tpl, 10, 10, 0.5, NULL, 10, &t) == TIDE_E_EMPTY);
    CHECK(strstr(tide_error_detail(), "'cat'") != NULL);
}

/* 1 when process @p pid is gone (or a zombie nobody has reaped yet: dead all the same). */
static int gone(long pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return kill((pid_t)pid, 0) != 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *e = strrchr(buf, ')'); /* "PID (comm) STATE ..." */
    return e && (e[2] == 'Z' || e[2] == 'X');
}

static long read_pid(const char *path) {
    long pid = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return pid;
}

/* Past its time limit the command's whole process group goes, not only the command: a
 * grandchild in the background (issue 22: it lived on), and one that ignores SIGTERM. */
static void test_command_group(void) {
    for (int ignore_term = 0; ignore_term < 2; ignore_term++) {
        const char *pidf = path_in("grandchild.pid");
        unlink(pidf);
        char tpl[1024];
        snprintf(tpl, sizeof tpl, "sh -c '%ssleep 300 & echo $! > %s; sleep 300'",
                 ignore_term ? "trap \"\" TERM; " : "", pidf);
        tide_table t;
        CHECK(tide_refcat_from_command(tpl, 0, 0, 1, NULL, 0.5, &t) == TIDE_E_TIMEOUT);
        const long pid = read_pid(pidf);
        CHECK(pid > 1);
        int dead = 0;
        for (int i = 0; i < 200 && pid > 1 && !(dead = gone(pid)); i++)
            nanosleep(&(struct timespec){0, 10000000}, NULL); /* init reaps it: a moment */
        if (!dead && pid > 1) {
            fprintf(stderr, "grandchild %ld still alive (ignore TERM: %d)\n", pid, ignore_term);
            kill((pid_t)pid, SIGKILL);
        }
        CHECK(dead);
        unlink(pidf);
    }
}

static void test_cache(void) {
    char name[128], name2[128];
    CHECK_OK(tide_refcat_cache_name("x.csv", 150.00049, -2.2, 0.25, name, sizeof name));
    CHECK_OK(tide_refcat_cache_name("x.csv", 150.0, -2.2, 0.2500001, name2, sizeof name2));
    CHECK(strstr(name, "_150.000_m2.200_0.250.fits") != NULL);
    CHECK(!strncmp(name, "refcat_", 7) &&
          strlen(name) == 7 + 16 + strlen("_150.000_m2.200_0.250.fits"));
    CHECK(strcmp(name, name2) != 0); /* the radius rounds up: 0.250 vs 0.251 */
    CHECK_OK(tide_refcat_cache_name("x.csv", 360.0, 0.0, 0.25, name, sizeof name));
    CHECK(strstr(name, "_0.000_p0.000_0.250.fits") != NULL);
    CHECK_OK(tide_refcat_cache_name("y.csv", 0.0, 0.0, 0.25, name2, sizeof name2));
    CHECK(strcmp(name, name2) != 0);

    char cdir[600], got[600];
    snprintf(cdir, sizeof cdir, "%s/cache", dir);
    setenv("TIDE_REFCAT_CACHE", cdir, 1);
    CHECK_OK(tide_refcat_cache_dir(NULL, got, sizeof got));
    CHECK(!strcmp(got, cdir));
    CHECK_OK(tide_refcat_cache_dir("/other", got, sizeof got));
    CHECK(!strcmp(got, "/other"));
    unsetenv("TIDE_REFCAT_CACHE");
    CHECK(tide_refcat_cache_dir("", got, sizeof got) == TIDE_E_NOTFOUND);

    const char *p = path_in("src.csv");
    write_text(p, "RA,DEC,MAG,MAGERR,COLOR\n150,2.2,12,0.01,0.5\n150.1,2.2,13,0.02,0.6\n");
    tide_table t, t2;
    CHECK(tide_refcat_cache_get(cdir, p, 150, 2.2, 0.5, &t) == TIDE_E_NOTFOUND);
    CHECK_OK(tide_refcat_fetch(p, NULL, NULL, 150, 2.2, 0.5, cdir, &t));
    CHECK(t.nrows == 2);
    /* now a hit, even with the source gone */
    unlink(p);
    CHECK_OK(tide_refcat_fetch(p, NULL, NULL, 150, 2.2, 0.5, cdir, &t2));
    CHECK(t2.nrows == 2 && t2.ncols == 5);
    for (int k = 0; k < 5; k++)
        CHECK(!memcmp(t.cols[k].data, t2.cols[k].data, 2 * sizeof(double)));
    tide_table_free(&t2);
    /* a damaged entry is a miss */
    CHECK_OK(tide_refcat_cache_name(p, 150, 2.2, 0.5, name, sizeof name));
    char entry[800];
    snprintf(entry, sizeof entry, "%s/%s", cdir, name);
    write_text(entry, "SIMPLE  = garbage");
    CHECK(tide_refcat_cache_get(cdir, p, 150, 2.2, 0.5, &t2) == TIDE_E_NOTFOUND);
    /* put over it works (atomic replace) */
    CHECK_OK(tide_refcat_cache_put(cdir, p, 150, 2.2, 0.5, &t));
    CHECK_OK(tide_refcat_cache_get(cdir, p, 150, 2.2, 0.5, &t2));
    CHECK(t2.nrows == 2);
    tide_table_free(&t2);
    tide_table_free(&t);
    CHECK(tide_refcat_fetch(NULL, NULL, NULL, 0, 0, 1, NULL, &t) == TIDE_E_INVAL);
    CHECK(tide_refcat_fetch(p, NULL, NULL, 150, 2.2, 0.5, NULL, &t) == TIDE_E_IO);
    unlink(entry);
    rmdir(cdir);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tide-test-refcat-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "cannot make a temporary directory\n");
        return 1;
    }
    test_angles();
    test_csv();
    test_fits();
    test_cone_pole_and_load();
    test_command();
    test_command_group();
    test_cache();
    /* clean up */
    static const char *files[] = {"a.csv", "b.csv", "c.csv", "r.fits", "pole.csv", "cmd.csv"};
    for (size_t k = 0; k < sizeof files / sizeof *files; k++)
        unlink(path_in(files[k]));
    rmdir(dir);
    return TIDE_TEST_RESULT();
}
