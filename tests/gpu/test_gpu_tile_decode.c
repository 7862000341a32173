/* test_gpu_tile_decode.c — the CUDA RICE_1 tile decoder (io/fits/tile_decode_cuda.cu) against
 * its CPU twin (tide_tile_decode_cpu), bit for bit: images of BITPIX 8, 16, 32, -32 and -64
 * written by cfitsio with RICE_1 in tiles of whole rows, 17 x 23 (odd, cut at the edges) and
 * one tile; floats quantized without dither, with SUBTRACTIVE_DITHER_1 and _2, several
 * seeds, with NaNs and zeros; integers with BLANK and BSCALE/BZERO. Each is decoded by both
 * twins and read by tide_fits_read_image on a CPU and on a CUDA context, and by
 * tide_fits_read_image_at straight into device memory (pixels and no-data mask as the host
 * read's; a file with its last quarter zeroed, the same error or pixels). Corrupted tiles (a
 * cut stream, random bytes, zeros) give the same status and the same detail on both (the
 * CUDA side hands a wrong tile to the CPU twin), and never a read outside a tile's stream.
 * Everything runs with the data unit in one chunk and cut into 3 and 32 chunks
 * (TIDE_GPU_RICE_CHUNKS: chunk boundaries, the last chunk's last tile), from pageable memory,
 * from page-locked memory (the copy engine reads it directly) and from the file. Skipped (77)
 * without a GPU. */
#include <fitsio.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/fits/fits_tile_read.h"
#include "io/fits/tile_decode.h"
#include "tide/tide.h"
#include "common/tile_cfitsio_image.h"
#include "tide_test.h"

#ifndef TIDE_HAVE_CUDA
int main(void) {
    TIDE_TEST_SKIP("built without CUDA");
}
#else
static uint64_t rng_state = 0x853c49e6748fea9bull;
static uint64_t rnd(void) {
    return trng_splitmix64(&rng_state);
}

enum { W = TILE_TEST_W, H = TILE_TEST_H };

/* A RICE_1 image of the shared writer (tile_cfitsio_image.h). */
static int write_image(const char *path, int bitpix, long tx, long ty, int dither, int seed) {
    return tile_test_write_cfitsio(path, RICE_1, bitpix, tx, ty, dither, seed, &rng_state);
}

static int same_bits(const float *a, const float *b, int64_t n, const char *what) {
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], 4)) {
            fprintf(stderr, "%s: pixel %lld: CPU %.9g, GPU %.9g\n", what, (long long)i, a[i], b[i]);
            return 0;
        }
    return 1;
}

/* tide_fits_read_image_at(TIDE_DEVICE) of @p path gives @p host's pixels (bit for bit) and
 * mask. */
static int same_device_read(tide_ctx *gpu, const char *path, const tide_image *host,
                            const char *what) {
    tide_image id, back;
    if (tide_fits_read_image_at(gpu, path, &id, NULL, TIDE_DEVICE)) {
        fprintf(stderr, "%s: device read failed: %s\n", what, tide_error_detail());
        return 0;
    }
    int ok = id.location == TIDE_DEVICE && id.mask && !tide_image_clone(gpu, &back, &id, TIDE_HOST);
    if (ok) {
        char tag[200];
        snprintf(tag, sizeof tag, "%s (device read)", what);
        ok = same_bits(host->pix, back.pix, (int64_t)W * H, tag) &&
             !memcmp(host->mask, back.mask, sizeof(uint16_t) * W * H);
        tide_image_free(gpu, &back);
    }
    tide_image_free(gpu, &id);
    return ok;
}

/* @p path with the last quarter of its bytes zeroed, read on the host (CPU context) and to the
 * device: the same status and detail, and on success the same pixels. */
static void corrupt_file_read(tide_ctx *cpu, tide_ctx *gpu, const char *path, const char *what) {
    char bad[300];
    snprintf(bad, sizeof bad, "%s.bad.fits", path);
    FILE *in = fopen(path, "rb"), *out = fopen(bad, "wb");
    CHECK(in && out);
    if (!in || !out) {
        if (in)
            fclose(in);
        if (out)
            fclose(out);
        return;
    }
    fseek(in, 0, SEEK_END);
    const long size = ftell(in);
    rewind(in);
    uint8_t *bytes = malloc((size_t)size);
    CHECK(fread(bytes, 1, (size_t)size, in) == (size_t)size);
    memset(bytes + size - size / 4, 0, (size_t)(size / 4));
    fwrite(bytes, 1, (size_t)size, out);
    fclose(in);
    fclose(out);
    free(bytes);
    tide_image ic, id;
    const int sc = tide_fits_read_image(cpu, bad, &ic, NULL);
    char dc[1024];
    snprintf(dc, sizeof dc, "%s", sc ? tide_error_detail() : "");
    const int sd = tide_fits_read_image_at(gpu, bad, &id, NULL, TIDE_DEVICE);
    CHECK(sc == sd);
    if (sc && sd && strcmp(dc, tide_error_detail())) {
        fprintf(stderr, "%s, zeroed: host '%s', device '%s'\n", what, dc, tide_error_detail());
        CHECK(0);
    }
    if (!sc && !sd)
        CHECK(same_device_read(gpu, bad, &ic, what));
    if (!sc)
        tide_image_free(cpu, &ic);
    if (!sd)
        tide_image_free(gpu, &id);
    unlink(bad);
}

