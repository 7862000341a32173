/* test_host_blocks.c — the host block cache (host_blocks.c): reuse of freed large planes,
 * zeroing on request, the cap, and pointers that are not the cache's. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"
#include "tide/image.h"
#include "tide/status.h"
#include "tide_test.h"

static int all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

int main(void) {
    /* the cap is read once, on first use: 64 MiB of idle blocks */
    setenv("TIDE_HOST_CACHE_MB", "64", 1);
    const size_t big = (size_t)8 << 20;

    /* small requests are plain malloc/calloc, not the cache's */
    void *small = tide_host_block_alloc(1000, 1);
    CHECK(small != NULL);
    CHECK(all_zero(small, 1000));
    CHECK(tide_host_block_free(small) == 0);
    free(small);

    /* a freed block comes back for a request of about its size, zeroed on request */
    unsigned char *a = tide_host_block_alloc(big, 1);
    CHECK(a != NULL);
    CHECK(all_zero(a, big));
    memset(a, 0x5a, big);
    CHECK(tide_host_block_free(a) == 1);
    CHECK(tide_host_block_idle_bytes() == big);
    unsigned char *b = tide_host_block_alloc(big - 4096, 0);
    CHECK(b == a);
    CHECK(b[0] == 0x5a); /* not zeroed when not asked */
    CHECK(tide_host_block_idle_bytes() == 0);
    CHECK(tide_host_block_free(b) == 1);
    unsigned char *c = tide_host_block_alloc(big, 1);
    CHECK(c == a);
    CHECK(all_zero(c, big));
    /* a request far smaller than the idle block does not take it */
    CHECK(tide_host_block_free(c) == 1);
    unsigned char *d = tide_host_block_alloc(big / 2 + 4096, 0);
    CHECK(d != NULL && d != a);
    CHECK(tide_host_block_free(d) == 1);

    /* a pointer the cache did not hand out, and a double free, are refused */
    int local = 0;
    CHECK(tide_host_block_free(&local) == 0);
    CHECK(tide_host_block_free(d) == 0);

    /* the cap: 12 idle blocks of 8 MiB exceed 64 MiB, the oldest go */
    unsigned char *blk[12];
    for (int i = 0; i < 12; i++) {
        blk[i] = tide_host_block_alloc(big, 0);
        CHECK(blk[i] != NULL);
    }
    for (int i = 0; i < 12; i++)
        CHECK(tide_host_block_free(blk[i]) == 1);
    CHECK(tide_host_block_idle_bytes() <= ((size_t)64 << 20));
    CHECK(tide_host_block_idle_bytes() >= ((size_t)64 << 20) - big);

    /* images: a host image's planes return to the cache, UNINIT skips the zeroing */
    tide_host_block_trim();
    CHECK(tide_host_block_idle_bytes() == 0);
    tide_image im;
    CHECK_OK(tide_image_alloc(NULL, &im, 2048, 1024, TIDE_HOST, TIDE_IMAGE_MASK));
    float *pix = im.pix;
    for (int64_t i = 0; i < 2048 * 1024; i++)
        im.pix[i] = 1.0f;
    tide_image_free(NULL, &im);
    CHECK(tide_host_block_idle_bytes() == (size_t)2048 * 1024 * (4 + 2)); /* pixels, mask */
    CHECK_OK(tide_image_alloc(NULL, &im, 2048, 1024, TIDE_HOST, TIDE_IMAGE_UNINIT));
    CHECK(im.pix == pix && im.pix[7] == 1.0f);
    tide_image_free(NULL, &im);
    CHECK_OK(tide_image_alloc(NULL, &im, 2048, 1024, TIDE_HOST, 0));
    CHECK(im.pix == pix && all_zero((const unsigned char *)im.pix, (size_t)2048 * 1024 * 4));
    tide_image_free(NULL, &im);
    /* without CUDA nothing is page-locked */
#ifndef TIDE_HAVE_CUDA
    CHECK(tide_host_block_pin(pix, 16) == 0);
#endif
    tide_host_block_trim();
    return TIDE_TEST_RESULT();
}
