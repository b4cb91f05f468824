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
 *   maintenance_jobs(table_arn PK, type, owner, lease_until_ms, ...)   one lease per table
 *   maintenance_runs(id, table_arn, type, start/end, status, counts, message)
 *
 * Connections, transactions, migrations and the error convention (busy is
 * FL_ERR_CONFLICT: nothing was written) are base/sqlite.h's; a read is one
 * statement on an idle connection, so it sees one consistent snapshot.
 *
 * Listing is a range scan of a primary key: the lower bound is the greater of
 * the prefix (inclusive) and the "after" cursor (exclusive), the upper bound
 * the prefix's successor. With no prefix the upper bound is an empty BLOB,
 * which sorts after every TEXT value. Names compare bytewise (BINARY).
 *
 * The statements are catalog_sql.h's, shared with the PostgreSQL backend
 * (postgres.c), which mirrors this file function for function. */
#include "meta/catalog_int.h"
#include "meta/catalog_sql.h"
#include "base/uuid.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/sqlite.h"
#include "base/time.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

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
    /* 2 -> 3: maintenance leases (one per table) and run records */
    "CREATE TABLE maintenance_jobs(table_arn TEXT PRIMARY KEY, type TEXT NOT NULL, owner TEXT NOT NULL,"
    "  claimed_ms INTEGER NOT NULL, heartbeat_ms INTEGER NOT NULL, lease_until_ms INTEGER NOT NULL)"
    "  STRICT, WITHOUT ROWID;"
    "CREATE TABLE maintenance_runs(id INTEGER PRIMARY KEY AUTOINCREMENT, table_arn TEXT NOT NULL,"
    "  type TEXT NOT NULL, owner TEXT NOT NULL, start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL,"
    "  status TEXT NOT NULL, files_in INTEGER NOT NULL, bytes_in INTEGER NOT NULL,"
    "  files_out INTEGER NOT NULL, bytes_out INTEGER NOT NULL, snapshots_removed INTEGER NOT NULL,"
    "  objects_removed INTEGER NOT NULL, commits INTEGER NOT NULL, message TEXT NOT NULL) STRICT;"
    "CREATE INDEX maintenance_runs_table ON maintenance_runs(table_arn, id);",
    /* 3 -> 4: identities (meta/catalog.h "identities"); plain SQL, mirrored in PostgreSQL */
    "CREATE TABLE iam_principals(account TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,"
    "  arn TEXT NOT NULL, id TEXT NOT NULL, created_ms INTEGER NOT NULL, doc TEXT NOT NULL,"
    "  PRIMARY KEY(account, kind, name));"
    "CREATE TABLE iam_keys(akid TEXT PRIMARY KEY, account TEXT NOT NULL, kind TEXT NOT NULL,"
    "  name TEXT NOT NULL, secret TEXT NOT NULL, status TEXT NOT NULL, created_ms INTEGER NOT NULL,"
    "  last_used_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL, token_hash TEXT NOT NULL,"
    "  session_name TEXT NOT NULL, session_policy TEXT NOT NULL);"
    "CREATE INDEX iam_keys_owner ON iam_keys(account, kind, name);"
    "CREATE TABLE iam_policies(account TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,"
    "  policy_name TEXT NOT NULL, doc TEXT NOT NULL, PRIMARY KEY(account, kind, name, policy_name));",
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

#define st_sql fl_catalog_sql

typedef fl_sqlite_conn_t fl_conn_t;

static const fl_catalog_ops_t sq_ops;

/* ---- small helpers ---- */

/* 32 random hex chars. */
static void new_token(char out[40]) { fl_random_hex(out, 32); }

/* Random (version 4) UUID, lower-case, 36 chars. */
static void new_uuid(char out[40]) { fl_uuid4(out); }

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
    fl_sqlite_bind_str(st, 5, gt ? after : prefix);
    bind_hi(st, 6, prefix, hi);
    return st;
}

/* B_COLS from column c0 */
static void bucket_at(sqlite3_stmt *st, int c0, fl_tbucket_t *b)
{
    memset(b, 0, sizeof *b);
    fl_sqlite_col_copy(st, c0, b->name, sizeof b->name);
    fl_sqlite_col_copy(st, c0 + 1, b->arn, sizeof b->arn);
    fl_sqlite_col_copy(st, c0 + 2, b->owner, sizeof b->owner);
    fl_sqlite_col_copy(st, c0 + 3, b->id, sizeof b->id);
    b->created_ms = sqlite3_column_int64(st, c0 + 4);
}

static void row_bucket(sqlite3_stmt *st, void *out) { bucket_at(st, 0, out); }

static void row_ns(sqlite3_stmt *st, void *out)
{
    fl_namespace_t *ns = out;
    memset(ns, 0, sizeof *ns);
    fl_sqlite_col_copy(st, 0, ns->bucket, sizeof ns->bucket);
    fl_sqlite_col_copy(st, 1, ns->name, sizeof ns->name);
    fl_sqlite_col_copy(st, 2, ns->id, sizeof ns->id);
    fl_sqlite_col_copy(st, 3, ns->owner, sizeof ns->owner);
    fl_sqlite_col_copy(st, 4, ns->created_by, sizeof ns->created_by);
    ns->created_ms = sqlite3_column_int64(st, 5);
    ns->properties = fl_sqlite_col_strdup(st, 6);
}

