/* config.c — the configuration object: values per schema key with their origins, built-in
 * defaults, command-line overrides and the typed getters. Files are merged in config_load.c. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "tide/status.h"

const char *tide_config_type_name(tide_config_type t) {
    switch (t) {
    case TIDE_CFG_NUMBER: return "number";
    case TIDE_CFG_INTEGER: return "integer";
    case TIDE_CFG_STRING: return "string";
    case TIDE_CFG_BOOL: return "bool";
    case TIDE_CFG_ARRAY: return "array of numbers";
    case TIDE_CFG_KEYWORD: return "FITS keyword";
    }
    return "?";
}

const char *tide_config_layer_name(tide_config_layer l) {
    switch (l) {
    case TIDE_CONFIG_BUILTIN: return "built-in";
    case TIDE_CONFIG_DEFAULT: return "default.json";
    case TIDE_CONFIG_INSTRUMENT: return "instrument";
    case TIDE_CONFIG_OVERRIDE: return "override";
    }
    return "?";
}

/* ---- values ------------------------------------------------------------------------------ */

void tide_cfg_value_free(tide_cfg_value *v) {
    free(v->str);
    free(v->arr);
    memset(v, 0, sizeof *v);
}

int tide_cfg_value_copy(tide_cfg_value *dst, const tide_cfg_value *src) {
    *dst = *src;
    dst->str = NULL;
    dst->arr = NULL;
    if (src->str && !(dst->str = strdup(src->str)))
        return TIDE_E_NOMEM;
    if (src->arr) {
        dst->arr = malloc((size_t)src->n * sizeof(double));
        if (!dst->arr) {
            free(dst->str);
            dst->str = NULL;
            return TIDE_E_NOMEM;
        }
        memcpy(dst->arr, src->arr, (size_t)src->n * sizeof(double));
    }
    return TIDE_OK;
}

int tide_cfg_check_range(const tide_config_key *k, double v, char *why, size_t whylen) {
    int below = k->lo_open ? !(v > k->lo) : !(v >= k->lo);
    if (!below && v <= k->hi)
        return TIDE_OK;
    const char *op = k->lo_open ? ">" : ">=";
    if (isinf(k->hi))
        snprintf(why, whylen, "%g is out of range (must be %s %g)", v, op, k->lo);
    else if (isinf(k->lo))
        snprintf(why, whylen, "%g is out of range (must be <= %g)", v, k->hi);
    else
        snprintf(why, whylen, "%g is out of range (must be %s %g and <= %g)", v, op, k->lo, k->hi);
    return TIDE_E_CONFIG;
}

int tide_cfg_check_keyword(char *s, char *why, size_t whylen) {
    size_t n = strlen(s);
    int ok = n >= 1 && n <= 8;
    for (size_t i = 0; ok && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c == '-' || c == '_'))
            ok = 0;
    }
    if (!ok) {
        snprintf(why, whylen, "'%.40s' is not a FITS keyword (1 to 8 of A-Z 0-9 - _)", s);
        return TIDE_E_CONFIG;
    }
    for (size_t i = 0; i < n; i++)
        s[i] = (char)toupper((unsigned char)s[i]);
    return TIDE_OK;
}

