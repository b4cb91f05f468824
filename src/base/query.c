/* Query strings (see query.h). */
#include "base/query.h"
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"

fl_err_t fl_query_decode(const char *p, size_t n, bool plus_space, size_t cap, char **out)
{
    fl_buf_t b;
    fl_buf_init(&b, cap);
    fl_err_t e = fl_uri_decode(fl_slice(p, n), plus_space, &b);
    if (!e && !b.ptr) e = fl_buf_add(&b, "", 0);
    if (!e && memchr(b.ptr, 0, b.len)) e = FL_ERR_INVALID;
    if (e) {
        fl_buf_free(&b);
        return e;
    }
    *out = fl_buf_steal(&b);
    return FL_OK;
}

fl_err_t fl_query_parse(const char *q, size_t len, fl_query_t *out)
{
    out->n = 0;
    if (!q) return FL_OK;
    const char *p = q, *end = q + len;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *seg_end = amp ? amp : end;
        if (seg_end > p) {
            fl_err_t e = FL_ERR_TOO_LARGE;
            const char *eq = memchr(p, '=', (size_t)(seg_end - p));
            char *n = NULL, *v = NULL;
            if (out->n < FL_QUERY_MAX_PARAMS &&
                !(e = fl_query_decode(p, (size_t)((eq ? eq : seg_end) - p), true, FL_QUERY_MAX_NAME_BYTES, &n)))
                e = fl_query_decode(eq ? eq + 1 : seg_end, eq ? (size_t)(seg_end - eq - 1) : 0, true,
                                    FL_HTTP_MAX_TARGET_BYTES, &v);
            if (e) {
                free(n);
                fl_query_free(out);
                return e;
            }
            out->p[out->n].name = n;
            out->p[out->n].value = v;
            out->n++;
        }
        p = seg_end + 1;
    }
    return FL_OK;
}

const char *fl_query_get(const fl_query_t *q, const char *name)
{
    for (int i = 0; i < q->n; i++)
        if (!strcmp(q->p[i].name, name)) return q->p[i].value;
    return NULL;
}

void fl_query_free(fl_query_t *q)
{
    for (int i = 0; i < q->n; i++) {
        free(q->p[i].name);
        free(q->p[i].value);
    }
    q->n = 0;
}
