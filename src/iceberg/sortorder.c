/* Sort orders bound to a schema and the row permutations of compaction's sort
 * and z-order strategies (see sortorder.h). */
#include "iceberg/sortorder.h"
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/limits.h"
#include "base/mem.h"
#include "iceberg/schema.h"

/* The field with id under root, reached through structs only (NULL if none). */
static const fl_field_t *struct_find(const fl_field_t *root, int32_t id)
{
    for (uint32_t c = 0; c < root->n_children; c++) {
        const fl_field_t *ch = &root->children[c];
        if (ch->id == id) return ch;
        if (ch->kind == FL_TYPE_STRUCT) {
            const fl_field_t *f = struct_find(ch, id);
            if (f) return f;
        }
    }
    return NULL;
}

void fl_sort_order_free(fl_sort_order_t *o)
{
    if (!o) return;
    free(o->fields);
    memset(o, 0, sizeof *o);
}

fl_err_t fl_sort_order_from_metadata(json_t *md, const fl_field_t *schema, fl_sort_order_t *out, char *err,
                                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    json_t *idv = json_object_get(md, "default-sort-order-id");
    int32_t id = json_is_integer(idv) ? (int32_t)json_integer_value(idv) : 0;
    json_t *order = NULL, *o;
    size_t i;
    json_array_foreach(json_object_get(md, "sort-orders"), i, o)
        if (json_integer_value(json_object_get(o, "order-id")) == id) order = o;
    out->order_id = id;
    json_t *fields = json_object_get(order, "fields");
    if (!order || !json_array_size(fields)) return FL_OK;
    if (json_array_size(fields) > FL_ICEBERG_MAX_FIELDS)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "sort order %d has too many fields", (int)id);
    out->fields = fl_calloc(json_array_size(fields), sizeof *out->fields);
    json_t *f;
    fl_err_t e = FL_OK;
    json_array_foreach(fields, i, f) {
        fl_sort_field_t *sf = &out->fields[out->n];
        json_t *src = json_object_get(f, "source-id");
        const char *t = json_string_value(json_object_get(f, "transform"));
        const char *d = json_string_value(json_object_get(f, "direction"));
        const char *no = json_string_value(json_object_get(f, "null-order"));
        if (!json_is_integer(src) || !t || !d || !no) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "sort order %d: field %zu is malformed", (int)id, i);
            break;
        }
        sf->source_id = (int32_t)json_integer_value(src);
        sf->desc = !strcmp(d, "desc");
        sf->nulls_first = !strcmp(no, "nulls-first");
        const fl_field_t *col = struct_find(schema, sf->source_id);
        fl_ice_kind_t rk;
        if (!col || fl_type_is_nested(col->kind)) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID,
                           "sort order %d: source %d is not a primitive column of the current schema", (int)id,
                           (int)sf->source_id);
            break;
        }
        if (fl_ice_transform_parse(fl_slice_cstr(t), &sf->transform) ||
            fl_ice_transform_result_kind(&sf->transform, fl_ice_kind_of_type(col->kind), &rk)) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "sort order %d: transform %s does not apply to %s (%s)",
                           (int)id, t, col->name, fl_type_name(col->kind));
            break;
        }
        out->n++;
    }
    if (e) fl_sort_order_free(out);
    return e;
}

/* ---- order-preserving byte forms ---- */

static void put_be64(unsigned char *p, uint64_t x)
{
    for (int i = 7; i >= 0; i--, x >>= 8) p[i] = (unsigned char)x;
}

static uint64_t ordered_double(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return (u >> 63) ? ~u : u ^ (1ULL << 63);
}

static int64_t dec_saturated(const fl_ice_value_t *v)
{
    /* the unscaled big-endian two's complement value, 1..16 bytes */
    size_t n = v->u.dec.len;
    if (!n) return 0;
    bool neg = v->u.dec.unscaled[0] & 0x80;
    unsigned __int128 x = neg ? ~(unsigned __int128)0 : 0;
    for (size_t i = 0; i < n && i < 16; i++) x = (x << 8) | v->u.dec.unscaled[i];
    __int128 s = (__int128)x;
    if (s > INT64_MAX) return INT64_MAX;
    if (s < INT64_MIN) return INT64_MIN;
    return (int64_t)s;
}

