/* Object store, remote S3 backend (`floe serve --object-store s3://BUCKET[/PREFIX]`).
 *
 * Layout in the remote bucket:  PREFIX/b/NAME      empty marker of floe bucket NAME
 *                               PREFIX/o/NAME/KEY  object KEY of floe bucket NAME
 * An object's floe headers (opaque to the rest of the store: content headers,
 * x-amz-meta-*, x-amz-checksum-*) travel as those headers, which an S3 store
 * keeps and returns with HEAD (checksums with x-amz-checksum-mode: ENABLED).
 * ETags are the remote store's: an MD5 for a single PUT and MD5-of-MD5s-N for a
 * multipart upload, the same values floe computes itself (stores that encrypt
 * with KMS give other ETags; floe passes them through unchanged).
 *
 * Writes: a body of known length goes to the remote store as it arrives
 * (store/fs.c's streamed writer: a pipe read by the PUT or UploadPart on its
 * own thread, the last byte held back until the body is verified, so a body
 * cut short or refused aborts the request and leaves nothing); others
 * (aws-chunked, OSS, computed checksums) are spooled to a file under
 * dir/blobs/tmp first, then fl_s3s_put sends that file with one PUT
 * (UNSIGNED-PAYLOAD SigV4, pread by libcurl). Memory stays bounded whatever
 * the object size. Multipart uploads are the remote
 * store's own: upload ids, parts and CompleteMultipartUpload pass through.
 * Reads: ranged GETs of at most the caller's buffer, each with If-Match on the
 * ETag seen at open, so a read never mixes two versions of an object.
 * Conditions (If-None-Match: *, If-Match) are sent with the PUT, Complete or
 * DELETE, so the remote store decides them atomically across floe nodes.
 *
 * Threads: every call is thread-safe (httpc takes a pooled handle per call).
 * Failures: a transport failure or remote 5xx (after httpc's retries of
 * idempotent requests) is FL_ERR_IO; statuses map through fl_httpc_status_err.
 * The secret key and session token are only handed to the signer. */
#include "store/s3_int.h"
#include "base/buf.h"
#include "base/limits.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include "net/httpc.h"
#include "net/xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>


struct fl_s3s {
    fl_httpc_t *http;
    char *endpoint, *region, *bucket, *prefix; /* prefix "" or ending in '/' */
    char *akid, *secret, *token;
    bool path_style;
    fl_httpc_sigv4_t sig;
};

typedef struct rd {
    fl_s3s_t *r;
    char *rkey;
    size_t rkeylen;
    char etag[130]; /* as the store sent it, quoted */
} rd_t;

static void free_secret(char *s)
{
    if (s) { memset(s, 0, strlen(s)); free(s); }
}

void fl_s3s_close(fl_s3s_t *r)
{
    if (!r) return;
    fl_httpc_free(r->http);
    free(r->endpoint); free(r->region); free(r->bucket); free(r->prefix); free(r->akid);
    free_secret(r->secret);
    free_secret(r->token);
    free(r);
}

/* ---- requests ---- */

typedef struct call {
    const char *method;
    const char *rkey; size_t rkeylen;  /* remote key; NULL = the bucket itself */
    const char *query;
    fl_http_header_t hdr[FL_STORE_MAX_FWD_HEADERS + 4]; size_t nhdr;
    const void *body; size_t body_len; bool has_body;
    int fd; int64_t fd_len;
    bool pipe;                         /* fd is a pipe (a streamed body) */
    fl_buf_t *resp;
    void *dst; size_t dst_cap;
    fl_buf_t *resp_headers;
    bool idempotent;
} call_t;

static void hdr(call_t *c, const char *name, const char *value)
{
    c->hdr[c->nhdr++] = (fl_http_header_t){ name, strlen(name), value, strlen(value) };
}

/* The store's own conditions for a write or delete: If-None-Match: * and
 * If-Match (an ETag quoted, or *); im holds the latter's text and must live as
 * long as c. */
static void cond_hdrs(call_t *c, const fl_put_cond_t *cond, char im[64])
{
    if (!cond) return;
    if (cond->if_none_match_star) hdr(c, "if-none-match", "*");
    if (!cond->if_match) return;
    if (!strcmp(cond->if_match, "*")) snprintf(im, 64, "*");
    else snprintf(im, 64, "\"%.48s\"", cond->if_match);
    hdr(c, "if-match", im);
}

/* Runs c; FL_OK only for a 2xx answer. Otherwise the error of the status
 * (rs->status tells; 0 = no answer) with err->type the S3 error code if any. */
