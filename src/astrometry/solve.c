/* solve.c — tide_solve: a source list through astrometry.net's solver, hinted then blind.
 *
 * Each attempt runs on a fresh solver_t (astrometry.net's per-field state: field, counters,
 * best match, quit flag), with the loaded indexes of the tide_solver added to it, and frees it
 * afterwards, so nothing of one call (a timeout included) leaks into the next. The settings
 * follow astrometry.net's engine.c / onefield.c for a solve-field job: the same log-odds
 * thresholds, tweak order, quad-size fraction and index selection by quad size, so that a
 * solve here and `solve-field` on the same list agree. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <astrometry/errors.h>
#include <astrometry/log.h>
#include <astrometry/matchobj.h>
#include <astrometry/sip.h>
#include <astrometry/solver.h>
#include <astrometry/starxy.h>
#include <astrometry/verify.h>

#include "solve_internal.h"
#include "tide/status.h"
#include "tide/timer.h"

/* What the callbacks of one attempt share. */
typedef struct attempt {
    double deadline; /* monotonic seconds */
    int timed_out;
    double logodds_solve;
    int solved;
    sip_t sol; /* TAN in sol.wcstan; SIP terms when sol.a_order >= 2 */
    int nmatch, nconflict, nfield, nindex, parity;
    double logodds;
    char index_name[256];
    const tide_solver *owner;
} attempt;

/* Called by solver_run between field objects, first after about a second: stop when the
 * attempt's wall-clock limit has passed (returning 0 cancels the run). */
static time_t timer_cb(void *user) {
    attempt *a = user;
    if (tide_now() > a->deadline) {
        a->timed_out = 1;
        return 0;
    }
    return 1;
}

/* A watchdog for one attempt: astrometry.net calls timer_cb only between field objects, and
 * late objects (many quads each, on many indexes) can take seconds, so the attempt would
 * overrun its limit by that much. The watchdog sleeps until the deadline and then raises the
 * solver's quit_now flag, which its quad loops poll; the run ends within milliseconds. */
typedef struct watchdog {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, started;
    double deadline; /* tide_now() seconds */
    solver_t *sp;
    attempt *a;
} watchdog;

