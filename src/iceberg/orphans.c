/* Unreferenced-file removal (see orphans.h): list the table location, walk every snapshot for
 * the referenced set, then move old unreferenced objects under .noncurrent/<ms>/ and delete
 * noncurrent objects past nonCurrentDays. Path sets are jansson objects used as hash sets, keyed
 * by the normalised location (s3a:// and s3n:// as s3://, file:// dropped). */
#include "iceberg/orphans.h"
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "base/mem.h"
#include "base/time.h"
#include "iceberg/io.h"
#include "iceberg/manifest.h"
#include "iceberg/metadata.h"

#define MSG_GC_DISABLED "Iceberg snapshot management and unreferenced file removal is not supported when the " \
                        "'gc.enabled' table property is false. Ensure this property is unset or explicitly set to true."

typedef struct obj {
    char *uri;
    uint64_t size;
    int64_t t;              /* live: listing time (-1 unknown); noncurrent: ms from the key */
    const char *rel;        /* noncurrent: the original path relative to the location (into uri) */
} obj_t;

typedef struct objs {
    obj_t *v;
    size_t n, cap;
} objs_t;

typedef struct job {
    const fl_table_ops_t *ops;
    fl_orphans_opts_t o;
    fl_orphans_result_t *res;
    char *loc;              /* table location without a trailing '/' */
    char *prefix;           /* loc + "/" */
    char *nc_prefix;        /* prefix + ".noncurrent/" */
    json_t *refs;           /* referenced paths */
    json_t *seen;           /* manifest lists and manifests already read */
    json_t *present;        /* live objects listed */
    objs_t live, nc;
    fl_buf_t buf, norm;
    char err[512];
} job_t;

static void progress(const job_t *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(const job_t *j, const char *fmt, ...)
{
    if (!j->o.progress) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    j->o.progress(j->o.progress_arg, line);
}

static void note_error(fl_orphans_result_t *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_error(fl_orphans_result_t *res, const char *fmt, ...)
{
    if (!res->errors++) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(res->error, sizeof res->error, fmt, ap);
        va_end(ap);
    }
}

/* The set key of a location (into j->norm, valid until the next call). */
static const char *norm(job_t *j, const char *uri)
{
    fl_buf_reset(&j->norm);
    const char *rest = fl_io_s3_rest(uri);
    if (rest) { /* s3a://, s3n://, oss:// name the same objects as s3:// */
        fl_buf_adds(&j->norm, "s3://");
        fl_buf_adds(&j->norm, rest);
    } else if (!strncmp(uri, "file://", 7)) {
        fl_buf_adds(&j->norm, uri + 7);
    } else {
        fl_buf_adds(&j->norm, uri);
    }
    return j->norm.ptr ? j->norm.ptr : "";
}

static void ref(job_t *j, const char *uri)
{
    if (uri && *uri) json_object_set_new(j->refs, norm(j, uri), json_true());
}

static bool is_ref(job_t *j, const char *uri)
{
    return json_object_get(j->refs, norm(j, uri)) != NULL;
}

static void objs_add(objs_t *a, const char *uri, uint64_t size, int64_t t)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->v = fl_realloc(a->v, a->cap * sizeof *a->v);
    }
    a->v[a->n++] = (obj_t){ fl_strdup(uri), size, t, NULL };
}

static void objs_free(objs_t *a)
{
    for (size_t i = 0; i < a->n; i++) free(a->v[i].uri);
    free(a->v);
    memset(a, 0, sizeof *a);
}

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

/* ---- pure pieces ----------------------------------------------------------------------- */

void fl_orphans_noncurrent_path(const char *location, const char *rel, int64_t ms, fl_buf_t *out)
{
    size_t n = strlen(location);
    while (n && location[n - 1] == '/') n--;
    fl_buf_add(out, location, n);
    fl_buf_printf(out, "/" FL_ORPHANS_DIR "/%" PRId64 "/%s", ms, rel);
}

bool fl_orphans_parse_noncurrent(const char *location, const char *uri, int64_t *ms, const char **rel)
{
    size_t n = strlen(location);
    while (n && location[n - 1] == '/') n--;
    static const char dir[] = "/" FL_ORPHANS_DIR "/";
    if (strncmp(uri, location, n) || strncmp(uri + n, dir, sizeof dir - 1)) return false;
    const char *p = uri + n + sizeof dir - 1, *q = p;
    while (*q >= '0' && *q <= '9') q++;
    if (q == p || q - p > 18 || *q != '/' || !q[1]) return false;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (errno || end != q) return false;
    *ms = v;
    *rel = q + 1;
    return true;
}

