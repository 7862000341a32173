/* test_gpu_reduce.c — the CUDA reductions against their CPU twins: stats, median,
 * percentiles and sigma clipping must be bitwise identical (same fixed order, same IEEE
 * operations, exact selection) on random inputs with NaN, Inf and masks, at awkward sizes,
 * for host images (uploaded) and device images, and identical across repeated GPU runs.
 * Also prints GPU timings on a 14200×10650 frame. Skips without a GPU. */
#include "tide_test.h"
#include "unit/test_reduce_ref.h"

static const double QS[] = {0.0, 0.5, 5.0, 25.0, 50.0, 75.0, 95.0, 99.5, 100.0};
#define NQ ((int)(sizeof QS / sizeof QS[0]))

typedef struct {
    int st_stats, st_med, st_pct, st_clip[2];
    tide_stats s;
    double med, pct[NQ];
    tide_sigclip_result clip[2];
} all_results;

static void compute(tide_ctx *c, const tide_image *im, uint16_t bits, all_results *r) {
    memset(r, 0, sizeof *r);
    r->st_stats = tide_reduce_stats(c, im, bits, &r->s);
    r->st_med = tide_reduce_median(c, im, bits, &r->med);
    r->st_pct = tide_reduce_percentiles(c, im, bits, QS, NQ, r->pct);
    const tide_sigclip_params p[2] = {{3.0, 5}, {2.0, 0}};
    for (int k = 0; k < 2; k++)
        r->st_clip[k] = tide_reduce_sigma_clip(c, im, bits, &p[k], &r->clip[k]);
}

static void compare(const all_results *a, const all_results *b, const char *what, int64_t w,
                    int64_t h) {
    int bad = a->st_stats != b->st_stats || a->st_med != b->st_med || a->st_pct != b->st_pct ||
              a->st_clip[0] != b->st_clip[0] || a->st_clip[1] != b->st_clip[1];
    bad |= memcmp(&a->s, &b->s, sizeof a->s) != 0;
    bad |= memcmp(&a->med, &b->med, sizeof a->med) != 0;
    bad |= memcmp(a->pct, b->pct, sizeof a->pct) != 0;
    for (int k = 0; k < 2; k++)
        bad |= memcmp(&a->clip[k], &b->clip[k], sizeof a->clip[k]) != 0;
    if (bad) {
        fprintf(stderr,
                "%s %lldx%lld differs:\n  cpu n %lld sum %.17g mean %.17g std %.17g min %g max "
                "%g med %.17g clip %.17g %.17g %.17g it %d\n  gpu n %lld sum %.17g mean %.17g "
                "std %.17g min %g max %g med %.17g clip %.17g %.17g %.17g it %d\n",
                what, (long long)w, (long long)h, (long long)a->s.n_valid, a->s.sum, a->s.mean,
                a->s.std, a->s.min, a->s.max, a->med, a->clip[0].mean, a->clip[0].median,
                a->clip[0].std, a->clip[0].iterations, (long long)b->s.n_valid, b->s.sum, b->s.mean,
                b->s.std, b->s.min, b->s.max, b->med, b->clip[0].mean, b->clip[0].median,
                b->clip[0].std, b->clip[0].iterations);
        tide_test_failures++;
    }
}

static void agree(tide_ctx *cpu, tide_ctx *gpu, const tide_image *host, uint16_t bits,
                  const char *what) {
    all_results rc, rg, rd, rd2;
    compute(cpu, host, bits, &rc);
    compute(gpu, host, bits, &rg); /* host image: uploaded into the scratch */
    compare(&rc, &rg, what, host->width, host->height);
    tide_image dev;
    CHECK_OK(tide_image_clone(gpu, &dev, host, TIDE_DEVICE));
    compute(gpu, &dev, bits, &rd);
    compute(gpu, &dev, bits, &rd2);
    compare(&rc, &rd, what, host->width, host->height);
    compare(&rd, &rd2, "gpu-repeat", host->width, host->height);
    tide_image_free(gpu, &dev);
}

