/* Iceberg table metadata: creation from a REST CreateTableRequest, schemas (type validation,
 * AssignFreshIds), partition spec / sort order checks, structural validation and small helpers.
 * Requirements and updates live in metadata_update.c, views in metadata_view.c.
 *
 * The model is jansson all the way: metadata is the JSON object that gets written to
 * metadata.json, so unknown fields survive untouched. Every reader here is defensive, because
 * bases come from storage and requests from clients (and from the fuzzer). */
#include "iceberg/metadata_int.h"
#include "base/time.h"
#include "base/uuid.h"
#include "base/limits.h"
#include <stdint.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* ---- small helpers ---------------------------------------------------------------------- */

int ice_fail(ice_err_t *e, int status, const char *fmt, ...)
{
    if (e->status == 0) { /* the first failure is the one reported */
        e->status = status;
        if (e->buf && e->len) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(e->buf, e->len, fmt, ap);
            va_end(ap);
        }
    }
    return e->status;
}

bool ice_get_int(json_t *o, const char *k, json_int_t *out)
{
    json_t *v = json_is_object(o) ? json_object_get(o, k) : NULL;
    if (!json_is_integer(v)) return false;
    *out = json_integer_value(v);
    return true;
}

const char *ice_get_str(json_t *o, const char *k)
{
    json_t *v = json_is_object(o) ? json_object_get(o, k) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

json_t *ice_find_by_id(json_t *arr, const char *k, json_int_t v)
{
    size_t i;
    json_t *x;
    json_int_t id;
    if (!json_is_array(arr)) return NULL;
    json_array_foreach(arr, i, x)
        if (ice_get_int(x, k, &id) && id == v) return x;
    return NULL;
}

json_int_t ice_max_id(json_t *arr, const char *k, json_int_t dflt)
{
    size_t i;
    json_t *x;
    json_int_t id, m = dflt;
    if (!json_is_array(arr)) return m;
    json_array_foreach(arr, i, x)
        if (ice_get_int(x, k, &id) && id > m) m = id;
    return m;
}

void ice_set_int(json_t *o, const char *k, json_int_t v)
{
    json_object_set_new(o, k, json_integer(v));
}

int ice_check_string_map(json_t *m, const char *what, ice_err_t *e)
{
    const char *k;
    json_t *v;
    if (!json_is_object(m)) return ice_fail(e, 400, "%s must be an object of strings", what);
    json_object_foreach(m, k, v)
        if (!json_is_string(v))
            return ice_fail(e, 400, "%s: value of \"%s\" must be a string", what, k);
    return 0;
}

int64_t ice_now_ms(void)
{
    return fl_now_ms();
}

bool ice_is_uuid(const char *s)
{
    if (!s || strlen(s) != 36) return false;
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-') return false;
        } else if (!isxdigit((unsigned char)s[i])) {
            return false;
        }
    }
    return true;
}

void fl_iceberg_uuid4(char out[37]) { fl_uuid4(out); }

void ice_clear_current_snapshot(json_t *md)
{
    json_int_t fv = 2;
    ice_get_int(md, "format-version", &fv);
    if (fv >= 3) json_object_del(md, "current-snapshot-id");
    else ice_set_int(md, "current-snapshot-id", -1);
}

int64_t fl_iceberg_current_snapshot_id(json_t *metadata)
{
    json_int_t id;
    if (ice_get_int(metadata, "current-snapshot-id", &id) && id >= 0) return id;
    return -1;
}

long fl_iceberg_file_seq_of(const char *loc)
{
    if (!loc) return -1;
    const char *b = strrchr(loc, '/');
    b = b ? b + 1 : loc;
    long v = 0;
    const char *p = b;
    while (isdigit((unsigned char)*p)) {
        if (v > (LONG_MAX - 9) / 10) return -1;
        v = v * 10 + (*p - '0');
        p++;
    }
    if (p == b || *p != '-') return -1;
    return v;
}

long fl_iceberg_next_file_seq(json_t *metadata)
{
    json_t *log = json_is_object(metadata) ? json_object_get(metadata, "metadata-log") : NULL;
    if (!log) { /* views: no metadata-log; one number per view version */
        json_t *vl = json_is_object(metadata) ? json_object_get(metadata, "version-log") : NULL;
        size_t nv = json_is_array(vl) ? json_array_size(vl) : 0;
        return nv ? (long)nv - 1 : 0;
    }
    size_t n = json_is_array(log) ? json_array_size(log) : 0;
    long seq = (long)n;
    if (n) { /* a trimmed log undercounts: the newest previous file's own number + 1 */
        long last = fl_iceberg_file_seq_of(ice_get_str(json_array_get(log, n - 1), "metadata-file"));
        if (last >= 0 && last < LONG_MAX - 1 && last + 1 > seq) seq = last + 1;
    }
    return seq;
}

int fl_iceberg_metadata_unchanged(json_t *base, json_t *result)
{
    if (!json_is_object(base) || !json_is_object(result)) return 0;
    /* every key but last-updated-ms and metadata-log equal, both ways; no copies */
    const char *k;
    json_t *v;
    size_t skipped_a = 0, skipped_b = 0;
    json_object_foreach(base, k, v) {
        if (!strcmp(k, "last-updated-ms") || !strcmp(k, "metadata-log")) {
            skipped_a++;
            continue;
        }
        json_t *w = json_object_get(result, k);
        if (!w || !json_equal(v, w)) return 0;
    }
    json_object_foreach(result, k, v)
        if (!strcmp(k, "last-updated-ms") || !strcmp(k, "metadata-log")) skipped_b++;
    return json_object_size(base) - skipped_a == json_object_size(result) - skipped_b;
}

/* ---- types and schemas ------------------------------------------------------------------ */