static void row_table(sqlite3_stmt *st, void *out)
{
    fl_table_t *t = out;
    fl_sqlite_col_copy(st, 0, t->bucket, sizeof t->bucket);
    fl_sqlite_col_copy(st, 1, t->ns, sizeof t->ns);
    fl_sqlite_col_copy(st, 2, t->name, sizeof t->name);
    fl_sqlite_col_copy(st, 3, t->id, sizeof t->id);
    fl_sqlite_col_copy(st, 4, t->arn, sizeof t->arn);
    fl_sqlite_col_copy(st, 5, t->type, sizeof t->type);
    fl_sqlite_col_copy(st, 6, t->format, sizeof t->format);
    fl_sqlite_col_copy(st, 7, t->kind, sizeof t->kind);
    fl_sqlite_col_copy(st, 8, t->warehouse, sizeof t->warehouse);
    fl_sqlite_col_copy(st, 9, t->metadata_location, sizeof t->metadata_location);
    fl_sqlite_col_copy(st, 10, t->version_token, sizeof t->version_token);
    fl_sqlite_col_copy(st, 11, t->owner, sizeof t->owner);
    fl_sqlite_col_copy(st, 12, t->created_by, sizeof t->created_by);
    fl_sqlite_col_copy(st, 13, t->modified_by, sizeof t->modified_by);
    t->created_ms = sqlite3_column_int64(st, 14);
    t->modified_ms = sqlite3_column_int64(st, 15);
}

/* ---- connections and transactions ---- */

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
        return fl_sqlite_err(k, rc, what);
    }
    return FL_OK;
}

fl_catalog_t *fl_catalog_sqlite_open(const char *path)
{
    fl_sqlite_cfg_t cfg = {
        .label = "catalog", .path = path, .migrations = migrations, .n_migrations = SCHEMA_VERSION,
        .statements = st_sql, .n_statements = ST_COUNT, .foreign_keys = true,
    };
    fl_sqlite_t *db = fl_sqlite_open(&cfg);
    if (!db) return NULL;
    fl_catalog_t *c = fl_calloc(1, sizeof *c);
    c->ops = &sq_ops;
    c->db = db;
    return c;
}

static void sq_close(fl_catalog_t *c)
{
    if (!c) return;
    fl_sqlite_close(c->db);
    free(c);
}

/* ---- table buckets ---- */

static fl_err_t sq_bucket_create(fl_catalog_t *c, fl_tbucket_t *b)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if (!b->id[0]) new_uuid(b->id);
    b->created_ms = fl_now_ms();
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    sqlite3_stmt *st = k->st[ST_B_INS];
    fl_sqlite_bind_str(st, 1, b->name);
    fl_sqlite_bind_str(st, 2, b->arn);
    fl_sqlite_bind_str(st, 3, b->owner);
    fl_sqlite_bind_str(st, 4, b->id);
    sqlite3_bind_int64(st, 5, b->created_ms);
    if ((err = fl_sqlite_done(k, st, "bucket create"))) goto out;
    if (sqlite3_changes(k->db) == 0) err = FL_ERR_EXISTS;
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_bucket_get(fl_catalog_t *c, const char *name, fl_tbucket_t *out)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[ST_B_GET];
    fl_sqlite_bind_str(st, 1, name);
    fl_err_t err = fl_sqlite_row(k, st, "bucket get");
    if (!err) row_bucket(st, out);
    sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_bucket_list(fl_catalog_t *c, const char *prefix, const char *after, int max,
                                fl_tbucket_t **out, size_t *n, bool *more)
{
    char *hi = NULL;
    *out = NULL;
    *n = 0;
    *more = false;
    if (max < 1) return FL_ERR_INVALID;
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = bind_range(k, ST_B_LIST_GE, ST_B_LIST_GT, prefix, after, &hi);
    sqlite3_bind_int64(st, 7, (int64_t)max + 1);
    fl_err_t err = collect_rows(k, st, max, sizeof **out, row_bucket, "bucket list", (void **)out, n, more);
    sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
    free(hi);
    if (err) { free(*out); *out = NULL; *n = 0; }
    return err;
}

static fl_err_t sq_bucket_delete(fl_catalog_t *c, const char *name)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    char arn[FL_ARN_MAX];
    if (!k) return err;
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    sqlite3_stmt *st = k->st[ST_B_HASNS];
    fl_sqlite_bind_str(st, 1, name);
    err = fl_sqlite_row(k, st, "bucket delete");
    sqlite3_reset(st);
    if (err == FL_OK) { err = FL_ERR_NOT_EMPTY; goto out; }
    if (err != FL_ERR_NOT_FOUND) goto out;
    st = k->st[ST_B_DEL];
    fl_sqlite_bind_str(st, 1, name);
    if ((err = fl_sqlite_row(k, st, "bucket delete"))) goto out;   /* NOT_FOUND: no such bucket */
    fl_sqlite_col_copy(st, 0, arn, sizeof arn);
    if ((err = fl_sqlite_done(k, st, "bucket delete"))) goto out;  /* finishes the RETURNING */
    st = k->st[ST_D_DEL_ARN];
    fl_sqlite_bind_str(st, 1, arn);
    err = fl_sqlite_done(k, st, "bucket docs delete");
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

/* ---- namespaces ---- */

/* FL_OK if the bucket exists, FL_ERR_NO_BUCKET if not; *b filled when non-NULL. */
static fl_err_t bucket_check(fl_conn_t *k, const char *bucket, fl_tbucket_t *b)
{
    sqlite3_stmt *st = k->st[ST_B_GET];
    fl_sqlite_bind_str(st, 1, bucket);
    fl_err_t err = fl_sqlite_row(k, st, "bucket lookup");
    if (!err && b) row_bucket(st, b);
    sqlite3_reset(st);
    return err == FL_ERR_NOT_FOUND ? FL_ERR_NO_BUCKET : err;
}

/* FL_OK if the namespace exists, FL_ERR_NOT_FOUND if not. */
static fl_err_t ns_check(fl_conn_t *k, const char *bucket, const char *ns)
{
    sqlite3_stmt *st = k->st[ST_N_GET];
    fl_sqlite_bind_str(st, 1, bucket);
    fl_sqlite_bind_str(st, 2, ns);
    fl_err_t err = fl_sqlite_row(k, st, "namespace lookup");
    sqlite3_reset(st);
    return err;
}

