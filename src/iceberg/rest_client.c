/* Iceberg REST client: one request helper (call) that builds {uri}{path}, adds auth, sends
 * JSON, parses JSON answers and maps statuses; the operations are thin shapes over it.
 * Paths: {uri}/v1/{prefix}/namespaces/{ns}/tables/{t} with the prefix verbatim, namespace
 * levels percent-encoded and joined by %1F, names percent-encoded (reference/iceberg.md
 * §1.1, §1.4). Lists follow next-page-token until it is null or empty. */
#include "iceberg/rest_client.h"
#include "base/limits.h"
#include "base/mem.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


struct fl_rest_client {
    fl_httpc_t *http;
    char *uri;                  /* no trailing '/' */
    fl_rest_auth_t auth;
    char *akid, *secret, *session_token, *region, *service;
    fl_httpc_sigv4_t sig;
    char *oauth_id, *oauth_secret, *oauth_scope, *oauth_uri;
    pthread_mutex_t mu;         /* guards bearer */
    char *bearer;
    json_t *config;
    json_t *endpoints;          /* /v1/config "endpoints" (array of strings), NULL if absent or empty */
    const char *prefix;         /* in config, or NULL */
    const char *sep;            /* in config, or "%1F" */
};

static char *dup_or_null(const char *s) { return s && *s ? fl_strdup(s) : NULL; }

static void free_secret(char *s)
{
    if (!s) return;
    memset(s, 0, strlen(s));
    free(s);
}

/* ---- identifiers ---- */

fl_err_t fl_rest_ident_parse(const char *dotted, bool with_name, fl_rest_ident_t *out)
{
    memset(out, 0, sizeof *out);
    if (!dotted || !*dotted) return FL_ERR_INVALID;
    size_t n = 1;
    for (const char *p = dotted; *p; p++) n += *p == '.';
    if (with_name && n < 2) return FL_ERR_INVALID;
    char **lv = fl_calloc(n, sizeof *lv);
    const char *p = dotted;
    for (size_t i = 0; i < n; i++) {
        size_t l = strcspn(p, ".");
        if (!l) {
            for (size_t j = 0; j < i; j++) free(lv[j]);
            free(lv);
            return FL_ERR_INVALID;
        }
        lv[i] = fl_strndup(p, l);
        p += l + (p[l] == '.');
    }
    out->ns = lv;
    out->nns = with_name ? n - 1 : n;
    out->name = with_name ? lv[n - 1] : NULL;
    if (with_name) lv[n - 1] = NULL;
    return FL_OK;
}

void fl_rest_ident_make(const char *const *levels, size_t n, const char *name, fl_rest_ident_t *out)
{
    memset(out, 0, sizeof *out);
    out->ns = fl_calloc(n ? n : 1, sizeof *out->ns);
    for (size_t i = 0; i < n; i++) out->ns[i] = fl_strdup(levels[i]);
    out->nns = n;
    out->name = name ? fl_strdup(name) : NULL;
}

void fl_rest_ident_free(fl_rest_ident_t *id)
{
    if (!id) return;
    for (size_t i = 0; i < id->nns; i++) free(id->ns[i]);
    free(id->ns);
    free(id->name);
    memset(id, 0, sizeof *id);
}

void fl_rest_ident_format(const fl_rest_ident_t *id, fl_buf_t *out)
{
    for (size_t i = 0; i < id->nns; i++) fl_buf_printf(out, "%s%s", i ? "." : "", id->ns[i]);
    if (id->name) fl_buf_printf(out, "%s%s", id->nns ? "." : "", id->name);
}

static json_t *ns_json(const fl_rest_ident_t *id)
{
    json_t *a = json_array();
    for (size_t i = 0; i < id->nns; i++) json_array_append_new(a, json_string(id->ns[i]));
    return a;
}

/* ---- pure pieces ---- */

fl_err_t fl_rest_ns_encode(const fl_rest_ident_t *ns, const char *sep, fl_buf_t *out)
{
    fl_err_t e = FL_OK;
    if (!ns || !ns->nns) return FL_ERR_INVALID;
    for (size_t i = 0; i < ns->nns && !e; i++) {
        if (!ns->ns[i][0]) return FL_ERR_INVALID;
        if (i) e = fl_buf_adds(out, sep ? sep : "%1F");
        if (!e) e = fl_uri_encode(fl_slice_cstr(ns->ns[i]), false, out);
    }
    return e;
}

