/* Tests for the PostgreSQL layer (src/base/pg.c) against a real server
 * (tests/unit/pg_server.h; skipped where the server binaries are absent):
 * "?N" statements with skipped numbers, migrations run once and a newer
 * schema refused, the error classes (lock timeout is a conflict, a connection
 * killed before COMMIT is "nothing written", not "unknown"), reconnecting
 * after a server restart, a small pool shared by many threads, the round
 * trips of a write, and the UTF-8 upper bound of a prefix. */
#include "test.h"
#include "pg_server.h"
#include "base/pg.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

enum { S_PUT, S_GET, S_ONLY3, S_COUNT_ROWS, S_N };
static const char *const stmts[S_N] = {
    [S_PUT] = "INSERT INTO kv(k, v) VALUES(?1, ?2) ON CONFLICT(k) DO UPDATE SET v = excluded.v",
    [S_GET] = "SELECT v FROM kv WHERE k = ?1 FOR UPDATE",
    [S_ONLY3] = "SELECT count(*) FROM kv WHERE k > ?3",
    [S_COUNT_ROWS] = "SELECT count(*) FROM kv",
};
static const char *const migs[] = {
    "CREATE TABLE kv(k TEXT COLLATE \"C\" PRIMARY KEY, v TEXT NOT NULL)",
    "ALTER TABLE kv ADD COLUMN n BIGINT NOT NULL DEFAULT 0",
};

static fl_pg_t *open_db(const char *url, int n_migs, int lock_ms, int pool)
{
    fl_pg_cfg_t cfg = { .label = "unit", .url = url, .migrations = migs, .n_migrations = n_migs,
                        .statements = stmts, .n_statements = S_N, .lock_timeout_ms = lock_ms, .pool_max = pool };
    return fl_pg_open(&cfg);
}

static int64_t scalar(const char *url, const char *sql)
{
    PGconn *pc = PQconnectdb(url);
    PGresult *r = PQexec(pc, sql);
    int64_t v = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : -1;
    PQclear(r);
    PQfinish(pc);
    return v;
}

static fl_err_t put(fl_pg_t *p, const char *k, const char *v)
{
    fl_pg_conn_t *c = fl_pg_get(p);
    if (!c) return FL_ERR_INTERNAL;
    fl_pg_args_t a = { 0 };
    fl_pg_arg_str(&a, 1, k);
    fl_pg_arg_str(&a, 2, v);
    fl_err_t e = fl_pg_begin(c);
    if (!e) e = fl_pg_exec(c, S_PUT, &a, "put");
    e = fl_pg_end(c, e);
    fl_pg_put(p, c);
    return e;
}

FL_TEST(pg_migrations_and_statements)
{
    char url[256];
    if (!fl_test_pg_ready()) return;
    REQUIRE(fl_test_pg_fresh_db(url, sizeof url));
    fl_pg_t *p = open_db(url, 1, 0, 0);
    REQUIRE(p);
    CHECK_EQ(put(p, "a", "1"), FL_OK);
    CHECK_EQ(put(p, "b", "2"), FL_OK);
    fl_pg_close(p);
    /* the second migration runs on the next open, once; the data stays */
    p = open_db(url, 2, 0, 0);
    REQUIRE(p);
    fl_pg_t *p2 = open_db(url, 2, 0, 0);
    REQUIRE(p2);
    CHECK_EQ(scalar(url, "SELECT version FROM floe_schema WHERE label = 'unit'"), 2);
    fl_pg_conn_t *c = fl_pg_get(p);
    REQUIRE(c);
    fl_pg_args_t a = { 0 };
    fl_pg_arg_str(&a, 3, "a");          /* ?1 and ?2 are skipped by the text */
    CHECK_EQ(fl_pg_row(c, S_ONLY3, &a, "only3"), FL_OK);
    CHECK_EQ(fl_pg_col_i64(c, 0, 0), 1);
    fl_pg_args_t g = { 0 };
    fl_pg_arg_str(&g, 1, "zz");
    CHECK_EQ(fl_pg_row(c, S_GET, &g, "get"), FL_ERR_NOT_FOUND);
    fl_pg_arg_str(&g, 1, "b\xff");      /* not UTF-8: refused as a value */
    CHECK_EQ(fl_pg_exec(c, S_GET, &g, "get"), FL_ERR_INVALID);
    fl_pg_put(p, c);
    fl_pg_close(p2);
    fl_pg_close(p);
    /* a database newer than this build is refused */
    fprintf(stderr, "  (an error about a newer schema below is expected)\n");
    CHECK(open_db(url, 1, 0, 0) == NULL);
}

