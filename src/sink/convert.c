/* Record conversion and type inference (see convert.h). */
#include "sink/convert.h"
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "base/buf.h"
#include "base/limits.h"
#include "base/mem.h"

#define TS_LOGICAL "org.apache.kafka.connect.data.Timestamp"
#define DATE_LOGICAL "org.apache.kafka.connect.data.Date"
#define TIME_LOGICAL "org.apache.kafka.connect.data.Time"
#define DECIMAL_LOGICAL "org.apache.kafka.connect.data.Decimal"

/* ---- a fast JSON reader for the record path ----
 * jansson's lexer reads a byte at a time through a UTF-8-checking stream, the
 * largest cost of the sink (half its CPU in bench/sink.py). This reader builds
 * the same jansson values for the plain cases: ASCII strings with the simple
 * escapes, integers of up to 18 digits, reals strtod takes, objects without
 * duplicate keys, bounded depth. Anything else (non-ASCII, \u escapes, long
 * integers, any error) gives NULL and the caller asks json_loadb, whose
 * answer (and error message) is then the one that counts. */
typedef struct fast {
    const char *p, *end;
    fl_buf_t tmp;
    int depth;
} fast_t;

static void fast_ws(fast_t *f)
{
    while (f->p < f->end && (*f->p == ' ' || *f->p == '\n' || *f->p == '\t' || *f->p == '\r')) f->p++;
}

static const char *fd_str(const char *p, const char *end, fl_buf_t *tmp, bool *esc);

/* A string body after its opening quote into f->tmp (NUL-terminated); false to fall back
 * (the direct path's scanner: simple escapes only, ASCII). */
static bool fast_str(fast_t *f)
{
    bool esc;
    fl_buf_reset(&f->tmp);
    const char *q = fd_str(f->p, f->end, &f->tmp, &esc);
    if (!q) return false;
    if (!esc) fl_buf_add(&f->tmp, f->p, (size_t)(q - 1 - f->p));
    f->p = q;
    if (!f->tmp.ptr) fl_buf_add(&f->tmp, "", 0);
    return f->tmp.ptr != NULL;
}

static json_t *fast_value(fast_t *f)
{
    fast_ws(f);
    if (f->p >= f->end) return NULL;
    char c = *f->p;
    if (c == '"') {
        f->p++;
        return fast_str(f) ? json_stringn_nocheck(f->tmp.ptr, f->tmp.len) : NULL;
    }
    if (c == '{' || c == '[') {
        if (++f->depth > 64) return NULL;
        f->p++;
        bool obj = c == '{';
        json_t *o = obj ? json_object() : json_array();
        fast_ws(f);
        if (f->p < f->end && *f->p == (obj ? '}' : ']')) { f->p++; f->depth--; return o; }
        for (;;) {
            json_t *x;
            if (obj) {
                fast_ws(f);
                if (f->p >= f->end || *f->p != '"') goto fail;
                f->p++;
                if (!fast_str(f) || memchr(f->tmp.ptr, 0, f->tmp.len) || json_object_get(o, f->tmp.ptr)) goto fail;
                char *key = fl_strdup(f->tmp.ptr);
                fast_ws(f);
                if (f->p >= f->end || *f->p != ':') { free(key); goto fail; }
                f->p++;
                x = fast_value(f);
                if (!x) { free(key); goto fail; }
                json_object_set_new_nocheck(o, key, x);
                free(key);
            } else {
                if (!(x = fast_value(f))) goto fail;
                json_array_append_new(o, x);
            }
            fast_ws(f);
            if (f->p >= f->end) goto fail;
            if (*f->p == ',') { f->p++; continue; }
            if (*f->p == (obj ? '}' : ']')) { f->p++; break; }
            goto fail;
        }
        f->depth--;
        return o;
    fail:
        json_decref(o);
        return NULL;
    }
    if (c == 't' && f->end - f->p >= 4 && !memcmp(f->p, "true", 4)) { f->p += 4; return json_true(); }
    if (c == 'f' && f->end - f->p >= 5 && !memcmp(f->p, "false", 5)) { f->p += 5; return json_false(); }
    if (c == 'n' && f->end - f->p >= 4 && !memcmp(f->p, "null", 4)) { f->p += 4; return json_null(); }
    if (c == '-' || (c >= '0' && c <= '9')) {
        const char *q = f->p + (c == '-');
        const char *d0 = q;
        while (q < f->end && *q >= '0' && *q <= '9') q++;
        size_t nd = (size_t)(q - d0);
        if (!nd || (nd > 1 && *d0 == '0')) return NULL;
        bool real = false;
        if (q < f->end && *q == '.') {
            real = true;
            const char *r = ++q;
            while (q < f->end && *q >= '0' && *q <= '9') q++;
            if (q == r) return NULL;
        }
        if (q < f->end && (*q == 'e' || *q == 'E')) {
            real = true;
            q++;
            if (q < f->end && (*q == '+' || *q == '-')) q++;
            const char *r = q;
            while (q < f->end && *q >= '0' && *q <= '9') q++;
            if (q == r) return NULL;
        }
        if (!real) {
            if (nd > 18) return NULL;
            int64_t v = 0;
            for (const char *r = d0; r < q; r++) v = v * 10 + (*r - '0');
            f->p = q;
            return json_integer(c == '-' ? -v : v);
        }
        char num[64];
        size_t len = (size_t)(q - f->p);
        if (len >= sizeof num) return NULL;
        memcpy(num, f->p, len);
        num[len] = 0;
        errno = 0;
        double d = strtod(num, NULL);
        if (errno == ERANGE || !isfinite(d)) return NULL;
        f->p = q;
        return json_real(d);
    }
    return NULL;
}

