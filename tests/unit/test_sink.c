/* floe sink: connector configuration (src/sink/config.c), record conversion
 * and type inference (src/sink/convert.c), the offsets in snapshot summaries
 * (src/sink/sink.c). */
#include "test.h"
#include <jansson.h>
#include <stdlib.h>
#include "format/json_rows.h"
#include "iceberg/schema.h"
#include "sink/config.h"
#include "sink/convert.h"
#include "sink/sink.h"

static const char *BASE =
    "\"topics\":\"events\",\"iceberg.tables\":\"ns.events\",\"iceberg.catalog.type\":\"rest\","
    "\"iceberg.catalog.uri\":\"http://127.0.0.1:1/iceberg\",\"bootstrap.servers\":\"127.0.0.1:9092\"";

static fl_err_t parse(const char *text, fl_sink_config_t *c, char *err, size_t n)
{
    fl_err_t e = fl_sink_config_parse(text, strlen(text), c, err, n);
    if (!e) e = fl_sink_config_finish(c, err, n);
    return e;
}

FL_TEST(sink_config_connect_json)
{
    char text[2048], err[512] = "";
    snprintf(text, sizeof text, "{\"name\":\"orders\",\"config\":{%s,\"tasks.max\":2,"
             "\"iceberg.control.commit.interval-ms\":1000,\"value.converter.schemas.enable\":false,"
             "\"consumer.override.max.poll.interval.ms\":\"60000\",\"iceberg.kafka.fetch.min.bytes\":\"1\","
             "\"iceberg.catalog.rest.sigv4-enabled\":\"true\",\"iceberg.catalog.s3.path-style-access\":true}}", BASE);
    fl_sink_config_t c;
    REQUIRE(parse(text, &c, err, sizeof err) == FL_OK);
    CHECK_STR(c.name, "orders");
    CHECK_STR(c.group_id, "connect-orders");   /* as Connect names the group */
    CHECK_EQ(c.commit_interval_ms, 1000);
    CHECK(!c.schemas_enable);
    CHECK(c.sigv4);
    CHECK_EQ(c.s3_path_style, 1);
    CHECK_EQ(c.n_tables, 1);
    CHECK_STR(c.tables[0].table, "ns.events");
    CHECK_STR(json_string_value(json_object_get(c.consumer, "max.poll.interval.ms")), "60000");
    CHECK_STR(json_string_value(json_object_get(c.consumer, "fetch.min.bytes")), "1");
    CHECK_STR(json_string_value(json_object_get(c.consumer, "bootstrap.servers")), "127.0.0.1:9092");
    fl_sink_config_free(&c);
}

FL_TEST(sink_config_properties_and_overrides)
{
    const char *text = "# the connector\nname = p\ntopics: a, b ,\n"
                       "iceberg.tables.dynamic-enabled=true\niceberg.tables.route-field=meta.table\n"
                       "iceberg.catalog.type=rest\niceberg.catalog.uri=http://x/iceberg\n"
                       "! comment\nerrors.tolerance=all\nerrors.deadletterqueue.topic.name=dlq\n";
    fl_sink_config_t c;
    char err[512] = "";
    REQUIRE(fl_sink_config_parse(text, strlen(text), &c, err, sizeof err) == FL_OK);
    /* flags and FLOE_* come after the file */
    CHECK(!fl_sink_config_set(&c, "bootstrap.servers", "k:1", err, sizeof err));
    CHECK(!fl_sink_config_set(&c, "group.id", "g1", err, sizeof err));
    REQUIRE(fl_sink_config_finish(&c, err, sizeof err) == FL_OK);
    CHECK_EQ(c.n_topics, 2);
    CHECK_STR(c.topics[1], "b");
    CHECK(c.dynamic && c.tolerance_all);
    CHECK_STR(c.route_field, "meta.table");
    CHECK_STR(c.dlq_topic, "dlq");
    CHECK_STR(c.group_id, "g1");
    CHECK(c.schemas_enable);   /* JsonConverter's default */
    fl_sink_config_free(&c);
}

