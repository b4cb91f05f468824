/* Compaction: bin-pack data file rewrites and manifest merges committed as
 * Iceberg `replace` snapshots (see rewrite.h). */
#include "iceberg/rewrite.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "base/limits.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include "base/uuid.h"
#include "format/parquet.h"
#include "iceberg/append_int.h"
#include "iceberg/manifest.h"
#include "iceberg/metadata.h"
#include "iceberg/puffin.h"
#include "iceberg/schema.h"
#include "iceberg/sortorder.h"

#define DEFAULT_TARGET_FILE_BYTES (512LL * 1024 * 1024)
#define DEFAULT_MAX_COMMIT_BYTES (10LL * 1024 * 1024 * 1024)
#define DEFAULT_MANIFEST_TARGET (8LL * 1024 * 1024)
#define MAX_COMMIT_ATTEMPTS 64
#define POS_FILE_PATH_ID 2147483546
#define POS_POS_ID 2147483545

/* ---- the job: table, schema, specs, manifest cache ---- */

/* A manifest's entries, read once per job (manifests are immutable). */
typedef struct mcache {
    char *path;
    fl_manifest_entry_t *ents;
    size_t n;
} mcache_t;

typedef struct job {
    fl_table_ops_t ops;
    fl_rewrite_opts_t o;
    fl_rewrite_result_t *res;
    fl_appender_t *app;         /* writes new files (current schema, default spec) */
    json_t *md;                 /* the table as last loaded */
    char table_uuid[64];
    int format_version;
    fl_field_t schema;          /* current schema */
    fl_field_t read_schema;     /* what rows are read as: the schema, + _row_id and
                                   _last_updated_sequence_number on v3 (the appender's) */
    bool lineage;               /* v3: rows keep their row lineage */
    int64_t list_first_row_id;  /* v3: the last list written assigned row ids from here ... */
    int64_t list_next_row_id;   /* ... to here (the snapshot's first-row-id and added-rows) */
    int32_t schema_id;
    int32_t default_spec;
    fl_part_spec_t *specs;      /* every spec that binds to the current schema */
    size_t n_specs;
    char *metadata_path;
    char *name_mapping;
    int64_t target, min_bytes, max_commit;
    mcache_t **cache;
    size_t n_cache;
    char uuid[37];
    int file_counter;
    fl_rewrite_strategy_t strategy; /* resolved: binpack, sort or z-order */
    fl_sort_order_t order;          /* the default sort order (n = 0: unsorted) */
} job_t;

/* A live file of a snapshot. */
typedef struct sfile {
    const fl_manifest_entry_t *en;   /* borrowed from the cache */
    int32_t spec_id;
    int64_t seq;                     /* data sequence number */
    fl_buf_t key;                    /* spec id + partition tuple */
    bool global;                     /* a delete file of an unpartitioned spec */
    bool dv;                         /* a deletion vector (v3) */
    size_t manifest;                 /* index in the state's manifest list */
} sfile_t;

typedef struct state {
    int64_t snap_id, seq;
    fl_manifest_file_t *mfs;
    size_t n_mf;
    mcache_t **mc;                   /* per manifest, borrowed from the cache */
    sfile_t *data;                   /* sorted by path */
    size_t n_data;
    sfile_t *dels;
    size_t n_dels;
} state_t;

static const fl_part_spec_t *spec_by_id(const job_t *j, int32_t id)
{
    for (size_t i = 0; i < j->n_specs; i++)
        if (j->specs[i].spec_id == id) return &j->specs[i];
    return NULL;
}

fl_err_t fl_rewrite_strategy_parse(const char *s, fl_rewrite_strategy_t *out)
{
    static const char *names[] = { "binpack", "sort", "z-order", "auto" };
    for (int i = 0; s && i < 4; i++)
        if (!strcmp(s, names[i])) {
            *out = (fl_rewrite_strategy_t)i;
            return FL_OK;
        }
    return FL_ERR_INVALID;
}

const char *fl_rewrite_strategy_name(fl_rewrite_strategy_t s)
{
    switch (s) {
    case FL_REWRITE_BINPACK: return "binpack";
    case FL_REWRITE_SORT: return "sort";
    case FL_REWRITE_ZORDER: return "z-order";
    case FL_REWRITE_AUTO: return "auto";
    }
    return "?";
}

static void job_free(job_t *j)
{
    fl_sort_order_free(&j->order);
    fl_append_free(j->app);
    json_decref(j->md);
    fl_field_free(&j->schema);
    fl_field_free(&j->read_schema);
    for (size_t i = 0; i < j->n_specs; i++) fl_part_spec_free(&j->specs[i]);
    free(j->specs);
    free(j->metadata_path);
    free(j->name_mapping);
    for (size_t i = 0; i < j->n_cache; i++) {
        free(j->cache[i]->path);
        fl_manifest_entries_free(j->cache[i]->ents, j->cache[i]->n);
        free(j->cache[i]);
    }
    free(j->cache);
}

static fl_err_t job_open(job_t *j, const fl_table_ops_t *ops, const fl_rewrite_opts_t *opts,
                         fl_rewrite_result_t *res, char *err, size_t errlen)
{
    memset(j, 0, sizeof *j);
    j->ops = *ops;
    if (opts) j->o = *opts;
    j->res = res;
    fl_uuid4(j->uuid);
    fl_append_opts_t ao;
    memset(&ao, 0, sizeof ao);
    ao.target_file_bytes = j->o.target_file_bytes;
    ao.tmp_dir = j->o.tmp_dir;
    fl_err_t e = fl_append_open(&j->app, ops, &ao, err, errlen);
    if (e) return e;
    j->format_version = (int)json_integer_value(json_object_get(fl_append_metadata(j->app), "format-version"));
    if (j->format_version >= 3) {
        /* v3: the appender writes the rows' lineage columns too */
        fl_append_free(j->app);
        j->app = NULL;
        ao.row_lineage = true;
        if ((e = fl_append_open(&j->app, ops, &ao, err, errlen))) return e;
        j->format_version = (int)json_integer_value(json_object_get(fl_append_metadata(j->app), "format-version"));
    }
    j->md = json_incref(fl_append_metadata(j->app));
    if (j->format_version != 2 && j->format_version != 3)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "compaction supports format-version 2 and 3 tables (this one is v%d)",
                          j->format_version);
    j->lineage = j->format_version >= 3;
    fl_field_copy(&j->read_schema, fl_append_schema(j->app));
    const char *uuid = json_string_value(json_object_get(j->md, "table-uuid"));
    snprintf(j->table_uuid, sizeof j->table_uuid, "%s", uuid ? uuid : "");
    if ((e = fl_schema_from_metadata(j->md, -1, &j->schema, &j->schema_id, err, errlen))) return e;
    j->default_spec = (int32_t)json_integer_value(json_object_get(j->md, "default-spec-id"));
    size_t i;
    json_t *sp;
    json_t *specs = json_object_get(j->md, "partition-specs");
    j->specs = fl_calloc(json_array_size(specs) + 1, sizeof *j->specs);
    json_array_foreach(specs, i, sp) {
        char e2[128];
        if (!fl_part_spec_from_json(sp, &j->schema, &j->specs[j->n_specs], e2, sizeof e2)) j->n_specs++;
    }
    if (!spec_by_id(j, j->default_spec))
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "the default partition spec does not bind to the schema");
    j->target = j->o.target_file_bytes > 0 ? j->o.target_file_bytes
                                           : fl_append_prop_i64(j->md, "write.target-file-size-bytes", DEFAULT_TARGET_FILE_BYTES);
    j->min_bytes = j->o.min_file_bytes > 0 ? j->o.min_file_bytes : j->target / 4 * 3;
    j->max_commit = j->o.max_commit_bytes > 0 ? j->o.max_commit_bytes : DEFAULT_MAX_COMMIT_BYTES;
    if (j->o.min_input_files <= 0) j->o.min_input_files = 2;
    /* the strategy: auto = sort when the table has a sort order; sort and
     * z-order need one (S3 Tables), without it they bin-pack */
    j->strategy = j->o.strategy;
    if (j->strategy != FL_REWRITE_BINPACK) {
        if ((e = fl_sort_order_from_metadata(j->md, &j->schema, &j->order, err, errlen))) return e;
        if (j->strategy == FL_REWRITE_AUTO) {
            j->strategy = j->order.n ? FL_REWRITE_SORT : FL_REWRITE_BINPACK;
        } else if (!j->order.n) {
            if (res)
                snprintf(res->note, sizeof res->note, "strategy %s needs a sort order on the table: bin-packed",
                         fl_rewrite_strategy_name(j->strategy));
            j->strategy = FL_REWRITE_BINPACK;
        }
    }
    if (res) {
        res->strategy = j->strategy;
        res->sort_order_id = j->strategy != FL_REWRITE_BINPACK ? j->order.order_id : 0;
    }
    const char *mp = fl_append_prop(j->md, "write.metadata.path");
    const char *loc = json_string_value(json_object_get(j->md, "location"));
    if (mp) {
        j->metadata_path = fl_strdup(mp);
    } else {
        fl_buf_t b;
        fl_buf_init(&b, 0);
        fl_buf_printf(&b, "%s/metadata", loc ? loc : "");
        j->metadata_path = fl_buf_steal(&b);
    }
    const char *nm = fl_append_prop(j->md, "schema.name-mapping.default");
    if (nm) j->name_mapping = fl_strdup(nm);
    return FL_OK;
}

