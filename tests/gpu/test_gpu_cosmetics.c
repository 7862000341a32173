/* test_gpu_cosmetics.c — the CUDA cosmetics kernels against their CPU twins: identical masks,
 * identical inpainted pixels and identical counts on random frames of awkward sizes (1×1,
 * 97×89, 4097×3, 3×4097, a padded-stride frame), for host images handed to a CUDA context
 * and for device images, with bleed along columns and rows. The 5×5 medians run on staged
 * COS_TILE tiles, so sizes straddle tile borders (33×17, 97×89); the simulated frame needs
 * several L.A.Cosmic iterations, so the CUDA path's dirty-tile updates (iterations 2..) are
 * compared too; so is the release of star-like candidates (psf_fwhm), on random frames and on
 * a simulated frame of FWHM 1.3 px. Skips (77) without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_rng.h"
#include "tide/tide.h"
#include "tide_test.h"

static uint64_t rng_state;
static double urand(void) {
    return trng_unit(trng_lcg64(&rng_state));
}
static double nrand(void) {
    double u = urand() + 1e-300, v = urand();
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* A host frame with sky, noise, stars, saturated stars with trails, cosmic rays, hot and
 * cold pixels and a NaN patch, on a row stride of w + pad. */
static void make_frame(tide_image *im, int64_t w, int64_t h, int64_t pad, uint64_t seed) {
    memset(im, 0, sizeof *im);
    im->width = w;
    im->height = h;
    im->stride = w + pad;
    im->location = TIDE_HOST;
    im->pix = calloc((size_t)(im->stride * h), sizeof(float));
    im->mask = calloc((size_t)(im->stride * h), sizeof(uint16_t));
    rng_state = seed;
    const double sat = 30000;
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++)
            im->pix[y * im->stride + x] = (float)floor(1000 + 30 * nrand() + 0.5);
    const int64_t n = w * h;
    const int nstar = (int)(n / 400) + 1;
    for (int k = 0; k < nstar; k++) {
        double x0 = urand() * w, y0 = urand() * h, a = exp(urand() * log(2e5)), s = 1.0 + urand();
        for (int64_t y = (int64_t)y0 - 8; y <= (int64_t)y0 + 8; y++)
            for (int64_t x = (int64_t)x0 - 8; x <= (int64_t)x0 + 8; x++) {
                if (x < 0 || y < 0 || x >= w || y >= h)
                    continue;
                double r2 = (x - x0) * (x - x0) + (y - y0) * (y - y0);
                float *v = &im->pix[y * im->stride + x];
                *v = (float)fmin(sat, floor(*v + a * exp(-r2 / (2 * s * s))));
            }
        if (a > 3e4) /* a trail */
            for (int64_t y = (int64_t)y0 - 10; y <= (int64_t)y0 + 10; y++)
                if (y >= 0 && y < h && (int64_t)x0 < w)
                    im->pix[y * im->stride + (int64_t)x0] = (float)sat;
    }
    for (int64_t k = 0; k < n / 300 + 1; k++) {
        int64_t x = (int64_t)(urand() * w), y = (int64_t)(urand() * h);
        const double u = urand();
        float add = (float)floor(200 + 3000 * urand());
        int len = u < 0.5 ? 1 : 1 + (int)(urand() * 6);
        for (int s = 0; s < len && x + s < w; s++)
            im->pix[y * im->stride + x + s] += add; /* CR or hot pixel */
        if (u > 0.9)
            im->pix[y * im->stride + x] = 100.0f; /* cold pixel */
    }
    if (w > 10 && h > 10) /* a NaN patch, flagged NODATA like the FITS reader does */
        for (int64_t y = 2; y < 5; y++)
            for (int64_t x = 3; x < 7; x++) {
                im->pix[y * im->stride + x] = NAN;
                im->mask[y * im->stride + x] = TIDE_MASK_NODATA;
            }
}

static void free_frame(tide_image *im) {
    free(im->pix);
    free(im->mask);
    memset(im, 0, sizeof *im);
}

