/* Parquet level/value encodings, decode side (see parquet_decode.h). The
 * bit-unpacking loops read an unaligned 64-bit little-endian window per value
 * while 8 bytes remain and fall back to byte-wise reads near the end. */
#include "format/parquet_decode.h"
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the Parquet decoder assumes a little-endian host"
#endif

static inline uint64_t load_le(const uint8_t *p, size_t avail)
{
    uint64_t w = 0;
    if (avail >= 8) {
        memcpy(&w, p, 8);
        return w;
    }
    for (size_t k = 0; k < avail; k++) w |= (uint64_t)p[k] << (8 * k);
    return w;
}

int fl_pq_bit_width(uint32_t max)
{
    int bw = 0;
    while (max) { bw++; max >>= 1; }
    return bw;
}

fl_err_t fl_pq_uvarint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (p >= end) return FL_ERR_INVALID;
        uint8_t b = *p++;
        if (shift == 63 && b > 1) return FL_ERR_INVALID;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return FL_OK;
        }
    }
    return FL_ERR_INVALID;
}

void fl_pq_unpack32(const uint8_t *p, size_t nbytes, int bw, uint32_t *out, size_t count)
{
    if (bw == 0) {
        memset(out, 0, count * sizeof *out);
        return;
    }
    uint64_t mask = bw >= 32 ? 0xffffffffu : ((1ull << bw) - 1);
    size_t bit = 0, i = 0;
    for (; i < count; i++, bit += (size_t)bw) {
        size_t b = bit >> 3;
        if (b + 8 > nbytes) break;
        uint64_t w;
        memcpy(&w, p + b, 8);
        out[i] = (uint32_t)((w >> (bit & 7)) & mask);
    }
    for (; i < count; i++, bit += (size_t)bw) {
        size_t b = bit >> 3;
        out[i] = (uint32_t)((load_le(p + b, b < nbytes ? nbytes - b : 0) >> (bit & 7)) & mask);
    }
}

void fl_pq_unpack8(const uint8_t *p, size_t nbytes, int bw, uint8_t *out, size_t count)
{
    if (bw == 0) {
        memset(out, 0, count);
        return;
    }
    size_t i = 0;
    if (bw == 1) {
        for (; i + 8 <= count && (i >> 3) < nbytes; i += 8) {
            uint8_t x = p[i >> 3];
            for (int k = 0; k < 8; k++) out[i + k] = (x >> k) & 1;
        }
    }
    uint64_t mask = (1ull << bw) - 1;
    size_t bit = i * (size_t)bw;
    for (; i < count; i++, bit += (size_t)bw) {
        size_t b = bit >> 3;
        if (b + 8 > nbytes) break;
        uint64_t w;
        memcpy(&w, p + b, 8);
        out[i] = (uint8_t)((w >> (bit & 7)) & mask);
    }
    for (; i < count; i++, bit += (size_t)bw) {
        size_t b = bit >> 3;
        out[i] = (uint8_t)((load_le(p + b, b < nbytes ? nbytes - b : 0) >> (bit & 7)) & mask);
    }
}

/* Up to 64-bit widths (delta miniblocks). */
static void unpack64(const uint8_t *p, size_t nbytes, int bw, uint64_t *out, size_t count)
{
    if (bw == 0) {
        memset(out, 0, count * sizeof *out);
        return;
    }
    if (bw <= 56) {
        uint64_t mask = (1ull << bw) - 1;
        size_t bit = 0;
        for (size_t i = 0; i < count; i++, bit += (size_t)bw) {
            size_t b = bit >> 3;
            out[i] = (load_le(p + b, b < nbytes ? nbytes - b : 0) >> (bit & 7)) & mask;
        }
        return;
    }
    size_t bit = 0;
    for (size_t i = 0; i < count; i++) {
        uint64_t v = 0;
        for (int k = 0; k < bw; k++, bit++) {
            size_t b = bit >> 3;
            uint64_t x = b < nbytes ? (p[b] >> (bit & 7)) & 1 : 0;
            v |= x << k;
        }
        out[i] = v;
    }
}

