#include "test.h"
#include <math.h>
#include <stdlib.h>
#include "base/buf.h"
#include "format/parquet.h"
#include "format/parquet_meta.h"
#include "format/parquet_write_int.h"

static fl_err_t buf_sink(void *ctx, const void *p, size_t n)
{
    return fl_buf_add(ctx, p, n);
}

/* Decode the RLE/bit-packed hybrid (test-side reference decoder). */
static size_t rle_decode(const unsigned char *p, size_t len, int bw, uint32_t *out, size_t n)
{
    size_t pos = 0, got = 0, vb = ((size_t)bw + 7) / 8;
    while (got < n && pos < len) {
        uint64_t h = 0;
        int sh = 0;
        while (p[pos] & 0x80) { h |= (uint64_t)(p[pos++] & 0x7f) << sh; sh += 7; }
        h |= (uint64_t)p[pos++] << sh;
        if (h & 1) {
            size_t cnt = (size_t)(h >> 1) * 8;
            uint64_t acc = 0;
            int bits = 0;
            for (size_t k = 0; k < cnt; k++) {
                while (bits < bw) { acc |= (uint64_t)p[pos++] << bits; bits += 8; }
                uint32_t v = (uint32_t)(acc & ((bw == 32) ? 0xffffffffull : ((1ull << bw) - 1)));
                acc >>= bw;
                bits -= bw;
                if (got < n) out[got++] = v;
            }
        } else {
            uint32_t v = 0;
            for (size_t b = 0; b < vb; b++) v |= (uint32_t)p[pos++] << (8 * b);
            for (size_t k = 0; k < (size_t)(h >> 1) && got < n; k++) out[got++] = v;
        }
    }
    return got;
}

FL_TEST(parquet_write_rle_roundtrip)
{
    static uint32_t v[5000], back[5000];
    int widths[] = { 1, 3, 8, 13, 20, 32 };
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        int bw = widths[w];
        uint32_t mask = bw == 32 ? 0xffffffffu : (1u << bw) - 1;
        uint64_t st = 42;
        for (size_t i = 0; i < 5000; i++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            /* runs of varying length mixed with literals */
            v[i] = (i / 37) % 3 == 0 ? (uint32_t)(i / 100) & mask : (uint32_t)(st >> 33) & mask;
        }
        for (size_t n = 0; n <= 5000; n = n ? n * 3 + 1 : 1) {
            fl_buf_t b;
            fl_buf_init(&b, 0);
            REQUIRE(fl_pqw_rle_encode(&b, v, n, bw) == FL_OK);
            memset(back, 0xab, sizeof back);
            CHECK_EQ(rle_decode((unsigned char *)b.ptr, b.len, bw, back, n), n);
            CHECK(n == 0 || !memcmp(v, back, n * sizeof *v));
            fl_buf_free(&b);
        }
    }
    /* a long constant run is a single RLE run: header + value */
    for (size_t i = 0; i < 1000; i++) v[i] = 5;
    fl_buf_t b;
    fl_buf_init(&b, 0);
    REQUIRE(fl_pqw_rle_encode(&b, v, 1000, 3) == FL_OK);
    CHECK_EQ(b.len, 3);
    fl_buf_free(&b);
}