static int parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    while (isspace((unsigned char)*end))
        end++;
    if (end == s || *end || errno == ERANGE || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

/* Parse "3,5,8", "[3, 5, 8]" into a malloc'd array. */
static int parse_array(const tide_config_key *k, const char *text, tide_cfg_value *out, char *why,
                       size_t whylen) {
    char buf[1024];
    const char *s = text;
    while (isspace((unsigned char)*s))
        s++;
    size_t len = strlen(s);
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    if (len && s[0] == '[') {
        if (s[len - 1] != ']') {
            snprintf(why, whylen, "must be an array of numbers (unclosed '[')");
            return TIDE_E_CONFIG;
        }
        s++, len -= 2;
    }
    if (len >= sizeof buf) {
        snprintf(why, whylen, "array text too long");
        return TIDE_E_CONFIG;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    double vals[TIDE_CFG_MAX_ARRAY];
    int n = 0;
    char *save = NULL;
    int empty = 1;
    for (const char *p = buf; *p; p++)
        if (!isspace((unsigned char)*p))
            empty = 0;
    if (empty) {
        snprintf(why, whylen, "must be a non-empty array of numbers");
        return TIDE_E_CONFIG;
    }
    /* strtok would skip empty fields ("3,,5"); walk commas by hand so they are errors. */
    for (char *tok = buf;; tok = save + 1) {
        save = strchr(tok, ',');
        if (save)
            *save = '\0';
        double v;
        if (!parse_double(tok, &v)) {
            snprintf(why, whylen, "element %d ('%.30s') is not a number", n, tok);
            return TIDE_E_CONFIG;
        }
        if (n == TIDE_CFG_MAX_ARRAY) {
            snprintf(why, whylen, "has more than %d elements", TIDE_CFG_MAX_ARRAY);
            return TIDE_E_CONFIG;
        }
        char rwhy[160];
        if (tide_cfg_check_range(k, v, rwhy, sizeof rwhy)) {
            snprintf(why, whylen, "element %d: %s", n, rwhy);
            return TIDE_E_CONFIG;
        }
        vals[n++] = v;
        if (!save)
            break;
    }
    out->arr = malloc((size_t)n * sizeof(double));
    if (!out->arr)
        return TIDE_E_NOMEM;
    memcpy(out->arr, vals, (size_t)n * sizeof(double));
    out->n = n;
    return TIDE_OK;
}

int tide_cfg_value_from_text(const tide_config_key *k, const char *text, tide_cfg_value *out,
                             char *why, size_t whylen) {
    memset(out, 0, sizeof *out);
    if (!strcmp(text, "null"))
        return TIDE_OK; /* unset */
    out->set = 1;
    switch (k->type) {
    case TIDE_CFG_NUMBER:
        if (!parse_double(text, &out->num)) {
            snprintf(why, whylen, "must be a number, got '%.40s'", text);
            return TIDE_E_CONFIG;
        }
        return tide_cfg_check_range(k, out->num, why, whylen);
    case TIDE_CFG_INTEGER: {
        char *end;
        errno = 0;
        long long v = strtoll(text, &end, 10);
        if (end == text || *end || errno == ERANGE) {
            snprintf(why, whylen, "must be an integer, got '%.40s'", text);
            return TIDE_E_CONFIG;
        }
        out->i = v;
        return tide_cfg_check_range(k, (double)v, why, whylen);
    }
    case TIDE_CFG_BOOL: {
        static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no",
                                                                                    "off", "0"};
        for (int i = 0; i < 4; i++) {
            if (!strcmp(text, yes[i]))
                return out->b = 1, TIDE_OK;
            if (!strcmp(text, no[i]))
                return out->b = 0, TIDE_OK;
        }
        snprintf(why, whylen, "must be true or false, got '%.40s'", text);
        return TIDE_E_CONFIG;
    }
    case TIDE_CFG_STRING:
    case TIDE_CFG_KEYWORD:
        if (!(out->str = strdup(text)))
            return TIDE_E_NOMEM;
        if (k->type == TIDE_CFG_KEYWORD)
            return tide_cfg_check_keyword(out->str, why, whylen);
        return TIDE_OK;
    case TIDE_CFG_ARRAY: return parse_array(k, text, out, why, whylen);
    }
    return TIDE_E_INTERNAL;
}

/* ---- the object -------------------------------------------------------------------------- */

int tide_config_create(tide_config **out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "tide_config_create: NULL output");
    *out = NULL;
    int n;
    const tide_config_key *schema = tide_config_schema(&n);
    tide_config *c = calloc(1, sizeof *c);
    if (!c || !(c->slots = calloc((size_t)n, sizeof *c->slots))) {
        free(c);
        return tide_error(TIDE_E_NOMEM, "config: out of memory");
    }
    c->nkeys = n;
    for (int i = 0; i < n; i++) {
        c->slots[i].origin.layer = TIDE_CONFIG_BUILTIN;
        if (!schema[i].fallback)
            continue;
        char why[200];
        int st = tide_cfg_value_from_text(&schema[i], schema[i].fallback, &c->slots[i].v, why,
                                          sizeof why);
        if (st) {
            tide_config_free(c);
            return tide_error(st == TIDE_E_NOMEM ? st : TIDE_E_INTERNAL,
                              "config: built-in default of %s.%s: %s", schema[i].section,
                              schema[i].name, why);
        }
    }
    *out = c;
    return TIDE_OK;
}

