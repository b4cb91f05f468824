/* Snapshot expiry (see expire.h): plan over the metadata JSON, commit through ops->commit,
 * then find and delete the files only removed snapshots reached. Path sets are jansson
 * objects used as hash sets (key = location). */
#include "iceberg/expire.h"
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "base/buf.h"
#include "base/mem.h"
#include "base/time.h"
#include "iceberg/manifest.h"
#include "iceberg/metadata.h"

static const char *const kind_names[FL_EXPIRE_KINDS] = {
    "data", "position-deletes", "equality-deletes", "manifests", "manifest-lists", "statistics", "metadata",
};

const char *fl_expire_kind_name(fl_expire_kind_t k)
{
    return k < FL_EXPIRE_KINDS ? kind_names[k] : "?";
}

/* S3 Tables' failure messages (GetTableMaintenanceJobStatus). */
#define MSG_GC_DISABLED "Iceberg snapshot management and unreferenced file removal is not supported when the " \
                        "'gc.enabled' table property is false. Ensure this property is unset or explicitly set to true."
#define MSG_STALE "Commit failed due to stale metadata. Maintenance will retry at the next available opportunity."

static void progress(const fl_expire_opts_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(const fl_expire_opts_t *o, const char *fmt, ...)
{
    if (!o->progress) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    o->progress(o->progress_arg, line);
}

static bool get_int(json_t *o, const char *k, int64_t *v)
{
    json_t *x = json_is_object(o) ? json_object_get(o, k) : NULL;
    if (!json_is_integer(x)) return false;
    *v = json_integer_value(x);
    return true;
}

/* A property as a non-negative integer: 1 set, 0 absent, -1 malformed. */
static int prop_int(json_t *props, const char *k, int64_t *v)
{
    const char *s = json_string_value(json_object_get(props, k));
    if (!s) return 0;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x < 0) return -1;
    *v = x;
    return 1;
}

/* ---- plan ------------------------------------------------------------------------------ */

typedef struct snap {
    int64_t id, parent, ts;
    bool keep, on_branch;
} snap_t;

static int cmp_snap_id(const void *a, const void *b)
{
    int64_t x = ((const snap_t *)a)->id, y = ((const snap_t *)b)->id;
    return x < y ? -1 : x > y;
}

static snap_t *find_snap(snap_t *s, size_t n, int64_t id)
{
    snap_t key = { .id = id };
    return bsearch(&key, s, n, sizeof *s, cmp_snap_id);
}

