/* Iceberg schema JSON <-> fl_field_t trees, projections, vector slots as
 * transform values, and partition specs bound to a schema (schema.h). */
#include "iceberg/schema.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/limits.h"
#include "base/mem.h"

#define ERR(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); } while (0)

/* ---- JSON -> fields ---- */

typedef struct parse_ctx {
    size_t nfields;
    char *err;
    size_t errlen;
} parse_ctx_t;

static fl_err_t parse_type(parse_ctx_t *c, json_t *t, fl_field_t *f, int depth);

static bool get_id(json_t *o, const char *key, int32_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) return false;
    json_int_t x = json_integer_value(v);
    if (x < 0 || x > INT32_MAX) return false;
    *out = (int32_t)x;
    return true;
}

static fl_err_t count_field(parse_ctx_t *c)
{
    if (++c->nfields > FL_ICEBERG_MAX_FIELDS) {
        if (c->err && c->errlen) snprintf(c->err, c->errlen, "schema has more than %d fields",
                                          FL_ICEBERG_MAX_FIELDS);
        return FL_ERR_INVALID;
    }
    return FL_OK;
}

#define CERR(...) do { if (c->err && c->errlen) snprintf(c->err, c->errlen, __VA_ARGS__); } while (0)

static fl_err_t parse_primitive(parse_ctx_t *c, const char *s, fl_field_t *f)
{
    static const struct { const char *name; fl_type_kind_t kind; } prims[] = {
        { "boolean", FL_TYPE_BOOLEAN }, { "int", FL_TYPE_INT }, { "long", FL_TYPE_LONG },
        { "float", FL_TYPE_FLOAT }, { "double", FL_TYPE_DOUBLE }, { "date", FL_TYPE_DATE },
        { "time", FL_TYPE_TIME }, { "timestamp", FL_TYPE_TIMESTAMP },
        { "timestamptz", FL_TYPE_TIMESTAMPTZ }, { "timestamp_ns", FL_TYPE_TIMESTAMP_NS },
        { "timestamptz_ns", FL_TYPE_TIMESTAMPTZ_NS }, { "string", FL_TYPE_STRING },
        { "uuid", FL_TYPE_UUID }, { "binary", FL_TYPE_BINARY },
    };
    for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++)
        if (!strcmp(s, prims[i].name)) {
            f->kind = prims[i].kind;
            return FL_OK;
        }
    int p = 0, sc = 0, n = 0;
    if (!strncmp(s, "decimal", 7)) {
        if (sscanf(s, "decimal(%d ,%d )%n", &p, &sc, &n) == 2 && s[n] == 0 && p >= 1 &&
            p <= 38 && sc >= 0 && sc <= p) {
            f->kind = FL_TYPE_DECIMAL;
            f->precision = p;
            f->scale = sc;
            return FL_OK;
        }
        CERR("bad decimal type \"%.64s\"", s);
        return FL_ERR_INVALID;
    }
    if (!strncmp(s, "fixed", 5)) {
        long l = 0;
        if (sscanf(s, "fixed[%ld]%n", &l, &n) == 1 && s[n] == 0 && l > 0 && l <= INT32_MAX / 2) {
            f->kind = FL_TYPE_FIXED;
            f->length = (int32_t)l;
            return FL_OK;
        }
        CERR("bad fixed type \"%.64s\"", s);
        return FL_ERR_INVALID;
    }
    CERR("unsupported type \"%.64s\"", s);
    return FL_ERR_INVALID;
}

static fl_err_t parse_struct_fields(parse_ctx_t *c, json_t *fields, fl_field_t *f, int depth)
{
    if (!json_is_array(fields)) {
        CERR("struct without a fields array");
        return FL_ERR_INVALID;
    }
    size_t i;
    json_t *jf;
    json_array_foreach(fields, i, jf) {
        if (!json_is_object(jf)) {
            CERR("struct field is not an object");
            return FL_ERR_INVALID;
        }
        fl_err_t e = count_field(c);
        if (e) return e;
        fl_field_t *ch = fl_field_add_child(f);
        const char *name = json_string_value(json_object_get(jf, "name"));
        json_t *req = json_object_get(jf, "required");
        ch->id = -1;
        ch->name = fl_strdup(name ? name : "");
        if (!get_id(jf, "id", &ch->id) || ch->id <= 0) {
            CERR("field \"%.64s\" has no valid id", name ? name : "");
            return FL_ERR_INVALID;
        }
        if (!name || !*name) {
            CERR("field %d has no name", ch->id);
            return FL_ERR_INVALID;
        }
        if (req && !json_is_boolean(req)) {
            CERR("field %d: required is not a boolean", ch->id);
            return FL_ERR_INVALID;
        }
        ch->required = json_is_true(req);
        e = parse_type(c, json_object_get(jf, "type"), ch, depth + 1);
        if (e) return e;
    }
    return FL_OK;
}

