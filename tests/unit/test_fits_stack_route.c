/* test_fits_stack_route.c — where the stack reader sends each spec of a device stack
 * (tide_fits_device_route, io/fits/fits_stack.h), checked on the CPU: files with tide's own
 * planes (whatever their codec) and a section go to the host decode, fpack's RICE_1 and
 * GZIP_2 to the GPU decoder, plain data units (a scaled int16 frame with BLANK, a mosaic
 * CCD, a plain float frame) to cuFile's
 * path; for those, the raw big-endian bytes at the unit's offset, converted value by value
 * with fits_fast_math.h as the device kernel converts them, give the host read's pixels and
 * no-data mask bit for bit; a missing file gives the read's error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stack_files.h"
#include "io/fits/fits_stack.h"
#include "tide/tide.h"
#include "tide_test.h"

/* The unit's bytes converted as fits_plain_cuda.cu converts them, against a host read. */
static int same_as_read(const char *spec, const tide_fits_plain_unit *u) {
    const int64_t n = u->width * u->height, esize = (u->bitpix < 0 ? -u->bitpix : u->bitpix) / 8;
    unsigned char *raw = malloc((size_t)(n * esize));
    FILE *f = fopen(u->path, "rb");
    int ok = raw && f && !fseek(f, (long)u->offset, SEEK_SET) &&
             fread(raw, (size_t)esize, (size_t)n, f) == (size_t)n;
    tide_image ref;
    ok = ok && !tide_fits_read_image(NULL, spec, &ref, NULL);
    for (int64_t i = 0; ok && i < n; i++) {
        const unsigned char *b = raw + esize * i;
        int null = 0;
        float v;
        if (esize == 4) {
            const uint32_t w =
                (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
            v = u->bitpix < 0 ? tide_fits_f32_value(w, &null)
                              : tide_fits_int_value(&u->ic, (int32_t)w, &null);
        } else if (esize == 2) {
            v = tide_fits_int_value(&u->ic, (int16_t)(uint16_t)((unsigned)b[0] << 8 | b[1]), &null);
        } else {
            v = tide_fits_int_value(&u->ic, b[0], &null);
        }
        const uint16_t m = null ? TIDE_MASK_NODATA : 0;
        if (memcmp(&v, &ref.pix[i], sizeof v) || m != ref.mask[i]) {
            fprintf(stderr, "%s: pixel %lld: %g/%u, read %g/%u\n", spec, (long long)i, v, m,
                    ref.pix[i], ref.mask[i]);
            ok = 0;
        }
    }
    if (f)
        fclose(f);
    free(raw);
    tide_image_free(NULL, &ref);
    return ok;
}

int main(void) {
    char dir[] = "/tmp/tide_route_XXXXXX", spec[STACK_NSPEC][1100];
    const char *all[STACK_NSPEC];
    if (stack_test_setup(dir, spec, all))
        return 1;
    /* plain.fits and rice.fits carry tide's MASK/VAR, plain2.fits its MASK: the host read */
    const int want[STACK_NSPEC] = {TIDE_ROUTE_HOST,   TIDE_ROUTE_PLAIN,  TIDE_ROUTE_HOST,
                                   TIDE_ROUTE_DECODE, TIDE_ROUTE_DECODE, TIDE_ROUTE_HOST,
                                   TIDE_ROUTE_PLAIN,  TIDE_ROUTE_PLAIN,  TIDE_ROUTE_HOST,
                                   TIDE_ROUTE_HOST,   TIDE_ROUTE_HOST};
    int nplain = 0;
    for (int i = 0; i < STACK_NSPEC; i++) {
        tide_fits_plain_unit u;
        tide_header h, ref;
        const int r = tide_fits_device_route(all[i], &u, &h);
        printf("%-60s route %d\n", all[i], r);
        CHECK(r == want[i]);
        if (r != TIDE_ROUTE_PLAIN) {
            CHECK(h.ncards == 0);
            tide_header_free(&h);
            continue;
        }
        nplain++;
        CHECK(u.offset % 2880 == 0 && u.width == STACK_W && u.height == STACK_H);
        CHECK(same_as_read(all[i], &u));
        CHECK_OK(tide_fits_read_image_header(all[i], &ref, NULL, NULL, NULL));
        CHECK(stack_test_same_header(&h, &ref));
        tide_header_free(&h);
        tide_header_free(&ref);
    }
    CHECK(nplain == 3);
    char missing[1200];
    snprintf(missing, sizeof missing, "%s/missing.fits", dir);
    tide_fits_plain_unit u;
    CHECK(tide_fits_device_route(missing, &u, NULL) == TIDE_E_NOTFOUND);
    CHECK(strstr(tide_error_detail(), missing) != NULL);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(stack_test_sh(cmd) == 0);
    return TIDE_TEST_RESULT();
}