fl_err_t fl_expire_plan(json_t *md, const fl_expire_opts_t *opts, fl_expire_plan_t *plan, char *err,
                        size_t errlen)
{
    memset(plan, 0, sizeof *plan);
    fl_expire_opts_t dflt = { 0 };
    if (!opts) opts = &dflt;
    fl_err_t e = FL_OK;
    snap_t *s = NULL;
    json_t *props = json_object_get(md, "properties"), *snaps = json_object_get(md, "snapshots"), *x;
    json_t *refs = NULL;
    size_t i, n = 0;
    if (!json_is_object(md)) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "table metadata is not an object");
    const char *gc = json_string_value(json_object_get(props, "gc.enabled"));
    if (gc && !strcasecmp(gc, "false")) {
        plan->disabled = true;
        snprintf(plan->message, sizeof plan->message, "%s", MSG_GC_DISABLED);
        return FL_OK;
    }
    int64_t now = opts->as_of_ms > 0 ? opts->as_of_ms : fl_now_ms();
    int64_t job_min = opts->min_snapshots_to_keep > 0 ? opts->min_snapshots_to_keep : FL_EXPIRE_DEFAULT_MIN_SNAPSHOTS;
    int64_t job_age = opts->max_snapshot_age_ms > 0 ? opts->max_snapshot_age_ms : FL_EXPIRE_DEFAULT_MAX_AGE_MS;
    int64_t tbl_min = 0, tbl_age = 0, tbl_ref_age = INT64_MAX;
    if (prop_int(props, "history.expire.min-snapshots-to-keep", &tbl_min) < 0 ||
        prop_int(props, "history.expire.max-snapshot-age-ms", &tbl_age) < 0 ||
        prop_int(props, "history.expire.max-ref-age-ms", &tbl_ref_age) < 0)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "a history.expire.* table property is not a non-negative integer");
    /* the job never expires what the table's own retention keeps */
    int64_t dflt_min = tbl_min > job_min ? tbl_min : job_min;
    int64_t dflt_age = tbl_age > job_age ? tbl_age : job_age;

    n = json_array_size(snaps);
    plan->n_snapshots = n;
    s = fl_calloc(n + 1, sizeof *s);
    json_array_foreach(snaps, i, x) {
        if (!get_int(x, "snapshot-id", &s[i].id) || !get_int(x, "timestamp-ms", &s[i].ts)) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "snapshot %zu lacks snapshot-id or timestamp-ms", i);
            goto out;
        }
        if (!get_int(x, "parent-snapshot-id", &s[i].parent)) s[i].parent = -1;
    }
    qsort(s, n, sizeof *s, cmp_snap_id);
    for (i = 1; i < n; i++)
        if (s[i].id == s[i - 1].id) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "snapshot id %" PRId64 " appears twice", s[i].id);
            goto out;
        }

    /* refs (a table without a refs map has main = current-snapshot-id) */
    refs = json_object_get(md, "refs");
    if (json_is_object(refs) && json_object_size(refs)) {
        refs = json_incref(refs);
    } else {
        refs = json_object();
        int64_t cur = fl_iceberg_current_snapshot_id(md);
        if (cur >= 0) json_object_set_new(refs, "main", json_pack("{s:I,s:s}", "snapshot-id", (json_int_t)cur, "type", "branch"));
    }
    const char *name;
    json_t *r;
    json_object_foreach(refs, name, r) {
        int64_t sid, v;
        if (!get_int(r, "snapshot-id", &sid)) continue;
        snap_t *head = find_snap(s, n, sid);
        if (!head) continue; /* a dangling ref keeps nothing */
        bool is_main = !strcmp(name, "main");
        if (!is_main) {
            int64_t max_ref_age = get_int(r, "max-ref-age-ms", &v) ? v : tbl_ref_age;
            if (now - head->ts > max_ref_age) {
                plan->refs = fl_realloc(plan->refs, (plan->n_refs + 1) * sizeof *plan->refs);
                plan->refs[plan->n_refs++] = fl_strdup(name);
                continue;
            }
        }
        head->keep = true;
        const char *type = json_string_value(json_object_get(r, "type"));
        if (type && strcmp(type, "branch")) continue; /* a tag keeps its snapshot only */
        int64_t min_keep = dflt_min, age = dflt_age;
        if (get_int(r, "min-snapshots-to-keep", &v) && v > min_keep) min_keep = v;
        if (get_int(r, "max-snapshot-age-ms", &v) && v > age) age = v;
        int64_t cutoff = now - age, kept = 0;
        bool walking = true;
        for (snap_t *a = head; a; a = a->parent >= 0 ? find_snap(s, n, a->parent) : NULL) {
            a->on_branch = true;
            if (walking && (kept < min_keep || a->ts >= cutoff)) {
                a->keep = true;
                kept++;
            } else {
                walking = false;
            }
            if (kept > (int64_t)n + 1) break; /* a parent cycle in broken metadata */
        }
    }
    /* snapshots on no kept branch and no kept tag: kept while young */
    for (i = 0; i < n; i++)
        if (!s[i].keep && !s[i].on_branch && s[i].ts >= now - dflt_age) s[i].keep = true;

    json_array_foreach(snaps, i, x) {
        int64_t id = 0;
        get_int(x, "snapshot-id", &id);
        snap_t *p = find_snap(s, n, id);
        if (p && !p->keep) {
            plan->expire = fl_realloc(plan->expire, (plan->n_expire + 1) * sizeof *plan->expire);
            plan->expire[plan->n_expire++] = id;
        }
    }
out:
    json_decref(refs);
    free(s);
    if (e) fl_expire_plan_free(plan);
    return e;
}

