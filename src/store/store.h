/* Object store: buckets, objects, multipart uploads.
 *
 * The embedded backend keeps the local file system layout of design.md §4:
 * an index (SQLite, WAL) with one row per visible object, and immutable blob
 * files named by fresh ids (never by key). A write streams into a new blob
 * (fl_blob_w_*), which is fsynced and then published by swapping the index row
 * in one transaction; the replaced blob is unlinked after commit. A completed
 * multipart object is an index row listing its part blobs in order.
 * All functions are thread-safe and may block (call them off any event loop). */
#ifndef FL_STORE_STORE_H
#define FL_STORE_STORE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "base/err.h"

typedef struct fl_store fl_store_t;

/* A remote S3-compatible store as the backend (store/s3.c): floe bucket B's
 * object K is remote object PREFIX/o/B/K of BUCKET, bucket B itself the marker
 * PREFIX/b/B. Strings are copied; secrets are never logged. */
typedef struct fl_store_s3_cfg {
    const char *url;          /* s3://BUCKET[/PREFIX] */
    const char *endpoint;     /* http(s)://host[:port]; NULL = AWS for region */
    const char *region;       /* NULL = us-east-1 */
    const char *akid, *secret, *session_token; /* NULL akid = unsigned requests */
    bool path_style;
} fl_store_s3_cfg_t;

/* Opens (creating if needed) the store under dir: dir/index.db, dir/blobs/.
 * Sweeps temp files, blobs no index row names, and multipart uploads older
 * than FL_STALE_UPLOAD_S. Returns NULL and logs on failure. */
fl_store_t *fl_store_open(const char *dir);
/* Opens a store whose objects live in a remote S3-compatible store (store/s3.c);
 * dir holds only spool files of writes in progress (blobs/tmp). Every call below
 * then maps onto remote requests through net/httpc.h, SigV4-signed. Reads give
 * segments with fd -1: read them with fl_obj_seg_read (ranged GETs pinned to the
 * object's ETag with If-Match). Returns NULL and logs on failure (bad URL, remote
 * bucket unreachable). */
fl_store_t *fl_store_open_s3(const char *dir, const fl_store_s3_cfg_t *cfg);
/* The longest key bucket may hold: FL_S3_MAX_KEY_BYTES, less what a remote
 * store's own key spends on PREFIX/o/BUCKET/ (its limit is S3's too). */
size_t fl_store_max_key(const fl_store_t *s, const char *bucket);
/* Whether s keeps its objects in a remote store (no local blob files). */
bool fl_store_is_remote(const fl_store_t *s);
/* Closes the store; no other call on s may be running or follow. */
void fl_store_close(fl_store_t *s);
/* Waits until replaced blobs queued for unlinking are gone (tests, shutdown). */
void fl_store_drain(fl_store_t *s);
/* Removes multipart uploads created before now_ms - FL_STALE_UPLOAD_S (index
 * rows and part blobs). Safe to call periodically from any worker thread
 * while the store is in use; orphan blobs are swept only at open. */
fl_err_t fl_store_sweep(fl_store_t *s, int64_t now_ms);
/* Before a delete in another database on the same disk (the catalog): if the
 * disk under the store has less room than the store's reserve, releases the
 * reserve so that the delete can commit (it is taken back as blobs are
 * unlinked). The store's own deletes do this by themselves. Any thread. */
void fl_store_make_room(fl_store_t *s);

/* ---- buckets ---- */
typedef struct fl_bucket_info {
    char name[64];
    int64_t created_ms;
} fl_bucket_info_t;

fl_err_t fl_store_bucket_create(fl_store_t *s, const char *name);  /* FL_ERR_EXISTS */
fl_err_t fl_store_bucket_delete(fl_store_t *s, const char *name);  /* FL_ERR_NO_BUCKET, FL_ERR_NOT_EMPTY (objects or uploads) */
fl_err_t fl_store_bucket_head(fl_store_t *s, const char *name, fl_bucket_info_t *out);
/* All buckets in name order; *out is malloc'd (free()). */
fl_err_t fl_store_bucket_list(fl_store_t *s, fl_bucket_info_t **out, size_t *n);

/* ---- object metadata ---- */
typedef struct fl_obj_meta {
    char etag[48];          /* unquoted: 32 hex, or 32 hex + "-N" for multipart */
    int64_t size;
    int64_t mtime_ms;
    int parts;              /* 0: single PUT; N: multipart with N parts */
    char *headers;          /* opaque to the store: stored headers ("name: value\n"
                               lines, e.g. content-type, x-amz-meta-*, checksums); owned */
} fl_obj_meta_t;
void fl_obj_meta_free(fl_obj_meta_t *m); /* frees headers, not m */

/* ---- writing blobs ---- */
typedef struct fl_blob_w fl_blob_w_t;