FL_TEST(parquet_write_truncate_bounds)
{
    fl_buf_t b;
    fl_buf_init(&b, 0);
    /* strings count code points */
    const char *s = "h\xc3\xa9llo w\xc3\xb6rld, long enough";
    REQUIRE(fl_pq_trunc_lower(true, s, strlen(s), 4, &b) == FL_OK);
    CHECK_EQ(b.len, 5);
    CHECK_MEM(b.ptr, "h\xc3\xa9ll", 5);
    REQUIRE(fl_pq_trunc_upper(true, s, strlen(s), 4, &b));
    CHECK_EQ(b.len, 5);
    CHECK_MEM(b.ptr, "h\xc3\xa9lm", 5);
    /* shorter than the limit: unchanged */
    REQUIRE(fl_pq_trunc_upper(true, "abc", 3, 16, &b));
    CHECK_EQ(b.len, 3);
    CHECK_MEM(b.ptr, "abc", 3);
    /* U+10FFFF cannot be incremented: the previous code point is */
    const char *mx = "a\xf4\x8f\xbf\xbf" "zz";
    REQUIRE(fl_pq_trunc_upper(true, mx, strlen(mx), 2, &b));
    CHECK_EQ(b.len, 1);
    CHECK(b.ptr[0] == 'b');
    CHECK(!fl_pq_trunc_upper(true, "\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbfx", 9, 2, &b));
    /* U+D7FF increments past the surrogates to U+E000 */
    REQUIRE(fl_pq_trunc_upper(true, "\xed\x9f\xbfxy", 5, 1, &b));
    CHECK_EQ(b.len, 3);
    CHECK_MEM(b.ptr, "\xee\x80\x80", 3);
    /* binary: bytes; trailing 0xff carry */
    unsigned char bin[] = { 1, 2, 0xff, 0xff, 9 };
    REQUIRE(fl_pq_trunc_upper(false, bin, 5, 4, &b));
    CHECK_EQ(b.len, 2);
    CHECK(b.ptr[0] == 1 && b.ptr[1] == 3);
    unsigned char ff[] = { 0xff, 0xff, 0xff };
    CHECK(!fl_pq_trunc_upper(false, ff, 3, 2, &b));
    REQUIRE(fl_pq_trunc_lower(false, bin, 5, 3, &b) == FL_OK);
    CHECK_EQ(b.len, 3);
    /* -1: no truncation */
    REQUIRE(fl_pq_trunc_upper(true, s, strlen(s), -1, &b));
    CHECK_EQ(b.len, strlen(s));
    fl_buf_free(&b);
}

FL_TEST(parquet_write_decimal_bytes)
{
    unsigned char o[16];
    CHECK_EQ(fl_pqw_decimal_be(0, o), 1);
    CHECK(o[0] == 0);
    CHECK_EQ(fl_pqw_decimal_be(127, o), 1);
    CHECK_EQ(fl_pqw_decimal_be(128, o), 2);
    CHECK(o[0] == 0 && o[1] == 0x80);
    CHECK_EQ(fl_pqw_decimal_be(-128, o), 1);
    CHECK(o[0] == 0x80);
    CHECK_EQ(fl_pqw_decimal_be(-129, o), 2);
    CHECK(o[0] == 0xff && o[1] == 0x7f);
    CHECK_EQ(fl_pqw_decimal_be(1420, o), 2);  /* 14.20 */
    CHECK(o[0] == 0x05 && o[1] == 0x8c);
    __int128 big = (__int128)1 << 100;
    CHECK_EQ(fl_pqw_decimal_be(-big, o), 13);
}

/* schema: id long req, name string, tags list<string>, loc struct{lat double}, f float, m map<int,long> */
static void schema(fl_field_t *root)
{
    fl_field_set(root, 0, "table", true, FL_TYPE_STRUCT);
    fl_field_set(fl_field_add_child(root), 1, "id", true, FL_TYPE_LONG);
    fl_field_set(fl_field_add_child(root), 2, "name", false, FL_TYPE_STRING);
    fl_field_t *tags = fl_field_add_child(root);
    fl_field_set(tags, 3, "tags", false, FL_TYPE_LIST);
    fl_field_set(fl_field_add_child(tags), 7, "element", false, FL_TYPE_STRING);
    fl_field_t *loc = fl_field_add_child(root);
    fl_field_set(loc, 4, "loc", false, FL_TYPE_STRUCT);
    fl_field_set(fl_field_add_child(loc), 8, "lat", false, FL_TYPE_DOUBLE);
    fl_field_set(fl_field_add_child(root), 5, "f", false, FL_TYPE_FLOAT);
    fl_field_t *m = fl_field_add_child(root);
    fl_field_set(m, 6, "m", false, FL_TYPE_MAP);
    fl_field_set(fl_field_add_child(m), 9, "key", true, FL_TYPE_INT);
    fl_field_set(fl_field_add_child(m), 10, "value", false, FL_TYPE_LONG);
}

