/* Parquet writer (see parquet.h).
 *
 * Layout: one leaf_t per primitive column. fl_pq_writer_write() walks the
 * batch a slice of rows at a time; for every leaf it computes the Dremel
 * definition/repetition levels (a flat loop when the leaf is under no list or
 * map, a recursive walk otherwise) and feeds each non-null value to the leaf's
 * current page: a dictionary index (hash table over the chunk's dictionary)
 * or a PLAIN value once the dictionary has passed dict_page_bytes. Pages are
 * cut at row starts once their estimated size reaches page_bytes, encoded
 * (levels and indices in the RLE/bit-packed hybrid), compressed and appended,
 * header first, to the leaf's chunk buffer. When the buffered chunks reach
 * row_group_bytes the row group goes out through the sink: per column the
 * dictionary page, then the data pages. Statistics are kept per chunk (for
 * the footer) and per file (for Iceberg metrics). */
#include "format/parquet.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/mem.h"
#include "format/parquet_meta.h"
#include "format/parquet_write_int.h"

#define MAX_DEPTH 64           /* nodes on the path from a top-level column to a leaf */
#define SLICE_ROWS 4096        /* rows shredded between row-group size checks */
#define DICT_PROBE 4096        /* values after which a chunk's dictionary must pay off (Java checks at its first page) */
#define MAX_STAT_BYTES 4096    /* longer byte-array min/max are left out of the footer */
#define HDR_GAP 64             /* room left before a page body for its header */

/* statistics categories */
enum { ST_BOOL, ST_INT, ST_FLT, ST_DEC, ST_BYTES };
/* how a value becomes its physical form */
enum { PV_BOOL, PV_I32, PV_I64, PV_F32, PV_F64, PV_DEC32, PV_DEC64, PV_DECFL, PV_FIXED, PV_BYTES };

typedef struct stats {
    bool has;                  /* some non-null, non-NaN value seen */
    int64_t imin, imax;        /* ST_BOOL, ST_INT */
    double dmin, dmax;         /* ST_FLT */
    __int128 xmin, xmax;       /* ST_DEC */
    fl_buf_t bmin, bmax;       /* ST_BYTES */
} stats_t;

/* A dictionary hash table slot: the value inline when it fits in 8 bytes, the
 * (offset << 32 | length) of its bytes in the dictionary for BYTE_ARRAY, so a
 * lookup touches one slot and at most one dictionary position. */
typedef struct dslot {
    uint32_t h, idx1;          /* 32-bit hash; dictionary index + 1 */
    uint64_t val;
} dslot_t;

/* A byte-array dictionary slot: values of up to 16 bytes are kept inline
 * (a, b: the two overlapping loads of bkey), so a hit reads no dictionary
 * bytes; longer ones are compared at their dictionary offset. */
typedef struct bslot {
    uint32_t h, idx1;          /* as dslot_t */
    uint32_t off, len;         /* value bytes in the dictionary */
    uint64_t a, b;
} bslot_t;                     /* 32 bytes, tables cache-line aligned: one line per slot */

typedef struct leaf {
    const fl_field_t *field;
    int depth;
    const fl_field_t **nodes;  /* [depth] fields on the path, top-level column first */
    uint32_t *cidx;            /* [depth] index of nodes[d] among its parent's children */
    uint8_t *rep_at;           /* [depth] repetition level of a list/map's entries */
    const fl_vec_t **vecs;     /* [depth] the current batch's vectors */
    int max_def, max_rep, def_bits, rep_bits;
    bool in_list;
    bool list_fast;            /* element of a top-level list: list_levels */
    int pv, st, ptype;
    int32_t type_len;
    size_t width;              /* physical fixed width (0 for BYTE_ARRAY; 1 for boolean) */
    fl_pq_bin_t *path;
    uint32_t n_path;

    /* current page */
    uint8_t *def, *rep;
    size_t n_lev, cap_lev;
    bool lev_full;             /* every definition level of the page is max_def */
    uint32_t *idx;
    size_t n_idx, cap_idx;
    uint32_t *sel;             /* leaf-vector positions of the present values of a block */
    size_t n_sel, cap_sel;
    fl_buf_t plain;

    /* dictionary of the chunk */
    bool dict_on;
    bool dict_probed;          /* the chunk's dictionary passed its usefulness check */
    size_t dict_vals, dict_plain; /* values looked up, and their PLAIN size */
    fl_buf_t dict;             /* PLAIN-encoded values */
    uint32_t n_dict;
    struct dslot *slots;       /* open addressing, linear probing; idx1 == 0: empty */
    struct bslot *bslots;      /* the same for BYTE_ARRAY columns (slots is then NULL) */
    size_t n_slots;

    /* chunk */
    fl_buf_t pages;            /* page bodies, each after a HDR_GAP gap that ends with its header */
    struct seg { size_t off, len; } *segs; /* [n_segs] header + body of each page in pages */
    size_t n_segs, cap_segs;
    int64_t c_values, c_nulls, c_nans, c_uncomp;
    bool c_plain, c_dict;      /* encodings of data pages */
    stats_t cs;

    /* file */
    stats_t fs;
    int64_t f_values, f_nulls, f_nans, f_size;
} leaf_t;

struct fl_pq_writer {
    const fl_field_t *schema;
    fl_pq_write_opts_t o;
    fl_pq_sink_t sink;
    char *created_by;
    fl_pq_kv_t *kv;
    uint32_t n_kv;
    int64_t pos;
    leaf_t *leaves;
    size_t n_leaves;
    fl_pq_schema_elem_t *se;
    size_t n_se, cap_se;
    fl_pq_row_group_t *rgs;
    size_t n_rgs, cap_rgs;
    int64_t rows, rg_rows;
    fl_buf_t raw, comp, hdr;
    fl_err_t err;
    bool closed;
};

/* ---------------- small helpers ---------------- */

static int bit_width(uint64_t v)
{
    return v ? 64 - __builtin_clzll(v) : 0;
}

static inline void put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}

