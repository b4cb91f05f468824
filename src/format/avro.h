/* Avro binary encoding and the object-container file format.
 *
 * Three layers, none of which knows a schema:
 *  - encoder helpers appending Avro primitives to an fl_buf_t;
 *  - a decoder over a bounded slice reading the same primitives, every length and
 *    count checked against the bytes left and the FL_AVRO_MAX_* caps (malformed input
 *    gives FL_ERR_INVALID / FL_ERR_TOO_LARGE, never a crash or an unbounded allocation);
 *  - a container writer (header, metadata map with arbitrary keys, random sync marker,
 *    blocks compressed with null / deflate / snappy / zstandard) and reader (header,
 *    metadata lookup, blocks yielded as decompressed bytes + record count).
 * Callers encode and decode records themselves, since they know the schema (Iceberg
 * manifests, manifest lists). All objects here are plain values owned by the caller;
 * any thread may use them, one thread at a time per object. */
#ifndef FL_FORMAT_AVRO_H
#define FL_FORMAT_AVRO_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/err.h"

#define FL_AVRO_SYNC_LEN 16
#define FL_AVRO_DEFAULT_BLOCK_BYTES (64 * 1024) /* flush threshold, as Java's sync interval */

/* ---- encoder: each appends to b; FL_ERR_TOO_LARGE when b's cap is hit ---- */

fl_err_t fl_avro_put_long(fl_buf_t *b, int64_t v);   /* zig-zag varint */
fl_err_t fl_avro_put_int(fl_buf_t *b, int32_t v);    /* zig-zag varint */
fl_err_t fl_avro_put_bool(fl_buf_t *b, bool v);
fl_err_t fl_avro_put_float(fl_buf_t *b, float v);    /* 4 bytes little-endian IEEE */
fl_err_t fl_avro_put_double(fl_buf_t *b, double v);  /* 8 bytes little-endian IEEE */
fl_err_t fl_avro_put_bytes(fl_buf_t *b, const void *p, size_t n); /* long length + bytes */
fl_err_t fl_avro_put_string(fl_buf_t *b, fl_slice_t s);           /* same as bytes */
fl_err_t fl_avro_put_cstr(fl_buf_t *b, const char *s);
fl_err_t fl_avro_put_fixed(fl_buf_t *b, const void *p, size_t n); /* raw bytes */
/* Union branch index (0-based), to be followed by the branch's value. */
fl_err_t fl_avro_put_union(fl_buf_t *b, int64_t branch);
/* Array/map block header: count items follow; count 0 terminates the array/map. */
fl_err_t fl_avro_put_block_count(fl_buf_t *b, int64_t count);

/* ---- decoder over a bounded slice; the slice must outlive the decoder ---- */

typedef struct fl_avro_dec {
    const unsigned char *p;
    const unsigned char *end;
} fl_avro_dec_t;

void fl_avro_dec_init(fl_avro_dec_t *d, fl_slice_t s);
static inline size_t fl_avro_dec_left(const fl_avro_dec_t *d) { return (size_t)(d->end - d->p); }

/* Each returns FL_OK and advances, or FL_ERR_INVALID (truncated, overlong varint, value
 * out of range) / FL_ERR_TOO_LARGE (over a cap) without a useful position afterwards. */
fl_err_t fl_avro_get_long(fl_avro_dec_t *d, int64_t *v);
fl_err_t fl_avro_get_int(fl_avro_dec_t *d, int32_t *v);
fl_err_t fl_avro_get_bool(fl_avro_dec_t *d, bool *v);     /* byte must be 0 or 1 */
fl_err_t fl_avro_get_float(fl_avro_dec_t *d, float *v);
fl_err_t fl_avro_get_double(fl_avro_dec_t *d, double *v);
/* bytes/string: *out points into the decoder's slice (no copy, not NUL-terminated). */
fl_err_t fl_avro_get_bytes(fl_avro_dec_t *d, fl_slice_t *out);
fl_err_t fl_avro_get_string(fl_avro_dec_t *d, fl_slice_t *out);
fl_err_t fl_avro_get_fixed(fl_avro_dec_t *d, size_t n, fl_slice_t *out);
/* Union branch index, checked to be < nbranches. */
fl_err_t fl_avro_get_union(fl_avro_dec_t *d, int64_t nbranches, int64_t *branch);
/* Array/map block header: *count items follow (0 = end). A negative count on the wire
 * (count + byte size form) is returned as its absolute value, the size skipped over.
 * The count is capped by FL_AVRO_MAX_ITEMS and by the bytes left (each item must take at
 * least one byte, which holds for every type but null and empty records). */
fl_err_t fl_avro_get_block_count(fl_avro_dec_t *d, int64_t *count);
fl_err_t fl_avro_skip(fl_avro_dec_t *d, size_t n);

