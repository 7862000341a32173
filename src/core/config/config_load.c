/* config_load.c — merging JSON configuration files into a configuration (jansson), and
 * writing a configuration back as JSON.
 *
 * A file is parsed whole by jansson (duplicate keys rejected), then checked against the schema
 * into a staging area, and only when every key is valid is the staging applied: an error leaves
 * the configuration as it was. Error positions of syntax errors come from jansson; those of
 * semantic errors from config_scan.c. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "tide/redact.h"
#include "tide/status.h"

static const char *json_kind(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* Check one JSON value against key @p k into @p out; TIDE_E_CONFIG with @p why on error. */
static int value_from_json(const tide_config_key *k, json_t *j, tide_cfg_value *out, char *why,
                           size_t whylen) {
    memset(out, 0, sizeof *out);
    if (json_is_null(j))
        return TIDE_OK;
    out->set = 1;
    const char *want = NULL;
    switch (k->type) {
    case TIDE_CFG_NUMBER:
        if (!json_is_number(j)) {
            want = "a number";
            break;
        }
        out->num = json_number_value(j);
        return tide_cfg_check_range(k, out->num, why, whylen);
    case TIDE_CFG_INTEGER:
        if (!json_is_integer(j)) {
            want = "an integer";
            break;
        }
        out->i = (int64_t)json_integer_value(j);
        return tide_cfg_check_range(k, (double)out->i, why, whylen);
    case TIDE_CFG_BOOL:
        if (!json_is_boolean(j)) {
            want = "true or false";
            break;
        }
        out->b = json_is_true(j);
        return TIDE_OK;
    case TIDE_CFG_STRING:
    case TIDE_CFG_KEYWORD:
        if (!json_is_string(j)) {
            want = k->type == TIDE_CFG_KEYWORD ? "a FITS keyword string (or null)" : "a string";
            break;
        }
        if (!(out->str = strdup(json_string_value(j))))
            return TIDE_E_NOMEM;
        if (k->type == TIDE_CFG_KEYWORD)
            return tide_cfg_check_keyword(out->str, why, whylen);
        return TIDE_OK;
    case TIDE_CFG_ARRAY: {
        size_t n = json_is_array(j) ? json_array_size(j) : 0;
        if (!json_is_array(j) || n == 0) {
            want = "a non-empty array of numbers";
            break;
        }
        if (n > TIDE_CFG_MAX_ARRAY) {
            snprintf(why, whylen, "has %zu elements, at most %d allowed", n, TIDE_CFG_MAX_ARRAY);
            return TIDE_E_CONFIG;
        }
        if (!(out->arr = malloc(n * sizeof(double))))
            return TIDE_E_NOMEM;
        out->n = (int)n;
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(j, i);
            char rwhy[160];
            if (!json_is_number(e)) {
                snprintf(why, whylen, "element %zu must be a number, got %s", i, json_kind(e));
                return TIDE_E_CONFIG;
            }
            out->arr[i] = json_number_value(e);
            if (tide_cfg_check_range(k, out->arr[i], rwhy, sizeof rwhy)) {
                snprintf(why, whylen, "element %zu: %s", i, rwhy);
                return TIDE_E_CONFIG;
            }
        }
        return TIDE_OK;
    }
    }
    snprintf(why, whylen, "must be %s, got %s", want ? want : "?", json_kind(j));
    return TIDE_E_CONFIG;
}

static const tide_cfg_pos *find_pos(const tide_cfg_pos *p, int n, const char *section,
                                    const char *key) {
    for (int i = 0; i < n; i++) {
        if (strcmp(p[i].key, key))
            continue;
        if (!section ? !p[i].section : p[i].section && !strcmp(p[i].section, section))
            return &p[i];
    }
    return NULL;
}

/* Position of the first non-blank character (for "the top level must be an object"). */
static void first_char_pos(const char *t, size_t len, int *line, int *col) {
    *line = 1, *col = 1;
    for (size_t i = 0; i < len; i++) {
        if (t[i] == '\n')
            (*line)++, *col = 1;
        else if (t[i] == ' ' || t[i] == '\t' || t[i] == '\r')
            (*col)++;
        else
            return;
    }
}

#define HINT_FMT "%s%s%s"
#define HINT_ARGS(h) (h) ? " (did you mean '" : "", (h) ? (h) : "", (h) ? "'?)" : ""

