/* S3 Tables control plane: the REST-JSON API of botocore's "s3tables" model
 * (2018-05-10) on the catalog port.
 *
 * One request is one treq_t on the connection's thread. The route table maps
 * (method, path pattern) to a handler and the operation name used for metrics;
 * `{...}` segments of a pattern capture one raw path segment, percent-decoded
 * once (a table-bucket ARN travels as a single "%3A"/"%2F"-escaped segment).
 * Every failure goes through fail(), which renders the one S3 Tables error
 * shape (x-amzn-ErrorType header + {"message": ...}); the error-type -> HTTP
 * status map and the fl_err_t -> error-type map are data tables below.
 *
 * Tables are created, dropped, renamed and their pointers moved through the
 * table service (catalog/tablesvc.h), under the same per-table lock as Iceberg
 * REST commits. Other resources live in the catalog store (meta/catalog.h): table buckets,
 * namespaces and tables as rows; policies, maintenance configuration,
 * encryption, storage class, tags, metrics and logging configuration as JSON
 * documents attached to the bucket's or table's ARN. Stored maintenance
 * documents are always complete (defaults filled in), so the maintenance
 * scheduler reads them without knowing S3 Tables' defaults. Replication and
 * Glue table migration are answered with clear errors in the model's shapes;
 * record expiration answers MethodNotAllowedException, as S3 Tables does for
 * tables that are not AWS-managed. */
#include "api/tables.h"
#include "auth/policy.h"
#include "catalog/iam.h"
#include "catalog/maintcfg.h"
#include "catalog/tablesvc.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/query.h"
#include "base/time.h"
#include "base/uuid.h"
#include "iceberg/metadata.h"
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CAPTURES 6
#define STALE_TOKEN "The provided version token does not match the table's current version token."

typedef struct treq {
    fl_api_req_t *r;
    const fl_catalog_cfg_t *cfg;
    fl_tablesvc_t *svc;
    const fl_tablesvc_cfg_t *sc;  /* the service's stores and ARN scope */
    fl_catalog_t *cat;
    char *cap[MAX_CAPTURES]; /* decoded `{...}` path segments, in pattern order */
    int ncap;
    fl_query_t q;                 /* decoded query parameters */
    json_t *body; /* parsed request body (object), lazily */
    bool responded;
} treq_t;

/* ------------------------------------------------------------------ */
/* errors                                                              */

/* Error shapes of the model and their HTTP statuses. */
static const struct {
    const char *type;
    int status;
    const char *message; /* default text */
} error_types[] = {
    { "BadRequestException", 400, "The request is invalid." },
    { "ForbiddenException", 403, "Access denied." },
    { "AccessDeniedException", 403, "Access denied." },
    { "NotFoundException", 404, "The specified resource does not exist." },
    { "UnknownOperationException", 404, "The requested operation is not supported." },
    { "MethodNotAllowedException", 405, "The method is not allowed for this resource." },
    { "ConflictException", 409, "The request conflicts with the current state of the resource." },
    { "TooManyRequestsException", 429, "Too many requests." },
    { "InternalServerErrorException", 500, "The server encountered an internal error." },
};

/* Internal status -> error shape. Anything else is InternalServerErrorException. */
static const struct {
    fl_err_t e;
    const char *type;
} err_types[] = {
    { FL_ERR_INVALID, "BadRequestException" },
    { FL_ERR_TOO_LARGE, "BadRequestException" },
    { FL_ERR_NOT_FOUND, "NotFoundException" },
    { FL_ERR_NO_BUCKET, "NotFoundException" },
    { FL_ERR_EXISTS, "ConflictException" },
    { FL_ERR_NOT_EMPTY, "ConflictException" },
    { FL_ERR_CONFLICT, "ConflictException" },
    { FL_ERR_PRECONDITION, "ConflictException" },
    { FL_ERR_AUTH, "ForbiddenException" },
};

static int status_of(const char *type, const char **default_msg)
{
    for (size_t i = 0; i < sizeof error_types / sizeof error_types[0]; i++)
        if (!strcmp(error_types[i].type, type)) {
            if (default_msg) *default_msg = error_types[i].message;
            return error_types[i].status;
        }
    if (default_msg) *default_msg = "The server encountered an internal error.";
    return 500;
}

/* Renders an S3 Tables error (see catalog.h); also used by the front door before dispatch.
 * The request's dialect picks the header naming the error: x-amzn-ErrorType
 * (S3 Tables, botocore) or x-oss-error-type (OSS Tables, whose SDK reads the
 * name there and the text from "message"). Connection thread only. */
void fl_tables_error(fl_api_req_t *r, int status, const char *type, const char *msg)
{
    json_t *o = json_object(), *m = json_string(msg ? msg : "");
    if (!m) m = json_string("The request is invalid."); /* msg echoed bytes that are not UTF-8 */
    json_object_set_new(o, "message", m);
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    fl_http_resp_status(r->c, status);
    fl_http_resp_header(r->c, fl_sig_is_oss(r->dialect) ? "x-oss-error-type" : "x-amzn-ErrorType", type);
    fl_http_resp_header(r->c, "Content-Type", "application/json");
    if (text) fl_http_resp_send(r->c, text, strlen(text));
    else fl_http_resp_send(r->c, "{}", 2);
    free(text);
}

/* The one path to an error response inside this file. fmt NULL = the type's default text. */
static void fail(treq_t *t, const char *type, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(treq_t *t, const char *type, const char *fmt, ...)
{
    if (t->responded) return;
    t->responded = true;
    const char *def;
    int status = status_of(type, &def);
    char msg[1024];
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
    } else {
        fl_strlcpy(msg, def, sizeof msg);
    }
    fl_tables_error(t->r, status, type, msg);
}

/* Renders an internal failure; msg NULL = the type's default text. */
static void fail_err(treq_t *t, fl_err_t e, const char *msg)
{
    const char *type = "InternalServerErrorException";
    for (size_t i = 0; i < sizeof err_types / sizeof err_types[0]; i++)
        if (err_types[i].e == e) type = err_types[i].type;
    if (!strcmp(type, "InternalServerErrorException"))
        fl_warn("tables: %s failed: %s", fl_http_request_id(t->r->c), fl_err_str(e));
    if (msg) fail(t, type, "%s", msg);
    else fail(t, type, NULL);
}

/* ------------------------------------------------------------------ */
/* responses                                                           */

/* Sends obj (reference stolen; NULL = empty body) with status. */
static void reply(treq_t *t, int status, json_t *obj)
{
    if (t->responded) {
        json_decref(obj);
        return;
    }
    char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    if (obj && !text) {
        fail(t, "InternalServerErrorException", NULL);
        return;
    }
    t->responded = true;
    fl_http_resp_status(t->r->c, status);
    if (text) {
        fl_http_resp_header(t->r->c, "Content-Type", "application/json");
        fl_http_resp_send(t->r->c, text, strlen(text));
    } else {
        fl_http_resp_send(t->r->c, NULL, 0);
    }
    free(text);
}

static void jset_str(json_t *o, const char *k, const char *v)
{
    if (v) json_object_set_new(o, k, json_string(v));
}

static void jset_time(json_t *o, const char *k, int64_t ms)
{
    char ts[40];
    fl_time_iso8601(ms, ts, sizeof ts);
    json_object_set_new(o, k, json_string(ts));
}

static json_t *ns_list_json(const char *ns)
{
    json_t *a = json_array();
    json_array_append_new(a, json_string(ns));
    return a;
}

/* ------------------------------------------------------------------ */
/* request helpers                                                     */

static const char *qget(const treq_t *t, const char *name)
{
    return fl_query_get(&t->q, name);
}

/* The request body as a JSON object (borrowed; {} when there is none). NULL after a 400. */
static json_t *body(treq_t *t)
{
    if (t->body) return t->body;
    if (t->r->body_len == 0) return t->body = json_object();
    json_error_t je;
    json_t *j = json_loadb(t->r->body, t->r->body_len, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        fail(t, "BadRequestException", "The request body is not valid JSON: %s (line %d, column %d).", je.text,
             je.line, je.column);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        fail(t, "BadRequestException", "The request body must be a JSON object.");
        return NULL;
    }
    return t->body = j;
}

/* A string member: *out NULL when absent and optional. False after a 400. */
static bool get_str(treq_t *t, json_t *o, const char *key, bool required, size_t lo, size_t hi,
                    const char **out)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v)) {
        if (required) fail(t, "BadRequestException", "The request is missing the required member '%s'.", key);
        return !required;
    }
    if (!json_is_string(v)) {
        fail(t, "BadRequestException", "The member '%s' must be a string.", key);
        return false;
    }
    size_t n = json_string_length(v);
    if (n < lo || n > hi || strlen(json_string_value(v)) != n) {
        fail(t, "BadRequestException", "The member '%s' must be %zu to %zu characters long.", key, lo, hi);
        return false;
    }
    *out = json_string_value(v);
    return true;
}

/* An object member (borrowed; NULL when absent). False after a 400. */
static bool get_obj(treq_t *t, json_t *o, const char *key, bool required, json_t **out)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v)) {
        if (required) fail(t, "BadRequestException", "The request is missing the required member '%s'.", key);
        return !required;
    }
    if (!json_is_object(v)) {
        fail(t, "BadRequestException", "The member '%s' must be an object.", key);
        return false;
    }
    *out = v;
    return true;
}

static bool in_list(const char *s, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(s, list[i])) return true;
    return false;
}

/* ------------------------------------------------------------------ */
/* naming rules                                                        */

static bool lower_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* Table bucket: 3-63 of [a-z0-9-], starting and ending with a letter or digit, no reserved
 * prefix or suffix. */
static bool bucket_name_ok(const char *s)
{
    static const char *const bad_prefix[] = { "xn--", "sthree-", "amzn-s3-demo-", "aws", NULL };
    static const char *const bad_suffix[] = { "-s3alias", "--ol-s3", "--x-s3", "--table-s3", NULL };
    size_t n = strlen(s);
    if (n < 3 || n > 63 || !lower_digit(s[0]) || !lower_digit(s[n - 1])) return false;
    for (size_t i = 0; i < n; i++)
        if (!lower_digit(s[i]) && s[i] != '-') return false;
    for (int i = 0; bad_prefix[i]; i++)
        if (!strncmp(s, bad_prefix[i], strlen(bad_prefix[i]))) return false;
    for (int i = 0; bad_suffix[i]; i++) {
        size_t k = strlen(bad_suffix[i]);
        if (n >= k && !strcmp(s + n - k, bad_suffix[i])) return false;
    }
    return true;
}

/* Namespace and table names on lookup: the model's [0-9a-z_]{1,255}. */
static bool ident_loose_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 255) return false;
    for (size_t i = 0; i < n; i++)
        if (!lower_digit(s[i]) && s[i] != '_') return false;
    return true;
}

