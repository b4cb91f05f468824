/* HTTP/1.1 server: a strict request-head parser, a chunked decoder, and a
 * server that parks idle connections in a poller and serves requests on
 * worker threads (see the model in http.h).
 *
 * Threads: one poller thread per server waits in epoll on the listening
 * socket, a wake eventfd and every parked connection: a new one that has not
 * sent a whole head yet, or a keep-alive one between requests. It accepts,
 * reads head bytes without blocking and, once a whole head is buffered, puts
 * the connection on the run queue. Workers (detached threads, 256 KiB stacks,
 * started on demand, leaving after WORKER_IDLE_MS idle) take connections off
 * the queue and run the request loop with blocking-style I/O; when no next
 * head is buffered (after waiting FL_HTTP_KEEPALIVE_LINGER_MS on an idle
 * connection, so a busy client does not pay a hand-off per request) the
 * connection goes back to the poller. Idle and slow-head connections thus
 * cost a buffer, not a thread.
 *
 * Caps: FL_HTTP_MAX_CONNS_PER_ADDR per client address (IPv6: per /64) and a
 * total sized from RLIMIT_NOFILE. A newcomer over either cap takes the place of
 * the oldest parked connection (of its own address, or of the address holding
 * the most); only when none is parked does it get 503 SlowDown (retried by
 * SDKs). At most FL_HTTP_MAX_ACTIVE_PER_ADDR connections of one address are
 * mid-request on workers; further ready ones of that address wait their turn,
 * so slow bodies from one address cannot take every thread.
 *
 * Sockets are non-blocking; every wait is a poll() with a deadline: idle
 * keep-alive (FL_HTTP_IDLE_TIMEOUT_MS) and the whole head
 * (FL_HTTP_HEAD_TIMEOUT_MS) in the poller (1 s ticks), body bytes
 * (FL_HTTP_READ_TIMEOUT_MS between bytes, and a total of FL_HTTP_BODY_GRACE_MS
 * + length / FL_HTTP_BODY_MIN_RATE) and send progress (FL_HTTP_WRITE_TIMEOUT_MS).
 *
 * Per connection one allocation holds the read buffer, the parsed request and
 * the handler's response headers, so a request allocates nothing. Response
 * headers go out in one sendmsg with the first body bytes (or with MSG_MORE
 * ahead of sendfile). Bytes read past the end of a request stay buffered for
 * the next (pipelining). After the handler returns, an unread body of up to
 * FL_HTTP_DRAIN_MAX_BYTES is drained; more, or a 100-continue never granted,
 * closes the connection (after a short lingering read so the client sees the
 * response rather than a reset). "100 Continue" is sent only by the handler's
 * first fl_http_body_read, so a request refused from its head never gets one.
 *
 * Locking: one mutex per server guards the connection states and lists
 * (parked, waiting per address, run queue); a parked connection belongs to
 * the poller, a queued or active one to the worker that takes it. The poller
 * frees connections it closes only after the current event batch.
 *
 * Stop: the poller is woken, closes the parked connections and exits; the
 * listener is closed; in-flight requests (and those queued) get timeout_ms,
 * then their sockets are shut down too; stop returns when every connection is
 * closed and every worker has left. */
#include "net/http.h"
#include "net/metrics.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define RBUF_BYTES (FL_HTTP_MAX_HEAD_BYTES + 16 * 1024) /* a full head plus body room */
#define BODY_ROOM_MIN (16 * 1024)
#define RESP_HDR_BYTES (16 * 1024)   /* handler-set response headers */
#define THREAD_STACK (256 * 1024)
#define DIRECT_READ_MIN 16384        /* body reads this large bypass the read buffer */

/* ------------------------------------------------------------------------ */
/* Request head parser                                                       */

static bool is_tchar(unsigned char c)
{
    static const char extra[] = "!#$%&'*+-.^_`|~";
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    return c && memchr(extra, c, sizeof extra - 1) != NULL;
}

static bool is_ows(char c) { return c == ' ' || c == '\t'; }

static bool name_is(const fl_http_header_t *h, const char *lname, size_t n)
{
    return h->name_len == n && memcmp(h->name, lname, n) == 0;
}

/* Request line in p[0..n) (without the line end). complete=false: the line is
 * still arriving; only report errors already certain (method/target too long). */
static int parse_reqline(char *p, size_t n, bool complete, fl_http_req_t *req)
{
    size_t i = 0;
    while (i < n && is_tchar((unsigned char)p[i])) i++;
    if (i >= sizeof req->method) return -400;
    if (i == n) return complete ? -400 : 0;
    if (i == 0 || p[i] != ' ') return -400;
    memcpy(req->method, p, i);
    req->method[i] = 0;
    size_t t0 = ++i;
    while (i < n && (unsigned char)p[i] > 0x20 && p[i] != 0x7f) i++;
    if (i - t0 > FL_HTTP_MAX_TARGET_BYTES) return -414;
    if (i == n) return complete ? -400 : 0;
    if (i == t0 || p[i] != ' ') return -400;
    req->target = p + t0;
    req->target_len = i - t0;
    i++;
    if (!complete) return 0;
    if (n - i != 8 || memcmp(p + i, "HTTP/", 5) != 0 || p[i + 5] < '0' || p[i + 5] > '9' ||
        p[i + 6] != '.' || p[i + 7] < '0' || p[i + 7] > '9')
        return -400;
    if (p[i + 5] != '1') return -505;
    req->version_minor = p[i + 7] == '0' ? 0 : 1;
    return 0;
}

/* origin-form, absolute-form ("http://host/p") or "*"; split path/query. */
static int split_target(fl_http_req_t *req)
{
    const char *t = req->target;
    size_t n = req->target_len;
    const char *q = memchr(t, '?', n);
    size_t plen = q ? (size_t)(q - t) : n;
    req->query = q ? q + 1 : NULL;
    req->query_len = q ? n - plen - 1 : 0;
    if (t[0] == '/' || (n == 1 && t[0] == '*')) {
        req->path = t;
        req->path_len = plen;
        return 0;
    }
    size_t s = 0;
    if (plen >= 7 && fl_slice_ieq(fl_slice(t, 7), "http://")) s = 7;
    else if (plen >= 8 && fl_slice_ieq(fl_slice(t, 8), "https://")) s = 8;
    else return -400;
    const char *slash = memchr(t + s, '/', plen - s);
    if (slash == t + s) return -400; /* empty authority */
    if (slash) {
        req->path = slash;
        req->path_len = plen - (size_t)(slash - t);
    } else {
        req->path = "/";
        req->path_len = 1;
    }
    return 0;
}

static int parse_content_length(const fl_http_header_t *h, fl_http_req_t *req)
{
    if (h->value_len == 0) return -400;
    int64_t v = 0;
    for (size_t i = 0; i < h->value_len; i++) {
        char c = h->value[i];
        if (c < '0' || c > '9') return -400;
        if (v > (INT64_MAX - (c - '0')) / 10) return -400;
        v = v * 10 + (c - '0');
    }
    if (req->content_length >= 0 && req->content_length != v) return -400;
    req->content_length = v;
    return 0;
}

/* Comma-separated list: calls fn on each non-empty trimmed element. */
#define FOR_EACH_ELEMENT(h, el, body)                                                 \
    do {                                                                              \
        const char *p_ = (h)->value, *e_ = (h)->value + (h)->value_len;               \
        while (p_ < e_) {                                                             \
            const char *c_ = memchr(p_, ',', (size_t)(e_ - p_));                      \
            if (!c_) c_ = e_;                                                         \
            fl_slice_t el = fl_slice_trim(fl_slice(p_, (size_t)(c_ - p_)));           \
            if (el.len) { body; }                                                     \
            p_ = c_ + 1;                                                              \
        }                                                                             \
    } while (0)

static int head_semantics(fl_http_req_t *req)
{
    int nhost = 0;
    bool te = false, conn_close = false, conn_ka = false;
    for (size_t i = 0; i < req->nheaders; i++) {
        const fl_http_header_t *h = &req->headers[i];
        int r = 0;
        if (name_is(h, "content-length", 14)) {
            r = parse_content_length(h, req);
        } else if (name_is(h, "transfer-encoding", 17)) {
            size_t nel = 0;
            te = true;
            FOR_EACH_ELEMENT(h, el, {
                nel++;
                if (!fl_slice_ieq(el, "chunked")) return -501;
                if (req->chunked) return -400; /* chunked twice */
                req->chunked = true;
            });
            if (!nel) return -400;
        } else if (name_is(h, "connection", 10)) {
            FOR_EACH_ELEMENT(h, el, {
                if (fl_slice_ieq(el, "close")) conn_close = true;
                else if (fl_slice_ieq(el, "keep-alive")) conn_ka = true;
            });
        } else if (name_is(h, "expect", 6)) {
            if (fl_slice_ieq(fl_slice(h->value, h->value_len), "100-continue"))
                req->expect_continue = true;
        } else if (name_is(h, "host", 4)) {
            nhost++;
        }
        if (r) return r;
    }
    if (te && (req->content_length >= 0 || req->version_minor == 0)) return -400;
    if (nhost > 1 || (req->version_minor == 1 && nhost == 0)) return -400;
    if (req->version_minor == 0) req->expect_continue = false; /* RFC 9110 10.1.1 */
    req->keep_alive = req->version_minor == 1 ? !conn_close : (conn_ka && !conn_close);
    return 0;
}

