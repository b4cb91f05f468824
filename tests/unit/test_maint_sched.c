/* maint/sched.h and the catalog store's leases and run records: claims (two
 * claimers, one wins; racing threads, one wins; an expired lease is
 * reclaimed, its old holder's heartbeat fails; a restarted node frees its
 * own leases at start), need-based picking
 * (compaction at N small files, expiry beyond the retention, disabled
 * configuration, gc.enabled=false recorded as Disabled), and a run recorded
 * with the status GetTableMaintenanceJobStatus reads. */
#include "test.h"
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "base/time.h"
#include "catalog/maintcfg.h"
#include "iceberg/orphans.h"
#include "iceberg/scan.h"
#include "maint/ops.h"
#include "maint/sched.h"
#include "maint_fixture.h"

#define ARN "arn:aws:s3tables:us-east-1:000000000000:bucket/lake/table/x"

FL_TEST(maint_lease_one_claimer_wins_and_expiry_reclaims)
{
    maint_fix_t f;
    REQUIRE(maint_fix_open(&f) == 0);
    int64_t now = 1700000000000LL, lease = 60000;
    CHECK_EQ(fl_catalog_maint_claim(f.cat, ARN, "icebergCompaction", "node-a", now, lease), FL_OK);
    CHECK_EQ(fl_catalog_maint_claim(f.cat, ARN, "icebergCompaction", "node-b", now + 1, lease), FL_ERR_CONFLICT);
    /* one job per table: the holder itself cannot start a second one */
    CHECK_EQ(fl_catalog_maint_claim(f.cat, ARN, "icebergSnapshotManagement", "node-a", now + 1, lease), FL_ERR_CONFLICT);
    CHECK_EQ(fl_catalog_maint_heartbeat(f.cat, ARN, "node-a", now + 30000, lease), FL_OK);
    CHECK_EQ(fl_catalog_maint_heartbeat(f.cat, ARN, "node-b", now + 30000, lease), FL_ERR_NOT_FOUND);
    /* the heartbeat moved the expiry: still held at now + lease */
    CHECK_EQ(fl_catalog_maint_claim(f.cat, ARN, "icebergCompaction", "node-b", now + lease, lease), FL_ERR_CONFLICT);
    /* node-a crashed: after its lease expires, node-b takes over */
    CHECK_EQ(fl_catalog_maint_claim(f.cat, ARN, "icebergCompaction", "node-b", now + 30000 + lease, lease), FL_OK);
    CHECK_EQ(fl_catalog_maint_heartbeat(f.cat, ARN, "node-a", now + 30000 + lease + 1, lease), FL_ERR_NOT_FOUND);
    /* a stale holder's release does not free the new holder's lease */
    CHECK_EQ(fl_catalog_maint_release(f.cat, ARN, "node-a"), FL_OK);
    CHECK_EQ(fl_catalog_maint_claim(f.cat, ARN, "icebergCompaction", "node-c", now + 30000 + lease + 2, lease),
             FL_ERR_CONFLICT);
    CHECK_EQ(fl_catalog_maint_release(f.cat, ARN, "node-b"), FL_OK);
    CHECK_EQ(fl_catalog_maint_claim(f.cat, ARN, "icebergCompaction", "node-c", now + 30000 + lease + 3, lease), FL_OK);
    maint_fix_close(&f);
}

/* A node killed mid-job restarts under the same owner (serve's node id): its
 * start frees the leases it held, not another node's, so its tables do not
 * wait out the lease. */
