/* See maint_fixture.h. */
#include "maint_fixture.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/time.h"
#include "format/column.h"
#include "iceberg/manifest.h"
#include "iceberg/metadata.h"
#include "iceberg/scan.h"
#include "test.h"

int64_t fl_iceberg_now_ms_for_tests(void) { return fl_now_ms(); }

int maint_fix_open(maint_fix_t *f)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s", fl_test_tmpdir());
    char p[600];
    snprintf(p, sizeof p, "%s/objects", f->dir);
    f->store = fl_store_open(p);
    snprintf(p, sizeof p, "%s/catalog.db", f->dir);
    f->cat = fl_catalog_open(p);
    if (!f->store || !f->cat) return -1;
    f->cfg = (fl_tablesvc_cfg_t){ .cat = f->cat, .store = f->store,
                                  .scope = { .region = "us-east-1", .account = "000000000000" } };
    f->svc = fl_tablesvc_open(&f->cfg);
    fl_tbucket_t b = { .name = "lake" };
    fl_arn_bucket(&f->cfg.scope, "lake", b.arn);
    if (fl_catalog_bucket_create(f->cat, &b)) return -1;
    fl_namespace_t ns = { .bucket = "lake", .name = "ns" };
    fl_err_t e = fl_catalog_ns_create(f->cat, &ns);
    fl_namespace_free(&ns);
    return e ? -1 : 0;
}

void maint_fix_close(maint_fix_t *f)
{
    fl_tablesvc_close(f->svc);
    if (f->cat) fl_catalog_close(f->cat);
    if (f->store) fl_store_close(f->store);
}

int maint_fix_table(maint_fix_t *f, const char *name, fl_table_t *t)
{
    char req[1024];
    snprintf(req, sizeof req,
             "{\"name\":\"%s\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
             "{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":true},"
             "{\"id\":2,\"name\":\"cat\",\"type\":\"string\",\"required\":false}]},"
             "\"partition-spec\":{\"spec-id\":0,\"fields\":[{\"source-id\":2,\"field-id\":1000,"
             "\"name\":\"cat\",\"transform\":\"identity\"}]},\"properties\":{}}", name);
    json_t *create = json_loads(req, 0, NULL);
    int st = 0;
    char emsg[256];
    json_t *meta = create ? fl_iceberg_new_metadata(create, "s3://pending", &st, emsg, sizeof emsg) : NULL;
    json_decref(create);
    if (!meta) return -1;
    const char *why = NULL;
    fl_err_t e = fl_tablesvc_create(f->svc, "lake", "ns", name, "tester", meta, t, &why);
    json_decref(meta);
    return e ? -1 : 0;
}

int64_t maint_fix_append(const fl_table_ops_t *ops, int64_t first, int n)
{
    char err[256];
    fl_appender_t *a = NULL;
    if (fl_append_open(&a, ops, NULL, err, sizeof err)) {
        fprintf(stderr, "append open: %s\n", err);
        return -1;
    }
    fl_vec_t b;
    fl_vec_init(&b, fl_append_schema(a));
    for (int64_t i = first; i < first + n; i++) {
        fl_vec_append_struct(&b);
        fl_vec_append_i64(&b.children[0], i);
        fl_vec_append_bytes(&b.children[1], i % 2 ? "a" : "b", 1);
    }
    int64_t sid = -1;
    if (fl_append_write(a, &b, err, sizeof err) || fl_append_commit(a, NULL, 0, &sid, err, sizeof err))
        fprintf(stderr, "append: %s\n", err);
    fl_vec_free(&b);
    fl_append_free(a);
    return sid;
}

int maint_fix_scan(const fl_table_ops_t *ops, int64_t *rows, int64_t *files)
{
    json_t *md = NULL;
    char *loc = NULL, err[256];
    if (ops->load(ops->ctx, &md, &loc, err, sizeof err)) return -1;
    free(loc);
    fl_scan_plan_t plan;
    fl_err_t e = fl_scan_plan(ops, md, -1, &plan, err, sizeof err);
    json_decref(md);
    if (e) return -1;
    *rows = 0;
    *files = (int64_t)plan.n_files;
    for (size_t i = 0; i < plan.n_files; i++) *rows += plan.files[i].record_count;
    fl_scan_plan_free(&plan);
    return 0;
}
