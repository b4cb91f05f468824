/* Round-trip fuzz target: the input picks a schema (primitives of every kind,
 * nested structs, lists and maps, required or optional), writer options and
 * the rows' values; floe writes a Parquet file and reads it back, and the
 * values must come back equal. Any difference or failure aborts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "format/column.h"
#include "format/parquet.h"

typedef struct src {
    const uint8_t *p;
    size_t n;
} src_t;

static uint32_t take(src_t *s, uint32_t mod)
{
    uint32_t v = 0;
    for (int i = 0; i < 2; i++) {
        v = v << 8 | (s->n ? *s->p : 0);
        if (s->n) { s->p++; s->n--; }
    }
    return mod ? v % mod : v;
}

static int32_t next_id;

static void gen_field(src_t *s, fl_field_t *f, int depth, bool force_required)
{
    static const fl_type_kind_t prim[] = {
        FL_TYPE_BOOLEAN, FL_TYPE_INT, FL_TYPE_LONG, FL_TYPE_FLOAT, FL_TYPE_DOUBLE, FL_TYPE_DECIMAL,
        FL_TYPE_DATE, FL_TYPE_TIME, FL_TYPE_TIMESTAMP, FL_TYPE_TIMESTAMPTZ, FL_TYPE_TIMESTAMP_NS,
        FL_TYPE_STRING, FL_TYPE_UUID, FL_TYPE_FIXED, FL_TYPE_BINARY,
    };
    uint32_t pick = take(s, depth < 2 ? 18 : 15);
    char name[16];
    int32_t id = ++next_id;
    snprintf(name, sizeof name, "f%d", id);
    bool req = force_required || take(s, 3) == 0;
    if (pick < 15) {
        fl_field_set(f, id, name, req, prim[pick]);
        if (f->kind == FL_TYPE_DECIMAL) {
            f->precision = 1 + (int32_t)take(s, 38);
            f->scale = (int32_t)take(s, (uint32_t)f->precision + 1);
        }
        if (f->kind == FL_TYPE_FIXED) f->length = 1 + (int32_t)take(s, 20);
        return;
    }
    if (pick == 15) {
        fl_field_set(f, id, name, req, FL_TYPE_STRUCT);
        uint32_t n = 1 + take(s, 3);
        for (uint32_t i = 0; i < n; i++) gen_field(s, fl_field_add_child(f), depth + 1, false);
    } else if (pick == 16) {
        fl_field_set(f, id, name, req, FL_TYPE_LIST);
        gen_field(s, fl_field_add_child(f), depth + 1, false);
        free(f->children[0].name);
        f->children[0].name = strdup("element");
    } else {
        fl_field_set(f, id, name, req, FL_TYPE_MAP);
        fl_field_t *k = fl_field_add_child(f);
        fl_field_set(k, ++next_id, "key", true, take(s, 2) ? FL_TYPE_STRING : FL_TYPE_INT);
        gen_field(s, fl_field_add_child(f), depth + 1, false);
        free(f->children[1].name);
        f->children[1].name = strdup("value");
    }
}

static __int128 dec_max(int32_t p)
{
    __int128 m = 1;
    for (int i = 0; i < p; i++) m *= 10;
    return m - 1;
}

static void gen_value(src_t *s, fl_vec_t *v, bool allow_null)
{
    const fl_field_t *f = v->field;
    if (!f->required && allow_null && take(s, 5) == 0) {
        fl_vec_append_null(v);
        return;
    }
    uint8_t b[40];
    switch (f->kind) {
    case FL_TYPE_BOOLEAN: fl_vec_append_bool(v, take(s, 2)); break;
    case FL_TYPE_INT: case FL_TYPE_DATE: fl_vec_append_i32(v, (int32_t)(take(s, 0) << 16 | take(s, 0))); break;
    case FL_TYPE_LONG: case FL_TYPE_TIME: case FL_TYPE_TIMESTAMP: case FL_TYPE_TIMESTAMPTZ:
    case FL_TYPE_TIMESTAMP_NS: case FL_TYPE_TIMESTAMPTZ_NS: {
        uint64_t x = (uint64_t)take(s, 0) << 48 | (uint64_t)take(s, 0) << 32 | take(s, 0) << 16 | take(s, 0);
        if (f->kind == FL_TYPE_TIME) x %= 86400000000ULL;
        fl_vec_append_i64(v, (int64_t)x);
        break;
    }
    case FL_TYPE_FLOAT: { uint32_t x = take(s, 0) << 16 | take(s, 0); float y; memcpy(&y, &x, 4); fl_vec_append_f32(v, y); break; }
    case FL_TYPE_DOUBLE: {
        uint64_t x = (uint64_t)take(s, 0) << 48 | (uint64_t)take(s, 0) << 32 | take(s, 0) << 16 | take(s, 0);
        double y; memcpy(&y, &x, 8); fl_vec_append_f64(v, y); break;
    }
    case FL_TYPE_DECIMAL: {
        unsigned __int128 x = 0;
        for (int i = 0; i < 8; i++) x = x << 16 | take(s, 0);
        __int128 m = dec_max(f->precision);
        __int128 y = (__int128)(x % (unsigned __int128)(m + 1));
        fl_vec_append_i128(v, take(s, 2) ? -y : y);
        break;
    }
    case FL_TYPE_STRING: case FL_TYPE_BINARY: {
        uint32_t n = take(s, 24);
        for (uint32_t i = 0; i < n; i++) b[i] = (uint8_t)(f->kind == FL_TYPE_STRING ? 'a' + take(s, 4) : take(s, 256));
        fl_vec_append_bytes(v, b, n);
        break;
    }
    case FL_TYPE_UUID: case FL_TYPE_FIXED: {
        size_t n = fl_field_width(f);
        for (size_t i = 0; i < n; i++) b[i] = (uint8_t)take(s, 256);
        fl_vec_append_bytes(v, b, n);
        break;
    }
    case FL_TYPE_STRUCT:
        fl_vec_append_struct(v);
        for (uint32_t i = 0; i < v->n_children; i++) gen_value(s, &v->children[i], true);
        break;
    case FL_TYPE_LIST: {
        uint32_t n = take(s, 4);
        for (uint32_t i = 0; i < n; i++) gen_value(s, &v->children[0], true);
        fl_vec_end_list(v);
        break;
    }
    case FL_TYPE_MAP: {
        uint32_t n = take(s, 4);
        for (uint32_t i = 0; i < n; i++) {
            gen_value(s, &v->children[0], false);
            gen_value(s, &v->children[1], true);
        }
        fl_vec_end_list(v);
        break;
    }
    }
}

static fl_err_t buf_sink(void *ctx, const void *p, size_t n) { return fl_buf_add(ctx, p, n); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    src_t s = { data, size };
    next_id = 0;
    fl_field_t root;
    fl_field_set(&root, 0, "table", true, FL_TYPE_STRUCT);
    uint32_t nf = 1 + take(&s, 5);
    for (uint32_t i = 0; i < nf; i++) gen_field(&s, fl_field_add_child(&root), 0, false);
    fl_pq_write_opts_t o;
    fl_pq_write_opts_default(&o);
    static const fl_codec_t codecs[] = { FL_CODEC_NONE, FL_CODEC_SNAPPY, FL_CODEC_GZIP, FL_CODEC_ZSTD, FL_CODEC_LZ4_RAW };
    o.codec = codecs[take(&s, 5)];
    o.page_bytes = 64 + take(&s, 4096);
    o.row_group_bytes = 256 + take(&s, 0) * 4;
    o.dict_page_bytes = 16 + take(&s, 2048);
    o.dictionary = take(&s, 4) != 0;
    uint32_t rows = take(&s, 300);
    uint32_t batches = 1 + take(&s, 3);

    fl_vec_t all, batch;
    fl_vec_init(&all, &root);
    fl_vec_init(&batch, &root);
    fl_buf_t file;
    fl_buf_init(&file, 0);
    fl_pq_writer_t *w = NULL;
    if (fl_pq_writer_open(&w, &root, &o, (fl_pq_sink_t){ buf_sink, &file })) abort();
    for (uint32_t b = 0; b < batches; b++) {
        fl_vec_clear(&batch);
        for (uint32_t r = 0; r < rows; r++) {
            fl_vec_append_struct(&batch);
            for (uint32_t c = 0; c < batch.n_children; c++) gen_value(&s, &batch.children[c], true);
        }
        for (size_t r = 0; r < batch.len; r++) fl_vec_append_from(&all, &batch, r);
        if (fl_pq_writer_write(w, &batch)) abort();
    }
    fl_pq_file_info_t info;
    if (fl_pq_writer_close(w, &info)) abort();
    if (info.record_count != (int64_t)all.len || info.file_size != (int64_t)file.len) abort();
    fl_pq_file_info_free(&info);
    fl_pq_writer_free(w);

    fl_pq_reader_t *r = NULL;
    if (fl_pq_reader_open(&r, fl_pq_source_mem(file.ptr, file.len))) abort();
    if (fl_pq_reader_project(r, &root)) abort();
    fl_vec_t got, back;
    memset(&got, 0, sizeof got);
    fl_vec_init(&back, &root);
    for (;;) {
        bool done = false;
        if (fl_pq_reader_next(r, &got, &done)) {
            fprintf(stderr, "read failed: %s\n", fl_pq_reader_error(r));
            abort();
        }
        if (done) break;
        for (size_t i = 0; i < got.len; i++) fl_vec_append_from(&back, &got, i);
    }
    if (!fl_vec_eq(&all, &back)) {
        fprintf(stderr, "round trip differs: %zu rows written, %zu read\n", all.len, back.len);
        abort();
    }
    fl_pq_reader_free(r);
    fl_vec_free(&got);
    fl_vec_free(&back);
    fl_vec_free(&all);
    fl_vec_free(&batch);
    fl_buf_free(&file);
    fl_field_free(&root);
    return 0;
}
