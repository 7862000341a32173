/* sqlite_ckpt.h — the SQLite store's background WAL checkpointer (sqlite_ckpt.c). */
#ifndef TIDE_SQLITE_CKPT_H
#define TIDE_SQLITE_CKPT_H
#include <stdint.h>

typedef struct sq_ckpt sq_ckpt;

/* Start a thread with its own connection to the database file @p path that runs a PASSIVE
 * checkpoint each time it is kicked. @p synchronous: 1 NORMAL, 2 FULL (the checkpoint's
 * fsyncs follow it). Returns NULL when the thread or the connection cannot be made (the
 * caller then keeps SQLite's automatic checkpoints). */
sq_ckpt *tide_sq_ckpt_start(const char *path, int synchronous);

/* Ask for a checkpoint of everything committed so far (returns at once). */
void tide_sq_ckpt_kick(sq_ckpt *c);

/* Before a write transaction: when the WAL held more than @p max_bytes at the end of the
 * last checkpoint pass, or a pass is running over a WAL that large, wait until the
 * checkpointer is idle, so the next writer finds the WAL fully copied and restarts it from
 * its beginning (a WAL only restarts then; without the wait, back-to-back frames would grow
 * it without bound). */
void tide_sq_ckpt_bound(sq_ckpt *c, int64_t max_bytes);

/* Finish the running pass, stop the thread and close its connection (NULL is fine). */
void tide_sq_ckpt_stop(sq_ckpt *c);

#endif
