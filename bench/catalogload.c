/* catalogload: a load generator for floe's Iceberg REST catalog (bench/catalog.sh).
 *
 *   catalogload --endpoint http://127.0.0.1:PORT --access-key AK --secret-key SK
 *               --op load|commit --clients N (--seconds S | --requests N)
 *               [--bucket TABLE_BUCKET] [--namespace NS] [--table T]
 *               [--region R] [--label L] [--server-pid PID] [--setup-only]
 *
 * Setup (untimed, one connection): creates the table bucket with the S3 Tables
 * API (PUT /buckets {"name":B}; 409 = exists, then the ARN comes from
 * GET /buckets), the namespace (POST /iceberg/v1/{prefix}/namespaces) and the
 * table (POST .../namespaces/{ns}/tables, schema {id: long}); prefix = the ARN
 * percent-encoded (':' -> %3A, '/' -> %2F). 409 on either means it exists.
 *
 * Timed phase:
 *  - load: GET /iceberg/v1/{prefix}/namespaces/{ns}/tables/{t} (loadTable);
 *    the body is read and discarded; counts 200s.
 *  - commit: POST to the same path, an append: requirement
 *    assert-ref-snapshot-id(main = current or null), updates add-snapshot
 *    (random positive id, parent = current, sequence-number = last + 1,
 *    manifest list s3://<warehouse>/metadata/snap-<id>.avro, which need not
 *    exist) + set-snapshot-ref main. On 409 the client reloads the table (GET)
 *    and retries. ops = successful commits; conflicts and reloads are counted.
 *    p50/p99 = latency of the successful POST; e2e_p50/p99 = from the first
 *    attempt of a commit to its success (conflicts, reloads and retries included).
 *
 * Method, chosen so that the client is not the bottleneck (as bench/s3load.c):
 * one thread and one keep-alive HTTP/1.1 connection per client, blocking raw
 * sockets, one untimed request per client, then all start at a barrier. SigV4
 * with signing name "s3tables" is computed here with OpenSSL (signing key
 * cached per day): for non-S3 services the canonical URI is the raw path
 * encoded again ('%' -> '%25'); x-amz-content-sha256 is the hex SHA-256 of the
 * body (the empty-body hash for GET). A request costs the client 2 SHA-256 + 1
 * HMAC + the body hash; the JSON line reports client_cpu_s next to the
 * server's CPU (--server-pid) and everything else on the machine.
 *
 * Prints one JSON line: ops, errors, conflicts, reloads, seconds, req_s,
 * p50_ms, p99_ms, e2e_p50_ms, e2e_p99_ms, resp_bytes (last 200 body),
 * client_cpu_s, server_cpu_s, other_cpu_s, reconnects. Exit status 1 if a
 * request failed (a 409 on commit is not a failure).
 *
 * Standalone build: gcc -O2 -Wall -Wextra -Werror -std=gnu17 bench/catalogload.c -lcrypto -lpthread
 * The CMake build also compiles it (linked with floe_core, which it does not use). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strcasestr, memmem */
#endif
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define MAX_CONSEC_ERRORS 20
#define RBUF_SIZE (256 * 1024)
#define IO_TIMEOUT_S 60
#define SERVICE "s3tables"

typedef enum { OP_LOAD, OP_COMMIT } op_t;

static struct {
    const char *endpoint, *access_key, *secret_key, *region, *label;
    const char *bucket, *ns, *table;
    op_t op;
    int clients;
    double seconds;
    long requests;
    long server_pid;
    bool setup_only;
} cfg;

static char g_hostport[256];
static struct sockaddr_storage g_addr;
static socklen_t g_addrlen;
static pthread_barrier_t g_barrier;
static atomic_long g_remaining;
static double g_deadline;
static atomic_int g_first_error_printed;
static char g_arn[256];
static char g_prefix[512];     /* percent-encoded ARN */
static char g_tpath[1024];     /* /iceberg/v1/{prefix}/namespaces/{ns}/tables/{t} */
static char g_warehouse[256];  /* table location, s3://... */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "catalogload: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

/* ======================= HTTP/1.1 + SigV4 over one socket ======================= */

typedef struct {
    long status;
    int64_t clen;
    char *body;          /* captured response body (when asked), NUL-terminated */
    size_t blen, bcap;
    bool capture;
    char err[512];
} result_t;

typedef struct {
    int fd;
    bool reused;
    char *rbuf;
    size_t rlen, roff;
    uint64_t rx;
    long connects;
    char kdate[9];
    unsigned char kkey[32];
    char head[4096];
} conn_t;

