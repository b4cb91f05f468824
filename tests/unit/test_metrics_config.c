/* Metrics modes from table properties: parsing, precedence (column over sort
 * order over default), max-inferred-column-defaults, the writer truncation
 * the policy asks for, and applying modes to column metrics (re-truncation of
 * UTF-8 strings and binaries, upper bounds that cannot be incremented). */
#include "test.h"
#include <jansson.h>
#include <stdlib.h>
#include "base/mem.h"
#include "format/parquet.h"
#include "iceberg/metrics_config.h"
#include "iceberg/schema.h"

/* id 1 a:int, 2 s:string, 3 info:struct{4 b:binary, 5 c:string},
 * 6 tags:list<7 string>, 8 m:map<9 string, 10 long>, 11 f:fixed[4] */
static const char *SCHEMA =
    "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
    "{\"id\":1,\"name\":\"a\",\"required\":false,\"type\":\"int\"},"
    "{\"id\":2,\"name\":\"s\",\"required\":false,\"type\":\"string\"},"
    "{\"id\":3,\"name\":\"info\",\"required\":false,\"type\":{\"type\":\"struct\",\"fields\":["
    "{\"id\":4,\"name\":\"b\",\"required\":false,\"type\":\"binary\"},"
    "{\"id\":5,\"name\":\"c\",\"required\":false,\"type\":\"string\"}]}},"
    "{\"id\":6,\"name\":\"tags\",\"required\":false,\"type\":{\"type\":\"list\",\"element-id\":7,"
    "\"element\":\"string\",\"element-required\":false}},"
    "{\"id\":8,\"name\":\"m\",\"required\":false,\"type\":{\"type\":\"map\",\"key-id\":9,\"key\":\"string\","
    "\"value-id\":10,\"value\":\"long\",\"value-required\":false}},"
    "{\"id\":11,\"name\":\"f\",\"required\":false,\"type\":\"fixed[4]\"}]}";

static bool load_schema(fl_field_t *root)
{
    char err[256];
    json_t *j = json_loads(SCHEMA, 0, NULL);
    bool ok = j && fl_schema_from_json(j, root, NULL, err, sizeof err) == FL_OK;
    if (!ok) fprintf(stderr, "schema: %s\n", err);
    json_decref(j);
    return ok;
}

/* metadata JSON with the given properties object (JSON text) and extra members */
static void policy_for(const char *props, const char *extra, fl_metrics_policy_t *p)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "{\"properties\":%s%s%s}", props ? props : "{}", extra ? "," : "", extra ? extra : "");
    json_t *md = json_loads(buf, 0, NULL);
    fl_field_t root;
    memset(&root, 0, sizeof root);
    if (!md || !load_schema(&root)) { fprintf(stderr, "bad test metadata %s\n", buf); abort(); }
    fl_metrics_policy_build(md, &root, p);
    fl_field_free(&root);
    json_decref(md);
}

#define MODE(p, id) fl_metrics_policy_mode(&(p), (id))

FL_TEST(metrics_mode_parse)
{
    fl_metrics_mode_t m;
    CHECK(fl_metrics_mode_parse("none", &m) && m.kind == FL_METRICS_NONE);
    CHECK(fl_metrics_mode_parse("Counts", &m) && m.kind == FL_METRICS_COUNTS);
    CHECK(fl_metrics_mode_parse("FULL", &m) && m.kind == FL_METRICS_FULL);
    CHECK(fl_metrics_mode_parse("truncate(16)", &m) && m.kind == FL_METRICS_TRUNCATE && m.len == 16);
    CHECK(fl_metrics_mode_parse("TRUNCATE(1)", &m) && m.len == 1);
    CHECK(fl_metrics_mode_parse("truncate(2147483647)", &m) && m.len == 2147483647);
    m.kind = FL_METRICS_FULL;
    CHECK(!fl_metrics_mode_parse("truncate(0)", &m));
    CHECK(!fl_metrics_mode_parse("truncate(2147483648)", &m));
    CHECK(!fl_metrics_mode_parse("truncate(-1)", &m));
    CHECK(!fl_metrics_mode_parse("truncate()", &m));
    CHECK(!fl_metrics_mode_parse("truncate(4", &m));
    CHECK(!fl_metrics_mode_parse("truncate(4) ", &m));
    CHECK(!fl_metrics_mode_parse(" none", &m));
    CHECK(!fl_metrics_mode_parse("truncate[4]", &m));
    CHECK(!fl_metrics_mode_parse("", &m));
    CHECK(!fl_metrics_mode_parse(NULL, &m));
    CHECK(m.kind == FL_METRICS_FULL); /* untouched on failure */
}

