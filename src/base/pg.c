/* The one PostgreSQL layer (see pg.h). */
#include "base/pg.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"

#define TEXTOID 25

typedef struct pg_stmt {
    char *sql;            /* "$N" form */
    int nparams;
    unsigned *types;      /* 0 = infer; TEXTOID for numbers the text skips */
    char name[16];
} pg_stmt_t;

struct fl_pg {
    fl_pg_cfg_t cfg;
    char *url;
    char *label;
    pg_stmt_t *st;
    pthread_mutex_t mu;   /* guards idle, total */
    pthread_cond_t cv;
    fl_pg_conn_t *idle;
    int total;
    int max;
    char setup[256];      /* SET ... run on every new connection */
    atomic_uint_fast64_t n_rt, n_prep, n_tx, n_conn;   /* fl_pg_stats */
};

#define COUNT(p, f) atomic_fetch_add_explicit(&(p)->f, 1, memory_order_relaxed)

void fl_pg_arg_str(fl_pg_args_t *a, int i, const char *s)
{
    if (i >= 1 && i <= FL_PG_MAX_ARGS) a->v[i - 1] = s;
}

void fl_pg_arg_i64(fl_pg_args_t *a, int i, int64_t v)
{
    if (i < 1 || i > FL_PG_MAX_ARGS) return;
    snprintf(a->num[i - 1], sizeof a->num[i - 1], "%" PRId64, v);
    a->v[i - 1] = a->num[i - 1];
}

/* "?N" -> "$N" outside quotes; records which numbers occur. */
static bool rewrite(const char *in, pg_stmt_t *out)
{
    size_t n = strlen(in);
    char *s = fl_malloc(n + 1);
    bool used[FL_PG_MAX_ARGS + 1] = { 0 };
    int max = 0;
    char q = 0;
    for (size_t i = 0; i <= n; i++) {
        char ch = in[i];
        if (q) { if (ch == q) q = 0; }
        else if (ch == '\'' || ch == '"') q = ch;
        else if (ch == '?' && in[i + 1] >= '0' && in[i + 1] <= '9') {
            int num = atoi(in + i + 1);
            if (num < 1 || num > FL_PG_MAX_ARGS) { free(s); return false; }
            used[num] = true;
            if (num > max) max = num;
            ch = '$';
        }
        s[i] = ch;
    }
    out->sql = s;
    out->nparams = max;
    out->types = fl_calloc((size_t)(max ? max : 1), sizeof *out->types);
    for (int i = 1; i <= max; i++) out->types[i - 1] = used[i] ? 0 : TEXTOID;
    return true;
}

/* The class of a failed result (see pg.h); logs it. */
static fl_err_t res_err(fl_pg_conn_t *k, const PGresult *r, const char *what)
{
    const char *label = k->owner->label;
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = r && PQresultErrorMessage(r)[0] ? PQresultErrorMessage(r) : PQerrorMessage(k->pc);
    size_t ml = strlen(msg);
    while (ml && (msg[ml - 1] == '\n' || msg[ml - 1] == ' ')) ml--;
    if (!state || PQstatus(k->pc) != CONNECTION_OK || !strncmp(state, "08", 2) || !strncmp(state, "57P", 3)) {
        fl_warn("%s: %s: connection lost: %.*s", label, what, (int)ml, msg);
        return FL_ERR_INTERNAL;
    }
    if (!strcmp(state, "40001") || !strcmp(state, "40P01") || !strcmp(state, "55P03") ||
        !strcmp(state, "57014") || !strncmp(state, "23", 2)) {
        fl_warn("%s: %s: busy (%s): %.*s", label, what, state, (int)ml, msg);
        return FL_ERR_CONFLICT;
    }
    if (!strncmp(state, "22", 2)) {
        fl_warn("%s: %s: value refused (%s): %.*s", label, what, state, (int)ml, msg);
        return FL_ERR_INVALID;
    }
    fl_error("%s: %s: %s: %.*s", label, what, state, (int)ml, msg);
    return FL_ERR_IO;
}

static bool lost(const fl_pg_conn_t *k, const PGresult *r)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    return PQstatus(k->pc) != CONNECTION_OK || !state || !strncmp(state, "08", 2) || !strncmp(state, "57P", 3);
}

static void notice(void *arg, const char *msg)
{
    fl_debug("%s: server: %s", (const char *)arg, msg);
}

