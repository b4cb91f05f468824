#include "meta/catalog_int.h"
#include "test.h"
#include "catalog/tablesvc.h"
#include "base/time.h"
#include "iceberg/metadata.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

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
    /* a registerTable adopting it holds its claim: the sweep leaves it, and cannot claim it */
    char reg[37], other[37];
    REQUIRE(fl_tablesvc_warehouse_claim(svc, "abandoned--table-s3", 60000, reg) == FL_OK);
    CHECK_EQ(fl_tablesvc_warehouse_claim(svc, "abandoned--table-s3", 60000, other), FL_ERR_CONFLICT);
    CHECK_EQ(fl_tablesvc_sweep(svc, fl_now_ms() + 1000), 0);
    fl_bucket_info_t bi;
    CHECK_EQ(fl_store_bucket_head(store, "abandoned--table-s3", &bi), FL_OK);
    fl_tablesvc_warehouse_release(svc, "abandoned--table-s3", reg);
    CHECK_EQ(fl_tablesvc_sweep(svc, fl_now_ms() + 1000), 1);
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

/* What maintenance does: commit through the service in-process, no HTTP. A
 * requirement that still holds commits; the same requirement once the table
 * moved on is FL_ERR_CONFLICT and leaves no file behind; a missing table is
 * FL_ERR_NOT_FOUND; a malformed update FL_ERR_INVALID. */
