/* Compaction: Iceberg's RewriteDataFiles (bin-pack) and RewriteManifests over
 * the table ops of iceberg/append.h, so the same code runs in-process (the
 * maintenance scheduler of `floe serve`) or through a REST catalog (`floe
 * compact`).
 *
 * Plan: from main's snapshot, live data files are grouped by (spec id,
 * partition tuple). A file is a candidate when it is smaller than
 * min_file_bytes, has delete files applying to it, or was written with an
 * older spec than the default one (it is rewritten into the default spec).
 * Each partition's candidates are bin-packed first-fit-decreasing into groups
 * of at most min(target, max_commit_bytes) input bytes; a group is worth
 * rewriting with >= min_input_files files, or deletes applying, or an old spec.
 *
 * Rewrite: a group's rows are read with the Parquet reader (projected on the
 * current schema by field id, the table's name mapping for files without
 * ids), position deletes and deletion vectors applied to data files with data
 * seq <= delete seq and equality deletes with data seq < delete seq (Iceberg's
 * rule; a data file with a deletion vector ignores position delete files, as
 * the v3 spec says), and written
 * through the appender (iceberg/append.h: partition routing, files rolled at
 * the target, write.parquet.* and metrics modes as for appends).
 *
 * Commit: groups are committed in units of about max_commit_bytes input bytes,
 * each unit one `replace` snapshot (summary as Java's RewriteFiles): a new
 * manifest of the new files with data sequence number = the STARTING
 * snapshot's (use-starting-sequence-number, so concurrent equality deletes
 * still apply to the rewritten rows), the manifests holding replaced files
 * rewritten with them DELETED, delete files that no longer apply to any live
 * data file DELETED too, the other manifests carried over. Requirements:
 * assert-table-uuid + assert-ref-snapshot-id(main). A 409 reloads the table
 * and re-validates against it as Java does: each group's files must still be
 * live and no position delete (nor, for a group changing spec, any delete)
 * may have been added since the start against them; a group failing this is
 * dropped (its new files deleted, the deletes stay effective) and the rest is
 * re-based and committed. Manifests are immutable, so each is read once per
 * job and an attempt costs only the manifests added since the last one.
 * After FL_REWRITE_OPTIMISTIC_ATTEMPTS lost races (a writer committing faster
 * than an attempt is built), and when ops.hold exists, each later attempt
 * holds the table's commit lock from its reload to its commit: writers wait
 * for one re-base (manifests of one unit) instead of compaction losing forever.
 *
 * Strategies (S3 Tables' icebergCompaction strategy): binpack writes a
 * group's rows in input order. sort orders each group's rows (deletes applied)
 * by the table's default sort order before writing, so the files one group
 * writes (rolled at the target) have non-overlapping bounds on the first sort
 * column, and marks them with the order's id; z-order orders them by the
 * z-value of the sort order's columns (iceberg/sortorder.h). auto is sort when
 * the table has a sort order, else binpack; sort and z-order on a table
 * without one fall back to binpack and say so in result.note (S3 Tables needs
 * a sort order for them). File selection is the same for every strategy, as
 * Java's SizeBasedFileRewriter (not rewrite-all): files at size are left
 * alone even if unsorted, and small ones are sorted among themselves. Sorted
 * groups hold a partition's candidates up to min(max_commit_bytes,
 * FL_REWRITE_SORT_GROUP_BYTES) input bytes (not one target), so one group
 * yields a run of sorted files; the rows wait in memory up to
 * FL_REWRITE_SORT_MEM_BYTES, beyond which a group is written as several
 * sorted runs (bounded memory over tight bounds).
 *
 * Format: v2 and v3 tables. v3: deletion vectors (Puffin deletion-vector-v1
 * blobs named by a delete entry's referenced_data_file, content_offset and
 * content_size_in_bytes; iceberg/puffin.h) are applied like position deletes
 * and dropped like them: per manifest entry, since one Puffin file holds the
 * DVs of many data files and only the entries of replaced files go. A DV added
 * concurrently against a file being rewritten fails that group. Row lineage:
 * rows are read with _row_id and _last_updated_sequence_number (field ids
 * 2147483540 / 2147483539), nulls filled by inheritance (the file's
 * first_row_id + position; its data sequence number) and written into the new
 * files as those two columns (as Java's v3 rewrite), so every row keeps both;
 * the manifest list is written as v3 (new data manifests take row ids from the
 * table's next-row-id; carried manifests keep theirs; rewritten ones keep each
 * entry's first_row_id explicitly) and the snapshot carries first-row-id and
 * added-rows (the commit advances next-row-id by them).
 *
 * One thread per call; the ops are borrowed for the call. Errors: FL_ERR_INVALID
 * (unsupported table, malformed files), FL_ERR_CONFLICT (table replaced), the
 * ops' errors; err says which. Groups that fail validation are not an error:
 * they are counted in the result. */