static PGconn *connect_one(fl_pg_t *p, bool quiet)
{
    const char *kw[] = { "connect_timeout", "application_name", "keepalives_idle", "keepalives_interval",
                         "keepalives_count", "tcp_user_timeout", "client_encoding", "dbname", NULL };
    const char *vals[] = { "5", "floe", "10", "3", "3", "20000", "UTF8", p->url, NULL };
    COUNT(p, n_conn);
    PGconn *pc = PQconnectdbParams(kw, vals, 1);
    if (!pc || PQstatus(pc) != CONNECTION_OK) {
        if (!quiet) fl_error("%s: cannot connect to PostgreSQL: %s", p->label, pc ? PQerrorMessage(pc) : "out of memory");
        PQfinish(pc);
        return NULL;
    }
    PQsetNoticeProcessor(pc, notice, p->label);
    PGresult *r = PQexec(pc, p->setup);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok && !quiet) fl_error("%s: connection set-up: %s", p->label, PQresultErrorMessage(r));
    PQclear(r);
    if (!ok) { PQfinish(pc); return NULL; }
    return pc;
}

static void conn_clear(fl_pg_conn_t *k)
{
    PQclear(k->res);
    k->res = NULL;
    k->nrows = 0;
    k->changes = 0;
}

/* Replaces k's connection with a new one (prepared statements forgotten). */
static bool reconnect(fl_pg_conn_t *k)
{
    conn_clear(k);
    PQfinish(k->pc);
    k->pc = connect_one(k->owner, false);
    k->in_tx = false;
    k->begin_pending = false;
    memset(k->prepared, 0, (size_t)k->owner->cfg.n_statements * sizeof *k->prepared);
    return k->pc != NULL;
}

static fl_pg_conn_t *conn_new(fl_pg_t *p)
{
    PGconn *pc = connect_one(p, false);
    if (!pc) return NULL;
    fl_pg_conn_t *k = fl_calloc(1, sizeof *k);
    k->pc = pc;
    k->owner = p;
    k->prepared = fl_calloc((size_t)(p->cfg.n_statements ? p->cfg.n_statements : 1), sizeof *k->prepared);
    return k;
}

static void conn_free(fl_pg_conn_t *k)
{
    if (!k) return;
    conn_clear(k);
    PQfinish(k->pc);
    free(k->prepared);
    free(k);
}

/* Simple-protocol command without rows (BEGIN, COMMIT, SET ...). */
static fl_err_t command(fl_pg_conn_t *k, const char *sql, const char *what, PGresult **keep)
{
    conn_clear(k);
    COUNT(k->owner, n_rt);
    PGresult *r = PQexec(k->pc, sql);
    ExecStatusType s = PQresultStatus(r);
    fl_err_t err = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK ? FL_OK : res_err(k, r, what);
    if (keep && !err) *keep = r;
    else PQclear(r);
    return err;
}

