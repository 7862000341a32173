/* outfile_sweep.c — removing what writers that died (kill -9, a crash, a power cut) left in
 * an output directory: private directories .tide-HOST-PID-XXXXXX, and the temporary names of
 * earlier tide versions, when the process is gone, the host is this one and the user is us. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "outfile_internal.h"
#include "tide/outfile.h"

/* Remove @p name in directory @p parent and everything in it, depth-first. Every step goes
 * through descriptors (openat with O_NOFOLLOW, unlinkat): a directory swapped for a symlink
 * while we work is never followed. Private trees are a few levels deep at most (a `tide diff`
 * output directory holds files and its writers' private directories). */
static void remove_at(int parent, const char *name, int depth) {
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        unlinkat(parent, name, 0); /* not a directory (any more): just the name */
        return;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        struct stat sb;
        if (fstatat(fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (!S_ISDIR(sb.st_mode))
            unlinkat(fd, e->d_name, 0);
        else if (depth < 6)
            remove_at(fd, e->d_name, depth + 1);
    }
    closedir(d);
    unlinkat(parent, name, AT_REMOVEDIR);
}

void tide_outfile_remove_tree(const char *dir) {
    remove_at(AT_FDCWD, dir, 0);
}

/* 1 when no process @p pid exists (ESRCH); a live one, or one we may not signal, is alive. */
static int pid_dead(long pid) {
    if (pid <= 1 || pid != (long)(pid_t)pid)
        return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Digits at @p s up to @p end (a char that must follow them): the number, or -1. */
static long digits(const char *s, char end, const char **after) {
    long v = 0;
    const char *p = s;
    while (*p >= '0' && *p <= '9' && p - s < 10)
        v = v * 10 + (*p++ - '0');
    if (p == s || *p != end)
        return -1;
    *after = p;
    return v;
}

/* PID of a private directory of this host: .tide-HOST-PID-XXXXXX..., or -1. */
static long private_pid(const char *name, const char *tag) {
    const size_t np = strlen(TIDE_OUTFILE_PREFIX);
    if (strncmp(name, TIDE_OUTFILE_PREFIX, np) || strncmp(name + np, tag, 8) || name[np + 8] != '-')
        return -1;
    const char *after;
    return digits(name + np + 9, '-', &after);
}

/* PID of an earlier version's temporary: ".NAME.tmp-PID-HEX" (FITS, PNG, the reduce
 * catalog's ".NAME.tide-partial.tmp-PID-HEX") or "NAME.tmp-PID" (CSV, WCS, index files), or
 * -1. The second form only after a name ending as tide's outputs do, so a user's own
 * "notes.tmp-12" is never taken for one. */
static long legacy_pid(const char *name) {
    const char *t = strstr(name, ".tmp-");
    if (!t)
        return -1;
    for (const char *n; (n = strstr(t + 1, ".tmp-"));)
        t = n; /* the last one */
    const char *after;
    const char *d = t + 5;
    if (name[0] == '.') {
        long pid = digits(d, '-', &after);
        if (pid < 0 || !after[1])
            return -1;
        for (const char *h = after + 1; *h; h++)
            if (!((*h >= '0' && *h <= '9') || (*h >= 'a' && *h <= 'f')))
                return -1;
        return pid;
    }
    long pid = digits(d, '\0', &after);
    if (pid < 0)
        return -1;
    static const char *const ext[] = {".fits", ".fit", ".fts", ".csv", ".wcs", ".png"};
    const size_t stem = (size_t)(t - name);
    for (size_t k = 0; k < sizeof ext / sizeof ext[0]; k++) {
        const size_t le = strlen(ext[k]);
        if (stem > le && !strncmp(t - le, ext[k], le))
            return pid;
    }
    return -1;
}

/* The directory swept last by this process (its device and inode) and when: the outputs of
 * one command in one directory sweep it once, a long-running process again after a while. */
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;
static dev_t last_dev;
static ino_t last_ino;
static time_t last_time;
static int have_last;
enum { SWEEP_AGAIN_S = 10 };

void tide_outfile_sweep(const char *dir) {
    struct stat ds;
    if (stat(dir, &ds) != 0 || !S_ISDIR(ds.st_mode))
        return;
    pthread_mutex_lock(&last_lock);
    const time_t now = time(NULL);
    const int again = have_last && last_dev == ds.st_dev && last_ino == ds.st_ino &&
                      now - last_time < SWEEP_AGAIN_S;
    if (!again)
        last_dev = ds.st_dev, last_ino = ds.st_ino, last_time = now, have_last = 1;
    pthread_mutex_unlock(&last_lock);
    if (again)
        return;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    char tag[9];
    tide_outfile_host_tag(tag);
    const uid_t me = getuid();
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *name = e->d_name;
        long pid = private_pid(name, tag);
        const int priv = pid >= 0;
        if (!priv)
            pid = legacy_pid(name);
        if (pid < 0 || !pid_dead(pid))
            continue;
        struct stat sb;
        if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || sb.st_uid != me)
            continue;
        if (priv && S_ISDIR(sb.st_mode))
            remove_at(dfd, name, 1);
        else if (!priv && S_ISREG(sb.st_mode))
            unlinkat(dfd, name, 0);
    }
    closedir(d);
}
