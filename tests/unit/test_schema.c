/* Iceberg schema JSON <-> field trees, projections, vector values and
 * partition spec binding (src/iceberg/schema.c). */
#include "test.h"
#include <jansson.h>
#include <stdlib.h>
#include "iceberg/schema.h"

static const char *SCHEMA =
    "{\"type\":\"struct\",\"schema-id\":3,\"fields\":["
    "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
    "{\"id\":2,\"name\":\"tags\",\"required\":false,\"type\":{\"type\":\"list\",\"element-id\":7,"
    "\"element\":\"string\",\"element-required\":false}},"
    "{\"id\":3,\"name\":\"attrs\",\"required\":false,\"type\":{\"type\":\"map\",\"key-id\":8,"
    "\"key\":\"string\",\"value-id\":9,\"value\":\"double\",\"value-required\":true}},"
    "{\"id\":4,\"name\":\"price\",\"required\":false,\"type\":\"decimal(9, 2)\"},"
    "{\"id\":5,\"name\":\"blob\",\"required\":false,\"type\":\"fixed[16]\"},"
    "{\"id\":6,\"name\":\"loc\",\"required\":false,\"type\":{\"type\":\"struct\",\"fields\":["
    "{\"id\":10,\"name\":\"lat\",\"required\":true,\"type\":\"double\"},"
    "{\"id\":11,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz_ns\"}]}},"
    "{\"id\":12,\"name\":\"u\",\"required\":false,\"type\":\"uuid\"},"
    "{\"id\":13,\"name\":\"t\",\"required\":false,\"type\":\"timestamp_ns\"},"
    "{\"id\":14,\"name\":\"day\",\"required\":false,\"type\":\"date\"},"
    "{\"id\":15,\"name\":\"tm\",\"required\":false,\"type\":\"time\"},"
    "{\"id\":16,\"name\":\"b\",\"required\":false,\"type\":\"boolean\"},"
    "{\"id\":17,\"name\":\"f\",\"required\":false,\"type\":\"float\"},"
    "{\"id\":18,\"name\":\"bin\",\"required\":false,\"type\":\"binary\"},"
    "{\"id\":19,\"name\":\"i\",\"required\":false,\"type\":\"int\"},"
    "{\"id\":20,\"name\":\"ts0\",\"required\":false,\"type\":\"timestamp\"},"
    "{\"id\":21,\"name\":\"tz0\",\"required\":false,\"type\":\"timestamptz\"},"
    "{\"id\":22,\"name\":\"s\",\"required\":false,\"type\":\"string\"}]}";

static json_t *load(const char *s)
{
    json_error_t e;
    return json_loads(s, 0, &e);
}

FL_TEST(schema_json_round_trip)
{
    json_t *j = load(SCHEMA);
    REQUIRE(j);
    fl_field_t root;
    int32_t sid = -1;
    char err[200] = "";
    REQUIRE(fl_schema_from_json(j, &root, &sid, err, sizeof err) == FL_OK);
    CHECK_EQ(sid, 3);
    CHECK_EQ(root.id, 0);
    CHECK_STR(root.name, "table");
    CHECK_EQ(root.n_children, 17);
    CHECK_EQ(root.children[1].kind, FL_TYPE_LIST);
    CHECK_EQ(root.children[1].children[0].id, 7);
    CHECK(!root.children[1].children[0].required);
    CHECK_EQ(root.children[2].kind, FL_TYPE_MAP);
    CHECK_EQ(root.children[2].children[0].id, 8);
    CHECK(root.children[2].children[0].required);
    CHECK_EQ(root.children[2].children[1].id, 9);
    CHECK(root.children[2].children[1].required);
    CHECK_EQ(root.children[3].kind, FL_TYPE_DECIMAL);
    CHECK_EQ(root.children[3].precision, 9);
    CHECK_EQ(root.children[3].scale, 2);
    CHECK_EQ(root.children[4].kind, FL_TYPE_FIXED);
    CHECK_EQ(root.children[4].length, 16);
    CHECK_EQ(root.children[5].children[1].kind, FL_TYPE_TIMESTAMPTZ_NS);
    json_t *back = fl_schema_to_json(&root, sid);
    CHECK(json_equal(back, j));
    fl_field_t again;
    REQUIRE(fl_schema_from_json(back, &again, NULL, err, sizeof err) == FL_OK);
    CHECK(fl_field_eq(&root, &again));
    /* Java writes "decimal(9, 2)"; readers also accept no spaces */
    char *dumped = json_dumps(back, JSON_COMPACT);
    CHECK(strstr(dumped, "\"decimal(9, 2)\"") != NULL);
    CHECK(strstr(dumped, "\"fixed[16]\"") != NULL);
    free(dumped);
    json_decref(back);
    fl_field_free(&again);
    fl_field_free(&root);
    json_decref(j);
}

