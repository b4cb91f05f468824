/* Policy engine: IAM policy JSON -> statements, evaluated against a request
 * context; the AWS decision rules over identity, session and resource
 * policies. Every list and string a policy author controls is capped
 * (FL_POLICY_* in base/limits.h); operators, keys' shapes, numbers, dates and
 * CIDRs are checked at parse time so evaluation never meets a bad value. */
#include "auth/policy.h"
#include "base/limits.h"
#include "base/mem.h"
#include <arpa/inet.h>
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef struct strlist {
    char **v;
    size_t n;
} strlist_t;

enum fam { F_STRING, F_NUMERIC, F_DATE, F_BOOL, F_IP, F_ARN, F_NULL, F_BINARY };
enum sub { S_EQ, S_IEQ, S_LIKE, S_LT, S_LE, S_GT, S_GE };

/* The condition operators (tables as source). */
static const struct opdef {
    const char *name;
    unsigned char fam, sub;
    bool neg;
} ops[] = {
    { "StringEquals", F_STRING, S_EQ, false },
    { "StringNotEquals", F_STRING, S_EQ, true },
    { "StringEqualsIgnoreCase", F_STRING, S_IEQ, false },
    { "StringNotEqualsIgnoreCase", F_STRING, S_IEQ, true },
    { "StringLike", F_STRING, S_LIKE, false },
    { "StringNotLike", F_STRING, S_LIKE, true },
    { "NumericEquals", F_NUMERIC, S_EQ, false },
    { "NumericNotEquals", F_NUMERIC, S_EQ, true },
    { "NumericLessThan", F_NUMERIC, S_LT, false },
    { "NumericLessThanEquals", F_NUMERIC, S_LE, false },
    { "NumericGreaterThan", F_NUMERIC, S_GT, false },
    { "NumericGreaterThanEquals", F_NUMERIC, S_GE, false },
    { "DateEquals", F_DATE, S_EQ, false },
    { "DateNotEquals", F_DATE, S_EQ, true },
    { "DateLessThan", F_DATE, S_LT, false },
    { "DateLessThanEquals", F_DATE, S_LE, false },
    { "DateGreaterThan", F_DATE, S_GT, false },
    { "DateGreaterThanEquals", F_DATE, S_GE, false },
    { "Bool", F_BOOL, S_EQ, false },
    { "BinaryEquals", F_BINARY, S_EQ, false },
    { "IpAddress", F_IP, S_EQ, false },
    { "NotIpAddress", F_IP, S_EQ, true },
    { "ArnEquals", F_ARN, S_LIKE, false },
    { "ArnLike", F_ARN, S_LIKE, false },
    { "ArnNotEquals", F_ARN, S_LIKE, true },
    { "ArnNotLike", F_ARN, S_LIKE, true },
    { "Null", F_NULL, S_EQ, false },
};

/* Actions a principal of another account may never be granted (the source
 * document's Action table, "Cross-Account Access: Not allowed"). */
static const char *const same_account_only[] = {
    "CreateTableBucket", "ListTableBuckets", "PutTableBucketPolicy", "GetTableBucketPolicy",
    "DeleteTableBucketPolicy", "PutTableBucketEncryption", "GetTableBucketEncryption",
    "DeleteTableBucketEncryption", "PutTablePolicy", "GetTablePolicy", "DeleteTablePolicy",
    "GetTableEncryption", "PutTableEncryption",
};

typedef struct ipnet {
    unsigned char a[16];
    int bits;   /* prefix length in bits of the 16-byte form */
} ipnet_t;

typedef struct cond {
    unsigned char op;        /* index into ops[] */
    unsigned char set;       /* 0, 1 ForAnyValue, 2 ForAllValues */
    bool ifexists;
    char *key;               /* lower-cased */
    strlist_t vals;
    double *num;             /* F_NUMERIC: values; F_DATE: ms since epoch */
    ipnet_t *ip;             /* F_IP */
} cond_t;

typedef struct stmt {
    char *sid;
    bool deny;
    int pmode;               /* 0 none, 1 Principal, 2 NotPrincipal */
    bool pany;               /* "*" or {"AWS": "*"} */
    strlist_t principals;    /* "acct:DIGITS", an ARN, or "x:..." (service/federated: never us) */
    bool not_action;
    strlist_t actions;       /* lower-cased patterns */
    int rmode;               /* 0 none, 1 Resource, 2 NotResource */
    strlist_t resources;     /* canonical ARN patterns */
    cond_t *conds;
    size_t nconds;
} stmt_t;

struct fl_policy {
    fl_policy_kind_t kind;
    stmt_t *st;
    size_t n;
};

/* ------------------------------------------------------------------ */
/* small helpers                                                       */