static fl_err_t sq_ns_create(fl_catalog_t *c, fl_namespace_t *ns)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if (!ns->id[0]) new_uuid(ns->id);
    ns->created_ms = fl_now_ms();
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    if ((err = bucket_check(k, ns->bucket, NULL))) goto out;
    sqlite3_stmt *st = k->st[ST_N_INS];
    fl_sqlite_bind_str(st, 1, ns->bucket);
    fl_sqlite_bind_str(st, 2, ns->name);
    fl_sqlite_bind_str(st, 3, ns->id);
    fl_sqlite_bind_str(st, 4, ns->owner);
    fl_sqlite_bind_str(st, 5, ns->created_by);
    sqlite3_bind_int64(st, 6, ns->created_ms);
    fl_sqlite_bind_str(st, 7, ns->properties ? ns->properties : "{}");
    if ((err = fl_sqlite_done(k, st, "namespace create"))) goto out;
    if (sqlite3_changes(k->db) == 0) err = FL_ERR_EXISTS;
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_ns_get(fl_catalog_t *c, const char *bucket, const char *name, fl_namespace_t *out)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[ST_N_GET];
    fl_sqlite_bind_str(st, 1, bucket);
    fl_sqlite_bind_str(st, 2, name);
    fl_err_t err = fl_sqlite_row(k, st, "namespace get");
    if (!err) row_ns(st, out);
    sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_ns_list(fl_catalog_t *c, const char *bucket, const char *prefix, const char *after,
                            int max, fl_namespace_t **out, size_t *n, bool *more)
{
    char *hi = NULL;
    *out = NULL;
    *n = 0;
    *more = false;
    if (max < 1) return FL_ERR_INVALID;
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = bind_range(k, ST_N_LIST_GE, ST_N_LIST_GT, prefix, after, &hi);
    fl_sqlite_bind_str(st, 1, bucket);
    sqlite3_bind_int64(st, 7, (int64_t)max + 1);
    fl_err_t err = collect_rows(k, st, max, sizeof **out, row_ns, "namespace list", (void **)out, n, more);
    sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
    free(hi);
    if (err) { fl_namespaces_free(*out, *n); *out = NULL; *n = 0; }
    return err;
}

static fl_err_t sq_ns_set_properties(fl_catalog_t *c, const char *bucket, const char *name,
                                      const char *properties_json)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    sqlite3_stmt *st = k->st[ST_N_PROPS];
    fl_sqlite_bind_str(st, 1, bucket);
    fl_sqlite_bind_str(st, 2, name);
    fl_sqlite_bind_str(st, 3, properties_json ? properties_json : "{}");
    if ((err = fl_sqlite_done(k, st, "namespace properties"))) goto out;
    if (sqlite3_changes(k->db) == 0) err = FL_ERR_NOT_FOUND;
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_ns_delete(fl_catalog_t *c, const char *bucket, const char *name)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    sqlite3_stmt *st = k->st[ST_N_HASTBL];
    fl_sqlite_bind_str(st, 1, bucket);
    fl_sqlite_bind_str(st, 2, name);
    err = fl_sqlite_row(k, st, "namespace delete");
    sqlite3_reset(st);
    if (err == FL_OK) { err = FL_ERR_NOT_EMPTY; goto out; }
    if (err != FL_ERR_NOT_FOUND) goto out;
    st = k->st[ST_N_DEL];
    fl_sqlite_bind_str(st, 1, bucket);
    fl_sqlite_bind_str(st, 2, name);
    if ((err = fl_sqlite_done(k, st, "namespace delete"))) goto out;
    if (sqlite3_changes(k->db) == 0) err = FL_ERR_NOT_FOUND;
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

/* ---- tables and views ---- */

