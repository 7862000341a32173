/* sim_defects.c — what a real detector adds: hot pixels and bad columns (fixed for the
 * detector, the same in every epoch), cosmic rays (new each exposure) and bleed trails of
 * saturated stars.
 *
 * Bleeding: charge above the full well spills along the column (the CCD's parallel transfer
 * direction), half up and half down, filling each next pixel to the full well before moving
 * on; charge that runs off the frame is lost. This conserves the charge of a saturated star
 * except what leaves the chip, as in real CCDs. (CMOS sensors do not bleed, but the trails
 * are what a pipeline must learn to mask.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "tide/status.h"

#define SIM_PI 3.14159265358979323846

int sim_defects_detector(tide_sim_sky *sky) {
    const tide_sim_params *p = &sky->p;
    const int64_t W = p->width, H = p->height;
    sky->nhot = p->nhot > 0 ? p->nhot : (W * H) / 40000;
    sky->nbad = p->nbadcols;
    if (!p->defects) {
        sky->nhot = 0;
        sky->nbad = 0;
    }
    sky->hot_idx = malloc(sizeof(int64_t) * (size_t)(sky->nhot + 1));
    sky->hot_rate = malloc(sizeof(double) * (size_t)(sky->nhot + 1));
    sky->bad_x = malloc(sizeof(int64_t) * (size_t)(sky->nbad + 1));
    sky->bad_y0 = malloc(sizeof(int64_t) * (size_t)(sky->nbad + 1));
    sky->bad_level = malloc(sizeof(double) * (size_t)(sky->nbad + 1));
    if (!sky->hot_idx || !sky->hot_rate || !sky->bad_x || !sky->bad_y0 || !sky->bad_level)
        return tide_error(TIDE_E_NOMEM, "sim: out of memory for detector defects");
    for (int64_t k = 0; k < sky->nhot; k++) {
        sim_rng r = sim_rng_make(p->seed, SIM_STREAM_DETECTOR, (uint64_t)k);
        int64_t x = (int64_t)(sim_rng_uniform(&r) * (double)W);
        int64_t y = (int64_t)(sim_rng_uniform(&r) * (double)H);
        sky->hot_idx[k] = y * W + x;
        sky->hot_rate[k] = exp(sim_rng_range(&r, log(5.0), log(500.0))); /* e-/s */
    }
    for (int64_t k = 0; k < sky->nbad; k++) {
        sim_rng r = sim_rng_make(p->seed, SIM_STREAM_DETECTOR, (uint64_t)(1u << 30) + (uint64_t)k);
        sky->bad_x[k] = (int64_t)(sim_rng_uniform(&r) * (double)W);
        sky->bad_y0[k] =
            sim_rng_uniform(&r) < 0.5 ? 0 : (int64_t)(sim_rng_uniform(&r) * 0.8 * (double)H);
        sky->bad_level[k] = sim_rng_uniform(&r) < 0.5 ? -1.0 : sim_rng_range(&r, 300.0, 3000.0);
    }
    return 0;
}

void sim_defects_mask(uint16_t *mask, const tide_sim_sky *sky) {
    const int64_t W = sky->p.width, H = sky->p.height;
    for (int64_t k = 0; k < sky->nhot; k++)
        mask[sky->hot_idx[k]] |= TIDE_MASK_HOT;
    for (int64_t k = 0; k < sky->nbad; k++)
        for (int64_t y = sky->bad_y0[k]; y < H; y++)
            mask[y * W + sky->bad_x[k]] |= TIDE_MASK_BAD;
}

