#include "test.h"
#include "iceberg/metadata.h"

#include <stdlib.h>

static json_t *J(const char *s)
{
    json_error_t je;
    json_t *j = json_loads(s, JSON_DECODE_ANY, &je);
    if (!j) {
        fprintf(stderr, "bad test JSON at %d: %s\n", je.position, je.text);
        abort();
    }
    return j;
}

static long long I(json_t *o, const char *path)
{
    /* dotted path with numeric array indexes: "schemas.0.fields.1.id" */
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", path);
    for (char *t = strtok_r(buf, ".", &save); t && o; t = strtok_r(NULL, ".", &save))
        o = json_is_array(o) ? json_array_get(o, strtoul(t, NULL, 10)) : json_object_get(o, t);
    return json_is_integer(o) ? (long long)json_integer_value(o) : -999999;
}

static json_t *P(json_t *o, const char *path)
{
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", path);
    for (char *t = strtok_r(buf, ".", &save); t && o; t = strtok_r(NULL, ".", &save))
        o = json_is_array(o) ? json_array_get(o, strtoul(t, NULL, 10)) : json_object_get(o, t);
    return o;
}

static const char *S(json_t *o, const char *path)
{
    json_t *v = P(o, path);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* a int, b struct<c,d>, e list<struct<f>>, m map<string,long>; client ids 10.. */
static const char *CREATE =
    "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"schema-id\":7,\"identifier-field-ids\":[10],"
    "\"fields\":["
    "{\"id\":10,\"name\":\"a\",\"required\":true,\"type\":\"int\"},"
    "{\"id\":11,\"name\":\"b\",\"required\":false,\"type\":{\"type\":\"struct\",\"fields\":["
    "  {\"id\":20,\"name\":\"c\",\"required\":false,\"type\":\"timestamp\"},"
    "  {\"id\":21,\"name\":\"d\",\"required\":false,\"type\":\"decimal(10,2)\",\"doc\":\"money\"}]}},"
    "{\"id\":12,\"name\":\"e\",\"required\":false,\"type\":{\"type\":\"list\",\"element-id\":30,"
    "  \"element-required\":false,\"element\":{\"type\":\"struct\",\"fields\":["
    "    {\"id\":31,\"name\":\"f\",\"required\":false,\"type\":\"string\"}]}}},"
    "{\"id\":13,\"name\":\"m\",\"required\":false,\"type\":{\"type\":\"map\",\"key-id\":40,"
    "  \"key\":\"string\",\"value-id\":41,\"value-required\":true,\"value\":\"long\"}}]},"
    "\"partition-spec\":{\"spec-id\":5,\"fields\":["
    "  {\"source-id\":20,\"field-id\":1005,\"name\":\"c_day\",\"transform\":\"day\"},"
    "  {\"source-id\":10,\"name\":\"a_bucket\",\"transform\":\"bucket[16]\"}]},"
    "\"write-order\":{\"order-id\":3,\"fields\":[{\"source-id\":31,\"transform\":\"identity\","
    "  \"direction\":\"asc\",\"null-order\":\"nulls-first\"}]},"
    "\"properties\":{\"owner\":\"me\",\"format-version\":\"2\"}}";

static json_t *new_table(const char *req)
{
    int st = -1;
    char err[256];
    json_t *r = J(req);
    json_t *md = fl_iceberg_new_metadata(r, "s3://bucket/ns/t/", &st, err, sizeof err);
    json_decref(r);
    if (!md) fprintf(stderr, "new_metadata: %d %s\n", st, err);
    return md;
}

FL_TEST(iceberg_create_nested_fresh_ids)
{
    json_t *md = new_table(CREATE);
    REQUIRE(md);
    char err[256];
    CHECK_EQ(fl_iceberg_validate_metadata(md, err, sizeof err), 0);
    CHECK_EQ(I(md, "format-version"), 2);
    CHECK_STR(S(md, "location"), "s3://bucket/ns/t");
    CHECK_EQ(strlen(S(md, "table-uuid")), 36);
    CHECK_EQ(I(md, "last-sequence-number"), 0);
    CHECK_EQ(I(md, "current-snapshot-id"), -1);
    CHECK(P(md, "schema") == NULL && P(md, "partition-spec") == NULL);
    /* AssignFreshIds order: a=1 b=2 e=3 m=4, c=5 d=6, e.element=7, f=8, m.key=9 m.value=10 */
    CHECK_EQ(I(md, "schemas.0.schema-id"), 0);
    CHECK_EQ(I(md, "current-schema-id"), 0);
    CHECK_EQ(I(md, "schemas.0.fields.0.id"), 1);
    CHECK_EQ(I(md, "schemas.0.fields.1.id"), 2);
    CHECK_EQ(I(md, "schemas.0.fields.2.id"), 3);
    CHECK_EQ(I(md, "schemas.0.fields.3.id"), 4);
    CHECK_EQ(I(md, "schemas.0.fields.1.type.fields.0.id"), 5);
    CHECK_EQ(I(md, "schemas.0.fields.1.type.fields.1.id"), 6);
    CHECK_STR(S(md, "schemas.0.fields.1.type.fields.1.type"), "decimal(10, 2)");
    CHECK_STR(S(md, "schemas.0.fields.1.type.fields.1.doc"), "money");
    CHECK_EQ(I(md, "schemas.0.fields.2.type.element-id"), 7);
    CHECK_EQ(I(md, "schemas.0.fields.2.type.element.fields.0.id"), 8);
    CHECK_EQ(I(md, "schemas.0.fields.3.type.key-id"), 9);
    CHECK_EQ(I(md, "schemas.0.fields.3.type.value-id"), 10);
    CHECK_EQ(I(md, "schemas.0.identifier-field-ids.0"), 1);
    CHECK_EQ(I(md, "last-column-id"), 10);
    /* spec: source ids remapped, field ids fresh from 1000 */
    CHECK_EQ(I(md, "default-spec-id"), 0);
    CHECK_EQ(I(md, "partition-specs.0.spec-id"), 0);
    CHECK_EQ(I(md, "partition-specs.0.fields.0.source-id"), 5);
    CHECK_EQ(I(md, "partition-specs.0.fields.0.field-id"), 1000);
    CHECK_EQ(I(md, "partition-specs.0.fields.1.source-id"), 1);
    CHECK_EQ(I(md, "partition-specs.0.fields.1.field-id"), 1001);
    CHECK_EQ(I(md, "last-partition-id"), 1001);
    CHECK_EQ(I(md, "default-sort-order-id"), 1);
    CHECK_EQ(I(md, "sort-orders.0.order-id"), 1);
    CHECK_EQ(I(md, "sort-orders.0.fields.0.source-id"), 8);
    CHECK_STR(S(md, "properties.owner"), "me");
    CHECK(P(md, "properties.format-version") == NULL);
    CHECK(json_object_get(json_object_get(md, "properties"), "write.parquet.compression-codec"));
    CHECK(json_is_array(P(md, "snapshots")) && json_array_size(P(md, "snapshots")) == 0);
    CHECK(json_is_object(P(md, "refs")) && json_object_size(P(md, "refs")) == 0);
    CHECK(json_is_array(P(md, "snapshot-log")) && json_is_array(P(md, "metadata-log")));
    CHECK_EQ(fl_iceberg_next_file_seq(md), 0);
    json_decref(md);
}

FL_TEST(iceberg_create_versions_and_unpartitioned)
{
    json_t *md = new_table("{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":["
                           "{\"id\":1,\"name\":\"x\",\"required\":false,\"type\":\"long\"}]},"
                           "\"properties\":{\"format-version\":\"1\"}}");
    REQUIRE(md);
    CHECK_EQ(I(md, "format-version"), 1);
    CHECK(json_is_object(P(md, "schema")));
    CHECK(json_is_array(P(md, "partition-spec")));
    CHECK(P(md, "last-sequence-number") == NULL);
    CHECK_EQ(I(md, "last-partition-id"), 999);
    CHECK_EQ(I(md, "default-sort-order-id"), 0);
    CHECK_EQ(json_array_size(P(md, "sort-orders.0.fields")), 0);
    json_decref(md);
    md = new_table("{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":["
                   "{\"id\":1,\"name\":\"x\",\"required\":false,\"type\":\"timestamp_ns\"}]},"
                   "\"properties\":{\"format-version\":\"3\"}}");
    REQUIRE(md);
    CHECK_EQ(I(md, "format-version"), 3);
    CHECK_EQ(I(md, "next-row-id"), 0);
    CHECK(P(md, "current-snapshot-id") == NULL);
    json_decref(md);
}

static int create_status(const char *req, char *err, size_t n)
{
    int st = -1;
    json_t *r = J(req);
    json_t *md = fl_iceberg_new_metadata(r, "s3://b/t", &st, err, n);
    json_decref(r);
    json_decref(md);
    return md ? 0 : st;
}

FL_TEST(iceberg_create_rejects_bad_input)
{
    char err[256];
    const char *bad[] = {
        "[]",
        "{\"name\":\"t\"}",
        "{\"schema\":{\"type\":\"struct\",\"fields\":[]}}",
        "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":\"varchar\"}]}}",
        "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":\"int\"},"
        "{\"id\":1,\"name\":\"y\",\"type\":\"int\"}]}}",
        "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":\"int\"},"
        "{\"id\":2,\"name\":\"x\",\"type\":\"int\"}]}}",
        "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":\"string\"}]},"
        "\"partition-spec\":{\"fields\":[{\"source-id\":1,\"name\":\"p\",\"transform\":\"day\"}]}}",
        "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":\"int\"}]},"
        "\"partition-spec\":{\"fields\":[{\"source-id\":9,\"name\":\"p\",\"transform\":\"identity\"}]}}",
        "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":\"int\"}]},"
        "\"partition-spec\":{\"fields\":[{\"source-id\":1,\"name\":\"p\",\"transform\":\"bucket[0]\"}]}}",
        "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":\"int\"}]},"
        "\"write-order\":{\"fields\":[{\"source-id\":1,\"transform\":\"identity\",\"direction\":\"up\",\"null-order\":\"nulls-first\"}]}}",
        "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":\"int\"}]},"
        "\"properties\":{\"format-version\":\"9\"}}",
        "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":\"int\"}]},"
        "\"properties\":{\"n\":5}}",
        "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":\"variant\"}]}}",
        "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":\"decimal(39,2)\"}]}}",
        "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":{\"type\":\"list\"}}]}}",
        "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":\"int\",\"required\":\"yes\"}]}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        int st = create_status(bad[i], err, sizeof err);
        if (st != 400) FL_FAIL("bad[%zu] gave %d", i, st);
        if (!err[0]) FL_FAIL("bad[%zu] without message", i);
    }
    /* deep nesting is refused, not a stack overflow */
    char deep[8192];
    size_t n = 0;
    n += (size_t)snprintf(deep + n, sizeof deep - n, "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":");
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(deep + n, sizeof deep - n, "{\"type\":\"list\",\"element-id\":%d,\"element\":", i + 2);
    n += (size_t)snprintf(deep + n, sizeof deep - n, "\"int\"");
    for (int i = 0; i < 100; i++) deep[n++] = '}';
    snprintf(deep + n, sizeof deep - n, "}]}}");
    CHECK_EQ(create_status(deep, err, sizeof err), 400);
    int st = 0;
    CHECK(fl_iceberg_new_metadata(NULL, "s3://b", &st, NULL, 0) == NULL && st == 400);
}

static int reqs(json_t *md, const char *r)
{
    char err[256];
    json_t *j = J(r);
    int st = fl_iceberg_check_requirements(md, j, err, sizeof err);
    json_decref(j);
    return st;
}

/* A table with one snapshot on main and a tag. */
static json_t *table_with_snapshot(void)
{
    json_t *md = new_table(CREATE);
    int st;
    char err[256];
    json_t *u = J("[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":9223372036854775807,"
                  "\"sequence-number\":1,\"timestamp-ms\":4102444800000,\"manifest-list\":\"s3://b/m1.avro\","
                  "\"summary\":{\"operation\":\"append\"},\"schema-id\":0}},"
                  "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"branch\",\"snapshot-id\":9223372036854775807},"
                  "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"v1\",\"type\":\"tag\",\"snapshot-id\":9223372036854775807,"
                  "\"max-ref-age-ms\":1000}]");
    json_t *r = fl_iceberg_apply_updates(md, u, "s3://b/metadata/00000-x.metadata.json", &st, err, sizeof err);
    if (!r) fprintf(stderr, "apply: %d %s\n", st, err);
    json_decref(u);
    json_decref(md);
    return r;
}

FL_TEST(iceberg_requirements)
{
    json_t *md = table_with_snapshot();
    REQUIRE(md);
    char buf[512];
    const char *uuid = S(md, "table-uuid");
    snprintf(buf, sizeof buf, "[{\"type\":\"assert-table-uuid\",\"uuid\":\"%s\"}]", uuid);
    CHECK_EQ(reqs(md, buf), 0);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-table-uuid\",\"uuid\":\"00000000-0000-4000-8000-000000000000\"}]"), 409);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":9223372036854775807}]"), 0);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":9223372036854775806}]"), 409);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":null}]"), 409);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"dev\",\"snapshot-id\":null}]"), 0);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"dev\"}]"), 0);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"dev\",\"snapshot-id\":5}]"), 409);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-last-assigned-field-id\",\"last-assigned-field-id\":10}]"), 0);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-last-assigned-field-id\",\"last-assigned-field-id\":9}]"), 409);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-current-schema-id\",\"current-schema-id\":0}]"), 0);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-current-schema-id\",\"current-schema-id\":1}]"), 409);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-last-assigned-partition-id\",\"last-assigned-partition-id\":1001}]"), 0);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-last-assigned-partition-id\",\"last-assigned-partition-id\":1000}]"), 409);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-default-spec-id\",\"default-spec-id\":0}]"), 0);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-default-spec-id\",\"default-spec-id\":1}]"), 409);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-default-sort-order-id\",\"default-sort-order-id\":1}]"), 0);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-default-sort-order-id\",\"default-sort-order-id\":0}]"), 409);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-create\"}]"), 409);
    CHECK_EQ(reqs(NULL, "[{\"type\":\"assert-create\"}]"), 0);
    CHECK_EQ(reqs(NULL, "[{\"type\":\"assert-default-spec-id\",\"default-spec-id\":0}]"), 409);
    CHECK_EQ(reqs(md, "[]"), 0);
    CHECK_EQ(fl_iceberg_check_requirements(md, NULL, NULL, 0), 0);
    /* malformed / unknown = 400, even after a failing one */
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-create\"},{\"type\":\"assert-nothing\"}]"), 400);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-default-spec-id\",\"default-spec-id\":\"0\"}]"), 400);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-ref-snapshot-id\",\"snapshot-id\":1}]"), 400);
    CHECK_EQ(reqs(md, "[{\"type\":\"assert-table-uuid\"}]"), 400);
    CHECK_EQ(reqs(md, "[5]"), 400);
    CHECK_EQ(reqs(md, "{}"), 400);
    /* views */
    json_t *view = J("{\"view-uuid\":\"ABCDEF00-0000-4000-8000-000000000000\"}");
    CHECK_EQ(reqs(view, "[{\"type\":\"assert-view-uuid\",\"uuid\":\"abcdef00-0000-4000-8000-000000000000\"}]"), 0);
    CHECK_EQ(reqs(view, "[{\"type\":\"assert-view-uuid\",\"uuid\":\"abcdef00-0000-4000-8000-000000000001\"}]"), 409);
    json_decref(view);
    json_decref(md);
}

