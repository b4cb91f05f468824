#include "test.h"
#include <math.h>
#include <stdlib.h>
#include "base/mem.h"
#include "format/codec.h"
#include "format/column.h"

/* struct { id long req, name string, tags list<string>, attrs map<string,int>, loc struct{lat double} } */
static void make_schema(fl_field_t *root)
{
    fl_field_set(root, 0, "table", true, FL_TYPE_STRUCT);
    fl_field_set(fl_field_add_child(root), 1, "id", true, FL_TYPE_LONG);
    fl_field_set(fl_field_add_child(root), 2, "name", false, FL_TYPE_STRING);
    fl_field_t *tags = fl_field_add_child(root);
    fl_field_set(tags, 3, "tags", false, FL_TYPE_LIST);
    fl_field_set(fl_field_add_child(tags), 6, "element", false, FL_TYPE_STRING);
    fl_field_t *attrs = fl_field_add_child(root);
    fl_field_set(attrs, 4, "attrs", false, FL_TYPE_MAP);
    fl_field_set(fl_field_add_child(attrs), 7, "key", true, FL_TYPE_STRING);
    fl_field_set(fl_field_add_child(attrs), 8, "value", false, FL_TYPE_INT);
    fl_field_t *loc = fl_field_add_child(root);
    fl_field_set(loc, 5, "loc", false, FL_TYPE_STRUCT);
    fl_field_set(fl_field_add_child(loc), 9, "lat", false, FL_TYPE_DOUBLE);
}

FL_TEST(column_build_copy_json)
{
    fl_field_t root;
    make_schema(&root);
    const fl_field_t *lv[16];
    CHECK_EQ(fl_field_leaves(&root, lv, 16), 6);
    CHECK_EQ(lv[2]->id, 6);
    CHECK(fl_field_find(&root, 9) == &root.children[4].children[0]);
    fl_vec_t v;
    fl_vec_init(&v, &root);
    for (int r = 0; r < 3; r++) {
        fl_vec_append_struct(&v);
        fl_vec_append_i64(&v.children[0], r);
        if (r == 1) fl_vec_append_null(&v.children[1]);
        else fl_vec_append_bytes(&v.children[1], "a\"b", 3);
        if (r == 2) fl_vec_append_null(&v.children[2]);
        else {
            fl_vec_append_bytes(&v.children[2].children[0], "x", 1);
            fl_vec_append_null(&v.children[2].children[0]);
            fl_vec_end_list(&v.children[2]);
        }
        fl_vec_append_bytes(&v.children[3].children[0], "k", 1);
        fl_vec_append_i32(&v.children[3].children[1], r * 10);
        fl_vec_end_list(&v.children[3]);
        if (r == 0) fl_vec_append_null(&v.children[4]);
        else { fl_vec_append_struct(&v.children[4]); fl_vec_append_f64(&v.children[4].children[0], 1.5); }
    }
    CHECK_EQ(v.len, 3);
    CHECK_EQ(v.children[4].children[0].len, 3);
    CHECK_EQ(v.children[2].children[0].len, 4);
    fl_buf_t out;
    fl_buf_init(&out, 0);
    for (size_t i = 0; i < 3; i++) { fl_vec_json_append(&v, i, &out); fl_buf_addc(&out, '\n'); }
    CHECK_STR(out.ptr,
              "{\"id\":0,\"name\":\"a\\\"b\",\"tags\":[\"x\",null],\"attrs\":{\"k\":0},\"loc\":null}\n"
              "{\"id\":1,\"name\":null,\"tags\":[\"x\",null],\"attrs\":{\"k\":10},\"loc\":{\"lat\":1.5}}\n"
              "{\"id\":2,\"name\":\"a\\\"b\",\"tags\":null,\"attrs\":{\"k\":20},\"loc\":{\"lat\":1.5}}\n");
    fl_vec_t w;
    fl_vec_init(&w, &root);
    for (size_t i = 0; i < 3; i++) fl_vec_append_from(&w, &v, i);
    CHECK(fl_vec_eq(&v, &w));
    fl_vec_clear(&w);
    fl_vec_append_from(&w, &v, 2);
    CHECK_EQ(w.len, 1);
    CHECK(!fl_vec_eq(&v, &w));
    fl_field_t copy;
    fl_field_copy(&copy, &root);
    CHECK(fl_field_eq(&copy, &root));
    fl_field_free(&copy);
    fl_buf_free(&out);
    fl_vec_free(&w);
    fl_vec_free(&v);
    fl_field_free(&root);
}

