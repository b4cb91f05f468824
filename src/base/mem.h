/* Small allocations abort on out-of-memory through these wrappers; sizes a
 * peer controls go through fl_buf caps or plain malloc with a checked result. */
#ifndef FL_BASE_MEM_H
#define FL_BASE_MEM_H
#include <stddef.h>

void *fl_malloc(size_t n);
void *fl_calloc(size_t n, size_t sz);
void *fl_realloc(void *p, size_t n);
char *fl_strdup(const char *s);
char *fl_strndup(const char *s, size_t n);
/* Copy src into dst of size dstsz, always NUL-terminating; returns strlen(src). */
size_t fl_strlcpy(char *dst, const char *src, size_t dstsz);

#endif
