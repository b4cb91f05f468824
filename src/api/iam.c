/* IAM and STS query APIs (see iam.h). The form body (Action=...&Version=...)
 * is parsed with the query parser; each action is a row of the table below
 * with the IAM action it needs. Answers are <XResponse><XResult>...
 * <ResponseMetadata><RequestId/></ResponseMetadata></XResponse>. */
#include "api/iam.h"
#include "base/buf.h"
#include "base/limits.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/query.h"
#include "base/time.h"
#include "base/uuid.h"
#include "net/xml.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IAM_NS "https://iam.amazonaws.com/doc/2010-05-08/"
#define STS_NS "https://sts.amazonaws.com/doc/2011-06-15/"

typedef struct ireq {
    fl_api_req_t *r;
    fl_iam_t *iam;
    fl_catalog_t *cat;
    fl_query_t q;
    const char *action;
    bool sts;
    fl_buf_t out;       /* the Result element's content */
    bool responded;
} ireq_t;

void fl_iam_api_error(fl_api_req_t *r, int status, const char *code, const char *msg)
{
    fl_buf_t b;
    fl_buf_init(&b, 1 << 20);
    fl_buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ErrorResponse xmlns=\"" IAM_NS "\"><Error>");
    fl_xml_elems(&b, "Type", status >= 500 ? "Receiver" : "Sender");
    fl_xml_elems(&b, "Code", code);
    fl_xml_elems(&b, "Message", msg ? msg : "");
    fl_buf_adds(&b, "</Error>");
    fl_xml_elems(&b, "RequestId", fl_http_request_id(r->c));
    fl_buf_adds(&b, "</ErrorResponse>");
    fl_http_resp_status(r->c, status);
    fl_http_resp_header(r->c, "Content-Type", "text/xml");
    fl_http_resp_send(r->c, b.ptr, b.len);
    fl_buf_free(&b);
}

static void addf(fl_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void addf(fl_buf_t *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) fl_buf_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void fail(ireq_t *t, int status, const char *code, const char *msg)
{
    if (t->responded) return;
    t->responded = true;
    fl_iam_api_error(t->r, status, code, msg);
}

static void fail_err(ireq_t *t, fl_err_t e, const char *what)
{
    char msg[256];
    if (e == FL_ERR_NOT_FOUND) {
        snprintf(msg, sizeof msg, "The %s cannot be found.", what);
        return fail(t, 404, "NoSuchEntity", msg);
    }
    if (e == FL_ERR_EXISTS) {
        snprintf(msg, sizeof msg, "The %s already exists.", what);
        return fail(t, 409, "EntityAlreadyExists", msg);
    }
    if (e == FL_ERR_NOT_EMPTY) {
        snprintf(msg, sizeof msg, "Cannot delete the %s: it must have no access keys or policies first.", what);
        return fail(t, 409, "DeleteConflict", msg);
    }
    fail(t, 500, "ServiceFailure", "The request failed because of an internal error.");
}

static void reply(ireq_t *t)
{
    if (t->responded) return;
    t->responded = true;
    fl_buf_t b;
    fl_buf_init(&b, 16 << 20);
    addf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<%sResponse xmlns=\"%s\">", t->action,
                t->sts ? STS_NS : IAM_NS);
    addf(&b, "<%sResult>", t->action);
    if (t->out.len) fl_buf_add(&b, t->out.ptr, t->out.len);
    addf(&b, "</%sResult><ResponseMetadata>", t->action);
    fl_xml_elems(&b, "RequestId", fl_http_request_id(t->r->c));
    addf(&b, "</ResponseMetadata></%sResponse>", t->action);
    fl_http_resp_status(t->r->c, 200);
    fl_http_resp_header(t->r->c, "Content-Type", "text/xml");
    fl_http_resp_send(t->r->c, b.ptr, b.len);
    fl_buf_free(&b);
}

/* A required parameter (1..max chars of a name), else a ValidationError. */
static const char *param(ireq_t *t, const char *name, size_t max)
{
    const char *v = fl_query_get(&t->q, name);
    if (!v || !*v || strlen(v) > max) {
        char msg[160];
        snprintf(msg, sizeof msg, "The parameter %s is required (1 to %zu characters).", name, max);
        fail(t, 400, "ValidationError", msg);
        return NULL;
    }
    return v;
}

static bool valid_name(ireq_t *t, const char *n)
{
    for (const char *c = n; *c; c++)
        if (!(((*c | 32) >= 'a' && (*c | 32) <= 'z') || (*c >= '0' && *c <= '9') || strchr("+=,.@_-", *c))) {
            fail(t, 400, "ValidationError", "Names may contain only letters, digits and +=,.@_-");
            return false;
        }
    return true;
}

static void iso(int64_t ms, char out[32])
{
    fl_time_iso8601(ms, out, 32);
}

/* The caller's account: every IAM action acts inside it. */
static const char *acct(ireq_t *t) { return t->r->who->account; }