static inline uint64_t rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static inline uint64_t mum(uint64_t a, uint64_t b)
{
    unsigned __int128 r = (unsigned __int128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t hash_bytes(const unsigned char *p, size_t n)
{
    const uint64_t k1 = 0xa0761d6478bd642full, k2 = 0xe7037ed1a0b428dbull,
                   k3 = 0x8ebc6af09c88c6e3ull;
    uint64_t h = 0x243f6a8885a308d3ull ^ (n * k3), a, b;
    if (n <= 16) { /* two (overlapping) loads, no loop */
        if (n >= 8) { a = rd64(p); b = rd64(p + n - 8); }
        else if (n >= 4) {
            uint32_t x, y;
            memcpy(&x, p, 4); memcpy(&y, p + n - 4, 4);
            a = x; b = y;
        } else if (n) { a = (uint64_t)p[0] << 16 | (uint64_t)p[n >> 1] << 8 | p[n - 1]; b = 0; }
        else a = b = 0;
        return mum(mum(a ^ k1, b ^ h), k2);
    }
    while (n > 16) {
        h = mum(rd64(p) ^ k1, rd64(p + 8) ^ h);
        p += 16;
        n -= 16;
    }
    p += n;
    return mum(mum(rd64(p - 16) ^ k3, rd64(p - 8) ^ h), k2);
}

static inline uint32_t hash32(const unsigned char *p, size_t n)
{
    uint64_t h;
    if (n == 4) {
        uint32_t v; memcpy(&v, p, 4);
        h = mum(v ^ 0xa0761d6478bd642full, 0xe7037ed1a0b428dbull);
    } else if (n == 8) {
        h = mum(rd64(p) ^ 0xa0761d6478bd642full, 0xe7037ed1a0b428dbull);
    } else {
        h = hash_bytes(p, n);
    }
    return (uint32_t)(h ^ (h >> 32));
}

/* ---------------- RLE / bit-packed hybrid ---------------- */

static inline unsigned char *put_uvarint(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) { *p++ = (unsigned char)(v | 0x80); v >>= 7; }
    *p++ = (unsigned char)v;
    return p;
}

/* End of the run of x in v[j..n). */
static inline size_t run_end8(const uint8_t *v, size_t j, size_t n, uint8_t x)
{
    uint64_t xx = x * 0x0101010101010101ull;
    while (j + 8 <= n && rd64(v + j) == xx) j += 8;
    while (j < n && v[j] == x) j++;
    return j;
}

static inline size_t run_end32(const uint32_t *v, size_t j, size_t n, uint32_t x)
{
    while (j < n && v[j] == x) j++;
    return j;
}

#define RLE_ENCODER(NAME, T, RUN_END)                                                        \
static unsigned char *NAME##_pack(unsigned char *p, const T *v, size_t cnt, int bw) \
{                                                                                   \
    size_t groups = (cnt + 7) / 8;                                                  \
    p = put_uvarint(p, (uint64_t)groups << 1 | 1);                                  \
    for (size_t g = 0; g < groups; g++) {                                           \
        T tmp[8];                                                                   \
        const T *src = v + g * 8;                                                   \
        if (g * 8 + 8 > cnt) {                                                      \
            memset(tmp, 0, sizeof tmp);                                             \
            memcpy(tmp, src, (cnt - g * 8) * sizeof(T));                            \
            src = tmp;                                                              \
        }                                                                           \
        uint64_t acc = 0;                                                           \
        int bits = 0;                                                               \
        if (bw <= 8) { /* the group fits one word: bw bytes */                      \
            for (int k = 0; k < 8; k++) acc |= (uint64_t)src[k] << (k * bw);        \
            memcpy(p, &acc, 8); /* within rle_bound's slack */                      \
            p += bw;                                                                \
            continue;                                                               \
        }                                                                           \
        for (int k = 0; k < 8; k++) {                                               \
            acc |= (uint64_t)src[k] << bits;                                        \
            bits += bw;                                                             \
            if (bits >= 32) { put_le32(p, (uint32_t)acc); p += 4; acc >>= 32; bits -= 32; } \
        }                                                                           \
        while (bits > 0) { *p++ = (unsigned char)acc; acc >>= 8; bits -= 8; }      \
    }                                                                               \
    return p;                                                                       \
}                                                                                   \
static unsigned char *NAME(unsigned char *p, const T *v, size_t n, int bw)          \
{                                                                                   \
    size_t vb = ((size_t)bw + 7) / 8, lit = 0, i = 0;                               \
    while (i < n) {                                                                 \
        T x = v[i];                                                                 \
        size_t j = RUN_END(v, i + 1, n, x);                                         \
        size_t run = j - i;                                                         \
        if (run >= 8) {                                                             \
            size_t pend = i - lit, pad = (8 - (pend & 7)) & 7;                      \
            if (run - pad >= 8) {                                                   \
                if (pend + pad) p = NAME##_pack(p, v + lit, pend + pad, bw);        \
                p = put_uvarint(p, (uint64_t)(run - pad) << 1);                     \
                for (size_t b = 0; b < vb; b++) *p++ = (unsigned char)((uint64_t)x >> (8 * b)); \
                lit = j;                                                            \
            }                                                                       \
        }                                                                           \
        i = j;                                                                      \
    }                                                                               \
    if (lit < n) p = NAME##_pack(p, v + lit, n - lit, bw);                          \
    return p;                                                                       \
}

RLE_ENCODER(rle8, uint8_t, run_end8)
RLE_ENCODER(rle32, uint32_t, run_end32)

static size_t rle_bound(size_t n, int bw)
{
    return (n / 8 + 2) * ((size_t)bw + 16) + 16;
}

fl_err_t fl_pqw_rle_encode(fl_buf_t *out, const uint32_t *v, size_t n, int bw)
{
    if (bw < 0 || bw > 32) return FL_ERR_INVALID;
    fl_err_t e = fl_buf_reserve(out, rle_bound(n, bw));
    if (e) return e;
    unsigned char *p = rle32((unsigned char *)out->ptr + out->len, v, n, bw);
    out->len = (size_t)(p - (unsigned char *)out->ptr);
    out->ptr[out->len] = 0;
    return FL_OK;
}

/* Levels of a v1 data page: 4-byte length, then the hybrid encoding. */
static fl_err_t put_levels(fl_buf_t *out, const uint8_t *v, size_t n, int bw)
{
    fl_err_t e = fl_buf_reserve(out, rle_bound(n, bw) + 4);
    if (e) return e;
    unsigned char *start = (unsigned char *)out->ptr + out->len;
    unsigned char *p = rle8(start + 4, v, n, bw);
    put_le32(start, (uint32_t)(p - start - 4));
    out->len += (size_t)(p - start);
    return FL_OK;
}

/* Levels of a v1 data page that are all x (n >= 8): one RLE run, the bytes
 * put_levels would write for them. */
static fl_err_t put_level_run(fl_buf_t *out, size_t n, uint8_t x, int bw)
{
    fl_err_t e = fl_buf_reserve(out, 4 + 10 + 4);
    if (e) return e;
    unsigned char *start = (unsigned char *)out->ptr + out->len;
    unsigned char *p = put_uvarint(start + 4, (uint64_t)n << 1);
    for (int b = 0; b < (bw + 7) / 8; b++) *p++ = b ? 0 : x;
    put_le32(start, (uint32_t)(p - start - 4));
    out->len += (size_t)(p - start);
    return FL_OK;
}

/* ---------------- bounds ---------------- */

size_t fl_pqw_decimal_be(__int128 x, unsigned char out[16])
{
    unsigned char be[16];
    unsigned __int128 u = (unsigned __int128)x;
    for (int i = 15; i >= 0; i--) { be[i] = (unsigned char)u; u >>= 8; }
    int s = 0;
    while (s < 15 && ((be[s] == 0x00 && !(be[s + 1] & 0x80)) || (be[s] == 0xff && (be[s + 1] & 0x80))))
        s++;
    memcpy(out, be + s, (size_t)(16 - s));
    return (size_t)(16 - s);
}

/* Byte length of the UTF-8 sequence led by c (1 for stray bytes). */
static size_t u8len(unsigned char c)
{
    if (c >= 0xf0 && c < 0xf8) return 4;
    if (c >= 0xe0) return c < 0xf0 ? 3 : 1;
    if (c >= 0xc0) return 2;
    return 1;
}

/* Bytes of the first len code points of p[0..n) (all of it when shorter). */
static size_t u8prefix(const unsigned char *p, size_t n, int len, size_t *cps)
{
    size_t off = 0, k = 0;
    while (off < n && (int)k < len) {
        size_t l = u8len(p[off]);
        off += l > n - off ? n - off : l;
        k++;
    }
    if (cps) *cps = k;
    return off;
}

static size_t u8put(unsigned char *o, uint32_t cp)
{
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) { o[0] = (unsigned char)(0xc0 | cp >> 6); o[1] = (unsigned char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xe0 | cp >> 12); o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (unsigned char)(0xf0 | cp >> 18); o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f)); o[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

static uint32_t u8get(const unsigned char *p, size_t l)
{
    switch (l) {
    case 2: return (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
    case 3: return (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
    case 4: return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 |
                   (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
    default: return p[0];
    }
}

fl_err_t fl_pq_trunc_lower(bool is_string, const void *pv, size_t n, int len, fl_buf_t *out)
{
    const unsigned char *p = pv;
    size_t keep = n;
    if (len >= 0) keep = is_string ? u8prefix(p, n, len, NULL) : (n < (size_t)len ? n : (size_t)len);
    fl_buf_reset(out);
    return fl_buf_add(out, p, keep);
}

bool fl_pq_trunc_upper(bool is_string, const void *pv, size_t n, int len, fl_buf_t *out)
{
    const unsigned char *p = pv;
    if (len < 0) { fl_buf_reset(out); return fl_buf_add(out, p, n) == FL_OK; }
    if (!is_string) {
        if (n <= (size_t)len) { fl_buf_reset(out); return fl_buf_add(out, p, n) == FL_OK; }
        for (size_t k = (size_t)len; k > 0; k--) {
            if (p[k - 1] != 0xff) {
                fl_buf_reset(out);
                if (fl_buf_add(out, p, k)) return false;
                out->ptr[k - 1] = (char)(p[k - 1] + 1);
                return true;
            }
        }
        return false;
    }
    size_t cps;
    size_t keep = u8prefix(p, n, len, &cps);
    if (keep == n) { fl_buf_reset(out); return fl_buf_add(out, p, n) == FL_OK; }
    /* starts of the kept code points */
    size_t *starts = fl_malloc((cps ? cps : 1) * sizeof *starts);
    for (size_t off = 0, k = 0; k < cps; k++) {
        starts[k] = off;
        size_t l = u8len(p[off]);
        off += l > keep - off ? keep - off : l;
    }
    bool ok = false;
    for (size_t k = cps; k > 0; k--) {
        size_t s = starts[k - 1], e = k < cps ? starts[k] : keep;
        uint32_t cp = u8get(p + s, e - s);
        if (cp == 0x10ffff) continue;
        cp = cp == 0xd7ff ? 0xe000 : cp + 1;
        unsigned char enc[4];
        size_t el = u8put(enc, cp);
        fl_buf_reset(out);
        ok = !fl_buf_add(out, p, s) && !fl_buf_add(out, enc, el);
        break;
    }
    free(starts);
    return ok;
}

/* ---------------- statistics ---------------- */

static void stats_reset(stats_t *s)
{
    s->has = false;
    fl_buf_reset(&s->bmin);
    fl_buf_reset(&s->bmax);
}

static void stats_free(stats_t *s)
{
    fl_buf_free(&s->bmin);
    fl_buf_free(&s->bmax);
}

/* a < b with -0.0 < +0.0 (neither is NaN) */
static inline bool flt_lt(double a, double b)
{
    return a < b || (a == b && a == 0 && signbit(a) && !signbit(b));
}

static inline int bytes_cmp(const void *a, size_t an, const void *b, size_t bn)
{
    size_t m = an < bn ? an : bn;
    if (m >= 8) { /* most orders are decided by the first 8 bytes */
        uint64_t x = __builtin_bswap64(rd64(a)), y = __builtin_bswap64(rd64(b));
        if (x != y) return x < y ? -1 : 1;
    }
    int c = m ? memcmp(a, b, m) : 0;
    return c ? c : (an < bn ? -1 : an > bn);
}

static inline uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* a[0..n) == b[0..n), without a call for short values */
static inline bool bytes_eq(const unsigned char *a, const unsigned char *b, size_t n)
{
    if (n >= 8) {
        if (n <= 16) return !((rd64(a) ^ rd64(b)) | (rd64(a + n - 8) ^ rd64(b + n - 8)));
        return !memcmp(a, b, n);
    }
    if (n >= 4) return !((rd32(a) ^ rd32(b)) | (rd32(a + n - 4) ^ rd32(b + n - 4)));
    for (size_t k = 0; k < n; k++)
        if (a[k] != b[k]) return false;
    return true;
}

static inline void buf_set(fl_buf_t *b, const void *p, size_t n)
{
    fl_buf_reset(b);
    if (fl_buf_add(b, p, n)) abort(); /* uncapped buffer: only allocation failure */
}

static inline void stat_int(stats_t *s, int64_t v)
{
    if (!s->has) { s->has = true; s->imin = s->imax = v; return; }
    if (v < s->imin) s->imin = v;
    if (v > s->imax) s->imax = v;
}

static inline void stat_flt(stats_t *s, double v)
{
    if (isnan(v)) return;
    if (!s->has) { s->has = true; s->dmin = s->dmax = v; return; }
    if (flt_lt(v, s->dmin)) s->dmin = v;
    if (flt_lt(s->dmax, v)) s->dmax = v;
}

static inline void stat_dec(stats_t *s, __int128 v)
{
    if (!s->has) { s->has = true; s->xmin = s->xmax = v; return; }
    if (v < s->xmin) s->xmin = v;
    if (v > s->xmax) s->xmax = v;
}

static inline void stat_bytes(stats_t *s, const void *p, size_t n)
{
    if (!s->has) {
        s->has = true;
        buf_set(&s->bmin, p, n);
        buf_set(&s->bmax, p, n);
        return;
    }
    if (bytes_cmp(p, n, s->bmin.ptr, s->bmin.len) < 0) buf_set(&s->bmin, p, n);
    if (bytes_cmp(p, n, s->bmax.ptr, s->bmax.len) > 0) buf_set(&s->bmax, p, n);
}

static void stats_merge(stats_t *d, const stats_t *s, int st)
{
    if (!s->has) return;
    switch (st) {
    case ST_BOOL: case ST_INT: stat_int(d, s->imin); stat_int(d, s->imax); break;
    case ST_FLT: stat_flt(d, s->dmin); stat_flt(d, s->dmax); break;
    case ST_DEC: stat_dec(d, s->xmin); stat_dec(d, s->xmax); break;
    default:
        stat_bytes(d, s->bmin.ptr, s->bmin.len);
        stat_bytes(d, s->bmax.ptr, s->bmax.len);
        break;
    }
}

/* Update s with one physical value p[0..n) (x: a decimal's unscaled value). */
static inline void stats_update(const leaf_t *L, stats_t *s, const unsigned char *p, size_t n, __int128 x)
{
    switch (L->st) {
    case ST_BOOL: stat_int(s, p[0]); break;
    case ST_INT:
        if (n == 4) { int32_t v; memcpy(&v, p, 4); stat_int(s, v); }
        else { int64_t v; memcpy(&v, p, 8); stat_int(s, v); }
        break;
    case ST_FLT:
        if (n == 4) { float v; memcpy(&v, p, 4); stat_flt(s, v); }
        else { double v; memcpy(&v, p, 8); stat_flt(s, v); }
        break;
    case ST_DEC: stat_dec(s, x); break;
    default: stat_bytes(s, p, n); break;
    }
}

/* PLAIN encoding (no length prefix) of a chunk statistic, for the footer. */
static char *stat_plain(const leaf_t *L, const stats_t *s, bool is_max, size_t *len)
{
    unsigned char b[16];
    const void *src = b;
    size_t n;
    switch (L->st) {
    case ST_BOOL: b[0] = (unsigned char)(is_max ? s->imax : s->imin); n = 1; break;
    case ST_INT: {
        int64_t v = is_max ? s->imax : s->imin;
        if (L->ptype == FL_PQ_INT32) { int32_t w = (int32_t)v; memcpy(b, &w, 4); n = 4; }
        else { memcpy(b, &v, 8); n = 8; }
        break;
    }
    case ST_FLT: {
        double v = is_max ? s->dmax : s->dmin;
        if (v == 0) v = is_max ? 0.0 : -0.0; /* parquet-format: min -0.0, max +0.0 */
        if (L->ptype == FL_PQ_FLOAT) { float f = (float)v; memcpy(b, &f, 4); n = 4; }
        else { memcpy(b, &v, 8); n = 8; }
        break;
    }
    case ST_DEC: {
        __int128 x = is_max ? s->xmax : s->xmin;
        if (L->ptype == FL_PQ_INT32) { int32_t w = (int32_t)x; memcpy(b, &w, 4); n = 4; }
        else if (L->ptype == FL_PQ_INT64) { int64_t w = (int64_t)x; memcpy(b, &w, 8); n = 8; }
        else {
            unsigned __int128 u = (unsigned __int128)x;
            n = (size_t)L->type_len;
            for (size_t i = n; i > 0; i--) { b[i - 1] = (unsigned char)u; u >>= 8; }
        }
        break;
    }
    default: {
        const fl_buf_t *bb = is_max ? &s->bmax : &s->bmin;
        if (bb->len > MAX_STAT_BYTES) return NULL;
        src = bb->ptr ? bb->ptr : "";
        n = bb->len;
        break;
    }
    }
    char *out = fl_malloc(n + 1);
    if (n) memcpy(out, src, n);
    out[n] = 0;
    *len = n;
    return out;
}

/* ---------------- schema ---------------- */

typedef struct bctx {
    fl_pq_writer_t *w;
    const fl_field_t *nodes[MAX_DEPTH];
    uint32_t cidx[MAX_DEPTH];
    uint8_t rep_at[MAX_DEPTH];
    const char *names[MAX_DEPTH * 2];
    int depth, n_names;
} bctx_t;

static fl_pq_schema_elem_t *push_se(fl_pq_writer_t *w, const char *name)
{
    if (w->n_se == w->cap_se) {
        w->cap_se = w->cap_se ? w->cap_se * 2 : 16;
        w->se = fl_realloc(w->se, w->cap_se * sizeof *w->se);
    }
    fl_pq_schema_elem_t *e = &w->se[w->n_se++];
    memset(e, 0, sizeof *e);
    e->name.ptr = (char *)name;
    e->name.len = strlen(name);
    return e;
}

static int32_t decimal_bytes(int32_t precision)
{
    unsigned __int128 p10 = 1;
    for (int i = 0; i < precision; i++) p10 *= 10;
    for (int32_t n = 1; n < 16; n++)
        if (((unsigned __int128)1 << (8 * n - 1)) > p10 - 1) return n;
    return 16;
}

static fl_err_t set_leaf_type(fl_pq_schema_elem_t *e, leaf_t *L, const fl_field_t *f)
{
    e->has |= FL_PQ_SE_TYPE;
    L->st = ST_INT;
    switch (f->kind) {
    case FL_TYPE_BOOLEAN: e->type = FL_PQ_BOOLEAN; L->pv = PV_BOOL; L->st = ST_BOOL; L->width = 1; break;
    case FL_TYPE_INT: e->type = FL_PQ_INT32; L->pv = PV_I32; L->width = 4; break;
    case FL_TYPE_DATE:
        e->type = FL_PQ_INT32; L->pv = PV_I32; L->width = 4;
        e->has |= FL_PQ_SE_CONVERTED; e->converted_type = 6;
        e->logical.kind = FL_PQ_LT_DATE;
        break;
    case FL_TYPE_LONG: e->type = FL_PQ_INT64; L->pv = PV_I64; L->width = 8; break;
    case FL_TYPE_TIME:
    case FL_TYPE_TIMESTAMP:
    case FL_TYPE_TIMESTAMPTZ:
    case FL_TYPE_TIMESTAMP_NS:
    case FL_TYPE_TIMESTAMPTZ_NS: {
        e->type = FL_PQ_INT64; L->pv = PV_I64; L->width = 8;
        bool utc = f->kind == FL_TYPE_TIMESTAMPTZ || f->kind == FL_TYPE_TIMESTAMPTZ_NS;
        bool ns = f->kind == FL_TYPE_TIMESTAMP_NS || f->kind == FL_TYPE_TIMESTAMPTZ_NS;
        e->logical.kind = f->kind == FL_TYPE_TIME ? FL_PQ_LT_TIME : FL_PQ_LT_TIMESTAMP;
        e->logical.utc = utc;
        e->logical.unit = ns ? FL_PQ_UNIT_NANOS : FL_PQ_UNIT_MICROS;
        /* ConvertedType only where equivalent: the legacy types mean UTC-adjusted */
        if (f->kind == FL_TYPE_TIMESTAMPTZ) { e->has |= FL_PQ_SE_CONVERTED; e->converted_type = 10; }
        break;
    }
    case FL_TYPE_FLOAT: e->type = FL_PQ_FLOAT; L->pv = PV_F32; L->st = ST_FLT; L->width = 4; break;
    case FL_TYPE_DOUBLE: e->type = FL_PQ_DOUBLE; L->pv = PV_F64; L->st = ST_FLT; L->width = 8; break;
    case FL_TYPE_DECIMAL:
        if (f->precision < 1 || f->precision > 38 || f->scale < 0 || f->scale > f->precision)
            return FL_ERR_INVALID;
        L->st = ST_DEC;
        if (f->precision <= 9) { e->type = FL_PQ_INT32; L->pv = PV_DEC32; L->width = 4; }
        else if (f->precision <= 18) { e->type = FL_PQ_INT64; L->pv = PV_DEC64; L->width = 8; }
        else {
            e->type = FL_PQ_FIXED_LEN_BYTE_ARRAY; L->pv = PV_DECFL;
            e->type_length = decimal_bytes(f->precision);
            e->has |= FL_PQ_SE_TYPE_LENGTH;
            L->width = (size_t)e->type_length;
        }
        e->has |= FL_PQ_SE_CONVERTED | FL_PQ_SE_SCALE | FL_PQ_SE_PRECISION;
        e->converted_type = 5;
        e->scale = f->scale;
        e->precision = f->precision;
        e->logical.kind = FL_PQ_LT_DECIMAL;
        e->logical.scale = f->scale;
        e->logical.precision = f->precision;
        break;
    case FL_TYPE_STRING:
        e->type = FL_PQ_BYTE_ARRAY; L->pv = PV_BYTES; L->st = ST_BYTES;
        e->has |= FL_PQ_SE_CONVERTED; e->converted_type = 0;
        e->logical.kind = FL_PQ_LT_STRING;
        break;
    case FL_TYPE_BINARY: e->type = FL_PQ_BYTE_ARRAY; L->pv = PV_BYTES; L->st = ST_BYTES; break;
    case FL_TYPE_UUID:
        e->type = FL_PQ_FIXED_LEN_BYTE_ARRAY; e->type_length = 16; e->has |= FL_PQ_SE_TYPE_LENGTH;
        L->pv = PV_FIXED; L->st = ST_BYTES; L->width = 16;
        e->logical.kind = FL_PQ_LT_UUID;
        break;
    case FL_TYPE_FIXED:
        if (f->length <= 0) return FL_ERR_INVALID;
        e->type = FL_PQ_FIXED_LEN_BYTE_ARRAY; e->type_length = f->length; e->has |= FL_PQ_SE_TYPE_LENGTH;
        L->pv = PV_FIXED; L->st = ST_BYTES; L->width = (size_t)f->length;
        break;
    default:
        return FL_ERR_INVALID;
    }
    L->ptype = e->type;
    L->type_len = e->type_length;
    return FL_OK;
}

static fl_err_t add_field(bctx_t *c, const fl_field_t *f, const char *name, uint32_t ci,
                          int def, int rep, bool in_list)
{
    fl_pq_writer_t *w = c->w;
    fl_err_t e = FL_OK;
    if (c->depth >= MAX_DEPTH) return FL_ERR_TOO_LARGE;
    int d = c->depth++;
    c->nodes[d] = f;
    c->cidx[d] = ci;
    c->rep_at[d] = 0;
    c->names[c->n_names++] = name;
    fl_pq_schema_elem_t *se = push_se(w, name);
    se->has |= FL_PQ_SE_REPETITION;
    se->repetition_type = f->required ? FL_PQ_REQUIRED : FL_PQ_OPTIONAL;
    if (f->id >= 0) { se->has |= FL_PQ_SE_FIELD_ID; se->field_id = f->id; }
    if (!f->required) def++;
    switch (f->kind) {
    case FL_TYPE_STRUCT:
        if (!f->n_children) { e = FL_ERR_INVALID; break; }
        se->has |= FL_PQ_SE_NUM_CHILDREN;
        se->num_children = (int32_t)f->n_children;
        for (uint32_t i = 0; i < f->n_children && !e; i++)
            e = add_field(c, &f->children[i], f->children[i].name ? f->children[i].name : "", i,
                          def, rep, in_list);
        break;
    case FL_TYPE_LIST:
    case FL_TYPE_MAP: {
        bool map = f->kind == FL_TYPE_MAP;
        if (f->n_children != (map ? 2u : 1u) || (map && !f->children[0].required)) {
            e = FL_ERR_INVALID;
            break;
        }
        se->has |= FL_PQ_SE_NUM_CHILDREN | FL_PQ_SE_CONVERTED;
        se->num_children = 1;
        se->converted_type = map ? 1 : 3;
        se->logical.kind = map ? FL_PQ_LT_MAP : FL_PQ_LT_LIST;
        const char *mid = map ? "key_value" : "list";
        fl_pq_schema_elem_t *g = push_se(w, mid);
        g->has |= FL_PQ_SE_REPETITION | FL_PQ_SE_NUM_CHILDREN;
        g->repetition_type = FL_PQ_REPEATED;
        g->num_children = (int32_t)f->n_children;
        c->names[c->n_names++] = mid;
        c->rep_at[d] = (uint8_t)(rep + 1);
        if (map) {
            e = add_field(c, &f->children[0], "key", 0, def + 1, rep + 1, true);
            if (!e) e = add_field(c, &f->children[1], "value", 1, def + 1, rep + 1, true);
        } else {
            e = add_field(c, &f->children[0], "element", 0, def + 1, rep + 1, true);
        }
        c->n_names--;
        break;
    }
    default: {
        if (w->n_leaves % 16 == 0)
            w->leaves = fl_realloc(w->leaves, (w->n_leaves + 16) * sizeof *w->leaves);
        leaf_t *L = &w->leaves[w->n_leaves++];
        memset(L, 0, sizeof *L);
        L->field = f;
        L->depth = c->depth;
        L->nodes = fl_malloc((size_t)c->depth * sizeof *L->nodes);
        L->cidx = fl_malloc((size_t)c->depth * sizeof *L->cidx);
        L->rep_at = fl_malloc((size_t)c->depth);
        L->vecs = fl_calloc((size_t)c->depth, sizeof *L->vecs);
        memcpy(L->nodes, c->nodes, (size_t)c->depth * sizeof *L->nodes);
        memcpy(L->cidx, c->cidx, (size_t)c->depth * sizeof *L->cidx);
        memcpy(L->rep_at, c->rep_at, (size_t)c->depth);
        L->max_def = def;
        L->max_rep = rep;
        if (def > 255 || rep > 255) { e = FL_ERR_TOO_LARGE; break; }
        L->def_bits = bit_width((uint64_t)def);
        L->rep_bits = bit_width((uint64_t)rep);
        L->in_list = in_list;
        L->list_fast = c->depth == 2 && c->nodes[0]->kind == FL_TYPE_LIST;
        L->lev_full = true;
        L->n_path = (uint32_t)c->n_names;
        L->path = fl_calloc((size_t)c->n_names, sizeof *L->path);
        for (int i = 0; i < c->n_names; i++) {
            L->path[i].ptr = (char *)c->names[i];
            L->path[i].len = strlen(c->names[i]);
        }
        fl_buf_init(&L->plain, 0);
        fl_buf_init(&L->dict, 0);
        fl_buf_init(&L->pages, 0);
        L->dict_on = w->o.dictionary && f->kind != FL_TYPE_BOOLEAN;
        e = set_leaf_type(se, L, f);
        break;
    }
    }
    c->depth--;
    c->n_names--;
    return e;
}

/* ---------------- output ---------------- */

static fl_err_t out(fl_pq_writer_t *w, const void *p, size_t n)
{
    if (!n) return FL_OK;
    fl_err_t e = w->sink.write(w->sink.ctx, p, n);
    if (!e) w->pos += (int64_t)n;
    return e;
}

/* Compress raw into w->comp (or point at raw for no codec); *data, *len get the page body. */
static fl_err_t compress(fl_pq_writer_t *w, const fl_buf_t *raw, const char **data, size_t *len)
{
    if (w->o.codec == FL_CODEC_NONE) {
        *data = raw->ptr ? raw->ptr : "";
        *len = raw->len;
        return FL_OK;
    }
    fl_buf_reset(&w->comp);
    fl_err_t e = fl_codec_compress(w->o.codec, w->o.level, raw->ptr ? raw->ptr : "", raw->len, &w->comp);
    *data = w->comp.ptr;
    *len = w->comp.len;
    return e;
}

static size_t page_est(const leaf_t *L)
{
    size_t lev = L->n_lev * (size_t)(L->def_bits + L->rep_bits) / 8;
    size_t val;
    if (L->dict_on) val = L->n_idx * (size_t)(bit_width(L->n_dict) + 1) / 8;
    else if (L->pv == PV_BOOL) val = L->plain.len / 8;
    else val = L->plain.len;
    return lev + val;
}

static fl_err_t flush_page(fl_pq_writer_t *w, leaf_t *L)
{
    if (!L->n_lev) return FL_OK;
    /* The page body is built in w->raw and compressed straight into L->pages
     * after a gap, or, without a codec, built in L->pages itself; the header,
     * encoded once the sizes are known, goes at the end of the gap. */
    fl_buf_t *pages = &L->pages;
    bool direct = w->o.codec == FL_CODEC_NONE;
    size_t base = pages->len;
    fl_err_t e = fl_buf_reserve(pages, HDR_GAP);
    if (e) return e;
    pages->len += HDR_GAP;
    fl_buf_t *raw = direct ? pages : &w->raw;
    if (!direct) fl_buf_reset(raw);
    size_t raw0 = raw->len;
    if (L->max_rep) e = put_levels(raw, L->rep, L->n_lev, L->rep_bits);
    if (!e && L->max_def)
        e = L->lev_full && L->n_lev >= 8 ? put_level_run(raw, L->n_lev, (uint8_t)L->max_def, L->def_bits)
                                         : put_levels(raw, L->def, L->n_lev, L->def_bits);
    int enc = FL_PQ_ENC_PLAIN;
    if (e) return e;
    if (L->dict_on && L->n_idx) {
        int bw = bit_width(L->n_dict - 1);
        if (bw < 1) bw = 1;
        enc = FL_PQ_ENC_RLE_DICTIONARY;
        if ((e = fl_buf_addc(raw, (char)bw))) return e;
        if ((e = fl_pqw_rle_encode(raw, L->idx, L->n_idx, bw))) return e;
        L->c_dict = true;
    } else if (L->pv == PV_BOOL) {
        size_t n = L->plain.len, nb = (n + 7) / 8;
        if ((e = fl_buf_reserve(raw, nb))) return e;
        unsigned char *o = (unsigned char *)raw->ptr + raw->len;
        const unsigned char *s = (const unsigned char *)L->plain.ptr;
        memset(o, 0, nb);
        for (size_t i = 0; i < n; i++) o[i >> 3] |= (unsigned char)((s[i] & 1) << (i & 7));
        raw->len += nb;
        L->c_plain = true;
    } else {
        if (L->plain.len && (e = fl_buf_add(raw, L->plain.ptr, L->plain.len))) return e;
        L->c_plain = true;
    }
    size_t rlen = raw->len - raw0;
    if (!direct && (e = fl_codec_compress(w->o.codec, w->o.level, raw->ptr ? raw->ptr : "", rlen, pages)))
        return e;
    size_t body = base + HDR_GAP, dlen = pages->len - body;
    if (rlen > INT32_MAX || dlen > INT32_MAX || L->n_lev > INT32_MAX) return FL_ERR_TOO_LARGE;
    fl_pq_page_header_t h;
    memset(&h, 0, sizeof h);
    h.type = FL_PQ_DATA_PAGE;
    h.uncompressed_page_size = (int32_t)rlen;
    h.compressed_page_size = (int32_t)dlen;
    h.has_data_page = true;
    h.data_page.num_values = (int32_t)L->n_lev;
    h.data_page.encoding = enc;
    h.data_page.definition_level_encoding = FL_PQ_ENC_RLE;
    h.data_page.repetition_level_encoding = FL_PQ_ENC_RLE;
    fl_buf_reset(&w->hdr);
    if ((e = fl_pq_page_header_encode(&h, &w->hdr))) return e;
    size_t hl = w->hdr.len;
    if (hl > HDR_GAP) { /* not for any header this writer makes; kept correct anyway */
        if ((e = fl_buf_reserve(pages, hl - HDR_GAP))) return e;
        memmove(pages->ptr + base + hl, pages->ptr + body, dlen);
        pages->len += hl - HDR_GAP;
        body = base + hl;
    }
    memcpy(pages->ptr + body - hl, w->hdr.ptr, hl);
    if (L->n_segs == L->cap_segs) {
        L->cap_segs = L->cap_segs ? L->cap_segs * 2 : 16;
        L->segs = fl_realloc(L->segs, L->cap_segs * sizeof *L->segs);
    }
    L->segs[L->n_segs].off = body - hl;
    L->segs[L->n_segs].len = hl + dlen;
    L->n_segs++;
    L->c_uncomp += (int64_t)(hl + rlen);
    L->c_values += (int64_t)L->n_lev;
    L->n_lev = 0;
    L->lev_full = true;
    L->n_idx = 0;
    fl_buf_reset(&L->plain);
    return FL_OK;
}

/* ---------------- values ---------------- */

static void dict_grow(leaf_t *L)
{
    size_t ns = L->n_slots ? L->n_slots * 2 : 1024;
    if (L->pv == PV_BYTES) {
        bslot_t *t = aligned_alloc(64, ns * sizeof *t);
        if (!t) abort(); /* as fl_calloc */
        memset(t, 0, ns * sizeof *t);
        for (size_t i = 0; i < L->n_slots; i++) {
            if (!L->bslots[i].idx1) continue;
            size_t p = L->bslots[i].h & (ns - 1);
            while (t[p].idx1) p = (p + 1) & (ns - 1);
            t[p] = L->bslots[i];
        }
        free(L->bslots);
        L->bslots = t;
        L->n_slots = ns;
        return;
    }
    dslot_t *t = fl_calloc(ns, sizeof *t);
    for (size_t i = 0; i < L->n_slots; i++) {
        if (!L->slots[i].idx1) continue;
        size_t p = L->slots[i].h & (ns - 1);
        while (t[p].idx1) p = (p + 1) & (ns - 1);
        t[p] = L->slots[i];
    }
    free(L->slots);
    L->slots = t;
    L->n_slots = ns;
}

/* The physical form of value i of v: *p, *n, and the unscaled value of a decimal in *x. */
static inline void phys(const leaf_t *L, const fl_vec_t *v, size_t i, unsigned char tmp[16],
                        const unsigned char **p, size_t *n, __int128 *x)
{
    switch (L->pv) {
    case PV_BOOL: case PV_I32: case PV_F32: *p = v->data + i * 4; *n = 4; break;
    case PV_I64: case PV_F64: *p = v->data + i * 8; *n = 8; break;
    case PV_DEC32: { memcpy(x, v->data + i * 16, 16); int32_t y = (int32_t)*x; memcpy(tmp, &y, 4); *p = tmp; *n = 4; break; }
    case PV_DEC64: { memcpy(x, v->data + i * 16, 16); int64_t y = (int64_t)*x; memcpy(tmp, &y, 8); *p = tmp; *n = 8; break; }
    case PV_DECFL: {
        memcpy(x, v->data + i * 16, 16);
        unsigned __int128 u = (unsigned __int128)*x;
        *n = L->width;
        for (size_t b = *n; b > 0; b--) { tmp[b - 1] = (unsigned char)u; u >>= 8; }
        *p = tmp;
        break;
    }
    case PV_FIXED: *n = L->width; *p = v->data + i * L->width; break;
    default: {
        uint32_t o = v->offsets[i];
        *n = v->offsets[i + 1] - o;
        *p = *n ? v->bytes + o : (const unsigned char *)""; /* bytes may be NULL */
        break;
    }
    }
}

static inline uint64_t small_val(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    if (n == 8) memcpy(&v, p, 8);
    else if (n == 4) { uint32_t u; memcpy(&u, p, 4); v = u; }
    else memcpy(&v, p, n);
    return v;
}

/* Index of p[0..n) in the dictionary, adding it (and updating the chunk stats) if new. */
/* Add p[0..n) to the dictionary at free slot s (capacity already ensured). */
static __attribute__((noinline)) uint32_t dict_insert(leaf_t *L, size_t s, const unsigned char *p, size_t n,
                                                      __int128 x, uint32_t h, uint64_t key)
{
    uint32_t k = L->n_dict++;
    dslot_t *e = &L->slots[s];
    e->h = h;
    e->idx1 = k + 1;
    e->val = key;
    if (!L->width) {
        if (fl_buf_reserve(&L->dict, n + 4)) abort();
        put_le32((unsigned char *)L->dict.ptr + L->dict.len, (uint32_t)n);
        L->dict.len += 4;
        e->val = (uint64_t)L->dict.len << 32 | n;
    }
    if (fl_buf_add(&L->dict, p, n)) abort();
    stats_update(L, &L->cs, p, n, x);
    return k;
}

/* Index of p[0..n) in the dictionary, adding it (and updating the chunk stats) if new. */
static inline uint32_t dict_index_h(leaf_t *L, const unsigned char *p, size_t n, __int128 x, uint32_t h)
{
    size_t mask = L->n_slots - 1, s = h & mask;
    const unsigned char *d = (const unsigned char *)L->dict.ptr;
    uint64_t key = L->width && L->width <= 8 ? small_val(p, n) : 0;
    for (;;) {
        const dslot_t *e = &L->slots[s];
        if (!e->idx1) break;
        if (e->h == h) {
            if (L->width && L->width <= 8) {
                if (e->val == key) return e->idx1 - 1;
            } else if (!L->width) {
                if ((uint32_t)e->val == n && bytes_eq(d + (e->val >> 32), p, n)) return e->idx1 - 1;
            } else if (bytes_eq(d + (size_t)(e->idx1 - 1) * n, p, n)) {
                return e->idx1 - 1;
            }
        }
        s = (s + 1) & mask;
    }
    return dict_insert(L, s, p, n, x, h, key);
}

/* One PLAIN value (the dictionary is off). */
static inline void add_value(leaf_t *L, const fl_vec_t *v, size_t i)
{
    unsigned char tmp[16];
    const unsigned char *p;
    size_t n;
    __int128 x = 0;
    if (L->pv == PV_BOOL) {
        tmp[0] = v->data[i] ? 1 : 0;
        if (fl_buf_addc(&L->plain, (char)tmp[0])) abort();
        stat_int(&L->cs, tmp[0]);
        return;
    }
    phys(L, v, i, tmp, &p, &n, &x);
    if (L->pv == PV_F32) {
        float f; memcpy(&f, p, 4);
        if (isnan(f)) L->c_nans++;
    } else if (L->pv == PV_F64) {
        double f; memcpy(&f, p, 8);
        if (isnan(f)) L->c_nans++;
    }
    stats_update(L, &L->cs, p, n, x);
    if (L->width) {
        if (fl_buf_add(&L->plain, p, n)) abort();
    } else {
        if (fl_buf_reserve(&L->plain, n + 4)) abort();
        unsigned char *o = (unsigned char *)L->plain.ptr + L->plain.len;
        put_le32(o, (uint32_t)n);
        if (n) memcpy(o + 4, p, n);
        L->plain.len += n + 4;
    }
}

#define BLOCK 256   /* rows shredded between page checks */
#define HBATCH 32   /* dictionary lookups hashed (and prefetched) ahead */
#define NESTED_LEVELS 4096 /* level entries of repeated columns between page checks */

static void lev_reserve(leaf_t *L, size_t n)
{
    if (L->n_lev + n <= L->cap_lev) return;
    while (L->n_lev + n > L->cap_lev) L->cap_lev = L->cap_lev ? L->cap_lev * 2 : 1024;
    if (L->max_def) L->def = fl_realloc(L->def, L->cap_lev);
    if (L->max_rep) L->rep = fl_realloc(L->rep, L->cap_lev);
}

static void sel_reserve(leaf_t *L, size_t n)
{
    if (L->n_sel + n <= L->cap_sel) return;
    while (L->n_sel + n > L->cap_sel) L->cap_sel = L->cap_sel ? L->cap_sel * 2 : 1024;
    L->sel = fl_realloc(L->sel, L->cap_sel * sizeof *L->sel);
}

static void idx_reserve(leaf_t *L, size_t n)
{
    if (L->n_idx + n <= L->cap_idx) return;
    while (L->n_idx + n > L->cap_idx) L->cap_idx = L->cap_idx ? L->cap_idx * 2 : 1024;
    L->idx = fl_realloc(L->idx, L->cap_idx * sizeof *L->idx);
}

/* Value sel[k] (or i0 + k when sel is NULL) of a bulk add. */
#define AT(k) (sel ? (size_t)sel[k] : i0 + (k))

/* Inline key of a byte array of up to 16 bytes: equal (n, a, b) iff equal bytes. */
static inline void bkey(const unsigned char *p, uint32_t n, uint64_t *a, uint64_t *b)
{
    if (n >= 8) { *a = rd64(p); *b = rd64(p + n - 8); }
    else if (n >= 4) { *a = rd32(p) | (uint64_t)rd32(p + n - 4) << 32; *b = 0; }
    else { *a = n ? (uint64_t)p[0] | (uint64_t)p[n >> 1] << 8 | (uint64_t)p[n - 1] << 16 : 0; *b = 0; }
}

static __attribute__((noinline)) uint32_t bdict_insert(leaf_t *L, size_t s, const unsigned char *p,
                                                       uint32_t n, uint32_t h, uint64_t a, uint64_t b)
{
    uint32_t k = L->n_dict++;
    bslot_t *e = &L->bslots[s];
    if (fl_buf_reserve(&L->dict, (size_t)n + 4)) abort();
    put_le32((unsigned char *)L->dict.ptr + L->dict.len, n);
    L->dict.len += 4;
    e->h = h;
    e->idx1 = k + 1;
    e->off = (uint32_t)L->dict.len;
    e->len = n;
    e->a = a;
    e->b = b;
    if (n) memcpy(L->dict.ptr + L->dict.len, p, n);
    L->dict.len += n;
    L->dict.ptr[L->dict.len] = 0;
    stat_bytes(&L->cs, p, n);
    return k;
}

/* Dictionary indices of m byte-array values of v. */
static void add_dict_bytes(leaf_t *L, const fl_vec_t *v, const uint32_t *sel, size_t i0, size_t m)
{
    const uint32_t *off = v->offsets;
    const unsigned char *bytes = v->bytes ? v->bytes : (const unsigned char *)"";
    const uint64_t k1 = 0xa0761d6478bd642full, k2 = 0xe7037ed1a0b428dbull, k3 = 0x8ebc6af09c88c6e3ull;
    L->dict_vals += m;
    for (size_t b0 = 0; b0 < m; b0 += HBATCH) {
        size_t b1 = m - b0 < HBATCH ? m : b0 + HBATCH, c = b1 - b0;
        uint32_t hs[HBATCH], ns[HBATCH];
        uint64_t as[HBATCH], bs[HBATCH];
        const unsigned char *ps[HBATCH];
        if (L->n_dict * 2 + HBATCH >= L->n_slots) dict_grow(L);
        size_t mask = L->n_slots - 1, plain = 0;
        const bslot_t *slots = L->bslots;
        if (L->n_slots <= 2048) { /* a table in L1/L2: look up in one pass, no prefetch */
            uint32_t *out = L->idx + L->n_idx;
            for (size_t k = 0; k < c; k++) {
                size_t i = AT(b0 + k);
                uint32_t o = off[i], n = off[i + 1] - o, h;
                const unsigned char *p = bytes + o;
                uint64_t a, b, hh;
                if (n <= 16) {
                    bkey(p, n, &a, &b);
                    hh = mum(mum(a ^ k1, b ^ (n * k3)), k2);
                } else {
                    a = b = 0;
                    hh = hash_bytes(p, n);
                }
                h = (uint32_t)(hh ^ (hh >> 32));
                plain += n;
                for (size_t sl = h & mask;; sl = (sl + 1) & mask) {
                    const bslot_t *e = &slots[sl];
                    if (!e->idx1) { out[k] = bdict_insert(L, sl, p, n, h, a, b); break; }
                    if (e->h == h && e->len == n &&
                        (n <= 16 ? (e->a == a && e->b == b)
                                 : bytes_eq((const unsigned char *)L->dict.ptr + e->off, p, n))) {
                        out[k] = e->idx1 - 1;
                        break;
                    }
                }
            }
            L->n_idx += c;
            L->dict_plain += plain + 4 * c;
            continue;
        }
        for (size_t k = 0; k < c; k++) {
            size_t i = AT(b0 + k);
            uint32_t o = off[i], n = off[i + 1] - o;
            const unsigned char *p = bytes + o;
            uint64_t h;
            ns[k] = n;
            ps[k] = p;
            if (n <= 16) {
                bkey(p, n, &as[k], &bs[k]);
                h = mum(mum(as[k] ^ k1, bs[k] ^ (n * k3)), k2);
            } else {
                as[k] = bs[k] = 0;
                h = hash_bytes(p, n);
            }
            hs[k] = (uint32_t)(h ^ (h >> 32));
            __builtin_prefetch(&slots[hs[k] & mask]);
            plain += n;
        }
        uint32_t *out = L->idx + L->n_idx;
        for (size_t k = 0; k < c; k++) {
            uint32_t h = hs[k], n = ns[k];
            uint64_t a = as[k], b = bs[k];
            size_t sl = h & mask;
            for (;;) {
                const bslot_t *e = &slots[sl];
                if (!e->idx1) { out[k] = bdict_insert(L, sl, ps[k], n, h, a, b); break; }
                if (e->h == h && e->len == n &&
                    (n <= 16 ? (e->a == a && e->b == b)
                             : bytes_eq((const unsigned char *)L->dict.ptr + e->off, ps[k], n))) {
                    out[k] = e->idx1 - 1;
                    break;
                }
                sl = (sl + 1) & mask;
            }
        }
        L->n_idx += c;
        L->dict_plain += plain + 4 * c;
    }
}

/* Dictionary indices of m 4- or 8-byte int/float values of v (T: their bits). */
#define ADD_DICT_FIXED(NAME, T, FT)                                                     \
static void NAME(leaf_t *L, const fl_vec_t *v, const uint32_t *sel, size_t i0, size_t m) \
{                                                                                       \
    const T *a = (const T *)(const void *)v->data;                                      \
    bool flt = L->st == ST_FLT;                                                         \
    L->dict_vals += m;                                                                  \
    L->dict_plain += m * sizeof(T);                                                     \
    for (size_t b0 = 0; b0 < m; b0 += HBATCH) {                                         \
        size_t b1 = m - b0 < HBATCH ? m : b0 + HBATCH, c = b1 - b0;                     \
        uint32_t hs[HBATCH];                                                            \
        T xs[HBATCH];                                                                   \
        if (L->n_dict * 2 + HBATCH >= L->n_slots) dict_grow(L);                         \
        size_t mask = L->n_slots - 1;                                                   \
        const dslot_t *slots = L->slots;                                                \
        for (size_t k = 0; k < c; k++) {                                                \
            T x;                                                                        \
            memcpy(&x, a + AT(b0 + k), sizeof x);                                       \
            xs[k] = x;                                                                  \
            hs[k] = hash32((const unsigned char *)&xs[k], sizeof x);                    \
            __builtin_prefetch(&slots[hs[k] & mask]);                                   \
        }                                                                               \
        if (flt)                                                                        \
            for (size_t k = 0; k < c; k++) {                                            \
                FT f; memcpy(&f, &xs[k], sizeof f);                                     \
                L->c_nans += isnan(f);                                                  \
            }                                                                           \
        uint32_t *out = L->idx + L->n_idx;                                              \
        for (size_t k = 0; k < c; k++) {                                                \
            uint32_t h = hs[k];                                                         \
            uint64_t key = xs[k];                                                       \
            size_t sl = h & mask;                                                       \
            for (;;) {                                                                  \
                const dslot_t *e = &slots[sl];                                          \
                if (!e->idx1) {                                                         \
                    out[k] = dict_insert(L, sl, (const unsigned char *)&xs[k], sizeof(T), 0, h, key); \
                    break;                                                              \
                }                                                                       \
                if (e->h == h && e->val == key) { out[k] = e->idx1 - 1; break; }        \
                sl = (sl + 1) & mask;                                                   \
            }                                                                           \
        }                                                                               \
        L->n_idx += c;                                                                  \
    }                                                                                   \
}
ADD_DICT_FIXED(add_dict_u32, uint32_t, float)
ADD_DICT_FIXED(add_dict_u64, uint64_t, double)

/* Dictionary indices of m values of v. */
static void add_dict(leaf_t *L, const fl_vec_t *v, const uint32_t *sel, size_t i0, size_t m)
{
    idx_reserve(L, m);
    switch (L->pv) {
    case PV_BYTES: add_dict_bytes(L, v, sel, i0, m); return;
    case PV_I32: case PV_F32: add_dict_u32(L, v, sel, i0, m); return;
    case PV_I64: case PV_F64: add_dict_u64(L, v, sel, i0, m); return;
    default: break;
    }
    bool flt = L->pv == PV_F32 || L->pv == PV_F64;
    L->dict_vals += m;
    for (size_t b0 = 0; b0 < m; b0 += HBATCH) {
        size_t b1 = m - b0 < HBATCH ? m : b0 + HBATCH, c = b1 - b0;
        uint32_t hs[HBATCH];
        const unsigned char *ps[HBATCH];
        size_t ns[HBATCH];
        __int128 xs[HBATCH];
        unsigned char tmp[HBATCH][16];
        if (L->n_dict * 2 + HBATCH >= L->n_slots) dict_grow(L);
        size_t mask = L->n_slots - 1, plain = 0;
        for (size_t k = 0; k < c; k++) {
            xs[k] = 0;
            phys(L, v, AT(b0 + k), tmp[k], &ps[k], &ns[k], &xs[k]);
            hs[k] = hash32(ps[k], ns[k]);
            __builtin_prefetch(&L->slots[hs[k] & mask]);
            plain += ns[k];
        }
        if (flt) {
            for (size_t k = 0; k < c; k++) {
                if (ns[k] == 4) { float f; memcpy(&f, ps[k], 4); L->c_nans += isnan(f); }
                else { double f; memcpy(&f, ps[k], 8); L->c_nans += isnan(f); }
            }
        }
        uint32_t *o = L->idx + L->n_idx;
        for (size_t k = 0; k < c; k++) o[k] = dict_index_h(L, ps[k], ns[k], xs[k], hs[k]);
        L->n_idx += c;
        L->dict_plain += L->width ? plain : plain + 4 * c;
    }
}

/* PLAIN values: m values of v, in bulk for the common kinds. */
static void add_plain(leaf_t *L, const fl_vec_t *v, const uint32_t *sel, size_t i0, size_t m)
{
    if (!m) return;
    stats_t *s = &L->cs;
    switch (L->pv) {
    case PV_I32: case PV_F32: {
        if (fl_buf_reserve(&L->plain, m * 4)) abort();
        uint32_t *o = (uint32_t *)(void *)(L->plain.ptr + L->plain.len);
        const uint32_t *a = (const uint32_t *)(const void *)v->data;
        if (sel) for (size_t k = 0; k < m; k++) memcpy(o + k, a + sel[k], 4);
        else memcpy(o, a + i0, m * 4);
        L->plain.len += m * 4;
        if (L->pv == PV_I32) {
            int32_t lo, hi;
            memcpy(&lo, o, 4);
            hi = lo;
            for (size_t k = 0; k < m; k++) {
                int32_t x; memcpy(&x, o + k, 4);
                lo = x < lo ? x : lo; hi = x > hi ? x : hi;
            }
            stat_int(s, lo); stat_int(s, hi);
        } else {
            for (size_t k = 0; k < m; k++) {
                float f; memcpy(&f, o + k, 4);
                if (isnan(f)) L->c_nans++;
                else stat_flt(s, f);
            }
        }
        return;
    }
    case PV_I64: case PV_F64: case PV_DEC64: {
        if (fl_buf_reserve(&L->plain, m * 8)) abort();
        unsigned char *ob = (unsigned char *)L->plain.ptr + L->plain.len;
        L->plain.len += m * 8;
        if (L->pv == PV_DEC64) {
            __int128 lo = 0, hi = 0;
            for (size_t k = 0; k < m; k++) {
                __int128 x; memcpy(&x, v->data + AT(k) * 16, 16);
                int64_t y = (int64_t)x;
                memcpy(ob + k * 8, &y, 8);
                if (!k) lo = hi = x;
                lo = x < lo ? x : lo; hi = x > hi ? x : hi;
            }
            stat_dec(s, lo); stat_dec(s, hi);
            return;
        }
        const unsigned char *a = v->data;
        if (sel) for (size_t k = 0; k < m; k++) memcpy(ob + k * 8, a + (size_t)sel[k] * 8, 8);
        else memcpy(ob, a + i0 * 8, m * 8);
        if (L->pv == PV_I64) {
            int64_t lo, hi;
            memcpy(&lo, ob, 8);
            hi = lo;
            for (size_t k = 0; k < m; k++) {
                int64_t x; memcpy(&x, ob + k * 8, 8);
                lo = x < lo ? x : lo; hi = x > hi ? x : hi;
            }
            stat_int(s, lo); stat_int(s, hi);
        } else {
            bool has = false;
            double lo = 0, hi = 0;
            for (size_t k = 0; k < m; k++) {
                double f; memcpy(&f, ob + k * 8, 8);
                if (isnan(f)) { L->c_nans++; continue; }
                if (!has) { has = true; lo = hi = f; continue; }
                if (f < lo) lo = f;
                else if (f == 0 && lo == 0 && signbit(f)) lo = f;
                if (f > hi) hi = f;
                else if (f == 0 && hi == 0 && !signbit(f)) hi = f;
            }
            if (has) { stat_flt(s, lo); stat_flt(s, hi); }
        }
        return;
    }
    case PV_DEC32: {
        if (fl_buf_reserve(&L->plain, m * 4)) abort();
        unsigned char *ob = (unsigned char *)L->plain.ptr + L->plain.len;
        L->plain.len += m * 4;
        __int128 lo = 0, hi = 0;
        for (size_t k = 0; k < m; k++) {
            __int128 x; memcpy(&x, v->data + AT(k) * 16, 16);
            int32_t y = (int32_t)x;
            memcpy(ob + k * 4, &y, 4);
            if (!k) lo = hi = x;
            lo = x < lo ? x : lo; hi = x > hi ? x : hi;
        }
        stat_dec(s, lo); stat_dec(s, hi);
        return;
    }
    case PV_BYTES: {
        const uint32_t *off = v->offsets;
        size_t total = 0;
        for (size_t k = 0; k < m; k++) { size_t i = AT(k); total += off[i + 1] - off[i]; }
        if (fl_buf_reserve(&L->plain, total + 4 * m)) abort();
        unsigned char *o = (unsigned char *)L->plain.ptr + L->plain.len;
        const unsigned char *lo = NULL, *hi = NULL;
        size_t lon = 0, hin = 0;
        if (s->has) { lo = (const unsigned char *)s->bmin.ptr; lon = s->bmin.len; hi = (const unsigned char *)s->bmax.ptr; hin = s->bmax.len; }
        for (size_t k = 0; k < m; k++) {
            size_t i = AT(k);
            uint32_t n = off[i + 1] - off[i];
            const unsigned char *p = n ? v->bytes + off[i] : (const unsigned char *)"";
            put_le32(o, n);
            if (n) memcpy(o + 4, p, n);
            o += 4 + n;
            if (!lo) { lo = hi = p; lon = hin = n; continue; }
            if (bytes_cmp(p, n, lo, lon) < 0) { lo = p; lon = n; }
            else if (bytes_cmp(p, n, hi, hin) > 0) { hi = p; hin = n; }
        }
        L->plain.len += total + 4 * m;
        if (!s->has || lo != (const unsigned char *)s->bmin.ptr) buf_set(&s->bmin, lo, lon);
        if (!s->has || hi != (const unsigned char *)s->bmax.ptr) buf_set(&s->bmax, hi, hin);
        s->has = true;
        return;
    }
    default:
        for (size_t k = 0; k < m; k++) add_value(L, v, AT(k));
        return;
    }
}

static inline void add_values(leaf_t *L, const fl_vec_t *v, const uint32_t *sel, size_t i0, size_t m)
{
    if (L->dict_on) add_dict(L, v, sel, i0, m);
    else add_plain(L, v, sel, i0, m);
}

#undef AT

/* Before a block of rows: cut the page, or leave the dictionary. */
static fl_err_t row_start(fl_pq_writer_t *w, leaf_t *L)
{
    fl_err_t e = FL_OK;
    if (L->dict_on && !L->dict_probed && L->dict_vals >= DICT_PROBE) {
        /* nearly all values distinct and the dictionary no smaller than PLAIN:
         * it will not pay off in this chunk */
        L->dict_probed = true;
        if ((size_t)L->n_dict * 10 >= L->dict_vals * 9 &&
            L->dict.len + L->dict_vals * (size_t)bit_width(L->n_dict) / 8 >= L->dict_plain) {
            e = flush_page(w, L);
            L->dict_on = false;
            return e;
        }
    }
    if (L->dict_on && L->dict.len >= w->o.dict_page_bytes) {
        e = flush_page(w, L);
        L->dict_on = false;
    } else if (page_est(L) >= w->o.page_bytes) {
        e = flush_page(w, L);
    }
    return e;
}

/* Levels of rows [r0, r1) (at most BLOCK) of a leaf under no list or map, in
 * bulk; the rows whose value is present go to L->sel unless all are. */
static fl_err_t flat_levels(leaf_t *L, size_t r0, size_t r1, bool *all)
{
    size_t n = r1 - r0;
    uint8_t alive[BLOCK], dl[BLOCK];
    bool any = false;
    for (int d = 0; d < L->depth; d++) {
        const uint8_t *va = L->vecs[d]->valid;
        if (va && memchr(va + r0, 0, n)) { any = true; break; }
    }
    lev_reserve(L, n);
    if (!any) {
        if (L->max_def) memset(L->def + L->n_lev, L->max_def, n);
        L->n_lev += n;
        *all = true;
        return FL_OK;
    }
    L->lev_full = false;
    memset(alive, 1, n);
    memset(dl, 0, n);
    for (int d = 0; d < L->depth; d++) {
        const uint8_t *va = L->vecs[d]->valid;
        bool opt = !L->nodes[d]->required;
        if (va) {
            va += r0;
            if (!opt) {
                for (size_t k = 0; k < n; k++)
                    if (alive[k] && !va[k]) return FL_ERR_INVALID;
            } else {
                for (size_t k = 0; k < n; k++) alive[k] &= va[k] != 0;
            }
        }
        if (opt)
            for (size_t k = 0; k < n; k++) dl[k] += alive[k];
    }
    if (L->max_def) memcpy(L->def + L->n_lev, dl, n);
    L->n_lev += n;
    size_t ones = 0;
    for (size_t k = 0; k < n; k++) ones += alive[k];
    L->c_nulls += (int64_t)(n - ones);
    if (ones == n) { *all = true; return FL_OK; }
    *all = false;
    sel_reserve(L, n); /* the branchless fill writes one past */
    uint32_t *o = L->sel + L->n_sel;
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        o[m] = (uint32_t)(r0 + k);
        m += alive[k];
    }
    L->n_sel += m;
    return FL_OK;
}

static inline void lev_push(leaf_t *L, int def, int rep)
{
    if (L->n_lev == L->cap_lev) lev_reserve(L, 1);
    if (L->max_def) L->def[L->n_lev] = (uint8_t)def;
    if (L->max_rep) L->rep[L->n_lev] = (uint8_t)rep;
    L->n_lev++;
}

static fl_err_t walk(leaf_t *L, int d, size_t i, int def, int rep)
{
    L->lev_full = false;
    const fl_vec_t *v = L->vecs[d];
    const fl_field_t *f = L->nodes[d];
    if (v->valid && !v->valid[i]) {
        if (f->required) return FL_ERR_INVALID;
        lev_push(L, def, rep);
        L->c_nulls++;
        return FL_OK;
    }
    if (!f->required) def++;
    if (d == L->depth - 1) {
        lev_push(L, L->max_def, rep);
        if (L->n_sel == L->cap_sel) sel_reserve(L, 1);
        L->sel[L->n_sel++] = (uint32_t)i;
        return FL_OK;
    }
    if (f->kind == FL_TYPE_STRUCT) return walk(L, d + 1, i, def, rep);
    size_t b = v->offsets[i], e = v->offsets[i + 1];
    if (b == e) {
        lev_push(L, def, rep);
        L->c_nulls++;
        return FL_OK;
    }
    for (size_t k = b; k < e; k++) {
        fl_err_t rc = walk(L, d + 1, k, def + 1, k == b ? rep : L->rep_at[d]);
        if (rc) return rc;
    }
    return FL_OK;
}

/* Levels of rows [r0, r1) of the element of a top-level list (the common
 * nested shape), without the recursive walk; present elements go to L->sel. */
static fl_err_t list_levels(leaf_t *L, size_t r0, size_t r1)
{
    const fl_vec_t *lv = L->vecs[0], *ev = L->vecs[1];
    const uint32_t *off = lv->offsets;
    const uint8_t *lval = lv->valid, *eval = ev->valid;
    bool lreq = L->nodes[0]->required, ereq = L->nodes[1]->required;
    uint8_t d0 = lreq ? 0 : 1, dmax = (uint8_t)L->max_def;
    size_t span = off[r1] - off[r0];
    L->lev_full = false;
    lev_reserve(L, span + (r1 - r0));
    sel_reserve(L, span);
    uint8_t *def = L->def + L->n_lev, *rep = L->rep + L->n_lev;
    uint32_t *sel = L->sel + L->n_sel;
    size_t nl = 0, ns = 0, nulls = 0;
    for (size_t i = r0; i < r1; i++) {
        if (lval && !lval[i]) {
            if (lreq) return FL_ERR_INVALID;
            def[nl] = 0; rep[nl] = 0; nl++; nulls++;
            continue;
        }
        uint32_t b = off[i], e = off[i + 1];
        if (b == e) { def[nl] = d0; rep[nl] = 0; nl++; nulls++; continue; }
        if (!eval) {
            for (uint32_t k = b; k < e; k++) { def[nl] = dmax; rep[nl] = 1; nl++; sel[ns++] = k; }
        } else {
            for (uint32_t k = b; k < e; k++) {
                rep[nl] = 1;
                if (!eval[k]) {
                    if (ereq) return FL_ERR_INVALID;
                    def[nl++] = (uint8_t)(d0 + 1);
                    nulls++;
                } else {
                    def[nl++] = dmax;
                    sel[ns++] = k;
                }
            }
        }
        rep[nl - (e - b)] = 0;
    }
    L->n_lev += nl;
    L->n_sel += ns;
    L->c_nulls += (int64_t)nulls;
    return FL_OK;
}

static fl_err_t shred(fl_pq_writer_t *w, leaf_t *L, size_t r0, size_t r1)
{
    fl_err_t e;
    const fl_vec_t *lv = L->vecs[L->depth - 1];
    for (size_t b0 = r0, b1; b0 < r1; b0 = b1) {
        b1 = r1 - b0 < BLOCK ? r1 : b0 + BLOCK;
        if ((e = row_start(w, L))) return e;
        L->n_sel = 0;
        if (L->list_fast) {
            /* long lists: fewer rows, so pages and dictionaries are checked often enough */
            const uint32_t *off = L->vecs[0]->offsets;
            size_t lim = b0 + 1;
            while (lim < b1 && off[lim + 1] - off[b0] <= NESTED_LEVELS) lim++;
            b1 = lim;
            if ((e = list_levels(L, b0, b1))) return e;
        } else if (L->max_rep) {
            size_t lev0 = L->n_lev, i = b0;
            while (i < b1) {
                if ((e = walk(L, 0, i++, 0, 0))) return e;
                if (L->n_lev - lev0 >= NESTED_LEVELS) break;
            }
            b1 = i;
        } else {
            bool all;
            if ((e = flat_levels(L, b0, b1, &all))) return e;
            if (all) {
                add_values(L, lv, NULL, b0, b1 - b0);
                continue;
            }
        }
        add_values(L, lv, L->sel, 0, L->n_sel);
    }
    return FL_OK;
}

/* ---------------- row groups ---------------- */

static size_t buffered(const fl_pq_writer_t *w)
{
    size_t n = 0;
    for (size_t i = 0; i < w->n_leaves; i++) {
        const leaf_t *L = &w->leaves[i];
        n += L->pages.len + page_est(L) + L->dict.len;
    }
    return n;
}

static void colmeta_release(fl_pq_column_meta_t *m)
{
    free(m->encodings);
    free(m->stats.min_value.ptr);
    free(m->stats.max_value.ptr);
}

static fl_err_t flush_row_group(fl_pq_writer_t *w)
{
    fl_err_t e;
    if (!w->rg_rows) return FL_OK;
    for (size_t i = 0; i < w->n_leaves; i++)
        if ((e = flush_page(w, &w->leaves[i]))) return e;
    if (w->n_rgs == w->cap_rgs) {
        w->cap_rgs = w->cap_rgs ? w->cap_rgs * 2 : 8;
        w->rgs = fl_realloc(w->rgs, w->cap_rgs * sizeof *w->rgs);
    }
    fl_pq_row_group_t *g = &w->rgs[w->n_rgs++];
    memset(g, 0, sizeof *g);
    g->columns = fl_calloc(w->n_leaves ? w->n_leaves : 1, sizeof *g->columns);
    g->n_columns = (uint32_t)w->n_leaves;
    g->num_rows = w->rg_rows;
    g->has_file_offset = g->has_total_compressed_size = true;
    g->file_offset = w->pos;
    for (size_t i = 0; i < w->n_leaves; i++) {
        leaf_t *L = &w->leaves[i];
        fl_pq_column_chunk_t *cc = &g->columns[i];
        fl_pq_column_meta_t *m = &cc->meta;
        int64_t start = w->pos, uncomp = L->c_uncomp;
        cc->file_offset = start;
        cc->has_meta = true;
        if (L->n_dict) {
            fl_buf_t *raw = &L->dict;
            const char *data;
            size_t dlen;
            if ((e = compress(w, raw, &data, &dlen))) return e;
            if (raw->len > INT32_MAX || dlen > INT32_MAX) return FL_ERR_TOO_LARGE;
            fl_pq_page_header_t h;
            memset(&h, 0, sizeof h);
            h.type = FL_PQ_DICTIONARY_PAGE;
            h.uncompressed_page_size = (int32_t)raw->len;
            h.compressed_page_size = (int32_t)dlen;
            h.has_dict_page = true;
            h.dict_page.num_values = (int32_t)L->n_dict;
            h.dict_page.encoding = FL_PQ_ENC_PLAIN;
            fl_buf_reset(&w->hdr);
            if ((e = fl_pq_page_header_encode(&h, &w->hdr))) return e;
            uncomp += (int64_t)(w->hdr.len + raw->len);
            if ((e = out(w, w->hdr.ptr, w->hdr.len)) || (e = out(w, data, dlen))) return e;
            m->has_dictionary_page_offset = true;
            m->dictionary_page_offset = start;
        }
        m->data_page_offset = w->pos;
        for (size_t k = 0; k < L->n_segs; k++)
            if ((e = out(w, L->pages.ptr + L->segs[k].off, L->segs[k].len))) return e;
        m->type = L->ptype;
        m->encodings = fl_malloc(4 * sizeof *m->encodings);
        if (L->n_dict || L->c_plain) m->encodings[m->n_encodings++] = FL_PQ_ENC_PLAIN;
        m->encodings[m->n_encodings++] = FL_PQ_ENC_RLE;
        if (L->c_dict) m->encodings[m->n_encodings++] = FL_PQ_ENC_RLE_DICTIONARY;
        m->path = L->path;
        m->n_path = L->n_path;
        m->codec = (int32_t)w->o.codec;
        m->num_values = L->c_values;
        m->total_uncompressed_size = uncomp;
        m->total_compressed_size = w->pos - start;
        m->has_stats = true;
        m->stats.has_null_count = true;
        m->stats.null_count = L->c_nulls;
        if (L->cs.has) {
            size_t a, b;
            m->stats.min_value.ptr = stat_plain(L, &L->cs, false, &a);
            m->stats.max_value.ptr = stat_plain(L, &L->cs, true, &b);
            if (m->stats.min_value.ptr && m->stats.max_value.ptr) {
                m->stats.min_value.len = a;
                m->stats.max_value.len = b;
            } else {
                free(m->stats.min_value.ptr);
                free(m->stats.max_value.ptr);
                m->stats.min_value.ptr = m->stats.max_value.ptr = NULL;
            }
        }
        g->total_byte_size += uncomp;
        g->total_compressed_size += m->total_compressed_size;
        /* file-level metrics */
        stats_merge(&L->fs, &L->cs, L->st);
        L->f_values += L->c_values;
        L->f_nulls += L->c_nulls;
        L->f_nans += L->c_nans;
        L->f_size += m->total_compressed_size;
        /* reset the chunk */
        fl_buf_reset(&L->pages);
        L->n_segs = 0;
        fl_buf_reset(&L->dict);
        if (L->slots) memset(L->slots, 0, L->n_slots * sizeof *L->slots);
        if (L->bslots) memset(L->bslots, 0, L->n_slots * sizeof *L->bslots);
        if (L->n_slots > 4096 && L->n_slots > 8 * (size_t)L->n_dict) { /* shrink after a big chunk */
            free(L->slots);
            free(L->bslots);
            L->slots = NULL;
            L->bslots = NULL;
            L->n_slots = 0;
        }
        L->n_dict = 0;
        L->dict_on = w->o.dictionary && L->pv != PV_BOOL;
        L->dict_probed = false;
        L->dict_vals = L->dict_plain = 0;
        L->c_values = L->c_nulls = L->c_nans = L->c_uncomp = 0;
        L->c_plain = L->c_dict = false;
        stats_reset(&L->cs);
    }
    w->rg_rows = 0;
    return FL_OK;
}

/* ---------------- API ---------------- */

void fl_pq_write_opts_default(fl_pq_write_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->codec = FL_CODEC_ZSTD;
    o->level = 0;
    o->page_bytes = 1024 * 1024;
    o->row_group_bytes = 128 * 1024 * 1024;
    o->dict_page_bytes = 2 * 1024 * 1024;
    o->dictionary = true;
    o->stats_truncate = 16;
    o->created_by = NULL;
}

void fl_pq_writer_free(fl_pq_writer_t *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->n_leaves; i++) {
        leaf_t *L = &w->leaves[i];
        free(L->nodes); free(L->cidx); free(L->rep_at); free(L->vecs); free(L->path);
        free(L->def); free(L->rep); free(L->idx); free(L->sel); free(L->slots); free(L->bslots); free(L->segs);
        fl_buf_free(&L->plain); fl_buf_free(&L->dict); fl_buf_free(&L->pages);
        stats_free(&L->cs); stats_free(&L->fs);
    }
    free(w->leaves);
    free(w->se);
    for (size_t g = 0; g < w->n_rgs; g++) {
        for (uint32_t c = 0; c < w->rgs[g].n_columns; c++) colmeta_release(&w->rgs[g].columns[c].meta);
        free(w->rgs[g].columns);
    }
    free(w->rgs);
    for (uint32_t i = 0; i < w->n_kv; i++) { free(w->kv[i].key.ptr); free(w->kv[i].value.ptr); }
    free(w->kv);
    free(w->created_by);
    fl_buf_free(&w->raw); fl_buf_free(&w->comp); fl_buf_free(&w->hdr);
    free(w);
}

static void bin_copy(fl_pq_bin_t *b, const char *p, size_t n)
{
    b->ptr = fl_malloc(n + 1);
    if (n) memcpy(b->ptr, p, n);
    b->ptr[n] = 0;
    b->len = n;
}

fl_err_t fl_pq_writer_open(fl_pq_writer_t **wp, const fl_field_t *schema,
                           const fl_pq_write_opts_t *o, fl_pq_sink_t sink)
{
    *wp = NULL;
    if (!schema || schema->kind != FL_TYPE_STRUCT || !schema->n_children || !sink.write)
        return FL_ERR_INVALID;
    fl_pq_writer_t *w = fl_calloc(1, sizeof *w);
    if (o) w->o = *o;
    else fl_pq_write_opts_default(&w->o);
    if (!w->o.page_bytes) w->o.page_bytes = 1024 * 1024;
    if (!w->o.row_group_bytes) w->o.row_group_bytes = 128 * 1024 * 1024;
    if (w->o.dict_page_bytes > ((size_t)1 << 30)) w->o.dict_page_bytes = (size_t)1 << 30;
    if (w->o.codec == FL_CODEC_LZ4 || (unsigned)w->o.codec > FL_CODEC_LZ4_RAW || w->o.codec == 3 ||
        w->o.codec == 4) {
        free(w);
        return FL_ERR_INVALID;
    }
    w->schema = schema;
    w->sink = sink;
    w->created_by = fl_strdup(w->o.created_by ? w->o.created_by : "floe version 0.1.0");
    w->o.created_by = NULL;
    if (w->o.n_kv) {
        w->kv = fl_calloc(w->o.n_kv, sizeof *w->kv);
        w->n_kv = (uint32_t)w->o.n_kv;
        for (size_t i = 0; i < w->o.n_kv; i++) {
            bin_copy(&w->kv[i].key, w->o.kv[2 * i].ptr, w->o.kv[2 * i].len);
            bin_copy(&w->kv[i].value, w->o.kv[2 * i + 1].ptr, w->o.kv[2 * i + 1].len);
        }
    }
    w->o.kv = NULL;
    fl_buf_init(&w->raw, 0);
    fl_buf_init(&w->comp, 0);
    fl_buf_init(&w->hdr, 0);
    fl_pq_schema_elem_t *root = push_se(w, "table");
    root->has = FL_PQ_SE_NUM_CHILDREN;
    root->num_children = (int32_t)schema->n_children;
    bctx_t *c = fl_calloc(1, sizeof *c);
    c->w = w;
    fl_err_t e = FL_OK;
    for (uint32_t i = 0; i < schema->n_children && !e; i++)
        e = add_field(c, &schema->children[i], schema->children[i].name ? schema->children[i].name : "",
                      i, 0, 0, false);
    free(c);
    if (!e) e = out(w, "PAR1", 4);
    if (e) {
        fl_pq_writer_free(w);
        return e;
    }
    *wp = w;
    return FL_OK;
}

static bool offsets_ok(const uint32_t *off, size_t len, size_t limit)
{
    if (!len) return true;
    if (!off || off[0] != 0) return false;
    for (size_t i = 0; i < len; i++)
        if (off[i + 1] < off[i]) return false;
    return off[len] <= limit;
}

static bool vec_ok(const fl_vec_t *v, const fl_field_t *f)
{
    if (v->field && v->field->kind != f->kind) return false;
    if (v->len && v->valid == NULL && v->null_count) return false;
    switch (f->kind) {
    case FL_TYPE_STRUCT:
        if (v->n_children != f->n_children) return false;
        for (uint32_t i = 0; i < f->n_children; i++)
            if (v->children[i].len != v->len || !vec_ok(&v->children[i], &f->children[i])) return false;
        return true;
    case FL_TYPE_LIST:
    case FL_TYPE_MAP:
        if (v->n_children != f->n_children) return false;
        if (f->kind == FL_TYPE_MAP && v->children[0].len != v->children[1].len) return false;
        if (!offsets_ok(v->offsets, v->len, v->children[0].len)) return false;
        for (uint32_t i = 0; i < f->n_children; i++)
            if (!vec_ok(&v->children[i], &f->children[i])) return false;
        return true;
    case FL_TYPE_STRING:
    case FL_TYPE_BINARY:
        return offsets_ok(v->offsets, v->len, v->bytes_len);
    default:
        return !v->len || v->data;
    }
}

fl_err_t fl_pq_writer_write(fl_pq_writer_t *w, const fl_vec_t *batch)
{
    if (w->err) return w->err;
    if (w->closed) return FL_ERR_INVALID;
    if (!batch || batch->n_children != w->schema->n_children || batch->null_count)
        return FL_ERR_INVALID;
    if (batch->len > UINT32_MAX) return FL_ERR_TOO_LARGE;
    for (uint32_t i = 0; i < w->schema->n_children; i++)
        if (batch->children[i].len != batch->len ||
            !vec_ok(&batch->children[i], &w->schema->children[i]))
            return FL_ERR_INVALID;
    for (size_t i = 0; i < w->n_leaves; i++) {
        leaf_t *L = &w->leaves[i];
        const fl_vec_t *v = &batch->children[L->cidx[0]];
        L->vecs[0] = v;
        for (int d = 1; d < L->depth; d++) L->vecs[d] = v = &v->children[L->cidx[d]];
    }
    fl_err_t e = FL_OK;
    for (size_t r0 = 0; r0 < batch->len && !e; r0 += SLICE_ROWS) {
        size_t r1 = batch->len - r0 < SLICE_ROWS ? batch->len : r0 + SLICE_ROWS;
        for (size_t i = 0; i < w->n_leaves && !e; i++) {
            e = shred(w, &w->leaves[i], r0, r1);
        }
        if (e) break;
        w->rows += (int64_t)(r1 - r0);
        w->rg_rows += (int64_t)(r1 - r0);
        if (buffered(w) >= w->o.row_group_bytes) e = flush_row_group(w);
    }
    if (e) w->err = e;
    return e;
}

int64_t fl_pq_writer_rows(const fl_pq_writer_t *w)
{
    return w->rows;
}

int64_t fl_pq_writer_bytes(const fl_pq_writer_t *w)
{
    return w->pos + (int64_t)buffered(w);
}

int64_t fl_pq_writer_buffered(const fl_pq_writer_t *w)
{
    return (int64_t)buffered(w);
}

/* Iceberg single-value binary bound of the file statistics (lower or upper). */
static bool iceberg_bound(const fl_pq_writer_t *w, const leaf_t *L, bool upper, fl_buf_t *b)
{
    const stats_t *s = &L->fs;
    unsigned char t[16];
    size_t n = 0;
    fl_buf_init(b, 0);
    switch (L->field->kind) {
    case FL_TYPE_BOOLEAN: t[0] = (unsigned char)(upper ? s->imax : s->imin); n = 1; break;
    case FL_TYPE_INT: case FL_TYPE_DATE: {
        int32_t v = (int32_t)(upper ? s->imax : s->imin);
        memcpy(t, &v, 4); n = 4;
        break;
    }
    case FL_TYPE_FLOAT: { float v = (float)(upper ? s->dmax : s->dmin); memcpy(t, &v, 4); n = 4; break; }
    case FL_TYPE_DOUBLE: { double v = upper ? s->dmax : s->dmin; memcpy(t, &v, 8); n = 8; break; }
    case FL_TYPE_DECIMAL: n = fl_pqw_decimal_be(upper ? s->xmax : s->xmin, t); break;
    case FL_TYPE_STRING: case FL_TYPE_BINARY: case FL_TYPE_FIXED: {
        bool str = L->field->kind == FL_TYPE_STRING;
        if (upper) return fl_pq_trunc_upper(str, s->bmax.ptr, s->bmax.len, w->o.stats_truncate, b);
        return fl_pq_trunc_lower(str, s->bmin.ptr, s->bmin.len, w->o.stats_truncate, b) == FL_OK;
    }
    case FL_TYPE_UUID: {
        const fl_buf_t *x = upper ? &s->bmax : &s->bmin;
        return fl_buf_add(b, x->ptr, x->len) == FL_OK;
    }
    default: { /* long, time, timestamps */
        int64_t v = upper ? s->imax : s->imin;
        memcpy(t, &v, 8); n = 8;
        break;
    }
    }
    return fl_buf_add(b, t, n) == FL_OK;
}

fl_err_t fl_pq_writer_close(fl_pq_writer_t *w, fl_pq_file_info_t *info)
{
    if (info) memset(info, 0, sizeof *info);
    if (w->err) return w->err;
    if (w->closed) return FL_ERR_INVALID;
    fl_err_t e = flush_row_group(w);
    if (!e) {
        fl_pq_file_meta_t m;
        memset(&m, 0, sizeof m);
        m.version = 2;
        m.schema = w->se;
        m.n_schema = (uint32_t)w->n_se;
        m.num_rows = w->rows;
        m.row_groups = w->rgs;
        m.n_row_groups = (uint32_t)w->n_rgs;
        m.kv = w->kv;
        m.n_kv = w->n_kv;
        m.created_by.ptr = w->created_by;
        m.created_by.len = strlen(w->created_by);
        m.n_column_orders = (uint32_t)w->n_leaves;
        fl_buf_reset(&w->hdr);
        e = fl_pq_file_meta_encode(&m, &w->hdr);
        unsigned char tail[8];
        put_le32(tail, (uint32_t)w->hdr.len);
        memcpy(tail + 4, "PAR1", 4);
        if (!e && w->hdr.len > UINT32_MAX) e = FL_ERR_TOO_LARGE;
        if (!e) e = out(w, w->hdr.ptr, w->hdr.len);
        if (!e) e = out(w, tail, 8);
    }
    if (e) {
        w->err = e;
        return e;
    }
    w->closed = true;
    if (!info) return FL_OK;
    info->record_count = w->rows;
    info->file_size = w->pos;
    info->n_split_offsets = w->n_rgs;
    info->split_offsets = fl_calloc(w->n_rgs ? w->n_rgs : 1, sizeof *info->split_offsets);
    for (size_t g = 0; g < w->n_rgs; g++) info->split_offsets[g] = w->rgs[g].file_offset;
    info->n_metrics = w->n_leaves;
    info->metrics = fl_calloc(w->n_leaves ? w->n_leaves : 1, sizeof *info->metrics);
    for (size_t i = 0; i < w->n_leaves; i++) {
        const leaf_t *L = &w->leaves[i];
        fl_col_metrics_t *c = &info->metrics[i];
        c->field_id = L->field->id;
        c->has_column_size = c->has_value_count = c->has_null_count = true;
        c->column_size = L->f_size;
        c->value_count = L->f_values;
        c->null_count = L->f_nulls;
        if (L->st == ST_FLT) {
            c->has_nan_count = true;
            c->nan_count = L->f_nans;
        }
        fl_buf_init(&c->lower, 0);
        fl_buf_init(&c->upper, 0);
        if (L->in_list || !L->fs.has) continue;
        c->has_lower = iceberg_bound(w, L, false, &c->lower);
        c->has_upper = iceberg_bound(w, L, true, &c->upper);
        if (!c->has_lower) fl_buf_free(&c->lower);
        if (!c->has_upper) fl_buf_free(&c->upper);
    }
    return FL_OK;
}

void fl_pq_file_info_free(fl_pq_file_info_t *fi)
{
    if (!fi) return;
    free(fi->split_offsets);
    fl_col_metrics_free(fi->metrics, fi->n_metrics);
    memset(fi, 0, sizeof *fi);
}
