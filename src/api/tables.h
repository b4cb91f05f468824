/* The S3 Tables control plane (botocore's "s3tables" model) on the catalog
 * port. Connection thread; may block on the catalog store and object store. */
#ifndef FL_API_TABLES_H
#define FL_API_TABLES_H
#include "api/front.h"

/* Routes and answers one request (r->path is the whole path). Every failure is
 * answered through fl_tables_error. */
void fl_tables_handle(fl_api_req_t *r);
/* Renders an S3 Tables error: status, x-amzn-ErrorType: type, {"message": msg}
 * (OSS-signed requests, r->dialect OSS4 or V1: x-oss-error-type instead).
 * Also used by api/catalog.c before dispatch (authentication, body intake). */
void fl_tables_error(fl_api_req_t *r, int status, const char *type, const char *msg);
#endif