/* The entries of manifest mf, from the cache or storage. */
static fl_err_t cache_get(job_t *j, const fl_manifest_file_t *mf, mcache_t **out, char *err, size_t errlen)
{
    for (size_t i = 0; i < j->n_cache; i++)
        if (!strcmp(j->cache[i]->path, mf->manifest_path)) { *out = j->cache[i]; return FL_OK; }
    fl_buf_t b;
    fl_buf_init(&b, 0);
    fl_err_t e = j->ops.get(j->ops.ctx, mf->manifest_path, &b);
    if (e) {
        fl_buf_free(&b);
        return fl_err_fmt(err, errlen, e, "reading %s failed: %s", mf->manifest_path, fl_err_str(e));
    }
    mcache_t *c = fl_calloc(1, sizeof *c);
    e = fl_manifest_read(fl_slice(b.ptr, b.len), mf, &c->ents, &c->n, err, errlen);
    fl_buf_free(&b);
    if (e) { free(c); return e; }
    c->path = fl_strdup(mf->manifest_path);
    j->cache = fl_realloc(j->cache, (j->n_cache + 1) * sizeof *j->cache);
    j->cache[j->n_cache++] = c;
    *out = c;
    return FL_OK;
}

static void part_key(fl_buf_t *k, int32_t spec_id, const fl_data_file_t *f)
{
    fl_buf_init(k, 0);
    fl_buf_add(k, &spec_id, sizeof spec_id);
    for (size_t i = 0; i < f->n_partition; i++) fl_append_key_append(k, &f->partition[i]);
}

static int cmp_sfile_path(const void *x, const void *y)
{
    return strcmp(((const sfile_t *)x)->en->file.file_path, ((const sfile_t *)y)->en->file.file_path);
}

static void state_free(state_t *st)
{
    for (size_t i = 0; i < st->n_data; i++) fl_buf_free(&st->data[i].key);
    for (size_t i = 0; i < st->n_dels; i++) fl_buf_free(&st->dels[i].key);
    free(st->data);
    free(st->dels);
    free(st->mc);
    fl_manifest_files_free(st->mfs, st->n_mf);
    memset(st, 0, sizeof *st);
}

/* The live files of snapshot sid (< 0: an empty state). */
static fl_err_t load_state(job_t *j, int64_t sid, state_t *st, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    st->snap_id = sid;
    if (sid < 0) return FL_OK;
    json_t *snap = fl_append_find_snapshot(j->md, sid);
    if (!snap) return fl_err_fmt(err, errlen, FL_ERR_NOT_FOUND, "snapshot %" PRId64 " does not exist", sid);
    st->seq = (int64_t)json_integer_value(json_object_get(snap, "sequence-number"));
    const char *list = json_string_value(json_object_get(snap, "manifest-list"));
    if (!list) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "snapshot %" PRId64 " has no manifest-list", sid);
    fl_buf_t b;
    fl_buf_init(&b, 0);
    fl_err_t e = j->ops.get(j->ops.ctx, list, &b);
    if (e) fl_err_fmt(err, errlen, e, "reading %s failed: %s", list, fl_err_str(e));
    else e = fl_manifest_list_read(fl_slice(b.ptr, b.len), &st->mfs, &st->n_mf, err, errlen);
    fl_buf_free(&b);
    if (e) return e;
    st->mc = fl_calloc(st->n_mf + 1, sizeof *st->mc);
    size_t cap_d = 0, cap_x = 0;
    for (size_t m = 0; m < st->n_mf; m++) {
        if ((e = cache_get(j, &st->mfs[m], &st->mc[m], err, errlen))) return e;
        const mcache_t *c = st->mc[m];
        for (size_t k = 0; k < c->n; k++) {
            const fl_manifest_entry_t *en = &c->ents[k];
            if (en->status == 2) continue;
            bool del = en->file.content != 0 || st->mfs[m].content != 0;
            sfile_t *f;
            if (!del) {
                if (st->n_data == cap_d) st->data = fl_realloc(st->data, (cap_d = cap_d ? cap_d * 2 : 64) * sizeof *f);
                f = &st->data[st->n_data++];
            } else {
                if (st->n_dels == cap_x) st->dels = fl_realloc(st->dels, (cap_x = cap_x ? cap_x * 2 : 16) * sizeof *f);
                f = &st->dels[st->n_dels++];
            }
            memset(f, 0, sizeof *f);
            f->en = en;
            f->spec_id = st->mfs[m].partition_spec_id;
            f->seq = en->has_sequence_number ? en->sequence_number : st->mfs[m].sequence_number;
            f->manifest = m;
            part_key(&f->key, f->spec_id, &en->file);
            const fl_part_spec_t *sp = spec_by_id(j, f->spec_id);
            f->global = en->file.n_partition == 0 || (sp && fl_part_spec_unpartitioned(sp));
            f->dv = del && (en->file.has_content_offset ||
                            (en->file.file_format && !strcasecmp(en->file.file_format, "PUFFIN")));
        }
    }
    if (st->n_data) qsort(st->data, st->n_data, sizeof *st->data, cmp_sfile_path);
    return FL_OK;
}

static sfile_t *find_data(const state_t *st, const char *path)
{
    sfile_t key;
    fl_manifest_entry_t en;
    memset(&en, 0, sizeof en);
    en.file.file_path = (char *)path;
    key.en = &en;
    return bsearch(&key, st->data, st->n_data, sizeof *st->data, cmp_sfile_path);
}

/* Iceberg's scope: a delete file names its data file, or is global (an
 * unpartitioned spec), or shares the data file's spec and partition. */
static bool in_scope(const sfile_t *d, const sfile_t *f)
{
    if (d->en->file.referenced_data_file) return !strcmp(d->en->file.referenced_data_file, f->en->file.file_path);
    if (d->global) return true;
    return d->key.len == f->key.len && !memcmp(d->key.ptr, f->key.ptr, d->key.len);
}

/* Position deletes apply to data seq <= delete seq, equality deletes to data seq < delete seq. */
static bool applies(const sfile_t *d, const sfile_t *f)
{
    if (!in_scope(d, f)) return false;
    return d->en->file.content == 2 ? f->seq < d->seq : f->seq <= d->seq;
}

/* ---- planning ---- */

typedef struct group {
    int32_t spec_id;
    char **paths;               /* owned copies of the input paths */
    size_t n;
    int64_t bytes, records;
    size_t *dels;               /* indices into the start state's dels */
    size_t n_dels;
    bool dv, spec_change;
    fl_data_file_t *out;        /* written files */
    size_t n_out;
    int64_t rows_out, bytes_out;
    bool failed, committed;
} group_t;

static void group_free(group_t *g)
{
    for (size_t i = 0; i < g->n; i++) free(g->paths[i]);
    free(g->paths);
    free(g->dels);
    for (size_t i = 0; i < g->n_out; i++) fl_data_file_free(&g->out[i]);
    free(g->out);
    memset(g, 0, sizeof *g);
}

typedef struct cand {
    size_t idx;                 /* into start.data */
    bool has_deletes;
} cand_t;

static _Thread_local const state_t *g_sort_state; /* qsort context of this thread: set only around the sort below */

static int cmp_cand(const void *x, const void *y)
{
    const sfile_t *a = &g_sort_state->data[((const cand_t *)x)->idx];
    const sfile_t *b = &g_sort_state->data[((const cand_t *)y)->idx];
    size_t n = a->key.len < b->key.len ? a->key.len : b->key.len;
    int c = memcmp(a->key.ptr, b->key.ptr, n);
    if (c) return c;
    if (a->key.len != b->key.len) return a->key.len < b->key.len ? -1 : 1;
    int64_t sa = a->en->file.file_size_in_bytes, sb = b->en->file.file_size_in_bytes;
    if (sa != sb) return sa > sb ? -1 : 1;
    return strcmp(a->en->file.file_path, b->en->file.file_path);
}

static void group_add_del(group_t *g, size_t d)
{
    for (size_t i = 0; i < g->n_dels; i++)
        if (g->dels[i] == d) return;
    g->dels = fl_realloc(g->dels, (g->n_dels + 1) * sizeof *g->dels);
    g->dels[g->n_dels++] = d;
}

/* Groups worth rewriting in st, in partition order. */
static void plan_groups(job_t *j, const state_t *st, group_t **out, size_t *n_out, size_t *skipped,
                        char *why, size_t whylen)
{
    *out = NULL;
    *n_out = 0;
    *skipped = 0;
    cand_t *c = fl_calloc(st->n_data + 1, sizeof *c);
    size_t nc = 0;
    for (size_t i = 0; i < st->n_data; i++) {
        const sfile_t *f = &st->data[i];
        if (!f->en->file.file_format || strcasecmp(f->en->file.file_format, "PARQUET")) continue;
        bool dels = false;
        for (size_t d = 0; d < st->n_dels && !dels; d++) dels = applies(&st->dels[d], f);
        if (f->en->file.file_size_in_bytes < j->min_bytes || dels || f->spec_id != j->default_spec)
            c[nc++] = (cand_t){ i, dels };
    }
    g_sort_state = st;
    qsort(c, nc, sizeof *c, cmp_cand);
    g_sort_state = NULL;
    /* bin-pack: groups of one target; sorted: a partition's candidates up to
     * the sort group cap, so that one group writes a run of sorted files */
    int64_t cap = j->strategy == FL_REWRITE_BINPACK ? j->target : FL_REWRITE_SORT_GROUP_BYTES;
    if (cap > j->max_commit) cap = j->max_commit;
    group_t *gs = NULL;
    size_t ng = 0;
    for (size_t a = 0; a < nc;) {
        const sfile_t *fa = &st->data[c[a].idx];
        size_t b = a;
        while (b < nc && st->data[c[b].idx].key.len == fa->key.len &&
               !memcmp(st->data[c[b].idx].key.ptr, fa->key.ptr, fa->key.len))
            b++;
        /* first-fit decreasing over [a, b) (sorted by size, largest first) */
        size_t first = ng;
        for (size_t k = a; k < b; k++) {
            const sfile_t *f = &st->data[c[k].idx];
            int64_t sz = f->en->file.file_size_in_bytes;
            group_t *g = NULL;
            for (size_t x = first; x < ng && !g; x++)
                if (gs[x].bytes + sz <= cap) g = &gs[x];
            if (!g) {
                gs = fl_realloc(gs, (ng + 1) * sizeof *gs);
                g = &gs[ng++];
                memset(g, 0, sizeof *g);
                g->spec_id = f->spec_id;
                g->spec_change = f->spec_id != j->default_spec;
            }
            g->paths = fl_realloc(g->paths, (g->n + 1) * sizeof *g->paths);
            g->paths[g->n++] = fl_strdup(f->en->file.file_path);
            g->bytes += sz;
            g->records += f->en->file.record_count;
            for (size_t d = 0; d < st->n_dels; d++)
                if (applies(&st->dels[d], f)) {
                    group_add_del(g, d);
                    if (st->dels[d].dv) g->dv = true;
                }
        }
        a = b;
    }
    free(c);
    /* keep the groups worth it */
    size_t keep = 0;
    for (size_t x = 0; x < ng; x++) {
        group_t *g = &gs[x];
        bool worth = g->n >= (size_t)j->o.min_input_files || g->n_dels || g->spec_change;
        if (!worth) { group_free(g); continue; }
        gs[keep++] = *g;
    }
    *out = gs;
    *n_out = keep;
}