bool fl_policy_glob(const char *p, const char *s, bool nocase)
{
    const char *star = NULL, *ss = NULL;
    while (*s) {
        if (*p == '*') {
            star = p++;
            ss = s;
            continue;
        }
        if (*p && (*p == '?' || *p == *s ||
                   (nocase && tolower((unsigned char)*p) == tolower((unsigned char)*s)))) {
            p++, s++;
            continue;
        }
        if (star) {
            p = star + 1;
            s = ++ss;
            continue;
        }
        return false;
    }
    while (*p == '*') p++;
    return !*p;
}

/* acs:osstables:... -> arn:aws:s3tables:... into buf (n bytes); else s itself. */
static const char *canon_arn(const char *s, char *buf, size_t n)
{
    static const char acs[] = "acs:osstables:", aws[] = "arn:aws:s3tables:";
    if (strncmp(s, acs, sizeof acs - 1) != 0) return s;
    if (snprintf(buf, n, "%s%s", aws, s + sizeof acs - 1) >= (int)n) return s;
    return buf;
}

static void strlist_free(strlist_t *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static void lower(char *s)
{
    for (; *s; s++) *s = (char)tolower((unsigned char)*s);
}

static bool all_digits(const char *s, size_t min, size_t max)
{
    size_t n = strlen(s);
    if (n < min || n > max) return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i])) return false;
    return true;
}

typedef struct perr {
    char *buf;
    size_t n;
} perr_t;

static bool bad(perr_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool bad(perr_t *e, const char *fmt, ...)
{
    if (e->buf && e->n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->buf, e->n, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* A JSON scalar as policy text: strings as they are, numbers and booleans
 * printed (AWS accepts "Bool": {"aws:SecureTransport": false}). */
static bool scalar_text(json_t *v, char *out, size_t n)
{
    if (json_is_string(v)) {
        if (json_string_length(v) >= n || strlen(json_string_value(v)) != json_string_length(v)) return false;
        memcpy(out, json_string_value(v), json_string_length(v) + 1);
        return true;
    }
    if (json_is_integer(v)) return snprintf(out, n, "%lld", (long long)json_integer_value(v)) < (int)n;
    if (json_is_real(v)) return snprintf(out, n, "%.17g", json_real_value(v)) < (int)n;
    if (json_is_true(v)) return snprintf(out, n, "true") < (int)n;
    if (json_is_false(v)) return snprintf(out, n, "false") < (int)n;
    return false;
}

/* A string or an array of strings (scalars when scalars) into l. */
static bool get_list(perr_t *e, json_t *v, const char *what, bool scalars, strlist_t *l)
{
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    if (!json_is_array(v) && !json_is_string(v) && !(scalars && (json_is_number(v) || json_is_boolean(v))))
        return bad(e, "%s must be a string or an array of strings.", what);
    if (n == 0) return bad(e, "%s must not be an empty array.", what);
    if (n > FL_POLICY_MAX_VALUES) return bad(e, "%s has more than %d values.", what, FL_POLICY_MAX_VALUES);
    l->v = fl_calloc(n, sizeof *l->v);
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_is_array(v) ? json_array_get(v, i) : v;
        char tmp[FL_POLICY_MAX_STRING + 1];
        if (!(json_is_string(x) || (scalars && (json_is_number(x) || json_is_boolean(x)))) ||
            !scalar_text(x, tmp, sizeof tmp))
            return bad(e, "%s must hold strings of at most %d characters.", what, FL_POLICY_MAX_STRING);
        l->v[l->n++] = fl_strdup(tmp);
    }
    return true;
}

/* "2025-01-01", "2025-01-01T10:00:00Z", "...T10:00:00.123+02:00", or epoch seconds. */
static bool parse_date(const char *s, double *ms)
{
    if (all_digits(s, 1, 12)) {
        *ms = strtod(s, NULL) * 1000.0;
        return true;
    }
    int Y, M, D, h = 0, m = 0, sec = 0, used = 0;
    if (sscanf(s, "%4d-%2d-%2d%n", &Y, &M, &D, &used) != 3 || used != 10) return false;
    const char *p = s + used;
    double frac = 0;
    long off = 0;
    if (*p == 'T' || *p == 't' || *p == ' ') {
        p++;
        int u = 0;
        if (sscanf(p, "%2d:%2d%n", &h, &m, &u) != 2 || u != 5) return false;
        p += u;
        if (*p == ':') {
            if (sscanf(p, ":%2d%n", &sec, &u) != 1 || u != 3) return false;
            p += u;
            if (*p == '.') {
                char *end;
                frac = strtod(p, &end);
                if (end == p + 1) return false;
                p = end;
            }
        }
        if (*p == 'Z' || *p == 'z') p++;
        else if (*p == '+' || *p == '-') {
            int oh, om;
            if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &u) != 2 || u != 5) return false;
            off = (oh * 60L + om) * 60L * (*p == '-' ? -1 : 1);
            p += 1 + u;
        }
    }
    if (*p) return false;
    if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60) return false;
    struct tm tm = { .tm_year = Y - 1900, .tm_mon = M - 1, .tm_mday = D, .tm_hour = h, .tm_min = m, .tm_sec = sec };
    time_t t = timegm(&tm);
    *ms = ((double)t - (double)off + frac) * 1000.0;
    return true;
}

