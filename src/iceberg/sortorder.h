/* Iceberg sort orders (reference/iceberg.md §2.5) bound to a schema, and the
 * row orders compaction writes with (iceberg/rewrite.h, strategies sort and
 * z-order): a permutation of a batch's rows.
 *
 * - Lexicographic: rows ordered by the order's fields in turn, each the
 *   transform of its source column, asc or desc, nulls first or last; floats
 *   in Iceberg's total order (-NaN < -inf < ... < -0 < 0 < ... < inf < NaN);
 *   strings and binary by unsigned bytes. Equal rows keep their input order.
 * - Z-order: rows ordered by the bit-interleave of the 8-byte order-preserving
 *   forms of the same (transformed) columns, as Iceberg's ZOrderByteUtils:
 *   integers widened to 64 bits with the sign bit flipped, floating point as
 *   IEEE bits made order-preserving (all bits flipped when negative, else the
 *   sign bit), strings/binary/fixed/uuid their first 8 bytes zero-padded,
 *   booleans 0x00/0xFF, decimals the unscaled value saturated to 64 bits,
 *   null all zeros (first). Direction and null order do not apply.
 *   (Java shifts a double's bits by 31 instead of 63 there, which misorders
 *   negative values; this is the intended order.)
 *
 * Pure functions over borrowed values; any thread. */
#ifndef FL_ICEBERG_SORTORDER_H
#define FL_ICEBERG_SORTORDER_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/err.h"
#include "format/column.h"
#include "iceberg/transform.h"

typedef struct fl_sort_field {
    int32_t source_id;
    fl_ice_transform_t transform;
    bool desc;
    bool nulls_first;
} fl_sort_field_t;

typedef struct fl_sort_order {
    int32_t order_id;
    fl_sort_field_t *fields;     /* owned */
    size_t n;                    /* 0: unsorted */
} fl_sort_order_t;

/* The default sort order of table metadata md (default-sort-order-id in
 * sort-orders), bound to schema: every source must be a primitive column
 * reached through structs only, and its transform must accept its type.
 * FL_ERR_INVALID with err otherwise. A missing or empty order gives n = 0. */
fl_err_t fl_sort_order_from_metadata(json_t *md, const fl_field_t *schema, fl_sort_order_t *out, char *err,
                                     size_t errlen);
void fl_sort_order_free(fl_sort_order_t *o);

/* perm[0..batch->len) = batch's rows in the order o gives (zorder: the
 * z-order of o's columns). batch is a STRUCT root shaped like the schema o was
 * bound to; a sort column missing from it reads as null. FL_ERR_INVALID when
 * a transform cannot apply (err says which). */
fl_err_t fl_sort_permutation(const fl_sort_order_t *o, bool zorder, const fl_vec_t *batch, uint32_t *perm,
                             char *err, size_t errlen);

/* Iceberg ZOrderByteUtils: the 8-byte order-preserving form of v. */
void fl_zorder_bytes(const fl_ice_value_t *v, unsigned char out[8]);
/* Interleave n columns of 8 bytes each (cols[c * 8 ..]) bit by bit, most
 * significant first, column 0's bit first: out gets n * 8 bytes. */
void fl_zorder_interleave(const unsigned char *cols, size_t n, unsigned char *out);

#endif