void fl_zorder_bytes(const fl_ice_value_t *v, unsigned char out[8])
{
    memset(out, 0, 8);
    switch (v->kind) {
    case FL_ICE_NULL: break;
    case FL_ICE_BOOLEAN: out[0] = v->u.b ? 0xff : 0; break;
    case FL_ICE_INT: case FL_ICE_DATE: put_be64(out, (uint64_t)(int64_t)v->u.i ^ (1ULL << 63)); break;
    case FL_ICE_LONG: case FL_ICE_TIME: case FL_ICE_TIMESTAMP: case FL_ICE_TIMESTAMPTZ:
    case FL_ICE_TIMESTAMP_NS: case FL_ICE_TIMESTAMPTZ_NS:
        put_be64(out, (uint64_t)v->u.l ^ (1ULL << 63));
        break;
    case FL_ICE_FLOAT: put_be64(out, ordered_double((double)v->u.f)); break;
    case FL_ICE_DOUBLE: put_be64(out, ordered_double(v->u.d)); break;
    case FL_ICE_DECIMAL: put_be64(out, (uint64_t)dec_saturated(v) ^ (1ULL << 63)); break;
    case FL_ICE_UUID: memcpy(out, v->u.uuid, 8); break;
    case FL_ICE_STRING: case FL_ICE_FIXED: case FL_ICE_BINARY:
        memcpy(out, v->u.bytes.ptr, v->u.bytes.len < 8 ? v->u.bytes.len : 8);
        break;
    }
}

void fl_zorder_interleave(const unsigned char *cols, size_t n, unsigned char *out)
{
    memset(out, 0, n * 8);
    size_t o = 0;
    for (size_t bit = 0; bit < 64; bit++)
        for (size_t c = 0; c < n; c++, o++)
            if (cols[c * 8 + bit / 8] & (0x80 >> (bit % 8))) out[o / 8] |= (unsigned char)(0x80 >> (o % 8));
}

/* A memcmp-ordered, prefix-free encoding of a non-null value: fixed widths for
 * numbers, escaped bytes (0x00 -> 0x00 0xff) ended by 0x00 0x00 for the rest. */
static void lex_value(fl_buf_t *k, const fl_ice_value_t *v)
{
    unsigned char t[16];
    switch (v->kind) {
    case FL_ICE_NULL: return;
    case FL_ICE_BOOLEAN: t[0] = v->u.b; fl_buf_add(k, t, 1); return;
    case FL_ICE_INT: case FL_ICE_DATE: {
        uint32_t x = (uint32_t)v->u.i ^ 0x80000000u;
        for (int i = 3; i >= 0; i--, x >>= 8) t[i] = (unsigned char)x;
        fl_buf_add(k, t, 4);
        return;
    }
    case FL_ICE_LONG: case FL_ICE_TIME: case FL_ICE_TIMESTAMP: case FL_ICE_TIMESTAMPTZ:
    case FL_ICE_TIMESTAMP_NS: case FL_ICE_TIMESTAMPTZ_NS:
        put_be64(t, (uint64_t)v->u.l ^ (1ULL << 63));
        fl_buf_add(k, t, 8);
        return;
    case FL_ICE_FLOAT: put_be64(t, ordered_double((double)v->u.f)); fl_buf_add(k, t, 8); return;
    case FL_ICE_DOUBLE: put_be64(t, ordered_double(v->u.d)); fl_buf_add(k, t, 8); return;
    case FL_ICE_DECIMAL: {
        /* sign-extend to 16 bytes, flip the sign bit (scales are equal within a column) */
        size_t n = v->u.dec.len > 16 ? 16 : v->u.dec.len;
        memset(t, n && (v->u.dec.unscaled[0] & 0x80) ? 0xff : 0, 16);
        memcpy(t + 16 - n, v->u.dec.unscaled, n);
        t[0] ^= 0x80;
        fl_buf_add(k, t, 16);
        return;
    }
    case FL_ICE_UUID: fl_buf_add(k, v->u.uuid, 16); return;
    case FL_ICE_STRING: case FL_ICE_FIXED: case FL_ICE_BINARY: {
        static const unsigned char esc[2] = { 0x00, 0xff }, end[2] = { 0, 0 };
        const unsigned char *p = v->u.bytes.ptr;
        size_t n = v->u.bytes.len, a = 0;
        for (size_t i = 0; i < n; i++)
            if (!p[i]) {
                fl_buf_add(k, p + a, i - a);
                fl_buf_add(k, esc, 2);
                a = i + 1;
            }
        fl_buf_add(k, p + a, n - a);
        fl_buf_add(k, end, 2);
        return;
    }
    }
}

/* ---- the permutation ---- */

typedef struct colpath {
    const fl_vec_t *chain[FL_ICEBERG_MAX_DEPTH];
    int depth;                   /* 0: absent (reads as null) */
} colpath_t;

static bool find_path(const fl_vec_t *v, int32_t id, colpath_t *p)
{
    for (uint32_t c = 0; c < v->n_children; c++) {
        const fl_vec_t *ch = &v->children[c];
        if (p->depth >= FL_ICEBERG_MAX_DEPTH) return false;
        p->chain[p->depth++] = ch;
        if (ch->field->id == id) return true;
        if (ch->field->kind == FL_TYPE_STRUCT && find_path(ch, id, p)) return true;
        p->depth--;
    }
    return false;
}