static fl_err_t run(fl_s3s_t *r, call_t *c, fl_httpc_resp_t *rs, fl_remote_error_t *err)
{
    fl_buf_t url;
    fl_buf_init(&url, 0);
    memset(rs, 0, sizeof *rs);
    memset(err, 0, sizeof *err);
    const char *hs = strstr(r->endpoint, "://") + 3;
    if (r->path_style) {
        fl_buf_printf(&url, "%s/", r->endpoint);
        fl_uri_encode(fl_slice_cstr(r->bucket), false, &url);
    } else {
        fl_buf_printf(&url, "%.*s%s.%s", (int)(hs - r->endpoint), r->endpoint, r->bucket, hs);
    }
    fl_buf_addc(&url, '/');
    if (c->rkey) fl_uri_encode((fl_slice_t){ c->rkey, c->rkeylen }, true, &url);
    fl_httpc_req_t q = {
        .method = c->method, .url = url.ptr, .query = c->query, .headers = c->hdr, .nheaders = c->nhdr,
        .body = c->body, .body_len = c->body_len, .has_body = c->has_body,
        .body_fd = c->has_body ? -1 : c->fd, .body_off = 0, .body_fd_len = (uint64_t)c->fd_len,
        .body_fd_pipe = c->pipe,
        .sigv4 = r->akid ? &r->sig : NULL, .unsigned_payload = true, .idempotent = c->idempotent,
        .resp = c->resp, .dst = c->dst, .dst_cap = c->dst_cap, .resp_headers = c->resp_headers,
    };
    fl_err_t e = fl_httpc_do(r->http, &q, rs, err);
    if (e) {
        fl_warn("store s3: %s %s/%.*s: %s", c->method, r->bucket, (int)(c->rkey ? c->rkeylen : 0),
                c->rkey ? c->rkey : "", err->message);
        if (e != FL_ERR_TIMEOUT) e = FL_ERR_IO;
    } else if (rs->status < 200 || rs->status >= 300) {
        e = fl_httpc_status_err((int)rs->status, err->type);
        if (rs->status >= 500 || rs->status == 403 || rs->status == 401 || rs->status == 400) {
            fl_warn("store s3: %s %s/%.*s: HTTP %ld %s %s", c->method, r->bucket,
                    (int)(c->rkey ? c->rkeylen : 0), c->rkey ? c->rkey : "", rs->status, err->type, err->message);
            e = FL_ERR_IO;
        }
    }
    fl_buf_free(&url);
    return e;
}

static void obj_key(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen, fl_buf_t *out)
{
    fl_buf_printf(out, "%so/%s/", r->prefix, bucket);
    fl_buf_add(out, key, keylen);
}

static void etag_unquote(const char *in, char out[48])
{
    size_t n = strlen(in);
    if (n >= 2 && in[0] == '"' && in[n - 1] == '"') in++, n -= 2;
    snprintf(out, 48, "%.*s", (int)(n < 47 ? n : 47), in);
}

static int etag_parts(const char *etag)
{
    const char *d = strchr(etag, '-');
    return d ? atoi(d + 1) : 0;
}

static int64_t parse_iso_ms(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                     &tm.tm_min, &tm.tm_sec) != 6)
        return 0;
    const char *dot = strchr(s, '.');
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm) * 1000 + (dot ? atoi(dot + 1) % 1000 : 0);
}

/* The value of header name in "name: value\n" lines (malloc'd), or NULL. */
static char *header_get(const fl_buf_t *h, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = h->ptr; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t ll = e ? (size_t)(e - p) : strlen(p);
        if (ll > nl + 1 && !strncmp(p, name, nl) && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ') v++;
            char *out = fl_malloc(ll - (size_t)(v - p) + 1);
            memcpy(out, v, ll - (size_t)(v - p));
            out[ll - (size_t)(v - p)] = 0;
            return out;
        }
        p = e ? e + 1 : p + ll;
    }
    return NULL;
}

/* A key or prefix of a listing asked with encoding-type=url (any byte may be in
 * a key, XML 1.0 cannot carry them all): decoded, '+' as space (AWS encodes a
 * space so, and '+' as %2B). malloc'd; NULL if text is NULL or malformed. */
static char *url_text(const char *text)
{
    if (!text) return NULL;
    fl_buf_t b;
    fl_buf_init(&b, 0);
    char *out = NULL;
    if (fl_uri_decode(fl_slice_cstr(text), true, &b) == FL_OK) out = fl_buf_steal(&b);
    fl_buf_free(&b);
    return out;
}

/* Whether a line of an object's opaque headers is one the remote store keeps
 * natively (content headers, x-amz-meta-*, x-amz-checksum-*), so it travels as
 * that header and comes back with HEAD. */
static bool kept_header(const char *name, size_t n)
{
    static const char *const std[] = {
        "content-type", "content-encoding", "cache-control", "content-disposition",
        "content-language", "expires", "x-amz-website-redirect-location", NULL,
    };
    if (n > 11 && !strncmp(name, "x-amz-meta-", 11)) return true;
    if (n > 15 && !strncmp(name, "x-amz-checksum-", 15)) return n != 20 || strncmp(name + 15, "mode", 4);
    for (int i = 0; std[i]; i++)
        if (strlen(std[i]) == n && !strncmp(std[i], name, n)) return true;
    return false;
}

/* meta from a HEAD/GET answer: the headers the store kept become the opaque
 * header text again. */
static void meta_from(const fl_httpc_resp_t *rs, const fl_buf_t *h, fl_obj_meta_t *m)
{
    memset(m, 0, sizeof *m);
    etag_unquote(rs->etag, m->etag);
    m->parts = etag_parts(m->etag);
    m->size = rs->content_length;
    int64_t t = rs->last_modified[0] ? fl_time_parse_http(rs->last_modified, strlen(rs->last_modified)) : -1;
    m->mtime_ms = t > 0 ? t * 1000 : 0;
    fl_buf_t out;
    fl_buf_init(&out, 0);
    for (const char *p = h->ptr; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t ll = e ? (size_t)(e - p) : strlen(p);
        const char *colon = memchr(p, ':', ll);
        if (colon && kept_header(p, (size_t)(colon - p))) {
            fl_buf_add(&out, p, ll);
            fl_buf_addc(&out, '\n');
        }
        p = e ? e + 1 : p + ll;
    }
    m->headers = out.ptr ? fl_buf_steal(&out) : NULL;
    fl_buf_free(&out);
}