/* An address or CIDR, as 16 bytes (IPv4 mapped into ::ffff:0:0/96). */
static bool parse_ip(const char *s, ipnet_t *out, bool allow_prefix)
{
    char tmp[64];
    if (strlen(s) >= sizeof tmp) return false;
    strcpy(tmp, s);
    char *slash = strchr(tmp, '/');
    long bits = -1;
    if (slash) {
        if (!allow_prefix || !all_digits(slash + 1, 1, 3)) return false;
        bits = strtol(slash + 1, NULL, 10);
        *slash = 0;
    }
    memset(out, 0, sizeof *out);
    struct in_addr a4;
    if (inet_pton(AF_INET, tmp, &a4) == 1) {
        if (bits > 32) return false;
        out->a[10] = out->a[11] = 0xff;
        memcpy(out->a + 12, &a4, 4);
        out->bits = 96 + (int)(bits < 0 ? 32 : bits);
        return true;
    }
    if (inet_pton(AF_INET6, tmp, out->a) == 1) {
        if (bits > 128) return false;
        out->bits = (int)(bits < 0 ? 128 : bits);
        return true;
    }
    return false;
}

static bool ip_in(const ipnet_t *net, const ipnet_t *a)
{
    int full = net->bits / 8, rest = net->bits % 8;
    if (memcmp(net->a, a->a, (size_t)full) != 0) return false;
    if (!rest) return true;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (net->a[full] & mask) == (a->a[full] & mask);
}

/* ------------------------------------------------------------------ */
/* parsing                                                             */

static void stmt_free(stmt_t *s)
{
    free(s->sid);
    strlist_free(&s->principals);
    strlist_free(&s->actions);
    strlist_free(&s->resources);
    for (size_t i = 0; i < s->nconds; i++) {
        free(s->conds[i].key);
        strlist_free(&s->conds[i].vals);
        free(s->conds[i].num);
        free(s->conds[i].ip);
    }
    free(s->conds);
}

void fl_policy_free(fl_policy_t *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) stmt_free(&p->st[i]);
    free(p->st);
    free(p);
}

size_t fl_policy_nstatements(const fl_policy_t *p)
{
    return p ? p->n : 0;
}

/* "arn:aws:iam::DIGITS:root" or "acs:ram::DIGITS:root" -> DIGITS (acct: 40 bytes). */
static bool root_account(const char *p, char *acct)
{
    const char *d;
    if (!strncmp(p, "arn:aws:iam::", 13)) d = p + 13;
    else if (!strncmp(p, "acs:ram::", 9)) d = p + 9;
    else return false;
    size_t n = strspn(d, "0123456789");
    if (n == 0 || n > 32 || strcmp(d + n, ":root") != 0) return false;
    memcpy(acct, d, n);
    acct[n] = 0;
    return true;
}

static bool parse_principal(perr_t *e, json_t *v, stmt_t *s)
{
    if (json_is_string(v)) {
        if (strcmp(json_string_value(v), "*") != 0) return bad(e, "Invalid principal in policy: a Principal string must be \"*\".");
        s->pany = true;
        return true;
    }
    strlist_t raw = { 0 };
    bool ok = false;
    if (json_is_array(v)) {
        /* OSS RAM samples: "Principal": ["<uid>", ...] */
        if (!get_list(e, v, "Principal", false, &raw)) goto out;
        s->principals.v = fl_calloc(raw.n, sizeof(char *));
        for (size_t i = 0; i < raw.n; i++) {
            if (!strcmp(raw.v[i], "*")) s->pany = true;
            else if (all_digits(raw.v[i], 1, 32)) {
                char b[48];
                snprintf(b, sizeof b, "acct:%s", raw.v[i]);
                s->principals.v[s->principals.n++] = fl_strdup(b);
            } else {
                bad(e, "Invalid principal in policy: \"%s\".", raw.v[i]);
                goto out;
            }
        }
        ok = true;
        goto out;
    }
    if (!json_is_object(v) || json_object_size(v) == 0) return bad(e, "Invalid principal in policy.");
    const char *k;
    json_t *x;
    size_t total = 0;
    json_object_foreach(v, k, x) {
        strlist_t l = { 0 };
        bool aws = !strcmp(k, "AWS");
        if (!aws && strcmp(k, "Service") && strcmp(k, "Federated") && strcmp(k, "CanonicalUser")) {
            bad(e, "Invalid principal in policy: unknown principal type \"%s\".", k);
            goto out;
        }
        if (!get_list(e, x, "Principal", false, &l)) {
            strlist_free(&l);
            goto out;
        }
        total += l.n;
        if (total > FL_POLICY_MAX_VALUES) {
            strlist_free(&l);
            bad(e, "Principal has more than %d values.", FL_POLICY_MAX_VALUES);
            goto out;
        }
        s->principals.v = fl_realloc(s->principals.v, total * sizeof(char *));
        for (size_t i = 0; i < l.n; i++) {
            const char *p = l.v[i];
            char b[FL_POLICY_MAX_STRING + 16], acct[40];
            if (!aws) snprintf(b, sizeof b, "x:%s:%s", k, p);
            else if (!strcmp(p, "*")) {
                s->pany = true;
                continue;
            } else if (all_digits(p, 1, 32)) snprintf(b, sizeof b, "acct:%s", p);
            else if (root_account(p, acct)) snprintf(b, sizeof b, "acct:%s", acct);
            else if (!strncmp(p, "arn:", 4) || !strncmp(p, "acs:", 4)) snprintf(b, sizeof b, "%s", p);
            else {
                bad(e, "Invalid principal in policy: \"%s\".", p);
                strlist_free(&l);
                goto out;
            }
            s->principals.v[s->principals.n++] = fl_strdup(b);
        }
        strlist_free(&l);
    }
    ok = true;
out:
    strlist_free(&raw);
    return ok;
}