int64_t sim_defects_cosmics(float *e, uint16_t *mask, uint8_t *rowsat, const tide_sim_sky *sky,
                            int epoch) {
    const tide_sim_params *p = &sky->p;
    if (!p->defects || p->cr_rate <= 0)
        return 0;
    const int64_t W = p->width, H = p->height;
    const double cm = p->pixsize_um * 1e-4;
    const double expect = p->cr_rate * (double)W * (double)H * cm * cm * p->exptime / 60.0;
    const uint64_t stream = SIM_STREAM_COSMIC + 16u * (uint64_t)epoch;
    sim_rng r0 = sim_rng_make(p->seed, stream, 0);
    const int64_t n = (int64_t)sim_rng_poisson(&r0, expect);
    for (int64_t k = 0; k < n; k++) {
        sim_rng r = sim_rng_make(p->seed, stream, (uint64_t)k + 1);
        double x = -0.5 + W * sim_rng_uniform(&r), y = -0.5 + H * sim_rng_uniform(&r);
        /* Most hits are near-normal (1–3 pixels); some graze the chip and leave tracks. */
        double len = sim_rng_uniform(&r) < 0.6 ? sim_rng_range(&r, 0.0, 2.0)
                                               : fmin(-6.0 * log(sim_rng_uniform(&r)), 40.0);
        double ang = sim_rng_range(&r, 0, 2 * SIM_PI);
        double dedx = sim_rng_range(&r, 800.0, 4000.0); /* e- per pixel of path */
        int nstep = (int)ceil(len * 4.0) + 1;
        double q = dedx * (len > 0.25 ? len : 0.25) / nstep;
        for (int s = 0; s < nstep; s++) {
            double t = nstep > 1 ? (double)s / (nstep - 1) - 0.5 : 0.0;
            int64_t px = (int64_t)floor(x + t * len * cos(ang) + 0.5);
            int64_t py = (int64_t)floor(y + t * len * sin(ang) + 0.5);
            if (px < 0 || py < 0 || px >= W || py >= H)
                continue;
            e[py * W + px] += (float)q;
            mask[py * W + px] |= TIDE_MASK_COSMIC;
            if (e[py * W + px] > p->fullwell)
                rowsat[py] = 1;
        }
    }
    return n;
}

#define SIM_BLEED_COLS 16

void sim_defects_bleed(float *e, uint16_t *mask, int64_t width, int64_t height, double fullwell,
                       const uint8_t *rowsat, int nthreads) {
    int64_t ymin = -1, ymax = -1;
    for (int64_t y = 0; y < height; y++)
        if (rowsat[y]) {
            if (ymin < 0)
                ymin = y;
            ymax = y;
        }
    if (ymin < 0)
        return;
    const float well = (float)fullwell;
    const int64_t nblk = (width + SIM_BLEED_COLS - 1) / SIM_BLEED_COLS;
#pragma omp parallel for schedule(dynamic, 4) num_threads(nthreads)
    for (int64_t bk = 0; bk < nblk; bk++) {
        const int64_t x0 = bk * SIM_BLEED_COLS;
        const int nc = (int)(x0 + SIM_BLEED_COLS <= width ? SIM_BLEED_COLS : width - x0);
        int any = 0;
        for (int64_t y = ymin; y <= ymax && !any; y++)
            for (int c = 0; c < nc; c++)
                any |= e[y * width + x0 + c] > well;
        if (!any)
            continue;
        float carry[SIM_BLEED_COLS];
        /* Downward sweep: every over-full pixel sends half its excess down and keeps the
         * other half (for the upward sweep); the carry fills pixels below to the well. */
        memset(carry, 0, sizeof carry);
        for (int64_t y = ymax; y >= 0; y--) {
            float *row = e + y * width + x0;
            uint16_t *mrow = mask + y * width + x0;
            float left = 0;
            for (int c = 0; c < nc; c++) {
                if (row[c] > well) {
                    float half = 0.5f * (row[c] - well);
                    row[c] -= half;
                    carry[c] += half;
                } else if (carry[c] > 0) {
                    float take = fminf(well - row[c], carry[c]);
                    row[c] += take;
                    carry[c] -= take;
                    mrow[c] |= TIDE_MASK_BLEED;
                }
                left += carry[c];
            }
            if (y < ymin && left <= 0)
                break;
        }
        /* Upward sweep: the kept halves go up. */
        memset(carry, 0, sizeof carry);
        for (int64_t y = ymin; y < height; y++) {
            float *row = e + y * width + x0;
            uint16_t *mrow = mask + y * width + x0;
            float left = 0;
            for (int c = 0; c < nc; c++) {
                if (row[c] > well) {
                    carry[c] += row[c] - well;
                    row[c] = well;
                } else if (carry[c] > 0) {
                    float take = fminf(well - row[c], carry[c]);
                    row[c] += take;
                    carry[c] -= take;
                    mrow[c] |= TIDE_MASK_BLEED;
                }
                left += carry[c];
            }
            if (y > ymax && left <= 0)
                break;
        }
    }
}
