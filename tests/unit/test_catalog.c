/* Tests for the catalog store (src/meta/): CRUD and every error of buckets,
 * namespaces, tables/views and documents; pagination cursors;
 * compare-and-swap (stale tokens, all-or-none multi-swaps, racing threads);
 * renames across namespaces; maintenance leases; reopening; refusing a newer
 * schema. Each CAT_TEST runs twice: catalog_NAME on SQLite, pg_catalog_NAME
 * on a PostgreSQL started for the run (tests/unit/pg_server.h; skipped, with
 * a SKIP line, where Debian's server binaries are absent). */
#include "test.h"
#include "pg_server.h"
#include "meta/catalog.h"
#include "base/time.h"

#include <pthread.h>
#include <stdlib.h>
#include <sqlite3.h>
#include <libpq-fe.h>

static char db_path[400];   /* the SQLite file or PostgreSQL URL of the last open_fresh */
static bool use_pg;

static fl_catalog_t *open_fresh(void)
{
    if (use_pg) {
        if (!fl_test_pg_fresh_db(db_path, sizeof db_path)) return NULL;
    } else {
        snprintf(db_path, sizeof db_path, "%s/catalog.db", fl_test_tmpdir());
    }
    return fl_catalog_open(db_path);
}

/* A test body run on both backends. */
#define CAT_TEST(name)                                                            \
    static void body_##name(int *fl_failed_);                                     \
    FL_TEST(catalog_##name) { use_pg = false; body_##name(fl_failed_); }          \
    FL_TEST(pg_catalog_##name)                                                    \
    {                                                                             \
        if (!fl_test_pg_ready()) return;                                          \
        use_pg = true;                                                            \
        body_##name(fl_failed_);                                                  \
        use_pg = false;                                                           \
    }                                                                             \
    static void body_##name(int *fl_failed_)

static fl_err_t mk_bucket(fl_catalog_t *c, const char *name)
{
    fl_tbucket_t b = { 0 };
    snprintf(b.name, sizeof b.name, "%s", name);
    snprintf(b.arn, sizeof b.arn, "arn:aws:s3tables:us-east-1:111122223333:bucket/%s", name);
    snprintf(b.owner, sizeof b.owner, "111122223333");
    return fl_catalog_bucket_create(c, &b);
}

static fl_err_t mk_ns(fl_catalog_t *c, const char *bucket, const char *name)
{
    fl_namespace_t ns = { 0 };
    snprintf(ns.bucket, sizeof ns.bucket, "%s", bucket);
    snprintf(ns.name, sizeof ns.name, "%s", name);
    snprintf(ns.owner, sizeof ns.owner, "111122223333");
    snprintf(ns.created_by, sizeof ns.created_by, "111122223333");
    return fl_catalog_ns_create(c, &ns);
}

static fl_err_t mk_table(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                         const char *kind, fl_table_t *out)
{
    fl_table_t t;
    memset(&t, 0, sizeof t);
    snprintf(t.bucket, sizeof t.bucket, "%s", bucket);
    snprintf(t.ns, sizeof t.ns, "%s", ns);
    snprintf(t.name, sizeof t.name, "%s", name);
    if (kind) snprintf(t.kind, sizeof t.kind, "%s", kind);
    snprintf(t.warehouse, sizeof t.warehouse, "s3://wh-%s-%s-%s--table-s3", bucket, ns, name);
    snprintf(t.owner, sizeof t.owner, "111122223333");
    snprintf(t.created_by, sizeof t.created_by, "111122223333");
    fl_err_t e = fl_catalog_table_create(c, &t);
    if (out) *out = t;
    return e;
}

static bool is_hex32(const char *s)
{
    if (strlen(s) != 32) return false;
    for (int i = 0; i < 32; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

static bool is_uuid4(const char *s)
{
    if (strlen(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-') return false;
    return s[14] == '4' && strchr("89ab", s[19]);
}

CAT_TEST(bucket_crud)
{
    fl_catalog_t *c = open_fresh();
    REQUIRE(c);
    fl_tbucket_t b = { 0 };
    snprintf(b.name, sizeof b.name, "alpha");
    snprintf(b.arn, sizeof b.arn, "arn:aws:s3tables:us-east-1:111122223333:bucket/alpha");
    snprintf(b.owner, sizeof b.owner, "111122223333");
    int64_t t0 = fl_now_ms();
    CHECK_EQ(fl_catalog_bucket_create(c, &b), FL_OK);
    CHECK(is_uuid4(b.id));
    CHECK(b.created_ms >= t0);
    CHECK_EQ(mk_bucket(c, "alpha"), FL_ERR_EXISTS);

    fl_tbucket_t g;
    CHECK_EQ(fl_catalog_bucket_get(c, "alpha", &g), FL_OK);
    CHECK_STR(g.name, "alpha");
    CHECK_STR(g.arn, b.arn);
    CHECK_STR(g.owner, "111122223333");
    CHECK_STR(g.id, b.id);
    CHECK_EQ(g.created_ms, b.created_ms);
    CHECK_EQ(fl_catalog_bucket_get(c, "beta", &g), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_bucket_delete(c, "beta"), FL_ERR_NOT_FOUND);

    /* not empty while a namespace remains */
    CHECK_EQ(mk_ns(c, "alpha", "ns1"), FL_OK);
    CHECK_EQ(fl_catalog_bucket_delete(c, "alpha"), FL_ERR_NOT_EMPTY);
    CHECK_EQ(fl_catalog_ns_delete(c, "alpha", "ns1"), FL_OK);

    /* deleting takes its documents along, not other buckets' */
    CHECK_EQ(mk_bucket(c, "beta"), FL_OK);
    fl_tbucket_t beta;
    CHECK_EQ(fl_catalog_bucket_get(c, "beta", &beta), FL_OK);
    CHECK_EQ(fl_catalog_doc_put(c, b.arn, "policy", "{\"a\":1}"), FL_OK);
    CHECK_EQ(fl_catalog_doc_put(c, b.arn, "tags", "{}"), FL_OK);
    CHECK_EQ(fl_catalog_doc_put(c, beta.arn, "policy", "{\"b\":1}"), FL_OK);
    CHECK_EQ(fl_catalog_bucket_delete(c, "alpha"), FL_OK);
    CHECK_EQ(fl_catalog_bucket_get(c, "alpha", &g), FL_ERR_NOT_FOUND);
    char *j = NULL;
    CHECK_EQ(fl_catalog_doc_get(c, b.arn, "policy", &j), FL_ERR_NOT_FOUND);
    CHECK(j == NULL);
    CHECK_EQ(fl_catalog_doc_get(c, b.arn, "tags", &j), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_doc_get(c, beta.arn, "policy", &j), FL_OK);
    CHECK_STR(j, "{\"b\":1}");
    free(j);
    CHECK_EQ(fl_catalog_bucket_delete(c, "alpha"), FL_ERR_NOT_FOUND);
    /* the name is free again, with a fresh id */
    CHECK_EQ(mk_bucket(c, "alpha"), FL_OK);
    CHECK_EQ(fl_catalog_bucket_get(c, "alpha", &g), FL_OK);
    CHECK(strcmp(g.id, b.id) != 0);
    fl_catalog_close(c);
}

CAT_TEST(ns_crud)
{
    fl_catalog_t *c = open_fresh();
    REQUIRE(c);
    CHECK_EQ(mk_ns(c, "nob", "ns1"), FL_ERR_NO_BUCKET);
    CHECK_EQ(mk_bucket(c, "bkt"), FL_OK);
    CHECK_EQ(mk_bucket(c, "other"), FL_OK);
    fl_namespace_t ns = { 0 };
    snprintf(ns.bucket, sizeof ns.bucket, "bkt");
    snprintf(ns.name, sizeof ns.name, "ns1");
    snprintf(ns.owner, sizeof ns.owner, "111122223333");
    snprintf(ns.created_by, sizeof ns.created_by, "444455556666");
    CHECK_EQ(fl_catalog_ns_create(c, &ns), FL_OK);
    CHECK(is_uuid4(ns.id));
    CHECK(ns.created_ms > 0);
    CHECK_EQ(mk_ns(c, "bkt", "ns1"), FL_ERR_EXISTS);
    CHECK_EQ(mk_ns(c, "other", "ns1"), FL_OK);   /* same name, other bucket */

    fl_namespace_t g;
    CHECK_EQ(fl_catalog_ns_get(c, "bkt", "ns1", &g), FL_OK);
    CHECK_STR(g.bucket, "bkt");
    CHECK_STR(g.name, "ns1");
    CHECK_STR(g.id, ns.id);
    CHECK_STR(g.owner, "111122223333");
    CHECK_STR(g.created_by, "444455556666");
    CHECK_EQ(g.created_ms, ns.created_ms);
    CHECK_STR(g.properties, "{}");
    fl_namespace_free(&g);
    CHECK_EQ(fl_catalog_ns_get(c, "bkt", "nope", &g), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_ns_get(c, "nob", "ns1", &g), FL_ERR_NOT_FOUND);

    CHECK_EQ(fl_catalog_ns_set_properties(c, "bkt", "ns1", "{\"owner\":\"me\"}"), FL_OK);
    CHECK_EQ(fl_catalog_ns_get(c, "bkt", "ns1", &g), FL_OK);
    CHECK_STR(g.properties, "{\"owner\":\"me\"}");
    fl_namespace_free(&g);
    CHECK_EQ(fl_catalog_ns_get(c, "other", "ns1", &g), FL_OK);
    CHECK_STR(g.properties, "{}");
    fl_namespace_free(&g);
    CHECK_EQ(fl_catalog_ns_set_properties(c, "bkt", "nope", "{}"), FL_ERR_NOT_FOUND);

    /* not empty while a table or a view remains */
    CHECK_EQ(mk_table(c, "bkt", "ns1", "t1", "table", NULL), FL_OK);
    CHECK_EQ(fl_catalog_ns_delete(c, "bkt", "ns1"), FL_ERR_NOT_EMPTY);
    CHECK_EQ(fl_catalog_table_delete(c, "bkt", "ns1", "t1", NULL, NULL), FL_OK);
    CHECK_EQ(mk_table(c, "bkt", "ns1", "v1", "view", NULL), FL_OK);
    CHECK_EQ(fl_catalog_ns_delete(c, "bkt", "ns1"), FL_ERR_NOT_EMPTY);
    CHECK_EQ(fl_catalog_table_delete(c, "bkt", "ns1", "v1", NULL, NULL), FL_OK);
    CHECK_EQ(fl_catalog_ns_delete(c, "bkt", "ns1"), FL_OK);
    CHECK_EQ(fl_catalog_ns_delete(c, "bkt", "ns1"), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_ns_get(c, "bkt", "ns1", &g), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_ns_get(c, "other", "ns1", &g), FL_OK);
    fl_namespace_free(&g);
    fl_catalog_close(c);
}

CAT_TEST(table_crud)
{
    fl_catalog_t *c = open_fresh();
    REQUIRE(c);
    fl_table_t t, g;
    CHECK_EQ(mk_table(c, "bkt", "ns1", "t1", NULL, NULL), FL_ERR_NO_BUCKET);
    CHECK_EQ(mk_bucket(c, "bkt"), FL_OK);
    CHECK_EQ(mk_table(c, "bkt", "ns1", "t1", NULL, NULL), FL_ERR_NOT_FOUND);
    CHECK_EQ(mk_ns(c, "bkt", "ns1"), FL_OK);
    int64_t t0 = fl_now_ms();
    CHECK_EQ(mk_table(c, "bkt", "ns1", "t1", NULL, &t), FL_OK);
    CHECK(is_uuid4(t.id));
    CHECK(is_hex32(t.version_token));
    char arn[FL_ARN_MAX];
    snprintf(arn, sizeof arn, "arn:aws:s3tables:us-east-1:111122223333:bucket/bkt/table/%s", t.id);
    CHECK_STR(t.arn, arn);
    CHECK_STR(t.kind, "table");
    CHECK_STR(t.type, "customer");
    CHECK_STR(t.format, "ICEBERG");
    CHECK_STR(t.modified_by, "111122223333");
    CHECK(t.created_ms >= t0);
    CHECK_EQ(t.modified_ms, t.created_ms);

    memset(&g, 0x55, sizeof g);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns1", "t1", &g), FL_OK);
    CHECK_STR(g.bucket, "bkt");
    CHECK_STR(g.ns, "ns1");
    CHECK_STR(g.name, "t1");
    CHECK_STR(g.id, t.id);
    CHECK_STR(g.arn, t.arn);
    CHECK_STR(g.type, "customer");
    CHECK_STR(g.format, "ICEBERG");
    CHECK_STR(g.kind, "table");
    CHECK_STR(g.warehouse, "s3://wh-bkt-ns1-t1--table-s3");
    CHECK_STR(g.metadata_location, "");
    CHECK_STR(g.version_token, t.version_token);
    CHECK_STR(g.owner, "111122223333");
    CHECK_STR(g.created_by, "111122223333");
    CHECK_STR(g.modified_by, "111122223333");
    CHECK_EQ(g.created_ms, t.created_ms);
    CHECK_EQ(g.modified_ms, t.modified_ms);
    CHECK_EQ(fl_catalog_table_get_by_arn(c, t.arn, &g), FL_OK);
    CHECK_STR(g.name, "t1");
    CHECK_EQ(fl_catalog_table_get_by_arn(c, "arn:nope", &g), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns1", "t2", &g), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns2", "t1", &g), FL_ERR_NOT_FOUND);

    /* the bucket and the table in one read */
    fl_tbucket_t bk;
    bool found = true;
    memset(&g, 0x55, sizeof g);
    memset(&bk, 0x55, sizeof bk);
    CHECK_EQ(fl_catalog_bucket_table_get(c, "bkt", "ns1", "t1", &bk, &g, &found), FL_OK);
    CHECK(found);
    CHECK_STR(bk.name, "bkt");
    CHECK_STR(bk.arn, "arn:aws:s3tables:us-east-1:111122223333:bucket/bkt");
    CHECK_STR(bk.owner, "111122223333");
    CHECK(is_uuid4(bk.id));
    CHECK(bk.created_ms > 0 && bk.created_ms <= t.created_ms);
    CHECK_STR(g.bucket, "bkt");
    CHECK_STR(g.ns, "ns1");
    CHECK_STR(g.name, "t1");
    CHECK_STR(g.id, t.id);
    CHECK_STR(g.arn, t.arn);
    CHECK_STR(g.kind, "table");
    CHECK_STR(g.warehouse, "s3://wh-bkt-ns1-t1--table-s3");
    CHECK_STR(g.version_token, t.version_token);
    CHECK_STR(g.modified_by, "111122223333");
    CHECK_EQ(g.created_ms, t.created_ms);
    CHECK_EQ(g.modified_ms, t.modified_ms);
    CHECK_EQ(fl_catalog_bucket_table_get(c, "bkt", "ns1", "t2", &bk, &g, &found), FL_OK);
    CHECK(!found);
    CHECK_STR(bk.name, "bkt");
    CHECK_EQ(fl_catalog_bucket_table_get(c, "bkt", "nons", "t1", &bk, &g, &found), FL_OK);
    CHECK(!found);
    CHECK_EQ(fl_catalog_bucket_table_get(c, "nobkt", "ns1", "t1", &bk, &g, &found), FL_ERR_NOT_FOUND);
    CHECK(!found);

    /* a name is unique across tables and views */
    CHECK_EQ(mk_table(c, "bkt", "ns1", "t1", "table", NULL), FL_ERR_EXISTS);
    CHECK_EQ(mk_table(c, "bkt", "ns1", "t1", "view", NULL), FL_ERR_EXISTS);
    fl_table_t v;
    CHECK_EQ(mk_table(c, "bkt", "ns1", "v1", "view", &v), FL_OK);
    CHECK_EQ(mk_table(c, "bkt", "ns1", "v1", "table", NULL), FL_ERR_EXISTS);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns1", "v1", &g), FL_OK);
    CHECK_STR(g.kind, "view");

    /* a caller-chosen id and ARN are kept */
    fl_table_t x;
    memset(&x, 0, sizeof x);
    snprintf(x.bucket, sizeof x.bucket, "bkt");
    snprintf(x.ns, sizeof x.ns, "ns1");
    snprintf(x.name, sizeof x.name, "given");
    snprintf(x.id, sizeof x.id, "00000000-0000-4000-8000-000000000001");
    snprintf(x.arn, sizeof x.arn, "acs:osstables:cn-hangzhou:1:bucket/bkt/table/given");
    CHECK_EQ(fl_catalog_table_create(c, &x), FL_OK);
    CHECK_EQ(fl_catalog_table_get_by_arn(c, x.arn, &g), FL_OK);
    CHECK_STR(g.id, "00000000-0000-4000-8000-000000000001");

    /* delete: guarded by the token, takes its documents along */
    CHECK_EQ(fl_catalog_doc_put(c, t.arn, "policy", "{}"), FL_OK);
    CHECK_EQ(fl_catalog_doc_put(c, t.arn, "maintenance:icebergCompaction", "{\"status\":\"enabled\"}"),
             FL_OK);
    CHECK_EQ(fl_catalog_doc_put(c, v.arn, "policy", "{\"v\":1}"), FL_OK);
    CHECK_EQ(fl_catalog_table_delete(c, "bkt", "ns1", "t1", NULL, v.version_token), FL_ERR_CONFLICT);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns1", "t1", &g), FL_OK);
    char *j = NULL;
    CHECK_EQ(fl_catalog_doc_get(c, t.arn, "policy", &j), FL_OK);
    free(j);
    CHECK_EQ(fl_catalog_table_delete(c, "bkt", "ns1", "t1", NULL, t.version_token), FL_OK);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns1", "t1", &g), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_table_get_by_arn(c, t.arn, &g), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_doc_get(c, t.arn, "policy", &j), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_doc_get(c, t.arn, "maintenance:icebergCompaction", &j), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_doc_get(c, v.arn, "policy", &j), FL_OK);
    CHECK_STR(j, "{\"v\":1}");
    free(j);
    CHECK_EQ(fl_catalog_table_delete(c, "bkt", "ns1", "t1", NULL, NULL), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_table_delete(c, "bkt", "ns1", "v1", NULL, NULL), FL_OK);
    /* a re-created table gets a new id and ARN */
    fl_table_t t2;
    CHECK_EQ(mk_table(c, "bkt", "ns1", "t1", NULL, &t2), FL_OK);
    CHECK(strcmp(t2.id, t.id) != 0);
    CHECK(strcmp(t2.arn, t.arn) != 0);
    fl_catalog_close(c);
}

CAT_TEST(bucket_list_pages)
{
    fl_catalog_t *c = open_fresh();
    REQUIRE(c);
    char name[64];
    for (int i = 24; i >= 0; i--) {     /* inserted out of order */
        snprintf(name, sizeof name, "b%02d", i);
        REQUIRE(mk_bucket(c, name) == FL_OK);
    }
    REQUIRE(mk_bucket(c, "other1") == FL_OK);
    fl_tbucket_t *v = NULL;
    size_t n = 0;
    bool more = false;
    /* walk everything in pages of 10 */
    char after[64] = "";
    int pages = 0, total = 0;
    char prev[64] = "";
    for (;;) {
        CHECK_EQ(fl_catalog_bucket_list(c, NULL, after[0] ? after : NULL, 10, &v, &n, &more), FL_OK);
        pages++;
        for (size_t i = 0; i < n; i++) {
            CHECK(strcmp(v[i].name, prev) > 0);
            snprintf(prev, sizeof prev, "%s", v[i].name);
            CHECK(is_uuid4(v[i].id));
            CHECK(strstr(v[i].arn, v[i].name) != NULL);
        }
        total += (int)n;
        if (n) snprintf(after, sizeof after, "%s", v[n - 1].name);
        free(v);
        if (!more || pages > 10) break;
    }
    CHECK_EQ(pages, 3);
    CHECK_EQ(total, 26);
    CHECK_STR(prev, "other1");

    /* exactly max matches: no more */
    CHECK_EQ(fl_catalog_bucket_list(c, "b1", NULL, 10, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 10);
    CHECK(!more);
    if (n == 10) { CHECK_STR(v[0].name, "b10"); CHECK_STR(v[9].name, "b19"); }
    free(v);
    /* prefix and cursor together; the cursor before the prefix range */
    CHECK_EQ(fl_catalog_bucket_list(c, "b", "b20", 100, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 4);
    if (n == 4) { CHECK_STR(v[0].name, "b21"); CHECK_STR(v[3].name, "b24"); }
    free(v);
    CHECK_EQ(fl_catalog_bucket_list(c, "b2", "a", 2, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 2);
    CHECK(more);
    if (n == 2) CHECK_STR(v[0].name, "b20");
    free(v);
    /* a cursor past the prefix range; a prefix with no match; a cursor past the end */
    CHECK_EQ(fl_catalog_bucket_list(c, "b1", "b2", 10, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 0);
    CHECK(!more);
    free(v);
    CHECK_EQ(fl_catalog_bucket_list(c, "zz", NULL, 10, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 0);
    free(v);
    CHECK_EQ(fl_catalog_bucket_list(c, NULL, "zzz", 10, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 0);
    CHECK(!more);
    free(v);
    /* the cursor is exclusive */
    CHECK_EQ(fl_catalog_bucket_list(c, NULL, "b05", 1, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 1);
    if (n) CHECK_STR(v[0].name, "b06");
    CHECK(more);
    free(v);
    CHECK_EQ(fl_catalog_bucket_list(c, NULL, NULL, 0, &v, &n, &more), FL_ERR_INVALID);
    fl_catalog_close(c);
}

CAT_TEST(ns_list_pages)
{
    fl_catalog_t *c = open_fresh();
    REQUIRE(c);
    REQUIRE(mk_bucket(c, "bkt") == FL_OK);
    REQUIRE(mk_bucket(c, "bk2") == FL_OK);
    char name[64];
    for (int i = 0; i < 7; i++) {
        snprintf(name, sizeof name, "sales_%d", i);
        REQUIRE(mk_ns(c, "bkt", name) == FL_OK);
    }
    REQUIRE(mk_ns(c, "bkt", "analytics") == FL_OK);
    REQUIRE(mk_ns(c, "bk2", "sales_x") == FL_OK);
    REQUIRE(fl_catalog_ns_set_properties(c, "bkt", "analytics", "{\"k\":\"v\"}") == FL_OK);

    fl_namespace_t *v = NULL;
    size_t n = 0;
    bool more = false;
    CHECK_EQ(fl_catalog_ns_list(c, "bkt", NULL, NULL, 100, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 8);
    CHECK(!more);
    if (n == 8) {
        CHECK_STR(v[0].name, "analytics");
        CHECK_STR(v[0].properties, "{\"k\":\"v\"}");
        CHECK_STR(v[1].name, "sales_0");
        CHECK_STR(v[1].properties, "{}");
        CHECK_STR(v[7].bucket, "bkt");
    }
    fl_namespaces_free(v, n);

    /* pages of 3 within a prefix */
    const char *after = NULL;
    char cur[FL_NAME_MAX];
    int seen = 0, pages = 0;
    do {
        CHECK_EQ(fl_catalog_ns_list(c, "bkt", "sales_", after, 3, &v, &n, &more), FL_OK);
        for (size_t i = 0; i < n; i++) {
            snprintf(name, sizeof name, "sales_%d", seen++);
            CHECK_STR(v[i].name, name);
        }
        if (n) { snprintf(cur, sizeof cur, "%s", v[n - 1].name); after = cur; }
        fl_namespaces_free(v, n);
    } while (more && ++pages < 10);
    CHECK_EQ(seen, 7);

    CHECK_EQ(fl_catalog_ns_list(c, "nob", NULL, NULL, 10, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 0);
    fl_namespaces_free(v, n);
    CHECK_EQ(fl_catalog_ns_list(c, "bk2", "sales", NULL, 10, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 1);
    fl_namespaces_free(v, n);
    fl_catalog_close(c);
}

CAT_TEST(table_list_pages)
{
    fl_catalog_t *c = open_fresh();
    REQUIRE(c);
    REQUIRE(mk_bucket(c, "bkt") == FL_OK);
    REQUIRE(mk_bucket(c, "bk2") == FL_OK);
    REQUIRE(mk_ns(c, "bkt", "n1") == FL_OK);
    REQUIRE(mk_ns(c, "bkt", "n2") == FL_OK);
    REQUIRE(mk_ns(c, "bk2", "n1") == FL_OK);
    char name[64];
    for (int i = 4; i >= 0; i--) {
        snprintf(name, sizeof name, "t%d", i);
        REQUIRE(mk_table(c, "bkt", "n2", name, NULL, NULL) == FL_OK);
        REQUIRE(mk_table(c, "bkt", "n1", name, NULL, NULL) == FL_OK);
    }
    REQUIRE(mk_table(c, "bkt", "n1", "v1", "view", NULL) == FL_OK);
    REQUIRE(mk_table(c, "bk2", "n1", "t9", NULL, NULL) == FL_OK);

    fl_table_t *v = NULL;
    size_t n = 0;
    bool more = false;
    /* every namespace, tables only, pages of 3 with a (namespace, name) cursor */
    char ans[FL_NAME_MAX] = "", aname[FL_NAME_MAX] = "";
    char got[400] = "";
    int pages = 0;
    do {
        CHECK_EQ(fl_catalog_table_list(c, "bkt", NULL, "table", NULL, ans[0] ? ans : NULL,
                                       ans[0] ? aname : NULL, 3, &v, &n, &more), FL_OK);
        for (size_t i = 0; i < n; i++) {
            CHECK_STR(v[i].kind, "table");
            size_t l = strlen(got);
            if (snprintf(got + l, sizeof got - l, "%s.%s ", v[i].ns, v[i].name) >= (int)(sizeof got - l))
                FL_FAIL("listing longer than the test expects");
        }
        if (n) {
            snprintf(ans, sizeof ans, "%s", v[n - 1].ns);
            snprintf(aname, sizeof aname, "%s", v[n - 1].name);
        }
        free(v);
    } while (more && ++pages < 10);
    CHECK_STR(got, "n1.t0 n1.t1 n1.t2 n1.t3 n1.t4 n2.t0 n2.t1 n2.t2 n2.t3 n2.t4 ");
    CHECK_EQ(pages, 3);

    CHECK_EQ(fl_catalog_table_list(c, "bkt", NULL, "view", NULL, NULL, NULL, 10, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 1);
    if (n) { CHECK_STR(v[0].name, "v1"); CHECK_STR(v[0].kind, "view"); }
    free(v);
    CHECK_EQ(fl_catalog_table_list(c, "bkt", NULL, NULL, NULL, NULL, NULL, 100, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 11);
    free(v);
    /* the name prefix applies in every namespace */
    CHECK_EQ(fl_catalog_table_list(c, "bkt", NULL, NULL, "t1", NULL, NULL, 100, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 2);
    if (n == 2) {
        CHECK_STR(v[0].ns, "n1");
        CHECK_STR(v[1].ns, "n2");
        CHECK_STR(v[1].name, "t1");
    }
    free(v);
    /* a cursor at the end of n1 */
    CHECK_EQ(fl_catalog_table_list(c, "bkt", NULL, NULL, NULL, "n1", "v1", 100, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 5);
    if (n) CHECK_STR(v[0].ns, "n2");
    free(v);
    /* one namespace */
    CHECK_EQ(fl_catalog_table_list(c, "bkt", "n2", NULL, "t", NULL, NULL, 4, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 4);
    CHECK(more);
    if (n == 4) CHECK_STR(v[3].name, "t3");
    free(v);
    CHECK_EQ(fl_catalog_table_list(c, "bkt", "n2", NULL, "t", "n2", "t3", 4, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 1);
    CHECK(!more);
    if (n) CHECK_STR(v[0].name, "t4");
    free(v);
    CHECK_EQ(fl_catalog_table_list(c, "bkt", "n2", NULL, NULL, "n1", "zzz", 100, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 5);   /* cursor in an earlier namespace: all of n2 */
    free(v);
    CHECK_EQ(fl_catalog_table_list(c, "bkt", "n1", NULL, NULL, "n2", "a", 100, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 0);   /* cursor past n1 */
    CHECK(!more);
    free(v);
    CHECK_EQ(fl_catalog_table_list(c, "bkt", "n1", "view", NULL, NULL, NULL, 100, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 1);
    free(v);
    CHECK_EQ(fl_catalog_table_list(c, "bk2", NULL, NULL, NULL, NULL, NULL, 100, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 1);
    if (n) CHECK_STR(v[0].name, "t9");
    free(v);
    CHECK_EQ(fl_catalog_table_list(c, "nob", NULL, NULL, NULL, NULL, NULL, 100, &v, &n, &more), FL_OK);
    CHECK_EQ(n, 0);
    free(v);
    fl_catalog_close(c);
}

CAT_TEST(swap_cas)
{
    fl_catalog_t *c = open_fresh();
    REQUIRE(c);
    REQUIRE(mk_bucket(c, "bkt") == FL_OK);
    REQUIRE(mk_ns(c, "bkt", "ns") == FL_OK);
    fl_table_t t, g;
    REQUIRE(mk_table(c, "bkt", "ns", "t", NULL, &t) == FL_OK);

    fl_table_swap_t s = { .bucket = "bkt", .ns = "ns", .name = "t", .expect_token = t.version_token,
                          .new_location = "s3://wh/metadata/00001-a.metadata.json",
                          .modified_by = "999999999999" };
    CHECK_EQ(fl_catalog_table_swap(c, &s, 1), FL_OK);
    CHECK(is_hex32(s.new_token_out));
    CHECK(strcmp(s.new_token_out, t.version_token) != 0);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns", "t", &g), FL_OK);
    CHECK_STR(g.metadata_location, "s3://wh/metadata/00001-a.metadata.json");
    CHECK_STR(g.version_token, s.new_token_out);
    CHECK_STR(g.modified_by, "999999999999");
    CHECK_STR(g.created_by, "111122223333");
    CHECK(g.modified_ms >= t.modified_ms);

    /* stale token: conflict, nothing changed */
    fl_table_t before = g;
    fl_table_swap_t stale = { .bucket = "bkt", .ns = "ns", .name = "t",
                              .expect_token = t.version_token,
                              .new_location = "s3://wh/metadata/00002-b.metadata.json" };
    CHECK_EQ(fl_catalog_table_swap(c, &stale, 1), FL_ERR_CONFLICT);
    CHECK_STR(stale.new_token_out, "");
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns", "t", &g), FL_OK);
    CHECK_STR(g.metadata_location, before.metadata_location);
    CHECK_STR(g.version_token, before.version_token);
    CHECK_EQ(g.modified_ms, before.modified_ms);
    CHECK_STR(g.modified_by, before.modified_by);

    /* no expectation: always applies; modified_by kept when NULL */
    fl_table_swap_t any = { .bucket = "bkt", .ns = "ns", .name = "t",
                            .new_location = "s3://wh/metadata/00003-c.metadata.json" };
    CHECK_EQ(fl_catalog_table_swap(c, &any, 1), FL_OK);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns", "t", &g), FL_OK);
    CHECK_STR(g.version_token, any.new_token_out);
    CHECK_STR(g.modified_by, "999999999999");

    fl_table_swap_t gone = { .bucket = "bkt", .ns = "ns", .name = "nope", .new_location = "x" };
    CHECK_EQ(fl_catalog_table_swap(c, &gone, 1), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_table_swap(c, NULL, 0), FL_OK);
    fl_catalog_close(c);
}

CAT_TEST(swap_all_or_none)
{
    fl_catalog_t *c = open_fresh();
    REQUIRE(c);
    REQUIRE(mk_bucket(c, "bkt") == FL_OK);
    REQUIRE(mk_ns(c, "bkt", "ns") == FL_OK);
    fl_table_t a, b, g;
    REQUIRE(mk_table(c, "bkt", "ns", "a", NULL, &a) == FL_OK);
    REQUIRE(mk_table(c, "bkt", "ns", "b", NULL, &b) == FL_OK);

    fl_table_swap_t s[2] = {
        { .bucket = "bkt", .ns = "ns", .name = "a", .expect_token = a.version_token,
          .new_location = "s3://a/1" },
        { .bucket = "bkt", .ns = "ns", .name = "b", .expect_token = a.version_token, /* stale */
          .new_location = "s3://b/1" },
    };
    CHECK_EQ(fl_catalog_table_swap(c, s, 2), FL_ERR_CONFLICT);
    CHECK_STR(s[0].new_token_out, "");
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns", "a", &g), FL_OK);
    CHECK_STR(g.version_token, a.version_token);
    CHECK_STR(g.metadata_location, "");
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns", "b", &g), FL_OK);
    CHECK_STR(g.version_token, b.version_token);

    /* the second table gone: none applied either */
    s[1].name = "missing";
    CHECK_EQ(fl_catalog_table_swap(c, s, 2), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns", "a", &g), FL_OK);
    CHECK_STR(g.version_token, a.version_token);

    s[1].name = "b";
    s[1].expect_token = b.version_token;
    CHECK_EQ(fl_catalog_table_swap(c, s, 2), FL_OK);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns", "a", &g), FL_OK);
    CHECK_STR(g.version_token, s[0].new_token_out);
    CHECK_STR(g.metadata_location, "s3://a/1");
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns", "b", &g), FL_OK);
    CHECK_STR(g.version_token, s[1].new_token_out);
    CHECK_STR(g.metadata_location, "s3://b/1");
    CHECK(strcmp(s[0].new_token_out, s[1].new_token_out) != 0);
    fl_catalog_close(c);
}

#define RACERS 8
#define ROUNDS 40

struct race {
    fl_catalog_t *c;
    pthread_barrier_t bar;
    char expect[40];
    fl_err_t res[RACERS];
    char tok[RACERS][40];
};

struct racer { struct race *r; int i; };

static void *racer_main(void *arg)
{
    struct racer *me = arg;
    struct race *r = me->r;
    char loc[64];
    for (int round = 0; round < ROUNDS; round++) {
        pthread_barrier_wait(&r->bar);   /* expect is set */
        snprintf(loc, sizeof loc, "s3://wh/%d/%d", round, me->i);
        fl_table_swap_t s = { .bucket = "bkt", .ns = "ns", .name = "t", .expect_token = r->expect,
                              .new_location = loc };
        r->res[me->i] = fl_catalog_table_swap(r->c, &s, 1);
        memcpy(r->tok[me->i], s.new_token_out, 40);
        pthread_barrier_wait(&r->bar);   /* round done */
    }
    return NULL;
}

CAT_TEST(swap_race)
{
    static struct race r;
    memset(&r, 0, sizeof r);
    r.c = open_fresh();
    REQUIRE(r.c);
    REQUIRE(mk_bucket(r.c, "bkt") == FL_OK);
    REQUIRE(mk_ns(r.c, "bkt", "ns") == FL_OK);
    fl_table_t t;
    REQUIRE(mk_table(r.c, "bkt", "ns", "t", NULL, &t) == FL_OK);
    memcpy(r.expect, t.version_token, 40);
    pthread_barrier_init(&r.bar, NULL, RACERS + 1);
    pthread_t th[RACERS];
    struct racer rs[RACERS];
    for (int i = 0; i < RACERS; i++) {
        rs[i] = (struct racer){ &r, i };
        pthread_create(&th[i], NULL, racer_main, &rs[i]);
    }
    int bad_rounds = 0;
    for (int round = 0; round < ROUNDS; round++) {
        pthread_barrier_wait(&r.bar);
        pthread_barrier_wait(&r.bar);
        int wins = 0, winner = -1, conflicts = 0;
        for (int i = 0; i < RACERS; i++) {
            if (r.res[i] == FL_OK) { wins++; winner = i; }
            else if (r.res[i] == FL_ERR_CONFLICT) conflicts++;
        }
        if (wins != 1 || conflicts != RACERS - 1) { bad_rounds++; continue; }
        fl_table_t g;
        char loc[64];
        snprintf(loc, sizeof loc, "s3://wh/%d/%d", round, winner);
        CHECK_EQ(fl_catalog_table_get(r.c, "bkt", "ns", "t", &g), FL_OK);
        CHECK_STR(g.version_token, r.tok[winner]);
        CHECK_STR(g.metadata_location, loc);
        memcpy(r.expect, g.version_token, 40);
    }
    for (int i = 0; i < RACERS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&r.bar);
    CHECK_EQ(bad_rounds, 0);
    fl_catalog_close(r.c);
}

CAT_TEST(rename)
{
    fl_catalog_t *c = open_fresh();
    REQUIRE(c);
    REQUIRE(mk_bucket(c, "bkt") == FL_OK);
    REQUIRE(mk_ns(c, "bkt", "src") == FL_OK);
    REQUIRE(mk_ns(c, "bkt", "dst") == FL_OK);
    fl_table_t t, g;
    REQUIRE(mk_table(c, "bkt", "src", "t", NULL, &t) == FL_OK);
    REQUIRE(mk_table(c, "bkt", "dst", "taken", NULL, NULL) == FL_OK);
    REQUIRE(mk_table(c, "bkt", "dst", "aview", "view", NULL) == FL_OK);
    REQUIRE(fl_catalog_doc_put(c, t.arn, "policy", "{\"p\":1}") == FL_OK);

    CHECK_EQ(fl_catalog_table_rename(c, "bkt", "src", "nope", "dst", "x", NULL, NULL), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_table_rename(c, "bkt", "src", "t", "nons", "x", NULL, NULL), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_table_rename(c, "bkt", "src", "t", "dst", "taken", NULL, NULL), FL_ERR_EXISTS);
    CHECK_EQ(fl_catalog_table_rename(c, "bkt", "src", "t", "dst", "aview", NULL, NULL), FL_ERR_EXISTS);
    CHECK_EQ(fl_catalog_table_rename(c, "bkt", "src", "t", "dst", "moved", NULL,
                                     "00000000000000000000000000000000"), FL_ERR_CONFLICT);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "src", "t", &g), FL_OK);
    CHECK_STR(g.version_token, t.version_token);

    CHECK_EQ(fl_catalog_table_rename(c, "bkt", "src", "t", "dst", "moved", NULL, t.version_token), FL_OK);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "src", "t", &g), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "dst", "moved", &g), FL_OK);
    CHECK_STR(g.id, t.id);
    CHECK_STR(g.arn, t.arn);
    CHECK_STR(g.warehouse, t.warehouse);
    CHECK_EQ(g.created_ms, t.created_ms);
    CHECK(is_hex32(g.version_token));
    CHECK(strcmp(g.version_token, t.version_token) != 0);
    char *j = NULL;
    CHECK_EQ(fl_catalog_doc_get(c, t.arn, "policy", &j), FL_OK);   /* documents follow the ARN */
    free(j);
    CHECK_EQ(fl_catalog_table_get_by_arn(c, t.arn, &g), FL_OK);
    CHECK_STR(g.ns, "dst");
    CHECK_STR(g.name, "moved");
    /* the source namespace is empty now */
    CHECK_EQ(fl_catalog_ns_delete(c, "bkt", "src"), FL_OK);
    /* renaming onto itself only moves the token */
    char tok[40];
    memcpy(tok, g.version_token, 40);
    CHECK_EQ(fl_catalog_table_rename(c, "bkt", "dst", "moved", "dst", "moved", NULL, tok), FL_OK);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "dst", "moved", &g), FL_OK);
    CHECK(strcmp(g.version_token, tok) != 0);
    fl_catalog_close(c);
}

CAT_TEST(docs)
{
    fl_catalog_t *c = open_fresh();
    REQUIRE(c);
    const char *arn = "arn:aws:s3tables:us-east-1:111122223333:bucket/bkt";
    char *j = NULL;
    CHECK_EQ(fl_catalog_doc_get(c, arn, "policy", &j), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_doc_put(c, arn, "policy", "{\"v\":1}"), FL_OK);
    CHECK_EQ(fl_catalog_doc_put(c, arn, "policy", "{\"v\":2}"), FL_OK);
    CHECK_EQ(fl_catalog_doc_get(c, arn, "policy", &j), FL_OK);
    CHECK_STR(j, "{\"v\":2}");
    free(j);
    CHECK_EQ(fl_catalog_doc_put(c, arn, "maintenance:icebergUnreferencedFileRemoval", "{\"u\":1}"), FL_OK);
    CHECK_EQ(fl_catalog_doc_put(c, arn, "maintenance:icebergCompaction", "{\"c\":1}"), FL_OK);
    CHECK_EQ(fl_catalog_doc_put(c, arn, "tags", "{}"), FL_OK);
    CHECK_EQ(fl_catalog_doc_put(c, "arn:other", "maintenance:icebergCompaction", "{}"), FL_OK);

    char **kinds = NULL, **jsons = NULL;
    size_t n = 0;
    CHECK_EQ(fl_catalog_doc_list(c, arn, "maintenance:", &kinds, &jsons, &n), FL_OK);
    CHECK_EQ(n, 2);
    if (n == 2) {
        CHECK_STR(kinds[0], "maintenance:icebergCompaction");
        CHECK_STR(jsons[0], "{\"c\":1}");
        CHECK_STR(kinds[1], "maintenance:icebergUnreferencedFileRemoval");
        CHECK_STR(jsons[1], "{\"u\":1}");
    }
    for (size_t i = 0; i < n; i++) { free(kinds[i]); free(jsons[i]); }
    free(kinds);
    free(jsons);
    CHECK_EQ(fl_catalog_doc_list(c, arn, NULL, &kinds, &jsons, &n), FL_OK);
    CHECK_EQ(n, 4);
    for (size_t i = 0; i < n; i++) { free(kinds[i]); free(jsons[i]); }
    free(kinds);
    free(jsons);
    CHECK_EQ(fl_catalog_doc_list(c, "arn:none", "", &kinds, &jsons, &n), FL_OK);
    CHECK_EQ(n, 0);
    free(kinds);
    free(jsons);

    CHECK_EQ(fl_catalog_doc_delete(c, arn, "policy"), FL_OK);
    CHECK_EQ(fl_catalog_doc_delete(c, arn, "policy"), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_doc_get(c, arn, "policy", &j), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_doc_get(c, arn, "tags", &j), FL_OK);
    free(j);
    fl_catalog_close(c);
}

CAT_TEST(reopen)
{
    fl_catalog_t *c = open_fresh();
    REQUIRE(c);
    fl_table_t t, g;
    REQUIRE(mk_bucket(c, "bkt") == FL_OK);
    REQUIRE(mk_ns(c, "bkt", "ns") == FL_OK);
    REQUIRE(fl_catalog_ns_set_properties(c, "bkt", "ns", "{\"a\":\"b\"}") == FL_OK);
    REQUIRE(mk_table(c, "bkt", "ns", "t", NULL, &t) == FL_OK);
    fl_table_swap_t s = { .bucket = "bkt", .ns = "ns", .name = "t", .expect_token = t.version_token,
                          .new_location = "s3://wh/metadata/1.metadata.json" };
    REQUIRE(fl_catalog_table_swap(c, &s, 1) == FL_OK);
    REQUIRE(fl_catalog_doc_put(c, t.arn, "policy", "{}") == FL_OK);
    fl_catalog_close(c);

    c = fl_catalog_open(db_path);
    REQUIRE(c);
    fl_tbucket_t b;
    CHECK_EQ(fl_catalog_bucket_get(c, "bkt", &b), FL_OK);
    fl_namespace_t ns;
    CHECK_EQ(fl_catalog_ns_get(c, "bkt", "ns", &ns), FL_OK);
    CHECK_STR(ns.properties, "{\"a\":\"b\"}");
    fl_namespace_free(&ns);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns", "t", &g), FL_OK);
    CHECK_STR(g.id, t.id);
    CHECK_STR(g.version_token, s.new_token_out);
    CHECK_STR(g.metadata_location, "s3://wh/metadata/1.metadata.json");
    char *j = NULL;
    CHECK_EQ(fl_catalog_doc_get(c, t.arn, "policy", &j), FL_OK);
    free(j);
    /* two handles on one file see each other's writes */
    fl_catalog_t *c2 = fl_catalog_open(db_path);
    REQUIRE(c2);
    CHECK_EQ(mk_ns(c2, "bkt", "ns2"), FL_OK);
    CHECK_EQ(fl_catalog_ns_get(c, "bkt", "ns2", &ns), FL_OK);
    fl_namespace_free(&ns);
    fl_catalog_close(c2);
    fl_catalog_close(c);
}

static int pragma_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

FL_TEST(catalog_schema_version)
{
    fl_catalog_t *c = open_fresh();
    REQUIRE(c);
    REQUIRE(mk_bucket(c, "bkt") == FL_OK);
    fl_catalog_close(c);

    sqlite3 *db = NULL;
    REQUIRE(sqlite3_open(db_path, &db) == SQLITE_OK);
    int v = pragma_int(db, "PRAGMA user_version");
    CHECK(v >= 1);
    sqlite3_stmt *st = NULL;
    REQUIRE(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL) == SQLITE_OK);
    REQUIRE(sqlite3_step(st) == SQLITE_ROW);
    CHECK_STR((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version=%d", v + 1);
    CHECK_EQ(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    fprintf(stderr, "  (an error about schema %d below is expected)\n", v + 1);
    CHECK(fl_catalog_open(db_path) == NULL);

    /* back at the known version it opens again, data intact */
    REQUIRE(sqlite3_open(db_path, &db) == SQLITE_OK);
    snprintf(sql, sizeof sql, "PRAGMA user_version=%d", v);
    CHECK_EQ(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    c = fl_catalog_open(db_path);
    REQUIRE(c);
    fl_tbucket_t b;
    CHECK_EQ(fl_catalog_bucket_get(c, "bkt", &b), FL_OK);
    fl_catalog_close(c);
}

/* loadTable's hot path: one cached statement on an idle pooled connection.
 * Prints the rate with FL_TEST_VERBOSE; checks only that it is not absurd. */
struct getter { fl_catalog_t *c; int n; int fails; };

static void *getter_main(void *arg)
{
    struct getter *g = arg;
    fl_table_t t;
    for (int i = 0; i < g->n; i++)
        if (fl_catalog_table_get(g->c, "bkt", "ns", "t", &t) != FL_OK) g->fails++;
    return NULL;
}

CAT_TEST(get_rate)
{
    fl_catalog_t *c = open_fresh();
    REQUIRE(c);
    REQUIRE(mk_bucket(c, "bkt") == FL_OK);
    REQUIRE(mk_ns(c, "bkt", "ns") == FL_OK);
    REQUIRE(mk_table(c, "bkt", "ns", "t", NULL, NULL) == FL_OK);
    enum { THREADS = 2 };
    const int PER = use_pg ? 2000 : 20000;
    struct getter gs[THREADS];
    pthread_t th[THREADS];
    int64_t t0 = fl_mono_ms();
    for (int i = 0; i < THREADS; i++) {
        gs[i] = (struct getter){ c, PER, 0 };
        pthread_create(&th[i], NULL, getter_main, &gs[i]);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    int64_t ms = fl_mono_ms() - t0;
    for (int i = 0; i < THREADS; i++) CHECK_EQ(gs[i].fails, 0);
    double rate = (double)(THREADS * PER) * 1000.0 / (double)(ms ? ms : 1);
    if (getenv("FL_TEST_VERBOSE"))
        printf("     catalog_get_rate: %d gets on %d threads in %lld ms = %.0f/s\n", THREADS * PER,
               THREADS, (long long)ms, rate);
    CHECK(rate > (use_pg ? 200 : 2000));   /* loose: sanitizer builds are slow */
    fl_catalog_close(c);
}

CAT_TEST(maint_leases)
{
    fl_catalog_t *c = open_fresh();
    REQUIRE(c);
    const char *arn = "arn:aws:s3tables:us-east-1:111122223333:bucket/b/table/t1";
    CHECK_EQ(fl_catalog_maint_claim(c, arn, "icebergCompaction", "node-a", 1000, 500), FL_OK);
    CHECK_EQ(fl_catalog_maint_claim(c, arn, "icebergCompaction", "node-b", 1200, 500), FL_ERR_CONFLICT);
    CHECK_EQ(fl_catalog_maint_heartbeat(c, arn, "node-a", 1400, 500), FL_OK);      /* until 1900 */
    CHECK_EQ(fl_catalog_maint_claim(c, arn, "icebergCompaction", "node-b", 1800, 500), FL_ERR_CONFLICT);
    CHECK_EQ(fl_catalog_maint_claim(c, arn, "icebergCompaction", "node-b", 1900, 500), FL_OK); /* expired */
    CHECK_EQ(fl_catalog_maint_heartbeat(c, arn, "node-a", 2000, 500), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_maint_release(c, arn, "node-a"), FL_OK);                 /* not its lease: no-op */
    CHECK_EQ(fl_catalog_maint_claim(c, arn, "icebergCompaction", "node-a", 2000, 500), FL_ERR_CONFLICT);
    int freed = -1;
    CHECK_EQ(fl_catalog_maint_release_owner(c, "node-b", &freed), FL_OK);
    CHECK_EQ(freed, 1);
    CHECK_EQ(fl_catalog_maint_claim(c, arn, "icebergSnapshotManagement", "node-a", 2000, 500), FL_OK);
    CHECK_EQ(fl_catalog_maint_release(c, arn, "node-a"), FL_OK);
    CHECK_EQ(fl_catalog_maint_claim(c, arn, "icebergCompaction", "node-b", 2001, 500), FL_OK);

    /* run records: ids grow, newest first, the job document written with them */
    int64_t last = 0;
    for (int i = 0; i < 3; i++) {
        fl_maint_run_t r = { .start_ms = 10 + i, .end_ms = 20 + i, .files_in = i, .commits = 1 };
        snprintf(r.table_arn, sizeof r.table_arn, "%s", arn);
        snprintf(r.type, sizeof r.type, "icebergCompaction");
        snprintf(r.owner, sizeof r.owner, "node-b");
        snprintf(r.status, sizeof r.status, "Successful");
        CHECK_EQ(fl_catalog_maint_run_add(c, &r, i == 2 ? "{\"status\":\"Successful\"}" : NULL), FL_OK);
        CHECK(r.id > last);
        last = r.id;
    }
    fl_maint_run_t *runs = NULL;
    size_t n = 0;
    CHECK_EQ(fl_catalog_maint_runs(c, arn, 0, 2, &runs, &n), FL_OK);
    REQUIRE(n == 2);
    CHECK_EQ(runs[0].id, last);
    CHECK_EQ(runs[0].files_in, 2);
    CHECK_STR(runs[1].owner, "node-b");
    int64_t older = runs[1].id;
    free(runs);
    CHECK_EQ(fl_catalog_maint_runs(c, arn, older, 10, &runs, &n), FL_OK);
    CHECK_EQ(n, 1);
    free(runs);
    char *j = NULL;
    CHECK_EQ(fl_catalog_doc_get(c, arn, "maintenance-job:icebergCompaction", &j), FL_OK);
    CHECK_STR(j, "{\"status\":\"Successful\"}");
    free(j);
    CHECK_EQ(fl_catalog_ping(c), FL_OK);
    fl_catalog_close(c);
}

/* PostgreSQL: a database whose schema is newer than this build is refused;
 * two handles (two nodes) see each other's commits at once. */
FL_TEST(pg_catalog_schema_version_and_two_nodes)
{
    if (!fl_test_pg_ready()) return;
    use_pg = true;
    fl_catalog_t *c = open_fresh();
    use_pg = false;
    REQUIRE(c);
    CHECK_STR(fl_catalog_backend(c), "postgresql");
    REQUIRE(mk_bucket(c, "bkt") == FL_OK);
    REQUIRE(mk_ns(c, "bkt", "ns") == FL_OK);
    fl_table_t t, g;
    REQUIRE(mk_table(c, "bkt", "ns", "t", NULL, &t) == FL_OK);
    fl_catalog_t *c2 = fl_catalog_open(db_path);
    REQUIRE(c2);
    fl_table_swap_t s = { .bucket = "bkt", .ns = "ns", .name = "t", .expect_token = t.version_token,
                          .new_location = "s3://wh/metadata/1.metadata.json" };
    CHECK_EQ(fl_catalog_table_swap(c2, &s, 1), FL_OK);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns", "t", &g), FL_OK);
    CHECK_STR(g.version_token, s.new_token_out);
    fl_table_swap_t stale = { .bucket = "bkt", .ns = "ns", .name = "t", .expect_token = t.version_token,
                              .new_location = "s3://wh/metadata/2.metadata.json" };
    CHECK_EQ(fl_catalog_table_swap(c, &stale, 1), FL_ERR_CONFLICT);
    fl_catalog_close(c2);
    fl_catalog_close(c);

    PGconn *pc = PQconnectdb(db_path);
    PQclear(PQexec(pc, "UPDATE floe_schema SET version = version + 1 WHERE label = 'catalog'"));
    fprintf(stderr, "  (an error about a newer schema below is expected)\n");
    CHECK(fl_catalog_open(db_path) == NULL);
    PQclear(PQexec(pc, "UPDATE floe_schema SET version = version - 1 WHERE label = 'catalog'"));
    PQfinish(pc);
    c = fl_catalog_open(db_path);
    REQUIRE(c);
    CHECK_EQ(fl_catalog_table_get(c, "bkt", "ns", "t", &g), FL_OK);
    fl_catalog_close(c);
}

/* Several nodes on one PostgreSQL: three catalog handles (three nodes' pools),
 * two threads each, race to claim one table's maintenance lease, round after
 * round: exactly one claimer wins, the others get FL_ERR_CONFLICT. */
struct claimer { fl_catalog_t *c; pthread_barrier_t *bar; char owner[32]; fl_err_t e; int round; };

static void *claimer_main(void *arg)
{
    struct claimer *m = arg;
    pthread_barrier_wait(m->bar);
    m->e = fl_catalog_maint_claim(m->c, "arn:t", "icebergCompaction", m->owner, 1000 + m->round, 60000);
    return NULL;
}

FL_TEST(pg_catalog_lease_race_across_nodes)
{
    if (!fl_test_pg_ready()) return;
    use_pg = true;
    fl_catalog_t *c[3] = { open_fresh() };
    use_pg = false;
    REQUIRE(c[0]);
    c[1] = fl_catalog_open(db_path);
    c[2] = fl_catalog_open(db_path);
    REQUIRE(c[1] && c[2]);
    enum { N = 6 };
    for (int round = 0; round < 10; round++) {
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, N);
        struct claimer m[N];
        pthread_t th[N];
        for (int i = 0; i < N; i++) {
            m[i] = (struct claimer){ .c = c[i % 3], .bar = &bar, .round = round };
            snprintf(m[i].owner, sizeof m[i].owner, "node-%d-%d", i % 3, i);
            pthread_create(&th[i], NULL, claimer_main, &m[i]);
        }
        int wins = 0, winner = -1;
        for (int i = 0; i < N; i++) {
            pthread_join(th[i], NULL);
            if (m[i].e == FL_OK) { wins++; winner = i; }
            else CHECK_EQ(m[i].e, FL_ERR_CONFLICT);
        }
        pthread_barrier_destroy(&bar);
        CHECK_EQ(wins, 1);
        if (winner >= 0) CHECK_EQ(fl_catalog_maint_release(c[(winner + 1) % 3], "arn:t", m[winner].owner), FL_OK);
    }
    for (int i = 0; i < 3; i++) fl_catalog_close(c[i]);
}

CAT_TEST(identities)
{
    fl_catalog_t *c = open_fresh();
    REQUIRE(c);
    fl_iam_principal_t p = { .account = "111122223333", .kind = "user", .name = "alice", .arn = "arn:u/alice",
                             .id = "AIDA1" };
    CHECK_EQ(fl_catalog_principal_create(c, &p), FL_OK);
    CHECK(p.created_ms > 0);
    CHECK_EQ(fl_catalog_principal_create(c, &p), FL_ERR_EXISTS);
    fl_iam_principal_t bob = { .account = "111122223333", .kind = "user", .name = "bob", .doc = "{}" };
    CHECK_EQ(fl_catalog_principal_create(c, &bob), FL_OK);
    fl_iam_principal_t g;
    CHECK_EQ(fl_catalog_principal_get(c, "111122223333", "user", "alice", &g), FL_OK);
    CHECK_STR(g.arn, "arn:u/alice");
    CHECK_STR(g.doc, "");
    free(g.doc);
    CHECK_EQ(fl_catalog_principal_get(c, "111122223333", "role", "alice", &g), FL_ERR_NOT_FOUND);
    fl_iam_principal_t *ps = NULL;
    size_t n = 0;
    CHECK_EQ(fl_catalog_principal_list(c, "111122223333", "user", &ps, &n), FL_OK);
    REQUIRE(n == 2);
    CHECK_STR(ps[0].name, "alice");
    CHECK_STR(ps[1].doc, "{}");
    fl_iam_principals_free(ps, n);

    fl_iam_key_t k = { .akid = "AKIA1", .account = "111122223333", .kind = "user", .name = "alice",
                       .secret = "sealed" };
    CHECK_EQ(fl_catalog_key_create(c, &k), FL_OK);
    CHECK_EQ(fl_catalog_key_create(c, &k), FL_ERR_EXISTS);
    fl_iam_key_t s = { .akid = "ASIA1", .account = "111122223333", .kind = "session", .name = "r",
                       .secret = "x", .expires_ms = 1000, .token_hash = "ab", .session_policy = "{\"p\":1}" };
    CHECK_EQ(fl_catalog_key_create(c, &s), FL_OK);
    fl_iam_key_t kg;
    CHECK_EQ(fl_catalog_key_get(c, "AKIA1", &kg), FL_OK);
    CHECK_STR(kg.status, "Active");
    CHECK_EQ(kg.last_used_ms, 0);
    free(kg.session_policy);
    CHECK_EQ(fl_catalog_key_touch(c, "AKIA1", 500), FL_OK);
    CHECK_EQ(fl_catalog_key_touch(c, "AKIA1", 400), FL_OK);     /* only forward */
    CHECK_EQ(fl_catalog_key_set_status(c, "AKIA1", "Inactive"), FL_OK);
    CHECK_EQ(fl_catalog_key_set_status(c, "NOPE", "Inactive"), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_key_get(c, "AKIA1", &kg), FL_OK);
    CHECK_EQ(kg.last_used_ms, 500);
    CHECK_STR(kg.status, "Inactive");
    free(kg.session_policy);
    fl_iam_key_t *ks = NULL;
    CHECK_EQ(fl_catalog_key_list(c, "111122223333", "user", "alice", &ks, &n), FL_OK);
    CHECK_EQ(n, 1);
    fl_iam_keys_free(ks, n);
    CHECK_EQ(fl_catalog_key_prune(c, 2000), FL_OK);
    CHECK_EQ(fl_catalog_key_get(c, "ASIA1", &kg), FL_ERR_NOT_FOUND);

    CHECK_EQ(fl_catalog_iam_policy_put(c, "111122223333", "user", "alice", "p1", "{\"a\":1}"), FL_OK);
    CHECK_EQ(fl_catalog_iam_policy_put(c, "111122223333", "user", "alice", "p1", "{\"a\":2}"), FL_OK);
    CHECK_EQ(fl_catalog_iam_policy_put(c, "111122223333", "user", "alice", "arn:p0", "managed"), FL_OK);
    char **names = NULL, **docs = NULL;
    CHECK_EQ(fl_catalog_iam_policy_list(c, "111122223333", "user", "alice", NULL, &names, &docs, &n), FL_OK);
    REQUIRE(n == 2);
    CHECK_STR(names[0], "arn:p0");
    CHECK_STR(docs[1], "{\"a\":2}");
    for (size_t i = 0; i < n; i++) { free(names[i]); free(docs[i]); }
    free(names);
    free(docs);
    CHECK_EQ(fl_catalog_iam_policy_list(c, "111122223333", "user", "alice", "nope", &names, &docs, &n),
             FL_ERR_NOT_FOUND);
    free(names);
    free(docs);
    /* a principal with keys or policies is not deleted */
    CHECK_EQ(fl_catalog_principal_delete(c, "111122223333", "user", "alice"), FL_ERR_NOT_EMPTY);
    CHECK_EQ(fl_catalog_iam_policy_delete(c, "111122223333", "user", "alice", "p1"), FL_OK);
    CHECK_EQ(fl_catalog_iam_policy_delete(c, "111122223333", "user", "alice", "p1"), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_iam_policy_delete(c, "111122223333", "user", "alice", "arn:p0"), FL_OK);
    CHECK_EQ(fl_catalog_key_delete(c, "AKIA1"), FL_OK);
    CHECK_EQ(fl_catalog_key_delete(c, "AKIA1"), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_catalog_principal_delete(c, "111122223333", "user", "alice"), FL_OK);
    CHECK_EQ(fl_catalog_principal_delete(c, "111122223333", "user", "alice"), FL_ERR_NOT_FOUND);
    fl_catalog_close(c);
}
