/* s3load: a small S3 load generator (path-style, AWS SigV4) for bench/run.sh.
 *
 *   s3load --endpoint http://127.0.0.1:9000 --access-key AK --secret-key SK
 *          --bucket B --op put|get --size BYTES --clients N
 *          (--seconds S | --requests N) [--objects K] [--key-ring R]
 *          [--engine raw|curl] [--prefix P] [--region R] [--label L]
 *          [--threads T] [--server-pid PID]
 *
 * Prints one line of JSON: ops, bytes, seconds, MiB/s, req/s, p50/p99 latency
 * and, for the timed window, the CPU time used by the load generator itself,
 * by the server (--server-pid) and by everything else on the machine.
 *
 * Method, chosen so that the client is not the bottleneck:
 *  - one thread per client, each with one keep-alive HTTP/1.1 connection
 *    reused for every request; all clients start together at a barrier after
 *    one untimed request each (connects, warms caches);
 *  - PUT bodies come from one shared, pre-filled random buffer (no file I/O),
 *    sent with "x-amz-content-sha256: UNSIGNED-PAYLOAD" so no body is hashed;
 *    GETs send the SHA-256 of the empty body; GET bodies are received into a
 *    1 MiB buffer and discarded;
 *  - like the AWS SDKs, PUTs of 1 MiB and more send "Expect: 100-continue"
 *    (the body follows the server's 100, or after 1 s without one); smaller
 *    PUTs do not.
 *
 * Two engines, same requests:
 *  - raw (default): SigV4 signed here with OpenSSL (signing key cached per
 *    day), request head + body in one writev straight from the shared buffer,
 *    blocking sockets. About 4x less client CPU per small request than
 *    libcurl, which matters on a 2-core machine shared with the server
 *    (against a trivial server: ~92k 4 KiB GET/s, ~13 us of CPU per request).
 *    With --threads T < clients the timed phase instead runs T epoll loops
 *    that each drive several connections (like wrk): fewer context switches.
 *  - curl: libcurl easy handle per client, signed by libcurl itself
 *    (CURLOPT_AWS_SIGV4 "aws:amz:REGION:s3"); an independent SigV4
 *    implementation to cross-check the server and the raw engine. curl 7.88
 *    signs an explicit x-amz-content-sha256 header and uses its value as the
 *    payload hash (checked against a reference signer). It would also sign an
 *    "Expect:" removal header with an empty value, so to avoid Expect on small
 *    bodies the upload goes through curl's POST path (Expect only >= 1 MiB)
 *    with the method overridden to PUT.
 *
 * What it shares with bench/catalogload.c (options, HTTP/1.1 connection, SigV4,
 * latency and CPU accounting) is in bench/loadgen.h.
 *
 * Built by bench/run.sh with only libcurl and OpenSSL (bench/loadgen.h is found next to it):
 *   gcc -O2 -Wall -Wextra -Werror -std=gnu17 bench/s3load.c -lcurl -lcrypto -lpthread
 * The CMake build also compiles it (linked with floe_core, which it does not use). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strcasestr */
#endif
#define LG_NAME "s3load"
#define LG_HEAD_MAX 2048
#include "loadgen.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>

#define UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
#define EXPECT_THRESHOLD (1024 * 1024)
#define RBUF_SIZE (1024 * 1024)

typedef enum { OP_PUT, OP_GET } op_t;
enum { M_GET, M_PUT, M_HEAD };
static const char *const method_names[] = {"GET", "PUT", "HEAD"};

/* Besides the common options in lg (loadgen.h). */
static struct {
    const char *bucket;
    const char *prefix;
    op_t op;
    size_t size;
    int objects;    /* GET: distinct objects read (default: clients) */
    int key_ring;   /* PUT: keys per client, reused round-robin; 0 = unique */
    bool use_curl;
    bool verbose;
    int threads;     /* timed phase: threads driving the connections */
} cfg;

static char *g_body;              /* shared PUT payload, cfg.size bytes */
static char g_userpwd[512];
static char g_sigv4[128];

/* Result of one request. */
typedef struct {
    long status;        /* HTTP status, -1 on transport error */
    size_t sent;        /* request body bytes sent */
    size_t recvd;       /* response body bytes received */
    int64_t clen;       /* response Content-Length, -1 if absent */
    char err[LG_ERR_MAX]; /* first bytes of the response body, or the error */
    size_t errlen;
} result_t;

static void res_capture(result_t *x, const char *buf, size_t len)
{
    if (x->errlen < sizeof(x->err) - 1) {
        size_t c = sizeof(x->err) - 1 - x->errlen;
        if (c > len)
            c = len;
        memcpy(x->err + x->errlen, buf, c);
        x->errlen += c;
        x->err[x->errlen] = 0;
    }
}

/* ======================= raw engine ======================= */

