/* The append API: columnar batches in, an Iceberg fast-append snapshot out.
 *
 * An appender is opened on a table (its current metadata, loaded through a
 * catalog), takes batches shaped like the table's current schema, routes each
 * row to its partition (the default spec's transforms), writes Parquet files
 * per partition rolled at write.target-file-size-bytes, and on commit writes
 * one manifest for the new files and a manifest list (the new manifest first,
 * then the parent snapshot's manifests as they are), then commits add-snapshot
 * + set-snapshot-ref(main) with assert-table-uuid and assert-ref-snapshot-id.
 * A 409 re-loads the table and re-bases: same files and manifest, a new list
 * with the new parent's manifests and the next sequence number (Java's
 * SnapshotProducer does the same) -- unless the reload shows this snapshot
 * already committed (a request resent by the HTTP client after its first send
 * landed unanswered), which is success. A 5xx or transport failure on commit means
 * "unknown": the appender reloads once and reports success if its snapshot is
 * there, else FL_ERR_IO, and leaves the files in place (as Java does).
 *
 * The catalog and the storage are callbacks (fl_table_ops_t), so the same code
 * commits through the REST client (`floe sink`, `floe` CLI) or in-process
 * (maintenance inside `floe serve`). One thread at a time per appender. */
#ifndef FL_ICEBERG_APPEND_H
#define FL_ICEBERG_APPEND_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/err.h"
#include "format/column.h"
#include "format/parquet.h"

typedef struct fl_table_ops {
    void *ctx;
    /* Current table metadata (new reference) and its metadata location (owned
     * by the caller, free()). */
    fl_err_t (*load)(void *ctx, json_t **metadata, char **location, char *err, size_t errlen);
    /* Commit requirements + updates. On success *metadata is the new metadata
     * (new reference; may be left NULL). *http_status is the catalog's answer
     * (200, 409 conflict, 5xx unknown, 0 transport failure). */
    fl_err_t (*commit)(void *ctx, json_t *requirements, json_t *updates, json_t **metadata,
                       int *http_status, char *err, size_t errlen);
    /* Storage: whole-object writes from memory and from a file, reads, deletes,
     * by absolute location (s3://..., file://...). */
    fl_err_t (*put)(void *ctx, const char *uri, const void *p, size_t n);
    fl_err_t (*put_file)(void *ctx, const char *uri, int fd, uint64_t size);
    fl_err_t (*get)(void *ctx, const char *uri, fl_buf_t *out);
    fl_err_t (*del)(void *ctx, const char *uri);
    /* Optional (NULL = the storage cannot list): fn for every object whose location starts
     * with prefix, with its size and mtime (-1 unknown). Used by maintenance (expire.h). */
    fl_err_t (*list)(void *ctx, const char *prefix,
                     fl_err_t (*fn)(void *arg, const char *uri, uint64_t size, int64_t mtime_ms), void *arg);
    /* Optional (NULL = the storage cannot copy): a server-side copy of the object at src to dst
     * (replacing dst), both in the same storage. Used by unreferenced-file removal
     * (iceberg/orphans.h) to move objects to and from the hidden noncurrent prefix. */
    fl_err_t (*copy)(void *ctx, const char *src, const char *dst);
    /* Optional (NULL = the catalog cannot): hold (on) or let go (off) of the table's
     * commit lock, so that no other commit to the table lands until off; commit
     * works in between. For a job that keeps losing the race against a steady
     * writer (rewrite.h): its last attempts are built and committed undisturbed.
     * Calls pair up on one thread; the holder does no slow I/O but the attempt's. */
    void (*hold)(void *ctx, bool on);
} fl_table_ops_t;

