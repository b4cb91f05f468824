/* Parquet metadata <-> Thrift compact (see parquet_meta.h).
 *
 * Decoders are one loop per struct: read a field header, dispatch on the field
 * id, skip what is unknown, and record which ids were seen so required fields
 * can be checked at the STOP. Every owned field is released before it is
 * (re)assigned, so a duplicated field cannot leak, and a partially decoded
 * structure is always in a state its free function accepts: the top-level
 * decode frees it on any error. List sizes come pre-checked against the
 * remaining input by the Thrift reader, so allocations stay O(input). */
#include "format/parquet_meta.h"
#include "format/thrift.h"
#include <stdlib.h>
#include <string.h>

typedef fl_thrift_reader_t rd_t;
typedef fl_thrift_writer_t wr_t;

/* ---------------- freeing ---------------- */

static void bin_free(fl_pq_bin_t *b)
{
    free(b->ptr);
    b->ptr = NULL;
    b->len = 0;
}

static void kv_list_free(fl_pq_kv_t *kv, uint32_t n)
{
    for (uint32_t i = 0; kv && i < n; i++) {
        bin_free(&kv[i].key);
        bin_free(&kv[i].value);
    }
    free(kv);
}

static void stats_free(fl_pq_stats_t *s)
{
    bin_free(&s->max);
    bin_free(&s->min);
    bin_free(&s->max_value);
    bin_free(&s->min_value);
    memset(s, 0, sizeof *s);
}

static void colmeta_free(fl_pq_column_meta_t *c)
{
    free(c->encodings);
    for (uint32_t i = 0; c->path && i < c->n_path; i++) bin_free(&c->path[i]);
    free(c->path);
    kv_list_free(c->kv, c->n_kv);
    stats_free(&c->stats);
    memset(c, 0, sizeof *c);
}

static void row_group_free(fl_pq_row_group_t *g)
{
    for (uint32_t i = 0; g->columns && i < g->n_columns; i++) {
        bin_free(&g->columns[i].file_path);
        colmeta_free(&g->columns[i].meta);
    }
    free(g->columns);
    memset(g, 0, sizeof *g);
}

void fl_pq_file_meta_free(fl_pq_file_meta_t *m)
{
    if (!m) return;
    for (uint32_t i = 0; m->schema && i < m->n_schema; i++) bin_free(&m->schema[i].name);
    free(m->schema);
    for (uint32_t i = 0; m->row_groups && i < m->n_row_groups; i++) row_group_free(&m->row_groups[i]);
    free(m->row_groups);
    kv_list_free(m->kv, m->n_kv);
    bin_free(&m->created_by);
    memset(m, 0, sizeof *m);
}

void fl_pq_page_header_free(fl_pq_page_header_t *h)
{
    if (!h) return;
    stats_free(&h->data_page.stats);
    stats_free(&h->data_page_v2.stats);
    memset(h, 0, sizeof *h);
}

/* ---------------- decoding helpers ---------------- */

static fl_err_t rd_i32(rd_t *r, int t, int32_t *v)
{
    return t == FL_TC_I32 ? fl_thrift_read_i32(r, v) : FL_ERR_INVALID;
}

static fl_err_t rd_i64(rd_t *r, int t, int64_t *v)
{
    return t == FL_TC_I64 ? fl_thrift_read_i64(r, v) : FL_ERR_INVALID;
}

static fl_err_t rd_bool(rd_t *r, int t, bool *v)
{
    return t == FL_TC_BOOL ? fl_thrift_read_bool(r, v) : FL_ERR_INVALID;
}

/* A binary/string field or list element (t == FL_TC_BINARY), copied. */
static fl_err_t rd_bin(rd_t *r, int t, fl_pq_bin_t *b)
{
    const uint8_t *p;
    size_t n;
    fl_err_t rc;
    if (t != FL_TC_BINARY) return FL_ERR_INVALID;
    if ((rc = fl_thrift_read_binary(r, &p, &n))) return rc;
    bin_free(b);
    b->ptr = malloc(n + 1);
    if (!b->ptr) return FL_ERR_NOMEM;
    if (n) memcpy(b->ptr, p, n);
    b->ptr[n] = 0;
    b->len = n;
    return FL_OK;
}

/* A list field header with the expected element type, and a zeroed array for it. */
static fl_err_t rd_list(rd_t *r, int t, int want, size_t elsz, void **arr, uint32_t *n)
{
    int et;
    fl_err_t rc;
    if (t != FL_TC_LIST && t != FL_TC_SET) return FL_ERR_INVALID;
    if ((rc = fl_thrift_read_list_begin(r, &et, n))) return rc;
    if (et != want) return FL_ERR_INVALID;
    *arr = calloc(*n ? *n : 1, elsz);
    return *arr ? FL_OK : FL_ERR_NOMEM;
}

/* The field loop shared by every struct decoder: declares rc, t, id and seen
 * (bit i set once field i has been read). Cases assign rc; unknown ids skip. */
#define FIELDS_BEGIN(r)                                                          \
    fl_err_t rc;                                                                 \
    int t;                                                                       \
    int16_t id;                                                                  \
    uint32_t seen = 0;                                                           \
    if ((rc = fl_thrift_read_struct_begin(r))) return rc;                        \
    for (;;) {                                                                   \
        if ((rc = fl_thrift_read_field(r, &t, &id))) return rc;                  \
        if (t == FL_TC_STOP) break;                                              \
        switch (id) {
#define FIELDS_END(r)                                                            \
        default: rc = fl_thrift_skip(r, t); break;                               \
        }                                                                        \
        if (rc) return rc;                                                       \
        if (id >= 0 && id < 32) seen |= 1u << id;                                \
    }                                                                            \
    if ((rc = fl_thrift_read_struct_end(r))) return rc;
