/* Iceberg schemas and partition specs as C values: the JSON of table metadata
 * (reference/iceberg.md §2.2, §2.4) to and from the field trees of
 * format/column.h, and binding a partition spec to a schema so writers can
 * compute partition tuples. Pure; any thread. */
#ifndef FL_ICEBERG_SCHEMA_H
#define FL_ICEBERG_SCHEMA_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/err.h"
#include "format/column.h"
#include "iceberg/transform.h"

/* Schema JSON ({"type":"struct","schema-id":N,"fields":[...]}) -> a STRUCT root
 * field (id 0, name "table"). *schema_id gets schema-id (0 if absent; may be NULL).
 * FL_ERR_INVALID with err filled for anything malformed (unknown types, missing
 * ids, duplicate ids, more than FL_ICEBERG_MAX_FIELDS fields). */
fl_err_t fl_schema_from_json(json_t *schema_json, fl_field_t *root, int32_t *schema_id,
                             char *err, size_t errlen);
/* The reverse: a new reference to schema JSON with the given schema-id. */
json_t *fl_schema_to_json(const fl_field_t *root, int32_t schema_id);
/* The schema with schema-id == id in table metadata ("schemas" array), or the
 * current one when id < 0 ("current-schema-id"). FL_ERR_NOT_FOUND if absent. */
fl_err_t fl_schema_from_metadata(json_t *metadata, int32_t id, fl_field_t *root,
                                 int32_t *schema_id, char *err, size_t errlen);
/* A projection of root keeping the top-level or nested fields whose names are
 * in names (dotted paths for nested struct fields: "a.b"); order follows
 * names. FL_ERR_NOT_FOUND with err for an unknown name. */
fl_err_t fl_schema_project(const fl_field_t *root, const char *const *names, size_t n,
                           fl_field_t *out, char *err, size_t errlen);

/* Convert one non-null value of a primitive vector slot to an fl_ice_value_t
 * (bytes point into the vector). */
fl_err_t fl_vec_ice_value(const fl_vec_t *v, size_t i, fl_ice_value_t *out);

/* A partition spec bound to a schema. */
typedef struct fl_part_field {
    int32_t source_id;            /* schema field id */
    int32_t field_id;             /* partition field id (1000, 1001, ...) */
    char *name;                   /* owned */
    fl_ice_transform_t transform;
    const fl_field_t *source;     /* borrowed from the schema the spec was bound to */
    fl_ice_kind_t result_kind;    /* kind of the transform result */
} fl_part_field_t;

typedef struct fl_part_spec {
    int32_t spec_id;
    fl_part_field_t *fields;      /* owned */
    size_t n_fields;
} fl_part_spec_t;

/* Partition spec JSON ({"spec-id":N,"fields":[{"source-id","field-id","name",
 * "transform"}]}) bound to schema root (borrowed; must outlive spec). */
fl_err_t fl_part_spec_from_json(json_t *spec_json, const fl_field_t *root, fl_part_spec_t *spec,
                                char *err, size_t errlen);
/* The spec with spec-id == id in metadata ("partition-specs"), or the default
 * ("default-spec-id") when id < 0. */
fl_err_t fl_part_spec_from_metadata(json_t *metadata, int32_t id, const fl_field_t *root,
                                    fl_part_spec_t *spec, char *err, size_t errlen);
void fl_part_spec_free(fl_part_spec_t *spec);
static inline bool fl_part_spec_unpartitioned(const fl_part_spec_t *s)
{
    for (size_t i = 0; i < s->n_fields; i++)
        if (s->fields[i].transform.kind != FL_ICE_T_VOID) return false;
    return true;
}

/* The Iceberg field kind (format/column.h) <-> transform value kind. */
fl_ice_kind_t fl_ice_kind_of_type(fl_type_kind_t k);

#endif