static json_t *apply(json_t *md, const char *updates, const char *prev, int *st)
{
    char err[256];
    json_t *u = J(updates);
    json_t *r = fl_iceberg_apply_updates(md, u, prev, st, err, sizeof err);
    json_decref(u);
    if (!r && getenv("FL_TEST_VERBOSE")) fprintf(stderr, "  apply -> %d %s\n", *st, err);
    return r;
}

FL_TEST(iceberg_snapshot_and_main_ref)
{
    json_t *md = table_with_snapshot();
    REQUIRE(md);
    int st;
    CHECK_EQ(I(md, "current-snapshot-id"), 9223372036854775807LL);
    CHECK_EQ(I(md, "refs.main.snapshot-id"), 9223372036854775807LL);
    CHECK_STR(S(md, "refs.main.type"), "branch");
    CHECK_STR(S(md, "refs.v1.type"), "tag");
    CHECK_EQ(I(md, "refs.v1.max-ref-age-ms"), 1000);
    CHECK_EQ(I(md, "last-sequence-number"), 1);
    CHECK_EQ(json_array_size(P(md, "snapshot-log")), 1);
    CHECK_EQ(I(md, "snapshot-log.0.timestamp-ms"), 4102444800000LL);
    CHECK_EQ(I(md, "snapshot-log.0.snapshot-id"), 9223372036854775807LL);
    CHECK_EQ(I(md, "last-updated-ms"), 4102444800000LL);
    CHECK_EQ(json_array_size(P(md, "metadata-log")), 1);
    CHECK_STR(S(md, "metadata-log.0.metadata-file"), "s3://b/metadata/00000-x.metadata.json");
    CHECK_STR(S(md, "snapshots.0.summary.operation"), "append");
    char *dump = json_dumps(md, JSON_COMPACT);
    CHECK(strstr(dump, "\"current-snapshot-id\":9223372036854775807"));
    free(dump);
    char err[256];
    CHECK_EQ(fl_iceberg_validate_metadata(md, err, sizeof err), 0);

    /* stale sequence number: 409; duplicate id: 400; ref to unknown snapshot: 400 */
    json_t *r = apply(md, "[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":2,\"parent-snapshot-id\":9223372036854775807,"
                      "\"sequence-number\":1,\"timestamp-ms\":4102444800001,\"manifest-list\":\"m2\",\"summary\":{\"operation\":\"append\"}}}]", NULL, &st);
    CHECK(!r && st == 409);
    r = apply(md, "[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":9223372036854775807,"
              "\"sequence-number\":5,\"timestamp-ms\":1,\"manifest-list\":\"m2\"}}]", NULL, &st);
    CHECK(!r && st == 400);
    r = apply(md, "[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"branch\",\"snapshot-id\":77}]", NULL, &st);
    CHECK(!r && st == 400);
    r = apply(md, "[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"tag\",\"snapshot-id\":9223372036854775807}]", NULL, &st);
    CHECK(!r && st == 400);
    r = apply(md, "[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"t2\",\"type\":\"tag\",\"snapshot-id\":9223372036854775807,\"min-snapshots-to-keep\":2}]", NULL, &st);
    CHECK(!r && st == 400);

    /* second append moves main */
    r = apply(md, "[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":2,\"parent-snapshot-id\":9223372036854775807,"
              "\"sequence-number\":2,\"timestamp-ms\":4102444900000,\"manifest-list\":\"m2\",\"summary\":{\"operation\":\"append\"}}},"
              "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"branch\",\"snapshot-id\":2},"
              "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"dev\",\"type\":\"branch\",\"snapshot-id\":9223372036854775807,"
              "\"min-snapshots-to-keep\":3,\"max-snapshot-age-ms\":100}]",
              "s3://b/metadata/00001-y.metadata.json", &st);
    REQUIRE(r);
    CHECK_EQ(I(r, "current-snapshot-id"), 2);
    CHECK_EQ(I(r, "last-sequence-number"), 2);
    CHECK_EQ(json_array_size(P(r, "snapshot-log")), 2);
    CHECK_EQ(I(r, "snapshot-log.1.snapshot-id"), 2);
    CHECK_EQ(I(r, "snapshot-log.1.timestamp-ms"), 4102444900000LL);
    CHECK_EQ(I(r, "refs.dev.min-snapshots-to-keep"), 3);
    CHECK_EQ(json_array_size(P(r, "metadata-log")), 2);
    CHECK_EQ(I(r, "metadata-log.1.timestamp-ms"), 4102444800000LL);
    CHECK_EQ(fl_iceberg_next_file_seq(r), 2);
    /* base untouched */
    CHECK_EQ(I(md, "current-snapshot-id"), 9223372036854775807LL);
    CHECK_EQ(json_array_size(P(md, "snapshots")), 1);

    /* remove-snapshots drops refs to it and prunes the snapshot log before it */
    json_t *r2 = apply(r, "[{\"action\":\"remove-snapshots\",\"snapshot-ids\":[9223372036854775807, 12345]}]", NULL, &st);
    REQUIRE(r2);
    CHECK_EQ(json_array_size(P(r2, "snapshots")), 1);
    CHECK(P(r2, "refs.v1") == NULL && P(r2, "refs.dev") == NULL);
    CHECK_EQ(I(r2, "refs.main.snapshot-id"), 2);
    CHECK_EQ(json_array_size(P(r2, "snapshot-log")), 1);
    CHECK_EQ(I(r2, "snapshot-log.0.snapshot-id"), 2);
    json_t *r3 = apply(r2, "[{\"action\":\"remove-snapshot-ref\",\"ref-name\":\"main\"}]", NULL, &st);
    REQUIRE(r3);
    CHECK_EQ(I(r3, "current-snapshot-id"), -1);
    CHECK(P(r3, "refs.main") == NULL);
    CHECK_EQ(fl_iceberg_current_snapshot_id(r3), -1);
    json_decref(r3);
    json_decref(r2);
    json_decref(r);
    json_decref(md);
}

