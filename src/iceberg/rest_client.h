/* An Iceberg REST catalog client (OpenAPI rest-catalog-open-api.yaml; reference/iceberg.md
 * §1, §5): config, namespaces, tables, commits and multi-table transactions, over libcurl
 * with SigV4 (signing name s3tables / osstables / execute-api), a bearer token or OAuth2
 * client credentials.
 *
 * The client fetches GET {uri}/v1/config?warehouse= once, at fl_rest_client_new, and keeps
 * the merged configuration (server defaults <- client properties <- server overrides); its
 * "prefix" is pasted verbatim into every path. A loaded table carries the configuration its
 * FileIO should use (catalog config <- LoadTableResult.config <- the best-matching
 * storage-credentials entry): hand it to fl_io_new (iceberg/io.h).
 *
 * Errors: every call returns fl_err_t and fills a fl_remote_error_t (HTTP status, error type,
 * message) on failure. fl_err_t by status: 400/422 FL_ERR_INVALID, 401/403 FL_ERR_AUTH, 404
 * FL_ERR_NOT_FOUND, 409 FL_ERR_EXISTS for AlreadyExists errors, FL_ERR_NOT_EMPTY for
 * NamespaceNotEmpty, else FL_ERR_CONFLICT; transport failures FL_ERR_IO / FL_ERR_TIMEOUT;
 * malformed responses FL_ERR_PROTO. GET and HEAD are retried on connection errors, 429 and
 * 5xx; nothing else is.
 *
 * Ownership: json_t * arguments are borrowed; json_t * results are new references the caller
 * owns (fl_rest_table_free releases a table's). Threads: all calls on one client may come
 * from any thread concurrently (the HTTP layer pools handles; the OAuth2 token is guarded by a
 * lock); the client must outlive them. */
#ifndef FL_ICEBERG_REST_CLIENT_H
#define FL_ICEBERG_REST_CLIENT_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/err.h"
#include "net/httpc.h"

typedef fl_remote_error_t fl_rest_error_t;

typedef enum fl_rest_auth {
    FL_REST_AUTH_NONE = 0,
    FL_REST_AUTH_SIGV4,       /* access key / secret / session token, region, signing name */
    FL_REST_AUTH_BEARER,      /* token */
    FL_REST_AUTH_OAUTH2,      /* client_credentials at oauth2_server_uri or {uri}/v1/oauth/tokens */
} fl_rest_auth_t;

typedef struct fl_rest_opts {
    const char *uri;            /* catalog base, e.g. http://127.0.0.1:8181/iceberg (required) */
    const char *warehouse;      /* e.g. a table-bucket ARN; NULL = none */
    fl_rest_auth_t auth;
    const char *token;          /* BEARER */
    const char *oauth_client_id, *oauth_client_secret; /* OAUTH2 */
    const char *oauth_scope;    /* default "catalog" */
    const char *oauth_server_uri; /* default {uri}/v1/oauth/tokens */
    const char *access_key_id, *secret_access_key, *session_token; /* SIGV4 */
    const char *region;         /* SIGV4 region, default us-east-1 */
    const char *signing_name;   /* SIGV4 service, default s3tables */
    json_t *properties;         /* extra client properties (string map) merged into the config; may be NULL */
    long connect_timeout_ms;    /* default 10 s */
    long timeout_ms;            /* per request, default 120 s */
    int max_retries;            /* for GET/HEAD; default 3; < 0 = none */
} fl_rest_opts_t;

typedef struct fl_rest_client fl_rest_client_t;

/* A table or namespace identifier: namespace levels plus (for tables) a name. Owned strings. */
typedef struct fl_rest_ident {
    char **ns;
    size_t nns;
    char *name;                 /* NULL for a namespace */
} fl_rest_ident_t;

/* A loaded table. */
typedef struct fl_rest_table {
    char *metadata_location;    /* NULL only for a staged create */
    json_t *metadata;           /* TableMetadata (format/spec §2.1) */
    json_t *config;             /* string map for this table's FileIO (see above) */
} fl_rest_table_t;

/* Connects: copies opts, obtains an OAuth2 token if asked, fetches /v1/config and merges it.
 * On failure *out is NULL and err says why (e.g. 403 from a wrong secret, 404 for an unknown
 * warehouse). Any thread; the result is then shareable. */
fl_err_t fl_rest_client_new(const fl_rest_opts_t *opts, fl_rest_client_t **out,
                            fl_rest_error_t *err);
void fl_rest_client_free(fl_rest_client_t *c);

/* The merged catalog configuration (borrowed; valid for the client's life), and one value of
 * it (NULL if absent). */
json_t *fl_rest_client_config(const fl_rest_client_t *c);
const char *fl_rest_client_prop(const fl_rest_client_t *c, const char *key);

/* Whether the catalog's /v1/config listed endpoint (e.g. "POST /v1/{prefix}/transactions/commit"):
 * 1 listed, 0 not listed (the catalog does not offer it), -1 no list (a catalog older than the
 * endpoints field, or one that sent an empty list: try, and judge by the answer). */
int fl_rest_client_endpoint(const fl_rest_client_t *c, const char *endpoint);

/* ---- identifiers ---- */

/* "a.b.t" -> namespace [a, b], name t (with_name), or namespace [a, b, t] (!with_name).
 * FL_ERR_INVALID for an empty string or an empty level. Free with fl_rest_ident_free. */
