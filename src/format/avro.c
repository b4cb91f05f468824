/* Avro binary encoding and object-container files (Avro 1.x specification).
 *
 * The writer keeps the raw records of the current block in w->block and, on flush,
 * compresses them into w->z and appends count, size, data and the sync marker to the
 * caller's output buffer. The reader works over one in-memory file: header fields and the
 * metadata map are slices into it; each block is checked (count and size against the caps
 * and the bytes left, the trailing sync marker) and decompressed into r->block with the
 * output capped at FL_AVRO_MAX_BLOCK_BYTES. A null-codec block is returned in place. */
#include "format/avro.h"
#include "base/checksum.h"
#include "base/limits.h"
#include "base/mem.h"

#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <zlib.h>
#include <zstd.h>

static const unsigned char magic[4] = { 'O', 'b', 'j', 1 };

/* ---------------------------------------------------------------- encoder */

fl_err_t fl_avro_put_long(fl_buf_t *b, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    unsigned char tmp[10];
    size_t n = 0;
    while (z > 0x7f) {
        tmp[n++] = (unsigned char)(z | 0x80);
        z >>= 7;
    }
    tmp[n++] = (unsigned char)z;
    return fl_buf_add(b, tmp, n);
}

fl_err_t fl_avro_put_int(fl_buf_t *b, int32_t v) { return fl_avro_put_long(b, v); }

fl_err_t fl_avro_put_bool(fl_buf_t *b, bool v) { return fl_buf_addc(b, v ? 1 : 0); }

static fl_err_t put_le(fl_buf_t *b, uint64_t u, size_t n)
{
    unsigned char tmp[8];
    for (size_t i = 0; i < n; i++)
        tmp[i] = (unsigned char)(u >> (8 * i));
    return fl_buf_add(b, tmp, n);
}

fl_err_t fl_avro_put_float(fl_buf_t *b, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    return put_le(b, u, 4);
}

fl_err_t fl_avro_put_double(fl_buf_t *b, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    return put_le(b, u, 8);
}

fl_err_t fl_avro_put_bytes(fl_buf_t *b, const void *p, size_t n)
{
    fl_err_t e = fl_avro_put_long(b, (int64_t)n);
    return e ? e : fl_buf_add(b, p, n);
}

fl_err_t fl_avro_put_string(fl_buf_t *b, fl_slice_t s) { return fl_avro_put_bytes(b, s.ptr, s.len); }

fl_err_t fl_avro_put_cstr(fl_buf_t *b, const char *s) { return fl_avro_put_bytes(b, s, strlen(s)); }

fl_err_t fl_avro_put_fixed(fl_buf_t *b, const void *p, size_t n) { return fl_buf_add(b, p, n); }

fl_err_t fl_avro_put_union(fl_buf_t *b, int64_t branch) { return fl_avro_put_long(b, branch); }

fl_err_t fl_avro_put_block_count(fl_buf_t *b, int64_t count) { return fl_avro_put_long(b, count); }

/* ---------------------------------------------------------------- decoder */

void fl_avro_dec_init(fl_avro_dec_t *d, fl_slice_t s)
{
    static const unsigned char empty[1];
    d->p = s.ptr ? (const unsigned char *)s.ptr : empty;
    d->end = d->p + (s.ptr ? s.len : 0);
}

fl_err_t fl_avro_get_long(fl_avro_dec_t *d, int64_t *v)
{
    uint64_t z = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (d->p >= d->end)
            return FL_ERR_INVALID;
        unsigned char c = *d->p++;
        if (shift == 63 && (c & 0x7e)) /* 10th byte may carry only one bit */
            return FL_ERR_INVALID;
        z |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
            return FL_OK;
        }
    }
    return FL_ERR_INVALID;
}

fl_err_t fl_avro_get_int(fl_avro_dec_t *d, int32_t *v)
{
    int64_t l;
    fl_err_t e = fl_avro_get_long(d, &l);
    if (e)
        return e;
    if (l < INT32_MIN || l > INT32_MAX)
        return FL_ERR_INVALID;
    *v = (int32_t)l;
    return FL_OK;
}