FL_TEST(metrics_policy_defaults_and_columns)
{
    fl_metrics_policy_t p;
    policy_for(NULL, NULL, &p);
    CHECK_EQ(p.n, 8); /* leaves: 1 2 4 5 7 9 10 11 */
    for (int32_t id = 1; id <= 11; id++) {
        if (id == 3 || id == 6 || id == 8) continue;
        CHECK(MODE(p, id).kind == FL_METRICS_TRUNCATE && MODE(p, id).len == 16);
    }
    CHECK_EQ(fl_metrics_policy_writer_truncate(&p), 16);
    fl_metrics_policy_free(&p);

    /* column beats default; dotted names for nested leaves; bad values fall back to the default */
    policy_for("{\"write.metadata.metrics.default\":\"counts\","
               "\"write.metadata.metrics.column.s\":\"full\","
               "\"write.metadata.metrics.column.info.b\":\"truncate(4)\","
               "\"write.metadata.metrics.column.tags.element\":\"none\","
               "\"write.metadata.metrics.column.m.value\":\"truncate(40)\","
               "\"write.metadata.metrics.column.info\":\"none\","
               "\"write.metadata.metrics.column.a\":\"bogus\","
               "\"write.metadata.metrics.column.nosuch\":\"full\"}", NULL, &p);
    CHECK(MODE(p, 1).kind == FL_METRICS_COUNTS);
    CHECK(MODE(p, 2).kind == FL_METRICS_FULL);
    CHECK(MODE(p, 4).kind == FL_METRICS_TRUNCATE && MODE(p, 4).len == 4);
    CHECK(MODE(p, 5).kind == FL_METRICS_COUNTS); /* "info" names no leaf */
    CHECK(MODE(p, 7).kind == FL_METRICS_NONE);
    CHECK(MODE(p, 9).kind == FL_METRICS_COUNTS);
    CHECK(MODE(p, 10).kind == FL_METRICS_TRUNCATE && MODE(p, 10).len == 40);
    CHECK(MODE(p, 11).kind == FL_METRICS_COUNTS);
    CHECK_EQ(fl_metrics_policy_writer_truncate(&p), -1); /* s is full */
    fl_metrics_policy_free(&p);

    /* truncate(40) on a long only: the writer need not keep longer bounds */
    policy_for("{\"write.metadata.metrics.column.m.value\":\"truncate(40)\","
               "\"write.metadata.metrics.column.a\":\"full\"}", NULL, &p);
    CHECK_EQ(fl_metrics_policy_writer_truncate(&p), 16);
    fl_metrics_policy_free(&p);
    policy_for("{\"write.metadata.metrics.column.info.c\":\"truncate(17)\"}", NULL, &p);
    CHECK_EQ(fl_metrics_policy_writer_truncate(&p), -1);
    fl_metrics_policy_free(&p);

    /* an invalid default is truncate(16) */
    policy_for("{\"write.metadata.metrics.default\":\"truncate(0)\"}", NULL, &p);
    CHECK(MODE(p, 2).kind == FL_METRICS_TRUNCATE && MODE(p, 2).len == 16);
    fl_metrics_policy_free(&p);
    policy_for("{\"write.metadata.metrics.default\":\"none\"}", NULL, &p);
    for (int32_t id = 1; id <= 11; id++) CHECK(MODE(p, id).kind == FL_METRICS_NONE);
    fl_metrics_policy_free(&p);
}

