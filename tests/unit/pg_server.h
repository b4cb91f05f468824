/* A PostgreSQL server for unit tests (scripts/pg-test-server.sh): started on
 * first use, stopped at exit. */
#ifndef FL_TEST_PG_SERVER_H
#define FL_TEST_PG_SERVER_H
#include <stdbool.h>
#include <stddef.h>

/* Whether a server runs (starting it on first call). false when the server
 * binaries are absent (a SKIP line is printed once) or it failed to start. */
bool fl_test_pg_ready(void);
/* A URL naming a fresh, empty database on it (out[n]); false on failure. */
bool fl_test_pg_fresh_db(char *out, size_t n);
/* Restarts the server (immediate stop: connections are cut). */
bool fl_test_pg_restart(void);
#endif
