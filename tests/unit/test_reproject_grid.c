/* test_reproject_grid.c — the grid mapping's error bound, verified at every output pixel and
 * not only at the plan's check points: bilinear interpolation reproduces a linear function
 * exactly, so resampling the ramps v = x and v = y (no flux scaling) gives the interpolated
 * input position of each output pixel, which is compared with wcslib's exact mapping. Real
 * headers: Calabretta's 1904-66 field in ZPN and ZEA (12.8 deg wide) onto its TAN grid, and a
 * DECam TPV frame onto a north-up TAN grid. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tide/tide.h"
#include "tide_test.h"

static tide_wcs *wcs_of(const char *rel, int64_t *w, int64_t *h) {
    tide_header hd;
    tide_header_init(&hd);
    tide_wcs *wcs = NULL;
    CHECK_OK(tide_fits_read_image_header(tide_test_data(rel), &hd, NULL, w, h));
    CHECK_OK(tide_wcs_from_header(&hd, rel, &wcs));
    tide_header_free(&hd);
    return wcs;
}

/* Resample the x and y ramps of a w × h input onto the output grid and compare with the
 * exact mapping over every output pixel whose input position is at least 1 px inside. */
static void verify(tide_ctx *ctx, const char *label, const tide_wcs *win, int64_t w, int64_t h,
                   const tide_wcs *wout, int64_t ow, int64_t oh, double tol) {
    tide_image ramp[2], out[2];
    tide_reproject_params p;
    tide_reproject_params_default(&p);
    p.kernel = TIDE_RESAMPLE_BILINEAR;
    p.conserve_flux = 0;
    p.map = TIDE_REPROJECT_MAP_GRID;
    p.grid_tol = tol;
    tide_reproject_info info;
    for (int c = 0; c < 2; c++) {
        CHECK_OK(tide_image_alloc(ctx, &ramp[c], w, h, TIDE_HOST, 0));
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++)
                ramp[c].pix[y * w + x] = (float)(c == 0 ? x : y);
        CHECK_OK(tide_reproject_ex(ctx, &ramp[c], win, wout, ow, oh, &p, &out[c], NULL, &info));
    }
    const int64_t n = ow * oh;
    double *b = malloc(sizeof(double) * 6 * (size_t)n);
    double *x = b, *y = b + n, *ra = b + 2 * n, *de = b + 3 * n, *mx = b + 4 * n, *my = b + 5 * n;
    for (int64_t k = 0; k < n; k++) {
        x[k] = (double)(k % ow);
        y[k] = (double)(k / ow);
    }
    CHECK_OK(tide_wcs_pix2sky(wout, n, x, y, ra, de));
    CHECK_OK(tide_wcs_sky2pix(win, n, ra, de, mx, my));
    double emax = 0;
    int64_t used = 0, nan_inside = 0;
    for (int64_t k = 0; k < n; k++) {
        if (!(mx[k] >= 1 && mx[k] <= (double)w - 2 && my[k] >= 1 && my[k] <= (double)h - 2))
            continue;
        const double gx = out[0].pix[k], gy = out[1].pix[k];
        if (!isfinite(gx) || !isfinite(gy)) {
            nan_inside++;
            continue;
        }
        emax = fmax(emax, hypot(gx - mx[k], gy - my[k]));
        used++;
    }
    /* the ramps are float32: positions to w, h carry ~1e-5 px of rounding */
    printf("  %-28s step %g px: plan's measured bound %.2e px; over %lld pixels max |grid - "
           "exact| = %.2e px (float32 ramps)\n",
           label, info.grid_step, info.map_err_px, (long long)used, emax);
    CHECK(info.converged);
    CHECK(info.map_err_px <= tol);
    CHECK(used > n / 10);
    CHECK(nan_inside == 0);
    CHECK(emax <= tol + 3e-5);
    free(b);
    for (int c = 0; c < 2; c++) {
        tide_image_free(ctx, &ramp[c]);
        tide_image_free(ctx, &out[c]);
    }
}

int main(void) {
    tide_ctx *ctx = NULL;
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    if (!ctx)
        return 1;
    int64_t tw, th, w, h;
    tide_wcs *tan = wcs_of("wcs/1904-66_TAN.fits", &tw, &th);
    const char *projs[2] = {"wcs/1904-66_ZPN.fits", "wcs/1904-66_ZEA.fits"};
    for (int k = 0; k < 2; k++) {
        tide_wcs *src = wcs_of(projs[k], &w, &h);
        if (src && tan)
            verify(ctx, projs[k] + 4, src, w, h, tan, tw, th, 1e-3);
        /* a tighter bound makes the plan refine further and still holds */
        if (src && tan)
            verify(ctx, projs[k] + 4, src, w, h, tan, tw, th, 1e-4);
        tide_wcs_free(src);
    }
    tide_wcs *tpv = wcs_of("diff/DEC-OBS04b.mini.fits", &w, &h);
    tide_wcs *nu = NULL;
    int64_t nw = 0, nh = 0;
    if (tpv)
        CHECK_OK(tide_reproject_northup((const tide_wcs *const *)&tpv, &w, &h, 1, &nu, &nw, &nh));
    if (tpv && nu)
        verify(ctx, "DECam TPV -> north-up TAN", tpv, w, h, nu, nw, nh, 1e-3);
    tide_wcs_free(nu);
    tide_wcs_free(tpv);
    tide_wcs_free(tan);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
