/* Catalog store: table buckets, namespaces, tables and views, and the small
 * JSON documents attached to them (policies, maintenance configuration,
 * encryption, tags). The S3 Tables control plane and the Iceberg REST catalog
 * are two views of these rows.
 *
 * Two backends with one schema and one behaviour (catalog_int.h):
 * - embedded: SQLite (WAL, versioned migrations) in DATA_DIR/catalog.db;
 * - scale-out: PostgreSQL (libpq, base/pg.h), shared by several floe serve
 *   nodes, given as a postgresql:// URL.
 * A table's pointer (metadata_location, version_token) moves only through a
 * compare-and-swap on version_token, in one transaction (SQLite: BEGIN
 * IMMEDIATE; PostgreSQL: UPDATE ... WHERE version_token = $expected), so
 * exactly one of two racing commits wins, whichever node they come from.
 * Thread-safe; calls block.
 *
 * Errors beyond each call's own: FL_ERR_CONFLICT the store was busy and
 * nothing was written (retry); FL_ERR_INTERNAL the store could not be reached
 * and nothing was written (PostgreSQL); FL_ERR_IO any other failure, and for a
 * write whose connection was lost while it committed, an outcome that could
 * not be determined. */
#ifndef FL_META_CATALOG_H
#define FL_META_CATALOG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "auth/arn.h"
#include "base/err.h"

typedef struct fl_catalog fl_catalog_t;

/* Opens (creating and migrating) the catalog: a postgresql:// (or
 * postgres://) URL, else the path of a SQLite file. NULL on error (logged). */
fl_catalog_t *fl_catalog_open(const char *where);
void fl_catalog_close(fl_catalog_t *c);
/* Whether where names a PostgreSQL database (a URL) rather than a file. */
bool fl_catalog_is_url(const char *where);
/* "sqlite" or "postgresql". */
const char *fl_catalog_backend(const fl_catalog_t *c);
/* FL_OK when the store answers now (for /health); never blocks long. */
fl_err_t fl_catalog_ping(fl_catalog_t *c);

/* Change signals between the processes sharing a store (the nodes on one
 * PostgreSQL): after a write that other processes cache (topic "iam": users,
 * keys, policies), the writer signals the topic, and every process watching it
 * has its fn(ud) called soon after, on a thread of the store's, also when the
 * store connection behind the watch was re-made (signals may have been lost
 * meanwhile). topic: [a-z_], a caller's constant. With SQLite (one process
 * serves a file) both are no-ops and *out is NULL. A watch is ended by
 * fl_catalog_unwatch (NULL ignored) before the catalog closes; fn is not
 * called after it returns. Any thread; signal blocks on the store. */
typedef struct fl_catalog_watch fl_catalog_watch_t;
typedef void (*fl_catalog_changed_fn)(void *ud);
fl_err_t fl_catalog_signal(fl_catalog_t *c, const char *topic);
fl_err_t fl_catalog_watch(fl_catalog_t *c, const char *topic, fl_catalog_changed_fn fn, void *ud,
                          fl_catalog_watch_t **out);
fl_err_t fl_catalog_unwatch(fl_catalog_t *c, fl_catalog_watch_t *w);
/* *out: write transactions this process began on the store so far (PostgreSQL;
 * SQLite, where signals are no-ops: 0). A signaller compares two readings to
 * skip a signal when nothing was written. Any thread. */
fl_err_t fl_catalog_write_count(fl_catalog_t *c, uint64_t *out);

#define FL_NAME_MAX 256
#define FL_LOC_MAX 2048

typedef struct fl_tbucket {
    char name[64];
    char arn[FL_ARN_MAX];
    char owner[64];            /* account id */
    char id[40];               /* uuid */
    int64_t created_ms;
} fl_tbucket_t;

typedef struct fl_namespace {
    char bucket[64];
    char name[FL_NAME_MAX];
    char id[40];
    char owner[64];
    char created_by[64];
    int64_t created_ms;
    char *properties;          /* JSON object text (owned; "{}" when none) */
} fl_namespace_t;