fl_err_t fl_rest_ident_parse(const char *dotted, bool with_name, fl_rest_ident_t *out);
/* From levels and an optional name (copied). */
void fl_rest_ident_make(const char *const *levels, size_t n, const char *name, fl_rest_ident_t *out);
void fl_rest_ident_free(fl_rest_ident_t *id);
/* "a.b.t" form into out (appended). */
void fl_rest_ident_format(const fl_rest_ident_t *id, fl_buf_t *out);

/* ---- namespaces ---- */

/* Namespaces under parent (NULL or zero levels = top level), all pages: *out is an array of
 * level arrays, e.g. [["a"],["a","b"]]. */
fl_err_t fl_rest_list_namespaces(fl_rest_client_t *c, const fl_rest_ident_t *parent, json_t **out,
                                 fl_rest_error_t *err);
/* Creates ns with properties (string map, may be NULL). FL_ERR_EXISTS if it exists. */
fl_err_t fl_rest_create_namespace(fl_rest_client_t *c, const fl_rest_ident_t *ns, json_t *properties,
                                  fl_rest_error_t *err);
/* Properties of ns into *props (may be NULL to test existence). FL_ERR_NOT_FOUND if absent. */
fl_err_t fl_rest_load_namespace(fl_rest_client_t *c, const fl_rest_ident_t *ns, json_t **props,
                                fl_rest_error_t *err);
/* FL_ERR_NOT_EMPTY if it still holds tables. */
fl_err_t fl_rest_drop_namespace(fl_rest_client_t *c, const fl_rest_ident_t *ns, fl_rest_error_t *err);

/* ---- tables ---- */

/* Tables of ns, all pages: *out is the array of identifiers [{"namespace":[..],"name":".."}]. */
fl_err_t fl_rest_list_tables(fl_rest_client_t *c, const fl_rest_ident_t *ns, json_t **out,
                             fl_rest_error_t *err);

/* GET .../tables/{t} (all snapshots). *out is filled (zero it first; free with
 * fl_rest_table_free). FL_ERR_NOT_FOUND for no such table or namespace. */
fl_err_t fl_rest_load_table(fl_rest_client_t *c, const fl_rest_ident_t *t, fl_rest_table_t *out,
                            fl_rest_error_t *err);
void fl_rest_table_free(fl_rest_table_t *t);

typedef struct fl_rest_create {
    json_t *schema;             /* Iceberg schema JSON (required) */
    json_t *partition_spec;     /* may be NULL (unpartitioned) */
    json_t *write_order;        /* may be NULL */
    json_t *properties;         /* string map, may be NULL */
    const char *location;       /* NULL = the catalog chooses */
    bool stage_create;
} fl_rest_create_t;

/* POST .../namespaces/{ns}/tables; t names the new table. *out as for load. FL_ERR_EXISTS if
 * a table or view of that name exists. */
fl_err_t fl_rest_create_table(fl_rest_client_t *c, const fl_rest_ident_t *t, const fl_rest_create_t *req,
                              fl_rest_table_t *out, fl_rest_error_t *err);

/* DELETE .../tables/{t}[?purgeRequested=true] (S3 Tables only accepts purge). */
fl_err_t fl_rest_drop_table(fl_rest_client_t *c, const fl_rest_ident_t *t, bool purge,
                            fl_rest_error_t *err);

/* Commits to table t: POST .../tables/{t} with {"identifier","requirements","updates"}
 * (arrays of requirement / update objects, reference/iceberg.md §1.7; NULL = []).
 * FL_OK: table->metadata_location and table->metadata are replaced by the committed ones
 * (table->config kept; set to the catalog config if it was NULL); table may be a zeroed
 * struct, or NULL to discard the answer. FL_ERR_CONFLICT (409 CommitFailed): nothing was applied; reload, rebuild the
 * updates on the fresh metadata and retry. Any other failure: *commit_unknown tells whether
 * the commit may nevertheless have landed (5xx, or the connection failed after the request
 * may have been sent): then do not delete the files the commit references; reload to find
 * out. Never retried internally. */
fl_err_t fl_rest_commit(fl_rest_client_t *c, const fl_rest_ident_t *t, json_t *requirements,
                        json_t *updates, fl_rest_table_t *table, bool *commit_unknown,
                        fl_rest_error_t *err);

/* Multi-table atomic commit: POST {p}/transactions/commit with {"table-changes": changes}
 * (each {"identifier":{"namespace","name"},"requirements","updates"}). Same status semantics
 * as fl_rest_commit; the server answers 204 without metadata, so reload what you need. */
fl_err_t fl_rest_commit_transaction(fl_rest_client_t *c, json_t *changes, bool *commit_unknown,
                                    fl_rest_error_t *err);

/* ---- pure pieces, exposed for tests ---- */

/* Path segment for a namespace: each level percent-encoded (RFC 3986 unreserved kept), joined
 * by sep (the config's namespace-separator, "%1F" when NULL). Appends to out. */
fl_err_t fl_rest_ns_encode(const fl_rest_ident_t *ns, const char *sep, fl_buf_t *out);
/* defaults <- client <- overrides, keeping only string values (any may be NULL). New object. */
json_t *fl_rest_config_merge(json_t *defaults, json_t *client, json_t *overrides);
/* The FileIO configuration of a LoadTableResult: catalog <- result.config <- the
 * storage-credentials entry whose prefix is the longest prefix of location. New object. */
json_t *fl_rest_table_io_config(json_t *catalog, json_t *load_result, const char *location);

#endif