static void merge_strings(json_t *dst, json_t *src)
{
    const char *k;
    json_t *v;
    if (!json_is_object(src)) return;
    /* copies, not references: the catalog config is shared by threads and jansson's
     * refcount check is not a synchronised read */
    json_object_foreach(src, k, v)
        if (json_is_string(v)) json_object_set_new(dst, k, json_stringn(json_string_value(v), json_string_length(v)));
}

json_t *fl_rest_config_merge(json_t *defaults, json_t *client, json_t *overrides)
{
    json_t *m = json_object();
    merge_strings(m, defaults);
    merge_strings(m, client);
    merge_strings(m, overrides);
    return m;
}

json_t *fl_rest_table_io_config(json_t *catalog, json_t *load_result, const char *location)
{
    json_t *m = fl_rest_config_merge(catalog, json_object_get(load_result, "config"), NULL);
    json_t *creds = json_object_get(load_result, "storage-credentials"), *best = NULL, *x;
    size_t i, bestlen = 0;
    json_array_foreach(creds, i, x) {
        json_t *p = json_object_get(x, "prefix");
        if (!json_is_string(p) || !location) continue;
        size_t pl = strlen(json_string_value(p));
        if (!strncmp(location, json_string_value(p), pl) && (!best || pl > bestlen))
            best = json_object_get(x, "config"), bestlen = pl;
    }
    merge_strings(m, best);
    return m;
}

/* ---- requests ---- */

static char *current_bearer(fl_rest_client_t *c)
{
    pthread_mutex_lock(&c->mu);
    char *b = c->bearer ? fl_strdup(c->bearer) : NULL;
    pthread_mutex_unlock(&c->mu);
    return b;
}

/* OAuth2 client_credentials grant; stores the access token as the bearer. */
static fl_err_t oauth_token(fl_rest_client_t *c, fl_rest_error_t *err)
{
    fl_err_t e;
    fl_buf_t url, form, resp;
    fl_buf_init(&url, 0);
    fl_buf_init(&form, 0);
    fl_buf_init(&resp, 1 << 20);
    json_t *doc = NULL;
    if (c->oauth_uri) fl_buf_adds(&url, c->oauth_uri);
    else fl_buf_printf(&url, "%s/v1/oauth/tokens", c->uri);
    fl_buf_adds(&form, "grant_type=client_credentials&client_id=");
    fl_uri_encode(fl_slice_cstr(c->oauth_id ? c->oauth_id : ""), false, &form);
    fl_buf_adds(&form, "&client_secret=");
    fl_uri_encode(fl_slice_cstr(c->oauth_secret ? c->oauth_secret : ""), false, &form);
    fl_buf_adds(&form, "&scope=");
    fl_uri_encode(fl_slice_cstr(c->oauth_scope ? c->oauth_scope : "catalog"), false, &form);
    fl_http_header_t ct = { "content-type", 12, "application/x-www-form-urlencoded", 33 };
    fl_httpc_req_t r = { .method = "POST", .url = url.ptr, .headers = &ct, .nheaders = 1,
                         .body = form.ptr, .body_len = form.len, .has_body = true, .body_fd = -1,
                         .resp = &resp };
    fl_httpc_resp_t rs;
    if ((e = fl_httpc_do(c->http, &r, &rs, err))) goto out;
    if (rs.status != 200) {
        e = fl_httpc_status_err((int)rs.status, err->type);
        if (e == FL_ERR_INVALID) e = FL_ERR_AUTH; /* invalid_client and friends */
        goto out;
    }
    doc = json_loadb(resp.ptr, resp.len, 0, NULL);
    json_t *tok = json_object_get(doc, "access_token");
    if (!json_is_string(tok)) {
        e = fl_remote_error_set(err, FL_ERR_PROTO, "OAuth2 token response without access_token");
        goto out;
    }
    pthread_mutex_lock(&c->mu);
    free_secret(c->bearer);
    c->bearer = fl_strdup(json_string_value(tok));
    pthread_mutex_unlock(&c->mu);
    e = FL_OK;
out:
    json_decref(doc);
    if (form.ptr) memset(form.ptr, 0, form.len);
    if (resp.ptr) memset(resp.ptr, 0, resp.len);
    fl_buf_free(&url);
    fl_buf_free(&form);
    fl_buf_free(&resp);
    return e;
}

