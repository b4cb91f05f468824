/* In-memory table ops for unit tests (see mem_table.h). */
#include "mem_table.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/mem.h"
#include "base/time.h"
#include "format/parquet.h"
#include "iceberg/metadata.h"
#include "iceberg/scan.h"

int find_obj(mem_table_t *t, const char *uri)
{
    for (int i = 0; i < t->n_objs; i++)
        if (t->objs[i].uri && !strcmp(t->objs[i].uri, uri)) return i;
    return -1;
}

fl_err_t m_load(void *ctx, json_t **md, char **loc, char *err, size_t errlen)
{
    mem_table_t *t = ctx;
    *md = json_deep_copy(t->md);
    *loc = fl_strdup(t->location);
    return FL_OK;
}

fl_err_t m_commit(void *ctx, json_t *reqs, json_t *updates, json_t **md, int *status, char *err,
                         size_t errlen)
{
    mem_table_t *t = ctx;
    t->commits++;
    if (t->commit_mode == 2) { *status = 503; return FL_OK; }
    int st = fl_iceberg_check_requirements(t->md, reqs, err, errlen);
    if (st) { *status = st; if (st == 409) t->conflicts++; return FL_OK; }
    json_t *next = fl_iceberg_apply_updates(t->md, updates, t->location, &st, err, errlen);
    if (!next) { *status = st; return FL_OK; }
    json_decref(t->md);
    t->md = next;
    snprintf(t->location, sizeof t->location, "mem://wh/t/metadata/%05d.metadata.json", ++t->version);
    if (t->commit_mode == 1) { *status = 500; return FL_OK; }
    if (t->commit_mode == 3) { *status = 409; t->conflicts++; return FL_OK; }
    *status = 200;
    *md = json_deep_copy(next);
    return FL_OK;
}

fl_err_t m_put(void *ctx, const char *uri, const void *p, size_t n)
{
    mem_table_t *t = ctx;
    int i = find_obj(t, uri);
    if (i < 0) {
        if (t->n_objs == MAX_OBJS) return FL_ERR_TOO_LARGE;
        i = t->n_objs++;
        t->objs[i].uri = fl_strdup(uri);
        fl_buf_init(&t->objs[i].data, 0);
    }
    fl_buf_reset(&t->objs[i].data);
    return fl_buf_add(&t->objs[i].data, p, n);
}

fl_err_t m_put_file(void *ctx, const char *uri, int fd, uint64_t size)
{
    char *b = malloc(size ? size : 1);
    ssize_t got = pread(fd, b, size, 0);
    fl_err_t e = got == (ssize_t)size ? m_put(ctx, uri, b, size) : FL_ERR_IO;
    free(b);
    return e;
}

fl_err_t m_get(void *ctx, const char *uri, fl_buf_t *out)
{
    mem_table_t *t = ctx;
    int i = find_obj(t, uri);
    if (i < 0) return FL_ERR_NOT_FOUND;
    return fl_buf_add(out, t->objs[i].data.ptr, t->objs[i].data.len);
}

fl_err_t m_del(void *ctx, const char *uri)
{
    mem_table_t *t = ctx;
    int i = find_obj(t, uri);
    if (i >= 0) {
        free(t->objs[i].uri);
        t->objs[i].uri = NULL;
        fl_buf_free(&t->objs[i].data);
    }
    return FL_OK;
}

int live_objs(mem_table_t *t, const char *part)
{
    int n = 0;
    for (int i = 0; i < t->n_objs; i++)
        if (t->objs[i].uri && strstr(t->objs[i].uri, part)) n++;
    return n;
}

void mem_table_init(mem_table_t *t, fl_table_ops_t *ops)
{
    mem_table_init_spec(t, ops,
        "{\"spec-id\":0,\"fields\":["
        "{\"source-id\":2,\"field-id\":1000,\"name\":\"cat\",\"transform\":\"identity\"},"
        "{\"source-id\":5,\"field-id\":1001,\"name\":\"k_bucket\",\"transform\":\"bucket[8]\"}]}");
}

void mem_table_init_spec(mem_table_t *t, fl_table_ops_t *ops, const char *spec)
{
    mem_table_init_props(t, ops, spec, "{\"write.parquet.compression-codec\":\"snappy\"}");
}

void mem_table_init_props(mem_table_t *t, fl_table_ops_t *ops, const char *spec, const char *props)
{
    mem_table_init_schema(t, ops,
        "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
        "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
        "{\"id\":2,\"name\":\"cat\",\"required\":false,\"type\":\"string\"},"
        "{\"id\":3,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz\"},"
        "{\"id\":4,\"name\":\"s\",\"required\":false,\"type\":{\"type\":\"struct\",\"fields\":["
        "{\"id\":5,\"name\":\"k\",\"required\":false,\"type\":\"int\"}]}}]}",
        spec, props, NULL);
}

