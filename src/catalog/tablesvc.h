/* The table-bucket service: the one place that changes tables. It sits
 * between the catalog store (meta/catalog.h: rows and pointers) and the
 * object store (store/store.h: warehouses, metadata files) on one side and
 * its callers on the other: the S3 Tables control plane (api/tables.c), the
 * Iceberg REST catalog (api/rest.c) and, next, maintenance inside floe serve.
 *
 * A table's warehouse is its own bucket on floe's data plane, named like S3
 * Tables' ("{random}--table-s3"), holding metadata/ and data/. A commit writes
 * the new metadata file before the catalog pointer moves, so the pointer never
 * names a missing file.
 *
 * One service per process (cli/serve.c makes it at start and closes it after
 * the listeners stop); every call is thread-safe and may block on SQLite and
 * file I/O. Errors are fl_err_t classes, the same for every caller:
 *   FL_ERR_NOT_FOUND  the table (or, for a create, its namespace) does not exist
 *   FL_ERR_EXISTS     a table or view of that name exists already
 *   FL_ERR_CONFLICT   a requirement or version token no longer holds: retry
 *   FL_ERR_INVALID    the request is malformed (400)
 *   FL_ERR_IO         a pointer swap was attempted and failed: outcome unknown
 *   FL_ERR_INTERNAL   a file or store failed before anything changed
 *   anything else     failed before anything changed (memory, a size cap)
 * with, where a call takes one, a human message in a caller buffer. Front
 * doors map these to their own error shapes. */
#ifndef FL_CATALOG_TABLESVC_H
#define FL_CATALOG_TABLESVC_H
#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include "auth/arn.h"
#include "meta/catalog.h"
#include "store/store.h"

/* What the service stands on; copied by fl_tablesvc_open. The stores and the
 * scope's strings are borrowed and must outlive the service. */
typedef struct fl_tablesvc_cfg {
    fl_catalog_t *cat;            /* rows and pointers */
    fl_store_t *store;            /* the data plane's object store: warehouses live there */
    fl_arn_scope_t scope;         /* region, account id and ARN form of this server */
    /* New tables' locations (metadata "location", metadata files) as
     * oss://{warehouse} as OSS Tables hands them out, else s3://. Either
     * scheme is read and accepted everywhere (the same objects); the catalog
     * row keeps s3:// as the warehouse's identity. */
    bool oss_locations;
} fl_tablesvc_cfg_t;

typedef struct fl_tablesvc fl_tablesvc_t;

/* Makes the service (never NULL: small allocations abort). Main thread, at start. */
fl_tablesvc_t *fl_tablesvc_open(const fl_tablesvc_cfg_t *cfg);
/* Frees it; no call may be running. NULL is ignored. */
void fl_tablesvc_close(fl_tablesvc_t *s);
/* The configuration the service was opened with (for reads of rows the
 * service does not change: buckets, namespaces, documents). */
const fl_tablesvc_cfg_t *fl_tablesvc_cfg(const fl_tablesvc_t *s);

/* Creates a table: a fresh warehouse bucket, then (when metadata is non-NULL)
 * the first metadata file "metadata/00000-{uuid}.metadata.json" written from
 * it, then the catalog row (kind "table", format ICEBERG, type customer).
 * metadata is a complete Iceberg TableMetadata object (see iceberg/metadata.h)
 * whose "location" is set here to the warehouse URI. On failure nothing is
 * left behind and *why (static text) explains. FL_ERR_EXISTS, FL_ERR_NOT_FOUND
 * (namespace), FL_ERR_NO_BUCKET. */
fl_err_t fl_tablesvc_create(fl_tablesvc_t *s, const char *bucket, const char *ns,
                            const char *name, const char *principal, json_t *metadata,
                            fl_table_t *out, const char **why);

/* Writes metadata (serialised compactly) as a new file under the table's
 * warehouse: "metadata/{seq:05d}-{uuid}.metadata.json"; location_out
 * (FL_LOC_MAX) gets its s3:// URI. The file is durable when this returns. */
fl_err_t fl_tablesvc_write_metadata(fl_tablesvc_t *s, const fl_table_t *t, long seq,
                                    json_t *metadata, char *location_out);

/* The same with metadata already serialised (text, NUL-terminated). */
fl_err_t fl_tablesvc_write_metadata_text(fl_tablesvc_t *s, const fl_table_t *t, long seq,
                                         const char *text, char *location_out);

/* Deletes a metadata file that a commit wrote into t's warehouse and that no pointer
 * names (the commit lost its swap: the table changed or was dropped meanwhile).
 * FL_ERR_INVALID if location is not a metadata file of t's warehouse. */