FL_TEST(iceberg_schema_spec_order_updates)
{
    json_t *md = new_table(CREATE);
    REQUIRE(md);
    int st;
    json_t *r = apply(md, "[{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\",\"schema-id\":99,\"fields\":["
                      "{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"long\"},"
                      "{\"id\":11,\"name\":\"z\",\"required\":false,\"type\":\"date\"}]},\"last-column-id\":11},"
                      "{\"action\":\"set-current-schema\",\"schema-id\":-1},"
                      "{\"action\":\"add-spec\",\"spec\":{\"fields\":[{\"source-id\":11,\"name\":\"z_month\",\"transform\":\"month\"}]}},"
                      "{\"action\":\"set-default-spec\",\"spec-id\":-1},"
                      "{\"action\":\"add-sort-order\",\"sort-order\":{\"order-id\":5,\"fields\":[{\"source-id\":1,\"transform\":\"identity\","
                      "\"direction\":\"desc\",\"null-order\":\"nulls-last\"}]}},"
                      "{\"action\":\"set-default-sort-order\",\"sort-order-id\":-1}]", NULL, &st);
    REQUIRE(r);
    CHECK_EQ(I(r, "current-schema-id"), 1);
    CHECK_EQ(I(r, "schemas.1.schema-id"), 1);
    CHECK_EQ(I(r, "last-column-id"), 11);
    CHECK_EQ(I(r, "default-spec-id"), 1);
    CHECK_EQ(I(r, "partition-specs.1.fields.0.field-id"), 1002);
    CHECK_EQ(I(r, "last-partition-id"), 1002);
    CHECK_EQ(I(r, "default-sort-order-id"), 2);
    CHECK_EQ(json_array_size(P(r, "metadata-log")), 0);

    /* identical schema / equivalent spec / same order are reused */
    json_t *r2 = apply(r, "[{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\",\"schema-id\":5,\"fields\":["
                       "{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"long\"},"
                       "{\"id\":11,\"name\":\"z\",\"required\":false,\"type\":\"date\"}]}},"
                       "{\"action\":\"set-current-schema\",\"schema-id\":-1},"
                       "{\"action\":\"add-spec\",\"spec\":{\"fields\":[{\"source-id\":11,\"field-id\":1002,\"name\":\"z_month\",\"transform\":\"month\"}]}},"
                       "{\"action\":\"add-sort-order\",\"sort-order\":{\"fields\":[]}},"
                       "{\"action\":\"set-default-sort-order\",\"sort-order-id\":-1}]", NULL, &st);
    REQUIRE(r2);
    CHECK_EQ(json_array_size(P(r2, "schemas")), 2);
    CHECK_EQ(json_array_size(P(r2, "partition-specs")), 2);
    CHECK_EQ(I(r2, "default-sort-order-id"), 0);
    CHECK_EQ(json_array_size(P(r2, "sort-orders")), 3);
    CHECK(fl_iceberg_metadata_unchanged(r, r) == 1);
    json_decref(r2);

    /* errors */
    int bad_st[] = { 400, 400, 400, 400, 400, 400, 400, 400 };
    const char *bad[] = {
        "[{\"action\":\"set-current-schema\",\"schema-id\":-1}]",
        "[{\"action\":\"set-current-schema\",\"schema-id\":42}]",
        "[{\"action\":\"remove-schemas\",\"schema-ids\":[1]}]",
        "[{\"action\":\"remove-partition-specs\",\"spec-ids\":[1]}]",
        "[{\"action\":\"add-spec\",\"spec\":{\"fields\":[{\"source-id\":3,\"name\":\"x\",\"transform\":\"identity\"}]}}]",
        "[{\"action\":\"set-default-sort-order\",\"sort-order-id\":9}]",
        "[{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":\"int\"}]}}]",
        "[{\"action\":\"add-view-version\",\"view-version\":{}}]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *x = apply(r, bad[i], NULL, &st);
        if (x || st != bad_st[i]) FL_FAIL("bad[%zu]: %d", i, st);
        json_decref(x);
    }
    /* removals of unused ones */
    json_t *r3 = apply(r, "[{\"action\":\"remove-schemas\",\"schema-ids\":[0]},"
                       "{\"action\":\"remove-partition-specs\",\"spec-ids\":[0, 77]}]", NULL, &st);
    REQUIRE(r3);
    CHECK_EQ(json_array_size(P(r3, "schemas")), 1);
    CHECK_EQ(json_array_size(P(r3, "partition-specs")), 1);
    json_decref(r3);
    json_decref(r);
    json_decref(md);
}