FL_TEST(tablesvc_commits_in_process)
{
    const char *dir = fl_test_tmpdir();
    char p[512];
    snprintf(p, sizeof p, "%s/objects", dir);
    fl_store_t *store = fl_store_open(p);
    snprintf(p, sizeof p, "%s/catalog.db", dir);
    fl_catalog_t *cat = fl_catalog_open(p);
    REQUIRE(store && cat);
    fl_tablesvc_cfg_t cfg = { .cat = cat, .store = store, .scope = { .region = "us-east-1", .account = "000000000000" } };
    fl_tablesvc_t *svc = fl_tablesvc_open(&cfg);
    fl_tbucket_t b = { .name = "lake" };
    fl_arn_bucket(&cfg.scope, "lake", b.arn);
    REQUIRE(fl_catalog_bucket_create(cat, &b) == FL_OK);
    fl_namespace_t ns = { .bucket = "lake", .name = "ns" };
    REQUIRE(fl_catalog_ns_create(cat, &ns) == FL_OK);
    fl_namespace_free(&ns);

    json_t *create = json_loads("{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":"
                                "[{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":true}]}}", 0, NULL);
    REQUIRE(create);
    int st = 0;
    char emsg[256];
    json_t *meta = fl_iceberg_new_metadata(create, "s3://pending", &st, emsg, sizeof emsg);
    json_decref(create);
    REQUIRE(meta);
    fl_table_t t;
    const char *why = NULL;
    REQUIRE(fl_tablesvc_create(svc, "lake", "ns", "t", "tester", meta, &t, &why) == FL_OK);
    json_decref(meta);
    const char *uuid0 = NULL;
    fl_tmeta_t *m0 = NULL;
    char msg[512];
    REQUIRE(fl_tablesvc_load(svc, &t, &m0, msg, sizeof msg) == FL_OK);
    uuid0 = json_string_value(json_object_get(fl_tmeta_json(m0), "table-uuid"));
    REQUIRE(uuid0);

    /* requirement holds: commit lands, the pointer moves to the returned location */
    char reqtext[256];
    snprintf(reqtext, sizeof reqtext, "[{\"type\":\"assert-table-uuid\",\"uuid\":\"%s\"},"
             "{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":null}]", uuid0);
    json_t *reqs = json_loads(reqtext, 0, NULL);
    json_t *upds = json_loads("[{\"action\":\"set-properties\",\"updates\":{\"owner\":\"maint\"}}]", 0, NULL);
    REQUIRE(reqs && upds);
    fl_tablesvc_change_t ch = { .ns = "ns", .name = "t", .requirements = reqs, .updates = upds };
    fl_tablesvc_commit_t c = { .bucket = "lake", .principal = "maintenance" };
    CHECK_EQ(fl_tablesvc_commit(svc, &c, &ch, 1, msg, sizeof msg), FL_OK);
    CHECK(!c.created);
    REQUIRE(ch.result);
    CHECK_STR(json_string_value(json_object_get(json_object_get(fl_tmeta_json(ch.result), "properties"), "owner")),
              "maint");
    fl_table_t now;
    REQUIRE(fl_catalog_table_get(cat, "lake", "ns", "t", &now) == FL_OK);
    CHECK_STR(now.metadata_location, ch.location);
    CHECK(strcmp(now.metadata_location, t.metadata_location) != 0);
    CHECK(strcmp(now.version_token, t.version_token) != 0);
    CHECK_STR(now.modified_by, "maintenance");
    fl_tmeta_release(ch.result);

    /* a snapshot lands meanwhile (another writer): the same requirement is stale */
    json_t *snap = json_loads("[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":7,\"sequence-number\":1,"
                              "\"timestamp-ms\":1700000000000,\"manifest-list\":\"s3://x/m.avro\","
                              "\"summary\":{\"operation\":\"append\"},\"schema-id\":0}},"
                              "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"branch\","
                              "\"snapshot-id\":7}]", 0, NULL);
    REQUIRE(snap);
    fl_tablesvc_change_t other = { .ns = "ns", .name = "t", .updates = snap };
    CHECK_EQ(fl_tablesvc_commit(svc, &c, &other, 1, msg, sizeof msg), FL_OK);
    fl_tmeta_release(other.result);
    fl_table_t before;
    REQUIRE(fl_catalog_table_get(cat, "lake", "ns", "t", &before) == FL_OK);
    fl_list_res_t files = { 0 };
    REQUIRE(fl_store_list(store, t.warehouse + 5, "metadata/", NULL, NULL, 1000, &files) == FL_OK);
    size_t nfiles = files.nents;
    fl_list_res_free(&files);

    CHECK_EQ(fl_tablesvc_commit(svc, &c, &ch, 1, msg, sizeof msg), FL_ERR_CONFLICT);
    CHECK(ch.result == NULL);
    CHECK(strstr(msg, "main") != NULL);
    REQUIRE(fl_catalog_table_get(cat, "lake", "ns", "t", &now) == FL_OK);
    CHECK_STR(now.version_token, before.version_token);
    REQUIRE(fl_store_list(store, t.warehouse + 5, "metadata/", NULL, NULL, 1000, &files) == FL_OK);
    CHECK_EQ(files.nents, nfiles);
    fl_list_res_free(&files);

    /* other failure classes */
    fl_tablesvc_change_t missing = { .ns = "ns", .name = "nope", .updates = upds };
    CHECK_EQ(fl_tablesvc_commit(svc, &c, &missing, 1, msg, sizeof msg), FL_ERR_NOT_FOUND);
    json_t *bad = json_loads("[{\"action\":\"no-such-action\"}]", 0, NULL);
    fl_tablesvc_change_t inval = { .ns = "ns", .name = "t", .updates = bad };
    CHECK_EQ(fl_tablesvc_commit(svc, &c, &inval, 1, msg, sizeof msg), FL_ERR_INVALID);

    /* S3 Tables' pointer move: a stale token conflicts, the current one lands */
    char tok[40];
    CHECK_EQ(fl_tablesvc_swap(svc, &now, t.version_token, t.metadata_location, "tester", tok), FL_ERR_CONFLICT);
    CHECK_EQ(fl_tablesvc_swap(svc, &now, now.version_token, t.metadata_location, "tester", tok), FL_OK);
    CHECK(tok[0] != 0);

    json_decref(bad);
    json_decref(snap);
    json_decref(reqs);
    json_decref(upds);
    fl_tmeta_release(m0);
    fl_tablesvc_close(svc);
    fl_catalog_close(cat);
    fl_store_close(store);
}

/* S3 Tables' pointer moves (UpdateTableMetadataLocation, RenameTable,
 * DeleteTable) wait for the table's lock, as REST commits do: while a commit
 * holds it, none of them lands. */