FL_TEST(pg_error_classes)
{
    char url[256];
    if (!fl_test_pg_ready()) return;
    REQUIRE(fl_test_pg_fresh_db(url, sizeof url));
    fl_pg_t *p = open_db(url, 2, 200, 0);
    REQUIRE(p);
    REQUIRE(put(p, "row", "0") == FL_OK);

    /* a row lock held elsewhere past lock_timeout: a conflict, nothing written */
    PGconn *other = PQconnectdb(url);
    PQclear(PQexec(other, "BEGIN"));
    PQclear(PQexec(other, "SELECT v FROM kv WHERE k = 'row' FOR UPDATE"));
    CHECK_EQ(put(p, "row", "1"), FL_ERR_CONFLICT);
    PQclear(PQexec(other, "COMMIT"));

    /* the connection killed inside a transaction, before COMMIT: the outcome
     * is known (nothing written), not "unknown" */
    fl_pg_conn_t *c = fl_pg_get(p);
    REQUIRE(c);
    REQUIRE(fl_pg_begin(c) == FL_OK);
    fl_pg_args_t a = { 0 };
    fl_pg_arg_str(&a, 1, "row");
    fl_pg_arg_str(&a, 2, "2");
    CHECK_EQ(fl_pg_exec(c, S_PUT, &a, "put"), FL_OK);
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%d)::int", PQbackendPID(c->pc));
    CHECK_EQ(scalar(url, sql), 1);
    usleep(100 * 1000);
    fprintf(stderr, "  (connection-lost warnings below are expected)\n");
    CHECK_EQ(fl_pg_end(c, FL_OK), FL_ERR_INTERNAL);
    fl_pg_put(p, c);
    PQfinish(other);
    c = fl_pg_get(p);   /* the pool replaced the dead connection */
    REQUIRE(c);
    fl_pg_args_t g = { 0 };
    fl_pg_arg_str(&g, 1, "row");
    CHECK_EQ(fl_pg_row(c, S_GET, &g, "get"), FL_OK);
    CHECK_STR(fl_pg_col(c, 0, 0), "0");
    fl_pg_put(p, c);
    fl_pg_close(p);
}

FL_TEST(pg_survives_server_restart)
{
    char url[256];
    if (!fl_test_pg_ready()) return;
    REQUIRE(fl_test_pg_fresh_db(url, sizeof url));
    fl_pg_t *p = open_db(url, 2, 0, 4);
    REQUIRE(p);
    REQUIRE(put(p, "x", "1") == FL_OK);
    REQUIRE(fl_test_pg_restart());
    /* the pooled connection is dead; the next read and write reconnect */
    fl_pg_conn_t *c = fl_pg_get(p);
    REQUIRE(c);
    fl_pg_args_t g = { 0 };
    fl_pg_arg_str(&g, 1, "x");
    CHECK_EQ(fl_pg_row(c, S_GET, &g, "get"), FL_OK);
    fl_pg_put(p, c);
    REQUIRE(fl_test_pg_restart());
    CHECK_EQ(put(p, "x", "2"), FL_OK);
    CHECK(fl_pg_ping(p));
    fl_pg_close(p);
}

struct worker { fl_pg_t *p; int id; int fails; };

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    char k[32];
    for (int i = 0; i < 50; i++) {
        snprintf(k, sizeof k, "w%d-%d", w->id, i);
        if (put(w->p, k, "v") != FL_OK) w->fails++;
    }
    return NULL;
}

