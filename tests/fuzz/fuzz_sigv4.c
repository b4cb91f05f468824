/* Fuzz target: SigV4 verification over an arbitrary request view.
 * Input: byte 0 = flags, then '\n'-separated lines: method, raw path, raw
 * query, then "name:value" headers (names lower-cased here, as the HTTP parser
 * does). Flag bit 0: no query at all; bit 1: also sign the request with our
 * signer and verify the result (exercises the success path); bit 2: verify
 * with a body hash; bit 3: an OSS4 resource from the caller (tables flavour)
 * and the "s3" service for the extra canonical request. Authorization headers
 * and query parameters of every dialect (AWS4-HMAC-SHA256, OSS4-HMAC-SHA256,
 * OSS V1 "OSS akid:sig" and OSSAccessKeyId/Expires/Signature)
 * reach the one verifier. The verifier must never crash or leak; its answer
 * is free. */
#include "auth/sigv4.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static bool lookup(void *ud, const char *akid, char *secret_out)
{
    if (akid[0] == 'X') return false;
    strcpy(secret_out, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
    return true;
}

static int sink(void *ud, const void *p, size_t n)
{
    (void)ud;
    (void)p;
    (void)n;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const services[] = { "s3", "s3tables", "service", NULL };
    enum { MAXH = 40 };
    if (size < 1 || size > 64 * 1024) return 0;
    unsigned flags = data[0];
    char *buf = malloc(size);
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = 0;
    size_t len = size - 1;
    const char *lines[MAXH + 3];
    size_t lens[MAXH + 3], nl = 0;
    for (size_t i = 0, s = 0; i <= len && nl < MAXH + 3; i++) {
        if (i == len || buf[i] == '\n') {
            lines[nl] = buf + s;
            lens[nl++] = i - s;
            s = i + 1;
        }
    }
    fl_http_header_t h[MAXH + 1];
    size_t nh = 0;
    for (size_t i = 3; i < nl; i++) {
        char *l = (char *)lines[i];
        char *c = memchr(l, ':', lens[i]);
        if (!c) continue;
        for (char *x = l; x < c; x++)
            if (*x >= 'A' && *x <= 'Z') *x += 32;
        h[nh++] = (fl_http_header_t){ l, (size_t)(c - l), c + 1, lens[i] - (size_t)(c - l) - 1 };
    }
    char method[16] = "GET";
    if (nl > 0 && lens[0] && lens[0] < sizeof method) {
        memcpy(method, lines[0], lens[0]);
        method[lens[0]] = 0;
    }
    fl_sigv4_req_t r = {
        .method = method,
        .raw_path = nl > 1 ? lines[1] : "/", .raw_path_len = nl > 1 ? lens[1] : 1,
        .raw_query = (nl > 2 && !(flags & 1)) ? lines[2] : NULL,
        .raw_query_len = (nl > 2 && !(flags & 1)) ? lens[2] : 0,
        .headers = h, .nheaders = nh,
    };
    static const char *const products[] = { "oss", "osstables", NULL };
    fl_sigv4_cfg_t cfg = { .lookup = lookup, .services = services, .oss_products = products,
                           .now = 1369353600 + (int64_t)(flags >> 4) * 400 };
    if (flags & 8) { /* OSS4 tables flavour: the resource comes from the caller */
        cfg.oss_resource = "/acs:osstables:us-east-1:1:bucket/b/tables/x";
        cfg.oss_resource_len = strlen(cfg.oss_resource);
    }
    fl_sigv4_auth_t auth;
    fl_sigv4_error_t err;
    (void)fl_sigv4_present(&r);
    const char *bh = (flags & 4) ? "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" : NULL;
    if (fl_sigv4_verify(&r, &cfg, bh, &auth, &err) == FL_OK) {
        fl_awschunk_t *d = fl_awschunk_new(&auth, NULL, -1);
        if (d) {
            fl_awschunk_feed(d, "0\r\n\r\n", 5, sink, NULL);
            fl_awschunk_finish(d);
            fl_awschunk_free(d);
        }
    }
    fl_buf_t b;
    fl_buf_init(&b, 1 << 20);
    fl_sigv4_canonical_request(&r, (flags & 8) ? "s3" : "s3tables", "host;x-amz-date",
                               "UNSIGNED-PAYLOAD", flags & 2, &b);
    fl_buf_free(&b);

    if ((flags & 2) && nh < MAXH && r.raw_path_len) {
        /* Sign what we parsed (path/query need NUL-terminated copies) and verify. */
        char *path = strndup(r.raw_path, r.raw_path_len);
        char *query = r.raw_query ? strndup(r.raw_query, r.raw_query_len) : NULL;
        fl_sigv4_sign_in_t in = { method, path, query, h, nh, NULL, "AKIAIOSFODNN7EXAMPLE",
                                  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1",
                                  (flags & 8) ? "s3" : "s3tables", cfg.now };
        fl_buf_t az;
        char date[17];
        fl_buf_init(&az, 1 << 20);
        if (fl_sigv4_sign(&in, &az, date) == FL_OK) {
            fl_http_header_t h2[MAXH + 3];
            memcpy(h2, h, nh * sizeof *h);
            size_t n2 = nh;
            h2[n2++] = (fl_http_header_t){ "x-amz-date", 10, date, 16 };
            h2[n2++] = (fl_http_header_t){ "authorization", 13, az.ptr, az.len };
            fl_sigv4_req_t r2 = r;
            r2.headers = h2;
            r2.nheaders = n2;
            fl_sigv4_verify(&r2, &cfg, NULL, &auth, &err);
        }
        fl_buf_t q;
        fl_buf_init(&q, 1 << 20);
        if (fl_sigv4_presign(&in, 3600, &q) == FL_OK) {
            fl_sigv4_req_t r3 = r;
            r3.raw_query = q.ptr;
            r3.raw_query_len = q.len;
            fl_sigv4_verify(&r3, &cfg, NULL, &auth, &err);
        }
        fl_buf_free(&q);
        fl_buf_free(&az);
        free(path);
        free(query);
    }
    free(buf);
    return 0;
}
