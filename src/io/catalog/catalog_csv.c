/* catalog_csv.c — the CSV catalog (RFC 4180), staged and renamed into
 * place like every tide output. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tide/catalog.h"
#include "tide/outfile.h"
#include "tide/status.h"

static void put_double(FILE *f, double v) {
    if (isnan(v))
        fputs("nan", f);
    else if (isinf(v))
        fputs(v > 0 ? "inf" : "-inf", f);
    else
        fprintf(f, "%.17g", v);
}

static void put_float(FILE *f, float v) {
    if (isnan(v))
        fputs("nan", f);
    else if (isinf(v))
        fputs(v > 0 ? "inf" : "-inf", f);
    else
        fprintf(f, "%.9g", (double)v);
}

/* A fixed-width string field, quoted when RFC 4180 requires it. */
static void put_string(FILE *f, const char *s, int64_t width) {
    int64_t len = 0;
    while (len < width && s[len])
        len++;
    while (len > 0 && s[len - 1] == ' ')
        len--;
    int quote = 0;
    for (int64_t i = 0; i < len; i++)
        if (s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r')
            quote = 1;
    if (quote)
        fputc('"', f);
    for (int64_t i = 0; i < len; i++) {
        if (s[i] == '"')
            fputc('"', f);
        fputc(s[i], f);
    }
    if (quote)
        fputc('"', f);
}

static void put_element(FILE *f, const tide_column *c, int64_t e) {
    switch (c->type) {
    case TIDE_COL_F64: put_double(f, ((const double *)c->data)[e]); break;
    case TIDE_COL_F32: put_float(f, ((const float *)c->data)[e]); break;
    case TIDE_COL_I64: fprintf(f, "%lld", (long long)((const int64_t *)c->data)[e]); break;
    case TIDE_COL_I32: fprintf(f, "%ld", (long)((const int32_t *)c->data)[e]); break;
    case TIDE_COL_I16: fprintf(f, "%d", (int)((const int16_t *)c->data)[e]); break;
    case TIDE_COL_U8: fprintf(f, "%u", (unsigned)((const uint8_t *)c->data)[e]); break;
    case TIDE_COL_STR: break;
    }
}

static int write_all(FILE *f, const tide_table *t) {
    for (int j = 0; j < t->ncols; j++) {
        const tide_column *c = &t->cols[j];
        const int64_t r = c->type == TIDE_COL_STR ? 1 : c->repeat;
        for (int64_t k = 0; k < r; k++) {
            if (j || k)
                fputc(',', f);
            if (r > 1)
                fprintf(f, "%s_%lld", c->name, (long long)(k + 1));
            else
                fputs(c->name, f);
        }
    }
    fputs("\r\n", f);
    for (int64_t i = 0; i < t->nrows; i++) {
        for (int j = 0; j < t->ncols; j++) {
            const tide_column *c = &t->cols[j];
            if (j)
                fputc(',', f);
            if (c->type == TIDE_COL_STR) {
                put_string(f, (const char *)c->data + i * c->repeat, c->repeat);
                continue;
            }
            for (int64_t k = 0; k < c->repeat; k++) {
                if (k)
                    fputc(',', f);
                put_element(f, c, i * c->repeat + k);
            }
        }
        fputs("\r\n", f);
    }
    return ferror(f) ? -1 : 0;
}

int tide_catalog_write_csv(const char *path, const tide_table *t) {
    if (!path || !*path)
        return tide_error(TIDE_E_INVAL, "no CSV file name given");
    if (!t)
        return tide_error(TIDE_E_INVAL, "%s: no catalog to write", path);
    for (int j = 0; j < t->ncols; j++)
        if (!t->cols[j].data && t->nrows > 0)
            return tide_error(TIDE_E_INVAL, "%s: column %s has no data", path, t->cols[j].name);
    /* "-" is standard output; an existing target that is not a regular file (a pipe,
     * /dev/stdout) is written in place: renaming over it would replace the device. */
    struct stat sb;
    const int special = !strcmp(path, "-") || (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode));
    if (special) {
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            return tide_error(TIDE_E_IO, "%s: is a directory", path);
        FILE *f = strcmp(path, "-") ? fopen(path, "wb") : stdout;
        if (!f)
            return tide_error(TIDE_E_IO, "%s: cannot open: %s", path, strerror(errno));
        int bad = write_all(f, t);
        bad |= fflush(f) != 0;
        if (f != stdout)
            bad |= fclose(f) != 0;
        return bad ? tide_error(TIDE_E_IO, "%s: cannot write: %s", path, strerror(errno)) : 0;
    }
    tide_outfile of;
    int st = tide_outfile_begin(&of, path);
    if (!st)
        st = tide_catalog_write_csv_to(&of, t);
    if (!st)
        return tide_outfile_commit(&of);
    tide_outfile_abort(&of);
    return st;
}

int tide_catalog_write_csv_to(struct tide_outfile *of, const tide_table *t) {
    const char *path = of->path;
    if (!t)
        return tide_error(TIDE_E_INVAL, "%s: no catalog to write", path);
    for (int j = 0; j < t->ncols; j++)
        if (!t->cols[j].data && t->nrows > 0)
            return tide_error(TIDE_E_INVAL, "%s: column %s has no data", path, t->cols[j].name);
    FILE *f;
    int st = tide_outfile_fopen(of, &f);
    if (st)
        return st;
    int bad = write_all(f, t);
    bad |= fflush(f) != 0;
    bad |= fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad) {
        st = tide_error(TIDE_E_IO, "%s: cannot write: %s", path, strerror(errno));
        unlink(of->tmp);
        return st;
    }
    of->synced = 1;
    return 0;
}
