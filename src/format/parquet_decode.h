/* Parquet value and level encodings (parquet-format Encodings.md), decode side:
 * the RLE/bit-packed hybrid, legacy BIT_PACKED levels, DELTA_BINARY_PACKED and
 * BYTE_STREAM_SPLIT. Pure functions over bounded byte ranges: every run length,
 * bit width and varint is checked against the bytes that remain; malformed
 * input gives FL_ERR_INVALID. No allocation; any thread. */
#ifndef FL_FORMAT_PARQUET_DECODE_H
#define FL_FORMAT_PARQUET_DECODE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/err.h"

/* Unpack count little-endian bit-packed values of width bw (0..32) from p,
 * which must hold at least (count * bw + 7) / 8 bytes (nbytes). */
void fl_pq_unpack32(const uint8_t *p, size_t nbytes, int bw, uint32_t *out, size_t count);
void fl_pq_unpack8(const uint8_t *p, size_t nbytes, int bw, uint8_t *out, size_t count);

/* RLE/bit-packed hybrid without a length prefix: decode exactly count values
 * of width bw from [p, p+n). *used (optional) gets the bytes consumed (up to
 * the end of the last run touched). The 8-bit form needs bw <= 8 and, when
 * max >= 0, rejects values above max. */
fl_err_t fl_pq_rle_decode32(const uint8_t *p, size_t n, int bw, uint32_t *out, size_t count,
                            size_t *used);
fl_err_t fl_pq_rle_decode8(const uint8_t *p, size_t n, int bw, int max, uint8_t *out,
                           size_t count, size_t *used);

/* Deprecated BIT_PACKED levels: MSB-first, (count * bw + 7) / 8 bytes. */
fl_err_t fl_pq_bitpacked_msb8(const uint8_t *p, size_t n, int bw, int max, uint8_t *out,
                              size_t count, size_t *used);

/* Bit width needed for values 0..max. */
int fl_pq_bit_width(uint32_t max);

/* DELTA_BINARY_PACKED: reads the header's total value count into *total
 * (FL_ERR_INVALID if above cap), then decodes that many values into out
 * (wrapping 64-bit arithmetic; INT32 columns truncate). *used gets the bytes
 * consumed, so what follows (DELTA_LENGTH_BYTE_ARRAY data) can be found.
 * With out == NULL only the header is read (*used undefined). */
fl_err_t fl_pq_delta_decode(const uint8_t *p, size_t n, int64_t *out, size_t cap,
                            size_t *total, size_t *used);

/* BYTE_STREAM_SPLIT: count values of width w from p (count * w bytes) into
 * out (count * w bytes, values contiguous). */
void fl_pq_bss_decode(const uint8_t *p, size_t count, size_t w, uint8_t *out);

/* Level scans over n one-byte levels: how many are >= v; the same with
 * out[i] = (p[i] >= v) written as 0/1; whether any entry repeats at level l
 * (1..max_rep) with a definition level below rep_def[l]. */
size_t fl_pq_count_ge(const uint8_t *p, size_t n, uint8_t v);
size_t fl_pq_mask_ge(const uint8_t *p, size_t n, uint8_t v, uint8_t *out);
bool fl_pq_levels_disagree(const uint8_t *rep, const uint8_t *def, size_t n, const int16_t *rep_def,
                           int max_rep);

/* Unsigned LEB128 varint of at most 10 bytes; FL_ERR_INVALID if truncated or too long. */
fl_err_t fl_pq_uvarint(const uint8_t **p, const uint8_t *end, uint64_t *out);

#endif
