/* Avro schemas as decoding plans (see avro_schema.h). */
#include "format/avro_schema.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/limits.h"
#include "base/mem.h"

#define PERR(...) do { if (p->err && p->errlen) snprintf(p->err, p->errlen, __VA_ARGS__); } while (0)

void fl_avro_schema_free(fl_avro_schema_t *p)
{
    for (int32_t i = 0; i < p->n; i++) {
        fl_avro_node_t *a = &p->nodes[i];
        free(a->name);
        free(a->sub);
        free(a->ids);
        if (a->fnames)
            for (int32_t j = 0; j < a->n; j++) free(a->fnames[j]);
        free(a->fnames);
        if (a->symbols)
            for (int32_t j = 0; j < a->size; j++) free(a->symbols[j]);
        free(a->symbols);
    }
    free(p->nodes);
    p->nodes = NULL;
    p->n = 0;
}

static int32_t new_node(fl_avro_schema_t *p, fl_avro_kind_t k)
{
    if (p->n >= FL_AVRO_MAX_SCHEMA_NODES) {
        PERR("Avro schema has too many types");
        return -1;
    }
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->nodes = fl_realloc(p->nodes, (size_t)p->cap * sizeof *p->nodes);
    }
    memset(&p->nodes[p->n], 0, sizeof p->nodes[p->n]);
    p->nodes[p->n].kind = k;
    return p->n++;
}

static bool prim_kind(const char *s, fl_avro_kind_t *k)
{
    static const struct { const char *n; fl_avro_kind_t k; } t[] = {
        { "null", FL_AVRO_T_NULL }, { "boolean", FL_AVRO_T_BOOL }, { "int", FL_AVRO_T_INT }, { "long", FL_AVRO_T_LONG },
        { "float", FL_AVRO_T_FLOAT }, { "double", FL_AVRO_T_DOUBLE }, { "bytes", FL_AVRO_T_BYTES }, { "string", FL_AVRO_T_STRING },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(s, t[i].n)) { *k = t[i].k; return true; }
    return false;
}

static int32_t lookup_named(fl_avro_schema_t *p, const char *name)
{
    const char *dot = strrchr(name, '.');
    const char *shortn = dot ? dot + 1 : name;
    for (int32_t i = 0; i < p->n; i++) {
        const char *nm = p->nodes[i].name;
        if (!nm) continue;
        const char *d2 = strrchr(nm, '.');
        if (!strcmp(nm, name) || !strcmp(d2 ? d2 + 1 : nm, shortn)) return i;
    }
    return -1;
}

static int32_t parse_node(fl_avro_schema_t *p, json_t *t, int depth);

static fl_avro_logical_t logical_of(json_t *o, fl_avro_kind_t k, int32_t *scale, int32_t *precision)
{
    const char *lt = json_string_value(json_object_get(o, "logicalType"));
    if (!lt) return FL_AVRO_L_NONE;
    json_t *adj = json_object_get(o, "adjust-to-utc");
    bool utc = adj ? json_is_true(adj) : true;
    if (k == FL_AVRO_T_INT && !strcmp(lt, "date")) return FL_AVRO_L_DATE;
    if (k == FL_AVRO_T_LONG && !strcmp(lt, "time-micros")) return FL_AVRO_L_TIME;
    if (k == FL_AVRO_T_LONG && !strcmp(lt, "timestamp-micros")) return utc ? FL_AVRO_L_TSTZ : FL_AVRO_L_TS;
    if (k == FL_AVRO_T_LONG && !strcmp(lt, "local-timestamp-micros")) return FL_AVRO_L_TS;
    if (k == FL_AVRO_T_LONG && !strcmp(lt, "timestamp-nanos")) return utc ? FL_AVRO_L_TSTZ_NS : FL_AVRO_L_TS_NS;
    if (k == FL_AVRO_T_LONG && !strcmp(lt, "local-timestamp-nanos")) return FL_AVRO_L_TS_NS;
    if (k == FL_AVRO_T_INT && !strcmp(lt, "time-millis")) return FL_AVRO_L_TIME_MS;
    if (k == FL_AVRO_T_LONG && !strcmp(lt, "timestamp-millis")) return FL_AVRO_L_TSTZ_MS;
    if (k == FL_AVRO_T_LONG && !strcmp(lt, "local-timestamp-millis")) return FL_AVRO_L_TS_MS;
    if ((k == FL_AVRO_T_FIXED || k == FL_AVRO_T_BYTES) && !strcmp(lt, "decimal")) {
        json_t *s = json_object_get(o, "scale");
        json_int_t v = json_is_integer(s) ? json_integer_value(s) : 0;
        *scale = v >= 0 && v <= 38 ? (int32_t)v : 0;
        json_t *pr = json_object_get(o, "precision");
        v = json_is_integer(pr) ? json_integer_value(pr) : 0;
        *precision = v > 0 && v <= 38 ? (int32_t)v : 0;
        return FL_AVRO_L_DECIMAL;
    }
    if ((k == FL_AVRO_T_FIXED || k == FL_AVRO_T_STRING) && !strcmp(lt, "uuid")) return FL_AVRO_L_UUID;
    return FL_AVRO_L_OTHER;
}

