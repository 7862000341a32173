/* fuzz_fits_header.c — libFuzzer harness: what `tide info FILE` reads (src/cli/cmd_info.c):
 * the HDU inventory, the header of the image tide would read and its size, the header of
 * every HDU (at most 8), and the WCS of the image's header with its summary. */
#include "fuzz_common.h"
#include "tide/fits.h"
#include "tide/wcs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_path("header", ".fits");
    if (fuzz_write(path, data, size))
        return 0;
    tide_fits_hdu *hdus = NULL;
    int n = 0;
    if (tide_fits_inventory(path, &hdus, &n) == 0) {
        for (int i = 0; i < n && i < 8; i++) {
            tide_header h;
            tide_header_init(&h);
            tide_fits_read_hdu_header(path, hdus[i].index, &h);
            tide_header_free(&h);
        }
        tide_header hdr;
        int hdu = -1;
        int64_t w = 0, ht = 0;
        if (tide_fits_read_image_header(path, &hdr, &hdu, &w, &ht) == 0) {
            tide_wcs *wcs = NULL;
            if (tide_wcs_from_header(&hdr, path, &wcs) == 0) {
                tide_wcs_summary s;
                tide_wcs_summarize(wcs, w, ht, &s);
            }
            tide_wcs_free(wcs);
        }
        tide_header_free(&hdr);
    }
    free(hdus);
    tide_error_clear();
    return 0;
}
