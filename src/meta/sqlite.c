/* Catalog store, SQLite backend (design.md §4, meta/catalog.h).
 *
 * One database file (DATA_DIR/catalog.db), WAL, synchronous=FULL, foreign
 * keys on. The schema is versioned with PRAGMA user_version and an
 * append-only migration list; a file newer than this build is refused.
 *
 *   table_buckets(name PK, arn UNIQUE, owner, id, created_ms)
 *   namespaces(bucket -> table_buckets, name, ..., properties JSON) PK(bucket, name)
 *   tables(bucket, namespace -> namespaces, name, ..., kind) PK(bucket, namespace, name)
 *       one table for tables and views, so a name is unique across both kinds;
 *       arn UNIQUE (lookups by ARN)
 *   docs(arn, kind, json) PK(arn, kind)   policies, maintenance, tags, ...
 *
 * Threads: a pool of connections, one per concurrently calling thread, each
 * with every statement prepared once (SQLITE_PREPARE_PERSISTENT). A read is
 * one statement on an idle connection, so it sees one consistent snapshot.
 * Writers take an in-process mutex and then BEGIN IMMEDIATE, so they queue on
 * a futex rather than in SQLite's sleeping busy handler; busy_timeout still
 * guards against other processes holding the file.
 *
 * Listing is a range scan of a primary key: the lower bound is the greater of
 * the prefix (inclusive) and the "after" cursor (exclusive), the upper bound
 * the prefix's successor. With no prefix the upper bound is an empty BLOB,
 * which sorts after every TEXT value. Names compare bytewise (BINARY). */
#include "meta/catalog.h"
#include "base/uuid.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <sqlite3.h>

#define BUSY_TIMEOUT_MS 30000

/* ---- schema ---- */

