/* Thrift compact protocol: a writer into an fl_buf_t and a reader over a bounded
 * byte slice, enough for Parquet metadata (no messages, no services).
 *
 * Both sides keep a stack of last field ids, one per open struct, for the
 * field-id delta encoding. The writer has a sticky error: calls after a failure
 * do nothing and fl_thrift_writer_err() reports the first failure. The reader
 * checks every length and count against the bytes that remain, so a malformed
 * input costs at most O(input) memory and returns FL_ERR_INVALID; nesting
 * (structs, lists, maps, skipped values) is capped at FL_THRIFT_MAX_DEPTH.
 * Neither side allocates; both are single-threaded objects on the caller's stack. */
#ifndef FL_FORMAT_THRIFT_H
#define FL_FORMAT_THRIFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/limits.h"
#include "base/err.h"


/* Compact-protocol type ids (the low nibble of a field header). In a field
 * header a bool's value is the type (TRUE/FALSE); the reader reports both as
 * FL_TC_BOOL and hands the value to fl_thrift_read_bool(). */
enum {
    FL_TC_STOP = 0,
    FL_TC_BOOL = 1,   /* = BOOLEAN_TRUE on the wire */
    FL_TC_FALSE = 2,  /* BOOLEAN_FALSE on the wire; never returned by the reader */
    FL_TC_BYTE = 3,
    FL_TC_I16 = 4,
    FL_TC_I32 = 5,
    FL_TC_I64 = 6,
    FL_TC_DOUBLE = 7,
    FL_TC_BINARY = 8,
    FL_TC_LIST = 9,
    FL_TC_SET = 10,
    FL_TC_MAP = 11,
    FL_TC_STRUCT = 12,
};

typedef struct fl_thrift_writer {
    fl_buf_t *out;
    int depth;
    int16_t last_id[FL_THRIFT_MAX_DEPTH];
    fl_err_t err;
} fl_thrift_writer_t;

typedef struct fl_thrift_reader {
    const uint8_t *p, *end;
    int depth;
    int16_t last_id[FL_THRIFT_MAX_DEPTH];
    bool has_bool;   /* a field header carried a bool value not yet read */
    bool bool_val;
} fl_thrift_reader_t;

/* zigzag helpers (exposed for tests) */
static inline uint64_t fl_zigzag64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t fl_unzigzag64(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* ---- writer: appends to out (which the caller owns and frees) ---- */
void fl_thrift_writer_init(fl_thrift_writer_t *w, fl_buf_t *out);
/* First error of any call so far (FL_OK if none); also fails if structs are still open. */
fl_err_t fl_thrift_writer_err(const fl_thrift_writer_t *w);

void fl_thrift_write_varint(fl_thrift_writer_t *w, uint64_t v);
void fl_thrift_write_byte(fl_thrift_writer_t *w, int8_t v);
void fl_thrift_write_i16(fl_thrift_writer_t *w, int16_t v);
void fl_thrift_write_i32(fl_thrift_writer_t *w, int32_t v);
void fl_thrift_write_i64(fl_thrift_writer_t *w, int64_t v);
void fl_thrift_write_double(fl_thrift_writer_t *w, double v);
void fl_thrift_write_binary(fl_thrift_writer_t *w, const void *p, size_t n);
/* A bool outside a field header (a list element): one byte, 1 = true, 2 = false. */
void fl_thrift_write_bool(fl_thrift_writer_t *w, bool v);

/* Open a struct (also the top-level one): pushes a fresh last-field-id. */
void fl_thrift_write_struct_begin(fl_thrift_writer_t *w);
/* Write the STOP byte and pop. */
void fl_thrift_write_struct_end(fl_thrift_writer_t *w);
/* A field header: short form (delta 1..15) when it fits, else long form. type is
 * not FL_TC_BOOL — use fl_thrift_write_field_bool, which carries the value. */
void fl_thrift_write_field(fl_thrift_writer_t *w, int type, int16_t id);
void fl_thrift_write_field_bool(fl_thrift_writer_t *w, int16_t id, bool v);
/* List or set header: short form below 15 elements, else long form. */
void fl_thrift_write_list_begin(fl_thrift_writer_t *w, int elem_type, uint32_t n);
/* Map header (for completeness; Parquet does not use maps). */
void fl_thrift_write_map_begin(fl_thrift_writer_t *w, int key_type, int val_type, uint32_t n);

/* Field shortcuts: header then value. */
void fl_thrift_write_i32_field(fl_thrift_writer_t *w, int16_t id, int32_t v);
void fl_thrift_write_i64_field(fl_thrift_writer_t *w, int16_t id, int64_t v);
void fl_thrift_write_binary_field(fl_thrift_writer_t *w, int16_t id, const void *p, size_t n);

/* ---- reader: over [p, p+n), which must outlive the reader ---- */
void fl_thrift_reader_init(fl_thrift_reader_t *r, const void *p, size_t n);
static inline size_t fl_thrift_reader_left(const fl_thrift_reader_t *r) { return (size_t)(r->end - r->p); }

fl_err_t fl_thrift_read_varint(fl_thrift_reader_t *r, uint64_t *v);
fl_err_t fl_thrift_read_byte(fl_thrift_reader_t *r, int8_t *v);
fl_err_t fl_thrift_read_i16(fl_thrift_reader_t *r, int16_t *v);
fl_err_t fl_thrift_read_i32(fl_thrift_reader_t *r, int32_t *v);
fl_err_t fl_thrift_read_i64(fl_thrift_reader_t *r, int64_t *v);
fl_err_t fl_thrift_read_double(fl_thrift_reader_t *r, double *v);
/* Binary/string: *p points into the input (not copied, not NUL-terminated). */
fl_err_t fl_thrift_read_binary(fl_thrift_reader_t *r, const uint8_t **p, size_t *n);
/* A bool: the value of the last field header if it was a bool field, else one byte. */
fl_err_t fl_thrift_read_bool(fl_thrift_reader_t *r, bool *v);

fl_err_t fl_thrift_read_struct_begin(fl_thrift_reader_t *r);
fl_err_t fl_thrift_read_struct_end(fl_thrift_reader_t *r);
/* Next field header of the open struct: *type is FL_TC_STOP at the end of the
 * struct (then call fl_thrift_read_struct_end), FL_TC_BOOL for either bool. */
fl_err_t fl_thrift_read_field(fl_thrift_reader_t *r, int *type, int16_t *id);
/* List or set header; *n is already checked against the remaining bytes. */
fl_err_t fl_thrift_read_list_begin(fl_thrift_reader_t *r, int *elem_type, uint32_t *n);
fl_err_t fl_thrift_read_map_begin(fl_thrift_reader_t *r, int *key_type, int *val_type, uint32_t *n);
/* Skip one value of the given type (nested values included, depth-capped). */
fl_err_t fl_thrift_skip(fl_thrift_reader_t *r, int type);

#endif
