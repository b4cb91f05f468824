/* Unreferenced-file removal, two-phase as S3 Tables' icebergUnreferencedFileRemoval (bucket
 * level: unreferencedDays 3, nonCurrentDays 10), over the catalog/storage callbacks of the append
 * API (fl_table_ops_t, iceberg/append.h). `floe maintenance run --job unreferenced` drives it
 * through a REST catalog; the scheduler inside `floe serve` calls it in-process.
 *
 * One run, as of opts->as_of_ms:
 *  1. Lists every object under <location>/ (ops->list) — all of it before anything is moved.
 *  2. The referenced set: the current metadata.json and every metadata-log file, version-hint
 *     files, statistics and partition-statistics files, and for every snapshot still in the
 *     metadata its manifest list, its manifests and the live entries (data, delete and
 *     deletion-vector files) of each. A manifest list or manifest that cannot be read fails the
 *     run before anything is moved or deleted. The metadata is loaded again after the listing;
 *     if a commit landed meanwhile its new snapshots are walked too.
 *  3. Objects outside the referenced set whose listing time is older than unreferencedDays
 *     become noncurrent: moved (ops->copy, then ops->del) to
 *         <location>/.noncurrent/<epoch-ms>/<path relative to location>
 *     where epoch-ms is as_of (the deletion clock starts there; it is read back from the key).
 *     Objects younger than that (uploads in flight, files of commits being written), objects
 *     whose listing time is unknown (-1) and objects dated after as_of are never touched.
 *  4. Noncurrent objects: one whose original path is referenced again (a late commit) is moved
 *     back; one noncurrent for longer than nonCurrentDays is deleted; the rest stay. A key under
 *     the prefix that does not parse is left alone.
 * Engines never see noncurrent objects (no metadata names them) and the referenced-set walk
 * never looks under .noncurrent/. fl_orphans_restore moves noncurrent objects back.
 *
 * Needs ops->list and ops->copy: without them the job fails cleanly (nothing done).
 * gc.enabled=false disables it (S3 Tables' message). A failed move or delete is counted and
 * reported (the job still ends Successful; the next run retries).
 *
 * Threads: one call at a time per ops; no globals. Memory: the referenced set and the listing
 * are held in memory (one entry per object). */
#ifndef FL_ICEBERG_ORPHANS_H
#define FL_ICEBERG_ORPHANS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/err.h"
#include "iceberg/append.h"
#include "iceberg/expire.h"

#define FL_ORPHANS_DEFAULT_UNREFERENCED_DAYS 3
#define FL_ORPHANS_DEFAULT_NONCURRENT_DAYS 10
#define FL_ORPHANS_DIR ".noncurrent"      /* under the table location */
#define FL_ORPHANS_DAY_MS ((int64_t)24 * 3600 * 1000)

typedef struct fl_orphans_opts {
    int64_t as_of_ms;                 /* ages are measured from here; 0 = now */
    int32_t unreferenced_days;        /* 0 = 3 */
    int32_t noncurrent_days;          /* 0 = 10 */
    bool dry_run;                     /* list, walk and count; move and delete nothing */
    /* Optional progress lines ("listed ...", "referenced ...", "marking 10 ..."). */
    void (*progress)(void *arg, const char *line);
    void *progress_arg;
} fl_orphans_opts_t;

typedef struct fl_orphans_result {
    fl_expire_status_t status;        /* as GetTableMaintenanceJobStatus reports it */
    char message[512];                /* failure or disabled message ("" when successful) */
    int64_t listed, listed_bytes;     /* objects under the location (noncurrent ones included) */
    int64_t referenced;               /* paths in the referenced set */
    int64_t young, young_bytes;       /* unreferenced but younger than unreferencedDays: left */
    int64_t in_doubt;                 /* unreferenced with no usable time: left */
    int64_t marked, marked_bytes;     /* moved to noncurrent (dry run: would be) */
    int64_t noncurrent, noncurrent_bytes; /* noncurrent and kept (not yet nonCurrentDays) */
    int64_t deleted, deleted_bytes;   /* noncurrent objects deleted (dry run: would be) */
    int64_t restored, restored_bytes; /* noncurrent objects moved back */
    int64_t errors;                   /* moves and deletes that failed (reported, not fatal) */
    char error[256];                  /* the first one */
    int64_t duration_ms;
} fl_orphans_result_t;

/* Runs the job on the table behind ops. Fills *res in every case. FL_OK when the job ended
 * Successful or Disabled, else the error (res->status FAILED, res->message). */
fl_err_t fl_orphans_run(const fl_table_ops_t *ops, const fl_orphans_opts_t *opts, fl_orphans_result_t *res);

/* Moves noncurrent objects back to their original paths: every one (n_keys 0), or those whose
 * original location, path relative to the table location, or noncurrent location is one of
 * keys. When an object was marked more than once the newest copy comes back; an original
 * that exists again is not overwritten (an error). A key matching nothing is an error. Counts
 * go to res->restored / restored_bytes / errors. FL_OK when every key was restored. Needs
 * ops->list and ops->copy. */
fl_err_t fl_orphans_restore(const fl_table_ops_t *ops, const char *const *keys, size_t n_keys, bool dry_run,
                            fl_orphans_result_t *res);

/* ---- pure pieces, exposed for tests ---- */

/* Appends <location>/.noncurrent/<ms>/<rel> to out (location without its trailing '/'). */
void fl_orphans_noncurrent_path(const char *location, const char *rel, int64_t ms, fl_buf_t *out);
/* If uri is <location>/.noncurrent/<ms>/<rel>: *ms and *rel (pointing into uri), true. */
bool fl_orphans_parse_noncurrent(const char *location, const char *uri, int64_t *ms, const char **rel);

#endif