FL_TEST(maint_restarted_node_frees_its_own_leases)
{
    maint_fix_t f;
    REQUIRE(maint_fix_open(&f) == 0);
    const char *other = "arn:aws:s3tables:us-east-1:000000000000:bucket/lake/table/y";
    int64_t now = fl_now_ms(), lease = FL_MAINT_LEASE_MS;
    CHECK_EQ(fl_catalog_maint_claim(f.cat, ARN, "icebergCompaction", "node-a", now, lease), FL_OK);
    CHECK_EQ(fl_catalog_maint_claim(f.cat, other, "icebergCompaction", "node-b", now, lease), FL_OK);
    int freed = -1;
    CHECK_EQ(fl_catalog_maint_release_owner(f.cat, "node-c", &freed), FL_OK);
    CHECK_EQ(freed, 0);
    CHECK_EQ(fl_catalog_maint_release_owner(f.cat, "", &freed), FL_ERR_INVALID);
    /* node-a restarts: fl_maint_start frees its lease (interval 0: no threads) */
    fl_maint_cfg_t cfg = { .svc = f.svc, .owner = "node-a" };
    fl_maint_t *m = fl_maint_new(&cfg);
    CHECK_EQ(fl_maint_start(m), FL_OK);
    fl_maint_free(m);
    CHECK_EQ(fl_catalog_maint_claim(f.cat, ARN, "icebergCompaction", "node-a", now + 1, lease), FL_OK);
    CHECK_EQ(fl_catalog_maint_release_owner(f.cat, "node-a", &freed), FL_OK);
    CHECK_EQ(freed, 1);
    CHECK_EQ(fl_catalog_maint_claim(f.cat, ARN, "icebergCompaction", "node-c", now + 2, lease), FL_OK);
    /* node-b's lease is untouched */
    CHECK_EQ(fl_catalog_maint_claim(f.cat, other, "icebergCompaction", "node-a", now + 2, lease), FL_ERR_CONFLICT);
    CHECK_EQ(fl_catalog_maint_heartbeat(f.cat, other, "node-b", now + 3, lease), FL_OK);
    maint_fix_close(&f);
}

typedef struct racer {
    fl_catalog_t *cat;
    char owner[16];
    atomic_int *go;
    fl_err_t e;
} racer_t;

static void *race(void *arg)
{
    racer_t *r = arg;
    while (!atomic_load(r->go)) {}
    r->e = fl_catalog_maint_claim(r->cat, ARN, "icebergCompaction", r->owner, fl_now_ms(), 60000);
    return NULL;
}

FL_TEST(maint_lease_racing_claimers_one_wins)
{
    maint_fix_t f;
    REQUIRE(maint_fix_open(&f) == 0);
    for (int round = 0; round < 5; round++) {
        atomic_int go = 0;
        racer_t r[4];
        pthread_t th[4];
        for (int i = 0; i < 4; i++) {
            r[i] = (racer_t){ .cat = f.cat, .go = &go };
            snprintf(r[i].owner, sizeof r[i].owner, "node-%d", i);
            pthread_create(&th[i], NULL, race, &r[i]);
        }
        atomic_store(&go, 1);
        int wins = 0;
        for (int i = 0; i < 4; i++) {
            pthread_join(th[i], NULL);
            if (r[i].e == FL_OK) wins++;
            else CHECK_EQ(r[i].e, FL_ERR_CONFLICT);
        }
        CHECK_EQ(wins, 1);
        /* reset for the next round */
        for (int i = 0; i < 4; i++) fl_catalog_maint_release(f.cat, ARN, r[i].owner);
    }
    maint_fix_close(&f);
}

static void set_prop(const fl_table_ops_t *ops, const char *k, const char *v)
{
    json_t *u = json_pack("[{s:s,s:{s:s}}]", "action", "set-properties", "updates", k, v), *md = NULL;
    int st = 0;
    char err[256];
    ops->commit(ops->ctx, NULL, u, &md, &st, err, sizeof err);
    json_decref(md);
    json_decref(u);
}

static fl_table_t reload(maint_fix_t *f, const char *name)
{
    fl_table_t t;
    memset(&t, 0, sizeof t);
    fl_catalog_table_get(f->cat, "lake", "ns", name, &t);
    return t;
}

static char *job_doc(maint_fix_t *f, const fl_table_t *t, const char *type)
{
    char kind[96], *s = NULL;
    snprintf(kind, sizeof kind, "maintenance-job:%s", type);
    fl_catalog_doc_get(f->cat, t->arn, kind, &s);
    return s;
}

