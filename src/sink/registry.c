/* Schema registry client and Avro datum decoding (see registry.h). */
#include "sink/registry.h"
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/buf.h"
#include "base/limits.h"
#include "base/mem.h"
#include "base/time.h"
#include "net/httpc.h"
#include "sink/convert.h"

#define TS_LOGICAL "org.apache.kafka.connect.data.Timestamp"
#define DATE_LOGICAL "org.apache.kafka.connect.data.Date"
#define TIME_LOGICAL "org.apache.kafka.connect.data.Time"
#define DECIMAL_LOGICAL "org.apache.kafka.connect.data.Decimal"
#define UNION_NAME "io.confluent.connect.avro.Union"

typedef struct entry {
    int32_t id;
    fl_avro_schema_t plan;
    int32_t root;
    json_t *connect;
} entry_t;

struct fl_sink_registry {
    char **urls;
    size_t n_urls;
    char *auth;              /* "Basic ..." or NULL */
    fl_httpc_t *http;
    entry_t *e;
    size_t n, cap;
    size_t last;             /* the entry of the previous hit */
    struct {                 /* ids the registry said it does not have (404), a ring */
        int32_t id;
        int64_t until_ms;    /* mono clock; 0 = free slot */
    } miss[FL_SINK_MAX_UNKNOWN_SCHEMAS];
    size_t miss_next;
};

fl_err_t fl_sink_registry_new(const char *urls, const char *user_info, fl_sink_registry_t **out, char *err,
                              size_t errlen)
{
    *out = NULL;
    fl_sink_registry_t *r = fl_calloc(1, sizeof *r);
    for (const char *s = urls; s && *s;) {
        const char *c = strchr(s, ',');
        size_t m = c ? (size_t)(c - s) : strlen(s);
        while (m && (*s == ' ')) { s++; m--; }
        while (m && (s[m - 1] == ' ' || s[m - 1] == '/')) m--;
        if (m) {
            r->urls = fl_realloc(r->urls, (r->n_urls + 1) * sizeof *r->urls);
            r->urls[r->n_urls++] = fl_strndup(s, m);
        }
        s = c ? c + 1 : NULL;
    }
    if (!r->n_urls) {
        fl_sink_registry_free(r);
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "no schema registry URL");
    }
    if (user_info && *user_info) {
        size_t n = strlen(user_info);
        char *b64 = fl_malloc(4 * ((n + 2) / 3) + 1);
        fl_base64((const unsigned char *)user_info, n, b64);
        fl_buf_t b;
        fl_buf_init(&b, 0);
        fl_buf_printf(&b, "Basic %s", b64);
        free(b64);
        r->auth = fl_buf_steal(&b);
    }
    fl_httpc_cfg_t hc = { .connect_timeout_ms = 10000, .timeout_ms = 30000, .max_retries = 3, .pool_size = 2,
                          .stall_s = 30 };
    r->http = fl_httpc_new(&hc);
    *out = r;
    return FL_OK;
}

void fl_sink_registry_free(fl_sink_registry_t *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n_urls; i++) free(r->urls[i]);
    free(r->urls);
    if (r->auth) {
        memset(r->auth, 0, strlen(r->auth));
        free(r->auth);
    }
    for (size_t i = 0; i < r->n; i++) {
        fl_avro_schema_free(&r->e[i].plan);
        json_decref(r->e[i].connect);
    }
    free(r->e);
    fl_httpc_free(r->http);
    free(r);
}

/* ---- Connect schemas ---- */

static const char *branch_name(const fl_avro_schema_t *s, int32_t n)
{
    static const char *const prim[] = { "null", "boolean", "int", "long", "float", "double", "bytes", "string" };
    const fl_avro_node_t *a = &s->nodes[n];
    if (a->name) {
        const char *dot = strrchr(a->name, '.');
        return dot ? dot + 1 : a->name;
    }
    if (a->kind <= FL_AVRO_T_STRING) return prim[a->kind];
    return a->kind == FL_AVRO_T_ARRAY ? "array" : a->kind == FL_AVRO_T_MAP ? "map" : "union";
}