static void hex32(char out[65], const unsigned char in[32])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hx[in[i] >> 4];
        out[2 * i + 1] = hx[in[i] & 15];
    }
    out[64] = 0;
}

static void hmac256(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
    unsigned int olen = 32;
    if (!HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &olen))
        die("HMAC failed");
}

static void sha256_hex(const void *p, size_t n, char out[65])
{
    unsigned char h[32];
    SHA256(p, n, h);
    hex32(out, h);
}

/* Canonical URI for a non-S3 service: the raw (already encoded) path, encoded
 * again: '%' -> "%25"; everything else on our paths is unreserved or '/'. */
static void canon_uri(const char *path, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = path; *p; p++) {
        if (o + 4 >= n)
            die("path too long");
        if (*p == '%') {
            memcpy(out + o, "%25", 3);
            o += 3;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
}

/* Authorization header value. query: canonical query string ("" if none). */
static void sigv4(conn_t *c, const char *method, const char *path, const char *query,
                  const char *payload_hash, const char *amzdate, char *auth, size_t authlen)
{
    char date[9];
    memcpy(date, amzdate, 8);
    date[8] = 0;
    if (strcmp(date, c->kdate) != 0) {
        char secret[300];
        unsigned char k1[32], k2[32];
        snprintf(secret, sizeof(secret), "AWS4%s", cfg.secret_key);
        hmac256(secret, strlen(secret), date, k1);
        hmac256(k1, 32, cfg.region, k2);
        hmac256(k2, 32, SERVICE, k1);
        hmac256(k1, 32, "aws4_request", c->kkey);
        memcpy(c->kdate, date, 9);
    }
    char curi[2048], canon[3072], hx[65], sts[512], sig[65];
    unsigned char h[32];
    canon_uri(path, curi, sizeof(curi));
    int n = snprintf(canon, sizeof(canon),
                     "%s\n%s\n%s\nhost:%s\nx-amz-content-sha256:%s\nx-amz-date:%s\n\n"
                     "host;x-amz-content-sha256;x-amz-date\n%s",
                     method, curi, query, g_hostport, payload_hash, amzdate, payload_hash);
    if (n < 0 || (size_t)n >= sizeof(canon))
        die("request too long");
    SHA256((const unsigned char *)canon, (size_t)n, h);
    hex32(hx, h);
    snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%s/%s/" SERVICE "/aws4_request\n%s",
             amzdate, date, cfg.region, hx);
    hmac256(c->kkey, 32, sts, h);
    hex32(sig, h);
    snprintf(auth, authlen,
             "AWS4-HMAC-SHA256 Credential=%s/%s/%s/" SERVICE "/aws4_request, "
             "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=%s",
             cfg.access_key, date, cfg.region, sig);
}

static void conn_close(conn_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->rlen = c->roff = 0;
}

static void conn_init(conn_t *c)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    c->rbuf = malloc(RBUF_SIZE);
    if (!c->rbuf)
        die("out of memory");
}

static void conn_free(conn_t *c)
{
    conn_close(c);
    free(c->rbuf);
}

static int conn_connect(conn_t *c, result_t *x)
{
    conn_close(c);
    int fd = socket(g_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto fail;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&g_addr, g_addrlen) != 0) {
        close(fd);
        goto fail;
    }
    c->fd = fd;
    c->reused = false;
    c->rx = 0;
    c->connects++;
    return 0;
fail:
    snprintf(x->err, sizeof(x->err), "connect: %s", strerror(errno));
    return -1;
}

static int conn_fill(conn_t *c, result_t *x)
{
    if (c->roff == c->rlen)
        c->roff = c->rlen = 0;
    else if (c->roff > 0 && c->rlen == RBUF_SIZE) {
        memmove(c->rbuf, c->rbuf + c->roff, c->rlen - c->roff);
        c->rlen -= c->roff;
        c->roff = 0;
    }
    if (c->rlen == RBUF_SIZE) {
        snprintf(x->err, sizeof(x->err), "response head too large");
        return -1;
    }
    ssize_t n;
    do
        n = recv(c->fd, c->rbuf + c->rlen, RBUF_SIZE - c->rlen, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
        snprintf(x->err, sizeof(x->err), "recv: %s", n == 0 ? "connection closed" : strerror(errno));
        return -1;
    }
    c->rlen += (size_t)n;
    c->rx += (uint64_t)n;
    return 0;
}

