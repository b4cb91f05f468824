/* Internals of the Parquet writer exposed for unit tests: the RLE/bit-packed
 * hybrid encoder and Iceberg's bound truncation. Not for other callers. */
#ifndef FL_FORMAT_PARQUET_WRITE_INT_H
#define FL_FORMAT_PARQUET_WRITE_INT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/err.h"

/* Append the RLE/bit-packed hybrid encoding of v[0..n) at bit width bw (0..32),
 * without length prefix or bit-width byte. */
fl_err_t fl_pqw_rle_encode(fl_buf_t *out, const uint32_t *v, size_t n, int bw);

/* Iceberg truncate(len) bounds (reference/iceberg.md §3.5). Strings count
 * code points, binaries bytes; len < 0 = no truncation. The upper bound
 * functions return false when no upper bound exists (then out is untouched). */
fl_err_t fl_pqw_trunc_lower(bool is_string, const void *p, size_t n, int len, fl_buf_t *out);
bool fl_pqw_trunc_upper(bool is_string, const void *p, size_t n, int len, fl_buf_t *out);

/* Minimal big-endian two's complement of x (1..16 bytes) into out; returns the length. */
size_t fl_pqw_decimal_be(__int128 x, unsigned char out[16]);

#endif
