/* wcs_internal.h — the inside of a tide_wcs, shared by the files of src/wcs/.
 *
 * wcslib evaluates through a non-const wcsprm (scratch buffers and error records live in the
 * struct), so a tide_wcs holds a master copy that is never evaluated and a pool of private
 * copies, each behind its own mutex; tide_wcs_acquire hands a caller one of them. */
#ifndef TIDE_WCS_INTERNAL_H
#define TIDE_WCS_INTERNAL_H
#include <pthread.h>
#include <wcslib/wcs.h>
#include "tide/wcs.h"

#define TIDE_WCS_SLOTS 16

typedef struct tide_wcs_slot {
    pthread_mutex_t lock;
    struct wcsprm *prm; /* NULL until first used; made from master under create_lock */
} tide_wcs_slot;

struct tide_wcs {
    struct wcsprm *master; /* set up (wcsset) and never evaluated: the copies' template */
    pthread_mutex_t create_lock;
    tide_wcs_slot slots[TIDE_WCS_SLOTS];
    char ctype[2][72]; /* CTYPEs as the header gave them (before wcsset renames TPV) */
    char source[256];  /* names the header in error details */
    int has_sip, has_tpv;
};

/** Take a private, set-up wcsprm of @p w for this thread; release it with tide_wcs_release.
 *  Returns the slot index or a negative status. */
int tide_wcs_acquire(const tide_wcs *w, struct wcsprm **prm);
void tide_wcs_release(const tide_wcs *w, int slot);

/** wcslib's error message of @p prm (or "" when it recorded none). */
const char *tide_wcs_errmsg(const struct wcsprm *prm);

/** TIDE_E_WCS when the header's celestial WCS has no real pixel scale: a singular or
 *  non-finite CD matrix, a zero CDELTi, a singular PC matrix, or none of CDi_j, CDELTi, PCi_j
 *  and CROTAi (where wcslib would assume 1 degree per pixel). 0 when there is no CTYPE1/2. */
int tide_wcs_check_header(const tide_header *h, const char *source);

/** TIDE_E_WCS when A_ORDER, B_ORDER, AP_ORDER or BP_ORDER is not an integer in
 *  0..TIDE_WCS_SIP_MAX_ORDER. */
int tide_wcs_check_sip_orders(const tide_header *h, const char *source);

#endif