/* ---- codecs ---- */

typedef enum fl_avro_codec {
    FL_AVRO_CODEC_NULL = 0,
    FL_AVRO_CODEC_DEFLATE,  /* raw RFC 1951; Iceberg's "gzip" setting */
    FL_AVRO_CODEC_SNAPPY,   /* snappy block + 4-byte big-endian CRC32 of the raw block */
    FL_AVRO_CODEC_ZSTD,     /* "zstandard" */
} fl_avro_codec_t;

/* Avro name of a codec ("null", "deflate", "snappy", "zstandard"). */
const char *fl_avro_codec_name(fl_avro_codec_t c);
/* Codec from its Avro name; FL_ERR_INVALID if unknown or unsupported. */
fl_err_t fl_avro_codec_parse(fl_slice_t name, fl_avro_codec_t *out);

/* ---- container writer ---- */

/* One user metadata entry for the header (values are Avro bytes, usually text). */
typedef struct fl_avro_meta {
    const char *key;
    fl_slice_t value;
} fl_avro_meta_t;

typedef struct fl_avro_writer {
    fl_buf_t *out;              /* whole file bytes; caller-owned, its cap bounds the file */
    fl_avro_codec_t codec;
    int level;                  /* deflate/zstd level; 0 = library default */
    size_t block_bytes;         /* flush when a block's raw bytes reach this */
    unsigned char sync[FL_AVRO_SYNC_LEN];
    fl_buf_t block;             /* raw records of the current block */
    fl_buf_t z;                 /* compression scratch */
    int64_t block_count;        /* records in the current block */
    int64_t records;            /* records written in total */
} fl_avro_writer_t;

/* Start a container file in out (appended to): magic, metadata map with avro.schema =
 * schema_json, avro.codec, then the nmeta user entries (which must not use those keys),
 * then a fresh random sync marker. w owns nothing of the arguments afterwards. */
fl_err_t fl_avro_writer_open(fl_avro_writer_t *w, fl_buf_t *out, fl_avro_codec_t codec,
                             const char *schema_json, const fl_avro_meta_t *meta, size_t nmeta);
/* The buffer to encode the next record into; call fl_avro_writer_end_record after. */
fl_buf_t *fl_avro_writer_record(fl_avro_writer_t *w);
/* Count the record just encoded; flushes the block once it reaches block_bytes. */
fl_err_t fl_avro_writer_end_record(fl_avro_writer_t *w);
/* Append one already-encoded record. */
fl_err_t fl_avro_writer_append(fl_avro_writer_t *w, const void *rec, size_t n);
/* Write the pending block, if any. */
fl_err_t fl_avro_writer_flush(fl_avro_writer_t *w);
/* Flush and release the writer's memory; out then holds the complete file. */
fl_err_t fl_avro_writer_finish(fl_avro_writer_t *w);
/* Release without flushing (safe after finish or a failed open). */
void fl_avro_writer_free(fl_avro_writer_t *w);

/* ---- container reader ---- */

typedef struct fl_avro_kv {
    fl_slice_t key;
    fl_slice_t value;
} fl_avro_kv_t;

typedef struct fl_avro_reader {
    fl_avro_dec_t d;            /* position in the file */
    fl_avro_codec_t codec;
    unsigned char sync[FL_AVRO_SYNC_LEN];
    fl_slice_t schema;          /* avro.schema value (points into the file) */
    fl_avro_kv_t *meta;         /* header metadata, pointing into the file */
    size_t nmeta;
    fl_buf_t block;             /* decompressed block */
    int64_t blocks;             /* blocks read so far */
    fl_err_t failed;            /* first error of fl_avro_reader_next, repeated after */
} fl_avro_reader_t;

/* Parse the header of a container file held in file (which must outlive r).
 * FL_ERR_INVALID if malformed, no avro.schema, or an unsupported codec. */
fl_err_t fl_avro_reader_open(fl_avro_reader_t *r, fl_slice_t file);
/* Header metadata value for key; FL_ERR_NOT_FOUND if absent. */
fl_err_t fl_avro_reader_meta(const fl_avro_reader_t *r, const char *key, fl_slice_t *value);
/* Next block: *data is its decompressed bytes (valid until the next call or close) and
 * *count its record count. At end of file *done is set and FL_OK returned. A wrong sync
 * marker, truncation or bad compressed data give FL_ERR_INVALID (FL_ERR_DIGEST for a snappy
 * CRC mismatch, FL_ERR_TOO_LARGE past a cap); the error is repeated by later calls. */
fl_err_t fl_avro_reader_next(fl_avro_reader_t *r, fl_slice_t *data, int64_t *count, bool *done);
void fl_avro_reader_close(fl_avro_reader_t *r);

#endif
