/* test_fits_read_stack.c — tide_fits_read_stack on the host against one tide_fits_read_image
 * per spec: plain float frames with tide's MASK and VAR, a scaled 16-bit frame with BLANK,
 * tide's RICE_1, fpack's RICE_1, GZIP_2 and quantized floats, two mosaic CCDs (by number and
 * EXTNAME) and sections give the same pixel, mask and variance bits and the same header
 * cards, on more specs than reader threads; same-sized images gather into one contiguous
 * block, mixed sizes stay apart; a missing file, a truncated file and a table HDU in the
 * middle of a list fail with the error (status and detail) that spec alone gives, the
 * output zeroed. */
#include <fitsio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/stack_files.h"
#include "tide/tide.h"
#include "tide_test.h"

/* A file whose HDU 1 is a binary table. */
static int write_table_file(const char *path) {
    fitsfile *f = NULL;
    int cst = 0;
    char spec[1200], *ttype[] = {"FLUX"}, *tform[] = {"E"}, *tunit[] = {""};
    snprintf(spec, sizeof spec, "!%s", path);
    float v[3] = {1, 2, 3};
    fits_create_file(&f, spec, &cst);
    fits_create_img(f, FLOAT_IMG, 0, NULL, &cst);
    fits_create_tbl(f, BINARY_TBL, 3, 1, ttype, tform, tunit, "CAT", &cst);
    fits_write_col(f, TFLOAT, 1, 1, 1, 3, v, &cst);
    fits_close_file(f, &cst);
    return cst;
}

/* The stack of @p specs holds, image by image, what one read of each gives. */
static void check_same(tide_ctx *ctx, const char *const *specs, int n, int flags) {
    tide_fits_stack s;
    int st = tide_fits_read_stack(ctx, specs, n, TIDE_HOST, flags | TIDE_FITS_STACK_HEADERS, &s);
    CHECK_OK(st);
    if (st)
        return;
    CHECK(s.n == n && s.where == TIDE_HOST && s.threads >= 1 && s.hdr && s.path);
    for (int i = 0; i < n; i++) {
        tide_image ref;
        tide_header rh;
        CHECK_OK(tide_fits_read_image(NULL, specs[i], &ref, &rh));
        const int same = stack_test_same_image(&s.im[i], &ref);
        if (!same)
            fprintf(stderr, "%s: the stack's image differs\n", specs[i]);
        CHECK(same);
        CHECK(stack_test_same_header(&s.hdr[i], &rh));
        CHECK(s.path[i] == TIDE_FITS_PATH_HOST);
        tide_image_free(NULL, &ref);
        tide_header_free(&rh);
    }
    tide_fits_stack_free(ctx, &s);
    CHECK(s.n == 0 && !s.im && !s.hdr);
}

/* A list with @p bad at index 2 fails as @p bad alone does, with nothing left. */
static void check_error(tide_ctx *ctx, char spec[][1100], const char *bad, const char *what) {
    tide_image im;
    const int want = tide_fits_read_image(NULL, bad, &im, NULL);
    char detail[1024];
    snprintf(detail, sizeof detail, "%s", tide_error_detail());
    char root[1100];
    snprintf(root, sizeof root, "%s", bad);
    root[strcspn(root, "[")] = 0;
    CHECK(want < 0 && strstr(detail, root)); /* the error names the file */
    const char *list[5] = {spec[0], spec[2], bad, spec[3], spec[6]};
    tide_fits_stack s, zero;
    memset(&s, 0x5a, sizeof s);
    memset(&zero, 0, sizeof zero);
    const int st = tide_fits_read_stack(ctx, list, 5, TIDE_HOST, TIDE_FITS_STACK_HEADERS, &s);
    CHECK(st == want);
    const int same = !strcmp(tide_error_detail(), detail);
    if (!same)
        fprintf(stderr, "%s: stack error '%s', alone '%s'\n", what, tide_error_detail(), detail);
    CHECK(same);
    CHECK(!memcmp(&s, &zero, sizeof s));
    printf("%s: %s (%s)\n", what, tide_strerror(st), detail);
}

int main(void) {
    char dir[] = "/tmp/tide_stack_XXXXXX", spec[STACK_NSPEC][1100];
    const char *all[STACK_NSPEC];
    if (stack_test_setup(dir, spec, all))
        return 1;
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 2);
    check_same(ctx, all, STACK_NSPEC, 0);  /* more specs than readers */
    check_same(NULL, all, STACK_NSPEC, 0); /* all cores */
    check_same(ctx, all + 2, 1, 0);
    check_same(ctx, all, STACK_NSPEC, TIDE_FITS_STACK_CONTIGUOUS); /* sizes differ: apart */

    /* same size, same planes: one block per plane, image i at i x h x w */
    const char *same[4] = {spec[9], spec[6], spec[7], spec[5]};
    check_same(ctx, same, 4, TIDE_FITS_STACK_CONTIGUOUS);
    tide_fits_stack s;
    CHECK_OK(tide_fits_read_stack(ctx, same, 4, TIDE_HOST, TIDE_FITS_STACK_CONTIGUOUS, &s));
    CHECK(s.pix && s.mask && !s.var && !s.hdr && s.width == STACK_W && s.height == STACK_H);
    for (int i = 0; s.pix && i < 4; i++)
        CHECK(s.im[i].pix == s.pix + (size_t)i * STACK_W * STACK_H &&
              s.im[i].mask == s.mask + (size_t)i * STACK_W * STACK_H && !s.im[i].owns);
    tide_fits_stack_free(ctx, &s);
    CHECK_OK(tide_fits_read_stack(ctx, all, 2, TIDE_HOST, TIDE_FITS_STACK_CONTIGUOUS, &s));
    CHECK(!s.pix && s.im && s.im[0].owns);
    tide_fits_stack_free(ctx, &s);

    /* errors in the middle of a list */
    char bad[3][1100], cmd[2400];
    snprintf(bad[0], sizeof bad[0], "%s/missing.fits", dir);
    snprintf(bad[1], sizeof bad[1], "%s/cut.fits", dir);
    snprintf(cmd, sizeof cmd, "head -c 40000 %s/plain.fits > %s", dir, bad[1]);
    CHECK(stack_test_sh(cmd) == 0);
    snprintf(bad[2], sizeof bad[2], "%s/table.fits", dir);
    CHECK(write_table_file(bad[2]) == 0);
    check_error(ctx, spec, bad[0], "missing file");
    check_error(ctx, spec, bad[1], "truncated file");
    snprintf(bad[2], sizeof bad[2], "%s/table.fits[1]", dir);
    check_error(ctx, spec, bad[2], "table HDU");

    /* bad calls */
    CHECK(tide_fits_read_stack(ctx, all, 0, TIDE_HOST, 0, &s) == TIDE_E_INVAL);
    CHECK(tide_fits_read_stack(ctx, all, 2, TIDE_DEVICE, 0, &s) == TIDE_E_INVAL);
    CHECK(s.n == 0 && !s.im);
    const char *withnull[2] = {spec[0], NULL};
    CHECK(tide_fits_read_stack(ctx, withnull, 2, TIDE_HOST, 0, &s) == TIDE_E_INVAL);
    CHECK(!strcmp(tide_fits_path_name(TIDE_FITS_PATH_CUFILE), "cufile"));

    tide_ctx_destroy(ctx);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(stack_test_sh(cmd) == 0);
    return TIDE_TEST_RESULT();
}
