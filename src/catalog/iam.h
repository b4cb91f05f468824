/* Identities and authorisation: who signed a request (an account's root, a
 * user, or an AssumeRole session) and whether the policies in force let it
 * do one action on one resource.
 *
 * Secrets of users' and sessions' access keys are stored sealed (AES-256-GCM
 * under a 32-byte key file, by default DATA_DIR/iam-master-key, mode 0600,
 * made on first start); the root
 * key pair stays auth/keys.h's. Session credentials also need their session
 * token (x-amz-security-token), whose SHA-256 is kept, never the token.
 * The catalog records a check value of the master key that sealed its
 * secrets; fl_iam_open fails (logged) on a node whose key differs. 
 * Thread-safe after fl_iam_open; calls block on the catalog store. */
#ifndef FL_CATALOG_IAM_H
#define FL_CATALOG_IAM_H
#include <stdbool.h>
#include "auth/arn.h"
#include "auth/keys.h"
#include "auth/policy.h"
#include "base/query.h"
#include "meta/catalog.h"
#include "net/http.h"

typedef struct fl_iam fl_iam_t;

/* key_path: the master key's file (made, 0600, when absent); root: the root
 * account's key pair (borrowed, outlives the handle); account: its account id.
 * NULL on failure (logged): the key file unreadable or open to others, or not
 * the key the catalog's secrets were sealed with. Main thread. */
fl_iam_t *fl_iam_open(fl_catalog_t *cat, const char *key_path, const fl_keys_t *root, const char *account);
void fl_iam_close(fl_iam_t *iam);

/* fl_secret_lookup_fn over a fl_iam_t* (ud): the root key, or an Active
 * user or session key, expired or not: the front doors that verify with it
 * must call fl_iam_identify after, which refuses an expired session (with a
 * message saying "expired", for ExpiredToken). Any thread. */
bool fl_iam_lookup(void *ud, const char *akid, char *secret_out);

/* The caller behind a verified access key. */
typedef struct fl_iam_who {
    char akid[64];
    char account[40];
    char kind[8];                 /* "root", "user", "session", "vended" */
    char name[128];               /* user or role name (vended: its owner's) */
    char vended_for[8];           /* vended: the owner's kind, "root", "user" or "role"; else "" */
    char arn[FL_ARN_MAX];         /* GetCallerIdentity's Arn (assumed-role/R/S for sessions) */
    char principal_arn[FL_ARN_MAX]; /* aws:PrincipalArn: root, user or role ARN */
    char session_name[72];
    char *session_policy;         /* owned; NULL when none */
    int64_t expires_ms;           /* temporary keys: when the key expires; else 0 */
    bool root;
} fl_iam_who_t;

/* Identifies the owner of akid (already verified by SigV4); token is the
 * request's x-amz-security-token (NULL if none). FL_ERR_AUTH with a message
 * in msg (128 bytes) when the key is unknown, inactive or expired, or the
 * token is missing, wrong, or given for a long-term key. Records the key's
 * last use. */
fl_err_t fl_iam_identify(fl_iam_t *iam, const char *akid, const char *token, fl_iam_who_t *who, char *msg);
void fl_iam_who_free(fl_iam_who_t *who);

/* A request's session token, as AWS and Alibaba Cloud clients send it (a new
 * string, free(); NULL when none). Headers: x-amz-security-token (SigV4),
 * x-oss-security-token (OSS4; oss2's V1), security-token (alibabacloud-oss-v2's
 * V1). Presigned URLs, in q (NULL: not looked at): X-Amz-Security-Token,
 * x-oss-security-token (OSS4), security-token (V1). The first found wins;
 * the signature covers it as its dialect says (auth/sigv4.c). Any thread. */
char *fl_iam_request_token(const fl_http_req_t *req, const fl_query_t *q);

/* One question: may who do ctx->action on ctx->resource, owned by
 * resource_account, with these resource policies (JSON texts, NULLs skipped)?
 * ctx's principal fields are filled here from who. Identity policies (the
 * user's or role's inline policies, the session policy) are read from the
 * catalog store. out as fl_authz_decide's. */