fl_err_t fl_avro_get_bool(fl_avro_dec_t *d, bool *v)
{
    if (d->p >= d->end || *d->p > 1)
        return FL_ERR_INVALID;
    *v = *d->p++ == 1;
    return FL_OK;
}

static fl_err_t get_le(fl_avro_dec_t *d, uint64_t *u, size_t n)
{
    if (fl_avro_dec_left(d) < n)
        return FL_ERR_INVALID;
    *u = 0;
    for (size_t i = 0; i < n; i++)
        *u |= (uint64_t)d->p[i] << (8 * i);
    d->p += n;
    return FL_OK;
}

fl_err_t fl_avro_get_float(fl_avro_dec_t *d, float *v)
{
    uint64_t u;
    fl_err_t e = get_le(d, &u, 4);
    if (!e) {
        uint32_t w = (uint32_t)u;
        memcpy(v, &w, 4);
    }
    return e;
}

fl_err_t fl_avro_get_double(fl_avro_dec_t *d, double *v)
{
    uint64_t u;
    fl_err_t e = get_le(d, &u, 8);
    if (!e)
        memcpy(v, &u, 8);
    return e;
}

fl_err_t fl_avro_get_bytes(fl_avro_dec_t *d, fl_slice_t *out)
{
    int64_t n;
    fl_err_t e = fl_avro_get_long(d, &n);
    if (e)
        return e;
    if (n < 0)
        return FL_ERR_INVALID;
    if (n > FL_AVRO_MAX_BYTES)
        return FL_ERR_TOO_LARGE;
    return fl_avro_get_fixed(d, (size_t)n, out);
}

fl_err_t fl_avro_get_string(fl_avro_dec_t *d, fl_slice_t *out) { return fl_avro_get_bytes(d, out); }

fl_err_t fl_avro_get_fixed(fl_avro_dec_t *d, size_t n, fl_slice_t *out)
{
    if (fl_avro_dec_left(d) < n)
        return FL_ERR_INVALID;
    *out = fl_slice((const char *)d->p, n);
    d->p += n;
    return FL_OK;
}

fl_err_t fl_avro_get_union(fl_avro_dec_t *d, int64_t nbranches, int64_t *branch)
{
    fl_err_t e = fl_avro_get_long(d, branch);
    if (e)
        return e;
    return *branch >= 0 && *branch < nbranches ? FL_OK : FL_ERR_INVALID;
}

fl_err_t fl_avro_get_block_count(fl_avro_dec_t *d, int64_t *count)
{
    int64_t c, size;
    fl_err_t e = fl_avro_get_long(d, &c);
    if (e)
        return e;
    if (c < 0) {
        if (c == INT64_MIN)
            return FL_ERR_INVALID;
        c = -c;
        if ((e = fl_avro_get_long(d, &size)))
            return e;
        if (size < 0 || (uint64_t)size > fl_avro_dec_left(d))
            return FL_ERR_INVALID;
    }
    if (c > FL_AVRO_MAX_ITEMS)
        return FL_ERR_TOO_LARGE;
    if ((uint64_t)c > fl_avro_dec_left(d))
        return FL_ERR_INVALID;
    *count = c;
    return FL_OK;
}

fl_err_t fl_avro_skip(fl_avro_dec_t *d, size_t n)
{
    if (fl_avro_dec_left(d) < n)
        return FL_ERR_INVALID;
    d->p += n;
    return FL_OK;
}

/* ---------------------------------------------------------------- codecs */

static const char *const codec_names[] = { "null", "deflate", "snappy", "zstandard" };

const char *fl_avro_codec_name(fl_avro_codec_t c)
{
    return (unsigned)c < sizeof codec_names / sizeof *codec_names ? codec_names[c] : "?";
}

fl_err_t fl_avro_codec_parse(fl_slice_t name, fl_avro_codec_t *out)
{
    for (size_t i = 0; i < sizeof codec_names / sizeof *codec_names; i++)
        if (fl_slice_eq(name, codec_names[i])) {
            *out = (fl_avro_codec_t)i;
            return FL_OK;
        }
    return FL_ERR_INVALID;
}