static int same_planes(const tide_image *a, const tide_image *b) {
    int ok = 1;
    for (int64_t y = 0; y < a->height; y++) {
        ok &= memcmp(a->mask + y * a->stride, b->mask + y * b->stride,
                     sizeof(uint16_t) * (size_t)a->width) == 0;
        ok &= memcmp(a->pix + y * a->stride, b->pix + y * b->stride,
                     sizeof(float) * (size_t)a->width) == 0;
    }
    return ok;
}

static int same_report(const tide_cosmetics_report *a, const tide_cosmetics_report *b) {
    return a->n_saturated == b->n_saturated && a->n_bleed == b->n_bleed && a->n_hot == b->n_hot &&
           a->n_cold == b->n_cold && a->n_cosmic == b->n_cosmic && a->n_interp == b->n_interp &&
           a->cosmic_iterations == b->cosmic_iterations;
}

static void one_case(tide_ctx *cpu, tide_ctx *gpu, int64_t w, int64_t h, int64_t pad, uint64_t seed,
                     int axis, int inpaint, double psf_fwhm) {
    tide_image a, b, c;
    make_frame(&a, w, h, pad, seed);
    make_frame(&b, w, h, pad, seed);
    make_frame(&c, w, h, pad, seed);
    tide_cosmetics_params p;
    tide_cosmetics_params_default(&p);
    p.gain = 2.0;
    p.rdnoise = 8.0;
    p.bias = 0.0;
    p.saturation = 30000;
    p.bleed_axis = axis;
    p.inpaint = inpaint;
    p.psf_fwhm = psf_fwhm;
    tide_cosmetics_report ra, rb, rc;
    CHECK_OK(tide_cosmetics_apply(cpu, &a, &p, &ra));
    /* host image on the CUDA context */
    CHECK_OK(tide_cosmetics_apply(gpu, &b, &p, &rb));
    /* device image */
    tide_image d;
    memset(&d, 0, sizeof d);
    CHECK_OK(tide_image_clone(gpu, &d, &c, TIDE_DEVICE));
    CHECK_OK(tide_cosmetics_apply(gpu, &d, &p, &rc));
    tide_image back;
    CHECK_OK(tide_image_clone(gpu, &back, &d, TIDE_HOST));
    int ok1 = same_planes(&a, &b), ok2 = same_planes(&a, &back);
    int ok3 = same_report(&ra, &rb) && same_report(&ra, &rc);
    printf("%lldx%lld pad %lld axis %d inpaint %d psf_fwhm %.1f: sat %lld bleed %lld hot %lld cold "
           "%lld "
           "cosmic %lld interp %lld | host-on-gpu %s, device %s, counts %s\n",
           (long long)w, (long long)h, (long long)pad, axis, inpaint, psf_fwhm,
           (long long)ra.n_saturated, (long long)ra.n_bleed, (long long)ra.n_hot,
           (long long)ra.n_cold, (long long)ra.n_cosmic, (long long)ra.n_interp,
           ok1 ? "same" : "DIFFER", ok2 ? "same" : "DIFFER", ok3 ? "same" : "DIFFER");
    CHECK(ok1);
    CHECK(ok2);
    CHECK(ok3);
    tide_image_free(gpu, &back);
    tide_image_free(gpu, &d);
    free_frame(&a);
    free_frame(&b);
    free_frame(&c);
}

/* A simulated frame with the simulator's defects, at the simulator's FWHM @p fwhm, cleaned
 * with the star-like release at @p psf_fwhm (0: off) on both backends. */
