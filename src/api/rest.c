/* Iceberg REST catalog (apache/iceberg open-api/rest-catalog-open-api.yaml) over the
 * catalog store, S3 Tables style: the prefix is the URL-encoded table-bucket ARN and
 * namespaces are single-level.
 *
 * Routing is on the raw path: "/v1/config", else "/v1/{prefix}/..." where the prefix
 * segment (it contains %2F) is cut at the first '/', decoded once and parsed as an
 * ARN; the rest is matched segment by segment against the static route table, which
 * also generates the "endpoints" list of /v1/config.
 *
 * Commits: load the row, check requirements against the metadata at its pointer,
 * apply the updates, write the next metadata file, then compare-and-swap the pointer
 * on the row's version token. Commits to one table are serialised in this process by
 * a striped mutex; a lost swap (another process, or the S3 Tables API) re-runs the
 * check and apply. 409 only for a failed requirement; 5xx only when the swap's
 * outcome is unknown.
 *
 * Parsed metadata and its serialisation are cached by metadata location (LRU,
 * refcounted entries, one lock), so loadTable of an unchanged table does one catalog
 * row read and no file read or JSON work. Cached json_t trees are never modified. */
#include "api/rest.h"
#include "catalog/tablesvc.h"
#include "base/limits.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/query.h"
#include "base/time.h"
#include "base/uuid.h"
#include "iceberg/metadata.h"
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WAREHOUSE_SUFFIX "--table-s3"
#define MAX_SEGS 8
#define MAX_PAGE 1000
#define COMMIT_ATTEMPTS 8
#define ERRLEN 512
#define MCACHE_N 256
#define MCACHE_BYTES (256u * 1024 * 1024)
/* an entry holds the text and the parsed tree, which jansson makes several times larger */
#define MCACHE_COST(len) ((len) * 8)
#define STRIPES 64

typedef struct rctx {
    fl_api_req_t *r;
    const fl_catalog_cfg_t *cfg;
    fl_tablesvc_t *svc;
    const fl_tablesvc_cfg_t *sc;  /* the service's stores and ARN scope */
    bool head;
    char bucket[64];
    char ns[FL_NAME_MAX];
    char name[FL_NAME_MAX];
    json_t *body;          /* parsed request body (owned) */
    fl_query_t q;          /* decoded query parameters */
} rctx_t;

/* ------------------------------------------------------------------ */
/* responses                                                           */

static void send_body(rctx_t *x, int status, const char *text, size_t len)
{
    fl_http_resp_status(x->r->c, status);
    fl_http_resp_header(x->r->c, "Content-Type", "application/json");
    fl_http_resp_send(x->r->c, text, len);
}

static void send_json(rctx_t *x, int status, json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT);
    if (!text) {
        fl_rest_error(x->r, 500, "ServiceFailureException", "Could not render the response.");
        return;
    }
    send_body(x, status, text, strlen(text));
    free(text);
}

static void send_204(rctx_t *x)
{
    fl_http_resp_status(x->r->c, 204);
    fl_http_resp_send(x->r->c, NULL, 0);
}

void fl_rest_error(fl_api_req_t *r, int status, const char *type, const char *msg)
{
    json_t *doc = json_pack("{s:{s:s,s:s,s:i}}", "error", "message", msg ? msg : "", "type",
                            type ? type : "RESTException", "code", status);
    if (!doc) /* a message cut inside a UTF-8 sequence: keep the shape, drop the text */
        doc = json_pack("{s:{s:s,s:s,s:i}}", "error", "message", "The request was rejected.", "type",
                        type ? type : "RESTException", "code", status);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    fl_http_resp_status(r->c, status);
    fl_http_resp_header(r->c, "Content-Type", "application/json");
    if (text) fl_http_resp_send(r->c, text, strlen(text));
    else fl_http_resp_send(r->c, "{}", 2);
    free(text);
    json_decref(doc);
}

static void err(rctx_t *x, int status, const char *type, const char *msg)
{
    fl_rest_error(x->r, status, type, msg);
}

/* ------------------------------------------------------------------ */
/* metadata cache                                                      */

typedef struct ment {
    char *loc;
    uint64_t h;
    json_t *meta;        /* never modified once cached */
    char *text;          /* compact serialisation of meta */
    size_t len;
    int refs;            /* holders outside the table */
    bool live;           /* still in the table */
    uint64_t tick;
} ment_t;

static pthread_mutex_t mc_lock = PTHREAD_MUTEX_INITIALIZER;
static ment_t *mc[MCACHE_N];
static uint64_t mc_tick;
static size_t mc_bytes;

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void ment_free(ment_t *e)
{
    json_decref(e->meta);
    free(e->text);
    free(e->loc);
    free(e);
}

/* Takes the entry out of the table (caller holds mc_lock). */
static void mc_drop_slot(int i)
{
    ment_t *e = mc[i];
    mc[i] = NULL;
    mc_bytes -= MCACHE_COST(e->len);
    e->live = false;
    if (e->refs == 0) ment_free(e);
}

static ment_t *mc_get(const char *loc)
{
    uint64_t h = fnv(loc);
    ment_t *found = NULL;
    pthread_mutex_lock(&mc_lock);
    for (int i = 0; i < MCACHE_N; i++) {
        ment_t *e = mc[i];
        if (e && e->h == h && !strcmp(e->loc, loc)) {
            e->refs++;
            e->tick = ++mc_tick;
            found = e;
            break;
        }
    }
    pthread_mutex_unlock(&mc_lock);
    return found;
}

/* Drops loc's entry, if cached: a table's replaced version is rarely read again. */
static void mc_forget(const char *loc)
{
    uint64_t h = fnv(loc);
    pthread_mutex_lock(&mc_lock);
    for (int i = 0; i < MCACHE_N; i++)
        if (mc[i] && mc[i]->h == h && !strcmp(mc[i]->loc, loc)) {
            mc_drop_slot(i);
            break;
        }
    pthread_mutex_unlock(&mc_lock);
}

static void mc_release(ment_t *e)
{
    if (!e) return;
    pthread_mutex_lock(&mc_lock);
    bool dead = --e->refs == 0 && !e->live;
    pthread_mutex_unlock(&mc_lock);
    if (dead) ment_free(e);
}

/* Caches meta (a reference is taken) with its serialisation text (owned from here;
 * NULL = serialise now) under loc; returns the entry held once by the caller, or
 * NULL if meta cannot be serialised. */
static ment_t *mc_put_text(const char *loc, json_t *meta, char *text)
{
    if (!text) text = json_dumps(meta, JSON_COMPACT);
    if (!text) return NULL;
    ment_t *e = fl_calloc(1, sizeof *e);
    e->loc = fl_strdup(loc);
    e->h = fnv(loc);
    e->meta = json_incref(meta);
    e->text = text;
    e->len = strlen(text);
    e->refs = 1;
    e->live = true;
    pthread_mutex_lock(&mc_lock);
    int slot = -1;
    for (int i = 0; i < MCACHE_N; i++) {
        if (mc[i] && mc[i]->h == e->h && !strcmp(mc[i]->loc, loc)) mc_drop_slot(i);
        if (!mc[i] && slot < 0) slot = i;
    }
    while (slot < 0 || mc_bytes + MCACHE_COST(e->len) > MCACHE_BYTES) {
        int lru = -1;
        for (int i = 0; i < MCACHE_N; i++)
            if (mc[i] && (lru < 0 || mc[i]->tick < mc[lru]->tick)) lru = i;
        if (lru < 0) break;
        mc_drop_slot(lru);
        if (slot < 0) slot = lru;
    }
    if (slot >= 0 && MCACHE_COST(e->len) <= MCACHE_BYTES) {
        e->tick = ++mc_tick;
        mc[slot] = e;
        mc_bytes += MCACHE_COST(e->len);
    } else {
        e->live = false;
    }
    pthread_mutex_unlock(&mc_lock);
    return e;
}

static ment_t *mc_put(const char *loc, json_t *meta) { return mc_put_text(loc, meta, NULL); }

/* True when the row t was read from no longer has its name: dropped (and maybe being
 * purged) or renamed since. Its files may then be gone: a 404, not a 500. */
static bool row_gone(rctx_t *x, const fl_table_t *t)
{
    fl_table_t now;
    fl_err_t e = fl_catalog_table_get(x->sc->cat, x->bucket, t->ns, t->name, &now);
    return e == FL_ERR_NOT_FOUND || (!e && strcmp(now.id, t->id) != 0);
}

static void err_gone(rctx_t *x, const fl_table_t *t)
{
    if (!strcmp(t->kind, "view")) err(x, 404, "NoSuchViewException", "The view was dropped.");
    else err(x, 404, "NoSuchTableException", "The table was dropped.");
}

/* The metadata at t's pointer, held (release with mc_release). Renders the error. */
static ment_t *load_meta(rctx_t *x, const fl_table_t *t, bool commit)
{
    if (!t->metadata_location[0]) {
        err(x, 400, "BadRequestException", "The specified metadata location is not valid.");
        return NULL;
    }
    ment_t *e = mc_get(t->metadata_location);
    if (e) return e;
    json_t *meta = NULL;
    fl_err_t rc = fl_tablesvc_read_metadata(x->svc, t->metadata_location, &meta);
    if (rc) {
        if (rc == FL_ERR_NOT_FOUND && row_gone(x, t)) {
            err_gone(x, t);
            return NULL;
        }
        fl_warn("rest: cannot read %s: %s", t->metadata_location, fl_err_str(rc));
        if (commit) err(x, 500, "ServiceFailureException", "The table's metadata file could not be read.");
        else err(x, 500, "ServiceFailureException", "The table's metadata file could not be read.");
        return NULL;
    }
    e = mc_put(t->metadata_location, meta);
    json_decref(meta);
    if (!e) err(x, 500, "ServiceFailureException", "Could not render the table's metadata.");
    return e;
}

/* ------------------------------------------------------------------ */
/* per-table commit serialisation                                       */

static pthread_mutex_t stripes[STRIPES];
static pthread_once_t stripes_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t ns_props_lock = PTHREAD_MUTEX_INITIALIZER;

