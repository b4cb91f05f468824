/* Fast appends (see append.h). Rows are routed to one open Parquet file per
 * partition (staged in a temporary file, uploaded when rolled or committed);
 * the commit writes one manifest for the new files and a manifest list that
 * carries the parent's manifests over unchanged, then commits through the
 * table ops, re-basing the list on 409. */
#include "iceberg/append.h"
#include "iceberg/append_int.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include "base/uuid.h"
#include "iceberg/manifest.h"
#include "iceberg/metadata.h"
#include "iceberg/metrics_config.h"
#include "iceberg/schema.h"
#include "iceberg/transform.h"

#define DEFAULT_TARGET_FILE_BYTES (512LL * 1024 * 1024)
#define MAX_COMMIT_ATTEMPTS 16

typedef struct open_file {
    fl_pq_writer_t *w;
    int fd;
    char *tmp_path;
    fl_buf_t key;               /* serialized partition tuple */
    fl_ice_value_t *part;       /* owned copies (bytes allocated) */
    unsigned char **part_bytes; /* n_part, NULL where the value has no bytes */
    size_t n_part;
    fl_vec_t stage;             /* rows routed to this file from the current batch */
    uint64_t last_use;
    int64_t rows;
    uint64_t bytes_out;
} open_file_t;

struct fl_appender {
    fl_table_ops_t ops;
    fl_append_opts_t opts;
    json_t *md;
    char *md_location;
    char table_uuid[64];
    int format_version;
    fl_field_t schema;
    int32_t schema_id;
    fl_part_spec_t spec;
    bool partitioned;
    fl_pq_write_opts_t pq;
    fl_metrics_policy_t metrics;  /* write.metadata.metrics.* for the schema's leaves */
    char *schema_json;          /* footer iceberg.schema */
    fl_slice_t footer_kv[2];
    char *data_path, *metadata_path;
    int64_t target_bytes;
    open_file_t **open;         /* each allocated alone: writers keep a pointer as sink ctx */
    size_t n_open;
    uint64_t tick;
    fl_data_file_t *files;      /* closed and uploaded since the last commit */
    size_t n_files, cap_files;
    size_t n_adopted;           /* files[0, n_adopted) came from fl_append_add_files: never deleted here */
    int64_t rows;
    char write_uuid[37];
    uint64_t file_counter;
    fl_buf_t keybuf;            /* partition routing scratch: a row's key, */
    uint32_t *route;            /* each row's open-file index, */
    uint32_t *route_order;      /* rows grouped by file */
    size_t route_cap;
    struct commit_job *job;     /* the commit in the making (fl_append_prepare, or a commit), else NULL */
    int job_attempt;            /* attempts made on it (manifest lists written) */
};


const char *fl_append_prop(json_t *md, const char *key)
{
    json_t *p = json_object_get(json_object_get(md, "properties"), key);
    return json_is_string(p) ? json_string_value(p) : NULL;
}

int64_t fl_append_prop_i64(json_t *md, const char *key, int64_t def)
{
    const char *s = fl_append_prop(md, key);
    if (!s) return def;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return (errno || *end || v <= 0) ? def : (int64_t)v;
}

static char *join_path(const char *base, const char *rest)
{
    size_t n = strlen(base);
    while (n && base[n - 1] == '/') n--;
    size_t m = strlen(rest);
    char *s = fl_malloc(n + m + 2);
    memcpy(s, base, n);
    s[n] = '/';
    memcpy(s + n + 1, rest, m + 1);
    return s;
}

/* Bind the appender to metadata md (taken). */
static fl_err_t bind_metadata(fl_appender_t *a, json_t *md, char *err, size_t errlen)
{
    json_decref(a->md);
    a->md = md;
    json_int_t fv = json_integer_value(json_object_get(md, "format-version"));
    if (fv != 2 && fv != 3)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "append supports format-version 2 and 3 tables (this one is v%d)",
                          (int)fv);
    a->format_version = (int)fv;
    const char *uuid = json_string_value(json_object_get(md, "table-uuid"));
    snprintf(a->table_uuid, sizeof a->table_uuid, "%s", uuid ? uuid : "");
    return FL_OK;
}

static void free_open_file(open_file_t *f)
{
    fl_pq_writer_free(f->w);
    f->w = NULL;
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    if (f->tmp_path) unlink(f->tmp_path);
    free(f->tmp_path);
    f->tmp_path = NULL;
    fl_buf_free(&f->key);
    free(f->part);
    f->part = NULL;
    for (size_t i = 0; f->part_bytes && i < f->n_part; i++) free(f->part_bytes[i]);
    free(f->part_bytes);
    f->part_bytes = NULL;
    fl_vec_free(&f->stage);
}

fl_err_t fl_append_open(fl_appender_t **out, const fl_table_ops_t *ops, const fl_append_opts_t *opts,
                        char *err, size_t errlen)
{
    *out = NULL;
    fl_appender_t *a = fl_calloc(1, sizeof *a);
    a->ops = *ops;
    if (opts) a->opts = *opts;
    fl_buf_init(&a->keybuf, 0);
    json_t *md = NULL;
    fl_err_t e = ops->load(ops->ctx, &md, &a->md_location, err, errlen);
    if (e) goto fail;
    if ((e = bind_metadata(a, md, err, errlen))) goto fail;
    if ((e = fl_schema_from_metadata(a->md, -1, &a->schema, &a->schema_id, err, errlen))) goto fail;
    if ((e = fl_part_spec_from_metadata(a->md, -1, &a->schema, &a->spec, err, errlen))) goto fail;
    a->partitioned = !fl_part_spec_unpartitioned(&a->spec);

    /* Parquet options: the caller's, else the table's properties. */
    if (a->opts.parquet_set) {
        a->pq = a->opts.parquet;
    } else {
        fl_pq_write_opts_default(&a->pq);
        const char *codec = fl_append_prop(a->md, "write.parquet.compression-codec");
        if (codec && fl_codec_parse(codec, &a->pq.codec)) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "unsupported write.parquet.compression-codec \"%s\"", codec);
            goto fail;
        }
        a->pq.level = (int)fl_append_prop_i64(a->md, "write.parquet.compression-level", 0);
        a->pq.page_bytes = (size_t)fl_append_prop_i64(a->md, "write.parquet.page-size-bytes", (int64_t)a->pq.page_bytes);
        a->pq.row_group_bytes = (size_t)fl_append_prop_i64(a->md, "write.parquet.row-group-size-bytes", (int64_t)a->pq.row_group_bytes);
        a->pq.dict_page_bytes = (size_t)fl_append_prop_i64(a->md, "write.parquet.dict-size-bytes", (int64_t)a->pq.dict_page_bytes);
        if (a->opts.max_row_group_bytes && (!a->pq.row_group_bytes || a->pq.row_group_bytes > a->opts.max_row_group_bytes))
            a->pq.row_group_bytes = a->opts.max_row_group_bytes;
    }
    /* Metrics modes: the writer keeps bounds long enough for every column;
     * finish_file cuts them to each column's mode. */
    fl_metrics_policy_build(a->md, &a->schema, &a->metrics);
    a->pq.stats_truncate = fl_metrics_policy_writer_truncate(&a->metrics);
    if (a->opts.row_lineage) {
        fl_field_set(fl_field_add_child(&a->schema), FL_APPEND_ROW_ID_FIELD, "_row_id", false, FL_TYPE_LONG);
        fl_field_set(fl_field_add_child(&a->schema), FL_APPEND_LAST_UPDATED_FIELD, "_last_updated_sequence_number", false,
                     FL_TYPE_LONG);
    }
    a->target_bytes = a->opts.target_file_bytes > 0
                          ? a->opts.target_file_bytes
                          : fl_append_prop_i64(a->md, "write.target-file-size-bytes", DEFAULT_TARGET_FILE_BYTES);
    json_t *cur = NULL;
    json_t *schemas = json_object_get(a->md, "schemas");
    size_t i;
    json_t *s;
    json_array_foreach(schemas, i, s) {
        if (json_integer_value(json_object_get(s, "schema-id")) == a->schema_id) cur = s;
    }
    a->schema_json = cur ? json_dumps(cur, JSON_COMPACT) : NULL;
    if (a->schema_json) {
        a->footer_kv[0] = FL_SLICE("iceberg.schema");
        a->footer_kv[1] = fl_slice_cstr(a->schema_json);
        if (!a->pq.kv) { a->pq.kv = a->footer_kv; a->pq.n_kv = 1; }
    }
    const char *loc = json_string_value(json_object_get(a->md, "location"));
    if (!loc || !*loc) { e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "table metadata has no location"); goto fail; }
    const char *dp = fl_append_prop(a->md, "write.data.path");
    const char *mp = fl_append_prop(a->md, "write.metadata.path");
    a->data_path = dp ? fl_strdup(dp) : join_path(loc, "data");
    a->metadata_path = mp ? fl_strdup(mp) : join_path(loc, "metadata");
    fl_uuid4(a->write_uuid);
    *out = a;
    return FL_OK;
