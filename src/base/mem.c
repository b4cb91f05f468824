#include "base/mem.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n)
{
    fprintf(stderr, "floe: out of memory allocating %zu bytes\n", n);
    abort();
}

void *fl_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}

void *fl_calloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) oom(n * sz);
    return p;
}

void *fl_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}

char *fl_strdup(const char *s)
{
    return fl_strndup(s, strlen(s));
}

char *fl_strndup(const char *s, size_t n)
{
    char *p = fl_malloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

size_t fl_strlcpy(char *dst, const char *src, size_t dstsz)
{
    size_t n = strlen(src);
    if (dstsz) {
        size_t c = n < dstsz - 1 ? n : dstsz - 1;
        memcpy(dst, src, c);
        dst[c] = 0;
    }
    return n;
}
