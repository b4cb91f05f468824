/* Iceberg partition transforms: parsing, murmur3 bucket hashing per the
 * spec's Appendix B, truncation, the date/time transforms (floored toward
 * negative infinity for pre-1970 values), and Iceberg Java's human strings
 * and URLEncoder escaping for partition paths.
 *
 * Calendar arithmetic uses the proleptic Gregorian days<->civil conversion
 * (H. Hinnant's algorithm), so no libc time zone state is touched. Decimal
 * arithmetic uses __int128, enough for decimal(38). */
#include "iceberg/transform.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define US_PER_S 1000000LL
#define US_PER_HOUR (3600LL * US_PER_S)
#define US_PER_DAY (24LL * US_PER_HOUR)

/* ---- parsing ---- */

static const struct { const char *name; fl_ice_tkind_t kind; } plain_names[] = {
    { "identity", FL_ICE_T_IDENTITY }, { "year", FL_ICE_T_YEAR }, { "month", FL_ICE_T_MONTH },
    { "day", FL_ICE_T_DAY }, { "hour", FL_ICE_T_HOUR }, { "void", FL_ICE_T_VOID },
};

static bool prefix_ieq(fl_slice_t s, const char *p)
{
    size_t n = strlen(p);
    return s.len >= n && strncasecmp(s.ptr, p, n) == 0;
}

/* "[digits]" at the end of s after skip bytes; 1..INT32_MAX. */
static fl_err_t parse_param(fl_slice_t s, size_t skip, int32_t *out)
{
    const char *p = s.ptr + skip, *end = s.ptr + s.len;
    int64_t v = 0;
    if (p >= end || *p++ != '[' || end - p < 2 || end[-1] != ']')
        return FL_ERR_INVALID;
    for (end--; p < end; p++) {
        if (*p < '0' || *p > '9')
            return FL_ERR_INVALID;
        v = v * 10 + (*p - '0');
        if (v > INT32_MAX)
            return FL_ERR_INVALID;
    }
    if (v <= 0)
        return FL_ERR_INVALID;
    *out = (int32_t)v;
    return FL_OK;
}

fl_err_t fl_ice_transform_parse(fl_slice_t s, fl_ice_transform_t *out)
{
    for (size_t i = 0; i < sizeof plain_names / sizeof plain_names[0]; i++)
        if (fl_slice_ieq(s, plain_names[i].name)) {
            *out = (fl_ice_transform_t){ plain_names[i].kind, 0 };
            return FL_OK;
        }
    if (prefix_ieq(s, "bucket")) {
        out->kind = FL_ICE_T_BUCKET;
        return parse_param(s, 6, &out->param);
    }
    if (prefix_ieq(s, "truncate")) {
        out->kind = FL_ICE_T_TRUNCATE;
        return parse_param(s, 8, &out->param);
    }
    return FL_ERR_INVALID;
}

size_t fl_ice_transform_str(const fl_ice_transform_t *t, char *out, size_t cap)
{
    static const char *names[] = { "identity", "bucket", "truncate", "year",
                                   "month", "day", "hour", "void" };
    int n;
    if (t->kind == FL_ICE_T_BUCKET || t->kind == FL_ICE_T_TRUNCATE)
        n = snprintf(out, cap, "%s[%d]", names[t->kind], (int)t->param);
    else
        n = snprintf(out, cap, "%s", names[t->kind]);
    return n < 0 ? 0 : (size_t)n;
}

/* ---- hashing ---- */

static uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

int32_t fl_ice_murmur3_32(const void *data, size_t n, uint32_t seed)
{
    const unsigned char *p = data;
    const uint32_t c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
    uint32_t h = seed, k;
    size_t i;
    for (i = 0; i + 4 <= n; i += 4) {
        k = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 |
            (uint32_t)p[i + 3] << 24;
        k *= c1; k = rotl32(k, 15); k *= c2;
        h ^= k; h = rotl32(h, 13); h = h * 5 + 0xe6546b64u;
    }
    k = 0;
    switch (n & 3) {
    case 3: k ^= (uint32_t)p[i + 2] << 16; /* fall through */
    case 2: k ^= (uint32_t)p[i + 1] << 8;  /* fall through */
    case 1: k ^= p[i];
        k *= c1; k = rotl32(k, 15); k *= c2; h ^= k;
    }
    h ^= (uint32_t)n;
    h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
    return (int32_t)h;
}