void fl_expire_plan_free(fl_expire_plan_t *plan)
{
    for (size_t i = 0; i < plan->n_refs; i++) free(plan->refs[i]);
    free(plan->refs);
    free(plan->expire);
    memset(plan, 0, sizeof *plan);
}

void fl_expire_commit_request(json_t *md, const fl_expire_plan_t *plan, json_t **requirements, json_t **updates)
{
    json_t *reqs = json_array(), *ups = json_array();
    const char *uuid = json_string_value(json_object_get(md, "table-uuid"));
    if (uuid) json_array_append_new(reqs, json_pack("{s:s,s:s}", "type", "assert-table-uuid", "uuid", uuid));
    json_t *refs = json_object_get(md, "refs"), *r;
    const char *name;
    int64_t sid;
    if (json_is_object(refs) && json_object_size(refs)) {
        json_object_foreach(refs, name, r)
            if (get_int(r, "snapshot-id", &sid))
                json_array_append_new(reqs, json_pack("{s:s,s:s,s:I}", "type", "assert-ref-snapshot-id",
                                                      "ref", name, "snapshot-id", (json_int_t)sid));
    } else if ((sid = fl_iceberg_current_snapshot_id(md)) >= 0) {
        json_array_append_new(reqs, json_pack("{s:s,s:s,s:I}", "type", "assert-ref-snapshot-id", "ref", "main",
                                              "snapshot-id", (json_int_t)sid));
    }
    for (size_t i = 0; i < plan->n_refs; i++)
        json_array_append_new(ups, json_pack("{s:s,s:s}", "action", "remove-snapshot-ref", "ref-name", plan->refs[i]));
    if (plan->n_expire) {
        json_t *ids = json_array();
        for (size_t i = 0; i < plan->n_expire; i++) json_array_append_new(ids, json_integer(plan->expire[i]));
        json_array_append_new(ups, json_pack("{s:s,s:o}", "action", "remove-snapshots", "snapshot-ids", ids));
    }
    *requirements = reqs;
    *updates = ups;
}

/* ---- reachability ---------------------------------------------------------------------- */

typedef struct walk {
    const fl_table_ops_t *ops;
    fl_buf_t buf;
    char err[256];
} walk_t;

/* Reads a manifest list; *mfs / *n as fl_manifest_list_read. */
static fl_err_t read_list(walk_t *w, const char *path, fl_manifest_file_t **mfs, size_t *n, int64_t *size)
{
    fl_buf_reset(&w->buf);
    fl_err_t e = w->ops->get(w->ops->ctx, path, &w->buf);
    if (e) return fl_err_fmt(w->err, sizeof w->err, e, "reading %s: %s", path, fl_err_str(e));
    if (size) *size = (int64_t)w->buf.len;
    return fl_manifest_list_read(fl_slice(w->buf.ptr, w->buf.len), mfs, n, w->err, sizeof w->err);
}

static fl_err_t read_manifest(walk_t *w, const char *path, const fl_manifest_file_t *mf,
                              fl_manifest_entry_t **ents, size_t *n)
{
    fl_buf_reset(&w->buf);
    fl_err_t e = w->ops->get(w->ops->ctx, path, &w->buf);
    if (e) return fl_err_fmt(w->err, sizeof w->err, e, "reading %s: %s", path, fl_err_str(e));
    return fl_manifest_read(fl_slice(w->buf.ptr, w->buf.len), mf, ents, n, w->err, sizeof w->err);
}

/* set[path] = [kind, bytes] unless present */
static void set_add(json_t *set, const char *path, fl_expire_kind_t kind, int64_t bytes)
{
    if (path && *path && !json_object_get(set, path))
        json_object_set_new(set, path, json_pack("[i,I]", (int)kind, (json_int_t)bytes));
}

static json_t *snapshot_by_id(json_t *md, int64_t id)
{
    json_t *x;
    size_t i;
    int64_t v;
    json_array_foreach(json_object_get(md, "snapshots"), i, x)
        if (get_int(x, "snapshot-id", &v) && v == id) return x;
    return NULL;
}

