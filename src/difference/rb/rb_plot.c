/* rb_plot.c — the ROC curve and the AUC of scores against labels, and the two pictures
 * `tide rb train` writes (ROC, feature importance): raster plots drawn into a float image and
 * written by the PNG writer (png.h), labelled with a 3 × 5 pixel font. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/png.h"
#include "tide/rb.h"
#include "tide/status.h"

typedef struct {
    float s, y;
} scored;

static int by_score_desc(const void *a, const void *b) {
    const float x = ((const scored *)a)->s, y = ((const scored *)b)->s;
    return (x < y) - (x > y);
}

double tide_rb_auc(const float *score, const float *label, int64_t n, double *fpr, double *tpr,
                   int64_t *npts) {
    if (npts)
        *npts = 0;
    scored *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v)
        return NAN;
    double np = 0, nn = 0;
    for (int64_t i = 0; i < n; i++) {
        v[i].s = isfinite(score[i]) ? score[i] : -INFINITY;
        v[i].y = label[i] > 0.5f;
        np += v[i].y;
    }
    nn = (double)n - np;
    if (np == 0 || nn == 0) {
        free(v);
        return NAN;
    }
    qsort(v, (size_t)n, sizeof *v, by_score_desc);
    /* Walk the thresholds from the highest score: each group of tied scores is one step of
     * the curve, whose area is a trapezoid (ties counted half). */
    double tp = 0, fp = 0, area = 0;
    int64_t k = 0;
    if (fpr && tpr) {
        fpr[0] = tpr[0] = 0;
        k = 1;
    }
    for (int64_t i = 0; i < n;) {
        double dtp = 0, dfp = 0;
        int64_t j = i;
        for (; j < n && v[j].s == v[i].s; j++)
            dtp += v[j].y, dfp += 1 - v[j].y;
        area += dfp * (tp + 0.5 * dtp);
        tp += dtp;
        fp += dfp;
        if (fpr && tpr) {
            fpr[k] = fp / nn;
            tpr[k] = tp / np;
            k++;
        }
        i = j;
    }
    free(v);
    if (npts)
        *npts = k;
    return area / (np * nn);
}

/* ---- drawing ---------------------------------------------------------------------------- */

typedef struct {
    float *pix;
    int w, h;
} canvas;

static void put(canvas *c, int x, int y, float v) {
    if (x >= 0 && y >= 0 && x < c->w && y < c->h)
        c->pix[(size_t)y * c->w + x] = v;
}

static void line(canvas *c, double x0, double y0, double x1, double y1, float v) {
    const int n = (int)ceil(fmax(fabs(x1 - x0), fabs(y1 - y0))) + 1;
    for (int i = 0; i <= n; i++) {
        const double t = (double)i / n;
        put(c, (int)lround(x0 + t * (x1 - x0)), (int)lround(y0 + t * (y1 - y0)), v);
    }
}

static void box(canvas *c, int x0, int y0, int x1, int y1, float v) {
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++)
            put(c, x, y, v);
}

/* The glyphs: five rows of three pixels, top row first. */
static const char *glyph(char ch) {
    static const char *const digits[10] = {"111101101101111", "010110010010111", "111001111100111",
                                           "111001111001111", "101101111001001", "111100111001111",
                                           "111100111101111", "111001001001001", "111101111101111",
                                           "111101111001111"};
    static const char *const letters[26] = {
        "010101111101101", "110101110101110", "011100100100011", "110101101101110",
        "111100110100111", "111100110100100", "011100101101011", "101101111101101",
        "111010010010111", "001001001101010", "101101110101101", "100100100100111",
        "101111111101101", "110101101101101", "010101101101010", "110101110100100",
        "010101101110011", "110101110101101", "011100010001110", "111010010010010",
        "101101101101111", "101101101101010", "101101111111101", "101101010101101",
        "101101010010010", "111001010100111"};
    if (ch >= '0' && ch <= '9')
        return digits[ch - '0'];
    if (ch >= 'a' && ch <= 'z')
        ch = (char)(ch - 'a' + 'A');
    if (ch >= 'A' && ch <= 'Z')
        return letters[ch - 'A'];
    switch (ch) {
    case '_': return "000000000000111";
    case '.': return "000000000000010";
    case '=': return "000111000111000";
    case '-': return "000000111000000";
    default: return "000000000000000";
    }
}

/* Text with its lower-left corner at (x, y) (y upwards), each font pixel @p s × @p s. */
static void text(canvas *c, int x, int y, int s, const char *str, float v) {
    for (; *str; str++, x += 4 * s) {
        const char *g = glyph(*str);
        for (int r = 0; r < 5; r++)
            for (int q = 0; q < 3; q++)
                if (g[r * 3 + q] == '1')
                    box(c, x + q * s, y + (4 - r) * s, x + q * s + s - 1, y + (4 - r) * s + s - 1,
                        v);
    }
}

