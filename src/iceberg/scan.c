/* Scan planning over manifest lists and manifests (see scan.h). */
#include "iceberg/scan.h"
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/mem.h"
#include "iceberg/metadata.h"


fl_err_t fl_scan_plan(const fl_table_ops_t *ops, json_t *md, int64_t snapshot_id, fl_scan_plan_t *plan,
                      char *err, size_t errlen)
{
    memset(plan, 0, sizeof *plan);
    plan->snapshot_id = -1;
    plan->schema_id = -1;
    if (snapshot_id < 0) {
        json_t *r = json_object_get(json_object_get(md, "refs"), "main");
        snapshot_id = r ? json_integer_value(json_object_get(r, "snapshot-id")) : fl_iceberg_current_snapshot_id(md);
        if (snapshot_id < 0) return FL_OK;
    }
    json_t *snap = NULL, *s;
    size_t i;
    json_array_foreach(json_object_get(md, "snapshots"), i, s)
        if (json_integer_value(json_object_get(s, "snapshot-id")) == snapshot_id) snap = s;
    if (!snap) return fl_err_fmt(err, errlen, FL_ERR_NOT_FOUND, "snapshot %" PRId64 " does not exist", snapshot_id);
    plan->snapshot_id = snapshot_id;
    json_t *sid = json_object_get(snap, "schema-id");
    if (json_is_integer(sid)) plan->schema_id = (int32_t)json_integer_value(sid);
    const char *list = json_string_value(json_object_get(snap, "manifest-list"));
    if (!list) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "snapshot %" PRId64 " has no manifest-list", snapshot_id);

    fl_buf_t buf;
    fl_buf_init(&buf, 0);
    fl_manifest_file_t *mfs = NULL;
    size_t n_mf = 0, cap = 0;
    fl_err_t e = ops->get(ops->ctx, list, &buf);
    if (e) { fl_err_fmt(err, errlen, e, "reading %s failed: %s", list, fl_err_str(e)); goto out; }
    if ((e = fl_manifest_list_read(fl_slice(buf.ptr, buf.len), &mfs, &n_mf, err, errlen))) goto out;
    for (size_t m = 0; m < n_mf; m++) {
        fl_buf_reset(&buf);
        if ((e = ops->get(ops->ctx, mfs[m].manifest_path, &buf))) {
            fl_err_fmt(err, errlen, e, "reading %s failed: %s", mfs[m].manifest_path, fl_err_str(e));
            goto out;
        }
        fl_manifest_entry_t *ents = NULL;
        size_t n_ent = 0;
        if ((e = fl_manifest_read(fl_slice(buf.ptr, buf.len), &mfs[m], &ents, &n_ent, err, errlen))) goto out;
        for (size_t k = 0; k < n_ent; k++) {
            fl_manifest_entry_t *en = &ents[k];
            if (en->status == 2) continue;
            if (en->file.content != 0 || mfs[m].content != 0) { plan->n_delete_files++; continue; }
            if (plan->n_files == cap) {
                cap = cap ? cap * 2 : 64;
                plan->files = fl_realloc(plan->files, cap * sizeof *plan->files);
            }
            plan->records += en->file.record_count;
            plan->files[plan->n_files++] = en->file;
            memset(&en->file, 0, sizeof en->file);
        }
        fl_manifest_entries_free(ents, n_ent);
    }
out:
    fl_manifest_files_free(mfs, n_mf);
    fl_buf_free(&buf);
    if (e) fl_scan_plan_free(plan);
    return e;
}

void fl_scan_plan_free(fl_scan_plan_t *plan)
{
    for (size_t i = 0; i < plan->n_files; i++) fl_data_file_free(&plan->files[i]);
    free(plan->files);
    memset(plan, 0, sizeof *plan);
}