/* Manifests of one snapshot into set (with their records in recs when non-NULL: path ->
 * index into *mfs kept alive by the caller). v1 snapshots may list "manifests" directly. */
typedef struct mlist {
    fl_manifest_file_t *mfs;
    size_t n;
} mlist_t;

static fl_err_t snapshot_manifests(walk_t *w, json_t *snap, mlist_t *out, int64_t *list_size)
{
    const char *list = json_string_value(json_object_get(snap, "manifest-list"));
    memset(out, 0, sizeof *out);
    if (list) return read_list(w, list, &out->mfs, &out->n, list_size);
    json_t *ms = json_object_get(snap, "manifests"), *x;
    size_t i;
    out->mfs = fl_calloc(json_array_size(ms) + 1, sizeof *out->mfs);
    json_array_foreach(ms, i, x)
        if (json_is_string(x)) out->mfs[out->n++].manifest_path = fl_strdup(json_string_value(x));
    return FL_OK;
}

static fl_expire_kind_t content_kind(int32_t content)
{
    return content == 1 ? FL_EXPIRE_POSITION_DELETES : content == 2 ? FL_EXPIRE_EQUALITY_DELETES : FL_EXPIRE_DATA;
}

/* The files to delete: those reached from the removed snapshots (ids, looked up in base) that
 * no snapshot of cur reaches. *del gets path -> [kind, bytes]. On a read failure of anything
 * retained, manifests and content files are left out (lists and statistics of the removed
 * snapshots are still safe to delete: nothing retained names them). */
