/* fits_tile_bands.c — tide_fits_tile_bands: cfitsio's decoders run on several threads, one
 * handle each, over bands of whole tile rows (fits_tile_bands.h). */
#include "fits_tile_bands.h"

#include <fcntl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tide/status.h"

int64_t tide_fits_band_rows(fitsfile *f, int64_t width, int64_t height, int threads) {
    long long tile_rows = 1;
    int cst = 0;
    if (fits_read_key(f, TLONGLONG, "ZTILE2", &tile_rows, NULL, &cst) || tile_rows < 1)
        tile_rows = 1;
    fits_clear_errmsg();
    /* about 1 Mpixel a band, and at least 4 bands a thread where the tiles allow */
    int64_t rows = tile_rows * (1 + (1 << 20) / (tile_rows * width + 1));
    int64_t tile_bands = (height + tile_rows - 1) / tile_rows, per = 4 * (int64_t)threads;
    int64_t spread = tile_rows * ((tile_bands + per - 1) / per);
    if (threads > 1 && spread < rows)
        rows = spread;
    return rows > height ? height : rows;
}

int tide_fits_tile_bands(tide_ctx *ctx, const tide_fits_src *src, int hdu, int64_t height,
                         tide_fits_band_fn fn, void *arg) {
    int cst = 0, bitpix = 0, naxis = 0;
    LONGLONG nax[2] = {1, 1};
    if (src->file_size < 0 || src->section || !fits_is_compressed_image(src->f, &cst) ||
        fits_get_img_paramll(src->f, 2, &bitpix, &naxis, nax, &cst)) {
        fits_clear_errmsg();
        return 1;
    }
    int nt = ctx && ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
    const int64_t rows = tide_fits_band_rows(src->f, nax[0], height, nt);
    const int64_t nbands = (height + rows - 1) / rows;
    if (nt > nbands)
        nt = (int)nbands;
    if (nt < 2)
        return 1;
    int64_t bad = INT64_MAX;
    int bad_status = 0, open_failed = 0;
#pragma omp parallel num_threads(nt)
    {
        fitsfile *f = NULL;
        int fd = open(src->root, O_RDONLY), st = 0, type = 0;
        char name[64];
        snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
        if (fd < 0 || fits_open_file(&f, name, READONLY, &st) ||
            fits_movabs_hdu(f, hdu + 1, &type, &st)) {
#pragma omp atomic write
            open_failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t b = 0; b < nbands; b++) {
            int failed;
#pragma omp atomic read
            failed = open_failed;
            if (failed || b > __atomic_load_n(&bad, __ATOMIC_RELAXED))
                continue;
            int64_t y0 = b * rows, nr = height - y0 < rows ? height - y0 : rows;
            int s = fn(f, y0, nr, arg);
            if (s) {
#pragma omp critical(tide_fits_tile_bands)
                if (b < bad) {
                    bad = b;
                    bad_status = s;
                }
            }
        }
        int cs = 0;
        if (f)
            fits_close_file(f, &cs);
        if (fd >= 0)
            close(fd);
    }
    fits_clear_errmsg();
    if (open_failed)
        return 1; /* read through the caller's handle instead */
    if (bad_status)
        return tide_fits_status(bad_status, src->root, hdu,
                                bad_status == END_OF_FILE ? "truncated: cannot read the pixels"
                                                          : "cannot read the pixels");
    return 0;
}
