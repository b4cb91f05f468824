/* loadgen.h: what bench/s3load.c and bench/catalogload.c share. Header-only
 * (every bench .c file is its own executable, built by CMake or straight with gcc
 * by bench/run.sh and bench/catalog.sh), so everything here is static inline.
 *
 * Define LG_NAME (the program's name, the prefix of its messages) before
 * including; LG_HEAD_MAX (request head buffer, default 4096) optionally.
 *
 *  - options every load generator takes (lg.*, lg_arg) and the endpoint;
 *  - the run's shared state: barrier, --requests budget, --seconds deadline;
 *  - one keep-alive HTTP/1.1 connection over a blocking socket (lg_conn_t):
 *    connect, buffered reads, response head and body, writev of a request;
 *  - AWS SigV4 (HMAC-SHA256 with OpenSSL, signing key cached per day);
 *  - latency samples and percentiles;
 *  - CPU accounting of the timed window (client, server, rest of the machine,
 *    and named groups of processes: --cpu-group) and the JSON fields that
 *    report it. */
#ifndef FLOE_BENCH_LOADGEN_H
#define FLOE_BENCH_LOADGEN_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strcasestr */
#endif
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef LG_NAME
#error "define LG_NAME before including loadgen.h"
#endif
#ifndef LG_HEAD_MAX
#define LG_HEAD_MAX 4096
#endif

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define MAX_CONSEC_ERRORS 20
#define IO_TIMEOUT_S 60
#define LG_ERR_MAX 512 /* size of a result's err[] */

/* ======================= options and run state ======================= */

static struct {
    const char *endpoint;
    const char *access_key;
    const char *secret_key;
    const char *region;
    const char *label;
    int clients;
    double seconds;
    long requests;   /* total; 0 when --seconds is used */
    long server_pid; /* for CPU accounting of the timed window; 0 = none */
} lg = {.region = "us-east-1", .label = "", .clients = 1};

static char g_hostport[256]; /* Host header value, from --endpoint */
static struct sockaddr_storage g_addr;
static socklen_t g_addrlen;
static pthread_barrier_t g_barrier;
static atomic_long g_remaining; /* --requests budget */
static double g_deadline;       /* --seconds: monotonic deadline */
static atomic_int g_first_error_printed;

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((format(printf, 1, 2), noreturn)) static inline void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, LG_NAME ": ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

/* --cpu-group NAME:PID[,PID...] (repeatable): the CPU seconds those processes
 * spent in the timed window, reported as "cpu":{"NAME":s,...}. "+PID" counts
 * PID and its children (found at each end of the window: a child born inside
 * it counts from zero, one that exited inside it is missed), e.g. PostgreSQL's
 * postmaster and its backends. */
#define LG_MAX_GROUPS 8
#define LG_GROUP_PIDS 16
#define LG_MARK_PIDS 512
typedef struct {
    char name[32];
    long pids[LG_GROUP_PIDS];
    bool children[LG_GROUP_PIDS];
    int npids;
} lg_group_t;
static lg_group_t lg_groups[LG_MAX_GROUPS];
static int lg_ngroups;

static inline void lg_cpu_group_arg(const char *v)
{
    const char *colon = strchr(v, ':');
    if (!colon || colon == v || (size_t)(colon - v) >= sizeof(lg_groups[0].name) || lg_ngroups >= LG_MAX_GROUPS) {
        fprintf(stderr, LG_NAME ": --cpu-group NAME:PID[,PID...] (at most %d groups)\n", LG_MAX_GROUPS);
        exit(2);
    }
    lg_group_t *g = &lg_groups[lg_ngroups++];
    memcpy(g->name, v, (size_t)(colon - v));
    for (const char *p = colon + 1; *p && g->npids < LG_GROUP_PIDS;) {
        bool kids = *p == '+';
        long pid = strtol(p + kids, (char **)&p, 10);
        if (pid > 0) {
            g->children[g->npids] = kids;
            g->pids[g->npids++] = pid;
        }
        if (*p == ',') p++;
        else if (*p) break;
    }
}