/* Response body bytes: the start kept in x->err (for error reports), counted. */
static void raw_sink(void *ctx, const char *p, size_t n)
{
    result_t *x = ctx;
    res_capture(x, p, n);
    x->recvd += n;
}

/* Signed request head into r->head; returns its length. */
static size_t build_head(lg_conn_t *r, int method, const char *path, size_t len, bool *expect)
{
    char amzdate[17];
    lg_amzdate(amzdate);
    const char *ph = method == M_PUT ? UNSIGNED_PAYLOAD : EMPTY_SHA256;
    char auth[512];
    lg_sigv4(&r->key, "s3", method_names[method], path, "", ph, amzdate, auth, sizeof(auth));
    *expect = method == M_PUT && len >= EXPECT_THRESHOLD;
    char clen[64] = "";
    if (method == M_PUT)
        snprintf(clen, sizeof(clen), "Content-Length: %zu\r\n", len);
    int hn = snprintf(r->head, sizeof(r->head),
                      "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: s3load\r\n"
                      "x-amz-date: %s\r\nx-amz-content-sha256: %s\r\nAuthorization: %s\r\n"
                      "%s%s\r\n",
                      method_names[method], path, g_hostport, amzdate, ph, auth, clen,
                      *expect ? "Expect: 100-continue\r\n" : "");
    if (hn < 0 || (size_t)hn >= sizeof(r->head))
        die("request head too long");
    return (size_t)hn;
}

/* One attempt. Returns 0 when a final response was read, -1 on a transport
 * error; *retryable is set when nothing at all came back on a reused
 * connection (the server closed it idle), so the request can be resent. */
static int raw_attempt(lg_conn_t *r, int method, const char *path, const char *body, size_t len,
                       result_t *x, bool *retryable)
{
    *retryable = false;
    bool expect;
    size_t hn = build_head(r, method, path, len, &expect);

    /* resendable if the server closed a kept-alive connection before
     * answering anything (idle timeout): PUT and GET are idempotent */
    bool was_reused = r->reused;
    uint64_t rx0 = r->rx;
    struct iovec iov[2] = {{r->head, hn}, {(void *)body, len}};
    int niov = (method == M_PUT && len > 0 && !expect) ? 2 : 1;
    if (lg_send_all(r->fd, iov, niov, x->err) != 0) {
        *retryable = was_reused;
        return -1;
    }
    bool chunked = false, conn_close = false, body_sent = !expect;
    if (expect) {
        /* wait up to 1 s for "100 Continue" (or an early final answer) */
        struct pollfd pfd = {.fd = r->fd, .events = POLLIN};
        int pr = r->roff < r->rlen ? 1 : poll(&pfd, 1, 1000);
        if (pr == 0) {
            iov[1].iov_base = (void *)body;
            iov[1].iov_len = len;
            if (lg_send_all(r->fd, &iov[1], 1, x->err) != 0) {
                *retryable = was_reused && r->rx == rx0;
                return -1;
            }
            body_sent = true;
        }
    }
    for (;;) {
        if (lg_read_head(r, x->err, &x->status, &x->clen, &chunked, &conn_close) != 0) {
            *retryable = was_reused && r->rx == rx0;
            return -1;
        }
        if (x->status >= 100 && x->status < 200) {
            if (x->status == 100 && !body_sent) {
                iov[1].iov_base = (void *)body;
                iov[1].iov_len = len;
                if (lg_send_all(r->fd, &iov[1], 1, x->err) != 0)
                    return -1;
                body_sent = true;
            }
            x->status = 0;
            continue;
        }
        break;
    }
    x->sent = body_sent ? len : 0;
    if (lg_read_body(r, method == M_HEAD, x->status, x->clen, chunked, &conn_close, raw_sink, x,
                     x->err) != 0)
        return -1;
    lg_conn_done(r, conn_close || !body_sent);
    return 0;
}

static long raw_req(lg_conn_t *r, int method, const char *path, const char *body, size_t len,
                    result_t *x)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        memset(x, 0, sizeof(*x));
        x->clen = -1;
        if (r->fd < 0 && lg_conn_connect(r, x->err) != 0)
            return x->status = -1;
        bool retryable;
        if (raw_attempt(r, method, path, body, len, x, &retryable) == 0)
            return x->status;
        lg_conn_close(r);
        if (!retryable)
            break;
    }
    return x->status = -1;
}

/* ======================= curl engine ======================= */

typedef struct {
    CURL *h;
    struct curl_slist *hdr_put, *hdr_get;
    char url[1024];
    const char *src;  /* upload source */
    size_t len, off;
    result_t *x;
} cconn_t;

static size_t curl_read_cb(char *buf, size_t sz, size_t n, void *ud)
{
    cconn_t *c = ud;
    size_t want = sz * n, left = c->len - c->off;
    if (want > left)
        want = left;
    memcpy(buf, c->src + c->off, want);
    c->off += want;
    return want;
}

