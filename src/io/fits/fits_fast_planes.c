/* fits_fast_planes.c — an image's data unit converted to big-endian by several threads.
 *
 * cfitsio converts pixels through its small buffers on one thread (~0.7 GB/s here): 240 ms
 * for a 4096² difference with its mask and variance, more than the GPU run that made it.
 * Here the values are converted in blocks by all threads (in cache) and each block goes to
 * cfitsio as raw bytes at the data unit's position (ffmbyt/ffpbyt of fitsio2.h; large
 * writes bypass its buffers), so cfitsio still owns the file's layout, fill and close. The
 * bytes are what fits_write_pixll writes: float32 swapped unchanged (NaN payloads
 * included); uint16 stored as BITPIX 16 with BZERO 32768, i.e. v - 32768 as a
 * two's-complement int16, which is v with its top bit flipped (FITS standard 4.0, sec.
 * 5.2.5). FITS data are big-endian (sec. 5.1).
 *
 * Every output is flushed to disk before it is renamed into place (outfile.h), and for a
 * 4096² difference with its planes that fsync was ~70 ms of waiting for the disk after the
 * last byte was written. Here the disk is set to work on each block as soon as it has been
 * written (Linux's sync_file_range, which starts the write-out and does not wait for it), so
 * the disk writes while the rest is converted and written and the fsync finds little left;
 * and each block is converted by the other threads while the one before is being written. */
#ifdef __linux__
#define _GNU_SOURCE /* sync_file_range */
#endif
#include <fcntl.h>
#include <fitsio2.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fits_fast.h"
#include "tide/status.h"

enum { BLOCK_VALUES = 1 << 21 }; /* values converted per pass: 8 MiB of float32 */

static void to_be16_bzero(unsigned char *restrict dst, const uint16_t *restrict src, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const uint16_t v = __builtin_bswap16((uint16_t)(src[i] ^ 0x8000u));
        memcpy(dst + 2 * i, &v, 2);
    }
}

enum { SLICE = 1 << 15 }; /* values converted by one thread at a time */

/* Slices first, first + step, ... of the @p m values from @p i0 of @p data into @p dst. */
static void convert_slices(unsigned char *dst, const void *data, int64_t i0, int64_t m, int u16,
                           int64_t first, int64_t step) {
    const int es = u16 ? 2 : 4;
    for (int64_t a = first * SLICE; a < m; a += step * SLICE) {
        const int64_t c = a + SLICE < m ? SLICE : m - a;
        if (u16)
            to_be16_bzero(dst + a * es, (const uint16_t *)data + i0 + a, c);
        else
            tide_fits_put_be4(dst + a * es, (const unsigned char *)data + 4 * (i0 + a), c);
    }
}

/* Write @p bytes of @p buf at cfitsio's position, then start their write-out (@p fd >= 0). */
static void write_block(fitsfile *f, int fd, const unsigned char *buf, int64_t bytes, int *cst) {
    ffpbyt(f, (LONGLONG)bytes, (void *)buf, cst); /* consecutive: the position advances */
#ifdef __linux__
    if (fd >= 0 && !*cst) /* every dirty page of the file not yet on its way (no wait) */
        (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd;
#endif
}

int tide_fits_fast_write_plane(fitsfile *f, const char *path, const void *data, int64_t n,
                               int u16) {
    const int es = u16 ? 2 : 4;
    const int64_t nblk = n < BLOCK_VALUES ? n : BLOCK_VALUES;
    const int64_t nb = (n + BLOCK_VALUES - 1) / BLOCK_VALUES;
    /* two blocks: one being written while the next is converted */
    unsigned char *buf[2] = {malloc((size_t)(nblk > 0 ? nblk : 1) * (size_t)es), NULL};
    if (buf[0] && nb > 1)
        buf[1] = malloc((size_t)nblk * (size_t)es);
    if (!buf[0] || (nb > 1 && !buf[1])) {
        free(buf[0]);
        return tide_error(TIDE_E_NOMEM, "%s: out of memory converting the image", path);
    }
    int cst = 0;
    LONGLONG head = 0, start = 0, end = 0;
    fits_get_hduaddrll(f, &head, &start, &end, &cst);
    if (!cst)
        ffmbyt(f, start, IGNORE_EOF, &cst);
    /* A descriptor of the file for starting its write-out: cfitsio's own is not ours. */
    int fd = -1;
#ifdef __linux__
    char name[FLEN_FILENAME];
    int nst = 0;
    if (!cst && n > BLOCK_VALUES && !fits_file_name(f, name, &nst) && name[0])
        fd = open(name, O_RDONLY | O_CLOEXEC);
#endif
    int nt = omp_get_max_threads();
    nt = nt > 16 ? 16 : nt;
    { /* the first block by every thread */
        const int64_t ns = (nblk + SLICE - 1) / SLICE;
#pragma omp parallel for num_threads(nt) schedule(static) if (nblk >= 4 * SLICE)
        for (int64_t k = 0; k < ns; k++)
            convert_slices(buf[0], data, 0, nblk, u16, k, ns);
    }
    /* Then block b written by one thread while the others convert block b + 1: the byte
     * swaps (a tenth of the write's time a thread) leave the chain of writes. */
    for (int64_t b = 0; b < nb && !cst; b++) {
        const unsigned char *cur = buf[b & 1];
        unsigned char *next = buf[(b + 1) & 1];
        const int64_t m = n - b * BLOCK_VALUES < BLOCK_VALUES ? n - b * BLOCK_VALUES : BLOCK_VALUES;
        const int64_t j0 = (b + 1) * BLOCK_VALUES;
        const int64_t mn = b + 1 < nb ? (n - j0 < BLOCK_VALUES ? n - j0 : BLOCK_VALUES) : 0;
        if (mn > 0 && nt > 1) {
#pragma omp parallel num_threads(nt)
            {
                const int t = omp_get_thread_num(), nth = omp_get_num_threads();
                if (t == 0)
                    write_block(f, fd, cur, m * es, &cst);
                if (nth == 1)
                    convert_slices(next, data, j0, mn, u16, 0, 1);
                else if (t > 0)
                    convert_slices(next, data, j0, mn, u16, t - 1, nth - 1);
            }
        } else {
            write_block(f, fd, cur, m * es, &cst);
            if (mn > 0)
                convert_slices(next, data, j0, mn, u16, 0, 1);
        }
    }
    if (fd >= 0)
        close(fd);
    free(buf[0]);
    free(buf[1]);
    if (cst)
        return tide_fits_status(cst, path, tide_fits_cur_hdu(f), "cannot write the image data");
    return TIDE_OK;
}