typedef struct fl_table {
    char bucket[64];
    char ns[FL_NAME_MAX];
    char name[FL_NAME_MAX];
    char id[40];                          /* uuid; also the tail of the table ARN */
    char arn[FL_ARN_MAX];
    char type[16];                        /* "customer" */
    char format[16];                      /* "ICEBERG" */
    char kind[8];                         /* "table" or "view" */
    char warehouse[FL_LOC_MAX];           /* "s3://{warehouse-bucket}" */
    char metadata_location[FL_LOC_MAX];   /* "" when none yet */
    char version_token[40];
    char owner[64];
    char created_by[64];
    char modified_by[64];
    int64_t created_ms;
    int64_t modified_ms;
} fl_table_t;

/* ---- table buckets ---- */
fl_err_t fl_catalog_bucket_create(fl_catalog_t *c, fl_tbucket_t *b);   /* fills id, created_ms; FL_ERR_EXISTS */
fl_err_t fl_catalog_bucket_get(fl_catalog_t *c, const char *name, fl_tbucket_t *out); /* FL_ERR_NOT_FOUND */
/* Buckets whose name starts with prefix and sorts after `after` (NULL = start), at most max;
 * *more says whether more follow. *out malloc'd (free()). Every list: max < 1 is FL_ERR_INVALID. */
fl_err_t fl_catalog_bucket_list(fl_catalog_t *c, const char *prefix, const char *after, int max,
                                fl_tbucket_t **out, size_t *n, bool *more);
/* FL_ERR_NOT_FOUND, FL_ERR_NOT_EMPTY (namespaces remain). Deletes its attached documents. */
fl_err_t fl_catalog_bucket_delete(fl_catalog_t *c, const char *name);

/* ---- namespaces (single level) ---- */
fl_err_t fl_catalog_ns_create(fl_catalog_t *c, fl_namespace_t *ns);  /* fills id, created_ms; FL_ERR_EXISTS, FL_ERR_NO_BUCKET */
fl_err_t fl_catalog_ns_get(fl_catalog_t *c, const char *bucket, const char *name, fl_namespace_t *out);
fl_err_t fl_catalog_ns_list(fl_catalog_t *c, const char *bucket, const char *prefix, const char *after,
                            int max, fl_namespace_t **out, size_t *n, bool *more);
/* Replaces the properties JSON object. FL_ERR_NOT_FOUND. */
fl_err_t fl_catalog_ns_set_properties(fl_catalog_t *c, const char *bucket, const char *name,
                                      const char *properties_json);
fl_err_t fl_catalog_ns_delete(fl_catalog_t *c, const char *bucket, const char *name); /* FL_ERR_NOT_EMPTY */
void fl_namespace_free(fl_namespace_t *ns);          /* frees properties, not ns */
void fl_namespaces_free(fl_namespace_t *ns, size_t n);

/* ---- tables and views (kind "table" / "view") ---- */
/* Creates a row (fills id if empty, version_token, created/modified). FL_ERR_EXISTS (a table or
 * view of that name exists), FL_ERR_NOT_FOUND (no namespace), FL_ERR_NO_BUCKET. Empty fields
 * default: arn "{bucket arn}/table/{id}", type "customer", format "ICEBERG", kind "table",
 * modified_by = created_by. */
fl_err_t fl_catalog_table_create(fl_catalog_t *c, fl_table_t *t);
fl_err_t fl_catalog_table_get(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                              fl_table_t *out);                     /* FL_ERR_NOT_FOUND */
/* The table bucket `bucket` and its table or view (ns, name) in one read (one
 * round trip: a request's bucket check and its table row). FL_ERR_NOT_FOUND
 * when there is no such bucket; else FL_OK, b filled, and *found says whether
 * the table row exists (t filled only then). Any thread. */