/* ---- reading: deletes and data ---- */

/* The vector of field id in a batch (through structs), with its enclosing
 * struct vectors so a null ancestor reads as null. */
typedef struct colref {
    const fl_vec_t *chain[32];
    int depth;
} colref_t;

static bool find_col(const fl_vec_t *v, int32_t id, colref_t *r)
{
    for (uint32_t c = 0; c < v->n_children; c++) {
        const fl_vec_t *ch = &v->children[c];
        if (r->depth >= 32) return false;
        r->chain[r->depth++] = ch;
        if (ch->field->id == id) return true;
        if (ch->field->kind == FL_TYPE_STRUCT && find_col(ch, id, r)) return true;
        r->depth--;
    }
    return false;
}

static void row_key(const colref_t *cols, size_t n, size_t row, fl_buf_t *k)
{
    fl_buf_reset(k);
    for (size_t i = 0; i < n; i++) {
        fl_ice_value_t v = { .kind = FL_ICE_NULL };
        bool null = cols[i].depth == 0;
        for (int d = 0; d < cols[i].depth && !null; d++) null = fl_vec_is_null(cols[i].chain[d], row);
        if (!null && fl_vec_ice_value(cols[i].chain[cols[i].depth - 1], row, &v)) v.kind = FL_ICE_NULL;
        fl_append_key_append(k, &v);
    }
}

/* An equality delete file loaded: its rows' keys over its equality ids, sorted. */
typedef struct eqset {
    size_t del;                 /* index into the start state's dels */
    int32_t *ids;
    size_t n_ids;
    fl_buf_t keys;              /* concatenated */
    size_t *off;                /* n + 1 offsets into keys */
    size_t n;
    size_t *order;              /* sorted key order */
} eqset_t;

static _Thread_local const eqset_t *g_eq; /* qsort context of this thread (maintenance runs jobs on several) */

static int cmp_key(const eqset_t *s, size_t a, const void *p, size_t n)
{
    size_t la = s->off[a + 1] - s->off[a];
    size_t m = la < n ? la : n;
    int c = m ? memcmp(s->keys.ptr + s->off[a], p, m) : 0;
    return c ? c : (la > n) - (la < n);
}

static int cmp_order(const void *x, const void *y)
{
    size_t b = *(const size_t *)y;
    return cmp_key(g_eq, *(const size_t *)x, g_eq->keys.ptr + g_eq->off[b], g_eq->off[b + 1] - g_eq->off[b]);
}

static bool eq_contains(const eqset_t *s, const fl_buf_t *k)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = cmp_key(s, s->order[mid], k->ptr, k->len);
        if (!c) return true;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return false;
}

static void eqset_free(eqset_t *s)
{
    free(s->ids);
    fl_buf_free(&s->keys);
    free(s->off);
    free(s->order);
}

/* Open a Parquet file from storage: *buf holds its bytes (the reader reads them). */
static fl_err_t open_parquet(job_t *j, const char *path, fl_buf_t *buf, fl_pq_reader_t **r, char *err, size_t errlen)
{
    fl_buf_reset(buf);
    fl_err_t e = j->ops.get(j->ops.ctx, path, buf);
    if (e) return fl_err_fmt(err, errlen, e, "reading %s failed: %s", path, fl_err_str(e));
    if ((e = fl_pq_reader_open(r, fl_pq_source_mem(buf->ptr, buf->len))))
        return fl_err_fmt(err, errlen, e, "%s: not a readable Parquet file", path);
    if (j->name_mapping) fl_pq_reader_name_mapping(*r, fl_slice_cstr(j->name_mapping));
    return FL_OK;
}

/* Read every row group of r, calling fn on each batch. */
typedef fl_err_t (*batch_fn)(void *ctx, const fl_vec_t *batch);

static fl_err_t read_all(fl_pq_reader_t *r, const char *path, batch_fn fn, void *ctx, char *err, size_t errlen)
{
    fl_vec_t v;
    memset(&v, 0, sizeof v);
    fl_err_t e = FL_OK;
    for (bool done = false; !done && !e;) {
        if ((e = fl_pq_reader_next(r, &v, &done))) {
            fl_err_fmt(err, errlen, e, "%s: %s", path, fl_pq_reader_error(r));
            break;
        }
        if (!done && v.len) e = fn(ctx, &v);
    }
    fl_vec_free(&v);
    return e;
}

/* Position deletes for the group's files: (file index, pos) pairs. */
typedef struct posdel {
    uint32_t file;
    int64_t pos;
} posdel_t;

typedef struct pos_ctx {
    const group_t *g;
    const state_t *st;
    const sfile_t *del;
    const bool *has_dv;         /* per group file: a deletion vector applies (position files are then ignored) */
    posdel_t *v;
    size_t n, cap;
} pos_ctx_t;

static fl_err_t pos_batch(void *ctx, const fl_vec_t *b)
{
    pos_ctx_t *p = ctx;
    const fl_vec_t *path = &b->children[0], *pos = &b->children[1];
    for (size_t i = 0; i < b->len; i++) {
        if (fl_vec_is_null(path, i) || fl_vec_is_null(pos, i)) continue;
        fl_slice_t s = fl_vec_bytes_at(path, i);
        for (size_t f = 0; f < p->g->n; f++) {
            if (strlen(p->g->paths[f]) != s.len || memcmp(p->g->paths[f], s.ptr, s.len)) continue;
            const sfile_t *df = find_data(p->st, p->g->paths[f]);
            if (!df || !applies(p->del, df) || p->has_dv[f]) break;
            if (p->n == p->cap) p->v = fl_realloc(p->v, (p->cap = p->cap ? p->cap * 2 : 1024) * sizeof *p->v);
            p->v[p->n++] = (posdel_t){ (uint32_t)f, fl_vec_i64(pos, i) };
            break;
        }
    }
    return FL_OK;
}