FL_TEST(sink_config_errors_name_the_key)
{
    static const struct { const char *extra, *want; } cases[] = {
        { ",\"iceberg.tables.upsert-mode-enabled\":\"true\"", "iceberg.tables.upsert-mode-enabled: not supported" },
        { ",\"transforms\":\"x\"", "transforms.x.type: \"\" is not supported" },
        { ",\"transforms\":\"x,y\"", "floe sink runs one transform" },
        { ",\"transforms\":\"x\",\"transforms.x.type\":\"org.apache.kafka.connect.transforms.InsertField$Value\"",
          "transforms.x.type: \"org.apache.kafka.connect.transforms.InsertField$Value\" is not supported" },
        { ",\"transforms\":\"x\",\"transforms.x.type\":\"org.apache.iceberg.connect.transforms.KafkaMetadataTransform\","
          "\"transforms.x.external_field\":\"nocomma\"", "is not name,value" },
        { ",\"transforms.y.type\":\"z\"", "transforms.y.type: not supported" },
        { ",\"floe.commit.max-records\":\"-1\"", "floe.commit.max-records" },
        { ",\"iceberg.catalog.nope\":\"1\"", "iceberg.catalog.nope: unknown key" },
        { ",\"iceberg.table.ns.events.commit-branch\":\"b\"", "iceberg.table.ns.events.commit-branch: not supported" },
        { ",\"iceberg.table.ns.other.route-regex\":\"x\"", "not in iceberg.tables" },
        { ",\"value.converter\":\"io.confluent.connect.avro.AvroConverter\"", "value.converter" },
        { ",\"iceberg.control.commit.interval-ms\":\"soon\"", "interval-ms" },
        { ",\"iceberg.tables.dynamic-enabled\":\"true\"", "exclude each other" },
        { ",\"errors.tolerance\":\"some\"", "errors.tolerance" },
        { ",\"errors.deadletterqueue.topic.name\":\"d\"", "errors.tolerance=all" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[2048], err[512] = "";
        snprintf(text, sizeof text, "{%s%s}", BASE, cases[i].extra);
        fl_sink_config_t c;
        fl_err_t e = parse(text, &c, err, sizeof err);
        if (!e || !strstr(err, cases[i].want)) FL_FAIL("case %zu: e=%d err=\"%s\"", i, (int)e, err);
        fl_sink_config_free(&c);
    }
    fl_sink_config_t c;
    char err[512] = "";
    CHECK(parse("{\"topics\":\"t\"", &c, err, sizeof err) == FL_ERR_INVALID);   /* not JSON */
    fl_sink_config_free(&c);
    CHECK(parse("topics\n", &c, err, sizeof err) == FL_ERR_INVALID);            /* not key=value */
    CHECK(strstr(err, "line 1") != NULL);
    fl_sink_config_free(&c);
}

static const char *TABLE =
    "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
    "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
    "{\"id\":2,\"name\":\"name\",\"required\":false,\"type\":\"string\"},"
    "{\"id\":3,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz\"},"
    "{\"id\":4,\"name\":\"tm\",\"required\":false,\"type\":\"time\"},"
    "{\"id\":5,\"name\":\"ok\",\"required\":false,\"type\":\"boolean\"},"
    "{\"id\":6,\"name\":\"bin\",\"required\":false,\"type\":\"binary\"},"
    "{\"id\":7,\"name\":\"price\",\"required\":false,\"type\":\"decimal(9, 2)\"},"
    "{\"id\":8,\"name\":\"loc\",\"required\":false,\"type\":{\"type\":\"struct\",\"fields\":["
    "{\"id\":9,\"name\":\"lat\",\"required\":false,\"type\":\"double\"}]}},"
    "{\"id\":10,\"name\":\"tags\",\"required\":false,\"type\":{\"type\":\"map\",\"key-id\":11,\"key\":\"string\","
    "\"value-id\":12,\"value\":\"int\",\"value-required\":false}},"
    "{\"id\":13,\"name\":\"local\",\"required\":false,\"type\":\"timestamp\"}]}";

static json_t *convert(const fl_field_t *root, const char *rec, const char *schema, bool ci, json_t *missing,
                       char *err, size_t n)
{
    json_t *v = json_loads(rec, 0, NULL), *s = schema ? json_loads(schema, 0, NULL) : NULL, *out = NULL;
    fl_err_t e = fl_sink_convert(root, v, s, ci, &out, missing, err, n);
    json_decref(v);
    json_decref(s);
    return e ? NULL : out;
}

FL_TEST(sink_convert_coercions)
{
    json_t *sj = json_loads(TABLE, 0, NULL);
    fl_field_t root;
    int32_t sid;
    char err[512] = "";
    REQUIRE(fl_schema_from_json(sj, &root, &sid, err, sizeof err) == FL_OK);
    json_t *missing = json_array();
    json_t *o = convert(&root, "{\"ID\":\"42\",\"name\":{\"a\":1},\"ts\":1700000000123,\"tm\":1500,\"ok\":\"TRUE\","
                        "\"bin\":\"AQID\",\"price\":\"12.5\",\"loc\":{\"lat\":\"1.5\",\"alt\":3},\"tags\":{\"x\":1},"
                        "\"local\":\"2024-01-02 03:04:05+02:00\",\"extra\":true,\"gone\":null}",
                        NULL, true, missing, err, sizeof err);
    REQUIRE(o);
    CHECK_EQ(json_integer_value(json_object_get(o, "id")), 42);                 /* numeric string, any case */
    CHECK_STR(json_string_value(json_object_get(o, "name")), "{\"a\":1}");      /* objects as JSON text */
    CHECK_EQ(json_integer_value(json_object_get(o, "ts")), 1700000000123000LL); /* epoch millis */
    CHECK_EQ(json_integer_value(json_object_get(o, "tm")), 1500000);            /* millis of the day */
    CHECK(json_is_true(json_object_get(o, "ok")));
    CHECK_STR(json_string_value(json_object_get(o, "bin")), "010203");          /* base64 -> bytes */
    CHECK_STR(json_string_value(json_object_get(o, "local")), "2024-01-02 03:04:05"); /* offset dropped */
    CHECK_EQ(json_array_size(missing), 2);
    CHECK_STR(json_string_value(json_array_get(missing, 0)), "loc.alt");
    CHECK_STR(json_string_value(json_array_get(missing, 1)), "extra");
    /* the converted record goes into columns */
    fl_vec_t v;
    fl_vec_init(&v, &root);
    CHECK(fl_vec_append_json(&v, o, err, sizeof err) == FL_OK);
    CHECK_EQ(v.len, 1);
    json_decref(o);
    /* failures name the field */
    CHECK(!convert(&root, "{\"id\":\"x\"}", NULL, false, NULL, err, sizeof err));
    CHECK(strstr(err, "field id") != NULL);
    CHECK(!convert(&root, "{\"id\":1,\"loc\":{\"lat\":[1]}}", NULL, false, NULL, err, sizeof err));
    CHECK(strstr(err, "loc.lat") != NULL);
    /* a required column left null fails at the column append, before anything is written */
    o = convert(&root, "{\"name\":\"n\"}", NULL, false, NULL, err, sizeof err);
    REQUIRE(o);
    CHECK(fl_vec_append_json(&v, o, err, sizeof err) != FL_OK);
    CHECK_EQ(v.len, 1);
    json_decref(o);
    /* Connect decimal bytes (unscaled big-endian, base64) with the envelope's schema */
    o = convert(&root, "{\"id\":1,\"price\":\"/zg=\"}",
                "{\"type\":\"struct\",\"fields\":[{\"field\":\"price\",\"type\":\"bytes\",\"name\":"
                "\"org.apache.kafka.connect.data.Decimal\",\"parameters\":{\"scale\":\"2\"}}]}",
                false, NULL, err, sizeof err);
    REQUIRE(o);
    CHECK_STR(json_string_value(json_object_get(o, "price")), "-2.00");
    json_decref(o);
    /* a scale from the record's own schema outside Iceberg's 0..38 is a bad record, not a write
     * past the digit buffer */
    CHECK(!convert(&root, "{\"id\":1,\"price\":\"AQ==\"}",
                   "{\"type\":\"struct\",\"fields\":[{\"field\":\"price\",\"type\":\"bytes\",\"name\":"
                   "\"org.apache.kafka.connect.data.Decimal\",\"parameters\":{\"scale\":\"500\"}}]}",
                   false, NULL, err, sizeof err));
    CHECK(strstr(err, "price") != NULL);
    fl_vec_free(&v);
    fl_field_free(&root);
    json_decref(missing);
    json_decref(sj);
}

FL_TEST(sink_parse_value_envelope)
{
    json_t *root, *v, *s;
    char err[512] = "";
    const char *env = "{\"schema\":{\"type\":\"struct\",\"fields\":[]},\"payload\":{\"a\":1}}";
    REQUIRE(fl_sink_parse_value(env, strlen(env), true, &root, &v, &s, err, sizeof err) == FL_OK);
    CHECK(json_is_object(s) && json_integer_value(json_object_get(v, "a")) == 1);
    json_decref(root);
    CHECK(fl_sink_parse_value("{\"a\":1}", 7, true, &root, &v, &s, err, sizeof err) == FL_ERR_INVALID);
    CHECK(strstr(err, "schemas.enable") != NULL);
    CHECK(fl_sink_parse_value("[1]", 3, false, &root, &v, &s, err, sizeof err) == FL_ERR_INVALID);
    CHECK(fl_sink_parse_value("{\"a\":", 5, false, &root, &v, &s, err, sizeof err) == FL_ERR_INVALID);
    CHECK(fl_sink_parse_value(NULL, 0, false, &root, &v, &s, err, sizeof err) == FL_OK && !root && !v); /* tombstone */
}

/* The fast reader gives exactly json_loadb's value where it answers, and
 * NULL (json_loadb decides) for what it leaves alone. */
FL_TEST(sink_json_fast_matches_jansson)
{
    static const char *same[] = {
        "{\"id\":1,\"name\":\"n1\",\"ts\":1700000000000,\"x\":-1.5e3,\"ok\":true,\"no\":false,\"z\":null}",
        " { \"a\" : [ 1 , 2.25 , \"s\" , [ ] , { } ] , \"b\" : { \"c\" : { \"d\" : -0 } } } \n",
        "{\"esc\":\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t\"}", "{}", "[]", "\"x\"", "0", "-123456789012345678",
        "1E2", "0.5", "[0e0,1e-2]", "{\"\":\"\"}",
    };
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        json_t *a = fl_sink_json_fast(same[i], strlen(same[i]));
        json_t *b = json_loads(same[i], JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
        CHECK(a && b && json_equal(a, b));
        if (!(a && b && json_equal(a, b))) fprintf(stderr, "fast reader differs on: %s\n", same[i]);
        json_decref(a);
        json_decref(b);
    }
    static const char *fallback[] = {
        "{\"a\":1,\"a\":2}", "{\"a\":\"\\u00e9\"}", "{\"a\":\"\xc3\xa9\"}", "1234567890123456789", "01", "1.", "1e",
        "{\"a\":1,}", "[1 2]", "{\"a\":1} x", "tru", "\"a\tb\"", "1e400", "", "{\"a\"", "nul",
    };
    for (size_t i = 0; i < sizeof fallback / sizeof *fallback; i++) {
        json_t *a = fl_sink_json_fast(fallback[i], strlen(fallback[i]));
        CHECK(a == NULL);
        if (a) fprintf(stderr, "fast reader answered: %s\n", fallback[i]);
        json_decref(a);
    }
    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    CHECK(fl_sink_json_fast(deep, sizeof deep) == NULL);   /* over 64 levels: jansson's own limit decides */
}

FL_TEST(sink_infer_schema_and_evolve)
{
    char err[512] = "";
    json_t *rec = json_loads("{\"id\":1,\"x\":1.5,\"s\":\"a\",\"b\":true,\"n\":null,\"e\":[],\"o\":{\"k\":2},"
                             "\"l\":[\"a\"]}", 0, NULL);
    json_t *sch = NULL;
    REQUIRE(fl_sink_infer_schema(rec, NULL, false, &sch, err, sizeof err) == FL_OK);
    fl_field_t root;
    int32_t sid;
    REQUIRE(fl_schema_from_json(sch, &root, &sid, err, sizeof err) == FL_OK);   /* a valid Iceberg schema */
    CHECK_EQ(root.n_children, 6);   /* n (null) and e (empty list) give no column */
    CHECK(root.children[0].kind == FL_TYPE_LONG && !root.children[0].required);
    CHECK(root.children[1].kind == FL_TYPE_DOUBLE);
    CHECK(root.children[4].kind == FL_TYPE_STRUCT);
    CHECK(root.children[5].kind == FL_TYPE_LIST);
    fl_field_free(&root);
    /* add-column: what the record has and the table lacks, nested too */
    json_t *rec2 = json_loads("{\"id\":2,\"o\":{\"k\":3,\"k2\":\"z\"},\"new\":5}", 0, NULL);
    int next = 100;
    CHECK_EQ(fl_sink_evolve_struct(sch, rec2, NULL, false, &next), 2);
    REQUIRE(fl_schema_from_json(sch, &root, &sid, err, sizeof err) == FL_OK);
    CHECK_EQ(root.n_children, 7);
    CHECK_STR(root.children[6].name, "new");
    CHECK_EQ(root.children[4].n_children, 2);
    fl_field_free(&root);
    json_decref(rec2);
    json_decref(sch);
    /* with a Connect schema: its types and optionality, logical types */
    json_t *cs = json_loads("{\"type\":\"struct\",\"fields\":[{\"field\":\"id\",\"type\":\"int32\",\"optional\":false},"
                            "{\"field\":\"at\",\"type\":\"int64\",\"optional\":true,\"name\":"
                            "\"org.apache.kafka.connect.data.Timestamp\"}]}", 0, NULL);
    REQUIRE(fl_sink_infer_schema(rec, cs, false, &sch, err, sizeof err) == FL_OK);
    REQUIRE(fl_schema_from_json(sch, &root, &sid, err, sizeof err) == FL_OK);
    CHECK(root.children[0].kind == FL_TYPE_INT && root.children[0].required);
    CHECK(root.children[1].kind == FL_TYPE_TIMESTAMPTZ && !root.children[1].required);
    fl_field_free(&root);
    json_decref(sch);
    json_decref(cs);
    /* widen and make optional from a Connect schema */
    json_t *st = json_loads("{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"int\"},"
                            "{\"id\":2,\"name\":\"f\",\"required\":false,\"type\":\"float\"}]}", 0, NULL);
    json_t *cs2 = json_loads("{\"type\":\"struct\",\"fields\":[{\"field\":\"a\",\"type\":\"int64\",\"optional\":true},"
                             "{\"field\":\"f\",\"type\":\"double\",\"optional\":true}]}", 0, NULL);
    json_t *r3 = json_loads("{\"a\":1,\"f\":1.5}", 0, NULL);
    next = 10;
    CHECK_EQ(fl_sink_evolve_struct(st, r3, cs2, false, &next), 3);
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(st, "fields"), 0), "type")), "long");
    CHECK(json_is_false(json_object_get(json_array_get(json_object_get(st, "fields"), 0), "required")));
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(st, "fields"), 1), "type")), "double");
    CHECK_EQ(fl_sink_evolve_struct(st, r3, cs2, false, &next), 0);   /* nothing left to change */
    json_decref(st);
    json_decref(cs2);
    json_decref(r3);
    json_t *nul = json_loads("{\"n\":null}", 0, NULL);
    CHECK(fl_sink_infer_schema(nul, NULL, false, &sch, err, sizeof err) == FL_ERR_INVALID);
    json_decref(nul);
    json_decref(rec);
}