static fl_err_t parse_str(const char *s, char *err, size_t errlen)
{
    json_t *j = load(s);
    if (!j) return FL_ERR_NOT_FOUND;
    fl_field_t root;
    fl_err_t e = fl_schema_from_json(j, &root, NULL, err, errlen);
    if (!e) fl_field_free(&root);
    json_decref(j);
    return e;
}

FL_TEST(schema_json_malformed)
{
    char err[200];
    const char *bad[] = {
        "[]",
        "{\"type\":\"list\",\"fields\":[]}",
        "{\"type\":\"struct\"}",
        "{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"required\":true,\"type\":\"int\"}]}",
        "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"int\"},"
        "{\"id\":1,\"name\":\"b\",\"required\":true,\"type\":\"int\"}]}",
        "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"nope\"}]}",
        "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"decimal(39,2)\"}]}",
        "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"decimal(9,10)\"}]}",
        "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"fixed[0]\"}]}",
        "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"fixed[3]x\"}]}",
        "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":\"yes\",\"type\":\"int\"}]}",
        "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,"
        "\"type\":{\"type\":\"list\",\"element\":\"int\",\"element-required\":true}}]}",
        "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,"
        "\"type\":{\"type\":\"map\",\"key-id\":2,\"key\":\"int\",\"value-id\":1,\"value\":\"int\","
        "\"value-required\":true}}]}",
        "{\"type\":\"struct\",\"fields\":[{\"id\":-4,\"name\":\"a\",\"required\":true,\"type\":\"int\"}]}",
        "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"\",\"required\":true,\"type\":\"int\"}]}",
        "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"variant\"}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        fl_err_t e = parse_str(bad[i], err, sizeof err);
        if (e != FL_ERR_INVALID) FL_FAIL("case %zu accepted (%d)", i, e);
        else if (!err[0]) FL_FAIL("case %zu: no message", i);
    }
    CHECK_EQ(parse_str("{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,"
                       "\"type\":\"decimal(38,0)\"}]}", err, sizeof err), FL_OK);
    /* deep nesting is refused, not a stack overflow */
    fl_buf_t b;
    fl_buf_init(&b, 0);
    fl_buf_adds(&b, "{\"type\":\"struct\",\"fields\":[");
    for (int i = 0; i < 200; i++)
        fl_buf_printf(&b, "{\"id\":%d,\"name\":\"n\",\"required\":true,\"type\":{\"type\":\"struct\",\"fields\":[", i + 1);
    fl_buf_adds(&b, "{\"id\":9999,\"name\":\"x\",\"required\":true,\"type\":\"int\"}");
    for (int i = 0; i < 200; i++) fl_buf_adds(&b, "]}}");
    fl_buf_adds(&b, "]}");
    CHECK_EQ(parse_str(b.ptr, err, sizeof err), FL_ERR_INVALID);
    fl_buf_free(&b);
    /* too many fields */
    fl_buf_init(&b, 0);
    fl_buf_adds(&b, "{\"type\":\"struct\",\"fields\":[");
    for (int i = 0; i < 10001; i++)
        fl_buf_printf(&b, "%s{\"id\":%d,\"name\":\"c%d\",\"required\":true,\"type\":\"int\"}", i ? "," : "", i + 1, i);
    fl_buf_adds(&b, "]}");
    CHECK_EQ(parse_str(b.ptr, err, sizeof err), FL_ERR_INVALID);
    fl_buf_free(&b);
}

