/* The remote S3 backend's entry points, for store/fs.c only: fl_store_t's public
 * calls forward here when the store was opened with fl_store_open_s3. Same
 * contracts (errors, ownership, threads) as the matching calls of store.h. */
#ifndef FL_STORE_S3_INT_H
#define FL_STORE_S3_INT_H
#include "store/store.h"

typedef struct fl_s3s fl_s3s_t;

fl_s3s_t *fl_s3s_open(const fl_store_s3_cfg_t *cfg);
void fl_s3s_close(fl_s3s_t *r);
size_t fl_s3s_max_key(const fl_s3s_t *r, const char *bucket);
fl_err_t fl_s3s_bucket_create(fl_s3s_t *r, const char *name);
fl_err_t fl_s3s_bucket_delete(fl_s3s_t *r, const char *name);
fl_err_t fl_s3s_bucket_head(fl_s3s_t *r, const char *name, fl_bucket_info_t *out);
fl_err_t fl_s3s_bucket_list(fl_s3s_t *r, fl_bucket_info_t **out, size_t *n);
/* Streams size bytes of the spool file fd (pipe: of a pipe, as they come;
 * its end before size bytes aborts the PUT) as bucket/key. An empty
 * meta->etag gets the store's. */
fl_err_t fl_s3s_put(fl_s3s_t *r, int fd, bool pipe, int64_t size, const char *bucket, const char *key,
                    size_t keylen, fl_obj_meta_t *meta, const fl_put_cond_t *cond);
fl_err_t fl_s3s_head(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen, fl_obj_meta_t *out);
fl_err_t fl_s3s_get(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen, fl_obj_t **out);
fl_err_t fl_s3s_part_range(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen, int part,
                           int64_t *off, int64_t *len);
ssize_t fl_s3s_read(void *rd, void *buf, size_t n, int64_t off);
void fl_s3s_rd_free(void *rd);
fl_err_t fl_s3s_delete(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen,
                       const fl_put_cond_t *cond);
fl_err_t fl_s3s_list(fl_s3s_t *r, const char *bucket, const char *prefix, const char *delimiter,
                     const char *start_after, int max_keys, fl_list_res_t *out);
fl_err_t fl_s3s_mpu_create(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen,
                           const char *headers, char upload_id_out[FL_STORE_UPLOAD_ID_MAX + 1]);
fl_err_t fl_s3s_mpu_put_part(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen,
                             const char *upload_id, int number, int fd, bool pipe, int64_t size,
                             char etag_out[48]);
fl_err_t fl_s3s_mpu_parts(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen,
                          const char *upload_id, int after, int max, fl_part_info_t **out, size_t *n,
                          bool *truncated, char **upload_headers);
fl_err_t fl_s3s_mpu_complete(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen,
                             const char *upload_id, const fl_part_ref_t *parts, size_t nparts,
                             const fl_put_cond_t *cond, fl_obj_meta_t *meta_out);
fl_err_t fl_s3s_mpu_abort(fl_s3s_t *r, const char *bucket, const char *key, size_t keylen,
                          const char *upload_id);
fl_err_t fl_s3s_mpu_list(fl_s3s_t *r, const char *bucket, const char *prefix, const char *key_marker,
                         const char *upload_id_marker, int max, fl_upload_info_t **out, size_t *n,
                         bool *truncated);
#endif
