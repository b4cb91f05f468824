/* floe tables: a client for the S3 Tables control plane (floe's own, AWS S3
 * Tables or OSS Tables), in the manner of `aws s3tables` and `ossutil
 * tables-api`. The operations are a data table taken from the S3 Tables
 * model: each names its HTTP method, URI template and members with their
 * location (uri, querystring, body). Flags are the members in kebab case
 * (--table-bucket-arn, --namespace, --name, ...); --cli-input-json FILE
 * supplies members as a JSON object, as with the AWS CLI. Requests are signed
 * with floe's own SigV4 signer (signing name s3tables unless --signing-name)
 * and sent by floe's one HTTP client (net/httpc.h). */
#include "base/buf.h"
#include "base/mem.h"
#include "base/time.h"
#include "cli/cli.h"
#include "net/httpc.h"
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct op {
    const char *name;      /* kebab-case command */
    const char *method;
    const char *uri;       /* with {member} placeholders */
    const char *members;   /* "name:loc[:json]" separated by spaces; loc u=uri q=query b=body */
} op_t;

static const op_t ops[] = {
    { "create-table-bucket", "PUT", "/buckets", "name:b encryptionConfiguration:b:json storageClassConfiguration:b:json tags:b:json" },
    { "list-table-buckets", "GET", "/buckets", "prefix:q continuationToken:q maxBuckets:q type:q" },
    { "get-table-bucket", "GET", "/buckets/{tableBucketARN}", "tableBucketARN:u" },
    { "delete-table-bucket", "DELETE", "/buckets/{tableBucketARN}", "tableBucketARN:u" },
    { "create-namespace", "PUT", "/namespaces/{tableBucketARN}", "tableBucketARN:u namespace:b:list" },
    { "list-namespaces", "GET", "/namespaces/{tableBucketARN}", "tableBucketARN:u prefix:q continuationToken:q maxNamespaces:q" },
    { "get-namespace", "GET", "/namespaces/{tableBucketARN}/{namespace}", "tableBucketARN:u namespace:u" },
    { "delete-namespace", "DELETE", "/namespaces/{tableBucketARN}/{namespace}", "tableBucketARN:u namespace:u" },
    { "create-table", "PUT", "/tables/{tableBucketARN}/{namespace}", "tableBucketARN:u namespace:u name:b format:b metadata:b:json encryptionConfiguration:b:json tags:b:json" },
    { "list-tables", "GET", "/tables/{tableBucketARN}", "tableBucketARN:u namespace:q prefix:q continuationToken:q maxTables:q" },
    { "get-table", "GET", "/get-table", "tableBucketARN:q namespace:q name:q tableArn:q" },
    { "delete-table", "DELETE", "/tables/{tableBucketARN}/{namespace}/{name}", "tableBucketARN:u namespace:u name:u versionToken:q" },
    { "rename-table", "PUT", "/tables/{tableBucketARN}/{namespace}/{name}/rename", "tableBucketARN:u namespace:u name:u newNamespaceName:b newName:b versionToken:b" },
    { "get-table-metadata-location", "GET", "/tables/{tableBucketARN}/{namespace}/{name}/metadata-location", "tableBucketARN:u namespace:u name:u" },
    { "update-table-metadata-location", "PUT", "/tables/{tableBucketARN}/{namespace}/{name}/metadata-location", "tableBucketARN:u namespace:u name:u versionToken:b metadataLocation:b" },
    { "put-table-bucket-policy", "PUT", "/buckets/{tableBucketARN}/policy", "tableBucketARN:u resourcePolicy:b" },
    { "get-table-bucket-policy", "GET", "/buckets/{tableBucketARN}/policy", "tableBucketARN:u" },
    { "delete-table-bucket-policy", "DELETE", "/buckets/{tableBucketARN}/policy", "tableBucketARN:u" },
    { "put-table-policy", "PUT", "/tables/{tableBucketARN}/{namespace}/{name}/policy", "tableBucketARN:u namespace:u name:u resourcePolicy:b" },
    { "get-table-policy", "GET", "/tables/{tableBucketARN}/{namespace}/{name}/policy", "tableBucketARN:u namespace:u name:u" },
    { "delete-table-policy", "DELETE", "/tables/{tableBucketARN}/{namespace}/{name}/policy", "tableBucketARN:u namespace:u name:u" },
    { "put-table-bucket-maintenance-configuration", "PUT", "/buckets/{tableBucketARN}/maintenance/{type}", "tableBucketARN:u type:u value:b:json" },
    { "get-table-bucket-maintenance-configuration", "GET", "/buckets/{tableBucketARN}/maintenance", "tableBucketARN:u" },
    { "put-table-maintenance-configuration", "PUT", "/tables/{tableBucketARN}/{namespace}/{name}/maintenance/{type}", "tableBucketARN:u namespace:u name:u type:u value:b:json" },
    { "get-table-maintenance-configuration", "GET", "/tables/{tableBucketARN}/{namespace}/{name}/maintenance", "tableBucketARN:u namespace:u name:u" },
    { "get-table-maintenance-job-status", "GET", "/tables/{tableBucketARN}/{namespace}/{name}/maintenance-job-status", "tableBucketARN:u namespace:u name:u" },
    { "put-table-bucket-encryption", "PUT", "/buckets/{tableBucketARN}/encryption", "tableBucketARN:u encryptionConfiguration:b:json" },
    { "get-table-bucket-encryption", "GET", "/buckets/{tableBucketARN}/encryption", "tableBucketARN:u" },
    { "delete-table-bucket-encryption", "DELETE", "/buckets/{tableBucketARN}/encryption", "tableBucketARN:u" },
    { "get-table-encryption", "GET", "/tables/{tableBucketARN}/{namespace}/{name}/encryption", "tableBucketARN:u namespace:u name:u" },
    { "tag-resource", "POST", "/tag/{resourceArn}", "resourceArn:u tags:b:json" },
    { "untag-resource", "DELETE", "/tag/{resourceArn}", "resourceArn:u tagKeys:q:list" },
    { "list-tags-for-resource", "GET", "/tag/{resourceArn}", "resourceArn:u" },
};