/* The transformed value of row i of the column at p (kind NULL for null). */
static fl_err_t col_value(const colpath_t *p, const fl_sort_field_t *sf, size_t i, fl_ice_value_t *out, char *err,
                          size_t errlen)
{
    fl_ice_value_t v = { .kind = FL_ICE_NULL };
    bool null = p->depth == 0;
    for (int d = 0; d < p->depth && !null; d++) null = fl_vec_is_null(p->chain[d], i);
    if (!null && fl_vec_ice_value(p->chain[p->depth - 1], i, &v)) v.kind = FL_ICE_NULL;
    if (sf->transform.kind == FL_ICE_T_IDENTITY || v.kind == FL_ICE_NULL) {
        *out = v;
        return FL_OK;
    }
    if (fl_ice_transform_apply(&sf->transform, &v, out))
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "sort order: the transform of source %d does not apply",
                          (int)sf->source_id);
    return FL_OK;
}

typedef struct keys {
    fl_buf_t b;
    size_t *off;                 /* len + 1 */
} keys_t;

static int key_cmp(const keys_t *k, uint32_t a, uint32_t b)
{
    size_t la = k->off[a + 1] - k->off[a], lb = k->off[b + 1] - k->off[b];
    int c = memcmp(k->b.ptr + k->off[a], k->b.ptr + k->off[b], la < lb ? la : lb);
    if (c) return c;
    if (la != lb) return la < lb ? -1 : 1;
    return a < b ? -1 : a > b; /* stable */
}

/* Merge sort of idx[0..n) by key (stable; tmp has room for n). */
static void msort(const keys_t *k, uint32_t *idx, uint32_t *tmp, size_t n)
{
    if (n < 2) return;
    if (n <= 16) {
        for (size_t i = 1; i < n; i++) {
            uint32_t x = idx[i];
            size_t j = i;
            for (; j > 0 && key_cmp(k, idx[j - 1], x) > 0; j--) idx[j] = idx[j - 1];
            idx[j] = x;
        }
        return;
    }
    size_t h = n / 2;
    msort(k, idx, tmp, h);
    msort(k, idx + h, tmp, n - h);
    if (key_cmp(k, idx[h - 1], idx[h]) <= 0) return;
    memcpy(tmp, idx, h * sizeof *idx);
    size_t a = 0, b = h, o = 0;
    while (a < h && b < n) idx[o++] = key_cmp(k, tmp[a], idx[b]) <= 0 ? tmp[a++] : idx[b++];
    while (a < h) idx[o++] = tmp[a++];
}

fl_err_t fl_sort_permutation(const fl_sort_order_t *o, bool zorder, const fl_vec_t *batch, uint32_t *perm,
                             char *err, size_t errlen)
{
    size_t n = batch->len;
    for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
    if (!o->n || n < 2) return FL_OK;
    colpath_t *cols = fl_calloc(o->n, sizeof *cols);
    for (size_t f = 0; f < o->n; f++)
        if (!find_path(batch, o->fields[f].source_id, &cols[f])) cols[f].depth = 0;
    keys_t k;
    fl_buf_init(&k.b, zorder ? n * o->n * 8 : n * 16);
    k.off = fl_malloc((n + 1) * sizeof *k.off);
    unsigned char *z = zorder ? fl_malloc(o->n * 8) : NULL, *zi = zorder ? fl_malloc(o->n * 8) : NULL;
    fl_err_t e = FL_OK;
    k.off[0] = 0;
    for (size_t r = 0; r < n && !e; r++) {
        for (size_t f = 0; f < o->n && !e; f++) {
            const fl_sort_field_t *sf = &o->fields[f];
            fl_ice_value_t v;
            if ((e = col_value(&cols[f], sf, r, &v, err, errlen))) break;
            if (zorder) {
                fl_zorder_bytes(&v, z + f * 8);
                continue;
            }
            if (v.kind == FL_ICE_NULL) {
                unsigned char tag = sf->nulls_first ? 0x00 : 0x02;
                fl_buf_add(&k.b, &tag, 1);
                continue;
            }
            unsigned char tag = 0x01;
            fl_buf_add(&k.b, &tag, 1);
            size_t at = k.b.len;
            lex_value(&k.b, &v);
            if (sf->desc)
                for (size_t x = at; x < k.b.len; x++) k.b.ptr[x] = (unsigned char)~k.b.ptr[x];
        }
        if (zorder && !e) {
            fl_zorder_interleave(z, o->n, zi);
            fl_buf_add(&k.b, zi, o->n * 8);
        }
        k.off[r + 1] = k.b.len;
    }
    if (!e) {
        uint32_t *tmp = fl_malloc((n / 2 + 1) * sizeof *tmp);
        msort(&k, perm, tmp, n);
        free(tmp);
    }
    free(z);
    free(zi);
    free(k.off);
    fl_buf_free(&k.b);
    free(cols);
    return e;
}
