/* Iceberg manifests and manifest lists (reference/iceberg.md §3): Avro container
 * files written with exactly the schemas, record names (manifest_file,
 * manifest_entry, r2, r102, r508, k117_v118 ...), field ids and header metadata
 * that the Java library writes, and read back by field id (so files from Java,
 * PyIceberg and v1 writers load too). Partition tuples are typed by the bound
 * spec; bounds use the single-value binary serialization.
 *
 * Writers build the whole file in memory (manifests are small) and hand back the
 * bytes for the caller to store. Plain values; any thread, one at a time per
 * object. */
#ifndef FL_ICEBERG_MANIFEST_H
#define FL_ICEBERG_MANIFEST_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/err.h"
#include "format/avro.h"
#include "format/column.h"
#include "iceberg/schema.h"
#include "iceberg/transform.h"

/* One data (or delete) file: manifest_entry.data_file (r2). */
typedef struct fl_data_file {
    int32_t content;                 /* 0 data, 1 position deletes, 2 equality deletes */
    char *file_path;                 /* owned, absolute URI */
    char *file_format;               /* owned, "PARQUET" */
    fl_ice_value_t *partition;       /* n_partition values in spec order; kind NULL = null;
                                        bytes values own their memory (freed with the file) */
    size_t n_partition;
    int64_t record_count, file_size_in_bytes;
    fl_col_metrics_t *metrics;       /* owned; absent maps = no entries */
    size_t n_metrics;
    int64_t *split_offsets;          /* owned; NULL = absent */
    size_t n_split_offsets;
    bool has_sort_order_id;
    int32_t sort_order_id;
    bool has_first_row_id;           /* v3 first_row_id (142); written by v3 manifests only */
    int64_t first_row_id;
    int32_t *equality_ids;           /* equality_ids (135) of an equality delete file; owned; NULL = absent */
    size_t n_equality_ids;
    char *referenced_data_file;      /* referenced_data_file (143), v2+; owned; NULL = absent */
    bool has_content_offset;         /* content_offset / content_size_in_bytes (144/145), v3 (DVs) */
    int64_t content_offset, content_size_in_bytes;
} fl_data_file_t;

void fl_data_file_free(fl_data_file_t *f);
/* Set partition value i to a copy of v (bytes copied). */
void fl_data_file_set_partition(fl_data_file_t *f, size_t i, const fl_ice_value_t *v);
/* One Iceberg data_file record (the manifest's field ids 100, 101, ...) at node n of p,
 * read from d into f (zeroed by the caller; freed with fl_data_file_free either way);
 * *items is the caller's array/map item budget (fl_avro_skip_value). The Kafka Connect
 * sink's control-topic events carry data files in this form too. FL_ERR_INVALID for
 * a malformed datum or one without file_path. */
struct fl_avro_schema;
fl_err_t fl_data_file_decode(const struct fl_avro_schema *p, int32_t n, fl_avro_dec_t *d, int64_t *items,
                             fl_data_file_t *f);

/* manifest_entry */
typedef struct fl_manifest_entry {
    int32_t status;                  /* 0 EXISTING, 1 ADDED, 2 DELETED */
    bool has_snapshot_id, has_sequence_number, has_file_sequence_number;
    int64_t snapshot_id, sequence_number, file_sequence_number;
    fl_data_file_t file;
} fl_manifest_entry_t;

/* r508 field_summary */
typedef struct fl_field_summary {
    bool contains_null;
    bool has_contains_nan, contains_nan;
    bool has_lower, has_upper;
    fl_buf_t lower, upper;           /* owned single-value binary */
} fl_field_summary_t;

/* manifest_file: one entry of a manifest list. */
typedef struct fl_manifest_file {
    char *manifest_path;             /* owned */
    int64_t manifest_length;
    int32_t partition_spec_id;
    int32_t content;                 /* 0 data, 1 deletes */
    int64_t sequence_number, min_sequence_number;
    int64_t added_snapshot_id;
    int32_t added_files_count, existing_files_count, deleted_files_count;
    int64_t added_rows_count, existing_rows_count, deleted_rows_count;
    fl_field_summary_t *partitions;  /* owned; NULL + has_partitions false = null */
    size_t n_partitions;
    bool has_partitions;
    bool has_first_row_id;           /* v3 first_row_id (520); written by v3 lists only */
    int64_t first_row_id;
} fl_manifest_file_t;

void fl_manifest_file_free(fl_manifest_file_t *m);
/* Free an array of n and the array itself. */
void fl_manifest_files_free(fl_manifest_file_t *m, size_t n);

/* ---- writing a manifest ---- */