static bool parse_conditions(perr_t *e, json_t *v, stmt_t *s)
{
    if (!json_is_object(v)) return bad(e, "Condition must be an object.");
    const char *opname;
    json_t *keys;
    json_object_foreach(v, opname, keys) {
        const char *base = opname;
        unsigned char set = 0;
        if (!strncmp(base, "ForAnyValue:", 12)) set = 1, base += 12;
        else if (!strncmp(base, "ForAllValues:", 13)) set = 2, base += 13;
        char name[64];
        size_t bl = strlen(base);
        bool ifexists = bl > 8 && !strcmp(base + bl - 8, "IfExists");
        if (bl >= sizeof name) return bad(e, "Invalid Condition operator \"%.64s\".", opname);
        memcpy(name, base, bl + 1);
        if (ifexists) name[bl - 8] = 0;
        size_t oi = 0;
        while (oi < sizeof ops / sizeof ops[0] && strcmp(ops[oi].name, name)) oi++;
        if (oi == sizeof ops / sizeof ops[0] || (ifexists && ops[oi].fam == F_NULL))
            return bad(e, "Invalid Condition operator \"%.64s\".", opname);
        if (!json_is_object(keys) || json_object_size(keys) == 0)
            return bad(e, "Condition operator %s must map keys to values.", name);
        const char *key;
        json_t *vals;
        json_object_foreach(keys, key, vals) {
            if (s->nconds >= FL_POLICY_MAX_CONDITIONS)
                return bad(e, "A statement has more than %d conditions.", FL_POLICY_MAX_CONDITIONS);
            const char *colon = strchr(key, ':');
            if (!colon || colon == key || !colon[1] || strlen(key) > 256)
                return bad(e, "Condition key \"%.64s\" must be prefaced by a vendor, e.g. aws:SourceIp.", key);
            s->conds = fl_realloc(s->conds, (s->nconds + 1) * sizeof *s->conds);
            cond_t *c = &s->conds[s->nconds++];
            memset(c, 0, sizeof *c);
            c->op = (unsigned char)oi;
            c->set = set;
            c->ifexists = ifexists;
            c->key = fl_strdup(key);
            lower(c->key);
            if (!get_list(e, vals, "A condition value", true, &c->vals)) return false;
            unsigned char fam = ops[oi].fam;
            if (fam == F_NUMERIC || fam == F_DATE) c->num = fl_calloc(c->vals.n, sizeof *c->num);
            if (fam == F_IP) c->ip = fl_calloc(c->vals.n, sizeof *c->ip);
            for (size_t i = 0; i < c->vals.n; i++) {
                const char *x = c->vals.v[i];
                char *end;
                if (fam == F_NUMERIC) {
                    c->num[i] = strtod(x, &end);
                    if (end == x || *end || !isfinite(c->num[i]))
                        return bad(e, "Condition %s: \"%.64s\" is not a number.", name, x);
                } else if (fam == F_DATE) {
                    if (!parse_date(x, &c->num[i]))
                        return bad(e, "Condition %s: \"%.64s\" is not a date (ISO 8601 or epoch seconds).", name, x);
                } else if (fam == F_IP) {
                    if (!parse_ip(x, &c->ip[i], true))
                        return bad(e, "Condition %s: \"%.64s\" is not an IP address or CIDR block.", name, x);
                } else if (fam == F_BOOL || fam == F_NULL) {
                    if (strcasecmp(x, "true") && strcasecmp(x, "false"))
                        return bad(e, "Condition %s: \"%.64s\" must be true or false.", name, x);
                }
            }
        }
    }
    return true;
}