static fl_err_t migrate(fl_pg_t *p, fl_pg_conn_t *k)
{
    fl_err_t err;
    char sql[512];
    PGresult *r = NULL;
    if ((err = command(k, "BEGIN", "migrate", NULL))) return err;
    snprintf(sql, sizeof sql,
             "SELECT pg_advisory_xact_lock(7193001);"
             "CREATE TABLE IF NOT EXISTS floe_schema(label TEXT PRIMARY KEY, version INTEGER NOT NULL);");
    if ((err = command(k, sql, "migrate", NULL))) goto out;
    const char *vals[1] = { p->label };
    r = PQexecParams(k->pc, "SELECT version FROM floe_schema WHERE label = $1", 1, NULL, vals, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) { err = res_err(k, r, "schema version"); goto out; }
    int have = PQntuples(r) ? atoi(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    r = NULL;
    if (have > p->cfg.n_migrations) {
        fl_error("%s: the database's schema (version %d) is newer than this floe (%d): refusing it", p->label,
                 have, p->cfg.n_migrations);
        err = FL_ERR_INVALID;
        goto out;
    }
    for (int i = have; i < p->cfg.n_migrations; i++) {
        snprintf(sql, sizeof sql, "migration %d", i + 1);
        if ((err = command(k, p->cfg.migrations[i], sql, NULL))) goto out;
    }
    if (have < p->cfg.n_migrations) {
        char v[16];
        snprintf(v, sizeof v, "%d", p->cfg.n_migrations);
        const char *a[2] = { p->label, v };
        r = PQexecParams(k->pc, "INSERT INTO floe_schema(label, version) VALUES($1, $2::integer)"
                                " ON CONFLICT(label) DO UPDATE SET version = excluded.version",
                         2, NULL, a, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) { err = res_err(k, r, "schema version"); goto out; }
        fl_info("%s: PostgreSQL schema at version %d (was %d)", p->label, p->cfg.n_migrations, have);
    }
out:
    PQclear(r);
    fl_err_t e2 = command(k, err ? "ROLLBACK" : "COMMIT", "migrate", NULL);
    return err ? err : e2;
}

fl_pg_t *fl_pg_open(const fl_pg_cfg_t *cfg)
{
    fl_pg_t *p = fl_calloc(1, sizeof *p);
    p->cfg = *cfg;
    p->url = fl_strdup(cfg->url);
    p->label = fl_strdup(cfg->label ? cfg->label : "pg");
    p->max = cfg->pool_max > 0 ? cfg->pool_max : FL_PG_POOL_MAX;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    snprintf(p->setup, sizeof p->setup,
             "SET client_min_messages = warning; SET statement_timeout = %d; SET lock_timeout = %d;"
             " SET idle_in_transaction_session_timeout = %d",
             cfg->statement_timeout_ms > 0 ? cfg->statement_timeout_ms : FL_PG_STATEMENT_TIMEOUT_MS,
             cfg->lock_timeout_ms > 0 ? cfg->lock_timeout_ms : FL_PG_LOCK_TIMEOUT_MS, FL_PG_IDLE_TX_TIMEOUT_MS);
    p->st = fl_calloc((size_t)(cfg->n_statements ? cfg->n_statements : 1), sizeof *p->st);
    for (int i = 0; i < cfg->n_statements; i++) {
        if (!cfg->statements[i] || !rewrite(cfg->statements[i], &p->st[i])) {
            fl_error("%s: statement %d is missing or numbers a parameter over %d", p->label, i, FL_PG_MAX_ARGS);
            fl_pg_close(p);
            return NULL;
        }
        snprintf(p->st[i].name, sizeof p->st[i].name, "fl%d", i);
    }
    fl_pg_conn_t *k = conn_new(p);
    if (!k) { fl_pg_close(p); return NULL; }
    p->total = 1;
    const char *enc = PQparameterStatus(k->pc, "server_encoding");
    if (!enc || (strcmp(enc, "UTF8") && strcmp(enc, "SQL_ASCII"))) {
        fl_error("%s: the database's encoding is %s: floe needs UTF8 (or SQL_ASCII)", p->label, enc ? enc : "unknown");
        goto fail;
    }
    if (migrate(p, k)) goto fail;
    fl_pg_put(p, k);
    return p;
fail:
    conn_free(k);
    p->total = 0;
    fl_pg_close(p);
    return NULL;
}

void fl_pg_close(fl_pg_t *p)
{
    if (!p) return;
    while (p->idle) {
        fl_pg_conn_t *k = p->idle;
        p->idle = k->next;
        conn_free(k);
    }
    for (int i = 0; p->st && i < p->cfg.n_statements; i++) {
        free(p->st[i].sql);
        free(p->st[i].types);
    }
    free(p->st);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->url);
    free(p->label);
    free(p);
}

fl_pg_conn_t *fl_pg_get(fl_pg_t *p)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += FL_PG_POOL_WAIT_MS / 1000;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->idle) {
            fl_pg_conn_t *k = p->idle;
            p->idle = k->next;
            k->next = NULL;
            pthread_mutex_unlock(&p->mu);
            return k;
        }
        if (p->total < p->max) break;
        if (pthread_cond_timedwait(&p->cv, &p->mu, &until) == ETIMEDOUT && !p->idle) {
            pthread_mutex_unlock(&p->mu);
            fl_warn("%s: no free PostgreSQL connection within %d ms (pool of %d)", p->label, FL_PG_POOL_WAIT_MS,
                    p->max);
            return NULL;
        }
    }
    p->total++;
    pthread_mutex_unlock(&p->mu);
    fl_pg_conn_t *k = conn_new(p);
    if (!k) {
        pthread_mutex_lock(&p->mu);
        p->total--;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    return k;
}