int tide_config_merge_string(tide_config *cfg, const char *text, size_t len, const char *name,
                             tide_config_layer layer) {
    if (!cfg || !text || !name)
        return tide_error(TIDE_E_INVAL, "tide_config_merge_string: NULL argument");
    json_error_t err;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root) /* jansson's column is 0 right after a newline (at end of file); say 1 */
        return tide_error(TIDE_E_CONFIG, "%s:%d:%d: malformed JSON: %s", name,
                          err.line > 0 ? err.line : 1, err.column > 0 ? err.column : 1, err.text);

    int nkeys;
    const tide_config_key *schema = tide_config_schema(&nkeys);
    tide_cfg_pos *pos = NULL;
    int npos = 0, st = TIDE_OK;
    tide_cfg_value *staged = calloc((size_t)nkeys, sizeof *staged);
    const tide_cfg_pos **where = calloc((size_t)nkeys, sizeof *where);
    char *given = calloc((size_t)nkeys, 1);
    if (!staged || !where || !given) {
        st = tide_error(TIDE_E_NOMEM, "config: out of memory");
        goto done;
    }
    if (!json_is_object(root)) {
        int line, col;
        first_char_pos(text, len, &line, &col);
        st = tide_error(TIDE_E_CONFIG,
                        "%s:%d:%d: the top level must be an object of sections, "
                        "got %s",
                        name, line, col, json_kind(root));
        goto done;
    }
    if ((st = tide_cfg_scan_positions(text, len, &pos, &npos)))
        goto done;

    const char *section;
    json_t *sec;
    json_object_foreach(root, section, sec) {
        if (section[0] == '_')
            continue; /* comment */
        const tide_cfg_pos *sp = find_pos(pos, npos, NULL, section);
        int sl = sp ? sp->key_line : 0, sc = sp ? sp->key_col : 0;
        if (!tide_cfg_section_known(section)) {
            const char *h = tide_cfg_suggest(NULL, section);
            st = tide_error(TIDE_E_CONFIG,
                            "%s:%d:%d: unknown section '%s' (sections: "
                            "instrument, keywords, camera, processing)" HINT_FMT,
                            name, sl, sc, section, HINT_ARGS(h));
            goto done;
        }
        if (!json_is_object(sec)) {
            st = tide_error(TIDE_E_CONFIG, "%s:%d:%d: section '%s' must be an object, got %s", name,
                            sp ? sp->val_line : 0, sp ? sp->val_col : 0, section, json_kind(sec));
            goto done;
        }
        const char *key;
        json_t *val;
        json_object_foreach(sec, key, val) {
            if (key[0] == '_')
                continue;
            const tide_cfg_pos *kp = find_pos(pos, npos, section, key);
            int idx = tide_cfg_index(section, key);
            if (idx < 0) {
                const char *h = tide_cfg_suggest(section, key);
                st = tide_error(
                    TIDE_E_CONFIG, "%s:%d:%d: unknown key '%s' in section '%s'" HINT_FMT, name,
                    kp ? kp->key_line : 0, kp ? kp->key_col : 0, key, section, HINT_ARGS(h));
                goto done;
            }
            char why[200];
            int vs = value_from_json(&schema[idx], val, &staged[idx], why, sizeof why);
            if (vs == TIDE_E_NOMEM) {
                st = tide_error(vs, "config: out of memory");
                goto done;
            }
            if (vs) {
                st = tide_error(vs, "%s:%d:%d: %s.%s %s", name, kp ? kp->val_line : 0,
                                kp ? kp->val_col : 0, section, key, why);
                goto done;
            }
            given[idx] = 1;
            where[idx] = kp;
        }
    }

    /* Everything is valid: apply. */
    const char *owned = tide_cfg_intern_file(cfg, name);
    if (!owned) {
        st = tide_error(TIDE_E_NOMEM, "config: out of memory");
        goto done;
    }
    for (int i = 0; i < nkeys; i++) {
        if (!given[i])
            continue;
        tide_cfg_value_free(&cfg->slots[i].v);
        cfg->slots[i].v = staged[i];
        memset(&staged[i], 0, sizeof staged[i]);
        cfg->slots[i].origin = (tide_config_origin){layer, owned, where[i] ? where[i]->val_line : 0,
                                                    where[i] ? where[i]->val_col : 0};
    }

done:
    if (staged)
        for (int i = 0; i < nkeys; i++)
            tide_cfg_value_free(&staged[i]);
    free(staged);
    free(where);
    free(given);
    tide_cfg_pos_free(pos, npos);
    json_decref(root);
    return st;
}