int fl_http_parse_head(char *buf, size_t len, fl_http_req_t *req)
{
    size_t pos = 0;
    int r;
    req->method[0] = 0;
    req->target = req->path = req->query = NULL;
    req->target_len = req->path_len = req->query_len = 0;
    req->version_minor = 1;
    req->nheaders = 0;
    req->content_length = -1;
    req->chunked = req->expect_continue = req->keep_alive = false;

    /* RFC 9112 2.2: ignore empty lines before the request line. */
    while (pos < len && (buf[pos] == '\n' || buf[pos] == '\r')) {
        if (buf[pos] == '\r') {
            if (pos + 1 == len) break;
            if (buf[pos + 1] != '\n') return -400;
            pos++;
        }
        pos++;
    }
    if (pos >= FL_HTTP_MAX_HEAD_BYTES) return -431;

    const char *nl = memchr(buf + pos, '\n', len - pos);
    if (!nl) {
        size_t e = len;
        if (e > pos && buf[e - 1] == '\r') e--;
        r = parse_reqline(buf + pos, e - pos, false, req);
        if (r) return r;
        return len >= FL_HTTP_MAX_HEAD_BYTES ? -431 : 0;
    }
    size_t e = (size_t)(nl - buf);
    if (e + 1 > FL_HTTP_MAX_HEAD_BYTES) {
        r = parse_reqline(buf + pos, e - pos, false, req);
        return r ? r : -431;
    }
    if (e > pos && buf[e - 1] == '\r') e--;
    r = parse_reqline(buf + pos, e - pos, true, req);
    if (r) return r;
    pos = (size_t)(nl - buf) + 1;

    for (;;) {
        nl = memchr(buf + pos, '\n', len - pos);
        if (!nl) return len >= FL_HTTP_MAX_HEAD_BYTES ? -431 : 0;
        size_t end = (size_t)(nl - buf) + 1;
        if (end > FL_HTTP_MAX_HEAD_BYTES) return -431;
        e = end - 1;
        if (e > pos && buf[e - 1] == '\r') e--;
        if (e == pos) { pos = end; break; }
        if (is_ows(buf[pos])) return -400; /* obs-fold (or whitespace before the first name) */
        if (req->nheaders == FL_HTTP_MAX_HEADERS) return -431;
        size_t i = pos;
        for (; i < e && is_tchar((unsigned char)buf[i]); i++)
            if (buf[i] >= 'A' && buf[i] <= 'Z') buf[i] = (char)(buf[i] + 32);
        if (i == pos || i == e || buf[i] != ':') return -400;
        size_t v = i + 1;
        for (size_t j = v; j < e; j++) {
            unsigned char c = (unsigned char)buf[j];
            if ((c < 0x20 && c != '\t') || c == 0x7f) return -400;
        }
        while (v < e && is_ows(buf[v])) v++;
        size_t ve = e;
        while (ve > v && is_ows(buf[ve - 1])) ve--;
        fl_http_header_t *h = &req->headers[req->nheaders++];
        h->name = buf + pos;
        h->name_len = i - pos;
        h->value = buf + v;
        h->value_len = ve - v;
        pos = end;
    }
    if ((r = split_target(req)) != 0) return r;
    if ((r = head_semantics(req)) != 0) return r;
    return (int)pos;
}

const fl_http_header_t *fl_http_header(const fl_http_req_t *req, const char *lname)
{
    size_t n = strlen(lname);
    for (size_t i = 0; i < req->nheaders; i++)
        if (name_is(&req->headers[i], lname, n)) return &req->headers[i];
    return NULL;
}

fl_slice_t fl_http_header_val(const fl_http_req_t *req, const char *lname)
{
    const fl_http_header_t *h = fl_http_header(req, lname);
    return h ? fl_slice(h->value, h->value_len) : fl_slice(NULL, 0);
}

/* ------------------------------------------------------------------------ */
/* Chunked decoder                                                           */

enum { CH_SIZE0, CH_SIZE, CH_EXT, CH_SIZE_LF, CH_DATA, CH_DATA_CR, CH_DATA_LF,
       CH_TRAILER0, CH_TRAILER, CH_END_LF, CH_DONE };

void fl_chunked_init(fl_chunked_t *d) { *d = (fl_chunked_t){ .state = CH_SIZE0 }; }

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

long fl_chunked_feed(fl_chunked_t *d, const char *in, size_t inlen, const char **out, size_t *outlen)
{
    size_t i = 0;
    *out = NULL;
    *outlen = 0;
    while (i < inlen && !d->done) {
        char c = in[i];
        switch (d->state) {
        case CH_SIZE0:
        case CH_SIZE: {
            int h = hexval(c);
            if (h >= 0) {
                if (d->remaining > (UINT64_MAX >> 4)) return FL_ERR_PROTO;
                d->remaining = d->remaining << 4 | (uint64_t)h;
                d->state = CH_SIZE;
            } else if (d->state == CH_SIZE0) {
                return FL_ERR_PROTO;
            } else if (c == ';' || c == ' ' || c == '\t') {
                d->state = CH_EXT;
            } else if (c == '\r') {
                d->state = CH_SIZE_LF;
            } else if (c == '\n') {
                d->line_len = 0;
                d->state = d->remaining ? CH_DATA : CH_TRAILER0;
            } else {
                return FL_ERR_PROTO;
            }
            break;
        }
        case CH_EXT: /* chunk extensions (and BWS): tolerated, skipped */
            if (c == '\r') d->state = CH_SIZE_LF;
            else if (c == '\n') {
                d->line_len = 0;
                d->state = d->remaining ? CH_DATA : CH_TRAILER0;
            } else if ((unsigned char)c < 0x20 && c != '\t') return FL_ERR_PROTO;
            break;
        case CH_SIZE_LF:
            if (c != '\n') return FL_ERR_PROTO;
            d->line_len = 0;
            d->state = d->remaining ? CH_DATA : CH_TRAILER0;
            break;
        case CH_DATA: {
            size_t n = inlen - i;
            if (n > d->remaining) n = (size_t)d->remaining;
            *out = in + i;
            *outlen = n;
            d->remaining -= n;
            if (!d->remaining) d->state = CH_DATA_CR;
            return (long)(i + n);
        }
        case CH_DATA_CR:
            if (c == '\n') d->state = CH_SIZE0; /* bare LF tolerated */
            else if (c == '\r') d->state = CH_DATA_LF;
            else return FL_ERR_PROTO;
            break;
        case CH_DATA_LF:
            if (c != '\n') return FL_ERR_PROTO;
            d->state = CH_SIZE0;
            break;
        case CH_TRAILER0:
            if (c == '\n') { d->done = true; d->state = CH_DONE; }
            else if (c == '\r') d->state = CH_END_LF;
            else d->state = CH_TRAILER;
            break;
        case CH_TRAILER: /* trailer fields: read and discarded */
            if (c == '\n') d->state = CH_TRAILER0;
            break;
        case CH_END_LF:
            if (c != '\n') return FL_ERR_PROTO;
            d->done = true;
            d->state = CH_DONE;
            break;
        default:
            return FL_ERR_PROTO;
        }
        if (d->state == CH_SIZE || d->state == CH_EXT || d->state == CH_SIZE_LF) {
            if (++d->line_len > FL_HTTP_MAX_CHUNK_LINE) return FL_ERR_TOO_LARGE;
        } else if (d->state == CH_TRAILER || d->state == CH_TRAILER0 || d->state == CH_END_LF) {
            if (++d->trailer_len > FL_HTTP_MAX_TRAILER_BYTES) return FL_ERR_TOO_LARGE;
        }
        if (d->state == CH_SIZE0) d->line_len = 0;
        i++;
    }
    return (long)i;
}

/* ------------------------------------------------------------------------ */
/* Server and connection state                                               */

enum { BODY_NONE, BODY_LENGTH, BODY_CHUNKED };

/* Where a connection is; every change happens under srv->mu. */
enum {
    ST_PARKED,   /* idle or head incomplete: in epoll, owned by the poller */
    ST_WAITING,  /* head complete, its address at FL_HTTP_MAX_ACTIVE_PER_ADDR: in addr->waitq */
    ST_QUEUED,   /* in the run queue, counted active */
    ST_ACTIVE,   /* owned by a worker thread */
    ST_DEAD,     /* closed by the poller; freed after the current event batch */
};