static int curl_seek_cb(void *ud, curl_off_t off, int origin)
{
    cconn_t *c = ud;
    if (origin != SEEK_SET || off < 0 || (size_t)off > c->len)
        return CURL_SEEKFUNC_FAIL;
    c->off = (size_t)off;
    return CURL_SEEKFUNC_OK;
}

static size_t curl_write_cb(char *buf, size_t sz, size_t n, void *ud)
{
    cconn_t *c = ud;
    size_t len = sz * n;
    res_capture(c->x, buf, len);
    c->x->recvd += len;
    return len;
}

static long curl_req(cconn_t *c, int method, const char *path, const char *body, size_t len,
                     result_t *x)
{
    CURL *h = c->h;
    memset(x, 0, sizeof(*x));
    x->clen = -1;
    c->src = body;
    c->len = len;
    c->off = 0;
    c->x = x;
    snprintf(c->url, sizeof(c->url), "%s%s", lg.endpoint, path);

    curl_easy_reset(h); /* keeps the connection cache */
    curl_easy_setopt(h, CURLOPT_URL, c->url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_USERPWD, g_userpwd);
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, g_sigv4);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_write_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, (long)RBUF_SIZE);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "s3load");
    if (cfg.verbose)
        curl_easy_setopt(h, CURLOPT_VERBOSE, 1L);
    if (method == M_PUT) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, curl_read_cb);
        curl_easy_setopt(h, CURLOPT_READDATA, c);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, curl_seek_cb);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, c);
        curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 2L * 1024L * 1024L);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->hdr_put);
    } else {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        if (method == M_HEAD)
            curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->hdr_get);
    }
    CURLcode rc = curl_easy_perform(h);
    if (rc != CURLE_OK) {
        snprintf(x->err, sizeof(x->err), "curl: %s", curl_easy_strerror(rc));
        return x->status = -1;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &x->status);
    curl_off_t cl = -1;
    curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    x->clen = cl;
    x->sent = c->off;
    return x->status;
}

/* ======================= connection (either engine) ======================= */

typedef struct {
    lg_conn_t raw;
    cconn_t cc;
} conn_t;

static void conn_init(conn_t *c)
{
    memset(c, 0, sizeof(*c));
    if (cfg.use_curl) {
        c->cc.h = curl_easy_init();
        c->cc.hdr_put = curl_slist_append(NULL, "x-amz-content-sha256: " UNSIGNED_PAYLOAD);
        c->cc.hdr_put = curl_slist_append(c->cc.hdr_put, "Content-Type: application/octet-stream");
        c->cc.hdr_get = curl_slist_append(NULL, "x-amz-content-sha256: " EMPTY_SHA256);
        if (!c->cc.h || !c->cc.hdr_put || !c->cc.hdr_get)
            die("curl init failed");
    } else {
        lg_conn_init(&c->raw, RBUF_SIZE);
    }
}

static void conn_free(conn_t *c)
{
    if (cfg.use_curl) {
        curl_slist_free_all(c->cc.hdr_put);
        curl_slist_free_all(c->cc.hdr_get);
        curl_easy_cleanup(c->cc.h);
    } else {
        lg_conn_free(&c->raw);
    }
}

static long do_req(conn_t *c, int method, const char *path, const char *body, size_t len,
                   result_t *x)
{
    if (cfg.use_curl)
        return curl_req(&c->cc, method, path, body, len, x);
    return raw_req(&c->raw, method, path, body, len, x);
}

static void report_error(const char *what, const char *path, const result_t *x)
{
    lg_report_error(what, path, x->status, x->err);
}

/* ======================= clients ======================= */

typedef struct {
    int id;
    pthread_t th;
    conn_t conn;
    long ops, errors;
    uint64_t bytes;
    lat_t lat;    /* seconds per successful timed request */
    double t_end;
    int setup_failed;
    long seq;     /* PUT key sequence */
    int obj;      /* next GET object */
    int consec;   /* consecutive errors */
} client_t;

static void obj_path(char *out, size_t n, int obj)
{
    snprintf(out, n, "/%s/%s/get-%zu-%d", cfg.bucket, cfg.prefix, cfg.size, obj);
}

/* PUT keys: with --key-ring R each client overwrites R fixed keys; otherwise
 * every PUT creates a new key (the run id keeps runs from overwriting). */
static char g_runid[24];

static void put_path(char *out, size_t n, int client, long seq)
{
    if (cfg.key_ring > 0)
        snprintf(out, n, "/%s/%s/put-%zu-ring-c%d-%ld", cfg.bucket, cfg.prefix, cfg.size, client,
                 seq % cfg.key_ring);
    else
        snprintf(out, n, "/%s/%s/put-%zu-%s-c%d-%ld", cfg.bucket, cfg.prefix, cfg.size, g_runid,
                 client, seq);
}

