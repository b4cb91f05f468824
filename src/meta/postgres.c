/* Catalog store, PostgreSQL backend (design.md §6, meta/catalog.h): the
 * scale-out twin of sqlite.c, shared by several floe serve nodes.
 *
 * Same tables, columns and migration numbering as sqlite.c (its migrations
 * list below is this backend's one list), with every key column COLLATE "C"
 * so names compare bytewise, as in SQLite. The statements are catalog_sql.h's
 * shared text except the overrides in pg_sql below:
 *   - the pointer swap is a conditional UPDATE ... WHERE version_token = ?8
 *     (and id = ?9): zero rows updated means another commit won (or the
 *     table is gone, told apart by a follow-up read), all swaps of one call
 *     in one transaction;
 *   - token checks before rename/delete lock the row (FOR UPDATE);
 *   - run records return their new id.
 * Transactions are READ COMMITTED; a racing writer on the same row waits
 * for the row lock (bounded by lock_timeout) and then sees the winner's row.
 * Connections, the pool, timeouts, migrations and the error classes are
 * base/pg.h's: busy is FL_ERR_CONFLICT, unreachable is FL_ERR_INTERNAL
 * (nothing written), and a commit whose outcome stays unknown FL_ERR_IO.
 *
 * Listing is a range scan as in sqlite.c; the upper bound is the prefix's
 * code-point successor (fl_pg_successor), valid UTF-8 as PostgreSQL wants. */
#include "meta/catalog_int.h"
#include "meta/catalog_sql.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/pg.h"
#include "base/time.h"
#include "base/uuid.h"
#include "net/metrics.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Migrations: entry i brings the schema from version i to i+1, as sqlite.c's
 * entry i does. Append, never edit. */