static void stripes_init(void)
{
    for (int i = 0; i < STRIPES; i++) pthread_mutex_init(&stripes[i], NULL);
}

static int stripe_of(const char *bucket, const char *ns, const char *name)
{
    uint64_t h = fnv(bucket) * 31 + fnv(ns) * 17 + fnv(name);
    return (int)(h % STRIPES);
}

/* ------------------------------------------------------------------ */
/* request helpers                                                      */

/* Query parameter `name`, decoded, copied into out (reset first). */
static bool qparam(const rctx_t *x, const char *name, fl_buf_t *out)
{
    const char *v = fl_query_get(&x->q, name);
    if (!v) return false;
    fl_buf_reset(out);
    return fl_buf_add(out, v, strlen(v) + 1) == FL_OK && (out->len--, true);
}

/* S3 Tables naming: 1-255 of [a-z0-9_], starting and ending with a letter or digit. */
static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 255) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
    }
    return s[0] != '_' && s[n - 1] != '_';
}

static bool parse_body(rctx_t *x)
{
    json_error_t je;
    x->body = json_loadb(x->r->body, x->r->body_len, JSON_REJECT_DUPLICATES, &je);
    if (!x->body || !json_is_object(x->body)) {
        json_decref(x->body);
        x->body = NULL;
        char m[300];
        snprintf(m, sizeof m, "Malformed request body: %s",
                 !x->r->body_len ? "empty body" : je.text[0] ? je.text : "expected a JSON object");
        err(x, 400, "BadRequestException", m);
        return false;
    }
    return true;
}

/* {"namespace":["a"],"name":"t"} -> ns, name. Single level only: *multi is set (and
 * false returned) for a well-formed identifier in a multi-level namespace, which
 * names nothing floe has (Iceberg clients need a 404 for it, e.g. to fall back to
 * metadata tables); other malformed identifiers are a 400 explained by *why. */
static bool parse_ident(json_t *id, char *ns, char *name, const char **why, bool *multi)
{
    json_t *n = json_object_get(id, "namespace"), *t = json_object_get(id, "name");
    size_t i;
    json_t *lv;
    *multi = false;
    if (!json_is_object(id) || !json_is_array(n) || !json_is_string(t)) {
        *why = "An identifier needs a namespace array and a name.";
        return false;
    }
    json_array_foreach(n, i, lv) if (!json_is_string(lv)) {
        *why = "An identifier's namespace is an array of strings.";
        return false;
    }
    if (json_array_size(n) != 1) {
        *multi = json_array_size(n) > 1;
        *why = "Only single-level namespaces are supported.";
        return false;
    }
    const char *a = json_string_value(json_array_get(n, 0)), *b = json_string_value(t);
    if (strlen(a) >= FL_NAME_MAX || strlen(b) >= FL_NAME_MAX || !a[0] || !b[0]) {
        *why = "Invalid identifier.";
        return false;
    }
    strcpy(ns, a);
    strcpy(name, b);
    return true;
}

/* A JSON object of string values (NULL/absent -> empty object). New reference or NULL. */
static json_t *string_map(json_t *v)
{
    if (!v || json_is_null(v)) return json_object();
    if (!json_is_object(v)) return NULL;
    const char *k;
    json_t *val;
    json_object_foreach(v, k, val) if (!json_is_string(val)) return NULL;
    return json_incref(v);
}

static json_t *table_config(const rctx_t *x)
{
    const fl_catalog_cfg_t *cfg = x->cfg;
    const char *region = x->sc->scope.region ? x->sc->scope.region : "us-east-1";
    json_t *c = json_object();
    if (cfg->s3_endpoint) json_object_set_new(c, "s3.endpoint", json_string(cfg->s3_endpoint));
    json_object_set_new(c, "s3.path-style-access", json_string("true"));
    json_object_set_new(c, "client.region", json_string(region));
    json_object_set_new(c, "s3.region", json_string(region));
    return c;
}

