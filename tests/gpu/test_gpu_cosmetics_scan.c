/* test_gpu_cosmetics_scan.c — the CUDA line scans of the cosmetics stage against their CPU
 * twins, kernel by kernel, on frames made to stress them: bleed trails (segmented on the GPU)
 * with long high runs crossing many segments, saturated NaN pixels, wholly high lines with and
 * without a saturated pixel, along columns and rows, grow 0, 2, 7 and 1024, sizes around the
 * segment length; bad columns (block signs then runs on the GPU) with partial and whole bad
 * columns; hot/cold flags (screened on the GPU). Masks and flags must be identical. Skips (77)
 * without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_rng.h"
#include "tide/tide.h"
#include "tide_test.h"

#ifndef TIDE_HAVE_CUDA
int main(void) {
    (void)tide_test_failures;
    TIDE_TEST_SKIP("this build has no CUDA backend");
}
#else
#include "reduction/cosmetics/cosmetics_internal.h"
#include "reduction/cosmetics/cosmetics_kernels.h"
#include "reduction/cosmetics/cosmetics_lines_math.h"

static uint64_t rs = 0xD1B54A32D192ED03ull;
static uint32_t urand32(void) {
    return (uint32_t)(trng_xorshift64(&rs) >> 11);
}
static double urand(void) {
    return (urand32() & 0xFFFFFF) / 16777216.0;
}

#define HI 100.0f

/* Lines along `axis`, each in a random regime (see test_cosmetics_scan.c). */
static void bleed_frame(float *pix, uint16_t *mask, int64_t w, int64_t h, int64_t ld, int axis) {
    const int64_t nl = axis == 0 ? w : h, len = axis == 0 ? h : w;
    for (int64_t l = 0; l < nl; l++) {
        const int mode = (int)(urand() * 5);
        int high = 0;
        int64_t left = 0;
        for (int64_t i = 0; i < len; i++) {
            const int64_t p = axis == 0 ? i * ld + l : l * ld + i;
            double psat = 0;
            if (mode == 0) {
                high = urand() < 0.3;
                psat = 0.03;
            } else if (mode <= 2) {
                if (left == 0) {
                    high = !high;
                    left = 1 + (int64_t)(urand() * (mode == 1 ? 600 : 60));
                }
                left--;
                psat = high ? (mode == 1 ? 0.002 : 0.01) : 0.0;
            } else if (mode == 3) {
                high = 1;
                psat = urand() < 0.5 ? 0.0 : 1.0 / (double)len;
            } else {
                high = urand() < 0.02;
            }
            const double u = urand();
            mask[p] = (uint16_t)(urand() < 0.02 ? TIDE_MASK_BLEED : 0);
            pix[p] = high ? (u < 0.1 ? HI : 150.0f) : (u < 0.05 ? NAN : 50.0f);
            if (urand() < psat) {
                mask[p] |= TIDE_MASK_SATURATED;
                pix[p] = urand() < 0.2 ? NAN : 30000.0f;
            }
        }
    }
}

/* Device copies of a host plane. */
static void *to_device(tide_ctx *gpu, const void *h, size_t bytes) {
    void *d = NULL;
    CHECK_OK(tide_device_alloc(gpu, bytes, &d));
    if (d)
        CHECK_OK(tide_memcpy(gpu, d, 1, h, 0, bytes));
    return d;
}

