/* Iceberg manifests and manifest lists (manifest.h, reference/iceberg.md §3).
 *
 * Writing: the Avro schema JSON is rendered the way Java's AvroSchemaUtil does
 * (record names manifest_entry/r2/r102/k117_v118/r508, docs, "default":null on
 * optional fields, field-id / element-id properties, named fixed types written
 * once and referenced by name afterwards), records are encoded in that order.
 *
 * Reading: the file's own avro.schema is parsed into a small table of type
 * nodes (a decoding plan); records are walked by that plan, known fields picked
 * by field-id and everything else skipped by type. Every count and depth is
 * bounded (base/limits.h) and any mismatch is FL_ERR_INVALID with a message. */
#include "iceberg/manifest.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/limits.h"
#include "base/mem.h"
#include "format/avro_schema.h"

#define ERR(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); } while (0)

/* ======================================================================
 * single-value serialization
 * ====================================================================== */

static void put_le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++, v >>= 8) p[i] = (unsigned char)v;
}

static uint64_t get_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

fl_err_t fl_ice_value_to_bytes(const fl_ice_value_t *v, fl_buf_t *out)
{
    unsigned char b[8];
    switch (v->kind) {
    case FL_ICE_BOOLEAN:
        b[0] = v->u.b ? 1 : 0;
        return fl_buf_add(out, b, 1);
    case FL_ICE_INT: case FL_ICE_DATE:
        put_le(b, (uint32_t)v->u.i, 4);
        return fl_buf_add(out, b, 4);
    case FL_ICE_LONG: case FL_ICE_TIME: case FL_ICE_TIMESTAMP: case FL_ICE_TIMESTAMPTZ:
    case FL_ICE_TIMESTAMP_NS: case FL_ICE_TIMESTAMPTZ_NS:
        put_le(b, (uint64_t)v->u.l, 8);
        return fl_buf_add(out, b, 8);
    case FL_ICE_FLOAT: {
        uint32_t x;
        memcpy(&x, &v->u.f, 4);
        put_le(b, x, 4);
        return fl_buf_add(out, b, 4);
    }
    case FL_ICE_DOUBLE: {
        uint64_t x;
        memcpy(&x, &v->u.d, 8);
        put_le(b, x, 8);
        return fl_buf_add(out, b, 8);
    }
    case FL_ICE_STRING: case FL_ICE_FIXED: case FL_ICE_BINARY:
        if (v->u.bytes.len && !v->u.bytes.ptr) return FL_ERR_INVALID;
        return v->u.bytes.len ? fl_buf_add(out, v->u.bytes.ptr, v->u.bytes.len) : fl_buf_reserve(out, 0);
    case FL_ICE_UUID:
        return fl_buf_add(out, v->u.uuid, 16);
    case FL_ICE_DECIMAL:
        if (v->u.dec.len < 1 || v->u.dec.len > 16) return FL_ERR_INVALID;
        return fl_buf_add(out, v->u.dec.unscaled, v->u.dec.len);
    default:
        return FL_ERR_INVALID;
    }
}

fl_err_t fl_ice_value_from_bytes(fl_ice_kind_t kind, int32_t decimal_scale, fl_slice_t b,
                                 fl_ice_value_t *out)
{
    const unsigned char *p = (const unsigned char *)b.ptr;
    memset(out, 0, sizeof *out);
    out->kind = kind;
    switch (kind) {
    case FL_ICE_BOOLEAN:
        if (b.len != 1) return FL_ERR_INVALID;
        out->u.b = p[0] != 0;
        return FL_OK;
    case FL_ICE_INT: case FL_ICE_DATE:
        if (b.len != 4) return FL_ERR_INVALID;
        out->u.i = (int32_t)(uint32_t)get_le(p, 4);
        return FL_OK;
    case FL_ICE_LONG: case FL_ICE_TIME: case FL_ICE_TIMESTAMP: case FL_ICE_TIMESTAMPTZ:
    case FL_ICE_TIMESTAMP_NS: case FL_ICE_TIMESTAMPTZ_NS:
        if (b.len == 4) out->u.l = (int32_t)(uint32_t)get_le(p, 4); /* promoted from int */
        else if (b.len == 8) out->u.l = (int64_t)get_le(p, 8);
        else return FL_ERR_INVALID;
        return FL_OK;
    case FL_ICE_FLOAT: {
        if (b.len != 4) return FL_ERR_INVALID;
        uint32_t x = (uint32_t)get_le(p, 4);
        memcpy(&out->u.f, &x, 4);
        return FL_OK;
    }
    case FL_ICE_DOUBLE:
        if (b.len == 4) { /* promoted from float */
            uint32_t x = (uint32_t)get_le(p, 4);
            float f;
            memcpy(&f, &x, 4);
            out->u.d = f;
        } else if (b.len == 8) {
            uint64_t x = get_le(p, 8);
            memcpy(&out->u.d, &x, 8);
        } else {
            return FL_ERR_INVALID;
        }
        return FL_OK;
    case FL_ICE_STRING: case FL_ICE_FIXED: case FL_ICE_BINARY:
        out->u.bytes.ptr = p;
        out->u.bytes.len = b.len;
        return FL_OK;
    case FL_ICE_UUID:
        if (b.len != 16) return FL_ERR_INVALID;
        memcpy(out->u.uuid, p, 16);
        return FL_OK;
    case FL_ICE_DECIMAL:
        if (b.len < 1 || b.len > 16) return FL_ERR_INVALID;
        memcpy(out->u.dec.unscaled, p, b.len);
        out->u.dec.len = (uint8_t)b.len;
        out->u.dec.scale = decimal_scale;
        return FL_OK;
    default:
        return FL_ERR_INVALID;
    }
}

static __int128 dec_value(const fl_ice_value_t *v)
{
    unsigned __int128 u = (v->u.dec.len && (v->u.dec.unscaled[0] & 0x80)) ? ~(unsigned __int128)0 : 0;
    for (uint8_t i = 0; i < v->u.dec.len && i < 16; i++) u = (u << 8) | v->u.dec.unscaled[i];
    return (__int128)u;
}

static int cmp_bytes(const unsigned char *a, size_t an, const unsigned char *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int c = n ? memcmp(a, b, n) : 0;
    if (c) return c < 0 ? -1 : 1;
    return (an > bn) - (an < bn);
}

/* Order of two non-null, non-NaN values of one kind (Iceberg comparators). */
static int ice_cmp(const fl_ice_value_t *a, const fl_ice_value_t *b)
{
    switch (a->kind) {
    case FL_ICE_BOOLEAN: return (a->u.b > b->u.b) - (a->u.b < b->u.b);
    case FL_ICE_INT: case FL_ICE_DATE: return (a->u.i > b->u.i) - (a->u.i < b->u.i);
    case FL_ICE_FLOAT:
        if (a->u.f == b->u.f) return (signbit(b->u.f) != 0) - (signbit(a->u.f) != 0); /* -0 < +0 */
        return (a->u.f > b->u.f) - (a->u.f < b->u.f);
    case FL_ICE_DOUBLE:
        if (a->u.d == b->u.d) return (signbit(b->u.d) != 0) - (signbit(a->u.d) != 0);
        return (a->u.d > b->u.d) - (a->u.d < b->u.d);
    case FL_ICE_DECIMAL: {
        __int128 x = dec_value(a), y = dec_value(b);
        return (x > y) - (x < y);
    }
    case FL_ICE_UUID: return cmp_bytes(a->u.uuid, 16, b->u.uuid, 16);
    case FL_ICE_STRING: case FL_ICE_FIXED: case FL_ICE_BINARY:
        return cmp_bytes(a->u.bytes.ptr, a->u.bytes.len, b->u.bytes.ptr, b->u.bytes.len);
    default: return (a->u.l > b->u.l) - (a->u.l < b->u.l);
    }
}

/* ======================================================================
 * plain values
 * ====================================================================== */

static bool kind_has_bytes(fl_ice_kind_t k)
{
    return k == FL_ICE_STRING || k == FL_ICE_FIXED || k == FL_ICE_BINARY;
}

void fl_data_file_free(fl_data_file_t *f)
{
    if (!f) return;
    free(f->file_path);
    free(f->file_format);
    for (size_t i = 0; i < f->n_partition; i++)
        if (kind_has_bytes(f->partition[i].kind)) free((void *)f->partition[i].u.bytes.ptr);
    free(f->partition);
    fl_col_metrics_free(f->metrics, f->n_metrics);
    free(f->split_offsets);
    free(f->equality_ids);
    free(f->referenced_data_file);
    memset(f, 0, sizeof *f);
}

void fl_data_file_set_partition(fl_data_file_t *f, size_t i, const fl_ice_value_t *v)
{
    if (i >= f->n_partition) {
        f->partition = fl_realloc(f->partition, (i + 1) * sizeof *f->partition);
        memset(f->partition + f->n_partition, 0, (i + 1 - f->n_partition) * sizeof *f->partition);
        f->n_partition = i + 1;
    }
    fl_ice_value_t *d = &f->partition[i];
    if (kind_has_bytes(d->kind)) free((void *)d->u.bytes.ptr);
    *d = *v;
    if (kind_has_bytes(v->kind)) {
        unsigned char *p = fl_malloc(v->u.bytes.len ? v->u.bytes.len : 1);
        if (v->u.bytes.len) memcpy(p, v->u.bytes.ptr, v->u.bytes.len);
        d->u.bytes.ptr = p;
    }
}

void fl_manifest_file_free(fl_manifest_file_t *m)
{
    if (!m) return;
    free(m->manifest_path);
    for (size_t i = 0; i < m->n_partitions; i++) {
        fl_buf_free(&m->partitions[i].lower);
        fl_buf_free(&m->partitions[i].upper);
    }
    free(m->partitions);
    memset(m, 0, sizeof *m);
}

void fl_manifest_files_free(fl_manifest_file_t *m, size_t n)
{
    if (!m) return;
    for (size_t i = 0; i < n; i++) fl_manifest_file_free(&m[i]);
    free(m);
}

