/* AWS Signature Version 4, Alibaba Cloud's OSS4-HMAC-SHA256 and OSS V1: verification
 * (Authorization header and presigned query), aws-chunked body decoding with
 * per-chunk and trailer signatures, and a SigV4 signer for floe's own clients.
 * SigV4 services: "s3" (single-encoded canonical URI, no path normalisation)
 * and anything else, e.g. "s3tables", "osstables" (double-encoded,
 * normalised). OSS4 products ("oss", "osstables") share the verifier: the
 * dialect is a parameter of one verification path (its own algorithm name,
 * key prefix "aliyun_v4", scope terminator "aliyun_v4_request", x-oss-*
 * names, implicitly signed x-oss-* headers, a resource as canonical URI and
 * the raw query). OSS V1 (HMAC-SHA1 over verb, Content-MD5, Content-Type,
 * Date or Expires, x-oss-* headers and "/{bucket}/{key}" with the signed
 * sub-resources) goes through the same entry points, object flavour only (the
 * product "oss" must be accepted), with the same key lookup, time window,
 * constant-time comparison and unsigned-x-amz-* refusal. Pure functions over
 * a request view, thread-safe; the
 * signing-key cache is internally locked. */
#ifndef FL_AUTH_SIGV4_H
#define FL_AUTH_SIGV4_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/err.h"
#include "base/buf.h"
#include "base/checksum.h"
#include "base/header.h"

/* Looks up the secret for an access key id. Returns false if unknown.
 * secret_out must hold 128 bytes. Called from any thread. */
typedef bool (*fl_secret_lookup_fn)(void *ud, const char *akid, char *secret_out);

/* The signature family a request carries. */
typedef enum fl_sig_dialect {
    FL_SIG_NONE = 0,
    FL_SIG_AWS4,        /* AWS4-HMAC-SHA256 */
    FL_SIG_OSS4,        /* OSS4-HMAC-SHA256 */
    FL_SIG_OSS1,        /* OSS V1: "OSS akid:sig" (HMAC-SHA1) or OSSAccessKeyId/Expires/Signature */
} fl_sig_dialect_t;

/* True for Alibaba Cloud's signatures (answered in the OSS dialect). */
static inline bool fl_sig_is_oss(fl_sig_dialect_t d) { return d == FL_SIG_OSS4 || d == FL_SIG_OSS1; }

