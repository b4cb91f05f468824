/* HTTP server tests: head parser, chunked decoder, and a live server on
 * 127.0.0.1 spoken to with plain sockets. */
#include "test.h"
#include "net/http.h"
#include "base/log.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int parse(const char *s, fl_http_req_t *req)
{
    static char buf[FL_HTTP_MAX_HEAD_BYTES * 2];
    size_t n = strlen(s);
    memcpy(buf, s, n);
    return fl_http_parse_head(buf, n, req);
}

static fl_http_req_t R;

FL_TEST(http_parse_good)
{
    const char *s = "GET /bucket/key%20x?list-type=2&prefix=a HTTP/1.1\r\nHost: localhost:9000\r\n"
                    "X-Amz-Date:20250101T000000Z\r\nContent-Length: 0\r\nUser-Agent:  curl/8 \t\r\n\r\n";
    CHECK_EQ(parse(s, &R), (long long)strlen(s));
    CHECK_STR(R.method, "GET");
    CHECK_EQ(R.version_minor, 1);
    CHECK(R.keep_alive);
    CHECK_EQ(R.nheaders, 4);
    CHECK_EQ(R.path_len, 15);
    CHECK_MEM(R.path, "/bucket/key%20x", 15);
    CHECK_EQ(R.query_len, 20);
    CHECK_MEM(R.query, "list-type=2&prefix=a", 20);
    CHECK_EQ(R.content_length, 0);
    CHECK(fl_slice_eq(fl_http_header_val(&R, "x-amz-date"), "20250101T000000Z"));
    CHECK(fl_slice_eq(fl_http_header_val(&R, "user-agent"), "curl/8"));
    CHECK(fl_slice_eq(fl_http_header_val(&R, "host"), "localhost:9000"));
    CHECK(fl_http_header(&R, "authorization") == NULL);
    CHECK(fl_http_header_val(&R, "nope").ptr == NULL);

    /* bare LF, HTTP/1.0 keep-alive, empty value, leading empty line */
    s = "\r\nPUT /a HTTP/1.0\nConnection: Keep-Alive\nX-Empty:\nContent-Length: 5\n\nhello";
    CHECK_EQ(parse(s, &R), (long long)strlen(s) - 5);
    CHECK_EQ(R.version_minor, 0);
    CHECK(R.keep_alive);
    CHECK_EQ(R.content_length, 5);
    CHECK(R.query == NULL);
    CHECK(fl_slice_eq(fl_http_header_val(&R, "x-empty"), ""));
    CHECK_EQ(parse("GET / HTTP/1.0\r\n\r\n", &R), 18);
    CHECK(!R.keep_alive);
    CHECK_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, close\r\n\r\n", &R), 51);
    CHECK(!R.keep_alive);
    CHECK(parse("PUT /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n"
                "Expect: 100-Continue\r\n\r\n", &R) > 0);
    CHECK(R.chunked);
    CHECK(R.expect_continue);
    CHECK_EQ(R.content_length, -1);
    /* equal duplicate Content-Length is fine; absolute-form; OPTIONS * */
    CHECK(parse("PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", &R) > 0);
    CHECK_EQ(R.content_length, 3);
    CHECK(parse("GET http://h:1/p/q?x HTTP/1.1\r\nHost: h\r\n\r\n", &R) > 0);
    CHECK_EQ(R.path_len, 4);
    CHECK_MEM(R.path, "/p/q", 4);
    CHECK_EQ(R.query_len, 1);
    CHECK(parse("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", &R) > 0);
    CHECK(parse("GET / HTTP/1.9\r\nHost: h\r\n\r\n", &R) > 0); /* 1.x treated as 1.1 */
    /* 100-continue is ignored for HTTP/1.0 */
    CHECK(parse("PUT / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n", &R) > 0);
    CHECK(!R.expect_continue);
}

FL_TEST(http_parse_incomplete)
{
    const char *s = "GET /x HTTP/1.1\r\nHost: a\r\nX: y\r\n\r\n";
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        char buf[128];
        memcpy(buf, s, i);
        int r = fl_http_parse_head(buf, i, &R);
        if (r != 0) FL_FAIL("prefix %zu: %d", i, r);
    }
    CHECK_EQ(parse(s, &R), (long long)n);
}

