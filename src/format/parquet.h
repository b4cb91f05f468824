/* Parquet files: a streaming writer and a row-group-at-a-time reader over the
 * column vectors of format/column.h, with Iceberg's conventions (a field id on
 * every schema element, 3-level lists, key_value maps; reference/iceberg.md §4).
 *
 * Writer: fl_pq_writer_write() takes batches (a STRUCT vector shaped like the
 * schema root), shreds them into definition/repetition levels and values per
 * leaf column, encodes pages (PLAIN, or RLE_DICTIONARY with PLAIN fallback once
 * the dictionary passes dict_page_bytes), compresses them (codec.h) and emits a
 * row group through the sink once the buffered bytes reach row_group_bytes.
 * Its memory is bounded by about row_group_bytes plus one page per column.
 * Column statistics (min/max/null_count) go in the footer and, as Iceberg
 * metrics (truncated bounds), to the caller at close.
 *
 * Reader: opens a file through a positional-read source, decodes the footer
 * with every length checked against the file size and caps in base/limits.h,
 * resolves the caller's expected schema against the file's columns by field
 * id (or, for files without ids, through an Iceberg name mapping), and yields
 * one row group at a time as a STRUCT vector shaped like the expected schema.
 * Fields the file lacks come back all-null; int->long, float->double and
 * decimal widening are promoted. It reads data page v1 and v2, PLAIN,
 * PLAIN_DICTIONARY/RLE_DICTIONARY, RLE (booleans), DELTA_BINARY_PACKED,
 * DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT, INT96
 * timestamps and every codec of codec.h. Malformed input of any kind gives
 * FL_ERR_INVALID (or FL_ERR_TOO_LARGE past a cap), never a crash.
 *
 * Objects are single-threaded: one thread at a time per writer/reader. */
#ifndef FL_FORMAT_PARQUET_H
#define FL_FORMAT_PARQUET_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/err.h"
#include "format/codec.h"
#include "format/column.h"

/* ---- writer ---- */

/* Where the bytes go, in order. write returns FL_OK or an error that aborts the file. */
typedef struct fl_pq_sink {
    fl_err_t (*write)(void *ctx, const void *p, size_t n);
    void *ctx;
} fl_pq_sink_t;

typedef struct fl_pq_write_opts {
    fl_codec_t codec;            /* default FL_CODEC_ZSTD */
    int level;                   /* codec level; 0 = codec default (zstd 3) */
    size_t page_bytes;           /* target uncompressed data page size; default 1 MiB */
    size_t row_group_bytes;      /* target row group size (buffered, encoded); default 128 MiB */
    size_t dict_page_bytes;      /* dictionary fallback threshold per column chunk; default 2 MiB */
    bool dictionary;             /* default true */
    int stats_truncate;          /* Iceberg bound truncation length; default 16; -1 = full */
    const char *created_by;      /* footer created_by; default "floe version ..." */
    const fl_slice_t *kv;        /* extra footer key/values: kv[2i] key, kv[2i+1] value */
    size_t n_kv;                 /* number of pairs */
} fl_pq_write_opts_t;

/* Defaults as documented above. */
void fl_pq_write_opts_default(fl_pq_write_opts_t *o);

typedef struct fl_pq_writer fl_pq_writer_t;

/* What a finished file is, for an Iceberg data_file entry. */
typedef struct fl_pq_file_info {
    int64_t record_count;
    int64_t file_size;           /* bytes written through the sink */
    int64_t *split_offsets;      /* row-group start offsets, ascending; owned */
    size_t n_split_offsets;
    fl_col_metrics_t *metrics;   /* one per leaf column (field id order of the schema); owned */
    size_t n_metrics;
} fl_pq_file_info_t;
void fl_pq_file_info_free(fl_pq_file_info_t *fi);

/* Start a file for schema (a STRUCT root; borrowed, must outlive the writer).
 * Writes the leading magic. o may be NULL for defaults. */
fl_err_t fl_pq_writer_open(fl_pq_writer_t **w, const fl_field_t *schema,
                           const fl_pq_write_opts_t *o, fl_pq_sink_t sink);