#define REQUIRED(...) (required_ok(seen, (int[]){ __VA_ARGS__, -1 }) ? FL_OK : FL_ERR_INVALID)

static bool required_ok(uint32_t seen, const int *ids)
{
    for (; *ids >= 0; ids++)
        if (!(seen & (1u << *ids))) return false;
    return true;
}

/* An empty struct (or one whose fields we do not need). */
static fl_err_t rd_empty(rd_t *r, int t)
{
    return t == FL_TC_STRUCT ? fl_thrift_skip(r, t) : FL_ERR_INVALID;
}

/* ---------------- struct decoders ---------------- */

static fl_err_t dec_kv(rd_t *r, fl_pq_kv_t *kv)
{
    FIELDS_BEGIN(r)
    case 1: rc = rd_bin(r, t, &kv->key); break;
    case 2: rc = rd_bin(r, t, &kv->value); break;
    FIELDS_END(r)
    return REQUIRED(1);
}

static fl_err_t dec_kv_list(rd_t *r, int t, fl_pq_kv_t **kv, uint32_t *n)
{
    fl_err_t rc;
    void *arr;
    uint32_t cnt;
    kv_list_free(*kv, *n);
    *kv = NULL;
    *n = 0;
    if ((rc = rd_list(r, t, FL_TC_STRUCT, sizeof **kv, &arr, &cnt))) return rc;
    *kv = arr;
    *n = cnt;
    for (uint32_t i = 0; i < cnt; i++)
        if ((rc = dec_kv(r, &(*kv)[i]))) return rc;
    return FL_OK;
}

static fl_err_t dec_stats(rd_t *r, fl_pq_stats_t *s)
{
    stats_free(s);
    FIELDS_BEGIN(r)
    case 1: rc = rd_bin(r, t, &s->max); break;
    case 2: rc = rd_bin(r, t, &s->min); break;
    case 3: rc = rd_i64(r, t, &s->null_count); s->has_null_count = true; break;
    case 4: rc = rd_i64(r, t, &s->distinct_count); s->has_distinct_count = true; break;
    case 5: rc = rd_bin(r, t, &s->max_value); break;
    case 6: rc = rd_bin(r, t, &s->min_value); break;
    FIELDS_END(r)
    (void)seen;
    return FL_OK;
}

static fl_err_t dec_time_unit(rd_t *r, int *unit)
{
    *unit = 0;
    FIELDS_BEGIN(r)
    case FL_PQ_UNIT_MILLIS:
    case FL_PQ_UNIT_MICROS:
    case FL_PQ_UNIT_NANOS:
        rc = rd_empty(r, t);
        *unit = id;
        break;
    FIELDS_END(r)
    (void)seen;
    return *unit ? FL_OK : FL_ERR_INVALID;
}

static fl_err_t dec_decimal(rd_t *r, fl_pq_logical_t *lt)
{
    FIELDS_BEGIN(r)
    case 1: rc = rd_i32(r, t, &lt->scale); break;
    case 2: rc = rd_i32(r, t, &lt->precision); break;
    FIELDS_END(r)
    return REQUIRED(1, 2);
}

static fl_err_t dec_time(rd_t *r, fl_pq_logical_t *lt)
{
    FIELDS_BEGIN(r)
    case 1: rc = rd_bool(r, t, &lt->utc); break;
    case 2: rc = t == FL_TC_STRUCT ? dec_time_unit(r, &lt->unit) : FL_ERR_INVALID; break;
    FIELDS_END(r)
    return REQUIRED(1, 2);
}

static fl_err_t dec_int_type(rd_t *r, fl_pq_logical_t *lt)
{
    FIELDS_BEGIN(r)
    case 1: rc = t == FL_TC_BYTE ? fl_thrift_read_byte(r, &lt->bit_width) : FL_ERR_INVALID; break;
    case 2: rc = rd_bool(r, t, &lt->is_signed); break;
    FIELDS_END(r)
    return REQUIRED(1, 2);
}

static fl_err_t dec_logical(rd_t *r, fl_pq_logical_t *lt)
{
    memset(lt, 0, sizeof *lt);
    FIELDS_BEGIN(r)
    case FL_PQ_LT_STRING: case FL_PQ_LT_MAP: case FL_PQ_LT_LIST: case FL_PQ_LT_ENUM:
    case FL_PQ_LT_DATE: case FL_PQ_LT_UNKNOWN: case FL_PQ_LT_JSON: case FL_PQ_LT_BSON:
    case FL_PQ_LT_UUID: case FL_PQ_LT_FLOAT16:
        memset(lt, 0, sizeof *lt);
        rc = rd_empty(r, t);
        lt->kind = id;
        break;
    case FL_PQ_LT_DECIMAL:
        memset(lt, 0, sizeof *lt);
        rc = t == FL_TC_STRUCT ? dec_decimal(r, lt) : FL_ERR_INVALID;
        lt->kind = id;
        break;
    case FL_PQ_LT_TIME:
    case FL_PQ_LT_TIMESTAMP:
        memset(lt, 0, sizeof *lt);
        rc = t == FL_TC_STRUCT ? dec_time(r, lt) : FL_ERR_INVALID;
        lt->kind = id;
        break;
    case FL_PQ_LT_INTEGER:
        memset(lt, 0, sizeof *lt);
        rc = t == FL_TC_STRUCT ? dec_int_type(r, lt) : FL_ERR_INVALID;
        lt->kind = id;
        break;
    FIELDS_END(r)
    (void)seen;
    return FL_OK;
}

