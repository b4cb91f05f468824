/* The one SQLite layer (see sqlite.h). */
#include "base/sqlite.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/log.h"
#include "base/mem.h"

#define BUSY_TIMEOUT_MS 30000

struct fl_sqlite {
    fl_sqlite_cfg_t cfg;
    char *path;
    pthread_mutex_t pool_mu;   /* guards idle */
    fl_sqlite_conn_t *idle;
    pthread_mutex_t write_mu;  /* held from BEGIN IMMEDIATE to COMMIT/ROLLBACK */
};

fl_err_t fl_sqlite_err(fl_sqlite_conn_t *k, int rc, const char *what)
{
    const char *label = k && k->owner ? k->owner->cfg.label : "sqlite";
    int base = rc & 0xff;
    if (k && (base == SQLITE_FULL || (k->db && sqlite3_system_errno(k->db) == ENOSPC))) k->full = true;
    if (base == SQLITE_BUSY || base == SQLITE_LOCKED) {
        fl_warn("%s: %s: database busy", label, what);
        return FL_ERR_CONFLICT;
    }
    fl_error("%s: %s: %s (%s)", label, what, k && k->db ? sqlite3_errmsg(k->db) : "", sqlite3_errstr(rc));
    return FL_ERR_IO;
}

fl_err_t fl_sqlite_done(fl_sqlite_conn_t *k, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    fl_err_t err = rc == SQLITE_DONE ? FL_OK : fl_sqlite_err(k, rc, what);
    sqlite3_reset(st);
    return err;
}

fl_err_t fl_sqlite_row(fl_sqlite_conn_t *k, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) return FL_OK;
    fl_err_t err = rc == SQLITE_DONE ? FL_ERR_NOT_FOUND : fl_sqlite_err(k, rc, what);
    sqlite3_reset(st);
    return err;
}

void fl_sqlite_bind_str(sqlite3_stmt *st, int i, const char *s)
{
    if (s) sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
    else sqlite3_bind_null(st, i);
}

void fl_sqlite_col_copy(sqlite3_stmt *st, int i, char *out, size_t n)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    fl_strlcpy(out, t ? (const char *)t : "", n);
}

char *fl_sqlite_col_strdup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return fl_strdup(t ? (const char *)t : "");
}

/* ---- connections ---- */

enum { TX_BEGIN, TX_COMMIT, TX_ROLLBACK, TX_N };
static const char *const tx_sql[TX_N] = { "BEGIN IMMEDIATE", "COMMIT", "ROLLBACK" };

static void conn_free(fl_sqlite_conn_t *k)
{
    if (!k) return;
    if (k->st)
        for (int i = 0; i < k->owner->cfg.n_statements + TX_N; i++) sqlite3_finalize(k->st[i]);
    free(k->st);
    sqlite3_close(k->db);
    free(k);
}

