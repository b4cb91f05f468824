/* Field trees and column vectors (see column.h for the layout). Growth doubles;
 * everything aborts on out-of-memory through fl_malloc/fl_realloc. */
#include "format/column.h"
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/mem.h"

size_t fl_type_width(fl_type_kind_t kind)
{
    switch (kind) {
    case FL_TYPE_BOOLEAN: return 1;
    case FL_TYPE_INT: case FL_TYPE_DATE: case FL_TYPE_FLOAT: return 4;
    case FL_TYPE_LONG: case FL_TYPE_TIME: case FL_TYPE_TIMESTAMP: case FL_TYPE_TIMESTAMPTZ:
    case FL_TYPE_TIMESTAMP_NS: case FL_TYPE_TIMESTAMPTZ_NS: case FL_TYPE_DOUBLE: return 8;
    case FL_TYPE_DECIMAL: case FL_TYPE_UUID: return 16;
    default: return 0;
    }
}

size_t fl_field_width(const fl_field_t *f)
{
    return f->kind == FL_TYPE_FIXED ? (size_t)f->length : fl_type_width(f->kind);
}

bool fl_type_is_nested(fl_type_kind_t kind)
{
    return kind == FL_TYPE_STRUCT || kind == FL_TYPE_LIST || kind == FL_TYPE_MAP;
}

const char *fl_type_name(fl_type_kind_t kind)
{
    static const char *const names[] = {
        [FL_TYPE_BOOLEAN] = "boolean", [FL_TYPE_INT] = "int", [FL_TYPE_LONG] = "long",
        [FL_TYPE_FLOAT] = "float", [FL_TYPE_DOUBLE] = "double", [FL_TYPE_DECIMAL] = "decimal",
        [FL_TYPE_DATE] = "date", [FL_TYPE_TIME] = "time", [FL_TYPE_TIMESTAMP] = "timestamp",
        [FL_TYPE_TIMESTAMPTZ] = "timestamptz", [FL_TYPE_TIMESTAMP_NS] = "timestamp_ns",
        [FL_TYPE_TIMESTAMPTZ_NS] = "timestamptz_ns", [FL_TYPE_STRING] = "string",
        [FL_TYPE_UUID] = "uuid", [FL_TYPE_FIXED] = "fixed", [FL_TYPE_BINARY] = "binary",
        [FL_TYPE_STRUCT] = "struct", [FL_TYPE_LIST] = "list", [FL_TYPE_MAP] = "map",
    };
    if ((unsigned)kind < sizeof names / sizeof names[0] && names[kind]) return names[kind];
    return "unknown";
}

void fl_field_set(fl_field_t *f, int32_t id, const char *name, bool required, fl_type_kind_t kind)
{
    memset(f, 0, sizeof *f);
    f->id = id;
    f->name = fl_strdup(name ? name : "");
    f->required = required;
    f->kind = kind;
}

fl_field_t *fl_field_add_child(fl_field_t *f)
{
    f->children = fl_realloc(f->children, (f->n_children + 1) * sizeof *f->children);
    fl_field_t *c = &f->children[f->n_children++];
    memset(c, 0, sizeof *c);
    return c;
}

void fl_field_copy(fl_field_t *dst, const fl_field_t *src)
{
    *dst = *src;
    dst->name = fl_strdup(src->name ? src->name : "");
    dst->children = NULL;
    if (src->n_children) {
        dst->children = fl_calloc(src->n_children, sizeof *dst->children);
        for (uint32_t i = 0; i < src->n_children; i++)
            fl_field_copy(&dst->children[i], &src->children[i]);
    }
}

void fl_field_free(fl_field_t *f)
{
    if (!f) return;
    for (uint32_t i = 0; i < f->n_children; i++) fl_field_free(&f->children[i]);
    free(f->children);
    free(f->name);
    memset(f, 0, sizeof *f);
}

const fl_field_t *fl_field_find(const fl_field_t *f, int32_t id)
{
    if (f->id == id) return f;
    for (uint32_t i = 0; i < f->n_children; i++) {
        const fl_field_t *r = fl_field_find(&f->children[i], id);
        if (r) return r;
    }
    return NULL;
}

bool fl_field_eq(const fl_field_t *a, const fl_field_t *b)
{
    if (a->id != b->id || a->required != b->required || a->kind != b->kind ||
        a->n_children != b->n_children || strcmp(a->name ? a->name : "", b->name ? b->name : ""))
        return false;
    if (a->kind == FL_TYPE_DECIMAL && (a->precision != b->precision || a->scale != b->scale))
        return false;
    if (a->kind == FL_TYPE_FIXED && a->length != b->length) return false;
    for (uint32_t i = 0; i < a->n_children; i++)
        if (!fl_field_eq(&a->children[i], &b->children[i])) return false;
    return true;
}

