/* The one PostgreSQL layer (libpq), the scale-out twin of base/sqlite.h: a
 * bounded pool of connections to one database, the caller's statements
 * prepared once per connection, versioned migrations, write transactions,
 * and one error mapping. Used by the catalog store (meta/postgres.c).
 *
 * Statements are written in the SQLite dialect's numbered form "?N" so that
 * one text can serve both backends where the dialects agree; they are
 * rewritten to "$N" here (outside quotes). A parameter number that a
 * statement skips is declared text, so PostgreSQL need not infer it.
 * Parameters and results travel as text.
 *
 * Migrations: entry i brings the schema from version i to i+1, recorded in
 * floe_schema(label, version); they run in one transaction under an advisory
 * lock, so several nodes starting at once migrate exactly once. A database
 * newer than the caller's list is refused.
 *
 * Every connection runs with statement_timeout, lock_timeout and
 * idle_in_transaction_session_timeout set (the cfg's values, else the
 * defaults below), client_encoding UTF8, and TCP keepalives; the server's
 * encoding must be UTF8 or SQL_ASCII. Values in the URL override the
 * connection defaults (connect_timeout, keepalives, application_name).
 *
 * Threads: any thread may call; a connection is used by one thread at a time
 * (fl_pg_get .. fl_pg_put). At most pool_max connections exist; a caller
 * waits up to FL_PG_POOL_WAIT_MS for one.
 *
 * Errors, the same for every user:
 *   FL_ERR_CONFLICT  nothing was written and a retry may succeed: serialization
 *                    failure, deadlock, lock or statement timeout, a constraint
 *                    that a racing transaction broke
 *   FL_ERR_INVALID   the server refused a value (e.g. not valid UTF-8)
 *   FL_ERR_INTERNAL  the database could not be reached or the connection was
 *                    lost before COMMIT was sent: nothing was written
 *   FL_ERR_IO        anything else; from fl_pg_end, the connection was lost
 *                    while COMMIT was in flight and txid_status could not
 *                    tell the outcome: it is unknown
 * A connection lost outside a transaction (a restarted server, an idle
 * connection cut) is reconnected and the statement or BEGIN retried once, so
 * a restarted PostgreSQL costs no failed request. Each failure is logged once
 * with the caller's label and what was being done, never with bound values. */
#ifndef FL_BASE_PG_H
#define FL_BASE_PG_H
#include <stdbool.h>
#include <stdint.h>
#include <libpq-fe.h>
#include "base/err.h"

#define FL_PG_POOL_MAX 16              /* default connections per process */
#define FL_PG_POOL_WAIT_MS 10000       /* a caller waits this long for a free connection */
#define FL_PG_STATEMENT_TIMEOUT_MS 15000
#define FL_PG_LOCK_TIMEOUT_MS 5000
#define FL_PG_IDLE_TX_TIMEOUT_MS 60000
#define FL_PG_RESOLVE_MS 15000        /* how long a lost COMMIT's outcome is sought */
#define FL_PG_MAX_ARGS 20
#define FL_PG_LISTEN_BACKOFF_MS 5000  /* a lost listener connection is retried at most this far apart */

typedef struct fl_pg_cfg {
    const char *label;                 /* "catalog": prefix of log lines, schema version key */
    const char *url;                   /* postgresql://user:pw@host:port/db?... (libpq URI or key=value) */
    const char *const *migrations;     /* migration i brings version i to i+1 (may hold several statements) */
    int n_migrations;
    const char *const *statements;     /* "?N" numbered; index = the caller's enum */
    int n_statements;
    int pool_max;                      /* 0 = FL_PG_POOL_MAX */
    int statement_timeout_ms;          /* 0 = FL_PG_STATEMENT_TIMEOUT_MS */
    int lock_timeout_ms;               /* 0 = FL_PG_LOCK_TIMEOUT_MS */
} fl_pg_cfg_t;

typedef struct fl_pg fl_pg_t;

typedef struct fl_pg_conn {
    PGconn *pc;
    bool *prepared;                    /* per statement */
    bool in_tx;
    bool begin_pending;                /* fl_pg_begin's BEGIN goes with the first statement */
    int64_t xid;                       /* the open transaction's id (txid_current) */
    bool commit_lost;                  /* fl_pg_end: the connection died during COMMIT (the
                                          result is txid_status's; a caller that can check its
                                          own writes may overrule it) */
    PGresult *res;                     /* the last statement's rows (cleared by the next call) */
    int nrows;
    int64_t changes;                   /* rows the last statement inserted/updated/deleted */
    struct fl_pg_conn *next;
    fl_pg_t *owner;
} fl_pg_conn_t;

/* Statement arguments: v[i] is ?(i+1)'s text, NULL = SQL NULL. Strings are
 * not copied: they must outlive the statement's run. */
typedef struct fl_pg_args {
    const char *v[FL_PG_MAX_ARGS];
    char num[FL_PG_MAX_ARGS][24];
} fl_pg_args_t;
void fl_pg_arg_str(fl_pg_args_t *a, int i, const char *s);   /* i is 1-based, as ?i */
void fl_pg_arg_i64(fl_pg_args_t *a, int i, int64_t v);

