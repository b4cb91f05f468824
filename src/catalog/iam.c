/* Identities and authorisation (see iam.h). The master key seals secrets with
 * AES-256-GCM: stored form "v1:" base64(12-byte IV | ciphertext | 16-byte tag). */
#include "catalog/iam.h"
#include "base/buf.h"
#include "base/checksum.h"
#include "base/limits.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include "net/metrics.h"
#include <jansson.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* the catalog document (arn, "master-key-check") naming the key that sealed its secrets */
#define FL_IAM_KEY_CHECK_ARN "floe:iam"

#define TOUCH_EVERY_MS 60000  /* last-used is written at most once a minute per key */

/* ---- the cache: direct-mapped slots of reference-counted immutable values,
 * valid while their generation is current and younger than
 * FL_IAM_CACHE_TTL_MS. fl_iam_changed (any write through this node's
 * catalog port) moves the generation on; the TTL bounds how long a change
 * made elsewhere (another node on the same store, floe admin) goes unseen. */
typedef struct cval {
    atomic_int ref;
    void (*dtor)(struct cval *);
} cval_t;

typedef struct cslot {
    char *key;
    uint64_t gen;
    int64_t at_ms;
    cval_t *v;
} cslot_t;

/* One vended credential kept to hand out again (fl_iam_vend): for the caller's
 * key, the table and the mode it was made for. Plain secrets, wiped on reuse
 * of the slot and at close. */
typedef struct vslot {
    char who[64];
    char what[FL_ARN_MAX + 2 * 256 + 8];
    fl_iam_vended_t v;
} vslot_t;

struct fl_iam {
    fl_catalog_t *cat;
    const fl_keys_t *root;
    char account[40];
    char root_arn[80];        /* arn:aws:iam::{account}:root */
    unsigned char key[32];
    pthread_rwlock_t mu;      /* the slots: read-mostly */
    atomic_uint_fast64_t gen;
    atomic_int writers;       /* writes in flight on this node: nothing loaded meanwhile is kept */
    fl_catalog_watch_t *watch; /* other nodes' IAM writes (PostgreSQL): each one empties the cache */
    atomic_uint_fast64_t hits, misses; /* cache_get's answers, for /metrics */
    atomic_uint_fast64_t sent, send_failed, received; /* IAM change signals, for /metrics */
    cslot_t slots[FL_IAM_CACHE_SLOTS];
    pthread_mutex_t vmu;      /* vended[] */
    vslot_t vended[FL_IAM_VENDED_CACHE];
};

static void cval_put(cval_t *v)
{
    if (v && atomic_fetch_sub(&v->ref, 1) == 1) v->dtor(v);
}

/* The cache's clock: coarse (a few ms; the TTL is FL_IAM_CACHE_TTL_MS) and
 * cheap, as it is read on every lookup. */
static int64_t cache_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Keys are ARNs and names of up to a few hundred bytes: hashed a word at a time. */
static cslot_t *slot_of(fl_iam_t *iam, const char *key)
{
    uint64_t h = 1469598103934665603ULL, w;
    size_t n = strlen(key), i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, key + i, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 32;
    }
    for (; i < n; i++) h = (h ^ (unsigned char)key[i]) * 1099511628211ULL;
    h ^= h >> 29;
    return &iam->slots[h % FL_IAM_CACHE_SLOTS];
}

/* Builds a cache key: tag and the parts joined by 0x1f, into out (cap bytes).
 * NULL when it does not fit (such a lookup is not cached). Plain copies: this
 * runs several times per request (no printf formatting). */
static const char *ckey(char *out, size_t cap, const char *tag, const char *const *parts, size_t n)
{
    size_t at = strlen(tag);
    if (at >= cap) return NULL;
    memcpy(out, tag, at);
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(parts[i]);
        if (at + 1 + l >= cap) return NULL;
        out[at++] = 0x1f;
        memcpy(out + at, parts[i], l);
        at += l;
    }
    out[at] = 0;
    return out;
}

/* A held reference (release with cval_put) to key's current value, or NULL
 * (also for a NULL key). */
static cval_t *cache_get(fl_iam_t *iam, const char *key)
{
    if (!key) return NULL;
    cslot_t *s = slot_of(iam, key);
    cval_t *v = NULL;
    int64_t now = cache_ms();
    pthread_rwlock_rdlock(&iam->mu);
    if (s->v && s->gen == atomic_load(&iam->gen) && now - s->at_ms < FL_IAM_CACHE_TTL_MS && !strcmp(s->key, key)) {
        v = s->v;
        atomic_fetch_add(&v->ref, 1);
    }
    pthread_rwlock_unlock(&iam->mu);
    atomic_fetch_add_explicit(v ? &iam->hits : &iam->misses, 1, memory_order_relaxed);
    return v;
}

/* Stores v (the cache takes its own reference) as loaded at generation gen,
 * unless a write began or ended since (or is in flight): it may be stale. */
static void cache_put(fl_iam_t *iam, const char *key, cval_t *v, uint64_t gen)
{
    if (!key || atomic_load(&iam->writers) > 0 || atomic_load(&iam->gen) != gen) return;
    cslot_t *s = slot_of(iam, key);
    char *k = fl_strdup(key);
    atomic_fetch_add(&v->ref, 1);
    pthread_rwlock_wrlock(&iam->mu);
    cval_t *old = s->v;
    char *oldk = s->key;
    s->key = k;
    s->v = v;
    s->gen = gen;
    s->at_ms = cache_ms();
    pthread_rwlock_unlock(&iam->mu);
    cval_put(old);
    free(oldk);
}