static fl_err_t dec_schema_elem(rd_t *r, fl_pq_schema_elem_t *e)
{
    FIELDS_BEGIN(r)
    case 1: rc = rd_i32(r, t, &e->type); e->has |= FL_PQ_SE_TYPE; break;
    case 2: rc = rd_i32(r, t, &e->type_length); e->has |= FL_PQ_SE_TYPE_LENGTH; break;
    case 3: rc = rd_i32(r, t, &e->repetition_type); e->has |= FL_PQ_SE_REPETITION; break;
    case 4: rc = rd_bin(r, t, &e->name); break;
    case 5: rc = rd_i32(r, t, &e->num_children); e->has |= FL_PQ_SE_NUM_CHILDREN; break;
    case 6: rc = rd_i32(r, t, &e->converted_type); e->has |= FL_PQ_SE_CONVERTED; break;
    case 7: rc = rd_i32(r, t, &e->scale); e->has |= FL_PQ_SE_SCALE; break;
    case 8: rc = rd_i32(r, t, &e->precision); e->has |= FL_PQ_SE_PRECISION; break;
    case 9: rc = rd_i32(r, t, &e->field_id); e->has |= FL_PQ_SE_FIELD_ID; break;
    case 10: rc = t == FL_TC_STRUCT ? dec_logical(r, &e->logical) : FL_ERR_INVALID; break;
    FIELDS_END(r)
    return REQUIRED(4);
}

static fl_err_t dec_colmeta(rd_t *r, fl_pq_column_meta_t *c)
{
    void *arr;
    uint32_t cnt;
    colmeta_free(c);
    FIELDS_BEGIN(r)
    case 1: rc = rd_i32(r, t, &c->type); break;
    case 2:
        free(c->encodings);
        c->encodings = NULL;
        c->n_encodings = 0;
        if ((rc = rd_list(r, t, FL_TC_I32, sizeof(int32_t), &arr, &cnt))) break;
        c->encodings = arr;
        c->n_encodings = cnt;
        for (uint32_t i = 0; i < cnt && !rc; i++) rc = fl_thrift_read_i32(r, &c->encodings[i]);
        break;
    case 3:
        for (uint32_t i = 0; c->path && i < c->n_path; i++) bin_free(&c->path[i]);
        free(c->path);
        c->path = NULL;
        c->n_path = 0;
        if ((rc = rd_list(r, t, FL_TC_BINARY, sizeof(fl_pq_bin_t), &arr, &cnt))) break;
        c->path = arr;
        c->n_path = cnt;
        for (uint32_t i = 0; i < cnt && !rc; i++) rc = rd_bin(r, FL_TC_BINARY, &c->path[i]);
        break;
    case 4: rc = rd_i32(r, t, &c->codec); break;
    case 5: rc = rd_i64(r, t, &c->num_values); break;
    case 6: rc = rd_i64(r, t, &c->total_uncompressed_size); break;
    case 7: rc = rd_i64(r, t, &c->total_compressed_size); break;
    case 8: rc = dec_kv_list(r, t, &c->kv, &c->n_kv); break;
    case 9: rc = rd_i64(r, t, &c->data_page_offset); break;
    case 11:
        rc = rd_i64(r, t, &c->dictionary_page_offset);
        c->has_dictionary_page_offset = true;
        break;
    case 12:
        rc = t == FL_TC_STRUCT ? dec_stats(r, &c->stats) : FL_ERR_INVALID;
        c->has_stats = true;
        break;
    FIELDS_END(r)
    return REQUIRED(1, 2, 3, 4, 5, 6, 7, 9);
}

static fl_err_t dec_column_chunk(rd_t *r, fl_pq_column_chunk_t *cc)
{
    FIELDS_BEGIN(r)
    case 1: rc = rd_bin(r, t, &cc->file_path); break;
    case 2: rc = rd_i64(r, t, &cc->file_offset); break;
    case 3:
        cc->has_meta = true;
        rc = t == FL_TC_STRUCT ? dec_colmeta(r, &cc->meta) : FL_ERR_INVALID;
        break;
    FIELDS_END(r)
    (void)seen;  /* file_offset is required with a default of 0 */
    return FL_OK;
}

static fl_err_t dec_row_group(rd_t *r, fl_pq_row_group_t *g)
{
    void *arr;
    uint32_t cnt;
    FIELDS_BEGIN(r)
    case 1:
        for (uint32_t i = 0; g->columns && i < g->n_columns; i++) {
            bin_free(&g->columns[i].file_path);
            colmeta_free(&g->columns[i].meta);
        }
        free(g->columns);
        g->columns = NULL;
        g->n_columns = 0;
        if ((rc = rd_list(r, t, FL_TC_STRUCT, sizeof(fl_pq_column_chunk_t), &arr, &cnt))) break;
        g->columns = arr;
        g->n_columns = cnt;
        for (uint32_t i = 0; i < cnt && !rc; i++) rc = dec_column_chunk(r, &g->columns[i]);
        break;
    case 2: rc = rd_i64(r, t, &g->total_byte_size); break;
    case 3: rc = rd_i64(r, t, &g->num_rows); break;
    case 5: rc = rd_i64(r, t, &g->file_offset); g->has_file_offset = true; break;
    case 6:
        rc = rd_i64(r, t, &g->total_compressed_size);
        g->has_total_compressed_size = true;
        break;
    FIELDS_END(r)
    return REQUIRED(1, 2, 3);
}