/* The one non-null branch of a [null, T] union, else -1. */
static int32_t nullable_branch(const fl_avro_schema_t *s, const fl_avro_node_t *a)
{
    int32_t other = -1, nulls = 0;
    for (int32_t i = 0; i < a->n; i++) {
        if (s->nodes[a->sub[i]].kind == FL_AVRO_T_NULL) nulls++;
        else if (other < 0) other = a->sub[i];
        else return -1;
    }
    return nulls == 1 ? other : -1;
}

static json_t *cschema(const fl_avro_schema_t *s, int32_t n, bool optional, int depth)
{
    if (depth > FL_AVRO_MAX_SCHEMA_DEPTH) return NULL;
    const fl_avro_node_t *a = &s->nodes[n];
    json_t *o = json_object();
    const char *type = NULL, *name = NULL;
    switch (a->kind) {
    case FL_AVRO_T_NULL: type = "string"; optional = true; break;
    case FL_AVRO_T_BOOL: type = "boolean"; break;
    case FL_AVRO_T_INT:
        type = "int32";
        if (a->logical == FL_AVRO_L_DATE) name = DATE_LOGICAL;
        if (a->logical == FL_AVRO_L_TIME_MS) name = TIME_LOGICAL;
        break;
    case FL_AVRO_T_LONG:
        type = "int64";
        switch (a->logical) {
        case FL_AVRO_L_TSTZ_MS: case FL_AVRO_L_TSTZ: name = TS_LOGICAL; break;
        case FL_AVRO_L_TS_MS: case FL_AVRO_L_TS: name = FL_SINK_LOCAL_TS_NAME; break;
        case FL_AVRO_L_TIME: name = TIME_LOGICAL; break;
        default: break;
        }
        break;
    case FL_AVRO_T_FLOAT: type = "float"; break;
    case FL_AVRO_T_DOUBLE: type = "double"; break;
    case FL_AVRO_T_STRING: case FL_AVRO_T_ENUM:
        type = "string";
        if (a->logical == FL_AVRO_L_UUID) name = "uuid";
        break;
    case FL_AVRO_T_BYTES: case FL_AVRO_T_FIXED:
        type = "bytes";
        if (a->logical == FL_AVRO_L_UUID && a->kind == FL_AVRO_T_FIXED && a->size == 16) {
            type = "string";
            name = "uuid";
        }
        if (a->logical == FL_AVRO_L_DECIMAL) {
            name = DECIMAL_LOGICAL;
            char sc[16];
            snprintf(sc, sizeof sc, "%d", (int)a->scale);
            json_t *params = json_pack("{s:s}", "scale", sc);
            if (a->precision) {
                char pr[16];
                snprintf(pr, sizeof pr, "%d", (int)a->precision);
                json_object_set_new(params, "connect.decimal.precision", json_string(pr));
            }
            json_object_set_new(o, "parameters", params);
        }
        break;
    case FL_AVRO_T_RECORD: {
        type = "struct";
        name = a->name;
        json_t *fields = json_array();
        json_object_set_new(o, "fields", fields);
        for (int32_t i = 0; i < a->n; i++) {
            json_t *f = cschema(s, a->sub[i], false, depth + 1);
            if (!f) { json_decref(o); return NULL; }
            json_object_set_new(f, "field", json_string(a->fnames[i]));
            json_array_append_new(fields, f);
        }
        break;
    }
    case FL_AVRO_T_ARRAY: {
        json_t *it = cschema(s, a->sub[0], false, depth + 1);
        if (!it) { json_decref(o); return NULL; }
        type = "array";
        json_object_set_new(o, "items", it);
        break;
    }
    case FL_AVRO_T_MAP: {
        json_t *v = cschema(s, a->sub[0], false, depth + 1);
        if (!v) { json_decref(o); return NULL; }
        type = "map";
        json_object_set_new(o, "keys", json_pack("{s:s,s:b}", "type", "string", "optional", 0));
        json_object_set_new(o, "values", v);
        break;
    }
    case FL_AVRO_T_UNION: {
        int32_t one = nullable_branch(s, a);
        if (one >= 0) {
            json_decref(o);
            return cschema(s, one, true, depth + 1);
        }
        bool has_null = false;
        type = "struct";
        name = UNION_NAME;
        json_t *fields = json_array();
        json_object_set_new(o, "fields", fields);
        for (int32_t i = 0; i < a->n; i++) {
            if (s->nodes[a->sub[i]].kind == FL_AVRO_T_NULL) { has_null = true; continue; }
            json_t *f = cschema(s, a->sub[i], true, depth + 1);
            if (!f) { json_decref(o); return NULL; }
            json_object_set_new(f, "field", json_string(branch_name(s, a->sub[i])));
            json_array_append_new(fields, f);
        }
        optional = optional || has_null;
        break;
    }
    }
    json_object_set_new(o, "type", json_string(type));
    if (name) json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "optional", json_boolean(optional));
    return o;
}

