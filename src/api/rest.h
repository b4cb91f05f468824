/* The Iceberg REST catalog under /iceberg on the catalog port. Connection
 * thread; may block on the catalog store and object store. */
#ifndef FL_API_REST_H
#define FL_API_REST_H
#include "api/front.h"

/* Routes and answers one request; r->path is below /iceberg (e.g. "/v1/config").
 * Every failure is answered through fl_rest_error. */
void fl_rest_handle(fl_api_req_t *r);
/* Renders {"error": {"message": msg, "type": type, "code": status}}. Also used by
 * api/catalog.c before dispatch (authentication, body intake). */
void fl_rest_error(fl_api_req_t *r, int status, const char *type, const char *msg);
#endif