#ifndef FL_ICEBERG_REWRITE_H
#define FL_ICEBERG_REWRITE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/err.h"
#include "iceberg/append.h"

/* Lost commit races before an attempt holds the table (ops.hold). */
#define FL_REWRITE_OPTIMISTIC_ATTEMPTS 3

typedef enum fl_rewrite_strategy {
    FL_REWRITE_BINPACK = 0,
    FL_REWRITE_SORT,
    FL_REWRITE_ZORDER,
    FL_REWRITE_AUTO,
} fl_rewrite_strategy_t;

/* "binpack", "sort", "z-order", "auto" (S3 Tables' names) to and from the enum;
 * parse gives FL_ERR_INVALID for anything else. */
fl_err_t fl_rewrite_strategy_parse(const char *s, fl_rewrite_strategy_t *out);
const char *fl_rewrite_strategy_name(fl_rewrite_strategy_t s);

typedef struct fl_rewrite_opts {
    fl_rewrite_strategy_t strategy; /* 0 = binpack */
    int64_t target_file_bytes;   /* 0 = write.target-file-size-bytes (512 MiB) */
    int64_t min_file_bytes;      /* "small": below this; 0 = 75% of the target (Java's default) */
    int min_input_files;         /* files a group needs without deletes; 0 = 2 */
    int64_t max_commit_bytes;    /* input bytes per commit; 0 = 10 GiB */
    bool skip_data;              /* only merge manifests */
    int merge_manifests_min;     /* merge a spec's small manifests when more than this many; 0 = off */
    int64_t manifest_target_bytes; /* 0 = commit.manifest.target-size-bytes (8 MiB) */
    const char *tmp_dir;         /* staging for written files; NULL = $TMPDIR or /tmp */
    int64_t sort_mem_bytes;      /* sort/z-order rows held before a run is written; 0 = FL_REWRITE_SORT_MEM_BYTES */
    /* Test hook: called after the groups of a commit unit are written and
     * before its first commit attempt (e.g. to commit a racing change). */
    void (*before_commit)(void *ctx);
    void *before_commit_ctx;
} fl_rewrite_opts_t;

typedef struct fl_rewrite_result {
    int64_t files_in, bytes_in, records_in;      /* data files replaced (committed groups) */
    int64_t files_out, bytes_out, records_out;   /* data files added */
    int64_t delete_files_applied;                /* distinct delete files read */
    int64_t delete_files_removed;                /* delete files dropped from the table */
    int groups_planned, groups_committed, groups_failed, groups_skipped;
    int commits;                                 /* replace snapshots committed (both kinds) */
    int manifests_replaced, manifests_created;   /* by the manifest merge */
    int commit_attempts;                         /* all attempts, 409 retries included */
    int64_t duration_ms;
    char last_failure[256];                      /* why the last group failed or was skipped */
    fl_rewrite_strategy_t strategy;              /* the strategy applied (auto resolved) */
    int32_t sort_order_id;                       /* the order sort/z-order used (0 = none) */
    int64_t sorted_runs;                         /* sorted runs written (>1 per group: memory cap hit) */
    char note[192];                              /* e.g. why sort fell back to binpack */
} fl_rewrite_result_t;

/* What a plan found (for tests and `--dry-run`): candidate groups. */
typedef struct fl_rewrite_plan_group {
    int32_t spec_id;
    size_t n_files;
    int64_t bytes;
    size_t n_deletes;            /* delete files applying to its files */
    char **paths;                /* owned */
} fl_rewrite_plan_group_t;

typedef struct fl_rewrite_plan {
    int64_t snapshot_id, sequence_number;
    fl_rewrite_plan_group_t *groups;
    size_t n_groups;
    size_t n_skipped;            /* groups refused (none today) */
} fl_rewrite_plan_t;

/* Plan only: load the table, group and bin-pack (no writes). */
fl_err_t fl_rewrite_plan(const fl_table_ops_t *ops, const fl_rewrite_opts_t *opts, fl_rewrite_plan_t *plan,
                         char *err, size_t errlen);
void fl_rewrite_plan_free(fl_rewrite_plan_t *plan);

/* Plan, rewrite and commit; then merge manifests when opts ask. res is
 * filled in every case (what was committed before a failure stays committed). */
fl_err_t fl_rewrite_run(const fl_table_ops_t *ops, const fl_rewrite_opts_t *opts, fl_rewrite_result_t *res,
                        char *err, size_t errlen);

#endif