typedef struct member {
    char name[96];
    char loc;
    bool json, list;
} member_t;

static int parse_members(const char *spec, member_t *out, int cap)
{
    int n = 0;
    const char *p = spec;
    while (*p && n < cap) {
        size_t len = strcspn(p, " ");
        char tok[96];
        snprintf(tok, sizeof tok, "%.*s", (int)len, p);
        char *c1 = strchr(tok, ':');
        member_t m = { 0 };
        if (c1) {
            *c1 = 0;
            m.loc = c1[1];
            m.json = strstr(c1 + 1, ":json") != NULL;
            m.list = strstr(c1 + 1, ":list") != NULL;
        }
        snprintf(m.name, sizeof m.name, "%s", tok);
        out[n++] = m;
        p += len;
        while (*p == ' ') p++;
    }
    return n;
}

/* "table-bucket-arn" matches "tableBucketARN": letters compared case-blind, '-' skipped. */
static bool flag_matches(const char *flag, const char *member)
{
    while (*flag || *member) {
        if (*flag == '-') { flag++; continue; }
        if (tolower((unsigned char)*flag) != tolower((unsigned char)*member)) return false;
        flag++, member++;
    }
    return true;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: floe tables <operation> [--member value ...] [--cli-input-json file://F]\n"
               "       [--endpoint-url URL] [--region R] [--signing-name s3tables|osstables]\n"
               "       [--access-key AK --secret-key SK | --data-dir DIR] [--output table|json]\n\noperations:\n");
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) fprintf(f, "  %s\n", ops[i].name);
    fprintf(f, "\nCredentials: flags, else AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, else\n"
               "FLOE_ROOT_ACCESS_KEY_ID/FLOE_ROOT_SECRET_ACCESS_KEY, else DATA_DIR/root-key (./floe-data).\n");
}

static bool read_root_key(const char *dir, char *ak, char *sk)
{
    char path[4096], line[512];
    snprintf(path, sizeof path, "%s/root-key", dir);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!strncmp(line, "access_key_id=", 14)) fl_strlcpy(ak, line + 14, 128);
        if (!strncmp(line, "secret_access_key=", 18)) fl_strlcpy(sk, line + 18, 128);
    }
    fclose(f);
    return ak[0] && sk[0];
}

/* Prints a response as aligned "key  value" lines; arrays of objects as a table. */
static void print_value(const char *key, json_t *v, int indent);

static void print_table(json_t *arr)
{
    size_t i;
    json_t *row;
    const char *cols[16];
    size_t ncols = 0, width[16] = { 0 };
    json_array_foreach(arr, i, row) {
        const char *k;
        json_t *x;
        json_object_foreach(row, k, x) {
            size_t c;
            for (c = 0; c < ncols && strcmp(cols[c], k); c++) {}
            if (c == ncols && ncols < 16 && !json_is_object(x) && !json_is_array(x)) cols[ncols++] = k;
        }
    }
    for (size_t c = 0; c < ncols; c++) width[c] = strlen(cols[c]);
    json_array_foreach(arr, i, row) for (size_t c = 0; c < ncols; c++) {
        json_t *x = json_object_get(row, cols[c]);
        char *s = x ? (json_is_string(x) ? fl_strdup(json_string_value(x)) : json_dumps(x, JSON_ENCODE_ANY)) : fl_strdup("");
        if (strlen(s) > width[c]) width[c] = strlen(s);
        free(s);
    }
    for (size_t c = 0; c < ncols; c++) printf("%-*s  ", (int)width[c], cols[c]);
    printf("\n");
    json_array_foreach(arr, i, row) {
        for (size_t c = 0; c < ncols; c++) {
            json_t *x = json_object_get(row, cols[c]);
            char *s = x ? (json_is_string(x) ? fl_strdup(json_string_value(x)) : json_dumps(x, JSON_ENCODE_ANY)) : fl_strdup("");
            printf("%-*s  ", (int)width[c], s);
            free(s);
        }
        printf("\n");
    }
}