json_t *fl_sink_json_fast(const void *p, size_t n)
{
    fast_t f = { p, (const char *)p + n, { 0 }, 0 };
    fl_buf_init(&f.tmp, 0);
    json_t *j = fast_value(&f);
    fast_ws(&f);
    if (j && f.p != f.end) {
        json_decref(j);
        j = NULL;
    }
    fl_buf_free(&f.tmp);
    return j;
}

fl_err_t fl_sink_parse_value(const void *p, size_t n, bool schemas_enable, json_t **root, json_t **value,
                             json_t **schema, char *err, size_t errlen)
{
    *root = *value = *schema = NULL;
    if (!p) return FL_OK;
    json_error_t je;
    json_t *j = fl_sink_json_fast(p, n);
    if (!j) j = json_loadb(p, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!j) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "value is not JSON: %s (at byte %d)", je.text, je.position);
    if (schemas_enable) {
        json_t *s = json_object_get(j, "schema"), *pl = json_object_get(j, "payload");
        if (!json_is_object(j) || !pl || json_object_size(j) != 2 || !s) {
            json_decref(j);
            return fl_err_fmt(err, errlen, FL_ERR_INVALID, "JsonConverter with schemas.enable requires \"schema\" and "
                              "\"payload\" fields and may not contain additional fields (set "
                              "value.converter.schemas.enable=false for plain JSON)");
        }
        *schema = json_is_object(s) ? s : NULL;
        *value = json_is_null(pl) ? NULL : pl;
    } else {
        *value = json_is_null(j) ? NULL : j;
    }
    if (*value && !json_is_object(*value)) {
        json_decref(j);
        *value = *schema = NULL;
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "value is not a JSON object (a struct or map is needed)");
    }
    *root = j;
    return FL_OK;
}

/* ---- helpers over Connect schemas ---- */

static const char *cs_type(json_t *s) { return json_string_value(json_object_get(s, "type")); }
static const char *cs_name(json_t *s) { return json_string_value(json_object_get(s, "name")); }

static json_t *cs_field(json_t *s, const char *name)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(s, "fields"), i, f) {
        const char *n = json_string_value(json_object_get(f, "field"));
        if (n && !strcmp(n, name)) return f;
    }
    return NULL;
}

/* The object member for column name (case-insensitive when asked). */
static json_t *member(json_t *obj, const char *name, bool ci, const char **key)
{
    json_t *v = json_object_get(obj, name);
    if (v || !ci) {
        if (key) *key = name;
        return v;
    }
    const char *k;
    json_t *x;
    json_object_foreach(obj, k, x)
        if (!strcasecmp(k, name)) {
            if (key) *key = k;
            return x;
        }
    return NULL;
}

static const fl_field_t *column(const fl_field_t *st, const char *name, bool ci)
{
    for (uint32_t i = 0; i < st->n_children; i++)
        if (ci ? !strcasecmp(st->children[i].name, name) : !strcmp(st->children[i].name, name))
            return &st->children[i];
    return NULL;
}

static fl_err_t bad(char *err, size_t errlen, const char *path, const char *fmt, const char *what)
{
    return fl_err_fmt(err, errlen, FL_ERR_INVALID, "field %s: %s%s", path, fmt, what ? what : "");
}

/* A numeric string as a JSON number (integer when it is one). */
static json_t *parse_number(const char *s, bool want_int)
{
    char *end;
    errno = 0;
    while (isspace((unsigned char)*s)) s++;
    long long i = strtoll(s, &end, 10);
    if (!errno && end != s && !*end) return json_integer(i);
    if (want_int) return NULL;
    errno = 0;
    double d = strtod(s, &end);
    if (!errno && end != s && !*end) return json_real(d);
    return NULL;
}

/* The scale of a Connect Decimal schema s (parameters.scale, a string): 0..38
 * (Iceberg's decimal), else -1. */
static int connect_scale(json_t *s)
{
    const char *sc = json_string_value(json_object_get(json_object_get(s, "parameters"), "scale"));
    if (!sc) return 0;
    char *end;
    errno = 0;
    long v = strtol(sc, &end, 10);
    return errno || end == sc || *end || v < 0 || v > 38 ? -1 : (int)v;
}

/* Decimal bytes (base64 of the big-endian two's-complement unscaled value);
 * scale 0..38 (connect_scale), so the digits fit the buffers below. */
static json_t *decimal_from_base64(const char *b64, int scale)
{
    if (scale < 0 || scale > 38) return NULL;
    unsigned char raw[64];
    long n = fl_base64_decode(b64, strlen(b64), raw, sizeof raw);
    if (n <= 0 || n > 16) return NULL;
    __int128 x = (raw[0] & 0x80) ? -1 : 0;
    for (long i = 0; i < n; i++) x = (__int128)(((unsigned __int128)x << 8) | raw[i]);
    bool neg = x < 0;
    unsigned __int128 u = neg ? (unsigned __int128)(-(x + 1)) + 1 : (unsigned __int128)x;
    char digits[64];
    int nd = 0;
    do { digits[nd++] = (char)('0' + (int)(u % 10)); u /= 10; } while (u);
    while (nd <= scale) digits[nd++] = '0';
    char out[72];
    int o = 0;
    if (neg) out[o++] = '-';
    for (int i = nd - 1; i >= 0; i--) {
        out[o++] = digits[i];
        if (i == scale && scale > 0) out[o++] = '.';
    }
    out[o] = 0;
    return json_string(out);
}

static fl_err_t conv(const fl_field_t *f, json_t *v, json_t *s, bool ci, const char *path, json_t **out,
                     json_t *missing, char *err, size_t errlen);