/* Is the caller allowed action on the IAM resource (user/NAME, role/NAME, ...)? */
static bool allowed(ireq_t *t, const char *resource_tail)
{
    if (!t->r->who || t->r->who->root) return true;
    char action[96], res[FL_ARN_MAX];
    snprintf(action, sizeof action, "%s:%s", t->sts ? "sts" : "iam", t->action);
    snprintf(res, sizeof res, "arn:aws:iam::%s:%s", acct(t), resource_tail);
    char ip[64];
    fl_policy_ctx_t ctx = { .action = action, .resource = res, .source_ip = fl_iam_source_ip(fl_http_peer(t->r->c), ip) };
    fl_authz_out_t o;
    fl_iam_authorize(t->iam, t->r->who, &ctx, acct(t), NULL, 0, &o);
    if (o.allowed) return true;
    char msg[FL_ARN_MAX * 3 + 128];
    snprintf(msg, sizeof msg, "User: %s is not authorized to perform: %s on resource: %s", t->r->who->arn, action, res);
    fl_iam_audit(t->r->who, "deny", action, res, &o, NULL);
    fail(t, 403, "AccessDenied", msg);
    return false;
}

static void user_xml(fl_buf_t *b, const fl_iam_principal_t *p)
{
    char d[32];
    iso(p->created_ms, d);
    fl_xml_elems(b, "Path", "/");
    fl_xml_elems(b, "UserName", p->name);
    fl_xml_elems(b, "UserId", p->id);
    fl_xml_elems(b, "Arn", p->arn);
    fl_xml_elems(b, "CreateDate", d);
}

static void op_create_user(ireq_t *t)
{
    const char *name = param(t, "UserName", 64);
    char res[200];
    if (!name || !valid_name(t, name)) return;
    snprintf(res, sizeof res, "user/%s", name);
    if (!allowed(t, res)) return;
    fl_iam_principal_t p = { 0 };
    fl_strlcpy(p.account, acct(t), sizeof p.account);
    fl_strlcpy(p.kind, "user", sizeof p.kind);
    fl_strlcpy(p.name, name, sizeof p.name);
    snprintf(p.arn, sizeof p.arn, "arn:aws:iam::%s:user/%s", acct(t), name);
    memcpy(p.id, "AIDA", 4);
    fl_random_hex(p.id + 4, 17);
    for (char *c = p.id + 4; *c; c++) *c = (char)(*c >= 'a' ? *c - 32 : *c);
    fl_err_t e = fl_catalog_principal_create(t->cat, &p);
    if (e) return fail_err(t, e, "user");
    fl_buf_adds(&t->out, "<User>");
    user_xml(&t->out, &p);
    fl_buf_adds(&t->out, "</User>");
    reply(t);
}

static void op_get_user(ireq_t *t)
{
    const char *name = fl_query_get(&t->q, "UserName");
    fl_iam_principal_t p = { 0 };
    if (!name) {
        /* the caller itself */
        const fl_iam_who_t *w = t->r->who;
        fl_buf_adds(&t->out, "<User>");
        fl_xml_elems(&t->out, "Path", "/");
        fl_xml_elems(&t->out, "UserName", w->root ? "root" : w->name);
        fl_xml_elems(&t->out, "UserId", w->root ? w->account : w->akid);
        fl_xml_elems(&t->out, "Arn", w->arn);
        fl_xml_elems(&t->out, "CreateDate", "1970-01-01T00:00:00Z");
        fl_buf_adds(&t->out, "</User>");
        return reply(t);
    }
    char res[200];
    snprintf(res, sizeof res, "user/%s", name);
    if (!allowed(t, res)) return;
    fl_err_t e = fl_catalog_principal_get(t->cat, acct(t), "user", name, &p);
    if (e) return fail_err(t, e, "user");
    fl_buf_adds(&t->out, "<User>");
    user_xml(&t->out, &p);
    fl_buf_adds(&t->out, "</User>");
    free(p.doc);
    reply(t);
}

static void op_delete_user(ireq_t *t)
{
    const char *name = param(t, "UserName", 64);
    char res[200];
    if (!name) return;
    snprintf(res, sizeof res, "user/%s", name);
    if (!allowed(t, res)) return;
    fl_err_t e = fl_catalog_principal_delete(t->cat, acct(t), "user", name);
    if (e) return fail_err(t, e, "user");
    reply(t);
}

static void op_list_users(ireq_t *t)
{
    if (!allowed(t, "user/*")) return;
    fl_iam_principal_t *v;
    size_t n;
    fl_err_t e = fl_catalog_principal_list(t->cat, acct(t), "user", &v, &n);
    if (e) return fail_err(t, e, "user");
    fl_buf_adds(&t->out, "<Users>");
    for (size_t i = 0; i < n; i++) {
        fl_buf_adds(&t->out, "<member>");
        user_xml(&t->out, &v[i]);
        fl_buf_adds(&t->out, "</member>");
    }
    fl_buf_adds(&t->out, "</Users><IsTruncated>false</IsTruncated>");
    fl_iam_principals_free(v, n);
    reply(t);
}

/* The user an access-key call is about: UserName, else the calling user. */
static bool key_user(ireq_t *t, const char **name)
{
    *name = fl_query_get(&t->q, "UserName");
    if (!*name) *name = t->r->who->root ? "" : t->r->who->name;
    if (**name) {
        fl_iam_principal_t p;
        fl_err_t e = fl_catalog_principal_get(t->cat, acct(t), "user", *name, &p);
        if (e) {
            fail_err(t, e, "user");
            return false;
        }
        free(p.doc);
    }
    char res[200];
    snprintf(res, sizeof res, **name ? "user/%s" : "root", *name);
    return allowed(t, res);
}

