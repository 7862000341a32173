/* test_core.c — status/detail, logging, image, table, header, timers, contexts. */
#include <stdio.h>
#include <string.h>

#include "tide/tide.h"
#include "tide_test.h"

static void test_status(void) {
    CHECK(!strcmp(tide_strerror(TIDE_OK), "success"));
    CHECK(strcmp(tide_strerror(TIDE_E_FORMAT), tide_strerror(TIDE_E_IO)));
    CHECK(tide_error(TIDE_E_NOTFOUND, "%s: key %s", "a.fits", "GAIN") == TIDE_E_NOTFOUND);
    CHECK(!strcmp(tide_error_detail(), "a.fits: key GAIN"));
    tide_error_prefix(TIDE_E_NOTFOUND, "reading %s: ", "x");
    CHECK(!strcmp(tide_error_detail(), "reading x: a.fits: key GAIN"));
    tide_error_clear();
    CHECK(tide_error_detail()[0] == '\0');
}

static void test_log(void) {
    char buf[4096] = {0};
    FILE *f = fmemopen(buf, sizeof buf, "w");
    tide_logger lg = {f, TIDE_LOG_INFO, 1};
    tide_log(&lg, TIDE_LOG_INFO, "fits", "read \"%s\"", "x.fits");
    tide_log(&lg, TIDE_LOG_DEBUG, "fits", "not written");
    fclose(f);
    CHECK(strstr(buf, "\"level\":\"info\"") != NULL);
    CHECK(strstr(buf, "\"msg\":\"read \\\"x.fits\\\"\"") != NULL);
    CHECK(strstr(buf, "not written") == NULL);
    tide_log_level lv;
    CHECK_OK(tide_log_level_parse("debug", &lv));
    CHECK(lv == TIDE_LOG_DEBUG);
    CHECK(tide_log_level_parse("loud", &lv) == TIDE_E_INVAL);
    tide_logger silent = {0};
    tide_log(&silent, TIDE_LOG_ERROR, "x", "goes nowhere");

    /* a worker's thread names its frame: every line of that thread carries it, then none */
    char fb[4096] = {0};
    f = fmemopen(fb, sizeof fb, "w");
    lg.stream = f;
    tide_log_set_frame("night \"7\"/f.fits");
    tide_log(&lg, TIDE_LOG_INFO, "worker", "done");
    lg.json = 0;
    tide_log(&lg, TIDE_LOG_INFO, "worker", "text");
    tide_log_set_frame(NULL);
    tide_log(&lg, TIDE_LOG_INFO, "worker", "untagged");
    fclose(f);
    CHECK(
        strstr(fb, "\"stage\":\"worker\",\"frame\":\"night \\\"7\\\"/f.fits\",\"msg\":\"done\"") !=
        NULL);
    CHECK(strstr(fb, "[worker] {night \"7\"/f.fits} text") != NULL);
    CHECK(strstr(fb, "[worker] untagged") != NULL);
}

static void test_image(tide_ctx *ctx) {
    tide_image a, b;
    CHECK_OK(tide_image_alloc(ctx, &a, 7, 3, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR));
    CHECK(a.stride == 7 && a.mask && a.var && tide_image_npix(&a) == 21);
    for (int i = 0; i < 21; i++) {
        a.pix[i] = (float)i;
        a.mask[i] = (uint16_t)(i % 3);
        a.var[i] = 2.0f * (float)i;
    }
    CHECK_OK(tide_image_clone(ctx, &b, &a, TIDE_HOST));
    CHECK(b.pix[20] == 20.0f && b.mask[5] == 2 && b.var[10] == 20.0f);
    tide_image_free(ctx, &b);
    CHECK(b.pix == NULL);
    CHECK(tide_image_alloc(ctx, &b, 0, 3, TIDE_HOST, 0) == TIDE_E_INVAL);
    /* A CPU context cannot hold device images. */
    if (ctx->backend == TIDE_BACKEND_CPU)
        CHECK(tide_image_alloc(ctx, &b, 3, 3, TIDE_DEVICE, 0) == TIDE_E_NODEVICE);
    tide_image_free(ctx, &a);
}

static void test_table(void) {
    tide_table t;
    tide_table_init(&t);
    int idx = -1;
    CHECK_OK(tide_table_add_column(&t, "NUMBER", TIDE_COL_I32, 1, NULL, "running number", &idx));
    CHECK(idx == 0);
    CHECK_OK(tide_table_resize(&t, 3));
    CHECK_OK(tide_table_add_column(&t, "FLUX_APER", TIDE_COL_F32, 3, "count", NULL, NULL));
    CHECK(tide_table_add_column(&t, "NUMBER", TIDE_COL_I32, 1, NULL, NULL, NULL) == TIDE_E_INVAL);
    float *f = tide_table_f32(&t, "FLUX_APER");
    CHECK(f && f[8] == 0.0f);
    f[8] = 3.5f;
    CHECK_OK(tide_table_resize(&t, 1000));
    f = tide_table_f32(&t, "FLUX_APER");
    CHECK(f[8] == 3.5f && f[2999] == 0.0f);
    CHECK(tide_table_i32(&t, "FLUX_APER") == NULL);
    CHECK(tide_table_column(&t, "MISSING") == NULL);
    CHECK_OK(tide_table_resize(&t, 2));
    CHECK_OK(tide_table_resize(&t, 3));
    CHECK(tide_table_f32(&t, "FLUX_APER")[8] == 0.0f); /* dropped rows come back zeroed */
    CHECK_OK(tide_table_add_column(&t, "SNR", TIDE_COL_F32, 1, NULL, NULL, NULL));
    CHECK_OK(tide_table_remove_column(&t, "FLUX_APER"));
    CHECK(t.ncols == 2 && !tide_table_column(&t, "FLUX_APER"));
    CHECK(!strcmp(t.cols[0].name, "NUMBER") && !strcmp(t.cols[1].name, "SNR"));
    CHECK(tide_table_remove_column(&t, "FLUX_APER") == TIDE_E_NOTFOUND);
    tide_table_free(&t);
}