static bool parse_stmt(perr_t *e, json_t *o, fl_policy_kind_t kind, stmt_t *s)
{
    static const char *const known[] = { "Sid", "Effect", "Principal", "NotPrincipal", "Action",
                                         "NotAction", "Resource", "NotResource", "Condition" };
    if (!json_is_object(o)) return bad(e, "Each Statement must be an object.");
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        size_t i = 0;
        while (i < sizeof known / sizeof known[0] && strcmp(known[i], k)) i++;
        if (i == sizeof known / sizeof known[0]) return bad(e, "Unknown field %.64s in a policy statement.", k);
    }
    json_t *sid = json_object_get(o, "Sid");
    if (sid) {
        if (!json_is_string(sid) || json_string_length(sid) > 256) return bad(e, "Sid must be a string.");
        for (const char *c = json_string_value(sid); *c; c++)
            if (!isalnum((unsigned char)*c) && *c != ' ' && *c != '_' && *c != '-' && *c != '.')
                return bad(e, "Sid \"%.64s\" must be alphanumeric.", json_string_value(sid));
    }
    s->sid = fl_strdup(sid ? json_string_value(sid) : "");
    const char *eff = json_string_value(json_object_get(o, "Effect"));
    if (!eff || (strcmp(eff, "Allow") && strcmp(eff, "Deny")))
        return bad(e, "Every policy statement needs an Effect of Allow or Deny.");
    s->deny = !strcmp(eff, "Deny");

    json_t *pr = json_object_get(o, "Principal"), *npr = json_object_get(o, "NotPrincipal");
    if (kind == FL_POLICY_IDENTITY && (pr || npr))
        return bad(e, "Policy document should not specify a principal.");
    if (kind != FL_POLICY_IDENTITY && !pr == !npr)
        return bad(e, "Every statement of a resource policy needs exactly one of Principal and NotPrincipal.");
    if (pr || npr) {
        s->pmode = pr ? 1 : 2;
        if (!parse_principal(e, pr ? pr : npr, s)) return false;
    }

    json_t *a = json_object_get(o, "Action"), *na = json_object_get(o, "NotAction");
    if (!a == !na) return bad(e, "Every policy statement needs exactly one of Action and NotAction.");
    s->not_action = na != NULL;
    if (!get_list(e, a ? a : na, "Action", false, &s->actions)) return false;
    for (size_t i = 0; i < s->actions.n; i++) {
        char *x = s->actions.v[i];
        lower(x);
        const char *colon = strchr(x, ':');
        if (strcmp(x, "*") && (!colon || colon == x || !colon[1]))
            return bad(e, "Actions/Conditions must be prefaced by a vendor, e.g., s3tables, iam, sts: \"%.64s\".", x);
    }

    json_t *r = json_object_get(o, "Resource"), *nr = json_object_get(o, "NotResource");
    if (r && nr) return bad(e, "A policy statement must not have both Resource and NotResource.");
    if (!r && !nr && kind != FL_POLICY_TRUST) return bad(e, "Policy statement must contain resources.");
    if (r || nr) {
        s->rmode = r ? 1 : 2;
        if (!get_list(e, r ? r : nr, "Resource", false, &s->resources)) return false;
        for (size_t i = 0; i < s->resources.n; i++) {
            char *x = s->resources.v[i], b[FL_POLICY_MAX_STRING + 16];
            if (strcmp(x, "*") && strncmp(x, "arn:", 4) && strncmp(x, "acs:", 4))
                return bad(e, "Resource %.64s must be in ARN format or \"*\".", x);
            const char *c = canon_arn(x, b, sizeof b);
            if (c != x) {
                free(s->resources.v[i]);
                s->resources.v[i] = fl_strdup(c);
            }
        }
    }
    json_t *cond = json_object_get(o, "Condition");
    if (cond && !parse_conditions(e, cond, s)) return false;
    return true;
}

