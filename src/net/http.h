/* HTTP/1.1 server.
 *
 * Model: a poller thread accepts and holds idle connections (new ones and
 * keep-alive ones between requests, and heads still arriving) without a
 * thread; once a whole request head is here, a worker thread serves the
 * connection with blocking I/O bounded by timeouts (base/limits.h) until it
 * is idle again. Connections are capped per client address and in total; a
 * newcomer over a cap replaces the oldest idle connection, and only gets 503
 * SlowDown when none is idle. A handler runs on a worker thread and may block
 * (file I/O, fsync, SQLite): that only holds its own connection.
 * Request bodies are read incrementally by the handler (fl_http_body_read),
 * so an upload streams to disk; responses are written with Content-Length or
 * streamed with sendfile. Keep-alive, pipelining, Expect: 100-continue and
 * chunked request bodies are handled here; handlers see decoded bodies. */
#ifndef FL_NET_HTTP_H
#define FL_NET_HTTP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "base/err.h"
#include "base/buf.h"
#include "base/header.h"
#include "base/limits.h"


typedef struct fl_http_req {
    char method[16];             /* NUL-terminated, e.g. "GET" */
    const char *target;          /* raw request-target as received */
    size_t target_len;
    const char *path;            /* raw (still percent-encoded) path, before '?' */
    size_t path_len;
    const char *query;           /* raw query after '?', NULL/0 if none */
    size_t query_len;
    int version_minor;           /* 0 or 1 */
    fl_http_header_t headers[FL_HTTP_MAX_HEADERS];
    size_t nheaders;
    int64_t content_length;      /* -1 if absent */
    bool chunked;                /* Transfer-Encoding: chunked */
    bool expect_continue;        /* Expect: 100-continue */
    bool keep_alive;             /* per version and Connection header */
} fl_http_req_t;

/* Parses a request head (request line + headers + blank line) from buf.
 * Returns the number of bytes the head occupies (> 0), 0 if more bytes are
 * needed, or a negative HTTP status for a malformed head: -400, -414 (target
 * too long), -431 (headers too large / too many), -501 (unsupported transfer
 * coding), -505 (version). Header names are lower-cased in buf (hence non-const);
 * the request's pointers point into buf. Pure function: fuzzed. */
int fl_http_parse_head(char *buf, size_t len, fl_http_req_t *req);

/* First header with the given lower-case name, or NULL. */
const fl_http_header_t *fl_http_header(const fl_http_req_t *req, const char *lname);
/* Header value as a slice ({NULL,0} if absent). */
fl_slice_t fl_http_header_val(const fl_http_req_t *req, const char *lname);

/* Chunked transfer-coding decoder (push model, used by the server; fuzzed).
 * Feed raw bytes; decoded data bytes are delivered in place: on return
 * out / outlen point at decoded data inside in (possibly shorter than consumed). */
typedef struct fl_chunked {
    int state;
    uint64_t remaining;   /* bytes left in the current chunk */
    size_t line_len;      /* bytes of the current size/trailer line seen */
    size_t trailer_len;
    bool done;
} fl_chunked_t;
void fl_chunked_init(fl_chunked_t *d);
/* Consumes up to inlen bytes of in; returns bytes consumed (>= 0) or a negative
 * fl_err_t (FL_ERR_PROTO malformed, FL_ERR_TOO_LARGE line/trailer too long).
 * Decoded payload bytes: the first *outlen bytes at *out (a pointer into in). It
 * stops after at most one data run, so call in a loop until consumed == inlen
 * or d->done. */
long fl_chunked_feed(fl_chunked_t *d, const char *in, size_t inlen, const char **out, size_t *outlen);

typedef struct fl_http_conn fl_http_conn_t;

/* ---- for handlers (call only on the connection's own thread) ---- */

/* Reads up to cap bytes of the decoded request body. Sends "100 Continue"
 * first if the client asked for it (only here: a handler that answers without
 * reading sends none, and the connection closes after its response). Returns
 * bytes read (> 0), 0 at the end of the body, or a negative fl_err_t
 * (FL_ERR_TIMEOUT: no byte for FL_HTTP_READ_TIMEOUT_MS, or the body fell behind
 * its total deadline of FL_HTTP_BODY_GRACE_MS + bytes / FL_HTTP_BODY_MIN_RATE
 * counted from the first read; FL_ERR_CLOSED, FL_ERR_PROTO, FL_ERR_INCOMPLETE). */
