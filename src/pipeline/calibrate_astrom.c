/* calibrate_astrom.c — steps 1–3 of calibrate.h: find the field, fetch its reference stars,
 * verify or solve, refine, and give every source its sky position. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate_internal.h"
#include "tide/crossmatch.h"
#include "tide/status.h"

/* Where the field is believed to be before any solve. */
typedef struct field_guess {
    int known;         /* centre and radius known */
    double ra, dec;    /* degrees */
    double radius_deg; /* half the diagonal, degrees */
} field_guess;

static void set_msg(char *dst, size_t n, const char *what) {
    snprintf(dst, n, "%s: %s", what, tide_error_detail());
}

static field_guess guess_from_wcs(const tide_wcs *w, int64_t width, int64_t height) {
    field_guess g = {0, NAN, NAN, NAN};
    tide_wcs_summary s;
    if (w && !tide_wcs_summarize(w, width, height, &s)) {
        g.known = 1;
        g.ra = s.ra_center, g.dec = s.dec_center;
        g.radius_deg = 0.5 * hypot(s.fov_x_deg, s.fov_y_deg);
    } else {
        tide_error_clear();
    }
    return g;
}

static field_guess guess_from_hints(const tide_solve_params *sp, int64_t width, int64_t height,
                                    double hint_radius) {
    field_guess g = {0, NAN, NAN, NAN};
    if (!sp->has_position || !(sp->scale_hi > 0))
        return g;
    g.known = 1;
    g.ra = sp->ra, g.dec = sp->dec;
    /* The pointing may be off by up to the hint radius: the cone covers the field from any
     * position the solve may find, but not more than a few fields, which would fetch a
     * needlessly large catalog for a wide hint. */
    const double half_diag = 0.5 * hypot((double)width, (double)height) * sp->scale_hi / 3600.0;
    g.radius_deg = half_diag + fmin(hint_radius, 2.0 * half_diag);
    return g;
}

/* Fetch the stars around @p g into cs->ref. */
static int fetch_ref(const tide_calib_params *p, const field_guess *g, tide_cal_state *cs,
                     tide_calib_result *out) {
    const double t0 = tide_cal_now_ms();
    tide_table_free(&cs->ref);
    tide_table_init(&cs->ref);
    cs->have_ref = 0;
    int st = tide_cal_refcat_fetch(p, g->ra, g->dec, g->radius_deg, &cs->ref);
    out->ms_refcat += tide_cal_now_ms() - t0;
    if (st)
        return st;
    cs->have_ref = 1;
    out->nref = cs->ref.nrows;
    return 0;
}

/* Sources of the quick first attempt of solve_field, and the shares of the solve's time
 * bound the two hinted attempts may take at most, so that a header whose scale or position
 * is wrong leaves most of the bound to the blind attempt. */
#define CAL_QUICK_NBRIGHT 150
/* Odds a blind solve must reach (astrometry.net's 1e9 for a hinted one; see the blind
 * attempt below). */
#define CAL_BLIND_ODDS 1e14
#define CAL_QUICK_SHARE 0.2
#define CAL_HINTED_SHARE 0.3

/* Seconds left before @p t_end_ms (never below a token 50 ms, so an attempt still reports
 * cleanly that time ran out). */
static double time_left_s(double t_end_ms) {
    const double s = 1e-3 * (t_end_ms - tide_cal_now_ms());
    return s > 0.05 ? s : 0.05;
}

/* Plate-solve the sources on the index files; *wcs receives the solution. Not solving is
 * reported in out. Every attempt ends by @p t_end_ms. */