/* {"metadata-location":loc,"metadata":<text>[,"config":{...}]} without re-serialising text. */
static void send_load_result(rctx_t *x, const char *loc, const char *text, size_t len, bool view, bool config)
{
    fl_buf_t b;
    fl_buf_init(&b, 0);
    json_t *l = loc ? json_string(loc) : json_null();
    char *ls = json_dumps(l, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(l);
    char *cs = NULL;
    if (config) {
        json_t *c = view ? json_object() : table_config(x);
        cs = json_dumps(c, JSON_COMPACT);
        json_decref(c);
    }
    fl_err_t e = fl_buf_adds(&b, "{\"metadata-location\":");
    if (!e) e = fl_buf_adds(&b, ls ? ls : "null");
    if (!e) e = fl_buf_adds(&b, ",\"metadata\":");
    if (!e) e = fl_buf_add(&b, text, len);
    if (!e && cs) {
        e = fl_buf_adds(&b, ",\"config\":");
        if (!e) e = fl_buf_adds(&b, cs);
    }
    if (!e) e = fl_buf_adds(&b, "}");
    if (e) err(x, 500, "ServiceFailureException", "Could not render the response.");
    else send_body(x, 200, b.ptr, b.len);
    free(ls);
    free(cs);
    fl_buf_free(&b);
}

/* Row of a table (kind "table") or view; renders 404 when absent. */
static bool get_row(rctx_t *x, const char *ns, const char *name, bool view, fl_table_t *t, bool render)
{
    fl_err_t e = fl_catalog_table_get(x->sc->cat, x->bucket, ns, name, t);
    if (!e && !strcmp(t->kind, view ? "view" : "table")) return true;
    if (render) {
        if (e && e != FL_ERR_NOT_FOUND) err(x, 500, "ServiceFailureException", fl_err_str(e));
        else if (view) err(x, 404, "NoSuchViewException", "The specified view does not exist.");
        else err(x, 404, "NoSuchTableException", "The specified table does not exist.");
    }
    return false;
}

static bool ns_exists(rctx_t *x, const char *ns)
{
    fl_namespace_t n = { 0 };
    fl_err_t e = fl_catalog_ns_get(x->sc->cat, x->bucket, ns, &n);
    fl_namespace_free(&n);
    return e == FL_OK;
}

/* Warehouse bucket "{uuid}--table-s3" named by an s3:// location (id_out: the uuid). */
static bool warehouse_of(const char *loc, char *wb, char *id_out)
{
    if (strncmp(loc, "s3://", 5) != 0) return false;
    const char *b = loc + 5;
    size_t n = strcspn(b, "/");
    size_t sl = strlen(WAREHOUSE_SUFFIX);
    if (n != 36 + sl || strncmp(b + 36, WAREHOUSE_SUFFIX, sl) != 0) return false;
    memcpy(wb, b, n);
    wb[n] = 0;
    memcpy(id_out, b, 36);
    id_out[36] = 0;
    for (int i = 0; i < 36; i++) {
        char c = id_out[i];
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

/* A new row's fixed fields for a table or view with a given id/warehouse. */
static void row_init(rctx_t *x, fl_table_t *t, const char *ns, const char *name, const char *id, bool view)
{
    memset(t, 0, sizeof *t);
    snprintf(t->bucket, sizeof t->bucket, "%s", x->bucket);
    snprintf(t->ns, sizeof t->ns, "%s", ns);
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->id, sizeof t->id, "%s", id);
    snprintf(t->warehouse, sizeof t->warehouse, "s3://%s" WAREHOUSE_SUFFIX, id);
    snprintf(t->type, sizeof t->type, "customer");
    snprintf(t->format, sizeof t->format, "ICEBERG");
    snprintf(t->kind, sizeof t->kind, "%s", view ? "view" : "table");
    snprintf(t->owner, sizeof t->owner, "%s", x->sc->scope.account ? x->sc->scope.account : "");
    snprintf(t->created_by, sizeof t->created_by, "%s", x->r->principal);
    snprintf(t->modified_by, sizeof t->modified_by, "%s", x->r->principal);
    fl_arn_table(&x->sc->scope, x->bucket, id, t->arn);
}

/* Deletes a metadata file and its (otherwise empty) warehouse bucket after a failed create. */
static void discard_warehouse(rctx_t *x, const char *wb, const char *loc)
{
    if (loc && loc[0]) {
        const char *key = loc + 5 + strlen(wb) + 1;
        if (strlen(loc) > 6 + strlen(wb)) fl_store_delete(x->sc->store, wb, key, strlen(key), NULL);
    }
    fl_store_bucket_delete(x->sc->store, wb);
}

/* ------------------------------------------------------------------ */
/* config                                                               */

typedef void (*route_fn)(rctx_t *x);
typedef struct route {
    const char *method;
    const char *pattern;   /* below /v1/{prefix}/; {x} matches one segment */
    route_fn fn;
    const char *nf_type;   /* 404 type when the table bucket is unknown */
} route_t;

/* ------------------------------------------------------------------ */
/* namespaces                                                           */

/* pageToken / pageSize: max (0 = all) and after (NULL = start). false after rendering 400. */
static bool paging(rctx_t *x, fl_buf_t *tok, int *max, const char **after)
{
    fl_buf_t ps;
    fl_buf_init(&ps, 64);
    *max = 0;
    *after = NULL;
    if (qparam(x, "pageSize", &ps)) {
        char *end = NULL;
        long v = ps.ptr ? strtol(ps.ptr, &end, 10) : 0;
        if (!ps.ptr || !ps.ptr[0] || *end || v < 1) {
            fl_buf_free(&ps);
            err(x, 400, "BadRequestException", "pageSize must be a positive integer.");
            return false;
        }
        *max = v > MAX_PAGE ? MAX_PAGE : (int)v;
    }
    fl_buf_free(&ps);
    if (qparam(x, "pageToken", tok) && tok->ptr && tok->ptr[0]) {
        if (tok->len >= FL_NAME_MAX) {
            err(x, 400, "BadRequestException", "Invalid pageToken.");
            return false;
        }
        *after = tok->ptr;
    }
    return true;
}

static void h_list_ns(rctx_t *x)
{
    fl_http_set_op(x->r->c, "listNamespaces");
    fl_buf_t parent, tok;
    fl_buf_init(&parent, 4096);
    fl_buf_init(&tok, 4096);
    int max;
    const char *after;
    json_t *arr = NULL;
    if (!paging(x, &tok, &max, &after)) goto out;
    if (qparam(x, "parent", &parent) && parent.ptr && parent.ptr[0]) {
        /* single level: a namespace has no children */
        if (strchr(parent.ptr, 0x1f) || !ns_exists(x, parent.ptr)) {
            err(x, 404, "NoSuchNamespaceException", "The specified namespace does not exist.");
            goto out;
        }
        json_t *doc = json_pack("{s:[],s:n}", "namespaces", "next-page-token");
        send_json(x, 200, doc);
        json_decref(doc);
        goto out;
    }
    arr = json_array();
    char last[FL_NAME_MAX] = "";
    bool more = false;
    int want = max ? max : MAX_PAGE;
    for (;;) {
        fl_namespace_t *v = NULL;
        size_t n = 0;
        fl_err_t e = fl_catalog_ns_list(x->sc->cat, x->bucket, NULL, after, want, &v, &n, &more);
        if (e) {
            err(x, 500, "ServiceFailureException", fl_err_str(e));
            goto out;
        }
        for (size_t i = 0; i < n; i++) json_array_append_new(arr, json_pack("[s]", v[i].name));
        if (n) snprintf(last, sizeof last, "%s", v[n - 1].name);
        fl_namespaces_free(v, n);
        if (max || !more || !n) break;
        after = last;
    }
    json_t *doc = json_pack("{s:O,s:o}", "namespaces", arr, "next-page-token",
                            max && more ? json_string(last) : json_null());
    send_json(x, 200, doc);
    json_decref(doc);
out:
    json_decref(arr);
    fl_buf_free(&parent);
    fl_buf_free(&tok);
}

static void h_create_ns(rctx_t *x)
{
    fl_http_set_op(x->r->c, "createNamespace");
    if (!parse_body(x)) return;
    json_t *nsa = json_object_get(x->body, "namespace");
    if (!json_is_array(nsa) || json_array_size(nsa) < 1 || !json_is_string(json_array_get(nsa, 0))) {
        err(x, 400, "BadRequestException", "namespace must be a non-empty array of strings.");
        return;
    }
    if (json_array_size(nsa) > 1) {
        err(x, 400, "BadRequestException", "Only single-level namespaces are supported.");
        return;
    }
    const char *name = json_string_value(json_array_get(nsa, 0));
    if (!name_ok(name)) {
        err(x, 400, "BadRequestException",
            "Namespace names are 1-255 lowercase letters, digits and underscores, starting and ending with a letter or digit.");
        return;
    }
    json_t *props = string_map(json_object_get(x->body, "properties"));
    if (!props) {
        err(x, 400, "BadRequestException", "properties must be an object of strings.");
        return;
    }
    fl_namespace_t ns;
    memset(&ns, 0, sizeof ns);
    snprintf(ns.bucket, sizeof ns.bucket, "%s", x->bucket);
    snprintf(ns.name, sizeof ns.name, "%s", name);
    snprintf(ns.owner, sizeof ns.owner, "%s", x->sc->scope.account ? x->sc->scope.account : "");
    snprintf(ns.created_by, sizeof ns.created_by, "%s", x->r->principal);
    ns.properties = json_dumps(props, JSON_COMPACT);
    fl_err_t e = fl_catalog_ns_create(x->sc->cat, &ns);
    if (e == FL_ERR_EXISTS) err(x, 409, "AlreadyExistsException", "The namespace already exists.");
    else if (e == FL_ERR_NO_BUCKET) err(x, 404, "NoSuchNamespaceException", "The specified table bucket does not exist.");
    else if (e) err(x, 500, "ServiceFailureException", fl_err_str(e));
    else {
        json_t *doc = json_pack("{s:[s],s:O}", "namespace", name, "properties", props);
        send_json(x, 200, doc);
        json_decref(doc);
    }
    fl_namespace_free(&ns);
    json_decref(props);
}

static bool load_ns(rctx_t *x, fl_namespace_t *n)
{
    fl_err_t e = fl_catalog_ns_get(x->sc->cat, x->bucket, x->ns, n);
    if (e == FL_OK) return true;
    if (e == FL_ERR_NOT_FOUND || e == FL_ERR_NO_BUCKET)
        err(x, 404, "NoSuchNamespaceException", "The specified namespace does not exist.");
    else err(x, 500, "ServiceFailureException", fl_err_str(e));
    return false;
}

static json_t *ns_props(const fl_namespace_t *n)
{
    json_t *p = n->properties ? json_loads(n->properties, 0, NULL) : NULL;
    if (!json_is_object(p)) {
        json_decref(p);
        p = json_object();
    }
    return p;
}

static void h_load_ns(rctx_t *x)
{
    fl_http_set_op(x->r->c, "loadNamespaceMetadata");
    fl_namespace_t n = { 0 };
    if (!load_ns(x, &n)) return;
    json_t *doc = json_pack("{s:[s],s:o}", "namespace", n.name, "properties", ns_props(&n));
    send_json(x, 200, doc);
    json_decref(doc);
    fl_namespace_free(&n);
}

static void h_head_ns(rctx_t *x)
{
    fl_http_set_op(x->r->c, "namespaceExists");
    fl_namespace_t n = { 0 };
    if (!load_ns(x, &n)) return;
    fl_namespace_free(&n);
    send_204(x);
}

static void h_drop_ns(rctx_t *x)
{
    fl_http_set_op(x->r->c, "dropNamespace");
    fl_err_t e = fl_catalog_ns_delete(x->sc->cat, x->bucket, x->ns);
    if (e == FL_ERR_NOT_EMPTY) err(x, 409, "NamespaceNotEmptyException", "The namespace is not empty.");
    else if (e == FL_ERR_NOT_FOUND || e == FL_ERR_NO_BUCKET)
        err(x, 404, "NoSuchNamespaceException", "The specified namespace does not exist.");
    else if (e) err(x, 500, "ServiceFailureException", fl_err_str(e));
    else send_204(x);
}

static void h_ns_props(rctx_t *x)
{
    fl_http_set_op(x->r->c, "updateProperties");
    if (!parse_body(x)) return;
    json_t *rem = json_object_get(x->body, "removals");
    json_t *upd = string_map(json_object_get(x->body, "updates"));
    if (!upd || (rem && !json_is_null(rem) && !json_is_array(rem))) {
        json_decref(upd);
        err(x, 400, "BadRequestException", "updates must be an object of strings and removals an array of strings.");
        return;
    }
    size_t i;
    json_t *v;
    if (json_is_array(rem)) {
        json_array_foreach(rem, i, v) {
            if (!json_is_string(v)) {
                json_decref(upd);
                err(x, 400, "BadRequestException", "removals must be an array of strings.");
                return;
            }
            if (json_object_get(upd, json_string_value(v))) {
                json_decref(upd);
                err(x, 422, "UnprocessableEntityException", "A property key is both updated and removed.");
                return;
            }
        }
    }
    pthread_mutex_lock(&ns_props_lock);
    fl_namespace_t n = { 0 };
    if (!load_ns(x, &n)) {
        pthread_mutex_unlock(&ns_props_lock);
        json_decref(upd);
        return;
    }
    json_t *props = ns_props(&n);
    json_t *updated = json_array(), *removed = json_array(), *missing = json_array();
    const char *k;
    json_object_foreach(upd, k, v) {
        json_object_set(props, k, v);
        json_array_append_new(updated, json_string(k));
    }
    if (json_is_array(rem)) {
        json_array_foreach(rem, i, v) {
            const char *key = json_string_value(v);
            if (json_object_get(props, key)) {
                json_object_del(props, key);
                json_array_append_new(removed, json_string(key));
            } else {
                json_array_append_new(missing, json_string(key));
            }
        }
    }
    char *text = json_dumps(props, JSON_COMPACT);
    fl_err_t e = text ? fl_catalog_ns_set_properties(x->sc->cat, x->bucket, x->ns, text) : FL_ERR_NOMEM;
    pthread_mutex_unlock(&ns_props_lock);
    if (e == FL_ERR_NOT_FOUND) err(x, 404, "NoSuchNamespaceException", "The specified namespace does not exist.");
    else if (e) err(x, 500, "ServiceFailureException", fl_err_str(e));
    else {
        json_t *doc = json_pack("{s:O,s:O,s:O}", "updated", updated, "removed", removed, "missing", missing);
        send_json(x, 200, doc);
        json_decref(doc);
    }
    free(text);
    json_decref(props);
    json_decref(updated);
    json_decref(removed);
    json_decref(missing);
    json_decref(upd);
    fl_namespace_free(&n);
}

/* ------------------------------------------------------------------ */
/* listing tables and views                                             */

static void list_rows(rctx_t *x, const char *kind)
{
    fl_buf_t tok;
    fl_buf_init(&tok, 4096);
    int max;
    const char *after;
    json_t *arr = NULL;
    if (!paging(x, &tok, &max, &after)) goto out;
    if (!ns_exists(x, x->ns)) {
        err(x, 404, "NoSuchNamespaceException", "The specified namespace does not exist.");
        goto out;
    }
    arr = json_array();
    char last[FL_NAME_MAX] = "";
    bool more = false;
    int want = max ? max : MAX_PAGE;
    for (;;) {
        fl_table_t *v = NULL;
        size_t n = 0;
        fl_err_t e = fl_catalog_table_list(x->sc->cat, x->bucket, x->ns, kind, NULL, after ? x->ns : NULL,
                                           after, want, &v, &n, &more);
        if (e) {
            err(x, 500, "ServiceFailureException", fl_err_str(e));
            goto out;
        }
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, json_pack("{s:[s],s:s}", "namespace", v[i].ns, "name", v[i].name));
        if (n) snprintf(last, sizeof last, "%s", v[n - 1].name);
        free(v);
        if (max || !more || !n) break;
        after = last;
    }
    json_t *doc = json_pack("{s:O,s:o}", "identifiers", arr, "next-page-token",
                            max && more ? json_string(last) : json_null());
    send_json(x, 200, doc);
    json_decref(doc);
out:
    json_decref(arr);
    fl_buf_free(&tok);
}

static void h_list_tables(rctx_t *x)
{
    fl_http_set_op(x->r->c, "listTables");
    list_rows(x, "table");
}

static void h_list_views(rctx_t *x)
{
    fl_http_set_op(x->r->c, "listViews");
    list_rows(x, "view");
}

/* ------------------------------------------------------------------ */
/* create / register / load / exists / drop                              */

/* Checks that ns exists and name is free and valid; renders the error otherwise. */
static bool create_precheck(rctx_t *x, const char *name)
{
    if (!name_ok(name)) {
        err(x, 400, "BadRequestException",
            "Names are 1-255 lowercase letters, digits and underscores, starting and ending with a letter or digit.");
        return false;
    }
    if (!ns_exists(x, x->ns)) {
        err(x, 404, "NoSuchNamespaceException", "The specified namespace does not exist.");
        return false;
    }
    fl_table_t t;
    if (fl_catalog_table_get(x->sc->cat, x->bucket, x->ns, name, &t) == FL_OK) {
        err(x, 409, "AlreadyExistsException", "A table or view with this name already exists.");
        return false;
    }
    return true;
}

static void h_create_table(rctx_t *x)
{
    fl_http_set_op(x->r->c, "createTable");
    if (!parse_body(x)) return;
    json_t *nm = json_object_get(x->body, "name");
    if (!json_is_string(nm) || !json_is_object(json_object_get(x->body, "schema"))) {
        err(x, 400, "BadRequestException", "createTable needs a name and a schema.");
        return;
    }
    json_t *sc = json_object_get(x->body, "stage-create");
    if (sc && !json_is_boolean(sc) && !json_is_null(sc)) {
        err(x, 400, "BadRequestException", "stage-create must be a boolean.");
        return;
    }
    const char *name = json_string_value(nm);
    if (!create_precheck(x, name)) return;
    int status = 0;
    char emsg[ERRLEN] = "";
    if (json_is_true(sc)) {
        /* Staged: nothing is recorded; only the (empty) warehouse bucket is made so the
         * client can write data before its assert-create commit. */
        char id[37], wb[64], loc[FL_LOC_MAX];
        fl_uuid4(id);
        snprintf(wb, sizeof wb, "%s" WAREHOUSE_SUFFIX, id);
        snprintf(loc, sizeof loc, "s3://%s", wb);
        json_t *meta = fl_iceberg_new_metadata(x->body, loc, &status, emsg, sizeof emsg);
        if (!meta) {
            err(x, status == 409 ? 409 : 400, status == 409 ? "AlreadyExistsException" : "BadRequestException", emsg);
            return;
        }
        fl_err_t e = fl_store_bucket_create(x->sc->store, wb);
        if (e) {
            json_decref(meta);
            err(x, 500, "ServiceFailureException", "Could not create the table's warehouse.");
            return;
        }
        char *text = json_dumps(meta, JSON_COMPACT);
        if (text) send_load_result(x, NULL, text, strlen(text), false, true);
        else err(x, 500, "ServiceFailureException", "Could not render the metadata.");
        free(text);
        json_decref(meta);
        return;
    }
    json_t *meta = fl_iceberg_new_metadata(x->body, "s3://pending", &status, emsg, sizeof emsg);
    if (!meta) {
        err(x, 400, "BadRequestException", emsg[0] ? emsg : "Invalid createTable request.");
        return;
    }
    fl_table_t t;
    const char *why = NULL;
    fl_err_t e = fl_tablesvc_create(x->svc, x->bucket, x->ns, name, x->r->principal, meta, &t, &why);
    if (e == FL_ERR_EXISTS) err(x, 409, "AlreadyExistsException", why ? why : "The table already exists.");
    else if (e == FL_ERR_NOT_FOUND || e == FL_ERR_NO_BUCKET)
        err(x, 404, "NoSuchNamespaceException", why ? why : "The specified namespace does not exist.");
    else if (e) err(x, 500, "ServiceFailureException", why ? why : fl_err_str(e));
    else {
        ment_t *m = mc_put(t.metadata_location, meta);
        if (m) send_load_result(x, t.metadata_location, m->text, m->len, false, true);
        else err(x, 500, "ServiceFailureException", "Could not render the metadata.");
        mc_release(m);
    }
    json_decref(meta);
}

/* snapshots=refs: only snapshots that a branch or tag points at. */
static void send_refs_only(rctx_t *x, const char *loc, json_t *meta)
{
    json_t *copy = json_copy(meta);
    json_t *snaps = json_object_get(meta, "snapshots"), *refs = json_object_get(meta, "refs");
    json_t *keep = json_array();
    size_t i;
    json_t *s;
    json_array_foreach(snaps, i, s) {
        json_t *sid = json_object_get(s, "snapshot-id");
        const char *k;
        json_t *ref;
        bool used = false;
        json_object_foreach(refs, k, ref) {
            json_t *rid = json_object_get(ref, "snapshot-id");
            if (json_is_integer(rid) && json_is_integer(sid) && json_integer_value(rid) == json_integer_value(sid))
                used = true;
        }
        if (used) json_array_append(keep, s);
    }
    if (snaps) json_object_set(copy, "snapshots", keep);
    char *text = json_dumps(copy, JSON_COMPACT);
    if (text) send_load_result(x, loc, text, strlen(text), false, true);
    else err(x, 500, "ServiceFailureException", "Could not render the metadata.");
    free(text);
    json_decref(keep);
    json_decref(copy);
}

static void h_load_table(rctx_t *x)
{
    fl_http_set_op(x->r->c, "loadTable");
    fl_buf_t mode;
    fl_buf_init(&mode, 64);
    bool refs = false;
    if (qparam(x, "snapshots", &mode) && mode.ptr) {
        if (!strcasecmp(mode.ptr, "refs")) refs = true;
        else if (strcasecmp(mode.ptr, "all") != 0) {
            fl_buf_free(&mode);
            err(x, 400, "BadRequestException", "snapshots must be all or refs.");
            return;
        }
    }
    fl_buf_free(&mode);
    fl_table_t t;
    if (!get_row(x, x->ns, x->name, false, &t, true)) return;
    ment_t *m = load_meta(x, &t, false);
    if (!m) return;
    if (refs) send_refs_only(x, t.metadata_location, m->meta);
    else send_load_result(x, t.metadata_location, m->text, m->len, false, true);
    mc_release(m);
}

static void h_head_table(rctx_t *x)
{
    fl_http_set_op(x->r->c, "tableExists");
    fl_table_t t;
    if (get_row(x, x->ns, x->name, false, &t, true)) send_204(x);
}

static void h_drop_table(rctx_t *x)
{
    fl_http_set_op(x->r->c, "dropTable");
    fl_buf_t p;
    fl_buf_init(&p, 64);
    bool purge = qparam(x, "purgeRequested", &p) && p.ptr && !strcasecmp(p.ptr, "true");
    fl_buf_free(&p);
    fl_table_t t;
    pthread_once(&stripes_once, stripes_init);
    pthread_mutex_t *mu = &stripes[stripe_of(x->bucket, x->ns, x->name)];
    pthread_mutex_lock(mu);
    /* the drop deletes the row read here (by id) and purges only its warehouse */
    bool found = get_row(x, x->ns, x->name, false, &t, true);
    fl_err_t e = found ? fl_tablesvc_drop(x->svc, &t, purge, NULL) : FL_OK;
    pthread_mutex_unlock(mu);
    if (!found) return; /* get_row rendered the 404 */
    if (e == FL_ERR_NOT_FOUND) err(x, 404, "NoSuchTableException", "The specified table does not exist.");
    else if (e) err(x, 500, "ServiceFailureException", fl_err_str(e));
    else send_204(x);
}

static void h_metrics(rctx_t *x)
{
    fl_http_set_op(x->r->c, "reportMetrics");
    send_204(x);
}

static void h_register(rctx_t *x)
{
    fl_http_set_op(x->r->c, "registerTable");
    if (!parse_body(x)) return;
    json_t *nm = json_object_get(x->body, "name"), *ml = json_object_get(x->body, "metadata-location");
    json_t *ow = json_object_get(x->body, "overwrite");
    if (!json_is_string(nm) || !json_is_string(ml) || (ow && !json_is_boolean(ow) && !json_is_null(ow))) {
        err(x, 400, "BadRequestException", "registerTable needs a name and a metadata-location.");
        return;
    }
    const char *name = json_string_value(nm), *loc = json_string_value(ml);
    if (strlen(loc) >= FL_LOC_MAX) {
        err(x, 400, "BadRequestException", "The metadata location is too long.");
        return;
    }
    if (!name_ok(name)) {
        err(x, 400, "BadRequestException", "Invalid table name.");
        return;
    }
    if (!ns_exists(x, x->ns)) {
        err(x, 404, "NoSuchNamespaceException", "The specified namespace does not exist.");
        return;
    }
    pthread_once(&stripes_once, stripes_init);
    pthread_mutex_t *mu = &stripes[stripe_of(x->bucket, x->ns, name)];
    pthread_mutex_lock(mu);
    json_t *meta = NULL;
    fl_table_t t, cur;
    bool exists = fl_catalog_table_get(x->sc->cat, x->bucket, x->ns, name, &cur) == FL_OK;
    if (exists && (!json_is_true(ow) || strcmp(cur.kind, "table") != 0)) {
        err(x, 409, "AlreadyExistsException", "A table or view with this name already exists.");
        goto out;
    }
    char wb[64], id[37];
    if (exists) {
        t = cur;
    } else {
        if (!warehouse_of(loc, wb, id)) {
            err(x, 400, "BadRequestException", "The metadata location is not inside a table warehouse.");
            goto out;
        }
        row_init(x, &t, x->ns, name, id, false);
        fl_table_t other;
        fl_bucket_info_t bi;
        if (fl_store_bucket_head(x->sc->store, wb, &bi) != FL_OK ||
            fl_catalog_table_get_by_warehouse(x->sc->cat, t.warehouse, &other) == FL_OK) {
            err(x, 400, "BadRequestException", "The metadata location is not inside an unclaimed table warehouse.");
            goto out;
        }
    }
    if (!fl_tablesvc_location_ok(&t, loc)) {
        err(x, 400, "BadRequestException", "The metadata location is outside the table's warehouse.");
        goto out;
    }
    fl_err_t e = fl_tablesvc_read_metadata(x->svc, loc, &meta);
    if (e) {
        err(x, 400, "BadRequestException", e == FL_ERR_NOT_FOUND ? "The metadata file does not exist."
                                                                  : "The metadata file is not valid JSON.");
        goto out;
    }
    char emsg[ERRLEN] = "";
    if (fl_iceberg_validate_metadata(meta, emsg, sizeof emsg) != 0) {
        err(x, 400, "BadRequestException", emsg);
        goto out;
    }
    if (exists) {
        fl_table_swap_t sw = { .bucket = x->bucket, .ns = x->ns, .name = name, .expect_id = t.id,
                               .expect_token = t.version_token,
                               .new_location = loc, .modified_by = x->r->principal };
        e = fl_catalog_table_swap(x->sc->cat, &sw, 1);
        if (e == FL_ERR_CONFLICT) {
            err(x, 409, "CommitFailedException", "The table changed while it was being registered.");
            goto out;
        }
    } else {
        snprintf(t.metadata_location, sizeof t.metadata_location, "%s", loc);
        e = fl_catalog_table_create(x->sc->cat, &t);
    }
    if (e == FL_ERR_EXISTS) err(x, 409, "AlreadyExistsException", "A table or view with this name already exists.");
    else if (e == FL_ERR_NOT_FOUND) err(x, 404, "NoSuchNamespaceException", "The specified namespace does not exist.");
    else if (e) err(x, 500, "ServiceFailureException", fl_err_str(e));
    else {
        ment_t *m = mc_put(loc, meta);
        if (m) send_load_result(x, loc, m->text, m->len, false, true);
        else err(x, 500, "ServiceFailureException", "Could not render the metadata.");
        mc_release(m);
    }
out:
    pthread_mutex_unlock(mu);
    json_decref(meta);
}

/* ------------------------------------------------------------------ */
/* rename                                                               */

static void do_rename(rctx_t *x, bool view)
{
    if (!parse_body(x)) return;
    char sns[FL_NAME_MAX], sname[FL_NAME_MAX], dns[FL_NAME_MAX], dname[FL_NAME_MAX];
    const char *why = NULL;
    bool multi = false;
    if (!parse_ident(json_object_get(x->body, "source"), sns, sname, &why, &multi)) {
        if (multi) err(x, 404, view ? "NoSuchViewException" : "NoSuchTableException", "The source does not exist.");
        else err(x, 400, "BadRequestException", why);
        return;
    }
    if (!parse_ident(json_object_get(x->body, "destination"), dns, dname, &why, &multi)) {
        if (multi) err(x, 404, "NoSuchNamespaceException", "The destination namespace does not exist.");
        else err(x, 400, "BadRequestException", why);
        return;
    }
    if (!name_ok(dname)) {
        err(x, 400, "BadRequestException", "Invalid destination name.");
        return;
    }
    fl_table_t t;
    if (!get_row(x, sns, sname, view, &t, true)) return;
    if (!ns_exists(x, dns)) {
        err(x, 404, "NoSuchNamespaceException", "The destination namespace does not exist.");
        return;
    }
    fl_err_t e = fl_catalog_table_rename(x->sc->cat, x->bucket, sns, sname, dns, dname, t.id, NULL);
    if (e == FL_ERR_EXISTS) err(x, 409, "AlreadyExistsException", "A table or view with the destination name exists.");
    else if (e == FL_ERR_NOT_FOUND)
        err(x, 404, view ? "NoSuchViewException" : "NoSuchTableException", "The source does not exist.");
    else if (e) err(x, 500, "ServiceFailureException", fl_err_str(e));
    else send_204(x);
}

static void h_rename_table(rctx_t *x)
{
    fl_http_set_op(x->r->c, "renameTable");
    do_rename(x, false);
}

static void h_rename_view(rctx_t *x)
{
    fl_http_set_op(x->r->c, "renameView");
    do_rename(x, true);
}

/* ------------------------------------------------------------------ */
/* commits                                                              */

typedef struct change {
    char ns[FL_NAME_MAX], name[FL_NAME_MAX];
    json_t *reqs, *upds;        /* borrowed from the body */
    fl_table_t row;
    ment_t *base;
    json_t *next;               /* new metadata (owned), NULL when unchanged */
    char *text;                 /* next, serialised once: the file and the cache share it */
    char loc[FL_LOC_MAX];       /* written file */
    ment_t *done;               /* cache entry of the result */
} change_t;

static bool has_assert_create(json_t *reqs)
{
    size_t i;
    json_t *v;
    json_array_foreach(reqs, i, v) {
        json_t *ty = json_object_get(v, "type");
        if (json_is_string(ty) && !strcmp(json_string_value(ty), "assert-create")) return true;
    }
    return false;
}

/* Requirements/updates arrays of a change object; false after rendering 400. *nupd
 * counts the updates of the whole request against FL_ICEBERG_MAX_COMMIT_UPDATES. */
static bool change_arrays(rctx_t *x, json_t *obj, change_t *ch, size_t *nupd)
{
    json_t *r = json_object_get(obj, "requirements"), *u = json_object_get(obj, "updates");
    if ((r && !json_is_array(r) && !json_is_null(r)) || (u && !json_is_array(u) && !json_is_null(u))) {
        err(x, 400, "BadRequestException", "requirements and updates must be arrays.");
        return false;
    }
    *nupd += json_is_array(u) ? json_array_size(u) : 0;
    if (*nupd > FL_ICEBERG_MAX_COMMIT_UPDATES) {
        char m[128];
        snprintf(m, sizeof m, "A commit may carry at most %d updates.", FL_ICEBERG_MAX_COMMIT_UPDATES);
        err(x, 400, "BadRequestException", m);
        return false;
    }
    ch->reqs = json_is_array(r) ? r : NULL;
    ch->upds = json_is_array(u) ? u : NULL;
    return true;
}

/* Check + apply one change against its row's current metadata. 0, or an HTTP status
 * with the error rendered. */
static int prepare(rctx_t *x, change_t *ch, bool view)
{
    char emsg[ERRLEN] = "";
    ch->base = load_meta(x, &ch->row, true);
    if (!ch->base) return 500;
    int st = fl_iceberg_check_requirements(ch->base->meta, ch->reqs, emsg, sizeof emsg);
    if (st == 409) {
        err(x, 409, "CommitFailedException", emsg[0] ? emsg : "Requirement failed.");
        return 409;
    }
    if (st) {
        err(x, 400, "BadRequestException", emsg[0] ? emsg : "Invalid requirement.");
        return 400;
    }
    if (!view) {
        /* a table stays in its warehouse: the S3 Tables API and purge know no other place */
        size_t i;
        json_t *u;
        json_array_foreach(ch->upds, i, u) {
            json_t *a = json_object_get(u, "action"), *l = json_object_get(u, "location");
            if (json_is_string(a) && !strcmp(json_string_value(a), "set-location") &&
                (!json_is_string(l) || strcmp(json_string_value(l), ch->row.warehouse) != 0)) {
                err(x, 400, "BadRequestException", "A table's location is its warehouse and cannot be changed.");
                return 400;
            }
        }
    }
    int status = 0;
    json_t *next = view ? fl_iceberg_apply_view_updates(ch->base->meta, ch->upds, ch->row.metadata_location,
                                                        &status, emsg, sizeof emsg)
                        : fl_iceberg_apply_updates(ch->base->meta, ch->upds, ch->row.metadata_location, &status,
                                                   emsg, sizeof emsg);
    if (!next) {
        if (status == 409) err(x, 409, "CommitFailedException", emsg[0] ? emsg : "Commit conflict.");
        else if (status >= 500) err(x, 500, "ServiceFailureException", "The table's current metadata is not usable.");
        else err(x, 400, "BadRequestException", emsg[0] ? emsg : "Invalid update.");
        return status == 409 ? 409 : status >= 500 ? 500 : 400;
    }
    if (!view && fl_iceberg_metadata_unchanged(ch->base->meta, next)) {
        json_decref(next);
        return 0;
    }
    ch->next = next;
    ch->text = json_dumps(next, JSON_COMPACT);
    fl_err_t e = ch->text ? fl_tablesvc_write_metadata_text(x->svc, &ch->row, fl_iceberg_next_file_seq(next),
                                                            ch->text, ch->loc)
                          : FL_ERR_NOMEM;
    if (e && row_gone(x, &ch->row)) { /* dropped and purged meanwhile: the warehouse is gone */
        err_gone(x, &ch->row);
        return 404;
    }
    if (e) {
        fl_warn("rest: writing metadata for %s.%s: %s", ch->ns, ch->name, fl_err_str(e));
        err(x, 500, "ServiceFailureException", "The new metadata file could not be written.");
        return 500;
    }
    return 0;
}

/* Deletes the metadata files the changes wrote, after a swap that certainly did not
 * happen (lost, or not tried): no pointer names them. */
static void discard_written(rctx_t *x, change_t *ch, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ch[i].next && ch[i].loc[0]) {
            fl_err_t e = fl_tablesvc_delete_metadata(x->svc, &ch[i].row, ch[i].loc);
            if (e && e != FL_ERR_NOT_FOUND) fl_warn("rest: could not remove %s: %s", ch[i].loc, fl_err_str(e));
            ch[i].loc[0] = 0;
        }
}