/* Validates a primitive type string and writes its canonical spelling (Java's) into out. */
static int check_primitive(const char *s, int fv, char *out, size_t outlen, ice_err_t *e)
{
    static const char *const v1[] = { "boolean", "int", "long", "float", "double", "date",
        "time", "timestamp", "timestamptz", "string", "uuid", "binary" };
    static const char *const v3[] = { "timestamp_ns", "timestamptz_ns", "unknown", "variant" };
    char low[128];
    size_t n = strlen(s);
    if (n == 0 || n >= sizeof low) return ice_fail(e, 400, "invalid type \"%.64s\"", s);
    for (size_t i = 0; i <= n; i++) low[i] = (char)tolower((unsigned char)s[i]);
    for (size_t i = 0; i < sizeof v1 / sizeof v1[0]; i++)
        if (!strcmp(low, v1[i])) { snprintf(out, outlen, "%s", low); return 0; }
    for (size_t i = 0; i < sizeof v3 / sizeof v3[0]; i++)
        if (!strcmp(low, v3[i])) {
            if (fv < 3) return ice_fail(e, 400, "type %s needs format-version 3", low);
            snprintf(out, outlen, "%s", low);
            return 0;
        }
    if (!strncmp(low, "geometry", 8) || !strncmp(low, "geography", 9)) {
        const char *rest = low + (low[2] == 'o' && low[3] == 'm' ? 8 : 9);
        if (*rest && (*rest != '(' || low[n - 1] != ')'))
            return ice_fail(e, 400, "invalid type \"%.64s\"", s);
        if (fv < 3) return ice_fail(e, 400, "type %.64s needs format-version 3", s);
        snprintf(out, outlen, "%s", s);
        return 0;
    }
    const char *p;
    if (!strncmp(low, "decimal", 7)) {
        p = low + 7;
        unsigned long prec, scale;
        char *end;
        while (*p == ' ') p++;
        if (*p++ != '(') goto bad;
        while (*p == ' ') p++;
        if (!isdigit((unsigned char)*p)) goto bad;
        errno = 0;
        prec = strtoul(p, &end, 10);
        p = end;
        while (*p == ' ') p++;
        if (*p++ != ',') goto bad;
        while (*p == ' ') p++;
        if (!isdigit((unsigned char)*p)) goto bad;
        scale = strtoul(p, &end, 10);
        p = end;
        while (*p == ' ') p++;
        if (*p++ != ')' || *p || errno) goto bad;
        if (prec > 38) return ice_fail(e, 400, "decimal precision %lu above 38", prec);
        if (scale > prec) return ice_fail(e, 400, "decimal scale %lu above precision %lu", scale, prec);
        snprintf(out, outlen, "decimal(%lu, %lu)", prec, scale);
        return 0;
    }
    if (!strncmp(low, "fixed[", 6)) {
        char *end;
        p = low + 6;
        if (!isdigit((unsigned char)*p)) goto bad;
        errno = 0;
        unsigned long len = strtoul(p, &end, 10);
        if (errno || len == 0 || len > INT_MAX || strcmp(end, "]")) goto bad;
        snprintf(out, outlen, "fixed[%lu]", len);
        return 0;
    }
bad:
    return ice_fail(e, 400, "invalid type \"%.64s\"", s);
}

typedef struct walk {
    bool fresh;
    int fv;
    json_int_t *next;
    ice_idmap_t *map;     /* fresh: old -> new (old ids that were present) */
    ice_idmap_t seen;     /* every id met: fresh = old ids, check = ids (duplicate detection) */
    ice_err_t *e;
    size_t fields;        /* struct fields met so far, capped at FL_ICEBERG_MAX_FIELDS */
} walk_t;

void ice_idmap_add(ice_idmap_t *m, json_int_t from, json_int_t to)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 32;
        m->from = realloc(m->from, m->cap * sizeof *m->from);
        m->to = realloc(m->to, m->cap * sizeof *m->to);
        if (!m->from || !m->to) abort();
    }
    m->from[m->n] = from;
    m->to[m->n++] = to;
}

void ice_idmap_free(ice_idmap_t *m)
{
    free(m->from);
    free(m->to);
    memset(m, 0, sizeof *m);
}

bool ice_idmap_get(const ice_idmap_t *m, json_int_t from, json_int_t *to)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->from[i] == from) { *to = m->to[i]; return true; }
    return false;
}

static int cmp_id(const void *a, const void *b)
{
    json_int_t x = *(const json_int_t *)a, y = *(const json_int_t *)b;
    return x < y ? -1 : x > y;
}

/* Gives an id slot (field id, element-id, key-id, value-id) its new value in o[key]. */
static int walk_id(walk_t *w, json_t *src, json_t *dst, const char *key)
{
    json_int_t old;
    bool has = ice_get_int(src, key, &old);
    if (w->fresh) {
        if (*w->next >= ICE_MAX_FIELD_ID) return ice_fail(w->e, 400, "too many columns");
        json_int_t id = ++*w->next;
        if (has) {
            ice_idmap_add(w->map, old, id);
            ice_idmap_add(&w->seen, old, id);
        }
        ice_set_int(dst, key, id);
        return 0;
    }
    if (!has) return ice_fail(w->e, 400, "schema: missing or non-integer \"%s\"", key);
    if (old <= 0 || old > ICE_MAX_FIELD_ID)
        return ice_fail(w->e, 400, "schema: invalid %s %" JSON_INTEGER_FORMAT, key, old);
    ice_idmap_add(&w->seen, old, old);
    if (old > *w->next) *w->next = old;
    return 0;
}

static json_t *walk_type(walk_t *w, json_t *t, int depth);

