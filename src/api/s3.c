/* S3 data plane: routing, authentication, object operations and S3 XML.
 *
 * One request is one s3req_t on the connection's thread. The route table maps
 * (method, bucket/key presence, sub-resource) to an operation; every failure
 * goes through s3_error(), the one renderer of S3's XML error shape. Uploads
 * stream from the socket through the aws-chunked decoder (if any) into a new
 * blob while MD5, the requested checksum and (for signed payloads) SHA-256 are
 * computed on the way; the blob is published only after every check passed,
 * so a rejected or cut-off upload leaves nothing behind.
 *
 * OSS dialect: a request signed OSS4-HMAC-SHA256 or OSS V1 (r->dialect) is answered as
 * OSS answers: x-oss-request-id, XML without S3's namespace, errors with
 * <RequestId>, <HostId> and <EC>; x-oss-copy-source / -metadata-directive and
 * x-oss-meta-* instead of their x-amz-* names (metadata is stored as
 * x-amz-meta-* and shown in the reader's dialect); CRC-64/ECMA of every
 * upload computed on the way in, checked against x-oss-hash-crc64ecma when the
 * client sent one, kept with the object and returned on PUT, GET and HEAD. */
#include "api/s3.h"
#include "catalog/iam.h"
#include "base/checksum.h"
#include "base/limits.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/query.h"
#include "base/time.h"
#include "net/xml.h"
#include <ctype.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define XML_DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define XMLNS " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""
#define XML_OWNER "<Owner><ID>floe</ID><DisplayName>floe</DisplayName></Owner>"
#define XML_INITIATOR_OWNER "<Initiator><ID>floe</ID><DisplayName>floe</DisplayName></Initiator>" XML_OWNER \
    "<StorageClass>STANDARD</StorageClass>"
#define IO_BUF (256 * 1024)

typedef struct s3req {
    fl_http_conn_t *c;
    fl_http_req_t *req;
    const fl_s3_cfg_t *cfg;
    bool head;
    char *bucket;        /* decoded, NULL for the service root */
    char *key;           /* decoded, NULL for bucket operations */
    size_t keylen;
    fl_query_t q;                 /* decoded query parameters */
    fl_sigv4_auth_t auth;
    bool signed_req;
    bool responded;
    bool bucket_bad;     /* the decoded bucket name held a NUL (bucket is cut there), a '/'
                          * (it would name a path inside another bucket) or, from a Host,
                          * anything but a-z 0-9 . - : refused before anything else */
    fl_sig_dialect_t dialect; /* OSS4 or V1: answer as OSS (see the top of the file) */
    fl_iam_who_t who;    /* the signer (when signed and identities are on) */
    bool have_who;
    bool vhost;          /* the bucket came from the Host header (cfg->domain) */
} s3req_t;

#define OSS(r) fl_sig_is_oss((r)->dialect)
#define CRC64_HDR "x-oss-hash-crc64ecma"

/* The request header named amz ("x-amz-copy-source", ...) in the client's
 * dialect: x-oss-* for OSS. */
static const char *xname(const s3req_t *r, const char *amz)
{
    static const char *const names[][2] = {
        { "x-amz-copy-source", "x-oss-copy-source" },
        { "x-amz-copy-source-if-match", "x-oss-copy-source-if-match" },
        { "x-amz-copy-source-if-none-match", "x-oss-copy-source-if-none-match" },
        { "x-amz-copy-source-if-unmodified-since", "x-oss-copy-source-if-unmodified-since" },
        { "x-amz-copy-source-if-modified-since", "x-oss-copy-source-if-modified-since" },
        { "x-amz-copy-source-range", "x-oss-copy-source-range" },
        { "x-amz-metadata-directive", "x-oss-metadata-directive" },
    };
    if (!OSS(r)) return amz;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(names[i][0], amz)) return names[i][1];
    return amz;
}

/* XML_DECL and the root element's start tag, with S3's namespace for AWS
 * clients (OSS's documents have none). */
static void xml_open(const s3req_t *r, fl_buf_t *b, const char *root, bool empty)
{
    fl_buf_printf(b, XML_DECL "<%s%s%s>", root, OSS(r) ? "" : XMLNS, empty ? "/" : "");
}

/* A timestamp for an XML answer: OSS's are whole seconds (".000Z"; oss2
 * parses no other form), S3's keep the milliseconds. */
static void xml_time(const s3req_t *r, int64_t ms, char *out, size_t n)
{
    fl_time_iso8601(OSS(r) ? ms - ms % 1000 : ms, out, n);
}

/* ------------------------------------------------------------------ */
/* errors                                                              */

static const char *default_message(const char *code)
{
    static const struct { const char *code, *msg; } m[] = {
        { "NoSuchBucket", "The specified bucket does not exist" },
        { "NoSuchKey", "The specified key does not exist." },
        { "NoSuchUpload", "The specified multipart upload does not exist." },
        { "BucketNotEmpty", "The bucket you tried to delete is not empty" },
        { "BucketAlreadyOwnedByYou", "Your previous request to create the named bucket succeeded and you already own it." },
        { "InvalidBucketName", "The specified bucket is not valid." },
        { "PreconditionFailed", "At least one of the pre-conditions you specified did not hold" },
        { "InvalidRange", "The requested range is not satisfiable" },
        { "BadDigest", "The Content-MD5 or checksum you specified did not match what we received." },
        { "InvalidDigest", "The Content-MD5 you specified was invalid." },
        { "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema." },
        { "InvalidPart", "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag." },
        { "InvalidPartOrder", "The list of parts was not in ascending order. Parts must be ordered by part number." },
        { "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size." },
        { "EntityTooLarge", "Your proposed upload exceeds the maximum allowed object size." },
        { "MissingContentLength", "You must provide the Content-Length HTTP header." },
        { "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header." },
        { "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed." },
        { "KeyTooLongError", "Your key is too long" },
        { "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size." },
        { "MethodNotAllowed", "The specified method is not allowed against this resource." },
        { "NotImplemented", "A header or query you provided implies functionality that is not implemented." },
        { "AccessDenied", "Access Denied" },
        { "InternalError", "We encountered an internal error. Please try again." },
        { "RequestTimeout", "Your socket connection to the server was not read from or written to within the timeout period." },
        { "ConditionalRequestConflict", "A conflicting operation occurred. Please retry." },
        { "NoSuchBucketPolicy", "The bucket policy does not exist" },
        { "MalformedPolicy", "Policies must be valid JSON and the first byte must be '{'" },
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (strcmp(m[i].code, code) == 0) return m[i].msg;
    return code;
}

/* The one renderer of S3 errors. message NULL = S3's usual text; detail_name
 * (NULL: none) adds one more element, e.g. <Region> or <HeadersNotSigned>. */
static void s3_error_detail(s3req_t *r, int status, const char *code, const char *message,
                            const char *detail_name, const char *detail_value)
{
    if (r->responded) return;
    r->responded = true;
    fl_http_resp_status(r->c, status);
    if (r->head || status == 304) {
        fl_http_resp_send(r->c, NULL, 0);
        return;
    }
    fl_buf_t b;
    fl_buf_init(&b, 0);
    fl_buf_adds(&b, XML_DECL "<Error>");
    fl_xml_elems(&b, "Code", code);
    fl_xml_elems(&b, "Message", message ? message : default_message(code));
    if (detail_name) fl_xml_elems(&b, detail_name, detail_value);
    if (r->bucket) fl_xml_elems(&b, "BucketName", r->bucket);
    if (r->key) fl_xml_elem(&b, "Key", r->key, r->keylen);
    fl_xml_elem(&b, "Resource", r->req->path, r->req->path_len);
    fl_xml_elems(&b, "RequestId", fl_http_request_id(r->c));
    if (OSS(r)) {
        fl_slice_t host = fl_http_header_val(r->req, "host");
        fl_xml_elem(&b, "HostId", host.ptr ? host.ptr : "", host.ptr ? host.len : 0);
        /* floe has no OSS error-centre numbers: one fixed value, documented */
        fl_xml_elems(&b, "EC", "0000-00000000");
    }
    fl_buf_adds(&b, "</Error>");
    fl_http_resp_header(r->c, "Content-Type", "application/xml");
    fl_http_resp_send(r->c, b.ptr, b.len);
    fl_buf_free(&b);
}

static void s3_error(s3req_t *r, int status, const char *code, const char *message)
{
    s3_error_detail(r, status, code, message, NULL, NULL);
}

/* Maps a store/pipeline error to the S3 error response. */
static void s3_error_from(s3req_t *r, fl_err_t e)
{
    switch (e) {
    case FL_ERR_NO_BUCKET: s3_error(r, 404, "NoSuchBucket", NULL); break;
    case FL_ERR_NOT_FOUND: s3_error(r, 404, "NoSuchKey", NULL); break;
    case FL_ERR_NO_UPLOAD: s3_error(r, 404, "NoSuchUpload", NULL); break;
    case FL_ERR_EXISTS: s3_error(r, 409, "BucketAlreadyOwnedByYou", NULL); break;
    case FL_ERR_NOT_EMPTY: s3_error(r, 409, "BucketNotEmpty", NULL); break;
    case FL_ERR_PRECONDITION: s3_error(r, 412, "PreconditionFailed", NULL); break;
    case FL_ERR_CONFLICT: s3_error(r, 409, "ConditionalRequestConflict", NULL); break;
    case FL_ERR_INVALID_PART: s3_error(r, 400, "InvalidPart", NULL); break;
    case FL_ERR_PART_ORDER: s3_error(r, 400, "InvalidPartOrder", NULL); break;
    case FL_ERR_TOO_SMALL: s3_error(r, 400, "EntityTooSmall", NULL); break;
    case FL_ERR_TOO_LARGE: s3_error(r, 400, "EntityTooLarge", NULL); break;
    case FL_ERR_DIGEST: s3_error(r, 400, "BadDigest", NULL); break;
    case FL_ERR_INCOMPLETE:
    case FL_ERR_CLOSED: fl_http_close_after(r->c); s3_error(r, 400, "IncompleteBody", NULL); break;
    case FL_ERR_TIMEOUT: fl_http_close_after(r->c); s3_error(r, 400, "RequestTimeout", NULL); break;
    case FL_ERR_INVALID:
    case FL_ERR_PROTO: fl_http_close_after(r->c); s3_error(r, 400, "InvalidRequest", "The request body is malformed."); break;
    default: s3_error(r, 500, "InternalError", NULL); break;
    }
}

/* ------------------------------------------------------------------ */
/* authorisation                                                       */

/* The actions on a bucket's policy, which its owner's root may always do. */
static bool is_policy_action(const char *action)
{
    return !strcmp(action, "GetBucketPolicy") || !strcmp(action, "PutBucketPolicy") ||
           !strcmp(action, "DeleteBucketPolicy") || !strcmp(action, "GetBucketPolicyStatus");
}

/* May the signer do s3:action on bucket[/key]? In a table's warehouse bucket
 * ("{id}--table-s3") the table's actions govern, whichever client reads or
 * writes: s3tables:GetTableData for reads and s3tables:PutTableData for writes
 * (s3tables:DeleteTable to remove the warehouse bucket itself), on the table's
 * ARN, with its bucket's and its own resource policies, as the source
 * document says. Elsewhere: s3:action on arn:aws:s3:::bucket[/key], owned by
 * the root account, with the bucket's policy (stored as the document "policy"
 * of arn:aws:s3:::bucket) as its resource policy; as in AWS a Deny there
 * binds the owner's root too, except for the bucket-policy actions
 * themselves (the root can always repair a policy that locks everyone out).
 * msg gets the denial's text. Connection thread; blocks on the catalog
 * store. */
static bool allowed(s3req_t *r, const char *action, bool write, const char *bucket, const char *key, size_t keylen,
                    char *msg, size_t msglen)
{
    fl_iam_t *iam = r->cfg->iam;
    if (!iam || !r->have_who) return true;
    const fl_iam_who_t *who = &r->who;
    fl_catalog_t *cat = fl_iam_catalog(iam);
    char act[96];
    size_t bl = bucket ? strlen(bucket) : 0;
    if (bl > 10 && !strcmp(bucket + bl - 10, "--table-s3")) {
        char wh[80];
        fl_table_t t;
        fl_tbucket_t b;
        snprintf(wh, sizeof wh, "s3://%s", bucket);
        const char *a = !strcmp(action, "DeleteBucket") ? "s3tables:DeleteTable"
                        : write ? "s3tables:PutTableData" : "s3tables:GetTableData";
        if (fl_iam_warehouse(iam, bucket, &t, &b)) {
            fl_iam_target_t tg = { .bucket = &b, .table = &t, .table_level = true };
            return fl_iam_check(iam, who, &a, 1, &tg, fl_http_peer(r->c), msg, msglen);
        }
        /* a staged create's warehouse: the table-to-be's bucket, namespace and name */
        char *st = NULL;
        if (fl_catalog_doc_get(cat, wh, "staged", &st) == FL_OK) {
            json_error_t je;
            json_t *j = json_loads(st, 0, &je);
            const char *bn = json_string_value(json_object_get(j, "bucket"));
            bool ok = false, found = bn && fl_catalog_bucket_get(cat, bn, &b) == FL_OK;
            if (found) {
                fl_iam_target_t tg = { .bucket = &b, .table_level = true,
                                       .ns = json_string_value(json_object_get(j, "namespace")),
                                       .name = json_string_value(json_object_get(j, "name")) };
                ok = fl_iam_check(iam, who, &a, 1, &tg, fl_http_peer(r->c), msg, msglen);
            }
            json_decref(j);
            free(st);
            if (found) return ok;
        }
    }
    bool owner_root = who->root && !strcmp(who->account, fl_iam_root_account(iam));
    if (owner_root && (!bucket || is_policy_action(action) || (key && memchr(key, 0, keylen)))) return true;
    char res[FL_S3_MAX_KEY_BYTES + 160], pol[FL_ARN_MAX];
    if (!bucket) snprintf(res, sizeof res, "arn:aws:s3:::*");
    else if (!key) snprintf(res, sizeof res, "arn:aws:s3:::%s", bucket);
    else snprintf(res, sizeof res, "arn:aws:s3:::%s/%.*s", bucket, (int)keylen, key);
    snprintf(act, sizeof act, "s3:%s", action);
    if (key && memchr(key, 0, keylen)) { /* a policy cannot name such a key: only root may */
        fl_iam_audit(who, "deny", act, res, NULL, "key holds a NUL byte");
        if (msg) snprintf(msg, msglen, "Access Denied");
        return false;
    }
    const char *acts[1] = { act };
    if (bucket) snprintf(pol, sizeof pol, "arn:aws:s3:::%s", bucket);
    fl_iam_target_t tg = { .resource = res, .owner = fl_iam_root_account(iam), .policy_arn = bucket ? pol : NULL,
                           .deny_binds_root = true };
    return fl_iam_check(iam, who, acts, 1, &tg, fl_http_peer(r->c), msg, msglen);
}

/* allowed() for the request's own bucket/key, rendering S3's AccessDenied. */
static bool may(s3req_t *r, const char *action, bool write, const char *bucket, const char *key, size_t keylen)
{
    char msg[FL_ARN_MAX * 2 + FL_S3_MAX_KEY_BYTES + 160];
    if (allowed(r, action, write, bucket, key, keylen, msg, sizeof msg)) return true;
    s3_error(r, 403, "AccessDenied", msg);
    return false;
}

/* Runs op after the check of s3:action on the request's bucket/key. */
static void run(s3req_t *r, const char *action, bool write, void (*op)(s3req_t *))
{
    if (!may(r, action, write, r->bucket, r->key, r->keylen)) {
        fl_http_set_op(r->c, "AccessDenied");
        return;
    }
    op(r);
}

/* ------------------------------------------------------------------ */
/* request helpers                                                     */

static const char *qget(const s3req_t *r, const char *name)
{
    return fl_query_get(&r->q, name);
}

static bool qhas(const s3req_t *r, const char *name) { return qget(r, name) != NULL; }

/* Header value as a NUL-terminated copy in a caller buffer; false if absent or too long. */
static bool hget(const s3req_t *r, const char *lname, char *out, size_t cap)
{
    fl_slice_t v = fl_http_header_val(r->req, lname);
    if (!v.ptr || v.len >= cap) return false;
    memcpy(out, v.ptr, v.len);
    out[v.len] = 0;
    return true;
}

static bool hhas(const s3req_t *r, const char *lname) { return fl_http_header(r->req, lname) != NULL; }

/* The bucket of a virtual-hosted request: Host "{bucket}.{cfg->domain}[:port]"
 * (case-insensitive) -> its length in *blen; NULL when the Host does not name
 * one (path style). */
static const char *host_bucket(const s3req_t *r, size_t *blen)
{
    const char *d = r->cfg->domain;
    fl_slice_t h = fl_slice_trim(fl_http_header_val(r->req, "host"));
    if (!d || !h.ptr) return NULL;
    const char *colon = memrchr(h.ptr, ':', h.len);
    size_t hl = colon ? (size_t)(colon - h.ptr) : h.len, dl = strlen(d);
    if (hl < dl + 2 || h.ptr[hl - dl - 1] != '.' || strncasecmp(h.ptr + hl - dl, d, dl) != 0) return NULL;
    *blen = hl - dl - 1;
    return h.ptr;
}

static fl_err_t parse_path(s3req_t *r)
{
    const char *p = r->req->path;
    size_t n = r->req->path_len;
    if (n == 0 || p[0] != '/') return FL_ERR_INVALID;
    size_t hbl = 0;
    const char *hb = host_bucket(r, &hbl);
    if (hb) { /* virtual-hosted: the path is "/" or "/{key}" */
        r->vhost = true;
        r->bucket = fl_strndup(hb, hbl);
        for (char *c = r->bucket; *c; c++) {
            *c = (char)tolower((unsigned char)*c);
            if (!isalnum((unsigned char)*c) && *c != '.' && *c != '-') r->bucket_bad = true;
        }
        if (n > 1) {
            fl_buf_t k;
            fl_buf_init(&k, FL_HTTP_MAX_TARGET_BYTES);
            if (fl_uri_decode(fl_slice(p + 1, n - 1), false, &k) || !k.ptr || memchr(k.ptr, 0, k.len)) {
                fl_buf_free(&k);
                return FL_ERR_INVALID;
            }
            r->keylen = k.len;
            r->key = fl_buf_steal(&k);
        }
        return FL_OK;
    }
    p++, n--;
    if (n == 0) return FL_OK;
    const char *slash = memchr(p, '/', n);
    size_t blen = slash ? (size_t)(slash - p) : n;
    fl_buf_t b;
    fl_buf_init(&b, 1024);
    if (fl_uri_decode(fl_slice(p, blen), false, &b) || !b.ptr) {
        fl_buf_free(&b);
        return FL_ERR_INVALID;
    }
    bool bad = memchr(b.ptr, 0, b.len) != NULL || memchr(b.ptr, '/', b.len) != NULL;
    r->bucket = fl_buf_steal(&b);
    if (bad) { /* a NUL would be read as a shorter name, a '/' as a path in another bucket */
        r->bucket_bad = true;
        return FL_OK;
    }
    if (slash && (size_t)(slash - p) + 1 < n) {
        fl_buf_t k;
        fl_buf_init(&k, FL_HTTP_MAX_TARGET_BYTES);
        const char *ks = slash + 1;
        if (fl_uri_decode(fl_slice(ks, n - blen - 1), false, &k) || !k.ptr) {
            fl_buf_free(&k);
            return FL_ERR_INVALID;
        }
        if (memchr(k.ptr, 0, k.len)) {
            fl_buf_free(&k);
            return FL_ERR_INVALID;
        }
        r->keylen = k.len;
        r->key = fl_buf_steal(&k);
    }
    return FL_OK;
}

static void common_headers(s3req_t *r)
{
    if (OSS(r)) {
        fl_http_resp_header(r->c, "x-oss-request-id", fl_http_request_id(r->c));
        return;
    }
    fl_http_resp_header(r->c, "x-amz-request-id", fl_http_request_id(r->c));
    fl_http_resp_header(r->c, "x-amz-id-2", fl_http_request_id(r->c));
}

/* Sends an XML document and frees it. */
static void send_xml(s3req_t *r, int status, fl_buf_t *b)
{
    r->responded = true;
    fl_http_resp_status(r->c, status);
    fl_http_resp_header(r->c, "Content-Type", "application/xml");
    fl_http_resp_send(r->c, b->ptr, b->len);
    fl_buf_free(b);
}

/* CopyObjectResult / CopyPartResult: the new ETag and now. */
static void send_copy_result(s3req_t *r, const char *root, const char *etag)
{
    fl_buf_t b;
    char t[32];
    fl_buf_init(&b, 0);
    xml_time(r, fl_now_ms(), t, sizeof t);
    xml_open(r, &b, root, false);
    fl_xml_elems(&b, "LastModified", t);
    fl_buf_printf(&b, "<ETag>&quot;%s&quot;</ETag></%s>", etag, root);
    send_xml(r, 200, &b);
}

static void send_empty(s3req_t *r, int status)
{
    r->responded = true;
    fl_http_resp_status(r->c, status);
    fl_http_resp_send(r->c, NULL, 0);
}

static bool valid_bucket_name(const char *s)
{
    size_t n = strlen(s);
    if (n < 3 || n > 63) return false;
    int dots = 0, digits_only = 1;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!(islower((unsigned char)c) || isdigit((unsigned char)c) || c == '.' || c == '-'))
            return false;
        if (c == '.') {
            dots++;
            if (i > 0 && s[i - 1] == '.') return false;
        } else if (!isdigit((unsigned char)c)) {
            digits_only = 0;
        }
    }
    if (!isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1])) return false;
    if (dots == 3 && digits_only) return false; /* looks like an IP address */
    if (n > 10 && !strcmp(s + n - 10, "--table-s3")) return false; /* table warehouses */
    return true;
}