/* On create: also start and end with a letter or digit; namespaces must not start with "aws". */
static bool ident_ok(const char *s, bool is_namespace)
{
    size_t n = strlen(s);
    if (!ident_loose_ok(s) || !lower_digit(s[0]) || !lower_digit(s[n - 1])) return false;
    return !(is_namespace && !strncmp(s, "aws", 3));
}

static bool check_ns_name(treq_t *t, const char *ns, bool create)
{
    if (create ? ident_ok(ns, true) : ident_loose_ok(ns)) return true;
    fail(t, "BadRequestException",
         "The specified namespace name is not valid: use 1 to 255 lowercase letters, numbers and underscores, "
         "starting and ending with a letter or number and not starting with 'aws'.");
    return false;
}

static bool check_table_name(treq_t *t, const char *name, bool create)
{
    if (create ? ident_ok(name, false) : ident_loose_ok(name)) return true;
    fail(t, "BadRequestException",
         "The specified table name is not valid: use 1 to 255 lowercase letters, numbers and underscores, "
         "starting and ending with a letter or number.");
    return false;
}

/* ------------------------------------------------------------------ */
/* resource lookup                                                     */

/* The bucket (and table id, if id is non-NULL) an ARN of this server's region
 * and account names; else renders the error: bad_msg, AccessDenied for another
 * account, NotFound for another region. */
static bool resolve_arn(treq_t *t, const char *arn, char *bucket, char *id, const char *bad_msg)
{
    switch (fl_arn_resolve(&t->sc->scope, arn, bucket, id)) {
    case FL_ARN_OURS: return true;
    case FL_ARN_OTHER_ACCOUNT:
        fail(t, "AccessDeniedException", "Access denied: the ARN names another account.");
        return false;
    case FL_ARN_OTHER_REGION:
        fail(t, "NotFoundException", "The specified resource does not exist in this region.");
        return false;
    default:
        fail(t, "BadRequestException", "%s", bad_msg);
        return false;
    }
}

static bool load_bucket(treq_t *t, const char *arn, fl_tbucket_t *b)
{
    char name[64];
    if (!resolve_arn(t, arn, name, NULL, "The specified table bucket ARN is not valid.")) return false;
    fl_err_t e = fl_catalog_bucket_get(t->cat, name, b);
    if (e == FL_ERR_NOT_FOUND || e == FL_ERR_NO_BUCKET) {
        fail(t, "NotFoundException", "The specified table bucket does not exist.");
        return false;
    }
    if (e) {
        fail_err(t, e, NULL);
        return false;
    }
    if (t->sc->scope.any_account && !fl_arn_in_account(arn, b->owner)) {
        fail(t, "AccessDeniedException", "Access denied: the ARN names another account.");
        return false;
    }
    return true;
}

/* Table by (bucket ARN, namespace, name); b may be NULL. */
static bool load_table(treq_t *t, const char *arn, const char *ns, const char *name, fl_tbucket_t *b,
                       fl_table_t *out)
{
    fl_tbucket_t tmp;
    if (!b) b = &tmp;
    if (!load_bucket(t, arn, b)) return false;
    if (!check_ns_name(t, ns, false) || !check_table_name(t, name, false)) return false;
    fl_err_t e = fl_catalog_table_get(t->cat, b->name, ns, name, out);
    if (!e && strcmp(out->kind, "table") != 0) e = FL_ERR_NOT_FOUND;
    if (e == FL_ERR_NOT_FOUND || e == FL_ERR_NO_BUCKET) {
        fail(t, "NotFoundException", "The specified table does not exist.");
        return false;
    }
    if (e) {
        fail_err(t, e, NULL);
        return false;
    }
    return true;
}

/* Table by ARN (either partition form). */
static bool load_table_arn(treq_t *t, const char *arn, fl_table_t *out)
{
    char bucket[64], id[40], canon[FL_ARN_MAX];
    if (!resolve_arn(t, arn, bucket, id, "The specified table ARN is not valid.")) return false;
    if (!id[0]) {
        fail(t, "BadRequestException", "The specified table ARN is not valid.");
        return false;
    }
    fl_tbucket_t b;
    if (fl_catalog_bucket_get(t->cat, bucket, &b) != FL_OK) {
        fail(t, "NotFoundException", "The specified table does not exist.");
        return false;
    }
    if (t->sc->scope.any_account && !fl_arn_in_account(arn, b.owner)) {
        fail(t, "AccessDeniedException", "Access denied: the ARN names another account.");
        return false;
    }
    if (snprintf(canon, sizeof canon, "%s/table/%s", b.arn, id) >= (int)sizeof canon) canon[0] = 0;
    fl_err_t e = fl_catalog_table_get_by_arn(t->cat, canon, out);
    if (e == FL_ERR_NOT_FOUND && strcmp(canon, arn) != 0) e = fl_catalog_table_get_by_arn(t->cat, arn, out);
    if (!e && (strcmp(out->bucket, bucket) != 0 || strcmp(out->kind, "table") != 0)) e = FL_ERR_NOT_FOUND;
    if (e == FL_ERR_NOT_FOUND || e == FL_ERR_NO_BUCKET) {
        fail(t, "NotFoundException", "The specified table does not exist.");
        return false;
    }
    if (e) {
        fail_err(t, e, NULL);
        return false;
    }
    return true;
}

/* Table addressed by the captures {tableBucketARN}/{namespace}/{name}. */
static bool load_table_path(treq_t *t, fl_tbucket_t *b, fl_table_t *out)
{
    return load_table(t, t->cap[0], t->cap[1], t->cap[2], b, out);
}

