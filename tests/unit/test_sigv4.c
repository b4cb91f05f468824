/* SigV4: the S3 documentation vectors and the aws-sig-v4-test-suite get-vanilla
 * case (each checked by canonical-request hash, by signing and by verifying at
 * a fixed time), the aws-chunked example (seed and chunk signatures, random
 * splits), trailers, canonicalisation rules and the failure cases. */
#include "test.h"
#include "auth/sigv4.h"
#include "base/buf.h"
#include "base/checksum.h"
#include "base/time.h"
#include <stdlib.h>

#define S3_AKID "AKIAIOSFODNN7EXAMPLE"
#define S3_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define SUITE_AKID "AKIDEXAMPLE"
#define SUITE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define EMPTY_HASH "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static bool lookup(void *ud, const char *akid, char *secret_out)
{
    const char *wrong = ud;
    const char *s = NULL;
    if (!strcmp(akid, S3_AKID)) s = S3_SECRET;
    else if (!strcmp(akid, SUITE_AKID)) s = SUITE_SECRET;
    else if (!strcmp(akid, "AK/WITH/SLASH")) s = "slashsecret";
    if (!s) return false;
    if (wrong) s = wrong;
    snprintf(secret_out, 128, "%s", s);
    return true;
}

static const char *const all_services[] = { "s3", "s3tables", "service", NULL };

typedef struct hdrs {
    fl_http_header_t h[32];
    size_t n;
    char store[8192];
    size_t used;
} hdrs_t;

/* "name: value\n" lines; names lower-cased, values trimmed (as the HTTP parser). */
static void hdrs_set(hdrs_t *hs, const char *text)
{
    memset(hs, 0, sizeof *hs);
    size_t tl = strlen(text);
    memcpy(hs->store, text, tl + 1);
    char *p = hs->store;
    while (*p) {
        char *nl = strchr(p, '\n');
        if (!nl) nl = p + strlen(p);
        char *colon = memchr(p, ':', (size_t)(nl - p));
        if (colon) {
            for (char *c = p; c < colon; c++)
                if (*c >= 'A' && *c <= 'Z') *c += 32;
            char *v = colon + 1, *ve = nl;
            while (v < ve && *v == ' ') v++;
            while (ve > v && ve[-1] == ' ') ve--;
            hs->h[hs->n++] = (fl_http_header_t){ p, (size_t)(colon - p), v, (size_t)(ve - v) };
        }
        if (!*nl) break;
        p = nl + 1;
    }
}

static void hdrs_add(hdrs_t *hs, const char *name, const char *value)
{
    char *n = hs->store + sizeof hs->store - 4096 + hs->used;
    size_t nl = strlen(name), vl = strlen(value);
    memcpy(n, name, nl);
    memcpy(n + nl, value, vl);
    hs->used += nl + vl;
    hs->h[hs->n++] = (fl_http_header_t){ n, nl, n + nl, vl };
}

static fl_sigv4_req_t mkreq(const char *method, const char *path, const char *query, const hdrs_t *hs)
{
    return (fl_sigv4_req_t){ method, path, strlen(path), query, query ? strlen(query) : 0,
                             hs->h, hs->n };
}

static int64_t T(const char *amz) { return fl_time_parse_amz(amz, 16); }

static fl_sigv4_cfg_t cfg_at(int64_t now, const char *wrong_secret)
{
    return (fl_sigv4_cfg_t){ .lookup = lookup, .lookup_ud = (void *)wrong_secret, .services = all_services, .now = now };
}

static void creq_hash(const fl_sigv4_req_t *r, const char *service, const char *sh,
                      const char *payload, bool presigned, char out[65])
{
    fl_buf_t b;
    fl_buf_init(&b, 0);
    out[0] = 0;
    if (fl_sigv4_canonical_request(r, service, sh, payload, presigned, &b) == FL_OK)
        fl_sha256_hex(b.ptr, b.len, out);
    fl_buf_free(&b);
}

/* One header-signed vector: canonical-request hash, signer output, verifier. */
static void header_vector(int *fl_failed_, const char *method, const char *path, const char *query,
                          const char *headers, const char *akid, const char *secret,
                          const char *region, const char *service, const char *sh,
                          const char *payload, const char *want_creq, const char *want_sig,
                          const char *amz_date)
{
    hdrs_t hs;
    char h[65];
    hdrs_set(&hs, headers);
    fl_sigv4_req_t r = mkreq(method, path, query, &hs);
    creq_hash(&r, service, sh, payload, false, h);
    CHECK_STR(h, want_creq);

    fl_sigv4_sign_in_t in = { method, path, query, hs.h, hs.n, payload, akid, secret, region,
                              service, T(amz_date) + 5 };
    fl_buf_t az;
    char date[17];
    fl_buf_init(&az, 0);
    CHECK_EQ(fl_sigv4_sign(&in, &az, date), FL_OK);
    CHECK_STR(date, amz_date);
    char want_az[512];
    snprintf(want_az, sizeof want_az, "AWS4-HMAC-SHA256 Credential=%s/%.8s/%s/%s/aws4_request, "
             "SignedHeaders=%s, Signature=%s", akid, amz_date, region, service, sh, want_sig);
    CHECK_STR(az.ptr, want_az);

    hdrs_add(&hs, "authorization", want_az);
    r = mkreq(method, path, query, &hs);
    fl_sigv4_cfg_t cfg = cfg_at(T(amz_date) + 60, NULL);
    fl_sigv4_auth_t auth;
    fl_sigv4_error_t err;
    CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &auth, &err), FL_OK);
    CHECK_STR(auth.seed_signature, want_sig);
    CHECK_STR(auth.akid, akid);
    CHECK_STR(auth.region, region);
    CHECK_STR(auth.service, service);
    CHECK_STR(auth.amz_date, amz_date);
    CHECK(!auth.presigned);
    /* Wrong secret. */
    cfg = cfg_at(T(amz_date) + 60, "not-the-secret");
    CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &auth, &err), FL_ERR_AUTH);
    CHECK_EQ(err.status, 403);
    CHECK_STR(err.code, "SignatureDoesNotMatch");
    fl_buf_free(&az);
}

#define S3_HOST "host:examplebucket.s3.amazonaws.com\n"

FL_TEST(sigv4_s3_doc_get_range)
{
    header_vector(fl_failed_, "GET", "/test.txt", NULL,
                  S3_HOST "range: bytes=0-9\nx-amz-content-sha256:" EMPTY_HASH
                  "\nx-amz-date:20130524T000000Z\n",
                  S3_AKID, S3_SECRET, "us-east-1", "s3", "host;range;x-amz-content-sha256;x-amz-date",
                  EMPTY_HASH, "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972",
                  "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
                  "20130524T000000Z");
}