fail:
    fl_append_free(a);
    return e;
}

const fl_field_t *fl_append_schema(const fl_appender_t *a) { return &a->schema; }
json_t *fl_append_metadata(const fl_appender_t *a) { return a->md; }
int64_t fl_append_rows(const fl_appender_t *a) { return a->rows; }

int64_t fl_append_buffered(const fl_appender_t *a)
{
    int64_t n = 0;
    for (size_t i = 0; i < a->n_open; i++)
        if (a->open[i]->w) n += fl_pq_writer_buffered(a->open[i]->w);
    return n;
}

/* ---- partition routing ---- */

/* Vector of field id src inside batch (following struct children only);
 * *null_anc is set for row i if an enclosing struct is null. */
static const fl_vec_t *find_vec(const fl_vec_t *v, int32_t id, const fl_vec_t **chain, int *depth)
{
    for (uint32_t c = 0; c < v->n_children; c++) {
        const fl_vec_t *ch = &v->children[c];
        if (ch->field->id == id) { chain[(*depth)++] = ch; return ch; }
        if (ch->field->kind == FL_TYPE_STRUCT && *depth < 31) {
            chain[(*depth)++] = ch;
            const fl_vec_t *r = find_vec(ch, id, chain, depth);
            if (r) return r;
            (*depth)--;
        }
    }
    return NULL;
}

typedef struct part_src {
    const fl_vec_t *chain[32];
    int depth;
} part_src_t;

static fl_err_t partition_value(const part_src_t *ps, const fl_part_field_t *pf, size_t row,
                                fl_ice_value_t *out)
{
    for (int d = 0; d < ps->depth; d++)
        if (fl_vec_is_null(ps->chain[d], row)) { out->kind = FL_ICE_NULL; return FL_OK; }
    fl_ice_value_t in;
    fl_err_t e = fl_vec_ice_value(ps->chain[ps->depth - 1], row, &in);
    if (e) return e;
    return fl_ice_transform_apply(&pf->transform, &in, out);
}

void fl_append_key_append(fl_buf_t *k, const fl_ice_value_t *v)
{
    if (v->kind == FL_ICE_NULL) { fl_buf_addc(k, 0); return; }
    fl_buf_addc(k, 1);
    size_t at = k->len;
    uint32_t n = 0;
    fl_buf_add(k, &n, sizeof n);
    fl_ice_value_to_bytes(v, k);
    n = (uint32_t)(k->len - at - sizeof n);
    memcpy(k->ptr + at, &n, sizeof n);
}

static fl_err_t sink_write(void *ctx, const void *p, size_t n)
{
    open_file_t *f = ctx;
    const char *s = p;
    while (n) {
        ssize_t w = write(f->fd, s, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return FL_ERR_IO;
        }
        s += w;
        n -= (size_t)w;
        f->bytes_out += (uint64_t)w;
    }
    return FL_OK;
}

static fl_err_t start_file(fl_appender_t *a, open_file_t *f, char *err, size_t errlen)
{
    const char *dir = a->opts.tmp_dir ? a->opts.tmp_dir : getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/floe-append-XXXXXX", dir);
    f->fd = mkstemp(path);
    if (f->fd < 0) return fl_err_fmt(err, errlen, FL_ERR_IO, "cannot create a staging file in %s: %s", dir, strerror(errno));
    f->tmp_path = fl_strdup(path);
    f->bytes_out = 0;
    f->rows = 0;
    fl_err_t e = fl_pq_writer_open(&f->w, &a->schema, &a->pq, (fl_pq_sink_t){ sink_write, f });
    if (e) return fl_err_fmt(err, errlen, e, "cannot start a Parquet file: %s", fl_err_str(e));
    return FL_OK;
}

static void add_file(fl_appender_t *a, fl_data_file_t *df)
{
    if (a->n_files == a->cap_files) {
        a->cap_files = a->cap_files ? a->cap_files * 2 : 16;
        a->files = fl_realloc(a->files, a->cap_files * sizeof *a->files);
    }
    a->files[a->n_files++] = *df;
}

/* Close f's Parquet file, upload it, record the data file; f stays allocated
 * (w NULL) so it can start a new file for the same partition. */