/* ---- the referenced set ---------------------------------------------------------------- */

static fl_err_t read_obj(job_t *j, const char *path)
{
    fl_buf_reset(&j->buf);
    fl_err_t e = j->ops->get(j->ops->ctx, path, &j->buf);
    if (e) return fl_err_fmt(j->err, sizeof j->err, e, "reading %s: %s", path, fl_err_str(e));
    return FL_OK;
}

/* Adds what md (at md_loc) references to j->refs; lists and manifests read before are not read
 * again. Any read failure is returned (j->err says which file). */
static fl_err_t walk(job_t *j, json_t *md, const char *md_loc)
{
    fl_err_t e = FL_OK;
    json_t *x;
    size_t i;
    ref(j, md_loc);
    json_array_foreach(json_object_get(md, "metadata-log"), i, x)
        ref(j, json_string_value(json_object_get(x, "metadata-file")));
    json_array_foreach(json_object_get(md, "statistics"), i, x)
        ref(j, json_string_value(json_object_get(x, "statistics-path")));
    json_array_foreach(json_object_get(md, "partition-statistics"), i, x)
        ref(j, json_string_value(json_object_get(x, "statistics-path")));
    json_array_foreach(json_object_get(md, "snapshots"), i, x) {
        const char *list = json_string_value(json_object_get(x, "manifest-list"));
        fl_manifest_file_t *mfs = NULL;
        size_t n = 0;
        if (list) {
            ref(j, list);
            if (json_object_get(j->seen, list)) continue;
            if ((e = read_obj(j, list))) return e;
            char lerr[256];
            if ((e = fl_manifest_list_read(fl_slice(j->buf.ptr, j->buf.len), &mfs, &n, lerr, sizeof lerr)))
                return fl_err_fmt(j->err, sizeof j->err, e, "reading manifest list %s: %s", list, lerr);
        } else { /* v1: the manifests inline */
            json_t *ms = json_object_get(x, "manifests"), *m;
            size_t k;
            mfs = fl_calloc(json_array_size(ms) + 1, sizeof *mfs);
            json_array_foreach(ms, k, m)
                if (json_is_string(m)) mfs[n++].manifest_path = fl_strdup(json_string_value(m));
        }
        for (size_t m = 0; m < n && !e; m++) {
            const char *mp = mfs[m].manifest_path;
            if (!mp) continue;
            ref(j, mp);
            if (json_object_get(j->seen, mp)) continue;
            if ((e = read_obj(j, mp))) break;
            fl_manifest_entry_t *ents = NULL;
            size_t ne = 0;
            char merr[256];
            if ((e = fl_manifest_read(fl_slice(j->buf.ptr, j->buf.len), &mfs[m], &ents, &ne, merr, sizeof merr))) {
                fl_err_fmt(j->err, sizeof j->err, e, "reading manifest %s: %s", mp, merr);
                break;
            }
            for (size_t k = 0; k < ne; k++)
                if (ents[k].status != 2) ref(j, ents[k].file.file_path);
            fl_manifest_entries_free(ents, ne);
            json_object_set_new(j->seen, mp, json_true());
        }
        fl_manifest_files_free(mfs, n);
        if (e) return e;
        if (list) json_object_set_new(j->seen, list, json_true());
    }
    return FL_OK;
}

/* ---- listing --------------------------------------------------------------------------- */

static fl_err_t listed(void *arg, const char *uri, uint64_t size, int64_t mtime_ms)
{
    job_t *j = arg;
    j->res->listed++;
    j->res->listed_bytes += (int64_t)size;
    if (!strncmp(uri, j->nc_prefix, strlen(j->nc_prefix))) {
        int64_t ms;
        const char *rel;
        objs_add(&j->nc, uri, size, -1);
        if (fl_orphans_parse_noncurrent(j->loc, j->nc.v[j->nc.n - 1].uri, &ms, &rel)) {
            j->nc.v[j->nc.n - 1].t = ms;
            j->nc.v[j->nc.n - 1].rel = rel;
        }
    } else {
        objs_add(&j->live, uri, size, mtime_ms);
        json_object_set_new(j->present, norm(j, uri), json_true());
    }
    return FL_OK;
}

static fl_err_t list_all(job_t *j)
{
    fl_err_t e = j->ops->list(j->ops->ctx, j->prefix, listed, j);
    if (e) return fl_err_fmt(j->err, sizeof j->err, e, "listing %s: %s", j->prefix, fl_err_str(e));
    return FL_OK;
}