/* Compress in[0..n) into z (reset first). */
static fl_err_t compress_block(fl_avro_codec_t codec, int level, const char *in, size_t n, fl_buf_t *z)
{
    fl_err_t e = FL_OK;
    fl_buf_reset(z);
    switch (codec) {
    case FL_AVRO_CODEC_NULL:
        return fl_buf_add(z, in, n);
    case FL_AVRO_CODEC_DEFLATE: {
        z_stream s;
        memset(&s, 0, sizeof s);
        if (deflateInit2(&s, level ? level : Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8,
                         Z_DEFAULT_STRATEGY) != Z_OK)
            return FL_ERR_NOMEM;
        size_t bound = deflateBound(&s, (uLong)n);
        if ((e = fl_buf_reserve(z, bound)))
            goto deflate_out;
        s.next_in = (Bytef *)(uintptr_t)in;
        s.avail_in = (uInt)n;
        s.next_out = (Bytef *)z->ptr;
        s.avail_out = (uInt)bound;
        if (deflate(&s, Z_FINISH) != Z_STREAM_END) {
            e = FL_ERR_INVALID;
            goto deflate_out;
        }
        z->len = s.total_out;
    deflate_out:
        deflateEnd(&s);
        return e;
    }
    case FL_AVRO_CODEC_SNAPPY: {
        size_t bound = snappy_max_compressed_length(n);
        if ((e = fl_buf_reserve(z, bound + 4)))
            return e;
        size_t len = bound;
        if (snappy_compress(in, n, z->ptr, &len) != SNAPPY_OK)
            return FL_ERR_INVALID;
        uint32_t crc = fl_crc32(0, in, n);
        unsigned char be[4] = { (unsigned char)(crc >> 24), (unsigned char)(crc >> 16),
                                (unsigned char)(crc >> 8), (unsigned char)crc };
        memcpy(z->ptr + len, be, 4);
        z->len = len + 4;
        z->ptr[z->len] = 0;
        return FL_OK;
    }
    case FL_AVRO_CODEC_ZSTD: {
        size_t bound = ZSTD_compressBound(n);
        if ((e = fl_buf_reserve(z, bound)))
            return e;
        size_t r = ZSTD_compress(z->ptr, bound, in, n, level ? level : 3);
        if (ZSTD_isError(r))
            return FL_ERR_INVALID;
        z->len = r;
        z->ptr[z->len] = 0;
        return FL_OK;
    }
    }
    return FL_ERR_INVALID;
}