/* Setup, one thread per client: GET clients upload the objects they own
 * (obj % clients == id) unless already there with the right size; then one
 * untimed request on the connection the timed phase will use. */
static void *client_setup(void *arg)
{
    client_t *cl = arg;
    conn_t *c = &cl->conn;
    conn_init(c);
    char path[512];
    result_t x;
    long st;
    if (cfg.op == OP_GET) {
        for (int o = cl->id; o < cfg.objects; o += lg.clients) {
            obj_path(path, sizeof(path), o);
            if (do_req(c, M_HEAD, path, NULL, 0, &x) == 200 && x.clen == (int64_t)cfg.size)
                continue;
            if (do_req(c, M_PUT, path, g_body, cfg.size, &x) != 200) {
                report_error("preload PUT", path, &x);
                cl->setup_failed = 1;
            }
        }
        obj_path(path, sizeof(path), cl->id % cfg.objects);
        st = do_req(c, M_GET, path, NULL, 0, &x);
    } else {
        snprintf(path, sizeof(path), "/%s/%s/warmup-%zu-c%d", cfg.bucket, cfg.prefix,
                 cfg.size, cl->id);
        st = do_req(c, M_PUT, path, g_body, cfg.size, &x);
    }
    if (st != 200) {
        report_error("warm-up", path, &x);
        cl->setup_failed = 1;
    }
    cl->obj = cl->id % cfg.objects;
    return NULL;
}

/* Path and method of the client's next timed request. */
static int next_req(client_t *cl, char *path, size_t n)
{
    if (cfg.op == OP_GET) {
        obj_path(path, n, cl->obj);
        cl->obj = (cl->obj + lg.clients) % cfg.objects;
        return M_GET;
    }
    put_path(path, n, cl->id, cl->seq++);
    return M_PUT;
}

/* Books one finished timed request; false when the client should stop. */
static bool account(client_t *cl, const char *path, result_t *x, double lat)
{
    bool ok = x->status == 200 &&
              (cfg.op == OP_PUT ? x->sent == cfg.size : x->recvd == cfg.size);
    if (ok) {
        cl->ops++;
        cl->bytes += cfg.size;
        lat_push(&cl->lat, lat);
        cl->consec = 0;
        return true;
    }
    cl->errors++;
    if (x->status == 200)
        snprintf(x->err, sizeof(x->err), "short body: %zu of %zu bytes",
                 cfg.op == OP_PUT ? x->sent : x->recvd, cfg.size);
    report_error(cfg.op == OP_GET ? "GET" : "PUT", path, x);
    return ++cl->consec < MAX_CONSEC_ERRORS;
}

/* Timed phase, one thread per client, blocking requests. */
static void *client_timed(void *arg)
{
    client_t *cl = arg;
    char path[512];
    result_t x;
    pthread_barrier_wait(&g_barrier); /* main thread starts the clock */
    pthread_barrier_wait(&g_barrier);
    while (!cl->setup_failed && take_request()) {
        int m = next_req(cl, path, sizeof(path));
        double t0 = now_s();
        do_req(&cl->conn, m, path, m == M_PUT ? g_body : NULL, m == M_PUT ? cfg.size : 0, &x);
        if (!account(cl, path, &x, now_s() - t0))
            break;
    }
    cl->t_end = now_s();
    return NULL;
}

/* ======================= event-loop timed phase (raw, --threads < clients) ==
 * Each thread drives its share of the clients' connections with epoll
 * (level-triggered), like wrk: one request in flight per connection, no
 * pipelining, but far fewer context switches than a thread per connection. */

enum { E_IDLE, E_SEND, E_WAIT100, E_HEAD, E_BODY, E_DONE };

typedef struct {
    client_t *cl;
    int state;
    int method;
    struct iovec iov[2];
    int iovcnt;
    bool body_pending;   /* Expect: body waits for 100 Continue */
    bool sending;        /* iov not fully written */
    bool want_out;       /* EPOLLOUT registered */
    bool conn_close;
    size_t hlen;         /* bytes of response head in rbuf */
    uint64_t remaining;  /* response body bytes still to read */
    double t0, deadline100;
    char path[512];
    result_t x;
} ev_t;

typedef struct {
    int ep;
    ev_t *evs;
    int n, active;
    pthread_t th;
} evloop_t;

static void ev_set_out(evloop_t *L, ev_t *e, bool out)
{
    if (e->want_out == out)
        return;
    struct epoll_event ee = {.events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = e};
    epoll_ctl(L->ep, EPOLL_CTL_MOD, e->cl->conn.raw.fd, &ee);
    e->want_out = out;
}

