/* Table ops over the REST client and table IO (see rest_ops.h). */
#include "iceberg/rest_ops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/mem.h"

static void copy_msg(char *err, size_t errlen, const fl_remote_error_t *re)
{
    if (err && errlen) snprintf(err, errlen, "%s", re->message);
}

static fl_err_t ops_load(void *ctx, json_t **metadata, char **location, char *err, size_t errlen)
{
    fl_rest_ops_ctx_t *c = ctx;
    fl_rest_table_t t;
    memset(&t, 0, sizeof t);
    fl_remote_error_t re;
    memset(&re, 0, sizeof re);
    fl_err_t e = fl_rest_load_table(c->client, c->ident, &t, &re);
    if (e) {
        copy_msg(err, errlen, &re);
        return e;
    }
    *metadata = json_incref(t.metadata);
    *location = t.metadata_location ? fl_strdup(t.metadata_location) : NULL;
    fl_rest_table_free(&c->last);
    c->last = t;
    return FL_OK;
}

static fl_err_t ops_commit(void *ctx, json_t *requirements, json_t *updates, json_t **metadata,
                           int *http_status, char *err, size_t errlen)
{
    fl_rest_ops_ctx_t *c = ctx;
    fl_remote_error_t re;
    memset(&re, 0, sizeof re);
    bool unknown = false;
    fl_err_t e = fl_rest_commit(c->client, c->ident, requirements, updates, &c->last, &unknown, &re);
    if (!e) {
        *http_status = 200;
        *metadata = json_incref(c->last.metadata);
        return FL_OK;
    }
    copy_msg(err, errlen, &re);
    *http_status = re.status ? re.status : (unknown ? 0 : 400);
    if (e == FL_ERR_CONFLICT && re.status == 0) *http_status = 409;
    if (!unknown && *http_status >= 500) *http_status = 400; /* definite failure */
    return FL_OK; /* the status says what happened */
}

static fl_err_t ops_put(void *ctx, const char *uri, const void *p, size_t n)
{
    fl_rest_ops_ctx_t *c = ctx;
    fl_remote_error_t re;
    memset(&re, 0, sizeof re);
    fl_err_t e = fl_io_put(c->io, uri, p, n, &re);
    if (e) fprintf(stderr, "floe: writing %s: %s\n", uri, re.message);
    return e;
}

static fl_err_t ops_put_file(void *ctx, const char *uri, int fd, uint64_t size)
{
    fl_rest_ops_ctx_t *c = ctx;
    fl_remote_error_t re;
    memset(&re, 0, sizeof re);
    fl_err_t e = fl_io_put_fd(c->io, uri, fd, size, &re);
    if (e) fprintf(stderr, "floe: writing %s: %s\n", uri, re.message);
    return e;
}

static fl_err_t ops_get(void *ctx, const char *uri, fl_buf_t *out)
{
    fl_rest_ops_ctx_t *c = ctx;
    fl_remote_error_t re;
    memset(&re, 0, sizeof re);
    fl_err_t e = fl_io_get(c->io, uri, out, &re);
    if (e) fprintf(stderr, "floe: reading %s: %s\n", uri, re.message);
    return e;
}

static fl_err_t ops_del(void *ctx, const char *uri)
{
    fl_rest_ops_ctx_t *c = ctx;
    fl_remote_error_t re;
    memset(&re, 0, sizeof re);
    return fl_io_delete(c->io, uri, &re);
}

static fl_err_t ops_copy(void *ctx, const char *src, const char *dst)
{
    fl_rest_ops_ctx_t *c = ctx;
    fl_remote_error_t re;
    memset(&re, 0, sizeof re);
    fl_err_t e = fl_io_copy(c->io, src, dst, &re);
    if (e && e != FL_ERR_NOT_FOUND) fprintf(stderr, "floe: copying %s to %s: %s\n", src, dst, re.message);
    return e;
}

typedef struct list_adapter {
    fl_err_t (*fn)(void *arg, const char *uri, uint64_t size, int64_t mtime_ms);
    void *arg;
} list_adapter_t;

static fl_err_t list_one(void *arg, const char *location, const fl_io_stat_t *st)
{
    list_adapter_t *a = arg;
    return a->fn(a->arg, location, st->size, st->mtime_ms);
}

static fl_err_t ops_list(void *ctx, const char *prefix,
                         fl_err_t (*fn)(void *arg, const char *uri, uint64_t size, int64_t mtime_ms), void *arg)
{
    fl_rest_ops_ctx_t *c = ctx;
    fl_remote_error_t re;
    memset(&re, 0, sizeof re);
    list_adapter_t a = { fn, arg };
    fl_err_t e = fl_io_list(c->io, prefix, list_one, &a, &re);
    if (e && re.message[0]) fprintf(stderr, "floe: listing %s: %s\n", prefix, re.message);
    return e;
}

void fl_rest_table_ops(fl_rest_ops_ctx_t *ctx, fl_table_ops_t *ops)
{
    memset(ops, 0, sizeof *ops);
    ops->ctx = ctx;
    ops->load = ops_load;
    ops->commit = ops_commit;
    ops->put = ops_put;
    ops->put_file = ops_put_file;
    ops->get = ops_get;
    ops->del = ops_del;
    ops->list = ops_list;
    ops->copy = ops_copy;
}

void fl_rest_ops_ctx_free(fl_rest_ops_ctx_t *ctx)
{
    fl_rest_table_free(&ctx->last);
}
