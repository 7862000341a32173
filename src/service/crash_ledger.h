/* crash_ledger.h — what makes a poison message end: a task that crashes the worker process
 * (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT in a runner) is written down before the process
 * dies, in an append-only file that outlives it. The broker hands the unacked message to the
 * next worker; that worker counts the crashes the ledger holds for the message as attempts,
 * and dead-letters it when they reach max_attempts, instead of crashing forever.
 *
 * A worker killed from outside (SIGKILL, the OOM killer, a power cut) writes nothing: only a
 * fault inside the process counts against the message it was running. Keys are the FNV-1a 64
 * hash of the message body, which is published again unchanged on every retry. Workers on one
 * host may share a ledger (O_APPEND lines are atomic). Not public. */
#ifndef TIDE_CRASH_LEDGER_H
#define TIDE_CRASH_LEDGER_H
#include <stddef.h>
#include <stdint.h>

/** The key of a message body: FNV-1a 64 of its bytes. */
uint64_t crash_ledger_key(const char *body, size_t len);

/** Open (creating it 0600) the ledger DIR/crashes-QUEUE.log, read the crashes it holds, and
 *  install the fault handlers (they write the running task's key, then let the signal kill
 *  the process as it would have). DIR is created (0700) when missing. One ledger per process;
 *  0, or TIDE_E_IO naming the file. */
int crash_ledger_open(const char *dir, const char *queue);

/** Close the ledger and restore the previous handlers. */
void crash_ledger_close(void);

/** Crashes the ledger held, when it was opened, for messages of key @p key (0 without one). */
int crash_ledger_count(uint64_t key);

/** The signal of the last crash recorded for @p key ("SIGSEGV"...), or NULL. */
const char *crash_ledger_signal(uint64_t key);

/** The message of key @p key was settled (acked or dead-lettered): its crashes are cleared in
 *  the ledger, so a later resubmission of the same body starts afresh. */
void crash_ledger_settled(uint64_t key);

/** The calling runner thread begins (@p key) or ends (0) a task: what a fault on this thread
 *  is written down against. */
void crash_ledger_running(uint64_t key);

#endif
