/* fits_tile_header.h — the header of the image a tile-compressed HDU holds, made by tide from
 * the HDU's raw BINTABLE cards, for the files whose headers cfitsio's conversion refuses
 * (astropy writes and reads some: commentary cards among the mandatory Z keywords, for one).
 * Not public. */
#ifndef TIDE_FITS_TILE_HEADER_H
#define TIDE_FITS_TILE_HEADER_H
#include "tide/header.h"

/** The image header of the compressed HDU whose raw cards are @p raw, into @p out (appended):
 *  SIMPLE = T when the HDU has ZSIMPLE, else XTENSION = ZTENSION (default 'IMAGE'); BITPIX,
 *  NAXIS and NAXISn from ZBITPIX, ZNAXIS and ZNAXISn; EXTEND from ZEXTEND, or PCOUNT / GCOUNT
 *  from ZPCOUNT / ZGCOUNT (0 and 1 by default); CHECKSUM / DATASUM from ZHECKSUM /
 *  ZDATASUM; then every other card in order, less the table's own (XTENSION, BITPIX, NAXIS*,
 *  PCOUNT, GCOUNT, TFIELDS, T* of columns, THEAP, the table's CHECKSUM / DATASUM) and the
 *  compression's (ZIMAGE, ZCMPTYPE, ZTILEn, ZNAMEn, ZVALn, ZQUANTIZ, ZDITHER0, ZBLANK,
 *  ZSCALE, ZZERO, ZMASKCMP, and EXTNAME = 'COMPRESSED_IMAGE'), as cfitsio's
 *  imcomp_copy_comp2img and astropy's CompImageHeader convert it. 0, or TIDE_E_FORMAT
 *  when a mandatory Z keyword is missing or not an integer. */
int tide_fits_tile_header(const tide_header *raw, const char *path, int hdu, tide_header *out);

#endif