static void change_reset(change_t *ch)
{
    mc_release(ch->base);
    mc_release(ch->done);
    json_decref(ch->next);
    free(ch->text);
    ch->text = NULL;
    ch->base = ch->done = NULL;
    ch->next = NULL;
    ch->loc[0] = 0;
}

/* The table a create transaction starts from: the leading "initial" updates of the
 * commit (assign-uuid, upgrade-format-version, the first add-schema / add-spec /
 * add-sort-order with their set-current/default, set-location, set-properties) folded
 * into a CreateTableRequest and built like a createTable (the ids come out as in the
 * staged response the client started from). *rest_out gets the remaining updates.
 * NULL with status/emsg on invalid input. */
static json_t *create_base(json_t *upds, json_t **rest_out, int *status, char *emsg, size_t elen)
{
    json_t *req = json_object(), *props = json_object();
    json_t *rest = json_array();
    const char *uuid = NULL, *loc = NULL;
    bool schema = false, spec = false, order = false, stop = false;
    size_t i;
    json_t *u;
    json_array_foreach(upds, i, u) {
        json_t *aj = json_object_get(u, "action");
        const char *a = json_is_string(aj) ? json_string_value(aj) : "";
        if (!stop) {
            stop = true;
            if (!strcmp(a, "assign-uuid") && json_is_string(json_object_get(u, "uuid"))) {
                uuid = json_string_value(json_object_get(u, "uuid"));
                stop = false;
            } else if (!strcmp(a, "upgrade-format-version") && json_is_integer(json_object_get(u, "format-version"))) {
                char fv[24];
                snprintf(fv, sizeof fv, "%lld", (long long)json_integer_value(json_object_get(u, "format-version")));
                json_object_set_new(props, "format-version", json_string(fv));
                stop = false;
            } else if (!strcmp(a, "add-schema") && !schema && json_is_object(json_object_get(u, "schema"))) {
                json_object_set(req, "schema", json_object_get(u, "schema"));
                schema = true;
                stop = false;
            } else if (!strcmp(a, "set-current-schema") && schema) {
                stop = false;
            } else if (!strcmp(a, "add-spec") && !spec && json_is_object(json_object_get(u, "spec"))) {
                json_object_set(req, "partition-spec", json_object_get(u, "spec"));
                spec = true;
                stop = false;
            } else if (!strcmp(a, "set-default-spec") && spec) {
                stop = false;
            } else if (!strcmp(a, "add-sort-order") && !order && json_is_object(json_object_get(u, "sort-order"))) {
                json_object_set(req, "write-order", json_object_get(u, "sort-order"));
                order = true;
                stop = false;
            } else if (!strcmp(a, "set-default-sort-order") && order) {
                stop = false;
            } else if (!strcmp(a, "set-location") && json_is_string(json_object_get(u, "location"))) {
                loc = json_string_value(json_object_get(u, "location"));
                stop = false;
            } else if (!strcmp(a, "set-properties")) {
                json_t *m = json_object_get(u, "updates");
                if (!m) m = json_object_get(u, "updated");
                if (json_is_object(m)) {
                    json_object_update(props, m);
                    stop = false;
                }
            }
            if (!stop) continue;
        }
        json_array_append(rest, u);
    }
    json_t *base = NULL;
    if (!schema) {
        *status = 400;
        snprintf(emsg, elen, "A create commit must add a schema.");
        goto out;
    }
    json_object_set_new(req, "name", json_string("staged"));
    json_object_set(req, "properties", props);
    base = fl_iceberg_new_metadata(req, loc && loc[0] ? loc : "s3://pending", status, emsg, elen);
    if (base && uuid) json_object_set_new(base, "table-uuid", json_string(uuid));
out:
    json_decref(req);
    json_decref(props);
    if (base) *rest_out = rest;
    else json_decref(rest);
    return base;
}