FL_TEST(column_json_temporal_decimal)
{
    fl_field_t f[5];
    fl_field_set(&f[0], 1, "d", false, FL_TYPE_DATE);
    fl_field_set(&f[1], 2, "ts", false, FL_TYPE_TIMESTAMPTZ);
    fl_field_set(&f[2], 3, "dec", false, FL_TYPE_DECIMAL);
    f[2].precision = 38; f[2].scale = 2;
    fl_field_set(&f[3], 4, "t", false, FL_TYPE_TIMESTAMP_NS);
    fl_field_set(&f[4], 5, "u", false, FL_TYPE_UUID);
    fl_vec_t v[5];
    for (int i = 0; i < 5; i++) fl_vec_init(&v[i], &f[i]);
    fl_vec_append_i32(&v[0], 17486);           /* 2017-11-16 */
    fl_vec_append_i32(&v[0], -1);              /* 1969-12-31 */
    fl_vec_append_i64(&v[1], 1510871468123456LL);
    fl_vec_append_i64(&v[1], -1);
    fl_vec_append_i128(&v[2], -(__int128)1420);
    fl_vec_append_i128(&v[2], (__int128)5);
    fl_vec_append_i64(&v[3], 1);
    unsigned char u[16] = { 0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4b, 0xbd, 0xa4, 0x79, 0x3f, 0x34, 0x9c, 0xb7, 0x85, 0xe7 };
    fl_vec_append_bytes(&v[4], u, 16);
    fl_buf_t o;
    fl_buf_init(&o, 0);
    fl_vec_json_append(&v[0], 0, &o); fl_buf_addc(&o, ' ');
    fl_vec_json_append(&v[0], 1, &o); fl_buf_addc(&o, ' ');
    fl_vec_json_append(&v[1], 0, &o); fl_buf_addc(&o, ' ');
    fl_vec_json_append(&v[1], 1, &o); fl_buf_addc(&o, ' ');
    fl_vec_json_append(&v[2], 0, &o); fl_buf_addc(&o, ' ');
    fl_vec_json_append(&v[2], 1, &o); fl_buf_addc(&o, ' ');
    fl_vec_json_append(&v[3], 0, &o); fl_buf_addc(&o, ' ');
    fl_vec_json_append(&v[4], 0, &o);
    CHECK_STR(o.ptr, "\"2017-11-16\" \"1969-12-31\" \"2017-11-16T22:31:08.123456+00:00\" "
                     "\"1969-12-31T23:59:59.999999+00:00\" \"-14.20\" \"0.05\" "
                     "\"1970-01-01T00:00:00.000000001\" \"f79c3e09-677c-4bbd-a479-3f349cb785e7\"");
    fl_buf_free(&o);
    for (int i = 0; i < 5; i++) { fl_vec_free(&v[i]); fl_field_free(&f[i]); }
}

FL_TEST(codec_round_trip)
{
    fl_codec_t cs[] = { FL_CODEC_NONE, FL_CODEC_SNAPPY, FL_CODEC_GZIP, FL_CODEC_ZSTD, FL_CODEC_LZ4_RAW };
    size_t n = 100000;
    unsigned char *raw = malloc(n), *back = malloc(n);
    for (size_t i = 0; i < n; i++) raw[i] = (unsigned char)((i * 7) % 13 + (i % 1000 == 0));
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        fl_buf_t z;
        fl_buf_init(&z, 0);
        REQUIRE(fl_codec_compress(cs[k], 0, raw, n, &z) == FL_OK);
        if (cs[k] != FL_CODEC_NONE) CHECK(z.len < n / 4);
        memset(back, 0, n);
        CHECK(fl_codec_decompress(cs[k], z.ptr, z.len, back, n) == FL_OK);
        CHECK_MEM(back, raw, n);
        CHECK(fl_codec_decompress(cs[k], z.ptr, z.len, back, n - 1) != FL_OK);
        if (z.len > 10) CHECK(fl_codec_decompress(cs[k], z.ptr, z.len / 2, back, n) != FL_OK);
        fl_buf_free(&z);
    }
    fl_codec_t c;
    CHECK(fl_codec_parse("ZSTD", &c) == FL_OK && c == FL_CODEC_ZSTD);
    CHECK(fl_codec_parse("lz4", &c) == FL_OK && c == FL_CODEC_LZ4_RAW);
    CHECK(fl_codec_parse("brotli", &c) == FL_ERR_INVALID);
    free(raw);
    free(back);
}

#include <jansson.h>
#include "format/json_rows.h"

