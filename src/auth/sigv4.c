/* AWS Signature Version 4.
 *
 * One canonicalisation path serves the verifier and the signer:
 *   canonical URI    s3: decode the raw path, re-encode every byte but
 *                    A-Z a-z 0-9 - _ . ~ / (no normalisation, '//' kept);
 *                    other services: normalise the raw path (dot segments,
 *                    duplicate slashes, as botocore) and encode it again, so
 *                    an existing %XX becomes %25XX;
 *   canonical query  split on '&', decode ('+' is a space, as MinIO), encode
 *                    strictly, sort by name then value, no '=' means empty;
 *   canonical headers  in SignedHeaders order, values trimmed with inner
 *                    whitespace runs collapsed, repeats joined with ','.
 * Verification parses either the Authorization header or the presigned query
 * into one shape, checks scope, time and key, then compares signatures with
 * CRYPTO_memcmp. Derived signing keys are cached per (akid, date, region,
 * service, secret) in a small direct-mapped, mutex-protected table.
 *
 * The aws-chunked decoder is a push state machine over arbitrary splits of the
 * body. Payload runs are handed to the caller as slices of the input (no
 * copies), hashed per chunk for the signature chain and into the trailer
 * checksum. Framing lines are capped (FL_HTTP_MAX_CHUNK_LINE, trailer total
 * FL_HTTP_MAX_TRAILER_BYTES) and chunk sizes by FL_AWSCHUNK_MAX_CHUNK. */
#include "auth/sigv4.h"
#include "base/limits.h"
#include "base/mem.h"
#include "base/time.h"
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALGO "AWS4-HMAC-SHA256"
#define TERM "aws4_request"
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
#define STREAM_SIGNED "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
#define STREAM_SIGNED_TR "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
#define STREAM_UNSIGNED_TR "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
#define OSS_ALGO "OSS4-HMAC-SHA256"
#define OSS_TERM "aliyun_v4_request"
#define OSS_KEY_PREFIX "aliyun_v4"

/* ---- small helpers ---- */

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool is_hex64(const char *p, size_t n)
{
    if (n != 64) return false;
    for (size_t i = 0; i < n; i++)
        if (hexval((unsigned char)p[i]) < 0) return false;
    return true;
}

static void lower_hex(const char *p, char out[65])
{
    for (int i = 0; i < 64; i++) {
        char c = p[i];
        out[i] = (c >= 'A' && c <= 'F') ? (char)(c + 32) : c;
    }
    out[64] = 0;
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

static char lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c; }

static bool ieq(const char *a, size_t an, const char *b, size_t bn)
{
    if (an != bn) return false;
    for (size_t i = 0; i < an; i++)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

static bool slice_is(fl_slice_t s, const char *c) { return fl_slice_eq(s, c); }

static void copy_slice(char *dst, size_t dstsz, fl_slice_t s)
{
    size_t n = s.len < dstsz - 1 ? s.len : dstsz - 1;
    memcpy(dst, s.ptr, n);
    dst[n] = 0;
}

/* First header named lname (case-insensitive), {NULL,0} if absent. */
static fl_slice_t hdr_get(const fl_http_header_t *h, size_t nh, const char *lname)
{
    size_t ln = strlen(lname);
    for (size_t i = 0; i < nh; i++)
        if (ieq(h[i].name, h[i].name_len, lname, ln)) return fl_slice(h[i].value, h[i].value_len);
    return (fl_slice_t){ NULL, 0 };
}

/* Percent-decodes s into out (cap bytes incl. NUL); '+' is a space. -1 on a
 * bad escape or overflow, else the length. */
static long pct_decode(fl_slice_t s, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < s.len; i++) {
        char c = s.ptr[i];
        if (c == '%') {
            if (i + 2 >= s.len) return -1;
            int a = hexval((unsigned char)s.ptr[i + 1]), b = hexval((unsigned char)s.ptr[i + 2]);
            if (a < 0 || b < 0) return -1;
            c = (char)(a << 4 | b);
            i += 2;
        } else if (c == '+') {
            c = ' ';
        }
        if (o + 1 >= cap) return -1;
        out[o++] = c;
    }
    out[o] = 0;
    return (long)o;
}

/* Iterates raw query segments: name and value slices (raw, still encoded). */
static bool q_next(const char **pp, const char *end, fl_slice_t *name, fl_slice_t *val, bool *has_eq)
{
    const char *p = *pp;
    while (p < end && *p == '&') p++;
    if (p >= end) return false;
    const char *seg = p;
    while (p < end && *p != '&') p++;
    const char *eq = memchr(seg, '=', (size_t)(p - seg));
    if (eq) {
        *name = fl_slice(seg, (size_t)(eq - seg));
        *val = fl_slice(eq + 1, (size_t)(p - eq - 1));
    } else {
        *name = fl_slice(seg, (size_t)(p - seg));
        *val = fl_slice(p, 0);
    }
    if (has_eq) *has_eq = eq != NULL;
    *pp = p;
    return true;
}

/* Decoded value of the query parameter named `name` (exact, after decoding).
 * Returns 1 found, 0 absent, -1 malformed/too long, -2 repeated. */
static int q_get(const char *q, size_t qlen, const char *name, char *out, size_t cap)
{
    if (!q) return 0;
    const char *p = q, *end = q + qlen;
    fl_slice_t n, v;
    char nb[64];
    int found = 0;
    while (q_next(&p, end, &n, &v, NULL)) {
        if (n.len >= sizeof nb) continue;
        if (pct_decode(n, nb, sizeof nb) < 0 || strcmp(nb, name)) continue;
        if (found) return -2;
        if (pct_decode(v, out, cap) < 0) return -1;
        found = 1;
    }
    return found;
}

/* ---- canonicalisation ---- */

/* botocore remove_dot_segments: drop '.' and empty segments, resolve '..',
 * keep a leading and a trailing '/'. Works on the raw (encoded) path. */
static fl_err_t normalize_path(const char *p, size_t n, fl_buf_t *out)
{
    fl_err_t e = FL_OK;
    size_t nseg = 0, *stack = NULL; /* offsets into out of each kept segment's '/' */
    if (n == 0) return fl_buf_addc(out, '/');
    for (size_t i = 0; i < n; i++) nseg += p[i] == '/';
    stack = fl_malloc((nseg + 1) * sizeof *stack);
    size_t base = out->len, depth = 0;
    bool any = false;
    for (size_t i = 0; i <= n;) {
        size_t j = i;
        while (j < n && p[j] != '/') j++;
        size_t len = j - i;
        if (len == 0 || (len == 1 && p[i] == '.')) {
            /* skip */
        } else if (len == 2 && p[i] == '.' && p[i + 1] == '.') {
            if (depth) {
                depth--;
                out->len = stack[depth];
                out->ptr[out->len] = 0;
            }
        } else {
            stack[depth++] = out->len;
            if ((out->len > base || p[0] == '/') && (e = fl_buf_addc(out, '/'))) goto out;
            if ((e = fl_buf_add(out, p + i, len))) goto out;
        }
        i = j + 1;
    }
    any = out->len > base;
    if (!any && p[0] == '/') {
        if ((e = fl_buf_addc(out, '/'))) goto out;
    } else if (any && p[n - 1] == '/') {
        if ((e = fl_buf_addc(out, '/'))) goto out;
    }
out:
    free(stack);
    return e;
}

static fl_err_t canon_uri(const char *path, size_t len, bool s3, fl_buf_t *out)
{
    fl_buf_t tmp;
    fl_err_t e;
    fl_buf_init(&tmp, 4 * len + 64);
    if (len == 0) {
        e = fl_buf_addc(out, '/');
    } else if (s3) {
        if (!(e = fl_uri_decode(fl_slice(path, len), false, &tmp)))
            e = fl_uri_encode(fl_slice(tmp.ptr, tmp.len), true, out);
    } else {
        if (!(e = normalize_path(path, len, &tmp)))
            e = fl_uri_encode(fl_slice(tmp.ptr, tmp.len), true, out);
    }
    fl_buf_free(&tmp);
    return e;
}

typedef struct qpair {
    size_t noff, nlen, voff, vlen;
    const char *n, *v;
} qpair_t;

static int qpair_cmp(const void *a, const void *b)
{
    const qpair_t *x = a, *y = b;
    size_t m = x->nlen < y->nlen ? x->nlen : y->nlen;
    int c = memcmp(x->n, y->n, m);
    if (c) return c;
    if (x->nlen != y->nlen) return x->nlen < y->nlen ? -1 : 1;
    m = x->vlen < y->vlen ? x->vlen : y->vlen;
    c = memcmp(x->v, y->v, m);
    if (c) return c;
    return x->vlen == y->vlen ? 0 : (x->vlen < y->vlen ? -1 : 1);
}

/* Canonical query. AWS: decoded, strictly re-encoded, sorted, "name=value"
 * always; X-Amz-Signature dropped when presigned. OSS (raw): the pairs as they
 * are on the wire, sorted, a name with an empty value bare; x-oss-signature
 * dropped when presigned. */
static fl_err_t canon_query(const char *q, size_t qlen, bool presigned, bool raw, fl_buf_t *out)
{
    fl_err_t e = FL_OK;
    qpair_t *pairs = NULL;
    size_t np = 0, cnt = 1;
    fl_buf_t enc, dec;
    fl_buf_init(&enc, 3 * qlen + 64);
    fl_buf_init(&dec, qlen + 64);
    if (!q || !qlen) goto out;
    for (size_t i = 0; i < qlen; i++) cnt += q[i] == '&';
    pairs = fl_calloc(cnt, sizeof *pairs);
    const char *p = q, *end = q + qlen;
    fl_slice_t n, v;
    while (q_next(&p, end, &n, &v, NULL)) {
        qpair_t *qp = &pairs[np];
        if (raw) {
            if (presigned && fl_slice_eq(n, "x-oss-signature")) continue;
            qp->noff = enc.len;
            if ((e = fl_buf_add(&enc, n.ptr, n.len))) goto out;
            qp->nlen = n.len;
            qp->voff = enc.len;
            if ((e = fl_buf_add(&enc, v.ptr, v.len))) goto out;
            qp->vlen = v.len;
            np++;
            continue;
        }
        fl_buf_reset(&dec);
        if ((e = fl_uri_decode(n, true, &dec))) goto out;
        if (presigned && !strcmp(dec.ptr, "X-Amz-Signature")) continue;
        qp->noff = enc.len;
        if ((e = fl_uri_encode(fl_slice(dec.ptr, dec.len), false, &enc))) goto out;
        qp->nlen = enc.len - qp->noff;
        fl_buf_reset(&dec);
        if ((e = fl_uri_decode(v, true, &dec))) goto out;
        qp->voff = enc.len;
        if ((e = fl_uri_encode(fl_slice(dec.ptr, dec.len), false, &enc))) goto out;
        qp->vlen = enc.len - qp->voff;
        np++;
    }
    for (size_t i = 0; i < np; i++) {
        pairs[i].n = enc.ptr + pairs[i].noff;
        pairs[i].v = enc.ptr + pairs[i].voff;
    }
    qsort(pairs, np, sizeof *pairs, qpair_cmp);
    for (size_t i = 0; i < np; i++) {
        if (i && (e = fl_buf_addc(out, '&'))) goto out;
        if ((e = fl_buf_add(out, pairs[i].n, pairs[i].nlen))) goto out;
        if (raw && !pairs[i].vlen) continue;
        if ((e = fl_buf_addc(out, '='))) goto out;
        if ((e = fl_buf_add(out, pairs[i].v, pairs[i].vlen))) goto out;
    }
out:
    free(pairs);
    fl_buf_free(&enc);
    fl_buf_free(&dec);
    return e;
}