static fl_err_t parse_type(parse_ctx_t *c, json_t *t, fl_field_t *f, int depth)
{
    if (depth > FL_ICEBERG_MAX_DEPTH) {
        CERR("schema nested deeper than %d", FL_ICEBERG_MAX_DEPTH);
        return FL_ERR_INVALID;
    }
    if (json_is_string(t)) return parse_primitive(c, json_string_value(t), f);
    if (!json_is_object(t)) {
        CERR("field %d: missing or malformed type", f->id);
        return FL_ERR_INVALID;
    }
    const char *ty = json_string_value(json_object_get(t, "type"));
    if (!ty) {
        CERR("field %d: nested type without \"type\"", f->id);
        return FL_ERR_INVALID;
    }
    fl_err_t e;
    if (!strcmp(ty, "struct")) {
        f->kind = FL_TYPE_STRUCT;
        return parse_struct_fields(c, json_object_get(t, "fields"), f, depth);
    }
    if (!strcmp(ty, "list")) {
        f->kind = FL_TYPE_LIST;
        if ((e = count_field(c))) return e;
        fl_field_t *el = fl_field_add_child(f);
        el->name = fl_strdup("element");
        el->id = -1;
        json_t *req = json_object_get(t, "element-required");
        if (!get_id(t, "element-id", &el->id) || el->id <= 0 || !json_is_boolean(req)) {
            CERR("list field %d: bad element-id or element-required", f->id);
            return FL_ERR_INVALID;
        }
        el->required = json_is_true(req);
        return parse_type(c, json_object_get(t, "element"), el, depth + 1);
    }
    if (!strcmp(ty, "map")) {
        f->kind = FL_TYPE_MAP;
        if ((e = count_field(c)) || (e = count_field(c))) return e;
        fl_field_t *k = fl_field_add_child(f);
        k->name = fl_strdup("key");
        k->id = -1;
        k->required = true;
        fl_field_t *v = fl_field_add_child(f);
        k = &f->children[0]; /* realloc */
        v->name = fl_strdup("value");
        v->id = -1;
        json_t *req = json_object_get(t, "value-required");
        if (!get_id(t, "key-id", &k->id) || k->id <= 0 || !get_id(t, "value-id", &v->id) ||
            v->id <= 0 || !json_is_boolean(req)) {
            CERR("map field %d: bad key-id, value-id or value-required", f->id);
            return FL_ERR_INVALID;
        }
        v->required = json_is_true(req);
        if ((e = parse_type(c, json_object_get(t, "key"), &f->children[0], depth + 1)))
            return e;
        return parse_type(c, json_object_get(t, "value"), &f->children[1], depth + 1);
    }
    CERR("field %d: unsupported nested type \"%.32s\"", f->id, ty);
    return FL_ERR_INVALID;
}

