/* Block compression codecs of Parquet pages: none, snappy, gzip (zlib's gzip
 * framing), zstd, lz4_raw (LZ4 block), and LZ4 (Hadoop framing, read only).
 * Values equal parquet.thrift's CompressionCodec. Stateless; any thread. */
#ifndef FL_FORMAT_CODEC_H
#define FL_FORMAT_CODEC_H
#include <stddef.h>
#include "base/buf.h"
#include "base/err.h"

typedef enum fl_codec {
    FL_CODEC_NONE = 0,
    FL_CODEC_SNAPPY = 1,
    FL_CODEC_GZIP = 2,
    FL_CODEC_LZ4 = 5,      /* deprecated Hadoop-framed LZ4: decompress only */
    FL_CODEC_ZSTD = 6,
    FL_CODEC_LZ4_RAW = 7,
} fl_codec_t;

/* "zstd", "snappy", "gzip", "lz4_raw" ("lz4" accepted as lz4_raw on write, as
 * Iceberg's write.parquet.compression-codec does), "none"/"uncompressed";
 * case-insensitive. FL_ERR_INVALID otherwise. */
fl_err_t fl_codec_parse(const char *name, fl_codec_t *out);
const char *fl_codec_name(fl_codec_t c);

/* Append the compressed form of [p, p+n) to out. level 0 = codec default. */
fl_err_t fl_codec_compress(fl_codec_t c, int level, const void *p, size_t n, fl_buf_t *out);
/* Decompress [p, p+n) into dst, which must be exactly raw_len bytes: the
 * result must fill it exactly (FL_ERR_INVALID otherwise, or for corrupt input).
 * raw_len comes from the page header; callers cap it first. */
fl_err_t fl_codec_decompress(fl_codec_t c, const void *p, size_t n, void *dst, size_t raw_len);

#endif
