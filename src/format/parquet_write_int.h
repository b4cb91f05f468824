/* Internals of the Parquet writer exposed for unit tests: the RLE/bit-packed
 * hybrid encoder and decimal bytes. Not for other callers. */
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

/* Minimal big-endian two's complement of x (1..16 bytes) into out; returns the length. */
size_t fl_pqw_decimal_be(__int128 x, unsigned char out[16]);

#endif
