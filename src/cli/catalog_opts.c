/* Connection flags and environment for the catalog-client commands (see catalog_opts.h). */
#include "cli/catalog_opts.h"
#include "base/mem.h"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const char *env(const char *a, const char *b)
{
    const char *v = getenv(a);
    if ((!v || !*v) && b) v = getenv(b);
    return v && *v ? v : NULL;
}

void fl_catalog_opts_init(fl_catalog_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->uri = env("FLOE_CATALOG_URI", NULL);
    if (!o->uri) o->uri = "http://127.0.0.1:8181/iceberg";
    o->warehouse = env("FLOE_WAREHOUSE", NULL);
    o->region = env("AWS_REGION", "AWS_DEFAULT_REGION");
    o->token = env("FLOE_TOKEN", NULL);
    o->credential = env("FLOE_OAUTH_CREDENTIAL", NULL);
    if (env("FLOE_ACCESS_KEY_ID", NULL) && env("FLOE_SECRET_ACCESS_KEY", NULL)) {
        o->akid = env("FLOE_ACCESS_KEY_ID", NULL);
        o->secret = env("FLOE_SECRET_ACCESS_KEY", NULL);
        o->session_token = env("FLOE_SESSION_TOKEN", NULL);
    } else {
        o->akid = env("AWS_ACCESS_KEY_ID", NULL);
        o->secret = env("AWS_SECRET_ACCESS_KEY", NULL);
        o->session_token = env("AWS_SESSION_TOKEN", NULL);
    }
}

static const struct {
    const char *flag;
    size_t off;
} flags[] = {
    { "catalog-uri", offsetof(fl_catalog_opts_t, uri) },
    { "warehouse", offsetof(fl_catalog_opts_t, warehouse) },
    { "auth", offsetof(fl_catalog_opts_t, auth) },
    { "region", offsetof(fl_catalog_opts_t, region) },
    { "signing-name", offsetof(fl_catalog_opts_t, signing_name) },
    { "token", offsetof(fl_catalog_opts_t, token) },
    { "credential", offsetof(fl_catalog_opts_t, credential) },
    { "s3-endpoint", offsetof(fl_catalog_opts_t, s3_endpoint) },
};

int fl_catalog_opts_arg(fl_catalog_opts_t *o, const char *prog, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (strncmp(a, "--", 2)) return 0;
    a += 2;
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++) {
        size_t fl = strlen(flags[k].flag);
        if (strncmp(a, flags[k].flag, fl) || (a[fl] && a[fl] != '=')) continue;
        const char *v;
        if (a[fl] == '=') {
            v = a + fl + 1;
        } else if (*i + 1 < argc) {
            v = argv[++*i];
        } else {
            fprintf(stderr, "%s: --%s needs a value\n", prog, flags[k].flag);
            return -1;
        }
        *(const char **)((char *)o + flags[k].off) = v;
        return 1;
    }
    return 0;
}

void fl_catalog_opts_usage(FILE *f)
{
    fprintf(f, "connection:\n"
               "  --catalog-uri URI     REST catalog (default $FLOE_CATALOG_URI or http://127.0.0.1:8181/iceberg)\n"
               "  --warehouse ARN       warehouse, e.g. the table-bucket ARN (default $FLOE_WAREHOUSE)\n"
               "  --auth MODE           none|sigv4|bearer|oauth2 (default: from what is given)\n"
               "  --region R            SigV4 region (default $AWS_REGION or us-east-1)\n"
               "  --signing-name N      SigV4 signing name (default s3tables; osstables for OSS)\n"
               "  --token T             bearer token (default $FLOE_TOKEN)\n"
               "  --credential ID:SEC   OAuth2 client credentials (default $FLOE_OAUTH_CREDENTIAL)\n"
               "  --s3-endpoint URL     data-plane endpoint, overriding the catalog's s3.endpoint\n"
               "keys: FLOE_ACCESS_KEY_ID/FLOE_SECRET_ACCESS_KEY[/FLOE_SESSION_TOKEN], else\n"
               "      AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY[/AWS_SESSION_TOKEN]\n");
}