static void fill(fl_vec_t *v, int rows)
{
    for (int r = 0; r < rows; r++) {
        fl_vec_append_struct(v);
        fl_vec_append_i64(&v->children[0], r - 5);
        if (r % 4 == 0) fl_vec_append_null(&v->children[1]);
        else fl_vec_append_bytes(&v->children[1], r % 2 ? "bb" : "aaaaaaaaaaaaaaaaaaaaz", r % 2 ? 2 : 21);
        fl_vec_t *tags = &v->children[2];
        if (r % 3 == 0) fl_vec_append_null(tags);
        else {
            for (int k = 0; k < r % 3; k++) fl_vec_append_bytes(&tags->children[0], "t", 1);
            fl_vec_end_list(tags);
        }
        fl_vec_t *loc = &v->children[3];
        if (r % 5 == 0) fl_vec_append_null(loc);
        else { fl_vec_append_struct(loc); fl_vec_append_f64(&loc->children[0], r * 0.5); }
        fl_vec_append_f32(&v->children[4], r % 7 == 0 ? NAN : (r % 7 == 1 ? -0.0f : (float)r));
        fl_vec_t *m = &v->children[5];
        fl_vec_append_i32(&m->children[0], r);
        fl_vec_append_i64(&m->children[1], r);
        fl_vec_end_list(m);
    }
}

