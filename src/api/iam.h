/* The IAM and STS query APIs on the catalog port, chosen by the request's
 * SigV4 signing name ("iam" / "sts"), so that boto3.client("iam"|"sts",
 * endpoint_url=<catalog URL>) and `aws iam|sts --endpoint-url` work. Errors
 * are the query protocol's XML (<ErrorResponse><Error><Type/><Code/>...),
 * rendered by fl_iam_api_error only. Connection thread; blocks on the catalog
 * store. */
#ifndef FL_API_IAM_H
#define FL_API_IAM_H
#include "api/front.h"

/* Answers one IAM or STS request (authenticated, body read). */
void fl_iam_api_handle(fl_api_req_t *r);
/* Renders a query-protocol error. */
void fl_iam_api_error(fl_api_req_t *r, int status, const char *code, const char *msg);
#endif