#define ADDR_BUCKETS 1024        /* power of two */
#define WORKER_IDLE_MS 10000     /* an idle worker thread exits after this */
#define POLLER_TICK_MS 1000      /* deadlines of parked connections are checked this often */

typedef struct conn_list { fl_http_conn_t *head, *tail; } conn_list_t;

/* Connections of one client address (an IPv4 address or an IPv6 /64). */
typedef struct addr_ent {
    struct addr_ent *hnext;
    uint8_t key[16];
    int nconns;                  /* all states */
    int nactive;                 /* ST_QUEUED + ST_ACTIVE */
    conn_list_t parked;          /* oldest first */
    conn_list_t waitq;           /* ST_WAITING, first come first served */
} addr_ent_t;

struct fl_http_server {
    fl_http_server_cfg_t cfg;
    char *name;
    int lfd;
    int port;
    int ep;                      /* epoll: listener, wake eventfd, parked connections */
    int wake;                    /* eventfd: wakes the poller on stop */
    pthread_t poller;
    int max_conns;               /* total cap, sized from RLIMIT_NOFILE */
    pthread_mutex_t mu;
    pthread_cond_t cv;           /* signalled when nconns or nthreads drop */
    pthread_cond_t work_cv;      /* run queue has work (or stopping) */
    int nconns, nparked, nactive;
    fl_http_conn_t *conns;       /* live connections (under mu) */
    addr_ent_t *addrs[ADDR_BUCKETS];
    conn_list_t runq;
    int runq_len;
    int nthreads, nidle;         /* worker threads; of which waiting for work */
    fl_http_conn_t *graveyard;   /* poller only: closed during this event batch */
    pthread_attr_t thread_attr;
    atomic_bool stopping;
    fl_metrics_t *metrics;
};

struct fl_http_conn {
    fl_http_server_t *srv;
    fl_http_conn_t *prev, *next; /* server list, under srv->mu */
    fl_http_conn_t *qprev, *qnext; /* the one conn_list it is on (per state), under srv->mu */
    addr_ent_t *addr;
    int state;
    bool in_epoll;
    int fd;
    int64_t idle_deadline;       /* parked without a byte: closed at this time */
    int64_t head_deadline;       /* first byte of the head seen: 408 at this time; 0 none */
    size_t scanned;              /* poller: head bytes already searched for the end */
    bool head_expired;           /* the poller gave up waiting for the rest of the head */
    char peer[64];
    char rid[17];
    /* read buffer: bytes [rstart, rend) are unconsumed; [0, pin) holds the
     * current request's head, which must not move while the handler runs */
    size_t rstart, rend, pin;
    size_t head_len;
    /* current request */
    fl_http_req_t req;
    bool is_head;
    int body_mode;
    int64_t body_left;           /* BODY_LENGTH: bytes still to read */
    int64_t body_consumed;       /* decoded bytes delivered */
    uint64_t body_raw;           /* raw body bytes consumed off the socket */
    int64_t body_t0;             /* first body read (monotonic ms), 0 before */
    fl_chunked_t ch;
    bool body_done, body_broken;
    bool continue_pending;
    bool draining;               /* after the handler: bytes are discarded */
    /* response */
    int status;
    bool resp_started;           /* headers built; maybe not yet flushed */
    bool hdr_pending;            /* built but unsent (sent with the first body bytes) */
    bool hdr_sent;
    bool resp_failed;            /* a send failed: close */
    bool close_after;
    bool closing;                /* decided at header time: Connection: close */
    int64_t resp_len;            /* declared body length, -1 none */
    int64_t resp_body_sent;
    size_t hdr_len;              /* handler headers in hdr[] */
    bool hdr_overflow;
    size_t pre_len;              /* assembled status line + standard headers in pre[] */
    uint64_t bytes_out;
    const char *op;
    char pre[512];
    char hdr[RESP_HDR_BYTES];
    char rbuf[RBUF_BYTES];
};

/* ---- request ids ---- */

static uint64_t rid_prefix;
static _Atomic uint64_t rid_counter;
static pthread_once_t rid_once = PTHREAD_ONCE_INIT;

static void rid_init(void)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) r = (uint64_t)fl_now_ms() ^ (uint64_t)getpid() << 32;
    rid_prefix = (r & 0xffffff) << 40; /* 24 random bits + 40-bit counter */
}

static void new_rid(fl_http_conn_t *c)
{
    uint64_t v = rid_prefix | (atomic_fetch_add_explicit(&rid_counter, 1, memory_order_relaxed) &
                               ((1ULL << 40) - 1));
    static const char hx[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--, v >>= 4) c->rid[i] = hx[v & 15];
    c->rid[16] = 0;
}

/* ---- socket I/O with deadlines ---- */

/* Waits for ev on fd until deadline (monotonic ms). 1 ready, 0 timeout, <0 error. */
static int wait_fd(int fd, short ev, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - fl_mono_ms();
        if (left <= 0) return 0;
        struct pollfd p = { .fd = fd, .events = ev };
        int r = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
        if (r > 0) return 1;
        if (r < 0 && errno != EINTR) return -1;
    }
}

/* Reads into p; >0 bytes, or FL_ERR_CLOSED / FL_ERR_TIMEOUT / FL_ERR_IO. */
static ssize_t recv_some(fl_http_conn_t *c, void *p, size_t n, int64_t deadline)
{
    for (;;) {
        ssize_t r = recv(c->fd, p, n, 0);
        if (r > 0) return r;
        if (r == 0) return FL_ERR_CLOSED;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return errno == ECONNRESET ? FL_ERR_CLOSED : FL_ERR_IO;
        int w = wait_fd(c->fd, POLLIN, deadline);
        if (w == 0) return FL_ERR_TIMEOUT;
        if (w < 0) return FL_ERR_IO;
    }
}

/* Fills the read buffer (after compacting) with whatever is available. */
static ssize_t fill(fl_http_conn_t *c, int64_t deadline)
{
    if (c->rstart == c->rend) c->rstart = c->rend = c->pin;
    if (c->rend == RBUF_BYTES && c->rstart > c->pin) {
        memmove(c->rbuf + c->pin, c->rbuf + c->rstart, c->rend - c->rstart);
        c->rend -= c->rstart - c->pin;
        c->rstart = c->pin;
    }
    if (c->rend == RBUF_BYTES) return FL_ERR_TOO_LARGE;
    ssize_t r = recv_some(c, c->rbuf + c->rend, RBUF_BYTES - c->rend, deadline);
    if (r > 0) c->rend += (size_t)r;
    return r;
}

/* Sends the iovecs completely (modified in place). */
static fl_err_t send_all(fl_http_conn_t *c, struct iovec *iov, int niov, int flags)
{
    while (niov > 0) {
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)niov };
        ssize_t r = sendmsg(c->fd, &mh, MSG_NOSIGNAL | flags);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                int w = wait_fd(c->fd, POLLOUT, fl_mono_ms() + FL_HTTP_WRITE_TIMEOUT_MS);
                if (w == 0) { c->resp_failed = true; return FL_ERR_TIMEOUT; }
                if (w < 0) { c->resp_failed = true; return FL_ERR_IO; }
                continue;
            }
            c->resp_failed = true;
            return errno == EPIPE || errno == ECONNRESET ? FL_ERR_CLOSED : FL_ERR_IO;
        }
        c->bytes_out += (uint64_t)r;
        size_t left = (size_t)r;
        while (niov > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            niov--;
        }
        if (niov > 0) {
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return FL_OK;
}

/* ---- response assembly ---- */