static size_t leaves(const fl_field_t *f, const fl_field_t **out, size_t cap, size_t n)
{
    if (!fl_type_is_nested(f->kind)) {
        if (n < cap) out[n] = f;
        return n + 1;
    }
    for (uint32_t i = 0; i < f->n_children; i++) n = leaves(&f->children[i], out, cap, n);
    return n;
}

size_t fl_field_leaves(const fl_field_t *f, const fl_field_t **out, size_t cap)
{
    return leaves(f, out, cap, 0);
}

/* ---- vectors ---- */

static bool has_offsets(fl_type_kind_t k)
{
    return k == FL_TYPE_STRING || k == FL_TYPE_BINARY || k == FL_TYPE_LIST || k == FL_TYPE_MAP;
}

void fl_vec_init(fl_vec_t *v, const fl_field_t *field)
{
    memset(v, 0, sizeof *v);
    v->field = field;
    if (fl_type_is_nested(field->kind) && field->n_children) {
        v->n_children = field->n_children;
        v->children = fl_calloc(field->n_children, sizeof *v->children);
        for (uint32_t i = 0; i < field->n_children; i++)
            fl_vec_init(&v->children[i], &field->children[i]);
    }
}

void fl_vec_free(fl_vec_t *v)
{
    if (!v) return;
    for (uint32_t i = 0; i < v->n_children; i++) fl_vec_free(&v->children[i]);
    free(v->children);
    free(v->valid);
    free(v->data);
    free(v->offsets);
    free(v->bytes);
    memset(v, 0, sizeof *v);
}

void fl_vec_clear(fl_vec_t *v)
{
    v->len = 0;
    v->null_count = 0;
    v->bytes_len = 0;
    if (v->offsets) v->offsets[0] = 0;
    for (uint32_t i = 0; i < v->n_children; i++) fl_vec_clear(&v->children[i]);
}

void fl_vec_reserve(fl_vec_t *v, size_t n)
{
    if (v->len + n <= v->cap) return;
    size_t cap = v->cap ? v->cap : 64;
    while (cap < v->len + n) cap *= 2;
    size_t w = fl_field_width(v->field);
    if (w) v->data = fl_realloc(v->data, cap * w);
    if (v->valid) v->valid = fl_realloc(v->valid, cap);
    if (has_offsets(v->field->kind)) {
        bool fresh = !v->offsets;
        v->offsets = fl_realloc(v->offsets, (cap + 1) * sizeof *v->offsets);
        if (fresh) v->offsets[0] = 0;
    }
    v->cap = cap;
}

size_t fl_vec_bytes(const fl_vec_t *v)
{
    size_t n = v->len * fl_field_width(v->field) + (v->valid ? v->len : 0) + v->bytes_len;
    if (v->offsets) n += v->len * sizeof *v->offsets;
    for (uint32_t i = 0; i < v->n_children; i++) n += fl_vec_bytes(&v->children[i]);
    return n;
}

static void set_valid(fl_vec_t *v, bool ok)
{
    if (!ok && !v->valid) {
        v->valid = fl_malloc(v->cap ? v->cap : 1);
        memset(v->valid, 1, v->len);
    }
    if (v->valid) v->valid[v->len] = ok;
    if (!ok) v->null_count++;
}

static unsigned char *slot(fl_vec_t *v, bool ok)
{
    fl_vec_reserve(v, 1);
    set_valid(v, ok);
    size_t w = fl_field_width(v->field);
    unsigned char *p = w ? v->data + v->len * w : NULL;
    if (has_offsets(v->field->kind) && v->field->kind != FL_TYPE_LIST &&
        v->field->kind != FL_TYPE_MAP)
        v->offsets[v->len + 1] = v->offsets[v->len];
    return p;
}

void fl_vec_append_null(fl_vec_t *v)
{
    unsigned char *p = slot(v, false);
    size_t w = fl_field_width(v->field);
    if (p) memset(p, 0, w);
    if (v->field->kind == FL_TYPE_LIST || v->field->kind == FL_TYPE_MAP)
        v->offsets[v->len + 1] = v->offsets[v->len];
    if (v->field->kind == FL_TYPE_STRUCT)
        for (uint32_t i = 0; i < v->n_children; i++) fl_vec_append_null(&v->children[i]);
    v->len++;
}

