/* A request's query string, split and decoded once: the one query parser of
 * the front doors. '+' decodes to a space (as S3, S3 Tables and the AWS SDKs
 * send it); a name without '=' has the value "". Names and values are
 * NUL-terminated copies owned by the fl_query_t; a name or value holding a NUL
 * (%00) is refused, so no C-string use downstream can be truncated by one.
 * SigV4's canonical query works on the raw bytes instead (auth/sigv4.c).
 * Pure and thread-safe; one fl_query_t per request. */
#ifndef FL_BASE_QUERY_H
#define FL_BASE_QUERY_H
#include <stdbool.h>
#include <stddef.h>
#include "base/err.h"
#include "base/limits.h"

typedef struct fl_query_param {
    char *name, *value;
} fl_query_param_t;

typedef struct fl_query {
    fl_query_param_t p[FL_QUERY_MAX_PARAMS];
    int n;
} fl_query_t;

/* Parses q[0..len) (the raw query after '?'; q may be NULL) into out, which
 * is initialised here. Empty segments ("a&&b") are skipped. FL_ERR_TOO_LARGE
 * past FL_QUERY_MAX_PARAMS parameters or a name or value over its cap,
 * FL_ERR_INVALID for a bad escape or a NUL. On failure out is empty. */
fl_err_t fl_query_parse(const char *q, size_t len, fl_query_t *out);
/* Percent-decodes p[0..n) ('+' a space when plus_space) into a new
 * NUL-terminated string *out (free()), at most cap bytes. FL_ERR_INVALID for a
 * bad escape or a NUL, FL_ERR_TOO_LARGE past cap. Used for path segments too. */
fl_err_t fl_query_decode(const char *p, size_t n, bool plus_space, size_t cap, char **out);
/* The first value of name, or NULL. Borrowed from q. */
const char *fl_query_get(const fl_query_t *q, const char *name);
void fl_query_free(fl_query_t *q);
#endif
