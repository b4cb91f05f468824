#include "base/err.h"
#include <stdarg.h>
#include <stdio.h>

fl_err_t fl_err_fmt(char *err, size_t errlen, fl_err_t e, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return e;
}

const char *fl_err_str(fl_err_t e)
{
    switch (e) {
    case FL_OK: return "ok";
    case FL_ERR_NOMEM: return "out of memory";
    case FL_ERR_IO: return "i/o error";
    case FL_ERR_INVALID: return "invalid input";
    case FL_ERR_NOT_FOUND: return "not found";
    case FL_ERR_NO_BUCKET: return "no such bucket";
    case FL_ERR_NO_UPLOAD: return "no such upload";
    case FL_ERR_EXISTS: return "already exists";
    case FL_ERR_NOT_EMPTY: return "not empty";
    case FL_ERR_PRECONDITION: return "precondition failed";
    case FL_ERR_CONFLICT: return "conflict";
    case FL_ERR_INVALID_PART: return "invalid part";
    case FL_ERR_PART_ORDER: return "invalid part order";
    case FL_ERR_TOO_SMALL: return "entity too small";
    case FL_ERR_TOO_LARGE: return "entity too large";
    case FL_ERR_TIMEOUT: return "timeout";
    case FL_ERR_CLOSED: return "connection closed";
    case FL_ERR_PROTO: return "protocol error";
    case FL_ERR_DIGEST: return "digest mismatch";
    case FL_ERR_AUTH: return "authentication failed";
    case FL_ERR_INCOMPLETE: return "incomplete body";
    case FL_ERR_INTERNAL: return "internal error";
    }
    return "unknown error";
}