static fl_err_t dec_file_meta(rd_t *r, fl_pq_file_meta_t *m)
{
    void *arr;
    uint32_t cnt;
    FIELDS_BEGIN(r)
    case 1: rc = rd_i32(r, t, &m->version); break;
    case 2:
        for (uint32_t i = 0; m->schema && i < m->n_schema; i++) bin_free(&m->schema[i].name);
        free(m->schema);
        m->schema = NULL;
        m->n_schema = 0;
        if ((rc = rd_list(r, t, FL_TC_STRUCT, sizeof(fl_pq_schema_elem_t), &arr, &cnt))) break;
        m->schema = arr;
        m->n_schema = cnt;
        for (uint32_t i = 0; i < cnt && !rc; i++) rc = dec_schema_elem(r, &m->schema[i]);
        break;
    case 3: rc = rd_i64(r, t, &m->num_rows); break;
    case 4:
        for (uint32_t i = 0; m->row_groups && i < m->n_row_groups; i++)
            row_group_free(&m->row_groups[i]);
        free(m->row_groups);
        m->row_groups = NULL;
        m->n_row_groups = 0;
        if ((rc = rd_list(r, t, FL_TC_STRUCT, sizeof(fl_pq_row_group_t), &arr, &cnt))) break;
        m->row_groups = arr;
        m->n_row_groups = cnt;
        for (uint32_t i = 0; i < cnt && !rc; i++) rc = dec_row_group(r, &m->row_groups[i]);
        break;
    case 5: rc = dec_kv_list(r, t, &m->kv, &m->n_kv); break;
    case 6: rc = rd_bin(r, t, &m->created_by); break;
    case 7: {
        int et;
        if (t != FL_TC_LIST && t != FL_TC_SET) { rc = FL_ERR_INVALID; break; }
        if ((rc = fl_thrift_read_list_begin(r, &et, &cnt))) break;
        if (et != FL_TC_STRUCT) { rc = FL_ERR_INVALID; break; }
        m->n_column_orders = cnt;
        for (uint32_t i = 0; i < cnt && !rc; i++) rc = fl_thrift_skip(r, FL_TC_STRUCT);
        break;
    }
    FIELDS_END(r)
    return REQUIRED(1, 2, 3, 4);
}

static fl_err_t dec_data_page(rd_t *r, fl_pq_data_page_header_t *d)
{
    FIELDS_BEGIN(r)
    case 1: rc = rd_i32(r, t, &d->num_values); break;
    case 2: rc = rd_i32(r, t, &d->encoding); break;
    case 3: rc = rd_i32(r, t, &d->definition_level_encoding); break;
    case 4: rc = rd_i32(r, t, &d->repetition_level_encoding); break;
    case 5:
        d->has_stats = true;
        rc = t == FL_TC_STRUCT ? dec_stats(r, &d->stats) : FL_ERR_INVALID;
        break;
    FIELDS_END(r)
    return REQUIRED(1, 2, 3, 4);
}

static fl_err_t dec_dict_page(rd_t *r, fl_pq_dict_page_header_t *d)
{
    FIELDS_BEGIN(r)
    case 1: rc = rd_i32(r, t, &d->num_values); break;
    case 2: rc = rd_i32(r, t, &d->encoding); break;
    case 3: rc = rd_bool(r, t, &d->is_sorted); d->has_is_sorted = true; break;
    FIELDS_END(r)
    return REQUIRED(1, 2);
}

static fl_err_t dec_data_page_v2(rd_t *r, fl_pq_data_page_header_v2_t *d)
{
    FIELDS_BEGIN(r)
    case 1: rc = rd_i32(r, t, &d->num_values); break;
    case 2: rc = rd_i32(r, t, &d->num_nulls); break;
    case 3: rc = rd_i32(r, t, &d->num_rows); break;
    case 4: rc = rd_i32(r, t, &d->encoding); break;
    case 5: rc = rd_i32(r, t, &d->definition_levels_byte_length); break;
    case 6: rc = rd_i32(r, t, &d->repetition_levels_byte_length); break;
    case 7: rc = rd_bool(r, t, &d->is_compressed); d->has_is_compressed = true; break;
    case 8:
        d->has_stats = true;
        rc = t == FL_TC_STRUCT ? dec_stats(r, &d->stats) : FL_ERR_INVALID;
        break;
    FIELDS_END(r)
    return REQUIRED(1, 2, 3, 4, 5, 6);
}

static fl_err_t dec_page_header(rd_t *r, fl_pq_page_header_t *h)
{
    FIELDS_BEGIN(r)
    case 1: rc = rd_i32(r, t, &h->type); break;
    case 2: rc = rd_i32(r, t, &h->uncompressed_page_size); break;
    case 3: rc = rd_i32(r, t, &h->compressed_page_size); break;
    case 4: rc = rd_i32(r, t, &h->crc); h->has_crc = true; break;
    case 5:
        stats_free(&h->data_page.stats);
        memset(&h->data_page, 0, sizeof h->data_page);
        h->has_data_page = true;
        rc = t == FL_TC_STRUCT ? dec_data_page(r, &h->data_page) : FL_ERR_INVALID;
        break;
    case 7:
        memset(&h->dict_page, 0, sizeof h->dict_page);
        h->has_dict_page = true;
        rc = t == FL_TC_STRUCT ? dec_dict_page(r, &h->dict_page) : FL_ERR_INVALID;
        break;
    case 8:
        stats_free(&h->data_page_v2.stats);
        memset(&h->data_page_v2, 0, sizeof h->data_page_v2);
        h->has_data_page_v2 = true;
        rc = t == FL_TC_STRUCT ? dec_data_page_v2(r, &h->data_page_v2) : FL_ERR_INVALID;
        break;
    FIELDS_END(r)
    return REQUIRED(1, 2, 3);
}