FL_TEST(schema_from_metadata_and_project)
{
    char *md = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&md, &n);
    fprintf(f, "{\"format-version\":2,\"current-schema-id\":3,\"schemas\":[{\"type\":\"struct\",\"schema-id\":1,"
               "\"fields\":[{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"}]},%s],"
               "\"default-spec-id\":1,\"partition-specs\":[{\"spec-id\":0,\"fields\":[]},"
               "{\"spec-id\":1,\"fields\":[{\"source-id\":1,\"field-id\":1000,\"name\":\"id_bucket\","
               "\"transform\":\"bucket[16]\"},{\"source-id\":14,\"field-id\":1001,\"name\":\"day_month\","
               "\"transform\":\"month\"},{\"source-id\":21,\"field-id\":1002,\"name\":\"tz0_day\","
               "\"transform\":\"day\"},{\"source-id\":22,\"field-id\":1003,\"name\":\"s_trunc\","
               "\"transform\":\"truncate[4]\"},{\"source-id\":99,\"field-id\":1004,\"name\":\"gone\","
               "\"transform\":\"void\"}]}]}", SCHEMA);
    fclose(f);
    json_t *j = load(md);
    free(md);
    REQUIRE(j);
    char err[200];
    fl_field_t root, old;
    int32_t sid;
    REQUIRE(fl_schema_from_metadata(j, -1, &root, &sid, err, sizeof err) == FL_OK);
    CHECK_EQ(sid, 3);
    CHECK_EQ(root.n_children, 17);
    REQUIRE(fl_schema_from_metadata(j, 1, &old, &sid, err, sizeof err) == FL_OK);
    CHECK_EQ(sid, 1);
    CHECK_EQ(old.n_children, 1);
    fl_field_free(&old);
    CHECK_EQ(fl_schema_from_metadata(j, 7, &old, &sid, err, sizeof err), FL_ERR_NOT_FOUND);

    fl_part_spec_t spec;
    REQUIRE(fl_part_spec_from_metadata(j, -1, &root, &spec, err, sizeof err) == FL_OK);
    CHECK_EQ(spec.spec_id, 1);
    REQUIRE(spec.n_fields == 5);
    CHECK_EQ(spec.fields[0].transform.kind, FL_ICE_T_BUCKET);
    CHECK_EQ(spec.fields[0].transform.param, 16);
    CHECK_EQ(spec.fields[0].result_kind, FL_ICE_INT);
    CHECK_EQ(spec.fields[0].source->id, 1);
    CHECK_EQ(spec.fields[1].result_kind, FL_ICE_INT);
    CHECK_EQ(spec.fields[2].result_kind, FL_ICE_DATE);
    CHECK_EQ(spec.fields[3].result_kind, FL_ICE_STRING);
    CHECK(spec.fields[4].source == NULL);
    CHECK_EQ(spec.fields[4].field_id, 1004);
    CHECK(!fl_part_spec_unpartitioned(&spec));
    fl_part_spec_free(&spec);
    REQUIRE(fl_part_spec_from_metadata(j, 0, &root, &spec, err, sizeof err) == FL_OK);
    CHECK_EQ(spec.n_fields, 0);
    CHECK(fl_part_spec_unpartitioned(&spec));
    fl_part_spec_free(&spec);

    /* bad specs */
    const char *bad[] = {
        "{\"spec-id\":0,\"fields\":[{\"source-id\":16,\"field-id\":1000,\"name\":\"b\",\"transform\":\"bucket[4]\"}]}",
        "{\"spec-id\":0,\"fields\":[{\"source-id\":22,\"field-id\":1000,\"name\":\"b\",\"transform\":\"hour\"}]}",
        "{\"spec-id\":0,\"fields\":[{\"source-id\":99,\"field-id\":1000,\"name\":\"b\",\"transform\":\"identity\"}]}",
        "{\"spec-id\":0,\"fields\":[{\"source-id\":2,\"field-id\":1000,\"name\":\"b\",\"transform\":\"identity\"}]}",
        "{\"spec-id\":0,\"fields\":[{\"source-id\":1,\"field-id\":1000,\"name\":\"b\",\"transform\":\"bucket[0]\"}]}",
        "{\"spec-id\":0,\"fields\":[{\"source-id\":1,\"field-id\":1000,\"name\":\"b\",\"transform\":\"identity\"},"
        "{\"source-id\":1,\"field-id\":1000,\"name\":\"c\",\"transform\":\"identity\"}]}",
        "{\"spec-id\":0,\"fields\":[{\"field-id\":1000,\"name\":\"b\",\"transform\":\"identity\"}]}",
        "{\"spec-id\":0}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *s = load(bad[i]);
        err[0] = 0;
        fl_err_t e = fl_part_spec_from_json(s, &root, &spec, err, sizeof err);
        if (e != FL_ERR_INVALID || !err[0]) FL_FAIL("bad spec %zu: %d", i, e);
        json_decref(s);
    }

    /* projection: order follows names, nested dotted paths keep only the picked leaves */
    const char *names[] = { "price", "loc.ts", "id" };
    fl_field_t p;
    REQUIRE(fl_schema_project(&root, names, 3, &p, err, sizeof err) == FL_OK);
    REQUIRE(p.n_children == 3);
    CHECK_STR(p.children[0].name, "price");
    CHECK_EQ(p.children[0].precision, 9);
    CHECK_STR(p.children[1].name, "loc");
    REQUIRE(p.children[1].n_children == 1);
    CHECK_EQ(p.children[1].children[0].id, 11);
    CHECK_EQ(p.children[2].id, 1);
    fl_field_free(&p);
    const char *names2[] = { "loc.ts", "loc" };
    REQUIRE(fl_schema_project(&root, names2, 2, &p, err, sizeof err) == FL_OK);
    REQUIRE(p.n_children == 1);
    CHECK_EQ(p.children[0].n_children, 2);
    fl_field_free(&p);
    const char *names3[] = { "loc.nope" };
    CHECK_EQ(fl_schema_project(&root, names3, 1, &p, err, sizeof err), FL_ERR_NOT_FOUND);
    const char *names4[] = { "tags.element" };
    CHECK_EQ(fl_schema_project(&root, names4, 1, &p, err, sizeof err), FL_ERR_NOT_FOUND);
    fl_field_free(&root);
    json_decref(j);
}

