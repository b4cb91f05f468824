/* Parquet reader (see parquet.h).
 *
 * Open: the footer is read and decoded, the flat schema element list is
 * checked as a tree (child counts, depth cap), and turned into the file's
 * fl_field_t schema plus a parallel tree of pq_fnode_t that records, for every
 * field, the definition/repetition levels that mean "this slot exists"
 * (slot_def, R) and "this value is present" (def).
 *
 * Projection binds each expected field to a file node by field id (list
 * elements and map keys/values by position), chooses a value conversion per
 * leaf column (promotions, unit changes, decimal forms) and picks, for every
 * bound nested field, one leaf column whose levels drive its assembly.
 *
 * Reading a row group: each needed column chunk is read whole, its pages are
 * decompressed, levels decoded into one byte per entry, and values decoded
 * (converted to the output layout) straight into the leaf's output vector:
 * a page's present values land densely and are then spread in place over
 * its slots, nulls zero-filled. Output ranges are prefaulted before a page
 * fills them. Assembly then walks the expected tree: a node's slots are the
 * entries of its level column with rep <= R and def >= slot_def, valid where
 * def >= def; a list's elements are counted the same way one level down.
 * Every count is cross-checked (struct children = parent slots, list element
 * totals, values consumed = values decoded), so inconsistent levels across
 * columns are FL_ERR_INVALID rather than ragged vectors. */
#include "format/parquet.h"
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "base/limits.h"
#include "base/mem.h"
#include "format/parquet_decode.h"
#include "format/parquet_meta.h"

/* ---------------- sources ---------------- */

static fl_err_t mem_read_at(void *ctx, uint64_t off, void *p, size_t n)
{
    const uint8_t *base = ctx;
    memcpy(p, base + off, n);
    return FL_OK;
}

fl_pq_source_t fl_pq_source_mem(const void *p, size_t n)
{
    return (fl_pq_source_t){ .read_at = mem_read_at, .ctx = (void *)p, .size = n };
}

static fl_err_t fd_read_at(void *ctx, uint64_t off, void *p, size_t n)
{
    int fd = (int)(intptr_t)ctx;
    uint8_t *q = p;
    while (n) {
        ssize_t r = pread(fd, q, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR) continue;
            return FL_ERR_IO;
        }
        if (r == 0) return FL_ERR_INVALID; /* file shorter than its size */
        q += r;
        off += (uint64_t)r;
        n -= (size_t)r;
    }
    return FL_OK;
}

fl_pq_source_t fl_pq_source_fd(int fd, uint64_t size)
{
    return (fl_pq_source_t){ .read_at = fd_read_at, .ctx = (void *)(intptr_t)fd, .size = size };
}

/* ---------------- structures ---------------- */

/* dense values of one column chunk (or its dictionary), in output layout */
typedef struct pq_vals {
    uint8_t *data;          /* fixed-width outputs: n * ow */
    size_t n, cap;          /* values; capacity in values (data) */
    uint32_t *offs;         /* byte outputs: offs[0..n] */
    size_t ocap;
    uint8_t *bytes;
    size_t blen, bcap;
} pq_vals_t;

enum {
    CV_COPY = 1, CV_BOOL, CV_I32_I64, CV_U32_I64, CV_I64_MUL, CV_I64_DIV, CV_F32_F64,
    CV_I32_DEC, CV_I64_DEC, CV_BE_DEC, CV_INT96, CV_BYTES,
};

typedef struct pq_col {
    uint32_t idx;
    const fl_pq_schema_elem_t *se;
    const fl_field_t *ffield;   /* file leaf field */
    int phys;
    size_t pw;                  /* physical width of fixed types, 0 for BYTE_ARRAY */
    int unit;                   /* time units of the file (FL_PQ_UNIT_*), 0 if none */
    bool is_u32;
    int16_t max_def, max_rep;
    int16_t rep_def[FL_PQ_MAX_SCHEMA_DEPTH + 2];
    /* projection */
    bool needed, levels_only;
    const fl_field_t *out;
    size_t ow;                  /* output width, 0 for byte outputs */
    int conv;
    int64_t k;                  /* CV_*_MUL / DIV factor; CV_INT96: 1 = keep nanos */
    int16_t slot_def;           /* def level at which the output leaf has a slot */
    /* per row group */
    fl_vec_t *vec;              /* the output leaf vector values are decoded into */
    uint8_t *def, *rep;
    size_t nlev, levcap;
    pq_vals_t dict;
    bool has_dict;
} pq_col_t;

typedef struct pq_fnode {
    fl_field_t *f;
    int16_t def, slot_def, R;
    uint32_t col_first, col_end;
    struct pq_fnode *kids;
    uint32_t n_kids;
} pq_fnode_t;

typedef struct pq_pnode {
    const fl_field_t *exp;
    const pq_fnode_t *fn;       /* NULL: not in the file */
    pq_col_t *lev;
    struct pq_pnode *kids;
    uint32_t n_kids;
} pq_pnode_t;

struct fl_pq_reader {
    fl_pq_source_t src;
    uint64_t data_end;          /* start of the footer */
    fl_pq_file_meta_t meta;
    uint32_t *sub_end;          /* per schema element: index after its subtree */
    int16_t *edef, *erep;       /* per schema element: max levels */
    pq_col_t *cols;
    uint32_t n_cols;
    fl_field_t fschema;
    pq_fnode_t froot;
    const fl_field_t *exp;
    pq_pnode_t proot;
    bool bound;
    uint32_t next_rg;
    /* scratch */
    uint8_t *chunk;
    size_t chunk_cap;
    uint8_t *page;
    size_t page_cap;
    uint8_t *page2;
    size_t page2_cap;
    uint32_t *idx;
    size_t idx_cap;
    int64_t *i64;
    size_t i64_cap;
    uint8_t *tmp;
    size_t tmp_cap;
    char err[256];
};