/* The options all load generators take: true when a is one (v its value). */
static inline bool lg_arg(const char *a, const char *v)
{
    if (strcmp(a, "--endpoint") == 0) lg.endpoint = v;
    else if (strcmp(a, "--access-key") == 0) lg.access_key = v;
    else if (strcmp(a, "--secret-key") == 0) lg.secret_key = v;
    else if (strcmp(a, "--region") == 0) lg.region = v;
    else if (strcmp(a, "--label") == 0) lg.label = v;
    else if (strcmp(a, "--clients") == 0) lg.clients = atoi(v);
    else if (strcmp(a, "--seconds") == 0) lg.seconds = atof(v);
    else if (strcmp(a, "--requests") == 0) lg.requests = atol(v);
    else if (strcmp(a, "--server-pid") == 0) lg.server_pid = atol(v);
    else if (strcmp(a, "--cpu-group") == 0) lg_cpu_group_arg(v);
    else return false;
    return true;
}

/* Parses argv: flag (a switch without value) sets *flag_on; every other
 * option takes a value: a common one (lg_arg), else own(a, v) (false: not
 * one of its options). --help, -h, an unknown option or a missing value
 * call usage, which exits. */
static inline void lg_parse_args(int argc, char **argv, const char *flag, bool *flag_on,
                                 bool (*own)(const char *a, const char *v), void (*usage)(void))
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, flag) == 0) {
            *flag_on = true;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 || i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (!lg_arg(a, v) && !own(a, v))
            usage();
    }
}

/* --endpoint http://host[:port] -> g_hostport and g_addr (plain HTTP only). */
static inline void lg_parse_endpoint(void)
{
    const char *e = lg.endpoint;
    if (strncmp(e, "http://", 7) != 0)
        die("--endpoint must be http://HOST[:PORT]");
    e += 7;
    size_t n = strlen(e);
    if (n == 0 || n >= sizeof(g_hostport) || strchr(e, '/'))
        die("--endpoint must be http://HOST[:PORT] (no path, no trailing '/')");
    memcpy(g_hostport, e, n + 1);
    char host[256], port[16] = "80";
    const char *colon = strrchr(e, ':');
    if (e[0] == '[') {
        const char *rb = strchr(e, ']');
        if (!rb)
            die("bad endpoint");
        snprintf(host, sizeof(host), "%.*s", (int)(rb - e - 1), e + 1);
        if (rb[1] == ':')
            snprintf(port, sizeof(port), "%s", rb + 2);
    } else if (colon) {
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

/* May a client start another timed request? */
static inline bool take_request(void)
{
    if (lg.requests > 0)
        return atomic_fetch_sub(&g_remaining, 1) > 0;
    return now_s() < g_deadline;
}

/* Prints the run's first failure only: "NAME: what[ path]: status S: msg". */
static inline void lg_report_error(const char *what, const char *path, long status,
                                   const char *msg)
{
    if (atomic_exchange(&g_first_error_printed, 1) == 0)
        fprintf(stderr, LG_NAME ": %s%s%s: status %ld: %.400s\n", what, path ? " " : "",
                path ? path : "", status, msg);
}

/* A thread with a 256 KiB stack; dies if it cannot be created. */
static inline void lg_spawn(pthread_t *th, void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    if (pthread_create(th, &attr, fn, arg) != 0)
        die("pthread_create failed");
    pthread_attr_destroy(&attr);
}

/* Runs fn on each of n elements of an array (stride bytes apart), a thread
 * each, all at once, and waits for all (the per-client setup phase). */
static inline void lg_run_each(void *(*fn)(void *), void *array, size_t stride, int n)
{
    pthread_t *th = calloc((size_t)n, sizeof(pthread_t));
    if (!th)
        die("out of memory");
    for (int i = 0; i < n; i++)
        lg_spawn(&th[i], fn, (char *)array + (size_t)i * stride);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    free(th);
}

/* ======================= SigV4 ======================= */

static inline void hex32(char out[65], const unsigned char in[32])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hx[in[i] >> 4];
        out[2 * i + 1] = hx[in[i] & 15];
    }
    out[64] = 0;
}

