/* Private to meta/: the catalog store's statements, in the one text both
 * backends run where SQLite and PostgreSQL agree (numbered "?N" parameters;
 * base/pg.c rewrites them to "$N"). postgres.c overrides the few that differ
 * (row locks, RETURNING the new id, the conditional pointer swap). Names
 * compare bytewise in both (SQLite BINARY, PostgreSQL COLLATE "C" columns).
 * Each backend's schema migrations stay in its own file, one list each. */
#ifndef FL_META_CATALOG_SQL_H
#define FL_META_CATALOG_SQL_H

#define B_COLS "name, arn, owner, id, created_ms"
#define N_COLS "bucket, name, id, owner, created_by, created_ms, properties"
#define T_COLS "bucket, namespace, name, id, arn, type, format, kind, warehouse," \
               " metadata_location, version_token, owner, created_by, modified_by," \
               " created_ms, modified_ms"
/* the table columns (as T_COLS) and then the bucket's (as B_COLS) of ST_BT_GET's join */
#define BT_COLS "t.bucket, t.namespace, t.name, t.id, t.arn, t.type, t.format, t.kind, t.warehouse," \
                " t.metadata_location, t.version_token, t.owner, t.created_by, t.modified_by," \
                " t.created_ms, t.modified_ms, b.name, b.arn, b.owner, b.id, b.created_ms"
#define BT_TABLE_COLS 16                           /* BT_COLS: where the bucket's columns start */
#define KIND_OK " AND (kind = ?9 OR ?9 IS NULL)"   /* typed by its first use (PostgreSQL) */

enum {
    ST_B_INS, ST_B_GET, ST_B_LIST_GE, ST_B_LIST_GT, ST_B_HASNS, ST_B_DEL,
    ST_N_INS, ST_N_GET, ST_N_LIST_GE, ST_N_LIST_GT, ST_N_PROPS, ST_N_HASTBL, ST_N_DEL,
    ST_T_INS, ST_T_GET, ST_T_GET_ARN, ST_T_GET_WH, ST_T_LIST1_GE, ST_T_LIST1_GT, ST_T_LISTN_GE, ST_T_LISTN_GT,
    ST_BT_GET, ST_T_TOKEN, ST_T_SWAP, ST_T_RENAME, ST_T_DEL,
    ST_D_PUT, ST_D_GET, ST_D_DEL, ST_D_DEL_ARN, ST_D_LIST,
    ST_P_INS, ST_P_GET, ST_P_LIST, ST_P_HASDEPS, ST_P_DEL,
    ST_K_INS, ST_K_GET, ST_K_LIST, ST_K_STATUS, ST_K_TOUCH, ST_K_DEL, ST_K_PRUNE,
    ST_IP_PUT, ST_IP_GET, ST_IP_LIST, ST_IP_DEL,
    ST_M_CLAIM, ST_M_BEAT, ST_M_FREE, ST_M_FREE_OWNER, ST_M_DEL_ARN, ST_R_INS, ST_R_PRUNE, ST_R_LIST, ST_R_DEL_ARN,
    ST_COUNT
};

/* Bind numbering: ?1 bucket/arn, ?2 namespace, ... as each function documents.
 * List statements: ?5 lower bound, ?6 upper bound, ?7 limit, ?8 prefix, ?9 kind. */