/* Appends a header value trimmed, inner whitespace runs collapsed to one space. */
static fl_err_t add_trimall(fl_buf_t *out, const char *v, size_t n)
{
    fl_err_t e = fl_buf_reserve(out, n);
    if (e) return e;
    bool pending = false, wrote = false;
    for (size_t i = 0; i < n; i++) {
        if (is_ws(v[i])) {
            pending = wrote;
            continue;
        }
        if (pending) out->ptr[out->len++] = ' ';
        pending = false;
        out->ptr[out->len++] = v[i];
        wrote = true;
    }
    out->ptr[out->len] = 0;
    return FL_OK;
}

/* "name:value\n" for each name of the ';'-list sh, in its order; repeated
 * headers joined with ','. collapse (AWS): inner whitespace runs become one
 * space; OSS signs the value as sent (the parser has trimmed its ends). */
static fl_err_t canon_headers(const fl_http_header_t *h, size_t nh, const char *sh, size_t shlen,
                              bool collapse, fl_buf_t *out)
{
    fl_err_t e = FL_OK;
    for (size_t i = 0; i < shlen;) {
        size_t j = i;
        while (j < shlen && sh[j] != ';') j++;
        const char *name = sh + i;
        size_t nlen = j - i;
        i = j + 1;
        if (!nlen) return FL_ERR_INVALID;
        for (size_t k = 0; k < nlen; k++)
            if ((e = fl_buf_addc(out, lower(name[k])))) return e;
        if ((e = fl_buf_addc(out, ':'))) return e;
        bool found = false;
        for (size_t k = 0; k < nh; k++) {
            if (!ieq(h[k].name, h[k].name_len, name, nlen)) continue;
            if (found && (e = fl_buf_addc(out, ','))) return e;
            if ((e = collapse ? add_trimall(out, h[k].value, h[k].value_len)
                              : fl_buf_add(out, h[k].value, h[k].value_len)))
                return e;
            found = true;
        }
        /* Proxies strip Expect; the client signed it (MinIO does the same). */
        if (!found && ieq(name, nlen, "expect", 6) && (e = fl_buf_adds(out, "100-continue")))
            return e;
        if ((e = fl_buf_addc(out, '\n'))) return e;
    }
    return e;
}

/* Builds the canonical request for r into out. FL_ERR_INVALID on a bad
 * percent-escape in the path or query. Any thread. */
fl_err_t fl_sigv4_canonical_request(const fl_sigv4_req_t *r, const char *service,
                                    const char *signed_headers, const char *payload_hash,
                                    bool presigned, fl_buf_t *out)
{
    fl_err_t e;
    bool s3 = !strcmp(service, "s3");
    if ((e = fl_buf_adds(out, r->method)) || (e = fl_buf_addc(out, '\n'))) return e;
    if ((e = canon_uri(r->raw_path, r->raw_path_len, s3, out)) || (e = fl_buf_addc(out, '\n')))
        return e;
    if ((e = canon_query(r->raw_query, r->raw_query ? r->raw_query_len : 0, presigned, false, out)) ||
        (e = fl_buf_addc(out, '\n')))
        return e;
    if ((e = canon_headers(r->headers, r->nheaders, signed_headers, strlen(signed_headers), true, out)))
        return e;
    if ((e = fl_buf_addc(out, '\n')) || (e = fl_buf_adds(out, signed_headers)) ||
        (e = fl_buf_addc(out, '\n')) || (e = fl_buf_adds(out, payload_hash)))
        return e;
    return FL_OK;
}

/* True for the headers OSS4 signs without being told: x-oss-*, content-type,
 * content-md5. */
static bool oss_default_signed(const char *name, size_t n)
{
    return (n > 6 && ieq(name, 6, "x-oss-", 6)) || ieq(name, n, "content-type", 12) ||
           ieq(name, n, "content-md5", 11);
}

static bool list_has(fl_slice_t sh, const char *name, size_t nlen);

static int cstr_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The ';'-list of the request's headers OSS4 signs: the default ones and those
 * named in AdditionalHeaders, lower-case, sorted, once each. */
static fl_err_t oss_header_list(const fl_sigv4_req_t *r, fl_slice_t additional, fl_buf_t *out)
{
    fl_err_t e = FL_OK;
    char **names = fl_calloc(r->nheaders ? r->nheaders : 1, sizeof *names);
    size_t n = 0;
    for (size_t i = 0; i < r->nheaders; i++) {
        const fl_http_header_t *h = &r->headers[i];
        if (!oss_default_signed(h->name, h->name_len) && !list_has(additional, h->name, h->name_len))
            continue;
        names[n] = fl_strndup(h->name, h->name_len);
        for (char *c = names[n]; *c; c++) *c = lower(*c);
        n++;
    }
    qsort(names, n, sizeof *names, cstr_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i && !strcmp(names[i], names[i - 1])) continue;
        if (out->len && (e = fl_buf_addc(out, ';'))) goto out;
        if ((e = fl_buf_adds(out, names[i]))) goto out;
    }
out:
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return e;
}

/* The OSS4 canonical resource when the caller gave none: the decoded path,
 * with the '/' a bucket-only path ("/bucket") lacks ("/bucket/"), as the OSS
 * SDKs build "/{bucket}/{key}". */
static fl_err_t oss_object_resource(const fl_sigv4_req_t *r, fl_buf_t *out)
{
    fl_err_t e = fl_uri_decode(fl_slice(r->raw_path, r->raw_path_len), false, out);
    if (e) return e;
    if (!out->len) return fl_buf_addc(out, '/');
    if (out->len > 1 && !memchr(out->ptr + 1, '/', out->len - 1)) return fl_buf_addc(out, '/');
    return FL_OK;
}

/* The object flavour's resource: cfg->oss_resource if the caller gave one
 * (a virtual-hosted request's "/{bucket}/{key}"), else from the path. */
static fl_err_t oss1_resource(const fl_sigv4_req_t *r, const fl_sigv4_cfg_t *cfg, fl_buf_t *out)
{
    if (cfg->oss_resource) return fl_buf_add(out, cfg->oss_resource, cfg->oss_resource_len);
    return oss_object_resource(r, out);
}

/* OSS4 canonical request:
 *   method \n encode(resource) \n raw sorted query \n "name:value\n"... \n
 *   additional-headers \n payload
 * resource is decoded (encoded here like S3's URI: all but A-Za-z0-9-_.~/). */
static fl_err_t oss_canonical_request(const fl_sigv4_req_t *r, fl_slice_t resource,
                                      fl_slice_t additional, const char *payload_hash,
                                      bool presigned, fl_buf_t *out)
{
    fl_err_t e;
    fl_buf_t list;
    fl_buf_init(&list, FL_SIGV4_MAX_SIGNED_HEADERS + 64 * 64);
    if ((e = fl_buf_adds(out, r->method)) || (e = fl_buf_addc(out, '\n'))) goto out;
    if ((e = fl_uri_encode(resource, true, out)) || (e = fl_buf_addc(out, '\n'))) goto out;
    if ((e = canon_query(r->raw_query, r->raw_query ? r->raw_query_len : 0, presigned, true, out)) ||
        (e = fl_buf_addc(out, '\n')))
        goto out;
    if ((e = oss_header_list(r, additional, &list))) goto out;
    if (list.len && (e = canon_headers(r->headers, r->nheaders, list.ptr, list.len, false, out))) goto out;
    if ((e = fl_buf_addc(out, '\n')) || (e = fl_buf_add(out, additional.ptr, additional.len)) ||
        (e = fl_buf_addc(out, '\n')) || (e = fl_buf_adds(out, payload_hash)))
        goto out;
out:
    fl_buf_free(&list);
    return e;
}

/* The tables flavour's resource (OSS SDK signer/tables_v4): "/{bucket ARN}/"
 * or, with no bucket addressed, "/acs:osstables:{region}::bucket//", then the
 * decoded request path without its leading '/'. The bucket ARN is the second
 * segment of /buckets/{B}..., /namespaces/{B}..., /tables/{B}..., or for
 * /get-table the tableBucketARN query parameter, else the part of tableArn
 * before "/table/". */
fl_err_t fl_oss4_tables_resource(const fl_sigv4_req_t *r, const char *region, fl_buf_t *out)
{
    fl_err_t e = FL_OK;
    const char *p = r->raw_path, *end = r->raw_path + r->raw_path_len;
    char *arn = fl_malloc(FL_SIGV4_MAX_CREDENTIAL + 1);
    arn[0] = 0;
    if (p < end && *p == '/') p++;
    const char *s1 = memchr(p, '/', (size_t)(end - p));
    fl_slice_t first = fl_slice(p, s1 ? (size_t)(s1 - p) : (size_t)(end - p));
    if (s1 && (fl_slice_eq(first, "buckets") || fl_slice_eq(first, "namespaces") ||
               fl_slice_eq(first, "tables"))) {
        const char *s2 = memchr(s1 + 1, '/', (size_t)(end - s1 - 1));
        fl_slice_t seg = fl_slice(s1 + 1, (size_t)((s2 ? s2 : end) - s1 - 1));
        if (seg.len && pct_decode(seg, arn, FL_SIGV4_MAX_CREDENTIAL + 1) < 0) arn[0] = 0;
    } else if (!s1 && fl_slice_eq(first, "get-table")) {
        if (q_get(r->raw_query, r->raw_query_len, "tableBucketARN", arn, FL_SIGV4_MAX_CREDENTIAL + 1) != 1) {
            arn[0] = 0;
            if (q_get(r->raw_query, r->raw_query_len, "tableArn", arn, FL_SIGV4_MAX_CREDENTIAL + 1) == 1) {
                char *t = strstr(arn, "/table/");
                if (t) *t = 0;
                else arn[0] = 0;
            }
        }
    }
    if (arn[0]) e = fl_buf_printf(out, "/%s/", arn);
    else e = fl_buf_printf(out, "/acs:osstables:%s::bucket//", region ? region : "");
    if (!e) e = fl_uri_decode(fl_slice(p, (size_t)(end - p)), false, out);
    free(arn);
    return e;
}

/* HMAC-SHA256 chain: k = prefix+secret; k = HMAC(k, date8), region, service, term. */
static void derive_key(const char *prefix, const char *secret, const char *date8, const char *region,
                       const char *service, const char *term, unsigned char out[32])
{
    char k0[16 + 128 + 1];
    unsigned char k[32];
    int n = snprintf(k0, sizeof k0, "%s%s", prefix, secret);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof k0) n = (int)sizeof k0 - 1;
    fl_hmac_sha256(k0, (size_t)n, date8, strlen(date8), k);
    fl_hmac_sha256(k, 32, region, strlen(region), k);
    fl_hmac_sha256(k, 32, service, strlen(service), k);
    fl_hmac_sha256(k, 32, term, strlen(term), out);
    OPENSSL_cleanse(k0, sizeof k0);
    OPENSSL_cleanse(k, sizeof k);
}