void fl_iam_authorize(fl_iam_t *iam, const fl_iam_who_t *who, fl_policy_ctx_t *ctx, const char *resource_account,
                      const char *const *resource_policies, size_t n, fl_authz_out_t *out);

/* What one check is about: a table bucket and optionally a table in it, or
 * another resource (an S3 bucket or object) by ARN. */
typedef struct fl_iam_target {
    const fl_tbucket_t *bucket;   /* its owner, ARN and resource policy; NULL: resource/owner below */
    const fl_table_t *table;      /* the table (its ARN and policy); NULL: bucket-level or not (yet) there */
    const char *ns, *name;        /* s3tables:namespace / tableName when table is NULL (NULL: absent) */
    bool table_level;             /* a table's action: without a table the resource is "{bucket}/table/(any)" */
    const char *resource;         /* without a bucket: the ARN ("*" when NULL) */
    const char *owner;            /* without a bucket: the owning account (NULL: the root account) */
    const char *policy_arn;       /* without a bucket: the ARN whose stored resource policy (kind "policy")
                                   * takes part, an S3 bucket's "arn:aws:s3:::B"; NULL: none */
    bool deny_binds_root;         /* a Deny in that policy refuses the owner's root too (S3 bucket policies) */
} fl_iam_target_t;

/* May who do every one of actions ("s3tables:GetTableData", ...) on tg? The
 * bucket's and table's resource policies are read from the catalog store and
 * take part; source_ip is fl_http_peer's "ip:port". On a denial the audit line is written and msg (msglen bytes,
 * may be NULL) gets AWS's "User: ... is not authorized to perform: ..." text.
 * Any thread; blocks on the catalog store. */
bool fl_iam_check(fl_iam_t *iam, const fl_iam_who_t *who, const char *const *actions, size_t nactions,
                  const fl_iam_target_t *tg, const char *source_ip, char *msg, size_t msglen);

/* fl_iam_check without its audit line and message: for a question whose "no"
 * is an answer, not a refusal (what the vended credentials may do). */
bool fl_iam_allows(fl_iam_t *iam, const fl_iam_who_t *who, const char *action, const fl_iam_target_t *tg,
                   const char *source_ip);

/* Credentials for one table's data, vended by the Iceberg REST catalog
 * (X-Iceberg-Access-Delegation: vended-credentials). */
typedef struct fl_iam_vended {
    char akid[64];
    char secret[128];
    char token[256];
    int64_t expires_ms;
} fl_iam_vended_t;

/* Mints (or hands out again) temporary credentials of who's own principal for
 * the data of one table: a key of kind "vended" (its token required, like a
 * session's) that lasts FL_IAM_VENDED_TTL_S, whose session policy allows only
 * s3tables:GetTableData (and s3tables:PutTableData when write) on table_arn,
 * or, with table_arn NULL (a staged create), on bucket_arn's tables named
 * ns.name. What the key may do is that policy intersected with what who's
 * principal may do when it is used (root: the policy alone); an AssumeRole
 * session's own session policy is not carried over: the caller checks that
 * who may do the same before asking. The same (who's key, table, write) gets
 * the same credentials while more than half their lifetime is left
 * (FL_IAM_VENDED_CACHE per node). They never outlive who's own key (an
 * AssumeRole session's expiry). who must not be NULL nor itself vended
 * (FL_ERR_INVALID). Any thread; writes the catalog store when it mints. */
fl_err_t fl_iam_vend(fl_iam_t *iam, const fl_iam_who_t *who, const char *table_arn, const char *bucket_arn,
                     const char *ns, const char *name, bool write, fl_iam_vended_t *out);

/* aws:SourceIp of a peer "ip:port" / "[v6]:port" (fl_http_peer): the address
 * alone, in out; NULL when peer is NULL or odd. */
const char *fl_iam_source_ip(const char *peer, char out[64]);

/* Writes one audit line: "audit " + a JSON object {time_ms, decision ("allow",
 * "deny", "write"), principal, account, access_key, action, resource, reason,
 * statement, policy, detail}. who NULL = anonymous; o and detail may be NULL.
 * Secrets are never passed here. Any thread. */