typedef struct fl_manifest_writer {
    int format_version;              /* 2 (1 and 3 where cheap) */
    const fl_field_t *schema;        /* borrowed */
    const fl_part_spec_t *spec;      /* borrowed */
    int64_t snapshot_id;
    int32_t content;
    char *schema_json;               /* header "schema" */
    char *spec_json;                 /* header "partition-spec" (fields array) */
    fl_avro_writer_t avro;
    fl_buf_t out;
    /* running manifest_file figures */
    int32_t added_files, existing_files, deleted_files;
    int64_t added_rows, existing_rows, deleted_rows;
    int64_t min_seq;                 /* over EXISTING/DELETED entries; -1 none */
    fl_field_summary_t *summaries;   /* one per spec field */
    char *avro_schema;               /* the Avro schema JSON */
} fl_manifest_writer_t;

/* Start a manifest for entries of one spec (format_version 1, 2 or 3). The
 * header "schema" is schema rendered as JSON with schema_id; "partition-spec"
 * is the spec's fields array. codec: Java writes deflate. FL_ERR_INVALID for a
 * bad version or a spec whose fields lack a source type (void on a dropped
 * column is written as int). */
fl_err_t fl_manifest_writer_open(fl_manifest_writer_t *w, int format_version,
                                 const fl_field_t *schema, int32_t schema_id,
                                 const fl_part_spec_t *spec, int32_t content,
                                 int64_t snapshot_id, fl_avro_codec_t codec);
/* Add one entry. ADDED entries written by a fast append leave sequence numbers
 * unset (inherited); EXISTING/DELETED carry them. */
fl_err_t fl_manifest_writer_add(fl_manifest_writer_t *w, const fl_manifest_entry_t *e);
/* Finish: *bytes gets the file (ownership moves to the caller's fl_buf_t) and
 * *mf the manifest_file record for the list, with manifest_path = path and
 * manifest_length = file length; sequence_number / min_sequence_number are set
 * to seq (the snapshot's sequence number) unless EXISTING entries lower the min. */
fl_err_t fl_manifest_writer_finish(fl_manifest_writer_t *w, const char *path, int64_t seq,
                                   fl_buf_t *bytes, fl_manifest_file_t *mf);
void fl_manifest_writer_free(fl_manifest_writer_t *w);

/* ---- writing a manifest list ---- */

/* The whole list file into out: header metadata snapshot-id, parent-snapshot-id
 * ("null" when parent < 0), sequence-number, format-version; records in order. */
fl_err_t fl_manifest_list_write(int format_version, int64_t snapshot_id, int64_t parent_id,
                                int64_t seq, const fl_manifest_file_t *files, size_t n,
                                fl_avro_codec_t codec, fl_buf_t *out);
/* A v3 list with row lineage, as Java's V3 writer: header "first-row-id" =
 * first_row_id (the table's next-row-id) between sequence-number and
 * format-version; each data manifest without first_row_id gets the running
 * row id, which then advances by its added + existing rows; other records are
 * written as given. *next_row_id (may be NULL) gets the id after the last one
 * assigned, so the snapshot's added-rows is *next_row_id - first_row_id.
 * FL_ERR_INVALID for a negative first_row_id, negative counts or overflow. */
fl_err_t fl_manifest_list_write_v3(int64_t snapshot_id, int64_t parent_id, int64_t seq, int64_t first_row_id,
                                   const fl_manifest_file_t *files, size_t n, fl_avro_codec_t codec,
                                   fl_buf_t *out, int64_t *next_row_id);

/* ---- reading ---- */

/* Parse a manifest list file. *files is a new array of *n (fl_manifest_files_free).
 * v1 lists (no sequence numbers, *_data_files_count names) load with seq 0. */
fl_err_t fl_manifest_list_read(fl_slice_t file, fl_manifest_file_t **files, size_t *n,
                               char *err, size_t errlen);

/* Parse a manifest file. Partition values are decoded by the partition type
 * recorded in the file's own Avro schema (r102), so no spec is needed; entries
 * with null sequence numbers inherit them from mf (when given) as Iceberg
 * readers do: ADDED entries get mf->sequence_number; in a data manifest whose
 * record has first_row_id (v3), live data files without one get it by
 * inheritance (the manifest's plus the record counts of such files before
 * them). *entries is a new array of
 * *n; free each with fl_data_file_free(&e.file) then the array, or use
 * fl_manifest_entries_free. */
fl_err_t fl_manifest_read(fl_slice_t file, const fl_manifest_file_t *mf,
                          fl_manifest_entry_t **entries, size_t *n, char *err, size_t errlen);
void fl_manifest_entries_free(fl_manifest_entry_t *e, size_t n);

/* ---- single-value serialization (bounds, summaries) ---- */

/* Append the Iceberg binary form of v (§3.5) to out. */
fl_err_t fl_ice_value_to_bytes(const fl_ice_value_t *v, fl_buf_t *out);
/* Decode the binary form for kind (bytes values point into b). Accepts the
 * promoted-type forms (4-byte long, 4-byte double). */
fl_err_t fl_ice_value_from_bytes(fl_ice_kind_t kind, int32_t decimal_scale, fl_slice_t b,
                                 fl_ice_value_t *out);

#endif