/* Append the rows of batch (a STRUCT vector for the schema root, no nulls at the
 * root). Rows are copied into the writer's column buffers; batch can be cleared
 * and reused right after. May emit pages and row groups through the sink. */
fl_err_t fl_pq_writer_write(fl_pq_writer_t *w, const fl_vec_t *batch);
/* Rows written so far, and bytes written through the sink plus buffered
 * (an estimate of the final file size, for rolling files by size). */
int64_t fl_pq_writer_rows(const fl_pq_writer_t *w);
int64_t fl_pq_writer_bytes(const fl_pq_writer_t *w);
/* Bytes held in memory for the row group being built (encoded pages, the
 * page being filled, dictionaries): what closing the file would free. */
int64_t fl_pq_writer_buffered(const fl_pq_writer_t *w);
/* Flush the last row group and the footer; fill *info (may be NULL). */
fl_err_t fl_pq_writer_close(fl_pq_writer_t *w, fl_pq_file_info_t *info);
/* Free (after close, or to abandon a file). NULL-safe. */
void fl_pq_writer_free(fl_pq_writer_t *w);

/* ---- reader ---- */

/* Positional reads of the file: read exactly n bytes at off, or an error. */
typedef struct fl_pq_source {
    fl_err_t (*read_at)(void *ctx, uint64_t off, void *p, size_t n);
    void *ctx;
    uint64_t size;               /* file size in bytes */
} fl_pq_source_t;

/* Sources over memory (p must outlive the reader) and over a file descriptor. */
fl_pq_source_t fl_pq_source_mem(const void *p, size_t n);
fl_pq_source_t fl_pq_source_fd(int fd, uint64_t size);

typedef struct fl_pq_reader fl_pq_reader_t;

/* Open: reads and validates the footer. FL_ERR_INVALID for a non-Parquet or
 * malformed file. */
fl_err_t fl_pq_reader_open(fl_pq_reader_t **r, fl_pq_source_t src);
/* The file's own schema as a field tree (ids from the file, -1 where absent;
 * types from physical + logical/converted types). Borrowed from the reader. */
const fl_field_t *fl_pq_reader_file_schema(const fl_pq_reader_t *r);
/* Assign field ids to a file without them from an Iceberg name mapping (the
 * JSON text of schema.name-mapping.default). Call before fl_pq_reader_project. */
fl_err_t fl_pq_reader_name_mapping(fl_pq_reader_t *r, fl_slice_t mapping_json);
/* Choose what to read: the expected schema (a STRUCT root, borrowed, must
 * outlive the reader), e.g. the table schema or a projection of it. Without
 * this call the file schema is read whole. FL_ERR_INVALID when a field maps
 * to a file column of an incompatible type. */
fl_err_t fl_pq_reader_project(fl_pq_reader_t *r, const fl_field_t *expected);
int64_t fl_pq_reader_num_rows(const fl_pq_reader_t *r);
uint32_t fl_pq_reader_num_row_groups(const fl_pq_reader_t *r);
/* Footer key/value metadata value for key, FL_ERR_NOT_FOUND if absent. */
fl_err_t fl_pq_reader_kv(const fl_pq_reader_t *r, const char *key, fl_slice_t *value);
/* Read the next row group into out (cleared first; initialised by the reader
 * on the first call, so pass a zeroed fl_vec_t and free it with fl_vec_free).
 * *done is set after the last row group. */
fl_err_t fl_pq_reader_next(fl_pq_reader_t *r, fl_vec_t *out, bool *done);
/* Error detail of the last failure (static text or reader-owned). */
const char *fl_pq_reader_error(const fl_pq_reader_t *r);
void fl_pq_reader_free(fl_pq_reader_t *r);

/* Iceberg truncate(len) bounds (reference/iceberg.md §3.5), as the writer's
 * metrics use them and as iceberg/metrics_config.c applies a table's modes.
 * Strings count code points, binaries bytes; len < 0 = no truncation. The
 * lower bound replaces out's contents (fails only past out's cap); the upper
 * bound function returns false when no upper bound exists (out untouched). */
fl_err_t fl_pq_trunc_lower(bool is_string, const void *p, size_t n, int len, fl_buf_t *out);
bool fl_pq_trunc_upper(bool is_string, const void *p, size_t n, int len, fl_buf_t *out);

#endif
