/* The S3 front door: path-style S3 object API over the object store, with
 * SigV4 on every request (unless the operator opted out). Errors are S3 XML,
 * rendered by one function. The handler runs on an HTTP connection thread. */
#ifndef FL_API_S3_H
#define FL_API_S3_H
#include <stdbool.h>
#include "auth/sigv4.h"
#include "catalog/iam.h"
#include "net/http.h"
#include "store/store.h"

typedef struct fl_s3_cfg {
    fl_store_t *store;
    const char *region;            /* reported by HeadBucket / GetBucketLocation */
    bool insecure_no_auth;         /* accept unsigned requests (local development) */
    fl_secret_lookup_fn lookup;    /* access key -> secret */
    void *lookup_ud;
    fl_iam_t *iam;                 /* identities and policies (NULL: any verified key may do anything) */
} fl_s3_cfg_t;

/* fl_http_handler_fn for the data plane; ud is a const fl_s3_cfg_t* that
 * outlives the server. */
void fl_s3_handle(fl_http_conn_t *c, fl_http_req_t *req, void *ud);

#endif