static inline void hmac256(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
    unsigned int olen = 32;
    if (!HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &olen))
        die("HMAC failed");
}

/* x-amz-date value for now, "YYYYMMDDTHHMMSSZ". */
static inline void lg_amzdate(char out[17])
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

/* Signing key cache: the key for the day it was derived for. */
typedef struct {
    char kdate[9];
    unsigned char kkey[32];
} lg_sigkey_t;

/* Authorization header value for the signed headers host, x-amz-content-sha256
 * and x-amz-date. curi: canonical URI; query: canonical query ("" if none). */
static inline void lg_sigv4(lg_sigkey_t *k, const char *service, const char *method,
                            const char *curi, const char *query, const char *payload_hash,
                            const char *amzdate, char *auth, size_t authlen)
{
    char date[9];
    memcpy(date, amzdate, 8);
    date[8] = 0;
    if (strcmp(date, k->kdate) != 0) {
        char secret[300];
        unsigned char k1[32], k2[32];
        snprintf(secret, sizeof(secret), "AWS4%s", lg.secret_key);
        hmac256(secret, strlen(secret), date, k1);
        hmac256(k1, 32, lg.region, k2);
        hmac256(k2, 32, service, k1);
        hmac256(k1, 32, "aws4_request", k->kkey);
        memcpy(k->kdate, date, 9);
    }
    char canon[3072], hx[65], sts[512], sig[65];
    unsigned char h[32];
    int n = snprintf(canon, sizeof(canon),
                     "%s\n%s\n%s\nhost:%s\nx-amz-content-sha256:%s\nx-amz-date:%s\n\n"
                     "host;x-amz-content-sha256;x-amz-date\n%s",
                     method, curi, query, g_hostport, payload_hash, amzdate, payload_hash);
    if (n < 0 || (size_t)n >= sizeof(canon))
        die("request too long");
    SHA256((const unsigned char *)canon, (size_t)n, h);
    hex32(hx, h);
    snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", amzdate, date,
             lg.region, service, hx);
    hmac256(k->kkey, 32, sts, h);
    hex32(sig, h);
    snprintf(auth, authlen,
             "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, "
             "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=%s",
             lg.access_key, date, lg.region, service, sig);
}

/* ======================= HTTP/1.1 over one socket ======================= */

typedef struct {
    int fd;
    bool reused;         /* the connection has served a request already */
    char *rbuf;
    size_t rcap;         /* size of rbuf */
    size_t rlen, roff;   /* valid bytes rbuf[roff..rlen) */
    uint64_t rx;         /* bytes received on this connection */
    long connects;
    lg_sigkey_t key;
    char head[LG_HEAD_MAX]; /* the request head being sent */
} lg_conn_t;

/* Where response body bytes go. */
typedef void lg_sink_fn(void *ctx, const char *p, size_t n);

static inline void lg_conn_init(lg_conn_t *c, size_t rcap)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    c->rcap = rcap;
    c->rbuf = malloc(rcap);
    if (!c->rbuf)
        die("out of memory");
}

static inline void lg_conn_close(lg_conn_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->rlen = c->roff = 0;
}

static inline void lg_conn_free(lg_conn_t *c)
{
    lg_conn_close(c);
    free(c->rbuf);
}

/* err: LG_ERR_MAX bytes, set on failure (as in all functions below). */
static inline int lg_conn_connect(lg_conn_t *c, char *err)
{
    lg_conn_close(c);
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
    snprintf(err, LG_ERR_MAX, "connect: %s", strerror(errno));
    return -1;
}