static void collect_ids(const fl_field_t *f, int32_t *ids, size_t *n)
{
    for (uint32_t i = 0; i < f->n_children; i++) {
        ids[(*n)++] = f->children[i].id;
        collect_ids(&f->children[i], ids, n);
    }
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

fl_err_t fl_schema_from_json(json_t *schema_json, fl_field_t *root, int32_t *schema_id,
                             char *err, size_t errlen)
{
    memset(root, 0, sizeof *root);
    if (!json_is_object(schema_json)) {
        ERR("schema is not an object");
        return FL_ERR_INVALID;
    }
    const char *ty = json_string_value(json_object_get(schema_json, "type"));
    if (ty && strcmp(ty, "struct")) {
        ERR("schema type is not struct");
        return FL_ERR_INVALID;
    }
    int32_t sid = 0;
    json_t *jsid = json_object_get(schema_json, "schema-id");
    if (jsid && !get_id(schema_json, "schema-id", &sid)) {
        ERR("bad schema-id");
        return FL_ERR_INVALID;
    }
    fl_field_set(root, 0, "table", true, FL_TYPE_STRUCT);
    parse_ctx_t c = { 0, err, errlen };
    fl_err_t e = parse_struct_fields(&c, json_object_get(schema_json, "fields"), root, 0);
    if (!e) {
        int32_t *ids = fl_malloc((c.nfields + 1) * sizeof *ids);
        size_t n = 0;
        collect_ids(root, ids, &n);
        qsort(ids, n, sizeof *ids, cmp_i32);
        for (size_t i = 1; i < n; i++)
            if (ids[i] == ids[i - 1]) {
                ERR("duplicate field id %d", ids[i]);
                e = FL_ERR_INVALID;
                break;
            }
        free(ids);
    }
    if (e) {
        fl_field_free(root);
        return e;
    }
    if (schema_id) *schema_id = sid;
    return FL_OK;
}

/* ---- fields -> JSON ---- */

static json_t *type_to_json(const fl_field_t *f);

static json_t *field_to_json(const fl_field_t *f)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(f->id));
    json_object_set_new(o, "name", json_string(f->name ? f->name : ""));
    json_object_set_new(o, "required", json_boolean(f->required));
    json_object_set_new(o, "type", type_to_json(f));
    return o;
}

static json_t *type_to_json(const fl_field_t *f)
{
    char tmp[64];
    switch (f->kind) {
    case FL_TYPE_DECIMAL:
        snprintf(tmp, sizeof tmp, "decimal(%d, %d)", f->precision, f->scale);
        return json_string(tmp);
    case FL_TYPE_FIXED:
        snprintf(tmp, sizeof tmp, "fixed[%d]", f->length);
        return json_string(tmp);
    case FL_TYPE_STRUCT: {
        json_t *o = json_object(), *a = json_array();
        json_object_set_new(o, "type", json_string("struct"));
        for (uint32_t i = 0; i < f->n_children; i++)
            json_array_append_new(a, field_to_json(&f->children[i]));
        json_object_set_new(o, "fields", a);
        return o;
    }
    case FL_TYPE_LIST: {
        json_t *o = json_object();
        json_object_set_new(o, "type", json_string("list"));
        if (f->n_children == 1) {
            const fl_field_t *el = &f->children[0];
            json_object_set_new(o, "element-id", json_integer(el->id));
            json_object_set_new(o, "element", type_to_json(el));
            json_object_set_new(o, "element-required", json_boolean(el->required));
        }
        return o;
    }
    case FL_TYPE_MAP: {
        json_t *o = json_object();
        json_object_set_new(o, "type", json_string("map"));
        if (f->n_children == 2) {
            const fl_field_t *k = &f->children[0], *v = &f->children[1];
            json_object_set_new(o, "key-id", json_integer(k->id));
            json_object_set_new(o, "key", type_to_json(k));
            json_object_set_new(o, "value-id", json_integer(v->id));
            json_object_set_new(o, "value", type_to_json(v));
            json_object_set_new(o, "value-required", json_boolean(v->required));
        }
        return o;
    }
    default:
        return json_string(fl_type_name(f->kind));
    }
}

json_t *fl_schema_to_json(const fl_field_t *root, int32_t schema_id)
{
    json_t *o = json_object(), *a = json_array();
    json_object_set_new(o, "type", json_string("struct"));
    json_object_set_new(o, "schema-id", json_integer(schema_id));
    for (uint32_t i = 0; i < root->n_children; i++)
        json_array_append_new(a, field_to_json(&root->children[i]));
    json_object_set_new(o, "fields", a);
    return o;
}