#define APPEND_FIXED(name, T)                       \
    void name(fl_vec_t *v, T x)                     \
    {                                               \
        unsigned char *p = slot(v, true);           \
        memcpy(p, &x, sizeof x);                    \
        v->len++;                                   \
    }
APPEND_FIXED(fl_vec_append_i32, int32_t)
APPEND_FIXED(fl_vec_append_i64, int64_t)
APPEND_FIXED(fl_vec_append_f32, float)
APPEND_FIXED(fl_vec_append_f64, double)
APPEND_FIXED(fl_vec_append_i128, __int128)

void fl_vec_append_bool(fl_vec_t *v, bool x)
{
    unsigned char *p = slot(v, true);
    *p = x ? 1 : 0;
    v->len++;
}

void fl_vec_append_bytes(fl_vec_t *v, const void *src, size_t n)
{
    unsigned char *p = slot(v, true);
    if (p) {  /* uuid / fixed */
        size_t w = fl_field_width(v->field);
        memcpy(p, src, n < w ? n : w);
        if (n < w) memset(p + n, 0, w - n);
        v->len++;
        return;
    }
    if (v->bytes_len + n > v->bytes_cap) {
        size_t cap = v->bytes_cap ? v->bytes_cap : 256;
        while (cap < v->bytes_len + n) cap *= 2;
        v->bytes = fl_realloc(v->bytes, cap);
        v->bytes_cap = cap;
    }
    if (n) memcpy(v->bytes + v->bytes_len, src, n);
    v->bytes_len += n;
    v->offsets[v->len + 1] = (uint32_t)v->bytes_len;
    v->len++;
}

void fl_vec_append_struct(fl_vec_t *v)
{
    slot(v, true);
    v->len++;
}

void fl_vec_end_list(fl_vec_t *v)
{
    slot(v, true);
    v->offsets[v->len + 1] = (uint32_t)(v->n_children ? v->children[0].len : 0);
    v->len++;
}

fl_slice_t fl_vec_bytes_at(const fl_vec_t *v, size_t i)
{
    if (v->offsets) {
        if (!v->bytes) return fl_slice("", 0); /* only empty values so far */
        return fl_slice((const char *)v->bytes + v->offsets[i], v->offsets[i + 1] - v->offsets[i]);
    }
    size_t w = fl_field_width(v->field);
    return fl_slice((const char *)v->data + i * w, w);
}

void fl_vec_append_from(fl_vec_t *dst, const fl_vec_t *src, size_t i)
{
    if (fl_vec_is_null(src, i)) {
        fl_vec_append_null(dst);
        return;
    }
    switch (src->field->kind) {
    case FL_TYPE_STRUCT:
        fl_vec_append_struct(dst);
        for (uint32_t c = 0; c < src->n_children; c++)
            fl_vec_append_from(&dst->children[c], &src->children[c], i);
        return;
    case FL_TYPE_LIST:
    case FL_TYPE_MAP: {
        size_t b, e;
        fl_vec_list_range(src, i, &b, &e);
        for (size_t j = b; j < e; j++)
            for (uint32_t c = 0; c < src->n_children; c++)
                fl_vec_append_from(&dst->children[c], &src->children[c], j);
        fl_vec_end_list(dst);
        return;
    }
    case FL_TYPE_STRING:
    case FL_TYPE_BINARY: {
        fl_slice_t s = fl_vec_bytes_at(src, i);
        fl_vec_append_bytes(dst, s.ptr, s.len);
        return;
    }
    default: {
        size_t w = fl_field_width(src->field);
        unsigned char *p = slot(dst, true);
        memcpy(p, src->data + i * w, w);
        dst->len++;
    }
    }
}

