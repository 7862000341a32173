/* wcs.c — a tide_wcs from a FITS header through wcslib, and batched pixel <-> sky.
 *
 * Parsing: wcspih with every informal extension (WCSHDR_all: SIP, TPV, DSS, CROTA, EPOCH,
 * RADECSYS...), then wcsfix (NCP -> SIN, GLS -> SFL, CD fixes, units, dates, cylfix) and a
 * trial wcsset. The parsed struct (before wcsset, which rewrites TPV as TAN) is the master;
 * each evaluating thread gets a private wcssub copy (see wcs_internal.h for why). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wcslib/dis.h>
#include <wcslib/wcserr.h>
#include <wcslib/wcsfix.h>
#include <wcslib/wcshdr.h>
#include "tide/status.h"
#include "wcs_internal.h"

/* wcslib keeps its error-message switch in a process-wide flag; turn it on once. */
static pthread_once_t errmsg_once = PTHREAD_ONCE_INIT;
static void enable_errmsg(void) {
    wcserr_enable(1);
}

const char *tide_wcs_errmsg(const struct wcsprm *prm) {
    if (prm && prm->err && prm->err->msg)
        return prm->err->msg;
    return "";
}

/* Free a wcsprm allocated with malloc + wcssub/wcsini. */
static void prm_free(struct wcsprm *p) {
    if (!p)
        return;
    wcsfree(p);
    free(p);
}

/* A deep copy of @p src, set up. */
static int prm_copy_set(const struct wcsprm *src, const char *source, struct wcsprm **out) {
    struct wcsprm *p = calloc(1, sizeof *p);
    if (!p)
        return tide_error(TIDE_E_NOMEM, "%s: out of memory copying the WCS", source);
    p->flag = -1;
    int st = wcssub(1, src, NULL, NULL, p);
    if (st) {
        int code = st == WCSERR_MEMORY ? TIDE_E_NOMEM : TIDE_E_WCS;
        tide_error(code, "%s: wcslib cannot copy the WCS: %s", source, tide_wcs_errmsg(p));
        prm_free(p);
        return code;
    }
    st = wcsset(p);
    if (st) {
        int code = st == WCSERR_BAD_CTYPE ? TIDE_E_UNSUPPORTED : TIDE_E_WCS;
        tide_error(code, "%s: CTYPE1 = '%s', CTYPE2 = '%s': wcslib rejects the WCS: %s", source,
                   src->ctype[0], src->naxis > 1 ? src->ctype[1] : "", tide_wcs_errmsg(p));
        prm_free(p);
        return code;
    }
    *out = p;
    return 0;
}

int tide_wcs_acquire(const tide_wcs *cw, struct wcsprm **prm) {
    tide_wcs *w = (tide_wcs *)cw; /* logically const: the pool is a cache */
    int slot = -1;
    for (int i = 0; i < TIDE_WCS_SLOTS; i++)
        if (pthread_mutex_trylock(&w->slots[i].lock) == 0) {
            slot = i;
            break;
        }
    if (slot < 0) { /* all busy: wait on one, spread by thread identity */
        unsigned long h = (unsigned long)pthread_self();
        slot = (int)((h >> 4) % TIDE_WCS_SLOTS);
        pthread_mutex_lock(&w->slots[slot].lock);
    }
    if (!w->slots[slot].prm) {
        pthread_mutex_lock(&w->create_lock);
        int st = prm_copy_set(w->master, w->source, &w->slots[slot].prm);
        pthread_mutex_unlock(&w->create_lock);
        if (st) {
            pthread_mutex_unlock(&w->slots[slot].lock);
            return st;
        }
    }
    *prm = w->slots[slot].prm;
    return slot;
}

void tide_wcs_release(const tide_wcs *cw, int slot) {
    tide_wcs *w = (tide_wcs *)cw;
    pthread_mutex_unlock(&w->slots[slot].lock);
}

void tide_wcs_free(tide_wcs *w) {
    if (!w)
        return;
    for (int i = 0; i < TIDE_WCS_SLOTS; i++) {
        prm_free(w->slots[i].prm);
        pthread_mutex_destroy(&w->slots[i].lock);
    }
    prm_free(w->master);
    pthread_mutex_destroy(&w->create_lock);
    free(w);
}