static const char *reason(int s)
{
    switch (s) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 428: return "Precondition Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

/* Cached per thread: one formatting per second. */
static const char *http_date(void)
{
    static __thread char buf[32];
    static __thread int64_t sec = -1;
    int64_t now = fl_now_ms();
    if (now / 1000 != sec) {
        sec = now / 1000;
        fl_time_rfc1123(now, buf, sizeof buf);
    }
    return buf;
}

static bool body_unread(const fl_http_conn_t *c)
{
    return c->body_mode != BODY_NONE && !c->body_done;
}

/* Builds the status line and standard headers into c->pre; decides close. */
static void build_head(fl_http_conn_t *c, int64_t len)
{
    fl_http_server_t *s = c->srv;
    if (!c->status) c->status = 200;
    bool close = c->close_after || !c->req.keep_alive || atomic_load(&s->stopping) ||
                 c->body_broken;
    if (body_unread(c)) {
        if (c->continue_pending) close = true; /* the client may never send it */
        else if (c->body_mode == BODY_LENGTH && c->body_left > FL_HTTP_DRAIN_MAX_BYTES) close = true;
    }
    c->closing = close;
    c->resp_len = len;
    bool no_len = c->status == 204 || c->status == 304 || c->status < 200;
    int n = snprintf(c->pre, sizeof c->pre, "HTTP/1.1 %d %s\r\nDate: %s\r\nServer: floe\r\n",
                     c->status, reason(c->status), http_date());
    if (!no_len && n > 0)
        n += snprintf(c->pre + n, sizeof c->pre - (size_t)n, "Content-Length: %lld\r\n", (long long)len);
    if (close)
        n += snprintf(c->pre + n, sizeof c->pre - (size_t)n, "Connection: close\r\n");
    else if (c->req.version_minor == 0)
        n += snprintf(c->pre + n, sizeof c->pre - (size_t)n, "Connection: keep-alive\r\n");
    c->pre_len = (size_t)n;
    c->resp_started = true;
    c->hdr_pending = true;
}

/* Sends pending headers with body bytes p[0..n) in one sendmsg. */
static fl_err_t flush_with(fl_http_conn_t *c, const void *p, size_t n, int flags)
{
    struct iovec iov[4];
    int k = 0;
    if (c->hdr_pending) {
        iov[k++] = (struct iovec){ c->pre, c->pre_len };
        if (c->hdr_len) iov[k++] = (struct iovec){ c->hdr, c->hdr_len };
        iov[k++] = (struct iovec){ (void *)"\r\n", 2 };
        c->hdr_pending = false;
        c->hdr_sent = true;
    }
    if (n) iov[k++] = (struct iovec){ (void *)p, n };
    if (!k) return FL_OK;
    return send_all(c, iov, k, flags);
}

void fl_http_resp_status(fl_http_conn_t *c, int status)
{
    if (!c->resp_started) c->status = status;
}

static bool hdr_safe(const char *s)
{
    for (; *s; s++)
        if (*s == '\r' || *s == '\n') return false;
    return true;
}

void fl_http_resp_header(fl_http_conn_t *c, const char *name, const char *value)
{
    if (c->resp_started) return;
    if (!hdr_safe(name) || !hdr_safe(value)) {
        fl_warn("http %s: dropped response header %s with CR/LF", c->srv->name, name);
        return;
    }
    size_t nl = strlen(name), vl = strlen(value);
    if (c->hdr_len + nl + vl + 4 > sizeof c->hdr) {
        if (!c->hdr_overflow) fl_warn("http %s: response headers over %d bytes, dropped %s",
                                      c->srv->name, RESP_HDR_BYTES, name);
        c->hdr_overflow = true;
        return;
    }
    char *p = c->hdr + c->hdr_len;
    memcpy(p, name, nl);
    p[nl] = ':';
    p[nl + 1] = ' ';
    memcpy(p + nl + 2, value, vl);
    p[nl + 2 + vl] = '\r';
    p[nl + 3 + vl] = '\n';
    c->hdr_len += nl + vl + 4;
}

void fl_http_resp_headerf(fl_http_conn_t *c, const char *name, const char *fmt, ...)
{
    char v[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof v) {
        fl_warn("http %s: response header %s too long, dropped", c->srv->name, name);
        return;
    }
    fl_http_resp_header(c, name, v);
}

static bool no_body(const fl_http_conn_t *c)
{
    return c->is_head || c->status == 204 || c->status == 304 || c->status < 200;
}

fl_err_t fl_http_resp_send(fl_http_conn_t *c, const void *body, size_t len)
{
    if (c->resp_started) return FL_ERR_INVALID;
    build_head(c, (int64_t)len);
    if (no_body(c)) len = 0;
    c->resp_body_sent = (int64_t)len;
    if (no_body(c)) c->resp_len = 0;
    return flush_with(c, body, len, 0);
}

fl_err_t fl_http_resp_begin(fl_http_conn_t *c, int64_t len)
{
    if (c->resp_started || len < 0) return FL_ERR_INVALID;
    build_head(c, len);
    if (no_body(c)) c->resp_len = 0;
    if (c->resp_len == 0) return flush_with(c, NULL, 0, 0);
    return FL_OK;
}

fl_err_t fl_http_resp_write(fl_http_conn_t *c, const void *p, size_t n)
{
    if (!c->resp_started) return FL_ERR_INVALID;
    if (c->resp_failed) return FL_ERR_IO;
    if (no_body(c)) return FL_OK;
    if ((int64_t)n > c->resp_len - c->resp_body_sent) return FL_ERR_INVALID;
    c->resp_body_sent += (int64_t)n;
    return flush_with(c, p, n, 0);
}

fl_err_t fl_http_resp_sendfile(fl_http_conn_t *c, int fd, int64_t off, int64_t len)
{
    if (!c->resp_started || off < 0 || len < 0) return FL_ERR_INVALID;
    if (c->resp_failed) return FL_ERR_IO;
    if (no_body(c)) return FL_OK;
    if (len > c->resp_len - c->resp_body_sent) return FL_ERR_INVALID;
    fl_err_t e = FL_OK;
    if (c->hdr_pending && (e = flush_with(c, NULL, 0, len ? MSG_MORE : 0)) != FL_OK) return e;
    off_t o = (off_t)off;
    while (len > 0) {
        size_t n = len > (1 << 30) ? (size_t)1 << 30 : (size_t)len;
        ssize_t r = sendfile(c->fd, fd, &o, n);
        if (r > 0) {
            len -= r;
            c->resp_body_sent += r;
            c->bytes_out += (uint64_t)r;
            continue;
        }
        if (r == 0) { e = FL_ERR_INCOMPLETE; break; } /* file shorter than promised */
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int w = wait_fd(c->fd, POLLOUT, fl_mono_ms() + FL_HTTP_WRITE_TIMEOUT_MS);
            if (w > 0) continue;
            e = w == 0 ? FL_ERR_TIMEOUT : FL_ERR_IO;
            break;
        }
        e = errno == EPIPE || errno == ECONNRESET ? FL_ERR_CLOSED : FL_ERR_IO;
        break;
    }
    if (e) c->resp_failed = true;
    return e;
}

void fl_http_close_after(fl_http_conn_t *c) { c->close_after = true; }
void fl_http_set_op(fl_http_conn_t *c, const char *op) { c->op = op ? op : "unknown"; }
const char *fl_http_op(const fl_http_conn_t *c) { return c->op ? c->op : "unknown"; }
int fl_http_resp_status_of(const fl_http_conn_t *c) { return c->status; }
const char *fl_http_peer(const fl_http_conn_t *c) { return c->peer; }
const char *fl_http_request_id(const fl_http_conn_t *c) { return c->rid; }
int64_t fl_http_body_consumed(const fl_http_conn_t *c) { return c->body_consumed; }

/* Minimal S3-style error for what the handler never sees (or never answered). */
static void send_error(fl_http_conn_t *c, int status, const char *code, const char *msg)
{
    char body[512];
    int n = snprintf(body, sizeof body,
                     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
                     "<Message>%s</Message><RequestId>%s</RequestId></Error>",
                     code, msg, c->rid);
    c->status = status;
    fl_http_resp_header(c, "Content-Type", "application/xml");
    fl_http_resp_send(c, body, (size_t)n);
}

/* ---- request body ---- */

/* Deadline of the next body read: FL_HTTP_READ_TIMEOUT_MS without a byte, and
 * a total one that grows with the bytes received: the body may arrive at any
 * pace for FL_HTTP_BODY_GRACE_MS from its first read, then must average
 * FL_HTTP_BODY_MIN_RATE bytes/s (so L bytes have GRACE + L / RATE in all). */
static int64_t body_deadline(fl_http_conn_t *c)
{
    int64_t now = fl_mono_ms();
    if (!c->body_t0) c->body_t0 = now;
    int64_t total = c->body_t0 + FL_HTTP_BODY_GRACE_MS +
                    (int64_t)(c->body_raw / FL_HTTP_BODY_MIN_RATE * 1000 +
                              c->body_raw % FL_HTTP_BODY_MIN_RATE * 1000 / FL_HTTP_BODY_MIN_RATE);
    int64_t idle = now + FL_HTTP_READ_TIMEOUT_MS;
    return total < idle ? total : idle;
}

/* Next run of decoded body bytes, in place in the read buffer (at most max).
 * Returns bytes (> 0), 0 at the end, or a negative fl_err_t. */
