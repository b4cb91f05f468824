/* Parquet metadata structures (parquet-format's parquet.thrift, the subset floe
 * writes and reads) with Thrift compact encode/decode.
 *
 * Decoded structures own every allocation (strings and binaries are copied and
 * NUL-terminated); free a FileMetaData with fl_pq_file_meta_free and a
 * PageHeader with fl_pq_page_header_free. Fields the reader does not know are
 * skipped, so files from newer writers still decode; known fields with the
 * wrong wire type and missing required fields are FL_ERR_INVALID. Plain data,
 * no shared state: any thread may use its own objects. */
#ifndef FL_FORMAT_PARQUET_META_H
#define FL_FORMAT_PARQUET_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/err.h"

/* enum Type */
enum { FL_PQ_BOOLEAN = 0, FL_PQ_INT32, FL_PQ_INT64, FL_PQ_INT96, FL_PQ_FLOAT, FL_PQ_DOUBLE,
       FL_PQ_BYTE_ARRAY, FL_PQ_FIXED_LEN_BYTE_ARRAY };
/* enum FieldRepetitionType */
enum { FL_PQ_REQUIRED = 0, FL_PQ_OPTIONAL = 1, FL_PQ_REPEATED = 2 };
/* enum CompressionCodec */
enum { FL_PQ_UNCOMPRESSED = 0, FL_PQ_SNAPPY, FL_PQ_GZIP, FL_PQ_LZO, FL_PQ_BROTLI, FL_PQ_LZ4,
       FL_PQ_ZSTD, FL_PQ_LZ4_RAW };
/* enum PageType */
enum { FL_PQ_DATA_PAGE = 0, FL_PQ_INDEX_PAGE, FL_PQ_DICTIONARY_PAGE, FL_PQ_DATA_PAGE_V2 };
/* enum Encoding (the ones floe names) */
enum { FL_PQ_ENC_PLAIN = 0, FL_PQ_ENC_PLAIN_DICTIONARY = 2, FL_PQ_ENC_RLE = 3,
       FL_PQ_ENC_BIT_PACKED = 4, FL_PQ_ENC_DELTA_BINARY_PACKED = 5,
       FL_PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6, FL_PQ_ENC_DELTA_BYTE_ARRAY = 7,
       FL_PQ_ENC_RLE_DICTIONARY = 8, FL_PQ_ENC_BYTE_STREAM_SPLIT = 9 };

/* Owned bytes, NUL-terminated; ptr == NULL means absent. */
typedef struct fl_pq_bin {
    char *ptr;
    size_t len;
} fl_pq_bin_t;

typedef struct fl_pq_kv {
    fl_pq_bin_t key;    /* required */
    fl_pq_bin_t value;  /* optional */
} fl_pq_kv_t;

typedef struct fl_pq_stats {
    fl_pq_bin_t max, min;              /* deprecated signed-order fields 1, 2 */
    bool has_null_count, has_distinct_count;
    int64_t null_count, distinct_count;
    fl_pq_bin_t max_value, min_value;  /* fields 5, 6 */
} fl_pq_stats_t;

/* LogicalType union member; the values are the union's field ids. */
enum { FL_PQ_LT_NONE = 0, FL_PQ_LT_STRING = 1, FL_PQ_LT_MAP = 2, FL_PQ_LT_LIST = 3,
       FL_PQ_LT_ENUM = 4, FL_PQ_LT_DECIMAL = 5, FL_PQ_LT_DATE = 6, FL_PQ_LT_TIME = 7,
       FL_PQ_LT_TIMESTAMP = 8, FL_PQ_LT_INTEGER = 10, FL_PQ_LT_UNKNOWN = 11,
       FL_PQ_LT_JSON = 12, FL_PQ_LT_BSON = 13, FL_PQ_LT_UUID = 14, FL_PQ_LT_FLOAT16 = 15 };
/* TimeUnit union member */
enum { FL_PQ_UNIT_MILLIS = 1, FL_PQ_UNIT_MICROS = 2, FL_PQ_UNIT_NANOS = 3 };

typedef struct fl_pq_logical {
    int kind;                    /* FL_PQ_LT_*; NONE = absent or a kind floe does not know */
    int32_t scale, precision;    /* DECIMAL */
    bool utc;                    /* TIME, TIMESTAMP: isAdjustedToUTC */
    int unit;                    /* TIME, TIMESTAMP: FL_PQ_UNIT_* */
    int8_t bit_width;            /* INTEGER */
    bool is_signed;              /* INTEGER */
} fl_pq_logical_t;

/* Presence bits of SchemaElement's optional fields */
enum { FL_PQ_SE_TYPE = 1 << 0, FL_PQ_SE_TYPE_LENGTH = 1 << 1, FL_PQ_SE_REPETITION = 1 << 2,
       FL_PQ_SE_NUM_CHILDREN = 1 << 3, FL_PQ_SE_CONVERTED = 1 << 4, FL_PQ_SE_SCALE = 1 << 5,
       FL_PQ_SE_PRECISION = 1 << 6, FL_PQ_SE_FIELD_ID = 1 << 7 };