fl_err_t fl_pq_file_meta_decode(const void *p, size_t n, fl_pq_file_meta_t *out)
{
    rd_t r;
    fl_err_t rc;
    memset(out, 0, sizeof *out);
    fl_thrift_reader_init(&r, p, n);
    if ((rc = dec_file_meta(&r, out))) goto out;
    if (fl_thrift_reader_left(&r)) rc = FL_ERR_INVALID;
out:
    if (rc) fl_pq_file_meta_free(out);
    return rc;
}

fl_err_t fl_pq_page_header_decode(const void *p, size_t n, fl_pq_page_header_t *out,
                                  size_t *consumed)
{
    rd_t r;
    fl_err_t rc;
    memset(out, 0, sizeof *out);
    fl_thrift_reader_init(&r, p, n);
    if ((rc = dec_page_header(&r, out))) goto out;
    if (consumed) *consumed = n - fl_thrift_reader_left(&r);
out:
    if (rc) fl_pq_page_header_free(out);
    return rc;
}

/* ---------------- encoding ---------------- */

static void wr_bin(wr_t *w, int16_t id, const fl_pq_bin_t *b)
{
    if (b->ptr) fl_thrift_write_binary_field(w, id, b->ptr, b->len);
}

static void wr_req_bin(wr_t *w, int16_t id, const fl_pq_bin_t *b)
{
    fl_thrift_write_binary_field(w, id, b->ptr ? b->ptr : "", b->ptr ? b->len : 0);
}

static void enc_kv_list(wr_t *w, int16_t id, const fl_pq_kv_t *kv, uint32_t n)
{
    fl_thrift_write_field(w, FL_TC_LIST, id);
    fl_thrift_write_list_begin(w, FL_TC_STRUCT, n);
    for (uint32_t i = 0; i < n; i++) {
        fl_thrift_write_struct_begin(w);
        wr_req_bin(w, 1, &kv[i].key);
        wr_bin(w, 2, &kv[i].value);
        fl_thrift_write_struct_end(w);
    }
}

static void enc_stats(wr_t *w, int16_t id, const fl_pq_stats_t *s)
{
    fl_thrift_write_field(w, FL_TC_STRUCT, id);
    fl_thrift_write_struct_begin(w);
    wr_bin(w, 1, &s->max);
    wr_bin(w, 2, &s->min);
    if (s->has_null_count) fl_thrift_write_i64_field(w, 3, s->null_count);
    if (s->has_distinct_count) fl_thrift_write_i64_field(w, 4, s->distinct_count);
    wr_bin(w, 5, &s->max_value);
    wr_bin(w, 6, &s->min_value);
    fl_thrift_write_struct_end(w);
}

static void enc_empty(wr_t *w, int16_t id)
{
    fl_thrift_write_field(w, FL_TC_STRUCT, id);
    fl_thrift_write_struct_begin(w);
    fl_thrift_write_struct_end(w);
}

static void enc_logical(wr_t *w, const fl_pq_logical_t *lt)
{
    fl_thrift_write_field(w, FL_TC_STRUCT, 10);
    fl_thrift_write_struct_begin(w);
    switch (lt->kind) {
    case FL_PQ_LT_DECIMAL:
        fl_thrift_write_field(w, FL_TC_STRUCT, FL_PQ_LT_DECIMAL);
        fl_thrift_write_struct_begin(w);
        fl_thrift_write_i32_field(w, 1, lt->scale);
        fl_thrift_write_i32_field(w, 2, lt->precision);
        fl_thrift_write_struct_end(w);
        break;
    case FL_PQ_LT_TIME:
    case FL_PQ_LT_TIMESTAMP:
        fl_thrift_write_field(w, FL_TC_STRUCT, (int16_t)lt->kind);
        fl_thrift_write_struct_begin(w);
        fl_thrift_write_field_bool(w, 1, lt->utc);
        fl_thrift_write_field(w, FL_TC_STRUCT, 2);
        fl_thrift_write_struct_begin(w);
        if (lt->unit >= FL_PQ_UNIT_MILLIS && lt->unit <= FL_PQ_UNIT_NANOS)
            enc_empty(w, (int16_t)lt->unit);
        else if (!w->err)
            w->err = FL_ERR_INVALID;
        fl_thrift_write_struct_end(w);
        fl_thrift_write_struct_end(w);
        break;
    case FL_PQ_LT_INTEGER:
        fl_thrift_write_field(w, FL_TC_STRUCT, FL_PQ_LT_INTEGER);
        fl_thrift_write_struct_begin(w);
        fl_thrift_write_field(w, FL_TC_BYTE, 1);
        fl_thrift_write_byte(w, lt->bit_width);
        fl_thrift_write_field_bool(w, 2, lt->is_signed);
        fl_thrift_write_struct_end(w);
        break;
    default:
        enc_empty(w, (int16_t)lt->kind);
        break;
    }
    fl_thrift_write_struct_end(w);
}

