/* fits_atomic.c — outputs are written under a temporary name beside the target and renamed
 * over it only when complete (DESIGN §6), so a reader never sees half a file and a failure
 * leaves nothing behind. rename(2) within one directory is atomic on POSIX file systems. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fits_internal.h"
#include "tide/status.h"

/* Directory part of @p path ("." when it has none). */
static void dir_of(const char *path, char *dir, size_t n) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, n, ".");
    else if (slash == path)
        snprintf(dir, n, "/");
    else
        snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

int tide_fits_out_begin(tide_fits_out *o, const char *path) {
    memset(o, 0, sizeof *o);
    if (!path || !*path)
        return tide_error(TIDE_E_INVAL, "no output file name given");
    if (strlen(path) >= sizeof o->path - 64)
        return tide_error(TIDE_E_INVAL, "%.80s...: output file name too long", path);
    snprintf(o->path, sizeof o->path, "%s", path);
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return tide_error(TIDE_E_IO, "%s: is a directory", path);
    /* Renaming over a device, pipe or socket (/dev/stdout, a FIFO) would replace that node by a
     * regular file: refuse anything that exists and is not a regular file. */
    if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISLNK(sb.st_mode))
        return tide_error(TIDE_E_IO, "%s: exists and is not a regular file", path);
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return tide_error(TIDE_E_IO, "%s: points to something that is not a regular file", path);
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    /* A hidden name unique to this process and moment; O_EXCL makes the claim safe against
     * another writer picking the same name. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long salt = (unsigned long)ts.tv_nsec ^ ((unsigned long)(uintptr_t)o >> 4);
    int fd = -1, err = 0;
    for (int attempt = 0; attempt < 64 && fd < 0; attempt++) {
        snprintf(o->tmp, sizeof o->tmp, "%s/.%s.tmp-%ld-%lx", dir, base, (long)getpid(),
                 salt + (unsigned long)attempt * 7919u);
        fd = open(o->tmp, O_CREAT | O_EXCL | O_WRONLY, 0666);
        err = errno;
        if (fd < 0 && err != EEXIST)
            break;
    }
    if (fd < 0) {
        o->tmp[0] = 0;
        if (err == ENOENT || err == ENOTDIR)
            return tide_error(TIDE_E_IO, "%s: cannot write: directory %s does not exist", path,
                              dir);
        return tide_error(TIDE_E_IO, "%s: cannot create a file in %s: %s", path, dir,
                          strerror(err));
    }
    close(fd);
    /* cfitsio creates its own file; fits_create_diskfile takes the name literally (no
     * extended-syntax parsing) and refuses an existing file, hence the unlink. */
    unlink(o->tmp);
    int cst = 0;
    if (fits_create_diskfile(&o->f, o->tmp, &cst)) {
        o->f = NULL;
        int st = tide_fits_status(cst, path, -1, "cannot create the temporary output file");
        unlink(o->tmp);
        o->tmp[0] = 0;
        return st;
    }
    return TIDE_OK;
}

void tide_fits_out_abort(tide_fits_out *o) {
    if (o->f) {
        int cst = 0;
        fits_close_file(o->f, &cst);
        o->f = NULL;
    }
    if (o->tmp[0])
        unlink(o->tmp);
    o->tmp[0] = 0;
    fits_clear_errmsg();
}

int tide_fits_out_commit(tide_fits_out *o) {
    int cst = 0;
    fits_close_file(o->f, &cst);
    o->f = NULL;
    if (cst) {
        int st = tide_fits_status(cst, o->path, -1, "cannot finish writing");
        tide_fits_out_abort(o);
        return st;
    }
    /* Data on disk before the name points at it, so a crash leaves the old file or the new. */
    int fd = open(o->tmp, O_RDONLY);
    if (fd < 0 || fsync(fd) != 0) {
        int st = tide_error(TIDE_E_IO, "%s: cannot flush the written file: %s", o->path,
                            strerror(errno));
        if (fd >= 0)
            close(fd);
        tide_fits_out_abort(o);
        return st;
    }
    close(fd);
    if (rename(o->tmp, o->path) != 0) {
        int st = tide_error(TIDE_E_IO, "%s: cannot rename the finished file into place: %s",
                            o->path, strerror(errno));
        tide_fits_out_abort(o);
        return st;
    }
    o->tmp[0] = 0;
    char dir[4096];
    dir_of(o->path, dir, sizeof dir);
    int dfd = open(dir, O_RDONLY);
    if (dfd >= 0) {
        fsync(dfd); /* best effort: the rename itself is durable after this */
        close(dfd);
    }
    return TIDE_OK;
}
