/* fuzz_fits_image.c — libFuzzer harness: tide_fits_read_image (with its header) on any bytes,
 * the reader every command that takes a FITS frame goes through (plain and scaled BITPIX,
 * BLANK, extensions, truncation, tide's fast paths). */
#include "fuzz_common.h"
#include "tide/fits.h"
#include "tide/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_path("image", ".fits");
    if (fuzz_write(path, data, size))
        return 0;
    tide_image im;
    memset(&im, 0, sizeof im);
    tide_header hdr;
    tide_header_init(&hdr);
    if (tide_fits_read_image(NULL, path, &im, &hdr) == 0)
        tide_image_free(NULL, &im);
    tide_header_free(&hdr);
    tide_error_clear();
    return 0;
}
