/* Parquet page codecs over zlib, libzstd, snappy-c and liblz4. */
#include "format/codec.h"
#include <lz4.h>
#include <pthread.h>
#include <snappy-c.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>

/* zstd contexts are kept per thread and freed when the thread exits (threads
 * that come and go, e.g. maintenance workers, must not leak them). */
static pthread_key_t cctx_key, dctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static void free_cctx(void *p) { ZSTD_freeCCtx(p); }
static void free_dctx(void *p) { ZSTD_freeDCtx(p); }
static void ctx_keys(void)
{
    pthread_key_create(&cctx_key, free_cctx);
    pthread_key_create(&dctx_key, free_dctx);
}

fl_err_t fl_codec_parse(const char *name, fl_codec_t *out)
{
    static const struct { const char *name; fl_codec_t c; } names[] = {
        { "zstd", FL_CODEC_ZSTD }, { "snappy", FL_CODEC_SNAPPY }, { "gzip", FL_CODEC_GZIP },
        { "lz4_raw", FL_CODEC_LZ4_RAW }, { "lz4", FL_CODEC_LZ4_RAW }, { "none", FL_CODEC_NONE },
        { "uncompressed", FL_CODEC_NONE },
    };
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(name, names[i].name)) { *out = names[i].c; return FL_OK; }
    return FL_ERR_INVALID;
}

const char *fl_codec_name(fl_codec_t c)
{
    switch (c) {
    case FL_CODEC_NONE: return "none";
    case FL_CODEC_SNAPPY: return "snappy";
    case FL_CODEC_GZIP: return "gzip";
    case FL_CODEC_LZ4: return "lz4";
    case FL_CODEC_ZSTD: return "zstd";
    case FL_CODEC_LZ4_RAW: return "lz4_raw";
    }
    return "unknown";
}