static const char *const migrations[] = {
    /* 0 -> 1 */
    "CREATE TABLE table_buckets(name TEXT COLLATE \"C\" PRIMARY KEY, arn TEXT COLLATE \"C\" NOT NULL UNIQUE,"
    "  owner TEXT NOT NULL, id TEXT NOT NULL, created_ms BIGINT NOT NULL);"
    "CREATE TABLE namespaces(bucket TEXT COLLATE \"C\" NOT NULL REFERENCES table_buckets(name),"
    "  name TEXT COLLATE \"C\" NOT NULL, id TEXT NOT NULL, owner TEXT NOT NULL, created_by TEXT NOT NULL,"
    "  created_ms BIGINT NOT NULL, properties TEXT NOT NULL DEFAULT '{}',"
    "  PRIMARY KEY(bucket, name));"
    "CREATE TABLE tables(bucket TEXT COLLATE \"C\" NOT NULL, namespace TEXT COLLATE \"C\" NOT NULL,"
    "  name TEXT COLLATE \"C\" NOT NULL, id TEXT NOT NULL, arn TEXT COLLATE \"C\" NOT NULL UNIQUE,"
    "  type TEXT NOT NULL, format TEXT NOT NULL, kind TEXT NOT NULL, warehouse TEXT COLLATE \"C\" NOT NULL,"
    "  metadata_location TEXT NOT NULL DEFAULT '', version_token TEXT NOT NULL, owner TEXT NOT NULL,"
    "  created_by TEXT NOT NULL, modified_by TEXT NOT NULL, created_ms BIGINT NOT NULL,"
    "  modified_ms BIGINT NOT NULL, PRIMARY KEY(bucket, namespace, name),"
    "  FOREIGN KEY(bucket, namespace) REFERENCES namespaces(bucket, name));"
    "CREATE TABLE docs(arn TEXT COLLATE \"C\" NOT NULL, kind TEXT COLLATE \"C\" NOT NULL, json TEXT NOT NULL,"
    "  PRIMARY KEY(arn, kind));",
    /* 1 -> 2: a warehouse belongs to one table, whichever table bucket it is in */
    "CREATE UNIQUE INDEX tables_warehouse ON tables(warehouse);",
    /* 2 -> 3: maintenance leases (one per table) and run records */
    "CREATE TABLE maintenance_jobs(table_arn TEXT COLLATE \"C\" PRIMARY KEY, type TEXT NOT NULL,"
    "  owner TEXT COLLATE \"C\" NOT NULL, claimed_ms BIGINT NOT NULL, heartbeat_ms BIGINT NOT NULL,"
    "  lease_until_ms BIGINT NOT NULL);"
    "CREATE TABLE maintenance_runs(id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    "  table_arn TEXT COLLATE \"C\" NOT NULL, type TEXT NOT NULL, owner TEXT NOT NULL, start_ms BIGINT NOT NULL,"
    "  end_ms BIGINT NOT NULL, status TEXT NOT NULL, files_in BIGINT NOT NULL, bytes_in BIGINT NOT NULL,"
    "  files_out BIGINT NOT NULL, bytes_out BIGINT NOT NULL, snapshots_removed BIGINT NOT NULL,"
    "  objects_removed BIGINT NOT NULL, commits BIGINT NOT NULL, message TEXT NOT NULL);"
    "CREATE INDEX maintenance_runs_table ON maintenance_runs(table_arn, id);",
    /* 3 -> 4: identities (meta/catalog.h "identities") */
    "CREATE TABLE iam_principals(account TEXT COLLATE \"C\" NOT NULL, kind TEXT COLLATE \"C\" NOT NULL,"
    "  name TEXT COLLATE \"C\" NOT NULL, arn TEXT NOT NULL, id TEXT NOT NULL, created_ms BIGINT NOT NULL,"
    "  doc TEXT NOT NULL, PRIMARY KEY(account, kind, name));"
    "CREATE TABLE iam_keys(akid TEXT COLLATE \"C\" PRIMARY KEY, account TEXT COLLATE \"C\" NOT NULL,"
    "  kind TEXT COLLATE \"C\" NOT NULL, name TEXT COLLATE \"C\" NOT NULL, secret TEXT NOT NULL,"
    "  status TEXT NOT NULL, created_ms BIGINT NOT NULL, last_used_ms BIGINT NOT NULL, expires_ms BIGINT NOT NULL,"
    "  token_hash TEXT NOT NULL, session_name TEXT NOT NULL, session_policy TEXT NOT NULL);"
    "CREATE INDEX iam_keys_owner ON iam_keys(account, kind, name);"
    "CREATE TABLE iam_policies(account TEXT COLLATE \"C\" NOT NULL, kind TEXT COLLATE \"C\" NOT NULL,"
    "  name TEXT COLLATE \"C\" NOT NULL, policy_name TEXT COLLATE \"C\" NOT NULL, doc TEXT NOT NULL,"
    "  PRIMARY KEY(account, kind, name, policy_name));",
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

/* Where PostgreSQL's text differs from catalog_sql.h's. */
static const char *const pg_sql[ST_COUNT] = {
    [ST_T_TOKEN] = "SELECT version_token, arn, id FROM tables"
                   " WHERE bucket = ?1 AND namespace = ?2 AND name = ?3 FOR UPDATE",
    /* ?8 expected token, ?9 expected id (NULL: not checked) */
    [ST_T_SWAP] = "UPDATE tables SET metadata_location = ?4, version_token = ?5,"
                  " modified_ms = ?6, modified_by = coalesce(?7, modified_by)"
                  " WHERE bucket = ?1 AND namespace = ?2 AND name = ?3"
                  " AND (?8::text IS NULL OR version_token = ?8) AND (?9::text IS NULL OR id = ?9)",
    [ST_R_INS] = "INSERT INTO maintenance_runs(table_arn, type, owner, start_ms, end_ms, status, files_in, bytes_in,"
                 " files_out, bytes_out, snapshots_removed, objects_removed, commits, message)"
                 " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) RETURNING id",
};

static const char *stmts[ST_COUNT];
static const fl_catalog_ops_t pg_ops;

typedef fl_pg_conn_t fl_conn_t;
typedef fl_pg_args_t args_t;

static void new_token(char out[40]) { fl_random_hex(out, 32); }

/* Sets ?5 (lower bound) and ?6 (upper bound) of a list statement and picks
 * its GE or GT variant: names that start with prefix (NULL = any) and sort
 * after `after` (NULL = from the start). *hi is the bound's storage (free()). */
static int bind_range(args_t *a, int st_ge, int st_gt, const char *prefix, const char *after, char **hi)
{
    if (!prefix) prefix = "";
    bool gt = after && strcmp(after, prefix) >= 0;
    fl_pg_arg_str(a, 5, gt ? after : prefix);
    *hi = fl_pg_successor(prefix);
    fl_pg_arg_str(a, 6, *hi);
    return gt ? st_gt : st_ge;
}

/* B_COLS from column c0 of row r */
static void bucket_at(const fl_conn_t *k, int r, int c0, fl_tbucket_t *b)
{
    memset(b, 0, sizeof *b);
    fl_pg_col_copy(k, r, c0, b->name, sizeof b->name);
    fl_pg_col_copy(k, r, c0 + 1, b->arn, sizeof b->arn);
    fl_pg_col_copy(k, r, c0 + 2, b->owner, sizeof b->owner);
    fl_pg_col_copy(k, r, c0 + 3, b->id, sizeof b->id);
    b->created_ms = fl_pg_col_i64(k, r, c0 + 4);
}

static void row_bucket(const fl_conn_t *k, int r, void *out) { bucket_at(k, r, 0, out); }

static void row_ns(const fl_conn_t *k, int r, void *out)
{
    fl_namespace_t *ns = out;
    memset(ns, 0, sizeof *ns);
    fl_pg_col_copy(k, r, 0, ns->bucket, sizeof ns->bucket);
    fl_pg_col_copy(k, r, 1, ns->name, sizeof ns->name);
    fl_pg_col_copy(k, r, 2, ns->id, sizeof ns->id);
    fl_pg_col_copy(k, r, 3, ns->owner, sizeof ns->owner);
    fl_pg_col_copy(k, r, 4, ns->created_by, sizeof ns->created_by);
    ns->created_ms = fl_pg_col_i64(k, r, 5);
    ns->properties = fl_pg_col_strdup(k, r, 6);
}

static void row_table(const fl_conn_t *k, int r, void *out)
{
    fl_table_t *t = out;
    fl_pg_col_copy(k, r, 0, t->bucket, sizeof t->bucket);
    fl_pg_col_copy(k, r, 1, t->ns, sizeof t->ns);
    fl_pg_col_copy(k, r, 2, t->name, sizeof t->name);
    fl_pg_col_copy(k, r, 3, t->id, sizeof t->id);
    fl_pg_col_copy(k, r, 4, t->arn, sizeof t->arn);
    fl_pg_col_copy(k, r, 5, t->type, sizeof t->type);
    fl_pg_col_copy(k, r, 6, t->format, sizeof t->format);
    fl_pg_col_copy(k, r, 7, t->kind, sizeof t->kind);
    fl_pg_col_copy(k, r, 8, t->warehouse, sizeof t->warehouse);
    fl_pg_col_copy(k, r, 9, t->metadata_location, sizeof t->metadata_location);
    fl_pg_col_copy(k, r, 10, t->version_token, sizeof t->version_token);
    fl_pg_col_copy(k, r, 11, t->owner, sizeof t->owner);
    fl_pg_col_copy(k, r, 12, t->created_by, sizeof t->created_by);
    fl_pg_col_copy(k, r, 13, t->modified_by, sizeof t->modified_by);
    t->created_ms = fl_pg_col_i64(k, r, 14);
    t->modified_ms = fl_pg_col_i64(k, r, 15);
}

/* Runs a list statement (its LIMIT set to max + 1): up to max rows into a new
 * array of elem-byte rows, each filled by row; *more when a further row exists. */
static fl_err_t collect_rows(fl_conn_t *k, int st, const args_t *a, int max, size_t elem,
                             void (*row)(const fl_conn_t *, int, void *), const char *what, void **out,
                             size_t *n, bool *more)
{
    fl_err_t err = fl_pg_exec(k, st, a, what);
    if (err) return err;
    int rows = k->nrows;
    if (rows > max) { *more = true; rows = max; }
    if (rows) *out = fl_calloc((size_t)rows, elem);
    for (int r = 0; r < rows; r++) row(k, r, (char *)*out + (size_t)r * elem);
    *n = (size_t)rows;
    return FL_OK;
}

/* One read-only list statement on a pooled connection: collect_rows' rows
 * (at most max; more may be NULL when the caller has no use for it). *out is
 * NULL and *n 0 when nothing was found or on failure. */
static fl_err_t list_rows(fl_catalog_t *c, int st, const args_t *a, int max, size_t elem,
                          void (*row)(const fl_conn_t *, int, void *), const char *what, void **out,
                          size_t *n, bool *more)
{
    bool spare = false;
    *out = NULL;
    *n = 0;
    if (!more) more = &spare;
    *more = false;
    fl_conn_t *k = fl_pg_get(c->pg);
    if (!k) return FL_ERR_INTERNAL;
    fl_err_t err = collect_rows(k, st, a, max, elem, row, what, out, n, more);
    fl_pg_put(c->pg, k);
    return err;
}

/* list_rows for the statements that yield (name, document) string pairs:
 * two new arrays of strdup'd column 0 and column 1 values. */
static fl_err_t list_pairs(fl_catalog_t *c, int st, const args_t *a, int max, const char *what, char ***firsts,
                           char ***seconds, size_t *n)
{
    *firsts = *seconds = NULL;
    *n = 0;
    fl_conn_t *k = fl_pg_get(c->pg);
    if (!k) return FL_ERR_INTERNAL;
    fl_err_t err = fl_pg_exec(k, st, a, what);
    if (!err && k->nrows) {
        int rows = k->nrows < max ? k->nrows : max;
        char **fs = fl_calloc((size_t)rows, sizeof *fs), **ss = fl_calloc((size_t)rows, sizeof *ss);
        for (int r = 0; r < rows; r++) {
            fs[r] = fl_pg_col_strdup(k, r, 0);
            ss[r] = fl_pg_col_strdup(k, r, 1);
        }
        *firsts = fs;
        *seconds = ss;
        *n = (size_t)rows;
    }
    fl_pg_put(c->pg, k);
    return err;
}

static void stmts_init(void)
{
    for (int i = 0; i < ST_COUNT; i++) stmts[i] = pg_sql[i] ? pg_sql[i] : fl_catalog_sql[i];
}

/* /metrics: what the catalog has cost PostgreSQL (round trips per request is
 * the figure that bounds a node's commit rate; bench/nodes.py reads it). */
static fl_err_t render_metrics(void *arg, fl_buf_t *out)
{
    fl_pg_stats_t st;
    fl_pg_stats(arg, &st);
    return fl_buf_printf(out, "# HELP floe_catalog_pg_round_trips_total Requests to PostgreSQL that waited for its answer.\n"
                              "# TYPE floe_catalog_pg_round_trips_total counter\n"
                              "floe_catalog_pg_round_trips_total %llu\n"
                              "# HELP floe_catalog_pg_prepares_total Statements prepared (once per statement and connection).\n"
                              "# TYPE floe_catalog_pg_prepares_total counter\n"
                              "floe_catalog_pg_prepares_total %llu\n"
                              "# HELP floe_catalog_pg_transactions_total Write transactions begun.\n"
                              "# TYPE floe_catalog_pg_transactions_total counter\n"
                              "floe_catalog_pg_transactions_total %llu\n"
                              "# HELP floe_catalog_pg_connects_total Connections to PostgreSQL opened.\n"
                              "# TYPE floe_catalog_pg_connects_total counter\n"
                              "floe_catalog_pg_connects_total %llu\n",
                         (unsigned long long)st.round_trips, (unsigned long long)st.prepares,
                         (unsigned long long)st.transactions, (unsigned long long)st.connects);
}

fl_catalog_t *fl_catalog_pg_open(const char *url)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, stmts_init);
    fl_pg_cfg_t cfg = {
        .label = "catalog", .url = url, .migrations = migrations, .n_migrations = SCHEMA_VERSION,
        .statements = stmts, .n_statements = ST_COUNT,
    };
    const char *pool = getenv("FLOE_CATALOG_POOL");
    if (pool) cfg.pool_max = atoi(pool);
    fl_pg_t *p = fl_pg_open(&cfg);
    if (!p) return NULL;
    fl_catalog_t *c = fl_calloc(1, sizeof *c);
    c->ops = &pg_ops;
    c->pg = p;
    fl_metrics_add_source(render_metrics, p);
    return c;
}