/* Strips surrounding quotes of an ETag into out (48 bytes). */
static void unquote_etag(const char *in, size_t n, char *out)
{
    while (n && (*in == '"' || *in == ' ')) in++, n--;
    while (n && (in[n - 1] == '"' || in[n - 1] == ' ')) n--;
    if (n > 47) n = 47;
    memcpy(out, in, n);
    out[n] = 0;
}

/* Does an If-Match / If-None-Match list match etag? */
static bool etag_list_matches(fl_slice_t list, const char *etag)
{
    const char *p = list.ptr, *end = list.ptr + list.len;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *e = comma ? comma : end;
        char one[48];
        fl_slice_t t = fl_slice_trim(fl_slice(p, (size_t)(e - p)));
        if (t.len >= 2 && t.ptr[0] == 'W' && t.ptr[1] == '/') t.ptr += 2, t.len -= 2;
        if (fl_slice_eq(t, "*")) return true;
        unquote_etag(t.ptr, t.len, one);
        if (strcmp(one, etag) == 0) return true;
        p = e + 1;
    }
    return false;
}

/* ------------------------------------------------------------------ */
/* stored headers                                                      */

static const char *const stored_headers[] = {
    "content-type", "content-encoding", "cache-control", "content-disposition",
    "content-language", "expires", "x-amz-website-redirect-location", NULL,
};

/* Builds the opaque header text the store keeps for an object: content
 * headers and x-amz-meta-*. Returns false (MetadataTooLarge) over the cap. */
static bool collect_headers(s3req_t *r, fl_buf_t *out)
{
    size_t meta = 0;
    for (size_t i = 0; i < r->req->nheaders; i++) {
        const fl_http_header_t *h = &r->req->headers[i];
        fl_slice_t name = fl_slice(h->name, h->name_len), val = fl_slice(h->value, h->value_len);
        bool keep = h->name_len > 11 && memcmp(h->name, "x-amz-meta-", 11) == 0 && !OSS(r);
        bool ossmeta = OSS(r) && h->name_len > 11 && memcmp(h->name, "x-oss-meta-", 11) == 0;
        if (keep || ossmeta) meta += h->name_len - 11 + h->value_len;
        if (ossmeta) { /* stored under S3's name, shown in the reader's dialect */
            if (memchr(val.ptr, '\n', val.len)) continue;
            fl_buf_adds(out, "x-amz-meta-");
            fl_buf_add(out, name.ptr + 11, name.len - 11);
            fl_buf_add(out, ": ", 2);
            fl_buf_add(out, val.ptr, val.len);
            fl_buf_addc(out, '\n');
            continue;
        }
        for (int j = 0; !keep && stored_headers[j]; j++)
            keep = fl_slice_eq(name, stored_headers[j]);
        if (!keep || memchr(val.ptr, '\n', val.len)) continue;
        if (fl_slice_eq(name, "content-encoding")) {
            /* aws-chunked is transport framing, not the object's encoding */
            char tmp[256];
            size_t o = 0;
            const char *p = val.ptr, *end = val.ptr + val.len;
            while (p < end) {
                const char *c = memchr(p, ',', (size_t)(end - p));
                fl_slice_t t = fl_slice_trim(fl_slice(p, (size_t)((c ? c : end) - p)));
                if (t.len && !fl_slice_ieq(t, "aws-chunked") && o + t.len + 1 < sizeof tmp) {
                    if (o) tmp[o++] = ',';
                    memcpy(tmp + o, t.ptr, t.len);
                    o += t.len;
                }
                p = (c ? c : end) + 1;
            }
            if (!o) continue;
            val = fl_slice(tmp, o);
            fl_buf_add(out, name.ptr, name.len);
            fl_buf_add(out, ": ", 2);
            fl_buf_add(out, val.ptr, val.len);
            fl_buf_addc(out, '\n');
            continue;
        }
        fl_buf_add(out, name.ptr, name.len);
        fl_buf_add(out, ": ", 2);
        fl_buf_add(out, val.ptr, val.len);
        fl_buf_addc(out, '\n');
    }
    return meta <= FL_S3_MAX_META_BYTES;
}

/* Emits stored headers; skips checksum headers unless with_checksums. */
static void emit_headers(s3req_t *r, const char *text, bool with_checksums)
{
    const char *p = text;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        if (colon) {
            char name[256], value[4096];
            size_t nl_ = (size_t)(colon - p), vl = len - nl_ - 1;
            const char *v = colon + 1;
            if (vl && *v == ' ') v++, vl--;
            bool ck = nl_ > 15 && strncmp(p, "x-amz-checksum-", 15) == 0;
            bool crc64 = nl_ == strlen(CRC64_HDR) && !strncmp(p, CRC64_HDR, nl_);
            bool show = crc64 ? OSS(r) && with_checksums : !ck || with_checksums;
            if (nl_ < sizeof name && vl < sizeof value && show) {
                memcpy(name, p, nl_);
                name[nl_] = 0;
                if (OSS(r) && nl_ > 11 && !strncmp(name, "x-amz-meta-", 11)) memcpy(name, "x-oss", 5);
                memcpy(value, v, vl);
                value[vl] = 0;
                /* response-content-* overrides win */
                char qn[sizeof name + 16];
                snprintf(qn, sizeof qn, "response-%s", name);
                if (!qget(r, qn)) fl_http_resp_header(r->c, name, value);
            }
        }
        p = nl ? nl + 1 : NULL;
    }
}

static bool headers_have(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, name, n) == 0 && p[n] == ':') return true;
        p = strchr(p, '\n');
        if (p) p++;
    }
    return false;
}

/* ------------------------------------------------------------------ */
/* body intake                                                         */

/* Hashing runs beside the socket: for a large body a helper thread
 * computes MD5 (and the checksum and payload hash) over each buffer while the
 * connection thread receives the next one and writes it to the blob. The
 * body is read into NBUF rotating buffers; a buffer is refilled only after
 * the hasher has finished every slice that points into it. */
#define PIPE_NBUF 4
#define PIPE_BUF (512 * 1024)
#define PIPE_QUEUE 64
#define PIPE_MIN_BODY (8LL << 20)

typedef struct hashpipe {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct { const void *p; size_t n; int buf; } q[PIPE_QUEUE];
    int head, tail, count;
    int busy[PIPE_NBUF];
    int cur;          /* buffer the connection thread is filling */
    bool done;
    struct intake *in;
    char *bufs[PIPE_NBUF];
} hashpipe_t;