static fl_err_t finish_file(fl_appender_t *a, open_file_t *f, char *err, size_t errlen)
{
    if (!f->w) return FL_OK;
    fl_pq_file_info_t info;
    memset(&info, 0, sizeof info);
    fl_err_t e = fl_pq_writer_close(f->w, &info);
    fl_pq_writer_free(f->w);
    f->w = NULL;
    if (e) { fl_pq_file_info_free(&info); return fl_err_fmt(err, errlen, e, "writing Parquet failed: %s", fl_err_str(e)); }
    if (info.record_count == 0) { fl_pq_file_info_free(&info); goto cleanup; }
    /* no fsync: the staging file is read back for the upload and then deleted; a
     * crash before the commit loses only input the caller still has (the sink
     * re-reads it from Kafka), so flushing it to disk bought nothing but wait */

    /* location: data path / partition path / name */
    fl_buf_t uri;
    fl_buf_init(&uri, 0);
    fl_buf_adds(&uri, a->data_path);
    if (uri.len && uri.ptr[uri.len - 1] != '/') fl_buf_addc(&uri, '/');
    if (a->partitioned) {
        size_t k = 0;
        for (size_t i = 0; i < a->spec.n_fields; i++) {
            const fl_part_field_t *pf = &a->spec.fields[i];
            if (k++) fl_buf_addc(&uri, '/');
            fl_ice_partition_path_append(&uri, pf->name, &pf->transform, &f->part[i]);
        }
        fl_buf_addc(&uri, '/');
    }
    fl_buf_printf(&uri, "%05" PRIu64 "-0-%s-%05" PRIu64 ".parquet", a->file_counter, a->write_uuid,
                  a->file_counter + 1);
    a->file_counter++;
    e = a->ops.put_file(a->ops.ctx, uri.ptr, f->fd, (uint64_t)info.file_size);
    if (e) {
        fl_err_fmt(err, errlen, e, "uploading %s failed: %s", uri.ptr, fl_err_str(e));
        fl_buf_free(&uri);
        fl_pq_file_info_free(&info);
        return e;
    }
    fl_data_file_t df;
    memset(&df, 0, sizeof df);
    df.content = 0;
    df.file_path = fl_buf_steal(&uri);
    df.file_format = fl_strdup("PARQUET");
    df.record_count = info.record_count;
    df.file_size_in_bytes = info.file_size;
    info.n_metrics = fl_metrics_policy_apply(&a->metrics, info.metrics, info.n_metrics);
    if (a->opts.row_lineage) { /* no metrics for the lineage columns (they are not the schema's) */
        size_t k = 0;
        for (size_t i = 0; i < info.n_metrics; i++) {
            if (info.metrics[i].field_id == FL_APPEND_ROW_ID_FIELD || info.metrics[i].field_id == FL_APPEND_LAST_UPDATED_FIELD)
            {
                fl_buf_free(&info.metrics[i].lower);
                fl_buf_free(&info.metrics[i].upper);
            }
            else
                info.metrics[k++] = info.metrics[i];
        }
        info.n_metrics = k;
    }
    df.metrics = info.metrics;
    df.n_metrics = info.n_metrics;
    df.split_offsets = info.split_offsets;
    df.n_split_offsets = info.n_split_offsets;
    info.metrics = NULL;
    info.n_metrics = 0;
    info.split_offsets = NULL;
    info.n_split_offsets = 0;
    fl_pq_file_info_free(&info);
    df.n_partition = a->spec.n_fields;
    df.partition = fl_calloc(df.n_partition ? df.n_partition : 1, sizeof *df.partition);
    for (size_t i = 0; i < a->spec.n_fields; i++) fl_data_file_set_partition(&df, i, &f->part[i]);
    add_file(a, &df);
cleanup:
    close(f->fd);
    f->fd = -1;
    unlink(f->tmp_path);
    free(f->tmp_path);
    f->tmp_path = NULL;
    return FL_OK;
}

/* Index of the open file for the partition key in a->keybuf, opening one. */
static fl_err_t file_for_key(fl_appender_t *a, const fl_ice_value_t *vals, size_t *idx, char *err,
                             size_t errlen)
{
    for (size_t i = 0; i < a->n_open; i++) {
        open_file_t *f = a->open[i];
        if (f->key.len == a->keybuf.len && !memcmp(f->key.ptr, a->keybuf.ptr, f->key.len)) {
            *idx = i;
            return FL_OK;
        }
    }
    int max_open = a->opts.max_open_files > 0 ? a->opts.max_open_files : 64;
    if (a->n_open >= (size_t)max_open) {
        /* close the least recently used partition's file */
        size_t lru = 0;
        for (size_t i = 1; i < a->n_open; i++)
            if (a->open[i]->last_use < a->open[lru]->last_use) lru = i;
        open_file_t *f = a->open[lru];
        if (f->stage.len) {
            fl_err_t e = fl_pq_writer_write(f->w, &f->stage);
            if (e) return fl_err_fmt(err, errlen, e, "writing Parquet failed: %s", fl_err_str(e));
            fl_vec_clear(&f->stage);
        }
        fl_err_t e = finish_file(a, f, err, errlen);
        if (e) return e;
        free_open_file(f);
        free(f);
        a->open[lru] = a->open[--a->n_open];
    }
    a->open = fl_realloc(a->open, (a->n_open + 1) * sizeof *a->open);
    open_file_t *f = fl_calloc(1, sizeof *f);
    a->open[a->n_open] = f;
    f->fd = -1;
    fl_buf_init(&f->key, 0);
    fl_buf_add(&f->key, a->keybuf.ptr, a->keybuf.len);
    size_t np = a->spec.n_fields;
    f->part = fl_calloc(np ? np : 1, sizeof *f->part);
    f->part_bytes = fl_calloc(np ? np : 1, sizeof *f->part_bytes);
    f->n_part = np;
    /* Keep owned copies of byte values: they live in f->key's buffer already,
     * but the path writer wants fl_ice_value_t, so copy the bytes. */
    for (size_t i = 0; i < np; i++) {
        if (!vals) { f->part[i].kind = FL_ICE_NULL; continue; } /* void-only spec */
        f->part[i] = vals[i];
        if (vals[i].kind == FL_ICE_STRING || vals[i].kind == FL_ICE_FIXED || vals[i].kind == FL_ICE_BINARY) {
            size_t n = vals[i].u.bytes.len;
            f->part_bytes[i] = fl_malloc(n ? n : 1);
            if (n) memcpy(f->part_bytes[i], vals[i].u.bytes.ptr, n);
            f->part[i].u.bytes.ptr = f->part_bytes[i];
        }
    }
    fl_vec_init(&f->stage, &a->schema);
    a->n_open++;
    fl_err_t e = start_file(a, f, err, errlen);
    if (e) {
        a->n_open--;
        free_open_file(f);
        free(f);
        return e;
    }
    *idx = a->n_open - 1;
    return FL_OK;
}

static fl_err_t maybe_roll(fl_appender_t *a, open_file_t *f, char *err, size_t errlen)
{
    if (fl_pq_writer_bytes(f->w) < a->target_bytes) return FL_OK;
    fl_err_t e = finish_file(a, f, err, errlen);
    if (!e) e = start_file(a, f, err, errlen);
    return e;
}

/* Write rows [from, to) of batch to the files a->route names: gathered per file
 * with fl_vec_take (or the batch itself when one file takes all of it). */
