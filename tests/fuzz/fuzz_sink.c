/* Fuzz target: floe sink's record converter. The input is a Kafka message value,
 * optionally preceded by a table schema and a "\n%%\n" line (else a fixed schema with every
 * kind of column). The value is parsed with and without the Connect envelope, converted,
 * appended to columns (which must either take the row whole or refuse it), its type
 * inferred, and the schema evolved with it; every inferred or evolved schema must parse as
 * an Iceberg schema. The direct path (fl_sink_direct_append) either refuses the value with
 * the batch untouched, or appends exactly the row the general path appends, with no field
 * missing. Nothing may crash or leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "format/json_rows.h"
#include "iceberg/schema.h"
#include "sink/convert.h"

static const char *SCHEMA =
    "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
    "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
    "{\"id\":2,\"name\":\"s\",\"required\":false,\"type\":\"string\"},"
    "{\"id\":3,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz\"},"
    "{\"id\":4,\"name\":\"t\",\"required\":false,\"type\":\"timestamp_ns\"},"
    "{\"id\":5,\"name\":\"d\",\"required\":false,\"type\":\"date\"},"
    "{\"id\":6,\"name\":\"tm\",\"required\":false,\"type\":\"time\"},"
    "{\"id\":7,\"name\":\"b\",\"required\":false,\"type\":\"boolean\"},"
    "{\"id\":8,\"name\":\"bin\",\"required\":false,\"type\":\"binary\"},"
    "{\"id\":9,\"name\":\"fx\",\"required\":false,\"type\":\"fixed[4]\"},"
    "{\"id\":10,\"name\":\"dec\",\"required\":false,\"type\":\"decimal(38, 4)\"},"
    "{\"id\":11,\"name\":\"u\",\"required\":false,\"type\":\"uuid\"},"
    "{\"id\":12,\"name\":\"f\",\"required\":false,\"type\":\"float\"},"
    "{\"id\":13,\"name\":\"i\",\"required\":false,\"type\":\"int\"},"
    "{\"id\":14,\"name\":\"o\",\"required\":false,\"type\":{\"type\":\"struct\",\"fields\":["
    "{\"id\":15,\"name\":\"x\",\"required\":true,\"type\":\"double\"}]}},"
    "{\"id\":16,\"name\":\"l\",\"required\":false,\"type\":{\"type\":\"list\",\"element-id\":17,"
    "\"element\":\"int\",\"element-required\":true}},"
    "{\"id\":18,\"name\":\"m\",\"required\":false,\"type\":{\"type\":\"map\",\"key-id\":19,\"key\":\"string\","
    "\"value-id\":20,\"value\":\"long\",\"value-required\":false}}]}";

static void check_schema(json_t *sch)
{
    fl_field_t root;
    int32_t sid;
    char err[256];
    if (fl_schema_from_json(sch, &root, &sid, err, sizeof err)) abort();
    fl_field_free(&root);
}

static void one(const fl_field_t *root, json_t *table, const uint8_t *p, size_t n, bool envelope)
{
    json_t *doc = NULL, *value = NULL, *schema = NULL, *out = NULL;
    char err[512];
    if (fl_sink_parse_value(p, n, envelope, &doc, &value, &schema, err, sizeof err) || !value) goto out;
    json_t *missing = json_array();
    if (!fl_sink_convert(root, value, schema, envelope, &out, missing, err, sizeof err)) {
        fl_vec_t v;
        fl_vec_init(&v, root);
        fl_err_t e = fl_vec_append_json(&v, out, err, sizeof err);
        if ((e && v.len) || (!e && v.len != 1)) abort();   /* all of the row or none */
        fl_vec_free(&v);
    }
    json_decref(missing);
    json_t *sch = NULL;
    if (!fl_sink_infer_schema(value, schema, !envelope, &sch, err, sizeof err)) check_schema(sch);
    json_decref(sch);
    json_t *ev = json_deep_copy(table);
    int next = 1000;
    fl_sink_evolve_struct(ev, value, schema, envelope, &next);
    check_schema(ev);
    json_decref(ev);
    char buf[64];
    fl_sink_route_value(value, "o.x", envelope, buf, sizeof buf);
out:
    json_decref(out);
    json_decref(doc);
}

static void direct(const fl_field_t *root, const uint8_t *p, size_t n, bool ci)
{
    fl_vec_t a;
    fl_vec_init(&a, root);
    fl_buf_t tmp;
    fl_buf_init(&tmp, 0);
    if (fl_sink_direct_append(root, &a, p, n, ci, &tmp)) {
        json_t *doc = NULL, *value = NULL, *schema = NULL, *out = NULL, *missing = json_array();
        char err[512];
        fl_vec_t b;
        fl_vec_init(&b, root);
        if (a.len != 1 || fl_sink_parse_value(p, n, false, &doc, &value, &schema, err, sizeof err) || !value ||
            fl_sink_convert(root, value, NULL, ci, &out, missing, err, sizeof err) || json_array_size(missing) ||
            fl_vec_append_json(&b, out, err, sizeof err) || !fl_vec_eq(&a, &b))
            abort();
        fl_vec_free(&b);
        json_decref(out);
        json_decref(missing);
        json_decref(doc);
    } else if (a.len) {
        abort();
    }
    fl_buf_free(&tmp);
    fl_vec_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    json_t *table = NULL;
    size_t off = 0;
    for (size_t i = 0; i + 4 <= size; i++)
        if (!memcmp(s + i, "\n%%\n", 4)) {
            table = json_loadb(s, i, 0, NULL);
            off = i + 4;
            break;
        }
    if (!table) table = json_loads(SCHEMA, 0, NULL);
    fl_field_t root;
    int32_t sid;
    char err[256];
    if (!fl_schema_from_json(table, &root, &sid, err, sizeof err)) {
        one(&root, table, data + off, size - off, false);
        one(&root, table, data + off, size - off, true);
        direct(&root, data + off, size - off, false);
        direct(&root, data + off, size - off, true);
        fl_field_free(&root);
    }
    json_decref(table);
    return 0;
}