/* A tagging resource: bucket ARN or table ARN -> the ARN documents are stored under. */
static bool load_resource(treq_t *t, const char *arn, char *doc_arn)
{
    char bucket[64], id[40];
    if (!resolve_arn(t, arn, bucket, id, "The specified resource ARN is not valid.")) return false;
    if (id[0]) {
        fl_table_t tb;
        if (!load_table_arn(t, arn, &tb)) return false;
        fl_strlcpy(doc_arn, tb.arn, FL_ARN_MAX);
    } else {
        fl_tbucket_t b;
        if (!load_bucket(t, arn, &b)) return false;
        fl_strlcpy(doc_arn, b.arn, FL_ARN_MAX);
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* attached documents                                                  */

/* Parsed document (new reference) or NULL when absent / unreadable. */
static json_t *doc_get(treq_t *t, const char *arn, const char *kind)
{
    char *text = NULL;
    if (fl_catalog_doc_get(t->cat, arn, kind, &text) != FL_OK || !text) return NULL;
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    return j;
}

static bool doc_put(treq_t *t, const char *arn, const char *kind, json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT);
    fl_err_t e = text ? fl_catalog_doc_put(t->cat, arn, kind, text) : FL_ERR_NOMEM;
    free(text);
    if (e) fail_err(t, e, NULL);
    return e == FL_OK;
}

static bool doc_delete(treq_t *t, const char *arn, const char *kind)
{
    fl_err_t e = fl_catalog_doc_delete(t->cat, arn, kind);
    if (e && e != FL_ERR_NOT_FOUND) {
        fail_err(t, e, NULL);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* validation of nested shapes                                         */

static const char *const sse_algorithms[] = { "AES256", "aws:kms", NULL };
static const char *const storage_classes[] = { "STANDARD", "INTELLIGENT_TIERING", NULL };

/* EncryptionConfiguration -> normalized copy (new reference), NULL after a 400. */
static json_t *encryption_parse(treq_t *t, json_t *o)
{
    const char *alg, *key;
    if (!get_str(t, o, "sseAlgorithm", true, 1, 64, &alg) || !get_str(t, o, "kmsKeyArn", false, 1, 2048, &key))
        return NULL;
    if (!in_list(alg, sse_algorithms)) {
        fail(t, "BadRequestException", "The sseAlgorithm '%s' is not valid: use AES256 or aws:kms.", alg);
        return NULL;
    }
    bool kms = !strcmp(alg, "aws:kms");
    if (kms && !key) {
        fail(t, "BadRequestException", "A kmsKeyArn is required when sseAlgorithm is aws:kms.");
        return NULL;
    }
    if (!kms && key) {
        fail(t, "BadRequestException", "A kmsKeyArn may only be given when sseAlgorithm is aws:kms.");
        return NULL;
    }
    if (key && !((!strncmp(key, "arn:", 4) && strstr(key, ":kms:")) || !strncmp(key, "acs:kms:", 8))) {
        fail(t, "BadRequestException", "The specified kmsKeyArn is not a KMS key ARN.");
        return NULL;
    }
    json_t *out = json_object();
    jset_str(out, "sseAlgorithm", alg);
    jset_str(out, "kmsKeyArn", key);
    return out;
}

static json_t *storage_class_parse(treq_t *t, json_t *o)
{
    const char *sc;
    if (!get_str(t, o, "storageClass", true, 1, 64, &sc)) return NULL;
    if (!in_list(sc, storage_classes)) {
        fail(t, "BadRequestException", "The storage class '%s' is not valid: use STANDARD or INTELLIGENT_TIERING.",
             sc);
        return NULL;
    }
    json_t *out = json_object();
    jset_str(out, "storageClass", sc);
    return out;
}

/* Checks a tags map (keys 1-128, values 0-256 characters, no "aws:" keys). */
static bool tags_ok(treq_t *t, json_t *tags)
{
    const char *k;
    json_t *v;
    json_object_foreach(tags, k, v) {
        size_t kl = strlen(k);
        if (kl < 1 || kl > 128) {
            fail(t, "BadRequestException", "Tag keys must be 1 to 128 characters long.");
            return false;
        }
        if (!strncmp(k, "aws:", 4)) {
            fail(t, "BadRequestException", "Tag keys must not start with 'aws:'.");
            return false;
        }
        if (!json_is_string(v) || json_string_length(v) > 256) {
            fail(t, "BadRequestException", "Tag values must be strings of at most 256 characters.");
            return false;
        }
    }
    if (json_object_size(tags) > FL_TABLES_MAX_TAGS) {
        fail(t, "BadRequestException", "A resource can have at most %d tags.", FL_TABLES_MAX_TAGS);
        return false;
    }
    return true;
}

/* A resource policy: a JSON object with Version and Statement, at most 20 KB,
 * that the policy engine accepts as a resource policy (auth/policy.h); a
 * malformed one is refused here, when it is stored, never at evaluation. */
static bool policy_ok(treq_t *t, const char *text)
{
    json_error_t je;
    json_t *p = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    bool is_obj = json_is_object(p), has_version = is_obj && json_is_string(json_object_get(p, "Version"));
    json_decref(p);
    if (is_obj && !has_version) {
        fail(t, "BadRequestException", "The resource policy must have a Version string.");
        return false;
    }
    char err[256];
    fl_policy_t *pol = fl_policy_parse(text, strlen(text), FL_POLICY_RESOURCE, err, sizeof err);
    if (!pol) {
        fail(t, "BadRequestException", "Malformed policy: %s", err);
        return false;
    }
    fl_policy_free(pol);
    return true;
}

/* ------------------------------------------------------------------ */
/* maintenance configuration (tables as source: types, settings, defaults, ranges) */

/* The types, settings and defaults are catalog/maintcfg.h's (the scheduler reads them too). */

/* Validates a maintenance value for type and returns it complete (defaults filled in); NULL
 * after a 400. */
static json_t *maint_parse(treq_t *t, const char *type, json_t *value)
{
    const char *status;
    json_t *settings, *mine = NULL;
    if (!get_str(t, value, "status", false, 1, 16, &status) || !get_obj(t, value, "settings", false, &settings))
        return NULL;
    if (status && !in_list(status, fl_maintcfg_statuses)) {
        fail(t, "BadRequestException", "The maintenance status '%s' is not valid: use enabled or disabled.", status);
        return NULL;
    }
    if (settings) {
        const char *k;
        json_t *v;
        json_object_foreach(settings, k, v) {
            if (strcmp(k, type) != 0) {
                fail(t, "BadRequestException", "The settings member '%s' does not match the maintenance type '%s'.",
                     k, type);
                return NULL;
            }
        }
        if (!get_obj(t, settings, type, false, &mine)) return NULL;
    }
    json_t *out = fl_maintcfg_default(type);
    json_t *dst = json_object_get(json_object_get(out, "settings"), type);
    if (status) json_object_set_new(out, "status", json_string(status));
    if (mine) {
        const char *k;
        json_t *v;
        json_object_foreach(mine, k, v) {
            const fl_maintcfg_setting_t *m = fl_maintcfg_setting(type, k);
            if (!m) {
                fail(t, "BadRequestException", "Unknown %s setting '%s'.", type, k);
                goto bad;
            }
            if (json_is_null(v)) continue;
            if (m->choices) {
                if (!json_is_string(v) || !in_list(json_string_value(v), m->choices)) {
                    fail(t, "BadRequestException", "The %s setting '%s' has an invalid value.", type, k);
                    goto bad;
                }
            } else if (!json_is_integer(v) || json_integer_value(v) < m->lo || json_integer_value(v) > m->hi) {
                fail(t, "BadRequestException", "The %s setting '%s' must be an integer from %lld to %lld.", type, k,
                     (long long)m->lo, (long long)m->hi);
                goto bad;
            }
            json_object_set(dst, k, v);
        }
    }
    return out;
bad:
    json_decref(out);
    return NULL;
}

/* The stored value for type on arn, or the default (new reference). */
static json_t *maint_get(treq_t *t, const char *arn, const char *type)
{
    char kind[96];
    snprintf(kind, sizeof kind, "maintenance:%s", type);
    json_t *j = doc_get(t, arn, kind);
    if (json_is_object(j)) return j;
    json_decref(j);
    return fl_maintcfg_default(type);
}


/* ------------------------------------------------------------------ */
/* pagination                                                          */

/* Page size query parameter: 1..1000, default 1000. */
static bool page_size(treq_t *t, const char *name, int *out)
{
    const char *v = qget(t, name);
    *out = FL_CATALOG_MAX_PAGE;
    if (!v) return true;
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < 1 || n > FL_CATALOG_MAX_PAGE) {
        fail(t, "BadRequestException", "The parameter %s must be an integer from 1 to %d.", name, FL_CATALOG_MAX_PAGE);
        return false;
    }
    *out = (int)n;
    return true;
}

/* Continuation tokens are the hex of the last key returned ("ns" "." "name" for tables). */
static char *token_encode(const char *a, const char *b)
{
    fl_buf_t out;
    fl_buf_init(&out, 0);
    char hx[3];
    for (const char *p = a; *p; p++) {
        fl_hex((const unsigned char *)p, 1, hx);
        fl_buf_add(&out, hx, 2);
    }
    if (b) {
        fl_buf_addc(&out, '.');
        for (const char *p = b; *p; p++) {
            fl_hex((const unsigned char *)p, 1, hx);
            fl_buf_add(&out, hx, 2);
        }
    }
    if (!out.ptr) fl_buf_add(&out, "", 0);
    return fl_buf_steal(&out);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool unhex(const char *p, size_t n, char *out, size_t cap)
{
    if (n % 2 || n / 2 >= cap || n == 0) return false;
    for (size_t i = 0; i < n; i += 2) {
        int h = hexval(p[i]), l = hexval(p[i + 1]);
        if (h < 0 || l < 0 || (h == 0 && l == 0)) return false;
        out[i / 2] = (char)(h * 16 + l);
    }
    out[n / 2] = 0;
    return true;
}

/* Decodes the continuation token into one (b == NULL) or two parts. False after a 400. */
static bool token_decode(treq_t *t, const char *tok, char *a, size_t acap, char *b, size_t bcap)
{
    const char *dot = strchr(tok, '.');
    bool ok = b ? dot && unhex(tok, (size_t)(dot - tok), a, acap) && unhex(dot + 1, strlen(dot + 1), b, bcap)
                : !dot && unhex(tok, strlen(tok), a, acap);
    if (!ok) fail(t, "BadRequestException", "The continuation token is not valid.");
    return ok;
}

/* ------------------------------------------------------------------ */
/* table buckets                                                       */

static json_t *bucket_json(const fl_tbucket_t *b)
{
    json_t *o = json_object();
    jset_str(o, "arn", b->arn);
    jset_str(o, "name", b->name);
    jset_str(o, "ownerAccountId", b->owner);
    jset_time(o, "createdAt", b->created_ms);
    jset_str(o, "tableBucketId", b->id);
    jset_str(o, "type", "customer");
    return o;
}

static void op_create_bucket(treq_t *t)
{
    json_t *in = body(t), *enc = NULL, *sc = NULL, *tags = NULL, *encn = NULL, *scn = NULL;
    const char *name;
    if (!in || !get_str(t, in, "name", true, 1, 255, &name) ||
        !get_obj(t, in, "encryptionConfiguration", false, &enc) ||
        !get_obj(t, in, "storageClassConfiguration", false, &sc) || !get_obj(t, in, "tags", false, &tags))
        goto out;
    if (!bucket_name_ok(name)) {
        fail(t, "BadRequestException",
             "The specified table bucket name is not valid: use 3 to 63 lowercase letters, numbers and hyphens, "
             "starting and ending with a letter or number, without a reserved prefix or suffix.");
        goto out;
    }
    if (enc && !(encn = encryption_parse(t, enc))) goto out;
    if (sc && !(scn = storage_class_parse(t, sc))) goto out;
    if (tags && !tags_ok(t, tags)) goto out;

    fl_tbucket_t b;
    memset(&b, 0, sizeof b);
    fl_strlcpy(b.name, name, sizeof b.name);
    /* the bucket belongs to the caller's account */
    const char *owner = t->r->who ? t->r->who->account : t->sc->scope.account;
    fl_arn_bucket_of(&t->sc->scope, owner, name, b.arn);
    fl_strlcpy(b.owner, owner, sizeof b.owner);
    fl_err_t e = fl_catalog_bucket_create(t->cat, &b);
    if (e == FL_ERR_EXISTS) {
        fail(t, "ConflictException", "The table bucket that you tried to create already exists, and you own it.");
        goto out;
    }
    if (e) {
        fail_err(t, e, NULL);
        goto out;
    }
    if ((encn && !doc_put(t, b.arn, "encryption", encn)) || (scn && !doc_put(t, b.arn, "storage-class", scn)) ||
        (tags && json_object_size(tags) && !doc_put(t, b.arn, "tags", tags)))
        goto out;
    reply(t, 200, json_pack("{s:s}", "arn", b.arn));
out:
    json_decref(encn);
    json_decref(scn);
}

static void op_get_bucket(treq_t *t)
{
    fl_tbucket_t b;
    if (load_bucket(t, t->cap[0], &b)) reply(t, 200, bucket_json(&b));
}

static void op_list_buckets(treq_t *t)
{
    const char *prefix = qget(t, "prefix"), *tok = qget(t, "continuationToken"), *type = qget(t, "type");
    char after[64] = "";
    int max;
    if (!page_size(t, "maxBuckets", &max)) return;
    if (prefix && (strlen(prefix) < 1 || strlen(prefix) > 63)) {
        fail(t, "BadRequestException", "The prefix must be 1 to 63 characters long.");
        return;
    }
    if (type && strcmp(type, "customer") && strcmp(type, "aws")) {
        fail(t, "BadRequestException", "The type '%s' is not valid: use customer or aws.", type);
        return;
    }
    if (tok && !token_decode(t, tok, after, sizeof after, NULL, 0)) return;
    json_t *list = json_array(), *res = json_object();
    json_object_set_new(res, "tableBuckets", list);
    if (type && !strcmp(type, "aws")) { /* no AWS-managed buckets here */
        reply(t, 200, res);
        return;
    }
    fl_tbucket_t *bs = NULL;
    size_t n = 0;
    bool more = false;
    fl_err_t e = fl_catalog_bucket_list(t->cat, prefix ? prefix : "", tok ? after : NULL, max, &bs, &n, &more);
    if (e) {
        json_decref(res);
        fail_err(t, e, NULL);
        return;
    }
    for (size_t i = 0; i < n; i++) /* each account sees its own buckets */
        if (!t->r->who || !strcmp(bs[i].owner, t->r->who->account)) json_array_append_new(list, bucket_json(&bs[i]));
    if (more && n) {
        char *nt = token_encode(bs[n - 1].name, NULL);
        jset_str(res, "continuationToken", nt);
        free(nt);
    }
    free(bs);
    reply(t, 200, res);
}

static void op_delete_bucket(treq_t *t)
{
    fl_tbucket_t b;
    if (!load_bucket(t, t->cap[0], &b)) return;
    fl_err_t e = fl_catalog_bucket_delete(t->cat, b.name);
    if (e == FL_ERR_NOT_EMPTY)
        return fail(t, "ConflictException", "The table bucket is not empty: delete its namespaces first.");
    if (e == FL_ERR_NOT_FOUND) return fail(t, "NotFoundException", "The specified table bucket does not exist.");
    if (e) return fail_err(t, e, NULL);
    reply(t, 204, NULL);
}

/* ---- policies (bucket and table) ---- */

static void policy_put(treq_t *t, const char *arn)
{
    json_t *in = body(t);
    const char *pol;
    if (!in || !get_str(t, in, "resourcePolicy", true, 1, FL_TABLES_MAX_POLICY_CHARS, &pol) || !policy_ok(t, pol)) return;
    fl_err_t e = fl_catalog_doc_put(t->cat, arn, "policy", pol);
    if (e) return fail_err(t, e, NULL);
    reply(t, 200, NULL);
}

static void policy_get(treq_t *t, const char *arn, const char *what)
{
    char *text = NULL;
    fl_err_t e = fl_catalog_doc_get(t->cat, arn, "policy", &text);
    if (e == FL_ERR_NOT_FOUND) return fail(t, "NotFoundException", "The %s does not have a resource policy.", what);
    if (e) return fail_err(t, e, NULL);
    json_t *o = json_object();
    json_object_set_new(o, "resourcePolicy", json_string(text));
    free(text);
    reply(t, 200, o);
}

static void op_put_bucket_policy(treq_t *t)
{
    fl_tbucket_t b;
    if (load_bucket(t, t->cap[0], &b)) policy_put(t, b.arn);
}

static void op_get_bucket_policy(treq_t *t)
{
    fl_tbucket_t b;
    if (load_bucket(t, t->cap[0], &b)) policy_get(t, b.arn, "table bucket");
}

static void op_delete_bucket_policy(treq_t *t)
{
    fl_tbucket_t b;
    if (load_bucket(t, t->cap[0], &b) && doc_delete(t, b.arn, "policy")) reply(t, 204, NULL);
}

static void op_put_table_policy(treq_t *t)
{
    fl_table_t tb;
    if (load_table_path(t, NULL, &tb)) policy_put(t, tb.arn);
}

static void op_get_table_policy(treq_t *t)
{
    fl_table_t tb;
    if (load_table_path(t, NULL, &tb)) policy_get(t, tb.arn, "table");
}

static void op_delete_table_policy(treq_t *t)
{
    fl_table_t tb;
    if (load_table_path(t, NULL, &tb) && doc_delete(t, tb.arn, "policy")) reply(t, 204, NULL);
}

/* ---- encryption and storage class ---- */

/* The stored document of kind on arn, or {key: def_value} (new reference). */
static json_t *config_or_default(treq_t *t, const char *arn, const char *kind, const char *key,
                                 const char *def_value)
{
    json_t *j = doc_get(t, arn, kind);
    if (json_is_object(j)) return j;
    json_decref(j);
    return json_pack("{s:s}", key, def_value);
}

static void op_put_bucket_encryption(treq_t *t)
{
    fl_tbucket_t b;
    json_t *in, *enc, *n;
    if (!load_bucket(t, t->cap[0], &b) || !(in = body(t)) || !get_obj(t, in, "encryptionConfiguration", true, &enc) ||
        !(n = encryption_parse(t, enc)))
        return;
    if (doc_put(t, b.arn, "encryption", n)) reply(t, 200, NULL);
    json_decref(n);
}

static void op_get_bucket_encryption(treq_t *t)
{
    fl_tbucket_t b;
    if (!load_bucket(t, t->cap[0], &b)) return;
    reply(t, 200, json_pack("{s:o}", "encryptionConfiguration",
                            config_or_default(t, b.arn, "encryption", "sseAlgorithm", "AES256")));
}

static void op_delete_bucket_encryption(treq_t *t)
{
    fl_tbucket_t b;
    if (load_bucket(t, t->cap[0], &b) && doc_delete(t, b.arn, "encryption")) reply(t, 204, NULL);
}

static void op_get_table_encryption(treq_t *t)
{
    fl_table_t tb;
    if (!load_table_path(t, NULL, &tb)) return;
    reply(t, 200, json_pack("{s:o}", "encryptionConfiguration",
                            config_or_default(t, tb.arn, "encryption", "sseAlgorithm", "AES256")));
}

static void op_put_bucket_storage_class(treq_t *t)
{
    fl_tbucket_t b;
    json_t *in, *sc, *n;
    if (!load_bucket(t, t->cap[0], &b) || !(in = body(t)) ||
        !get_obj(t, in, "storageClassConfiguration", true, &sc) || !(n = storage_class_parse(t, sc)))
        return;
    if (doc_put(t, b.arn, "storage-class", n)) reply(t, 200, NULL);
    json_decref(n);
}

static void op_get_bucket_storage_class(treq_t *t)
{
    fl_tbucket_t b;
    if (!load_bucket(t, t->cap[0], &b)) return;
    reply(t, 200, json_pack("{s:o}", "storageClassConfiguration",
                            config_or_default(t, b.arn, "storage-class", "storageClass", "STANDARD")));
}

static void op_get_table_storage_class(treq_t *t)
{
    fl_table_t tb;
    if (!load_table_path(t, NULL, &tb)) return;
    reply(t, 200, json_pack("{s:o}", "storageClassConfiguration",
                            config_or_default(t, tb.arn, "storage-class", "storageClass", "STANDARD")));
}

/* ---- metrics and logging configuration (stored; floe exports /metrics regardless) ---- */

static void op_put_bucket_metrics(treq_t *t)
{
    fl_tbucket_t b;
    if (!load_bucket(t, t->cap[0], &b)) return;
    json_t *cur = doc_get(t, b.arn, "metrics");
    if (!json_is_object(cur)) {
        char id[37];
        fl_uuid4(id);
        json_decref(cur);
        cur = json_pack("{s:s}", "id", id);
        if (!doc_put(t, b.arn, "metrics", cur)) {
            json_decref(cur);
            return;
        }
    }
    json_decref(cur);
    reply(t, 204, NULL);
}

static void op_get_bucket_metrics(treq_t *t)
{
    fl_tbucket_t b;
    if (!load_bucket(t, t->cap[0], &b)) return;
    json_t *cur = doc_get(t, b.arn, "metrics");
    if (!json_is_object(cur)) {
        json_decref(cur);
        return fail(t, "NotFoundException", "The table bucket does not have a metrics configuration.");
    }
    json_t *o = json_object();
    jset_str(o, "tableBucketARN", b.arn);
    jset_str(o, "id", json_string_value(json_object_get(cur, "id")));
    json_decref(cur);
    reply(t, 200, o);
}

static void op_delete_bucket_metrics(treq_t *t)
{
    fl_tbucket_t b;
    if (!load_bucket(t, t->cap[0], &b)) return;
    char *text = NULL;
    fl_err_t e = fl_catalog_doc_get(t->cat, b.arn, "metrics", &text);
    free(text);
    if (e == FL_ERR_NOT_FOUND)
        return fail(t, "NotFoundException", "The table bucket does not have a metrics configuration.");
    if (e) return fail_err(t, e, NULL);
    if (doc_delete(t, b.arn, "metrics")) reply(t, 204, NULL);
}

static void op_put_bucket_logging(treq_t *t)
{
    fl_tbucket_t b;
    json_t *in, *st, *le;
    if (!load_bucket(t, t->cap[0], &b) || !(in = body(t)) || !get_obj(t, in, "tableBucketLoggingStatus", true, &st) ||
        !get_obj(t, st, "loggingEnabled", false, &le))
        return;
    if (le) {
        const char *tb, *tp;
        json_t *fmt, *pp;
        if (!get_str(t, le, "targetBucket", true, 3, 63, &tb) ||
            !get_str(t, le, "targetPrefix", true, 0, 1024, &tp) ||
            !get_obj(t, le, "targetObjectKeyFormat", true, &fmt) || !get_obj(t, fmt, "partitionedPrefix", true, &pp))
            return;
        const char *src;
        static const char *const sources[] = { "EventTime", "DeliveryTime", NULL };
        if (!get_str(t, pp, "partitionDateSource", true, 1, 32, &src)) return;
        if (!in_list(src, sources))
            return fail(t, "BadRequestException", "The partitionDateSource must be EventTime or DeliveryTime.");
    }
    if (doc_put(t, b.arn, "logging", st)) reply(t, 204, NULL);
}

static void op_get_bucket_logging(treq_t *t)
{
    fl_tbucket_t b;
    if (!load_bucket(t, t->cap[0], &b)) return;
    json_t *st = doc_get(t, b.arn, "logging");
    if (!json_is_object(st)) {
        json_decref(st);
        st = json_object();
    }
    reply(t, 200, json_pack("{s:o}", "tableBucketLoggingStatus", st));
}

/* ---- maintenance ---- */

static void op_put_bucket_maintenance(treq_t *t)
{
    fl_tbucket_t b;
    json_t *in, *value, *n;
    if (!load_bucket(t, t->cap[0], &b)) return;
    if (!fl_maintcfg_type(t->cap[1], true))
        return fail(t, "BadRequestException", "The maintenance type '%s' is not valid for a table bucket: use "
                    "icebergUnreferencedFileRemoval.", t->cap[1]);
    if (!(in = body(t)) || !get_obj(t, in, "value", true, &value) || !(n = maint_parse(t, t->cap[1], value))) return;
    char kind[96];
    snprintf(kind, sizeof kind, "maintenance:%s", t->cap[1]);
    if (doc_put(t, b.arn, kind, n)) reply(t, 204, NULL);
    json_decref(n);
}

static void op_get_bucket_maintenance(treq_t *t)
{
    fl_tbucket_t b;
    if (!load_bucket(t, t->cap[0], &b)) return;
    json_t *conf = json_object();
    for (size_t i = 0; i < fl_maintcfg_n_types; i++) {
        const char *type = fl_maintcfg_types[i].name;
        if (fl_maintcfg_types[i].bucket_level) json_object_set_new(conf, type, maint_get(t, b.arn, type));
    }
    json_t *o = json_object();
    jset_str(o, "tableBucketARN", b.arn);
    json_object_set_new(o, "configuration", conf);
    reply(t, 200, o);
}

static void op_put_table_maintenance(treq_t *t)
{
    fl_table_t tb;
    json_t *in, *value, *n;
    if (!load_table_path(t, NULL, &tb)) return;
    if (!fl_maintcfg_type(t->cap[3], false))
        return fail(t, "BadRequestException", "The maintenance type '%s' is not valid for a table: use "
                    "icebergCompaction or icebergSnapshotManagement.", t->cap[3]);
    if (!(in = body(t)) || !get_obj(t, in, "value", true, &value) || !(n = maint_parse(t, t->cap[3], value))) return;
    char kind[96];
    snprintf(kind, sizeof kind, "maintenance:%s", t->cap[3]);
    if (doc_put(t, tb.arn, kind, n)) reply(t, 204, NULL);
    json_decref(n);
}

static void op_get_table_maintenance(treq_t *t)
{
    fl_table_t tb;
    if (!load_table_path(t, NULL, &tb)) return;
    json_t *conf = json_object();
    for (size_t i = 0; i < fl_maintcfg_n_types; i++) {
        const char *type = fl_maintcfg_types[i].name;
        if (!fl_maintcfg_types[i].bucket_level) json_object_set_new(conf, type, maint_get(t, tb.arn, type));
    }
    json_t *o = json_object();
    jset_str(o, "tableARN", tb.arn);
    json_object_set_new(o, "configuration", conf);
    reply(t, 200, o);
}

/* Job status per type, as S3 Tables reports it: Disabled while the job's configuration (on the
 * table, or on the bucket for bucket-level types) is disabled; else the scheduler's record of
 * its last run ("maintenance-job:{type}" on the table ARN, written by maint/sched.c with the run
 * row: {status Successful|Failed|Disabled, lastRunTimestamp ms, failureMessage?}); else
 * Not_Yet_Run. lastRunTimestamp is kept beside Disabled when a run happened before. */
static void op_get_table_maintenance_job_status(treq_t *t)
{
    fl_tbucket_t b;
    fl_table_t tb;
    if (!load_table_path(t, &b, &tb)) return;
    json_t *st = json_object();
    for (size_t i = 0; i < fl_maintcfg_n_types; i++) {
        const char *type = fl_maintcfg_types[i].name;
        char kind[96];
        snprintf(kind, sizeof kind, "maintenance-job:%s", type);
        json_t *job = doc_get(t, tb.arn, kind);
        json_t *conf = maint_get(t, fl_maintcfg_types[i].bucket_level ? b.arn : tb.arn, type);
        bool ran = json_is_object(job) && json_is_string(json_object_get(job, "status"));
        json_t *v = json_object();
        if (!fl_maintcfg_enabled(conf)) jset_str(v, "status", "Disabled");
        else if (ran) json_object_set(v, "status", json_object_get(job, "status"));
        else jset_str(v, "status", "Not_Yet_Run");
        if (ran) {
            json_t *ts = json_object_get(job, "lastRunTimestamp");
            if (json_is_string(ts)) json_object_set(v, "lastRunTimestamp", ts);
            else if (json_is_integer(ts)) jset_time(v, "lastRunTimestamp", json_integer_value(ts));
            json_t *fm = json_object_get(job, "failureMessage");
            if (fl_maintcfg_enabled(conf) && json_is_string(fm) && *json_string_value(fm))
                json_object_set(v, "failureMessage", fm);
        }
        json_object_set_new(st, type, v);
        json_decref(conf);
        json_decref(job);
    }
    json_t *o = json_object();
    jset_str(o, "tableARN", tb.arn);
    json_object_set_new(o, "status", st);
    reply(t, 200, o);
}

/* floe extension: the scheduler's run records of a table (maintenance_runs), newest first.
 * GET /tables/{arn}/{ns}/{name}/maintenance-job-history[?maxRuns=N][&continuationToken=ID]
 * -> {tableARN, runs: [{runId, type, status, startTime, endTime, node, filesIn, bytesIn,
 * filesOut, bytesOut, snapshotsRemoved, objectsRemoved, commits, message?}], continuationToken?}
 * (docs/catalog.md). */
static void op_get_table_maintenance_job_history(treq_t *t)
{
    fl_table_t tb;
    int max;
    if (!load_table_path(t, NULL, &tb) || !page_size(t, "maxRuns", &max)) return;
    int64_t before = 0;
    const char *tok = qget(t, "continuationToken");
    if (tok) {
        char *end;
        long long v = strtoll(tok, &end, 10);
        if (!*tok || *end || v < 1) return fail(t, "BadRequestException", "The continuation token is not valid.");
        before = v;
    }
    fl_maint_run_t *runs = NULL;
    size_t n = 0;
    if (fl_catalog_maint_runs(t->cat, tb.arn, before, max, &runs, &n) != FL_OK)
        return fail(t, "InternalServerErrorException", "The maintenance history could not be read.");
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const fl_maint_run_t *r = &runs[i];
        json_t *o = json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "type", r->type,
                              "status", r->status, "node", r->owner, "filesIn", (json_int_t)r->files_in,
                              "bytesIn", (json_int_t)r->bytes_in, "filesOut", (json_int_t)r->files_out,
                              "bytesOut", (json_int_t)r->bytes_out, "snapshotsRemoved",
                              (json_int_t)r->snapshots_removed, "objectsRemoved", (json_int_t)r->objects_removed,
                              "commits", (json_int_t)r->commits);
        char id[24];
        snprintf(id, sizeof id, "%lld", (long long)r->id);
        jset_str(o, "runId", id);
        jset_time(o, "startTime", r->start_ms);
        jset_time(o, "endTime", r->end_ms);
        if (r->message[0]) jset_str(o, "message", r->message);
        json_array_append_new(arr, o);
    }
    json_t *o = json_object();
    jset_str(o, "tableARN", tb.arn);
    json_object_set_new(o, "runs", arr);
    if (n == (size_t)max && n > 0) {
        char id[24];
        snprintf(id, sizeof id, "%lld", (long long)runs[n - 1].id);
        jset_str(o, "continuationToken", id);
    }
    free(runs);
    reply(t, 200, o);
}

/* ------------------------------------------------------------------ */
/* namespaces                                                          */

static json_t *namespace_json(const fl_namespace_t *ns, const fl_tbucket_t *b)
{
    json_t *o = json_object();
    json_object_set_new(o, "namespace", ns_list_json(ns->name));
    jset_time(o, "createdAt", ns->created_ms);
    jset_str(o, "createdBy", ns->owner); /* the model's AccountId; the principal stays in the row */
    jset_str(o, "ownerAccountId", ns->owner);
    jset_str(o, "namespaceId", ns->id);
    jset_str(o, "tableBucketId", b->id);
    return o;
}

static void op_create_namespace(treq_t *t)
{
    fl_tbucket_t b;
    json_t *in;
    if (!load_bucket(t, t->cap[0], &b) || !(in = body(t))) return;
    json_t *list = json_object_get(in, "namespace");
    if (!list) return fail(t, "BadRequestException", "The request is missing the required member 'namespace'.");
    if (!json_is_array(list) || json_array_size(list) != 1 || !json_is_string(json_array_get(list, 0)))
        return fail(t, "BadRequestException", "The member 'namespace' must be a list of exactly one name.");
    const char *name = json_string_value(json_array_get(list, 0));
    if (strlen(name) != json_string_length(json_array_get(list, 0)) || !check_ns_name(t, name, true)) {
        if (!t->responded) fail(t, "BadRequestException", "The specified namespace name is not valid.");
        return;
    }
    fl_namespace_t ns;
    memset(&ns, 0, sizeof ns);
    fl_strlcpy(ns.bucket, b.name, sizeof ns.bucket);
    fl_strlcpy(ns.name, name, sizeof ns.name);
    fl_strlcpy(ns.owner, b.owner[0] ? b.owner : t->sc->scope.account, sizeof ns.owner);
    fl_strlcpy(ns.created_by, t->r->principal ? t->r->principal : "anonymous", sizeof ns.created_by);
    fl_err_t e = fl_catalog_ns_create(t->cat, &ns);
    if (e == FL_ERR_EXISTS) return fail(t, "ConflictException", "A namespace with the specified name already exists.");
    if (e == FL_ERR_NO_BUCKET || e == FL_ERR_NOT_FOUND)
        return fail(t, "NotFoundException", "The specified table bucket does not exist.");
    if (e) return fail_err(t, e, NULL);
    json_t *o = json_object();
    jset_str(o, "tableBucketARN", b.arn);
    json_object_set_new(o, "namespace", ns_list_json(name));
    reply(t, 200, o);
}

static bool load_namespace(treq_t *t, fl_tbucket_t *b, fl_namespace_t *ns)
{
    memset(ns, 0, sizeof *ns);
    if (!load_bucket(t, t->cap[0], b) || !check_ns_name(t, t->cap[1], false)) return false;
    fl_err_t e = fl_catalog_ns_get(t->cat, b->name, t->cap[1], ns);
    if (e == FL_ERR_NOT_FOUND || e == FL_ERR_NO_BUCKET) {
        fail(t, "NotFoundException", "The specified namespace does not exist.");
        return false;
    }
    if (e) {
        fail_err(t, e, NULL);
        return false;
    }
    return true;
}

static void op_get_namespace(treq_t *t)
{
    fl_tbucket_t b;
    fl_namespace_t ns;
    if (!load_namespace(t, &b, &ns)) return;
    reply(t, 200, namespace_json(&ns, &b));
    fl_namespace_free(&ns);
}

static void op_list_namespaces(treq_t *t)
{
    fl_tbucket_t b;
    const char *prefix = qget(t, "prefix"), *tok = qget(t, "continuationToken");
    char after[FL_NAME_MAX] = "";
    int max;
    if (!load_bucket(t, t->cap[0], &b) || !page_size(t, "maxNamespaces", &max)) return;
    if (prefix && (strlen(prefix) < 1 || strlen(prefix) > 255))
        return fail(t, "BadRequestException", "The prefix must be 1 to 255 characters long.");
    if (tok && !token_decode(t, tok, after, sizeof after, NULL, 0)) return;
    fl_namespace_t *nss = NULL;
    size_t n = 0;
    bool more = false;
    fl_err_t e = fl_catalog_ns_list(t->cat, b.name, prefix ? prefix : "", tok ? after : NULL, max, &nss, &n, &more);
    if (e) return fail_err(t, e, NULL);
    json_t *list = json_array(), *res = json_object();
    json_object_set_new(res, "namespaces", list);
    for (size_t i = 0; i < n; i++) json_array_append_new(list, namespace_json(&nss[i], &b));
    if (more && n) {
        char *nt = token_encode(nss[n - 1].name, NULL);
        jset_str(res, "continuationToken", nt);
        free(nt);
    }
    fl_namespaces_free(nss, n);
    reply(t, 200, res);
}

static void op_delete_namespace(treq_t *t)
{
    fl_tbucket_t b;
    fl_namespace_t ns;
    if (!load_namespace(t, &b, &ns)) return;
    fl_namespace_free(&ns);
    fl_err_t e = fl_catalog_ns_delete(t->cat, b.name, t->cap[1]);
    if (e == FL_ERR_NOT_EMPTY)
        return fail(t, "ConflictException", "The namespace is not empty: delete its tables first.");
    if (e == FL_ERR_NOT_FOUND) return fail(t, "NotFoundException", "The specified namespace does not exist.");
    if (e) return fail_err(t, e, NULL);
    reply(t, 204, NULL);
}

/* ------------------------------------------------------------------ */
/* tables                                                              */

/* OSS Tables' SDK spells the partition spec and the sort order ("sortOrder",
 * S3 Tables' "writeOrder") in camelCase (specId, sourceId, fieldId, nullOrder,
 * orderId); Iceberg's JSON, which S3 Tables uses, hyphenates them. Returns a
 * copy with Iceberg's names (hyphenated keys are kept as they are); a sort
 * order without an order id gets 1 when it has fields (0 is "unsorted"). */
static json_t *oss_iceberg_keys(json_t *in, bool sort_order)
{
    static const char *const names[][2] = {
        { "specId", "spec-id" }, { "orderId", "order-id" }, { "sourceId", "source-id" },
        { "fieldId", "field-id" }, { "nullOrder", "null-order" },
    };
    json_t *o = json_deep_copy(in), *fields = json_object_get(o, "fields");
    json_t *objs[1 + 1024];
    size_t n = 0;
    objs[n++] = o;
    for (size_t i = 0; json_is_array(fields) && i < json_array_size(fields) && n < 1 + 1024; i++)
        if (json_is_object(json_array_get(fields, i))) objs[n++] = json_array_get(fields, i);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
            json_t *v = json_object_get(objs[i], names[k][0]);
            if (!v || json_object_get(objs[i], names[k][1])) continue;
            json_object_set(objs[i], names[k][1], v);
            json_object_del(objs[i], names[k][0]);
        }
    if (sort_order && !json_object_get(o, "order-id"))
        json_object_set_new(o, "order-id", json_integer(json_array_size(fields) ? 1 : 0));
    return o;
}