static fl_err_t conv_struct(const fl_field_t *st, json_t *v, json_t *s, bool ci, const char *path, json_t **out,
                            json_t *missing, char *err, size_t errlen)
{
    if (!json_is_object(v)) return bad(err, errlen, path, "expected an object", NULL);
    json_t *o = json_object();
    fl_buf_t sub;
    fl_buf_init(&sub, 0);
    fl_err_t e = FL_OK;
    size_t plen = strlen(path);
    for (uint32_t i = 0; i < st->n_children; i++) {
        const fl_field_t *c = &st->children[i];
        const char *key = NULL;
        json_t *x = member(v, c->name, ci, &key);
        if (!x || json_is_null(x)) continue;
        /* the field's dotted path, for error messages (per field of every record: no printf) */
        fl_buf_reset(&sub);
        fl_buf_add(&sub, path, plen);
        if (plen) fl_buf_addc(&sub, '.');
        fl_buf_adds(&sub, c->name);
        json_t *y = NULL;
        if ((e = conv(c, x, s ? cs_field(s, key) : NULL, ci, sub.ptr, &y, missing, err, errlen)))
            goto out;
        if (y) json_object_set_new(o, c->name, y);
    }
    if (missing) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            if (json_is_null(x) || column(st, k, ci)) continue;
            fl_buf_reset(&sub);
            fl_buf_printf(&sub, "%s%s%s", path, *path ? "." : "", k);
            json_array_append_new(missing, json_string(sub.ptr));
        }
    }
out:
    fl_buf_free(&sub);
    if (e) json_decref(o);
    else *out = o;
    return e;
}

/* Strips a trailing zone offset (Z, +hh:mm, +hhmm, -hh) after the time. */
static json_t *strip_offset(const char *s)
{
    size_t n = strlen(s);
    const char *t = strpbrk(s, "T ");
    if (!t) return json_string(s);
    size_t cut = n;
    for (size_t i = (size_t)(t - s) + 1; i < n; i++)
        if (s[i] == 'Z' || s[i] == 'z' || s[i] == '+' || s[i] == '-') { cut = i; break; }
    return json_stringn(s, cut);
}

