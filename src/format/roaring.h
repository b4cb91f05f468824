/* Portable Roaring bitmaps, read only: the serialization of the Roaring
 * format specification (RoaringFormatSpec) in its 64-bit "portable" form, as
 * Iceberg's deletion vectors store row positions (iceberg/puffin.h):
 *
 *   u64 LE  number of 32-bit bitmaps
 *   per bitmap, keys strictly ascending:
 *     u32 LE  key (the high 32 bits of its values)
 *     a 32-bit portable bitmap: cookie 12346 + u32 container count, or
 *       cookie 12347 | (count - 1) << 16 + a run-flag bitset; per container
 *       u16 key + u16 (cardinality - 1); u32 offsets (12346, or 12347 with
 *       >= 4 containers); then the containers in order: arrays (<= 4096
 *       sorted u16), bitmaps (8192 bytes) or runs (u16 count + (start,
 *       length - 1) pairs).
 *
 * fl_roaring64_parse checks everything (sizes against the input, ascending
 * keys, values and runs, bitmap cardinalities, offsets that match the layout,
 * nothing left over) and fails with FL_ERR_INVALID and a sentence in err; the
 * parsed bitmap borrows the input bytes (keep them alive). Values are unsigned;
 * Iceberg positions are below 2^63, so a key with the top bit set is refused.
 * Plain values; any thread, one at a time per object. */
#ifndef FL_FORMAT_ROARING_H
#define FL_FORMAT_ROARING_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/err.h"
#include "base/buf.h"

typedef struct fl_roaring_container {
    uint64_t base;              /* high 48 bits of its values (key64 << 32 | key16 << 16) */
    uint8_t type;               /* 0 array, 1 bitmap, 2 run */
    uint32_t card;              /* values held (1..65536) */
    uint32_t n;                 /* array: values; run: runs */
    const uint8_t *data;        /* borrowed: the container's payload in the input */
} fl_roaring_container_t;

typedef struct fl_roaring64 {
    fl_roaring_container_t *c;  /* owned; ascending by base */
    size_t n;
    uint64_t cardinality;
} fl_roaring64_t;

fl_err_t fl_roaring64_parse(fl_slice_t in, fl_roaring64_t *out, char *err, size_t errlen);
bool fl_roaring64_contains(const fl_roaring64_t *r, uint64_t x);
/* The values below limit, ascending, appended to *v (a malloc'd array of *n,
 * grown as needed). */
void fl_roaring64_values(const fl_roaring64_t *r, uint64_t limit, int64_t **v, size_t *n);
void fl_roaring64_free(fl_roaring64_t *r);

#endif
