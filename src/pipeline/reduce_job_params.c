/* reduce_job_params.c — the reduce job's settings (job.h): a request's defaults, the
 * calibration's and the store's settings from the request and the configuration, and the
 * check that no output replaces an input or another output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce_job_internal.h"
#include "tide/outfile.h"
#include "tide/status.h"

void tide_reduce_request_init(tide_reduce_request *rq) {
    memset(rq, 0, sizeof *rq);
    rq->noise = -1;
}

int tide_reduce_calib_wanted(const tide_reduce_calib_opts *o, const tide_calib_params *p) {
    /* An index directory asks for a solve as solve does. */
    return tide_calib_has_refcat(p) || o->solve || o->index_dir;
}

static int copy_opt(char *dst, size_t n, const char *v, const char *what) {
    if (strlen(v) >= n)
        return tide_error(TIDE_E_INVAL, "%s is longer than %zu characters", what, n - 1);
    snprintf(dst, n, "%s", v);
    return 0;
}

int tide_reduce_calib_params(const tide_reduce_calib_opts *o, const tide_config *cfg,
                             const tide_instrument *inst, const char *spec, tide_calib_params *p) {
    tide_calib_params_default(p);
    int st = tide_calib_params_from_config(p, cfg, inst);
    /* The option names are the command's: the messages are `tide reduce`'s. */
    if (!st && o->refcat) {
        st = copy_opt(p->refcat, sizeof p->refcat, o->refcat, "--refcat");
        p->refcat_command[0] = '\0'; /* the request wins over a configured command */
    }
    if (!st && o->refcat_table)
        st = copy_opt(p->refcat_table, sizeof p->refcat_table, o->refcat_table, "--refcat-table");
    if (!st && o->index_dir)
        st = copy_opt(p->index_dir, sizeof p->index_dir, o->index_dir, "--index-dir");
    if (o->solve || o->index_dir)
        p->solve = 1;
    if (o->no_astrometry)
        p->astrometry = 0;
    snprintf(p->source, sizeof p->source, "%s", spec);
    return st;
}

const char *tide_reduce_store_uri(const tide_reduce_calib_opts *o, const tide_config *cfg) {
    if (o->store)
        return o->store;
    const char *v = NULL;
    if (tide_config_is_set(cfg, "store.uri") && !tide_config_get_str(cfg, "store.uri", &v) && v)
        return v;
    v = getenv("TIDE_STORE");
    return v ? v : "";
}

int tide_reduce_check_outputs(const char *frame, const char *const config_files[2],
                              const char *refcat, const char *store, const char *const outs[4]) {
    if (store && !strncmp(store, "sqlite:", 7))
        store += 7;
    const char *ins[] = {frame, config_files ? config_files[0] : NULL,
                         config_files ? config_files[1] : NULL, refcat, store};
    /* The store is written too: no output may take its name, even before it exists, and it
     * may not be one of the other inputs. */
    const char *all[] = {outs[0], outs[1], outs[2], outs[3], store};
    int st = tide_outputs_check(ins, 5, outs, 4);
    return st ? st : tide_outputs_check(ins, 4, all, 5);
}
