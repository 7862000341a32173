/* crossmatch_kdtree.c — the CPU crossmatch: a k-d tree on the unit vectors of list 2,
 * searched in parallel (OpenMP) for every position of list 1.
 *
 * The tree (Bentley 1975; Friedman, Bentley & Finkel 1977) splits each range at its median
 * along the axis of largest spread, down to leaves of at most TIDE_XM_LEAF points; it is
 * stored implicitly (crossmatch_kernels.h). The search is exact: a subtree is skipped only
 * when the squared distance from the query to its splitting plane, rounded the same way as
 * tide_xm_chord2 rounds that axis' term, already exceeds the best squared chord so far (equal
 * is kept, for the tie to the lower index). Rounding is monotonic, so that bound never
 * exceeds the computed chord of any point beyond the plane: the result is exactly the brute-
 * force one, whatever the tree shape or thread count.
 *
 * Large lists are queried in the Morton (Z-order) order of their positions, so consecutive
 * queries walk the same branches and leaves (about 40% less query time at 1e6 than in list
 * order); each query is independent, so the order changes no result. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "crossmatch_kernels.h"
#include "crossmatch_math.h"
#include "tide/status.h"

/* Top levels of the build run as OpenMP tasks when their range is at least this large. */
#define TASK_MIN_POINTS 32768
/* Loops over fewer items run on one thread: a team costs more than the work (and on a
 * loaded machine a descheduled team member stalls the whole call). */
#define PAR_MIN 8192
/* Stack of pending subtrees in a search: at most one per level. */
#define STACK_MAX 64

static int grow(void **buf, size_t *cap, size_t need, size_t elem) {
    if (*buf && *cap >= need)
        return TIDE_OK;
    size_t want = need + need / 8 + 16; /* slack: slowly growing lists do not reallocate */
    void *p = realloc(*buf, want * elem);
    if (!p)
        return tide_error(TIDE_E_NOMEM, "crossmatch: cannot allocate %zu bytes for the k-d tree",
                          want * elem);
    *buf = p;
    *cap = want;
    return TIDE_OK;
}

void tide_xm_tree_free(tide_xm_tree *t) {
    free(t->pts);
    free(t->split);
    free(t->axis);
    memset(t, 0, sizeof *t);
}

/* Partial sort of a[0..n) on axis @p ax so that a[k] is in its sorted place, smaller-or-equal
 * before, greater-or-equal after (Hoare's FIND, median-of-three pivot). Deterministic. */
static void select_kth(tide_xm_point *a, int64_t n, int64_t k, int ax) {
    int64_t lo = 0, hi = n - 1;
    while (hi > lo) {
        const double x = a[lo].v[ax], y = a[lo + (hi - lo) / 2].v[ax], z = a[hi].v[ax];
        const double piv = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (a[i].v[ax] < piv)
                i++;
            while (a[j].v[ax] > piv)
                j--;
            if (i <= j) {
                const tide_xm_point tmp = a[i];
                a[i] = a[j];
                a[j] = tmp;
                i++;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
}

/* Split node k over [lo, hi) at depth d, whose points lie in the box [mn, mx] (the root's
 * box is measured; a child's is its parent's cut at the split: cheaper than measuring, and
 * close enough to choose the axis of largest spread). */
static void build_node(tide_xm_tree *t, int64_t k, int64_t lo, int64_t hi, int d, const double *mn,
                       const double *mx) {
    if (d >= t->depth || hi - lo < 1)
        return;
    int ax = 0;
    for (int a = 1; a < 3; a++)
        if (mx[a] - mn[a] > mx[ax] - mn[ax])
            ax = a;
    const int64_t mid = lo + (hi - lo) / 2;
    select_kth(t->pts + lo, hi - lo, mid - lo, ax);
    const double s = t->pts[mid].v[ax];
    t->split[k] = s;
    t->axis[k] = (unsigned char)ax;
    double lmx[3] = {mx[0], mx[1], mx[2]}, rmn[3] = {mn[0], mn[1], mn[2]};
    lmx[ax] = s;
    rmn[ax] = s;
    if (hi - lo >= TASK_MIN_POINTS) {
#pragma omp task default(shared) firstprivate(k, lo, mid, d, lmx)
        build_node(t, 2 * k + 1, lo, mid, d + 1, mn, lmx);
        build_node(t, 2 * k + 2, mid, hi, d + 1, rmn, mx);
#pragma omp taskwait
    } else {
        build_node(t, 2 * k + 1, lo, mid, d + 1, mn, lmx);
        build_node(t, 2 * k + 2, mid, hi, d + 1, rmn, mx);
    }
}

int tide_xm_tree_build(tide_ctx *ctx, tide_xm_tree *t, const double *ra, const double *dec,
                       int64_t n) {
    const int nt = ctx->threads > 0 ? ctx->threads : 1;
    int st = grow((void **)&t->pts, &t->pts_cap, (size_t)(n > 0 ? n : 1), sizeof *t->pts);
    if (st)
        return st;
    tide_xm_point *p = t->pts;
#pragma omp parallel for num_threads(nt) schedule(static) if (n >= PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        if (tide_xm_valid(ra[i], dec[i])) {
            tide_xm_unit(ra[i], dec[i], p[i].v);
            p[i].j = i;
        } else {
            p[i].j = -1;
        }
    }
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (p[i].j >= 0)
            p[m++] = p[i];
    t->n = m;
    int depth = 0;
    while (depth < 40 && (m + ((int64_t)1 << depth) - 1) >> depth > TIDE_XM_LEAF)
        depth++;
    t->depth = depth;
    const size_t nodes = ((size_t)1 << depth) - 1;
    st = grow((void **)&t->split, &t->split_cap, nodes + 1, sizeof *t->split);
    if (!st)
        st = grow((void **)&t->axis, &t->axis_cap, nodes + 1, sizeof *t->axis);
    if (st)
        return st;
    if (depth == 0)
        return TIDE_OK;
    double mn[3] = {INFINITY, INFINITY, INFINITY}, mx[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t i = 0; i < m; i++)
        for (int a = 0; a < 3; a++) {
            mn[a] = fmin(mn[a], p[i].v[a]);
            mx[a] = fmax(mx[a], p[i].v[a]);
        }
#pragma omp parallel num_threads(nt) if (m >= TASK_MIN_POINTS)
#pragma omp single
    build_node(t, 0, 0, m, 0, mn, mx);
    return TIDE_OK;
}