FL_TEST(maint_picks_by_need_and_records_runs)
{
    maint_fix_t f;
    REQUIRE(maint_fix_open(&f) == 0);
    fl_table_t t;
    REQUIRE(maint_fix_table(&f, "t", &t) == 0);
    fl_maint_ops_ctx_t ctx;
    fl_table_ops_t ops;
    REQUIRE(fl_maint_table_ops(&ctx, f.svc, &t, &ops) == FL_OK);
    fl_maint_cfg_t cfg = { .svc = f.svc, .min_small_files = 5, .owner = "test-node" };
    fl_maint_t *m = fl_maint_new(&cfg);
    int64_t now = fl_now_ms(), later = now + 200LL * 3600 * 1000;

    /* unreferenced-file removal (its own test below) is off for this bucket */
    fl_tbucket_t tb;
    REQUIRE(fl_catalog_bucket_get(f.cat, t.bucket, &tb) == FL_OK);
    char ukind[96];
    snprintf(ukind, sizeof ukind, "maintenance:%s", FL_MAINT_UNREFERENCED);
    REQUIRE(fl_catalog_doc_put(f.cat, tb.arn, ukind, "{\"status\":\"disabled\",\"settings\":{"
                               "\"icebergUnreferencedFileRemoval\":{\"unreferencedDays\":3,\"nonCurrentDays\":10}}}") == FL_OK);
    /* an empty table needs nothing */
    CHECK_EQ(fl_maint_pick(m, &t, now), 0);
    /* 4 commits: 4 small files per partition, under the threshold; young snapshots */
    for (int k = 0; k < 4; k++) REQUIRE(maint_fix_append(&ops, k * 10, 10) > 0);
    t = reload(&f, "t");
    CHECK_EQ(fl_maint_pick(m, &t, now), 0);
    /* 200 h later, the 3 older snapshots are beyond the 120 h retention */
    CHECK_EQ(fl_maint_pick(m, &t, later), FL_MAINT_JOB_SNAPSHOTS);
    /* a 5th commit: 5 small files per partition */
    REQUIRE(maint_fix_append(&ops, 40, 10) > 0);
    t = reload(&f, "t");
    CHECK_EQ(fl_maint_pick(m, &t, now), FL_MAINT_JOB_COMPACTION);

    /* disabled by configuration: not picked */
    char kind[96];
    snprintf(kind, sizeof kind, "maintenance:%s", FL_MAINT_COMPACTION);
    REQUIRE(fl_catalog_doc_put(f.cat, t.arn, kind, "{\"status\":\"disabled\",\"settings\":{\"icebergCompaction\":"
                                                   "{\"targetFileSizeMB\":512,\"strategy\":\"auto\"}}}") == FL_OK);
    CHECK_EQ(fl_maint_pick(m, &t, later), FL_MAINT_JOB_SNAPSHOTS);
    REQUIRE(fl_catalog_doc_delete(f.cat, t.arn, kind) == FL_OK);

    /* the job runs, is recorded, and the status document says Successful */
    fl_maint_run_t r;
    CHECK_EQ(fl_maint_run_job(m, &t, FL_MAINT_JOB_COMPACTION, now, &r), FL_OK);
    CHECK_STR(r.status, "Successful");
    CHECK_EQ(r.files_in, 10);
    CHECK_EQ(r.files_out, 2);
    CHECK(r.commits >= 1);
    char *doc = job_doc(&f, &t, FL_MAINT_COMPACTION);
    REQUIRE(doc);
    json_t *d = json_loads(doc, 0, NULL);
    CHECK_STR(json_string_value(json_object_get(d, "status")), "Successful");
    CHECK_EQ(json_integer_value(json_object_get(d, "lastRunTimestamp")), r.start_ms);
    CHECK(json_object_get(d, "failureMessage") == NULL);
    json_decref(d);
    free(doc);
    t = reload(&f, "t");
    CHECK_EQ(fl_maint_pick(m, &t, now), 0);
    /* the lease was released: another node could claim the table now */
    CHECK_EQ(fl_catalog_maint_claim(f.cat, t.arn, FL_MAINT_COMPACTION, "other", now, 1000LL * 3600 * 1000), FL_OK);
    /* ... and while it holds it, this node's run is refused */
    CHECK_EQ(fl_maint_run_job(m, &t, FL_MAINT_JOB_SNAPSHOTS, later, NULL), FL_ERR_CONFLICT);
    CHECK_EQ(fl_catalog_maint_release(f.cat, t.arn, "other"), FL_OK);

    /* a whole pass 200 h later expires the snapshots (one job run) */
    CHECK_EQ(fl_maint_pass(m, later), 1);
    fl_maint_run_t *runs = NULL;
    size_t n = 0;
    REQUIRE(fl_catalog_maint_runs(f.cat, t.arn, 0, 10, &runs, &n) == FL_OK);
    REQUIRE(n == 2);
    CHECK_STR(runs[0].type, FL_MAINT_SNAPSHOTS);
    CHECK_STR(runs[0].status, "Successful");
    CHECK_EQ(runs[0].snapshots_removed, 5);
    CHECK(runs[0].objects_removed >= 10);
    CHECK_STR(runs[1].type, FL_MAINT_COMPACTION);
    free(runs);

    /* gc.enabled=false: expiry is Disabled with the service's message, not picked */
    set_prop(&ops, "gc.enabled", "false");
    for (int k = 0; k < 2; k++) REQUIRE(maint_fix_append(&ops, 100 + k * 10, 10) > 0);
    t = reload(&f, "t");
    CHECK_EQ(fl_maint_pick(m, &t, later + 200LL * 3600 * 1000) & FL_MAINT_JOB_SNAPSHOTS, 0);
    doc = job_doc(&f, &t, FL_MAINT_SNAPSHOTS);
    REQUIRE(doc);
    d = json_loads(doc, 0, NULL);
    CHECK_STR(json_string_value(json_object_get(d, "status")), "Disabled");
    CHECK(strlen(json_string_value(json_object_get(d, "failureMessage")) ?: "") > 0);
    json_decref(d);
    free(doc);
    fl_maint_free(m);
    maint_fix_close(&f);
}