void fl_iam_changed(fl_iam_t *iam)
{
    if (iam) atomic_fetch_add(&iam->gen, 1);
}

uint64_t fl_iam_write_begin(fl_iam_t *iam)
{
    uint64_t mark = 0;
    if (!iam) return mark;
    atomic_fetch_add(&iam->writers, 1);
    atomic_fetch_add(&iam->gen, 1);
    (void)fl_catalog_write_count(iam->cat, &mark);
    return mark;
}

void fl_iam_write_end(fl_iam_t *iam, uint64_t mark)
{
    if (!iam) return;
    atomic_fetch_add(&iam->gen, 1);
    atomic_fetch_sub(&iam->writers, 1);
    /* the other nodes sharing the catalog drop their caches now, not at their TTL; only
     * when a write transaction began during the bracket (this request's, or a concurrent
     * one's: a spare signal is harmless), so that a request that wrote nothing, e.g.
     * GetCallerIdentity or PyIceberg's reportMetrics, does not empty every node's cache */
    uint64_t now = mark;
    if (fl_catalog_write_count(iam->cat, &now) == FL_OK && now == mark) return;
    fl_err_t e = fl_catalog_signal(iam->cat, "iam");
    atomic_fetch_add_explicit(e ? &iam->send_failed : &iam->sent, 1, memory_order_relaxed);
    if (e) fl_warn("iam: other nodes were not told of an IAM change (%s): they see it within %d ms",
                   fl_err_str(e), FL_IAM_CACHE_TTL_MS);
}

/* fl_catalog_watch's callback (the store's thread): another node changed IAM. */
static void changed_elsewhere(void *ud)
{
    fl_iam_t *iam = ud;
    atomic_fetch_add(&iam->gen, 1);
    atomic_fetch_add_explicit(&iam->received, 1, memory_order_relaxed);
}

/* /metrics: the cache's hits and misses (a miss reads the catalog store) and
 * the change signals between the nodes on one PostgreSQL catalog: sent by
 * fl_iam_write_end (or failed to send), and received (each one empties this
 * node's cache; the node's own signals come back to it too, and the listener
 * counts one at each (re)connection, when signals may have been lost). */
static fl_err_t render_metrics(void *arg, fl_buf_t *out)
{
    fl_iam_t *iam = arg;
    return fl_buf_printf(out, "# HELP floe_iam_cache_lookups_total IAM cache lookups (keys, policies, tables) by result.\n"
                              "# TYPE floe_iam_cache_lookups_total counter\n"
                              "floe_iam_cache_lookups_total{result=\"hit\"} %llu\n"
                              "floe_iam_cache_lookups_total{result=\"miss\"} %llu\n"
                              "# HELP floe_iam_signals_total IAM cache-invalidation signals between the nodes on one "
                              "catalog (PostgreSQL NOTIFY): sent after a write, sending failed, received (the cache emptied).\n"
                              "# TYPE floe_iam_signals_total counter\n"
                              "floe_iam_signals_total{event=\"sent\"} %llu\n"
                              "floe_iam_signals_total{event=\"failed\"} %llu\n"
                              "floe_iam_signals_total{event=\"received\"} %llu\n",
                         (unsigned long long)atomic_load(&iam->hits), (unsigned long long)atomic_load(&iam->misses),
                         (unsigned long long)atomic_load(&iam->sent), (unsigned long long)atomic_load(&iam->send_failed),
                         (unsigned long long)atomic_load(&iam->received));
}

