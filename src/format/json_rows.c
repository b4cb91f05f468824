/* JSON -> column vectors (see json_rows.h). Each value is converted twice: a
 * checking pass over the whole tree that touches nothing, then the appending
 * pass, so a bad row never leaves the vectors misaligned. */
#include "format/json_rows.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fl_err_t bad(char *err, size_t errlen, const fl_field_t *f, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static fl_err_t bad(char *err, size_t errlen, const fl_field_t *f, const char *fmt, ...)
{
    if (err && errlen) {
        int n = snprintf(err, errlen, "%s: ", f->name ? f->name : "?");
        if (n < 0) n = 0;
        if ((size_t)n < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return FL_ERR_INVALID;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static bool digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i])) return false;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return true;
}

static bool parse_date(const char **p, int64_t *days)
{
    int y, m, d;
    const char *s = *p;
    bool neg = *s == '-';
    if (neg || *s == '+') s++;
    if (!digits(&s, 4, &y) || *s++ != '-' || !digits(&s, 2, &m) || *s++ != '-' || !digits(&s, 2, &d)) return false;
    if (m < 1 || m > 12 || d < 1 || d > 31) return false;
    *days = days_from_civil(neg ? -y : y, (unsigned)m, (unsigned)d);
    *p = s;
    return true;
}

/* HH:MM[:SS[.fffffffff]] -> nanoseconds */
static bool parse_time(const char **p, int64_t *nanos)
{
    int h, mi, se = 0;
    const char *s = *p;
    if (!digits(&s, 2, &h) || *s++ != ':' || !digits(&s, 2, &mi)) return false;
    int64_t frac = 0;
    if (*s == ':') {
        s++;
        if (!digits(&s, 2, &se)) return false;
        if (*s == '.') {
            s++;
            int n = 0;
            while (isdigit((unsigned char)*s)) {
                if (n < 9) frac = frac * 10 + (*s - '0');
                n++;
                s++;
            }
            if (!n) return false;
            for (; n < 9; n++) frac *= 10;
        }
    }
    if (h > 23 || mi > 59 || se > 59) return false;
    *nanos = ((int64_t)h * 3600 + mi * 60 + se) * 1000000000LL + frac;
    *p = s;
    return true;
}

