/* test_diff_prefault.c — the helper thread that makes the host memory of a CUDA diff's results
 * resident (diff_host.c): the images it hands over have the size and planes of the device
 * images and are zero; a shape it did not foresee (other size, other planes, a row stride)
 * gives 0 and empty images; cancelling, or taking twice, releases everything (run under
 * valgrind or ASan to see leaks). Host only: the helper owns no context. */
#include <stdint.h>
#include <string.h>

#include "pipeline/diff_internal.h"
#include "tide/tide.h"
#include "tide_test.h"

static int all_zero(const void *p, size_t bytes) {
    const unsigned char *c = p;
    for (size_t i = 0; i < bytes; i++)
        if (c[i])
            return 0;
    return 1;
}

int main(void) {
    const int64_t w = 700, h = 513;
    tide_image dl, ml; /* stand-ins for the device images: only sizes and planes are read */
    CHECK_OK(tide_image_alloc(NULL, &dl, w, h, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR));
    CHECK_OK(tide_image_alloc(NULL, &ml, w, h, TIDE_HOST, 0));
    const size_t n = (size_t)(w * h);

    for (int threads = 1; threads <= 16; threads *= 4) {
        tide_diffp_prefault pf;
        tide_diffp_prefault_start(&pf, w, h, threads);
        CHECK(pf.started);
        tide_image d, m;
        memset(&d, 0, sizeof d);
        memset(&m, 0, sizeof m);
        CHECK(tide_diffp_prefault_take(&pf, &d, &dl, &m, &ml) == 1);
        CHECK(d.width == w && d.height == h && d.stride == w && d.location == TIDE_HOST);
        CHECK(d.pix && d.mask && d.var && d.owns && m.pix && !m.mask && !m.var && m.owns);
        CHECK(all_zero(d.pix, n * 4) && all_zero(d.var, n * 4) && all_zero(d.mask, n * 2));
        CHECK(all_zero(m.pix, n * 4));
        CHECK(!pf.started && !pf.diff.pix && !pf.matched.pix);
        /* taking again: nothing left */
        tide_image d2, m2;
        memset(&d2, 0, sizeof d2);
        memset(&m2, 0, sizeof m2);
        CHECK(tide_diffp_prefault_take(&pf, &d2, &dl, &m2, &ml) == 0);
        CHECK(!d2.pix && !m2.pix);
        tide_image_free(NULL, &d);
        tide_image_free(NULL, &m);
    }

    /* shapes it did not foresee */
    tide_image other;
    CHECK_OK(tide_image_alloc(NULL, &other, w + 1, h, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR));
    tide_image nomask;
    CHECK_OK(tide_image_alloc(NULL, &nomask, w, h, TIDE_HOST, TIDE_IMAGE_VAR));
    tide_image strided = dl;
    strided.stride = w + 3;
    strided.owns = 0;
    const tide_image *bad[3] = {&other, &nomask, &strided};
    for (int k = 0; k < 3; k++) {
        tide_diffp_prefault pf;
        tide_diffp_prefault_start(&pf, w, h, 2);
        tide_image d, m;
        memset(&d, 0, sizeof d);
        memset(&m, 0, sizeof m);
        CHECK(tide_diffp_prefault_take(&pf, &d, bad[k], &m, &ml) == 0);
        CHECK(!d.pix && !m.pix && !pf.diff.pix && !pf.matched.pix);
    }
    /* cancelled while (or after) it runs; twice is harmless */
    tide_diffp_prefault pf;
    tide_diffp_prefault_start(&pf, 4096, 4096, 4);
    tide_diffp_prefault_cancel(&pf);
    tide_diffp_prefault_cancel(&pf);
    CHECK(!pf.started && !pf.diff.pix && !pf.matched.pix);
    /* a zeroed, never started helper */
    memset(&pf, 0, sizeof pf);
    tide_diffp_prefault_cancel(&pf);

    tide_image_free(NULL, &other);
    tide_image_free(NULL, &nomask);
    tide_image_free(NULL, &dl);
    tide_image_free(NULL, &ml);
    return TIDE_TEST_RESULT();
}