static void op_create_key(ireq_t *t)
{
    const char *user;
    if (!key_user(t, &user)) return;
    if (!*user) return fail(t, 400, "ValidationError", "Root access keys are made with floe admin.");
    fl_iam_key_t *have;
    size_t n;
    if (fl_catalog_key_list(t->cat, acct(t), "user", user, &have, &n) == FL_OK) {
        fl_iam_keys_free(have, n);
        if (n >= 2) return fail(t, 409, "LimitExceeded", "Cannot exceed quota for AccessKeysPerUser: 2");
    }
    fl_iam_key_t k;
    char secret[128], d[32];
    if (fl_iam_new_key(t->iam, acct(t), "user", user, &k, secret) != FL_OK)
        return fail(t, 500, "ServiceFailure", "Cannot make a key.");
    fl_err_t e = fl_catalog_key_create(t->cat, &k);
    if (e) return fail_err(t, e, "access key");
    iso(k.created_ms, d);
    fl_buf_adds(&t->out, "<AccessKey>");
    fl_xml_elems(&t->out, "UserName", user);
    fl_xml_elems(&t->out, "AccessKeyId", k.akid);
    fl_xml_elems(&t->out, "Status", "Active");
    fl_xml_elems(&t->out, "SecretAccessKey", secret);
    fl_xml_elems(&t->out, "CreateDate", d);
    fl_buf_adds(&t->out, "</AccessKey>");
    memset(secret, 0, sizeof secret);
    reply(t);
}

/* The key AccessKeyId, which must belong to user in the caller's account. */
static bool own_key(ireq_t *t, const char *user, const char **akid)
{
    *akid = param(t, "AccessKeyId", 128);
    if (!*akid) return false;
    fl_iam_key_t k;
    fl_err_t e = fl_catalog_key_get(t->cat, *akid, &k);
    if (!e) {
        bool mine = !strcmp(k.account, acct(t)) && !strcmp(k.kind, "user") && !strcmp(k.name, user);
        free(k.session_policy);
        if (!mine) e = FL_ERR_NOT_FOUND;
    }
    if (e) fail_err(t, e, "access key");
    return !e;
}

static void op_update_key(ireq_t *t)
{
    const char *user, *akid, *status;
    if (!key_user(t, &user) || !own_key(t, user, &akid) || !(status = param(t, "Status", 16))) return;
    if (strcmp(status, "Active") && strcmp(status, "Inactive"))
        return fail(t, 400, "ValidationError", "Status must be Active or Inactive.");
    fl_err_t e = fl_catalog_key_set_status(t->cat, akid, status);
    if (e) return fail_err(t, e, "access key");
    reply(t);
}

static void op_delete_key(ireq_t *t)
{
    const char *user, *akid;
    if (!key_user(t, &user) || !own_key(t, user, &akid)) return;
    fl_err_t e = fl_catalog_key_delete(t->cat, akid);
    if (e) return fail_err(t, e, "access key");
    reply(t);
}

static void op_list_keys(ireq_t *t)
{
    const char *user;
    if (!key_user(t, &user)) return;
    fl_iam_key_t *v;
    size_t n;
    fl_err_t e = fl_catalog_key_list(t->cat, acct(t), *user ? "user" : "root", user, &v, &n);
    if (e) return fail_err(t, e, "user");
    fl_buf_adds(&t->out, "<AccessKeyMetadata>");
    for (size_t i = 0; i < n; i++) {
        char d[32];
        iso(v[i].created_ms, d);
        fl_buf_adds(&t->out, "<member>");
        fl_xml_elems(&t->out, "UserName", user);
        fl_xml_elems(&t->out, "AccessKeyId", v[i].akid);
        fl_xml_elems(&t->out, "Status", v[i].status);
        fl_xml_elems(&t->out, "CreateDate", d);
        fl_buf_adds(&t->out, "</member>");
    }
    fl_buf_adds(&t->out, "</AccessKeyMetadata><IsTruncated>false</IsTruncated>");
    fl_iam_keys_free(v, n);
    reply(t);
}

/* IAM returns documents URL-encoded (RFC 3986). */
static void add_encoded(fl_buf_t *out, const char *tag, const char *doc)
{
    fl_buf_t enc;
    fl_buf_init(&enc, 4 * FL_POLICY_MAX_BYTES);
    for (const unsigned char *c = (const unsigned char *)doc; *c; c++) {
        if ((*c | 32) >= 'a' && (*c | 32) <= 'z') fl_buf_add(&enc, c, 1);
        else if ((*c >= '0' && *c <= '9') || strchr("-_.~", *c)) fl_buf_add(&enc, c, 1);
        else addf(&enc, "%%%02X", *c);
    }
    fl_xml_elem(out, tag, enc.ptr ? enc.ptr : "", enc.len);
    fl_buf_free(&enc);
}

/* ------------------------------------------------------------------ */
/* roles                                                               */

static void role_xml(fl_buf_t *b, const fl_iam_principal_t *p)
{
    char d[32];
    iso(p->created_ms, d);
    fl_xml_elems(b, "Path", "/");
    fl_xml_elems(b, "RoleName", p->name);
    fl_xml_elems(b, "RoleId", p->id);
    fl_xml_elems(b, "Arn", p->arn);
    fl_xml_elems(b, "CreateDate", d);
    add_encoded(b, "AssumeRolePolicyDocument", p->doc ? p->doc : "");
    fl_xml_elems(b, "MaxSessionDuration", "43200");
}