static fl_err_t flush_routed(fl_appender_t *a, const fl_vec_t *batch, size_t from, size_t to, char *err,
                             size_t errlen)
{
    if (from >= to) return FL_OK;
    size_t n = a->n_open;
    size_t *count = fl_calloc(n + 1, sizeof *count);
    for (size_t r = from; r < to; r++) count[a->route[r] + 1]++;
    for (size_t i = 0; i < n; i++) count[i + 1] += count[i]; /* count[i] = start of file i */
    size_t *pos = fl_malloc((n ? n : 1) * sizeof *pos);
    memcpy(pos, count, (n ? n : 1) * sizeof *pos);
    for (size_t r = from; r < to; r++) a->route_order[pos[a->route[r]]++] = (uint32_t)r;
    fl_err_t e = FL_OK;
    for (size_t i = 0; i < n && !e; i++) {
        size_t b = count[i], m = count[i + 1] - b;
        if (!m) continue;
        open_file_t *f = a->open[i];
        if (m == batch->len) {
            e = fl_pq_writer_write(f->w, batch);
        } else {
            fl_vec_take(&f->stage, batch, a->route_order + b, m);
            e = fl_pq_writer_write(f->w, &f->stage);
            fl_vec_clear(&f->stage);
        }
        if (e) fl_err_fmt(err, errlen, e, "writing Parquet failed: %s", fl_err_str(e));
        else e = maybe_roll(a, f, err, errlen);
    }
    free(count);
    free(pos);
    return e;
}

fl_err_t fl_append_write(fl_appender_t *a, const fl_vec_t *batch, char *err, size_t errlen)
{
    if (batch->field->kind != FL_TYPE_STRUCT || batch->n_children != a->schema.n_children)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "batch does not have the table schema's shape");
    if (!batch->len) return FL_OK;
    a->tick++;
    fl_err_t e;
    if (!a->partitioned) {
        if (!a->n_open) {
            fl_buf_reset(&a->keybuf);
            size_t idx;
            if ((e = file_for_key(a, NULL, &idx, err, errlen))) return e;
        }
        open_file_t *f = a->open[0];
        if ((e = fl_pq_writer_write(f->w, batch))) return fl_err_fmt(err, errlen, e, "writing Parquet failed: %s", fl_err_str(e));
        a->rows += (int64_t)batch->len;
        return maybe_roll(a, f, err, errlen);
    }
    /* Route rows: compute each row's partition tuple. */
    size_t np = a->spec.n_fields;
    part_src_t *ps = fl_calloc(np, sizeof *ps);
    fl_ice_value_t *vals = fl_calloc(np, sizeof *vals);
    for (size_t k = 0; k < np; k++) {
        if (a->spec.fields[k].transform.kind == FL_ICE_T_VOID) continue;
        if (!find_vec(batch, a->spec.fields[k].source_id, ps[k].chain, &ps[k].depth)) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "partition source field %d is not in the batch",
                     (int)a->spec.fields[k].source_id);
            goto out;
        }
    }
    size_t last = SIZE_MAX, from = 0;
    if (a->route_cap < batch->len) {
        a->route = fl_realloc(a->route, batch->len * sizeof *a->route);
        a->route_order = fl_realloc(a->route_order, batch->len * sizeof *a->route_order);
        a->route_cap = batch->len;
    }
    int max_open = a->opts.max_open_files > 0 ? a->opts.max_open_files : 64;
    for (size_t r = 0; r < batch->len; r++) {
        fl_buf_reset(&a->keybuf);
        for (size_t k = 0; k < np; k++) {
            vals[k].kind = FL_ICE_NULL;
            if (a->spec.fields[k].transform.kind != FL_ICE_T_VOID &&
                (e = partition_value(&ps[k], &a->spec.fields[k], r, &vals[k]))) {
                fl_err_fmt(err, errlen, e, "row %zu: cannot compute partition field %s", r, a->spec.fields[k].name);
                goto out;
            }
            fl_append_key_append(&a->keybuf, &vals[k]);
        }
        size_t idx = SIZE_MAX;
        if (last != SIZE_MAX && a->open[last]->key.len == a->keybuf.len &&
            !memcmp(a->open[last]->key.ptr, a->keybuf.ptr, a->keybuf.len)) {
            idx = last;
        } else {
            for (size_t i = 0; i < a->n_open && idx == SIZE_MAX; i++)
                if (a->open[i]->key.len == a->keybuf.len && !memcmp(a->open[i]->key.ptr, a->keybuf.ptr, a->keybuf.len))
                    idx = i;
            if (idx == SIZE_MAX) {
                /* Opening a file may close the least recently used one: write the rows
                 * routed so far first, so no routed row points at a closed file. */
                if (a->n_open >= (size_t)max_open) {
                    if ((e = flush_routed(a, batch, from, r, err, errlen))) goto out;
                    from = r;
                }
                if ((e = file_for_key(a, vals, &idx, err, errlen))) goto out;
            }
        }
        last = idx;
        a->open[idx]->last_use = a->tick;
        a->route[r] = (uint32_t)idx;
    }
    if ((e = flush_routed(a, batch, from, batch->len, err, errlen))) goto out;
    a->rows += (int64_t)batch->len;
    e = FL_OK;
out:
    free(ps);
    free(vals);
    return e;
}

/* ---- commit ---- */

int64_t fl_append_new_snapshot_id(json_t *md)
{
    for (;;) {
        uint64_t r;
        char hex[17];
        fl_random_hex(hex, 16);
        r = strtoull(hex, NULL, 16) & INT64_MAX;
        if (!r) continue;
        bool clash = false;
        size_t i;
        json_t *s;
        json_array_foreach(json_object_get(md, "snapshots"), i, s)
            if ((uint64_t)json_integer_value(json_object_get(s, "snapshot-id")) == r) clash = true;
        if (!clash) return (int64_t)r;
    }
}

json_t *fl_append_find_snapshot(json_t *md, int64_t id)
{
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(md, "snapshots"), i, s)
        if (json_integer_value(json_object_get(s, "snapshot-id")) == id) return s;
    return NULL;
}

/* main's snapshot id, or -1 */
int64_t fl_append_main_snapshot(json_t *md)
{
    json_t *r = json_object_get(json_object_get(md, "refs"), "main");
    if (r) return json_integer_value(json_object_get(r, "snapshot-id"));
    return fl_iceberg_current_snapshot_id(md);
}

int64_t fl_append_summary_i64(json_t *snap, const char *key, bool *ok)
{
    json_t *v = json_object_get(json_object_get(snap, "summary"), key);
    if (!json_is_string(v)) { *ok = false; return 0; }
    return strtoll(json_string_value(v), NULL, 10);
}

void fl_append_set_num(json_t *o, const char *k, int64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%" PRId64, v);
    json_object_set_new(o, k, json_string(b));
}

static fl_err_t close_all(fl_appender_t *a, char *err, size_t errlen)
{
    for (size_t i = 0; i < a->n_open; i++) {
        open_file_t *f = a->open[i];
        fl_err_t e = FL_OK;
        if (f->stage.len && f->w) {
            if ((e = fl_pq_writer_write(f->w, &f->stage)))
                return fl_err_fmt(err, errlen, e, "writing Parquet failed: %s", fl_err_str(e));
            fl_vec_clear(&f->stage);
        }
        if ((e = finish_file(a, f, err, errlen))) return e;
        free_open_file(f);
        free(f);
        a->open[i] = NULL;
    }
    free(a->open);
    a->open = NULL;
    a->n_open = 0;
    return FL_OK;
}