int64_t tide_xm_tree_nearest(const tide_xm_tree *t, const double *q, double r2, double *d2) {
    struct {
        int64_t k, lo, hi;
        double bound;
    } stack[STACK_MAX];
    int sp = 0;
    int64_t best = -1;
    double bd = r2;
    stack[sp].k = 0;
    stack[sp].lo = 0;
    stack[sp].hi = t->n;
    stack[sp].bound = 0.0;
    sp++;
    const int64_t internal = ((int64_t)1 << t->depth) - 1;
    while (sp > 0) {
        sp--;
        if (stack[sp].bound > bd)
            continue;
        int64_t k = stack[sp].k, lo = stack[sp].lo, hi = stack[sp].hi;
        while (k < internal) { /* descend to the near leaf, keeping the far sides */
            const int ax = t->axis[k];
            const double s = t->split[k];
            const int64_t mid = lo + (hi - lo) / 2;
            const double dq = tide_dsub(q[ax], s);
            const double b = tide_dmul(dq, dq);
            const int left_first = q[ax] < s;
            if (b <= bd) {
                stack[sp].k = left_first ? 2 * k + 2 : 2 * k + 1;
                stack[sp].lo = left_first ? mid : lo;
                stack[sp].hi = left_first ? hi : mid;
                stack[sp].bound = b;
                sp++;
            }
            if (left_first) {
                k = 2 * k + 1;
                hi = mid;
            } else {
                k = 2 * k + 2;
                lo = mid;
            }
        }
        for (int64_t i = lo; i < hi; i++) {
            const double c2 = tide_xm_chord2(q, t->pts[i].v);
            if (tide_xm_better(c2, t->pts[i].j, bd, best)) {
                bd = c2;
                best = t->pts[i].j;
            }
        }
    }
    *d2 = bd;
    return best;
}

/* Morton key of a unit vector: 16 bits per axis interleaved (cells of ~6 arcsec). */
static uint64_t morton48(const double *v) {
    uint64_t key = 0;
    for (int a = 0; a < 3; a++) {
        double u = (v[a] + 1.0) * 32767.5;
        uint64_t q = u <= 0 ? 0 : (u >= 65535.0 ? 65535u : (uint64_t)u);
        /* spread the 16 bits of q to every third bit */
        q = (q | (q << 16)) & 0x0000FF0000FFull;
        q = (q | (q << 8)) & 0x00F00F00F00Full;
        q = (q | (q << 4)) & 0x0C30C30C30C3ull;
        q = (q | (q << 2)) & 0x249249249249ull;
        key |= q << a;
    }
    return key;
}