json_t *fl_sink_avro_connect_schema(const fl_avro_schema_t *s, int32_t n)
{
    if (n < 0 || n >= s->n) return NULL;
    return cschema(s, n, false, 0);
}

/* ---- datums ---- */

/* Epoch micros as ISO-8601 with microseconds; with zone, a trailing Z. */
static json_t *iso_micros(int64_t us, bool zone)
{
    int64_t secs = us / 1000000, frac = us % 1000000;
    if (frac < 0) { frac += 1000000; secs--; }
    time_t t = (time_t)secs;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) return NULL;
    char b[64];
    snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d.%06d%s", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac, zone ? "Z" : "");
    return json_string(b);
}

static json_t *b64(fl_slice_t v)
{
    char *o = fl_malloc(4 * ((v.len + 2) / 3) + 1);
    fl_base64((const unsigned char *)v.ptr, v.len, o);
    json_t *j = json_string(o);
    free(o);
    return j;
}

static json_t *real(double d)
{
    if (isnan(d)) return json_string("NaN");
    if (isinf(d)) return json_string(d > 0 ? "Infinity" : "-Infinity");
    return json_real(d);
}

typedef struct dctx {
    const fl_avro_schema_t *s;
    fl_avro_dec_t *d;
    int64_t items;
    char *err;
    size_t errlen;
} dctx_t;

