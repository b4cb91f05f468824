/* The commit path of the table service: the per-table locks, the cache of
 * loaded metadata, and Iceberg commits (check requirements, apply updates,
 * write the next metadata file, compare-and-swap the pointer).
 *
 * Commits to one table are serialised in this process by a per-table lock (by
 * name, "per-table locks" below); a lost swap (another process, or a pointer move that does not take
 * the lock) re-runs the check and apply. CONFLICT only for a failed
 * requirement or a table that kept changing; IO only when the swap's outcome
 * is unknown. */
#include "catalog/tablesvc_int.h"
#include "base/limits.h"
#include "base/log.h"
#include "base/mem.h"
#include "iceberg/io.h"
#include "iceberg/metadata.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define COMMIT_ATTEMPTS 8
#define MAX_CHANGES 100
#define MCACHE_BYTES (256u * 1024 * 1024)
/* an entry holds the text and the parsed tree, which jansson makes several times larger */
#define MCACHE_COST(len) ((len) * 8)

static fl_err_t fail(char *msg, size_t mlen, fl_err_t e, const char *text)
{
    if (msg && mlen) snprintf(msg, mlen, "%s", text);
    return e;
}

/* ------------------------------------------------------------------ */
/* metadata cache                                                      */

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void ment_free(fl_tmeta_t *e)
{
    json_decref(e->meta);
    free(e->text);
    free(e->loc);
    free(e);
}

void fl_tablesvc_mcache_init(mcache_t *mc)
{
    memset(mc, 0, sizeof *mc);
    pthread_mutex_init(&mc->lock, NULL);
}

/* Takes the entry out of the table (caller holds the lock). */
static void mc_drop_slot(mcache_t *mc, int i)
{
    fl_tmeta_t *e = mc->e[i];
    mc->e[i] = NULL;
    mc->bytes -= MCACHE_COST(e->len);
    e->live = false;
    if (e->refs == 0) ment_free(e);
}

void fl_tablesvc_mcache_free(mcache_t *mc)
{
    for (int i = 0; i < FL_TABLESVC_MCACHE_N; i++)
        if (mc->e[i]) mc_drop_slot(mc, i);
    pthread_mutex_destroy(&mc->lock);
}

static fl_tmeta_t *mc_get(mcache_t *mc, const char *loc)
{
    uint64_t h = fnv(loc);
    fl_tmeta_t *found = NULL;
    pthread_mutex_lock(&mc->lock);
    for (int i = 0; i < FL_TABLESVC_MCACHE_N; i++) {
        fl_tmeta_t *e = mc->e[i];
        if (e && e->h == h && !strcmp(e->loc, loc)) {
            e->refs++;
            e->tick = ++mc->tick;
            found = e;
            break;
        }
    }
    pthread_mutex_unlock(&mc->lock);
    return found;
}

void fl_tablesvc_mcache_forget(mcache_t *mc, const char *loc)
{
    uint64_t h = fnv(loc);
    pthread_mutex_lock(&mc->lock);
    for (int i = 0; i < FL_TABLESVC_MCACHE_N; i++)
        if (mc->e[i] && mc->e[i]->h == h && !strcmp(mc->e[i]->loc, loc)) {
            mc_drop_slot(mc, i);
            break;
        }
    pthread_mutex_unlock(&mc->lock);
}

void fl_tmeta_release(fl_tmeta_t *e)
{
    if (!e) return;
    mcache_t *mc = e->mc;
    pthread_mutex_lock(&mc->lock);
    bool dead = --e->refs == 0 && !e->live;
    pthread_mutex_unlock(&mc->lock);
    if (dead) ment_free(e);
}

json_t *fl_tmeta_json(const fl_tmeta_t *m) { return m->meta; }

const char *fl_tmeta_text(const fl_tmeta_t *m, size_t *len)
{
    if (len) *len = m->len;
    return m->text;
}