static void test_header(void) {
    tide_header h;
    tide_header_init(&h);
    CHECK_OK(tide_header_set_dbl(&h, "gain", 1.5, "e-/ADU"));
    CHECK_OK(tide_header_set_int(&h, "NAXIS1", 2048, NULL));
    CHECK_OK(tide_header_set_str(&h, "OBJECT", "M 13 'core'", NULL));
    CHECK_OK(tide_header_set_bool(&h, "SIMPLE", 1, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "EXPTIME", 30.0, NULL));
    CHECK_OK(tide_header_append_card(&h, "CRVAL1  =   1.23456789012D+02 / Fortran exponent"));
    double g;
    int64_t n;
    char s[80];
    int b;
    CHECK_OK(tide_header_get_dbl(&h, "GAIN", &g));
    CHECK(g == 1.5);
    CHECK_OK(tide_header_get_dbl(&h, "EXPTIME", &g));
    CHECK(g == 30.0);
    CHECK_OK(tide_header_get_dbl(&h, "CRVAL1", &g));
    CHECK_CLOSE(g, 123.456789012, 1e-12);
    CHECK_OK(tide_header_get_int(&h, "NAXIS1", &n));
    CHECK(n == 2048);
    CHECK_OK(tide_header_get_str(&h, "OBJECT", s, sizeof s));
    CHECK(!strcmp(s, "M 13 'core'"));
    CHECK_OK(tide_header_get_bool(&h, "SIMPLE", &b));
    CHECK(b == 1);
    CHECK(tide_header_get_dbl(&h, "OBJECT", &g) == TIDE_E_FORMAT);
    CHECK(tide_header_get_dbl(&h, "RDNOISE", &g) == TIDE_E_NOTFOUND);
    CHECK(strstr(tide_error_detail(), "RDNOISE") != NULL);
    CHECK_OK(tide_header_set_dbl(&h, "GAIN", 2.0, NULL)); /* replaces, does not append */
    CHECK(h.ncards == 6);
    int nc = 0;
    char *str = tide_header_to_string(&h, &nc);
    CHECK(str && nc == 6 && strlen(str) == 480);
    tide_header h2;
    tide_header_init(&h2);
    CHECK_OK(tide_header_parse(&h2, str, nc));
    CHECK(h2.ncards == 6);
    CHECK_OK(tide_header_get_dbl(&h2, "GAIN", &g));
    CHECK(g == 2.0);
    CHECK(tide_header_remove(&h2, "gain") == 1 && tide_header_find(&h2, "GAIN") < 0);
    free(str);
    tide_header_free(&h2);
    tide_header_free(&h);
}

static void test_ctx_and_timer(void) {
    tide_ctx *ctx = NULL;
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    CHECK(ctx && ctx->backend == TIDE_BACKEND_CPU && ctx->threads >= 1);
    tide_timer t;
    double ms = -1;
    CHECK_OK(tide_timer_start(ctx, &t, "stage_a"));
    CHECK_OK(tide_timer_stop(ctx, &t, &ms));
    CHECK(ms >= 0);
    CHECK_OK(tide_timer_start(ctx, &t, "stage_a"));
    CHECK_OK(tide_timer_stop(ctx, &t, NULL));
    const char *name;
    int calls;
    CHECK(tide_timer_count(ctx) == 1);
    CHECK_OK(tide_timer_get(ctx, 0, &name, &ms, &calls));
    CHECK(!strcmp(name, "stage_a") && calls == 2);
    test_image(ctx);
    tide_ctx_destroy(ctx);

    tide_backend be;
    CHECK_OK(tide_backend_parse("gpu", &be));
    CHECK(be == TIDE_BACKEND_CUDA);
    CHECK(tide_backend_parse("tpu", &be) == TIDE_E_INVAL);
    o.backend = TIDE_BACKEND_AUTO;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    CHECK(ctx->backend == (tide_cuda_available(NULL) ? TIDE_BACKEND_CUDA : TIDE_BACKEND_CPU));
    tide_ctx_destroy(ctx);
    if (!tide_cuda_available(NULL)) {
        o.backend = TIDE_BACKEND_CUDA;
        CHECK(tide_ctx_create(&ctx, &o) == TIDE_E_NODEVICE);
        CHECK(ctx == NULL);
    }
}

int main(void) {
    test_status();
    test_log();
    test_table();
    test_header();
    test_ctx_and_timer();
    return TIDE_TEST_RESULT();
}