static fl_err_t datum(dctx_t *c, int32_t n, json_t **out, int depth)
{
    *out = NULL;
    if (depth > FL_AVRO_MAX_SCHEMA_DEPTH * 2) return fl_err_fmt(c->err, c->errlen, FL_ERR_INVALID, "Avro value nested too deeply");
    const fl_avro_node_t *a = &c->s->nodes[n];
    fl_err_t e = FL_OK;
    int64_t x;
    fl_slice_t v;
    switch (a->kind) {
    case FL_AVRO_T_NULL: *out = json_null(); return FL_OK;
    case FL_AVRO_T_BOOL: {
        bool b;
        if ((e = fl_avro_get_bool(c->d, &b))) break;
        *out = json_boolean(b);
        return FL_OK;
    }
    case FL_AVRO_T_INT: {
        int32_t i;
        if ((e = fl_avro_get_int(c->d, &i))) break;
        *out = json_integer(i);
        return FL_OK;
    }
    case FL_AVRO_T_LONG:
        if ((e = fl_avro_get_long(c->d, &x))) break;
        switch (a->logical) {
        case FL_AVRO_L_TSTZ: *out = iso_micros(x, true); break;
        case FL_AVRO_L_TS: *out = iso_micros(x, false); break;
        case FL_AVRO_L_TS_MS:
            if (x > INT64_MAX / 1000 || x < INT64_MIN / 1000) { e = FL_ERR_INVALID; break; }
            *out = iso_micros(x * 1000, false);
            break;
        case FL_AVRO_L_TIME: {
            if (x < 0 || x >= 86400000000LL) { e = FL_ERR_INVALID; break; }
            char b[32];
            snprintf(b, sizeof b, "%02d:%02d:%02d.%06d", (int)(x / 3600000000LL), (int)(x / 60000000 % 60),
                     (int)(x / 1000000 % 60), (int)(x % 1000000));
            *out = json_string(b);
            break;
        }
        default: *out = json_integer(x);
        }
        if (!e && !*out) e = FL_ERR_INVALID;
        if (e) return fl_err_fmt(c->err, c->errlen, FL_ERR_INVALID, "Avro timestamp or time out of range");
        return FL_OK;
    case FL_AVRO_T_FLOAT: {
        float f;
        if ((e = fl_avro_get_float(c->d, &f))) break;
        *out = real(f);
        return FL_OK;
    }
    case FL_AVRO_T_DOUBLE: {
        double f;
        if ((e = fl_avro_get_double(c->d, &f))) break;
        *out = real(f);
        return FL_OK;
    }
    case FL_AVRO_T_STRING:
        if ((e = fl_avro_get_string(c->d, &v))) break;
        if (!(*out = json_stringn(v.ptr, v.len)))
            return fl_err_fmt(c->err, c->errlen, FL_ERR_INVALID, "Avro string is not UTF-8");
        return FL_OK;
    case FL_AVRO_T_BYTES: case FL_AVRO_T_FIXED:
        if (a->kind == FL_AVRO_T_FIXED) e = fl_avro_get_fixed(c->d, (size_t)a->size, &v);
        else e = fl_avro_get_bytes(c->d, &v);
        if (e) break;
        if (a->logical == FL_AVRO_L_UUID && a->kind == FL_AVRO_T_FIXED && a->size == 16) {
            const unsigned char *u = (const unsigned char *)v.ptr;
            char b[40];
            int o = 0;
            for (int i = 0; i < 16; i++) {
                if (i == 4 || i == 6 || i == 8 || i == 10) b[o++] = '-';
                o += snprintf(b + o, sizeof b - (size_t)o, "%02x", u[i]);
            }
            *out = json_string(b);
            return FL_OK;
        }
        *out = b64(v);
        return FL_OK;
    case FL_AVRO_T_ENUM: {
        if ((e = fl_avro_get_long(c->d, &x))) break;
        if (x < 0 || x >= a->size) return fl_err_fmt(c->err, c->errlen, FL_ERR_INVALID, "Avro enum index %" PRId64 " out of range", x);
        *out = json_string(a->symbols[x]);
        return FL_OK;
    }
    case FL_AVRO_T_RECORD: {
        json_t *o = json_object();
        for (int32_t i = 0; i < a->n; i++) {
            json_t *f;
            if ((e = datum(c, a->sub[i], &f, depth + 1))) { json_decref(o); return e; }
            json_object_set_new(o, a->fnames[i], f);
        }
        *out = o;
        return FL_OK;
    }
    case FL_AVRO_T_ARRAY: case FL_AVRO_T_MAP: {
        bool arr = a->kind == FL_AVRO_T_ARRAY;
        json_t *o = arr ? json_array() : json_object();
        for (;;) {
            int64_t cnt;
            if ((e = fl_avro_get_block_count(c->d, &cnt))) break;
            if (!cnt) { *out = o; return FL_OK; }
            for (int64_t i = 0; i < cnt && !e; i++) {
                if (++c->items > FL_AVRO_MAX_ITEMS) { e = FL_ERR_TOO_LARGE; break; }
                size_t before = fl_avro_dec_left(c->d);
                fl_slice_t k = { 0 };
                json_t *y = NULL;
                if (!arr && (e = fl_avro_get_string(c->d, &k))) break;
                if ((e = datum(c, a->sub[0], &y, depth + 1))) { json_decref(o); return e; }
                if (fl_avro_dec_left(c->d) == before) { json_decref(y); e = FL_ERR_INVALID; break; }
                if (arr) {
                    json_array_append_new(o, y);
                } else {
                    char *ks = fl_strndup(k.ptr, k.len);
                    if (strlen(ks) != k.len || json_object_set_new(o, ks, y)) e = FL_ERR_INVALID;
                    free(ks);
                }
            }
            if (e) break;
        }
        json_decref(o);
        break;
    }
    case FL_AVRO_T_UNION: {
        int64_t br;
        if ((e = fl_avro_get_union(c->d, a->n, &br))) break;
        int32_t b = a->sub[br];
        if (nullable_branch(c->s, a) >= 0 || c->s->nodes[b].kind == FL_AVRO_T_NULL) return datum(c, b, out, depth + 1);
        json_t *y;
        if ((e = datum(c, b, &y, depth + 1))) return e;
        *out = json_object();
        json_object_set_new(*out, branch_name(c->s, b), y);
        return FL_OK;
    }
    }
    return fl_err_fmt(c->err, c->errlen, e ? e : FL_ERR_INVALID, "malformed Avro value (%s)", fl_err_str(e ? e : FL_ERR_INVALID));
}

