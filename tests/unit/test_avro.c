#include "test.h"
#include "base/limits.h"
#include "format/avro.h"
#include <stdlib.h>

static const char *schema_json =
    "{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"},"
    "{\"name\":\"name\",\"type\":\"string\"},{\"name\":\"score\",\"type\":[\"null\",\"double\"]}]}";

FL_TEST(avro_varint_edges)
{
    static const struct { int64_t v; const char *enc; size_t n; } cases[] = {
        { 0, "\x00", 1 },
        { -1, "\x01", 1 },
        { 1, "\x02", 1 },
        { -2, "\x03", 1 },
        { 2, "\x04", 1 },
        { -64, "\x7f", 1 },
        { 64, "\x80\x01", 2 },
        { INT64_MAX, "\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10 },
        { INT64_MIN, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fl_buf_t b;
        fl_buf_init(&b, 0);
        CHECK_EQ(fl_avro_put_long(&b, cases[i].v), FL_OK);
        CHECK_EQ(b.len, cases[i].n);
        CHECK_MEM(b.ptr, cases[i].enc, cases[i].n);
        fl_avro_dec_t d;
        int64_t v = 12345;
        fl_avro_dec_init(&d, fl_slice(b.ptr, b.len));
        CHECK_EQ(fl_avro_get_long(&d, &v), FL_OK);
        CHECK(v == cases[i].v);
        CHECK_EQ(fl_avro_dec_left(&d), 0);
        /* every truncation fails */
        for (size_t k = 0; k < b.len; k++) {
            fl_avro_dec_init(&d, fl_slice(b.ptr, k));
            CHECK_EQ(fl_avro_get_long(&d, &v), FL_ERR_INVALID);
        }
        fl_buf_free(&b);
    }
    /* int32 edges and range check */
    fl_buf_t b;
    fl_buf_init(&b, 0);
    fl_avro_put_int(&b, INT32_MIN);
    fl_avro_put_int(&b, INT32_MAX);
    fl_avro_put_long(&b, (int64_t)INT32_MAX + 1);
    fl_avro_dec_t d;
    int32_t i32;
    fl_avro_dec_init(&d, fl_slice(b.ptr, b.len));
    CHECK_EQ(fl_avro_get_int(&d, &i32), FL_OK);
    CHECK_EQ(i32, INT32_MIN);
    CHECK_EQ(fl_avro_get_int(&d, &i32), FL_OK);
    CHECK_EQ(i32, INT32_MAX);
    CHECK_EQ(fl_avro_get_int(&d, &i32), FL_ERR_INVALID);
    fl_buf_free(&b);
    /* overlong varints: 11 bytes, and a 10th byte with more than one bit */
    int64_t v;
    fl_avro_dec_init(&d, FL_SLICE("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"));
    CHECK_EQ(fl_avro_get_long(&d, &v), FL_ERR_INVALID);
    fl_avro_dec_init(&d, FL_SLICE("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02"));
    CHECK_EQ(fl_avro_get_long(&d, &v), FL_ERR_INVALID);
}

/* The specification's examples: record {a: long 27, b: string "foo"} is 36 06 66 6f 6f;
 * array<long> [3, 27] is 04 06 36 00; union ["null","string"]: null 00, "a" 02 02 61. */
FL_TEST(avro_spec_vectors)
{
    fl_buf_t b;
    fl_buf_init(&b, 0);
    fl_avro_put_long(&b, 27);
    fl_avro_put_cstr(&b, "foo");
    fl_avro_put_block_count(&b, 2);
    fl_avro_put_long(&b, 3);
    fl_avro_put_long(&b, 27);
    fl_avro_put_block_count(&b, 0);
    fl_avro_put_union(&b, 0);
    fl_avro_put_union(&b, 1);
    fl_avro_put_cstr(&b, "a");
    fl_avro_put_bool(&b, true);
    fl_avro_put_float(&b, 1.0f);
    fl_avro_put_double(&b, -2.0);
    fl_avro_put_fixed(&b, "xy", 2);
    static const char want[] = "\x36\x06" "foo" "\x04\x06\x36\x00" "\x00" "\x02\x02" "a" "\x01"
                               "\x00\x00\x80\x3f" "\x00\x00\x00\x00\x00\x00\x00\xc0" "xy";
    CHECK_EQ(b.len, sizeof want - 1);
    CHECK_MEM(b.ptr, want, sizeof want - 1);

    fl_avro_dec_t d;
    fl_avro_dec_init(&d, fl_slice(b.ptr, b.len));
    int64_t l, br, cnt;
    fl_slice_t s;
    bool bo;
    float f;
    double db;
    CHECK_EQ(fl_avro_get_long(&d, &l), FL_OK);
    CHECK_EQ(l, 27);
    CHECK_EQ(fl_avro_get_string(&d, &s), FL_OK);
    CHECK(fl_slice_eq(s, "foo"));
    CHECK_EQ(fl_avro_get_block_count(&d, &cnt), FL_OK);
    CHECK_EQ(cnt, 2);
    CHECK_EQ(fl_avro_get_long(&d, &l), FL_OK);
    CHECK_EQ(l, 3);
    CHECK_EQ(fl_avro_get_long(&d, &l), FL_OK);
    CHECK_EQ(l, 27);
    CHECK_EQ(fl_avro_get_block_count(&d, &cnt), FL_OK);
    CHECK_EQ(cnt, 0);
    CHECK_EQ(fl_avro_get_union(&d, 2, &br), FL_OK);
    CHECK_EQ(br, 0);
    CHECK_EQ(fl_avro_get_union(&d, 2, &br), FL_OK);
    CHECK_EQ(br, 1);
    CHECK_EQ(fl_avro_get_string(&d, &s), FL_OK);
    CHECK(fl_slice_eq(s, "a"));
    CHECK_EQ(fl_avro_get_bool(&d, &bo), FL_OK);
    CHECK(bo);
    CHECK_EQ(fl_avro_get_float(&d, &f), FL_OK);
    CHECK(f == 1.0f);
    CHECK_EQ(fl_avro_get_double(&d, &db), FL_OK);
    CHECK(db == -2.0);
    CHECK_EQ(fl_avro_get_fixed(&d, 2, &s), FL_OK);
    CHECK(fl_slice_eq(s, "xy"));
    CHECK_EQ(fl_avro_dec_left(&d), 0);
    CHECK_EQ(fl_avro_get_bool(&d, &bo), FL_ERR_INVALID);
    fl_buf_free(&b);

    /* negative block count form: -2, byte size 2, items 3 and 27 */
    fl_avro_dec_init(&d, FL_SLICE("\x03\x04\x06\x36\x00"));
    CHECK_EQ(fl_avro_get_block_count(&d, &cnt), FL_OK);
    CHECK_EQ(cnt, 2);
    /* bad inputs */
    fl_avro_dec_init(&d, FL_SLICE("\x02"));
    CHECK_EQ(fl_avro_get_bool(&d, &bo), FL_ERR_INVALID);
    fl_avro_dec_init(&d, FL_SLICE("\x04"));
    CHECK_EQ(fl_avro_get_union(&d, 2, &br), FL_ERR_INVALID);
    fl_avro_dec_init(&d, FL_SLICE("\x01"));
    CHECK_EQ(fl_avro_get_bytes(&d, &s), FL_ERR_INVALID);          /* negative length */
    fl_avro_dec_init(&d, FL_SLICE("\x08" "abc"));
    CHECK_EQ(fl_avro_get_bytes(&d, &s), FL_ERR_INVALID);          /* past the end */
    fl_avro_dec_init(&d, FL_SLICE("\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01"));
    CHECK_EQ(fl_avro_get_bytes(&d, &s), FL_ERR_TOO_LARGE);        /* INT64_MAX length */
    fl_avro_dec_init(&d, FL_SLICE("\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01"));
    CHECK_EQ(fl_avro_get_block_count(&d, &cnt), FL_ERR_TOO_LARGE); /* huge item count */
    fl_avro_dec_init(&d, FL_SLICE("\x14\x00"));
    CHECK_EQ(fl_avro_get_block_count(&d, &cnt), FL_ERR_INVALID);   /* 10 items, 1 byte left */
    fl_avro_dec_init(&d, FL_SLICE("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"));
    CHECK_EQ(fl_avro_get_block_count(&d, &cnt), FL_ERR_INVALID);   /* INT64_MIN count */
}

static void encode_rec(fl_buf_t *b, int64_t i)
{
    char name[64];
    snprintf(name, sizeof name, "name-%lld-%s", (long long)i, i % 7 ? "x" : "\xc3\xa9t\xc3\xa9");
    fl_avro_put_long(b, i * 1000003 - 500);
    fl_avro_put_cstr(b, name);
    if (i % 3 == 0) {
        fl_avro_put_union(b, 0);
    } else {
        fl_avro_put_union(b, 1);
        fl_avro_put_double(b, (double)i / 7.0);
    }
}

/* Decode all records of data as the test schema; returns records decoded or -1. */
static int64_t decode_block(fl_slice_t data, int64_t count, int64_t first, int *failed)
{
    fl_avro_dec_t d;
    fl_avro_dec_init(&d, data);
    for (int64_t k = 0; k < count; k++) {
        int64_t i = first + k, id, br;
        fl_slice_t name;
        double sc;
        char want[64];
        snprintf(want, sizeof want, "name-%lld-%s", (long long)i, i % 7 ? "x" : "\xc3\xa9t\xc3\xa9");
        if (fl_avro_get_long(&d, &id) || fl_avro_get_string(&d, &name) || fl_avro_get_union(&d, 2, &br))
            return -1;
        if (id != i * 1000003 - 500 || !fl_slice_eq(name, want) || br != (i % 3 ? 1 : 0)) {
            *failed = 1;
            return -1;
        }
        if (br == 1) {
            if (fl_avro_get_double(&d, &sc))
                return -1;
            if (sc != (double)i / 7.0) {
                *failed = 1;
                return -1;
            }
        }
    }
    return fl_avro_dec_left(&d) == 0 ? count : -1;
}

static fl_err_t write_file(fl_buf_t *out, fl_avro_codec_t codec, int64_t n, size_t block_bytes)
{
    fl_avro_meta_t meta[] = {
        { "schema", FL_SLICE("{\"type\":\"struct\",\"fields\":[]}") },
        { "schema-id", FL_SLICE("0") },
        { "partition-spec", FL_SLICE("[]") },
        { "partition-spec-id", FL_SLICE("0") },
        { "format-version", FL_SLICE("2") },
        { "content", FL_SLICE("data") },
        { "bin", fl_slice("\x00\xff\x01", 3) },
    };
    fl_avro_writer_t w;
    fl_err_t e = fl_avro_writer_open(&w, out, codec, schema_json, meta, sizeof meta / sizeof *meta);
    if (e)
        return e;
    w.block_bytes = block_bytes;
    for (int64_t i = 0; i < n && !e; i++) {
        encode_rec(fl_avro_writer_record(&w), i);
        e = fl_avro_writer_end_record(&w);
    }
    if (e) {
        fl_avro_writer_free(&w);
        return e;
    }
    return fl_avro_writer_finish(&w);
}

/* Read a whole file; returns records read (checked) or a negative fl_err_t. */
static int64_t read_file(fl_slice_t file, int64_t *blocks, int *failed)
{
    fl_avro_reader_t r;
    fl_err_t e = fl_avro_reader_open(&r, file);
    if (e)
        return e;
    int64_t total = 0;
    for (;;) {
        fl_slice_t data;
        int64_t count;
        bool done;
        if ((e = fl_avro_reader_next(&r, &data, &count, &done)))
            break;
        if (done)
            break;
        if (decode_block(data, count, total, failed) < 0) {
            e = FL_ERR_INVALID;
            break;
        }
        total += count;
    }
    if (blocks)
        *blocks = r.blocks;
    fl_avro_reader_close(&r);
    return e ? e : total;
}

FL_TEST(avro_container_roundtrip)
{
    for (int c = FL_AVRO_CODEC_NULL; c <= FL_AVRO_CODEC_ZSTD; c++) {
        fl_buf_t out;
        fl_buf_init(&out, 0);
        REQUIRE(write_file(&out, (fl_avro_codec_t)c, 5000, 1024) == FL_OK);
        int64_t blocks = 0;
        CHECK_EQ(read_file(fl_slice(out.ptr, out.len), &blocks, fl_failed_), 5000);
        CHECK(blocks > 50);

        fl_avro_reader_t r;
        REQUIRE(fl_avro_reader_open(&r, fl_slice(out.ptr, out.len)) == FL_OK);
        CHECK_EQ(r.codec, c);
        fl_slice_t v;
        CHECK_EQ(fl_avro_reader_meta(&r, "avro.codec", &v), FL_OK);
        CHECK(fl_slice_eq(v, fl_avro_codec_name((fl_avro_codec_t)c)));
        CHECK(fl_slice_eq(r.schema, schema_json));
        CHECK_EQ(fl_avro_reader_meta(&r, "content", &v), FL_OK);
        CHECK(fl_slice_eq(v, "data"));
        CHECK_EQ(fl_avro_reader_meta(&r, "partition-spec-id", &v), FL_OK);
        CHECK(fl_slice_eq(v, "0"));
        CHECK_EQ(fl_avro_reader_meta(&r, "bin", &v), FL_OK);
        CHECK(v.len == 3 && !memcmp(v.ptr, "\x00\xff\x01", 3));
        CHECK_EQ(fl_avro_reader_meta(&r, "nope", &v), FL_ERR_NOT_FOUND);
        fl_avro_reader_close(&r);
        fl_buf_free(&out);
    }
    /* empty file: header only */
    fl_buf_t out;
    fl_buf_init(&out, 0);
    REQUIRE(write_file(&out, FL_AVRO_CODEC_DEFLATE, 0, 1024) == FL_OK);
    CHECK_EQ(read_file(fl_slice(out.ptr, out.len), NULL, fl_failed_), 0);
    fl_buf_free(&out);
    /* the output buffer's cap bounds the file */
    fl_buf_init(&out, 2000);
    CHECK_EQ(write_file(&out, FL_AVRO_CODEC_NULL, 5000, 1024), FL_ERR_TOO_LARGE);
    fl_buf_free(&out);
    /* reserved keys and unknown codecs are refused */
    fl_avro_writer_t w;
    fl_avro_meta_t bad = { "avro.codec", FL_SLICE("null") };
    fl_buf_init(&out, 0);
    CHECK_EQ(fl_avro_writer_open(&w, &out, FL_AVRO_CODEC_NULL, schema_json, &bad, 1), FL_ERR_INVALID);
    CHECK_EQ(fl_avro_writer_open(&w, &out, (fl_avro_codec_t)9, schema_json, NULL, 0), FL_ERR_INVALID);
    fl_buf_free(&out);
    fl_avro_codec_t cd;
    CHECK_EQ(fl_avro_codec_parse(FL_SLICE("zstandard"), &cd), FL_OK);
    CHECK_EQ(cd, FL_AVRO_CODEC_ZSTD);
    CHECK_EQ(fl_avro_codec_parse(FL_SLICE("bzip2"), &cd), FL_ERR_INVALID);
}

FL_TEST(avro_container_truncated)
{
    for (int c = FL_AVRO_CODEC_NULL; c <= FL_AVRO_CODEC_ZSTD; c++) {
        fl_buf_t out;
        fl_buf_init(&out, 0);
        REQUIRE(write_file(&out, (fl_avro_codec_t)c, 40, 200) == FL_OK);
        int64_t hdr_end = -1;
        /* every proper prefix fails, except those ending exactly on a block boundary,
         * which read as a shorter valid file */
        for (size_t k = 0; k < out.len; k++) {
            char *copy = malloc(k ? k : 1);
            memcpy(copy, out.ptr, k);
            int64_t got = read_file(fl_slice(copy, k), NULL, fl_failed_);
            if (got >= 0) {
                if (hdr_end < 0)
                    hdr_end = (int64_t)k;
                CHECK(got < 40);
            }
            free(copy);
        }
        CHECK(hdr_end > 0);
        CHECK_EQ(read_file(fl_slice(out.ptr, out.len), NULL, fl_failed_), 40);
        fl_buf_free(&out);
    }
}

FL_TEST(avro_container_malformed)
{
    fl_buf_t out;
    fl_buf_init(&out, 0);
    REQUIRE(write_file(&out, FL_AVRO_CODEC_SNAPPY, 30, 100000) == FL_OK);
    fl_avro_reader_t r;
    REQUIRE(fl_avro_reader_open(&r, fl_slice(out.ptr, out.len)) == FL_OK);
    size_t hdr = (size_t)(r.d.p - (const unsigned char *)out.ptr);
    fl_avro_reader_close(&r);
    CHECK_EQ(read_file(fl_slice(out.ptr, out.len), NULL, fl_failed_), 30);

    /* wrong sync marker after the block */
    out.ptr[out.len - 1] ^= 1;
    CHECK_EQ(read_file(fl_slice(out.ptr, out.len), NULL, fl_failed_), FL_ERR_INVALID);
    out.ptr[out.len - 1] ^= 1;
    /* corrupt snappy CRC (last 4 bytes before the sync) */
    out.ptr[out.len - 17] ^= 1;
    CHECK(read_file(fl_slice(out.ptr, out.len), NULL, fl_failed_) < 0);
    out.ptr[out.len - 17] ^= 1;
    /* bad magic */
    out.ptr[3] = 2;
    CHECK_EQ(read_file(fl_slice(out.ptr, out.len), NULL, fl_failed_), FL_ERR_INVALID);
    out.ptr[3] = 1;

    /* huge block count / size after a valid header */
    static const char *tails[] = {
        "\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01\x02",     /* count INT64_MAX */
        "\x02\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01",     /* size INT64_MAX */
        "\x01\x02",                                         /* count -1 */
        "\x02\x01",                                         /* size -1 */
        "\x02\x80\x80\x80\x01",                             /* size 1 MiB, missing */
    };
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        fl_buf_t f;
        fl_buf_init(&f, 0);
        fl_buf_add(&f, out.ptr, hdr);
        fl_buf_adds(&f, tails[i]);
        CHECK(read_file(fl_slice(f.ptr, f.len), NULL, fl_failed_) < 0);
        fl_buf_free(&f);
    }
    /* huge metadata map counts */
    static const char *hdrs[] = {
        "Obj\x01\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01",
        "Obj\x01\x02\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01",
        "Obj\x01\x00",                                      /* no avro.schema */
    };
    for (size_t i = 0; i < sizeof hdrs / sizeof *hdrs; i++)
        CHECK(read_file(fl_slice_cstr(hdrs[i]), NULL, fl_failed_) < 0);
    fl_buf_free(&out);

    /* a deflate block that inflates past the cap is refused */
    fl_buf_t big;
    fl_buf_init(&big, 0);
    fl_avro_writer_t w;
    REQUIRE(fl_avro_writer_open(&w, &big, FL_AVRO_CODEC_DEFLATE, schema_json, NULL, 0) == FL_OK);
    w.block_bytes = (size_t)FL_AVRO_MAX_BLOCK_BYTES + 4096;
    fl_buf_t *rec = fl_avro_writer_record(&w);
    rec->cap = 0; /* let the test exceed the reader's cap */
    char zeros[4096] = { 0 };
    fl_err_t e = FL_OK;
    while (rec->len <= (size_t)FL_AVRO_MAX_BLOCK_BYTES && !e)
        e = fl_buf_add(rec, zeros, sizeof zeros);
    REQUIRE(e == FL_OK);
    REQUIRE(fl_avro_writer_end_record(&w) == FL_OK);
    REQUIRE(fl_avro_writer_finish(&w) == FL_OK);
    fl_avro_reader_t rr;
    REQUIRE(fl_avro_reader_open(&rr, fl_slice(big.ptr, big.len)) == FL_OK);
    fl_slice_t data;
    int64_t count;
    bool done;
    CHECK_EQ(fl_avro_reader_next(&rr, &data, &count, &done), FL_ERR_TOO_LARGE);
    CHECK_EQ(fl_avro_reader_next(&rr, &data, &count, &done), FL_ERR_TOO_LARGE);
    fl_avro_reader_close(&rr);
    fl_buf_free(&big);
}
