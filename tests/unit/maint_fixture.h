/* A table bucket on a real catalog and object store in a test directory, for
 * the maintenance tests (test_maint_*.c): bucket "lake", namespace "ns",
 * tables of (id long, cat string) partitioned by identity(cat). */
#ifndef FL_TEST_MAINT_FIXTURE_H
#define FL_TEST_MAINT_FIXTURE_H
#include "catalog/tablesvc.h"
#include "iceberg/append.h"

typedef struct maint_fix {
    fl_store_t *store;
    fl_catalog_t *cat;
    fl_tablesvc_t *svc;
    fl_tablesvc_cfg_t cfg;
    char dir[512];
} maint_fix_t;

int maint_fix_open(maint_fix_t *f);
void maint_fix_close(maint_fix_t *f);
/* Creates ns.name (empty, v2); *t is its row. */
int maint_fix_table(maint_fix_t *f, const char *name, fl_table_t *t);
/* One append commit of rows first..first+n (cat a/b alternating); the snapshot id or -1. */
int64_t maint_fix_append(const fl_table_ops_t *ops, int64_t first, int n);
/* Rows (record counts) and live data files of main. */
int maint_fix_scan(const fl_table_ops_t *ops, int64_t *rows, int64_t *files);
/* Wall clock now (ms). */
int64_t fl_iceberg_now_ms_for_tests(void);
#endif