static void enc_schema_elem(wr_t *w, const fl_pq_schema_elem_t *e)
{
    fl_thrift_write_struct_begin(w);
    if (e->has & FL_PQ_SE_TYPE) fl_thrift_write_i32_field(w, 1, e->type);
    if (e->has & FL_PQ_SE_TYPE_LENGTH) fl_thrift_write_i32_field(w, 2, e->type_length);
    if (e->has & FL_PQ_SE_REPETITION) fl_thrift_write_i32_field(w, 3, e->repetition_type);
    wr_req_bin(w, 4, &e->name);
    if (e->has & FL_PQ_SE_NUM_CHILDREN) fl_thrift_write_i32_field(w, 5, e->num_children);
    if (e->has & FL_PQ_SE_CONVERTED) fl_thrift_write_i32_field(w, 6, e->converted_type);
    if (e->has & FL_PQ_SE_SCALE) fl_thrift_write_i32_field(w, 7, e->scale);
    if (e->has & FL_PQ_SE_PRECISION) fl_thrift_write_i32_field(w, 8, e->precision);
    if (e->has & FL_PQ_SE_FIELD_ID) fl_thrift_write_i32_field(w, 9, e->field_id);
    if (e->logical.kind != FL_PQ_LT_NONE) enc_logical(w, &e->logical);
    fl_thrift_write_struct_end(w);
}

static void enc_colmeta(wr_t *w, const fl_pq_column_meta_t *c)
{
    fl_thrift_write_field(w, FL_TC_STRUCT, 3);
    fl_thrift_write_struct_begin(w);
    fl_thrift_write_i32_field(w, 1, c->type);
    fl_thrift_write_field(w, FL_TC_LIST, 2);
    fl_thrift_write_list_begin(w, FL_TC_I32, c->n_encodings);
    for (uint32_t i = 0; i < c->n_encodings; i++) fl_thrift_write_i32(w, c->encodings[i]);
    fl_thrift_write_field(w, FL_TC_LIST, 3);
    fl_thrift_write_list_begin(w, FL_TC_BINARY, c->n_path);
    for (uint32_t i = 0; i < c->n_path; i++)
        fl_thrift_write_binary(w, c->path[i].ptr ? c->path[i].ptr : "", c->path[i].ptr ? c->path[i].len : 0);
    fl_thrift_write_i32_field(w, 4, c->codec);
    fl_thrift_write_i64_field(w, 5, c->num_values);
    fl_thrift_write_i64_field(w, 6, c->total_uncompressed_size);
    fl_thrift_write_i64_field(w, 7, c->total_compressed_size);
    if (c->kv) enc_kv_list(w, 8, c->kv, c->n_kv);
    fl_thrift_write_i64_field(w, 9, c->data_page_offset);
    if (c->has_dictionary_page_offset) fl_thrift_write_i64_field(w, 11, c->dictionary_page_offset);
    if (c->has_stats) enc_stats(w, 12, &c->stats);
    fl_thrift_write_struct_end(w);
}

static void enc_row_group(wr_t *w, const fl_pq_row_group_t *g)
{
    fl_thrift_write_struct_begin(w);
    fl_thrift_write_field(w, FL_TC_LIST, 1);
    fl_thrift_write_list_begin(w, FL_TC_STRUCT, g->n_columns);
    for (uint32_t i = 0; i < g->n_columns; i++) {
        const fl_pq_column_chunk_t *cc = &g->columns[i];
        fl_thrift_write_struct_begin(w);
        wr_bin(w, 1, &cc->file_path);
        fl_thrift_write_i64_field(w, 2, cc->file_offset);
        if (cc->has_meta) enc_colmeta(w, &cc->meta);
        fl_thrift_write_struct_end(w);
    }
    fl_thrift_write_i64_field(w, 2, g->total_byte_size);
    fl_thrift_write_i64_field(w, 3, g->num_rows);
    if (g->has_file_offset) fl_thrift_write_i64_field(w, 5, g->file_offset);
    if (g->has_total_compressed_size) fl_thrift_write_i64_field(w, 6, g->total_compressed_size);
    fl_thrift_write_struct_end(w);
}

fl_err_t fl_pq_file_meta_encode(const fl_pq_file_meta_t *m, fl_buf_t *out)
{
    wr_t w;
    fl_thrift_writer_init(&w, out);
    fl_thrift_write_struct_begin(&w);
    fl_thrift_write_i32_field(&w, 1, m->version);
    fl_thrift_write_field(&w, FL_TC_LIST, 2);
    fl_thrift_write_list_begin(&w, FL_TC_STRUCT, m->n_schema);
    for (uint32_t i = 0; i < m->n_schema; i++) enc_schema_elem(&w, &m->schema[i]);
    fl_thrift_write_i64_field(&w, 3, m->num_rows);
    fl_thrift_write_field(&w, FL_TC_LIST, 4);
    fl_thrift_write_list_begin(&w, FL_TC_STRUCT, m->n_row_groups);
    for (uint32_t i = 0; i < m->n_row_groups; i++) enc_row_group(&w, &m->row_groups[i]);
    if (m->kv) enc_kv_list(&w, 5, m->kv, m->n_kv);
    wr_bin(&w, 6, &m->created_by);
    if (m->n_column_orders) {
        fl_thrift_write_field(&w, FL_TC_LIST, 7);
        fl_thrift_write_list_begin(&w, FL_TC_STRUCT, m->n_column_orders);
        for (uint32_t i = 0; i < m->n_column_orders; i++) {
            fl_thrift_write_struct_begin(&w);
            enc_empty(&w, 1); /* TYPE_ORDER: TypeDefinedOrder {} */
            fl_thrift_write_struct_end(&w);
        }
    }
    fl_thrift_write_struct_end(&w);
    return fl_thrift_writer_err(&w);
}