/* One commit in the making: what every attempt reuses (the snapshot id, the
 * one manifest of the new files, the figures) and what each attempt redoes
 * (the parent's manifests, the manifest list). */
typedef struct commit_job {
    int64_t sid;
    char uuid[37];
    int64_t added_rows, added_size;
    size_t changed_partitions;
    fl_manifest_file_t mf;          /* the new files' manifest */
    char *manifest_uri;
    char *list_uri;                 /* this attempt's manifest list */
    fl_manifest_file_t *parent_files;
    size_t n_parent;
    fl_buf_t scratch;
} commit_job_t;

static int cmp_buf(const void *x, const void *y)
{
    const fl_buf_t *a = x, *b = y;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->ptr, b->ptr, n) : 0;
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* Distinct partition tuples among the files to commit. */
static size_t count_changed_partitions(const fl_appender_t *a)
{
    fl_buf_t *keys = fl_malloc(a->n_files * sizeof *keys);
    for (size_t i = 0; i < a->n_files; i++) {
        fl_buf_init(&keys[i], 0);
        for (size_t p = 0; p < a->files[i].n_partition; p++) fl_append_key_append(&keys[i], &a->files[i].partition[p]);
    }
    qsort(keys, a->n_files, sizeof *keys, cmp_buf);
    size_t changed = 0;
    for (size_t i = 0; i < a->n_files; i++)
        if (i == 0 || cmp_buf(&keys[i - 1], &keys[i])) changed++;
    for (size_t i = 0; i < a->n_files; i++) fl_buf_free(&keys[i]);
    free(keys);
    return changed;
}

static void commit_job_init(const fl_appender_t *a, commit_job_t *j)
{
    memset(j, 0, sizeof *j);
    fl_buf_init(&j->scratch, 0);
    fl_uuid4(j->uuid);
    j->sid = fl_append_new_snapshot_id(a->md);
    for (size_t i = 0; i < a->n_files; i++) {
        j->added_rows += a->files[i].record_count;
        j->added_size += a->files[i].file_size_in_bytes;
    }
    j->changed_partitions = count_changed_partitions(a);
}

static void commit_job_free(commit_job_t *j)
{
    fl_manifest_file_free(&j->mf);
    fl_manifest_files_free(j->parent_files, j->n_parent);
    fl_buf_free(&j->scratch);
    free(j->list_uri);
    free(j->manifest_uri);
}

/* Writes and uploads the manifest of the new files: once, reused by every attempt. */
static fl_err_t write_manifest(fl_appender_t *a, commit_job_t *j, char *err, size_t errlen)
{
    fl_manifest_writer_t mw;
    memset(&mw, 0, sizeof mw);
    fl_buf_t bytes;
    fl_buf_init(&bytes, 0);
    fl_err_t e = fl_manifest_writer_open(&mw, a->format_version, &a->schema, a->schema_id, &a->spec, 0, j->sid,
                                         FL_AVRO_CODEC_DEFLATE);
    if (e) {
        fl_err_fmt(err, errlen, e, "cannot start a manifest: %s", fl_err_str(e));
        goto out;
    }
    for (size_t i = 0; i < a->n_files; i++) {
        fl_manifest_entry_t me;
        memset(&me, 0, sizeof me);
        me.status = 1;
        me.has_snapshot_id = true;
        me.snapshot_id = j->sid;
        me.file = a->files[i];
        if ((e = fl_manifest_writer_add(&mw, &me))) {
            fl_err_fmt(err, errlen, e, "cannot write a manifest entry: %s", fl_err_str(e));
            goto out;
        }
    }
    fl_buf_reset(&j->scratch);
    fl_buf_printf(&j->scratch, "%s/%s-m0.avro", a->metadata_path, j->uuid);
    j->manifest_uri = fl_buf_steal(&j->scratch);
    json_int_t last_seq = json_integer_value(json_object_get(a->md, "last-sequence-number"));
    if ((e = fl_manifest_writer_finish(&mw, j->manifest_uri, last_seq + 1, &bytes, &j->mf))) {
        fl_err_fmt(err, errlen, e, "cannot finish the manifest: %s", fl_err_str(e));
        goto out;
    }
    if ((e = a->ops.put(a->ops.ctx, j->manifest_uri, bytes.ptr, bytes.len)))
        fl_err_fmt(err, errlen, e, "uploading %s failed: %s", j->manifest_uri, fl_err_str(e));
out:
    fl_manifest_writer_free(&mw);
    fl_buf_free(&bytes);
    return e;
}

/* Reads the manifests of the parent snapshot (psnap NULL: none) into j->parent_files. */
static fl_err_t read_parent_manifests(fl_appender_t *a, commit_job_t *j, json_t *psnap, char *err, size_t errlen)
{
    fl_manifest_files_free(j->parent_files, j->n_parent);
    j->parent_files = NULL;
    j->n_parent = 0;
    if (!psnap) return FL_OK;
    const char *pl = json_string_value(json_object_get(psnap, "manifest-list"));
    if (!pl)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "parent snapshot %" PRId64
                          " has no manifest-list (v1 manifests field unsupported)",
                          (int64_t)json_integer_value(json_object_get(psnap, "snapshot-id")));
    fl_buf_reset(&j->scratch);
    fl_err_t e = a->ops.get(a->ops.ctx, pl, &j->scratch);
    if (e) return fl_err_fmt(err, errlen, e, "reading %s failed: %s", pl, fl_err_str(e));
    return fl_manifest_list_read(fl_slice(j->scratch.ptr, j->scratch.len), &j->parent_files, &j->n_parent,
                                 err, errlen);
}

/* Writes and uploads this attempt's manifest list: the new manifest first, then
 * the parent's. v3 row lineage: ids start at the table's next-row-id as it is
 * now (recomputed after a re-base); *first_row_id / *next_row_id say which. */
