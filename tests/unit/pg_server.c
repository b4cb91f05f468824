/* See pg_server.h. */
#include "pg_server.h"
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char script[512], dir[64], base_url[256];
static int state; /* 0 untried, 1 running, -1 unavailable */
static int ndb;

static void stop_server(void)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "'%s' stop '%s'", script, dir);
    if (system(cmd) != 0) fprintf(stderr, "could not stop the test PostgreSQL in %s\n", dir);
}

bool fl_test_pg_ready(void)
{
    if (state) return state > 0;
    state = -1;
    /* __FILE__ is tests/unit/pg_server.c under the source root */
    snprintf(script, sizeof script, "%s", __FILE__);
    char *p = strstr(script, "tests/unit/pg_server.c");
    if (!p) return false;
    snprintf(p, sizeof script - (size_t)(p - script), "scripts/pg-test-server.sh");
    snprintf(dir, sizeof dir, "/tmp/floe-pg-XXXXXX");
    if (!mkdtemp(dir)) return false;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "'%s' start '%s'", script, dir);
    FILE *f = popen(cmd, "r");
    if (!f) return false;
    if (!fgets(base_url, sizeof base_url, f)) base_url[0] = 0;
    int rc = pclose(f);
    base_url[strcspn(base_url, "\n")] = 0;
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 3) {
        printf("SKIP pg_* tests: no PostgreSQL server binaries (apt-get install postgresql)\n");
        rmdir(dir);
        return false;
    }
    if (rc != 0 || strncmp(base_url, "postgresql://", 13) != 0) {
        fprintf(stderr, "the test PostgreSQL did not start (see %s/server.log)\n", dir);
        return false;
    }
    atexit(stop_server);
    state = 1;
    return true;
}

bool fl_test_pg_fresh_db(char *out, size_t n)
{
    if (!fl_test_pg_ready()) return false;
    PGconn *pc = PQconnectdb(base_url);
    bool ok = PQstatus(pc) == CONNECTION_OK;
    char name[32], sql[96];
    snprintf(name, sizeof name, "unit_%d_%d", (int)getpid(), ndb++);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    if (ok) {
        PGresult *r = PQexec(pc, sql);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok) fprintf(stderr, "%s: %s", sql, PQresultErrorMessage(r));
        PQclear(r);
    }
    PQfinish(pc);
    const char *slash = strrchr(base_url, '/');
    snprintf(out, n, "%.*s/%s", (int)(slash - base_url), base_url, name);
    return ok;
}

bool fl_test_pg_restart(void)
{
    if (state <= 0) return false;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "'%s' restart '%s'", script, dir);
    return system(cmd) == 0;
}
