/* The maintenance scheduler inside `floe serve`: keeps tables healthy by
 * itself, as a table bucket promises (S3 Tables semantics, design.md §2).
 *
 * A scheduler thread walks every table of every table bucket each interval,
 * reads the table's effective configuration (catalog/maintcfg.h: table-level
 * icebergCompaction and icebergSnapshotManagement, bucket-level
 * icebergUnreferencedFileRemoval; enabled by default) and picks jobs by need:
 *   compaction  fl_rewrite_plan finds a partition (and spec) with at least
 *               min_small_files files under 75% of targetFileSizeMB, or with
 *               delete files, or files of an old spec; the plan is redone only
 *               when the table's pointer or the settings changed since the
 *               last "nothing to do"
 *   snapshots   fl_expire_plan finds snapshots beyond the retention
 *               (minSnapshotsToKeep, maxSnapshotAgeHours; both violated), or
 *               the table disables expiry (gc.enabled=false: the job's status
 *               becomes Disabled with the service's message)
 * and queues at most max_jobs_per_pass tables (each with its needed jobs) for
 * a bounded pool of workers. A worker claims the table's lease in the catalog
 * store (fl_catalog_maint_claim: one job per table at a time, across nodes),
 * runs the job in-process over maint/ops.h (iceberg/rewrite.h,
 * iceberg/expire.h), records the run (fl_catalog_maint_run_add, which also
 * writes the status GetTableMaintenanceJobStatus reports) and frees the lease.
 * The scheduler thread heartbeats running jobs' leases; a job whose lease was
 * lost (taken over after expiry) is cancelled at its next step.
 *
 * Stop (fl_maint_free, e.g. on SIGTERM): running jobs are cancelled at their
 * next write or commit (maint/ops.h), so what they committed stays committed
 * and what they wrote but did not commit is deleted by the job or left to
 * unreferenced-file removal; the run is recorded as Cancelled (history only).
 *
 * Threads: fl_maint_new/start/free from one thread (serve's main thread);
 * fl_maint_pick and fl_maint_run_job from any thread (tests call them
 * directly, with their own clock). Memory is bounded: one queue of at most
 * FL_MAINT_QUEUE_MAX table rows, one plan per worker at a time. */
#ifndef FL_MAINT_SCHED_H
#define FL_MAINT_SCHED_H
#include <stdbool.h>
#include <stdint.h>
#include "catalog/tablesvc.h"

#define FL_MAINT_MAX_THREADS 16
#define FL_MAINT_QUEUE_MAX 64
#define FL_MAINT_LEASE_MS (5 * 60 * 1000LL)
#define FL_MAINT_MIN_SMALL_FILES 5
#define FL_MAINT_MERGE_MANIFESTS_MIN 16
#define FL_MAINT_JOBS_PER_PASS 16

typedef struct fl_maint_cfg {
    fl_tablesvc_t *svc;
    int64_t interval_ms;          /* between passes; <= 0: fl_maint_start starts nothing */
    int threads;                  /* workers; 0 = 1; capped at FL_MAINT_MAX_THREADS */
    int64_t lease_ms;             /* 0 = FL_MAINT_LEASE_MS */
    int min_small_files;          /* 0 = FL_MAINT_MIN_SMALL_FILES */
    int max_jobs_per_pass;        /* tables queued per pass; 0 = FL_MAINT_JOBS_PER_PASS */
    const char *owner;            /* lease owner: a node id stable across restarts (serve: the
                                     data dir's node-id), never shared by two live processes;
                                     fl_maint_start frees the leases it still holds (a killed
                                     process's). NULL = "host:pid:random" (nothing to reclaim) */
    const char *tmp_dir;          /* staging for compaction; NULL = $TMPDIR or /tmp */
} fl_maint_cfg_t;

typedef struct fl_maint fl_maint_t;

/* The jobs, as bits of a pick: one row each of the scheduler's job table. */
enum { FL_MAINT_JOB_COMPACTION = 1u << 0, FL_MAINT_JOB_SNAPSHOTS = 1u << 1, FL_MAINT_JOB_UNREFERENCED = 1u << 2 };

/* Makes the scheduler (no threads yet) and registers its metrics. cfg is
 * copied (strings too); svc is borrowed and must outlive it. */
fl_maint_t *fl_maint_new(const fl_maint_cfg_t *cfg);
/* Frees the leases the owner still holds (its previous process was killed
 * mid-job), then starts the scheduler thread and the workers (none if
 * interval_ms <= 0). */
fl_err_t fl_maint_start(fl_maint_t *m);
/* Stops (cancelling running jobs), joins the threads, unregisters the
 * metrics, frees. NULL is ignored. */
void fl_maint_free(fl_maint_t *m);

/* The jobs table t needs as of now_ms (a mask of FL_MAINT_JOB_*); records a
 * Disabled status for jobs the table itself disables. 0 when nothing is due,
 * the table has no metadata, or it cannot be read. */
unsigned fl_maint_pick(fl_maint_t *m, const fl_table_t *t, int64_t now_ms);
/* Runs one job (a single FL_MAINT_JOB_* bit) on t now: claim, run, record,
 * release. FL_ERR_CONFLICT when another owner holds the table's lease;
 * FL_ERR_INVALID for a job that has no runner yet; else the job's outcome
 * (FL_OK: Successful or Disabled). run (optional) gets the record. */
fl_err_t fl_maint_run_job(fl_maint_t *m, const fl_table_t *t, unsigned job, int64_t now_ms,
                          fl_maint_run_t *run);
/* One pass over every table in the calling thread, running what it picks
 * inline (tests). Returns
 * the number of jobs run. */
int fl_maint_pass(fl_maint_t *m, int64_t now_ms);
#endif