/* Reads more bytes into the buffer (compacting it first). 0 ok, -1 EOF/error. */
static inline int lg_conn_fill(lg_conn_t *c, char *err)
{
    if (c->roff == c->rlen)
        c->roff = c->rlen = 0;
    else if (c->roff > 0 && c->rlen == c->rcap) {
        memmove(c->rbuf, c->rbuf + c->roff, c->rlen - c->roff);
        c->rlen -= c->roff;
        c->roff = 0;
    }
    if (c->rlen == c->rcap) {
        snprintf(err, LG_ERR_MAX, "response head too large");
        return -1;
    }
    ssize_t n;
    do
        n = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
        snprintf(err, LG_ERR_MAX, "recv: %s", n == 0 ? "connection closed" : strerror(errno));
        return -1;
    }
    c->rlen += (size_t)n;
    c->rx += (uint64_t)n;
    return 0;
}

/* Next line (without CRLF) from the buffer, NUL-terminated in place. */
static inline char *lg_conn_line(lg_conn_t *c, char *err)
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
        if (lg_conn_fill(c, err) != 0)
            return NULL;
    }
}

/* Consumes n body bytes into sink: from the buffer, then recv straight into it. */
static inline int lg_conn_take(lg_conn_t *c, uint64_t n, lg_sink_fn *sink, void *ctx, char *err)
{
    while (n > 0) {
        if (c->roff == c->rlen && lg_conn_fill(c, err) != 0)
            return -1;
        size_t k = c->rlen - c->roff;
        if (k > n)
            k = (size_t)n;
        sink(ctx, c->rbuf + c->roff, k);
        c->roff += k;
        n -= k;
    }
    return 0;
}

/* Writes all of iov (modified on the way). */
static inline int lg_send_all(int fd, struct iovec *iov, int cnt, char *err)
{
    while (cnt > 0) {
        struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
        ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            snprintf(err, LG_ERR_MAX, "send: %s", strerror(errno));
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

/* Reads one response head (1xx included). Returns 0 and sets status, clen
 * (-1 if absent), chunked and conn_close. */
static inline int lg_read_head(lg_conn_t *c, char *err, long *status, int64_t *clen,
                               bool *chunked, bool *conn_close)
{
    char *l = lg_conn_line(c, err);
    if (!l)
        return -1;
    int minor = 1;
    long st;
    if (sscanf(l, "HTTP/1.%d %ld", &minor, &st) != 2) {
        snprintf(err, LG_ERR_MAX, "bad status line: %.200s", l);
        return -1;
    }
    *status = st;
    *clen = -1;
    *chunked = false;
    *conn_close = minor == 0;
    for (;;) {
        l = lg_conn_line(c, err);
        if (!l)
            return -1;
        if (!*l)
            return 0;
        char *v = strchr(l, ':');
        if (!v)
            continue;
        *v++ = 0;
        while (*v == ' ' || *v == '\t')
            v++;
        if (strcasecmp(l, "content-length") == 0)
            *clen = strtoll(v, NULL, 10);
        else if (strcasecmp(l, "transfer-encoding") == 0)
            *chunked = strcasestr(v, "chunked") != NULL;
        else if (strcasecmp(l, "connection") == 0) {
            if (strcasestr(v, "close"))
                *conn_close = true;
            else if (strcasestr(v, "keep-alive"))
                *conn_close = false;
        }
    }
}

/* Reads the body of a final response into sink; no_body for HEAD. A body
 * without length runs to EOF (then *conn_close). */
static inline int lg_read_body(lg_conn_t *c, bool no_body, long status, int64_t clen,
                               bool chunked, bool *conn_close, lg_sink_fn *sink, void *ctx,
                               char *err)
{
    if (no_body || status == 204 || status == 304)
        return 0;
    if (chunked) {
        for (;;) {
            char *l = lg_conn_line(c, err);
            if (!l)
                return -1;
            uint64_t n = strtoull(l, NULL, 16);
            if (n == 0)
                break;
            if (lg_conn_take(c, n, sink, ctx, err) != 0 || !lg_conn_line(c, err))
                return -1;
        }
        for (;;) { /* trailers */
            char *l = lg_conn_line(c, err);
            if (!l)
                return -1;
            if (!*l)
                return 0;
        }
    }
    if (clen >= 0)
        return lg_conn_take(c, (uint64_t)clen, sink, ctx, err);
    *conn_close = true;
    while (lg_conn_fill(c, err) == 0) {
        sink(ctx, c->rbuf + c->roff, c->rlen - c->roff);
        c->roff = c->rlen;
    }
    return 0;
}

/* After a complete exchange: keep the connection for the next request or close it. */
static inline void lg_conn_done(lg_conn_t *c, bool close_it)
{
    if (close_it)
        lg_conn_close(c);
    else
        c->reused = true;
}

/* ======================= latency samples ======================= */

typedef struct {
    double *v;
    size_t n, cap;
} lat_t;

static inline void lat_push(lat_t *l, double v)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4096;
        l->v = realloc(l->v, l->cap * sizeof(double));
        if (!l->v)
            die("out of memory");
    }
    l->v[l->n++] = v;
}

