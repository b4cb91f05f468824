/* Parquet reader: the level/value decoders on known byte sequences (the
 * examples of parquet-format's Encodings.md), malformed encodings, and a tiny
 * pyarrow-written file read whole, projected, truncated at every length and
 * with every byte flipped. */
#include "test.h"
#include <stdlib.h>
#include "format/parquet.h"
#include "format/parquet_decode.h"

/* pyarrow: a int32 (id 1) = [1, null, 3], s string (id 2) = ["x", null, "yz"],
 * l list<int64> (ids 4/3) = [[1, 2], null, []]; PLAIN, uncompressed, v1 pages. */
static const unsigned char tiny[] = {
    0x50, 0x41, 0x52, 0x31, 0x15, 0x00, 0x15, 0x1c, 0x15, 0x1c, 0x2c, 0x15, 0x06, 0x15, 0x00, 0x15,
    0x06, 0x15, 0x06, 0x1c, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, 0x05, 0x01, 0x00, 0x00,
    0x00, 0x03, 0x00, 0x00, 0x00, 0x15, 0x00, 0x15, 0x22, 0x15, 0x22, 0x2c, 0x15, 0x06, 0x15, 0x00,
    0x15, 0x06, 0x15, 0x06, 0x1c, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, 0x05, 0x01, 0x00,
    0x00, 0x00, 0x78, 0x02, 0x00, 0x00, 0x00, 0x79, 0x7a, 0x15, 0x00, 0x15, 0x3a, 0x15, 0x3a, 0x2c,
    0x15, 0x08, 0x15, 0x00, 0x15, 0x06, 0x15, 0x06, 0x1c, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x03, 0x02, 0x03, 0x00, 0x00, 0x00, 0x03, 0x4f, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x15, 0x04, 0x19, 0x6c, 0x35, 0x00, 0x18,
    0x06, 0x73, 0x63, 0x68, 0x65, 0x6d, 0x61, 0x15, 0x06, 0x00, 0x15, 0x02, 0x25, 0x02, 0x18, 0x01,
    0x61, 0x55, 0x02, 0x00, 0x15, 0x0c, 0x25, 0x02, 0x18, 0x01, 0x73, 0x25, 0x00, 0x35, 0x04, 0x1c,
    0x1c, 0x00, 0x00, 0x00, 0x35, 0x02, 0x18, 0x01, 0x6c, 0x15, 0x02, 0x15, 0x06, 0x35, 0x08, 0x1c,
    0x3c, 0x00, 0x00, 0x00, 0x35, 0x04, 0x18, 0x04, 0x6c, 0x69, 0x73, 0x74, 0x15, 0x02, 0x00, 0x15,
    0x04, 0x25, 0x02, 0x18, 0x07, 0x65, 0x6c, 0x65, 0x6d, 0x65, 0x6e, 0x74, 0x55, 0x06, 0x00, 0x16,
    0x06, 0x19, 0x1c, 0x19, 0x3c, 0x26, 0x00, 0x1c, 0x15, 0x02, 0x19, 0x25, 0x06, 0x00, 0x19, 0x18,
    0x01, 0x61, 0x15, 0x00, 0x16, 0x06, 0x16, 0x42, 0x16, 0x42, 0x26, 0x08, 0x49, 0x1c, 0x15, 0x00,
    0x15, 0x00, 0x15, 0x02, 0x00, 0x3c, 0x29, 0x06, 0x19, 0x26, 0x02, 0x04, 0x00, 0x00, 0x00, 0x26,
    0x00, 0x1c, 0x15, 0x0c, 0x19, 0x25, 0x06, 0x00, 0x19, 0x18, 0x01, 0x73, 0x15, 0x00, 0x16, 0x06,
    0x16, 0x48, 0x16, 0x48, 0x26, 0x4a, 0x49, 0x1c, 0x15, 0x00, 0x15, 0x00, 0x15, 0x02, 0x00, 0x3c,
    0x16, 0x06, 0x19, 0x06, 0x19, 0x26, 0x02, 0x04, 0x00, 0x00, 0x00, 0x26, 0x00, 0x1c, 0x15, 0x04,
    0x19, 0x25, 0x06, 0x00, 0x19, 0x38, 0x01, 0x6c, 0x04, 0x6c, 0x69, 0x73, 0x74, 0x07, 0x65, 0x6c,
    0x65, 0x6d, 0x65, 0x6e, 0x74, 0x15, 0x00, 0x16, 0x08, 0x16, 0x60, 0x16, 0x60, 0x26, 0x92, 0x01,
    0x49, 0x1c, 0x15, 0x00, 0x15, 0x00, 0x15, 0x02, 0x00, 0x3c, 0x29, 0x26, 0x06, 0x02, 0x19, 0x46,
    0x02, 0x02, 0x00, 0x04, 0x00, 0x00, 0x00, 0x16, 0xea, 0x01, 0x16, 0x06, 0x26, 0x08, 0x16, 0xea,
    0x01, 0x00, 0x28, 0x20, 0x70, 0x61, 0x72, 0x71, 0x75, 0x65, 0x74, 0x2d, 0x63, 0x70, 0x70, 0x2d,
    0x61, 0x72, 0x72, 0x6f, 0x77, 0x20, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x20, 0x32, 0x36,
    0x2e, 0x30, 0x2e, 0x31, 0x19, 0x3c, 0x1c, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x00,
    0x27, 0x01, 0x00, 0x00, 0x50, 0x41, 0x52, 0x31,
};