/* Whether floe bucket name exists: FL_OK, FL_ERR_NO_BUCKET, or an error. */
static fl_err_t bucket_check(fl_s3s_t *r, const char *name, int64_t *created)
{
    fl_buf_t k;
    fl_buf_init(&k, 0);
    fl_buf_printf(&k, "%sb/%s", r->prefix, name);
    call_t c = { .method = "HEAD", .rkey = k.ptr, .rkeylen = k.len, .fd = -1, .idempotent = true };
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    fl_err_t e = run(r, &c, &rs, &err);
    if (e == FL_ERR_NOT_FOUND) e = FL_ERR_NO_BUCKET;
    if (!e && created) {
        int64_t t = fl_time_parse_http(rs.last_modified, strlen(rs.last_modified));
        *created = t > 0 ? t * 1000 : 0;
    }
    fl_buf_free(&k);
    return e;
}

/* FL_ERR_NOT_FOUND for a missing object becomes FL_ERR_NO_BUCKET when its bucket is gone. */
static fl_err_t not_found(fl_s3s_t *r, const char *bucket, fl_err_t e)
{
    if (e != FL_ERR_NOT_FOUND) return e;
    fl_err_t b = bucket_check(r, bucket, NULL);
    return b == FL_ERR_NO_BUCKET ? b : b ? b : FL_ERR_NOT_FOUND;
}

fl_s3s_t *fl_s3s_open(const fl_store_s3_cfg_t *cfg)
{
    const char *u = cfg && cfg->url ? cfg->url : "";
    if (strncmp(u, "s3://", 5) || !u[5] || u[5] == '/') {
        fl_error("store s3: object store URL must be s3://BUCKET[/PREFIX], got '%s'", u);
        return NULL;
    }
    if (cfg->endpoint && !strstr(cfg->endpoint, "://")) {
        fl_error("store s3: endpoint must be http(s)://host[:port]");
        return NULL;
    }
    fl_s3s_t *r = fl_calloc(1, sizeof *r);
    const char *b = u + 5;
    size_t bl = strcspn(b, "/");
    r->bucket = fl_calloc(1, bl + 1);
    memcpy(r->bucket, b, bl);
    const char *p = b[bl] ? b + bl + 1 : "";
    size_t pl = strlen(p);
    while (pl && p[pl - 1] == '/') pl--;
    r->prefix = fl_calloc(1, pl + 2);
    if (pl) { memcpy(r->prefix, p, pl); r->prefix[pl] = '/'; }
    r->region = fl_strdup(cfg->region && *cfg->region ? cfg->region : "us-east-1");
    if (cfg->endpoint && *cfg->endpoint) {
        r->endpoint = fl_strdup(cfg->endpoint);
        size_t el = strlen(r->endpoint);
        while (el && r->endpoint[el - 1] == '/') r->endpoint[--el] = 0;
    } else {
        size_t n = strlen(r->region) + 32;
        r->endpoint = fl_malloc(n);
        snprintf(r->endpoint, n, "https://s3.%s.amazonaws.com", r->region);
    }
    r->path_style = cfg->path_style;
    if (cfg->akid && *cfg->akid) {
        r->akid = fl_strdup(cfg->akid);
        r->secret = fl_strdup(cfg->secret ? cfg->secret : "");
        r->token = cfg->session_token && *cfg->session_token ? fl_strdup(cfg->session_token) : NULL;
        r->sig = (fl_httpc_sigv4_t){ r->akid, r->secret, r->token, r->region, "s3" };
    }
    r->http = fl_httpc_new(NULL);
    /* reachability: list one key of the prefix */
    fl_buf_t q, body;
    fl_buf_init(&q, 0);
    fl_buf_init(&body, FL_S3_MAX_XML_BODY);
    fl_buf_adds(&q, "list-type=2&max-keys=1&prefix=");
    fl_uri_encode(fl_slice_cstr(r->prefix), false, &q);
    call_t c = { .method = "GET", .query = q.ptr, .fd = -1, .resp = &body, .idempotent = true };
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    fl_err_t e = run(r, &c, &rs, &err);
    fl_buf_free(&q);
    fl_buf_free(&body);
    if (e) {
        fl_error("store s3: bucket %s at %s is not reachable (HTTP %ld %s)", r->bucket, r->endpoint,
                 rs.status, err.type);
        fl_s3s_close(r);
        return NULL;
    }
    fl_info("store: objects in s3://%s/%s at %s%s", r->bucket, r->prefix, r->endpoint,
            r->path_style ? " (path-style)" : "");
    return r;
}

size_t fl_s3s_max_key(const fl_s3s_t *r, const char *bucket)
{
    size_t used = strlen(r->prefix) + 3 + strlen(bucket ? bucket : "");
    return used < FL_S3_MAX_KEY_BYTES ? FL_S3_MAX_KEY_BYTES - used : 0;
}

/* ---- buckets ---- */

fl_err_t fl_s3s_bucket_create(fl_s3s_t *r, const char *name)
{
    fl_buf_t k;
    fl_buf_init(&k, 0);
    fl_buf_printf(&k, "%sb/%s", r->prefix, name);
    call_t c = { .method = "PUT", .rkey = k.ptr, .rkeylen = k.len, .has_body = true, .fd = -1 };
    hdr(&c, "if-none-match", "*");
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    fl_err_t e = run(r, &c, &rs, &err);
    if (e == FL_ERR_PRECONDITION || e == FL_ERR_CONFLICT) e = FL_ERR_EXISTS;
    fl_buf_free(&k);
    return e;
}

