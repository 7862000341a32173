/* test_gpu_read_stack.c — tide_fits_read_stack into device memory against host reads: the
 * files of stack_files.h (plain frames with and without tide's planes, a scaled int16 frame
 * with BLANK, tide's and fpack's RICE_1, GZIP_2, quantized floats, mosaic CCDs, sections)
 * with TIDE_CUFILE=0 (the pinned path and the GPU's RICE decoder) and TIDE_CUFILE=1 (cuFile
 * for the plain data units where GPUDirect Storage, or its compatibility mode, serves this
 * file system; the pinned path where it does not), each image downloaded and compared bit
 * for bit, pixels, mask, variance and header; the same-sized images as one contiguous
 * device block; a failing spec in the middle of a device list, with its error and the
 * device pool back where it was. Skipped (77) without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/stack_files.h"
#include "tide/tide.h"
#include "tide_test.h"

/* Device stack of @p specs, downloaded image by image, against one host read each. Returns
 * how many images took the cuFile path. */
static int check_device(tide_ctx *gpu, const char *const *specs, int n, int flags) {
    tide_fits_stack s;
    const int st =
        tide_fits_read_stack(gpu, specs, n, TIDE_DEVICE, flags | TIDE_FITS_STACK_HEADERS, &s);
    CHECK_OK(st);
    if (st)
        return 0;
    int ncufile = 0;
    for (int i = 0; i < n; i++) {
        tide_image ref, back;
        tide_header rh;
        CHECK_OK(tide_fits_read_image(NULL, specs[i], &ref, &rh));
        CHECK(s.im[i].location == TIDE_DEVICE);
        CHECK_OK(tide_image_clone(gpu, &back, &s.im[i], TIDE_HOST));
        const int same = stack_test_same_image(&back, &ref);
        printf("%-60s %-10s %s\n", specs[i], tide_fits_path_name(s.path[i]),
               same ? "same" : "DIFFERENT");
        CHECK(same);
        CHECK(stack_test_same_header(&s.hdr[i], &rh));
        ncufile += s.path[i] == TIDE_FITS_PATH_CUFILE;
        tide_image_free(NULL, &back);
        tide_image_free(NULL, &ref);
        tide_header_free(&rh);
    }
    if (flags & TIDE_FITS_STACK_CONTIGUOUS) { /* the block itself, image i at i x h x w */
        CHECK(s.pix != NULL && s.width == STACK_W && s.height == STACK_H);
        const size_t npix = (size_t)STACK_W * STACK_H;
        float *blk = malloc(npix * (size_t)n * sizeof *blk);
        CHECK(blk != NULL);
        if (s.pix && blk) {
            CHECK_OK(tide_memcpy(gpu, blk, 0, s.pix, 1, npix * (size_t)n * sizeof *blk));
            for (int i = 0; i < n; i++) {
                tide_image ref;
                CHECK_OK(tide_fits_read_image(NULL, specs[i], &ref, NULL));
                CHECK(!memcmp(blk + (size_t)i * npix, ref.pix, npix * sizeof *blk));
                tide_image_free(NULL, &ref);
            }
        }
        free(blk);
    }
    tide_fits_stack_free(gpu, &s);
    return ncufile;
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no GPU");
    char dir[] = "/tmp/tide_gstack_XXXXXX", spec[STACK_NSPEC][1100];
    const char *all[STACK_NSPEC];
    if (stack_test_setup(dir, spec, all))
        return 1;
    tide_ctx *gpu = tide_test_ctx(TIDE_BACKEND_CUDA, 0);
    if (!gpu)
        return TIDE_TEST_RESULT();
    gpu->log = (tide_logger){stderr, TIDE_LOG_DEBUG, 0}; /* why cuFile was not used, if not */
    const char *same[4] = {spec[9], spec[6], spec[7], spec[5]};

    setenv("TIDE_CUFILE", "0", 1);
    CHECK(check_device(gpu, all, STACK_NSPEC, 0) == 0);
    CHECK(check_device(gpu, same, 4, TIDE_FITS_STACK_CONTIGUOUS) == 0);
    setenv("TIDE_CUFILE", "1", 1);
    const int ncufile = check_device(gpu, all, STACK_NSPEC, 0);
    check_device(gpu, same, 4, TIDE_FITS_STACK_CONTIGUOUS);
    printf("cuFile read %d of %d images (0: GPUDirect Storage not usable on %s)\n", ncufile,
           STACK_NSPEC, dir);

    /* a missing file in the middle: its error, nothing left on the device */
    char missing[1200];
    snprintf(missing, sizeof missing, "%s/missing.fits", dir);
    const char *list[4] = {spec[0], spec[3], missing, spec[2]};
    size_t before = 0, after = 0, peak = 0;
    tide_device_usage(gpu, &before, &peak);
    tide_fits_stack s;
    for (int c = 0; c < 2; c++) {
        setenv("TIDE_CUFILE", c ? "1" : "0", 1);
        CHECK(tide_fits_read_stack(gpu, list, 4, TIDE_DEVICE, TIDE_FITS_STACK_HEADERS, &s) ==
              TIDE_E_NOTFOUND);
        CHECK(strstr(tide_error_detail(), missing) != NULL);
        CHECK(s.n == 0 && !s.im && !s.hdr);
        tide_sync(gpu);
        tide_device_usage(gpu, &after, &peak);
        CHECK(after == before);
    }
    unsetenv("TIDE_CUFILE");
    tide_ctx_destroy(gpu);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(stack_test_sh(cmd) == 0);
    return TIDE_TEST_RESULT();
}
