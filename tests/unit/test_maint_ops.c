/* maint/ops.h: the in-process table ops over the table service and floe's
 * object store. Appends, compaction and snapshot expiry run through them on a
 * real catalog and store (no HTTP): rows survive, files are where the store
 * says, expired files are gone, locations outside the table are refused, and
 * a cancelled context commits nothing. */
#include "test.h"
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/mem.h"
#include "catalog/tablesvc.h"
#include "format/column.h"
#include "iceberg/append.h"
#include "iceberg/expire.h"
#include "iceberg/metadata.h"
#include "iceberg/rewrite.h"
#include "maint/ops.h"
#include "maint_fixture.h"

static int64_t count_objects(fl_store_t *store, const char *wb, const char *prefix)
{
    fl_list_res_t r = { 0 };
    if (fl_store_list(store, wb, prefix, NULL, NULL, 1000, &r)) return -1;
    int64_t n = (int64_t)r.nents;
    fl_list_res_free(&r);
    return n;
}

FL_TEST(maint_ops_compaction_and_expiry_in_process)
{
    maint_fix_t f;
    REQUIRE(maint_fix_open(&f) == 0);
    fl_table_t t;
    REQUIRE(maint_fix_table(&f, "t", &t) == 0);
    fl_maint_ops_ctx_t ctx;
    fl_table_ops_t ops;
    REQUIRE(fl_maint_table_ops(&ctx, f.svc, &t, &ops) == FL_OK);
    for (int k = 0; k < 6; k++) REQUIRE(maint_fix_append(&ops, k * 20, 20) > 0);
    CHECK_EQ(ctx.commits, 6);
    const char *wb = t.warehouse + 5;
    CHECK_EQ(count_objects(f.store, wb, "data/"), 12); /* two partitions per commit */

    /* compaction: one file per partition, a replace snapshot, rows unchanged */
    char err[512] = "";
    fl_rewrite_plan_t plan;
    REQUIRE(fl_rewrite_plan(&ops, NULL, &plan, err, sizeof err) == FL_OK);
    CHECK_EQ(plan.n_groups, 2);
    fl_rewrite_plan_free(&plan);
    fl_rewrite_result_t r;
    REQUIRE(fl_rewrite_run(&ops, NULL, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.files_in, 12);
    CHECK_EQ(r.files_out, 2);
    CHECK_EQ(r.records_in, 120);
    CHECK_EQ(r.records_out, 120);
    int64_t rows = 0, files = 0;
    REQUIRE(maint_fix_scan(&ops, &rows, &files) == 0);
    CHECK_EQ(rows, 120);
    CHECK_EQ(files, 2);
    fl_table_t now;
    REQUIRE(fl_catalog_table_get(f.cat, "lake", "ns", "t", &now) == FL_OK);
    CHECK_STR(now.modified_by, "maintenance");

    /* expiry as of far ahead keeping 1: every snapshot but the head goes, and
     * the 12 replaced files with their manifests */
    fl_expire_opts_t eo = { .as_of_ms = fl_iceberg_now_ms_for_tests() + 1000LL * 3600 * 1000 };
    fl_expire_result_t er;
    REQUIRE(fl_expire_snapshots(&ops, &eo, &er) == FL_OK);
    CHECK_EQ(er.status, FL_EXPIRE_SUCCESSFUL);
    CHECK_EQ(er.snapshots_removed, 6);
    CHECK_EQ(er.files[FL_EXPIRE_DATA], 12);
    CHECK_EQ(er.delete_errors, 0);
    fl_expire_result_free(&er);
    CHECK_EQ(count_objects(f.store, wb, "data/"), 2);
    REQUIRE(maint_fix_scan(&ops, &rows, &files) == 0);
    CHECK_EQ(rows, 120);

    /* the ops never reach outside the table's warehouse */
    fl_buf_t b;
    fl_buf_init(&b, 0);
    CHECK_EQ(ops.get(ops.ctx, "s3://other--table-s3/data/x.parquet", &b), FL_ERR_INVALID);
    CHECK_EQ(ops.put(ops.ctx, "file:///tmp/x", "x", 1), FL_ERR_INVALID);
    CHECK_EQ(ops.del(ops.ctx, "s3://other/x"), FL_ERR_INVALID);
    fl_buf_free(&b);

    /* cancelled: writes fail and a commit answers a definite failure */
    atomic_bool stop = true;
    ctx.cancel = &stop;
    char loc[2200];
    snprintf(loc, sizeof loc, "%s/data/late.parquet", t.warehouse);
    CHECK(ops.put(ops.ctx, loc, "x", 1) != FL_OK);
    json_t *upd = json_loads("[{\"action\":\"set-properties\",\"updates\":{\"k\":\"v\"}}]", 0, NULL), *md = NULL;
    int st = 0;
    CHECK_EQ(ops.commit(ops.ctx, NULL, upd, &md, &st, err, sizeof err), FL_OK);
    CHECK_EQ(st, 400);
    CHECK(md == NULL);
    json_decref(upd);
    maint_fix_close(&f);
}

/* ---- hold: per table ---- */

typedef struct hold_probe {
    maint_fix_t *f;
    const fl_table_ops_t *ops;    /* append through these (NULL: lock/unlock the names) */
    atomic_int done;
    int64_t sid;
} hold_probe_t;

#define HOLD_PROBE_NAMES 256

static void *probe_main(void *arg)
{
    hold_probe_t *p = arg;
    if (p->ops) {
        p->sid = maint_fix_append(p->ops, 1000, 5);
        atomic_store(&p->done, 1);
        return NULL;
    }
    /* many names: more than the locks have shards, so some hash like the held table's */
    char name[32];
    for (int i = 0; i < HOLD_PROBE_NAMES; i++) {
        snprintf(name, sizeof name, "other%d", i);
        fl_tablesvc_lock(p->f->svc, "lake", "ns", name);
        fl_tablesvc_unlock(p->f->svc, "lake", "ns", name);
        atomic_fetch_add(&p->done, 1);
    }
    return NULL;
}

/* Waits up to ms for *done to reach want. */
static bool wait_done(atomic_int *done, int want, int ms)
{
    for (int i = 0; i < ms / 10 && atomic_load(done) < want; i++) usleep(10000);
    return atomic_load(done) >= want;
}

/* Compaction's hold (ops.hold, taken for its last attempts, across their I/O)
 * holds its own table only: the locks and commits of other tables go on (before,
 * it took one of 64 shared lock stripes, and a commit to any table hashing to it
 * waited for the whole attempt), while a commit to the held table waits for it. */
FL_TEST(maint_ops_hold_is_per_table)
{
    maint_fix_t f;
    REQUIRE(maint_fix_open(&f) == 0);
    fl_table_t ta, tb;
    REQUIRE(maint_fix_table(&f, "held", &ta) == 0);
    REQUIRE(maint_fix_table(&f, "busy", &tb) == 0);
    fl_maint_ops_ctx_t ca, ca2, cb;
    fl_table_ops_t oa, oa2, ob;
    REQUIRE(fl_maint_table_ops(&ca, f.svc, &ta, &oa) == FL_OK);
    REQUIRE(fl_maint_table_ops(&ca2, f.svc, &ta, &oa2) == FL_OK);
    REQUIRE(fl_maint_table_ops(&cb, f.svc, &tb, &ob) == FL_OK);
    REQUIRE(maint_fix_append(&oa, 0, 5) > 0);

    oa.hold(oa.ctx, true);
    CHECK(ca.held);
    /* other tables: every name locks at once, and a commit to another table lands */
    hold_probe_t names = { .f = &f }, other = { .f = &f, .ops = &ob }, same = { .f = &f, .ops = &oa2 };
    pthread_t tn, to, ts;
    REQUIRE(pthread_create(&tn, NULL, probe_main, &names) == 0);
    REQUIRE(pthread_create(&to, NULL, probe_main, &other) == 0);
    REQUIRE(pthread_create(&ts, NULL, probe_main, &same) == 0);
    CHECK(wait_done(&names.done, HOLD_PROBE_NAMES, 10000));
    CHECK(wait_done(&other.done, 1, 10000));
    /* the held table: its holder commits, anyone else's commit waits */
    REQUIRE(maint_fix_append(&oa, 100, 5) > 0);
    usleep(200000);
    CHECK_EQ(atomic_load(&same.done), 0);
    oa.hold(oa.ctx, false);
    CHECK(!ca.held);
    pthread_join(tn, NULL);
    pthread_join(to, NULL);
    pthread_join(ts, NULL);
    CHECK(other.sid > 0);
    CHECK(same.sid > 0);
    int64_t rows = 0, files = 0;
    REQUIRE(maint_fix_scan(&oa, &rows, &files) == 0);
    CHECK_EQ(rows, 15);
    REQUIRE(maint_fix_scan(&ob, &rows, &files) == 0);
    CHECK_EQ(rows, 5);
    CHECK_EQ(ca.commits + ca2.commits, 3);
    maint_fix_close(&f);
}

/* ---- expiry against a tag made after it planned ---- */

typedef struct tag_race {
    const fl_table_ops_t *inner;
    int commits;
    int64_t tagged;               /* the snapshot the racing writer tagged */
} tag_race_t;

static tag_race_t *the_race; /* the table ops' own ctx stays theirs */

/* The table's commit, but before the first one another writer tags the first
 * snapshot that commit removes. */
static fl_err_t tag_race_commit(void *ctx, json_t *requirements, json_t *updates, json_t **metadata,
                                int *http_status, char *err, size_t errlen)
{
    tag_race_t *r = the_race;
    if (r->commits++ == 0) {
        json_t *u;
        size_t i;
        json_array_foreach(updates, i, u)
            if (!strcmp(json_string_value(json_object_get(u, "action")), "remove-snapshots"))
                r->tagged = json_integer_value(json_array_get(json_object_get(u, "snapshot-ids"), 0));
        json_t *tag = json_pack("[{s:s,s:s,s:s,s:I}]", "action", "set-snapshot-ref", "ref-name", "late",
                                "type", "tag", "snapshot-id", (json_int_t)r->tagged);
        json_t *md = NULL;
        int st = 0;
        fl_err_t e = r->inner->commit(ctx, NULL, tag, &md, &st, err, errlen);
        json_decref(tag);
        json_decref(md);
        if (e || st != 200) return FL_ERR_INTERNAL;
    }
    return r->inner->commit(ctx, requirements, updates, metadata, http_status, err, errlen);
}

/* A tag made on a snapshot between expiry's plan and its commit: the commit fails (the
 * catalog refuses to drop a ref the commit does not name) and expiry re-plans, keeping
 * the tag and its snapshot (before, the tag went with the snapshot). */
FL_TEST(maint_ops_expiry_keeps_a_tag_made_after_planning)
{
    maint_fix_t f;
    REQUIRE(maint_fix_open(&f) == 0);
    fl_table_t t;
    REQUIRE(maint_fix_table(&f, "tagged", &t) == 0);
    fl_maint_ops_ctx_t ctx;
    fl_table_ops_t ops;
    REQUIRE(fl_maint_table_ops(&ctx, f.svc, &t, &ops) == FL_OK);
    for (int k = 0; k < 4; k++) REQUIRE(maint_fix_append(&ops, k * 10, 10) > 0);

    tag_race_t race = { .inner = &ops };
    fl_table_ops_t racing = ops;
    the_race = &race;
    racing.commit = tag_race_commit;
    fl_expire_opts_t eo = { .as_of_ms = fl_iceberg_now_ms_for_tests() + 1000LL * 3600 * 1000 };
    fl_expire_result_t er;
    REQUIRE(fl_expire_snapshots(&racing, &eo, &er) == FL_OK);
    CHECK_EQ(er.status, FL_EXPIRE_SUCCESSFUL);
    CHECK_EQ(er.attempts, 2);
    CHECK_EQ(er.snapshots_removed, 2);    /* the tagged one stays: 4 - head - tagged */
    for (size_t i = 0; i < er.n_removed; i++) CHECK(er.removed[i] != race.tagged);
    fl_expire_result_free(&er);

    json_t *md = NULL;
    char *loc = NULL;
    char err[256];
    REQUIRE(ops.load(ops.ctx, &md, &loc, err, sizeof err) == FL_OK);
    json_t *late = json_object_get(json_object_get(md, "refs"), "late");
    REQUIRE(late);
    CHECK_EQ(json_integer_value(json_object_get(late, "snapshot-id")), race.tagged);
    bool kept = false;
    json_t *s;
    size_t i;
    json_array_foreach(json_object_get(md, "snapshots"), i, s)
        if (json_integer_value(json_object_get(s, "snapshot-id")) == race.tagged) kept = true;
    CHECK(kept);
    CHECK_EQ(json_array_size(json_object_get(md, "snapshots")), 2);
    json_decref(md);
    free(loc);
    maint_fix_close(&f);
}
