/* test_gpu_core.c — device pool accounting, host↔device image round trips, device timers. */
#include <string.h>

#include "tide/tide.h"
#include "tide_test.h"

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no GPU");
    tide_ctx *ctx = NULL;
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CUDA;
    o.device_mem_cap = (size_t)1 << 30;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    if (!ctx)
        return TIDE_TEST_RESULT();

    /* Awkward sizes: 1x1, prime, a long thin strip. */
    const int64_t sizes[][2] = {{1, 1}, {97, 89}, {4097, 3}};
    for (int s = 0; s < 3; s++) {
        int64_t w = sizes[s][0], h = sizes[s][1];
        tide_image host, dev, back;
        CHECK_OK(tide_image_alloc(ctx, &host, w, h, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR));
        for (int64_t i = 0; i < w * h; i++) {
            host.pix[i] = (float)i * 0.25f - 3.0f;
            host.mask[i] = (uint16_t)(i * 7 % 13);
            host.var[i] = (float)(i % 17);
        }
        CHECK_OK(tide_image_clone(ctx, &dev, &host, TIDE_DEVICE));
        CHECK(dev.location == TIDE_DEVICE);
        CHECK_OK(tide_image_clone(ctx, &back, &dev, TIDE_HOST));
        CHECK(!memcmp(back.pix, host.pix, (size_t)(w * h) * sizeof(float)));
        CHECK(!memcmp(back.mask, host.mask, (size_t)(w * h) * sizeof(uint16_t)));
        CHECK(!memcmp(back.var, host.var, (size_t)(w * h) * sizeof(float)));
        tide_image_free(ctx, &dev);
        tide_image_free(ctx, &back);
        tide_image_free(ctx, &host);
    }

    size_t cur, peak;
    tide_device_usage(ctx, &cur, &peak);
    CHECK(cur == 0);
    CHECK(peak >= (size_t)4097 * 3 * 10);
    void *p = NULL;
    CHECK(tide_device_alloc(ctx, (size_t)2 << 30, &p) == TIDE_E_NOMEM); /* over the cap */
    CHECK_OK(tide_device_alloc(ctx, 1000, &p));
    tide_device_usage(ctx, &cur, NULL);
    CHECK(cur == 1000);
    tide_device_free(ctx, p);
    tide_device_usage(ctx, &cur, NULL);
    CHECK(cur == 0);

    tide_timer t;
    double ms = -1;
    CHECK_OK(tide_timer_start(ctx, &t, "gpu_stage"));
    CHECK_OK(tide_timer_stop(ctx, &t, &ms));
    CHECK(ms >= 0);

    /* The helper context: same device and pool, its own stream; memory it allocates is
     * handed over with tide_device_adopt and freed by the context; its timers merge. */
    tide_ctx *h = NULL, *h2 = NULL;
    CHECK_OK(tide_ctx_helper(ctx, &h));
    CHECK_OK(tide_ctx_helper(ctx, &h2));
    CHECK(h != NULL && h == h2 && h->stream != ctx->stream && h->mempool == ctx->mempool);
    if (h) {
        tide_image hi, hd, back;
        CHECK_OK(tide_image_alloc(h, &hi, 300, 200, TIDE_HOST, TIDE_IMAGE_MASK));
        for (int64_t i = 0; i < 300 * 200; i++) {
            hi.pix[i] = (float)i;
            hi.mask[i] = (uint16_t)(i % 5);
        }
        CHECK_OK(tide_image_clone(h, &hd, &hi, TIDE_DEVICE));
        CHECK_OK(tide_sync(h));
        size_t hcur = 0;
        tide_device_usage(h, &hcur, NULL);
        CHECK(hcur == (size_t)300 * 200 * 6);
        tide_device_adopt(ctx, h, hd.pix);
        tide_device_adopt(ctx, h, hd.mask);
        tide_device_usage(h, &hcur, NULL);
        tide_device_usage(ctx, &cur, NULL);
        CHECK(hcur == 0 && cur == (size_t)300 * 200 * 6);
        CHECK_OK(tide_image_clone(ctx, &back, &hd, TIDE_HOST));
        CHECK(!memcmp(back.pix, hi.pix, sizeof(float) * 300 * 200));
        CHECK(!memcmp(back.mask, hi.mask, sizeof(uint16_t) * 300 * 200));
        tide_image_free(ctx, &hd);
        tide_device_usage(ctx, &cur, NULL);
        CHECK(cur == 0);
        tide_image_free(ctx, &back);
        tide_image_free(ctx, &hi);
        CHECK_OK(tide_timer_start(h, &t, "helper_stage"));
        CHECK_OK(tide_timer_stop(h, &t, NULL));
        CHECK_OK(tide_timer_merge(ctx, h));
        CHECK(tide_timer_count(h) == 0);
        const char *name = NULL;
        int calls = 0, found = 0;
        for (int i = 0; i < tide_timer_count(ctx); i++) {
            CHECK_OK(tide_timer_get(ctx, i, &name, NULL, &calls));
            found += !strcmp(name, "helper_stage") && calls == 1;
        }
        CHECK(found == 1);
    }
    tide_ctx_destroy(ctx); /* also the helper's */
    return TIDE_TEST_RESULT();
}