/* Iceberg table metadata for CreateTable's metadata member (new reference); NULL after a 400. */
static json_t *build_metadata(treq_t *t, const char *name, json_t *md)
{
    json_t *ice, *schema, *schema2, *spec, *order, *props, *req = NULL, *meta = NULL, *s = NULL;
    char err[512] = "";
    const char *k;
    json_t *v;
    json_object_foreach(md, k, v) {
        if (strcmp(k, "iceberg") != 0) {
            fail(t, "BadRequestException", "Unknown table metadata member '%s': only 'iceberg' is supported.", k);
            return NULL;
        }
    }
    json_t *oss_order = NULL;
    if (!get_obj(t, md, "iceberg", true, &ice) || !get_obj(t, ice, "schema", false, &schema) ||
        !get_obj(t, ice, "schemaV2", false, &schema2) || !get_obj(t, ice, "partitionSpec", false, &spec) ||
        !get_obj(t, ice, "writeOrder", false, &order) || !get_obj(t, ice, "sortOrder", false, &oss_order) ||
        !get_obj(t, ice, "properties", false, &props))
        return NULL;
    if (oss_order && order) {
        fail(t, "BadRequestException", "metadata.iceberg takes one of 'writeOrder' and 'sortOrder'.");
        return NULL;
    }
    if (!schema == !schema2) {
        fail(t, "BadRequestException", "metadata.iceberg needs exactly one of 'schema' and 'schemaV2'.");
        return NULL;
    }
    if (props) {
        json_object_foreach(props, k, v) {
            if (!json_is_string(v)) {
                fail(t, "BadRequestException", "Table property '%s' must be a string.", k);
                return NULL;
            }
        }
    }
    if (schema) {
        s = fl_iceberg_schema_from_s3tables(schema, err, sizeof err);
        if (!s) {
            fail(t, "BadRequestException", "The table schema is not valid: %s", err[0] ? err : "invalid schema");
            return NULL;
        }
    } else {
        const char *type;
        json_t *fields = json_object_get(schema2, "fields");
        if (!get_str(t, schema2, "type", true, 1, 16, &type)) return NULL;
        if (strcmp(type, "struct") != 0 || !json_is_array(fields)) {
            fail(t, "BadRequestException", "schemaV2 must be a struct with a list of fields.");
            return NULL;
        }
        s = json_deep_copy(schema2);
        if (!json_object_get(s, "schema-id")) json_object_set_new(s, "schema-id", json_integer(0));
    }
    req = json_object();
    json_object_set_new(req, "name", json_string(name));
    json_object_set_new(req, "schema", s);
    if (spec) json_object_set_new(req, "partition-spec", oss_iceberg_keys(spec, false));
    if (order) json_object_set_new(req, "write-order", json_deep_copy(order));
    if (oss_order) json_object_set_new(req, "write-order", oss_iceberg_keys(oss_order, true));
    if (props) json_object_set_new(req, "properties", json_deep_copy(props));
    int status = 400;
    /* fl_iceberg_new_metadata wants a location; fl_tablesvc_create replaces it with the warehouse */
    meta = fl_iceberg_new_metadata(req, "s3://pending--table-s3", &status, err, sizeof err);
    if (!meta)
        fail(t, status == 409 ? "ConflictException" : "BadRequestException", "The table metadata is not valid: %s",
             err[0] ? err : "invalid metadata");
    json_decref(req);
    return meta;
}