static void bleed_case(tide_ctx *cpu, tide_ctx *gpu, int64_t w, int64_t h, int64_t pad, int axis,
                       int grow) {
    const int64_t ld = w + pad, n = ld * h;
    const size_t pb = sizeof(float) * (size_t)n, mb = sizeof(uint16_t) * (size_t)n;
    float *pix = malloc(pb);
    uint16_t *m0 = malloc(mb), *m1 = malloc(mb), *m2 = malloc(mb);
    uint8_t *scr = malloc((size_t)(w * h));
    bleed_frame(pix, m0, w, h, ld, axis);
    memcpy(m1, m0, mb);
    const tide_cos_geom g = {w, h, ld};
    CHECK_OK(tide_cos_bleed_cpu(cpu, &g, pix, m1, HI, axis, grow, scr));
    float *dp = to_device(gpu, pix, pb);
    uint16_t *dm = to_device(gpu, m0, mb);
    uint8_t *ds = NULL;
    CHECK_OK(tide_device_alloc(gpu, (size_t)(w * h), (void **)&ds));
    CHECK_OK(tide_cos_bleed_cuda(gpu, &g, dp, dm, HI, axis, grow, ds));
    CHECK_OK(tide_memcpy(gpu, m2, 0, dm, 1, mb));
    int64_t nb = 0, nd = 0;
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            const int64_t p = y * ld + x;
            nb += (m1[p] & TIDE_MASK_BLEED) && !(m0[p] & TIDE_MASK_BLEED);
            nd += m1[p] != m2[p];
        }
    printf("bleed %lldx%lld axis %d grow %d: %lld new BLEED, %lld differ\n", (long long)w,
           (long long)h, axis, grow, (long long)nb, (long long)nd);
    CHECK(nd == 0);
    CHECK(nb > 0 || w * h < 1000); /* the big frames surely have trails */
    tide_device_free(gpu, dp);
    tide_device_free(gpu, dm);
    tide_device_free(gpu, ds);
    free(pix), free(m0), free(m1), free(m2), free(scr);
}

/* Sky with bad columns (whole and partial), NaN and saturated pixels; hot and cold pixels. */
static void defect_frame(float *pix, uint16_t *mask, int64_t w, int64_t h, int64_t ld) {
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            const double u = urand();
            float v = (float)(1000 + 30 * (urand() + urand() + urand() - 1.5) * 2);
            if (u < 0.01)
                v += 800; /* hot */
            else if (u < 0.02)
                v -= 600; /* cold */
            else if (u < 0.025)
                v = NAN;
            pix[y * ld + x] = v;
            mask[y * ld + x] = (uint16_t)(urand() < 0.005 ? TIDE_MASK_SATURATED : 0);
        }
    for (int c = 0; c < 6 && w > 0; c++) {
        const int64_t x = (int64_t)(urand() * w), y0 = c < 3 ? 0 : (int64_t)(urand() * h);
        const float off = (c & 1 ? 1 : -1) * 300.0f;
        for (int64_t y = y0; y < h; y++)
            pix[y * ld + x] += off;
    }
}

