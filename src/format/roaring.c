/* Portable Roaring bitmaps, read only (see roaring.h). */
#include "format/roaring.h"
#include <stdlib.h>
#include <string.h>
#include "base/limits.h"
#include "base/mem.h"

#define COOKIE_NO_RUN 12346u
#define COOKIE_RUN 12347u
#define NO_OFFSET_THRESHOLD 4u
#define ARRAY_MAX 4096u
#define BITMAP_BYTES 8192u

typedef struct rd {
    const uint8_t *p;
    size_t len, at;
} rd_t;

static bool need(const rd_t *r, size_t n) { return r->len - r->at >= n; }
static uint16_t u16at(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t u32at(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* One 32-bit portable bitmap at r->at whose values' high 32 bits are key. */
static fl_err_t parse32(rd_t *r, uint32_t key, fl_roaring64_t *out, char *err, size_t errlen)
{
    size_t start = r->at;
    if (!need(r, 4)) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: truncated cookie");
    uint32_t cookie = u32at(r->p + r->at);
    r->at += 4;
    uint32_t n;
    const uint8_t *runflags = NULL;
    bool offsets;
    if ((cookie & 0xFFFF) == COOKIE_RUN) {
        n = (cookie >> 16) + 1;
        if (!need(r, (n + 7) / 8)) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: truncated run flags");
        runflags = r->p + r->at;
        r->at += (n + 7) / 8;
        offsets = n >= NO_OFFSET_THRESHOLD;
    } else if (cookie == COOKIE_NO_RUN) {
        if (!need(r, 4)) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: truncated container count");
        n = u32at(r->p + r->at);
        r->at += 4;
        if (n > 65536) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: %u containers (at most 65536)", n);
        offsets = true;
    } else {
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: unknown cookie 0x%08x", cookie);
    }
    if (!need(r, (size_t)n * 4 + (offsets ? (size_t)n * 4 : 0)))
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: truncated header of %u containers", n);
    const uint8_t *desc = r->p + r->at;
    r->at += (size_t)n * 4;
    const uint8_t *offs = offsets ? r->p + r->at : NULL;
    if (offsets) r->at += (size_t)n * 4;
    out->c = fl_realloc(out->c, (out->n + n + 1) * sizeof *out->c);
    for (uint32_t i = 0; i < n; i++) {
        uint16_t k = u16at(desc + 4 * i);
        uint32_t card = (uint32_t)u16at(desc + 4 * i + 2) + 1;
        if (i && k <= u16at(desc + 4 * (i - 1)))
            return fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: container keys not ascending");
        if (offs && u32at(offs + 4 * i) != r->at - start)
            return fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: container %u offset %u, expected %zu", i,
                              u32at(offs + 4 * i), r->at - start);
        fl_roaring_container_t c = { .base = (uint64_t)key << 32 | (uint64_t)k << 16, .card = card };
        bool run = runflags && (runflags[i / 8] >> (i % 8) & 1);
        if (run) {
            if (!need(r, 2)) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: truncated run container");
            c.type = 2;
            c.n = u16at(r->p + r->at);
            r->at += 2;
            if (!c.n || !need(r, (size_t)c.n * 4))
                return fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: run container of %u runs", c.n);
            c.data = r->p + r->at;
            uint32_t sum = 0, next = 0;
            for (uint32_t x = 0; x < c.n; x++) {
                uint32_t s = u16at(c.data + 4 * x), l = (uint32_t)u16at(c.data + 4 * x + 2) + 1;
                if ((x && s < next) || s + l > 65536)
                    return fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: runs overlap or leave the container");
                next = s + l;
                sum += l;
            }
            c.card = sum; /* the header's cardinality is advisory for runs */
            r->at += (size_t)c.n * 4;
        } else if (card <= ARRAY_MAX) {
            c.type = 0;
            c.n = card;
            if (!need(r, (size_t)card * 2)) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: truncated array container");
            c.data = r->p + r->at;
            for (uint32_t x = 1; x < card; x++)
                if (u16at(c.data + 2 * x) <= u16at(c.data + 2 * (x - 1)))
                    return fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: array values not ascending");
            r->at += (size_t)card * 2;
        } else {
            c.type = 1;
            if (!need(r, BITMAP_BYTES)) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: truncated bitmap container");
            c.data = r->p + r->at;
            uint32_t pop = 0;
            for (uint32_t b = 0; b < BITMAP_BYTES; b++) pop += (uint32_t)__builtin_popcount(c.data[b]);
            if (pop != card)
                return fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: bitmap container holds %u values, header says %u",
                                  pop, card);
            r->at += BITMAP_BYTES;
        }
        out->c[out->n++] = c;
        out->cardinality += c.card;
    }
    return FL_OK;
}

