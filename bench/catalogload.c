/* catalogload: a load generator for floe's Iceberg REST catalog (bench/catalog.sh).
 *
 *   catalogload --endpoint http://127.0.0.1:PORT --access-key AK --secret-key SK
 *               --op load|commit --clients N (--seconds S | --requests N)
 *               [--bucket TABLE_BUCKET] [--namespace NS] [--table T]
 *               [--base /iceberg/v1] [--warehouse W] [--prefix P]
 *               [--auth sigv4|none|oauth] [--sign-name s3tables]
 *               [--region R] [--label L] [--server-pid PID] [--setup-only]
 *               [--tables N]
 *
 * Any Iceberg REST catalog: --base is the REST base path (floe: /iceberg/v1,
 * Iceberg's reference server and SeaweedFS: /v1). Setup (untimed, one
 * connection):
 *  - without --warehouse (floe): creates the table bucket with the S3 Tables
 *    API (PUT /buckets {"name":B}; 409 = exists, then the ARN comes from
 *    GET /buckets); warehouse = the ARN, prefix = the ARN percent-encoded
 *    (':' -> %3A, '/' -> %2F);
 *  - with --warehouse W: no S3 Tables call; the prefix is --prefix if given,
 *    else overrides.prefix (or defaults.prefix) of GET {base}/config?warehouse=W
 *    (verbatim, as Iceberg clients use it), else none ({base}/namespaces...);
 *  then GET {base}/config?warehouse=..., the namespace
 *  (POST {base}/{prefix}/namespaces) and the table (POST
 *  .../namespaces/{ns}/tables, schema {id: long}); 409 on either means it exists.
 * Auth: sigv4 (default; signing name --sign-name, default s3tables), none, or
 * oauth (client_credentials at POST {base}/oauth/tokens with the access key
 * as client_id and the secret key as client_secret, then Bearer).
 *
 * --tables N (default 1): N tables T0 .. T{N-1} instead of T, all made in
 * setup. With N >= clients, client i takes the tables whose number is i modulo
 * the clients, in turn, so no two clients touch one table (commits spread over
 * N tables); with fewer tables than clients, client i keeps to table i mod N.
 *
 * Timed phase:
 *  - load: GET {base}/{prefix}/namespaces/{ns}/tables/{t} (loadTable);
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
 * What it shares with bench/s3load.c (options, HTTP/1.1 connection, SigV4,
 * latency and CPU accounting) is in bench/loadgen.h (found next to it).
 *
 * Standalone build: gcc -O2 -Wall -Wextra -Werror -std=gnu17 bench/catalogload.c -lcrypto -lpthread
 * The CMake build also compiles it (linked with floe_core, which it does not use). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strcasestr, memmem */
#endif
#define LG_NAME "catalogload"
#include "loadgen.h"

#include <signal.h>
#include <sys/random.h>

#define RBUF_SIZE (256 * 1024)
typedef enum { AUTH_SIGV4, AUTH_NONE, AUTH_OAUTH } auth_t;

typedef enum { OP_LOAD, OP_COMMIT } op_t;

/* Besides the common options in lg (loadgen.h). */
static struct {
    const char *bucket, *ns, *table;
    const char *base;      /* REST base path, e.g. /iceberg/v1 or /v1 */
    const char *warehouse; /* NULL: floe, via an S3 Tables table bucket */
    const char *prefix;    /* NULL: from the config response */
    const char *sign_name; /* SigV4 signing name */
    auth_t auth;
    op_t op;
    bool setup_only;
    int ntables;           /* --tables */
} cfg;

static char g_arn[256];
static char g_prefix[512];     /* "" or "/" + the percent-encoded prefix */
typedef struct {
    char path[1024];           /* {base}{prefix}/namespaces/{ns}/tables/{t} */
    char location[256];        /* the table's location, s3://... */
} table_t;
static table_t *g_tables;      /* cfg.ntables */
static char g_bearer[2048];    /* --auth oauth: the access token */

/* ======================= requests (HTTP/1.1 + SigV4, loadgen.h) ======================= */

typedef struct {
    long status;
    int64_t clen;
    char *body;          /* captured response body (when asked), NUL-terminated */
    size_t blen, bcap;
    bool capture;
    char err[LG_ERR_MAX];
} result_t;

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