static fl_err_t sq_table_create(fl_catalog_t *c, fl_table_t *t)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
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
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    if ((err = bucket_check(k, t->bucket, &b))) goto out;
    if ((err = ns_check(k, t->bucket, t->ns))) goto out;
    if (!t->arn[0]) {
        int r = snprintf(t->arn, sizeof t->arn, "%s/table/%s", b.arn, t->id);
        if (r < 0 || (size_t)r >= sizeof t->arn) { err = FL_ERR_INVALID; goto out; }
    }
    sqlite3_stmt *st = k->st[ST_T_INS];
    fl_sqlite_bind_str(st, 1, t->bucket);
    fl_sqlite_bind_str(st, 2, t->ns);
    fl_sqlite_bind_str(st, 3, t->name);
    fl_sqlite_bind_str(st, 4, t->id);
    fl_sqlite_bind_str(st, 5, t->arn);
    fl_sqlite_bind_str(st, 6, t->type);
    fl_sqlite_bind_str(st, 7, t->format);
    fl_sqlite_bind_str(st, 8, t->kind);
    fl_sqlite_bind_str(st, 9, t->warehouse);
    fl_sqlite_bind_str(st, 10, t->metadata_location);
    fl_sqlite_bind_str(st, 11, t->version_token);
    fl_sqlite_bind_str(st, 12, t->owner);
    fl_sqlite_bind_str(st, 13, t->created_by);
    fl_sqlite_bind_str(st, 14, t->modified_by);
    sqlite3_bind_int64(st, 15, t->created_ms);
    sqlite3_bind_int64(st, 16, t->modified_ms);
    if ((err = fl_sqlite_done(k, st, "table create"))) goto out;
    if (sqlite3_changes(k->db) == 0) err = FL_ERR_EXISTS;
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_bucket_table_get(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                                    fl_tbucket_t *b, fl_table_t *t, bool *found)
{
    *found = false;
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[ST_BT_GET];
    fl_sqlite_bind_str(st, 1, bucket);
    fl_sqlite_bind_str(st, 2, ns);
    fl_sqlite_bind_str(st, 3, name);
    fl_err_t err = fl_sqlite_row(k, st, "bucket and table get");
    if (!err) {
        bucket_at(st, BT_TABLE_COLS, b);
        *found = sqlite3_column_type(st, 0) != SQLITE_NULL;
        if (*found) row_table(st, t);
    }
    sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_table_get(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                              fl_table_t *out)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[ST_T_GET];
    fl_sqlite_bind_str(st, 1, bucket);
    fl_sqlite_bind_str(st, 2, ns);
    fl_sqlite_bind_str(st, 3, name);
    fl_err_t err = fl_sqlite_row(k, st, "table get");
    if (!err) row_table(st, out);
    sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t table_get_by(fl_catalog_t *c, int stmt, const char *key, fl_table_t *out)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[stmt];
    fl_sqlite_bind_str(st, 1, key);
    fl_err_t err = fl_sqlite_row(k, st, "table get");
    if (!err) row_table(st, out);
    sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_table_get_by_warehouse(fl_catalog_t *c, const char *warehouse, fl_table_t *out)
{
    return table_get_by(c, ST_T_GET_WH, warehouse, out);
}

static fl_err_t sq_table_get_by_arn(fl_catalog_t *c, const char *arn, fl_table_t *out)
{
    return table_get_by(c, ST_T_GET_ARN, arn, out);
}

static fl_err_t sq_table_list(fl_catalog_t *c, const char *bucket, const char *ns, const char *kind,
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
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    if (ns) {
        const char *after = NULL;
        if (after_ns) {
            int r = strcmp(after_ns, ns);
            if (r > 0) goto out;         /* the cursor is past this namespace */
            if (r == 0) after = after_name ? after_name : "";
        }
        st = bind_range(k, ST_T_LIST1_GE, ST_T_LIST1_GT, prefix, after, &hi);
        fl_sqlite_bind_str(st, 2, ns);
    } else {
        /* The prefix bounds name within each namespace: ?8 low, ?6 high. */
        st = k->st[after_ns ? ST_T_LISTN_GT : ST_T_LISTN_GE];
        fl_sqlite_bind_str(st, 2, after_ns ? after_ns : "");
        fl_sqlite_bind_str(st, 3, after_ns && after_name ? after_name : "");
        fl_sqlite_bind_str(st, 8, prefix ? prefix : "");
        bind_hi(st, 6, prefix, &hi);
    }
    fl_sqlite_bind_str(st, 1, bucket);
    fl_sqlite_bind_str(st, 9, kind);
    sqlite3_bind_int64(st, 7, (int64_t)max + 1);
    err = collect_rows(k, st, max, sizeof **out, row_table, "table list", (void **)out, n, more);
out:
    if (st) sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
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
    fl_sqlite_bind_str(st, 1, bucket);
    fl_sqlite_bind_str(st, 2, ns);
    fl_sqlite_bind_str(st, 3, name);
    fl_err_t err = fl_sqlite_row(k, st, "table token");
    if (!err) {
        const unsigned char *tok = sqlite3_column_text(st, 0), *id = sqlite3_column_text(st, 2);
        if (expect_id && (!id || strcmp((const char *)id, expect_id) != 0)) err = FL_ERR_NOT_FOUND;
        else if (expect && (!tok || strcmp((const char *)tok, expect) != 0)) err = FL_ERR_CONFLICT;
        if (arn_out) fl_sqlite_col_copy(st, 1, arn_out, FL_ARN_MAX);
    }
    sqlite3_reset(st);
    return err;
}

static fl_err_t sq_table_swap(fl_catalog_t *c, fl_table_swap_t *swaps, size_t n)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    int64_t now = fl_now_ms();
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    for (size_t i = 0; i < n; i++) {
        fl_table_swap_t *s = &swaps[i];
        if ((err = token_check(k, s->bucket, s->ns, s->name, s->expect_id, s->expect_token, NULL))) goto out;
        new_token(s->new_token_out);
        sqlite3_stmt *st = k->st[ST_T_SWAP];
        fl_sqlite_bind_str(st, 1, s->bucket);
        fl_sqlite_bind_str(st, 2, s->ns);
        fl_sqlite_bind_str(st, 3, s->name);
        fl_sqlite_bind_str(st, 4, s->new_location ? s->new_location : "");
        fl_sqlite_bind_str(st, 5, s->new_token_out);
        sqlite3_bind_int64(st, 6, now);
        fl_sqlite_bind_str(st, 7, s->modified_by);
        if ((err = fl_sqlite_done(k, st, "table swap"))) goto out;
    }
out:
    err = fl_sqlite_end(c->db, k, err);
    if (err)
        for (size_t i = 0; i < n; i++) swaps[i].new_token_out[0] = 0;
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_table_rename(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                                 const char *new_ns, const char *new_name, const char *expect_id,
                                 const char *expect_token)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    char tok[40];
    if (!k) return err;
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    if ((err = token_check(k, bucket, ns, name, expect_id, expect_token, NULL))) goto out;
    if ((err = ns_check(k, bucket, new_ns))) goto out;
    if (strcmp(ns, new_ns) != 0 || strcmp(name, new_name) != 0) {
        err = token_check(k, bucket, new_ns, new_name, NULL, NULL, NULL);
        if (err == FL_OK) { err = FL_ERR_EXISTS; goto out; }
        if (err != FL_ERR_NOT_FOUND) goto out;
    }
    new_token(tok);
    sqlite3_stmt *st = k->st[ST_T_RENAME];
    fl_sqlite_bind_str(st, 1, bucket);
    fl_sqlite_bind_str(st, 2, ns);
    fl_sqlite_bind_str(st, 3, name);
    fl_sqlite_bind_str(st, 4, new_ns);
    fl_sqlite_bind_str(st, 5, new_name);
    fl_sqlite_bind_str(st, 6, tok);
    sqlite3_bind_int64(st, 7, fl_now_ms());
    err = fl_sqlite_done(k, st, "table rename");
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_table_delete(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                                 const char *expect_id, const char *expect_token)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    char arn[FL_ARN_MAX];
    if (!k) return err;
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    if ((err = token_check(k, bucket, ns, name, expect_id, expect_token, arn))) goto out;
    sqlite3_stmt *st = k->st[ST_T_DEL];
    fl_sqlite_bind_str(st, 1, bucket);
    fl_sqlite_bind_str(st, 2, ns);
    fl_sqlite_bind_str(st, 3, name);
    if ((err = fl_sqlite_done(k, st, "table delete"))) goto out;
    st = k->st[ST_D_DEL_ARN];
    fl_sqlite_bind_str(st, 1, arn);
    if ((err = fl_sqlite_done(k, st, "table docs delete"))) goto out;
    st = k->st[ST_M_DEL_ARN];
    fl_sqlite_bind_str(st, 1, arn);
    if ((err = fl_sqlite_done(k, st, "table lease delete"))) goto out;
    st = k->st[ST_R_DEL_ARN];
    fl_sqlite_bind_str(st, 1, arn);
    err = fl_sqlite_done(k, st, "table runs delete");
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

/* ---- attached documents ---- */

static fl_err_t sq_doc_put(fl_catalog_t *c, const char *arn, const char *kind, const char *json)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    sqlite3_stmt *st = k->st[ST_D_PUT];
    fl_sqlite_bind_str(st, 1, arn);
    fl_sqlite_bind_str(st, 2, kind);
    fl_sqlite_bind_str(st, 3, json ? json : "");
    err = fl_sqlite_done(k, st, "doc put");
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_doc_get(fl_catalog_t *c, const char *arn, const char *kind, char **json_out)
{
    *json_out = NULL;
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[ST_D_GET];
    fl_sqlite_bind_str(st, 1, arn);
    fl_sqlite_bind_str(st, 2, kind);
    fl_err_t err = fl_sqlite_row(k, st, "doc get");
    if (!err) *json_out = fl_sqlite_col_strdup(st, 0);
    sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_doc_delete(fl_catalog_t *c, const char *arn, const char *kind)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    sqlite3_stmt *st = k->st[ST_D_DEL];
    fl_sqlite_bind_str(st, 1, arn);
    fl_sqlite_bind_str(st, 2, kind);
    if ((err = fl_sqlite_done(k, st, "doc delete"))) goto out;
    if (sqlite3_changes(k->db) == 0) err = FL_ERR_NOT_FOUND;
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_doc_list(fl_catalog_t *c, const char *arn, const char *kind_prefix,
                             char ***kinds, char ***jsons, size_t *n)
{
    fl_err_t err = FL_OK;
    char **ks = NULL, **js = NULL, *hi = NULL;
    size_t cnt = 0, cap = 0;
    int rc;
    *kinds = *jsons = NULL;
    *n = 0;
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = bind_range(k, ST_D_LIST, ST_D_LIST, kind_prefix, NULL, &hi);
    fl_sqlite_bind_str(st, 1, arn);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (cnt == cap) {
            cap = cap ? cap * 2 : 8;
            ks = fl_realloc(ks, cap * sizeof *ks);
            js = fl_realloc(js, cap * sizeof *js);
        }
        ks[cnt] = fl_sqlite_col_strdup(st, 0);
        js[cnt] = fl_sqlite_col_strdup(st, 1);
        cnt++;
    }
    if (rc != SQLITE_DONE) { err = fl_sqlite_err(k, rc, "doc list"); goto out; }
    *kinds = ks;
    *jsons = js;
    *n = cnt;
    ks = js = NULL;
out:
    sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
    free(hi);
    for (size_t i = 0; ks && i < cnt; i++) { free(ks[i]); free(js[i]); }
    free(ks);
    free(js);
    return err;
}

/* ---- maintenance leases and runs ---- */

static fl_err_t lease_write(fl_catalog_t *c, int which, const char *arn, const char *type, const char *owner,
                            int64_t now_ms, int64_t until_ms, const char *what, int *changed)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    sqlite3_stmt *st = k->st[which];
    fl_sqlite_bind_str(st, 1, arn);
    if (which == ST_M_CLAIM) fl_sqlite_bind_str(st, 2, type);
    fl_sqlite_bind_str(st, 3, owner);
    bool frees = which == ST_M_FREE || which == ST_M_FREE_OWNER;
    if (!frees) {
        sqlite3_bind_int64(st, 4, now_ms);
        sqlite3_bind_int64(st, 5, until_ms);
    }
    if ((err = fl_sqlite_done(k, st, what))) goto out;
    if (changed) *changed = sqlite3_changes(k->db);
    if (sqlite3_changes(k->db) == 0 && !frees)
        err = which == ST_M_CLAIM ? FL_ERR_CONFLICT : FL_ERR_NOT_FOUND;
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_maint_claim(fl_catalog_t *c, const char *arn, const char *type, const char *owner,
                                int64_t now_ms, int64_t lease_ms)
{
    if (!owner || !*owner) return FL_ERR_INVALID;
    return lease_write(c, ST_M_CLAIM, arn, type, owner, now_ms, now_ms + lease_ms, "maintenance claim", NULL);
}

static fl_err_t sq_maint_heartbeat(fl_catalog_t *c, const char *arn, const char *owner, int64_t now_ms,
                                    int64_t lease_ms)
{
    return lease_write(c, ST_M_BEAT, arn, NULL, owner, now_ms, now_ms + lease_ms, "maintenance heartbeat", NULL);
}

static fl_err_t sq_maint_release(fl_catalog_t *c, const char *arn, const char *owner)
{
    return lease_write(c, ST_M_FREE, arn, NULL, owner, 0, 0, "maintenance release", NULL);
}

static fl_err_t sq_maint_release_owner(fl_catalog_t *c, const char *owner, int *freed)
{
    if (freed) *freed = 0;
    if (!owner || !*owner) return FL_ERR_INVALID;
    return lease_write(c, ST_M_FREE_OWNER, NULL, NULL, owner, 0, 0, "maintenance release all", freed);
}

static fl_err_t sq_maint_run_add(fl_catalog_t *c, fl_maint_run_t *r, const char *job_doc)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    sqlite3_stmt *st = k->st[ST_R_INS];
    fl_sqlite_bind_str(st, 1, r->table_arn);
    fl_sqlite_bind_str(st, 2, r->type);
    fl_sqlite_bind_str(st, 3, r->owner);
    sqlite3_bind_int64(st, 4, r->start_ms);
    sqlite3_bind_int64(st, 5, r->end_ms);
    fl_sqlite_bind_str(st, 6, r->status);
    const int64_t nums[] = { r->files_in, r->bytes_in, r->files_out, r->bytes_out, r->snapshots_removed,
                             r->objects_removed, r->commits };
    for (int i = 0; i < 7; i++) sqlite3_bind_int64(st, 7 + i, nums[i]);
    fl_sqlite_bind_str(st, 14, r->message);
    if ((err = fl_sqlite_done(k, st, "maintenance run insert"))) goto out;
    r->id = sqlite3_last_insert_rowid(k->db);
    st = k->st[ST_R_PRUNE];
    fl_sqlite_bind_str(st, 1, r->table_arn);
    sqlite3_bind_int(st, 2, FL_MAINT_RUNS_KEPT - 1);
    if ((err = fl_sqlite_done(k, st, "maintenance run prune"))) goto out;
    if (job_doc) {
        char kind[96];
        snprintf(kind, sizeof kind, "maintenance-job:%s", r->type);
        st = k->st[ST_D_PUT];
        fl_sqlite_bind_str(st, 1, r->table_arn);
        fl_sqlite_bind_str(st, 2, kind);
        fl_sqlite_bind_str(st, 3, job_doc);
        err = fl_sqlite_done(k, st, "maintenance job status");
    }
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_maint_runs(fl_catalog_t *c, const char *arn, int64_t before_id, int max,
                               fl_maint_run_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (max < 1 || max > 1000) return FL_ERR_INVALID;
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[ST_R_LIST];
    fl_sqlite_bind_str(st, 1, arn);
    sqlite3_bind_int64(st, 2, before_id > 0 ? before_id : INT64_MAX);
    sqlite3_bind_int(st, 3, max);
    fl_maint_run_t *v = fl_calloc((size_t)max, sizeof *v);
    size_t cnt = 0;
    fl_err_t err = FL_OK;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && cnt < (size_t)max) {
        fl_maint_run_t *r = &v[cnt++];
        r->id = sqlite3_column_int64(st, 0);
        fl_sqlite_col_copy(st, 1, r->table_arn, sizeof r->table_arn);
        fl_sqlite_col_copy(st, 2, r->type, sizeof r->type);
        fl_sqlite_col_copy(st, 3, r->owner, sizeof r->owner);
        r->start_ms = sqlite3_column_int64(st, 4);
        r->end_ms = sqlite3_column_int64(st, 5);
        fl_sqlite_col_copy(st, 6, r->status, sizeof r->status);
        r->files_in = sqlite3_column_int64(st, 7);
        r->bytes_in = sqlite3_column_int64(st, 8);
        r->files_out = sqlite3_column_int64(st, 9);
        r->bytes_out = sqlite3_column_int64(st, 10);
        r->snapshots_removed = sqlite3_column_int64(st, 11);
        r->objects_removed = sqlite3_column_int64(st, 12);
        r->commits = sqlite3_column_int64(st, 13);
        fl_sqlite_col_copy(st, 14, r->message, sizeof r->message);
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) err = fl_sqlite_err(k, rc, "maintenance runs");
    sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
    if (err) {
        free(v);
        return err;
    }
    *out = v;
    *n = cnt;
    return FL_OK;
}

