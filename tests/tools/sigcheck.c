/* sigcheck: runs requests through floe's one signature verifier for the tests
 * that take their expected values from the clients' own signers at test time
 * (tests/integration/test_oss_signers.py: alibabacloud-oss-v2's OSS4 signers,
 * oss2's V1 signer, botocore's SigV4). Reads one JSON object a line on stdin:
 *   {"method", "path", "query", "headers": [[name, value], ...], "now": seconds,
 *    "akid", "secret",                    the one key the lookup knows
 *    "region": "us-east-1" | null,        the region floe serves (null: any)
 *    "products": ["oss", "osstables"],    accepted OSS4 products (null: none)
 *    "services": ["s3", ...],             accepted SigV4 signing names
 *    "tables": false,                     true: the tables flavour's resource, as
 *                                         the catalog port computes it
 *    "resource": null,                    else an explicit object resource
 *                                         ("/bucket/key", as for virtual hosts)
 *    "head": false}                       true: fl_sigv4_check_head only
 * and writes one JSON object a line on stdout:
 *   {"ok", "dialect", "status", "code", "message", "detail_name", "detail_value",
 *    "akid", "service", "presigned", "payload_mode", "resource"}.
 * Header names are lower-cased as the HTTP parser leaves them. All lines go
 * through one process, so the signing-key cache is shared between cases.
 * Exit 2 on malformed input. */
#include "auth/sigv4.h"
#include "base/buf.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HEADERS 64
#define MAX_LIST 8

typedef struct key {
    const char *akid, *secret;
} sc_key_t;

static bool lookup(void *ud, const char *akid, char *secret_out)
{
    const sc_key_t *k = ud;
    if (!k->akid || strcmp(akid, k->akid)) return false;
    snprintf(secret_out, 128, "%s", k->secret ? k->secret : "");
    return true;
}

static const char *str(json_t *o, const char *name)
{
    json_t *v = json_object_get(o, name);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* A NULL-terminated list out of a JSON array of strings; NULL for null/absent. */
static const char *const *list(json_t *o, const char *name, const char **out, const char *const *dflt)
{
    json_t *a = json_object_get(o, name);
    if (!a) return dflt;
    if (!json_is_array(a)) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(a) && n < MAX_LIST; i++)
        if (json_is_string(json_array_get(a, i))) out[n++] = json_string_value(json_array_get(a, i));
    out[n] = NULL;
    return out;
}

static const char *dialect_name(fl_sig_dialect_t d)
{
    switch (d) {
    case FL_SIG_AWS4: return "aws4";
    case FL_SIG_OSS4: return "oss4";
    case FL_SIG_OSS1: return "oss1";
    default: return "none";
    }
}

static int run_case(json_t *in)
{
    int rc = 0;
    fl_http_header_t h[MAX_HEADERS];
    char *names[MAX_HEADERS] = { 0 };
    size_t nh = 0;
    fl_buf_t res;
    fl_buf_init(&res, 4096);
    json_t *out = json_object();
    json_t *hs = json_object_get(in, "headers");
    const char *method = str(in, "method"), *path = str(in, "path"), *query = str(in, "query");
    if (!method || !path || (hs && !json_is_array(hs))) {
        rc = 2;
        goto out;
    }
    for (size_t i = 0; hs && i < json_array_size(hs); i++) {
        json_t *p = json_array_get(hs, i);
        const char *n = json_string_value(json_array_get(p, 0)), *v = json_string_value(json_array_get(p, 1));
        if (!n || !v || nh == MAX_HEADERS) {
            rc = 2;
            goto out;
        }
        names[nh] = strdup(n);
        for (char *c = names[nh]; *c; c++)
            if (*c >= 'A' && *c <= 'Z') *c += 32;
        h[nh] = (fl_http_header_t){ names[nh], strlen(n), v, strlen(v) };
        nh++;
    }
    fl_sigv4_req_t r = { method, path, strlen(path), query && *query ? query : NULL,
                         query ? strlen(query) : 0, h, nh };
    sc_key_t key = { str(in, "akid"), str(in, "secret") };
    static const char *const dflt_products[] = { "oss", "osstables", NULL };
    static const char *const dflt_services[] = { "s3", "s3tables", "osstables", NULL };
    const char *pl[MAX_LIST + 1], *sl[MAX_LIST + 1];
    fl_sigv4_cfg_t cfg = { .lookup = lookup, .lookup_ud = &key,
                           .services = list(in, "services", sl, dflt_services),
                           .now = json_integer_value(json_object_get(in, "now")),
                           .region = json_object_get(in, "region") ? str(in, "region") : "us-east-1",
                           .oss_products = list(in, "products", pl, dflt_products) };
    if (json_is_true(json_object_get(in, "tables"))) {
        if (fl_oss4_tables_resource(&r, cfg.region ? cfg.region : "", &res) == FL_OK) {
            cfg.oss_resource = res.ptr;
            cfg.oss_resource_len = res.len;
            json_object_set_new(out, "resource", json_string(res.ptr));
        } else {
            cfg.oss_resource = "/";
            cfg.oss_resource_len = 1;
        }
    } else if (str(in, "resource")) {
        cfg.oss_resource = str(in, "resource");
        cfg.oss_resource_len = strlen(cfg.oss_resource);
    }
    fl_sigv4_auth_t a;
    fl_sigv4_error_t err = { 0 };
    fl_err_t e = json_is_true(json_object_get(in, "head")) ? fl_sigv4_check_head(&r, &cfg, &err)
                                                          : fl_sigv4_verify(&r, &cfg, NULL, &a, &err);
    json_object_set_new(out, "ok", json_boolean(e == FL_OK));
    json_object_set_new(out, "dialect", json_string(dialect_name(fl_sigv4_dialect(&r))));
    if (e != FL_OK) {
        json_object_set_new(out, "status", json_integer(err.status));
        json_object_set_new(out, "code", err.code ? json_string(err.code) : json_null());
        json_object_set_new(out, "message", json_string(err.message));
        if (err.detail_name) {
            json_object_set_new(out, "detail_name", json_string(err.detail_name));
            json_object_set_new(out, "detail_value", json_string(err.detail_value));
        }
    } else if (!json_is_true(json_object_get(in, "head"))) {
        json_object_set_new(out, "verified_dialect", json_string(dialect_name(a.dialect)));
        json_object_set_new(out, "akid", json_string(a.akid));
        json_object_set_new(out, "service", json_string(a.service));
        json_object_set_new(out, "presigned", json_boolean(a.presigned));
        json_object_set_new(out, "payload_mode", json_integer(a.payload_mode));
    }
    char *s = json_dumps(out, JSON_COMPACT);
    if (s) {
        puts(s);
        free(s);
    }
out:
    for (size_t i = 0; i < nh; i++) free(names[i]);
    json_decref(out);
    fl_buf_free(&res);
    return rc;
}

int main(void)
{
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (getline(&line, &cap, stdin) > 0) {
        if (line[0] == '\n') continue;
        json_error_t je;
        json_t *in = json_loads(line, 0, &je);
        if (!in || !json_is_object(in)) {
            fprintf(stderr, "sigcheck: bad input line: %s\n", je.text);
            json_decref(in);
            rc = 2;
            break;
        }
        rc = run_case(in);
        json_decref(in);
        if (rc) {
            fprintf(stderr, "sigcheck: malformed case\n");
            break;
        }
        fflush(stdout);
    }
    free(line);
    return rc;
}
