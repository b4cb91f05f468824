/* Buffers: a non-owning slice, and an owning growable buffer with a hard cap.
 * A buffer's cap bounds what a peer can make us allocate: growth past it fails
 * with FL_ERR_TOO_LARGE instead of allocating. */
#ifndef FL_BASE_BUF_H
#define FL_BASE_BUF_H

#include <stddef.h>
#include <stdarg.h>
#include <stdbool.h>
#include "base/err.h"

typedef struct fl_slice {
    const char *ptr;
    size_t len;
} fl_slice_t;

#define FL_SLICE(s) ((fl_slice_t){ (s), sizeof(s) - 1 })
static inline fl_slice_t fl_slice(const char *p, size_t n) { return (fl_slice_t){ p, n }; }
fl_slice_t fl_slice_cstr(const char *s);
bool fl_slice_eq(fl_slice_t a, const char *cstr);      /* exact */
bool fl_slice_ieq(fl_slice_t a, const char *cstr);     /* ASCII case-insensitive */
fl_slice_t fl_slice_trim(fl_slice_t s);                /* strip SP/HT at both ends */

typedef struct fl_buf {
    char *ptr;    /* always NUL-terminated when non-NULL */
    size_t len;
    size_t alloc;
    size_t cap;   /* max len; 0 = unlimited (only for sizes we control) */
} fl_buf_t;

/* Initialise an empty buffer that may grow to cap bytes (0 = no cap). */
void fl_buf_init(fl_buf_t *b, size_t cap);
void fl_buf_free(fl_buf_t *b);
void fl_buf_reset(fl_buf_t *b);  /* len = 0, keeps memory */
fl_err_t fl_buf_reserve(fl_buf_t *b, size_t extra);
fl_err_t fl_buf_add(fl_buf_t *b, const void *p, size_t n);
fl_err_t fl_buf_adds(fl_buf_t *b, const char *s);
fl_err_t fl_buf_addc(fl_buf_t *b, char c);
fl_err_t fl_buf_printf(fl_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
fl_err_t fl_buf_vprintf(fl_buf_t *b, const char *fmt, va_list ap);
/* Take ownership of the bytes (NUL-terminated); the buffer is left empty. */
char *fl_buf_steal(fl_buf_t *b);

/* Hex and base64 helpers. out must hold 2*n+1 / 4*((n+2)/3)+1 bytes. */
void fl_hex(const unsigned char *in, size_t n, char *out);
size_t fl_base64(const unsigned char *in, size_t n, char *out);
/* Decode base64 into out (cap bytes); returns decoded length or -1 if malformed/too long. */
long fl_base64_decode(const char *in, size_t n, unsigned char *out, size_t cap);

/* Percent-decoding of a URI component; '+' is kept literally unless plus_space.
 * Returns FL_ERR_INVALID on a bad escape. out gets a NUL terminator. */
fl_err_t fl_uri_decode(fl_slice_t in, bool plus_space, fl_buf_t *out);
/* Percent-encode every byte except A-Z a-z 0-9 - _ . ~ (and '/' when keep_slash). Upper-case hex. */
fl_err_t fl_uri_encode(fl_slice_t in, bool keep_slash, fl_buf_t *out);

#endif