/* ---- identities ---- */

/* One write statement with string binds (NULL ends them), in a transaction;
 * *changes gets the rows changed. */
static fl_err_t write_strs(fl_catalog_t *c, int which, const char *what, int *changes, ...)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    sqlite3_stmt *st = k->st[which];
    va_list ap;
    va_start(ap, changes);
    const char *v;
    for (int i = 1; (v = va_arg(ap, const char *)); i++) fl_sqlite_bind_str(st, i, v);
    va_end(ap);
    if ((err = fl_sqlite_done(k, st, what))) goto out;
    if (changes) *changes = sqlite3_changes(k->db);
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

static void row_principal(sqlite3_stmt *st, fl_iam_principal_t *p)
{
    fl_sqlite_col_copy(st, 0, p->account, sizeof p->account);
    fl_sqlite_col_copy(st, 1, p->kind, sizeof p->kind);
    fl_sqlite_col_copy(st, 2, p->name, sizeof p->name);
    fl_sqlite_col_copy(st, 3, p->arn, sizeof p->arn);
    fl_sqlite_col_copy(st, 4, p->id, sizeof p->id);
    p->created_ms = sqlite3_column_int64(st, 5);
    p->doc = fl_sqlite_col_strdup(st, 6);
}

static fl_err_t sq_principal_create(fl_catalog_t *c, fl_iam_principal_t *p)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    p->created_ms = fl_now_ms();
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    sqlite3_stmt *st = k->st[ST_P_INS];
    fl_sqlite_bind_str(st, 1, p->account);
    fl_sqlite_bind_str(st, 2, p->kind);
    fl_sqlite_bind_str(st, 3, p->name);
    fl_sqlite_bind_str(st, 4, p->arn);
    fl_sqlite_bind_str(st, 5, p->id);
    sqlite3_bind_int64(st, 6, p->created_ms);
    fl_sqlite_bind_str(st, 7, p->doc ? p->doc : "");
    if ((err = fl_sqlite_done(k, st, "principal create"))) goto out;
    if (sqlite3_changes(k->db) == 0) err = FL_ERR_EXISTS;
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_principal_get(fl_catalog_t *c, const char *account, const char *kind, const char *name,
                                  fl_iam_principal_t *out)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[ST_P_GET];
    fl_sqlite_bind_str(st, 1, account);
    fl_sqlite_bind_str(st, 2, kind);
    fl_sqlite_bind_str(st, 3, name);
    fl_err_t err = fl_sqlite_row(k, st, "principal get");
    if (!err) row_principal(st, out);
    sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_principal_list(fl_catalog_t *c, const char *account, const char *kind,
                                   fl_iam_principal_t **out, size_t *n)
{
    fl_err_t err = FL_OK;
    size_t cnt = 0, cap = 0;
    fl_iam_principal_t *v = NULL;
    int rc;
    *out = NULL;
    *n = 0;
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[ST_P_LIST];
    fl_sqlite_bind_str(st, 1, account);
    fl_sqlite_bind_str(st, 2, kind);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && cnt < FL_IAM_MAX_LIST) {
        if (cnt == cap) v = fl_realloc(v, (cap = cap ? cap * 2 : 8) * sizeof *v);
        memset(&v[cnt], 0, sizeof *v);
        row_principal(st, &v[cnt++]);
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        err = fl_sqlite_err(k, rc, "principal list");
        fl_iam_principals_free(v, cnt);
        v = NULL;
        cnt = 0;
    }
    sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
    *out = v;
    *n = cnt;
    return err;
}

