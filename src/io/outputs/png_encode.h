/* png_encode.h — 8-bit greyscale PNG encoding with the zlib stream compressed in parallel
 * (png_encode.c). Internal to the library: tide_png_* (png.h) write through it. */
#ifndef TIDE_IO_PNG_ENCODE_H
#define TIDE_IO_PNG_ENCODE_H
#include <stdint.h>
#include <stdio.h>

/** Write @p h rows of @p w grey bytes (row 0 at the top, contiguous) as a PNG to the open
 *  file @p f, with the Sub filter and zlib's fastest level (its run-length strategy from 4 MB
 *  of rows), the deflate stream cut into pieces of about a megabyte that up to @p threads
 *  threads compress at once. @p path names the file in errors. 0, or TIDE_E_IO /
 *  TIDE_E_NOMEM / TIDE_E_INVAL with the detail set. */
int tide_png_encode_grey(FILE *f, const char *path, const unsigned char *rows, int64_t w, int64_t h,
                         int threads);

#endif