/* ---- conventions wcslib lacks ------------------------------------------------------------ */

/* The value of a card, lower-cased, for scanning. */
static void card_value(const char *card, char *out, size_t outlen) {
    size_t k = 0;
    for (int i = 10; i < 80 && card[i] && k + 1 < outlen; i++)
        out[k++] = (char)((card[i] >= 'A' && card[i] <= 'Z') ? card[i] - 'A' + 'a' : card[i]);
    out[k] = 0;
}

/* The quoted string of a card's value, as written ("RA---TNX"), for messages. */
static void card_string(const char *card, char *out, size_t outlen) {
    const char *q = memchr(card + 10, '\'', 70);
    size_t k = 0;
    if (q)
        for (q++; *q && *q != '\'' && k + 1 < outlen && q < card + 80; q++)
            out[k++] = *q;
    while (k > 0 && out[k - 1] == ' ')
        k--;
    out[k] = 0;
}

/* TNX and ZPX are IRAF conventions (polynomials in WATi_n strings). wcslib 7 can translate
 * some of them into its TPD distortion, but tide refuses them: nothing independent checks
 * that translation (astropy ignores WAT), and a silently wrong astrometric solution is worse
 * than a clear error. Returns TIDE_E_UNSUPPORTED naming the convention, or 0. */
static int refuse_iraf(const tide_header *h, const char *source) {
    static const char *names[] = {"tnx", "zpx"};
    for (int i = 0; i < h->ncards; i++) {
        const char *c = h->cards[i];
        char val[80];
        /* primary CTYPEn only (an alternate WCS with its letter may be anything) */
        int is_ctype = strncmp(c, "CTYPE", 5) == 0 && c[8] == '=' && c[5] >= '1' && c[5] <= '9' &&
                       (c[6] == ' ' || (c[6] >= '0' && c[6] <= '9')) &&
                       (c[7] == ' ' || (c[7] >= '0' && c[7] <= '9'));
        int is_wat = strncmp(c, "WAT", 3) == 0 && c[8] == '=';
        if (!is_ctype && !is_wat)
            continue;
        card_value(c, val, sizeof val);
        for (int k = 0; k < 2; k++) {
            char pat[16];
            snprintf(pat, sizeof pat, is_ctype ? "-%s" : "wtype=%s", names[k]);
            if (!strstr(val, pat))
                continue;
            char key[9];
            memcpy(key, c, 8);
            key[8] = 0;
            for (int j = 7; j >= 0 && key[j] == ' '; j--)
                key[j] = 0;
            char conv[4] = {(char)(names[k][0] - 32), (char)(names[k][1] - 32),
                            (char)(names[k][2] - 32), 0};
            char text[72];
            card_string(c, text, sizeof text);
            return tide_error(TIDE_E_UNSUPPORTED,
                              "%s: %s = '%s': the %s WCS convention (IRAF WAT polynomial) is "
                              "not supported; refit the astrometry as TAN-SIP or TPV",
                              source, key, text, conv);
        }
    }
    return 0;
}

/* ---- construction ------------------------------------------------------------------------- */

/* Index (0-based) of the primary (alternate ' ') WCS among @p n, else of the first one. */
static int pick_primary(const struct wcsprm *v, int n) {
    for (int i = 0; i < n; i++)
        if (v[i].alt[0] == ' ' || v[i].alt[0] == 0)
            return i;
    return 0;
}

/* wcspih's lexer (wcslib 7.12) crashes on bytes above 126, which a FITS comment may hold in
 * practice (the header scan tolerates them there), and overflows a buffer (strcpy) on a
 * string value whose closing quote is missing. wcslib gets ASCII only, and such a card is
 * blanked: it is not a valid keyword of any WCS. */