void fl_manifest_entries_free(fl_manifest_entry_t *e, size_t n)
{
    if (!e) return;
    for (size_t i = 0; i < n; i++) fl_data_file_free(&e[i].file);
    free(e);
}

/* ======================================================================
 * Avro schema JSON, written as Java renders it
 * ====================================================================== */

typedef struct sch {
    fl_buf_t b;
    char **named;           /* named types already defined */
    size_t n_named;
    fl_err_t e;
} sch_t;

static void s_add(sch_t *s, const char *t)
{
    if (!s->e) s->e = fl_buf_adds(&s->b, t);
}

static void s_printf(sch_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_printf(sch_t *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (!s->e) s->e = fl_buf_vprintf(&s->b, fmt, ap);
    va_end(ap);
}

static void s_str(sch_t *s, const char *str)
{
    json_t *j = json_string(str);
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    if (t) s_add(s, t);
    else if (!s->e) s->e = FL_ERR_INVALID; /* not UTF-8 */
    free(t);
    json_decref(j);
}

/* true when name was not yet defined (and records it) */
static bool s_define(sch_t *s, const char *name)
{
    for (size_t i = 0; i < s->n_named; i++)
        if (!strcmp(s->named[i], name)) return false;
    s->named = fl_realloc(s->named, (s->n_named + 1) * sizeof *s->named);
    s->named[s->n_named++] = fl_strdup(name);
    return true;
}

static void s_free(sch_t *s)
{
    for (size_t i = 0; i < s->n_named; i++) free(s->named[i]);
    free(s->named);
    fl_buf_free(&s->b);
}

/* Field opening: {"name":N,"type":  (caller writes the type, then s_field_end) */
static void s_field(sch_t *s, const char *name, bool optional)
{
    s_add(s, "{\"name\":");
    s_str(s, name);
    s_add(s, optional ? ",\"type\":[\"null\"," : ",\"type\":");
}

static void s_field_end(sch_t *s, bool optional, const char *doc, int32_t id)
{
    if (optional) s_add(s, "]");
    if (doc) {
        s_add(s, ",\"doc\":");
        s_str(s, doc);
    }
    if (optional) s_add(s, ",\"default\":null");
    s_printf(s, ",\"field-id\":%d}", id);
}

static void s_prim_field(sch_t *s, const char *name, const char *type, bool optional,
                         const char *doc, int32_t id)
{
    s_field(s, name, optional);
    s_printf(s, "\"%s\"", type);
    s_field_end(s, optional, doc, id);
}

static void s_map_field(sch_t *s, const char *name, int32_t id, int32_t kid, int32_t vid,
                        const char *vtype, const char *doc)
{
    s_field(s, name, true);
    s_printf(s, "{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":\"k%d_v%d\","
                "\"fields\":[{\"name\":\"key\",\"type\":\"int\",\"field-id\":%d},"
                "{\"name\":\"value\",\"type\":\"%s\",\"field-id\":%d}]},\"logicalType\":\"map\"}",
             kid, vid, kid, vtype, vid);
    s_field_end(s, true, doc, id);
}

static void s_list_field(sch_t *s, const char *name, int32_t id, int32_t eid, const char *etype,
                         const char *doc)
{
    s_field(s, name, true);
    s_printf(s, "{\"type\":\"array\",\"items\":\"%s\",\"element-id\":%d}", etype, eid);
    s_field_end(s, true, doc, id);
}

static int decimal_required_bytes(int precision)
{
    for (int n = 1; n <= 16; n++)
        if ((int)floor((8.0 * n - 1) * log10(2.0)) >= precision) return n;
    return 16;
}

/* The Avro type of a partition field's values (Java TypeToSchema.primitive). */
static void s_part_type(sch_t *s, const fl_part_field_t *pf)
{
    fl_ice_kind_t k = pf->result_kind;
    const fl_field_t *src = pf->source;
    char name[64];
    switch (k) {
    case FL_ICE_BOOLEAN: s_add(s, "\"boolean\""); break;
    case FL_ICE_INT: s_add(s, "\"int\""); break;
    case FL_ICE_LONG: s_add(s, "\"long\""); break;
    case FL_ICE_FLOAT: s_add(s, "\"float\""); break;
    case FL_ICE_DOUBLE: s_add(s, "\"double\""); break;
    case FL_ICE_DATE: s_add(s, "{\"type\":\"int\",\"logicalType\":\"date\"}"); break;
    case FL_ICE_TIME: s_add(s, "{\"type\":\"long\",\"logicalType\":\"time-micros\"}"); break;
    case FL_ICE_TIMESTAMP:
        s_add(s, "{\"type\":\"long\",\"logicalType\":\"timestamp-micros\",\"adjust-to-utc\":false}");
        break;
    case FL_ICE_TIMESTAMPTZ:
        s_add(s, "{\"type\":\"long\",\"logicalType\":\"timestamp-micros\",\"adjust-to-utc\":true}");
        break;
    case FL_ICE_TIMESTAMP_NS:
        s_add(s, "{\"type\":\"long\",\"logicalType\":\"timestamp-nanos\",\"adjust-to-utc\":false}");
        break;
    case FL_ICE_TIMESTAMPTZ_NS:
        s_add(s, "{\"type\":\"long\",\"logicalType\":\"timestamp-nanos\",\"adjust-to-utc\":true}");
        break;
    case FL_ICE_STRING: s_add(s, "\"string\""); break;
    case FL_ICE_BINARY: s_add(s, "\"bytes\""); break;
    case FL_ICE_UUID:
        if (s_define(s, "uuid_fixed"))
            s_add(s, "{\"type\":\"fixed\",\"name\":\"uuid_fixed\",\"size\":16,\"logicalType\":\"uuid\"}");
        else
            s_add(s, "\"uuid_fixed\"");
        break;
    case FL_ICE_FIXED:
        snprintf(name, sizeof name, "fixed_%d", src ? src->length : 0);
        if (s_define(s, name))
            s_printf(s, "{\"type\":\"fixed\",\"name\":\"%s\",\"size\":%d}", name, src ? src->length : 0);
        else
            s_printf(s, "\"%s\"", name);
        break;
    case FL_ICE_DECIMAL:
        snprintf(name, sizeof name, "decimal_%d_%d", src ? src->precision : 0, src ? src->scale : 0);
        if (s_define(s, name))
            s_printf(s, "{\"type\":\"fixed\",\"name\":\"%s\",\"size\":%d,\"logicalType\":\"decimal\","
                        "\"precision\":%d,\"scale\":%d}",
                     name, decimal_required_bytes(src ? src->precision : 38),
                     src ? src->precision : 38, src ? src->scale : 0);
        else
            s_printf(s, "\"%s\"", name);
        break;
    default:
        if (!s->e) s->e = FL_ERR_INVALID;
    }
}

static bool valid_avro_name(const char *n)
{
    if (!*n) return false;
    for (const unsigned char *p = (const unsigned char *)n; *p; p++) {
        bool letter = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_';
        if (!(letter || (p != (const unsigned char *)n && *p >= '0' && *p <= '9'))) return false;
    }
    return true;
}

/* Java AvroSchemaUtil.sanitize for ASCII names; non-ASCII UTF-8 bytes are
 * escaped per byte (Java escapes per UTF-16 unit: a documented difference). */
static char *sanitize_name(const char *n)
{
    fl_buf_t b;
    fl_buf_init(&b, 0);
    for (const unsigned char *p = (const unsigned char *)n; *p; p++) {
        bool letter = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_';
        bool digit = *p >= '0' && *p <= '9';
        if (letter || (digit && p != (const unsigned char *)n)) fl_buf_addc(&b, (char)*p);
        else if (digit) fl_buf_printf(&b, "_%c", *p);
        else fl_buf_printf(&b, "_x%X", *p);
    }
    if (!b.ptr) fl_buf_adds(&b, "");
    return fl_buf_steal(&b);
}

static void s_partition_record(sch_t *s, const fl_part_spec_t *spec)
{
    s_add(s, "{\"type\":\"record\",\"name\":\"r102\",\"fields\":[");
    for (size_t i = 0; i < spec->n_fields; i++) {
        const fl_part_field_t *pf = &spec->fields[i];
        if (i) s_add(s, ",");
        bool ok = valid_avro_name(pf->name);
        char *nm = ok ? NULL : sanitize_name(pf->name);
        s_field(s, ok ? pf->name : nm, true);
        s_part_type(s, pf);
        s_add(s, "],\"default\":null");
        if (!ok) {
            s_add(s, ",\"iceberg-field-name\":");
            s_str(s, pf->name);
        }
        s_printf(s, ",\"field-id\":%d}", pf->field_id);
        free(nm);
    }
    s_add(s, "]}");
}

static char *entry_schema(int fv, const fl_part_spec_t *spec)
{
    sch_t s = { 0 };
    fl_buf_init(&s.b, 0);
    s_add(&s, "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":[");
    s_prim_field(&s, "status", "int", false, NULL, 0);
    s_add(&s, ",");
    s_prim_field(&s, "snapshot_id", "long", true, NULL, 1);
    if (fv >= 2) {
        s_add(&s, ",");
        s_prim_field(&s, "sequence_number", "long", true, NULL, 3);
        s_add(&s, ",");
        s_prim_field(&s, "file_sequence_number", "long", true, NULL, 4);
    }
    s_add(&s, ",{\"name\":\"data_file\",\"type\":{\"type\":\"record\",\"name\":\"r2\",\"fields\":[");
    if (fv >= 2) {
        s_prim_field(&s, "content", "int", false,
                     "Contents of the file: 0=data, 1=position deletes, 2=equality deletes", 134);
        s_add(&s, ",");
    }
    s_prim_field(&s, "file_path", "string", false, "Location URI with FS scheme", 100);
    s_add(&s, ",");
    s_prim_field(&s, "file_format", "string", false, "File format name: avro, orc, or parquet", 101);
    s_add(&s, ",{\"name\":\"partition\",\"type\":");
    s_partition_record(&s, spec);
    if (fv >= 2) s_add(&s, ",\"doc\":\"Partition data tuple, schema based on the partition spec\"");
    s_add(&s, ",\"field-id\":102},");
    s_prim_field(&s, "record_count", "long", false, "Number of records in the file", 103);
    s_add(&s, ",");
    s_prim_field(&s, "file_size_in_bytes", "long", false, "Total file size in bytes", 104);
    if (fv == 1) {
        s_add(&s, ",");
        s_prim_field(&s, "block_size_in_bytes", "long", false, NULL, 105);
    }
    s_add(&s, ",");
    s_map_field(&s, "column_sizes", 108, 117, 118, "long", "Map of column id to total size on disk");
    s_add(&s, ",");
    s_map_field(&s, "value_counts", 109, 119, 120, "long",
                "Map of column id to total count, including null and NaN");
    s_add(&s, ",");
    s_map_field(&s, "null_value_counts", 110, 121, 122, "long", "Map of column id to null value count");
    s_add(&s, ",");
    s_map_field(&s, "nan_value_counts", 137, 138, 139, "long",
                "Map of column id to number of NaN values in the column");
    s_add(&s, ",");
    s_map_field(&s, "lower_bounds", 125, 126, 127, "bytes", "Map of column id to lower bound");
    s_add(&s, ",");
    s_map_field(&s, "upper_bounds", 128, 129, 130, "bytes", "Map of column id to upper bound");
    s_add(&s, ",");
    s_prim_field(&s, "key_metadata", "bytes", true, "Encryption key metadata blob", 131);
    s_add(&s, ",");
    s_list_field(&s, "split_offsets", 132, 133, "long", "Splittable offsets");
    if (fv >= 2) {
        s_add(&s, ",");
        s_list_field(&s, "equality_ids", 135, 136, "int", "Equality comparison field IDs");
    }
    s_add(&s, ",");
    s_prim_field(&s, "sort_order_id", "int", true, "Sort order ID", 140);
    if (fv >= 3) {
        s_add(&s, ",");
        s_prim_field(&s, "first_row_id", "long", true,
                     "The first row ID assigned to the first row in the data file", 142);
    }
    if (fv >= 2) {
        s_add(&s, ",");
        s_prim_field(&s, "referenced_data_file", "string", true,
                     "Fully qualified location (URI with FS scheme) of a data file that all deletes reference",
                     143);
    }
    if (fv >= 3) {
        s_add(&s, ",");
        s_prim_field(&s, "content_offset", "long", true,
                     "The offset in the file where the content starts", 144);
        s_add(&s, ",");
        s_prim_field(&s, "content_size_in_bytes", "long", true,
                     "The length of referenced content stored in the file", 145);
    }
    s_add(&s, "]},\"field-id\":2}]}");
    char *r = s.e ? NULL : fl_buf_steal(&s.b);
    s_free(&s);
    return r;
}

static char *list_schema(int fv)
{
    sch_t s = { 0 };
    fl_buf_init(&s.b, 0);
    bool v1 = fv == 1;
    s_add(&s, "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":[");
    s_prim_field(&s, "manifest_path", "string", false, "Location URI with FS scheme", 500);
    s_add(&s, ",");
    s_prim_field(&s, "manifest_length", "long", false, "Total file size in bytes", 501);
    s_add(&s, ",");
    s_prim_field(&s, "partition_spec_id", "int", false, "Spec ID used to write", 502);
    if (!v1) {
        s_add(&s, ",");
        s_prim_field(&s, "content", "int", false, "Contents of the manifest: 0=data, 1=deletes", 517);
        s_add(&s, ",");
        s_prim_field(&s, "sequence_number", "long", false, "Sequence number when the manifest was added", 515);
        s_add(&s, ",");
        s_prim_field(&s, "min_sequence_number", "long", false, "Lowest sequence number in the manifest", 516);
    }
    s_add(&s, ",");
    s_prim_field(&s, "added_snapshot_id", "long", false, "Snapshot ID that added the manifest", 503);
    s_add(&s, ",");
    s_prim_field(&s, "added_files_count", "int", v1, "Added entry count", 504);
    s_add(&s, ",");
    s_prim_field(&s, "existing_files_count", "int", v1, "Existing entry count", 505);
    s_add(&s, ",");
    s_prim_field(&s, "deleted_files_count", "int", v1, "Deleted entry count", 506);
    const char *parts =
        ",{\"name\":\"partitions\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{\"type\":\"record\","
        "\"name\":\"r508\",\"fields\":[{\"name\":\"contains_null\",\"type\":\"boolean\","
        "\"doc\":\"True if any file has a null partition value\",\"field-id\":509},"
        "{\"name\":\"contains_nan\",\"type\":[\"null\",\"boolean\"],"
        "\"doc\":\"True if any file has a nan partition value\",\"default\":null,\"field-id\":518},"
        "{\"name\":\"lower_bound\",\"type\":[\"null\",\"bytes\"],"
        "\"doc\":\"Partition lower bound for all files\",\"default\":null,\"field-id\":510},"
        "{\"name\":\"upper_bound\",\"type\":[\"null\",\"bytes\"],"
        "\"doc\":\"Partition upper bound for all files\",\"default\":null,\"field-id\":511}]},"
        "\"element-id\":508}],\"doc\":\"Summary for each partition\",\"default\":null,\"field-id\":507}";
    if (v1) s_add(&s, parts);
    s_add(&s, ",");
    s_prim_field(&s, "added_rows_count", "long", v1, "Added rows count", 512);
    s_add(&s, ",");
    s_prim_field(&s, "existing_rows_count", "long", v1, "Existing rows count", 513);
    s_add(&s, ",");
    s_prim_field(&s, "deleted_rows_count", "long", v1, "Deleted rows count", 514);
    if (!v1) s_add(&s, parts);
    s_add(&s, ",");
    s_prim_field(&s, "key_metadata", "bytes", true, "Encryption key metadata blob", 519);
    if (fv >= 3) {
        s_add(&s, ",");
        s_prim_field(&s, "first_row_id", "long", true,
                     "Starting row ID to assign to new rows in ADDED data files", 520);
    }
    s_add(&s, "]}");
    char *r = s.e ? NULL : fl_buf_steal(&s.b);
    s_free(&s);
    return r;
}

/* ======================================================================
 * manifest writer
 * ====================================================================== */

static char *spec_fields_json(const fl_part_spec_t *spec)
{
    json_t *a = json_array();
    for (size_t i = 0; i < spec->n_fields; i++) {
        const fl_part_field_t *pf = &spec->fields[i];
        char tr[48];
        fl_ice_transform_str(&pf->transform, tr, sizeof tr);
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(pf->name));
        json_object_set_new(o, "transform", json_string(tr));
        json_object_set_new(o, "source-id", json_integer(pf->source_id));
        json_object_set_new(o, "field-id", json_integer(pf->field_id));
        json_array_append_new(a, o);
    }
    char *r = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return r;
}

void fl_manifest_writer_free(fl_manifest_writer_t *w)
{
    if (!w) return;
    fl_avro_writer_free(&w->avro);
    fl_buf_free(&w->out);
    free(w->schema_json);
    free(w->spec_json);
    free(w->avro_schema);
    if (w->summaries && w->spec)
        for (size_t i = 0; i < w->spec->n_fields; i++) {
            fl_buf_free(&w->summaries[i].lower);
            fl_buf_free(&w->summaries[i].upper);
        }
    free(w->summaries);
    memset(w, 0, sizeof *w);
}

fl_err_t fl_manifest_writer_open(fl_manifest_writer_t *w, int format_version,
                                 const fl_field_t *schema, int32_t schema_id,
                                 const fl_part_spec_t *spec, int32_t content,
                                 int64_t snapshot_id, fl_avro_codec_t codec)
{
    memset(w, 0, sizeof *w);
    if (format_version < 1 || format_version > 3 || !schema || !spec ||
        content < 0 || content > 1 || (format_version == 1 && content != 0))
        return FL_ERR_INVALID;
    w->format_version = format_version;
    w->schema = schema;
    w->spec = spec;
    w->snapshot_id = snapshot_id;
    w->content = content;
    w->min_seq = -1;
    fl_buf_init(&w->out, 0);
    json_t *sj = fl_schema_to_json(schema, schema_id);
    w->schema_json = json_dumps(sj, JSON_COMPACT);
    json_decref(sj);
    w->spec_json = spec_fields_json(spec);
    w->avro_schema = entry_schema(format_version, spec);
    w->summaries = fl_calloc(spec->n_fields ? spec->n_fields : 1, sizeof *w->summaries);
    if (!w->schema_json || !w->spec_json || !w->avro_schema) {
        fl_manifest_writer_free(w);
        return FL_ERR_INVALID;
    }
    char sid[24], fv[8];
    snprintf(sid, sizeof sid, "%d", spec->spec_id);
    snprintf(fv, sizeof fv, "%d", format_version);
    fl_avro_meta_t meta[5] = {
        { "schema", fl_slice_cstr(w->schema_json) },
        { "partition-spec", fl_slice_cstr(w->spec_json) },
        { "partition-spec-id", fl_slice_cstr(sid) },
        { "format-version", fl_slice_cstr(fv) },
        { "content", fl_slice_cstr(content ? "deletes" : "data") },
    };
    fl_err_t e = fl_avro_writer_open(&w->avro, &w->out, codec, w->avro_schema, meta,
                                     format_version == 1 ? 4 : 5);
    if (e) fl_manifest_writer_free(w);
    return e;
}

static bool kinds_compatible(fl_ice_kind_t want, fl_ice_kind_t have)
{
    if (want == have) return true;
    return (want == FL_ICE_DATE && have == FL_ICE_INT) || (want == FL_ICE_INT && have == FL_ICE_DATE);
}

static fl_err_t put_opt_long(fl_buf_t *b, bool has, int64_t v)
{
    fl_err_t e = fl_avro_put_union(b, has ? 1 : 0);
    return e || !has ? e : fl_avro_put_long(b, v);
}

static fl_err_t put_part_value(fl_buf_t *b, const fl_part_field_t *pf, const fl_ice_value_t *v)
{
    if (v->kind == FL_ICE_NULL || pf->transform.kind == FL_ICE_T_VOID) return fl_avro_put_union(b, 0);
    if (!kinds_compatible(pf->result_kind, v->kind)) return FL_ERR_INVALID;
    fl_err_t e = fl_avro_put_union(b, 1);
    if (e) return e;
    switch (pf->result_kind) {
    case FL_ICE_BOOLEAN: return fl_avro_put_bool(b, v->u.b);
    case FL_ICE_INT: case FL_ICE_DATE: return fl_avro_put_int(b, v->u.i);
    case FL_ICE_FLOAT: return fl_avro_put_float(b, v->u.f);
    case FL_ICE_DOUBLE: return fl_avro_put_double(b, v->u.d);
    case FL_ICE_STRING: case FL_ICE_BINARY: return fl_avro_put_bytes(b, v->u.bytes.ptr, v->u.bytes.len);
    case FL_ICE_FIXED:
        if (!pf->source || v->u.bytes.len != (size_t)pf->source->length) return FL_ERR_INVALID;
        return fl_avro_put_fixed(b, v->u.bytes.ptr, v->u.bytes.len);
    case FL_ICE_UUID: return fl_avro_put_fixed(b, v->u.uuid, 16);
    case FL_ICE_DECIMAL: {
        int n = decimal_required_bytes(pf->source ? pf->source->precision : 38);
        if (v->u.dec.len < 1 || v->u.dec.len > n) return FL_ERR_INVALID;
        unsigned char buf[16];
        memset(buf, (v->u.dec.unscaled[0] & 0x80) ? 0xff : 0, sizeof buf);
        memcpy(buf + n - v->u.dec.len, v->u.dec.unscaled, v->u.dec.len);
        return fl_avro_put_fixed(b, buf, (size_t)n);
    }
    default: return fl_avro_put_long(b, v->u.l);
    }
}

static fl_err_t put_long_map(fl_buf_t *b, const fl_data_file_t *f, int which)
{
    int64_t n = 0;
    for (size_t i = 0; i < f->n_metrics; i++) {
        const fl_col_metrics_t *m = &f->metrics[i];
        bool has = which == 0 ? m->has_column_size : which == 1 ? m->has_value_count :
                   which == 2 ? m->has_null_count : which == 3 ? m->has_nan_count :
                   which == 4 ? m->has_lower : m->has_upper;
        n += has;
    }
    fl_err_t e = fl_avro_put_union(b, n ? 1 : 0);
    if (e || !n) return e;
    if ((e = fl_avro_put_block_count(b, n))) return e;
    for (size_t i = 0; i < f->n_metrics && !e; i++) {
        const fl_col_metrics_t *m = &f->metrics[i];
        switch (which) {
        case 0: if (m->has_column_size) { e = fl_avro_put_int(b, m->field_id); if (!e) e = fl_avro_put_long(b, m->column_size); } break;
        case 1: if (m->has_value_count) { e = fl_avro_put_int(b, m->field_id); if (!e) e = fl_avro_put_long(b, m->value_count); } break;
        case 2: if (m->has_null_count) { e = fl_avro_put_int(b, m->field_id); if (!e) e = fl_avro_put_long(b, m->null_count); } break;
        case 3: if (m->has_nan_count) { e = fl_avro_put_int(b, m->field_id); if (!e) e = fl_avro_put_long(b, m->nan_count); } break;
        case 4: if (m->has_lower) { e = fl_avro_put_int(b, m->field_id); if (!e) e = fl_avro_put_bytes(b, m->lower.ptr, m->lower.len); } break;
        default: if (m->has_upper) { e = fl_avro_put_int(b, m->field_id); if (!e) e = fl_avro_put_bytes(b, m->upper.ptr, m->upper.len); } break;
        }
    }
    return e ? e : fl_avro_put_block_count(b, 0);
}

static fl_err_t encode_entry(fl_buf_t *b, int fv, const fl_part_spec_t *spec,
                             const fl_manifest_entry_t *en)
{
    const fl_data_file_t *f = &en->file;
    fl_err_t e = fl_avro_put_int(b, en->status);
    if (!e) e = put_opt_long(b, en->has_snapshot_id, en->snapshot_id);
    if (!e && fv >= 2) e = put_opt_long(b, en->has_sequence_number, en->sequence_number);
    if (!e && fv >= 2) e = put_opt_long(b, en->has_file_sequence_number, en->file_sequence_number);
    if (!e && fv >= 2) e = fl_avro_put_int(b, f->content);
    if (!e) e = fl_avro_put_cstr(b, f->file_path ? f->file_path : "");
    if (!e) e = fl_avro_put_cstr(b, f->file_format ? f->file_format : "PARQUET");
    for (size_t i = 0; i < spec->n_fields && !e; i++) {
        fl_ice_value_t null = { .kind = FL_ICE_NULL };
        e = put_part_value(b, &spec->fields[i], i < f->n_partition ? &f->partition[i] : &null);
    }
    if (!e) e = fl_avro_put_long(b, f->record_count);
    if (!e) e = fl_avro_put_long(b, f->file_size_in_bytes);
    if (!e && fv == 1) e = fl_avro_put_long(b, 64 * 1024 * 1024); /* Java's block_size_in_bytes */
    for (int m = 0; m < 6 && !e; m++) e = put_long_map(b, f, m);
    if (!e) e = fl_avro_put_union(b, 0); /* key_metadata */
    if (!e) e = fl_avro_put_union(b, f->split_offsets ? 1 : 0);
    if (!e && f->split_offsets) {
        if (f->n_split_offsets) e = fl_avro_put_block_count(b, (int64_t)f->n_split_offsets);
        for (size_t i = 0; i < f->n_split_offsets && !e; i++) e = fl_avro_put_long(b, f->split_offsets[i]);
        if (!e) e = fl_avro_put_block_count(b, 0);
    }
    if (!e && fv >= 2) e = fl_avro_put_union(b, f->equality_ids ? 1 : 0); /* equality_ids */
    if (!e && fv >= 2 && f->equality_ids) {
        if (f->n_equality_ids) e = fl_avro_put_block_count(b, (int64_t)f->n_equality_ids);
        for (size_t i = 0; i < f->n_equality_ids && !e; i++) e = fl_avro_put_int(b, f->equality_ids[i]);
        if (!e) e = fl_avro_put_block_count(b, 0);
    }
    if (!e) e = fl_avro_put_union(b, f->has_sort_order_id ? 1 : 0);
    if (!e && f->has_sort_order_id) e = fl_avro_put_int(b, f->sort_order_id);
    if (!e && fv >= 3) e = put_opt_long(b, f->has_first_row_id, f->first_row_id);
    if (!e && fv >= 2) e = fl_avro_put_union(b, f->referenced_data_file ? 1 : 0); /* referenced_data_file */
    if (!e && fv >= 2 && f->referenced_data_file) e = fl_avro_put_cstr(b, f->referenced_data_file);
    if (!e && fv >= 3) e = put_opt_long(b, f->has_content_offset, f->content_offset);
    if (!e && fv >= 3) e = put_opt_long(b, f->has_content_offset, f->content_size_in_bytes);
    return e;
}

static fl_err_t summarize(fl_field_summary_t *s, const fl_part_field_t *pf, const fl_ice_value_t *v)
{
    if (v->kind == FL_ICE_NULL || pf->transform.kind == FL_ICE_T_VOID) {
        s->contains_null = true;
        return FL_OK;
    }
    if ((v->kind == FL_ICE_FLOAT && isnan(v->u.f)) || (v->kind == FL_ICE_DOUBLE && isnan(v->u.d))) {
        s->contains_nan = true;
        return FL_OK;
    }
    int32_t scale = pf->source ? pf->source->scale : 0;
    fl_ice_value_t cur;
    if (!s->has_lower ||
        (!fl_ice_value_from_bytes(v->kind, scale, fl_slice(s->lower.ptr, s->lower.len), &cur) &&
         ice_cmp(v, &cur) < 0)) {
        fl_buf_reset(&s->lower);
        fl_err_t e = fl_ice_value_to_bytes(v, &s->lower);
        if (e) return e;
        s->has_lower = true;
    }
    if (!s->has_upper ||
        (!fl_ice_value_from_bytes(v->kind, scale, fl_slice(s->upper.ptr, s->upper.len), &cur) &&
         ice_cmp(v, &cur) > 0)) {
        fl_buf_reset(&s->upper);
        fl_err_t e = fl_ice_value_to_bytes(v, &s->upper);
        if (e) return e;
        s->has_upper = true;
    }
    return FL_OK;
}

fl_err_t fl_manifest_writer_add(fl_manifest_writer_t *w, const fl_manifest_entry_t *en)
{
    if (!w->avro_schema || en->status < 0 || en->status > 2 || !en->file.file_path)
        return FL_ERR_INVALID;
    if (w->added_files + w->existing_files + w->deleted_files >= FL_MANIFEST_MAX_ENTRIES)
        return FL_ERR_TOO_LARGE;
    const fl_part_spec_t *spec = w->spec;
    for (size_t i = 0; i < spec->n_fields && i < en->file.n_partition; i++) {
        const fl_ice_value_t *v = &en->file.partition[i];
        if (v->kind != FL_ICE_NULL && spec->fields[i].transform.kind != FL_ICE_T_VOID &&
            !kinds_compatible(spec->fields[i].result_kind, v->kind))
            return FL_ERR_INVALID;
    }
    fl_buf_t *b = fl_avro_writer_record(&w->avro);
    size_t mark = b->len;
    fl_err_t e = encode_entry(b, w->format_version, spec, en);
    if (e) {
        b->len = mark;
        return e;
    }
    if ((e = fl_avro_writer_end_record(&w->avro))) return e;
    const fl_data_file_t *f = &en->file;
    switch (en->status) {
    case 0: w->existing_files++; w->existing_rows += f->record_count; break;
    case 1: w->added_files++; w->added_rows += f->record_count; break;
    default: w->deleted_files++; w->deleted_rows += f->record_count; break;
    }
    if (en->status != 2 && en->has_sequence_number &&
        (w->min_seq < 0 || en->sequence_number < w->min_seq))
        w->min_seq = en->sequence_number;
    for (size_t i = 0; i < spec->n_fields; i++) {
        fl_ice_value_t null = { .kind = FL_ICE_NULL };
        if ((e = summarize(&w->summaries[i], &spec->fields[i],
                           i < f->n_partition ? &f->partition[i] : &null)))
            return e;
    }
    return FL_OK;
}

fl_err_t fl_manifest_writer_finish(fl_manifest_writer_t *w, const char *path, int64_t seq,
                                   fl_buf_t *bytes, fl_manifest_file_t *mf)
{
    memset(mf, 0, sizeof *mf);
    if (!w->avro_schema) return FL_ERR_INVALID;
    fl_err_t e = fl_avro_writer_finish(&w->avro);
    if (e) return e;
    mf->manifest_path = fl_strdup(path ? path : "");
    mf->manifest_length = (int64_t)w->out.len;
    mf->partition_spec_id = w->spec->spec_id;
    mf->content = w->content;
    mf->sequence_number = seq;
    mf->min_sequence_number = w->min_seq >= 0 && w->min_seq < seq ? w->min_seq : seq;
    mf->added_snapshot_id = w->snapshot_id;
    mf->added_files_count = w->added_files;
    mf->existing_files_count = w->existing_files;
    mf->deleted_files_count = w->deleted_files;
    mf->added_rows_count = w->added_rows;
    mf->existing_rows_count = w->existing_rows;
    mf->deleted_rows_count = w->deleted_rows;
    mf->has_partitions = true;
    mf->n_partitions = w->spec->n_fields;
    mf->partitions = w->summaries;
    for (size_t i = 0; i < w->spec->n_fields; i++) {
        fl_field_summary_t *s = &mf->partitions[i];
        fl_ice_kind_t k = w->spec->fields[i].result_kind;
        s->has_contains_nan = w->format_version >= 2 || k == FL_ICE_FLOAT || k == FL_ICE_DOUBLE;
    }
    w->summaries = NULL;
    *bytes = w->out;
    fl_buf_init(&w->out, 0);
    return FL_OK;
}

/* ======================================================================
 * manifest list writer
 * ====================================================================== */

static fl_err_t encode_list_record(fl_buf_t *b, int fv, const fl_manifest_file_t *m)
{
    bool v1 = fv == 1;
    fl_err_t e = fl_avro_put_cstr(b, m->manifest_path ? m->manifest_path : "");
    if (!e) e = fl_avro_put_long(b, m->manifest_length);
    if (!e) e = fl_avro_put_int(b, m->partition_spec_id);
    if (!e && !v1) e = fl_avro_put_int(b, m->content);
    if (!e && !v1) e = fl_avro_put_long(b, m->sequence_number);
    if (!e && !v1) e = fl_avro_put_long(b, m->min_sequence_number);
    if (!e) e = fl_avro_put_long(b, m->added_snapshot_id);
    if (!e && v1) e = fl_avro_put_union(b, 1);
    if (!e) e = fl_avro_put_int(b, m->added_files_count);
    if (!e && v1) e = fl_avro_put_union(b, 1);
    if (!e) e = fl_avro_put_int(b, m->existing_files_count);
    if (!e && v1) e = fl_avro_put_union(b, 1);
    if (!e) e = fl_avro_put_int(b, m->deleted_files_count);
    fl_buf_t parts;
    fl_buf_init(&parts, 0);
    if (!e) e = fl_avro_put_union(&parts, m->has_partitions ? 1 : 0);
    if (!e && m->has_partitions) {
        if (m->n_partitions) e = fl_avro_put_block_count(&parts, (int64_t)m->n_partitions);
        for (size_t i = 0; i < m->n_partitions && !e; i++) {
            const fl_field_summary_t *s = &m->partitions[i];
            e = fl_avro_put_bool(&parts, s->contains_null);
            if (!e) e = fl_avro_put_union(&parts, s->has_contains_nan ? 1 : 0);
            if (!e && s->has_contains_nan) e = fl_avro_put_bool(&parts, s->contains_nan);
            if (!e) e = fl_avro_put_union(&parts, s->has_lower ? 1 : 0);
            if (!e && s->has_lower) e = fl_avro_put_bytes(&parts, s->lower.ptr, s->lower.len);
            if (!e) e = fl_avro_put_union(&parts, s->has_upper ? 1 : 0);
            if (!e && s->has_upper) e = fl_avro_put_bytes(&parts, s->upper.ptr, s->upper.len);
        }
        if (!e) e = fl_avro_put_block_count(&parts, 0);
    }
    if (!e && v1) e = fl_buf_add(b, parts.ptr, parts.len);
    if (!e && v1) e = fl_avro_put_union(b, 1);
    if (!e) e = fl_avro_put_long(b, m->added_rows_count);
    if (!e && v1) e = fl_avro_put_union(b, 1);
    if (!e) e = fl_avro_put_long(b, m->existing_rows_count);
    if (!e && v1) e = fl_avro_put_union(b, 1);
    if (!e) e = fl_avro_put_long(b, m->deleted_rows_count);
    if (!e && !v1) e = fl_buf_add(b, parts.ptr, parts.len);
    if (!e) e = fl_avro_put_union(b, 0); /* key_metadata */
    if (!e && fv >= 3) e = put_opt_long(b, m->has_first_row_id, m->first_row_id);
    fl_buf_free(&parts);
    return e;
}

static fl_err_t list_write(int format_version, int64_t snapshot_id, int64_t parent_id, int64_t seq,
                           bool assign, int64_t first_row_id, const fl_manifest_file_t *files, size_t n,
                           fl_avro_codec_t codec, fl_buf_t *out, int64_t *next_row_id)
{
    if (format_version < 1 || format_version > 3) return FL_ERR_INVALID;
    if (assign && (format_version < 3 || first_row_id < 0)) return FL_ERR_INVALID;
    char *schema = list_schema(format_version);
    if (!schema) return FL_ERR_INVALID;
    char sid[24], pid[24], sq[24], fr[24], fv[8];
    snprintf(sid, sizeof sid, "%lld", (long long)snapshot_id);
    if (parent_id < 0) snprintf(pid, sizeof pid, "null");
    else snprintf(pid, sizeof pid, "%lld", (long long)parent_id);
    snprintf(sq, sizeof sq, "%lld", (long long)seq);
    snprintf(fr, sizeof fr, "%lld", (long long)first_row_id);
    snprintf(fv, sizeof fv, "%d", format_version);
    fl_avro_meta_t meta[5] = {
        { "snapshot-id", fl_slice_cstr(sid) },
        { "parent-snapshot-id", fl_slice_cstr(pid) },
        { "sequence-number", fl_slice_cstr(sq) },
        { "format-version", fl_slice_cstr(fv) },
    };
    size_t n_meta = 4;
    if (format_version == 1) {
        meta[2] = meta[3];
        n_meta = 3;
    } else if (assign) {
        /* Java's V3 writer order: ..., sequence-number, first-row-id, format-version */
        meta[4] = meta[3];
        meta[3] = (fl_avro_meta_t){ "first-row-id", fl_slice_cstr(fr) };
        n_meta = 5;
    }
    fl_avro_writer_t w;
    fl_err_t e = fl_avro_writer_open(&w, out, codec, schema, meta, n_meta);
    free(schema);
    if (e) return e;
    int64_t next = first_row_id;
    for (size_t i = 0; i < n && !e; i++) {
        fl_manifest_file_t m = files[i];
        if (assign && m.content == 0 && !m.has_first_row_id) {
            /* room for added and existing rows: pre-v3 manifests' existing
             * files have no row ids either */
            int64_t rows = m.added_rows_count, ex = m.existing_rows_count;
            if (rows < 0 || ex < 0 || rows > INT64_MAX - ex || rows + ex > INT64_MAX - next) {
                e = FL_ERR_INVALID;
                break;
            }
            m.has_first_row_id = true;
            m.first_row_id = next;
            next += rows + ex;
        }
        fl_buf_t *b = fl_avro_writer_record(&w);
        if (!(e = encode_list_record(b, format_version, &m)))
            e = fl_avro_writer_end_record(&w);
    }
    if (!e) e = fl_avro_writer_finish(&w);
    fl_avro_writer_free(&w);
    if (!e && next_row_id) *next_row_id = next;
    return e;
}

fl_err_t fl_manifest_list_write(int format_version, int64_t snapshot_id, int64_t parent_id,
                                int64_t seq, const fl_manifest_file_t *files, size_t n,
                                fl_avro_codec_t codec, fl_buf_t *out)
{
    return list_write(format_version, snapshot_id, parent_id, seq, false, 0, files, n, codec, out, NULL);
}

fl_err_t fl_manifest_list_write_v3(int64_t snapshot_id, int64_t parent_id, int64_t seq, int64_t first_row_id,
                                   const fl_manifest_file_t *files, size_t n, fl_avro_codec_t codec,
                                   fl_buf_t *out, int64_t *next_row_id)
{
    return list_write(3, snapshot_id, parent_id, seq, true, first_row_id, files, n, codec, out, next_row_id);
}

/* ======================================================================
 * reading: a decoding plan from the file's Avro schema
 * ====================================================================== */

/* ---- decoding helpers ---- */

typedef struct rd {
    fl_avro_schema_t *p;
    fl_avro_dec_t d;
    char *err;
    size_t errlen;
    int64_t items;           /* array/map items seen in this file, bounded */
} rd_t;

#define RERR(...) do { if (r->err && r->errlen) snprintf(r->err, r->errlen, __VA_ARGS__); } while (0)

/* Follow unions: *n becomes the branch taken; *null when it is "null". */
static fl_err_t unwrap(rd_t *r, int32_t *n, bool *null) { return fl_avro_follow_union(r->p, &r->d, n, null); }

static fl_err_t get_long_v(rd_t *r, int32_t n, bool *has, int64_t *v)
{
    bool null;
    fl_err_t e = unwrap(r, &n, &null);
    if (e) return e;
    *has = !null;
    if (null) return FL_OK;
    fl_avro_kind_t k = r->p->nodes[n].kind;
    if (k != FL_AVRO_T_INT && k != FL_AVRO_T_LONG) return FL_ERR_INVALID;
    return fl_avro_get_long(&r->d, v);
}

static fl_err_t get_int_v(rd_t *r, int32_t n, bool *has, int32_t *v)
{
    int64_t x = 0;
    fl_err_t e = get_long_v(r, n, has, &x);
    if (e) return e;
    if (x < INT32_MIN || x > INT32_MAX) return FL_ERR_INVALID;
    *v = (int32_t)x;
    return FL_OK;
}

static fl_err_t get_bool_v(rd_t *r, int32_t n, bool *has, bool *v)
{
    bool null;
    fl_err_t e = unwrap(r, &n, &null);
    if (e) return e;
    *has = !null;
    if (null) return FL_OK;
    if (r->p->nodes[n].kind != FL_AVRO_T_BOOL) return FL_ERR_INVALID;
    return fl_avro_get_bool(&r->d, v);
}

static fl_err_t get_bytes_v(rd_t *r, int32_t n, bool *has, fl_slice_t *v)
{
    bool null;
    fl_err_t e = unwrap(r, &n, &null);
    if (e) return e;
    *has = !null;
    if (null) return FL_OK;
    const fl_avro_node_t *a = &r->p->nodes[n];
    if (a->kind == FL_AVRO_T_FIXED) return fl_avro_get_fixed(&r->d, (size_t)a->size, v);
    if (a->kind != FL_AVRO_T_BYTES && a->kind != FL_AVRO_T_STRING) return FL_ERR_INVALID;
    return fl_avro_get_bytes(&r->d, v);
}

static char *dup_slice(fl_slice_t s)
{
    return fl_strndup(s.ptr ? s.ptr : "", s.len);
}

/* ---- manifest list ---- */

static fl_err_t read_summaries(rd_t *r, int32_t n, fl_manifest_file_t *m)
{
    bool null;
    fl_err_t e = unwrap(r, &n, &null);
    if (e) return e;
    if (null) return FL_OK;
    const fl_avro_node_t *arr = &r->p->nodes[n];
    if (arr->kind != FL_AVRO_T_ARRAY || r->p->nodes[arr->sub[0]].kind != FL_AVRO_T_RECORD) return FL_ERR_INVALID;
    if (m->has_partitions) return FL_ERR_INVALID; /* field given twice */
    m->has_partitions = true;
    const fl_avro_node_t *rec = &r->p->nodes[arr->sub[0]];
    size_t cap = 0;
    for (;;) {
        int64_t cnt;
        if ((e = fl_avro_get_block_count(&r->d, &cnt))) return e;
        if (!cnt) return FL_OK;
        for (int64_t i = 0; i < cnt; i++) {
            if (m->n_partitions >= FL_ICEBERG_MAX_FIELDS) return FL_ERR_TOO_LARGE;
            if (m->n_partitions == cap) {
                cap = cap ? cap * 2 : 4;
                m->partitions = fl_realloc(m->partitions, cap * sizeof *m->partitions);
            }
            fl_field_summary_t *s = &m->partitions[m->n_partitions++];
            memset(s, 0, sizeof *s);
            size_t before = fl_avro_dec_left(&r->d);
            for (int32_t f = 0; f < rec->n && !e; f++) {
                bool has;
                fl_slice_t b;
                switch (rec->ids[f]) {
                case 509: e = get_bool_v(r, rec->sub[f], &has, &s->contains_null); break;
                case 518: e = get_bool_v(r, rec->sub[f], &s->has_contains_nan, &s->contains_nan); break;
                case 510:
                case 511:
                    e = get_bytes_v(r, rec->sub[f], &has, &b);
                    if (!e && has) {
                        fl_buf_t *dst = rec->ids[f] == 510 ? &s->lower : &s->upper;
                        fl_buf_reset(dst);
                        e = fl_buf_add(dst, b.ptr, b.len);
                        if (!e && !dst->ptr) e = fl_buf_reserve(dst, 1);
                        if (rec->ids[f] == 510) s->has_lower = true;
                        else s->has_upper = true;
                    }
                    break;
                default: e = fl_avro_skip_value(r->p, &r->d, rec->sub[f], &r->items);
                }
            }
            if (e) return e;
            if (fl_avro_dec_left(&r->d) == before) return FL_ERR_INVALID;
        }
    }
}

static fl_err_t read_list_record(rd_t *r, int32_t root, fl_manifest_file_t *m)
{
    const fl_avro_node_t *rec = &r->p->nodes[root];
    fl_err_t e = FL_OK;
    for (int32_t f = 0; f < rec->n && !e; f++) {
        int32_t n = rec->sub[f];
        bool has = false;
        fl_slice_t s;
        switch (rec->ids[f]) {
        case 500:
            e = get_bytes_v(r, n, &has, &s);
            if (!e && has && !m->manifest_path) m->manifest_path = dup_slice(s);
            break;
        case 501: e = get_long_v(r, n, &has, &m->manifest_length); break;
        case 502: e = get_int_v(r, n, &has, &m->partition_spec_id); break;
        case 517: e = get_int_v(r, n, &has, &m->content); break;
        case 515: e = get_long_v(r, n, &has, &m->sequence_number); break;
        case 516: e = get_long_v(r, n, &has, &m->min_sequence_number); break;
        case 503: e = get_long_v(r, n, &has, &m->added_snapshot_id); break;
        case 504: e = get_int_v(r, n, &has, &m->added_files_count); break;
        case 505: e = get_int_v(r, n, &has, &m->existing_files_count); break;
        case 506: e = get_int_v(r, n, &has, &m->deleted_files_count); break;
        case 512: e = get_long_v(r, n, &has, &m->added_rows_count); break;
        case 513: e = get_long_v(r, n, &has, &m->existing_rows_count); break;
        case 514: e = get_long_v(r, n, &has, &m->deleted_rows_count); break;
        case 507: e = read_summaries(r, n, m); break;
        case 520: e = get_long_v(r, n, &m->has_first_row_id, &m->first_row_id); break;
        default: e = fl_avro_skip_value(r->p, &r->d, n, &r->items);
        }
    }
    if (!e && !m->manifest_path) e = FL_ERR_INVALID;
    return e;
}

static bool record_has_id(const fl_avro_schema_t *p, int32_t n, int32_t id)
{
    const fl_avro_node_t *a = &p->nodes[n];
    if (a->kind != FL_AVRO_T_RECORD) return false;
    for (int32_t i = 0; i < a->n; i++)
        if (a->ids[i] == id) return true;
    return false;
}

static fl_err_t open_plan(fl_slice_t file, fl_avro_reader_t *ar, fl_avro_schema_t *p, int32_t *root,
                          char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    fl_err_t e = fl_avro_reader_open(ar, file);
    if (e) {
        ERR("not an Avro container file (%s)", fl_err_str(e));
        return FL_ERR_INVALID;
    }
    json_error_t je;
    json_t *js = json_loadb(ar->schema.ptr, ar->schema.len, JSON_DECODE_ANY, &je);
    if (!js) {
        ERR("avro.schema is not JSON: %.100s", je.text);
        fl_avro_reader_close(ar);
        return FL_ERR_INVALID;
    }
    *root = fl_avro_schema_parse(p, js, err, errlen);
    json_decref(js);
    if (*root < 0 || p->nodes[*root].kind != FL_AVRO_T_RECORD) {
        if (*root >= 0) ERR("avro.schema is not a record");
        fl_avro_schema_free(p);
        fl_avro_reader_close(ar);
        return FL_ERR_INVALID;
    }
    return FL_OK;
}

/* Decode every record of the container: grows *arr (elements of elem bytes,
 * zeroed before each read) and calls read(ctx, root, element) with d positioned
 * on the record. what names the records in errors. */
typedef fl_err_t (*read_rec_fn)(void *ctx, int32_t root, void *out);

static fl_err_t read_records(fl_avro_reader_t *ar, fl_avro_dec_t *d, rd_t *r, const char *what,
                             read_rec_fn read, void *ctx, int32_t root, void **arr, size_t elem,
                             size_t *cnt)
{
    char *err = r->err;
    size_t errlen = r->errlen;
    size_t cap = 0;
    fl_err_t e = FL_OK;
    while (!e) {
        fl_slice_t blk;
        int64_t recs;
        bool done;
        if ((e = fl_avro_reader_next(ar, &blk, &recs, &done))) {
            ERR("bad Avro block (%s)", fl_err_str(e));
            break;
        }
        if (done) break;
        fl_avro_dec_init(d, blk);
        for (int64_t i = 0; i < recs && !e; i++) {
            if (*cnt >= FL_MANIFEST_MAX_ENTRIES) {
                ERR("%s has too many entries", what);
                e = FL_ERR_TOO_LARGE;
                break;
            }
            if (*cnt == cap) {
                cap = cap ? cap * 2 : 8;
                *arr = fl_realloc(*arr, cap * elem);
            }
            char *slot = (char *)*arr + *cnt * elem;
            memset(slot, 0, elem);
            (*cnt)++;
            size_t before = fl_avro_dec_left(d);
            e = read(ctx, root, slot);
            if (!e && fl_avro_dec_left(d) == before) e = FL_ERR_INVALID;
            if (e) ERR("%s record %zu is malformed", what, *cnt - 1);
        }
        if (!e && fl_avro_dec_left(d)) {
            ERR("trailing bytes in an Avro block");
            e = FL_ERR_INVALID;
        }
    }
    return e;
}

static fl_err_t read_list_cb(void *ctx, int32_t root, void *out) { return read_list_record(ctx, root, out); }

fl_err_t fl_manifest_list_read(fl_slice_t file, fl_manifest_file_t **files, size_t *n,
                               char *err, size_t errlen)
{
    *files = NULL;
    *n = 0;
    fl_avro_reader_t ar;
    fl_avro_schema_t p;
    int32_t root;
    fl_err_t e = open_plan(file, &ar, &p, &root, err, errlen);
    if (e) return e;
    if (!record_has_id(&p, root, 500)) {
        ERR("not a manifest list: no manifest_path (field 500)");
        e = FL_ERR_INVALID;
    }
    fl_manifest_file_t *out = NULL;
    size_t cnt = 0;
    rd_t r = { .p = &p, .err = err, .errlen = errlen };
    if (!e)
        e = read_records(&ar, &r.d, &r, "manifest list", read_list_cb, &r, root, (void **)&out, sizeof *out, &cnt);
    fl_avro_schema_free(&p);
    fl_avro_reader_close(&ar);
    if (e) {
        fl_manifest_files_free(out, cnt);
        return e == FL_ERR_TOO_LARGE ? e : FL_ERR_INVALID;
    }
    *files = out;
    *n = cnt;
    return FL_OK;
}

/* ---- manifest ---- */

typedef struct mkv { int32_t key; uint8_t which; int64_t v; fl_slice_t b; } mkv_t;

typedef struct mread {
    rd_t r;
    mkv_t *kv;
    size_t nkv, capkv;
} mread_t;

static int which_of_id(int32_t id)
{
    switch (id) {
    case 108: return 0;
    case 109: return 1;
    case 110: return 2;
    case 137: return 3;
    case 125: return 4;
    case 128: return 5;
    default: return -1;
    }
}

static fl_err_t read_metric_map(mread_t *m, int32_t n, int which)
{
    rd_t *r = &m->r;
    bool null;
    fl_err_t e = unwrap(r, &n, &null);
    if (e || null) return e;
    const fl_avro_node_t *a = &r->p->nodes[n];
    if (a->kind != FL_AVRO_T_ARRAY || r->p->nodes[a->sub[0]].kind != FL_AVRO_T_RECORD)
        return fl_avro_skip_value(r->p, &r->d, n, &r->items); /* an Avro map with string keys: not an Iceberg metric map */
    const fl_avro_node_t *rec = &r->p->nodes[a->sub[0]];
    int kpos = -1, vpos = -1;
    for (int32_t i = 0; i < rec->n; i++) {
        if (!strcmp(rec->fnames[i], "key")) kpos = i;
        else if (!strcmp(rec->fnames[i], "value")) vpos = i;
    }
    if (kpos < 0 || vpos < 0) return FL_ERR_INVALID;
    for (;;) {
        int64_t cnt;
        if ((e = fl_avro_get_block_count(&r->d, &cnt))) return e;
        if (!cnt) return FL_OK;
        for (int64_t i = 0; i < cnt; i++) {
            if (++r->items > FL_AVRO_MAX_ITEMS * 4LL) return FL_ERR_TOO_LARGE;
            mkv_t kv = { .which = (uint8_t)which };
            bool hk = false, hv = false;
            size_t before = fl_avro_dec_left(&r->d);
            for (int32_t f = 0; f < rec->n && !e; f++) {
                if (f == kpos) e = get_int_v(r, rec->sub[f], &hk, &kv.key);
                else if (f == vpos && which < 4) e = get_long_v(r, rec->sub[f], &hv, &kv.v);
                else if (f == vpos) e = get_bytes_v(r, rec->sub[f], &hv, &kv.b);
                else e = fl_avro_skip_value(r->p, &r->d, rec->sub[f], &r->items);
            }
            if (e) return e;
            if (fl_avro_dec_left(&r->d) == before) return FL_ERR_INVALID;
            if (!hk || !hv) continue;
            if (m->nkv == m->capkv) {
                m->capkv = m->capkv ? m->capkv * 2 : 32;
                m->kv = fl_realloc(m->kv, m->capkv * sizeof *m->kv);
            }
            m->kv[m->nkv++] = kv;
        }
    }
}

static int cmp_kv(const void *a, const void *b)
{
    const mkv_t *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->which > y->which) - (x->which < y->which);
}

static fl_err_t build_metrics(mread_t *m, fl_data_file_t *f)
{
    if (!m->nkv) return FL_OK;
    qsort(m->kv, m->nkv, sizeof *m->kv, cmp_kv);
    size_t distinct = 0;
    for (size_t i = 0; i < m->nkv; i++)
        if (!i || m->kv[i].key != m->kv[i - 1].key) distinct++;
    f->metrics = fl_calloc(distinct, sizeof *f->metrics);
    fl_col_metrics_t *c = NULL;
    for (size_t i = 0; i < m->nkv; i++) {
        const mkv_t *kv = &m->kv[i];
        if (!i || kv->key != m->kv[i - 1].key) {
            c = &f->metrics[f->n_metrics++];
            c->field_id = kv->key;
        }
        fl_err_t e = FL_OK;
        switch (kv->which) {
        case 0: c->has_column_size = true; c->column_size = kv->v; break;
        case 1: c->has_value_count = true; c->value_count = kv->v; break;
        case 2: c->has_null_count = true; c->null_count = kv->v; break;
        case 3: c->has_nan_count = true; c->nan_count = kv->v; break;
        case 4:
            fl_buf_reset(&c->lower);
            e = fl_buf_add(&c->lower, kv->b.ptr, kv->b.len);
            if (!e && !c->lower.ptr) e = fl_buf_reserve(&c->lower, 1);
            c->has_lower = true;
            break;
        default:
            fl_buf_reset(&c->upper);
            e = fl_buf_add(&c->upper, kv->b.ptr, kv->b.len);
            if (!e && !c->upper.ptr) e = fl_buf_reserve(&c->upper, 1);
            c->has_upper = true;
            break;
        }
        if (e) return e;
    }
    return FL_OK;
}

static fl_err_t read_part_value(rd_t *r, int32_t n, fl_ice_value_t *v)
{
    bool null;
    memset(v, 0, sizeof *v);
    fl_err_t e = unwrap(r, &n, &null);
    if (e || null) return e;
    const fl_avro_node_t *a = &r->p->nodes[n];
    int64_t x;
    fl_slice_t s;
    switch (a->kind) {
    case FL_AVRO_T_BOOL:
        v->kind = FL_ICE_BOOLEAN;
        return fl_avro_get_bool(&r->d, &v->u.b);
    case FL_AVRO_T_INT: {
        if ((e = fl_avro_get_long(&r->d, &x))) return e;
        if (x < INT32_MIN || x > INT32_MAX) return FL_ERR_INVALID;
        v->kind = a->logical == FL_AVRO_L_DATE ? FL_ICE_DATE : FL_ICE_INT;
        v->u.i = (int32_t)x;
        return FL_OK;
    }
    case FL_AVRO_T_LONG:
        switch (a->logical) {
        case FL_AVRO_L_TIME: v->kind = FL_ICE_TIME; break;
        case FL_AVRO_L_TS: v->kind = FL_ICE_TIMESTAMP; break;
        case FL_AVRO_L_TSTZ: v->kind = FL_ICE_TIMESTAMPTZ; break;
        case FL_AVRO_L_TS_NS: v->kind = FL_ICE_TIMESTAMP_NS; break;
        case FL_AVRO_L_TSTZ_NS: v->kind = FL_ICE_TIMESTAMPTZ_NS; break;
        default: v->kind = FL_ICE_LONG;
        }
        return fl_avro_get_long(&r->d, &v->u.l);
    case FL_AVRO_T_FLOAT:
        v->kind = FL_ICE_FLOAT;
        return fl_avro_get_float(&r->d, &v->u.f);
    case FL_AVRO_T_DOUBLE:
        v->kind = FL_ICE_DOUBLE;
        return fl_avro_get_double(&r->d, &v->u.d);
    case FL_AVRO_T_STRING: case FL_AVRO_T_BYTES: case FL_AVRO_T_FIXED:
        if (a->kind == FL_AVRO_T_FIXED) e = fl_avro_get_fixed(&r->d, (size_t)a->size, &s);
        else e = fl_avro_get_bytes(&r->d, &s);
        if (e) return e;
        if (a->logical == FL_AVRO_L_DECIMAL) {
            /* strip redundant sign bytes down to at most 16 */
            const unsigned char *q = (const unsigned char *)s.ptr;
            size_t len = s.len;
            while (len > 1 && ((q[0] == 0 && !(q[1] & 0x80)) || (q[0] == 0xff && (q[1] & 0x80)))) {
                q++;
                len--;
            }
            if (len < 1 || len > 16) return FL_ERR_INVALID;
            v->kind = FL_ICE_DECIMAL;
            memcpy(v->u.dec.unscaled, q, len);
            v->u.dec.len = (uint8_t)len;
            v->u.dec.scale = a->scale;
            return FL_OK;
        }
        if (a->logical == FL_AVRO_L_UUID && a->kind == FL_AVRO_T_FIXED) {
            if (s.len != 16) return FL_ERR_INVALID;
            v->kind = FL_ICE_UUID;
            memcpy(v->u.uuid, s.ptr, 16);
            return FL_OK;
        }
        v->kind = a->kind == FL_AVRO_T_STRING ? FL_ICE_STRING : a->kind == FL_AVRO_T_FIXED ? FL_ICE_FIXED : FL_ICE_BINARY;
        {
            unsigned char *cp = fl_malloc(s.len ? s.len : 1);
            if (s.len) memcpy(cp, s.ptr, s.len);
            v->u.bytes.ptr = cp;
            v->u.bytes.len = s.len;
        }
        return FL_OK;
    default:
        return FL_ERR_INVALID;
    }
}

static fl_err_t read_partition(rd_t *r, int32_t n, fl_data_file_t *f)
{
    bool null;
    fl_err_t e = unwrap(r, &n, &null);
    if (e || null) return e;
    const fl_avro_node_t *a = &r->p->nodes[n];
    if (a->kind != FL_AVRO_T_RECORD || f->partition) return FL_ERR_INVALID;
    f->partition = fl_calloc(a->n ? (size_t)a->n : 1, sizeof *f->partition);
    for (int32_t i = 0; i < a->n; i++) {
        f->n_partition = (size_t)i + 1;
        if ((e = read_part_value(r, a->sub[i], &f->partition[i]))) {
            f->partition[i].kind = FL_ICE_NULL;
            return e;
        }
    }
    return FL_OK;
}

/* An optional array of longs (split_offsets) or ints (equality_ids, ints = true)
 * into *arr / *n; a second occurrence is invalid. */
static fl_err_t read_num_array(rd_t *r, int32_t n, bool ints, void **arr, size_t *count)
{
    bool null;
    fl_err_t e = unwrap(r, &n, &null);
    if (e || null) return e;
    const fl_avro_node_t *a = &r->p->nodes[n];
    if (a->kind != FL_AVRO_T_ARRAY || *arr) return FL_ERR_INVALID;
    size_t cap = 4, w = ints ? sizeof(int32_t) : sizeof(int64_t);
    unsigned char *out = fl_malloc(cap * w);
    *arr = out;
    for (;;) {
        int64_t cnt;
        if ((e = fl_avro_get_block_count(&r->d, &cnt))) return e;
        if (!cnt) return FL_OK;
        for (int64_t i = 0; i < cnt; i++) {
            bool has;
            int64_t v = 0;
            int32_t v32 = 0;
            if (++r->items > FL_AVRO_MAX_ITEMS * 4LL) return FL_ERR_TOO_LARGE;
            size_t before = fl_avro_dec_left(&r->d);
            if ((e = ints ? get_int_v(r, a->sub[0], &has, &v32) : get_long_v(r, a->sub[0], &has, &v))) return e;
            if (fl_avro_dec_left(&r->d) == before) return FL_ERR_INVALID;
            if (!has) continue;
            if (*count == cap) {
                cap *= 2;
                out = fl_realloc(out, cap * w);
                *arr = out;
            }
            if (ints) memcpy(out + *count * w, &v32, w);
            else memcpy(out + *count * w, &v, w);
            (*count)++;
        }
    }
}

static fl_err_t read_data_file(mread_t *m, int32_t n, fl_data_file_t *f)
{
    rd_t *r = &m->r;
    bool null;
    fl_err_t e = unwrap(r, &n, &null);
    if (e) return e;
    if (null || r->p->nodes[n].kind != FL_AVRO_T_RECORD) return FL_ERR_INVALID;
    const fl_avro_node_t *rec = &r->p->nodes[n];
    m->nkv = 0;
    for (int32_t i = 0; i < rec->n && !e; i++) {
        int32_t c = rec->sub[i];
        bool has = false;
        fl_slice_t s;
        int w = which_of_id(rec->ids[i]);
        if (w >= 0) {
            e = read_metric_map(m, c, w);
            continue;
        }
        switch (rec->ids[i]) {
        case 134: e = get_int_v(r, c, &has, &f->content); break;
        case 100:
        case 101:
            e = get_bytes_v(r, c, &has, &s);
            if (!e && has) {
                char **dst = rec->ids[i] == 100 ? &f->file_path : &f->file_format;
                free(*dst);
                *dst = dup_slice(s);
            }
            break;
        case 102: e = read_partition(r, c, f); break;
        case 103: e = get_long_v(r, c, &has, &f->record_count); break;
        case 104: e = get_long_v(r, c, &has, &f->file_size_in_bytes); break;
        case 132: e = read_num_array(r, c, false, (void **)&f->split_offsets, &f->n_split_offsets); break;
        case 135: e = read_num_array(r, c, true, (void **)&f->equality_ids, &f->n_equality_ids); break;
        case 143:
            e = get_bytes_v(r, c, &has, &s);
            if (!e && has) {
                free(f->referenced_data_file);
                f->referenced_data_file = dup_slice(s);
            }
            break;
        case 144: e = get_long_v(r, c, &f->has_content_offset, &f->content_offset); break;
        case 145: {
            bool h;
            e = get_long_v(r, c, &h, &f->content_size_in_bytes);
            break;
        }
        case 140: e = get_int_v(r, c, &f->has_sort_order_id, &f->sort_order_id); break;
        case 142: e = get_long_v(r, c, &f->has_first_row_id, &f->first_row_id); break;
        default: e = fl_avro_skip_value(r->p, &r->d, c, &r->items);
        }
    }
    if (!e) e = build_metrics(m, f);
    if (!e && !f->file_path) e = FL_ERR_INVALID;
    if (!e && !f->file_format) f->file_format = fl_strdup("PARQUET");
    return e;
}

fl_err_t fl_data_file_decode(const fl_avro_schema_t *p, int32_t n, fl_avro_dec_t *d, int64_t *items,
                             fl_data_file_t *f)
{
    mread_t m = { .r = { .p = (fl_avro_schema_t *)p, .d = *d, .items = *items } };
    fl_err_t e = read_data_file(&m, n, f);
    *d = m.r.d;
    *items = m.r.items;
    free(m.kv);
    return e;
}

static fl_err_t read_entry(mread_t *m, int32_t root, fl_manifest_entry_t *en)
{
    rd_t *r = &m->r;
    const fl_avro_node_t *rec = &r->p->nodes[root];
    fl_err_t e = FL_OK;
    bool has, got_file = false;
    for (int32_t i = 0; i < rec->n && !e; i++) {
        int32_t c = rec->sub[i];
        switch (rec->ids[i]) {
        case 0: e = get_int_v(r, c, &has, &en->status); break;
        case 1: e = get_long_v(r, c, &en->has_snapshot_id, &en->snapshot_id); break;
        case 3: e = get_long_v(r, c, &en->has_sequence_number, &en->sequence_number); break;
        case 4: e = get_long_v(r, c, &en->has_file_sequence_number, &en->file_sequence_number); break;
        case 2:
            if (got_file) return FL_ERR_INVALID;
            got_file = true;
            e = read_data_file(m, c, &en->file);
            break;
        default: e = fl_avro_skip_value(r->p, &r->d, c, &r->items);
        }
    }
    if (!e && (!got_file || en->status < 0 || en->status > 2)) e = FL_ERR_INVALID;
    return e;
}

static fl_err_t read_entry_cb(void *ctx, int32_t root, void *out) { return read_entry(ctx, root, out); }

fl_err_t fl_manifest_read(fl_slice_t file, const fl_manifest_file_t *mf,
                          fl_manifest_entry_t **entries, size_t *n, char *err, size_t errlen)
{
    *entries = NULL;
    *n = 0;
    fl_avro_reader_t ar;
    fl_avro_schema_t p;
    int32_t root;
    fl_err_t e = open_plan(file, &ar, &p, &root, err, errlen);
    if (e) return e;
    int32_t df = -1;
    const fl_avro_node_t *rn = &p.nodes[root];
    for (int32_t i = 0; i < rn->n; i++)
        if (rn->ids[i] == 2) df = rn->sub[i];
    while (df >= 0 && p.nodes[df].kind == FL_AVRO_T_UNION && p.nodes[df].n == 2)
        df = p.nodes[df].sub[p.nodes[p.nodes[df].sub[0]].kind == FL_AVRO_T_NULL ? 1 : 0];
    if (df < 0 || !record_has_id(&p, df, 100)) {
        ERR("not a manifest: no data_file.file_path (fields 2, 100)");
        e = FL_ERR_INVALID;
    }
    mread_t m = { .r = { .p = &p, .err = err, .errlen = errlen } };
    fl_manifest_entry_t *out = NULL;
    size_t cnt = 0;
    if (!e)
        e = read_records(&ar, &m.r.d, &m.r, "manifest", read_entry_cb, &m, root, (void **)&out, sizeof *out, &cnt);
    free(m.kv);
    fl_avro_schema_free(&p);
    fl_avro_reader_close(&ar);
    if (e) {
        fl_manifest_entries_free(out, cnt);
        return e == FL_ERR_TOO_LARGE ? e : FL_ERR_INVALID;
    }
    /* inheritance (Iceberg readers: snapshot id always, sequence numbers for ADDED
     * entries and for every entry of a v1 manifest, whose list carries seq 0) */
    if (mf)
        for (size_t i = 0; i < cnt; i++) {
            fl_manifest_entry_t *en = &out[i];
            if (!en->has_snapshot_id) {
                en->has_snapshot_id = true;
                en->snapshot_id = mf->added_snapshot_id;
            }
            bool inherit = en->status == 1 || mf->sequence_number == 0;
            if (!en->has_sequence_number && inherit) {
                en->has_sequence_number = true;
                en->sequence_number = mf->sequence_number;
            }
            if (!en->has_file_sequence_number && inherit) {
                en->has_file_sequence_number = true;
                en->file_sequence_number = mf->sequence_number;
            }
        }
    /* v3 first_row_id inheritance: a live data file without one gets the
     * manifest's first_row_id plus the record counts of the files before it
     * that had none (spec "First Row ID Inheritance") */
    if (mf && mf->has_first_row_id && mf->content == 0) {
        int64_t next = mf->first_row_id;
        for (size_t i = 0; i < cnt; i++) {
            fl_manifest_entry_t *en = &out[i];
            if (en->status == 2 || en->file.content != 0 || en->file.has_first_row_id) continue;
            en->file.has_first_row_id = true;
            en->file.first_row_id = next;
            if (en->file.record_count > 0 && next <= INT64_MAX - en->file.record_count) next += en->file.record_count;
        }
    }
    *entries = out;
    *n = cnt;
    return FL_OK;
}