FL_TEST(iceberg_misc_updates)
{
    json_t *md = table_with_snapshot();
    REQUIRE(md);
    int st;
    json_t *r = apply(md, "[{\"action\":\"set-properties\",\"updates\":{\"k\":\"v\",\"k2\":\"v2\"}},"
                      "{\"action\":\"set-properties\",\"updated\":{\"old\":\"java\"}},"
                      "{\"action\":\"remove-properties\",\"removals\":[\"k2\",\"missing\"]},"
                      "{\"action\":\"remove-properties\",\"removed\":[\"owner\"]},"
                      "{\"action\":\"set-location\",\"location\":\"s3://other/t\"},"
                      "{\"action\":\"assign-uuid\",\"uuid\":\"11111111-2222-4333-8444-555555555555\"},"
                      "{\"action\":\"set-statistics\",\"snapshot-id\":9223372036854775807,\"statistics\":{\"snapshot-id\":9223372036854775807,"
                      "\"statistics-path\":\"s3://b/s.puffin\",\"file-size-in-bytes\":10,\"file-footer-size-in-bytes\":5,\"blob-metadata\":[]}},"
                      "{\"action\":\"set-partition-statistics\",\"partition-statistics\":{\"snapshot-id\":9223372036854775807,"
                      "\"statistics-path\":\"s3://b/p.parquet\",\"file-size-in-bytes\":10}},"
                      "{\"action\":\"add-encryption-key\",\"encryption-key\":{\"key-id\":\"k1\",\"encrypted-key-metadata\":\"AAA=\"}},"
                      "{\"action\":\"upgrade-format-version\",\"format-version\":2}]", NULL, &st);
    REQUIRE(r);
    CHECK_STR(S(r, "properties.k"), "v");
    CHECK_STR(S(r, "properties.old"), "java");
    CHECK(P(r, "properties.k2") == NULL && P(r, "properties.owner") == NULL);
    CHECK_STR(S(r, "location"), "s3://other/t");
    CHECK_STR(S(r, "table-uuid"), "11111111-2222-4333-8444-555555555555");
    CHECK_EQ(json_array_size(P(r, "statistics")), 1);
    CHECK_EQ(json_array_size(P(r, "partition-statistics")), 1);
    CHECK_EQ(json_array_size(P(r, "encryption-keys")), 1);
    json_t *r2 = apply(r, "[{\"action\":\"remove-statistics\",\"snapshot-id\":9223372036854775807},"
                       "{\"action\":\"remove-partition-statistics\",\"snapshot-id\":9223372036854775807},"
                       "{\"action\":\"remove-encryption-key\",\"key-id\":\"k1\"},"
                       "{\"action\":\"upgrade-format-version\",\"format-version\":3},"
                       "{\"action\":\"enable-row-lineage\"}]", NULL, &st);
    REQUIRE(r2);
    CHECK_EQ(json_array_size(P(r2, "statistics")), 0);
    CHECK_EQ(json_array_size(P(r2, "partition-statistics")), 0);
    CHECK_EQ(json_array_size(P(r2, "encryption-keys")), 0);
    CHECK_EQ(I(r2, "format-version"), 3);
    CHECK_EQ(I(r2, "next-row-id"), 0);
    /* v3 snapshot: row lineage */
    json_t *r3 = apply(r2, "[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":3,\"parent-snapshot-id\":9223372036854775807,"
                       "\"sequence-number\":2,\"timestamp-ms\":4102444900000,\"manifest-list\":\"m3\",\"first-row-id\":0,\"added-rows\":25}}]",
                       NULL, &st);
    REQUIRE(r3);
    CHECK_EQ(I(r3, "next-row-id"), 25);
    json_t *x = apply(r3, "[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":4,\"parent-snapshot-id\":3,"
                      "\"sequence-number\":3,\"timestamp-ms\":4102444900000,\"manifest-list\":\"m4\",\"first-row-id\":10,\"added-rows\":5}}]",
                      NULL, &st);
    CHECK(!x && st == 409);
    json_decref(r3);
    const char *bad[] = {
        "[{\"action\":\"upgrade-format-version\",\"format-version\":1}]",
        "[{\"action\":\"upgrade-format-version\",\"format-version\":4}]",
        "[{\"action\":\"assign-uuid\",\"uuid\":\"nope\"}]",
        "[{\"action\":\"set-properties\",\"updates\":{\"k\":1}}]",
        "[{\"action\":\"remove-properties\",\"removals\":\"k\"}]",
        "[{\"action\":\"set-location\"}]",
        "[{\"action\":\"frobnicate\"}]",
        "[{}]",
        "[1]",
        "{}",
        "[{\"action\":\"set-statistics\",\"statistics\":{}}]",
        "[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":5,\"timestamp-ms\":1}}]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        x = apply(r2, bad[i], NULL, &st);
        if (x || st != 400) FL_FAIL("bad[%zu]: %d", i, st);
        json_decref(x);
    }
    x = apply(md, "[{\"action\":\"enable-row-lineage\"}]", NULL, &st);
    CHECK(!x && st == 400);
    json_decref(r2);
    json_decref(r);
    json_decref(md);
}