/* method {uri}{path}?query with an optional JSON body; *out gets the parsed 2xx JSON body
 * (NULL for an empty one) when out is non-NULL. *status gets the HTTP status (0 if none). */
static fl_err_t call(fl_rest_client_t *c, const char *method, const char *path, const char *query,
                     json_t *body, json_t **out, long *status, fl_rest_error_t *err)
{
    fl_err_t e;
    fl_buf_t url, resp;
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    char *bearer = NULL;
    fl_buf_init(&url, 0);
    fl_buf_init(&resp, FL_REST_CLIENT_MAX_BODY);
    if (out) *out = NULL;
    if (status) *status = 0;
    fl_buf_printf(&url, "%s%s", c->uri, path);
    fl_http_header_t hdr[2] = {
        { "content-type", 12, "application/json", 16 },
        { "accept", 6, "application/json", 16 },
    };
    bool idem = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    for (int attempt = 0;; attempt++) {
        free_secret(bearer);
        bearer = c->auth == FL_REST_AUTH_SIGV4 ? NULL : current_bearer(c);
        fl_httpc_req_t r = {
            .method = method, .url = url.ptr, .query = query, .headers = hdr, .nheaders = 2,
            .body = text, .body_len = text ? strlen(text) : 0, .has_body = text != NULL,
            .body_fd = -1, .sigv4 = c->auth == FL_REST_AUTH_SIGV4 ? &c->sig : NULL,
            .bearer = bearer, .idempotent = idem, .resp = &resp,
        };
        fl_httpc_resp_t rs;
        if ((e = fl_httpc_do(c->http, &r, &rs, err))) goto out;
        if (status) *status = rs.status;
        if (rs.status == 401 && c->auth == FL_REST_AUTH_OAUTH2 && attempt == 0) {
            fl_rest_error_t e2;
            if (oauth_token(c, &e2) == FL_OK) continue; /* token expired: once more */
        }
        if (rs.status < 200 || rs.status >= 300) {
            e = fl_httpc_status_err((int)rs.status, err->type);
            goto out;
        }
        break;
    }
    if (out && resp.len) {
        json_error_t je;
        *out = json_loadb(resp.ptr, resp.len, 0, &je);
        if (!*out) {
            e = fl_remote_error_set(err, FL_ERR_PROTO, "%s %s: response is not JSON: %s", method,
                                    path, je.text);
            goto out;
        }
    }
    e = FL_OK;
out:
    free_secret(bearer);
    free(text);
    fl_buf_free(&url);
    fl_buf_free(&resp);
    return e;
}

/* "/v1/{prefix}/" */
static void base_path(fl_rest_client_t *c, fl_buf_t *p)
{
    fl_buf_adds(p, "/v1/");
    if (c->prefix && *c->prefix) fl_buf_printf(p, "%s/", c->prefix);
}

/* "/v1/{prefix}/namespaces/{ns}[/tables/{t}]" */
static fl_err_t ident_path(fl_rest_client_t *c, const fl_rest_ident_t *id, bool table, fl_buf_t *p,
                           fl_rest_error_t *err)
{
    base_path(c, p);
    fl_buf_adds(p, "namespaces/");
    if (fl_rest_ns_encode(id, c->sep, p))
        return fl_remote_error_set(err, FL_ERR_INVALID, "empty namespace");
    if (table) {
        if (!id->name || !id->name[0]) return fl_remote_error_set(err, FL_ERR_INVALID, "no table name");
        fl_buf_adds(p, "/tables/");
        fl_uri_encode(fl_slice_cstr(id->name), false, p);
    }
    return FL_OK;
}

/* ---- client ---- */

