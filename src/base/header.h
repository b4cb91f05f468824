/* One header of an HTTP message, as the server's parser leaves it and as the
 * SigV4 code reads and signs it. Pointers into a buffer the header does not
 * own (the request head, or the caller's strings); valid while that lives. */
#ifndef FL_BASE_HEADER_H
#define FL_BASE_HEADER_H
#include <stddef.h>

typedef struct fl_http_header {
    const char *name;   /* lower-cased in place by the parser */
    size_t name_len;
    const char *value;  /* leading/trailing whitespace trimmed */
    size_t value_len;
} fl_http_header_t;

#endif
