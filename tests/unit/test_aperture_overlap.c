/* test_aperture_overlap.c — the exact circle–pixel overlap
 * (src/reduction/photometry/aperture_math.h) against independent high-resolution numerical
 * integration: circle wholly inside a pixel, centred on pixel corners and edges, tiny and huge
 * radii, random configurations, and the identity Σ over all pixels = π r². */
#include <math.h>
#include <stdint.h>
#include "reduction/photometry/aperture_math.h"
#include "tide/status.h"
#include "tide_test.h"

static const double PI = 3.14159265358979323846;

/* ∫ over x in [x0, x1] of the length of {y in [y0, y1] : x² + y² <= r²}, midpoint rule with
 * n steps (the integrand is continuous; its sqrt cusps make the error ~ n^-1.5). */
static double num_area(double x0, double x1, double y0, double y1, double r, long n) {
    const double h = (x1 - x0) / n;
    double s = 0.0;
    for (long k = 0; k < n; k++) {
        const double u = x0 + (k + 0.5) * h;
        if (fabs(u) >= r)
            continue;
        const double c = sqrt(r * r - u * u);
        const double lo = y0 > -c ? y0 : -c, hi = y1 < c ? y1 : c;
        if (hi > lo)
            s += hi - lo;
    }
    return s * h;
}

/* 2-D sampling of pixel (i, j) on an m × m grid (a check of the check). */
static double grid_area(int64_t i, int64_t j, double cx, double cy, double r, int m) {
    long in = 0;
    for (int b = 0; b < m; b++)
        for (int a = 0; a < m; a++) {
            const double px = i - 0.5 + (a + 0.5) / m - cx, py = j - 0.5 + (b + 0.5) / m - cy;
            in += px * px + py * py <= r * r;
        }
    return (double)in / ((double)m * m);
}

static double pix_num(int64_t i, int64_t j, double cx, double cy, double r, long n) {
    return num_area(i - 0.5 - cx, i + 0.5 - cx, j - 0.5 - cy, j + 0.5 - cy, r, n);
}

static double total(double cx, double cy, double r) {
    int64_t x0, x1, y0, y1;
    tide_ap_range(cx, r, &x0, &x1);
    tide_ap_range(cy, r, &y0, &y1);
    double s = 0.0;
    for (int64_t j = y0; j <= y1; j++)
        for (int64_t i = x0; i <= x1; i++)
            s += tide_ap_pixel_overlap(i, j, cx, cy, r);
    return s;
}