static ssize_t body_next(fl_http_conn_t *c, const char **p, size_t max)
{
    fl_http_server_t *s = c->srv;
    if (c->body_done || c->body_mode == BODY_NONE) return 0;
    if (c->body_broken) return FL_ERR_PROTO;
    ssize_t ret;
    for (;;) {
        size_t avail = c->rend - c->rstart;
        if (avail) {
            if (c->body_mode == BODY_LENGTH) {
                size_t n = avail < max ? avail : max;
                if ((int64_t)n > c->body_left) n = (size_t)c->body_left;
                *p = c->rbuf + c->rstart;
                c->rstart += n;
                c->body_left -= (int64_t)n;
                c->body_raw += n;
                if (!c->body_left) c->body_done = true;
                ret = (ssize_t)n;
                goto out;
            }
            size_t feed = avail < max ? avail : max;
            const char *o;
            size_t olen;
            long r = fl_chunked_feed(&c->ch, c->rbuf + c->rstart, feed, &o, &olen);
            if (r < 0) { ret = r; goto out; }
            c->rstart += (size_t)r;
            c->body_raw += (size_t)r;
            if (c->ch.done) c->body_done = true;
            if (olen) { *p = o; ret = (ssize_t)olen; goto out; }
            if (c->body_done) { ret = 0; goto out; }
            continue;
        }
        ssize_t r = fill(c, body_deadline(c));
        if (r < 0) { ret = r == FL_ERR_CLOSED ? FL_ERR_INCOMPLETE : r; goto out; }
    }
out:
    if (ret < 0) {
        c->body_broken = true;
        c->close_after = true;
    } else if (ret > 0 && !c->draining) {
        c->body_consumed += ret;
        if (s->cfg.max_body_bytes > 0 && c->body_consumed > s->cfg.max_body_bytes) {
            c->body_broken = true;
            c->close_after = true;
            return FL_ERR_TOO_LARGE;
        }
    }
    return ret;
}

static fl_err_t send_continue(fl_http_conn_t *c)
{
    c->continue_pending = false;
    if (c->resp_started) return FL_OK;
    struct iovec iov = { (void *)"HTTP/1.1 100 Continue\r\n\r\n", 25 };
    return send_all(c, &iov, 1, 0);
}

ssize_t fl_http_body_read(fl_http_conn_t *c, void *buf, size_t cap)
{
    if (c->continue_pending && body_unread(c)) {
        fl_err_t e = send_continue(c);
        if (e) { c->close_after = c->body_broken = true; return e; }
    }
    if (!cap) return 0;
    /* Large reads of a Content-Length body go straight into the caller's buffer. */
    if (c->body_mode == BODY_LENGTH && !c->body_done && !c->body_broken &&
        c->rstart == c->rend && cap >= DIRECT_READ_MIN) {
        size_t n = (int64_t)cap > c->body_left ? (size_t)c->body_left : cap;
        ssize_t r = recv_some(c, buf, n, body_deadline(c));
        if (r < 0) {
            c->body_broken = c->close_after = true;
            return r == FL_ERR_CLOSED ? FL_ERR_INCOMPLETE : r;
        }
        c->body_left -= r;
        c->body_raw += (uint64_t)r;
        c->body_consumed += r;
        if (!c->body_left) c->body_done = true;
        if (c->srv->cfg.max_body_bytes > 0 && c->body_consumed > c->srv->cfg.max_body_bytes) {
            c->body_broken = c->close_after = true;
            return FL_ERR_TOO_LARGE;
        }
        return r;
    }
    const char *p;
    ssize_t r = body_next(c, &p, cap);
    if (r > 0) memcpy(buf, p, (size_t)r);
    return r;
}

/* After the handler: consume what is left of the body so the next request can
 * be read. false: the connection must close instead. */
static bool drain_body(fl_http_conn_t *c)
{
    if (!body_unread(c)) return !c->body_broken;
    if (c->continue_pending || c->body_broken) return false;
    if (c->body_mode == BODY_LENGTH && c->body_left > FL_HTTP_DRAIN_MAX_BYTES) return false;
    uint64_t start = c->body_raw;
    bool ok = true;
    c->draining = true;
    for (;;) {
        const char *p;
        ssize_t r = body_next(c, &p, RBUF_BYTES);
        if (r == 0) break;
        if (r < 0 || c->body_raw - start > FL_HTTP_DRAIN_MAX_BYTES) { ok = false; break; }
    }
    c->draining = false;
    return ok;
}

/* ---- connection loop ---- */

/* After a closing response: stop sending, read and discard briefly so the
 * peer reads our response instead of getting a reset for its unread bytes. */
static void lingering_close(fl_http_conn_t *c)
{
    shutdown(c->fd, SHUT_WR);
    int64_t deadline = fl_mono_ms() + FL_HTTP_LINGER_MS;
    size_t total = 0;
    while (total < FL_HTTP_DRAIN_MAX_BYTES) {
        ssize_t r = recv_some(c, c->rbuf, RBUF_BYTES, deadline);
        if (r <= 0) break;
        total += (size_t)r;
    }
}

static bool builtin(fl_http_conn_t *c)
{
    const fl_http_req_t *r = &c->req;
    if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0) return false;
    fl_slice_t path = fl_slice(r->path, r->path_len);
    if (fl_slice_eq(path, "/health")) {
        fl_http_set_op(c, "health");
        fl_http_resp_header(c, "Content-Type", "text/plain");
        const fl_http_server_cfg_t *cfg = &c->srv->cfg;
        char detail[512] = "";
        if (!cfg->health) {
            fl_http_resp_send(c, "ok", 2);
        } else if (cfg->health(cfg->health_ud, detail, sizeof detail)) {
            for (char *p = detail; *p; p++)
                if (*p == '\n') *p = p[1] ? ',' : 0;
            if (detail[0]) fl_http_resp_header(c, "X-Floe-Health", detail);
            fl_http_resp_send(c, "ok", 2);
        } else {
            fl_http_resp_status(c, 503);
            fl_http_resp_send(c, detail, strlen(detail));
        }
        return true;
    }
    if (fl_slice_eq(path, "/metrics")) {
        fl_http_set_op(c, "metrics");
        fl_buf_t b;
        fl_buf_init(&b, 16 * 1024 * 1024);
        if (fl_metrics_render(&b) != FL_OK) {
            send_error(c, 500, "InternalError", "metrics too large");
        } else {
            fl_http_resp_header(c, "Content-Type", "text/plain; version=0.0.4");
            fl_http_resp_send(c, b.ptr, b.len);
        }
        fl_buf_free(&b);
        return true;
    }
    return false;
}

/* End of a head ("\n\n" or "\n\r\n") among the buffered bytes? *scanned
 * remembers how far earlier calls looked. */
static bool head_end_seen(const fl_http_conn_t *c, size_t *scanned)
{
    const char *b = c->rbuf + c->rstart;
    size_t n = c->rend - c->rstart;
    size_t i = *scanned > 2 ? *scanned - 2 : 0;
    *scanned = n;
    /* empty lines before the request line are skipped by the parser: they end nothing */
    size_t lead = 0;
    while (lead < n && (b[lead] == '\r' || b[lead] == '\n')) lead++;
    if (i < lead) i = lead;
    while (i < n) {
        const char *nl = memchr(b + i, '\n', n - i);
        if (!nl) return false;
        size_t k = (size_t)(nl - b) + 1;
        if (k < n && b[k] == '\n') return true;
        if (k + 1 < n && b[k] == '\r' && b[k + 1] == '\n') return true;
        i = k;
    }
    return false;
}

static void head_error(int st, const char **code, const char **msg)
{
    switch (st) {
    case 408: *code = "RequestTimeout"; *msg = "request head not received in time"; break;
    case 414: *code = "RequestURITooLong"; *msg = "request target too long"; break;
    case 431: *code = "RequestHeaderSectionTooLarge"; *msg = "request headers too large"; break;
    case 501: *code = "NotImplemented"; *msg = "unsupported transfer coding"; break;
    case 505: *code = "HttpVersionNotSupported"; *msg = "HTTP version not supported"; break;
    default: *code = "BadRequest"; *msg = "malformed request"; break;
    }
}

static void finish_request(fl_http_conn_t *c, int64_t t0_ns)
{
    fl_http_server_t *s = c->srv;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t dur = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - t0_ns;
    uint64_t in = c->head_len + c->body_raw;
    fl_metrics_request(s->metrics, c->op, c->status, dur, in, c->bytes_out);
    if (s->cfg.access_log) {
        int plen = c->req.path_len > 512 ? 512 : (int)c->req.path_len;
        fl_info("http %s %s %s %.*s %d op=%s in=%llu out=%llu ms=%.3f id=%s", s->name, c->peer,
                c->req.method[0] ? c->req.method : "-", plen ? plen : 1,
                plen ? c->req.path : "-", c->status, c->op, (unsigned long long)in,
                (unsigned long long)c->bytes_out, (double)dur / 1e6, c->rid);
    }
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void reset_request(fl_http_conn_t *c)
{
    c->pin = 0;
    c->head_len = 0;
    c->is_head = false;
    c->body_mode = BODY_NONE;
    c->body_left = c->body_consumed = 0;
    c->body_t0 = 0;
    c->body_raw = 0;
    c->body_done = true;
    c->body_broken = c->continue_pending = c->draining = false;
    c->status = 0;
    c->resp_started = c->hdr_pending = c->hdr_sent = c->resp_failed = false;
    c->close_after = c->closing = c->hdr_overflow = false;
    c->resp_len = -1;
    c->resp_body_sent = 0;
    c->hdr_len = c->pre_len = 0;
    c->bytes_out = 0;
    c->op = "unknown";
    c->req.method[0] = 0;
    c->req.path = NULL;
    c->req.path_len = 0;
    c->req.keep_alive = false;
    c->req.version_minor = 1;
}

/* ---- accepting ---- */

static void format_peer(const struct sockaddr_storage *ss, char *out, size_t n)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
        port = ntohs(a->sin_port);
        snprintf(out, n, "%s:%d", ip, port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
        port = ntohs(a->sin6_port);
        snprintf(out, n, "[%s]:%d", ip, port);
    } else {
        snprintf(out, n, "unix");
    }
}

