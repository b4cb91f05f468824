/* A small HTTP client for floe's own outbound requests (the Iceberg REST client and the
 * table IO's S3 client): libcurl easy handles kept in a pool (keep-alive, safe to share
 * between threads), optional SigV4 signing with floe's signer or a bearer token, bounded
 * response bodies, retries with backoff for requests the caller marks idempotent, and one
 * parser for remote error bodies (Iceberg REST JSON, S3 Tables JSON, S3 XML).
 *
 * Secrets (secret keys, session and bearer tokens) are never logged or put in messages. */
#ifndef FL_NET_HTTPC_H
#define FL_NET_HTTPC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/err.h"
#include "net/http.h"

/* A failed remote call: what the caller reports to a user. */
typedef struct fl_remote_error {
    int status;          /* HTTP status; 0 = no HTTP response (transport failure, bad input) */
    char type[96];       /* REST error.type, S3 <Code>, S3 Tables x-amzn-ErrorType; "" if none */
    char message[512];   /* human-readable; never holds a secret */
    bool maybe_sent;     /* status 0 only: the request may have reached the server */
} fl_remote_error_t;

/* Fills err from an error response body: {"error":{"message","type","code"}} (Iceberg
 * REST), {"message":...} (S3 Tables; type from x-amzn-ErrorType if given), <Error><Code>
 * <Message> (S3), else the body's first line (or "HTTP <status>"). Pure; any thread. */
void fl_remote_error_parse(int status, const char *body, size_t len, const char *type_hint,
                           fl_remote_error_t *err);
/* Sets err to a status-0 error with a printf message. Returns e (for "return fail(...)"). */
fl_err_t fl_remote_error_set(fl_remote_error_t *err, fl_err_t e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

typedef struct fl_httpc_cfg {
    long connect_timeout_ms;  /* default 10000 */
    long timeout_ms;          /* whole request, default 300000; < 0 = none */
    int max_retries;          /* extra attempts for idempotent requests; default 3; < 0 = none */
    int pool_size;            /* idle handles kept for reuse; default 8 */
    long stall_s;             /* abort when under 1 byte/s for this long; default 60; < 0 = never */
} fl_httpc_cfg_t;

/* SigV4 credentials. Borrowed by requests. */
typedef struct fl_httpc_sigv4 {
    const char *akid, *secret, *session_token; /* session_token may be NULL */
    const char *region, *service;              /* e.g. "us-east-1", "s3tables" / "s3" */
} fl_httpc_sigv4_t;

typedef struct fl_httpc_req {
    const char *method;             /* "GET", "PUT", "POST", "DELETE", "HEAD" */
    const char *url;                /* scheme://host[:port]/path, path already percent-encoded */
    const char *query;              /* without '?', encoded; NULL = none */
    const fl_http_header_t *headers;/* extra headers, names lower-case; signed under SigV4 */
    size_t nheaders;
    const void *body;               /* memory body (may be NULL with body_len 0) */
    size_t body_len;
    bool has_body;                  /* send body/body_len (a PUT of 0 bytes too) */
    int body_fd;                    /* >= 0: stream body_fd_len bytes at body_off with pread */
    uint64_t body_off, body_fd_len;
    bool body_fd_pipe;              /* body_fd is a pipe: read() it, no retry; an end of file
                                       before body_fd_len bytes aborts the request */
    const fl_httpc_sigv4_t *sigv4;  /* NULL = unsigned */
    bool unsigned_payload;          /* sign UNSIGNED-PAYLOAD (always so for fd bodies) */
    const char *bearer;             /* Authorization: Bearer (ignored with sigv4) */
    bool idempotent;                /* retried on transport errors, 429, 5xx */
    fl_buf_t *resp;                 /* 2xx body goes here (its cap bounds it); NULL = dropped */
    void *dst;                      /* or: 2xx body into dst[dst_cap] (resp must be NULL) */
    size_t dst_cap;
    fl_buf_t *resp_headers;         /* optional: the final response's headers, "name: value\n" lines
                                       with names lower-cased (the store backend's user metadata) */
} fl_httpc_req_t;

typedef struct fl_httpc_resp {
    long status;
    size_t dst_len;                 /* bytes written into dst */
    int64_t content_length;         /* Content-Length header, -1 if absent */
    char etag[130];                 /* ETag header as sent (quotes kept), "" if absent */
    char last_modified[40];
} fl_httpc_resp_t;

typedef struct fl_httpc fl_httpc_t;

/* A client (no connection is made yet). cfg may be NULL for defaults. Never fails. */
fl_httpc_t *fl_httpc_new(const fl_httpc_cfg_t *cfg);
void fl_httpc_free(fl_httpc_t *h);

/* Sends r and waits for the answer. FL_OK when a response arrived, whatever its status:
 * resp->status tells; for status >= 300 err is filled from the body (fl_remote_error_parse).
 * Otherwise an error with err->status 0: FL_ERR_TIMEOUT, FL_ERR_IO (connection, TLS, ...),
 * FL_ERR_TOO_LARGE (2xx body over resp's cap or dst_cap), FL_ERR_INVALID (bad request).
 * Idempotent requests are retried (backoff 100 ms doubling, cap 2 s) on transport errors,
 * 429 and 5xx. Thread-safe: a handle from the pool per call. err may not be NULL. */
fl_err_t fl_httpc_do(fl_httpc_t *h, const fl_httpc_req_t *r, fl_httpc_resp_t *resp,
                     fl_remote_error_t *err);

/* fl_err_t for a non-2xx status: 400/405/406/422 FL_ERR_INVALID, 401/403/419 FL_ERR_AUTH,
 * 404 FL_ERR_NOT_FOUND, 409 FL_ERR_CONFLICT (FL_ERR_EXISTS when the error type names an
 * AlreadyExists error; FL_ERR_NOT_EMPTY for NamespaceNotEmpty/BucketNotEmpty), 412
 * FL_ERR_PRECONDITION, 408/504 FL_ERR_TIMEOUT, others FL_ERR_IO. Pure. */
fl_err_t fl_httpc_status_err(int status, const char *type);

#endif
