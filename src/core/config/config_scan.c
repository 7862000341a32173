/* config_scan.c — positions of keys in a JSON text.
 *
 * jansson reports where a syntax error is, but keeps no position for the values it parsed, so a
 * semantic error ("unknown key 'gian' in section 'camera'") could not say where it is. After
 * jansson has accepted the text, this walks it once more with a minimal tokenizer — strings
 * (with escapes), brackets, commas and colons; numbers and literals are skipped — and records
 * where every key of the top-level object and of the objects directly inside it starts, and
 * where its value starts. Because the text is already known to be valid JSON the walk needs no
 * error handling of its own. Lines and columns are 1-based and columns count UTF-8 characters,
 * as jansson's do. */
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "tide/status.h"

typedef struct scanner {
    const unsigned char *s;
    size_t len, i;
    int line, col; /* position of the last consumed character */
} scanner;

static int next(scanner *sc) {
    if (sc->i >= sc->len)
        return -1;
    int c = sc->s[sc->i++];
    if (c == '\n')
        sc->line++, sc->col = 0;
    else if ((c & 0xC0) != 0x80) /* count only the first byte of a UTF-8 sequence */
        sc->col++;
    return c;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return 0;
}

static unsigned read_hex4(scanner *sc) {
    unsigned v = 0;
    for (int k = 0; k < 4; k++)
        v = v * 16 + (unsigned)hexval(next(sc));
    return v;
}

static void put_utf8(char *out, size_t *n, unsigned cp) {
    if (cp < 0x80) {
        out[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*n)++] = (char)(0xC0 | (cp >> 6));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*n)++] = (char)(0xE0 | (cp >> 12));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*n)++] = (char)(0xF0 | (cp >> 18));
        out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
}

/* Read a string whose opening quote was just consumed; return it unescaped (malloc'd) when
 * @p keep, else NULL. An unescaped string is never longer than its escaped form. */
static char *read_string(scanner *sc, int keep) {
    char *out = keep ? malloc(sc->len - sc->i + 1) : NULL;
    size_t n = 0;
    for (;;) {
        int c = next(sc);
        if (c < 0 || c == '"')
            break;
        if (c != '\\') {
            if (out)
                out[n++] = (char)c;
            continue;
        }
        c = next(sc);
        unsigned cp;
        switch (c) {
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            cp = read_hex4(sc);
            if (cp >= 0xD800 && cp < 0xDC00 && sc->i + 1 < sc->len && sc->s[sc->i] == '\\' &&
                sc->s[sc->i + 1] == 'u') {
                next(sc), next(sc);
                unsigned lo = read_hex4(sc);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            break;
        default: cp = (unsigned)c; /* \" \\ \/ */
        }
        if (out)
            put_utf8(out, &n, cp);
    }
    if (out)
        out[n] = '\0';
    return out;
}

int tide_cfg_scan_positions(const char *text, size_t len, tide_cfg_pos **out, int *nout) {
    enum { MAXDEPTH = 512 };
    char stack[MAXDEPTH]; /* '{' or '[' per open container */
    int depth = 0, expect_key = 0, pending = -1;
    char *section = NULL; /* last key of the top-level object */
    tide_cfg_pos *pos = NULL;
    int n = 0, cap = 0;
    scanner sc = {(const unsigned char *)text, len, 0, 1, 0};
    int st = TIDE_OK;

    for (;;) {
        int c = next(&sc);
        if (c < 0)
            break;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            continue;
        char top = depth > 0 && depth <= MAXDEPTH ? stack[depth - 1] : 0;
        int is_key = c == '"' && top == '{' && expect_key;
        if (!is_key && pending >= 0 && c != ',' && c != '}' && c != ']' && c != ':') {
            pos[pending].val_line = sc.line; /* first character of a value */
            pos[pending].val_col = sc.col;
            pending = -1;
        }
        switch (c) {
        case '{':
        case '[':
            if (depth < MAXDEPTH)
                stack[depth] = (char)c;
            depth++;
            expect_key = c == '{';
            break;
        case '}':
        case ']':
            depth--;
            expect_key = 0;
            break;
        case ',': expect_key = top == '{'; break;
        case ':': break;
        case '"': {
            int line = sc.line, col = sc.col;
            /* keys of the root object, and of objects that are values of the root object */
            int record = is_key && (depth == 1 || (depth == 2 && stack[0] == '{'));
            char *str = read_string(&sc, record);
            if (!record) {
                expect_key = 0;
                break;
            }
            if (!str)
                goto nomem;
            if (n == cap) {
                int ncap = cap ? 2 * cap : 32;
                tide_cfg_pos *p = realloc(pos, (size_t)ncap * sizeof *p);
                if (!p) {
                    free(str);
                    goto nomem;
                }
                pos = p, cap = ncap;
            }
            tide_cfg_pos *e = &pos[n];
            memset(e, 0, sizeof *e);
            e->key = str;
            e->key_line = line, e->key_col = col;
            if (depth == 2) {
                if (section && !(e->section = strdup(section))) {
                    free(str);
                    goto nomem;
                }
            } else {
                free(section);
                if (!(section = strdup(str))) {
                    free(str);
                    goto nomem;
                }
            }
            pending = n++;
            expect_key = 0;
            break;
        }
        default:
            /* number or literal: skip to the next delimiter */
            while (sc.i < sc.len && !strchr(",]} \t\r\n", sc.s[sc.i]))
                next(&sc);
        }
    }
    free(section);
    *out = pos;
    *nout = n;
    return st;
nomem:
    free(section);
    tide_cfg_pos_free(pos, n);
    return tide_error(TIDE_E_NOMEM, "config: out of memory");
}

void tide_cfg_pos_free(tide_cfg_pos *p, int n) {
    if (!p)
        return;
    for (int i = 0; i < n; i++) {
        free(p[i].section);
        free(p[i].key);
    }
    free(p);
}