static json_t *walk_struct(walk_t *w, json_t *st, int depth)
{
    json_t *fields = json_object_get(st, "fields");
    if (!json_is_array(fields)) {
        ice_fail(w->e, 400, "struct type needs a \"fields\" array");
        return NULL;
    }
    size_t i, nfields = json_array_size(fields);
    w->fields += nfields;
    if (w->fields > FL_ICEBERG_MAX_FIELDS) {
        ice_fail(w->e, 400, "a schema may have at most %d fields", FL_ICEBERG_MAX_FIELDS);
        return NULL;
    }
    json_t *out = json_deep_copy(st);
    json_t *nf = json_array();
    json_t *names = json_object(); /* duplicate detection in one pass */
    json_t *f;
    json_object_set_new(out, "fields", nf);
    json_array_foreach(fields, i, f) {
        const char *name = ice_get_str(f, "name");
        if (!json_is_object(f)) { ice_fail(w->e, 400, "struct field must be an object"); goto fail; }
        if (!name || !*name) { ice_fail(w->e, 400, "struct field needs a non-empty \"name\""); goto fail; }
        if (json_object_get(names, name)) {
            ice_fail(w->e, 400, "duplicate field name \"%.200s\"", name);
            goto fail;
        }
        json_object_set_new(names, name, json_true());
        if (!json_object_get(f, "type")) {
            ice_fail(w->e, 400, "field \"%.200s\" has no \"type\"", name);
            goto fail;
        }
        json_t *req = json_object_get(f, "required");
        if (req && !json_is_boolean(req)) {
            ice_fail(w->e, 400, "field \"%.200s\": \"required\" must be a boolean", name);
            goto fail;
        }
        json_t *c = json_deep_copy(f);
        if (!req) json_object_set_new(c, "required", json_false());
        json_array_append_new(nf, c);
        if (walk_id(w, f, c, "id")) goto fail;
    }
    for (i = 0; i < nfields; i++) {
        json_t *t = walk_type(w, json_object_get(json_array_get(fields, i), "type"), depth + 1);
        if (!t) goto fail;
        json_object_set_new(json_array_get(nf, i), "type", t);
    }
    json_decref(names);
    return out;
fail:
    json_decref(names);
    json_decref(out);
    return NULL;
}

static json_t *walk_type(walk_t *w, json_t *t, int depth)
{
    if (depth > FL_ICEBERG_MAX_DEPTH) {
        ice_fail(w->e, 400, "types nested deeper than %d", FL_ICEBERG_MAX_DEPTH);
        return NULL;
    }
    if (json_is_string(t)) {
        char norm[160];
        if (check_primitive(json_string_value(t), w->fv, norm, sizeof norm, w->e)) return NULL;
        return json_string(norm);
    }
    const char *kind = ice_get_str(t, "type");
    if (!kind) {
        ice_fail(w->e, 400, "a type must be a string or an object with \"type\"");
        return NULL;
    }
    if (!strcmp(kind, "struct")) return walk_struct(w, t, depth);
    json_t *out = json_deep_copy(t), *x;
    if (!strcmp(kind, "list")) {
        json_t *er = json_object_get(t, "element-required");
        if (er && !json_is_boolean(er)) { ice_fail(w->e, 400, "\"element-required\" must be a boolean"); goto fail; }
        if (!er) json_object_set_new(out, "element-required", json_false());
        if (!json_object_get(t, "element")) { ice_fail(w->e, 400, "list type needs \"element\""); goto fail; }
        if (walk_id(w, t, out, "element-id")) goto fail;
        if (!(x = walk_type(w, json_object_get(t, "element"), depth + 1))) goto fail;
        json_object_set_new(out, "element", x);
        return out;
    }
    if (!strcmp(kind, "map")) {
        json_t *vr = json_object_get(t, "value-required");
        if (vr && !json_is_boolean(vr)) { ice_fail(w->e, 400, "\"value-required\" must be a boolean"); goto fail; }
        if (!vr) json_object_set_new(out, "value-required", json_false());
        if (!json_object_get(t, "key") || !json_object_get(t, "value")) {
            ice_fail(w->e, 400, "map type needs \"key\" and \"value\"");
            goto fail;
        }
        if (walk_id(w, t, out, "key-id") || walk_id(w, t, out, "value-id")) goto fail;
        if (!(x = walk_type(w, json_object_get(t, "key"), depth + 1))) goto fail;
        json_object_set_new(out, "key", x);
        if (!(x = walk_type(w, json_object_get(t, "value"), depth + 1))) goto fail;
        json_object_set_new(out, "value", x);
        return out;
    }
    ice_fail(w->e, 400, "unknown nested type \"%.64s\"", kind);
fail:
    json_decref(out);
    return NULL;
}