/* Migrations: entry i brings user_version from i to i+1. Append, never edit. */
static const char *const migrations[] = {
    /* 0 -> 1 */
    "CREATE TABLE table_buckets(name TEXT PRIMARY KEY, arn TEXT NOT NULL UNIQUE,"
    "  owner TEXT NOT NULL, id TEXT NOT NULL, created_ms INTEGER NOT NULL) STRICT, WITHOUT ROWID;"
    "CREATE TABLE namespaces(bucket TEXT NOT NULL REFERENCES table_buckets(name),"
    "  name TEXT NOT NULL, id TEXT NOT NULL, owner TEXT NOT NULL, created_by TEXT NOT NULL,"
    "  created_ms INTEGER NOT NULL, properties TEXT NOT NULL DEFAULT '{}',"
    "  PRIMARY KEY(bucket, name)) STRICT, WITHOUT ROWID;"
    "CREATE TABLE tables(bucket TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,"
    "  id TEXT NOT NULL, arn TEXT NOT NULL UNIQUE, type TEXT NOT NULL, format TEXT NOT NULL,"
    "  kind TEXT NOT NULL, warehouse TEXT NOT NULL, metadata_location TEXT NOT NULL DEFAULT '',"
    "  version_token TEXT NOT NULL, owner TEXT NOT NULL, created_by TEXT NOT NULL,"
    "  modified_by TEXT NOT NULL, created_ms INTEGER NOT NULL, modified_ms INTEGER NOT NULL,"
    "  PRIMARY KEY(bucket, namespace, name),"
    "  FOREIGN KEY(bucket, namespace) REFERENCES namespaces(bucket, name)) STRICT, WITHOUT ROWID;"
    "CREATE TABLE docs(arn TEXT NOT NULL, kind TEXT NOT NULL, json TEXT NOT NULL,"
    "  PRIMARY KEY(arn, kind)) STRICT, WITHOUT ROWID;",
    /* 1 -> 2: a warehouse belongs to one table, whichever table bucket it is in */
    "CREATE UNIQUE INDEX tables_warehouse ON tables(warehouse);",
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

#define B_COLS "name, arn, owner, id, created_ms"
#define N_COLS "bucket, name, id, owner, created_by, created_ms, properties"
#define T_COLS "bucket, namespace, name, id, arn, type, format, kind, warehouse," \
               " metadata_location, version_token, owner, created_by, modified_by," \
               " created_ms, modified_ms"
#define KIND_OK " AND (?9 IS NULL OR kind = ?9)"

enum {
    ST_BEGIN, ST_COMMIT, ST_ROLLBACK,
    ST_B_INS, ST_B_GET, ST_B_LIST_GE, ST_B_LIST_GT, ST_B_HASNS, ST_B_DEL,
    ST_N_INS, ST_N_GET, ST_N_LIST_GE, ST_N_LIST_GT, ST_N_PROPS, ST_N_HASTBL, ST_N_DEL,
    ST_T_INS, ST_T_GET, ST_T_GET_ARN, ST_T_GET_WH, ST_T_LIST1_GE, ST_T_LIST1_GT, ST_T_LISTN_GE, ST_T_LISTN_GT,
    ST_T_TOKEN, ST_T_SWAP, ST_T_RENAME, ST_T_DEL,
    ST_D_PUT, ST_D_GET, ST_D_DEL, ST_D_DEL_ARN, ST_D_LIST,
    ST_COUNT
};

/* Bind numbering: ?1 bucket/arn, ?2 namespace, ... as each function documents.
 * List statements: ?5 lower bound, ?6 upper bound, ?7 limit, ?8 prefix, ?9 kind. */
static const char *const st_sql[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_B_INS] = "INSERT INTO table_buckets(" B_COLS ") VALUES(?1, ?2, ?3, ?4, ?5)"
                 " ON CONFLICT DO NOTHING",
    [ST_B_GET] = "SELECT " B_COLS " FROM table_buckets WHERE name = ?1",
    [ST_B_LIST_GE] = "SELECT " B_COLS " FROM table_buckets WHERE name >= ?5 AND name < ?6"
                     " ORDER BY name LIMIT ?7",
    [ST_B_LIST_GT] = "SELECT " B_COLS " FROM table_buckets WHERE name > ?5 AND name < ?6"
                     " ORDER BY name LIMIT ?7",
    [ST_B_HASNS] = "SELECT 1 FROM namespaces WHERE bucket = ?1 LIMIT 1",
    [ST_B_DEL] = "DELETE FROM table_buckets WHERE name = ?1 RETURNING arn",
    [ST_N_INS] = "INSERT INTO namespaces(" N_COLS ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                 " ON CONFLICT DO NOTHING",
    [ST_N_GET] = "SELECT " N_COLS " FROM namespaces WHERE bucket = ?1 AND name = ?2",
    [ST_N_LIST_GE] = "SELECT " N_COLS " FROM namespaces WHERE bucket = ?1 AND name >= ?5"
                     " AND name < ?6 ORDER BY name LIMIT ?7",
    [ST_N_LIST_GT] = "SELECT " N_COLS " FROM namespaces WHERE bucket = ?1 AND name > ?5"
                     " AND name < ?6 ORDER BY name LIMIT ?7",
    [ST_N_PROPS] = "UPDATE namespaces SET properties = ?3 WHERE bucket = ?1 AND name = ?2",
    [ST_N_HASTBL] = "SELECT 1 FROM tables WHERE bucket = ?1 AND namespace = ?2 LIMIT 1",
    [ST_N_DEL] = "DELETE FROM namespaces WHERE bucket = ?1 AND name = ?2",
    [ST_T_INS] = "INSERT INTO tables(" T_COLS ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,"
                 " ?10, ?11, ?12, ?13, ?14, ?15, ?16) ON CONFLICT DO NOTHING",
    [ST_T_GET] = "SELECT " T_COLS " FROM tables WHERE bucket = ?1 AND namespace = ?2 AND name = ?3",
    [ST_T_GET_ARN] = "SELECT " T_COLS " FROM tables WHERE arn = ?1",
    [ST_T_GET_WH] = "SELECT " T_COLS " FROM tables WHERE warehouse = ?1",
    /* one namespace: a range of name */
    [ST_T_LIST1_GE] = "SELECT " T_COLS " FROM tables WHERE bucket = ?1 AND namespace = ?2"
                      " AND name >= ?5 AND name < ?6" KIND_OK " ORDER BY name LIMIT ?7",
    [ST_T_LIST1_GT] = "SELECT " T_COLS " FROM tables WHERE bucket = ?1 AND namespace = ?2"
                      " AND name > ?5 AND name < ?6" KIND_OK " ORDER BY name LIMIT ?7",
    /* every namespace: a range of (namespace, name), the name prefix as a filter */
    [ST_T_LISTN_GE] = "SELECT " T_COLS " FROM tables WHERE bucket = ?1"
                      " AND (namespace, name) >= (?2, ?3) AND name >= ?8 AND name < ?6" KIND_OK
                      " ORDER BY namespace, name LIMIT ?7",
    [ST_T_LISTN_GT] = "SELECT " T_COLS " FROM tables WHERE bucket = ?1"
                      " AND (namespace, name) > (?2, ?3) AND name >= ?8 AND name < ?6" KIND_OK
                      " ORDER BY namespace, name LIMIT ?7",
    [ST_T_TOKEN] = "SELECT version_token, arn, id FROM tables"
                   " WHERE bucket = ?1 AND namespace = ?2 AND name = ?3",
    [ST_T_SWAP] = "UPDATE tables SET metadata_location = ?4, version_token = ?5,"
                  " modified_ms = ?6, modified_by = coalesce(?7, modified_by)"
                  " WHERE bucket = ?1 AND namespace = ?2 AND name = ?3",
    [ST_T_RENAME] = "UPDATE tables SET namespace = ?4, name = ?5, version_token = ?6,"
                    " modified_ms = ?7 WHERE bucket = ?1 AND namespace = ?2 AND name = ?3",
    [ST_T_DEL] = "DELETE FROM tables WHERE bucket = ?1 AND namespace = ?2 AND name = ?3",
    [ST_D_PUT] = "INSERT INTO docs(arn, kind, json) VALUES(?1, ?2, ?3)"
                 " ON CONFLICT(arn, kind) DO UPDATE SET json = excluded.json",
    [ST_D_GET] = "SELECT json FROM docs WHERE arn = ?1 AND kind = ?2",
    [ST_D_DEL] = "DELETE FROM docs WHERE arn = ?1 AND kind = ?2",
    [ST_D_DEL_ARN] = "DELETE FROM docs WHERE arn = ?1",
    [ST_D_LIST] = "SELECT kind, json FROM docs WHERE arn = ?1 AND kind >= ?5 AND kind < ?6"
                  " ORDER BY kind",
};

typedef struct fl_conn {
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    bool in_tx;
    struct fl_conn *next;
} fl_conn_t;

struct fl_catalog {
    char *path;
    pthread_mutex_t pool_mu;   /* guards idle */
    fl_conn_t *idle;
    pthread_mutex_t write_mu;  /* held from BEGIN IMMEDIATE to COMMIT/ROLLBACK */
};

/* ---- small helpers ---- */

/* 32 random hex chars. */
static void new_token(char out[40]) { fl_random_hex(out, 32); }

/* Random (version 4) UUID, lower-case, 36 chars. */
static void new_uuid(char out[40]) { fl_uuid4(out); }

static void col_copy(sqlite3_stmt *st, int i, char *out, size_t n)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    fl_strlcpy(out, t ? (const char *)t : "", n);
}

static char *col_strdup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return fl_strdup(t ? (const char *)t : "");
}