static fl_err_t count_noncurrent(void *arg, const char *uri, uint64_t size, int64_t mtime_ms)
{
    (void)size;
    (void)mtime_ms;
    if (strstr(uri, "/" FL_ORPHANS_DIR "/") && strstr(uri, "orphan.parquet")) (*(int *)arg)++;
    return FL_OK;
}

/* Unreferenced-file removal run by the scheduler in-process: picked when it never ran, an
 * old orphan moved to the noncurrent prefix through the store-level copy, not picked again
 * within a day. */
/* The table's icebergCompaction strategy reaches the rewrite: sort on a table
 * without a sort order bin-packs and says so in the run's message; with a sort
 * order, auto sorts (the new files carry the order's id) and says nothing. */
FL_TEST(maint_compaction_strategy_from_configuration)
{
    maint_fix_t f;
    REQUIRE(maint_fix_open(&f) == 0);
    fl_table_t t;
    REQUIRE(maint_fix_table(&f, "st", &t) == 0);
    fl_maint_ops_ctx_t ctx;
    fl_table_ops_t ops;
    REQUIRE(fl_maint_table_ops(&ctx, f.svc, &t, &ops) == FL_OK);
    fl_maint_cfg_t cfg = { .svc = f.svc, .min_small_files = 2, .owner = "test-node" };
    fl_maint_t *m = fl_maint_new(&cfg);
    int64_t now = fl_now_ms();
    char kind[96];
    snprintf(kind, sizeof kind, "maintenance:%s", FL_MAINT_COMPACTION);
    REQUIRE(fl_catalog_doc_put(f.cat, t.arn, kind, "{\"status\":\"enabled\",\"settings\":{\"icebergCompaction\":"
                                                   "{\"targetFileSizeMB\":512,\"strategy\":\"sort\"}}}") == FL_OK);
    for (int k = 0; k < 3; k++) REQUIRE(maint_fix_append(&ops, k * 10, 10) > 0);
    t = reload(&f, "st");
    fl_maint_run_t r;
    CHECK_EQ(fl_maint_run_job(m, &t, FL_MAINT_JOB_COMPACTION, now, &r), FL_OK);
    CHECK_STR(r.status, "Successful");
    CHECK_EQ(r.files_in, 6);
    CHECK_STR(r.message, "strategy sort needs a sort order on the table: bin-packed");

    /* a sort order (id desc), auto */
    json_t *u = json_loads("[{\"action\":\"add-sort-order\",\"sort-order\":{\"order-id\":1,\"fields\":[{\"source-id\":1,"
                           "\"transform\":\"identity\",\"direction\":\"desc\",\"null-order\":\"nulls-last\"}]}},"
                           "{\"action\":\"set-default-sort-order\",\"sort-order-id\":-1}]", 0, NULL), *md = NULL;
    int st = 0;
    char err[256] = "";
    ops.commit(ops.ctx, NULL, u, &md, &st, err, sizeof err);
    json_decref(u);
    json_decref(md);
    REQUIRE(st == 200);
    REQUIRE(fl_catalog_doc_delete(f.cat, t.arn, kind) == FL_OK); /* the default: auto */
    for (int k = 3; k < 6; k++) REQUIRE(maint_fix_append(&ops, k * 10, 10) > 0);
    t = reload(&f, "st");
    CHECK_EQ(fl_maint_run_job(m, &t, FL_MAINT_JOB_COMPACTION, now + 1000, &r), FL_OK);
    CHECK_STR(r.status, "Successful");
    CHECK_STR(r.message, "");
    CHECK_EQ(r.files_in, 8);
    json_t *cur = NULL;
    char *loc = NULL;
    REQUIRE(ops.load(ops.ctx, &cur, &loc, err, sizeof err) == FL_OK);
    fl_scan_plan_t plan;
    REQUIRE(fl_scan_plan(&ops, cur, -1, &plan, err, sizeof err) == FL_OK);
    CHECK_EQ(plan.n_files, 2);
    for (size_t i = 0; i < plan.n_files; i++) {
        CHECK(plan.files[i].has_sort_order_id);
        CHECK_EQ(plan.files[i].sort_order_id, 1);
    }
    fl_scan_plan_free(&plan);
    json_decref(cur);
    free(loc);
    fl_maint_free(m);
    maint_fix_close(&f);
}

