/* sqlite_ckpt.c — a background WAL checkpointer for the SQLite store.
 *
 * In WAL mode a commit appends the frame's pages to the WAL; a checkpoint later copies them
 * into the database file (reading the WAL, writing the file, two fsyncs). SQLite runs it
 * inside the commit that crosses wal_autocheckpoint pages, so with 64 KiB pages every second
 * 130,000-source frame paid ~100-200 ms of I/O at commit. SQLite's documentation suggests
 * the alternative used here: a separate thread with its own connection runs PASSIVE
 * checkpoints (never blocking readers or the writer) after each commit, overlapping the copy
 * with the next frame's work. Durability is unchanged: commits, checkpoints and their fsyncs
 * are the same as with automatic checkpoints, only on another thread. The store keeps a
 * large wal_autocheckpoint as a backstop and bounds the WAL with tide_sq_ckpt_bound. */
#include "sqlite_ckpt.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

struct sq_ckpt {
    sqlite3 *db;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* kicks and quit, to the thread */
    pthread_cond_t idle; /* end of a pass, to bound() */
    int pending, running, quit;
    int64_t wal_bytes; /* WAL size seen by the last pass (frames x page size) */
    int64_t page_size;
};

static void *ckpt_main(void *arg) {
    sq_ckpt *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->pending && !c->quit)
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->quit)
            break;
        c->pending = 0;
        c->running = 1;
        pthread_mutex_unlock(&c->mu);
        int nlog = 0, nckpt = 0;
        /* PASSIVE: copies what no reader still needs, waits for nobody; SQLITE_BUSY (another
         * checkpoint running) or an I/O error leave the WAL as it is, to the next pass */
        sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &nlog, &nckpt);
        pthread_mutex_lock(&c->mu);
        c->running = 0;
        c->wal_bytes = (int64_t)(nlog > 0 ? nlog : 0) * c->page_size;
        pthread_cond_broadcast(&c->idle);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

sq_ckpt *tide_sq_ckpt_start(const char *path, int synchronous) {
    if (!path || !*path)
        return NULL; /* an in-memory or temporary database: nothing to share */
    sq_ckpt *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &c->db, flags, NULL) != SQLITE_OK) {
        sqlite3_close(c->db);
        free(c);
        return NULL;
    }
    sqlite3_busy_timeout(c->db, 0);
    sqlite3_exec(c->db, synchronous >= 2 ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL",
                 NULL, NULL, NULL);
    c->page_size = 65536;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(c->db, "PRAGMA page_size", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        c->page_size = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    int ok = !pthread_mutex_init(&c->mu, NULL);
    int okc = ok && !pthread_cond_init(&c->cv, NULL);
    int oki = okc && !pthread_cond_init(&c->idle, NULL);
    if (oki && !pthread_create(&c->thread, NULL, ckpt_main, c))
        return c;
    if (oki)
        pthread_cond_destroy(&c->idle);
    if (okc)
        pthread_cond_destroy(&c->cv);
    if (ok)
        pthread_mutex_destroy(&c->mu);
    sqlite3_close(c->db);
    free(c);
    return NULL;
}

void tide_sq_ckpt_kick(sq_ckpt *c) {
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->pending = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void tide_sq_ckpt_bound(sq_ckpt *c, int64_t max_bytes) {
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    /* the pass that runs (or is asked for) started from a WAL at least this large */
    while ((c->running || c->pending) && c->wal_bytes > max_bytes)
        pthread_cond_wait(&c->idle, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

void tide_sq_ckpt_stop(sq_ckpt *c) {
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->quit = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    pthread_cond_destroy(&c->idle);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    sqlite3_close(c->db);
    free(c);
}