fl_err_t fl_codec_compress(fl_codec_t c, int level, const void *p, size_t n, fl_buf_t *out)
{
    size_t bound;
    fl_err_t e;
    switch (c) {
    case FL_CODEC_NONE:
        return fl_buf_add(out, p, n);
    case FL_CODEC_ZSTD: {
        bound = ZSTD_compressBound(n);
        if ((e = fl_buf_reserve(out, bound))) return e;
        static __thread ZSTD_CCtx *cctx;
        if (!cctx) {
            if (!(cctx = ZSTD_createCCtx())) return FL_ERR_NOMEM;
            pthread_once(&ctx_once, ctx_keys);
            pthread_setspecific(cctx_key, cctx);
        }
        /* The level's own parameters, but matches of 6 bytes at least: with the 5 of levels 2-4,
         * the 4-byte length before every PLAIN BYTE_ARRAY value (repeating at each value) keeps
         * the match finder busy on short matches; 6 compresses such pages ~4x faster for ~0.6%
         * more bytes (bench/README.md, "Why 250 MiB/s..."); level 1 already looks for longer ones. */
        int lv = level ? level : 3;
        ZSTD_CCtx_reset(cctx, ZSTD_reset_parameters);
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, lv);
        if (lv >= 2 && lv <= 4) ZSTD_CCtx_setParameter(cctx, ZSTD_c_minMatch, 6);
        size_t r = ZSTD_compress2(cctx, out->ptr + out->len, bound, p, n);
        if (ZSTD_isError(r)) return FL_ERR_INVALID;
        out->len += r;
        break;
    }
    case FL_CODEC_SNAPPY: {
        bound = snappy_max_compressed_length(n);
        if ((e = fl_buf_reserve(out, bound))) return e;
        size_t r = bound;
        if (snappy_compress(p, n, out->ptr + out->len, &r) != SNAPPY_OK) return FL_ERR_INVALID;
        out->len += r;
        break;
    }
    case FL_CODEC_GZIP: {
        z_stream z;
        memset(&z, 0, sizeof z);
        if (deflateInit2(&z, level ? level : 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
            return FL_ERR_NOMEM;
        bound = deflateBound(&z, n) + 32;
        if ((e = fl_buf_reserve(out, bound))) { deflateEnd(&z); return e; }
        z.next_in = (Bytef *)p;
        z.avail_in = (uInt)n;
        z.next_out = (Bytef *)out->ptr + out->len;
        z.avail_out = (uInt)bound;
        int r = deflate(&z, Z_FINISH);
        size_t produced = bound - z.avail_out;
        deflateEnd(&z);
        if (r != Z_STREAM_END) return FL_ERR_INVALID;
        out->len += produced;
        break;
    }
    case FL_CODEC_LZ4_RAW: {
        if (n > LZ4_MAX_INPUT_SIZE) return FL_ERR_TOO_LARGE;
        bound = (size_t)LZ4_compressBound((int)n);
        if ((e = fl_buf_reserve(out, bound))) return e;
        int r = LZ4_compress_default(p, out->ptr + out->len, (int)n, (int)bound);
        if (r <= 0) return FL_ERR_INVALID;
        out->len += (size_t)r;
        break;
    }
    default:
        return FL_ERR_INVALID;
    }
    out->ptr[out->len] = 0;
    return FL_OK;
}

/* Hadoop's LZ4 framing: blocks of [4-byte BE raw length][4-byte BE compressed
 * length][LZ4 block]. Some old writers used plain LZ4 blocks instead; try that
 * when the framing does not fit. */
static fl_err_t lz4_hadoop(const unsigned char *p, size_t n, unsigned char *dst, size_t raw_len)
{
    size_t in = 0, outp = 0;
    while (in + 8 <= n) {
        uint32_t raw = (uint32_t)p[in] << 24 | (uint32_t)p[in + 1] << 16 | (uint32_t)p[in + 2] << 8 | p[in + 3];
        uint32_t comp = (uint32_t)p[in + 4] << 24 | (uint32_t)p[in + 5] << 16 | (uint32_t)p[in + 6] << 8 | p[in + 7];
        in += 8;
        if (comp > n - in || raw > raw_len - outp) goto plain;
        int r = LZ4_decompress_safe((const char *)p + in, (char *)dst + outp, (int)comp, (int)raw);
        if (r < 0 || (uint32_t)r != raw) goto plain;
        in += comp;
        outp += raw;
    }
    if (in == n && outp == raw_len) return FL_OK;
plain:;
    int r = LZ4_decompress_safe((const char *)p, (char *)dst, (int)n, (int)raw_len);
    return r >= 0 && (size_t)r == raw_len ? FL_OK : FL_ERR_INVALID;
}

fl_err_t fl_codec_decompress(fl_codec_t c, const void *p, size_t n, void *dst, size_t raw_len)
{
    switch (c) {
    case FL_CODEC_NONE:
        if (n != raw_len) return FL_ERR_INVALID;
        if (n) memcpy(dst, p, n);
        return FL_OK;
    case FL_CODEC_ZSTD: {
        static __thread ZSTD_DCtx *dctx;
        if (!dctx) {
            if (!(dctx = ZSTD_createDCtx())) return FL_ERR_NOMEM;
            pthread_once(&ctx_once, ctx_keys);
            pthread_setspecific(dctx_key, dctx);
        }
        size_t r = ZSTD_decompressDCtx(dctx, dst, raw_len, p, n);
        return !ZSTD_isError(r) && r == raw_len ? FL_OK : FL_ERR_INVALID;
    }
    case FL_CODEC_SNAPPY: {
        size_t len;
        if (snappy_uncompressed_length(p, n, &len) != SNAPPY_OK || len != raw_len)
            return FL_ERR_INVALID;
        size_t out = raw_len;
        return snappy_uncompress(p, n, dst, &out) == SNAPPY_OK && out == raw_len ? FL_OK
                                                                                 : FL_ERR_INVALID;
    }
    case FL_CODEC_GZIP: {
        z_stream z;
        memset(&z, 0, sizeof z);
        if (inflateInit2(&z, 15 + 32) != Z_OK) return FL_ERR_NOMEM; /* gzip or zlib header */
        z.next_in = (Bytef *)p;
        z.avail_in = (uInt)n;
        z.next_out = dst;
        z.avail_out = (uInt)raw_len;
        int r = inflate(&z, Z_FINISH);
        size_t got = raw_len - z.avail_out;
        inflateEnd(&z);
        return r == Z_STREAM_END && got == raw_len ? FL_OK : FL_ERR_INVALID;
    }
    case FL_CODEC_LZ4_RAW: {
        if (n > INT32_MAX || raw_len > INT32_MAX) return FL_ERR_TOO_LARGE;
        int r = LZ4_decompress_safe(p, dst, (int)n, (int)raw_len);
        return r >= 0 && (size_t)r == raw_len ? FL_OK : FL_ERR_INVALID;
    }
    case FL_CODEC_LZ4:
        if (n > INT32_MAX || raw_len > INT32_MAX) return FL_ERR_TOO_LARGE;
        return lz4_hadoop(p, n, dst, raw_len);
    }
    return FL_ERR_INVALID;
}
