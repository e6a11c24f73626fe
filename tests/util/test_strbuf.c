/* test_strbuf.c — text building for the files the program writes (util/strbuf.h):
 * growth, exact doubles, and JSON numbers that stay valid JSON when a value is NaN
 * or infinite (metrics.jsonl once got a bare "nan"). */
#include "check.h"
#include "attnlab/util/strbuf.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_growth(void) {
    StrBuf b = {0};
    for (int i = 0; i < 1000; i++) strbuf_printf(&b, "%d,", i % 10);
    CHECK(b.len == 2000 && strlen(b.s) == 2000, "length %zu", b.len);
    CHECK(!strncmp(b.s, "0,1,2,", 6) && !strcmp(b.s + 1994, "7,8,9,"), "content");
    free(b.s);
}

static void test_fmt_double(void) {
    char buf[32];
    CHECK(!strcmp(al_fmt_double(0.001, buf, sizeof buf), "0.001"), "%s", buf);
    CHECK(!strcmp(al_fmt_double(1060, buf, sizeof buf), "1060"), "%s", buf);
    double x = 0.1 + 0.2;
    CHECK(strtod(al_fmt_double(x, buf, sizeof buf), NULL) == x, "%s does not read back", buf);
}

/* A metrics-style line with every kind of value parses as JSON, NaN/inf as null. */
static void test_json_numbers(void) {
    StrBuf b = {0};
    strbuf_printf(&b, "{");
    strbuf_json_number(&b, "finite", 0.25);
    strbuf_json_number(&b, "nan", NAN);
    strbuf_json_number(&b, "inf", INFINITY);
    strbuf_json_number(&b, "ninf", -INFINITY);
    strbuf_printf(&b, "\"last\": 1}");
    cJSON *j = cJSON_Parse(b.s);
    CHECK(j != NULL, "not valid JSON: %s", b.s);
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(j, "finite")) && cJSON_GetObjectItem(j, "finite")->valuedouble == 0.25,
          "finite value: %s", b.s);
    const char *nulls[] = { "nan", "inf", "ninf" };
    for (int i = 0; i < 3; i++) CHECK(cJSON_IsNull(cJSON_GetObjectItem(j, nulls[i])), "%s not null: %s", nulls[i], b.s);
    CHECK(!strstr(b.s, "nan,") && !strstr(b.s, "inf,"), "a bare nan/inf: %s", b.s);
    cJSON_Delete(j);
    free(b.s);
}

int main(void) {
    test_growth();
    test_fmt_double();
    test_json_numbers();
    return check_exit("test_strbuf");
}