/* assert-create commit of a table that does not exist (after stage-create). */
static void commit_create(rctx_t *x, change_t *ch, bool respond_body)
{
    char emsg[ERRLEN] = "";
    json_t *next = NULL, *base = NULL;
    int st = fl_iceberg_check_requirements(NULL, ch->reqs, emsg, sizeof emsg);
    if (st) {
        err(x, st == 409 ? 409 : 400, st == 409 ? "CommitFailedException" : "BadRequestException", emsg);
        return;
    }
    if (!name_ok(ch->name)) {
        err(x, 400, "BadRequestException", "Invalid table name.");
        return;
    }
    if (!ns_exists(x, ch->ns)) {
        err(x, 404, "NoSuchNamespaceException", "The specified namespace does not exist.");
        return;
    }
    int status = 0;
    json_t *rest = NULL;
    base = create_base(ch->upds, &rest, &status, emsg, sizeof emsg);
    /* "s3://pending": no set-location, so a fresh warehouse is picked below */
    if (base) next = fl_iceberg_apply_updates(base, rest, NULL, &status, emsg, sizeof emsg);
    json_decref(rest);
    if (!next) {
        err(x, 400, "BadRequestException", emsg[0] ? emsg : "Invalid updates for a new table.");
        goto out;
    }
    if (fl_iceberg_validate_metadata(next, emsg, sizeof emsg) != 0) {
        err(x, 400, "BadRequestException", emsg);
        goto out;
    }
    json_t *lj = json_object_get(next, "location");
    const char *loc = json_is_string(lj) ? json_string_value(lj) : "";
    char wb[64], id[37];
    fl_table_t t;
    if (!loc[0] || !strcmp(loc, "s3://pending")) {
        const char *why = NULL;
        fl_err_t e = fl_tablesvc_create(x->svc, x->bucket, ch->ns, ch->name, x->r->principal, next, &t, &why);
        if (e == FL_ERR_EXISTS) err(x, 409, "AlreadyExistsException", "A table or view with this name already exists.");
        else if (e == FL_ERR_NOT_FOUND) err(x, 404, "NoSuchNamespaceException", "The specified namespace does not exist.");
        else if (e) err(x, 500, "ServiceFailureException", why ? why : fl_err_str(e));
        if (e) goto out;
    } else {
        fl_bucket_info_t bi;
        fl_table_t other;
        if (!warehouse_of(loc, wb, id) || loc[5 + strlen(wb)] != 0 ||
            fl_store_bucket_head(x->sc->store, wb, &bi) != FL_OK) {
            err(x, 400, "BadRequestException", "The table location must be the warehouse given at stage-create.");
            goto out;
        }
        row_init(x, &t, ch->ns, ch->name, id, false);
        if (fl_catalog_table_get_by_warehouse(x->sc->cat, t.warehouse, &other) == FL_OK) {
            err(x, 409, "AlreadyExistsException", "The warehouse already belongs to a table.");
            goto out;
        }
        fl_err_t e = fl_tablesvc_write_metadata(x->svc, &t, 0, next, t.metadata_location);
        if (e) {
            err(x, 500, "ServiceFailureException", "The metadata file could not be written.");
            goto out;
        }
        e = fl_catalog_table_create(x->sc->cat, &t);
        if (e == FL_ERR_EXISTS) err(x, 409, "AlreadyExistsException", "A table or view with this name already exists.");
        else if (e == FL_ERR_NOT_FOUND) err(x, 404, "NoSuchNamespaceException", "The specified namespace does not exist.");
        else if (e) err(x, 500, "CommitStateUnknownException", fl_err_str(e));
        if (e) goto out;
    }
    ment_t *m = mc_put(t.metadata_location, next);
    if (!respond_body) send_204(x);
    else if (m) send_load_result(x, t.metadata_location, m->text, m->len, false, false);
    else { /* landed: render directly rather than answer an error */
        char *text = json_dumps(next, JSON_COMPACT);
        send_load_result(x, t.metadata_location, text ? text : "{}", text ? strlen(text) : 2, false, false);
        free(text);
    }
    mc_release(m);
out:
    json_decref(next);
    json_decref(base);
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* Commits n changes atomically (one swap transaction); responds 200 with the single
 * table's result (single) or 204 (transaction). */
static void commit_changes(rctx_t *x, change_t *ch, size_t n, bool view, bool single)
{
    pthread_once(&stripes_once, stripes_init);
    int *locks = fl_calloc(n ? n : 1, sizeof *locks);
    size_t nl = 0;
    for (size_t i = 0; i < n; i++) locks[nl++] = stripe_of(x->bucket, ch[i].ns, ch[i].name);
    qsort(locks, nl, sizeof *locks, cmp_int);
    size_t u = 0;
    for (size_t i = 0; i < nl; i++)
        if (!u || locks[u - 1] != locks[i]) locks[u++] = locks[i];
    nl = u;
    for (size_t i = 0; i < nl; i++) pthread_mutex_lock(&stripes[locks[i]]);
    fl_table_swap_t *sw = fl_calloc(n ? n : 1, sizeof *sw);
    bool keep_files = false; /* the swap landed, or its outcome is unknown */

    /* a create transaction (assert-create on a table that does not exist) */
    if (n == 1 && !view && has_assert_create(ch[0].reqs) &&
        !get_row(x, ch[0].ns, ch[0].name, false, &ch[0].row, false)) {
        fl_table_t any;
        if (fl_catalog_table_get(x->sc->cat, x->bucket, ch[0].ns, ch[0].name, &any) == FL_OK)
            err(x, 409, "AlreadyExistsException", "A view with this name already exists.");
        else commit_create(x, &ch[0], single);
        goto out;
    }

    for (int attempt = 0;; attempt++) {
        size_t nsw = 0;
        discard_written(x, ch, n); /* a lost swap's files */
        for (size_t i = 0; i < n; i++) {
            change_reset(&ch[i]);
            if (!get_row(x, ch[i].ns, ch[i].name, view, &ch[i].row, true)) goto out;
            if (has_assert_create(ch[i].reqs)) {
                err(x, 409, view ? "CommitFailedException" : "AlreadyExistsException",
                    "The table already exists.");
                goto out;
            }
            if (prepare(x, &ch[i], view)) goto out;
            if (ch[i].next) {
                sw[nsw] = (fl_table_swap_t){ .bucket = x->bucket, .ns = ch[i].ns, .name = ch[i].name,
                                              .expect_id = ch[i].row.id, .expect_token = ch[i].row.version_token, .new_location = ch[i].loc,
                                              .modified_by = x->r->principal };
                nsw++;
            } else if (!single && json_array_size(ch[i].reqs)) {
                /* unchanged but required: pin it, so its requirements hold at the swap too */
                sw[nsw] = (fl_table_swap_t){ .bucket = x->bucket, .ns = ch[i].ns, .name = ch[i].name,
                                              .expect_id = ch[i].row.id, .expect_token = ch[i].row.version_token,
                                              .new_location = ch[i].row.metadata_location,
                                              .modified_by = x->r->principal };
                nsw++;
            }
        }
        fl_err_t e = nsw ? fl_catalog_table_swap(x->sc->cat, sw, nsw) : FL_OK;
        if (e == FL_ERR_CONFLICT && attempt + 1 < COMMIT_ATTEMPTS) continue;
        if (e == FL_ERR_CONFLICT) {
            err(x, 409, "CommitFailedException", "The table kept changing; retry the commit.");
            goto out;
        }
        if (e == FL_ERR_NOT_FOUND) {
            err(x, 404, view ? "NoSuchViewException" : "NoSuchTableException", "The table was dropped.");
            goto out;
        }
        if (e) {
            fl_error("rest: pointer swap failed: %s", fl_err_str(e));
            err(x, 500, "CommitStateUnknownException", "The commit's outcome is unknown.");
            keep_files = true;
            goto out;
        }
        keep_files = true;
        break;
    }
    /* landed: only 200/204 from here */
    for (size_t i = 0; i < n; i++)
        if (ch[i].next) {
            ch[i].done = mc_put_text(ch[i].loc, ch[i].next, ch[i].text);
            ch[i].text = NULL;
            mc_forget(ch[i].row.metadata_location);
        }
    if (!single) {
        send_204(x);
    } else {
        const char *loc = ch[0].next ? ch[0].loc : ch[0].row.metadata_location;
        ment_t *m = ch[0].next ? ch[0].done : ch[0].base;
        if (m) {
            send_load_result(x, loc, m->text, m->len, view, view);
        } else {
            /* the serialisation failed after the commit landed: render directly */
            char *text = json_dumps(ch[0].next, JSON_COMPACT);
            send_load_result(x, loc, text ? text : "{}", text ? strlen(text) : 2, view, view);
            free(text);
        }
    }
out:
    if (!keep_files) discard_written(x, ch, n);
    for (size_t i = nl; i-- > 0;) pthread_mutex_unlock(&stripes[locks[i]]);
    for (size_t i = 0; i < n; i++) change_reset(&ch[i]);
    free(sw);
    free(locks);
}

/* A single-table (or single-view) commit: the request body is one change. */
static void commit_one(rctx_t *x, const char *op, bool view)
{
    fl_http_set_op(x->r->c, op);
    if (!parse_body(x)) return;
    change_t *ch = fl_calloc(1, sizeof *ch);
    snprintf(ch->ns, sizeof ch->ns, "%s", x->ns);
    snprintf(ch->name, sizeof ch->name, "%s", x->name);
    size_t nupd = 0;
    if (change_arrays(x, x->body, ch, &nupd)) commit_changes(x, ch, 1, view, true);
    free(ch);
}

static void h_commit_table(rctx_t *x) { commit_one(x, "updateTable", false); }

static void h_commit_tx(rctx_t *x)
{
    fl_http_set_op(x->r->c, "commitTransaction");
    if (!parse_body(x)) return;
    json_t *tc = json_object_get(x->body, "table-changes");
    if (!json_is_array(tc) || json_array_size(tc) == 0 || json_array_size(tc) > 100) {
        err(x, 400, "BadRequestException", "table-changes must be a non-empty array (at most 100).");
        return;
    }
    size_t n = json_array_size(tc);
    change_t *ch = fl_calloc(n, sizeof *ch);
    size_t nupd = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(tc, i);
        const char *why = "Each table change needs an identifier.";
        bool multi = false;
        if (!json_is_object(c) || !parse_ident(json_object_get(c, "identifier"), ch[i].ns, ch[i].name, &why, &multi)) {
            if (multi) err(x, 404, "NoSuchTableException", "The specified table does not exist.");
            else err(x, 400, "BadRequestException", why);
            goto out;
        }
        if (!change_arrays(x, c, &ch[i], &nupd)) goto out;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(ch[j].ns, ch[i].ns) && !strcmp(ch[j].name, ch[i].name)) {
                err(x, 400, "BadRequestException", "A table appears twice in one transaction.");
                goto out;
            }
        if (n > 1 && has_assert_create(ch[i].reqs)) {
            err(x, 400, "BadRequestException", "Creating a table inside a multi-table transaction is not supported.");
            goto out;
        }
    }
    commit_changes(x, ch, n, false, false);