typedef struct lock_probe {
    fl_tablesvc_t *svc;
    fl_table_t t;
    int op;
    fl_err_t e;
    atomic_int done;
} lock_probe_t;

static void *lock_probe_run(void *arg)
{
    lock_probe_t *p = arg;
    char tok[40];
    if (p->op == 0) p->e = fl_tablesvc_swap(p->svc, &p->t, p->t.version_token, p->t.metadata_location, "x", tok);
    else if (p->op == 1) p->e = fl_tablesvc_rename(p->svc, &p->t, "ns", "renamed", NULL);
    else p->e = fl_tablesvc_drop(p->svc, &p->t, true, NULL);
    atomic_store(&p->done, 1);
    return NULL;
}

FL_TEST(tablesvc_pointer_moves_take_the_table_lock)
{
    const char *dir = fl_test_tmpdir();
    char p[512];
    snprintf(p, sizeof p, "%s/objects", dir);
    fl_store_t *store = fl_store_open(p);
    snprintf(p, sizeof p, "%s/catalog.db", dir);
    fl_catalog_t *cat = fl_catalog_open(p);
    REQUIRE(store && cat);
    fl_tablesvc_cfg_t cfg = { .cat = cat, .store = store, .scope = { .region = "us-east-1", .account = "000000000000" } };
    fl_tablesvc_t *svc = fl_tablesvc_open(&cfg);
    fl_tbucket_t b = { .name = "lake" };
    fl_arn_bucket(&cfg.scope, "lake", b.arn);
    REQUIRE(fl_catalog_bucket_create(cat, &b) == FL_OK);
    fl_namespace_t ns = { .bucket = "lake", .name = "ns" };
    REQUIRE(fl_catalog_ns_create(cat, &ns) == FL_OK);
    fl_namespace_free(&ns);
    const char *why = NULL;
    for (int op = 0; op < 3; op++) {
        lock_probe_t probe = { .svc = svc, .op = op };
        atomic_init(&probe.done, 0);
        REQUIRE(fl_tablesvc_create(svc, "lake", "ns", "t", "tester", NULL, &probe.t, &why) == FL_OK);
        fl_tablesvc_lock(svc, "lake", "ns", "t");
        pthread_t th;
        REQUIRE(pthread_create(&th, NULL, lock_probe_run, &probe) == 0);
        usleep(100 * 1000);
        CHECK_EQ(atomic_load(&probe.done), 0);
        fl_tablesvc_unlock(svc, "lake", "ns", "t");
        pthread_join(th, NULL);
        CHECK_EQ(atomic_load(&probe.done), 1);
        CHECK_EQ(probe.e, FL_OK);
        fl_table_t gone;
        if (op == 1) CHECK_EQ(fl_catalog_table_get(cat, "lake", "ns", "renamed", &gone), FL_OK);
        if (op == 1) REQUIRE(fl_catalog_table_get(cat, "lake", "ns", "renamed", &probe.t) == FL_OK);
        if (op == 1) REQUIRE(fl_tablesvc_drop(svc, &probe.t, true, NULL) == FL_OK);
        else if (op == 0) REQUIRE(fl_catalog_table_get(cat, "lake", "ns", "t", &probe.t) == FL_OK);
        if (op == 0) REQUIRE(fl_tablesvc_drop(svc, &probe.t, true, NULL) == FL_OK);
        CHECK_EQ(fl_catalog_table_get(cat, "lake", "ns", "t", &gone), FL_ERR_NOT_FOUND);
    }
    fl_tablesvc_close(svc);
    fl_catalog_close(cat);
    fl_store_close(store);
}

/* The catalog store's pointer swap failing: unreachable (FL_ERR_INTERNAL,
 * nothing was written) is "nothing was committed" and the new metadata file is
 * removed; a failure of unknown outcome (FL_ERR_IO) stays "unknown" and keeps
 * the file. Injected through the backend's ops table. */
static fl_err_t injected_swap_err;
static fl_err_t injected_swap(fl_catalog_t *c, fl_table_swap_t *s, size_t n)
{
    (void)c;
    for (size_t i = 0; i < n; i++) s[i].new_token_out[0] = 0;
    return injected_swap_err;
}