static void op_create_table(treq_t *t)
{
    fl_tbucket_t b;
    json_t *in, *md, *enc, *sc, *tags, *meta = NULL, *encn = NULL, *scn = NULL;
    const char *name, *format;
    if (!load_bucket(t, t->cap[0], &b) || !check_ns_name(t, t->cap[1], false) || !(in = body(t)) ||
        !get_str(t, in, "name", true, 1, 255, &name) || !get_str(t, in, "format", true, 1, 32, &format) ||
        !get_obj(t, in, "metadata", false, &md) || !get_obj(t, in, "encryptionConfiguration", false, &enc) ||
        !get_obj(t, in, "storageClassConfiguration", false, &sc) || !get_obj(t, in, "tags", false, &tags))
        goto out;
    if (!check_table_name(t, name, true)) goto out;
    if (strcmp(format, "ICEBERG") != 0) {
        fail(t, "BadRequestException", "The table format '%s' is not supported: use ICEBERG.", format);
        goto out;
    }
    if (enc && !(encn = encryption_parse(t, enc))) goto out;
    if (sc && !(scn = storage_class_parse(t, sc))) goto out;
    if (tags && !tags_ok(t, tags)) goto out;
    if (md && !(meta = build_metadata(t, name, md))) goto out;
    /* encryption and storage class are inherited from the bucket at creation */
    if (!encn) encn = doc_get(t, b.arn, "encryption");
    if (!scn) scn = doc_get(t, b.arn, "storage-class");

    fl_table_t tb;
    const char *why = NULL;
    fl_err_t e = fl_tablesvc_create(t->svc, b.name, t->cap[1], name, t->r->principal, meta, &tb, &why);
    if (e == FL_ERR_NO_BUCKET) {
        fail(t, "NotFoundException", "The specified table bucket does not exist.");
        goto out;
    }
    if (e == FL_ERR_NOT_FOUND) {
        fail(t, "NotFoundException", "%s", why ? why : "The specified namespace does not exist.");
        goto out;
    }
    if (e == FL_ERR_EXISTS) {
        fail(t, "ConflictException", "%s", why ? why : "A table with the specified name already exists.");
        goto out;
    }
    if (e) {
        fail_err(t, e, why);
        goto out;
    }
    if ((json_is_object(encn) && !doc_put(t, tb.arn, "encryption", encn)) ||
        (json_is_object(scn) && !doc_put(t, tb.arn, "storage-class", scn)) ||
        (tags && json_object_size(tags) && !doc_put(t, tb.arn, "tags", tags)))
        goto out;
    json_t *o = json_object();
    jset_str(o, "tableARN", tb.arn);
    jset_str(o, "versionToken", tb.version_token);
    reply(t, 200, o);
out:
    json_decref(meta);
    json_decref(encn);
    json_decref(scn);
}