/* Response body bytes: kept in x->body when x->capture, else only counted. */
static void body_add(void *ctx, const char *p, size_t n)
{
    result_t *x = ctx;
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

/* One attempt: 0 when a final response was read; *retryable when a reused
 * connection yielded nothing at all (closed idle by the server). */
static int attempt(lg_conn_t *c, const char *method, const char *path, const char *query,
                   const char *body, size_t len, result_t *x, bool *retryable)
{
    *retryable = false;
    char amzdate[17], ph[65], auth[2600] = "", curi[2048];
    if (cfg.auth == AUTH_SIGV4) {
        lg_amzdate(amzdate);
        if (len)
            sha256_hex(body, len, ph);
        else
            memcpy(ph, EMPTY_SHA256, 65);
        canon_uri(path, curi, sizeof(curi));
        char sig[512];
        lg_sigv4(&c->key, cfg.sign_name, method, curi, query, ph, amzdate, sig, sizeof(sig));
        snprintf(auth, sizeof(auth), "x-amz-date: %s\r\nx-amz-content-sha256: %s\r\nAuthorization: %s\r\n",
                 amzdate, ph, sig);
    } else if (cfg.auth == AUTH_OAUTH && g_bearer[0]) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n", g_bearer);
    }
    size_t plen = strlen(path);
    const char *ctype = plen >= 7 && strcmp(path + plen - 7, "/tokens") == 0
                            ? "application/x-www-form-urlencoded" : "application/json";
    char clen[128] = "";
    if (len || strcmp(method, "GET") != 0)
        snprintf(clen, sizeof(clen), "Content-Type: %s\r\nContent-Length: %zu\r\n", ctype, len);
    int hn = snprintf(c->head, sizeof(c->head),
                      "%s %s%s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: catalogload\r\n"
                      "Accept: application/json\r\n%s%s\r\n",
                      method, path, query[0] ? "?" : "", query, g_hostport, auth, clen);
    if (hn < 0 || (size_t)hn >= sizeof(c->head))
        die("request head too long");
    bool was_reused = c->reused;
    uint64_t rx0 = c->rx;
    struct iovec iov[2] = {{c->head, (size_t)hn}, {(void *)body, len}};
    if (lg_send_all(c->fd, iov, len ? 2 : 1, x->err) != 0) {
        *retryable = was_reused;
        return -1;
    }
    bool chunked, close_after;
    do { /* status line + headers; skip 1xx */
        if (lg_read_head(c, x->err, &x->status, &x->clen, &chunked, &close_after) != 0) {
            *retryable = was_reused && c->rx == rx0;
            return -1;
        }
    } while (x->status < 200);
    if (lg_read_body(c, strcmp(method, "HEAD") == 0, x->status, x->clen, chunked, &close_after,
                     body_add, x, x->err) != 0)
        return -1;
    lg_conn_done(c, close_after);
    return 0;
}

/* A request; returns the HTTP status or -1. With capture, x->body holds the body. */
static long request(lg_conn_t *c, const char *method, const char *path, const char *query,
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
        if (c->fd < 0 && lg_conn_connect(c, x->err) != 0)
            return -1;
        bool retryable;
        if (attempt(c, method, path, query, body, len, x, &retryable) == 0)
            return x->status;
        lg_conn_close(c);
        if (!retryable)
            break;
    }
    return x->status = -1;
}

static void report_error(const char *what, const result_t *x)
{
    lg_report_error(what, NULL, x->status, x->err[0] ? x->err : (x->body ? x->body : ""));
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

/* The value of "prefix" inside the object "section" of a config response. */
static bool config_prefix(const char *body, const char *section, char *out, size_t n)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":", section);
    const char *p = strstr(body, pat);
    if (!p)
        return false;
    const char *e = strchr(p, '}');
    const char *q = strstr(p, "\"prefix\":\"");
    if (!q || (e && q > e))
        return false;
    return json_str(q, "prefix", out, n);
}

/* --auth oauth: a client_credentials token from {base}/oauth/tokens. */
static void oauth_token(lg_conn_t *c, result_t *x)
{
    char path[512], body[1024], ak[400], sk[400];
    pct_encode(lg.access_key, ak, sizeof(ak));
    pct_encode(lg.secret_key, sk, sizeof(sk));
    snprintf(path, sizeof(path), "%s/oauth/tokens", cfg.base);
    snprintf(body, sizeof(body), "grant_type=client_credentials&client_id=%s&client_secret=%s&scope=catalog",
             ak, sk);
    long st = request(c, "POST", path, "", body, strlen(body), true, x);
    if (st != 200 || !json_str(x->body, "access_token", g_bearer, sizeof(g_bearer)))
        die("POST %s: status %ld: %.400s", path, st, x->err[0] ? x->err : x->body);
}