FL_TEST(parquet_write_footer_and_metrics)
{
    fl_field_t root;
    schema(&root);
    fl_buf_t out;
    fl_buf_init(&out, 0);
    fl_pq_write_opts_t o;
    fl_pq_write_opts_default(&o);
    o.row_group_bytes = 600;   /* several row groups */
    o.page_bytes = 100;
    fl_pq_writer_t *w;
    REQUIRE(fl_pq_writer_open(&w, &root, &o, (fl_pq_sink_t){ buf_sink, &out }) == FL_OK);
    fl_vec_t v;
    fl_vec_init(&v, &root);
    for (int b = 0; b < 10; b++) {
        fl_vec_clear(&v);
        fill(&v, 30);
        REQUIRE(fl_pq_writer_write(w, &v) == FL_OK);
    }
    CHECK_EQ(fl_pq_writer_rows(w), 300);
    CHECK(fl_pq_writer_bytes(w) > 4);
    fl_pq_file_info_t info;
    REQUIRE(fl_pq_writer_close(w, &info) == FL_OK);
    fl_pq_writer_free(w);
    REQUIRE(out.len > 12);
    CHECK_MEM(out.ptr, "PAR1", 4);
    CHECK_MEM(out.ptr + out.len - 4, "PAR1", 4);
    uint32_t flen;
    memcpy(&flen, out.ptr + out.len - 8, 4);
    REQUIRE(flen < out.len - 12);
    fl_pq_file_meta_t m;
    REQUIRE(fl_pq_file_meta_decode(out.ptr + out.len - 8 - flen, flen, &m) == FL_OK);
    CHECK_EQ(m.num_rows, 300);
    CHECK(m.n_row_groups > 1);
    CHECK_EQ(m.n_column_orders, 7);
    CHECK_EQ(info.record_count, 300);
    CHECK_EQ(info.file_size, (int64_t)out.len);
    CHECK_EQ(info.n_split_offsets, m.n_row_groups);
    /* schema: root, id, name, tags, list, element, loc, lat, f, m, key_value, key, value */
    REQUIRE(m.n_schema == 13);
    CHECK(!(m.schema[0].has & FL_PQ_SE_FIELD_ID));
    CHECK_EQ(m.schema[0].num_children, 6);
    CHECK_EQ(m.schema[1].field_id, 1);
    CHECK_EQ(m.schema[1].repetition_type, FL_PQ_REQUIRED);
    CHECK_EQ(m.schema[3].logical.kind, FL_PQ_LT_LIST);
    CHECK_EQ(m.schema[4].repetition_type, FL_PQ_REPEATED);
    CHECK(!(m.schema[4].has & FL_PQ_SE_FIELD_ID));
    CHECK_EQ(m.schema[5].field_id, 7);
    CHECK_EQ(m.schema[9].logical.kind, FL_PQ_LT_MAP);
    CHECK_STR(m.schema[10].name.ptr, "key_value");
    CHECK_EQ(m.schema[11].repetition_type, FL_PQ_REQUIRED);
    int64_t rows = 0, pos = 4;
    for (uint32_t g = 0; g < m.n_row_groups; g++) {
        const fl_pq_row_group_t *rg = &m.row_groups[g];
        rows += rg->num_rows;
        CHECK_EQ(rg->file_offset, info.split_offsets[g]);
        REQUIRE(rg->n_columns == 7);
        for (uint32_t c = 0; c < 7; c++) {
            const fl_pq_column_meta_t *cm = &rg->columns[c].meta;
            int64_t start = cm->has_dictionary_page_offset ? cm->dictionary_page_offset : cm->data_page_offset;
            CHECK_EQ(start, pos);   /* chunks are contiguous */
            pos = start + cm->total_compressed_size;
            /* walk the pages: values add up */
            int64_t vals = 0, at = start;
            while (at < pos) {
                fl_pq_page_header_t h;
                size_t used;
                REQUIRE(fl_pq_page_header_decode(out.ptr + at, (size_t)(pos - at), &h, &used) == FL_OK);
                if (h.has_data_page) vals += h.data_page.num_values;
                at += (int64_t)used + h.compressed_page_size;
                fl_pq_page_header_free(&h);
            }
            CHECK_EQ(at, pos);
            CHECK_EQ(vals, cm->num_values);
            CHECK(cm->has_stats && cm->stats.has_null_count);
        }
    }
    CHECK_EQ(rows, 300);
    /* metrics: id long [-5, 24], name: bounds truncated to 16 */
    REQUIRE(info.n_metrics == 7);
    const fl_col_metrics_t *id = &info.metrics[0];
    CHECK_EQ(id->field_id, 1);
    CHECK_EQ(id->value_count, 300);
    CHECK_EQ(id->null_count, 0);
    REQUIRE(id->has_lower && id->has_upper && id->lower.len == 8);
    int64_t lo, hi;
    memcpy(&lo, id->lower.ptr, 8);
    memcpy(&hi, id->upper.ptr, 8);
    CHECK_EQ(lo, -5);
    CHECK_EQ(hi, 24);
    const fl_col_metrics_t *name = &info.metrics[1];
    CHECK_EQ(name->null_count, 80);
    REQUIRE(name->has_lower && name->has_upper);
    CHECK_EQ(name->lower.len, 16);
    CHECK_MEM(name->lower.ptr, "aaaaaaaaaaaaaaaa", 16);
    CHECK_EQ(name->upper.len, 2);
    CHECK_MEM(name->upper.ptr, "bb", 2);
    const fl_col_metrics_t *tag = &info.metrics[2];
    CHECK_EQ(tag->field_id, 7);
    CHECK(!tag->has_lower && !tag->has_upper);   /* inside a list */
    CHECK_EQ(tag->value_count, 100 + 100 + 200); /* null lists 100, 1 tag 100, 2 tags 100*2 */
    const fl_col_metrics_t *lat = &info.metrics[3];
    CHECK_EQ(lat->null_count, 60);
    CHECK(lat->has_lower && lat->has_nan_count && lat->nan_count == 0);
    const fl_col_metrics_t *f = &info.metrics[4];
    CHECK(f->has_nan_count);
    CHECK_EQ(f->nan_count, 10 * 5);   /* r = 0, 7, 14, 21, 28 of each batch */
    REQUIRE(f->has_lower && f->lower.len == 4);
    float fl;
    memcpy(&fl, f->lower.ptr, 4);
    CHECK(fl == 0 && signbit(fl));
    CHECK(!info.metrics[5].has_lower && info.metrics[5].value_count == 300);
    fl_pq_file_meta_free(&m);
    fl_pq_file_info_free(&info);
    fl_vec_free(&v);
    fl_buf_free(&out);
    fl_field_free(&root);
}