/* Whether a ListObjectsV2 (or ListMultipartUploads) of prefix finds anything. */
static fl_err_t any_under(fl_s3s_t *r, const char *prefix, bool uploads, bool *found)
{
    fl_buf_t q, body;
    fl_buf_init(&q, 0);
    fl_buf_init(&body, FL_S3_MAX_XML_BODY);
    fl_buf_adds(&q, uploads ? "max-uploads=1&prefix=" : "list-type=2&max-keys=1&prefix=");
    fl_uri_encode(fl_slice_cstr(prefix), false, &q);
    if (uploads) fl_buf_adds(&q, "&uploads=");
    call_t c = { .method = "GET", .query = q.ptr, .fd = -1, .resp = &body, .idempotent = true };
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    fl_err_t e = run(r, &c, &rs, &err);
    if (!e) {
        fl_xml_node_t *root = fl_xml_parse(body.ptr ? body.ptr : "", body.len);
        if (!root) e = FL_ERR_IO;
        else *found = fl_xml_child(root, uploads ? "Upload" : "Contents") != NULL;
        fl_xml_free(root);
    }
    fl_buf_free(&q);
    fl_buf_free(&body);
    return e;
}

fl_err_t fl_s3s_bucket_delete(fl_s3s_t *r, const char *name)
{
    fl_err_t e;
    bool found = false;
    fl_buf_t k;
    fl_buf_init(&k, 0);
    if ((e = bucket_check(r, name, NULL))) goto out;
    fl_buf_printf(&k, "%so/%s/", r->prefix, name);
    if ((e = any_under(r, k.ptr, false, &found)) || found ||
        (e = any_under(r, k.ptr, true, &found)) || found) {
        if (!e) e = FL_ERR_NOT_EMPTY;
        goto out;
    }
    fl_buf_reset(&k);
    fl_buf_printf(&k, "%sb/%s", r->prefix, name);
    call_t c = { .method = "DELETE", .rkey = k.ptr, .rkeylen = k.len, .fd = -1, .idempotent = true };
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    e = run(r, &c, &rs, &err);
out:
    fl_buf_free(&k);
    return e;
}

fl_err_t fl_s3s_bucket_head(fl_s3s_t *r, const char *name, fl_bucket_info_t *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name);
    return bucket_check(r, name, &out->created_ms);
}

/* One page of ListObjectsV2 of the remote bucket: the answer's root (fl_xml_free). */
static fl_err_t list_page(fl_s3s_t *r, const char *prefix, const char *delim, const char *start_after,
                          const char *token, int max, fl_xml_node_t **root)
{
    fl_buf_t q, body;
    fl_buf_init(&q, 0);
    fl_buf_init(&body, FL_S3_MAX_XML_BODY * 4);
    if (token && *token) {
        fl_buf_adds(&q, "continuation-token=");
        fl_uri_encode(fl_slice_cstr(token), false, &q);
        fl_buf_addc(&q, '&');
    }
    if (delim && *delim) {
        fl_buf_adds(&q, "delimiter=");
        fl_uri_encode(fl_slice_cstr(delim), false, &q);
        fl_buf_addc(&q, '&');
    }
    fl_buf_printf(&q, "encoding-type=url&list-type=2&max-keys=%d&prefix=", max);
    fl_uri_encode(fl_slice_cstr(prefix), false, &q);
    if (start_after && *start_after) {
        fl_buf_adds(&q, "&start-after=");
        fl_uri_encode(fl_slice_cstr(start_after), false, &q);
    }
    call_t c = { .method = "GET", .query = q.ptr, .fd = -1, .resp = &body, .idempotent = true };
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    fl_err_t e = run(r, &c, &rs, &err);
    if (!e && !(*root = fl_xml_parse(body.ptr ? body.ptr : "", body.len))) e = FL_ERR_IO;
    fl_buf_free(&q);
    fl_buf_free(&body);
    return e;
}

fl_err_t fl_s3s_bucket_list(fl_s3s_t *r, fl_bucket_info_t **out, size_t *n)
{
    fl_buf_t pre;
    fl_buf_init(&pre, 0);
    fl_buf_printf(&pre, "%sb/", r->prefix);
    size_t cnt = 0, cap = 0;
    fl_bucket_info_t *v = NULL;
    char token[1024] = "";
    fl_err_t e;
    do {
        fl_xml_node_t *root = NULL;
        if ((e = list_page(r, pre.ptr, NULL, NULL, token, 1000, &root))) break;
        for (fl_xml_node_t *c = root->child; c; c = c->next) {
            char *k = strcmp(c->name, "Contents") ? NULL : url_text(fl_xml_child_text(c, "Key"));
            if (!k || strlen(k) <= pre.len || strlen(k + pre.len) >= sizeof v->name) { free(k); continue; }
            if (cnt == cap) v = fl_realloc(v, (cap = cap ? cap * 2 : 16) * sizeof *v);
            memset(&v[cnt], 0, sizeof *v);
            snprintf(v[cnt].name, sizeof v->name, "%s", k + pre.len);
            v[cnt++].created_ms = parse_iso_ms(fl_xml_child_text(c, "LastModified"));
            free(k);
        }
        const char *tr = fl_xml_child_text(root, "IsTruncated"), *nx = fl_xml_child_text(root, "NextContinuationToken");
        /* a store repeating its token, or listing more than floe keeps buckets, ends the walk */
        if (tr && !strcmp(tr, "true") && nx && strlen(nx) < sizeof token && strcmp(nx, token) != 0 &&
            cnt < FL_S3S_MAX_BUCKETS)
            snprintf(token, sizeof token, "%s", nx);
        else token[0] = 0;
        fl_xml_free(root);
    } while (token[0]);
    fl_buf_free(&pre);
    if (e) { free(v); return e; }
    *out = v;
    *n = cnt;
    return FL_OK;
}

