/* What the catalog port's two front doors share: the port's configuration and
 * one request as api/catalog.c hands it over (authenticated, body read). The
 * front doors (api/tables.c, api/rest.c) include this, never api/catalog.h;
 * api/catalog.c includes theirs. */
#ifndef FL_API_FRONT_H
#define FL_API_FRONT_H
#include <stdbool.h>
#include <stddef.h>
#include "auth/sigv4.h"
#include "catalog/iam.h"
#include "catalog/tablesvc.h"
#include "net/http.h"

/* Configuration of the catalog port, made once by cli/serve.c and read-only
 * while the listener runs; every pointer outlives the listener. */
typedef struct fl_catalog_cfg {
    fl_tablesvc_t *svc;           /* the table-bucket service (stores, ARN scope) */
    const char *s3_endpoint;      /* data plane URL for clients, e.g. "http://127.0.0.1:9000" */
    bool insecure_no_auth;
    fl_secret_lookup_fn lookup;
    void *lookup_ud;
    fl_iam_t *iam;                /* identities and authorisation (NULL: no checks, tests) */
} fl_catalog_cfg_t;

/* One request, as the front doors see it: borrowed for the handler's call, on
 * the connection's thread. */
typedef struct fl_api_req {
    fl_http_conn_t *c;
    fl_http_req_t *req;
    const fl_catalog_cfg_t *cfg;
    const char *path;             /* raw path below the front door ("/iceberg" stripped for REST) */
    size_t path_len;
    const char *body;             /* whole request body, NUL-terminated ("" when none) */
    size_t body_len;
    const char *principal;        /* access key id, or "anonymous" */
    /* The client's dialect, from its signature (even one that failed to
     * verify): OSS4 or V1 (fl_sig_is_oss) makes the S3 Tables front door answer as OSS
     * Tables does (x-oss-error-type, x-oss-request-id); anything else keeps
     * S3 Tables' shapes. */
    fl_sig_dialect_t dialect;
    const fl_iam_who_t *who;      /* the signer; NULL when unsigned (--insecure-no-auth) */
    const char *service;          /* the signing name: "s3tables", "osstables", "iam", "sts" */
} fl_api_req_t;
#endif