FL_TEST(schema_vec_ice_value)
{
    fl_field_t d, s, u, l;
    fl_field_set(&d, 1, "d", false, FL_TYPE_DECIMAL);
    d.precision = 20;
    d.scale = 2;
    fl_field_set(&s, 2, "s", false, FL_TYPE_STRING);
    fl_field_set(&u, 3, "u", false, FL_TYPE_UUID);
    fl_field_set(&l, 4, "l", false, FL_TYPE_TIMESTAMPTZ);
    fl_vec_t vd, vs, vu, vl;
    fl_vec_init(&vd, &d);
    fl_vec_init(&vs, &s);
    fl_vec_init(&vu, &u);
    fl_vec_init(&vl, &l);
    fl_vec_append_i128(&vd, 1420);    /* 14.20 -> 05 8c */
    fl_vec_append_i128(&vd, -1);      /* ff */
    fl_vec_append_i128(&vd, 128);     /* 00 80 */
    fl_vec_append_null(&vd);
    fl_vec_append_i128(&vd, (__int128)1 << 70);
    fl_vec_append_bytes(&vs, "iceberg", 7);
    unsigned char uu[16] = { 0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4b, 0xbd, 0xa4, 0x79, 0x3f, 0x34, 0x9c, 0xb7, 0x85, 0xe7 };
    fl_vec_append_bytes(&vu, uu, 16);
    fl_vec_append_i64(&vl, 1510871468000000LL);
    fl_ice_value_t v;
    REQUIRE(fl_vec_ice_value(&vd, 0, &v) == FL_OK);
    CHECK_EQ(v.kind, FL_ICE_DECIMAL);
    CHECK_EQ(v.u.dec.len, 2);
    CHECK_EQ(v.u.dec.unscaled[0], 0x05);
    CHECK_EQ(v.u.dec.unscaled[1], 0x8c);
    CHECK_EQ(v.u.dec.scale, 2);
    int32_t h;
    REQUIRE(fl_ice_hash(&v, &h) == FL_OK);
    CHECK_EQ(h, -500754589);
    REQUIRE(fl_vec_ice_value(&vd, 1, &v) == FL_OK);
    CHECK_EQ(v.u.dec.len, 1);
    CHECK_EQ(v.u.dec.unscaled[0], 0xff);
    REQUIRE(fl_vec_ice_value(&vd, 2, &v) == FL_OK);
    CHECK_EQ(v.u.dec.len, 2);
    CHECK_EQ(v.u.dec.unscaled[0], 0x00);
    CHECK_EQ(v.u.dec.unscaled[1], 0x80);
    REQUIRE(fl_vec_ice_value(&vd, 3, &v) == FL_OK);
    CHECK_EQ(v.kind, FL_ICE_NULL);
    REQUIRE(fl_vec_ice_value(&vd, 4, &v) == FL_OK);
    CHECK_EQ(v.u.dec.len, 9);
    CHECK_EQ(v.u.dec.unscaled[0], 0x40);
    CHECK_EQ(fl_vec_ice_value(&vd, 5, &v), FL_ERR_INVALID);
    REQUIRE(fl_vec_ice_value(&vs, 0, &v) == FL_OK);
    CHECK_EQ(v.kind, FL_ICE_STRING);
    REQUIRE(v.u.bytes.len == 7);
    CHECK_MEM(v.u.bytes.ptr, "iceberg", 7);
    REQUIRE(fl_ice_hash(&v, &h) == FL_OK);
    CHECK_EQ(h, 1210000089);
    REQUIRE(fl_vec_ice_value(&vu, 0, &v) == FL_OK);
    CHECK_EQ(v.kind, FL_ICE_UUID);
    REQUIRE(fl_ice_hash(&v, &h) == FL_OK);
    CHECK_EQ(h, 1488055340);
    REQUIRE(fl_vec_ice_value(&vl, 0, &v) == FL_OK);
    CHECK_EQ(v.kind, FL_ICE_TIMESTAMPTZ);
    CHECK_EQ(v.u.l, 1510871468000000LL);
    CHECK_EQ(fl_ice_kind_of_type(FL_TYPE_TIMESTAMP_NS), FL_ICE_TIMESTAMP_NS);
    CHECK_EQ(fl_ice_kind_of_type(FL_TYPE_STRUCT), FL_ICE_NULL);
    fl_vec_free(&vd);
    fl_vec_free(&vs);
    fl_vec_free(&vu);
    fl_vec_free(&vl);
    fl_field_free(&d);
    fl_field_free(&s);
    fl_field_free(&u);
    fl_field_free(&l);
}