static fl_err_t conv(const fl_field_t *f, json_t *v, json_t *s, bool ci, const char *path, json_t **out,
                     json_t *missing, char *err, size_t errlen)
{
    *out = NULL;
    if (!v || json_is_null(v)) return FL_OK;
    const char *lname = s ? cs_name(s) : NULL;
    switch (f->kind) {
    case FL_TYPE_BOOLEAN:
        if (json_is_boolean(v)) { *out = json_incref(v); return FL_OK; }
        if (json_is_string(v)) { *out = json_boolean(!strcasecmp(json_string_value(v), "true")); return FL_OK; }
        return bad(err, errlen, path, "expected a boolean", NULL);
    case FL_TYPE_INT: case FL_TYPE_LONG:
        if (json_is_integer(v)) { *out = json_incref(v); return FL_OK; }
        if (json_is_real(v)) {
            double d = json_real_value(v);
            if (!isfinite(d) || d < -9.2e18 || d > 9.2e18) return bad(err, errlen, path, "number out of range", NULL);
            *out = json_integer((json_int_t)d);
            return FL_OK;
        }
        if (json_is_string(v) && (*out = parse_number(json_string_value(v), true))) return FL_OK;
        return bad(err, errlen, path, "expected an integer", NULL);
    case FL_TYPE_FLOAT: case FL_TYPE_DOUBLE:
        if (json_is_number(v)) { *out = json_real(json_number_value(v)); return FL_OK; }
        if (json_is_string(v)) {
            const char *x = json_string_value(v);
            if (!strcmp(x, "NaN") || !strcmp(x, "Infinity") || !strcmp(x, "-Infinity")) { *out = json_incref(v); return FL_OK; }
            json_t *n = parse_number(x, false);
            if (n) { *out = json_real(json_number_value(n)); json_decref(n); return FL_OK; }
        }
        return bad(err, errlen, path, "expected a number", NULL);
    case FL_TYPE_DECIMAL:
        if (lname && !strcmp(lname, DECIMAL_LOGICAL) && json_is_string(v)) {
            if ((*out = decimal_from_base64(json_string_value(v), connect_scale(s)))) return FL_OK;
            return bad(err, errlen, path, "not Connect decimal bytes", NULL);
        }
        if (json_is_number(v) || json_is_string(v)) { *out = json_incref(v); return FL_OK; }
        return bad(err, errlen, path, "expected a decimal", NULL);
    case FL_TYPE_DATE:
        if (json_is_integer(v) || json_is_string(v)) { *out = json_incref(v); return FL_OK; }
        return bad(err, errlen, path, "expected a date (days or yyyy-mm-dd)", NULL);
    case FL_TYPE_TIME:
        if (json_is_integer(v)) { /* millis of the day */
            json_int_t ms = json_integer_value(v);
            if (ms < 0 || ms >= 86400000) return bad(err, errlen, path, "time of day out of range", NULL);
            *out = json_integer(ms * 1000);
            return FL_OK;
        }
        if (json_is_string(v)) { *out = json_incref(v); return FL_OK; }
        return bad(err, errlen, path, "expected a time (millis of the day or hh:mm:ss)", NULL);
    case FL_TYPE_TIMESTAMP: case FL_TYPE_TIMESTAMPTZ: case FL_TYPE_TIMESTAMP_NS: case FL_TYPE_TIMESTAMPTZ_NS: {
        int64_t unit = (f->kind == FL_TYPE_TIMESTAMP_NS || f->kind == FL_TYPE_TIMESTAMPTZ_NS) ? 1000000 : 1000;
        if (json_is_integer(v)) {
            json_int_t ms = json_integer_value(v);
            if (ms > INT64_MAX / unit || ms < INT64_MIN / unit) return bad(err, errlen, path, "timestamp out of range", NULL);
            *out = json_integer(ms * unit);   /* epoch millis, as the sink */
            return FL_OK;
        }
        if (json_is_real(v)) {
            double d = json_real_value(v) * (double)unit;
            if (!isfinite(d) || fabs(d) > 9.2e18) return bad(err, errlen, path, "timestamp out of range", NULL);
            *out = json_integer((json_int_t)d);
            return FL_OK;
        }
        if (json_is_string(v)) {
            bool tz = f->kind == FL_TYPE_TIMESTAMPTZ || f->kind == FL_TYPE_TIMESTAMPTZ_NS;
            *out = tz ? json_incref(v) : strip_offset(json_string_value(v));
            return FL_OK;
        }
        return bad(err, errlen, path, "expected a timestamp (epoch millis or ISO-8601)", NULL);
    }
    case FL_TYPE_STRING:
        if (json_is_string(v)) { *out = json_incref(v); return FL_OK; }
        {
            char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            *out = json_string(t ? t : "");
            free(t);
        }
        return FL_OK;
    case FL_TYPE_UUID:
        if (json_is_string(v)) { *out = json_incref(v); return FL_OK; }
        return bad(err, errlen, path, "expected a uuid string", NULL);
    case FL_TYPE_FIXED: case FL_TYPE_BINARY: {
        if (!json_is_string(v)) return bad(err, errlen, path, "expected base64 bytes", NULL);
        const char *b = json_string_value(v);
        size_t n = json_string_length(v);
        if (n > FL_SINK_MAX_VALUE_BYTES) return bad(err, errlen, path, "value too large", NULL);
        unsigned char *raw = fl_malloc(n / 4 * 3 + 4);
        long m = fl_base64_decode(b, n, raw, n / 4 * 3 + 4);
        if (m < 0) { free(raw); return bad(err, errlen, path, "not base64", NULL); }
        char *hex = fl_malloc((size_t)m * 2 + 1);
        fl_hex(raw, (size_t)m, hex);
        hex[m * 2] = 0;
        *out = json_string(hex);
        free(raw);
        free(hex);
        return FL_OK;
    }
    case FL_TYPE_STRUCT:
        return conv_struct(f, v, s, ci, path, out, missing, err, errlen);
    case FL_TYPE_LIST: {
        if (!json_is_array(v)) return bad(err, errlen, path, "expected an array", NULL);
        json_t *a = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            json_t *y = NULL;
            fl_err_t e = conv(&f->children[0], x, s ? json_object_get(s, "items") : NULL, ci, path, &y, NULL, err, errlen);
            if (e) { json_decref(a); return e; }
            json_array_append_new(a, y ? y : json_null());
        }
        *out = a;
        return FL_OK;
    }
    case FL_TYPE_MAP: {
        json_t *a = json_array();
        const fl_field_t *kf = &f->children[0], *vf = &f->children[1];
        json_t *ks = s ? json_object_get(s, "keys") : NULL, *vs = s ? json_object_get(s, "values") : NULL;
        fl_err_t e = FL_OK;
        if (json_is_object(v)) {
            const char *k;
            json_t *x;
            json_object_foreach(v, k, x) {
                json_t *kj = json_string(k), *ky = NULL, *vy = NULL;
                e = conv(kf, kj, ks, ci, path, &ky, NULL, err, errlen);
                json_decref(kj);
                if (e || (e = conv(vf, x, vs, ci, path, &vy, NULL, err, errlen))) { json_decref(ky); break; }
                json_array_append_new(a, json_pack("{s:o,s:o}", "key", ky ? ky : json_null(), "value", vy ? vy : json_null()));
            }
        } else if (json_is_array(v)) {
            /* Connect's JsonConverter writes maps with non-string keys as [[k, v], ...] */
            size_t i;
            json_t *x;
            json_array_foreach(v, i, x) {
                if (!json_is_array(x) || json_array_size(x) != 2) { e = bad(err, errlen, path, "map entries must be [key, value]", NULL); break; }
                json_t *ky = NULL, *vy = NULL;
                if ((e = conv(kf, json_array_get(x, 0), ks, ci, path, &ky, NULL, err, errlen))) break;
                if ((e = conv(vf, json_array_get(x, 1), vs, ci, path, &vy, NULL, err, errlen))) { json_decref(ky); break; }
                json_array_append_new(a, json_pack("{s:o,s:o}", "key", ky ? ky : json_null(), "value", vy ? vy : json_null()));
            }
        } else {
            e = bad(err, errlen, path, "expected an object", NULL);
        }
        if (e) { json_decref(a); return e; }
        *out = a;
        return FL_OK;
    }
    }
    return bad(err, errlen, path, "unsupported column type", NULL);
}

/* Whether conv would hand back v itself for f (schemaless, exact names): then
 * the record can go to fl_vec_append_json as it is, without building a second
 * tree (it reads struct fields by name and ignores keys with no column). */
static bool identity(const fl_field_t *f, json_t *v)
{
    if (!v || json_is_null(v)) return true;
    switch (f->kind) {
    case FL_TYPE_BOOLEAN: return json_is_boolean(v);
    case FL_TYPE_INT: case FL_TYPE_LONG: return json_is_integer(v);
    case FL_TYPE_FLOAT: case FL_TYPE_DOUBLE: return json_is_real(v);
    case FL_TYPE_DECIMAL: return json_is_number(v) || json_is_string(v);
    case FL_TYPE_DATE: return json_is_integer(v) || json_is_string(v);
    case FL_TYPE_TIME: case FL_TYPE_STRING: case FL_TYPE_UUID:
    case FL_TYPE_TIMESTAMPTZ: case FL_TYPE_TIMESTAMPTZ_NS: return json_is_string(v);
    case FL_TYPE_STRUCT:
        if (!json_is_object(v)) return false;
        for (uint32_t i = 0; i < f->n_children; i++)
            if (!identity(&f->children[i], json_object_get(v, f->children[i].name))) return false;
        return true;
    case FL_TYPE_LIST: {
        if (!json_is_array(v)) return false;
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) if (!identity(&f->children[0], x)) return false;
        return true;
    }
    default: return false;   /* timestamps without zone (offset stripped), bytes, maps: converted */
    }
}