typedef struct intake {
    fl_blob_w_t *w;        /* NULL: body kept in mem instead */
    fl_buf_t *mem;
    fl_cksum_t md5;
    fl_cksum_t ck;         /* checksum named in a header, verified at the end */
    fl_cksum_t sha;        /* for FL_PAYLOAD_SHA256 */
    bool want_sha;
    bool want_crc64;       /* OSS: CRC-64/ECMA of the body */
    uint64_t crc64;
    int64_t size, max;
    fl_err_t err;
    hashpipe_t *pipe;      /* non-NULL: hashing on the helper thread */
    /* results */
    char etag[48];
    fl_cksum_alg_t ck_alg;
    char ck_b64[48];
} intake_t;

static void hash_slice(intake_t *in, const void *p, size_t n)
{
    fl_cksum_update(&in->md5, p, n);
    if (in->ck.alg != FL_CK_NONE) fl_cksum_update(&in->ck, p, n);
    if (in->want_sha) fl_cksum_update(&in->sha, p, n);
    if (in->want_crc64) in->crc64 = fl_crc64ecma(in->crc64, p, n);
}

static void *hashpipe_main(void *arg)
{
    hashpipe_t *hp = arg;
    pthread_mutex_lock(&hp->mu);
    for (;;) {
        while (!hp->count && !hp->done) pthread_cond_wait(&hp->cv, &hp->mu);
        if (!hp->count) break;
        const void *p = hp->q[hp->head].p;
        size_t n = hp->q[hp->head].n;
        int b = hp->q[hp->head].buf;
        hp->head = (hp->head + 1) % PIPE_QUEUE;
        hp->count--;
        pthread_mutex_unlock(&hp->mu);
        hash_slice(hp->in, p, n);
        pthread_mutex_lock(&hp->mu);
        hp->busy[b]--;
        pthread_cond_broadcast(&hp->cv);
    }
    pthread_mutex_unlock(&hp->mu);
    return NULL;
}

static hashpipe_t *hashpipe_start(intake_t *in)
{
    hashpipe_t *hp = fl_calloc(1, sizeof *hp);
    hp->in = in;
    pthread_mutex_init(&hp->mu, NULL);
    pthread_cond_init(&hp->cv, NULL);
    for (int i = 0; i < PIPE_NBUF; i++) hp->bufs[i] = fl_malloc(PIPE_BUF);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 128 * 1024);
    int rc = pthread_create(&hp->th, &a, hashpipe_main, hp);
    pthread_attr_destroy(&a);
    if (rc != 0) {
        for (int i = 0; i < PIPE_NBUF; i++) free(hp->bufs[i]);
        pthread_cond_destroy(&hp->cv);
        pthread_mutex_destroy(&hp->mu);
        free(hp);
        return NULL; /* hash inline instead */
    }
    return hp;
}

/* The next buffer to receive into, once the hasher is done with it. */
static char *hashpipe_next_buf(hashpipe_t *hp)
{
    pthread_mutex_lock(&hp->mu);
    hp->cur = (hp->cur + 1) % PIPE_NBUF;
    while (hp->busy[hp->cur]) pthread_cond_wait(&hp->cv, &hp->mu);
    pthread_mutex_unlock(&hp->mu);
    return hp->bufs[hp->cur];
}

static void hashpipe_push(hashpipe_t *hp, const void *p, size_t n)
{
    pthread_mutex_lock(&hp->mu);
    while (hp->count == PIPE_QUEUE) pthread_cond_wait(&hp->cv, &hp->mu);
    hp->q[hp->tail].p = p;
    hp->q[hp->tail].n = n;
    hp->q[hp->tail].buf = hp->cur;
    hp->tail = (hp->tail + 1) % PIPE_QUEUE;
    hp->count++;
    hp->busy[hp->cur]++;
    pthread_cond_broadcast(&hp->cv);
    pthread_mutex_unlock(&hp->mu);
}

/* Waits for every queued slice to be hashed, then frees the pipe. */
static void hashpipe_finish(hashpipe_t *hp)
{
    if (!hp) return;
    pthread_mutex_lock(&hp->mu);
    hp->done = true;
    pthread_cond_broadcast(&hp->cv);
    pthread_mutex_unlock(&hp->mu);
    pthread_join(hp->th, NULL);
    for (int i = 0; i < PIPE_NBUF; i++) free(hp->bufs[i]);
    pthread_cond_destroy(&hp->cv);
    pthread_mutex_destroy(&hp->mu);
    free(hp);
}

static int intake_out(void *ud, const void *p, size_t n)
{
    intake_t *in = ud;
    if ((int64_t)n > in->max - in->size) {
        in->err = FL_ERR_TOO_LARGE;
        return 1;
    }
    in->size += (int64_t)n;
    fl_err_t e = in->w ? fl_blob_w_write(in->w, p, n) : fl_buf_add(in->mem, p, n);
    if (e) {
        in->err = e;
        return 1;
    }
    if (in->pipe) hashpipe_push(in->pipe, p, n);
    else hash_slice(in, p, n);
    return 0;
}

/* Why an intake step refused the body: an S3 error still to be sent. */
typedef struct intake_fail {
    int status;
    const char *code, *msg;
} intake_fail_t;

static bool refuse(intake_fail_t *f, int status, const char *code, const char *msg)
{
    *f = (intake_fail_t){ status, code, msg };
    return false;
}

/* What to verify: Content-MD5 always (it is the ETag), one x-amz-checksum-*
 * header (its value into ck_expect) or an algorithm named by
 * x-amz-sdk-checksum-algorithm, and the signed payload hash. */
static bool intake_checksums(s3req_t *r, intake_t *in, char ck_expect[64], intake_fail_t *f)
{
    fl_cksum_init(&in->md5, FL_CK_MD5);
    fl_cksum_init(&in->ck, FL_CK_NONE);
    fl_cksum_init(&in->sha, FL_CK_NONE);
    in->want_crc64 = OSS(r);
    in->crc64 = 0;
    ck_expect[0] = 0;
    for (size_t i = 0; i < r->req->nheaders; i++) {
        const fl_http_header_t *h = &r->req->headers[i];
        fl_cksum_alg_t a = fl_cksum_alg_from_header(h->name, h->name_len);
        if (a == FL_CK_NONE || h->value_len >= 64) continue;
        if (in->ck.alg != FL_CK_NONE)
            return refuse(f, 400, "InvalidRequest",
                          "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");
        fl_cksum_init(&in->ck, a);
        memcpy(ck_expect, h->value, h->value_len);
        ck_expect[h->value_len] = 0;
    }
    char algname[32];
    if (in->ck.alg == FL_CK_NONE && !hhas(r, "x-amz-trailer") &&
        hget(r, "x-amz-sdk-checksum-algorithm", algname, sizeof algname)) {
        /* algorithm named without a value: compute it to echo it back */
        fl_cksum_alg_t a = fl_cksum_alg_from_name(algname, strlen(algname));
        if (a != FL_CK_NONE) fl_cksum_init(&in->ck, a);
    }
    return true;
}

/* The body's framing: aws-chunked (signed, or unsigned with a trailer in
 * insecure mode) through a decoder in *dec, else a plain body whose length
 * must be known and within in->max. */
static bool intake_framing(s3req_t *r, intake_t *in, fl_awschunk_t **dec, intake_fail_t *f)
{
    bool streaming = r->signed_req && r->auth.payload_mode >= FL_PAYLOAD_STREAMING_SIGNED;
    if (!r->signed_req) {
        /* unauthenticated (insecure mode) requests may still be aws-chunked */
        char sha[80];
        if (hget(r, "x-amz-content-sha256", sha, sizeof sha) && strncmp(sha, "STREAMING-", 10) == 0) {
            if (strcmp(sha, "STREAMING-UNSIGNED-PAYLOAD-TRAILER") != 0)
                return refuse(f, 403, "AccessDenied", "Signed streaming payloads need a signed request.");
            memset(&r->auth, 0, sizeof r->auth);
            r->auth.payload_mode = FL_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
            streaming = true;
        }
    }
    in->want_sha = r->signed_req && r->auth.payload_mode == FL_PAYLOAD_SHA256;
    if (in->want_sha) fl_cksum_init(&in->sha, FL_CK_SHA256);
    if (!streaming) {
        if (r->req->content_length < 0 && !r->req->chunked) return refuse(f, 411, "MissingContentLength", NULL);
        if (r->req->content_length > in->max) return refuse(f, 400, "EntityTooLarge", NULL);
        return true;
    }
    char trailer[64] = "", dlen[32] = "";
    bool has_trailer = hget(r, "x-amz-trailer", trailer, sizeof trailer);
    int64_t decoded = -1;
    if (hget(r, "x-amz-decoded-content-length", dlen, sizeof dlen)) {
        char *end;
        decoded = strtoll(dlen, &end, 10);
        if (*end || decoded < 0) decoded = -2;
    }
    if (decoded == -2) return refuse(f, 400, "InvalidArgument", "x-amz-decoded-content-length is missing or invalid.");
    if (decoded == -1 && r->auth.payload_mode == FL_PAYLOAD_STREAMING_SIGNED)
        return refuse(f, 411, "MissingContentLength", "x-amz-decoded-content-length is missing or invalid.");
    if (decoded > in->max) return refuse(f, 400, "EntityTooLarge", NULL);
    if (!(*dec = fl_awschunk_new(&r->auth, has_trailer ? trailer : NULL, decoded)))
        return refuse(f, 400, "InvalidArgument", "The x-amz-trailer header names an unsupported checksum.");
    return true;
}

/* Streams the body from the socket through the decoder (if any) into the
 * sink and the hashes (on the hashing thread for large blob bodies). Leaves
 * the first failure in in->err; every byte is hashed when it returns. */
static void intake_stream(s3req_t *r, intake_t *in, fl_awschunk_t *dec)
{
    int64_t expect = r->req->content_length;
    char *buf = NULL;
    if (in->w && (expect >= PIPE_MIN_BODY || (expect < 0 && r->req->chunked))) in->pipe = hashpipe_start(in);
    if (!in->pipe) buf = fl_malloc(IO_BUF);
    for (;;) {
        char *rb = in->pipe ? hashpipe_next_buf(in->pipe) : buf;
        ssize_t n = fl_http_body_read(r->c, rb, in->pipe ? PIPE_BUF : IO_BUF);
        if (n < 0) {
            in->err = (fl_err_t)n;
            break;
        }
        if (n == 0) break;
        if (dec) {
            fl_err_t e = fl_awschunk_feed(dec, rb, (size_t)n, intake_out, in);
            if (e && !in->err) in->err = e;
        } else {
            intake_out(in, rb, (size_t)n);
        }
        if (in->err) break;
    }
    hashpipe_finish(in->pipe); /* every byte hashed before the digests are read */
    in->pipe = NULL;
    free(buf);
    if (!in->err && dec) in->err = fl_awschunk_finish(dec);
}

/* A failed read or decode: the connection closes after the answer. Errors of
 * the aws-chunked decoder are S3's; others go through s3_error_from (sent
 * here, *f left empty). */
static bool intake_stream_failed(s3req_t *r, intake_t *in, fl_awschunk_t *dec, intake_fail_t *f)
{
    fl_err_t e = in->err;
    fl_http_close_after(r->c);
    if (dec && e == FL_ERR_AUTH) return refuse(f, 403, "SignatureDoesNotMatch", fl_awschunk_errmsg(dec));
    if (dec && e == FL_ERR_DIGEST) return refuse(f, 400, "BadDigest", fl_awschunk_errmsg(dec));
    if (dec && (e == FL_ERR_PROTO || e == FL_ERR_INVALID))
        return refuse(f, 400, "InvalidRequest", fl_awschunk_errmsg(dec));
    if (dec && e == FL_ERR_INCOMPLETE) return refuse(f, 400, "IncompleteBody", NULL);
    s3_error_from(r, e);
    return false;
}

/* The digests against what the client claimed: Content-MD5, the signed
 * payload hash, the x-amz-checksum-* value (or the trailer's, kept). */
static bool intake_verify(s3req_t *r, intake_t *in, fl_awschunk_t *dec, const char *ck_expect, intake_fail_t *f)
{
    unsigned char md5[FL_CK_MAX_DIGEST];
    fl_cksum_final(&in->md5, md5);
    fl_hex(md5, 16, in->etag);
    char cmd5[64];
    if (hget(r, "content-md5", cmd5, sizeof cmd5)) {
        unsigned char want[32];
        if (fl_base64_decode(cmd5, strlen(cmd5), want, sizeof want) != 16)
            return refuse(f, 400, "InvalidDigest", NULL);
        if (memcmp(want, md5, 16) != 0) return refuse(f, 400, "BadDigest", NULL);
    }
    char crc[32];
    if (in->want_crc64 && hget(r, CRC64_HDR, crc, sizeof crc)) {
        char want[32];
        snprintf(want, sizeof want, "%llu", (unsigned long long)in->crc64);
        if (strcmp(crc, want) != 0)
            return refuse(f, 400, "InvalidDigest", "The CRC64 you specified did not match what we received.");
    }
    if (in->want_sha) {
        unsigned char d[FL_CK_MAX_DIGEST];
        char hex[65];
        fl_cksum_final(&in->sha, d);
        fl_hex(d, 32, hex);
        if (strcmp(hex, r->auth.payload_sha256) != 0) return refuse(f, 400, "XAmzContentSHA256Mismatch", NULL);
    }
    if (in->ck.alg != FL_CK_NONE) {
        in->ck_alg = in->ck.alg;
        fl_cksum_final_b64(&in->ck, in->ck_b64);
        if (ck_expect[0] && strcmp(ck_expect, in->ck_b64) != 0)
            return refuse(f, 400, "BadDigest", "The checksum you specified did not match the calculated checksum.");
    } else if (dec) {
        const char *v = NULL;
        fl_cksum_alg_t a = fl_awschunk_trailer(dec, &v);
        if (a != FL_CK_NONE && v && strlen(v) < sizeof in->ck_b64) {
            in->ck_alg = a;
            strcpy(in->ck_b64, v);
        }
    }
    return true;
}

