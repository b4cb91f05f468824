/* The catalog port's front door: body intake (capped), SigV4 with the signing
 * names of S3 Tables and OSS Tables, and dispatch to the S3 Tables control
 * plane or the Iceberg REST catalog. Errors before dispatch are rendered by
 * the front door the path belongs to, so every client sees its own protocol's
 * error shape. */
#include "api/catalog.h"
#include "api/iam.h"
#include "api/rest.h"
#include "api/tables.h"
#include "base/checksum.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_rest(const fl_http_req_t *req)
{
    return req->path_len >= 8 && memcmp(req->path, "/iceberg", 8) == 0 &&
           (req->path_len == 8 || req->path[8] == '/');
}

static void front_error(fl_api_req_t *r, bool rest, int status, const char *type, const char *msg)
{
    if (rest) fl_rest_error(r, status, type, msg);
    else fl_tables_error(r, status, type, msg);
}

/* SigV4 failure -> the front door's error type. */
static const char *auth_type(bool rest, const fl_sigv4_error_t *e)
{
    if (rest) return e->status == 400 ? "BadRequestException" : "NotAuthorizedException";
    if (e->status == 400) return "BadRequestException";
    if (e->code && !strcmp(e->code, "InvalidAccessKeyId")) return "UnrecognizedClientException";
    if (e->code && (!strcmp(e->code, "SignatureDoesNotMatch") || !strcmp(e->code, "RequestTimeTooSkewed")))
        return "InvalidSignatureException";
    return "ForbiddenException";
}

/* Renders a SigV4 failure. A region outside this server's scope is answered
 * as AWS's JSON services do (403, "Credential should be scoped to a valid
 * region"), not with S3's AuthorizationHeaderMalformed. */
/* Was the request signed for iam or sts (its credential scope says so, even
 * when the signature does not verify)? Then its errors are IAM XML. */
static bool iam_scoped(const fl_http_req_t *req)
{
    const fl_http_header_t *h = fl_http_header(req, "authorization");
    if (!h) return false;
    fl_slice_t v = { h->value, h->value_len };
    static const char *const tails[] = { "/iam/aws4_request", "/sts/aws4_request" };
    for (int i = 0; i < 2; i++) {
        size_t tl = strlen(tails[i]);
        for (size_t j = 0; j + tl <= v.len; j++)
            if (!memcmp(v.ptr + j, tails[i], tl)) return true;
    }
    return false;
}

static void auth_error(fl_api_req_t *r, bool rest, const fl_sigv4_error_t *err)
{
    fl_http_set_op(r->c, "Unauthenticated");
    if (iam_scoped(r->req)) {
        const char *code = err->code && !strcmp(err->code, "SignatureDoesNotMatch") ? "SignatureDoesNotMatch"
                                                                                      : "InvalidClientTokenId";
        fl_iam_api_error(r, 403, code, err->message[0] ? err->message : "The security token included in the request is invalid.");
        return;
    }
    if (err->detail_name && !strcmp(err->detail_name, "Region")) {
        char msg[160];
        snprintf(msg, sizeof msg, "Credential should be scoped to a valid region, not the one "
                 "signed for; expecting '%s'.", fl_tablesvc_cfg(r->cfg->svc)->scope.region);
        front_error(r, rest, 403, rest ? "NotAuthorizedException" : "InvalidSignatureException", msg);
        return;
    }
    front_error(r, rest, err->status ? err->status : 403, auth_type(rest, err),
                err->message[0] ? err->message : "The request signature is not valid.");
}

/* True if the Content-MD5 header is the base64 MD5 of body. */
static bool content_md5_ok(const fl_http_req_t *req, const char *body, size_t len)
{
    fl_slice_t v = fl_slice_trim(fl_http_header_val(req, "content-md5"));
    unsigned char want[32], got[FL_CK_MAX_DIGEST];
    if (!v.ptr || fl_base64_decode(v.ptr, v.len, want, sizeof want) != 16) return false;
    fl_cksum_t ck;
    fl_cksum_init(&ck, FL_CK_MD5);
    fl_cksum_update(&ck, body, len);
    fl_cksum_final(&ck, got);
    fl_cksum_free(&ck);
    return memcmp(want, got, 16) == 0;
}

