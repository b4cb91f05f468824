/* Identities and authorisation (see iam.h). The master key seals secrets with
 * AES-256-GCM: stored form "v1:" base64(12-byte IV | ciphertext | 16-byte tag). */
#include "catalog/iam.h"
#include "base/buf.h"
#include "base/checksum.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include <jansson.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOUCH_EVERY_MS 60000  /* last-used is written at most once a minute per key */

struct fl_iam {
    fl_catalog_t *cat;
    const fl_keys_t *root;
    char account[40];
    unsigned char key[32];
};

static bool master_key(const char *dir, unsigned char key[32])
{
    char path[4200];
    snprintf(path, sizeof path, "%s/iam-master-key", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        struct stat st;
        bool ok = fstat(fd, &st) == 0 && !(st.st_mode & (S_IRWXG | S_IRWXO)) && read(fd, key, 32) == 32;
        close(fd);
        if (!ok) fl_error("%s is unreadable, not 32 bytes, or open to group/others (chmod 600)", path);
        return ok;
    }
    if (errno != ENOENT) {
        fl_error("cannot read %s: %s", path, strerror(errno));
        return false;
    }
    if (RAND_bytes(key, 32) != 1) return false;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write(fd, key, 32) == 32 && fsync(fd) == 0;
    if (fd >= 0) close(fd);
    if (!ok) fl_error("cannot write %s: %s", path, strerror(errno));
    return ok;
}

fl_iam_t *fl_iam_open(fl_catalog_t *cat, const char *data_dir, const fl_keys_t *root, const char *account)
{
    fl_iam_t *iam = fl_calloc(1, sizeof *iam);
    iam->cat = cat;
    iam->root = root;
    fl_strlcpy(iam->account, account, sizeof iam->account);
    if (!master_key(data_dir, iam->key)) {
        free(iam);
        return NULL;
    }
    return iam;
}

void fl_iam_close(fl_iam_t *iam)
{
    if (!iam) return;
    OPENSSL_cleanse(iam->key, sizeof iam->key);
    free(iam);
}

fl_catalog_t *fl_iam_catalog(fl_iam_t *iam) { return iam->cat; }
const char *fl_iam_root_account(const fl_iam_t *iam) { return iam->account; }

fl_err_t fl_iam_seal(fl_iam_t *iam, const char *secret, char *out)
{
    unsigned char buf[12 + 128 + 16];
    size_t n = strlen(secret);
    int len = 0, fin = 0;
    if (n >= 128) return FL_ERR_INVALID;
    if (RAND_bytes(buf, 12) != 1) return FL_ERR_INTERNAL;
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    bool ok = x && EVP_EncryptInit_ex(x, EVP_aes_256_gcm(), NULL, iam->key, buf) == 1 &&
              EVP_EncryptUpdate(x, buf + 12, &len, (const unsigned char *)secret, (int)n) == 1 &&
              EVP_EncryptFinal_ex(x, buf + 12 + len, &fin) == 1 &&
              EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, 16, buf + 12 + n) == 1;
    EVP_CIPHER_CTX_free(x);
    if (!ok) return FL_ERR_INTERNAL;
    memcpy(out, "v1:", 3);
    fl_base64(buf, 12 + n + 16, out + 3);
    return FL_OK;
}

fl_err_t fl_iam_unseal(fl_iam_t *iam, const char *sealed, char *out)
{
    unsigned char buf[12 + 128 + 16];
    if (strncmp(sealed, "v1:", 3)) return FL_ERR_INVALID;
    long n = fl_base64_decode(sealed + 3, strlen(sealed + 3), buf, sizeof buf);
    if (n < 12 + 16 + 1) return FL_ERR_INVALID;
    size_t clen = (size_t)n - 28;
    int len = 0, fin = 0;
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    bool ok = x && EVP_DecryptInit_ex(x, EVP_aes_256_gcm(), NULL, iam->key, buf) == 1 &&
              EVP_DecryptUpdate(x, (unsigned char *)out, &len, buf + 12, (int)clen) == 1 &&
              EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, 16, buf + 12 + clen) == 1 &&
              EVP_DecryptFinal_ex(x, (unsigned char *)out + len, &fin) == 1;
    EVP_CIPHER_CTX_free(x);
    OPENSSL_cleanse(buf, sizeof buf);
    if (!ok) return FL_ERR_AUTH;
    out[clen] = 0;
    return FL_OK;
}