/* Reads the whole request body through the SigV4 payload mode into a blob (w)
 * or memory (mem), verifying Content-MD5, x-amz-checksum-* (header or
 * trailer) and the signed payload hash. On failure an S3 error has been sent
 * and false is returned; nothing is published by this function. */
static bool intake_body(s3req_t *r, intake_t *in)
{
    fl_awschunk_t *dec = NULL;
    char ck_expect[64];
    intake_fail_t f = { 0 };
    bool ok = intake_checksums(r, in, ck_expect, &f) && intake_framing(r, in, &dec, &f);
    if (ok) {
        intake_stream(r, in, dec);
        ok = in->err ? intake_stream_failed(r, in, dec, &f) : intake_verify(r, in, dec, ck_expect, &f);
    }
    if (f.code) s3_error(r, f.status, f.code, f.msg);
    fl_cksum_free(&in->md5);
    fl_cksum_free(&in->ck);
    fl_cksum_free(&in->sha);
    fl_awschunk_free(dec);
    return ok;
}

/* Reads a small XML body into memory (verifying hashes) and parses it. */
static fl_xml_node_t *read_xml_body(s3req_t *r, const char *root_name)
{
    fl_buf_t mem;
    fl_buf_init(&mem, FL_S3_MAX_XML_BODY);
    intake_t in = { .mem = &mem, .max = FL_S3_MAX_XML_BODY };
    fl_xml_node_t *doc = NULL;
    if (r->req->content_length < 0 && !r->req->chunked && !hhas(r, "x-amz-decoded-content-length")) {
        s3_error(r, 400, "MalformedXML", NULL);
        goto out;
    }
    if (!intake_body(r, &in)) goto out;
    doc = mem.ptr ? fl_xml_parse(mem.ptr, mem.len) : NULL;
    if (!doc || strcmp(doc->name, root_name) != 0) {
        fl_xml_free(doc);
        doc = NULL;
        s3_error(r, 400, "MalformedXML", NULL);
    }
out:
    fl_buf_free(&mem);
    return doc;
}

/* ------------------------------------------------------------------ */
/* service and bucket operations                                       */

static void op_list_buckets(s3req_t *r)
{
    fl_http_set_op(r->c, "ListBuckets");
    fl_bucket_info_t *bs = NULL;
    size_t n = 0;
    fl_err_t e = fl_store_bucket_list(r->cfg->store, &bs, &n);
    if (e) return s3_error_from(r, e);
    fl_buf_t b;
    fl_buf_init(&b, 0);
    xml_open(r, &b, "ListAllMyBucketsResult", false);
    fl_buf_adds(&b, XML_OWNER "<Buckets>");
    for (size_t i = 0; i < n; i++) {
        char t[32];
        xml_time(r, bs[i].created_ms, t, sizeof t);
        fl_buf_adds(&b, "<Bucket>");
        fl_xml_elems(&b, "Name", bs[i].name);
        fl_xml_elems(&b, "CreationDate", t);
        fl_buf_adds(&b, "</Bucket>");
    }
    fl_buf_adds(&b, "</Buckets></ListAllMyBucketsResult>");
    send_xml(r, 200, &b);
    free(bs);
}

/* A bucket's policy goes with the bucket. */
static void drop_bucket_policy(s3req_t *r)
{
    if (!r->cfg->iam) return;
    char arn[FL_ARN_MAX], *have = NULL;
    snprintf(arn, sizeof arn, "arn:aws:s3:::%s", r->bucket);
    fl_catalog_t *cat = fl_iam_catalog(r->cfg->iam);
    if (fl_catalog_doc_get(cat, arn, "policy", &have) != FL_OK) return;
    free(have);
    uint64_t mark = fl_iam_write_begin(r->cfg->iam);
    fl_err_t e = fl_catalog_doc_delete(cat, arn, "policy");
    fl_iam_write_end(r->cfg->iam, mark);
    if (e && e != FL_ERR_NOT_FOUND) fl_warn("s3: the policy of deleted bucket %s stays (%s)", r->bucket, fl_err_str(e));
}

static void op_create_bucket(s3req_t *r)
{
    fl_http_set_op(r->c, "CreateBucket");
    if (!valid_bucket_name(r->bucket)) return s3_error(r, 400, "InvalidBucketName", NULL);
    fl_err_t e = fl_store_bucket_create(r->cfg->store, r->bucket);
    if (e) return s3_error_from(r, e);
    drop_bucket_policy(r); /* one left by a bucket of that name removed behind floe's back */
    char loc[128];
    snprintf(loc, sizeof loc, "/%s", r->bucket);
    fl_http_resp_header(r->c, "Location", loc);
    send_empty(r, 200);
}

static void op_head_bucket(s3req_t *r)
{
    fl_http_set_op(r->c, "HeadBucket");
    fl_bucket_info_t bi;
    fl_err_t e = fl_store_bucket_head(r->cfg->store, r->bucket, &bi);
    if (e) return s3_error_from(r, e);
    fl_http_resp_header(r->c, "x-amz-bucket-region", r->cfg->region);
    send_empty(r, 200);
}

static void op_delete_bucket(s3req_t *r)
{
    fl_http_set_op(r->c, "DeleteBucket");
    fl_err_t e = fl_store_bucket_delete(r->cfg->store, r->bucket);
    if (e) return s3_error_from(r, e);
    drop_bucket_policy(r);
    send_empty(r, 204);
}

static void op_bucket_location(s3req_t *r)
{
    fl_http_set_op(r->c, "GetBucketLocation");
    fl_bucket_info_t bi;
    fl_err_t e = fl_store_bucket_head(r->cfg->store, r->bucket, &bi);
    if (e) return s3_error_from(r, e);
    fl_buf_t b;
    fl_buf_init(&b, 0);
    xml_open(r, &b, "LocationConstraint", false);
    if (strcmp(r->cfg->region, "us-east-1") != 0) fl_xml_escape(&b, r->cfg->region, strlen(r->cfg->region));
    fl_buf_adds(&b, "</LocationConstraint>");
    send_xml(r, 200, &b);
}

static void op_bucket_versioning(s3req_t *r)
{
    fl_http_set_op(r->c, "GetBucketVersioning");
    fl_bucket_info_t bi;
    fl_err_t e = fl_store_bucket_head(r->cfg->store, r->bucket, &bi);
    if (e) return s3_error_from(r, e);
    fl_buf_t b;
    fl_buf_init(&b, 0);
    xml_open(r, &b, "VersioningConfiguration", true);
    send_xml(r, 200, &b);
}

/* ------------------------------------------------------------------ */
/* bucket policies                                                     */

/* A bucket policy's Resource/NotResource entry must name the bucket or
 * objects in it (AWS's "Policy has invalid resource"). */
static bool policy_resource_ok(const char *bucket, const char *res)
{
    char arn[FL_ARN_MAX], obj[FL_ARN_MAX];
    snprintf(arn, sizeof arn, "arn:aws:s3:::%s", bucket);
    snprintf(obj, sizeof obj, "arn:aws:s3:::%s/", bucket);
    size_t ol = strlen(obj);
    return !strncmp(res, obj, ol) || fl_policy_glob(res, arn, false) || fl_policy_glob(res, obj, false);
}

/* The statements' resources all within bucket (the document already parsed). */
static bool policy_resources_ok(const char *bucket, json_t *doc)
{
    json_t *sts = json_object_get(doc, "Statement");
    json_t *one[1] = { sts };
    size_t n = json_is_array(sts) ? json_array_size(sts) : 1;
    for (size_t i = 0; i < n; i++) {
        json_t *st = json_is_array(sts) ? json_array_get(sts, i) : one[0];
        const char *fields[2] = { "Resource", "NotResource" };
        for (int f = 0; f < 2; f++) {
            json_t *v = json_object_get(st, fields[f]);
            size_t m = json_is_array(v) ? json_array_size(v) : v ? 1 : 0;
            for (size_t j = 0; j < m; j++) {
                const char *s = json_string_value(json_is_array(v) ? json_array_get(v, j) : v);
                if (!s || !policy_resource_ok(bucket, s)) return false;
            }
        }
    }
    return true;
}

/* Public as GetBucketPolicyStatus says: some Allow statement grants any
 * principal ("*" or {"AWS": "*"}) without a Condition. */
static bool policy_is_public(json_t *doc)
{
    json_t *sts = json_object_get(doc, "Statement");
    size_t n = json_is_array(sts) ? json_array_size(sts) : 1;
    for (size_t i = 0; i < n; i++) {
        json_t *st = json_is_array(sts) ? json_array_get(sts, i) : sts;
        const char *eff = json_string_value(json_object_get(st, "Effect"));
        if (!eff || strcmp(eff, "Allow") || json_object_get(st, "Condition")) continue;
        json_t *p = json_object_get(st, "Principal");
        if (json_is_object(p)) p = json_object_get(p, "AWS");
        size_t m = json_is_array(p) ? json_array_size(p) : p ? 1 : 0;
        for (size_t j = 0; j < m; j++) {
            const char *s = json_string_value(json_is_array(p) ? json_array_get(p, j) : p);
            if (s && !strcmp(s, "*")) return true;
        }
    }
    return false;
}

/* The policy operations' common ground: identities on (the catalog keeps the
 * document), a general-purpose bucket (a table's warehouse is governed by its
 * table's policies), the caller of the bucket owner's account (AWS: 405 for
 * another account's identity the policies let through), the bucket there.
 * False: answered. */
static bool policy_preamble(s3req_t *r, const char *action, char *arn, size_t arnlen)
{
    fl_http_set_op(r->c, action);
    size_t bl = strlen(r->bucket);
    if (!r->cfg->iam || (bl > 10 && !strcmp(r->bucket + bl - 10, "--table-s3"))) {
        s3_error(r, 501, "NotImplemented",
                 r->cfg->iam ? "A table's warehouse bucket is governed by its table's and table bucket's policies."
                             : "Bucket policies need identities (the catalog) to be on.");
        return false;
    }
    if (!may(r, action, !strcmp(action, "PutBucketPolicy") || !strcmp(action, "DeleteBucketPolicy"), r->bucket,
             NULL, 0)) {
        fl_http_set_op(r->c, "AccessDenied");
        return false;
    }
    if (r->have_who && strcmp(r->who.account, fl_iam_root_account(r->cfg->iam))) {
        s3_error(r, 405, "MethodNotAllowed", "Only identities of the bucket owner's account may use its policy.");
        return false;
    }
    fl_bucket_info_t bi;
    fl_err_t e = fl_store_bucket_head(r->cfg->store, r->bucket, &bi);
    if (e) {
        s3_error_from(r, e);
        return false;
    }
    snprintf(arn, arnlen, "arn:aws:s3:::%s", r->bucket);
    return true;
}

static void op_put_bucket_policy(s3req_t *r)
{
    char arn[FL_ARN_MAX], err[256];
    fl_buf_t mem;
    fl_buf_init(&mem, 0);
    json_t *doc = NULL;
    fl_policy_t *p = NULL;
    if (!policy_preamble(r, "PutBucketPolicy", arn, sizeof arn)) goto out;
    if (r->req->content_length > FL_S3_MAX_BUCKET_POLICY) {
        s3_error(r, 400, "MalformedPolicy", "Policies must be less than 20 KB.");
        goto out;
    }
    if (r->req->content_length < 0 && !r->req->chunked && !hhas(r, "x-amz-decoded-content-length")) {
        s3_error(r, 411, "MissingContentLength", NULL);
        goto out;
    }
    intake_t in = { .mem = &mem, .max = FL_S3_MAX_BUCKET_POLICY };
    if (!intake_body(r, &in)) goto out;
    json_error_t je;
    doc = mem.len ? json_loadb(mem.ptr, mem.len, JSON_REJECT_DUPLICATES, &je) : NULL;
    if (!doc || !json_is_object(doc)) {
        s3_error(r, 400, "MalformedPolicy", mem.len ? "Policies must be valid JSON and the first byte must be '{'"
                                                    : "Policies must not be empty.");
        goto out;
    }
    p = fl_policy_parse(mem.ptr, mem.len, FL_POLICY_RESOURCE, err, sizeof err);
    if (!p) {
        s3_error(r, 400, "MalformedPolicy", err);
        goto out;
    }
    if (!policy_resources_ok(r->bucket, doc)) {
        s3_error(r, 400, "MalformedPolicy", "Policy has invalid resource");
        goto out;
    }
    uint64_t mark = fl_iam_write_begin(r->cfg->iam);
    char *text = fl_strndup(mem.ptr, mem.len);
    fl_err_t e = fl_catalog_doc_put(fl_iam_catalog(r->cfg->iam), arn, "policy", text);
    free(text);
    fl_iam_write_end(r->cfg->iam, mark);
    if (e) {
        s3_error(r, 500, "InternalError", NULL);
        goto out;
    }
    send_empty(r, 204);
out:
    fl_policy_free(p);
    json_decref(doc);
    fl_buf_free(&mem);
}

static void op_get_bucket_policy(s3req_t *r, bool status)
{
    char arn[FL_ARN_MAX], *text = NULL;
    json_t *doc = NULL;
    if (!policy_preamble(r, status ? "GetBucketPolicyStatus" : "GetBucketPolicy", arn, sizeof arn)) goto out;
    fl_err_t e = fl_catalog_doc_get(fl_iam_catalog(r->cfg->iam), arn, "policy", &text);
    if (e) {
        s3_error(r, e == FL_ERR_NOT_FOUND ? 404 : 500, e == FL_ERR_NOT_FOUND ? "NoSuchBucketPolicy" : "InternalError",
                 NULL);
        goto out;
    }
    if (!status) {
        r->responded = true;
        fl_http_resp_status(r->c, 200);
        fl_http_resp_header(r->c, "Content-Type", "application/json");
        fl_http_resp_send(r->c, text, strlen(text));
        goto out;
    }
    doc = json_loads(text, 0, NULL);
    fl_buf_t b;
    fl_buf_init(&b, 0);
    xml_open(r, &b, "PolicyStatus", false);
    fl_buf_printf(&b, "<IsPublic>%s</IsPublic></PolicyStatus>", doc && policy_is_public(doc) ? "true" : "false");
    send_xml(r, 200, &b);
out:
    json_decref(doc);
    free(text);
}

