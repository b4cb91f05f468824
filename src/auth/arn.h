/* ARNs of table buckets and tables, in both forms floe speaks:
 *   acs:osstables:{region}:{account}:bucket/{name}[/table/{id}]   (OSS Tables)
 *   arn:aws:s3tables:{region}:{account}:bucket/{name}[/table/{id}] (S3 Tables)
 * Either form is accepted on input; which one floe writes is the scope's
 * choice. Pure functions over caller-owned buffers; any thread. */
#ifndef FL_AUTH_ARN_H
#define FL_AUTH_ARN_H
#include <stdbool.h>

#define FL_ARN_MAX 512 /* bytes of an ARN with its NUL */

/* This server's place in the ARN space. The strings are borrowed: they must
 * outlive every call that is given the scope (the process's configuration). */
typedef struct fl_arn_scope {
    const char *region;   /* e.g. "us-east-1" */
    const char *account;  /* e.g. "000000000000" */
    bool aws;             /* write arn:aws:s3tables:... instead of acs:osstables:... */
    bool any_account;     /* several accounts live here: fl_arn_resolve accepts any account and
                           * the caller checks the ARN's account against the bucket's owner
                           * (fl_arn_in_account) */
} fl_arn_scope_t;

/* Table-bucket ARN of name in scope s. out holds FL_ARN_MAX bytes; "" when the
 * ARN would not fit. */
void fl_arn_bucket(const fl_arn_scope_t *s, const char *name, char *out);
/* Table-bucket ARN of name owned by account (scope s's region and form). */
void fl_arn_bucket_of(const fl_arn_scope_t *s, const char *account, const char *name, char *out);

/* Table ARN: bucket ARN + "/table/{id}". out holds FL_ARN_MAX bytes; "" when too long. */
void fl_arn_table(const fl_arn_scope_t *s, const char *bucket, const char *id, char *out);

/* Parses a table-bucket ARN of either form (also with a "/table/{id}" tail when
 * table_id_out is non-NULL) into the bucket name (64 bytes) and optional table id
 * (40 bytes, "" when absent). Region and account are checked for shape only
 * (the account is digits). False if malformed; the outputs are then undefined. */
bool fl_arn_parse(const char *arn, char *bucket_out, char *table_id_out);

typedef enum fl_arn_match {
    FL_ARN_OURS = 0,         /* this server's region and account */
    FL_ARN_MALFORMED,
    FL_ARN_OTHER_ACCOUNT,    /* AWS answers AccessDenied */
    FL_ARN_OTHER_REGION,     /* no such resource in this region */
} fl_arn_match_t;

/* fl_arn_parse, and the ARN's region and account must be s's: an ARN naming
 * another account or region never resolves to one of this server's buckets.
 * The account is compared before the region. arn NULL is FL_ARN_MALFORMED. */
fl_arn_match_t fl_arn_resolve(const fl_arn_scope_t *s, const char *arn, char *bucket_out,
                              char *table_id_out);
/* True if a well-formed table-bucket/table ARN names account (12 digits). */
bool fl_arn_in_account(const char *arn, const char *account);
#endif