static void defect_case(tide_ctx *cpu, tide_ctx *gpu, int64_t w, int64_t h, int64_t pad) {
    const int64_t ld = w + pad, n = ld * h, np = w * h;
    const size_t pb = sizeof(float) * (size_t)n, mb = sizeof(uint16_t) * (size_t)n;
    float *pix = malloc(pb);
    uint16_t *mask = malloc(mb);
    uint8_t *blk = malloc((size_t)np), *o1 = malloc((size_t)np), *o2 = malloc((size_t)np);
    defect_frame(pix, mask, w, h, ld);
    const tide_cos_geom g = {w, h, ld};
    const tide_cos_noise nm = {2.0f, 64.0f, 0.0f};
    const uint16_t excl = TIDE_MASK_SATURATED | TIDE_MASK_NODATA;
    float *dp = to_device(gpu, pix, pb);
    uint16_t *dm = to_device(gpu, mask, mb);
    uint8_t *dblk = NULL, *dout = NULL;
    CHECK_OK(tide_device_alloc(gpu, (size_t)np, (void **)&dblk));
    CHECK_OK(tide_device_alloc(gpu, (size_t)np, (void **)&dout));
    /* bad columns */
    CHECK_OK(tide_cos_badcol_cpu(cpu, &g, pix, mask, &nm, excl, 3.0f, 3, blk, o1));
    CHECK_OK(tide_memzero(gpu, dout, 1, (size_t)np));
    CHECK_OK(tide_cos_badcol_cuda(gpu, &g, dp, dm, &nm, excl, 3.0f, 3, dblk, dout));
    CHECK_OK(tide_memcpy(gpu, o2, 0, dout, 1, (size_t)np));
    int64_t nbad = 0;
    for (int64_t i = 0; i < np; i++)
        nbad += o1[i];
    const int same_bad = memcmp(o1, o2, (size_t)np) == 0;
    /* hot / cold */
    tide_cos_hot hp;
    hp.hot_sigma = 5.0f;
    hp.cold_sigma = 5.0f;
    hp.isolation = 0.5f;
    hp.ratio = 4.0f;
    hp.do_hot = 1;
    hp.do_cold = 1;
    hp.excl = excl;
    CHECK(same_bad);
    printf("defects %lldx%lld: %lld bad-column pixels (%s)\n", (long long)w, (long long)h,
           (long long)nbad, same_bad ? "same" : "DIFFER");
    /* without and with the star-like release (cosmetics.h, psf_fwhm 1.3 px) */
    for (int on = 0; on <= 1; on++) {
        tide_cosmetics_params cp;
        tide_cosmetics_params_default(&cp);
        cp.psf_fwhm = on ? 1.3 : 0.0;
        hp.psf = tide_cos_psf_of(&cp);
        hp.psf.nm = nm;
        CHECK_OK(tide_cos_hotcold_cpu(cpu, &g, pix, mask, &nm, &hp, o1));
        CHECK_OK(tide_cos_hotcold_cuda(gpu, &g, dp, dm, &nm, &hp, dout));
        CHECK_OK(tide_memcpy(gpu, o2, 0, dout, 1, (size_t)np));
        int64_t nhc = 0;
        for (int64_t i = 0; i < np; i++)
            nhc += o1[i] != 0;
        const int same_hc = memcmp(o1, o2, (size_t)np) == 0;
        printf("  release %s: %lld hot/cold (%s)\n", on ? "on" : "off", (long long)nhc,
               same_hc ? "same" : "DIFFER");
        CHECK(same_hc);
    }
    tide_device_free(gpu, dp);
    tide_device_free(gpu, dm);
    tide_device_free(gpu, dblk);
    tide_device_free(gpu, dout);
    free(pix), free(mask), free(blk), free(o1), free(o2);
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no usable GPU");
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *cpu = NULL, *gpu = NULL;
    CHECK_OK(tide_ctx_create(&cpu, &o));
    o.backend = TIDE_BACKEND_CUDA;
    CHECK_OK(tide_ctx_create(&gpu, &o));
    if (!cpu || !gpu)
        return TIDE_TEST_RESULT();
    const int grows[] = {0, 2, 7, 1024};
    for (int k = 0; k < 4; k++) {
        bleed_case(cpu, gpu, 300, 2000, 3, 0, grows[k]);
        bleed_case(cpu, gpu, 2000, 300, 0, 1, grows[k]);
    }
    bleed_case(cpu, gpu, 129, 257, 1, 0, 2);
    bleed_case(cpu, gpu, 257, 129, 1, 1, 2);
    bleed_case(cpu, gpu, 1, 1, 0, 0, 2);
    bleed_case(cpu, gpu, 5, 127, 0, 0, 1);
    bleed_case(cpu, gpu, 127, 5, 0, 1, 1);
    bleed_case(cpu, gpu, 1000, 1000, 0, 0, 2);
    defect_case(cpu, gpu, 1, 1, 0);
    defect_case(cpu, gpu, 97, 89, 3);
    defect_case(cpu, gpu, 300, 1000, 0);
    defect_case(cpu, gpu, 1031, 65, 1);
    tide_ctx_destroy(gpu);
    tide_ctx_destroy(cpu);
    return TIDE_TEST_RESULT();
}
#endif