fl_err_t fl_catalog_connect(const fl_catalog_opts_t *o, fl_rest_client_t **c, fl_rest_error_t *err)
{
    fl_rest_opts_t ro = {
        .uri = o->uri, .warehouse = o->warehouse, .region = o->region, .signing_name = o->signing_name,
        .access_key_id = o->akid, .secret_access_key = o->secret, .session_token = o->session_token,
        .token = o->token,
    };
    char *id = NULL;
    const char *a = o->auth;
    if (!a) a = o->token ? "bearer" : o->credential ? "oauth2" : o->akid && o->secret ? "sigv4" : "none";
    if (!strcmp(a, "none")) ro.auth = FL_REST_AUTH_NONE;
    else if (!strcmp(a, "sigv4")) ro.auth = FL_REST_AUTH_SIGV4;
    else if (!strcmp(a, "bearer")) ro.auth = FL_REST_AUTH_BEARER;
    else if (!strcmp(a, "oauth2")) ro.auth = FL_REST_AUTH_OAUTH2;
    else return fl_remote_error_set(err, FL_ERR_INVALID, "unknown --auth '%s' (none, sigv4, bearer, oauth2)", a);
    if (ro.auth == FL_REST_AUTH_SIGV4 && (!o->akid || !o->secret))
        return fl_remote_error_set(err, FL_ERR_AUTH, "SigV4 needs keys: set FLOE_ACCESS_KEY_ID and "
                                   "FLOE_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)");
    if (ro.auth == FL_REST_AUTH_OAUTH2) {
        const char *colon = o->credential ? strchr(o->credential, ':') : NULL;
        if (!colon) return fl_remote_error_set(err, FL_ERR_AUTH, "OAuth2 needs --credential CLIENT_ID:CLIENT_SECRET");
        id = fl_strndup(o->credential, (size_t)(colon - o->credential));
        ro.oauth_client_id = id;
        ro.oauth_client_secret = colon + 1;
    }
    fl_err_t e = fl_rest_client_new(&ro, c, err);
    free(id);
    return e;
}

void fl_catalog_io_opts(const fl_catalog_opts_t *o, fl_io_opts_t *io)
{
    fl_io_opts_default(io);
    io->s3_endpoint = o->s3_endpoint;
    io->access_key_id = o->akid;
    io->secret_access_key = o->secret;
    io->session_token = o->session_token;
    io->region = o->region;
}

int fl_catalog_report(const char *prog, const char *what, const fl_rest_error_t *err)
{
    if (err->status)
        fprintf(stderr, "%s: %s: HTTP %d%s%s: %s\n", prog, what, err->status, err->type[0] ? " " : "",
                err->type, err->message);
    else
        fprintf(stderr, "%s: %s: %s\n", prog, what, err->message[0] ? err->message : "failed");
    return 1;
}

int fl_cli_table_open(fl_cli_table_t *t, const fl_catalog_opts_t *o, const char *prog, const char *name)
{
    memset(t, 0, sizeof *t);
    fl_rest_error_t re;
    memset(&re, 0, sizeof re);
    if (fl_rest_ident_parse(name, true, &t->ident)) {
        fprintf(stderr, "%s: \"%s\" is not NAMESPACE.TABLE\n", prog, name);
        return 2;
    }
    if (fl_catalog_connect(o, &t->client, &re)) return fl_catalog_report(prog, "connecting to the catalog", &re);
    if (fl_rest_load_table(t->client, &t->ident, &t->ctx.last, &re)) return fl_catalog_report(prog, name, &re);
    fl_io_opts_t ioo;
    fl_io_opts_default(&ioo);
    fl_catalog_io_opts(o, &ioo);
    if (fl_io_new(t->ctx.last.config, &ioo, &t->io)) {
        fprintf(stderr, "%s: cannot set up the table's file IO\n", prog);
        return 1;
    }
    t->ctx.client = t->client;
    t->ctx.ident = &t->ident;
    t->ctx.io = t->io;
    fl_rest_table_ops(&t->ctx, &t->ops);
    return 0;
}

void fl_cli_table_close(fl_cli_table_t *t)
{
    fl_rest_ops_ctx_free(&t->ctx);
    fl_io_free(t->io);
    fl_rest_ident_free(&t->ident);
    fl_rest_client_free(t->client);
    memset(t, 0, sizeof *t);
}