static int cmp_posdel(const void *x, const void *y)
{
    const posdel_t *a = x, *b = y;
    if (a->file != b->file) return a->file < b->file ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

typedef struct eq_ctx {
    eqset_t *s;
    fl_buf_t k;
} eq_ctx_t;

static fl_err_t eq_batch(void *ctx, const fl_vec_t *b)
{
    eq_ctx_t *c = ctx;
    eqset_t *s = c->s;
    colref_t cols[FL_ICEBERG_MAX_EQUALITY_IDS];
    size_t n = s->n_ids;
    for (size_t i = 0; i < n; i++) {
        memset(&cols[i], 0, sizeof cols[i]);
        if (!find_col(b, s->ids[i], &cols[i])) cols[i].depth = 0;
    }
    for (size_t r = 0; r < b->len; r++) {
        row_key(cols, n, r, &c->k);
        s->off = fl_realloc(s->off, (s->n + 2) * sizeof *s->off);
        if (!s->n) s->off[0] = 0;
        fl_buf_add(&s->keys, c->k.ptr, c->k.len);
        s->off[++s->n] = s->keys.len;
    }
    return FL_OK;
}

/* A projection of the schema's top-level fields holding any of ids. */
static void eq_schema(const fl_field_t *schema, const int32_t *ids, size_t n, fl_field_t *out)
{
    memset(out, 0, sizeof *out);
    fl_field_set(out, 0, "table", true, FL_TYPE_STRUCT);
    for (uint32_t c = 0; c < schema->n_children; c++) {
        bool want = false;
        for (size_t i = 0; i < n && !want; i++) want = fl_field_find(&schema->children[c], ids[i]) != NULL;
        if (!want) continue;
        fl_field_t *ch = fl_field_add_child(out);
        fl_field_copy(ch, &schema->children[c]);
    }
}

typedef struct data_ctx {
    job_t *j;
    const int64_t *pos;         /* this file's deleted positions, sorted */
    size_t n_pos, at;
    int64_t row;                /* position of the batch's first row */
    eqset_t **eq;               /* the equality sets applying to this file */
    size_t n_eq;
    colref_t *cols;             /* per set, FL_ICEBERG_MAX_EQUALITY_IDS columns: room for every set of the group */
    fl_vec_t stage;
    uint32_t *keep;
    size_t keep_cap;
    fl_buf_t k;
    int64_t rows_out;
    bool lineage;               /* v3: fill _row_id / _last_updated_sequence_number (the last two columns) */
    bool has_first_row_id;      /* this file's first_row_id (inherited), if it has one */
    int64_t first_row_id, data_seq;
    fl_vec_t *acc;              /* sort/z-order: the group's rows so far (NULL: bin-pack, write through) */
    fl_vec_t sorted;            /* a chunk of acc in sorted order */
    char *err;
    size_t errlen;
} data_ctx_t;

/* Sort/z-order: write the rows held in acc in the job's order, in chunks of
 * about an eighth of the target (files roll between chunks), and empty it. */
static fl_err_t flush_sorted(data_ctx_t *d)
{
    job_t *j = d->j;
    fl_vec_t *acc = d->acc;
    size_t n = acc->len;
    if (!n) return FL_OK;
    size_t avg = fl_vec_bytes(acc) / n + 1;
    size_t chunk = (size_t)(j->target / 8) / avg;
    if (chunk < 64) chunk = 64;
    if (chunk > 65536) chunk = 65536;
    uint32_t *perm = fl_malloc(n * sizeof *perm);
    fl_err_t e = fl_sort_permutation(&j->order, j->strategy == FL_REWRITE_ZORDER, acc, perm, d->err, d->errlen);
    if (!d->sorted.field) fl_vec_init(&d->sorted, acc->field);
    for (size_t a = 0; a < n && !e; a += chunk) {
        fl_vec_clear(&d->sorted);
        fl_vec_take(&d->sorted, acc, perm + a, n - a < chunk ? n - a : chunk);
        e = fl_append_write(j->app, &d->sorted, d->err, d->errlen);
    }
    free(perm);
    fl_vec_clear(acc);
    j->res->sorted_runs++;
    return e;
}

/* v3 row lineage (spec "Row lineage assignment"): a row whose _row_id is null
 * gets its file's first_row_id + its position (null without one), a null
 * _last_updated_sequence_number the file's data sequence number; the values
 * are then written as they are, so the rows keep them in the new files
 * (which get the starting snapshot's sequence number and new row ids). The
 * two columns of the reader's batch are replaced (it re-binds every batch). */
static void fill_lineage(data_ctx_t *d, fl_vec_t *b)
{
    if (b->n_children < 2) return;
    fl_vec_t *rid = &b->children[b->n_children - 2], *lus = &b->children[b->n_children - 1];
    if (rid->field->id != FL_APPEND_ROW_ID_FIELD || lus->field->id != FL_APPEND_LAST_UPDATED_FIELD) return;
    fl_vec_t nr, nl;
    fl_vec_init(&nr, rid->field);
    fl_vec_init(&nl, lus->field);
    fl_vec_reserve(&nr, b->len);
    fl_vec_reserve(&nl, b->len);
    bool rid_ok = rid->len == b->len, lus_ok = lus->len == b->len;
    for (size_t r = 0; r < b->len; r++) {
        if (rid_ok && !fl_vec_is_null(rid, r)) fl_vec_append_i64(&nr, fl_vec_i64(rid, r));
        else if (d->has_first_row_id) fl_vec_append_i64(&nr, d->first_row_id + d->row + (int64_t)r);
        else fl_vec_append_null(&nr);
        fl_vec_append_i64(&nl, lus_ok && !fl_vec_is_null(lus, r) ? fl_vec_i64(lus, r) : d->data_seq);
    }
    fl_vec_free(rid);
    *rid = nr;
    fl_vec_free(lus);
    *lus = nl;
}

static fl_err_t data_batch(void *ctx, const fl_vec_t *cb)
{
    data_ctx_t *d = ctx;
    fl_vec_t *b = (fl_vec_t *)cb; /* the reader's batch: lineage columns are filled in place */
    if (d->lineage) fill_lineage(d, b);
    if (d->keep_cap < b->len) d->keep = fl_realloc(d->keep, (d->keep_cap = b->len) * sizeof *d->keep);
    for (size_t s = 0; s < d->n_eq; s++)
        for (size_t i = 0; i < d->eq[s]->n_ids; i++) {
            colref_t *c = &d->cols[s * FL_ICEBERG_MAX_EQUALITY_IDS + i];
            memset(c, 0, sizeof *c);
            if (!find_col(b, d->eq[s]->ids[i], c)) c->depth = 0;
        }
    size_t nk = 0;
    for (size_t r = 0; r < b->len; r++) {
        int64_t p = d->row + (int64_t)r;
        while (d->at < d->n_pos && d->pos[d->at] < p) d->at++;
        if (d->at < d->n_pos && d->pos[d->at] == p) continue;
        bool gone = false;
        for (size_t s = 0; s < d->n_eq && !gone; s++) {
            row_key(&d->cols[s * FL_ICEBERG_MAX_EQUALITY_IDS], d->eq[s]->n_ids, r, &d->k);
            gone = eq_contains(d->eq[s], &d->k);
        }
        if (!gone) d->keep[nk++] = (uint32_t)r;
    }
    d->row += (int64_t)b->len;
    d->rows_out += (int64_t)nk;
    if (!nk) return FL_OK;
    if (d->acc) {
        fl_vec_take(d->acc, b, d->keep, nk);
        int64_t cap = d->j->o.sort_mem_bytes > 0 ? d->j->o.sort_mem_bytes : FL_REWRITE_SORT_MEM_BYTES;
        return (int64_t)fl_vec_bytes(d->acc) >= cap ? flush_sorted(d) : FL_OK;
    }
    if (nk == b->len) return fl_append_write(d->j->app, b, d->err, d->errlen);
    if (!d->stage.field) fl_vec_init(&d->stage, b->field);
    fl_vec_clear(&d->stage);
    fl_vec_take(&d->stage, b, d->keep, nk);
    return fl_append_write(d->j->app, &d->stage, d->err, d->errlen);
}

/* The group's deletion vectors (v3) into pc's positions, has_dv[f] set for
 * each file one applies to. They are taken in Puffin-file order, so a file
 * holding several (Spark writes one per task) is read and its footer parsed
 * once. */
static _Thread_local const state_t *g_dv_state; /* qsort context of this thread */

static int cmp_dv_path(const void *x, const void *y)
{
    const sfile_t *a = &g_dv_state->dels[*(const size_t *)x], *b = &g_dv_state->dels[*(const size_t *)y];
    return strcmp(a->en->file.file_path, b->en->file.file_path);
}

static fl_err_t load_dvs(job_t *j, const state_t *st, const group_t *g, pos_ctx_t *pc, bool *has_dv, fl_buf_t *buf,
                         char *err, size_t errlen)
{
    size_t *order = fl_malloc((g->n_dels + 1) * sizeof *order), n_dv = 0;
    for (size_t x = 0; x < g->n_dels; x++)
        if (st->dels[g->dels[x]].dv) order[n_dv++] = g->dels[x];
    g_dv_state = st;
    qsort(order, n_dv, sizeof *order, cmp_dv_path);
    g_dv_state = NULL;
    const char *loaded = NULL;  /* the Puffin file in buf, its footer in blobs */
    fl_puffin_blob_t *blobs = NULL;
    size_t n_blobs = 0;
    fl_err_t e = FL_OK;
    for (size_t x = 0; x < n_dv && !e; x++) {
        const sfile_t *d = &st->dels[order[x]];
        const fl_data_file_t *df = &d->en->file;
        /* without it a DV would scope to its whole partition (and could be dropped unapplied) */
        if (!df->referenced_data_file) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "%s: deletion vector without referenced_data_file",
                           df->file_path);
            break;
        }
        size_t f = 0;
        while (f < g->n && strcmp(g->paths[f], df->referenced_data_file)) f++;
        const sfile_t *data = f < g->n ? find_data(st, g->paths[f]) : NULL;
        if (!data || !applies(d, data)) continue;
        if (!loaded || strcmp(loaded, df->file_path)) {
            fl_puffin_blobs_free(blobs, n_blobs);
            blobs = NULL;
            n_blobs = 0;
            loaded = NULL;
            if (df->file_size_in_bytes > FL_PUFFIN_MAX_FILE_BYTES) {
                e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "%s: Puffin file of %" PRId64 " bytes (at most %lld)",
                               df->file_path, df->file_size_in_bytes, (long long)FL_PUFFIN_MAX_FILE_BYTES);
                break;
            }
            fl_buf_reset(buf);
            if ((e = j->ops.get(j->ops.ctx, df->file_path, buf))) {
                fl_err_fmt(err, errlen, e, "reading %s failed: %s", df->file_path, fl_err_str(e));
                break;
            }
            char why[256];
            if ((e = fl_puffin_footer(fl_slice(buf->ptr, buf->len), &blobs, &n_blobs, why, sizeof why))) {
                fl_err_fmt(err, errlen, e, "%s: %s", df->file_path, why);
                break;
            }
            loaded = df->file_path;
        }
        fl_roaring64_t bm;
        char why[256];
        if ((e = fl_puffin_read_dv(fl_slice(buf->ptr, buf->len), blobs, n_blobs,
                                   df->has_content_offset ? df->content_offset : -1,
                                   df->has_content_offset ? df->content_size_in_bytes : -1, df->referenced_data_file,
                                   df->record_count, &bm, why, sizeof why))) {
            fl_err_fmt(err, errlen, e, "%s: %s", df->file_path, why);
            break;
        }
        /* positions past the data file's rows cannot delete anything */
        int64_t *v = NULL;
        size_t n = 0;
        int64_t rows = data->en->file.record_count;
        fl_roaring64_values(&bm, rows > 0 ? (uint64_t)rows : 0, &v, &n);
        fl_roaring64_free(&bm);
        if (pc->n + n > pc->cap) pc->v = fl_realloc(pc->v, (pc->cap = pc->n + n + 1024) * sizeof *pc->v);
        for (size_t i = 0; i < n; i++) pc->v[pc->n++] = (posdel_t){ (uint32_t)f, v[i] };
        free(v);
        has_dv[f] = true;
        j->res->delete_files_applied++;
    }
    fl_puffin_blobs_free(blobs, n_blobs);
    free(order);
    return e;
}

