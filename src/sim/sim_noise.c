/* sim_noise.c — photons and electronics: sky and dark charge, Poisson shot noise, then (after
 * cosmic rays and bleeding) read noise, bias, bad columns, quantisation and saturation.
 *
 * Every pixel draws from its own counter-based stream keyed by (seed, epoch, pixel index), so
 * rows can be done by any thread in any order with the same result. */
#include <math.h>
#include <string.h>

#include "sim_internal.h"

double sim_saturate_adu(const tide_sim_params *p) {
    double s = floor(p->bias + p->fullwell / p->gain);
    return s < 65535.0 ? s : 65535.0;
}

int sim_noise_photons(float *e, const tide_sim_sky *sky, int epoch, const sim_epoch_geom *g,
                      uint8_t *rowsat, int nthreads) {
    const tide_sim_params *p = &sky->p;
    const int64_t W = p->width, H = p->height;
    /* Hot pixels: dark current, part of the expected charge (so it gets shot noise too). */
    if (p->defects)
        for (int64_t k = 0; k < sky->nhot; k++)
            e[sky->hot_idx[k]] += (float)(sky->hot_rate[k] * p->exptime);
    const double gain = p->gain, well = p->fullwell;
    const uint64_t stream = SIM_STREAM_NOISE + 16u * (uint64_t)epoch;
#pragma omp parallel for schedule(static) num_threads(nthreads)
    for (int64_t y = 0; y < H; y++) {
        /* The sky is linear in x along a row plus a quadratic term: evaluate it per pixel
         * (cheap next to the Poisson draw). */
        float *row = e + y * W;
        uint8_t sat = 0;
        for (int64_t x = 0; x < W; x++) {
            double lam = (double)row[x] + gain * sim_sky_at(g, W, H, (double)x, (double)y);
            double v = lam;
            if (p->noise) {
                sim_rng r = sim_rng_make(p->seed, stream, (uint64_t)(y * W + x));
                v = sim_rng_poisson(&r, lam);
            }
            row[x] = (float)v;
            sat |= v > well;
        }
        rowsat[y] = sat;
    }
    return 0;
}

void sim_noise_readout(float *pix, uint16_t *mask, const tide_sim_sky *sky, int epoch,
                       int nthreads) {
    const tide_sim_params *p = &sky->p;
    const int64_t W = p->width, H = p->height;
    const double inv_gain = 1.0 / p->gain, sat = sim_saturate_adu(p);
    const double rn_adu = p->rdnoise / p->gain;
    const uint64_t stream = SIM_STREAM_READ + 16u * (uint64_t)epoch;
#pragma omp parallel for schedule(static) num_threads(nthreads)
    for (int64_t y = 0; y < H; y++) {
        float *row = pix + y * W;
        uint16_t *mrow = mask + y * W;
        /* Bad columns: dead (no charge reaches the amplifier) or hot (a constant excess). */
        if (p->defects)
            for (int64_t k = 0; k < sky->nbad; k++)
                if (y >= sky->bad_y0[k]) {
                    float *v = &row[sky->bad_x[k]];
                    *v = sky->bad_level[k] < 0 ? 0.0f : *v + (float)sky->bad_level[k];
                }
        for (int64_t x = 0; x < W; x++) {
            double adu = p->bias + (double)row[x] * inv_gain;
            if (p->noise) {
                sim_rng r = sim_rng_make(p->seed, stream, (uint64_t)(y * W + x));
                adu = floor(adu + rn_adu * sim_rng_gauss(&r) + 0.5);
            }
            if (adu >= sat) {
                adu = sat;
                mrow[x] |= TIDE_MASK_SATURATED;
            }
            if (adu < 0)
                adu = 0;
            row[x] = (float)adu;
        }
    }
}