/* A policy document parameter, validated as kind; false after a MalformedPolicyDocument. */
static const char *doc_param(ireq_t *t, const char *name, fl_policy_kind_t kind)
{
    const char *doc = param(t, name, FL_POLICY_MAX_BYTES);
    if (!doc) return NULL;
    char err[256];
    fl_policy_t *p = fl_policy_parse(doc, strlen(doc), kind, err, sizeof err);
    if (!p) {
        fail(t, 400, "MalformedPolicyDocument", err);
        return NULL;
    }
    fl_policy_free(p);
    return doc;
}

static void new_id(char *id, const char *prefix)
{
    memcpy(id, prefix, 4);
    fl_random_hex(id + 4, 17);
    for (char *c = id + 4; *c; c++) *c = (char)(*c >= 'a' ? *c - 32 : *c);
}

static void op_create_role(ireq_t *t)
{
    const char *name = param(t, "RoleName", 64), *doc;
    char res[200];
    if (!name || !valid_name(t, name)) return;
    snprintf(res, sizeof res, "role/%s", name);
    if (!allowed(t, res) || !(doc = doc_param(t, "AssumeRolePolicyDocument", FL_POLICY_TRUST))) return;
    fl_iam_principal_t p = { 0 };
    fl_strlcpy(p.account, acct(t), sizeof p.account);
    fl_strlcpy(p.kind, "role", sizeof p.kind);
    fl_strlcpy(p.name, name, sizeof p.name);
    snprintf(p.arn, sizeof p.arn, "arn:aws:iam::%s:role/%s", acct(t), name);
    new_id(p.id, "AROA");
    p.doc = (char *)doc;
    fl_err_t e = fl_catalog_principal_create(t->cat, &p);
    if (e) return fail_err(t, e, "role");
    fl_buf_adds(&t->out, "<Role>");
    role_xml(&t->out, &p);
    fl_buf_adds(&t->out, "</Role>");
    reply(t);
}

/* The role RoleName of the caller's account (rendered 404 when absent), after the check. */
static bool get_role(ireq_t *t, fl_iam_principal_t *p)
{
    const char *name = param(t, "RoleName", 64);
    if (!name) return false;
    char res[200];
    snprintf(res, sizeof res, "role/%s", name);
    if (!allowed(t, res)) return false;
    fl_err_t e = fl_catalog_principal_get(t->cat, acct(t), "role", name, p);
    if (e) fail_err(t, e, "role");
    return !e;
}

static void op_get_role(ireq_t *t)
{
    fl_iam_principal_t p;
    if (!get_role(t, &p)) return;
    fl_buf_adds(&t->out, "<Role>");
    role_xml(&t->out, &p);
    fl_buf_adds(&t->out, "</Role>");
    free(p.doc);
    reply(t);
}

static void op_delete_role(ireq_t *t)
{
    fl_iam_principal_t p;
    if (!get_role(t, &p)) return;
    free(p.doc);
    fl_err_t e = fl_catalog_principal_delete(t->cat, acct(t), "role", p.name);
    if (e) return fail_err(t, e, "role");
    /* its sessions end with it */
    fl_iam_key_t *v;
    size_t n;
    if (fl_catalog_key_list(t->cat, acct(t), "session", p.name, &v, &n) == FL_OK) {
        for (size_t i = 0; i < n; i++) fl_catalog_key_delete(t->cat, v[i].akid);
        fl_iam_keys_free(v, n);
    }
    reply(t);
}

static void op_list_roles(ireq_t *t)
{
    if (!allowed(t, "role/*")) return;
    fl_iam_principal_t *v;
    size_t n;
    fl_err_t e = fl_catalog_principal_list(t->cat, acct(t), "role", &v, &n);
    if (e) return fail_err(t, e, "role");
    fl_buf_adds(&t->out, "<Roles>");
    for (size_t i = 0; i < n; i++) {
        fl_buf_adds(&t->out, "<member>");
        role_xml(&t->out, &v[i]);
        fl_buf_adds(&t->out, "</member>");
    }
    fl_buf_adds(&t->out, "</Roles><IsTruncated>false</IsTruncated>");
    fl_iam_principals_free(v, n);
    reply(t);
}

/* ---- inline policies of users and roles ---- */

/* The user or role ({kind}Name) an inline-policy call is about, after the check. */
static bool policy_owner(ireq_t *t, const char *kind, const char **name, const char **pname, bool need_name)
{
    if (!(*name = param(t, !strcmp(kind, "user") ? "UserName" : "RoleName", 64))) return false;
    *pname = need_name ? param(t, "PolicyName", 128) : NULL;
    if (need_name && !*pname) return false;
    fl_iam_principal_t p;
    fl_err_t e = fl_catalog_principal_get(t->cat, acct(t), kind, *name, &p);
    if (e) {
        fail_err(t, e, kind);
        return false;
    }
    free(p.doc);
    char res[200];
    snprintf(res, sizeof res, "%s/%s", kind, *name);
    return allowed(t, res);
}

static void put_inline(ireq_t *t, const char *kind)
{
    const char *who, *pname, *doc;
    if (!policy_owner(t, kind, &who, &pname, true) || !(doc = doc_param(t, "PolicyDocument", FL_POLICY_IDENTITY)))
        return;
    if (!strncmp(pname, "arn:", 4)) return fail(t, 400, "ValidationError", "A policy name cannot start with arn:.");
    fl_err_t e = fl_catalog_iam_policy_put(t->cat, acct(t), kind, who, pname, doc);
    if (e) return fail_err(t, e, "policy");
    reply(t);
}