void fl_vec_take(fl_vec_t *dst, const fl_vec_t *src, const uint32_t *rows, size_t n)
{
    if (!n) return;
    fl_type_kind_t k = src->field->kind;
    fl_vec_reserve(dst, n);
    size_t base = dst->len;
    /* validity (src->valid decides: producers may fill it without counting) */
    if (src->valid) {
        if (!dst->valid) {
            dst->valid = fl_malloc(dst->cap ? dst->cap : 1);
            memset(dst->valid, 1, base);
        }
        for (size_t i = 0; i < n; i++) {
            uint8_t ok = src->valid[rows[i]];
            dst->valid[base + i] = ok;
            dst->null_count += !ok;
        }
    } else if (dst->valid) {
        memset(dst->valid + base, 1, n);
    }
    switch (k) {
    case FL_TYPE_STRUCT:
        for (uint32_t c = 0; c < src->n_children; c++) fl_vec_take(&dst->children[c], &src->children[c], rows, n);
        break;
    case FL_TYPE_LIST:
    case FL_TYPE_MAP: {
        size_t total = 0;
        for (size_t i = 0; i < n; i++) total += src->offsets[rows[i] + 1] - src->offsets[rows[i]];
        uint32_t *crow = fl_malloc((total ? total : 1) * sizeof *crow);
        size_t m = 0;
        uint32_t off = dst->offsets[base];
        for (size_t i = 0; i < n; i++) {
            uint32_t b = src->offsets[rows[i]], e = src->offsets[rows[i] + 1];
            for (uint32_t j = b; j < e; j++) crow[m++] = j;
            off += e - b;
            dst->offsets[base + i + 1] = off;
        }
        for (uint32_t c = 0; c < src->n_children; c++) fl_vec_take(&dst->children[c], &src->children[c], crow, m);
        free(crow);
        break;
    }
    case FL_TYPE_STRING:
    case FL_TYPE_BINARY: {
        size_t total = 0;
        for (size_t i = 0; i < n; i++) total += src->offsets[rows[i] + 1] - src->offsets[rows[i]];
        if (dst->bytes_len + total > dst->bytes_cap) {
            size_t cap = dst->bytes_cap ? dst->bytes_cap : 256;
            while (cap < dst->bytes_len + total) cap *= 2;
            dst->bytes = fl_realloc(dst->bytes, cap);
            dst->bytes_cap = cap;
        }
        for (size_t i = 0; i < n; i++) {
            uint32_t b = src->offsets[rows[i]], e = src->offsets[rows[i] + 1];
            if (e > b) memcpy(dst->bytes + dst->bytes_len, src->bytes + b, e - b);
            dst->bytes_len += e - b;
            dst->offsets[base + i + 1] = (uint32_t)dst->bytes_len;
        }
        break;
    }
    default: {
        size_t w = fl_field_width(src->field);
        unsigned char *d = dst->data + base * w;
        const unsigned char *sp = src->data;
        switch (w) {
        case 1: for (size_t i = 0; i < n; i++) d[i] = sp[rows[i]]; break;
        case 4: for (size_t i = 0; i < n; i++) memcpy(d + 4 * i, sp + 4 * (size_t)rows[i], 4); break;
        case 8: for (size_t i = 0; i < n; i++) memcpy(d + 8 * i, sp + 8 * (size_t)rows[i], 8); break;
        case 16: for (size_t i = 0; i < n; i++) memcpy(d + 16 * i, sp + 16 * (size_t)rows[i], 16); break;
        default: for (size_t i = 0; i < n; i++) memcpy(d + w * i, sp + w * (size_t)rows[i], w); break;
        }
    }
    }
    dst->len = base + n;
}

static bool val_eq(const fl_vec_t *a, size_t i, const fl_vec_t *b, size_t j)
{
    bool na = fl_vec_is_null(a, i), nb = fl_vec_is_null(b, j);
    if (na || nb) return na == nb;
    switch (a->field->kind) {
    case FL_TYPE_STRUCT:
        for (uint32_t c = 0; c < a->n_children; c++)
            if (!val_eq(&a->children[c], i, &b->children[c], j)) return false;
        return true;
    case FL_TYPE_LIST:
    case FL_TYPE_MAP: {
        size_t ab, ae, bb, be;
        fl_vec_list_range(a, i, &ab, &ae);
        fl_vec_list_range(b, j, &bb, &be);
        if (ae - ab != be - bb) return false;
        for (size_t k = 0; k < ae - ab; k++)
            for (uint32_t c = 0; c < a->n_children; c++)
                if (!val_eq(&a->children[c], ab + k, &b->children[c], bb + k)) return false;
        return true;
    }
    case FL_TYPE_FLOAT: {
        float x = fl_vec_f32(a, i), y = fl_vec_f32(b, j);
        if (isnan(x) || isnan(y)) return isnan(x) && isnan(y);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    case FL_TYPE_DOUBLE: {
        double x = fl_vec_f64(a, i), y = fl_vec_f64(b, j);
        if (isnan(x) || isnan(y)) return isnan(x) && isnan(y);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    default: {
        fl_slice_t x = fl_vec_bytes_at(a, i), y = fl_vec_bytes_at(b, j);
        return x.len == y.len && (x.len == 0 || memcmp(x.ptr, y.ptr, x.len) == 0);
    }
    }
}

bool fl_vec_eq(const fl_vec_t *a, const fl_vec_t *b)
{
    if (a->len != b->len || a->field->kind != b->field->kind) return false;
    for (size_t i = 0; i < a->len; i++)
        if (!val_eq(a, i, b, i)) return false;
    return true;
}

/* ---- JSON rendering ---- */

static void civil(int64_t days, int *y, unsigned *m, unsigned *d)
{
    /* days since 1970-01-01 -> proleptic Gregorian date (H. Hinnant's algorithm) */
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    unsigned doe = (unsigned)(days - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int)(yy + (*m <= 2));
}

static int64_t floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b && (a < 0) != (b < 0)) ? q - 1 : q; }

