#include "test.h"
#include "catalog/tablesvc.h"
#include "base/time.h"
#include <stdio.h>

static fl_err_t put_small(fl_store_t *s, const char *bucket, const char *key)
{
    fl_blob_w_t *w = NULL;
    fl_err_t e = fl_blob_w_open(s, &w);
    if (!e) e = fl_blob_w_write(w, "x", 1);
    if (e) { fl_blob_w_abort(w); return e; }
    fl_obj_meta_t m = { .size = 1, .etag = "9dd4e461268c8034f5c8564e155c67a6", .headers = "" };
    return fl_store_put(s, w, bucket, key, strlen(key), &m, NULL);
}

FL_TEST(tablesvc_sweeps_unowned_warehouses_only)
{
    const char *dir = fl_test_tmpdir();
    char p[512];
    snprintf(p, sizeof p, "%s/objects", dir);
    fl_store_t *store = fl_store_open(p);
    snprintf(p, sizeof p, "%s/catalog.db", dir);
    fl_catalog_t *cat = fl_catalog_open(p);
    REQUIRE(store && cat);
    fl_tablesvc_cfg_t cfg = { .cat = cat, .store = store, .scope = { .region = "us-east-1", .account = "000000000000" } };
    fl_tbucket_t b = { .name = "lake" };
    fl_arn_bucket(&cfg.scope, "lake", b.arn);
    fl_tablesvc_t *svc = fl_tablesvc_open(&cfg);
    REQUIRE(fl_catalog_bucket_create(cat, &b) == FL_OK);
    fl_namespace_t ns = { .bucket = "lake", .name = "ns" };
    REQUIRE(fl_catalog_ns_create(cat, &ns) == FL_OK);
    fl_namespace_free(&ns);
    fl_table_t t;
    const char *why = NULL;
    REQUIRE(fl_tablesvc_create(svc, "lake", "ns", "owned", "tester", NULL, &t, &why) == FL_OK);
    /* an abandoned warehouse with an object and an ordinary bucket */
    REQUIRE(fl_store_bucket_create(store, "abandoned--table-s3") == FL_OK);
    REQUIRE(put_small(store, "abandoned--table-s3", "data/f.parquet") == FL_OK);
    REQUIRE(fl_store_bucket_create(store, "plain") == FL_OK);

    CHECK_EQ(fl_tablesvc_sweep(svc, fl_now_ms() - 3600 * 1000), 0); /* too young */
    CHECK_EQ(fl_tablesvc_sweep(svc, fl_now_ms() + 1000), 1);
    fl_bucket_info_t bi;
    CHECK_EQ(fl_store_bucket_head(store, "abandoned--table-s3", &bi), FL_ERR_NO_BUCKET);
    CHECK_EQ(fl_store_bucket_head(store, "plain", &bi), FL_OK);
    CHECK_EQ(fl_store_bucket_head(store, t.warehouse + 5, &bi), FL_OK);
    fl_tablesvc_close(svc);
    fl_catalog_close(cat);
    fl_store_close(store);
}

/* dropTable / DeleteTable read the row, then drop: a rename x -> y and a new x in
 * between must neither delete the new x nor purge y's warehouse. Rename and pointer
 * swaps of the stale row fail the same way. */
FL_TEST(tablesvc_drop_acts_on_the_table_it_checked)
{
    const char *dir = fl_test_tmpdir();
    char p[512];
    snprintf(p, sizeof p, "%s/objects", dir);
    fl_store_t *store = fl_store_open(p);
    snprintf(p, sizeof p, "%s/catalog.db", dir);
    fl_catalog_t *cat = fl_catalog_open(p);
    REQUIRE(store && cat);
    fl_tablesvc_cfg_t cfg = { .cat = cat, .store = store, .scope = { .region = "us-east-1", .account = "000000000000" } };
    fl_tbucket_t b = { .name = "lake" };
    fl_arn_bucket(&cfg.scope, "lake", b.arn);
    fl_tablesvc_t *svc = fl_tablesvc_open(&cfg);
    REQUIRE(fl_catalog_bucket_create(cat, &b) == FL_OK);
    fl_namespace_t ns = { .bucket = "lake", .name = "ns" };
    REQUIRE(fl_catalog_ns_create(cat, &ns) == FL_OK);
    fl_namespace_free(&ns);
    const char *why = NULL;
    fl_table_t old_x, new_x, cur;
    REQUIRE(fl_tablesvc_create(svc, "lake", "ns", "x", "tester", NULL, &old_x, &why) == FL_OK);
    REQUIRE(put_small(store, old_x.warehouse + 5, "data/f.parquet") == FL_OK);

    /* the drop has read old_x; meanwhile x -> y and a new x */
    REQUIRE(fl_catalog_table_rename(cat, "lake", "ns", "x", "ns", "y", NULL, NULL) == FL_OK);
    REQUIRE(fl_tablesvc_create(svc, "lake", "ns", "x", "tester", NULL, &new_x, &why) == FL_OK);

    CHECK_EQ(fl_tablesvc_drop(svc, &old_x, true, NULL), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_tablesvc_drop(svc, &old_x, true, old_x.version_token), FL_ERR_NOT_FOUND);
    REQUIRE(fl_catalog_table_get(cat, "lake", "ns", "x", &cur) == FL_OK);
    CHECK_STR(cur.id, new_x.id);
    REQUIRE(fl_catalog_table_get(cat, "lake", "ns", "y", &cur) == FL_OK);
    CHECK_STR(cur.id, old_x.id);
    fl_obj_t *o = NULL;
    CHECK_EQ(fl_store_get(store, old_x.warehouse + 5, "data/f.parquet", 14, &o), FL_OK);
    fl_obj_close(o);

    /* rename and swap of the stale row: not found, nothing moves */
    CHECK_EQ(fl_catalog_table_rename(cat, "lake", "ns", "x", "ns", "z", old_x.id, NULL), FL_ERR_NOT_FOUND);
    fl_table_swap_t sw = { .bucket = "lake", .ns = "ns", .name = "x", .expect_id = old_x.id,
                           .new_location = "s3://elsewhere/m.metadata.json" };
    CHECK_EQ(fl_catalog_table_swap(cat, &sw, 1), FL_ERR_NOT_FOUND);
    REQUIRE(fl_catalog_table_get(cat, "lake", "ns", "x", &cur) == FL_OK);
    CHECK_STR(cur.id, new_x.id);
    CHECK_STR(cur.metadata_location, "");

    /* the row as it is now (y, same id) drops and purges its own warehouse only */
    REQUIRE(fl_catalog_table_get(cat, "lake", "ns", "y", &cur) == FL_OK);
    CHECK_EQ(fl_tablesvc_drop(svc, &cur, true, NULL), FL_OK);
    fl_bucket_info_t bi;
    CHECK_EQ(fl_store_bucket_head(store, old_x.warehouse + 5, &bi), FL_ERR_NO_BUCKET);
    CHECK_EQ(fl_store_bucket_head(store, new_x.warehouse + 5, &bi), FL_OK);
    fl_tablesvc_close(svc);
    fl_catalog_close(cat);
    fl_store_close(store);
}