#define RLE_DECODE(NAME, T, UNPACK, MAXBW)                                                   \
    static fl_err_t NAME(const uint8_t *p, size_t n, int bw, T *out, size_t count,          \
                         size_t *used)                                                      \
    {                                                                                       \
        if (bw < 0 || bw > MAXBW) return FL_ERR_INVALID;                                    \
        const uint8_t *q = p, *end = p + n;                                                 \
        size_t got = 0;                                                                     \
        size_t vbytes = ((size_t)bw + 7) / 8;                                               \
        while (got < count) {                                                               \
            uint64_t h;                                                                     \
            if (fl_pq_uvarint(&q, end, &h)) return FL_ERR_INVALID;                          \
            size_t left = count - got, avail = (size_t)(end - q);                           \
            if (h & 1) {                                                                    \
                uint64_t groups = h >> 1;                                                   \
                uint64_t vals = groups > (UINT64_MAX >> 4) ? UINT64_MAX : groups * 8;       \
                size_t take = vals < left ? (size_t)vals : left;                            \
                size_t need = (take * (size_t)bw + 7) / 8;                                  \
                if (need > avail) return FL_ERR_INVALID;                                    \
                uint64_t runb = bw && groups > avail / (size_t)bw ? avail : groups * (uint64_t)bw; \
                UNPACK(q, avail, bw, out + got, take);                                      \
                q += runb;                                                                  \
                got += take;                                                                \
            } else {                                                                        \
                uint64_t run = h >> 1;                                                      \
                if (vbytes > avail) return FL_ERR_INVALID;                                  \
                uint64_t v = 0;                                                             \
                for (size_t k = 0; k < vbytes; k++) v |= (uint64_t)q[k] << (8 * k);         \
                q += vbytes;                                                                \
                if (bw < 64 && (v >> bw)) return FL_ERR_INVALID;                            \
                size_t take = run < left ? (size_t)run : left;                              \
                for (size_t k = 0; k < take; k++) out[got + k] = (T)v;                      \
                got += take;                                                                \
            }                                                                               \
        }                                                                                   \
        if (used) *used = (size_t)(q - p);                                                  \
        return FL_OK;                                                                       \
    }

RLE_DECODE(rle32, uint32_t, fl_pq_unpack32, 32)
RLE_DECODE(rle8, uint8_t, fl_pq_unpack8, 8)

fl_err_t fl_pq_rle_decode32(const uint8_t *p, size_t n, int bw, uint32_t *out, size_t count,
                            size_t *used)
{
    return rle32(p, n, bw, out, count, used);
}

static fl_err_t check_max8(const uint8_t *out, size_t count, int max, int bw)
{
    if (max < 0 || max >= 255 || max >= (1 << bw) - 1) return FL_OK; /* nothing wider fits */
    uint8_t m = 0;
    for (size_t i = 0; i < count; i++) m = out[i] > m ? out[i] : m;
    return m > max ? FL_ERR_INVALID : FL_OK;
}

fl_err_t fl_pq_rle_decode8(const uint8_t *p, size_t n, int bw, int max, uint8_t *out,
                           size_t count, size_t *used)
{
    fl_err_t e = rle8(p, n, bw, out, count, used);
    return e ? e : check_max8(out, count, max, bw);
}

fl_err_t fl_pq_bitpacked_msb8(const uint8_t *p, size_t n, int bw, int max, uint8_t *out,
                              size_t count, size_t *used)
{
    if (bw < 0 || bw > 8) return FL_ERR_INVALID;
    if (count > (SIZE_MAX - 7) / 8) return FL_ERR_INVALID;
    size_t need = (count * (size_t)bw + 7) / 8;
    if (need > n) return FL_ERR_INVALID;
    size_t bit = 0;
    for (size_t i = 0; i < count; i++) {
        unsigned v = 0;
        for (int k = 0; k < bw; k++, bit++)
            v = (v << 1) | ((p[bit >> 3] >> (7 - (bit & 7))) & 1);
        out[i] = (uint8_t)v;
    }
    if (used) *used = need;
    return check_max8(out, count, max, bw);
}

fl_err_t fl_pq_delta_decode(const uint8_t *p, size_t n, int64_t *out, size_t cap,
                            size_t *total, size_t *used)
{
    const uint8_t *q = p, *end = p + n;
    uint64_t block, nmini, tot, first;
    if (fl_pq_uvarint(&q, end, &block) || fl_pq_uvarint(&q, end, &nmini) ||
        fl_pq_uvarint(&q, end, &tot) || fl_pq_uvarint(&q, end, &first))
        return FL_ERR_INVALID;
    if (block == 0 || block % 128 || block > (1u << 20) || nmini == 0 || nmini > block ||
        block % nmini || (block / nmini) % 32)
        return FL_ERR_INVALID;
    if (tot > cap) return FL_ERR_INVALID;
    *total = (size_t)tot;
    if (!out) return FL_OK;
    size_t per = (size_t)(block / nmini);
    if (tot == 0) {
        *used = (size_t)(q - p);
        return FL_OK;
    }
    uint64_t prev = (uint64_t)((first >> 1) ^ -(first & 1));
    out[0] = (int64_t)prev;
    size_t got = 1;
    while (got < tot) {
        uint64_t mz;
        if (fl_pq_uvarint(&q, end, &mz)) return FL_ERR_INVALID;
        uint64_t min = (mz >> 1) ^ -(mz & 1);
        if ((uint64_t)(end - q) < nmini) return FL_ERR_INVALID;
        const uint8_t *bws = q;
        q += nmini;
        for (size_t m = 0; m < nmini && got < tot; m++) {
            int bw = bws[m];
            if (bw > 64) return FL_ERR_INVALID;
            size_t take = per < tot - got ? per : (size_t)tot - got;
            size_t full = per * (size_t)bw / 8, avail = (size_t)(end - q);
            size_t need = (take * (size_t)bw + 7) / 8;
            if (need > avail) return FL_ERR_INVALID;
            uint64_t *d = (uint64_t *)(out + got);
            unpack64(q, avail < full ? avail : full, bw, d, take);
            for (size_t k = 0; k < take; k++) {
                prev += min + d[k];
                d[k] = prev;
            }
            q += avail < full ? avail : full;
            got += take;
        }
    }
    *used = (size_t)(q - p);
    return FL_OK;
}