static void sanitize_for_wcspih(char *cards, int ncards) {
    for (int i = 0; i < ncards; i++) {
        char *c = cards + (size_t)i * 80;
        for (int k = 0; k < 80; k++)
            if ((unsigned char)c[k] < 32 || (unsigned char)c[k] > 126)
                c[k] = ' ';
        if (c[8] != '=' || c[9] != ' ')
            continue;
        int k = 10;
        while (k < 80 && c[k] == ' ')
            k++;
        if (k == 80 || c[k] != '\'')
            continue;
        int closed = 0;
        for (k++; k < 80 && !closed; k++) {
            if (c[k] != '\'')
                continue;
            if (k + 1 < 80 && c[k + 1] == '\'')
                k++; /* a doubled quote inside the string */
            else
                closed = 1;
        }
        if (!closed)
            memset(c, ' ', 80);
    }
}

int tide_wcs_from_header(const tide_header *h, const char *source, tide_wcs **out) {
    if (!h || !out)
        return tide_error(TIDE_E_INVAL, "tide_wcs_from_header: NULL argument");
    *out = NULL;
    if (!source)
        source = "header";
    pthread_once(&errmsg_once, enable_errmsg);

    int st = refuse_iraf(h, source);
    if (!st)
        st = tide_wcs_check_sip_orders(h, source);
    if (st)
        return st;

    int ncards = 0;
    char *cards = tide_header_to_string(h, &ncards);
    if (!cards)
        return tide_error(TIDE_E_NOMEM, "%s: out of memory", source);
    sanitize_for_wcspih(cards, ncards);

    int nreject = 0, nwcs = 0;
    struct wcsprm *vec = NULL;
    st = wcspih(cards, ncards, WCSHDR_all, 0, &nreject, &nwcs, &vec);
    free(cards);
    if (st) {
        if (vec)
            wcsvfree(&nwcs, &vec);
        return tide_error(st == WCSHDRERR_MEMORY ? TIDE_E_NOMEM : TIDE_E_WCS,
                          "%s: wcslib cannot parse the header (wcspih status %d)", source, st);
    }
    if (nwcs == 0) {
        wcsvfree(&nwcs, &vec);
        return tide_error(TIDE_E_NOTFOUND, "%s: no WCS keywords in the header", source);
    }
    struct wcsprm *parsed = &vec[pick_primary(vec, nwcs)];

    /* NAXISn for cylfix (which needs the image size); absent in table headers. */
    int naxis[8] = {0};
    int have_naxis = parsed->naxis <= 8;
    for (int i = 0; i < parsed->naxis && have_naxis; i++) {
        char key[16];
        int64_t v = 0;
        snprintf(key, sizeof key, "NAXIS%d", i + 1);
        if (tide_header_find(h, key) < 0 || tide_header_get_int(h, key, &v) || v <= 0)
            have_naxis = 0;
        else
            naxis[i] = (int)v;
    }
    tide_error_clear();
    int fixstat[NWCSFIX];
    wcsfix(0, have_naxis ? naxis : NULL, parsed, fixstat); /* failures leave the WCS as it was */

    tide_wcs *w = calloc(1, sizeof *w);
    if (!w) {
        wcsvfree(&nwcs, &vec);
        return tide_error(TIDE_E_NOMEM, "%s: out of memory", source);
    }
    pthread_mutex_init(&w->create_lock, NULL);
    for (int i = 0; i < TIDE_WCS_SLOTS; i++)
        pthread_mutex_init(&w->slots[i].lock, NULL);
    snprintf(w->source, sizeof w->source, "%s", source);

    /* A trial set-up finds the celestial axes (and rejects bad keywords). */
    struct wcsprm *trial = NULL;
    st = prm_copy_set(parsed, source, &trial);
    if (st)
        goto fail;
    if (trial->lng < 0 || trial->lat < 0) {
        st = trial->ctype[0][0] == ' ' || trial->ctype[0][0] == 0
                 ? tide_error(TIDE_E_NOTFOUND, "%s: no celestial WCS (no CTYPEn keywords)", source)
                 : tide_error(TIDE_E_NOTFOUND,
                              "%s: no celestial WCS (CTYPE1 = '%s' is not a sky axis)", source,
                              trial->ctype[0]);
        goto fail;
    }
    /* After the trial (so an unknown projection is named first): a scale wcslib invented. */
    st = tide_wcs_check_header(h, source);
    if (st)
        goto fail;

    /* Keep only the two celestial axes, in their pixel-axis order. */
    w->master = calloc(1, sizeof *w->master);
    if (!w->master) {
        st = tide_error(TIDE_E_NOMEM, "%s: out of memory", source);
        goto fail;
    }
    w->master->flag = -1;
    int axes[2] = {(trial->lng < trial->lat ? trial->lng : trial->lat) + 1,
                   (trial->lng < trial->lat ? trial->lat : trial->lng) + 1};
    if (parsed->naxis == 2) {
        st = wcssub(1, parsed, NULL, NULL, w->master);
    } else {
        int nsub = 2;
        st = wcssub(1, parsed, &nsub, axes, w->master);
    }
    if (st) {
        st = tide_error(st == WCSERR_NON_SEPARABLE ? TIDE_E_UNSUPPORTED : TIDE_E_WCS,
                        "%s: cannot separate the celestial axes of a %d-axis WCS: %s", source,
                        parsed->naxis, tide_wcs_errmsg(w->master));
        goto fail;
    }
    /* CTYPEs as written (wcspih already turns "-TPV" into "-TAN" plus a distortion). */
    for (int k = 0; k < 2; k++) {
        char key[16];
        snprintf(key, sizeof key, "CTYPE%d%s", axes[k], parsed->alt[0] == ' ' ? "" : parsed->alt);
        if (tide_header_get_str(h, key, w->ctype[k], sizeof w->ctype[k]))
            snprintf(w->ctype[k], sizeof w->ctype[k], "%s", w->master->ctype[k]);
    }
    tide_error_clear();
    prm_free(trial);
    trial = NULL;
    wcsvfree(&nwcs, &vec);

    /* Set up the first evaluating copy now so every later failure is a runtime one. */
    st = prm_copy_set(w->master, source, &w->slots[0].prm);
    if (st)
        goto fail;
    const struct wcsprm *p = w->slots[0].prm;
    for (int k = 0; k < 2; k++) {
        const struct disprm *d = k ? p->lin.disseq : p->lin.dispre;
        if (!d)
            continue;
        for (int i = 0; i < p->naxis; i++) {
            if (strcmp(d->dtype[i], "SIP") == 0)
                w->has_sip = 1;
            if (strcmp(d->dtype[i], "TPV") == 0)
                w->has_tpv = 1;
            if (strncmp(d->dtype[i], "WAT", 3) == 0) {
                st = tide_error(TIDE_E_UNSUPPORTED,
                                "%s: the %s WCS convention (IRAF WAT polynomial) is not "
                                "supported",
                                source, d->dtype[i]);
                goto fail;
            }
        }
    }
    *out = w;
    return 0;

fail:
    prm_free(trial);
    if (vec)
        wcsvfree(&nwcs, &vec);
    tide_wcs_free(w);
    return st;
}