static void get_inline(ireq_t *t, const char *kind)
{
    const char *who, *pname;
    if (!policy_owner(t, kind, &who, &pname, true)) return;
    char **names, **docs;
    size_t n;
    fl_err_t e = fl_catalog_iam_policy_list(t->cat, acct(t), kind, who, pname, &names, &docs, &n);
    if (e) return fail_err(t, e, "policy");
    fl_xml_elems(&t->out, !strcmp(kind, "user") ? "UserName" : "RoleName", who);
    fl_xml_elems(&t->out, "PolicyName", names[0]);
    add_encoded(&t->out, "PolicyDocument", docs[0]);
    for (size_t i = 0; i < n; i++) { free(names[i]); free(docs[i]); }
    free(names);
    free(docs);
    reply(t);
}

static void delete_inline(ireq_t *t, const char *kind)
{
    const char *who, *pname;
    if (!policy_owner(t, kind, &who, &pname, true)) return;
    if (!strncmp(pname, "arn:", 4)) return fail_err(t, FL_ERR_NOT_FOUND, "policy");
    fl_err_t e = fl_catalog_iam_policy_delete(t->cat, acct(t), kind, who, pname);
    if (e) return fail_err(t, e, "policy");
    reply(t);
}

/* Lists inline policy names (attached = false) or attached managed policies. */
static void list_policies_of(ireq_t *t, const char *kind, bool attached)
{
    const char *who, *pname;
    if (!policy_owner(t, kind, &who, &pname, false)) return;
    char **names, **docs;
    size_t n;
    fl_err_t e = fl_catalog_iam_policy_list(t->cat, acct(t), kind, who, NULL, &names, &docs, &n);
    if (e) return fail_err(t, e, kind);
    fl_buf_adds(&t->out, attached ? "<AttachedPolicies>" : "<PolicyNames>");
    for (size_t i = 0; i < n; i++) {
        bool is_arn = !strncmp(names[i], "arn:", 4);
        if (!attached && !is_arn) fl_xml_elems(&t->out, "member", names[i]);
        if (attached && is_arn) {
            const char *slash = strrchr(names[i], '/');
            fl_buf_adds(&t->out, "<member>");
            fl_xml_elems(&t->out, "PolicyName", slash ? slash + 1 : names[i]);
            fl_xml_elems(&t->out, "PolicyArn", names[i]);
            fl_buf_adds(&t->out, "</member>");
        }
        free(names[i]);
        free(docs[i]);
    }
    free(names);
    free(docs);
    fl_buf_adds(&t->out, attached ? "</AttachedPolicies>" : "</PolicyNames>");
    fl_buf_adds(&t->out, "<IsTruncated>false</IsTruncated>");
    reply(t);
}

static void op_put_user_policy(ireq_t *t) { put_inline(t, "user"); }
static void op_get_user_policy(ireq_t *t) { get_inline(t, "user"); }
static void op_delete_user_policy(ireq_t *t) { delete_inline(t, "user"); }
static void op_list_user_policies(ireq_t *t) { list_policies_of(t, "user", false); }
static void op_put_role_policy(ireq_t *t) { put_inline(t, "role"); }
static void op_get_role_policy(ireq_t *t) { get_inline(t, "role"); }
static void op_delete_role_policy(ireq_t *t) { delete_inline(t, "role"); }
static void op_list_role_policies(ireq_t *t) { list_policies_of(t, "role", false); }
static void op_list_attached_user(ireq_t *t) { list_policies_of(t, "user", true); }
static void op_list_attached_role(ireq_t *t) { list_policies_of(t, "role", true); }

/* ------------------------------------------------------------------ */
/* managed policies: principal rows of kind "policy" (doc = the document);
 * attaching one stores a row named by its ARN in the user's/role's policies */

static void managed_xml(fl_buf_t *b, const fl_iam_principal_t *p, size_t attachments)
{
    char d[32];
    iso(p->created_ms, d);
    fl_xml_elems(b, "PolicyName", p->name);
    fl_xml_elems(b, "PolicyId", p->id);
    fl_xml_elems(b, "Arn", p->arn);
    fl_xml_elems(b, "Path", "/");
    fl_xml_elems(b, "DefaultVersionId", "v1");
    addf(b, "<AttachmentCount>%zu</AttachmentCount>", attachments);
    fl_xml_elems(b, "IsAttachable", "true");
    fl_xml_elems(b, "CreateDate", d);
    fl_xml_elems(b, "UpdateDate", d);
}

/* The managed policy PolicyArn of the caller's account (404 when absent or another account's). */
static bool get_managed(ireq_t *t, fl_iam_principal_t *p, bool check)
{
    const char *arn = param(t, "PolicyArn", FL_ARN_MAX - 1);
    if (!arn) return false;
    char prefix[80];
    snprintf(prefix, sizeof prefix, "arn:aws:iam::%s:policy/", acct(t));
    const char *slash = strrchr(arn, '/');
    if (strncmp(arn, prefix, strlen(prefix)) || !slash) {
        fail_err(t, FL_ERR_NOT_FOUND, "policy");
        return false;
    }
    if (check) {
        char res[200];
        snprintf(res, sizeof res, "policy/%s", slash + 1);
        if (!allowed(t, res)) return false;
    }
    fl_err_t e = fl_catalog_principal_get(t->cat, acct(t), "policy", slash + 1, p);
    if (!e && strcmp(p->arn, arn)) {
        free(p->doc);
        e = FL_ERR_NOT_FOUND;
    }
    if (e) fail_err(t, e, "policy");
    return !e;
}

