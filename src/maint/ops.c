/* Table ops over the table-bucket service and floe's object store (ops.h). */
#include "maint/ops.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/buf.h"
#include "base/checksum.h"
#include "base/log.h"
#include "base/mem.h"
#include "iceberg/io.h"

#define OPS_LIST_PAGE 1000
#define OPS_COPY_CHUNK (1 << 20)

static bool cancelled(const fl_maint_ops_ctx_t *c)
{
    return c->cancel && atomic_load(c->cancel);
}

/* s3://{warehouse}/key (or oss://) -> key (borrowed); NULL when the location is elsewhere. */
static const char *own_key(const fl_maint_ops_ctx_t *c, const char *uri)
{
    const char *rest = fl_io_s3_rest(uri); /* s3://, oss://, ...: the same objects */
    if (!rest) return NULL;
    size_t n = strlen(c->warehouse);
    if (strncmp(rest, c->warehouse, n) != 0 || rest[n] != '/' || !rest[n + 1]) return NULL;
    return rest + n + 1;
}

static fl_err_t ops_load(void *ctx, json_t **metadata, char **location, char *err, size_t errlen)
{
    fl_maint_ops_ctx_t *c = ctx;
    fl_table_t t;
    fl_err_t e = fl_catalog_table_get(fl_tablesvc_cfg(c->svc)->cat, c->bucket, c->ns, c->name, &t);
    if (!e && strcmp(t.id, c->id) != 0) e = FL_ERR_NOT_FOUND;
    if (e) {
        snprintf(err, errlen, "table %s.%s: %s", c->ns, c->name, e == FL_ERR_NOT_FOUND ? "not found" : "catalog error");
        return e;
    }
    fl_tmeta_t *m = NULL;
    if ((e = fl_tablesvc_load(c->svc, &t, &m, err, errlen))) return e;
    /* the cached JSON is shared and never modified: callers get their own copy */
    *metadata = json_deep_copy(fl_tmeta_json(m));
    *location = fl_strdup(t.metadata_location);
    fl_tmeta_release(m);
    return FL_OK;
}

static fl_err_t ops_commit(void *ctx, json_t *requirements, json_t *updates, json_t **metadata,
                           int *http_status, char *err, size_t errlen)
{
    fl_maint_ops_ctx_t *c = ctx;
    if (cancelled(c)) {
        *http_status = 400;
        snprintf(err, errlen, "maintenance job cancelled (shutting down or lease lost)");
        return FL_OK;
    }
    fl_tablesvc_change_t ch = { .ns = c->ns, .name = c->name, .requirements = requirements, .updates = updates };
    fl_tablesvc_commit_t cm = { .bucket = c->bucket, .principal = c->principal ? c->principal : "maintenance",
                                .keep_refs = true, .locked = c->held };
    fl_err_t e = fl_tablesvc_commit(c->svc, &cm, &ch, 1, err, errlen);
    switch (e) {
    case FL_OK:
        *http_status = 200;
        c->commits++;
        if (ch.result) *metadata = json_deep_copy(fl_tmeta_json(ch.result));
        fl_tmeta_release(ch.result);
        break;
    case FL_ERR_CONFLICT: *http_status = 409; break;
    case FL_ERR_NOT_FOUND: *http_status = 404; break;
    case FL_ERR_IO: *http_status = 500; break;       /* the swap's outcome is unknown */
    default: *http_status = 400; break;              /* failed before anything changed */
    }
    return FL_OK; /* the status says what happened */
}

static void ops_hold(void *ctx, bool on)
{
    fl_maint_ops_ctx_t *c = ctx;
    if (on == c->held) return;
    if (on) fl_tablesvc_lock(c->svc, c->bucket, c->ns, c->name);
    else fl_tablesvc_unlock(c->svc, c->bucket, c->ns, c->name);
    c->held = on;
}

/* Publishes a written blob as key with its MD5 ETag. */
static fl_err_t publish(fl_maint_ops_ctx_t *c, fl_blob_w_t *w, const char *key, const unsigned char md5[16])
{
    fl_obj_meta_t meta = { .size = fl_blob_w_size(w), .headers = "content-type: application/octet-stream\n" };
    fl_hex(md5, 16, meta.etag);
    return fl_store_put(fl_tablesvc_cfg(c->svc)->store, w, c->warehouse, key, strlen(key), &meta, NULL);
}