FL_TEST(metrics_policy_max_inferred)
{
    fl_metrics_policy_t p;
    /* 6 top-level columns, limit 3: leaves under a, s, info get truncate(16), the rest none */
    policy_for("{\"write.metadata.metrics.max-inferred-column-defaults\":\"3\"}", NULL, &p);
    for (int32_t id = 1; id <= 5; id++) if (id != 3) CHECK(MODE(p, id).kind == FL_METRICS_TRUNCATE);
    CHECK(MODE(p, 7).kind == FL_METRICS_NONE);
    CHECK(MODE(p, 9).kind == FL_METRICS_NONE);
    CHECK(MODE(p, 10).kind == FL_METRICS_NONE);
    CHECK(MODE(p, 11).kind == FL_METRICS_NONE);
    CHECK(MODE(p, 99).kind == FL_METRICS_NONE); /* the fallback is none too */
    fl_metrics_policy_free(&p);

    /* a column override still wins; an invalid override falls back to none (the default) */
    policy_for("{\"write.metadata.metrics.max-inferred-column-defaults\":\"2\","
               "\"write.metadata.metrics.column.f\":\"counts\","
               "\"write.metadata.metrics.column.info.c\":\"nope\"}", NULL, &p);
    CHECK(MODE(p, 1).kind == FL_METRICS_TRUNCATE);
    CHECK(MODE(p, 2).kind == FL_METRICS_TRUNCATE);
    CHECK(MODE(p, 4).kind == FL_METRICS_NONE);
    CHECK(MODE(p, 5).kind == FL_METRICS_NONE);
    CHECK(MODE(p, 11).kind == FL_METRICS_COUNTS);
    fl_metrics_policy_free(&p);

    /* exactly the limit: everything gets the default */
    policy_for("{\"write.metadata.metrics.max-inferred-column-defaults\":\"6\"}", NULL, &p);
    CHECK(MODE(p, 11).kind == FL_METRICS_TRUNCATE);
    fl_metrics_policy_free(&p);
    /* 0: none everywhere */
    policy_for("{\"write.metadata.metrics.max-inferred-column-defaults\":\"0\"}", NULL, &p);
    CHECK(MODE(p, 1).kind == FL_METRICS_NONE);
    fl_metrics_policy_free(&p);
    /* negative or garbage: 100 */
    policy_for("{\"write.metadata.metrics.max-inferred-column-defaults\":\"-1\"}", NULL, &p);
    CHECK(MODE(p, 11).kind == FL_METRICS_TRUNCATE);
    fl_metrics_policy_free(&p);
    /* an explicit default ignores the limit */
    policy_for("{\"write.metadata.metrics.max-inferred-column-defaults\":\"1\","
               "\"write.metadata.metrics.default\":\"truncate(8)\"}", NULL, &p);
    CHECK(MODE(p, 11).kind == FL_METRICS_TRUNCATE && MODE(p, 11).len == 8);
    fl_metrics_policy_free(&p);
}

FL_TEST(metrics_policy_sort_order)
{
    fl_metrics_policy_t p;
    const char *orders =
        "\"default-sort-order-id\":1,\"sort-orders\":[{\"order-id\":0,\"fields\":[]},"
        "{\"order-id\":1,\"fields\":["
        "{\"transform\":\"identity\",\"source-id\":2,\"direction\":\"asc\",\"null-order\":\"nulls-first\"},"
        "{\"transform\":\"bucket[4]\",\"source-id\":1,\"direction\":\"asc\",\"null-order\":\"nulls-first\"},"
        "{\"transform\":\"truncate[3]\",\"source-id\":5,\"direction\":\"asc\",\"null-order\":\"nulls-first\"}]}]";
    policy_for("{\"write.metadata.metrics.default\":\"none\","
               "\"write.metadata.metrics.column.info.c\":\"counts\"}", orders, &p);
    CHECK(MODE(p, 2).kind == FL_METRICS_TRUNCATE && MODE(p, 2).len == 16); /* promoted */
    CHECK(MODE(p, 1).kind == FL_METRICS_NONE);   /* bucket does not preserve order */
    CHECK(MODE(p, 5).kind == FL_METRICS_COUNTS); /* the column property wins */
    fl_metrics_policy_free(&p);
    /* a full default stays full for sorted columns */
    policy_for("{\"write.metadata.metrics.default\":\"full\"}", orders, &p);
    CHECK(MODE(p, 2).kind == FL_METRICS_FULL);
    fl_metrics_policy_free(&p);
}