static void print_value(const char *key, json_t *v, int indent)
{
    if (json_is_array(v) && json_array_size(v) && json_is_object(json_array_get(v, 0))) {
        printf("%*s%s:\n", indent, "", key);
        print_table(v);
        return;
    }
    if (json_is_object(v)) {
        printf("%*s%s:\n", indent, "", key);
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) print_value(k, x, indent + 2);
        return;
    }
    char *s = json_is_string(v) ? fl_strdup(json_string_value(v)) : json_dumps(v, JSON_ENCODE_ANY);
    printf("%*s%-24s %s\n", indent, "", key, s ? s : "");
    free(s);
}

int fl_cmd_tables(int argc, char **argv)
{
    int rc = 2;
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const op_t *op = NULL;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(argv[1], ops[i].name)) op = &ops[i];
    if (!op) {
        fprintf(stderr, "floe tables: unknown operation '%s'\n", argv[1]);
        usage(stderr);
        return 2;
    }
    member_t mem[16];
    int nm = parse_members(op->members, mem, 16);
    json_t *vals = json_object();
    const char *endpoint = getenv("FLOE_CATALOG_ENDPOINT"), *region = getenv("AWS_DEFAULT_REGION");
    const char *service = "s3tables", *output = "table", *data_dir = "./floe-data";
    char ak[128] = "", sk[128] = "";
    if (!endpoint) endpoint = "http://127.0.0.1:8181";
    if (!region) region = "us-east-1";
    fl_buf_t url, path, query, resp;
    fl_buf_init(&url, 0);
    fl_buf_init(&path, 0);
    fl_buf_init(&query, 0);
    fl_buf_init(&resp, 64 << 20);
    char *body = NULL;

    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || i + 1 >= argc) {
            fprintf(stderr, "floe tables: expected --flag value, got '%s'\n", a);
            goto out;
        }
        const char *v = argv[++i];
        a += 2;
        if (!strcmp(a, "endpoint-url") || !strcmp(a, "endpoint")) endpoint = v;
        else if (!strcmp(a, "region")) region = v;
        else if (!strcmp(a, "signing-name")) service = v;
        else if (!strcmp(a, "output")) output = v;
        else if (!strcmp(a, "data-dir")) data_dir = v;
        else if (!strcmp(a, "access-key")) fl_strlcpy(ak, v, sizeof ak);
        else if (!strcmp(a, "secret-key")) fl_strlcpy(sk, v, sizeof sk);
        else if (!strcmp(a, "cli-input-json")) {
            const char *file = !strncmp(v, "file://", 7) ? v + 7 : v;
            json_error_t je;
            json_t *in = json_load_file(file, 0, &je);
            if (!json_is_object(in)) {
                fprintf(stderr, "floe tables: %s: %s\n", file, in ? "not a JSON object" : je.text);
                json_decref(in);
                goto out;
            }
            json_object_update(vals, in);
            json_decref(in);
        } else {
            int k;
            for (k = 0; k < nm && !flag_matches(a, mem[k].name); k++) {}
            if (k == nm) {
                fprintf(stderr, "floe tables %s: unknown flag --%s\n", op->name, a);
                goto out;
            }
            json_t *x = NULL;
            if (mem[k].json) {
                json_error_t je;
                const char *src = !strncmp(v, "file://", 7) ? NULL : v;
                x = src ? json_loads(src, 0, &je) : json_load_file(v + 7, 0, &je);
                if (!x) {
                    fprintf(stderr, "floe tables: --%s: invalid JSON: %s\n", a, je.text);
                    goto out;
                }
            } else if (mem[k].list && mem[k].loc == 'b') {
                x = json_pack("[s]", v);
            } else {
                x = json_string(v);
            }
            json_object_set_new(vals, mem[k].name, x);
        }
    }
    if (!ak[0] || !sk[0]) {
        const char *e1 = getenv("AWS_ACCESS_KEY_ID"), *e2 = getenv("AWS_SECRET_ACCESS_KEY");
        if (!e1 || !e2) e1 = getenv("FLOE_ROOT_ACCESS_KEY_ID"), e2 = getenv("FLOE_ROOT_SECRET_ACCESS_KEY");
        if (e1 && e2) {
            fl_strlcpy(ak, e1, sizeof ak);
            fl_strlcpy(sk, e2, sizeof sk);
        } else if (!read_root_key(data_dir, ak, sk)) {
            fprintf(stderr, "floe tables: no credentials (see 'floe tables --help')\n");
            goto out;
        }
    }

    /* build the request from the member table */
    json_t *bodyobj = json_object();
    for (const char *t = op->uri; *t;) {
        if (*t == '{') {
            const char *end = strchr(t, '}');
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(end - t - 1), t + 1);
            json_t *x = json_object_get(vals, name);
            if (!json_is_string(x)) {
                fprintf(stderr, "floe tables %s: --%s is required\n", op->name, name);
                json_decref(bodyobj);
                goto out;
            }
            fl_uri_encode(fl_slice_cstr(json_string_value(x)), false, &path);
            t = end + 1;
        } else {
            fl_buf_addc(&path, *t++);
        }
    }
    for (int k = 0; k < nm; k++) {
        json_t *x = json_object_get(vals, mem[k].name);
        if (!x || mem[k].loc == 'u') continue;
        if (mem[k].loc == 'b') {
            json_object_set(bodyobj, mem[k].name, x);
            continue;
        }
        size_t n = json_is_array(x) ? json_array_size(x) : 1;
        for (size_t j = 0; j < n; j++) {
            json_t *y = json_is_array(x) ? json_array_get(x, j) : x;
            char *s = json_is_string(y) ? fl_strdup(json_string_value(y)) : json_dumps(y, JSON_ENCODE_ANY);
            if (query.len) fl_buf_addc(&query, '&');
            fl_buf_adds(&query, mem[k].name);
            fl_buf_addc(&query, '=');
            fl_uri_encode(fl_slice_cstr(s), false, &query);
            free(s);
        }
    }
    bool has_body = json_object_size(bodyobj) > 0 || !strcmp(op->method, "PUT") || !strcmp(op->method, "POST");
    body = has_body ? json_dumps(bodyobj, JSON_COMPACT) : NULL;
    json_decref(bodyobj);

    /* endpoint without a trailing path: the operation's path follows the host */
    const char *hoststart = strstr(endpoint, "://");
    hoststart = hoststart ? hoststart + 3 : endpoint;
    fl_buf_printf(&url, "%.*s%s", (int)(hoststart - endpoint + strcspn(hoststart, "/")), endpoint, path.ptr);
    fl_httpc_sigv4_t sig = { .akid = ak, .secret = sk, .region = region, .service = service };
    fl_http_header_t ct = { "content-type", 12, "application/json", 16 };
    fl_httpc_req_t hr = {
        .method = op->method, .url = url.ptr, .query = query.len ? query.ptr : NULL,
        .headers = body ? &ct : NULL, .nheaders = body ? 1 : 0,
        .body = body, .body_len = body ? strlen(body) : 0, .has_body = body != NULL, .body_fd = -1,
        .sigv4 = &sig, .resp = &resp,
    };
    fl_httpc_cfg_t hc = { .timeout_ms = 60000, .max_retries = -1 };
    fl_httpc_t *client = fl_httpc_new(&hc);
    fl_httpc_resp_t hresp;
    fl_remote_error_t rerr;
    fl_err_t he = fl_httpc_do(client, &hr, &hresp, &rerr);
    fl_httpc_free(client);
    if (he != FL_OK) {
        fprintf(stderr, "floe tables: %s: %s\n", endpoint, rerr.message);
        rc = 1;
        goto out;
    }
    if (hresp.status >= 300) {
        fprintf(stderr, "floe tables %s: HTTP %ld: %s\n", op->name, hresp.status, rerr.message);
        rc = 1;
        goto out;
    }
    json_t *doc = resp.len ? json_loadb(resp.ptr, resp.len, 0, NULL) : NULL;
    if (doc && !strcmp(output, "json")) {
        char *s = json_dumps(doc, JSON_INDENT(2));
        printf("%s\n", s);
        free(s);
    } else if (doc) {
        const char *k;
        json_t *x;
        json_object_foreach(doc, k, x) print_value(k, x, 0);
    }
    json_decref(doc);
    rc = 0;
out:
    free(body);
    json_decref(vals);
    fl_buf_free(&url);
    fl_buf_free(&path);
    fl_buf_free(&query);
    fl_buf_free(&resp);
    return rc;
}
