/* Checksums: published check values, S3 header encodings, incremental updates
 * against bitwise reference CRCs at every alignment, HMAC-SHA256 (RFC 4231). */
#include "test.h"
#include "base/buf.h"
#include "base/checksum.h"
#include <stdlib.h>

static uint32_t ref_crc32c(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
}

/* CRC-64/NVME from its catalogue parameters: poly 0xAD93D23594C93659,
 * reflected, init and xorout all ones; reflect the polynomial here. */
static uint64_t ref_crc64nvme(const unsigned char *p, size_t n)
{
    uint64_t poly = 0, fwd = 0xAD93D23594C93659ull;
    for (int i = 0; i < 64; i++)
        if (fwd & (1ull << i)) poly |= 1ull << (63 - i);
    uint64_t c = ~0ull;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
    }
    return ~c;
}

static void hex_of(fl_cksum_alg_t a, const char *s, char *out)
{
    fl_cksum_t c;
    unsigned char d[FL_CK_MAX_DIGEST];
    fl_cksum_init(&c, a);
    fl_cksum_update(&c, s, strlen(s));
    size_t n = fl_cksum_final(&c, d);
    fl_hex(d, n, out);
}

FL_TEST(checksum_check_values)
{
    const char *s = "123456789";
    CHECK_EQ(fl_crc32(0, s, 9), 0xCBF43926u);
    CHECK_EQ(fl_crc32c(0, s, 9), 0xE3069283u);
    CHECK(fl_crc64nvme(0, s, 9) == 0xae8b14860a799888ull);
    CHECK_EQ(fl_crc32(0, "", 0), 0);
    CHECK_EQ(fl_crc32c(0, "", 0), 0);
    CHECK(fl_crc64nvme(0, "", 0) == 0);
    char h[80];
    hex_of(FL_CK_CRC32, s, h);
    CHECK_STR(h, "cbf43926");
    hex_of(FL_CK_CRC32C, s, h);
    CHECK_STR(h, "e3069283");
    hex_of(FL_CK_CRC64NVME, s, h);
    CHECK_STR(h, "ae8b14860a799888");
    hex_of(FL_CK_SHA256, "", h);
    CHECK_STR(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hex_of(FL_CK_SHA256, "abc", h);
    CHECK_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    hex_of(FL_CK_SHA1, "abc", h);
    CHECK_STR(h, "a9993e364706816aba3e25717850c26c9cd0d89d");
    hex_of(FL_CK_MD5, "", h);
    CHECK_STR(h, "d41d8cd98f00b204e9800998ecf8427e");
    hex_of(FL_CK_MD5, "abc", h);
    CHECK_STR(h, "900150983cd24fb0d6963f7d28e17f72");
    unsigned char d[32];
    fl_md5("abc", 3, d);
    fl_hex(d, 16, h);
    CHECK_STR(h, "900150983cd24fb0d6963f7d28e17f72");
    fl_sha256_hex("abc", 3, h);
    CHECK_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

FL_TEST(checksum_s3_base64)
{
    /* botocore's trailer for "hello world": x-amz-checksum-crc32:DUoRhQ== */
    char b[64];
    fl_cksum_t c;
    fl_cksum_init(&c, FL_CK_CRC32);
    fl_cksum_update(&c, "hello ", 6);
    fl_cksum_update(&c, "world", 5);
    fl_cksum_final_b64(&c, b);
    CHECK_STR(b, "DUoRhQ==");
    fl_cksum_free(&c); /* safe after final */
    fl_cksum_init(&c, FL_CK_CRC32C);
    fl_cksum_update(&c, "hello world", 11);
    fl_cksum_final_b64(&c, b);
    CHECK_STR(b, "yZRlqg==");
    fl_cksum_init(&c, FL_CK_SHA256);
    fl_cksum_update(&c, "hello world", 11);
    fl_cksum_final_b64(&c, b);
    CHECK_STR(b, "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=");
    fl_cksum_init(&c, FL_CK_SHA1);
    fl_cksum_final_b64(&c, b);
    CHECK_STR(b, "2jmj7l5rSw0yVb/vlWAYkK/YBwk=");
    fl_cksum_init(&c, FL_CK_SHA256);
    fl_cksum_free(&c); /* release without a result */
    fl_cksum_free(&c);
}

FL_TEST(checksum_names)
{
    CHECK_EQ(fl_cksum_alg_from_name("crc32", 5), FL_CK_CRC32);
    CHECK_EQ(fl_cksum_alg_from_name("CRC32C", 6), FL_CK_CRC32C);
    CHECK_EQ(fl_cksum_alg_from_name("Crc64Nvme", 9), FL_CK_CRC64NVME);
    CHECK_EQ(fl_cksum_alg_from_name("SHA1", 4), FL_CK_SHA1);
    CHECK_EQ(fl_cksum_alg_from_name("sha256", 6), FL_CK_SHA256);
    CHECK_EQ(fl_cksum_alg_from_name("MD5", 3), FL_CK_NONE);
    CHECK_EQ(fl_cksum_alg_from_name("CRC3", 4), FL_CK_NONE);
    CHECK_EQ(fl_cksum_alg_from_header("x-amz-checksum-crc32", 20), FL_CK_CRC32);
    CHECK_EQ(fl_cksum_alg_from_header("X-Amz-Checksum-CRC64NVME", 24), FL_CK_CRC64NVME);
    CHECK_EQ(fl_cksum_alg_from_header("x-amz-checksum-crc32c", 21), FL_CK_CRC32C);
    CHECK_EQ(fl_cksum_alg_from_header("x-amz-checksum-mode", 19), FL_CK_NONE);
    CHECK_STR(fl_cksum_name(FL_CK_CRC64NVME), "CRC64NVME");
    CHECK_STR(fl_cksum_header(FL_CK_SHA1), "x-amz-checksum-sha1");
    CHECK_EQ(fl_cksum_digest_len(FL_CK_CRC32), 4);
    CHECK_EQ(fl_cksum_digest_len(FL_CK_CRC32C), 4);
    CHECK_EQ(fl_cksum_digest_len(FL_CK_CRC64NVME), 8);
    CHECK_EQ(fl_cksum_digest_len(FL_CK_SHA1), 20);
    CHECK_EQ(fl_cksum_digest_len(FL_CK_SHA256), 32);
    CHECK_EQ(fl_cksum_digest_len(FL_CK_MD5), 16);
}

/* Table/SSE paths against the bitwise reference, every alignment and length
 * around the 8-byte stride, and arbitrary incremental splits. */
FL_TEST(checksum_crc_incremental)
{
    enum { N = 4099 };
    unsigned char *buf = malloc(N + 16);
    uint32_t seed = 12345;
    for (size_t i = 0; i < N + 16; i++) {
        seed = seed * 1103515245u + 12345u;
        buf[i] = (unsigned char)(seed >> 16);
    }
    for (size_t off = 0; off < 9; off++) {
        for (size_t len = 0; len < 40; len++) {
            CHECK_EQ(fl_crc32c(0, buf + off, len), ref_crc32c(buf + off, len));
            CHECK(fl_crc64nvme(0, buf + off, len) == ref_crc64nvme(buf + off, len));
        }
    }
    uint32_t want32c = ref_crc32c(buf, N);
    uint64_t want64 = ref_crc64nvme(buf, N);
    uint32_t want32 = fl_crc32(0, buf, N);
    CHECK_EQ(fl_crc32c(0, buf, N), want32c);
    CHECK(fl_crc64nvme(0, buf, N) == want64);
    static const fl_cksum_alg_t crcs[] = { FL_CK_CRC32, FL_CK_CRC32C, FL_CK_CRC64NVME };
    for (int rep = 0; rep < 20; rep++) {
        for (size_t a = 0; a < 3; a++) {
            fl_cksum_t c;
            fl_cksum_init(&c, crcs[a]);
            size_t pos = 0;
            while (pos < N) {
                seed = seed * 1103515245u + 12345u;
                size_t k = (seed >> 16) % 97;
                if (k > N - pos) k = N - pos;
                fl_cksum_update(&c, buf + pos, k);
                pos += k;
            }
            unsigned char d[FL_CK_MAX_DIGEST];
            size_t n = fl_cksum_final(&c, d);
            uint64_t v = 0;
            for (size_t i = 0; i < n; i++) v = v << 8 | d[i];
            uint64_t want = crcs[a] == FL_CK_CRC32 ? want32 : crcs[a] == FL_CK_CRC32C ? want32c : want64;
            CHECK(v == want);
        }
    }
    free(buf);
}

FL_TEST(checksum_hmac_sha256)
{
    unsigned char mac[32];
    char h[65];
    /* RFC 4231 test case 2 */
    fl_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac);
    fl_hex(mac, 32, h);
    CHECK_STR(h, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    /* RFC 4231 test case 6: key longer than the block */
    unsigned char key[131];
    memset(key, 0xaa, sizeof key);
    const char *m = "Test Using Larger Than Block-Size Key - Hash Key First";
    fl_hmac_sha256(key, sizeof key, m, strlen(m), mac);
    fl_hex(mac, 32, h);
    CHECK_STR(h, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    /* RFC 4231 test case 1 */
    memset(key, 0x0b, 20);
    fl_hmac_sha256(key, 20, "Hi There", 8, mac);
    fl_hex(mac, 32, h);
    CHECK_STR(h, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

/* RFC 2202 test cases 2 and 6 (OSS's V1 signature is HMAC-SHA1). */
FL_TEST(checksum_hmac_sha1)
{
    unsigned char mac[20], key[80];
    char h[41];
    fl_hmac_sha1("Jefe", 4, "what do ya want for nothing?", 28, mac);
    fl_hex(mac, 20, h);
    CHECK_STR(h, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
    memset(key, 0xaa, sizeof key);
    const char *m = "Test Using Larger Than Block-Size Key - Hash Key First";
    fl_hmac_sha1(key, sizeof key, m, strlen(m), mac);
    fl_hex(mac, 20, h);
    CHECK_STR(h, "aa4ae5e15272d00e95705637ce8a3b55ed402112");
}

/* CRC-64/ECMA-182 as OSS computes x-oss-hash-crc64ecma: the catalogue check
 * value, split updates, and combine (what a multipart object's CRC is). The
 * OSS SDK's own CRC code checks the same values in test_oss_objects.py. */
FL_TEST(crc64ecma)
{
    CHECK(fl_crc64ecma(0, "123456789", 9) == 0x995DC9BBDF1939FAull);
    CHECK(fl_crc64ecma(0, "", 0) == 0);
    unsigned char buf[1000];
    for (int i = 0; i < 1000; i++) buf[i] = (unsigned char)(i * 7 + 3);
    uint64_t whole = fl_crc64ecma(0, buf, sizeof buf);
    for (size_t cut = 0; cut <= sizeof buf; cut += 37) {
        uint64_t a = fl_crc64ecma(0, buf, cut), b = fl_crc64ecma(0, buf + cut, sizeof buf - cut);
        CHECK(fl_crc64ecma(a, buf + cut, sizeof buf - cut) == whole);
        CHECK(fl_crc64ecma_combine(a, b, sizeof buf - cut) == whole);
    }
}