static fl_err_t fail(fl_pq_reader_t *r, fl_err_t e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static fl_err_t fail(fl_pq_reader_t *r, fl_err_t e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    return e;
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    p = fl_realloc(p, c * elem);
    *cap = c;
    return p;
}

/* Byte buffers values are copied from or to keep SLACK readable/writable bytes
 * past their capacity, so short values can be copied with one fixed-size move. */
#define SLACK 64
static uint8_t *grow_bytes(uint8_t *p, size_t *cap, size_t need)
{
    if (need <= *cap && p) return p;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    p = fl_realloc(p, c + SLACK);
    *cap = c;
    return p;
}

/* About to write [p, p+n) of a large buffer: fault its pages in with one call
 * rather than one trap per page. Advice only; failures are ignored. */
static void prefault(void *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
    if (!p || n < (64u << 10)) return;
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095, e = ((uintptr_t)p + n + 4095) & ~(uintptr_t)4095;
    (void)madvise((void *)a, e - a, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)n;
#endif
}

static inline void copy_short(uint8_t *dst, const uint8_t *src, size_t len)
{
    if (len <= 16) memcpy(dst, src, 16);
    else if (len <= 32) memcpy(dst, src, 32);
    else if (len <= SLACK) memcpy(dst, src, SLACK);
    else memcpy(dst, src, len);
}

/* ---------------- schema ---------------- */

static int conv_type(const fl_pq_schema_elem_t *e)
{
    return (e->has & FL_PQ_SE_CONVERTED) ? e->converted_type : -1;
}
enum { CT_UTF8 = 0, CT_MAP = 1, CT_MAP_KEY_VALUE = 2, CT_LIST = 3, CT_ENUM = 4, CT_DECIMAL = 5,
       CT_DATE = 6, CT_TIME_MILLIS = 7, CT_TIME_MICROS = 8, CT_TS_MILLIS = 9, CT_TS_MICROS = 10,
       CT_UINT_8 = 11, CT_UINT_16 = 12, CT_UINT_32 = 13, CT_UINT_64 = 14, CT_INT_8 = 15,
       CT_INT_16 = 16, CT_INT_32 = 17, CT_INT_64 = 18, CT_JSON = 19, CT_BSON = 20 };

static bool is_group(const fl_pq_schema_elem_t *e)
{
    return !(e->has & FL_PQ_SE_TYPE);
}

static int repetition(const fl_pq_schema_elem_t *e)
{
    return (e->has & FL_PQ_SE_REPETITION) ? e->repetition_type : FL_PQ_OPTIONAL;
}

/* Check the element list is a tree and compute subtree ends and levels. */
static fl_err_t check_tree(fl_pq_reader_t *r, uint32_t i, int depth, int16_t def, int16_t rep,
                           uint32_t *next)
{
    const fl_pq_file_meta_t *m = &r->meta;
    if (i >= m->n_schema) return fail(r, FL_ERR_INVALID, "schema: element list ends early");
    if (depth > FL_PQ_MAX_SCHEMA_DEPTH) return fail(r, FL_ERR_TOO_LARGE, "schema: nested too deep");
    const fl_pq_schema_elem_t *e = &m->schema[i];
    if (i > 0) {
        int rt = repetition(e);
        if (rt < 0 || rt > 2) return fail(r, FL_ERR_INVALID, "schema: bad repetition type");
        if (rt != FL_PQ_REQUIRED) def++;
        if (rt == FL_PQ_REPEATED) rep++;
    }
    r->edef[i] = def;
    r->erep[i] = rep;
    uint32_t j = i + 1;
    if (is_group(e) || i == 0) {
        if (!(e->has & FL_PQ_SE_NUM_CHILDREN) || e->num_children < 0 ||
            (uint32_t)e->num_children > m->n_schema - j)
            return fail(r, FL_ERR_INVALID, "schema: bad num_children");
        if (e->num_children == 0 && i > 0)
            return fail(r, FL_ERR_INVALID, "schema: empty group");
        for (int32_t c = 0; c < e->num_children; c++) {
            fl_err_t err = check_tree(r, j, depth + 1, def, rep, &j);
            if (err) return err;
        }
    } else {
        int32_t t = e->type;
        if (t < FL_PQ_BOOLEAN || t > FL_PQ_FIXED_LEN_BYTE_ARRAY)
            return fail(r, FL_ERR_INVALID, "schema: bad physical type");
        if (t == FL_PQ_FIXED_LEN_BYTE_ARRAY &&
            (!(e->has & FL_PQ_SE_TYPE_LENGTH) || e->type_length <= 0 ||
             e->type_length > (1 << 20)))
            return fail(r, FL_ERR_INVALID, "schema: bad FIXED_LEN_BYTE_ARRAY length");
        if (r->n_cols >= FL_PQ_MAX_COLUMNS) return fail(r, FL_ERR_TOO_LARGE, "too many columns");
        r->n_cols++;
    }
    r->sub_end[i] = j;
    *next = j;
    return FL_OK;
}

static void set_name(fl_field_t *f, const fl_pq_schema_elem_t *e)
{
    free(f->name);
    f->name = fl_strdup(e->name.ptr ? e->name.ptr : "");
}

static int32_t elem_id(const fl_pq_schema_elem_t *e)
{
    return (e->has & FL_PQ_SE_FIELD_ID) ? e->field_id : -1;
}

static void kids_alloc(fl_field_t *f, pq_fnode_t *fn, uint32_t n)
{
    f->children = fl_calloc(n, sizeof *f->children);
    f->n_children = n;
    fn->kids = fl_calloc(n, sizeof *fn->kids);
    fn->n_kids = n;
}

/* Primitive leaf: the Iceberg type of a physical + logical/converted type. */
static void leaf_type(fl_pq_reader_t *r, uint32_t i, fl_field_t *f, pq_col_t *c)
{
    const fl_pq_schema_elem_t *e = &r->meta.schema[i];
    const fl_pq_logical_t *lt = &e->logical;
    int ct = conv_type(e);
    int32_t prec = -1, scale = 0;
    if (lt->kind == FL_PQ_LT_DECIMAL) {
        prec = lt->precision;
        scale = lt->scale;
    } else if (ct == CT_DECIMAL) {
        prec = (e->has & FL_PQ_SE_PRECISION) ? e->precision : -1;
        scale = (e->has & FL_PQ_SE_SCALE) ? e->scale : 0;
    }
    bool dec = prec >= 1 && prec <= 38 && scale >= 0 && scale <= prec;
    c->phys = e->type;
    switch (e->type) {
    case FL_PQ_BOOLEAN: f->kind = FL_TYPE_BOOLEAN; c->pw = 1; break;
    case FL_PQ_INT32:
        c->pw = 4;
        f->kind = FL_TYPE_INT;
        if (dec && prec <= 9) { f->kind = FL_TYPE_DECIMAL; f->precision = prec; f->scale = scale; }
        else if (lt->kind == FL_PQ_LT_DATE || ct == CT_DATE) f->kind = FL_TYPE_DATE;
        else if ((lt->kind == FL_PQ_LT_TIME && lt->unit == FL_PQ_UNIT_MILLIS) || ct == CT_TIME_MILLIS) {
            f->kind = FL_TYPE_TIME;
            c->unit = FL_PQ_UNIT_MILLIS;
        } else if ((lt->kind == FL_PQ_LT_INTEGER && !lt->is_signed && lt->bit_width == 32) ||
                   ct == CT_UINT_32) {
            f->kind = FL_TYPE_LONG;
            c->is_u32 = true;
        }
        break;
    case FL_PQ_INT64:
        c->pw = 8;
        f->kind = FL_TYPE_LONG;
        if (dec && prec <= 18) { f->kind = FL_TYPE_DECIMAL; f->precision = prec; f->scale = scale; }
        else if (lt->kind == FL_PQ_LT_TIMESTAMP) {
            c->unit = lt->unit;
            if (lt->unit == FL_PQ_UNIT_NANOS)
                f->kind = lt->utc ? FL_TYPE_TIMESTAMPTZ_NS : FL_TYPE_TIMESTAMP_NS;
            else
                f->kind = lt->utc ? FL_TYPE_TIMESTAMPTZ : FL_TYPE_TIMESTAMP;
        } else if (ct == CT_TS_MILLIS || ct == CT_TS_MICROS) {
            c->unit = ct == CT_TS_MILLIS ? FL_PQ_UNIT_MILLIS : FL_PQ_UNIT_MICROS;
            f->kind = FL_TYPE_TIMESTAMPTZ;
        } else if (lt->kind == FL_PQ_LT_TIME || ct == CT_TIME_MICROS) {
            c->unit = lt->kind == FL_PQ_LT_TIME ? lt->unit : FL_PQ_UNIT_MICROS;
            f->kind = FL_TYPE_TIME;
        }
        break;
    case FL_PQ_INT96: c->pw = 12; f->kind = FL_TYPE_TIMESTAMP; break;
    case FL_PQ_FLOAT: c->pw = 4; f->kind = FL_TYPE_FLOAT; break;
    case FL_PQ_DOUBLE: c->pw = 8; f->kind = FL_TYPE_DOUBLE; break;
    case FL_PQ_BYTE_ARRAY:
        c->pw = 0;
        f->kind = FL_TYPE_BINARY;
        if (dec) { f->kind = FL_TYPE_DECIMAL; f->precision = prec; f->scale = scale; }
        else if (lt->kind == FL_PQ_LT_STRING || lt->kind == FL_PQ_LT_ENUM ||
                 lt->kind == FL_PQ_LT_JSON || ct == CT_UTF8 || ct == CT_ENUM || ct == CT_JSON)
            f->kind = FL_TYPE_STRING;
        break;
    case FL_PQ_FIXED_LEN_BYTE_ARRAY:
        c->pw = (size_t)e->type_length;
        f->kind = FL_TYPE_FIXED;
        f->length = e->type_length;
        if (dec && e->type_length <= 16) {
            f->kind = FL_TYPE_DECIMAL; f->precision = prec; f->scale = scale; f->length = 0;
        } else if (lt->kind == FL_PQ_LT_UUID && e->type_length == 16) {
            f->kind = FL_TYPE_UUID;
            f->length = 0;
        }
        break;
    }
}

typedef struct bctx {
    uint32_t col;   /* next leaf column index */
    int16_t rep_def[FL_PQ_MAX_SCHEMA_DEPTH + 2];
} bctx_t;

static fl_err_t build_value(fl_pq_reader_t *r, bctx_t *b, uint32_t i, fl_field_t *f,
                            pq_fnode_t *fn, int16_t slot_def, int16_t R);

/* Element i's content (struct, list, map or primitive), ignoring its own
 * repetition: present at def level `def`. */
static fl_err_t build_content(fl_pq_reader_t *r, bctx_t *b, uint32_t i, fl_field_t *f,
                              pq_fnode_t *fn, int16_t slot_def, int16_t R, int16_t def)
{
    const fl_pq_schema_elem_t *e = &r->meta.schema[i];
    set_name(f, e);
    f->id = elem_id(e);
    fn->f = f;
    fn->def = def;
    fn->slot_def = slot_def;
    fn->R = R;
    fn->col_first = b->col;
    fl_err_t err = FL_OK;
    if (!is_group(e)) {
        pq_col_t *c = &r->cols[b->col];
        c->idx = b->col;
        c->se = e;
        c->ffield = f;
        c->max_def = r->edef[i];
        c->max_rep = r->erep[i];
        memcpy(c->rep_def, b->rep_def, sizeof c->rep_def);
        leaf_type(r, i, f, c);
        b->col++;
        fn->col_end = b->col;
        return FL_OK;
    }
    int ct = conv_type(e);
    uint32_t first = i + 1;
    int nkids = e->num_children;
    bool is_list = e->logical.kind == FL_PQ_LT_LIST || ct == CT_LIST;
    bool is_map = e->logical.kind == FL_PQ_LT_MAP || ct == CT_MAP || ct == CT_MAP_KEY_VALUE;
    const fl_pq_schema_elem_t *c0 = nkids == 1 ? &r->meta.schema[first] : NULL;
    if (is_list && c0 && repetition(c0) == FL_PQ_REPEATED) {
        f->kind = FL_TYPE_LIST;
        kids_alloc(f, fn, 1);
        int16_t sd = r->edef[first], rr = r->erep[first];
        b->rep_def[rr] = sd;
        const char *cn = c0->name.ptr ? c0->name.ptr : "";
        char tuple[300];
        snprintf(tuple, sizeof tuple, "%s_tuple", e->name.ptr ? e->name.ptr : "");
        bool three = is_group(c0) && c0->num_children == 1 && strcmp(cn, "array") &&
                     strcmp(cn, tuple);
        if (three)
            err = build_value(r, b, first + 1, &f->children[0], &fn->kids[0], sd, rr);
        else {
            err = build_content(r, b, first, &f->children[0], &fn->kids[0], sd, rr, sd);
            f->children[0].required = true;
        }
    } else if (is_map && c0 && repetition(c0) == FL_PQ_REPEATED && is_group(c0) &&
               c0->num_children == 2) {
        f->kind = FL_TYPE_MAP;
        kids_alloc(f, fn, 2);
        int16_t sd = r->edef[first], rr = r->erep[first];
        b->rep_def[rr] = sd;
        uint32_t k = first + 1;
        err = build_value(r, b, k, &f->children[0], &fn->kids[0], sd, rr);
        if (!err)
            err = build_value(r, b, r->sub_end[k], &f->children[1], &fn->kids[1], sd, rr);
    } else {
        f->kind = FL_TYPE_STRUCT;
        kids_alloc(f, fn, (uint32_t)nkids);
        uint32_t j = first;
        for (int k = 0; !err && k < nkids; k++) {
            err = build_value(r, b, j, &f->children[k], &fn->kids[k], slot_def, R);
            j = r->sub_end[j];
        }
    }
    fn->col_end = b->col;
    return err;
}

static fl_err_t build_value(fl_pq_reader_t *r, bctx_t *b, uint32_t i, fl_field_t *f,
                            pq_fnode_t *fn, int16_t slot_def, int16_t R)
{
    const fl_pq_schema_elem_t *e = &r->meta.schema[i];
    int rt = repetition(e);
    if (rt != FL_PQ_REPEATED) {
        f->required = rt == FL_PQ_REQUIRED;
        return build_content(r, b, i, f, fn, slot_def, R, r->edef[i]);
    }
    /* a bare repeated field: a required list of required elements */
    set_name(f, e);
    f->id = -1;
    f->required = true;
    f->kind = FL_TYPE_LIST;
    fn->f = f;
    fn->def = (int16_t)(r->edef[i] - 1);
    fn->slot_def = slot_def;
    fn->R = R;
    fn->col_first = b->col;
    kids_alloc(f, fn, 1);
    b->rep_def[r->erep[i]] = r->edef[i];
    f->children[0].required = true;
    fl_err_t err = build_content(r, b, i, &f->children[0], &fn->kids[0], r->edef[i],
                                 r->erep[i], r->edef[i]);
    f->children[0].required = true;
    fn->col_end = b->col;
    return err;
}

static void fnode_free(pq_fnode_t *fn)
{
    for (uint32_t i = 0; fn->kids && i < fn->n_kids; i++) fnode_free(&fn->kids[i]);
    free(fn->kids);
    fn->kids = NULL;
    fn->n_kids = 0;
}

static void pnode_free(pq_pnode_t *pn)
{
    for (uint32_t i = 0; pn->kids && i < pn->n_kids; i++) pnode_free(&pn->kids[i]);
    free(pn->kids);
    memset(pn, 0, sizeof *pn);
}

/* ---------------- open ---------------- */

static fl_err_t check_chunks(fl_pq_reader_t *r)
{
    const fl_pq_file_meta_t *m = &r->meta;
    if (m->num_rows < 0) return fail(r, FL_ERR_INVALID, "negative num_rows");
    for (uint32_t g = 0; g < m->n_row_groups; g++) {
        const fl_pq_row_group_t *rg = &m->row_groups[g];
        if (rg->n_columns != r->n_cols)
            return fail(r, FL_ERR_INVALID, "row group %u: %u columns, schema has %u", g,
                        rg->n_columns, r->n_cols);
        if (rg->num_rows < 0 || rg->num_rows > FL_PQ_MAX_CHUNK_VALUES)
            return fail(r, rg->num_rows < 0 ? FL_ERR_INVALID : FL_ERR_TOO_LARGE,
                        "row group %u: bad num_rows", g);
        for (uint32_t c = 0; c < rg->n_columns; c++) {
            const fl_pq_column_chunk_t *cc = &rg->columns[c];
            if (!cc->has_meta) return fail(r, FL_ERR_INVALID, "column chunk without metadata");
            if (cc->file_path.ptr) return fail(r, FL_ERR_INVALID, "external column chunks unsupported");
            const fl_pq_column_meta_t *cm = &cc->meta;
            if (rg->num_rows == 0) continue; /* never read; writers leave odd offsets */
            if (cm->type != r->cols[c].phys)
                return fail(r, FL_ERR_INVALID, "column %u: chunk type differs from schema", c);
            if (cm->data_page_offset < 4 || cm->total_compressed_size <= 0 ||
                (uint64_t)cm->data_page_offset > r->data_end ||
                (uint64_t)cm->total_compressed_size > r->data_end)
                return fail(r, FL_ERR_INVALID, "column %u: chunk outside the file", c);
            if (cm->num_values < 0) return fail(r, FL_ERR_INVALID, "column %u: bad num_values", c);
        }
    }
    return FL_OK;
}

static fl_err_t open_footer(fl_pq_reader_t *r)
{
    uint64_t size = r->src.size;
    if (size < 12) return fail(r, FL_ERR_INVALID, "not a Parquet file (too short)");
    uint8_t head[4], tail[8];
    fl_err_t e = r->src.read_at(r->src.ctx, 0, head, 4);
    if (!e) e = r->src.read_at(r->src.ctx, size - 8, tail, 8);
    if (e) return fail(r, e, "read failed");
    if (memcmp(head, "PAR1", 4) || memcmp(tail + 4, "PAR1", 4))
        return fail(r, FL_ERR_INVALID, "not a Parquet file (magic)");
    uint32_t flen = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 |
                    (uint32_t)tail[3] << 24;
    if (flen > FL_PQ_MAX_FOOTER_BYTES) return fail(r, FL_ERR_TOO_LARGE, "footer too large");
    if ((uint64_t)flen > size - 12) return fail(r, FL_ERR_INVALID, "footer length beyond the file");
    r->data_end = size - 8 - flen;
    uint8_t *fb = fl_malloc(flen ? flen : 1);
    e = r->src.read_at(r->src.ctx, r->data_end, fb, flen);
    if (e) {
        free(fb);
        return fail(r, e, "read failed");
    }
    e = fl_pq_file_meta_decode(fb, flen, &r->meta);
    free(fb);
    if (e) return fail(r, FL_ERR_INVALID, "malformed footer");
    const fl_pq_file_meta_t *m = &r->meta;
    if (m->n_schema < 1) return fail(r, FL_ERR_INVALID, "empty schema");
    r->sub_end = fl_calloc(m->n_schema, sizeof *r->sub_end);
    r->edef = fl_calloc(m->n_schema, sizeof *r->edef);
    r->erep = fl_calloc(m->n_schema, sizeof *r->erep);
    uint32_t next;
    if ((e = check_tree(r, 0, 0, 0, 0, &next))) return e;
    if (next != m->n_schema) return fail(r, FL_ERR_INVALID, "schema: trailing elements");
    r->cols = fl_calloc(r->n_cols ? r->n_cols : 1, sizeof *r->cols);
    /* root */
    fl_field_set(&r->fschema, 0, "table", true, FL_TYPE_STRUCT);
    pq_fnode_t *root = &r->froot;
    root->f = &r->fschema;
    uint32_t nk = (uint32_t)m->schema[0].num_children;
    kids_alloc(&r->fschema, root, nk);
    bctx_t b;
    memset(&b, 0, sizeof b);
    uint32_t j = 1;
    for (uint32_t k = 0; k < nk; k++) {
        if ((e = build_value(r, &b, j, &r->fschema.children[k], &root->kids[k], 0, 0))) return e;
        j = r->sub_end[j];
    }
    root->col_first = 0;
    root->col_end = b.col;
    if (b.col != r->n_cols) return fail(r, FL_ERR_INVALID, "schema: leaf count mismatch");
    return check_chunks(r);
}

/* The reason the last fl_pq_reader_open on this thread failed:
 * fl_pq_reader_error(NULL) returns it. */
static __thread char open_err[256];

fl_err_t fl_pq_reader_open(fl_pq_reader_t **out, fl_pq_source_t src)
{
    fl_pq_reader_t *r = fl_calloc(1, sizeof *r);
    r->src = src;
    fl_err_t e = open_footer(r);
    if (e) {
        memcpy(open_err, r->err, sizeof open_err);
        fl_pq_reader_free(r);
        *out = NULL;
        return e;
    }
    *out = r;
    return FL_OK;
}

const fl_field_t *fl_pq_reader_file_schema(const fl_pq_reader_t *r) { return &r->fschema; }
int64_t fl_pq_reader_num_rows(const fl_pq_reader_t *r) { return r->meta.num_rows; }
uint32_t fl_pq_reader_num_row_groups(const fl_pq_reader_t *r) { return r->meta.n_row_groups; }
const char *fl_pq_reader_error(const fl_pq_reader_t *r) { return r ? r->err : open_err; }

fl_err_t fl_pq_reader_kv(const fl_pq_reader_t *r, const char *key, fl_slice_t *value)
{
    for (uint32_t i = 0; i < r->meta.n_kv; i++) {
        const fl_pq_kv_t *kv = &r->meta.kv[i];
        if (kv->key.ptr && strlen(key) == kv->key.len && !memcmp(kv->key.ptr, key, kv->key.len)) {
            *value = fl_slice(kv->value.ptr ? kv->value.ptr : "", kv->value.len);
            return FL_OK;
        }
    }
    return FL_ERR_NOT_FOUND;
}

static void vals_free(pq_vals_t *v)
{
    free(v->data);
    free(v->offs);
    free(v->bytes);
    memset(v, 0, sizeof *v);
}

void fl_pq_reader_free(fl_pq_reader_t *r)
{
    if (!r) return;
    for (uint32_t i = 0; r->cols && i < r->n_cols; i++) {
        free(r->cols[i].def);
        free(r->cols[i].rep);
        vals_free(&r->cols[i].dict);
    }
    free(r->cols);
    pnode_free(&r->proot);
    fnode_free(&r->froot);
    fl_field_free(&r->fschema);
    fl_pq_file_meta_free(&r->meta);
    free(r->sub_end);
    free(r->edef);
    free(r->erep);
    free(r->chunk);
    free(r->page);
    free(r->page2);
    free(r->idx);
    free(r->i64);
    free(r->tmp);
    free(r);
}

/* ---------------- name mapping ---------------- */

static json_t *map_find(json_t *arr, const char *name)
{
    size_t i;
    json_t *ent;
    json_array_foreach(arr, i, ent) {
        json_t *names = json_object_get(ent, "names");
        size_t k;
        json_t *nm;
        json_array_foreach(names, k, nm) {
            if (json_is_string(nm) && !strcmp(json_string_value(nm), name)) return ent;
        }
    }
    return NULL;
}

static void apply_mapping(fl_field_t *f, json_t *ent, int depth);

static void apply_child(fl_field_t *c, json_t *fields, const char *name, int depth)
{
    json_t *ent = json_is_array(fields) ? map_find(fields, name) : NULL;
    if (ent) apply_mapping(c, ent, depth + 1);
}

static void apply_mapping(fl_field_t *f, json_t *ent, int depth)
{
    if (depth > FL_PQ_MAX_SCHEMA_DEPTH + 4) return;
    json_t *id = json_object_get(ent, "field-id");
    if (f->id < 0 && json_is_integer(id) && json_integer_value(id) >= 0 &&
        json_integer_value(id) <= INT32_MAX)
        f->id = (int32_t)json_integer_value(id);
    json_t *fields = json_object_get(ent, "fields");
    if (f->kind == FL_TYPE_STRUCT)
        for (uint32_t i = 0; i < f->n_children; i++)
            apply_child(&f->children[i], fields, f->children[i].name, depth);
    else if (f->kind == FL_TYPE_LIST)
        apply_child(&f->children[0], fields, "element", depth);
    else if (f->kind == FL_TYPE_MAP) {
        apply_child(&f->children[0], fields, "key", depth);
        apply_child(&f->children[1], fields, "value", depth);
    }
}

fl_err_t fl_pq_reader_name_mapping(fl_pq_reader_t *r, fl_slice_t mapping_json)
{
    if (mapping_json.len > FL_PQ_MAX_NAME_MAPPING)
        return fail(r, FL_ERR_TOO_LARGE, "name mapping too large");
    json_error_t je;
    json_t *j = json_loadb(mapping_json.ptr, mapping_json.len, JSON_REJECT_DUPLICATES, &je);
    if (!j || !json_is_array(j)) {
        json_decref(j);
        return fail(r, FL_ERR_INVALID, "name mapping: not a JSON array");
    }
    for (uint32_t i = 0; i < r->fschema.n_children; i++)
        apply_child(&r->fschema.children[i], j, r->fschema.children[i].name, 0);
    json_decref(j);
    return FL_OK;
}

/* ---------------- projection ---------------- */

static bool ts_kind(fl_type_kind_t k, bool *tz, bool *ns)
{
    switch (k) {
    case FL_TYPE_TIMESTAMP: *tz = false; *ns = false; return true;
    case FL_TYPE_TIMESTAMPTZ: *tz = true; *ns = false; return true;
    case FL_TYPE_TIMESTAMP_NS: *tz = false; *ns = true; return true;
    case FL_TYPE_TIMESTAMPTZ_NS: *tz = true; *ns = true; return true;
    default: return false;
    }
}

static int64_t unit_scale(int unit) /* units per second */
{
    return unit == FL_PQ_UNIT_MILLIS ? 1000 : unit == FL_PQ_UNIT_NANOS ? 1000000000 : 1000000;
}

static void set_unit_conv(pq_col_t *c, int64_t from, int64_t to)
{
    if (from == to) c->conv = CV_COPY;
    else if (from < to) { c->conv = CV_I64_MUL; c->k = to / from; }
    else { c->conv = CV_I64_DIV; c->k = from / to; }
}

/* Choose how column c's values become values of exp; false if incompatible. */
static bool pick_conv(pq_col_t *c, const fl_field_t *exp)
{
    const fl_field_t *ff = c->ffield;
    fl_type_kind_t ek = exp->kind, fk = ff->kind;
    c->k = 1;
    c->ow = fl_field_width(exp);
    bool etz, ens, ftz, fns;
    switch (ek) {
    case FL_TYPE_BOOLEAN:
        c->conv = CV_BOOL;
        return c->phys == FL_PQ_BOOLEAN;
    case FL_TYPE_INT:
    case FL_TYPE_DATE:
        c->conv = CV_COPY;
        return fk == ek && c->phys == FL_PQ_INT32;
    case FL_TYPE_LONG:
        if (fk == FL_TYPE_INT) { c->conv = CV_I32_I64; return true; }
        if (fk == FL_TYPE_LONG) {
            c->conv = c->is_u32 ? CV_U32_I64 : CV_COPY;
            return true;
        }
        return false;
    case FL_TYPE_FLOAT:
        c->conv = CV_COPY;
        return fk == FL_TYPE_FLOAT;
    case FL_TYPE_DOUBLE:
        c->conv = fk == FL_TYPE_FLOAT ? CV_F32_F64 : CV_COPY;
        return fk == FL_TYPE_FLOAT || fk == FL_TYPE_DOUBLE;
    case FL_TYPE_DECIMAL:
        if (fk != FL_TYPE_DECIMAL || ff->scale != exp->scale || ff->precision > exp->precision)
            return false;
        c->conv = c->phys == FL_PQ_INT32 ? CV_I32_DEC : c->phys == FL_PQ_INT64 ? CV_I64_DEC : CV_BE_DEC;
        return true;
    case FL_TYPE_TIME:
        if (fk != FL_TYPE_TIME) return false;
        if (c->phys == FL_PQ_INT32) { c->conv = CV_I32_I64; c->k = 1000; return true; }
        set_unit_conv(c, unit_scale(c->unit), 1000000);
        return true;
    case FL_TYPE_TIMESTAMP: case FL_TYPE_TIMESTAMPTZ:
    case FL_TYPE_TIMESTAMP_NS: case FL_TYPE_TIMESTAMPTZ_NS:
        ts_kind(ek, &etz, &ens);
        if (c->phys == FL_PQ_INT96) {
            c->conv = CV_INT96;
            c->k = ens ? 1 : 0;
            return true;
        }
        if (!ts_kind(fk, &ftz, &fns) || ftz != etz) return false;
        set_unit_conv(c, unit_scale(c->unit), ens ? 1000000000 : 1000000);
        return true;
    case FL_TYPE_STRING:
    case FL_TYPE_BINARY:
        c->conv = CV_BYTES;
        return fk == FL_TYPE_STRING || fk == FL_TYPE_BINARY ||
               (ek == FL_TYPE_BINARY && (fk == FL_TYPE_FIXED || fk == FL_TYPE_UUID));
    case FL_TYPE_UUID:
        c->conv = CV_COPY;
        return c->phys == FL_PQ_FIXED_LEN_BYTE_ARRAY && c->pw == 16 &&
               (fk == FL_TYPE_UUID || fk == FL_TYPE_FIXED);
    case FL_TYPE_FIXED:
        c->conv = CV_COPY;
        return c->phys == FL_PQ_FIXED_LEN_BYTE_ARRAY && c->pw == (size_t)exp->length &&
               exp->length > 0 && (fk == FL_TYPE_FIXED || fk == FL_TYPE_UUID);
    default:
        return false;
    }
}

static fl_err_t bind(fl_pq_reader_t *r, pq_pnode_t *pn, const fl_field_t *exp,
                     const pq_fnode_t *fn, bool by_id, int depth)
{
    pn->exp = exp;
    pn->fn = fn;
    if (depth > FL_PQ_MAX_SCHEMA_DEPTH + 2) return fail(r, FL_ERR_TOO_LARGE, "expected schema too deep");
    if (!fn) {
        if (exp->required && depth > 0)
            return fail(r, FL_ERR_INVALID, "required field %d (%s) is not in the file", exp->id,
                        exp->name ? exp->name : "");
        return FL_OK;
    }
    const fl_field_t *ff = fn->f;
    bool en = fl_type_is_nested(exp->kind), fnest = fl_type_is_nested(ff->kind);
    if (en != fnest || (en && exp->kind != ff->kind))
        return fail(r, FL_ERR_INVALID, "field %d (%s): file type %s cannot be read as %s",
                    exp->id, exp->name ? exp->name : "", fl_type_name(ff->kind),
                    fl_type_name(exp->kind));
    if (!en) {
        pq_col_t *c = &r->cols[fn->col_first];
        if (c->out) return fail(r, FL_ERR_INVALID, "field %d: column bound twice", exp->id);
        if (!pick_conv(c, exp))
            return fail(r, FL_ERR_INVALID, "field %d (%s): file type %s cannot be read as %s",
                        exp->id, exp->name ? exp->name : "", fl_type_name(ff->kind),
                        fl_type_name(exp->kind));
        c->out = exp;
        c->slot_def = fn->slot_def;
        c->needed = true;
        c->levels_only = false;
        return FL_OK;
    }
    if (exp->n_children == 0 && exp->kind != FL_TYPE_STRUCT)
        return fail(r, FL_ERR_INVALID, "field %d: list/map without children", exp->id);
    if (exp->kind != FL_TYPE_STRUCT && exp->n_children != fn->n_kids)
        return fail(r, FL_ERR_INVALID, "field %d: shape differs from the file", exp->id);
    pn->kids = fl_calloc(exp->n_children ? exp->n_children : 1, sizeof *pn->kids);
    pn->n_kids = exp->n_children;
    for (uint32_t i = 0; i < exp->n_children; i++) {
        const fl_field_t *ec = &exp->children[i];
        const pq_fnode_t *match = NULL;
        if (exp->kind != FL_TYPE_STRUCT) match = &fn->kids[i];
        else if (!by_id) match = i < fn->n_kids ? &fn->kids[i] : NULL;
        else
            for (uint32_t k = 0; k < fn->n_kids && !match; k++)
                if (ec->id >= 0 && fn->kids[k].f->id == ec->id) match = &fn->kids[k];
        fl_err_t e = bind(r, &pn->kids[i], ec, match, by_id, depth + 1);
        if (e) return e;
    }
    return FL_OK;
}

/* Second pass: each bound nested node gets the column whose levels drive it. */
static void pick_levels(fl_pq_reader_t *r, pq_pnode_t *pn)
{
    if (!pn->fn) return;
    const pq_fnode_t *fn = pn->fn;
    pq_col_t *best = NULL;
    for (uint32_t c = fn->col_first; c < fn->col_end && !best; c++)
        if (r->cols[c].needed && !r->cols[c].levels_only) best = &r->cols[c];
    if (!best && fn->col_first < fn->col_end) {
        best = &r->cols[fn->col_first];
        if (!best->needed) {
            best->needed = true;
            best->levels_only = true;
        }
    }
    pn->lev = best;
    for (uint32_t i = 0; i < pn->n_kids; i++) pick_levels(r, &pn->kids[i]);
}

static fl_err_t do_project(fl_pq_reader_t *r, const fl_field_t *exp, bool by_id)
{
    if (exp->kind != FL_TYPE_STRUCT) return fail(r, FL_ERR_INVALID, "expected schema is not a struct");
    pnode_free(&r->proot);
    for (uint32_t i = 0; i < r->n_cols; i++) {
        pq_col_t *c = &r->cols[i];
        c->needed = c->levels_only = false;
        c->out = NULL;
        c->conv = 0;
    }
    r->exp = exp;
    r->bound = false;
    fl_err_t e = bind(r, &r->proot, exp, &r->froot, by_id, 0);
    if (e) {
        pnode_free(&r->proot);
        return e;
    }
    pick_levels(r, &r->proot);
    r->bound = true;
    return FL_OK;
}

fl_err_t fl_pq_reader_project(fl_pq_reader_t *r, const fl_field_t *expected)
{
    return do_project(r, expected, true);
}

/* ---------------- values ---------------- */

static void vals_reserve(pq_col_t *c, pq_vals_t *v, size_t m)
{
    if (c->ow) {
        v->data = grow(v->data, &v->cap, v->n + m + 1, c->ow);
    } else {
        bool fresh = !v->offs;
        v->offs = grow(v->offs, &v->ocap, v->n + m + 1, sizeof *v->offs);
        if (fresh || v->n == 0) v->offs[0] = 0;
        if (!v->bytes) v->bytes = grow_bytes(v->bytes, &v->bcap, 1024);
    }
}

static inline fl_err_t add_bytes(pq_vals_t *v, const uint8_t *p, size_t len)
{
    if (len > UINT32_MAX - v->blen) return FL_ERR_TOO_LARGE;
    if (v->blen + len > v->bcap) v->bytes = grow_bytes(v->bytes, &v->bcap, v->blen + len);
    if (len) memcpy(v->bytes + v->blen, p, len);
    v->blen += len;
    v->offs[++v->n] = (uint32_t)v->blen;
    return FL_OK;
}

/* big-endian two's complement of 1..8 bytes, sign-extended */
static inline int64_t be_int(const uint8_t *p, size_t len)
{
    uint8_t b[8] = { 0 };
    memcpy(b + 8 - len, p, len);
    uint64_t x;
    memcpy(&x, b, 8);
    x = __builtin_bswap64(x);
    unsigned sh = (unsigned)(64 - 8 * len);
    return (int64_t)(x << sh) >> sh;
}

static inline __int128 be_dec(const uint8_t *p, size_t len)
{
    if (len == 0) return 0;
    if (len <= 8) return be_int(p, len);
    uint64_t lo;
    memcpy(&lo, p + len - 8, 8);
    lo = __builtin_bswap64(lo);
    return (__int128)((unsigned __int128)(__int128)be_int(p, len - 8) << 64 | lo);
}

/* one byte-array (or FLBA) value into v */
static inline fl_err_t emit_ba(pq_col_t *c, pq_vals_t *v, const uint8_t *p, size_t len)
{
    if (c->conv == CV_BE_DEC) {
        if (len > 16) return FL_ERR_INVALID;
        __int128 x = be_dec(p, len);
        memcpy(v->data + v->n * 16, &x, 16);
        v->n++;
        return FL_OK;
    }
    if (c->ow) { /* FLBA -> fixed/uuid through the byte path (DELTA_BYTE_ARRAY) */
        if (len != c->ow) return FL_ERR_INVALID;
        memcpy(v->data + v->n * c->ow, p, len);
        v->n++;
        return FL_OK;
    }
    return add_bytes(v, p, len);
}

static int64_t floordiv64(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* m fixed-width physical values at src (pw each) into v, converted */
static fl_err_t conv_fixed(pq_col_t *c, pq_vals_t *v, const uint8_t *src, size_t m)
{
    if (c->conv == CV_BE_DEC && c->phys == FL_PQ_FIXED_LEN_BYTE_ARRAY && c->ow == 16 && c->pw <= 16) {
        uint8_t *dst = v->data + v->n * 16;
        size_t pw = c->pw;
        for (size_t i = 0; i < m; i++) {
            __int128 x = be_dec(src + i * pw, pw);
            memcpy(dst + 16 * i, &x, 16);
        }
        v->n += m;
        return FL_OK;
    }
    if (c->conv == CV_BYTES || (c->conv == CV_BE_DEC && c->phys == FL_PQ_FIXED_LEN_BYTE_ARRAY)) {
        for (size_t i = 0; i < m; i++) {
            fl_err_t e = emit_ba(c, v, src + i * c->pw, c->pw);
            if (e) return e;
        }
        return FL_OK;
    }
    uint8_t *dst = v->data + v->n * c->ow;
    switch (c->conv) {
    case CV_COPY:
        if (c->pw != c->ow) return FL_ERR_INVALID;
        if (m) memcpy(dst, src, m * c->pw);
        break;
    case CV_I32_I64:
    case CV_U32_I64:
        for (size_t i = 0; i < m; i++) {
            int32_t x;
            memcpy(&x, src + 4 * i, 4);
            int64_t y = c->conv == CV_U32_I64 ? (int64_t)(uint32_t)x : (int64_t)x;
            y = (int64_t)((uint64_t)y * (uint64_t)c->k);
            memcpy(dst + 8 * i, &y, 8);
        }
        break;
    case CV_I64_MUL:
        for (size_t i = 0; i < m; i++) {
            uint64_t x;
            memcpy(&x, src + 8 * i, 8);
            x *= (uint64_t)c->k;
            memcpy(dst + 8 * i, &x, 8);
        }
        break;
    case CV_I64_DIV:
        for (size_t i = 0; i < m; i++) {
            int64_t x;
            memcpy(&x, src + 8 * i, 8);
            x = floordiv64(x, c->k);
            memcpy(dst + 8 * i, &x, 8);
        }
        break;
    case CV_F32_F64:
        for (size_t i = 0; i < m; i++) {
            float x;
            memcpy(&x, src + 4 * i, 4);
            double y = x;
            memcpy(dst + 8 * i, &y, 8);
        }
        break;
    case CV_I32_DEC:
        for (size_t i = 0; i < m; i++) {
            int32_t x;
            memcpy(&x, src + 4 * i, 4);
            __int128 y = x;
            memcpy(dst + 16 * i, &y, 16);
        }
        break;
    case CV_I64_DEC:
        for (size_t i = 0; i < m; i++) {
            int64_t x;
            memcpy(&x, src + 8 * i, 8);
            __int128 y = x;
            memcpy(dst + 16 * i, &y, 16);
        }
        break;
    case CV_INT96:
        for (size_t i = 0; i < m; i++) {
            uint64_t nanos;
            int32_t jd;
            memcpy(&nanos, src + 12 * i, 8);
            memcpy(&jd, src + 12 * i + 8, 4);
            int64_t ns = (int64_t)((uint64_t)((int64_t)jd - 2440588) * 86400000000000ull + nanos);
            if (!c->k) ns = floordiv64(ns, 1000);
            memcpy(dst + 8 * i, &ns, 8);
        }
        break;
    default:
        return FL_ERR_INVALID;
    }
    v->n += m;
    return FL_OK;
}

static fl_err_t dec_plain(fl_pq_reader_t *r, pq_col_t *c, pq_vals_t *v, const uint8_t *p,
                          size_t n, size_t m)
{
    if (c->phys == FL_PQ_BOOLEAN) {
        if (m > n * 8) return fail(r, FL_ERR_INVALID, "PLAIN booleans truncated");
        fl_pq_unpack8(p, n, 1, v->data + v->n, m);
        v->n += m;
        return FL_OK;
    }
    if (c->phys != FL_PQ_BYTE_ARRAY) {
        if (m > n / c->pw) return fail(r, FL_ERR_INVALID, "PLAIN values truncated");
        return conv_fixed(c, v, p, m);
    }
    const uint8_t *q = p, *end = p + n;
    if (c->conv == CV_BYTES) { /* check and size, then copy (sources have SLACK) */
        size_t total = 0;
        for (size_t i = 0; i < m; i++) {
            uint32_t len;
            if (end - q < 4) return fail(r, FL_ERR_INVALID, "PLAIN byte array truncated");
            memcpy(&len, q, 4);
            q += 4;
            if (len > (size_t)(end - q)) return fail(r, FL_ERR_INVALID, "PLAIN byte array truncated");
            q += len;
            total += len;
        }
        if (total > UINT32_MAX - v->blen) return fail(r, FL_ERR_TOO_LARGE, "column chunk bytes over 4 GiB");
        v->bytes = grow_bytes(v->bytes, &v->bcap, v->blen + total);
        prefault(v->bytes + v->blen, total);
        uint8_t *bp = v->bytes;
        size_t bl = v->blen, vn = v->n;
        q = p;
        for (size_t i = 0; i < m; i++) {
            uint32_t len;
            memcpy(&len, q, 4);
            copy_short(bp + bl, q + 4, len);
            q += 4 + (size_t)len;
            bl += len;
            v->offs[++vn] = (uint32_t)bl;
        }
        v->blen = bl;
        v->n = vn;
        return FL_OK;
    }
    for (size_t i = 0; i < m; i++) {
        if (end - q < 4) return fail(r, FL_ERR_INVALID, "PLAIN byte array truncated");
        uint32_t len;
        memcpy(&len, q, 4);
        q += 4;
        if (len > (size_t)(end - q)) return fail(r, FL_ERR_INVALID, "PLAIN byte array truncated");
        fl_err_t e = emit_ba(c, v, q, len);
        if (e) return fail(r, e, "byte array value invalid or too large");
        q += len;
    }
    return FL_OK;
}

static fl_err_t dec_dict(fl_pq_reader_t *r, pq_col_t *c, pq_vals_t *v, const uint8_t *p,
                         size_t n, size_t m)
{
    if (!c->has_dict) return fail(r, FL_ERR_INVALID, "dictionary-encoded page without dictionary");
    if (n < 1) return fail(r, FL_ERR_INVALID, "dictionary page data empty");
    int bw = p[0];
    if (bw > 32) return fail(r, FL_ERR_INVALID, "dictionary index bit width");
    r->idx = grow(r->idx, &r->idx_cap, m ? m : 1, sizeof *r->idx);
    if (fl_pq_rle_decode32(p + 1, n - 1, bw, r->idx, m, NULL))
        return fail(r, FL_ERR_INVALID, "dictionary indices malformed");
    const pq_vals_t *d = &c->dict;
    uint32_t dn = (uint32_t)d->n;
    const uint32_t *idx = r->idx;
    uint32_t bad = 0;
    if (m && dn == 0) return fail(r, FL_ERR_INVALID, "dictionary index out of range");
    if (c->ow) { /* out-of-range indices read entry 0 and fail the page afterwards */
        uint8_t *restrict dst = v->data + v->n * c->ow;
        const uint8_t *restrict s = d->data;
        size_t w = c->ow;
#define GATHER(W)                                                           \
        for (size_t i = 0; i < m; i++) {                                    \
            uint32_t j = idx[i], ok = j < dn;                               \
            bad |= !ok;                                                     \
            memcpy(dst + (W) * i, s + (W) * (size_t)(ok ? j : 0), (W));     \
        }
        if (w == 4) GATHER(4)
        else if (w == 8) GATHER(8)
        else if (w == 16) GATHER(16)
        else GATHER(w)
#undef GATHER
        if (bad) return fail(r, FL_ERR_INVALID, "dictionary index out of range");
        v->n += m;
        return FL_OK;
    }
    /* bytes: check and size first, then copy */
    const uint32_t *restrict doffs = d->offs;
    size_t total = 0;
    for (size_t i = 0; i < m; i++) {
        uint32_t j = idx[i], ok = j < dn;
        bad |= !ok;
        j = ok ? j : 0;
        total += doffs[j + 1] - doffs[j];
    }
    if (bad) return fail(r, FL_ERR_INVALID, "dictionary index out of range");
    if (total > UINT32_MAX - v->blen) return fail(r, FL_ERR_TOO_LARGE, "column chunk bytes over 4 GiB");
    v->bytes = grow_bytes(v->bytes, &v->bcap, v->blen + total);
    prefault(v->bytes + v->blen, total);
    uint8_t *restrict bp = v->bytes;
    const uint8_t *restrict db = d->bytes;
    uint32_t *restrict vo = v->offs;
    size_t bl = v->blen, vn = v->n;
    for (size_t i = 0; i < m; i++) {
        uint32_t a = doffs[idx[i]], len = doffs[idx[i] + 1] - a;
        copy_short(bp + bl, db + a, len);
        bl += len;
        vo[++vn] = (uint32_t)bl;
    }
    v->blen = bl;
    v->n = vn;
    return FL_OK;
}

static fl_err_t dec_delta_ints(fl_pq_reader_t *r, pq_col_t *c, pq_vals_t *v, const uint8_t *p,
                               size_t n, size_t m)
{
    if (c->phys != FL_PQ_INT32 && c->phys != FL_PQ_INT64)
        return fail(r, FL_ERR_INVALID, "DELTA_BINARY_PACKED on a non-integer column");
    r->i64 = grow(r->i64, &r->i64_cap, m ? m : 1, sizeof *r->i64);
    size_t tot, used;
    if (fl_pq_delta_decode(p, n, r->i64, m, &tot, &used) || tot != m)
        return fail(r, FL_ERR_INVALID, "DELTA_BINARY_PACKED data malformed");
    uint8_t *buf = (uint8_t *)r->i64;
    if (c->phys == FL_PQ_INT32)
        for (size_t i = 0; i < m; i++) {
            int32_t x = (int32_t)(uint32_t)r->i64[i];
            memcpy(buf + 4 * i, &x, 4);
        }
    return conv_fixed(c, v, buf, m);
}

/* lengths of m values, then m values of those lengths (DELTA_LENGTH_BYTE_ARRAY) */
static fl_err_t dec_delta_length(fl_pq_reader_t *r, pq_col_t *c, pq_vals_t *v, const uint8_t *p,
                                 size_t n, size_t m)
{
    if (c->phys != FL_PQ_BYTE_ARRAY)
        return fail(r, FL_ERR_INVALID, "DELTA_LENGTH_BYTE_ARRAY on a non-byte-array column");
    r->i64 = grow(r->i64, &r->i64_cap, m ? m : 1, sizeof *r->i64);
    size_t tot, used;
    if (fl_pq_delta_decode(p, n, r->i64, m, &tot, &used) || tot != m)
        return fail(r, FL_ERR_INVALID, "DELTA_LENGTH_BYTE_ARRAY lengths malformed");
    const uint8_t *q = p + used, *end = p + n;
    for (size_t i = 0; i < m; i++) {
        int64_t len = r->i64[i];
        if (len < 0 || (uint64_t)len > (uint64_t)(end - q))
            return fail(r, FL_ERR_INVALID, "DELTA_LENGTH_BYTE_ARRAY value truncated");
        fl_err_t e = emit_ba(c, v, q, (size_t)len);
        if (e) return fail(r, e, "byte array value invalid or too large");
        q += len;
    }
    return FL_OK;
}

static fl_err_t dec_delta_bytes(fl_pq_reader_t *r, pq_col_t *c, pq_vals_t *v, const uint8_t *p,
                                size_t n, size_t m)
{
    if (c->phys != FL_PQ_BYTE_ARRAY && c->phys != FL_PQ_FIXED_LEN_BYTE_ARRAY)
        return fail(r, FL_ERR_INVALID, "DELTA_BYTE_ARRAY on a non-byte-array column");
    r->i64 = grow(r->i64, &r->i64_cap, 2 * m + 1, sizeof *r->i64);
    int64_t *pre = r->i64, *suf = r->i64 + m;
    size_t tot, used, used2;
    if (fl_pq_delta_decode(p, n, pre, m, &tot, &used) || tot != m)
        return fail(r, FL_ERR_INVALID, "DELTA_BYTE_ARRAY prefix lengths malformed");
    if (fl_pq_delta_decode(p + used, n - used, suf, m, &tot, &used2) || tot != m)
        return fail(r, FL_ERR_INVALID, "DELTA_BYTE_ARRAY suffix lengths malformed");
    const uint8_t *q = p + used + used2, *end = p + n;
    size_t prev = 0;
    for (size_t i = 0; i < m; i++) {
        int64_t pl = pre[i], sl = suf[i];
        if (pl < 0 || sl < 0 || (uint64_t)pl > prev || (uint64_t)sl > (uint64_t)(end - q))
            return fail(r, FL_ERR_INVALID, "DELTA_BYTE_ARRAY value malformed");
        size_t len = (size_t)pl + (size_t)sl;
        if (len > FL_PQ_MAX_PAGE_BYTES) return fail(r, FL_ERR_TOO_LARGE, "value too large");
        r->tmp = grow(r->tmp, &r->tmp_cap, len ? len : 1, 1);
        memcpy(r->tmp + pl, q, (size_t)sl);
        q += sl;
        fl_err_t e = emit_ba(c, v, r->tmp, len);
        if (e) return fail(r, e, "byte array value invalid or too large");
        prev = len;
    }
    return FL_OK;
}

static fl_err_t dec_bss(fl_pq_reader_t *r, pq_col_t *c, pq_vals_t *v, const uint8_t *p,
                        size_t n, size_t m)
{
    if (c->phys == FL_PQ_BOOLEAN || c->phys == FL_PQ_BYTE_ARRAY || c->phys == FL_PQ_INT96)
        return fail(r, FL_ERR_INVALID, "BYTE_STREAM_SPLIT on an unsupported type");
    /* the streams hold exactly the page's m values */
    if (m > n / c->pw || n != m * c->pw)
        return fail(r, FL_ERR_INVALID, "BYTE_STREAM_SPLIT size mismatch");
    r->tmp = grow(r->tmp, &r->tmp_cap, m * c->pw + 1, 1);
    fl_pq_bss_decode(p, m, c->pw, r->tmp);
    return conv_fixed(c, v, r->tmp, m);
}

static fl_err_t dec_values(fl_pq_reader_t *r, pq_col_t *c, pq_vals_t *v, int enc,
                           const uint8_t *p, size_t n, size_t m)
{
    if (m > FL_PQ_MAX_CHUNK_VALUES) return fail(r, FL_ERR_TOO_LARGE, "too many values in a page");
    if (enc == FL_PQ_ENC_PLAIN || enc == FL_PQ_ENC_BYTE_STREAM_SPLIT) {
        /* these take at least a bit (booleans), 4 bytes (byte arrays) or the width per value */
        size_t most = c->phys == FL_PQ_BOOLEAN ? (n > SIZE_MAX / 8 ? SIZE_MAX : n * 8)
                    : c->phys == FL_PQ_BYTE_ARRAY ? n / 4 : n / c->pw;
        if (m > most) return fail(r, FL_ERR_INVALID, "page values truncated");
    }
    vals_reserve(c, v, m);
    switch (enc) {
    case FL_PQ_ENC_PLAIN: return dec_plain(r, c, v, p, n, m);
    case FL_PQ_ENC_PLAIN_DICTIONARY:
    case FL_PQ_ENC_RLE_DICTIONARY: return dec_dict(r, c, v, p, n, m);
    case FL_PQ_ENC_RLE: {
        if (c->phys != FL_PQ_BOOLEAN) return fail(r, FL_ERR_INVALID, "RLE values on a non-boolean column");
        if (n < 4) return fail(r, FL_ERR_INVALID, "RLE booleans truncated");
        uint32_t len;
        memcpy(&len, p, 4);
        if (len > n - 4) return fail(r, FL_ERR_INVALID, "RLE booleans truncated");
        if (fl_pq_rle_decode8(p + 4, len, 1, 1, v->data + v->n, m, NULL))
            return fail(r, FL_ERR_INVALID, "RLE booleans malformed");
        v->n += m;
        return FL_OK;
    }
    case FL_PQ_ENC_DELTA_BINARY_PACKED: return dec_delta_ints(r, c, v, p, n, m);
    case FL_PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: return dec_delta_length(r, c, v, p, n, m);
    case FL_PQ_ENC_DELTA_BYTE_ARRAY: return dec_delta_bytes(r, c, v, p, n, m);
    case FL_PQ_ENC_BYTE_STREAM_SPLIT: return dec_bss(r, c, v, p, n, m);
    default: return fail(r, FL_ERR_INVALID, "unsupported encoding %d", enc);
    }
}

/* ---------------- pages ---------------- */

static fl_err_t decode_levels_v1(fl_pq_reader_t *r, int enc, const uint8_t **q, const uint8_t *end,
                                 int max, uint8_t *out, size_t count)
{
    int bw = fl_pq_bit_width((uint32_t)max);
    size_t avail = (size_t)(end - *q), used;
    if (enc == FL_PQ_ENC_RLE) {
        if (avail < 4) return fail(r, FL_ERR_INVALID, "levels truncated");
        uint32_t len;
        memcpy(&len, *q, 4);
        if (len > avail - 4) return fail(r, FL_ERR_INVALID, "levels truncated");
        if (fl_pq_rle_decode8(*q + 4, len, bw, max, out, count, NULL))
            return fail(r, FL_ERR_INVALID, "levels malformed");
        *q += 4 + (size_t)len;
        return FL_OK;
    }
    if (enc == FL_PQ_ENC_BIT_PACKED) {
        if (fl_pq_bitpacked_msb8(*q, avail, bw, max, out, count, &used))
            return fail(r, FL_ERR_INVALID, "levels malformed");
        *q += used;
        return FL_OK;
    }
    return fail(r, FL_ERR_INVALID, "unsupported level encoding %d", enc);
}

/* Check levels of entries [from, to), count the present values and the
 * output slots (entries with def >= slot_def). */
static fl_err_t check_levels(fl_pq_reader_t *r, pq_col_t *c, size_t from, size_t to, size_t *nonnull,
                             size_t *slots)
{
    size_t nn = 0, ns = 0;
    if (c->max_def == 0) nn = ns = to - from;
    else {
        const uint8_t *d = c->def + from;
        uint8_t md = (uint8_t)c->max_def, sd = (uint8_t)c->slot_def;
        nn = fl_pq_count_ge(d, to - from, md); /* levels never exceed max_def */
        ns = sd == 0 ? to - from : fl_pq_count_ge(d, to - from, sd);
    }
    if (c->max_rep > 0) {
        const uint8_t *rp = c->rep;
        if (from == 0 && to > 0 && rp[0] != 0)
            return fail(r, FL_ERR_INVALID, "column chunk starts inside a record");
        if (fl_pq_levels_disagree(rp + from, c->def + from, to - from, c->rep_def, c->max_rep))
            return fail(r, FL_ERR_INVALID, "repetition and definition levels disagree");
    }
    *nonnull = nn;
    *slots = ns;
    return FL_OK;
}

/* The output vector's buffers as a pq_vals_t the decoders append to (values
 * from slot v->len on); vec_return hands back whatever they grew into. The
 * bytes buffer keeps SLACK bytes past the capacity the decoders see. */
static void vec_borrow(pq_vals_t *b, fl_vec_t *v, size_t ow)
{
    memset(b, 0, sizeof *b);
    b->n = v->len;
    b->cap = v->cap;
    b->data = v->data;
    b->offs = v->offsets;
    b->ocap = v->offsets ? v->cap + 1 : 0;
    if (!ow) {
        if (!v->bytes || v->bytes_cap < 1024 + SLACK) {
            v->bytes = fl_realloc(v->bytes, 1024 + SLACK);
            v->bytes_cap = 1024 + SLACK;
        }
        b->bytes = v->bytes;
        b->bcap = v->bytes_cap - SLACK;
        b->blen = v->bytes_len;
    }
}

static void vec_return(fl_vec_t *v, const pq_vals_t *b)
{
    v->data = b->data;
    v->offsets = b->offs;
    if (b->bytes) {
        v->bytes = b->bytes;
        v->bytes_cap = b->bcap + SLACK;
        v->bytes_len = b->blen;
    }
}

#define SPREAD_FIXED(W)                                                     \
    while (i > k) {                                                         \
        i--;                                                                \
        if (valid[i]) {                                                     \
            k--;                                                            \
            memcpy(d + i * (W), d + k * (W), (W));                          \
        } else                                                              \
            memset(d + i * (W), 0, (W));                                    \
    }

/* A page's nonnull values sit densely from slot v->len on; spread them over
 * its pslots slots (back to front, in place), zero-filling nulls, and set the
 * validity bytes from the page's definition levels (entries [from, from+nv)). */
static void spread_page(pq_col_t *c, fl_vec_t *v, size_t from, size_t nv, size_t nonnull,
                        size_t pslots)
{
    const uint8_t *def = c->def + from;
    uint8_t sd = (uint8_t)c->slot_def, md = (uint8_t)c->max_def;
    size_t s0 = v->len;
    if (!v->valid) {
        v->valid = fl_malloc(v->cap ? v->cap : 1);
        memset(v->valid, 1, s0);
    }
    uint8_t *valid = v->valid + s0;
    if (pslots == nv)
        fl_pq_mask_ge(def, nv, md, valid);
    else
        for (size_t i = 0, s = 0; i < nv; i++)
            if (def[i] >= sd) valid[s++] = def[i] == md;
    size_t i = pslots, k = nonnull; /* k: values in slots [0, i) */
    size_t w = c->ow;
    if (w) {
        uint8_t *d = v->data + s0 * w;
        switch (w) {
        case 1: SPREAD_FIXED(1); break;
        case 4: SPREAD_FIXED(4); break;
        case 8: SPREAD_FIXED(8); break;
        case 16: SPREAD_FIXED(16); break;
        default: SPREAD_FIXED(w); break;
        }
    } else {
        uint32_t *off = v->offsets + s0; /* off[j]: end of the j-th value (off[0]: start) */
        while (i > k) {
            i--;
            off[i + 1] = off[k];
            k -= valid[i];
        }
    }
}

/* Decode a data page's nonnull values straight into the column's output
 * vector, then lay them out over the page's pslots slots. */
static fl_err_t page_values(fl_pq_reader_t *r, pq_col_t *c, int enc, const uint8_t *p, size_t n,
                            size_t from, size_t nv, size_t nonnull, size_t pslots)
{
    fl_vec_t *v = c->vec;
    if (!v || v->field != c->out) return fail(r, FL_ERR_INVALID, "internal: no output vector");
    fl_vec_reserve(v, pslots + 1);
    if (c->ow) prefault(v->data + v->len * c->ow, pslots * c->ow);
    if (v->offsets) prefault(v->offsets + v->len, (pslots + 1) * sizeof *v->offsets);
    if (v->valid) prefault(v->valid + v->len, pslots);
    pq_vals_t b;
    vec_borrow(&b, v, c->ow);
    fl_err_t e = dec_values(r, c, &b, enc, p, n, nonnull);
    vec_return(v, &b);
    if (e) return e;
    if (b.n != v->len + nonnull) return fail(r, FL_ERR_INVALID, "internal: value count");
    if (nonnull != pslots) spread_page(c, v, from, nv, nonnull, pslots);
    else if (v->valid) memset(v->valid + v->len, 1, pslots);
    v->len += pslots;
    v->null_count += pslots - nonnull;
    return FL_OK;
}

static fl_err_t grow_levels(pq_col_t *c, size_t nv)
{
    size_t need = c->nlev + nv + 1, cap = c->levcap;
    if (need <= cap) return FL_OK;
    size_t cap2 = cap;
    c->def = grow(c->def, &cap2, need, 1);
    if (c->max_rep > 0) {
        size_t cap3 = cap;
        c->rep = grow(c->rep, &cap3, need, 1);
    }
    c->levcap = cap2;
    return FL_OK;
}

static fl_err_t get_page_data(fl_pq_reader_t *r, int codec, const uint8_t *src, size_t n,
                              size_t raw, bool compressed, uint8_t **buf, size_t *cap,
                              const uint8_t **out)
{
    if (codec == FL_PQ_UNCOMPRESSED || !compressed) {
        if (raw > n) return fail(r, FL_ERR_INVALID, "page sizes disagree");
        *out = src;
        return FL_OK;
    }
    *buf = grow_bytes(*buf, cap, raw ? raw : 1);
    if (fl_codec_decompress((fl_codec_t)codec, src, n, *buf, raw))
        return fail(r, FL_ERR_INVALID, "page does not decompress");
    *out = *buf;
    return FL_OK;
}

/* Checks a column chunk's codec, extent and counts, and reads its bytes into
 * r->chunk; *len and *total_nv get its size and level count. */
static fl_err_t load_chunk(fl_pq_reader_t *r, const fl_pq_row_group_t *rg, const pq_col_t *c, size_t *len,
                           size_t *total_nv)
{
    const fl_pq_column_meta_t *cm = &rg->columns[c->idx].meta;
    int codec = cm->codec;
    if (codec != FL_PQ_UNCOMPRESSED && codec != FL_PQ_SNAPPY && codec != FL_PQ_GZIP &&
        codec != FL_PQ_LZ4 && codec != FL_PQ_ZSTD && codec != FL_PQ_LZ4_RAW)
        return fail(r, FL_ERR_INVALID, "unsupported codec %d", codec);
    uint64_t start = (uint64_t)cm->data_page_offset;
    if (cm->has_dictionary_page_offset && cm->dictionary_page_offset >= 4 &&
        (uint64_t)cm->dictionary_page_offset < start)
        start = (uint64_t)cm->dictionary_page_offset;
    uint64_t n = (uint64_t)cm->total_compressed_size;
    if (start > r->data_end || n > r->data_end - start)
        return fail(r, FL_ERR_INVALID, "column chunk outside the file");
    if (n > FL_PQ_MAX_CHUNK_BYTES) return fail(r, FL_ERR_TOO_LARGE, "column chunk too large");
    if (cm->num_values > FL_PQ_MAX_CHUNK_VALUES)
        return fail(r, FL_ERR_TOO_LARGE, "column chunk has too many values");
    *total_nv = (size_t)cm->num_values;
    if (c->max_rep == 0 && *total_nv != (size_t)rg->num_rows)
        return fail(r, FL_ERR_INVALID, "column chunk value count differs from row count");
    r->chunk = grow_bytes(r->chunk, &r->chunk_cap, (size_t)n);
    prefault(r->chunk, (size_t)n);
    fl_err_t e = r->src.read_at(r->src.ctx, start, r->chunk, (size_t)n);
    if (e) return fail(r, e, "read failed");
    *len = (size_t)n;
    return FL_OK;
}

/* One page of a column chunk: its header and its (still compressed) bytes. */
typedef struct pq_page {
    fl_pq_page_header_t h;
    const uint8_t *p;
    size_t csize, usize;
} pq_page_t;

static fl_err_t read_dict_page(fl_pq_reader_t *r, pq_col_t *c, int codec, const pq_page_t *pg)
{
    const fl_pq_dict_page_header_t *dh = &pg->h.dict_page;
    if (!pg->h.has_dict_page || c->has_dict || c->nlev > 0)
        return fail(r, FL_ERR_INVALID, "unexpected dictionary page");
    if (dh->encoding != FL_PQ_ENC_PLAIN && dh->encoding != FL_PQ_ENC_PLAIN_DICTIONARY)
        return fail(r, FL_ERR_INVALID, "dictionary page encoding %d", dh->encoding);
    if (dh->num_values < 0 || (size_t)dh->num_values > pg->usize * 8 + 1)
        return fail(r, FL_ERR_INVALID, "dictionary size");
    const uint8_t *data = NULL;
    fl_err_t e = get_page_data(r, codec, pg->p, pg->csize, pg->usize, true, &r->page, &r->page_cap, &data);
    if (e) return e;
    if (!c->levels_only) e = dec_values(r, c, &c->dict, FL_PQ_ENC_PLAIN, data, pg->usize, (size_t)dh->num_values);
    c->has_dict = true;
    return e;
}

/* Data page v1: levels and values share one compressed body. Decodes nv levels
 * at c->nlev and points [*q, *end) at the values. */
static fl_err_t page_v1_levels(fl_pq_reader_t *r, pq_col_t *c, int codec, const pq_page_t *pg, size_t nv,
                               const uint8_t **q, const uint8_t **end)
{
    const uint8_t *data = NULL;
    fl_err_t e = get_page_data(r, codec, pg->p, pg->csize, pg->usize, true, &r->page, &r->page_cap, &data);
    if (e) return e;
    *q = data;
    *end = data + pg->usize;
    if (c->max_rep > 0 &&
        (e = decode_levels_v1(r, pg->h.data_page.repetition_level_encoding, q, *end, c->max_rep,
                              c->rep + c->nlev, nv)))
        return e;
    if (c->max_def > 0)
        e = decode_levels_v1(r, pg->h.data_page.definition_level_encoding, q, *end, c->max_def,
                             c->def + c->nlev, nv);
    return e;
}

/* Data page v2: levels stored uncompressed before the (maybe compressed) values. */
static fl_err_t page_v2_levels(fl_pq_reader_t *r, pq_col_t *c, int codec, const pq_page_t *pg, size_t nv,
                               const uint8_t **q, const uint8_t **end)
{
    const fl_pq_data_page_header_v2_t *d2 = &pg->h.data_page_v2;
    int32_t rl = d2->repetition_levels_byte_length, dl = d2->definition_levels_byte_length;
    if (rl < 0 || dl < 0 || (size_t)rl + (size_t)dl > pg->csize || (size_t)rl + (size_t)dl > pg->usize)
        return fail(r, FL_ERR_INVALID, "page v2 level lengths");
    if (c->max_rep > 0 &&
        fl_pq_rle_decode8(pg->p, (size_t)rl, fl_pq_bit_width((uint32_t)c->max_rep), c->max_rep,
                          c->rep + c->nlev, nv, NULL))
        return fail(r, FL_ERR_INVALID, "repetition levels malformed");
    if (c->max_def > 0 &&
        fl_pq_rle_decode8(pg->p + rl, (size_t)dl, fl_pq_bit_width((uint32_t)c->max_def), c->max_def,
                          c->def + c->nlev, nv, NULL))
        return fail(r, FL_ERR_INVALID, "definition levels malformed");
    if (c->levels_only) return FL_OK;
    size_t lv = (size_t)rl + (size_t)dl;
    bool comp = !d2->has_is_compressed || d2->is_compressed;
    const uint8_t *data = NULL;
    fl_err_t e = get_page_data(r, codec, pg->p + lv, pg->csize - lv, pg->usize - lv, comp, &r->page2,
                               &r->page2_cap, &data);
    if (e) return e;
    *q = data;
    *end = data + (pg->usize - lv);
    return FL_OK;
}

/* A data page (v1 or v2): its levels, checked, then its values. */
static fl_err_t read_data_page(fl_pq_reader_t *r, pq_col_t *c, int codec, const pq_page_t *pg, size_t total_nv)
{
    bool v2 = pg->h.type == FL_PQ_DATA_PAGE_V2;
    int32_t nv32 = v2 ? pg->h.data_page_v2.num_values : pg->h.data_page.num_values;
    int enc = v2 ? pg->h.data_page_v2.encoding : pg->h.data_page.encoding;
    if (v2 ? !pg->h.has_data_page_v2 : !pg->h.has_data_page)
        return fail(r, FL_ERR_INVALID, "data page without its header");
    if (nv32 < 0 || (size_t)nv32 > total_nv - c->nlev)
        return fail(r, FL_ERR_INVALID, "page value count beyond the column chunk");
    size_t nv = (size_t)nv32;
    grow_levels(c, nv);
    prefault(c->def + c->nlev, nv);
    if (c->max_rep > 0) prefault(c->rep + c->nlev, nv);
    const uint8_t *q = NULL, *end = NULL;
    fl_err_t e = v2 ? page_v2_levels(r, c, codec, pg, nv, &q, &end) : page_v1_levels(r, c, codec, pg, nv, &q, &end);
    size_t nonnull = 0, pslots = 0;
    if (!e) e = check_levels(r, c, c->nlev, c->nlev + nv, &nonnull, &pslots);
    if (e) return e;
    size_t from = c->nlev;
    c->nlev += nv;
    if (!c->levels_only) e = page_values(r, c, enc, q, (size_t)(end - q), from, nv, nonnull, pslots);
    return e;
}

/* Reads one column chunk of rg into c: every page in turn, until its levels
 * are all there. */
static fl_err_t read_chunk(fl_pq_reader_t *r, const fl_pq_row_group_t *rg, pq_col_t *c)
{
    size_t len = 0, total_nv = 0;
    fl_err_t e = load_chunk(r, rg, c, &len, &total_nv);
    if (e) return e;
    int codec = rg->columns[c->idx].meta.codec;
    c->nlev = 0;
    c->dict.n = 0;
    c->dict.blen = 0;
    c->has_dict = false;
    size_t pos = 0;
    while (pos < len && c->nlev < total_nv) {
        pq_page_t pg;
        size_t used = 0;
        if (fl_pq_page_header_decode(r->chunk + pos, len - pos, &pg.h, &used))
            return fail(r, FL_ERR_INVALID, "malformed page header");
        pos += used;
        if (pg.h.compressed_page_size < 0 || (uint64_t)pg.h.compressed_page_size > len - pos ||
            pg.h.uncompressed_page_size < 0)
            e = fail(r, FL_ERR_INVALID, "page size outside the column chunk");
        else if (pg.h.uncompressed_page_size > FL_PQ_MAX_PAGE_BYTES)
            e = fail(r, FL_ERR_TOO_LARGE, "page too large");
        else {
            pg.p = r->chunk + pos;
            pg.csize = (size_t)pg.h.compressed_page_size;
            pg.usize = (size_t)pg.h.uncompressed_page_size;
            pos += pg.csize;
            if (pg.h.type == FL_PQ_DICTIONARY_PAGE) e = read_dict_page(r, c, codec, &pg);
            else if (pg.h.type == FL_PQ_DATA_PAGE || pg.h.type == FL_PQ_DATA_PAGE_V2)
                e = read_data_page(r, c, codec, &pg, total_nv);
        }
        fl_pq_page_header_free(&pg.h);
        if (e) return e;
    }
    if (c->nlev != total_nv) return fail(r, FL_ERR_INVALID, "column chunk ends early");
    return FL_OK;
}

/* ---------------- assembly ---------------- */

static void ensure_valid(fl_vec_t *v)
{
    if (!v->valid) v->valid = fl_malloc(v->cap ? v->cap : 1);
}

static void null_fill(fl_vec_t *v, size_t n)
{
    fl_vec_reserve(v, n ? n : 1);
    ensure_valid(v);
    memset(v->valid, 0, n);
    size_t w = fl_field_width(v->field);
    if (w) memset(v->data, 0, n * w);
    if (v->offsets) memset(v->offsets, 0, (n + 1) * sizeof *v->offsets);
    v->len = n;
    v->null_count = n;
    if (v->field->kind == FL_TYPE_STRUCT)
        for (uint32_t i = 0; i < v->n_children; i++) null_fill(&v->children[i], n);
}

/* Leaf values were decoded into the vector by read_chunk; check the count. */
static fl_err_t asm_leaf(fl_pq_reader_t *r, const pq_pnode_t *pn, fl_vec_t *v, size_t expect)
{
    pq_col_t *c = pn->lev;
    if (!c || c->levels_only || c->out != pn->exp || c->vec != v)
        return fail(r, FL_ERR_INVALID, "internal: leaf binding");
    if (v->len != expect)
        return fail(r, FL_ERR_INVALID, "column %u: %zu values where %zu expected", c->idx, v->len, expect);
    if (v->len == 0) { /* an empty page-less vector still has offsets[0] */
        fl_vec_reserve(v, 1);
        if (v->offsets) v->offsets[0] = 0;
        v->bytes_len = 0;
    }
    return FL_OK;
}

static fl_err_t asm_node(fl_pq_reader_t *r, const pq_pnode_t *pn, fl_vec_t *v, size_t expect);

static fl_err_t asm_nested(fl_pq_reader_t *r, const pq_pnode_t *pn, fl_vec_t *v, size_t expect)
{
    const pq_fnode_t *fn = pn->fn;
    pq_col_t *c = pn->lev;
    if (!c) return fail(r, FL_ERR_INVALID, "internal: no level column");
    size_t n = c->nlev;
    const uint8_t *def = c->def, *rep = c->max_rep ? c->rep : NULL;
    bool no_def = c->max_def == 0;
    int R = fn->R, sd = fn->slot_def, pd = fn->def;
    fl_vec_reserve(v, expect + 1);
    ensure_valid(v);
    uint8_t *valid = v->valid;
    size_t s = 0, nulls = 0;
    if (v->field->kind == FL_TYPE_STRUCT && !rep && (no_def || sd == 0)) { /* a slot per entry */
        if (n != expect)
            return fail(r, FL_ERR_INVALID, "struct has %s slots than expected", n > expect ? "more" : "fewer");
        if (no_def || pd == 0) memset(valid, 1, n);
        else nulls = n - fl_pq_mask_ge(def, n, (uint8_t)pd, valid);
        s = n;
    } else if (v->field->kind == FL_TYPE_STRUCT) {
        for (size_t i = 0; i < n; i++) {
            int rl = rep ? rep[i] : 0, dl = no_def ? 0 : def[i];
            if (rl > R || dl < sd) continue;
            if (s >= expect) return fail(r, FL_ERR_INVALID, "struct has more slots than expected");
            bool ok = dl >= pd;
            valid[s++] = ok;
            nulls += !ok;
        }
        if (s != expect) return fail(r, FL_ERR_INVALID, "struct has fewer slots than expected");
    }
    if (v->field->kind == FL_TYPE_STRUCT) {
        v->len = s;
        v->null_count = nulls;
        for (uint32_t k = 0; k < pn->n_kids; k++) {
            fl_err_t e = asm_node(r, &pn->kids[k], &v->children[k], s);
            if (e) return e;
        }
        return FL_OK;
    }
    /* list / map */
    const pq_fnode_t *el = &fn->kids[0];
    int Re = el->R, sde = el->slot_def;
    uint32_t *off = v->offsets;
    size_t elems = 0;
    off[0] = 0;
    if (n >= UINT32_MAX) return fail(r, FL_ERR_TOO_LARGE, "too many list elements");
    /* One branch-free pass. Every entry stores at the next slot position,
     * min(s, expect) (within the cap >= expect + 1 reserved above), which
     * only a slot entry then claims; the counts are checked after the loop. */
    bool orphan = false;
    for (size_t i = 0; i < n; i++) {
        int rl = rep ? rep[i] : 0, dl = no_def ? 0 : def[i];
        bool slot = rl <= R && dl >= sd, ok = dl >= pd, elem = rl <= Re && dl >= sde;
        size_t w = s < expect ? s : expect;
        off[w] = (uint32_t)elems;
        valid[w] = ok;
        s += slot;
        nulls += slot & !ok;
        orphan |= elem & (s == 0);
        elems += elem;
    }
    if (orphan) return fail(r, FL_ERR_INVALID, "list element outside a list");
    if (s > expect) return fail(r, FL_ERR_INVALID, "list has more slots than expected");
    if (s != expect) return fail(r, FL_ERR_INVALID, "list has fewer slots than expected");
    off[s] = (uint32_t)elems;
    v->len = s;
    v->null_count = nulls;
    for (uint32_t k = 0; k < pn->n_kids; k++) {
        fl_err_t e = asm_node(r, &pn->kids[k], &v->children[k], elems);
        if (e) return e;
    }
    return FL_OK;
}

static fl_err_t asm_node(fl_pq_reader_t *r, const pq_pnode_t *pn, fl_vec_t *v, size_t expect)
{
    if (!pn->fn) {
        null_fill(v, expect);
        return FL_OK;
    }
    if (fl_type_is_nested(pn->exp->kind)) return asm_nested(r, pn, v, expect);
    return asm_leaf(r, pn, v, expect);
}

/* Each bound leaf column learns the output vector its values go to. */
static void bind_vecs(const pq_pnode_t *pn, fl_vec_t *v)
{
    if (!pn->fn) return;
    if (!fl_type_is_nested(pn->exp->kind)) {
        if (pn->lev && pn->lev->out == pn->exp && v->field == pn->exp) pn->lev->vec = v;
        return;
    }
    for (uint32_t k = 0; k < pn->n_kids && k < v->n_children; k++) bind_vecs(&pn->kids[k], &v->children[k]);
}

fl_err_t fl_pq_reader_next(fl_pq_reader_t *r, fl_vec_t *out, bool *done)
{
    *done = false;
    if (!r->bound) {
        fl_err_t e = do_project(r, &r->fschema, false);
        if (e) return e;
    }
    if (out->field != r->exp) {
        fl_vec_free(out);
        fl_vec_init(out, r->exp);
    } else
        fl_vec_clear(out);
    if (r->next_rg >= r->meta.n_row_groups) {
        *done = true;
        return FL_OK;
    }
    const fl_pq_row_group_t *rg = &r->meta.row_groups[r->next_rg];
    size_t rows = (size_t)rg->num_rows;
    if (rows == 0) {
        for (uint32_t k = 0; k < out->n_children; k++) null_fill(&out->children[k], 0);
        r->next_rg++;
        return FL_OK;
    }
    for (uint32_t i = 0; i < r->n_cols; i++) r->cols[i].vec = NULL;
    for (uint32_t k = 0; k < r->proot.n_kids; k++) bind_vecs(&r->proot.kids[k], &out->children[k]);
    for (uint32_t i = 0; i < r->n_cols; i++) {
        if (!r->cols[i].needed) continue;
        fl_err_t e = read_chunk(r, rg, &r->cols[i]);
        if (e) {
            char tmp[sizeof r->err];
            memcpy(tmp, r->err, sizeof tmp);
            fail(r, e, "row group %u, column %u: %.200s", r->next_rg, i, tmp);
            fl_vec_clear(out);
            return e;
        }
    }
    fl_vec_reserve(out, rows ? rows : 1);
    out->len = rows;
    for (uint32_t k = 0; k < r->proot.n_kids; k++) {
        fl_err_t e = asm_node(r, &r->proot.kids[k], &out->children[k], rows);
        if (e) {
            fl_vec_clear(out);
            return e;
        }
    }
    r->next_rg++;
    return FL_OK;
}