fl_tmeta_t *fl_tablesvc_mcache_put(mcache_t *mc, const char *loc, json_t *meta, char *text)
{
    if (!text) text = json_dumps(meta, JSON_COMPACT);
    if (!text) return NULL;
    fl_tmeta_t *e = fl_calloc(1, sizeof *e);
    e->loc = fl_strdup(loc);
    e->h = fnv(loc);
    e->meta = json_incref(meta);
    e->text = text;
    e->len = strlen(text);
    e->refs = 1;
    e->live = true;
    e->mc = mc;
    pthread_mutex_lock(&mc->lock);
    int slot = -1;
    for (int i = 0; i < FL_TABLESVC_MCACHE_N; i++) {
        if (mc->e[i] && mc->e[i]->h == e->h && !strcmp(mc->e[i]->loc, loc)) mc_drop_slot(mc, i);
        if (!mc->e[i] && slot < 0) slot = i;
    }
    while (slot < 0 || mc->bytes + MCACHE_COST(e->len) > MCACHE_BYTES) {
        int lru = -1;
        for (int i = 0; i < FL_TABLESVC_MCACHE_N; i++)
            if (mc->e[i] && (lru < 0 || mc->e[i]->tick < mc->e[lru]->tick)) lru = i;
        if (lru < 0) break;
        mc_drop_slot(mc, lru);
        if (slot < 0) slot = lru;
    }
    if (slot >= 0 && MCACHE_COST(e->len) <= MCACHE_BYTES) {
        e->tick = ++mc->tick;
        mc->e[slot] = e;
        mc->bytes += MCACHE_COST(e->len);
    } else {
        e->live = false;
    }
    pthread_mutex_unlock(&mc->lock);
    return e;
}

fl_tmeta_t *fl_tablesvc_remember(fl_tablesvc_t *s, const char *location, json_t *meta)
{
    return fl_tablesvc_mcache_put(&s->mc, location, meta, NULL);
}

bool fl_tablesvc_row_gone(fl_tablesvc_t *s, const fl_table_t *t)
{
    fl_table_t now;
    fl_err_t e = fl_catalog_table_get(s->cfg.cat, t->bucket, t->ns, t->name, &now);
    return e == FL_ERR_NOT_FOUND || (!e && strcmp(now.id, t->id) != 0);
}

static fl_err_t fail_gone(const fl_table_t *t, char *msg, size_t mlen)
{
    return fail(msg, mlen, FL_ERR_NOT_FOUND,
                !strcmp(t->kind, "view") ? "The view was dropped." : "The table was dropped.");
}

fl_err_t fl_tablesvc_load(fl_tablesvc_t *s, const fl_table_t *t, fl_tmeta_t **out, char *msg, size_t mlen)
{
    *out = NULL;
    if (!t->metadata_location[0])
        return fail(msg, mlen, FL_ERR_INVALID, "The specified metadata location is not valid.");
    fl_tmeta_t *e = mc_get(&s->mc, t->metadata_location);
    if (e) {
        *out = e;
        return FL_OK;
    }
    json_t *meta = NULL;
    fl_err_t rc = fl_tablesvc_read_metadata(s, t->metadata_location, &meta);
    if (rc) {
        if (rc == FL_ERR_NOT_FOUND && fl_tablesvc_row_gone(s, t)) return fail_gone(t, msg, mlen);
        fl_warn("catalog: cannot read %s: %s", t->metadata_location, fl_err_str(rc));
        return fail(msg, mlen, FL_ERR_INTERNAL, "The table's metadata file could not be read.");
    }
    e = fl_tablesvc_mcache_put(&s->mc, t->metadata_location, meta, NULL);
    json_decref(meta);
    if (!e) return fail(msg, mlen, FL_ERR_INTERNAL, "Could not render the table's metadata.");
    *out = e;
    return FL_OK;
}

/* ------------------------------------------------------------------ */
/* per-table locks                                                     */

/* Each table is locked on its own: a locked table is a key in its stripe's
 * list, and the stripe's mutex is held only while the list is looked at, so a
 * table held for long (compaction's hold, a commit writing to a remote store)
 * never blocks a commit to another table whose name hashes alike. */

/* "bucket\x1fns\x1fname" into key (TKEY_MAX bytes; names are capped well below). */
#define TKEY_MAX (64 + 2 * FL_NAME_MAX + 2)
static void tkey(char key[TKEY_MAX], const char *bucket, const char *ns, const char *name)
{
    snprintf(key, TKEY_MAX, "%s\x1f%s\x1f%s", bucket, ns, name);
}

static tstripe_t *stripe_of(fl_tablesvc_t *s, const char *key)
{
    return &s->stripes[fnv(key) % FL_TABLESVC_STRIPES];
}

static tlock_t **find_locked(tstripe_t *st, const char *key)
{
    tlock_t **p = &st->locked;
    while (*p && strcmp((*p)->key, key) != 0) p = &(*p)->next;
    return p;
}

