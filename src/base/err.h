/* One status type for internal calls: 0 is success, negatives are failures.
 * Protocol errors (S3 codes, HTTP statuses) are built from these at the edge. */
#ifndef FL_BASE_ERR_H
#define FL_BASE_ERR_H

typedef enum fl_err {
    FL_OK = 0,
    FL_ERR_NOMEM = -1,        /* allocation refused for a peer-controlled size */
    FL_ERR_IO = -2,           /* file system or socket failure */
    FL_ERR_INVALID = -3,      /* malformed input or bad argument */
    FL_ERR_NOT_FOUND = -4,    /* no such object / key */
    FL_ERR_NO_BUCKET = -5,    /* no such bucket */
    FL_ERR_NO_UPLOAD = -6,    /* no such multipart upload */
    FL_ERR_EXISTS = -7,       /* already exists */
    FL_ERR_NOT_EMPTY = -8,    /* bucket not empty */
    FL_ERR_PRECONDITION = -9, /* If-Match / If-None-Match failed */
    FL_ERR_CONFLICT = -10,    /* lost a race; caller may retry */
    FL_ERR_INVALID_PART = -11,
    FL_ERR_PART_ORDER = -12,
    FL_ERR_TOO_SMALL = -13,   /* multipart part below the minimum size */
    FL_ERR_TOO_LARGE = -14,   /* over a limit in base/limits.h */
    FL_ERR_TIMEOUT = -15,
    FL_ERR_CLOSED = -16,      /* peer closed the connection */
    FL_ERR_PROTO = -17,       /* protocol violation by the peer */
    FL_ERR_DIGEST = -18,      /* checksum / digest mismatch */
    FL_ERR_AUTH = -19,        /* authentication failed */
    FL_ERR_INCOMPLETE = -20,  /* body shorter than declared */
    FL_ERR_INTERNAL = -21,    /* a dependency failed before anything changed (catalog layer) */
} fl_err_t;

/* Formats a message into err[errlen] (when err is non-NULL and errlen > 0)
 * and returns e, for "return fl_err_fmt(err, errlen, FL_ERR_INVALID, ...)". */
#include <stddef.h>
fl_err_t fl_err_fmt(char *err, size_t errlen, fl_err_t e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Short stable name of an error, for logs. Never NULL. */
const char *fl_err_str(fl_err_t e);

#endif