static void set_bounds(fl_col_metrics_t *c, int32_t id, const char *lo, size_t nlo, const char *hi, size_t nhi)
{
    memset(c, 0, sizeof *c);
    c->field_id = id;
    c->has_column_size = c->has_value_count = c->has_null_count = true;
    c->column_size = 100;
    c->value_count = 10;
    c->null_count = 1;
    fl_buf_init(&c->lower, 0);
    fl_buf_init(&c->upper, 0);
    if (lo) { c->has_lower = true; fl_buf_add(&c->lower, lo, nlo); }
    if (hi) { c->has_upper = true; fl_buf_add(&c->upper, hi, nhi); }
}

#define S(x) x, sizeof(x) - 1
#define BOUND_IS(b, x) do { CHECK_EQ((b).len, sizeof(x) - 1); if ((b).len == sizeof(x) - 1) CHECK_MEM((b).ptr, x, (b).len); } while (0)

FL_TEST(metrics_policy_apply_modes)
{
    fl_metrics_policy_t p;
    policy_for("{\"write.metadata.metrics.default\":\"truncate(2)\","
               "\"write.metadata.metrics.column.a\":\"none\","
               "\"write.metadata.metrics.column.info.c\":\"counts\","
               "\"write.metadata.metrics.column.tags.element\":\"full\"}", NULL, &p);
    fl_col_metrics_t *m = fl_calloc(6, sizeof *m);
    set_bounds(&m[0], 1, S("\1\0\0\0"), S("\x09\0\0\0"));
    /* "héllo" / "wörld": 2 code points, upper's 2nd incremented (ö U+00F6 -> ÷ U+00F7) */
    set_bounds(&m[1], 2, S("h\xc3\xa9llo"), S("w\xc3\xb6rld"));
    /* binary: 0x01 0xFF 0x05 -> upper 0x02 (0xFF cannot be incremented, carry left) */
    set_bounds(&m[2], 4, S("\x01\xff\x05"), S("\x01\xff\x05"));
    set_bounds(&m[3], 5, S("abc"), S("abd"));
    set_bounds(&m[4], 7, S("aaaaaaaa"), S("zzzzzzzz"));
    m[4].has_nan_count = true; /* keeps whatever it has */
    set_bounds(&m[5], 11, S("\xff\xff\x01\x02"), S("\xff\xff\x01\x02"));
    size_t n = fl_metrics_policy_apply(&p, m, 6);
    REQUIRE(n == 5);
    CHECK_EQ(m[0].field_id, 2);
    BOUND_IS(m[0].lower, "h\xc3\xa9");
    BOUND_IS(m[0].upper, "w\xc3\xb7");
    CHECK(m[0].has_column_size && m[0].has_value_count && m[0].has_null_count);
    CHECK_EQ(m[1].field_id, 4);
    BOUND_IS(m[1].lower, "\x01\xff");
    BOUND_IS(m[1].upper, "\x02");
    CHECK_EQ(m[2].field_id, 5); /* counts: counts and size, no bounds */
    CHECK(!m[2].has_lower && !m[2].has_upper);
    CHECK(m[2].has_column_size && m[2].has_value_count && m[2].has_null_count);
    CHECK_EQ(m[2].value_count, 10);
    CHECK_EQ(m[3].field_id, 7); /* full */
    BOUND_IS(m[3].lower, "aaaaaaaa");
    BOUND_IS(m[3].upper, "zzzzzzzz");
    CHECK_EQ(m[4].field_id, 11); /* fixed: lower cut, upper 0xFF 0xFF cannot be incremented */
    BOUND_IS(m[4].lower, "\xff\xff");
    CHECK(m[4].has_upper == false);
    CHECK(m[5].field_id == 0 && !m[5].has_lower); /* the tail is zeroed */
    fl_col_metrics_free(m, n);
    fl_metrics_policy_free(&p);
}