/* ---- objects ---- */

/* Adds an object's opaque headers ("name: value" lines) to c as the headers
 * the store keeps natively; others are dropped. A composite (multipart)
 * checksum is not one the store could verify on a single PUT: dropped too. */
static fl_err_t meta_hdr(call_t *c, const char *headers)
{
    for (const char *p = headers; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t ll = e ? (size_t)(e - p) : strlen(p);
        const char *colon = memchr(p, ':', ll);
        if (colon && kept_header(p, (size_t)(colon - p))) {
            const char *v = colon + 1;
            while (v < p + ll && *v == ' ') v++;
            size_t vl = (size_t)(p + ll - v);
            bool composite = !strncmp(p, "x-amz-checksum-", 15) && memchr(v, '-', vl);
            if (!composite) {
                if (c->nhdr >= FL_STORE_MAX_FWD_HEADERS) return FL_ERR_TOO_LARGE;
                c->hdr[c->nhdr++] = (fl_http_header_t){ p, (size_t)(colon - p), v, vl };
            }
        }
        p = e ? e + 1 : p + ll;
    }
    return FL_OK;
}

fl_err_t fl_s3s_put(fl_s3s_t *r, int fd, bool pipe, int64_t size, const char *bucket, const char *key,
                    size_t keylen, fl_obj_meta_t *meta, const fl_put_cond_t *cond)
{
    fl_buf_t k;
    char im[64];
    fl_buf_init(&k, 0);
    fl_err_t e = bucket_check(r, bucket, NULL);
    if (e) goto out;
    obj_key(r, bucket, key, keylen, &k);
    call_t c = { .method = "PUT", .rkey = k.ptr, .rkeylen = k.len, .fd = fd, .fd_len = size, .pipe = pipe };
    if (size == 0) c.has_body = true;
    cond_hdrs(&c, cond, im);
    if ((e = meta_hdr(&c, meta->headers))) goto out;
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    e = run(r, &c, &rs, &err);
    if (e == FL_ERR_CONFLICT && cond && (cond->if_none_match_star || cond->if_match)) e = FL_ERR_PRECONDITION;
    if (!e) {
        char et[48];
        etag_unquote(rs.etag, et);
        if (et[0] && meta->etag[0] && strcmp(et, meta->etag)) {
            /* the body the store got is not what floe hashed (or the store's ETag is not an MD5) */
            fl_warn("store s3: %s/%.*s: remote ETag %s, floe's %s", bucket, (int)keylen, key, et, meta->etag);
        }
        if (!meta->etag[0]) snprintf(meta->etag, sizeof meta->etag, "%s", et);
        meta->mtime_ms = fl_now_ms();
        meta->parts = 0;
    }
out:
    fl_buf_free(&k);
    return e;
}

fl_err_t fl_s3s_head(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen, fl_obj_meta_t *out)
{
    fl_buf_t k, h;
    fl_buf_init(&k, 0);
    fl_buf_init(&h, 64 * 1024);
    obj_key(r, bucket, key, keylen, &k);
    call_t c = { .method = "HEAD", .rkey = k.ptr, .rkeylen = k.len, .fd = -1, .resp_headers = &h,
                 .idempotent = true };
    hdr(&c, "x-amz-checksum-mode", "ENABLED");
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    fl_err_t e = run(r, &c, &rs, &err);
    if (!e) meta_from(&rs, &h, out);
    else e = not_found(r, bucket, e);
    fl_buf_free(&k);
    fl_buf_free(&h);
    return e;
}

fl_err_t fl_s3s_get(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen, fl_obj_t **out)
{
    fl_obj_meta_t m;
    *out = NULL;
    fl_err_t e = fl_s3s_head(r, bucket, key, keylen, &m);
    if (e) return e;
    fl_obj_t *o = fl_calloc(1, sizeof *o + sizeof *o->segs + sizeof *o->part_sizes);
    rd_t *d = fl_calloc(1, sizeof *d);
    fl_buf_t k;
    fl_buf_init(&k, 0);
    obj_key(r, bucket, key, keylen, &k);
    d->r = r;
    d->rkeylen = k.len;
    d->rkey = fl_buf_steal(&k);
    snprintf(d->etag, sizeof d->etag, "\"%s\"", m.etag);
    o->meta = m;
    o->rd = d;
    if (m.size > 0) {
        o->nsegs = 1;
        o->segs = (fl_obj_seg_t *)(o + 1);
        o->segs[0] = (fl_obj_seg_t){ .fd = -1, .len = m.size };
        if (m.parts == 0) {
            o->part_sizes = (int64_t *)(o->segs + 1);
            o->part_sizes[0] = m.size;
        }
    }
    *out = o;
    return FL_OK;
}

fl_err_t fl_s3s_part_range(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen, int part,
                           int64_t *off, int64_t *len)
{
    fl_buf_t k, h;
    char q[32];
    fl_buf_init(&k, 0);
    fl_buf_init(&h, 64 * 1024);
    obj_key(r, bucket, key, keylen, &k);
    snprintf(q, sizeof q, "partNumber=%d", part);
    call_t c = { .method = "HEAD", .rkey = k.ptr, .rkeylen = k.len, .query = q, .fd = -1, .resp_headers = &h,
                 .idempotent = true };
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    fl_err_t e = run(r, &c, &rs, &err);
    if (e == FL_ERR_NOT_FOUND || rs.status == 416) e = rs.status == 416 ? FL_ERR_INVALID : not_found(r, bucket, e);
    if (!e) {
        char *cr = header_get(&h, "content-range");
        long long a, b;
        if (cr && sscanf(cr, "bytes %lld-%lld/", &a, &b) == 2 && b >= a) {
            *off = a;
            *len = b - a + 1;
        } else if (part == 1 && rs.content_length >= 0) {
            *off = 0;
            *len = rs.content_length;
        } else {
            e = FL_ERR_IO;
        }
        free(cr);
    }
    fl_buf_free(&k);
    fl_buf_free(&h);
    return e;
}