static void pg_close(fl_catalog_t *c)
{
    if (!c) return;
    fl_metrics_remove_source(render_metrics, c->pg);
    fl_pg_close(c->pg);
    free(c);
}

/* ---- change signals: NOTIFY/LISTEN on channel floe_<topic> ---- */

static bool topic_channel(const char *topic, char *out, size_t cap)
{
    int n = snprintf(out, cap, "floe_%s", topic ? topic : "");
    return topic && *topic && n > 0 && (size_t)n < cap;
}

static fl_err_t pg_signal(fl_catalog_t *c, const char *topic)
{
    char ch[64];
    return topic_channel(topic, ch, sizeof ch) ? fl_pg_notify(c->pg, ch) : FL_ERR_INVALID;
}

static fl_err_t pg_watch(fl_catalog_t *c, const char *topic, fl_catalog_changed_fn fn, void *ud,
                         fl_catalog_watch_t **out)
{
    char ch[64];
    *out = NULL;
    if (!topic_channel(topic, ch, sizeof ch)) return FL_ERR_INVALID;
    fl_pg_listener_t *l = fl_pg_listen(c->pg, ch, fn, ud);
    if (!l) return FL_ERR_INTERNAL;
    *out = (fl_catalog_watch_t *)l;
    return FL_OK;
}

static fl_err_t pg_unwatch(fl_catalog_t *c, fl_catalog_watch_t *w)
{
    fl_pg_unlisten((fl_pg_listener_t *)w);
    return FL_OK;
}

static fl_err_t pg_write_count(fl_catalog_t *c, uint64_t *out)
{
    fl_pg_stats_t st;
    fl_pg_stats(c->pg, &st);
    *out = st.transactions;
    return FL_OK;
}

static fl_err_t pg_ping(fl_catalog_t *c)
{
    return fl_pg_ping(c->pg) ? FL_OK : FL_ERR_INTERNAL;
}

/* One write: get, BEGIN, body, COMMIT/ROLLBACK, put. */
#define TX_BEGIN(c, k)                                   \
    fl_conn_t *k = fl_pg_get((c)->pg);                   \
    fl_err_t err = FL_ERR_INTERNAL;                      \
    if (!k) return err;                                  \
    if ((err = fl_pg_begin(k))) goto out;
#define TX_END(c, k)                                     \
    err = fl_pg_end(k, err);                             \
    fl_pg_put((c)->pg, k);                               \
    return err;

/* ---- table buckets ---- */

static fl_err_t pg_bucket_create(fl_catalog_t *c, fl_tbucket_t *b)
{
    if (!b->id[0]) fl_uuid4(b->id);
    b->created_ms = fl_now_ms();
    args_t a = { 0 };
    TX_BEGIN(c, k)
    fl_pg_arg_str(&a, 1, b->name);
    fl_pg_arg_str(&a, 2, b->arn);
    fl_pg_arg_str(&a, 3, b->owner);
    fl_pg_arg_str(&a, 4, b->id);
    fl_pg_arg_i64(&a, 5, b->created_ms);
    if ((err = fl_pg_exec(k, ST_B_INS, &a, "bucket create"))) goto out;
    if (k->changes == 0) err = FL_ERR_EXISTS;
out:
    TX_END(c, k)
}

static fl_err_t pg_bucket_get(fl_catalog_t *c, const char *name, fl_tbucket_t *out)
{
    fl_conn_t *k = fl_pg_get(c->pg);
    if (!k) return FL_ERR_INTERNAL;
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, name);
    fl_err_t err = fl_pg_row(k, ST_B_GET, &a, "bucket get");
    if (!err) row_bucket(k, 0, out);
    fl_pg_put(c->pg, k);
    return err;
}

static fl_err_t pg_bucket_list(fl_catalog_t *c, const char *prefix, const char *after, int max,
                               fl_tbucket_t **out, size_t *n, bool *more)
{
    char *hi = NULL;
    *out = NULL;
    *n = 0;
    *more = false;
    if (max < 1) return FL_ERR_INVALID;
    args_t a = { 0 };
    int st = bind_range(&a, ST_B_LIST_GE, ST_B_LIST_GT, prefix, after, &hi);
    fl_pg_arg_i64(&a, 7, (int64_t)max + 1);
    fl_err_t err = list_rows(c, st, &a, max, sizeof **out, row_bucket, "bucket list", (void **)out, n, more);
    free(hi);
    return err;
}