/* Rewrite one group: read its rows, drop the deleted ones, write new files. */
static fl_err_t rewrite_group(job_t *j, const state_t *st, group_t *g, char *err, size_t errlen)
{
    fl_buf_t buf;
    fl_buf_init(&buf, 0);
    pos_ctx_t pc;
    memset(&pc, 0, sizeof pc);
    pc.g = g;
    pc.st = st;
    eqset_t *eqs = fl_calloc(g->n_dels + 1, sizeof *eqs);
    size_t n_eqs = 0;
    fl_field_t pos_schema;
    memset(&pos_schema, 0, sizeof pos_schema);
    fl_field_set(&pos_schema, 0, "table", true, FL_TYPE_STRUCT);
    fl_field_set(fl_field_add_child(&pos_schema), POS_FILE_PATH_ID, "file_path", true, FL_TYPE_STRING);
    fl_field_set(fl_field_add_child(&pos_schema), POS_POS_ID, "pos", true, FL_TYPE_LONG);
    data_ctx_t dc;
    memset(&dc, 0, sizeof dc);
    fl_buf_init(&dc.k, 0);
    fl_err_t e = FL_OK;
    fl_pq_reader_t *r = NULL;
    fl_vec_t *acc = NULL;
    bool *has_dv = fl_calloc(g->n + 1, sizeof *has_dv);
    pc.has_dv = has_dv;

    /* deletion vectors first: a data file with one ignores position delete files */
    if ((e = load_dvs(j, st, g, &pc, has_dv, &buf, err, errlen))) goto out;
    /* the other deletes */
    for (size_t x = 0; x < g->n_dels && !e; x++) {
        const sfile_t *d = &st->dels[g->dels[x]];
        const char *path = d->en->file.file_path;
        if (d->dv) continue;
        if ((e = open_parquet(j, path, &buf, &r, err, errlen))) break;
        if (d->en->file.content == 1) {
            pc.del = d;
            if ((e = fl_pq_reader_project(r, &pos_schema)))
                fl_err_fmt(err, errlen, e, "%s: not a position delete file", path);
            else
                e = read_all(r, path, pos_batch, &pc, err, errlen);
        } else {
            eqset_t *s = &eqs[n_eqs++];
            s->del = g->dels[x];
            fl_buf_init(&s->keys, 0);
            if (!d->en->file.n_equality_ids || d->en->file.n_equality_ids > FL_ICEBERG_MAX_EQUALITY_IDS) {
                e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "%s: equality delete file with %zu equality ids", path,
                               d->en->file.n_equality_ids);
            } else {
                s->n_ids = d->en->file.n_equality_ids;
                s->ids = fl_malloc(s->n_ids * sizeof *s->ids);
                memcpy(s->ids, d->en->file.equality_ids, s->n_ids * sizeof *s->ids);
                fl_field_t es;
                eq_schema(&j->schema, s->ids, s->n_ids, &es);
                eq_ctx_t ec = { s, { 0 } };
                fl_buf_init(&ec.k, 0);
                if ((e = fl_pq_reader_project(r, &es)))
                    fl_err_fmt(err, errlen, e, "%s: equality columns do not match the schema", path);
                else
                    e = read_all(r, path, eq_batch, &ec, err, errlen);
                fl_pq_reader_free(r);
                r = NULL;
                fl_buf_free(&ec.k);
                fl_field_free(&es);
                s->order = fl_malloc((s->n + 1) * sizeof *s->order);
                for (size_t i = 0; i < s->n; i++) s->order[i] = i;
                g_eq = s;
                qsort(s->order, s->n, sizeof *s->order, cmp_order);
                g_eq = NULL;
            }
        }
        fl_pq_reader_free(r);
        r = NULL;
        j->res->delete_files_applied++;
    }
    if (e) goto out;
    if (pc.n) qsort(pc.v, pc.n, sizeof *pc.v, cmp_posdel);

    /* the data */
    dc.j = j;
    dc.err = err;
    dc.errlen = errlen;
    dc.lineage = j->lineage;
    if (j->strategy != FL_REWRITE_BINPACK) {
        acc = fl_calloc(1, sizeof *acc);
        fl_vec_init(acc, &j->read_schema);
        dc.acc = acc;
    }
    dc.eq = fl_calloc(n_eqs + 1, sizeof *dc.eq);
    dc.cols = fl_calloc((n_eqs + 1) * FL_ICEBERG_MAX_EQUALITY_IDS, sizeof *dc.cols);
    int64_t *pos = NULL;
    size_t pv = 0;
    for (size_t f = 0; f < g->n && !e; f++) {
        const sfile_t *df = find_data(st, g->paths[f]);
        dc.n_eq = 0;
        for (size_t s = 0; s < n_eqs && df; s++)
            if (applies(&st->dels[eqs[s].del], df)) dc.eq[dc.n_eq++] = &eqs[s];
        size_t pb = pv;
        while (pv < pc.n && pc.v[pv].file == f) pv++;
        free(pos);
        pos = fl_malloc((pv - pb + 1) * sizeof *pos);
        for (size_t i = pb; i < pv; i++) pos[i - pb] = pc.v[i].pos;
        dc.pos = pos;
        dc.n_pos = pv - pb;
        dc.at = 0;
        dc.row = 0;
        dc.has_first_row_id = df && df->en->file.has_first_row_id;
        dc.first_row_id = dc.has_first_row_id ? df->en->file.first_row_id : 0;
        dc.data_seq = df ? df->seq : 0;
        if ((e = open_parquet(j, g->paths[f], &buf, &r, err, errlen))) break;
        if ((e = fl_pq_reader_project(r, &j->read_schema)))
            fl_err_fmt(err, errlen, e, "%s: does not match the table schema", g->paths[f]);
        else
            e = read_all(r, g->paths[f], data_batch, &dc, err, errlen);
        fl_pq_reader_free(r);
        r = NULL;
    }
    free(pos);
    free(dc.eq);
    free(dc.cols);
    if (!e && acc) e = flush_sorted(&dc);
    if (!e) e = fl_append_take_files(j->app, &g->out, &g->n_out, err, errlen);
    g->rows_out = dc.rows_out;
    for (size_t i = 0; i < g->n_out; i++) {
        g->bytes_out += g->out[i].file_size_in_bytes;
        /* files written in the table's sort order say so (Java sets it for sort rewrites, not z-order) */
        if (j->strategy == FL_REWRITE_SORT) {
            g->out[i].has_sort_order_id = true;
            g->out[i].sort_order_id = j->order.order_id;
        }
    }
out:
    fl_vec_free(acc);
    free(acc);
    fl_vec_free(&dc.sorted);
    if (e) fl_append_abort(j->app);
    fl_pq_reader_free(r);
    fl_vec_free(&dc.stage);
    free(dc.keep);
    fl_buf_free(&dc.k);
    free(pc.v);
    free(has_dv);
    for (size_t i = 0; i < n_eqs; i++) eqset_free(&eqs[i]);
    free(eqs);
    fl_field_free(&pos_schema);
    fl_buf_free(&buf);
    return e;
}

/* ---- committing ---- */

static void drop_outputs(job_t *j, group_t *g)
{
    for (size_t i = 0; i < g->n_out; i++) {
        j->ops.del(j->ops.ctx, g->out[i].file_path);
        fl_data_file_free(&g->out[i]);
    }
    g->n_out = 0;
}

static void fail_group(job_t *j, group_t *g, const char *why)
{
    g->failed = true;
    drop_outputs(j, g);
    j->res->groups_failed++;
    size_t n = strlen(why);
    if (n >= sizeof j->res->last_failure) n = sizeof j->res->last_failure - 1;
    memcpy(j->res->last_failure, why, n);
    j->res->last_failure[n] = 0;
    fl_info("rewrite: group of %zu files (spec %d) not committed: %s", g->n, (int)g->spec_id, why);
}

/* Java's validations against the table as it is now (P): the group's files
 * are still live, and no delete added since the start applies to them that
 * the rewritten rows would escape (position deletes; any delete when the
 * group changes spec, as its rows move to another partition). */
static bool group_valid(const job_t *j, const state_t *start, const state_t *P, const group_t *g, char *why,
                        size_t whylen)
{
    for (size_t i = 0; i < g->n; i++) {
        const sfile_t *f = find_data(P, g->paths[i]);
        if (!f) {
            snprintf(why, whylen, "%s is no longer live (rewritten or deleted concurrently)", g->paths[i]);
            return false;
        }
        for (size_t d = 0; d < P->n_dels; d++) {
            const sfile_t *del = &P->dels[d];
            if (del->seq <= start->seq || !applies(del, f)) continue;
            if (del->en->file.content == 1 || g->spec_change || del->dv) {
                snprintf(why, whylen, "a delete file added concurrently (%s) applies to %s", del->en->file.file_path,
                         g->paths[i]);
                return false;
            }
        }
    }
    (void)j;
    return true;
}

static int cmp_str(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

static int cmp_ptr(const void *x, const void *y)
{
    uintptr_t a = (uintptr_t)*(const void *const *)x, b = (uintptr_t)*(const void *const *)y;
    return (a > b) - (a < b);
}

static bool ptr_in(const fl_manifest_entry_t **v, size_t n, const fl_manifest_entry_t *p)
{
    return n && bsearch(&p, v, n, sizeof *v, cmp_ptr) != NULL;
}

static bool in_sorted(char **v, size_t n, const char *s)
{
    return n && bsearch(&s, v, n, sizeof *v, cmp_str) != NULL;
}

/* Write manifest entries and upload it; *mf gets its list record. */
static fl_err_t write_manifest(job_t *j, int32_t spec_id, int32_t content, int64_t sid, int64_t seq,
                               const fl_manifest_entry_t *ents, size_t n, fl_manifest_file_t *mf,
                               char *err, size_t errlen)
{
    const fl_part_spec_t *spec = spec_by_id(j, spec_id);
    if (!spec) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "partition spec %d does not bind to the current schema",
                                 (int)spec_id);
    fl_manifest_writer_t w;
    memset(&w, 0, sizeof w);
    fl_buf_t bytes;
    fl_buf_init(&bytes, 0);
    char *uri = NULL;
    fl_err_t e = fl_manifest_writer_open(&w, j->format_version, &j->schema, j->schema_id, spec, content, sid,
                                         FL_AVRO_CODEC_DEFLATE);
    for (size_t i = 0; i < n && !e; i++) e = fl_manifest_writer_add(&w, &ents[i]);
    if (e) {
        fl_err_fmt(err, errlen, e, "cannot write a manifest: %s", fl_err_str(e));
        goto out;
    }
    fl_buf_t u;
    fl_buf_init(&u, 0);
    fl_buf_printf(&u, "%s/%s-r%d.avro", j->metadata_path, j->uuid, j->file_counter++);
    uri = fl_buf_steal(&u);
    if ((e = fl_manifest_writer_finish(&w, uri, seq, &bytes, mf))) {
        fl_err_fmt(err, errlen, e, "cannot finish a manifest: %s", fl_err_str(e));
        goto out;
    }
    if ((e = j->ops.put(j->ops.ctx, uri, bytes.ptr, bytes.len))) {
        fl_err_fmt(err, errlen, e, "uploading %s failed: %s", uri, fl_err_str(e));
        fl_manifest_file_free(mf);
    }
out:
    free(uri);
    fl_manifest_writer_free(&w);
    fl_buf_free(&bytes);
    return e;
}