fl_err_t fl_schema_from_metadata(json_t *metadata, int32_t id, fl_field_t *root,
                                 int32_t *schema_id, char *err, size_t errlen)
{
    memset(root, 0, sizeof *root);
    if (!json_is_object(metadata)) {
        ERR("metadata is not an object");
        return FL_ERR_INVALID;
    }
    if (id < 0) {
        json_t *cur = json_object_get(metadata, "current-schema-id");
        if (json_is_integer(cur)) {
            json_int_t x = json_integer_value(cur);
            if (x < 0 || x > INT32_MAX) {
                ERR("bad current-schema-id");
                return FL_ERR_INVALID;
            }
            id = (int32_t)x;
        }
    }
    json_t *schemas = json_object_get(metadata, "schemas");
    if (json_is_array(schemas)) {
        size_t i;
        json_t *s;
        json_array_foreach(schemas, i, s) {
            json_t *sid = json_object_get(s, "schema-id");
            if (id < 0 || (json_is_integer(sid) && json_integer_value(sid) == id))
                return fl_schema_from_json(s, root, schema_id, err, errlen);
        }
    }
    json_t *v1 = json_object_get(metadata, "schema"); /* v1 metadata */
    if (json_is_object(v1)) {
        json_t *sid = json_object_get(v1, "schema-id");
        if (id < 0 || (sid ? json_is_integer(sid) && json_integer_value(sid) == id : id == 0))
            return fl_schema_from_json(v1, root, schema_id, err, errlen);
    }
    ERR("no schema with id %d", id);
    return FL_ERR_NOT_FOUND;
}

/* ---- projection ---- */

static fl_field_t *find_child_by_id(fl_field_t *f, int32_t id)
{
    for (uint32_t i = 0; i < f->n_children; i++)
        if (f->children[i].id == id) return &f->children[i];
    return NULL;
}

fl_err_t fl_schema_project(const fl_field_t *root, const char *const *names, size_t n,
                           fl_field_t *out, char *err, size_t errlen)
{
    fl_field_set(out, root->id, root->name, root->required, root->kind);
    for (size_t k = 0; k < n; k++) {
        const char *name = names[k];
        const fl_field_t *src = root;
        fl_field_t *dst = out;
        const char *p = name ? name : "";
        for (;;) {
            const char *dot = strchr(p, '.');
            size_t len = dot ? (size_t)(dot - p) : strlen(p);
            const fl_field_t *ch = NULL;
            if (src->kind == FL_TYPE_STRUCT)
                for (uint32_t i = 0; i < src->n_children; i++)
                    if (strlen(src->children[i].name) == len &&
                        !memcmp(src->children[i].name, p, len)) {
                        ch = &src->children[i];
                        break;
                    }
            if (!ch) {
                ERR("no field \"%.200s\" in the schema", name ? name : "");
                fl_field_free(out);
                return FL_ERR_NOT_FOUND;
            }
            fl_field_t *have = find_child_by_id(dst, ch->id);
            if (!dot) {
                if (have) { /* replace a partial struct by the whole field */
                    fl_field_free(have);
                    fl_field_copy(have, ch);
                } else {
                    fl_field_copy(fl_field_add_child(dst), ch);
                }
                break;
            }
            if (!have) {
                have = fl_field_add_child(dst);
                fl_field_set(have, ch->id, ch->name, ch->required, ch->kind);
            } else if (have->n_children == ch->n_children && fl_field_eq(have, ch)) {
                break; /* the whole struct is already there */
            }
            src = ch;
            dst = have;
            p = dot + 1;
        }
    }
    return FL_OK;
}

/* ---- vector slots as values ---- */

static void dec_minimal(fl_ice_value_t *v, __int128 x, int32_t scale)
{
    unsigned char b[16];
    unsigned __int128 u = (unsigned __int128)x;
    for (int i = 15; i >= 0; i--, u >>= 8) b[i] = (unsigned char)u;
    int s = 0;
    while (s < 15 && ((b[s] == 0x00 && !(b[s + 1] & 0x80)) || (b[s] == 0xff && (b[s + 1] & 0x80))))
        s++;
    v->kind = FL_ICE_DECIMAL;
    v->u.dec.len = (uint8_t)(16 - s);
    memcpy(v->u.dec.unscaled, b + s, (size_t)(16 - s));
    v->u.dec.scale = scale;
}