/* Decompress in[0..n) into out (reset first), never past FL_AVRO_MAX_BLOCK_BYTES. */
static fl_err_t decompress_block(fl_avro_codec_t codec, const char *in, size_t n, fl_buf_t *out)
{
    fl_err_t e = FL_OK;
    fl_buf_reset(out);
    switch (codec) {
    case FL_AVRO_CODEC_NULL:
        return fl_buf_add(out, in, n);
    case FL_AVRO_CODEC_DEFLATE: {
        z_stream s;
        memset(&s, 0, sizeof s);
        if (inflateInit2(&s, -15) != Z_OK)
            return FL_ERR_NOMEM;
        s.next_in = (Bytef *)(uintptr_t)in;
        s.avail_in = (uInt)n;
        for (;;) {
            size_t chunk = n * 4 + 1024;
            if (chunk > 1 << 20)
                chunk = 1 << 20;
            if (chunk > FL_AVRO_MAX_BLOCK_BYTES - out->len)
                chunk = FL_AVRO_MAX_BLOCK_BYTES - out->len;
            if (chunk == 0) {
                e = FL_ERR_TOO_LARGE;
                goto inflate_out;
            }
            if ((e = fl_buf_reserve(out, chunk)))
                goto inflate_out;
            size_t room = out->alloc - out->len - 1;
            if (out->len + room > FL_AVRO_MAX_BLOCK_BYTES)
                room = FL_AVRO_MAX_BLOCK_BYTES - out->len;
            if (room == 0) {
                e = FL_ERR_TOO_LARGE;
                goto inflate_out;
            }
            s.next_out = (Bytef *)out->ptr + out->len;
            s.avail_out = (uInt)room;
            int rc = inflate(&s, Z_NO_FLUSH);
            out->len += room - s.avail_out;
            out->ptr[out->len] = 0;
            if (rc == Z_STREAM_END)
                break;
            if (rc != Z_OK && rc != Z_BUF_ERROR) {
                e = FL_ERR_INVALID;
                goto inflate_out;
            }
            if (s.avail_out != 0) { /* input ran out before the end of the stream */
                e = FL_ERR_INVALID;
                goto inflate_out;
            }
        }
    inflate_out:
        inflateEnd(&s);
        return e;
    }
    case FL_AVRO_CODEC_SNAPPY: {
        if (n < 4)
            return FL_ERR_INVALID;
        size_t ulen;
        if (snappy_uncompressed_length(in, n - 4, &ulen) != SNAPPY_OK)
            return FL_ERR_INVALID;
        if (ulen > FL_AVRO_MAX_BLOCK_BYTES)
            return FL_ERR_TOO_LARGE;
        if ((e = fl_buf_reserve(out, ulen)))
            return e;
        if (snappy_uncompress(in, n - 4, out->ptr, &ulen) != SNAPPY_OK)
            return FL_ERR_INVALID;
        out->len = ulen;
        out->ptr[ulen] = 0;
        const unsigned char *c = (const unsigned char *)in + n - 4;
        uint32_t want = (uint32_t)c[0] << 24 | (uint32_t)c[1] << 16 | (uint32_t)c[2] << 8 | c[3];
        return fl_crc32(0, out->ptr, ulen) == want ? FL_OK : FL_ERR_DIGEST;
    }
    case FL_AVRO_CODEC_ZSTD: {
        ZSTD_DStream *ds = ZSTD_createDStream();
        if (!ds)
            return FL_ERR_NOMEM;
        ZSTD_inBuffer ib = { in, n, 0 };
        size_t last = 1;
        while (ib.pos < ib.size || last != 0) {
            size_t chunk = 64 * 1024;
            if (chunk > FL_AVRO_MAX_BLOCK_BYTES - out->len)
                chunk = FL_AVRO_MAX_BLOCK_BYTES - out->len;
            if (chunk == 0) {
                e = FL_ERR_TOO_LARGE;
                goto zstd_out;
            }
            if ((e = fl_buf_reserve(out, chunk)))
                goto zstd_out;
            size_t room = out->alloc - out->len - 1;
            if (out->len + room > FL_AVRO_MAX_BLOCK_BYTES)
                room = FL_AVRO_MAX_BLOCK_BYTES - out->len;
            if (room == 0) {
                e = FL_ERR_TOO_LARGE;
                goto zstd_out;
            }
            ZSTD_outBuffer ob = { out->ptr + out->len, room, 0 };
            size_t before = ib.pos;
            last = ZSTD_decompressStream(ds, &ob, &ib);
            if (ZSTD_isError(last)) {
                e = FL_ERR_INVALID;
                goto zstd_out;
            }
            out->len += ob.pos;
            out->ptr[out->len] = 0;
            /* no progress at all: truncated or stuck frame */
            if (ob.pos == 0 && ib.pos == before && last != 0) {
                e = FL_ERR_INVALID;
                goto zstd_out;
            }
        }
    zstd_out:
        ZSTD_freeDStream(ds);
        return e;
    }
    }
    return FL_ERR_INVALID;
}

/* ---------------------------------------------------------------- writer */

static fl_err_t put_meta(fl_buf_t *b, const char *key, fl_slice_t value)
{
    fl_err_t e = fl_avro_put_cstr(b, key);
    return e ? e : fl_avro_put_bytes(b, value.ptr, value.len);
}