fl_err_t fl_catalog_bucket_table_get(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                                     fl_tbucket_t *b, fl_table_t *t, bool *found);
fl_err_t fl_catalog_table_get_by_arn(fl_catalog_t *c, const char *arn, fl_table_t *out);
/* The table or view whose warehouse is "s3://NAME", in any table bucket (warehouses are unique). */
fl_err_t fl_catalog_table_get_by_warehouse(fl_catalog_t *c, const char *warehouse, fl_table_t *out);
/* Tables (or views, by kind) in bucket, optionally in one namespace (ns NULL = all), name prefix,
 * ordered by (namespace, name), after the pair (after_ns, after_name) (NULLs = start). */
fl_err_t fl_catalog_table_list(fl_catalog_t *c, const char *bucket, const char *ns, const char *kind,
                               const char *prefix, const char *after_ns, const char *after_name,
                               int max, fl_table_t **out, size_t *n, bool *more);

/* Destructive and pointer-moving calls name a table by (bucket, ns, name) and
 * may pin the row the caller checked: expect_id (NULL = don't check) must be the
 * id of the row that has that name now, else FL_ERR_NOT_FOUND (the table was
 * renamed or dropped and the name may belong to another one); expect_token (NULL
 * = don't check) its version_token, else FL_ERR_CONFLICT. The check and the
 * write are one transaction. */

/* One pointer move: if the table's version_token equals expect_token, set
 * metadata_location and a new version_token (written to new_token_out, 40 bytes).
 * FL_ERR_CONFLICT on a token mismatch, FL_ERR_NOT_FOUND if the table is gone. */
typedef struct fl_table_swap {
    const char *bucket, *ns, *name;
    const char *expect_id;
    const char *expect_token;
    const char *new_location;
    const char *modified_by;
    char new_token_out[40];
} fl_table_swap_t;
/* Applies every swap or none, in one transaction (multi-table commits). On failure every
 * new_token_out is "". modified_by NULL keeps the previous one. */
fl_err_t fl_catalog_table_swap(fl_catalog_t *c, fl_table_swap_t *swaps, size_t n);

/* Renames/moves (new namespace must exist). expect_id, expect_token as above. FL_ERR_EXISTS,
 * FL_ERR_NOT_FOUND, FL_ERR_CONFLICT. */
fl_err_t fl_catalog_table_rename(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                                 const char *new_ns, const char *new_name, const char *expect_id,
                                 const char *expect_token);
/* Deletes the row (and its attached documents). expect_id, expect_token as above. */
fl_err_t fl_catalog_table_delete(fl_catalog_t *c, const char *bucket, const char *ns, const char *name,
                                 const char *expect_id, const char *expect_token);

/* ---- attached documents: (resource ARN, kind) -> JSON text ----
 * kinds: "policy", "maintenance:icebergCompaction", "maintenance:icebergSnapshotManagement",
 * "maintenance:icebergUnreferencedFileRemoval", "encryption", "tags", "storage-class", ... */
fl_err_t fl_catalog_doc_put(fl_catalog_t *c, const char *arn, const char *kind, const char *json);
/* *json_out malloc'd; FL_ERR_NOT_FOUND when absent. */
fl_err_t fl_catalog_doc_get(fl_catalog_t *c, const char *arn, const char *kind, char **json_out);
fl_err_t fl_catalog_doc_delete(fl_catalog_t *c, const char *arn, const char *kind); /* FL_ERR_NOT_FOUND */
/* All documents of arn whose kind starts with kind_prefix: parallel arrays, malloc'd. */
fl_err_t fl_catalog_doc_list(fl_catalog_t *c, const char *arn, const char *kind_prefix,
                             char ***kinds, char ***jsons, size_t *n);