void tide_config_free(tide_config *cfg) {
    if (!cfg)
        return;
    for (int i = 0; i < cfg->nkeys; i++)
        tide_cfg_value_free(&cfg->slots[i].v);
    for (int i = 0; i < cfg->nfiles; i++)
        free(cfg->files[i]);
    free(cfg->files);
    free(cfg->slots);
    free(cfg);
}

const char *tide_cfg_intern_file(tide_config *cfg, const char *name) {
    for (int i = 0; i < cfg->nfiles; i++)
        if (!strcmp(cfg->files[i], name))
            return cfg->files[i];
    char **f = realloc(cfg->files, (size_t)(cfg->nfiles + 1) * sizeof *f);
    if (!f)
        return NULL;
    cfg->files = f;
    if (!(f[cfg->nfiles] = strdup(name)))
        return NULL;
    return f[cfg->nfiles++];
}

int tide_config_copy(tide_config **out, const tide_config *src) {
    if (!out || !src)
        return tide_error(TIDE_E_INVAL, "tide_config_copy: NULL argument");
    *out = NULL;
    tide_config *c = calloc(1, sizeof *c);
    if (!c || !(c->slots = calloc((size_t)src->nkeys, sizeof *c->slots))) {
        free(c);
        return tide_error(TIDE_E_NOMEM, "config: out of memory");
    }
    c->nkeys = src->nkeys;
    for (int i = 0; i < src->nkeys; i++) {
        const tide_cfg_slot *s = &src->slots[i];
        c->slots[i].origin = s->origin;
        if (s->origin.file && !(c->slots[i].origin.file = tide_cfg_intern_file(c, s->origin.file)))
            goto nomem;
        if (tide_cfg_value_copy(&c->slots[i].v, &s->v))
            goto nomem;
    }
    *out = c;
    return TIDE_OK;
nomem:
    tide_config_free(c);
    return tide_error(TIDE_E_NOMEM, "config: out of memory");
}

int tide_config_set(tide_config *cfg, const char *assignment) {
    if (!cfg || !assignment)
        return tide_error(TIDE_E_INVAL, "tide_config_set: NULL argument");
    const char *eq = strchr(assignment, '=');
    const char *dot = strchr(assignment, '.');
    if (!eq || !dot || dot > eq)
        return tide_error(TIDE_E_CONFIG, "--set %s: expected section.key=value", assignment);
    char section[64], name[64];
    size_t ls = (size_t)(dot - assignment), lk = (size_t)(eq - dot - 1);
    if (ls >= sizeof section || lk >= sizeof name)
        return tide_error(TIDE_E_CONFIG, "--set %s: name too long", assignment);
    memcpy(section, assignment, ls);
    section[ls] = '\0';
    memcpy(name, dot + 1, lk);
    name[lk] = '\0';
    if (!tide_cfg_section_known(section)) {
        const char *hint = tide_cfg_suggest(NULL, section);
        return tide_error(TIDE_E_CONFIG, "--set %s: unknown section '%s'%s%s%s", assignment,
                          section, hint ? " (did you mean '" : "", hint ? hint : "",
                          hint ? "'?)" : "");
    }
    int idx = tide_cfg_index(section, name);
    if (idx < 0) {
        const char *hint = tide_cfg_suggest(section, name);
        return tide_error(TIDE_E_CONFIG, "--set %s: unknown key '%s' in section '%s'%s%s%s",
                          assignment, name, section, hint ? " (did you mean '" : "",
                          hint ? hint : "", hint ? "'?)" : "");
    }
    const tide_config_key *k = &tide_config_schema(NULL)[idx];
    tide_cfg_value v;
    char why[200];
    int st = tide_cfg_value_from_text(k, eq + 1, &v, why, sizeof why);
    if (st) {
        tide_cfg_value_free(&v);
        if (st == TIDE_E_NOMEM)
            return tide_error(st, "config: out of memory");
        return tide_error(st, "--set %s: %s.%s %s", assignment, section, name, why);
    }
    tide_cfg_value_free(&cfg->slots[idx].v);
    cfg->slots[idx].v = v;
    cfg->slots[idx].origin = (tide_config_origin){TIDE_CONFIG_OVERRIDE, NULL, 0, 0};
    return TIDE_OK;
}