fl_err_t fl_sink_avro_datum(const fl_avro_schema_t *s, int32_t n, fl_avro_dec_t *d, json_t **out, char *err,
                            size_t errlen)
{
    dctx_t c = { .s = s, .d = d, .err = err, .errlen = errlen };
    *out = NULL;
    if (n < 0 || n >= s->n) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "no such Avro type");
    return datum(&c, n, out, 0);
}

/* ---- the registry ---- */

static fl_err_t fetch(fl_sink_registry_t *r, int32_t id, entry_t *en, char *err, size_t errlen)
{
    fl_err_t e = FL_ERR_IO;
    fl_buf_t body;
    fl_buf_init(&body, FL_SINK_MAX_SCHEMA_BYTES);
    static const char accept[] = "application/vnd.schemaregistry.v1+json, application/json";
    fl_http_header_t hs[2] = { { "accept", 6, accept, sizeof accept - 1 },
                               { "authorization", 13, r->auth, r->auth ? strlen(r->auth) : 0 } };
    for (size_t u = 0; u < r->n_urls; u++) {
        char url[2048];
        snprintf(url, sizeof url, "%s/schemas/ids/%d", r->urls[u], (int)id);
        fl_httpc_req_t rq = { .method = "GET", .url = url, .headers = hs, .nheaders = r->auth ? 2 : 1,
                              .body_fd = -1, .idempotent = true, .resp = &body };
        fl_httpc_resp_t rs;
        fl_remote_error_t re;
        memset(&rs, 0, sizeof rs);
        memset(&re, 0, sizeof re);
        fl_buf_reset(&body);
        e = fl_httpc_do(r->http, &rq, &rs, &re);
        if (e) {
            fl_err_fmt(err, errlen, e, "schema registry %s: %s", r->urls[u], re.message);
            continue;   /* the next URL */
        }
        if (rs.status == 404) {
            fl_buf_free(&body);
            return fl_err_fmt(err, errlen, FL_ERR_NOT_FOUND, "schema id %d is not in the schema registry", (int)id);
        }
        if (rs.status != 200) {
            e = fl_httpc_status_err((int)rs.status, re.type);
            if (e == FL_ERR_INVALID || e == FL_ERR_NOT_FOUND) e = FL_ERR_IO;   /* the registry's fault, not the record's */
            fl_err_fmt(err, errlen, e, "schema registry %s: HTTP %ld %s", r->urls[u], rs.status, re.message);
            if (rs.status >= 500) continue;
            break;
        }
        json_error_t je;
        json_t *doc = json_loadb(body.ptr, body.len, 0, &je);
        const char *st = json_string_value(json_object_get(doc, "schemaType"));
        const char *sch = json_string_value(json_object_get(doc, "schema"));
        json_t *refs = json_object_get(doc, "references");
        if (!sch || (st && strcmp(st, "AVRO")) || json_array_size(refs)) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "schema id %d: %s", (int)id,
                           !sch ? "the registry's answer has no \"schema\""
                           : json_array_size(refs) ? "schema references are not supported"
                           : "not an Avro schema (AvroConverter reads Avro only)");
            json_decref(doc);
            break;
        }
        json_t *avsc = json_loads(sch, JSON_DECODE_ANY, &je);
        json_decref(doc);
        memset(&en->plan, 0, sizeof en->plan);
        char perr[256] = "";
        en->root = avsc ? fl_avro_schema_parse(&en->plan, avsc, perr, sizeof perr) : -1;
        en->connect = en->root >= 0 ? fl_sink_avro_connect_schema(&en->plan, en->root) : NULL;
        bool bad_json = !avsc;
        json_decref(avsc);
        const char *cn = en->connect ? json_string_value(json_object_get(en->connect, "name")) : NULL;
        if (!en->connect || strcmp(json_string_value(json_object_get(en->connect, "type")), "struct") ||
            (cn && !strcmp(cn, UNION_NAME))) {
            fl_avro_schema_free(&en->plan);
            json_decref(en->connect);
            en->connect = NULL;
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "schema id %d: %s", (int)id,
                           bad_json ? "not JSON" : *perr ? perr : en->root < 0 ? "not an Avro schema"
                           : "the record value is not an Avro record (the sink writes records)");
            break;
        }
        en->id = id;
        e = FL_OK;
        break;
    }
    fl_buf_free(&body);
    /* a schema that cannot be used is the registry's fault here, not the record's: stop */
    return e == FL_ERR_INVALID ? FL_ERR_PROTO : e;
}