void fl_pg_put(fl_pg_t *p, fl_pg_conn_t *k)
{
    if (!k) return;
    if (k->in_tx) fl_pg_end(k, FL_ERR_INVALID);
    conn_clear(k);
    bool broken = !k->pc || PQstatus(k->pc) != CONNECTION_OK || PQtransactionStatus(k->pc) != PQTRANS_IDLE;
    pthread_mutex_lock(&p->mu);
    if (broken) {
        p->total--;
    } else {
        k->next = p->idle;
        p->idle = k;
    }
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    if (broken) conn_free(k);   /* PQfinish talks to the server: not under the pool's lock */
}

fl_err_t fl_pg_begin(fl_pg_conn_t *k)
{
    if (!k->pc && !reconnect(k)) return FL_ERR_INTERNAL;
    /* sent with the transaction's first statement (exec_first) */
    COUNT(k->owner, n_tx);
    k->xid = 0;
    k->in_tx = true;
    k->begin_pending = true;
    return FL_OK;
}

/* The outcome of transaction xid after its connection was lost during COMMIT. */
static fl_err_t resolve(fl_pg_t *p, int64_t xid)
{
    int64_t until = fl_mono_ms() + FL_PG_RESOLVE_MS;
    while (fl_mono_ms() < until) {
        PGconn *pc = connect_one(p, true);
        if (pc) {
            char x[24];
            snprintf(x, sizeof x, "%" PRId64, xid);
            const char *a[1] = { x };
            PGresult *r = PQexecParams(pc, "SELECT txid_status($1::bigint)", 1, NULL, a, NULL, NULL, 0);
            const char *s = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) && !PQgetisnull(r, 0, 0)
                          ? PQgetvalue(r, 0, 0) : "";
            const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
            /* "in the future": a crash lost the transaction's WAL, so also its commit record */
            if (state && !strcmp(state, "22023") && strstr(PQresultErrorMessage(r), "in the future")) s = "aborted";
            fl_err_t e = !strcmp(s, "committed") ? FL_OK : !strcmp(s, "aborted") ? FL_ERR_INTERNAL : FL_ERR_IO;
            bool pending = !strcmp(s, "in progress");
            PQclear(r);
            PQfinish(pc);
            if (!pending) {
                fl_warn("%s: a COMMIT whose connection was lost: %s", p->label,
                        e == FL_OK ? "it committed" : e == FL_ERR_INTERNAL ? "it did not commit" : "outcome unknown");
                return e;
            }
        }
        struct timespec ts = { 0, 250 * 1000000L };
        nanosleep(&ts, NULL);
    }
    fl_error("%s: a COMMIT whose connection was lost: outcome unknown", p->label);
    return FL_ERR_IO;
}

fl_err_t fl_pg_end(fl_pg_conn_t *k, fl_err_t err)
{
    k->commit_lost = false;
    if (!k->in_tx) return err;
    k->in_tx = false;
    if (k->begin_pending) {   /* no statement ran: nothing was sent, nothing to commit */
        k->begin_pending = false;
        return err;
    }
    if (err) {
        if (PQstatus(k->pc) == CONNECTION_OK) command(k, "ROLLBACK", "rollback", NULL);
        return err;
    }
    conn_clear(k);
    COUNT(k->owner, n_rt);
    PGresult *r = PQexec(k->pc, "COMMIT");
    ExecStatusType s = PQresultStatus(r);
    if (s == PGRES_COMMAND_OK && !strcmp(PQcmdStatus(r), "COMMIT")) err = FL_OK;
    else if (s == PGRES_COMMAND_OK) err = FL_ERR_CONFLICT;  /* "ROLLBACK": the transaction had failed */
    else if (lost(k, r)) {
        k->commit_lost = true;
        err = resolve(k->owner, k->xid);
    }
    else err = res_err(k, r, "commit");
    PQclear(r);
    return err;
}

static fl_err_t exec_once(fl_pg_conn_t *k, int st, const fl_pg_args_t *a, const char *what)
{
    fl_pg_t *p = k->owner;
    pg_stmt_t *s = &p->st[st];
    conn_clear(k);
    PGresult *r;
    if (!k->prepared[st]) {
        COUNT(p, n_rt);
        COUNT(p, n_prep);
        r = PQprepare(k->pc, s->name, s->sql, s->nparams, s->types);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            fl_err_t e = res_err(k, r, what);
            PQclear(r);
            return e;
        }
        PQclear(r);
        k->prepared[st] = true;
    }
    const char *vals[FL_PG_MAX_ARGS];
    for (int i = 0; i < s->nparams; i++) vals[i] = a ? a->v[i] : NULL;
    COUNT(p, n_rt);
    r = PQexecPrepared(k->pc, s->name, s->nparams, vals, NULL, NULL, 0);
    ExecStatusType rs = PQresultStatus(r);
    if (rs != PGRES_COMMAND_OK && rs != PGRES_TUPLES_OK) {
        fl_err_t e = res_err(k, r, what);
        PQclear(r);
        return e;
    }
    k->res = r;
    k->nrows = PQntuples(r);
    const char *ch = PQcmdTuples(r);
    k->changes = ch && *ch ? strtoll(ch, NULL, 10) : 0;
    return FL_OK;
}

