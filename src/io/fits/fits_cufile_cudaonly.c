/* fits_cufile_cudaonly.c — plain data units read by cuFile (GPUDirect Storage) straight
 * into device memory, for the stack reader (fits_read_stack.c).
 *
 * Why: a plain frame read for the device went disk -> page cache -> host planes -> link; with
 * GPUDirect Storage the NVMe (or a parallel file system that supports it) writes into device
 * memory by DMA and the host copies nothing. libcufile.so.0 is opened with dlopen on first
 * use, never linked, so tide builds and runs where it is absent (CI, machines without the
 * nvidia-fs driver); the few entry points used are declared here as the GDS API documents
 * them (cufile.h is not needed to build). Anything that fails — no library, the driver will
 * not open, the file system refuses O_DIRECT or the handle, a short read — makes the caller
 * take the pinned path, with one debug line on the context's log saying why. Where nvidia-fs
 * is absent cuFile may still serve reads in its compatibility mode (POSIX reads through its
 * own bounce buffers): the read is then still counted as cuFile's.
 *
 * The raw big-endian bytes land in a device scratch buffer, read in an aligned window (the
 * 4 KiB blocks O_DIRECT wants; FITS data units start on 2880-byte boundaries), and the
 * kernel of fits_plain_cuda.cu converts them as the host reader does. TIDE_CUFILE=0 turns the
 * path off, 1 or auto (the default) tries it. */
#define _GNU_SOURCE /* O_DIRECT */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "fits_stack.h"
#include "tide/log.h"
#include "tide/memory.h"
#include "tide/status.h"

/* The GDS API's types, as documented (cufile.h): CUfileError_t is { CUfileOpError err;
 * CUresult cu_err; }, both int-sized enums, err 0 being CU_FILE_SUCCESS; a descriptor names
 * an open POSIX fd with type CU_FILE_HANDLE_TYPE_OPAQUE_FD (1). */
typedef struct {
    int err;
    int cu_err;
} cufile_error;
typedef struct {
    int type;
    union {
        int fd;
        void *handle;
    } handle;
    const void *fs_ops;
} cufile_descr;
enum { CUFILE_HANDLE_OPAQUE_FD = 1, CUFILE_ALIGN = 4096 };

static struct {
    pthread_once_t once;
    int ok; /* the library loaded and the driver opened */
    char why[160];
    cufile_error (*driver_open)(void);
    cufile_error (*handle_register)(void **fh, cufile_descr *descr);
    void (*handle_deregister)(void *fh);
    ssize_t (*read)(void *fh, void *dev, size_t size, off_t file_off, off_t dev_off);
} gds = {.once = PTHREAD_ONCE_INIT};

/* Load libcufile and open the driver, once per process (the driver stays open: it is shared
 * by every context and closes with the process). */
static void gds_load(void) {
    void *lib = dlopen("libcufile.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(gds.why, sizeof gds.why, "libcufile.so.0 not loaded: %s", dlerror());
        return;
    }
    *(void **)&gds.driver_open = dlsym(lib, "cuFileDriverOpen");
    *(void **)&gds.handle_register = dlsym(lib, "cuFileHandleRegister");
    *(void **)&gds.handle_deregister = dlsym(lib, "cuFileHandleDeregister");
    *(void **)&gds.read = dlsym(lib, "cuFileRead");
    if (!gds.driver_open || !gds.handle_register || !gds.handle_deregister || !gds.read) {
        snprintf(gds.why, sizeof gds.why, "libcufile.so.0 lacks the cuFile entry points");
        return;
    }
    const cufile_error e = gds.driver_open();
    if (e.err) {
        snprintf(gds.why, sizeof gds.why, "cuFileDriverOpen failed (error %d, CUDA %d)", e.err,
                 e.cu_err);
        return;
    }
    gds.ok = 1;
}

int tide_fits_cufile_wanted(void) {
    const char *v = getenv("TIDE_CUFILE");
    return !(v && !strcmp(v, "0"));
}

/* The file systems (st_dev) on which cuFile refused a file in this process: a stack's readers
 * route every plain unit before the calling thread tries the first, so without this memory
 * each call of a process whose files cuFile refuses read them all twice, the second time on
 * the calling thread alone (TIDE_CUFILE=1 was as slow as one read after another). */
static struct {
    pthread_mutex_t mu;
    int n;
    dev_t dev[16];
} refused = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The file system of @p path, and whether it is among the refused (the caller holds
 * refused.mu); -1 when @p path cannot be seen. */