fl_err_t fl_sink_convert(const fl_field_t *root, json_t *value, json_t *schema, bool case_insensitive,
                         json_t **out, json_t *missing, char *err, size_t errlen)
{
    *out = NULL;
    if (!json_is_object(value)) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "record is not an object");
    /* the common case (plain JSON whose values already have the columns' forms): no copy */
    if (!schema && !case_insensitive && !missing && identity(root, value)) {
        *out = json_incref(value);
        return FL_OK;
    }
    return conv_struct(root, value, schema, case_insensitive, "", out, missing, err, errlen);
}

const char *fl_sink_route_value(json_t *value, const char *path, bool lower, char *buf, size_t n)
{
    json_t *v = value;
    const char *p = path;
    while (v && *p) {
        const char *dot = strchr(p, '.');
        size_t m = dot ? (size_t)(dot - p) : strlen(p);
        char key[256];
        if (m >= sizeof key) return NULL;
        memcpy(key, p, m);
        key[m] = 0;
        v = json_is_object(v) ? json_object_get(v, key) : NULL;
        p = dot ? dot + 1 : p + m;
    }
    const char *s = NULL;
    if (json_is_string(v)) {
        s = json_string_value(v);
    } else if (json_is_integer(v)) {
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        s = buf;
    } else if (json_is_real(v)) {
        snprintf(buf, n, "%.17g", json_real_value(v));
        s = buf;
    } else if (json_is_boolean(v)) {
        s = json_is_true(v) ? "true" : "false";
    }
    if (!s || !lower) return s;
    if (s != buf) fl_strlcpy(buf, s, n);
    for (char *c = buf; *c; c++) *c = (char)tolower((unsigned char)*c);
    return buf;
}

/* ---- inference ---- */

static json_t *infer_struct(json_t *value, json_t *schema, bool force_optional, int *next_id);

/* The first item of array a that is not null (the element type is inferred from it, so
 * that [null, "x"] is a list of strings), NULL if none. */
static json_t *first_item(json_t *a)
{
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
        if (!json_is_null(v)) return v;
    return NULL;
}

static json_t *from_connect(json_t *s, json_t *value, bool force_optional, int *next_id)
{
    const char *t = cs_type(s), *n = cs_name(s);
    if (!t) return NULL;
    if (n && !strcmp(n, DECIMAL_LOGICAL)) {
        int scale = connect_scale(s);
        if (scale < 0) return NULL;
        char b[40];
        snprintf(b, sizeof b, "decimal(38, %d)", scale);
        return json_string(b);
    }
    if (n && !strcmp(n, TS_LOGICAL)) return json_string("timestamptz");
    if (n && !strcmp(n, DATE_LOGICAL)) return json_string("date");
    if (n && !strcmp(n, TIME_LOGICAL)) return json_string("time");
    if (n && !strcmp(n, FL_SINK_LOCAL_TS_NAME)) return json_string("timestamp");
    if (n && !strcmp(n, "uuid") && !strcmp(t, "string")) return json_string("uuid");
    if (!strcmp(t, "boolean")) return json_string("boolean");
    if (!strcmp(t, "int8") || !strcmp(t, "int16") || !strcmp(t, "int32")) return json_string("int");
    if (!strcmp(t, "int64")) return json_string("long");
    if (!strcmp(t, "float")) return json_string("float");
    if (!strcmp(t, "double")) return json_string("double");
    if (!strcmp(t, "bytes")) return json_string("binary");
    if (!strcmp(t, "string")) return json_string("string");
    if (!strcmp(t, "struct")) return infer_struct(value, s, force_optional, next_id);
    if (!strcmp(t, "array")) {
        int id = (*next_id)++;
        json_t *items = json_object_get(s, "items");
        json_t *et = from_connect(items, first_item(value), force_optional, next_id);
        if (!et) return NULL;
        bool opt = force_optional || json_is_true(json_object_get(items, "optional"));
        return json_pack("{s:s,s:i,s:o,s:b}", "type", "list", "element-id", id, "element", et, "element-required", !opt);
    }
    if (!strcmp(t, "map")) {
        int kid = (*next_id)++, vid = (*next_id)++;
        json_t *vs = json_object_get(s, "values");
        json_t *kt = from_connect(json_object_get(s, "keys"), NULL, force_optional, next_id);
        json_t *vt = from_connect(vs, NULL, force_optional, next_id);
        if (!kt || !vt) { json_decref(kt); json_decref(vt); return NULL; }
        bool opt = force_optional || json_is_true(json_object_get(vs, "optional"));
        return json_pack("{s:s,s:i,s:o,s:i,s:o,s:b}", "type", "map", "key-id", kid, "key", kt, "value-id", vid,
                         "value", vt, "value-required", !opt);
    }
    return json_string("string");
}

json_t *fl_sink_infer_type(json_t *value, json_t *schema, bool force_optional, int *next_id)
{
    if (schema) return from_connect(schema, value, force_optional, next_id);
    if (!value || json_is_null(value)) return NULL;
    if (json_is_string(value)) return json_string("string");
    if (json_is_boolean(value)) return json_string("boolean");
    if (json_is_integer(value)) return json_string("long");
    if (json_is_real(value)) return json_string("double");
    if (json_is_object(value)) {
        if (!json_object_size(value)) return NULL;
        return infer_struct(value, NULL, true, next_id);
    }
    if (json_is_array(value)) {
        json_t *item = first_item(value);
        if (!item) return NULL;
        int id = (*next_id)++;
        json_t *et = fl_sink_infer_type(item, NULL, force_optional, next_id);
        if (!et) return NULL;
        return json_pack("{s:s,s:i,s:o,s:b}", "type", "list", "element-id", id, "element", et, "element-required", 0);
    }
    return NULL;
}

/* A struct type: with a Connect schema its fields in order, else the value's
 * members (optional, as the sink makes them for maps). Ids: the fields of one
 * level first, then their children (Iceberg's usual numbering). */