static fl_err_t write_manifest_list(fl_appender_t *a, commit_job_t *j, int64_t parent, int64_t seq, int attempt,
                                    int64_t *first_row_id, int64_t *next_row_id, char *err, size_t errlen)
{
    j->mf.sequence_number = seq;
    j->mf.min_sequence_number = seq;
    size_t n_all = j->n_parent + 1;
    fl_manifest_file_t *all = fl_malloc(n_all * sizeof *all);
    all[0] = j->mf;
    if (j->n_parent) memcpy(all + 1, j->parent_files, j->n_parent * sizeof *all);
    fl_buf_reset(&j->scratch);
    fl_err_t e;
    *first_row_id = *next_row_id = 0;
    if (a->format_version >= 3) {
        *first_row_id = (int64_t)json_integer_value(json_object_get(a->md, "next-row-id"));
        e = fl_manifest_list_write_v3(j->sid, parent, seq, *first_row_id, all, n_all, FL_AVRO_CODEC_DEFLATE,
                                      &j->scratch, next_row_id);
    } else {
        e = fl_manifest_list_write(a->format_version, j->sid, parent, seq, all, n_all, FL_AVRO_CODEC_DEFLATE,
                                   &j->scratch);
    }
    free(all);
    if (e) return fl_err_fmt(err, errlen, e, "cannot write the manifest list: %s", fl_err_str(e));
    fl_buf_t uri;
    fl_buf_init(&uri, 0);
    fl_buf_printf(&uri, "%s/snap-%" PRId64 "-%d-%s.avro", a->metadata_path, j->sid, attempt, j->uuid);
    free(j->list_uri);
    j->list_uri = fl_buf_steal(&uri);
    if ((e = a->ops.put(a->ops.ctx, j->list_uri, j->scratch.ptr, j->scratch.len)))
        return fl_err_fmt(err, errlen, e, "uploading %s failed: %s", j->list_uri, fl_err_str(e));
    return FL_OK;
}

/* The snapshot summary: Iceberg's figures (totals carried from the parent when
 * it has them all) and the caller's pairs. New reference. */
static json_t *snapshot_summary(const fl_appender_t *a, const commit_job_t *j, json_t *psnap,
                                const char *const *kv, size_t n_kv)
{
    json_t *summary = json_object();
    json_object_set_new(summary, "operation", json_string("append"));
    fl_append_set_num(summary, "added-data-files", (int64_t)a->n_files);
    fl_append_set_num(summary, "added-records", j->added_rows);
    fl_append_set_num(summary, "added-files-size", j->added_size);
    fl_append_set_num(summary, "changed-partition-count", (int64_t)j->changed_partitions);
    bool ok = true;
    int64_t tr = 0, tf = 0, ts = 0, tdel = 0, tpd = 0, ted = 0;
    if (psnap) {
        tr = fl_append_summary_i64(psnap, "total-records", &ok);
        tf = fl_append_summary_i64(psnap, "total-data-files", &ok);
        ts = fl_append_summary_i64(psnap, "total-files-size", &ok);
        tdel = fl_append_summary_i64(psnap, "total-delete-files", &ok);
        tpd = fl_append_summary_i64(psnap, "total-position-deletes", &ok);
        ted = fl_append_summary_i64(psnap, "total-equality-deletes", &ok);
    }
    if (ok) {
        fl_append_set_num(summary, "total-records", tr + j->added_rows);
        fl_append_set_num(summary, "total-files-size", ts + j->added_size);
        fl_append_set_num(summary, "total-data-files", tf + (int64_t)a->n_files);
        fl_append_set_num(summary, "total-delete-files", tdel);
        fl_append_set_num(summary, "total-position-deletes", tpd);
        fl_append_set_num(summary, "total-equality-deletes", ted);
    }
    for (size_t i = 0; i < n_kv; i++)
        if (kv[2 * i] && kv[2 * i + 1]) json_object_set_new(summary, kv[2 * i], json_string(kv[2 * i + 1]));
    return summary;
}

/* The commit request: add-snapshot + set-snapshot-ref(main), asserting the
 * table's uuid and main's parent. New references in *reqs / *updates. */
static void commit_request(const fl_appender_t *a, const commit_job_t *j, json_t *summary, int64_t parent,
                           int64_t seq, int64_t first_row_id, int64_t next_row_id, json_t **reqs, json_t **updates)
{
    json_t *snap = json_pack("{s:I,s:I,s:I,s:s,s:o,s:i}", "snapshot-id", (json_int_t)j->sid,
                             "sequence-number", (json_int_t)seq, "timestamp-ms", (json_int_t)fl_now_ms(),
                             "manifest-list", j->list_uri, "summary", summary, "schema-id", (int)a->schema_id);
    if (parent >= 0) json_object_set_new(snap, "parent-snapshot-id", json_integer(parent));
    if (a->format_version >= 3) {
        json_object_set_new(snap, "first-row-id", json_integer(first_row_id));
        json_object_set_new(snap, "added-rows", json_integer(next_row_id - first_row_id));
    }
    *updates = json_pack("[{s:s,s:o},{s:s,s:s,s:s,s:I}]", "action", "add-snapshot", "snapshot", snap,
                         "action", "set-snapshot-ref", "ref-name", "main", "type", "branch",
                         "snapshot-id", (json_int_t)j->sid);
    *reqs = json_pack("[{s:s,s:s},{s:s,s:s,s:o}]", "type", "assert-table-uuid", "uuid", a->table_uuid,
                      "type", "assert-ref-snapshot-id", "ref", "main", "snapshot-id",
                      parent >= 0 ? json_integer(parent) : json_null());
}

/* Takes the table's metadata after a successful commit: the catalog's answer,
 * else a reload (best effort: the commit stands either way). */
static void adopt_committed(fl_appender_t *a, json_t *newmd)
{
    if (newmd) {
        bind_metadata(a, newmd, NULL, 0);
        return;
    }
    json_t *md = NULL;
    char *loc = NULL;
    if (!a->ops.load(a->ops.ctx, &md, &loc, NULL, 0)) {
        bind_metadata(a, md, NULL, 0);
        free(a->md_location);
        a->md_location = loc;
    }
}

/* After a 409: reload the table and bind its current metadata, unless it was
 * replaced (another uuid: FL_ERR_CONFLICT). */
static fl_err_t rebase(fl_appender_t *a, char *err, size_t errlen)
{
    json_t *md = NULL;
    char *loc = NULL;
    fl_err_t e = a->ops.load(a->ops.ctx, &md, &loc, err, errlen);
    if (e) return e;
    free(a->md_location);
    a->md_location = loc;
    const char *nu = json_string_value(json_object_get(md, "table-uuid"));
    if (nu && strcmp(nu, a->table_uuid)) {
        json_decref(md);
        return fl_err_fmt(err, errlen, FL_ERR_CONFLICT, "the table was replaced while appending (uuid changed)");
    }
    return bind_metadata(a, md, err, errlen);
}

bool fl_append_adopt_base(fl_appender_t *a, const fl_appender_t *from)
{
    if (a == from || !from->md || strcmp(a->table_uuid, from->table_uuid)) return false;
    if (bind_metadata(a, json_deep_copy(from->md), NULL, 0)) return false;
    free(a->md_location);
    a->md_location = from->md_location ? fl_strdup(from->md_location) : NULL;
    return true;
}

/* After an unknown outcome (5xx, lost connection): reload once; true if the
 * snapshot is there, i.e. the commit happened. */
static bool committed_after_all(fl_appender_t *a, int64_t sid)
{
    json_t *md = NULL;
    char *loc = NULL;
    if (a->ops.load(a->ops.ctx, &md, &loc, NULL, 0)) return false;
    bool there = fl_append_find_snapshot(md, sid) != NULL;
    bind_metadata(a, md, NULL, 0);
    free(a->md_location);
    a->md_location = loc;
    return there;
}