static int32_t parse_node(fl_avro_schema_t *p, json_t *t, int depth)
{
    if (depth > FL_AVRO_MAX_SCHEMA_DEPTH) {
        PERR("Avro schema nested too deeply");
        return -1;
    }
    fl_avro_kind_t k;
    if (json_is_string(t)) {
        const char *s = json_string_value(t);
        if (prim_kind(s, &k)) return new_node(p, k);
        int32_t r = lookup_named(p, s);
        if (r < 0) PERR("Avro schema: unknown type \"%.64s\"", s);
        return r;
    }
    if (json_is_array(t)) {
        size_t nb = json_array_size(t);
        if (nb == 0 || nb > 64) {
            PERR("Avro schema: bad union");
            return -1;
        }
        int32_t id = new_node(p, FL_AVRO_T_UNION);
        if (id < 0) return -1;
        int32_t *sub = fl_calloc(nb, sizeof *sub);
        p->nodes[id].sub = sub;
        p->nodes[id].n = (int32_t)nb;
        for (size_t i = 0; i < nb; i++) {
            int32_t c = parse_node(p, json_array_get(t, i), depth + 1);
            if (c < 0) return -1;
            p->nodes[id].sub[i] = c;
        }
        return id;
    }
    if (!json_is_object(t)) {
        PERR("Avro schema: bad type");
        return -1;
    }
    json_t *ty = json_object_get(t, "type");
    if (!json_is_string(ty)) {
        if (json_is_object(ty) || json_is_array(ty)) return parse_node(p, ty, depth + 1);
        PERR("Avro schema: type without \"type\"");
        return -1;
    }
    const char *s = json_string_value(ty);
    int32_t id, scale = 0, precision = 0;
    if (prim_kind(s, &k)) {
        if ((id = new_node(p, k)) < 0) return -1;
        p->nodes[id].logical = logical_of(t, k, &scale, &precision);
        p->nodes[id].scale = scale;
        p->nodes[id].precision = precision;
        return id;
    }
    const char *name = json_string_value(json_object_get(t, "name"));
    if (!strcmp(s, "fixed")) {
        json_t *sz = json_object_get(t, "size");
        if (!json_is_integer(sz) || json_integer_value(sz) < 0 || json_integer_value(sz) > (1 << 20) || !name) {
            PERR("Avro schema: bad fixed");
            return -1;
        }
        if ((id = new_node(p, FL_AVRO_T_FIXED)) < 0) return -1;
        p->nodes[id].size = (int32_t)json_integer_value(sz);
        p->nodes[id].name = fl_strdup(name);
        p->nodes[id].logical = logical_of(t, FL_AVRO_T_FIXED, &scale, &precision);
        p->nodes[id].scale = scale;
        p->nodes[id].precision = precision;
        return id;
    }
    if (!strcmp(s, "enum")) {
        json_t *sy = json_object_get(t, "symbols");
        if (!json_is_array(sy) || !json_array_size(sy) || !name) {
            PERR("Avro schema: bad enum");
            return -1;
        }
        size_t ns = json_array_size(sy);
        for (size_t i = 0; i < ns; i++)
            if (!json_is_string(json_array_get(sy, i))) {
                PERR("Avro schema: bad enum");
                return -1;
            }
        if ((id = new_node(p, FL_AVRO_T_ENUM)) < 0) return -1;
        p->nodes[id].size = (int32_t)ns;
        p->nodes[id].name = fl_strdup(name);
        p->nodes[id].symbols = fl_calloc(ns, sizeof(char *));
        for (size_t i = 0; i < ns; i++) p->nodes[id].symbols[i] = fl_strdup(json_string_value(json_array_get(sy, i)));
        return id;
    }
    if (!strcmp(s, "array") || !strcmp(s, "map")) {
        bool arr = !strcmp(s, "array");
        if ((id = new_node(p, arr ? FL_AVRO_T_ARRAY : FL_AVRO_T_MAP)) < 0) return -1;
        p->nodes[id].sub = fl_calloc(1, sizeof(int32_t));
        p->nodes[id].n = 1;
        int32_t c = parse_node(p, json_object_get(t, arr ? "items" : "values"), depth + 1);
        if (c < 0) return -1;
        p->nodes[id].sub[0] = c;
        return id;
    }
    if (!strcmp(s, "record") || !strcmp(s, "error")) {
        json_t *fields = json_object_get(t, "fields");
        if (!json_is_array(fields) || !name || json_array_size(fields) > FL_ICEBERG_MAX_FIELDS) {
            PERR("Avro schema: bad record");
            return -1;
        }
        size_t nf = json_array_size(fields);
        if ((id = new_node(p, FL_AVRO_T_RECORD)) < 0) return -1;
        p->nodes[id].name = fl_strdup(name); /* before the fields: recursive references */
        p->nodes[id].sub = fl_calloc(nf ? nf : 1, sizeof(int32_t));
        p->nodes[id].ids = fl_calloc(nf ? nf : 1, sizeof(int32_t));
        p->nodes[id].fnames = fl_calloc(nf ? nf : 1, sizeof(char *));
        p->nodes[id].n = (int32_t)nf;
        for (size_t i = 0; i < nf; i++) {
            json_t *f = json_array_get(fields, i);
            const char *fname = json_string_value(json_object_get(f, "name"));
            json_t *fid = json_object_get(f, "field-id");
            p->nodes[id].fnames[i] = fl_strdup(fname ? fname : "");
            p->nodes[id].ids[i] = json_is_integer(fid) && json_integer_value(fid) >= 0 &&
                                  json_integer_value(fid) <= INT32_MAX ? (int32_t)json_integer_value(fid) : -1;
            p->nodes[id].sub[i] = -1;
            int32_t c = parse_node(p, json_object_get(f, "type"), depth + 1);
            if (c < 0) return -1;
            p->nodes[id].sub[i] = c;
        }
        return id;
    }
    int32_t r = lookup_named(p, s);
    if (r < 0) PERR("Avro schema: unknown type \"%.64s\"", s);
    return r;
}