static void random_str(char *out, size_t n, const char *alphabet)
{
    unsigned char r[128];
    size_t al = strlen(alphabet);
    if (RAND_bytes(r, (int)n) != 1) abort();
    for (size_t i = 0; i < n; i++) out[i] = alphabet[r[i] % al];
    out[n] = 0;
}

fl_err_t fl_iam_new_key(fl_iam_t *iam, const char *account, const char *kind, const char *name, fl_iam_key_t *k,
                        char *secret_out)
{
    memset(k, 0, sizeof *k);
    memcpy(k->akid, !strcmp(kind, "session") ? "FSIA" : "FKIA", 4);
    random_str(k->akid + 4, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567");
    random_str(secret_out, 40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
    fl_strlcpy(k->account, account, sizeof k->account);
    fl_strlcpy(k->kind, kind, sizeof k->kind);
    fl_strlcpy(k->name, name, sizeof k->name);
    fl_strlcpy(k->status, "Active", sizeof k->status);
    return fl_iam_seal(iam, secret_out, k->secret);
}

bool fl_iam_lookup(void *ud, const char *akid, char *secret_out)
{
    fl_iam_t *iam = ud;
    if (fl_keys_lookup((void *)iam->root, akid, secret_out)) return true;
    fl_iam_key_t k;
    if (fl_catalog_key_get(iam->cat, akid, &k) != FL_OK) return false;
    bool ok = !strcmp(k.status, "Active") && (!k.expires_ms || k.expires_ms > fl_now_ms()) &&
              fl_iam_unseal(iam, k.secret, secret_out) == FL_OK;
    free(k.session_policy);
    return ok;
}

fl_err_t fl_iam_identify(fl_iam_t *iam, const char *akid, const char *token, fl_iam_who_t *who, char *msg)
{
    memset(who, 0, sizeof *who);
    fl_strlcpy(who->akid, akid, sizeof who->akid);
    char tmp[128];
    if (fl_keys_lookup((void *)iam->root, akid, tmp)) {
        OPENSSL_cleanse(tmp, sizeof tmp);
        if (token && *token) {
            snprintf(msg, 128, "The security token included in the request is invalid.");
            return FL_ERR_AUTH;
        }
        fl_strlcpy(who->account, iam->account, sizeof who->account);
        fl_strlcpy(who->kind, "root", sizeof who->kind);
        snprintf(who->arn, sizeof who->arn, "arn:aws:iam::%s:root", iam->account);
        fl_strlcpy(who->principal_arn, who->arn, sizeof who->principal_arn);
        who->root = true;
        return FL_OK;
    }
    fl_iam_key_t k;
    if (fl_catalog_key_get(iam->cat, akid, &k) != FL_OK) {
        snprintf(msg, 128, "The security token included in the request is invalid.");
        return FL_ERR_AUTH;
    }
    fl_err_t err = FL_ERR_AUTH;
    int64_t now = fl_now_ms();
    if (strcmp(k.status, "Active")) {
        snprintf(msg, 128, "The access key is not active.");
        goto out;
    }
    if (k.expires_ms && k.expires_ms <= now) {
        snprintf(msg, 128, "The security token included in the request is expired");
        goto out;
    }
    bool session = !strcmp(k.kind, "session");
    if (session) {
        char h[65];
        if (!token || !*token) {
            snprintf(msg, 128, "Temporary credentials need their session token (x-amz-security-token).");
            goto out;
        }
        fl_sha256_hex(token, strlen(token), h);
        if (strlen(k.token_hash) != 64 || CRYPTO_memcmp(h, k.token_hash, 64) != 0) {
            snprintf(msg, 128, "The security token included in the request is invalid.");
            goto out;
        }
    } else if (token && *token) {
        snprintf(msg, 128, "The security token included in the request is invalid.");
        goto out;
    }
    fl_strlcpy(who->account, k.account, sizeof who->account);
    fl_strlcpy(who->kind, k.kind, sizeof who->kind);
    fl_strlcpy(who->name, k.name, sizeof who->name);
    fl_strlcpy(who->session_name, k.session_name, sizeof who->session_name);
    if (!strcmp(k.kind, "root")) {
        snprintf(who->arn, sizeof who->arn, "arn:aws:iam::%s:root", k.account);
        who->root = true;
        fl_strlcpy(who->principal_arn, who->arn, sizeof who->principal_arn);
    } else if (session) {
        snprintf(who->arn, sizeof who->arn, "arn:aws:sts::%s:assumed-role/%s/%s", k.account, k.name, k.session_name);
        snprintf(who->principal_arn, sizeof who->principal_arn, "arn:aws:iam::%s:role/%s", k.account, k.name);
        if (k.session_policy && *k.session_policy) who->session_policy = fl_strdup(k.session_policy);
    } else {
        snprintf(who->arn, sizeof who->arn, "arn:aws:iam::%s:user/%s", k.account, k.name);
        fl_strlcpy(who->principal_arn, who->arn, sizeof who->principal_arn);
    }
    if (now - k.last_used_ms > TOUCH_EVERY_MS) fl_catalog_key_touch(iam->cat, akid, now);
    err = FL_OK;
out:
    free(k.session_policy);
    return err;
}

void fl_iam_who_free(fl_iam_who_t *who)
{
    free(who->session_policy);
    who->session_policy = NULL;
}

/* Parses texts into policies (malformed stored ones are skipped, logged). */
static size_t parse_all(char **texts, size_t n, fl_policy_kind_t kind, fl_policy_t **out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        char err[256];
        if (!texts[i] || !*texts[i]) continue;
        fl_policy_t *p = fl_policy_parse(texts[i], strlen(texts[i]), kind, err, sizeof err);
        if (p) out[m++] = p;
        else fl_warn("a stored policy no longer parses (%s); it is ignored", err);
    }
    return m;
}

/* Every policy one decision needs, parsed: the caller's identity policies
 * (inline and attached), its session policy, the resource policies. */
typedef struct polset {
    fl_policy_t **id, **res, *sess;
    size_t nid, nres;
} polset_t;

static void polset_load(fl_iam_t *iam, const fl_iam_who_t *who, const char *const *resource_policies, size_t n,
                        polset_t *ps)
{
    char **names = NULL, **docs = NULL;
    size_t nd = 0;
    memset(ps, 0, sizeof *ps);
    if (!who->root)
        fl_catalog_iam_policy_list(iam->cat, who->account, !strcmp(who->kind, "session") ? "role" : who->kind,
                                   who->name, NULL, &names, &docs, &nd);
    /* attached managed policies: a name "arn:..." whose document is the policy row's */
    for (size_t i = 0; i < nd; i++) {
        if (strncmp(names[i], "arn:", 4)) continue;
        const char *slash = strrchr(names[i], '/');
        fl_iam_principal_t mp;
        free(docs[i]);
        docs[i] = NULL;
        if (slash && fl_catalog_principal_get(iam->cat, who->account, "policy", slash + 1, &mp) == FL_OK)
            docs[i] = mp.doc;
    }
    ps->id = fl_calloc(nd + 1, sizeof *ps->id);
    ps->res = fl_calloc(n + 1, sizeof *ps->res);
    ps->nid = parse_all(docs, nd, FL_POLICY_IDENTITY, ps->id);
    ps->nres = parse_all((char **)resource_policies, n, FL_POLICY_RESOURCE, ps->res);
    if (who->session_policy) {
        char err[256];
        ps->sess = fl_policy_parse(who->session_policy, strlen(who->session_policy), FL_POLICY_IDENTITY, err,
                                   sizeof err);
    }
    for (size_t i = 0; i < nd; i++) {
        free(names[i]);
        free(docs[i]);
    }
    free(names);
    free(docs);
}

static void polset_free(polset_t *ps)
{
    for (size_t i = 0; i < ps->nid; i++) fl_policy_free(ps->id[i]);
    for (size_t i = 0; i < ps->nres; i++) fl_policy_free(ps->res[i]);
    fl_policy_free(ps->sess);
    free(ps->id);
    free(ps->res);
}

static void polset_decide(const polset_t *ps, const fl_iam_who_t *who, fl_policy_ctx_t *ctx,
                          const char *resource_account, fl_authz_out_t *out, char *sid, size_t sidlen)
{
    ctx->principal_arn = who->principal_arn;
    ctx->principal_account = who->account;
    ctx->username = !strcmp(who->kind, "user") ? who->name : NULL;
    if (!ctx->now_ms) ctx->now_ms = fl_now_ms();
    fl_authz_in_t in = { .ctx = ctx, .principal_is_root = who->root, .resource_account = resource_account,
                         .identity = (const fl_policy_t *const *)ps->id, .nidentity = ps->nid,
                         .session = ps->sess, .resource = (const fl_policy_t *const *)ps->res,
                         .nresource = ps->nres };
    fl_authz_decide(&in, out);
    /* out->sid is borrowed from a policy the caller frees: keep a copy */
    fl_strlcpy(sid, out->sid ? out->sid : "", sidlen);
    out->sid = sid;
}

void fl_iam_authorize(fl_iam_t *iam, const fl_iam_who_t *who, fl_policy_ctx_t *ctx, const char *resource_account,
                      const char *const *resource_policies, size_t n, fl_authz_out_t *out)
{
    static __thread char sid[260];
    polset_t ps;
    polset_load(iam, who, resource_policies, n, &ps);
    polset_decide(&ps, who, ctx, resource_account, out, sid, sizeof sid);
    polset_free(&ps);
}

const char *fl_iam_source_ip(const char *peer, char out[64])
{
    if (!peer) return NULL;
    const char *p = peer;
    size_t n;
    if (*p == '[') {
        p++;
        n = strcspn(p, "]");
    } else {
        const char *colon = strrchr(p, ':');
        n = colon ? (size_t)(colon - p) : strlen(p);
    }
    if (n == 0 || n >= 64) return NULL;
    memcpy(out, p, n);
    out[n] = 0;
    return out;
}

void fl_iam_audit(const fl_iam_who_t *who, const char *decision, const char *action, const char *resource,
                  const fl_authz_out_t *o, const char *detail)
{
    json_t *j = json_pack("{s:I,s:s,s:s,s:s,s:s,s:s}", "time_ms", (json_int_t)fl_now_ms(), "decision", decision,
                          "principal", who ? who->arn : "anonymous", "account", who ? who->account : "",
                          "action", action ? action : "", "resource", resource ? resource : "");
    if (!j) return;
    if (who && who->akid[0]) json_object_set_new(j, "access_key", json_string(who->akid));
    if (o) {
        json_object_set_new(j, "reason", json_string(o->reason ? o->reason : ""));
        if (o->sid && o->sid[0]) json_object_set_new(j, "statement", json_string(o->sid));
        if (o->where && o->where[0]) json_object_set_new(j, "policy", json_string(o->where));
    }
    if (detail && *detail) json_object_set_new(j, "detail", json_string(detail));
    char *text = json_dumps(j, JSON_COMPACT);
    if (text) fl_info("audit %s", text);
    free(text);
    json_decref(j);
}

bool fl_iam_check(fl_iam_t *iam, const fl_iam_who_t *who, const char *const *actions, size_t nactions,
                  const fl_iam_target_t *tg, const char *source_ip, char *msg, size_t msglen)
{
    char res[FL_ARN_MAX + 16], sid[260], ip[64];
    char *pols[2] = { NULL, NULL };
    const char *owner = tg->owner;
    if (tg->table) fl_strlcpy(res, tg->table->arn, sizeof res);
    else if (tg->bucket && tg->table_level) snprintf(res, sizeof res, "%s/table/*", tg->bucket->arn);
    else if (tg->bucket) fl_strlcpy(res, tg->bucket->arn, sizeof res);
    else fl_strlcpy(res, tg->resource ? tg->resource : "*", sizeof res);
    if (tg->bucket) {
        owner = tg->bucket->owner;
        fl_catalog_doc_get(iam->cat, tg->bucket->arn, "policy", &pols[0]);
    }
    if (tg->table) fl_catalog_doc_get(iam->cat, tg->table->arn, "policy", &pols[1]);
    polset_t ps;
    polset_load(iam, who, (const char *const *)pols, 2, &ps);
    free(pols[0]);
    free(pols[1]);
    bool ok = true;
    for (size_t i = 0; ok && i < nactions; i++) {
        fl_policy_ctx_t ctx = { .action = actions[i], .resource = res, .source_ip = fl_iam_source_ip(source_ip, ip),
                                .ns = tg->table ? tg->table->ns : tg->ns,
                                .table_name = tg->table ? tg->table->name : tg->name };
        fl_authz_out_t o;
        polset_decide(&ps, who, &ctx, owner ? owner : iam->account, &o, sid, sizeof sid);
        if (o.allowed) continue;
        ok = false;
        fl_iam_audit(who, "deny", actions[i], res, &o, NULL);
        if (msg)
            snprintf(msg, msglen, "User: %s is not authorized to perform: %s on resource: %s (%s)", who->arn,
                     actions[i], res, o.reason);
    }
    polset_free(&ps);
    return ok;
}

bool fl_iam_may_assume(fl_iam_t *iam, const fl_iam_who_t *who, const fl_iam_principal_t *role, const char *source_ip,
                       char *msg, size_t msglen)
{
    char err[256], ip[64], sid[260];
    const char *action = "sts:AssumeRole";
    fl_policy_ctx_t ctx = { .action = action, .resource = role->arn, .source_ip = fl_iam_source_ip(source_ip, ip) };
    fl_authz_out_t o = { .allowed = false, .reason = "the role's trust policy does not allow it", .sid = "", .where = "" };
    fl_policy_t *trust = role->doc ? fl_policy_parse(role->doc, strlen(role->doc), FL_POLICY_TRUST, err, sizeof err)
                                   : NULL;
    polset_t ps;
    polset_load(iam, who, NULL, 0, &ps);
    ps.res = fl_realloc(ps.res, sizeof *ps.res);
    ps.res[0] = trust;
    ps.nres = trust ? 1 : 0;
    ctx.principal_arn = who->principal_arn;
    ctx.principal_account = who->account;
    ctx.username = !strcmp(who->kind, "user") ? who->name : NULL;
    ctx.now_ms = fl_now_ms();
    /* the trust policy must allow, whoever asks (the account root included) */
    const char *tsid = "";
    fl_policy_effect_t te = trust ? fl_policy_eval(trust, &ctx, &tsid) : FL_POLICY_NONE;
    if (te == FL_POLICY_ALLOW) polset_decide(&ps, who, &ctx, role->account, &o, sid, sizeof sid);
    else if (te == FL_POLICY_DENY) o.reason = "explicit deny", o.where = "resource";
    polset_free(&ps);
    if (o.allowed) return true;
    fl_iam_audit(who, "deny", action, role->arn, &o, NULL);
    if (msg)
        snprintf(msg, msglen, "User: %s is not authorized to perform: %s on resource: %s (%s)", who->arn, action,
                 role->arn, o.reason);
    return false;
}

fl_err_t fl_iam_new_session(fl_iam_t *iam, const fl_iam_principal_t *role, const char *session_name,
                            const char *session_policy, int64_t duration_s, fl_iam_key_t *k, char *secret_out,
                            char *token_out)
{
    fl_err_t e = fl_iam_new_key(iam, role->account, "session", role->name, k, secret_out);
    if (e) return e;
    random_str(token_out, 96, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
    fl_sha256_hex(token_out, strlen(token_out), k->token_hash);
    k->expires_ms = fl_now_ms() + duration_s * 1000;
    fl_strlcpy(k->session_name, session_name, sizeof k->session_name);
    k->session_policy = (char *)(session_policy ? session_policy : "");
    fl_catalog_key_prune(iam->cat, fl_now_ms());
    e = fl_catalog_key_create(iam->cat, k);
    k->session_policy = NULL;
    return e;
}