static int ev_attach(evloop_t *L, ev_t *e)
{
    lg_conn_t *r = &e->cl->conn.raw;
    if (r->fd < 0 && lg_conn_connect(r, e->x.err) != 0)
        return -1;
    fcntl(r->fd, F_SETFL, fcntl(r->fd, F_GETFL) | O_NONBLOCK);
    struct epoll_event ee = {.events = EPOLLIN, .data.ptr = e};
    e->want_out = false;
    return epoll_ctl(L->ep, EPOLL_CTL_ADD, r->fd, &ee);
}

static void ev_start(evloop_t *L, ev_t *e);

static void ev_stop(evloop_t *L, ev_t *e)
{
    if (e->cl->conn.raw.fd >= 0) /* else a server-side close would spin the loop */
        epoll_ctl(L->ep, EPOLL_CTL_DEL, e->cl->conn.raw.fd, NULL);
    if (e->state != E_DONE) {
        e->state = E_DONE;
        L->active--;
        e->cl->t_end = now_s();
    }
}

/* Request finished (ok or not): account, then next request. */
static void ev_finish(evloop_t *L, ev_t *e, bool transport_error)
{
    lg_conn_t *r = &e->cl->conn.raw;
    if (transport_error)
        e->x.status = -1;
    bool go_on = account(e->cl, e->path, &e->x, now_s() - e->t0);
    if (transport_error || e->conn_close || e->sending || e->body_pending) {
        lg_conn_close(r); /* epoll forgets a closed fd */
        if (go_on && ev_attach(L, e) != 0) {
            e->x.status = -1;
            report_error("reconnect", e->path, &e->x);
            go_on = false;
        }
    }
    if (go_on)
        ev_start(L, e);
    else
        ev_stop(L, e);
}

static void ev_send(evloop_t *L, ev_t *e)
{
    lg_conn_t *r = &e->cl->conn.raw;
    while (e->iovcnt > 0) {
        int first = 2 - e->iovcnt; /* iov[0] = head, iov[1] = body */
        struct msghdr m = {.msg_iov = e->iov + first, .msg_iovlen = (size_t)e->iovcnt};
        ssize_t n = sendmsg(r->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                ev_set_out(L, e, true);
                return;
            }
            if (errno == EINTR)
                continue;
            snprintf(e->x.err, sizeof(e->x.err), "send: %s", strerror(errno));
            ev_finish(L, e, true);
            return;
        }
        size_t k = (size_t)n;
        for (int i = first; i < 2; i++) {
            size_t c = k < e->iov[i].iov_len ? k : e->iov[i].iov_len;
            if (i == 1)
                e->x.sent += c;
            e->iov[i].iov_base = (char *)e->iov[i].iov_base + c;
            e->iov[i].iov_len -= c;
            k -= c;
        }
        while (e->iovcnt > 0 && e->iov[2 - e->iovcnt].iov_len == 0)
            e->iovcnt--;
    }
    ev_set_out(L, e, false);
    e->sending = false;
    if (e->state == E_SEND)
        e->state = e->body_pending ? E_WAIT100 : E_HEAD;
    if (e->state == E_WAIT100)
        e->deadline100 = now_s() + 1.0;
}

static void ev_send_body(evloop_t *L, ev_t *e)
{
    e->body_pending = false;
    e->iov[0].iov_len = 0;
    e->iov[1].iov_base = g_body;
    e->iov[1].iov_len = cfg.size;
    e->iovcnt = 1;
    e->sending = true;
    if (e->state == E_WAIT100)
        e->state = E_HEAD;
    ev_send(L, e);
}

static void ev_start(evloop_t *L, ev_t *e)
{
    client_t *cl = e->cl;
    if (!take_request()) {
        ev_stop(L, e);
        return;
    }
    e->method = next_req(cl, e->path, sizeof(e->path));
    memset(&e->x, 0, sizeof(e->x));
    e->x.clen = -1;
    e->t0 = now_s();
    bool expect;
    size_t len = e->method == M_PUT ? cfg.size : 0;
    size_t hn = build_head(&cl->conn.raw, e->method, e->path, len, &expect);
    e->iov[0].iov_base = cl->conn.raw.head;
    e->iov[0].iov_len = hn;
    e->iov[1].iov_base = g_body;
    e->iov[1].iov_len = (len && !expect) ? len : 0;
    e->iovcnt = 2;
    e->body_pending = expect;
    e->sending = true;
    e->conn_close = false;
    e->hlen = 0;
    e->remaining = 0;
    e->state = E_SEND;
    ev_send(L, e);
}