FL_TEST(sink_route_value)
{
    json_t *v = json_loads("{\"meta\":{\"table\":\"NS.Orders\",\"n\":7}}", 0, NULL);
    char buf[64];
    CHECK_STR(fl_sink_route_value(v, "meta.table", true, buf, sizeof buf), "ns.orders");
    CHECK_STR(fl_sink_route_value(v, "meta.table", false, buf, sizeof buf), "NS.Orders");
    CHECK_STR(fl_sink_route_value(v, "meta.n", false, buf, sizeof buf), "7");
    CHECK(!fl_sink_route_value(v, "meta.none", false, buf, sizeof buf));
    json_decref(v);
}

FL_TEST(sink_table_offsets_walk_ancestry)
{
    /* the nearest ancestor of main that carries the group's map: a compaction
     * snapshot in between carries none */
    json_t *md = json_loads(
        "{\"current-snapshot-id\":3,\"refs\":{\"main\":{\"snapshot-id\":3,\"type\":\"branch\"}},\"snapshots\":["
        "{\"snapshot-id\":1,\"summary\":{\"floe.offsets.g\":\"{\\\"t\\\":{\\\"0\\\":5}}\"}},"
        "{\"snapshot-id\":2,\"parent-snapshot-id\":1,\"summary\":{\"floe.offsets.g\":\"{\\\"t\\\":{\\\"0\\\":9,\\\"1\\\":4}}\"}},"
        "{\"snapshot-id\":3,\"parent-snapshot-id\":2,\"summary\":{\"operation\":\"replace\"}}]}", 0, NULL);
    REQUIRE(md);
    char key[64];
    fl_sink_offsets_key("g", key, sizeof key);
    CHECK_STR(key, "floe.offsets.g");
    json_t *m = fl_sink_table_offsets(md, 3, key);
    CHECK_EQ(json_integer_value(json_object_get(json_object_get(m, "t"), "0")), 9);
    CHECK_EQ(json_integer_value(json_object_get(json_object_get(m, "t"), "1")), 4);
    json_decref(m);
    m = fl_sink_table_offsets(md, 1, key);
    CHECK_EQ(json_integer_value(json_object_get(json_object_get(m, "t"), "0")), 5);
    json_decref(m);
    bool cut = true;
    m = fl_sink_table_offsets_cut(md, 3, "floe.offsets.other", &cut);
    CHECK_EQ(json_object_size(m), 0);
    CHECK(!cut);   /* the whole history was there: the group never wrote */
    json_decref(m);
    /* snapshots 1 and 2 expired: the walk stops at the missing parent */
    json_array_remove(json_object_get(md, "snapshots"), 0);
    json_array_remove(json_object_get(md, "snapshots"), 0);
    m = fl_sink_table_offsets_cut(md, 3, key, &cut);
    CHECK_EQ(json_object_size(m), 0);
    CHECK(cut);
    json_decref(m);
    json_decref(md);
}