out:
    free(ch);
}

/* ------------------------------------------------------------------ */
/* views                                                                */

static void h_create_view(rctx_t *x)
{
    fl_http_set_op(x->r->c, "createView");
    if (!parse_body(x)) return;
    json_t *nm = json_object_get(x->body, "name");
    if (!json_is_string(nm) || !json_is_object(json_object_get(x->body, "schema")) ||
        !json_is_object(json_object_get(x->body, "view-version"))) {
        err(x, 400, "BadRequestException", "createView needs a name, a schema and a view-version.");
        return;
    }
    const char *name = json_string_value(nm);
    if (!create_precheck(x, name)) return;
    char id[37];
    fl_uuid4(id);
    fl_table_t t;
    row_init(x, &t, x->ns, name, id, true);
    char wb[64];
    snprintf(wb, sizeof wb, "%s" WAREHOUSE_SUFFIX, id);
    int status = 0;
    char emsg[ERRLEN] = "";
    json_t *meta = fl_iceberg_new_view_metadata(x->body, t.warehouse, &status, emsg, sizeof emsg);
    if (!meta) {
        err(x, 400, "BadRequestException", emsg[0] ? emsg : "Invalid createView request.");
        return;
    }
    fl_err_t e = fl_store_bucket_create(x->sc->store, wb);
    if (e) {
        json_decref(meta);
        err(x, 500, "ServiceFailureException", "Could not create the view's warehouse.");
        return;
    }
    e = fl_tablesvc_write_metadata(x->svc, &t, 0, meta, t.metadata_location);
    if (!e) e = fl_catalog_table_create(x->sc->cat, &t);
    if (e) {
        discard_warehouse(x, wb, t.metadata_location);
        if (e == FL_ERR_EXISTS) err(x, 409, "AlreadyExistsException", "A table or view with this name already exists.");
        else if (e == FL_ERR_NOT_FOUND) err(x, 404, "NoSuchNamespaceException", "The specified namespace does not exist.");
        else err(x, 500, "ServiceFailureException", fl_err_str(e));
    } else {
        ment_t *m = mc_put(t.metadata_location, meta);
        if (m) send_load_result(x, t.metadata_location, m->text, m->len, true, true);
        else err(x, 500, "ServiceFailureException", "Could not render the metadata.");
        mc_release(m);
    }
    json_decref(meta);
}