static fl_err_t put_time_of_day(fl_buf_t *out, int64_t units, int64_t per_sec, int digits)
{
    int64_t secs = units / per_sec, frac = units % per_sec;
    return fl_buf_printf(out, "%02d:%02d:%02d.%0*" PRId64, (int)(secs / 3600),
                         (int)(secs / 60 % 60), (int)(secs % 60), digits, frac);
}

static fl_err_t put_timestamp(fl_buf_t *out, int64_t v, int64_t per_sec, int digits, bool tz)
{
    int64_t per_day = 86400 * per_sec;
    int64_t days = floordiv(v, per_day);
    int y; unsigned m, d;
    civil(days, &y, &m, &d);
    fl_err_t e = fl_buf_printf(out, "\"%04d-%02u-%02uT", y, m, d);
    if (!e) e = put_time_of_day(out, v - days * per_day, per_sec, digits);
    if (!e) e = fl_buf_adds(out, tz ? "+00:00\"" : "\"");
    return e;
}

static fl_err_t put_json_string(fl_buf_t *out, const char *p, size_t n)
{
    fl_err_t e = fl_buf_addc(out, '"');
    for (size_t i = 0; !e && i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\') { e = fl_buf_addc(out, '\\'); if (!e) e = fl_buf_addc(out, (char)c); }
        else if (c == '\n') e = fl_buf_adds(out, "\\n");
        else if (c == '\r') e = fl_buf_adds(out, "\\r");
        else if (c == '\t') e = fl_buf_adds(out, "\\t");
        else if (c < 0x20) e = fl_buf_printf(out, "\\u%04x", c);
        else e = fl_buf_addc(out, (char)c);
    }
    if (!e) e = fl_buf_addc(out, '"');
    return e;
}

static fl_err_t put_decimal(fl_buf_t *out, __int128 v, int32_t scale)
{
    char digits[64];
    int n = 0;
    bool neg = v < 0;
    unsigned __int128 u = neg ? -(unsigned __int128)v : (unsigned __int128)v;
    do { digits[n++] = (char)('0' + (int)(u % 10)); u /= 10; } while (u);
    while (n <= scale) digits[n++] = '0';
    fl_err_t e = fl_buf_addc(out, '"');
    if (!e && neg) e = fl_buf_addc(out, '-');
    for (int i = n - 1; !e && i >= 0; i--) {
        e = fl_buf_addc(out, digits[i]);
        if (!e && i == scale && scale > 0) e = fl_buf_addc(out, '.');
    }
    if (!e) e = fl_buf_addc(out, '"');
    return e;
}