/* Newest first, so that of several copies of one original the newest is restored. */
static int cmp_newest(const void *a, const void *b)
{
    int64_t x = ((const obj_t *)a)->t, y = ((const obj_t *)b)->t;
    return x > y ? -1 : x < y;
}

/* src -> dst: copy, then delete src (and the copy again if that fails). */
static fl_err_t move(job_t *j, const char *src, const char *dst)
{
    fl_err_t e = j->ops->copy(j->ops->ctx, src, dst);
    if (e == FL_ERR_NOT_FOUND) return e; /* gone meanwhile (e.g. an expiry deleted it): nothing to move */
    if (e) {
        note_error(j->res, "copying %.100s to %.100s: %s", src, dst, fl_err_str(e));
        return e;
    }
    if ((e = j->ops->del(j->ops->ctx, src))) {
        note_error(j->res, "deleting %.200s after copying it: %s", src, fl_err_str(e));
        j->ops->del(j->ops->ctx, dst);
    }
    return e;
}

/* Moves the noncurrent object nc back to its original path (unless it exists). */
static void restore_one(job_t *j, obj_t *nc, bool dry_run)
{
    fl_buf_t orig;
    fl_buf_init(&orig, 0);
    fl_buf_adds(&orig, j->prefix);
    fl_buf_adds(&orig, nc->rel);
    if (json_object_get(j->present, norm(j, orig.ptr))) {
        note_error(j->res, "not restoring %.200s: the original exists", orig.ptr);
    } else if (dry_run || !move(j, nc->uri, orig.ptr)) {
        j->res->restored++;
        j->res->restored_bytes += (int64_t)nc->size;
        json_object_set_new(j->present, norm(j, orig.ptr), json_true());
    }
    fl_buf_free(&orig);
}

/* Loads the table: location, prefixes. */
static fl_err_t setup(job_t *j, json_t **md, char **md_loc)
{
    char err[512] = "";
    fl_err_t e = j->ops->load(j->ops->ctx, md, md_loc, err, sizeof err);
    if (e) return fl_err_fmt(j->err, sizeof j->err, e, "loading the table: %.400s", err[0] ? err : fl_err_str(e));
    const char *loc = json_string_value(json_object_get(*md, "location"));
    size_t n = loc ? strlen(loc) : 0;
    while (n && loc[n - 1] == '/') n--;
    if (!n) return fl_err_fmt(j->err, sizeof j->err, FL_ERR_INVALID, "the table metadata has no location");
    j->loc = fl_strndup(loc, n);
    fl_buf_t b;
    fl_buf_init(&b, 0);
    fl_buf_printf(&b, "%s/", j->loc);
    j->prefix = fl_strdup(b.ptr);
    fl_buf_adds(&b, FL_ORPHANS_DIR "/");
    j->nc_prefix = fl_strdup(b.ptr);
    fl_buf_free(&b);
    return FL_OK;
}

static void job_init(job_t *j, const fl_table_ops_t *ops, fl_orphans_result_t *res)
{
    memset(j, 0, sizeof *j);
    j->ops = ops;
    j->res = res;
    j->refs = json_object();
    j->seen = json_object();
    j->present = json_object();
    fl_buf_init(&j->buf, 0);
    fl_buf_init(&j->norm, 0);
}

static void job_free(job_t *j)
{
    free(j->loc);
    free(j->prefix);
    free(j->nc_prefix);
    json_decref(j->refs);
    json_decref(j->seen);
    json_decref(j->present);
    objs_free(&j->live);
    objs_free(&j->nc);
    fl_buf_free(&j->buf);
    fl_buf_free(&j->norm);
}

/* ---- the job --------------------------------------------------------------------------- */