static void op_delete_bucket_policy(s3req_t *r)
{
    char arn[FL_ARN_MAX];
    if (!policy_preamble(r, "DeleteBucketPolicy", arn, sizeof arn)) return;
    uint64_t mark = fl_iam_write_begin(r->cfg->iam);
    fl_err_t e = fl_catalog_doc_delete(fl_iam_catalog(r->cfg->iam), arn, "policy");
    fl_iam_write_end(r->cfg->iam, mark);
    if (e && e != FL_ERR_NOT_FOUND) return s3_error(r, 500, "InternalError", NULL);
    send_empty(r, 204);
}

/* Encodes a key for a listing: as-is, or percent-encoded with encoding-type=url. */
static void list_key(fl_buf_t *b, const char *tag, const char *k, size_t n, bool url)
{
    if (!url) {
        fl_xml_elem(b, tag, k, n);
        return;
    }
    fl_buf_t enc;
    fl_buf_init(&enc, 0);
    fl_uri_encode(fl_slice(k, n), true, &enc);
    fl_xml_elem(b, tag, enc.ptr, enc.len);
    fl_buf_free(&enc);
}

static bool parse_int_param(s3req_t *r, const char *name, int def, int lo, int hi, int *out)
{
    const char *v = qget(r, name);
    *out = def;
    if (!v || (OSS(r) && !*v)) return true; /* oss2 sends part-number-marker= for "none" */
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "Provided %s not an integer or within integer range", name);
        s3_error(r, 400, "InvalidArgument", msg);
        return false;
    }
    if (x < lo) x = lo;
    if (x > hi) x = hi;
    *out = (int)x;
    return true;
}

static void op_list_objects(s3req_t *r, bool v2)
{
    fl_http_set_op(r->c, v2 ? "ListObjectsV2" : "ListObjects");
    const char *prefix = qget(r, "prefix"), *delim = qget(r, "delimiter");
    const char *enc = qget(r, "encoding-type");
    bool url = enc && strcmp(enc, "url") == 0;
    if (enc && !url) return s3_error(r, 400, "InvalidArgument", "Invalid Encoding Method specified in Request");
    int max;
    if (!parse_int_param(r, "max-keys", FL_S3_MAX_LIST_KEYS, 0, FL_S3_MAX_LIST_KEYS, &max)) return;
    const char *token = qget(r, "continuation-token");
    const char *start_after = v2 ? qget(r, "start-after") : qget(r, "marker");
    char *after = NULL;
    if (v2 && token) {
        size_t tl = strlen(token);
        unsigned char *d = fl_malloc(tl + 1);
        long dl = fl_base64_decode(token, tl, d, tl);
        if (dl < 0 || memchr(d, 0, (size_t)dl)) {
            free(d);
            return s3_error(r, 400, "InvalidArgument", "The continuation token provided is incorrect");
        }
        d[dl] = 0;
        after = (char *)d;
    }
    const char *from = after ? after : start_after;
    if (delim && !*delim) delim = NULL;
    fl_list_res_t res = { 0 };
    fl_err_t e = FL_OK;
    if (max > 0) e = fl_store_list(r->cfg->store, r->bucket, prefix ? prefix : "", delim, from, max, &res);
    else {
        fl_bucket_info_t bi;
        e = fl_store_bucket_head(r->cfg->store, r->bucket, &bi);
    }
    if (e) {
        free(after);
        return s3_error_from(r, e);
    }
    fl_buf_t b;
    fl_buf_init(&b, 0);
    xml_open(r, &b, "ListBucketResult", false);
    fl_xml_elems(&b, "Name", r->bucket);
    list_key(&b, "Prefix", prefix ? prefix : "", prefix ? strlen(prefix) : 0, url);
    if (delim) list_key(&b, "Delimiter", delim, strlen(delim), url);
    fl_xml_elemf(&b, "MaxKeys", "%d", max);
    if (url) fl_xml_elems(&b, "EncodingType", "url");
    fl_xml_elems(&b, "IsTruncated", res.truncated ? "true" : "false");
    if (v2) {
        fl_xml_elemf(&b, "KeyCount", "%zu", res.nents + res.nprefixes);
        if (token) fl_xml_elems(&b, "ContinuationToken", token);
        if (start_after) list_key(&b, "StartAfter", start_after, strlen(start_after), url);
        if (res.truncated && res.next_after) {
            size_t nl = strlen(res.next_after);
            char *t = fl_malloc(4 * ((nl + 2) / 3) + 1);
            fl_base64((const unsigned char *)res.next_after, nl, t);
            fl_xml_elems(&b, "NextContinuationToken", t);
            free(t);
        }
    } else {
        list_key(&b, "Marker", start_after ? start_after : "", start_after ? strlen(start_after) : 0, url);
        if (res.truncated && res.next_after && delim)
            list_key(&b, "NextMarker", res.next_after, strlen(res.next_after), url);
    }
    bool owner = v2 ? (qget(r, "fetch-owner") && strcmp(qget(r, "fetch-owner"), "true") == 0) : true;
    for (size_t i = 0; i < res.nents; i++) {
        fl_list_ent_t *it = &res.ents[i];
        char t[32];
        xml_time(r, it->mtime_ms, t, sizeof t);
        fl_buf_adds(&b, "<Contents>");
        list_key(&b, "Key", it->key, it->keylen, url);
        fl_xml_elems(&b, "LastModified", t);
        fl_buf_printf(&b, "<ETag>&quot;%s&quot;</ETag>", it->etag);
        if (OSS(r)) /* OSS's object type; oss2 requires it */
            fl_xml_elems(&b, "Type", strchr(it->etag, '-') ? "Multipart" : "Normal");
        fl_xml_elemf(&b, "Size", "%lld", (long long)it->size);
        fl_xml_elems(&b, "StorageClass", "STANDARD");
        if (owner) fl_buf_adds(&b, XML_OWNER);
        fl_buf_adds(&b, "</Contents>");
    }
    for (size_t i = 0; i < res.nprefixes; i++) {
        fl_buf_adds(&b, "<CommonPrefixes>");
        list_key(&b, "Prefix", res.prefixes[i], strlen(res.prefixes[i]), url);
        fl_buf_adds(&b, "</CommonPrefixes>");
    }
    fl_buf_adds(&b, "</ListBucketResult>");
    send_xml(r, 200, &b);
    fl_list_res_free(&res);
    free(after);
}

static void op_delete_objects(s3req_t *r)
{
    fl_http_set_op(r->c, "DeleteObjects");
    fl_xml_node_t *doc = read_xml_body(r, "Delete");
    if (!doc) return;
    const char *quiet_s = fl_xml_child_text(doc, "Quiet");
    bool quiet = quiet_s && strcasecmp(quiet_s, "true") == 0;
    size_t count = 0;
    for (fl_xml_node_t *o = doc->child; o; o = o->next)
        if (strcmp(o->name, "Object") == 0) {
            count++;
            if (!fl_xml_child(o, "Key")) count = FL_S3_MAX_DELETE_KEYS + 1;
        }
    if (count == 0 || count > FL_S3_MAX_DELETE_KEYS) {
        fl_xml_free(doc);
        return s3_error(r, 400, "MalformedXML", NULL);
    }
    fl_bucket_info_t bi;
    fl_err_t e = fl_store_bucket_head(r->cfg->store, r->bucket, &bi);
    if (e) {
        fl_xml_free(doc);
        return s3_error_from(r, e);
    }
    fl_buf_t b;
    fl_buf_init(&b, 0);
    xml_open(r, &b, "DeleteResult", false);
    for (fl_xml_node_t *o = doc->child; o; o = o->next) {
        if (strcmp(o->name, "Object") != 0) continue;
        fl_xml_node_t *k = fl_xml_child(o, "Key");
        const char *code = NULL;
        if (k->text_len == 0 || k->text_len > FL_S3_MAX_KEY_BYTES) code = "InvalidArgument";
        else if (!allowed(r, "DeleteObject", true, r->bucket, k->text, k->text_len, NULL, 0)) code = "AccessDenied";
        else {
            e = fl_store_delete(r->cfg->store, r->bucket, k->text, k->text_len, NULL);
            if (e) code = e == FL_ERR_NO_BUCKET ? "NoSuchBucket" : "InternalError";
        }
        if (code) {
            fl_buf_adds(&b, "<Error>");
            fl_xml_elem(&b, "Key", k->text, k->text_len);
            fl_xml_elems(&b, "Code", code);
            fl_xml_elems(&b, "Message", default_message(code));
            fl_buf_adds(&b, "</Error>");
        } else if (!quiet) {
            fl_buf_adds(&b, "<Deleted>");
            fl_xml_elem(&b, "Key", k->text, k->text_len);
            fl_buf_adds(&b, "</Deleted>");
        }
    }
    fl_buf_adds(&b, "</DeleteResult>");
    send_xml(r, 200, &b);
    fl_xml_free(doc);
}

static void op_list_objects_v1(s3req_t *r) { op_list_objects(r, false); }
static void op_list_objects_v2(s3req_t *r) { op_list_objects(r, true); }

static void op_list_uploads(s3req_t *r)
{
    fl_http_set_op(r->c, "ListMultipartUploads");
    int max;
    if (!parse_int_param(r, "max-uploads", 1000, 0, 1000, &max)) return;
    const char *prefix = qget(r, "prefix"), *km = qget(r, "key-marker"), *um = qget(r, "upload-id-marker");
    fl_upload_info_t *u = NULL;
    size_t n = 0;
    bool trunc = false;
    fl_err_t e = fl_store_mpu_list(r->cfg->store, r->bucket, prefix ? prefix : "", km, um, max, &u, &n, &trunc);
    if (e) return s3_error_from(r, e);
    fl_buf_t b;
    fl_buf_init(&b, 0);
    xml_open(r, &b, "ListMultipartUploadsResult", false);
    fl_xml_elems(&b, "Bucket", r->bucket);
    fl_xml_elems(&b, "KeyMarker", km ? km : "");
    fl_xml_elems(&b, "UploadIdMarker", um ? um : "");
    if (trunc && n) {
        fl_xml_elem(&b, "NextKeyMarker", u[n - 1].key, u[n - 1].keylen);
        fl_xml_elems(&b, "NextUploadIdMarker", u[n - 1].upload_id);
    }
    fl_xml_elems(&b, "Prefix", prefix ? prefix : "");
    fl_xml_elemf(&b, "MaxUploads", "%d", max);
    fl_xml_elems(&b, "IsTruncated", trunc ? "true" : "false");
    for (size_t i = 0; i < n; i++) {
        char t[32];
        xml_time(r, u[i].created_ms, t, sizeof t);
        fl_buf_adds(&b, "<Upload>");
        fl_xml_elem(&b, "Key", u[i].key, u[i].keylen);
        fl_xml_elems(&b, "UploadId", u[i].upload_id);
        fl_buf_adds(&b, XML_INITIATOR_OWNER);
        fl_xml_elems(&b, "Initiated", t);
        fl_buf_adds(&b, "</Upload>");
    }
    fl_buf_adds(&b, "</ListMultipartUploadsResult>");
    send_xml(r, 200, &b);
    fl_upload_infos_free(u, n);
}

/* ------------------------------------------------------------------ */
/* objects                                                             */

static bool write_conditions(s3req_t *r, fl_put_cond_t *cond, char *ifm, size_t ifm_cap)
{
    char inm[64];
    memset(cond, 0, sizeof *cond);
    if (hget(r, "if-none-match", inm, sizeof inm)) {
        if (strcmp(inm, "*") != 0) {
            s3_error(r, 501, "NotImplemented", "If-None-Match on writes accepts only '*'.");
            return false;
        }
        cond->if_none_match_star = true;
    }
    fl_slice_t m = fl_http_header_val(r->req, "if-match");
    if (m.ptr) {
        if (fl_slice_eq(m, "*")) fl_strlcpy(ifm, "*", ifm_cap);
        else unquote_etag(m.ptr, m.len, ifm);
        cond->if_match = ifm;
    }
    return true;
}

static void add_checksum_header(fl_buf_t *hdrs, const intake_t *in)
{
    if (in->ck_alg != FL_CK_NONE)
        fl_buf_printf(hdrs, "%s: %s\n", fl_cksum_header(in->ck_alg), in->ck_b64);
    if (in->want_crc64) fl_buf_printf(hdrs, CRC64_HDR ": %llu\n", (unsigned long long)in->crc64);
}

static void echo_checksum(s3req_t *r, const intake_t *in)
{
    if (in->ck_alg != FL_CK_NONE) fl_http_resp_header(r->c, fl_cksum_header(in->ck_alg), in->ck_b64);
    if (in->want_crc64) fl_http_resp_headerf(r->c, CRC64_HDR, "%llu", (unsigned long long)in->crc64);
}

/* Whether a PutObject or UploadPart body may stream to a remote store as it
 * arrives (fl_blob_w_open_stream) instead of being spooled: a plain body of
 * known length (neither aws-chunked nor HTTP-chunked), within max. The store's
 * writer holds back the last byte until the body has been verified (payload
 * hash, Content-MD5, x-amz-checksum-*), so a body that fails leaves nothing.
 * For an object (hdrs non-NULL) its stored headers must be known before the
 * body: OSS's computed CRC-64 and a checksum computed from a bare
 * x-amz-sdk-checksum-algorithm are not, so those spool; a client's
 * x-amz-checksum-* value is added to hdrs (it is what the verified body has). */
static bool can_stream(s3req_t *r, int64_t max, fl_buf_t *hdrs)
{
    if (!fl_store_is_remote(r->cfg->store) || OSS(r) || r->req->chunked || r->req->content_length < 1 ||
        r->req->content_length > max)
        return false;
    if (r->signed_req && r->auth.payload_mode >= FL_PAYLOAD_STREAMING_SIGNED) return false;
    char sha[80];
    if (hget(r, "x-amz-content-sha256", sha, sizeof sha) && !strncmp(sha, "STREAMING-", 10)) return false;
    if (hhas(r, "x-amz-trailer") || hhas(r, "x-amz-decoded-content-length")) return false;
    if (!hdrs) return true;
    const fl_http_header_t *ck = NULL;
    for (size_t i = 0; i < r->req->nheaders; i++) {
        const fl_http_header_t *h = &r->req->headers[i];
        if (fl_cksum_alg_from_header(h->name, h->name_len) == FL_CK_NONE) continue;
        if (ck || h->value_len >= 64) return false; /* intake_checksums refuses it */
        ck = h;
    }
    if (!ck && hhas(r, "x-amz-sdk-checksum-algorithm")) return false;
    if (ck)
        fl_buf_printf(hdrs, "%s: %.*s\n", fl_cksum_header(fl_cksum_alg_from_header(ck->name, ck->name_len)),
                      (int)ck->value_len, ck->value);
    return true;
}