fl_err_t fl_avro_writer_open(fl_avro_writer_t *w, fl_buf_t *out, fl_avro_codec_t codec,
                             const char *schema_json, const fl_avro_meta_t *meta, size_t nmeta)
{
    fl_err_t e;
    memset(w, 0, sizeof *w);
    w->out = out;
    w->codec = codec;
    w->block_bytes = FL_AVRO_DEFAULT_BLOCK_BYTES;
    fl_buf_init(&w->block, FL_AVRO_MAX_BLOCK_BYTES);
    fl_buf_init(&w->z, 0);
    if ((unsigned)codec > FL_AVRO_CODEC_ZSTD || !schema_json) {
        e = FL_ERR_INVALID;
        goto out;
    }
    for (size_t i = 0; i < nmeta; i++)
        if (!meta[i].key || !strcmp(meta[i].key, "avro.schema") || !strcmp(meta[i].key, "avro.codec")) {
            e = FL_ERR_INVALID;
            goto out;
        }
    if (getrandom(w->sync, sizeof w->sync, 0) != (ssize_t)sizeof w->sync) {
        e = FL_ERR_IO;
        goto out;
    }
    if ((e = fl_buf_add(out, magic, sizeof magic)) ||
        (e = fl_avro_put_block_count(out, (int64_t)nmeta + 2)) ||
        (e = put_meta(out, "avro.schema", fl_slice_cstr(schema_json))) ||
        (e = put_meta(out, "avro.codec", fl_slice_cstr(fl_avro_codec_name(codec)))))
        goto out;
    for (size_t i = 0; i < nmeta; i++)
        if ((e = put_meta(out, meta[i].key, meta[i].value)))
            goto out;
    if ((e = fl_avro_put_block_count(out, 0)) || (e = fl_buf_add(out, w->sync, sizeof w->sync)))
        goto out;
out:
    if (e)
        fl_avro_writer_free(w);
    return e;
}

fl_buf_t *fl_avro_writer_record(fl_avro_writer_t *w) { return &w->block; }

fl_err_t fl_avro_writer_end_record(fl_avro_writer_t *w)
{
    w->block_count++;
    w->records++;
    if (w->block.len >= w->block_bytes || w->block_count >= FL_AVRO_MAX_BLOCK_RECORDS)
        return fl_avro_writer_flush(w);
    return FL_OK;
}

fl_err_t fl_avro_writer_append(fl_avro_writer_t *w, const void *rec, size_t n)
{
    fl_err_t e = fl_buf_add(&w->block, rec, n);
    return e ? e : fl_avro_writer_end_record(w);
}

fl_err_t fl_avro_writer_flush(fl_avro_writer_t *w)
{
    fl_err_t e = FL_OK;
    if (w->block_count == 0)
        goto out;
    const fl_buf_t *data = &w->block;
    if (w->codec != FL_AVRO_CODEC_NULL) {
        if ((e = compress_block(w->codec, w->level, w->block.ptr, w->block.len, &w->z)))
            goto out;
        data = &w->z;
    }
    if ((e = fl_avro_put_long(w->out, w->block_count)) ||
        (e = fl_avro_put_long(w->out, (int64_t)data->len)) ||
        (e = fl_buf_add(w->out, data->ptr, data->len)) ||
        (e = fl_buf_add(w->out, w->sync, sizeof w->sync)))
        goto out;
    fl_buf_reset(&w->block);
    w->block_count = 0;
out:
    return e;
}

fl_err_t fl_avro_writer_finish(fl_avro_writer_t *w)
{
    fl_err_t e = fl_avro_writer_flush(w);
    fl_avro_writer_free(w);
    return e;
}

void fl_avro_writer_free(fl_avro_writer_t *w)
{
    fl_buf_free(&w->block);
    fl_buf_free(&w->z);
    w->block_count = 0;
}

/* ---------------------------------------------------------------- reader */