/* ---- getters ----------------------------------------------------------------------------- */

/* Find the slot of @p key with one of the types in @p t1 / @p t2; NULL after recording why. */
static const tide_cfg_slot *slot_of(const tide_config *cfg, const char *key, int t1, int t2,
                                    int *st) {
    if (!cfg || !key) {
        *st = tide_error(TIDE_E_INVAL, "config getter: NULL argument");
        return NULL;
    }
    int idx = tide_cfg_index_dotted(key);
    if (idx < 0) {
        *st = tide_error(TIDE_E_INVAL, "config: no key '%s' in the schema", key);
        return NULL;
    }
    const tide_config_key *k = &tide_config_schema(NULL)[idx];
    if ((int)k->type != t1 && (int)k->type != t2) {
        *st = tide_error(TIDE_E_INVAL, "config: %s is a %s, read with the wrong getter", key,
                         tide_config_type_name(k->type));
        return NULL;
    }
    if (!cfg->slots[idx].v.set) {
        *st = tide_error(TIDE_E_NOTFOUND, "config: %s is not set", key);
        return NULL;
    }
    return &cfg->slots[idx];
}

int tide_config_get_dbl(const tide_config *cfg, const char *key, double *out) {
    int st = TIDE_OK;
    const tide_cfg_slot *s = slot_of(cfg, key, TIDE_CFG_NUMBER, TIDE_CFG_INTEGER, &st);
    if (!s)
        return st;
    int idx = (int)(s - cfg->slots);
    *out = tide_config_schema(NULL)[idx].type == TIDE_CFG_INTEGER ? (double)s->v.i : s->v.num;
    return TIDE_OK;
}

int tide_config_get_int(const tide_config *cfg, const char *key, int64_t *out) {
    int st = TIDE_OK;
    const tide_cfg_slot *s = slot_of(cfg, key, TIDE_CFG_INTEGER, TIDE_CFG_INTEGER, &st);
    if (!s)
        return st;
    *out = s->v.i;
    return TIDE_OK;
}

int tide_config_get_str(const tide_config *cfg, const char *key, const char **out) {
    int st = TIDE_OK;
    const tide_cfg_slot *s = slot_of(cfg, key, TIDE_CFG_STRING, TIDE_CFG_KEYWORD, &st);
    if (!s)
        return st;
    *out = s->v.str;
    return TIDE_OK;
}

int tide_config_get_bool(const tide_config *cfg, const char *key, int *out) {
    int st = TIDE_OK;
    const tide_cfg_slot *s = slot_of(cfg, key, TIDE_CFG_BOOL, TIDE_CFG_BOOL, &st);
    if (!s)
        return st;
    *out = s->v.b;
    return TIDE_OK;
}

int tide_config_get_array(const tide_config *cfg, const char *key, const double **vals, int *n) {
    int st = TIDE_OK;
    const tide_cfg_slot *s = slot_of(cfg, key, TIDE_CFG_ARRAY, TIDE_CFG_ARRAY, &st);
    if (!s)
        return st;
    *vals = s->v.arr;
    *n = s->v.n;
    return TIDE_OK;
}

int tide_config_is_set(const tide_config *cfg, const char *key) {
    int idx = cfg && key ? tide_cfg_index_dotted(key) : -1;
    return idx >= 0 && cfg->slots[idx].v.set;
}

int tide_config_origin_of(const tide_config *cfg, const char *key, tide_config_origin *out) {
    int idx = cfg && key ? tide_cfg_index_dotted(key) : -1;
    if (idx < 0)
        return tide_error(TIDE_E_INVAL, "config: no key '%s' in the schema", key);
    *out = cfg->slots[idx].origin;
    return TIDE_OK;
}

void tide_config_origin_format(const tide_config_origin *o, char *buf, size_t len) {
    if (o->file)
        snprintf(buf, len, "%s:%d:%d", o->file, o->line, o->column);
    else
        snprintf(buf, len, "%s", tide_config_layer_name(o->layer));
}