static fl_err_t ops_put(void *ctx, const char *uri, const void *p, size_t n)
{
    fl_maint_ops_ctx_t *c = ctx;
    const char *key = own_key(c, uri);
    if (!key) return FL_ERR_INVALID;
    if (cancelled(c)) return FL_ERR_IO;
    fl_blob_w_t *w = NULL;
    fl_err_t e = fl_blob_w_open(fl_tablesvc_cfg(c->svc)->store, &w);
    if (!e) e = fl_blob_w_write(w, p, n);
    if (e) {
        fl_blob_w_abort(w);
        return e;
    }
    unsigned char md5[16];
    fl_md5(p, n, md5);
    return publish(c, w, key, md5);
}

static fl_err_t ops_put_file(void *ctx, const char *uri, int fd, uint64_t size)
{
    fl_maint_ops_ctx_t *c = ctx;
    const char *key = own_key(c, uri);
    if (!key) return FL_ERR_INVALID;
    if (cancelled(c)) return FL_ERR_IO;
    fl_blob_w_t *w = NULL;
    fl_err_t e = fl_blob_w_open(fl_tablesvc_cfg(c->svc)->store, &w);
    if (e) return e;
    fl_cksum_t ck;
    fl_cksum_init(&ck, FL_CK_MD5);
    char *chunk = fl_malloc(OPS_COPY_CHUNK);
    uint64_t off = 0;
    while (!e && off < size) {
        size_t want = size - off < OPS_COPY_CHUNK ? (size_t)(size - off) : OPS_COPY_CHUNK;
        ssize_t r = pread(fd, chunk, want, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            e = FL_ERR_IO;
            break;
        }
        fl_cksum_update(&ck, chunk, (size_t)r);
        e = fl_blob_w_write(w, chunk, (size_t)r);
        off += (uint64_t)r;
    }
    free(chunk);
    unsigned char md5[FL_CK_MAX_DIGEST];
    fl_cksum_final(&ck, md5);
    if (e) {
        fl_blob_w_abort(w);
        return e;
    }
    return publish(c, w, key, md5);
}

static fl_err_t ops_get(void *ctx, const char *uri, fl_buf_t *out)
{
    fl_maint_ops_ctx_t *c = ctx;
    const char *key = own_key(c, uri);
    if (!key) return FL_ERR_INVALID;
    fl_obj_t *o = NULL;
    fl_err_t e = fl_store_get(fl_tablesvc_cfg(c->svc)->store, c->warehouse, key, strlen(key), &o);
    if (e) return e == FL_ERR_NO_BUCKET ? FL_ERR_NOT_FOUND : e;
    if (out->cap && out->len + (uint64_t)o->meta.size > out->cap) e = FL_ERR_TOO_LARGE;
    if (!e) e = fl_buf_reserve(out, (size_t)o->meta.size);
    for (size_t i = 0; !e && i < o->nsegs; i++) {
        int64_t got = 0;
        while (got < o->segs[i].len) {
            ssize_t r = fl_obj_seg_read(o, i, out->ptr + out->len, (size_t)(o->segs[i].len - got), got);
            if (r <= 0) {
                e = FL_ERR_IO;
                break;
            }
            got += r;
            out->len += (size_t)r;
        }
    }
    if (out->ptr) out->ptr[out->len] = 0;
    fl_obj_close(o);
    return e;
}

/* A copy inside the table's warehouse (unreferenced-file removal moves objects to and from
 * its noncurrent prefix): the source's blobs are copied into a new blob and published with
 * the source's ETag and headers. */