/* Parses a complete head at rbuf[0..hend); returns -1 if unusable. */
static int ev_parse_head(ev_t *e, char *buf, size_t hend)
{
    buf[hend - 2] = 0;
    int minor = 1;
    if (sscanf(buf, "HTTP/1.%d %ld", &minor, &e->x.status) != 2) {
        snprintf(e->x.err, sizeof(e->x.err), "bad status line");
        return -1;
    }
    e->x.clen = -1;
    e->conn_close = minor == 0;
    bool chunked = false;
    for (char *l = strstr(buf, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
        char *h = l + 2;
        if (strncasecmp(h, "content-length:", 15) == 0)
            e->x.clen = strtoll(h + 15, NULL, 10);
        else if (strncasecmp(h, "transfer-encoding:", 18) == 0)
            chunked = true;
        else if (strncasecmp(h, "connection:", 11) == 0) {
            char *eol = strstr(h, "\r\n");
            size_t n = eol ? (size_t)(eol - h) : strlen(h);
            if (memmem(h, n, "close", 5))
                e->conn_close = true;
        }
    }
    if (chunked) {
        snprintf(e->x.err, sizeof(e->x.err), "chunked response (use --threads = --clients)");
        return -1;
    }
    return 0;
}

static void ev_read(evloop_t *L, ev_t *e)
{
    lg_conn_t *r = &e->cl->conn.raw;
    for (;;) {
        if (e->state == E_BODY) {
            size_t want = e->remaining < RBUF_SIZE ? (size_t)e->remaining : RBUF_SIZE;
            ssize_t n = recv(r->fd, r->rbuf, want, MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return;
            if (n <= 0) {
                snprintf(e->x.err, sizeof(e->x.err), "recv: %s",
                         n == 0 ? "connection closed" : strerror(errno));
                ev_finish(L, e, true);
                return;
            }
            if (e->x.status != 200)
                res_capture(&e->x, r->rbuf, (size_t)n);
            e->x.recvd += (size_t)n;
            e->remaining -= (uint64_t)n;
            if (e->remaining == 0) {
                ev_finish(L, e, false);
                return;
            }
            continue;
        }
        /* head (E_SEND with an early answer, E_WAIT100, E_HEAD) */
        ssize_t n = recv(r->fd, r->rbuf + e->hlen, RBUF_SIZE - 1 - e->hlen, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            snprintf(e->x.err, sizeof(e->x.err), "recv: %s",
                     n == 0 ? "connection closed" : strerror(errno));
            ev_finish(L, e, true);
            return;
        }
        e->hlen += (size_t)n;
        for (;;) {
            r->rbuf[e->hlen] = 0;
            char *end = memmem(r->rbuf, e->hlen, "\r\n\r\n", 4);
            if (!end) {
                if (e->hlen >= RBUF_SIZE - 1) {
                    snprintf(e->x.err, sizeof(e->x.err), "response head too large");
                    ev_finish(L, e, true);
                }
                break; /* wait for more */
            }
            size_t hend = (size_t)(end - r->rbuf) + 4;
            if (ev_parse_head(e, r->rbuf, hend) != 0) {
                ev_finish(L, e, true);
                return;
            }
            size_t left = e->hlen - hend;
            memmove(r->rbuf, r->rbuf + hend, left);
            e->hlen = left;
            if (e->x.status >= 100 && e->x.status < 200) {
                if (e->x.status == 100 && e->body_pending)
                    ev_send_body(L, e);
                e->x.status = 0;
                continue;
            }
            /* final answer */
            if (e->method == M_HEAD || e->x.status == 204 || e->x.status == 304)
                e->remaining = 0;
            else if (e->x.clen >= 0)
                e->remaining = (uint64_t)e->x.clen;
            else {
                snprintf(e->x.err, sizeof(e->x.err), "response without Content-Length");
                ev_finish(L, e, true);
                return;
            }
            size_t take = left < e->remaining ? left : (size_t)e->remaining;
            if (e->x.status != 200)
                res_capture(&e->x, r->rbuf, take);
            e->x.recvd += take;
            e->remaining -= take;
            e->hlen = 0;
            if (e->remaining == 0) {
                ev_finish(L, e, false);
                return;
            }
            e->state = E_BODY;
            break;
        }
        if (e->state != E_BODY)
            return; /* level-triggered: epoll reports the rest */
    }
}

static void *evloop_main(void *arg)
{
    evloop_t *L = arg;
    pthread_barrier_wait(&g_barrier);
    pthread_barrier_wait(&g_barrier);
    for (int i = 0; i < L->n; i++) {
        ev_t *e = &L->evs[i];
        if (e->cl->setup_failed || ev_attach(L, e) != 0) {
            e->state = E_IDLE;
            ev_stop(L, e);
            continue;
        }
        ev_start(L, e);
    }
    struct epoll_event evs[64];
    while (L->active > 0) {
        int timeout = 1000;
        double now = now_s();
        for (int i = 0; i < L->n; i++)
            if (L->evs[i].state == E_WAIT100) {
                int ms = (int)((L->evs[i].deadline100 - now) * 1000) + 1;
                if (ms < timeout)
                    timeout = ms < 0 ? 0 : ms;
            }
        int n = epoll_wait(L->ep, evs, 64, timeout);
        if (n < 0 && errno != EINTR)
            die("epoll_wait: %s", strerror(errno));
        for (int i = 0; i < n; i++) {
            ev_t *e = evs[i].data.ptr;
            if (e->state == E_DONE || e->state == E_IDLE)
                continue;
            if ((evs[i].events & EPOLLOUT) && e->sending)
                ev_send(L, e);
            if (e->state != E_DONE && (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
                ev_read(L, e);
        }
        now = now_s();
        for (int i = 0; i < L->n; i++) {
            ev_t *e = &L->evs[i];
            if (e->state == E_WAIT100 && now >= e->deadline100)
                ev_send_body(L, e); /* no 100 Continue within 1 s: send anyway */
        }
        if (lg.seconds > 0 && now > g_deadline + 120) {
            for (int i = 0; i < L->n; i++)
                if (L->evs[i].state != E_DONE) {
                    snprintf(L->evs[i].x.err, sizeof(L->evs[i].x.err), "stalled");
                    L->evs[i].cl->errors++;
                    report_error("request", L->evs[i].path, &L->evs[i].x);
                    ev_stop(L, &L->evs[i]);
                }
        }
    }
    close(L->ep);
    return NULL;
}

static size_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        die("bad size: %s", s);
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end == 'i')
        end++;
    if (*end == 'B')
        end++;
    if (*end)
        die("bad size: %s", s);
    return (size_t)v;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: s3load --endpoint http://HOST:PORT --access-key AK --secret-key SK\n"
            "              --bucket B --op put|get --size BYTES[K|M|G] --clients N\n"
            "              (--seconds S | --requests N) [--objects K] [--key-ring R]\n"
            "              [--engine raw|curl] [--prefix P] [--region R] [--label L]\n"
            "              [--threads T] [--server-pid PID] [--verbose]\n"
            "              [--cpu-group NAME:[+]PID,...]\n");
    exit(2);
}

/* Creates the bucket if missing: 200 (created) or 409 (already exists). */
static void ensure_bucket(void)
{
    conn_t c;
    conn_init(&c);
    char path[512];
    result_t x;
    snprintf(path, sizeof(path), "/%s", cfg.bucket);
    long st = do_req(&c, M_PUT, path, "", 0, &x);
    if (st != 200 && st != 409)
        die("create bucket %s: status %ld: %.400s", cfg.bucket, st, x.err);
    conn_free(&c);
}

static bool safe_name(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '_' || *s == '.' || *s == '/'))
            return false;
    return true;
}

