/* floe sink's Avro input (src/sink/registry.c): Avro datums encoded with
 * floe's own encoder, decoded through the shared schema plan
 * (format/avro_schema.h) into the JsonConverter forms, the Connect schema
 * built from the Avro schema, and malformed datums refused; the
 * AvroConverter configuration keys. */
#include "test.h"
#include <jansson.h>
#include <string.h>
#include "format/avro.h"
#include "format/avro_schema.h"
#include "sink/config.h"
#include "sink/convert.h"
#include "sink/registry.h"

static const char *SCHEMA =
    "{\"type\":\"record\",\"name\":\"E\",\"fields\":["
    "{\"name\":\"id\",\"type\":\"long\"},"
    "{\"name\":\"u\",\"type\":[\"null\",\"string\"]},"
    "{\"name\":\"multi\",\"type\":[\"null\",\"int\",\"string\"]},"
    "{\"name\":\"k\",\"type\":{\"type\":\"enum\",\"name\":\"K\",\"symbols\":[\"A\",\"B\"]}},"
    "{\"name\":\"d\",\"type\":{\"type\":\"fixed\",\"name\":\"D\",\"size\":4,\"logicalType\":\"decimal\",\"precision\":9,\"scale\":2}},"
    "{\"name\":\"g\",\"type\":{\"type\":\"fixed\",\"name\":\"G\",\"size\":16,\"logicalType\":\"uuid\"}},"
    "{\"name\":\"ts\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-micros\"}},"
    "{\"name\":\"t\",\"type\":{\"type\":\"long\",\"logicalType\":\"time-micros\"}},"
    "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":\"double\"}},"
    "{\"name\":\"again\",\"type\":\"K\"}]}";

static void encode(fl_buf_t *b, int branch, int64_t enum_ix)
{
    fl_avro_put_long(b, 42);
    fl_avro_put_union(b, 1);
    fl_avro_put_cstr(b, "hi");
    fl_avro_put_union(b, branch);
    if (branch == 1) fl_avro_put_int(b, 7);
    if (branch == 2) fl_avro_put_cstr(b, "seven");
    fl_avro_put_long(b, enum_ix);
    const unsigned char dec[4] = { 0xff, 0xff, 0xfe, 0x0c };   /* -500 -> -5.00 */
    fl_avro_put_fixed(b, dec, 4);
    const unsigned char g[16] = { 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8 };
    fl_avro_put_fixed(b, g, 16);
    fl_avro_put_long(b, -1);                 /* 1969-12-31T23:59:59.999999Z */
    fl_avro_put_long(b, 3723000004LL);       /* 01:02:03.000004 */
    fl_avro_put_block_count(b, 1);
    fl_avro_put_cstr(b, "x");
    fl_avro_put_double(b, 1.5);
    fl_avro_put_block_count(b, 0);
    fl_avro_put_long(b, 1);
}

FL_TEST(sink_avro_datum_and_connect_schema)
{
    json_t *js = json_loads(SCHEMA, 0, NULL);
    REQUIRE(js);
    fl_avro_schema_t s;
    memset(&s, 0, sizeof s);
    char err[256] = "";
    int32_t root = fl_avro_schema_parse(&s, js, err, sizeof err);
    json_decref(js);
    REQUIRE(root >= 0);

    json_t *cs = fl_sink_avro_connect_schema(&s, root);
    REQUIRE(cs);
    char *txt = json_dumps(cs, JSON_COMPACT | JSON_SORT_KEYS);
    CHECK(strstr(txt, "{\"field\":\"u\",\"optional\":true,\"type\":\"string\"}"));
    CHECK(strstr(txt, "\"name\":\"io.confluent.connect.avro.Union\""));
    CHECK(strstr(txt, "\"name\":\"org.apache.kafka.connect.data.Decimal\",\"optional\":false,"
                      "\"parameters\":{\"connect.decimal.precision\":\"9\",\"scale\":\"2\"}"));
    CHECK(strstr(txt, "{\"field\":\"g\",\"name\":\"uuid\",\"optional\":false,\"type\":\"string\"}"));
    CHECK(strstr(txt, "{\"field\":\"ts\",\"name\":\"org.apache.kafka.connect.data.Timestamp\""));
    free(txt);

    fl_buf_t b;
    fl_buf_init(&b, 0);
    encode(&b, 2, 1);
    fl_avro_dec_t d;
    fl_avro_dec_init(&d, fl_slice(b.ptr, b.len));
    json_t *v = NULL;
    REQUIRE(fl_sink_avro_datum(&s, root, &d, &v, err, sizeof err) == FL_OK);
    CHECK_EQ(fl_avro_dec_left(&d), 0);
    txt = json_dumps(v, JSON_COMPACT);
    CHECK_STR(txt, "{\"id\":42,\"u\":\"hi\",\"multi\":{\"string\":\"seven\"},\"k\":\"B\",\"d\":\"///+DA==\","
                   "\"g\":\"12345678-9abc-def0-0102-030405060708\",\"ts\":\"1969-12-31T23:59:59.999999Z\","
                   "\"t\":\"01:02:03.000004\",\"m\":{\"x\":1.5},\"again\":\"B\"}");
    free(txt);

    /* converted against an inferred table: the Connect decimal becomes -5.00, the uuid and the
     * timestamp strings pass to the column writer */
    json_t *tsch = NULL;
    REQUIRE(fl_sink_infer_schema(v, cs, false, &tsch, err, sizeof err) == FL_OK);
    txt = json_dumps(tsch, JSON_COMPACT);
    CHECK(strstr(txt, "\"name\":\"d\",\"required\":true,\"type\":\"decimal(38, 2)\""));
    CHECK(strstr(txt, "\"name\":\"g\",\"required\":true,\"type\":\"uuid\""));
    CHECK(strstr(txt, "\"name\":\"ts\",\"required\":true,\"type\":\"timestamptz\""));
    CHECK(strstr(txt, "\"name\":\"t\",\"required\":true,\"type\":\"time\""));
    free(txt);
    json_decref(tsch);
    json_decref(v);

    /* malformed: enum index, union branch, truncation, trailing zero-width map items */
    const struct { int branch; int64_t enum_ix; size_t cut; } bad[] = { { 1, 2, 0 }, { 1, -1, 0 }, { 1, 0, 5 } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fl_buf_reset(&b);
        encode(&b, bad[i].branch, bad[i].enum_ix);
        fl_avro_dec_init(&d, fl_slice(b.ptr, b.len - bad[i].cut));
        v = NULL;
        CHECK(fl_sink_avro_datum(&s, root, &d, &v, err, sizeof err) == FL_ERR_INVALID);
        CHECK(!v);
    }
    fl_buf_reset(&b);
    fl_avro_put_long(&b, 1);
    fl_avro_put_union(&b, 3);   /* only 2 branches */
    fl_avro_dec_init(&d, fl_slice(b.ptr, b.len));
    CHECK(fl_sink_avro_datum(&s, root, &d, &v, err, sizeof err) == FL_ERR_INVALID);
    fl_buf_free(&b);
    json_decref(cs);
    fl_avro_schema_free(&s);
}