static size_t metadata_files(fl_store_t *store, const fl_table_t *t)
{
    fl_list_res_t files = { 0 };
    if (fl_store_list(store, t->warehouse + 5, "metadata/", NULL, NULL, 1000, &files) != FL_OK) return 0;
    size_t n = files.nents;
    fl_list_res_free(&files);
    return n;
}

FL_TEST(tablesvc_commit_catalog_unreachable_is_nothing_committed)
{
    const char *dir = fl_test_tmpdir();
    char p[512];
    snprintf(p, sizeof p, "%s/objects", dir);
    fl_store_t *store = fl_store_open(p);
    snprintf(p, sizeof p, "%s/catalog.db", dir);
    fl_catalog_t *cat = fl_catalog_open(p);
    REQUIRE(store && cat);
    fl_tablesvc_cfg_t cfg = { .cat = cat, .store = store, .scope = { .region = "us-east-1", .account = "000000000000" } };
    fl_tablesvc_t *svc = fl_tablesvc_open(&cfg);
    fl_tbucket_t b = { .name = "lake" };
    fl_arn_bucket(&cfg.scope, "lake", b.arn);
    REQUIRE(fl_catalog_bucket_create(cat, &b) == FL_OK);
    fl_namespace_t ns = { .bucket = "lake", .name = "ns" };
    REQUIRE(fl_catalog_ns_create(cat, &ns) == FL_OK);
    fl_namespace_free(&ns);
    json_t *create = json_loads("{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":"
                                "[{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":true}]}}", 0, NULL);
    int st = 0;
    char emsg[256], msg[512];
    json_t *meta = fl_iceberg_new_metadata(create, "s3://pending", &st, emsg, sizeof emsg);
    json_decref(create);
    REQUIRE(meta);
    fl_table_t t, now;
    const char *why = NULL;
    REQUIRE(fl_tablesvc_create(svc, "lake", "ns", "t", "tester", meta, &t, &why) == FL_OK);
    json_decref(meta);
    size_t before = metadata_files(store, &t);

    const fl_catalog_ops_t *real = cat->ops;
    static fl_catalog_ops_t faulty;
    faulty = *real;
    faulty.table_swap = injected_swap;
    cat->ops = &faulty;
    json_t *upds = json_loads("[{\"action\":\"set-properties\",\"updates\":{\"k\":\"v\"}}]", 0, NULL);
    fl_tablesvc_change_t ch = { .ns = "ns", .name = "t", .updates = upds };
    fl_tablesvc_commit_t c = { .bucket = "lake", .principal = "tester" };

    injected_swap_err = FL_ERR_INTERNAL;
    CHECK_EQ(fl_tablesvc_commit(svc, &c, &ch, 1, msg, sizeof msg), FL_ERR_INTERNAL);
    CHECK(strstr(msg, "nothing was committed") != NULL);
    CHECK(ch.result == NULL);
    CHECK_EQ(metadata_files(store, &t), before);

    injected_swap_err = FL_ERR_IO;
    CHECK_EQ(fl_tablesvc_commit(svc, &c, &ch, 1, msg, sizeof msg), FL_ERR_IO);
    CHECK(strstr(msg, "unknown") != NULL);
    CHECK_EQ(metadata_files(store, &t), before + 1);   /* kept: it may be the table's now */

    cat->ops = real;
    REQUIRE(fl_catalog_table_get(cat, "lake", "ns", "t", &now) == FL_OK);
    CHECK_STR(now.version_token, t.version_token);
    json_decref(upds);
    fl_tablesvc_close(svc);
    fl_catalog_close(cat);
    fl_store_close(store);
}

/* --location-scheme oss: a new table's location and metadata files are
 * oss://{warehouse}; the row keeps s3:// as the warehouse's identity; either
 * scheme is a valid metadata location and reads; a commit lands and its
 * metadata file is oss:// too; set-location to the same warehouse under the
 * other scheme is no move. */