/* Connects, checks the server, migrates. cfg's arrays must outlive the
 * handle. NULL on failure (logged). */
fl_pg_t *fl_pg_open(const fl_pg_cfg_t *cfg);
void fl_pg_close(fl_pg_t *p);

/* An idle connection, or a new one; NULL when none could be had (logged). */
fl_pg_conn_t *fl_pg_get(fl_pg_t *p);
/* Returns a connection (NULL ignored); an open transaction is rolled back,
 * a broken connection closed. */
void fl_pg_put(fl_pg_t *p, fl_pg_conn_t *k);

/* BEGIN (READ COMMITTED) and note the transaction id. Both are sent with the
 * transaction's first statement, in the same round trip (a pipeline), so a
 * write costs one round trip for its statements plus one for COMMIT; an
 * unreachable database shows there (FL_ERR_INTERNAL). A transaction that ran
 * no statement sends nothing. */
fl_err_t fl_pg_begin(fl_pg_conn_t *k);
/* Commits when err is FL_OK, else rolls back; returns the outcome. A
 * connection lost while COMMIT was in flight is resolved with txid_status
 * on a new connection: committed is FL_OK, aborted (or an id "in the future":
 * a crash lost the transaction's WAL) FL_ERR_INTERNAL, else FL_ERR_IO
 * (unknown); k->commit_lost is then set. After a crash an id whose WAL was
 * lost can be issued again, so a caller that can see its own writes should
 * check them. No-op returning err when no transaction is open. */
fl_err_t fl_pg_end(fl_pg_conn_t *k, fl_err_t err);

/* Runs statement st with a's arguments: the rows stay in k->res, k->nrows,
 * k->changes until the next call on k. */
fl_err_t fl_pg_exec(fl_pg_conn_t *k, int st, const fl_pg_args_t *a, const char *what);
/* fl_pg_exec expecting at most one row: FL_ERR_NOT_FOUND on none. */
fl_err_t fl_pg_row(fl_pg_conn_t *k, int st, const fl_pg_args_t *a, const char *what);

/* Row r, column c of the last result: text ("" for NULL), copied, int64. */
const char *fl_pg_col(const fl_pg_conn_t *k, int r, int c);
void fl_pg_col_copy(const fl_pg_conn_t *k, int r, int c, char *out, size_t n);
char *fl_pg_col_strdup(const fl_pg_conn_t *k, int r, int c);
int64_t fl_pg_col_i64(const fl_pg_conn_t *k, int r, int c);

/* Change notifications between processes on one database (LISTEN/NOTIFY).
 * channel: a lower-case identifier ([a-z_], at most 48 bytes), the caller's
 * constant. fl_pg_notify sends one notification (outside any transaction: a
 * caller notifies after its write committed); FL_ERR_INVALID for a bad
 * channel, else as fl_pg_exec. Any thread. */
fl_err_t fl_pg_notify(fl_pg_t *p, const char *channel);
/* Calls fn(ud) on a thread of its own whenever a notification on channel
 * arrives (several at once may give one call), and also whenever its own
 * connection was (re)made: notifications sent while it was down are lost, so
 * a listener must treat that as "changed". The listener keeps a connection of
 * its own beside the pool and reconnects with backoff up to
 * FL_PG_LISTEN_BACKOFF_MS. NULL for a bad channel or when no thread could be
 * started (logged). fl_pg_unlisten stops and frees it (joins the thread; fn
 * is not called after it returns); p must outlive it. */
typedef struct fl_pg_listener fl_pg_listener_t;
fl_pg_listener_t *fl_pg_listen(fl_pg_t *p, const char *channel, void (*fn)(void *ud), void *ud);
void fl_pg_unlisten(fl_pg_listener_t *l);

/* What this handle has cost the database since fl_pg_open (for /metrics and
 * bench/nodes.py). Any thread; the counters are relaxed atomics. */
typedef struct fl_pg_stats {
    uint64_t round_trips;    /* requests that waited for the server's answer (connection set-up excluded) */
    uint64_t prepares;       /* of which statement preparations (once per statement and connection) */
    uint64_t transactions;   /* write transactions begun */
    uint64_t connects;       /* connections opened (pool growth, reconnects, ping, COMMIT resolution) */
} fl_pg_stats_t;
void fl_pg_stats(fl_pg_t *p, fl_pg_stats_t *out);

/* Whether the database answers a trivial query now (for /health). */
bool fl_pg_ping(fl_pg_t *p);

/* The exclusive upper bound of the strings that start with prefix under
 * bytewise (C collation) order, as valid UTF-8: the prefix with its last code
 * point incremented (trailing U+10FFFF dropped). With no such bound (empty
 * prefix) a string that sorts after every name of at most FL_PG_HI_MAX bytes.
 * malloc'd. */
#define FL_PG_HI_MAX 4096
char *fl_pg_successor(const char *prefix);
#endif