static json_t *infer_struct(json_t *value, json_t *schema, bool force_optional, int *next_id)
{
    json_t *fields = json_array();
    json_t *names = json_array(), *subs = json_array();
    if (schema) {
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(schema, "fields"), i, f) {
            const char *n = json_string_value(json_object_get(f, "field"));
            if (n) { json_array_append_new(names, json_string(n)); json_array_append(subs, f); }
        }
    } else {
        const char *k;
        json_t *v;
        json_object_foreach(value, k, v) {
            if (json_is_null(v)) continue;
            json_array_append_new(names, json_string(k));
            json_array_append_new(subs, json_null());
        }
    }
    int first = *next_id;
    *next_id += (int)json_array_size(names);
    for (size_t i = 0; i < json_array_size(names); i++) {
        const char *n = json_string_value(json_array_get(names, i));
        json_t *fs = json_array_get(subs, i);
        json_t *fv = json_is_object(value) ? json_object_get(value, n) : NULL;
        json_t *t = schema ? from_connect(fs, fv, force_optional, next_id) : fl_sink_infer_type(fv, NULL, force_optional, next_id);
        if (!t) continue;
        bool opt = !schema || force_optional || json_is_true(json_object_get(fs, "optional"));
        json_array_append_new(fields, json_pack("{s:i,s:s,s:b,s:o}", "id", first + (int)i, "name", n, "required", !opt,
                                                "type", t));
    }
    json_decref(names);
    json_decref(subs);
    return json_pack("{s:s,s:o}", "type", "struct", "fields", fields);
}

fl_err_t fl_sink_infer_schema(json_t *value, json_t *schema, bool force_optional, json_t **out, char *err,
                              size_t errlen)
{
    *out = NULL;
    if (!json_is_object(value)) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "cannot infer a schema from a non-object record");
    int next = 1;
    json_t *st = infer_struct(value, schema && !strcmp(cs_type(schema) ? cs_type(schema) : "", "struct") ? schema : NULL,
                              force_optional, &next);
    if (!json_array_size(json_object_get(st, "fields"))) {
        json_decref(st);
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "no column can be inferred from the first record (all null or empty)");
    }
    json_object_set_new(st, "schema-id", json_integer(0));
    *out = st;
    return FL_OK;
}

size_t fl_sink_evolve_struct(json_t *st, json_t *value, json_t *schema, bool case_insensitive, int *next_id)
{
    if (!json_is_object(value)) return 0;
    json_t *fields = json_object_get(st, "fields");
    size_t added = 0;
    const char *k;
    json_t *v;
    json_object_foreach(value, k, v) {
        if (json_is_null(v)) continue;
        json_t *fs = schema ? cs_field(schema, k) : NULL;
        json_t *have = NULL;
        size_t i;
        json_t *f;
        json_array_foreach(fields, i, f) {
            const char *n = json_string_value(json_object_get(f, "name"));
            if (n && (case_insensitive ? !strcasecmp(n, k) : !strcmp(n, k))) have = f;
        }
        if (have) {
            json_t *t = json_object_get(have, "type");
            if (json_is_object(t) && !strcmp(json_string_value(json_object_get(t, "type")) ?: "", "struct"))
                added += fl_sink_evolve_struct(t, v, fs, case_insensitive, next_id);
            if (!fs) continue;
            /* with a Connect schema: widen int -> long, float -> double; make optional */
            const char *tt = json_string_value(t), *ct = cs_type(fs);
            if (tt && ct && !cs_name(fs)) {
                const char *to = !strcmp(tt, "int") && !strcmp(ct, "int64") ? "long"
                                 : !strcmp(tt, "float") && !strcmp(ct, "double") ? "double" : NULL;
                if (to) {
                    json_object_set_new(have, "type", json_string(to));
                    added++;
                }
            }
            if (json_is_true(json_object_get(have, "required")) && json_is_true(json_object_get(fs, "optional"))) {
                json_object_set_new(have, "required", json_false());
                added++;
            }
            continue;
        }
        int id = (*next_id)++;
        json_t *t = fl_sink_infer_type(v, fs, true, next_id);
        if (!t) continue;   /* not inferable yet (null, empty): it may come with a later record */
        json_array_append_new(fields, json_pack("{s:i,s:s,s:b,s:o}", "id", id, "name", k, "required", 0, "type", t));
        added++;
    }
    return added;
}

/* ---- KafkaMetadataTransform ---- */

void fl_sink_kafka_metadata(const fl_sink_config_t *cfg, json_t *value, const char *topic, int32_t partition,
                            int64_t offset, int64_t ts_ms)
{
    if (!cfg->kmeta_field || !json_is_object(value)) return;
    json_t *m = json_object();
    json_object_set_new(m, "topic", json_string(topic));
    json_object_set_new(m, "partition", json_integer(partition));
    json_object_set_new(m, "offset", json_integer(offset));
    if (ts_ms >= 0) json_object_set_new(m, "timestamp", json_integer(ts_ms));
    if (cfg->kmeta_ext_name) json_object_set_new(m, cfg->kmeta_ext_name, json_string(cfg->kmeta_ext_value));
    if (cfg->kmeta_nested) {
        json_object_set_new(value, cfg->kmeta_field, m);
        return;
    }
    fl_buf_t k;
    fl_buf_init(&k, 0);
    const char *name;
    json_t *x;
    json_object_foreach(m, name, x) {
        fl_buf_reset(&k);
        fl_buf_printf(&k, "%s_%s", cfg->kmeta_field, name);
        json_object_set(value, k.ptr, x);
    }
    fl_buf_free(&k);
    json_decref(m);
}