void fl_sigv4_signing_key(const char *secret, const char *date8, const char *region,
                          const char *service, unsigned char out[32])
{
    derive_key("AWS4", secret, date8, region, service, TERM, out);
}

void fl_oss4_signing_key(const char *secret, const char *date8, const char *region,
                         const char *product, unsigned char out[32])
{
    derive_key(OSS_KEY_PREFIX, secret, date8, region, product, OSS_TERM, out);
}

/* ---- signing-key cache ---- */

#define KC_SLOTS 64
typedef struct kc_ent {
    bool used;
    fl_sig_dialect_t dialect;
    char akid[128], date[9], region[64], service[32], secret[128];
    unsigned char key[32];
} kc_ent_t;
static kc_ent_t kc[KC_SLOTS];
static pthread_mutex_t kc_mu = PTHREAD_MUTEX_INITIALIZER;

static uint32_t fnv(uint32_t h, const char *s)
{
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return (h ^ 0xff) * 16777619u;
}

static bool secret_eq(const char *a, const char *b)
{
    size_t n = strlen(a);
    return n == strlen(b) && CRYPTO_memcmp(a, b, n) == 0;
}

static void cached_signing_key(fl_sig_dialect_t d, const char *akid, const char *secret,
                               const char *date8, const char *region, const char *service,
                               unsigned char out[32])
{
    uint32_t h = fnv(fnv(fnv(fnv(2166136261u + (uint32_t)d, akid), date8), region), service);
    kc_ent_t *e = &kc[h % KC_SLOTS];
    pthread_mutex_lock(&kc_mu);
    if (e->used && e->dialect == d && !strcmp(e->akid, akid) && !strcmp(e->date, date8) &&
        !strcmp(e->region, region) && !strcmp(e->service, service) && secret_eq(e->secret, secret)) {
        memcpy(out, e->key, 32);
        pthread_mutex_unlock(&kc_mu);
        return;
    }
    pthread_mutex_unlock(&kc_mu);
    if (d == FL_SIG_OSS4) fl_oss4_signing_key(secret, date8, region, service, out);
    else fl_sigv4_signing_key(secret, date8, region, service, out);
    if (strlen(akid) >= sizeof e->akid || strlen(secret) >= sizeof e->secret) return;
    pthread_mutex_lock(&kc_mu);
    OPENSSL_cleanse(e, sizeof *e);
    e->dialect = d;
    fl_strlcpy(e->akid, akid, sizeof e->akid);
    fl_strlcpy(e->date, date8, sizeof e->date);
    fl_strlcpy(e->region, region, sizeof e->region);
    fl_strlcpy(e->service, service, sizeof e->service);
    fl_strlcpy(e->secret, secret, sizeof e->secret);
    memcpy(e->key, out, 32);
    e->used = true;
    pthread_mutex_unlock(&kc_mu);
}

/* signature = hex(HMAC(key, "AWS4-HMAC-SHA256\n{date}\n{scope}\n{hex sha256(creq)}")) */
static void sign_creq(const char *algo, const unsigned char key[32], const char *amz_date,
                      const char *scope, const char *creq, size_t creq_len, char sig[65])
{
    char sts[512], h[65];
    unsigned char mac[32];
    fl_sha256_hex(creq, creq_len, h);
    int n = snprintf(sts, sizeof sts, "%s\n%s\n%s\n%s", algo, amz_date, scope, h);
    if (n < 0 || (size_t)n >= sizeof sts) n = (int)strlen(sts);
    fl_hmac_sha256(key, 32, sts, (size_t)n, mac);
    fl_hex(mac, 32, sig);
}

/* ---- verification ---- */

/* What differs between the two signature families verified here. */
typedef struct dialect {
    fl_sig_dialect_t id;
    const char *algo, *term, *name;       /* name: for messages */
    const char *date_hdr, *sha_hdr;       /* x-amz-date / x-oss-date, ...-content-sha256 */
    const char *q_alg, *q_cred, *q_date, *q_exp, *q_sig, *q_hdrs;
    const char *hdrs_field;               /* "SignedHeaders=" / "AdditionalHeaders=" */
    bool hdrs_required;                   /* the header list must be there (AWS) */
} dialect_t;

static const dialect_t AWS = {
    FL_SIG_AWS4, ALGO, TERM, "AWS", "x-amz-date", "x-amz-content-sha256",
    "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-Signature",
    "X-Amz-SignedHeaders", "SignedHeaders=", true,
};
static const dialect_t OSS = {
    FL_SIG_OSS4, OSS_ALGO, OSS_TERM, "OSS", "x-oss-date", "x-oss-content-sha256",
    "x-oss-signature-version", "x-oss-credential", "x-oss-date", "x-oss-expires", "x-oss-signature",
    "x-oss-additional-headers", "AdditionalHeaders=", false,
};

typedef struct parsed {
    fl_slice_t akid, date8, region, service, term;
    fl_slice_t signed_headers;  /* AWS: SignedHeaders; OSS: AdditionalHeaders (may be empty) */
    fl_slice_t sig;
    char amz_date[17];
    int64_t t;
    int64_t expires;
    bool presigned;
} parsed_t;