FL_TEST(sink_kafka_metadata_transform)
{
    static const char *base =
        "topics=t\niceberg.tables=a.b\niceberg.catalog.type=rest\niceberg.catalog.uri=http://127.0.0.1:1\n"
        "bootstrap.servers=127.0.0.1:9092\ntransforms=km\n"
        "transforms.km.type=org.apache.iceberg.connect.transforms.KafkaMetadataTransform\n";
    char text[1024], err[512] = "";
    fl_sink_config_t c;
    /* flattened, default name */
    snprintf(text, sizeof text, "%s", base);
    REQUIRE(fl_sink_config_parse(text, strlen(text), &c, err, sizeof err) == FL_OK);
    REQUIRE(fl_sink_config_finish(&c, err, sizeof err) == FL_OK);
    json_t *v = json_pack("{s:i}", "id", 1);
    fl_sink_kafka_metadata(&c, v, "t", 2, 77, -1);
    char *txt = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    CHECK_STR(txt, "{\"_kafka_metadata_offset\":77,\"_kafka_metadata_partition\":2,\"_kafka_metadata_topic\":\"t\",\"id\":1}");
    free(txt);
    json_decref(v);
    fl_sink_config_free(&c);

    /* nested under a name, with the external field; the record schema gains the struct */
    snprintf(text, sizeof text, "%stransforms.km.field_name=kafka\ntransforms.km.nested=true\n"
             "transforms.km.external_field=cluster,east\n", base);
    REQUIRE(fl_sink_config_parse(text, strlen(text), &c, err, sizeof err) == FL_OK);
    REQUIRE(fl_sink_config_finish(&c, err, sizeof err) == FL_OK);
    v = json_pack("{s:i}", "id", 1);
    fl_sink_kafka_metadata(&c, v, "t", 0, 5, 1700000000000LL);
    txt = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    CHECK_STR(txt, "{\"id\":1,\"kafka\":{\"cluster\":\"east\",\"offset\":5,\"partition\":0,\"timestamp\":1700000000000,"
                   "\"topic\":\"t\"}}");
    free(txt);
    json_t *sch = json_loads("{\"type\":\"struct\",\"fields\":[{\"field\":\"id\",\"type\":\"int64\",\"optional\":false}]}", 0, NULL);
    json_t *aug = fl_sink_kafka_metadata_schema(&c, sch);
    json_t *tsch = NULL;
    REQUIRE(fl_sink_infer_schema(v, aug, false, &tsch, err, sizeof err) == FL_OK);
    txt = json_dumps(tsch, JSON_COMPACT);
    CHECK(strstr(txt, "\"name\":\"kafka\",\"required\":true,\"type\":{\"type\":\"struct\",\"fields\":["));
    CHECK(strstr(txt, "\"name\":\"partition\",\"required\":true,\"type\":\"int\""));
    CHECK(strstr(txt, "\"name\":\"timestamp\",\"required\":false,\"type\":\"long\""));
    CHECK(strstr(txt, "\"name\":\"cluster\",\"required\":true,\"type\":\"string\""));
    free(txt);
    CHECK_EQ(json_array_size(json_object_get(sch, "fields")), 1);   /* the input schema is left alone */
    json_decref(tsch);
    json_decref(aug);
    json_decref(sch);
    json_decref(v);
    fl_sink_config_free(&c);
}