static int solve_field(tide_ctx *ctx, const tide_calib_params *p, const tide_cal_sources *src,
                       tide_solve_params *sp, double t_end_ms, tide_wcs **wcs,
                       tide_calib_result *out) {
    char dir[1024];
    int st = tide_solve_index_dir(p->index_dir, NULL, dir, sizeof dir);
    tide_solver *solver = NULL;
    if (!st)
        st = tide_solver_get(ctx, dir, &solver);
    if (st) {
        set_msg(out->astrmsg, sizeof out->astrmsg, "no index files");
        return st == TIDE_E_NOMEM ? st : 0;
    }
    /* The solver works on barycentres: the windowed centroid of a saturated star (the very
     * stars an index keeps, its brightest per sky cell) can fail or wander, its barycentre
     * stays on the star. A quick hinted attempt on the brightest sources first, then a hinted
     * one on more, then blind. Few sources mean few quads to try and cheap verifications, so
     * a field whose hints are right solves in milliseconds; the later attempts only run when
     * the earlier fail, and the hinted ones are held to a share of the bound. */
    const double t0 = tide_cal_now_ms();
    const double bound = 1e-3 * (t_end_ms - t0);
    const int hinted = sp->has_position || sp->scale_hi > 0;
    st = TIDE_E_NOSOLVE;
    char why[600] = "";
    if (hinted && sp->nbright > CAL_QUICK_NBRIGHT) {
        tide_solve_params q = *sp;
        q.nbright = CAL_QUICK_NBRIGHT;
        q.blind_fallback = 0;
        q.timeout_s = fmin(time_left_s(t_end_ms), CAL_QUICK_SHARE * bound);
        st = tide_solve(solver, src->bx, src->by, src->flux, src->n, &q, wcs, &out->solve);
    }
    if (st == TIDE_E_NOSOLVE && hinted) {
        tide_error_clear();
        tide_solve_params q = *sp;
        q.blind_fallback = 0;
        q.timeout_s = fmin(time_left_s(t_end_ms), CAL_HINTED_SHARE * bound);
        st = tide_solve(solver, src->bx, src->by, src->flux, src->n, &q, wcs, &out->solve);
        if (st == TIDE_E_NOSOLVE)
            snprintf(why, sizeof why, "%s", tide_error_detail());
    }
    if (st == TIDE_E_NOSOLVE && (sp->blind_fallback || !hinted)) {
        /* Blind: no position, no scale; the header may be wrong by any factor. */
        tide_error_clear();
        tide_solve_params q = *sp;
        q.has_position = 0;
        q.scale_lo = q.scale_hi = 0;
        q.radius_deg = 0;
        /* A blind search tries every index scale over the whole sky, ~1e5 times the
         * hypotheses of a hinted one (41,253 deg² against a hint's few, times the scale
         * range), so its false-alarm odds are ~1e5 times worse at the same threshold: the
         * DECam cutouts of ../shared/data/diff (67" across, beneath every Tycho-2 index) solve
         * blind at log-odds 28.8 and 30.2 with 8 of 23-27 stars, above log(1e9) = 20.7, while
         * real blind solves reach 150+. The odds to accept rise by that factor. */
        q.logodds_solve = fmax(q.logodds_solve, log(CAL_BLIND_ODDS));
        /* ... and to keep and to tune up: only a match that can be taken is tweaked. A match
         * tuned up (tweak2) and then not kept leaves the tweak's allocations inside
         * libastrometry 0.93, which calls no one back for it (LeakSanitizer: sip_create,
         * tweak2, startree_search_for); a blind solve worth taking reaches 1e14 untuned. */
        q.logodds_keep = fmax(q.logodds_keep, q.logodds_solve);
        q.logodds_tune = fmax(q.logodds_tune, q.logodds_solve);
        q.timeout_s = time_left_s(t_end_ms);
        st = tide_solve(solver, src->bx, src->by, src->flux, src->n, &q, wcs, &out->solve);
        if (st == TIDE_E_NOSOLVE && why[0]) {
            char both[1200];
            snprintf(both, sizeof both, "%s; then %s", why, tide_error_detail());
            tide_error_clear();
            tide_error(TIDE_E_NOSOLVE, "%s", both);
        }
    }
    out->ms_solve += tide_cal_now_ms() - t0;
    if (st) {
        /* The header keeps 68 characters: the reason first, the attempts' detail after. */
        char what[96];
        if (st != TIDE_E_NOSOLVE)
            snprintf(what, sizeof what, "not solved");
        else if (out->solve.timed_out)
            snprintf(what, sizeof what, "not solved within the %.3g s bound", p->solve_timeout_s);
        else
            snprintf(what, sizeof what, "not solved: every quad tried, none verified");
        set_msg(out->astrmsg, sizeof out->astrmsg, what);
        return st == TIDE_E_NOMEM ? st : 0;
    }
    out->solved = 1;
    out->astrmsg[0] = '\0'; /* an earlier attempt's failure is no longer the story */
    return 0;
}