FL_TEST(parquet_read_rle_hybrid)
{
    /* bit-packed run of 0..7 at width 3, then an RLE run of five 2s at width 3 */
    const uint8_t in[] = { 0x03, 0x88, 0xC6, 0xFA, 0x0A, 0x02 };
    uint32_t out[13];
    size_t used = 0;
    REQUIRE(fl_pq_rle_decode32(in, sizeof in, 3, out, 13, &used) == FL_OK);
    for (uint32_t i = 0; i < 8; i++) CHECK_EQ(out[i], i);
    for (int i = 8; i < 13; i++) CHECK_EQ(out[i], 2);
    CHECK_EQ(used, sizeof in);
    uint8_t o8[13];
    REQUIRE(fl_pq_rle_decode8(in, sizeof in, 3, 7, o8, 13, NULL) == FL_OK);
    CHECK_EQ(o8[7], 7);
    /* a level above the maximum */
    CHECK(fl_pq_rle_decode8(in, sizeof in, 3, 6, o8, 13, NULL) == FL_ERR_INVALID);
    /* truncated: more values wanted than encoded */
    CHECK(fl_pq_rle_decode32(in, sizeof in, 3, out, 14, NULL) == FL_ERR_INVALID);
    CHECK(fl_pq_rle_decode32(in, 3, 3, out, 8, NULL) == FL_ERR_INVALID);
    /* bad widths, an RLE value wider than the bit width, an endless varint */
    CHECK(fl_pq_rle_decode32(in, sizeof in, 33, out, 1, NULL) == FL_ERR_INVALID);
    CHECK(fl_pq_rle_decode8(in, sizeof in, 9, -1, o8, 1, NULL) == FL_ERR_INVALID);
    const uint8_t wide[] = { 0x02, 0x09 };
    CHECK(fl_pq_rle_decode32(wide, sizeof wide, 3, out, 1, NULL) == FL_ERR_INVALID);
    const uint8_t longv[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
    CHECK(fl_pq_rle_decode32(longv, sizeof longv, 1, out, 1, NULL) == FL_ERR_INVALID);
    /* width 0: runs of zeros from nothing */
    const uint8_t zero[] = { 0x14 };
    REQUIRE(fl_pq_rle_decode32(zero, 1, 0, out, 10, NULL) == FL_OK);
    CHECK_EQ(out[9], 0);
    /* huge bit-packed group count must not overflow */
    const uint8_t huge[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00 };
    CHECK(fl_pq_rle_decode32(huge, sizeof huge, 1, out, 13, NULL) == FL_ERR_INVALID);
}

FL_TEST(parquet_read_unpack_widths)
{
    /* every width 1..32 round-trips a pattern through a reference packer */
    for (int bw = 1; bw <= 32; bw++) {
        uint32_t vals[77], out[77];
        uint8_t buf[77 * 4 + 8] = { 0 };
        uint64_t mask = bw == 32 ? 0xffffffffu : ((1ull << bw) - 1);
        size_t bit = 0;
        for (int i = 0; i < 77; i++) {
            vals[i] = (uint32_t)(((uint64_t)i * 2654435761u) & mask);
            for (int k = 0; k < bw; k++, bit++)
                if (vals[i] >> k & 1) buf[bit >> 3] |= (uint8_t)(1 << (bit & 7));
        }
        fl_pq_unpack32(buf, (bit + 7) / 8, bw, out, 77);
        CHECK_MEM(out, vals, sizeof vals);
        if (bw <= 8) {
            uint8_t o8[77];
            fl_pq_unpack8(buf, (bit + 7) / 8, bw, o8, 77);
            for (int i = 0; i < 77; i++) CHECK_EQ(o8[i], vals[i]);
        }
    }
}

FL_TEST(parquet_read_bitpacked_msb)
{
    const uint8_t in[] = { 0x05, 0x39, 0x77 };
    uint8_t out[8];
    size_t used;
    REQUIRE(fl_pq_bitpacked_msb8(in, sizeof in, 3, 7, out, 8, &used) == FL_OK);
    for (int i = 0; i < 8; i++) CHECK_EQ(out[i], i);
    CHECK_EQ(used, 3);
    CHECK(fl_pq_bitpacked_msb8(in, 2, 3, 7, out, 8, &used) == FL_ERR_INVALID);
}

FL_TEST(parquet_read_delta_binary_packed)
{
    /* 1 2 3 4 5: all deltas equal the minimum, every miniblock width 0 */
    const uint8_t a[] = { 0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0, 0, 0, 0 };
    int64_t out[40];
    size_t tot, used;
    REQUIRE(fl_pq_delta_decode(a, sizeof a, out, 40, &tot, &used) == FL_OK);
    CHECK_EQ(tot, 5);
    CHECK_EQ(used, sizeof a);
    for (int i = 0; i < 5; i++) CHECK_EQ(out[i], i + 1);
    /* 7 5 3 1 2 3 4 5: min delta -2, relative deltas 0 0 0 3 3 3 3 at width 2 */
    const uint8_t b[] = { 0x80, 0x01, 0x04, 0x08, 0x0E, 0x03, 2, 0, 0, 0,
                          0xC0, 0x3F, 0, 0, 0, 0, 0, 0, 0xAA };
    REQUIRE(fl_pq_delta_decode(b, sizeof b, out, 40, &tot, &used) == FL_OK);
    const int64_t want[] = { 7, 5, 3, 1, 2, 3, 4, 5 };
    CHECK_EQ(tot, 8);
    CHECK_MEM(out, want, sizeof want);
    CHECK_EQ(used, sizeof b - 1);
    /* over the caller's cap, bad block sizes, truncated miniblock, width > 64 */
    CHECK(fl_pq_delta_decode(b, sizeof b, out, 7, &tot, &used) == FL_ERR_INVALID);
    const uint8_t c[] = { 0x81, 0x01, 0x04, 0x05, 0x02 };
    CHECK(fl_pq_delta_decode(c, sizeof c, out, 40, &tot, &used) == FL_ERR_INVALID);
    const uint8_t d[] = { 0x80, 0x01, 0x03, 0x05, 0x02 };
    CHECK(fl_pq_delta_decode(d, sizeof d, out, 40, &tot, &used) == FL_ERR_INVALID);
    CHECK(fl_pq_delta_decode(b, 11, out, 40, &tot, &used) == FL_ERR_INVALID);
    const uint8_t e[] = { 0x80, 0x01, 0x04, 0x08, 0x0E, 0x03, 65, 0, 0, 0 };
    CHECK(fl_pq_delta_decode(e, sizeof e, out, 40, &tot, &used) == FL_ERR_INVALID);
    /* wrapping arithmetic: INT64_MAX then +1 wraps rather than UB */
    const uint8_t f[] = { 0x80, 0x01, 0x04, 0x02, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                          0xFF, 0x01, 0x02, 0, 0, 0, 0 };
    REQUIRE(fl_pq_delta_decode(f, sizeof f, out, 40, &tot, &used) == FL_OK);
    CHECK(out[0] == INT64_MAX && out[1] == INT64_MIN);
}

FL_TEST(parquet_read_byte_stream_split)
{
    const float v[3] = { 1.5f, -2.25f, 1e30f };
    uint8_t enc[12], dec[12];
    const uint8_t *p = (const uint8_t *)v;
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 4; k++) enc[k * 3 + i] = p[i * 4 + k];
    fl_pq_bss_decode(enc, 3, 4, dec);
    CHECK_MEM(dec, v, sizeof v);
    uint8_t enc5[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, dec5[10];
    fl_pq_bss_decode(enc5, 2, 5, dec5);
    const uint8_t want5[10] = { 1, 3, 5, 7, 9, 2, 4, 6, 8, 10 };
    CHECK_MEM(dec5, want5, 10);
}

static void render_all(fl_pq_reader_t *r, fl_buf_t *out)
{
    fl_vec_t v;
    memset(&v, 0, sizeof v);
    for (;;) {
        bool done;
        if (fl_pq_reader_next(r, &v, &done) != FL_OK || done) break;
        for (size_t i = 0; i < v.len; i++) {
            fl_vec_json_append(&v, i, out);
            fl_buf_addc(out, '\n');
        }
    }
    fl_vec_free(&v);
}

FL_TEST(parquet_read_tiny_file)
{
    fl_pq_reader_t *r;
    REQUIRE(fl_pq_reader_open(&r, fl_pq_source_mem(tiny, sizeof tiny)) == FL_OK);
    CHECK_EQ(fl_pq_reader_num_rows(r), 3);
    CHECK_EQ(fl_pq_reader_num_row_groups(r), 1);
    const fl_field_t *fs = fl_pq_reader_file_schema(r);
    REQUIRE(fs->n_children == 3);
    CHECK_EQ(fs->children[0].id, 1);
    CHECK_EQ(fs->children[0].kind, FL_TYPE_INT);
    CHECK_EQ(fs->children[2].kind, FL_TYPE_LIST);
    CHECK_EQ(fs->children[2].id, 4);
    CHECK_EQ(fs->children[2].children[0].id, 3);
    fl_slice_t kv;
    CHECK(fl_pq_reader_kv(r, "no such key", &kv) == FL_ERR_NOT_FOUND);
    fl_buf_t out;
    fl_buf_init(&out, 0);
    render_all(r, &out);
    CHECK_STR(out.ptr, "{\"a\":1,\"s\":\"x\",\"l\":[1,2]}\n{\"a\":null,\"s\":null,\"l\":null}\n"
                       "{\"a\":3,\"s\":\"yz\",\"l\":[]}\n");
    fl_pq_reader_free(r);

    /* projection: l, a promoted to long, a missing optional field */
    fl_field_t exp;
    fl_field_set(&exp, 0, "table", true, FL_TYPE_STRUCT);
    fl_field_t *l = fl_field_add_child(&exp);
    fl_field_set(l, 4, "l", false, FL_TYPE_LIST);
    fl_field_set(fl_field_add_child(l), 3, "element", false, FL_TYPE_LONG);
    fl_field_set(fl_field_add_child(&exp), 1, "a", false, FL_TYPE_LONG);
    fl_field_set(fl_field_add_child(&exp), 9, "gone", false, FL_TYPE_STRING);
    REQUIRE(fl_pq_reader_open(&r, fl_pq_source_mem(tiny, sizeof tiny)) == FL_OK);
    REQUIRE(fl_pq_reader_project(r, &exp) == FL_OK);
    fl_buf_reset(&out);
    render_all(r, &out);
    CHECK_STR(out.ptr, "{\"l\":[1,2],\"a\":1,\"gone\":null}\n{\"l\":null,\"a\":null,\"gone\":null}\n"
                       "{\"l\":[],\"a\":3,\"gone\":null}\n");
    /* incompatible: string read as int; a required field the file lacks */
    exp.children[1].kind = FL_TYPE_INT;
    exp.children[1].id = 2;
    CHECK(fl_pq_reader_project(r, &exp) == FL_ERR_INVALID);
    CHECK(strlen(fl_pq_reader_error(r)) > 0);
    exp.children[1].id = 1;
    exp.children[2].required = true;
    CHECK(fl_pq_reader_project(r, &exp) == FL_ERR_INVALID);
    fl_pq_reader_free(r);
    fl_field_free(&exp);
    fl_buf_free(&out);
}

FL_TEST(parquet_read_name_mapping)
{
    /* ids come from the mapping only where the file has none; here they exist */
    fl_pq_reader_t *r;
    REQUIRE(fl_pq_reader_open(&r, fl_pq_source_mem(tiny, sizeof tiny)) == FL_OK);
    const char *m = "[{\"field-id\":7,\"names\":[\"a\"]}]";
    REQUIRE(fl_pq_reader_name_mapping(r, fl_slice_cstr(m)) == FL_OK);
    CHECK_EQ(fl_pq_reader_file_schema(r)->children[0].id, 1);
    CHECK(fl_pq_reader_name_mapping(r, fl_slice_cstr("{\"not\":\"an array\"}")) == FL_ERR_INVALID);
    CHECK(fl_pq_reader_name_mapping(r, fl_slice_cstr("[")) == FL_ERR_INVALID);
    fl_pq_reader_free(r);
}

FL_TEST(parquet_read_malformed_files)
{
    fl_pq_reader_t *r;
    CHECK(fl_pq_reader_open(&r, fl_pq_source_mem("", 0)) == FL_ERR_INVALID);
    CHECK(r == NULL);
    CHECK(strlen(fl_pq_reader_error(NULL)) > 0);
    CHECK(fl_pq_reader_open(&r, fl_pq_source_mem("PAR1\0\0\0\0PAR1", 12)) == FL_ERR_INVALID);
    /* footer length beyond the file, and over the cap */
    unsigned char big[16] = "PAR1xxxx";
    memcpy(big + 8, "\xff\xff\x00\x00PAR1", 8);
    CHECK(fl_pq_reader_open(&r, fl_pq_source_mem(big, 16)) == FL_ERR_INVALID);
    memcpy(big + 8, "\xff\xff\xff\xffPAR1", 8);
    CHECK(fl_pq_reader_open(&r, fl_pq_source_mem(big, 16)) == FL_ERR_TOO_LARGE);
    /* every truncation fails cleanly; every single-byte change reads or fails cleanly */
    unsigned char *copy = malloc(sizeof tiny);
    for (size_t n = 0; n < sizeof tiny; n++) {
        memcpy(copy, tiny, n);
        fl_err_t e = fl_pq_reader_open(&r, fl_pq_source_mem(copy, n));
        if (e == FL_OK) {
            fl_buf_t out;
            fl_buf_init(&out, 0);
            render_all(r, &out);
            fl_buf_free(&out);
            fl_pq_reader_free(r);
        }
    }
    for (size_t i = 0; i < sizeof tiny; i++)
        for (int x = 1; x < 256; x <<= 1) {
            memcpy(copy, tiny, sizeof tiny);
            copy[i] ^= (unsigned char)x;
            if (fl_pq_reader_open(&r, fl_pq_source_mem(copy, sizeof tiny)) != FL_OK) continue;
            fl_buf_t out;
            fl_buf_init(&out, 0);
            render_all(r, &out);
            fl_buf_free(&out);
            fl_pq_reader_free(r);
        }
    free(copy);
}

/* The vectorised level scans agree with plain loops at every length and offset. */
FL_TEST(parquet_read_level_scans)
{
    uint8_t def[600], rep[600], mask[600];
    uint64_t x = 88172645463325252ull;
    int16_t rep_def[4] = { 0, 2, 3, 4 };
    for (int round = 0; round < 40; round++) {
        for (size_t i = 0; i < sizeof def; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            def[i] = (uint8_t)(x % 5);
            rep[i] = (uint8_t)((x >> 8) % 4);
            if (round % 3 == 0) rep[i] = rep[i] && def[i] >= rep_def[rep[i]] ? rep[i] : 0;
        }
        for (size_t off = 0; off < 3; off++)
            for (size_t n = 0; n + off <= sizeof def; n += (n < 40 ? 1 : 37)) {
                for (uint8_t v = 0; v < 6; v++) {
                    size_t want = 0;
                    for (size_t i = 0; i < n; i++) want += def[off + i] >= v;
                    CHECK_EQ(fl_pq_count_ge(def + off, n, v), want);
                    memset(mask, 0xee, sizeof mask);
                    CHECK_EQ(fl_pq_mask_ge(def + off, n, v, mask), want);
                    for (size_t i = 0; i < n; i++) CHECK_EQ(mask[i], def[off + i] >= v);
                    CHECK_EQ(mask[n], 0xee);
                }
                bool bad = false;
                for (size_t i = 0; i < n; i++)
                    bad |= rep[off + i] && def[off + i] < rep_def[rep[off + i]];
                CHECK_EQ(fl_pq_levels_disagree(rep + off, def + off, n, rep_def, 3), bad);
            }
    }
}