static fl_err_t put_double(fl_buf_t *out, double x, bool is_float)
{
    if (isnan(x)) return fl_buf_adds(out, "\"NaN\"");
    if (isinf(x)) return fl_buf_adds(out, x > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    return fl_buf_printf(out, is_float ? "%.9g" : "%.17g", x);
}

fl_err_t fl_vec_json_append(const fl_vec_t *v, size_t i, fl_buf_t *out)
{
    if (fl_vec_is_null(v, i)) return fl_buf_adds(out, "null");
    const fl_field_t *f = v->field;
    fl_err_t e = FL_OK;
    switch (f->kind) {
    case FL_TYPE_BOOLEAN: return fl_buf_adds(out, fl_vec_bool(v, i) ? "true" : "false");
    case FL_TYPE_INT: return fl_buf_printf(out, "%" PRId32, fl_vec_i32(v, i));
    case FL_TYPE_LONG: return fl_buf_printf(out, "%" PRId64, fl_vec_i64(v, i));
    case FL_TYPE_FLOAT: return put_double(out, fl_vec_f32(v, i), true);
    case FL_TYPE_DOUBLE: return put_double(out, fl_vec_f64(v, i), false);
    case FL_TYPE_DECIMAL: return put_decimal(out, fl_vec_i128(v, i), f->scale);
    case FL_TYPE_DATE: {
        int y; unsigned m, d;
        civil(fl_vec_i32(v, i), &y, &m, &d);
        return fl_buf_printf(out, "\"%04d-%02u-%02u\"", y, m, d);
    }
    case FL_TYPE_TIME:
        e = fl_buf_addc(out, '"');
        if (!e) e = put_time_of_day(out, fl_vec_i64(v, i), 1000000, 6);
        if (!e) e = fl_buf_addc(out, '"');
        return e;
    case FL_TYPE_TIMESTAMP: return put_timestamp(out, fl_vec_i64(v, i), 1000000, 6, false);
    case FL_TYPE_TIMESTAMPTZ: return put_timestamp(out, fl_vec_i64(v, i), 1000000, 6, true);
    case FL_TYPE_TIMESTAMP_NS: return put_timestamp(out, fl_vec_i64(v, i), 1000000000, 9, false);
    case FL_TYPE_TIMESTAMPTZ_NS: return put_timestamp(out, fl_vec_i64(v, i), 1000000000, 9, true);
    case FL_TYPE_STRING: {
        fl_slice_t s = fl_vec_bytes_at(v, i);
        return put_json_string(out, s.ptr, s.len);
    }
    case FL_TYPE_UUID: {
        const unsigned char *u = (const unsigned char *)fl_vec_bytes_at(v, i).ptr;
        char h[33];
        fl_hex(u, 16, h);
        return fl_buf_printf(out, "\"%.8s-%.4s-%.4s-%.4s-%.12s\"", h, h + 8, h + 12, h + 16, h + 20);
    }
    case FL_TYPE_FIXED:
    case FL_TYPE_BINARY: {
        fl_slice_t s = fl_vec_bytes_at(v, i);
        e = fl_buf_addc(out, '"');
        for (size_t k = 0; !e && k < s.len; k++)
            e = fl_buf_printf(out, "%02x", (unsigned char)s.ptr[k]);
        if (!e) e = fl_buf_addc(out, '"');
        return e;
    }
    case FL_TYPE_STRUCT:
        e = fl_buf_addc(out, '{');
        for (uint32_t c = 0; !e && c < v->n_children; c++) {
            if (c) e = fl_buf_addc(out, ',');
            const char *name = v->children[c].field->name;
            if (!e) e = put_json_string(out, name, strlen(name));
            if (!e) e = fl_buf_addc(out, ':');
            if (!e) e = fl_vec_json_append(&v->children[c], i, out);
        }
        if (!e) e = fl_buf_addc(out, '}');
        return e;
    case FL_TYPE_LIST: {
        size_t b, en;
        fl_vec_list_range(v, i, &b, &en);
        e = fl_buf_addc(out, '[');
        for (size_t k = b; !e && k < en; k++) {
            if (k > b) e = fl_buf_addc(out, ',');
            if (!e) e = fl_vec_json_append(&v->children[0], k, out);
        }
        if (!e) e = fl_buf_addc(out, ']');
        return e;
    }
    case FL_TYPE_MAP: {
        size_t b, en;
        fl_vec_list_range(v, i, &b, &en);
        bool str_keys = v->children[0].field->kind == FL_TYPE_STRING;
        e = fl_buf_addc(out, str_keys ? '{' : '[');
        for (size_t k = b; !e && k < en; k++) {
            if (k > b) e = fl_buf_addc(out, ',');
            if (str_keys) {
                if (!e) e = fl_vec_json_append(&v->children[0], k, out);
                if (!e) e = fl_buf_addc(out, ':');
            } else {
                if (!e) e = fl_buf_adds(out, "{\"key\":");
                if (!e) e = fl_vec_json_append(&v->children[0], k, out);
                if (!e) e = fl_buf_adds(out, ",\"value\":");
            }
            if (!e) e = fl_vec_json_append(&v->children[1], k, out);
            if (!e && !str_keys) e = fl_buf_addc(out, '}');
        }
        if (!e) e = fl_buf_addc(out, str_keys ? '}' : ']');
        return e;
    }
    }
    return FL_ERR_INVALID;
}

void fl_col_metrics_free(fl_col_metrics_t *m, size_t n)
{
    if (!m) return;
    for (size_t i = 0; i < n; i++) {
        fl_buf_free(&m[i].lower);
        fl_buf_free(&m[i].upper);
    }
    free(m);
}
