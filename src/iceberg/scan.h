/* Scan planning: the live data files of a snapshot, read from its manifest
 * list and manifests through the table ops' storage callbacks. Pure planning;
 * reading the files is the caller's (format/parquet.h). One thread per call. */
#ifndef FL_ICEBERG_SCAN_H
#define FL_ICEBERG_SCAN_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include "base/err.h"
#include "iceberg/append.h"
#include "iceberg/manifest.h"

typedef struct fl_scan_plan {
    int64_t snapshot_id;        /* -1: the table has no snapshot (empty plan) */
    int32_t schema_id;          /* the snapshot's schema-id, or -1 if it names none */
    fl_data_file_t *files;      /* live data files (ADDED or EXISTING entries, content 0) */
    size_t n_files;
    size_t n_delete_files;      /* live delete files (floe does not apply them yet) */
    int64_t records;            /* sum of the files' record counts */
} fl_scan_plan_t;

/* Plan a scan of snapshot_id (< 0: main's current snapshot) of the table
 * with metadata md. FL_ERR_NOT_FOUND when the snapshot does not exist. */
fl_err_t fl_scan_plan(const fl_table_ops_t *ops, json_t *md, int64_t snapshot_id, fl_scan_plan_t *plan,
                      char *err, size_t errlen);
void fl_scan_plan_free(fl_scan_plan_t *plan);

#endif
