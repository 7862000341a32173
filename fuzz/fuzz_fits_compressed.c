/* fuzz_fits_compressed.c — libFuzzer harness: tile-compressed images (RICE_1, GZIP_1/2,
 * HCOMPRESS_1, PLIO_1 in a BINTABLE): the file's inventory, then tide_fits_read_image on each
 * compressed HDU it lists (at most 4), as `tide stats FILE[N]` would. Seeds: fpack/astropy
 * files of every algorithm (fuzz/make-seeds.py). */
#include "fuzz_common.h"
#include "tide/fits.h"
#include "tide/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_path("cmp", ".fits");
    if (fuzz_write(path, data, size))
        return 0;
    tide_fits_hdu *hdus = NULL;
    int n = 0;
    if (tide_fits_inventory(path, &hdus, &n) == 0) {
        int tried = 0;
        for (int i = 0; i < n && tried < 4; i++) {
            if (hdus[i].kind != TIDE_HDU_COMPRESSED)
                continue;
            tried++;
            char spec[600];
            snprintf(spec, sizeof spec, "%s[%d]", path, hdus[i].index);
            tide_image im;
            memset(&im, 0, sizeof im);
            if (tide_fits_read_image(NULL, spec, &im, NULL) == 0)
                tide_image_free(NULL, &im);
        }
    }
    free(hdus);
    tide_error_clear();
    return 0;
}
