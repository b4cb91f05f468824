/* The catalog port: one HTTP handler in front of the S3 Tables control plane
 * (api/tables.c) and the Iceberg REST catalog under /iceberg (api/rest.c).
 * It buffers the JSON request body (capped), verifies SigV4 with the signing
 * names s3tables and osstables (hashing the body when the client did not send
 * x-amz-content-sha256), and dispatches by path. Each front door owns its
 * routes and its one error renderer. Everything here runs on the connection's
 * thread and may block. */
#ifndef FL_API_CATALOG_H
#define FL_API_CATALOG_H
#include <stdbool.h>
#include <stddef.h>
#include "auth/arn.h"
#include "auth/sigv4.h"
#include "meta/catalog.h"
#include "net/http.h"
#include "store/store.h"

#define FL_CATALOG_MAX_BODY (8 * 1024 * 1024) /* JSON request bodies */

typedef struct fl_catalog_cfg {
    fl_catalog_t *cat;
    fl_store_t *store;            /* the data plane's object store: warehouses live there */
    fl_arn_scope_t scope;         /* region, account id and ARN form of this server */
    const char *s3_endpoint;      /* data plane URL for clients, e.g. "http://127.0.0.1:9000" */
    bool insecure_no_auth;
    fl_secret_lookup_fn lookup;
    void *lookup_ud;
} fl_catalog_cfg_t;

/* One request, as the front doors see it. */
typedef struct fl_api_req {
    fl_http_conn_t *c;
    fl_http_req_t *req;
    const fl_catalog_cfg_t *cfg;
    const char *path;             /* raw path below the front door ("/iceberg" stripped for REST) */
    size_t path_len;
    const char *body;             /* whole request body, NUL-terminated ("" when none) */
    size_t body_len;
    const char *principal;        /* access key id, or "anonymous" */
} fl_api_req_t;

/* fl_http_handler_fn for the catalog port; ud is a const fl_catalog_cfg_t*. */
void fl_catalog_handle(fl_http_conn_t *c, fl_http_req_t *req, void *ud);

/* S3 Tables control plane (api/tables.c). */
void fl_tables_handle(fl_api_req_t *r);
/* Renders an S3 Tables error: status, x-amzn-ErrorType: type, {"message": msg}. */
void fl_tables_error(fl_api_req_t *r, int status, const char *type, const char *msg);

/* Iceberg REST catalog (api/rest.c); r->path is below /iceberg (e.g. "/v1/config"). */
void fl_rest_handle(fl_api_req_t *r);
/* Renders {"error": {"message": msg, "type": type, "code": status}}. */
void fl_rest_error(fl_api_req_t *r, int status, const char *type, const char *msg);

#endif
