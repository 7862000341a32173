/* tile_write.c — tide_tile_write_hdu: coded tiles written as a compressed-image HDU, laid out
 * as fpack lays out its RICE_1 HDUs: a BINTABLE of one row per tile with COMPRESSED_DATA
 * (1PB), for floats also ZSCALE, ZZERO (1D) and GZIP_COMPRESSED_DATA (1PB, the tiles that
 * could not be quantized: their IEEE values big-endian, gzipped), and fpack's keywords in
 * fpack's order (ZIMAGE, ZTILEn, ZCMPTYPE, ZBLANK, ZNAMEn/ZVALn, EXTNAME, ZSIMPLE or
 * ZTENSION, ZBITPIX, ZNAXISn, ZQUANTIZ, ZDITHER0). */
#include <libdeflate.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fits_fast.h"
#include "fits_internal.h"
#include "tide/status.h"
#include "tile_encode.h"

/* The gzip member of tile @p k's IEEE values (big-endian, as cfitsio's lossless float tiles
 * hold them), in *out (malloc'd) of *nout bytes. In a tile with nulls (@p nulls) every null
 * is stored as the NaN of all one bits, as cfitsio stores it. */
static int gzip_tile(const tide_tile_enc_plan *p, const float *img, int64_t k, int nulls,
                     struct libdeflate_compressor *c, uint8_t **out, size_t *nout) {
    int64_t x0, y0, tw, th;
    tide_tile_enc_shape(p, k, &x0, &y0, &tw, &th);
    const size_t n = (size_t)(tw * th);
    uint8_t *be = malloc(n * 4);
    const size_t cap = libdeflate_gzip_compress_bound(c, n * 4);
    *out = malloc(cap);
    if (!be || !*out) {
        free(be);
        free(*out);
        *out = NULL;
        return TIDE_E_NOMEM;
    }
    for (int64_t y = 0; y < th; y++)
        tide_fits_put_be4(be + (size_t)(y * tw) * 4,
                          (const unsigned char *)(img + (y0 + y) * p->stride + x0), tw);
    for (int64_t y = 0; nulls && y < th; y++)
        for (int64_t x = 0; x < tw; x++) {
            const float v = img[(y0 + y) * p->stride + x0 + x];
            if (!isfinite(v) || v == TIDE_TILE_FLOAT_NULL)
                memset(be + (size_t)(y * tw + x) * 4, 0xff, 4);
        }
    *nout = libdeflate_gzip_compress(c, be, n * 4, *out, cap);
    free(be);
    return *nout ? TIDE_OK : TIDE_E_NOMEM;
}

static int write_keys(fitsfile *f, const tide_tile_enc_plan *p, const char *extname, int primary,
                      int *cst) {
    const int flt = p->kind == TIDE_ENC_F32;
    const int zbitpix = p->kind == TIDE_ENC_U8    ? 8
                        : p->kind == TIDE_ENC_F32 ? -32
                        : p->bytepix == 2         ? 16
                                                  : 32;
    int yes = 1, naxis = 2, blank = TIDE_TILE_NULL_VALUE, bs = p->blocksize, bp = p->bytepix;
    LONGLONG t1 = p->ztile1, t2 = p->ztile2, n1 = p->width, n2 = p->height, zero = 0, one = 1;
    fits_write_key(f, TLOGICAL, "ZIMAGE", &yes, "extension contains compressed image", cst);
    fits_write_key(f, TLONGLONG, "ZTILE1", &t1, "size of tiles to be compressed", cst);
    fits_write_key(f, TLONGLONG, "ZTILE2", &t2, "size of tiles to be compressed", cst);
    fits_write_key(f, TSTRING, "ZCMPTYPE", "RICE_1", "compression algorithm", cst);
    if (flt)
        fits_write_key(f, TINT, "ZBLANK", &blank, "null value in the compressed integer array",
                       cst);
    fits_write_key(f, TSTRING, "ZNAME1", "BLOCKSIZE", "compression block size", cst);
    fits_write_key(f, TINT, "ZVAL1", &bs, "pixels per block", cst);
    fits_write_key(f, TSTRING, "ZNAME2", "BYTEPIX", "bytes per pixel (1, 2, 4, or 8)", cst);
    fits_write_key(f, TINT, "ZVAL2", &bp, "bytes per pixel (1, 2, 4, or 8)", cst);
    /* fpack's places: an image standing for the primary is named before ZSIMPLE, an
     * extension after its structural keywords (cfitsio's conversion wants ZTENSION first) */
    const char *name = extname ? extname : "COMPRESSED_IMAGE";
    if (primary) {
        fits_write_key(f, TSTRING, "EXTNAME", (void *)name, NULL, cst);
        fits_write_key(f, TLOGICAL, "ZSIMPLE", &yes, "conforms to FITS standard", cst);
    } else {
        fits_write_key(f, TSTRING, "ZTENSION", "IMAGE", "Image extension", cst);
    }
    fits_write_key(f, TINT, "ZBITPIX", (void *)&zbitpix, "array data type", cst);
    fits_write_key(f, TINT, "ZNAXIS", &naxis, "number of array dimensions", cst);
    fits_write_key(f, TLONGLONG, "ZNAXIS1", &n1, NULL, cst);
    fits_write_key(f, TLONGLONG, "ZNAXIS2", &n2, NULL, cst);
    if (primary) {
        fits_write_key(f, TLOGICAL, "ZEXTEND", &yes, NULL, cst);
    } else {
        fits_write_key(f, TLONGLONG, "ZPCOUNT", &zero, "number of random group parameters", cst);
        fits_write_key(f, TLONGLONG, "ZGCOUNT", &one, "number of random groups", cst);
    }
    if (p->kind == TIDE_ENC_U16) { /* the image's own scaling: unsigned 16-bit */
        long bzero = 32768, bscale = 1;
        fits_write_key(f, TLONG, "BSCALE", &bscale, NULL, cst);
        fits_write_key(f, TLONG, "BZERO", &bzero, NULL, cst);
    }
    if (!primary)
        fits_write_key(f, TSTRING, "EXTNAME", (void *)name, "extension name", cst);
    if (flt) {
        int d0 = p->dither0;
        fits_write_key(f, TSTRING, "ZQUANTIZ", "SUBTRACTIVE_DITHER_1",
                       "Pixel Quantization Algorithm", cst);
        fits_write_key(f, TINT, "ZDITHER0", &d0, "dithering offset when quantizing floats", cst);
    }
    return *cst;
}