static fl_err_t unreachable_files(walk_t *w, json_t *base, json_t *cur, const int64_t *ids, size_t n_ids,
                                  json_t *del, fl_expire_result_t *res)
{
    fl_err_t e = FL_OK, retained_err = FL_OK;
    json_t *keep_lists = json_object(), *keep_files = json_object();
    json_t *keep_manifests = json_object(); /* path -> [index into kept, index into its mfs] */
    json_t *cand_manifests = json_object(); /* path -> [index into exp, index into its mfs] */
    mlist_t *exp = fl_calloc(n_ids + 1, sizeof *exp);
    json_t *x;
    size_t i;

    /* what the retained snapshots reach: lists and manifests */
    json_t *kept_snaps = json_object_get(cur, "snapshots");
    mlist_t *kept = fl_calloc(json_array_size(kept_snaps) + 1, sizeof *kept);
    json_array_foreach(kept_snaps, i, x) {
        const char *list = json_string_value(json_object_get(x, "manifest-list"));
        if (list) json_object_set_new(keep_lists, list, json_true());
        fl_err_t e2 = snapshot_manifests(w, x, &kept[i], NULL);
        if (e2) {
            retained_err = e2;
            break;
        }
        for (size_t m = 0; m < kept[i].n; m++)
            if (kept[i].mfs[m].manifest_path && !json_object_get(keep_manifests, kept[i].mfs[m].manifest_path))
                json_object_set_new(keep_manifests, kept[i].mfs[m].manifest_path,
                                    json_pack("[I,I]", (json_int_t)i, (json_int_t)m));
    }

    /* the removed snapshots: their lists, and manifests no retained list names */
    for (size_t k = 0; k < n_ids; k++) {
        json_t *snap = snapshot_by_id(base, ids[k]);
        if (!snap || snapshot_by_id(cur, ids[k])) continue;
        const char *list = json_string_value(json_object_get(snap, "manifest-list"));
        int64_t list_size = 0;
        fl_err_t e2 = snapshot_manifests(w, snap, &exp[k], &list_size);
        if (list && !json_object_get(keep_lists, list))
            set_add(del, list, FL_EXPIRE_MANIFEST_LISTS, e2 ? 0 : list_size);
        if (e2) { /* already gone (an earlier run) or unreadable: its manifests stay for orphan removal */
            if (e2 != FL_ERR_NOT_FOUND && !res->delete_errors++)
                snprintf(res->delete_error, sizeof res->delete_error, "%s", w->err);
            continue;
        }
        for (size_t m = 0; m < exp[k].n; m++) {
            const char *p = exp[k].mfs[m].manifest_path;
            if (p && !json_object_get(keep_manifests, p) && !json_object_get(cand_manifests, p))
                json_object_set_new(cand_manifests, p, json_pack("[I,I]", (json_int_t)k, (json_int_t)m));
        }
    }

    if (!retained_err && json_object_size(cand_manifests)) {
        /* content files of the candidate manifests */
        json_t *cand_files = json_object();
        const char *p;
        json_t *v;
        json_object_foreach(cand_manifests, p, v) {
            const fl_manifest_file_t *mf = &exp[json_integer_value(json_array_get(v, 0))].mfs[json_integer_value(json_array_get(v, 1))];
            fl_manifest_entry_t *ents = NULL;
            size_t ne = 0;
            fl_err_t e2 = read_manifest(w, p, mf, &ents, &ne);
            if (e2) {
                if (e2 != FL_ERR_NOT_FOUND && !res->delete_errors++)
                    snprintf(res->delete_error, sizeof res->delete_error, "%s", w->err);
            } else {
                for (size_t k = 0; k < ne; k++)
                    set_add(cand_files, ents[k].file.file_path, content_kind(ents[k].file.content),
                            ents[k].file.file_size_in_bytes);
            }
            fl_manifest_entries_free(ents, ne);
            set_add(del, p, FL_EXPIRE_MANIFESTS, mf->manifest_length);
        }
        /* minus what any retained manifest holds live */
        if (json_object_size(cand_files)) {
            const char *mp;
            json_object_foreach(keep_manifests, mp, v) {
                const fl_manifest_file_t *mf =
                    &kept[json_integer_value(json_array_get(v, 0))].mfs[json_integer_value(json_array_get(v, 1))];
                fl_manifest_entry_t *ents = NULL;
                size_t ne = 0;
                fl_err_t e2 = read_manifest(w, mp, mf, &ents, &ne);
                if (e2) {
                    retained_err = e2;
                    break;
                }
                for (size_t k = 0; k < ne; k++)
                    if (ents[k].status != 2) json_object_set_new(keep_files, ents[k].file.file_path, json_true());
                fl_manifest_entries_free(ents, ne);
            }
            if (!retained_err) {
                json_object_foreach(cand_files, p, v)
                    if (!json_object_get(keep_files, p)) json_object_set(del, p, v);
            }
        }
        json_decref(cand_files);
    }
    if (retained_err) {
        /* cannot prove anything unreachable: keep every manifest and content file */
        const char *p;
        json_t *v, *tmp;
        json_object_foreach_safe(del, tmp, p, v) {
            int kind = (int)json_integer_value(json_array_get(v, 0));
            if (kind != FL_EXPIRE_MANIFEST_LISTS) json_object_del(del, p);
        }
        e = retained_err;
    }

    /* statistics files of the removed snapshots that cur no longer names */
    static const char *const stats[] = { "statistics", "partition-statistics" };
    for (int s = 0; s < 2; s++) {
        json_t *still = json_object();
        json_array_foreach(json_object_get(cur, stats[s]), i, x) {
            const char *p = json_string_value(json_object_get(x, "statistics-path"));
            if (p) json_object_set_new(still, p, json_true());
        }
        json_array_foreach(json_object_get(base, stats[s]), i, x) {
            int64_t sid, size = 0;
            const char *p = json_string_value(json_object_get(x, "statistics-path"));
            if (!p || !get_int(x, "snapshot-id", &sid) || snapshot_by_id(cur, sid) || json_object_get(still, p)) continue;
            bool removed = false;
            for (size_t k = 0; k < n_ids; k++) removed |= ids[k] == sid;
            if (!removed) continue;
            get_int(x, "file-size-in-bytes", &size);
            set_add(del, p, FL_EXPIRE_STATISTICS, size);
        }
        json_decref(still);
    }

    for (size_t k = 0; k < n_ids; k++) fl_manifest_files_free(exp[k].mfs, exp[k].n);
    free(exp);
    json_array_foreach(kept_snaps, i, x) fl_manifest_files_free(kept[i].mfs, kept[i].n);
    free(kept);
    json_decref(keep_lists);
    json_decref(keep_manifests);
    json_decref(keep_files);
    json_decref(cand_manifests);
    return e;
}