/* Reads the whole (capped) body into out; false after rendering the error. */
static bool read_body(fl_api_req_t *r, bool rest, fl_buf_t *out)
{
    if (r->req->content_length <= 0 && !r->req->chunked) return true;
    char tmp[16384];
    for (;;) {
        ssize_t n = fl_http_body_read(r->c, tmp, sizeof tmp);
        if (n == 0) return true;
        if (n < 0 || fl_buf_add(out, tmp, (size_t)n) != FL_OK) {
            fl_http_set_op(r->c, "Invalid");
            fl_http_close_after(r->c);
            front_error(r, rest, n < 0 ? 400 : 413, "BadRequestException",
                        n < 0 ? "The request body could not be read." : "The request body is too large.");
            return false;
        }
    }
}


/* A table commit: Iceberg REST's updateTable, commitTransaction and
 * replaceView, S3 Tables' UpdateTableMetadataLocation. It moves a table's
 * metadata pointer only, which nothing the IAM cache holds depends on (a
 * table's ARN, owner and policies stay), so it does not bracket itself with
 * fl_iam_write_begin/end: a busy writer does not empty every node's cache. */
static bool is_commit(bool rest, const fl_api_req_t *r)
{
    const char *p = r->path, *end = r->path + r->path_len;
    const char *m = r->req->method;
    if (!rest) { /* PUT /tables/{bucket}/{ns}/{name}/metadata-location */
        static const char tail[] = "/metadata-location";
        size_t tl = sizeof tail - 1;
        return !strcmp(m, "PUT") && r->path_len > 8 + tl && !memcmp(p, "/tables/", 8) &&
               !memcmp(end - tl, tail, tl);
    }
    if (strcmp(m, "POST") || r->path_len < 4 || memcmp(p, "/v1/", 4)) return false;
    const char *segs[6];
    size_t lens[6], n = 0;
    const char *q = memchr(p + 4, '/', (size_t)(end - p - 4)); /* past the prefix */
    while (q && q < end && n < 6) {
        q++;
        const char *s = memchr(q, '/', (size_t)(end - q));
        segs[n] = q;
        lens[n++] = (size_t)((s ? s : end) - q);
        q = s;
    }
    if (q) return false; /* more segments than any commit route has */
#define SEG(i, lit) (lens[i] == sizeof lit - 1 && !memcmp(segs[i], lit, sizeof lit - 1))
    return (n == 2 && SEG(0, "transactions") && SEG(1, "commit")) ||
           (n == 4 && SEG(0, "namespaces") && (SEG(2, "tables") || SEG(2, "views")) && lens[1] && lens[3]);
#undef SEG
}
/* Authentication happens on the head, before a byte of the body is read (so
 * no 100 Continue goes to a request that will be refused): unsigned requests,
 * unknown keys, a wrong scope or time are refused at once. When the client
 * sent x-amz-content-sha256 the whole signature is verified from the head and
 * the body checked against the hash once read; when it did not (botocore,
 * PyIceberg sign the body hash without sending it), everything but the
 * signature is checked first, then the body is read and the signature
 * verified with its hash. */