static void h_load_view(rctx_t *x)
{
    fl_http_set_op(x->r->c, "loadView");
    fl_table_t t;
    if (!get_row(x, x->ns, x->name, true, &t, true)) return;
    ment_t *m = load_meta(x, &t, false);
    if (!m) return;
    send_load_result(x, t.metadata_location, m->text, m->len, true, true);
    mc_release(m);
}

static void h_head_view(rctx_t *x)
{
    fl_http_set_op(x->r->c, "viewExists");
    fl_table_t t;
    if (get_row(x, x->ns, x->name, true, &t, true)) send_204(x);
}

static void h_replace_view(rctx_t *x) { commit_one(x, "replaceView", true); }

static void h_drop_view(rctx_t *x)
{
    fl_http_set_op(x->r->c, "dropView");
    fl_table_t t;
    if (!get_row(x, x->ns, x->name, true, &t, true)) return;
    fl_err_t e = fl_tablesvc_drop(x->svc, &t, true, NULL);
    if (e == FL_ERR_NOT_FOUND) err(x, 404, "NoSuchViewException", "The specified view does not exist.");
    else if (e) err(x, 500, "ServiceFailureException", fl_err_str(e));
    else send_204(x);
}

/* ------------------------------------------------------------------ */
/* routing                                                              */

static const route_t routes[] = {
    { "GET", "namespaces", h_list_ns, "NoSuchNamespaceException" },
    { "POST", "namespaces", h_create_ns, "NoSuchNamespaceException" },
    { "GET", "namespaces/{namespace}", h_load_ns, "NoSuchNamespaceException" },
    { "HEAD", "namespaces/{namespace}", h_head_ns, "NoSuchNamespaceException" },
    { "DELETE", "namespaces/{namespace}", h_drop_ns, "NoSuchNamespaceException" },
    { "POST", "namespaces/{namespace}/properties", h_ns_props, "NoSuchNamespaceException" },
    { "GET", "namespaces/{namespace}/tables", h_list_tables, "NoSuchNamespaceException" },
    { "POST", "namespaces/{namespace}/tables", h_create_table, "NoSuchNamespaceException" },
    { "POST", "namespaces/{namespace}/register", h_register, "NoSuchNamespaceException" },
    { "GET", "namespaces/{namespace}/tables/{table}", h_load_table, "NoSuchTableException" },
    { "HEAD", "namespaces/{namespace}/tables/{table}", h_head_table, "NoSuchTableException" },
    { "POST", "namespaces/{namespace}/tables/{table}", h_commit_table, "NoSuchTableException" },
    { "DELETE", "namespaces/{namespace}/tables/{table}", h_drop_table, "NoSuchTableException" },
    { "POST", "namespaces/{namespace}/tables/{table}/metrics", h_metrics, "NoSuchTableException" },
    { "POST", "tables/rename", h_rename_table, "NoSuchTableException" },
    { "POST", "transactions/commit", h_commit_tx, "NoSuchTableException" },
    { "GET", "namespaces/{namespace}/views", h_list_views, "NoSuchNamespaceException" },
    { "POST", "namespaces/{namespace}/views", h_create_view, "NoSuchNamespaceException" },
    { "GET", "namespaces/{namespace}/views/{view}", h_load_view, "NoSuchViewException" },
    { "HEAD", "namespaces/{namespace}/views/{view}", h_head_view, "NoSuchViewException" },
    { "POST", "namespaces/{namespace}/views/{view}", h_replace_view, "NoSuchViewException" },
    { "DELETE", "namespaces/{namespace}/views/{view}", h_drop_view, "NoSuchViewException" },
    { "POST", "views/rename", h_rename_view, "NoSuchViewException" },
};
static const size_t nroutes = sizeof routes / sizeof routes[0];