json_t *fl_sink_kafka_metadata_schema(const fl_sink_config_t *cfg, json_t *schema)
{
    if (!schema) return NULL;
    json_t *s = json_deep_copy(schema);
    if (!cfg->kmeta_field || !json_is_array(json_object_get(s, "fields"))) return s;
    json_t *fields = json_pack("[{s:s,s:s,s:b},{s:s,s:s,s:b},{s:s,s:s,s:b},{s:s,s:s,s:b}]", "field", "topic", "type",
                               "string", "optional", 0, "field", "partition", "type", "int32", "optional", 0, "field",
                               "offset", "type", "int64", "optional", 0, "field", "timestamp", "type", "int64",
                               "optional", 1);
    if (cfg->kmeta_ext_name)
        json_array_append_new(fields, json_pack("{s:s,s:s,s:b}", "field", cfg->kmeta_ext_name, "type", "string",
                                                "optional", 0));
    json_t *dst = json_object_get(s, "fields");
    if (cfg->kmeta_nested) {
        json_array_append_new(dst, json_pack("{s:s,s:s,s:b,s:o}", "field", cfg->kmeta_field, "type", "struct",
                                             "optional", 0, "fields", fields));
        return s;
    }
    fl_buf_t k;
    fl_buf_init(&k, 0);
    size_t i;
    json_t *f;
    json_array_foreach(fields, i, f) {
        fl_buf_reset(&k);
        fl_buf_printf(&k, "%s_%s", cfg->kmeta_field, json_string_value(json_object_get(f, "field")));
        json_object_set_new(f, "field", json_string(k.ptr));
        json_array_append(dst, f);
    }
    fl_buf_free(&k);
    json_decref(fields);
    return s;
}

/* ---- the direct path: plain records straight into columns ---- */

enum { FD_ABSENT, FD_NULL, FD_SPAN, FD_TMP, FD_INT, FD_REAL, FD_TRUE, FD_FALSE };

typedef struct fd_slot {
    uint8_t kind;
    size_t off, len;            /* FD_SPAN: into the message; FD_TMP: into the scratch buffer */
    int64_t i;
    double d;
} fd_slot_t;

bool fl_sink_direct_usable(const fl_field_t *root)
{
    if (root->kind != FL_TYPE_STRUCT || !root->n_children || root->n_children > FL_SINK_DIRECT_MAX_COLUMNS)
        return false;
    for (uint32_t i = 0; i < root->n_children; i++) {
        switch (root->children[i].kind) {
        case FL_TYPE_BOOLEAN: case FL_TYPE_INT: case FL_TYPE_LONG: case FL_TYPE_FLOAT: case FL_TYPE_DOUBLE:
        case FL_TYPE_STRING: break;
        default: return false;
        }
    }
    return true;
}

static const char *fd_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) p++;
    return p;
}

/* A string body after its opening quote; returns past the closing quote.
 * Plain (no escapes, *esc false): the bytes are the span up to the quote.
 * With the simple escapes (*esc true): the decoded bytes are appended to
 * tmp. NULL to fall back (non-ASCII or control bytes, \u, the end). */
/* The first byte of v (little-endian) that ends a plain run: '"', '\\', a
 * control byte or a non-ASCII one; 8 if none. Each test's borrows can only
 * flag bytes above a true hit, so the lowest flag is exact. */
static inline unsigned fd_special8(uint64_t v)
{
    const uint64_t lo = 0x0101010101010101ULL, hi = 0x8080808080808080ULL;
    uint64_t x1 = v ^ (lo * '"'), x2 = v ^ (lo * '\\');
    uint64_t m = (((v - lo * 0x20) & ~v) | ((x1 - lo) & ~x1) | ((x2 - lo) & ~x2) | v) & hi;
    return m ? (unsigned)__builtin_ctzll(m) >> 3 : 8;
}

static const char *fd_str(const char *p, const char *end, fl_buf_t *tmp, bool *esc)
{
    *esc = false;
    const char *run = p, *q = p;
    for (;;) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        while (end - q >= 8) {   /* 8 bytes at a time; the byte loop below finds the stop */
            uint64_t v;
            memcpy(&v, q, 8);
            unsigned k = fd_special8(v);
            q += k;
            if (k < 8) break;
        }
#endif
        while (q < end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20 && (unsigned char)*q < 0x80) q++;
        if (q >= end) return NULL;
        if (*q == '"') {
            if (*esc) fl_buf_add(tmp, run, (size_t)(q - run));
            return q + 1;
        }
        if (*q != '\\' || q + 1 >= end) return NULL;
        char c;
        switch (q[1]) {
        case '"': c = '"'; break;
        case '\\': c = '\\'; break;
        case '/': c = '/'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        default: return NULL;
        }
        *esc = true;
        fl_buf_add(tmp, run, (size_t)(q - run));
        fl_buf_addc(tmp, c);
        q += 2;
        run = q;
    }
}

/* A JSON number at p (strict grammar) into *slot as an integer (up to 18
 * digits) or a real; NULL to fall back. */
static const char *fd_num(const char *p, const char *end, fd_slot_t *slot)
{
    const char *q = p + (*p == '-');
    const char *d0 = q;
    while (q < end && *q >= '0' && *q <= '9') q++;
    size_t nd = (size_t)(q - d0);
    if (!nd || (nd > 1 && *d0 == '0')) return NULL;
    bool real = false;
    if (q < end && *q == '.') {
        real = true;
        const char *r = ++q;
        while (q < end && *q >= '0' && *q <= '9') q++;
        if (q == r) return NULL;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        real = true;
        q++;
        if (q < end && (*q == '+' || *q == '-')) q++;
        const char *r = q;
        while (q < end && *q >= '0' && *q <= '9') q++;
        if (q == r) return NULL;
    }
    if (!real) {
        if (nd > 18) return NULL;
        int64_t v = 0;
        for (const char *r = d0; r < q; r++) v = v * 10 + (*r - '0');
        slot->kind = FD_INT;
        slot->i = *p == '-' ? -v : v;
        return q;
    }
    char num[64];
    size_t len = (size_t)(q - p);
    if (len >= sizeof num) return NULL;
    memcpy(num, p, len);
    num[len] = 0;
    errno = 0;
    double d = strtod(num, NULL);
    if (errno == ERANGE || !isfinite(d)) return NULL;
    slot->kind = FD_REAL;
    slot->d = d;
    return q;
}

