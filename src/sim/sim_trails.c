/* sim_trails.c — satellite trails in epoch 2: straight streaks of light, most crossing the
 * whole frame, some short (a tumbling or entering satellite), as wide as the PSF. They are
 * changes a difference finds and a person calls bogus, so they teach the real/bogus model
 * (rb.h) what a trail looks like; each gets a truth row of TYPE "satellite".
 *
 * Drawn from their own random stream, and only when e2_nsatellite > 0: with none, every
 * other output is bit for bit what it was before trails existed. */
#include <math.h>
#include <string.h>

#include "sim_internal.h"
#include "tide/coords.h"
#include "tide/status.h"

#define SIM_PI 3.14159265358979323846

/* The k-th trail of a sky: a point on it inside the frame (0-based), its angle, length,
 * and its brightness in electrons per pixel of length. */
static void trail_draw(const tide_sim_params *p, int64_t k, sim_trail *t) {
    sim_rng r = sim_rng_make(p->seed, SIM_STREAM_TRAIL, (uint64_t)k);
    t->x = sim_rng_range(&r, 0, (double)p->width - 1);
    t->y = sim_rng_range(&r, 0, (double)p->height - 1);
    t->theta = sim_rng_range(&r, 0, SIM_PI);
    t->len = sim_rng_uniform(&r) < 0.6 ? 4.0 * (double)(p->width + p->height)
                                       : sim_rng_range(&r, 30.0, 300.0);
    t->sb = exp(sim_rng_range(&r, log(300.0), log(6000.0)));
}

/* The part of the segment inside [-0.5, W-0.5] × [-0.5, H-0.5], as parameters t0 ≤ t1 along
 * its direction from its centre (Liang–Barsky). */
static double clip_length(const sim_trail *t, int64_t W, int64_t H) {
    const double dx = cos(t->theta), dy = sin(t->theta);
    double t0 = -0.5 * t->len, t1 = 0.5 * t->len;
    const double pq[4][2] = {
        {-dx, t->x + 0.5}, {dx, W - 0.5 - t->x}, {-dy, t->y + 0.5}, {dy, H - 0.5 - t->y}};
    for (int i = 0; i < 4; i++) {
        const double pp = pq[i][0], q = pq[i][1];
        if (pp == 0)
            continue;
        const double s = q / pp;
        if (pp < 0)
            t0 = fmax(t0, s);
        else
            t1 = fmin(t1, s);
    }
    return t1 > t0 ? t1 - t0 : 0;
}

int64_t sim_trails_render(float *e, const tide_sim_sky *sky, int epoch, sim_trail *trails) {
    const tide_sim_params *p = &sky->p;
    if (epoch != 2 || p->e2_nsatellite <= 0)
        return 0;
    const int64_t W = p->width, H = p->height;
    const double sigma = sky->geom[epoch - 1].fwhm / 2.3548;
    const double reach = 4.0 * sigma, norm = 1.0 / (sqrt(2.0 * SIM_PI) * sigma);
    for (int64_t k = 0; k < p->e2_nsatellite; k++) {
        sim_trail *t = &trails[k];
        trail_draw(p, k, t);
        const double dx = cos(t->theta), dy = sin(t->theta), h = 0.5 * t->len;
        /* the bounding box of the segment widened by the profile's reach */
        const double xa = t->x - h * dx, xb = t->x + h * dx, ya = t->y - h * dy, yb = t->y + h * dy;
        const int64_t x0 = (int64_t)fmax(0, floor(fmin(xa, xb) - reach));
        const int64_t x1 = (int64_t)fmin((double)W - 1, ceil(fmax(xa, xb) + reach));
        const int64_t y0 = (int64_t)fmax(0, floor(fmin(ya, yb) - reach));
        const int64_t y1 = (int64_t)fmin((double)H - 1, ceil(fmax(ya, yb) + reach));
        for (int64_t y = y0; y <= y1; y++)
            for (int64_t x = x0; x <= x1; x++) {
                const double u = (x - t->x) * dx + (y - t->y) * dy;  /* along */
                const double v = -(x - t->x) * dy + (y - t->y) * dx; /* across */
                if (fabs(v) > reach || fabs(u) > h)
                    continue;
                e[y * W + x] += (float)(t->sb * norm * exp(-0.5 * v * v / (sigma * sigma)));
            }
        t->len = clip_length(t, W, H);
    }
    return p->e2_nsatellite;
}

int sim_trails_truth(const tide_sim_sky *sky, int epoch, const sim_trail *trails, int64_t n,
                     tide_table *t) {
    if (n <= 0)
        return 0;
    const tide_sim_params *p = &sky->p;
    const int64_t row0 = t->nrows;
    int st = tide_table_resize(t, row0 + n);
    if (st)
        return st;
    const double sigma = sky->geom[epoch - 1].fwhm / 2.3548;
    for (int64_t k = 0; k < n; k++) {
        const sim_trail *tr = &trails[k];
        const int64_t i = row0 + k;
        tide_table_i64(t, "ID")[i] = sky->nobj + 1 + k;
        tide_table_f64(t, "X_TRUE")[i] = tide_pix_to_fits(tr->x);
        tide_table_f64(t, "Y_TRUE")[i] = tide_pix_to_fits(tr->y);
        sim_wcs_pix2sky(&sky->geom[epoch - 1].wcs, tr->x, tr->y, &tide_table_f64(t, "RA")[i],
                        &tide_table_f64(t, "DEC")[i]);
        tide_table_f64(t, "MAG")[i] = NAN;
        tide_table_f64(t, "FLUX_E")[i] = tr->sb * tr->len;
        tide_table_f64(t, "FLUX")[i] = tr->sb * tr->len / p->gain;
        tide_table_f32(t, "FWHM")[i] = (float)sky->geom[epoch - 1].fwhm;
        tide_table_f32(t, "ELLIP")[i] = 1.0f;
        tide_table_f32(t, "THETA")[i] = (float)(tr->theta * 180.0 / SIM_PI);
        tide_table_f32(t, "RE")[i] = (float)tr->len;
        tide_table_f32(t, "PEAK")[i] = (float)(tr->sb / (sqrt(2.0 * SIM_PI) * sigma) / p->gain);
        tide_column *c = tide_table_column(t, "TYPE");
        char *type = (char *)c->data + i * c->repeat;
        memset(type, 0, (size_t)c->repeat);
        memcpy(type, "satellite", 9);
        ((int16_t *)tide_table_column(t, "TYPE_ID")->data)[i] = TIDE_SIM_SATELLITE;
    }
    return 0;
}