/* One attempt's written objects, deleted when the attempt is not committed. */
typedef struct written {
    fl_manifest_file_t *mfs;    /* the new list, in order */
    size_t n;
    bool *ours;                 /* mfs[i] written by this attempt */
    char *list_uri;
} written_t;

static void written_add(written_t *w, fl_manifest_file_t *mf, bool ours)
{
    w->mfs = fl_realloc(w->mfs, (w->n + 1) * sizeof *w->mfs);
    w->ours = fl_realloc(w->ours, (w->n + 1) * sizeof *w->ours);
    w->mfs[w->n] = *mf;
    w->ours[w->n++] = ours;
}

static void written_free(job_t *j, written_t *w, bool delete_ours)
{
    for (size_t i = 0; i < w->n; i++) {
        if (w->ours[i] && delete_ours) j->ops.del(j->ops.ctx, w->mfs[i].manifest_path);
        if (w->ours[i]) fl_manifest_file_free(&w->mfs[i]);
    }
    if (w->list_uri && delete_ours) j->ops.del(j->ops.ctx, w->list_uri);
    free(w->list_uri);
    free(w->mfs);
    free(w->ours);
    memset(w, 0, sizeof *w);
}

/* Copy an untouched manifest record for the list (shallow: borrowed from P). */
static void written_carry(written_t *w, const fl_manifest_file_t *mf)
{
    fl_manifest_file_t c = *mf;
    written_add(w, &c, false);
}

static fl_err_t write_list(job_t *j, written_t *w, int64_t sid, int64_t parent, int64_t seq, int attempt,
                           char *err, size_t errlen)
{
    fl_buf_t b, u;
    fl_buf_init(&b, 0);
    fl_buf_init(&u, 0);
    fl_err_t e;
    j->list_first_row_id = j->list_next_row_id = 0;
    if (j->format_version >= 3) {
        /* row lineage: new data manifests (ours) take row ids from the table's next-row-id as it is now */
        j->list_first_row_id = (int64_t)json_integer_value(json_object_get(j->md, "next-row-id"));
        e = fl_manifest_list_write_v3(sid, parent, seq, j->list_first_row_id, w->mfs, w->n, FL_AVRO_CODEC_DEFLATE, &b,
                                      &j->list_next_row_id);
    } else {
        e = fl_manifest_list_write(j->format_version, sid, parent, seq, w->mfs, w->n, FL_AVRO_CODEC_DEFLATE, &b);
    }
    if (e) {
        fl_buf_free(&b);
        return fl_err_fmt(err, errlen, e, "cannot write the manifest list: %s", fl_err_str(e));
    }
    fl_buf_printf(&u, "%s/snap-%" PRId64 "-%d-%s.avro", j->metadata_path, sid, attempt, j->uuid);
    w->list_uri = fl_buf_steal(&u);
    if ((e = j->ops.put(j->ops.ctx, w->list_uri, b.ptr, b.len)))
        fl_err_fmt(err, errlen, e, "uploading %s failed: %s", w->list_uri, fl_err_str(e));
    fl_buf_free(&b);
    return e;
}

/* Reload after a 409; FL_ERR_CONFLICT if the table was replaced. */
static fl_err_t reload(job_t *j, char *err, size_t errlen)
{
    json_t *md = NULL;
    char *loc = NULL;
    fl_err_t e = j->ops.load(j->ops.ctx, &md, &loc, err, errlen);
    free(loc);
    if (e) return e;
    const char *nu = json_string_value(json_object_get(md, "table-uuid"));
    if (nu && strcmp(nu, j->table_uuid)) {
        json_decref(md);
        return fl_err_fmt(err, errlen, FL_ERR_CONFLICT, "the table was replaced during compaction (uuid changed)");
    }
    json_decref(j->md);
    j->md = md;
    return FL_OK;
}

typedef enum { C_DONE, C_RETRY, C_FAILED } cresult_t;

/* Past the optimistic attempts: holds the table's commit lock (when the ops can)
 * and reloads under it, so this attempt builds on the pointer it will commit
 * against. True when held (the caller lets go at the attempt's end); *e is set
 * when the reload failed. */
static bool hold_for(job_t *j, int attempt, fl_err_t *e, char *err, size_t errlen)
{
    *e = FL_OK;
    if (attempt <= FL_REWRITE_OPTIMISTIC_ATTEMPTS || !j->ops.hold) return false;
    j->ops.hold(j->ops.ctx, true);
    *e = reload(j, err, errlen);
    return true;
}

/* Commit add-snapshot + set-snapshot-ref(main) asserting uuid and main == parent. */
static cresult_t commit_snapshot(job_t *j, int64_t sid, int64_t parent, int64_t seq, const char *list_uri,
                                 json_t *summary, int attempt, fl_err_t *e, char *err, size_t errlen)
{
    json_t *snap = json_pack("{s:I,s:I,s:I,s:s,s:o,s:i}", "snapshot-id", (json_int_t)sid, "sequence-number",
                             (json_int_t)seq, "timestamp-ms", (json_int_t)fl_now_ms(), "manifest-list", list_uri,
                             "summary", summary, "schema-id", (int)j->schema_id);
    if (parent >= 0) json_object_set_new(snap, "parent-snapshot-id", json_integer(parent));
    if (j->format_version >= 3) {
        json_object_set_new(snap, "first-row-id", json_integer(j->list_first_row_id));
        json_object_set_new(snap, "added-rows", json_integer(j->list_next_row_id - j->list_first_row_id));
    }
    json_t *updates = json_pack("[{s:s,s:o},{s:s,s:s,s:s,s:I}]", "action", "add-snapshot", "snapshot", snap,
                                "action", "set-snapshot-ref", "ref-name", "main", "type", "branch", "snapshot-id",
                                (json_int_t)sid);
    json_t *reqs = json_pack("[{s:s,s:s},{s:s,s:s,s:o}]", "type", "assert-table-uuid", "uuid", j->table_uuid, "type",
                             "assert-ref-snapshot-id", "ref", "main", "snapshot-id",
                             parent >= 0 ? json_integer(parent) : json_null());
    json_t *newmd = NULL;
    int status = 0;
    char cerr[512] = "";
    j->res->commit_attempts++;
    *e = j->ops.commit(j->ops.ctx, reqs, updates, &newmd, &status, cerr, sizeof cerr);
    json_decref(reqs);
    json_decref(updates);
    if (!*e && status >= 200 && status < 300) {
        if (newmd) {
            json_decref(j->md);
            j->md = newmd;
        } else {
            reload(j, NULL, 0);
        }
        j->res->commits++;
        return C_DONE;
    }
    json_decref(newmd);
    if (status == 409 && attempt < MAX_COMMIT_ATTEMPTS) {
        /* back off, then reload: the re-base is built on what the next attempt commits against */
        usleep((useconds_t)((attempt < 10 ? attempt : 10) * 10000));
        if ((*e = reload(j, err, errlen))) return C_FAILED;
        return C_RETRY;
    }
    if (status == 409) {
        *e = fl_err_fmt(err, errlen, FL_ERR_CONFLICT, "commit kept conflicting after %d attempts: %s", attempt, cerr);
        return C_FAILED;
    }
    if (status >= 400 && status < 500) {
        *e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "the catalog refused the commit (%d): %s", status, cerr);
        return C_FAILED;
    }
    /* unknown outcome: there if the snapshot is */
    if (!reload(j, NULL, 0) && fl_append_find_snapshot(j->md, sid)) {
        j->res->commits++;
        return C_DONE;
    }
    *e = fl_err_fmt(err, errlen, FL_ERR_IO, "commit state unknown (status %d): %s", status, cerr);
    return C_FAILED;
}

static void carry_totals(json_t *summary, json_t *psnap, int64_t d_records, int64_t d_files, int64_t d_size,
                         int64_t d_delfiles, int64_t d_posdel, int64_t d_eqdel)
{
    bool ok = psnap != NULL;
    int64_t tr = 0, tf = 0, ts = 0, tdel = 0, tpd = 0, ted = 0;
    if (psnap) {
        tr = fl_append_summary_i64(psnap, "total-records", &ok);
        tf = fl_append_summary_i64(psnap, "total-data-files", &ok);
        ts = fl_append_summary_i64(psnap, "total-files-size", &ok);
        tdel = fl_append_summary_i64(psnap, "total-delete-files", &ok);
        tpd = fl_append_summary_i64(psnap, "total-position-deletes", &ok);
        ted = fl_append_summary_i64(psnap, "total-equality-deletes", &ok);
    }
    if (!ok) return;
    fl_append_set_num(summary, "total-records", tr + d_records);
    fl_append_set_num(summary, "total-files-size", ts + d_size);
    fl_append_set_num(summary, "total-data-files", tf + d_files);
    fl_append_set_num(summary, "total-delete-files", tdel + d_delfiles);
    fl_append_set_num(summary, "total-position-deletes", tpd + d_posdel);
    fl_append_set_num(summary, "total-equality-deletes", ted + d_eqdel);
}

/* Streaming writers' resume points: floe sink's floe.offsets.<group> and the
 * Java Kafka Connect sink's kafka.connect.offsets.<control-topic>.<group>. A
 * replace snapshot holds the same rows as its parent, so the nearest ancestor's
 * value of each such key is still true on it: it is carried into the summary
 * (walking from parent, at most FL_REWRITE_MAX_ANCESTRY snapshots, stopping
 * where history was expired). Without it, expiring the snapshots before a
 * compaction would remove the last copy and a restarted sink would fall back to
 * the Kafka group offsets. Called per attempt, with the parent that attempt
 * commits against, so a sink commit that landed meanwhile is what is carried. */