static fl_err_t pg_bucket_delete(fl_catalog_t *c, const char *name)
{
    char arn[FL_ARN_MAX];
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, name);
    TX_BEGIN(c, k)
    err = fl_pg_row(k, ST_B_HASNS, &a, "bucket delete");
    if (err == FL_OK) { err = FL_ERR_NOT_EMPTY; goto out; }
    if (err != FL_ERR_NOT_FOUND) goto out;
    /* NOT_FOUND: no such bucket; a namespace created meanwhile fails this
     * delete on its foreign key (FL_ERR_CONFLICT) */
    if ((err = fl_pg_row(k, ST_B_DEL, &a, "bucket delete"))) goto out;
    fl_pg_col_copy(k, 0, 0, arn, sizeof arn);
    args_t d = { 0 };
    fl_pg_arg_str(&d, 1, arn);
    err = fl_pg_exec(k, ST_D_DEL_ARN, &d, "bucket docs delete");
out:
    TX_END(c, k)
}

/* ---- namespaces ---- */

static fl_err_t bucket_check(fl_conn_t *k, const char *bucket, fl_tbucket_t *b)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, bucket);
    fl_err_t err = fl_pg_row(k, ST_B_GET, &a, "bucket lookup");
    if (!err && b) row_bucket(k, 0, b);
    return err == FL_ERR_NOT_FOUND ? FL_ERR_NO_BUCKET : err;
}

static fl_err_t ns_check(fl_conn_t *k, const char *bucket, const char *ns)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, bucket);
    fl_pg_arg_str(&a, 2, ns);
    return fl_pg_row(k, ST_N_GET, &a, "namespace lookup");
}

static fl_err_t pg_ns_create(fl_catalog_t *c, fl_namespace_t *ns)
{
    if (!ns->id[0]) fl_uuid4(ns->id);
    ns->created_ms = fl_now_ms();
    args_t a = { 0 };
    TX_BEGIN(c, k)
    if ((err = bucket_check(k, ns->bucket, NULL))) goto out;
    fl_pg_arg_str(&a, 1, ns->bucket);
    fl_pg_arg_str(&a, 2, ns->name);
    fl_pg_arg_str(&a, 3, ns->id);
    fl_pg_arg_str(&a, 4, ns->owner);
    fl_pg_arg_str(&a, 5, ns->created_by);
    fl_pg_arg_i64(&a, 6, ns->created_ms);
    fl_pg_arg_str(&a, 7, ns->properties ? ns->properties : "{}");
    if ((err = fl_pg_exec(k, ST_N_INS, &a, "namespace create"))) goto out;
    if (k->changes == 0) err = FL_ERR_EXISTS;
out:
    TX_END(c, k)
}

static fl_err_t pg_ns_get(fl_catalog_t *c, const char *bucket, const char *name, fl_namespace_t *out)
{
    fl_conn_t *k = fl_pg_get(c->pg);
    if (!k) return FL_ERR_INTERNAL;
    fl_err_t err = ns_check(k, bucket, name);
    if (!err) row_ns(k, 0, out);
    fl_pg_put(c->pg, k);
    return err;
}

static fl_err_t pg_ns_list(fl_catalog_t *c, const char *bucket, const char *prefix, const char *after,
                           int max, fl_namespace_t **out, size_t *n, bool *more)
{
    char *hi = NULL;
    *out = NULL;
    *n = 0;
    *more = false;
    if (max < 1) return FL_ERR_INVALID;
    args_t a = { 0 };
    int st = bind_range(&a, ST_N_LIST_GE, ST_N_LIST_GT, prefix, after, &hi);
    fl_pg_arg_str(&a, 1, bucket);
    fl_pg_arg_i64(&a, 7, (int64_t)max + 1);
    fl_err_t err = list_rows(c, st, &a, max, sizeof **out, row_ns, "namespace list", (void **)out, n, more);
    free(hi);
    return err;
}

static fl_err_t pg_ns_set_properties(fl_catalog_t *c, const char *bucket, const char *name,
                                     const char *properties_json)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, bucket);
    fl_pg_arg_str(&a, 2, name);
    fl_pg_arg_str(&a, 3, properties_json ? properties_json : "{}");
    TX_BEGIN(c, k)
    if ((err = fl_pg_exec(k, ST_N_PROPS, &a, "namespace properties"))) goto out;
    if (k->changes == 0) err = FL_ERR_NOT_FOUND;
out:
    TX_END(c, k)
}

static fl_err_t pg_ns_delete(fl_catalog_t *c, const char *bucket, const char *name)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, bucket);
    fl_pg_arg_str(&a, 2, name);
    TX_BEGIN(c, k)
    err = fl_pg_row(k, ST_N_HASTBL, &a, "namespace delete");
    if (err == FL_OK) { err = FL_ERR_NOT_EMPTY; goto out; }
    if (err != FL_ERR_NOT_FOUND) goto out;
    if ((err = fl_pg_exec(k, ST_N_DEL, &a, "namespace delete"))) goto out;
    if (k->changes == 0) err = FL_ERR_NOT_FOUND;
out:
    TX_END(c, k)
}

/* ---- tables and views ---- */

static fl_err_t pg_table_create(fl_catalog_t *c, fl_table_t *t)
{
    fl_tbucket_t b;
    if (!t->id[0]) fl_uuid4(t->id);
    if (!t->type[0]) fl_strlcpy(t->type, "customer", sizeof t->type);
    if (!t->format[0]) fl_strlcpy(t->format, "ICEBERG", sizeof t->format);
    if (!t->kind[0]) fl_strlcpy(t->kind, "table", sizeof t->kind);
    if (!t->modified_by[0]) fl_strlcpy(t->modified_by, t->created_by, sizeof t->modified_by);
    new_token(t->version_token);
    t->created_ms = t->modified_ms = fl_now_ms();
    args_t a = { 0 };
    TX_BEGIN(c, k)
    if ((err = bucket_check(k, t->bucket, &b))) goto out;
    if ((err = ns_check(k, t->bucket, t->ns))) goto out;
    if (!t->arn[0]) {
        int r = snprintf(t->arn, sizeof t->arn, "%s/table/%s", b.arn, t->id);
        if (r < 0 || (size_t)r >= sizeof t->arn) { err = FL_ERR_INVALID; goto out; }
    }
    const char *v[] = { t->bucket, t->ns, t->name, t->id, t->arn, t->type, t->format, t->kind, t->warehouse,
                        t->metadata_location, t->version_token, t->owner, t->created_by, t->modified_by };
    for (int i = 0; i < 14; i++) fl_pg_arg_str(&a, i + 1, v[i]);
    fl_pg_arg_i64(&a, 15, t->created_ms);
    fl_pg_arg_i64(&a, 16, t->modified_ms);
    if ((err = fl_pg_exec(k, ST_T_INS, &a, "table create"))) goto out;
    if (k->changes == 0) err = FL_ERR_EXISTS;
out:
    TX_END(c, k)
}