FL_TEST(iceberg_metadata_log_trim)
{
    json_t *md = new_table(CREATE);
    REQUIRE(md);
    int st;
    json_t *cur = apply(md, "[{\"action\":\"set-properties\",\"updates\":{\"write.metadata.previous-versions-max\":\"3\"}}]",
                        "s3://b/t/metadata/00000-a.metadata.json", &st);
    REQUIRE(cur);
    for (int i = 1; i <= 6; i++) {
        char loc[128];
        long seq = fl_iceberg_next_file_seq(cur); /* the number the current metadata is stored under */
        CHECK_EQ(seq, i);
        snprintf(loc, sizeof loc, "s3://b/t/metadata/%05ld-a.metadata.json", seq);
        json_t *n = apply(cur, "[]", loc, &st);
        REQUIRE(n);
        json_decref(cur);
        cur = n;
    }
    CHECK_EQ(json_array_size(P(cur, "metadata-log")), 3);
    CHECK_STR(S(cur, "metadata-log.0.metadata-file"), "s3://b/t/metadata/00004-a.metadata.json");
    CHECK_STR(S(cur, "metadata-log.2.metadata-file"), "s3://b/t/metadata/00006-a.metadata.json");
    CHECK_EQ(fl_iceberg_next_file_seq(cur), 7);
    CHECK_EQ(fl_iceberg_file_seq_of("s3://b/t/metadata/00012-x.metadata.json"), 12);
    CHECK_EQ(fl_iceberg_file_seq_of("s3://b/t/metadata/v1.metadata.json"), -1);
    CHECK_EQ(fl_iceberg_file_seq_of(NULL), -1);
    json_decref(cur);
    json_decref(md);
}