const char *tide_wcs_projection(const tide_wcs *w) {
    struct wcsprm *p = NULL; /* set when the slot is >= 0; gcc inlines acquire and cannot tell */
    int slot = tide_wcs_acquire(w, &p);
    if (slot < 0)
        return "";
    const char *code = p->cel.prj.code; /* lives as long as the slot's copy, i.e. as w */
    tide_wcs_release(w, slot);
    return code;
}

/* ---- batched evaluation ------------------------------------------------------------------ */

enum { CHUNK = 1024 };

typedef struct {
    double pix[2 * CHUNK], img[2 * CHUNK], world[2 * CHUNK], phi[CHUNK], theta[CHUNK];
    int stat[CHUNK];
} wcs_scratch;

static int convert_serial(const tide_wcs *w, int64_t n, const double *a, const double *b,
                          double *oa, double *ob, int to_sky) {
    wcs_scratch *s = malloc(sizeof *s);
    if (!s)
        return tide_error(TIDE_E_NOMEM, "%s: out of memory converting coordinates", w->source);
    struct wcsprm *p = NULL; /* as above */
    int slot = tide_wcs_acquire(w, &p);
    if (slot < 0) {
        free(s);
        return slot;
    }
    const int lng = p->lng, lat = p->lat;
    int st = 0;
    for (int64_t i0 = 0; i0 < n && !st; i0 += CHUNK) {
        const int m = (int)(n - i0 < CHUNK ? n - i0 : CHUNK);
        if (to_sky) {
            for (int i = 0; i < m; i++) { /* 0-based -> FITS 1-based (coords.h) */
                s->pix[2 * i] = a[i0 + i] + 1.0;
                s->pix[2 * i + 1] = b[i0 + i] + 1.0;
            }
            st = wcsp2s(p, m, 2, s->pix, s->img, s->phi, s->theta, s->world, s->stat);
        } else {
            for (int i = 0; i < m; i++) {
                s->world[2 * i + lng] = a[i0 + i];
                s->world[2 * i + lat] = b[i0 + i];
            }
            st = wcss2p(p, m, 2, s->world, s->phi, s->theta, s->img, s->pix, s->stat);
        }
        /* An out-of-domain point is NaN, not a failure of the whole batch. */
        if (st == WCSERR_BAD_PIX || st == WCSERR_BAD_WORLD)
            st = 0;
        if (st) {
            st = tide_error(TIDE_E_WCS, "%s: wcslib %s failed: %s", w->source,
                            to_sky ? "wcsp2s" : "wcss2p", tide_wcs_errmsg(p));
            break;
        }
        for (int i = 0; i < m; i++) {
            if (s->stat[i]) {
                oa[i0 + i] = ob[i0 + i] = NAN;
            } else if (to_sky) {
                double lon = fmod(s->world[2 * i + lng], 360.0);
                if (lon < 0)
                    lon += 360.0;
                oa[i0 + i] = lon >= 360.0 ? 0.0 : lon;
                ob[i0 + i] = s->world[2 * i + lat];
            } else {
                oa[i0 + i] = s->pix[2 * i] - 1.0;
                ob[i0 + i] = s->pix[2 * i + 1] - 1.0;
            }
        }
    }
    tide_wcs_release(w, slot);
    free(s);
    return st;
}

