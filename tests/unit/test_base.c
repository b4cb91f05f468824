#include "test.h"
#include "base/buf.h"
#include "base/query.h"
#include "base/sqlite.h"
#include "base/time.h"

FL_TEST(base64_roundtrip)
{
    char out[64];
    unsigned char dec[64];
    fl_base64((const unsigned char *)"hello world", 11, out);
    CHECK_STR(out, "aGVsbG8gd29ybGQ=");
    CHECK_EQ(fl_base64_decode(out, strlen(out), dec, sizeof dec), 11);
    CHECK_MEM(dec, "hello world", 11);
    CHECK_EQ(fl_base64_decode("a", 1, dec, sizeof dec), -1);
    CHECK_EQ(fl_base64_decode("a*==", 4, dec, sizeof dec), -1);
}

FL_TEST(uri_codec)
{
    fl_buf_t b;
    fl_buf_init(&b, 100);
    CHECK_EQ(fl_uri_encode(FL_SLICE("a b/c%~"), true, &b), FL_OK);
    CHECK_STR(b.ptr, "a%20b/c%25~");
    fl_buf_reset(&b);
    CHECK_EQ(fl_uri_decode(FL_SLICE("a%20b+%2F"), true, &b), FL_OK);
    CHECK_STR(b.ptr, "a b /");
    fl_buf_reset(&b);
    CHECK_EQ(fl_uri_decode(FL_SLICE("bad%2"), false, &b), FL_ERR_INVALID);
    fl_buf_reset(&b);
    CHECK_EQ(fl_uri_decode(FL_SLICE("%"), false, &b), FL_ERR_INVALID);
    fl_buf_free(&b);
}

FL_TEST(buf_cap)
{
    fl_buf_t b;
    fl_buf_init(&b, 8);
    CHECK_EQ(fl_buf_adds(&b, "12345678"), FL_OK);
    CHECK_EQ(fl_buf_addc(&b, '9'), FL_ERR_TOO_LARGE);
    CHECK_EQ(b.len, 8);
    fl_buf_free(&b);
}

FL_TEST(time_formats)
{
    char s[40];
    fl_time_rfc1123(1735689600000LL, s, sizeof s);
    CHECK_STR(s, "Wed, 01 Jan 2025 00:00:00 GMT");
    fl_time_iso8601(1735689600123LL, s, sizeof s);
    CHECK_STR(s, "2025-01-01T00:00:00.123Z");
    CHECK_EQ(fl_time_parse_amz("20250101T000000Z", 16), 1735689600LL);
    CHECK_EQ(fl_time_parse_amz("20251301T000000Z", 16), -1);
    CHECK_EQ(fl_time_parse_http("Wed, 01 Jan 2025 00:00:00 GMT", 29), 1735689600LL);
    CHECK_EQ(fl_time_parse_http("garbage", 7), -1);
}

FL_TEST(query_parse)
{
    fl_query_t q;
    const char *s = "uploads&prefix=a+b%2Fc&&x=&list-type=2&prefix=second";
    REQUIRE(fl_query_parse(s, strlen(s), &q) == FL_OK);
    CHECK_EQ(q.n, 5);
    CHECK_STR(fl_query_get(&q, "uploads"), "");
    CHECK_STR(fl_query_get(&q, "prefix"), "a b/c");   /* the first of repeated names */
    CHECK_STR(fl_query_get(&q, "x"), "");
    CHECK_STR(fl_query_get(&q, "list-type"), "2");
    CHECK(fl_query_get(&q, "missing") == NULL);
    fl_query_free(&q);
    CHECK_EQ(q.n, 0);
    REQUIRE(fl_query_parse(NULL, 0, &q) == FL_OK);
    CHECK_EQ(q.n, 0);
    /* a NUL would truncate the value for every C-string user: refused */
    CHECK_EQ(fl_query_parse("prefix=a%00b", 12, &q), FL_ERR_INVALID);
    CHECK_EQ(q.n, 0);
    CHECK_EQ(fl_query_parse("a%00=1", 6, &q), FL_ERR_INVALID);
    CHECK_EQ(fl_query_parse("a=%zz", 5, &q), FL_ERR_INVALID);
    /* past the parameter cap: refused, nothing kept */
    fl_buf_t b;
    fl_buf_init(&b, 0);
    for (int i = 0; i <= FL_QUERY_MAX_PARAMS; i++) fl_buf_printf(&b, "%sp%d=1", i ? "&" : "", i);
    CHECK_EQ(fl_query_parse(b.ptr, b.len, &q), FL_ERR_TOO_LARGE);
    CHECK_EQ(q.n, 0);
    fl_buf_free(&b);
}

