/* outfile.c — one output file staged in a private directory beside its target and renamed into
 * place when complete (outfile.h says why each step is there). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile_internal.h"
#include "tide/outfile.h"
#include "tide/status.h"

void tide_outfile_host_tag(char *out) {
    /* The host name, then the PID namespace (Linux: "pid:[INODE]"; "" elsewhere): two
     * containers with one host name sharing a volume do not see each other's PIDs. */
    char id[600] = "";
    if (gethostname(id, 256) != 0)
        id[0] = 0;
    id[256] = 0;
    size_t n = strlen(id);
    id[n++] = '\n';
    const ssize_t k = readlink("/proc/self/ns/pid", id + n, sizeof id - n - 1);
    id[k > 0 ? n + (size_t)k : n] = 0;
    unsigned h = 2166136261u; /* FNV-1a: stable across runs and builds, cheap */
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 16777619u;
    snprintf(out, 9, "%08x", h);
}

void tide_outfile_dir_of(const char *path, char *dir, size_t n) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, n, ".");
    else if (slash == path)
        snprintf(dir, n, "/");
    else
        snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

/* A target the rename may replace: nothing, a regular file, or a link to one. Renaming over a
 * device, pipe or socket (/dev/stdout, a FIFO) would replace that node by a regular file. */
static int check_target(const char *path) {
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return tide_error(TIDE_E_IO, "%s: is a directory", path);
    if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISLNK(sb.st_mode))
        return tide_error(TIDE_E_IO, "%s: exists and is not a regular file", path);
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return tide_error(TIDE_E_IO, "%s: points to something that is not a regular file", path);
    return 0;
}

/* mkdtemp of DIR/.tide-HOST-PID-XXXXXX for target @p path, errors naming @p path. */
static int make_private(const char *path, const char *dir, char *priv, size_t n) {
    char tag[9];
    tide_outfile_host_tag(tag);
    if ((size_t)snprintf(priv, n, "%s/" TIDE_OUTFILE_PREFIX "%s-%ld-XXXXXX", dir, tag,
                         (long)getpid()) >= n)
        return tide_error(TIDE_E_INVAL, "%.80s...: output file name too long", path);
    tide_outfile_sweep(dir);
    if (!mkdtemp(priv)) {
        const int e = errno;
        priv[0] = 0;
        if (e == ENOENT || e == ENOTDIR)
            return tide_error(TIDE_E_IO, "%s: cannot write: directory %s does not exist", path,
                              dir);
        return tide_error(TIDE_E_IO, "%s: cannot create a file in %s: %s", path, dir, strerror(e));
    }
    return 0;
}

int tide_outfile_mkdtemp(const char *path, char *priv, size_t n) {
    char dir[4096];
    tide_outfile_dir_of(path, dir, sizeof dir);
    return make_private(path, dir, priv, n);
}

int tide_outfile_begin(tide_outfile *o, const char *path) {
    memset(o, 0, sizeof *o);
    if (!path || !*path)
        return tide_error(TIDE_E_INVAL, "no output file name given");
    if (strlen(path) >= sizeof o->path - 64)
        return tide_error(TIDE_E_INVAL, "%.80s...: output file name too long", path);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
        return tide_error(TIDE_E_IO, "%s: is a directory", path);
    int st = check_target(path);
    if (st)
        return st;
    snprintf(o->path, sizeof o->path, "%s", path);
    tide_outfile_dir_of(path, o->dir, sizeof o->dir);
    st = make_private(path, o->dir, o->priv, sizeof o->priv);
    if (st)
        return st;
    snprintf(o->tmp, sizeof o->tmp, "%s/%s", o->priv, base);
    return 0;
}

int tide_outfile_fopen(tide_outfile *o, FILE **f) {
    *f = NULL;
    if (!o->priv[0])
        return tide_error(TIDE_E_INVAL, "%s: output not begun", o->path);
    int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0)
        return tide_error(TIDE_E_IO, "%s: cannot create the temporary file: %s", o->path,
                          strerror(errno));
    *f = fdopen(fd, "wb");
    if (!*f) {
        close(fd);
        unlink(o->tmp);
        return tide_error(TIDE_E_NOMEM, "%s: cannot open for writing", o->path);
    }
    return 0;
}

int tide_outfile_sync(tide_outfile *o) {
    if (o->synced)
        return 0;
    if (!o->priv[0])
        return tide_error(TIDE_E_INVAL, "%s: output not begun", o->path);
    /* Data on disk before the name points at it, so a crash leaves the old file or the new. */
    int fd = open(o->tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        int st = tide_error(TIDE_E_IO, "%s: cannot flush the written file: %s", o->path,
                            strerror(errno));
        if (fd >= 0)
            close(fd);
        return st;
    }
    close(fd);
    o->synced = 1;
    return 0;
}

void tide_outfile_sync_dir(const char *dir) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd); /* best effort: the rename itself is durable after this */
        close(dfd);
    }
}

void tide_outfile_abort(tide_outfile *o) {
    if (o->priv[0]) {
        tide_outfile_remove_tree(o->priv);
        o->priv[0] = 0;
    }
    o->tmp[0] = 0;
    o->synced = 0;
}

int tide_outfile_commit(tide_outfile *o) {
    int st = tide_outfile_sync(o);
    if (!st && rename(o->tmp, o->path) != 0)
        st = tide_error(TIDE_E_IO, "%s: cannot rename the finished file into place: %s", o->path,
                        strerror(errno));
    tide_outfile_abort(o); /* the private directory (empty after the rename) goes */
    if (!st)
        tide_outfile_sync_dir(o->dir);
    return st;
}

int tide_outfile_open(tide_outfile *o, const char *path, FILE **f) {
    *f = NULL;
    int st = tide_outfile_begin(o, path);
    if (!st)
        st = tide_outfile_fopen(o, f);
    if (st)
        tide_outfile_abort(o);
    return st;
}

int tide_outfile_close(tide_outfile *o, FILE *f) {
    int bad = ferror(f) != 0;
    bad |= fflush(f) != 0;
    const int e = errno;
    bad |= fclose(f) != 0;
    if (bad) {
        int st = tide_error(TIDE_E_IO, "%s: cannot write: %s", o->path, strerror(e ? e : errno));
        tide_outfile_abort(o);
        return st;
    }
    return tide_outfile_commit(o);
}