ssize_t fl_s3s_read(void *rdp, void *buf, size_t n, int64_t off)
{
    rd_t *d = rdp;
    char range[64];
    if (!n) return 0;
    snprintf(range, sizeof range, "bytes=%lld-%lld", (long long)off, (long long)(off + (int64_t)n - 1));
    call_t c = { .method = "GET", .rkey = d->rkey, .rkeylen = d->rkeylen, .fd = -1, .dst = buf,
                 .dst_cap = n, .idempotent = true };
    hdr(&c, "range", range);
    hdr(&c, "if-match", d->etag);
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    fl_err_t e = run(d->r, &c, &rs, &err);
    if (e == FL_ERR_PRECONDITION || e == FL_ERR_NOT_FOUND) {
        fl_warn("store s3: %s changed or went away while being read", d->rkey);
        return -1;
    }
    if (e && rs.status == 416) return 0;
    if (e) return -1;
    return (ssize_t)rs.dst_len;
}

void fl_s3s_rd_free(void *rdp)
{
    rd_t *d = rdp;
    if (!d) return;
    free(d->rkey);
    free(d);
}

fl_err_t fl_s3s_delete(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen,
                       const fl_put_cond_t *cond)
{
    fl_buf_t k;
    char im[64];
    fl_err_t e = bucket_check(r, bucket, NULL);
    if (e) return e;
    fl_buf_init(&k, 0);
    obj_key(r, bucket, key, keylen, &k);
    call_t c = { .method = "DELETE", .rkey = k.ptr, .rkeylen = k.len, .fd = -1, .idempotent = !cond || !cond->if_match };
    cond_hdrs(&c, cond, im);
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    e = run(r, &c, &rs, &err);
    if (e == FL_ERR_NOT_FOUND && !(cond && cond->if_match)) e = FL_OK;
    fl_buf_free(&k);
    return e;
}

void fl_list_res_free(fl_list_res_t *r);

fl_err_t fl_s3s_list(fl_s3s_t *r, const char *bucket, const char *prefix, const char *delimiter,
                     const char *start_after, int max_keys, fl_list_res_t *out)
{
    fl_buf_t pre, sa;
    memset(out, 0, sizeof *out);
    fl_err_t e = bucket_check(r, bucket, NULL);
    if (e) return e;
    fl_buf_init(&pre, 0);
    fl_buf_init(&sa, 0);
    fl_buf_printf(&pre, "%so/%s/", r->prefix, bucket);
    size_t head = pre.len;
    if (start_after && *start_after) fl_buf_printf(&sa, "%s%s", pre.ptr, start_after);
    fl_buf_adds(&pre, prefix ? prefix : "");
    fl_xml_node_t *root = NULL;
    if (max_keys <= 0) goto out;
    if ((e = list_page(r, pre.ptr, delimiter, sa.ptr, NULL, max_keys, &root))) goto out;
    size_t ce = 0, cp = 0;
    const char *last = NULL;
    for (fl_xml_node_t *c = root->child; c; c = c->next) {
        bool ent = !strcmp(c->name, "Contents"), cpx = !strcmp(c->name, "CommonPrefixes");
        char *k = url_text(ent ? fl_xml_child_text(c, "Key") : cpx ? fl_xml_child_text(c, "Prefix") : NULL);
        if (!k || strlen(k) < head) { free(k); continue; }
        if (ent) {
            if (out->nents == ce) out->ents = fl_realloc(out->ents, (ce = ce ? ce * 2 : 64) * sizeof *out->ents);
            fl_list_ent_t *x = &out->ents[out->nents++];
            memset(x, 0, sizeof *x);
            x->key = fl_strdup(k + head);
            x->keylen = strlen(x->key);
            const char *sz = fl_xml_child_text(c, "Size"), *et = fl_xml_child_text(c, "ETag");
            x->size = sz ? strtoll(sz, NULL, 10) : 0;
            x->mtime_ms = parse_iso_ms(fl_xml_child_text(c, "LastModified"));
            if (et) etag_unquote(et, x->etag);
            if (!last || strcmp(x->key, last) > 0) last = x->key;
        } else {
            if (out->nprefixes == cp) out->prefixes = fl_realloc(out->prefixes, (cp = cp ? cp * 2 : 16) * sizeof *out->prefixes);
            out->prefixes[out->nprefixes] = fl_strdup(k + head);
            const char *p = out->prefixes[out->nprefixes++];
            if (!last || strcmp(p, last) > 0) last = p;
        }
        free(k);
    }
    const char *tr = fl_xml_child_text(root, "IsTruncated");
    out->truncated = tr && !strcmp(tr, "true") && last;
    if (out->truncated) out->next_after = fl_strdup(last);
out:
    fl_xml_free(root);
    fl_buf_free(&pre);
    fl_buf_free(&sa);
    if (e) fl_list_res_free(out);
    return e;
}

/* ---- multipart: the remote store's own uploads ---- */