void mem_table_init_schema(mem_table_t *t, fl_table_ops_t *ops, const char *schema, const char *spec,
                           const char *props, const char *write_order)
{
    memset(t, 0, sizeof *t);
    char req[4096];
    snprintf(req, sizeof req, "{\"name\":\"t\",\"schema\":%s,\"partition-spec\":%s,\"properties\":%s%s%s}", schema,
             spec, props, write_order ? ",\"write-order\":" : "", write_order ? write_order : "");
    json_t *cr = json_loads(req, 0, NULL);
    int st;
    char err[256];
    t->md = fl_iceberg_new_metadata(cr, "mem://wh/t", &st, err, sizeof err);
    if (!t->md) fprintf(stderr, "mem_table: %s\n", err);
    json_decref(cr);
    snprintf(t->location, sizeof t->location, "mem://wh/t/metadata/00000.metadata.json");
    *ops = (fl_table_ops_t){ t, m_load, m_commit, m_put, m_put_file, m_get, m_del, NULL, NULL, NULL };
}

void mem_table_free(mem_table_t *t)
{
    for (int i = 0; i < t->n_objs; i++) { free(t->objs[i].uri); fl_buf_free(&t->objs[i].data); }
    json_decref(t->md);
}

/* rows first..first+n: cat = c<id % ncat>, s.k = id % 5, ts = id seconds */
void fill(fl_vec_t *b, int64_t first, int n, int ncat)
{
    char cat[16];
    for (int64_t i = first; i < first + n; i++) {
        fl_vec_append_struct(b);
        fl_vec_append_i64(&b->children[0], i);
        int len = snprintf(cat, sizeof cat, "c%d", (int)(i % ncat));
        if (i % 13 == 0) fl_vec_append_null(&b->children[1]);
        else fl_vec_append_bytes(&b->children[1], cat, (size_t)len);
        fl_vec_append_i64(&b->children[2], i * 1000000);
        if (i % 7 == 0) fl_vec_append_null(&b->children[3]);
        else { fl_vec_append_struct(&b->children[3]); fl_vec_append_i32(&b->children[3].children[0], (int32_t)(i % 5)); }
    }
}

/* Sum of ids over every live file of the current snapshot, and the row count. */
void scan_all(mem_table_t *t, fl_table_ops_t *ops, int64_t *rows, int64_t *idsum, size_t *files)
{
    fl_scan_plan_t plan;
    char err[256];
    *rows = *idsum = 0;
    *files = 0;
    if (fl_scan_plan(ops, t->md, -1, &plan, err, sizeof err)) { fprintf(stderr, "plan: %s\n", err); return; }
    *files = plan.n_files;
    for (size_t f = 0; f < plan.n_files; f++) {
        int i = find_obj(t, plan.files[f].file_path);
        if (i < 0) { *rows = -1; break; }
        fl_pq_reader_t *r;
        if (fl_pq_reader_open(&r, fl_pq_source_mem(t->objs[i].data.ptr, t->objs[i].data.len))) { *rows = -1; break; }
        fl_vec_t v;
        memset(&v, 0, sizeof v);
        for (bool done = false; !done;) {
            if (fl_pq_reader_next(r, &v, &done)) { *rows = -1; break; }
            for (size_t k = 0; !done && k < v.len; k++) *idsum += fl_vec_i64(&v.children[0], k);
            if (!done) *rows += (int64_t)v.len;
        }
        fl_vec_free(&v);
        fl_pq_reader_free(r);
    }
    fl_scan_plan_free(&plan);
}


static fl_err_t timed_load(void *ctx, json_t **md, char **loc, char *err, size_t errlen)
{
    mem_timed_t *s = ctx;
    fl_err_t e = s->inner.load(s->inner.ctx, md, loc, err, errlen);
    s->loaded_ms = fl_mono_ms();
    return e;
}

static fl_err_t timed_commit(void *ctx, json_t *reqs, json_t *ups, json_t **md, int *st, char *err, size_t errlen)
{
    mem_timed_t *s = ctx;
    if (++s->commits == 1 || fl_mono_ms() - s->loaded_ms >= s->window_ms) {
        snprintf(err, errlen, "Requirement failed: branch or tag main has changed");
        *st = 409;
        return FL_OK;
    }
    return s->inner.commit(s->inner.ctx, reqs, ups, md, st, err, errlen);
}

static fl_err_t timed_put(void *ctx, const char *u, const void *p, size_t n) { mem_timed_t *s = ctx; return s->inner.put(s->inner.ctx, u, p, n); }
static fl_err_t timed_put_file(void *ctx, const char *u, int fd, uint64_t n) { mem_timed_t *s = ctx; return s->inner.put_file(s->inner.ctx, u, fd, n); }
static fl_err_t timed_get(void *ctx, const char *u, fl_buf_t *o) { mem_timed_t *s = ctx; return s->inner.get(s->inner.ctx, u, o); }
static fl_err_t timed_del(void *ctx, const char *u) { mem_timed_t *s = ctx; return s->inner.del(s->inner.ctx, u); }

fl_table_ops_t mem_timed_ops(mem_timed_t *s)
{
    return (fl_table_ops_t){ s, timed_load, timed_commit, timed_put, timed_put_file, timed_get, timed_del,
                             NULL, NULL, NULL };
}