static int refused_at(const char *path, dev_t *dev) {
    struct stat sb;
    if (stat(path, &sb))
        return -1;
    *dev = sb.st_dev;
    for (int i = 0; i < refused.n; i++)
        if (refused.dev[i] == *dev)
            return 1;
    return 0;
}

int tide_fits_cufile_refused(const char *path) {
    dev_t dev;
    pthread_mutex_lock(&refused.mu);
    const int hit = refused_at(path, &dev) == 1;
    pthread_mutex_unlock(&refused.mu);
    return hit;
}

void tide_fits_cufile_refuse(const char *path) {
    dev_t dev;
    pthread_mutex_lock(&refused.mu);
    if (refused_at(path, &dev) == 0 &&
        refused.n < (int)(sizeof refused.dev / sizeof refused.dev[0]))
        refused.dev[refused.n++] = dev;
    pthread_mutex_unlock(&refused.mu);
}

int tide_fits_cufile_usable(tide_ctx *ctx) {
    pthread_once(&gds.once, gds_load);
    if (!gds.ok)
        tide_log(&ctx->log, TIDE_LOG_DEBUG, "fits", "cuFile not used: %s", gds.why);
    return gds.ok;
}

/* The raw window of @p u: the aligned file range from @p start, @p len bytes, that holds
 * its data, of which the first @p need bytes must be read (the rest may lie past the end of
 * the file). */
static void window(const tide_fits_plain_unit *u, int64_t *start, int64_t *need, int64_t *len) {
    const int64_t esize = (u->bitpix < 0 ? -u->bitpix : u->bitpix) / 8;
    *start = u->offset / CUFILE_ALIGN * CUFILE_ALIGN;
    *need = u->offset + u->width * u->height * esize - *start;
    *len = (*need + CUFILE_ALIGN - 1) / CUFILE_ALIGN * CUFILE_ALIGN;
}

/* cuFile read of the window of @p fd into @p dev: 0, or 1 with @p why set. */
static int gds_read(int fd, void *dev, int64_t start, int64_t need, int64_t len, char *why,
                    size_t nwhy) {
    cufile_descr d;
    memset(&d, 0, sizeof d);
    d.type = CUFILE_HANDLE_OPAQUE_FD;
    d.handle.fd = fd;
    void *fh = NULL;
    const cufile_error e = gds.handle_register(&fh, &d);
    if (e.err) {
        snprintf(why, nwhy, "cuFileHandleRegister refused the file (error %d)", e.err);
        return 1;
    }
    int64_t done = 0;
    while (done < need) { /* cuFileRead may return fewer bytes than asked */
        const ssize_t r =
            gds.read(fh, dev, (size_t)(len - done), (off_t)(start + done), (off_t)done);
        if (r <= 0) {
            snprintf(why, nwhy, "cuFileRead gave %zd at byte %lld", r, (long long)(start + done));
            break;
        }
        done += r;
    }
    gds.handle_deregister(fh);
    return done < need;
}

int tide_fits_cufile_read(tide_ctx *ctx, const tide_fits_plain_unit *u, tide_image *im) {
    memset(im, 0, sizeof *im);
    pthread_once(&gds.once, gds_load);
    char why[200] = "";
    int fd = -1, st = 1;
    void *raw = NULL;
    if (!gds.ok)
        snprintf(why, sizeof why, "%s", gds.why);
    else if ((fd = open(u->path, O_RDONLY | O_DIRECT)) < 0)
        snprintf(why, sizeof why, "no O_DIRECT open: %s", strerror(errno));
    if (!why[0]) {
        int64_t start, need, len;
        window(u, &start, &need, &len);
        st = tide_image_alloc(ctx, im, u->width, u->height, TIDE_DEVICE,
                              TIDE_IMAGE_MASK | TIDE_IMAGE_UNINIT);
        if (!st)
            st = tide_device_alloc(ctx, (size_t)len, &raw);
        if (!st)
            st = tide_sync(ctx); /* the pool's memory is ready before cuFile writes it */
        if (!st && gds_read(fd, raw, start, need, len, why, sizeof why))
            st = 1;
        if (!st)
            st = tide_fits_plain_convert_cuda(ctx, (const unsigned char *)raw + (u->offset - start),
                                              u, im->pix, im->mask);
        tide_device_free(ctx, raw); /* stream-ordered: after the conversion */
    }
    if (fd >= 0)
        close(fd);
    if (st)
        tide_image_free(ctx, im);
    if (st == 1) {
        tide_fits_cufile_refuse(u->path);
        tide_log(&ctx->log, TIDE_LOG_DEBUG, "fits", "%s[HDU %d]: cuFile not used (%s)", u->path,
                 u->hdu, why);
    }
    return st;
}
