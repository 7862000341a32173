/* crash_ledger.c — the poison-message ledger (crash_ledger.h): an append-only file of lines
 * "KEY SIGNAL" (a crash) and "KEY clear" (the message was settled: its count starts again),
 * written by fault handlers with nothing but write(2). */
#define _GNU_SOURCE
#include "crash_ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tide/status.h"

/* One key's crashes since its last clear. */
typedef struct entry {
    uint64_t key;
    int count;
    char sig[12];
} entry;

#define LEDGER_SLOTS 64 /* runner threads that can be told apart in a fault */

static int ledger_fd = -1;
static entry *entries;
static int nentries, centries;
/* The key each runner is running, by slot: a fault on a thread that is no runner (an OpenMP
 * worker of a runner's stage) is written down against every task running. */
static volatile uint64_t slot_key[LEDGER_SLOTS];
static volatile int nslots;
static __thread int my_slot = -1;

static const int fault_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define NFAULTS ((int)(sizeof fault_signals / sizeof fault_signals[0]))
static struct sigaction old_actions[NFAULTS];

uint64_t crash_ledger_key(const char *body, size_t len) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)body[i];
        h *= 1099511628211ULL;
    }
    return h ? h : 1; /* 0 means "no task" */
}

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
    }
}

/* "KEY WORD\n" into @p line (async-signal-safe: no stdio). Returns its length. */
static int format_line(char *line, uint64_t key, const char *word) {
    static const char hex[] = "0123456789abcdef";
    int n = 0;
    for (int i = 15; i >= 0; i--)
        line[n++] = hex[(key >> (4 * i)) & 15];
    line[n++] = ' ';
    while (*word && n < 40)
        line[n++] = *word++;
    line[n++] = '\n';
    return n;
}

static void write_line(uint64_t key, const char *word) {
    char line[48];
    const int n = format_line(line, key, word);
    if (write(ledger_fd, line, (size_t)n) == n)
        (void)fsync(ledger_fd);
}

static void on_fault(int sig) {
    if (ledger_fd >= 0) {
        const char *name = signal_name(sig);
        const uint64_t mine = my_slot >= 0 ? slot_key[my_slot] : 0;
        if (mine)
            write_line(mine, name);
        else
            for (int i = 0; i < nslots; i++)
                if (slot_key[i])
                    write_line(slot_key[i], name);
    }
    /* SA_RESETHAND put the default action back, SA_NODEFER lets it act now */
    raise(sig);
}

static entry *find(uint64_t key) {
    for (int i = 0; i < nentries; i++)
        if (entries[i].key == key)
            return &entries[i];
    return NULL;
}

/* Apply one line of the file to the table. */
static int apply(uint64_t key, const char *word) {
    entry *e = find(key);
    if (!strcmp(word, "clear")) {
        if (e)
            e->count = 0;
        return TIDE_OK;
    }
    if (!e) {
        if (nentries == centries) {
            int nc = centries ? 2 * centries : 16;
            entry *ne = realloc(entries, sizeof *ne * (size_t)nc);
            if (!ne)
                return tide_error(TIDE_E_NOMEM, "crash ledger: out of memory");
            entries = ne;
            centries = nc;
        }
        e = &entries[nentries++];
        memset(e, 0, sizeof *e);
        e->key = key;
    }
    e->count++;
    snprintf(e->sig, sizeof e->sig, "%s", word);
    return TIDE_OK;
}

static int read_ledger(FILE *f, const char *path) {
    char line[128];
    while (fgets(line, sizeof line, f)) {
        unsigned long long key;
        char word[16];
        if (sscanf(line, "%16llx %15s", &key, word) != 2)
            continue; /* a line cut short by a power cut: nothing to count */
        int st = apply((uint64_t)key, word);
        if (st)
            return st;
    }
    if (ferror(f))
        return tide_error(TIDE_E_IO, "%s: reading the crash ledger: %s", path, strerror(errno));
    return TIDE_OK;
}

int crash_ledger_open(const char *dir, const char *queue) {
    if (ledger_fd >= 0)
        return tide_error(TIDE_E_INVAL, "crash ledger: already open");
    if (mkdir(dir, 0700) && errno != EEXIST)
        return tide_error(TIDE_E_IO, "%s: cannot create the worker's state directory: %s", dir,
                          strerror(errno));
    char path[4096];
    if (snprintf(path, sizeof path, "%s/crashes-%s.log", dir, queue) >= (int)sizeof path)
        return tide_error(TIDE_E_INVAL, "%s: state directory name too long", dir);
    for (char *p = path + strlen(dir) + 1; *p; p++)
        if (*p == '/')
            *p = '_'; /* a queue name is no path */
    const int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return tide_error(TIDE_E_IO, "%s: cannot open the crash ledger: %s", path, strerror(errno));
    FILE *f = fdopen(dup(fd), "r");
    int st =
        f ? read_ledger(f, path) : tide_error(TIDE_E_IO, "%s: cannot read the crash ledger", path);
    if (f)
        fclose(f);
    if (st) {
        close(fd);
        return st;
    }
    ledger_fd = fd;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fault;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    for (int i = 0; i < NFAULTS; i++)
        sigaction(fault_signals[i], &sa, &old_actions[i]);
    return TIDE_OK;
}

void crash_ledger_close(void) {
    if (ledger_fd < 0)
        return;
    for (int i = 0; i < NFAULTS; i++)
        sigaction(fault_signals[i], &old_actions[i], NULL);
    close(ledger_fd);
    ledger_fd = -1;
    free(entries);
    entries = NULL;
    nentries = centries = 0;
}

int crash_ledger_count(uint64_t key) {
    const entry *e = find(key);
    return e ? e->count : 0;
}

const char *crash_ledger_signal(uint64_t key) {
    const entry *e = find(key);
    return e && e->count ? e->sig : NULL;
}

void crash_ledger_settled(uint64_t key) {
    entry *e = find(key);
    if (!e || !e->count || ledger_fd < 0)
        return;
    e->count = 0;
    write_line(key, "clear");
}

void crash_ledger_running(uint64_t key) {
    if (my_slot < 0) {
        const int s = __atomic_fetch_add(&nslots, 1, __ATOMIC_SEQ_CST);
        if (s >= LEDGER_SLOTS) {
            __atomic_fetch_sub(&nslots, 1, __ATOMIC_SEQ_CST);
            return; /* untold apart: its faults count against every running task */
        }
        my_slot = s;
    }
    slot_key[my_slot] = key;
}