/* Starts a new blob (a temp file in the store's blob area). */
fl_err_t fl_blob_w_open(fl_store_t *s, fl_blob_w_t **w);
fl_err_t fl_blob_w_write(fl_blob_w_t *w, const void *p, size_t n);
int64_t fl_blob_w_size(const fl_blob_w_t *w);
/* Appends len bytes of fd from off (copy_file_range, falling back to read/write):
 * CopyObject and UploadPartCopy. */
fl_err_t fl_blob_w_copy_fd(fl_blob_w_t *w, int fd, int64_t off, int64_t len);
/* Discards an unpublished blob (temp file removed). Safe on NULL. */
void fl_blob_w_abort(fl_blob_w_t *w);

/* Write conditions (PutObject, CompleteMultipartUpload, DeleteObject). */
typedef struct fl_put_cond {
    bool if_none_match_star; /* fail with FL_ERR_PRECONDITION if the key exists */
    const char *if_match;    /* unquoted etag, or "*"; FL_ERR_PRECONDITION if it differs,
                                FL_ERR_NOT_FOUND if the key does not exist */
} fl_put_cond_t;

/* A remote store's writer that streams: its bytes go to the store as they
 * are written, not to a spool file: one PUT of bucket/key with the object's
 * headers (opaque lines, as fl_store_put's meta->headers) and cond, or, with
 * upload_id, UploadPart number part; exactly size bytes (> 0) must be
 * written. The body's last byte is held back until fl_store_put or
 * fl_store_mpu_put_part (given the same bucket, key, upload and part)
 * publishes it, so a writer aborted or short of size bytes leaves nothing in
 * the store: its request is cut before the body is whole. A store that
 * refuses the request early (a failed condition) has the rest of the bytes
 * dropped, and its answer comes from the publish. One extra thread per
 * writer. FL_ERR_INVALID when s is not remote or size < 1: spool instead
 * (fl_blob_w_open); fl_blob_w_copy_fd is not for these writers. */
fl_err_t fl_blob_w_open_stream(fl_store_t *s, const char *bucket, const char *key, size_t keylen, int64_t size,
                               const char *headers, const fl_put_cond_t *cond, const char *upload_id, int part,
                               fl_blob_w_t **w);

/* Publishes the blob as bucket/key with meta (etag, size taken from meta; the
 * store sets mtime_ms and copies headers). Consumes w in every case (published
 * or aborted). The blob is fsynced before the index row is swapped, and the
 * directory fsynced, so a crash leaves the old object or the new one.
 * Errors: FL_ERR_NO_BUCKET, FL_ERR_PRECONDITION, FL_ERR_NOT_FOUND (if_match on
 * a missing key), FL_ERR_IO. */
fl_err_t fl_store_put(fl_store_t *s, fl_blob_w_t *w, const char *bucket,
                      const char *key, size_t keylen, fl_obj_meta_t *meta,
                      const fl_put_cond_t *cond);

/* ---- reading ---- */
typedef struct fl_obj_seg {
    int fd;            /* open blob file, read-only; -1: a remote object (fl_obj_seg_read) */
    int64_t len;       /* bytes of this segment */
} fl_obj_seg_t;

typedef struct fl_obj {
    fl_obj_meta_t meta;
    size_t nsegs;      /* 1 for a single PUT, N parts for multipart; 0 for empty */
    fl_obj_seg_t *segs;
    int64_t *part_sizes; /* == seg lengths; kept for GetObject partNumber; NULL when
                            unknown (a remote multipart object is one segment) */
    void *rd;          /* the backend's reader of a remote object; NULL for files */
} fl_obj_t;

/* pread over segment i of o: a file's pread, or a ranged GET of the remote
 * object (fails with -1 if it changed since fl_store_get). Returns bytes read
 * (short only at the end), -1 on error. Any thread; one reader per o at a time. */
ssize_t fl_obj_seg_read(const fl_obj_t *o, size_t i, void *buf, size_t n, int64_t off);
/* Appends [off, off+len) of segment i of o to w (in the kernel for files). */
fl_err_t fl_blob_w_copy_seg(fl_blob_w_t *w, const fl_obj_t *o, size_t i, int64_t off, int64_t len);

/* Looks up bucket/key and opens its blob file(s), so that a concurrent
 * overwrite or delete does not disturb this read. FL_ERR_NO_BUCKET / FL_ERR_NOT_FOUND. */
fl_err_t fl_store_get(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                      fl_obj_t **out);
/* Byte range [*off, *off + *len) of part `part` (1-based) of a multipart object
 * whose fl_obj_t has no part_sizes (a remote store's: asked of the store).
 * FL_ERR_NOT_FOUND, FL_ERR_INVALID (no such part, or a store that gives part
 * sizes with fl_store_get). */
fl_err_t fl_store_part_range(fl_store_t *s, const char *bucket, const char *key, size_t keylen, int part,
                             int64_t *off, int64_t *len);