FL_TEST(json_rows_round_trip)
{
    fl_field_t root;
    make_schema(&root);
    fl_field_t *d = fl_field_add_child(&root);
    fl_field_set(d, 20, "dec", false, FL_TYPE_DECIMAL);
    d->precision = 38; d->scale = 3;
    fl_field_set(fl_field_add_child(&root), 21, "ts", false, FL_TYPE_TIMESTAMPTZ);
    fl_field_set(fl_field_add_child(&root), 22, "day", false, FL_TYPE_DATE);
    fl_field_set(fl_field_add_child(&root), 23, "bin", false, FL_TYPE_BINARY);
    fl_field_set(fl_field_add_child(&root), 24, "u", false, FL_TYPE_UUID);
    fl_vec_t v;
    fl_vec_init(&v, &root);
    const char *rows[] = {
        "{\"id\":1,\"name\":\"x\",\"tags\":[\"a\",null],\"attrs\":{\"k\":1},\"loc\":{\"lat\":2.5},"
        "\"dec\":\"-12345678901234567890123.456\",\"ts\":\"2017-11-16T22:31:08.123456+00:00\","
        "\"day\":\"2017-11-16\",\"bin\":\"00ff\",\"u\":\"f79c3e09-677c-4bbd-a479-3f349cb785e7\"}",
        "{\"id\":2,\"name\":null,\"tags\":null,\"attrs\":null,\"loc\":null,\"dec\":null,\"ts\":null,"
        "\"day\":null,\"bin\":null,\"u\":null}",
    };
    char err[256];
    fl_buf_t out;
    fl_buf_init(&out, 0);
    for (size_t i = 0; i < 2; i++) {
        json_t *j = json_loads(rows[i], 0, NULL);
        REQUIRE(j);
        CHECK(fl_vec_append_json(&v, j, err, sizeof err) == FL_OK);
        json_decref(j);
        fl_buf_reset(&out);
        fl_vec_json_append(&v, i, &out);
        CHECK_STR(out.ptr, rows[i]);
    }
    /* Errors leave the vectors as they were. */
    const char *badrows[] = {
        "{\"name\":\"no id\"}", "{\"id\":\"x\"}", "{\"id\":3,\"dec\":\"1.2345\"}",
        "{\"id\":3,\"ts\":\"2017-13-01T00:00:00\"}", "{\"id\":3,\"u\":\"nope\"}",
        "{\"id\":3,\"loc\":{\"lat\":\"north\"}}", "{\"id\":3,\"attrs\":{\"k\":\"v\"}}",
    };
    for (size_t i = 0; i < sizeof badrows / sizeof badrows[0]; i++) {
        json_t *j = json_loads(badrows[i], 0, NULL);
        REQUIRE(j);
        CHECK(fl_vec_append_json(&v, j, err, sizeof err) == FL_ERR_INVALID);
        json_decref(j);
    }
    CHECK_EQ(v.len, 2);
    CHECK_EQ(v.children[4].children[0].len, 2);
    CHECK_EQ(v.children[3].children[0].len, 1);
    fl_buf_free(&out);
    fl_vec_free(&v);
    fl_field_free(&root);
}

FL_TEST(column_take_equals_append_from)
{
    fl_field_t root;
    make_schema(&root);
    fl_vec_t v, a, b;
    fl_vec_init(&v, &root);
    unsigned seed = 7;
    for (int r = 0; r < 500; r++) {
        seed = seed * 1103515245 + 12345;
        fl_vec_append_struct(&v);
        fl_vec_append_i64(&v.children[0], r);
        if (seed % 5 == 0) fl_vec_append_null(&v.children[1]);
        else { char s[32]; int n = snprintf(s, sizeof s, "s%u", seed % 1000); fl_vec_append_bytes(&v.children[1], s, (size_t)n); }
        if (seed % 7 == 0) fl_vec_append_null(&v.children[2]);
        else {
            for (unsigned k = 0; k < seed % 4; k++) {
                if (k == 1) fl_vec_append_null(&v.children[2].children[0]);
                else fl_vec_append_bytes(&v.children[2].children[0], "", 0);
            }
            fl_vec_end_list(&v.children[2]);
        }
        for (unsigned k = 0; k < seed % 3; k++) {
            fl_vec_append_bytes(&v.children[3].children[0], "kk", 2);
            if (k) fl_vec_append_null(&v.children[3].children[1]);
            else fl_vec_append_i32(&v.children[3].children[1], r);
        }
        fl_vec_end_list(&v.children[3]);
        if (seed % 3 == 0) fl_vec_append_null(&v.children[4]);
        else { fl_vec_append_struct(&v.children[4]); fl_vec_append_f64(&v.children[4].children[0], r / 3.0); }
    }
    uint32_t rows[300];
    for (int i = 0; i < 300; i++) rows[i] = (uint32_t)((i * 37) % 500);
    fl_vec_init(&a, &root);
    fl_vec_init(&b, &root);
    /* twice into the same vectors: appends after existing content */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < 300; i++) fl_vec_append_from(&a, &v, rows[i]);
        fl_vec_take(&b, &v, rows, 300);
    }
    CHECK_EQ(b.len, 600);
    CHECK(fl_vec_eq(&a, &b));
    CHECK_EQ(a.children[1].null_count, b.children[1].null_count);
    fl_vec_clear(&b);
    fl_vec_take(&b, &v, rows, 0);
    CHECK_EQ(b.len, 0);
    fl_vec_free(&a);
    fl_vec_free(&b);
    fl_vec_free(&v);
    fl_field_free(&root);
}