json_t *ice_walk_schema(json_t *schema, bool fresh, int fv, json_int_t *next, ice_idmap_t *map,
                        ice_err_t *e)
{
    walk_t w = { .fresh = fresh, .fv = fv, .next = next, .map = map, .e = e };
    json_t *out = NULL;
    if (!json_is_object(schema)) {
        ice_fail(e, 400, "schema must be an object");
        return NULL;
    }
    const char *kind = ice_get_str(schema, "type");
    if (json_object_get(schema, "type") && (!kind || strcmp(kind, "struct"))) {
        ice_fail(e, 400, "schema \"type\" must be \"struct\"");
        return NULL;
    }
    if (!(out = walk_struct(&w, schema, 0))) goto out;
    if (!kind) { /* put "type" first, as every writer does */
        json_t *o = json_object();
        const char *k;
        json_t *v;
        json_object_set_new(o, "type", json_string("struct"));
        json_object_foreach(out, k, v) json_object_set(o, k, v);
        json_decref(out);
        out = o;
    }
    /* ids must be unique (for fresh walks: the old ids the request used) */
    if (w.seen.n > 1) {
        json_int_t *ids = malloc(w.seen.n * sizeof *ids);
        if (!ids) abort();
        memcpy(ids, w.seen.from, w.seen.n * sizeof *ids);
        qsort(ids, w.seen.n, sizeof *ids, cmp_id);
        for (size_t i = 1; i < w.seen.n; i++)
            if (ids[i] == ids[i - 1]) {
                ice_fail(e, 400, "schema: duplicate field id %" JSON_INTEGER_FORMAT, ids[i]);
                break;
            }
        free(ids);
        if (e->status) goto fail;
    }
    json_t *ident = json_object_get(schema, "identifier-field-ids");
    if (ident && !json_is_null(ident)) {
        size_t i;
        json_t *x, *nids = json_array();
        json_object_set_new(out, "identifier-field-ids", nids);
        if (!json_is_array(ident)) { ice_fail(e, 400, "\"identifier-field-ids\" must be an array"); goto fail; }
        json_array_foreach(ident, i, x) {
            json_int_t id = json_integer_value(x), to;
            if (!json_is_integer(x) || !ice_idmap_get(fresh ? map : &w.seen, id, &to)) {
                ice_fail(e, 400, "identifier field id is not a field of the schema");
                goto fail;
            }
            json_t *ft = ice_find_field_type(out, to);
            if (!json_is_string(ft) || !strcmp(json_string_value(ft), "float") ||
                !strcmp(json_string_value(ft), "double")) {
                ice_fail(e, 400, "identifier field %" JSON_INTEGER_FORMAT
                         " must be a primitive, not float or double", id);
                goto fail;
            }
            json_array_append_new(nids, json_integer(to));
        }
    } else if (ident) {
        json_object_del(out, "identifier-field-ids");
    }
    goto out;
fail:
    json_decref(out);
    out = NULL;
out:
    ice_idmap_free(&w.seen);
    return out;
}

static json_t *find_type_in(json_t *t, json_int_t fid, int depth)
{
    json_int_t id;
    if (depth > FL_ICEBERG_MAX_DEPTH || !json_is_object(t)) return NULL;
    const char *kind = ice_get_str(t, "type");
    if (!kind || !strcmp(kind, "struct")) {
        json_t *fields = json_object_get(t, "fields"), *f, *r;
        size_t i;
        if (!json_is_array(fields)) return NULL;
        json_array_foreach(fields, i, f)
            if (ice_get_int(f, "id", &id) && id == fid) return json_object_get(f, "type");
        json_array_foreach(fields, i, f)
            if ((r = find_type_in(json_object_get(f, "type"), fid, depth + 1))) return r;
        return NULL;
    }
    if (!strcmp(kind, "list")) {
        if (ice_get_int(t, "element-id", &id) && id == fid) return json_object_get(t, "element");
        return find_type_in(json_object_get(t, "element"), fid, depth + 1);
    }
    if (!strcmp(kind, "map")) {
        json_t *r;
        if (ice_get_int(t, "key-id", &id) && id == fid) return json_object_get(t, "key");
        if (ice_get_int(t, "value-id", &id) && id == fid) return json_object_get(t, "value");
        if ((r = find_type_in(json_object_get(t, "key"), fid, depth + 1))) return r;
        return find_type_in(json_object_get(t, "value"), fid, depth + 1);
    }
    return NULL;
}

json_t *ice_find_field_type(json_t *schema, json_int_t fid)
{
    return find_type_in(schema, fid, 0);
}

bool ice_same_schema(json_t *a, json_t *b)
{
    if (!json_is_object(a) || !json_is_object(b)) return false;
    json_t *x = json_deep_copy(a), *y = json_deep_copy(b);
    json_t *xs[2] = { x, y };
    for (int i = 0; i < 2; i++) {
        json_object_del(xs[i], "schema-id");
        json_t *ids = json_object_get(xs[i], "identifier-field-ids");
        if (ids && (!json_is_array(ids) || json_array_size(ids) == 0))
            json_object_del(xs[i], "identifier-field-ids");
    }
    bool same = json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return same;
}

/* A schema's content as text, compared as ice_same_schema compares: without schema-id
 * and an empty identifier-field-ids, keys sorted. malloc'd; NULL on OOM. */
static char *schema_fingerprint(json_t *s)
{
    json_t *c = json_copy(s); /* shallow: only top-level members are dropped */
    if (!c) return NULL;
    json_object_del(c, "schema-id");
    json_t *ids = json_object_get(c, "identifier-field-ids");
    if (ids && (!json_is_array(ids) || json_array_size(ids) == 0)) json_object_del(c, "identifier-field-ids");
    char *fp = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(c);
    return fp;
}

int ice_schema_add(ice_schema_set_t *set, json_t *schemas, json_t *s, json_int_t *id, ice_err_t *e)
{
    json_t *x;
    size_t i;
    json_int_t sid;
    char *fp;
    if (!set->index) { /* the first of equal schemas wins, as a linear search finds it */
        if (!(set->index = json_object())) return ice_fail(e, 500, "out of memory");
        set->max = -1;
        json_array_foreach(schemas, i, x) {
            if (!ice_get_int(x, "schema-id", &sid)) continue;
            if (sid > set->max) set->max = sid;
            if (!(fp = schema_fingerprint(x))) return ice_fail(e, 500, "out of memory");
            if (!json_object_get(set->index, fp)) json_object_set_new(set->index, fp, json_integer(sid));
            free(fp);
        }
    }
    if (!(fp = schema_fingerprint(s))) return ice_fail(e, 500, "out of memory");
    json_t *hit = json_object_get(set->index, fp);
    if (hit) {
        *id = json_integer_value(hit);
    } else {
        *id = ++set->max;
        ice_set_int(s, "schema-id", *id);
        json_array_append(schemas, s);
        json_object_set_new(set->index, fp, json_integer(*id));
    }
    free(fp);
    return 0;
}

