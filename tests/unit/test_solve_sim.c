/* test_solve_sim.c — plate solving a simulated field offline, in process: the simulator's
 * default frame (2048 x 2048, 1.46"/px, 50', TAN + order-3 SIP), index files built from its
 * reference catalogue with tide_index_build, the hints taken from the frame's header with its
 * WCS removed (RA/DEC keywords; scale from pixel size and focal length, +-10 %), then a hinted
 * and a blind solve of the truth positions. Each solution must match the simulator's truth
 * pixel->sky mapping to < 1 arcsec over the whole frame (tweak order 3, the simulator's SIP
 * order). The warm hinted solve time is printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tide/sim.h"
#include "tide/solve.h"
#include "tide/status.h"
#include "tide_test.h"

static double sep_arcsec(double ra1, double de1, double ra2, double de2) {
    const double d2r = 3.14159265358979323846 / 180.0;
    double s = sin((de2 - de1) * d2r / 2), t = sin((ra2 - ra1) * d2r / 2);
    return 2.0 * asin(sqrt(s * s + cos(de1 * d2r) * cos(de2 * d2r) * t * t)) / d2r * 3600.0;
}

/* Largest separation between the solution and the truth mapping on a 21 x 21 grid. */
static double max_err(const tide_wcs *w, const tide_sim_sky *sky, int64_t W, int64_t H) {
    double worst = 0;
    for (int j = 0; j <= 20; j++)
        for (int i = 0; i <= 20; i++) {
            double x = (double)(W - 1) * i / 20.0, y = (double)(H - 1) * j / 20.0;
            double r1, d1, r2, d2;
            if (tide_wcs_pix2sky(w, 1, &x, &y, &r1, &d1) ||
                tide_sim_pix2sky(sky, 1, 1, &x, &y, &r2, &d2))
                return INFINITY;
            double s = sep_arcsec(r1, d1, r2, d2);
            if (!(s <= worst))
                worst = s;
        }
    return worst;
}

static double *col(const tide_table *t, const char *name) {
    tide_column *c = tide_table_column(t, name);
    if (!c)
        return NULL;
    double *v = malloc((size_t)t->nrows * sizeof *v);
    for (int64_t i = 0; i < t->nrows; i++)
        v[i] = c->type == TIDE_COL_F64 ? ((double *)c->data)[i] : ((float *)c->data)[i];
    return v;
}