int main(void) {
    /* circle wholly inside one pixel */
    CHECK_CLOSE(tide_ap_pixel_overlap(3, 4, 3.1, 3.9, 0.3), PI * 0.09, 1e-15);
    CHECK_CLOSE(tide_ap_pixel_overlap(4, 4, 3.1, 3.9, 0.3), 0.0, 0.0);
    /* circle inscribed in the pixel, then the pixel inscribed in the circle */
    CHECK_CLOSE(tide_ap_pixel_overlap(0, 0, 0.0, 0.0, 0.5), PI * 0.25, 1e-15);
    CHECK_CLOSE(tide_ap_pixel_overlap(0, 0, 0.0, 0.0, sqrt(0.5)), 1.0, 1e-15);
    /* centred on a pixel corner: four equal quarters */
    for (int k = 0; k < 3; k++) {
        const double r = k == 0 ? 1e-4 : (k == 1 ? 0.3 : 0.5);
        for (int q = 0; q < 4; q++) {
            const double a = tide_ap_pixel_overlap(q & 1, q >> 1, 0.5, 0.5, r);
            CHECK_CLOSE(a / (PI * r * r / 4.0), 1.0, 1e-12);
        }
    }
    /* tiny radius on a pixel edge: two halves */
    {
        const double r = 1e-6;
        const double a = tide_ap_pixel_overlap(7, 2, 7.5, 2.0, r);
        CHECK_CLOSE(a / (PI * r * r / 2.0), 1.0, 1e-9);
    }
    /* a pixel edge exactly tangent to the circle: overlap 0 beyond, full strip inside */
    CHECK_CLOSE(tide_ap_pixel_overlap(3, 0, 0.0, 0.0, 2.5), 0.0, 0.0);
    /* random pixels against the 1-D numerical integral (1e6 steps) */
    double worst = 0.0;
    uint64_t st = 12345;
    for (int t = 0; t < 300; t++) {
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        const double u1 = (double)(st >> 11) / 9007199254740992.0;
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        const double u2 = (double)(st >> 11) / 9007199254740992.0;
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        const double u3 = (double)(st >> 11) / 9007199254740992.0;
        const double r = 0.05 + 6.0 * u3;
        const double cx = 10.0 + u1, cy = 20.0 + u2;
        /* a pixel that the boundary crosses: along a random direction at distance ~ r */
        const double ang = 2 * PI * u1 * u2;
        const int64_t i = (int64_t)floor(cx + r * cos(ang) + 0.5),
                      j = (int64_t)floor(cy + r * sin(ang) + 0.5);
        const double e = tide_ap_pixel_overlap(i, j, cx, cy, r);
        const double nref = pix_num(i, j, cx, cy, r, 1000000);
        const double d = fabs(e - nref);
        if (d > worst)
            worst = d;
        CHECK(e >= 0.0 && e <= 1.0);
    }
    printf("random boundary pixels: max |exact - numerical| = %.3g\n", worst);
    CHECK(worst < 1e-8);
    /* the 2-D grid agrees too (a sanity check of the reference; 2000² samples) */
    {
        const double e = tide_ap_pixel_overlap(12, 21, 10.3, 20.6, 2.2);
        CHECK_CLOSE(e, grid_area(12, 21, 10.3, 20.6, 2.2, 2000), 2e-5);
        CHECK(e > 0.05 && e < 0.95);
    }
    /* huge radius: a pixel on the rim of r = 1e4, against 1e7-step integration */
    {
        const double r = 1e4, cx = 0.3, cy = -0.2;
        const int64_t i = (int64_t)floor(cx + r * cos(0.7) + 0.5),
                      j = (int64_t)floor(cy + r * sin(0.7) + 0.5);
        const double e = tide_ap_pixel_overlap(i, j, cx, cy, r);
        const double nref = pix_num(i, j, cx, cy, r, 10000000);
        printf("r = 1e4 rim pixel: exact %.12f numerical %.12f\n", e, nref);
        CHECK_CLOSE(e, nref, 1e-9);
        CHECK(e > 0.0 && e < 1.0);
        /* a pixel grazed only at its corner */
        const double a = tide_ap_circle_rect(r - 0.001, r + 0.999, -0.5, 0.5, r);
        const double an = num_area(r - 0.001, r + 0.999, -0.5, 0.5, r, 10000000);
        CHECK_CLOSE(a / an, 1.0, 1e-6);
    }
    /* Σ over pixels = π r², for centres on pixel centres, edges, corners and anywhere */
    const double cs[][2] = {{5.0, 5.0}, {5.5, 5.0}, {5.5, 5.5}, {5.25, 4.9}, {0.01, -0.49}};
    const double rs[] = {1e-3, 0.3, 0.5, 0.7071067811865476, 1.0, 2.5, 3.0, 7.77, 40.0, 300.0};
    double wtot = 0.0;
    for (size_t a = 0; a < sizeof cs / sizeof cs[0]; a++)
        for (size_t b = 0; b < sizeof rs / sizeof rs[0]; b++) {
            const double s = total(cs[a][0], cs[a][1], rs[b]);
            const double rel = fabs(s / (PI * rs[b] * rs[b]) - 1.0);
            if (rel > wtot)
                wtot = rel;
        }
    printf("sum over pixels vs pi r^2: max relative error %.3g\n", wtot);
    CHECK(wtot < 1e-12);
    return TIDE_TEST_RESULT();
}