void ice_schema_set_reset(ice_schema_set_t *set)
{
    json_decref(set->index);
    set->index = NULL;
}

/* ---- partition specs and sort orders ---------------------------------------------------- */

typedef enum { TR_IDENTITY, TR_BUCKET, TR_TRUNCATE, TR_YEAR, TR_MONTH, TR_DAY, TR_HOUR,
               TR_VOID, TR_BAD } transform_t;

static transform_t parse_transform(const char *s)
{
    if (!s) return TR_BAD;
    static const struct { const char *name; transform_t t; } plain[] = {
        { "identity", TR_IDENTITY }, { "year", TR_YEAR }, { "month", TR_MONTH },
        { "day", TR_DAY }, { "hour", TR_HOUR }, { "void", TR_VOID } };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (!strcmp(s, plain[i].name)) return plain[i].t;
    transform_t t;
    const char *p;
    if (!strncmp(s, "bucket[", 7)) { t = TR_BUCKET; p = s + 7; }
    else if (!strncmp(s, "truncate[", 9)) { t = TR_TRUNCATE; p = s + 9; }
    else return TR_BAD;
    char *end;
    if (!isdigit((unsigned char)*p)) return TR_BAD;
    errno = 0;
    unsigned long n = strtoul(p, &end, 10);
    if (errno || n == 0 || n > INT_MAX || strcmp(end, "]")) return TR_BAD;
    return t;
}

static bool is_ts(const char *t)
{
    return !strcmp(t, "timestamp") || !strcmp(t, "timestamptz") ||
           !strcmp(t, "timestamp_ns") || !strcmp(t, "timestamptz_ns");
}

/* Does transform tr apply to a source of type ty? */
static bool transform_applies(transform_t tr, json_t *ty)
{
    if (tr == TR_VOID) return true;
    if (!json_is_string(ty)) return false; /* nested types cannot be partitioned / sorted */
    const char *t = json_string_value(ty);
    switch (tr) {
    case TR_IDENTITY:
        return strcmp(t, "variant") && strncmp(t, "geo", 3);
    case TR_BUCKET:
        return strcmp(t, "boolean") && strcmp(t, "float") && strcmp(t, "double") &&
               strcmp(t, "variant") && strcmp(t, "unknown") && strncmp(t, "geo", 3);
    case TR_TRUNCATE:
        return !strcmp(t, "int") || !strcmp(t, "long") || !strncmp(t, "decimal", 7) ||
               !strcmp(t, "string") || !strcmp(t, "binary");
    case TR_YEAR: case TR_MONTH: case TR_DAY:
        return !strcmp(t, "date") || is_ts(t);
    case TR_HOUR:
        return is_ts(t);
    default:
        return false;
    }
}

/* Resolves a field's source-id (or v3 source-ids) against schema and checks the transform. */
static int check_source(json_t *f, json_t *schema, const char *what, ice_err_t *e)
{
    const char *ts = ice_get_str(f, "transform");
    transform_t tr = parse_transform(ts);
    json_int_t sid = 0;
    if (tr == TR_BAD) return ice_fail(e, 400, "%s: invalid transform \"%.64s\"", what, ts ? ts : "");
    json_t *sids = json_object_get(f, "source-ids");
    size_t n = 1;
    if (!ice_get_int(f, "source-id", &sid)) {
        if (!json_is_array(sids) || !(n = json_array_size(sids)))
            return ice_fail(e, 400, "%s: field needs an integer \"source-id\"", what);
    } else {
        sids = NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (sids) {
            json_t *x = json_array_get(sids, i);
            if (!json_is_integer(x)) return ice_fail(e, 400, "%s: \"source-ids\" must be integers", what);
            sid = json_integer_value(x);
        }
        json_t *ty = ice_find_field_type(schema, sid);
        if (!ty) return ice_fail(e, 400, "%s: cannot find source column %" JSON_INTEGER_FORMAT, what, sid);
        if (!transform_applies(tr, ty))
            return ice_fail(e, 400, "%s: transform %s cannot be applied to source column %"
                            JSON_INTEGER_FORMAT, what, ts, sid);
    }
    return 0;
}

int ice_check_spec_fields(json_t *fields, json_t *schema, ice_err_t *e)
{
    size_t i;
    json_t *f;
    json_int_t id;
    if (!json_is_array(fields)) return ice_fail(e, 400, "partition spec needs a \"fields\" array");
    if (json_array_size(fields) > FL_ICEBERG_MAX_FIELDS)
        return ice_fail(e, 400, "a partition spec may have at most %d fields", FL_ICEBERG_MAX_FIELDS);
    json_t *names = json_object();
    int rc = 0;
    json_array_foreach(fields, i, f) {
        const char *name = ice_get_str(f, "name");
        if (!name || !*name) { rc = ice_fail(e, 400, "partition field needs a non-empty \"name\""); break; }
        if (json_object_get(f, "field-id") &&
            (!ice_get_int(f, "field-id", &id) || id < 1000 || id > INT32_MAX)) {
            rc = ice_fail(e, 400, "partition field \"field-id\" must be an integer from 1000 to 2147483647");
            break;
        }
        if (json_object_get(names, name)) {
            rc = ice_fail(e, 400, "duplicate partition field name \"%.200s\"", name);
            break;
        }
        json_object_set_new(names, name, json_true());
        if (check_source(f, schema, "partition spec", e)) { rc = e->status; break; }
    }
    json_decref(names);
    return rc;
}