typedef enum fl_payload_mode {
    FL_PAYLOAD_SHA256 = 0,               /* hex hash given: body must match payload_sha256 */
    FL_PAYLOAD_UNSIGNED,                 /* UNSIGNED-PAYLOAD */
    FL_PAYLOAD_STREAMING_SIGNED,         /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
    FL_PAYLOAD_STREAMING_SIGNED_TRAILER, /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
    FL_PAYLOAD_STREAMING_UNSIGNED_TRAILER, /* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
} fl_payload_mode_t;

/* What the verifier needs from a request. */
typedef struct fl_sigv4_req {
    const char *method;
    const char *raw_path;   /* as on the wire, percent-encoded */
    size_t raw_path_len;
    const char *raw_query;  /* after '?', may be NULL */
    size_t raw_query_len;
    const fl_http_header_t *headers; /* names lower-case */
    size_t nheaders;
} fl_sigv4_req_t;

typedef struct fl_sigv4_cfg {
    fl_secret_lookup_fn lookup;
    void *lookup_ud;
    const char *const *services; /* NULL-terminated list of accepted signing names */
    int64_t now;                 /* seconds since epoch (tests pass a fixed time) */
    const char *region;          /* the credential scope's region must equal this; NULL: any */
    /* OSS4: NULL-terminated list of accepted products ("oss", "osstables");
     * NULL refuses OSS4 signatures. OSS V1 is accepted only where "oss" is. */
    const char *const *oss_products;
    /* OSS4 and V1 canonical resource, not yet percent-encoded (e.g. "/bucket/key",
     * or the tables flavour's "/{bucket ARN}/{decoded path}"); NULL: the
     * object flavour's "/{bucket}/{key}" from the path ("/bucket" gets its '/'). */
    const char *oss_resource;
    size_t oss_resource_len;
} fl_sigv4_cfg_t;

/* A successful verification. */
typedef struct fl_sigv4_auth {
    fl_sig_dialect_t dialect;
    char akid[128];
    char service[32];
    char region[64];
    char amz_date[17];      /* yyyymmddTHHMMSSZ */
    char scope[160];        /* date/region/service/aws4_request */
    char seed_signature[65];
    unsigned char signing_key[32];
    fl_payload_mode_t payload_mode;
    char payload_sha256[65]; /* FL_PAYLOAD_SHA256: expected lower-hex body hash */
    bool presigned;
} fl_sigv4_auth_t;

/* A failed verification, in S3 terms: HTTP status, S3 error code, message. */
typedef struct fl_sigv4_error {
    int status;        /* 400 or 403 */
    const char *code;  /* "SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied",
                          "RequestTimeTooSkewed", "AuthorizationHeaderMalformed",
                          "AuthorizationQueryParametersError", "MissingSecurityHeader",
                          "InvalidArgument", ... */
    char message[256];
    /* One extra element S3 adds to the error body, or NULL: "HeadersNotSigned"
     * (the unsigned header names) or "Region" (the expected region). */
    const char *detail_name;
    char detail_value[256];
} fl_sigv4_error_t;

/* True if the request carries SigV4, OSS4 or OSS V1 credentials at all
 * (Authorization header, or X-Amz-* / x-oss-* / OSSAccessKeyId query parameters). */
bool fl_sigv4_present(const fl_sigv4_req_t *r);
/* Which signature family the request carries (from the Authorization header's
 * algorithm or the query parameters' names); FL_SIG_NONE if none. Lets a
 * front door answer even a failed verification in the client's dialect. */
fl_sig_dialect_t fl_sigv4_dialect(const fl_sigv4_req_t *r);

/* Verifies the request's signature (header or presigned form). On success fills
 * *auth and returns FL_OK; else fills *err and returns FL_ERR_AUTH (or
 * FL_ERR_INVALID for malformed credentials). The body is not read: for
 * FL_PAYLOAD_SHA256 the caller hashes the body and compares with
 * auth->payload_sha256 (XAmzContentSHA256Mismatch); the streaming modes go
 * through fl_awschunk. For non-S3 services with no x-amz-content-sha256 header,
 * body_sha256_hex (if non-NULL) is used as the payload hash, else the mode is
 * FL_PAYLOAD_SHA256 with the hash of the empty body unless body is pending:
 * pass the hex hash of the buffered body for such services. */
fl_err_t fl_sigv4_verify(const fl_sigv4_req_t *r, const fl_sigv4_cfg_t *cfg,
                         const char *body_sha256_hex, fl_sigv4_auth_t *auth,
                         fl_sigv4_error_t *err);

/* The checks fl_sigv4_verify makes before it needs the payload hash: form,
 * credential scope (service, region, date), signed-header list, known access
 * key, time window, unsigned x-amz-* headers. FL_OK if they pass (the
 * signature itself is not checked); else like fl_sigv4_verify. Lets a server
 * refuse a request before it reads a body the signature covers. */
fl_err_t fl_sigv4_check_head(const fl_sigv4_req_t *r, const fl_sigv4_cfg_t *cfg,
                             fl_sigv4_error_t *err);
/* True if the signature covers a body hash that is not in the head (header
 * form without x-amz-content-sha256, as non-S3 SDKs sign): the body has to be
 * read and hashed before fl_sigv4_verify can decide. */
bool fl_sigv4_body_signed(const fl_sigv4_req_t *r);

/* ---- aws-chunked bodies (STREAMING-* payload modes) ---- */

typedef struct fl_awschunk fl_awschunk_t;

/* Payload bytes out of the decoder; return non-zero to abort decoding. */
typedef int (*fl_awschunk_out_fn)(void *ud, const void *p, size_t n);

/* A decoder for one request body. auth comes from fl_sigv4_verify (signing key,
 * seed signature, scope, date, mode). trailer_header is the x-amz-trailer value
 * (e.g. "x-amz-checksum-crc32") or NULL; decoded_len is
 * x-amz-decoded-content-length (-1 if absent). Returns NULL on a bad trailer name. */
fl_awschunk_t *fl_awschunk_new(const fl_sigv4_auth_t *auth, const char *trailer_header,
                               int64_t decoded_len);
/* Feeds encoded bytes; payload goes to out. Returns FL_OK, or FL_ERR_PROTO
 * (malformed framing), FL_ERR_AUTH (chunk or trailer signature mismatch),
 * FL_ERR_TOO_LARGE (chunk over FL_AWSCHUNK_MAX_CHUNK, too much data),
 * FL_ERR_DIGEST (trailer checksum mismatch). The error is sticky. */
fl_err_t fl_awschunk_feed(fl_awschunk_t *d, const void *in, size_t n,
                          fl_awschunk_out_fn out, void *ud);
/* After the last byte: FL_OK only if the final chunk (and trailer) arrived, the
 * decoded length matches, and every signature and the trailer checksum verified;
 * FL_ERR_INCOMPLETE if the body ended early. */
fl_err_t fl_awschunk_finish(fl_awschunk_t *d);
/* The trailer checksum, once finished: algorithm and base64 value as sent
 * (verified); FL_CK_NONE if there was none. */
fl_cksum_alg_t fl_awschunk_trailer(const fl_awschunk_t *d, const char **b64_value);
/* A short description of the last error, for the S3 error message. */
const char *fl_awschunk_errmsg(const fl_awschunk_t *d);
void fl_awschunk_free(fl_awschunk_t *d);

/* ---- signing, for floe's own clients and tests ---- */

typedef struct fl_sigv4_sign_in {
    const char *method;
    const char *raw_path;      /* already percent-encoded as it goes on the wire */
    const char *raw_query;     /* may be NULL */
    const fl_http_header_t *headers; /* headers to sign; must include host */
    size_t nheaders;
    const char *payload_hash;  /* hex hash or UNSIGNED-PAYLOAD / STREAMING-... */
    const char *akid, *secret, *region, *service;
    int64_t now;               /* seconds */
} fl_sigv4_sign_in_t;

/* Writes the value of the Authorization header into out (and the x-amz-date
 * used into amz_date, 17 bytes). */
fl_err_t fl_sigv4_sign(const fl_sigv4_sign_in_t *in, fl_buf_t *out, char amz_date[17]);
/* Builds a presigned query string (without '?'), including X-Amz-Signature. */
fl_err_t fl_sigv4_presign(const fl_sigv4_sign_in_t *in, int expires_s, fl_buf_t *query_out);

/* Lower-level pieces, exposed for tests against published vectors. */
fl_err_t fl_sigv4_canonical_request(const fl_sigv4_req_t *r, const char *service,
                                    const char *signed_headers, const char *payload_hash,
                                    bool presigned, fl_buf_t *out);
void fl_sigv4_signing_key(const char *secret, const char *date8, const char *region,
                          const char *service, unsigned char out[32]);
/* The OSS4 tables flavour's canonical resource for r (see cfg.oss_resource):
 * "/{bucket ARN}/{decoded path}" with the ARN taken from the path or, for
 * /get-table, from the query; "/acs:osstables:{region}::bucket//{path}" when
 * no bucket is addressed. Appends to out; FL_ERR_INVALID on a bad escape. */
fl_err_t fl_oss4_tables_resource(const fl_sigv4_req_t *r, const char *region, fl_buf_t *out);
/* The aliyun_v4 key: HMAC-SHA256 chain from "aliyun_v4"+secret over date8,
 * region, product and "aliyun_v4_request". */
void fl_oss4_signing_key(const char *secret, const char *date8, const char *region,
                         const char *product, unsigned char out[32]);

#endif