static fl_err_t upload_err(fl_err_t e, const fl_remote_error_t *err)
{
    if (e == FL_ERR_NOT_FOUND && !strcmp(err->type, "NoSuchUpload")) return FL_ERR_NO_UPLOAD;
    if (!strcmp(err->type, "InvalidPart")) return FL_ERR_INVALID_PART;
    if (!strcmp(err->type, "InvalidPartOrder")) return FL_ERR_PART_ORDER;
    if (!strcmp(err->type, "EntityTooSmall")) return FL_ERR_TOO_SMALL;
    return e;
}

fl_err_t fl_s3s_mpu_create(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen,
                           const char *headers, char upload_id_out[FL_STORE_UPLOAD_ID_MAX + 1])
{
    fl_buf_t k, body;
    fl_buf_init(&k, 0);
    fl_buf_init(&body, FL_S3_MAX_XML_BODY);
    fl_err_t e = bucket_check(r, bucket, NULL);
    if (e) goto out;
    obj_key(r, bucket, key, keylen, &k);
    call_t c = { .method = "POST", .rkey = k.ptr, .rkeylen = k.len, .query = "uploads=", .has_body = true,
                 .fd = -1, .resp = &body };
    if ((e = meta_hdr(&c, headers))) goto out;
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    if ((e = run(r, &c, &rs, &err))) goto out;
    fl_xml_node_t *root = fl_xml_parse(body.ptr ? body.ptr : "", body.len);
    const char *id = root ? fl_xml_child_text(root, "UploadId") : NULL;
    if (!id || !*id || strlen(id) > FL_STORE_UPLOAD_ID_MAX) {
        fl_error("store s3: CreateMultipartUpload: no usable UploadId (at most %d characters)", FL_STORE_UPLOAD_ID_MAX);
        e = FL_ERR_IO;
    } else {
        snprintf(upload_id_out, FL_STORE_UPLOAD_ID_MAX + 1, "%s", id);
    }
    fl_xml_free(root);
out:
    fl_buf_free(&k);
    fl_buf_free(&body);
    return e;
}

static void upload_query(fl_buf_t *q, const char *upload_id)
{
    fl_buf_adds(q, "uploadId=");
    fl_uri_encode(fl_slice_cstr(upload_id), false, q);
}

fl_err_t fl_s3s_mpu_put_part(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen,
                             const char *upload_id, int number, int fd, bool pipe, int64_t size, char etag_out[48])
{
    fl_buf_t k, q;
    fl_buf_init(&k, 0);
    fl_buf_init(&q, 0);
    obj_key(r, bucket, key, keylen, &k);
    fl_buf_printf(&q, "partNumber=%d&", number);
    upload_query(&q, upload_id);
    call_t c = { .method = "PUT", .rkey = k.ptr, .rkeylen = k.len, .query = q.ptr, .fd = fd, .fd_len = size,
                 .pipe = pipe, .has_body = size == 0, .idempotent = !pipe };
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    fl_err_t e = run(r, &c, &rs, &err);
    if (e) e = upload_err(e, &err);
    else etag_unquote(rs.etag, etag_out);
    fl_buf_free(&k);
    fl_buf_free(&q);
    return e;
}

fl_err_t fl_s3s_mpu_parts(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen,
                          const char *upload_id, int after, int max, fl_part_info_t **out, size_t *n,
                          bool *truncated, char **upload_headers)
{
    fl_buf_t k, q, body;
    fl_buf_init(&k, 0);
    fl_buf_init(&q, 0);
    fl_buf_init(&body, FL_S3_MAX_XML_BODY * 4);
    *out = NULL;
    *n = 0;
    *truncated = false;
    if (upload_headers) *upload_headers = NULL;
    obj_key(r, bucket, key, keylen, &k);
    fl_buf_printf(&q, "max-parts=%d&part-number-marker=%d&", max, after);
    upload_query(&q, upload_id);
    call_t c = { .method = "GET", .rkey = k.ptr, .rkeylen = k.len, .query = q.ptr, .fd = -1, .resp = &body,
                 .idempotent = true };
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    fl_err_t e = run(r, &c, &rs, &err);
    if (e) { e = upload_err(not_found(r, bucket, e), &err); goto out; }
    fl_xml_node_t *root = fl_xml_parse(body.ptr ? body.ptr : "", body.len);
    if (!root) { e = FL_ERR_IO; goto out; }
    size_t cap = 0;
    for (fl_xml_node_t *p = root->child; p; p = p->next) {
        if (strcmp(p->name, "Part")) continue;
        if (*n == cap) *out = fl_realloc(*out, (cap = cap ? cap * 2 : 16) * sizeof **out);
        fl_part_info_t *x = &(*out)[(*n)++];
        memset(x, 0, sizeof *x);
        const char *pn = fl_xml_child_text(p, "PartNumber"), *et = fl_xml_child_text(p, "ETag"),
                   *sz = fl_xml_child_text(p, "Size");
        x->number = pn ? atoi(pn) : 0;
        if (et) etag_unquote(et, x->etag);
        x->size = sz ? strtoll(sz, NULL, 10) : 0;
        x->mtime_ms = parse_iso_ms(fl_xml_child_text(p, "LastModified"));
    }
    const char *tr = fl_xml_child_text(root, "IsTruncated");
    *truncated = tr && !strcmp(tr, "true");
    fl_xml_free(root);
out:
    fl_buf_free(&k);
    fl_buf_free(&q);
    fl_buf_free(&body);
    return e;
}

