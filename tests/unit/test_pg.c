/* Tests for the PostgreSQL layer (src/base/pg.c) against a real server
 * (tests/unit/pg_server.h; skipped where the server binaries are absent):
 * "?N" statements with skipped numbers, migrations run once and a newer
 * schema refused, the error classes (lock timeout is a conflict, a connection
 * killed before COMMIT is "nothing written", not "unknown"), reconnecting
 * after a server restart, a small pool shared by many threads, and the
 * UTF-8 upper bound of a prefix. */
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