static int32_t hash_long(int64_t v)
{
    unsigned char b[8];
    uint64_t u = (uint64_t)v;
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(u >> (8 * i));
    return fl_ice_murmur3_32(b, 8, 0);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static fl_err_t dec_get(const fl_ice_value_t *v, __int128 *out)
{
    uint8_t n = v->u.dec.len;
    if (n == 0 || n > 16)
        return FL_ERR_INVALID;
    unsigned __int128 u = (v->u.dec.unscaled[0] & 0x80) ? ~(unsigned __int128)0 : 0;
    for (uint8_t i = 0; i < n; i++)
        u = (u << 8) | v->u.dec.unscaled[i];
    *out = (__int128)u;
    return FL_OK;
}

/* Minimal two's-complement big-endian bytes (Java BigInteger.toByteArray). */
static void dec_set(fl_ice_value_t *v, __int128 x)
{
    unsigned char b[16];
    unsigned __int128 u = (unsigned __int128)x;
    for (int i = 15; i >= 0; i--, u >>= 8)
        b[i] = (unsigned char)u;
    int s = 0;
    while (s < 15 && ((b[s] == 0x00 && !(b[s + 1] & 0x80)) ||
                      (b[s] == 0xff && (b[s + 1] & 0x80))))
        s++;
    v->u.dec.len = (uint8_t)(16 - s);
    memcpy(v->u.dec.unscaled, b + s, (size_t)(16 - s));
}

static int32_t hash_double(double d)
{
    uint64_t bits;
    if (isnan(d))
        bits = 0x7ff8000000000000ull;
    else {
        if (d == 0.0)
            d = 0.0; /* -0.0 -> +0.0 */
        memcpy(&bits, &d, 8);
    }
    return hash_long((int64_t)bits);
}

fl_err_t fl_ice_hash(const fl_ice_value_t *v, int32_t *out)
{
    switch (v->kind) {
    case FL_ICE_BOOLEAN: *out = hash_long(v->u.b ? 1 : 0); return FL_OK;
    case FL_ICE_INT:
    case FL_ICE_DATE: *out = hash_long(v->u.i); return FL_OK;
    case FL_ICE_LONG:
    case FL_ICE_TIME:
    case FL_ICE_TIMESTAMP:
    case FL_ICE_TIMESTAMPTZ: *out = hash_long(v->u.l); return FL_OK;
    case FL_ICE_TIMESTAMP_NS:
    case FL_ICE_TIMESTAMPTZ_NS: *out = hash_long(floor_div(v->u.l, 1000)); return FL_OK;
    case FL_ICE_FLOAT: *out = hash_double((double)v->u.f); return FL_OK;
    case FL_ICE_DOUBLE: *out = hash_double(v->u.d); return FL_OK;
    case FL_ICE_DECIMAL: {
        __int128 x;
        fl_ice_value_t m;
        if (dec_get(v, &x) != FL_OK)
            return FL_ERR_INVALID;
        dec_set(&m, x);
        *out = fl_ice_murmur3_32(m.u.dec.unscaled, m.u.dec.len, 0);
        return FL_OK;
    }
    case FL_ICE_UUID: *out = fl_ice_murmur3_32(v->u.uuid, 16, 0); return FL_OK;
    case FL_ICE_STRING:
    case FL_ICE_FIXED:
    case FL_ICE_BINARY:
        *out = fl_ice_murmur3_32(v->u.bytes.ptr, v->u.bytes.len, 0);
        return FL_OK;
    case FL_ICE_NULL: break;
    }
    return FL_ERR_INVALID;
}

/* ---- types ---- */

fl_err_t fl_ice_transform_result_kind(const fl_ice_transform_t *t, fl_ice_kind_t src,
                                      fl_ice_kind_t *out)
{
    bool is_ts = src == FL_ICE_TIMESTAMP || src == FL_ICE_TIMESTAMPTZ ||
                 src == FL_ICE_TIMESTAMP_NS || src == FL_ICE_TIMESTAMPTZ_NS;
    bool ok;
    fl_ice_kind_t r = FL_ICE_INT;
    switch (t->kind) {
    case FL_ICE_T_IDENTITY: ok = src != FL_ICE_NULL; r = src; break;
    case FL_ICE_T_VOID: ok = true; r = src == FL_ICE_NULL ? FL_ICE_INT : src; break;
    case FL_ICE_T_BUCKET:
        ok = src != FL_ICE_NULL && src != FL_ICE_BOOLEAN && src != FL_ICE_FLOAT &&
             src != FL_ICE_DOUBLE;
        break;
    case FL_ICE_T_TRUNCATE:
        ok = src == FL_ICE_INT || src == FL_ICE_LONG || src == FL_ICE_DECIMAL ||
             src == FL_ICE_STRING || src == FL_ICE_BINARY;
        r = src;
        break;
    case FL_ICE_T_YEAR:
    case FL_ICE_T_MONTH: ok = src == FL_ICE_DATE || is_ts; break;
    case FL_ICE_T_DAY: ok = src == FL_ICE_DATE || is_ts; r = FL_ICE_DATE; break;
    case FL_ICE_T_HOUR: ok = is_ts; break;
    default: ok = false;
    }
    if (!ok)
        return FL_ERR_INVALID;
    *out = r;
    return FL_OK;
}

/* ---- calendar ---- */

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* Microseconds since epoch of a timestamp-ish value (ns floored to us). */
static int64_t ts_micros(const fl_ice_value_t *v)
{
    if (v->kind == FL_ICE_TIMESTAMP_NS || v->kind == FL_ICE_TIMESTAMPTZ_NS)
        return floor_div(v->u.l, 1000);
    return v->u.l;
}

static int64_t value_days(const fl_ice_value_t *v)
{
    return v->kind == FL_ICE_DATE ? v->u.i : floor_div(ts_micros(v), US_PER_DAY);
}

/* ---- apply ---- */

/* Byte length of the first w code points of a UTF-8 string. */
static size_t utf8_prefix(const unsigned char *p, size_t n, int32_t w)
{
    size_t i = 0;
    for (int32_t c = 0; i < n && c < w; c++) {
        i++;
        while (i < n && (p[i] & 0xc0) == 0x80)
            i++;
    }
    return i;
}

fl_err_t fl_ice_transform_apply(const fl_ice_transform_t *t, const fl_ice_value_t *in,
                                fl_ice_value_t *out)
{
    fl_ice_kind_t rk;
    if (in->kind == FL_ICE_NULL || t->kind == FL_ICE_T_VOID) {
        if (in->kind != FL_ICE_NULL && fl_ice_transform_result_kind(t, in->kind, &rk) != FL_OK)
            return FL_ERR_INVALID;
        *out = (fl_ice_value_t){ .kind = FL_ICE_NULL };
        return FL_OK;
    }
    if (fl_ice_transform_result_kind(t, in->kind, &rk) != FL_OK)
        return FL_ERR_INVALID;
    int64_t w = t->param;
    switch (t->kind) {
    case FL_ICE_T_IDENTITY:
        *out = *in;
        return FL_OK;
    case FL_ICE_T_BUCKET: {
        int32_t h;
        if (w <= 0 || fl_ice_hash(in, &h) != FL_OK)
            return FL_ERR_INVALID;
        *out = (fl_ice_value_t){ .kind = FL_ICE_INT, .u.i = (int32_t)((h & INT32_MAX) % w) };
        return FL_OK;
    }
    case FL_ICE_T_TRUNCATE:
        if (w <= 0)
            return FL_ERR_INVALID;
        *out = *in;
        switch (in->kind) {
        case FL_ICE_INT: /* unsigned arithmetic: wraps like Java at INT32_MIN */
            out->u.i = (int32_t)((uint32_t)in->u.i - (uint32_t)(((in->u.i % w) + w) % w));
            return FL_OK;
        case FL_ICE_LONG:
            out->u.l = (int64_t)((uint64_t)in->u.l - (uint64_t)(((in->u.l % w) + w) % w));
            return FL_OK;
        case FL_ICE_DECIMAL: {
            __int128 x;
            if (dec_get(in, &x) != FL_OK)
                return FL_ERR_INVALID;
            __int128 r = ((x % w) + w) % w;
            if (x < -((__int128)1 << 126))
                return FL_ERR_INVALID; /* far outside decimal(38) */
            dec_set(out, x - r);
            return FL_OK;
        }
        case FL_ICE_STRING:
            out->u.bytes.len = utf8_prefix(in->u.bytes.ptr, in->u.bytes.len, (int32_t)w);
            return FL_OK;
        case FL_ICE_BINARY:
            if (out->u.bytes.len > (size_t)w)
                out->u.bytes.len = (size_t)w;
            return FL_OK;
        default: return FL_ERR_INVALID;
        }
    case FL_ICE_T_YEAR:
    case FL_ICE_T_MONTH: {
        int64_t y;
        int m, d;
        civil_from_days(value_days(in), &y, &m, &d);
        int64_t r = t->kind == FL_ICE_T_YEAR ? y - 1970 : (y - 1970) * 12 + (m - 1);
        *out = (fl_ice_value_t){ .kind = FL_ICE_INT, .u.i = (int32_t)r };
        return FL_OK;
    }
    case FL_ICE_T_DAY:
        *out = (fl_ice_value_t){ .kind = FL_ICE_DATE, .u.i = (int32_t)value_days(in) };
        return FL_OK;
    case FL_ICE_T_HOUR:
        *out = (fl_ice_value_t){ .kind = FL_ICE_INT,
                                 .u.i = (int32_t)floor_div(ts_micros(in), US_PER_HOUR) };
        return FL_OK;
    default:
        return FL_ERR_INVALID;
    }
}

/* ---- human strings ---- */

static fl_err_t human_date(int64_t days, fl_buf_t *out)
{
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    return fl_buf_printf(out, "%04lld-%02d-%02d", (long long)y, m, d);
}

/* Fraction of a second as Java ISO_LOCAL_TIME prints it: trailing zeros dropped. */
static fl_err_t human_fraction(int64_t nanos, fl_buf_t *out)
{
    if (nanos == 0)
        return FL_OK;
    char f[16];
    snprintf(f, sizeof f, "%09lld", (long long)nanos);
    size_t n = 9;
    while (f[n - 1] == '0')
        n--;
    f[n] = 0;
    return fl_buf_printf(out, ".%s", f);
}

/* ISO_LOCAL_DATE_TIME of nanoseconds since epoch, plus "+00:00" when zoned. */
static fl_err_t human_timestamp(int64_t sec, int64_t nanos, bool zoned, fl_buf_t *out)
{
    int64_t days = floor_div(sec, 86400), s = sec - days * 86400;
    fl_err_t e = human_date(days, out);
    if (!e)
        e = fl_buf_printf(out, "T%02d:%02d:%02d", (int)(s / 3600), (int)(s / 60 % 60),
                          (int)(s % 60));
    if (!e)
        e = human_fraction(nanos, out);
    if (!e && zoned)
        e = fl_buf_adds(out, "+00:00");
    return e;
}

/* java.time.LocalTime.toString: HH:mm, then :ss and a 3/6/9-digit fraction
 * when non-zero. */
static fl_err_t human_time(int64_t us, fl_buf_t *out)
{
    int64_t s = floor_div(us, US_PER_S), frac = us - s * US_PER_S;
    fl_err_t e = fl_buf_printf(out, "%02d:%02d", (int)(s / 3600 % 24), (int)(s / 60 % 60));
    if (e || (s % 60 == 0 && frac == 0))
        return e;
    e = fl_buf_printf(out, ":%02d", (int)(s % 60));
    if (!e && frac)
        e = frac % 1000 ? fl_buf_printf(out, ".%06lld", (long long)frac)
                        : fl_buf_printf(out, ".%03lld", (long long)(frac / 1000));
    return e;
}

/* java.math.BigDecimal.toString for a non-negative scale. */
static fl_err_t human_decimal(const fl_ice_value_t *v, fl_buf_t *out)
{
    __int128 x;
    char digits[48];
    int n = 0, scale = v->u.dec.scale;
    if (dec_get(v, &x) != FL_OK)
        return FL_ERR_INVALID;
    unsigned __int128 u = x < 0 ? -(unsigned __int128)x : (unsigned __int128)x;
    do {
        digits[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    fl_err_t e = x < 0 ? fl_buf_addc(out, '-') : FL_OK;
    int adjusted = n - 1 - scale;
    if (scale < 0 || adjusted < -6) { /* scientific: d.dddE-n */
        for (int i = n - 1; !e && i >= 0; i--) {
            e = fl_buf_addc(out, digits[i]);
            if (!e && i == n - 1 && n > 1)
                e = fl_buf_addc(out, '.');
        }
        return e ? e : fl_buf_printf(out, "E%s%d", adjusted >= 0 ? "+" : "", adjusted);
    }
    if (scale >= n) {
        e = e ? e : fl_buf_adds(out, "0.");
        for (int i = 0; !e && i < scale - n; i++)
            e = fl_buf_addc(out, '0');
    }
    for (int i = n - 1; !e && i >= 0; i--) {
        e = fl_buf_addc(out, digits[i]);
        if (!e && i == scale && scale > 0 && scale < n)
            e = fl_buf_addc(out, '.');
    }
    return e;
}

/* Java Float/Double.toString: shortest round-trip digits, plain for
 * 1e-3 <= |v| < 1e7 (at least one fraction digit), else d.dddEn. */
static fl_err_t human_double(double d, bool is_float, fl_buf_t *out)
{
    if (isnan(d))
        return fl_buf_adds(out, "NaN");
    if (isinf(d))
        return fl_buf_adds(out, d < 0 ? "-Infinity" : "Infinity");
    if (d == 0)
        return fl_buf_adds(out, signbit(d) ? "-0.0" : "0.0");
    char s[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(s, sizeof s, "%.*e", p - 1, d);
        double back = strtod(s, NULL);
        if (is_float ? (float)back == (float)d : back == d)
            break;
    }
    /* s = [-]D[.DDD]e[+-]XX */
    char mant[24];
    int nm = 0, ex = atoi(strchr(s, 'e') + 1);
    for (const char *p = s; *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            mant[nm++] = *p;
    while (nm > 1 && mant[nm - 1] == '0')
        nm--;
    mant[nm] = 0;
    fl_err_t e = d < 0 ? fl_buf_addc(out, '-') : FL_OK;
    double a = fabs(d);
    if (a >= 1e-3 && a < 1e7) {
        if (ex < 0) {
            e = e ? e : fl_buf_adds(out, "0.");
            for (int i = 0; !e && i < -ex - 1; i++)
                e = fl_buf_addc(out, '0');
            return e ? e : fl_buf_adds(out, mant);
        }
        for (int i = 0; !e && i <= ex; i++)
            e = fl_buf_addc(out, i < nm ? mant[i] : '0');
        e = e ? e : fl_buf_addc(out, '.');
        if (nm > ex + 1)
            return e ? e : fl_buf_adds(out, mant + ex + 1);
        return e ? e : fl_buf_addc(out, '0');
    }
    if (!e)
        e = fl_buf_printf(out, "%c.%s", mant[0], nm > 1 ? mant + 1 : "0");
    return e ? e : fl_buf_printf(out, "E%d", ex);
}

static fl_err_t human_value(const fl_ice_value_t *v, fl_buf_t *out)
{
    switch (v->kind) {
    case FL_ICE_NULL: return fl_buf_adds(out, "null");
    case FL_ICE_BOOLEAN: return fl_buf_adds(out, v->u.b ? "true" : "false");
    case FL_ICE_INT: return fl_buf_printf(out, "%d", (int)v->u.i);
    case FL_ICE_LONG: return fl_buf_printf(out, "%lld", (long long)v->u.l);
    case FL_ICE_FLOAT: return human_double((double)v->u.f, true, out);
    case FL_ICE_DOUBLE: return human_double(v->u.d, false, out);
    case FL_ICE_DECIMAL: return human_decimal(v, out);
    case FL_ICE_DATE: return human_date(v->u.i, out);
    case FL_ICE_TIME: return human_time(v->u.l, out);
    case FL_ICE_TIMESTAMP:
    case FL_ICE_TIMESTAMPTZ: {
        int64_t s = floor_div(v->u.l, US_PER_S);
        return human_timestamp(s, (v->u.l - s * US_PER_S) * 1000,
                               v->kind == FL_ICE_TIMESTAMPTZ, out);
    }
    case FL_ICE_TIMESTAMP_NS:
    case FL_ICE_TIMESTAMPTZ_NS: {
        int64_t s = floor_div(v->u.l, 1000000000LL);
        return human_timestamp(s, v->u.l - s * 1000000000LL,
                               v->kind == FL_ICE_TIMESTAMPTZ_NS, out);
    }
    case FL_ICE_STRING: return fl_buf_add(out, v->u.bytes.ptr, v->u.bytes.len);
    case FL_ICE_UUID: {
        const unsigned char *u = v->u.uuid;
        return fl_buf_printf(out,
            "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
            u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
            u[12], u[13], u[14], u[15]);
    }
    case FL_ICE_FIXED:
    case FL_ICE_BINARY: {
        size_t n = v->u.bytes.len;
        fl_err_t e = fl_buf_reserve(out, 4 * ((n + 2) / 3)); /* +1 for NUL inside */
        if (e)
            return e;
        out->len += fl_base64(v->u.bytes.ptr, n, out->ptr + out->len);
        out->ptr[out->len] = 0;
        return FL_OK;
    }
    }
    return FL_ERR_INVALID;
}

fl_err_t fl_ice_human_string(const fl_ice_transform_t *t, const fl_ice_value_t *v,
                             fl_buf_t *out)
{
    if (v->kind == FL_ICE_NULL)
        return fl_buf_adds(out, "null");
    if (v->kind == FL_ICE_INT || v->kind == FL_ICE_DATE) {
        int64_t x = v->u.i;
        switch (t->kind) {
        case FL_ICE_T_YEAR: return fl_buf_printf(out, "%04lld", (long long)(1970 + x));
        case FL_ICE_T_MONTH:
            return fl_buf_printf(out, "%04lld-%02d", (long long)(1970 + floor_div(x, 12)),
                                 (int)(1 + (x - floor_div(x, 12) * 12)));
        case FL_ICE_T_DAY: return human_date(x, out);
        case FL_ICE_T_HOUR: {
            int64_t days = floor_div(x, 24);
            fl_err_t e = human_date(days, out);
            return e ? e : fl_buf_printf(out, "-%02d", (int)(x - days * 24));
        }
        default: break;
        }
    }
    return human_value(v, out);
}

/* java.net.URLEncoder.encode(s, UTF_8). */
static fl_err_t url_escape(const char *s, size_t n, fl_buf_t *out)
{
    static const char hex[] = "0123456789ABCDEF";
    fl_err_t e = FL_OK;
    for (size_t i = 0; !e && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '.' || c == '-' || c == '*' || c == '_')
            e = fl_buf_addc(out, (char)c);
        else if (c == ' ')
            e = fl_buf_addc(out, '+');
        else {
            char esc[3] = { '%', hex[c >> 4], hex[c & 15] };
            e = fl_buf_add(out, esc, 3);
        }
    }
    return e;
}

fl_err_t fl_ice_partition_path_append(fl_buf_t *out, const char *name,
                                      const fl_ice_transform_t *t, const fl_ice_value_t *v)
{
    fl_buf_t h;
    fl_buf_init(&h, 0);
    fl_err_t e = fl_ice_human_string(t, v, &h);
    if (e)
        goto out;
    if ((e = url_escape(name, strlen(name), out)) || (e = fl_buf_addc(out, '=')))
        goto out;
    e = url_escape(h.ptr ? h.ptr : "", h.len, out);
out:
    fl_buf_free(&h);
    return e;
}