/* ---- previous metadata files ----------------------------------------------------------- */

typedef struct meta_list {
    json_t *keep;      /* locations that must stay */
    long min_seq;      /* oldest kept version */
    json_t *del;
    size_t seen;
} meta_list_t;

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

static fl_err_t meta_listed(void *arg, const char *uri, uint64_t size, int64_t mtime_ms)
{
    meta_list_t *ml = arg;
    (void)mtime_ms;
    ml->seen++;
    if (!ends_with(uri, ".metadata.json") || json_object_get(ml->keep, uri)) return FL_OK;
    long seq = fl_iceberg_file_seq_of(uri);
    if (seq < 0 || seq >= ml->min_seq) return FL_OK; /* unnumbered, or possibly a commit in flight */
    set_add(ml->del, uri, FL_EXPIRE_METADATA, (int64_t)size);
    return FL_OK;
}

/* Previous metadata files off the metadata-log of cur (at cur_loc): those base's log (and
 * base_loc) had, and, if the storage lists, older numbered ones under <location>/metadata/. */
static void stale_metadata(const fl_table_ops_t *ops, json_t *base, const char *base_loc, json_t *cur,
                           const char *cur_loc, json_t *del)
{
    const char *on = json_string_value(json_object_get(json_object_get(cur, "properties"),
                                                       "write.metadata.delete-after-commit.enabled"));
    if (!on || strcasecmp(on, "true") || !cur_loc) return;
    json_t *keep = json_object(), *x;
    size_t i;
    long min_seq = fl_iceberg_file_seq_of(cur_loc);
    json_object_set_new(keep, cur_loc, json_true());
    json_array_foreach(json_object_get(cur, "metadata-log"), i, x) {
        const char *p = json_string_value(json_object_get(x, "metadata-file"));
        if (!p) continue;
        json_object_set_new(keep, p, json_true());
        long seq = fl_iceberg_file_seq_of(p);
        if (seq >= 0 && (min_seq < 0 || seq < min_seq)) min_seq = seq;
    }
    json_array_foreach(json_object_get(base, "metadata-log"), i, x) {
        const char *p = json_string_value(json_object_get(x, "metadata-file"));
        if (p && !json_object_get(keep, p)) set_add(del, p, FL_EXPIRE_METADATA, 0);
    }
    if (base_loc && !json_object_get(keep, base_loc)) set_add(del, base_loc, FL_EXPIRE_METADATA, 0);
    const char *loc = json_string_value(json_object_get(cur, "location"));
    if (ops->list && loc && min_seq > 0) {
        fl_buf_t prefix;
        fl_buf_init(&prefix, 0);
        fl_buf_adds(&prefix, loc);
        if (prefix.len && prefix.ptr[prefix.len - 1] != '/') fl_buf_addc(&prefix, '/');
        fl_buf_adds(&prefix, "metadata/");
        meta_list_t ml = { keep, min_seq, del, 0 };
        ops->list(ops->ctx, prefix.ptr, meta_listed, &ml);
        fl_buf_free(&prefix);
    }
    json_decref(keep);
}

/* ---- the job --------------------------------------------------------------------------- */

static int cmp_path_kind(const void *a, const void *b)
{
    /* content files first, then manifests, lists, statistics, metadata */
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t kx = json_integer_value(json_array_get(x, 0)), ky = json_integer_value(json_array_get(y, 0));
    return kx < ky ? -1 : kx > ky;
}