/* Solve on the reference stars themselves (tide_solve_refcat), hinted by the header: for a
 * rough header over a sky no installed index covers. Not solving is not an error. */
static int solve_refcat(const tide_cal_sources *src, const tide_solve_params *sp,
                        const tide_cal_state *cs, double t_end_ms, tide_wcs **wcs,
                        tide_calib_result *out) {
    if (!cs->have_ref || cs->ref.nrows < 4 || !sp->has_position || !(sp->scale_hi > 0))
        return 0;
    const double t0 = tide_cal_now_ms();
    tide_solve_params q = *sp;
    q.timeout_s = time_left_s(t_end_ms);
    const int st =
        tide_solve_refcat(&cs->ref, src->bx, src->by, src->flux, src->n, &q, wcs, &out->solve);
    out->ms_solve += tide_cal_now_ms() - t0;
    if (st == TIDE_E_NOMEM)
        return st;
    if (st) {
        set_msg(out->astrmsg, sizeof out->astrmsg, "not solved on the reference stars");
        tide_error_clear();
        return 0;
    }
    out->solved = 1;
    out->astrmsg[0] = '\0';
    return 0;
}

/* Refinements of a solution on its index stars, each from the last one's result, while they
 * gain stars (refine_on_index). */
#define REFINE_PASSES 3

/* A solution found without reference stars, refined on the stars of the index that solved
 * it (the same stars solve-field's tweak fits, but every clean source of the frame matched
 * to them from a generous radius by tide_astrom_refine, rather than the stars the
 * verification happened to pair). *wcs is replaced when the refinement succeeds; a failed one
 * leaves the solution as it is and says so. */
static int refine_on_index(tide_ctx *ctx, const tide_calib_params *p, const tide_cal_sources *src,
                           int64_t width, int64_t height, tide_wcs **wcs, tide_calib_result *out) {
    if (!out->solved || !out->solve.index_name[0])
        return 0;
    char dir[1024];
    tide_solver *solver = NULL;
    int st = tide_solve_index_dir(p->index_dir, NULL, dir, sizeof dir);
    if (!st)
        st = tide_solver_get(ctx, dir, &solver);
    const field_guess g = guess_from_wcs(*wcs, width, height);
    double *ra = NULL, *dec = NULL;
    int64_t n = 0;
    if (!st && g.known)
        st = tide_solver_index_stars(solver, out->solve.index_name, g.ra, g.dec,
                                     1.05 * g.radius_deg, &ra, &dec, &n);
    if (st == TIDE_E_NOMEM)
        return st;
    if (st || !g.known) {
        tide_error_clear();
        return 0;
    }
    tide_refine_params rp;
    tide_refine_defaults(&rp);
    rp.sip_order = p->sip_order;
    tide_wcs *refined = NULL;
    const double t0 = tide_cal_now_ms();
    st = tide_astrom_refine(ctx, *wcs, width, height, src->cx, src->cy, src->csigma, src->nclean,
                            ra, dec, n, &rp, &refined, &out->refine);
    /* Again from its own result while that gains stars, when it fell short of the order
     * asked: a wide field's corners lie beyond the first round's radius of a solution without
     * distortion terms, and the radius only shrinks within one refinement (apod4, 34 deg: 38
     * stars at order 2, RMS 0.42 px, then 63 at order 3, 0.11 px). A refinement that reached
     * its order is not run again. */
    for (int pass = 1; !st && pass < REFINE_PASSES && out->refine.sip_order_used < rp.sip_order;
         pass++) {
        tide_wcs *again = NULL;
        tide_refine_info ai;
        int sa = tide_astrom_refine(ctx, refined, width, height, src->cx, src->cy, src->csigma,
                                    src->nclean, ra, dec, n, &rp, &again, &ai);
        if (sa == TIDE_E_NOMEM)
            st = sa;
        if (sa || ai.nstars <= out->refine.nstars) {
            tide_wcs_free(again);
            tide_error_clear();
            break;
        }
        ai.initial_rms_px = out->refine.initial_rms_px; /* of the solution, as before */
        tide_wcs_free(refined);
        refined = again;
        out->refine = ai;
    }
    out->ms_refine += tide_cal_now_ms() - t0;
    free(ra);
    free(dec);
    if (st == TIDE_E_NOMEM)
        return st;
    if (st) {
        set_msg(out->astrmsg, sizeof out->astrmsg, "refinement on the index stars failed");
        tide_error_clear();
        return 0;
    }
    tide_wcs_free(*wcs);
    *wcs = refined;
    out->refined = 1;
    snprintf(out->astrstat, sizeof out->astrstat, "REFINED");
    return 0;
}

