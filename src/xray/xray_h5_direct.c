/* xray_h5_direct.c — row blocks of an uncompressed cube read straight from the file by many
 * threads. libhdf5 reads a hyperslab on one thread (the library holds a global lock even when
 * built thread-safe) at ~1 GB/s, which made reading a Jungfrau-sized pair (800 MB) most of a
 * GPU fit's wall time. A cube stored without filters is plain bytes at addresses libhdf5 tells:
 * one run for a contiguous dataset, one block per chunk for a chunked one. Those are located
 * with libhdf5 on the calling thread and then read with pread(2) and converted to float32 by
 * an OpenMP team. Anything else (filters, external or virtual storage, big-endian or 64-bit
 * types, an undefined fill value) keeps libhdf5's reader. The values are those libhdf5's
 * conversion to H5T_NATIVE_FLOAT gives: the types taken convert by C casts there too. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tide/status.h"
#include "xray/xray_internal.h"

/* The stored element types read directly (little-endian); 0 when none. */
enum { DT_NONE, DT_F32, DT_I8, DT_U8, DT_I16, DT_U16, DT_I32, DT_U32 };

static int host_little_endian(void) {
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static int element_type(hid_t t, int *esize) {
    const H5T_class_t cl = H5Tget_class(t);
    const size_t sz = H5Tget_size(t);
    *esize = (int)sz;
    if (H5Tget_order(t) != H5T_ORDER_LE && sz > 1)
        return DT_NONE;
    if (cl == H5T_FLOAT)
        return H5Tequal(t, H5T_IEEE_F32LE) > 0 ? DT_F32 : DT_NONE;
    if (cl != H5T_INTEGER)
        return DT_NONE;
    const int sign = H5Tget_sign(t) == H5T_SGN_2;
    /* padding bits or an offset would make the stored bytes something else than the C type */
    if (H5Tget_precision(t) != 8 * sz || H5Tget_offset(t) != 0)
        return DT_NONE;
    switch (sz) {
    case 1: return sign ? DT_I8 : DT_U8;
    case 2: return sign ? DT_I16 : DT_U16;
    case 4: return sign ? DT_I32 : DT_U32;
    default: return DT_NONE;
    }
}

void xray_direct_plan(xray_file *f) {
    xray_direct *d = &f->direct;
    memset(d, 0, sizeof *d);
    d->fd = -1;
    if (getenv("TIDE_XRAY_DIRECT") && !strcmp(getenv("TIDE_XRAY_DIRECT"), "0"))
        return;
    if (!host_little_endian())
        return;
    hid_t t = H5Dget_type(f->cube), pl = H5Dget_create_plist(f->cube), fcpl = -1;
    int ok = t >= 0 && pl >= 0;
    if (ok) {
        d->type = element_type(t, &d->esize);
        ok = d->type != DT_NONE && H5Pget_nfilters(pl) == 0 && H5Pget_external_count(pl) == 0;
    }
    const H5D_layout_t lay = ok ? H5Pget_layout(pl) : H5D_LAYOUT_ERROR;
    if (lay == H5D_CONTIGUOUS) {
        d->base = H5Dget_offset(f->cube);
        ok = d->base != HADDR_UNDEF; /* no storage yet: libhdf5 gives the fill value */
    } else if (lay == H5D_CHUNKED) {
        H5D_fill_value_t fv;
        ok = H5Pget_chunk(pl, 3, d->chunk) == 3 && H5Pfill_value_defined(pl, &fv) >= 0 &&
             fv != H5D_FILL_VALUE_UNDEFINED &&
             H5Pget_fill_value(pl, H5T_NATIVE_FLOAT, &d->fill) >= 0;
    } else
        ok = 0;
    /* chunk addresses count from the superblock, which a user block shifts (H5Dget_offset's
     * count from the start of the file: the test's user-block cases hold both to that) */
    hsize_t ub = 0;
    if (ok && ((fcpl = H5Fget_create_plist(f->file)) < 0 || H5Pget_userblock(fcpl, &ub) < 0))
        ok = 0;
    if (ok && (d->fd = open(f->path, O_RDONLY | O_CLOEXEC)) < 0)
        ok = 0;
    if (fcpl >= 0)
        H5Pclose(fcpl);
    if (pl >= 0)
        H5Pclose(pl);
    if (t >= 0)
        H5Tclose(t);
    d->chunked = lay == H5D_CHUNKED;
    d->userblock = (int64_t)ub;
    d->ok = ok;
    if (!ok && d->fd >= 0)
        close(d->fd);
    if (!ok)
        d->fd = -1;
}

void xray_direct_close(xray_file *f) {
    if (f->direct.ok && f->direct.fd >= 0) /* a zeroed xray_file holds fd 0, not its own */
        close(f->direct.fd);
    f->direct.fd = -1;
    f->direct.ok = 0;
}

/* All of @p n bytes at @p off, or -1 with errno (0 when the file ends first). */
static int read_all(int fd, void *p, size_t n, int64_t off) {
    char *c = p;
    while (n > 0) {
        const ssize_t r = pread(fd, c, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            errno = 0;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
        off += r;
    }
    return 0;
}

/* @p n stored elements at @p src of type @p type as floats (the casts libhdf5's conversion
 * makes). */
static void convert(int type, const void *src, int64_t n, float *out) {
    switch (type) {
    case DT_F32: memcpy(out, src, (size_t)n * sizeof *out); break;
#define CONV(T)                                                                                    \
    for (int64_t i = 0; i < n; i++) {                                                              \
        T v;                                                                                       \
        memcpy(&v, (const char *)src + i * (int64_t)sizeof v, sizeof v);                           \
        out[i] = (float)v;                                                                         \
    }                                                                                              \
    break;
    case DT_I8: CONV(int8_t)
    case DT_U8: CONV(uint8_t)
    case DT_I16: CONV(int16_t)
    case DT_U16: CONV(uint16_t)
    case DT_I32: CONV(int32_t)
    case DT_U32: CONV(uint32_t)
#undef CONV
    }
}

/* The error of a block whose bytes could not all be read. */
static int io_error(const xray_file *f, int64_t y0, int64_t y1, int err) {
    return tide_error(TIDE_E_IO, "%s: dataset %s: rows %lld..%lld cannot be read: %s", f->path,
                      f->info.cube, (long long)y0, (long long)y1 - 1,
                      err ? strerror(err) : "the file ends inside the dataset");
}

/* Contiguous storage: every (frame, row) segment of the block is one pread. */
static int read_contiguous(xray_file *f, int64_t y0, int64_t y1, int64_t x0, int64_t x1,
                           float *buf) {
    const xray_direct *d = &f->direct;
    const int64_t F = f->info.nframes, ny = f->info.ny, nx = f->info.nx;
    const int64_t h = y1 - y0, w = x1 - x0, es = d->esize;
    int bad = 0, err = 0;
#pragma omp parallel reduction(| : bad)
    {
        char *row = d->type == DT_F32 ? NULL : malloc((size_t)(w * es));
        if (d->type != DT_F32 && !row) {
            bad = 1;
#pragma omp atomic write
            err = ENOMEM;
        }
#pragma omp for schedule(static)
        for (int64_t q = 0; q < F * h; q++) {
            if (bad)
                continue;
            const int64_t fr = q / h, y = y0 + q % h;
            const int64_t off = (int64_t)d->base + ((fr * ny + y) * nx + x0) * es;
            float *out = buf + q * w;
            if (read_all(d->fd, row ? (void *)row : (void *)out, (size_t)(w * es), off)) {
                bad = 1;
#pragma omp atomic write
                err = errno;
            } else if (row)
                convert(d->type, row, w, out);
        }
        free(row);
    }
    return bad ? io_error(f, y0, y1, err) : 0;
}

/* One chunk of the grid that a block meets, and where its bytes are. */
typedef struct chunk_job {
    hsize_t at[3]; /* the chunk's first element (frame, row, column) */
    haddr_t addr;  /* HADDR_UNDEF: never written (the fill value) */
    hsize_t size;
} chunk_job;

/* Chunked storage: the chunks the block meets are located on this thread (libhdf5), then read
 * whole and cut into the block by the team, one chunk a task. */
static int read_chunked(xray_file *f, int64_t y0, int64_t y1, int64_t x0, int64_t x1, float *buf) {
    const xray_direct *d = &f->direct;
    const int64_t F = f->info.nframes, h = y1 - y0, w = x1 - x0, es = d->esize;
    const int64_t cf = (int64_t)d->chunk[0], cy = (int64_t)d->chunk[1], cx = (int64_t)d->chunk[2];
    const int64_t nf = (F + cf - 1) / cf, ny = (y1 - 1) / cy - y0 / cy + 1,
                  nxc = (x1 - 1) / cx - x0 / cx + 1, nj = nf * ny * nxc;
    const int64_t cbytes = cf * cy * cx * es;
    chunk_job *jobs = malloc((size_t)nj * sizeof *jobs);
    if (!jobs)
        return tide_error(TIDE_E_NOMEM, "%s: %lld chunks", f->path, (long long)nj);
    for (int64_t j = 0; j < nj; j++) {
        chunk_job *c = &jobs[j];
        c->at[0] = (hsize_t)((j / (ny * nxc)) * cf);
        c->at[1] = (hsize_t)((y0 / cy + (j / nxc) % ny) * cy);
        c->at[2] = (hsize_t)((x0 / cx + j % nxc) * cx);
        unsigned mask = 0;
        if (H5Dget_chunk_info_by_coord(f->cube, c->at, &mask, &c->addr, &c->size) < 0) {
            free(jobs);
            return tide_error(TIDE_E_IO, "%s: dataset %s: chunk at %llu,%llu,%llu not found",
                              f->path, f->info.cube, (unsigned long long)c->at[0],
                              (unsigned long long)c->at[1], (unsigned long long)c->at[2]);
        }
        if (c->addr != HADDR_UNDEF && (int64_t)c->size != cbytes) {
            free(jobs);
            return tide_error(
                TIDE_E_FORMAT, "%s: dataset %s: chunk at %llu,%llu,%llu holds %llu bytes, not %lld",
                f->path, f->info.cube, (unsigned long long)c->at[0], (unsigned long long)c->at[1],
                (unsigned long long)c->at[2], (unsigned long long)c->size, (long long)cbytes);
        }
    }
    int bad = 0, err = 0;
#pragma omp parallel reduction(| : bad)
    {
        char *raw = malloc((size_t)cbytes);
        if (!raw) {
            bad = 1;
#pragma omp atomic write
            err = ENOMEM;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t j = 0; j < nj; j++) {
            const chunk_job *c = &jobs[j];
            if (bad)
                continue;
            if (c->addr != HADDR_UNDEF &&
                read_all(d->fd, raw, (size_t)cbytes, d->userblock + (int64_t)c->addr)) {
                bad = 1;
#pragma omp atomic write
                err = errno;
                continue;
            }
            const int64_t f0 = (int64_t)c->at[0], ya = (int64_t)c->at[1], xa = (int64_t)c->at[2];
            const int64_t fe = f0 + cf < F ? f0 + cf : F;
            const int64_t ys = ya > y0 ? ya : y0, ye = ya + cy < y1 ? ya + cy : y1;
            const int64_t xs = xa > x0 ? xa : x0, xe = xa + cx < x1 ? xa + cx : x1;
            for (int64_t fr = f0; fr < fe; fr++)
                for (int64_t y = ys; y < ye; y++) {
                    float *out = buf + (fr * h + (y - y0)) * w + (xs - x0);
                    if (c->addr == HADDR_UNDEF) {
                        for (int64_t x = 0; x < xe - xs; x++)
                            out[x] = d->fill;
                        continue;
                    }
                    const int64_t e = (((fr - f0) * cy + (y - ya)) * cx + (xs - xa));
                    convert(d->type, raw + e * es, xe - xs, out);
                }
        }
        free(raw);
    }
    free(jobs);
    return bad ? io_error(f, y0, y1, err) : 0;
}

int xray_direct_read(xray_file *f, int64_t y0, int64_t y1, int64_t x0, int64_t x1, float *buf) {
    return f->direct.chunked ? read_chunked(f, y0, y1, x0, x1, buf)
                             : read_contiguous(f, y0, y1, x0, x1, buf);
}