static fl_err_t fail(fl_sigv4_error_t *err, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static fl_err_t fail(fl_sigv4_error_t *err, int status, const char *code, const char *fmt, ...)
{
    va_list ap;
    err->status = status;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return status == 400 ? FL_ERR_INVALID : FL_ERR_AUTH;
}

static bool parse_credential(fl_slice_t c, parsed_t *p)
{
    fl_slice_t parts[4];
    size_t end = c.len;
    for (int k = 3; k >= 0; k--) {
        size_t i = end;
        while (i > 0 && c.ptr[i - 1] != '/') i--;
        if (i == 0) return false;
        parts[k] = fl_slice(c.ptr + i, end - i);
        end = i - 1;
    }
    p->akid = fl_slice(c.ptr, end);
    p->date8 = parts[0];
    p->region = parts[1];
    p->service = parts[2];
    p->term = parts[3];
    return p->akid.len > 0;
}

static bool is_date8(fl_slice_t d)
{
    if (d.len != 8) return false;
    for (size_t i = 0; i < 8; i++)
        if (d.ptr[i] < '0' || d.ptr[i] > '9') return false;
    return true;
}

/* Parses "{ALGO} Credential=..., SignedHeaders=..., Signature=..." (OSS4:
 * AdditionalHeaders, optional), tolerant of ',' without spaces and of field
 * order. */
static fl_err_t parse_authz(const dialect_t *d, fl_slice_t v, parsed_t *p, fl_sigv4_error_t *err)
{
    static const char M[] = "AuthorizationHeaderMalformed";
    const size_t al = strlen(d->algo), hl = strlen(d->hdrs_field);
    v = fl_slice_trim(v);
    if (v.len < al || memcmp(v.ptr, d->algo, al) || (v.len > al && v.ptr[al] != ' ' && v.ptr[al] != '\t')) {
        if (v.len >= 5 && (!memcmp(v.ptr, "AWS4-", 5) || !memcmp(v.ptr, "OSS4-", 5)))
            return fail(err, 400, "InvalidArgument", "Unsupported Authorization Type");
        return fail(err, 400, M, "The authorization header is malformed; unsupported algorithm");
    }
    fl_slice_t rest = fl_slice(v.ptr + al, v.len - al);
    bool have_c = false, have_h = false, have_s = false;
    size_t i = 0, nfields = 0;
    while (i < rest.len) {
        size_t j = i;
        while (j < rest.len && rest.ptr[j] != ',') j++;
        fl_slice_t f = fl_slice_trim(fl_slice(rest.ptr + i, j - i));
        i = j + 1;
        if (!f.len) continue;
        nfields++;
        if (f.len > 11 && !memcmp(f.ptr, "Credential=", 11) && !have_c) {
            have_c = true;
            if (!parse_credential(fl_slice(f.ptr + 11, f.len - 11), p))
                return fail(err, 400, M, "The authorization header is malformed; the Credential is "
                            "mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/%s\".", d->term);
        } else if (f.len >= hl && !memcmp(f.ptr, d->hdrs_field, hl) && !have_h) {
            have_h = true;
            p->signed_headers = fl_slice_trim(fl_slice(f.ptr + hl, f.len - hl));
        } else if (f.len >= 10 && !memcmp(f.ptr, "Signature=", 10) && !have_s) {
            have_s = true;
            p->sig = fl_slice_trim(fl_slice(f.ptr + 10, f.len - 10));
        } else {
            return fail(err, 400, M, "The authorization header is malformed; unexpected field");
        }
    }
    if (!have_c || !have_s || (d->hdrs_required && !have_h) || nfields != 2u + have_h)
        return fail(err, 400, M, "The authorization header is malformed; it must contain "
                    "Credential, %.*s and Signature", (int)hl - 1, d->hdrs_field);
    if (!have_h) p->signed_headers = fl_slice("", 0);
    return FL_OK;
}

static bool list_has(fl_slice_t sh, const char *name, size_t nlen)
{
    for (size_t i = 0; i < sh.len;) {
        size_t j = i;
        while (j < sh.len && sh.ptr[j] != ';') j++;
        if (ieq(sh.ptr + i, j - i, name, nlen)) return true;
        i = j + 1;
    }
    return false;
}

static bool signed_headers_ok(fl_slice_t sh)
{
    if (!sh.len || sh.len > FL_SIGV4_MAX_SIGNED_HEADERS) return false;
    for (size_t i = 0; i < sh.len;) {
        size_t j = i;
        while (j < sh.len && sh.ptr[j] != ';') j++;
        if (j == i) return false;
        for (size_t k = i; k < j; k++) {
            unsigned char c = (unsigned char)sh.ptr[k];
            if (c <= ' ' || c >= 127 || c == ':' || c == ',') return false;
        }
        i = j + 1;
    }
    return sh.ptr[sh.len - 1] != ';';
}

/* x-amz-content-sha256 (or X-Amz-Content-Sha256 query) value -> mode, lower-hex
 * expected hash and the string that goes into the canonical request. OSS4
 * knows only a hex hash and UNSIGNED-PAYLOAD. */
static bool payload_parse(const dialect_t *d, fl_slice_t v, fl_payload_mode_t *mode, char hex[65],
                          char creq[64 + 16])
{
    hex[0] = 0;
    if (is_hex64(v.ptr, v.len)) {
        *mode = FL_PAYLOAD_SHA256;
        lower_hex(v.ptr, hex);
        copy_slice(creq, 65, v);
        return true;
    }
    static const struct { const char *s; fl_payload_mode_t m; } modes[] = {
        { UNSIGNED_PAYLOAD, FL_PAYLOAD_UNSIGNED },
        { STREAM_SIGNED, FL_PAYLOAD_STREAMING_SIGNED },
        { STREAM_SIGNED_TR, FL_PAYLOAD_STREAMING_SIGNED_TRAILER },
        { STREAM_UNSIGNED_TR, FL_PAYLOAD_STREAMING_UNSIGNED_TRAILER },
    };
    for (size_t i = 0; i < (d->id == FL_SIG_OSS4 ? 1 : sizeof modes / sizeof modes[0]); i++) {
        if (slice_is(v, modes[i].s)) {
            *mode = modes[i].m;
            strcpy(creq, modes[i].s);
            return true;
        }
    }
    if (d->id == FL_SIG_OSS4) return false;
    /* Java SDK (Iceberg REST signer): base64 of the digest in the header, hex
     * in the canonical request. */
    unsigned char dg[33];
    if ((v.len == 44 || v.len == 43) && fl_base64_decode(v.ptr, v.len, dg, sizeof dg) == 32) {
        *mode = FL_PAYLOAD_SHA256;
        fl_hex(dg, 32, hex);
        strcpy(creq, hex);
        return true;
    }
    return false;
}

static bool name_in(const char *const *list, fl_slice_t s)
{
    for (const char *const *p = list; p && *p; p++)
        if (slice_is(s, *p)) return true;
    return false;
}

/* True if header h, present in the request, has to be among the signed ones. */
static bool must_be_signed(const fl_http_header_t *h, bool presigned)
{
    if (h->name_len < 6 || !ieq(h->name, 6, "x-amz-", 6)) return false;
    if (!presigned) return true;
    fl_slice_t n = fl_slice(h->name, h->name_len);
    if (fl_slice_ieq(n, "x-amz-date") || fl_slice_ieq(n, "x-amz-content-sha256") ||
        fl_slice_ieq(n, "x-amz-sdk-checksum-algorithm"))
        return false;
    return !(h->name_len > 15 && ieq(h->name, 15, "x-amz-checksum-", 15));
}

/* Refuses (403 AccessDenied, HeadersNotSigned naming them) a request carrying
 * x-amz-* headers that must be signed (must_be_signed) and are not in the
 * signed list sh (empty: none is signed). */
static fl_err_t refuse_unsigned(const fl_sigv4_req_t *r, bool presigned, fl_slice_t sh, fl_sigv4_error_t *err)
{
    for (size_t i = 0; i < r->nheaders; i++) {
        const fl_http_header_t *h = &r->headers[i];
        if (!must_be_signed(h, presigned) || list_has(sh, h->name, h->name_len)) continue;
        err->detail_name = "HeadersNotSigned";
        size_t dl = strlen(err->detail_value);
        if (dl + 2 + h->name_len >= sizeof err->detail_value) continue;
        if (dl) {
            memcpy(err->detail_value + dl, ", ", 2);
            dl += 2;
        }
        for (size_t k = 0; k < h->name_len; k++) err->detail_value[dl + k] = lower(h->name[k]);
        err->detail_value[dl + h->name_len] = 0;
    }
    if (!err->detail_name) return FL_OK;
    return fail(err, 403, "AccessDenied", "There were headers present in the request which were not signed");
}

fl_sig_dialect_t fl_sigv4_dialect(const fl_sigv4_req_t *r)
{
    fl_slice_t a = fl_slice_trim(hdr_get(r->headers, r->nheaders, "authorization"));
    if (a.ptr && a.len >= 5 && !memcmp(a.ptr, "AWS4-", 5)) return FL_SIG_AWS4;
    if (a.ptr && a.len >= 5 && !memcmp(a.ptr, "OSS4-", 5)) return FL_SIG_OSS4;
    if (a.ptr && a.len >= 4 && !memcmp(a.ptr, "OSS ", 4)) return FL_SIG_OSS1;
    char tmp[8];
    for (int k = 0; k < 2; k++) {
        const dialect_t *d = k ? &OSS : &AWS;
        const char *const q[] = { d->q_alg, d->q_cred, d->q_sig };
        for (size_t i = 0; i < 3; i++)
            if (q_get(r->raw_query, r->raw_query_len, q[i], tmp, sizeof tmp) != 0) return d->id;
    }
    if (q_get(r->raw_query, r->raw_query_len, "OSSAccessKeyId", tmp, sizeof tmp) != 0) return FL_SIG_OSS1;
    return FL_SIG_NONE;
}

bool fl_sigv4_present(const fl_sigv4_req_t *r)
{
    return fl_sigv4_dialect(r) != FL_SIG_NONE;
}

/* Reads the presigned-query credentials of dialect d into p (values decoded
 * into the q_* buffers the caller owns). */
typedef struct qbufs {
    char cred[FL_SIGV4_MAX_CREDENTIAL], date[32], exp[24], sh[FL_SIGV4_MAX_SIGNED_HEADERS + 1];
    char sig[80], alg[40];
} qbufs_t;

static fl_err_t parse_query_auth(const dialect_t *d, const fl_sigv4_req_t *r, qbufs_t *qb,
                                 parsed_t *p, fl_sigv4_error_t *err)
{
    static const char M[] = "AuthorizationQueryParametersError";
    const char *q = r->raw_query;
    size_t ql = r->raw_query_len;
    int qa = q_get(q, ql, d->q_alg, qb->alg, sizeof qb->alg);
    int qc = q_get(q, ql, d->q_cred, qb->cred, sizeof qb->cred);
    int qs = q_get(q, ql, d->q_sig, qb->sig, sizeof qb->sig);
    int qd = q_get(q, ql, d->q_date, qb->date, sizeof qb->date);
    int qe = q_get(q, ql, d->q_exp, qb->exp, sizeof qb->exp);
    int qh = q_get(q, ql, d->q_hdrs, qb->sh, sizeof qb->sh);
    if (qh == 0 && !d->hdrs_required) qb->sh[0] = 0, qh = 1;
    if (qa != 1 || qc != 1 || qs != 1 || qd != 1 || qe != 1 || qh != 1)
        return fail(err, 400, M, "Query-string authentication version 4 requires the %s, %s, %s, "
                    "%s, %s and %s parameters.", d->q_alg, d->q_cred, d->q_sig, d->q_date,
                    d->q_exp, d->q_hdrs);
    if (strcmp(qb->alg, d->algo))
        return fail(err, 400, M, "%s only supports \"%s\"", d->q_alg, d->algo);
    p->presigned = true;
    if (!parse_credential(fl_slice_cstr(qb->cred), p))
        return fail(err, 400, M, "Error parsing the %s parameter; the Credential is mal-formed; "
                    "expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/%s\".", d->q_cred, d->term);
    p->signed_headers = fl_slice_cstr(qb->sh);
    p->sig = fl_slice_cstr(qb->sig);
    p->t = strlen(qb->date) == 16 ? fl_time_parse_amz(qb->date, 16) : -1;
    if (p->t < 0)
        return fail(err, 400, M, "%s must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"",
                    d->q_date);
    memcpy(p->amz_date, qb->date, 17);
    size_t el = strlen(qb->exp);
    p->expires = 0;
    for (size_t i = 0; i < el; i++) {
        if (qb->exp[i] < '0' || qb->exp[i] > '9' || p->expires > FL_SIGV4_MAX_EXPIRES_S) {
            p->expires = -1;
            break;
        }
        p->expires = p->expires * 10 + (qb->exp[i] - '0');
    }
    if (!el || p->expires < 0) return fail(err, 400, M, "%s should be a number", d->q_exp);
    if (p->expires > FL_SIGV4_MAX_EXPIRES_S)
        return fail(err, 400, M, "%s must be less than a week (in seconds) that is 604800", d->q_exp);
    return FL_OK;
}

/* ---- OSS V1: "Authorization: OSS {akid}:{signature}" and the presigned
 * OSSAccessKeyId / Expires / Signature query ----
 *
 * signature = base64(HMAC-SHA1(secret, VERB \n Content-MD5 \n Content-Type \n
 *             Date \n {"x-oss-name:value\n" sorted by name} {resource}))
 * Date is x-oss-date if sent, else Date; in the presigned form it is Expires
 * (seconds since the epoch). resource is "/{bucket}/{key}" decoded ("/bucket/"
 * for the bucket, "/" for the service), then '?' and the sub-resources among
 * the query parameters, decoded, sorted by name, "name=value" or the bare name
 * when empty, joined with '&'. Nothing in V1 names a region or covers a body
 * but through Content-MD5 (which the data plane checks against the body). */

/* The query parameters V1 signs: the union of the lists the OSS SDKs carry
 * (Python oss2, Java aliyun-sdk-oss), sorted by strcmp for bsearch. A name
 * one SDK signs and the other does not concerns only operations floe does not
 * implement. */
static const char *const OSS1_SUBRES[] = {
    "accessPoint", "accessPointPolicy", "acl", "append", "asyncFetch", "bucketArchiveDirectRead",
    "bucketInfo", "callback", "callback-var", "cname", "comp", "continuation-token", "cors",
    "delete", "encryption", "endTime", "group", "httpsConfig", "img", "inventory", "inventoryId",
    "lifecycle", "link", "live", "location", "logging", "metaQuery", "objectInfo", "objectMeta",
    "partNumber", "policy", "position", "processConfiguration", "publicAccessBlock", "qos",
    "qosInfo", "qosRequester", "redundancyTransition", "referer", "regionList", "replication",
    "replicationLocation", "replicationProgress", "requestPayment", "requesterQosInfo",
    "resourceGroup", "resourcePool", "resourcePoolBuckets", "resourcePoolInfo",
    "response-cache-control", "response-content-disposition", "response-content-encoding",
    "response-content-language", "response-content-type", "response-expires", "restore",
    "security-token", "sequential", "startTime", "stat", "status", "style", "styleName",
    "symlink", "tagging", "transferAcceleration", "udf", "udfApplication", "udfApplicationLog",
    "udfImage", "udfImageDesc", "udfName", "uploadId", "uploads", "versionId", "versioning",
    "versions", "vip", "vod", "vpcip", "website", "worm", "wormExtend", "wormId",
    "x-oss-ac-forward-allow", "x-oss-ac-source-ip", "x-oss-ac-subnet-mask", "x-oss-ac-vpc-id",
    "x-oss-access-point-name", "x-oss-async-process", "x-oss-process",
    "x-oss-redundancy-transition-taskid", "x-oss-request-payer", "x-oss-target-redundancy-type",
    "x-oss-traffic-limit", "x-oss-write-get-object-response",
};

static int cstr_key_cmp(const void *key, const void *elem)
{
    return strcmp(key, *(const char *const *)elem);
}

static bool oss1_subresource(const char *name)
{
    return bsearch(name, OSS1_SUBRES, sizeof OSS1_SUBRES / sizeof OSS1_SUBRES[0],
                   sizeof OSS1_SUBRES[0], cstr_key_cmp) != NULL;
}

typedef struct subres {
    char *name, *value;
} subres_t;

static int subres_cmp(const void *a, const void *b)
{
    return strcmp(((const subres_t *)a)->name, ((const subres_t *)b)->name);
}

/* Appends "?a=1&b" (the signed sub-resources of the raw query) to out.
 * FL_ERR_INVALID on a bad escape or a sub-resource given twice. */
static fl_err_t oss1_subresources(const char *q, size_t qlen, fl_buf_t *out)
{
    fl_err_t e = FL_OK;
    size_t cnt = 1, n = 0;
    subres_t *sr = NULL;
    fl_buf_t dec;
    fl_buf_init(&dec, qlen + 64);
    if (!q || !qlen) goto out;
    for (size_t i = 0; i < qlen; i++) cnt += q[i] == '&';
    sr = fl_calloc(cnt, sizeof *sr);
    const char *p = q, *end = q + qlen;
    fl_slice_t nm, v;
    while (q_next(&p, end, &nm, &v, NULL)) {
        fl_buf_reset(&dec);
        if ((e = fl_uri_decode(nm, true, &dec))) goto out;
        if (!oss1_subresource(dec.ptr)) continue;
        sr[n].name = fl_strndup(dec.ptr, dec.len);
        fl_buf_reset(&dec);
        if ((e = fl_uri_decode(v, true, &dec))) goto out;
        sr[n].value = fl_strndup(dec.ptr, dec.len);
        n++;
    }
    qsort(sr, n, sizeof *sr, subres_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i && !strcmp(sr[i].name, sr[i - 1].name)) {
            e = FL_ERR_INVALID;
            goto out;
        }
        if ((e = fl_buf_addc(out, i ? '&' : '?')) || (e = fl_buf_adds(out, sr[i].name))) goto out;
        if (sr[i].value[0] && ((e = fl_buf_addc(out, '=')) || (e = fl_buf_adds(out, sr[i].value))))
            goto out;
    }
out:
    for (size_t i = 0; i < n; i++) {
        free(sr[i].name);
        free(sr[i].value);
    }
    free(sr);
    fl_buf_free(&dec);
    return e;
}

