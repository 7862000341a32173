/* test_diff_template.c — a prepared template (tide_diff_template_prepare) gives, bit for bit,
 * the result of tide_diff_run with the template frame itself (difference, variance, mask,
 * matched image, kernel, every candidate column, header counts), and again on a second run
 * (the template is not changed by a run). Also: a prepared template refuses another output
 * grid, and a template without WCS fails naming it. On the CPU, and on CUDA when a GPU is
 * present. */
#include <stdio.h>
#include <string.h>

#include "tide/diff.h"
#include "tide/tide.h"
#include "tide_test.h"
#include "common/diff_walkthrough.h"

static int same_f32(const float *a, const float *b, int64_t n) {
    return (!a && !b) || (a && b && !memcmp(a, b, sizeof(float) * (size_t)n));
}

static void same_results(const tide_diff_result *a, const tide_diff_result *b, const char *what) {
    const int64_t n = a->diff.width * a->diff.height;
    const int64_t kn = (int64_t)a->kernel_w * a->kernel_w;
    int ok = a->diff.width == b->diff.width && a->diff.height == b->diff.height &&
             same_f32(a->diff.pix, b->diff.pix, n) && same_f32(a->diff.var, b->diff.var, n) &&
             same_f32(a->matched.pix, b->matched.pix, n) && a->kernel_w == b->kernel_w &&
             same_f32(a->kernel, b->kernel, kn) && a->kernel_sum == b->kernel_sum &&
             !memcmp(a->diff.mask, b->diff.mask, sizeof(uint16_t) * (size_t)n) &&
             a->cands.nrows == b->cands.nrows && a->cands.ncols == b->cands.ncols &&
             a->nfitted == b->nfitted && a->var_scale == b->var_scale;
    for (int k = 0; ok && k < a->cands.ncols; k++) {
        const tide_column *ca = &a->cands.cols[k], *cb = &b->cands.cols[k];
        const size_t bytes = (size_t)(a->cands.nrows * ca->repeat * tide_col_type_size(ca->type));
        ok = !strcmp(ca->name, cb->name) && (!bytes || !memcmp(ca->data, cb->data, bytes));
        if (!ok)
            printf("%s: candidate column %s differs\n", what, ca->name);
    }
    int64_t na = -1, nb = -2;
    tide_header_get_int(&a->header, "NCAND", &na);
    tide_header_get_int(&b->header, "NCAND", &nb);
    ok = ok && na == nb;
    printf("%s: %s (%lld candidates, kernel sum %.6f)\n", what, ok ? "identical" : "DIFFERENT",
           (long long)a->cands.nrows, a->kernel_sum);
    CHECK(ok);
}

static void run(tide_backend backend) {
    tide_ctx *ctx = tide_test_ctx(backend, 0);
    if (!ctx)
        return;
    tide_image sci, tmpl;
    tide_header hs, ht;
    walkthrough_pair(&sci, &hs, &tmpl, &ht);
    tide_diff_params p;
    tide_diff_params_default(&p);
    snprintf(p.tmpl_name, sizeof p.tmpl_name, "tmpl.fits");
    tide_diff_result whole, r1, r2;
    CHECK_OK(tide_diff_run(ctx, &sci, &hs, &tmpl, &ht, &p, &whole));
    tide_diff_template *t = NULL;
    CHECK_OK(tide_diff_template_prepare(ctx, &tmpl, &ht, &p, &t));
    CHECK(t != NULL);
    if (t) {
        CHECK_OK(tide_diff_run_template(ctx, &sci, &hs, t, &p, &r1));
        CHECK_OK(tide_diff_run_template(ctx, &sci, &hs, t, &p, &r2));
        const char *b = backend == TIDE_BACKEND_CUDA ? "cuda" : "cpu";
        char what[64];
        snprintf(what, sizeof what, "%s, prepared template", b);
        same_results(&whole, &r1, what);
        snprintf(what, sizeof what, "%s, its second run", b);
        same_results(&whole, &r2, what);
        tide_diff_result_free(&r1);
        tide_diff_result_free(&r2);

        /* the template is the output grid */
        tide_diff_params q = p;
        q.grid = TIDE_DIFF_GRID_SCIENCE;
        CHECK(tide_diff_run_template(ctx, &sci, &hs, t, &q, &r1) == TIDE_E_INVAL);
        CHECK(strstr(tide_error_detail(), "tmpl.fits") != NULL);
        tide_error_clear();
    }
    tide_diff_template_free(ctx, t);

    /* no WCS in the template's header: an error naming it, and no template */
    tide_header bare;
    tide_header_init(&bare);
    tide_header_set_dbl(&bare, "GAIN", 1.0, NULL);
    t = (tide_diff_template *)&bare; /* must be reset to NULL */
    CHECK(tide_diff_template_prepare(ctx, &tmpl, &bare, &p, &t) == TIDE_E_NOTFOUND);
    CHECK(t == NULL);
    CHECK(strstr(tide_error_detail(), "tmpl.fits") != NULL);
    tide_error_clear();

    tide_header_free(&bare);
    tide_diff_result_free(&whole);
    tide_image_free(NULL, &sci);
    tide_image_free(NULL, &tmpl);
    tide_header_free(&hs);
    tide_header_free(&ht);
    tide_ctx_destroy(ctx);
}

int main(void) {
    run(TIDE_BACKEND_CPU);
    if (tide_cuda_available(NULL))
        run(TIDE_BACKEND_CUDA);
    return TIDE_TEST_RESULT();
}