FL_TEST(iceberg_s3tables_schema)
{
    char err[256];
    json_t *in = J("{\"fields\":[{\"name\":\"id\",\"type\":\"LONG\",\"required\":true},"
                   "{\"name\":\"price\",\"type\":\"decimal(10,2)\"},{\"name\":\"ts\",\"type\":\"timestamp\",\"id\":77},"
                   "{\"name\":\"tags\",\"type\":{\"type\":\"list\",\"element\":\"string\"}}]}");
    json_t *s = fl_iceberg_schema_from_s3tables(in, err, sizeof err);
    json_decref(in);
    REQUIRE(s);
    CHECK_STR(S(s, "type"), "struct");
    CHECK_EQ(I(s, "schema-id"), 0);
    CHECK_EQ(I(s, "fields.0.id"), 1);
    CHECK_STR(S(s, "fields.0.type"), "long");
    CHECK(json_is_true(P(s, "fields.0.required")));
    CHECK(json_is_false(P(s, "fields.1.required")));
    CHECK_STR(S(s, "fields.1.type"), "decimal(10, 2)");
    CHECK_EQ(I(s, "fields.2.id"), 3);
    CHECK_EQ(I(s, "fields.3.type.element-id"), 5);
    /* it feeds a create request */
    json_t *req = json_pack("{s:s,s:O}", "name", "t", "schema", s);
    int st;
    json_t *md = fl_iceberg_new_metadata(req, "s3://b/t", &st, err, sizeof err);
    CHECK(md != NULL);
    CHECK_EQ(I(md, "last-column-id"), 5);
    json_decref(md);
    json_decref(req);
    json_decref(s);
    const char *bad[] = { "{}", "{\"fields\":[]}", "{\"fields\":[{\"name\":\"x\"}]}",
                          "{\"fields\":[{\"name\":\"x\",\"type\":\"text\"}]}",
                          "{\"fields\":[{\"type\":\"int\"}]}",
                          "{\"fields\":[{\"name\":\"x\",\"type\":\"int\",\"required\":1}]}",
                          "{\"fields\":[{\"name\":\"x\",\"type\":\"int\"},{\"name\":\"x\",\"type\":\"int\"}]}" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        in = J(bad[i]);
        err[0] = 0;
        s = fl_iceberg_schema_from_s3tables(in, err, sizeof err);
        if (s || !err[0]) FL_FAIL("bad[%zu] accepted", i);
        json_decref(s);
        json_decref(in);
    }
}