fl_policy_t *fl_policy_parse(const char *json, size_t len, fl_policy_kind_t kind, char *err, size_t errlen)
{
    perr_t e = { err, errlen };
    fl_policy_t *p = fl_calloc(1, sizeof *p);
    p->kind = kind;
    json_t *root = NULL;
    bool ok = false;
    if (len > FL_POLICY_MAX_BYTES) {
        bad(&e, "The policy document is larger than %d bytes.", FL_POLICY_MAX_BYTES);
        goto out;
    }
    json_error_t je;
    root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(root)) {
        bad(&e, "The policy is not a valid JSON policy document.");
        goto out;
    }
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v) {
        if (strcmp(k, "Version") && strcmp(k, "Id") && strcmp(k, "Statement")) {
            bad(&e, "Unknown field %.64s in the policy document.", k);
            goto out;
        }
    }
    json_t *ver = json_object_get(root, "Version");
    if (ver) {
        const char *vs = json_string_value(ver);
        if (!vs || (strcmp(vs, "2012-10-17") && strcmp(vs, "2008-10-17") && strcmp(vs, "1"))) {
            bad(&e, "The policy's Version must be \"2012-10-17\", \"2008-10-17\" or \"1\".");
            goto out;
        }
    }
    json_t *id = json_object_get(root, "Id");
    if (id && !json_is_string(id)) {
        bad(&e, "The policy's Id must be a string.");
        goto out;
    }
    json_t *st = json_object_get(root, "Statement");
    size_t n = json_is_array(st) ? json_array_size(st) : json_is_object(st) ? 1 : 0;
    if (n == 0) {
        bad(&e, "The policy must have a Statement (object or non-empty array).");
        goto out;
    }
    if (n > FL_POLICY_MAX_STATEMENTS) {
        bad(&e, "The policy has more than %d statements.", FL_POLICY_MAX_STATEMENTS);
        goto out;
    }
    p->st = fl_calloc(n, sizeof *p->st);
    for (size_t i = 0; i < n; i++) {
        p->n = i + 1;
        if (!parse_stmt(&e, json_is_array(st) ? json_array_get(st, i) : st, kind, &p->st[i])) goto out;
        for (size_t j = 0; j < i; j++)
            if (p->st[i].sid[0] && !strcmp(p->st[i].sid, p->st[j].sid)) {
                bad(&e, "Statement IDs (SID) in a single policy must be unique: \"%.64s\".", p->st[i].sid);
                goto out;
            }
    }
    ok = true;
out:
    json_decref(root);
    if (!ok) {
        fl_policy_free(p);
        return NULL;
    }
    return p;
}

/* ------------------------------------------------------------------ */
/* evaluation                                                          */