static void op_get_table(treq_t *t)
{
    const char *arn = qget(t, "tableArn"), *barn = qget(t, "tableBucketARN"), *ns = qget(t, "namespace"),
               *name = qget(t, "name");
    fl_tbucket_t b;
    fl_table_t tb;
    if (arn) {
        if (barn || ns || name)
            return fail(t, "BadRequestException", "Specify either tableArn or tableBucketARN, namespace and name.");
        if (!load_table_arn(t, arn, &tb)) return;
        fl_err_t e = fl_catalog_bucket_get(t->cat, tb.bucket, &b);
        if (e == FL_ERR_NOT_FOUND) return fail(t, "NotFoundException", "The specified table does not exist.");
        if (e) return fail_err(t, e, NULL);
    } else {
        if (!barn || !ns || !name)
            return fail(t, "BadRequestException", "Specify either tableArn or tableBucketARN, namespace and name.");
        if (!load_table(t, barn, ns, name, &b, &tb)) return;
    }
    fl_namespace_t nsr;
    memset(&nsr, 0, sizeof nsr);
    bool have_ns = fl_catalog_ns_get(t->cat, tb.bucket, tb.ns, &nsr) == FL_OK;
    json_t *o = json_object();
    jset_str(o, "name", tb.name);
    jset_str(o, "type", tb.type[0] ? tb.type : "customer");
    jset_str(o, "tableARN", tb.arn);
    json_object_set_new(o, "namespace", ns_list_json(tb.ns));
    if (have_ns) jset_str(o, "namespaceId", nsr.id);
    jset_str(o, "versionToken", tb.version_token);
    if (tb.metadata_location[0]) jset_str(o, "metadataLocation", tb.metadata_location);
    char wl[FL_LOC_MAX];
    fl_tablesvc_warehouse_url(t->svc, &tb, wl);
    jset_str(o, "warehouseLocation", wl);
    jset_time(o, "createdAt", tb.created_ms);
    const char *acct = tb.owner[0] ? tb.owner : b.owner; /* createdBy/modifiedBy are AccountIds */
    jset_str(o, "createdBy", acct);
    jset_time(o, "modifiedAt", tb.modified_ms);
    jset_str(o, "modifiedBy", acct);
    jset_str(o, "ownerAccountId", acct);
    jset_str(o, "format", tb.format[0] ? tb.format : "ICEBERG");
    jset_str(o, "tableBucketId", b.id);
    if (have_ns) fl_namespace_free(&nsr);
    reply(t, 200, o);
}

static void op_list_tables(treq_t *t)
{
    fl_tbucket_t b;
    const char *ns = qget(t, "namespace"), *prefix = qget(t, "prefix"), *tok = qget(t, "continuationToken");
    char after_ns[FL_NAME_MAX] = "", after_name[FL_NAME_MAX] = "", ns_id[40] = "", ns_id_of[FL_NAME_MAX] = "";
    int max;
    if (!load_bucket(t, t->cap[0], &b) || !page_size(t, "maxTables", &max)) return;
    if (ns && !check_ns_name(t, ns, false)) return;
    if (prefix && (strlen(prefix) < 1 || strlen(prefix) > 255))
        return fail(t, "BadRequestException", "The prefix must be 1 to 255 characters long.");
    if (tok && !token_decode(t, tok, after_ns, sizeof after_ns, after_name, sizeof after_name)) return;
    fl_table_t *ts = NULL;
    size_t n = 0;
    bool more = false;
    fl_err_t e = fl_catalog_table_list(t->cat, b.name, ns, "table", prefix, tok ? after_ns : NULL,
                                       tok ? after_name : NULL, max, &ts, &n, &more);
    if (e) return fail_err(t, e, NULL);
    json_t *list = json_array(), *res = json_object();
    json_object_set_new(res, "tables", list);
    for (size_t i = 0; i < n; i++) {
        const fl_table_t *x = &ts[i];
        if (strcmp(ns_id_of, x->ns) != 0) { /* rows come ordered by namespace: one lookup per namespace */
            fl_namespace_t nsr;
            memset(&nsr, 0, sizeof nsr);
            ns_id[0] = 0;
            if (fl_catalog_ns_get(t->cat, b.name, x->ns, &nsr) == FL_OK) {
                fl_strlcpy(ns_id, nsr.id, sizeof ns_id);
                fl_namespace_free(&nsr);
            }
            fl_strlcpy(ns_id_of, x->ns, sizeof ns_id_of);
        }
        json_t *o = json_object();
        json_object_set_new(o, "namespace", ns_list_json(x->ns));
        jset_str(o, "name", x->name);
        jset_str(o, "type", x->type[0] ? x->type : "customer");
        jset_str(o, "tableARN", x->arn);
        jset_time(o, "createdAt", x->created_ms);
        jset_time(o, "modifiedAt", x->modified_ms);
        if (ns_id[0]) jset_str(o, "namespaceId", ns_id);
        jset_str(o, "tableBucketId", b.id);
        json_array_append_new(list, o);
    }
    if (more && n) {
        char *nt = token_encode(ts[n - 1].ns, ts[n - 1].name);
        jset_str(res, "continuationToken", nt);
        free(nt);
    }
    free(ts);
    reply(t, 200, res);
}