FL_TEST(iceberg_views)
{
    char err[256];
    int st;
    json_t *req = J("{\"name\":\"v\",\"schema\":{\"type\":\"struct\",\"schema-id\":3,\"fields\":["
                    "{\"id\":1,\"name\":\"x\",\"required\":false,\"type\":\"int\"}]},"
                    "\"view-version\":{\"version-id\":9,\"schema-id\":3,\"timestamp-ms\":1700000000000,"
                    "\"summary\":{\"engine-name\":\"spark\"},\"default-namespace\":[\"ns\"],"
                    "\"representations\":[{\"type\":\"sql\",\"sql\":\"select 1 x\",\"dialect\":\"spark\"}]},"
                    "\"properties\":{\"comment\":\"hi\"}}");
    json_t *v = fl_iceberg_new_view_metadata(req, "s3://b/ns/v", &st, err, sizeof err);
    json_decref(req);
    if (!v) fprintf(stderr, "view: %s\n", err);
    REQUIRE(v);
    CHECK_EQ(I(v, "format-version"), 1);
    CHECK_EQ(strlen(S(v, "view-uuid")), 36);
    CHECK_EQ(I(v, "current-version-id"), 1);
    CHECK_EQ(json_array_size(P(v, "versions")), 1);
    CHECK_EQ(I(v, "versions.0.version-id"), 1);
    CHECK_EQ(I(v, "versions.0.schema-id"), 0);
    CHECK_EQ(I(v, "schemas.0.schema-id"), 0);
    CHECK_EQ(json_array_size(P(v, "version-log")), 1);
    CHECK_EQ(fl_iceberg_next_file_seq(v), 0);
    CHECK_EQ(I(v, "version-log.0.version-id"), 1);
    CHECK_STR(S(v, "properties.comment"), "hi");

    json_t *u = J("[{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\",\"fields\":["
                  "{\"id\":1,\"name\":\"x\",\"required\":false,\"type\":\"long\"}]}},"
                  "{\"action\":\"add-view-version\",\"view-version\":{\"version-id\":0,\"schema-id\":-1,\"timestamp-ms\":1700000001000,"
                  "\"summary\":{},\"default-namespace\":[\"ns\"],"
                  "\"representations\":[{\"type\":\"sql\",\"sql\":\"select 2 x\",\"dialect\":\"spark\"}]}},"
                  "{\"action\":\"set-current-view-version\",\"view-version-id\":-1},"
                  "{\"action\":\"set-properties\",\"updates\":{\"a\":\"b\"}},"
                  "{\"action\":\"remove-properties\",\"removals\":[\"comment\"]},"
                  "{\"action\":\"set-location\",\"location\":\"s3://b/ns/v2\"},"
                  "{\"action\":\"upgrade-format-version\",\"format-version\":1}]");
    json_t *v2 = fl_iceberg_apply_view_updates(v, u, NULL, &st, err, sizeof err);
    json_decref(u);
    if (!v2) fprintf(stderr, "view update: %s\n", err);
    REQUIRE(v2);
    CHECK_EQ(I(v2, "current-version-id"), 2);
    CHECK_EQ(fl_iceberg_next_file_seq(v2), 1);
    CHECK_EQ(I(v2, "versions.1.schema-id"), 1);
    CHECK_EQ(json_array_size(P(v2, "version-log")), 2);
    CHECK_EQ(I(v2, "version-log.1.timestamp-ms"), 1700000001000LL);
    CHECK_STR(S(v2, "properties.a"), "b");
    CHECK(P(v2, "properties.comment") == NULL);
    CHECK_STR(S(v2, "location"), "s3://b/ns/v2");
    const char *bad[] = {
        "[{\"action\":\"set-current-view-version\",\"view-version-id\":-1}]",
        "[{\"action\":\"set-current-view-version\",\"view-version-id\":7}]",
        "[{\"action\":\"upgrade-format-version\",\"format-version\":2}]",
        "[{\"action\":\"add-snapshot\"}]",
        "[{\"action\":\"add-view-version\",\"view-version\":{\"schema-id\":0,\"representations\":[]}}]",
        "[{\"action\":\"add-view-version\",\"view-version\":{\"schema-id\":0,\"representations\":["
        "{\"type\":\"sql\",\"sql\":\"a\",\"dialect\":\"x\"},{\"type\":\"sql\",\"sql\":\"b\",\"dialect\":\"X\"}]}}]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        u = J(bad[i]);
        json_t *x = fl_iceberg_apply_view_updates(v2, u, NULL, &st, err, sizeof err);
        if (x || st != 400) FL_FAIL("bad[%zu]: %d", i, st);
        json_decref(x);
        json_decref(u);
    }
    req = J("{\"name\":\"v\",\"schema\":{\"type\":\"struct\",\"fields\":[]}}");
    CHECK(fl_iceberg_new_view_metadata(req, "s3://b", &st, err, sizeof err) == NULL && st == 400);
    json_decref(req);
    json_decref(v2);
    json_decref(v);
}

