/* Table file IO: reads, writes and deletes the files an Iceberg table references, by
 * location. s3://bucket/key (also s3a://, s3n://) goes through an S3 client (SigV4 service
 * "s3", path-style or virtual-host addressing); file:///path and plain paths go to the local
 * file system (writes are atomic: temp file + rename, parent directories created).
 *
 * Configuration is the table's FileIO property map (fl_rest_table_t.config, reference/
 * iceberg.md §7.3): s3.endpoint, s3.path-style-access, s3.access-key-id,
 * s3.secret-access-key, s3.session-token, client.region (or s3.region). Like Java's
 * S3FileIO, what the map lacks comes from the client's own settings (fl_io_opts_t fallbacks);
 * fl_io_opts_t overrides (e.g. a --s3-endpoint flag) win over the map.
 *
 * Uploads: fl_io_put sends one PUT; fl_io_put_fd streams from a file descriptor and switches
 * to a multipart upload (parts of part_size, default 64 MiB) above multipart_threshold
 * (default 64 MiB), aborting the upload on failure. Reads, HEAD, DELETE and single PUTs are
 * retried on connection errors, 429 and 5xx.
 *
 * Errors: fl_err_t (FL_ERR_NOT_FOUND for a missing object or file, FL_ERR_AUTH for 401/403,
 * FL_ERR_INVALID for a location no scheme handles, FL_ERR_TOO_LARGE when a GET passes its
 * buffer's cap, FL_ERR_IO otherwise) plus a fl_remote_error_t with the message.
 *
 * Threads: a fl_io_t may be shared by any number of threads once made. A source made by
 * fl_io_source_open is used by one thread at a time. */
#ifndef FL_ICEBERG_IO_H
#define FL_ICEBERG_IO_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/err.h"
#include "format/parquet.h"
#include "net/httpc.h"

typedef struct fl_io_opts {
    /* overrides: win over the property map */
    const char *s3_endpoint;          /* e.g. http://127.0.0.1:9000 */
    int path_style;                   /* 1 path-style, 0 virtual-host, -1 unset (see fl_io_new) */
    /* fallbacks: used when the map has no value */
    const char *access_key_id, *secret_access_key, *session_token;
    const char *region;               /* default us-east-1 */
    /* tuning (0 = default) */
    uint64_t multipart_threshold;     /* default 64 MiB */
    uint64_t part_size;               /* default 64 MiB; at least 5 MiB */
    long connect_timeout_ms;          /* default 10 s */
    long timeout_ms;                  /* per request; default none (a stall of 60 s aborts) */
    int max_retries;                  /* default 3; < 0 = none */
    size_t footer_cache;              /* fl_io_source_open tail cache, default 1 MiB */
} fl_io_opts_t;

/* Zero options with path_style = -1 (unset). Use this rather than {0}. */
void fl_io_opts_default(fl_io_opts_t *o);

typedef struct fl_io fl_io_t;

/* A file IO from a property map (borrowed; may be NULL) and options (may be NULL). Path
 * style when neither says: true if an endpoint is configured, else false (AWS). */
fl_err_t fl_io_new(json_t *props, const fl_io_opts_t *o, fl_io_t **out);
void fl_io_free(fl_io_t *io);

typedef struct fl_io_stat {
    uint64_t size;
    char etag[130];                   /* S3 ETag (quoted) or "" for local files */
    int64_t mtime_ms;                 /* -1 if unknown */
} fl_io_stat_t;

/* Writes the object at location from memory (replaces it). */
fl_err_t fl_io_put(fl_io_t *io, const char *location, const void *p, size_t n, fl_remote_error_t *err);
/* Writes size bytes read from fd at offset 0 (pread: the fd's position is not used or moved). */
fl_err_t fl_io_put_fd(fl_io_t *io, const char *location, int fd, uint64_t size, fl_remote_error_t *err);
/* Appends the whole object to out; FL_ERR_TOO_LARGE if it passes out's cap. */
fl_err_t fl_io_get(fl_io_t *io, const char *location, fl_buf_t *out, fl_remote_error_t *err);
/* Reads exactly n bytes at off into p (FL_ERR_INVALID if the object is shorter). */
fl_err_t fl_io_read_at(fl_io_t *io, const char *location, uint64_t off, void *p, size_t n,
                       fl_remote_error_t *err);