/* Over the connection cap: a best-effort 503 SlowDown, then close. */
static void reject_busy(fl_http_server_t *s, int fd)
{
    static const char body[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown"
                               "</Code><Message>too many connections</Message></Error>";
    char msg[512];
    int n = snprintf(msg, sizeof msg, "HTTP/1.1 503 Service Unavailable\r\nDate: %s\r\n"
                     "Server: floe\r\nContent-Type: application/xml\r\nContent-Length: %zu\r\n"
                     "Retry-After: 1\r\nConnection: close\r\n\r\n%s",
                     http_date(), sizeof body - 1, body);
    ssize_t w = send(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);
    close(fd);
    fl_metrics_request(s->metrics, "unknown", 503, 0, 0, w > 0 ? (uint64_t)w : 0);
    fl_debug("http %s: connection cap reached, refused a connection", s->name);
}

#define HEAD_PARK INT_MAX /* read_head: no complete head buffered; park the connection */

/* Reads one request head from what is buffered, what the socket has right
 * now and, on an idle connection, what arrives within
 * FL_HTTP_KEEPALIVE_LINGER_MS. >0 head length; HEAD_PARK: hand the connection
 * to the poller (idle connections and slow heads wait there, not on a
 * thread); 0 the connection should close quietly; <0 a status to answer
 * before closing. */
static int read_head(fl_http_conn_t *c)
{
    fl_http_server_t *s = c->srv;
    size_t scanned = 0;
    for (int round = 0;; round++) {
        size_t avail = c->rend - c->rstart;
        if (c->head_expired) return avail ? -408 : 0;
        if (avail) {
            int64_t now = fl_mono_ms();
            if (!c->head_deadline) c->head_deadline = now + FL_HTTP_HEAD_TIMEOUT_MS;
            if (head_end_seen(c, &scanned) || avail >= FL_HTTP_MAX_HEAD_BYTES) {
                int hl = fl_http_parse_head(c->rbuf + c->rstart, avail, &c->req);
                if (hl < 0) return hl;
                if (hl > 0 && c->rstart > 0 && RBUF_BYTES - (c->rstart + (size_t)hl) < BODY_ROOM_MIN) {
                    /* keep room for body reads behind the pinned head: move and re-parse */
                    memmove(c->rbuf, c->rbuf + c->rstart, avail);
                    c->rend = avail;
                    c->rstart = 0;
                    hl = fl_http_parse_head(c->rbuf, avail, &c->req);
                }
                if (hl != 0) return hl;
            }
            if (now >= c->head_deadline) return -408;
        }
        int64_t deadline;
        if (round == 0) deadline = 0; /* only what the socket already holds */
        else if (round == 1 && !avail && !atomic_load(&s->stopping))
            deadline = fl_mono_ms() + FL_HTTP_KEEPALIVE_LINGER_MS;
        else return HEAD_PARK;
        ssize_t r = fill(c, deadline);
        if (r == FL_ERR_TIMEOUT) continue;
        if (r == FL_ERR_TOO_LARGE) return -431;
        if (r < 0) return 0;
        round = -1; /* bytes came: look again, then once more without waiting */
    }
}

/* Serves requests on c until it closes (false) or waits for its next
 * request (true: park it with the poller). Worker thread. */
static bool serve(fl_http_conn_t *c)
{
    fl_http_server_t *s = c->srv;
    for (;;) {
        reset_request(c);
        int hl = read_head(c);
        if (hl == HEAD_PARK) return true;
        if (hl == 0) return false;
        c->head_deadline = 0;
        int64_t t0 = mono_ns();
        new_rid(c);
        if (hl < 0) {
            const char *code, *msg;
            head_error(-hl, &code, &msg);
            c->req.keep_alive = false;
            c->close_after = true;
            send_error(c, -hl, code, msg);
            finish_request(c, t0);
            lingering_close(c);
            return false;
        }
        c->head_len = (size_t)hl;
        c->rstart += (size_t)hl;
        c->pin = c->rstart;
        fl_http_req_t *req = &c->req;
        c->is_head = strcmp(req->method, "HEAD") == 0;
        if (req->chunked) {
            c->body_mode = BODY_CHUNKED;
            fl_chunked_init(&c->ch);
        } else if (req->content_length > 0) {
            c->body_mode = BODY_LENGTH;
            c->body_left = req->content_length;
        }
        c->body_done = c->body_mode == BODY_NONE;
        c->continue_pending = req->expect_continue && !c->body_done;

        if (s->cfg.max_body_bytes > 0 && req->content_length > s->cfg.max_body_bytes) {
            c->close_after = true;
            send_error(c, 413, "EntityTooLarge", "request body too large");
        } else if (!builtin(c)) {
            s->cfg.handler(c, req, s->cfg.ud);
        }
        if (!c->resp_started) {
            fl_warn("http %s: handler sent no response for %s (id %s)", s->name, req->method, c->rid);
            send_error(c, 500, "InternalError", "no response");
        } else if (c->hdr_pending) {
            flush_with(c, NULL, 0, 0);
        }
        bool keep = !c->closing && !c->resp_failed && c->resp_body_sent == c->resp_len;
        bool unread = body_unread(c);
        if (keep) keep = drain_body(c);
        finish_request(c, t0);
        if (!keep) {
            if (unread && !c->resp_failed) lingering_close(c);
            return false;
        }
    }
}

/* ---- connection bookkeeping (all under srv->mu) ---- */

static __thread bool in_poller; /* frees are deferred to the end of the event batch */

static void list_push(conn_list_t *l, fl_http_conn_t *c)
{
    c->qnext = NULL;
    c->qprev = l->tail;
    if (l->tail) l->tail->qnext = c;
    else l->head = c;
    l->tail = c;
}

static void list_del(conn_list_t *l, fl_http_conn_t *c)
{
    if (c->qprev) c->qprev->qnext = c->qnext;
    else l->head = c->qnext;
    if (c->qnext) c->qnext->qprev = c->qprev;
    else l->tail = c->qprev;
    c->qprev = c->qnext = NULL;
}

static fl_http_conn_t *list_pop(conn_list_t *l)
{
    fl_http_conn_t *c = l->head;
    if (c) list_del(l, c);
    return c;
}

/* IPv4 address, or the /64 of an IPv6 one (an IPv4-mapped one counts as IPv4). */
static void addr_key(const struct sockaddr_storage *ss, uint8_t k[16])
{
    memset(k, 0, 16);
    if (ss->ss_family == AF_INET) {
        memcpy(k, &((const struct sockaddr_in *)ss)->sin_addr, 4);
        k[15] = 4;
    } else if (ss->ss_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a)) {
            memcpy(k, a->s6_addr + 12, 4);
            k[15] = 4;
        } else {
            memcpy(k, a->s6_addr, 8);
            k[15] = 6;
        }
    }
}

static unsigned addr_hash(const uint8_t k[16])
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < 16; i++) h = (h ^ k[i]) * 16777619u;
    return h & (ADDR_BUCKETS - 1);
}

static addr_ent_t *addr_get_locked(fl_http_server_t *s, const uint8_t k[16])
{
    addr_ent_t **b = &s->addrs[addr_hash(k)];
    for (addr_ent_t *a = *b; a; a = a->hnext)
        if (!memcmp(a->key, k, 16)) return a;
    addr_ent_t *a = fl_calloc(1, sizeof *a);
    memcpy(a->key, k, 16);
    a->hnext = *b;
    *b = a;
    return a;
}

static void addr_put_locked(fl_http_server_t *s, addr_ent_t *a)
{
    if (a->nconns > 0) return;
    for (addr_ent_t **pp = &s->addrs[addr_hash(a->key)]; *pp; pp = &(*pp)->hnext)
        if (*pp == a) {
            *pp = a->hnext;
            break;
        }
    free(a);
}

static void gauges_locked(fl_http_server_t *s)
{
    fl_metrics_conn_state(s->metrics, s->nparked, s->nactive);
}

static void *worker_main(void *arg);

/* c (counted active) goes on the run queue; an idle worker is woken or a new
 * one started. */