static fl_err_t sq_principal_delete(fl_catalog_t *c, const char *account, const char *kind, const char *name)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    sqlite3_stmt *st = k->st[ST_P_HASDEPS];
    fl_sqlite_bind_str(st, 1, account);
    fl_sqlite_bind_str(st, 2, kind);
    fl_sqlite_bind_str(st, 3, name);
    err = fl_sqlite_row(k, st, "principal deps");
    sqlite3_reset(st);
    if (err == FL_OK) {
        err = FL_ERR_NOT_EMPTY;
        goto out;
    }
    if (err != FL_ERR_NOT_FOUND) goto out;
    st = k->st[ST_P_DEL];
    fl_sqlite_bind_str(st, 1, account);
    fl_sqlite_bind_str(st, 2, kind);
    fl_sqlite_bind_str(st, 3, name);
    if ((err = fl_sqlite_done(k, st, "principal delete"))) goto out;
    if (sqlite3_changes(k->db) == 0) err = FL_ERR_NOT_FOUND;
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

static void row_key(sqlite3_stmt *st, fl_iam_key_t *k)
{
    fl_sqlite_col_copy(st, 0, k->akid, sizeof k->akid);
    fl_sqlite_col_copy(st, 1, k->account, sizeof k->account);
    fl_sqlite_col_copy(st, 2, k->kind, sizeof k->kind);
    fl_sqlite_col_copy(st, 3, k->name, sizeof k->name);
    fl_sqlite_col_copy(st, 4, k->secret, sizeof k->secret);
    fl_sqlite_col_copy(st, 5, k->status, sizeof k->status);
    k->created_ms = sqlite3_column_int64(st, 6);
    k->last_used_ms = sqlite3_column_int64(st, 7);
    k->expires_ms = sqlite3_column_int64(st, 8);
    fl_sqlite_col_copy(st, 9, k->token_hash, sizeof k->token_hash);
    fl_sqlite_col_copy(st, 10, k->session_name, sizeof k->session_name);
    k->session_policy = fl_sqlite_col_strdup(st, 11);
}