static double time_ms(tide_ctx *g, const tide_image *dev, int what) {
    tide_stats s;
    double med;
    tide_sigclip_result r;
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        const double t0 = tide_now();
        if (what == 0)
            tide_reduce_stats(g, dev, TIDE_REDUCE_ALL_BITS, &s);
        else if (what == 1)
            tide_reduce_median(g, dev, TIDE_REDUCE_ALL_BITS, &med);
        else
            tide_reduce_sigma_clip(g, dev, TIDE_REDUCE_ALL_BITS, NULL, &r);
        const double t = (tide_now() - t0) * 1e3;
        best = t < best ? t : best;
    }
    return best;
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
        return 1;

    const int64_t sizes[][2] = {{1, 1},    {2, 1},    {97, 89},     {4097, 3},    {3, 4097},
                                {4096, 1}, {4097, 1}, {1021, 1019}, {2048, 2049}, {4099, 4093}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        tide_image im;
        CHECK_OK(tide_image_alloc(cpu, &im, sizes[i][0], sizes[i][1], TIDE_HOST, TIDE_IMAGE_MASK));
        ref_fill(&im, 1000 + i, 1000.0, 0.03, 0.06);
        agree(cpu, gpu, &im, TIDE_REDUCE_ALL_BITS, "all-bits");
        agree(cpu, gpu, &im, TIDE_MASK_NODATA, "nodata");
        agree(cpu, gpu, &im, 0, "no-bits");
        ref_fill(&im, 2000 + i, -1.0, 0.2, 0.3); /* heavy NaN/mask, values across zero */
        agree(cpu, gpu, &im, TIDE_REDUCE_ALL_BITS, "sparse");
        /* Ties and signed zeros. */
        uint64_t s = 77 + i;
        for (int64_t k = 0; k < im.width * im.height; k++) {
            const uint64_t r = ref_rng_next(&s) % 9;
            im.pix[k] = r == 0 ? -0.0f : r == 1 ? 0.0f : (float)((int)r - 4);
        }
        agree(cpu, gpu, &im, TIDE_REDUCE_ALL_BITS, "ties");
        /* All invalid: both say TIDE_E_EMPTY. */
        for (int64_t k = 0; k < im.width * im.height; k++)
            im.pix[k] = NAN;
        agree(cpu, gpu, &im, TIDE_REDUCE_ALL_BITS, "all-nan");
        tide_image_free(cpu, &im);
    }

    /* Strided host image (uploaded with its stride). */
    {
        const int64_t w = 1001, h = 67, stride = 1100;
        float *pix = (float *)malloc((size_t)(stride * h) * sizeof(float));
        uint16_t *mask = (uint16_t *)calloc((size_t)(stride * h), sizeof(uint16_t));
        for (int64_t k = 0; k < stride * h; k++)
            pix[k] = -1e30f;
        tide_image im = {w, h, stride, pix, mask, NULL, TIDE_HOST, 0};
        ref_fill(&im, 31, 5.0, 0.05, 0.05);
        all_results rc, rg;
        compute(cpu, &im, TIDE_REDUCE_ALL_BITS, &rc);
        compute(gpu, &im, TIDE_REDUCE_ALL_BITS, &rg);
        compare(&rc, &rg, "strided", w, h);
        free(pix);
        free(mask);
    }

    /* The largest camera frame: agreement and timings (best of 5, host clock around
     * synchronous calls). */
    {
        const int64_t w = 14200, h = 10650;
        tide_image im, dev;
        CHECK_OK(tide_image_alloc(cpu, &im, w, h, TIDE_HOST, TIDE_IMAGE_MASK));
        ref_fill(&im, 4242, 1000.0, 0.001, 0.01);
        all_results rc, rd;
        double t0 = tide_now();
        compute(cpu, &im, TIDE_REDUCE_ALL_BITS, &rc);
        const double tcpu = (tide_now() - t0) * 1e3;
        CHECK_OK(tide_image_clone(gpu, &dev, &im, TIDE_DEVICE));
        compute(gpu, &dev, TIDE_REDUCE_ALL_BITS, &rd);
        compare(&rc, &rd, "151MP", w, h);
        printf("14200x10650 GPU: stats %.3f ms, median %.3f ms, sigma-clip %.3f ms "
               "(%d iterations); CPU all five calls %.0f ms\n",
               time_ms(gpu, &dev, 0), time_ms(gpu, &dev, 1), time_ms(gpu, &dev, 2),
               rd.clip[0].iterations, tcpu);
        tide_image_free(gpu, &dev);
        tide_image_free(cpu, &im);
    }
    tide_ctx_destroy(gpu);
    tide_ctx_destroy(cpu);
    return TIDE_TEST_RESULT();
}