/* Metadata only (no files opened). */
fl_err_t fl_store_head(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                       fl_obj_meta_t *out);
void fl_obj_close(fl_obj_t *o);

/* Removes bucket/key. FL_OK also when the key did not exist (S3 semantics),
 * unless cond->if_match is set (then FL_ERR_NOT_FOUND / FL_ERR_PRECONDITION).
 * FL_ERR_NO_BUCKET if the bucket is missing. */
fl_err_t fl_store_delete(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                         const fl_put_cond_t *cond);

/* ---- listing ---- */
typedef struct fl_list_ent {
    char *key;          /* NUL-terminated (keys never contain NUL) */
    size_t keylen;
    int64_t size;
    int64_t mtime_ms;
    char etag[48];
} fl_list_ent_t;

typedef struct fl_list_res {
    fl_list_ent_t *ents;    size_t nents;
    char **prefixes;        size_t nprefixes;   /* common prefixes (with delimiter) */
    bool truncated;
    char *next_after;       /* when truncated: the last key or prefix returned;
                               listing again with start_after = this continues */
} fl_list_res_t;

/* Lists keys of bucket in byte order that start with prefix and sort after
 * start_after (exclusive; NULL = from the start). With a delimiter, keys that
 * contain it after the prefix roll up into common prefixes (each counted once
 * toward max_keys). At most max_keys entries+prefixes. FL_ERR_NO_BUCKET. */
fl_err_t fl_store_list(fl_store_t *s, const char *bucket, const char *prefix,
                       const char *delimiter, const char *start_after, int max_keys,
                       fl_list_res_t *out);
void fl_list_res_free(fl_list_res_t *r);

/* ---- multipart uploads ---- */
typedef struct fl_part_info {
    int number;
    char etag[48];        /* unquoted hex MD5 */
    int64_t size;
    int64_t mtime_ms;
    char *headers;        /* opaque (checksums of the part); owned */
} fl_part_info_t;

/* Upload ids: floe's own are 32 hex; a remote store's are passed through
 * (AWS S3's run to ~200 characters). */
#define FL_STORE_UPLOAD_ID_MAX 512

/* Creates an upload for bucket/key with the object's future headers (opaque).
 * upload_id_out gets a fresh id (<= FL_STORE_UPLOAD_ID_MAX chars). FL_ERR_NO_BUCKET. */
fl_err_t fl_store_mpu_create(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                             const char *headers, char upload_id_out[FL_STORE_UPLOAD_ID_MAX + 1]);
/* Publishes a part (consumes w; replaces an earlier part with the same number).
 * FL_ERR_NO_UPLOAD if the id does not name an upload of bucket/key. */
fl_err_t fl_store_mpu_put_part(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                               const char *upload_id, int number, fl_blob_w_t *w,
                               const char *etag, const char *headers);
/* Parts of an upload with number > after, ascending, at most max. *out malloc'd;
 * free with fl_part_infos_free. *upload_headers (optional) gets the upload's headers. */
fl_err_t fl_store_mpu_parts(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                            const char *upload_id, int after, int max,
                            fl_part_info_t **out, size_t *n, bool *truncated,
                            char **upload_headers);
void fl_part_infos_free(fl_part_info_t *p, size_t n);

typedef struct fl_part_ref {
    int number;
    const char *etag;     /* unquoted */
} fl_part_ref_t;

/* Completes: parts must be strictly ascending (FL_ERR_PART_ORDER), each must
 * exist with the given etag (FL_ERR_INVALID_PART), every part but the last must
 * be >= min_part_size (FL_ERR_TOO_SMALL). On success the object is published
 * atomically (as fl_store_put, honouring cond), unlisted parts are discarded,
 * and *meta_out (optional) gets the new object's meta with the multipart etag.
 * headers: the object's final headers (NULL = those given at create). */
fl_err_t fl_store_mpu_complete(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                               const char *upload_id, const fl_part_ref_t *parts, size_t nparts,
                               int64_t min_part_size, const char *headers,
                               const fl_put_cond_t *cond, fl_obj_meta_t *meta_out);
fl_err_t fl_store_mpu_abort(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                            const char *upload_id);

typedef struct fl_upload_info {
    char *key;
    size_t keylen;
    char upload_id[FL_STORE_UPLOAD_ID_MAX + 1];
    int64_t created_ms;
} fl_upload_info_t;
/* In-progress uploads of bucket whose key starts with prefix, ordered by
 * (key, created). At most max; *out malloc'd; free with fl_upload_infos_free. */
fl_err_t fl_store_mpu_list(fl_store_t *s, const char *bucket, const char *prefix,
                           const char *key_marker, const char *upload_id_marker, int max,
                           fl_upload_info_t **out, size_t *n, bool *truncated);
void fl_upload_infos_free(fl_upload_info_t *u, size_t n);

#endif