int main(void) {
    tide_ctx *ctx = NULL;
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    tide_sim_sky *sky = NULL;
    CHECK_OK(tide_sim_sky_make(ctx, &sp, &sky));
    tide_sim_frame fr;
    memset(&fr, 0, sizeof fr);
    CHECK_OK(tide_sim_epoch(ctx, sky, 1, &fr));
    tide_table ref;
    tide_table_init(&ref);
    CHECK_OK(tide_sim_refcat(sky, &ref));

    char dir[] = "/tmp/tide_solve_simXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char idx[256];
    snprintf(idx, sizeof idx, "%s/idx", dir);
    tide_index_build_params ip;
    tide_index_build_params_init(&ip);
    ip.fov_arcmin = (double)sp.width * 206.265 * sp.pixsize_um / sp.focal_mm / 60.0;
    char paths[32][4096];
    int nbuilt = 0;
    CHECK_OK(tide_index_build(&ref, idx, &ip, paths, 32, &nbuilt));
    CHECK(nbuilt == 8); /* scales 2..9 for a 50' field */
    /* Bad input for the builder: a missing column, an empty catalogue, no scales. */
    tide_index_build_params bad = ip;
    bad.mag_col = "NOPE";
    CHECK(tide_index_build(&ref, idx, &bad, NULL, 0, NULL) == TIDE_E_NOTFOUND);
    tide_table empty;
    tide_table_init(&empty);
    tide_table_add_column(&empty, "RA", TIDE_COL_F64, 1, NULL, NULL, NULL);
    tide_table_add_column(&empty, "DEC", TIDE_COL_F64, 1, NULL, NULL, NULL);
    tide_table_add_column(&empty, "MAG", TIDE_COL_F64, 1, NULL, NULL, NULL);
    CHECK(tide_index_build(&empty, idx, &ip, NULL, 0, NULL) == TIDE_E_EMPTY);
    tide_table_free(&empty);
    bad = ip;
    bad.fov_arcmin = 0;
    CHECK(tide_index_build(&ref, idx, &bad, NULL, 0, NULL) == TIDE_E_INVAL);
    int lo, hi;
    CHECK_OK(tide_index_scales_for_fov(50.0, &lo, &hi));
    CHECK(lo == 2 && hi == 9);
    CHECK(tide_index_scales_for_fov(1.0, &lo, &hi) == TIDE_E_RANGE);

    tide_solver *s = NULL;
    CHECK_OK(tide_solver_open(idx, &s));
    CHECK(tide_solver_nindex(s) == 8);

    /* Hints from the header without its WCS. */
    tide_header h;
    tide_header_init(&h);
    tide_header_copy(&h, &fr.header);
    static const char *wcs_keys[] = {"CTYPE1", "CTYPE2", "CRVAL1", "CRVAL2", "CRPIX1",
                                     "CRPIX2", "CD1_1",  "CD1_2",  "CD2_1",  "CD2_2"};
    for (size_t k = 0; k < sizeof wcs_keys / sizeof wcs_keys[0]; k++)
        tide_header_remove(&h, wcs_keys[k]);
    tide_solve_params p;
    tide_solve_params_init(&p);
    CHECK_OK(
        tide_solve_hints_from_header(&h, sp.width, sp.height, sp.pixsize_um, sp.focal_mm, 0.1, &p));
    CHECK(p.has_position && p.scale_hi > 0);
    CHECK_CLOSE(p.ra, sp.ra, 1e-9);
    CHECK_CLOSE(p.dec, sp.dec, 1e-9);
    tide_header_free(&h);
    p.blind_fallback = 0;
    p.tweak_order = 3;
    p.timeout_s = 30;

    double *x = col(&fr.truth, "X_TRUE"), *y = col(&fr.truth, "Y_TRUE"),
           *f = col(&fr.truth, "FLUX");
    CHECK(x && y && f);
    int64_t n = fr.truth.nrows;
    for (int64_t i = 0; x && y && i < n; i++) { /* FITS 1-based -> 0-based */
        x[i] -= 1.0;
        y[i] -= 1.0;
    }
    for (int rep = 0; rep < 2 && x && y && f; rep++) {
        tide_wcs *w = NULL;
        tide_solve_info in;
        CHECK_OK(tide_solve(s, x, y, f, n, &p, &w, &in));
        double e = w ? max_err(w, sky, sp.width, sp.height) : INFINITY;
        printf("sim hinted (%s): %.1f ms, index %s, %d matches, scale %.4f\"/px, rotation "
               "%.3f deg, max error %.4f arcsec\n",
               rep ? "warm" : "first", in.ms_hinted, in.index_name, in.nmatch, in.scale_arcsec,
               in.rotation_deg, e);
        CHECK(in.solved && !in.blind);
        CHECK(e < 1.0);
        CHECK_CLOSE(in.rotation_deg, sp.rotation, 0.05);
        tide_wcs_free(w);
    }
    /* No tweak (tweak order 0, as the calibration runs it before its own refinement): the
     * TAN of the matched quad, the right field to within the distortion the refinement's
     * first radius takes in (a few pixels at the corners). */
    if (x && y && f) {
        tide_solve_params p0 = p;
        p0.tweak_order = 0;
        tide_wcs *w = NULL;
        tide_solve_info in;
        CHECK_OK(tide_solve(s, x, y, f, n, &p0, &w, &in));
        double e = w ? max_err(w, sky, sp.width, sp.height) : INFINITY;
        printf("sim hinted, no tweak: %.1f ms, %d matches, max error %.2f arcsec\n", in.ms_hinted,
               in.nmatch, e);
        CHECK(in.solved && !in.blind);
        CHECK(e < 10.0);
        CHECK_CLOSE(in.rotation_deg, sp.rotation, 0.2);
        tide_wcs_free(w);
        p0.tweak_order = -1;
        CHECK(tide_solve(s, x, y, f, n, &p0, &w, &in) == TIDE_E_INVAL);
        tide_error_clear();
    }
    /* Blind, default tweak order (2) and order 3. */
    tide_solve_params pb;
    tide_solve_params_init(&pb);
    pb.width = sp.width;
    pb.height = sp.height;
    pb.tweak_order = 3;
    tide_wcs *wb = NULL;
    tide_solve_info ib;
    if (x && y && f) {
        CHECK_OK(tide_solve(s, x, y, f, n, &pb, &wb, &ib));
        double e = wb ? max_err(wb, sky, sp.width, sp.height) : INFINITY;
        printf("sim blind: %.1f ms, index %s, max error %.4f arcsec\n", ib.ms_blind, ib.index_name,
               e);
        CHECK(ib.solved && ib.blind);
        CHECK(e < 1.0);
        tide_wcs_free(wb);
    }

    free(x);
    free(y);
    free(f);
    tide_solver_free(s);
    for (int i = 0; i < nbuilt; i++)
        unlink(paths[i]);
    rmdir(idx);
    rmdir(dir);
    tide_table_free(&ref);
    tide_sim_frame_free(ctx, &fr);
    tide_sim_sky_free(sky);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