static char *conn_line(conn_t *c, result_t *x)
{
    for (;;) {
        char *s = c->rbuf + c->roff;
        char *e = memchr(s, '\n', c->rlen - c->roff);
        if (e) {
            c->roff = (size_t)(e + 1 - c->rbuf);
            if (e > s && e[-1] == '\r')
                e--;
            *e = 0;
            return s;
        }
        if (conn_fill(c, x) != 0)
            return NULL;
    }
}

static void body_add(result_t *x, const char *p, size_t n)
{
    if (!x->capture) {
        x->blen += n;
        return;
    }
    if (x->blen + n + 1 > x->bcap) {
        size_t cap = x->bcap ? x->bcap : 65536;
        while (cap < x->blen + n + 1)
            cap *= 2;
        x->body = realloc(x->body, cap);
        if (!x->body)
            die("out of memory");
        x->bcap = cap;
    }
    memcpy(x->body + x->blen, p, n);
    x->blen += n;
    x->body[x->blen] = 0;
}

static int conn_take(conn_t *c, uint64_t n, result_t *x)
{
    while (n > 0) {
        if (c->roff == c->rlen && conn_fill(c, x) != 0)
            return -1;
        size_t k = c->rlen - c->roff;
        if (k > n)
            k = (size_t)n;
        body_add(x, c->rbuf + c->roff, k);
        c->roff += k;
        n -= k;
    }
    return 0;
}

static int send_all(int fd, struct iovec *iov, int cnt, result_t *x)
{
    while (cnt > 0) {
        struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
        ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            snprintf(x->err, sizeof(x->err), "send: %s", strerror(errno));
            return -1;
        }
        while (cnt > 0 && (size_t)n >= iov->iov_len) {
            n -= (ssize_t)iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov->iov_base = (char *)iov->iov_base + n;
            iov->iov_len -= (size_t)n;
        }
    }
    return 0;
}

/* One attempt: 0 when a final response was read; *retryable when a reused
 * connection yielded nothing at all (closed idle by the server). */
static int attempt(conn_t *c, const char *method, const char *path, const char *query,
                   const char *body, size_t len, result_t *x, bool *retryable)
{
    *retryable = false;
    char amzdate[17], ph[65], auth[512];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(amzdate, sizeof(amzdate), "%Y%m%dT%H%M%SZ", &tm);
    if (len)
        sha256_hex(body, len, ph);
    else
        memcpy(ph, EMPTY_SHA256, 65);
    sigv4(c, method, path, query, ph, amzdate, auth, sizeof(auth));
    char clen[96] = "";
    if (len || strcmp(method, "GET") != 0)
        snprintf(clen, sizeof(clen), "Content-Type: application/json\r\nContent-Length: %zu\r\n", len);
    int hn = snprintf(c->head, sizeof(c->head),
                      "%s %s%s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: catalogload\r\n"
                      "Accept: application/json\r\nx-amz-date: %s\r\nx-amz-content-sha256: %s\r\n"
                      "Authorization: %s\r\n%s\r\n",
                      method, path, query[0] ? "?" : "", query, g_hostport, amzdate, ph, auth, clen);
    if (hn < 0 || (size_t)hn >= sizeof(c->head))
        die("request head too long");
    bool was_reused = c->reused;
    uint64_t rx0 = c->rx;
    struct iovec iov[2] = {{c->head, (size_t)hn}, {(void *)body, len}};
    if (send_all(c->fd, iov, len ? 2 : 1, x) != 0) {
        *retryable = was_reused;
        return -1;
    }
    bool chunked, close_after;
    char *l;
    for (;;) { /* status line + headers; skip 1xx */
        l = conn_line(c, x);
        if (!l) {
            *retryable = was_reused && c->rx == rx0;
            return -1;
        }
        int minor = 1;
        if (sscanf(l, "HTTP/1.%d %ld", &minor, &x->status) != 2) {
            snprintf(x->err, sizeof(x->err), "bad status line: %.200s", l);
            return -1;
        }
        x->clen = -1;
        chunked = false;
        close_after = minor == 0;
        while ((l = conn_line(c, x)) && *l) {
            char *v = strchr(l, ':');
            if (!v)
                continue;
            *v++ = 0;
            while (*v == ' ' || *v == '\t')
                v++;
            if (strcasecmp(l, "content-length") == 0)
                x->clen = strtoll(v, NULL, 10);
            else if (strcasecmp(l, "transfer-encoding") == 0)
                chunked = strcasestr(v, "chunked") != NULL;
            else if (strcasecmp(l, "connection") == 0)
                close_after = strcasestr(v, "close") != NULL;
        }
        if (!l)
            return -1;
        if (x->status >= 200)
            break;
    }
    if (strcmp(method, "HEAD") == 0 || x->status == 204 || x->status == 304) {
        /* no body */
    } else if (chunked) {
        for (;;) {
            if (!(l = conn_line(c, x)))
                return -1;
            uint64_t n = strtoull(l, NULL, 16);
            if (n == 0)
                break;
            if (conn_take(c, n, x) != 0 || !conn_line(c, x))
                return -1;
        }
        while ((l = conn_line(c, x)) && *l) { /* trailers */
        }
        if (!l)
            return -1;
    } else if (x->clen >= 0) {
        if (conn_take(c, (uint64_t)x->clen, x) != 0)
            return -1;
    } else {
        close_after = true;
        while (conn_fill(c, x) == 0) {
            body_add(x, c->rbuf + c->roff, c->rlen - c->roff);
            c->roff = c->rlen;
        }
    }
    if (close_after)
        conn_close(c);
    else
        c->reused = true;
    return 0;
}