/* Write the WCS, its summary and the astrometric quality into the catalog header. */
static int wcs_header(const tide_wcs *w, int64_t width, int64_t height,
                      const tide_calib_result *out, tide_header *h) {
    int st = tide_wcs_to_header(w, h);
    tide_wcs_summary s;
    if (!st)
        st = tide_wcs_summarize(w, width, height, &s);
#define T(call)                                                                                    \
    do {                                                                                           \
        if (!st)                                                                                   \
            st = (call);                                                                           \
    } while (0)
    T(tide_header_set_dbl(h, "CENTRA", s.ra_center, "field centre RA, deg"));
    T(tide_header_set_dbl(h, "CENTDEC", s.dec_center, "field centre Dec, deg"));
    T(tide_header_set_dbl(h, "PIXSCALE", s.scale_arcsec, "pixel scale at the centre, arcsec"));
    T(tide_header_set_dbl(h, "ROTANGLE", s.rotation_deg, "PA of +y, deg E of N"));
    T(tide_header_set_dbl(h, "FOVX", s.fov_x_deg, "field of view along x, deg"));
    T(tide_header_set_dbl(h, "FOVY", s.fov_y_deg, "field of view along y, deg"));
    if (out->refined) {
        const tide_refine_info *r = &out->refine;
        T(tide_header_set_dbl(h, "ASTRRMSA", r->rms_ra_arcsec,
                              "astrometric RMS in RA*cos(Dec), arcsec"));
        T(tide_header_set_dbl(h, "ASTRRMSD", r->rms_dec_arcsec, "astrometric RMS in Dec, arcsec"));
        T(tide_header_set_dbl(h, "ASTRRMSP", r->rms_px, "astrometric RMS, pixels"));
        T(tide_header_set_int(h, "ASTNSTAR", r->nstars, "stars in the WCS fit"));
        T(tide_header_set_int(h, "ASTSIPOR", r->sip_order_used, "SIP order of the fit"));
    }
    if (out->solved) {
        T(tide_header_set_str(h, "ASTSOLVE", out->solve.blind ? "BLIND" : "HINTED",
                              "how the field was solved"));
        char idx[69];
        snprintf(idx, sizeof idx, "%s", out->solve.index_name);
        T(tide_header_set_str(h, "ASTINDEX", idx, "astrometry.net index that solved"));
    } else if (out->verify.good) {
        T(tide_header_set_str(h, "ASTSOLVE", "VERIFIED", "header WCS verified, not solved"));
    }
#undef T
    return st;
}

/* ALPHA_J2000 / DELTA_J2000 of every source through @p w (added when missing). */
static int sky_columns(const tide_wcs *w, const tide_cal_sources *src, tide_table *cat) {
    int st = 0;
    if (!tide_table_column(cat, "ALPHA_J2000"))
        st = tide_table_add_column(cat, "ALPHA_J2000", TIDE_COL_F64, 1, "deg",
                                   "right ascension (calibrated WCS)", NULL);
    if (!st && !tide_table_column(cat, "DELTA_J2000"))
        st = tide_table_add_column(cat, "DELTA_J2000", TIDE_COL_F64, 1, "deg",
                                   "declination (calibrated WCS)", NULL);
    if (st)
        return st;
    tide_column *ca = tide_table_column(cat, "ALPHA_J2000");
    tide_column *cd = tide_table_column(cat, "DELTA_J2000");
    snprintf(ca->comment, sizeof ca->comment, "right ascension (calibrated WCS)");
    snprintf(cd->comment, sizeof cd->comment, "declination (calibrated WCS)");
    return tide_wcs_pix2sky(w, src->n, src->x, src->y, (double *)ca->data, (double *)cd->data);
}