static void op_put_object(s3req_t *r)
{
    fl_http_set_op(r->c, "PutObject");
    fl_buf_t hdrs;
    fl_buf_init(&hdrs, 64 * 1024);
    intake_t in = { .max = FL_S3_MAX_PUT_BYTES };
    fl_put_cond_t cond;
    char ifm[48];
    if (!collect_headers(r, &hdrs)) {
        s3_error(r, 400, "MetadataTooLarge", NULL);
        goto out;
    }
    if (!write_conditions(r, &cond, ifm, sizeof ifm)) goto out;
    bool stream = can_stream(r, in.max, &hdrs);
    fl_err_t e = stream ? fl_blob_w_open_stream(r->cfg->store, r->bucket, r->key, r->keylen, r->req->content_length,
                                                hdrs.ptr, &cond, NULL, 0, &in.w)
                        : fl_blob_w_open(r->cfg->store, &in.w);
    if (e) {
        s3_error_from(r, e);
        goto out;
    }
    if (!intake_body(r, &in)) goto out;
    if (!stream) add_checksum_header(&hdrs, &in); /* streamed: the client's, sent at open */
    fl_obj_meta_t meta = { .size = in.size, .headers = hdrs.ptr };
    memcpy(meta.etag, in.etag, sizeof meta.etag);
    e = fl_store_put(r->cfg->store, in.w, r->bucket, r->key, r->keylen, &meta, &cond);
    in.w = NULL;
    if (e) {
        s3_error_from(r, e);
        goto out;
    }
    fl_http_resp_headerf(r->c, "ETag", "\"%s\"", in.etag);
    echo_checksum(r, &in);
    send_empty(r, 200);
out:
    fl_blob_w_abort(in.w);
    fl_buf_free(&hdrs);
}

/* Parses a single "bytes=" range against size. Returns 1 with [*start, *end]
 * inclusive, 0 if there is no (usable) range, -1 if unsatisfiable. */
static int parse_range(fl_slice_t h, int64_t size, int64_t *start, int64_t *end)
{
    if (!h.ptr) return 0;
    h = fl_slice_trim(h);
    if (h.len < 7 || strncasecmp(h.ptr, "bytes=", 6) != 0) return 0;
    char tmp[64];
    if (h.len - 6 >= sizeof tmp) return 0;
    memcpy(tmp, h.ptr + 6, h.len - 6);
    tmp[h.len - 6] = 0;
    if (strchr(tmp, ',')) return 0; /* multiple ranges: serve the whole object */
    char *dash = strchr(tmp, '-');
    if (!dash) return 0;
    *dash = 0;
    const char *a = tmp, *b = dash + 1;
    for (const char *p = a; *p; p++) if (!isdigit((unsigned char)*p)) return 0;
    for (const char *p = b; *p; p++) if (!isdigit((unsigned char)*p)) return 0;
    if (!*a && !*b) return 0;
    if (strlen(a) > 18 || strlen(b) > 18) return 0;
    if (!*a) { /* suffix */
        int64_t n = atoll(b);
        if (n == 0) return -1;
        if (size == 0) return -1;
        *start = n >= size ? 0 : size - n;
        *end = size - 1;
        return 1;
    }
    int64_t s = atoll(a);
    int64_t e = *b ? atoll(b) : size - 1;
    if (*b && e < s) return 0;
    if (s >= size) return -1;
    if (e >= size) e = size - 1;
    *start = s;
    *end = e;
    return 1;
}

/* Read-side conditional checks (RFC 7232 order as S3). Returns 0 to go on,
 * or the status sent (304/412). */
static int read_conditions(s3req_t *r, const fl_obj_meta_t *m)
{
    fl_slice_t inm = fl_http_header_val(r->req, "if-none-match");
    fl_slice_t im = fl_http_header_val(r->req, "if-match");
    fl_slice_t ims = fl_http_header_val(r->req, "if-modified-since");
    fl_slice_t ius = fl_http_header_val(r->req, "if-unmodified-since");
    int64_t mt = m->mtime_ms / 1000;
    int status = 0;
    if (im.ptr && !etag_list_matches(im, m->etag)) status = 412;
    else if (!im.ptr && ius.ptr) {
        int64_t t = fl_time_parse_http(ius.ptr, ius.len);
        if (t >= 0 && mt > t) status = 412;
    }
    if (!status) {
        if (inm.ptr && etag_list_matches(inm, m->etag)) status = 304;
        else if (!inm.ptr && ims.ptr) {
            int64_t t = fl_time_parse_http(ims.ptr, ims.len);
            if (t >= 0 && mt <= t) status = 304;
        }
    }
    if (status == 304) {
        char lm[40];
        fl_time_rfc1123(m->mtime_ms, lm, sizeof lm);
        fl_http_resp_headerf(r->c, "ETag", "\"%s\"", m->etag);
        fl_http_resp_header(r->c, "Last-Modified", lm);
        s3_error(r, 304, "NotModified", NULL);
    } else if (status == 412) {
        s3_error(r, 412, "PreconditionFailed", NULL);
    }
    return status;
}

/* Sends [off, off+n) of segment i of a remote object (no file to sendfile):
 * ranged reads of FL_STORE_READ_CHUNK bytes, each written before the next. */
static bool stream_seg(s3req_t *r, const fl_obj_t *o, size_t i, int64_t off, int64_t n)
{
    size_t cap = (size_t)(n < FL_STORE_READ_CHUNK ? n : FL_STORE_READ_CHUNK);
    char *buf = fl_malloc(cap ? cap : 1);
    bool ok = true;
    while (n > 0 && ok) {
        ssize_t k = fl_obj_seg_read(o, i, buf, (size_t)(n < (int64_t)cap ? n : (int64_t)cap), off);
        ok = k > 0 && fl_http_resp_write(r->c, buf, (size_t)k) == FL_OK;
        off += k;
        n -= k;
    }
    free(buf);
    return ok;
}