/* How many users and roles of the account have arn attached. */
static size_t attachments(ireq_t *t, const char *arn)
{
    static const char *const kinds[] = { "user", "role" };
    size_t count = 0;
    for (int k = 0; k < 2; k++) {
        fl_iam_principal_t *v;
        size_t n;
        if (fl_catalog_principal_list(t->cat, acct(t), kinds[k], &v, &n)) continue;
        for (size_t i = 0; i < n; i++) {
            char **names, **docs;
            size_t m;
            if (fl_catalog_iam_policy_list(t->cat, acct(t), kinds[k], v[i].name, arn, &names, &docs, &m) == FL_OK) {
                count += m;
                for (size_t j = 0; j < m; j++) { free(names[j]); free(docs[j]); }
                free(names);
                free(docs);
            }
        }
        fl_iam_principals_free(v, n);
    }
    return count;
}

static void op_create_policy(ireq_t *t)
{
    const char *name = param(t, "PolicyName", 128), *doc;
    char res[200];
    if (!name || !valid_name(t, name)) return;
    snprintf(res, sizeof res, "policy/%s", name);
    if (!allowed(t, res) || !(doc = doc_param(t, "PolicyDocument", FL_POLICY_IDENTITY))) return;
    fl_iam_principal_t p = { 0 };
    fl_strlcpy(p.account, acct(t), sizeof p.account);
    fl_strlcpy(p.kind, "policy", sizeof p.kind);
    fl_strlcpy(p.name, name, sizeof p.name);
    snprintf(p.arn, sizeof p.arn, "arn:aws:iam::%s:policy/%s", acct(t), name);
    new_id(p.id, "ANPA");
    p.doc = (char *)doc;
    fl_err_t e = fl_catalog_principal_create(t->cat, &p);
    if (e) return fail_err(t, e, "policy");
    fl_buf_adds(&t->out, "<Policy>");
    managed_xml(&t->out, &p, 0);
    fl_buf_adds(&t->out, "</Policy>");
    reply(t);
}

static void op_get_policy(ireq_t *t)
{
    fl_iam_principal_t p;
    if (!get_managed(t, &p, true)) return;
    fl_buf_adds(&t->out, "<Policy>");
    managed_xml(&t->out, &p, attachments(t, p.arn));
    fl_buf_adds(&t->out, "</Policy>");
    free(p.doc);
    reply(t);
}

static void op_get_policy_version(ireq_t *t)
{
    fl_iam_principal_t p;
    if (!get_managed(t, &p, true)) return;
    const char *v = fl_query_get(&t->q, "VersionId");
    if (v && strcmp(v, "v1")) {
        free(p.doc);
        return fail_err(t, FL_ERR_NOT_FOUND, "policy version");
    }
    char d[32];
    iso(p.created_ms, d);
    fl_buf_adds(&t->out, "<PolicyVersion>");
    add_encoded(&t->out, "Document", p.doc ? p.doc : "");
    fl_xml_elems(&t->out, "VersionId", "v1");
    fl_xml_elems(&t->out, "IsDefaultVersion", "true");
    fl_xml_elems(&t->out, "CreateDate", d);
    fl_buf_adds(&t->out, "</PolicyVersion>");
    free(p.doc);
    reply(t);
}

static void op_delete_policy(ireq_t *t)
{
    fl_iam_principal_t p;
    if (!get_managed(t, &p, true)) return;
    free(p.doc);
    if (attachments(t, p.arn)) return fail(t, 409, "DeleteConflict", "Cannot delete a policy attached to entities.");
    fl_err_t e = fl_catalog_principal_delete(t->cat, acct(t), "policy", p.name);
    if (e) return fail_err(t, e, "policy");
    reply(t);
}

static void op_list_policies(ireq_t *t)
{
    if (!allowed(t, "policy/*")) return;
    const char *scope = fl_query_get(&t->q, "Scope");
    fl_iam_principal_t *v = NULL;
    size_t n = 0;
    if (!scope || strcmp(scope, "AWS")) { /* floe has no AWS-managed policies */
        fl_err_t e = fl_catalog_principal_list(t->cat, acct(t), "policy", &v, &n);
        if (e) return fail_err(t, e, "policy");
    }
    fl_buf_adds(&t->out, "<Policies>");
    for (size_t i = 0; i < n; i++) {
        fl_buf_adds(&t->out, "<member>");
        managed_xml(&t->out, &v[i], attachments(t, v[i].arn));
        fl_buf_adds(&t->out, "</member>");
    }
    fl_buf_adds(&t->out, "</Policies><IsTruncated>false</IsTruncated>");
    fl_iam_principals_free(v, n);
    reply(t);
}

static void attach(ireq_t *t, const char *kind, bool on)
{
    const char *who, *pname;
    fl_iam_principal_t p;
    if (!policy_owner(t, kind, &who, &pname, false) || !get_managed(t, &p, false)) return;
    free(p.doc);
    fl_err_t e = on ? fl_catalog_iam_policy_put(t->cat, acct(t), kind, who, p.arn, "")
                    : fl_catalog_iam_policy_delete(t->cat, acct(t), kind, who, p.arn);
    if (e) return fail_err(t, e, "policy attachment");
    reply(t);
}

