/* fits_tiles_codec.c — bounded checks of GZIP and PLIO tile streams, done before cfitsio
 * decodes them (see fits_tiles.h for what each covers; HCOMPRESS is hcompress_check.c). */
#include "fits_tiles_codec.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tide/status.h"

int tide_tile_check_gzip(const uint8_t *in, size_t nin, int64_t npix, const int *sizes,
                         int nsizes) {
    uint64_t maxout = 0;
    for (int k = 0; k < nsizes; k++)
        if ((uint64_t)npix * (uint64_t)sizes[k] > maxout)
            maxout = (uint64_t)npix * (uint64_t)sizes[k];
    /* A fixed window: the count of inflated bytes is what matters, not the bytes. */
    enum { WINDOW = 1 << 16 };
    unsigned char *window = malloc(WINDOW);
    if (!window)
        return tide_error(TIDE_E_NOMEM, "gzip: out of memory");
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    /* 15 + 16: a gzip wrapper only, as cfitsio's uncompress2mem_from_mem asks. */
    if (inflateInit2(&zs, 15 + 16) != Z_OK) {
        free(window);
        return tide_error(TIDE_E_NOMEM, "gzip: cannot start zlib");
    }
    const uint8_t *p = in;
    size_t left = nin;
    uint64_t total = 0;
    int zst = Z_OK;
    while (zst != Z_STREAM_END) {
        if (zs.avail_in == 0) {
            size_t n = left > (size_t)1 << 30 ? (size_t)1 << 30 : left;
            zs.next_in = (Bytef *)p;
            zs.avail_in = (uInt)n;
            p += n;
            left -= n;
        }
        zs.next_out = window;
        zs.avail_out = WINDOW;
        zst = inflate(&zs, Z_NO_FLUSH);
        total += WINDOW - zs.avail_out;
        if (total > maxout) {
            inflateEnd(&zs);
            free(window);
            return tide_error(TIDE_E_FORMAT,
                              "gzip stream inflates to more than the tile's %llu bytes",
                              (unsigned long long)maxout);
        }
        if (zst == Z_STREAM_END)
            break;
        if (zst == Z_BUF_ERROR && zs.avail_in == 0 && left == 0) {
            inflateEnd(&zs);
            free(window);
            return tide_error(TIDE_E_FORMAT,
                              "gzip stream of %zu bytes is cut short (%llu bytes inflated)", nin,
                              (unsigned long long)total);
        }
        if (zst != Z_OK && zst != Z_BUF_ERROR) {
            const char *why = zs.msg ? zs.msg : "corrupt data";
            char msg[128];
            strncpy(msg, why, sizeof msg - 1);
            msg[sizeof msg - 1] = 0;
            inflateEnd(&zs);
            free(window);
            return tide_error(TIDE_E_FORMAT, "gzip stream is corrupt after %llu bytes: %s",
                              (unsigned long long)total, msg);
        }
    }
    inflateEnd(&zs);
    free(window);
    for (int k = 0; k < nsizes; k++)
        if (total == (uint64_t)npix * (uint64_t)sizes[k])
            return TIDE_OK;
    return tide_error(TIDE_E_FORMAT,
                      "gzip stream inflates to %llu bytes, not %lld pixels of %d bytes",
                      (unsigned long long)total, (long long)npix, sizes[nsizes - 1]);
}

static int be16(const uint8_t *b) {
    return (int16_t)(((unsigned)b[0] << 8) | b[1]);
}

int tide_tile_check_plio(const uint8_t *in, size_t nshort) {
    if (nshort < 3)
        return tide_error(TIDE_E_FORMAT, "PLIO line list of %zu shorts (at least 3 needed)",
                          nshort);
    /* The header, as pl_l2pi reads it (1-based words there): an old-style list gives its
     * length in word 3 and starts at word 4; a new-style one (word 3 <= 0) gives its length
     * in words 4 and 5 (15 bits each) and its header length in word 2. */
    int64_t len, first;
    if (be16(in + 4) > 0) {
        len = be16(in + 4);
        first = 4;
    } else {
        if (nshort < 7)
            return tide_error(TIDE_E_FORMAT,
                              "PLIO line list of %zu shorts is shorter than its header", nshort);
        len = (int64_t)be16(in + 8) * 32768 + be16(in + 6); /* may be negative: no shift */
        first = (int64_t)be16(in + 2) + 1;
    }
    if (len > (int64_t)nshort)
        return tide_error(TIDE_E_FORMAT, "PLIO line list says %lld shorts, the tile holds %zu",
                          (long long)len, nshort);
    if (len <= 0)
        return TIDE_OK; /* pl_l2pi reads nothing more */
    if (first < 1)
        return tide_error(TIDE_E_FORMAT, "PLIO line list starts at word %lld", (long long)first);
    /* Instruction 3 (set a high value) takes the next word as its operand. */
    for (int64_t ip = first; ip <= len; ip++) {
        int v = be16(in + 2 * (ip - 1));
        if (v / 4096 == 3) {
            if (ip + 1 > (int64_t)nshort)
                return tide_error(TIDE_E_FORMAT,
                                  "PLIO line list's last instruction needs a word past its "
                                  "%zu shorts",
                                  nshort);
            ip++;
        }
    }
    return TIDE_OK;
}
