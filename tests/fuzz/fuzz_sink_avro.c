/* Fuzz target: floe sink's Avro input (src/sink/registry.c). The input is an Avro
 * schema (JSON) and a "\n%%\n" line before the datum bytes, else the datum alone
 * against a fixed schema with every kind of type and logical type. The schema is
 * parsed into the shared plan (format/avro_schema.h), its Connect schema built, the
 * datum decoded; a decoded record is given a table schema by inference (which must
 * parse as an Iceberg schema), converted against it and appended to columns (all of
 * the row or none). Nothing may crash or leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "format/avro.h"
#include "format/avro_schema.h"
#include "format/json_rows.h"
#include "iceberg/schema.h"
#include "sink/convert.h"
#include "sink/registry.h"

static const char *SCHEMA =
    "{\"type\":\"record\",\"name\":\"E\",\"fields\":["
    "{\"name\":\"id\",\"type\":\"long\"},"
    "{\"name\":\"u\",\"type\":[\"null\",\"string\"]},"
    "{\"name\":\"multi\",\"type\":[\"null\",\"int\",\"string\",{\"type\":\"array\",\"items\":\"float\"}]},"
    "{\"name\":\"k\",\"type\":{\"type\":\"enum\",\"name\":\"K\",\"symbols\":[\"A\",\"B\"]}},"
    "{\"name\":\"d\",\"type\":{\"type\":\"fixed\",\"name\":\"D\",\"size\":4,\"logicalType\":\"decimal\",\"precision\":9,\"scale\":2}},"
    "{\"name\":\"db\",\"type\":{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":38,\"scale\":4}},"
    "{\"name\":\"g\",\"type\":{\"type\":\"fixed\",\"name\":\"G\",\"size\":16,\"logicalType\":\"uuid\"}},"
    "{\"name\":\"gs\",\"type\":{\"type\":\"string\",\"logicalType\":\"uuid\"}},"
    "{\"name\":\"day\",\"type\":{\"type\":\"int\",\"logicalType\":\"date\"}},"
    "{\"name\":\"tms\",\"type\":{\"type\":\"int\",\"logicalType\":\"time-millis\"}},"
    "{\"name\":\"tus\",\"type\":{\"type\":\"long\",\"logicalType\":\"time-micros\"}},"
    "{\"name\":\"tsm\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-millis\"}},"
    "{\"name\":\"tsu\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-micros\"}},"
    "{\"name\":\"ltm\",\"type\":{\"type\":\"long\",\"logicalType\":\"local-timestamp-millis\"}},"
    "{\"name\":\"b\",\"type\":\"bytes\"},{\"name\":\"f\",\"type\":\"float\"},{\"name\":\"x\",\"type\":\"double\"},"
    "{\"name\":\"bo\",\"type\":\"boolean\"},"
    "{\"name\":\"in\",\"type\":{\"type\":\"record\",\"name\":\"I\",\"fields\":[{\"name\":\"a\",\"type\":\"int\"}]}},"
    "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":\"I\"}},"
    "{\"name\":\"l\",\"type\":{\"type\":\"array\",\"items\":[\"null\",\"K\"]}}]}";

static void check_schema(json_t *sch, fl_field_t *root)
{
    int32_t sid;
    char err[256];
    if (fl_schema_from_json(sch, root, &sid, err, sizeof err)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    json_t *js = NULL;
    size_t off = 0;
    for (size_t i = 0; i + 4 <= size; i++)
        if (!memcmp(s + i, "\n%%\n", 4)) {
            js = json_loadb(s, i, JSON_DECODE_ANY, NULL);
            off = i + 4;
            break;
        }
    if (!js) js = json_loads(SCHEMA, 0, NULL);
    fl_avro_schema_t plan;
    memset(&plan, 0, sizeof plan);
    char err[512];
    int32_t n = fl_avro_schema_parse(&plan, js, err, sizeof err);
    json_decref(js);
    json_t *cs = n >= 0 ? fl_sink_avro_connect_schema(&plan, n) : NULL;
    json_t *v = NULL, *table = NULL, *out = NULL;
    fl_avro_dec_t d;
    fl_avro_dec_init(&d, fl_slice(s + off, size - off));
    if (!cs || fl_sink_avro_datum(&plan, n, &d, &v, err, sizeof err) || !json_is_object(v)) goto out;
    if (fl_sink_infer_schema(v, cs, false, &table, err, sizeof err)) goto out;
    fl_field_t root;
    check_schema(table, &root);
    if (!fl_sink_convert(&root, v, cs, false, &out, NULL, err, sizeof err)) {
        fl_vec_t vec;
        fl_vec_init(&vec, &root);
        fl_err_t e = fl_vec_append_json(&vec, out, err, sizeof err);
        if ((e && vec.len) || (!e && vec.len != 1)) abort();   /* all of the row or none */
        fl_vec_free(&vec);
    }
    fl_field_free(&root);
out:
    json_decref(out);
    json_decref(table);
    json_decref(v);
    json_decref(cs);
    fl_avro_schema_free(&plan);
    return 0;
}