static void setup(lg_conn_t *c)
{
    result_t x = {0};
    char body[1024], path[1536], enc[512];
    long st;
    if (cfg.auth == AUTH_OAUTH)
        oauth_token(c, &x);
    if (cfg.warehouse) {
        snprintf(g_arn, sizeof(g_arn), "%s", cfg.warehouse);
    } else {
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
    }
    pct_encode(g_arn, enc, sizeof(enc));

    /* the catalog's config for this warehouse: checks signing with a query */
    char q[600];
    snprintf(q, sizeof(q), "warehouse=%s", enc);
    snprintf(path, sizeof(path), "%s/config", cfg.base);
    st = request(c, "GET", path, q, NULL, 0, true, &x);
    if (st != 200)
        die("GET %s?%s: status %ld: %.400s", path, q, st, x.err[0] ? x.err : x.body);
    char pfx[256] = "";
    if (cfg.prefix)
        snprintf(enc, sizeof(enc), "%s", cfg.prefix);
    else if (cfg.warehouse && (config_prefix(x.body, "overrides", pfx, sizeof(pfx)) ||
                               config_prefix(x.body, "defaults", pfx, sizeof(pfx))))
        snprintf(enc, sizeof(enc), "%s", pfx); /* used verbatim, as Iceberg clients do */
    else if (cfg.warehouse)
        enc[0] = 0; /* no prefix */
    g_prefix[0] = 0;
    if (enc[0] && (size_t)snprintf(g_prefix, sizeof(g_prefix), "/%s", enc) >= sizeof(g_prefix))
        die("prefix too long: %s", enc);

    snprintf(path, sizeof(path), "%s%s/namespaces", cfg.base, g_prefix);
    snprintf(body, sizeof(body), "{\"namespace\":[\"%s\"]}", cfg.ns);
    st = request(c, "POST", path, "", body, strlen(body), true, &x);
    if (st != 200 && st != 409)
        die("create namespace: status %ld: %.400s", st, x.err[0] ? x.err : x.body);

    g_tables = calloc((size_t)cfg.ntables, sizeof(*g_tables));
    if (!g_tables)
        die("out of memory");
    for (int i = 0; i < cfg.ntables; i++) {
        table_t *t = &g_tables[i];
        char name[160];
        if (cfg.ntables > 1)
            snprintf(name, sizeof(name), "%s%d", cfg.table, i);
        else
            snprintf(name, sizeof(name), "%s", cfg.table);
        snprintf(path, sizeof(path), "%s%s/namespaces/%s/tables", cfg.base, g_prefix, cfg.ns);
        snprintf(body, sizeof(body),
                 "{\"name\":\"%s\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"id\","
                 "\"type\":\"long\",\"required\":true}]}}",
                 name);
        st = request(c, "POST", path, "", body, strlen(body), true, &x);
        if (st != 200 && st != 409)
            die("create table %s: status %ld: %.400s", name, st, x.err[0] ? x.err : x.body);

        snprintf(t->path, sizeof(t->path), "%s%s/namespaces/%s/tables/%s", cfg.base, g_prefix, cfg.ns, name);
        st = request(c, "GET", t->path, "", NULL, 0, true, &x);
        if (st != 200)
            die("loadTable %s: status %ld: %.400s", name, st, x.err[0] ? x.err : x.body);
        if (!json_str(x.body, "location", t->location, sizeof(t->location)))
            die("loadTable: no location in %.300s", x.body);
    }
    fprintf(stderr, "catalogload: warehouse %s, %d table(s) %s.%s%s at %s, metadata %zu bytes\n", g_arn,
            cfg.ntables, cfg.ns, cfg.table, cfg.ntables > 1 ? "N" : "", g_tables[0].location, x.blen);
    free(x.body);
}

/* ======================= clients ======================= */

typedef struct {
    int id;
    pthread_t th;
    lg_conn_t conn;
    result_t x;
    long ops, errors, conflicts, reloads, consec;
    lat_t lat, e2e;
    double t_end;
    bool setup_failed;
    size_t resp_bytes;
    /* the tables this client uses (--tables), taken in turn; tbl is the one now */
    int *mine, nmine, next, tbl;
    /* commit: each table's state as this client last saw it (by table number) */
    int64_t *curs;    /* current snapshot id, -1 = none */
    int64_t *seqs;    /* last-sequence-number */
    int64_t cur, seq; /* those of tbl */
    uint64_t rng;
} client_t;

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