static const char *g_op_arg, *g_engine_arg = "raw"; /* --op, --engine */

/* s3load's own options (the common ones are in loadgen.h). */
static bool own_arg(const char *a, const char *v)
{
    if (strcmp(a, "--bucket") == 0) cfg.bucket = v;
    else if (strcmp(a, "--prefix") == 0) cfg.prefix = v;
    else if (strcmp(a, "--op") == 0) g_op_arg = v;
    else if (strcmp(a, "--engine") == 0) g_engine_arg = v;
    else if (strcmp(a, "--size") == 0) cfg.size = parse_size(v);
    else if (strcmp(a, "--objects") == 0) cfg.objects = atoi(v);
    else if (strcmp(a, "--key-ring") == 0) cfg.key_ring = atoi(v);
    else if (strcmp(a, "--threads") == 0) cfg.threads = atoi(v);
    else return false;
    return true;
}

int main(int argc, char **argv)
{
    cfg.prefix = "s3load";
    lg_parse_args(argc, argv, "--verbose", &cfg.verbose, own_arg, usage);
    const char *op = g_op_arg, *engine = g_engine_arg;
    if (!lg.endpoint || !lg.access_key || !lg.secret_key || !cfg.bucket || !op ||
        cfg.size == 0 || lg.clients < 1 || lg.clients > 1024 ||
        (lg.seconds <= 0) == (lg.requests <= 0))
        usage();
    if (strcmp(op, "put") == 0) cfg.op = OP_PUT;
    else if (strcmp(op, "get") == 0) cfg.op = OP_GET;
    else usage();
    if (strcmp(engine, "curl") == 0) cfg.use_curl = true;
    else if (strcmp(engine, "raw") != 0) usage();
    if (!safe_name(cfg.bucket) || !safe_name(cfg.prefix) || strchr(cfg.bucket, '/'))
        die("bucket and prefix must be made of [A-Za-z0-9._/-] (no URI encoding is done)");
    if (cfg.objects <= 0)
        cfg.objects = lg.clients;
    lg_parse_endpoint();
    {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(g_runid, sizeof(g_runid), "%lx%05lx", (long)ts.tv_sec, (long)getpid() & 0xfffff);
    }
    snprintf(g_userpwd, sizeof(g_userpwd), "%s:%s", lg.access_key, lg.secret_key);
    snprintf(g_sigv4, sizeof(g_sigv4), "aws:amz:%s:s3", lg.region);
    signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        die("curl_global_init failed");

    /* Random payload (xorshift), so nothing along the way can compress it. */
    g_body = malloc(cfg.size);
    if (!g_body)
        die("cannot allocate %zu bytes", cfg.size);
    uint64_t s = 0x9E3779B97F4A7C15ull ^ (uint64_t)cfg.size;
    for (size_t i = 0; i < cfg.size; i += 8) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        size_t n = cfg.size - i < 8 ? cfg.size - i : 8;
        memcpy(g_body + i, &s, n);
    }

    ensure_bucket();

    if (cfg.threads <= 0 || cfg.threads > lg.clients || cfg.use_curl)
        cfg.threads = lg.clients;
    bool evmode = cfg.threads < lg.clients;

    client_t *cls = calloc((size_t)lg.clients, sizeof(client_t));
    if (!cls)
        die("out of memory");
    for (int i = 0; i < lg.clients; i++)
        cls[i].id = i;
    lg_run_each(client_setup, cls, sizeof(*cls), lg.clients); /* setup: a thread per client */
    /* timed phase: a thread per client, or --threads event loops */
    evloop_t *loops = NULL;
    pthread_barrier_init(&g_barrier, NULL, (unsigned)cfg.threads + 1);
    atomic_store(&g_remaining, lg.requests);
    if (evmode) {
        loops = calloc((size_t)cfg.threads, sizeof(evloop_t));
        ev_t *evs = calloc((size_t)lg.clients, sizeof(ev_t));
        if (!loops || !evs)
            die("out of memory");
        /* loop t owns clients t, t+T, t+2T, ... (contiguous in evs) */
        int k = 0;
        for (int t = 0; t < cfg.threads; t++) {
            loops[t].evs = &evs[k];
            for (int i = t; i < lg.clients; i += cfg.threads)
                evs[k++].cl = &cls[i];
            loops[t].n = (int)(&evs[k] - loops[t].evs);
            loops[t].active = loops[t].n;
            loops[t].ep = epoll_create1(EPOLL_CLOEXEC);
            if (loops[t].ep < 0)
                die("epoll_create1: %s", strerror(errno));
            lg_spawn(&loops[t].th, evloop_main, &loops[t]);
        }
    } else {
        for (int i = 0; i < lg.clients; i++)
            lg_spawn(&cls[i].th, client_timed, &cls[i]);
    }
    lg_cpu_mark_t m0;
    double t0 = lg_start_timed(&m0);
    if (evmode) {
        for (int t = 0; t < cfg.threads; t++)
            pthread_join(loops[t].th, NULL);
        free(loops[0].evs);
        free(loops);
    } else {
        for (int i = 0; i < lg.clients; i++)
            pthread_join(cls[i].th, NULL);
    }

    long ops = 0, errors = 0, connects = 0;
    uint64_t bytes = 0;
    double t_end = t0;
    int setup_failed = 0;
    for (int i = 0; i < lg.clients; i++) {
        ops += cls[i].ops;
        errors += cls[i].errors;
        connects += cfg.use_curl ? 0 : cls[i].conn.raw.connects;
        bytes += cls[i].bytes;
        setup_failed |= cls[i].setup_failed;
        if (cls[i].t_end > t_end)
            t_end = cls[i].t_end;
    }
    lg_cpu_t cpu = lg_cpu_since(&m0);
    double secs = t_end - t0;
    lat_t lat = {0};
    for (int i = 0; i < lg.clients; i++)
        lat_move(&lat, &cls[i].lat);
    lat_sort(&lat);

    printf("{\"label\":\"%s\",\"engine\":\"%s\",\"op\":\"%s\",\"size\":%zu,\"clients\":%d,"
           "\"ops\":%ld,\"errors\":%ld,\"bytes\":%" PRIu64 ",\"seconds\":%.3f,"
           "\"mib_s\":%.1f,\"req_s\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f",
           lg.label, cfg.use_curl ? "curl" : "raw", cfg.op == OP_GET ? "get" : "put", cfg.size,
           lg.clients, ops, errors, bytes, secs,
           secs > 0 ? (double)bytes / 1048576.0 / secs : 0.0, secs > 0 ? (double)ops / secs : 0.0,
           lat_pct(&lat, 0.50) * 1e3, lat_pct(&lat, 0.99) * 1e3);
    lg_print_tail(&cpu, connects);

    for (int i = 0; i < lg.clients; i++)
        conn_free(&cls[i].conn);
    free(lat.v);
    free(cls);
    free(g_body);
    pthread_barrier_destroy(&g_barrier);
    curl_global_cleanup();
    return (ops == 0 || errors > 0 || setup_failed) ? 1 : 0;
}