fl_err_t fl_rest_client_new(const fl_rest_opts_t *o, fl_rest_client_t **out, fl_rest_error_t *err)
{
    fl_err_t e;
    fl_buf_t q;
    json_t *doc = NULL, *client = NULL;
    *out = NULL;
    memset(err, 0, sizeof *err);
    if (!o->uri || !*o->uri) return fl_remote_error_set(err, FL_ERR_INVALID, "no catalog URI");
    if (strncmp(o->uri, "http://", 7) && strncmp(o->uri, "https://", 8))
        return fl_remote_error_set(err, FL_ERR_INVALID, "catalog URI must start with http:// or https://");
    if (o->auth == FL_REST_AUTH_SIGV4 && (!o->access_key_id || !*o->access_key_id ||
                                          !o->secret_access_key || !*o->secret_access_key))
        return fl_remote_error_set(err, FL_ERR_AUTH, "SigV4 needs an access key id and a secret access key");
    if (o->auth == FL_REST_AUTH_BEARER && (!o->token || !*o->token))
        return fl_remote_error_set(err, FL_ERR_AUTH, "bearer auth needs a token");
    if (o->auth == FL_REST_AUTH_OAUTH2 && (!o->oauth_client_id || !o->oauth_client_secret))
        return fl_remote_error_set(err, FL_ERR_AUTH, "OAuth2 needs a client id and a client secret");

    fl_rest_client_t *c = fl_calloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    fl_httpc_cfg_t hc = { .connect_timeout_ms = o->connect_timeout_ms,
                          .timeout_ms = o->timeout_ms ? o->timeout_ms : 120000,
                          .max_retries = o->max_retries };
    c->http = fl_httpc_new(&hc);
    c->uri = fl_strdup(o->uri);
    for (size_t l = strlen(c->uri); l && c->uri[l - 1] == '/'; l--) c->uri[l - 1] = 0;
    c->auth = o->auth;
    c->akid = dup_or_null(o->access_key_id);
    c->secret = dup_or_null(o->secret_access_key);
    c->session_token = dup_or_null(o->session_token);
    c->region = fl_strdup(o->region && *o->region ? o->region : "us-east-1");
    c->service = fl_strdup(o->signing_name && *o->signing_name ? o->signing_name : "s3tables");
    c->sig = (fl_httpc_sigv4_t){ c->akid, c->secret, c->session_token, c->region, c->service };
    c->oauth_id = dup_or_null(o->oauth_client_id);
    c->oauth_secret = dup_or_null(o->oauth_client_secret);
    c->oauth_scope = dup_or_null(o->oauth_scope);
    c->oauth_uri = dup_or_null(o->oauth_server_uri);
    if (o->auth == FL_REST_AUTH_BEARER) c->bearer = fl_strdup(o->token);
    if (o->auth == FL_REST_AUTH_OAUTH2 && (e = oauth_token(c, err))) goto out;

    fl_buf_init(&q, 0);
    if (o->warehouse && *o->warehouse) {
        fl_buf_adds(&q, "warehouse=");
        fl_uri_encode(fl_slice_cstr(o->warehouse), false, &q);
    }
    e = call(c, "GET", "/v1/config", q.len ? q.ptr : NULL, NULL, &doc, NULL, err);
    fl_buf_free(&q);
    if (e) goto out;
    if (!json_is_object(doc)) {
        e = fl_remote_error_set(err, FL_ERR_PROTO, "/v1/config: not a JSON object");
        goto out;
    }
    client = json_is_object(o->properties) ? json_deep_copy(o->properties) : json_object();
    if (o->warehouse && *o->warehouse) json_object_set_new(client, "warehouse", json_string(o->warehouse));
    c->config = fl_rest_config_merge(json_object_get(doc, "defaults"), client,
                                     json_object_get(doc, "overrides"));
    json_t *eps = json_object_get(doc, "endpoints");
    if (json_is_array(eps) && json_array_size(eps)) c->endpoints = json_incref(eps);
    c->prefix = fl_rest_client_prop(c, "prefix");
    c->sep = fl_rest_client_prop(c, "namespace-separator");
    if (!c->sep || !*c->sep) c->sep = "%1F";
    /* a server-issued token (config "token") becomes the bearer unless we sign or have one */
    const char *tok = fl_rest_client_prop(c, "token");
    if (tok && *tok && c->auth == FL_REST_AUTH_NONE) {
        c->bearer = fl_strdup(tok);
        c->auth = FL_REST_AUTH_BEARER;
    }
    e = FL_OK;
out:
    json_decref(doc);
    json_decref(client);
    if (e) fl_rest_client_free(c);
    else *out = c;
    return e;
}