/* The V1 string to sign, date_value in the Date slot. */
static fl_err_t oss1_string_to_sign(const fl_sigv4_req_t *r, fl_slice_t resource,
                                    fl_slice_t date_value, fl_buf_t *out)
{
    fl_err_t e;
    fl_buf_t list;
    fl_slice_t md5 = fl_slice_trim(hdr_get(r->headers, r->nheaders, "content-md5"));
    fl_slice_t ct = fl_slice_trim(hdr_get(r->headers, r->nheaders, "content-type"));
    fl_buf_init(&list, FL_SIGV4_MAX_SIGNED_HEADERS + 64 * 64);
    if ((e = fl_buf_printf(out, "%s\n%.*s\n%.*s\n%.*s\n", r->method, (int)md5.len, md5.ptr ? md5.ptr : "",
                           (int)ct.len, ct.ptr ? ct.ptr : "", (int)date_value.len, date_value.ptr)))
        goto out;
    for (size_t i = 0; i < r->nheaders; i++) { /* the x-oss-* names, sorted, once each */
        const fl_http_header_t *h = &r->headers[i];
        if (h->name_len <= 6 || !ieq(h->name, 6, "x-oss-", 6)) continue;
        if (list.len && (e = fl_buf_addc(&list, ';'))) goto out;
        for (size_t k = 0; k < h->name_len; k++)
            if ((e = fl_buf_addc(&list, lower(h->name[k])))) goto out;
    }
    if (list.len) {
        size_t cnt = 1;
        for (size_t i = 0; i < list.len; i++) cnt += list.ptr[i] == ';';
        char **names = fl_calloc(cnt, sizeof *names), *save = NULL;
        size_t n = 0;
        for (char *t = strtok_r(list.ptr, ";", &save); t; t = strtok_r(NULL, ";", &save)) names[n++] = t;
        qsort(names, n, sizeof *names, cstr_cmp);
        fl_buf_t sorted;
        fl_buf_init(&sorted, list.len + 1);
        for (size_t i = 0; i < n && !e; i++) {
            if (i && !strcmp(names[i], names[i - 1])) continue;
            if (sorted.len) e = fl_buf_addc(&sorted, ';');
            if (!e) e = fl_buf_adds(&sorted, names[i]);
        }
        free(names);
        /* "name:value\n", repeated headers joined with ',' */
        if (!e) e = canon_headers(r->headers, r->nheaders, sorted.ptr, sorted.len, false, out);
        fl_buf_free(&sorted);
        if (e) goto out;
    }
    if ((e = fl_buf_add(out, resource.ptr, resource.len))) goto out;
    e = oss1_subresources(r->raw_query, r->raw_query ? r->raw_query_len : 0, out);
out:
    fl_buf_free(&list);
    return e;
}

static fl_err_t oss1_resource(const fl_sigv4_req_t *r, const fl_sigv4_cfg_t *cfg, fl_buf_t *out);

/* V1 verification (the object flavour only: cfg->oss_products must hold "oss"). */
static fl_err_t verify_oss1(const fl_sigv4_req_t *r, const fl_sigv4_cfg_t *cfg, bool head_only,
                            fl_sigv4_auth_t *auth, fl_sigv4_error_t *err)
{
    static const char QM[] = "AuthorizationQueryParametersError";
    fl_err_t e = FL_OK;
    char akid[128], secret[128] = { 0 }, qakid[160], qexp[24], qsig[80], datebuf[64];
    unsigned char given[32], calc[20];
    fl_slice_t date_value = { NULL, 0 };
    int64_t t = -1, expires = -1;
    bool presigned = false;
    fl_buf_t sts, res;
    fl_buf_init(&sts, 64 * 1024);
    fl_buf_init(&res, FL_HTTP_MAX_TARGET_BYTES + 4096);
    if (!name_in(cfg->oss_products, fl_slice_cstr("oss"))) {
        e = fail(err, 400, "InvalidArgument", "Unsupported Authorization Type");
        goto out;
    }
    fl_slice_t az = fl_slice_trim(hdr_get(r->headers, r->nheaders, "authorization"));
    int qa = q_get(r->raw_query, r->raw_query_len, "OSSAccessKeyId", qakid, sizeof qakid);
    if (az.ptr && qa) {
        e = fail(err, 400, "InvalidArgument", "Only one auth mechanism allowed; only the "
                 "OSSAccessKeyId query parameter, Signature query string parameter or the "
                 "Authorization header should be specified");
        goto out;
    }
    long glen;
    if (az.ptr) {
        /* "OSS " akid ":" base64 (fl_sigv4_dialect saw the "OSS " prefix) */
        fl_slice_t v = fl_slice_trim(fl_slice(az.ptr + 4, az.len - 4));
        const char *colon = memchr(v.ptr, ':', v.len);
        if (!colon || colon == v.ptr || (size_t)(colon - v.ptr) >= sizeof akid) {
            e = fail(err, 400, "InvalidArgument", "Authorization header is invalid.");
            goto out;
        }
        copy_slice(akid, sizeof akid, fl_slice(v.ptr, (size_t)(colon - v.ptr)));
        fl_slice_t sig = fl_slice(colon + 1, (size_t)(v.ptr + v.len - colon - 1));
        glen = sig.len > 0 && sig.len <= 44 ? fl_base64_decode(sig.ptr, sig.len, given, sizeof given) : -1;
        fl_slice_t xd = fl_slice_trim(hdr_get(r->headers, r->nheaders, "x-oss-date"));
        date_value = xd.ptr ? xd : fl_slice_trim(hdr_get(r->headers, r->nheaders, "date"));
        t = date_value.ptr ? fl_time_parse_http(date_value.ptr, date_value.len) : -1;
        if (t < 0) {
            e = fail(err, 403, "AccessDenied", "OSS authentication requires a valid Date.");
            goto out;
        }
    } else {
        presigned = true;
        int qe = q_get(r->raw_query, r->raw_query_len, "Expires", qexp, sizeof qexp);
        int qs = q_get(r->raw_query, r->raw_query_len, "Signature", qsig, sizeof qsig);
        if (qa != 1 || qe != 1 || qs != 1 || !qakid[0] || strlen(qakid) >= sizeof akid) {
            e = fail(err, 400, QM, "Query-string authentication requires the OSSAccessKeyId, "
                     "Expires and Signature parameters, once each.");
            goto out;
        }
        fl_strlcpy(akid, qakid, sizeof akid);
        size_t el = strlen(qexp);
        expires = 0;
        for (size_t i = 0; i < el; i++) {
            if (qexp[i] < '0' || qexp[i] > '9' || expires > INT64_MAX / 20) {
                expires = -1;
                break;
            }
            expires = expires * 10 + (qexp[i] - '0');
        }
        if (!el || expires < 0) {
            e = fail(err, 400, QM, "Expires should be a number");
            goto out;
        }
        for (char *c = qsig; *c; c++)
            if (*c == ' ') *c = '+'; /* a raw '+' of the base64 decodes as a space */
        glen = fl_base64_decode(qsig, strlen(qsig), given, sizeof given);
        fl_strlcpy(datebuf, qexp, sizeof datebuf);
        date_value = fl_slice_cstr(datebuf);
    }
    if (glen != 20) {
        e = fail(err, 403, "SignatureDoesNotMatch", "The request signature we calculated does "
                 "not match the signature you provided. Check your key and signing method.");
        goto out;
    }
    if (!cfg->lookup || !cfg->lookup(cfg->lookup_ud, akid, secret)) {
        e = fail(err, 403, "InvalidAccessKeyId", "The OSS Access Key Id you provided does not "
                 "exist in our records.");
        goto out;
    }
    secret[sizeof secret - 1] = 0;
    if (!presigned) {
        int64_t dt = cfg->now - t;
        if (dt > FL_SIGV4_MAX_SKEW_S || dt < -FL_SIGV4_MAX_SKEW_S) {
            e = fail(err, 403, "RequestTimeTooSkewed", "The difference between the request time "
                     "and the current time is too large.");
            goto out;
        }
    } else {
        if (cfg->now > expires) {
            e = fail(err, 403, "AccessDenied", "Request has expired.");
            goto out;
        }
        if (expires - cfg->now > FL_SIGV4_MAX_EXPIRES_S + FL_SIGV4_MAX_SKEW_S) {
            e = fail(err, 400, QM, "Expires must be less than a week (604800 seconds) from now");
            goto out;
        }
    }
    /* V1 signs the x-oss-* headers only: an x-amz-* header the data plane would
     * act on (x-amz-copy-source, metadata) is unsigned. */
    if ((e = refuse_unsigned(r, false, fl_slice(NULL, 0), err))) goto out;
    if (head_only) goto out;

    if ((e = oss1_resource(r, cfg, &res)) ||
        (e = oss1_string_to_sign(r, fl_slice(res.ptr, res.len), date_value, &sts))) {
        e = e == FL_ERR_INVALID ? fail(err, 400, "InvalidURI", "Couldn't parse the specified URI.")
                                : fail(err, 400, "InvalidArgument", "Request too large to sign");
        goto out;
    }
    fl_hmac_sha1(secret, strlen(secret), sts.ptr, sts.len, calc);
    if (CRYPTO_memcmp(calc, given, 20) != 0) {
        e = fail(err, 403, "SignatureDoesNotMatch", "The request signature we calculated does "
                 "not match the signature you provided. Check your key and signing method.");
        goto out;
    }
    auth->dialect = FL_SIG_OSS1;
    fl_strlcpy(auth->akid, akid, sizeof auth->akid);
    fl_strlcpy(auth->service, "oss", sizeof auth->service);
    if (cfg->region) fl_strlcpy(auth->region, cfg->region, sizeof auth->region);
    fl_time_amz((time_t)(presigned ? cfg->now : t), auth->amz_date, sizeof auth->amz_date);
    auth->payload_mode = FL_PAYLOAD_UNSIGNED;
    auth->presigned = presigned;
    e = FL_OK;
out:
    OPENSSL_cleanse(secret, sizeof secret);
    OPENSSL_cleanse(calc, sizeof calc);
    fl_buf_free(&sts);
    fl_buf_free(&res);
    return e;
}