static void lock_key(fl_tablesvc_t *s, const char *key)
{
    tstripe_t *st = stripe_of(s, key);
    size_t n = strlen(key) + 1;
    tlock_t *l = fl_malloc(sizeof *l + n);
    memcpy(l->key, key, n);
    pthread_mutex_lock(&st->mu);
    while (*find_locked(st, key)) pthread_cond_wait(&st->cv, &st->mu);
    l->next = st->locked;
    st->locked = l;
    pthread_mutex_unlock(&st->mu);
}

static void unlock_key(fl_tablesvc_t *s, const char *key)
{
    tstripe_t *st = stripe_of(s, key);
    pthread_mutex_lock(&st->mu);
    tlock_t **p = find_locked(st, key), *l = *p;
    if (l) *p = l->next;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    free(l);
}

void fl_tablesvc_lock(fl_tablesvc_t *s, const char *bucket, const char *ns, const char *name)
{
    char key[TKEY_MAX];
    tkey(key, bucket, ns, name);
    lock_key(s, key);
}

void fl_tablesvc_unlock(fl_tablesvc_t *s, const char *bucket, const char *ns, const char *name)
{
    char key[TKEY_MAX];
    tkey(key, bucket, ns, name);
    unlock_key(s, key);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Locks n tables in ascending key order (no deadlock between two multi-table
 * callers), each once. keys[] gets their keys (malloc'd); returns how many. */
static size_t lock_many(fl_tablesvc_t *s, const char *bucket, const char *const *ns, const char *const *name,
                        size_t n, char **keys)
{
    char key[TKEY_MAX];
    for (size_t i = 0; i < n; i++) {
        tkey(key, bucket, ns[i], name[i]);
        keys[i] = fl_strdup(key);
    }
    qsort(keys, n, sizeof *keys, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        if (u && !strcmp(keys[u - 1], keys[i])) free(keys[i]);
        else keys[u++] = keys[i];
    }
    for (size_t i = 0; i < u; i++) lock_key(s, keys[i]);
    return u;
}

static void unlock_many(fl_tablesvc_t *s, char **keys, size_t nl)
{
    for (size_t i = nl; i-- > 0;) {
        unlock_key(s, keys[i]);
        free(keys[i]);
    }
}

/* ------------------------------------------------------------------ */
/* S3 Tables pointer moves                                              */

fl_err_t fl_tablesvc_swap(fl_tablesvc_t *s, const fl_table_t *t, const char *expect_token,
                          const char *new_location, const char *principal, char *new_token_out)
{
    fl_table_swap_t sw = { .bucket = t->bucket, .ns = t->ns, .name = t->name, .expect_id = t->id,
                           .expect_token = expect_token, .new_location = new_location, .modified_by = principal };
    fl_tablesvc_lock(s, t->bucket, t->ns, t->name);
    fl_err_t e = fl_catalog_table_swap(s->cfg.cat, &sw, 1);
    fl_tablesvc_unlock(s, t->bucket, t->ns, t->name);
    if (!e) snprintf(new_token_out, 40, "%s", sw.new_token_out);
    return e;
}

fl_err_t fl_tablesvc_rename(fl_tablesvc_t *s, const fl_table_t *t, const char *new_ns, const char *new_name,
                            const char *expect_token)
{
    const char *nss[2] = { t->ns, new_ns }, *names[2] = { t->name, new_name };
    char *locks[2];
    size_t nl = lock_many(s, t->bucket, nss, names, 2, locks);
    fl_err_t e = fl_catalog_table_rename(s->cfg.cat, t->bucket, t->ns, t->name, new_ns, new_name, t->id,
                                         expect_token);
    unlock_many(s, locks, nl);
    return e;
}

/* ------------------------------------------------------------------ */
/* commits                                                              */

typedef struct work {
    fl_tablesvc_change_t *c;
    fl_table_t row;
    fl_tmeta_t *base;
    json_t *next;               /* new metadata (owned), NULL when unchanged */
    char *text;                 /* next, serialised once: the file and the cache share it */
    char loc[FL_LOC_MAX];       /* written file */
    fl_tmeta_t *done;           /* cache entry of the result */
} work_t;

static bool has_assert_create(json_t *reqs)
{
    size_t i;
    json_t *v;
    json_array_foreach(reqs, i, v) {
        json_t *ty = json_object_get(v, "type");
        if (json_is_string(ty) && !strcmp(json_string_value(ty), "assert-create")) return true;
    }
    return false;
}

/* The row of a table (kind "table") or view. FL_ERR_NOT_FOUND when absent or of the other kind. */
static fl_err_t get_row(fl_tablesvc_t *s, const char *bucket, const char *ns, const char *name, bool view,
                        fl_table_t *t, char *msg, size_t mlen)
{
    fl_err_t e = fl_catalog_table_get(s->cfg.cat, bucket, ns, name, t);
    if (!e && !strcmp(t->kind, view ? "view" : "table")) return FL_OK;
    if (e && e != FL_ERR_NOT_FOUND) return fail(msg, mlen, FL_ERR_INTERNAL, fl_err_str(e));
    return fail(msg, mlen, FL_ERR_NOT_FOUND,
                view ? "The specified view does not exist." : "The specified table does not exist.");
}

/* A ref of base that next lacks and that no remove-snapshot-ref of updates names (a
 * remove-snapshots took it along), or NULL. */
static const char *dropped_ref(json_t *base, json_t *next, json_t *updates)
{
    const char *name;
    json_t *r, *u;
    size_t i;
    json_object_foreach(json_object_get(base, "refs"), name, r) {
        if (json_object_get(json_object_get(next, "refs"), name)) continue;
        bool named = false;
        json_array_foreach(updates, i, u) {
            const char *a = json_string_value(json_object_get(u, "action"));
            const char *n = json_string_value(json_object_get(u, "ref-name"));
            if (a && n && !strcmp(a, "remove-snapshot-ref") && !strcmp(n, name)) named = true;
        }
        if (!named) return name;
    }
    return NULL;
}

/* Check + apply one change against its row's current metadata, and write the
 * next metadata file (w->next NULL: nothing to write). */
static fl_err_t prepare(fl_tablesvc_t *s, work_t *w, bool view, bool keep_refs, char *msg, size_t mlen)
{
    char emsg[512] = "";
    fl_err_t e = fl_tablesvc_load(s, &w->row, &w->base, msg, mlen);
    if (e) return e;
    int st = fl_iceberg_check_requirements(w->base->meta, w->c->requirements, emsg, sizeof emsg);
    if (st == 409) return fail(msg, mlen, FL_ERR_CONFLICT, emsg[0] ? emsg : "Requirement failed.");
    if (st) return fail(msg, mlen, FL_ERR_INVALID, emsg[0] ? emsg : "Invalid requirement.");
    if (!view) {
        /* a table stays in its warehouse: the S3 Tables API and purge know no other place */
        size_t i;
        json_t *u;
        json_array_foreach(w->c->updates, i, u) {
            json_t *a = json_object_get(u, "action"), *l = json_object_get(u, "location");
            const char *lr = json_is_string(l) ? fl_io_s3_rest(json_string_value(l)) : NULL;
            if (json_is_string(a) && !strcmp(json_string_value(a), "set-location") &&
                (!lr || strcmp(lr, fl_io_s3_rest(w->row.warehouse)) != 0)) /* s3:// or oss:// */
                return fail(msg, mlen, FL_ERR_INVALID, "A table's location is its warehouse and cannot be changed.");
        }
    }
    int status = 0;
    json_t *next = view ? fl_iceberg_apply_view_updates(w->base->meta, w->c->updates, w->row.metadata_location,
                                                        &status, emsg, sizeof emsg)
                        : fl_iceberg_apply_updates(w->base->meta, w->c->updates, w->row.metadata_location, &status,
                                                   emsg, sizeof emsg);
    if (!next) {
        if (status == 409) return fail(msg, mlen, FL_ERR_CONFLICT, emsg[0] ? emsg : "Commit conflict.");
        if (status >= 500) return fail(msg, mlen, FL_ERR_INTERNAL, "The table's current metadata is not usable.");
        return fail(msg, mlen, FL_ERR_INVALID, emsg[0] ? emsg : "Invalid update.");
    }
    const char *lost = !view && keep_refs ? dropped_ref(w->base->meta, next, w->c->updates) : NULL;
    if (lost) {
        snprintf(emsg, sizeof emsg, "Requirement failed: ref %.200s points at a snapshot the commit removes.", lost);
        json_decref(next);
        return fail(msg, mlen, FL_ERR_CONFLICT, emsg);
    }
    if (!view && fl_iceberg_metadata_unchanged(w->base->meta, next)) {
        json_decref(next);
        return FL_OK;
    }
    w->next = next;
    w->text = json_dumps(next, JSON_COMPACT);
    e = w->text ? fl_tablesvc_write_metadata_text(s, &w->row, fl_iceberg_next_file_seq(next), w->text, w->loc)
                : FL_ERR_NOMEM;
    if (e && fl_tablesvc_row_gone(s, &w->row)) /* dropped and purged meanwhile: the warehouse is gone */
        return fail_gone(&w->row, msg, mlen);
    if (e) {
        fl_warn("catalog: writing metadata for %s.%s: %s", w->row.ns, w->row.name, fl_err_str(e));
        return fail(msg, mlen, FL_ERR_INTERNAL, "The new metadata file could not be written.");
    }
    return FL_OK;
}

/* Deletes the metadata files the changes wrote, after a swap that certainly did not
 * happen (lost, or not tried): no pointer names them. */
static void discard_written(fl_tablesvc_t *s, work_t *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (w[i].next && w[i].loc[0]) {
            fl_err_t e = fl_tablesvc_delete_metadata(s, &w[i].row, w[i].loc);
            if (e && e != FL_ERR_NOT_FOUND) fl_warn("catalog: could not remove %s: %s", w[i].loc, fl_err_str(e));
            w[i].loc[0] = 0;
        }
}

/* After a commit that landed (and after the table's lock): with the table property
 * write.metadata.delete-after-commit.enabled=true, the previous metadata files that the
 * base's metadata-log named and the new one no longer does (it keeps the newest
 * write.metadata.previous-versions-max) are deleted, as Iceberg's own catalogs do after
 * a commit. Only files of the table's warehouse; never the new file, the base's own or one
 * the new log keeps. A failed delete is logged (unreferenced-file removal finds it later). */
/* Named as Iceberg names table metadata files (".metadata.json", also gzipped): a log entry
 * naming anything else (a registered file's log can name any object of the warehouse, data
 * files included) is never deleted for it. */
static bool is_metadata_file(const char *p)
{
    static const char *const ends[] = { ".metadata.json", ".metadata.json.gz" };
    size_t n = strlen(p);
    for (size_t i = 0; i < 2; i++) {
        size_t m = strlen(ends[i]);
        if (n > m && !strcmp(p + n - m, ends[i])) return true;
    }
    return false;
}

static void prune_metadata_log(fl_tablesvc_t *s, const work_t *w)
{
    json_t *props = json_object_get(w->next, "properties");
    const char *on = json_string_value(json_object_get(props, "write.metadata.delete-after-commit.enabled"));
    if (!on || strcasecmp(on, "true") != 0) return;
    json_t *kept = json_object_get(w->next, "metadata-log"), *x, *y;
    size_t i, j;
    json_array_foreach(json_object_get(w->base->meta, "metadata-log"), i, x) {
        const char *p = json_string_value(json_object_get(x, "metadata-file"));
        if (!p || !strcmp(p, w->loc) || !strcmp(p, w->row.metadata_location) || !is_metadata_file(p)) continue;
        bool keep = false;
        json_array_foreach(kept, j, y) {
            const char *q = json_string_value(json_object_get(y, "metadata-file"));
            if (q && !strcmp(p, q)) {
                keep = true;
                break;
            }
        }
        if (keep) continue;
        fl_err_t e = fl_tablesvc_delete_metadata(s, &w->row, p);
        if (e && e != FL_ERR_NOT_FOUND && e != FL_ERR_INVALID)
            fl_warn("catalog: could not remove %s (off the metadata-log): %s", p, fl_err_str(e));
    }
}

static void work_reset(work_t *w)
{
    fl_tmeta_release(w->base);
    fl_tmeta_release(w->done);
    json_decref(w->next);
    free(w->text);
    w->text = NULL;
    w->base = w->done = NULL;
    w->next = NULL;
    w->loc[0] = 0;
}

/* The table a create transaction starts from: the leading "initial" updates of the
 * commit (assign-uuid, upgrade-format-version, the first add-schema / add-spec /
 * add-sort-order with their set-current/default, set-location, set-properties) folded
 * into a CreateTableRequest and built like a createTable (the ids come out as in the
 * staged response the client started from). *rest_out gets the remaining updates.
 * NULL with status/emsg on invalid input. */
static json_t *create_base(json_t *upds, json_t **rest_out, int *status, char *emsg, size_t elen)
{
    json_t *req = json_object(), *props = json_object();
    json_t *rest = json_array();
    const char *uuid = NULL, *loc = NULL;
    bool schema = false, spec = false, order = false, stop = false;
    size_t i;
    json_t *u;
    json_array_foreach(upds, i, u) {
        json_t *aj = json_object_get(u, "action");
        const char *a = json_is_string(aj) ? json_string_value(aj) : "";
        if (!stop) {
            stop = true;
            if (!strcmp(a, "assign-uuid") && json_is_string(json_object_get(u, "uuid"))) {
                uuid = json_string_value(json_object_get(u, "uuid"));
                stop = false;
            } else if (!strcmp(a, "upgrade-format-version") && json_is_integer(json_object_get(u, "format-version"))) {
                char fv[24];
                snprintf(fv, sizeof fv, "%lld", (long long)json_integer_value(json_object_get(u, "format-version")));
                json_object_set_new(props, "format-version", json_string(fv));
                stop = false;
            } else if (!strcmp(a, "add-schema") && !schema && json_is_object(json_object_get(u, "schema"))) {
                json_object_set(req, "schema", json_object_get(u, "schema"));
                schema = true;
                stop = false;
            } else if (!strcmp(a, "set-current-schema") && schema) {
                stop = false;
            } else if (!strcmp(a, "add-spec") && !spec && json_is_object(json_object_get(u, "spec"))) {
                json_object_set(req, "partition-spec", json_object_get(u, "spec"));
                spec = true;
                stop = false;
            } else if (!strcmp(a, "set-default-spec") && spec) {
                stop = false;
            } else if (!strcmp(a, "add-sort-order") && !order && json_is_object(json_object_get(u, "sort-order"))) {
                json_object_set(req, "write-order", json_object_get(u, "sort-order"));
                order = true;
                stop = false;
            } else if (!strcmp(a, "set-default-sort-order") && order) {
                stop = false;
            } else if (!strcmp(a, "set-location") && json_is_string(json_object_get(u, "location"))) {
                loc = json_string_value(json_object_get(u, "location"));
                stop = false;
            } else if (!strcmp(a, "set-properties")) {
                json_t *m = json_object_get(u, "updates");
                if (!m) m = json_object_get(u, "updated");
                if (json_is_object(m)) {
                    json_object_update(props, m);
                    stop = false;
                }
            }
            if (!stop) continue;
        }
        json_array_append(rest, u);
    }
    json_t *base = NULL;
    if (!schema) {
        *status = 400;
        snprintf(emsg, elen, "A create commit must add a schema.");
        goto out;
    }
    json_object_set_new(req, "name", json_string("staged"));
    json_object_set(req, "properties", props);
    base = fl_iceberg_new_metadata(req, loc && loc[0] ? loc : "s3://pending", status, emsg, elen);
    if (base && uuid) json_object_set_new(base, "table-uuid", json_string(uuid));
out:
    json_decref(req);
    json_decref(props);
    if (base) *rest_out = rest;
    else json_decref(rest);
    return base;
}

/* assert-create commit of a table that does not exist (after stage-create). */
static fl_err_t commit_create(fl_tablesvc_t *s, fl_tablesvc_commit_t *c, fl_tablesvc_change_t *ch,
                              char *msg, size_t mlen)
{
    char emsg[512] = "";
    json_t *next = NULL, *base = NULL;
    fl_err_t e = FL_OK;
    int st = fl_iceberg_check_requirements(NULL, ch->requirements, emsg, sizeof emsg);
    if (st) return fail(msg, mlen, st == 409 ? FL_ERR_CONFLICT : FL_ERR_INVALID, emsg);
    if (!fl_tablesvc_name_ok(ch->name)) return fail(msg, mlen, FL_ERR_INVALID, "Invalid table name.");
    fl_namespace_t nsrow = { 0 };
    e = fl_catalog_ns_get(s->cfg.cat, c->bucket, ch->ns, &nsrow);
    fl_namespace_free(&nsrow);
    if (e) return fail(msg, mlen, FL_ERR_NOT_FOUND, "The specified namespace does not exist.");
    int status = 0;
    json_t *rest = NULL;
    base = create_base(ch->updates, &rest, &status, emsg, sizeof emsg);
    /* "s3://pending": no set-location, so a fresh warehouse is picked below */
    if (base) next = fl_iceberg_apply_updates(base, rest, NULL, &status, emsg, sizeof emsg);
    json_decref(rest);
    if (!next) {
        e = fail(msg, mlen, FL_ERR_INVALID, emsg[0] ? emsg : "Invalid updates for a new table.");
        goto out;
    }
    if (fl_iceberg_validate_metadata(next, emsg, sizeof emsg) != 0) {
        e = fail(msg, mlen, FL_ERR_INVALID, emsg);
        goto out;
    }
    json_t *lj = json_object_get(next, "location");
    const char *loc = json_is_string(lj) ? json_string_value(lj) : "";
    char wb[64], id[37];
    fl_table_t t;
    if (!loc[0] || !strcmp(loc, "s3://pending")) {
        const char *why = NULL;
        e = fl_tablesvc_create(s, c->bucket, ch->ns, ch->name, c->principal, next, &t, &why);
        if (e == FL_ERR_EXISTS) fail(msg, mlen, e, "A table or view with this name already exists.");
        else if (e == FL_ERR_NOT_FOUND) fail(msg, mlen, e, "The specified namespace does not exist.");
        else if (e) e = fail(msg, mlen, FL_ERR_INTERNAL, why ? why : fl_err_str(e));
        if (e) goto out;
    } else {
        fl_bucket_info_t bi;
        fl_table_t other;
        if (!fl_tablesvc_warehouse_of(loc, wb, id) || fl_io_s3_rest(loc)[strlen(wb)] != 0 ||
            fl_store_bucket_head(s->cfg.store, wb, &bi) != FL_OK) {
            e = fail(msg, mlen, FL_ERR_INVALID, "The table location must be the warehouse given at stage-create.");
            goto out;
        }
        fl_tablesvc_row_init(s, &t, c->bucket, ch->ns, ch->name, id, false, c->principal);
        if (fl_catalog_table_get_by_warehouse(s->cfg.cat, t.warehouse, &other) == FL_OK) {
            e = fail(msg, mlen, FL_ERR_EXISTS, "The warehouse already belongs to a table.");
            goto out;
        }
        e = fl_tablesvc_write_metadata(s, &t, 0, next, t.metadata_location);
        if (e) {
            e = fail(msg, mlen, FL_ERR_INTERNAL, "The metadata file could not be written.");
            goto out;
        }
        e = fl_catalog_table_create(s->cfg.cat, &t);
        if (e == FL_ERR_EXISTS) fail(msg, mlen, e, "A table or view with this name already exists.");
        else if (e == FL_ERR_NOT_FOUND) fail(msg, mlen, e, "The specified namespace does not exist.");
        else if (e) e = fail(msg, mlen, FL_ERR_IO, fl_err_str(e));
        if (e) goto out;
    }
    ch->result = fl_tablesvc_mcache_put(&s->mc, t.metadata_location, next, NULL);
    snprintf(ch->location, sizeof ch->location, "%s", t.metadata_location);
out:
    json_decref(next);
    json_decref(base);
    return e;
}

fl_err_t fl_tablesvc_commit(fl_tablesvc_t *s, fl_tablesvc_commit_t *c, fl_tablesvc_change_t *ch, size_t n,
                            char *msg, size_t mlen)
{
    c->created = false;
    for (size_t i = 0; i < n; i++) {
        ch[i].result = NULL;
        ch[i].location[0] = 0;
    }
    if (n < 1 || n > MAX_CHANGES) return fail(msg, mlen, FL_ERR_INVALID, "A commit changes 1 to 100 tables.");
    size_t nupd = 0;
    for (size_t i = 0; i < n; i++) {
        if ((ch[i].requirements && !json_is_array(ch[i].requirements)) ||
            (ch[i].updates && !json_is_array(ch[i].updates)))
            return fail(msg, mlen, FL_ERR_INVALID, "requirements and updates must be arrays.");
        nupd += json_array_size(ch[i].updates);
        if (n > 1 && has_assert_create(ch[i].requirements))
            return fail(msg, mlen, FL_ERR_INVALID,
                        "Creating a table inside a multi-table transaction is not supported.");
    }
    if (c->locked && n != 1) return fail(msg, mlen, FL_ERR_INVALID, "A commit under the caller's lock changes one table.");
    if (nupd > FL_ICEBERG_MAX_COMMIT_UPDATES) {
        char m[128];
        snprintf(m, sizeof m, "A commit may carry at most %d updates.", FL_ICEBERG_MAX_COMMIT_UPDATES);
        return fail(msg, mlen, FL_ERR_INVALID, m);
    }
    const char *principal = c->principal ? c->principal : "anonymous";
    const char **nss = fl_calloc(n, sizeof *nss), **names = fl_calloc(n, sizeof *names);
    for (size_t i = 0; i < n; i++) {
        nss[i] = ch[i].ns;
        names[i] = ch[i].name;
    }
    char **locks = fl_calloc(n, sizeof *locks);
    size_t nl = c->locked ? 0 : lock_many(s, c->bucket, nss, names, n, locks);
    work_t *w = fl_calloc(n, sizeof *w);
    for (size_t i = 0; i < n; i++) w[i].c = &ch[i];
    fl_table_swap_t *sw = fl_calloc(n, sizeof *sw);
    bool keep_files = false; /* the swap landed, or its outcome is unknown */
    fl_err_t e = FL_OK;

    /* a create transaction (assert-create on a table that does not exist) */
    if (n == 1 && !c->view && has_assert_create(ch[0].requirements) &&
        get_row(s, c->bucket, ch[0].ns, ch[0].name, false, &w[0].row, NULL, 0) != FL_OK) {
        fl_table_t any;
        c->created = true;
        if (fl_catalog_table_get(s->cfg.cat, c->bucket, ch[0].ns, ch[0].name, &any) == FL_OK)
            e = fail(msg, mlen, FL_ERR_EXISTS, "A view with this name already exists.");
        else e = commit_create(s, c, &ch[0], msg, mlen);
        goto out;
    }

    for (int attempt = 0;; attempt++) {
        size_t nsw = 0;
        discard_written(s, w, n); /* a lost swap's files */
        for (size_t i = 0; i < n; i++) {
            work_reset(&w[i]);
            e = get_row(s, c->bucket, ch[i].ns, ch[i].name, c->view, &w[i].row, msg, mlen);
            if (e) goto out;
            if (has_assert_create(ch[i].requirements)) {
                e = fail(msg, mlen, FL_ERR_EXISTS, "The table already exists.");
                goto out;
            }
            e = prepare(s, &w[i], c->view, c->keep_refs, msg, mlen);
            if (e) goto out;
            if (w[i].next) {
                sw[nsw++] = (fl_table_swap_t){ .bucket = c->bucket, .ns = ch[i].ns, .name = ch[i].name,
                                               .expect_id = w[i].row.id, .expect_token = w[i].row.version_token,
                                               .new_location = w[i].loc, .modified_by = principal };
            } else if (c->pin_unchanged && json_array_size(ch[i].requirements)) {
                /* unchanged but required: pin it, so its requirements hold at the swap too */
                sw[nsw++] = (fl_table_swap_t){ .bucket = c->bucket, .ns = ch[i].ns, .name = ch[i].name,
                                               .expect_id = w[i].row.id, .expect_token = w[i].row.version_token,
                                               .new_location = w[i].row.metadata_location,
                                               .modified_by = principal };
            }
        }
        e = nsw ? fl_catalog_table_swap(s->cfg.cat, sw, nsw) : FL_OK;
        if (e == FL_ERR_CONFLICT && attempt + 1 < COMMIT_ATTEMPTS) continue;
        if (e == FL_ERR_CONFLICT) {
            fail(msg, mlen, e, "The table kept changing; retry the commit.");
            goto out;
        }
        if (e == FL_ERR_NOT_FOUND) {
            fail(msg, mlen, e, "The table was dropped.");
            goto out;
        }
        if (e == FL_ERR_INTERNAL) { /* the catalog store was unreachable: nothing was written */
            fl_error("catalog: pointer swap failed: %s (nothing was committed)", fl_err_str(e));
            fail(msg, mlen, e, "The catalog store is unavailable; nothing was committed.");
            goto out;
        }
        if (e) {
            fl_error("catalog: pointer swap failed: %s", fl_err_str(e));
            e = fail(msg, mlen, FL_ERR_IO, "The commit's outcome is unknown.");
            keep_files = true;
            goto out;
        }
        keep_files = true;
        break;
    }
    /* landed: every change gets its result */
    for (size_t i = 0; i < n; i++) {
        if (w[i].next) {
            w[i].done = fl_tablesvc_mcache_put(&s->mc, w[i].loc, w[i].next, w[i].text);
            w[i].text = NULL;
            fl_tablesvc_mcache_forget(&s->mc, w[i].row.metadata_location);
            if (!w[i].done) /* the serialisation failed after the commit landed: uncached */
                w[i].done = fl_tablesvc_mcache_put(&s->mc, w[i].loc, w[i].next, NULL);
            ch[i].result = w[i].done;
            w[i].done = NULL;
            snprintf(ch[i].location, sizeof ch[i].location, "%s", w[i].loc);
        } else {
            ch[i].result = w[i].base;
            w[i].base = NULL;
            snprintf(ch[i].location, sizeof ch[i].location, "%s", w[i].row.metadata_location);
        }
    }
out:
    if (!keep_files) discard_written(s, w, n);
    unlock_many(s, locks, nl);
    for (size_t i = 0; !e && !c->view && i < n; i++)
        if (w[i].next && w[i].base) prune_metadata_log(s, &w[i]);
    for (size_t i = 0; i < n; i++) work_reset(&w[i]);
    free(sw);
    free(w);
    free(locks);
    free(nss);
    free(names);
    return e;
}