ssize_t fl_http_body_read(fl_http_conn_t *c, void *buf, size_t cap);
/* Total decoded body bytes read so far. */
int64_t fl_http_body_consumed(const fl_http_conn_t *c);

/* Response: set status and headers, then either send a whole body or begin a
 * streamed one. Date, Server, Content-Length and Connection are added here. */
void fl_http_resp_status(fl_http_conn_t *c, int status);
void fl_http_resp_header(fl_http_conn_t *c, const char *name, const char *value);
void fl_http_resp_headerf(fl_http_conn_t *c, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sends headers and the whole body (body may be NULL when len is 0). For HEAD
 * requests the body is not sent but Content-Length still says len unless
 * fl_http_resp_begin was used. */
fl_err_t fl_http_resp_send(fl_http_conn_t *c, const void *body, size_t len);
/* Sends the headers with Content-Length: len; the body follows via write/sendfile
 * (nothing is sent for HEAD). */
fl_err_t fl_http_resp_begin(fl_http_conn_t *c, int64_t len);
fl_err_t fl_http_resp_write(fl_http_conn_t *c, const void *p, size_t n);
fl_err_t fl_http_resp_sendfile(fl_http_conn_t *c, int fd, int64_t off, int64_t len);
/* Marks the connection to close after this response (e.g. the request body
 * was rejected unread). */
void fl_http_close_after(fl_http_conn_t *c);
/* Labels the request for /metrics and the access log (e.g. "PutObject"). */
void fl_http_set_op(fl_http_conn_t *c, const char *op);
/* The label set by fl_http_set_op ("unknown" when none) and the response
 * status set so far (for the audit log, after the handler answered). */
const char *fl_http_op(const fl_http_conn_t *c);
int fl_http_resp_status_of(const fl_http_conn_t *c);
/* Remote address "ip:port" of the peer. */
const char *fl_http_peer(const fl_http_conn_t *c);
/* A per-request id (16 hex chars), also sent as x-amz-request-id by the S3 layer. */
const char *fl_http_request_id(const fl_http_conn_t *c);

typedef void (*fl_http_handler_fn)(fl_http_conn_t *c, fl_http_req_t *req, void *ud);

/* Optional dependency check behind /health: writes one "name: state" line
 * per dependency into detail[cap] and returns true when all answer. Called
 * on connection threads, concurrently; must answer within a second or two. */
typedef bool (*fl_http_health_fn)(void *ud, char *detail, size_t cap);

typedef struct fl_http_server_cfg {
    const char *name;           /* "s3", "catalog": label in logs and metrics */
    const char *listen;         /* "127.0.0.1:9000"; port 0 picks a free port */
    fl_http_handler_fn handler;
    void *ud;
    int max_connections;        /* 0 = FL_HTTP_MAX_CONNECTIONS, lowered to fit RLIMIT_NOFILE */
    int64_t max_body_bytes;     /* 0 = unlimited by this layer */
    bool access_log;
    fl_http_health_fn health;   /* NULL: /health is always "ok" */
    void *health_ud;
} fl_http_server_cfg_t;

typedef struct fl_http_server fl_http_server_t;

/* Binds and starts serving on background threads. /health and /metrics are
 * answered by the server itself (GET, no auth): /health is 200 "ok" (the
 * health check's lines in the X-Floe-Health header, ", "-joined) or 503 with
 * the lines as its body. Returns NULL and logs on error. */
fl_http_server_t *fl_http_server_start(const fl_http_server_cfg_t *cfg);
/* The bound port (useful with port 0). */
int fl_http_server_port(const fl_http_server_t *s);
/* Graceful stop: close the listener and idle connections, let in-flight
 * requests finish (up to timeout_ms, then shut their sockets down), wait for
 * every worker thread, free. */
void fl_http_server_stop(fl_http_server_t *s, int timeout_ms);

#endif