/* A request; returns the HTTP status or -1. With capture, x->body holds the body. */
static long request(conn_t *c, const char *method, const char *path, const char *query,
                    const char *body, size_t len, bool capture, result_t *x)
{
    for (int a = 0; a < 2; a++) {
        x->status = -1;
        x->clen = -1;
        x->blen = 0;
        x->capture = capture;
        x->err[0] = 0;
        if (x->body)
            x->body[0] = 0;
        if (c->fd < 0 && conn_connect(c, x) != 0)
            return -1;
        bool retryable;
        if (attempt(c, method, path, query, body, len, x, &retryable) == 0)
            return x->status;
        conn_close(c);
        if (!retryable)
            break;
    }
    return x->status = -1;
}

static void report_error(const char *what, const result_t *x)
{
    if (atomic_exchange(&g_first_error_printed, 1) == 0)
        fprintf(stderr, "catalogload: %s: status %ld: %.400s\n", what, x->status,
                x->err[0] ? x->err : (x->body ? x->body : ""));
}

/* ======================= tiny JSON peeking ======================= */

/* Integer value of the first "key": in s; false if absent or not an integer
 * (null counts as absent). */
static bool json_int(const char *s, const char *key, int64_t *out)
{
    char pat[96];
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    const char *p = strstr(s, pat);
    if (!p)
        return false;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    if (!(*p == '-' || (*p >= '0' && *p <= '9')))
        return false;
    *out = strtoll(p, NULL, 10);
    return true;
}

/* String value of the first "key": in s into out (no escape handling). */
static bool json_str(const char *s, const char *key, char *out, size_t n)
{
    char pat[96];
    snprintf(pat, sizeof(pat), "\"%s\":\"", key);
    const char *p = strstr(s, pat);
    if (!p)
        return false;
    p += strlen(pat);
    const char *e = strchr(p, '"');
    if (!e || (size_t)(e - p) >= n)
        return false;
    memcpy(out, p, (size_t)(e - p));
    out[e - p] = 0;
    return true;
}

/* ======================= setup ======================= */

static void pct_encode(const char *in, char *out, size_t n)
{
    static const char hx[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        if (o + 4 >= n)
            die("too long to encode: %s", in);
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~') {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hx[*p >> 4];
            out[o++] = hx[*p & 15];
        }
    }
    out[o] = 0;
}

/* The ARN of table bucket cfg.bucket from a ListTableBuckets page. */
static bool find_arn(const char *list)
{
    char tail[128];
    snprintf(tail, sizeof(tail), ":bucket/%s\"", cfg.bucket);
    for (const char *p = strstr(list, "\"arn\":\""); p; p = strstr(p + 1, "\"arn\":\"")) {
        const char *v = p + 7, *e = strchr(v, '"');
        if (!e)
            return false;
        size_t n = (size_t)(e - v) + 1;
        size_t tl = strlen(tail);
        if (n >= tl && n < sizeof(g_arn) && memcmp(e + 1 - tl, tail, tl) == 0) {
            memcpy(g_arn, v, n - 1);
            g_arn[n - 1] = 0;
            return true;
        }
    }
    return false;
}