int ice_check_sort_fields(json_t *fields, json_t *schema, ice_err_t *e)
{
    size_t i;
    json_t *f;
    if (!json_is_array(fields)) return ice_fail(e, 400, "sort order needs a \"fields\" array");
    json_array_foreach(fields, i, f) {
        const char *d = ice_get_str(f, "direction"), *no = ice_get_str(f, "null-order");
        if (!d || (strcmp(d, "asc") && strcmp(d, "desc")))
            return ice_fail(e, 400, "sort field \"direction\" must be \"asc\" or \"desc\"");
        if (!no || (strcmp(no, "nulls-first") && strcmp(no, "nulls-last")))
            return ice_fail(e, 400, "sort field \"null-order\" must be \"nulls-first\" or \"nulls-last\"");
        if (check_source(f, schema, "sort order", e)) return e->status;
    }
    return 0;
}

/* Copies spec/sort fields with source ids moved through map (request ids -> fresh ids). */
static json_t *remap_fields(json_t *fields, const ice_idmap_t *map, const char *what, ice_err_t *e)
{
    json_t *out = json_array(), *f;
    size_t i;
    if (!json_is_array(fields)) {
        ice_fail(e, 400, "%s needs a \"fields\" array", what);
        goto fail;
    }
    json_array_foreach(fields, i, f) {
        json_int_t sid, to;
        if (!json_is_object(f)) { ice_fail(e, 400, "%s fields must be objects", what); goto fail; }
        json_t *c = json_deep_copy(f);
        json_array_append_new(out, c);
        json_t *sids = json_object_get(f, "source-ids");
        if (ice_get_int(f, "source-id", &sid)) {
            if (!ice_idmap_get(map, sid, &to)) {
                ice_fail(e, 400, "%s: source-id %" JSON_INTEGER_FORMAT " is not a field of the schema", what, sid);
                goto fail;
            }
            ice_set_int(c, "source-id", to);
        } else if (json_is_array(sids)) {
            json_t *ns = json_array(), *x;
            size_t k;
            json_object_set_new(c, "source-ids", ns);
            json_array_foreach(sids, k, x) {
                if (!json_is_integer(x) || !ice_idmap_get(map, json_integer_value(x), &to)) {
                    ice_fail(e, 400, "%s: source-ids must name fields of the schema", what);
                    goto fail;
                }
                json_array_append_new(ns, json_integer(to));
            }
        } else {
            ice_fail(e, 400, "%s: field needs an integer \"source-id\"", what);
            goto fail;
        }
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* ---- new table metadata ----------------------------------------------------------------- */

static const char *const reserved_props[] = { "format-version", "uuid", "snapshot-count",
    "current-snapshot-id", "current-snapshot-summary", "current-snapshot-timestamp-ms",
    "current-schema", "default-partition-spec", "default-sort-order" };

static char *clean_location(const char *loc)
{
    size_t n = strlen(loc);
    while (n > 1 && loc[n - 1] == '/' && loc[n - 2] != '/') n--;
    char *s = malloc(n + 1);
    if (!s) abort();
    memcpy(s, loc, n);
    s[n] = 0;
    return s;
}

json_t *fl_iceberg_new_metadata(json_t *req, const char *location, int *status, char *err,
                                size_t errlen)
{
    ice_err_t e = { err, errlen, 0 };
    ice_idmap_t map = { 0 };
    json_t *md = NULL, *schema = NULL, *specf = NULL, *sortf = NULL, *props = NULL;
    json_int_t last_col = 0, fv = 2;
    if (err && errlen) err[0] = 0;
    if (!json_is_object(req)) { ice_fail(&e, 400, "create table request must be a JSON object"); goto out; }
    const char *name = ice_get_str(req, "name");
    if (!name || !*name) { ice_fail(&e, 400, "create table request needs a \"name\""); goto out; }
    if (!location || !*location) { ice_fail(&e, 400, "table location is empty"); goto out; }
    json_t *rp = json_object_get(req, "properties");
    if (rp && !json_is_null(rp) && ice_check_string_map(rp, "properties", &e)) goto out;
    const char *fvs = ice_get_str(rp, "format-version");
    if (fvs) {
        if (!strcmp(fvs, "1")) fv = 1;
        else if (!strcmp(fvs, "2")) fv = 2;
        else if (!strcmp(fvs, "3")) fv = 3;
        else { ice_fail(&e, 400, "unsupported format-version \"%.32s\" (1, 2 or 3)", fvs); goto out; }
    }
    json_t *rs = json_object_get(req, "schema");
    if (!rs || json_is_null(rs)) { ice_fail(&e, 400, "create table request needs a \"schema\""); goto out; }
    if (!(schema = ice_walk_schema(rs, true, (int)fv, &last_col, &map, &e))) goto out;
    ice_set_int(schema, "schema-id", 0);

    json_t *rspec = json_object_get(req, "partition-spec");
    if (rspec && !json_is_null(rspec)) {
        if (!json_is_object(rspec)) { ice_fail(&e, 400, "\"partition-spec\" must be an object"); goto out; }
        if (!(specf = remap_fields(json_object_get(rspec, "fields"), &map, "partition spec", &e))) goto out;
        size_t i;
        json_t *f;
        json_array_foreach(specf, i, f) ice_set_int(f, "field-id", 1000 + (json_int_t)i);
        if (ice_check_spec_fields(specf, schema, &e)) goto out;
    } else {
        specf = json_array();
    }
    json_t *rsort = json_object_get(req, "write-order");
    if (rsort && !json_is_null(rsort)) {
        if (!json_is_object(rsort)) { ice_fail(&e, 400, "\"write-order\" must be an object"); goto out; }
        if (!(sortf = remap_fields(json_object_get(rsort, "fields"), &map, "sort order", &e))) goto out;
        if (ice_check_sort_fields(sortf, schema, &e)) goto out;
    } else {
        sortf = json_array();
    }

    props = json_object();
    if (json_is_object(rp)) {
        const char *k;
        json_t *v;
        json_object_foreach(rp, k, v) {
            bool reserved = false;
            for (size_t i = 0; i < sizeof reserved_props / sizeof reserved_props[0]; i++)
                if (!strcmp(k, reserved_props[i])) reserved = true;
            if (!reserved) json_object_set(props, k, v);
        }
    }
    if (!json_object_get(props, "write.parquet.compression-codec"))
        json_object_set_new(props, "write.parquet.compression-codec", json_string("zstd"));

    char uuid[37];
    fl_iceberg_uuid4(uuid);
    char *loc = clean_location(location);
    json_int_t nspec = (json_int_t)json_array_size(specf);
    json_int_t order_id = json_array_size(sortf) ? 1 : 0;
    json_t *spec = json_pack("{s:i,s:O}", "spec-id", 0, "fields", specf);
    json_t *order = json_pack("{s:I,s:O}", "order-id", order_id, "fields", sortf);

    md = json_object();
    ice_set_int(md, "format-version", fv);
    json_object_set_new(md, "table-uuid", json_string(uuid));
    json_object_set_new(md, "location", json_string(loc));
    free(loc);
    if (fv >= 2) ice_set_int(md, "last-sequence-number", 0);
    ice_set_int(md, "last-updated-ms", ice_now_ms());
    ice_set_int(md, "last-column-id", last_col);
    if (fv == 1) json_object_set(md, "schema", schema);
    ice_set_int(md, "current-schema-id", 0);
    json_object_set_new(md, "schemas", json_pack("[O]", schema));
    if (fv == 1) json_object_set(md, "partition-spec", specf);
    ice_set_int(md, "default-spec-id", 0);
    json_object_set_new(md, "partition-specs", json_pack("[o]", spec));
    ice_set_int(md, "last-partition-id", 999 + nspec);
    ice_set_int(md, "default-sort-order-id", order_id);
    json_object_set_new(md, "sort-orders", json_pack("[o]", order));
    json_object_set(md, "properties", props);
    if (fv < 3) ice_set_int(md, "current-snapshot-id", -1);
    json_object_set_new(md, "refs", json_object());
    json_object_set_new(md, "snapshots", json_array());
    json_object_set_new(md, "statistics", json_array());
    json_object_set_new(md, "partition-statistics", json_array());
    json_object_set_new(md, "snapshot-log", json_array());
    json_object_set_new(md, "metadata-log", json_array());
    if (fv >= 3) ice_set_int(md, "next-row-id", 0);
out:
    ice_idmap_free(&map);
    json_decref(schema);
    json_decref(specf);
    json_decref(sortf);
    json_decref(props);
    if (e.status) {
        json_decref(md);
        md = NULL;
    }
    if (status) *status = e.status;
    return md;
}

json_t *fl_iceberg_schema_from_s3tables(json_t *s3schema, char *err, size_t errlen)
{
    ice_err_t e = { err, errlen, 0 };
    ice_idmap_t map = { 0 };
    json_t *st = NULL, *out = NULL, *fields, *f;
    json_int_t next = 0;
    size_t i;
    if (err && errlen) err[0] = 0;
    fields = json_object_get(s3schema, "fields");
    if (!json_is_object(s3schema) || !json_is_array(fields)) {
        ice_fail(&e, 400, "schema must be an object with a \"fields\" array");
        goto out;
    }
    if (json_array_size(fields) == 0) { ice_fail(&e, 400, "schema has no fields"); goto out; }
    st = json_pack("{s:s,s:[]}", "type", "struct", "fields");
    json_t *nf = json_object_get(st, "fields");
    json_array_foreach(fields, i, f) {
        const char *name = ice_get_str(f, "name");
        json_t *type = json_object_get(f, "type"), *req = json_object_get(f, "required");
        if (!json_is_object(f) || !name || !*name) {
            ice_fail(&e, 400, "schema field %zu needs a non-empty \"name\"", i);
            goto out;
        }
        if (!json_is_string(type) && !json_is_object(type)) {
            ice_fail(&e, 400, "schema field \"%.200s\" needs a \"type\"", name);
            goto out;
        }
        if (req && !json_is_null(req) && !json_is_boolean(req)) {
            ice_fail(&e, 400, "schema field \"%.200s\": \"required\" must be a boolean", name);
            goto out;
        }
        json_t *c = json_pack("{s:n,s:s,s:b,s:O}", "id", "name", name, "required",
                              json_is_true(req), "type", type);
        if (json_is_string(ice_get_str(f, "doc") ? json_object_get(f, "doc") : NULL))
            json_object_set(c, "doc", json_object_get(f, "doc"));
        json_array_append_new(nf, c);
    }
    if (!(out = ice_walk_schema(st, true, ICE_MAX_FORMAT_VERSION, &next, &map, &e))) goto out;
    /* "schema-id" right after "type", as Java writes it */
    json_t *o = json_pack("{s:s,s:i,s:O}", "type", "struct", "schema-id", 0, "fields",
                          json_object_get(out, "fields"));
    json_decref(out);
    out = o;
out:
    ice_idmap_free(&map);
    json_decref(st);
    return e.status ? NULL : out;
}

/* ---- validation of stored metadata ------------------------------------------------------ */

static int check_id_list(json_t *md, const char *arr, const char *idk, const char *cur,
                         bool required, ice_err_t *e)
{
    json_t *a = json_object_get(md, arr), *x;
    json_int_t id, c;
    size_t i;
    if (!a) return required ? ice_fail(e, 400, "metadata: missing \"%s\"", arr) : 0;
    if (!json_is_array(a) || json_array_size(a) == 0)
        return ice_fail(e, 400, "metadata: \"%s\" must be a non-empty array", arr);
    json_array_foreach(a, i, x)
        if (!json_is_object(x) || !ice_get_int(x, idk, &id))
            return ice_fail(e, 400, "metadata: every entry of \"%s\" needs an integer \"%s\"", arr, idk);
    if (!ice_get_int(md, cur, &c))
        return ice_fail(e, 400, "metadata: missing or non-integer \"%s\"", cur);
    if (!ice_find_by_id(a, idk, c))
        return ice_fail(e, 400, "metadata: \"%s\" %" JSON_INTEGER_FORMAT " is not in \"%s\"", cur, c, arr);
    return 0;
}

int fl_iceberg_validate_metadata(json_t *md, char *err, size_t errlen)
{
    ice_err_t e = { err, errlen, 0 };
    json_int_t fv, v;
    if (err && errlen) err[0] = 0;
    if (!json_is_object(md)) return ice_fail(&e, 400, "metadata must be a JSON object");
    if (!ice_get_int(md, "format-version", &fv) || fv < 1 || fv > ICE_MAX_FORMAT_VERSION)
        return ice_fail(&e, 400, "metadata: unsupported or missing \"format-version\"");
    if (fv >= 2 && !ice_get_str(md, "table-uuid")) return ice_fail(&e, 400, "metadata: missing \"table-uuid\"");
    if (json_object_get(md, "table-uuid") && !ice_get_str(md, "table-uuid"))
        return ice_fail(&e, 400, "metadata: \"table-uuid\" must be a string");
    if (!ice_get_str(md, "location")) return ice_fail(&e, 400, "metadata: missing \"location\"");
    if (!ice_get_int(md, "last-updated-ms", &v)) return ice_fail(&e, 400, "metadata: missing \"last-updated-ms\"");
    if (!ice_get_int(md, "last-column-id", &v)) return ice_fail(&e, 400, "metadata: missing \"last-column-id\"");
    if (fv >= 2 && !ice_get_int(md, "last-sequence-number", &v))
        return ice_fail(&e, 400, "metadata: missing \"last-sequence-number\"");
    if (fv >= 2 && !ice_get_int(md, "last-partition-id", &v))
        return ice_fail(&e, 400, "metadata: missing \"last-partition-id\"");
    if (fv >= 3 && !ice_get_int(md, "next-row-id", &v))
        return ice_fail(&e, 400, "metadata: missing \"next-row-id\"");
    if (fv >= 2 || json_object_get(md, "schemas")) {
        if (check_id_list(md, "schemas", "schema-id", "current-schema-id", true, &e)) return e.status;
    } else if (!json_is_object(json_object_get(md, "schema"))) {
        return ice_fail(&e, 400, "metadata: missing \"schema\"");
    }
    if (fv >= 2 || json_object_get(md, "partition-specs")) {
        if (check_id_list(md, "partition-specs", "spec-id", "default-spec-id", true, &e)) return e.status;
    } else if (!json_is_array(json_object_get(md, "partition-spec"))) {
        return ice_fail(&e, 400, "metadata: missing \"partition-spec\"");
    }
    if (check_id_list(md, "sort-orders", "order-id", "default-sort-order-id", fv >= 2, &e)) return e.status;
    json_t *props = json_object_get(md, "properties");
    if (props && ice_check_string_map(props, "metadata: properties", &e)) return e.status;
    json_t *snaps = json_object_get(md, "snapshots"), *x;
    size_t i;
    if (snaps && !json_is_array(snaps)) return ice_fail(&e, 400, "metadata: \"snapshots\" must be an array");
    json_array_foreach(snaps, i, x)
        if (!ice_get_int(x, "snapshot-id", &v) || !ice_get_int(x, "timestamp-ms", &v))
            return ice_fail(&e, 400, "metadata: snapshot %zu needs integer \"snapshot-id\" and \"timestamp-ms\"", i);
    json_t *cur = json_object_get(md, "current-snapshot-id");
    if (cur && !json_is_null(cur)) {
        if (!json_is_integer(cur)) return ice_fail(&e, 400, "metadata: \"current-snapshot-id\" must be an integer");
        v = json_integer_value(cur);
        if (v != -1 && !ice_find_by_id(snaps, "snapshot-id", v))
            return ice_fail(&e, 400, "metadata: current snapshot %" JSON_INTEGER_FORMAT " does not exist", v);
    }
    json_t *refs = json_object_get(md, "refs");
    if (refs) {
        const char *k;
        if (!json_is_object(refs)) return ice_fail(&e, 400, "metadata: \"refs\" must be an object");
        json_object_foreach(refs, k, x) {
            const char *t = ice_get_str(x, "type");
            if (!ice_get_int(x, "snapshot-id", &v) || !t)
                return ice_fail(&e, 400, "metadata: ref \"%.200s\" needs \"snapshot-id\" and \"type\"", k);
            if (!ice_find_by_id(snaps, "snapshot-id", v))
                return ice_fail(&e, 400, "metadata: ref \"%.200s\" names a missing snapshot", k);
        }
    }
    static const char *const lists[] = { "snapshot-log", "metadata-log", "statistics",
                                         "partition-statistics", "encryption-keys" };
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
        json_t *l = json_object_get(md, lists[k]), *y;
        if (!l || json_is_null(l)) continue;
        if (!json_is_array(l)) return ice_fail(&e, 400, "metadata: \"%s\" must be an array", lists[k]);
        json_array_foreach(l, i, y)
            if (!json_is_object(y)) return ice_fail(&e, 400, "metadata: \"%s\" entries must be objects", lists[k]);
    }
    return 0;
}