static fl_err_t sq_key_create(fl_catalog_t *c, fl_iam_key_t *key)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_err_t err = FL_ERR_IO;
    if (!k) return err;
    key->created_ms = fl_now_ms();
    if ((err = fl_sqlite_begin(c->db, k))) goto out;
    sqlite3_stmt *st = k->st[ST_K_INS];
    fl_sqlite_bind_str(st, 1, key->akid);
    fl_sqlite_bind_str(st, 2, key->account);
    fl_sqlite_bind_str(st, 3, key->kind);
    fl_sqlite_bind_str(st, 4, key->name);
    fl_sqlite_bind_str(st, 5, key->secret);
    fl_sqlite_bind_str(st, 6, key->status[0] ? key->status : "Active");
    sqlite3_bind_int64(st, 7, key->created_ms);
    sqlite3_bind_int64(st, 8, key->expires_ms);
    fl_sqlite_bind_str(st, 9, key->token_hash);
    fl_sqlite_bind_str(st, 10, key->session_name);
    fl_sqlite_bind_str(st, 11, key->session_policy ? key->session_policy : "");
    if ((err = fl_sqlite_done(k, st, "key create"))) goto out;
    if (sqlite3_changes(k->db) == 0) err = FL_ERR_EXISTS;
out:
    err = fl_sqlite_end(c->db, k, err);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_key_get(fl_catalog_t *c, const char *akid, fl_iam_key_t *out)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[ST_K_GET];
    fl_sqlite_bind_str(st, 1, akid);
    fl_err_t err = fl_sqlite_row(k, st, "key get");
    if (!err) row_key(st, out);
    sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
    return err;
}