static fl_err_t verify(const fl_sigv4_req_t *r, const fl_sigv4_cfg_t *cfg,
                       const char *body_sha256_hex, bool head_only, fl_sigv4_auth_t *auth,
                       fl_sigv4_error_t *err)
{
    fl_err_t e = FL_OK;
    parsed_t p;
    qbufs_t qb;
    char q_sha[80];
    char akid[128], date8[9], region[64], service[32], scope[160];
    char secret[128] = { 0 }, sig_given[65], sig_calc[65];
    char payload_creq[64 + 16], sh[FL_SIGV4_MAX_SIGNED_HEADERS + 1];
    fl_buf_t creq, res;
    fl_buf_init(&creq, 64 * 1024 + 4 * (r->raw_path_len + r->raw_query_len));
    fl_buf_init(&res, FL_HTTP_MAX_TARGET_BYTES + 4096);
    memset(&p, 0, sizeof p);
    memset(auth, 0, sizeof *auth);
    memset(err, 0, sizeof *err);

    fl_sig_dialect_t did = fl_sigv4_dialect(r);
    if (did == FL_SIG_OSS1) {
        e = verify_oss1(r, cfg, head_only, auth, err);
        goto out;
    }
    const dialect_t *d = did == FL_SIG_OSS4 ? &OSS : &AWS;
    bool oss = did == FL_SIG_OSS4;
    const char *const *services = oss ? cfg->oss_products : cfg->services;
    if (oss && !cfg->oss_products) {
        e = fail(err, 400, "InvalidArgument", "Unsupported Authorization Type");
        goto out;
    }
    fl_slice_t az = hdr_get(r->headers, r->nheaders, "authorization");
    char tmp[8];
    bool any_q = q_get(r->raw_query, r->raw_query_len, d->q_alg, tmp, sizeof tmp) ||
                 q_get(r->raw_query, r->raw_query_len, d->q_cred, tmp, sizeof tmp) ||
                 q_get(r->raw_query, r->raw_query_len, d->q_sig, tmp, sizeof tmp);
    const char *M;
    if (az.ptr && any_q) {
        e = fail(err, 400, "InvalidArgument", "Only one auth mechanism allowed; only the %s query "
                 "parameter, Signature query string parameter or the Authorization header should "
                 "be specified", d->q_alg);
        goto out;
    }
    if (az.ptr) {
        M = "AuthorizationHeaderMalformed";
        if ((e = parse_authz(d, az, &p, err))) goto out;
        fl_slice_t xd = hdr_get(r->headers, r->nheaders, d->date_hdr);
        if (xd.ptr) {
            xd = fl_slice_trim(xd);
            p.t = xd.len == 16 ? fl_time_parse_amz(xd.ptr, xd.len) : -1;
            if (p.t >= 0) copy_slice(p.amz_date, sizeof p.amz_date, xd);
        } else {
            fl_slice_t dt = hdr_get(r->headers, r->nheaders, "date");
            p.t = dt.ptr ? fl_time_parse_http(dt.ptr, dt.len) : -1;
            if (p.t >= 0) fl_time_amz((time_t)p.t, p.amz_date, sizeof p.amz_date);
        }
        if (p.t < 0) {
            e = fail(err, 403, "AccessDenied", "%s authentication requires a valid Date or %s "
                     "header", d->name, d->date_hdr);
            goto out;
        }
    } else {
        M = "AuthorizationQueryParametersError";
        if ((e = parse_query_auth(d, r, &qb, &p, err))) goto out;
    }

    /* Scope and shape. */
    if (p.akid.len >= sizeof akid || p.region.len == 0 || p.region.len >= sizeof region ||
        p.service.len == 0 || p.service.len >= sizeof service || !is_date8(p.date8)) {
        e = fail(err, 400, M, "Error parsing the Credential; the Credential is mal-formed; "
                 "expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/%s\".", d->term);
        goto out;
    }
    copy_slice(akid, sizeof akid, p.akid);
    copy_slice(date8, sizeof date8, p.date8);
    copy_slice(region, sizeof region, p.region);
    copy_slice(service, sizeof service, p.service);
    if (!slice_is(p.term, d->term)) {
        e = fail(err, 400, M, "Error parsing the Credential: incorrect terminal '%.*s'; "
                 "expecting \"%s\"", (int)(p.term.len > 32 ? 32 : p.term.len), p.term.ptr, d->term);
        goto out;
    }
    if (!name_in(services, p.service)) {
        e = fail(err, 400, M, "Error parsing the Credential: incorrect service '%s'", service);
        goto out;
    }
    if (cfg->region && cfg->region[0] && strcmp(region, cfg->region) != 0) {
        if (p.presigned)
            e = fail(err, 400, M, "Error parsing the %s parameter; the region '%s' is "
                     "wrong; expecting '%s'", d->q_cred, region, cfg->region);
        else
            e = fail(err, 400, M, "The authorization header is malformed; the region '%s' is "
                     "wrong; expecting '%s'", region, cfg->region);
        err->detail_name = "Region";
        fl_strlcpy(err->detail_value, cfg->region, sizeof err->detail_value);
        goto out;
    }
    if (memcmp(date8, p.amz_date, 8)) {
        e = fail(err, 400, M, "Invalid credential date \"%s\". This date is not the same as "
                 "%s: \"%.8s\".", date8, d->date_hdr, p.amz_date);
        goto out;
    }
    if ((p.signed_headers.len || d->hdrs_required) && !signed_headers_ok(p.signed_headers)) {
        e = fail(err, 400, M, "The %.*s list is malformed", (int)strlen(d->hdrs_field) - 1,
                 d->hdrs_field);
        goto out;
    }
    if (!oss && !list_has(p.signed_headers, "host", 4)) {
        e = fail(err, 400, M, "The host header must be signed");
        goto out;
    }
    if (!is_hex64(p.sig.ptr, p.sig.len)) {
        e = fail(err, 400, M, "The signature must be 64 hexadecimal characters");
        goto out;
    }
    lower_hex(p.sig.ptr, sig_given);
    copy_slice(sh, sizeof sh, p.signed_headers);

    /* Key. */
    if (!cfg->lookup || !cfg->lookup(cfg->lookup_ud, akid, secret)) {
        e = fail(err, 403, "InvalidAccessKeyId", "The %s Access Key Id you provided does not "
                 "exist in our records.", d->name);
        goto out;
    }
    secret[sizeof secret - 1] = 0;

    /* Time. */
    if (!p.presigned) {
        int64_t dt = cfg->now - p.t;
        if (dt > FL_SIGV4_MAX_SKEW_S || dt < -FL_SIGV4_MAX_SKEW_S) {
            e = fail(err, 403, "RequestTimeTooSkewed", "The difference between the request time "
                     "and the current time is too large.");
            goto out;
        }
    } else {
        if (p.t - cfg->now > FL_SIGV4_MAX_SKEW_S) {
            e = fail(err, 403, "AccessDenied", "Request is not valid yet");
            goto out;
        }
        if (cfg->now > p.t + p.expires) {
            e = fail(err, 403, "AccessDenied", "Request has expired");
            goto out;
        }
    }

    /* AWS: every x-amz-* header must be signed (S3: HeadersNotSigned), so that a
     * presigned URL cannot be turned into another operation (x-amz-copy-source)
     * or carry unsigned metadata. Presigned requests may carry x-amz-date and
     * x-amz-content-sha256 unsigned (the query parameters rule; the headers are
     * then ignored), and checksum headers, which only constrain the body.
     * OSS4 signs every x-oss-* header by construction. The x-amz-* headers an
     * OSS4 request carries are signed by it only if listed: refused otherwise,
     * as the data plane would act on them. */
    if ((e = refuse_unsigned(r, p.presigned && !oss, p.signed_headers, err))) goto out;
    if (head_only) goto out;

    /* Payload hash. */
    fl_slice_t ph = { NULL, 0 };
    if (oss) {
        ph = hdr_get(r->headers, r->nheaders, d->sha_hdr);
        if (!ph.ptr) ph = FL_SLICE(UNSIGNED_PAYLOAD);
    } else if (p.presigned) {
        int qh = q_get(r->raw_query, r->raw_query_len, "X-Amz-Content-Sha256", q_sha, sizeof q_sha);
        if (qh < 0) {
            e = fail(err, 400, M, "X-Amz-Content-Sha256 is malformed");
            goto out;
        }
        if (qh == 1) ph = fl_slice_cstr(q_sha);
        else if (list_has(p.signed_headers, "x-amz-content-sha256", 20))
            ph = hdr_get(r->headers, r->nheaders, "x-amz-content-sha256");
        if (!ph.ptr) ph = FL_SLICE(UNSIGNED_PAYLOAD);
    } else {
        ph = hdr_get(r->headers, r->nheaders, "x-amz-content-sha256");
        if (!ph.ptr) {
            ph = (body_sha256_hex && is_hex64(body_sha256_hex, strlen(body_sha256_hex)))
                     ? fl_slice_cstr(body_sha256_hex) : FL_SLICE(EMPTY_SHA256);
        }
    }
    ph = fl_slice_trim(ph);
    if (!payload_parse(d, ph, &auth->payload_mode, auth->payload_sha256, payload_creq)) {
        e = fail(err, 400, "InvalidArgument", oss ? "x-oss-content-sha256 must be UNSIGNED-PAYLOAD "
                 "or a valid sha256 value." : "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, "
                 "STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, "
                 "STREAMING-UNSIGNED-PAYLOAD-TRAILER or a valid sha256 value.");
        goto out;
    }

    /* Signature. */
    if (oss) {
        fl_slice_t resource = fl_slice(cfg->oss_resource, cfg->oss_resource_len);
        if (!cfg->oss_resource) {
            e = oss_object_resource(r, &res);
            resource = fl_slice(res.ptr ? res.ptr : "/", res.ptr ? res.len : 1);
        }
        if (!e) e = oss_canonical_request(r, resource, fl_slice(sh, strlen(sh)), payload_creq,
                                          p.presigned, &creq);
    } else {
        e = fl_sigv4_canonical_request(r, service, sh, payload_creq, p.presigned, &creq);
    }
    if (e == FL_ERR_INVALID) {
        e = fail(err, 400, "InvalidURI", "Couldn't parse the specified URI.");
        goto out;
    } else if (e) {
        e = fail(err, 400, "InvalidArgument", "Request too large to sign");
        goto out;
    }
    snprintf(scope, sizeof scope, "%s/%s/%s/%s", date8, region, service, d->term);
    cached_signing_key(did, akid, secret, date8, region, service, auth->signing_key);
    sign_creq(d->algo, auth->signing_key, p.amz_date, scope, creq.ptr, creq.len, sig_calc);
    if (CRYPTO_memcmp(sig_calc, sig_given, 64) != 0) {
        e = fail(err, 403, "SignatureDoesNotMatch", "The request signature we calculated does "
                 "not match the signature you provided. Check your key and signing method.");
        goto out;
    }

    auth->dialect = did;
    fl_strlcpy(auth->akid, akid, sizeof auth->akid);
    fl_strlcpy(auth->service, service, sizeof auth->service);
    fl_strlcpy(auth->region, region, sizeof auth->region);
    memcpy(auth->amz_date, p.amz_date, sizeof auth->amz_date);
    fl_strlcpy(auth->scope, scope, sizeof auth->scope);
    memcpy(auth->seed_signature, sig_calc, 65);
    auth->presigned = p.presigned;
    e = FL_OK;
out:
    if (e) OPENSSL_cleanse(auth->signing_key, sizeof auth->signing_key);
    OPENSSL_cleanse(secret, sizeof secret);
    fl_buf_free(&creq);
    fl_buf_free(&res);
    return e;
}