static void runq_push_locked(fl_http_server_t *s, fl_http_conn_t *c)
{
    c->state = ST_QUEUED;
    list_push(&s->runq, c);
    s->runq_len++;
    if (s->runq_len <= s->nidle) {
        pthread_cond_signal(&s->work_cv);
        return;
    }
    pthread_t t;
    int e = pthread_create(&t, &s->thread_attr, worker_main, s);
    if (!e) s->nthreads++;
    else fl_warn("http %s: pthread_create: %s (%d workers take the queue)", s->name, strerror(e),
                 s->nthreads);
}

/* A ready connection: to the run queue, or to its address's wait queue when
 * that address already has FL_HTTP_MAX_ACTIVE_PER_ADDR requests in flight. */
static void dispatch_locked(fl_http_server_t *s, fl_http_conn_t *c)
{
    addr_ent_t *a = c->addr;
    if (a->nactive < FL_HTTP_MAX_ACTIVE_PER_ADDR) {
        a->nactive++;
        s->nactive++;
        runq_push_locked(s, c);
    } else {
        c->state = ST_WAITING;
        list_push(&a->waitq, c);
    }
}

/* c stops counting as active; the first waiting connection of its address
 * takes its place. */
static void active_leave_locked(fl_http_server_t *s, fl_http_conn_t *c)
{
    addr_ent_t *a = c->addr;
    a->nactive--;
    s->nactive--;
    fl_http_conn_t *w = list_pop(&a->waitq);
    if (w) {
        a->nactive++;
        s->nactive++;
        runq_push_locked(s, w);
    }
}

/* Closes c in any state but ST_DEAD. From the poller, c is freed after the
 * event batch (an event for it may still be pending); elsewhere at once. */
static void conn_close_locked(fl_http_server_t *s, fl_http_conn_t *c)
{
    addr_ent_t *a = c->addr;
    switch (c->state) {
    case ST_PARKED: list_del(&a->parked, c); s->nparked--; break;
    case ST_WAITING: list_del(&a->waitq, c); break;
    case ST_QUEUED: list_del(&s->runq, c); s->runq_len--; active_leave_locked(s, c); break;
    case ST_ACTIVE: active_leave_locked(s, c); break;
    default: break;
    }
    if (c->prev) c->prev->next = c->next;
    else s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    s->nconns--;
    fl_metrics_conn_add(s->metrics, -1);
    a->nconns--;
    addr_put_locked(s, a);
    if (c->in_epoll) epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->state = ST_DEAD;
    if (in_poller) {
        c->qnext = s->graveyard;
        s->graveyard = c;
    } else {
        free(c);
    }
    gauges_locked(s);
    pthread_cond_broadcast(&s->cv);
}

/* Arms the one-shot read event of a parked connection. */
static int arm_locked(fl_http_server_t *s, fl_http_conn_t *c)
{
    struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.ptr = c };
    if (epoll_ctl(s->ep, c->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev) < 0) {
        fl_warn("http %s: epoll_ctl: %s", s->name, strerror(errno));
        return -1;
    }
    c->in_epoll = true;
    return 0;
}

/* Worker: c waits for its next request (or the rest of its head) in the poller. */
static void park_locked(fl_http_server_t *s, fl_http_conn_t *c)
{
    active_leave_locked(s, c);
    size_t avail = c->rend - c->rstart;
    if (c->rstart) memmove(c->rbuf, c->rbuf + c->rstart, avail);
    c->rstart = c->pin = 0;
    c->rend = avail;
    c->scanned = 0;
    c->idle_deadline = fl_mono_ms() + FL_HTTP_IDLE_TIMEOUT_MS;
    c->state = ST_PARKED;
    list_push(&c->addr->parked, c);
    s->nparked++;
    if (atomic_load(&s->stopping) || arm_locked(s, c) < 0) conn_close_locked(s, c);
    else gauges_locked(s);
}

static void *worker_main(void *arg)
{
    fl_http_server_t *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        fl_http_conn_t *c = list_pop(&s->runq);
        if (c) {
            s->runq_len--;
            c->state = ST_ACTIVE;
            gauges_locked(s);
            pthread_mutex_unlock(&s->mu);
            bool park = serve(c);
            pthread_mutex_lock(&s->mu);
            if (park) park_locked(s, c);
            else conn_close_locked(s, c);
            continue;
        }
        if (atomic_load(&s->stopping)) break;
        struct timespec dl;
        clock_gettime(CLOCK_MONOTONIC, &dl);
        dl.tv_sec += WORKER_IDLE_MS / 1000;
        s->nidle++;
        int e = pthread_cond_timedwait(&s->work_cv, &s->mu, &dl);
        s->nidle--;
        if (e == ETIMEDOUT && !s->runq.head) break;
    }
    s->nthreads--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu); /* s may be freed from here on */
    return NULL;
}

/* ---- poller ---- */

/* Reads what a parked connection holds. 1: a whole head (or more than a head
 * may be) is buffered; 0: keep waiting; -1: closed or failed. */
static int park_read(fl_http_conn_t *c)
{
    ssize_t r;
    do r = recv(c->fd, c->rbuf + c->rend, RBUF_BYTES - c->rend, 0);
    while (r < 0 && errno == EINTR);
    if (r == 0) return -1;
    if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    c->rend += (size_t)r;
    if (!c->head_deadline) c->head_deadline = fl_mono_ms() + FL_HTTP_HEAD_TIMEOUT_MS;
    if (head_end_seen(c, &c->scanned) || c->rend - c->rstart >= FL_HTTP_MAX_HEAD_BYTES) return 1;
    return 0;
}

/* A parked connection is readable (or was just accepted). */
static void conn_event_locked(fl_http_server_t *s, fl_http_conn_t *c)
{
    if (c->state != ST_PARKED) return;
    int r = park_read(c);
    if (r == 0 && arm_locked(s, c) == 0) return;
    if (r <= 0) {
        conn_close_locked(s, c);
        return;
    }
    list_del(&c->addr->parked, c);
    s->nparked--;
    dispatch_locked(s, c);
    gauges_locked(s);
}

/* Closes the oldest parked connection of a to make room. */
static bool evict_locked(fl_http_server_t *s, addr_ent_t *a)
{
    if (!a || !a->parked.head) return false;
    fl_debug("http %s: evicting idle connection %s", s->name, a->parked.head->peer);
    conn_close_locked(s, a->parked.head);
    fl_metrics_conn_evicted(s->metrics);
    return true;
}

/* The address holding the most connections that has a parked one. */
static addr_ent_t *busiest_locked(fl_http_server_t *s)
{
    addr_ent_t *best = NULL;
    for (int i = 0; i < ADDR_BUCKETS; i++)
        for (addr_ent_t *a = s->addrs[i]; a; a = a->hnext)
            if (a->parked.head && (!best || a->nconns > best->nconns)) best = a;
    return best;
}

/* A new connection: within the caps (evicting a parked one if need be) it is
 * parked, or dispatched at once if its head is already here; else 503. */
static void admit(fl_http_server_t *s, int fd, const struct sockaddr_storage *sa)
{
    uint8_t key[16];
    addr_key(sa, key);
    pthread_mutex_lock(&s->mu);
    addr_ent_t *a = addr_get_locked(s, key);
    a->nconns++; /* reserved for the newcomer: a stays while its own are evicted */
    bool ok = true;
    if (a->nconns > FL_HTTP_MAX_CONNS_PER_ADDR) ok = evict_locked(s, a);
    if (ok && s->nconns >= s->max_conns) ok = evict_locked(s, busiest_locked(s));
    if (!ok) {
        a->nconns--;
        addr_put_locked(s, a);
        pthread_mutex_unlock(&s->mu);
        reject_busy(s, fd);
        return;
    }
    fl_http_conn_t *c = fl_malloc(sizeof *c);
    memset(c, 0, offsetof(fl_http_conn_t, pre));
    c->srv = s;
    c->fd = fd;
    c->addr = a;
    format_peer(sa, c->peer, sizeof c->peer);
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    fl_metrics_conn_add(s->metrics, 1);
    c->idle_deadline = fl_mono_ms() + FL_HTTP_IDLE_TIMEOUT_MS;
    c->state = ST_PARKED;
    list_push(&a->parked, c);
    s->nparked++;
    conn_event_locked(s, c);
    gauges_locked(s);
    pthread_mutex_unlock(&s->mu);
}

static void accept_some(fl_http_server_t *s)
{
    for (int i = 0; i < 64; i++) {
        struct sockaddr_storage sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(s->lfd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                fl_warn("http %s: accept: %s", s->name, strerror(errno));
                usleep(10000);
            }
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        admit(s, fd, &sa);
    }
}