int tide_tile_write_hdu(fitsfile *f, const tide_tile_encoded *e, const void *img,
                        const tide_header *hdr, const tide_header *own, const char *extname,
                        int primary, const char *path) {
    const tide_tile_enc_plan *p = &e->plan;
    const int flt = p->kind == TIDE_ENC_F32;
    char *ttype[] = {"COMPRESSED_DATA", "ZSCALE", "ZZERO", "GZIP_COMPRESSED_DATA"};
    char *tform[] = {"1PB", "1D", "1D", "1PB"};
    int cst = 0;
    if (fits_create_tbl(f, BINARY_TBL, (LONGLONG)p->ntiles, flt ? 4 : 1, ttype, tform, NULL, NULL,
                        &cst) ||
        write_keys(f, p, extname, primary, &cst))
        return tide_fits_status(cst, path, tide_fits_cur_hdu(f),
                                "cannot create the compressed image");
    const int hdu = tide_fits_cur_hdu(f);
    int st = tide_fits_put_cards(f, hdr, 1, path);
    /* tide's own cards, as they are; before the tiles, since cfitsio cannot grow a header
     * above a heap it has written */
    for (int i = 0; !st && own && i < own->ncards; i++)
        if (fits_write_record(f, own->cards[i], &cst))
            st = tide_fits_status(cst, path, hdu, "cannot write the header");
    if (st)
        return st;
    struct libdeflate_compressor *gz = NULL;
    for (int64_t k = 0; !st && k < p->ntiles; k++) {
        const tide_tile_enc_out *o = &e->out[k];
        if (o->status == TIDE_TILE_ENC_RICE) {
            fits_write_col(f, TBYTE, 1, (LONGLONG)k + 1, 1, (LONGLONG)o->nbytes,
                           e->slots + k * p->cap, &cst);
            continue;
        }
        uint8_t *z = NULL;
        size_t nz = 0;
        if (!gz && !(gz = libdeflate_alloc_compressor(6)))
            st = tide_error(TIDE_E_NOMEM, "%s[HDU %d]: no memory for gzip", path, hdu);
        if (!st && gzip_tile(p, img, k, o->has_null, gz, &z, &nz))
            st = tide_error(TIDE_E_NOMEM, "%s[HDU %d]: cannot gzip tile %lld", path, hdu,
                            (long long)k + 1);
        if (!st)
            fits_write_col(f, TBYTE, 4, (LONGLONG)k + 1, 1, (LONGLONG)nz, z, &cst);
        free(z);
        if (cst)
            break;
    }
    if (gz)
        libdeflate_free_compressor(gz);
    if (st)
        return st;
    if (!cst && flt) {
        double *zs = malloc(sizeof *zs * (size_t)p->ntiles * 2);
        if (!zs)
            return tide_error(TIDE_E_NOMEM, "%s[HDU %d]: out of memory", path, hdu);
        for (int64_t k = 0; k < p->ntiles; k++) {
            zs[k] = e->out[k].scale;
            zs[p->ntiles + k] = e->out[k].zero;
        }
        fits_write_col(f, TDOUBLE, 2, 1, 1, (LONGLONG)p->ntiles, zs, &cst);
        fits_write_col(f, TDOUBLE, 3, 1, 1, (LONGLONG)p->ntiles, zs + p->ntiles, &cst);
        free(zs);
    }
    if (cst)
        return tide_fits_status(cst, path, hdu, "cannot write the compressed tiles");
    return TIDE_OK;
}
