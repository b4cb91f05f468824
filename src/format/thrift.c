/* Thrift compact protocol writer and reader (see thrift.h).
 *
 * Wire facts used here: integers are ULEB128 varints of their zigzag form (i16,
 * i32, i64; a byte is one raw byte); doubles are 8 bytes little-endian; binary
 * is a varint length then the bytes; a field header is one byte (delta << 4 |
 * type) when the id grows by 1..15, else the type byte followed by the id as a
 * zigzag varint; a bool field's value lives in the type nibble (1 true, 2
 * false); a list/set header is (size << 4 | elem) for size < 15, else 0xF0 |
 * elem followed by a varint size; a map header is a varint size and, when the
 * size is non-zero, one byte (key << 4 | value). */
#include "format/thrift.h"
#include <string.h>

/* ---------------- writer ---------------- */

void fl_thrift_writer_init(fl_thrift_writer_t *w, fl_buf_t *out)
{
    memset(w, 0, sizeof *w);
    w->out = out;
}

fl_err_t fl_thrift_writer_err(const fl_thrift_writer_t *w)
{
    if (w->err) return w->err;
    return w->depth ? FL_ERR_INVALID : FL_OK;
}

static void put(fl_thrift_writer_t *w, const void *p, size_t n)
{
    if (w->err) return;
    w->err = fl_buf_add(w->out, p, n);
}

void fl_thrift_write_varint(fl_thrift_writer_t *w, uint64_t v)
{
    uint8_t b[10];
    size_t n = 0;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    put(w, b, n);
}

void fl_thrift_write_byte(fl_thrift_writer_t *w, int8_t v) { put(w, &v, 1); }
void fl_thrift_write_i16(fl_thrift_writer_t *w, int16_t v) { fl_thrift_write_varint(w, fl_zigzag64(v)); }
void fl_thrift_write_i32(fl_thrift_writer_t *w, int32_t v) { fl_thrift_write_varint(w, fl_zigzag64(v)); }
void fl_thrift_write_i64(fl_thrift_writer_t *w, int64_t v) { fl_thrift_write_varint(w, fl_zigzag64(v)); }

void fl_thrift_write_double(fl_thrift_writer_t *w, double v)
{
    uint64_t u;
    uint8_t b[8];
    memcpy(&u, &v, 8);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(u >> (8 * i));
    put(w, b, 8);
}

void fl_thrift_write_binary(fl_thrift_writer_t *w, const void *p, size_t n)
{
    fl_thrift_write_varint(w, n);
    if (n) put(w, p, n);
}

void fl_thrift_write_bool(fl_thrift_writer_t *w, bool v)
{
    uint8_t b = v ? 1 : 2;
    put(w, &b, 1);
}

void fl_thrift_write_struct_begin(fl_thrift_writer_t *w)
{
    if (w->err) return;
    if (w->depth >= FL_THRIFT_MAX_DEPTH) { w->err = FL_ERR_TOO_LARGE; return; }
    w->last_id[w->depth++] = 0;
}

void fl_thrift_write_struct_end(fl_thrift_writer_t *w)
{
    if (w->err) return;
    if (w->depth <= 0) { w->err = FL_ERR_INVALID; return; }
    uint8_t stop = 0;
    put(w, &stop, 1);
    w->depth--;
}

static void field_header(fl_thrift_writer_t *w, int wire_type, int16_t id)
{
    if (w->err) return;
    if (w->depth <= 0 || wire_type <= 0 || wire_type > FL_TC_STRUCT) { w->err = FL_ERR_INVALID; return; }
    int16_t *last = &w->last_id[w->depth - 1];
    int delta = (int)id - (int)*last;
    if (delta > 0 && delta <= 15) {
        uint8_t b = (uint8_t)(delta << 4 | wire_type);
        put(w, &b, 1);
    } else {
        uint8_t b = (uint8_t)wire_type;
        put(w, &b, 1);
        fl_thrift_write_i16(w, id);
    }
    *last = id;
}

void fl_thrift_write_field(fl_thrift_writer_t *w, int type, int16_t id)
{
    if (type == FL_TC_BOOL || type == FL_TC_FALSE) {
        if (!w->err) w->err = FL_ERR_INVALID;
        return;
    }
    field_header(w, type, id);
}

void fl_thrift_write_field_bool(fl_thrift_writer_t *w, int16_t id, bool v)
{
    field_header(w, v ? 1 : 2, id);
}

void fl_thrift_write_list_begin(fl_thrift_writer_t *w, int elem_type, uint32_t n)
{
    if (elem_type <= 0 || elem_type > FL_TC_STRUCT) {
        if (!w->err) w->err = FL_ERR_INVALID;
        return;
    }
    if (n < 15) {
        uint8_t b = (uint8_t)(n << 4 | (uint32_t)elem_type);
        put(w, &b, 1);
    } else {
        uint8_t b = (uint8_t)(0xF0 | elem_type);
        put(w, &b, 1);
        fl_thrift_write_varint(w, n);
    }
}