fl_err_t fl_sink_avro_decode(fl_sink_registry_t *r, const void *p, size_t n, json_t **value, json_t **schema,
                             char *err, size_t errlen)
{
    *value = *schema = NULL;
    if (!p) return FL_OK;
    const unsigned char *b = p;
    if (n < 5 || b[0] != 0)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "not in the schema registry's wire format (magic byte 0 and a "
                          "schema id); was it written by an Avro serializer?");
    int32_t id = (int32_t)((uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4]);
    entry_t *en = NULL;
    if (r->last < r->n && r->e[r->last].id == id) en = &r->e[r->last];
    for (size_t i = 0; !en && i < r->n; i++)
        if (r->e[i].id == id) { en = &r->e[i]; r->last = i; }
    if (!en) {
        int64_t now = fl_mono_ms();
        for (size_t i = 0; i < FL_SINK_MAX_UNKNOWN_SCHEMAS; i++)
            if (r->miss[i].until_ms > now && r->miss[i].id == id)
                return fl_err_fmt(err, errlen, FL_ERR_NOT_FOUND, "schema id %d is not in the schema registry (it "
                                  "said so less than %d s ago)", (int)id, FL_SINK_UNKNOWN_SCHEMA_TTL_MS / 1000);
        if (r->n >= FL_SINK_MAX_SCHEMAS)
            return fl_err_fmt(err, errlen, FL_ERR_TOO_LARGE, "more than %d schema ids seen", FL_SINK_MAX_SCHEMAS);
        if (r->n == r->cap) {
            r->cap = r->cap ? r->cap * 2 : 8;
            r->e = fl_realloc(r->e, r->cap * sizeof *r->e);
        }
        entry_t tmp;
        memset(&tmp, 0, sizeof tmp);
        fl_err_t e = fetch(r, id, &tmp, err, errlen);
        if (e == FL_ERR_NOT_FOUND) {   /* remembered: a flood of records naming it asks once per TTL */
            r->miss[r->miss_next].id = id;
            r->miss[r->miss_next].until_ms = now + FL_SINK_UNKNOWN_SCHEMA_TTL_MS;
            r->miss_next = (r->miss_next + 1) % FL_SINK_MAX_UNKNOWN_SCHEMAS;
        }
        if (e) return e;
        r->last = r->n;
        r->e[r->n++] = tmp;
        en = &r->e[r->last];
    }
    fl_avro_dec_t d;
    fl_avro_dec_init(&d, (fl_slice_t){ (const char *)b + 5, n - 5 });
    json_t *v = NULL;
    fl_err_t e = fl_sink_avro_datum(&en->plan, en->root, &d, &v, err, errlen);
    if (e) return FL_ERR_INVALID;
    if (fl_avro_dec_left(&d)) {
        json_decref(v);
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "%zu bytes after the Avro value (schema id %d)", fl_avro_dec_left(&d),
                          (int)id);
    }
    *value = v;
    *schema = en->connect;
    return FL_OK;
}