/* The frame could not be placed on the sky: drop sky columns a wrong header WCS gave. */
static int no_sky(tide_table *cat) {
    if (tide_table_column(cat, "ALPHA_J2000"))
        tide_table_remove_column(cat, "ALPHA_J2000");
    if (tide_table_column(cat, "DELTA_J2000"))
        tide_table_remove_column(cat, "DELTA_J2000");
    return 0;
}

int tide_cal_astrometry(tide_ctx *ctx, const tide_header *frame_hdr, int64_t width, int64_t height,
                        const tide_calib_params *p, tide_pipeline_result *res, tide_cal_state *cs,
                        tide_calib_result *out) {
    tide_cal_sources src;
    int st = tide_cal_sources_get(&res->catalog, &src);
    if (st)
        return st;
    /* The header's WCS as the reduction parsed it (taken over: cs->wcs goes back into the
     * result); parsed here only for a result that does not carry one. */
    tide_wcs *hdr_wcs = res->wcs, *initial = NULL;
    res->wcs = NULL;
    if (!hdr_wcs && frame_hdr && tide_wcs_from_header(frame_hdr, p->source, &hdr_wcs)) {
        tide_error_clear(); /* no usable WCS in the header: it will be solved */
        hdr_wcs = NULL;
    }
    tide_solve_params sp;
    tide_solve_params_init(&sp);
    sp.width = width, sp.height = height;
    sp.nbright = p->nbright;
    sp.timeout_s = p->solve_timeout_s;
    sp.blind_fallback = p->blind;
    sp.radius_deg = p->hint_radius_deg;
    /* The refinement fits the WCS on every reference star from a generous first radius, so
     * astrometry.net's own tweak is not needed: the TAN of the matched quad starts it. The
     * tweak (iterated fits with their inverse polynomials) was ~95% of a hinted 2048² solve,
     * and without it the refined WCS is the same to its RMS (CHANGES.md, issue 4). */
    sp.tweak_order = 0;
    /* Without reference stars nothing refines the solution afterwards: astrometry.net's
     * tweak (solve-field's default order 2) is then the final fit, as in solve-field. */
    if (!tide_calib_has_refcat(p))
        sp.tweak_order = 1;
    tide_header none;
    tide_header_init(&none);
    st = tide_solve_hints(frame_hdr ? frame_hdr : &none, hdr_wcs, width, height, p->pixsize_um,
                          p->focal_mm, p->scale_tolerance, &sp);
    tide_header_free(&none);
    /* The search radius: the pointing's uncertainty plus the field's half-diagonal.
     * astrometry.net keeps only the index stars within the radius of the hint, so a radius
     * smaller than the field leaves the small quads near its centre, which solve two orders
     * of magnitude slower (CHANGES.md, issue 4). */
    if (!st && sp.has_position && sp.scale_hi > 0)
        sp.radius_deg =
            p->hint_radius_deg + 0.5 * hypot((double)width, (double)height) * sp.scale_hi / 3600.0;
    field_guess g = hdr_wcs ? guess_from_wcs(hdr_wcs, width, height)
                            : guess_from_hints(&sp, width, height, p->hint_radius_deg);
    const int want_ref = tide_calib_has_refcat(p);
    if (!st && want_ref && g.known)
        st = fetch_ref(p, &g, cs, out);
    if (st)
        goto done;

    snprintf(out->astrstat, sizeof out->astrstat, "NONE");
    if (!p->astrometry) {
        initial = hdr_wcs, hdr_wcs = NULL;
        snprintf(out->astrstat, sizeof out->astrstat, initial ? "HEADER" : "NONE");
    } else if (hdr_wcs && !cs->have_ref && !p->solve) {
        /* Nothing to check a header WCS against: it is taken as it is. */
        initial = hdr_wcs, hdr_wcs = NULL;
        snprintf(out->astrstat, sizeof out->astrstat, "HEADER");
    } else {
        if (hdr_wcs) {
            tide_verify_params vp;
            tide_verify_defaults(&vp);
            st = tide_astrom_verify(ctx, hdr_wcs, width, height, src.x, src.y, src.n,
                                    tide_table_f64(&cs->ref, "RA"), tide_table_f64(&cs->ref, "DEC"),
                                    cs->ref.nrows, &vp, &out->verify);
            if (st)
                goto done;
            if (out->verify.good)
                initial = hdr_wcs, hdr_wcs = NULL;
        }
        if (!initial) {
            /* One bound for every attempt of this frame. */
            const double t_end = tide_cal_now_ms() + 1e3 * p->solve_timeout_s;
            st = solve_refcat(&src, &sp, cs, t_end, &initial, out);
            if (!st && !initial)
                st = solve_field(ctx, p, &src, &sp, t_end, &initial, out);
            if (st)
                goto done;
            if (!initial && hdr_wcs && !cs->have_ref) {
                /* Solving was asked for without reference stars and failed: the header WCS
                 * stays, unverified, and the header says so. */
                initial = hdr_wcs, hdr_wcs = NULL;
                char msg[sizeof out->astrmsg];
                snprintf(msg, sizeof msg, "%s", out->astrmsg);
                snprintf(out->astrmsg, sizeof out->astrmsg, "header WCS kept unverified; %s", msg);
            }
            /* The reference stars follow the solution when it lies outside the cone
             * fetched for the guess (or none was fetched: a blind solve). */
            if (initial && want_ref) {
                const field_guess s = guess_from_wcs(initial, width, height);
                const double off =
                    g.known ? tide_sky_separation_arcsec(g.ra, g.dec, s.ra, s.dec) / 3600.0
                            : INFINITY;
                if (s.known && (!cs->have_ref || off + s.radius_deg > g.radius_deg)) {
                    st = fetch_ref(p, &s, cs, out);
                    if (st)
                        goto done;
                }
            }
        }
        if (initial)
            snprintf(out->astrstat, sizeof out->astrstat, out->solved ? "SOLVED" : "HEADER");
        if (initial && !cs->have_ref) {
            st = refine_on_index(ctx, p, &src, width, height, &initial, out);
            if (st)
                goto done;
        }
        if (initial && cs->have_ref) {
            tide_refine_params rp;
            tide_refine_defaults(&rp);
            rp.sip_order = p->sip_order;
            tide_wcs *refined = NULL;
            const double t0 = tide_cal_now_ms();
            const int rs = tide_astrom_refine(
                ctx, initial, width, height, src.cx, src.cy, src.csigma, src.nclean,
                tide_table_f64(&cs->ref, "RA"), tide_table_f64(&cs->ref, "DEC"), cs->ref.nrows, &rp,
                &refined, &out->refine);
            out->ms_refine = tide_cal_now_ms() - t0;
            if (rs == TIDE_E_NOMEM) {
                st = rs;
                goto done;
            }
            if (!rs) {
                tide_wcs_free(initial);
                initial = refined;
                out->refined = 1;
                snprintf(out->astrstat, sizeof out->astrstat, "REFINED");
            } else {
                /* The solution stands; the header says the refinement failed. */
                set_msg(out->astrmsg, sizeof out->astrmsg, "refinement failed");
            }
        }
    }
    if (initial) {
        cs->wcs = initial, initial = NULL;
        out->wcs_ok = 1;
        st = sky_columns(cs->wcs, &src, &res->catalog);
        if (!st)
            st = wcs_header(cs->wcs, width, height, out, &res->header);
    } else if (p->astrometry) {
        snprintf(out->astrstat, sizeof out->astrstat, "FAILED");
        if (!out->astrmsg[0])
            snprintf(out->astrmsg, sizeof out->astrmsg,
                     "no WCS: the header has none that "
                     "matches the reference stars");
        st = no_sky(&res->catalog);
    }
    if (!st)
        st =
            tide_header_set_str(&res->header, "ASTRSTAT", out->astrstat, "astrometric calibration");
    if (!st && out->astrmsg[0]) {
        char msg[69];
        snprintf(msg, sizeof msg, "%s", out->astrmsg);
        st = tide_header_set_str(&res->header, "ASTRMSG", msg, "why the astrometry failed");
    }
done:
    tide_wcs_free(hdr_wcs);
    tide_wcs_free(initial);
    tide_cal_sources_free(&src);
    return st;
}
