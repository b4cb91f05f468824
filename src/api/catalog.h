/* The catalog port: one HTTP handler in front of the S3 Tables control plane
 * (api/tables.c) and the Iceberg REST catalog under /iceberg (api/rest.c).
 * It buffers the JSON request body (capped), verifies SigV4 with the signing
 * names s3tables and osstables (hashing the body when the client did not send
 * x-amz-content-sha256), and dispatches by path. Each front door owns its
 * routes and its one error renderer. Everything here runs on the connection's
 * thread and may block. */
#ifndef FL_API_CATALOG_H
#define FL_API_CATALOG_H
#include "api/front.h"


/* fl_http_handler_fn for the catalog port; ud is a const fl_catalog_cfg_t*. */
void fl_catalog_handle(fl_http_conn_t *c, fl_http_req_t *req, void *ud);

#endif