static void forget_files(fl_appender_t *a)
{
    for (size_t i = 0; i < a->n_files; i++) fl_data_file_free(&a->files[i]);
    a->n_files = a->n_adopted = 0;
    a->rows = 0;
}

int fl_append_backoff_ms(int attempt, uint64_t r)
{
    int64_t cap = FL_APPEND_BACKOFF_BASE_MS;
    for (int i = 1; i < attempt && cap < FL_APPEND_BACKOFF_MAX_MS; i++) cap *= 2;
    if (cap > FL_APPEND_BACKOFF_MAX_MS) cap = FL_APPEND_BACKOFF_MAX_MS;
    return (int)(r % (uint64_t)(cap + 1));
}

/* Outcome of one attempt. */
typedef enum { ATTEMPT_DONE, ATTEMPT_RETRY, ATTEMPT_FAILED, ATTEMPT_UNKNOWN } attempt_t;

/* One attempt: the list on the current parent, the request, the catalog's answer. */
typedef struct summary_src {
    const char *const *kv;
    size_t n_kv;
    fl_append_summary_fn fn;
    void *arg;
} summary_src_t;

/* An attempt's request on the current parent: its manifest list uploaded, the summary, the
 * requirements and updates (new references). */
static fl_err_t attempt_request(fl_appender_t *a, commit_job_t *j, int attempt, const summary_src_t *src,
                                json_t **reqs, json_t **updates, char *err, size_t errlen)
{
    int64_t parent = fl_append_main_snapshot(a->md);
    int64_t seq = (int64_t)json_integer_value(json_object_get(a->md, "last-sequence-number")) + 1;
    json_t *psnap = parent >= 0 ? fl_append_find_snapshot(a->md, parent) : NULL;
    int64_t first_row_id, next_row_id;
    fl_err_t e;
    if ((e = read_parent_manifests(a, j, psnap, err, errlen)) ||
        (e = write_manifest_list(a, j, parent, seq, attempt, &first_row_id, &next_row_id, err, errlen)))
        return e;
    json_t *summary = snapshot_summary(a, j, psnap, src->kv, src->n_kv);
    if (src->fn && (e = src->fn(src->arg, a->md, psnap, summary, err, errlen))) {
        json_decref(summary);
        return e;
    }
    commit_request(a, j, summary, parent, seq, first_row_id, next_row_id, reqs, updates);
    return FL_OK;
}

/* A 409 is not proof that nothing landed: an HTTP client may have resent the
 * request after the first send's connection died unanswered (libcurl does so on
 * a reused connection), and the resend found the table moved by the first. So
 * the table is re-based first and searched for this attempt's snapshot: there,
 * it is DONE (the list and files are the table's); else the list is garbage
 * (RETRY: the caller tries again or gives up). A reload that fails leaves the
 * outcome UNKNOWN (nothing deleted); a replaced table is FAILED. */
static attempt_t after_conflict(fl_appender_t *a, commit_job_t *j, fl_err_t *e, char *err, size_t errlen)
{
    fl_err_t re = rebase(a, err, errlen);
    if (re == FL_ERR_CONFLICT) {
        *e = re;
        return ATTEMPT_FAILED;
    }
    if (re) {
        *e = fl_err_fmt(err, errlen, FL_ERR_IO, "commit state unknown: refused (409) and the table could not be "
                        "reloaded to look for snapshot %" PRId64, j->sid);
        return ATTEMPT_UNKNOWN;
    }
    if (fl_append_find_snapshot(a->md, j->sid)) {
        *e = FL_OK;
        return ATTEMPT_DONE;
    }
    a->ops.del(a->ops.ctx, j->list_uri);
    return ATTEMPT_RETRY;
}

static attempt_t commit_attempt(fl_appender_t *a, commit_job_t *j, int attempt, const summary_src_t *src,
                                fl_err_t *e, char *err, size_t errlen)
{
    json_t *reqs, *updates, *newmd = NULL;
    if ((*e = attempt_request(a, j, attempt, src, &reqs, &updates, err, errlen))) return ATTEMPT_FAILED;
    int status = 0;
    char cerr[512] = "";
    *e = a->ops.commit(a->ops.ctx, reqs, updates, &newmd, &status, cerr, sizeof cerr);
    json_decref(reqs);
    json_decref(updates);
    if (!*e && status >= 200 && status < 300) {
        adopt_committed(a, newmd);
        return ATTEMPT_DONE;
    }
    json_decref(newmd);
    if (status == 409) {
        /* back off first, then re-base: the next attempt commits against what it just loaded
         * (sleeping after the reload widened the window in which another writer wins) */
        if (attempt < MAX_COMMIT_ATTEMPTS) usleep((useconds_t)fl_append_backoff_ms(attempt, fl_random_u64()) * 1000);
        attempt_t r = after_conflict(a, j, e, err, errlen);
        if (r != ATTEMPT_RETRY) return r;
        if (attempt < MAX_COMMIT_ATTEMPTS) return ATTEMPT_RETRY;
        *e = fl_err_fmt(err, errlen, FL_ERR_CONFLICT, "commit kept conflicting after %d attempts: %s", attempt, cerr);
        return ATTEMPT_FAILED;
    }
    if (status >= 400 && status < 500) {
        *e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "the catalog refused the commit (%d): %s", status, cerr);
        return ATTEMPT_FAILED;
    }
    if (committed_after_all(a, j->sid)) return ATTEMPT_DONE;
    *e = fl_err_fmt(err, errlen, FL_ERR_IO, "commit state unknown (status %d): %s", status, cerr);
    return ATTEMPT_UNKNOWN;
}

static void job_free(fl_appender_t *a)
{
    if (!a->job) return;
    commit_job_free(a->job);
    free(a->job);
    a->job = NULL;
    a->job_attempt = 0;
}

/* Starts the commit of what was written: files closed, the new files' manifest uploaded.
 * FL_OK with a->job NULL when nothing was written. On failure everything is discarded. */
static fl_err_t job_start(fl_appender_t *a, char *err, size_t errlen)
{
    if (a->job) return FL_OK;
    fl_err_t e = close_all(a, err, errlen);
    if (e) return e;
    if (!a->n_files) return FL_OK;
    a->job = fl_malloc(sizeof *a->job);
    commit_job_init(a, a->job);
    a->job_attempt = 0;
    if ((e = write_manifest(a, a->job, err, errlen))) fl_append_abort(a);
    return e;
}

/* The job is over and its files are not the appender's to delete: committed, or
 * perhaps committed (they stay in storage). */
static void release_job(fl_appender_t *a)
{
    forget_files(a);
    job_free(a);
}