fl_err_t fl_sigv4_verify(const fl_sigv4_req_t *r, const fl_sigv4_cfg_t *cfg,
                         const char *body_sha256_hex, fl_sigv4_auth_t *auth,
                         fl_sigv4_error_t *err)
{
    return verify(r, cfg, body_sha256_hex, false, auth, err);
}

fl_err_t fl_sigv4_check_head(const fl_sigv4_req_t *r, const fl_sigv4_cfg_t *cfg,
                             fl_sigv4_error_t *err)
{
    fl_sigv4_auth_t auth;
    fl_err_t e = verify(r, cfg, NULL, true, &auth, err);
    OPENSSL_cleanse(&auth, sizeof auth);
    return e;
}

bool fl_sigv4_body_signed(const fl_sigv4_req_t *r)
{
    return fl_sigv4_dialect(r) == FL_SIG_AWS4 && hdr_get(r->headers, r->nheaders, "authorization").ptr &&
           !hdr_get(r->headers, r->nheaders, "x-amz-content-sha256").ptr;
}

/* ---- signer ---- */

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, de-duplicated, lower-cased header names joined with ';'. */
static fl_err_t signed_list(const fl_http_header_t *h, size_t nh, fl_buf_t *out)
{
    fl_err_t e = FL_OK;
    char **names = fl_calloc(nh ? nh : 1, sizeof *names);
    for (size_t i = 0; i < nh; i++) {
        names[i] = fl_strndup(h[i].name, h[i].name_len);
        for (char *c = names[i]; *c; c++) *c = lower(*c);
    }
    qsort(names, nh, sizeof *names, name_cmp);
    for (size_t i = 0; i < nh; i++) {
        if (i && !strcmp(names[i], names[i - 1])) continue;
        if (out->len && (e = fl_buf_addc(out, ';'))) goto out;
        if ((e = fl_buf_adds(out, names[i]))) goto out;
    }
out:
    for (size_t i = 0; i < nh; i++) free(names[i]);
    free(names);
    return e;
}

static fl_err_t sign_core(const fl_sigv4_sign_in_t *in, const fl_http_header_t *hdrs, size_t nh,
                          const char *query, size_t qlen, bool presigned, const char *amz_date,
                          const char *signed_headers, char sig[65])
{
    fl_err_t e;
    char date8[9], scope[160];
    unsigned char key[32];
    fl_buf_t creq;
    const char *ph = in->payload_hash ? in->payload_hash : (presigned ? UNSIGNED_PAYLOAD : EMPTY_SHA256);
    fl_sigv4_req_t r = {
        .method = in->method, .raw_path = in->raw_path, .raw_path_len = strlen(in->raw_path),
        .raw_query = query, .raw_query_len = qlen, .headers = hdrs, .nheaders = nh,
    };
    fl_buf_init(&creq, 0);
    memcpy(date8, amz_date, 8);
    date8[8] = 0;
    if ((e = fl_sigv4_canonical_request(&r, in->service, signed_headers, ph, presigned, &creq)))
        goto out;
    snprintf(scope, sizeof scope, "%s/%s/%s/" TERM, date8, in->region, in->service);
    fl_sigv4_signing_key(in->secret, date8, in->region, in->service, key);
    sign_creq(ALGO, key, amz_date, scope, creq.ptr, creq.len, sig);
out:
    OPENSSL_cleanse(key, sizeof key);
    fl_buf_free(&creq);
    return e;
}

/* Signs with the Authorization header form. x-amz-date is taken from in->headers
 * if present there, else made from in->now and signed too (the caller sends it
 * as X-Amz-Date). payload_hash NULL means the empty-body hash. Any thread. */
fl_err_t fl_sigv4_sign(const fl_sigv4_sign_in_t *in, fl_buf_t *out, char amz_date[17])
{
    fl_err_t e;
    fl_buf_t sh;
    char sig[65];
    fl_http_header_t *h = fl_calloc(in->nheaders + 1, sizeof *h);
    size_t nh = in->nheaders;
    fl_buf_init(&sh, 0);
    if (nh) memcpy(h, in->headers, nh * sizeof *h);
    fl_slice_t xd = hdr_get(in->headers, in->nheaders, "x-amz-date");
    if (xd.ptr && xd.len == 16) {
        copy_slice(amz_date, 17, xd);
    } else if (xd.ptr) {
        e = FL_ERR_INVALID;
        goto out;
    } else {
        fl_time_amz((time_t)in->now, amz_date, 17);
        h[nh++] = (fl_http_header_t){ "x-amz-date", 10, amz_date, 16 };
    }
    if ((e = signed_list(h, nh, &sh))) goto out;
    const char *q = in->raw_query ? in->raw_query : "";
    if ((e = sign_core(in, h, nh, q, strlen(q), false, amz_date, sh.ptr ? sh.ptr : "", sig)))
        goto out;
    e = fl_buf_printf(out, ALGO " Credential=%s/%.8s/%s/%s/" TERM ", SignedHeaders=%s, Signature=%s",
                      in->akid, amz_date, in->region, in->service, sh.ptr ? sh.ptr : "", sig);
out:
    fl_buf_free(&sh);
    free(h);
    return e;
}

/* Presigned query: the caller's raw_query (if any), then X-Amz-Algorithm,
 * -Credential, -Date, -Expires, -SignedHeaders and -Signature. payload_hash
 * NULL means UNSIGNED-PAYLOAD. Any thread. */
fl_err_t fl_sigv4_presign(const fl_sigv4_sign_in_t *in, int expires_s, fl_buf_t *query_out)
{
    fl_err_t e;
    fl_buf_t sh, q, cred;
    char amz_date[17], sig[65];
    fl_buf_init(&sh, 0);
    fl_buf_init(&q, 0);
    fl_buf_init(&cred, 0);
    if (expires_s < 1 || expires_s > FL_SIGV4_MAX_EXPIRES_S) {
        e = FL_ERR_INVALID;
        goto out;
    }
    fl_time_amz((time_t)in->now, amz_date, sizeof amz_date);
    if ((e = signed_list(in->headers, in->nheaders, &sh))) goto out;
    char scope_cred[512];
    snprintf(scope_cred, sizeof scope_cred, "%s/%.8s/%s/%s/" TERM, in->akid, amz_date, in->region,
             in->service);
    if ((e = fl_uri_encode(fl_slice_cstr(scope_cred), false, &cred))) goto out;
    if (in->raw_query && in->raw_query[0] && (e = fl_buf_printf(&q, "%s&", in->raw_query))) goto out;
    if ((e = fl_buf_printf(&q, "X-Amz-Algorithm=" ALGO "&X-Amz-Credential=%s&X-Amz-Date=%s"
                           "&X-Amz-Expires=%d&X-Amz-SignedHeaders=", cred.ptr, amz_date, expires_s)))
        goto out;
    if ((e = fl_uri_encode(fl_slice(sh.ptr ? sh.ptr : "", sh.len), false, &q))) goto out;
    if ((e = sign_core(in, in->headers, in->nheaders, q.ptr, q.len, true, amz_date,
                       sh.ptr ? sh.ptr : "", sig)))
        goto out;
    if ((e = fl_buf_add(query_out, q.ptr, q.len))) goto out;
    e = fl_buf_printf(query_out, "&X-Amz-Signature=%s", sig);
out:
    fl_buf_free(&sh);
    fl_buf_free(&q);
    fl_buf_free(&cred);
    return e;
}

/* ---- aws-chunked decoder ---- */

enum {
    ST_SIZE,       /* hex digits of a chunk size */
    ST_EXT,        /* ";..." after the size, up to CR */
    ST_SIZE_LF,    /* LF ending the size line */
    ST_DATA,       /* chunk payload */
    ST_DATA_CR,    /* CRLF after the payload */
    ST_DATA_LF,
    ST_END_CR,     /* final CRLF after the zero chunk (no trailer) */
    ST_END_LF,
    ST_TLINE,      /* a trailer line, up to CR */
    ST_TLINE_LF,
    ST_DONE,
};

struct fl_awschunk {
    int state;
    fl_err_t err;
    const char *msg;
    bool signed_chunks, trailers;
    fl_cksum_alg_t tr_alg;          /* from x-amz-trailer; NONE if not announced */
    fl_cksum_t ck;                  /* running checksum of the decoded payload */
    EVP_MD_CTX *sha;                /* chunk hash, then the trailer-lines hash */
    EVP_MD *md;
    unsigned char key[32];
    char amz_date[17], scope[160], prev_sig[65], chunk_sig[65];
    uint64_t size, remaining;
    int ndigits;
    int64_t decoded_len, total;
    size_t line_len, trailer_bytes;
    int ntrailers;
    bool got_checksum, got_trailer_sig;
    fl_cksum_alg_t tr_have;
    char tr_b64[64];
    char line[FL_HTTP_MAX_CHUNK_LINE + 1];
};

fl_awschunk_t *fl_awschunk_new(const fl_sigv4_auth_t *auth, const char *trailer_header,
                               int64_t decoded_len)
{
    fl_payload_mode_t m = auth->payload_mode;
    bool sig = m == FL_PAYLOAD_STREAMING_SIGNED || m == FL_PAYLOAD_STREAMING_SIGNED_TRAILER;
    bool tr = m == FL_PAYLOAD_STREAMING_SIGNED_TRAILER || m == FL_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
    fl_cksum_alg_t alg = FL_CK_NONE;
    if (!sig && !tr) return NULL;
    if (trailer_header) {
        fl_slice_t t = fl_slice_trim(fl_slice_cstr(trailer_header));
        alg = fl_cksum_alg_from_header(t.ptr, t.len);
        if (alg == FL_CK_NONE || !tr) return NULL;
    }
    fl_awschunk_t *d = fl_calloc(1, sizeof *d);
    d->signed_chunks = sig;
    d->trailers = tr;
    d->tr_alg = alg;
    d->decoded_len = decoded_len;
    d->state = ST_SIZE;
    fl_cksum_init(&d->ck, alg);
    if (sig) {
        memcpy(d->key, auth->signing_key, 32);
        fl_strlcpy(d->amz_date, auth->amz_date, sizeof d->amz_date);
        fl_strlcpy(d->scope, auth->scope, sizeof d->scope);
        fl_strlcpy(d->prev_sig, auth->seed_signature, sizeof d->prev_sig);
        d->md = EVP_MD_fetch(NULL, "SHA256", NULL);
        d->sha = EVP_MD_CTX_new();
        if (!d->md || !d->sha || !EVP_DigestInit_ex2(d->sha, d->md, NULL)) {
            fl_awschunk_free(d);
            return NULL;
        }
    }
    return d;
}

static fl_err_t dfail(fl_awschunk_t *d, fl_err_t e, const char *msg)
{
    d->err = e;
    d->msg = msg;
    return e;
}

static void sha_restart(fl_awschunk_t *d)
{
    if (d->signed_chunks) EVP_DigestInit_ex2(d->sha, d->md, NULL);
}