static fl_err_t table_get_by(fl_catalog_t *c, int st, const args_t *a, fl_table_t *out)
{
    fl_conn_t *k = fl_pg_get(c->pg);
    if (!k) return FL_ERR_INTERNAL;
    fl_err_t err = fl_pg_row(k, st, a, "table get");
    if (!err) row_table(k, 0, out);
    fl_pg_put(c->pg, k);
    return err;
}

static fl_err_t pg_bucket_table_get(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                                    fl_tbucket_t *b, fl_table_t *t, bool *found)
{
    *found = false;
    fl_conn_t *k = fl_pg_get(c->pg);
    if (!k) return FL_ERR_INTERNAL;
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, bucket);
    fl_pg_arg_str(&a, 2, ns);
    fl_pg_arg_str(&a, 3, name);
    fl_err_t err = fl_pg_row(k, ST_BT_GET, &a, "bucket and table get");
    if (!err) {
        bucket_at(k, 0, BT_TABLE_COLS, b);
        *found = fl_pg_col(k, 0, 0)[0] != 0;   /* t.bucket: NULL ("") without a table row */
        if (*found) row_table(k, 0, t);
    }
    fl_pg_put(c->pg, k);
    return err;
}

static fl_err_t pg_table_get(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                             fl_table_t *out)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, bucket);
    fl_pg_arg_str(&a, 2, ns);
    fl_pg_arg_str(&a, 3, name);
    return table_get_by(c, ST_T_GET, &a, out);
}

static fl_err_t pg_table_get_by_warehouse(fl_catalog_t *c, const char *warehouse, fl_table_t *out)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, warehouse);
    return table_get_by(c, ST_T_GET_WH, &a, out);
}

static fl_err_t pg_table_get_by_arn(fl_catalog_t *c, const char *arn, fl_table_t *out)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, arn);
    return table_get_by(c, ST_T_GET_ARN, &a, out);
}

static fl_err_t pg_table_list(fl_catalog_t *c, const char *bucket, const char *ns, const char *kind,
                              const char *prefix, const char *after_ns, const char *after_name,
                              int max, fl_table_t **out, size_t *n, bool *more)
{
    fl_err_t err = FL_OK;
    char *hi = NULL;
    args_t a = { 0 };
    int st;
    *out = NULL;
    *n = 0;
    *more = false;
    if (max < 1) return FL_ERR_INVALID;
    if (ns) {
        const char *after = NULL;
        if (after_ns) {
            int r = strcmp(after_ns, ns);
            if (r > 0) goto out;         /* the cursor is past this namespace */
            if (r == 0) after = after_name ? after_name : "";
        }
        st = bind_range(&a, ST_T_LIST1_GE, ST_T_LIST1_GT, prefix, after, &hi);
        fl_pg_arg_str(&a, 2, ns);
    } else {
        /* The prefix bounds name within each namespace: ?8 low, ?6 high. */
        st = after_ns ? ST_T_LISTN_GT : ST_T_LISTN_GE;
        fl_pg_arg_str(&a, 2, after_ns ? after_ns : "");
        fl_pg_arg_str(&a, 3, after_ns && after_name ? after_name : "");
        fl_pg_arg_str(&a, 8, prefix ? prefix : "");
        hi = fl_pg_successor(prefix);
        fl_pg_arg_str(&a, 6, hi);
    }
    fl_pg_arg_str(&a, 1, bucket);
    fl_pg_arg_str(&a, 9, kind);
    fl_pg_arg_i64(&a, 7, (int64_t)max + 1);
    err = list_rows(c, st, &a, max, sizeof **out, row_table, "table list", (void **)out, n, more);
out:
    free(hi);
    return err;
}

/* Inside a write transaction: the table's row, locked (see sqlite.c's token_check). */
static fl_err_t token_check(fl_conn_t *k, const char *bucket, const char *ns, const char *name,
                            const char *expect_id, const char *expect, char *arn_out)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, bucket);
    fl_pg_arg_str(&a, 2, ns);
    fl_pg_arg_str(&a, 3, name);
    fl_err_t err = fl_pg_row(k, ST_T_TOKEN, &a, "table token");
    if (!err) {
        if (expect_id && strcmp(fl_pg_col(k, 0, 2), expect_id) != 0) err = FL_ERR_NOT_FOUND;
        else if (expect && strcmp(fl_pg_col(k, 0, 0), expect) != 0) err = FL_ERR_CONFLICT;
        if (arn_out) fl_pg_col_copy(k, 0, 1, arn_out, FL_ARN_MAX);
    }
    return err;
}

/* After a COMMIT whose connection was lost (txid_said: txid_status's verdict):
 * the rows tell better. Every row at its new token: it landed. A row still at
 * its expected token: it did not (the swaps land all or none, and tokens are
 * never reused). Rows moved on by later commits: txid_said stands. */
static fl_err_t swap_landed(fl_catalog_t *c, const fl_table_swap_t *swaps, size_t n, fl_err_t txid_said)
{
    size_t landed = 0;
    for (size_t i = 0; i < n; i++) {
        fl_table_t t;
        if (pg_table_get(c, swaps[i].bucket, swaps[i].ns, swaps[i].name, &t) != FL_OK) return txid_said;
        if (!strcmp(t.version_token, swaps[i].new_token_out)) landed++;
        else if (swaps[i].expect_token && !strcmp(t.version_token, swaps[i].expect_token)) return FL_ERR_INTERNAL;
    }
    return landed == n ? FL_OK : txid_said;
}

static fl_err_t pg_table_swap(fl_catalog_t *c, fl_table_swap_t *swaps, size_t n)
{
    int64_t now = fl_now_ms();
    TX_BEGIN(c, k)
    for (size_t i = 0; i < n; i++) {
        fl_table_swap_t *s = &swaps[i];
        args_t a = { 0 };
        new_token(s->new_token_out);
        fl_pg_arg_str(&a, 1, s->bucket);
        fl_pg_arg_str(&a, 2, s->ns);
        fl_pg_arg_str(&a, 3, s->name);
        fl_pg_arg_str(&a, 4, s->new_location ? s->new_location : "");
        fl_pg_arg_str(&a, 5, s->new_token_out);
        fl_pg_arg_i64(&a, 6, now);
        fl_pg_arg_str(&a, 7, s->modified_by);
        fl_pg_arg_str(&a, 8, s->expect_token);
        fl_pg_arg_str(&a, 9, s->expect_id);
        if ((err = fl_pg_exec(k, ST_T_SWAP, &a, "table swap"))) goto out;
        if (k->changes == 1) continue;
        /* lost: a renamed or dropped table is NOT_FOUND, anything else a conflict */
        err = token_check(k, s->bucket, s->ns, s->name, s->expect_id, s->expect_token, NULL);
        if (err == FL_OK) err = FL_ERR_CONFLICT;
        goto out;
    }
out:
    err = fl_pg_end(k, err);
    bool lost = k->commit_lost;
    fl_pg_put(c->pg, k);
    if (lost) err = swap_landed(c, swaps, n, err);
    if (err)
        for (size_t i = 0; i < n; i++) swaps[i].new_token_out[0] = 0;
    return err;
}