void fl_iam_audit(const fl_iam_who_t *who, const char *decision, const char *action, const char *resource,
                  const fl_authz_out_t *o, const char *detail);

/* AssumeRole's authorisation: may who assume role (its trust policy in
 * role->doc)? The trust policy must allow sts:AssumeRole for who, and the
 * usual rules hold (across accounts who's identity policies must allow it
 * too; an explicit Deny anywhere wins). Denials are audited; msg as
 * fl_iam_check's. Any thread. */
bool fl_iam_may_assume(fl_iam_t *iam, const fl_iam_who_t *who, const fl_iam_principal_t *role, const char *source_ip,
                       char *msg, size_t msglen);

/* Mints AssumeRole credentials for role (account, name) lasting duration_s:
 * stores the session key (sealed secret, SHA-256 of the token, expiry,
 * session name and policy) and returns the plain secret (128 bytes) and
 * session token (256 bytes) for the one answer that shows them. */
fl_err_t fl_iam_new_session(fl_iam_t *iam, const fl_iam_principal_t *role, const char *session_name,
                            const char *session_policy, int64_t duration_s, fl_iam_key_t *k, char *secret_out,
                            char *token_out);

/* Accounts (tenants) besides the server's own (--account): principal rows
 * (account "", kind "account", name = the 12-digit id), each with its root
 * access key (a key row of kind "root"). Creates one (id NULL: a random id;
 * FL_ERR_EXISTS, FL_ERR_INVALID for an id that is not 12 digits or is the
 * server's) with a root key: fills id_out (16 bytes), k and the plain secret
 * (128 bytes). Any thread. */
fl_err_t fl_iam_account_create(fl_iam_t *iam, const char *id, char *id_out, fl_iam_key_t *k, char *secret_out);
/* The stored accounts (not the server's own), by id; free with fl_iam_principals_free. */
fl_err_t fl_iam_account_list(fl_iam_t *iam, fl_iam_principal_t **out, size_t *n);
/* True if account is the server's own or a stored one. */
bool fl_iam_account_exists(fl_iam_t *iam, const char *account);

/* Something identities, policies or table names/ARNs depend on changed
 * through this node: cached keys, parsed policies and lookups are reloaded.
 * A write request brackets its handler with write_begin/write_end (the
 * catalog port does it for every authenticated non-GET/HEAD request): what is
 * cached before it is dropped, nothing loaded while it runs is kept, so the
 * request that follows its response sees what it wrote. write_begin returns a
 * mark for write_end, which signals the other nodes on the same store
 * (fl_catalog_signal) when the store was written meanwhile, so that they drop
 * their caches at once; otherwise, and for floe admin on SQLite, they see
 * changes within FL_IAM_CACHE_TTL_MS. Any thread. */
void fl_iam_changed(fl_iam_t *iam);
uint64_t fl_iam_write_begin(fl_iam_t *iam);
void fl_iam_write_end(fl_iam_t *iam, uint64_t mark);

/* The table whose warehouse bucket is wb ("{id}--table-s3") and its table
 * bucket, cached (see fl_iam_changed). False when none. Any thread. */
bool fl_iam_warehouse(fl_iam_t *iam, const char *wb, fl_table_t *t, fl_tbucket_t *b);
/* The table or view (bucket, ns, name), cached; false when none. */
bool fl_iam_table(fl_iam_t *iam, const char *bucket, const char *ns, const char *name, fl_table_t *t);

/* Seals a secret for storage (out: 256 bytes) / opens it (out: 128 bytes). */
fl_err_t fl_iam_seal(fl_iam_t *iam, const char *secret, char *out);
fl_err_t fl_iam_unseal(fl_iam_t *iam, const char *sealed, char *out);

/* A new access key for (account, kind, name): fills k (akid, sealed secret)
 * and the plain secret (128 bytes) for the one answer that shows it. */
fl_err_t fl_iam_new_key(fl_iam_t *iam, const char *account, const char *kind, const char *name, fl_iam_key_t *k,
                        char *secret_out);
fl_catalog_t *fl_iam_catalog(fl_iam_t *iam);
const char *fl_iam_root_account(const fl_iam_t *iam);
#endif