static void op_get_object(s3req_t *r)
{
    fl_http_set_op(r->c, r->head ? "HeadObject" : "GetObject");
    fl_obj_t *o = NULL;
    fl_err_t e;
    if (r->head) {
        o = fl_calloc(1, sizeof *o);
        e = fl_store_head(r->cfg->store, r->bucket, r->key, r->keylen, &o->meta);
        if (e) {
            free(o);
            o = NULL;
        }
    } else {
        e = fl_store_get(r->cfg->store, r->bucket, r->key, r->keylen, &o);
    }
    if (e) return s3_error_from(r, e);
    fl_obj_meta_t *m = &o->meta;
    if (read_conditions(r, m)) goto out;

    int64_t size = m->size, start = 0, end = size - 1;
    int ranged = 0;
    const char *pn = qget(r, "partNumber");
    if (pn) {
        int part = atoi(pn);
        if (part < 1 || part > FL_S3_MAX_PARTS) {
            s3_error(r, 400, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive");
            goto out;
        }
        if (m->parts == 0) {
            if (part != 1) { s3_error(r, 416, "InvalidPartNumber", "The requested partnumber is not satisfiable"); goto out; }
        } else {
            if (part > m->parts) { s3_error(r, 416, "InvalidPartNumber", "The requested partnumber is not satisfiable"); goto out; }
            /* part sizes are known only with the segments (GET) */
            if (!o->part_sizes && r->head && !fl_store_is_remote(r->cfg->store)) {
                fl_obj_t *full = NULL;
                if (fl_store_get(r->cfg->store, r->bucket, r->key, r->keylen, &full) == FL_OK) {
                    fl_obj_close(o);
                    o = full;
                    m = &o->meta;
                }
            }
            int64_t off = 0, plen = 0;
            if (o->part_sizes) {
                for (int i = 0; i < part - 1; i++) off += o->part_sizes[i];
                plen = o->part_sizes[part - 1];
            } else if ((e = fl_store_part_range(r->cfg->store, r->bucket, r->key, r->keylen, part, &off, &plen))) {
                s3_error_from(r, e == FL_ERR_INVALID ? FL_ERR_IO : e);
                goto out;
            }
            start = off;
            end = off + plen - 1;
            ranged = 1;
            fl_http_resp_headerf(r->c, "x-amz-mp-parts-count", "%d", m->parts);
        }
    } else {
        ranged = parse_range(fl_http_header_val(r->req, "range"), size, &start, &end);
        if (ranged < 0) {
            fl_http_resp_headerf(r->c, "Content-Range", "bytes */%lld", (long long)size);
            s3_error(r, 416, "InvalidRange", NULL);
            goto out;
        }
    }
    char lm[40];
    fl_time_rfc1123(m->mtime_ms, lm, sizeof lm);
    fl_http_resp_headerf(r->c, "ETag", "\"%s\"", m->etag);
    fl_http_resp_header(r->c, "Last-Modified", lm);
    fl_http_resp_header(r->c, "Accept-Ranges", "bytes");
    if (!headers_have(m->headers, "content-type") && !qget(r, "response-content-type"))
        fl_http_resp_header(r->c, "Content-Type", "binary/octet-stream");
    emit_headers(r, m->headers, !ranged);
    static const char *const overrides[] = { "content-type", "content-language", "expires",
                                             "cache-control", "content-disposition", "content-encoding", NULL };
    for (int i = 0; overrides[i]; i++) {
        char qn[64];
        snprintf(qn, sizeof qn, "response-%s", overrides[i]);
        const char *v = qget(r, qn);
        if (v && !strpbrk(v, "\r\n")) fl_http_resp_header(r->c, overrides[i], v);
    }
    int64_t len = size ? end - start + 1 : 0;
    if (ranged) {
        fl_http_resp_headerf(r->c, "Content-Range", "bytes %lld-%lld/%lld", (long long)start,
                             (long long)end, (long long)size);
        fl_http_resp_status(r->c, 206);
    } else {
        fl_http_resp_status(r->c, 200);
    }
    r->responded = true;
    if (fl_http_resp_begin(r->c, len) != FL_OK || r->head) goto out;
    /* stream the segments that overlap [start, start+len) */
    int64_t pos = 0, want = start, left = len;
    for (size_t i = 0; i < o->nsegs && left > 0; i++) {
        int64_t seg = o->segs[i].len;
        if (want < pos + seg) {
            int64_t off = want - pos;
            int64_t n = seg - off < left ? seg - off : left;
            if (o->segs[i].fd >= 0 ? fl_http_resp_sendfile(r->c, o->segs[i].fd, off, n) != FL_OK
                                   : !stream_seg(r, o, i, off, n)) {
                fl_http_close_after(r->c);
                goto out;
            }
            want += n;
            left -= n;
        }
        pos += seg;
    }
    if (left > 0) fl_http_close_after(r->c); /* store shorter than its index row: cut the response */
out:
    fl_obj_close(o);
}

static void op_delete_object(s3req_t *r)
{
    fl_http_set_op(r->c, "DeleteObject");
    fl_put_cond_t cond = { 0 };
    char ifm[48];
    fl_slice_t m = fl_http_header_val(r->req, "if-match");
    if (m.ptr) {
        unquote_etag(m.ptr, m.len, ifm);
        cond.if_match = ifm;
    }
    fl_err_t e = fl_store_delete(r->cfg->store, r->bucket, r->key, r->keylen, &cond);
    if (e) return s3_error_from(r, e);
    send_empty(r, 204);
}

/* Parses x-amz-copy-source into bucket and key (decoded). */
static bool parse_copy_source(s3req_t *r, char **sb, char **sk, size_t *sklen)
{
    fl_slice_t v = fl_http_header_val(r->req, xname(r, "x-amz-copy-source"));
    fl_buf_t d;
    fl_buf_init(&d, FL_HTTP_MAX_TARGET_BYTES);
    const char *q = memchr(v.ptr, '?', v.len);
    if (q) v.len = (size_t)(q - v.ptr); /* ?versionId=: floe keeps one version */
    if (fl_uri_decode(v, false, &d) || !d.ptr || memchr(d.ptr, 0, d.len)) goto bad;
    char *p = d.ptr;
    if (*p == '/') p++;
    char *slash = strchr(p, '/');
    if (!slash || slash == p || !slash[1]) goto bad;
    *sb = fl_strndup(p, (size_t)(slash - p));
    *sklen = d.len - (size_t)(slash + 1 - d.ptr);
    *sk = fl_strndup(slash + 1, *sklen);
    fl_buf_free(&d);
    return true;
bad:
    fl_buf_free(&d);
    s3_error(r, 400, "InvalidArgument", "Copy Source must mention the source bucket and key: sourcebucket/sourcekey");
    return false;
}

/* Copy-source conditionals; 412 on failure. */
static bool copy_conditions(s3req_t *r, const fl_obj_meta_t *m)
{
    fl_slice_t im = fl_http_header_val(r->req, xname(r, "x-amz-copy-source-if-match"));
    fl_slice_t inm = fl_http_header_val(r->req, xname(r, "x-amz-copy-source-if-none-match"));
    fl_slice_t ums = fl_http_header_val(r->req, xname(r, "x-amz-copy-source-if-unmodified-since"));
    fl_slice_t ms = fl_http_header_val(r->req, xname(r, "x-amz-copy-source-if-modified-since"));
    int64_t mt = m->mtime_ms / 1000;
    bool fail = false;
    if (im.ptr && !etag_list_matches(im, m->etag)) fail = true;
    if (inm.ptr && etag_list_matches(inm, m->etag)) fail = true;
    if (!im.ptr && ums.ptr) {
        int64_t t = fl_time_parse_http(ums.ptr, ums.len);
        if (t >= 0 && mt > t) fail = true;
    }
    if (!inm.ptr && ms.ptr) {
        int64_t t = fl_time_parse_http(ms.ptr, ms.len);
        if (t >= 0 && mt <= t) fail = true;
    }
    if (fail) s3_error(r, 412, "PreconditionFailed", NULL);
    return !fail;
}

/* Copies [start, start+len) of o into w; with md5 set, the bytes are read and
 * hashed on the way, else copied in the kernel. */
static fl_err_t copy_range(fl_blob_w_t *w, const fl_obj_t *o, int64_t start, int64_t len, fl_cksum_t *md5,
                           uint64_t *crc64)
{
    int64_t pos = 0;
    char *buf = md5 ? fl_malloc(IO_BUF) : NULL;
    fl_err_t e = FL_OK;
    for (size_t i = 0; i < o->nsegs && len > 0 && !e; i++) {
        int64_t seg = o->segs[i].len;
        if (start < pos + seg) {
            int64_t off = start - pos, n = seg - off < len ? seg - off : len;
            if (!md5) {
                e = fl_blob_w_copy_seg(w, o, i, off, n);
            } else {
                int64_t done = 0;
                while (done < n && !e) {
                    size_t want = (size_t)(n - done < IO_BUF ? n - done : IO_BUF);
                    ssize_t got = fl_obj_seg_read(o, i, buf, want, off + done);
                    if (got <= 0) { e = FL_ERR_IO; break; }
                    fl_cksum_update(md5, buf, (size_t)got);
                    if (crc64) *crc64 = fl_crc64ecma(*crc64, buf, (size_t)got);
                    e = fl_blob_w_write(w, buf, (size_t)got);
                    done += got;
                }
            }
            start += n;
            len -= n;
        }
        pos += seg;
    }
    free(buf);
    if (!e && len > 0) e = FL_ERR_IO;
    return e;
}

static void op_copy_object(s3req_t *r)
{
    fl_http_set_op(r->c, "CopyObject");
    char *sb = NULL, *sk = NULL;
    size_t sklen = 0;
    fl_obj_t *src = NULL;
    fl_blob_w_t *w = NULL;
    fl_buf_t hdrs;
    fl_buf_init(&hdrs, 64 * 1024);
    fl_cksum_t md5;
    fl_cksum_init(&md5, FL_CK_NONE);
    if (!parse_copy_source(r, &sb, &sk, &sklen) || !may(r, "GetObject", false, sb, sk, sklen)) goto out;
    fl_err_t e = fl_store_get(r->cfg->store, sb, sk, sklen, &src);
    if (e) {
        s3_error_from(r, e);
        goto out;
    }
    if (!copy_conditions(r, &src->meta)) goto out;
    fl_put_cond_t cond;
    char ifm[48];
    if (!write_conditions(r, &cond, ifm, sizeof ifm)) goto out;
    char directive[16] = "COPY";
    hget(r, xname(r, "x-amz-metadata-directive"), directive, sizeof directive);
    if (strcasecmp(directive, "REPLACE") == 0) {
        if (!collect_headers(r, &hdrs)) {
            s3_error(r, 400, "MetadataTooLarge", NULL);
            goto out;
        }
    } else if (strcasecmp(directive, "COPY") == 0) {
        if (!strcmp(sb, r->bucket) && sklen == r->keylen && !memcmp(sk, r->key, sklen)) {
            s3_error(r, 400, "InvalidRequest", "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.");
            goto out;
        }
        /* keep content headers and metadata; a multipart source's checksum does not carry over */
        const char *p = src->meta.headers;
        while (p && *p) {
            const char *nl = strchr(p, '\n');
            size_t l = nl ? (size_t)(nl - p + 1) : strlen(p);
            if (strncmp(p, "x-amz-checksum-", 15) != 0 || src->meta.parts == 0) fl_buf_add(&hdrs, p, l);
            p += l;
        }
    } else {
        s3_error(r, 400, "InvalidArgument", "Unknown metadata directive.");
        goto out;
    }
    e = fl_blob_w_open(r->cfg->store, &w);
    bool rehash = src->meta.parts > 0;
    if (rehash) fl_cksum_init(&md5, FL_CK_MD5);
    if (!e) e = copy_range(w, src, 0, src->meta.size, rehash ? &md5 : NULL, NULL);
    if (e) {
        s3_error_from(r, e);
        goto out;
    }
    fl_obj_meta_t meta = { .size = src->meta.size, .headers = hdrs.ptr };
    if (rehash) {
        unsigned char d[FL_CK_MAX_DIGEST];
        fl_cksum_final(&md5, d);
        fl_hex(d, 16, meta.etag);
    } else {
        memcpy(meta.etag, src->meta.etag, sizeof meta.etag);
    }
    e = fl_store_put(r->cfg->store, w, r->bucket, r->key, r->keylen, &meta, &cond);
    w = NULL;
    if (e) {
        s3_error_from(r, e);
        goto out;
    }
    send_copy_result(r, "CopyObjectResult", meta.etag);
out:
    fl_cksum_free(&md5);
    fl_blob_w_abort(w);
    fl_obj_close(src);
    fl_buf_free(&hdrs);
    free(sb);
    free(sk);
}

/* ---- multipart ---- */

static void op_create_upload(s3req_t *r)
{
    fl_http_set_op(r->c, "CreateMultipartUpload");
    fl_buf_t hdrs;
    fl_buf_init(&hdrs, 64 * 1024);
    if (!collect_headers(r, &hdrs)) {
        fl_buf_free(&hdrs);
        return s3_error(r, 400, "MetadataTooLarge", NULL);
    }
    char id[FL_STORE_UPLOAD_ID_MAX + 1];
    fl_err_t e = fl_store_mpu_create(r->cfg->store, r->bucket, r->key, r->keylen, hdrs.ptr ? hdrs.ptr : "", id);
    fl_buf_free(&hdrs);
    if (e) return s3_error_from(r, e);
    fl_buf_t b;
    fl_buf_init(&b, 0);
    xml_open(r, &b, "InitiateMultipartUploadResult", false);
    fl_xml_elems(&b, "Bucket", r->bucket);
    fl_xml_elem(&b, "Key", r->key, r->keylen);
    fl_xml_elems(&b, "UploadId", id);
    fl_buf_adds(&b, "</InitiateMultipartUploadResult>");
    char alg[32];
    if (hget(r, "x-amz-checksum-algorithm", alg, sizeof alg))
        fl_http_resp_header(r->c, "x-amz-checksum-algorithm", alg);
    send_xml(r, 200, &b);
}

static bool part_number(s3req_t *r, int *out)
{
    const char *v = qget(r, "partNumber");
    char *end;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || n < 1 || n > FL_S3_MAX_PARTS) {
        s3_error(r, 400, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive");
        return false;
    }
    *out = (int)n;
    return true;
}

static void op_upload_part(s3req_t *r)
{
    fl_http_set_op(r->c, "UploadPart");
    int num;
    intake_t in = { .max = FL_S3_MAX_PUT_BYTES };
    fl_buf_t hdrs;
    fl_buf_init(&hdrs, 4096);
    if (!part_number(r, &num)) goto out;
    /* reject early if the upload is gone, before reading a large body */
    fl_part_info_t *pi = NULL;
    size_t np = 0;
    bool tr;
    fl_err_t e = fl_store_mpu_parts(r->cfg->store, r->bucket, r->key, r->keylen, qget(r, "uploadId"),
                                    FL_S3_MAX_PARTS, 0, &pi, &np, &tr, NULL);
    fl_part_infos_free(pi, np);
    if (e) {
        s3_error_from(r, e);
        goto out;
    }
    e = can_stream(r, in.max, NULL)
            ? fl_blob_w_open_stream(r->cfg->store, r->bucket, r->key, r->keylen, r->req->content_length, NULL, NULL,
                                    qget(r, "uploadId"), num, &in.w)
            : fl_blob_w_open(r->cfg->store, &in.w);
    if (e) {
        s3_error_from(r, e);
        goto out;
    }
    if (!intake_body(r, &in)) goto out;
    add_checksum_header(&hdrs, &in);
    e = fl_store_mpu_put_part(r->cfg->store, r->bucket, r->key, r->keylen, qget(r, "uploadId"), num,
                              in.w, in.etag, hdrs.ptr ? hdrs.ptr : "");
    in.w = NULL;
    if (e) {
        s3_error_from(r, e);
        goto out;
    }
    fl_http_resp_headerf(r->c, "ETag", "\"%s\"", in.etag);
    echo_checksum(r, &in);
    send_empty(r, 200);
out:
    fl_blob_w_abort(in.w);
    fl_buf_free(&hdrs);
}

static void op_upload_part_copy(s3req_t *r)
{
    fl_http_set_op(r->c, "UploadPartCopy");
    int num;
    char *sb = NULL, *sk = NULL;
    size_t sklen;
    fl_obj_t *src = NULL;
    fl_blob_w_t *w = NULL;
    fl_cksum_t md5;
    fl_cksum_init(&md5, FL_CK_NONE);
    if (!part_number(r, &num) || !parse_copy_source(r, &sb, &sk, &sklen) ||
        !may(r, "GetObject", false, sb, sk, sklen))
        goto out;
    fl_err_t e = fl_store_get(r->cfg->store, sb, sk, sklen, &src);
    if (e) {
        s3_error_from(r, e);
        goto out;
    }
    if (!copy_conditions(r, &src->meta)) goto out;
    int64_t start = 0, end = src->meta.size - 1;
    fl_slice_t rg = fl_http_header_val(r->req, xname(r, "x-amz-copy-source-range"));
    if (rg.ptr) {
        int rc = parse_range(rg, src->meta.size, &start, &end);
        /* only bytes=first-last, inside the source */
        const char *dash = memchr(rg.ptr, '-', rg.len);
        bool both = dash && dash > rg.ptr + 6 && (size_t)(dash - rg.ptr) + 1 < rg.len &&
                    isdigit((unsigned char)dash[1]);
        if (rc == 1 && !both) rc = 0;
        if (rc == 1 && atoll(dash + 1) >= src->meta.size) rc = -1;
        if (rc < 0) {
            s3_error(r, 416, "InvalidRange", NULL);
            goto out;
        }
        if (rc != 1) {
            s3_error(r, 400, "InvalidArgument", "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy");
            goto out;
        }
    }
    e = fl_blob_w_open(r->cfg->store, &w);
    fl_cksum_init(&md5, FL_CK_MD5);
    uint64_t crc = 0; /* OSS: the part's CRC-64, so that Complete can combine it */
    if (!e) e = copy_range(w, src, start, src->meta.size ? end - start + 1 : 0, &md5, OSS(r) ? &crc : NULL);
    if (e) {
        s3_error_from(r, e);
        goto out;
    }
    unsigned char d[FL_CK_MAX_DIGEST];
    char etag[48];
    fl_cksum_final(&md5, d);
    fl_hex(d, 16, etag);
    char hdrs[64] = "";
    if (OSS(r)) snprintf(hdrs, sizeof hdrs, CRC64_HDR ": %llu\n", (unsigned long long)crc);
    e = fl_store_mpu_put_part(r->cfg->store, r->bucket, r->key, r->keylen, qget(r, "uploadId"), num, w, etag, hdrs);
    w = NULL;
    if (e) {
        s3_error_from(r, e);
        goto out;
    }
    if (OSS(r)) fl_http_resp_headerf(r->c, CRC64_HDR, "%llu", (unsigned long long)crc);
    send_copy_result(r, "CopyPartResult", etag);
out:
    fl_cksum_free(&md5);
    fl_blob_w_abort(w);
    fl_obj_close(src);
    free(sb);
    free(sk);
}

/* OSS: the completed object's headers, the upload's plus the CRC-64 of the
 * whole object combined from the listed parts' CRCs (NULL: the upload's as
 * they are, when a part has no CRC or the listing fails). malloc'd. */
static char *oss_complete_headers(s3req_t *r, const fl_part_ref_t *refs, size_t n)
{
    fl_part_info_t *p = NULL;
    size_t np = 0;
    bool tr = false;
    char *uh = NULL, *out = NULL;
    uint64_t crc = 0;
    if (fl_store_mpu_parts(r->cfg->store, r->bucket, r->key, r->keylen, qget(r, "uploadId"), 0,
                           FL_S3_MAX_PARTS, &p, &np, &tr, &uh) != FL_OK)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const fl_part_info_t *pi = NULL;
        for (size_t k = 0; k < np && !pi; k++)
            if (p[k].number == refs[i].number) pi = &p[k];
        const char *c = pi && pi->headers ? strstr(pi->headers, CRC64_HDR ": ") : NULL;
        if (!c) goto out;
        uint64_t pc = strtoull(c + sizeof CRC64_HDR + 1, NULL, 10);
        crc = i ? fl_crc64ecma_combine(crc, pc, (uint64_t)pi->size) : pc;
    }
    fl_buf_t b;
    fl_buf_init(&b, 0);
    fl_buf_printf(&b, "%s" CRC64_HDR ": %llu\n", uh ? uh : "", (unsigned long long)crc);
    out = fl_buf_steal(&b);
out:
    fl_part_infos_free(p, np);
    free(uh);
    return out;
}