FL_TEST(parquet_write_rejects_bad_input)
{
    fl_field_t root;
    schema(&root);
    fl_buf_t out;
    fl_buf_init(&out, 0);
    fl_pq_writer_t *w;
    REQUIRE(fl_pq_writer_open(&w, &root, NULL, (fl_pq_sink_t){ buf_sink, &out }) == FL_OK);
    fl_vec_t v;
    fl_vec_init(&v, &root);
    fill(&v, 3);
    v.children[1].len = 2;          /* child shorter than the batch */
    CHECK(fl_pq_writer_write(w, &v) == FL_ERR_INVALID);
    fl_pq_writer_free(w);
    /* a null in a required column */
    REQUIRE(fl_pq_writer_open(&w, &root, NULL, (fl_pq_sink_t){ buf_sink, &out }) == FL_OK);
    fl_vec_clear(&v);
    fill(&v, 3);
    v.children[0].valid = calloc(v.children[0].cap, 1);
    v.children[0].null_count = 3;
    CHECK(fl_pq_writer_write(w, &v) == FL_ERR_INVALID);
    fl_pq_writer_free(w);
    fl_vec_free(&v);
    /* schemas Parquet cannot hold */
    fl_field_t bad;
    fl_field_set(&bad, 0, "table", true, FL_TYPE_STRUCT);
    fl_field_set(fl_field_add_child(&bad), 1, "s", false, FL_TYPE_STRUCT);  /* empty group */
    CHECK(fl_pq_writer_open(&w, &bad, NULL, (fl_pq_sink_t){ buf_sink, &out }) == FL_ERR_INVALID);
    fl_field_free(&bad);
    fl_field_set(&bad, 0, "table", true, FL_TYPE_STRUCT);
    fl_field_t *d = fl_field_add_child(&bad);
    fl_field_set(d, 1, "d", false, FL_TYPE_DECIMAL);
    d->precision = 39;
    CHECK(fl_pq_writer_open(&w, &bad, NULL, (fl_pq_sink_t){ buf_sink, &out }) == FL_ERR_INVALID);
    fl_field_free(&bad);
    fl_buf_free(&out);
    fl_field_free(&root);
}

static fl_err_t failing_sink(void *ctx, const void *p, size_t n)
{
    (void)p;
    size_t *left = ctx;
    if (n > *left) return FL_ERR_IO;
    *left -= n;
    return FL_OK;
}

FL_TEST(parquet_write_sink_error_sticks)
{
    fl_field_t root;
    schema(&root);
    size_t left = 100;
    fl_pq_write_opts_t o;
    fl_pq_write_opts_default(&o);
    o.row_group_bytes = 200;
    fl_pq_writer_t *w;
    REQUIRE(fl_pq_writer_open(&w, &root, &o, (fl_pq_sink_t){ failing_sink, &left }) == FL_OK);
    fl_vec_t v;
    fl_vec_init(&v, &root);
    fill(&v, 200);
    fl_err_t e = fl_pq_writer_write(w, &v);
    if (!e) e = fl_pq_writer_close(w, NULL);
    CHECK(e == FL_ERR_IO);
    CHECK(fl_pq_writer_close(w, NULL) == FL_ERR_IO);
    fl_pq_writer_free(w);
    fl_vec_free(&v);
    fl_field_free(&root);
}