static void bind_str(sqlite3_stmt *st, int i, const char *s)
{
    if (s) sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
    else sqlite3_bind_null(st, i);
}

/* Binds as ?idx the upper bound of names starting with prefix: its
 * successor (trailing 0xff bytes dropped, last byte bumped) into *hi, which
 * must outlive the statement's run; with no such successor an empty BLOB,
 * which sorts after all TEXT. */
static void bind_hi(sqlite3_stmt *st, int idx, const char *prefix, char **hi)
{
    size_t n = prefix ? strlen(prefix) : 0;
    while (n && (unsigned char)prefix[n - 1] == 0xff) n--;
    if (n) {
        *hi = fl_strndup(prefix, n);
        (*hi)[n - 1] = (char)((unsigned char)(*hi)[n - 1] + 1);
        sqlite3_bind_text(st, idx, *hi, (int)n, SQLITE_STATIC);
    } else {
        sqlite3_bind_zeroblob(st, idx, 0);
    }
}

/* Binds ?5 (lower bound) and ?6 (upper bound) of a list statement and picks
 * its GE or GT variant: names that start with prefix (NULL = any) and sort
 * after `after` (NULL = from the start). *hi as for bind_hi. */
static sqlite3_stmt *bind_range(fl_conn_t *k, int st_ge, int st_gt, const char *prefix,
                                const char *after, char **hi)
{
    if (!prefix) prefix = "";
    bool gt = after && strcmp(after, prefix) >= 0;
    sqlite3_stmt *st = k->st[gt ? st_gt : st_ge];
    bind_str(st, 5, gt ? after : prefix);
    bind_hi(st, 6, prefix, hi);
    return st;
}

static void row_bucket(sqlite3_stmt *st, void *out)
{
    fl_tbucket_t *b = out;
    memset(b, 0, sizeof *b);
    col_copy(st, 0, b->name, sizeof b->name);
    col_copy(st, 1, b->arn, sizeof b->arn);
    col_copy(st, 2, b->owner, sizeof b->owner);
    col_copy(st, 3, b->id, sizeof b->id);
    b->created_ms = sqlite3_column_int64(st, 4);
}

static void row_ns(sqlite3_stmt *st, void *out)
{
    fl_namespace_t *ns = out;
    memset(ns, 0, sizeof *ns);
    col_copy(st, 0, ns->bucket, sizeof ns->bucket);
    col_copy(st, 1, ns->name, sizeof ns->name);
    col_copy(st, 2, ns->id, sizeof ns->id);
    col_copy(st, 3, ns->owner, sizeof ns->owner);
    col_copy(st, 4, ns->created_by, sizeof ns->created_by);
    ns->created_ms = sqlite3_column_int64(st, 5);
    ns->properties = col_strdup(st, 6);
}

static void row_table(sqlite3_stmt *st, void *out)
{
    fl_table_t *t = out;
    col_copy(st, 0, t->bucket, sizeof t->bucket);
    col_copy(st, 1, t->ns, sizeof t->ns);
    col_copy(st, 2, t->name, sizeof t->name);
    col_copy(st, 3, t->id, sizeof t->id);
    col_copy(st, 4, t->arn, sizeof t->arn);
    col_copy(st, 5, t->type, sizeof t->type);
    col_copy(st, 6, t->format, sizeof t->format);
    col_copy(st, 7, t->kind, sizeof t->kind);
    col_copy(st, 8, t->warehouse, sizeof t->warehouse);
    col_copy(st, 9, t->metadata_location, sizeof t->metadata_location);
    col_copy(st, 10, t->version_token, sizeof t->version_token);
    col_copy(st, 11, t->owner, sizeof t->owner);
    col_copy(st, 12, t->created_by, sizeof t->created_by);
    col_copy(st, 13, t->modified_by, sizeof t->modified_by);
    t->created_ms = sqlite3_column_int64(st, 14);
    t->modified_ms = sqlite3_column_int64(st, 15);
}

/* ---- connections and transactions ---- */

static fl_err_t db_err(fl_conn_t *k, int rc, const char *what)
{
    fl_error("catalog: %s: %s (%s)", what, sqlite3_errmsg(k->db), sqlite3_errstr(rc));
    return FL_ERR_IO;
}

/* Steps a bound list statement (its LIMIT bound to max + 1): up to max rows
 * into a new array of elem-byte rows, each filled by row; *more is set when a
 * further row exists. On failure the rows read so far are still returned in
 * *out / *n for the caller to free. */
static fl_err_t collect_rows(fl_conn_t *k, sqlite3_stmt *st, int max, size_t elem,
                             void (*row)(sqlite3_stmt *, void *), const char *what, void **out,
                             size_t *n, bool *more)
{
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == (size_t)max) { *more = true; break; }
        if (*n == cap) *out = fl_realloc(*out, (cap = cap ? cap * 2 : 16) * elem);
        char *slot = (char *)*out + *n * elem;
        memset(slot, 0, elem);
        row(st, slot);
        (*n)++;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        *more = false;
        return db_err(k, rc, what);
    }
    return FL_OK;
}

/* Steps a statement expecting at most one row: FL_OK with the row current
 * (the caller resets the statement), FL_ERR_NOT_FOUND on none (reset here).
 * Every statement is reset before it goes back to rest: a statement left
 * halted after SQLITE_DONE is not "busy", yet refuses new bindings. */
static fl_err_t step_row(fl_conn_t *k, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) return FL_OK;
    fl_err_t err = rc == SQLITE_DONE ? FL_ERR_NOT_FOUND : db_err(k, rc, what);
    sqlite3_reset(st);
    return err;
}

/* Runs a statement expected to finish without rows; resets it. */
static fl_err_t step_done(fl_conn_t *k, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    fl_err_t err = rc == SQLITE_DONE ? FL_OK : db_err(k, rc, what);
    sqlite3_reset(st);
    return err;
}