FL_TEST(http_parse_malformed)
{
    static const struct { const char *s; int want; } cases[] = {
        { "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
        { "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", -400 },
        { "GET / HTTP/1.1\rHost: a\r\n\r\n", -400 },
        { "GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
        { "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
        { " GET / HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
        { "GET / HTTX/1.1\r\nHost: a\r\n\r\n", -400 },
        { "GET / HTTP/1\r\nHost: a\r\n\r\n", -400 },
        { "GET / HTTP/2.0\r\nHost: a\r\n\r\n", -505 },
        { "GET / HTTP/0.9\r\nHost: a\r\n\r\n", -505 },
        { "GET x HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
        { "GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
        { "GET / HTTP/1.1\r\nHost : a\r\n\r\n", -400 },          /* space before colon */
        { "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", -400 }, /* obs-fold */
        { "GET / HTTP/1.1\r\nHost: a\r\nX: a\x01 b\r\n\r\n", -400 },
        { "GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", -400 },
        { "GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n", -400 },
        { "GET / HTTP/1.1\r\nHost: a\r\n: v\r\n\r\n", -400 },
        { "GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", -400 },
        { "GET / HTTP/1.1\r\nX: a\r\n\r\n", -400 },               /* no Host */
        { "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", -400 },
        { "PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 1x\r\n\r\n", -400 },
        { "PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", -400 },
        { "PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n", -400 },
        { "PUT / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", -400 },
        { "PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", -400 },
        { "PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", -400 },
        { "PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", -400 },
        { "PUT / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", -501 },
        { "PUT / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", -501 },
        { "PUT / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", -400 },
        { "PUT / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \r\n\r\n", -400 },
        { "PUT / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", -400 },
        { "GETGETGETGETGETGET / HTTP/1.1\r\n", -400 },            /* method too long, early */
        { "GET / HTTP/1.1\r\nHost: a\r\nX\0Y: 1\r\n\r\n", -400 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[256];
        size_t n = strlen(cases[i].s);
        if (i == sizeof cases / sizeof cases[0] - 1) n = 36; /* embedded NUL */
        memcpy(buf, cases[i].s, n);
        int r = fl_http_parse_head(buf, n, &R);
        if (r != cases[i].want) FL_FAIL("case %zu: got %d want %d", i, r, cases[i].want);
    }
}

FL_TEST(http_parse_limits)
{
    size_t cap = FL_HTTP_MAX_HEAD_BYTES * 2;
    char *b = malloc(cap);
    REQUIRE(b);
    /* target at the limit passes, one more is 414 (even before the line ends) */
    size_t n = (size_t)sprintf(b, "GET /");
    memset(b + n, 'a', FL_HTTP_MAX_TARGET_BYTES - 1);
    n += FL_HTTP_MAX_TARGET_BYTES - 1;
    n += (size_t)sprintf(b + n, " HTTP/1.1\r\nHost: a\r\n\r\n");
    CHECK_EQ(fl_http_parse_head(b, n, &R), (long long)n);
    CHECK_EQ(R.target_len, FL_HTTP_MAX_TARGET_BYTES);
    n = (size_t)sprintf(b, "GET /");
    memset(b + n, 'a', FL_HTTP_MAX_TARGET_BYTES);
    n += FL_HTTP_MAX_TARGET_BYTES;
    CHECK_EQ(fl_http_parse_head(b, n, &R), -414);
    /* too many headers */
    n = (size_t)sprintf(b, "GET / HTTP/1.1\r\nHost: a\r\n");
    for (int i = 0; i < FL_HTTP_MAX_HEADERS - 1; i++) n += (size_t)sprintf(b + n, "X-%d: v\r\n", i);
    size_t keep = n;
    n += (size_t)sprintf(b + n, "\r\n");
    CHECK_EQ(fl_http_parse_head(b, n, &R), (long long)n);
    CHECK_EQ(R.nheaders, FL_HTTP_MAX_HEADERS);
    n = keep + (size_t)sprintf(b + keep, "X-last: v\r\n\r\n");
    CHECK_EQ(fl_http_parse_head(b, n, &R), -431);
    /* head bytes: a huge header value, complete or not */
    n = (size_t)sprintf(b, "GET / HTTP/1.1\r\nHost: a\r\nX: ");
    memset(b + n, 'v', FL_HTTP_MAX_HEAD_BYTES);
    n += FL_HTTP_MAX_HEAD_BYTES;
    CHECK_EQ(fl_http_parse_head(b, n, &R), -431);
    n += (size_t)sprintf(b + n, "\r\n\r\n");
    CHECK_EQ(fl_http_parse_head(b, n, &R), -431);
    /* exactly at the limit is fine */
    n = (size_t)sprintf(b, "GET / HTTP/1.1\r\nHost: a\r\nX: ");
    size_t fillv = FL_HTTP_MAX_HEAD_BYTES - n - 4;
    memset(b + n, 'v', fillv);
    n += fillv;
    n += (size_t)sprintf(b + n, "\r\n\r\n");
    CHECK_EQ(n, FL_HTTP_MAX_HEAD_BYTES);
    CHECK_EQ(fl_http_parse_head(b, n, &R), (long long)n);
    free(b);
}

FL_TEST(http_parse_pipelined)
{
    char buf[512];
    const char *s = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
                    "PUT /b?c HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
                    "DELETE /d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    size_t n = strlen(s), off = 0;
    memcpy(buf, s, n);
    int r = fl_http_parse_head(buf, n, &R);
    REQUIRE(r > 0);
    CHECK_STR(R.method, "GET");
    off += (size_t)r;
    r = fl_http_parse_head(buf + off, n - off, &R);
    REQUIRE(r > 0);
    CHECK_STR(R.method, "PUT");
    CHECK_EQ(R.content_length, 3);
    off += (size_t)r + 3;
    r = fl_http_parse_head(buf + off, n - off, &R);
    REQUIRE(r > 0);
    CHECK_STR(R.method, "DELETE");
    CHECK(!R.keep_alive);
    CHECK_EQ(off + (size_t)r, n);
}

/* Decodes in pieces split at `split` (0 = all at once); returns decoded
 * length, or the error, and the bytes consumed in *used. */
static long dechunk(const char *in, size_t n, size_t split, char *out, size_t *used, bool *done)
{
    fl_chunked_t d;
    fl_chunked_init(&d);
    size_t pos = 0, olen = 0;
    size_t pieces[2] = { split ? split : n, n - (split ? split : n) };
    size_t end = 0;
    for (int p = 0; p < 2; p++) {
        end += pieces[p];
        while (pos < end && !d.done) {
            const char *o;
            size_t ol;
            long r = fl_chunked_feed(&d, in + pos, end - pos, &o, &ol);
            if (r < 0) return r;
            if (ol) {
                if (o < in + pos || o + ol > in + pos + (size_t)r) return -999;
                memcpy(out + olen, o, ol);
                olen += ol;
            }
            pos += (size_t)r;
        }
    }
    *used = pos;
    *done = d.done;
    return (long)olen;
}

FL_TEST(http_chunked_splits)
{
    const char *s = "5\r\nhello\r\n6;name=val;x=\"q\"\r\n world\r\nA \r\n0123456789\r\n"
                    "0\r\nX-Trailer: 1\r\nY: 2\r\n\r\nNEXT";
    size_t n = strlen(s);
    for (size_t split = 0; split <= n; split++) {
        char out[64];
        size_t used = 0;
        bool done = false;
        long r = dechunk(s, n, split, out, &used, &done);
        if (r != 21 || memcmp(out, "hello world0123456789", 21) != 0 || !done || used != n - 4)
            FL_FAIL("split %zu: r=%ld used=%zu done=%d", split, r, used, done);
    }
    /* bare LF and upper-case hex, no trailers */
    const char *t = "1F\n0123456789abcdef0123456789abcde\n0\n\n";
    char out[64];
    size_t used;
    bool done;
    CHECK_EQ(dechunk(t, strlen(t), 0, out, &used, &done), 31);
    CHECK(done);
}

FL_TEST(http_chunked_malformed)
{
    static const char *bad[] = {
        "\r\n",                         /* no size */
        "x\r\n",
        "5\r\nhelloX\r\n",              /* data not followed by CRLF */
        "5\rX",
        "10000000000000000\r\n",        /* 17 hex digits: overflow */
        "0\r\n\rX",
        "5\x01\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char out[64];
        size_t used;
        bool done;
        long r = dechunk(bad[i], strlen(bad[i]), 0, out, &used, &done);
        if (r != FL_ERR_PROTO) FL_FAIL("case %zu: %ld", i, r);
    }
    /* 16 hex digits fit */
    char out[8];
    size_t used;
    bool done;
    CHECK_EQ(dechunk("FFFFFFFFFFFFFFFF\r\nab", 20, 0, out, &used, &done), 2);
    /* long extension / trailer lines */
    char *big = malloc(FL_HTTP_MAX_TRAILER_BYTES + 64);
    REQUIRE(big);
    strcpy(big, "1;");
    memset(big + 2, 'e', FL_HTTP_MAX_CHUNK_LINE);
    CHECK_EQ(dechunk(big, FL_HTTP_MAX_CHUNK_LINE + 2, 0, out, &used, &done), FL_ERR_TOO_LARGE);
    strcpy(big, "0\r\nX: ");
    memset(big + 6, 't', FL_HTTP_MAX_TRAILER_BYTES);
    CHECK_EQ(dechunk(big, FL_HTTP_MAX_TRAILER_BYTES + 6, 0, out, &used, &done), FL_ERR_TOO_LARGE);
    free(big);
}

/* ---------------- live server ---------------- */

static char file_path[512];

static void echo_handler(fl_http_conn_t *c, fl_http_req_t *req, void *ud)
{
    (void)ud;
    fl_slice_t path = fl_slice(req->path, req->path_len);
    if (fl_slice_eq(path, "/reject")) {
        fl_http_set_op(c, "Reject");
        fl_http_resp_status(c, 403);
        fl_http_resp_send(c, "no", 2);
        return;
    }
    if (fl_slice_eq(path, "/noresp")) return;
    if (fl_slice_eq(path, "/file")) {
        fl_http_set_op(c, "File");
        int fd = open(file_path, O_RDONLY);
        if (fd < 0) { fl_http_resp_status(c, 500); fl_http_resp_send(c, NULL, 0); return; }
        off_t sz = lseek(fd, 0, SEEK_END);
        fl_http_resp_begin(c, sz - 10);
        fl_http_resp_sendfile(c, fd, 10, sz - 10);
        close(fd);
        return;
    }
    fl_http_set_op(c, "Echo");
    size_t cap = 1 << 20, n = 0;
    char *body = malloc(cap);
    ssize_t r = 0;
    while (n < cap && (r = fl_http_body_read(c, body + n, cap - n)) > 0) n += (size_t)r;
    if (r < 0) { fl_http_resp_status(c, 400); fl_http_resp_send(c, NULL, 0); free(body); return; }
    fl_http_resp_header(c, "X-Method", req->method);
    fl_http_resp_header(c, "X-Id", fl_http_request_id(c));
    fl_http_resp_headerf(c, "X-Query", "%.*s", (int)req->query_len, req->query ? req->query : "");
    fl_http_resp_send(c, body, n);
    free(body);
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = { .tv_sec = 5 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) { close(fd); return -1; }
    return fd;
}

static void put(int fd, const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

typedef struct { char buf[1 << 16]; size_t len; } rbuf_t;

/* Reads one response (head + Content-Length body) from fd, using rb for
 * leftovers. Returns the status; head/body copied out (NUL-terminated). */
static int get_resp(int fd, rbuf_t *rb, bool head_only_body, char *head, char *body)
{
    for (;;) {
        char *e = memmem(rb->buf, rb->len, "\r\n\r\n", 4);
        if (e) {
            size_t hl = (size_t)(e - rb->buf) + 4;
            long cl = 0;
            char *p = memmem(rb->buf, hl, "Content-Length: ", 16);
            if (p && !head_only_body && strncmp(rb->buf, "HTTP/1.1 100", 12) != 0) cl = atol(p + 16);
            while (rb->len < hl + (size_t)cl) {
                ssize_t r = read(fd, rb->buf + rb->len, sizeof rb->buf - rb->len);
                if (r <= 0) return -1;
                rb->len += (size_t)r;
            }
            if (head) { memcpy(head, rb->buf, hl); head[hl] = 0; }
            if (body) { memcpy(body, rb->buf + hl, (size_t)cl); body[cl] = 0; }
            int st = atoi(rb->buf + 9);
            memmove(rb->buf, rb->buf + hl + cl, rb->len - hl - (size_t)cl);
            rb->len -= hl + (size_t)cl;
            return st;
        }
        ssize_t r = read(fd, rb->buf + rb->len, sizeof rb->buf - rb->len);
        if (r <= 0) return -1;
        rb->len += (size_t)r;
    }
}

static bool at_eof(int fd, rbuf_t *rb)
{
    if (rb->len) return false;
    char c;
    return read(fd, &c, 1) == 0;
}

FL_TEST(http_server_live)
{
    static rbuf_t rb;
    static char head[8192], body[1 << 16];
    snprintf(file_path, sizeof file_path, "%s/f", fl_test_tmpdir());
    FILE *f = fopen(file_path, "w");
    REQUIRE(f);
    for (int i = 0; i < 10000; i++) fprintf(f, "%05d\n", i);
    fclose(f);

    int saved = fl_log_level;
    fl_log_level = FL_LOG_WARN;
    fl_http_server_cfg_t cfg = { .name = "t", .listen = "127.0.0.1:0", .handler = echo_handler,
                                 .max_body_bytes = 1 << 20, .access_log = true };
    fl_http_server_t *s = fl_http_server_start(&cfg);
    REQUIRE(s);
    int port = fl_http_server_port(s);
    CHECK(port > 0);
    int fd = dial(port);
    REQUIRE(fd >= 0);
    rb.len = 0;

    /* health */
    put(fd, "GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 200);
    CHECK_STR(body, "ok");
    CHECK(strstr(head, "Server: floe\r\n") && strstr(head, "Date: "));

    /* two pipelined requests in one write, the first with a body */
    put(fd, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello"
            "GET /echo?a=1 HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 200);
    CHECK_STR(body, "hello");
    CHECK(strstr(head, "X-Method: POST\r\n") != NULL);
    char id1[17] = "";
    const char *idp = strstr(head, "X-Id: ");
    if (idp) memcpy(id1, idp + 6, 16);
    CHECK_EQ(strspn(id1, "0123456789abcdef"), 16);
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 200);
    CHECK_STR(body, "");
    CHECK(strstr(head, "X-Query: a=1\r\n") != NULL);
    idp = strstr(head, "X-Id: ");
    CHECK(idp && strncmp(idp + 6, id1, 16) != 0 && idp[22] == '\r');
    CHECK(strstr(head, "Connection: close") == NULL);

    /* 100-continue: the interim response comes on the handler's first read */
    put(fd, "PUT /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
    CHECK_EQ(get_resp(fd, &rb, false, head, NULL), 100);
    CHECK_STR(head, "HTTP/1.1 100 Continue\r\n\r\n");
    put(fd, "data");
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 200);
    CHECK_STR(body, "data");

    /* chunked upload, echoed decoded */
    put(fd, "PUT /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
            "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-T: 1\r\n\r\n");
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 200);
    CHECK_STR(body, "hello world");

    /* HEAD: Content-Length but no body; the next response follows directly */
    put(fd, "HEAD /health HTTP/1.1\r\nHost: t\r\n\r\nGET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK_EQ(get_resp(fd, &rb, true, head, NULL), 200);
    CHECK(strstr(head, "Content-Length: 2\r\n") != NULL);
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 200);
    CHECK_STR(body, "ok");

    /* unread small body is drained and the connection stays usable */
    put(fd, "POST /reject HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n0123456789");
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 403);
    CHECK(strstr(head, "Connection: close") == NULL);

    /* handler that never responds: 500 */
    put(fd, "GET /noresp HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 500);
    CHECK(strstr(body, "<Code>InternalError</Code>") != NULL);

    /* sendfile */
    put(fd, "GET /file HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 200);
    CHECK_EQ(strlen(body), 60000 - 10);
    CHECK(strncmp(body, "1\n00002\n", 8) == 0);

    /* metrics */
    put(fd, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 200);
    CHECK(strstr(body, "floe_http_requests_total{server=\"t\",op=\"Echo\",status=\"200\"} 4\n") != NULL);
    CHECK(strstr(body, "floe_http_requests_total{server=\"t\",op=\"unknown\",status=\"500\"} 1\n") != NULL);
    CHECK(strstr(body, "floe_http_request_duration_seconds_bucket{server=\"t\",op=\"Echo\",le=\"+Inf\"} 4\n") != NULL);
    CHECK(strstr(body, "floe_http_request_duration_seconds_count{server=\"t\",op=\"health\"}") != NULL);
    CHECK(strstr(body, "floe_http_connections{server=\"t\"} 1\n") != NULL);
    CHECK(strstr(body, "floe_http_connections_active{server=\"t\"} 1\n") != NULL);
    CHECK(strstr(body, "# TYPE floe_http_connections_parked gauge\n") != NULL);
    CHECK(strstr(body, "# TYPE floe_http_bytes_sent_total counter\nfloe_http_bytes_sent_total{server=\"t\"} ") != NULL);

    /* 100-continue rejected without reading: no 100, response, then close */
    put(fd, "PUT /reject HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n");
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 403);
    CHECK(strstr(head, "Connection: close\r\n") != NULL);
    CHECK(at_eof(fd, &rb));
    close(fd);

    /* malformed head: 400 with an XML body, then close */
    fd = dial(port);
    rb.len = 0;
    put(fd, "GET / HTTP/1.1\r\nHost : t\r\n\r\n");
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 400);
    CHECK(strstr(head, "Connection: close\r\n") != NULL);
    CHECK(strstr(body, "<Error><Code>BadRequest</Code>") != NULL);
    CHECK(at_eof(fd, &rb));
    close(fd);

    /* unsupported transfer coding: 501; body over max_body_bytes: 413 */
    fd = dial(port);
    rb.len = 0;
    put(fd, "PUT / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n");
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 501);
    close(fd);
    fd = dial(port);
    rb.len = 0;
    put(fd, "PUT /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n\r\n");
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 413);
    CHECK(strstr(body, "EntityTooLarge") != NULL);
    close(fd);

    /* HTTP/1.0 without keep-alive closes after the response */
    fd = dial(port);
    rb.len = 0;
    put(fd, "GET /health HTTP/1.0\r\n\r\n");
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 200);
    CHECK(strstr(head, "Connection: close\r\n") != NULL);
    CHECK(at_eof(fd, &rb));
    close(fd);

    /* an idle keep-alive connection does not hold up stop */
    fd = dial(port);
    rb.len = 0;
    put(fd, "GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 200);
    fl_http_server_stop(s, 2000);
    CHECK(at_eof(fd, &rb));
    close(fd);
    fl_log_level = saved;
}

static int dial_from(int port, const char *src)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct sockaddr_in b = { .sin_family = AF_INET };
    inet_pton(AF_INET, src, &b.sin_addr);
    struct timeval tv = { .tv_sec = 5 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (bind(fd, (struct sockaddr *)&b, sizeof b) < 0 ||
        connect(fd, (struct sockaddr *)&a, sizeof a) < 0) { close(fd); return -1; }
    return fd;
}

/* Waits until the server's gauge `name` reads want (the poller works
 * asynchronously). */
static bool gauge_is(int port, const char *name, const char *server, long want)
{
    static rbuf_t rb;
    static char head[4096], body[1 << 16];
    char key[128];
    snprintf(key, sizeof key, "%s{server=\"%s\"} ", name, server);
    for (int i = 0; i < 200; i++) {
        int fd = dial(port);
        rb.len = 0;
        put(fd, "GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        int st = get_resp(fd, &rb, false, head, body);
        close(fd);
        const char *p = st == 200 ? strstr(body, key) : NULL;
        if (p && atol(p + strlen(key)) == want) return true;
        usleep(10000);
    }
    return false;
}

FL_TEST(http_server_conn_cap)
{
    static rbuf_t rb, rb2, rb3;
    static char head[4096], body[4096];
    int saved = fl_log_level;
    fl_log_level = FL_LOG_WARN;
    fl_http_server_cfg_t cfg = { .name = "cap", .listen = "127.0.0.1:0", .handler = echo_handler,
                                 .max_connections = 2 };
    fl_http_server_t *s = fl_http_server_start(&cfg);
    REQUIRE(s);
    int port = fl_http_server_port(s);
    /* a: mid-request (its body never finishes), so it cannot be evicted */
    int a = dial(port);
    rb.len = 0;
    put(a, "PUT /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n01234");
    usleep(200000);
    /* b: idle, parked; the next newcomer takes its place */
    int b = dial(port);
    usleep(200000);
    int c = dial(port);
    rb2.len = 0;
    put(c, "GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK_EQ(get_resp(c, &rb2, false, head, body), 200);
    rb3.len = 0;
    CHECK(at_eof(b, &rb3));
    close(b);
    usleep(200000);
    /* c is parked again: d takes its place and stays mid-request */
    int d = dial(port);
    put(d, "PUT /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n01234");
    usleep(200000);
    rb2.len = 0;
    CHECK(at_eof(c, &rb2));
    close(c);
    /* with every connection mid-request, a newcomer gets 503 SlowDown */
    int e = dial(port);
    rb3.len = 0;
    CHECK_EQ(get_resp(e, &rb3, false, head, body), 503);
    CHECK(strstr(body, "SlowDown") != NULL);
    close(e);
    put(a, "56789");
    CHECK_EQ(get_resp(a, &rb, false, head, body), 200);
    CHECK_STR(body, "0123456789");
    close(a);
    close(d);
    fl_http_server_stop(s, 1000);
    fl_log_level = saved;
}

FL_TEST(http_server_per_address_cap)
{
    static rbuf_t rb;
    static char head[4096], body[4096];
    int saved = fl_log_level;
    fl_log_level = FL_LOG_WARN;
    fl_http_server_cfg_t cfg = { .name = "peraddr", .listen = "127.0.0.1:0", .handler = echo_handler };
    fl_http_server_t *s = fl_http_server_start(&cfg);
    REQUIRE(s);
    int port = fl_http_server_port(s);
    enum { N = FL_HTTP_MAX_CONNS_PER_ADDR + 20 };
    static int fds[N];
    int opened = 0;
    for (int i = 0; i < N; i++) {
        fds[i] = dial_from(port, "127.0.0.2");
        if (fds[i] >= 0) opened++;
    }
    CHECK_EQ(opened, N);
    /* the address holds its cap; its oldest idle connections were closed */
    /* (+1: the /metrics request itself) */
    CHECK(gauge_is(port, "floe_http_connections", "peraddr", FL_HTTP_MAX_CONNS_PER_ADDR + 1));
    rb.len = 0;
    CHECK(at_eof(fds[0], &rb));
    /* another address is served */
    int fd = dial(port);
    rb.len = 0;
    put(fd, "GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK_EQ(get_resp(fd, &rb, false, head, body), 200);
    /* and the newest from the crowded address still works */
    int last = fds[N - 1];
    rb.len = 0;
    put(last, "GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK_EQ(get_resp(last, &rb, false, head, body), 200);
    close(fd);
    for (int i = 0; i < N; i++)
        if (fds[i] >= 0) close(fds[i]);
    fl_http_server_stop(s, 1000);
    fl_log_level = saved;
}
