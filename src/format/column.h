/* Columnar data in memory: a typed field tree (Iceberg's type system, with field
 * ids) and column vectors shaped like it, which the Parquet writer shreds into
 * pages and the Parquet reader assembles from pages. Every producer (the sink's
 * record converter, compaction, tests) fills vectors with the append calls here;
 * every consumer (writer, `floe scan`) walks them directly.
 *
 * Vector layout (one fl_vec_t per field, children mirror the field's children):
 *   - len slots; valid[i] is 1 for a value, 0 for null (valid == NULL: none null
 *     yet; the first null allocates it). A required field never has nulls.
 *   - fixed-width kinds keep values in data, stride fl_type_width(kind):
 *       boolean uint8_t (0/1); int, date int32_t; long, time, timestamp*,
 *       timestamp_ns* int64_t; float; double; decimal __int128 (unscaled, host
 *       order, any precision up to 38); uuid 16 bytes big-endian; fixed(L) L bytes.
 *     A null slot still occupies its stride (zero-filled).
 *   - string and binary: offsets[len + 1] (uint32_t, offsets[0] = 0) into bytes.
 *   - struct: children[i] has exactly len slots (a null struct appends a null to
 *     every child, whatever its own nullability).
 *   - list: offsets[len + 1] into children[0] (the element); map: offsets into
 *     children[0] (key, required) and children[1] (value), which have equal length.
 * All memory is owned by the vector; vectors are not thread-safe, one thread
 * at a time per vector. Allocation failure aborts (fl_malloc), but the byte
 * size of a vector tree is cheap to ask (fl_vec_bytes) so writers can bound it. */
#ifndef FL_FORMAT_COLUMN_H
#define FL_FORMAT_COLUMN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/err.h"

typedef enum fl_type_kind {
    FL_TYPE_BOOLEAN = 1,
    FL_TYPE_INT,
    FL_TYPE_LONG,
    FL_TYPE_FLOAT,
    FL_TYPE_DOUBLE,
    FL_TYPE_DECIMAL,        /* precision 1..38, scale 0..precision */
    FL_TYPE_DATE,           /* days since 1970-01-01 */
    FL_TYPE_TIME,           /* microseconds since midnight */
    FL_TYPE_TIMESTAMP,      /* microseconds since epoch, no zone */
    FL_TYPE_TIMESTAMPTZ,    /* microseconds since epoch, UTC */
    FL_TYPE_TIMESTAMP_NS,
    FL_TYPE_TIMESTAMPTZ_NS,
    FL_TYPE_STRING,
    FL_TYPE_UUID,
    FL_TYPE_FIXED,          /* length > 0 */
    FL_TYPE_BINARY,
    FL_TYPE_STRUCT,
    FL_TYPE_LIST,
    FL_TYPE_MAP,
} fl_type_kind_t;

/* A field: a node of a schema tree. The root of a schema is a STRUCT with
 * id 0 and name "table" whose children are the top-level columns. */
typedef struct fl_field {
    int32_t id;                 /* Iceberg field id (> 0 except the root); -1 = unknown */
    char *name;                 /* owned */
    bool required;
    fl_type_kind_t kind;
    int32_t precision, scale;   /* DECIMAL */
    int32_t length;             /* FIXED */
    struct fl_field *children;  /* owned: STRUCT fields; LIST 1 (element); MAP 2 (key, value) */
    uint32_t n_children;
} fl_field_t;

/* Bytes per value of a fixed-width kind (boolean 1, ..., decimal 16, uuid 16),
 * or 0 for string/binary/nested. For FIXED pass the field: use fl_field_width. */
size_t fl_type_width(fl_type_kind_t kind);
size_t fl_field_width(const fl_field_t *f);
bool fl_type_is_nested(fl_type_kind_t kind);
/* Iceberg's name for a primitive kind ("long", "timestamptz", "decimal" ...). */
const char *fl_type_name(fl_type_kind_t kind);

/* Field helpers. fl_field_set fills f (name copied, no children). */
void fl_field_set(fl_field_t *f, int32_t id, const char *name, bool required,
                  fl_type_kind_t kind);
/* Append a zeroed child to a STRUCT/LIST/MAP field and return it. */
fl_field_t *fl_field_add_child(fl_field_t *f);
/* Deep copy; free with fl_field_free. */
void fl_field_copy(fl_field_t *dst, const fl_field_t *src);
/* Free what f owns (recursively) and zero it. NULL-safe. */
void fl_field_free(fl_field_t *f);
/* Depth-first search by id in f's subtree (f included); NULL if absent. */
const fl_field_t *fl_field_find(const fl_field_t *f, int32_t id);
/* Structural equality including ids and names. */
bool fl_field_eq(const fl_field_t *a, const fl_field_t *b);
/* Leaf (primitive) fields in depth-first order; out[] gets up to cap pointers.
 * Returns the total count. */
size_t fl_field_leaves(const fl_field_t *f, const fl_field_t **out, size_t cap);

typedef struct fl_vec {
    const fl_field_t *field;    /* borrowed; must outlive the vector */
    size_t len, cap;            /* slots, allocated slots */
    uint8_t *valid;             /* NULL or cap bytes, 1 = value present */
    size_t null_count;
    unsigned char *data;        /* fixed-width values, cap * width */
    uint32_t *offsets;          /* string/binary/list/map: cap + 1 */
    unsigned char *bytes;       /* string/binary payload */
    size_t bytes_len, bytes_cap;
    struct fl_vec *children;    /* STRUCT n_children, LIST 1, MAP 2 */
    uint32_t n_children;
} fl_vec_t;