/* The direct record path against the general one: when fl_sink_direct_append
 * takes a record, the general path (parse, convert, append) must take it too,
 * with nothing missing, and append the same row; when it refuses, the batch
 * is untouched. Returns whether the direct path took it. */
static bool direct_matches_general(const fl_field_t *root, const char *p, size_t n, bool ci)
{
    fl_vec_t a, b;
    fl_vec_init(&a, root);
    fl_vec_init(&b, root);
    fl_buf_t tmp;
    fl_buf_init(&tmp, 0);
    bool took = fl_sink_direct_append(root, &a, p, n, ci, &tmp);
    bool ok = took ? a.len == 1 : a.len == 0;
    if (took) {
        json_t *doc = NULL, *value = NULL, *schema = NULL, *out = NULL, *missing = json_array();
        char err[512] = "";
        ok = ok && !fl_sink_parse_value(p, n, false, &doc, &value, &schema, err, sizeof err) && value &&
             !fl_sink_convert(root, value, NULL, ci, &out, missing, err, sizeof err) && !json_array_size(missing) &&
             !fl_vec_append_json(&b, out, err, sizeof err) && fl_vec_eq(&a, &b);
        json_decref(out);
        json_decref(missing);
        json_decref(doc);
    }
    if (!ok) fprintf(stderr, "direct path differs on: %.*s\n", (int)n, p);
    fl_buf_free(&tmp);
    fl_vec_free(&a);
    fl_vec_free(&b);
    return took && ok;
}