static void carry_resume_points(json_t *md, int64_t parent, json_t *summary)
{
    static const char *const prefixes[] = { "floe.offsets.", "kafka.connect.offsets." };
    json_t *by_id = json_object();
    size_t i;
    json_t *s;
    char idb[32];
    json_array_foreach(json_object_get(md, "snapshots"), i, s) {
        snprintf(idb, sizeof idb, "%" PRId64, (int64_t)json_integer_value(json_object_get(s, "snapshot-id")));
        json_object_set(by_id, idb, s);
    }
    int64_t id = parent;
    for (int steps = 0; id >= 0 && steps < FL_REWRITE_MAX_ANCESTRY; steps++) {
        snprintf(idb, sizeof idb, "%" PRId64, id);
        s = json_object_get(by_id, idb);
        if (!s) break;
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(s, "summary"), k, v) {
            if (!json_is_string(v) || json_object_get(summary, k)) continue;
            for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++)
                if (!strncmp(k, prefixes[p], strlen(prefixes[p]))) json_object_set(summary, k, v);
        }
        json_t *pp = json_object_get(s, "parent-snapshot-id");
        id = json_is_integer(pp) ? (int64_t)json_integer_value(pp) : -1;
    }
    json_decref(by_id);
}

/* Commit the live groups of g[0..n) as one replace snapshot, re-basing on 409. */
static fl_err_t commit_unit(job_t *j, const state_t *start, group_t *g, size_t n, char *err, size_t errlen)
{
    int64_t sid = fl_append_new_snapshot_id(j->md);
    fl_err_t e = FL_OK;
    if (j->o.before_commit) j->o.before_commit(j->o.before_commit_ctx);
    for (int attempt = 1;; attempt++) {
        state_t P = { 0 };
        written_t w;
        memset(&w, 0, sizeof w);
        char **repl = NULL;
        const fl_manifest_entry_t **dropped = NULL; /* by entry: DVs share their Puffin file's path */
        size_t n_repl = 0, n_dropped = 0;
        bool *touched = NULL, *is_repl = NULL;
        json_t *summary = NULL;
        cresult_t cr = C_FAILED;
        bool held = hold_for(j, attempt, &e, err, errlen);
        int64_t parent = fl_append_main_snapshot(j->md);
        int64_t seq = (int64_t)json_integer_value(json_object_get(j->md, "last-sequence-number")) + 1;
        if (e || (e = load_state(j, parent, &P, err, errlen))) goto attempt_out;
        /* validate */
        for (size_t i = 0; i < n; i++) {
            char why[600];
            if (!g[i].failed && !group_valid(j, start, &P, &g[i], why, sizeof why)) fail_group(j, &g[i], why);
        }
        for (size_t i = 0; i < n; i++)
            if (!g[i].failed)
                for (size_t k = 0; k < g[i].n; k++) {
                    repl = fl_realloc(repl, (n_repl + 1) * sizeof *repl);
                    repl[n_repl++] = g[i].paths[k];
                }
        if (!n_repl) { cr = C_DONE; goto attempt_out; }
        qsort(repl, n_repl, sizeof *repl, cmp_str);
        /* delete files no live data file needs any more */
        is_repl = fl_calloc(P.n_data + 1, sizeof *is_repl);
        for (size_t i = 0; i < P.n_data; i++) is_repl[i] = in_sorted(repl, n_repl, P.data[i].en->file.file_path);
        int64_t rm_pos_files = 0, rm_eq_files = 0, rm_pos = 0, rm_eq = 0, rm_del_size = 0, rm_dvs = 0;
        for (size_t d = 0; d < P.n_dels; d++) {
            const sfile_t *del = &P.dels[d];
            if (del->seq > start->seq) continue;
            bool needed = false;
            for (size_t i = 0; i < P.n_data && !needed; i++) needed = !is_repl[i] && applies(del, &P.data[i]);
            if (needed) continue;
            dropped = fl_realloc(dropped, (n_dropped + 1) * sizeof *dropped);
            dropped[n_dropped++] = del->en;
            /* as Java's summary: a DV counts as a delete file and its positions, its blob as its size */
            rm_del_size += del->dv && del->en->file.has_content_offset ? del->en->file.content_size_in_bytes
                                                                       : del->en->file.file_size_in_bytes;
            if (del->dv) { rm_dvs++; rm_pos += del->en->file.record_count; }
            else if (del->en->file.content == 1) { rm_pos_files++; rm_pos += del->en->file.record_count; }
            else { rm_eq_files++; rm_eq += del->en->file.record_count; }
        }
        if (n_dropped) qsort(dropped, n_dropped, sizeof *dropped, cmp_ptr);
        /* the new files' manifest: data sequence number = the starting snapshot's */
        size_t n_new = 0;
        for (size_t i = 0; i < n; i++) n_new += g[i].failed ? 0 : g[i].n_out;
        int64_t add_rows = 0, add_size = 0, del_rows = 0, del_size = 0;
        if (n_new) {
            fl_manifest_entry_t *me = fl_calloc(n_new, sizeof *me);
            size_t k = 0;
            for (size_t i = 0; i < n; i++)
                for (size_t f = 0; !g[i].failed && f < g[i].n_out; f++, k++) {
                    me[k].status = 1;
                    me[k].has_snapshot_id = true;
                    me[k].snapshot_id = sid;
                    me[k].has_sequence_number = true;
                    me[k].sequence_number = start->seq;
                    me[k].file = g[i].out[f];
                    add_rows += g[i].out[f].record_count;
                    add_size += g[i].out[f].file_size_in_bytes;
                }
            fl_manifest_file_t mf;
            e = write_manifest(j, j->default_spec, 0, sid, seq, me, n_new, &mf, err, errlen);
            free(me);
            if (e) goto attempt_out;
            written_add(&w, &mf, true);
        }
        /* the parent's manifests: rewritten where they hold removed files */
        touched = fl_calloc(P.n_mf + 1, sizeof *touched);
        for (size_t i = 0; i < P.n_data; i++)
            if (is_repl[i]) {
                touched[P.data[i].manifest] = true;
                del_rows += P.data[i].en->file.record_count;
                del_size += P.data[i].en->file.file_size_in_bytes;
            }
        for (size_t d = 0; d < P.n_dels; d++)
            if (ptr_in(dropped, n_dropped, P.dels[d].en)) touched[P.dels[d].manifest] = true;
        for (size_t m = 0; m < P.n_mf; m++) {
            if (!touched[m]) { written_carry(&w, &P.mfs[m]); continue; }
            const mcache_t *c = P.mc[m];
            fl_manifest_entry_t *me = fl_calloc(c->n + 1, sizeof *me);
            size_t k = 0;
            for (size_t x = 0; x < c->n; x++) {
                if (c->ents[x].status == 2) continue;
                me[k] = c->ents[x];
                bool del = P.mfs[m].content != 0 || me[k].file.content != 0;
                bool gone = del ? ptr_in(dropped, n_dropped, &c->ents[x])
                                : in_sorted(repl, n_repl, me[k].file.file_path);
                if (gone) {
                    me[k].status = 2;
                    me[k].snapshot_id = sid;
                } else {
                    me[k].status = 0;
                }
                k++;
            }
            fl_manifest_file_t mf;
            e = write_manifest(j, P.mfs[m].partition_spec_id, P.mfs[m].content, sid, seq, me, k, &mf, err, errlen);
            free(me);
            if (e) goto attempt_out;
            written_add(&w, &mf, true);
        }
        if ((e = write_list(j, &w, sid, parent, seq, attempt, err, errlen))) goto attempt_out;
        /* summary, as Java's RewriteFiles */
        summary = json_object();
        json_object_set_new(summary, "operation", json_string("replace"));
        fl_append_set_num(summary, "added-data-files", (int64_t)n_new);
        fl_append_set_num(summary, "deleted-data-files", (int64_t)n_repl);
        fl_append_set_num(summary, "added-records", add_rows);
        fl_append_set_num(summary, "deleted-records", del_rows);
        fl_append_set_num(summary, "added-files-size", add_size);
        fl_append_set_num(summary, "removed-files-size", del_size + rm_del_size);
        if (n_dropped) {
            fl_append_set_num(summary, "removed-delete-files", (int64_t)n_dropped);
            if (rm_pos_files) fl_append_set_num(summary, "removed-position-delete-files", rm_pos_files);
            if (rm_dvs) fl_append_set_num(summary, "removed-dvs", rm_dvs);
            if (rm_eq_files) fl_append_set_num(summary, "removed-equality-delete-files", rm_eq_files);
            if (rm_pos) fl_append_set_num(summary, "removed-position-deletes", rm_pos);
            if (rm_eq) fl_append_set_num(summary, "removed-equality-deletes", rm_eq);
        }
        {
            /* changed partitions: distinct (spec, partition) among replaced and added */
            size_t changed = 0;
            fl_buf_t *keys = fl_calloc(n_repl + n_new + 1, sizeof *keys);
            size_t nk = 0;
            for (size_t i = 0; i < P.n_data; i++)
                if (is_repl[i]) { fl_buf_init(&keys[nk], 0); fl_buf_add(&keys[nk++], P.data[i].key.ptr, P.data[i].key.len); }
            for (size_t i = 0; i < n; i++)
                for (size_t f = 0; !g[i].failed && f < g[i].n_out; f++) part_key(&keys[nk++], j->default_spec, &g[i].out[f]);
            for (size_t a = 0; a < nk; a++) {
                bool seen = false;
                for (size_t b = 0; b < a && !seen; b++)
                    seen = keys[a].len == keys[b].len && !memcmp(keys[a].ptr, keys[b].ptr, keys[a].len);
                changed += !seen;
            }
            for (size_t a = 0; a < nk; a++) fl_buf_free(&keys[a]);
            free(keys);
            fl_append_set_num(summary, "changed-partition-count", (int64_t)changed);
        }
        carry_resume_points(j->md, parent, summary);
        carry_totals(summary, fl_append_find_snapshot(j->md, parent), add_rows - del_rows, (int64_t)n_new - (int64_t)n_repl,
                     add_size - del_size - rm_del_size, -(int64_t)n_dropped, -rm_pos, -rm_eq);
        cr = commit_snapshot(j, sid, parent, seq, w.list_uri, summary, attempt, &e, err, errlen);
        summary = NULL;
        if (cr == C_DONE) {
            fl_rewrite_result_t *r = j->res;
            for (size_t i = 0; i < n; i++) {
                if (g[i].failed) continue;
                g[i].committed = true;
                r->groups_committed++;
                r->files_in += (int64_t)g[i].n;
                r->bytes_in += g[i].bytes;
                r->records_in += g[i].records;
                r->files_out += (int64_t)g[i].n_out;
                r->bytes_out += g[i].bytes_out;
                r->records_out += g[i].rows_out;
            }
            r->delete_files_removed += (int64_t)n_dropped;
        }
    attempt_out:
        if (held) j->ops.hold(j->ops.ctx, false);
        json_decref(summary);
        written_free(j, &w, cr != C_DONE);
        free(repl);
        free(dropped);
        free(touched);
        free(is_repl);
        state_free(&P);
        if (e && cr != C_RETRY) {
            for (size_t i = 0; i < n; i++)
                if (!g[i].failed) drop_outputs(j, &g[i]);
            return e;
        }
        if (cr == C_DONE) return FL_OK;
        if (cr == C_FAILED) {
            for (size_t i = 0; i < n; i++)
                if (!g[i].failed) drop_outputs(j, &g[i]);
            return e ? e : FL_ERR_IO;
        }
    }
}