static void conn_free(fl_conn_t *k)
{
    if (!k) return;
    for (int i = 0; i < ST_COUNT; i++) sqlite3_finalize(k->st[i]);
    sqlite3_close(k->db);
    free(k);
}

static fl_conn_t *conn_open(const char *path)
{
    fl_conn_t *k = fl_calloc(1, sizeof *k);
    int rc = sqlite3_open_v2(path, &k->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        fl_error("catalog: open %s: %s", path, k->db ? sqlite3_errmsg(k->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_busy_timeout(k->db, BUSY_TIMEOUT_MS);
    rc = sqlite3_exec(k->db, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON", NULL, NULL, NULL);
    if (rc != SQLITE_OK) { db_err(k, rc, "pragma"); goto fail; }
    return k;
fail:
    conn_free(k);
    return NULL;
}

static bool conn_prepare(fl_conn_t *k)
{
    for (int i = 0; i < ST_COUNT; i++) {
        if (sqlite3_prepare_v3(k->db, st_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &k->st[i], NULL)
            != SQLITE_OK) {
            fl_error("catalog: prepare \"%s\": %s", st_sql[i], sqlite3_errmsg(k->db));
            return false;
        }
    }
    return true;
}

/* Takes an idle connection or opens one; NULL on failure (logged). */
static fl_conn_t *conn_get(fl_catalog_t *c)
{
    pthread_mutex_lock(&c->pool_mu);
    fl_conn_t *k = c->idle;
    if (k) c->idle = k->next;
    pthread_mutex_unlock(&c->pool_mu);
    if (k) return k;
    k = conn_open(c->path);
    if (k && !conn_prepare(k)) { conn_free(k); k = NULL; }
    return k;
}

static void conn_put(fl_catalog_t *c, fl_conn_t *k)
{
    if (!k) return;
    /* No statement may keep a read snapshot open while idle. */
    for (int i = 0; i < ST_COUNT; i++)
        if (sqlite3_stmt_busy(k->st[i])) sqlite3_reset(k->st[i]);
    pthread_mutex_lock(&c->pool_mu);
    k->next = c->idle;
    c->idle = k;
    pthread_mutex_unlock(&c->pool_mu);
}

static fl_err_t tx_begin(fl_catalog_t *c, fl_conn_t *k)
{
    pthread_mutex_lock(&c->write_mu);
    sqlite3_stmt *st = k->st[ST_BEGIN];
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        pthread_mutex_unlock(&c->write_mu);
        return db_err(k, rc, "begin");
    }
    k->in_tx = true;
    return FL_OK;
}

/* Commits when err is FL_OK, else rolls back; returns the outcome. No-op
 * (returning err) when no transaction is open. */
static fl_err_t tx_end(fl_catalog_t *c, fl_conn_t *k, fl_err_t err)
{
    if (!k || !k->in_tx) return err;
    for (int i = 0; i < ST_COUNT; i++)
        if (sqlite3_stmt_busy(k->st[i])) sqlite3_reset(k->st[i]);
    if (!err) {
        int rc = sqlite3_step(k->st[ST_COMMIT]);
        sqlite3_reset(k->st[ST_COMMIT]);
        if (rc != SQLITE_DONE) err = db_err(k, rc, "commit");
    }
    if (err && !sqlite3_get_autocommit(k->db)) {
        sqlite3_step(k->st[ST_ROLLBACK]);
        sqlite3_reset(k->st[ST_ROLLBACK]);
    }
    k->in_tx = false;
    pthread_mutex_unlock(&c->write_mu);
    return err;
}

/* ---- opening and migrating ---- */

static fl_err_t migrate(fl_catalog_t *c, fl_conn_t *k)
{
    fl_err_t err = FL_OK;
    sqlite3_stmt *st = NULL;
    bool in_tx = false;
    int rc = sqlite3_exec(k->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return db_err(k, rc, "journal_mode");
    rc = sqlite3_exec(k->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return db_err(k, rc, "begin");
    in_tx = true;
    rc = sqlite3_prepare_v2(k->db, "PRAGMA user_version", -1, &st, NULL);
    if (rc != SQLITE_OK || (rc = sqlite3_step(st)) != SQLITE_ROW) {
        err = db_err(k, rc, "user_version");
        goto out;
    }
    int version = sqlite3_column_int(st, 0);
    if (version > SCHEMA_VERSION || version < 0) {
        fl_error("catalog: %s has schema %d, this build knows %d", c->path, version,
                 SCHEMA_VERSION);
        err = FL_ERR_INVALID;
        goto out;
    }
    for (int v = version; v < SCHEMA_VERSION; v++) {
        char sql[64];
        if ((rc = sqlite3_exec(k->db, migrations[v], NULL, NULL, NULL)) != SQLITE_OK) {
            err = db_err(k, rc, "migration");
            goto out;
        }
        snprintf(sql, sizeof sql, "PRAGMA user_version=%d", v + 1);
        if ((rc = sqlite3_exec(k->db, sql, NULL, NULL, NULL)) != SQLITE_OK) {
            err = db_err(k, rc, "user_version");
            goto out;
        }
        fl_info("catalog: %s: schema %d -> %d", c->path, v, v + 1);
    }
    rc = sqlite3_exec(k->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) { err = db_err(k, rc, "commit"); goto out; }
    in_tx = false;
out:
    sqlite3_finalize(st);
    if (in_tx) sqlite3_exec(k->db, "ROLLBACK", NULL, NULL, NULL);
    return err;
}

fl_catalog_t *fl_catalog_open(const char *path)
{
    fl_catalog_t *c = fl_calloc(1, sizeof *c);
    fl_conn_t *k = NULL;
    c->path = fl_strdup(path);
    pthread_mutex_init(&c->pool_mu, NULL);
    pthread_mutex_init(&c->write_mu, NULL);
    if (!sqlite3_threadsafe()) {
        fl_error("catalog: SQLite was built without thread support");
        goto fail;
    }
    k = conn_open(path);
    if (!k || migrate(c, k) || !conn_prepare(k)) goto fail;
    conn_put(c, k);
    return c;
fail:
    conn_free(k);
    fl_catalog_close(c);
    return NULL;
}

void fl_catalog_close(fl_catalog_t *c)
{
    if (!c) return;
    while (c->idle) {
        fl_conn_t *k = c->idle;
        c->idle = k->next;
        conn_free(k);
    }
    pthread_mutex_destroy(&c->pool_mu);
    pthread_mutex_destroy(&c->write_mu);
    free(c->path);
    free(c);
}

/* ---- table buckets ---- */

fl_err_t fl_catalog_bucket_create(fl_catalog_t *c, fl_tbucket_t *b)
{
    fl_conn_t *k = conn_get(c);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if (!b->id[0]) new_uuid(b->id);
    b->created_ms = fl_now_ms();
    if ((err = tx_begin(c, k))) goto out;
    sqlite3_stmt *st = k->st[ST_B_INS];
    bind_str(st, 1, b->name);
    bind_str(st, 2, b->arn);
    bind_str(st, 3, b->owner);
    bind_str(st, 4, b->id);
    sqlite3_bind_int64(st, 5, b->created_ms);
    if ((err = step_done(k, st, "bucket create"))) goto out;
    if (sqlite3_changes(k->db) == 0) err = FL_ERR_EXISTS;
out:
    err = tx_end(c, k, err);
    conn_put(c, k);
    return err;
}

fl_err_t fl_catalog_bucket_get(fl_catalog_t *c, const char *name, fl_tbucket_t *out)
{
    fl_conn_t *k = conn_get(c);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[ST_B_GET];
    bind_str(st, 1, name);
    fl_err_t err = step_row(k, st, "bucket get");
    if (!err) row_bucket(st, out);
    sqlite3_reset(st);
    conn_put(c, k);
    return err;
}

fl_err_t fl_catalog_bucket_list(fl_catalog_t *c, const char *prefix, const char *after, int max,
                                fl_tbucket_t **out, size_t *n, bool *more)
{
    char *hi = NULL;
    *out = NULL;
    *n = 0;
    *more = false;
    if (max < 1) return FL_ERR_INVALID;
    fl_conn_t *k = conn_get(c);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = bind_range(k, ST_B_LIST_GE, ST_B_LIST_GT, prefix, after, &hi);
    sqlite3_bind_int64(st, 7, (int64_t)max + 1);
    fl_err_t err = collect_rows(k, st, max, sizeof **out, row_bucket, "bucket list", (void **)out, n, more);
    sqlite3_reset(st);
    conn_put(c, k);
    free(hi);
    if (err) { free(*out); *out = NULL; *n = 0; }
    return err;
}

fl_err_t fl_catalog_bucket_delete(fl_catalog_t *c, const char *name)
{
    fl_conn_t *k = conn_get(c);
    fl_err_t err = FL_ERR_IO;
    char arn[FL_ARN_MAX];
    if (!k) return err;
    if ((err = tx_begin(c, k))) goto out;
    sqlite3_stmt *st = k->st[ST_B_HASNS];
    bind_str(st, 1, name);
    err = step_row(k, st, "bucket delete");
    sqlite3_reset(st);
    if (err == FL_OK) { err = FL_ERR_NOT_EMPTY; goto out; }
    if (err != FL_ERR_NOT_FOUND) goto out;
    st = k->st[ST_B_DEL];
    bind_str(st, 1, name);
    if ((err = step_row(k, st, "bucket delete"))) goto out;   /* NOT_FOUND: no such bucket */
    col_copy(st, 0, arn, sizeof arn);
    if ((err = step_done(k, st, "bucket delete"))) goto out;  /* finishes the RETURNING */
    st = k->st[ST_D_DEL_ARN];
    bind_str(st, 1, arn);
    err = step_done(k, st, "bucket docs delete");
out:
    err = tx_end(c, k, err);
    conn_put(c, k);
    return err;
}

/* ---- namespaces ---- */

/* FL_OK if the bucket exists, FL_ERR_NO_BUCKET if not; *b filled when non-NULL. */
static fl_err_t bucket_check(fl_conn_t *k, const char *bucket, fl_tbucket_t *b)
{
    sqlite3_stmt *st = k->st[ST_B_GET];
    bind_str(st, 1, bucket);
    fl_err_t err = step_row(k, st, "bucket lookup");
    if (!err && b) row_bucket(st, b);
    sqlite3_reset(st);
    return err == FL_ERR_NOT_FOUND ? FL_ERR_NO_BUCKET : err;
}

/* FL_OK if the namespace exists, FL_ERR_NOT_FOUND if not. */
static fl_err_t ns_check(fl_conn_t *k, const char *bucket, const char *ns)
{
    sqlite3_stmt *st = k->st[ST_N_GET];
    bind_str(st, 1, bucket);
    bind_str(st, 2, ns);
    fl_err_t err = step_row(k, st, "namespace lookup");
    sqlite3_reset(st);
    return err;
}

fl_err_t fl_catalog_ns_create(fl_catalog_t *c, fl_namespace_t *ns)
{
    fl_conn_t *k = conn_get(c);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if (!ns->id[0]) new_uuid(ns->id);
    ns->created_ms = fl_now_ms();
    if ((err = tx_begin(c, k))) goto out;
    if ((err = bucket_check(k, ns->bucket, NULL))) goto out;
    sqlite3_stmt *st = k->st[ST_N_INS];
    bind_str(st, 1, ns->bucket);
    bind_str(st, 2, ns->name);
    bind_str(st, 3, ns->id);
    bind_str(st, 4, ns->owner);
    bind_str(st, 5, ns->created_by);
    sqlite3_bind_int64(st, 6, ns->created_ms);
    bind_str(st, 7, ns->properties ? ns->properties : "{}");
    if ((err = step_done(k, st, "namespace create"))) goto out;
    if (sqlite3_changes(k->db) == 0) err = FL_ERR_EXISTS;
out:
    err = tx_end(c, k, err);
    conn_put(c, k);
    return err;
}

fl_err_t fl_catalog_ns_get(fl_catalog_t *c, const char *bucket, const char *name, fl_namespace_t *out)
{
    fl_conn_t *k = conn_get(c);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[ST_N_GET];
    bind_str(st, 1, bucket);
    bind_str(st, 2, name);
    fl_err_t err = step_row(k, st, "namespace get");
    if (!err) row_ns(st, out);
    sqlite3_reset(st);
    conn_put(c, k);
    return err;
}

fl_err_t fl_catalog_ns_list(fl_catalog_t *c, const char *bucket, const char *prefix, const char *after,
                            int max, fl_namespace_t **out, size_t *n, bool *more)
{
    char *hi = NULL;
    *out = NULL;
    *n = 0;
    *more = false;
    if (max < 1) return FL_ERR_INVALID;
    fl_conn_t *k = conn_get(c);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = bind_range(k, ST_N_LIST_GE, ST_N_LIST_GT, prefix, after, &hi);
    bind_str(st, 1, bucket);
    sqlite3_bind_int64(st, 7, (int64_t)max + 1);
    fl_err_t err = collect_rows(k, st, max, sizeof **out, row_ns, "namespace list", (void **)out, n, more);
    sqlite3_reset(st);
    conn_put(c, k);
    free(hi);
    if (err) { fl_namespaces_free(*out, *n); *out = NULL; *n = 0; }
    return err;
}

fl_err_t fl_catalog_ns_set_properties(fl_catalog_t *c, const char *bucket, const char *name,
                                      const char *properties_json)
{
    fl_conn_t *k = conn_get(c);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if ((err = tx_begin(c, k))) goto out;
    sqlite3_stmt *st = k->st[ST_N_PROPS];
    bind_str(st, 1, bucket);
    bind_str(st, 2, name);
    bind_str(st, 3, properties_json ? properties_json : "{}");
    if ((err = step_done(k, st, "namespace properties"))) goto out;
    if (sqlite3_changes(k->db) == 0) err = FL_ERR_NOT_FOUND;
out:
    err = tx_end(c, k, err);
    conn_put(c, k);
    return err;
}

fl_err_t fl_catalog_ns_delete(fl_catalog_t *c, const char *bucket, const char *name)
{
    fl_conn_t *k = conn_get(c);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if ((err = tx_begin(c, k))) goto out;
    sqlite3_stmt *st = k->st[ST_N_HASTBL];
    bind_str(st, 1, bucket);
    bind_str(st, 2, name);
    err = step_row(k, st, "namespace delete");
    sqlite3_reset(st);
    if (err == FL_OK) { err = FL_ERR_NOT_EMPTY; goto out; }
    if (err != FL_ERR_NOT_FOUND) goto out;
    st = k->st[ST_N_DEL];
    bind_str(st, 1, bucket);
    bind_str(st, 2, name);
    if ((err = step_done(k, st, "namespace delete"))) goto out;
    if (sqlite3_changes(k->db) == 0) err = FL_ERR_NOT_FOUND;
out:
    err = tx_end(c, k, err);
    conn_put(c, k);
    return err;
}

void fl_namespace_free(fl_namespace_t *ns)
{
    if (!ns) return;
    free(ns->properties);
    ns->properties = NULL;
}

void fl_namespaces_free(fl_namespace_t *ns, size_t n)
{
    if (!ns) return;
    for (size_t i = 0; i < n; i++) free(ns[i].properties);
    free(ns);
}

/* ---- tables and views ---- */

fl_err_t fl_catalog_table_create(fl_catalog_t *c, fl_table_t *t)
{
    fl_conn_t *k = conn_get(c);
    fl_err_t err = FL_ERR_IO;
    fl_tbucket_t b;
    if (!k) return err;
    if (!t->id[0]) new_uuid(t->id);
    if (!t->type[0]) fl_strlcpy(t->type, "customer", sizeof t->type);
    if (!t->format[0]) fl_strlcpy(t->format, "ICEBERG", sizeof t->format);
    if (!t->kind[0]) fl_strlcpy(t->kind, "table", sizeof t->kind);
    if (!t->modified_by[0]) fl_strlcpy(t->modified_by, t->created_by, sizeof t->modified_by);
    new_token(t->version_token);
    t->created_ms = t->modified_ms = fl_now_ms();
    if ((err = tx_begin(c, k))) goto out;
    if ((err = bucket_check(k, t->bucket, &b))) goto out;
    if ((err = ns_check(k, t->bucket, t->ns))) goto out;
    if (!t->arn[0]) {
        int r = snprintf(t->arn, sizeof t->arn, "%s/table/%s", b.arn, t->id);
        if (r < 0 || (size_t)r >= sizeof t->arn) { err = FL_ERR_INVALID; goto out; }
    }
    sqlite3_stmt *st = k->st[ST_T_INS];
    bind_str(st, 1, t->bucket);
    bind_str(st, 2, t->ns);
    bind_str(st, 3, t->name);
    bind_str(st, 4, t->id);
    bind_str(st, 5, t->arn);
    bind_str(st, 6, t->type);
    bind_str(st, 7, t->format);
    bind_str(st, 8, t->kind);
    bind_str(st, 9, t->warehouse);
    bind_str(st, 10, t->metadata_location);
    bind_str(st, 11, t->version_token);
    bind_str(st, 12, t->owner);
    bind_str(st, 13, t->created_by);
    bind_str(st, 14, t->modified_by);
    sqlite3_bind_int64(st, 15, t->created_ms);
    sqlite3_bind_int64(st, 16, t->modified_ms);
    if ((err = step_done(k, st, "table create"))) goto out;
    if (sqlite3_changes(k->db) == 0) err = FL_ERR_EXISTS;
out:
    err = tx_end(c, k, err);
    conn_put(c, k);
    return err;
}

fl_err_t fl_catalog_table_get(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                              fl_table_t *out)
{
    fl_conn_t *k = conn_get(c);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[ST_T_GET];
    bind_str(st, 1, bucket);
    bind_str(st, 2, ns);
    bind_str(st, 3, name);
    fl_err_t err = step_row(k, st, "table get");
    if (!err) row_table(st, out);
    sqlite3_reset(st);
    conn_put(c, k);
    return err;
}

static fl_err_t table_get_by(fl_catalog_t *c, int stmt, const char *key, fl_table_t *out)
{
    fl_conn_t *k = conn_get(c);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[stmt];
    bind_str(st, 1, key);
    fl_err_t err = step_row(k, st, "table get");
    if (!err) row_table(st, out);
    sqlite3_reset(st);
    conn_put(c, k);
    return err;
}

fl_err_t fl_catalog_table_get_by_warehouse(fl_catalog_t *c, const char *warehouse, fl_table_t *out)
{
    return table_get_by(c, ST_T_GET_WH, warehouse, out);
}

fl_err_t fl_catalog_table_get_by_arn(fl_catalog_t *c, const char *arn, fl_table_t *out)
{
    return table_get_by(c, ST_T_GET_ARN, arn, out);
}

fl_err_t fl_catalog_table_list(fl_catalog_t *c, const char *bucket, const char *ns, const char *kind,
                               const char *prefix, const char *after_ns, const char *after_name,
                               int max, fl_table_t **out, size_t *n, bool *more)
{
    fl_err_t err = FL_OK;
    char *hi = NULL;
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    *more = false;
    if (max < 1) return FL_ERR_INVALID;
    fl_conn_t *k = conn_get(c);
    if (!k) return FL_ERR_IO;
    if (ns) {
        const char *after = NULL;
        if (after_ns) {
            int r = strcmp(after_ns, ns);
            if (r > 0) goto out;         /* the cursor is past this namespace */
            if (r == 0) after = after_name ? after_name : "";
        }
        st = bind_range(k, ST_T_LIST1_GE, ST_T_LIST1_GT, prefix, after, &hi);
        bind_str(st, 2, ns);
    } else {
        /* The prefix bounds name within each namespace: ?8 low, ?6 high. */
        st = k->st[after_ns ? ST_T_LISTN_GT : ST_T_LISTN_GE];
        bind_str(st, 2, after_ns ? after_ns : "");
        bind_str(st, 3, after_ns && after_name ? after_name : "");
        bind_str(st, 8, prefix ? prefix : "");
        bind_hi(st, 6, prefix, &hi);
    }
    bind_str(st, 1, bucket);
    bind_str(st, 9, kind);
    sqlite3_bind_int64(st, 7, (int64_t)max + 1);
    err = collect_rows(k, st, max, sizeof **out, row_table, "table list", (void **)out, n, more);
out:
    if (st) sqlite3_reset(st);
    conn_put(c, k);
    free(hi);
    if (err) { free(*out); *out = NULL; *n = 0; }
    return err;
}

/* Inside a write transaction: checks that the table exists under this name and
 * is the one with id expect_id (NULL = any; another id is FL_ERR_NOT_FOUND: the
 * table the caller looked at was renamed or dropped, and the name now belongs to
 * another), and that its token equals expect (NULL = any; FL_ERR_CONFLICT);
 * arn_out (FL_ARN_MAX, may be NULL) gets its ARN. */
static fl_err_t token_check(fl_conn_t *k, const char *bucket, const char *ns, const char *name,
                            const char *expect_id, const char *expect, char *arn_out)
{
    sqlite3_stmt *st = k->st[ST_T_TOKEN];
    bind_str(st, 1, bucket);
    bind_str(st, 2, ns);
    bind_str(st, 3, name);
    fl_err_t err = step_row(k, st, "table token");
    if (!err) {
        const unsigned char *tok = sqlite3_column_text(st, 0), *id = sqlite3_column_text(st, 2);
        if (expect_id && (!id || strcmp((const char *)id, expect_id) != 0)) err = FL_ERR_NOT_FOUND;
        else if (expect && (!tok || strcmp((const char *)tok, expect) != 0)) err = FL_ERR_CONFLICT;
        if (arn_out) col_copy(st, 1, arn_out, FL_ARN_MAX);
    }
    sqlite3_reset(st);
    return err;
}

fl_err_t fl_catalog_table_swap(fl_catalog_t *c, fl_table_swap_t *swaps, size_t n)
{
    fl_conn_t *k = conn_get(c);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    int64_t now = fl_now_ms();
    if ((err = tx_begin(c, k))) goto out;
    for (size_t i = 0; i < n; i++) {
        fl_table_swap_t *s = &swaps[i];
        if ((err = token_check(k, s->bucket, s->ns, s->name, s->expect_id, s->expect_token, NULL))) goto out;
        new_token(s->new_token_out);
        sqlite3_stmt *st = k->st[ST_T_SWAP];
        bind_str(st, 1, s->bucket);
        bind_str(st, 2, s->ns);
        bind_str(st, 3, s->name);
        bind_str(st, 4, s->new_location ? s->new_location : "");
        bind_str(st, 5, s->new_token_out);
        sqlite3_bind_int64(st, 6, now);
        bind_str(st, 7, s->modified_by);
        if ((err = step_done(k, st, "table swap"))) goto out;
    }
out:
    err = tx_end(c, k, err);
    if (err)
        for (size_t i = 0; i < n; i++) swaps[i].new_token_out[0] = 0;
    conn_put(c, k);
    return err;
}

fl_err_t fl_catalog_table_rename(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                                 const char *new_ns, const char *new_name, const char *expect_id,
                                 const char *expect_token)
{
    fl_conn_t *k = conn_get(c);
    fl_err_t err = FL_ERR_IO;
    char tok[40];
    if (!k) return err;
    if ((err = tx_begin(c, k))) goto out;
    if ((err = token_check(k, bucket, ns, name, expect_id, expect_token, NULL))) goto out;
    if ((err = ns_check(k, bucket, new_ns))) goto out;
    if (strcmp(ns, new_ns) != 0 || strcmp(name, new_name) != 0) {
        err = token_check(k, bucket, new_ns, new_name, NULL, NULL, NULL);
        if (err == FL_OK) { err = FL_ERR_EXISTS; goto out; }
        if (err != FL_ERR_NOT_FOUND) goto out;
    }
    new_token(tok);
    sqlite3_stmt *st = k->st[ST_T_RENAME];
    bind_str(st, 1, bucket);
    bind_str(st, 2, ns);
    bind_str(st, 3, name);
    bind_str(st, 4, new_ns);
    bind_str(st, 5, new_name);
    bind_str(st, 6, tok);
    sqlite3_bind_int64(st, 7, fl_now_ms());
    err = step_done(k, st, "table rename");
out:
    err = tx_end(c, k, err);
    conn_put(c, k);
    return err;
}

fl_err_t fl_catalog_table_delete(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                                 const char *expect_id, const char *expect_token)
{
    fl_conn_t *k = conn_get(c);
    fl_err_t err = FL_ERR_IO;
    char arn[FL_ARN_MAX];
    if (!k) return err;
    if ((err = tx_begin(c, k))) goto out;
    if ((err = token_check(k, bucket, ns, name, expect_id, expect_token, arn))) goto out;
    sqlite3_stmt *st = k->st[ST_T_DEL];
    bind_str(st, 1, bucket);
    bind_str(st, 2, ns);
    bind_str(st, 3, name);
    if ((err = step_done(k, st, "table delete"))) goto out;
    st = k->st[ST_D_DEL_ARN];
    bind_str(st, 1, arn);
    err = step_done(k, st, "table docs delete");
out:
    err = tx_end(c, k, err);
    conn_put(c, k);
    return err;
}

/* ---- attached documents ---- */

fl_err_t fl_catalog_doc_put(fl_catalog_t *c, const char *arn, const char *kind, const char *json)
{
    fl_conn_t *k = conn_get(c);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if ((err = tx_begin(c, k))) goto out;
    sqlite3_stmt *st = k->st[ST_D_PUT];
    bind_str(st, 1, arn);
    bind_str(st, 2, kind);
    bind_str(st, 3, json ? json : "");
    err = step_done(k, st, "doc put");
out:
    err = tx_end(c, k, err);
    conn_put(c, k);
    return err;
}

fl_err_t fl_catalog_doc_get(fl_catalog_t *c, const char *arn, const char *kind, char **json_out)
{
    *json_out = NULL;
    fl_conn_t *k = conn_get(c);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[ST_D_GET];
    bind_str(st, 1, arn);
    bind_str(st, 2, kind);
    fl_err_t err = step_row(k, st, "doc get");
    if (!err) *json_out = col_strdup(st, 0);
    sqlite3_reset(st);
    conn_put(c, k);
    return err;
}

fl_err_t fl_catalog_doc_delete(fl_catalog_t *c, const char *arn, const char *kind)
{
    fl_conn_t *k = conn_get(c);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if ((err = tx_begin(c, k))) goto out;
    sqlite3_stmt *st = k->st[ST_D_DEL];
    bind_str(st, 1, arn);
    bind_str(st, 2, kind);
    if ((err = step_done(k, st, "doc delete"))) goto out;
    if (sqlite3_changes(k->db) == 0) err = FL_ERR_NOT_FOUND;
out:
    err = tx_end(c, k, err);
    conn_put(c, k);
    return err;
}

fl_err_t fl_catalog_doc_list(fl_catalog_t *c, const char *arn, const char *kind_prefix,
                             char ***kinds, char ***jsons, size_t *n)
{
    fl_err_t err = FL_OK;
    char **ks = NULL, **js = NULL, *hi = NULL;
    size_t cnt = 0, cap = 0;
    int rc;
    *kinds = *jsons = NULL;
    *n = 0;
    fl_conn_t *k = conn_get(c);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = bind_range(k, ST_D_LIST, ST_D_LIST, kind_prefix, NULL, &hi);
    bind_str(st, 1, arn);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (cnt == cap) {
            cap = cap ? cap * 2 : 8;
            ks = fl_realloc(ks, cap * sizeof *ks);
            js = fl_realloc(js, cap * sizeof *js);
        }
        ks[cnt] = col_strdup(st, 0);
        js[cnt] = col_strdup(st, 1);
        cnt++;
    }
    if (rc != SQLITE_DONE) { err = db_err(k, rc, "doc list"); goto out; }
    *kinds = ks;
    *jsons = js;
    *n = cnt;
    ks = js = NULL;
out:
    sqlite3_reset(st);
    conn_put(c, k);
    free(hi);
    for (size_t i = 0; ks && i < cnt; i++) { free(ks[i]); free(js[i]); }
    free(ks);
    free(js);
    return err;
}