fl_err_t fl_tablesvc_delete_metadata(fl_tablesvc_t *s, const fl_table_t *t, const char *location);

/* Reads and parses the metadata file at an s3:// location on floe's data plane.
 * *out is a new reference. FL_ERR_NOT_FOUND, FL_ERR_INVALID (not JSON). */
fl_err_t fl_tablesvc_read_metadata(fl_tablesvc_t *s, const char *location, json_t **out);

/* True if location lies inside the table's warehouse and names a metadata file
 * (".metadata.json" or ".metadata.json.gz"). */
bool fl_tablesvc_location_ok(const fl_table_t *t, const char *location);
/* "oss" or "s3": the scheme of the locations the service hands out (cfg.oss_locations). */
const char *fl_tablesvc_scheme(const fl_tablesvc_t *s);
/* The table's warehouse location as clients see it ("oss://{bucket}" or "s3://{bucket}"). */
void fl_tablesvc_warehouse_url(const fl_tablesvc_t *s, const fl_table_t *t, char out[FL_LOC_MAX]);

/* Drops the table t names, which must still be the row t was read from: the
 * delete matches its name and its id (FL_ERR_NOT_FOUND when the name now
 * belongs to another table or to none) and expect_token unless NULL
 * (FL_ERR_CONFLICT), in one transaction. Only once that row is gone and only
 * with purge, every object of t's warehouse and the bucket. Takes t's lock. */
fl_err_t fl_tablesvc_drop(fl_tablesvc_t *s, const fl_table_t *t, bool purge,
                          const char *expect_token);
/* Removes warehouse buckets created before created_before_ms that no table owns
 * (abandoned stage-creates, a crash between warehouse and row, a drop without
 * purge). Each is claimed first (fl_tablesvc_warehouse_claim), so that a
 * registerTable adopting it cannot land between the check and the purge;
 * one claimed by someone else is left for the next sweep. Returns how many. */
int fl_tablesvc_sweep(fl_tablesvc_t *s, int64_t created_before_ms);
/* Claims the warehouse bucket wb ("{uuid}--table-s3") that no table owns for
 * lease_ms, for whoever is about to act on it (the sweep that deletes it, a
 * registerTable that adopts it): a lease row in the catalog store (the
 * maintenance leases' table, keyed "warehouse:{wb}"), so claims exclude each
 * other across every node. owner (37 bytes) receives the claim's id.
 * FL_ERR_CONFLICT: someone else holds it (or the store was busy). Release
 * with fl_tablesvc_warehouse_release; a crashed holder's claim expires. */
fl_err_t fl_tablesvc_warehouse_claim(fl_tablesvc_t *s, const char *wb, int64_t lease_ms, char owner[37]);
void fl_tablesvc_warehouse_release(fl_tablesvc_t *s, const char *wb, const char *owner);

/* S3 Tables naming of namespaces and tables: 1-255 of [a-z0-9_], starting and
 * ending with a letter or digit. */
bool fl_tablesvc_name_ok(const char *name);
/* A new row's fixed fields for a table or view with a given id: its warehouse
 * "s3://{id}--table-s3", its ARN in this server's scope, owner, principal. */
void fl_tablesvc_row_init(fl_tablesvc_t *s, fl_table_t *t, const char *bucket, const char *ns, const char *name,
                          const char *id, bool view, const char *principal);
/* The warehouse bucket "{uuid}--table-s3" an s3:// location lies in: wb (64
 * bytes) and the uuid (37 bytes). False when location is not in one. */
bool fl_tablesvc_warehouse_of(const char *location, char *wb, char *id_out);

/* ---- loaded metadata ----
 * Parsed metadata and its serialisation are cached by metadata location (LRU,
 * refcounted entries, one lock), so loading an unchanged table reads no file
 * and does no JSON work. A held entry stays valid until released, whatever
 * the cache does meanwhile; its JSON is shared and must never be modified. */
typedef struct fl_tmeta fl_tmeta_t;
json_t *fl_tmeta_json(const fl_tmeta_t *m);                  /* borrowed */
const char *fl_tmeta_text(const fl_tmeta_t *m, size_t *len); /* compact JSON, borrowed */
void fl_tmeta_release(fl_tmeta_t *m);                        /* NULL is ignored */

/* The metadata at t's pointer, held in *out. FL_ERR_INVALID (t has no pointer),
 * FL_ERR_NOT_FOUND (the file is gone because the table was dropped or renamed
 * meanwhile), FL_ERR_INTERNAL (unreadable; logged), with msg. */
fl_err_t fl_tablesvc_load(fl_tablesvc_t *s, const fl_table_t *t, fl_tmeta_t **out, char *msg, size_t mlen);
/* Caches meta (a reference is taken) as the file at location, which the
 * caller has just written or read; the entry, held, or NULL when meta cannot
 * be serialised. */