FL_TEST(sigv4_s3_doc_put_object)
{
    char body_hash[65];
    fl_sha256_hex("Welcome to Amazon S3.", 21, body_hash);
    CHECK_STR(body_hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    char headers[512];
    snprintf(headers, sizeof headers, "date: Fri, 24 May 2013 00:00:00 GMT\n" S3_HOST
             "x-amz-content-sha256: %s\nx-amz-date: 20130524T000000Z\n"
             "x-amz-storage-class: REDUCED_REDUNDANCY\n", body_hash);
    header_vector(fl_failed_, "PUT", "/test%24file.text", NULL, headers, S3_AKID, S3_SECRET,
                  "us-east-1", "s3", "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
                  body_hash, "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d",
                  "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
                  "20130524T000000Z");
}

FL_TEST(sigv4_s3_doc_lifecycle)
{
    header_vector(fl_failed_, "GET", "/", "lifecycle",
                  S3_HOST "x-amz-content-sha256:" EMPTY_HASH "\nx-amz-date:20130524T000000Z\n",
                  S3_AKID, S3_SECRET, "us-east-1", "s3", "host;x-amz-content-sha256;x-amz-date",
                  EMPTY_HASH, "9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca",
                  "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
                  "20130524T000000Z");
}

FL_TEST(sigv4_s3_doc_list_objects)
{
    header_vector(fl_failed_, "GET", "/", "max-keys=2&prefix=J",
                  S3_HOST "x-amz-content-sha256:" EMPTY_HASH "\nx-amz-date:20130524T000000Z\n",
                  S3_AKID, S3_SECRET, "us-east-1", "s3", "host;x-amz-content-sha256;x-amz-date",
                  EMPTY_HASH, "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7",
                  "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
                  "20130524T000000Z");
}

FL_TEST(sigv4_suite_get_vanilla)
{
    header_vector(fl_failed_, "GET", "/", NULL,
                  "host:example.amazonaws.com\nx-amz-date:20150830T123600Z\n", SUITE_AKID,
                  SUITE_SECRET, "us-east-1", "service", "host;x-amz-date", EMPTY_HASH,
                  "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63",
                  "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
                  "20150830T123600Z");
}

#define PRESIGN_Q "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524" \
    "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&" \
    "X-Amz-SignedHeaders=host"
#define PRESIGN_SIG "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"

FL_TEST(sigv4_s3_doc_presigned)
{
    hdrs_t hs;
    char h[65];
    hdrs_set(&hs, S3_HOST);
    const char *q = PRESIGN_Q "&X-Amz-Signature=" PRESIGN_SIG;
    fl_sigv4_req_t r = mkreq("GET", "/test.txt", q, &hs);
    CHECK(fl_sigv4_present(&r));
    creq_hash(&r, "s3", "host", "UNSIGNED-PAYLOAD", true, h);
    CHECK_STR(h, "3bfa292879f6447bbcda7001decf97f4a54dc650c8942174ae0a9121cf58ad04");

    int64_t t = T("20130524T000000Z");
    fl_sigv4_sign_in_t in = { "GET", "/test.txt", NULL, hs.h, hs.n, NULL, S3_AKID, S3_SECRET,
                              "us-east-1", "s3", t };
    fl_buf_t out;
    fl_buf_init(&out, 0);
    CHECK_EQ(fl_sigv4_presign(&in, 86400, &out), FL_OK);
    CHECK_STR(out.ptr, q);
    fl_buf_free(&out);

    fl_sigv4_auth_t auth;
    fl_sigv4_error_t err;
    fl_sigv4_cfg_t cfg = cfg_at(t + 3600, NULL);
    CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &auth, &err), FL_OK);
    CHECK(auth.presigned);
    CHECK_EQ(auth.payload_mode, FL_PAYLOAD_UNSIGNED);
    CHECK_STR(auth.seed_signature, PRESIGN_SIG);
    /* Expired. */
    cfg = cfg_at(t + 86401, NULL);
    CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &auth, &err), FL_ERR_AUTH);
    CHECK_EQ(err.status, 403);
    CHECK_STR(err.code, "AccessDenied");
    CHECK_STR(err.message, "Request has expired");
    /* Not valid yet. */
    cfg = cfg_at(t - 3600, NULL);
    CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &auth, &err), FL_ERR_AUTH);
    CHECK_STR(err.code, "AccessDenied");
    /* Tampered query. */
    r = mkreq("GET", "/test.txt", PRESIGN_Q "&X-Amz-Signature=" PRESIGN_SIG "&x=1", &hs);
    cfg = cfg_at(t + 10, NULL);
    CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &auth, &err), FL_ERR_AUTH);
    CHECK_STR(err.code, "SignatureDoesNotMatch");
    /* Expires over a week. */
    r = mkreq("GET", "/test.txt", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential="
              "AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date="
              "20130524T000000Z&X-Amz-Expires=604801&X-Amz-SignedHeaders=host&X-Amz-Signature="
              PRESIGN_SIG, &hs);
    CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &auth, &err), FL_ERR_INVALID);
    CHECK_EQ(err.status, 400);
    CHECK_STR(err.code, "AuthorizationQueryParametersError");
    /* Missing parameter. */
    r = mkreq("GET", "/test.txt", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=" PRESIGN_SIG, &hs);
    CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &auth, &err), FL_ERR_INVALID);
    CHECK_STR(err.code, "AuthorizationQueryParametersError");
    /* Both mechanisms. */
    hdrs_add(&hs, "authorization", "AWS4-HMAC-SHA256 Credential=x");
    r = mkreq("GET", "/test.txt", q, &hs);
    CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &auth, &err), FL_ERR_INVALID);
    /* A presign round trip with a session token and extra query parameters. */
    hdrs_set(&hs, S3_HOST);
    in.raw_query = "X-Amz-Security-Token=tok%2Fen&versionId=3";
    fl_buf_init(&out, 0);
    CHECK_EQ(fl_sigv4_presign(&in, 60, &out), FL_OK);
    r = mkreq("GET", "/test.txt", out.ptr, &hs);
    cfg = cfg_at(t + 59, NULL);
    CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &auth, &err), FL_OK);
    cfg = cfg_at(t + 61, NULL);
    CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &auth, &err), FL_ERR_AUTH);
    fl_buf_free(&out);
}

static void canon_line(int *fl_failed_, const char *service, const char *path, const char *query,
                       int line, const char *want)
{
    hdrs_t hs;
    hdrs_set(&hs, "host:h\n");
    fl_sigv4_req_t r = mkreq("GET", path, query, &hs);
    fl_buf_t b;
    fl_buf_init(&b, 0);
    CHECK_EQ(fl_sigv4_canonical_request(&r, service, "host", EMPTY_HASH, false, &b), FL_OK);
    const char *p = b.ptr ? b.ptr : "";
    for (int i = 0; i < line && p; i++) {
        p = strchr(p, '\n');
        if (p) p++;
    }
    char got[1024] = "";
    if (p) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n >= sizeof got) n = sizeof got - 1;
        memcpy(got, p, n);
        got[n] = 0;
    }
    CHECK_STR(got, want);
    fl_buf_free(&b);
}

