/* Connection options shared by the catalog-client commands (floe snapshots, floe scan):
 * flags and environment for the REST catalog (URI, warehouse, auth) and the table IO (S3
 * endpoint override, credentials), turned into a fl_rest_client_t and fl_io_opts_t.
 *
 *   --catalog-uri URI   default $FLOE_CATALOG_URI, else http://127.0.0.1:8181/iceberg
 *   --warehouse W       table-bucket ARN; default $FLOE_WAREHOUSE
 *   --auth none|sigv4|bearer|oauth2   default: bearer with a token, oauth2 with a
 *                       credential, sigv4 with keys, else none
 *   --region R          SigV4 region; default $AWS_REGION, $AWS_DEFAULT_REGION, us-east-1
 *   --signing-name N    SigV4 service; default s3tables
 *   --token T           bearer token; default $FLOE_TOKEN
 *   --credential ID:SECRET  OAuth2 client credentials; default $FLOE_OAUTH_CREDENTIAL
 *   --s3-endpoint URL   data-plane endpoint, overriding the catalog's s3.endpoint
 * Keys come from the environment only: FLOE_ACCESS_KEY_ID / FLOE_SECRET_ACCESS_KEY
 * [/ FLOE_SESSION_TOKEN], else AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY [/ AWS_SESSION_TOKEN].
 * Single-threaded (CLI start-up); the strings point into argv and the environment. */
#ifndef FL_CLI_CATALOG_OPTS_H
#define FL_CLI_CATALOG_OPTS_H
#include <stdio.h>
#include "iceberg/io.h"
#include "iceberg/rest_client.h"
#include "iceberg/rest_ops.h"

typedef struct fl_catalog_opts {
    const char *uri, *warehouse, *auth, *region, *signing_name, *token, *credential, *s3_endpoint;
    const char *akid, *secret, *session_token;
} fl_catalog_opts_t;

/* Defaults from the environment. */
void fl_catalog_opts_init(fl_catalog_opts_t *o);
/* If argv[*i] is one of the flags above (--flag value or --flag=value), takes it, advances *i
 * past its value and returns 1; returns 0 if it is not one; -1 (after a message on stderr
 * prefixed with prog) if its value is missing. */
int fl_catalog_opts_arg(fl_catalog_opts_t *o, const char *prog, int argc, char **argv, int *i);
/* The flags' help text, for a command's usage. */
void fl_catalog_opts_usage(FILE *f);
/* Connects to the catalog (GET /v1/config). */
fl_err_t fl_catalog_connect(const fl_catalog_opts_t *o, fl_rest_client_t **c, fl_rest_error_t *err);
/* IO options: the --s3-endpoint override and the keys and region as fallbacks. The strings
 * are borrowed from o. */
void fl_catalog_io_opts(const fl_catalog_opts_t *o, fl_io_opts_t *io);
/* "prog: what: HTTP 404 NoSuchTableException: message" (or the transport message) on stderr.
 * Returns the exit code to use: 1. */
int fl_catalog_report(const char *prog, const char *what, const fl_rest_error_t *err);

/* A table opened for reading or writing through the catalog: the client, the
 * parsed identifier, the table's file IO and the table ops over them. */
typedef struct fl_cli_table {
    fl_rest_client_t *client;
    fl_rest_ident_t ident;
    fl_io_t *io;
    fl_rest_ops_ctx_t ctx;       /* ctx.last: the loaded table */
    fl_table_ops_t ops;
} fl_cli_table_t;

/* Parses name (NAMESPACE.TABLE), connects, loads the table and sets up its IO.
 * On failure reports on stderr (prefixed with prog) and returns the exit code
 * (2 for a bad name, 1 otherwise); 0 on success. Close with fl_cli_table_close
 * in every case. */
int fl_cli_table_open(fl_cli_table_t *t, const fl_catalog_opts_t *o, const char *prog, const char *name);
void fl_cli_table_close(fl_cli_table_t *t);
#endif