FL_TEST(pg_small_pool_many_threads)
{
    char url[256];
    if (!fl_test_pg_ready()) return;
    REQUIRE(fl_test_pg_fresh_db(url, sizeof url));
    fl_pg_t *p = open_db(url, 2, 0, 2);
    REQUIRE(p);
    enum { T = 8 };
    pthread_t th[T];
    struct worker w[T];
    for (int i = 0; i < T; i++) {
        w[i] = (struct worker){ p, i, 0 };
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ(w[i].fails, 0);
    }
    CHECK_EQ(scalar(url, "SELECT count(*) FROM kv"), T * 50);
    CHECK(scalar(url, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'floe'") <= 2);
    fl_pg_close(p);
}

/* A write of one statement costs two round trips: BEGIN, txid_current() and
 * the statement in one (a pipeline), COMMIT in the other; an empty
 * transaction costs none. fl_pg_stats counts them (floe's /metrics). */
FL_TEST(pg_write_round_trips)
{
    char url[256];
    if (!fl_test_pg_ready()) return;
    REQUIRE(fl_test_pg_fresh_db(url, sizeof url));
    fl_pg_t *p = open_db(url, 2, 0, 1);
    REQUIRE(p);
    REQUIRE(put(p, "a", "1") == FL_OK);         /* prepares S_PUT on the pool's one connection */
    fl_pg_stats_t s0, s1;
    fl_pg_stats(p, &s0);
    CHECK_EQ(put(p, "a", "2"), FL_OK);
    fl_pg_stats(p, &s1);
    CHECK_EQ(s1.round_trips - s0.round_trips, 2);
    CHECK_EQ(s1.transactions - s0.transactions, 1);
    CHECK_EQ(s1.prepares, s0.prepares);
    fl_pg_conn_t *c = fl_pg_get(p);
    REQUIRE(c);
    REQUIRE(fl_pg_begin(c) == FL_OK);
    CHECK_EQ(fl_pg_end(c, FL_OK), FL_OK);
    /* a statement refused inside the pipeline: the transaction is rolled back,
     * the connection stays usable */
    REQUIRE(fl_pg_begin(c) == FL_OK);
    fl_pg_args_t bad = { 0 };
    fl_pg_arg_str(&bad, 1, "b\xff");
    fl_pg_arg_str(&bad, 2, "x");
    CHECK_EQ(fl_pg_exec(c, S_PUT, &bad, "put"), FL_ERR_INVALID);
    CHECK_EQ(fl_pg_end(c, FL_ERR_INVALID), FL_ERR_INVALID);
    fl_pg_args_t g = { 0 };
    fl_pg_arg_str(&g, 1, "a");
    CHECK_EQ(fl_pg_row(c, S_GET, &g, "get"), FL_OK);
    CHECK_STR(fl_pg_col(c, 0, 0), "2");
    fl_pg_put(p, c);
    fl_pg_stats(p, &s0);
    CHECK_EQ(s0.round_trips - s1.round_trips, 4);  /* the refused pipeline, ROLLBACK, the prepare and the read */
    CHECK_EQ(s0.connects, 1);
    fl_pg_close(p);
}

FL_TEST(pg_successor_utf8)
{
    char *s = fl_pg_successor("abc");
    CHECK_STR(s, "abd");
    free(s);
    s = fl_pg_successor("a\x7f");
    CHECK_STR(s, "a\xc2\x80");
    free(s);
    s = fl_pg_successor("x\xed\x9f\xbf");    /* U+D7FF: the surrogates are skipped */
    CHECK_STR(s, "x\xee\x80\x80");
    free(s);
    s = fl_pg_successor("y\xf4\x8f\xbf\xbf"); /* U+10FFFF has no successor: dropped */
    CHECK_STR(s, "z");
    free(s);
    s = fl_pg_successor("");
    CHECK(strlen(s) > FL_PG_HI_MAX);
    CHECK(memcmp(s, "\xf4\x8f\xbf\xbf", 4) == 0);
    free(s);
}

/* ---- a COMMIT that lands while its answer is lost ----
 * A TCP proxy between the pool and the server forwards everything until,
 * armed, it sees the simple-query message "COMMIT": it passes that on, drops
 * the server's answer, waits for the commit to be done, and cuts both sides. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <sys/socket.h>

struct proxy { int lfd, port, upstream; atomic_int armed; };
struct link_ { atomic_int cut, refs; };        /* one proxied connection, freed by its last pump */
struct pipe_ { int from, to; struct link_ *l; struct proxy *px; bool client_side; };

static void *pump(void *arg)
{
    struct pipe_ *p = arg;
    static const char commit_msg[] = "Q\0\0\0\x0b" "COMMIT";   /* 'Q', int32 11, "COMMIT\0" */
    char buf[16384];
    for (;;) {
        ssize_t n = recv(p->from, buf, sizeof buf, 0);
        if (n <= 0) break;
        if (atomic_load(&p->l->cut)) continue;                   /* the answer is lost */
        bool hit = p->client_side && atomic_load(&p->px->armed) &&
                   memmem(buf, (size_t)n, commit_msg, sizeof commit_msg) != NULL;
        if (hit) { /* cut the way back before the COMMIT leaves: its answer never arrives */
            atomic_store(&p->px->armed, 0);
            atomic_store(&p->l->cut, 1);
        }
        if (send(p->to, buf, (size_t)n, MSG_NOSIGNAL) != n) break;
        if (hit) {
            usleep(300 * 1000);                                  /* the server commits */
            shutdown(p->from, SHUT_RDWR);
            shutdown(p->to, SHUT_RDWR);
            break;
        }
    }
    shutdown(p->to, SHUT_WR);
    if (atomic_fetch_sub(&p->l->refs, 1) == 1) {
        close(p->from);
        close(p->to);
        free(p->l);
    }
    free(p);
    return NULL;
}

static void *proxy_main(void *arg)
{
    struct proxy *px = arg;
    for (;;) {
        int c = accept(px->lfd, NULL, NULL);
        if (c < 0) return NULL;
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)px->upstream) };
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) { close(c); close(s); continue; }
        struct link_ *l = calloc(1, sizeof *l);
        atomic_store(&l->refs, 2);
        struct pipe_ *up = calloc(1, sizeof *up), *down = calloc(1, sizeof *down);
        *up = (struct pipe_){ c, s, l, px, true };
        *down = (struct pipe_){ s, c, l, px, false };
        pthread_t t1, t2;
        pthread_create(&t1, NULL, pump, up);
        pthread_create(&t2, NULL, pump, down);
        pthread_detach(t1);
        pthread_detach(t2);
    }
}