FL_TEST(maint_unreferenced_in_process)
{
    maint_fix_t f;
    REQUIRE(maint_fix_open(&f) == 0);
    fl_table_t t;
    REQUIRE(maint_fix_table(&f, "t", &t) == 0);
    fl_maint_ops_ctx_t ctx;
    fl_table_ops_t ops;
    REQUIRE(fl_maint_table_ops(&ctx, f.svc, &t, &ops) == FL_OK);
    fl_maint_cfg_t cfg = { .svc = f.svc, .min_small_files = 5, .owner = "test-node" };
    fl_maint_t *m = fl_maint_new(&cfg);
    for (int k = 0; k < 2; k++) REQUIRE(maint_fix_append(&ops, k * 10, 10) > 0);
    t = reload(&f, "t");
    char orphan[FL_LOC_MAX + 64];
    snprintf(orphan, sizeof orphan, "%s/data/orphan.parquet", t.warehouse);
    REQUIRE(ops.put(ops.ctx, orphan, "left by a killed writer", 23) == FL_OK);
    int64_t now = fl_now_ms(), days4 = now + 4LL * 24 * 3600 * 1000;
    CHECK(fl_maint_pick(m, &t, now) & FL_MAINT_JOB_UNREFERENCED);
    fl_maint_run_t r;
    REQUIRE(fl_maint_run_job(m, &t, FL_MAINT_JOB_UNREFERENCED, days4, &r) == FL_OK);
    CHECK_STR(r.status, "Successful");
    fl_buf_t b;
    fl_buf_init(&b, 0);
    CHECK_EQ(ops.get(ops.ctx, orphan, &b), FL_ERR_NOT_FOUND);
    fl_buf_free(&b);
    int hidden = 0;
    char prefix[FL_LOC_MAX + 2];
    snprintf(prefix, sizeof prefix, "%s/", t.warehouse);
    REQUIRE(ops.list(ops.ctx, prefix, count_noncurrent, &hidden) == FL_OK);
    CHECK_EQ(hidden, 1);
    /* the table still reads: every file of its snapshot is there */
    json_t *md = NULL;
    char *loc = NULL, err[256];
    REQUIRE(ops.load(ops.ctx, &md, &loc, err, sizeof err) == FL_OK);
    fl_scan_plan_t plan;
    REQUIRE(fl_scan_plan(&ops, md, -1, &plan, err, sizeof err) == FL_OK);
    CHECK_EQ(plan.n_files, 2 * 2);
    for (size_t i = 0; i < plan.n_files; i++) {
        fl_buf_init(&b, 0);
        CHECK_EQ(ops.get(ops.ctx, plan.files[i].file_path, &b), FL_OK);
        fl_buf_free(&b);
    }
    fl_scan_plan_free(&plan);
    json_decref(md);
    free(loc);
    /* ran less than a day ago: not picked again; a day later it is */
    t = reload(&f, "t");
    CHECK_EQ(fl_maint_pick(m, &t, fl_now_ms() + 3600 * 1000) & FL_MAINT_JOB_UNREFERENCED, 0);
    CHECK(fl_maint_pick(m, &t, fl_now_ms() + 25LL * 3600 * 1000) & FL_MAINT_JOB_UNREFERENCED);
    fl_maint_free(m);
    maint_fix_close(&f);
}