/* Moves to the client's next table (keeping the state of the one it leaves). */
static void next_table(client_t *cl)
{
    cl->curs[cl->tbl] = cl->cur;
    cl->seqs[cl->tbl] = cl->seq;
    cl->tbl = cl->mine[cl->next];
    cl->next = (cl->next + 1) % cl->nmine;
    cl->cur = cl->curs[cl->tbl];
    cl->seq = cl->seqs[cl->tbl];
}

static bool reload(client_t *cl)
{
    long st = request(&cl->conn, "GET", g_tables[cl->tbl].path, "", NULL, 0, true, &cl->x);
    if (st == 200 && parse_state(cl, cl->x.body))
        return true;
    report_error("reload (loadTable)", &cl->x);
    return false;
}

static void *client_setup(void *arg)
{
    client_t *cl = arg;
    lg_conn_init(&cl->conn, RBUF_SIZE);
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
        seed = (uint64_t)time(NULL) * 2654435761u + (uint64_t)cl->id;
    cl->rng = seed | 1;
    int n = cfg.ntables, k = lg.clients;
    cl->mine = calloc((size_t)n, sizeof(*cl->mine));
    cl->curs = calloc((size_t)n, sizeof(*cl->curs));
    cl->seqs = calloc((size_t)n, sizeof(*cl->seqs));
    if (!cl->mine || !cl->curs || !cl->seqs)
        die("out of memory");
    if (n >= k) {
        for (int j = cl->id; j < n; j += k)
            cl->mine[cl->nmine++] = j;
    } else {
        cl->mine[cl->nmine++] = cl->id % n;
    }
    /* the untimed warm-up: each of its tables' state */
    for (int j = 0; j < cl->nmine; j++) {
        next_table(cl);
        if (!reload(cl)) {
            cl->setup_failed = true;
            break;
        }
    }
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
                     cur, id, parent, cl->seq + 1, ms, g_tables[cl->tbl].location, id, id);
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
        if (cl->nmine > 1)
            next_table(cl);
        if (cfg.op == OP_LOAD) {
            double t0 = now_s();
            long st = request(&cl->conn, "GET", g_tables[cl->tbl].path, "", NULL, 0, false, &cl->x);
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
            long st = request(&cl->conn, "POST", g_tables[cl->tbl].path, "", body, len, true, &cl->x);
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
                if (lg.requests <= 0 && now_s() >= g_deadline)
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

static void usage(void)
{
    fprintf(stderr,
            "usage: catalogload --endpoint http://HOST:PORT --access-key AK --secret-key SK\n"
            "                   --op load|commit --clients N (--seconds S | --requests N)\n"
            "                   [--bucket TABLE_BUCKET] [--namespace NS] [--table T]\n"
            "                   [--base /iceberg/v1] [--warehouse W] [--prefix P]\n"
            "                   [--auth sigv4|none|oauth] [--sign-name s3tables]\n"
            "                   [--region R] [--label L] [--server-pid PID] [--setup-only]\n"
            "                   [--tables N] [--cpu-group NAME:[+]PID,...]\n");
    exit(2);
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

static const char *g_op_arg, *g_auth_arg; /* --op, --auth */

/* catalogload's own options (the common ones are in loadgen.h). */
static bool own_arg(const char *a, const char *v)
{
    if (strcmp(a, "--bucket") == 0) cfg.bucket = v;
    else if (strcmp(a, "--namespace") == 0) cfg.ns = v;
    else if (strcmp(a, "--table") == 0) cfg.table = v;
    else if (strcmp(a, "--op") == 0) g_op_arg = v;
    else if (strcmp(a, "--base") == 0) cfg.base = v;
    else if (strcmp(a, "--warehouse") == 0) cfg.warehouse = v;
    else if (strcmp(a, "--prefix") == 0) cfg.prefix = v;
    else if (strcmp(a, "--sign-name") == 0) cfg.sign_name = v;
    else if (strcmp(a, "--auth") == 0) g_auth_arg = v;
    else if (strcmp(a, "--tables") == 0) cfg.ntables = atoi(v);
    else return false;
    return true;
}

int main(int argc, char **argv)
{
    cfg.bucket = "bench";
    cfg.ns = "bench";
    cfg.table = "t";
    cfg.base = "/iceberg/v1";
    cfg.sign_name = "s3tables";
    cfg.ntables = 1;
    lg_parse_args(argc, argv, "--setup-only", &cfg.setup_only, own_arg, usage);
    const char *op = g_op_arg;
    if (!lg.endpoint || (!op && !cfg.setup_only) ||
        lg.clients < 1 || lg.clients > 1024 || cfg.ntables < 1 || cfg.ntables > 100000 ||
        (!cfg.setup_only && (lg.seconds <= 0) == (lg.requests <= 0)))
        usage();
    if (!op || strcmp(op, "load") == 0) cfg.op = OP_LOAD;
    else if (strcmp(op, "commit") == 0) cfg.op = OP_COMMIT;
    else usage();
    if (!g_auth_arg || strcmp(g_auth_arg, "sigv4") == 0) cfg.auth = AUTH_SIGV4;
    else if (strcmp(g_auth_arg, "none") == 0) cfg.auth = AUTH_NONE;
    else if (strcmp(g_auth_arg, "oauth") == 0) cfg.auth = AUTH_OAUTH;
    else usage();
    if (cfg.auth != AUTH_NONE && (!lg.access_key || !lg.secret_key))
        die("--auth sigv4 and oauth need --access-key and --secret-key");
    if (!cfg.warehouse && cfg.auth != AUTH_SIGV4)
        die("without --warehouse the table bucket is made with the S3 Tables API: --auth sigv4");
    if (!safe_name(cfg.bucket) || !safe_name(cfg.ns) || !safe_name(cfg.table))
        die("bucket, namespace and table must be made of [a-z0-9_-]");
    lg_parse_endpoint();
    signal(SIGPIPE, SIG_IGN);

    {
        lg_conn_t c;
        lg_conn_init(&c, RBUF_SIZE);
        setup(&c);
        lg_conn_free(&c);
    }
    if (cfg.setup_only)
        return 0;

    client_t *cls = calloc((size_t)lg.clients, sizeof(client_t));
    if (!cls)
        die("out of memory");
    for (int i = 0; i < lg.clients; i++)
        cls[i].id = i;
    lg_run_each(client_setup, cls, sizeof(*cls), lg.clients); /* setup: a thread per client */
    pthread_barrier_init(&g_barrier, NULL, (unsigned)lg.clients + 1);
    atomic_store(&g_remaining, lg.requests);
    for (int i = 0; i < lg.clients; i++)
        lg_spawn(&cls[i].th, client_timed, &cls[i]);
    lg_cpu_mark_t m0;
    double t0 = lg_start_timed(&m0);
    for (int i = 0; i < lg.clients; i++)
        pthread_join(cls[i].th, NULL);

    long ops = 0, errors = 0, conflicts = 0, reloads = 0, connects = 0;
    size_t resp_bytes = 0;
    bool setup_failed = false;
    double t_end = t0;
    for (int i = 0; i < lg.clients; i++) {
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
    lg_cpu_t cpu = lg_cpu_since(&m0);
    double secs = t_end - t0;
    lat_t lat = {0}, e2e = {0};
    for (int i = 0; i < lg.clients; i++) {
        lat_move(&lat, &cls[i].lat);
        lat_move(&e2e, &cls[i].e2e);
    }
    lat_sort(&lat);
    lat_sort(&e2e);
    const lat_t *e = cfg.op == OP_LOAD ? &lat : &e2e; /* a load is its own end-to-end */
    printf("{\"label\":\"%s\",\"op\":\"%s\",\"clients\":%d,\"ops\":%ld,\"errors\":%ld,"
           "\"conflicts\":%ld,\"reloads\":%ld,\"seconds\":%.3f,\"req_s\":%.1f,"
           "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"e2e_p50_ms\":%.3f,\"e2e_p99_ms\":%.3f,"
           "\"resp_bytes\":%zu",
           lg.label, cfg.op == OP_LOAD ? "load" : "commit", lg.clients, ops, errors, conflicts,
           reloads, secs, secs > 0 ? (double)ops / secs : 0.0, lat_pct(&lat, 0.50) * 1e3,
           lat_pct(&lat, 0.99) * 1e3, lat_pct(e, 0.50) * 1e3, lat_pct(e, 0.99) * 1e3, resp_bytes);
    lg_print_tail(&cpu, connects);
    for (int i = 0; i < lg.clients; i++) {
        lg_conn_free(&cls[i].conn);
        free(cls[i].x.body);
        free(cls[i].mine);
        free(cls[i].curs);
        free(cls[i].seqs);
    }
    free(e2e.v);
    free(lat.v);
    free(cls);
    free(g_tables);
    pthread_barrier_destroy(&g_barrier);
    return (ops == 0 || errors > 0 || setup_failed) ? 1 : 0;
}