static void setup(conn_t *c)
{
    result_t x = {0};
    char body[1024], path[1536];
    long st;
    snprintf(body, sizeof(body), "{\"name\":\"%s\"}", cfg.bucket);
    st = request(c, "PUT", "/buckets", "", body, strlen(body), true, &x);
    if (st == 200) {
        if (!json_str(x.body, "arn", g_arn, sizeof(g_arn)))
            die("create table bucket: no arn in %.300s", x.body);
    } else if (st == 409) {
        /* exists: its ARN from the list (first page is enough for a bench machine) */
        st = request(c, "GET", "/buckets", "", NULL, 0, true, &x);
        if (st != 200 || !find_arn(x.body))
            die("table bucket %s exists but its ARN was not found (status %ld)", cfg.bucket, st);
    } else {
        die("create table bucket %s: status %ld: %.400s", cfg.bucket, st, x.err[0] ? x.err : x.body);
    }
    pct_encode(g_arn, g_prefix, sizeof(g_prefix));

    /* the catalog's config for this warehouse: checks signing with a query */
    char q[600];
    snprintf(q, sizeof(q), "warehouse=%s", g_prefix);
    st = request(c, "GET", "/iceberg/v1/config", q, NULL, 0, true, &x);
    if (st != 200)
        die("GET /iceberg/v1/config?%s: status %ld: %.400s", q, st, x.err[0] ? x.err : x.body);

    snprintf(path, sizeof(path), "/iceberg/v1/%s/namespaces", g_prefix);
    snprintf(body, sizeof(body), "{\"namespace\":[\"%s\"]}", cfg.ns);
    st = request(c, "POST", path, "", body, strlen(body), true, &x);
    if (st != 200 && st != 409)
        die("create namespace: status %ld: %.400s", st, x.err[0] ? x.err : x.body);

    snprintf(path, sizeof(path), "/iceberg/v1/%s/namespaces/%s/tables", g_prefix, cfg.ns);
    snprintf(body, sizeof(body),
             "{\"name\":\"%s\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"id\","
             "\"type\":\"long\",\"required\":true}]}}",
             cfg.table);
    st = request(c, "POST", path, "", body, strlen(body), true, &x);
    if (st != 200 && st != 409)
        die("create table: status %ld: %.400s", st, x.err[0] ? x.err : x.body);

    snprintf(g_tpath, sizeof(g_tpath), "/iceberg/v1/%s/namespaces/%s/tables/%s", g_prefix, cfg.ns,
             cfg.table);
    st = request(c, "GET", g_tpath, "", NULL, 0, true, &x);
    if (st != 200)
        die("loadTable: status %ld: %.400s", st, x.err[0] ? x.err : x.body);
    if (!json_str(x.body, "location", g_warehouse, sizeof(g_warehouse)))
        die("loadTable: no location in %.300s", x.body);
    fprintf(stderr, "catalogload: warehouse %s, table %s.%s at %s, metadata %zu bytes\n", g_arn,
            cfg.ns, cfg.table, g_warehouse, x.blen);
    free(x.body);
}

/* ======================= clients ======================= */

typedef struct {
    double *v;
    size_t n, cap;
} lat_t;

static void lat_push(lat_t *l, double v)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4096;
        l->v = realloc(l->v, l->cap * sizeof(double));
        if (!l->v)
            die("out of memory");
    }
    l->v[l->n++] = v;
}

typedef struct {
    int id;
    pthread_t th;
    conn_t conn;
    result_t x;
    long ops, errors, conflicts, reloads, consec;
    lat_t lat, e2e;
    double t_end;
    bool setup_failed;
    size_t resp_bytes;
    /* commit: the table's state as this client last saw it */
    int64_t cur;      /* current snapshot id, -1 = none */
    int64_t seq;      /* last-sequence-number */
    uint64_t rng;
} client_t;

static bool take_request(void)
{
    if (cfg.requests > 0)
        return atomic_fetch_sub(&g_remaining, 1) > 0;
    return now_s() < g_deadline;
}

static uint64_t next_rand(client_t *cl)
{
    uint64_t s = cl->rng;
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    cl->rng = s;
    return s;
}

/* The table's state from a loadTable / commit response body. */
static bool parse_state(client_t *cl, const char *body)
{
    const char *m = strstr(body, "\"metadata\":");
    if (!m)
        return false;
    int64_t v;
    cl->cur = json_int(m, "current-snapshot-id", &v) && v >= 0 ? v : -1;
    cl->seq = json_int(m, "last-sequence-number", &v) ? v : 0;
    return true;
}

static bool reload(client_t *cl)
{
    long st = request(&cl->conn, "GET", g_tpath, "", NULL, 0, true, &cl->x);
    if (st == 200 && parse_state(cl, cl->x.body))
        return true;
    report_error("reload (loadTable)", &cl->x);
    return false;
}