FL_TEST(sink_avro_recursive_schema_is_refused)
{
    json_t *js = json_loads("{\"type\":\"record\",\"name\":\"N\",\"fields\":[{\"name\":\"next\",\"type\":[\"null\",\"N\"]}]}",
                            0, NULL);
    fl_avro_schema_t s;
    memset(&s, 0, sizeof s);
    char err[256] = "";
    int32_t root = fl_avro_schema_parse(&s, js, err, sizeof err);
    json_decref(js);
    REQUIRE(root >= 0);
    CHECK(!fl_sink_avro_connect_schema(&s, root));   /* no Connect schema: no table can be made of it */
    fl_avro_schema_free(&s);
}

static fl_err_t parse(const char *text, fl_sink_config_t *c, char *err, size_t n)
{
    fl_err_t e = fl_sink_config_parse(text, strlen(text), c, err, n);
    if (!e) e = fl_sink_config_finish(c, err, n);
    return e;
}

FL_TEST(sink_config_avro_converter)
{
    static const char *base =
        "topics=t\niceberg.tables=a.b\niceberg.catalog.type=rest\niceberg.catalog.uri=http://127.0.0.1:1\n"
        "bootstrap.servers=127.0.0.1:9092\n";
    char text[2048], err[512] = "";
    fl_sink_config_t c;
    snprintf(text, sizeof text, "%svalue.converter=io.confluent.connect.avro.AvroConverter\n"
             "value.converter.schema.registry.url=http://127.0.0.1:8081\n"
             "value.converter.basic.auth.credentials.source=USER_INFO\n"
             "value.converter.basic.auth.user.info=u:p\nvalue.converter.auto.register.schemas=false\n", base);
    REQUIRE(parse(text, &c, err, sizeof err) == FL_OK);
    CHECK(c.avro);
    CHECK_STR(c.registry_url, "http://127.0.0.1:8081");
    CHECK_STR(c.registry_user_info, "u:p");
    fl_sink_config_free(&c);

    snprintf(text, sizeof text, "%svalue.converter=io.confluent.connect.avro.AvroConverter\n", base);
    CHECK(parse(text, &c, err, sizeof err) == FL_ERR_INVALID);
    CHECK(strstr(err, "value.converter.schema.registry.url is required"));
    fl_sink_config_free(&c);

    snprintf(text, sizeof text, "%svalue.converter.schema.registry.url=http://x\n", base);
    CHECK(parse(text, &c, err, sizeof err) == FL_ERR_INVALID);
    CHECK(strstr(err, "only with value.converter=io.confluent.connect.avro.AvroConverter"));
    fl_sink_config_free(&c);

    snprintf(text, sizeof text, "%svalue.converter=io.confluent.connect.avro.AvroConverter\n"
             "value.converter.schema.registry.url=http://x\nvalue.converter.basic.auth.credentials.source=SASL_INHERIT\n",
             base);
    CHECK(parse(text, &c, err, sizeof err) == FL_ERR_INVALID);
    CHECK(strstr(err, "SASL_INHERIT"));
    fl_sink_config_free(&c);
}
