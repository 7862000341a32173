/* test_store_readonly.c — SQLite stores opened as asked (issue 22): a store whose sky-cell
 * metadata was altered is refused with a message naming the file (it was finalized twice: a
 * double free), on the writing and the read-only path; a read-only handle of a store answers
 * cones, changes no byte and refuses writes; a database that is not a tide store, a file that
 * is not a database and a missing file are refused read-only and left as they were (no
 * -wal/-shm/-journal beside them, no journal-mode switch, no schema). */
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_check.h"

static char dir[64];

static const char *in_dir(const char *name) {
    static char buf[4][256];
    static int k = 0;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* The SHA-256 of a file ("" when unreadable). */
static void file_sum(const char *path, char *hex) {
    if (tide_store_file_checksum(path, hex))
        hex[0] = 0;
}

/* 1 when no -wal, -shm or -journal file lies beside @p path. */
static int no_side_files(const char *path) {
    static const char *const suf[] = {"-wal", "-shm", "-journal"};
    for (int k = 0; k < 3; k++) {
        char p[300];
        snprintf(p, sizeof p, "%s%s", path, suf[k]);
        if (access(p, F_OK) == 0) {
            fprintf(stderr, "%s appeared\n", p);
            return 0;
        }
    }
    return 1;
}

static void sql(const char *path, const char *text) {
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, text, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", text, msg ? msg : "");
        CHECK(0);
    }
    sqlite3_free(msg);
    sqlite3_close(db);
}

static tide_store_options ro_options(void) {
    tide_store_options o;
    tide_store_options_init(&o);
    o.read_only = 1;
    return o;
}

/* A store of one frame, written through the store API. */
static int64_t make_store(const char *path) {
    tide_store *s = NULL;
    CHECK_OK(tide_store_open(path, NULL, &s));
    if (!s)
        return 0;
    tide_table t;
    CHECK_OK(sc_catalog(&t, 500, 0, 0));
    tide_store_frame f;
    sc_frame(&f, "ro.fits", "ro");
    int64_t id = -1;
    CHECK_OK(tide_store_put_frame(s, &f, &t, &id));
    tide_store_close(s);
    const int64_t n = t.nrows;
    tide_table_free(&t);
    return n;
}

static void test_read_only_store(void) {
    const char *path = in_dir("store.db");
    const int64_t n = make_store(path);
    CHECK(no_side_files(path)); /* the writer's close removed its WAL */
    char before[72], after[72];
    file_sum(path, before);
    const tide_store_options o = ro_options();
    tide_store *s = NULL;
    CHECK_OK(tide_store_open(path, &o, &s));
    if (s) {
        int64_t ni = -1, ns = -1;
        CHECK_OK(tide_store_count(s, &ni, &ns));
        CHECK(ni == 1 && ns == n);
        tide_table c;
        tide_table_init(&c);
        CHECK_OK(tide_store_cone(s, 0, 10, 5, 0, &c));
        CHECK(c.nrows > 0);
        tide_table_free(&c);
        /* writes through a read-only handle are refused */
        tide_table t;
        CHECK_OK(sc_catalog(&t, 10, 0, 1));
        tide_store_frame f;
        sc_frame(&f, "other.fits", "other");
        CHECK(tide_store_put_frame(s, &f, &t, NULL) == TIDE_E_INVAL);
        CHECK(strstr(tide_error_detail(), "read-only") != NULL);
        tide_table_free(&t);
        CHECK(tide_store_delete_frame(s, "ro") == TIDE_E_INVAL);
        tide_store_close(s);
    }
    file_sum(path, after);
    CHECK(before[0] && !strcmp(before, after));
}

/* The reproducer of issue 22: tide_meta's sky-cell row altered. */
static void test_skycell_altered(void) {
    const char *path = in_dir("cells.db");
    make_store(path);
    sql(path, "UPDATE tide_meta SET value = 'healpix-nested-99' WHERE key = 'skycell'");
    const tide_store_options o = ro_options();
    for (int ro = 0; ro < 2; ro++) {
        tide_store *s = NULL;
        CHECK(tide_store_open(path, ro ? &o : NULL, &s) == TIDE_E_UNSUPPORTED && !s);
        const char *d = tide_error_detail();
        printf("sky cells altered (%s): %s\n", ro ? "read-only" : "read-write", d);
        CHECK(strstr(d, path) && strstr(d, "unsupported sky-cell scheme") &&
              strstr(d, "healpix-nested-99"));
    }
    /* no sky-cell row at all: not a tide store for a reader */
    sql(path, "DELETE FROM tide_meta");
    tide_store *s = NULL;
    CHECK(tide_store_open(path, &o, &s) == TIDE_E_FORMAT && !s);
    CHECK(strstr(tide_error_detail(), "not a tide store") != NULL);
}

/* Another application's database, in rollback-journal and in WAL mode, a text file, an empty
 * file and a missing one: refused, left byte-identical, nothing beside them. */
static void test_foreign(void) {
    const tide_store_options o = ro_options();
    static const char *const setup[2] = {
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"
        "INSERT INTO notes (body) VALUES ('keep me')",
        "PRAGMA journal_mode=WAL; CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"
        "INSERT INTO notes (body) VALUES ('keep me')"};
    for (int k = 0; k < 2; k++) {
        const char *path = in_dir(k ? "foreign-wal.db" : "foreign.db");
        sql(path, setup[k]);
        CHECK(no_side_files(path));
        char before[72], after[72];
        file_sum(path, before);
        tide_store *s = NULL;
        CHECK(tide_store_open(path, &o, &s) == TIDE_E_FORMAT && !s);
        const char *d = tide_error_detail();
        printf("foreign database: %s\n", d);
        CHECK(strstr(d, path) && strstr(d, "not a tide store"));
        file_sum(path, after);
        CHECK(before[0] && !strcmp(before, after));
        CHECK(no_side_files(path));
    }
    const char *text = in_dir("text.db");
    FILE *f = fopen(text, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("not a database at all, though long enough to look like a header: "
              "0123456789012345678901234567890123456789\n",
              f);
        fclose(f);
    }
    tide_store *s = NULL;
    CHECK(tide_store_open(text, &o, &s) == TIDE_E_FORMAT && !s);
    CHECK(strstr(tide_error_detail(), "not a tide store") != NULL);
    CHECK(no_side_files(text));
    const char *empty = in_dir("empty.db");
    f = fopen(empty, "w");
    if (f)
        fclose(f);
    CHECK(tide_store_open(empty, &o, &s) == TIDE_E_FORMAT && !s);
    struct stat sb;
    CHECK(stat(empty, &sb) == 0 && sb.st_size == 0 && no_side_files(empty));
    const char *missing = in_dir("missing.db");
    CHECK(tide_store_open(missing, &o, &s) == TIDE_E_NOTFOUND && !s);
    CHECK(access(missing, F_OK) != 0); /* not created */
}

int main(void) {
    (void)sc_run_all; /* store_check.h's full suite runs in test_store_sqlite */
    snprintf(dir, sizeof dir, "/tmp/tide-store-ro-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    test_read_only_store();
    test_skycell_altered();
    test_foreign();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    return TIDE_TEST_RESULT();
}