typedef struct fl_append_opts {
    int64_t target_file_bytes;   /* 0 = table property write.target-file-size-bytes (512 MiB) */
    fl_pq_write_opts_t parquet;  /* codec 0 and friends = table properties / defaults */
    bool parquet_set;            /* false: derive parquet options from the table properties */
    const char *tmp_dir;         /* where files are staged before upload; NULL = $TMPDIR or /tmp */
    int max_open_files;          /* partitions written at once; 0 = 64 (older ones are closed) */
    size_t max_row_group_bytes;  /* 0 = none; else caps the row group size from the table properties
                                  * (a writer's memory: a row group is buffered until it is full) */
    /* Rewrites of v3 tables (iceberg/rewrite.h): batches carry two more optional long
     * columns after the schema's, _row_id (FL_APPEND_ROW_ID_FIELD) and
     * _last_updated_sequence_number (FL_APPEND_LAST_UPDATED_FIELD), written into the
     * files as they are (the rows keep their lineage); no metrics are kept for them. */
    bool row_lineage;
} fl_append_opts_t;

#define FL_APPEND_ROW_ID_FIELD 2147483540
#define FL_APPEND_LAST_UPDATED_FIELD 2147483539

typedef struct fl_appender fl_appender_t;

/* Load the table and prepare to write with its current schema and default
 * spec. ops is copied. opts may be NULL. */
fl_err_t fl_append_open(fl_appender_t **a, const fl_table_ops_t *ops, const fl_append_opts_t *opts,
                        char *err, size_t errlen);
/* The schema batches must have (a STRUCT root; owned by the appender). */
const fl_field_t *fl_append_schema(const fl_appender_t *a);
/* The loaded table metadata (borrowed; refreshed by a re-based commit). */
json_t *fl_append_metadata(const fl_appender_t *a);
/* Write the rows of batch (shaped like fl_append_schema). */
fl_err_t fl_append_write(fl_appender_t *a, const fl_vec_t *batch, char *err, size_t errlen);
/* Rows and files written since open (or the last commit). */
int64_t fl_append_rows(const fl_appender_t *a);
/* Bytes the open data files hold in memory (their row groups being built):
 * what a commit, or fl_append_take_files, would free. */
int64_t fl_append_buffered(const fl_appender_t *a);
/* Close the open files and commit one snapshot whose summary carries the
 * n_kv (key, value) pairs of kv (kv[2i], kv[2i+1]) besides Iceberg's own
 * figures. With no rows written nothing is committed (*snapshot_id = -1).
 * On success the appender can take more batches for the next commit. */
fl_err_t fl_append_commit(fl_appender_t *a, const char *const *kv, size_t n_kv,
                          int64_t *snapshot_id, char *err, size_t errlen);
/* As fl_append_commit, with the caller's part of the summary decided per
 * attempt: fn sees the metadata the attempt builds on (md, borrowed) and its
 * parent snapshot (NULL: none) and adds string pairs to summary. Because the
 * commit asserts that parent, what fn read from it holds when the commit
 * lands: `floe sink` merges and checks its Kafka offsets here. A non-zero
 * return stops the commit (nothing lands, the written files are deleted, as
 * for any definite failure) and is returned; fn fills err then. */
typedef fl_err_t (*fl_append_summary_fn)(void *arg, json_t *md, json_t *parent, json_t *summary,
                                         char *err, size_t errlen);
fl_err_t fl_append_commit_fn(fl_appender_t *a, fl_append_summary_fn fn, void *arg, int64_t *snapshot_id,
                             char *err, size_t errlen);
/* The wait (ms) before the commit re-tries after its attempt-th (1-based) lost race
 * (409): full jitter, r (any 64-bit random value) mapped onto [0, min(MAX, BASE *
 * 2^(attempt-1))], so that writers racing on one table spread out instead of
 * colliding again in step. Pure; any thread. */