/* Idle deadlines close quietly; an overdue head goes to a worker for its 408. */
static void expire_locked(fl_http_server_t *s)
{
    int64_t now = fl_mono_ms();
    for (fl_http_conn_t *c = s->conns, *n; c; c = n) {
        n = c->next;
        if (c->state != ST_PARKED) continue;
        if (c->rend > c->rstart) {
            if (now < c->head_deadline) continue;
            list_del(&c->addr->parked, c);
            s->nparked--;
            epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL); /* a worker owns it now */
            c->in_epoll = false;
            c->head_expired = true;
            dispatch_locked(s, c);
        } else if (now >= c->idle_deadline) {
            conn_close_locked(s, c);
        }
    }
    gauges_locked(s);
}

static void bury(fl_http_server_t *s)
{
    while (s->graveyard) {
        fl_http_conn_t *c = s->graveyard;
        s->graveyard = c->qnext;
        free(c);
    }
}

static void *poller_main(void *arg)
{
    fl_http_server_t *s = arg;
    in_poller = true;
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGPIPE); /* sendfile has no MSG_NOSIGNAL; workers inherit this mask */
    pthread_sigmask(SIG_BLOCK, &ss, NULL);
    struct epoll_event evs[256];
    int64_t next_tick = fl_mono_ms() + POLLER_TICK_MS;
    while (!atomic_load(&s->stopping)) {
        int64_t left = next_tick - fl_mono_ms();
        int n = epoll_wait(s->ep, evs, 256, left > 0 ? (int)left : 0);
        if (n < 0 && errno != EINTR) {
            fl_error("http %s: epoll_wait: %s", s->name, strerror(errno));
            break;
        }
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == s) continue; /* wake: the loop sees stopping */
            if (!p) {
                accept_some(s);
                continue;
            }
            pthread_mutex_lock(&s->mu);
            conn_event_locked(s, p);
            pthread_mutex_unlock(&s->mu);
        }
        if (fl_mono_ms() >= next_tick) {
            pthread_mutex_lock(&s->mu);
            expire_locked(s);
            pthread_mutex_unlock(&s->mu);
            next_tick = fl_mono_ms() + POLLER_TICK_MS;
        }
        bury(s);
    }
    /* stopping: idle connections close now; the others finish their request */
    pthread_mutex_lock(&s->mu);
    for (fl_http_conn_t *c = s->conns, *n; c; c = n) {
        n = c->next;
        if (c->state == ST_PARKED) conn_close_locked(s, c);
    }
    pthread_mutex_unlock(&s->mu);
    bury(s);
    return NULL;
}

static int open_listener(const char *listen_addr, int *port_out)
{
    char host[256];
    const char *colon = strrchr(listen_addr, ':');
    int fd = -1;
    struct addrinfo *ai = NULL;
    if (!colon || (size_t)(colon - listen_addr) >= sizeof host) {
        fl_error("http: bad listen address \"%s\" (want host:port)", listen_addr);
        goto out;
    }
    memcpy(host, listen_addr, (size_t)(colon - listen_addr));
    host[colon - listen_addr] = 0;
    char *h = host;
    size_t hl = strlen(h);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') { h[hl - 1] = 0; h++; }
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
    int r = getaddrinfo(*h ? h : NULL, colon + 1, &hints, &ai);
    if (r) {
        fl_error("http: resolve \"%s\": %s", listen_addr, gai_strerror(r));
        goto out;
    }
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) goto fail;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 1024) < 0) goto fail;
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    if (getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) goto fail;
    *port_out = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                               : ((struct sockaddr_in *)&sa)->sin_port);
    goto out;
fail:
    fl_error("http: listen on %s: %s", listen_addr, strerror(errno));
    if (fd >= 0) close(fd);
    fd = -1;
out:
    if (ai) freeaddrinfo(ai);
    return fd;
}

/* Total connection cap: FL_HTTP_MAX_CONNECTIONS, or what half of the
 * descriptors left after FL_HTTP_FD_RESERVE allow (serve raises the soft
 * RLIMIT_NOFILE to the hard one before starting servers; two servers share it). */
static int size_cap(const fl_http_server_cfg_t *cfg)
{
    if (cfg->max_connections > 0) return cfg->max_connections;
    int max = FL_HTTP_MAX_CONNECTIONS;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        long cur = (long)rl.rlim_cur;
        long reserve = cur / 4 < FL_HTTP_FD_RESERVE ? cur / 4 : FL_HTTP_FD_RESERVE;
        long fit = (cur - reserve) / 2;
        if (fit < 16) fit = 16;
        if (fit < max) max = (int)fit;
    }
    return max;
}

fl_http_server_t *fl_http_server_start(const fl_http_server_cfg_t *cfg)
{
    fl_http_server_t *s = NULL;
    pthread_once(&rid_once, rid_init);
    if (!cfg || !cfg->handler || !cfg->listen) {
        fl_error("http: server config needs listen and handler");
        return NULL;
    }
    s = fl_calloc(1, sizeof *s);
    s->cfg = *cfg;
    s->name = fl_strdup(cfg->name ? cfg->name : "http");
    s->cfg.name = s->name;
    s->cfg.listen = NULL;
    s->ep = s->wake = -1;
    s->max_conns = size_cap(cfg);
    s->lfd = open_listener(cfg->listen, &s->port);
    if (s->lfd < 0) goto fail;
    int fl = fcntl(s->lfd, F_GETFL);
    if (fl < 0 || fcntl(s->lfd, F_SETFL, fl | O_NONBLOCK) < 0) {
        fl_error("http %s: fcntl: %s", s->name, strerror(errno));
        goto fail;
    }
    s->ep = epoll_create1(EPOLL_CLOEXEC);
    s->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event lev = { .events = EPOLLIN, .data.ptr = NULL };
    struct epoll_event wev = { .events = EPOLLIN, .data.ptr = s };
    if (s->ep < 0 || s->wake < 0 || epoll_ctl(s->ep, EPOLL_CTL_ADD, s->lfd, &lev) < 0 ||
        epoll_ctl(s->ep, EPOLL_CTL_ADD, s->wake, &wev) < 0) {
        fl_error("http %s: epoll: %s", s->name, strerror(errno));
        goto fail;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_cond_init(&s->work_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_attr_init(&s->thread_attr);
    pthread_attr_setstacksize(&s->thread_attr, THREAD_STACK);
    pthread_attr_setdetachstate(&s->thread_attr, PTHREAD_CREATE_DETACHED);
    s->metrics = fl_metrics_new(s->name);
    int e = pthread_create(&s->poller, NULL, poller_main, s);
    if (e) {
        fl_error("http %s: pthread_create: %s", s->name, strerror(e));
        fl_metrics_free(s->metrics);
        pthread_attr_destroy(&s->thread_attr);
        pthread_cond_destroy(&s->work_cv);
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
        goto fail;
    }
    fl_info("http %s: listening on %s (port %d, up to %d connections, %d per client address)",
            s->name, cfg->listen, s->port, s->max_conns, FL_HTTP_MAX_CONNS_PER_ADDR);
    return s;
fail:
    if (s->lfd >= 0) close(s->lfd);
    if (s->ep >= 0) close(s->ep);
    if (s->wake >= 0) close(s->wake);
    free(s->name);
    free(s);
    return NULL;
}

int fl_http_server_port(const fl_http_server_t *s) { return s->port; }

void fl_http_server_stop(fl_http_server_t *s, int timeout_ms)
{
    if (!s) return;
    atomic_store(&s->stopping, true);
    uint64_t one = 1;
    ssize_t w;
    do w = write(s->wake, &one, sizeof one); while (w < 0 && errno == EINTR);
    pthread_join(s->poller, NULL); /* it closed the parked connections */
    close(s->lfd);
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    int64_t ns = dl.tv_nsec + (int64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000;
    dl.tv_sec += ns / 1000000000;
    dl.tv_nsec = ns % 1000000000;
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->work_cv);
    bool forced = false;
    while (s->nconns > 0) {
        if (!forced) {
            if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) == ETIMEDOUT && s->nconns > 0) {
                fl_warn("http %s: %d connections still busy after %d ms, shutting them down",
                        s->name, s->nconns, timeout_ms);
                for (fl_http_conn_t *c = s->conns, *n; c; c = n) {
                    n = c->next;
                    if (c->state == ST_WAITING) conn_close_locked(s, c);
                    else shutdown(c->fd, SHUT_RDWR);
                }
                forced = true;
            }
        } else {
            pthread_cond_wait(&s->cv, &s->mu);
        }
    }
    while (s->nthreads > 0) {
        pthread_cond_broadcast(&s->work_cv);
        pthread_cond_wait(&s->cv, &s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    pthread_attr_destroy(&s->thread_attr);
    pthread_cond_destroy(&s->work_cv);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    close(s->ep);
    close(s->wake);
    fl_metrics_free(s->metrics);
    fl_info("http %s: stopped", s->name);
    free(s->name);
    free(s);
}