static void compare(tide_ctx *cpu, tide_ctx *gpu, const char *path, const char *what) {
    tide_tile_image *ti = NULL;
    uint8_t *data = NULL;
    CHECK_OK(tide_fits_tile_load(path, &ti, &data));
    if (!ti)
        return;
    float *a = malloc(sizeof(float) * W * H), *b = malloc(sizeof(float) * W * H);
    CHECK_OK(tide_tile_decode_cpu(ti, data, a, 0));
    memset(b, 0xA5, sizeof(float) * W * H);
    CHECK_OK(tide_tile_decode_cuda(gpu, ti, data, b));
    CHECK(same_bits(a, b, (int64_t)W * H, what));
    /* integers have no fallback tiles: the device itself must decode every tile (the call
     * above would hide a device refusal behind its CPU twin) */
    if (ti->lay.zbitpix > 0) {
        float *d = NULL;
        CHECK_OK(tide_device_alloc(gpu, sizeof(float) * W * H, (void **)&d));
        if (d) {
            CHECK(tide_tile_rice_to_device(gpu, ti, data, d, NULL) == 0);
            memset(b, 0xA5, sizeof(float) * W * H);
            CHECK_OK(tide_memcpy(gpu, b, 0, d, 1, sizeof(float) * W * H));
            CHECK(same_bits(a, b, (int64_t)W * H, what));
            tide_device_free(gpu, d);
        }
    }
    /* the unit in page-locked memory: copied up from where it is, no ring */
    uint8_t *pinned = NULL;
    CHECK_OK(tide_host_pinned_alloc(gpu, (size_t)ti->lay.data_end, (void **)&pinned));
    if (pinned) {
        memcpy(pinned, data, (size_t)ti->lay.data_end);
        memset(b, 0xA5, sizeof(float) * W * H);
        CHECK_OK(tide_tile_decode_cuda(gpu, ti, pinned, b));
        CHECK(same_bits(a, b, (int64_t)W * H, what));
        tide_host_pinned_free(gpu, pinned);
    }
    /* whole reads on both contexts */
    tide_image ic, ig;
    CHECK_OK(tide_fits_read_image(cpu, path, &ic, NULL));
    CHECK_OK(tide_fits_read_image(gpu, path, &ig, NULL));
    CHECK(same_bits(ic.pix, ig.pix, (int64_t)W * H, what));
    CHECK(!memcmp(ic.mask, ig.mask, sizeof(uint16_t) * W * H));
    /* straight to the device (the reduce job's read): the host read's pixels and mask */
    CHECK(same_device_read(gpu, path, &ic, what));
    tide_image_free(cpu, &ic);
    tide_image_free(gpu, &ig);
    /* a file whose last quarter of tiles is zeroed: the same verdict, detail and pixels read
     * to the device as on the host */
    corrupt_file_read(cpu, gpu, path, what);
    /* corrupted: the same verdict and detail on both */
    int64_t naxis1 = ti->lay.naxis1, theap = ti->lay.theap, end = ti->lay.data_end;
    const int64_t cut_tile = ti->lay.ntiles > 1 ? 2 : 1;
    char cut_name[32];
    snprintf(cut_name, sizeof cut_name, "tile %lld:", (long long)cut_tile);
    uint8_t *keep = malloc((size_t)end);
    memcpy(keep, data, (size_t)end);
    for (int mode = 0; mode < 4; mode++) {
        if (mode == 0) { /* tile 2's stream (tile 1's when it is the only one) cut to 2 bytes
                          * (P descriptor: nelem first) */
            uint8_t *d = data + (cut_tile - 1) * naxis1;
            d[0] = d[1] = d[2] = 0;
            d[3] = 2;
        } else {
            for (int64_t i = theap; i < end; i++)
                if (mode == 1 ? rnd() % 16 == 0 : 1)
                    data[i] = mode == 1 ? (uint8_t)rnd() : mode == 2 ? 0 : 0xFF;
        }
        int sc = tide_tile_decode_cpu(ti, data, a, 0);
        char dc[1024];
        snprintf(dc, sizeof dc, "%s", sc ? tide_error_detail() : "");
        int sg = tide_tile_decode_cuda(gpu, ti, data, b);
        CHECK(sc == sg);
        if (sc && sg)
            CHECK(!strcmp(dc, tide_error_detail()));
        if (!sc && !sg)
            CHECK(same_bits(a, b, (int64_t)W * H, what));
        if (mode == 0)
            CHECK(sc == TIDE_E_FORMAT && strstr(dc, cut_name));
        memcpy(data, keep, (size_t)end);
    }
    free(keep);
    free(a);
    free(b);
    tide_host_free(data);
    free(ti);
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no usable GPU");
    setenv("TIDE_GPU_TILE_DECODE", "1", 1); /* whole reads on the CUDA context decode there */
    tide_ctx *cpu = NULL, *gpu = NULL;
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&cpu, &o));
    o.backend = TIDE_BACKEND_CUDA;
    CHECK_OK(tide_ctx_create(&gpu, &o));
    if (!cpu || !gpu)
        return TIDE_TEST_RESULT();
    char path[256];
    snprintf(path, sizeof path, "/tmp/tide_gpu_tile_%d.fits", (int)getpid());
    const int bitpix[] = {8, 16, 32, -32, -64};
    const long tiles[][2] = {{W, 1}, {17, 23}, {W, H}, {100, 7}};
    const char *chunks[] = {NULL, "3", "32"}; /* the size's own count (1 here), then forced */
    for (int c = 0; c < 3; c++)
        for (int b = 0; b < 5; b++)
            for (int t = 0; t < 4; t++)
                for (int d = -1; d <= 2; d++) {
                    if (d == 0 || (bitpix[b] > 0 && d != -1))
                        continue;
                    int seed = 1 + (int)(rnd() % 10000);
                    if (write_image(path, bitpix[b], tiles[t][0], tiles[t][1], d, seed)) {
                        fprintf(stderr, "cfitsio could not write BITPIX %d tiles %ldx%ld\n",
                                bitpix[b], tiles[t][0], tiles[t][1]);
                        CHECK(0);
                        continue;
                    }
                    char what[160];
                    snprintf(what, sizeof what,
                             "BITPIX %d, tiles %ldx%ld, dither %d, seed %d, %s chunks", bitpix[b],
                             tiles[t][0], tiles[t][1], d, seed, chunks[c] ? chunks[c] : "auto");
                    if (chunks[c])
                        setenv("TIDE_GPU_RICE_CHUNKS", chunks[c], 1);
                    else
                        unsetenv("TIDE_GPU_RICE_CHUNKS");
                    compare(cpu, gpu, path, what);
                }
    unsetenv("TIDE_GPU_RICE_CHUNKS");
    /* tide's own compressed output with MASK and VAR planes: read on the host and uploaded,
     * every plane as the host read's */
    tide_image im;
    CHECK_OK(tide_image_alloc(cpu, &im, W, H, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR));
    for (int64_t i = 0; i < (int64_t)W * H; i++) {
        im.pix[i] = i % 311 == 0 ? NAN : (float)(100 + (int)(rnd() % 50));
        im.mask[i] = (uint16_t)(i % 97 == 0 ? TIDE_MASK_HOT : 0);
        im.var[i] = 4.0f + (float)(i % 7);
    }
    CHECK_OK(tide_fits_write_image_as(path, &im, NULL, TIDE_FITS_RICE));
    tide_image_free(cpu, &im);
    tide_image ih, id, back;
    CHECK_OK(tide_fits_read_image(cpu, path, &ih, NULL));
    CHECK_OK(tide_fits_read_image_at(gpu, path, &id, NULL, TIDE_DEVICE));
    CHECK(id.location == TIDE_DEVICE && id.var);
    CHECK_OK(tide_image_clone(gpu, &back, &id, TIDE_HOST));
    CHECK(same_bits(ih.pix, back.pix, (int64_t)W * H, "tide's RICE file with planes") &&
          !memcmp(ih.mask, back.mask, sizeof(uint16_t) * W * H) &&
          !memcmp(ih.var, back.var, sizeof(float) * W * H));
    tide_image_free(cpu, &ih);
    tide_image_free(gpu, &id);
    tide_image_free(gpu, &back);
    /* a device image needs a CUDA context */
    CHECK(tide_fits_read_image_at(cpu, path, &id, NULL, TIDE_DEVICE) == TIDE_E_INVAL);
    unlink(path);
    tide_ctx_destroy(cpu);
    tide_ctx_destroy(gpu);
    return TIDE_TEST_RESULT();
}
#endif