static void op_delete_table(treq_t *t)
{
    fl_table_t tb;
    const char *token = qget(t, "versionToken");
    if (!load_table_path(t, NULL, &tb)) return;
    fl_err_t e = fl_tablesvc_drop(t->svc, &tb, true, token);
    if (e == FL_ERR_CONFLICT) return fail(t, "ConflictException", STALE_TOKEN);
    if (e == FL_ERR_NOT_FOUND) return fail(t, "NotFoundException", "The specified table does not exist.");
    if (e) return fail_err(t, e, NULL);
    reply(t, 204, NULL);
}

static void op_rename_table(treq_t *t)
{
    fl_table_t tb;
    json_t *in;
    const char *new_ns, *new_name, *token;
    if (!load_table_path(t, NULL, &tb) || !(in = body(t)) ||
        !get_str(t, in, "newNamespaceName", false, 1, 255, &new_ns) ||
        !get_str(t, in, "newName", false, 1, 255, &new_name) ||
        !get_str(t, in, "versionToken", false, 1, 2048, &token))
        return;
    if (!new_ns && !new_name)
        return fail(t, "BadRequestException", "Specify newNamespaceName, newName or both.");
    if ((new_ns && !check_ns_name(t, new_ns, false)) || (new_name && !check_table_name(t, new_name, true))) return;
    if (token && strcmp(token, tb.version_token) != 0)
        return fail(t, "ConflictException", STALE_TOKEN);
    fl_err_t e = fl_tablesvc_rename(t->svc, &tb, new_ns ? new_ns : tb.ns, new_name ? new_name : tb.name, token);
    if (e == FL_ERR_EXISTS) return fail(t, "ConflictException", "A table with the new name already exists.");
    if (e == FL_ERR_CONFLICT)
        return fail(t, "ConflictException", STALE_TOKEN);
    if (e == FL_ERR_NOT_FOUND || e == FL_ERR_NO_BUCKET)
        return fail(t, "NotFoundException", "The table or the destination namespace does not exist.");
    if (e) return fail_err(t, e, NULL);
    reply(t, 204, NULL);
}

static void op_get_metadata_location(treq_t *t)
{
    fl_table_t tb;
    if (!load_table_path(t, NULL, &tb)) return;
    json_t *o = json_object();
    jset_str(o, "versionToken", tb.version_token);
    if (tb.metadata_location[0]) jset_str(o, "metadataLocation", tb.metadata_location);
    char wl[FL_LOC_MAX];
    fl_tablesvc_warehouse_url(t->svc, &tb, wl);
    jset_str(o, "warehouseLocation", wl);
    reply(t, 200, o);
}

static void op_update_metadata_location(treq_t *t)
{
    fl_table_t tb;
    json_t *in;
    const char *token, *loc;
    if (!load_table_path(t, NULL, &tb) || !(in = body(t)) || !get_str(t, in, "versionToken", true, 1, 2048, &token) ||
        !get_str(t, in, "metadataLocation", true, 1, FL_LOC_MAX - 1, &loc))
        return;
    if (!fl_tablesvc_location_ok(&tb, loc))
        return fail(t, "BadRequestException",
                    "The specified metadata location is not valid: it must begin with the table's warehouse location "
                    "(%s) and end with .metadata.json or .metadata.json.gz.", tb.warehouse);
    /* the pointer never names a file the catalog cannot read */
    json_t *md = NULL;
    fl_err_t re = fl_tablesvc_read_metadata(t->svc, loc, &md);
    json_decref(md);
    if (re)
        return fail(t, "BadRequestException", "The specified metadata location is not valid: %s.",
                    re == FL_ERR_NOT_FOUND ? "no such metadata file" : "not a readable metadata file");
    char new_token[40];
    fl_err_t e = fl_tablesvc_swap(t->svc, &tb, token, loc, t->r->principal, new_token);
    if (e == FL_ERR_CONFLICT)
        return fail(t, "ConflictException", STALE_TOKEN);
    if (e == FL_ERR_NOT_FOUND) return fail(t, "NotFoundException", "The specified table does not exist.");
    if (e) return fail_err(t, e, NULL);
    json_t *o = json_object();
    jset_str(o, "name", tb.name);
    jset_str(o, "tableARN", tb.arn);
    json_object_set_new(o, "namespace", ns_list_json(tb.ns));
    jset_str(o, "versionToken", new_token);
    jset_str(o, "metadataLocation", loc);
    reply(t, 200, o);
}

/* ---- record expiration: only AWS-managed tables have it; customer tables get 405 ---- */

static void op_record_expiration(treq_t *t)
{
    fl_table_t tb;
    if (!load_table_arn(t, qget(t, "tableArn"), &tb)) return;
    fail(t, "MethodNotAllowedException", "Record expiration is supported only for AWS-managed tables.");
}

/* ---- replication: not supported; reads say there is none, writes are refused ---- */

static void op_bucket_replication(treq_t *t)
{
    fl_tbucket_t b;
    if (!load_bucket(t, qget(t, "tableBucketARN"), &b)) return;
    if (!strcmp(t->r->req->method, "PUT"))
        return fail(t, "BadRequestException", "Table bucket replication is not supported by this server.");
    fail(t, "NotFoundException", "The table bucket does not have a replication configuration.");
}

static void op_table_replication(treq_t *t)
{
    fl_table_t tb;
    if (!load_table_arn(t, qget(t, "tableArn"), &tb)) return;
    if (!strcmp(t->r->req->method, "PUT"))
        return fail(t, "BadRequestException", "Table replication is not supported by this server.");
    fail(t, "NotFoundException", "The table does not have a replication configuration.");
}

static void op_disassociate_replication(treq_t *t)
{
    fl_table_t tb;
    if (!load_table_arn(t, qget(t, "tableArn"), &tb)) return;
    fail(t, "NotFoundException", "The table is not a replica: there is nothing to disassociate.");
}

/* ---- table migration from AWS Glue: not applicable here ---- */

static void op_migration_unsupported(treq_t *t)
{
    fail(t, "BadRequestException", "Table migration from AWS Glue is not supported by this server.");
}

static void op_migration_not_found(treq_t *t)
{
    fail(t, "NotFoundException", "The specified table migration does not exist.");
}

static void op_list_migrations(treq_t *t)
{
    int max;
    if (!page_size(t, "maxResults", &max)) return;
    reply(t, 200, json_pack("{s:[]}", "migrations"));
}

/* ---- tags ---- */

static void op_tag_resource(treq_t *t)
{
    char arn[FL_ARN_MAX];
    json_t *in, *tags;
    if (!load_resource(t, t->cap[0], arn) || !(in = body(t)) || !get_obj(t, in, "tags", true, &tags) ||
        !tags_ok(t, tags))
        return;
    json_t *cur = doc_get(t, arn, "tags");
    if (!json_is_object(cur)) {
        json_decref(cur);
        cur = json_object();
    }
    json_object_update(cur, tags);
    if (json_object_size(cur) > FL_TABLES_MAX_TAGS) {
        json_decref(cur);
        return fail(t, "BadRequestException", "A resource can have at most %d tags.", FL_TABLES_MAX_TAGS);
    }
    if (doc_put(t, arn, "tags", cur)) reply(t, 200, json_object());
    json_decref(cur);
}

static void op_untag_resource(treq_t *t)
{
    char arn[FL_ARN_MAX];
    if (!load_resource(t, t->cap[0], arn)) return;
    bool any = false;
    for (int i = 0; i < t->q.n; i++) any |= !strcmp(t->q.p[i].name, "tagKeys");
    if (!any) return fail(t, "BadRequestException", "The request is missing the required parameter 'tagKeys'.");
    json_t *cur = doc_get(t, arn, "tags");
    if (json_is_object(cur)) {
        for (int i = 0; i < t->q.n; i++)
            if (!strcmp(t->q.p[i].name, "tagKeys")) json_object_del(cur, t->q.p[i].value);
        if (!doc_put(t, arn, "tags", cur)) {
            json_decref(cur);
            return;
        }
    }
    json_decref(cur);
    reply(t, 204, NULL);
}

static void op_list_tags(treq_t *t)
{
    char arn[FL_ARN_MAX];
    if (!load_resource(t, t->cap[0], arn)) return;
    json_t *cur = doc_get(t, arn, "tags");
    if (!json_is_object(cur)) {
        json_decref(cur);
        cur = json_object();
    }
    reply(t, 200, json_pack("{s:o}", "tags", cur));
}

/* ------------------------------------------------------------------ */
/* routing                                                             */

typedef void (*op_fn)(treq_t *t);

typedef struct route {
    const char *method;
    const char *pattern; /* "{...}" segments capture one decoded path segment */
    op_fn fn;
    const char *op;      /* the model's operation name, for metrics and logs */
} route_t;