static void op_attach_user(ireq_t *t) { attach(t, "user", true); }
static void op_detach_user(ireq_t *t) { attach(t, "user", false); }
static void op_attach_role(ireq_t *t) { attach(t, "role", true); }
static void op_detach_role(ireq_t *t) { attach(t, "role", false); }

/* ------------------------------------------------------------------ */
/* STS AssumeRole                                                      */

static void op_assume_role(ireq_t *t)
{
    const char *role_arn = param(t, "RoleArn", FL_ARN_MAX - 1), *sname = NULL, *spol = NULL;
    if (!role_arn || !(sname = param(t, "RoleSessionName", 64))) return;
    for (const char *c = sname; *c; c++)
        if (!(((*c | 32) >= 'a' && (*c | 32) <= 'z') || (*c >= '0' && *c <= '9') || strchr("=,.@_-", *c)))
            return fail(t, 400, "ValidationError", "RoleSessionName may contain only letters, digits and =,.@_-");
    if (strlen(sname) < 2) return fail(t, 400, "ValidationError", "RoleSessionName needs at least 2 characters.");
    const char *ds = fl_query_get(&t->q, "DurationSeconds");
    long dur = FL_IAM_SESSION_DEFAULT_S;
    if (ds) {
        char *end;
        dur = strtol(ds, &end, 10);
        if (*end || !*ds || dur < FL_IAM_SESSION_MIN_S || dur > FL_IAM_SESSION_MAX_S)
            return fail(t, 400, "ValidationError", "DurationSeconds must be between 900 and 43200.");
    }
    if (fl_query_get(&t->q, "Policy")) {
        spol = fl_query_get(&t->q, "Policy");
        if (strlen(spol) > FL_IAM_SESSION_POLICY_MAX)
            return fail(t, 400, "PackedPolicyTooLarge", "The session policy is too large.");
        if (!doc_param(t, "Policy", FL_POLICY_IDENTITY)) return;
    }
    /* arn:aws:iam::ACCOUNT:role/[path/]NAME */
    char account[40] = "";
    const char *p = !strncmp(role_arn, "arn:aws:iam::", 13) ? role_arn + 13 : NULL;
    const char *colon = p ? strchr(p, ':') : NULL, *slash = strrchr(role_arn, '/');
    if (!p || !colon || (size_t)(colon - p) >= sizeof account || strncmp(colon + 1, "role/", 5) || !slash ||
        !slash[1])
        return fail(t, 400, "ValidationError", "RoleArn is not a role ARN.");
    memcpy(account, p, (size_t)(colon - p));
    account[colon - p] = 0;
    fl_iam_principal_t role;
    char msg[FL_ARN_MAX * 2 + 160];
    if (fl_catalog_principal_get(t->cat, account, "role", slash + 1, &role) != FL_OK) {
        /* indistinguishable from a denial, as AWS answers */
        snprintf(msg, sizeof msg, "User: %s is not authorized to perform: sts:AssumeRole on resource: %s",
                 t->r->who->arn, role_arn);
        fl_iam_audit(t->r->who, "deny", "sts:AssumeRole", role_arn, NULL, "no such role");
        return fail(t, 403, "AccessDenied", msg);
    }
    fl_iam_key_t k;
    char secret[128], token[256], exp[32];
    if (!fl_iam_may_assume(t->iam, t->r->who, &role, fl_http_peer(t->r->c), msg, sizeof msg)) {
        free(role.doc);
        return fail(t, 403, "AccessDenied", msg);
    }
    fl_err_t e = fl_iam_new_session(t->iam, &role, sname, spol, dur, &k, secret, token);
    if (e) {
        free(role.doc);
        return fail(t, 500, "ServiceFailure", "Cannot make the session's credentials.");
    }
    iso(k.expires_ms, exp);
    fl_buf_adds(&t->out, "<Credentials>");
    fl_xml_elems(&t->out, "AccessKeyId", k.akid);
    fl_xml_elems(&t->out, "SecretAccessKey", secret);
    fl_xml_elems(&t->out, "SessionToken", token);
    fl_xml_elems(&t->out, "Expiration", exp);
    fl_buf_adds(&t->out, "</Credentials><AssumedRoleUser>");
    char rid[256], arn[FL_ARN_MAX + 80];
    snprintf(rid, sizeof rid, "%s:%s", role.id, sname);
    snprintf(arn, sizeof arn, "arn:aws:sts::%s:assumed-role/%s/%s", role.account, role.name, sname);
    fl_xml_elems(&t->out, "AssumedRoleId", rid);
    fl_xml_elems(&t->out, "Arn", arn);
    fl_buf_adds(&t->out, "</AssumedRoleUser>");
    addf(&t->out, "<PackedPolicySize>%d</PackedPolicySize>",
         spol ? (int)(strlen(spol) * 100 / FL_IAM_SESSION_POLICY_MAX) : 0);
    memset(secret, 0, sizeof secret);
    memset(token, 0, sizeof token);
    free(role.doc);
    reply(t);
}

static void op_caller_identity(ireq_t *t)
{
    const fl_iam_who_t *w = t->r->who;
    char uid[256];
    if (w->root) snprintf(uid, sizeof uid, "%s", w->account);
    else if (!strcmp(w->kind, "session")) snprintf(uid, sizeof uid, "%s:%s", w->akid, w->session_name);
    else snprintf(uid, sizeof uid, "%s", w->akid);
    fl_xml_elems(&t->out, "UserId", uid);
    fl_xml_elems(&t->out, "Account", w->account);
    fl_xml_elems(&t->out, "Arn", w->arn);
    reply(t);
}