/* Large batches are cut into one range per OpenMP thread, each thread on its own wcsprm copy;
 * every point is computed exactly as in a serial call, so results do not depend on the
 * thread count. Inside an enclosing parallel region this runs serially (no nesting). */
enum { PAR_MIN = 16384 };

static int convert(const tide_wcs *w, int64_t n, const double *a, const double *b, double *oa,
                   double *ob, int to_sky) {
    if (!w || n < 0 || (n > 0 && (!a || !b || !oa || !ob)))
        return tide_error(TIDE_E_INVAL, "tide_wcs_%s: bad arguments",
                          to_sky ? "pix2sky" : "sky2pix");
    if (n == 0)
        return 0;
    int64_t parts = n / PAR_MIN;
    const int64_t maxt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (parts > maxt)
        parts = maxt;
    if (parts > TIDE_WCS_SLOTS)
        parts = TIDE_WCS_SLOTS;
    if (parts <= 1)
        return convert_serial(w, n, a, b, oa, ob, to_sky);
    int status[TIDE_WCS_SLOTS] = {0};
    char detail[TIDE_WCS_SLOTS][256];
#pragma omp parallel for schedule(static, 1) num_threads((int)parts)
    for (int64_t k = 0; k < parts; k++) {
        const int64_t i0 = n * k / parts, i1 = n * (k + 1) / parts;
        status[k] = convert_serial(w, i1 - i0, a + i0, b + i0, oa + i0, ob + i0, to_sky);
        if (status[k])
            snprintf(detail[k], sizeof detail[k], "%s", tide_error_detail());
    }
    for (int64_t k = 0; k < parts; k++) /* the detail was recorded on a worker thread */
        if (status[k])
            return tide_error(status[k], "%s", detail[k]);
    return 0;
}

int tide_wcs_pix2sky(const tide_wcs *w, int64_t n, const double *x, const double *y, double *ra,
                     double *dec) {
    return convert(w, n, x, y, ra, dec, 1);
}

int tide_wcs_sky2pix(const tide_wcs *w, int64_t n, const double *ra, const double *dec, double *x,
                     double *y) {
    return convert(w, n, ra, dec, x, y, 0);
}