FL_TEST(metrics_policy_apply_utf8_edges)
{
    fl_metrics_policy_t p;
    policy_for("{\"write.metadata.metrics.default\":\"truncate(2)\"}", NULL, &p);
    fl_col_metrics_t *m = fl_calloc(5, sizeof *m);
    /* U+10FFFF U+10FFFF x: no upper bound exists */
    set_bounds(&m[0], 2, S("\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbfx"), S("\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbfx"));
    /* a U+10FFFF x: increment the 'a' */
    set_bounds(&m[1], 5, S("a\xf4\x8f\xbf\xbfx"), S("a\xf4\x8f\xbf\xbfx"));
    /* U+D7FF skips the surrogates to U+E000 */
    set_bounds(&m[2], 7, S("\xed\x9f\xbf\xed\x9f\xbfz"), S("\xed\x9f\xbf\xed\x9f\xbfz"));
    /* 4-byte code points count as one: "😀😀😀" -> lower "😀😀", upper "😀😁" */
    set_bounds(&m[3], 9, S("\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"),
               S("\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"));
    /* short enough: unchanged, including an empty lower bound */
    set_bounds(&m[4], 2, S(""), S("\xe2\x82\xac"));
    size_t n = fl_metrics_policy_apply(&p, m, 5);
    REQUIRE(n == 5);
    BOUND_IS(m[0].lower, "\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf");
    CHECK(!m[0].has_upper);
    BOUND_IS(m[1].lower, "a\xf4\x8f\xbf\xbf");
    BOUND_IS(m[1].upper, "b");
    BOUND_IS(m[2].upper, "\xed\x9f\xbf\xee\x80\x80");
    BOUND_IS(m[3].lower, "\xf0\x9f\x98\x80\xf0\x9f\x98\x80");
    BOUND_IS(m[3].upper, "\xf0\x9f\x98\x80\xf0\x9f\x98\x81");
    CHECK(m[4].has_lower);
    BOUND_IS(m[4].lower, "");
    BOUND_IS(m[4].upper, "\xe2\x82\xac");
    fl_col_metrics_free(m, n);
    fl_metrics_policy_free(&p);

    /* binary truncate(3) edges: all 0xFF in the prefix -> no upper; short stays */
    policy_for("{\"write.metadata.metrics.column.info.b\":\"truncate(3)\"}", NULL, &p);
    m = fl_calloc(2, sizeof *m);
    set_bounds(&m[0], 4, S("\xff\xff\xff\x00"), S("\xff\xff\xff\x00"));
    set_bounds(&m[1], 4, S("\x00\xff"), S("\x00\xff"));
    n = fl_metrics_policy_apply(&p, m, 2);
    REQUIRE(n == 2);
    BOUND_IS(m[0].lower, "\xff\xff\xff");
    CHECK(!m[0].has_upper);
    BOUND_IS(m[1].lower, "\x00\xff");
    BOUND_IS(m[1].upper, "\x00\xff");
    fl_col_metrics_free(m, n);
    fl_metrics_policy_free(&p);
}

/* Bounds the writer cut at 16 and the policy cuts again at N give what a cut
 * at N of the original gives. */
FL_TEST(metrics_policy_retruncate_composes)
{
    fl_metrics_policy_t p;
    policy_for("{\"write.metadata.metrics.default\":\"truncate(5)\"}", NULL, &p);
    const char *orig = "abcd\xc3\xbf\xc3\xbf" "0123456789abcdefghij"; /* ÿ = U+00FF */
    fl_buf_t w16, direct;
    fl_buf_init(&w16, 0);
    fl_buf_init(&direct, 0);
    REQUIRE(fl_pq_trunc_upper(true, orig, strlen(orig), 16, &w16));
    REQUIRE(fl_pq_trunc_upper(true, orig, strlen(orig), 5, &direct));
    fl_col_metrics_t *m = fl_calloc(1, sizeof *m);
    set_bounds(&m[0], 2, S("a"), w16.ptr, w16.len);
    REQUIRE(fl_metrics_policy_apply(&p, m, 1) == 1);
    CHECK_EQ(m[0].upper.len, direct.len);
    if (m[0].upper.len == direct.len) CHECK_MEM(m[0].upper.ptr, direct.ptr, direct.len);
    BOUND_IS(m[0].upper, "abcd\xc4\x80"); /* U+0100 */
    fl_col_metrics_free(m, 1);
    fl_buf_free(&w16);
    fl_buf_free(&direct);
    fl_metrics_policy_free(&p);
}