static inline int cmp_double(const void *a, const void *b)
{
    double p = *(const double *)a, q = *(const double *)b;
    return (p > q) - (p < q);
}

/* Moves src's samples to the end of dst (src is left empty). */
static inline void lat_move(lat_t *dst, lat_t *src)
{
    if (dst->n + src->n > dst->cap) {
        size_t cap = dst->cap ? dst->cap : 4096;
        while (cap < dst->n + src->n)
            cap *= 2;
        dst->cap = cap;
        dst->v = realloc(dst->v, cap * sizeof(double));
        if (!dst->v)
            die("out of memory");
    }
    if (src->n)
        memcpy(dst->v + dst->n, src->v, src->n * sizeof(double));
    dst->n += src->n;
    free(src->v);
    *src = (lat_t){0};
}

static inline void lat_sort(lat_t *l)
{
    if (l->n)
        qsort(l->v, l->n, sizeof(double), cmp_double);
}

/* Percentile p (0..1) of sorted samples, 0 if none. */
static inline double lat_pct(const lat_t *l, double p)
{
    if (l->n == 0)
        return 0;
    size_t i = (size_t)(p * (double)(l->n - 1) + 0.5);
    return l->v[i < l->n ? i : l->n - 1];
}

/* ======================= CPU accounting ======================= */

/* utime+stime of a process in seconds (-1 if unknown). */
static inline double proc_cpu_s(long pid)
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

/* CPU seconds all cores spent busy (user+nice+system+irq+softirq+steal). */
static inline double machine_busy_s(void)
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

/* The processes of the --cpu-group groups at one moment and their CPU seconds. */
typedef struct {
    int n;
    int group[LG_MARK_PIDS];
    long pid[LG_MARK_PIDS];
    double cpu[LG_MARK_PIDS];
} lg_pids_mark_t;

static inline void lg_pids_add(lg_pids_mark_t *m, int g, long pid)
{
    if (m->n >= LG_MARK_PIDS) return;
    double c = proc_cpu_s(pid);
    if (c < 0) return;
    m->group[m->n] = g;
    m->pid[m->n] = pid;
    m->cpu[m->n++] = c;
}

/* The parent pid from /proc/PID/stat (-1 if unknown). */
static inline long proc_ppid(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    long ppid;
    return p && sscanf(p + 2, "%*c %ld", &ppid) == 1 ? ppid : -1;
}

#include <dirent.h>
static inline void lg_pids_mark(lg_pids_mark_t *m)
{
    m->n = 0;
    bool any_kids = false;
    for (int g = 0; g < lg_ngroups; g++)
        for (int i = 0; i < lg_groups[g].npids; i++) {
            lg_pids_add(m, g, lg_groups[g].pids[i]);
            any_kids |= lg_groups[g].children[i];
        }
    if (!any_kids) return;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        long pid = atol(e->d_name);
        if (pid <= 0) continue;
        long pp = proc_ppid(pid);
        for (int g = 0; g < lg_ngroups; g++)
            for (int i = 0; i < lg_groups[g].npids; i++)
                if (lg_groups[g].children[i] && lg_groups[g].pids[i] == pp) lg_pids_add(m, g, pid);
    }
    if (d) closedir(d);
}

