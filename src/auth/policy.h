/* IAM-style policy documents: parsing (with the validation AWS applies when a
 * policy is stored) and evaluation against one request, and the decision that
 * combines a caller's identity policies with resource policies as AWS does:
 *
 *   1. an action the source document marks as never cross-account, asked by a
 *      principal of another account than the resource's: denied;
 *   2. the owning account's root: allowed (it keeps full access to its account),
 *      unless it acts under a session policy (credentials vended for a root):
 *      then what that policy allows; or unless the question says a resource
 *      policy's Deny binds the root too (S3 bucket policies, as AWS: there a
 *      matching Deny refuses the root, and only the root is allowed otherwise);
 *   3. any matching Deny in any policy: denied (explicit deny wins);
 *   4. same account: allowed if an identity policy (within the session policy,
 *      if any) or a resource policy allows;
 *   5. cross account: allowed only if a resource policy allows the principal
 *      and its own identity policies allow too;
 *   6. otherwise implicitly denied.
 *
 * Action names are matched case-insensitively and in both spellings: a policy
 * naming `oss:GetTable` matches the action `s3tables:GetTable`, and `oss:X`
 * also matches `s3:X`. ARNs of either form (acs:osstables:... and
 * arn:aws:s3tables:...) are compared as one. A parsed policy is immutable:
 * any thread may evaluate it concurrently; parse and free on one thread. */
#ifndef FL_AUTH_POLICY_H
#define FL_AUTH_POLICY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fl_policy fl_policy_t;

typedef enum fl_policy_kind {
    FL_POLICY_IDENTITY = 0,  /* attached to a user/role or a session: no Principal allowed */
    FL_POLICY_RESOURCE,      /* table bucket / table / S3 bucket policy: Principal required */
    FL_POLICY_TRUST,         /* a role's trust policy: Principal required, sts actions */
} fl_policy_kind_t;

/* Parses a policy document of len bytes (at most FL_POLICY_MAX_BYTES). On a
 * malformed or unsupported document returns NULL with a message for the
 * client in err (errlen bytes). The result is owned by the caller. */
fl_policy_t *fl_policy_parse(const char *json, size_t len, fl_policy_kind_t kind, char *err,
                             size_t errlen);
void fl_policy_free(fl_policy_t *p);
/* Statements in the policy (for tests and the audit log). */
size_t fl_policy_nstatements(const fl_policy_t *p);

/* The request as the policy language sees it. Strings are borrowed; NULL
 * means the key is absent from the request context. */
typedef struct fl_policy_ctx {
    const char *action;            /* "s3tables:GetTable", "s3:GetObject", "iam:CreateUser" */
    const char *resource;          /* ARN, or "*" */
    const char *principal_arn;     /* aws:PrincipalArn: arn:aws:iam::ACCT:root|user/N|role/R */
    const char *principal_account; /* aws:PrincipalAccount, 12 digits */
    const char *username;          /* aws:username (users only) */
    const char *source_ip;         /* aws:SourceIp, textual IPv4 or IPv6 */
    int64_t now_ms;                /* aws:CurrentTime, aws:EpochTime */
    bool secure_transport;         /* aws:SecureTransport */
    const char *ns;                /* s3tables:namespace */
    const char *table_name;        /* s3tables:tableName */
} fl_policy_ctx_t;

typedef enum fl_policy_effect {
    FL_POLICY_NONE = 0,   /* no statement applies */
    FL_POLICY_ALLOW,
    FL_POLICY_DENY,
} fl_policy_effect_t;

/* The strongest effect of p's statements that match ctx (Deny over Allow over
 * none). When it is not NONE, *sid (if non-NULL) is the deciding statement's
 * Sid ("" when it has none), borrowed from p. Kind RESOURCE/TRUST policies
 * also require the statement's Principal to match. */
fl_policy_effect_t fl_policy_eval(const fl_policy_t *p, const fl_policy_ctx_t *ctx, const char **sid);

/* False when no statement of p can apply to action, whatever the resource,
 * principal and conditions (its Action lists never match it; a NotAction
 * statement may always apply). For indexing policies by action. */
bool fl_policy_mentions(const fl_policy_t *p, const char *action);

/* True when a principal of another account may never be granted action
 * (the source document's "Cross-Account Access: Not allowed" rows). action is
 * "service:Name"; the name is compared case-insensitively. */
bool fl_policy_action_same_account_only(const char *action);

/* One authorisation question. */
typedef struct fl_authz_in {
    const fl_policy_ctx_t *ctx;
    bool principal_is_root;                 /* the caller is its account's root */
    const char *resource_account;           /* the resource owner's account id */
    const fl_policy_t *const *identity;     /* the caller's identity policies */
    size_t nidentity;
    const fl_policy_t *session;             /* AssumeRole session policy, or NULL */
    const fl_policy_t *const *resource;     /* bucket policy, table policy, ... (NULLs skipped) */
    size_t nresource;
    bool root_bound_by_resource_deny;       /* S3 bucket policies: rule 2 after rule 3 for the resource policies */
} fl_authz_in_t;

typedef struct fl_authz_out {
    bool allowed;
    const char *reason;  /* static text: "root", "explicit deny", "identity allow", ... */
    const char *sid;     /* the deciding statement's Sid, borrowed, or "" */
    const char *where;   /* "identity", "session", "resource", "" */
} fl_authz_out_t;

/* Decides in->ctx by the rules at the top of this file. Pure; any thread. */
void fl_authz_decide(const fl_authz_in_t *in, fl_authz_out_t *out);

/* Glob match of the policy language: `*` any run, `?` one character.
 * Exposed for tests. */
bool fl_policy_glob(const char *pat, const char *s, bool nocase);
#endif