fl_err_t fl_s3s_mpu_complete(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen,
                             const char *upload_id, const fl_part_ref_t *parts, size_t nparts,
                             const fl_put_cond_t *cond, fl_obj_meta_t *meta_out)
{
    fl_buf_t k, q, doc, body;
    char im[64];
    fl_buf_init(&k, 0);
    fl_buf_init(&q, 0);
    fl_buf_init(&doc, 0);
    fl_buf_init(&body, FL_S3_MAX_XML_BODY);
    obj_key(r, bucket, key, keylen, &k);
    upload_query(&q, upload_id);
    fl_buf_adds(&doc, "<CompleteMultipartUpload>");
    for (size_t i = 0; i < nparts; i++)
        fl_buf_printf(&doc, "<Part><PartNumber>%d</PartNumber><ETag>\"%.47s\"</ETag></Part>", parts[i].number,
                      parts[i].etag);
    fl_buf_adds(&doc, "</CompleteMultipartUpload>");
    call_t c = { .method = "POST", .rkey = k.ptr, .rkeylen = k.len, .query = q.ptr, .body = doc.ptr,
                 .body_len = doc.len, .has_body = true, .fd = -1, .resp = &body };
    hdr(&c, "content-type", "application/xml");
    cond_hdrs(&c, cond, im);
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    fl_err_t e = run(r, &c, &rs, &err);
    if (!e && body.ptr && strstr(body.ptr, "<Error>")) { /* S3 may fail a Complete inside a 200 */
        fl_remote_error_parse(500, body.ptr, body.len, NULL, &err);
        e = FL_ERR_IO;
    }
    if (e) { e = upload_err(not_found(r, bucket, e), &err); goto out; }
    if (meta_out) e = fl_s3s_head(r, bucket, key, keylen, meta_out);
out:
    fl_buf_free(&k);
    fl_buf_free(&q);
    fl_buf_free(&doc);
    fl_buf_free(&body);
    return e;
}

fl_err_t fl_s3s_mpu_abort(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen,
                          const char *upload_id)
{
    fl_buf_t k, q;
    fl_buf_init(&k, 0);
    fl_buf_init(&q, 0);
    obj_key(r, bucket, key, keylen, &k);
    upload_query(&q, upload_id);
    call_t c = { .method = "DELETE", .rkey = k.ptr, .rkeylen = k.len, .query = q.ptr, .fd = -1,
                 .idempotent = true };
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    fl_err_t e = run(r, &c, &rs, &err);
    if (e) e = upload_err(not_found(r, bucket, e), &err);
    fl_buf_free(&k);
    fl_buf_free(&q);
    return e;
}

fl_err_t fl_s3s_mpu_list(fl_s3s_t *r, const char *bucket, const char *prefix, const char *key_marker,
                         const char *upload_id_marker, int max, fl_upload_info_t **out, size_t *n,
                         bool *truncated)
{
    fl_buf_t pre, q, body;
    *out = NULL;
    *n = 0;
    *truncated = false;
    fl_err_t e = bucket_check(r, bucket, NULL);
    if (e) return e;
    fl_buf_init(&pre, 0);
    fl_buf_init(&q, 0);
    fl_buf_init(&body, FL_S3_MAX_XML_BODY * 4);
    fl_buf_printf(&pre, "%so/%s/", r->prefix, bucket);
    size_t head = pre.len;
    if (key_marker && *key_marker) {
        fl_buf_adds(&q, "key-marker=");
        fl_buf_t km;
        fl_buf_init(&km, 0);
        fl_buf_printf(&km, "%s%s", pre.ptr, key_marker);
        fl_uri_encode(fl_slice_cstr(km.ptr), false, &q);
        fl_buf_free(&km);
        fl_buf_addc(&q, '&');
    }
    fl_buf_printf(&q, "encoding-type=url&max-uploads=%d&prefix=", max);
    fl_buf_adds(&pre, prefix ? prefix : "");
    fl_uri_encode(fl_slice_cstr(pre.ptr), false, &q);
    if (upload_id_marker && *upload_id_marker) {
        fl_buf_adds(&q, "&upload-id-marker=");
        fl_uri_encode(fl_slice_cstr(upload_id_marker), false, &q);
    }
    fl_buf_adds(&q, "&uploads=");
    call_t c = { .method = "GET", .query = q.ptr, .fd = -1, .resp = &body, .idempotent = true };
    fl_httpc_resp_t rs;
    fl_remote_error_t err;
    if ((e = run(r, &c, &rs, &err))) goto out;
    fl_xml_node_t *root = fl_xml_parse(body.ptr ? body.ptr : "", body.len);
    if (!root) { e = FL_ERR_IO; goto out; }
    size_t cap = 0;
    for (fl_xml_node_t *u = root->child; u; u = u->next) {
        char *k = strcmp(u->name, "Upload") ? NULL : url_text(fl_xml_child_text(u, "Key"));
        const char *id = k ? fl_xml_child_text(u, "UploadId") : NULL;
        if (!k || !id || strlen(k) < head || strlen(id) > FL_STORE_UPLOAD_ID_MAX) { free(k); continue; }
        if (*n == cap) *out = fl_realloc(*out, (cap = cap ? cap * 2 : 16) * sizeof **out);
        fl_upload_info_t *x = &(*out)[(*n)++];
        memset(x, 0, sizeof *x);
        x->key = fl_strdup(k + head);
        x->keylen = strlen(x->key);
        snprintf(x->upload_id, sizeof x->upload_id, "%s", id);
        x->created_ms = parse_iso_ms(fl_xml_child_text(u, "Initiated"));
        free(k);
    }
    const char *tr = fl_xml_child_text(root, "IsTruncated");
    *truncated = tr && !strcmp(tr, "true");
    fl_xml_free(root);
out:
    fl_buf_free(&pre);
    fl_buf_free(&q);
    fl_buf_free(&body);
    return e;
}