/* Initialise an empty vector tree for field (and its children). */
void fl_vec_init(fl_vec_t *v, const fl_field_t *field);
/* Free everything (recursively) and zero v. NULL-safe. */
void fl_vec_free(fl_vec_t *v);
/* Empty the tree (len 0 everywhere), keeping the memory for reuse. */
void fl_vec_clear(fl_vec_t *v);
/* Make room for n more slots at this level (children are not touched). */
void fl_vec_reserve(fl_vec_t *v, size_t n);
/* Bytes of memory the tree's values take (len-based, not capacity). */
size_t fl_vec_bytes(const fl_vec_t *v);

/* Appending. Each appends one slot at this level; types must match the field
 * kind (checked with assert-like aborts only in debug builds; the caller knows
 * the schema). Struct/list/map: see below. */
void fl_vec_append_null(fl_vec_t *v);   /* struct: nulls appended to every child */
void fl_vec_append_bool(fl_vec_t *v, bool x);
void fl_vec_append_i32(fl_vec_t *v, int32_t x);   /* int, date */
void fl_vec_append_i64(fl_vec_t *v, int64_t x);   /* long, time, timestamp* */
void fl_vec_append_f32(fl_vec_t *v, float x);
void fl_vec_append_f64(fl_vec_t *v, double x);
void fl_vec_append_i128(fl_vec_t *v, __int128 x); /* decimal unscaled */
/* string, binary (any n); uuid (n = 16); fixed (n = length) */
void fl_vec_append_bytes(fl_vec_t *v, const void *p, size_t n);
/* STRUCT: a present struct; then append exactly one slot to every child. */
void fl_vec_append_struct(fl_vec_t *v);
/* LIST/MAP: append the elements (or key and value pairs) to the children first,
 * then close the slot; the slot covers the child slots added since the last one. */
void fl_vec_end_list(fl_vec_t *v);

/* Append a deep copy of slot i of src (same field shape) to dst. */
void fl_vec_append_from(fl_vec_t *dst, const fl_vec_t *src, size_t i);
/* Append deep copies of slots rows[0..n) of src (same field shape, any order,
 * repeats allowed) to dst, column by column: the bulk form of
 * fl_vec_append_from, for splitting a batch by partition. */
void fl_vec_take(fl_vec_t *dst, const fl_vec_t *src, const uint32_t *rows, size_t n);

/* Reading helpers. */
static inline bool fl_vec_is_null(const fl_vec_t *v, size_t i)
{ return v->valid && !v->valid[i]; }
static inline int32_t fl_vec_i32(const fl_vec_t *v, size_t i) { return ((const int32_t *)v->data)[i]; }
static inline int64_t fl_vec_i64(const fl_vec_t *v, size_t i) { return ((const int64_t *)v->data)[i]; }
static inline float fl_vec_f32(const fl_vec_t *v, size_t i) { return ((const float *)v->data)[i]; }
static inline double fl_vec_f64(const fl_vec_t *v, size_t i) { return ((const double *)v->data)[i]; }
static inline bool fl_vec_bool(const fl_vec_t *v, size_t i) { return v->data[i] != 0; }
static inline __int128 fl_vec_i128(const fl_vec_t *v, size_t i)
{ __int128 x; __builtin_memcpy(&x, v->data + i * 16, 16); return x; }
/* string/binary: the value's bytes; uuid/fixed: the value's bytes too. */
fl_slice_t fl_vec_bytes_at(const fl_vec_t *v, size_t i);
/* LIST/MAP: child range [*begin, *end) of slot i. */
static inline void fl_vec_list_range(const fl_vec_t *v, size_t i, size_t *begin, size_t *end)
{ *begin = v->offsets[i]; *end = v->offsets[i + 1]; }

/* Deep equality of the values of a and b (same shape required; floats compared
 * bitwise except that every NaN equals every NaN). Tests and fuzzing. */
bool fl_vec_eq(const fl_vec_t *a, const fl_vec_t *b);

/* Append slot i of v as JSON (Iceberg's JSON single-value forms, with
 * structs as objects keyed by name, lists as arrays, maps as objects when the
 * key is a string and [{"key":..,"value":..}] otherwise; binary/fixed as hex,
 * timestamps ISO-8601 with microseconds (tz ones with "+00:00"), decimals as
 * strings). Used by `floe scan` and tests. */
fl_err_t fl_vec_json_append(const fl_vec_t *v, size_t i, fl_buf_t *out);

/* Per-column metrics of one data file, as Iceberg manifests carry them
 * (reference/iceberg.md §3.5): keyed by leaf field id; bounds are Iceberg
 * single-value binary serializations, already truncated, owned. */
typedef struct fl_col_metrics {
    int32_t field_id;
    bool has_column_size, has_value_count, has_null_count, has_nan_count;
    int64_t column_size, value_count, null_count, nan_count;
    bool has_lower, has_upper;
    fl_buf_t lower, upper;      /* owned bytes (may be empty, e.g. "" lower bound) */
} fl_col_metrics_t;

void fl_col_metrics_free(fl_col_metrics_t *m, size_t n); /* frees each and the array */

#endif