static void delete_files(const fl_table_ops_t *ops, const fl_expire_opts_t *o, json_t *del, fl_expire_result_t *res)
{
    size_t n = json_object_size(del), k = 0;
    if (!n) return;
    json_t **items = fl_calloc(n, sizeof *items);
    const char *p;
    json_t *v;
    json_object_foreach(del, p, v) {
        json_t *it = json_pack("[O,s]", json_array_get(v, 0), p);
        json_array_append(it, json_array_get(v, 1));
        items[k++] = it;
    }
    qsort(items, n, sizeof *items, cmp_path_kind);
    progress(o, "%s %zu file%s", o->dry_run ? "would delete" : "deleting", n, n == 1 ? "" : "s");
    for (k = 0; k < n; k++) {
        int kind = (int)json_integer_value(json_array_get(items[k], 0));
        const char *path = json_string_value(json_array_get(items[k], 1));
        int64_t bytes = json_integer_value(json_array_get(items[k], 2));
        fl_err_t e = o->dry_run ? FL_OK : ops->del(ops->ctx, path);
        if (e) {
            if (!res->delete_errors++)
                snprintf(res->delete_error, sizeof res->delete_error, "deleting %s: %s", path, fl_err_str(e));
        } else if (kind >= 0 && kind < FL_EXPIRE_KINDS) {
            res->files[kind]++;
            res->bytes[kind] += bytes;
        }
        if (!o->dry_run && ((k + 1) % 1000 == 0 || k + 1 == n)) progress(o, "deleted %zu/%zu", k + 1, n);
        json_decref(items[k]);
    }
    free(items);
}

static bool unknown_status(int st) { return st == 0 || st >= 500; }