void fl_catalog_handle(fl_http_conn_t *c, fl_http_req_t *req, void *ud)
{
    const fl_catalog_cfg_t *cfg = ud;
    bool rest = is_rest(req);
    fl_api_req_t r = { .c = c, .req = req, .cfg = cfg, .path = req->path, .path_len = req->path_len,
                       .body = "", .principal = "anonymous" };
    if (rest) {
        r.path += 8;
        r.path_len -= 8;
    }
    fl_buf_t body;
    fl_buf_init(&body, FL_CATALOG_MAX_BODY); /* grows as the body arrives, up to the cap */

    fl_sigv4_req_t sr = {
        .method = req->method, .raw_path = req->path, .raw_path_len = req->path_len,
        .raw_query = req->query, .raw_query_len = req->query_len,
        .headers = req->headers, .nheaders = req->nheaders,
    };
    static const char *const services[] = { "s3tables", "osstables", "iam", "sts", NULL };
    static const char *const products[] = { "osstables", NULL };
    const char *region = fl_tablesvc_cfg(cfg->svc)->scope.region;
    fl_sigv4_cfg_t vc = { .lookup = cfg->lookup, .lookup_ud = cfg->lookup_ud, .services = services,
                          .region = region, .now = fl_now_ms() / 1000, .oss_products = products };
    fl_sigv4_error_t err = { 0 };
    fl_sigv4_auth_t auth;
    fl_sig_dialect_t dialect = fl_sigv4_dialect(&sr);
    r.dialect = dialect;
    if (fl_sig_is_oss(dialect)) { /* OSS Tables' request id, on every answer */
        fl_http_resp_header(c, "x-oss-request-id", fl_http_request_id(c));
    } else {
        fl_http_resp_header(c, "x-amz-request-id", fl_http_request_id(c));
        fl_http_resp_header(c, "x-amzn-RequestId", fl_http_request_id(c));
    }
    bool signed_req = dialect != FL_SIG_NONE, body_signed = signed_req && fl_sigv4_body_signed(&sr);
    fl_buf_t resource;
    fl_buf_init(&resource, FL_HTTP_MAX_TARGET_BYTES + 4096);
    if (dialect == FL_SIG_OSS4) {
        /* OSS4 signs the tables flavour's resource, not the path */
        if (fl_oss4_tables_resource(&sr, region, &resource) != FL_OK) fl_buf_reset(&resource);
        vc.oss_resource = resource.ptr ? resource.ptr : "/";
        vc.oss_resource_len = resource.ptr ? resource.len : 1;
    }
    fl_iam_who_t who = { 0 };
    bool writing = false;
    uint64_t write_mark = 0;

    /* the head */
    if (!signed_req && !cfg->insecure_no_auth) {
        fl_http_set_op(c, "Unauthenticated");
        fl_http_close_after(c);
        front_error(&r, rest, rest ? 401 : 403, rest ? "NotAuthorizedException" : "ForbiddenException",
                    "Requests must be signed with AWS Signature Version 4.");
        goto out;
    }
    if (signed_req && (body_signed ? fl_sigv4_check_head(&sr, &vc, &err)
                                   : fl_sigv4_verify(&sr, &vc, NULL, &auth, &err)) != FL_OK) {
        fl_http_close_after(c);
        auth_error(&r, rest, &err);
        goto out;
    }
    if (signed_req && !body_signed && auth.payload_mode >= FL_PAYLOAD_STREAMING_SIGNED) {
        fl_http_set_op(c, "Invalid");
        fl_http_close_after(c);
        front_error(&r, rest, 400, "BadRequestException", "Streaming payloads are not accepted here.");
        goto out;
    }
    /* A body must be covered by the signature: UNSIGNED-PAYLOAD (an S3-only mode) and
     * presigned URLs sign no body, so anyone holding one could send any JSON with it.
     * OSS4 clients send UNSIGNED-PAYLOAD with a Content-MD5, which OSS4 always
     * signs: that covers the body once it is checked against it below. */
    bool md5_covers = dialect == FL_SIG_OSS4 && fl_http_header(req, "content-md5");
    if (signed_req && !body_signed && auth.payload_mode != FL_PAYLOAD_SHA256 && !md5_covers &&
        (req->content_length > 0 || req->chunked)) {
        fl_http_set_op(c, "Unauthenticated");
        fl_http_close_after(c);
        front_error(&r, rest, rest ? 401 : 403, rest ? "NotAuthorizedException" : "ForbiddenException",
                    "A request body must be signed: send its SHA-256 in x-amz-content-sha256 (no "
                    "UNSIGNED-PAYLOAD or presigned URLs with a body here).");
        goto out;
    }
    if (req->content_length > FL_CATALOG_MAX_BODY) {
        fl_http_set_op(c, "Invalid");
        fl_http_close_after(c);
        front_error(&r, rest, 413, "BadRequestException", "The request body is too large.");
        goto out;
    }

    /* the body, then what of the signature depends on it */
    if (!read_body(&r, rest, &body)) goto out;
    if (body.ptr) {
        r.body = body.ptr;
        r.body_len = body.len;
    }
    if (signed_req) {
        char hash[65];
        fl_sha256_hex(r.body, r.body_len, hash);
        if (body_signed && fl_sigv4_verify(&sr, &vc, hash, &auth, &err) != FL_OK) {
            auth_error(&r, rest, &err);
            goto out;
        }
        if (md5_covers && !content_md5_ok(req, r.body, r.body_len)) {
            fl_http_set_op(c, "Unauthenticated");
            front_error(&r, rest, 400, "BadRequestException",
                        "The Content-MD5 you specified did not match what we received.");
            goto out;
        }
        if (auth.payload_mode == FL_PAYLOAD_SHA256 && strcmp(auth.payload_sha256, hash) != 0) {
            fl_http_set_op(c, "Unauthenticated");
            front_error(&r, rest, 400, "BadRequestException",
                        "The provided 'x-amz-content-sha256' header does not match the request body.");
            goto out;
        }
        r.principal = auth.akid;
        r.service = auth.service;
        if (cfg->iam) {
            fl_query_t q; /* a presigned URL's token (an unparsable query holds none) */
            fl_query_parse(req->query, req->query_len, &q);
            char *token = fl_iam_request_token(req, &q);
            fl_query_free(&q);
            char msg[128];
            fl_err_t e = fl_iam_identify(cfg->iam, auth.akid, token, &who, msg);
            free(token);
            if (e != FL_OK) {
                fl_http_set_op(c, "Unauthenticated");
                bool expired = strstr(msg, "expired") != NULL; /* AWS's codes for an expired session */
                if (!strcmp(auth.service, "iam") || !strcmp(auth.service, "sts"))
                    fl_iam_api_error(&r, 403, expired ? "ExpiredToken" : "InvalidClientTokenId", msg);
                else front_error(&r, rest, 403, rest ? "NotAuthorizedException"
                                              : expired ? "ExpiredTokenException" : "UnrecognizedClientException", msg);
                goto out;
            }
            r.who = &who;
        }
        bool iam_api = !strcmp(auth.service, "iam") || !strcmp(auth.service, "sts");
        if (r.who && (iam_api || (strcmp(req->method, "GET") && strcmp(req->method, "HEAD") && !is_commit(rest, &r)))) {
            /* a write may change what identities and policies say: see fl_iam_write_begin
             * (the IAM/STS query APIs take their Action from a GET's query too) */
            write_mark = fl_iam_write_begin(cfg->iam);
            writing = true;
        }
        if (iam_api) {
            fl_iam_api_handle(&r);
            goto out;
        }
    }

    /* drops must work on a full disk: the catalog's commit needs room too */
    if (!strcmp(req->method, "DELETE")) fl_store_make_room(fl_tablesvc_cfg(cfg->svc)->store);
    if (rest) fl_rest_handle(&r);
    else fl_tables_handle(&r);
    /* every write attempt (a denial has its own line) */
    if (r.who && strcmp(req->method, "GET") && strcmp(req->method, "HEAD") && fl_http_resp_status_of(c) != 403) {
        char detail[32], res[600];
        snprintf(detail, sizeof detail, "status %d", fl_http_resp_status_of(c));
        snprintf(res, sizeof res, "%.*s", (int)(req->path_len < 512 ? req->path_len : 512), req->path);
        fl_iam_audit(r.who, "write", fl_http_op(c), res, NULL, detail);
    }
out:
    fl_buf_free(&resource);
    if (writing) fl_iam_write_end(cfg->iam, write_mark);
    fl_iam_who_free(&who);
    fl_buf_free(&body);
}