static const char *const t_migrations[] = {
    "CREATE TABLE kv(k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID;",
    "ALTER TABLE kv ADD COLUMN n INTEGER NOT NULL DEFAULT 0;",
};
static const char *const t_statements[] = {
    "INSERT INTO kv(k, v, n) VALUES(?1, ?2, 1)",
    "SELECT v, n FROM kv WHERE k = ?1",
};

FL_TEST(sqlite_layer)
{
    char path[512];
    snprintf(path, sizeof path, "%s/t.db", fl_test_tmpdir());
    fl_sqlite_cfg_t cfg = { .label = "test", .path = path, .migrations = t_migrations, .n_migrations = 2,
                            .statements = t_statements, .n_statements = 2, .busy_timeout_ms = 50 };
    fl_sqlite_t *s = fl_sqlite_open(&cfg);
    REQUIRE(s);
    fl_sqlite_conn_t *k = fl_sqlite_get(s);
    REQUIRE(k);
    REQUIRE(fl_sqlite_begin(s, k) == FL_OK);
    fl_sqlite_bind_str(k->st[0], 1, "a");
    fl_sqlite_bind_str(k->st[0], 2, "one");
    CHECK_EQ(fl_sqlite_done(k, k->st[0], "insert"), FL_OK);
    CHECK_EQ(fl_sqlite_end(s, k, FL_OK), FL_OK);
    /* a failed step inside a transaction rolls the whole of it back */
    REQUIRE(fl_sqlite_begin(s, k) == FL_OK);
    fl_sqlite_bind_str(k->st[0], 1, "b");
    fl_sqlite_bind_str(k->st[0], 2, "two");
    CHECK_EQ(fl_sqlite_done(k, k->st[0], "insert"), FL_OK);
    fl_sqlite_bind_str(k->st[0], 1, "a");
    fl_sqlite_bind_str(k->st[0], 2, "dup");
    fl_err_t e = fl_sqlite_done(k, k->st[0], "insert");
    CHECK_EQ(e, FL_ERR_IO);
    CHECK_EQ(fl_sqlite_end(s, k, e), FL_ERR_IO);
    fl_sqlite_bind_str(k->st[1], 1, "b");
    CHECK_EQ(fl_sqlite_row(k, k->st[1], "get"), FL_ERR_NOT_FOUND);
    fl_sqlite_bind_str(k->st[1], 1, "a");
    REQUIRE(fl_sqlite_row(k, k->st[1], "get") == FL_OK);
    char v[16];
    fl_sqlite_col_copy(k->st[1], 0, v, sizeof v);
    CHECK_STR(v, "one");
    CHECK_EQ(sqlite3_column_int(k->st[1], 1), 1);
    sqlite3_reset(k->st[1]);
    /* another process holding the write lock: busy is a conflict (nothing written), not an I/O error */
    sqlite3 *other = NULL;
    REQUIRE(sqlite3_open(path, &other) == SQLITE_OK);
    REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    CHECK_EQ(fl_sqlite_begin(s, k), FL_ERR_CONFLICT);
    CHECK(!k->in_tx);
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(other);
    fl_sqlite_put(s, k);
    fl_sqlite_close(s);
    /* a file from a newer build is refused */
    cfg.n_migrations = 1;
    CHECK(fl_sqlite_open(&cfg) == NULL);
}