/* ---- maintenance: job leases and run records ----
 * One lease row per table (maintenance_jobs, keyed by table ARN), so that at
 * most one job runs on a table at a time across every node sharing the
 * catalog store. A claim takes the row when it is free (no owner) or its lease
 * has expired (a crashed or stuck node), in one transaction; the holder
 * extends it with heartbeats and frees it when the job ends. Every run is one
 * row of maintenance_runs (newest FL_MAINT_RUNS_KEPT per table are kept).
 * Both go with the table's row when it is deleted. */
#define FL_MAINT_RUNS_KEPT 200

/* Claims arn's lease for owner running job type until now_ms + lease_ms.
 * FL_OK: claimed; FL_ERR_CONFLICT: an unexpired lease is held, by another
 * owner or by this one for another job (or the store was busy: try later). */
fl_err_t fl_catalog_maint_claim(fl_catalog_t *c, const char *arn, const char *type, const char *owner,
                                int64_t now_ms, int64_t lease_ms);
/* Extends owner's lease to now_ms + lease_ms. FL_ERR_NOT_FOUND: owner no
 * longer holds it (it expired and another claimed it): stop the job. */
fl_err_t fl_catalog_maint_heartbeat(fl_catalog_t *c, const char *arn, const char *owner, int64_t now_ms,
                                    int64_t lease_ms);
/* Frees the lease if owner holds it (else nothing happens): its row goes, so
 * leases taken on names that come and go (warehouse claims) leave nothing. */
fl_err_t fl_catalog_maint_release(fl_catalog_t *c, const char *arn, const char *owner);
/* Frees every lease owner holds (freed: how many). For a node starting up:
 * a lease its previous process held when it died (SIGKILL, crash) names no
 * running job, and would otherwise block the table until it expires. Only
 * the one process that is this owner may call it. */
fl_err_t fl_catalog_maint_release_owner(fl_catalog_t *c, const char *owner, int *freed);

typedef struct fl_maint_run {
    int64_t id;                        /* filled by fl_catalog_maint_run_add */
    char table_arn[FL_ARN_MAX];
    char type[40];                     /* icebergCompaction, icebergSnapshotManagement, ... */
    char owner[128];                   /* the node that ran it */
    int64_t start_ms, end_ms;
    char status[16];                   /* Successful, Failed, Disabled, Cancelled */
    int64_t files_in, bytes_in, files_out, bytes_out;   /* compaction: data files rewritten */
    int64_t snapshots_removed, objects_removed;         /* expiry, file removal */
    int64_t commits;
    char message[512];                 /* failure message, or a note ("" when none) */
} fl_maint_run_t;

/* Records a finished run (fills r->id) and, when job_doc is not NULL, writes
 * it as the table's "maintenance-job:{type}" document (what
 * GetTableMaintenanceJobStatus reads), in one transaction. */
fl_err_t fl_catalog_maint_run_add(fl_catalog_t *c, fl_maint_run_t *r, const char *job_doc);
/* arn's runs, newest first, with id < before_id (0 = from the newest), at
 * most max (1..1000). *out malloc'd (free()). */
fl_err_t fl_catalog_maint_runs(fl_catalog_t *c, const char *arn, int64_t before_id, int max,
                               fl_maint_run_t **out, size_t *n);

/* ---- identities: principals, access keys, inline policies ----
 * Rows keyed by (account, kind, name): kind "user" or "role" (a role's doc is
 * its trust policy; a user's is ""). Access keys are rows keyed by access key
 * id: kind "root" (the account's root), "user" (name = the user) or
 * "session" (AssumeRole credentials: name = the role, expires_ms, the SHA-256
 * of the session token in token_hash, the session policy). The secret column
 * holds what fl_iam_seal (catalog/iam.h) made of the secret, never the secret itself.
 * Inline policies are (account, kind, name, policy_name) -> JSON text; a
 * policy_name starting with "arn:" is an attached managed policy (doc = its
 * ARN's row: kind "policy", doc = the document). Plain portable SQL, mirrored
 * by the PostgreSQL backend. */
