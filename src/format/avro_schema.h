/* Avro schemas as a decoding plan: a schema (JSON, as in a container file's
 * avro.schema or a schema registry's answer) parsed into a flat table of type
 * nodes, and a skipper that walks one datum of any node over an fl_avro_dec_t.
 * Readers that know what they want (Iceberg manifests in iceberg/manifest.c,
 * Kafka records in sink/registry.c) walk the nodes themselves with the
 * primitives of format/avro.h and skip the rest here.
 *
 * Every count and depth is bounded (FL_AVRO_MAX_SCHEMA_*, FL_AVRO_MAX_ITEMS in
 * base/limits.h); a malformed schema or datum is FL_ERR_INVALID (or
 * FL_ERR_TOO_LARGE), never a crash. A schema is a plain value owned by the
 * caller; after parsing it is read-only, so any number of threads may decode
 * with it at once. */
#ifndef FL_FORMAT_AVRO_SCHEMA_H
#define FL_FORMAT_AVRO_SCHEMA_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/err.h"
#include "format/avro.h"

typedef enum fl_avro_kind {
    FL_AVRO_T_NULL, FL_AVRO_T_BOOL, FL_AVRO_T_INT, FL_AVRO_T_LONG, FL_AVRO_T_FLOAT, FL_AVRO_T_DOUBLE,
    FL_AVRO_T_BYTES, FL_AVRO_T_STRING, FL_AVRO_T_FIXED, FL_AVRO_T_ENUM, FL_AVRO_T_RECORD,
    FL_AVRO_T_ARRAY, FL_AVRO_T_MAP, FL_AVRO_T_UNION,
} fl_avro_kind_t;

/* Logical types, by the physical type they annotate. Iceberg's own files use
 * the micros/nanos forms with "adjust-to-utc"; the millis forms come from
 * other writers (Kafka producers). */
typedef enum fl_avro_logical {
    FL_AVRO_L_NONE,
    FL_AVRO_L_DATE,          /* int: days */
    FL_AVRO_L_TIME,          /* long: time-micros */
    FL_AVRO_L_TS,            /* long: local-timestamp-micros, or timestamp-micros with adjust-to-utc false */
    FL_AVRO_L_TSTZ,          /* long: timestamp-micros */
    FL_AVRO_L_TS_NS,
    FL_AVRO_L_TSTZ_NS,
    FL_AVRO_L_DECIMAL,       /* bytes / fixed: big-endian two's complement, scale in the node */
    FL_AVRO_L_UUID,          /* string / fixed(16) */
    FL_AVRO_L_OTHER,         /* a logical type with no meaning here: read as its physical type */
    FL_AVRO_L_TIME_MS,       /* int: time-millis */
    FL_AVRO_L_TS_MS,         /* long: local-timestamp-millis */
    FL_AVRO_L_TSTZ_MS,       /* long: timestamp-millis */
} fl_avro_logical_t;

typedef struct fl_avro_node {
    fl_avro_kind_t kind;
    fl_avro_logical_t logical;
    int32_t size;            /* fixed size / enum symbol count */
    int32_t scale;           /* decimal */
    int32_t precision;       /* decimal, 0 when not given */
    char *name;              /* named types (record, fixed, enum): the name as written */
    int32_t n;               /* record fields / union branches / 1 for array, map */
    int32_t *sub;            /* node index per field / branch / item */
    int32_t *ids;            /* record: field-id per field, -1 none */
    char **fnames;           /* record: field names */
    char **symbols;          /* enum: its symbols (size of them) */
} fl_avro_node_t;

typedef struct fl_avro_schema {
    fl_avro_node_t *nodes;
    int32_t n, cap;
    char *err;               /* while parsing only */
    size_t errlen;
} fl_avro_schema_t;

/* Parses the schema t into s (zeroed by the caller, or freed before) and
 * returns the root node's index, or -1 with err filled. Named types may be
 * referenced by full or short name after their definition (also
 * recursively, from inside a record). s must be freed in both cases. */
int32_t fl_avro_schema_parse(fl_avro_schema_t *s, json_t *t, char *err, size_t errlen);
void fl_avro_schema_free(fl_avro_schema_t *s);

/* Skips one datum of node n. *items counts array/map items across calls (the
 * caller's budget, checked against 4 * FL_AVRO_MAX_ITEMS). */
fl_err_t fl_avro_skip_value(const fl_avro_schema_t *s, fl_avro_dec_t *d, int32_t n, int64_t *items);

/* Follows the unions at node *n in a datum: reads each branch index from d and
 * sets *n to the branch taken (unions nested at most 4 deep); *null when it is
 * "null". FL_ERR_INVALID for a branch out of range. */
fl_err_t fl_avro_follow_union(const fl_avro_schema_t *s, fl_avro_dec_t *d, int32_t *n, bool *null);

#endif