fl_err_t fl_pq_page_header_encode(const fl_pq_page_header_t *h, fl_buf_t *out)
{
    wr_t w;
    fl_thrift_writer_init(&w, out);
    fl_thrift_write_struct_begin(&w);
    fl_thrift_write_i32_field(&w, 1, h->type);
    fl_thrift_write_i32_field(&w, 2, h->uncompressed_page_size);
    fl_thrift_write_i32_field(&w, 3, h->compressed_page_size);
    if (h->has_crc) fl_thrift_write_i32_field(&w, 4, h->crc);
    if (h->has_data_page) {
        const fl_pq_data_page_header_t *d = &h->data_page;
        fl_thrift_write_field(&w, FL_TC_STRUCT, 5);
        fl_thrift_write_struct_begin(&w);
        fl_thrift_write_i32_field(&w, 1, d->num_values);
        fl_thrift_write_i32_field(&w, 2, d->encoding);
        fl_thrift_write_i32_field(&w, 3, d->definition_level_encoding);
        fl_thrift_write_i32_field(&w, 4, d->repetition_level_encoding);
        if (d->has_stats) enc_stats(&w, 5, &d->stats);
        fl_thrift_write_struct_end(&w);
    }
    if (h->has_dict_page) {
        const fl_pq_dict_page_header_t *d = &h->dict_page;
        fl_thrift_write_field(&w, FL_TC_STRUCT, 7);
        fl_thrift_write_struct_begin(&w);
        fl_thrift_write_i32_field(&w, 1, d->num_values);
        fl_thrift_write_i32_field(&w, 2, d->encoding);
        if (d->has_is_sorted) fl_thrift_write_field_bool(&w, 3, d->is_sorted);
        fl_thrift_write_struct_end(&w);
    }
    if (h->has_data_page_v2) {
        const fl_pq_data_page_header_v2_t *d = &h->data_page_v2;
        fl_thrift_write_field(&w, FL_TC_STRUCT, 8);
        fl_thrift_write_struct_begin(&w);
        fl_thrift_write_i32_field(&w, 1, d->num_values);
        fl_thrift_write_i32_field(&w, 2, d->num_nulls);
        fl_thrift_write_i32_field(&w, 3, d->num_rows);
        fl_thrift_write_i32_field(&w, 4, d->encoding);
        fl_thrift_write_i32_field(&w, 5, d->definition_levels_byte_length);
        fl_thrift_write_i32_field(&w, 6, d->repetition_levels_byte_length);
        if (d->has_is_compressed) fl_thrift_write_field_bool(&w, 7, d->is_compressed);
        if (d->has_stats) enc_stats(&w, 8, &d->stats);
        fl_thrift_write_struct_end(&w);
    }
    fl_thrift_write_struct_end(&w);
    return fl_thrift_writer_err(&w);
}

/* ---------------- equality ---------------- */

static bool bin_eq(const fl_pq_bin_t *a, const fl_pq_bin_t *b)
{
    if (!a->ptr || !b->ptr) return !a->ptr && !b->ptr;
    return a->len == b->len && (a->len == 0 || !memcmp(a->ptr, b->ptr, a->len));
}

static bool kv_eq(const fl_pq_kv_t *a, uint32_t na, const fl_pq_kv_t *b, uint32_t nb)
{
    if (na != nb || !a != !b) return false;
    for (uint32_t i = 0; i < na; i++)
        if (!bin_eq(&a[i].key, &b[i].key) || !bin_eq(&a[i].value, &b[i].value)) return false;
    return true;
}

static bool stats_eq(const fl_pq_stats_t *a, const fl_pq_stats_t *b)
{
    return bin_eq(&a->max, &b->max) && bin_eq(&a->min, &b->min) &&
           bin_eq(&a->max_value, &b->max_value) && bin_eq(&a->min_value, &b->min_value) &&
           a->has_null_count == b->has_null_count &&
           (!a->has_null_count || a->null_count == b->null_count) &&
           a->has_distinct_count == b->has_distinct_count &&
           (!a->has_distinct_count || a->distinct_count == b->distinct_count);
}

static bool logical_eq(const fl_pq_logical_t *a, const fl_pq_logical_t *b)
{
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case FL_PQ_LT_DECIMAL: return a->scale == b->scale && a->precision == b->precision;
    case FL_PQ_LT_TIME:
    case FL_PQ_LT_TIMESTAMP: return a->utc == b->utc && a->unit == b->unit;
    case FL_PQ_LT_INTEGER: return a->bit_width == b->bit_width && a->is_signed == b->is_signed;
    default: return true;
    }
}

