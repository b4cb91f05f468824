/* The one SQLite layer: a pool of connections to one database file, each
 * with every statement of the caller's table prepared once
 * (SQLITE_PREPARE_PERSISTENT), versioned migrations, and write transactions.
 * Used by the catalog store (meta/sqlite.c) and the fs object store's index
 * (store/fs.c).
 *
 * The file runs in WAL mode with synchronous=FULL (a commit is on disk when
 * it returns) unless the caller asks for NORMAL. The schema is versioned with
 * PRAGMA user_version and an append-only list of migrations; a file newer
 * than the caller's list is refused.
 *
 * Threads: any thread may call; a connection is used by one thread at a time
 * (fl_sqlite_get .. fl_sqlite_put). A read is one statement on an idle
 * connection, so it sees one consistent snapshot. Writers take an in-process
 * mutex and then BEGIN IMMEDIATE, so they queue on a futex rather than in
 * SQLite's sleeping busy handler; busy_timeout still guards against other
 * processes holding the file.
 *
 * Errors, the same for every user: SQLITE_BUSY / SQLITE_LOCKED (another
 * process held the file past the timeout; nothing was written) is
 * FL_ERR_CONFLICT, which callers may retry; anything else FL_ERR_IO, with the
 * connection's `full` flag set when the cause was a full disk (SQLITE_FULL or
 * ENOSPC) so that a caller can free space and retry. Each failure is logged
 * once with the caller's label and what was being done, never with bound
 * values. */
#ifndef FL_BASE_SQLITE_H
#define FL_BASE_SQLITE_H
#include <stdbool.h>
#include <sqlite3.h>
#include "base/err.h"

typedef struct fl_sqlite_cfg {
    const char *label;                 /* "catalog", "store": prefix of log lines */
    const char *path;                  /* the database file (created if missing) */
    const char *const *migrations;     /* migration i brings user_version from i to i+1 */
    int n_migrations;
    const char *const *statements;     /* prepared on every connection; index = the caller's enum */
    int n_statements;
    bool sync_normal;                  /* synchronous=NORMAL instead of FULL (not durable at commit) */
    bool foreign_keys;                 /* PRAGMA foreign_keys=ON */
    int busy_timeout_ms;               /* wait for another process's lock; 0 = 30 s */
} fl_sqlite_cfg_t;

typedef struct fl_sqlite fl_sqlite_t;

/* A pooled connection: st[i] is the caller's statement i. */
typedef struct fl_sqlite_conn {
    sqlite3 *db;
    sqlite3_stmt **st;
    bool in_tx;
    bool full;                         /* the last error was a full disk; the caller clears it */
    struct fl_sqlite_conn *next;
    const fl_sqlite_t *owner;
} fl_sqlite_conn_t;

/* Opens (creating and migrating) the database. cfg's arrays must outlive the
 * handle. NULL on failure (logged). */
fl_sqlite_t *fl_sqlite_open(const fl_sqlite_cfg_t *cfg);
void fl_sqlite_close(fl_sqlite_t *s);

/* An idle connection, or a new one; NULL on failure (logged). */
fl_sqlite_conn_t *fl_sqlite_get(fl_sqlite_t *s);
/* Returns a connection to the pool; resets any statement left running (no
 * read snapshot stays open while idle). NULL is ignored. A transaction still
 * open is rolled back. */
void fl_sqlite_put(fl_sqlite_t *s, fl_sqlite_conn_t *k);

/* Write transactions: the in-process writer mutex, then BEGIN IMMEDIATE. */
fl_err_t fl_sqlite_begin(fl_sqlite_t *s, fl_sqlite_conn_t *k);
/* Commits when err is FL_OK, else rolls back; returns the outcome (a failed
 * COMMIT is rolled back and reported). No-op returning err when no
 * transaction is open. Releases the writer mutex. */
fl_err_t fl_sqlite_end(fl_sqlite_t *s, fl_sqlite_conn_t *k, fl_err_t err);

/* Steps a bound statement expected to finish without rows; resets it. */
fl_err_t fl_sqlite_done(fl_sqlite_conn_t *k, sqlite3_stmt *st, const char *what);
/* Steps a statement expecting at most one row: FL_OK with the row current
 * (the caller resets the statement), FL_ERR_NOT_FOUND on none (reset here). */
fl_err_t fl_sqlite_row(fl_sqlite_conn_t *k, sqlite3_stmt *st, const char *what);
/* The fl_err_t for a SQLite result code (see above); logs it with what. */
fl_err_t fl_sqlite_err(fl_sqlite_conn_t *k, int rc, const char *what);

/* Binding and column helpers. Text is bound SQLITE_STATIC: it must outlive
 * the statement's run. NULL binds SQL NULL. */
void fl_sqlite_bind_str(sqlite3_stmt *st, int i, const char *s);
/* Copies column i as text into out[n] ("" for NULL), truncating. */
void fl_sqlite_col_copy(sqlite3_stmt *st, int i, char *out, size_t n);
/* Column i as a new string ("" for NULL). */
char *fl_sqlite_col_strdup(sqlite3_stmt *st, int i);
#endif