int tide_config_merge_file(tide_config *cfg, const char *path, tide_config_layer layer) {
    if (!cfg || !path)
        return tide_error(TIDE_E_INVAL, "tide_config_merge_file: NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f)
        return tide_error(TIDE_E_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *nb = cap < ((size_t)64 << 20) ? realloc(buf, cap * 2) : NULL;
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb, cap *= 2;
    }
    int rerr = ferror(f);
    fclose(f);
    if (!buf)
        return tide_error(TIDE_E_CONFIG, "%s: too large for a configuration", path);
    if (rerr) {
        free(buf);
        return tide_error(TIDE_E_IO, "%s: read error", path);
    }
    int st = tide_config_merge_string(cfg, buf, n, path, layer);
    free(buf);
    return st;
}

/* ---- writing ----------------------------------------------------------------------------- */

void tide_cfg_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void tide_cfg_json_number(FILE *f, double v, int as_real) {
    char buf[64];
    int p = 1;
    for (; p < 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    snprintf(buf, sizeof buf, "%.*g", p, v);
    /* %g turns 330 into 3.3e+02 at 2 digits; write moderate magnitudes positionally */
    double a = fabs(v);
    if (strchr(buf, 'e') && a >= 1e-5 && a < 1e16) {
        int e10 = (int)floor(log10(a));
        snprintf(buf, sizeof buf, "%.*f", p - 1 - e10 > 0 ? p - 1 - e10 : 0, v);
        if (strtod(buf, NULL) != v)
            snprintf(buf, sizeof buf, "%.17g", v);
    }
    fputs(buf, f);
    if (as_real && !strpbrk(buf, ".eEn"))
        fputs(".0", f);
}

static void write_value(FILE *f, const tide_config_key *k, const tide_cfg_value *v) {
    if (!v->set) {
        fputs("null", f);
        return;
    }
    switch (k->type) {
    case TIDE_CFG_NUMBER: tide_cfg_json_number(f, v->num, 1); break;
    case TIDE_CFG_INTEGER: fprintf(f, "%lld", (long long)v->i); break;
    case TIDE_CFG_BOOL: fputs(v->b ? "true" : "false", f); break;
    case TIDE_CFG_STRING:
    case TIDE_CFG_KEYWORD: {
        /* store.uri, refcat.path...: a password in a URI or conninfo string prints as *** */
        const size_t cap = 2 * strlen(v->str) + 8;
        char *shown = malloc(cap);
        tide_cfg_json_string(f, shown ? tide_redact_uri(v->str, shown, cap) : "");
        free(shown);
        break;
    }
    case TIDE_CFG_ARRAY:
        fputc('[', f);
        for (int i = 0; i < v->n; i++) {
            if (i)
                fputs(", ", f);
            tide_cfg_json_number(f, v->arr[i], 1);
        }
        fputc(']', f);
        break;
    }
}

int tide_config_write_json(const tide_config *cfg, FILE *f, int indent, int flags) {
    if (!cfg || !f)
        return tide_error(TIDE_E_INVAL, "tide_config_write_json: NULL argument");
    int n;
    const tide_config_key *schema = tide_config_schema(&n);
    fputs("{", f);
    int nsec = 0;
    for (int i = 0; i < n;) {
        const char *sec = schema[i].section;
        int end = i;
        while (end < n && !strcmp(schema[end].section, sec))
            end++;
        fprintf(f, "%s\n%*s", nsec++ ? "," : "", indent + 2, "");
        tide_cfg_json_string(f, sec);
        fputs(": {", f);
        for (int j = i; j < end; j++) {
            fprintf(f, "%s\n%*s", j > i ? "," : "", indent + 4, "");
            tide_cfg_json_string(f, schema[j].name);
            fputs(": ", f);
            write_value(f, &schema[j], &cfg->slots[j].v);
        }
        if (flags & TIDE_CONFIG_JSON_ORIGINS) {
            fprintf(f, ",\n%*s\"_origin\": {", indent + 4, "");
            for (int j = i; j < end; j++) {
                char buf[1200];
                tide_config_origin_format(&cfg->slots[j].origin, buf, sizeof buf);
                fprintf(f, "%s\n%*s", j > i ? "," : "", indent + 6, "");
                tide_cfg_json_string(f, schema[j].name);
                fputs(": ", f);
                tide_cfg_json_string(f, buf);
            }
            fprintf(f, "\n%*s}", indent + 4, "");
        }
        fprintf(f, "\n%*s}", indent + 2, "");
        i = end;
    }
    fprintf(f, "\n%*s}", indent, "");
    return ferror(f) ? tide_error(TIDE_E_IO, "config: write failed") : TIDE_OK;
}