#define FL_APPEND_BACKOFF_BASE_MS 20
#define FL_APPEND_BACKOFF_MAX_MS 500
int fl_append_backoff_ms(int attempt, uint64_t r);
/* Multi-table transactions (POST {p}/transactions/commit; `floe sink`): the commit in two
 * halves, so that the caller sends several tables' requests in one transaction.
 * fl_append_prepare closes the files, uploads the new files' manifest (on the first call)
 * and this attempt's manifest list on the current parent, asks fn for the caller's summary
 * (as fl_append_commit_fn does) and hands back the requirements and updates for the catalog
 * (new references; both NULL and *snapshot_id -1 when nothing was written). A 409 in
 * fl_append_commit(_fn) is checked the same way: a snapshot found on the reload is success.
 * A failure, fn's refusal, or too many attempts discard everything written. The caller then
 * reports what the catalog answered with fl_append_settle:
 *   FL_APPEND_LANDED    it committed: the table is reloaded, the files are the table's;
 *   FL_APPEND_CONFLICT  409: the table is reloaded first. Its snapshot not there: the list
 *                       is deleted; prepare again. There after all (an HTTP client resent
 *                       the request after its first send landed unanswered): the files are
 *                       the table's, the appender is free, FL_ERR_CONFLICT says so (re-read
 *                       what the table holds). A reload that fails: FL_ERR_IO, the files
 *                       left in storage; a replaced table: everything discarded;
 *   FL_APPEND_UNKNOWN   5xx or a lost answer: the table is reloaded; FL_OK if the snapshot is
 *                       there, else FL_ERR_IO, the files left in storage (they may yet be
 *                       referenced); either way the appender is free for new batches;
 *   FL_APPEND_DROP      a definite failure: everything written is deleted;
 *   FL_APPEND_SINGLE    the catalog has no transactions: the list is deleted, the files and
 *                       manifest kept, and fl_append_commit(_fn) commits them on their own.
 * One thread at a time per appender, as for everything else. */
typedef enum fl_append_outcome {
    FL_APPEND_LANDED,
    FL_APPEND_CONFLICT,
    FL_APPEND_UNKNOWN,
    FL_APPEND_DROP,
    FL_APPEND_SINGLE,
} fl_append_outcome_t;
fl_err_t fl_append_prepare(fl_appender_t *a, fl_append_summary_fn fn, void *arg, json_t **requirements,
                           json_t **updates, int64_t *snapshot_id, char *err, size_t errlen);
fl_err_t fl_append_settle(fl_appender_t *a, fl_append_outcome_t outcome, char *err, size_t errlen);
/* For rewrites (iceberg/rewrite.h), which commit their own snapshot: close
 * the open files and hand over the data files written since open or the last
 * take (*files a new array of *n, each freed with fl_data_file_free; the
 * objects stay in storage and become the caller's). Nothing is committed. */
struct fl_data_file;
fl_err_t fl_append_take_files(fl_appender_t *a, struct fl_data_file **files, size_t *n, char *err, size_t errlen);
/* a takes from's loaded metadata (deep copy) when both are on the same table
 * (same uuid), e.g. from just committed: a's next commit then builds on it
 * instead of failing its first attempt with a 409 and re-basing. What a has
 * written stays valid, as after a re-base. Neither may be in use on another
 * thread meanwhile. False (nothing changed) for another table. */
bool fl_append_adopt_base(fl_appender_t *a, const fl_appender_t *from);
/* Adds n data files already in storage (written by another writer, e.g. announced by the
 * Kafka Connect sink on its control topic and never committed) to the next commit, before
 * anything is written: files[i] are moved out (zeroed). They must be data files of the
 * table's default partition spec (FL_ERR_INVALID, nothing taken, otherwise). A failed or
 * dropped commit leaves them in storage: they are never deleted here. */
fl_err_t fl_append_add_files(fl_appender_t *a, struct fl_data_file *files, size_t n, char *err, size_t errlen);
/* Drop what was written since the last commit (deletes the uploaded files). */
void fl_append_abort(fl_appender_t *a);
void fl_append_free(fl_appender_t *a);

#endif
