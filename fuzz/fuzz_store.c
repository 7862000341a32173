/* fuzz_store.c — libFuzzer harness: the SQLite store opener on any file (tide_store_open of
 * "sqlite:PATH": schema and sky-cell metadata checks), then what `tide query` asks of it: the
 * counts, a cone, every source, one image. SQLite's own parser is fuzzed upstream; the target
 * here is what tide does with what it reads back. */
#include "fuzz_common.h"
#include "tide/store.h"
#include "tide/table.h"

static void remove_sidecars(const char *path) {
    char p[600];
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-journal", path);
    unlink(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_path("store", ".db");
    remove_sidecars(path);
    if (fuzz_write(path, data, size))
        return 0;
    char uri[600];
    snprintf(uri, sizeof uri, "sqlite:%s", path);
    tide_store *s = NULL;
    if (tide_store_open(uri, NULL, &s) == 0) {
        int64_t ni = 0, ns = 0;
        tide_store_count(s, &ni, &ns);
        tide_table t;
        tide_table_init(&t);
        /* freed whatever the outcome: a failed query may leave the columns it had made */
        tide_store_cone(s, 150.0, 2.2, 1.0, 100, &t);
        tide_table_free(&t);
        tide_store_all_sources(s, &t);
        tide_table_free(&t);
        tide_store_frame f;
        tide_store_frame_init(&f);
        tide_store_image(s, "1", &f);
        tide_store_frame_free(&f);
        tide_store_close(s);
    }
    remove_sidecars(path);
    tide_error_clear();
    return 0;
}
