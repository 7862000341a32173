/* test_outfile.c — the one way tide writes outputs (outfile.h): staging in a private
 * directory, commit and abort leaving no trace, the sweep of dead writers' leftovers (and of
 * nothing else), output sets committed together or put back, and the same-file check. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tide/outfile.h"
#include "tide_test.h"

static char root[256];

static const char *in_dir(const char *d, const char *name) {
    static char buf[8][600];
    static int k = 0;
    char a[600], b[300];
    snprintf(a, sizeof a, "%s", d); /* d may be one of buf's own entries (nested calls) */
    snprintf(b, sizeof b, "%s", name);
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", a, b);
    return buf[k];
}

static int count_files(const char *d) {
    DIR *dp = opendir(d);
    int n = 0;
    struct dirent *e;
    while (dp && (e = readdir(dp)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    if (dp)
        closedir(dp);
    return n;
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static int has(const char *path, const char *text) {
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return !strcmp(buf, text);
}

static int exists(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* A PID that no process has (a child that has exited and been reaped). */
static long dead_pid(void) {
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0);
    return (long)p;
}

static void test_stage_commit_abort(void) {
    char d[300];
    snprintf(d, sizeof d, "%s/stage", root);
    mkdir(d, 0755);
    tide_outfile o;
    CHECK_OK(tide_outfile_begin(&o, in_dir(d, "a.csv")));
    struct stat sb;
    CHECK(stat(o.priv, &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0700);
    CHECK(strstr(o.priv, "/.tide-") != NULL);
    CHECK(!strncmp(o.tmp, o.priv, strlen(o.priv)));
    FILE *f = NULL;
    CHECK_OK(tide_outfile_fopen(&o, &f));
    fputs("new", f);
    fclose(f);
    CHECK(!exists(in_dir(d, "a.csv"))); /* nothing under the name before the commit */
    CHECK_OK(tide_outfile_commit(&o));
    CHECK(has(in_dir(d, "a.csv"), "new"));
    CHECK(count_files(d) == 1);

    /* abort: the old file stays, nothing else is left */
    CHECK_OK(tide_outfile_begin(&o, in_dir(d, "a.csv")));
    CHECK_OK(tide_outfile_fopen(&o, &f));
    fputs("half", f);
    fclose(f);
    tide_outfile_abort(&o);
    CHECK(has(in_dir(d, "a.csv"), "new"));
    CHECK(count_files(d) == 1);

    /* a symlink as the target is replaced, its target is not written */
    put(in_dir(d, "victim"), "keep");
    CHECK(symlink("victim", in_dir(d, "l.csv")) == 0);
    CHECK_OK(tide_outfile_begin(&o, in_dir(d, "l.csv")));
    CHECK_OK(tide_outfile_fopen(&o, &f));
    fputs("x", f);
    fclose(f);
    CHECK_OK(tide_outfile_commit(&o));
    CHECK(has(in_dir(d, "victim"), "keep"));
    CHECK(has(in_dir(d, "l.csv"), "x"));

    /* a missing directory and a directory as the target are errors naming the path */
    CHECK(tide_outfile_begin(&o, in_dir(d, "no/x.csv")) == TIDE_E_IO);
    CHECK(strstr(tide_error_detail(), "no/x.csv") != NULL);
    CHECK(tide_outfile_begin(&o, d) == TIDE_E_IO);
}

static void test_sweep(void) {
    char d[300];
    snprintf(d, sizeof d, "%s/sweep", root);
    mkdir(d, 0755);
    char tag[9];
    tide_outfile_host_tag(tag);
    CHECK(strlen(tag) == 8);
    const long dead = dead_pid();
    char name[200];
    /* a dead writer's private directory, with a file and a nested private directory */
    snprintf(name, sizeof name, ".tide-%s-%ld-AbCdEf", tag, dead);
    mkdir(in_dir(d, name), 0700);
    put(in_dir(in_dir(d, name), "c.fits"), "partial");
    mkdir(in_dir(in_dir(d, name), ".tide-x"), 0700);
    put(in_dir(in_dir(in_dir(d, name), ".tide-x"), "y"), "y");
    /* a live writer's (ours), another host's, and a dead writer's old-style names */
    char live[200], other[200];
    snprintf(live, sizeof live, ".tide-%s-%ld-AbCdEf", tag, (long)getpid());
    mkdir(in_dir(d, live), 0700);
    snprintf(other, sizeof other, ".tide-%08x-%ld-AbCdEf", (unsigned)(strtoul(tag, NULL, 16) ^ 1u),
             dead);
    mkdir(in_dir(d, other), 0700);
    char old1[200], old2[200], old3[200], keep1[200], keep2[200];
    snprintf(old1, sizeof old1, ".c.fits.tmp-%ld-5f3a", dead);
    snprintf(old2, sizeof old2, "c.csv.tmp-%ld", dead);
    snprintf(old3, sizeof old3, ".c.fits.tide-partial.tmp-%ld-1", dead);
    snprintf(keep1, sizeof keep1, "notes.tmp-%ld", dead);           /* not a tide output name */
    snprintf(keep2, sizeof keep2, "c.csv.tmp-%ld", (long)getpid()); /* alive */
    put(in_dir(d, old1), "1");
    put(in_dir(d, old2), "2");
    put(in_dir(d, old3), "3");
    put(in_dir(d, keep1), "k");
    put(in_dir(d, keep2), "k");
    put(in_dir(d, "data.fits"), "user");
    tide_outfile_sweep(d);
    CHECK(!exists(in_dir(d, name)));
    CHECK(exists(in_dir(d, live)));
    CHECK(exists(in_dir(d, other)));
    CHECK(!exists(in_dir(d, old1)));
    CHECK(!exists(in_dir(d, old2)));
    CHECK(!exists(in_dir(d, old3)));
    CHECK(exists(in_dir(d, keep1)));
    CHECK(exists(in_dir(d, keep2)));
    CHECK(has(in_dir(d, "data.fits"), "user"));
    rmdir(in_dir(d, live));

    /* a write into another directory sweeps it */
    char d2[300];
    snprintf(d2, sizeof d2, "%s/sweep2", root);
    mkdir(d2, 0755);
    mkdir(in_dir(d2, name), 0700);
    tide_outfile o;
    CHECK_OK(tide_outfile_begin(&o, in_dir(d2, "z.csv")));
    CHECK(!exists(in_dir(d2, name)));
    tide_outfile_abort(&o);
    CHECK(count_files(d2) == 0);
}

static void test_outset(void) {
    char d[300];
    snprintf(d, sizeof d, "%s/set", root);
    mkdir(d, 0755);
    put(in_dir(d, "a"), "old-a");
    tide_outset s;
    tide_outset_init(&s);
    tide_outfile *a = NULL, *b = NULL, *none = NULL;
    CHECK_OK(tide_outset_add(&s, in_dir(d, "a"), &a));
    CHECK_OK(tide_outset_add(&s, in_dir(d, "b"), &b));
    CHECK_OK(tide_outset_add(&s, NULL, &none));
    CHECK(a && b && !none && s.n == 2);
    FILE *f;
    CHECK_OK(tide_outfile_fopen(a, &f));
    fputs("new-a", f);
    fclose(f);
    CHECK_OK(tide_outfile_fopen(b, &f));
    fputs("new-b", f);
    fclose(f);
    /* b's name becomes a directory: its rename fails, and a must be put back */
    mkdir(in_dir(d, "b"), 0755);
    CHECK(tide_outset_commit(&s) == TIDE_E_IO);
    tide_outset_abort(&s);
    CHECK(has(in_dir(d, "a"), "old-a"));
    rmdir(in_dir(d, "b"));
    CHECK(count_files(d) == 1);

    /* both complete: both in place */
    tide_outset_init(&s);
    CHECK_OK(tide_outset_add(&s, in_dir(d, "a"), &a));
    CHECK_OK(tide_outset_add(&s, in_dir(d, "b"), &b));
    CHECK_OK(tide_outfile_fopen(a, &f));
    fputs("new-a", f);
    fclose(f);
    CHECK_OK(tide_outfile_fopen(b, &f));
    fputs("new-b", f);
    fclose(f);
    CHECK_OK(tide_outset_commit(&s));
    tide_outset_abort(&s);
    CHECK(has(in_dir(d, "a"), "new-a") && has(in_dir(d, "b"), "new-b"));
    CHECK(count_files(d) == 2);

    /* aborted before the commit: nothing changes */
    tide_outset_init(&s);
    CHECK_OK(tide_outset_add(&s, in_dir(d, "a"), &a));
    CHECK_OK(tide_outset_add(&s, in_dir(d, "c"), &b));
    tide_outset_abort(&s);
    CHECK(has(in_dir(d, "a"), "new-a") && !exists(in_dir(d, "c")));
    CHECK(count_files(d) == 2);
}

static void test_same_file(void) {
    char d[300];
    snprintf(d, sizeof d, "%s/same", root);
    mkdir(d, 0755);
    const char *in = in_dir(d, "in.fits");
    put(in, "input");
    CHECK(symlink("in.fits", in_dir(d, "sym.fits")) == 0);
    CHECK(link(in, in_dir(d, "hard.fits")) == 0);
    char spec[700], dotted[700];
    snprintf(spec, sizeof spec, "%s[1]", in);
    snprintf(dotted, sizeof dotted, "%s/./x.fits", d);
    const char *ins[] = {in, "postgresql://u:p@h/db", NULL};
    const char *sp[] = {spec};
    const char *o1[] = {in};
    CHECK(tide_outputs_check(ins, 3, o1, 1) == TIDE_E_INVAL);
    CHECK(strstr(tide_error_detail(), "in.fits") != NULL);
    const char *o2[] = {in_dir(d, "sym.fits")};
    CHECK(tide_outputs_check(ins, 1, o2, 1) == TIDE_E_INVAL);
    const char *o3[] = {in_dir(d, "hard.fits")};
    CHECK(tide_outputs_check(ins, 1, o3, 1) == TIDE_E_INVAL);
    CHECK(tide_outputs_check(sp, 1, o1, 1) == TIDE_E_INVAL);
    const char *o4[] = {in_dir(d, "x.fits"), NULL, "-", dotted};
    CHECK(tide_outputs_check(ins, 3, o4, 4) == TIDE_E_INVAL);
    CHECK(strstr(tide_error_detail(), "x.fits") != NULL);
    const char *o5[] = {in_dir(d, "x.fits"), in_dir(d, "y.fits"), "-", "-"};
    CHECK_OK(tide_outputs_check(ins, 3, o5, 4));
    CHECK(has(in, "input"));
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/tide_test_outfile_XXXXXX");
    if (!mkdtemp(root))
        return 1;
    test_stage_commit_abort();
    test_same_file();
    test_sweep();
    test_outset();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", root);
    return TIDE_TEST_RESULT();
}