FL_TEST(sink_direct_path)
{
    static const char *table =
        "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
        "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
        "{\"id\":2,\"name\":\"s\",\"required\":false,\"type\":\"string\"},"
        "{\"id\":3,\"name\":\"i\",\"required\":false,\"type\":\"int\"},"
        "{\"id\":4,\"name\":\"d\",\"required\":false,\"type\":\"double\"},"
        "{\"id\":5,\"name\":\"f\",\"required\":false,\"type\":\"float\"},"
        "{\"id\":6,\"name\":\"b\",\"required\":false,\"type\":\"boolean\"}]}";
    json_t *sj = json_loads(table, 0, NULL);
    fl_field_t root;
    int32_t sid;
    char err[256];
    REQUIRE(fl_schema_from_json(sj, &root, &sid, err, sizeof err) == FL_OK);
    CHECK(fl_sink_direct_usable(&root));
    static const char *direct[] = {
        "{\"id\":1}", " {\"id\" : -7 , \"s\" : \"a b\" } \n", "{\"id\":1,\"s\":\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t\"}",
        "{\"id\":123456789012345678,\"i\":-2147483648,\"d\":1.5e3,\"f\":0.1,\"b\":true}", "{\"id\":0,\"b\":false}",
        "{\"s\":null,\"id\":2,\"d\":5,\"i\":null}", "{\"id\":1,\"s\":\"\"}", "{\"id\":1,\"d\":-0.0,\"f\":3}",
    };
    for (size_t i = 0; i < sizeof direct / sizeof *direct; i++)
        CHECK(direct_matches_general(&root, direct[i], strlen(direct[i]), false));
    CHECK(direct_matches_general(&root, "{\"ID\":1,\"S\":\"x\"}", 16, true));   /* case-insensitive columns */
    static const char *general[] = {
        "{}", "{\"s\":\"x\"}", "{\"id\":null}", "{\"id\":1,\"id\":2}", "{\"id\":1,\"x\":1}", "{\"id\":\"1\"}",
        "{\"id\":1.0}", "{\"id\":1,\"i\":2147483648}", "{\"id\":1,\"s\":5}", "{\"id\":1,\"s\":\"\\u0041\"}",
        "{\"id\":1,\"s\":\"\xc3\xa9\"}", "{\"id\":1,\"s\":\"a\tb\"}", "{\"id\":1,\"b\":1}", "{\"id\":1,\"d\":\"NaN\"}",
        "{\"id\":1234567890123456789}", "{\"id\":01}", "{\"id\":1,}", "{\"id\":1} x", "{\"id\":1", "[1]", "1",
        "{\"id\":1,\"s\":{\"a\":1}}", "{\"id\":1,\"d\":1e400}", "{\"i\\u0064\":1}", "", "{\"ID\":1}",
    };
    for (size_t i = 0; i < sizeof general / sizeof *general; i++)
        CHECK(!direct_matches_general(&root, general[i], strlen(general[i]), false));
    /* random mutations of plain records: whatever the direct path takes, the general path takes the same */
    static const char *seeds[] = {
        "{\"id\":12,\"s\":\"ab\\nc\",\"i\":-5,\"d\":2.5e-1,\"f\":1,\"b\":true}", "{\"b\":false,\"id\":-1,\"s\":null}",
    };
    static const char alphabet[] = "{}[]\":,.-+eE0123456789 \\ntrufalsidbf\x01\x7f\xc3";
    uint32_t seed = 11;
    int took = 0;
    for (int it = 0; it < 20000; it++) {
        char buf[128];
        const char *s0 = seeds[it % 2];
        size_t n = strlen(s0);
        memcpy(buf, s0, n);
        for (int k = 0, nm = 1 + it % 3; k < nm; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % n;
            seed = seed * 1103515245u + 12345u;
            char c = alphabet[(seed >> 8) % (sizeof alphabet - 1)];
            seed = seed * 1103515245u + 12345u;
            switch ((seed >> 8) % 3) {
            case 0: buf[at] = c; break;
            case 1: if (n < sizeof buf) { memmove(buf + at + 1, buf + at, n - at); buf[at] = c; n++; } break;
            default: if (n > 1) { memmove(buf + at, buf + at + 1, n - at - 1); n--; } break;
            }
        }
        fl_vec_t v;
        fl_vec_init(&v, &root);
        fl_buf_t tmp;
        fl_buf_init(&tmp, 0);
        if (fl_sink_direct_append(&root, &v, buf, n, it % 5 == 0, &tmp)) {
            took++;
            CHECK(direct_matches_general(&root, buf, n, it % 5 == 0));
        } else {
            CHECK_EQ(v.len, 0);
        }
        fl_buf_free(&tmp);
        fl_vec_free(&v);
    }
    if (took <= 500) fprintf(stderr, "direct path took %d\n", took);
    CHECK(took > 500);   /* the mutations leave many records the direct path takes */
    /* long strings (scanned 8 bytes at a time): one byte at each position ends the plain
     * run exactly there: quotes and backslashes as escapes, controls and non-ASCII fall back */
    static const unsigned char bytes[] = { 0x01, 0x1f, 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7e, 0x7f, 0x80, 0xc3, 0xff };
    for (size_t k = 0; k < 21; k++) {
        for (size_t bi = 0; bi < sizeof bytes + 2; bi++) {
            char rec[96];
            int n = snprintf(rec, sizeof rec, "{\"id\":1,\"s\":\"%.*s", (int)k, "abcdefghijklmnopqrstuvwxyz");
            bool plain = true;
            if (bi < sizeof bytes) {
                rec[n++] = (char)bytes[bi];
                plain = bytes[bi] >= 0x20 && bytes[bi] < 0x80;
            } else {
                rec[n++] = '\\';
                rec[n++] = bi == sizeof bytes ? '"' : '\\';
            }
            n += snprintf(rec + n, sizeof rec - (size_t)n, "%.*s\"}", (int)(20 - k), "ABCDEFGHIJKLMNOPQRSTUVWXYZ");
            CHECK_EQ(direct_matches_general(&root, rec, (size_t)n, false), plain);
        }
    }
    /* tables with other kinds of columns take the general path */
    fl_field_t other;
    json_t *oj = json_loads("{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,\"name\":\"t\",\"required\":false,"
                            "\"type\":\"timestamptz\"}]}", 0, NULL);
    REQUIRE(fl_schema_from_json(oj, &other, &sid, err, sizeof err) == FL_OK);
    CHECK(!fl_sink_direct_usable(&other));
    fl_field_free(&other);
    json_decref(oj);
    fl_field_free(&root);
    json_decref(sj);
}