FL_TEST(tablesvc_oss_locations)
{
    const char *dir = fl_test_tmpdir();
    char p[512];
    snprintf(p, sizeof p, "%s/objects", dir);
    fl_store_t *store = fl_store_open(p);
    snprintf(p, sizeof p, "%s/catalog.db", dir);
    fl_catalog_t *cat = fl_catalog_open(p);
    REQUIRE(store && cat);
    fl_tablesvc_cfg_t cfg = { .cat = cat, .store = store, .scope = { .region = "us-east-1", .account = "000000000000" },
                              .oss_locations = true };
    fl_tablesvc_t *svc = fl_tablesvc_open(&cfg);
    CHECK_STR(fl_tablesvc_scheme(svc), "oss");
    fl_tbucket_t b = { .name = "lake" };
    fl_arn_bucket(&cfg.scope, "lake", b.arn);
    REQUIRE(fl_catalog_bucket_create(cat, &b) == FL_OK);
    fl_namespace_t ns = { .bucket = "lake", .name = "ns" };
    REQUIRE(fl_catalog_ns_create(cat, &ns) == FL_OK);
    fl_namespace_free(&ns);
    json_t *create = json_loads("{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":"
                                "[{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":true}]}}", 0, NULL);
    int st = 0;
    char emsg[256], msg[512], wl[FL_LOC_MAX];
    json_t *meta = fl_iceberg_new_metadata(create, "s3://pending", &st, emsg, sizeof emsg);
    json_decref(create);
    REQUIRE(meta);
    fl_table_t t;
    const char *why = NULL;
    REQUIRE(fl_tablesvc_create(svc, "lake", "ns", "t", "tester", meta, &t, &why) == FL_OK);
    json_decref(meta);
    CHECK(!strncmp(t.warehouse, "s3://", 5));
    fl_tablesvc_warehouse_url(svc, &t, wl);
    CHECK(!strncmp(wl, "oss://", 6) && !strcmp(wl + 6, t.warehouse + 5));
    CHECK(!strncmp(t.metadata_location, wl, strlen(wl)));
    CHECK(fl_tablesvc_location_ok(&t, t.metadata_location));
    char s3loc[2 * FL_LOC_MAX];
    snprintf(s3loc, sizeof s3loc, "s3://%s", t.metadata_location + 6);
    CHECK(fl_tablesvc_location_ok(&t, s3loc));
    CHECK(!fl_tablesvc_location_ok(&t, "gs://x/metadata/a.metadata.json"));
    fl_tmeta_t *m0 = NULL;
    REQUIRE(fl_tablesvc_load(svc, &t, &m0, msg, sizeof msg) == FL_OK);
    CHECK_STR(json_string_value(json_object_get(fl_tmeta_json(m0), "location")), wl);
    fl_tmeta_release(m0);
    json_t *md = NULL;
    CHECK_EQ(fl_tablesvc_read_metadata(svc, s3loc, &md), FL_OK);
    json_decref(md);
    char wb[64], id[37];
    CHECK(fl_tablesvc_warehouse_of(wl, wb, id));
    CHECK_STR(id, t.id);
    /* a commit with set-location to the same warehouse as s3:// */
    char upd[FL_LOC_MAX + 256];
    snprintf(upd, sizeof upd, "[{\"action\":\"set-location\",\"location\":\"%s\"},"
             "{\"action\":\"set-properties\",\"updates\":{\"k\":\"v\"}}]", t.warehouse);
    json_t *reqs = json_loads("[]", 0, NULL), *upds = json_loads(upd, 0, NULL);
    REQUIRE(reqs && upds);
    fl_tablesvc_change_t ch = { .ns = "ns", .name = "t", .requirements = reqs, .updates = upds };
    fl_tablesvc_commit_t c = { .bucket = "lake", .principal = "tester" };
    CHECK_EQ(fl_tablesvc_commit(svc, &c, &ch, 1, msg, sizeof msg), FL_OK);
    CHECK(!strncmp(ch.location, "oss://", 6));
    fl_tmeta_release(ch.result);
    json_decref(reqs);
    json_decref(upds);
    fl_tablesvc_close(svc);
    fl_catalog_close(cat);
    fl_store_close(store);
}
