/* Record conversion for floe sink: a Kafka message value (JsonConverter
 * output: schemaless JSON, or the {"schema","payload"} envelope) against an
 * Iceberg table schema, with the Iceberg sink's coercions (reference/sink.md
 * §3.3): numbers for timestamps are epoch millis and for times millis of the
 * day; numeric strings parse into numbers; anything becomes a string (objects
 * and arrays as JSON text); base64 for binary; fields with no column are
 * dropped (or reported, for schema evolution); missing columns are null.
 * The result is JSON in the forms format/json_rows.h takes, so the column
 * append (fl_vec_append_json) validates the whole record before it writes it.
 *
 * Type inference for auto-create and add-column follows the sink's rules
 * (§3.5): from a Connect schema when there is one, else from the values
 * (integers -> long, fractions -> double, objects -> struct, arrays -> list
 * of the first element's type; nulls and empty containers give no column).
 *
 * Pure functions over borrowed JSON; any thread. */
#ifndef FL_SINK_CONVERT_H
#define FL_SINK_CONVERT_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include "base/buf.h"
#include "base/err.h"
#include "format/column.h"
#include "sink/config.h"

/* The Connect schema name floe gives Avro local-timestamp-* values (no zone):
 * inferred as timestamp, where Connect's Timestamp is inferred as timestamptz. */
#define FL_SINK_LOCAL_TS_NAME "floe.LocalTimestamp"

/* KafkaMetadataTransform, as the Iceberg sink's SMT: adds the record's topic
 * (string), partition (int32), offset (int64) and timestamp (int64 epoch
 * millis, absent when ts_ms < 0), plus the external_field constant, to value
 * (an object, changed in place): as <field_name>_<x> members, or nested in a
 * <field_name> object. */
void fl_sink_kafka_metadata(const fl_sink_config_t *cfg, json_t *value, const char *topic, int32_t partition,
                            int64_t offset, int64_t ts_ms);
/* The Connect schema of a record after that transform: a new struct schema
 * with the fields added (new reference; NULL for NULL). */
json_t *fl_sink_kafka_metadata_schema(const fl_sink_config_t *cfg, json_t *schema);

/* The JSON text p[0..n) as jansson would parse it (JSON_DECODE_ANY |
 * JSON_REJECT_DUPLICATES), for the plain cases only: NULL means "ask json_loadb"
 * (non-ASCII or \u strings, integers over 18 digits, duplicate keys, nesting
 * over 64, any syntax error). New reference. */
json_t *fl_sink_json_fast(const void *p, size_t n);

/* The direct path for the common record: a schemaless JSON object whose
 * members are all top-level columns of root (boolean, int, long, float,
 * double, string), with values already in their columns' forms (strings
 * ASCII with the simple escapes, integers to 18 digits, reals strtod takes,
 * null for optional columns), no duplicate keys. Such a record is appended
 * straight into batch (the root vector; one row) without any JSON tree: the
 * row fl_sink_parse_value + fl_sink_convert + fl_vec_append_json would
 * append. Anything else returns false with batch untouched, and the caller
 * takes the general path, whose answer (row, evolution, or error) counts.
 * tmp is the caller's scratch buffer (reused between calls). */
bool fl_sink_direct_usable(const fl_field_t *root);
bool fl_sink_direct_append(const fl_field_t *root, fl_vec_t *batch, const void *p, size_t n, bool ci, fl_buf_t *tmp);

/* Parses a message value. With schemas_enable the value must be the
 * {"schema": .., "payload": ..} envelope (as JsonConverter requires). *root
 * is a new reference (NULL for a tombstone: p == NULL); *value and *schema
 * are borrowed from it (*schema NULL without schemas). */
fl_err_t fl_sink_parse_value(const void *p, size_t n, bool schemas_enable, json_t **root, json_t **value,
                             json_t **schema, char *err, size_t errlen);

/* The record as JSON for fl_vec_append_json on a vector of root (a STRUCT):
 * *out a new object. schema is the record's Connect schema or NULL. With
 * missing non-NULL, the dotted paths of record fields that have no column
 * (at any struct level) and a non-null value are appended to it (an array). */
fl_err_t fl_sink_convert(const fl_field_t *root, json_t *value, json_t *schema, bool case_insensitive,
                         json_t **out, json_t *missing, char *err, size_t errlen);

/* The value at a dotted path of a record as text (strings as they are,
 * numbers and booleans printed, lower-cased when lower), or NULL when absent
 * or null. The result is written to buf (n bytes) or borrowed. */
const char *fl_sink_route_value(json_t *value, const char *path, bool lower, char *buf, size_t n);

/* An Iceberg type (JSON, as in a schema) for a value (and its Connect
 * schema, may be NULL), with field ids from *next_id on; NULL when it cannot
 * be inferred (null, empty list). New reference. */
json_t *fl_sink_infer_type(json_t *value, json_t *schema, bool force_optional, int *next_id);

/* An Iceberg schema (JSON, schema-id 0) for a new table from its first
 * record; FL_ERR_INVALID when no column can be inferred. */
fl_err_t fl_sink_infer_schema(json_t *value, json_t *schema, bool force_optional, json_t **out, char *err,
                              size_t errlen);

/* Evolves the struct type st (Iceberg JSON, changed in place) for value: an
 * optional column for every field that st lacks (recursing into struct
 * columns), ids from *next_id on; with the record's Connect schema also int
 * -> long and float -> double, and required -> optional where the schema says
 * optional (the Iceberg sink's rules, reference/sink.md §3.6). Returns how
 * many changes it made. */
size_t fl_sink_evolve_struct(json_t *st, json_t *value, json_t *schema, bool case_insensitive, int *next_id);

#endif
