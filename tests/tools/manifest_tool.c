/* Test tool for the manifest interop tests (tests/integration/test_manifest_interop.py).
 *
 *   manifest_tool write DESC.json      write a manifest and a manifest list described by
 *                                      DESC (see below); prints the manifest_file record
 *   manifest_tool read-list FILE       print a manifest list as JSON
 *   manifest_tool read-manifest FILE [SEQ SNAPSHOT_ID]
 *                                      print a manifest's entries as JSON; with SEQ and
 *                                      SNAPSHOT_ID, null ids/sequence numbers are inherited
 *
 * DESC: {"format_version":2, "schema":{Iceberg schema}, "spec":{partition spec},
 *        "snapshot_id":N, "parent_id":N|-1, "seq":N, "codec":"deflate",
 *        "manifest_path":P, "list_path":P,
 *        "entries":[{"status":1, "snapshot_id"?, "sequence_number"?, "file_sequence_number"?,
 *                    "content":0, "file_path":..., "file_format":"PARQUET",
 *                    "partition":[values], "record_count":N, "file_size_in_bytes":N,
 *                    "column_sizes":{"1":N}, "value_counts", "null_value_counts",
 *                    "nan_value_counts", "lower_bounds":{"1":"hex"}, "upper_bounds",
 *                    "split_offsets":[N], "sort_order_id":N}]}
 * Partition values follow the spec field's result type: numbers for int/long/date/time/
 * timestamps (days, micros), strings for string, hex strings for binary/fixed/uuid, and
 * decimals as strings of the unscaled integer. Output bytes (bounds, binary values) are hex. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/mem.h"
#include "iceberg/manifest.h"
#include "iceberg/schema.h"

static int die(const char *msg, const char *detail)
{
    fprintf(stderr, "manifest_tool: %s%s%s\n", msg, detail ? ": " : "", detail ? detail : "");
    return 1;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) { fclose(f); free(b); return NULL; }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static int write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(p, 1, n, f);
    return fclose(f) || w != n ? -1 : 0;
}

static json_t *hexj(const void *p, size_t n)
{
    char *h = malloc(2 * n + 1);
    fl_hex(p, n, h);
    json_t *j = json_string(h);
    free(h);
    return j;
}

static size_t unhex(const char *s, unsigned char *out, size_t cap)
{
    size_t n = strlen(s) / 2;
    if (n > cap) n = cap;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(s + 2 * i, "%2x", &v);
        out[i] = (unsigned char)v;
    }
    return n;
}

static json_t *value_json(const fl_ice_value_t *v)
{
    switch (v->kind) {
    case FL_ICE_NULL: return json_null();
    case FL_ICE_BOOLEAN: return json_boolean(v->u.b);
    case FL_ICE_INT: case FL_ICE_DATE: return json_integer(v->u.i);
    case FL_ICE_FLOAT: return json_real(v->u.f);
    case FL_ICE_DOUBLE: return json_real(v->u.d);
    case FL_ICE_STRING: return json_stringn((const char *)v->u.bytes.ptr, v->u.bytes.len);
    case FL_ICE_FIXED: case FL_ICE_BINARY: return hexj(v->u.bytes.ptr, v->u.bytes.len);
    case FL_ICE_UUID: return hexj(v->u.uuid, 16);
    case FL_ICE_DECIMAL: return hexj(v->u.dec.unscaled, v->u.dec.len);
    default: return json_integer(v->u.l);
    }
}

static const char *kind_name(fl_ice_kind_t k)
{
    static const char *n[] = { "null", "boolean", "int", "long", "float", "double", "decimal",
                               "date", "time", "timestamp", "timestamptz", "timestamp_ns",
                               "timestamptz_ns", "string", "uuid", "fixed", "binary" };
    return (unsigned)k < sizeof n / sizeof n[0] ? n[k] : "?";
}

static json_t *mf_json(const fl_manifest_file_t *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "manifest_path", json_string(m->manifest_path));
    json_object_set_new(o, "manifest_length", json_integer(m->manifest_length));
    json_object_set_new(o, "partition_spec_id", json_integer(m->partition_spec_id));
    json_object_set_new(o, "content", json_integer(m->content));
    json_object_set_new(o, "sequence_number", json_integer(m->sequence_number));
    json_object_set_new(o, "min_sequence_number", json_integer(m->min_sequence_number));
    json_object_set_new(o, "added_snapshot_id", json_integer(m->added_snapshot_id));
    json_object_set_new(o, "added_files_count", json_integer(m->added_files_count));
    json_object_set_new(o, "existing_files_count", json_integer(m->existing_files_count));
    json_object_set_new(o, "deleted_files_count", json_integer(m->deleted_files_count));
    json_object_set_new(o, "added_rows_count", json_integer(m->added_rows_count));
    json_object_set_new(o, "existing_rows_count", json_integer(m->existing_rows_count));
    json_object_set_new(o, "deleted_rows_count", json_integer(m->deleted_rows_count));
    if (m->has_first_row_id) json_object_set_new(o, "first_row_id", json_integer(m->first_row_id));
    if (!m->has_partitions) {
        json_object_set_new(o, "partitions", json_null());
    } else {
        json_t *a = json_array();
        for (size_t i = 0; i < m->n_partitions; i++) {
            const fl_field_summary_t *s = &m->partitions[i];
            json_t *p = json_object();
            json_object_set_new(p, "contains_null", json_boolean(s->contains_null));
            json_object_set_new(p, "contains_nan", s->has_contains_nan ? json_boolean(s->contains_nan) : json_null());
            json_object_set_new(p, "lower_bound", s->has_lower ? hexj(s->lower.ptr, s->lower.len) : json_null());
            json_object_set_new(p, "upper_bound", s->has_upper ? hexj(s->upper.ptr, s->upper.len) : json_null());
            json_array_append_new(a, p);
        }
        json_object_set_new(o, "partitions", a);
    }
    return o;
}

static json_t *entry_json(const fl_manifest_entry_t *e)
{
    json_t *o = json_object(), *f = json_object(), *p = json_array(), *k = json_array();
    json_object_set_new(o, "status", json_integer(e->status));
    json_object_set_new(o, "snapshot_id", e->has_snapshot_id ? json_integer(e->snapshot_id) : json_null());
    json_object_set_new(o, "sequence_number", e->has_sequence_number ? json_integer(e->sequence_number) : json_null());
    json_object_set_new(o, "file_sequence_number",
                        e->has_file_sequence_number ? json_integer(e->file_sequence_number) : json_null());
    const fl_data_file_t *d = &e->file;
    json_object_set_new(f, "content", json_integer(d->content));
    json_object_set_new(f, "file_path", json_string(d->file_path));
    json_object_set_new(f, "file_format", json_string(d->file_format));
    for (size_t i = 0; i < d->n_partition; i++) {
        json_array_append_new(p, value_json(&d->partition[i]));
        json_array_append_new(k, json_string(kind_name(d->partition[i].kind)));
    }
    json_object_set_new(f, "partition", p);
    json_object_set_new(f, "partition_kinds", k);
    json_object_set_new(f, "record_count", json_integer(d->record_count));
    json_object_set_new(f, "file_size_in_bytes", json_integer(d->file_size_in_bytes));
    const char *names[] = { "column_sizes", "value_counts", "null_value_counts", "nan_value_counts",
                            "lower_bounds", "upper_bounds" };
    for (int w = 0; w < 6; w++) {
        json_t *m = json_object();
        for (size_t i = 0; i < d->n_metrics; i++) {
            const fl_col_metrics_t *c = &d->metrics[i];
            char key[16];
            snprintf(key, sizeof key, "%d", c->field_id);
            switch (w) {
            case 0: if (c->has_column_size) json_object_set_new(m, key, json_integer(c->column_size)); break;
            case 1: if (c->has_value_count) json_object_set_new(m, key, json_integer(c->value_count)); break;
            case 2: if (c->has_null_count) json_object_set_new(m, key, json_integer(c->null_count)); break;
            case 3: if (c->has_nan_count) json_object_set_new(m, key, json_integer(c->nan_count)); break;
            case 4: if (c->has_lower) json_object_set_new(m, key, hexj(c->lower.ptr, c->lower.len)); break;
            default: if (c->has_upper) json_object_set_new(m, key, hexj(c->upper.ptr, c->upper.len)); break;
            }
        }
        json_object_set_new(f, names[w], m);
    }
    if (d->split_offsets) {
        json_t *a = json_array();
        for (size_t i = 0; i < d->n_split_offsets; i++) json_array_append_new(a, json_integer(d->split_offsets[i]));
        json_object_set_new(f, "split_offsets", a);
    } else {
        json_object_set_new(f, "split_offsets", json_null());
    }
    json_object_set_new(f, "sort_order_id", d->has_sort_order_id ? json_integer(d->sort_order_id) : json_null());
    json_object_set_new(o, "data_file", f);
    return o;
}

static void print_json(json_t *j)
{
    char *s = json_dumps(j, JSON_INDENT(1));
    puts(s);
    free(s);
    json_decref(j);
}

static int parse_value(json_t *j, const fl_part_field_t *pf, fl_ice_value_t *v, unsigned char *scratch)
{
    memset(v, 0, sizeof *v);
    if (json_is_null(j) || !j) return 0;
    v->kind = pf->result_kind;
    switch (v->kind) {
    case FL_ICE_BOOLEAN: v->u.b = json_is_true(j); break;
    case FL_ICE_INT: case FL_ICE_DATE: v->u.i = (int32_t)json_integer_value(j); break;
    case FL_ICE_FLOAT: v->u.f = (float)json_number_value(j); break;
    case FL_ICE_DOUBLE: v->u.d = json_number_value(j); break;
    case FL_ICE_STRING:
        v->u.bytes.ptr = (const unsigned char *)json_string_value(j);
        v->u.bytes.len = json_string_length(j);
        break;
    case FL_ICE_FIXED: case FL_ICE_BINARY:
        v->u.bytes.len = unhex(json_string_value(j), scratch, 4096);
        v->u.bytes.ptr = scratch;
        break;
    case FL_ICE_UUID: unhex(json_string_value(j), v->u.uuid, 16); break;
    case FL_ICE_DECIMAL: {
        __int128 x = 0;
        const char *s = json_string_value(j);
        bool neg = s && *s == '-';
        for (const char *q = s + neg; q && *q; q++) x = x * 10 + (*q - '0');
        if (neg) x = -x;
        unsigned char b[16];
        unsigned __int128 u = (unsigned __int128)x;
        for (int i = 15; i >= 0; i--, u >>= 8) b[i] = (unsigned char)u;
        int st = 0;
        while (st < 15 && ((b[st] == 0 && !(b[st + 1] & 0x80)) || (b[st] == 0xff && (b[st + 1] & 0x80)))) st++;
        memcpy(v->u.dec.unscaled, b + st, (size_t)(16 - st));
        v->u.dec.len = (uint8_t)(16 - st);
        v->u.dec.scale = pf->source ? pf->source->scale : 0;
        break;
    }
    default: v->u.l = (int64_t)json_integer_value(j); break;
    }
    return 0;
}

static void metrics_from(json_t *de, fl_data_file_t *f)
{
    const char *names[] = { "column_sizes", "value_counts", "null_value_counts", "nan_value_counts",
                            "lower_bounds", "upper_bounds" };
    for (int w = 0; w < 6; w++) {
        json_t *m = json_object_get(de, names[w]);
        const char *key;
        json_t *val;
        json_object_foreach(m, key, val) {
            int32_t id = atoi(key);
            fl_col_metrics_t *c = NULL;
            for (size_t i = 0; i < f->n_metrics; i++)
                if (f->metrics[i].field_id == id) c = &f->metrics[i];
            if (!c) {
                f->metrics = fl_realloc(f->metrics, (f->n_metrics + 1) * sizeof *f->metrics);
                c = &f->metrics[f->n_metrics++];
                memset(c, 0, sizeof *c);
                c->field_id = id;
            }
            unsigned char buf[4096];
            size_t n;
            switch (w) {
            case 0: c->has_column_size = true; c->column_size = json_integer_value(val); break;
            case 1: c->has_value_count = true; c->value_count = json_integer_value(val); break;
            case 2: c->has_null_count = true; c->null_count = json_integer_value(val); break;
            case 3: c->has_nan_count = true; c->nan_count = json_integer_value(val); break;
            case 4:
                n = unhex(json_string_value(val), buf, sizeof buf);
                fl_buf_add(&c->lower, buf, n);
                if (!c->lower.ptr) fl_buf_reserve(&c->lower, 1);
                c->has_lower = true;
                break;
            default:
                n = unhex(json_string_value(val), buf, sizeof buf);
                fl_buf_add(&c->upper, buf, n);
                if (!c->upper.ptr) fl_buf_reserve(&c->upper, 1);
                c->has_upper = true;
                break;
            }
        }
    }
}

static int cmd_write(const char *desc_path)
{
    json_error_t je;
    json_t *d = json_load_file(desc_path, 0, &je);
    if (!d) return die("bad description", je.text);
    char err[256] = "";
    fl_field_t schema;
    int32_t sid;
    if (fl_schema_from_json(json_object_get(d, "schema"), &schema, &sid, err, sizeof err))
        return die("schema", err);
    fl_part_spec_t spec;
    if (fl_part_spec_from_json(json_object_get(d, "spec"), &schema, &spec, err, sizeof err))
        return die("spec", err);
    int fv = (int)json_integer_value(json_object_get(d, "format_version"));
    int64_t snap = json_integer_value(json_object_get(d, "snapshot_id"));
    json_t *jp = json_object_get(d, "parent_id");
    int64_t parent = json_is_integer(jp) ? json_integer_value(jp) : -1;
    int64_t seq = json_integer_value(json_object_get(d, "seq"));
    const char *cname = json_string_value(json_object_get(d, "codec"));
    fl_avro_codec_t codec = FL_AVRO_CODEC_DEFLATE;
    if (cname && fl_avro_codec_parse(fl_slice_cstr(cname), &codec)) return die("codec", cname);
    json_t *jc = json_object_get(d, "content");
    fl_manifest_writer_t w;
    if (fl_manifest_writer_open(&w, fv ? fv : 2, &schema, sid, &spec,
                                json_is_integer(jc) ? (int32_t)json_integer_value(jc) : 0, snap, codec))
        return die("writer open failed", NULL);
    size_t i;
    json_t *je2;
    json_array_foreach(json_object_get(d, "entries"), i, je2) {
        fl_manifest_entry_t e;
        memset(&e, 0, sizeof e);
        json_t *df = json_object_get(je2, "data_file") ? json_object_get(je2, "data_file") : je2;
        json_t *x;
        e.status = json_is_integer(x = json_object_get(je2, "status")) ? (int32_t)json_integer_value(x) : 1;
        if (json_is_integer(x = json_object_get(je2, "snapshot_id"))) { e.has_snapshot_id = true; e.snapshot_id = json_integer_value(x); }
        if (json_is_integer(x = json_object_get(je2, "sequence_number"))) { e.has_sequence_number = true; e.sequence_number = json_integer_value(x); }
        if (json_is_integer(x = json_object_get(je2, "file_sequence_number"))) { e.has_file_sequence_number = true; e.file_sequence_number = json_integer_value(x); }
        fl_data_file_t *f = &e.file;
        f->content = (int32_t)json_integer_value(json_object_get(df, "content"));
        f->file_path = fl_strdup(json_string_value(json_object_get(df, "file_path")) ?: "");
        f->file_format = fl_strdup(json_string_value(json_object_get(df, "file_format")) ?: "PARQUET");
        json_t *parts = json_object_get(df, "partition");
        for (size_t k = 0; k < spec.n_fields; k++) {
            fl_ice_value_t v;
            static unsigned char scratch[4096];
            parse_value(json_array_get(parts, k), &spec.fields[k], &v, scratch);
            fl_data_file_set_partition(f, k, &v);
        }
        f->record_count = json_integer_value(json_object_get(df, "record_count"));
        f->file_size_in_bytes = json_integer_value(json_object_get(df, "file_size_in_bytes"));
        metrics_from(df, f);
        json_t *so = json_object_get(df, "split_offsets");
        if (json_is_array(so)) {
            f->n_split_offsets = json_array_size(so);
            f->split_offsets = fl_calloc(f->n_split_offsets + 1, sizeof(int64_t));
            for (size_t k = 0; k < f->n_split_offsets; k++) f->split_offsets[k] = json_integer_value(json_array_get(so, k));
        }
        if (json_is_integer(x = json_object_get(df, "sort_order_id"))) { f->has_sort_order_id = true; f->sort_order_id = (int32_t)json_integer_value(x); }
        fl_err_t er = fl_manifest_writer_add(&w, &e);
        fl_data_file_free(f);
        if (er) return die("add entry failed", fl_err_str(er));
    }
    const char *mpath = json_string_value(json_object_get(d, "manifest_path"));
    const char *lpath = json_string_value(json_object_get(d, "list_path"));
    fl_buf_t bytes;
    fl_manifest_file_t mf;
    if (fl_manifest_writer_finish(&w, mpath, seq, &bytes, &mf)) return die("finish failed", NULL);
    fl_manifest_writer_free(&w);
    if (write_file(mpath, bytes.ptr, bytes.len)) return die("cannot write", mpath);
    fl_buf_t list;
    fl_buf_init(&list, 0);
    if (lpath) {
        if (fl_manifest_list_write(fv ? fv : 2, snap, parent, seq, &mf, 1, codec, &list))
            return die("list write failed", NULL);
        if (write_file(lpath, list.ptr, list.len)) return die("cannot write", lpath);
    }
    print_json(mf_json(&mf));
    fl_manifest_file_free(&mf);
    fl_buf_free(&bytes);
    fl_buf_free(&list);
    fl_part_spec_free(&spec);
    fl_field_free(&schema);
    json_decref(d);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) return die("usage: manifest_tool write DESC | read-list FILE | read-manifest FILE [SEQ SNAP]", NULL);
    if (!strcmp(argv[1], "write")) return cmd_write(argv[2]);
    size_t len;
    char *b = read_file(argv[2], &len);
    if (!b) return die("cannot read", argv[2]);
    char err[256] = "";
    int rc = 0;
    if (!strcmp(argv[1], "read-list")) {
        fl_manifest_file_t *fs;
        size_t n;
        if (fl_manifest_list_read(fl_slice(b, len), &fs, &n, err, sizeof err)) {
            rc = die("read-list", err);
        } else {
            json_t *a = json_array();
            for (size_t i = 0; i < n; i++) json_array_append_new(a, mf_json(&fs[i]));
            print_json(a);
            fl_manifest_files_free(fs, n);
        }
    } else if (!strcmp(argv[1], "read-manifest")) {
        fl_manifest_file_t mf;
        memset(&mf, 0, sizeof mf);
        bool inherit = argc >= 5;
        if (inherit) {
            mf.sequence_number = strtoll(argv[3], NULL, 10);
            mf.added_snapshot_id = strtoll(argv[4], NULL, 10);
        }
        fl_manifest_entry_t *es;
        size_t n;
        if (fl_manifest_read(fl_slice(b, len), inherit ? &mf : NULL, &es, &n, err, sizeof err)) {
            rc = die("read-manifest", err);
        } else {
            json_t *a = json_array();
            for (size_t i = 0; i < n; i++) json_array_append_new(a, entry_json(&es[i]));
            print_json(a);
            fl_manifest_entries_free(es, n);
        }
    } else {
        rc = die("unknown command", argv[1]);
    }
    free(b);
    return rc;
}