/* ---- manifest merge (RewriteManifests) ---- */

static fl_err_t merge_manifests(job_t *j, char *err, size_t errlen)
{
    int64_t target = j->o.manifest_target_bytes > 0 ? j->o.manifest_target_bytes
                                                    : fl_append_prop_i64(j->md, "commit.manifest.target-size-bytes", DEFAULT_MANIFEST_TARGET);
    int64_t sid = fl_append_new_snapshot_id(j->md);
    fl_err_t e = FL_OK;
    for (int attempt = 1;; attempt++) {
        state_t P = { 0 };
        written_t w;
        memset(&w, 0, sizeof w);
        bool *merged = NULL;
        cresult_t cr = C_FAILED;
        int created = 0, replaced = 0;
        int64_t entries = 0;
        bool held = hold_for(j, attempt, &e, err, errlen);
        int64_t parent = fl_append_main_snapshot(j->md);
        int64_t seq = (int64_t)json_integer_value(json_object_get(j->md, "last-sequence-number")) + 1;
        if (!e && parent < 0) cr = C_DONE;
        if (e || cr == C_DONE || (e = load_state(j, parent, &P, err, errlen))) goto attempt_out;
        merged = fl_calloc(P.n_mf + 1, sizeof *merged);
        /* per (spec, content): small manifests in list order, binned up to the target */
        for (size_t a = 0; a < P.n_mf; a++) {
            if (merged[a] || P.mfs[a].manifest_length >= target || !spec_by_id(j, P.mfs[a].partition_spec_id)) continue;
            size_t *same = fl_malloc((P.n_mf + 1) * sizeof *same);
            size_t ns = 0;
            for (size_t b = a; b < P.n_mf; b++)
                if (!merged[b] && P.mfs[b].manifest_length < target &&
                    P.mfs[b].partition_spec_id == P.mfs[a].partition_spec_id && P.mfs[b].content == P.mfs[a].content)
                    same[ns++] = b;
            if (ns <= (size_t)j->o.merge_manifests_min) { free(same); continue; }
            for (size_t s = 0; s < ns;) {
                size_t t = s;
                int64_t bytes = 0;
                while (t < ns && (t == s || bytes + P.mfs[same[t]].manifest_length <= target))
                    bytes += P.mfs[same[t++]].manifest_length;
                if (t - s >= 2) {
                    size_t cap = 0, k = 0;
                    fl_manifest_entry_t *me = NULL;
                    for (size_t x = s; x < t; x++) {
                        const mcache_t *c = P.mc[same[x]];
                        for (size_t y = 0; y < c->n; y++) {
                            if (c->ents[y].status == 2) continue;
                            if (k == cap) me = fl_realloc(me, (cap = cap ? cap * 2 : 256) * sizeof *me);
                            me[k] = c->ents[y];
                            me[k++].status = 0;
                        }
                        merged[same[x]] = true;
                        replaced++;
                    }
                    fl_manifest_file_t mf;
                    e = write_manifest(j, P.mfs[a].partition_spec_id, P.mfs[a].content, sid, seq, me, k, &mf, err,
                                       errlen);
                    free(me);
                    if (e) { free(same); goto attempt_out; }
                    written_add(&w, &mf, true);
                    created++;
                    entries += (int64_t)k;
                }
                s = t;
            }
            free(same);
        }
        if (!created) { cr = C_DONE; goto attempt_out; }
        for (size_t m = 0; m < P.n_mf; m++)
            if (!merged[m]) written_carry(&w, &P.mfs[m]);
        if ((e = write_list(j, &w, sid, parent, seq, attempt, err, errlen))) goto attempt_out;
        json_t *summary = json_object();
        json_object_set_new(summary, "operation", json_string("replace"));
        fl_append_set_num(summary, "manifests-created", created);
        fl_append_set_num(summary, "manifests-kept", (int64_t)(P.n_mf - (size_t)replaced));
        fl_append_set_num(summary, "manifests-replaced", replaced);
        fl_append_set_num(summary, "entries-processed", entries);
        carry_totals(summary, fl_append_find_snapshot(j->md, parent), 0, 0, 0, 0, 0, 0);
        carry_resume_points(j->md, parent, summary);
        cr = commit_snapshot(j, sid, parent, seq, w.list_uri, summary, attempt, &e, err, errlen);
        if (cr == C_DONE) {
            j->res->manifests_created += created;
            j->res->manifests_replaced += replaced;
        }
    attempt_out:
        if (held) j->ops.hold(j->ops.ctx, false);
        written_free(j, &w, cr != C_DONE);
        free(merged);
        state_free(&P);
        if (cr == C_DONE) return FL_OK;
        if (cr == C_FAILED) return e ? e : FL_ERR_IO;
    }
}

/* ---- entry points ---- */

fl_err_t fl_rewrite_plan(const fl_table_ops_t *ops, const fl_rewrite_opts_t *opts, fl_rewrite_plan_t *plan,
                         char *err, size_t errlen)
{
    memset(plan, 0, sizeof *plan);
    fl_rewrite_result_t res;
    memset(&res, 0, sizeof res);
    job_t j;
    state_t st;
    memset(&st, 0, sizeof st);
    fl_err_t e = job_open(&j, ops, opts, &res, err, errlen);
    if (!e) e = load_state(&j, fl_append_main_snapshot(j.md), &st, err, errlen);
    if (!e) {
        group_t *g;
        size_t n;
        char why[256];
        plan_groups(&j, &st, &g, &n, &plan->n_skipped, why, sizeof why);
        plan->snapshot_id = st.snap_id;
        plan->sequence_number = st.seq;
        plan->groups = fl_calloc(n + 1, sizeof *plan->groups);
        plan->n_groups = n;
        for (size_t i = 0; i < n; i++) {
            plan->groups[i].spec_id = g[i].spec_id;
            plan->groups[i].n_files = g[i].n;
            plan->groups[i].bytes = g[i].bytes;
            plan->groups[i].n_deletes = g[i].n_dels;
            plan->groups[i].paths = g[i].paths;
            g[i].paths = NULL;
            g[i].n = 0;
            group_free(&g[i]);
        }
        free(g);
    }
    state_free(&st);
    job_free(&j);
    return e;
}

void fl_rewrite_plan_free(fl_rewrite_plan_t *plan)
{
    for (size_t i = 0; i < plan->n_groups; i++) {
        for (size_t k = 0; k < plan->groups[i].n_files; k++) free(plan->groups[i].paths[k]);
        free(plan->groups[i].paths);
    }
    free(plan->groups);
    memset(plan, 0, sizeof *plan);
}

fl_err_t fl_rewrite_run(const fl_table_ops_t *ops, const fl_rewrite_opts_t *opts, fl_rewrite_result_t *res,
                        char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    int64_t t0 = fl_mono_ms();
    job_t j;
    state_t st;
    memset(&st, 0, sizeof st);
    group_t *g = NULL;
    size_t ng = 0, skipped = 0;
    fl_err_t e = job_open(&j, ops, opts, res, err, errlen);
    if (e) goto out;
    if (!j.o.skip_data) {
        if ((e = load_state(&j, fl_append_main_snapshot(j.md), &st, err, errlen))) goto out;
        plan_groups(&j, &st, &g, &ng, &skipped, res->last_failure, sizeof res->last_failure);
        res->groups_planned = (int)ng;
        res->groups_skipped = (int)skipped;
        /* commit units of about max_commit bytes */
        for (size_t a = 0; a < ng && !e;) {
            size_t b = a;
            int64_t bytes = 0;
            while (b < ng && (b == a || bytes + g[b].bytes <= j.max_commit)) {
                bytes += g[b].bytes;
                if ((e = rewrite_group(&j, &st, &g[b], err, errlen))) break;
                b++;
            }
            if (e) {
                for (size_t x = a; x < b; x++) drop_outputs(&j, &g[x]);
                break;
            }
            e = commit_unit(&j, &st, g + a, b - a, err, errlen);
            a = b;
        }
    }
    if (!e && j.o.merge_manifests_min > 0) e = merge_manifests(&j, err, errlen);
out:
    for (size_t i = 0; i < ng; i++) group_free(&g[i]);
    free(g);
    state_free(&st);
    job_free(&j);
    res->duration_ms = fl_mono_ms() - t0;
    return e;
}