fl_err_t fl_orphans_run(const fl_table_ops_t *ops, const fl_orphans_opts_t *opts, fl_orphans_result_t *res)
{
    int64_t t0 = fl_mono_ms();
    memset(res, 0, sizeof *res);
    job_t j;
    job_init(&j, ops, res);
    j.o = opts ? *opts : (fl_orphans_opts_t){ 0 };
    if (j.o.as_of_ms <= 0) j.o.as_of_ms = fl_now_ms();
    int64_t unref_ms = (j.o.unreferenced_days > 0 ? j.o.unreferenced_days : FL_ORPHANS_DEFAULT_UNREFERENCED_DAYS) * FL_ORPHANS_DAY_MS;
    int64_t nc_ms = (j.o.noncurrent_days > 0 ? j.o.noncurrent_days : FL_ORPHANS_DEFAULT_NONCURRENT_DAYS) * FL_ORPHANS_DAY_MS;
    json_t *md = NULL, *md2 = NULL;
    char *md_loc = NULL, *md2_loc = NULL;
    fl_err_t e = FL_OK;

    if (!ops->list || (!ops->copy && !j.o.dry_run)) {
        e = FL_ERR_INVALID;
        snprintf(res->message, sizeof res->message,
                 "the table's storage cannot %s objects; unreferenced file removal needs it (nothing done)",
                 ops->list ? "copy" : "list");
        goto out;
    }
    if ((e = setup(&j, &md, &md_loc))) goto fail;
    const char *gc = json_string_value(json_object_get(json_object_get(md, "properties"), "gc.enabled"));
    if (gc && !strcasecmp(gc, "false")) {
        res->status = FL_EXPIRE_DISABLED;
        snprintf(res->message, sizeof res->message, "%s", MSG_GC_DISABLED);
        progress(&j, "disabled: %s", MSG_GC_DISABLED);
        goto out;
    }
    /* the referenced set first: a table whose manifests cannot be read is left alone before
     * anything is listed */
    if ((e = walk(&j, md, md_loc))) goto fail;
    if ((e = list_all(&j))) goto fail;
    progress(&j, "listed %" PRId64 " objects (%" PRId64 " B) under %s, %zu of them noncurrent", res->listed,
             res->listed_bytes, j.prefix, j.nc.n);
    /* a commit that landed while we listed: its snapshots count too */
    char err[512] = "";
    if ((e = ops->load(ops->ctx, &md2, &md2_loc, err, sizeof err))) {
        fl_err_fmt(j.err, sizeof j.err, e, "reloading the table: %.400s", err[0] ? err : fl_err_str(e));
        goto fail;
    }
    const char *l2 = json_string_value(json_object_get(md2, "location"));
    if (!l2 || strncmp(l2, j.loc, strlen(j.loc)) || (l2[strlen(j.loc)] && strcmp(l2 + strlen(j.loc), "/"))) {
        e = fl_err_fmt(j.err, sizeof j.err, FL_ERR_CONFLICT, "the table location changed during the run");
        goto fail;
    }
    if ((!md_loc || !md2_loc || strcmp(md_loc, md2_loc)) && (e = walk(&j, md2, md2_loc))) goto fail;
    res->referenced = (int64_t)json_object_size(j.refs);
    progress(&j, "referenced: %" PRId64 " files", res->referenced);

    /* phase 1: old unreferenced objects become noncurrent */
    fl_buf_t dst;
    fl_buf_init(&dst, 0);
    size_t plen = strlen(j.prefix);
    for (size_t i = 0; i < j.live.n; i++) {
        obj_t *ob = &j.live.v[i];
        if (is_ref(&j, ob->uri) || ends_with(ob->uri, "/version-hint.text")) continue;
        if (ob->t < 0 || strncmp(ob->uri, j.prefix, plen)) {
            res->in_doubt++;
            continue;
        }
        if (j.o.as_of_ms - ob->t <= unref_ms) {
            res->young++;
            res->young_bytes += (int64_t)ob->size;
            continue;
        }
        fl_buf_reset(&dst);
        fl_orphans_noncurrent_path(j.loc, ob->uri + plen, j.o.as_of_ms, &dst);
        if (j.o.dry_run || !move(&j, ob->uri, dst.ptr)) {
            res->marked++;
            res->marked_bytes += (int64_t)ob->size;
            if (res->marked % 1000 == 0) progress(&j, "marked %" PRId64 " noncurrent", res->marked);
        }
    }
    fl_buf_free(&dst);
    progress(&j, "%s %" PRId64 " objects (%" PRId64 " B) noncurrent; %" PRId64 " younger than %" PRId64
             " days left", j.o.dry_run ? "would mark" : "marked", res->marked, res->marked_bytes, res->young,
             (int64_t)(unref_ms / FL_ORPHANS_DAY_MS));

    /* phase 2: noncurrent objects referenced again come back; old ones are deleted */
    if (j.nc.n) qsort(j.nc.v, j.nc.n, sizeof *j.nc.v, cmp_newest);
    fl_buf_t orig;
    fl_buf_init(&orig, 0);
    for (size_t i = 0; i < j.nc.n; i++) {
        obj_t *ob = &j.nc.v[i];
        if (!ob->rel) {
            res->in_doubt++;
            continue;
        }
        fl_buf_reset(&orig);
        fl_buf_adds(&orig, j.prefix);
        fl_buf_adds(&orig, ob->rel);
        if (is_ref(&j, orig.ptr) && !json_object_get(j.present, norm(&j, orig.ptr))) {
            progress(&j, "%s is referenced again: restoring it", orig.ptr);
            restore_one(&j, ob, j.o.dry_run);
            continue;
        }
        if (is_ref(&j, orig.ptr) || j.o.as_of_ms - ob->t <= nc_ms) {
            res->noncurrent++;
            res->noncurrent_bytes += (int64_t)ob->size;
            continue;
        }
        fl_err_t de = j.o.dry_run ? FL_OK : ops->del(ops->ctx, ob->uri);
        if (de) {
            note_error(res, "deleting %.200s: %s", ob->uri, fl_err_str(de));
        } else {
            res->deleted++;
            res->deleted_bytes += (int64_t)ob->size;
        }
    }
    fl_buf_free(&orig);
    progress(&j, "%s %" PRId64 " noncurrent objects (%" PRId64 " B) older than %" PRId64 " days; %" PRId64
             " stay noncurrent", j.o.dry_run ? "would delete" : "deleted", res->deleted, res->deleted_bytes,
             (int64_t)(nc_ms / FL_ORPHANS_DAY_MS), res->noncurrent);
    goto out;
fail:
    snprintf(res->message, sizeof res->message, "%.470s (nothing marked or deleted)", j.err);
out:
    if (e && res->status == FL_EXPIRE_SUCCESSFUL) res->status = FL_EXPIRE_FAILED;
    res->duration_ms = fl_mono_ms() - t0;
    json_decref(md);
    json_decref(md2);
    free(md_loc);
    free(md2_loc);
    job_free(&j);
    return e;
}

