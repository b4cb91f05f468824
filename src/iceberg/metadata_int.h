/* Private helpers shared by metadata.c (create, schemas, validation), metadata_update.c
 * (requirements, table updates) and metadata_view.c (views). */
#ifndef FL_ICEBERG_METADATA_INT_H
#define FL_ICEBERG_METADATA_INT_H
#include "iceberg/metadata.h"
#include <stdbool.h>

#define ICE_MAX_FORMAT_VERSION 3
#define ICE_MAX_FIELD_ID 2147483447LL /* Integer.MAX_VALUE - 200: above is reserved */

typedef struct ice_err {
    char *buf;
    size_t len;
    int status;
} ice_err_t;

/* Records status and a formatted message; returns status. */
int ice_fail(ice_err_t *e, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Integer member of an object (false if missing or not an integer). */
bool ice_get_int(json_t *o, const char *k, json_int_t *out);
/* String member of an object or NULL. */
const char *ice_get_str(json_t *o, const char *k);
/* Array element of arr whose integer member k equals v, or NULL. */
json_t *ice_find_by_id(json_t *arr, const char *k, json_int_t v);
/* Largest integer member k over arr's objects, or dflt when none is larger. */
json_int_t ice_max_id(json_t *arr, const char *k, json_int_t dflt);
/* Sets o[k] to a new integer. */
void ice_set_int(json_t *o, const char *k, json_int_t v);
/* Object members that are all strings (map<string,string>); 0 or 400. */
int ice_check_string_map(json_t *m, const char *what, ice_err_t *e);

/* id -> id pairs collected while walking a schema. */
typedef struct ice_idmap {
    json_int_t *from, *to;
    size_t n, cap;
} ice_idmap_t;
void ice_idmap_add(ice_idmap_t *m, json_int_t from, json_int_t to);
void ice_idmap_free(ice_idmap_t *m);
bool ice_idmap_get(const ice_idmap_t *m, json_int_t from, json_int_t *to);

/* Walks a schema struct. With fresh, returns a copy with every id (field, element-id, key-id,
 * value-id) reassigned from *next + 1 in Iceberg's AssignFreshIds order, recording old -> new in
 * map (old ids may be absent); without fresh, checks the ids (positive, unique) and returns a
 * copy with primitive type strings normalised, raising *next to the largest id seen. Both
 * validate types against format_version. NULL + e on error. */
json_t *ice_walk_schema(json_t *schema, bool fresh, int format_version, json_int_t *next,
                        ice_idmap_t *map, ice_err_t *e);
/* The type JSON of the field / element / key / value with id fid in schema, or NULL. */
json_t *ice_find_field_type(json_t *schema, json_int_t fid);
/* Checks a partition spec's fields against schema (source ids exist, transforms apply, names
 * unique). 0 or 400. */
int ice_check_spec_fields(json_t *fields, json_t *schema, ice_err_t *e);
/* Checks a sort order's fields against schema. 0 or 400. */
int ice_check_sort_fields(json_t *fields, json_t *schema, ice_err_t *e);
/* Two schemas equal apart from schema-id (and empty identifier-field-ids). */
bool ice_same_schema(json_t *a, json_t *b);

/* The schemas of one metadata being updated, indexed by content, so that a commit's
 * add-schema updates cost O(size of each schema) rather than O(schemas so far).
 * Zero-initialise; built from the schemas array at the first ice_schema_add; call
 * ice_schema_set_reset after anything else changes that array, and at the end. */
typedef struct ice_schema_set {
    json_t *index;      /* content fingerprint -> schema-id */
    json_int_t max;     /* largest schema-id */
} ice_schema_set_t;
/* *id = the id of a schema of schemas equal to s (ice_same_schema), else s gets id
 * max + 1 and is appended (a new reference). 0, or 500 on OOM. */
int ice_schema_add(ice_schema_set_t *set, json_t *schemas, json_t *s, json_int_t *id, ice_err_t *e);
void ice_schema_set_reset(ice_schema_set_t *set);
/* Lowercase UUID syntax check. */
bool ice_is_uuid(const char *s);
/* Sets the format-specific "no current snapshot" marker. */
void ice_clear_current_snapshot(json_t *md);
int64_t ice_now_ms(void);

#endif
