/* test_cosmetics_skysub.c — cosmetics on a frame whose sky was subtracted (as DECam
 * community-pipeline products and many archive frames are) but whose header still gives the
 * detector's GAIN and RDNOISE. The sky's photon noise is still in the pixels while the noise
 * model at a level of ~0 sees only the read noise, so the model is checked against the
 * frame's measured noise (cosmetics.c, check_model). Requirement: the masks equal, up to a
 * few pixels, those of the same frame with its sky and bias left in: the same cosmic rays
 * found, no flood of false hits on the sky and on stars (before the check: a quarter of the
 * frame flagged here, half of it on the real DEC-OBS frames of the gauntlet). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tide/tide.h"
#include "tide_test.h"

static int64_t count_bits(const uint16_t *m, int64_t n, uint16_t bits) {
    int64_t c = 0;
    for (int64_t k = 0; k < n; k++)
        c += (m[k] & bits) != 0;
    return c;
}

int main(void) {
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    sp.width = 512;
    sp.height = 512;
    sp.nstars = 600;
    sp.cr_rate = 2000; /* ~100 hits on 512² */
    sp.sky = 3000.0;   /* sky-limited, as the DECam frames (3000-11000 ADU removed) */
    sp.sky_grad = 0.0;
    sp.sky_quad = 0.0;
    sp.fwhm = 4.0;
    sp.seed = 5;
    sp.with_mask = 1;
    tide_sim_frame f;
    CHECK_OK(tide_sim_run(ctx, &sp, &f, NULL));
    const int64_t W = sp.width, n = W * sp.height;
    uint16_t *truth = malloc(sizeof(uint16_t) * (size_t)n);
    memcpy(truth, f.image.mask, sizeof(uint16_t) * (size_t)n);
    const uint16_t defects = TIDE_MASK_COSMIC | TIDE_MASK_HOT | TIDE_MASK_COLD | TIDE_MASK_BAD;

    tide_cosmetics_params p;
    tide_cosmetics_params_default(&p);
    CHECK_OK(tide_cosmetics_params_from_header(&p, &f.header));
    p.bias = sp.bias;
    p.saturation = sp.bias + 0.98 * (p.saturation - sp.bias);
    /* reference: the frame as read out */
    memset(f.image.mask, 0, sizeof(uint16_t) * (size_t)n);
    CHECK_OK(tide_cosmetics_apply(ctx, &f.image, &p, NULL));
    uint16_t *ref = malloc(sizeof(uint16_t) * (size_t)n);
    memcpy(ref, f.image.mask, sizeof(uint16_t) * (size_t)n);
    const int64_t nref = count_bits(ref, n, defects);
    int64_t ncr = 0, ncr_found = 0;
    for (int64_t k = 0; k < n; k++)
        if (truth[k] & TIDE_MASK_COSMIC) {
            ncr++;
            ncr_found += (ref[k] & (TIDE_MASK_COSMIC | TIDE_MASK_HOT)) != 0;
        }
    printf("read-out frame: %lld defect pixels, %lld of %lld CR pixels found\n", (long long)nref,
           (long long)ncr_found, (long long)ncr);
    CHECK(ncr > 200 && ncr_found > 0.8 * ncr);

    /* the same pixels with bias and sky removed: same gain and read noise */
    for (int64_t k = 0; k < n; k++)
        f.image.pix[k] -= (float)(sp.bias + sp.sky);
    tide_cosmetics_params q = p;
    q.bias = 0.0;
    q.saturation = p.saturation - sp.bias - sp.sky;
    memset(f.image.mask, 0, sizeof(uint16_t) * (size_t)n);
    CHECK_OK(tide_cosmetics_apply(ctx, &f.image, &q, NULL));
    const int64_t nsub = count_bits(f.image.mask, n, defects);
    int64_t differ = 0, cr_sub = 0;
    for (int64_t k = 0; k < n; k++) {
        differ += (f.image.mask[k] & defects) != (ref[k] & defects);
        cr_sub +=
            (truth[k] & TIDE_MASK_COSMIC) && (f.image.mask[k] & (TIDE_MASK_COSMIC | TIDE_MASK_HOT));
    }
    printf("sky-subtracted: %lld defect pixels (%lld differ from the read-out frame's), %lld "
           "CR pixels found\n",
           (long long)nsub, (long long)differ, (long long)cr_sub);
    CHECK(cr_sub >= ncr_found - ncr / 50);
    CHECK(differ <= nref / 10 + 10);

    free(ref);
    free(truth);
    tide_sim_frame_free(ctx, &f);
    tide_ctx_destroy(ctx);
    TIDE_TEST_RESULT();
}