/* A rename whose UPDATE failed on the name's key lost to a create of the
 * destination committed after its check (READ COMMITTED sees no row that is
 * not yet committed): that is the destination existing, not a failure. */
static fl_err_t rename_lost(fl_catalog_t *c, const char *bucket, const char *ns, const char *name)
{
    fl_table_t t;
    return pg_table_get(c, bucket, ns, name, &t) == FL_OK ? FL_ERR_EXISTS : FL_ERR_CONFLICT;
}

static fl_err_t pg_table_rename(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                                const char *new_ns, const char *new_name, const char *expect_id,
                                const char *expect_token)
{
    char tok[40];
    args_t a = { 0 };
    TX_BEGIN(c, k)
    if ((err = token_check(k, bucket, ns, name, expect_id, expect_token, NULL))) goto out;
    if ((err = ns_check(k, bucket, new_ns))) goto out;
    if (strcmp(ns, new_ns) != 0 || strcmp(name, new_name) != 0) {
        err = token_check(k, bucket, new_ns, new_name, NULL, NULL, NULL);
        if (err == FL_OK) { err = FL_ERR_EXISTS; goto out; }
        if (err != FL_ERR_NOT_FOUND) goto out;
    }
    new_token(tok);
    fl_pg_arg_str(&a, 1, bucket);
    fl_pg_arg_str(&a, 2, ns);
    fl_pg_arg_str(&a, 3, name);
    fl_pg_arg_str(&a, 4, new_ns);
    fl_pg_arg_str(&a, 5, new_name);
    fl_pg_arg_str(&a, 6, tok);
    fl_pg_arg_i64(&a, 7, fl_now_ms());
    err = fl_pg_exec(k, ST_T_RENAME, &a, "table rename");
out:
    err = fl_pg_end(k, err);
    fl_pg_put(c->pg, k);
    return err == FL_ERR_CONFLICT ? rename_lost(c, bucket, new_ns, new_name) : err;
}

static fl_err_t pg_table_delete(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                                const char *expect_id, const char *expect_token)
{
    char arn[FL_ARN_MAX];
    args_t a = { 0 }, d = { 0 };
    fl_pg_arg_str(&a, 1, bucket);
    fl_pg_arg_str(&a, 2, ns);
    fl_pg_arg_str(&a, 3, name);
    TX_BEGIN(c, k)
    if ((err = token_check(k, bucket, ns, name, expect_id, expect_token, arn))) goto out;
    if ((err = fl_pg_exec(k, ST_T_DEL, &a, "table delete"))) goto out;
    fl_pg_arg_str(&d, 1, arn);
    if ((err = fl_pg_exec(k, ST_D_DEL_ARN, &d, "table docs delete"))) goto out;
    if ((err = fl_pg_exec(k, ST_M_DEL_ARN, &d, "table lease delete"))) goto out;
    err = fl_pg_exec(k, ST_R_DEL_ARN, &d, "table runs delete");
out:
    TX_END(c, k)
}

/* ---- attached documents ---- */

static fl_err_t pg_doc_put(fl_catalog_t *c, const char *arn, const char *kind, const char *json)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, arn);
    fl_pg_arg_str(&a, 2, kind);
    fl_pg_arg_str(&a, 3, json ? json : "");
    TX_BEGIN(c, k)
    err = fl_pg_exec(k, ST_D_PUT, &a, "doc put");
out:
    TX_END(c, k)
}

static fl_err_t pg_doc_get(fl_catalog_t *c, const char *arn, const char *kind, char **json_out)
{
    *json_out = NULL;
    fl_conn_t *k = fl_pg_get(c->pg);
    if (!k) return FL_ERR_INTERNAL;
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, arn);
    fl_pg_arg_str(&a, 2, kind);
    fl_err_t err = fl_pg_row(k, ST_D_GET, &a, "doc get");
    if (!err) *json_out = fl_pg_col_strdup(k, 0, 0);
    fl_pg_put(c->pg, k);
    return err;
}

static fl_err_t pg_doc_delete(fl_catalog_t *c, const char *arn, const char *kind)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, arn);
    fl_pg_arg_str(&a, 2, kind);
    TX_BEGIN(c, k)
    if ((err = fl_pg_exec(k, ST_D_DEL, &a, "doc delete"))) goto out;
    if (k->changes == 0) err = FL_ERR_NOT_FOUND;
out:
    TX_END(c, k)
}

static fl_err_t pg_doc_list(fl_catalog_t *c, const char *arn, const char *kind_prefix,
                            char ***kinds, char ***jsons, size_t *n)
{
    char *hi = NULL;
    args_t a = { 0 };
    int st = bind_range(&a, ST_D_LIST, ST_D_LIST, kind_prefix, NULL, &hi);
    fl_pg_arg_str(&a, 1, arn);
    fl_err_t err = list_pairs(c, st, &a, INT_MAX, "doc list", kinds, jsons, n);
    free(hi);
    return err;
}

/* ---- maintenance leases and runs ---- */

static fl_err_t lease_write(fl_catalog_t *c, int which, const char *arn, const char *type, const char *owner,
                            int64_t now_ms, int64_t until_ms, const char *what, int *changed)
{
    args_t a = { 0 };
    bool frees = which == ST_M_FREE || which == ST_M_FREE_OWNER;
    if (which != ST_M_FREE_OWNER) fl_pg_arg_str(&a, 1, arn);
    if (which == ST_M_CLAIM) fl_pg_arg_str(&a, 2, type);
    fl_pg_arg_str(&a, 3, owner);
    if (!frees) {
        fl_pg_arg_i64(&a, 4, now_ms);
        fl_pg_arg_i64(&a, 5, until_ms);
    }
    TX_BEGIN(c, k)
    if ((err = fl_pg_exec(k, which, &a, what))) goto out;
    if (changed) *changed = (int)k->changes;
    if (k->changes == 0 && !frees) err = which == ST_M_CLAIM ? FL_ERR_CONFLICT : FL_ERR_NOT_FOUND;
out:
    TX_END(c, k)
}

static fl_err_t pg_maint_claim(fl_catalog_t *c, const char *arn, const char *type, const char *owner,
                               int64_t now_ms, int64_t lease_ms)
{
    if (!owner || !*owner) return FL_ERR_INVALID;
    return lease_write(c, ST_M_CLAIM, arn, type, owner, now_ms, now_ms + lease_ms, "maintenance claim", NULL);
}

static fl_err_t pg_maint_heartbeat(fl_catalog_t *c, const char *arn, const char *owner, int64_t now_ms,
                                   int64_t lease_ms)
{
    return lease_write(c, ST_M_BEAT, arn, NULL, owner, now_ms, now_ms + lease_ms, "maintenance heartbeat", NULL);
}

static fl_err_t pg_maint_release(fl_catalog_t *c, const char *arn, const char *owner)
{
    return lease_write(c, ST_M_FREE, arn, NULL, owner, 0, 0, "maintenance release", NULL);
}

