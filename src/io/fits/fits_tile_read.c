/* fits_tile_read.c — tide_fits_tile_read_pixels: the pixels of a tile-compressed image read
 * by tide's own decoder (tile_decode.c) in place of cfitsio's fits_read_pixll, from the raw
 * BINTABLE header and data unit read with pread. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fits_tile_read.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "tide/timer.h"
#include "fits_tiles.h"
#include "tile_decode.h"

#define CARD 80

int tide_fits_pread_full(int fd, void *buf, size_t n, int64_t off) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + (int64_t)got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* The raw cards from @p headstart to the END card (before @p datastart). */
static int read_raw_header(int fd, int64_t headstart, int64_t datastart, tide_header *raw) {
    int64_t n = datastart - headstart;
    if (n <= 0 || n % CARD || n > ((int64_t)1 << 26))
        return 1;
    char *buf = malloc((size_t)n + 1); /* tide_header_parse reads a card as a string */
    if (!buf)
        return 1;
    int st = tide_fits_pread_full(fd, buf, (size_t)n, headstart) ? 1 : 0;
    buf[n] = 0;
    int ncards = 0;
    while (!st && (int64_t)ncards * CARD < n && memcmp(buf + ncards * CARD, "END     ", 8))
        ncards++;
    if (!st && tide_header_parse(raw, buf, ncards))
        st = 1;
    free(buf);
    return st;
}

/* Read the current HDU of @p src (HDU @p hdu, the file open on @p fd) as a compressed image
 * tide decodes: layout and keys into @p ti, the data unit into *data. With @p device, only an
 * image the device decodes (any other returns 1 before its data unit is read: the host read
 * that follows reads it): for RICE_1 (tide_tile_rice_file_to_device) only the unit's table,
 * the heap being read chunk by chunk by the device decode itself, beside the decoding; for
 * GZIP (tide_tile_inflate_to_device) the whole unit. 0, 1 (not one tide decodes, or not the
 * file cfitsio opened), or a negative TIDE_E_*. */
static int load_current(tide_fits_src *src, int hdu, int fd, tide_tile_image *ti, uint8_t **data,
                        int device) {
    fitsfile *f = src->f;
    int cst = 0;
    char url[FLEN_FILENAME] = "";
    *data = NULL;
    if (src->file_size < 0 || src->section || fits_url_type(f, url, &cst) ||
        strcmp(url, "file://") || !fits_is_compressed_image(f, &cst)) {
        fits_clear_errmsg();
        return 1;
    }
    LONGLONG headstart = 0, datastart = 0, dataend = 0;
    if (fits_get_hduaddrll(f, &headstart, &datastart, &dataend, &cst)) {
        fits_clear_errmsg();
        return 1;
    }
    struct stat sb;
    tide_header raw;
    tide_header_init(&raw);
    int st = 1;
    if (fstat(fd, &sb) != 0 || (int64_t)sb.st_size != src->file_size ||
        read_raw_header(fd, headstart, datastart, &raw)) {
        tide_header_free(&raw);
        return 1; /* not the file cfitsio opened: let cfitsio read */
    }
    st = tide_tile_image_open(ti, fd, src->root, hdu, &raw, datastart, src->file_size);
    tide_header_free(&raw);
    if (st)
        return st;
    /* for the device: RICE_1 needs only the table here (the heap is read into the decoder's
     * page-locked ring), GZIP the whole unit (inflated on the device from there) */
    int table_only = 0;
    if (device) {
#ifdef TIDE_HAVE_CUDA
        table_only = tide_tile_rice_on_device(ti);
        if (!table_only && ti->lay.codec != CODEC_GZIP1 && ti->lay.codec != CODEC_GZIP2)
            return 1;
#else
        return 1;
#endif
    }
    const int64_t bytes = table_only ? ti->lay.naxis1 * ti->lay.naxis2 : ti->lay.data_end;
    /* from the block cache: page-locked on its first upload, no fresh pages when warm */
    *data = tide_host_alloc(bytes ? (size_t)bytes : 1);
    if (!*data)
        return tide_error(TIDE_E_NOMEM, "%s[HDU %d]: no memory for %lld bytes of tiles", src->root,
                          hdu, (long long)bytes);
    if (tide_fits_pread_full(fd, *data, (size_t)bytes, datastart)) {
        tide_host_free(*data);
        *data = NULL;
        return tide_error(TIDE_E_IO, "%s[HDU %d]: cannot read the tiles: %s", src->root, hdu,
                          errno ? strerror(errno) : "early end of file");
    }
    return 0;
}