static void sim_case(tide_ctx *cpu, tide_ctx *gpu, double fwhm, double psf_fwhm) {
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    sp.width = 1031;
    sp.height = 1009;
    sp.nstars = 1500;
    sp.cr_rate = 2000;
    sp.seed = 5;
    sp.fwhm = fwhm;
    tide_sim_frame f;
    CHECK_OK(tide_sim_run(cpu, &sp, &f, NULL));
    tide_image a, b;
    CHECK_OK(tide_image_alloc(cpu, &a, sp.width, sp.height, TIDE_HOST, TIDE_IMAGE_MASK));
    CHECK_OK(tide_image_alloc(cpu, &b, sp.width, sp.height, TIDE_HOST, TIDE_IMAGE_MASK));
    memcpy(a.pix, f.image.pix, sizeof(float) * (size_t)(sp.width * sp.height));
    memcpy(b.pix, f.image.pix, sizeof(float) * (size_t)(sp.width * sp.height));
    tide_cosmetics_params p;
    tide_cosmetics_params_default(&p);
    CHECK_OK(tide_cosmetics_params_from_header(&p, &f.header));
    p.bias = sp.bias;
    p.inpaint = 1;
    p.psf_fwhm = psf_fwhm;
    tide_cosmetics_report ra, rb;
    CHECK_OK(tide_cosmetics_apply(cpu, &a, &p, &ra));
    CHECK_OK(tide_cosmetics_apply(gpu, &b, &p, &rb));
    printf("sim %lldx%lld FWHM %.1f psf_fwhm %.1f: cosmic %lld / %lld in %d / %d iterations, "
           "hot %lld / %lld; cpu %.1f ms, gpu %.1f ms\n",
           (long long)sp.width, (long long)sp.height, fwhm, psf_fwhm, (long long)ra.n_cosmic,
           (long long)rb.n_cosmic, ra.cosmic_iterations, rb.cosmic_iterations, (long long)ra.n_hot,
           (long long)rb.n_hot, ra.ms_total, rb.ms_total);
    CHECK(same_planes(&a, &b));
    CHECK(same_report(&ra, &rb));
    CHECK(ra.n_cosmic > 100);
    /* iterations 2.. ran (CPU: 1232, 11, 0 new hits at FWHM 3): the GPU's dirty-tile path is
     * covered */
    CHECK(ra.cosmic_iterations >= 2);
    /* Run-to-run: bitwise the same on the GPU. */
    tide_image c;
    CHECK_OK(tide_image_alloc(cpu, &c, sp.width, sp.height, TIDE_HOST, TIDE_IMAGE_MASK));
    memcpy(c.pix, f.image.pix, sizeof(float) * (size_t)(sp.width * sp.height));
    CHECK_OK(tide_cosmetics_apply(gpu, &c, &p, &rb));
    CHECK(same_planes(&b, &c));
    tide_image_free(cpu, &a);
    tide_image_free(cpu, &b);
    tide_image_free(cpu, &c);
    tide_sim_frame_free(cpu, &f);
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
    one_case(cpu, gpu, 1, 1, 0, 1, 0, 1, 0.0);
    one_case(cpu, gpu, 2, 3, 0, 2, 0, 1, 0.0);
    one_case(cpu, gpu, 97, 89, 0, 3, 0, 1, 0.0);
    one_case(cpu, gpu, 33, 17, 7, 9, 0, 1, 0.0);
    one_case(cpu, gpu, 16, 16, 0, 10, 1, 1, 0.0);
    one_case(cpu, gpu, 97, 89, 5, 4, 1, 0, 0.0);
    one_case(cpu, gpu, 4097, 3, 0, 5, 0, 1, 0.0);
    one_case(cpu, gpu, 3, 4097, 0, 6, 0, 1, 0.0);
    one_case(cpu, gpu, 4097, 3, 0, 7, 1, 0, 0.0);
    one_case(cpu, gpu, 509, 1031, 3, 8, 0, 1, 0.0);
    /* the star-like release (cosmetics.h, psf_fwhm) in the hot and cosmic-ray passes */
    one_case(cpu, gpu, 97, 89, 0, 3, 0, 1, 1.5);
    one_case(cpu, gpu, 509, 1031, 3, 8, 0, 1, 2.0);

    sim_case(cpu, gpu, 3.0, 0.0);
    sim_case(cpu, gpu, 1.3, 0.0);
    sim_case(cpu, gpu, 1.3, 1.3);
    tide_ctx_destroy(gpu);
    tide_ctx_destroy(cpu);
    return TIDE_TEST_RESULT();
}