/* The bulk shredding paths against floe's reader: nullable and nested leaves,
 * lists with null, empty and null-element slots, short (inline-keyed) and long
 * byte-array dictionary values, with and without dictionaries and with small
 * pages so that pages and dictionary fallbacks are cut often. */
static void rt_schema(fl_field_t *root)
{
    fl_field_set(root, 0, "table", true, FL_TYPE_STRUCT);
    fl_field_set(fl_field_add_child(root), 1, "id", true, FL_TYPE_LONG);
    fl_field_set(fl_field_add_child(root), 2, "s", false, FL_TYPE_STRING);
    fl_field_set(fl_field_add_child(root), 3, "d", false, FL_TYPE_DOUBLE);
    fl_field_t *dec = fl_field_add_child(root);
    fl_field_set(dec, 4, "dec", false, FL_TYPE_DECIMAL);
    dec->precision = 9;
    dec->scale = 2;
    fl_field_t *st = fl_field_add_child(root);
    fl_field_set(st, 5, "st", false, FL_TYPE_STRUCT);
    fl_field_set(fl_field_add_child(st), 6, "a", true, FL_TYPE_STRING);
    fl_field_set(fl_field_add_child(st), 7, "b", false, FL_TYPE_INT);
    fl_field_t *l1 = fl_field_add_child(root);
    fl_field_set(l1, 8, "l1", false, FL_TYPE_LIST);
    fl_field_set(fl_field_add_child(l1), 9, "element", false, FL_TYPE_STRING);
    fl_field_t *l2 = fl_field_add_child(root);
    fl_field_set(l2, 10, "l2", true, FL_TYPE_LIST);
    fl_field_set(fl_field_add_child(l2), 11, "element", true, FL_TYPE_LONG);
}

static void rt_fill(fl_vec_t *v, int rows, uint64_t *seed)
{
    char buf[64];
    for (int i = 0; i < rows; i++) {
        uint64_t r = (*seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL) >> 11;
        fl_vec_append_struct(v);
        fl_vec_append_i64(&v->children[0], i);
        if (r % 7 == 0) fl_vec_append_null(&v->children[1]);
        else {
            size_t n = (r >> 3) % 41; /* 0..40 bytes, inline keys up to 16 */
            for (size_t k = 0; k < n; k++) buf[k] = (char)('a' + (r >> (k % 40)) % 3);
            fl_vec_append_bytes(&v->children[1], buf, (r >> 9) % 4 ? n : (size_t)((r >> 12) % 5));
        }
        if (r % 11 == 0) fl_vec_append_null(&v->children[2]);
        else fl_vec_append_f64(&v->children[2], r % 13 == 0 ? -0.0 : (double)(r % 5000) / 8);
        if (r % 5 == 0) fl_vec_append_null(&v->children[3]);
        else fl_vec_append_i128(&v->children[3], (__int128)(r % 200000) - 100000);
        fl_vec_t *st = &v->children[4];
        if (r % 9 == 0) fl_vec_append_null(st);
        else {
            fl_vec_append_struct(st);
            int n = snprintf(buf, sizeof buf, "v%u", (unsigned)(r % 300));
            fl_vec_append_bytes(&st->children[0], buf, (size_t)n);
            if (r % 4 == 0) fl_vec_append_null(&st->children[1]);
            else fl_vec_append_i32(&st->children[1], (int32_t)(r % 50));
        }
        fl_vec_t *l1 = &v->children[5];
        if (r % 10 == 0) fl_vec_append_null(l1);
        else {
            unsigned n = r % 997 == 0 ? 6000 : (unsigned)((r >> 20) % 5); /* some lists span pages */
            for (unsigned k = 0; k < n; k++) {
                if ((r >> (24 + k % 8)) % 6 == 0) fl_vec_append_null(&l1->children[0]);
                else {
                    int m = snprintf(buf, sizeof buf, "tag-%u-long-enough-to-pass-16", (unsigned)((r >> (30 + k % 8)) % 40));
                    fl_vec_append_bytes(&l1->children[0], buf, (size_t)(k % 2 ? m : 5));
                }
            }
            fl_vec_end_list(l1);
        }
        fl_vec_t *l2 = &v->children[6];
        for (unsigned k = 0; k < (unsigned)((r >> 40) % 3); k++)
            fl_vec_append_i64(&l2->children[0], (int64_t)(r >> (k + 1)));
        fl_vec_end_list(l2);
    }
}