fl_err_t fl_roaring64_parse(fl_slice_t in, fl_roaring64_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    rd_t r = { (const uint8_t *)in.ptr, in.len, 0 };
    fl_err_t e = FL_OK;
    if (!need(&r, 8)) { e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: %zu bytes (no bitmap count)", in.len); goto out; }
    uint64_t nb = (uint64_t)u32at(r.p) | (uint64_t)u32at(r.p + 4) << 32;
    r.at = 8;
    /* each 32-bit bitmap takes at least 12 bytes (key, cookie, count) */
    if (nb > (r.len - r.at) / 12) {
        e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: %llu bitmaps in %zu bytes", (unsigned long long)nb, in.len);
        goto out;
    }
    int64_t prev = -1;
    for (uint64_t b = 0; b < nb && !e; b++) {
        if (!need(&r, 4)) { e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: truncated key"); break; }
        uint32_t key = u32at(r.p + r.at);
        r.at += 4;
        if ((int64_t)key <= prev) { e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: keys not ascending"); break; }
        if (key & 0x80000000u) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: key %u (positions must be below 2^63)", key);
            break;
        }
        prev = key;
        e = parse32(&r, key, out, err, errlen);
    }
    if (!e && r.at != r.len)
        e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "roaring bitmap: %zu bytes after the last bitmap", r.len - r.at);
out:
    if (e) fl_roaring64_free(out);
    return e;
}

bool fl_roaring64_contains(const fl_roaring64_t *r, uint64_t x)
{
    uint64_t base = x & ~(uint64_t)0xFFFF;
    uint16_t lo = (uint16_t)(x & 0xFFFF);
    size_t a = 0, b = r->n;
    while (a < b) {
        size_t m = (a + b) / 2;
        if (r->c[m].base < base) a = m + 1;
        else b = m;
    }
    if (a == r->n || r->c[a].base != base) return false;
    const fl_roaring_container_t *c = &r->c[a];
    if (c->type == 1) return c->data[lo / 8] >> (lo % 8) & 1;
    if (c->type == 0) {
        size_t l = 0, h = c->n;
        while (l < h) {
            size_t m = (l + h) / 2;
            if (u16at(c->data + 2 * m) < lo) l = m + 1;
            else h = m;
        }
        return l < c->n && u16at(c->data + 2 * l) == lo;
    }
    for (uint32_t i = 0; i < c->n; i++) {
        uint32_t s = u16at(c->data + 4 * i), l = (uint32_t)u16at(c->data + 4 * i + 2);
        if (lo < s) return false;
        if (lo <= s + l) return true;
    }
    return false;
}

static void push(int64_t **v, size_t *n, size_t *cap, uint64_t x)
{
    if (*n == *cap) *v = fl_realloc(*v, (*cap = *cap ? *cap * 2 : 256) * sizeof **v);
    (*v)[(*n)++] = (int64_t)x;
}

void fl_roaring64_values(const fl_roaring64_t *r, uint64_t limit, int64_t **v, size_t *n)
{
    size_t cap = *n;
    for (size_t i = 0; i < r->n && r->c[i].base < limit; i++) {
        const fl_roaring_container_t *c = &r->c[i];
        if (c->type == 0) {
            for (uint32_t x = 0; x < c->n; x++) {
                uint64_t y = c->base | u16at(c->data + 2 * x);
                if (y >= limit) return;
                push(v, n, &cap, y);
            }
        } else if (c->type == 1) {
            for (uint32_t x = 0; x < 65536; x++)
                if (c->data[x / 8] >> (x % 8) & 1) {
                    if ((c->base | x) >= limit) return;
                    push(v, n, &cap, c->base | x);
                }
        } else {
            for (uint32_t x = 0; x < c->n; x++) {
                uint32_t s = u16at(c->data + 4 * x), l = (uint32_t)u16at(c->data + 4 * x + 2);
                for (uint32_t y = s; y <= s + l; y++) {
                    if ((c->base | y) >= limit) return;
                    push(v, n, &cap, c->base | y);
                }
            }
        }
    }
}

void fl_roaring64_free(fl_roaring64_t *r)
{
    free(r->c);
    memset(r, 0, sizeof *r);
}