static void *watchdog_main(void *arg) {
    watchdog *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->done) {
        const double left = w->deadline - tide_now();
        if (left <= 0) {
            /* A plain store the solver's loops read: it only ever goes from FALSE to TRUE. */
            __atomic_store_n(&w->sp->quit_now, TRUE, __ATOMIC_RELAXED);
            w->a->timed_out = 1;
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        const double t = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec + left;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        const int r = pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        if (r != 0 && r != ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void watchdog_start(watchdog *w, solver_t *sp, attempt *a) {
    memset(w, 0, sizeof *w);
    w->sp = sp;
    w->a = a;
    w->deadline = a->deadline;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    /* Without a thread, timer_cb still bounds the run (only less tightly). */
    w->started = pthread_create(&w->thread, NULL, watchdog_main, w) == 0;
}

static void watchdog_stop(watchdog *w) {
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->done = 1;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
    }
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
}

static const char *index_file_name(const tide_solver *s, const index_t *ind) {
    for (int i = 0; i < s->nidx; i++)
        if (s->idx[i].index == ind)
            return s->idx[i].name;
    return "";
}

/* Called for every match whose log-odds reach logratio_tokeep (after the tweak fit). A match
 * at or above the solve threshold is taken and ends the run. The tweak's sip_t is copied and
 * released here, since astrometry.net leaves it to the callback's owner. */
static anbool record_cb(MatchObj *mo, void *user) {
    attempt *a = user;
    anbool take = mo->logodds >= a->logodds_solve && !a->solved;
    if (take) {
        memset(&a->sol, 0, sizeof a->sol);
        if (mo->sip)
            a->sol = *mo->sip;
        else
            sip_wrap_tan(&mo->wcstan, &a->sol);
        a->nmatch = mo->nmatch;
        a->nconflict = mo->nconflict;
        a->nfield = mo->nfield;
        a->nindex = mo->nindex;
        a->parity = mo->parity ? 1 : 0;
        a->logodds = mo->logodds;
        snprintf(a->index_name, sizeof a->index_name, "%s",
                 mo->index ? index_file_name(a->owner, mo->index) : "");
        a->solved = 1;
    }
    if (mo->sip) {
        sip_free(mo->sip);
        mo->sip = NULL;
    }
    return take;
}

/* One attempt: @p use_pos with the position hint, scale range [lo, hi] arcsec/px. */
typedef struct attempt_spec {
    int use_pos;
    double ra, dec, radius;
    double lo, hi;
} attempt_spec;

/* Indexes whose quads can appear in the field: quad diameters from quad_size_min * min(W, H)
 * pixels at the lowest scale to the diagonal at the highest (engine_run_job); when none
 * overlaps, the nearest end of the set. Returns how many were added. */
static int add_indexes(solver_t *sp, const tide_solver *s, const tide_solve_params *p,
                       const attempt_spec *as) {
    double minwh = (double)(p->width < p->height ? p->width : p->height);
    double qmin = p->quad_size_min * minwh * as->lo;
    double qmax = hypot((double)p->width, (double)p->height) * as->hi;
    int added = 0;
    double smallest = INFINITY, biggest = -INFINITY;
    for (int i = 0; i < s->nidx; i++) {
        index_t *ind = s->idx[i].index;
        smallest = fmin(smallest, ind->index_scale_lower);
        biggest = fmax(biggest, ind->index_scale_upper);
        if (!index_overlaps_scale_range(ind, qmin, qmax))
            continue;
        if (as->use_pos && !index_is_within_range(ind, as->ra, as->dec, as->radius))
            continue;
        solver_add_index(sp, ind);
        added++;
    }
    if (added)
        return added;
    for (int i = 0; i < s->nidx; i++) {
        index_t *ind = s->idx[i].index;
        if ((qmin > biggest && ind->index_scale_upper == biggest) ||
            (qmax < smallest && ind->index_scale_lower == smallest)) {
            solver_add_index(sp, ind);
            added++;
        }
    }
    return added;
}

/* Run one attempt on a fresh solver_t. Returns 1 solved, 0 not; -1 on allocation failure. */
static int run_attempt(const tide_solver *s, const double *x1, const double *y1, const double *f,
                       int n, const tide_solve_params *p, const attempt_spec *as, attempt *a,
                       int *nindexes) {
    memset(a, 0, sizeof *a);
    a->owner = s;
    a->logodds_solve = p->logodds_solve;
    a->deadline = tide_now() + p->timeout_s;
    solver_t *sp = solver_new();
    if (!sp)
        return -1;
    *nindexes = add_indexes(sp, s, p, as);
    starxy_t *field = starxy_new(n, TRUE, FALSE);
    if (!field) {
        solver_free(sp);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        starxy_set_x(field, i, x1[i]);
        starxy_set_y(field, i, y1[i]);
        starxy_set_flux(field, i, f ? f[i] : (double)(n - i));
    }
    solver_set_field(sp, field); /* sp owns it now */
    /* engine.c: the field spans 0..IMAGEW, 0..IMAGEH in 1-based pixel units. */
    solver_set_field_bounds(sp, 0.0, (double)p->width, 0.0, (double)p->height);
    sp->funits_lower = as->lo;
    sp->funits_upper = as->hi;
    sp->quadsize_min = p->quad_size_min * (double)(p->width < p->height ? p->width : p->height);
    sp->logratio_tokeep = fmin(p->logodds_keep, p->logodds_solve);
    sp->logratio_toprint = sp->logratio_tokeep;
    sp->logratio_totune = p->logodds_tune;
    sp->logratio_bail_threshold = p->logodds_bail;
    sp->codetol = p->code_tol;
    sp->verify_pix = p->verify_pix;
    sp->distractor_ratio = p->distractor_ratio;
    sp->parity = p->parity == TIDE_SOLVE_PARITY_NORMAL ? PARITY_NORMAL
                 : p->parity == TIDE_SOLVE_PARITY_FLIP ? PARITY_FLIP
                                                       : PARITY_BOTH;
    sp->do_tweak = p->tweak_order > 0;
    sp->tweak_aborder = sp->tweak_abporder = p->tweak_order > 0 ? p->tweak_order : 1;
    if (p->crpix_center) {
        sp->set_crpix = TRUE;
        sp->set_crpix_center = TRUE;
        sp->crpix[0] = 0.5 * (double)p->width + 0.5; /* the centre of the frame, 1-based */
        sp->crpix[1] = 0.5 * (double)p->height + 0.5;
    }
    if (as->use_pos)
        solver_set_radec(sp, as->ra, as->dec, as->radius);
    sp->record_match_callback = record_cb;
    sp->timer_callback = timer_cb;
    sp->userdata = a;
    sp->distance_from_quad_bonus = TRUE;
    solver_reset_counters(sp);
    solver_reset_best_match(sp);
    if (*nindexes > 0) {
        solver_preprocess_field(sp);
        watchdog wd;
        watchdog_start(&wd, sp, a);
        solver_run(sp);
        watchdog_stop(&wd);
    }
    solver_free(sp); /* frees the field, the best match and the index list (not the indexes) */
    return a->solved;
}

/* TAN or TAN-SIP header cards of an astrometry.net solution. */
static int sip_to_header(const sip_t *w, tide_header *h) {
    int sip = w->a_order >= 2 && w->b_order >= 2;
    int st = 0;
    st |= tide_header_set_int(h, "WCSAXES", 2, NULL);
    st |= tide_header_set_str(h, "CTYPE1", sip ? "RA---TAN-SIP" : "RA---TAN", NULL);
    st |= tide_header_set_str(h, "CTYPE2", sip ? "DEC--TAN-SIP" : "DEC--TAN", NULL);
    st |= tide_header_set_str(h, "CUNIT1", "deg", NULL);
    st |= tide_header_set_str(h, "CUNIT2", "deg", NULL);
    st |= tide_header_set_str(h, "RADESYS", "ICRS", NULL);
    st |= tide_header_set_dbl(h, "CRVAL1", w->wcstan.crval[0], NULL);
    st |= tide_header_set_dbl(h, "CRVAL2", w->wcstan.crval[1], NULL);
    st |= tide_header_set_dbl(h, "CRPIX1", w->wcstan.crpix[0], NULL);
    st |= tide_header_set_dbl(h, "CRPIX2", w->wcstan.crpix[1], NULL);
    st |= tide_header_set_dbl(h, "CD1_1", w->wcstan.cd[0][0], NULL);
    st |= tide_header_set_dbl(h, "CD1_2", w->wcstan.cd[0][1], NULL);
    st |= tide_header_set_dbl(h, "CD2_1", w->wcstan.cd[1][0], NULL);
    st |= tide_header_set_dbl(h, "CD2_2", w->wcstan.cd[1][1], NULL);
    if (sip) {
        static const char *names[4] = {"A", "B", "AP", "BP"};
        const int orders[4] = {w->a_order, w->b_order, w->ap_order, w->bp_order};
        for (int k = 0; k < 4; k++) {
            if (orders[k] < 1 || (k >= 2 && orders[k] < 2))
                continue;
            char key[16];
            snprintf(key, sizeof key, "%s_ORDER", names[k]);
            st |= tide_header_set_int(h, key, orders[k], NULL);
            for (int pp = 0; pp <= orders[k]; pp++)
                for (int q = 0; pp + q <= orders[k]; q++) {
                    double c = k == 0   ? w->a[pp][q]
                               : k == 1 ? w->b[pp][q]
                               : k == 2 ? w->ap[pp][q]
                                        : w->bp[pp][q];
                    /* A/B start at p + q = 2 (Shupe et al. 2005); the inverse keeps its
                     * constant and linear terms, which astrometry.net fits. */
                    if ((k < 2 && pp + q < 2) || c == 0.0)
                        continue;
                    snprintf(key, sizeof key, "%s_%d_%d", names[k], pp, q);
                    st |= tide_header_set_dbl(h, key, c, NULL);
                }
        }
    }
    return st ? tide_error(TIDE_E_NOMEM, "building the WCS header of a solution") : 0;
}

typedef struct src_order {
    double flux;
    int64_t i;
} src_order;

static int by_flux_desc(const void *pa, const void *pb) {
    const src_order *a = pa, *b = pb;
    if (a->flux > b->flux)
        return -1;
    if (a->flux < b->flux)
        return 1;
    return a->i < b->i ? -1 : a->i > b->i; /* stable: equal fluxes keep their order */
}

static int check_params(const tide_solve_params *p) {
    if (!p || p->width <= 0 || p->height <= 0)
        return tide_error(TIDE_E_INVAL, "solve: the frame size must be positive (got %lldx%lld)",
                          p ? (long long)p->width : 0LL, p ? (long long)p->height : 0LL);
    if (!(p->timeout_s > 0) || !isfinite(p->timeout_s))
        return tide_error(TIDE_E_INVAL, "solve: the time limit must be positive (got %g s)",
                          p->timeout_s);
    if (!(p->scale_lo >= 0) || !(p->scale_hi >= 0) || !isfinite(p->scale_hi) ||
        (p->scale_hi > 0 && p->scale_lo > p->scale_hi))
        return tide_error(TIDE_E_INVAL,
                          "solve: nonsense pixel-scale range %g..%g arcsec/px (need 0 <= lo <= hi)",
                          p->scale_lo, p->scale_hi);
    if (!(p->blind_scale_lo >= 0) || !(p->blind_scale_hi >= 0) ||
        (p->blind_scale_hi > 0 && p->blind_scale_lo > p->blind_scale_hi))
        return tide_error(TIDE_E_INVAL, "solve: nonsense blind scale range %g..%g arcsec/px",
                          p->blind_scale_lo, p->blind_scale_hi);
    if (p->has_position && (!isfinite(p->ra) || !(p->dec >= -90 && p->dec <= 90) ||
                            !(p->radius_deg >= 0) || p->radius_deg > 180))
        return tide_error(TIDE_E_INVAL, "solve: bad position hint (%g, %g) radius %g deg", p->ra,
                          p->dec, p->radius_deg);
    if (p->tweak_order < 0 || p->tweak_order > 9)
        return tide_error(TIDE_E_INVAL, "solve: tweak order %d outside 0..9", p->tweak_order);
    if (p->nbright < 4)
        return tide_error(TIDE_E_INVAL, "solve: nbright %lld < 4", (long long)p->nbright);
    if (!(p->quad_size_min > 0 && p->quad_size_min < 1))
        return tide_error(TIDE_E_INVAL, "solve: quad_size_min %g outside (0, 1)", p->quad_size_min);
    return 0;
}

static void describe(char *buf, size_t n, const char *what, const attempt_spec *as,
                     const attempt *a, int nidx, double ms, const tide_solve_params *p) {
    size_t len = strlen(buf);
    if (len >= n)
        return;
    char pos[96] = "no position";
    if (as->use_pos)
        snprintf(pos, sizeof pos, "within %.3g deg of (%.5f, %.5f)", as->radius, as->ra, as->dec);
    snprintf(buf + len, n - len,
             "%s%s attempt (scale %.4g..%.4g arcsec/px, %s, %d index file%s, "
             "%.0f ms%s)",
             len ? "; " : "", what, as->lo, as->hi, pos, nidx, nidx == 1 ? "" : "s", ms,
             a->timed_out ? ", stopped by its time limit" : "");
    (void)p;
}

int tide_solve(tide_solver *s, const double *x, const double *y, const double *flux, int64_t n,
               const tide_solve_params *p, tide_wcs **wcs, tide_solve_info *info) {
    double t0 = tide_now();
    tide_solve_info inf;
    memset(&inf, 0, sizeof inf);
    if (info)
        *info = inf;
    if (!s || (n > 0 && (!x || !y)) || n < 0)
        return tide_error(TIDE_E_INVAL, "solve: no solver or no positions");
    int st = check_params(p);
    if (st)
        return st;
    tide_solve_quiet_astrometry();

    /* Keep the finite sources, brightest first, at most nbright of them. */
    src_order *ord = malloc((size_t)(n > 0 ? n : 1) * sizeof *ord);
    if (!ord)
        return tide_error(TIDE_E_NOMEM, "solve: %lld sources", (long long)n);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        double fl = flux ? flux[i] : -(double)i;
        if (!isfinite(x[i]) || !isfinite(y[i]) || (flux && !isfinite(fl)))
            continue;
        ord[m].flux = fl;
        ord[m].i = i;
        m++;
    }
    if (m < 4) {
        free(ord);
        return tide_error(TIDE_E_EMPTY,
                          "solve: %lld usable source%s (of %lld given); at least 4 "
                          "are needed to form a quad",
                          (long long)m, m == 1 ? "" : "s", (long long)n);
    }
    if (flux)
        qsort(ord, (size_t)m, sizeof *ord, by_flux_desc);
    /* spread over the field before the depth is cut (solve_uniformize.c) */
    int64_t *pick = malloc((size_t)m * sizeof *pick);
    if (!pick) {
        free(ord);
        return tide_error(TIDE_E_NOMEM, "solve: %lld sources", (long long)m);
    }
    for (int64_t k = 0; k < m; k++)
        pick[k] = ord[k].i;
    st = tide_solve_uniformize(pick, m, x, y, p->uniformize);
    for (int64_t k = 0; k < m; k++)
        ord[k].i = pick[k];
    free(pick);
    if (st) {
        free(ord);
        return st;
    }
    int nuse = (int)(m < p->nbright ? m : p->nbright);
    double *buf = malloc((size_t)nuse * 3 * sizeof *buf);
    if (!buf) {
        free(ord);
        return tide_error(TIDE_E_NOMEM, "solve: %d sources", nuse);
    }
    double *x1 = buf, *y1 = buf + nuse, *f1 = buf + 2 * nuse;
    for (int i = 0; i < nuse; i++) {
        /* tide is 0-based, astrometry.net FITS 1-based: the first pixel's centre is 1.0. */
        x1[i] = x[ord[i].i] + 1.0;
        y1[i] = y[ord[i].i] + 1.0;
        f1[i] = flux ? flux[ord[i].i] : (double)(nuse - i);
    }
    free(ord);
    inf.nused = nuse;

    /* The attempts: hinted (when there is any hint), then blind. */
    double w = (double)p->width, diag = hypot((double)p->width, (double)p->height);
    double blo = p->blind_scale_lo > 0 ? p->blind_scale_lo : 0.1 * 3600.0 / w;
    double bhi = p->blind_scale_hi > 0 ? p->blind_scale_hi : 180.0 * 3600.0 / w;
    int has_scale = p->scale_hi > 0;
    attempt_spec specs[2];
    const char *names[2];
    int nspec = 0;
    if (p->has_position || has_scale) {
        attempt_spec h = {0};
        h.use_pos = p->has_position;
        h.ra = p->ra;
        h.dec = p->dec;
        h.lo = has_scale ? p->scale_lo : blo;
        h.hi = has_scale ? p->scale_hi : bhi;
        h.radius = p->radius_deg > 0 ? p->radius_deg
                   : has_scale       ? fmin(180.0, 2.0 * diag * p->scale_hi / 3600.0)
                                     : 2.0;
        specs[nspec] = h;
        names[nspec++] = "hinted";
    }
    if (p->blind_fallback || nspec == 0) {
        attempt_spec b = {0};
        b.lo = blo;
        b.hi = bhi;
        specs[nspec] = b;
        names[nspec++] = "blind";
    }

    char detail[1024] = "";
    attempt a;
    int solved = 0, which = -1;
    for (int k = 0; k < nspec && !solved; k++) {
        double ta = tide_now();
        int nidx = 0;
        int r = run_attempt(s, x1, y1, f1, nuse, p, &specs[k], &a, &nidx);
        double ms = 1e3 * (tide_now() - ta);
        if (strcmp(names[k], "hinted") == 0)
            inf.ms_hinted = ms;
        else
            inf.ms_blind = ms;
        inf.attempts++;
        inf.timed_out |= a.timed_out;
        if (r < 0) {
            free(buf);
            return tide_error(TIDE_E_NOMEM, "solve: astrometry.net could not allocate its solver");
        }
        if (r == 1) {
            solved = 1;
            which = k;
        } else {
            describe(detail, sizeof detail, names[k], &specs[k], &a, nidx, ms, p);
        }
    }
    free(buf);
    inf.ms_total = 1e3 * (tide_now() - t0);
    if (!solved) {
        if (info)
            *info = inf;
        return tide_error(TIDE_E_NOSOLVE, "no solution from %d sources of %s: %s", nuse,
                          tide_solver_dir(s), detail);
    }

    /* The solution as a tide_wcs, through FITS header cards. */
    tide_header h;
    tide_header_init(&h);
    tide_wcs *out = NULL;
    st = sip_to_header(&a.sol, &h);
    if (!st)
        st = tide_wcs_from_header(&h, "astrometry.net solution", &out);
    tide_header_free(&h);
    if (st)
        return st;
    inf.solved = 1;
    inf.blind = strcmp(names[which], "blind") == 0;
    snprintf(inf.index_name, sizeof inf.index_name, "%s", a.index_name);
    inf.nmatch = a.nmatch;
    inf.nconflict = a.nconflict;
    inf.nfield = a.nfield;
    inf.nindex = a.nindex;
    inf.logodds = a.logodds;
    inf.parity = a.parity;
    tide_wcs_summary sum;
    if (tide_wcs_summarize(out, p->width, p->height, &sum) == 0) {
        inf.scale_arcsec = sum.scale_arcsec;
        inf.rotation_deg = sum.rotation_deg;
        inf.ra_center = sum.ra_center;
        inf.dec_center = sum.dec_center;
    }
    inf.ms_total = 1e3 * (tide_now() - t0);
    if (info)
        *info = inf;
    if (wcs)
        *wcs = out;
    else
        tide_wcs_free(out);
    return 0;
}