static fl_err_t pg_maint_release_owner(fl_catalog_t *c, const char *owner, int *freed)
{
    if (freed) *freed = 0;
    if (!owner || !*owner) return FL_ERR_INVALID;
    return lease_write(c, ST_M_FREE_OWNER, NULL, NULL, owner, 0, 0, "maintenance release all", freed);
}

static fl_err_t pg_maint_run_add(fl_catalog_t *c, fl_maint_run_t *r, const char *job_doc)
{
    args_t a = { 0 };
    char kind[96];
    fl_pg_arg_str(&a, 1, r->table_arn);
    fl_pg_arg_str(&a, 2, r->type);
    fl_pg_arg_str(&a, 3, r->owner);
    fl_pg_arg_i64(&a, 4, r->start_ms);
    fl_pg_arg_i64(&a, 5, r->end_ms);
    fl_pg_arg_str(&a, 6, r->status);
    const int64_t nums[] = { r->files_in, r->bytes_in, r->files_out, r->bytes_out, r->snapshots_removed,
                             r->objects_removed, r->commits };
    for (int i = 0; i < 7; i++) fl_pg_arg_i64(&a, 7 + i, nums[i]);
    fl_pg_arg_str(&a, 14, r->message);
    TX_BEGIN(c, k)
    if ((err = fl_pg_row(k, ST_R_INS, &a, "maintenance run insert"))) goto out;
    r->id = fl_pg_col_i64(k, 0, 0);
    args_t p = { 0 };
    fl_pg_arg_str(&p, 1, r->table_arn);
    fl_pg_arg_i64(&p, 2, FL_MAINT_RUNS_KEPT - 1);
    if ((err = fl_pg_exec(k, ST_R_PRUNE, &p, "maintenance run prune"))) goto out;
    if (job_doc) {
        args_t d = { 0 };
        snprintf(kind, sizeof kind, "maintenance-job:%s", r->type);
        fl_pg_arg_str(&d, 1, r->table_arn);
        fl_pg_arg_str(&d, 2, kind);
        fl_pg_arg_str(&d, 3, job_doc);
        err = fl_pg_exec(k, ST_D_PUT, &d, "maintenance job status");
    }
out:
    TX_END(c, k)
}

static void row_run(const fl_conn_t *k, int i, void *out)
{
    fl_maint_run_t *r = out;
    r->id = fl_pg_col_i64(k, i, 0);
    fl_pg_col_copy(k, i, 1, r->table_arn, sizeof r->table_arn);
    fl_pg_col_copy(k, i, 2, r->type, sizeof r->type);
    fl_pg_col_copy(k, i, 3, r->owner, sizeof r->owner);
    r->start_ms = fl_pg_col_i64(k, i, 4);
    r->end_ms = fl_pg_col_i64(k, i, 5);
    fl_pg_col_copy(k, i, 6, r->status, sizeof r->status);
    r->files_in = fl_pg_col_i64(k, i, 7);
    r->bytes_in = fl_pg_col_i64(k, i, 8);
    r->files_out = fl_pg_col_i64(k, i, 9);
    r->bytes_out = fl_pg_col_i64(k, i, 10);
    r->snapshots_removed = fl_pg_col_i64(k, i, 11);
    r->objects_removed = fl_pg_col_i64(k, i, 12);
    r->commits = fl_pg_col_i64(k, i, 13);
    fl_pg_col_copy(k, i, 14, r->message, sizeof r->message);
}

static fl_err_t pg_maint_runs(fl_catalog_t *c, const char *arn, int64_t before_id, int max,
                              fl_maint_run_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (max < 1 || max > 1000) return FL_ERR_INVALID;
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, arn);
    fl_pg_arg_i64(&a, 2, before_id > 0 ? before_id : INT64_MAX);
    fl_pg_arg_i64(&a, 3, max);
    return list_rows(c, ST_R_LIST, &a, max, sizeof **out, row_run, "maintenance runs", (void **)out, n, NULL);
}

/* ---- identities ---- */

/* One write statement (a's arguments) in a transaction; *changes gets the rows changed. */
static fl_err_t write_args(fl_catalog_t *c, int which, const args_t *a, const char *what, int64_t *changes)
{
    TX_BEGIN(c, k)
    if ((err = fl_pg_exec(k, which, a, what))) goto out;
    if (changes) *changes = k->changes;
out:
    TX_END(c, k)
}

static void row_principal(const fl_conn_t *k, int r, void *out)
{
    fl_iam_principal_t *p = out;
    memset(p, 0, sizeof *p);
    fl_pg_col_copy(k, r, 0, p->account, sizeof p->account);
    fl_pg_col_copy(k, r, 1, p->kind, sizeof p->kind);
    fl_pg_col_copy(k, r, 2, p->name, sizeof p->name);
    fl_pg_col_copy(k, r, 3, p->arn, sizeof p->arn);
    fl_pg_col_copy(k, r, 4, p->id, sizeof p->id);
    p->created_ms = fl_pg_col_i64(k, r, 5);
    p->doc = fl_pg_col_strdup(k, r, 6);
}

static fl_err_t pg_principal_create(fl_catalog_t *c, fl_iam_principal_t *p)
{
    args_t a = { 0 };
    int64_t ch = 0;
    p->created_ms = fl_now_ms();
    fl_pg_arg_str(&a, 1, p->account);
    fl_pg_arg_str(&a, 2, p->kind);
    fl_pg_arg_str(&a, 3, p->name);
    fl_pg_arg_str(&a, 4, p->arn);
    fl_pg_arg_str(&a, 5, p->id);
    fl_pg_arg_i64(&a, 6, p->created_ms);
    fl_pg_arg_str(&a, 7, p->doc ? p->doc : "");
    fl_err_t err = write_args(c, ST_P_INS, &a, "principal create", &ch);
    return err ? err : ch ? FL_OK : FL_ERR_EXISTS;
}

static fl_err_t pg_principal_get(fl_catalog_t *c, const char *account, const char *kind, const char *name,
                                 fl_iam_principal_t *out)
{
    fl_conn_t *k = fl_pg_get(c->pg);
    if (!k) return FL_ERR_INTERNAL;
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, account);
    fl_pg_arg_str(&a, 2, kind);
    fl_pg_arg_str(&a, 3, name);
    fl_err_t err = fl_pg_row(k, ST_P_GET, &a, "principal get");
    if (!err) row_principal(k, 0, out);
    fl_pg_put(c->pg, k);
    return err;
}

static fl_err_t pg_principal_list(fl_catalog_t *c, const char *account, const char *kind,
                                  fl_iam_principal_t **out, size_t *n)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, account);
    fl_pg_arg_str(&a, 2, kind);
    return list_rows(c, ST_P_LIST, &a, FL_IAM_MAX_LIST, sizeof **out, row_principal, "principal list",
                     (void **)out, n, NULL);
}