/* Stable LSD radix sort of o[0..n) on the low 48 bits of the key, 16 bits a pass. */
static int sort_order(tide_xm_scratch *s, int64_t n) {
    if (!s->radix)
        s->radix = malloc(sizeof(size_t) * 65536);
    if (!s->radix)
        return tide_error(TIDE_E_NOMEM, "crossmatch: radix counters");
    size_t *count = s->radix;
    tide_xm_order **o = &s->order, **tmp = &s->order_tmp;
    for (int shift = 0; shift < 48; shift += 16) {
        memset(count, 0, sizeof(size_t) * 65536);
        for (int64_t k = 0; k < n; k++)
            count[((*o)[k].key >> shift) & 0xFFFF]++;
        size_t sum = 0;
        for (int b = 0; b < 65536; b++) {
            const size_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (int64_t k = 0; k < n; k++)
            (*tmp)[count[((*o)[k].key >> shift) & 0xFFFF]++] = (*o)[k];
        tide_xm_order *t = *o;
        *o = *tmp;
        *tmp = t;
        const size_t c = s->order_cap;
        s->order_cap = s->order_tmp_cap;
        s->order_tmp_cap = c;
    }
    return TIDE_OK;
}

int tide_xm_match_cpu(tide_ctx *ctx, const tide_xm_job *job) {
    const int nt = ctx->threads > 0 ? ctx->threads : 1;
    const int64_t n1 = job->n1;
    int64_t *match = job->match;
    double *sep = job->sep;
    tide_xm_scratch *s = tide_xm_scratch_get(ctx);
    if (!s)
        return tide_error(TIDE_E_NOMEM, "crossmatch: no memory for scratch");
    int st = tide_xm_tree_build(ctx, &s->tree2, job->ra2, job->dec2, job->n2);
    if (!st)
        st = grow((void **)&s->order, &s->order_cap, (size_t)n1, sizeof *s->order);
    if (!st)
        st = grow((void **)&s->order_tmp, &s->order_tmp_cap, (size_t)n1, sizeof *s->order);
    if (st)
        return st;
    /* Query order: Morton order of the positions (a large list only; the key's value never
     * changes a result, only the order in which independent queries run). */
    tide_xm_order *ord = s->order;
#pragma omp parallel for num_threads(nt) schedule(static) if (n1 >= PAR_MIN)
    for (int64_t i = 0; i < n1; i++) {
        double q[3] = {0, 0, 0};
        if (n1 >= PAR_MIN && tide_xm_valid(job->ra1[i], job->dec1[i]))
            tide_xm_unit(job->ra1[i], job->dec1[i], q);
        ord[i].key = morton48(q);
        ord[i].i = i;
    }
    if (n1 >= PAR_MIN) {
        st = sort_order(s, n1);
        if (st)
            return st;
        ord = s->order;
    }
    const tide_xm_tree *t2 = &s->tree2;
    const double r2 = job->r2;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 512) if (n1 >= PAR_MIN)
    for (int64_t k = 0; k < n1; k++) {
        const int64_t i = ord[k].i;
        int64_t j = -1;
        double d2 = 0.0;
        if (t2->n > 0 && tide_xm_valid(job->ra1[i], job->dec1[i])) {
            double q[3];
            tide_xm_unit(job->ra1[i], job->dec1[i], q);
            j = tide_xm_tree_nearest(t2, q, r2, &d2);
        }
        match[i] = j;
        if (sep)
            sep[i] = j >= 0 ? tide_xm_sep_arcsec(d2) : NAN;
    }
    if (job->mutual) {
        /* Keep (i, j) only when i is also the nearest list-1 position of j. */
        st = tide_xm_tree_build(ctx, &s->tree1, job->ra1, job->dec1, n1);
        if (st)
            return st;
        const tide_xm_tree *t1 = &s->tree1;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 512) if (n1 >= PAR_MIN)
        for (int64_t i = 0; i < n1; i++) {
            const int64_t j = match[i];
            if (j < 0)
                continue;
            double q[3], d2;
            tide_xm_unit(job->ra2[j], job->dec2[j], q);
            if (tide_xm_tree_nearest(t1, q, r2, &d2) != i) {
                match[i] = -1;
                if (sep)
                    sep[i] = NAN;
            }
        }
    }
    if (job->nmatched) {
        int64_t cnt = 0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : cnt) if (n1 >= PAR_MIN)
        for (int64_t i = 0; i < n1; i++)
            cnt += match[i] >= 0;
        *job->nmatched = cnt;
    }
    return TIDE_OK;
}