static bool parse_timestamp(const char *s, bool tz, int64_t *nanos)
{
    int64_t days, t;
    if (!parse_date(&s, &days) || (*s != 'T' && *s != ' ')) return false;
    s++;
    if (!parse_time(&s, &t)) return false;
    int64_t off = 0;
    if (*s == 'Z' || *s == 'z') {
        s++;
    } else if (*s == '+' || *s == '-') {
        int sign = *s++ == '-' ? -1 : 1, oh, om;
        if (!digits(&s, 2, &oh)) return false;
        if (*s == ':') s++;
        if (!digits(&s, 2, &om)) return false;
        off = sign * ((int64_t)oh * 3600 + om * 60) * 1000000000LL;
    } else if (tz) {
        /* a timestamptz without offset is taken as UTC */
    }
    if (*s) return false;
    if (!tz && off) return false;
    *nanos = days * 86400000000000LL + t - off;
    return true;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool parse_decimal(const char *s, int32_t precision, int32_t scale, __int128 *out)
{
    bool neg = false;
    if (*s == '-' || *s == '+') neg = *s++ == '-';
    __int128 v = 0;
    int nd = 0, frac = 0;
    bool dot = false, any = false;
    for (; *s; s++) {
        if (*s == '.') {
            if (dot) return false;
            dot = true;
            continue;
        }
        if (!isdigit((unsigned char)*s)) return false;
        any = true;
        if (dot) frac++;
        if (frac > scale) return false;
        if (nd || *s != '0') nd++;
        if (nd > 38) return false;
        v = v * 10 + (*s - '0');
    }
    if (!any) return false;
    for (; frac < scale; frac++) {
        v *= 10;
        if (v) nd++;
    }
    __int128 max = 1;
    for (int i = 0; i < precision; i++) max *= 10;
    if (v >= max) return false;
    *out = neg ? -v : v;
    return true;
}

static fl_err_t conv(fl_vec_t *v, const fl_field_t *f, json_t *j, bool apply, char *err, size_t errlen);

static fl_err_t conv_integer(fl_vec_t *v, const fl_field_t *f, json_t *j, bool apply, int64_t unit_per_sec,
                             char *err, size_t errlen)
{
    int64_t x;
    if (json_is_integer(j)) {
        x = (int64_t)json_integer_value(j);
    } else if (json_is_string(j) && f->kind != FL_TYPE_INT && f->kind != FL_TYPE_LONG) {
        const char *s = json_string_value(j);
        int64_t n;
        if (f->kind == FL_TYPE_DATE) {
            if (!parse_date(&s, &n) || *s) return bad(err, errlen, f, "not a date: \"%s\"", json_string_value(j));
            x = n;
        } else if (f->kind == FL_TYPE_TIME) {
            if (!parse_time(&s, &n) || *s) return bad(err, errlen, f, "not a time: \"%s\"", json_string_value(j));
            x = n / 1000;
        } else {
            bool tz = f->kind == FL_TYPE_TIMESTAMPTZ || f->kind == FL_TYPE_TIMESTAMPTZ_NS;
            if (!parse_timestamp(s, tz, &n)) return bad(err, errlen, f, "not a timestamp: \"%s\"", s);
            x = unit_per_sec == 1000000 ? (n >= 0 ? n / 1000 : -((-n + 999) / 1000)) : n;
        }
    } else {
        return bad(err, errlen, f, "expected %s", fl_type_name(f->kind));
    }
    if ((f->kind == FL_TYPE_INT || f->kind == FL_TYPE_DATE) && (x < INT32_MIN || x > INT32_MAX))
        return bad(err, errlen, f, "%lld is out of range for %s", (long long)x, fl_type_name(f->kind));
    if (f->kind == FL_TYPE_TIME && (x < 0 || x >= 86400000000LL)) return bad(err, errlen, f, "time out of range");
    if (apply) {
        if (f->kind == FL_TYPE_INT || f->kind == FL_TYPE_DATE) fl_vec_append_i32(v, (int32_t)x);
        else fl_vec_append_i64(v, x);
    }
    return FL_OK;
}

static fl_err_t conv(fl_vec_t *v, const fl_field_t *f, json_t *j, bool apply, char *err, size_t errlen)
{
    if (!j || json_is_null(j)) {
        if (f->required) return bad(err, errlen, f, "required field is null or missing");
        if (apply) fl_vec_append_null(v);
        return FL_OK;
    }
    fl_err_t e;
    switch (f->kind) {
    case FL_TYPE_BOOLEAN:
        if (!json_is_boolean(j)) return bad(err, errlen, f, "expected a boolean");
        if (apply) fl_vec_append_bool(v, json_is_true(j));
        return FL_OK;
    case FL_TYPE_INT: case FL_TYPE_LONG: case FL_TYPE_DATE: case FL_TYPE_TIME:
    case FL_TYPE_TIMESTAMP: case FL_TYPE_TIMESTAMPTZ:
        return conv_integer(v, f, j, apply, 1000000, err, errlen);
    case FL_TYPE_TIMESTAMP_NS: case FL_TYPE_TIMESTAMPTZ_NS:
        return conv_integer(v, f, j, apply, 1000000000, err, errlen);
    case FL_TYPE_FLOAT: case FL_TYPE_DOUBLE: {
        double d;
        if (json_is_number(j)) d = json_number_value(j);
        else if (json_is_string(j) && !strcmp(json_string_value(j), "NaN")) d = NAN;
        else if (json_is_string(j) && !strcmp(json_string_value(j), "Infinity")) d = INFINITY;
        else if (json_is_string(j) && !strcmp(json_string_value(j), "-Infinity")) d = -INFINITY;
        else return bad(err, errlen, f, "expected a number");
        if (apply) {
            if (f->kind == FL_TYPE_FLOAT) fl_vec_append_f32(v, (float)d);
            else fl_vec_append_f64(v, d);
        }
        return FL_OK;
    }
    case FL_TYPE_DECIMAL: {
        char tmp[64];
        const char *s;
        if (json_is_string(j)) s = json_string_value(j);
        else if (json_is_integer(j)) { snprintf(tmp, sizeof tmp, "%lld", (long long)json_integer_value(j)); s = tmp; }
        else if (json_is_real(j)) { snprintf(tmp, sizeof tmp, "%.*f", (int)f->scale, json_real_value(j)); s = tmp; }
        else return bad(err, errlen, f, "expected a decimal");
        __int128 x;
        if (!parse_decimal(s, f->precision, f->scale, &x))
            return bad(err, errlen, f, "\"%s\" does not fit decimal(%d,%d)", s, (int)f->precision, (int)f->scale);
        if (apply) fl_vec_append_i128(v, x);
        return FL_OK;
    }
    case FL_TYPE_STRING:
        if (!json_is_string(j)) return bad(err, errlen, f, "expected a string");
        if (apply) fl_vec_append_bytes(v, json_string_value(j), json_string_length(j));
        return FL_OK;
    case FL_TYPE_UUID: {
        if (!json_is_string(j)) return bad(err, errlen, f, "expected a uuid string");
        const char *s = json_string_value(j);
        unsigned char u[16];
        size_t k = 0;
        for (size_t i = 0; s[i] && k < 32; i++) {
            if (s[i] == '-' && (i == 8 || i == 13 || i == 18 || i == 23)) continue;
            int h = hexval(s[i]);
            if (h < 0) return bad(err, errlen, f, "not a uuid: \"%s\"", s);
            if (k % 2 == 0) u[k / 2] = (unsigned char)(h << 4);
            else u[k / 2] |= (unsigned char)h;
            k++;
        }
        if (k != 32 || strlen(s) != 36) return bad(err, errlen, f, "not a uuid: \"%s\"", s);
        if (apply) fl_vec_append_bytes(v, u, 16);
        return FL_OK;
    }
    case FL_TYPE_FIXED: case FL_TYPE_BINARY: {
        if (!json_is_string(j)) return bad(err, errlen, f, "expected a hex string");
        const char *s = json_string_value(j);
        size_t n = json_string_length(j);
        if (n % 2) return bad(err, errlen, f, "odd-length hex string");
        if (f->kind == FL_TYPE_FIXED && n / 2 != (size_t)f->length)
            return bad(err, errlen, f, "expected %d bytes, got %zu", (int)f->length, n / 2);
        for (size_t i = 0; i < n; i++)
            if (hexval(s[i]) < 0) return bad(err, errlen, f, "not a hex string");
        if (apply) {
            unsigned char stackbuf[256];
            unsigned char *b = n / 2 <= sizeof stackbuf ? stackbuf : malloc(n / 2);
            if (!b) return FL_ERR_NOMEM;
            for (size_t i = 0; i < n / 2; i++) b[i] = (unsigned char)(hexval(s[2 * i]) << 4 | hexval(s[2 * i + 1]));
            fl_vec_append_bytes(v, b, n / 2);
            if (b != stackbuf) free(b);
        }
        return FL_OK;
    }
    case FL_TYPE_STRUCT:
        if (!json_is_object(j)) return bad(err, errlen, f, "expected an object");
        if (apply) fl_vec_append_struct(v);
        for (uint32_t c = 0; c < f->n_children; c++)
            if ((e = conv(apply ? &v->children[c] : NULL, &f->children[c], json_object_get(j, f->children[c].name),
                          apply, err, errlen)))
                return e;
        return FL_OK;
    case FL_TYPE_LIST: {
        if (!json_is_array(j)) return bad(err, errlen, f, "expected an array");
        size_t i;
        json_t *x;
        json_array_foreach(j, i, x)
            if ((e = conv(apply ? &v->children[0] : NULL, &f->children[0], x, apply, err, errlen))) return e;
        if (apply) fl_vec_end_list(v);
        return FL_OK;
    }
    case FL_TYPE_MAP: {
        fl_vec_t *kv = apply ? &v->children[0] : NULL, *vv = apply ? &v->children[1] : NULL;
        const fl_field_t *kf = &f->children[0], *vf = &f->children[1];
        if (json_is_object(j)) {
            if (kf->kind != FL_TYPE_STRING) return bad(err, errlen, f, "map keys are not strings: use [{\"key\":..,\"value\":..}]");
            const char *k;
            json_t *x;
            json_object_foreach(j, k, x) {
                json_t *ks = json_string(k);
                e = conv(kv, kf, ks, apply, err, errlen);
                json_decref(ks);
                if (e || (e = conv(vv, vf, x, apply, err, errlen))) return e;
            }
        } else if (json_is_array(j)) {
            size_t i;
            json_t *x;
            json_array_foreach(j, i, x) {
                if (!json_is_object(x)) return bad(err, errlen, f, "map entries must be {\"key\",\"value\"} objects");
                json_t *k = json_object_get(x, "key");
                if (!k || json_is_null(k)) return bad(err, errlen, f, "map key is null");
                if ((e = conv(kv, kf, k, apply, err, errlen)) ||
                    (e = conv(vv, vf, json_object_get(x, "value"), apply, err, errlen)))
                    return e;
            }
        } else {
            return bad(err, errlen, f, "expected an object or an array of entries");
        }
        if (apply) fl_vec_end_list(v);
        return FL_OK;
    }
    }
    return bad(err, errlen, f, "unsupported type");
}

fl_err_t fl_vec_append_json(fl_vec_t *v, json_t *j, char *err, size_t errlen)
{
    fl_err_t e = conv(NULL, v->field, j, false, err, errlen);
    if (e) return e;
    return conv(v, v->field, j, true, err, errlen);
}