static fl_err_t pg_principal_delete(fl_catalog_t *c, const char *account, const char *kind, const char *name)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, account);
    fl_pg_arg_str(&a, 2, kind);
    fl_pg_arg_str(&a, 3, name);
    TX_BEGIN(c, k)
    err = fl_pg_row(k, ST_P_HASDEPS, &a, "principal deps");
    if (err == FL_OK) { err = FL_ERR_NOT_EMPTY; goto out; }
    if (err != FL_ERR_NOT_FOUND) goto out;
    if ((err = fl_pg_exec(k, ST_P_DEL, &a, "principal delete"))) goto out;
    if (k->changes == 0) err = FL_ERR_NOT_FOUND;
out:
    TX_END(c, k)
}

static void row_key(const fl_conn_t *k, int r, void *out)
{
    fl_iam_key_t *key = out;
    memset(key, 0, sizeof *key);
    fl_pg_col_copy(k, r, 0, key->akid, sizeof key->akid);
    fl_pg_col_copy(k, r, 1, key->account, sizeof key->account);
    fl_pg_col_copy(k, r, 2, key->kind, sizeof key->kind);
    fl_pg_col_copy(k, r, 3, key->name, sizeof key->name);
    fl_pg_col_copy(k, r, 4, key->secret, sizeof key->secret);
    fl_pg_col_copy(k, r, 5, key->status, sizeof key->status);
    key->created_ms = fl_pg_col_i64(k, r, 6);
    key->last_used_ms = fl_pg_col_i64(k, r, 7);
    key->expires_ms = fl_pg_col_i64(k, r, 8);
    fl_pg_col_copy(k, r, 9, key->token_hash, sizeof key->token_hash);
    fl_pg_col_copy(k, r, 10, key->session_name, sizeof key->session_name);
    key->session_policy = fl_pg_col_strdup(k, r, 11);
}

static fl_err_t pg_key_create(fl_catalog_t *c, fl_iam_key_t *key)
{
    args_t a = { 0 };
    int64_t ch = 0;
    key->created_ms = fl_now_ms();
    fl_pg_arg_str(&a, 1, key->akid);
    fl_pg_arg_str(&a, 2, key->account);
    fl_pg_arg_str(&a, 3, key->kind);
    fl_pg_arg_str(&a, 4, key->name);
    fl_pg_arg_str(&a, 5, key->secret);
    fl_pg_arg_str(&a, 6, key->status[0] ? key->status : "Active");
    fl_pg_arg_i64(&a, 7, key->created_ms);
    fl_pg_arg_i64(&a, 8, key->expires_ms);
    fl_pg_arg_str(&a, 9, key->token_hash);
    fl_pg_arg_str(&a, 10, key->session_name);
    fl_pg_arg_str(&a, 11, key->session_policy ? key->session_policy : "");
    fl_err_t err = write_args(c, ST_K_INS, &a, "key create", &ch);
    return err ? err : ch ? FL_OK : FL_ERR_EXISTS;
}

static fl_err_t pg_key_get(fl_catalog_t *c, const char *akid, fl_iam_key_t *out)
{
    fl_conn_t *k = fl_pg_get(c->pg);
    if (!k) return FL_ERR_INTERNAL;
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, akid);
    fl_err_t err = fl_pg_row(k, ST_K_GET, &a, "key get");
    if (!err) row_key(k, 0, out);
    fl_pg_put(c->pg, k);
    return err;
}

static fl_err_t pg_key_list(fl_catalog_t *c, const char *account, const char *kind, const char *name,
                            fl_iam_key_t **out, size_t *n)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, account);
    fl_pg_arg_str(&a, 2, kind);
    fl_pg_arg_str(&a, 3, name);
    return list_rows(c, ST_K_LIST, &a, FL_IAM_MAX_LIST, sizeof **out, row_key, "key list", (void **)out, n, NULL);
}

static fl_err_t pg_key_set_status(fl_catalog_t *c, const char *akid, const char *status)
{
    args_t a = { 0 };
    int64_t ch = 0;
    fl_pg_arg_str(&a, 1, akid);
    fl_pg_arg_str(&a, 2, status);
    fl_err_t err = write_args(c, ST_K_STATUS, &a, "key status", &ch);
    return err ? err : ch ? FL_OK : FL_ERR_NOT_FOUND;
}

static fl_err_t pg_key_touch(fl_catalog_t *c, const char *akid, int64_t now_ms)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, akid);
    fl_pg_arg_i64(&a, 2, now_ms);
    return write_args(c, ST_K_TOUCH, &a, "key touch", NULL);
}

static fl_err_t pg_key_delete(fl_catalog_t *c, const char *akid)
{
    args_t a = { 0 };
    int64_t ch = 0;
    fl_pg_arg_str(&a, 1, akid);
    fl_err_t err = write_args(c, ST_K_DEL, &a, "key delete", &ch);
    return err ? err : ch ? FL_OK : FL_ERR_NOT_FOUND;
}

static fl_err_t pg_key_prune(fl_catalog_t *c, int64_t now_ms)
{
    args_t a = { 0 };
    fl_pg_arg_i64(&a, 1, now_ms);
    return write_args(c, ST_K_PRUNE, &a, "key prune", NULL);
}

static fl_err_t pg_iam_policy_put(fl_catalog_t *c, const char *account, const char *kind, const char *name,
                                  const char *policy_name, const char *doc)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, account);
    fl_pg_arg_str(&a, 2, kind);
    fl_pg_arg_str(&a, 3, name);
    fl_pg_arg_str(&a, 4, policy_name);
    fl_pg_arg_str(&a, 5, doc);
    return write_args(c, ST_IP_PUT, &a, "iam policy put", NULL);
}

static fl_err_t pg_iam_policy_delete(fl_catalog_t *c, const char *account, const char *kind, const char *name,
                                     const char *policy_name)
{
    args_t a = { 0 };
    int64_t ch = 0;
    fl_pg_arg_str(&a, 1, account);
    fl_pg_arg_str(&a, 2, kind);
    fl_pg_arg_str(&a, 3, name);
    fl_pg_arg_str(&a, 4, policy_name);
    fl_err_t err = write_args(c, ST_IP_DEL, &a, "iam policy delete", &ch);
    return err ? err : ch ? FL_OK : FL_ERR_NOT_FOUND;
}

static fl_err_t pg_iam_policy_list(fl_catalog_t *c, const char *account, const char *kind, const char *name,
                                   const char *policy_name, char ***names, char ***docs, size_t *n)
{
    args_t a = { 0 };
    fl_pg_arg_str(&a, 1, account);
    fl_pg_arg_str(&a, 2, kind);
    fl_pg_arg_str(&a, 3, name);
    if (policy_name) fl_pg_arg_str(&a, 4, policy_name);
    fl_err_t err = list_pairs(c, policy_name ? ST_IP_GET : ST_IP_LIST, &a, FL_IAM_MAX_LIST, "iam policy list", names,
                              docs, n);
    if (!err && policy_name && *n == 0) err = FL_ERR_NOT_FOUND;
    return err;
}

static const fl_catalog_ops_t pg_ops = {
    .name = "postgresql",
    .close = pg_close,
    FL_CATALOG_OPS(FL_CATALOG_OP_INIT_pg)
};
