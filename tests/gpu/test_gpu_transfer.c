/* test_gpu_transfer.c — host<->device copies of pageable host memory, which go through the
 * context's pinned staging ring (staging_cudaonly.c) from 1 MiB up: byte-exact round trips at
 * sizes around the ring's chunk and buffer counts and at unaligned addresses, copies into
 * untouched (never faulted-in) host memory, and the rates beside a pinned copy's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tide/tide.h"
#include "tide_test.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Round trip of n bytes starting at byte offset off of a pageable buffer. */
static void round_trip(tide_ctx *ctx, size_t n, size_t off) {
    unsigned char *src = malloc(n + off), *back = malloc(n + off);
    void *dev = NULL;
    CHECK(src && back);
    if (!src || !back)
        return;
    for (size_t i = 0; i < n + off; i++)
        src[i] = (unsigned char)(i * 2654435761u >> 13);
    CHECK_OK(tide_device_alloc(ctx, n, &dev));
    CHECK_OK(tide_memcpy(ctx, dev, 1, src + off, 0, n));
    memset(back, 0xA5, n + off);
    CHECK_OK(tide_memcpy(ctx, back + off, 0, dev, 1, n));
    const int same = !memcmp(back + off, src + off, n);
    CHECK(same);
    if (!same)
        printf("round trip of %zu bytes at offset %zu differs\n", n, off);
    tide_device_free(ctx, dev);
    free(src);
    free(back);
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no GPU");
    tide_ctx *ctx = NULL;
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CUDA;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    if (!ctx)
        return TIDE_TEST_RESULT();
    const size_t MB = (size_t)1 << 20, chunk = 16 * MB;
    const size_t sizes[] = {MB - 1,
                            MB,
                            MB + 7,
                            chunk - 1,
                            chunk,
                            chunk + 1,
                            2 * chunk + 12345,
                            3 * chunk,
                            3 * chunk + 1,
                            7 * chunk + 999};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        round_trip(ctx, sizes[i], 0);
        round_trip(ctx, sizes[i], 3);
    }

    /* Rates on a 605 MB plane (a 151 MP float frame): pageable source and a download into
     * fresh, never touched host memory (the page faults are part of the cost), beside the
     * same copies from and to pinned memory. */
    const size_t n = (size_t)14200 * 10650 * sizeof(float);
    unsigned char *pg = malloc(n), *fresh = NULL, *pin = NULL;
    void *dev = NULL;
    CHECK(pg != NULL);
    CHECK_OK(tide_device_alloc(ctx, n, &dev));
    CHECK_OK(tide_host_pinned_alloc(ctx, n, (void **)&pin));
    if (pg && dev && pin) {
        for (size_t i = 0; i < n; i += 4096)
            pg[i] = (unsigned char)i;
        memset(pin, 1, n);
        CHECK_OK(tide_memcpy(ctx, dev, 1, pg, 0, n)); /* warms the ring */
        double t0 = now_ms();
        CHECK_OK(tide_memcpy(ctx, dev, 1, pg, 0, n));
        double t1 = now_ms();
        CHECK_OK(tide_memcpy(ctx, dev, 1, pin, 0, n));
        double t2 = now_ms();
        fresh = malloc(n);
        CHECK(fresh != NULL);
        double t3 = now_ms();
        if (fresh)
            CHECK_OK(tide_memcpy(ctx, fresh, 0, dev, 1, n));
        double t4 = now_ms();
        CHECK_OK(tide_memcpy(ctx, pg, 0, dev, 1, n));
        double t5 = now_ms();
        CHECK_OK(tide_memcpy(ctx, pin, 0, dev, 1, n));
        double t6 = now_ms();
        const double gb = (double)n / 1e9;
        printf("605 MB: upload pageable %.1f ms (%.1f GB/s), pinned %.1f ms (%.1f GB/s); "
               "download to fresh memory %.1f ms (%.1f GB/s), to touched pageable %.1f ms "
               "(%.1f GB/s), pinned %.1f ms (%.1f GB/s)\n",
               t1 - t0, gb / (t1 - t0) * 1e3, t2 - t1, gb / (t2 - t1) * 1e3, t4 - t3,
               gb / (t4 - t3) * 1e3, t5 - t4, gb / (t5 - t4) * 1e3, t6 - t5, gb / (t6 - t5) * 1e3);
        CHECK(!fresh || !memcmp(fresh, pin, n));
    }
    free(pg);
    free(fresh);
    tide_host_pinned_free(ctx, pin);
    tide_device_free(ctx, dev);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