void fl_pq_bss_decode(const uint8_t *p, size_t count, size_t w, uint8_t *out)
{
    if (w == 4) {
        for (size_t i = 0; i < count; i++) {
            out[4 * i] = p[i];
            out[4 * i + 1] = p[count + i];
            out[4 * i + 2] = p[2 * count + i];
            out[4 * i + 3] = p[3 * count + i];
        }
        return;
    }
    for (size_t k = 0; k < w; k++) {
        const uint8_t *s = p + k * count;
        for (size_t i = 0; i < count; i++) out[i * w + k] = s[i];
    }
}

/* ---- level scans: 16 bytes at a time with GCC/Clang vector extensions ---- */

typedef uint8_t v16u8 __attribute__((vector_size(16)));

static inline v16u8 load16(const uint8_t *p)
{
    v16u8 x;
    memcpy(&x, p, 16);
    return x;
}

/* sum of the 16 byte lanes (each at most 255) */
static inline size_t lane_sum(v16u8 acc)
{
    uint64_t w[2];
    memcpy(w, &acc, 16);
    size_t s = 0;
    for (int k = 0; k < 2; k++) {
        uint64_t x = (w[k] & 0x00ff00ff00ff00ffull) + ((w[k] >> 8) & 0x00ff00ff00ff00ffull);
        s += (size_t)((x * 0x0001000100010001ull) >> 48);
    }
    return s;
}

size_t fl_pq_count_ge(const uint8_t *p, size_t n, uint8_t v)
{
    size_t c = 0, i = 0;
    v16u8 vv = (v16u8){ 0 } + v;
    while (n - i >= 16) {
        size_t blocks = (n - i) / 16;
        if (blocks > 255) blocks = 255;
        v16u8 acc = { 0 };
        for (size_t b = 0; b < blocks; b++, i += 16) acc -= (v16u8)(load16(p + i) >= vv);
        c += lane_sum(acc);
    }
    for (; i < n; i++) c += p[i] >= v;
    return c;
}

size_t fl_pq_mask_ge(const uint8_t *p, size_t n, uint8_t v, uint8_t *out)
{
    size_t c = 0, i = 0;
    v16u8 vv = (v16u8){ 0 } + v, one = (v16u8){ 0 } + 1;
    while (n - i >= 16) {
        size_t blocks = (n - i) / 16;
        if (blocks > 255) blocks = 255;
        v16u8 acc = { 0 };
        for (size_t b = 0; b < blocks; b++, i += 16) {
            v16u8 m = (v16u8)(load16(p + i) >= vv) & one;
            memcpy(out + i, &m, 16);
            acc += m;
        }
        c += lane_sum(acc);
    }
    for (; i < n; i++) {
        out[i] = p[i] >= v;
        c += out[i];
    }
    return c;
}

bool fl_pq_levels_disagree(const uint8_t *rep, const uint8_t *def, size_t n, const int16_t *rep_def,
                           int max_rep)
{
    for (int l = 1; l <= max_rep; l++) {
        if (rep_def[l] <= 0) continue; /* nothing is below it */
        uint8_t rd = rep_def[l] > 255 ? 255 : (uint8_t)rep_def[l];
        v16u8 lv = (v16u8){ 0 } + (uint8_t)l, dv = (v16u8){ 0 } + rd, bad = { 0 };
        size_t i = 0;
        for (; i + 16 <= n; i += 16)
            bad |= (v16u8)(load16(rep + i) == lv) & (v16u8)(load16(def + i) < dv);
        uint64_t w[2];
        memcpy(w, &bad, 16);
        if (w[0] | w[1]) return true;
        for (; i < n; i++)
            if (rep[i] == l && def[i] < rd) return true;
    }
    return false;
}