fl_err_t fl_expire_snapshots(const fl_table_ops_t *ops, const fl_expire_opts_t *opts, fl_expire_result_t *res)
{
    fl_expire_opts_t o = opts ? *opts : (fl_expire_opts_t){ 0 };
    if (o.as_of_ms <= 0) o.as_of_ms = fl_now_ms();
    int attempts = o.max_attempts > 0 ? o.max_attempts : FL_EXPIRE_DEFAULT_ATTEMPTS;
    int64_t t0 = fl_mono_ms();
    memset(res, 0, sizeof *res);
    fl_err_t e = FL_OK;
    json_t *base = NULL, *cur = NULL, *reqs = NULL, *ups = NULL, *del = json_object();
    char *base_loc = NULL, *cur_loc = NULL;
    char err[512] = "";
    fl_expire_plan_t plan;
    memset(&plan, 0, sizeof plan);
    walk_t w = { .ops = ops };
    fl_buf_init(&w.buf, 0);

    for (;;) {
        json_decref(base);
        free(base_loc);
        base = NULL;
        base_loc = NULL;
        fl_expire_plan_free(&plan);
        if ((e = ops->load(ops->ctx, &base, &base_loc, err, sizeof err))) {
            snprintf(res->message, sizeof res->message, "loading the table: %.400s", err[0] ? err : fl_err_str(e));
            goto out;
        }
        if ((e = fl_expire_plan(base, &o, &plan, err, sizeof err))) {
            snprintf(res->message, sizeof res->message,
                     "Encountered Iceberg validation exception when trying to read table: %.300s", err);
            goto out;
        }
        res->snapshots_before = (int64_t)plan.n_snapshots;
        if (plan.disabled) {
            res->status = FL_EXPIRE_DISABLED;
            snprintf(res->message, sizeof res->message, "%s", plan.message);
            progress(&o, "disabled: %s", plan.message);
            goto out;
        }
        progress(&o, "planned: %zu of %zu snapshot%s to expire, %zu ref%s to remove", plan.n_expire,
                 plan.n_snapshots, plan.n_snapshots == 1 ? "" : "s", plan.n_refs, plan.n_refs == 1 ? "" : "s");
        if (!plan.n_expire && !plan.n_refs) goto out;
        fl_expire_commit_request(base, &plan, &reqs, &ups);
        if (o.dry_run) {
            int st = 0;
            cur = fl_iceberg_apply_updates(base, ups, NULL, &st, err, sizeof err);
            if (!cur) {
                e = FL_ERR_INVALID;
                snprintf(res->message, sizeof res->message, "planning the commit: %.400s", err);
                goto out;
            }
            break;
        }
        if (res->attempts >= attempts) {
            e = FL_ERR_CONFLICT;
            snprintf(res->message, sizeof res->message, "%s", MSG_STALE);
            goto out;
        }
        res->attempts++;
        int st = 0;
        err[0] = 0;
        e = ops->commit(ops->ctx, reqs, ups, &cur, &st, err, sizeof err);
        json_decref(reqs);
        json_decref(ups);
        reqs = ups = NULL;
        if (!e && st >= 200 && st < 300) {
            res->committed = true;
            break;
        }
        json_decref(cur);
        cur = NULL;
        if (st == 409) {
            progress(&o, "a writer committed first (409): re-planning");
            continue;
        }
        if (e || unknown_status(st)) {
            /* unknown outcome: it landed if every removed snapshot and ref is gone */
            json_t *now = NULL;
            char *loc = NULL;
            bool landed = false;
            if (!ops->load(ops->ctx, &now, &loc, err, sizeof err)) {
                const char *u0 = json_string_value(json_object_get(base, "table-uuid"));
                const char *u1 = json_string_value(json_object_get(now, "table-uuid"));
                landed = !u0 || (u1 && !strcmp(u0, u1));
                for (size_t k = 0; k < plan.n_expire; k++)
                    if (snapshot_by_id(now, plan.expire[k])) landed = false;
                for (size_t k = 0; k < plan.n_refs; k++)
                    if (json_object_get(json_object_get(now, "refs"), plan.refs[k])) landed = false;
            }
            json_decref(now);
            free(loc);
            if (landed) {
                res->committed = true;
                e = FL_OK;
                break;
            }
            e = FL_ERR_IO;
            snprintf(res->message, sizeof res->message, "commit outcome unknown (%s); nothing deleted",
                     st ? "HTTP 5xx" : "no answer");
            goto out;
        }
        e = FL_ERR_INVALID;
        snprintf(res->message, sizeof res->message, "commit refused (HTTP %d): %.400s", st, err);
        goto out;
    }

    res->snapshots_removed = (int64_t)plan.n_expire;
    res->refs_removed = (int64_t)plan.n_refs;
    res->removed = fl_calloc(plan.n_expire + 1, sizeof *res->removed);
    memcpy(res->removed, plan.expire, plan.n_expire * sizeof *res->removed);
    res->n_removed = plan.n_expire;
    if (!o.dry_run) {
        progress(&o, "committed: %zu snapshot%s and %zu ref%s removed", plan.n_expire,
                 plan.n_expire == 1 ? "" : "s", plan.n_refs, plan.n_refs == 1 ? "" : "s");
        /* the freshest state: what any writer committed since is retained too */
        json_decref(cur);
        cur = NULL;
        if (ops->load(ops->ctx, &cur, &cur_loc, err, sizeof err)) {
            if (!res->delete_errors++)
                snprintf(res->delete_error, sizeof res->delete_error, "reloading after the commit: %.200s", err);
            goto out; /* committed; files stay for unreferenced-file removal */
        }
    }
    fl_err_t re = unreachable_files(&w, base, cur, plan.expire, plan.n_expire, del, res);
    if (re && !res->delete_errors++)
        snprintf(res->delete_error, sizeof res->delete_error, "%.200s (no data files deleted)", w.err);
    if (!o.dry_run) stale_metadata(ops, base, base_loc, cur, cur_loc, del);
    delete_files(ops, &o, del, res);
out:
    if (e && res->status == FL_EXPIRE_SUCCESSFUL) res->status = FL_EXPIRE_FAILED;
    res->duration_ms = fl_mono_ms() - t0;
    fl_expire_plan_free(&plan);
    json_decref(base);
    json_decref(cur);
    json_decref(reqs);
    json_decref(ups);
    json_decref(del);
    free(base_loc);
    free(cur_loc);
    fl_buf_free(&w.buf);
    return e;
}

void fl_expire_result_free(fl_expire_result_t *res)
{
    free(res->removed);
    res->removed = NULL;
    res->n_removed = 0;
}