static void op_complete_upload(s3req_t *r)
{
    fl_http_set_op(r->c, "CompleteMultipartUpload");
    fl_part_ref_t *refs = NULL;
    char (*etags)[48] = NULL;
    fl_xml_node_t *doc = read_xml_body(r, "CompleteMultipartUpload");
    if (!doc) return;
    size_t n = 0;
    for (fl_xml_node_t *p = doc->child; p; p = p->next)
        if (strcmp(p->name, "Part") == 0) n++;
    if (n == 0 || n > FL_S3_MAX_PARTS) {
        s3_error(r, 400, "MalformedXML", NULL);
        goto out;
    }
    refs = fl_calloc(n, sizeof *refs);
    etags = fl_calloc(n, sizeof *etags);
    size_t i = 0;
    for (fl_xml_node_t *p = doc->child; p; p = p->next) {
        if (strcmp(p->name, "Part") != 0) continue;
        const char *num = fl_xml_child_text(p, "PartNumber"), *et = fl_xml_child_text(p, "ETag");
        char *end;
        long v = num ? strtol(num, &end, 10) : 0;
        if (!num || !et || *end || v < 1 || v > FL_S3_MAX_PARTS) {
            s3_error(r, 400, !num || !et ? "MalformedXML" : "InvalidArgument", NULL);
            goto out;
        }
        unquote_etag(et, strlen(et), etags[i]);
        refs[i].number = (int)v;
        refs[i].etag = etags[i];
        i++;
    }
    fl_put_cond_t cond;
    char ifm[48];
    if (!write_conditions(r, &cond, ifm, sizeof ifm)) goto out;
    fl_obj_meta_t meta = { 0 };
    char *final_hdrs = OSS(r) ? oss_complete_headers(r, refs, n) : NULL;
    fl_err_t e = fl_store_mpu_complete(r->cfg->store, r->bucket, r->key, r->keylen, qget(r, "uploadId"),
                                       refs, n, FL_S3_MIN_PART_BYTES, final_hdrs, &cond, &meta);
    if (!e && final_hdrs) {
        const char *c = strstr(final_hdrs, CRC64_HDR ": ");
        if (c) {
            char v[32];
            size_t l = strcspn(c + sizeof CRC64_HDR + 1, "\n");
            if (l < sizeof v) {
                memcpy(v, c + sizeof CRC64_HDR + 1, l);
                v[l] = 0;
                fl_http_resp_header(r->c, CRC64_HDR, v);
            }
        }
    }
    free(final_hdrs);
    if (e) {
        s3_error_from(r, e);
        goto out;
    }
    fl_buf_t b;
    fl_buf_init(&b, 0);
    xml_open(r, &b, "CompleteMultipartUploadResult", false);
    fl_buf_adds(&b, "<Location>");
    fl_xml_escape(&b, r->req->path, r->req->path_len);
    fl_buf_adds(&b, "</Location>");
    fl_xml_elems(&b, "Bucket", r->bucket);
    fl_xml_elem(&b, "Key", r->key, r->keylen);
    fl_buf_printf(&b, "<ETag>&quot;%s&quot;</ETag></CompleteMultipartUploadResult>", meta.etag);
    fl_obj_meta_free(&meta);
    send_xml(r, 200, &b);
out:
    free(refs);
    free(etags);
    fl_xml_free(doc);
}

static void op_abort_upload(s3req_t *r)
{
    fl_http_set_op(r->c, "AbortMultipartUpload");
    fl_err_t e = fl_store_mpu_abort(r->cfg->store, r->bucket, r->key, r->keylen, qget(r, "uploadId"));
    if (e) return s3_error_from(r, e);
    send_empty(r, 204);
}

static void op_list_parts(s3req_t *r)
{
    fl_http_set_op(r->c, "ListParts");
    int max, marker;
    if (!parse_int_param(r, "max-parts", 1000, 0, 1000, &max)) return;
    if (!parse_int_param(r, "part-number-marker", 0, 0, FL_S3_MAX_PARTS, &marker)) return;
    fl_part_info_t *p = NULL;
    size_t n = 0;
    bool trunc = false;
    fl_err_t e = fl_store_mpu_parts(r->cfg->store, r->bucket, r->key, r->keylen, qget(r, "uploadId"),
                                    marker, max, &p, &n, &trunc, NULL);
    if (e) return s3_error_from(r, e);
    fl_buf_t b;
    fl_buf_init(&b, 0);
    xml_open(r, &b, "ListPartsResult", false);
    fl_xml_elems(&b, "Bucket", r->bucket);
    fl_xml_elem(&b, "Key", r->key, r->keylen);
    fl_xml_elems(&b, "UploadId", qget(r, "uploadId"));
    fl_xml_elemf(&b, "PartNumberMarker", "%d", marker);
    if (n) fl_xml_elemf(&b, "NextPartNumberMarker", "%d", p[n - 1].number);
    fl_xml_elemf(&b, "MaxParts", "%d", max);
    fl_xml_elems(&b, "IsTruncated", trunc ? "true" : "false");
    fl_buf_adds(&b, XML_INITIATOR_OWNER);
    for (size_t i = 0; i < n; i++) {
        char t[32];
        xml_time(r, p[i].mtime_ms, t, sizeof t);
        fl_buf_adds(&b, "<Part>");
        fl_xml_elemf(&b, "PartNumber", "%d", p[i].number);
        fl_xml_elems(&b, "LastModified", t);
        fl_buf_printf(&b, "<ETag>&quot;%s&quot;</ETag>", p[i].etag);
        fl_xml_elemf(&b, "Size", "%lld", (long long)p[i].size);
        /* part checksums, as S3 lists them */
        for (const char *h = p[i].headers; h && *h;) {
            const char *nl = strchr(h, '\n');
            size_t l = nl ? (size_t)(nl - h) : strlen(h);
            const char *colon = memchr(h, ':', l);
            fl_cksum_alg_t a = colon ? fl_cksum_alg_from_header(h, (size_t)(colon - h)) : FL_CK_NONE;
            if (a != FL_CK_NONE) {
                char tag[32];
                const char *v = colon + 1;
                while (*v == ' ') v++;
                const char *nm = fl_cksum_name(a);
                snprintf(tag, sizeof tag, "Checksum%s", nm);
                fl_xml_elem(&b, tag, v, (size_t)(h + l - v));
            }
            h = nl ? nl + 1 : NULL;
        }
        fl_buf_adds(&b, "</Part>");
    }
    fl_buf_adds(&b, "</ListPartsResult>");
    send_xml(r, 200, &b);
    fl_part_infos_free(p, n);
}

/* ------------------------------------------------------------------ */
/* routing and authentication                                          */

static bool authenticate(s3req_t *r)
{
    fl_sigv4_req_t sr = {
        .method = r->req->method,
        .raw_path = r->req->path, .raw_path_len = r->req->path_len,
        .raw_query = r->req->query, .raw_query_len = r->req->query_len,
        .headers = r->req->headers, .nheaders = r->req->nheaders,
    };
    if (!fl_sigv4_present(&sr)) {
        if (r->cfg->insecure_no_auth) return true;
        s3_error(r, 403, "AccessDenied", "Anonymous access is not allowed; sign the request with AWS Signature Version 4.");
        return false;
    }
    static const char *const services[] = { "s3", NULL };
    static const char *const products[] = { "oss", NULL };
    fl_sigv4_cfg_t cfg = { .lookup = r->cfg->lookup, .lookup_ud = r->cfg->lookup_ud,
                           .services = services, .region = r->cfg->region,
                           .now = fl_now_ms() / 1000, .oss_products = products };
    fl_sigv4_error_t err = { 0 };
    fl_buf_t res;
    fl_buf_init(&res, FL_HTTP_MAX_TARGET_BYTES + 512);
    if (r->vhost && OSS(r)) { /* OSS signs "/{bucket}/{key}" whatever the path */
        fl_buf_printf(&res, "/%s/", r->bucket);
        if (r->key) fl_buf_add(&res, r->key, r->keylen);
        cfg.oss_resource = res.ptr;
        cfg.oss_resource_len = res.len;
    }
    fl_err_t ve = fl_sigv4_verify(&sr, &cfg, NULL, &r->auth, &err);
    fl_buf_free(&res);
    if (ve != FL_OK) {
        s3_error_detail(r, err.status ? err.status : 403, err.code ? err.code : "AccessDenied",
                        err.message[0] ? err.message : NULL, err.detail_name, err.detail_value);
        return false;
    }
    r->signed_req = true;
    if (r->cfg->iam) {
        /* the session token: a header, or in a presigned URL (AWS's and OSS's names) */
        char *token = fl_iam_request_token(r->req, &r->q);
        char msg[128];
        fl_err_t e = fl_iam_identify(r->cfg->iam, r->auth.akid, token, &r->who, msg);
        bool had_token = token && *token;
        free(token);
        if (e != FL_OK) {
            fl_iam_who_free(&r->who);
            if (strstr(msg, "expired")) s3_error(r, 400, "ExpiredToken", "The provided token has expired.");
            else if (had_token) s3_error(r, 400, "InvalidToken", "The provided token is malformed or otherwise invalid.");
            else s3_error(r, 403, "InvalidAccessKeyId", msg);
            return false;
        }
        r->have_who = true;
    }
    return true;
}

static void route(s3req_t *r)
{
    const char *m = r->req->method;
    bool GET = !strcmp(m, "GET"), PUT = !strcmp(m, "PUT"), POST = !strcmp(m, "POST");
    bool DEL = !strcmp(m, "DELETE"), HEAD = r->head;
    if (!r->bucket) {
        if (GET) return run(r, "ListAllMyBuckets", false, op_list_buckets);
        return s3_error(r, 405, "MethodNotAllowed", NULL);
    }
    if (!r->key) {
        if (PUT && r->q.n == 0) return run(r, "CreateBucket", true, op_create_bucket);
        if (HEAD) return run(r, "ListBucket", false, op_head_bucket);
        if (DEL && r->q.n == 0) return run(r, "DeleteBucket", true, op_delete_bucket);
        if (POST && qhas(r, "delete")) return op_delete_objects(r); /* each key is checked */
        if (qhas(r, "policy") && (GET || PUT || DEL)) /* checked inside (the owner's root may always) */
            return GET ? op_get_bucket_policy(r, false) : PUT ? op_put_bucket_policy(r) : op_delete_bucket_policy(r);
        if (GET && qhas(r, "policyStatus")) return op_get_bucket_policy(r, true);
        if (GET) {
            if (qhas(r, "location")) return run(r, "GetBucketLocation", false, op_bucket_location);
            if (qhas(r, "versioning")) return run(r, "GetBucketVersioning", false, op_bucket_versioning);
            if (qhas(r, "uploads")) return run(r, "ListBucketMultipartUploads", false, op_list_uploads);
            static const char *const unsupported[] = { "acl", "lifecycle", "cors", "tagging",
                "website", "logging", "notification", "replication", "encryption", "versions",
                "object-lock", "ownershipControls", "publicAccessBlock", "accelerate", "requestPayment", NULL };
            for (int i = 0; unsupported[i]; i++)
                if (qhas(r, unsupported[i])) {
                    fl_http_set_op(r->c, "Unsupported");
                    return s3_error(r, 501, "NotImplemented", NULL);
                }
            const char *lt = qget(r, "list-type");
            return run(r, "ListBucket", false, lt && strcmp(lt, "2") == 0 ? op_list_objects_v2 : op_list_objects_v1);
        }
        fl_http_set_op(r->c, "Unsupported");
        return s3_error(r, qhas(r, "uploads") || r->q.n ? 501 : 405,
                        r->q.n ? "NotImplemented" : "MethodNotAllowed", NULL);
    }
    if (r->keylen > fl_store_max_key(r->cfg->store, r->bucket)) return s3_error(r, 400, "KeyTooLongError", NULL);
    bool upload = qhas(r, "uploadId");
    bool copy = hhas(r, xname(r, "x-amz-copy-source"));
    if (PUT) {
        if (upload) return run(r, "PutObject", true, copy ? op_upload_part_copy : op_upload_part);
        if (qhas(r, "tagging") || qhas(r, "acl") || qhas(r, "retention") || qhas(r, "legal-hold")) {
            fl_http_set_op(r->c, "Unsupported");
            return s3_error(r, 501, "NotImplemented", NULL);
        }
        return run(r, "PutObject", true, copy ? op_copy_object : op_put_object);
    }
    if (GET || HEAD) {
        if (GET && upload) return run(r, "ListMultipartUploadParts", false, op_list_parts);
        if (qhas(r, "tagging") || qhas(r, "acl") || qhas(r, "attributes") || qhas(r, "torrent")) {
            fl_http_set_op(r->c, "Unsupported");
            return s3_error(r, 501, "NotImplemented", NULL);
        }
        return run(r, "GetObject", false, op_get_object);
    }
    if (DEL) return upload ? run(r, "AbortMultipartUpload", true, op_abort_upload)
                           : run(r, "DeleteObject", true, op_delete_object);
    if (POST) {
        if (qhas(r, "uploads")) return run(r, "PutObject", true, op_create_upload);
        if (upload) return run(r, "PutObject", true, op_complete_upload);
    }
    fl_http_set_op(r->c, "Unsupported");
    s3_error(r, 405, "MethodNotAllowed", NULL);
}

void fl_s3_handle(fl_http_conn_t *c, fl_http_req_t *req, void *ud)
{
    s3req_t r = { .c = c, .req = req, .cfg = ud };
    r.head = strcmp(req->method, "HEAD") == 0;
    fl_sigv4_req_t sr = { .method = req->method, .raw_path = req->path, .raw_path_len = req->path_len,
                          .raw_query = req->query, .raw_query_len = req->query_len,
                          .headers = req->headers, .nheaders = req->nheaders };
    r.dialect = fl_sigv4_dialect(&sr);
    common_headers(&r);
    if (parse_path(&r) != FL_OK) {
        fl_http_set_op(c, "Invalid");
        s3_error(&r, 400, "InvalidURI", "Couldn't parse the specified URI.");
        goto out;
    }
    if (r.bucket_bad) {
        fl_http_set_op(c, "Invalid");
        s3_error(&r, 400, "InvalidBucketName", NULL);
        goto out;
    }
    if (fl_query_parse(r.req->query, r.req->query_len, &r.q) != FL_OK) {
        fl_http_set_op(c, "Invalid");
        s3_error(&r, 400, "InvalidArgument", "The query string is malformed.");
        goto out;
    }
    if (!authenticate(&r)) {
        fl_http_set_op(c, "Unauthenticated");
        goto out;
    }
    route(&r);
    if (!r.responded) s3_error(&r, 500, "InternalError", NULL);
    /* every write attempt (a denial has its own line) */
    if (r.have_who && !r.head && strcmp(req->method, "GET") && fl_http_resp_status_of(c) != 403) {
        char detail[32], res[1200];
        snprintf(detail, sizeof detail, "status %d", fl_http_resp_status_of(c));
        snprintf(res, sizeof res, "arn:aws:s3:::%s%s%.*s", r.bucket ? r.bucket : "*", r.key ? "/" : "",
                 r.key ? (int)(r.keylen < 1024 ? r.keylen : 1024) : 0, r.key ? r.key : "");
        fl_iam_audit(&r.who, "write", fl_http_op(c), res, NULL, detail);
    }
out:
    fl_iam_who_free(&r.who);
    fl_query_free(&r.q);
    free(r.bucket);
    free(r.key);
}