fl_err_t fl_vec_ice_value(const fl_vec_t *v, size_t i, fl_ice_value_t *out)
{
    memset(out, 0, sizeof *out);
    if (i >= v->len) return FL_ERR_INVALID;
    if (fl_vec_is_null(v, i)) {
        out->kind = FL_ICE_NULL;
        return FL_OK;
    }
    const fl_field_t *f = v->field;
    out->kind = fl_ice_kind_of_type(f->kind);
    switch (f->kind) {
    case FL_TYPE_BOOLEAN: out->u.b = fl_vec_bool(v, i); break;
    case FL_TYPE_INT: case FL_TYPE_DATE: out->u.i = fl_vec_i32(v, i); break;
    case FL_TYPE_LONG: case FL_TYPE_TIME: case FL_TYPE_TIMESTAMP: case FL_TYPE_TIMESTAMPTZ:
    case FL_TYPE_TIMESTAMP_NS: case FL_TYPE_TIMESTAMPTZ_NS: out->u.l = fl_vec_i64(v, i); break;
    case FL_TYPE_FLOAT: out->u.f = fl_vec_f32(v, i); break;
    case FL_TYPE_DOUBLE: out->u.d = fl_vec_f64(v, i); break;
    case FL_TYPE_DECIMAL: dec_minimal(out, fl_vec_i128(v, i), f->scale); break;
    case FL_TYPE_UUID: memcpy(out->u.uuid, v->data + i * 16, 16); break;
    case FL_TYPE_STRING: case FL_TYPE_BINARY: case FL_TYPE_FIXED: {
        fl_slice_t s = fl_vec_bytes_at(v, i);
        out->u.bytes.ptr = (const unsigned char *)s.ptr;
        out->u.bytes.len = s.len;
        break;
    }
    default:
        out->kind = FL_ICE_NULL;
        return FL_ERR_INVALID;
    }
    return FL_OK;
}

fl_ice_kind_t fl_ice_kind_of_type(fl_type_kind_t k)
{
    switch (k) {
    case FL_TYPE_BOOLEAN: return FL_ICE_BOOLEAN;
    case FL_TYPE_INT: return FL_ICE_INT;
    case FL_TYPE_LONG: return FL_ICE_LONG;
    case FL_TYPE_FLOAT: return FL_ICE_FLOAT;
    case FL_TYPE_DOUBLE: return FL_ICE_DOUBLE;
    case FL_TYPE_DECIMAL: return FL_ICE_DECIMAL;
    case FL_TYPE_DATE: return FL_ICE_DATE;
    case FL_TYPE_TIME: return FL_ICE_TIME;
    case FL_TYPE_TIMESTAMP: return FL_ICE_TIMESTAMP;
    case FL_TYPE_TIMESTAMPTZ: return FL_ICE_TIMESTAMPTZ;
    case FL_TYPE_TIMESTAMP_NS: return FL_ICE_TIMESTAMP_NS;
    case FL_TYPE_TIMESTAMPTZ_NS: return FL_ICE_TIMESTAMPTZ_NS;
    case FL_TYPE_STRING: return FL_ICE_STRING;
    case FL_TYPE_UUID: return FL_ICE_UUID;
    case FL_TYPE_FIXED: return FL_ICE_FIXED;
    case FL_TYPE_BINARY: return FL_ICE_BINARY;
    default: return FL_ICE_NULL;
    }
}

/* ---- partition specs ---- */

void fl_part_spec_free(fl_part_spec_t *spec)
{
    if (!spec) return;
    for (size_t i = 0; i < spec->n_fields; i++) free(spec->fields[i].name);
    free(spec->fields);
    memset(spec, 0, sizeof *spec);
}