static void h_config(rctx_t *x)
{
    fl_http_set_op(x->r->c, "getConfig");
    fl_buf_t w;
    fl_buf_init(&w, 4096);
    if (!qparam(x, "warehouse", &w) || !w.ptr || !w.ptr[0]) {
        fl_buf_free(&w);
        err(x, 400, "BadRequestException", "The warehouse parameter (a table bucket ARN) is required.");
        return;
    }
    char bucket[64];
    fl_arn_match_t m = strlen(w.ptr) == w.len ? fl_arn_resolve(&x->sc->scope, w.ptr, bucket, NULL)
                                               : FL_ARN_MALFORMED; /* a NUL would cut it short */
    fl_buf_free(&w);
    if (m == FL_ARN_MALFORMED) {
        err(x, 400, "BadRequestException", "The warehouse is not a valid table bucket ARN.");
        return;
    }
    if (m == FL_ARN_OTHER_ACCOUNT) {
        err(x, 403, "ForbiddenException", "The warehouse belongs to another account.");
        return;
    }
    fl_tbucket_t b;
    if (m != FL_ARN_OURS || fl_catalog_bucket_get(x->sc->cat, bucket, &b) != FL_OK) {
        err(x, 404, "NoSuchWarehouseException", "The specified table bucket does not exist.");
        return;
    }
    char arn[FL_ARN_MAX];
    if (b.arn[0]) snprintf(arn, sizeof arn, "%s", b.arn);
    else fl_arn_bucket(&x->sc->scope, bucket, arn);
    fl_buf_t enc;
    fl_buf_init(&enc, 0);
    fl_uri_encode(fl_slice_cstr(arn), false, &enc);
    json_t *defaults = table_config(x);
    json_object_set_new(defaults, "prefix", json_string(enc.ptr));
    json_object_set_new(defaults, "warehouse", json_string(arn));
    json_t *overrides = json_pack("{s:s}", "prefix", enc.ptr);
    json_t *eps = json_array();
    for (size_t i = 0; i < nroutes; i++) {
        char s[256];
        snprintf(s, sizeof s, "%s /v1/{prefix}/%s", routes[i].method, routes[i].pattern);
        json_array_append_new(eps, json_string(s));
    }
    json_t *doc = json_pack("{s:o,s:o,s:o}", "defaults", defaults, "overrides", overrides, "endpoints", eps);
    send_json(x, 200, doc);
    json_decref(doc);
    fl_buf_free(&enc);
}

typedef struct seg {
    const char *p;
    size_t n;
} seg_t;

/* Matches raw segments against a pattern; caps[] gets the {x} segments. */
static bool match(const char *pattern, const seg_t *segs, int nsegs, seg_t *caps, int *ncaps)
{
    int i = 0;
    *ncaps = 0;
    const char *p = pattern;
    while (*p) {
        size_t l = strcspn(p, "/");
        if (i >= nsegs) return false;
        if (p[0] == '{') {
            if (*ncaps < 2) caps[(*ncaps)++] = segs[i];
        } else if (l != segs[i].n || memcmp(p, segs[i].p, l) != 0) {
            return false;
        }
        i++;
        p += l;
        if (*p == '/') p++;
    }
    return i == nsegs;
}

/* Decodes a namespace or name segment; false after rendering the error. A multi-level
 * namespace ("a%1Fb") names nothing floe has: 404 of the route's kind (nf_type), as
 * Iceberg clients expect of a missing table or namespace (Spark's metadata tables,
 * "ns.t.snapshots", are found by loading table "snapshots" of namespace "ns.t" first). */
static bool decode_seg(rctx_t *x, seg_t s, char *out, bool is_ns, const char *nf_type)
{
    if (is_ns) {
        for (size_t i = 0; i + 2 < s.n; i++)
            if (s.p[i] == '%' && s.p[i + 1] == '1' && (s.p[i + 2] == 'F' || s.p[i + 2] == 'f')) {
                const char *what = !strcmp(nf_type, "NoSuchTableException") ? "table"
                                 : !strcmp(nf_type, "NoSuchViewException") ? "view" : "namespace";
                char m[160];
                snprintf(m, sizeof m, "The specified %s does not exist (namespaces are single-level).", what);
                err(x, 404, nf_type, m);
                return false;
            }
    }
    fl_buf_t b;
    fl_buf_init(&b, FL_NAME_MAX * 3);
    fl_err_t e = fl_uri_decode(fl_slice(s.p, s.n), true, &b);
    bool ok = !e && b.ptr && b.len > 0 && b.len < FL_NAME_MAX && strlen(b.ptr) == b.len &&
              (!is_ns || !strchr(b.ptr, 0x1f));
    if (ok) memcpy(out, b.ptr, b.len + 1);
    fl_buf_free(&b);
    if (!ok) err(x, 400, "BadRequestException", "Invalid namespace or name in the path.");
    return ok;
}

static void dispatch(rctx_t *x);

void fl_rest_handle(fl_api_req_t *r)
{
    rctx_t x = { .r = r, .cfg = r->cfg, .svc = r->cfg->svc, .sc = fl_tablesvc_cfg(r->cfg->svc) };
    x.head = !strcmp(r->req->method, "HEAD");
    if (fl_query_parse(r->req->query, r->req->query_len, &x.q) != FL_OK) {
        fl_http_set_op(r->c, "restUnknown");
        err(&x, 400, "BadRequestException", "The query string is not valid.");
        return;
    }
    dispatch(&x);
    json_decref(x.body);
    fl_query_free(&x.q);
}

/* Routes a request by method and path, decodes the prefix, namespace and
 * name, and calls the route's handler. */
static void dispatch(rctx_t *x)
{
    fl_api_req_t *r = x->r;
    const char *p = r->path;
    size_t n = r->path_len;
    if (n == 10 && !memcmp(p, "/v1/config", 10)) {
        if (strcmp(r->req->method, "GET") != 0) {
            fl_http_set_op(r->c, "getConfig");
            err(x, 405, "MethodNotAllowedException", "Use GET for /v1/config.");
        } else {
            h_config(x);
        }
        return;
    }
    if (n < 5 || memcmp(p, "/v1/", 4) != 0) {
        fl_http_set_op(r->c, "restUnknown");
        err(x, 404, "NotFoundException", "No such REST catalog route.");
        return;
    }
    /* the prefix: one raw segment (its '/' is %2F), decoded once */
    const char *pre = p + 4, *end = p + n;
    const char *slash = memchr(pre, '/', (size_t)(end - pre));
    seg_t segs[MAX_SEGS];
    int nsegs = 0;
    const char *q = slash ? slash + 1 : end;
    bool bad = !slash;
    while (!bad && q <= end) {
        const char *s = memchr(q, '/', (size_t)(end - q));
        const char *e = s ? s : end;
        if (e == q || nsegs == MAX_SEGS) {
            bad = true;
            break;
        }
        segs[nsegs++] = (seg_t){ q, (size_t)(e - q) };
        if (!s) break;
        q = s + 1;
    }
    const route_t *rt = NULL;
    seg_t caps[2];
    int ncaps = 0;
    bool path_known = false;
    for (size_t i = 0; !bad && i < nroutes; i++) {
        if (!match(routes[i].pattern, segs, nsegs, caps, &ncaps)) continue;
        path_known = true;
        if (!strcmp(routes[i].method, r->req->method)) {
            rt = &routes[i];
            break;
        }
    }
    if (!rt) {
        fl_http_set_op(r->c, "restUnknown");
        if (path_known) err(x, 405, "MethodNotAllowedException", "Method not allowed for this route.");
        else err(x, 404, "NotFoundException", "No such REST catalog route.");
        return;
    }
    match(rt->pattern, segs, nsegs, caps, &ncaps);
    fl_buf_t arn;
    fl_buf_init(&arn, FL_ARN_MAX);
    fl_arn_match_t m = fl_uri_decode(fl_slice(pre, (size_t)(slash - pre)), false, &arn) == FL_OK &&
                       arn.ptr && strlen(arn.ptr) == arn.len
                           ? fl_arn_resolve(&x->sc->scope, arn.ptr, x->bucket, NULL) : FL_ARN_MALFORMED;
    fl_buf_free(&arn);
    if (m == FL_ARN_OTHER_ACCOUNT || m == FL_ARN_OTHER_REGION) {
        fl_http_set_op(r->c, "restUnknown");
        if (m == FL_ARN_OTHER_ACCOUNT)
            err(x, 403, "ForbiddenException", "The prefix names a table bucket of another account.");
        else
            err(x, 404, rt->nf_type, "The specified table bucket does not exist in this region.");
        return;
    }
    if (m != FL_ARN_OURS) {
        fl_http_set_op(r->c, "restUnknown");
        err(x, 400, "BadRequestException", "The path prefix is not a table bucket ARN.");
        return;
    }
    fl_tbucket_t b;
    fl_err_t e = fl_catalog_bucket_get(x->sc->cat, x->bucket, &b);
    if (e) {
        fl_http_set_op(r->c, "restUnknown");
        if (e == FL_ERR_NOT_FOUND || e == FL_ERR_NO_BUCKET)
            err(x, 404, rt->nf_type, "The specified table bucket does not exist.");
        else err(x, 500, "ServiceFailureException", fl_err_str(e));
        return;
    }
    if (ncaps >= 1 && !decode_seg(x, caps[0], x->ns, true, rt->nf_type)) return;
    if (ncaps >= 2 && !decode_seg(x, caps[1], x->name, false, rt->nf_type)) return;
    rt->fn(x);
}