/* The column named k; hint (the column after the previous key's) is tried
 * first: producers mostly write the keys in the schema's order. */
static const fl_field_t *fd_column(const fl_field_t *root, const char *k, size_t n, bool ci, uint32_t hint,
                                   uint32_t *idx)
{
    if (hint < root->n_children) {
        const char *name = root->children[hint].name;
        if (!ci && !strncmp(name, k, n) && !name[n]) {
            *idx = hint;
            return &root->children[hint];
        }
    }
    for (uint32_t i = 0; i < root->n_children; i++) {
        const char *name = root->children[i].name;
        if (strlen(name) == n && (ci ? !strncasecmp(name, k, n) : !memcmp(name, k, n))) {
            *idx = i;
            return &root->children[i];
        }
    }
    return NULL;
}

bool fl_sink_direct_append(const fl_field_t *root, fl_vec_t *batch, const void *msg, size_t n, bool ci, fl_buf_t *tmp)
{
    if (!msg || !fl_sink_direct_usable(root)) return false;
    fd_slot_t slots[FL_SINK_DIRECT_MAX_COLUMNS];
    for (uint32_t i = 0; i < root->n_children; i++) slots[i].kind = FD_ABSENT;
    fl_buf_reset(tmp);
    const char *base = msg, *p = msg, *end = base + n;
    uint32_t hint = 0;
    p = fd_ws(p, end);
    if (p >= end || *p != '{') return false;
    p = fd_ws(p + 1, end);
    if (p < end && *p == '}') {
        p++;
    } else {
        for (;;) {
            if (p >= end || *p != '"') return false;
            bool esc;
            const char *k = p + 1, *q = fd_str(k, end, tmp, &esc);
            if (!q || esc) return false;   /* keys with escapes: the general path */
            uint32_t ci_idx;
            const fl_field_t *f = fd_column(root, k, (size_t)(q - 1 - k), ci, hint, &ci_idx);
            hint = ci_idx + 1;
            if (!f || slots[ci_idx].kind != FD_ABSENT) return false;   /* no column (drop/evolve), or twice */
            fd_slot_t *s = &slots[ci_idx];
            p = fd_ws(q, end);
            if (p >= end || *p != ':') return false;
            p = fd_ws(p + 1, end);
            if (p >= end) return false;
            char c = *p;
            if (c == '"') {
                size_t mark = tmp->len;
                if (!(q = fd_str(p + 1, end, tmp, &esc)) || f->kind != FL_TYPE_STRING) return false;
                s->kind = esc ? FD_TMP : FD_SPAN;
                s->off = esc ? mark : (size_t)(p + 1 - base);
                s->len = esc ? tmp->len - mark : (size_t)(q - 1 - (p + 1));
                p = q;
            } else if (c == '-' || (c >= '0' && c <= '9')) {
                if (!(p = fd_num(p, end, s))) return false;
                switch (f->kind) {
                case FL_TYPE_LONG: if (s->kind != FD_INT) return false; break;
                case FL_TYPE_INT:
                    if (s->kind != FD_INT || s->i < INT32_MIN || s->i > INT32_MAX) return false;
                    break;
                case FL_TYPE_FLOAT: case FL_TYPE_DOUBLE:
                    if (s->kind == FD_INT) {   /* as jansson's integer converted: exact up to 2^53 */
                        s->d = (double)s->i;
                        s->kind = FD_REAL;
                    }
                    break;
                default: return false;
                }
            } else if (c == 't' && end - p >= 4 && !memcmp(p, "true", 4)) {
                if (f->kind != FL_TYPE_BOOLEAN) return false;
                s->kind = FD_TRUE;
                p += 4;
            } else if (c == 'f' && end - p >= 5 && !memcmp(p, "false", 5)) {
                if (f->kind != FL_TYPE_BOOLEAN) return false;
                s->kind = FD_FALSE;
                p += 5;
            } else if (c == 'n' && end - p >= 4 && !memcmp(p, "null", 4)) {
                s->kind = FD_NULL;
                p += 4;
            } else {
                return false;   /* objects, arrays, anything else */
            }
            p = fd_ws(p, end);
            if (p >= end) return false;
            if (*p == ',') { p = fd_ws(p + 1, end); continue; }
            if (*p == '}') { p++; break; }
            return false;
        }
    }
    if (fd_ws(p, end) != end) return false;
    for (uint32_t i = 0; i < root->n_children; i++)
        if (slots[i].kind <= FD_NULL && root->children[i].required) return false;   /* the general path says why */
    /* the record is whole: append it */
    fl_vec_append_struct(batch);
    for (uint32_t i = 0; i < root->n_children; i++) {
        fl_vec_t *v = &batch->children[i];
        const fd_slot_t *s = &slots[i];
        switch (s->kind) {
        case FD_ABSENT: case FD_NULL: fl_vec_append_null(v); break;
        case FD_SPAN: fl_vec_append_bytes(v, base + s->off, s->len); break;
        case FD_TMP: fl_vec_append_bytes(v, tmp->ptr + s->off, s->len); break;
        case FD_TRUE: case FD_FALSE: fl_vec_append_bool(v, s->kind == FD_TRUE); break;
        case FD_INT:
            if (root->children[i].kind == FL_TYPE_INT) fl_vec_append_i32(v, (int32_t)s->i);
            else fl_vec_append_i64(v, s->i);
            break;
        case FD_REAL:
            if (root->children[i].kind == FL_TYPE_FLOAT) fl_vec_append_f32(v, (float)s->d);
            else fl_vec_append_f64(v, s->d);
            break;
        }
    }
    return true;
}