fl_err_t fl_part_spec_from_json(json_t *spec_json, const fl_field_t *root, fl_part_spec_t *spec,
                                char *err, size_t errlen)
{
    memset(spec, 0, sizeof *spec);
    json_t *fields = json_is_array(spec_json) ? spec_json : json_object_get(spec_json, "fields");
    if (!json_is_array(fields)) {
        ERR("partition spec without a fields array");
        return FL_ERR_INVALID;
    }
    if (json_is_object(spec_json)) {
        json_t *sid = json_object_get(spec_json, "spec-id");
        if (sid && (!json_is_integer(sid) || json_integer_value(sid) < 0 ||
                    json_integer_value(sid) > INT32_MAX)) {
            ERR("bad spec-id");
            return FL_ERR_INVALID;
        }
        spec->spec_id = sid ? (int32_t)json_integer_value(sid) : 0;
    }
    size_t n = json_array_size(fields);
    if (n > FL_ICEBERG_MAX_FIELDS) {
        ERR("partition spec has more than %d fields", FL_ICEBERG_MAX_FIELDS);
        return FL_ERR_INVALID;
    }
    spec->fields = fl_calloc(n ? n : 1, sizeof *spec->fields);
    for (size_t i = 0; i < n; i++) {
        json_t *jf = json_array_get(fields, i);
        fl_part_field_t *pf = &spec->fields[i];
        spec->n_fields = i + 1;
        const char *name = json_string_value(json_object_get(jf, "name"));
        const char *tr = json_string_value(json_object_get(jf, "transform"));
        pf->name = fl_strdup(name ? name : "");
        json_t *sids = json_object_get(jf, "source-ids");
        bool have_src = get_id(jf, "source-id", &pf->source_id);
        if (!have_src && json_is_array(sids) && json_array_size(sids) == 1) {
            json_t *x = json_array_get(sids, 0);
            if (json_is_integer(x) && json_integer_value(x) >= 0 && json_integer_value(x) <= INT32_MAX) {
                pf->source_id = (int32_t)json_integer_value(x);
                have_src = true;
            }
        }
        if (!json_is_object(jf) || !name || !*name || !tr || !have_src) {
            ERR("partition field %zu: needs name, transform and source-id", i);
            goto bad;
        }
        if (json_object_get(jf, "field-id")) {
            if (!get_id(jf, "field-id", &pf->field_id)) {
                ERR("partition field %zu: bad field-id", i);
                goto bad;
            }
        } else {
            pf->field_id = 1000 + (int32_t)i; /* v1 specs may omit it */
        }
        if (fl_ice_transform_parse(fl_slice_cstr(tr), &pf->transform)) {
            ERR("partition field \"%.64s\": bad transform \"%.64s\"", name, tr);
            goto bad;
        }
        pf->source = root ? fl_field_find(root, pf->source_id) : NULL;
        if (pf->source && (pf->source->id != pf->source_id || fl_type_is_nested(pf->source->kind) ||
                           pf->source_id == 0)) {
            ERR("partition field \"%.64s\": source %d is not a primitive column", name, pf->source_id);
            goto bad;
        }
        if (!pf->source) {
            if (pf->transform.kind != FL_ICE_T_VOID) {
                ERR("partition field \"%.64s\": no source column %d", name, pf->source_id);
                goto bad;
            }
            pf->result_kind = FL_ICE_INT;
        } else if (fl_ice_transform_result_kind(&pf->transform, fl_ice_kind_of_type(pf->source->kind),
                                                &pf->result_kind)) {
            ERR("partition field \"%.64s\": transform %.32s does not apply to %s", name, tr,
                fl_type_name(pf->source->kind));
            goto bad;
        }
        for (size_t j = 0; j < i; j++)
            if (spec->fields[j].field_id == pf->field_id || !strcmp(spec->fields[j].name, pf->name)) {
                ERR("partition field \"%.64s\": duplicate name or field-id", name);
                goto bad;
            }
    }
    spec->n_fields = n;
    return FL_OK;
bad:
    fl_part_spec_free(spec);
    return FL_ERR_INVALID;
}

fl_err_t fl_part_spec_from_metadata(json_t *metadata, int32_t id, const fl_field_t *root,
                                    fl_part_spec_t *spec, char *err, size_t errlen)
{
    memset(spec, 0, sizeof *spec);
    if (!json_is_object(metadata)) {
        ERR("metadata is not an object");
        return FL_ERR_INVALID;
    }
    if (id < 0) {
        json_t *d = json_object_get(metadata, "default-spec-id");
        if (json_is_integer(d) && json_integer_value(d) >= 0 && json_integer_value(d) <= INT32_MAX)
            id = (int32_t)json_integer_value(d);
    }
    json_t *specs = json_object_get(metadata, "partition-specs");
    if (json_is_array(specs)) {
        size_t i;
        json_t *s;
        json_array_foreach(specs, i, s) {
            json_t *sid = json_object_get(s, "spec-id");
            if (id < 0 || (json_is_integer(sid) && json_integer_value(sid) == id))
                return fl_part_spec_from_json(s, root, spec, err, errlen);
        }
    }
    json_t *v1 = json_object_get(metadata, "partition-spec"); /* v1: fields array */
    if (json_is_array(v1) && id <= 0)
        return fl_part_spec_from_json(v1, root, spec, err, errlen);
    ERR("no partition spec with id %d", id);
    return FL_ERR_NOT_FOUND;
}
