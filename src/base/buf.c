#include "base/buf.h"
#include "base/mem.h"
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

fl_slice_t fl_slice_cstr(const char *s) { return (fl_slice_t){ s, s ? strlen(s) : 0 }; }

bool fl_slice_eq(fl_slice_t a, const char *c)
{
    size_t n = strlen(c);
    return a.len == n && memcmp(a.ptr, c, n) == 0;
}

bool fl_slice_ieq(fl_slice_t a, const char *c)
{
    size_t n = strlen(c);
    if (a.len != n) return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char x = (unsigned char)a.ptr[i], y = (unsigned char)c[i];
        if (x >= 'A' && x <= 'Z') x += 32;
        if (y >= 'A' && y <= 'Z') y += 32;
        if (x != y) return false;
    }
    return true;
}

fl_slice_t fl_slice_trim(fl_slice_t s)
{
    while (s.len && (s.ptr[0] == ' ' || s.ptr[0] == '\t')) s.ptr++, s.len--;
    while (s.len && (s.ptr[s.len - 1] == ' ' || s.ptr[s.len - 1] == '\t')) s.len--;
    return s;
}

void fl_buf_init(fl_buf_t *b, size_t cap) { *b = (fl_buf_t){ .cap = cap }; }

void fl_buf_free(fl_buf_t *b)
{
    free(b->ptr);
    b->ptr = NULL;
    b->len = b->alloc = 0;
}

void fl_buf_reset(fl_buf_t *b)
{
    b->len = 0;
    if (b->ptr) b->ptr[0] = 0;
}

fl_err_t fl_buf_reserve(fl_buf_t *b, size_t extra)
{
    if (extra > SIZE_MAX / 2 - b->len) return FL_ERR_TOO_LARGE;
    size_t need = b->len + extra + 1;
    if (b->cap && need - 1 > b->cap) return FL_ERR_TOO_LARGE;
    if (need <= b->alloc) return FL_OK;
    size_t n = b->alloc ? b->alloc * 2 : 64;
    while (n < need) n *= 2;
    if (b->cap && n > b->cap + 1) n = b->cap + 1;
    char *p = realloc(b->ptr, n);
    if (!p) return FL_ERR_NOMEM;
    b->ptr = p;
    b->alloc = n;
    return FL_OK;
}

fl_err_t fl_buf_add(fl_buf_t *b, const void *p, size_t n)
{
    fl_err_t e = fl_buf_reserve(b, n);
    if (e) return e;
    if (n) memcpy(b->ptr + b->len, p, n);
    b->len += n;
    b->ptr[b->len] = 0;
    return FL_OK;
}

fl_err_t fl_buf_adds(fl_buf_t *b, const char *s) { return fl_buf_add(b, s, strlen(s)); }
fl_err_t fl_buf_addc(fl_buf_t *b, char c) { return fl_buf_add(b, &c, 1); }

fl_err_t fl_buf_vprintf(fl_buf_t *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return FL_ERR_INVALID;
    fl_err_t e = fl_buf_reserve(b, (size_t)n);
    if (e) return e;
    vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return FL_OK;
}

fl_err_t fl_buf_printf(fl_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fl_err_t e = fl_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return e;
}

char *fl_buf_steal(fl_buf_t *b)
{
    char *p = b->ptr ? b->ptr : fl_strdup("");
    b->ptr = NULL;
    b->len = b->alloc = 0;
    return p;
}

void fl_hex(const unsigned char *in, size_t n, char *out)
{
    static const char h[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = h[in[i] >> 4];
        out[2 * i + 1] = h[in[i] & 15];
    }
    out[2 * n] = 0;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t fl_base64(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63];
        out[o++] = b64[v & 63];
    }
    if (i < n) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0);
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = 0;
    return o;
}

static int b64v(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
}

long fl_base64_decode(const char *in, size_t n, unsigned char *out, size_t cap)
{
    while (n && in[n - 1] == '=') n--;
    if (n % 4 == 1) return -1;
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64v((unsigned char)in[i]);
        if (v < 0) return -1;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= cap) return -1;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    return (long)o;
}

static int hexv(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

fl_err_t fl_uri_decode(fl_slice_t in, bool plus_space, fl_buf_t *out)
{
    fl_err_t e = fl_buf_reserve(out, in.len);
    if (e) return e;
    for (size_t i = 0; i < in.len; i++) {
        char c = in.ptr[i];
        if (c == '%') {
            if (i + 2 >= in.len) return FL_ERR_INVALID;
            int a = hexv((unsigned char)in.ptr[i + 1]), b = hexv((unsigned char)in.ptr[i + 2]);
            if (a < 0 || b < 0) return FL_ERR_INVALID;
            c = (char)(a << 4 | b);
            i += 2;
        } else if (c == '+' && plus_space) {
            c = ' ';
        }
        out->ptr[out->len++] = c;
    }
    out->ptr[out->len] = 0;
    return FL_OK;
}

fl_err_t fl_uri_encode(fl_slice_t in, bool keep_slash, fl_buf_t *out)
{
    static const char h[] = "0123456789ABCDEF";
    for (size_t i = 0; i < in.len; i++) {
        unsigned char c = (unsigned char)in.ptr[i];
        bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/');
        fl_err_t e;
        if (plain) {
            e = fl_buf_addc(out, (char)c);
        } else {
            char t[3] = { '%', h[c >> 4], h[c & 15] };
            e = fl_buf_add(out, t, 3);
        }
        if (e) return e;
    }
    if (!out->ptr) return fl_buf_add(out, "", 0);
    return FL_OK;
}
