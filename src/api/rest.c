/* Iceberg REST catalog (apache/iceberg open-api/rest-catalog-open-api.yaml) over the
 * catalog store, S3 Tables style: the prefix is the URL-encoded table-bucket ARN and
 * namespaces are single-level.
 *
 * Routing is on the raw path: "/v1/config", else "/v1/{prefix}/..." where the prefix
 * segment (it contains %2F) is cut at the first '/', decoded once and parsed as an
 * ARN; the rest is matched segment by segment against the static route table, which
 * also generates the "endpoints" list of /v1/config.
 *
 * Tables, their metadata files, the per-table lock, the loaded-metadata cache and
 * the commit path (check requirements, apply updates, write the next metadata file,
 * compare-and-swap the pointer) are the table service's (catalog/tablesvc.h); this
 * file parses, calls it, and renders its failure classes as Iceberg REST errors:
 * 409 only for a failed requirement or a table that kept changing; 5xx on a commit
 * only when the swap's outcome is unknown. Buckets and namespaces are still read and
 * written here straight from the catalog store. */
#include "api/rest.h"
#include "catalog/iam.h"
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

#define ERRLEN 512

typedef struct rctx {
    fl_api_req_t *r;
    const fl_catalog_cfg_t *cfg;
    fl_tablesvc_t *svc;
    const fl_tablesvc_cfg_t *sc;  /* the service's stores and ARN scope */
    bool head;
    char bucket[64];
    char prefix_account[40]; /* the account the prefix ARN names */
    char owner[64];          /* the bucket's owner account */
    char ns[FL_NAME_MAX];
    char name[FL_NAME_MAX];
    json_t *body;          /* parsed request body (owned) */
    fl_query_t q;          /* decoded query parameters */
    const fl_tbucket_t *b; /* the prefix's table bucket (dispatch's) */
    /* the table or view row (ns, name) read with the bucket's by dispatch, for
     * the handler's first get_row of them: row_state 0 none, 1 found, 2 absent */
    int row_state;
    fl_table_t row;
    /* What a LoadTableResult vends credentials for: the table (NULL for a
     * staged create: then its warehouse and name) */
    const fl_table_t *vt;
    const char *vwh, *vname;
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
/* loaded metadata                                                     */

static pthread_mutex_t ns_props_lock = PTHREAD_MUTEX_INITIALIZER;

/* The metadata at t's pointer, held (release with fl_tmeta_release). Renders the error. */
static fl_tmeta_t *load_meta(rctx_t *x, const fl_table_t *t)
{
    fl_tmeta_t *m = NULL;
    char msg[ERRLEN];
    fl_err_t e = fl_tablesvc_load(x->svc, t, &m, msg, sizeof msg);
    if (e == FL_ERR_INVALID) err(x, 400, "BadRequestException", msg);
    else if (e == FL_ERR_NOT_FOUND)
        err(x, 404, !strcmp(t->kind, "view") ? "NoSuchViewException" : "NoSuchTableException", msg);
    else if (e) err(x, 500, "ServiceFailureException", msg);
    return m;
}

/* ------------------------------------------------------------------ */
/* request helpers                                                      */

/* Query parameter `name`, decoded (NUL-free: the parser refuses one), borrowed from the
 * request; NULL when absent. */
static const char *qparam(const rctx_t *x, const char *name) { return fl_query_get(&x->q, name); }

#define name_ok fl_tablesvc_name_ok

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

/* The OSS endpoint of the virtual-hosted data plane: s3_endpoint's scheme and
 * port, host {domain} (the OSS SDK's client addresses {bucket}.{domain}).
 * NULL without a domain. */
static json_t *oss_endpoint(const fl_catalog_cfg_t *cfg)
{
    if (!cfg->s3_domain || !cfg->s3_endpoint) return NULL;
    const char *ep = cfg->s3_endpoint, *sch = strstr(ep, "://");
    if (!sch) return NULL;
    const char *auth = sch + 3, *aend = auth + strcspn(auth, "/");
    const char *colon = memrchr(auth, ':', (size_t)(aend - auth)), *rb = memrchr(auth, ']', (size_t)(aend - auth));
    if (colon && rb && colon < rb) colon = NULL;
    fl_buf_t b;
    fl_buf_init(&b, 0);
    fl_buf_printf(&b, "%.*s://%s%.*s", (int)(sch - ep), ep, cfg->s3_domain,
                  colon ? (int)(aend - colon) : 0, colon ? colon : "");
    json_t *v = b.ptr ? json_string(b.ptr) : NULL;
    fl_buf_free(&b);
    return v;
}

/* The FileIO properties a table's clients get (and the catalog's defaults). */
static json_t *table_config(const rctx_t *x)
{
    const fl_catalog_cfg_t *cfg = x->cfg;
    const char *region = x->sc->scope.region ? x->sc->scope.region : "us-east-1";
    json_t *c = json_object();
    if (cfg->s3_endpoint) json_object_set_new(c, "s3.endpoint", json_string(cfg->s3_endpoint));
    json_t *oe = oss_endpoint(cfg);
    if (oe) json_object_set_new(c, "oss.endpoint", oe);
    json_object_set_new(c, "s3.path-style-access", json_string("true"));
    /* PyIceberg reads oss:// through S3 with virtual addressing unless told */
    json_object_set_new(c, "s3.force-virtual-addressing", json_string("false"));
    json_object_set_new(c, "client.region", json_string(region));
    json_object_set_new(c, "s3.region", json_string(region));
    return c;
}

/* Whether the request's X-Iceberg-Access-Delegation (a comma-separated list)
 * asks for vended-credentials. */
static bool wants_vended(const rctx_t *x)
{
    fl_slice_t v = fl_http_header_val(x->r->req, "x-iceberg-access-delegation");
    for (size_t i = 0; v.ptr && i < v.len;) {
        size_t j = i;
        while (j < v.len && v.ptr[j] != ',') j++;
        fl_slice_t tok = fl_slice_trim(fl_slice(v.ptr + i, j - i));
        if (tok.len == 18 && !strncasecmp(tok.ptr, "vended-credentials", 18)) return true;
        i = j + 1;
    }
    return false;
}

/* Vended credentials for x->vt's (or the staged table's) warehouse, when the
 * client asks and a signed caller is known: added to the table's config c
 * and returned as a storage-credentials array (NULL when none). Read-only
 * unless the caller may s3tables:PutTableData on the table. Unsigned callers
 * (--insecure-no-auth) get none: the data plane takes their unsigned
 * requests anyway. A failure to mint is logged and the answer goes without. */
static json_t *add_vended(rctx_t *x, json_t *c)
{
    const fl_iam_who_t *who = x->r->who;
    fl_iam_t *iam = x->cfg->iam;
    if (!x->vwh || !who || !iam || !x->b || who->vended_for[0] || !wants_vended(x)) return NULL;
    const fl_table_t *t = x->vt;
    fl_iam_target_t tg = { .bucket = x->b, .table = t, .ns = x->ns, .name = x->vname, .table_level = true };
    bool write = fl_iam_allows(iam, who, "s3tables:PutTableData", &tg, fl_http_peer(x->r->c));
    fl_iam_vended_t v;
    fl_err_t e = fl_iam_vend(iam, who, t ? t->arn : NULL, x->b->arn, x->ns, x->vname, write, &v);
    if (e) {
        fl_warn("rest: no vended credentials for %s.%s: %s", x->ns, t ? t->name : x->vname, fl_err_str(e));
        return NULL;
    }
    json_t *kv = json_object();
    char exp[24];
    snprintf(exp, sizeof exp, "%lld", (long long)v.expires_ms);
    json_object_set_new(kv, "s3.access-key-id", json_string(v.akid));
    json_object_set_new(kv, "s3.secret-access-key", json_string(v.secret));
    json_object_set_new(kv, "s3.session-token", json_string(v.token));
    json_object_set_new(kv, "s3.session-token-expires-at-ms", json_string(exp));
    json_object_update(c, kv);
    json_t *sc = json_pack("[{s:s,s:o}]", "prefix", x->vwh, "config", kv);
    memset(&v, 0, sizeof v);
    return sc;
}

/* {"metadata-location":loc,"metadata":<text>[,"config":{...}][,"storage-credentials":[...]]}
 * without re-serialising text. */
static void send_load_result(rctx_t *x, const char *loc, const char *text, size_t len, bool view, bool config)
{
    fl_buf_t b;
    fl_buf_init(&b, 0);
    json_t *l = loc ? json_string(loc) : json_null();
    char *ls = json_dumps(l, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(l);
    char *cs = NULL, *scs = NULL;
    if (config) {
        json_t *c = view ? json_object() : table_config(x);
        json_t *sc = view ? NULL : add_vended(x, c);
        cs = json_dumps(c, JSON_COMPACT);
        scs = sc ? json_dumps(sc, JSON_COMPACT) : NULL;
        json_decref(c);
        json_decref(sc);
    }
    fl_err_t e = fl_buf_adds(&b, "{\"metadata-location\":");
    if (!e) e = fl_buf_adds(&b, ls ? ls : "null");
    if (!e) e = fl_buf_adds(&b, ",\"metadata\":");
    if (!e) e = fl_buf_add(&b, text, len);
    if (!e && cs) {
        e = fl_buf_adds(&b, ",\"config\":");
        if (!e) e = fl_buf_adds(&b, cs);
    }
    if (!e && scs) {
        e = fl_buf_adds(&b, ",\"storage-credentials\":");
        if (!e) e = fl_buf_adds(&b, scs);
    }
    if (!e) e = fl_buf_adds(&b, "}");
    if (e) err(x, 500, "ServiceFailureException", "Could not render the response.");
    else send_body(x, 200, b.ptr, b.len);
    free(ls);
    if (scs) { /* secrets: wiped */
        explicit_bzero(cs, strlen(cs));
        explicit_bzero(scs, strlen(scs));
        explicit_bzero(b.ptr, b.len);
    }
    free(cs);
    free(scs);
    fl_buf_free(&b);
}

static void send_meta(rctx_t *x, const char *loc, const fl_tmeta_t *m, bool view, bool config)
{
    size_t len;
    const char *text = fl_tmeta_text(m, &len);
    send_load_result(x, loc, text, len, view, config);
}

/* Row of a table (kind "table") or view; renders 404 when absent. The first
 * call for the path's (ns, name) takes the row dispatch read with the bucket. */
static bool get_row(rctx_t *x, const char *ns, const char *name, bool view, fl_table_t *t, bool render)
{
    fl_err_t e;
    if (x->row_state && !strcmp(ns, x->ns) && !strcmp(name, x->name)) {
        e = x->row_state == 1 ? FL_OK : FL_ERR_NOT_FOUND;
        if (!e) *t = x->row;
        x->row_state = 0;
    } else {
        e = fl_catalog_table_get(x->sc->cat, x->bucket, ns, name, t);
    }
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

/* A new row's fixed fields for a table or view with a given id/warehouse. */
static void row_init(rctx_t *x, fl_table_t *t, const char *ns, const char *name, const char *id, bool view)
{
    fl_tablesvc_row_init(x->svc, t, x->bucket, ns, name, id, view, x->r->principal);
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
    const char *actions;   /* s3tables: actions it needs (the source document's mapping), ',' between */
    char on;               /* what they act on: 'b' the bucket, 'n' the namespace {namespace},
                            * 't' the table {table}, 'c' a table named in the body (create),
                            * 'r' a rename's source, 'x' every table of a transaction */
} route_t;

/* ------------------------------------------------------------------ */
/* namespaces                                                           */

/* pageToken / pageSize: max (0 = all) and after (NULL = start). false after rendering 400. */
static bool paging(rctx_t *x, int *max, const char **after)
{
    *max = 0;
    *after = NULL;
    const char *ps = qparam(x, "pageSize");
    if (ps) {
        char *end = NULL;
        long v = strtol(ps, &end, 10);
        if (!ps[0] || *end || v < 1) {
            err(x, 400, "BadRequestException", "pageSize must be a positive integer.");
            return false;
        }
        *max = v > FL_CATALOG_MAX_PAGE ? FL_CATALOG_MAX_PAGE : (int)v;
    }
    const char *tok = qparam(x, "pageToken");
    if (tok && tok[0]) {
        if (strlen(tok) >= FL_NAME_MAX) {
            err(x, 400, "BadRequestException", "Invalid pageToken.");
            return false;
        }
        *after = tok;
    }
    return true;
}

static void h_list_ns(rctx_t *x)
{
    fl_http_set_op(x->r->c, "listNamespaces");
    int max;
    const char *after;
    json_t *arr = NULL;
    if (!paging(x, &max, &after)) goto out;
    const char *parent = qparam(x, "parent");
    if (parent && parent[0]) {
        /* single level: a namespace has no children */
        if (strchr(parent, 0x1f) || !ns_exists(x, parent)) {
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
    int want = max ? max : FL_CATALOG_MAX_PAGE;
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
    snprintf(ns.owner, sizeof ns.owner, "%s", x->owner[0] ? x->owner : x->sc->scope.account ? x->sc->scope.account : "");
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
    int max;
    const char *after;
    json_t *arr = NULL;
    if (!paging(x, &max, &after)) goto out;
    if (!ns_exists(x, x->ns)) {
        err(x, 404, "NoSuchNamespaceException", "The specified namespace does not exist.");
        goto out;
    }
    arr = json_array();
    char last[FL_NAME_MAX] = "";
    bool more = false;
    int want = max ? max : FL_CATALOG_MAX_PAGE;
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
        snprintf(wb, sizeof wb, "%s--table-s3", id);
        snprintf(loc, sizeof loc, "%s://%s", fl_tablesvc_scheme(x->svc), wb);
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
        /* the data plane authorises writes into it as the table-to-be's (GetTableData/PutTableData) */
        json_t *st = json_pack("{s:s,s:s,s:s}", "bucket", x->bucket, "namespace", x->ns, "name", name);
        char *sttext = st ? json_dumps(st, JSON_COMPACT) : NULL;
        if (sttext) fl_catalog_doc_put(x->sc->cat, loc, "staged", sttext);
        free(sttext);
        json_decref(st);
        char *text = json_dumps(meta, JSON_COMPACT);
        x->vwh = loc;
        x->vname = name;
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
        fl_tmeta_t *m = fl_tablesvc_remember(x->svc, t.metadata_location, meta);
        x->vt = &t;
        x->vwh = t.warehouse;
        if (m) send_meta(x, t.metadata_location, m, false, true);
        else err(x, 500, "ServiceFailureException", "Could not render the metadata.");
        fl_tmeta_release(m);
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
    const char *mode = qparam(x, "snapshots");
    bool refs = mode && !strcasecmp(mode, "refs");
    if (mode && !refs && strcasecmp(mode, "all") != 0) {
        err(x, 400, "BadRequestException", "snapshots must be all or refs.");
        return;
    }
    fl_table_t t;
    if (!get_row(x, x->ns, x->name, false, &t, true)) return;
    fl_tmeta_t *m = load_meta(x, &t);
    if (!m) return;
    x->vt = &t;
    x->vwh = t.warehouse;
    if (refs) send_refs_only(x, t.metadata_location, fl_tmeta_json(m));
    else send_meta(x, t.metadata_location, m, false, true);
    fl_tmeta_release(m);
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
    const char *p = qparam(x, "purgeRequested");
    bool purge = p && !strcasecmp(p, "true");
    fl_table_t t;
    /* the drop deletes the row read here (by id, under the table's lock) and purges only its warehouse */
    if (!get_row(x, x->ns, x->name, false, &t, true)) return;
    fl_err_t e = fl_tablesvc_drop(x->svc, &t, purge, NULL);
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
    fl_tablesvc_lock(x->svc, x->bucket, x->ns, name); /* registerTable moves the pointer itself */
    json_t *meta = NULL;
    char wb[64], id[37], claim[37] = "";
    fl_table_t t, cur;
    bool exists = fl_catalog_table_get(x->sc->cat, x->bucket, x->ns, name, &cur) == FL_OK;
    if (exists && (!json_is_true(ow) || strcmp(cur.kind, "table") != 0)) {
        err(x, 409, "AlreadyExistsException", "A table or view with this name already exists.");
        goto out;
    }
    if (exists) {
        t = cur;
    } else {
        if (!fl_tablesvc_warehouse_of(loc, wb, id)) {
            err(x, 400, "BadRequestException", "The metadata location is not inside a table warehouse.");
            goto out;
        }
        /* held until the row exists: the sweep of abandoned warehouses claims it too */
        if (fl_tablesvc_warehouse_claim(x->svc, wb, FL_WAREHOUSE_REGISTER_LEASE_MS, claim)) {
            claim[0] = 0;
            err(x, 503, "ServiceUnavailableException",
                "The table warehouse is claimed by another operation (a registration, or its removal); try again.");
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
        fl_tmeta_t *m = fl_tablesvc_remember(x->svc, loc, meta);
        x->vt = &t;
        x->vwh = t.warehouse;
        if (m) send_meta(x, loc, m, false, true);
        else err(x, 500, "ServiceFailureException", "Could not render the metadata.");
        fl_tmeta_release(m);
    }
out:
    if (claim[0]) fl_tablesvc_warehouse_release(x->svc, wb, claim);
    fl_tablesvc_unlock(x->svc, x->bucket, x->ns, name);
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
    fl_err_t e = fl_tablesvc_rename(x->svc, &t, dns, dname, NULL);
    if (e == FL_ERR_EXISTS) err(x, 409, "AlreadyExistsException", "A table or view with the destination name exists.");
    else if (e == FL_ERR_NOT_FOUND)
        err(x, 404, view ? "NoSuchViewException" : "NoSuchTableException", "The source does not exist.");
    else if (e == FL_ERR_CONFLICT)
        err(x, 503, "ServiceUnavailableException", "The rename raced another change to these tables; retry it.");
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
static bool change_arrays(rctx_t *x, json_t *obj, fl_tablesvc_change_t *ch, size_t *nupd)
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
    ch->requirements = json_is_array(r) ? r : NULL;
    ch->updates = json_is_array(u) ? u : NULL;
    return true;
}

/* The service's failure classes as Iceberg REST errors: 409 means retry, 5xx
 * on a commit means its outcome is unknown (reference/iceberg.md §1.10). */
static void commit_error(rctx_t *x, const fl_tablesvc_commit_t *c, fl_err_t e, const char *msg)
{
    switch (e) {
    case FL_ERR_CONFLICT: err(x, 409, "CommitFailedException", msg); break;
    case FL_ERR_EXISTS:
        err(x, 409, c->view ? "CommitFailedException" : "AlreadyExistsException", msg);
        break;
    case FL_ERR_NOT_FOUND:
        err(x, 404, c->created ? "NoSuchNamespaceException" : c->view ? "NoSuchViewException" : "NoSuchTableException",
            msg);
        break;
    case FL_ERR_INVALID: err(x, 400, "BadRequestException", msg); break;
    case FL_ERR_IO: err(x, 500, "CommitStateUnknownException", msg); break;
    default: err(x, 500, "ServiceFailureException", msg); break;
    }
}

/* Commits n changes through the service; responds 200 with the single table's
 * result (single) or 204 (transaction). A create commit's result carries no
 * config, as before. */
static void commit_changes(rctx_t *x, fl_tablesvc_change_t *ch, size_t n, bool view, bool single)
{
    char msg[ERRLEN] = "";
    fl_tablesvc_commit_t c = { .bucket = x->bucket, .principal = x->r->principal, .view = view,
                               .pin_unchanged = !single };
    fl_err_t e = fl_tablesvc_commit(x->svc, &c, ch, n, msg, sizeof msg);
    if (e) {
        commit_error(x, &c, e, msg);
        return;
    }
    /* landed: only 200/204 from here */
    if (!single) {
        send_204(x);
    } else {
        size_t len = 2;
        const char *text = ch[0].result ? fl_tmeta_text(ch[0].result, &len) : "{}";
        send_load_result(x, ch[0].location, text, len, view, view); /* a create (never a view): no config */
    }
    for (size_t i = 0; i < n; i++) fl_tmeta_release(ch[i].result);
}

/* A single-table (or single-view) commit: the request body is one change. */
static void commit_one(rctx_t *x, const char *op, bool view)
{
    fl_http_set_op(x->r->c, op);
    if (!parse_body(x)) return;
    fl_tablesvc_change_t *ch = fl_calloc(1, sizeof *ch);
    ch->ns = x->ns;
    ch->name = x->name;
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
    fl_tablesvc_change_t *ch = fl_calloc(n, sizeof *ch);
    typedef struct { char ns[FL_NAME_MAX], name[FL_NAME_MAX]; } ident_t;
    ident_t *id = fl_calloc(n, sizeof *id);
    size_t nupd = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(tc, i);
        const char *why = "Each table change needs an identifier.";
        bool multi = false;
        if (!json_is_object(c) || !parse_ident(json_object_get(c, "identifier"), id[i].ns, id[i].name, &why, &multi)) {
            if (multi) err(x, 404, "NoSuchTableException", "The specified table does not exist.");
            else err(x, 400, "BadRequestException", why);
            goto out;
        }
        ch[i].ns = id[i].ns;
        ch[i].name = id[i].name;
        if (!change_arrays(x, c, &ch[i], &nupd)) goto out;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(id[j].ns, id[i].ns) && !strcmp(id[j].name, id[i].name)) {
                err(x, 400, "BadRequestException", "A table appears twice in one transaction.");
                goto out;
            }
        if (n > 1 && has_assert_create(ch[i].requirements)) {
            err(x, 400, "BadRequestException", "Creating a table inside a multi-table transaction is not supported.");
            goto out;
        }
    }
    commit_changes(x, ch, n, false, false);
out:
    free(id);
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
    snprintf(wb, sizeof wb, "%s--table-s3", id);
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
        fl_tmeta_t *m = fl_tablesvc_remember(x->svc, t.metadata_location, meta);
        if (m) send_meta(x, t.metadata_location, m, true, true);
        else err(x, 500, "ServiceFailureException", "Could not render the metadata.");
        fl_tmeta_release(m);
    }
    json_decref(meta);
}

static void h_load_view(rctx_t *x)
{
    fl_http_set_op(x->r->c, "loadView");
    fl_table_t t;
    if (!get_row(x, x->ns, x->name, true, &t, true)) return;
    fl_tmeta_t *m = load_meta(x, &t);
    if (!m) return;
    send_meta(x, t.metadata_location, m, true, true);
    fl_tmeta_release(m);
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
    { "GET", "namespaces", h_list_ns, "NoSuchNamespaceException", "ListNamespaces", 'b' },
    { "POST", "namespaces", h_create_ns, "NoSuchNamespaceException", "CreateNamespace", 'b' },
    { "GET", "namespaces/{namespace}", h_load_ns, "NoSuchNamespaceException", "GetNamespace", 'n' },
    { "HEAD", "namespaces/{namespace}", h_head_ns, "NoSuchNamespaceException", "GetNamespace", 'n' },
    { "DELETE", "namespaces/{namespace}", h_drop_ns, "NoSuchNamespaceException", "DeleteNamespace", 'n' },
    { "POST", "namespaces/{namespace}/properties", h_ns_props, "NoSuchNamespaceException", "CreateNamespace", 'n' },
    { "GET", "namespaces/{namespace}/tables", h_list_tables, "NoSuchNamespaceException", "ListTables", 'n' },
    { "POST", "namespaces/{namespace}/tables", h_create_table, "NoSuchNamespaceException",
      "CreateTable,PutTableData", 'c' },
    { "POST", "namespaces/{namespace}/register", h_register, "NoSuchNamespaceException",
      "CreateTable,PutTableData", 'c' },
    { "GET", "namespaces/{namespace}/tables/{table}", h_load_table, "NoSuchTableException",
      "GetTableMetadataLocation,GetTableData", 't' },
    { "HEAD", "namespaces/{namespace}/tables/{table}", h_head_table, "NoSuchTableException", "GetTable", 't' },
    { "POST", "namespaces/{namespace}/tables/{table}", h_commit_table, "NoSuchTableException",
      "UpdateTableMetadataLocation,PutTableData,GetTableData", 't' },
    { "DELETE", "namespaces/{namespace}/tables/{table}", h_drop_table, "NoSuchTableException", "DeleteTable", 't' },
    { "POST", "namespaces/{namespace}/tables/{table}/metrics", h_metrics, "NoSuchTableException", "GetTable", 't' },
    { "POST", "tables/rename", h_rename_table, "NoSuchTableException", "RenameTable", 'r' },
    { "POST", "transactions/commit", h_commit_tx, "NoSuchTableException",
      "UpdateTableMetadataLocation,PutTableData,GetTableData", 'x' },
    { "GET", "namespaces/{namespace}/views", h_list_views, "NoSuchNamespaceException", "ListTables", 'n' },
    { "POST", "namespaces/{namespace}/views", h_create_view, "NoSuchNamespaceException", "CreateTable", 'c' },
    { "GET", "namespaces/{namespace}/views/{view}", h_load_view, "NoSuchViewException",
      "GetTableMetadataLocation", 't' },
    { "HEAD", "namespaces/{namespace}/views/{view}", h_head_view, "NoSuchViewException", "GetTable", 't' },
    { "POST", "namespaces/{namespace}/views/{view}", h_replace_view, "NoSuchViewException",
      "UpdateTableMetadataLocation", 't' },
    { "DELETE", "namespaces/{namespace}/views/{view}", h_drop_view, "NoSuchViewException", "DeleteTable", 't' },
    { "POST", "views/rename", h_rename_view, "NoSuchViewException", "RenameTable", 'r' },
};
static const size_t nroutes = sizeof routes / sizeof routes[0];

/* ------------------------------------------------------------------ */
/* authorisation: each route needs the actions of the source document's
 * "Iceberg REST operation -> OSS action" table, on the table's ARN when it
 * names one that exists, else on "{bucket ARN}/table/" + "*" (table actions) or the
 * bucket's ARN, with s3tables:namespace / s3tables:tableName set. A denial is
 * a 403 ForbiddenException before the handler runs: nothing changes. */

static bool may(rctx_t *x, const char *actions, const fl_tbucket_t *b, const char *ns, const char *name,
                bool table_level)
{
    const fl_iam_who_t *who = x->r->who;
    if (!who || !x->cfg->iam) return true;
    const char *acts[4];
    char buf[4][64];
    size_t n = 0;
    for (const char *p = actions; *p && n < 4;) {
        size_t l = strcspn(p, ",");
        if (l > sizeof buf[n] - 10) l = sizeof buf[n] - 10;
        memcpy(buf[n], "s3tables:", 9);
        memcpy(buf[n] + 9, p, l);
        buf[n][9 + l] = 0;
        acts[n] = buf[n];
        n++;
        p += l + (p[l] == ',');
    }
    fl_table_t t;
    const fl_table_t *tp = NULL;
    if (table_level && ns && name) {
        if (x->row_state && !strcmp(ns, x->ns) && !strcmp(name, x->name)) tp = x->row_state == 1 ? &x->row : NULL;
        else if (fl_iam_table(x->cfg->iam, b->name, ns, name, &t)) tp = &t;
    }
    fl_iam_target_t tg = { .bucket = b, .table = tp, .ns = ns, .name = name,
                           .table_level = table_level };
    char msg[FL_ARN_MAX * 3 + 128];
    if (fl_iam_check(x->cfg->iam, who, acts, n, &tg, fl_http_peer(x->r->c), msg, sizeof msg)) return true;
    err(x, 403, "ForbiddenException", msg);
    return false;
}

/* The identifier at key of a JSON body (no error rendered: the handler does that). */
static bool peek_ident(json_t *o, const char *key, char *ns, char *name)
{
    const char *why;
    bool multi;
    return json_is_object(o) && parse_ident(json_object_get(o, key), ns, name, &why, &multi);
}

static bool authorize(rctx_t *x, const route_t *rt, const fl_tbucket_t *b)
{
    if (!x->r->who || !x->cfg->iam) return true;
    switch (rt->on) {
    case 'b': return may(x, rt->actions, b, NULL, NULL, false);
    case 'n': return may(x, rt->actions, b, x->ns, NULL, false);
    case 't': return may(x, rt->actions, b, x->ns, x->name, true);
    default: break;
    }
    /* the rest name their tables in the body: a malformed one is the handler's 400, after a check on the bucket */
    json_error_t je;
    json_t *body = json_loadb(x->r->body, x->r->body_len, 0, &je);
    bool ok = true;
    char ns[FL_NAME_MAX], name[FL_NAME_MAX];
    if (rt->on == 'c') {
        json_t *nm = json_object_get(body, "name");
        ok = may(x, rt->actions, b, x->ns, json_is_string(nm) ? json_string_value(nm) : NULL, true);
    } else if (rt->on == 'r') {
        if (peek_ident(body, "source", ns, name)) ok = may(x, rt->actions, b, ns, name, true);
        else ok = may(x, rt->actions, b, NULL, NULL, true);
    } else {
        json_t *tc = json_object_get(body, "table-changes"), *c;
        size_t i;
        bool any = false;
        json_array_foreach(tc, i, c) {
            if (!ok || i >= 100) break;
            if (!peek_ident(c, "identifier", ns, name)) continue;
            any = true;
            ok = may(x, rt->actions, b, ns, name, true);
        }
        if (ok && !any) ok = may(x, rt->actions, b, NULL, NULL, true);
    }
    json_decref(body);
    return ok;
}

static void h_config(rctx_t *x)
{
    fl_http_set_op(x->r->c, "getConfig");
    const char *w = qparam(x, "warehouse");
    if (!w || !w[0]) {
        err(x, 400, "BadRequestException", "The warehouse parameter (a table bucket ARN) is required.");
        return;
    }
    char bucket[64];
    fl_arn_match_t m = fl_arn_resolve(&x->sc->scope, w, bucket, NULL);
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
    if (x->sc->scope.any_account && !fl_arn_in_account(w, b.owner)) {
        err(x, 403, "ForbiddenException", "The warehouse belongs to another account.");
        return;
    }
    if (!may(x, "GetTableBucket", &b, NULL, NULL, false)) return;
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
/* A name segment's text into out (FL_NAME_MAX bytes); false when invalid. */
static bool seg_text(seg_t s, char *out, bool is_ns)
{
    fl_buf_t b;
    fl_buf_init(&b, FL_NAME_MAX * 3);
    fl_err_t e = fl_uri_decode(fl_slice(s.p, s.n), true, &b);
    bool ok = !e && b.ptr && b.len > 0 && b.len < FL_NAME_MAX && strlen(b.ptr) == b.len &&
              (!is_ns || !strchr(b.ptr, 0x1f));
    if (ok) memcpy(out, b.ptr, b.len + 1);
    fl_buf_free(&b);
    return ok;
}

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
    bool ok = seg_text(s, out, is_ns);
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
    seg_t segs[FL_REST_MAX_PATH_SEGMENTS];
    int nsegs = 0;
    const char *q = slash ? slash + 1 : end;
    bool bad = !slash;
    while (!bad && q <= end) {
        const char *s = memchr(q, '/', (size_t)(end - q));
        const char *e = s ? s : end;
        if (e == q || nsegs == FL_REST_MAX_PATH_SEGMENTS) {
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
    if (m == FL_ARN_OURS) {
        /* the ARN's account: compared with the bucket's owner below */
        const char *bk = strstr(arn.ptr, ":bucket/"), *a = bk;
        while (a && a > arn.ptr && a[-1] != ':') a--;
        if (bk && (size_t)(bk - a) < sizeof x->prefix_account)
            snprintf(x->prefix_account, sizeof x->prefix_account, "%.*s", (int)(bk - a), a);
    }
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
    /* a table or view route reads the bucket's row and the table's in one round trip
     * (the names are decoded again below, with their errors) */
    fl_tbucket_t b;
    fl_err_t e;
    bool found = false;
    if (ncaps >= 2 && seg_text(caps[0], x->ns, true) && seg_text(caps[1], x->name, false)) {
        e = fl_catalog_bucket_table_get(x->sc->cat, x->bucket, x->ns, x->name, &b, &x->row, &found);
        if (!e) x->row_state = found ? 1 : 2;
    } else {
        e = fl_catalog_bucket_get(x->sc->cat, x->bucket, &b);
    }
    if (e) {
        fl_http_set_op(r->c, "restUnknown");
        if (e == FL_ERR_NOT_FOUND || e == FL_ERR_NO_BUCKET)
            err(x, 404, rt->nf_type, "The specified table bucket does not exist.");
        else err(x, 500, "ServiceFailureException", fl_err_str(e));
        return;
    }
    if (x->sc->scope.any_account && strcmp(x->prefix_account, b.owner)) {
        fl_http_set_op(r->c, "restUnknown");
        err(x, 403, "ForbiddenException", "The prefix names a table bucket of another account.");
        return;
    }
    snprintf(x->owner, sizeof x->owner, "%s", b.owner);
    x->b = &b;
    if (ncaps >= 1 && !decode_seg(x, caps[0], x->ns, true, rt->nf_type)) return;
    if (ncaps >= 2 && !decode_seg(x, caps[1], x->name, false, rt->nf_type)) return;
    if (!authorize(x, rt, &b)) {
        fl_http_set_op(r->c, "denied");
        return;
    }
    rt->fn(x);
}