/* A transaction's first statement: BEGIN, txid_current() and the statement
 * (prepared first if need be) in one round trip, as one pipeline. */
static fl_err_t exec_first(fl_pg_conn_t *k, int st, const fl_pg_args_t *a, const char *what)
{
    fl_pg_t *p = k->owner;
    pg_stmt_t *s = &p->st[st];
    conn_clear(k);
    k->begin_pending = false;
    bool prep = !k->prepared[st];
    const char *vals[FL_PG_MAX_ARGS];
    for (int i = 0; i < s->nparams; i++) vals[i] = a ? a->v[i] : NULL;
    COUNT(p, n_rt);
    if (prep) COUNT(p, n_prep);
    if (!PQenterPipelineMode(k->pc)) return res_err(k, NULL, what);
    bool sent = (!prep || PQsendPrepare(k->pc, s->name, s->sql, s->nparams, s->types)) &&
                PQsendQueryParams(k->pc, "BEGIN", 0, NULL, NULL, NULL, NULL, 0) &&
                PQsendQueryParams(k->pc, "SELECT txid_current()", 0, NULL, NULL, NULL, NULL, 0) &&
                PQsendQueryPrepared(k->pc, s->name, s->nparams, vals, NULL, NULL, 0) && PQpipelineSync(k->pc);
    if (!sent) return res_err(k, NULL, what);
    /* each query's results end with a NULL; then the sync point */
    fl_err_t err = FL_OK;
    int nq = prep ? 4 : 3;
    for (int q = 0; q < nq; q++) {
        PGresult *r = PQgetResult(k->pc);
        if (!r) {                                  /* the connection broke */
            if (!err) err = res_err(k, NULL, what);
            return err;
        }
        ExecStatusType rs = PQresultStatus(r);
        if (rs != PGRES_COMMAND_OK && rs != PGRES_TUPLES_OK) {
            if (!err && rs != PGRES_PIPELINE_ABORTED) err = res_err(k, r, what);
        } else if (q == nq - 2) {
            k->xid = PQntuples(r) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
        } else if (q == nq - 1 && !err) {
            k->res = r;
            k->nrows = PQntuples(r);
            const char *ch = PQcmdTuples(r);
            k->changes = ch && *ch ? strtoll(ch, NULL, 10) : 0;
            r = NULL;
        } else if (q == 0 && prep) {
            k->prepared[st] = true;
        }
        PQclear(r);
        if (PQstatus(k->pc) != CONNECTION_OK) return err ? err : res_err(k, NULL, what);
        while ((r = PQgetResult(k->pc))) PQclear(r);
    }
    PGresult *r = PQgetResult(k->pc);
    bool synced = r && PQresultStatus(r) == PGRES_PIPELINE_SYNC;
    PQclear(r);
    if (!synced || !PQexitPipelineMode(k->pc)) {
        if (!err) err = res_err(k, NULL, what);
        return err;
    }
    if (err) conn_clear(k);
    return err;
}

fl_err_t fl_pg_exec(fl_pg_conn_t *k, int st, const fl_pg_args_t *a, const char *what)
{
    if (!k->pc && !reconnect(k)) return FL_ERR_INTERNAL;
    bool first = k->begin_pending;
    fl_err_t err = first ? exec_first(k, st, a, what) : exec_once(k, st, a, what);
    /* outside a transaction, or as a transaction's first statement, a statement on a
     * cut connection changed nothing (an open transaction dies with its connection):
     * once more */
    if (err == FL_ERR_INTERNAL && (first || !k->in_tx) && reconnect(k)) {
        if (first) {
            k->in_tx = true;
            err = exec_first(k, st, a, what);
        } else {
            err = exec_once(k, st, a, what);
        }
    }
    return err;
}