void fl_thrift_write_map_begin(fl_thrift_writer_t *w, int key_type, int val_type, uint32_t n)
{
    fl_thrift_write_varint(w, n);
    if (n) {
        uint8_t b = (uint8_t)((key_type & 0xF) << 4 | (val_type & 0xF));
        put(w, &b, 1);
    }
}

void fl_thrift_write_i32_field(fl_thrift_writer_t *w, int16_t id, int32_t v)
{
    fl_thrift_write_field(w, FL_TC_I32, id);
    fl_thrift_write_i32(w, v);
}

void fl_thrift_write_i64_field(fl_thrift_writer_t *w, int16_t id, int64_t v)
{
    fl_thrift_write_field(w, FL_TC_I64, id);
    fl_thrift_write_i64(w, v);
}

void fl_thrift_write_binary_field(fl_thrift_writer_t *w, int16_t id, const void *p, size_t n)
{
    fl_thrift_write_field(w, FL_TC_BINARY, id);
    fl_thrift_write_binary(w, p, n);
}

/* ---------------- reader ---------------- */

void fl_thrift_reader_init(fl_thrift_reader_t *r, const void *p, size_t n)
{
    memset(r, 0, sizeof *r);
    r->p = p;
    r->end = r->p + n;
}

fl_err_t fl_thrift_read_varint(fl_thrift_reader_t *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end) return FL_ERR_INVALID;
        uint8_t b = *r->p++;
        if (i == 9 && b > 1) return FL_ERR_INVALID;  /* more than 64 bits */
        x |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return FL_OK;
        }
    }
    return FL_ERR_INVALID;
}

fl_err_t fl_thrift_read_byte(fl_thrift_reader_t *r, int8_t *v)
{
    if (r->p >= r->end) return FL_ERR_INVALID;
    *v = (int8_t)*r->p++;
    return FL_OK;
}

static fl_err_t read_zz(fl_thrift_reader_t *r, uint64_t max, int64_t *v)
{
    uint64_t u;
    fl_err_t rc = fl_thrift_read_varint(r, &u);
    if (rc) return rc;
    if (u > max) return FL_ERR_INVALID;
    *v = fl_unzigzag64(u);
    return FL_OK;
}

fl_err_t fl_thrift_read_i16(fl_thrift_reader_t *r, int16_t *v)
{
    int64_t x;
    fl_err_t rc = read_zz(r, 0xFFFFu, &x);
    if (!rc) *v = (int16_t)x;
    return rc;
}

fl_err_t fl_thrift_read_i32(fl_thrift_reader_t *r, int32_t *v)
{
    int64_t x;
    fl_err_t rc = read_zz(r, 0xFFFFFFFFu, &x);
    if (!rc) *v = (int32_t)x;
    return rc;
}

fl_err_t fl_thrift_read_i64(fl_thrift_reader_t *r, int64_t *v)
{
    return read_zz(r, UINT64_MAX, v);
}

fl_err_t fl_thrift_read_double(fl_thrift_reader_t *r, double *v)
{
    if (fl_thrift_reader_left(r) < 8) return FL_ERR_INVALID;
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u |= (uint64_t)r->p[i] << (8 * i);
    r->p += 8;
    memcpy(v, &u, 8);
    return FL_OK;
}

fl_err_t fl_thrift_read_binary(fl_thrift_reader_t *r, const uint8_t **p, size_t *n)
{
    uint64_t len;
    fl_err_t rc = fl_thrift_read_varint(r, &len);
    if (rc) return rc;
    if (len > fl_thrift_reader_left(r)) return FL_ERR_INVALID;
    *p = r->p;
    *n = (size_t)len;
    r->p += len;
    return FL_OK;
}

fl_err_t fl_thrift_read_bool(fl_thrift_reader_t *r, bool *v)
{
    if (r->has_bool) {
        r->has_bool = false;
        *v = r->bool_val;
        return FL_OK;
    }
    if (r->p >= r->end) return FL_ERR_INVALID;
    uint8_t b = *r->p++;
    if (b > 2) return FL_ERR_INVALID;
    *v = b == 1;  /* 1 true; 2 (and 0, from some writers) false */
    return FL_OK;
}

fl_err_t fl_thrift_read_struct_begin(fl_thrift_reader_t *r)
{
    if (r->depth >= FL_THRIFT_MAX_DEPTH) return FL_ERR_INVALID;
    r->last_id[r->depth++] = 0;
    r->has_bool = false;
    return FL_OK;
}

fl_err_t fl_thrift_read_struct_end(fl_thrift_reader_t *r)
{
    if (r->depth <= 0) return FL_ERR_INVALID;
    r->depth--;
    r->has_bool = false;
    return FL_OK;
}