int tide_fits_check_streams(tide_fits_src *src, int hdu) {
    fitsfile *f = src->f;
    int cst = 0;
    char url[FLEN_FILENAME] = "";
    char cmp[FLEN_VALUE] = "";
    if (!fits_is_compressed_image(f, &cst) || fits_read_key_str(f, "ZCMPTYPE", cmp, NULL, &cst) ||
        !strncmp(cmp, "HCOMPRESS", 9) || !strncmp(cmp, "PLIO", 4)) {
        fits_clear_errmsg(); /* HCOMPRESS and PLIO streams: checked by the scan already */
        return 0;
    }
    /* a gzipped file's streams were all checked by its scan (fits_scan.c) */
    if (src->file_size < 0 || fits_url_type(f, url, &cst) || strcmp(url, "file://")) {
        fits_clear_errmsg();
        return 0;
    }
    LONGLONG headstart = 0, datastart = 0, dataend = 0;
    if (fits_get_hduaddrll(f, &headstart, &datastart, &dataend, &cst))
        return tide_fits_status(cst, src->root, hdu, "cannot locate the HDU");
    int fd = open(src->root, O_RDONLY);
    if (fd < 0)
        return tide_error(TIDE_E_IO, "%s: cannot open: %s", src->root, strerror(errno));
    tide_header raw;
    tide_header_init(&raw);
    int st = read_raw_header(fd, headstart, datastart, &raw)
                 ? tide_error(TIDE_E_IO, "%s[HDU %d]: cannot read the header", src->root, hdu)
                 : tide_fits_check_tiles(fd, src->root, hdu, &raw, datastart, src->file_size);
    tide_header_free(&raw);
    close(fd);
    return st;
}

/* The current HDU's tiles loaded for a @p w x @p h image (load_current, its size checked;
 * @p device as there): 0 with *fd, *ti and *data to release with unload, 1 (not for
 * tide's decoder) or a negative TIDE_E_*, nothing to release. */
static int load_for(tide_fits_src *src, int hdu, int64_t w, int64_t h, int device, int *fd,
                    tide_tile_image **ti, uint8_t **data) {
    *data = NULL;
    *ti = NULL;
    if ((*fd = open(src->root, O_RDONLY)) < 0)
        return 1;
    *ti = calloc(1, sizeof **ti);
    int st = *ti ? load_current(src, hdu, *fd, *ti, data, device) : 1;
    if (!st && ((*ti)->lay.znaxis[0] != w || ((*ti)->lay.ndim > 1 ? (*ti)->lay.znaxis[1] : 1) != h))
        st = 1;
    if (st) {
        tide_host_free(*data);
        free(*ti);
        close(*fd);
    }
    return st;
}

static void unload(int fd, tide_tile_image *ti, uint8_t *data) {
    tide_host_free(data);
    free(ti);
    close(fd);
}

int tide_fits_times_on(void) {
    const char *v = getenv("TIDE_DECODE_TIMES");
    return v && !strcmp(v, "1");
}

void tide_fits_time_since(tide_ctx *ctx, const char *stage, double t0) {
    if (ctx && tide_fits_times_on())
        tide_timer_add(ctx, stage, 1e3 * (tide_now() - t0));
}

#ifdef TIDE_HAVE_CUDA
/* TIDE_GPU_TILE_DECODE=0 keeps decoding on the host threads (an A/B switch). */
static int gpu_decode_off(void) {
    const char *v = getenv("TIDE_GPU_TILE_DECODE");
    return v && !strcmp(v, "0");
}
#endif

