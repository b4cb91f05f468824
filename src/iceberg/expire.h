/* Snapshot expiry: Iceberg's ExpireSnapshots under S3 Tables' snapshot-management rules, over
 * the same catalog/storage callbacks as the append API (fl_table_ops_t, iceberg/append.h), so
 * `floe maintenance run` drives it through a REST catalog today and the maintenance scheduler
 * inside `floe serve` calls it in-process later.
 *
 * Plan (pure, fl_expire_plan): as of opts->as_of_ms, per Iceberg's retention policy (format
 * spec "Snapshot Retention Policy", Java RemoveSnapshots) with S3 Tables' job settings:
 *  - refs other than main older than their max-ref-age-ms (else the table's
 *    history.expire.max-ref-age-ms; default forever) are removed; every other ref's snapshot
 *    is kept;
 *  - each kept branch keeps its ancestors while they are younger than the max age OR among
 *    its first min-snapshots-to-keep (a snapshot expires only when BOTH criteria are violated);
 *    the branch's own min-snapshots-to-keep / max-snapshot-age-ms (else the table's
 *    history.expire.*) apply where they retain more than the job's settings (the job never
 *    expires what the table's or a ref's own retention keeps);
 *  - snapshots on no kept branch and no kept tag are kept while younger than the max age;
 *  - gc.enabled=false disables the job (S3 Tables' message).
 * Commit: remove-snapshot-ref for removed refs + remove-snapshots, with assert-table-uuid and
 * assert-ref-snapshot-id for every ref of the planned base, so a racing writer makes the commit
 * 409 and the job re-plans on the fresh metadata (bounded attempts). An unknown outcome (5xx,
 * transport) is resolved by reloading; if it stays unknown nothing is deleted.
 * Files (only after the commit is known to have landed): manifest lists, manifests, data and
 * delete files and statistics / partition-statistics files of the removed snapshots that no
 * retained snapshot reaches (live entries of retained manifests), found by reading the lists
 * and manifests; if a retained list or manifest cannot be read, no manifest or content file is
 * deleted. With write.metadata.delete-after-commit.enabled=true, previous metadata.json files
 * that fell off the metadata-log (write.metadata.previous-versions-max, trimmed by the commit)
 * are deleted too: those the commit dropped, plus, when the storage can list, any older
 * *.metadata.json under <location>/metadata/ whose version precedes the oldest kept entry.
 * A failed delete is counted and reported, never fatal (unreferenced-file removal gets it).
 *
 * Threads: one call at a time per ops; no globals. */
#ifndef FL_ICEBERG_EXPIRE_H
#define FL_ICEBERG_EXPIRE_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/err.h"
#include "iceberg/append.h"

#define FL_EXPIRE_DEFAULT_MIN_SNAPSHOTS 1
#define FL_EXPIRE_DEFAULT_MAX_AGE_MS (120LL * 3600 * 1000)   /* S3 Tables: 120 hours */
#define FL_EXPIRE_DEFAULT_ATTEMPTS 5

/* Job outcome, as GetTableMaintenanceJobStatus reports it. */
typedef enum fl_expire_status {
    FL_EXPIRE_SUCCESSFUL = 0,
    FL_EXPIRE_FAILED,
    FL_EXPIRE_DISABLED,
} fl_expire_status_t;

/* Kinds of files a run deletes (counts and bytes per kind). */
typedef enum fl_expire_kind {
    FL_EXPIRE_DATA = 0,
    FL_EXPIRE_POSITION_DELETES,
    FL_EXPIRE_EQUALITY_DELETES,
    FL_EXPIRE_MANIFESTS,
    FL_EXPIRE_MANIFEST_LISTS,
    FL_EXPIRE_STATISTICS,             /* statistics and partition-statistics files */
    FL_EXPIRE_METADATA,               /* previous metadata.json files */
    FL_EXPIRE_KINDS
} fl_expire_kind_t;

/* Lower-case name of a kind ("data", "position-deletes", ...), for output. */
const char *fl_expire_kind_name(fl_expire_kind_t k);

typedef struct fl_expire_opts {
    int64_t as_of_ms;                 /* ages are measured from here; 0 = now */
    int32_t min_snapshots_to_keep;    /* 0 = 1 (S3 Tables' default) */
    int64_t max_snapshot_age_ms;      /* 0 = 120 h */
    bool dry_run;                     /* plan and count; commit and delete nothing */
    int max_attempts;                 /* commits tried when a writer wins (409); 0 = 5 */
    /* Optional progress lines ("planned ...", "committed ...", "deleting 10/40"). */
    void (*progress)(void *arg, const char *line);
    void *progress_arg;
} fl_expire_opts_t;

/* What to remove from one metadata (fl_expire_plan). */
typedef struct fl_expire_plan {
    bool disabled;                    /* the table forbids the job; message says why */
    char message[256];
    int64_t *expire;                  /* snapshot ids to remove, in metadata order (owned) */
    size_t n_expire;
    char **refs;                      /* refs to remove (owned) */
    size_t n_refs;
    size_t n_snapshots;               /* snapshots in the metadata */
} fl_expire_plan_t;

/* The plan for table metadata md (borrowed). FL_ERR_INVALID + err for malformed metadata or
 * an unparsable retention property. */
fl_err_t fl_expire_plan(json_t *md, const fl_expire_opts_t *opts, fl_expire_plan_t *plan, char *err,
                        size_t errlen);
void fl_expire_plan_free(fl_expire_plan_t *plan);
/* The commit for a plan of md: *requirements and *updates are new references. */
void fl_expire_commit_request(json_t *md, const fl_expire_plan_t *plan, json_t **requirements, json_t **updates);

typedef struct fl_expire_result {
    fl_expire_status_t status;
    char message[512];                /* failure or disabled message ("" when successful) */
    int attempts;                     /* commits sent */
    bool committed;                   /* the metadata commit landed */
    int64_t snapshots_before, snapshots_removed, refs_removed;
    int64_t files[FL_EXPIRE_KINDS];   /* deleted (dry run: would be deleted) */
    int64_t bytes[FL_EXPIRE_KINDS];   /* their sizes, where the metadata records them */
    int64_t delete_errors;            /* deletes that failed (reported, not fatal) */
    char delete_error[256];           /* the first one */
    int64_t *removed;                 /* removed snapshot ids (owned) */
    size_t n_removed;
    int64_t duration_ms;
} fl_expire_result_t;

/* Runs the job on the table behind ops. Fills *res in every case. Returns FL_OK when the job
 * ended Successful or Disabled, else the error (res->status FAILED, res->message). */
fl_err_t fl_expire_snapshots(const fl_table_ops_t *ops, const fl_expire_opts_t *opts, fl_expire_result_t *res);
void fl_expire_result_free(fl_expire_result_t *res);

#endif