static fl_sqlite_conn_t *conn_open(fl_sqlite_t *s)
{
    fl_sqlite_conn_t *k = fl_calloc(1, sizeof *k);
    k->owner = s;
    int rc = sqlite3_open_v2(s->path, &k->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             NULL);
    if (rc != SQLITE_OK) {
        fl_error("%s: open %s: %s", s->cfg.label, s->path, k->db ? sqlite3_errmsg(k->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_busy_timeout(k->db, s->cfg.busy_timeout_ms > 0 ? s->cfg.busy_timeout_ms : BUSY_TIMEOUT_MS);
    char pragmas[96];
    snprintf(pragmas, sizeof pragmas, "PRAGMA synchronous=%s;%s", s->cfg.sync_normal ? "NORMAL" : "FULL",
             s->cfg.foreign_keys ? "PRAGMA foreign_keys=ON" : "");
    if ((rc = sqlite3_exec(k->db, pragmas, NULL, NULL, NULL)) != SQLITE_OK) {
        fl_sqlite_err(k, rc, "pragma");
        goto fail;
    }
    return k;
fail:
    conn_free(k);
    return NULL;
}

static bool conn_prepare(fl_sqlite_conn_t *k)
{
    const fl_sqlite_cfg_t *cfg = &k->owner->cfg;
    /* the caller's statements, then the transaction statements */
    k->st = fl_calloc((size_t)cfg->n_statements + TX_N, sizeof *k->st);
    for (int i = 0; i < cfg->n_statements + TX_N; i++) {
        const char *sql = i < cfg->n_statements ? cfg->statements[i] : tx_sql[i - cfg->n_statements];
        if (sqlite3_prepare_v3(k->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &k->st[i], NULL) != SQLITE_OK) {
            fl_error("%s: prepare \"%s\": %s", cfg->label, sql, sqlite3_errmsg(k->db));
            return false;
        }
    }
    return true;
}

static void reset_all(fl_sqlite_conn_t *k)
{
    for (int i = 0; i < k->owner->cfg.n_statements; i++)
        if (sqlite3_stmt_busy(k->st[i])) sqlite3_reset(k->st[i]);
}

fl_sqlite_conn_t *fl_sqlite_get(fl_sqlite_t *s)
{
    pthread_mutex_lock(&s->pool_mu);
    fl_sqlite_conn_t *k = s->idle;
    if (k) s->idle = k->next;
    pthread_mutex_unlock(&s->pool_mu);
    if (k) {
        k->full = false;
        return k;
    }
    k = conn_open(s);
    if (k && !conn_prepare(k)) {
        conn_free(k);
        k = NULL;
    }
    return k;
}

void fl_sqlite_put(fl_sqlite_t *s, fl_sqlite_conn_t *k)
{
    if (!k) return;
    if (k->in_tx) fl_sqlite_end(s, k, FL_ERR_IO);
    reset_all(k);
    pthread_mutex_lock(&s->pool_mu);
    k->next = s->idle;
    s->idle = k;
    pthread_mutex_unlock(&s->pool_mu);
}

/* ---- transactions ---- */

static int exec_sql(fl_sqlite_conn_t *k, const char *sql) { return sqlite3_exec(k->db, sql, NULL, NULL, NULL); }

/* Runs one of the prepared transaction statements; SQLITE_OK when done. */
static int tx_step(fl_sqlite_conn_t *k, int which)
{
    sqlite3_stmt *st = k->st[k->owner->cfg.n_statements + which];
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

fl_err_t fl_sqlite_begin(fl_sqlite_t *s, fl_sqlite_conn_t *k)
{
    pthread_mutex_lock(&s->write_mu);
    int rc = tx_step(k, TX_BEGIN);
    if (rc != SQLITE_OK) {
        pthread_mutex_unlock(&s->write_mu);
        return fl_sqlite_err(k, rc, "begin");
    }
    k->in_tx = true;
    return FL_OK;
}

fl_err_t fl_sqlite_end(fl_sqlite_t *s, fl_sqlite_conn_t *k, fl_err_t err)
{
    if (!k || !k->in_tx) return err;
    reset_all(k);
    if (!err) {
        int rc = tx_step(k, TX_COMMIT);
        if (rc != SQLITE_OK) err = fl_sqlite_err(k, rc, "commit");
    }
    if (err && !sqlite3_get_autocommit(k->db)) tx_step(k, TX_ROLLBACK);
    k->in_tx = false;
    pthread_mutex_unlock(&s->write_mu);
    return err;
}

/* ---- opening and migrating ---- */

static fl_err_t migrate(fl_sqlite_t *s, fl_sqlite_conn_t *k)
{
    fl_err_t err = FL_OK;
    sqlite3_stmt *st = NULL;
    int rc = exec_sql(k, "PRAGMA journal_mode=WAL");
    if (rc != SQLITE_OK) return fl_sqlite_err(k, rc, "journal_mode");
    if ((rc = exec_sql(k, "BEGIN IMMEDIATE")) != SQLITE_OK) return fl_sqlite_err(k, rc, "begin");
    rc = sqlite3_prepare_v2(k->db, "PRAGMA user_version", -1, &st, NULL);
    if (rc != SQLITE_OK || (rc = sqlite3_step(st)) != SQLITE_ROW) {
        err = fl_sqlite_err(k, rc, "user_version");
        goto out;
    }
    int version = sqlite3_column_int(st, 0);
    if (version > s->cfg.n_migrations || version < 0) {
        fl_error("%s: %s has schema %d, this build knows %d", s->cfg.label, s->path, version, s->cfg.n_migrations);
        err = FL_ERR_INVALID;
        goto out;
    }
    for (int v = version; v < s->cfg.n_migrations && !err; v++) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version=%d", v + 1);
        if ((rc = exec_sql(k, s->cfg.migrations[v])) != SQLITE_OK) err = fl_sqlite_err(k, rc, "migration");
        else if ((rc = exec_sql(k, sql)) != SQLITE_OK) err = fl_sqlite_err(k, rc, "user_version");
        else fl_info("%s: %s: schema %d -> %d", s->cfg.label, s->path, v, v + 1);
    }
    if (!err && (rc = exec_sql(k, "COMMIT")) != SQLITE_OK) err = fl_sqlite_err(k, rc, "commit");
out:
    sqlite3_finalize(st);
    if (!sqlite3_get_autocommit(k->db)) exec_sql(k, "ROLLBACK");
    return err;
}

fl_sqlite_t *fl_sqlite_open(const fl_sqlite_cfg_t *cfg)
{
    fl_sqlite_t *s = fl_calloc(1, sizeof *s);
    fl_sqlite_conn_t *k = NULL;
    s->cfg = *cfg;
    s->path = fl_strdup(cfg->path);
    pthread_mutex_init(&s->pool_mu, NULL);
    pthread_mutex_init(&s->write_mu, NULL);
    if (!sqlite3_threadsafe()) {
        fl_error("%s: SQLite was built without thread support", cfg->label);
        goto fail;
    }
    k = conn_open(s);
    if (!k || migrate(s, k) || !conn_prepare(k)) goto fail;
    fl_sqlite_put(s, k);
    return s;
fail:
    conn_free(k);
    fl_sqlite_close(s);
    return NULL;
}

void fl_sqlite_close(fl_sqlite_t *s)
{
    if (!s) return;
    while (s->idle) {
        fl_sqlite_conn_t *k = s->idle;
        s->idle = k->next;
        conn_free(k);
    }
    pthread_mutex_destroy(&s->pool_mu);
    pthread_mutex_destroy(&s->write_mu);
    free(s->path);
    free(s);
}