fl_err_t fl_io_head(fl_io_t *io, const char *location, fl_io_stat_t *st, fl_remote_error_t *err);
/* Copies the object at src to dst (replacing it) inside one storage: S3 CopyObject (PUT with
 * x-amz-copy-source; a 200 whose body is an <Error> fails; S3 refuses sources above 5 GiB,
 * which would need UploadPartCopy) or a local copy written atomically. FL_ERR_NOT_FOUND when src is missing; FL_ERR_INVALID when src and dst are not
 * both S3 or both local. */
fl_err_t fl_io_copy(fl_io_t *io, const char *src, const char *dst, fl_remote_error_t *err);
/* Deletes the object; deleting a missing one is FL_OK (as S3). */
fl_err_t fl_io_delete(fl_io_t *io, const char *location, fl_remote_error_t *err);

/* Calls fn(arg, location, stat) for every object whose location starts with prefix (S3:
 * ListObjectsV2 pages of 1,000; local: the files under the directory prefix names, walked
 * recursively), in no particular order. Locations passed to fn are the prefix's scheme and
 * bucket plus the key (borrowed for the call). A non-zero return from fn stops the walk and is
 * returned. A missing directory or an empty prefix lists nothing; "s3://bucket/" lists the whole
 * bucket. */
typedef fl_err_t (*fl_io_list_fn)(void *arg, const char *location, const fl_io_stat_t *st);
fl_err_t fl_io_list(fl_io_t *io, const char *prefix, fl_io_list_fn fn, void *arg, fl_remote_error_t *err);

/* A positional-read source over one file for the Parquet reader: HEAD for the size, ranged
 * GETs for reads, with the last footer_cache bytes fetched once on the first read that
 * touches them (the footer and its length). *src is filled; the source object owns a copy of
 * location and borrows io, which must outlive it. Free with fl_io_source_free after the
 * reader. The source's last error message: fl_io_source_error. */
typedef struct fl_io_source fl_io_source_t;
fl_err_t fl_io_source_open(fl_io_t *io, const char *location, fl_io_source_t **s, fl_pq_source_t *src,
                           fl_remote_error_t *err);
const fl_remote_error_t *fl_io_source_error(const fl_io_source_t *s);
/* Remote reads the source made (ranged GETs, HEAD excluded), for tests and metrics. */
uint64_t fl_io_source_requests(const fl_io_source_t *s);
void fl_io_source_free(fl_io_source_t *s);

/* ---- pure pieces, exposed for tests ---- */

typedef struct fl_s3_loc {
    char bucket[256];
    char key[1025];
} fl_s3_loc_t;
/* What follows the scheme of an object-store location ("bucket/key") for
 * s3://, s3a://, s3n:// and oss:// (OSS Tables' scheme: the same objects on
 * floe's data plane); NULL for any other location. */
const char *fl_io_s3_rest(const char *location);
/* s3:// s3a:// s3n:// oss:// -> bucket and key: FL_OK; a local path or file:// URL -> FL_ERR_NOT_FOUND
 * with path (when non-NULL) set to the file path; anything else FL_ERR_INVALID. */
fl_err_t fl_io_parse_location(const char *location, fl_s3_loc_t *s3, fl_buf_t *path);
/* The request URL of an S3 object (no query): endpoint (default https://s3.{region}.amazonaws
 * .com), path-style {endpoint}/{bucket}/{key} or virtual-host {scheme}://{bucket}.{host}/{key};
 * the key percent-encoded with '/' kept. Appends to out. */
fl_err_t fl_io_s3_url(const char *endpoint, const char *region, bool path_style, const fl_s3_loc_t *loc,
                      fl_buf_t *out);

#endif