fl_err_t fl_pg_row(fl_pg_conn_t *k, int st, const fl_pg_args_t *a, const char *what)
{
    fl_err_t err = fl_pg_exec(k, st, a, what);
    if (!err && k->nrows == 0) err = FL_ERR_NOT_FOUND;
    return err;
}

const char *fl_pg_col(const fl_pg_conn_t *k, int r, int c)
{
    if (!k->res || r >= k->nrows || c >= PQnfields(k->res)) return "";
    return PQgetvalue(k->res, r, c);
}

void fl_pg_col_copy(const fl_pg_conn_t *k, int r, int c, char *out, size_t n)
{
    fl_strlcpy(out, fl_pg_col(k, r, c), n);
}

char *fl_pg_col_strdup(const fl_pg_conn_t *k, int r, int c)
{
    return fl_strdup(fl_pg_col(k, r, c));
}

int64_t fl_pg_col_i64(const fl_pg_conn_t *k, int r, int c)
{
    return strtoll(fl_pg_col(k, r, c), NULL, 10);
}

void fl_pg_stats(fl_pg_t *p, fl_pg_stats_t *out)
{
    out->round_trips = atomic_load_explicit(&p->n_rt, memory_order_relaxed);
    out->prepares = atomic_load_explicit(&p->n_prep, memory_order_relaxed);
    out->transactions = atomic_load_explicit(&p->n_tx, memory_order_relaxed);
    out->connects = atomic_load_explicit(&p->n_conn, memory_order_relaxed);
}

bool fl_pg_ping(fl_pg_t *p)
{
    fl_pg_conn_t *k = fl_pg_get(p);
    if (!k) return false;
    fl_err_t err = command(k, "SELECT 1", "ping", NULL);
    if (err == FL_ERR_INTERNAL && reconnect(k)) err = command(k, "SELECT 1", "ping", NULL);
    fl_pg_put(p, k);
    return err == FL_OK;
}

char *fl_pg_successor(const char *prefix)
{
    size_t n = prefix ? strlen(prefix) : 0;
    char *s = fl_malloc(n + FL_PG_HI_MAX + 8);
    memcpy(s, prefix ? prefix : "", n);
    while (n) {
        size_t i = n - 1;
        while (i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80) i--;
        const unsigned char *u = (const unsigned char *)s + i;
        size_t len = n - i;
        uint32_t cp;
        if (u[0] < 0x80) cp = u[0];
        else if ((u[0] & 0xe0) == 0xc0 && len == 2) cp = (uint32_t)(u[0] & 0x1f) << 6 | (u[1] & 0x3f);
        else if ((u[0] & 0xf0) == 0xe0 && len == 3)
            cp = (uint32_t)(u[0] & 0x0f) << 12 | (uint32_t)(u[1] & 0x3f) << 6 | (u[2] & 0x3f);
        else if ((u[0] & 0xf8) == 0xf0 && len == 4)
            cp = (uint32_t)(u[0] & 0x07) << 18 | (uint32_t)(u[1] & 0x3f) << 12 | (uint32_t)(u[2] & 0x3f) << 6 |
                 (u[3] & 0x3f);
        else { n = i; continue; }          /* not UTF-8: drop it (the server refuses it anyway) */
        n = i;
        if (cp >= 0x10ffff) continue;
        cp++;
        if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xe000;
        unsigned char *o = (unsigned char *)s + n;
        if (cp < 0x80) { o[0] = (unsigned char)cp; n += 1; }
        else if (cp < 0x800) { o[0] = (unsigned char)(0xc0 | cp >> 6); o[1] = (unsigned char)(0x80 | (cp & 0x3f)); n += 2; }
        else if (cp < 0x10000) {
            o[0] = (unsigned char)(0xe0 | cp >> 12); o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
            o[2] = (unsigned char)(0x80 | (cp & 0x3f)); n += 3;
        } else {
            o[0] = (unsigned char)(0xf0 | cp >> 18); o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
            o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f)); o[3] = (unsigned char)(0x80 | (cp & 0x3f)); n += 4;
        }
        s[n] = 0;
        return s;
    }
    /* no bound: U+10FFFF repeated past FL_PG_HI_MAX bytes */
    for (n = 0; n <= FL_PG_HI_MAX; n += 4) memcpy(s + n, "\xf4\x8f\xbf\xbf", 4);
    s[n] = 0;
    return s;
}

/* ---- change notifications ---- */