FL_TEST(iceberg_v1_legacy_fields_follow)
{
    json_t *md = new_table("{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":["
                           "{\"id\":1,\"name\":\"x\",\"required\":false,\"type\":\"long\"}]},"
                           "\"properties\":{\"format-version\":\"1\"}}");
    REQUIRE(md);
    int st;
    json_t *r = apply(md, "[{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\",\"fields\":["
                      "{\"id\":1,\"name\":\"x\",\"required\":false,\"type\":\"long\"},"
                      "{\"id\":2,\"name\":\"y\",\"required\":false,\"type\":\"string\"}]}},"
                      "{\"action\":\"set-current-schema\",\"schema-id\":-1},"
                      "{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":1,\"timestamp-ms\":1,\"manifest-list\":\"m\"}},"
                      "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"branch\",\"snapshot-id\":1}]", NULL, &st);
    REQUIRE(r);
    CHECK_EQ(json_array_size(P(r, "schema.fields")), 2);
    CHECK_EQ(I(r, "current-snapshot-id"), 1);
    CHECK(P(r, "last-sequence-number") == NULL);
    json_t *r2 = apply(r, "[{\"action\":\"upgrade-format-version\",\"format-version\":2}]", NULL, &st);
    REQUIRE(r2);
    CHECK(P(r2, "schema") == NULL && P(r2, "partition-spec") == NULL);
    CHECK_EQ(I(r2, "last-sequence-number"), 0);
    char err[256];
    CHECK_EQ(fl_iceberg_validate_metadata(r2, err, sizeof err), 0);
    json_decref(r2);
    json_decref(r);
    json_decref(md);
    /* an invalid base is the server's problem: 500 */
    json_t *b = J("{\"format-version\":2}");
    json_t *x = apply(b, "[]", NULL, &st);
    CHECK(!x && st == 500);
    json_decref(b);
}