/* CPU counters at one moment: this process, the server, the machine, the groups. */
typedef struct {
    struct rusage ru;
    double srv, mach;
    lg_pids_mark_t groups;
} lg_cpu_mark_t;

/* CPU seconds over the timed window; -1 where unknown. */
typedef struct {
    double client, server, other;
    double group[LG_MAX_GROUPS];
} lg_cpu_t;

static inline void lg_cpu_mark(lg_cpu_mark_t *m)
{
    getrusage(RUSAGE_SELF, &m->ru);
    m->srv = lg.server_pid ? proc_cpu_s(lg.server_pid) : -1;
    lg_pids_mark(&m->groups);
    m->mach = machine_busy_s();
}

/* From m0 to now. other = busy - client - server: other processes, kernel threads. */
static inline lg_cpu_t lg_cpu_since(const lg_cpu_mark_t *m0)
{
    static lg_cpu_mark_t m1; /* large: off the stack */
    lg_cpu_mark(&m1);
    const struct rusage *r0 = &m0->ru, *r1 = &m1.ru;
    lg_cpu_t c;
    c.client = (double)(r1->ru_utime.tv_sec - r0->ru_utime.tv_sec) +
               (double)(r1->ru_utime.tv_usec - r0->ru_utime.tv_usec) / 1e6 +
               (double)(r1->ru_stime.tv_sec - r0->ru_stime.tv_sec) +
               (double)(r1->ru_stime.tv_usec - r0->ru_stime.tv_usec) / 1e6;
    c.server = (m0->srv >= 0 && m1.srv >= 0) ? m1.srv - m0->srv : -1;
    c.other = -1;
    if (m0->mach >= 0 && m1.mach >= 0) {
        c.other = m1.mach - m0->mach - c.client - (c.server > 0 ? c.server : 0);
        if (c.other < 0)
            c.other = 0;
    }
    for (int g = 0; g < LG_MAX_GROUPS; g++)
        c.group[g] = 0;
    for (int i = 0; i < m1.groups.n; i++) {
        double before = 0;
        for (int j = 0; j < m0->groups.n; j++)
            if (m0->groups.pid[j] == m1.groups.pid[i]) before = m0->groups.cpu[j];
        c.group[m1.groups.group[i]] += m1.groups.cpu[i] - before;
    }
    return c;
}

/* Main thread, with the timed threads waiting at the barrier twice: marks the
 * CPU counters, starts the clock (deadline for --seconds), releases them.
 * Returns the start time. */
static inline double lg_start_timed(lg_cpu_mark_t *m0)
{
    pthread_barrier_wait(&g_barrier);
    lg_cpu_mark(m0);
    double t0 = now_s();
    g_deadline = t0 + lg.seconds;
    pthread_barrier_wait(&g_barrier);
    return t0;
}

/* The JSON line's last fields (and its end): CPU of the window and
 * reconnects (connects beyond one per client). */
static inline void lg_print_tail(const lg_cpu_t *c, long connects)
{
    printf(",\"client_cpu_s\":%.3f,\"server_cpu_s\":%.3f,\"other_cpu_s\":%.3f,"
           "\"reconnects\":%ld",
           c->client, c->server, c->other, connects > lg.clients ? connects - lg.clients : 0);
    if (lg_ngroups) {
        printf(",\"cpu\":{");
        for (int g = 0; g < lg_ngroups; g++)
            printf("%s\"%s\":%.3f", g ? "," : "", lg_groups[g].name, c->group[g]);
        printf("}");
    }
    printf("}\n");
    fflush(stdout);
}

#endif