int tide_fits_tile_read_pixels(tide_ctx *ctx, tide_fits_src *src, int hdu, tide_image *im) {
    if (im->location != TIDE_HOST || im->stride != im->width)
        return 1;
    int fd;
    tide_tile_image *ti;
    uint8_t *data;
    int st = load_for(src, hdu, im->width, im->height, 0, &fd, &ti, &data);
    if (st)
        return st;
#ifdef TIDE_HAVE_CUDA
    /* RICE_1 on the device (bit for bit the CPU twin, test_gpu_tile_decode on the H200, memcheck
     * clean) */
    if (!st && ctx && ctx->backend == TIDE_BACKEND_CUDA && !gpu_decode_off()) {
        int g = tide_tile_decode_cuda(ctx, ti, data, im->pix);
        if (g <= 0) /* done (2: skip the CPU twin) or failed */
            st = g ? g : 2;
    }
#endif
    if (!st)
        st = tide_tile_decode_cpu(ti, data, im->pix, ctx && ctx->threads > 0 ? ctx->threads : 0);
    if (st == 2)
        st = 0;
    unload(fd, ti, data);
    return st;
}

int tide_fits_tile_read_device(tide_ctx *ctx, tide_fits_src *src, int hdu, int64_t w, int64_t h,
                               tide_image *im) {
    memset(im, 0, sizeof *im);
#ifdef TIDE_HAVE_CUDA
    if (!ctx || ctx->backend != TIDE_BACKEND_CUDA || gpu_decode_off())
        return 1;
    int fd;
    tide_tile_image *ti;
    uint8_t *data;
    double t0 = tide_now();
    int st = load_for(src, hdu, w, h, 1, &fd, &ti, &data);
    if (st)
        return st;
    tide_fits_time_since(ctx, "read.load", t0); /* raw header, layout, the table's rows */
    t0 = tide_now();
    st = tide_image_alloc(ctx, im, w, h, TIDE_DEVICE, TIDE_IMAGE_MASK | TIDE_IMAGE_UNINIT);
    tide_fits_time_since(ctx, "read.alloc", t0);
    if (!st)
        st = ti->lay.codec == CODEC_GZIP1 || ti->lay.codec == CODEC_GZIP2
                 ? tide_tile_inflate_to_device(ctx, ti, data, im->pix, im->mask)
                 : tide_tile_rice_file_to_device(ctx, ti, data, im->pix, im->mask);
    if (st == 2) /* a tile for the CPU twin: the host read decodes it (or names it) */
        st = 1;
    if (st)
        tide_image_free(ctx, im);
    unload(fd, ti, data);
    return st;
#else
    (void)ctx, (void)src, (void)hdu, (void)w, (void)h;
    return 1;
#endif
}

int tide_fits_tile_load(const char *path, tide_tile_image **ti, uint8_t **data) {
    *ti = NULL;
    *data = NULL;
    tide_fits_src src;
    int st = tide_fits_open(path, &src);
    if (st)
        return st;
    int fd = open(src.root, O_RDONLY);
    st = fd < 0 ? tide_error(TIDE_E_IO, "%s: cannot open: %s", path, strerror(errno)) : 1;
    for (int i = 1; st == 1; i++) {
        int type = 0, cst = 0;
        if (fits_movabs_hdu(src.f, i, &type, &cst)) {
            fits_clear_errmsg();
            st = tide_error(TIDE_E_NOTFOUND, "%s: no compressed image that tide decodes", path);
            break;
        }
        if (type != IMAGE_HDU || !fits_is_compressed_image(src.f, &cst))
            continue;
        *ti = calloc(1, sizeof **ti);
        st = *ti ? load_current(&src, i - 1, fd, *ti, data, 0)
                 : tide_error(TIDE_E_NOMEM, "%s: out of memory", path);
        if (st) {
            free(*ti);
            *ti = NULL;
        }
        if (st == 1)
            continue;
        if (!st) /* the path outlives the source: keep the caller's */
            (*ti)->lay.path = path;
    }
    if (fd >= 0)
        close(fd);
    tide_fits_close(&src);
    return st;
}
