/* Iceberg table and view metadata model over jansson: creating new metadata from REST create
 * requests (fresh field / spec / sort-order ids, as Java's TableMetadata.newTableMetadata does),
 * checking commit requirements and applying commit updates (REST catalog OpenAPI, table spec
 * v1-v3). Pure functions: no I/O, no globals; safe to call from any thread.
 *
 * Ownership: every json_t * returned is a new reference owned by the caller. Inputs are borrowed
 * and never modified (updates are applied to a deep copy). Unknown fields of metadata are kept.
 *
 * Errors: functions returning json_t * give NULL and set *status (400 = bad request, 409 =
 * conflict the client should retry / report as CommitFailed) and a NUL-terminated message in
 * err[errlen] (err may be NULL when errlen is 0). */
#ifndef FL_ICEBERG_METADATA_H
#define FL_ICEBERG_METADATA_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* New table metadata (format-version 2 unless the request's properties say "format-version": "1"
 * or "3") from a REST CreateTableRequest object {"name","location"?,"schema","partition-spec"?,
 * "write-order"?,"properties"?,"stage-create"?} with the table location given by the caller
 * (the request's "location" is ignored; the caller decides). Field ids, spec ids and sort-order
 * ids are assigned fresh as Java's TableMetadata.newTableMetadata does (schema ids reassigned in
 * order, partition/sort source-ids remapped through the name -> new id map); table-uuid is a
 * random v4 UUID, last-updated-ms = now, last-sequence-number 0, current-snapshot-id -1 (v1/v2)
 * or absent (v3), snapshots/snapshot-log/metadata-log [], refs {}. Reserved properties
 * ("format-version", "uuid", ...) are dropped from properties.
 * Returns a new reference, or NULL with *status = 400 and err filled for invalid input. */
json_t *fl_iceberg_new_metadata(json_t *create_req, const char *location, int *status, char *err,
                                size_t errlen);

/* An Iceberg schema JSON ({"type":"struct","schema-id":0,"fields":[{"id","name","type",
 * "required"}...]}) from the S3 Tables CreateTable shape {"fields":[{"name","type","required"?,
 * "id"?}]} (types as Iceberg type strings, e.g. "int","long","string","decimal(10,2)",
 * "timestamp"; nested JSON types are accepted too). Ids are assigned 1..n in order (given "id"s
 * are ignored: the table's ids are assigned fresh anyway). NULL + err if invalid. */
json_t *fl_iceberg_schema_from_s3tables(json_t *s3schema, char *err, size_t errlen);

/* Checks a commit's requirements array against the current metadata (NULL when the table does
 * not exist yet: only assert-create passes then; assert-create fails when current != NULL).
 * Types: assert-create, assert-table-uuid, assert-ref-snapshot-id (null or missing snapshot-id =
 * ref must not exist), assert-last-assigned-field-id, assert-current-schema-id,
 * assert-last-assigned-partition-id, assert-default-spec-id, assert-default-sort-order-id, and
 * for views assert-view-uuid. requirements may be NULL (= none).
 * Returns 0 if all hold; 409 with err if one fails; 400 with err for an unknown or malformed
 * requirement (a malformed one is reported even if an earlier one failed). */
int fl_iceberg_check_requirements(json_t *current, json_t *requirements, char *err,
                                  size_t errlen);

/* Applies a commit's updates array to a copy of base (base is not modified) and returns the new
 * metadata, or NULL with *status (400, or 409 where the spec says conflict: a stale
 * sequence-number or v3 first-row-id; 500 when base itself fails fl_iceberg_validate_metadata,
 * i.e. the stored table is broken) and err. An empty/NULL updates array is allowed. All update actions of the current spec for tables (see metadata.c).
 * Sets last-updated-ms (never below the previous value); when prev_location is non-NULL appends
 * {"timestamp-ms": base's last-updated-ms, "metadata-file": prev_location} to metadata-log and
 * keeps the newest write.metadata.previous-versions-max entries (default 100).
 * base must be table metadata (e.g. from fl_iceberg_new_metadata, or loaded from a file). */
json_t *fl_iceberg_apply_updates(json_t *base, json_t *updates, const char *prev_location,
                                 int *status, char *err, size_t errlen);

/* Views: new view metadata (format-version 1) from a REST CreateViewRequest {"name",
 * "location"?,"schema","view-version","properties"?}; the view's schema gets schema-id 0 and its
 * version version-id 1 pointing at it. */
json_t *fl_iceberg_new_view_metadata(json_t *create_req, const char *location, int *status,
                                     char *err, size_t errlen);
/* Applies view updates (assign-uuid, upgrade-format-version, add-schema, set-location,
 * set-properties, remove-properties, add-view-version (-1 view-version-id = last added; an
 * identical version is reused), set-current-view-version (-1 = last added)) to a copy of base.
 * prev_location is unused (views keep a version-log, not a metadata-log); only the newest
 * version.history.num-entries versions (default 10) are kept. Same status / err convention as
 * fl_iceberg_apply_updates (500 = base is not view metadata). */
json_t *fl_iceberg_apply_view_updates(json_t *base, json_t *updates, const char *prev_location,
                                      int *status, char *err, size_t errlen);

/* The sequence number for the metadata file that will hold `metadata`, when metadata is the
 * result of fl_iceberg_apply_updates(base, ..., prev_location = base's file): the count in its
 * metadata-log, or the newest metadata-log file's own number + 1 when that is larger (a trimmed
 * log undercounts). So a new table (empty log) is 00000-, its first commit 00001-, and so on.
 * (Equivalently: 1 + the count in the CURRENT metadata's log.) For view metadata (no
 * metadata-log): version-log count - 1 (0 for a new view; not strictly increasing across
 * property-only commits, so prefer fl_iceberg_file_seq_of(current location) + 1 there). */
long fl_iceberg_next_file_seq(json_t *metadata);

/* Extras. */

/* Structural sanity check of table metadata read from storage or a client (registerTable):
 * format-version 1..3 and the fields that version requires, ids are integers, current ids name
 * existing schemas/specs/orders/snapshots. 0 if usable, else 400 with err. */
int fl_iceberg_validate_metadata(json_t *metadata, char *err, size_t errlen);

/* The version number at the start of a metadata file name ("s3://b/t/metadata/00012-<uuid>
 * .metadata.json" -> 12), or -1 if the name does not start with digits followed by '-'. With
 * the current metadata location L, the next file is fl_iceberg_file_seq_of(L) + 1. */
long fl_iceberg_file_seq_of(const char *metadata_location);

/* A random (v4) lowercase UUID string into out[37]. */
void fl_iceberg_uuid4(char out[37]);

/* Current snapshot id of table metadata, or -1 when none (-1, null or absent). */
int64_t fl_iceberg_current_snapshot_id(json_t *metadata);

/* True when applying produced no change (compare base and result, ignoring last-updated-ms and
 * metadata-log): the REST catalog may then skip writing a new metadata file. */
int fl_iceberg_metadata_unchanged(json_t *base, json_t *result);

#endif