static bool channel_ok(const char *ch)
{
    size_t n = ch ? strlen(ch) : 0;
    if (n == 0 || n > 48) return false;
    for (size_t i = 0; i < n; i++)
        if (!((ch[i] >= 'a' && ch[i] <= 'z') || ch[i] == '_')) return false;
    return true;
}

fl_err_t fl_pg_notify(fl_pg_t *p, const char *channel)
{
    if (!channel_ok(channel)) return FL_ERR_INVALID;
    char sql[64];
    snprintf(sql, sizeof sql, "NOTIFY %s", channel);
    fl_pg_conn_t *k = fl_pg_get(p);
    if (!k) return FL_ERR_INTERNAL;
    fl_err_t err = command(k, sql, "notify", NULL);
    if (err == FL_ERR_INTERNAL && reconnect(k)) err = command(k, sql, "notify", NULL);
    fl_pg_put(p, k);
    return err;
}

struct fl_pg_listener {
    fl_pg_t *p;
    char sql[64];                      /* LISTEN channel */
    void (*fn)(void *ud);
    void *ud;
    int wake[2];                       /* fl_pg_unlisten writes a byte */
    pthread_t th;
};

/* A new listening connection, or NULL (quiet: the caller retries). */
static PGconn *listen_connect(fl_pg_listener_t *l)
{
    PGconn *pc = connect_one(l->p, true);
    if (!pc) return NULL;
    PGresult *r = PQexec(pc, l->sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok) { PQfinish(pc); return NULL; }
    return pc;
}

/* Waits up to ms for the socket fd (or -1) to be readable or the wake pipe;
 * false when woken to stop. */
static bool listen_wait(fl_pg_listener_t *l, int fd, int ms)
{
    struct pollfd f[2] = { { .fd = l->wake[0], .events = POLLIN }, { .fd = fd, .events = POLLIN } };
    int n = poll(f, fd >= 0 ? 2 : 1, ms);
    return !(n > 0 && (f[0].revents & POLLIN));
}

static void *listen_main(void *arg)
{
    fl_pg_listener_t *l = arg;
    PGconn *pc = NULL;
    int backoff = 100;
    bool up = true;
    for (;;) {
        if (!pc) {
            pc = listen_connect(l);
            if (!pc) {
                if (up) fl_warn("%s: change notifications lost (cannot LISTEN); retrying", l->p->label);
                up = false;
                if (!listen_wait(l, -1, backoff)) break;
                backoff = backoff * 2 > FL_PG_LISTEN_BACKOFF_MS ? FL_PG_LISTEN_BACKOFF_MS : backoff * 2;
                continue;
            }
            if (!up) fl_info("%s: change notifications back", l->p->label);
            up = true;
            backoff = 100;
            l->fn(l->ud);               /* what was sent while down is lost: "changed" */
        }
        if (!listen_wait(l, PQsocket(pc), 1000)) break;
        if (!PQconsumeInput(pc) || PQstatus(pc) != CONNECTION_OK) {
            PQfinish(pc);
            pc = NULL;
            continue;
        }
        bool any = false;
        for (PGnotify *n; (n = PQnotifies(pc)) != NULL; PQfreemem(n)) any = true;
        if (any) l->fn(l->ud);
    }
    PQfinish(pc);
    return NULL;
}

fl_pg_listener_t *fl_pg_listen(fl_pg_t *p, const char *channel, void (*fn)(void *ud), void *ud)
{
    if (!channel_ok(channel)) return NULL;
    fl_pg_listener_t *l = fl_calloc(1, sizeof *l);
    l->p = p;
    l->fn = fn;
    l->ud = ud;
    snprintf(l->sql, sizeof l->sql, "LISTEN %s", channel);
    if (pipe2(l->wake, O_CLOEXEC) != 0) {
        fl_error("%s: listener: pipe: %s", p->label, strerror(errno));
        free(l);
        return NULL;
    }
    if (pthread_create(&l->th, NULL, listen_main, l) != 0) {
        fl_error("%s: listener: cannot start its thread", p->label);
        close(l->wake[0]);
        close(l->wake[1]);
        free(l);
        return NULL;
    }
    return l;
}

void fl_pg_unlisten(fl_pg_listener_t *l)
{
    if (!l) return;
    ssize_t w;
    do w = write(l->wake[1], "x", 1); while (w < 0 && errno == EINTR);
    pthread_join(l->th, NULL);
    close(l->wake[0]);
    close(l->wake[1]);
    free(l);
}
