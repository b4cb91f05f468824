/* Table operations shared by the S3 Tables control plane and the Iceberg REST
 * catalog: where a table's files live, and the writes that go with creating
 * and committing a table. A table's warehouse is its own bucket on floe's data
 * plane, named like S3 Tables' ("{random}--table-s3"), holding metadata/ and
 * data/. A commit writes the new metadata file before the catalog pointer
 * moves, so the pointer never names a missing file. */
#ifndef FL_API_TABLESVC_H
#define FL_API_TABLESVC_H
#include "api/front.h"
#include <jansson.h>

/* Creates a table: a fresh warehouse bucket, then (when metadata is non-NULL)
 * the first metadata file "metadata/00000-{uuid}.metadata.json" written from
 * it, then the catalog row (kind "table", format ICEBERG, type customer).
 * metadata is a complete Iceberg TableMetadata object (see iceberg/metadata.h)
 * whose "location" is set here to the warehouse URI. On failure nothing is
 * left behind and *why (static text) explains. FL_ERR_EXISTS, FL_ERR_NOT_FOUND
 * (namespace), FL_ERR_NO_BUCKET. */
fl_err_t fl_tablesvc_create(const fl_catalog_cfg_t *cfg, const char *bucket, const char *ns,
                            const char *name, const char *principal, json_t *metadata,
                            fl_table_t *out, const char **why);

/* Writes metadata (serialised compactly) as a new file under the table's
 * warehouse: "metadata/{seq:05d}-{uuid}.metadata.json"; location_out
 * (FL_LOC_MAX) gets its s3:// URI. The file is durable when this returns. */
fl_err_t fl_tablesvc_write_metadata(const fl_catalog_cfg_t *cfg, const fl_table_t *t, long seq,
                                    json_t *metadata, char *location_out);

/* The same with metadata already serialised (text, NUL-terminated). */
fl_err_t fl_tablesvc_write_metadata_text(const fl_catalog_cfg_t *cfg, const fl_table_t *t, long seq,
                                         const char *text, char *location_out);

/* Deletes a metadata file that a commit wrote into t's warehouse and that no pointer
 * names (the commit lost its swap: the table changed or was dropped meanwhile).
 * FL_ERR_INVALID if location is not a metadata file of t's warehouse. */
fl_err_t fl_tablesvc_delete_metadata(const fl_catalog_cfg_t *cfg, const fl_table_t *t, const char *location);

/* Reads and parses the metadata file at an s3:// location on floe's data plane.
 * *out is a new reference. FL_ERR_NOT_FOUND, FL_ERR_INVALID (not JSON). */
fl_err_t fl_tablesvc_read_metadata(const fl_catalog_cfg_t *cfg, const char *location, json_t **out);

/* True if location lies inside the table's warehouse and names a metadata file
 * (".metadata.json" or ".metadata.json.gz"). */
bool fl_tablesvc_location_ok(const fl_table_t *t, const char *location);

/* Drops the table t names, which must still be the row t was read from: the
 * delete matches its name and its id (FL_ERR_NOT_FOUND when the name now
 * belongs to another table or to none) and expect_token unless NULL
 * (FL_ERR_CONFLICT), in one transaction. Only once that row is gone and only
 * with purge, every object of t's warehouse and the bucket. */
fl_err_t fl_tablesvc_drop(const fl_catalog_cfg_t *cfg, const fl_table_t *t, bool purge,
                          const char *expect_token);
/* Removes warehouse buckets created before created_before_ms that no table owns
 * (abandoned stage-creates, a crash between warehouse and row). Returns how many. */
int fl_tablesvc_sweep(const fl_catalog_cfg_t *cfg, int64_t created_before_ms);
#endif