#define FL_IAM_MAX_LIST 1000   /* rows one identity list returns */

typedef struct fl_iam_principal {
    char account[40];
    char kind[8];              /* "user", "role", "policy" (managed policy) */
    char name[128];
    char arn[FL_ARN_MAX];
    char id[40];
    int64_t created_ms;
    char *doc;                 /* owned; trust policy / managed policy document; "" for users */
} fl_iam_principal_t;

typedef struct fl_iam_key {
    char akid[64];
    char account[40];
    char kind[8];              /* "root", "user", "session" */
    char name[128];            /* user or role name; "" for root */
    char secret[256];          /* sealed secret (fl_iam_seal) */
    char status[16];           /* "Active" or "Inactive" ("" = Active on create) */
    int64_t created_ms, last_used_ms;
    int64_t expires_ms;        /* 0 = never */
    char token_hash[72];       /* sessions: hex SHA-256 of the session token; else "" */
    char session_name[72];
    char *session_policy;      /* owned; "" when none */
} fl_iam_key_t;

fl_err_t fl_catalog_principal_create(fl_catalog_t *c, fl_iam_principal_t *p); /* fills created_ms; FL_ERR_EXISTS */
fl_err_t fl_catalog_principal_get(fl_catalog_t *c, const char *account, const char *kind, const char *name,
                                  fl_iam_principal_t *out); /* FL_ERR_NOT_FOUND; out->doc owned */
/* Every principal of kind in account, by name (at most FL_IAM_MAX_LIST). */
fl_err_t fl_catalog_principal_list(fl_catalog_t *c, const char *account, const char *kind,
                                   fl_iam_principal_t **out, size_t *n);
/* FL_ERR_NOT_FOUND; FL_ERR_NOT_EMPTY while keys or policies remain (IAM's DeleteConflict). */
fl_err_t fl_catalog_principal_delete(fl_catalog_t *c, const char *account, const char *kind, const char *name);
void fl_iam_principals_free(fl_iam_principal_t *p, size_t n);

fl_err_t fl_catalog_key_create(fl_catalog_t *c, fl_iam_key_t *k);      /* fills created_ms; FL_ERR_EXISTS */
fl_err_t fl_catalog_key_get(fl_catalog_t *c, const char *akid, fl_iam_key_t *out); /* FL_ERR_NOT_FOUND */
fl_err_t fl_catalog_key_list(fl_catalog_t *c, const char *account, const char *kind, const char *name,
                             fl_iam_key_t **out, size_t *n);
fl_err_t fl_catalog_key_set_status(fl_catalog_t *c, const char *akid, const char *status); /* FL_ERR_NOT_FOUND */
/* Records a use (last_used_ms only moves forward). */
fl_err_t fl_catalog_key_touch(fl_catalog_t *c, const char *akid, int64_t now_ms);
fl_err_t fl_catalog_key_delete(fl_catalog_t *c, const char *akid);     /* FL_ERR_NOT_FOUND */
/* Deletes session keys that expired before now_ms. */
fl_err_t fl_catalog_key_prune(fl_catalog_t *c, int64_t now_ms);
void fl_iam_keys_free(fl_iam_key_t *k, size_t n);

fl_err_t fl_catalog_iam_policy_put(fl_catalog_t *c, const char *account, const char *kind, const char *name,
                                   const char *policy_name, const char *doc);
fl_err_t fl_catalog_iam_policy_delete(fl_catalog_t *c, const char *account, const char *kind, const char *name,
                                      const char *policy_name); /* FL_ERR_NOT_FOUND */
/* The policies of (account, kind, name): one (FL_ERR_NOT_FOUND when absent) when policy_name
 * is given, else all, by name. Parallel malloc'd arrays of malloc'd strings. */
fl_err_t fl_catalog_iam_policy_list(fl_catalog_t *c, const char *account, const char *kind, const char *name,
                                    const char *policy_name, char ***names, char ***docs, size_t *n);

#endif