void fl_rest_client_free(fl_rest_client_t *c)
{
    if (!c) return;
    fl_httpc_free(c->http);
    json_decref(c->endpoints);
    free(c->uri);
    free(c->akid);
    free_secret(c->secret);
    free_secret(c->session_token);
    free(c->region);
    free(c->service);
    free(c->oauth_id);
    free_secret(c->oauth_secret);
    free(c->oauth_scope);
    free(c->oauth_uri);
    free_secret(c->bearer);
    json_decref(c->config);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int fl_rest_client_endpoint(const fl_rest_client_t *c, const char *endpoint)
{
    if (!c->endpoints) return -1;
    size_t i;
    json_t *v;
    json_array_foreach(c->endpoints, i, v)
        if (json_is_string(v) && !strcmp(json_string_value(v), endpoint)) return 1;
    return 0;
}

json_t *fl_rest_client_config(const fl_rest_client_t *c) { return c->config; }

const char *fl_rest_client_prop(const fl_rest_client_t *c, const char *key)
{
    json_t *v = c->config ? json_object_get(c->config, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* ---- namespaces ---- */

/* Follows next-page-token: GETs path with query base (may be NULL) and appends the array
 * member `key` of each page to *out. */
static fl_err_t list_all(fl_rest_client_t *c, const char *path, const char *qbase, const char *key,
                         json_t **out, fl_rest_error_t *err)
{
    fl_err_t e = FL_OK;
    json_t *all = json_array();
    char *token = NULL;
    fl_buf_t q;
    fl_buf_init(&q, 0);
    for (int page = 0; page < FL_REST_CLIENT_MAX_PAGES; page++) {
        json_t *doc = NULL;
        fl_buf_reset(&q);
        /* sorted parameter names: pageToken < parent */
        if (token) {
            fl_buf_adds(&q, "pageToken=");
            fl_uri_encode(fl_slice_cstr(token), false, &q);
        }
        if (qbase) fl_buf_printf(&q, "%s%s", q.len ? "&" : "", qbase);
        if ((e = call(c, "GET", path, q.len ? q.ptr : NULL, NULL, &doc, NULL, err))) break;
        json_t *arr = json_object_get(doc, key);
        if (!json_is_array(arr)) {
            json_decref(doc);
            e = fl_remote_error_set(err, FL_ERR_PROTO, "list response without \"%s\"", key);
            break;
        }
        json_array_extend(all, arr);
        json_t *next = json_object_get(doc, "next-page-token");
        free(token);
        token = json_is_string(next) && json_string_length(next) ? fl_strdup(json_string_value(next)) : NULL;
        json_decref(doc);
        if (!token) break;
    }
    free(token);
    fl_buf_free(&q);
    if (e) json_decref(all);
    else *out = all;
    return e;
}

fl_err_t fl_rest_list_namespaces(fl_rest_client_t *c, const fl_rest_ident_t *parent, json_t **out,
                                 fl_rest_error_t *err)
{
    fl_buf_t p, q;
    fl_buf_init(&p, 0);
    fl_buf_init(&q, 0);
    base_path(c, &p);
    fl_buf_adds(&p, "namespaces");
    if (parent && parent->nns) {
        fl_buf_t joined;
        fl_buf_init(&joined, 0);
        for (size_t i = 0; i < parent->nns; i++) {
            if (i) fl_buf_addc(&joined, 0x1f);
            fl_buf_adds(&joined, parent->ns[i]);
        }
        fl_buf_adds(&q, "parent=");
        fl_uri_encode(fl_slice(joined.ptr, joined.len), false, &q);
        fl_buf_free(&joined);
    }
    fl_err_t e = list_all(c, p.ptr, q.len ? q.ptr : NULL, "namespaces", out, err);
    fl_buf_free(&p);
    fl_buf_free(&q);
    return e;
}

fl_err_t fl_rest_create_namespace(fl_rest_client_t *c, const fl_rest_ident_t *ns, json_t *properties,
                                  fl_rest_error_t *err)
{
    fl_buf_t p;
    fl_buf_init(&p, 0);
    base_path(c, &p);
    fl_buf_adds(&p, "namespaces");
    json_t *body = json_pack("{s:o}", "namespace", ns_json(ns));
    if (json_is_object(properties)) json_object_set(body, "properties", properties);
    json_t *doc = NULL;
    fl_err_t e = ns->nns ? call(c, "POST", p.ptr, NULL, body, &doc, NULL, err)
                         : fl_remote_error_set(err, FL_ERR_INVALID, "empty namespace");
    json_decref(doc);
    json_decref(body);
    fl_buf_free(&p);
    return e;
}

fl_err_t fl_rest_load_namespace(fl_rest_client_t *c, const fl_rest_ident_t *ns, json_t **props,
                                fl_rest_error_t *err)
{
    fl_buf_t p;
    fl_buf_init(&p, 0);
    json_t *doc = NULL;
    fl_err_t e = ident_path(c, ns, false, &p, err);
    if (!e) e = call(c, "GET", p.ptr, NULL, NULL, &doc, NULL, err);
    if (!e && props) {
        json_t *pr = json_object_get(doc, "properties");
        *props = json_is_object(pr) ? json_incref(pr) : json_object();
    }
    json_decref(doc);
    fl_buf_free(&p);
    return e;
}

fl_err_t fl_rest_drop_namespace(fl_rest_client_t *c, const fl_rest_ident_t *ns, fl_rest_error_t *err)
{
    fl_buf_t p;
    fl_buf_init(&p, 0);
    fl_err_t e = ident_path(c, ns, false, &p, err);
    if (!e) e = call(c, "DELETE", p.ptr, NULL, NULL, NULL, NULL, err);
    if (e == FL_ERR_CONFLICT) e = FL_ERR_NOT_EMPTY;
    fl_buf_free(&p);
    return e;
}

/* ---- tables ---- */

fl_err_t fl_rest_list_tables(fl_rest_client_t *c, const fl_rest_ident_t *ns, json_t **out,
                             fl_rest_error_t *err)
{
    fl_buf_t p;
    fl_buf_init(&p, 0);
    fl_err_t e = ident_path(c, ns, false, &p, err);
    if (!e) {
        fl_buf_adds(&p, "/tables");
        e = list_all(c, p.ptr, NULL, "identifiers", out, err);
    }
    fl_buf_free(&p);
    return e;
}

void fl_rest_table_free(fl_rest_table_t *t)
{
    if (!t) return;
    free(t->metadata_location);
    json_decref(t->metadata);
    json_decref(t->config);
    memset(t, 0, sizeof *t);
}

/* Fills t from a LoadTableResult / CommitTableResponse document. keep_config: leave
 * t->config as is (commit responses carry none). */
static fl_err_t take_result(fl_rest_client_t *c, json_t *doc, bool keep_config, fl_rest_table_t *t,
                            fl_rest_error_t *err)
{
    json_t *md = json_object_get(doc, "metadata"), *loc = json_object_get(doc, "metadata-location");
    if (!json_is_object(md) || (loc && !json_is_string(loc) && !json_is_null(loc)))
        return fl_remote_error_set(err, FL_ERR_PROTO, "table response without metadata");
    json_t *tl = json_object_get(md, "location");
    free(t->metadata_location);
    t->metadata_location = json_is_string(loc) ? fl_strdup(json_string_value(loc)) : NULL;
    json_decref(t->metadata);
    t->metadata = json_incref(md);
    if (!keep_config || !t->config) {
        json_decref(t->config);
        t->config = fl_rest_table_io_config(c->config, keep_config ? NULL : doc,
                                            json_is_string(tl) ? json_string_value(tl) : NULL);
    }
    return FL_OK;
}

fl_err_t fl_rest_load_table(fl_rest_client_t *c, const fl_rest_ident_t *t, fl_rest_table_t *out,
                            fl_rest_error_t *err)
{
    fl_buf_t p;
    fl_buf_init(&p, 0);
    json_t *doc = NULL;
    fl_err_t e = ident_path(c, t, true, &p, err);
    if (!e) e = call(c, "GET", p.ptr, NULL, NULL, &doc, NULL, err);
    if (!e) e = take_result(c, doc, false, out, err);
    json_decref(doc);
    fl_buf_free(&p);
    return e;
}

fl_err_t fl_rest_create_table(fl_rest_client_t *c, const fl_rest_ident_t *t, const fl_rest_create_t *req,
                              fl_rest_table_t *out, fl_rest_error_t *err)
{
    fl_buf_t p;
    fl_buf_init(&p, 0);
    json_t *doc = NULL, *body = NULL;
    fl_err_t e = ident_path(c, t, false, &p, err);
    if (!e && (!t->name || !req->schema)) e = fl_remote_error_set(err, FL_ERR_INVALID, "create table needs a name and a schema");
    if (e) goto out;
    fl_buf_adds(&p, "/tables");
    body = json_pack("{s:s,s:O}", "name", t->name, "schema", req->schema);
    if (req->partition_spec) json_object_set(body, "partition-spec", req->partition_spec);
    if (req->write_order) json_object_set(body, "write-order", req->write_order);
    if (req->properties) json_object_set(body, "properties", req->properties);
    if (req->location) json_object_set_new(body, "location", json_string(req->location));
    if (req->stage_create) json_object_set_new(body, "stage-create", json_true());
    if ((e = call(c, "POST", p.ptr, NULL, body, &doc, NULL, err))) goto out;
    e = take_result(c, doc, false, out, err);
out:
    json_decref(body);
    json_decref(doc);
    fl_buf_free(&p);
    return e;
}

fl_err_t fl_rest_drop_table(fl_rest_client_t *c, const fl_rest_ident_t *t, bool purge,
                            fl_rest_error_t *err)
{
    fl_buf_t p;
    fl_buf_init(&p, 0);
    fl_err_t e = ident_path(c, t, true, &p, err);
    if (!e) e = call(c, "DELETE", p.ptr, purge ? "purgeRequested=true" : NULL, NULL, NULL, NULL, err);
    fl_buf_free(&p);
    return e;
}

/* 409 conflict, 5xx or a maybe-sent transport failure: unknown. */
static bool outcome_unknown(fl_err_t e, long status, const fl_rest_error_t *err)
{
    if (!e || e == FL_ERR_CONFLICT) return false;
    if (status >= 500) return true;
    return status == 0 && err->maybe_sent;
}

fl_err_t fl_rest_commit(fl_rest_client_t *c, const fl_rest_ident_t *t, json_t *requirements,
                        json_t *updates, fl_rest_table_t *table, bool *commit_unknown,
                        fl_rest_error_t *err)
{
    fl_buf_t p;
    fl_buf_init(&p, 0);
    json_t *doc = NULL, *body = NULL;
    long status = 0;
    if (commit_unknown) *commit_unknown = false;
    fl_err_t e = ident_path(c, t, true, &p, err);
    if (e) goto out;
    body = json_pack("{s:{s:o,s:s},s:o,s:o}", "identifier", "namespace", ns_json(t), "name", t->name,
                     "requirements", requirements ? json_incref(requirements) : json_array(),
                     "updates", updates ? json_incref(updates) : json_array());
    e = call(c, "POST", p.ptr, NULL, body, &doc, &status, err);
    if (e) {
        if (e == FL_ERR_EXISTS || (status == 409 && e != FL_ERR_CONFLICT)) e = FL_ERR_CONFLICT;
        if (commit_unknown) *commit_unknown = outcome_unknown(e, status, err);
        goto out;
    }
    if (table) {
        e = take_result(c, doc, true, table, err);
        if (e && commit_unknown) *commit_unknown = true; /* a 2xx we could not read: it landed */
    }
out:
    json_decref(body);
    json_decref(doc);
    fl_buf_free(&p);
    return e;
}

fl_err_t fl_rest_commit_transaction(fl_rest_client_t *c, json_t *changes, bool *commit_unknown,
                                    fl_rest_error_t *err)
{
    fl_buf_t p;
    fl_buf_init(&p, 0);
    long status = 0;
    if (commit_unknown) *commit_unknown = false;
    base_path(c, &p);
    fl_buf_adds(&p, "transactions/commit");
    json_t *body = json_pack("{s:o}", "table-changes", changes ? json_incref(changes) : json_array());
    fl_err_t e = call(c, "POST", p.ptr, NULL, body, NULL, &status, err);
    if (e == FL_ERR_EXISTS || (e && status == 409)) e = FL_ERR_CONFLICT;
    if (commit_unknown) *commit_unknown = outcome_unknown(e, status, err);
    json_decref(body);
    fl_buf_free(&p);
    return e;
}
