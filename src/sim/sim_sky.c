/* sim_sky.c — the sky background: a level with a linear gradient (moonlight, twilight) and a
 * quadratic term (vignetting residuals, scattered light), smooth over the frame. The bias
 * level is added at readout (sim_noise.c). */
#include <math.h>

#include "sim_internal.h"

double sim_sky_at(const sim_epoch_geom *g, int64_t width, int64_t height, double x, double y) {
    sim_field_coords(g, &width, &height, &x, &y);
    const double hx = 0.5 * (double)width, hy = 0.5 * (double)height;
    const double xn = (x - 0.5 * (double)(width - 1)) / hx;
    const double yn = (y - 0.5 * (double)(height - 1)) / hy;
    /* Quadratic term normalised to 1 at the corners. */
    const double r2 = 0.5 * (xn * xn + yn * yn);
    return g->sky * (1.0 + g->sky_gx * xn + g->sky_gy * yn + g->sky_quad * r2);
}
