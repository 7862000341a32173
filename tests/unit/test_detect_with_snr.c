/* test_detect_with_snr.c — tide_detect_with_snr on the negated frame with the negated S/N map
 * of the frame (what the difference candidates do) gives, column for column and bit for bit,
 * the table tide_detect makes on the negated frame by filtering it: the matched filter is
 * linear and IEEE negation exact. On a frame with positive and negative stars, masked pixels
 * and a negative blend; and the argument checks. On the CPU, and on CUDA when a GPU is
 * present. */
#include <stdio.h>
#include <string.h>

#include "tide/detect.h"
#include "tide/tide.h"
#include "tide_test.h"
#include "common/detect_synth.h"

static void same_tables(const tide_table *a, const tide_table *b) {
    CHECK(a->nrows == b->nrows && a->ncols == b->ncols);
    if (a->nrows != b->nrows || a->ncols != b->ncols)
        return;
    for (int k = 0; k < a->ncols; k++) {
        const tide_column *ca = &a->cols[k], *cb = &b->cols[k];
        const size_t n = (size_t)(a->nrows * ca->repeat * tide_col_type_size(ca->type));
        const int same = !strcmp(ca->name, cb->name) && ca->type == cb->type &&
                         (n == 0 || !memcmp(ca->data, cb->data, n));
        if (!same)
            printf("column %s differs\n", ca->name);
        CHECK(same);
    }
}

static void run(tide_ctx *ctx) {
    tide_image im, rms, neg;
    synth_frame(&im, &rms, 300, 260, 1.0, 5);
    const double fl = synth_flux_for_snr(40.0, 3.0, 1.0);
    synth_star(&im, 60.3, 70.8, fl, 3.0);
    synth_star(&im, 200.1, 50.5, -fl, 3.0);
    synth_star(&im, 120.4, 180.2, -2 * fl, 3.5);
    synth_star(&im, 124.9, 182.0, -fl, 3.5); /* a negative blend */
    synth_star(&im, 250.0, 200.0, -0.5 * fl, 2.5);
    for (int64_t y = 176; y < 179; y++)
        for (int64_t x = 110; x < 140; x++)
            im.mask[y * im.stride + x] = TIDE_MASK_COSMIC;
    CHECK_OK(tide_image_clone(NULL, &neg, &im, TIDE_HOST));
    for (int64_t i = 0; i < im.width * im.height; i++)
        neg.pix[i] = -im.pix[i];
    const tide_location loc = ctx->backend == TIDE_BACKEND_CUDA ? TIDE_DEVICE : TIDE_HOST;
    tide_image dim = im, dneg = neg, drms = rms;
    if (loc == TIDE_DEVICE) {
        CHECK_OK(tide_image_clone(ctx, &dim, &im, TIDE_DEVICE));
        CHECK_OK(tide_image_clone(ctx, &dneg, &neg, TIDE_DEVICE));
        CHECK_OK(tide_image_clone(ctx, &drms, &rms, TIDE_DEVICE));
    }
    tide_detect_params p;
    tide_detect_params_default(&p);
    tide_table pos, filtered, given;
    tide_table_init(&pos);
    tide_table_init(&filtered);
    tide_table_init(&given);
    tide_detect_maps maps;
    CHECK_OK(tide_detect_ex(ctx, &dim, &drms, NULL, &p, &pos, &maps));
    CHECK(pos.nrows >= 1);
    /* the map negated where it lives (a host copy round trip on a GPU) */
    tide_image hs;
    CHECK_OK(tide_image_clone(ctx, &hs, &maps.snr, TIDE_HOST));
    for (int64_t i = 0; i < hs.width * hs.height; i++)
        hs.pix[i] = -hs.pix[i];
    tide_image nsnr = hs;
    if (loc == TIDE_DEVICE)
        CHECK_OK(tide_image_clone(ctx, &nsnr, &hs, TIDE_DEVICE));
    CHECK_OK(tide_detect(ctx, &dneg, &drms, NULL, &p, &filtered));
    CHECK_OK(tide_detect_with_snr(ctx, &dneg, &drms, NULL, &p, &nsnr, &given));
    CHECK(filtered.nrows >= 3);
    same_tables(&filtered, &given);
    printf("%s: %lld positive, %lld negative detections\n", loc == TIDE_DEVICE ? "cuda" : "cpu",
           (long long)pos.nrows, (long long)given.nrows);

    /* a map of the wrong size or place is refused */
    tide_image bad = nsnr;
    bad.width -= 1;
    bad.stride -= 1;
    tide_table_resize(&given, 0);
    CHECK(tide_detect_with_snr(ctx, &dneg, &drms, NULL, &p, &bad, &given) == TIDE_E_INVAL);
    tide_error_clear();
    CHECK(tide_detect_with_snr(ctx, &dneg, &drms, NULL, &p, NULL, &given) == TIDE_E_INVAL);
    tide_error_clear();
    /* so is a broken PSF model, though the given map needs no kernels from it */
    tide_psf_model broken;
    memset(&broken, 0, sizeof broken);
    CHECK(tide_detect_with_snr(ctx, &dneg, &drms, &broken, &p, &nsnr, &given) == TIDE_E_INVAL);
    tide_error_clear();

    tide_table_free(&pos);
    tide_table_free(&filtered);
    tide_table_free(&given);
    tide_detect_maps_free(ctx, &maps);
    if (loc == TIDE_DEVICE) {
        tide_image_free(ctx, &dim);
        tide_image_free(ctx, &dneg);
        tide_image_free(ctx, &drms);
        tide_image_free(ctx, &nsnr);
    }
    tide_image_free(NULL, &hs);
    tide_image_free(NULL, &im);
    tide_image_free(NULL, &neg);
    tide_image_free(NULL, &rms);
}

int main(void) {
    for (int k = 0; k < 2; k++) {
        if (k == 1 && !tide_cuda_available(NULL))
            break;
        tide_ctx *ctx = tide_test_ctx(k ? TIDE_BACKEND_CUDA : TIDE_BACKEND_CPU, 0);
        if (ctx)
            run(ctx);
        tide_ctx_destroy(ctx);
    }
    return TIDE_TEST_RESULT();
}