FL_TEST(pg_commit_whose_answer_is_lost_is_found_committed)
{
    char url[256], purl[300];
    if (!fl_test_pg_ready()) return;
    REQUIRE(fl_test_pg_fresh_db(url, sizeof url));
    const char *colon = strrchr(url, ':'), *slash = strrchr(url, '/');
    REQUIRE(colon && slash && slash > colon);
    static struct proxy px;
    px.upstream = atoi(colon + 1);
    px.lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    REQUIRE(bind(px.lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(px.lfd, 16) == 0);
    REQUIRE(getsockname(px.lfd, (struct sockaddr *)&a, &al) == 0);
    px.port = ntohs(a.sin_port);
    pthread_t th;
    pthread_create(&th, NULL, proxy_main, &px);
    snprintf(purl, sizeof purl, "%.*s:%d%s", (int)(colon - url), url, px.port, slash);

    fl_pg_t *p = open_db(purl, 2, 0, 0);
    REQUIRE(p);
    fl_pg_conn_t *c = fl_pg_get(p);
    REQUIRE(c);
    REQUIRE(fl_pg_begin(c) == FL_OK);
    fl_pg_args_t args = { 0 };
    fl_pg_arg_str(&args, 1, "landed");
    fl_pg_arg_str(&args, 2, "yes");
    REQUIRE(fl_pg_exec(c, S_PUT, &args, "put") == FL_OK);
    atomic_store(&px.armed, 1);
    fprintf(stderr, "  (a lost COMMIT is expected below)\n");
    CHECK_EQ(fl_pg_end(c, FL_OK), FL_OK);          /* txid_status: committed */
    CHECK(c->commit_lost);
    fl_pg_put(p, c);
    fl_pg_close(p);
    CHECK_EQ(scalar(url, "SELECT count(*) FROM kv WHERE k = 'landed'"), 1);
    shutdown(px.lfd, SHUT_RDWR);                   /* the accept loop ends */
    pthread_join(th, NULL);
    close(px.lfd);
    usleep(200 * 1000);                            /* the pumps see their sockets close */
}