FL_TEST(sigv4_canonical_uri)
{
    /* reference s3tables.md 3.2: S3 Tables double encoding. */
    canon_line(fl_failed_, "s3tables",
               "/tables/arn%3Aaws%3As3tables%3Aus-east-1%3A111122223333%3Abucket%2Fmy-bucket/ns1/t1/"
               "metadata-location", NULL, 1,
               "/tables/arn%253Aaws%253As3tables%253Aus-east-1%253A111122223333%253Abucket%252F"
               "my-bucket/ns1/t1/metadata-location");
    canon_line(fl_failed_, "s3", "/bkt/a/b%20c.txt", NULL, 1, "/bkt/a/b%20c.txt");
    /* S3: no normalisation, decode and re-encode (lower-case escapes, '$', '+'). */
    canon_line(fl_failed_, "s3", "/bkt/a//b/./c/../d", NULL, 1, "/bkt/a//b/./c/../d");
    canon_line(fl_failed_, "s3", "/bkt/%7e%2a$+", NULL, 1, "/bkt/~%2A%24%2B");
    canon_line(fl_failed_, "s3", "", NULL, 1, "/");
    /* Other services: normalise, then encode again. */
    canon_line(fl_failed_, "service", "/a/./b/../c//d/", NULL, 1, "/a/c/d/");
    canon_line(fl_failed_, "service", "/example/..", NULL, 1, "/");
    canon_line(fl_failed_, "service", "/../..", NULL, 1, "/");
    canon_line(fl_failed_, "service", "//example//", NULL, 1, "/example/");
    canon_line(fl_failed_, "service", "/example space/", NULL, 1, "/example%20space/");
    canon_line(fl_failed_, "service", "/ns/a%1Fb", NULL, 1, "/ns/a%251Fb");
}

FL_TEST(sigv4_canonical_query)
{
    canon_line(fl_failed_, "s3", "/", "b=2&a=1&a=0&c&d=x+y&e=%7e&&f=a%2fb", 2,
               "a=0&a=1&b=2&c=&d=x%20y&e=~&f=a%2Fb");
    canon_line(fl_failed_, "s3tables", "/t", "namespace=ns1&maxTables=10", 2,
               "maxTables=10&namespace=ns1");
    canon_line(fl_failed_, "s3", "/", "tagKeys=b&tagKeys=a", 2, "tagKeys=a&tagKeys=b");
    canon_line(fl_failed_, "s3", "/", "uploads", 2, "uploads=");
    canon_line(fl_failed_, "s3", "/", "", 2, "");
    canon_line(fl_failed_, "s3", "/", "k=%E2%82%AC!*", 2, "k=%E2%82%AC%21%2A");
    /* Header values: trimmed, inner runs collapsed, repeats joined with ','. */
    hdrs_t hs;
    hdrs_set(&hs, "host:h\nx-a:  one   two \t three \nx-a:b\n");
    fl_sigv4_req_t r = mkreq("GET", "/", NULL, &hs);
    fl_buf_t b;
    fl_buf_init(&b, 0);
    CHECK_EQ(fl_sigv4_canonical_request(&r, "s3", "host;x-a", "UNSIGNED-PAYLOAD", false, &b), FL_OK);
    CHECK_STR(b.ptr, "GET\n/\n\nhost:h\nx-a:one two three,b\n\nhost;x-a\nUNSIGNED-PAYLOAD");
    fl_buf_reset(&b);
    r = mkreq("GET", "/a%zz", NULL, &hs);
    CHECK_EQ(fl_sigv4_canonical_request(&r, "s3", "host", "x", false, &b), FL_ERR_INVALID);
    fl_buf_free(&b);
}

/* Signs a request with our signer (vectors above establish it), then verifies. */
static fl_err_t sign_verify(const char *service, const char *path, const char *query,
                            const char *headers, const char *payload, const char *akid,
                            int64_t t, int64_t now, const char *body_hex, const char *wrong,
                            fl_sigv4_auth_t *auth, fl_sigv4_error_t *err, const char *az_override)
{
    hdrs_t hs;
    hdrs_set(&hs, headers);
    const char *secret = !strcmp(akid, "AK/WITH/SLASH") ? "slashsecret"
                         : !strcmp(akid, SUITE_AKID) ? SUITE_SECRET : S3_SECRET;
    fl_sigv4_sign_in_t in = { "PUT", path, query, hs.h, hs.n, payload, akid, secret, "eu-west-1",
                              service, t };
    fl_buf_t az;
    char date[17];
    fl_buf_init(&az, 0);
    fl_sigv4_sign(&in, &az, date);
    hdrs_add(&hs, "x-amz-date", date);
    hdrs_add(&hs, "authorization", az_override ? az_override : az.ptr);
    fl_sigv4_req_t r = mkreq("PUT", path, query, &hs);
    fl_sigv4_cfg_t cfg = cfg_at(now, wrong);
    fl_err_t e = fl_sigv4_verify(&r, &cfg, body_hex, auth, err);
    fl_buf_free(&az);
    return e;
}