fl_err_t fl_orphans_restore(const fl_table_ops_t *ops, const char *const *keys, size_t n_keys, bool dry_run,
                            fl_orphans_result_t *res)
{
    int64_t t0 = fl_mono_ms();
    memset(res, 0, sizeof *res);
    job_t j;
    job_init(&j, ops, res);
    json_t *md = NULL, *done = json_object();
    char *md_loc = NULL;
    fl_err_t e = FL_OK;
    fl_buf_t orig;
    fl_buf_init(&orig, 0);
    if (!ops->list || (!ops->copy && !dry_run)) {
        e = FL_ERR_INVALID;
        snprintf(res->message, sizeof res->message, "the table's storage cannot %s objects; restoring needs it",
                 ops->list ? "copy" : "list");
        goto out;
    }
    if ((e = setup(&j, &md, &md_loc)) || (e = list_all(&j))) {
        snprintf(res->message, sizeof res->message, "%.480s (nothing restored)", j.err);
        goto out;
    }
    if (j.nc.n) qsort(j.nc.v, j.nc.n, sizeof *j.nc.v, cmp_newest);
    bool *matched = fl_calloc(n_keys + 1, sizeof *matched);
    for (size_t i = 0; i < j.nc.n; i++) {
        obj_t *ob = &j.nc.v[i];
        if (!ob->rel) continue;
        fl_buf_reset(&orig);
        fl_buf_adds(&orig, j.prefix);
        fl_buf_adds(&orig, ob->rel);
        bool want = n_keys == 0;
        for (size_t k = 0; k < n_keys; k++) {
            const char *key = keys[k];
            char *nk = fl_strdup(norm(&j, key));
            if (!strcmp(key, ob->rel) || !strcmp(nk, norm(&j, orig.ptr)) || !strcmp(nk, norm(&j, ob->uri))) {
                want = true;
                matched[k] = true;
            }
            free(nk);
        }
        if (!want || json_object_get(done, orig.ptr)) continue; /* an older copy of one restored */
        json_object_set_new(done, orig.ptr, json_true());
        restore_one(&j, ob, dry_run);
    }
    for (size_t k = 0; k < n_keys; k++)
        if (!matched[k]) note_error(res, "%.200s: no noncurrent object has this key", keys[k]);
    free(matched);
    if (res->errors) {
        e = FL_ERR_NOT_FOUND;
        snprintf(res->message, sizeof res->message, "%" PRId64 " not restored (first: %s)", res->errors, res->error);
    }
out:
    if (e && res->status == FL_EXPIRE_SUCCESSFUL) res->status = FL_EXPIRE_FAILED;
    res->duration_ms = fl_mono_ms() - t0;
    fl_buf_free(&orig);
    json_decref(md);
    json_decref(done);
    free(md_loc);
    job_free(&j);
    return e;
}