static const char *const fl_catalog_sql[ST_COUNT] = {
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
    /* a bucket and one of its tables in one read: no table row gives NULL table columns */
    [ST_BT_GET] = "SELECT " BT_COLS " FROM table_buckets b LEFT JOIN tables t"
                  " ON t.bucket = b.name AND t.namespace = ?2 AND t.name = ?3 WHERE b.name = ?1",
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
    /* identities: ?1 account, ?2 kind, ?3 name */
    [ST_P_INS] = "INSERT INTO iam_principals(account, kind, name, arn, id, created_ms, doc)"
                 " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
    [ST_P_GET] = "SELECT account, kind, name, arn, id, created_ms, doc FROM iam_principals"
                 " WHERE account = ?1 AND kind = ?2 AND name = ?3",
    [ST_P_LIST] = "SELECT account, kind, name, arn, id, created_ms, doc FROM iam_principals"
                  " WHERE account = ?1 AND kind = ?2 ORDER BY name",
    [ST_P_HASDEPS] = "SELECT 1 FROM iam_keys WHERE account = ?1 AND kind = ?2 AND name = ?3"
                     " UNION ALL SELECT 1 FROM iam_policies WHERE account = ?1 AND kind = ?2 AND name = ?3",
    [ST_P_DEL] = "DELETE FROM iam_principals WHERE account = ?1 AND kind = ?2 AND name = ?3",
    [ST_K_INS] = "INSERT INTO iam_keys(akid, account, kind, name, secret, status, created_ms, last_used_ms,"
                 " expires_ms, token_hash, session_name, session_policy)"
                 " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8, ?9, ?10, ?11) ON CONFLICT DO NOTHING",
    [ST_K_GET] = "SELECT akid, account, kind, name, secret, status, created_ms, last_used_ms, expires_ms,"
                 " token_hash, session_name, session_policy FROM iam_keys WHERE akid = ?1",
    [ST_K_LIST] = "SELECT akid, account, kind, name, secret, status, created_ms, last_used_ms, expires_ms,"
                  " token_hash, session_name, session_policy FROM iam_keys"
                  " WHERE account = ?1 AND kind = ?2 AND name = ?3 ORDER BY created_ms, akid",
    [ST_K_STATUS] = "UPDATE iam_keys SET status = ?2 WHERE akid = ?1",
    [ST_K_TOUCH] = "UPDATE iam_keys SET last_used_ms = ?2 WHERE akid = ?1 AND last_used_ms < ?2",
    [ST_K_DEL] = "DELETE FROM iam_keys WHERE akid = ?1",
    [ST_K_PRUNE] = "DELETE FROM iam_keys WHERE expires_ms > 0 AND expires_ms < ?1",
    [ST_IP_PUT] = "INSERT INTO iam_policies(account, kind, name, policy_name, doc) VALUES(?1, ?2, ?3, ?4, ?5)"
                  " ON CONFLICT(account, kind, name, policy_name) DO UPDATE SET doc = excluded.doc",
    [ST_IP_GET] = "SELECT policy_name, doc FROM iam_policies WHERE account = ?1 AND kind = ?2 AND name = ?3"
                  " AND policy_name = ?4",
    [ST_IP_LIST] = "SELECT policy_name, doc FROM iam_policies WHERE account = ?1 AND kind = ?2 AND name = ?3"
                   " ORDER BY policy_name",
    [ST_IP_DEL] = "DELETE FROM iam_policies WHERE account = ?1 AND kind = ?2 AND name = ?3 AND policy_name = ?4",
    /* ?1 arn, ?2 type, ?3 owner, ?4 now, ?5 lease until */
    [ST_M_CLAIM] = "INSERT INTO maintenance_jobs(table_arn, type, owner, claimed_ms, heartbeat_ms, lease_until_ms)"
                   " VALUES(?1, ?2, ?3, ?4, ?4, ?5) ON CONFLICT(table_arn) DO UPDATE SET type = excluded.type,"
                   " owner = excluded.owner, claimed_ms = excluded.claimed_ms, heartbeat_ms = excluded.heartbeat_ms,"
                   " lease_until_ms = excluded.lease_until_ms WHERE maintenance_jobs.owner = ''"
                   " OR maintenance_jobs.lease_until_ms <= excluded.claimed_ms",
    [ST_M_BEAT] = "UPDATE maintenance_jobs SET heartbeat_ms = ?4, lease_until_ms = ?5"
                  " WHERE table_arn = ?1 AND owner = ?3",
    [ST_M_FREE] = "DELETE FROM maintenance_jobs WHERE table_arn = ?1 AND owner = ?3",
    [ST_M_FREE_OWNER] = "DELETE FROM maintenance_jobs WHERE owner = ?3",
    [ST_M_DEL_ARN] = "DELETE FROM maintenance_jobs WHERE table_arn = ?1",
    [ST_R_INS] = "INSERT INTO maintenance_runs(table_arn, type, owner, start_ms, end_ms, status, files_in, bytes_in,"
                 " files_out, bytes_out, snapshots_removed, objects_removed, commits, message)"
                 " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    [ST_R_PRUNE] = "DELETE FROM maintenance_runs WHERE table_arn = ?1 AND id < (SELECT id FROM maintenance_runs"
                   " WHERE table_arn = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)",
    [ST_R_LIST] = "SELECT id, table_arn, type, owner, start_ms, end_ms, status, files_in, bytes_in, files_out,"
                  " bytes_out, snapshots_removed, objects_removed, commits, message FROM maintenance_runs"
                  " WHERE table_arn = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
    [ST_R_DEL_ARN] = "DELETE FROM maintenance_runs WHERE table_arn = ?1",
};

#endif