fl_err_t fl_thrift_read_field(fl_thrift_reader_t *r, int *type, int16_t *id)
{
    if (r->depth <= 0) return FL_ERR_INVALID;
    if (r->p >= r->end) return FL_ERR_INVALID;
    r->has_bool = false;
    uint8_t b = *r->p++;
    int t = b & 0x0F, delta = b >> 4;
    if (t == FL_TC_STOP) {
        if (delta) return FL_ERR_INVALID;
        *type = FL_TC_STOP;
        *id = 0;
        return FL_OK;
    }
    if (t > FL_TC_STRUCT) return FL_ERR_INVALID;
    int16_t *last = &r->last_id[r->depth - 1];
    int16_t fid;
    if (delta) {
        int v = (int)*last + delta;
        if (v > INT16_MAX) return FL_ERR_INVALID;
        fid = (int16_t)v;
    } else {
        fl_err_t rc = fl_thrift_read_i16(r, &fid);
        if (rc) return rc;
    }
    *last = fid;
    if (t == 1 || t == 2) {
        r->has_bool = true;
        r->bool_val = t == 1;
        t = FL_TC_BOOL;
    }
    *type = t;
    *id = fid;
    return FL_OK;
}

static bool valid_elem(int t) { return t >= FL_TC_BOOL && t <= FL_TC_STRUCT; }

fl_err_t fl_thrift_read_list_begin(fl_thrift_reader_t *r, int *elem_type, uint32_t *n)
{
    if (r->p >= r->end) return FL_ERR_INVALID;
    uint8_t b = *r->p++;
    int t = b & 0x0F;
    uint64_t size = b >> 4;
    if (size == 15) {
        fl_err_t rc = fl_thrift_read_varint(r, &size);
        if (rc) return rc;
    }
    if (!valid_elem(t)) return FL_ERR_INVALID;
    /* Every element takes at least one byte on the wire. */
    if (size > fl_thrift_reader_left(r) || size > UINT32_MAX) return FL_ERR_INVALID;
    *elem_type = t == FL_TC_FALSE ? FL_TC_BOOL : t;
    *n = (uint32_t)size;
    r->has_bool = false;
    return FL_OK;
}

fl_err_t fl_thrift_read_map_begin(fl_thrift_reader_t *r, int *key_type, int *val_type, uint32_t *n)
{
    uint64_t size;
    fl_err_t rc = fl_thrift_read_varint(r, &size);
    if (rc) return rc;
    *key_type = *val_type = 0;
    *n = 0;
    r->has_bool = false;
    if (size == 0) return FL_OK;
    if (r->p >= r->end) return FL_ERR_INVALID;
    uint8_t b = *r->p++;
    int k = b >> 4, v = b & 0x0F;
    if (!valid_elem(k) || !valid_elem(v)) return FL_ERR_INVALID;
    /* Each entry takes at least two bytes. */
    if (size > fl_thrift_reader_left(r) / 2) return FL_ERR_INVALID;
    *key_type = k == FL_TC_FALSE ? FL_TC_BOOL : k;
    *val_type = v == FL_TC_FALSE ? FL_TC_BOOL : v;
    *n = (uint32_t)size;
    return FL_OK;
}

static fl_err_t skip(fl_thrift_reader_t *r, int type, int depth)
{
    fl_err_t rc = FL_OK;
    uint64_t u;
    const uint8_t *p;
    size_t n;
    uint32_t cnt;
    int et, kt, vt;

    if (depth >= FL_THRIFT_MAX_DEPTH) return FL_ERR_INVALID;
    switch (type) {
    case FL_TC_BOOL:
    case FL_TC_FALSE: {
        bool b;
        return fl_thrift_read_bool(r, &b);
    }
    case FL_TC_BYTE:
        if (r->p >= r->end) return FL_ERR_INVALID;
        r->p++;
        return FL_OK;
    case FL_TC_I16:
    case FL_TC_I32:
    case FL_TC_I64:
        return fl_thrift_read_varint(r, &u);
    case FL_TC_DOUBLE:
        if (fl_thrift_reader_left(r) < 8) return FL_ERR_INVALID;
        r->p += 8;
        return FL_OK;
    case FL_TC_BINARY:
        return fl_thrift_read_binary(r, &p, &n);
    case FL_TC_LIST:
    case FL_TC_SET:
        if ((rc = fl_thrift_read_list_begin(r, &et, &cnt))) return rc;
        for (uint32_t i = 0; i < cnt; i++)
            if ((rc = skip(r, et, depth + 1))) return rc;
        return FL_OK;
    case FL_TC_MAP:
        if ((rc = fl_thrift_read_map_begin(r, &kt, &vt, &cnt))) return rc;
        for (uint32_t i = 0; i < cnt; i++) {
            if ((rc = skip(r, kt, depth + 1))) return rc;
            if ((rc = skip(r, vt, depth + 1))) return rc;
        }
        return FL_OK;
    case FL_TC_STRUCT: {
        int16_t id;
        if ((rc = fl_thrift_read_struct_begin(r))) return rc;
        for (;;) {
            if ((rc = fl_thrift_read_field(r, &et, &id))) return rc;
            if (et == FL_TC_STOP) break;
            if ((rc = skip(r, et, depth + 1))) return rc;
        }
        return fl_thrift_read_struct_end(r);
    }
    default:
        return FL_ERR_INVALID;
    }
}

fl_err_t fl_thrift_skip(fl_thrift_reader_t *r, int type)
{
    return skip(r, type, r->depth);
}