/* Verifies the signature of the chunk whose bytes went into d->sha. */
static fl_err_t verify_chunk(fl_awschunk_t *d)
{
    unsigned char h[32], mac[32];
    char hh[65], sts[512], calc[65];
    EVP_DigestFinal_ex(d->sha, h, NULL);
    fl_hex(h, 32, hh);
    int n = snprintf(sts, sizeof sts, ALGO "-PAYLOAD\n%s\n%s\n%s\n" EMPTY_SHA256 "\n%s",
                     d->amz_date, d->scope, d->prev_sig, hh);
    fl_hmac_sha256(d->key, 32, sts, (size_t)n, mac);
    fl_hex(mac, 32, calc);
    if (CRYPTO_memcmp(calc, d->chunk_sig, 64) != 0)
        return dfail(d, FL_ERR_AUTH, "chunk signature does not match");
    memcpy(d->prev_sig, calc, 65);
    return FL_OK;
}

/* The size line is complete: size in d->size, extensions in d->line. */
static fl_err_t size_line_done(fl_awschunk_t *d)
{
    if (d->signed_chunks) {
        static const char K[] = "chunk-signature=";
        const size_t kl = sizeof K - 1;
        bool found = false;
        for (size_t i = 0; i < d->line_len && !found;) {
            size_t j = i;
            while (j < d->line_len && d->line[j] != ';') j++;
            fl_slice_t f = fl_slice_trim(fl_slice(d->line + i, j - i));
            if (f.len == kl + 64 && !memcmp(f.ptr, K, kl) && is_hex64(f.ptr + kl, 64)) {
                lower_hex(f.ptr + kl, d->chunk_sig);
                found = true;
            }
            i = j + 1;
        }
        if (!found) return dfail(d, FL_ERR_PROTO, "missing or malformed chunk-signature");
    }
    if (d->decoded_len >= 0 && (uint64_t)(d->decoded_len - d->total) < d->size)
        return dfail(d, FL_ERR_TOO_LARGE, "more data than x-amz-decoded-content-length");
    sha_restart(d);
    if (d->size > 0) {
        d->remaining = d->size;
        d->state = ST_DATA;
        return FL_OK;
    }
    /* The zero-size chunk. */
    if (d->signed_chunks) {
        fl_err_t e = verify_chunk(d);
        if (e) return e;
        sha_restart(d); /* now hashes the trailer lines */
    }
    if (d->decoded_len >= 0 && d->total != d->decoded_len)
        return dfail(d, FL_ERR_INCOMPLETE, "body shorter than x-amz-decoded-content-length");
    d->line_len = 0;
    d->state = d->trailers ? ST_TLINE : ST_END_CR;
    return FL_OK;
}

static fl_err_t trailer_line(fl_awschunk_t *d)
{
    const char *l = d->line;
    size_t n = d->line_len;
    const char *colon = memchr(l, ':', n);
    if (!colon) return dfail(d, FL_ERR_PROTO, "malformed trailer line");
    if (d->got_trailer_sig) return dfail(d, FL_ERR_PROTO, "trailer after x-amz-trailer-signature");
    fl_slice_t name = fl_slice_trim(fl_slice(l, (size_t)(colon - l)));
    fl_slice_t val = fl_slice_trim(fl_slice(colon + 1, n - (size_t)(colon - l) - 1));
    if (fl_slice_ieq(name, "x-amz-trailer-signature")) {
        if (!d->signed_chunks) return dfail(d, FL_ERR_PROTO, "unexpected x-amz-trailer-signature");
        if (!is_hex64(val.ptr, val.len)) return dfail(d, FL_ERR_PROTO, "malformed trailer signature");
        unsigned char h[32], mac[32];
        char hh[65], sts[512], calc[65], given[65];
        EVP_DigestFinal_ex(d->sha, h, NULL);
        fl_hex(h, 32, hh);
        int k = snprintf(sts, sizeof sts, ALGO "-TRAILER\n%s\n%s\n%s\n%s", d->amz_date, d->scope,
                         d->prev_sig, hh);
        fl_hmac_sha256(d->key, 32, sts, (size_t)k, mac);
        fl_hex(mac, 32, calc);
        lower_hex(val.ptr, given);
        if (CRYPTO_memcmp(calc, given, 64) != 0)
            return dfail(d, FL_ERR_AUTH, "trailer signature does not match");
        d->got_trailer_sig = true;
        return FL_OK;
    }
    d->ntrailers++;
    if (d->signed_chunks) {
        EVP_DigestUpdate(d->sha, l, n);
        EVP_DigestUpdate(d->sha, "\n", 1);
    }
    fl_cksum_alg_t a = fl_cksum_alg_from_header(name.ptr, name.len);
    if (a == FL_CK_NONE) return FL_OK; /* some other trailer: covered by the signature, ignored */
    if (a != d->tr_alg || d->got_checksum)
        return dfail(d, FL_ERR_PROTO, "trailer checksum not announced in x-amz-trailer");
    unsigned char want[FL_CK_MAX_DIGEST], got[FL_CK_MAX_DIGEST + 1];
    size_t wl = fl_cksum_final(&d->ck, want);
    long gl = fl_base64_decode(val.ptr, val.len, got, sizeof got);
    d->got_checksum = true;
    if (gl != (long)wl || memcmp(want, got, wl))
        return dfail(d, FL_ERR_DIGEST, "the trailer checksum does not match the payload");
    d->tr_have = a;
    fl_base64(want, wl, d->tr_b64);
    return FL_OK;
}

static fl_err_t trailers_done(fl_awschunk_t *d)
{
    if (d->tr_alg != FL_CK_NONE && !d->got_checksum)
        return dfail(d, FL_ERR_PROTO, "missing trailer checksum");
    if (d->signed_chunks && d->ntrailers > 0 && !d->got_trailer_sig)
        return dfail(d, FL_ERR_AUTH, "missing x-amz-trailer-signature");
    d->state = ST_DONE;
    return FL_OK;
}

fl_err_t fl_awschunk_feed(fl_awschunk_t *d, const void *in, size_t n, fl_awschunk_out_fn out,
                          void *ud)
{
    const unsigned char *p = in;
    size_t i = 0;
    fl_err_t e;
    if (d->err) return d->err;
    while (i < n) {
        if (d->state == ST_DATA) {
            size_t take = n - i;
            if (take > d->remaining) take = (size_t)d->remaining;
            if (d->signed_chunks) EVP_DigestUpdate(d->sha, p + i, take);
            if (d->tr_alg != FL_CK_NONE) fl_cksum_update(&d->ck, p + i, take);
            if (out && out(ud, p + i, take)) return dfail(d, FL_ERR_IO, "output aborted");
            d->total += (int64_t)take;
            d->remaining -= take;
            i += take;
            if (d->remaining == 0) {
                if (d->signed_chunks && (e = verify_chunk(d))) return e;
                d->state = ST_DATA_CR;
            }
            continue;
        }
        unsigned char c = p[i++];
        switch (d->state) {
        case ST_SIZE: {
            int v = hexval(c);
            if (v >= 0) {
                if (++d->line_len > FL_HTTP_MAX_CHUNK_LINE)
                    return dfail(d, FL_ERR_TOO_LARGE, "chunk size line too long");
                d->size = d->size * 16 + (uint64_t)v;
                d->ndigits++;
                if (d->size > FL_AWSCHUNK_MAX_CHUNK)
                    return dfail(d, FL_ERR_TOO_LARGE, "chunk larger than the maximum");
            } else if (d->ndigits && (c == ';' || c == '\r')) {
                d->line_len = 0;
                d->state = c == ';' ? ST_EXT : ST_SIZE_LF;
            } else {
                return dfail(d, FL_ERR_PROTO, "malformed chunk size");
            }
            break;
        }
        case ST_EXT:
            if (c == '\r') {
                d->state = ST_SIZE_LF;
            } else if (c == '\n' || d->line_len >= FL_HTTP_MAX_CHUNK_LINE) {
                return dfail(d, c == '\n' ? FL_ERR_PROTO : FL_ERR_TOO_LARGE,
                             "malformed chunk extension");
            } else {
                d->line[d->line_len++] = (char)c;
            }
            break;
        case ST_SIZE_LF:
            if (c != '\n') return dfail(d, FL_ERR_PROTO, "malformed chunk size line");
            if ((e = size_line_done(d))) return e;
            d->size = 0;
            d->ndigits = 0;
            d->line_len = 0;
            break;
        case ST_DATA_CR:
            if (c != '\r') return dfail(d, FL_ERR_PROTO, "chunk data not followed by CRLF");
            d->state = ST_DATA_LF;
            break;
        case ST_DATA_LF:
            if (c != '\n') return dfail(d, FL_ERR_PROTO, "chunk data not followed by CRLF");
            d->state = ST_SIZE;
            break;
        case ST_END_CR:
            if (c != '\r') return dfail(d, FL_ERR_PROTO, "final chunk not followed by CRLF");
            d->state = ST_END_LF;
            break;
        case ST_END_LF:
            if (c != '\n') return dfail(d, FL_ERR_PROTO, "final chunk not followed by CRLF");
            d->state = ST_DONE;
            break;
        case ST_TLINE:
            if (++d->trailer_bytes > FL_HTTP_MAX_TRAILER_BYTES)
                return dfail(d, FL_ERR_TOO_LARGE, "trailer too large");
            if (c == '\r') {
                d->state = ST_TLINE_LF;
            } else if (c == '\n' || d->line_len >= FL_HTTP_MAX_CHUNK_LINE) {
                return dfail(d, c == '\n' ? FL_ERR_PROTO : FL_ERR_TOO_LARGE, "malformed trailer");
            } else {
                d->line[d->line_len++] = (char)c;
            }
            break;
        case ST_TLINE_LF:
            if (c != '\n') return dfail(d, FL_ERR_PROTO, "malformed trailer");
            if (d->line_len == 0) {
                if ((e = trailers_done(d))) return e;
            } else {
                if ((e = trailer_line(d))) return e;
                d->line_len = 0;
                d->state = ST_TLINE;
            }
            break;
        case ST_DONE:
            return dfail(d, FL_ERR_PROTO, "data after the final chunk");
        default:
            return dfail(d, FL_ERR_PROTO, "bad decoder state");
        }
    }
    return FL_OK;
}

fl_err_t fl_awschunk_finish(fl_awschunk_t *d)
{
    if (d->err) return d->err;
    if (d->state == ST_DONE) return FL_OK;
    /* Tolerated: the body ended right after the last trailer line, without the
     * blank line that closes the trailer block. */
    if (d->state == ST_TLINE && d->line_len == 0 && (d->ntrailers > 0 || d->got_trailer_sig)) {
        fl_err_t e = trailers_done(d);
        if (e) return e;
        return FL_OK;
    }
    return dfail(d, FL_ERR_INCOMPLETE, "the body ended before the final chunk");
}

fl_cksum_alg_t fl_awschunk_trailer(const fl_awschunk_t *d, const char **b64_value)
{
    if (d->state != ST_DONE || d->err || d->tr_have == FL_CK_NONE) {
        if (b64_value) *b64_value = NULL;
        return FL_CK_NONE;
    }
    if (b64_value) *b64_value = d->tr_b64;
    return d->tr_have;
}

const char *fl_awschunk_errmsg(const fl_awschunk_t *d)
{
    return d->msg ? d->msg : "ok";
}

void fl_awschunk_free(fl_awschunk_t *d)
{
    if (!d) return;
    fl_cksum_free(&d->ck);
    EVP_MD_CTX_free(d->sha);
    EVP_MD_free(d->md);
    OPENSSL_cleanse(d->key, sizeof d->key);
    free(d);
}