int32_t fl_avro_schema_parse(fl_avro_schema_t *p, json_t *t, char *err, size_t errlen)
{
    p->err = err;
    p->errlen = errlen;
    int32_t root = parse_node(p, t, 0);
    p->err = NULL;
    p->errlen = 0;
    return root;
}

static fl_err_t skip_rec(const fl_avro_schema_t *s, fl_avro_dec_t *d, int32_t n, int64_t *items, int depth)
{
    if (depth > FL_AVRO_MAX_SCHEMA_DEPTH * 2) return FL_ERR_INVALID;
    const fl_avro_node_t *a = &s->nodes[n];
    int64_t x;
    fl_slice_t sl;
    switch (a->kind) {
    case FL_AVRO_T_NULL: return FL_OK;
    case FL_AVRO_T_BOOL: { bool b; return fl_avro_get_bool(d, &b); }
    case FL_AVRO_T_INT: case FL_AVRO_T_LONG: case FL_AVRO_T_ENUM: return fl_avro_get_long(d, &x);
    case FL_AVRO_T_FLOAT: return fl_avro_skip(d, 4);
    case FL_AVRO_T_DOUBLE: return fl_avro_skip(d, 8);
    case FL_AVRO_T_BYTES: case FL_AVRO_T_STRING: return fl_avro_get_bytes(d, &sl);
    case FL_AVRO_T_FIXED: return fl_avro_skip(d, (size_t)a->size);
    case FL_AVRO_T_RECORD:
        for (int32_t i = 0; i < a->n; i++) {
            fl_err_t e = skip_rec(s, d, a->sub[i], items, depth + 1);
            if (e) return e;
        }
        return FL_OK;
    case FL_AVRO_T_UNION: {
        int64_t br;
        fl_err_t e = fl_avro_get_union(d, a->n, &br);
        return e ? e : skip_rec(s, d, a->sub[br], items, depth + 1);
    }
    case FL_AVRO_T_ARRAY: case FL_AVRO_T_MAP:
        for (;;) {
            int64_t cnt;
            fl_err_t e = fl_avro_get_block_count(d, &cnt);
            if (e) return e;
            if (!cnt) return FL_OK;
            for (int64_t i = 0; i < cnt; i++) {
                if (++*items > FL_AVRO_MAX_ITEMS * 4LL) return FL_ERR_TOO_LARGE;
                size_t before = fl_avro_dec_left(d);
                if (a->kind == FL_AVRO_T_MAP && (e = fl_avro_get_string(d, &sl))) return e;
                if ((e = skip_rec(s, d, a->sub[0], items, depth + 1))) return e;
                if (fl_avro_dec_left(d) == before) return FL_ERR_INVALID; /* zero-width items */
            }
        }
    }
    return FL_ERR_INVALID;
}

fl_err_t fl_avro_skip_value(const fl_avro_schema_t *s, fl_avro_dec_t *d, int32_t n, int64_t *items)
{
    if (n < 0 || n >= s->n) return FL_ERR_INVALID;
    return skip_rec(s, d, n, items, 0);
}

fl_err_t fl_avro_follow_union(const fl_avro_schema_t *s, fl_avro_dec_t *d, int32_t *n, bool *null)
{
    *null = false;
    for (int i = 0; s->nodes[*n].kind == FL_AVRO_T_UNION; i++) {
        int64_t br;
        if (i > 4) return FL_ERR_INVALID;
        fl_err_t e = fl_avro_get_union(d, s->nodes[*n].n, &br);
        if (e) return e;
        *n = s->nodes[*n].sub[br];
    }
    *null = s->nodes[*n].kind == FL_AVRO_T_NULL;
    return FL_OK;
}