static void *client_setup(void *arg)
{
    client_t *cl = arg;
    conn_init(&cl->conn);
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
        seed = (uint64_t)time(NULL) * 2654435761u + (uint64_t)cl->id;
    cl->rng = seed | 1;
    if (!reload(cl)) /* the untimed warm-up request */
        cl->setup_failed = true;
    return NULL;
}

static size_t commit_body(client_t *cl, char *out, size_t n, int64_t *new_id)
{
    int64_t id;
    do
        id = (int64_t)(next_rand(cl) >> 1);
    while (id == 0 || id == cl->cur);
    *new_id = id;
    char cur[32] = "null", parent[64] = "";
    if (cl->cur >= 0) {
        snprintf(cur, sizeof(cur), "%" PRId64, cl->cur);
        snprintf(parent, sizeof(parent), "\"parent-snapshot-id\":%" PRId64 ",", cl->cur);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    int k = snprintf(out, n,
                     "{\"requirements\":[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\","
                     "\"snapshot-id\":%s}],\"updates\":[{\"action\":\"add-snapshot\",\"snapshot\":{"
                     "\"snapshot-id\":%" PRId64 ",%s\"sequence-number\":%" PRId64 ","
                     "\"timestamp-ms\":%lld,\"manifest-list\":\"%s/metadata/snap-%" PRId64 ".avro\","
                     "\"summary\":{\"operation\":\"append\"},\"schema-id\":0}},"
                     "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"branch\","
                     "\"snapshot-id\":%" PRId64 "}]}",
                     cur, id, parent, cl->seq + 1, ms, g_warehouse, id, id);
    if (k < 0 || (size_t)k >= n)
        die("commit body too long");
    return (size_t)k;
}

/* Books a failure; false when the client should stop. */
static bool failed(client_t *cl, const char *what)
{
    cl->errors++;
    report_error(what, &cl->x);
    return ++cl->consec < MAX_CONSEC_ERRORS;
}

static void *client_timed(void *arg)
{
    client_t *cl = arg;
    char body[2048];
    pthread_barrier_wait(&g_barrier);
    pthread_barrier_wait(&g_barrier);
    while (!cl->setup_failed && take_request()) {
        if (cfg.op == OP_LOAD) {
            double t0 = now_s();
            long st = request(&cl->conn, "GET", g_tpath, "", NULL, 0, false, &cl->x);
            double lat = now_s() - t0;
            if (st == 200 && cl->x.blen > 0 && (cl->x.clen < 0 || (size_t)cl->x.clen == cl->x.blen)) {
                cl->ops++;
                cl->consec = 0;
                cl->resp_bytes = cl->x.blen;
                lat_push(&cl->lat, lat);
            } else if (!failed(cl, "loadTable")) {
                break;
            }
            continue;
        }
        /* commit, with reload + retry on conflict */
        double start = now_s();
        bool stop = false;
        for (;;) {
            int64_t id;
            size_t len = commit_body(cl, body, sizeof(body), &id);
            double t0 = now_s();
            long st = request(&cl->conn, "POST", g_tpath, "", body, len, true, &cl->x);
            double t1 = now_s();
            if (st == 200) {
                int64_t seq0 = cl->seq;
                if (!parse_state(cl, cl->x.body) || cl->cur != id || cl->seq != seq0 + 1) {
                    snprintf(cl->x.err, sizeof(cl->x.err),
                             "commit 200 but the response's main is %" PRId64 " (want %" PRId64 ")",
                             cl->cur, id);
                    stop = !failed(cl, "commit");
                    break;
                }
                cl->ops++;
                cl->consec = 0;
                cl->resp_bytes = cl->x.blen;
                lat_push(&cl->lat, t1 - t0);
                lat_push(&cl->e2e, t1 - start);
                break;
            }
            if (st == 409) {
                cl->conflicts++;
                cl->reloads++;
                if (!reload(cl)) {
                    cl->errors++;
                    stop = ++cl->consec >= MAX_CONSEC_ERRORS;
                    break;
                }
                if (cfg.requests <= 0 && now_s() >= g_deadline)
                    break; /* the window closed while retrying: abandon */
                continue;
            }
            stop = !failed(cl, "commit");
            if (!stop)
                reload(cl);
            break;
        }
        if (stop)
            break;
    }
    cl->t_end = now_s();
    return NULL;
}

/* ======================= accounting (as s3load) ======================= */

static double proc_cpu_s(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    unsigned long long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double machine_busy_s(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n != 8)
        return -1;
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

static int cmp_double(const void *a, const void *b)
{
    double p = *(const double *)a, q = *(const double *)b;
    return (p > q) - (p < q);
}

static double pct(const double *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

/* All clients' samples of one kind, sorted. */
static double *merge(client_t *cls, bool e2e, size_t *n_out)
{
    size_t n = 0;
    for (int i = 0; i < cfg.clients; i++)
        n += e2e ? cls[i].e2e.n : cls[i].lat.n;
    double *all = malloc((n ? n : 1) * sizeof(double));
    if (!all)
        die("out of memory");
    size_t k = 0;
    for (int i = 0; i < cfg.clients; i++) {
        lat_t *l = e2e ? &cls[i].e2e : &cls[i].lat;
        if (l->n)
            memcpy(all + k, l->v, l->n * sizeof(double));
        k += l->n;
        free(l->v);
    }
    qsort(all, n, sizeof(double), cmp_double);
    *n_out = n;
    return all;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: catalogload --endpoint http://HOST:PORT --access-key AK --secret-key SK\n"
            "                   --op load|commit --clients N (--seconds S | --requests N)\n"
            "                   [--bucket TABLE_BUCKET] [--namespace NS] [--table T]\n"
            "                   [--region R] [--label L] [--server-pid PID] [--setup-only]\n");
    exit(2);
}

static void parse_endpoint(void)
{
    const char *e = cfg.endpoint;
    if (strncmp(e, "http://", 7) != 0)
        die("--endpoint must be http://HOST[:PORT]");
    e += 7;
    size_t n = strlen(e);
    if (n == 0 || n >= sizeof(g_hostport) || strchr(e, '/'))
        die("--endpoint must be http://HOST[:PORT] (no path)");
    memcpy(g_hostport, e, n + 1);
    char host[256], port[16] = "80";
    const char *colon = strrchr(e, ':');
    if (colon && e[0] != '[') {
        snprintf(host, sizeof(host), "%.*s", (int)(colon - e), e);
        snprintf(port, sizeof(port), "%s", colon + 1);
    } else {
        snprintf(host, sizeof(host), "%s", e);
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0)
        die("resolve %s: %s", host, gai_strerror(rc));
    memcpy(&g_addr, ai->ai_addr, ai->ai_addrlen);
    g_addrlen = ai->ai_addrlen;
    freeaddrinfo(ai);
}

static bool safe_name(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_'))
            return false;
    return true;
}

int main(int argc, char **argv)
{
    cfg.region = "us-east-1";
    cfg.label = "";
    cfg.bucket = "bench";
    cfg.ns = "bench";
    cfg.table = "t";
    cfg.clients = 1;
    const char *op = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--setup-only") == 0) {
            cfg.setup_only = true;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 || i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (strcmp(a, "--endpoint") == 0) cfg.endpoint = v;
        else if (strcmp(a, "--access-key") == 0) cfg.access_key = v;
        else if (strcmp(a, "--secret-key") == 0) cfg.secret_key = v;
        else if (strcmp(a, "--bucket") == 0) cfg.bucket = v;
        else if (strcmp(a, "--namespace") == 0) cfg.ns = v;
        else if (strcmp(a, "--table") == 0) cfg.table = v;
        else if (strcmp(a, "--region") == 0) cfg.region = v;
        else if (strcmp(a, "--label") == 0) cfg.label = v;
        else if (strcmp(a, "--op") == 0) op = v;
        else if (strcmp(a, "--clients") == 0) cfg.clients = atoi(v);
        else if (strcmp(a, "--seconds") == 0) cfg.seconds = atof(v);
        else if (strcmp(a, "--requests") == 0) cfg.requests = atol(v);
        else if (strcmp(a, "--server-pid") == 0) cfg.server_pid = atol(v);
        else usage();
    }
    if (!cfg.endpoint || !cfg.access_key || !cfg.secret_key || (!op && !cfg.setup_only) ||
        cfg.clients < 1 || cfg.clients > 1024 ||
        (!cfg.setup_only && (cfg.seconds <= 0) == (cfg.requests <= 0)))
        usage();
    if (!op || strcmp(op, "load") == 0) cfg.op = OP_LOAD;
    else if (strcmp(op, "commit") == 0) cfg.op = OP_COMMIT;
    else usage();
    if (!safe_name(cfg.bucket) || !safe_name(cfg.ns) || !safe_name(cfg.table))
        die("bucket, namespace and table must be made of [a-z0-9_-]");
    parse_endpoint();
    signal(SIGPIPE, SIG_IGN);

    {
        conn_t c;
        conn_init(&c);
        setup(&c);
        conn_free(&c);
    }
    if (cfg.setup_only)
        return 0;

    client_t *cls = calloc((size_t)cfg.clients, sizeof(client_t));
    if (!cls)
        die("out of memory");
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (int i = 0; i < cfg.clients; i++) {
        cls[i].id = i;
        if (pthread_create(&cls[i].th, &attr, client_setup, &cls[i]) != 0)
            die("pthread_create failed");
    }
    for (int i = 0; i < cfg.clients; i++)
        pthread_join(cls[i].th, NULL);
    pthread_barrier_init(&g_barrier, NULL, (unsigned)cfg.clients + 1);
    atomic_store(&g_remaining, cfg.requests);
    for (int i = 0; i < cfg.clients; i++)
        if (pthread_create(&cls[i].th, &attr, client_timed, &cls[i]) != 0)
            die("pthread_create failed");
    pthread_attr_destroy(&attr);
    pthread_barrier_wait(&g_barrier);
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    double srv0 = cfg.server_pid ? proc_cpu_s(cfg.server_pid) : -1, mach0 = machine_busy_s();
    double t0 = now_s();
    g_deadline = t0 + cfg.seconds;
    pthread_barrier_wait(&g_barrier);
    for (int i = 0; i < cfg.clients; i++)
        pthread_join(cls[i].th, NULL);

    long ops = 0, errors = 0, conflicts = 0, reloads = 0, connects = 0;
    size_t resp_bytes = 0;
    bool setup_failed = false;
    double t_end = t0;
    for (int i = 0; i < cfg.clients; i++) {
        ops += cls[i].ops;
        errors += cls[i].errors;
        conflicts += cls[i].conflicts;
        reloads += cls[i].reloads;
        connects += cls[i].conn.connects;
        setup_failed |= cls[i].setup_failed;
        if (cls[i].resp_bytes > resp_bytes)
            resp_bytes = cls[i].resp_bytes;
        if (cls[i].t_end > t_end)
            t_end = cls[i].t_end;
    }
    getrusage(RUSAGE_SELF, &ru1);
    double srv1 = cfg.server_pid ? proc_cpu_s(cfg.server_pid) : -1, mach1 = machine_busy_s();
    double secs = t_end - t0;
    double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
                 (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6 +
                 (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                 (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
    double server_cpu = (srv0 >= 0 && srv1 >= 0) ? srv1 - srv0 : -1;
    double other_cpu = -1;
    if (mach0 >= 0 && mach1 >= 0) {
        other_cpu = mach1 - mach0 - cpu - (server_cpu > 0 ? server_cpu : 0);
        if (other_cpu < 0)
            other_cpu = 0;
    }
    size_t nl, ne;
    double *lat = merge(cls, false, &nl), *e2e = merge(cls, true, &ne);
    if (cfg.op == OP_LOAD) {
        free(e2e);
        e2e = lat;
        ne = nl;
    }
    printf("{\"label\":\"%s\",\"op\":\"%s\",\"clients\":%d,\"ops\":%ld,\"errors\":%ld,"
           "\"conflicts\":%ld,\"reloads\":%ld,\"seconds\":%.3f,\"req_s\":%.1f,"
           "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"e2e_p50_ms\":%.3f,\"e2e_p99_ms\":%.3f,"
           "\"resp_bytes\":%zu,\"client_cpu_s\":%.3f,\"server_cpu_s\":%.3f,\"other_cpu_s\":%.3f,"
           "\"reconnects\":%ld}\n",
           cfg.label, cfg.op == OP_LOAD ? "load" : "commit", cfg.clients, ops, errors, conflicts,
           reloads, secs, secs > 0 ? (double)ops / secs : 0.0, pct(lat, nl, 0.50) * 1e3,
           pct(lat, nl, 0.99) * 1e3, pct(e2e, ne, 0.50) * 1e3, pct(e2e, ne, 0.99) * 1e3,
           resp_bytes, cpu, server_cpu, other_cpu,
           connects > cfg.clients ? connects - cfg.clients : 0);
    fflush(stdout);
    for (int i = 0; i < cfg.clients; i++) {
        conn_free(&cls[i].conn);
        free(cls[i].x.body);
    }
    if (e2e != lat)
        free(e2e);
    free(lat);
    free(cls);
    pthread_barrier_destroy(&g_barrier);
    return (ops == 0 || errors > 0 || setup_failed) ? 1 : 0;
}