static int canvas_make(canvas *c, int w, int h) {
    c->w = w;
    c->h = h;
    c->pix = malloc((size_t)w * h * sizeof *c->pix);
    if (!c->pix)
        return tide_error(TIDE_E_NOMEM, "rb plot: out of memory");
    for (size_t i = 0; i < (size_t)w * h; i++)
        c->pix[i] = 1.0f;
    return 0;
}

static int canvas_write(canvas *c, const char *path) {
    tide_png_stretch s;
    tide_png_stretch_default(&s);
    s.lo = 0;
    s.hi = 1;
    const int st = tide_png_write_image(path, c->pix, c->w, c->h, c->w, &s);
    free(c->pix);
    return st;
}

int tide_rb_plot_roc(const char *path, const double *fpr, const double *tpr, int64_t npts) {
    if (!path || npts < 2)
        return tide_error(TIDE_E_INVAL, "rb plot: a ROC curve needs two points");
    canvas c;
    int st = canvas_make(&c, 480, 480);
    if (st)
        return st;
    const int x0 = 50, y0 = 50, L = 400;
    for (int k = 0; k <= 10; k++) { /* grid every 0.1 */
        const int at = k * L / 10;
        line(&c, x0 + at, y0, x0 + at, y0 + L, 0.85f);
        line(&c, x0, y0 + at, x0 + L, y0 + at, 0.85f);
    }
    for (double t = 0; t < 1; t += 0.02) /* chance: dashed diagonal */
        line(&c, x0 + t * L, y0 + t * L, x0 + (t + 0.01) * L, y0 + (t + 0.01) * L, 0.5f);
    line(&c, x0, y0, x0 + L, y0, 0);
    line(&c, x0, y0, x0, y0 + L, 0);
    line(&c, x0 + L, y0, x0 + L, y0 + L, 0);
    line(&c, x0, y0 + L, x0 + L, y0 + L, 0);
    for (int64_t i = 1; i < npts; i++)
        for (int d = -1; d <= 1; d++)
            line(&c, x0 + fpr[i - 1] * L + d, y0 + tpr[i - 1] * L, x0 + fpr[i] * L + d,
                 y0 + tpr[i] * L, 0);
    text(&c, x0 - 6, y0 - 18, 2, "0", 0);
    text(&c, x0 + L - 6, y0 - 18, 2, "1", 0);
    text(&c, x0 - 18, y0 + L - 6, 2, "1", 0);
    text(&c, x0 + L / 2 - 90, 12, 3, "FALSE POS", 0);
    text(&c, 8, y0 + L / 2, 2, "TPR", 0);
    double area = 0;
    for (int64_t i = 1; i < npts; i++)
        area += (fpr[i] - fpr[i - 1]) * 0.5 * (tpr[i] + tpr[i - 1]);
    char lab[64];
    snprintf(lab, sizeof lab, "AUC=%.4f", area);
    text(&c, x0 + L / 2 - 20, y0 + 40, 3, lab, 0);
    text(&c, x0 + 10, y0 + L + 12, 3, "ROC REAL-BOGUS", 0);
    return canvas_write(&c, path);
}

int tide_rb_plot_bars(const char *path, const double *values, int n) {
    if (!path || n < 1 || n > TIDE_RB_NFEAT)
        return tide_error(TIDE_E_INVAL, "rb plot: 1 to %d bars", TIDE_RB_NFEAT);
    double vmax = 0;
    for (int i = 0; i < n; i++)
        vmax = fmax(vmax, isfinite(values[i]) ? values[i] : 0);
    const int row = 18, lab = 130, W = 560, H = row * n + 40;
    canvas c;
    int st = canvas_make(&c, W, H);
    if (st)
        return st;
    text(&c, 8, H - 16, 2, "FEATURE IMPORTANCE  GAIN", 0);
    for (int i = 0; i < n; i++) {
        const int y = H - 30 - (i + 1) * row;
        text(&c, 8, y + 3, 2, tide_rb_feature_name(i), 0);
        const double f = vmax > 0 && isfinite(values[i]) ? values[i] / vmax : 0;
        const int len = (int)lround(f * (W - lab - 20));
        if (len > 0)
            box(&c, lab, y + 2, lab + len, y + row - 4, 0.25f);
        line(&c, lab, y, lab, y + row, 0);
    }
    return canvas_write(&c, path);
}