/* The request's value of key (lower-cased), or NULL when absent. */
static const char *key_value(const fl_policy_ctx_t *c, const char *key, char *buf, size_t n)
{
    if (!strcmp(key, "aws:sourceip")) return c->source_ip;
    if (!strcmp(key, "aws:principalaccount")) return c->principal_account;
    if (!strcmp(key, "aws:principalarn")) return c->principal_arn;
    if (!strcmp(key, "aws:username")) return c->username;
    if (!strcmp(key, "aws:securetransport")) return c->secure_transport ? "true" : "false";
    if (!strcmp(key, "aws:currenttime") || !strcmp(key, "aws:epochtime")) {
        if (!c->now_ms) return NULL;
        if (key[4] == 'e') {
            snprintf(buf, n, "%lld", (long long)(c->now_ms / 1000));
            return buf;
        }
        time_t t = (time_t)(c->now_ms / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
        return buf;
    }
    if (!strcmp(key, "s3tables:namespace") || !strcmp(key, "oss:namespace")) return c->ns;
    if (!strcmp(key, "s3tables:tablename") || !strcmp(key, "oss:tablename")) return c->table_name;
    return NULL;
}

/* Segment-wise ARN match: the first five ':' split both sides. */
static bool arn_like(const char *pat, const char *arn)
{
    char pb[FL_POLICY_MAX_STRING + 32], ab[FL_POLICY_MAX_STRING + 32], cp[FL_POLICY_MAX_STRING + 32];
    const char *p = canon_arn(pat, cp, sizeof cp);
    char ca[FL_POLICY_MAX_STRING + 32];
    const char *a = canon_arn(arn, ca, sizeof ca);
    if (strlen(p) >= sizeof pb || strlen(a) >= sizeof ab) return false;
    strcpy(pb, p);
    strcpy(ab, a);
    char *ps = pb, *as = ab;
    for (int seg = 0; seg < 5; seg++) {
        char *pc = strchr(ps, ':'), *ac = strchr(as, ':');
        if (!pc || !ac) return false;
        *pc = *ac = 0;
        if (!fl_policy_glob(ps, as, false)) return false;
        ps = pc + 1, as = ac + 1;
    }
    return fl_policy_glob(ps, as, false);
}

/* Does the request value x match policy value i under c's positive operator? */
static bool value_matches(const cond_t *c, size_t i, const char *x)
{
    const struct opdef *o = &ops[c->op];
    const char *v = c->vals.v[i];
    switch (o->fam) {
    case F_STRING:
        if (o->sub == S_EQ) return !strcmp(v, x);
        if (o->sub == S_IEQ) return !strcasecmp(v, x);
        return fl_policy_glob(v, x, false);
    case F_BINARY:
        return !strcmp(v, x);
    case F_BOOL:
        return !strcasecmp(v, x);
    case F_ARN:
        return arn_like(v, x);
    case F_IP: {
        ipnet_t a;
        if (!parse_ip(x, &a, false)) return false;
        return ip_in(&c->ip[i], &a);
    }
    case F_NUMERIC:
    case F_DATE: {
        double r;
        char *end;
        if (o->fam == F_DATE) {
            if (!parse_date(x, &r)) return false;
        } else {
            r = strtod(x, &end);
            if (end == x || *end) return false;
        }
        double pv = c->num[i];
        switch (o->sub) {
        case S_EQ: return r == pv;
        case S_LT: return r < pv;
        case S_LE: return r <= pv;
        case S_GT: return r > pv;
        case S_GE: return r >= pv;
        default: return false;
        }
    }
    default:
        return false;
    }
}

static bool any_value(const cond_t *c, const char *x)
{
    for (size_t i = 0; i < c->vals.n; i++)
        if (value_matches(c, i, x)) return true;
    return false;
}

static bool cond_true(const cond_t *c, const fl_policy_ctx_t *ctx)
{
    char buf[64];
    const char *x = key_value(ctx, c->key, buf, sizeof buf);
    const struct opdef *o = &ops[c->op];
    if (o->fam == F_NULL) {
        for (size_t i = 0; i < c->vals.n; i++)
            if (!strcasecmp(c->vals.v[i], "true") == !x) return true;
        return false;
    }
    /* every key floe knows is single-valued: a set of zero or one value */
    if (c->set == 1) {
        if (!x) return false;
        return o->neg ? !any_value(c, x) : any_value(c, x);
    }
    if (c->set == 2) {
        if (!x) return true;
        return o->neg ? !any_value(c, x) : any_value(c, x);
    }
    if (!x) return c->ifexists || o->neg;
    return o->neg ? !any_value(c, x) : any_value(c, x);
}

static bool principal_matches(const stmt_t *s, const fl_policy_ctx_t *ctx)
{
    if (s->pany) return true;
    for (size_t i = 0; i < s->principals.n; i++) {
        const char *p = s->principals.v[i];
        if (!strncmp(p, "acct:", 5)) {
            if (ctx->principal_account && !strcmp(p + 5, ctx->principal_account)) return true;
        } else if (ctx->principal_arn && !strcmp(p, ctx->principal_arn)) {
            return true;
        }
    }
    return false;
}

/* action is lower-cased "service:name", as the patterns are (at parse time):
 * matched case-sensitively, which is then the same as ignoring case. */
static bool action_matches(const stmt_t *s, const char *action)
{
    const char *colon = strchr(action, ':');
    const char *name = colon ? colon + 1 : action;
    size_t svc_len = colon ? (size_t)(colon - action) : 0;
    for (size_t i = 0; i < s->actions.n; i++) {
        const char *p = s->actions.v[i];
        if (fl_policy_glob(p, action, false)) return true;
        /* oss:X covers s3tables:X and s3:X */
        if (!strncmp(p, "oss:", 4) &&
            ((svc_len == 8 && !strncmp(action, "s3tables", 8)) || (svc_len == 2 && !strncmp(action, "s3", 2))) &&
            fl_policy_glob(p + 4, name, false))
            return true;
    }
    return false;
}

static bool resource_matches(const stmt_t *s, const char *res)
{
    for (size_t i = 0; i < s->resources.n; i++)
        if (fl_policy_glob(s->resources.v[i], res, false)) return true;
    return false;
}

static bool stmt_applies(const fl_policy_t *p, const stmt_t *s, const fl_policy_ctx_t *ctx,
                         const char *action, const char *res)
{
    if (p->kind != FL_POLICY_IDENTITY) {
        bool m = principal_matches(s, ctx);
        if (s->pmode == 2 ? m : !m) return false;
    }
    bool am = action_matches(s, action);
    if (s->not_action ? am : !am) return false;
    if (s->rmode) {
        bool rm = resource_matches(s, res);
        if (s->rmode == 2 ? rm : !rm) return false;
    }
    for (size_t i = 0; i < s->nconds; i++)
        if (!cond_true(&s->conds[i], ctx)) return false;
    return true;
}

/* fl_policy_eval with the action already lower-cased and the resource in canonical form. */
static fl_policy_effect_t eval_prepared(const fl_policy_t *p, const fl_policy_ctx_t *ctx, const char *action,
                                        const char *res, const char **sid)
{
    fl_policy_effect_t best = FL_POLICY_NONE;
    for (size_t i = 0; i < p->n; i++) {
        const stmt_t *s = &p->st[i];
        if ((s->deny && best == FL_POLICY_DENY) || (!s->deny && best != FL_POLICY_NONE)) continue;
        if (!stmt_applies(p, s, ctx, action, res)) continue;
        best = s->deny ? FL_POLICY_DENY : FL_POLICY_ALLOW;
        if (sid) *sid = s->sid;
        if (s->deny) break;
    }
    return best;
}

/* The request's action (lower-cased) and resource (canonical), computed once per decision. */
typedef struct prepared {
    char action[256];
    char rbuf[FL_POLICY_MAX_STRING + 32];
    const char *res;
} prepared_t;

static void prepare(const fl_policy_ctx_t *ctx, prepared_t *pr)
{
    fl_strlcpy(pr->action, ctx->action, sizeof pr->action);
    lower(pr->action);
    pr->res = canon_arn(ctx->resource ? ctx->resource : "*", pr->rbuf, sizeof pr->rbuf);
}

fl_policy_effect_t fl_policy_eval(const fl_policy_t *p, const fl_policy_ctx_t *ctx, const char **sid)
{
    if (!p || !ctx->action) return FL_POLICY_NONE;
    prepared_t pr;
    prepare(ctx, &pr);
    return eval_prepared(p, ctx, pr.action, pr.res, sid);
}

bool fl_policy_mentions(const fl_policy_t *p, const char *action)
{
    char a[256];
    fl_strlcpy(a, action, sizeof a);
    lower(a);
    for (size_t i = 0; i < p->n; i++) {
        const stmt_t *s = &p->st[i];
        if (s->not_action || action_matches(s, a)) return true;
    }
    return false;
}

bool fl_policy_action_same_account_only(const char *action)
{
    const char *colon = action ? strchr(action, ':') : NULL;
    if (!colon) return false;
    size_t sl = (size_t)(colon - action);
    if (!((sl == 8 && !strncasecmp(action, "s3tables", 8)) || (sl == 3 && !strncasecmp(action, "oss", 3))))
        return false;
    for (size_t i = 0; i < sizeof same_account_only / sizeof same_account_only[0]; i++)
        if (!strcasecmp(same_account_only[i], colon + 1)) return true;
    return false;
}

void fl_authz_decide(const fl_authz_in_t *in, fl_authz_out_t *out)
{
    const fl_policy_ctx_t *ctx = in->ctx;
    bool cross = !ctx->principal_account || !in->resource_account ||
                 strcmp(ctx->principal_account, in->resource_account) != 0;
    *out = (fl_authz_out_t){ .allowed = false, .reason = "implicit deny", .sid = "", .where = "" };
    if (cross && fl_policy_action_same_account_only(ctx->action)) {
        out->reason = "action not allowed across accounts";
        return;
    }
    if (!cross && in->principal_is_root && !in->session && !in->root_bound_by_resource_deny) {
        out->allowed = true;
        out->reason = "account root";
        return;
    }
    const char *sid = "", *id_sid = "", *res_sid = "";
    if (!ctx->action) return;
    prepared_t pr;
    prepare(ctx, &pr);
    bool id_allow = in->principal_is_root, res_allow = false, sess_allow = in->session == NULL;
    for (size_t i = 0; i < in->nidentity; i++) {
        fl_policy_effect_t e = eval_prepared(in->identity[i], ctx, pr.action, pr.res, &sid);
        if (e == FL_POLICY_DENY) {
            *out = (fl_authz_out_t){ false, "explicit deny", sid, "identity" };
            return;
        }
        if (e == FL_POLICY_ALLOW && !id_allow) id_allow = true, id_sid = sid;
    }
    if (in->session) {
        fl_policy_effect_t e = eval_prepared(in->session, ctx, pr.action, pr.res, &sid);
        if (e == FL_POLICY_DENY) {
            *out = (fl_authz_out_t){ false, "explicit deny", sid, "session" };
            return;
        }
        sess_allow = e == FL_POLICY_ALLOW;
    }
    for (size_t i = 0; i < in->nresource; i++) {
        if (!in->resource[i]) continue;
        fl_policy_effect_t e = eval_prepared(in->resource[i], ctx, pr.action, pr.res, &sid);
        if (e == FL_POLICY_DENY) {
            *out = (fl_authz_out_t){ false, "explicit deny", sid, "resource" };
            return;
        }
        if (e == FL_POLICY_ALLOW && !res_allow) res_allow = true, res_sid = sid;
    }
    bool id_ok = id_allow && sess_allow;
    if (!cross) {
        if (id_ok && in->principal_is_root && !in->session)
            *out = (fl_authz_out_t){ true, "account root", "", "" };
        else if (id_ok) *out = (fl_authz_out_t){ true, "identity allow", id_sid, "identity" };
        else if (res_allow) *out = (fl_authz_out_t){ true, "resource allow", res_sid, "resource" };
        else if (id_allow && !sess_allow) out->reason = "outside the session policy";
        return;
    }
    if (id_ok && res_allow) *out = (fl_authz_out_t){ true, "cross-account allow", res_sid, "resource" };
    else if (res_allow) out->reason = "cross account: no identity allow";
    else if (id_ok) out->reason = "cross account: no resource allow";
}