static fl_err_t ops_copy(void *ctx, const char *src, const char *dst)
{
    fl_maint_ops_ctx_t *c = ctx;
    const char *skey = own_key(c, src);
    if (!skey) return FL_ERR_INVALID;
    const char *dkey = own_key(c, dst);
    fl_err_t e = dkey ? FL_OK : FL_ERR_INVALID;
    if (!e && cancelled(c)) e = FL_ERR_IO;
    fl_store_t *store = fl_tablesvc_cfg(c->svc)->store;
    fl_obj_t *o = NULL;
    fl_blob_w_t *w = NULL;
    if (!e && (e = fl_store_get(store, c->warehouse, skey, strlen(skey), &o)) == FL_ERR_NO_BUCKET) e = FL_ERR_NOT_FOUND;
    if (!e) e = fl_blob_w_open(store, &w);
    for (size_t i = 0; !e && i < o->nsegs; i++) e = fl_blob_w_copy_seg(w, o, i, 0, o->segs[i].len);
    if (!e) {
        fl_obj_meta_t meta = { .size = fl_blob_w_size(w), .headers = o->meta.headers };
        memcpy(meta.etag, o->meta.etag, sizeof meta.etag);
        e = fl_store_put(store, w, c->warehouse, dkey, strlen(dkey), &meta, NULL);
        w = NULL;
    }
    fl_blob_w_abort(w);
    if (o) fl_obj_close(o);
    return e;
}

static fl_err_t ops_del(void *ctx, const char *uri)
{
    fl_maint_ops_ctx_t *c = ctx;
    const char *key = own_key(c, uri);
    if (!key) return FL_ERR_INVALID;
    fl_err_t e = fl_store_delete(fl_tablesvc_cfg(c->svc)->store, c->warehouse, key, strlen(key), NULL);
    if (e == FL_ERR_NO_BUCKET) e = FL_OK; /* the table went away with its warehouse */
    if (!e) c->objects_deleted++;
    return e;
}

static fl_err_t ops_list(void *ctx, const char *prefix,
                         fl_err_t (*fn)(void *arg, const char *uri, uint64_t size, int64_t mtime_ms), void *arg)
{
    fl_maint_ops_ctx_t *c = ctx;
    const char *kp = own_key(c, prefix);
    char whole[80];
    const char *pr = fl_io_s3_rest(prefix);
    snprintf(whole, sizeof whole, "%s/", c->warehouse);
    if (!kp && (!pr || strcmp(pr, whole) != 0)) return FL_ERR_INVALID;
    if (!kp) kp = "";
    fl_buf_t loc;
    fl_buf_init(&loc, 0);
    char *after = NULL;
    fl_err_t e = FL_OK;
    for (;;) {
        fl_list_res_t r = { 0 };
        e = fl_store_list(fl_tablesvc_cfg(c->svc)->store, c->warehouse, kp, NULL, after, OPS_LIST_PAGE, &r);
        if (e == FL_ERR_NO_BUCKET) e = FL_OK;
        for (size_t i = 0; !e && i < r.nents; i++) {
            fl_buf_reset(&loc);
            fl_buf_printf(&loc, "s3://%s/%s", c->warehouse, r.ents[i].key);
            e = fn(arg, loc.ptr, (uint64_t)r.ents[i].size, r.ents[i].mtime_ms);
        }
        bool more = !e && r.truncated && r.next_after;
        free(after);
        after = more ? fl_strdup(r.next_after) : NULL;
        fl_list_res_free(&r);
        if (!more) break;
    }
    free(after);
    fl_buf_free(&loc);
    return e;
}

fl_err_t fl_maint_table_ops(fl_maint_ops_ctx_t *ctx, fl_tablesvc_t *svc, const fl_table_t *t, fl_table_ops_t *ops)
{
    memset(ctx, 0, sizeof *ctx);
    memset(ops, 0, sizeof *ops);
    char wb[64], id[40];
    if (!fl_tablesvc_warehouse_of(t->warehouse, wb, id) || strlen(t->warehouse) != 5 + strlen(wb))
        return FL_ERR_INVALID;
    ctx->svc = svc;
    fl_strlcpy(ctx->bucket, t->bucket, sizeof ctx->bucket);
    fl_strlcpy(ctx->ns, t->ns, sizeof ctx->ns);
    fl_strlcpy(ctx->name, t->name, sizeof ctx->name);
    fl_strlcpy(ctx->id, t->id, sizeof ctx->id);
    fl_strlcpy(ctx->warehouse, wb, sizeof ctx->warehouse);
    ops->ctx = ctx;
    ops->load = ops_load;
    ops->commit = ops_commit;
    ops->put = ops_put;
    ops->put_file = ops_put_file;
    ops->get = ops_get;
    ops->del = ops_del;
    ops->list = ops_list;
    ops->copy = ops_copy;
    ops->hold = ops_hold;
    return FL_OK;
}
