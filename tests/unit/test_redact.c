/* test_redact.c — tide_redact_uri (redact.h): URI user information and conninfo password
 * keywords come out as ***, mistyped schemes and malformed passwords too, other text is
 * unchanged; tide_error and tide_log record redacted text; truncation stays terminated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/log.h"
#include "tide/redact.h"
#include "tide/status.h"
#include "tide_test.h"

static void expect(const char *in, const char *want) {
    char out[512];
    tide_redact_uri(in, out, sizeof out);
    if (strcmp(out, want)) {
        fprintf(stderr, "redact(\"%s\")\n   = \"%s\"\n want \"%s\"\n", in, out, want);
        CHECK(0);
    }
}

static void test_cases(void) {
    /* URIs, any scheme */
    expect("postgresql://u:SECRET@host/db", "postgresql://u:***@host/db");
    expect("stored in postgres://u:SECRET@h:5432/db?sslmode=require (3 ms)",
           "stored in postgres://u:***@h:5432/db?sslmode=require (3 ms)");
    expect("'postgresq://u:SECRET@host/db' is neither", "'postgresq://u:***@host/db' is neither");
    expect("mysql://root:SECRET@10.0.0.1/x", "mysql://root:***@10.0.0.1/x");
    expect("postgresql://:SECRET@host/db", "postgresql://:***@host/db");
    expect("postgresql://u:p@ss@host/db", "postgresql://u:***@host/db");  /* '@' inside */
    expect("postgresql://u:pa/ss@host/db", "postgresql://u:***@host/db"); /* '/' inside */
    expect("postgresql://u:pa?ss@host/db", "postgresql://u:***@host/db"); /* '?' inside */
    expect("unexpected spaces found in \"postgresql://u:my pass@h/db\"",
           "unexpected spaces found in \"postgresql://u:***@h/db\"");
    expect("postgresql://a:SECRET@h1/x and https://b:OTHER@h2/y",
           "postgresql://a:***@h1/x and https://b:***@h2/y");
    /* conninfo keywords, URI query parameters */
    expect("pg:host=h port=5 password=SECRET dbname=d", "pg:host=h port=5 password=*** dbname=d");
    expect("host=h password = 'SE CR\\'ET' user=u", "host=h password = *** user=u");
    expect("postgresql://h/db?user=u&password=SECRET&sslmode=disable",
           "postgresql://h/db?user=u&password=***&sslmode=disable");
    expect("PGPASSWORD=SECRET psql", "PGPASSWORD=*** psql");
    expect("host=h PASSWORD=SECRET", "host=h PASSWORD=***");
    /* nothing to hide: unchanged */
    expect("postgresql://u@host:5432/db", "postgresql://u@host:5432/db");
    expect("postgresql://host:5432/db?user=me@example.org",
           "postgresql://host:5432/db?user=me@example.org");
    expect("postgresql://[::1]:5432/db", "postgresql://[::1]:5432/db");
    expect("sqlite:/data/cat.db", "sqlite:/data/cat.db");
    expect("frame.fits: NAXIS1 = 0 (a password is not a keyword here)",
           "frame.fits: NAXIS1 = 0 (a password is not a keyword here)");
    expect("", "");
    expect("password=", "password=");
    expect("x password= y", "x password= ***"); /* libpq skips the blanks after '=' */
    expect("postgresql://u:@h/db", "postgresql://u:@h/db");
    char out[16];
    CHECK(!strcmp(tide_redact_uri(NULL, out, sizeof out), ""));
    /* truncation: terminated, and never the password's first bytes */
    tide_redact_uri("postgresql://u:SECRET@host/db", out, sizeof out);
    CHECK(strlen(out) == sizeof out - 1 && !strstr(out, "SEC"));
}

/* A message built from what libpq made of a malformed URI: the password it misread as a port
 * is hidden too. */
static void test_in(void) {
    char out[256];
    const char *uri = "postgresql://u:SECRET/x@127.0.0.1:1/db";
    tide_redact_uri_in("host=u port=SECRET: invalid integer value \"SECRET\" for port", uri, out,
                       sizeof out);
    CHECK(!strcmp(out, "host=u port=***: invalid integer value \"***\" for port"));
    tide_redact_uri_in("password='A B C' misread as A B C", "pg:password='A B C'", out, sizeof out);
    CHECK(!strstr(out, "A B C"));
    tide_redact_uri_in("port=abc", "postgresql://u:abc/x@h", out, sizeof out); /* too short */
    CHECK(!strcmp(out, "port=abc"));
    tide_redact_uri_in("plain text", NULL, out, sizeof out);
    CHECK(!strcmp(out, "plain text"));
    tide_redact_uri_in("x", "pg:password=", out, sizeof out); /* empty value at the end */
    CHECK(!strcmp(out, "x"));
}

static void test_messages(void) {
    CHECK(tide_error(TIDE_E_DB, "store %s: cannot open", "postgresql://u:SECRET@h/db") ==
          TIDE_E_DB);
    CHECK(!strstr(tide_error_detail(), "SECRET") && strstr(tide_error_detail(), "u:***@h"));
    tide_error(TIDE_E_DB, "libpq: %s", "missing \"=\" after \"x\" in password=SECRET x");
    tide_error_prefix(TIDE_E_DB, "refcat %s: ", "pg:password=OTHER");
    CHECK(!strstr(tide_error_detail(), "SECRET") && !strstr(tide_error_detail(), "OTHER"));
    char path[] = "/tmp/tide-redact-XXXXXX";
    FILE *f = fdopen(mkstemp(path), "w+");
    CHECK(f != NULL);
    if (!f)
        return;
    for (int json = 0; json < 2; json++) {
        tide_logger lg = {f, TIDE_LOG_INFO, json};
        tide_log(&lg, TIDE_LOG_INFO, "store", "connecting to %s", "postgresql://u:SECRET@h/db");
    }
    rewind(f);
    char buf[2048];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    remove(path);
    CHECK(n > 0 && !strstr(buf, "SECRET") && strstr(buf, "u:***@h"));
}

int main(void) {
    test_cases();
    test_in();
    test_messages();
    return TIDE_TEST_RESULT();
}