FL_TEST(sigv4_verify_cases)
{
    fl_sigv4_auth_t a;
    fl_sigv4_error_t err;
    int64_t t = 1735689600; /* 20250101T000000Z */
    const char *H = "host:localhost:9000\nx-amz-content-sha256:UNSIGNED-PAYLOAD\n";
    CHECK_EQ(sign_verify("s3", "/b/k", NULL, H, "UNSIGNED-PAYLOAD", S3_AKID, t, t, NULL, NULL,
                         &a, &err, NULL), FL_OK);
    CHECK_EQ(a.payload_mode, FL_PAYLOAD_UNSIGNED);
    CHECK_STR(a.scope, "20250101/eu-west-1/s3/aws4_request");
    /* Skew: 15 minutes either way is fine, one second more is not. */
    CHECK_EQ(sign_verify("s3", "/b/k", NULL, H, "UNSIGNED-PAYLOAD", S3_AKID, t, t + 900, NULL,
                         NULL, &a, &err, NULL), FL_OK);
    CHECK_EQ(sign_verify("s3", "/b/k", NULL, H, "UNSIGNED-PAYLOAD", S3_AKID, t, t + 901, NULL,
                         NULL, &a, &err, NULL), FL_ERR_AUTH);
    CHECK_STR(err.code, "RequestTimeTooSkewed");
    CHECK_EQ(err.status, 403);
    CHECK_EQ(sign_verify("s3", "/b/k", NULL, H, "UNSIGNED-PAYLOAD", S3_AKID, t, t - 901, NULL,
                         NULL, &a, &err, NULL), FL_ERR_AUTH);
    CHECK_STR(err.code, "RequestTimeTooSkewed");
    /* Wrong secret and unknown key. */
    CHECK_EQ(sign_verify("s3", "/b/k", NULL, H, "UNSIGNED-PAYLOAD", S3_AKID, t, t, NULL, "nope",
                         &a, &err, NULL), FL_ERR_AUTH);
    CHECK_STR(err.code, "SignatureDoesNotMatch");
    CHECK_EQ(sign_verify("s3", "/b/k", NULL, H, "UNSIGNED-PAYLOAD", S3_AKID, t, t, NULL, NULL,
                         &a, &err, "AWS4-HMAC-SHA256 Credential=NOPE/20250101/eu-west-1/s3/"
                         "aws4_request, SignedHeaders=host;x-amz-date, Signature="
                         EMPTY_HASH), FL_ERR_AUTH);
    CHECK_STR(err.code, "InvalidAccessKeyId");
    /* Access keys may contain '/'; ',' separators without spaces. */
    CHECK_EQ(sign_verify("s3", "/b/k", NULL, H, "UNSIGNED-PAYLOAD", "AK/WITH/SLASH", t, t, NULL,
                         NULL, &a, &err, NULL), FL_OK);
    CHECK_STR(a.akid, "AK/WITH/SLASH");
    {
        hdrs_t hs;
        hdrs_set(&hs, H);
        fl_sigv4_sign_in_t in = { "PUT", "/b/k", NULL, hs.h, hs.n, "UNSIGNED-PAYLOAD", S3_AKID,
                                  S3_SECRET, "eu-west-1", "s3", t };
        fl_buf_t az, tight;
        char date[17];
        fl_buf_init(&az, 0);
        fl_buf_init(&tight, 0);
        fl_sigv4_sign(&in, &az, date);
        for (size_t i = 0; i < az.len; i++)
            if (!(az.ptr[i] == ' ' && i > 0 && az.ptr[i - 1] == ',')) fl_buf_addc(&tight, az.ptr[i]);
        CHECK_EQ(sign_verify("s3", "/b/k", NULL, H, "UNSIGNED-PAYLOAD", S3_AKID, t, t, NULL, NULL,
                             &a, &err, tight.ptr), FL_OK);
        fl_buf_free(&az);
        fl_buf_free(&tight);
    }
    /* Malformed headers. */
    static const char *const bad[] = {
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20250101/eu-west-1/s3/aws4_request",
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20250101/eu-west-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=abc",
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20250101/eu-west-1/s3/aws5_request, "
        "SignedHeaders=host;x-amz-date, Signature=" EMPTY_HASH,
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20250101/eu-west-1/sts/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=" EMPTY_HASH,
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20250102/eu-west-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=" EMPTY_HASH,
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20250101/eu-west-1/s3/aws4_request, "
        "SignedHeaders=x-amz-date, Signature=" EMPTY_HASH,
        "AWS4-HMAC-SHA256 Credential=20250101/eu-west-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=" EMPTY_HASH,
        "AWS4-HMAC-SHA256 Credential=A/20250101/eu-west-1/s3/aws4_request, SignedHeaders=host, "
        "Signature=" EMPTY_HASH ", Extra=1",
        "AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=",
        "AWS4-HMAC-SHA256",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fl_err_t e = sign_verify("s3", "/b/k", NULL, H, "UNSIGNED-PAYLOAD", S3_AKID, t, t, NULL,
                                 NULL, &a, &err, bad[i]);
        if (e != FL_ERR_INVALID || err.status != 400) FL_FAIL("bad[%zu]: %d %s", i, e, err.code);
    }
    /* An unsigned x-amz-meta-* header. */
    {
        hdrs_t hs;
        hdrs_set(&hs, H);
        fl_sigv4_sign_in_t in = { "PUT", "/b/k", NULL, hs.h, hs.n, "UNSIGNED-PAYLOAD", S3_AKID,
                                  S3_SECRET, "eu-west-1", "s3", t };
        fl_buf_t az;
        char date[17];
        fl_buf_init(&az, 0);
        fl_sigv4_sign(&in, &az, date);
        hdrs_add(&hs, "x-amz-date", date);
        hdrs_add(&hs, "authorization", az.ptr);
        fl_sigv4_req_t r = mkreq("PUT", "/b/k", NULL, &hs);
        fl_sigv4_cfg_t cfg = cfg_at(t, NULL);
        CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &a, &err), FL_OK);
        CHECK(fl_sigv4_present(&r));
        hdrs_add(&hs, "x-amz-meta-color", "red");
        r = mkreq("PUT", "/b/k", NULL, &hs);
        CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &a, &err), FL_ERR_AUTH);
        CHECK_STR(err.code, "AccessDenied");
        fl_buf_free(&az);
    }
    /* Signed x-amz-meta-* header is fine; tampering with it is not. */
    CHECK_EQ(sign_verify("s3", "/b/k", "uploads", "host:h\nx-amz-meta-a: 1\nx-amz-content-sha256:"
                         EMPTY_HASH "\n", EMPTY_HASH, S3_AKID, t, t, NULL, NULL, &a, &err, NULL), FL_OK);
    CHECK_EQ(a.payload_mode, FL_PAYLOAD_SHA256);
    CHECK_STR(a.payload_sha256, EMPTY_HASH);
}