FL_TEST(parquet_write_bulk_paths_round_trip)
{
    fl_field_t root;
    rt_schema(&root);
    for (int mode = 0; mode < 3; mode++) {
        fl_pq_write_opts_t o;
        fl_pq_write_opts_default(&o);
        o.codec = mode == 1 ? FL_CODEC_SNAPPY : FL_CODEC_NONE;
        o.dictionary = mode != 2;
        o.page_bytes = 2000;
        o.dict_page_bytes = mode == 0 ? 3000 : 1 << 20;
        fl_buf_t out;
        fl_buf_init(&out, 0);
        fl_pq_writer_t *w;
        REQUIRE(fl_pq_writer_open(&w, &root, &o, (fl_pq_sink_t){ buf_sink, &out }) == FL_OK);
        fl_vec_t all, v;
        fl_vec_init(&all, &root);
        fl_vec_init(&v, &root);
        uint64_t seed = 42 + (uint64_t)mode, seed2 = seed;
        for (int b = 0; b < 4; b++) {
            fl_vec_clear(&v);
            rt_fill(&v, 1500 + 317 * b, &seed);
            REQUIRE(fl_pq_writer_write(w, &v) == FL_OK);
        }
        for (int b = 0; b < 4; b++) rt_fill(&all, 1500 + 317 * b, &seed2);
        REQUIRE(fl_pq_writer_close(w, NULL) == FL_OK);
        fl_pq_writer_free(w);
        fl_pq_reader_t *r;
        REQUIRE(fl_pq_reader_open(&r, fl_pq_source_mem(out.ptr, out.len)) == FL_OK);
        REQUIRE(fl_pq_reader_project(r, &root) == FL_OK);
        fl_vec_t got, acc;
        memset(&got, 0, sizeof got);
        fl_vec_init(&acc, &root);
        for (;;) {
            bool done = false;
            REQUIRE(fl_pq_reader_next(r, &got, &done) == FL_OK);
            if (done) break;
            for (size_t i = 0; i < got.len; i++) fl_vec_append_from(&acc, &got, i);
        }
        CHECK(acc.len == all.len);
        CHECK(fl_vec_eq(&acc, &all));
        fl_vec_free(&got);
        fl_vec_free(&acc);
        fl_pq_reader_free(r);
        fl_vec_free(&v);
        fl_vec_free(&all);
        fl_buf_free(&out);
    }
    /* a null element in a list of required elements */
    fl_pq_writer_t *w;
    fl_buf_t out;
    fl_buf_init(&out, 0);
    REQUIRE(fl_pq_writer_open(&w, &root, NULL, (fl_pq_sink_t){ buf_sink, &out }) == FL_OK);
    fl_vec_t v;
    fl_vec_init(&v, &root);
    uint64_t seed = 7;
    rt_fill(&v, 50, &seed);
    fl_vec_t *l2 = &v.children[6];
    fl_vec_append_i64(&v.children[0], 50);
    for (int c = 1; c < 6; c++) fl_vec_append_null(&v.children[c]);
    fl_vec_append_null(&l2->children[0]);
    fl_vec_end_list(l2);
    v.len++;
    CHECK(fl_pq_writer_write(w, &v) == FL_ERR_INVALID);
    fl_pq_writer_free(w);
    fl_vec_free(&v);
    fl_buf_free(&out);
    fl_field_free(&root);
}
