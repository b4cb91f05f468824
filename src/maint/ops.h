/* fl_table_ops_t (iceberg/append.h) over the table-bucket service in-process:
 * how maintenance inside `floe serve` reaches a table without HTTP round trips
 * to itself.
 *
 *   load    the table's row (for its current pointer), then fl_tablesvc_load;
 *           the metadata handed out is a private copy (the cached JSON is shared)
 *   commit  fl_tablesvc_commit with the context's principal ("maintenance"),
 *           mapped to the append API's status convention: 200 landed, 409
 *           conflict (retry), 404 table gone, 400 malformed or failed before
 *           anything changed, 500 outcome unknown (the swap failed); a commit
 *           that would drop a branch or tag it does not remove by name (a
 *           remove-snapshots of its snapshot) is a 409 (keep_refs): expiry
 *           re-plans instead of dropping a tag made after it planned
 *   hold    the service's lock of this table (fl_tablesvc_lock): while held,
 *           this context's commits run under it and every other commit to the
 *           table waits; other tables are not held up
 *   put, put_file, get, del, list
 *           floe's own object store (fl_store_t), for s3:// locations in the
 *           table's warehouse bucket only: anything else is FL_ERR_INVALID, so a
 *           job can never read, write or delete outside its table.
 *
 * Cancellation: when *cancel (optional) becomes true, every later write and
 * commit fails without side effects (commit answers 400 "shutting down"), so a
 * job stops at its next step; the files it wrote and did not commit are left
 * for unreferenced-file removal. Reads and deletes still work (a job that has
 * committed finishes deleting what it just made unreachable).
 *
 * Threads: one job at a time per context (as every fl_table_ops_t); the
 * service and store are thread-safe. The context borrows svc and cancel. */
#ifndef FL_MAINT_OPS_H
#define FL_MAINT_OPS_H
#include <stdatomic.h>
#include <stdbool.h>
#include "catalog/tablesvc.h"
#include "iceberg/append.h"

typedef struct fl_maint_ops_ctx {
    fl_tablesvc_t *svc;
    char bucket[64];                  /* table bucket */
    char ns[FL_NAME_MAX], name[FL_NAME_MAX];
    char id[40];                      /* the table's id: a renamed-over name is "not found" */
    char warehouse[64];               /* the warehouse bucket (from the row) */
    const char *principal;            /* recorded as modified_by; NULL = "maintenance" */
    const atomic_bool *cancel;        /* optional */
    bool held;                        /* hold(on) took the table's lock: commits run under it */
    int64_t commits;                  /* commits that landed (out, for the run record) */
    int64_t objects_deleted;          /* successful deletes (out) */
} fl_maint_ops_ctx_t;

/* Fills ctx from the table row t (copied) and ops with callbacks over ctx.
 * FL_ERR_INVALID when t's warehouse is not an s3:// bucket of floe's store. */
fl_err_t fl_maint_table_ops(fl_maint_ops_ctx_t *ctx, fl_tablesvc_t *svc, const fl_table_t *t,
                            fl_table_ops_t *ops);

#endif