FL_TEST(sigv4_payload_modes)
{
    fl_sigv4_auth_t a;
    fl_sigv4_error_t err;
    int64_t t = 1735689600;
    char hex[65], b64[64], hdr[256];
    unsigned char d[32];
    const char *body = "{\"name\":\"ns1\"}";
    fl_sha256(body, strlen(body), d);
    fl_hex(d, 32, hex);
    fl_base64(d, 32, b64);
    /* Java: base64 in the header, hex in the canonical request. */
    snprintf(hdr, sizeof hdr, "host:localhost:8181\ncontent-type:application/json\n"
             "x-amz-content-sha256:%s\n", b64);
    CHECK_EQ(sign_verify("s3tables", "/iceberg/v1/arn%3Aaws%3As3tables%3Aus-east-1%3A1%3Abucket%2Fb"
                         "/namespaces", NULL, hdr, hex, S3_AKID, t, t, NULL, NULL, &a, &err, NULL),
             FL_OK);
    CHECK_EQ(a.payload_mode, FL_PAYLOAD_SHA256);
    CHECK_STR(a.payload_sha256, hex);
    /* PyIceberg/botocore: no header; the caller passes the body hash. */
    CHECK_EQ(sign_verify("s3tables", "/iceberg/v1/config", "warehouse=arn%3Aaws", "host:h\n", hex,
                         S3_AKID, t, t, hex, NULL, &a, &err, NULL), FL_OK);
    CHECK_STR(a.payload_sha256, hex);
    CHECK_EQ(sign_verify("s3tables", "/iceberg/v1/config", NULL, "host:h\n", hex, S3_AKID, t, t,
                         NULL, NULL, &a, &err, NULL), FL_ERR_AUTH);
    /* No header, empty body: the empty hash, for s3 as well. */
    CHECK_EQ(sign_verify("s3", "/b", NULL, "host:h\n", EMPTY_HASH, S3_AKID, t, t, NULL, NULL, &a,
                         &err, NULL), FL_OK);
    CHECK_EQ(a.payload_mode, FL_PAYLOAD_SHA256);
    CHECK_STR(a.payload_sha256, EMPTY_HASH);
    /* Streaming modes. */
    static const struct { const char *v; fl_payload_mode_t m; } modes[] = {
        { "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", FL_PAYLOAD_STREAMING_SIGNED },
        { "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", FL_PAYLOAD_STREAMING_SIGNED_TRAILER },
        { "STREAMING-UNSIGNED-PAYLOAD-TRAILER", FL_PAYLOAD_STREAMING_UNSIGNED_TRAILER },
    };
    for (size_t i = 0; i < 3; i++) {
        snprintf(hdr, sizeof hdr, "host:h\nx-amz-content-sha256:%s\n", modes[i].v);
        CHECK_EQ(sign_verify("s3", "/b/k", NULL, hdr, modes[i].v, S3_AKID, t, t, NULL, NULL, &a,
                             &err, NULL), FL_OK);
        CHECK_EQ(a.payload_mode, modes[i].m);
    }
    /* Upper-case hex is accepted and normalised. */
    char up[65];
    for (int i = 0; i < 65; i++) up[i] = (char)(hex[i] >= 'a' && hex[i] <= 'f' ? hex[i] - 32 : hex[i]);
    snprintf(hdr, sizeof hdr, "host:h\nx-amz-content-sha256:%s\n", up);
    CHECK_EQ(sign_verify("s3", "/b/k", NULL, hdr, up, S3_AKID, t, t, NULL, NULL, &a, &err, NULL), FL_OK);
    CHECK_STR(a.payload_sha256, hex);
    /* Garbage. */
    CHECK_EQ(sign_verify("s3", "/b/k", NULL, "host:h\nx-amz-content-sha256:nope\n", "nope", S3_AKID,
                         t, t, NULL, NULL, &a, &err, NULL), FL_ERR_INVALID);
    CHECK_STR(err.code, "InvalidArgument");
}

/* ---- aws-chunked ---- */

typedef struct sink {
    size_t n;
    bool all_a;
    fl_buf_t *keep;
} sink_t;

static int sink_out(void *ud, const void *p, size_t n)
{
    sink_t *s = ud;
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != 'a') s->all_a = false;
    if (s->keep) fl_buf_add(s->keep, p, n);
    s->n += n;
    return 0;
}

static void chunk_sig(const unsigned char key[32], const char *date, const char *scope,
                      const char *prev, const void *data, size_t n, char out[65])
{
    char h[65], sts[512];
    unsigned char mac[32];
    fl_sha256_hex(data, n, h);
    int k = snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256-PAYLOAD\n%s\n%s\n%s\n" EMPTY_HASH "\n%s",
                     date, scope, prev, h);
    fl_hmac_sha256(key, 32, sts, (size_t)k, mac);
    fl_hex(mac, 32, out);
}

static void trailer_sig(const unsigned char key[32], const char *date, const char *scope,
                        const char *prev, const char *lines, char out[65])
{
    char h[65], sts[512];
    unsigned char mac[32];
    fl_sha256_hex(lines, strlen(lines), h);
    int k = snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256-TRAILER\n%s\n%s\n%s\n%s", date, scope, prev, h);
    fl_hmac_sha256(key, 32, sts, (size_t)k, mac);
    fl_hex(mac, 32, out);
}

/* Feeds body in pseudo-random splits (max_split 1 = a byte at a time). */
static fl_err_t feed_split(fl_awschunk_t *d, const char *body, size_t n, size_t max_split,
                           uint32_t seed, sink_t *s)
{
    size_t pos = 0;
    while (pos < n) {
        seed = seed * 1103515245u + 12345u;
        size_t k = 1 + (seed >> 8) % max_split;
        if (k > n - pos) k = n - pos;
        fl_err_t e = fl_awschunk_feed(d, body + pos, k, sink_out, s);
        if (e) return e;
        pos += k;
    }
    return fl_awschunk_finish(d);
}

#define CHUNK_HDRS "content-encoding:aws-chunked\ncontent-length:66824\nhost:s3.amazonaws.com\n" \
    "x-amz-content-sha256:STREAMING-AWS4-HMAC-SHA256-PAYLOAD\nx-amz-date:20130524T000000Z\n" \
    "x-amz-decoded-content-length:66560\nx-amz-storage-class:REDUCED_REDUNDANCY\n"
#define CHUNK_SH "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;" \
    "x-amz-decoded-content-length;x-amz-storage-class"
#define SEED "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
#define SIG1 "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
#define SIG2 "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
#define SIG3 "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"

static char *chunk_body(size_t *len)
{
    fl_buf_t b;
    fl_buf_init(&b, 0);
    char *a = malloc(65536);
    memset(a, 'a', 65536);
    fl_buf_adds(&b, "10000;chunk-signature=" SIG1 "\r\n");
    fl_buf_add(&b, a, 65536);
    fl_buf_adds(&b, "\r\n400;chunk-signature=" SIG2 "\r\n");
    fl_buf_add(&b, a, 1024);
    fl_buf_adds(&b, "\r\n0;chunk-signature=" SIG3 "\r\n\r\n");
    free(a);
    *len = b.len;
    return fl_buf_steal(&b);
}