static bool schema_elem_eq(const fl_pq_schema_elem_t *a, const fl_pq_schema_elem_t *b)
{
    if (a->has != b->has || !bin_eq(&a->name, &b->name) || !logical_eq(&a->logical, &b->logical))
        return false;
#define SE_EQ(bit, f) if ((a->has & (bit)) && a->f != b->f) return false
    SE_EQ(FL_PQ_SE_TYPE, type);
    SE_EQ(FL_PQ_SE_TYPE_LENGTH, type_length);
    SE_EQ(FL_PQ_SE_REPETITION, repetition_type);
    SE_EQ(FL_PQ_SE_NUM_CHILDREN, num_children);
    SE_EQ(FL_PQ_SE_CONVERTED, converted_type);
    SE_EQ(FL_PQ_SE_SCALE, scale);
    SE_EQ(FL_PQ_SE_PRECISION, precision);
    SE_EQ(FL_PQ_SE_FIELD_ID, field_id);
#undef SE_EQ
    return true;
}

static bool colmeta_eq(const fl_pq_column_meta_t *a, const fl_pq_column_meta_t *b)
{
    if (a->type != b->type || a->n_encodings != b->n_encodings || a->n_path != b->n_path ||
        a->codec != b->codec || a->num_values != b->num_values ||
        a->total_uncompressed_size != b->total_uncompressed_size ||
        a->total_compressed_size != b->total_compressed_size ||
        a->data_page_offset != b->data_page_offset ||
        a->has_dictionary_page_offset != b->has_dictionary_page_offset ||
        (a->has_dictionary_page_offset && a->dictionary_page_offset != b->dictionary_page_offset) ||
        a->has_stats != b->has_stats || (a->has_stats && !stats_eq(&a->stats, &b->stats)) ||
        !kv_eq(a->kv, a->n_kv, b->kv, b->n_kv))
        return false;
    for (uint32_t i = 0; i < a->n_encodings; i++)
        if (a->encodings[i] != b->encodings[i]) return false;
    for (uint32_t i = 0; i < a->n_path; i++)
        if (!bin_eq(&a->path[i], &b->path[i])) return false;
    return true;
}

static bool row_group_eq(const fl_pq_row_group_t *a, const fl_pq_row_group_t *b)
{
    if (a->n_columns != b->n_columns || a->total_byte_size != b->total_byte_size ||
        a->num_rows != b->num_rows || a->has_file_offset != b->has_file_offset ||
        (a->has_file_offset && a->file_offset != b->file_offset) ||
        a->has_total_compressed_size != b->has_total_compressed_size ||
        (a->has_total_compressed_size && a->total_compressed_size != b->total_compressed_size))
        return false;
    for (uint32_t i = 0; i < a->n_columns; i++) {
        const fl_pq_column_chunk_t *x = &a->columns[i], *y = &b->columns[i];
        if (!bin_eq(&x->file_path, &y->file_path) || x->file_offset != y->file_offset ||
            x->has_meta != y->has_meta || (x->has_meta && !colmeta_eq(&x->meta, &y->meta)))
            return false;
    }
    return true;
}

bool fl_pq_file_meta_eq(const fl_pq_file_meta_t *a, const fl_pq_file_meta_t *b)
{
    if (a->version != b->version || a->n_schema != b->n_schema || a->num_rows != b->num_rows ||
        a->n_row_groups != b->n_row_groups || !kv_eq(a->kv, a->n_kv, b->kv, b->n_kv) ||
        !bin_eq(&a->created_by, &b->created_by) || a->n_column_orders != b->n_column_orders)
        return false;
    for (uint32_t i = 0; i < a->n_schema; i++)
        if (!schema_elem_eq(&a->schema[i], &b->schema[i])) return false;
    for (uint32_t i = 0; i < a->n_row_groups; i++)
        if (!row_group_eq(&a->row_groups[i], &b->row_groups[i])) return false;
    return true;
}

bool fl_pq_page_header_eq(const fl_pq_page_header_t *a, const fl_pq_page_header_t *b)
{
    if (a->type != b->type || a->uncompressed_page_size != b->uncompressed_page_size ||
        a->compressed_page_size != b->compressed_page_size || a->has_crc != b->has_crc ||
        (a->has_crc && a->crc != b->crc) || a->has_data_page != b->has_data_page ||
        a->has_dict_page != b->has_dict_page || a->has_data_page_v2 != b->has_data_page_v2)
        return false;
    if (a->has_data_page) {
        const fl_pq_data_page_header_t *x = &a->data_page, *y = &b->data_page;
        if (x->num_values != y->num_values || x->encoding != y->encoding ||
            x->definition_level_encoding != y->definition_level_encoding ||
            x->repetition_level_encoding != y->repetition_level_encoding ||
            x->has_stats != y->has_stats || (x->has_stats && !stats_eq(&x->stats, &y->stats)))
            return false;
    }
    if (a->has_dict_page) {
        const fl_pq_dict_page_header_t *x = &a->dict_page, *y = &b->dict_page;
        if (x->num_values != y->num_values || x->encoding != y->encoding ||
            x->has_is_sorted != y->has_is_sorted || (x->has_is_sorted && x->is_sorted != y->is_sorted))
            return false;
    }
    if (a->has_data_page_v2) {
        const fl_pq_data_page_header_v2_t *x = &a->data_page_v2, *y = &b->data_page_v2;
        if (x->num_values != y->num_values || x->num_nulls != y->num_nulls ||
            x->num_rows != y->num_rows || x->encoding != y->encoding ||
            x->definition_levels_byte_length != y->definition_levels_byte_length ||
            x->repetition_levels_byte_length != y->repetition_levels_byte_length ||
            x->has_is_compressed != y->has_is_compressed ||
            (x->has_is_compressed && x->is_compressed != y->is_compressed) ||
            x->has_stats != y->has_stats || (x->has_stats && !stats_eq(&x->stats, &y->stats)))
            return false;
    }
    return true;
}
