/* maint/ops.h: the in-process table ops over the table service and floe's
 * object store. Appends, compaction and snapshot expiry run through them on a
 * real catalog and store (no HTTP): rows survive, files are where the store
 * says, expired files are gone, locations outside the table are refused, and
 * a cancelled context commits nothing. */
#include "test.h"
#include <jansson.h>
#include <stdlib.h>
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