static fl_err_t sq_key_list(fl_catalog_t *c, const char *account, const char *kind, const char *name,
                             fl_iam_key_t **out, size_t *n)
{
    fl_err_t err = FL_OK;
    size_t cnt = 0, cap = 0;
    fl_iam_key_t *v = NULL;
    int rc;
    *out = NULL;
    *n = 0;
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[ST_K_LIST];
    fl_sqlite_bind_str(st, 1, account);
    fl_sqlite_bind_str(st, 2, kind);
    fl_sqlite_bind_str(st, 3, name);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && cnt < FL_IAM_MAX_LIST) {
        if (cnt == cap) v = fl_realloc(v, (cap = cap ? cap * 2 : 4) * sizeof *v);
        memset(&v[cnt], 0, sizeof *v);
        row_key(st, &v[cnt++]);
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        err = fl_sqlite_err(k, rc, "key list");
        fl_iam_keys_free(v, cnt);
        v = NULL;
        cnt = 0;
    }
    sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
    *out = v;
    *n = cnt;
    return err;
}

static fl_err_t sq_key_set_status(fl_catalog_t *c, const char *akid, const char *status)
{
    int ch = 0;
    fl_err_t err = write_strs(c, ST_K_STATUS, "key status", &ch, akid, status, (const char *)NULL);
    return err ? err : ch ? FL_OK : FL_ERR_NOT_FOUND;
}

static fl_err_t sq_key_touch(fl_catalog_t *c, const char *akid, int64_t now_ms)
{
    char ms[32];
    snprintf(ms, sizeof ms, "%lld", (long long)now_ms);
    return write_strs(c, ST_K_TOUCH, "key touch", NULL, akid, ms, (const char *)NULL);
}

static fl_err_t sq_key_delete(fl_catalog_t *c, const char *akid)
{
    int ch = 0;
    fl_err_t err = write_strs(c, ST_K_DEL, "key delete", &ch, akid, (const char *)NULL);
    return err ? err : ch ? FL_OK : FL_ERR_NOT_FOUND;
}

static fl_err_t sq_key_prune(fl_catalog_t *c, int64_t now_ms)
{
    char ms[32];
    snprintf(ms, sizeof ms, "%lld", (long long)now_ms);
    return write_strs(c, ST_K_PRUNE, "key prune", NULL, ms, (const char *)NULL);
}

static fl_err_t sq_iam_policy_put(fl_catalog_t *c, const char *account, const char *kind, const char *name,
                                   const char *policy_name, const char *doc)
{
    return write_strs(c, ST_IP_PUT, "iam policy put", NULL, account, kind, name, policy_name, doc,
                      (const char *)NULL);
}

static fl_err_t sq_iam_policy_delete(fl_catalog_t *c, const char *account, const char *kind, const char *name,
                                      const char *policy_name)
{
    int ch = 0;
    fl_err_t err = write_strs(c, ST_IP_DEL, "iam policy delete", &ch, account, kind, name, policy_name,
                              (const char *)NULL);
    return err ? err : ch ? FL_OK : FL_ERR_NOT_FOUND;
}

static fl_err_t sq_iam_policy_list(fl_catalog_t *c, const char *account, const char *kind, const char *name,
                                    const char *policy_name, char ***names, char ***docs, size_t *n)
{
    fl_err_t err = FL_OK;
    char **ns = NULL, **ds = NULL;
    size_t cnt = 0, cap = 0;
    int rc;
    *names = *docs = NULL;
    *n = 0;
    fl_conn_t *k = fl_sqlite_get(c->db);
    if (!k) return FL_ERR_IO;
    sqlite3_stmt *st = k->st[policy_name ? ST_IP_GET : ST_IP_LIST];
    fl_sqlite_bind_str(st, 1, account);
    fl_sqlite_bind_str(st, 2, kind);
    fl_sqlite_bind_str(st, 3, name);
    if (policy_name) fl_sqlite_bind_str(st, 4, policy_name);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && cnt < FL_IAM_MAX_LIST) {
        if (cnt == cap) {
            cap = cap ? cap * 2 : 4;
            ns = fl_realloc(ns, cap * sizeof *ns);
            ds = fl_realloc(ds, cap * sizeof *ds);
        }
        ns[cnt] = fl_sqlite_col_strdup(st, 0);
        ds[cnt] = fl_sqlite_col_strdup(st, 1);
        cnt++;
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        err = fl_sqlite_err(k, rc, "iam policy list");
        for (size_t i = 0; i < cnt; i++) { free(ns[i]); free(ds[i]); }
        free(ns);
        free(ds);
        ns = ds = NULL;
        cnt = 0;
    }
    if (!err && policy_name && cnt == 0) err = FL_ERR_NOT_FOUND;
    sqlite3_reset(st);
    fl_sqlite_put(c->db, k);
    *names = ns;
    *docs = ds;
    *n = cnt;
    return err;
}

/* One process serves a SQLite file: nothing to tell others (floe admin's
 * writes from another process reach the server's caches by their TTL). */
static fl_err_t sq_signal(fl_catalog_t *c, const char *topic) { return FL_OK; }

static fl_err_t sq_watch(fl_catalog_t *c, const char *topic, fl_catalog_changed_fn fn, void *ud,
                         fl_catalog_watch_t **out)
{
    *out = NULL;
    return FL_OK;
}

static fl_err_t sq_unwatch(fl_catalog_t *c, fl_catalog_watch_t *w) { return FL_OK; }

static fl_err_t sq_write_count(fl_catalog_t *c, uint64_t *out)
{
    *out = 0;
    return FL_OK;
}

static fl_err_t sq_ping(fl_catalog_t *c)
{
    fl_conn_t *k = fl_sqlite_get(c->db);
    fl_sqlite_put(c->db, k);
    return k ? FL_OK : FL_ERR_IO;
}

static const fl_catalog_ops_t sq_ops = {
    .name = "sqlite",
    .close = sq_close,
    FL_CATALOG_OPS(FL_CATALOG_OP_INIT_sq)
};
