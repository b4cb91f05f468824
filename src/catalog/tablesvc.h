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
 *   anything else     failed before anything changed (store, file or memory)
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

/* Drops the table t names, which must still be the row t was read from: the
 * delete matches its name and its id (FL_ERR_NOT_FOUND when the name now
 * belongs to another table or to none) and expect_token unless NULL
 * (FL_ERR_CONFLICT), in one transaction. Only once that row is gone and only
 * with purge, every object of t's warehouse and the bucket. */
fl_err_t fl_tablesvc_drop(fl_tablesvc_t *s, const fl_table_t *t, bool purge,
                          const char *expect_token);
/* Removes warehouse buckets created before created_before_ms that no table owns
 * (abandoned stage-creates, a crash between warehouse and row). Returns how many. */
int fl_tablesvc_sweep(fl_tablesvc_t *s, int64_t created_before_ms);
#endif