static fl_err_t append_commit(fl_appender_t *a, const summary_src_t *src, int64_t *snapshot_id, char *err,
                              size_t errlen)
{
    *snapshot_id = -1;
    fl_err_t e = job_start(a, err, errlen);
    if (e || !a->job) return e;
    commit_job_t *j = a->job;
    attempt_t r;
    int attempt = ++a->job_attempt;
    while ((r = commit_attempt(a, j, attempt, src, &e, err, errlen)) == ATTEMPT_RETRY) attempt = ++a->job_attempt;
    switch (r) {
    case ATTEMPT_DONE:
        *snapshot_id = j->sid;
        e = FL_OK;
        release_job(a);
        break;
    case ATTEMPT_UNKNOWN:
        /* the files stay: the commit may yet be visible */
        release_job(a);
        break;
    default:
        /* a definite failure: the uploaded files are garbage */
        fl_append_abort(a);
        break;
    }
    return e;
}

fl_err_t fl_append_prepare(fl_appender_t *a, fl_append_summary_fn fn, void *arg, json_t **requirements,
                           json_t **updates, int64_t *snapshot_id, char *err, size_t errlen)
{
    *requirements = *updates = NULL;
    *snapshot_id = -1;
    fl_err_t e = job_start(a, err, errlen);
    if (e || !a->job) return e;
    if (a->job_attempt >= MAX_COMMIT_ATTEMPTS) {
        fl_append_abort(a);
        return fl_err_fmt(err, errlen, FL_ERR_CONFLICT, "commit kept conflicting after %d attempts", MAX_COMMIT_ATTEMPTS);
    }
    summary_src_t src = { .fn = fn, .arg = arg };
    if ((e = attempt_request(a, a->job, ++a->job_attempt, &src, requirements, updates, err, errlen))) {
        fl_append_abort(a);
        return e;
    }
    *snapshot_id = a->job->sid;
    return FL_OK;
}

fl_err_t fl_append_settle(fl_appender_t *a, fl_append_outcome_t outcome, char *err, size_t errlen)
{
    commit_job_t *j = a->job;
    if (!j) return FL_OK;
    fl_err_t e = FL_OK;
    switch (outcome) {
    case FL_APPEND_LANDED:
        adopt_committed(a, NULL);
        release_job(a);
        break;
    case FL_APPEND_CONFLICT:
        switch (after_conflict(a, j, &e, err, errlen)) {
        case ATTEMPT_RETRY:
            free(j->list_uri);
            j->list_uri = NULL;
            break;
        case ATTEMPT_DONE:   /* landed after all: the files are the table's; the caller re-reads */
            release_job(a);
            e = fl_err_fmt(err, errlen, FL_ERR_CONFLICT, "refused (409), yet its snapshot is on the table: "
                           "a resent request's first send had landed");
            break;
        case ATTEMPT_UNKNOWN:  /* the files stay: the commit may be visible */
            release_job(a);
            break;
        default:
            fl_append_abort(a);
            break;
        }
        break;
    case FL_APPEND_SINGLE:
        if (j->list_uri) a->ops.del(a->ops.ctx, j->list_uri);
        free(j->list_uri);
        j->list_uri = NULL;
        break;
    case FL_APPEND_UNKNOWN:
        if (!committed_after_all(a, j->sid))
            e = fl_err_fmt(err, errlen, FL_ERR_IO, "commit state unknown: snapshot %" PRId64 " is not on the table",
                           j->sid);
        release_job(a);   /* landed, or the files stay: the commit may yet be visible */
        break;
    case FL_APPEND_DROP:
        fl_append_abort(a);
        break;
    }
    return e;
}

fl_err_t fl_append_commit(fl_appender_t *a, const char *const *kv, size_t n_kv, int64_t *snapshot_id,
                          char *err, size_t errlen)
{
    summary_src_t src = { .kv = kv, .n_kv = n_kv };
    return append_commit(a, &src, snapshot_id, err, errlen);
}

fl_err_t fl_append_commit_fn(fl_appender_t *a, fl_append_summary_fn fn, void *arg, int64_t *snapshot_id,
                             char *err, size_t errlen)
{
    summary_src_t src = { .fn = fn, .arg = arg };
    return append_commit(a, &src, snapshot_id, err, errlen);
}

fl_err_t fl_append_take_files(fl_appender_t *a, fl_data_file_t **files, size_t *n, char *err, size_t errlen)
{
    *files = NULL;
    *n = 0;
    fl_err_t e = close_all(a, err, errlen);
    if (e) return e;
    *files = a->files;
    *n = a->n_files;
    a->files = NULL;
    a->n_files = a->cap_files = a->n_adopted = 0;
    a->rows = 0;
    return FL_OK;
}

void fl_append_abort(fl_appender_t *a)
{
    if (!a) return;
    if (a->job) {
        if (a->job->manifest_uri) a->ops.del(a->ops.ctx, a->job->manifest_uri);
        if (a->job->list_uri) a->ops.del(a->ops.ctx, a->job->list_uri);
        job_free(a);
    }
    for (size_t i = 0; i < a->n_open; i++) {
        if (!a->open[i]) continue;
        free_open_file(a->open[i]);
        free(a->open[i]);
    }
    free(a->open);
    a->open = NULL;
    a->n_open = 0;
    for (size_t i = 0; i < a->n_files; i++) {
        if (i >= a->n_adopted) a->ops.del(a->ops.ctx, a->files[i].file_path);
        fl_data_file_free(&a->files[i]);
    }
    a->n_files = a->n_adopted = 0;
    a->rows = 0;
}

fl_err_t fl_append_add_files(fl_appender_t *a, fl_data_file_t *files, size_t n, char *err, size_t errlen)
{
    bool written = a->n_files > a->n_adopted || a->job;
    for (size_t i = 0; i < a->n_open; i++) written = written || (a->open[i] && a->open[i]->rows);
    if (written) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "data files are added before anything is written");
    for (size_t i = 0; i < n; i++) {
        const fl_data_file_t *f = &files[i];
        if (f->content != 0 || f->n_partition != a->spec.n_fields || f->record_count < 0 || f->file_size_in_bytes < 0 ||
            !f->file_path || !f->file_format)
            return fl_err_fmt(err, errlen, FL_ERR_INVALID,
                              "data file %s does not fit the table (content %d, %zu partition values for %zu "
                              "partition fields)", f->file_path ? f->file_path : "(no path)", (int)f->content,
                              f->n_partition, a->spec.n_fields);
    }
    for (size_t i = 0; i < n; i++) {
        add_file(a, &files[i]);
        a->rows += files[i].record_count;
        memset(&files[i], 0, sizeof files[i]);
    }
    a->n_adopted = a->n_files;
    return FL_OK;
}

void fl_append_free(fl_appender_t *a)
{
    if (!a) return;
    fl_append_abort(a);
    free(a->files);
    json_decref(a->md);
    free(a->md_location);
    fl_field_free(&a->schema);
    fl_part_spec_free(&a->spec);
    fl_metrics_policy_free(&a->metrics);
    free(a->schema_json);
    free(a->data_path);
    free(a->metadata_path);
    fl_buf_free(&a->keybuf);
    free(a->route);
    free(a->route_order);
    free(a);
}