static bool chunk_auth(int *fl_failed_, fl_sigv4_auth_t *auth)
{
    hdrs_t hs;
    char h[65];
    const char *auth_hdr = "AWS4-HMAC-SHA256 Credential=" S3_AKID "/20130524/us-east-1/s3/"
        "aws4_request,SignedHeaders=" CHUNK_SH ",Signature=" SEED;
    hdrs_set(&hs, CHUNK_HDRS);
    fl_sigv4_req_t r = mkreq("PUT", "/examplebucket/chunkObject.txt", NULL, &hs);
    creq_hash(&r, "s3", CHUNK_SH, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", false, h);
    CHECK_STR(h, "cee3fed04b70f867d036f722359b0b1f2f0e5dc0efadbc082b76c4c60e316455");
    hdrs_add(&hs, "authorization", auth_hdr);
    r = mkreq("PUT", "/examplebucket/chunkObject.txt", NULL, &hs);
    fl_sigv4_cfg_t cfg = cfg_at(T("20130524T000000Z") + 1, NULL);
    fl_sigv4_error_t err;
    fl_err_t e = fl_sigv4_verify(&r, &cfg, NULL, auth, &err);
    CHECK_EQ(e, FL_OK);
    CHECK_EQ(auth->payload_mode, FL_PAYLOAD_STREAMING_SIGNED);
    CHECK_STR(auth->seed_signature, SEED);
    return e == FL_OK;
}

FL_TEST(awschunk_signed_vector)
{
    fl_sigv4_auth_t auth;
    if (!chunk_auth(fl_failed_, &auth)) return;
    /* The chain, recomputed independently of the decoder. */
    char s1[65], s2[65], s3[65];
    char *a = malloc(65536);
    memset(a, 'a', 65536);
    chunk_sig(auth.signing_key, auth.amz_date, auth.scope, SEED, a, 65536, s1);
    chunk_sig(auth.signing_key, auth.amz_date, auth.scope, s1, a, 1024, s2);
    chunk_sig(auth.signing_key, auth.amz_date, auth.scope, s2, "", 0, s3);
    free(a);
    CHECK_STR(s1, SIG1);
    CHECK_STR(s2, SIG2);
    CHECK_STR(s3, SIG3);

    size_t n;
    char *body = chunk_body(&n);
    CHECK_EQ(n, 66824);
    static const size_t splits[] = { 1, 7, 100, 5000, 70000 };
    for (size_t i = 0; i < sizeof splits / sizeof splits[0]; i++) {
        fl_awschunk_t *d = fl_awschunk_new(&auth, NULL, 66560);
        REQUIRE(d);
        sink_t s = { 0, true, NULL };
        CHECK_EQ(feed_split(d, body, n, splits[i], (uint32_t)i + 1, &s), FL_OK);
        CHECK_EQ(s.n, 66560);
        CHECK(s.all_a);
        CHECK_EQ(fl_awschunk_trailer(d, NULL), FL_CK_NONE);
        fl_awschunk_free(d);
    }
    /* Tampered payload byte. */
    body[100] = 'b';
    fl_awschunk_t *d = fl_awschunk_new(&auth, NULL, 66560);
    sink_t s = { 0, true, NULL };
    CHECK_EQ(feed_split(d, body, n, 999, 3, &s), FL_ERR_AUTH);
    CHECK_EQ(fl_awschunk_feed(d, "x", 1, sink_out, &s), FL_ERR_AUTH); /* sticky */
    CHECK_EQ(fl_awschunk_finish(d), FL_ERR_AUTH);
    fl_awschunk_free(d);
    body[100] = 'a';
    /* Tampered signature. */
    body[30] = body[30] == '0' ? '1' : '0';
    d = fl_awschunk_new(&auth, NULL, 66560);
    CHECK_EQ(feed_split(d, body, n, 999, 3, &s), FL_ERR_AUTH);
    fl_awschunk_free(d);
    body[30] = SIG1[8];
    /* Truncated at every interesting place. */
    static const size_t cuts[] = { 0, 5, 88, 88 + 65536, 88 + 65536 + 1, 66824 - 86, 66824 - 2, 66824 - 1 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        d = fl_awschunk_new(&auth, NULL, 66560);
        s = (sink_t){ 0, true, NULL };
        fl_err_t e = feed_split(d, body, cuts[i], 4096, 9, &s);
        if (e != FL_ERR_INCOMPLETE) FL_FAIL("cut %zu: %d", cuts[i], e);
        fl_awschunk_free(d);
    }
    /* Wrong decoded length: shorter payload than declared, and longer. */
    d = fl_awschunk_new(&auth, NULL, 66561);
    CHECK_EQ(feed_split(d, body, n, 4096, 1, &s), FL_ERR_INCOMPLETE);
    fl_awschunk_free(d);
    d = fl_awschunk_new(&auth, NULL, 66000);
    CHECK_EQ(feed_split(d, body, n, 4096, 1, &s), FL_ERR_TOO_LARGE);
    fl_awschunk_free(d);
    /* Trailing garbage. */
    d = fl_awschunk_new(&auth, NULL, 66560);
    CHECK_EQ(fl_awschunk_feed(d, body, n, sink_out, &s), FL_OK);
    CHECK_EQ(fl_awschunk_feed(d, "\r\n", 2, sink_out, &s), FL_ERR_PROTO);
    fl_awschunk_free(d);
    /* Wrong modes. */
    fl_sigv4_auth_t plain = auth;
    plain.payload_mode = FL_PAYLOAD_UNSIGNED;
    CHECK(fl_awschunk_new(&plain, NULL, -1) == NULL);
    CHECK(fl_awschunk_new(&auth, "x-amz-checksum-crc32", -1) == NULL); /* no trailer in this mode */
    free(body);
}

FL_TEST(awschunk_unsigned_trailer)
{
    fl_sigv4_auth_t auth;
    memset(&auth, 0, sizeof auth);
    auth.payload_mode = FL_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
    CHECK(fl_awschunk_new(&auth, "x-amz-checksum-nope", -1) == NULL);
    /* What botocore sends. */
    const char *body = "b\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n";
    for (size_t split = 1; split < 8; split++) {
        fl_awschunk_t *d = fl_awschunk_new(&auth, "x-amz-checksum-crc32", 11);
        REQUIRE(d);
        fl_buf_t keep;
        fl_buf_init(&keep, 0);
        sink_t s = { 0, false, &keep };
        CHECK_EQ(feed_split(d, body, strlen(body), split, 5, &s), FL_OK);
        CHECK_STR(keep.ptr, "hello world");
        const char *v = NULL;
        CHECK_EQ(fl_awschunk_trailer(d, &v), FL_CK_CRC32);
        CHECK_STR(v, "DUoRhQ==");
        fl_buf_free(&keep);
        fl_awschunk_free(d);
    }
    struct { const char *body; const char *trailer; int64_t len; fl_err_t want; } cases[] = {
        /* Missing final CRLF right after the trailer line: tolerated. */
        { "b\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n", "x-amz-checksum-crc32", 11, FL_OK },
        /* Chunk extensions tolerated; several chunks; other algorithms. */
        { "5;foo=bar\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32c:yZRlqg==\r\n\r\n",
          "x-amz-checksum-crc32c", -1, FL_OK },
        { "b\r\nhello world\r\n0\r\nx-amz-checksum-sha256:uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=\r\n\r\n",
          "x-amz-checksum-sha256", 11, FL_OK },
        /* No trailer announced, none sent. */
        { "b\r\nhello world\r\n0\r\n\r\n", NULL, 11, FL_OK },
        /* Bad checksum. */
        { "b\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoRhA==\r\n\r\n", "x-amz-checksum-crc32", 11, FL_ERR_DIGEST },
        /* Announced but missing. */
        { "b\r\nhello world\r\n0\r\n\r\n", "x-amz-checksum-crc32", 11, FL_ERR_PROTO },
        /* Different algorithm than announced. */
        { "b\r\nhello world\r\n0\r\nx-amz-checksum-crc32c:yZRlqg==\r\n\r\n", "x-amz-checksum-crc32", 11, FL_ERR_PROTO },
        /* Truncated. */
        { "b\r\nhello wor", "x-amz-checksum-crc32", 11, FL_ERR_INCOMPLETE },
        { "b\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUo", "x-amz-checksum-crc32", 11, FL_ERR_INCOMPLETE },
        { "b\r\nhello world\r\n", "x-amz-checksum-crc32", 11, FL_ERR_INCOMPLETE },
        /* Framing errors. */
        { "b\r\nhello worldXX0\r\n\r\n", NULL, -1, FL_ERR_PROTO },
        { "zz\r\n", NULL, -1, FL_ERR_PROTO },
        { "\r\n", NULL, -1, FL_ERR_PROTO },
        { "b\nhello world\r\n0\r\n\r\n", NULL, -1, FL_ERR_PROTO },
        { "1000001\r\n", NULL, -1, FL_ERR_TOO_LARGE },
        { "b\r\nhello world\r\n0\r\nbad trailer\r\n\r\n", NULL, -1, FL_ERR_PROTO },
        { "b\r\nhello world\r\n0\r\nx-amz-trailer-signature:" EMPTY_HASH "\r\n\r\n", NULL, -1, FL_ERR_PROTO },
        /* Decoded length. */
        { "b\r\nhello world\r\n0\r\n\r\n", NULL, 12, FL_ERR_INCOMPLETE },
        { "b\r\nhello world\r\n0\r\n\r\n", NULL, 10, FL_ERR_TOO_LARGE },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (size_t split = 1; split <= 64; split *= 4) {
            fl_awschunk_t *d = fl_awschunk_new(&auth, cases[i].trailer, cases[i].len);
            REQUIRE(d);
            sink_t s = { 0, false, NULL };
            fl_err_t e = feed_split(d, cases[i].body, strlen(cases[i].body), split, 7, &s);
            if (e != cases[i].want) FL_FAIL("case %zu split %zu: %d (%s)", i, split, e, fl_awschunk_errmsg(d));
            fl_awschunk_free(d);
        }
    }
    /* A long size line is capped. */
    fl_awschunk_t *d = fl_awschunk_new(&auth, NULL, -1);
    char *ext = malloc(10000);
    memset(ext, 'x', 10000);
    ext[0] = '1';
    ext[1] = ';';
    CHECK_EQ(fl_awschunk_feed(d, ext, 10000, NULL, NULL), FL_ERR_TOO_LARGE);
    fl_awschunk_free(d);
    memset(ext, '0', 10000);
    d = fl_awschunk_new(&auth, NULL, -1);
    CHECK_EQ(fl_awschunk_feed(d, ext, 10000, NULL, NULL), FL_ERR_TOO_LARGE);
    fl_awschunk_free(d);
    free(ext);
}

FL_TEST(awschunk_signed_trailer)
{
    fl_sigv4_auth_t auth;
    memset(&auth, 0, sizeof auth);
    auth.payload_mode = FL_PAYLOAD_STREAMING_SIGNED_TRAILER;
    strcpy(auth.amz_date, "20250101T000000Z");
    strcpy(auth.scope, "20250101/us-east-1/s3/aws4_request");
    strcpy(auth.seed_signature, "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e");
    fl_sigv4_signing_key(S3_SECRET, "20250101", "us-east-1", "s3", auth.signing_key);
    char s1[65], s2[65], st[65], bad_st[65];
    chunk_sig(auth.signing_key, auth.amz_date, auth.scope, auth.seed_signature, "hello world", 11, s1);
    chunk_sig(auth.signing_key, auth.amz_date, auth.scope, s1, "", 0, s2);
    trailer_sig(auth.signing_key, auth.amz_date, auth.scope, s2, "x-amz-checksum-crc32:DUoRhQ==\n", st);
    trailer_sig(auth.signing_key, auth.amz_date, auth.scope, s2, "x-amz-checksum-crc32:DUoRhA==\n", bad_st);
    char body[1024], body2[1024], body3[1024], body4[1024];
    snprintf(body, sizeof body, "b;chunk-signature=%s\r\nhello world\r\n0;chunk-signature=%s\r\n"
             "x-amz-checksum-crc32:DUoRhQ==\r\nx-amz-trailer-signature:%s\r\n\r\n", s1, s2, st);
    for (size_t split = 1; split < 300; split += 37) {
        fl_awschunk_t *d = fl_awschunk_new(&auth, "x-amz-checksum-crc32", 11);
        sink_t s = { 0, false, NULL };
        CHECK_EQ(feed_split(d, body, strlen(body), split, 11, &s), FL_OK);
        CHECK_EQ(s.n, 11);
        const char *v;
        CHECK_EQ(fl_awschunk_trailer(d, &v), FL_CK_CRC32);
        fl_awschunk_free(d);
    }
    /* Trailer signature over a different checksum line: the checksum fails first. */
    snprintf(body2, sizeof body2, "b;chunk-signature=%s\r\nhello world\r\n0;chunk-signature=%s\r\n"
             "x-amz-checksum-crc32:DUoRhA==\r\nx-amz-trailer-signature:%s\r\n\r\n", s1, s2, bad_st);
    fl_awschunk_t *d = fl_awschunk_new(&auth, "x-amz-checksum-crc32", 11);
    sink_t s = { 0, false, NULL };
    CHECK_EQ(feed_split(d, body2, strlen(body2), 13, 1, &s), FL_ERR_DIGEST);
    fl_awschunk_free(d);
    /* Right checksum, wrong trailer signature. */
    snprintf(body3, sizeof body3, "b;chunk-signature=%s\r\nhello world\r\n0;chunk-signature=%s\r\n"
             "x-amz-checksum-crc32:DUoRhQ==\r\nx-amz-trailer-signature:%s\r\n\r\n", s1, s2, bad_st);
    d = fl_awschunk_new(&auth, "x-amz-checksum-crc32", 11);
    CHECK_EQ(feed_split(d, body3, strlen(body3), 13, 1, &s), FL_ERR_AUTH);
    fl_awschunk_free(d);
    /* Missing trailer signature. */
    snprintf(body4, sizeof body4, "b;chunk-signature=%s\r\nhello world\r\n0;chunk-signature=%s\r\n"
             "x-amz-checksum-crc32:DUoRhQ==\r\n\r\n", s1, s2);
    d = fl_awschunk_new(&auth, "x-amz-checksum-crc32", 11);
    CHECK_EQ(feed_split(d, body4, strlen(body4), 13, 1, &s), FL_ERR_AUTH);
    fl_awschunk_free(d);
    /* Missing chunk signature. */
    d = fl_awschunk_new(&auth, "x-amz-checksum-crc32", 11);
    CHECK_EQ(feed_split(d, "b\r\nhello world\r\n", 16, 13, 1, &s), FL_ERR_PROTO);
    fl_awschunk_free(d);
}

/* More aws-sig-v4-test-suite cases (service "service", 20150830T123600Z); the
 * signatures are the suite's .authz values. */
FL_TEST(sigv4_suite_more)
{
    static const struct {
        const char *name, *method, *path, *query, *headers, *body, *sh, *sig;
    } v[] = {
        { "get-utf8", "GET", "/\xe1\x88\xb4", NULL, "", "", "host;x-amz-date",
          "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85" },
        { "get-space", "GET", "/example space/", NULL, "", "", "host;x-amz-date",
          "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741" },
        { "get-slash-dot-slash", "GET", "/./", NULL, "", "", "host;x-amz-date",
          "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
        { "get-relative-relative", "GET", "/example1/example2/../..", NULL, "", "", "host;x-amz-date",
          "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
        { "get-vanilla-query-order-key-case", "GET", "/", "Param2=value2&Param1=value1", "", "",
          "host;x-amz-date", "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500" },
        { "get-vanilla-utf8-query", "GET", "/", "\xe1\x88\xb4=bar", "", "", "host;x-amz-date",
          "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04" },
        { "get-vanilla-query-unreserved", "GET", "/",
          "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz="
          "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "", "",
          "host;x-amz-date", "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197" },
        { "get-header-value-multiline", "GET", "/", NULL, "my-header1:value1\n  value2\n     value3",
          "", "host;my-header1;x-amz-date",
          "cfd34249e4b1c8d6b91ef74165d41a32e5fab3306300901bb65a51a73575eefd" },
        { "get-vanilla-with-session-token", "GET", "/", NULL,
          "x-amz-security-token:6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267", "",
          "host;x-amz-date;x-amz-security-token",
          "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8" },
        { "post-x-www-form-urlencoded", "POST", "/", NULL,
          "content-type:application/x-www-form-urlencoded", "Param1=value1",
          "content-type;host;x-amz-date",
          "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a" },
    };
    int64_t t = T("20150830T123600Z");
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        hdrs_t hs;
        memset(&hs, 0, sizeof hs);
        hs.h[hs.n++] = (fl_http_header_t){ "host", 4, "example.amazonaws.com", 21 };
        hs.h[hs.n++] = (fl_http_header_t){ "x-amz-date", 10, "20150830T123600Z", 16 };
        if (v[i].headers[0]) {
            const char *c = strchr(v[i].headers, ':');
            hs.h[hs.n++] = (fl_http_header_t){ v[i].headers, (size_t)(c - v[i].headers), c + 1,
                                                strlen(c + 1) };
        }
        char bh[65], az[512];
        fl_sha256_hex(v[i].body, strlen(v[i].body), bh);
        /* Sign. */
        fl_sigv4_sign_in_t in = { v[i].method, v[i].path, v[i].query, hs.h, hs.n, bh, SUITE_AKID,
                                  SUITE_SECRET, "us-east-1", "service", t };
        fl_buf_t out;
        char date[17];
        fl_buf_init(&out, 0);
        CHECK_EQ(fl_sigv4_sign(&in, &out, date), FL_OK);
        snprintf(az, sizeof az, "AWS4-HMAC-SHA256 Credential=" SUITE_AKID "/20150830/us-east-1/"
                 "service/aws4_request, SignedHeaders=%s, Signature=%s", v[i].sh, v[i].sig);
        if (!out.ptr || strcmp(out.ptr, az)) FL_FAIL("%s: signed %s", v[i].name, out.ptr);
        fl_buf_free(&out);
        /* Verify. */
        hs.h[hs.n++] = (fl_http_header_t){ "authorization", 13, az, strlen(az) };
        fl_sigv4_req_t r = mkreq(v[i].method, v[i].path, v[i].query, &hs);
        fl_sigv4_cfg_t cfg = cfg_at(t, NULL);
        fl_sigv4_auth_t a;
        fl_sigv4_error_t err;
        fl_err_t e = fl_sigv4_verify(&r, &cfg, bh, &a, &err);
        if (e) FL_FAIL("%s: verify %d %s", v[i].name, e, err.code);
    }
}

/* Issue 9: unsigned x-amz-* headers, credential-scope region, head-only check. */
FL_TEST(sigv4_unsigned_headers_region_head)
{
    int64_t t = 1735689600; /* 20250101T000000Z */
    const char *H = "host:localhost:9000\nx-amz-content-sha256:UNSIGNED-PAYLOAD\n";
    hdrs_t hs;
    hdrs_set(&hs, H);
    fl_sigv4_sign_in_t in = { "PUT", "/b/k", NULL, hs.h, hs.n, "UNSIGNED-PAYLOAD", S3_AKID,
                              S3_SECRET, "eu-west-1", "s3", t };
    fl_buf_t az;
    char date[17];
    fl_buf_init(&az, 0);
    CHECK_EQ(fl_sigv4_sign(&in, &az, date), FL_OK);
    hdrs_add(&hs, "x-amz-date", date);
    hdrs_add(&hs, "authorization", az.ptr);
    fl_sigv4_auth_t a;
    fl_sigv4_error_t err;
    fl_sigv4_cfg_t cfg = cfg_at(t, NULL);
    fl_sigv4_req_t r = mkreq("PUT", "/b/k", NULL, &hs);
    CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &a, &err), FL_OK);
    CHECK_EQ(fl_sigv4_check_head(&r, &cfg, &err), FL_OK);
    CHECK(!fl_sigv4_body_signed(&r));
    /* the region must be the server's */
    cfg.region = "eu-west-1";
    CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &a, &err), FL_OK);
    cfg.region = "us-east-1";
    CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &a, &err), FL_ERR_INVALID);
    CHECK_STR(err.code, "AuthorizationHeaderMalformed");
    CHECK_EQ(err.status, 400);
    CHECK_STR(err.message, "The authorization header is malformed; the region 'eu-west-1' is wrong; "
              "expecting 'us-east-1'");
    CHECK_STR(err.detail_name, "Region");
    CHECK_STR(err.detail_value, "us-east-1");
    CHECK_EQ(fl_sigv4_check_head(&r, &cfg, &err), FL_ERR_INVALID);
    cfg.region = NULL;
    /* an unsigned x-amz-* header is refused, before the signature is compared */
    hdrs_add(&hs, "x-amz-copy-source", "/other/secret");
    hdrs_add(&hs, "x-amz-meta-a", "1");
    hdrs_add(&hs, "x-amzn-trace-id", "not x-amz-");
    r = mkreq("PUT", "/b/k", NULL, &hs);
    CHECK_EQ(fl_sigv4_verify(&r, &cfg, NULL, &a, &err), FL_ERR_AUTH);
    CHECK_STR(err.code, "AccessDenied");
    CHECK_EQ(err.status, 403);
    CHECK_STR(err.detail_name, "HeadersNotSigned");
    CHECK_STR(err.detail_value, "x-amz-copy-source, x-amz-meta-a");
    CHECK_EQ(fl_sigv4_check_head(&r, &cfg, &err), FL_ERR_AUTH);
    /* a wrong secret passes the head check (the signature is not compared) */
    hs.n -= 3;
    r = mkreq("PUT", "/b/k", NULL, &hs);
    fl_sigv4_cfg_t wrong = cfg_at(t, "nope");
    CHECK_EQ(fl_sigv4_check_head(&r, &wrong, &err), FL_OK);
    CHECK_EQ(fl_sigv4_verify(&r, &wrong, NULL, &a, &err), FL_ERR_AUTH);
    fl_buf_free(&az);
}