static bool master_key(const char *path, unsigned char key[32])
{
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

/* Nodes sharing a catalog must share its master key, or a secret sealed on one
 * node does not open on another. The catalog keeps an HMAC of a constant under
 * the key that sealed its secrets (written by the first node); a node whose key
 * gives another value refuses to start instead of failing requests one by one.
 * Two nodes first started at once with different keys: the re-read after the
 * write makes the loser fail. */
static bool master_key_matches(fl_catalog_t *cat, const unsigned char key[32], const char *path)
{
    static const char what[] = "floe iam master key check v1";
    unsigned char mac[32];
    char hex[65], want[80], *have = NULL;
    fl_hmac_sha256(key, 32, what, sizeof what - 1, mac);
    fl_hex(mac, sizeof mac, hex);
    snprintf(want, sizeof want, "\"%s\"", hex);
    fl_err_t e = fl_catalog_doc_get(cat, FL_IAM_KEY_CHECK_ARN, "master-key-check", &have);
    if (e == FL_ERR_NOT_FOUND) {
        if (fl_catalog_doc_put(cat, FL_IAM_KEY_CHECK_ARN, "master-key-check", want)) return false;
        e = fl_catalog_doc_get(cat, FL_IAM_KEY_CHECK_ARN, "master-key-check", &have);
    }
    if (e) {
        fl_error("cannot read the catalog's IAM master key check: %s", fl_err_str(e));
        return false;
    }
    bool same = strcmp(have, want) == 0;
    free(have);
    if (!same)
        fl_error("%s is not the key that sealed this catalog's secrets: every node on one catalog needs the "
                 "same key (copy the first node's file, or give each --iam-master-key-file)", path);
    return same;
}

fl_iam_t *fl_iam_open(fl_catalog_t *cat, const char *key_path, const fl_keys_t *root, const char *account)
{
    fl_iam_t *iam = fl_calloc(1, sizeof *iam);
    iam->cat = cat;
    iam->root = root;
    pthread_rwlock_init(&iam->mu, NULL);
    pthread_mutex_init(&iam->vmu, NULL);
    fl_strlcpy(iam->account, account, sizeof iam->account);
    snprintf(iam->root_arn, sizeof iam->root_arn, "arn:aws:iam::%s:root", iam->account);
    if (!master_key(key_path, iam->key) || !master_key_matches(cat, iam->key, key_path)) {
        OPENSSL_cleanse(iam->key, sizeof iam->key);
        pthread_rwlock_destroy(&iam->mu);
        free(iam);
        return NULL;
    }
    if (fl_catalog_watch(cat, "iam", changed_elsewhere, iam, &iam->watch))
        fl_warn("iam: cannot watch other nodes' IAM changes: they reach this node within %d ms",
                FL_IAM_CACHE_TTL_MS);
    fl_metrics_add_source(render_metrics, iam);
    return iam;
}

void fl_iam_close(fl_iam_t *iam)
{
    if (!iam) return;
    fl_catalog_unwatch(iam->cat, iam->watch);
    fl_metrics_remove_source(render_metrics, iam);
    for (size_t i = 0; i < FL_IAM_CACHE_SLOTS; i++) {
        cval_put(iam->slots[i].v);
        free(iam->slots[i].key);
    }
    pthread_rwlock_destroy(&iam->mu);
    pthread_mutex_destroy(&iam->vmu);
    OPENSSL_cleanse(iam->vended, sizeof iam->vended);
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
    memcpy(k->akid, !strcmp(kind, "session") || !strcmp(kind, "vended") ? "FSIA" : "FKIA", 4);
    random_str(k->akid + 4, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567");
    random_str(secret_out, 40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
    fl_strlcpy(k->account, account, sizeof k->account);
    fl_strlcpy(k->kind, kind, sizeof k->kind);
    fl_strlcpy(k->name, name, sizeof k->name);
    fl_strlcpy(k->status, "Active", sizeof k->status);
    return fl_iam_seal(iam, secret_out, k->secret);
}

/* A stored access key with its secret opened, cached. */
typedef struct keyval {
    cval_t c;
    fl_iam_key_t k;
    char secret[128];
    char arn[FL_ARN_MAX], principal_arn[FL_ARN_MAX]; /* fl_iam_who_t's, formatted once */
    atomic_llong touched;   /* last time the store's last-used was written */
} keyval_t;

static void keyval_dtor(cval_t *c)
{
    keyval_t *v = (keyval_t *)c;
    OPENSSL_cleanse(v->secret, sizeof v->secret);
    free(v->k.session_policy);
    free(v);
}

/* The key akid (a held reference), or NULL when unknown or unreadable. */
static keyval_t *key_load(fl_iam_t *iam, const char *akid)
{
    char ckb[200];
    const char *ck = ckey(ckb, sizeof ckb, "key", &akid, 1);
    cval_t *c = cache_get(iam, ck);
    if (c) return (keyval_t *)c;
    uint64_t gen = atomic_load(&iam->gen);
    keyval_t *v = fl_calloc(1, sizeof *v);
    v->c.dtor = keyval_dtor;
    atomic_init(&v->c.ref, 1);
    if (fl_catalog_key_get(iam->cat, akid, &v->k) != FL_OK) {
        free(v);
        return NULL;
    }
    if (fl_iam_unseal(iam, v->k.secret, v->secret) != FL_OK) {
        keyval_dtor(&v->c);
        return NULL;
    }
    const fl_iam_key_t *k = &v->k;
    if (!strcmp(k->kind, "root")) {
        snprintf(v->arn, sizeof v->arn, "arn:aws:iam::%s:root", k->account);
        fl_strlcpy(v->principal_arn, v->arn, sizeof v->principal_arn);
    } else if (!strcmp(k->kind, "session")) {
        snprintf(v->arn, sizeof v->arn, "arn:aws:sts::%s:assumed-role/%s/%s", k->account, k->name, k->session_name);
        snprintf(v->principal_arn, sizeof v->principal_arn, "arn:aws:iam::%s:role/%s", k->account, k->name);
    } else if (!strcmp(k->kind, "vended")) { /* name: "root/", "user/NAME" or "role/NAME" */
        const char *n = strchr(k->name, '/') ? strchr(k->name, '/') + 1 : "";
        if (!strncmp(k->name, "role/", 5)) {
            snprintf(v->arn, sizeof v->arn, "arn:aws:sts::%s:assumed-role/%s/%s", k->account, n, k->session_name);
            snprintf(v->principal_arn, sizeof v->principal_arn, "arn:aws:iam::%s:role/%s", k->account, n);
        } else {
            if (!strncmp(k->name, "user/", 5))
                snprintf(v->arn, sizeof v->arn, "arn:aws:iam::%s:user/%s", k->account, n);
            else
                snprintf(v->arn, sizeof v->arn, "arn:aws:iam::%s:root", k->account);
            fl_strlcpy(v->principal_arn, v->arn, sizeof v->principal_arn);
        }
    } else {
        snprintf(v->arn, sizeof v->arn, "arn:aws:iam::%s:user/%s", k->account, k->name);
        fl_strlcpy(v->principal_arn, v->arn, sizeof v->principal_arn);
    }
    atomic_init(&v->touched, v->k.last_used_ms);
    cache_put(iam, ck, &v->c, gen);
    return v;
}

bool fl_iam_lookup(void *ud, const char *akid, char *secret_out)
{
    fl_iam_t *iam = ud;
    if (fl_keys_lookup((void *)iam->root, akid, secret_out)) return true;
    keyval_t *v = key_load(iam, akid);
    if (!v) return false;
    /* an expired session still verifies, so that fl_iam_identify (which every
     * caller of this lookup runs next) answers ExpiredToken, not an unknown key */
    bool ok = !strcmp(v->k.status, "Active");
    if (ok) memcpy(secret_out, v->secret, strlen(v->secret) + 1);
    cval_put(&v->c);
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
        fl_strlcpy(who->arn, iam->root_arn, sizeof who->arn);
        fl_strlcpy(who->principal_arn, who->arn, sizeof who->principal_arn);
        who->root = true;
        return FL_OK;
    }
    keyval_t *kv = key_load(iam, akid);
    if (!kv) {
        snprintf(msg, 128, "The security token included in the request is invalid.");
        return FL_ERR_AUTH;
    }
    const fl_iam_key_t *k = &kv->k; /* kv's: held until out */
    fl_err_t err = FL_ERR_AUTH;
    int64_t now = fl_now_ms();
    if (strcmp(k->status, "Active")) {
        snprintf(msg, 128, "The access key is not active.");
        goto out;
    }
    if (k->expires_ms && k->expires_ms <= now) {
        snprintf(msg, 128, "The security token included in the request is expired");
        goto out;
    }
    bool vended = !strcmp(k->kind, "vended");
    bool session = vended || !strcmp(k->kind, "session");
    if (session) {
        char h[65];
        if (!token || !*token) {
            snprintf(msg, 128, "Temporary credentials need their session token (x-amz-security-token or x-oss-security-token).");
            goto out;
        }
        fl_sha256_hex(token, strlen(token), h);
        if (strlen(k->token_hash) != 64 || CRYPTO_memcmp(h, k->token_hash, 64) != 0) {
            snprintf(msg, 128, "The security token included in the request is invalid.");
            goto out;
        }
    } else if (token && *token) {
        snprintf(msg, 128, "The security token included in the request is invalid.");
        goto out;
    }
    fl_strlcpy(who->account, k->account, sizeof who->account);
    fl_strlcpy(who->kind, k->kind, sizeof who->kind);
    fl_strlcpy(who->name, k->name, sizeof who->name);
    if (vended) {
        const char *slash = strchr(k->name, '/');
        size_t kl = slash ? (size_t)(slash - k->name) : 0;
        if (kl >= sizeof who->vended_for || !slash) kl = 0;
        memcpy(who->vended_for, k->name, kl);
        who->vended_for[kl] = 0;
        fl_strlcpy(who->name, slash ? slash + 1 : "", sizeof who->name);
        if (!kl) { /* not a name this file writes: deny everything */
            snprintf(msg, 128, "The security token included in the request is invalid.");
            goto out;
        }
    }
    fl_strlcpy(who->session_name, k->session_name, sizeof who->session_name);
    fl_strlcpy(who->arn, kv->arn, sizeof who->arn);
    fl_strlcpy(who->principal_arn, kv->principal_arn, sizeof who->principal_arn);
    who->root = !strcmp(k->kind, "root");
    who->expires_ms = k->expires_ms;
    if (session && k->session_policy && *k->session_policy) who->session_policy = fl_strdup(k->session_policy);
    long long last = atomic_load(&kv->touched);
    if (now - last > TOUCH_EVERY_MS && atomic_compare_exchange_strong(&kv->touched, &last, now))
        fl_catalog_key_touch(iam->cat, akid, now);
    err = FL_OK;
out:
    cval_put(&kv->c);
    return err;
}

char *fl_iam_request_token(const fl_http_req_t *req, const fl_query_t *q)
{
    static const char *const headers[] = { "x-amz-security-token", "x-oss-security-token", "security-token" };
    static const char *const params[] = { "X-Amz-Security-Token", "x-oss-security-token", "security-token" };
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        const fl_http_header_t *h = fl_http_header(req, headers[i]);
        if (h) return fl_strndup(h->value, h->value_len);
    }
    for (size_t i = 0; q && i < sizeof params / sizeof params[0]; i++) {
        const char *v = fl_query_get(q, params[i]);
        if (v) return fl_strdup(v);
    }
    return NULL;
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

/* A parsed, immutable set of policies, cached, with a memo of which of them
 * can apply to an action (so a decision reads only those: its cost does not
 * grow with policies about other actions). */
#define MEMO_ACTIONS 64
typedef struct memo {
    char action[96];
    unsigned short *idx;
    size_t n;
} memo_t;

typedef struct polval {
    cval_t c;
    fl_policy_t **p;
    size_t n;
    pthread_rwlock_t mu;     /* the memo */
    memo_t memo[MEMO_ACTIONS];
    size_t nmemo;
} polval_t;

static void polval_dtor(cval_t *c)
{
    polval_t *v = (polval_t *)c;
    for (size_t i = 0; i < v->n; i++) fl_policy_free(v->p[i]);
    for (size_t i = 0; i < v->nmemo; i++) free(v->memo[i].idx);
    pthread_rwlock_destroy(&v->mu);
    free(v->p);
    free(v);
}

/* v's policies that can apply to action, into out (cap entries); returns how
 * many, or SIZE_MAX when they do not fit (then use them all). */
static size_t polval_for(polval_t *v, const char *action, const fl_policy_t **out, size_t cap)
{
    size_t n = SIZE_MAX;
    memo_t *m = NULL;
    pthread_rwlock_rdlock(&v->mu); /* the memo is read-mostly: look under the shared lock first */
    for (size_t i = 0; i < v->nmemo && !m; i++)
        if (!strcmp(v->memo[i].action, action)) m = &v->memo[i];
    if (m && m->n <= cap) {
        for (size_t i = 0; i < m->n; i++) out[i] = v->p[m->idx[i]];
        n = m->n;
    }
    pthread_rwlock_unlock(&v->mu);
    if (m) return n;
    pthread_rwlock_wrlock(&v->mu);
    for (size_t i = 0; i < v->nmemo && !m; i++) /* another thread may have added it meanwhile */
        if (!strcmp(v->memo[i].action, action)) m = &v->memo[i];
    if (!m && v->nmemo < MEMO_ACTIONS && strlen(action) < sizeof m->action && v->n < 65536) {
        m = &v->memo[v->nmemo++];
        fl_strlcpy(m->action, action, sizeof m->action);
        m->idx = fl_calloc(v->n + 1, sizeof *m->idx);
        for (size_t i = 0; i < v->n; i++)
            if (fl_policy_mentions(v->p[i], action)) m->idx[m->n++] = (unsigned short)i;
    }
    if (m && m->n <= cap) {
        for (size_t i = 0; i < m->n; i++) out[i] = v->p[m->idx[i]];
        n = m->n;
    }
    pthread_rwlock_unlock(&v->mu);
    return n;
}

static polval_t *polval_new(fl_policy_t **p, size_t n)
{
    polval_t *v = fl_calloc(1, sizeof *v);
    v->c.dtor = polval_dtor;
    atomic_init(&v->c.ref, 1);
    pthread_rwlock_init(&v->mu, NULL);
    v->p = p;
    v->n = n;
    return v;
}

/* The identity policies (inline and attached) of (account, kind, name). */
static polval_t *identity_set(fl_iam_t *iam, const char *account, const char *kind, const char *name)
{
    char ckb[400];
    const char *parts[3] = { account, kind, name };
    const char *ck = ckey(ckb, sizeof ckb, "id", parts, 3);
    cval_t *c = cache_get(iam, ck);
    if (c) return (polval_t *)c;
    uint64_t gen = atomic_load(&iam->gen);
    char **names = NULL, **docs = NULL;
    size_t nd = 0;
    fl_catalog_iam_policy_list(iam->cat, account, kind, name, NULL, &names, &docs, &nd);
    /* attached managed policies: a name "arn:..." whose document is the policy row's */
    for (size_t i = 0; i < nd; i++) {
        if (strncmp(names[i], "arn:", 4)) continue;
        const char *slash = strrchr(names[i], '/');
        fl_iam_principal_t mp;
        free(docs[i]);
        docs[i] = NULL;
        if (slash && fl_catalog_principal_get(iam->cat, account, "policy", slash + 1, &mp) == FL_OK) docs[i] = mp.doc;
    }
    fl_policy_t **p = fl_calloc(nd + 1, sizeof *p);
    polval_t *v = polval_new(p, parse_all(docs, nd, FL_POLICY_IDENTITY, p));
    for (size_t i = 0; i < nd; i++) {
        free(names[i]);
        free(docs[i]);
    }
    free(names);
    free(docs);
    cache_put(iam, ck, &v->c, gen);
    return v;
}

/* The resource policy attached to arn (none: an empty set). */
static polval_t *resource_set(fl_iam_t *iam, const char *arn)
{
    char ckb[FL_ARN_MAX + 8];
    const char *ck = ckey(ckb, sizeof ckb, "res", &arn, 1);
    cval_t *c = cache_get(iam, ck);
    if (c) return (polval_t *)c;
    uint64_t gen = atomic_load(&iam->gen);
    char *doc = NULL;
    fl_catalog_doc_get(iam->cat, arn, "policy", &doc);
    fl_policy_t **p = fl_calloc(2, sizeof *p);
    polval_t *v = polval_new(p, parse_all(&doc, 1, FL_POLICY_RESOURCE, p));
    free(doc);
    cache_put(iam, ck, &v->c, gen);
    return v;
}

/* A session's policy. One that no longer parses denies everything (fails closed). */
static polval_t *session_set(fl_iam_t *iam, const fl_iam_who_t *who)
{
    static const char deny_all[] =
        "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Deny\",\"Action\":\"*\",\"Resource\":\"*\"}]}";
    char ckb[200], err[256];
    const char *akid = who->akid;
    const char *ck = ckey(ckb, sizeof ckb, "sess", &akid, 1);
    cval_t *c = cache_get(iam, ck);
    if (c) return (polval_t *)c;
    uint64_t gen = atomic_load(&iam->gen);
    fl_policy_t **p = fl_calloc(1, sizeof *p);
    p[0] = fl_policy_parse(who->session_policy, strlen(who->session_policy), FL_POLICY_IDENTITY, err, sizeof err);
    if (!p[0]) {
        fl_warn("session %s: its policy no longer parses (%s); it denies everything", who->akid, err);
        p[0] = fl_policy_parse(deny_all, sizeof deny_all - 1, FL_POLICY_IDENTITY, err, sizeof err);
    }
    polval_t *v = polval_new(p, p[0] ? 1 : 0);
    cache_put(iam, ck, &v->c, gen);
    return v;
}

/* Every policy one decision needs: the caller's identity policies, its
 * session policy, up to 3 resource policies (held references). */
typedef struct polset {
    polval_t *id, *sess, *res[3];
    size_t nres;
    const fl_policy_t *resp[8];
    size_t nresp;
} polset_t;

static void polset_load(fl_iam_t *iam, const fl_iam_who_t *who, const char *const *resource_arns, size_t n,
                        polset_t *ps)
{
    memset(ps, 0, sizeof *ps);
    const char *kind = who->vended_for[0] ? who->vended_for : !strcmp(who->kind, "session") ? "role" : who->kind;
    if (!who->root && strcmp(kind, "root")) ps->id = identity_set(iam, who->account, kind, who->name);
    if (who->session_policy) ps->sess = session_set(iam, who);
    for (size_t i = 0; i < n && ps->nres < 3; i++)
        if (resource_arns[i] && resource_arns[i][0]) ps->res[ps->nres++] = resource_set(iam, resource_arns[i]);
    for (size_t i = 0; i < ps->nres; i++)
        for (size_t j = 0; j < ps->res[i]->n && ps->nresp < 7; j++) ps->resp[ps->nresp++] = ps->res[i]->p[j];
}

static void polset_free(polset_t *ps)
{
    cval_put(ps->id ? &ps->id->c : NULL);
    cval_put(ps->sess ? &ps->sess->c : NULL);
    for (size_t i = 0; i < ps->nres; i++) cval_put(&ps->res[i]->c);
}

static void polset_decide(const polset_t *ps, const fl_iam_who_t *who, fl_policy_ctx_t *ctx,
                          const char *resource_account, bool deny_binds_root, fl_authz_out_t *out, char *sid,
                          size_t sidlen)
{
    ctx->principal_arn = who->principal_arn;
    ctx->principal_account = who->account;
    ctx->username = !strcmp(who->kind, "user") || !strcmp(who->vended_for, "user") ? who->name : NULL;
    if (!ctx->now_ms) ctx->now_ms = fl_now_ms();
    const fl_policy_t *idp[64];
    const fl_policy_t *const *ids = ps->id ? (const fl_policy_t *const *)ps->id->p : NULL;
    size_t nids = ps->id ? ps->id->n : 0;
    if (ps->id && ctx->action) {
        size_t m = polval_for(ps->id, ctx->action, idp, 64);
        if (m != SIZE_MAX) ids = idp, nids = m;
    }
    /* vended for a root: all the root may, within the key's session policy */
    bool root = who->root || !strcmp(who->vended_for, "root");
    fl_authz_in_t in = { .ctx = ctx, .principal_is_root = root, .resource_account = resource_account,
                         .identity = ids, .nidentity = nids,
                         .session = ps->sess && ps->sess->n ? ps->sess->p[0] : NULL,
                         .resource = ps->resp, .nresource = ps->nresp,
                         .root_bound_by_resource_deny = deny_binds_root };
    fl_authz_decide(&in, out);
    /* out->sid is borrowed from a policy the caller releases: keep a copy */
    fl_strlcpy(sid, out->sid ? out->sid : "", sidlen);
    out->sid = sid;
}

void fl_iam_authorize(fl_iam_t *iam, const fl_iam_who_t *who, fl_policy_ctx_t *ctx, const char *resource_account,
                      const char *const *resource_policies, size_t n, fl_authz_out_t *out)
{
    static __thread char sid[260];
    polset_t ps;
    polset_load(iam, who, NULL, 0, &ps);
    /* resource policies given as texts (not cached) */
    fl_policy_t **extra = fl_calloc(n + 1, sizeof *extra);
    size_t ne = parse_all((char **)resource_policies, n, FL_POLICY_RESOURCE, extra);
    for (size_t i = 0; i < ne && ps.nresp < 8; i++) ps.resp[ps.nresp++] = extra[i];
    polset_decide(&ps, who, ctx, resource_account, false, out, sid, sizeof sid);
    polset_free(&ps);
    for (size_t i = 0; i < ne; i++) fl_policy_free(extra[i]);
    free(extra);
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

static bool check(fl_iam_t *iam, const fl_iam_who_t *who, const char *const *actions, size_t nactions,
                  const fl_iam_target_t *tg, const char *source_ip, bool quiet, char *msg, size_t msglen)
{
    char res[FL_ARN_MAX + 16], sid[260], ip[64];
    const char *arns[2] = { NULL, NULL };
    const char *owner = tg->owner;
    if (tg->table) fl_strlcpy(res, tg->table->arn, sizeof res);
    else if (tg->bucket && tg->table_level) snprintf(res, sizeof res, "%s/table/*", tg->bucket->arn);
    else if (tg->bucket) fl_strlcpy(res, tg->bucket->arn, sizeof res);
    else fl_strlcpy(res, tg->resource ? tg->resource : "*", sizeof res);
    if (tg->bucket) {
        owner = tg->bucket->owner;
        arns[0] = tg->bucket->arn;
    }
    else if (tg->policy_arn) arns[0] = tg->policy_arn;
    if (tg->table) arns[1] = tg->table->arn;
    polset_t ps;
    polset_load(iam, who, arns, 2, &ps);
    bool ok = true;
    int64_t now = fl_now_ms();
    for (size_t i = 0; ok && i < nactions; i++) {
        fl_policy_ctx_t ctx = { .action = actions[i], .resource = res, .source_ip = fl_iam_source_ip(source_ip, ip),
                                .now_ms = now,
                                .ns = tg->table ? tg->table->ns : tg->ns,
                                .table_name = tg->table ? tg->table->name : tg->name };
        fl_authz_out_t o;
        polset_decide(&ps, who, &ctx, owner ? owner : iam->account, tg->deny_binds_root, &o, sid, sizeof sid);
        if (o.allowed) continue;
        ok = false;
        if (quiet) break;
        fl_iam_audit(who, "deny", actions[i], res, &o, NULL);
        if (msg)
            snprintf(msg, msglen, "User: %s is not authorized to perform: %s on resource: %s (%s)", who->arn,
                     actions[i], res, o.reason);
    }
    polset_free(&ps);
    return ok;
}

bool fl_iam_check(fl_iam_t *iam, const fl_iam_who_t *who, const char *const *actions, size_t nactions,
                  const fl_iam_target_t *tg, const char *source_ip, char *msg, size_t msglen)
{
    return check(iam, who, actions, nactions, tg, source_ip, false, msg, msglen);
}

bool fl_iam_allows(fl_iam_t *iam, const fl_iam_who_t *who, const char *action, const fl_iam_target_t *tg,
                   const char *source_ip)
{
    return check(iam, who, &action, 1, tg, source_ip, true, NULL, 0);
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
    if (trust) ps.resp[ps.nresp++] = trust;
    ctx.principal_arn = who->principal_arn;
    ctx.principal_account = who->account;
    ctx.username = !strcmp(who->kind, "user") ? who->name : NULL;
    ctx.now_ms = fl_now_ms();
    /* the trust policy must allow, whoever asks (the account root included) */
    const char *tsid = "";
    fl_policy_effect_t te = trust ? fl_policy_eval(trust, &ctx, &tsid) : FL_POLICY_NONE;
    if (te == FL_POLICY_ALLOW) polset_decide(&ps, who, &ctx, role->account, false, &o, sid, sizeof sid);
    else if (te == FL_POLICY_DENY) o.reason = "explicit deny", o.where = "resource";
    polset_free(&ps);
    fl_policy_free(trust);
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

/* The session policy of vended credentials: s3tables:GetTableData
 * [+PutTableData] on one table, or on a bucket's tables named ns.name. */
static char *vended_policy(const char *table_arn, const char *bucket_arn, const char *ns, const char *name,
                           bool write)
{
    json_t *acts = json_pack(write ? "[s,s]" : "[s]", "s3tables:GetTableData", "s3tables:PutTableData");
    json_t *st = json_pack("{s:s,s:s,s:o}", "Sid", "VendedTableData", "Effect", "Allow", "Action", acts);
    if (table_arn) {
        json_object_set_new(st, "Resource", json_string(table_arn));
    } else {
        char res[FL_ARN_MAX + 16];
        snprintf(res, sizeof res, "%s/table/*", bucket_arn);
        json_object_set_new(st, "Resource", json_string(res));
        json_object_set_new(st, "Condition", json_pack("{s:{s:s,s:s}}", "StringEquals", "s3tables:namespace", ns,
                                                       "s3tables:tableName", name));
    }
    json_t *doc = json_pack("{s:s,s:[o]}", "Version", "2012-10-17", "Statement", st);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    return text;
}

fl_err_t fl_iam_vend(fl_iam_t *iam, const fl_iam_who_t *who, const char *table_arn, const char *bucket_arn,
                     const char *ns, const char *name, bool write, fl_iam_vended_t *out)
{
    char what[sizeof ((vslot_t *)0)->what], owner[160];
    fl_iam_key_t k;
    char *pol = NULL;
    fl_err_t e = FL_ERR_INVALID;
    memset(out, 0, sizeof *out);
    if (!who || who->vended_for[0] || (!table_arn && (!bucket_arn || !ns || !name))) return FL_ERR_INVALID;
    if (table_arn) snprintf(what, sizeof what, "%c %s", write ? 'w' : 'r', table_arn);
    else snprintf(what, sizeof what, "%c %s/%s.%s", write ? 'w' : 'r', bucket_arn, ns, name);
    uint64_t h = 1469598103934665603ull;
    for (const char *p = who->akid; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    for (const char *p = what; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    vslot_t *slot = &iam->vended[h % FL_IAM_VENDED_CACHE];
    int64_t now = fl_now_ms();
    pthread_mutex_lock(&iam->vmu);
    bool hit = !strcmp(slot->who, who->akid) && !strcmp(slot->what, what) &&
               slot->v.expires_ms - now > FL_IAM_VENDED_TTL_S * 1000 / 2;
    if (hit) *out = slot->v;
    pthread_mutex_unlock(&iam->vmu);
    if (hit) return FL_OK;

    if (who->root) snprintf(owner, sizeof owner, "root/");
    else if (!strcmp(who->kind, "session")) snprintf(owner, sizeof owner, "role/%s", who->name);
    else if (!strcmp(who->kind, "user")) snprintf(owner, sizeof owner, "user/%s", who->name);
    else return FL_ERR_INVALID;
    if (strlen(owner) >= sizeof k.name) return FL_ERR_INVALID;
    if (!(pol = vended_policy(table_arn, bucket_arn, ns, name, write))) return FL_ERR_INTERNAL;
    if ((e = fl_iam_new_key(iam, who->account, "vended", owner, &k, out->secret))) goto out;
    random_str(out->token, 96, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
    fl_sha256_hex(out->token, strlen(out->token), k.token_hash);
    k.expires_ms = now + (int64_t)FL_IAM_VENDED_TTL_S * 1000;
    if (who->expires_ms && who->expires_ms < k.expires_ms) k.expires_ms = who->expires_ms;
    fl_strlcpy(k.session_name, "iceberg-vended", sizeof k.session_name);
    k.session_policy = pol;
    fl_catalog_key_prune(iam->cat, now);
    e = fl_catalog_key_create(iam->cat, &k);
    k.session_policy = NULL;
    if (e) goto out;
    fl_strlcpy(out->akid, k.akid, sizeof out->akid);
    out->expires_ms = k.expires_ms;
    pthread_mutex_lock(&iam->vmu);
    OPENSSL_cleanse(&slot->v, sizeof slot->v);
    fl_strlcpy(slot->who, who->akid, sizeof slot->who);
    fl_strlcpy(slot->what, what, sizeof slot->what);
    slot->v = *out;
    pthread_mutex_unlock(&iam->vmu);
out:
    free(pol);
    if (e) OPENSSL_cleanse(out, sizeof *out);
    return e;
}

fl_err_t fl_iam_account_create(fl_iam_t *iam, const char *id, char *id_out, fl_iam_key_t *k, char *secret_out)
{
    char gen[16];
    if (!id) {
        unsigned char r[12];
        if (RAND_bytes(r, sizeof r) != 1) return FL_ERR_INTERNAL;
        for (int i = 0; i < 12; i++) gen[i] = (char)('0' + r[i] % 10);
        gen[0] = (char)('1' + r[0] % 9);
        gen[12] = 0;
        id = gen;
    }
    if (strlen(id) != 12 || strspn(id, "0123456789") != 12 || !strcmp(id, iam->account)) return FL_ERR_INVALID;
    fl_iam_principal_t p = { 0 };
    fl_strlcpy(p.kind, "account", sizeof p.kind);
    fl_strlcpy(p.name, id, sizeof p.name);
    snprintf(p.arn, sizeof p.arn, "arn:aws:iam::%s:root", id);
    fl_strlcpy(p.id, id, sizeof p.id);
    p.doc = "";
    fl_err_t e = fl_catalog_principal_create(iam->cat, &p);
    if (e) return e;
    fl_strlcpy(id_out, id, 16);
    e = fl_iam_new_key(iam, id, "root", "", k, secret_out);
    if (!e) e = fl_catalog_key_create(iam->cat, k);
    return e;
}

fl_err_t fl_iam_account_list(fl_iam_t *iam, fl_iam_principal_t **out, size_t *n)
{
    return fl_catalog_principal_list(iam->cat, "", "account", out, n);
}

bool fl_iam_account_exists(fl_iam_t *iam, const char *account)
{
    if (!strcmp(account, iam->account)) return true;
    fl_iam_principal_t p;
    if (fl_catalog_principal_get(iam->cat, "", "account", account, &p) != FL_OK) return false;
    free(p.doc);
    return true;
}

/* A table (and its bucket) found by a lookup, cached. */
typedef struct tabval {
    cval_t c;
    fl_table_t t;
    fl_tbucket_t b;
} tabval_t;

static void tabval_dtor(cval_t *c) { free(c); }

bool fl_iam_warehouse(fl_iam_t *iam, const char *wb, fl_table_t *t, fl_tbucket_t *b)
{
    char ckb[100], wh[80];
    const char *ck = ckey(ckb, sizeof ckb, "wh", &wb, 1);
    tabval_t *v = (tabval_t *)cache_get(iam, ck);
    if (!v) {
        uint64_t gen = atomic_load(&iam->gen);
        v = fl_calloc(1, sizeof *v);
        v->c.dtor = tabval_dtor;
        atomic_init(&v->c.ref, 1);
        snprintf(wh, sizeof wh, "s3://%s", wb);
        if (fl_catalog_table_get_by_warehouse(iam->cat, wh, &v->t) != FL_OK ||
            fl_catalog_bucket_get(iam->cat, v->t.bucket, &v->b) != FL_OK) {
            free(v);
            return false; /* not cached: a name anyone signed could make up */
        }
        cache_put(iam, ck, &v->c, gen);
    }
    *t = v->t;
    *b = v->b;
    cval_put(&v->c);
    return true;
}

bool fl_iam_table(fl_iam_t *iam, const char *bucket, const char *ns, const char *name, fl_table_t *t)
{
    char ckb[3 * FL_NAME_MAX + 80];
    const char *parts[3] = { bucket, ns, name };
    const char *ck = ckey(ckb, sizeof ckb, "tb", parts, 3);
    tabval_t *v = (tabval_t *)cache_get(iam, ck);
    if (!v) {
        uint64_t gen = atomic_load(&iam->gen);
        v = fl_calloc(1, sizeof *v);
        v->c.dtor = tabval_dtor;
        atomic_init(&v->c.ref, 1);
        if (fl_catalog_table_get(iam->cat, bucket, ns, name, &v->t) != FL_OK) {
            free(v);
            return false;
        }
        cache_put(iam, ck, &v->c, gen);
    }
    *t = v->t;
    cval_put(&v->c);
    return true;
}