#define B "/{tableBucketARN}"
#define T "/{tableBucketARN}/{namespace}/{name}"
static const route_t routes[] = {
    { "PUT", "/buckets", op_create_bucket, "CreateTableBucket" },
    { "GET", "/buckets", op_list_buckets, "ListTableBuckets" },
    { "GET", "/buckets" B, op_get_bucket, "GetTableBucket" },
    { "DELETE", "/buckets" B, op_delete_bucket, "DeleteTableBucket" },
    { "PUT", "/buckets" B "/policy", op_put_bucket_policy, "PutTableBucketPolicy" },
    { "GET", "/buckets" B "/policy", op_get_bucket_policy, "GetTableBucketPolicy" },
    { "DELETE", "/buckets" B "/policy", op_delete_bucket_policy, "DeleteTableBucketPolicy" },
    { "PUT", "/buckets" B "/encryption", op_put_bucket_encryption, "PutTableBucketEncryption" },
    { "GET", "/buckets" B "/encryption", op_get_bucket_encryption, "GetTableBucketEncryption" },
    { "DELETE", "/buckets" B "/encryption", op_delete_bucket_encryption, "DeleteTableBucketEncryption" },
    { "PUT", "/buckets" B "/maintenance/{type}", op_put_bucket_maintenance, "PutTableBucketMaintenanceConfiguration" },
    { "GET", "/buckets" B "/maintenance", op_get_bucket_maintenance, "GetTableBucketMaintenanceConfiguration" },
    { "PUT", "/buckets" B "/storage-class", op_put_bucket_storage_class, "PutTableBucketStorageClass" },
    { "GET", "/buckets" B "/storage-class", op_get_bucket_storage_class, "GetTableBucketStorageClass" },
    { "PUT", "/buckets" B "/metrics", op_put_bucket_metrics, "PutTableBucketMetricsConfiguration" },
    { "GET", "/buckets" B "/metrics", op_get_bucket_metrics, "GetTableBucketMetricsConfiguration" },
    { "DELETE", "/buckets" B "/metrics", op_delete_bucket_metrics, "DeleteTableBucketMetricsConfiguration" },
    { "PUT", "/buckets" B "/logging", op_put_bucket_logging, "PutTableBucketLogging" },
    { "GET", "/buckets" B "/logging", op_get_bucket_logging, "GetTableBucketLogging" },
    { "PUT", "/table-bucket-replication", op_bucket_replication, "PutTableBucketReplication" },
    { "GET", "/table-bucket-replication", op_bucket_replication, "GetTableBucketReplication" },
    { "DELETE", "/table-bucket-replication", op_bucket_replication, "DeleteTableBucketReplication" },

    { "PUT", "/namespaces" B, op_create_namespace, "CreateNamespace" },
    { "GET", "/namespaces" B, op_list_namespaces, "ListNamespaces" },
    { "GET", "/namespaces" B "/{namespace}", op_get_namespace, "GetNamespace" },
    { "DELETE", "/namespaces" B "/{namespace}", op_delete_namespace, "DeleteNamespace" },

    { "PUT", "/tables" B "/{namespace}", op_create_table, "CreateTable" },
    { "GET", "/tables" B, op_list_tables, "ListTables" },
    { "GET", "/get-table", op_get_table, "GetTable" },
    { "DELETE", "/tables" T, op_delete_table, "DeleteTable" },
    { "PUT", "/tables" T "/rename", op_rename_table, "RenameTable" },
    { "GET", "/tables" T "/metadata-location", op_get_metadata_location, "GetTableMetadataLocation" },
    { "PUT", "/tables" T "/metadata-location", op_update_metadata_location, "UpdateTableMetadataLocation" },
    { "PUT", "/tables" T "/policy", op_put_table_policy, "PutTablePolicy" },
    { "GET", "/tables" T "/policy", op_get_table_policy, "GetTablePolicy" },
    { "DELETE", "/tables" T "/policy", op_delete_table_policy, "DeleteTablePolicy" },
    { "GET", "/tables" T "/encryption", op_get_table_encryption, "GetTableEncryption" },
    { "PUT", "/tables" T "/maintenance/{type}", op_put_table_maintenance, "PutTableMaintenanceConfiguration" },
    { "GET", "/tables" T "/maintenance", op_get_table_maintenance, "GetTableMaintenanceConfiguration" },
    { "GET", "/tables" T "/maintenance-job-history", op_get_table_maintenance_job_history,
      "GetTableMaintenanceJobHistory" }, /* floe extension */
    { "GET", "/tables" T "/maintenance-job-status", op_get_table_maintenance_job_status,
      "GetTableMaintenanceJobStatus" },
    { "GET", "/tables" T "/storage-class", op_get_table_storage_class, "GetTableStorageClass" },
    { "PUT", "/table-record-expiration", op_record_expiration, "PutTableRecordExpirationConfiguration" },
    { "GET", "/table-record-expiration", op_record_expiration, "GetTableRecordExpirationConfiguration" },
    { "GET", "/table-record-expiration-job-status", op_record_expiration, "GetTableRecordExpirationJobStatus" },
    { "PUT", "/table-replication", op_table_replication, "PutTableReplication" },
    { "GET", "/table-replication", op_table_replication, "GetTableReplication" },
    { "DELETE", "/table-replication", op_table_replication, "DeleteTableReplication" },
    { "PUT", "/table-replication/disassociate", op_disassociate_replication, "DisassociateTableReplication" },
    { "GET", "/replication-status", op_table_replication, "GetTableReplicationStatus" },

    { "POST", "/tag/{resourceArn}", op_tag_resource, "TagResource" },
    { "DELETE", "/tag/{resourceArn}", op_untag_resource, "UntagResource" },
    { "GET", "/tag/{resourceArn}", op_list_tags, "ListTagsForResource" },

    { "POST", "/start-table-migration", op_migration_unsupported, "StartTableMigration" },
    { "POST", "/sync-table-migration", op_migration_unsupported, "SyncTableMigration" },
    { "GET", "/get-table-migration", op_migration_not_found, "GetTableMigration" },
    { "GET", "/list-table-migrations", op_list_migrations, "ListTableMigrations" },
    { "POST", "/update-table-migration", op_migration_not_found, "UpdateTableMigration" },
    { "POST", "/complete-table-migration", op_migration_not_found, "CompleteTableMigration" },
};
#undef B
#undef T

/* Matches the raw path against pattern; raw capture slices go to caps. */
static bool match(const char *pattern, const char *path, size_t len, fl_slice_t *caps, int *ncap)
{
    const char *p = pattern, *s = path, *end = path + len;
    *ncap = 0;
    while (*p) {
        if (*p != '/' || s >= end || *s != '/') return false;
        p++, s++;
        const char *pe = strchr(p, '/');
        size_t pl = pe ? (size_t)(pe - p) : strlen(p);
        const char *se = memchr(s, '/', (size_t)(end - s));
        size_t sl = se ? (size_t)(se - s) : (size_t)(end - s);
        if (*p == '{') {
            if (sl == 0 || *ncap >= MAX_CAPTURES) return false;
            caps[(*ncap)++] = fl_slice(s, sl);
        } else if (pl != sl || memcmp(p, s, sl) != 0) {
            return false;
        }
        p += pl, s += sl;
    }
    return s == end;
}

/* ------------------------------------------------------------------ */
/* authorisation: every route's action is "s3tables:" + its operation name,
 * on the table's ARN when the route names a table, else the bucket's, else
 * the caller's account's bucket space; the bucket's and the table's resource
 * policies take part. A denial is answered before the handler runs, so it
 * has no side effect. */

static bool authorize(treq_t *t, const char *op)
{
    const fl_iam_who_t *who = t->r->who;
    if (!who || !t->cfg->iam) return true;
    char action[96], res[FL_ARN_MAX + 16], bucket[64], tid[40];
    const char *owner = who->account, *ns = NULL, *tname = NULL; /* no bucket named: the caller's own account */
    fl_tbucket_t b;
    fl_table_t tb;
    snprintf(action, sizeof action, "s3tables:%s", op);
    snprintf(res, sizeof res, "arn:aws:s3tables:%s:%s:bucket/*", t->sc->scope.region, who->account);
    const char *barn = NULL;
    if (!strcmp(op, "GetTable")) {
        barn = fl_query_get(&t->q, "tableBucketARN");
        ns = fl_query_get(&t->q, "namespace");
        tname = fl_query_get(&t->q, "name");
    } else if (t->ncap >= 1 && !strncmp(t->r->path, "/tag/", 5)) {
        barn = t->cap[0];
    } else if (t->ncap >= 1 && (!strncmp(t->r->path, "/buckets/", 9) || !strncmp(t->r->path, "/namespaces/", 12) ||
                                !strncmp(t->r->path, "/tables/", 8))) {
        barn = t->cap[0];
        if (t->ncap >= 2 && strcmp(op, "PutTableBucketMaintenanceConfiguration")) ns = t->cap[1];
        if (t->ncap >= 3 && strncmp(t->r->path, "/namespaces/", 12)) tname = t->cap[2];
    }
    tid[0] = 0;
    fl_iam_target_t tg = { .resource = res, .owner = owner, .ns = ns, .name = tname };
    if (barn && fl_arn_resolve(&t->sc->scope, barn, bucket, tid) == FL_ARN_OURS &&
        fl_catalog_bucket_get(t->cat, bucket, &b) == FL_OK) {
        bool have_table = false;
        if (tid[0]) have_table = fl_catalog_table_get_by_arn(t->cat, barn, &tb) == FL_OK;
        else if (ns && tname) have_table = fl_iam_table(t->cfg->iam, b.name, ns, tname, &tb);
        tg = (fl_iam_target_t){ .bucket = &b, .table = have_table ? &tb : NULL, .ns = ns, .name = tname,
                                .table_level = tname != NULL };
    } else if (barn) {
        return true; /* an unknown or malformed bucket: the handler answers 400/404, and changes nothing */
    }
    /* creating with an encryptionConfiguration also sets the encryption (as AWS asks) */
    const char *acts[2] = { action, NULL };
    size_t nacts = 1;
    bool creates_table = !strcmp(op, "CreateTable");
    if (creates_table || !strcmp(op, "CreateTableBucket")) {
        json_error_t je;
        json_t *j = t->r->body_len ? json_loadb(t->r->body, t->r->body_len, 0, &je) : NULL;
        json_t *enc = json_object_get(j, "encryptionConfiguration");
        if (enc && !json_is_null(enc))
            acts[nacts++] = creates_table ? "s3tables:PutTableEncryption" : "s3tables:PutTableBucketEncryption";
        json_decref(j); /* an unparsable body: the handler answers 400 */
    }
    char msg[FL_ARN_MAX * 3 + 128];
    if (fl_iam_check(t->cfg->iam, who, acts, nacts, &tg, fl_http_peer(t->r->c), msg, sizeof msg)) return true;
    fail(t, "AccessDeniedException", "%s", msg);
    return false;
}

/* Routes one S3 Tables request (already authenticated by the front door) and always answers it.
 * Connection thread only; blocks on the catalog store and the object store. */
void fl_tables_handle(fl_api_req_t *r)
{
    const fl_tablesvc_cfg_t *sc = fl_tablesvc_cfg(r->cfg->svc);
    treq_t t = { .r = r, .cfg = r->cfg, .svc = r->cfg->svc, .sc = sc, .cat = sc->cat };
    const route_t *hit = NULL;
    bool path_known = false;
    fl_slice_t caps[MAX_CAPTURES];
    int ncap = 0;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0] && !hit; i++) {
        if (!match(routes[i].pattern, r->path, r->path_len, caps, &ncap)) continue;
        path_known = true;
        if (!strcmp(routes[i].method, r->req->method)) hit = &routes[i];
    }
    if (!hit) {
        fl_http_set_op(r->c, "Unsupported");
        if (path_known)
            fail(&t, "MethodNotAllowedException", "The method %s is not allowed on this resource.", r->req->method);
        else fail(&t, "UnknownOperationException", "The requested operation is not supported.");
        goto out;
    }
    fl_http_set_op(r->c, hit->op);
    for (int i = 0; i < ncap; i++) {
        if (fl_query_decode(caps[i].ptr, caps[i].len, false, FL_HTTP_MAX_TARGET_BYTES, &t.cap[i]) != FL_OK) {
            fail(&t, "BadRequestException", "The request path is not valid.");
            goto out;
        }
        t.ncap = i + 1;
    }
    if (fl_query_parse(t.r->req->query, t.r->req->query_len, &t.q) != FL_OK) {
        fail(&t, "BadRequestException", "The query string is not valid.");
        goto out;
    }
    if (!authorize(&t, hit->op)) goto out;
    hit->fn(&t);
    if (!t.responded) fail(&t, "InternalServerErrorException", NULL);
out:
    for (int i = 0; i < t.ncap; i++) free(t.cap[i]);
    fl_query_free(&t.q);
    json_decref(t.body);
}