/* Every IAM/STS call that changes something is audited with the names it acted on. */
static void audit_write(ireq_t *t)
{
    static const char *const keys[] = { "UserName", "RoleName", "PolicyName", "PolicyArn", "AccessKeyId",
                                        "RoleArn", "RoleSessionName", "Status", NULL };
    if (!strncmp(t->action, "Get", 3) || !strncmp(t->action, "List", 4)) return;
    char detail[512], action[96];
    size_t n = (size_t)snprintf(detail, sizeof detail, "status %d", fl_http_resp_status_of(t->r->c));
    for (int i = 0; keys[i] && n < sizeof detail; i++) {
        const char *v = fl_query_get(&t->q, keys[i]);
        if (v) n += (size_t)snprintf(detail + n, sizeof detail - n, " %s=%.128s", keys[i], v);
    }
    snprintf(action, sizeof action, "%s:%s", t->sts ? "sts" : "iam", t->action);
    fl_iam_audit(t->r->who, "write", action, t->sts ? "*" : acct(t), NULL, detail);
}

static const struct {
    bool sts;
    const char *action;
    void (*fn)(ireq_t *t);
} ops[] = {
    { false, "CreateUser", op_create_user },
    { false, "GetUser", op_get_user },
    { false, "DeleteUser", op_delete_user },
    { false, "ListUsers", op_list_users },
    { false, "CreateAccessKey", op_create_key },
    { false, "UpdateAccessKey", op_update_key },
    { false, "DeleteAccessKey", op_delete_key },
    { false, "ListAccessKeys", op_list_keys },
    { false, "PutUserPolicy", op_put_user_policy },
    { false, "GetUserPolicy", op_get_user_policy },
    { false, "DeleteUserPolicy", op_delete_user_policy },
    { false, "ListUserPolicies", op_list_user_policies },
    { false, "CreateRole", op_create_role },
    { false, "GetRole", op_get_role },
    { false, "DeleteRole", op_delete_role },
    { false, "ListRoles", op_list_roles },
    { false, "PutRolePolicy", op_put_role_policy },
    { false, "GetRolePolicy", op_get_role_policy },
    { false, "DeleteRolePolicy", op_delete_role_policy },
    { false, "ListRolePolicies", op_list_role_policies },
    { false, "CreatePolicy", op_create_policy },
    { false, "GetPolicy", op_get_policy },
    { false, "GetPolicyVersion", op_get_policy_version },
    { false, "DeletePolicy", op_delete_policy },
    { false, "ListPolicies", op_list_policies },
    { false, "AttachUserPolicy", op_attach_user },
    { false, "DetachUserPolicy", op_detach_user },
    { false, "ListAttachedUserPolicies", op_list_attached_user },
    { false, "AttachRolePolicy", op_attach_role },
    { false, "DetachRolePolicy", op_detach_role },
    { false, "ListAttachedRolePolicies", op_list_attached_role },
    { true, "GetCallerIdentity", op_caller_identity },
    { true, "AssumeRole", op_assume_role },
};

void fl_iam_api_handle(fl_api_req_t *r)
{
    ireq_t t = { .r = r, .iam = r->cfg->iam, .sts = !strcmp(r->service, "sts") };
    fl_buf_init(&t.out, 8 << 20);
    if (!t.iam || !r->who) {
        fail(&t, 400, "InvalidAction", "Identities are not enabled on this server.");
        goto out;
    }
    t.cat = fl_iam_catalog(t.iam);
    /* the query protocol: parameters in a form body (POST) or in the query string */
    const char *src = r->body_len ? r->body : r->req->query;
    size_t len = r->body_len ? r->body_len : r->req->query_len;
    fl_err_t qe = fl_query_parse(src, len, &t.q);
    if (qe == FL_ERR_TOO_LARGE) { /* e.g. a policy document past every IAM size quota: AWS's code for those */
        char msg[128];
        snprintf(msg, sizeof msg, "The request has more than %d parameters or one larger than %d bytes.",
                 FL_QUERY_MAX_PARAMS, FL_HTTP_MAX_TARGET_BYTES);
        fail(&t, 409, "LimitExceeded", msg);
        goto out;
    }
    if (qe != FL_OK) {
        fail(&t, 400, "MalformedQueryString", "The request parameters could not be parsed.");
        goto out;
    }
    t.action = fl_query_get(&t.q, "Action");
    for (size_t i = 0; t.action && i < sizeof ops / sizeof ops[0]; i++)
        if (ops[i].sts == t.sts && !strcmp(ops[i].action, t.action)) {
            fl_http_set_op(r->c, ops[i].action); /* static: the metrics keep the pointer */
            ops[i].fn(&t);
            audit_write(&t);
            goto out;
        }
    fl_http_set_op(r->c, "Unsupported");
    char msg[160];
    snprintf(msg, sizeof msg, "Could not find operation %.64s for version %s.", t.action ? t.action : "(none)",
             t.sts ? "2011-06-15" : "2010-05-08");
    fail(&t, 400, "InvalidAction", msg);
out:
    if (!t.responded) fail(&t, 500, "ServiceFailure", "The request was not answered.");
    fl_query_free(&t.q);
    fl_buf_free(&t.out);
}