typedef struct fl_pq_schema_elem {
    fl_pq_bin_t name;         /* required */
    unsigned has;             /* FL_PQ_SE_* bits for the optional fields below */
    int32_t type, type_length, repetition_type, num_children, converted_type;
    int32_t scale, precision, field_id;
    fl_pq_logical_t logical;  /* kind NONE = absent */
} fl_pq_schema_elem_t;

typedef struct fl_pq_column_meta {
    int32_t type;
    int32_t *encodings;
    uint32_t n_encodings;
    fl_pq_bin_t *path;        /* path_in_schema */
    uint32_t n_path;
    int32_t codec;
    int64_t num_values, total_uncompressed_size, total_compressed_size;
    fl_pq_kv_t *kv;
    uint32_t n_kv;
    int64_t data_page_offset;
    bool has_dictionary_page_offset;
    int64_t dictionary_page_offset;
    bool has_stats;
    fl_pq_stats_t stats;
} fl_pq_column_meta_t;

typedef struct fl_pq_column_chunk {
    fl_pq_bin_t file_path;    /* optional */
    int64_t file_offset;
    bool has_meta;
    fl_pq_column_meta_t meta;
} fl_pq_column_chunk_t;

typedef struct fl_pq_row_group {
    fl_pq_column_chunk_t *columns;
    uint32_t n_columns;
    int64_t total_byte_size, num_rows;
    bool has_file_offset, has_total_compressed_size;
    int64_t file_offset, total_compressed_size;
} fl_pq_row_group_t;

typedef struct fl_pq_file_meta {
    int32_t version;
    fl_pq_schema_elem_t *schema;
    uint32_t n_schema;
    int64_t num_rows;
    fl_pq_row_group_t *row_groups;
    uint32_t n_row_groups;
    fl_pq_kv_t *kv;
    uint32_t n_kv;
    fl_pq_bin_t created_by;   /* optional */
    /* column_orders (field 7): number of ColumnOrder entries, 0 = absent. The
     * encoder writes every entry as TYPE_ORDER (TypeDefinedOrder), which tells
     * readers that Statistics.min_value/max_value are valid; the decoder counts
     * the entries. */
    uint32_t n_column_orders;
} fl_pq_file_meta_t;

typedef struct fl_pq_data_page_header {
    int32_t num_values, encoding, definition_level_encoding, repetition_level_encoding;
    bool has_stats;
    fl_pq_stats_t stats;
} fl_pq_data_page_header_t;

typedef struct fl_pq_dict_page_header {
    int32_t num_values, encoding;
    bool has_is_sorted, is_sorted;
} fl_pq_dict_page_header_t;

typedef struct fl_pq_data_page_header_v2 {
    int32_t num_values, num_nulls, num_rows, encoding;
    int32_t definition_levels_byte_length, repetition_levels_byte_length;
    bool has_is_compressed, is_compressed;  /* absent means true */
    bool has_stats;
    fl_pq_stats_t stats;
} fl_pq_data_page_header_v2_t;

typedef struct fl_pq_page_header {
    int32_t type, uncompressed_page_size, compressed_page_size;
    bool has_crc;
    int32_t crc;
    bool has_data_page, has_dict_page, has_data_page_v2;
    fl_pq_data_page_header_t data_page;
    fl_pq_dict_page_header_t dict_page;
    fl_pq_data_page_header_v2_t data_page_v2;
} fl_pq_page_header_t;

/* Decode a FileMetaData from exactly n bytes (trailing bytes are an error).
 * On success *out owns its allocations (fl_pq_file_meta_free); on failure
 * *out is left zeroed and nothing leaks. */
fl_err_t fl_pq_file_meta_decode(const void *p, size_t n, fl_pq_file_meta_t *out);
/* Append the compact encoding of m to out. */
fl_err_t fl_pq_file_meta_encode(const fl_pq_file_meta_t *m, fl_buf_t *out);
/* Free everything m owns and zero it. NULL-safe. */
void fl_pq_file_meta_free(fl_pq_file_meta_t *m);
/* Deep equality (tests and fuzzing). */
bool fl_pq_file_meta_eq(const fl_pq_file_meta_t *a, const fl_pq_file_meta_t *b);

/* Decode one PageHeader from the start of [p, p+n); *consumed (optional) gets
 * its length, after which the page data begins. Ownership as for FileMetaData. */
fl_err_t fl_pq_page_header_decode(const void *p, size_t n, fl_pq_page_header_t *out,
                                  size_t *consumed);
fl_err_t fl_pq_page_header_encode(const fl_pq_page_header_t *h, fl_buf_t *out);
void fl_pq_page_header_free(fl_pq_page_header_t *h);
bool fl_pq_page_header_eq(const fl_pq_page_header_t *a, const fl_pq_page_header_t *b);

#endif