fl_err_t fl_avro_reader_open(fl_avro_reader_t *r, fl_slice_t file)
{
    fl_err_t e;
    fl_slice_t s;
    memset(r, 0, sizeof *r);
    fl_buf_init(&r->block, FL_AVRO_MAX_BLOCK_BYTES);
    fl_avro_dec_init(&r->d, file);
    if ((e = fl_avro_get_fixed(&r->d, sizeof magic, &s)))
        goto out;
    if (memcmp(s.ptr, magic, sizeof magic)) {
        e = FL_ERR_INVALID;
        goto out;
    }
    size_t alloc = 0;
    for (;;) {
        int64_t n;
        if ((e = fl_avro_get_block_count(&r->d, &n)))
            goto out;
        if (n == 0)
            break;
        if ((uint64_t)n > FL_AVRO_MAX_META_ENTRIES - r->nmeta) {
            e = FL_ERR_TOO_LARGE;
            goto out;
        }
        if (r->nmeta + (size_t)n > alloc) {
            alloc = r->nmeta + (size_t)n;
            r->meta = fl_realloc(r->meta, alloc * sizeof *r->meta);
        }
        for (int64_t i = 0; i < n; i++) {
            fl_avro_kv_t *kv = &r->meta[r->nmeta];
            if ((e = fl_avro_get_string(&r->d, &kv->key)) || (e = fl_avro_get_bytes(&r->d, &kv->value)))
                goto out;
            r->nmeta++;
        }
    }
    if ((e = fl_avro_reader_meta(r, "avro.schema", &r->schema))) {
        e = FL_ERR_INVALID;
        goto out;
    }
    r->codec = FL_AVRO_CODEC_NULL;
    if (!fl_avro_reader_meta(r, "avro.codec", &s) && (e = fl_avro_codec_parse(s, &r->codec)))
        goto out;
    if ((e = fl_avro_get_fixed(&r->d, FL_AVRO_SYNC_LEN, &s)))
        goto out;
    memcpy(r->sync, s.ptr, FL_AVRO_SYNC_LEN);
out:
    if (e)
        fl_avro_reader_close(r);
    return e;
}

fl_err_t fl_avro_reader_meta(const fl_avro_reader_t *r, const char *key, fl_slice_t *value)
{
    for (size_t i = 0; i < r->nmeta; i++)
        if (fl_slice_eq(r->meta[i].key, key)) {
            *value = r->meta[i].value;
            return FL_OK;
        }
    return FL_ERR_NOT_FOUND;
}

fl_err_t fl_avro_reader_next(fl_avro_reader_t *r, fl_slice_t *data, int64_t *count, bool *done)
{
    fl_err_t e = FL_OK;
    int64_t n, size;
    fl_slice_t raw, sync;
    *done = false;
    if (r->failed)
        return r->failed;
    if (fl_avro_dec_left(&r->d) == 0) {
        *done = true;
        goto out;
    }
    if ((e = fl_avro_get_long(&r->d, &n)) || (e = fl_avro_get_long(&r->d, &size)))
        goto out;
    if (n < 0 || size < 0) {
        e = FL_ERR_INVALID;
        goto out;
    }
    if (n > FL_AVRO_MAX_BLOCK_RECORDS || size > FL_AVRO_MAX_BLOCK_BYTES) {
        e = FL_ERR_TOO_LARGE;
        goto out;
    }
    if ((e = fl_avro_get_fixed(&r->d, (size_t)size, &raw)) ||
        (e = fl_avro_get_fixed(&r->d, FL_AVRO_SYNC_LEN, &sync)))
        goto out;
    if (memcmp(sync.ptr, r->sync, FL_AVRO_SYNC_LEN)) {
        e = FL_ERR_INVALID;
        goto out;
    }
    if (r->codec == FL_AVRO_CODEC_NULL) {
        *data = raw;
    } else {
        if ((e = decompress_block(r->codec, raw.ptr, raw.len, &r->block)))
            goto out;
        *data = fl_slice(r->block.ptr, r->block.len);
    }
    *count = n;
    r->blocks++;
out:
    r->failed = e; /* sticky: later calls repeat the error */
    return e;
}

void fl_avro_reader_close(fl_avro_reader_t *r)
{
    free(r->meta);
    r->meta = NULL;
    r->nmeta = 0;
    fl_buf_free(&r->block);
}