fl_tmeta_t *fl_tablesvc_remember(fl_tablesvc_t *s, const char *location, json_t *meta);

/* ---- the per-table lock ----
 * Pointer moves of one table (bucket, ns, name) are serialised in this
 * process; the compare-and-swap in the catalog store decides between
 * processes. Commits, swaps, renames (both names) and drops take it; a caller
 * that composes its own pointer move (registerTable) takes it around the move
 * and must then call none of those. Not recursive. Each table is locked on its
 * own (another table is never held up, however long this one is held). */
void fl_tablesvc_lock(fl_tablesvc_t *s, const char *bucket, const char *ns, const char *name);
void fl_tablesvc_unlock(fl_tablesvc_t *s, const char *bucket, const char *ns, const char *name);

/* ---- commits ----
 * One Iceberg commit: for each table, check its requirements against the
 * metadata at its pointer, apply its updates, write the next metadata file,
 * then swap every pointer in one catalog transaction (all or none). A lost
 * swap re-reads and re-applies (a few times); files written for a swap that
 * certainly did not happen are deleted. Takes the tables' locks. */
typedef struct fl_tablesvc_change {
    const char *ns, *name;        /* the table (or view) */
    json_t *requirements;         /* borrowed JSON arrays; NULL = none */
    json_t *updates;
    /* out, on FL_OK: the metadata now at the pointer (held: release it; NULL only
     * when it could not be serialised) and its location */
    fl_tmeta_t *result;
    char location[FL_LOC_MAX];
} fl_tablesvc_change_t;

typedef struct fl_tablesvc_commit {
    const char *bucket;           /* every change is in this table bucket */
    const char *principal;        /* recorded as modified_by / created_by */
    bool view;                    /* the changes are to views */
    bool pin_unchanged;           /* a change that changes nothing but has requirements is
                                   * still swapped (to itself), so that they hold at the swap */
    bool keep_refs;               /* a change that would drop a branch or tag it does not
                                   * remove by name (remove-snapshots of the snapshot a ref
                                   * points at, which Iceberg's builders drop with it) is a
                                   * failed requirement (FL_ERR_CONFLICT): snapshot expiry
                                   * planned without a ref made meanwhile re-plans */
    bool locked;                  /* the caller holds the table's lock (fl_tablesvc_lock):
                                   * one change only; the commit does not take it again */
    bool created;                 /* out: the commit created a table (assert-create of a
                                   * table that did not exist, after a stage-create); then
                                   * FL_ERR_NOT_FOUND names the namespace and FL_ERR_EXISTS
                                   * a view of that name */
} fl_tablesvc_commit_t;

/* Commits n changes (1..100; an assert-create only alone). FL_ERR_CONFLICT: a
 * requirement failed or the tables kept changing (retry); FL_ERR_NOT_FOUND:
 * a table is missing or was dropped; FL_ERR_EXISTS: assert-create of an
 * existing table; FL_ERR_INVALID: a malformed requirement or update, or too
 * many updates (FL_ICEBERG_MAX_COMMIT_UPDATES); FL_ERR_IO: the swap failed and
 * its outcome is unknown (the written files are kept); FL_ERR_INTERNAL: a file
 * or the store failed before the swap, or the catalog store was unreachable
 * and nothing was committed. msg explains every failure. On failure
 * no result is held. */
fl_err_t fl_tablesvc_commit(fl_tablesvc_t *s, fl_tablesvc_commit_t *c, fl_tablesvc_change_t *ch, size_t n,
                            char *msg, size_t mlen);

/* Moves t's pointer to new_location (a metadata file of t's warehouse that the
 * caller checked) if the row is still t's (its id) and its version token is
 * expect_token: the S3 Tables UpdateTableMetadataLocation. new_token_out (40
 * bytes) gets the new token. FL_ERR_CONFLICT, FL_ERR_NOT_FOUND, else the
 * store's error. Takes t's lock. */
fl_err_t fl_tablesvc_swap(fl_tablesvc_t *s, const fl_table_t *t, const char *expect_token,
                          const char *new_location, const char *principal, char *new_token_out);
/* Renames t (still the row with t's id, and expect_token unless NULL) to
 * (new_ns, new_name). FL_ERR_EXISTS, FL_ERR_NOT_FOUND (t or the namespace),
 * FL_ERR_CONFLICT. Takes both names' locks. */
fl_err_t fl_tablesvc_rename(fl_tablesvc_t *s, const fl_table_t *t, const char *new_ns, const char *new_name,
                            const char *expect_token);
#endif
