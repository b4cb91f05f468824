/* Streaming checksums.
 *
 * CRC32 is zlib's. CRC32C, CRC64/NVME and CRC-64/ECMA-182 (OSS's
 * x-oss-hash-crc64ecma, the xz variant: reflected, inverted) are our own: slice-by-8 tables
 * built once (pthread_once), and for CRC32C the SSE4.2 crc32 instruction when
 * the CPU has it (picked once at table-build time). Both CRCs use the usual
 * "pre/post inverted" convention, so a running value starts at 0 and
 * fl_crc32c(fl_crc32c(0, a), b) == fl_crc32c(0, ab), as with zlib.
 * The hashes go through OpenSSL 3 EVP with digests fetched once; the only
 * allocation is the EVP_MD_CTX in fl_cksum_init, never on the update path.
 * HMAC-SHA256 is built on the same EVP digest (RFC 2104). */
#include "base/checksum.h"
#include "base/buf.h"
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define CRC32C_POLY 0x82F63B78u                 /* reflected Castagnoli */
#define CRC64NVME_POLY 0x9A6C9329AC4BC9B5ull    /* reflected 0xAD93D23594C93659 */
#define CRC64ECMA_POLY 0xC96C5795D7870F42ull    /* reflected 0x42F0E1EBA9EA3693 (ECMA-182) */

static uint32_t crc32c_tab[8][256];
static uint64_t crc64_tab[8][256];
static uint64_t crc64e_tab[8][256];                /* CRC-64/ECMA-182 as OSS (and xz) compute it */
static const EVP_MD *md_sha1, *md_sha256, *md_md5;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static uint32_t (*crc32c_impl)(uint32_t, const unsigned char *, size_t);

static inline uint64_t load64le(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Slice-by-8 over the inverted state. */
static uint32_t crc32c_sw(uint32_t crc, const unsigned char *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        crc = crc32c_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t v = load64le(p) ^ crc;
        crc = crc32c_tab[7][v & 0xff] ^ crc32c_tab[6][(v >> 8) & 0xff] ^
              crc32c_tab[5][(v >> 16) & 0xff] ^ crc32c_tab[4][(v >> 24) & 0xff] ^
              crc32c_tab[3][(v >> 32) & 0xff] ^ crc32c_tab[2][(v >> 40) & 0xff] ^
              crc32c_tab[1][(v >> 48) & 0xff] ^ crc32c_tab[0][v >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) crc = crc32c_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
/* Hardware CRC32C. One dependency chain; fast enough (about 8 bytes per
 * 3 cycles) that the interleaved three-stream variant is not worth its code. */
__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const unsigned char *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        crc = _mm_crc32_u8(crc, *p++);
        n--;
    }
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
        p += 8;
        n -= 8;
    }
    crc = (uint32_t)c;
    while (n--) crc = _mm_crc32_u8(crc, *p++);
    return crc;
}
#define HAVE_CRC32C_HW 1
#endif

static void tables_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        uint64_t d = i, e = i;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
            d = (d & 1) ? (d >> 1) ^ CRC64NVME_POLY : d >> 1;
            e = (e & 1) ? (e >> 1) ^ CRC64ECMA_POLY : e >> 1;
        }
        crc32c_tab[0][i] = c;
        crc64_tab[0][i] = d;
        crc64e_tab[0][i] = e;
    }
    for (int t = 1; t < 8; t++) {
        for (int i = 0; i < 256; i++) {
            uint32_t c = crc32c_tab[t - 1][i];
            uint64_t d = crc64_tab[t - 1][i], e = crc64e_tab[t - 1][i];
            crc32c_tab[t][i] = (c >> 8) ^ crc32c_tab[0][c & 0xff];
            crc64_tab[t][i] = (d >> 8) ^ crc64_tab[0][d & 0xff];
            crc64e_tab[t][i] = (e >> 8) ^ crc64e_tab[0][e & 0xff];
        }
    }
    crc32c_impl = crc32c_sw;
#ifdef HAVE_CRC32C_HW
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2") && !getenv("FL_NO_CRC_HW")) crc32c_impl = crc32c_hw;
#endif
    /* Fetch once: implicit fetches in EVP_DigestInit_ex cost a lock and a lookup each. */
    md_sha1 = EVP_MD_fetch(NULL, "SHA1", NULL);
    md_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    md_md5 = EVP_MD_fetch(NULL, "MD5", NULL);
    if (!md_sha1) md_sha1 = EVP_sha1();
    if (!md_sha256) md_sha256 = EVP_sha256();
    if (!md_md5) md_md5 = EVP_md5();
}

static inline void ensure_init(void) { pthread_once(&init_once, tables_init); }

uint32_t fl_crc32(uint32_t crc, const void *p, size_t n)
{
    const unsigned char *b = p;
    while (n > 0) { /* zlib takes uInt lengths */
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        crc = (uint32_t)crc32(crc, b, k);
        b += k;
        n -= k;
    }
    return crc;
}

uint32_t fl_crc32c(uint32_t crc, const void *p, size_t n)
{
    ensure_init();
    return ~crc32c_impl(~crc, p, n);
}

/* Slice-by-8 over the inverted state, for either 64-bit polynomial's tables. */
static uint64_t crc64_sw(uint64_t (*tab)[256], uint64_t crc, const void *p, size_t n)
{
    ensure_init();
    const unsigned char *b = p;
    uint64_t c = ~crc;
    while (n && ((uintptr_t)b & 7)) {
        c = tab[0][(c ^ *b++) & 0xff] ^ (c >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t v = load64le(b) ^ c;
        c = tab[7][v & 0xff] ^ tab[6][(v >> 8) & 0xff] ^ tab[5][(v >> 16) & 0xff] ^
            tab[4][(v >> 24) & 0xff] ^ tab[3][(v >> 32) & 0xff] ^ tab[2][(v >> 40) & 0xff] ^
            tab[1][(v >> 48) & 0xff] ^ tab[0][v >> 56];
        b += 8;
        n -= 8;
    }
    while (n--) c = tab[0][(c ^ *b++) & 0xff] ^ (c >> 8);
    return ~c;
}

uint64_t fl_crc64nvme(uint64_t crc, const void *p, size_t n)
{
    return crc64_sw(crc64_tab, crc, p, n);
}

uint64_t fl_crc64ecma(uint64_t crc, const void *p, size_t n)
{
    return crc64_sw(crc64e_tab, crc, p, n);
}

/* crc64ecma(A || B) from crc64ecma(A), crc64ecma(B) and len(B): zlib's
 * crc32_combine over GF(2) 64x64 matrices (the operator for one zero bit is
 * the reflected polynomial and a shift; squared for 2, 4, 8 ... zero bits). */
static uint64_t gf2_times(const uint64_t *mat, uint64_t vec)
{
    uint64_t sum = 0;
    for (int i = 0; vec; vec >>= 1, i++)
        if (vec & 1) sum ^= mat[i];
    return sum;
}

static void gf2_square(uint64_t *sq, const uint64_t *mat)
{
    for (int n = 0; n < 64; n++) sq[n] = gf2_times(mat, mat[n]);
}

uint64_t fl_crc64ecma_combine(uint64_t crc1, uint64_t crc2, uint64_t len2)
{
    uint64_t even[64], odd[64];
    if (len2 == 0) return crc1;
    odd[0] = CRC64ECMA_POLY;
    for (int n = 1; n < 64; n++) odd[n] = 1ull << (n - 1);
    gf2_square(even, odd); /* 2 zero bits */
    gf2_square(odd, even); /* 4 zero bits */
    do {
        gf2_square(even, odd);
        if (len2 & 1) crc1 = gf2_times(even, crc1);
        len2 >>= 1;
        if (!len2) break;
        gf2_square(odd, even);
        if (len2 & 1) crc1 = gf2_times(odd, crc1);
        len2 >>= 1;
    } while (len2);
    return crc1 ^ crc2;
}

/* ---- names ---- */

static const struct {
    fl_cksum_alg_t alg;
    const char *name, *header;
    size_t len;
} algs[] = {
    { FL_CK_CRC32, "CRC32", "x-amz-checksum-crc32", 4 },
    { FL_CK_CRC32C, "CRC32C", "x-amz-checksum-crc32c", 4 },
    { FL_CK_CRC64NVME, "CRC64NVME", "x-amz-checksum-crc64nvme", 8 },
    { FL_CK_SHA1, "SHA1", "x-amz-checksum-sha1", 20 },
    { FL_CK_SHA256, "SHA256", "x-amz-checksum-sha256", 32 },
    { FL_CK_MD5, "MD5", NULL, 16 }, /* Content-MD5 / ETag only: no x-amz-checksum header */
};
#define NALGS (sizeof algs / sizeof algs[0])

/* MD5 is a digest here (ETags, Content-MD5) but not an S3 checksum algorithm. */
static bool is_s3_checksum(fl_cksum_alg_t a) { return a != FL_CK_NONE && a != FL_CK_MD5; }

fl_cksum_alg_t fl_cksum_alg_from_name(const char *name, size_t len)
{
    for (size_t i = 0; i < NALGS; i++)
        if (is_s3_checksum(algs[i].alg) && fl_slice_ieq(fl_slice(name, len), algs[i].name))
            return algs[i].alg;
    return FL_CK_NONE;
}

fl_cksum_alg_t fl_cksum_alg_from_header(const char *name, size_t len)
{
    for (size_t i = 0; i < NALGS; i++)
        if (is_s3_checksum(algs[i].alg) && fl_slice_ieq(fl_slice(name, len), algs[i].header))
            return algs[i].alg;
    return FL_CK_NONE;
}

const char *fl_cksum_name(fl_cksum_alg_t a)
{
    for (size_t i = 0; i < NALGS; i++)
        if (algs[i].alg == a) return algs[i].name;
    return "NONE";
}

const char *fl_cksum_header(fl_cksum_alg_t a)
{
    for (size_t i = 0; i < NALGS; i++)
        if (algs[i].alg == a) return algs[i].header;
    return NULL;
}

size_t fl_cksum_digest_len(fl_cksum_alg_t a)
{
    for (size_t i = 0; i < NALGS; i++)
        if (algs[i].alg == a) return algs[i].len;
    return 0;
}

/* ---- streaming contexts ---- */

static const EVP_MD *alg_md(fl_cksum_alg_t a)
{
    ensure_init();
    switch (a) {
    case FL_CK_SHA1: return md_sha1;
    case FL_CK_SHA256: return md_sha256;
    case FL_CK_MD5: return md_md5;
    default: return NULL;
    }
}

static void crypto_fail(const char *what)
{
    fprintf(stderr, "floe: OpenSSL %s failed\n", what);
    abort();
}

/* Allocates the EVP context for hash algorithms (aborts on OOM). Not thread-bound. */
void fl_cksum_init(fl_cksum_t *c, fl_cksum_alg_t a)
{
    c->alg = a;
    c->crc = 0;
    c->md = NULL;
    const EVP_MD *md = alg_md(a);
    if (!md) return;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || !EVP_DigestInit_ex2(ctx, md, NULL)) crypto_fail("digest init");
    c->md = ctx;
}

void fl_cksum_update(fl_cksum_t *c, const void *p, size_t n)
{
    switch (c->alg) {
    case FL_CK_CRC32: c->crc = fl_crc32((uint32_t)c->crc, p, n); break;
    case FL_CK_CRC32C: c->crc = fl_crc32c((uint32_t)c->crc, p, n); break;
    case FL_CK_CRC64NVME: c->crc = fl_crc64nvme(c->crc, p, n); break;
    case FL_CK_SHA1:
    case FL_CK_SHA256:
    case FL_CK_MD5:
        if (c->md && n && !EVP_DigestUpdate(c->md, p, n)) crypto_fail("digest update");
        break;
    default: break;
    }
}

size_t fl_cksum_final(fl_cksum_t *c, unsigned char out[FL_CK_MAX_DIGEST])
{
    size_t n = 0;
    switch (c->alg) {
    case FL_CK_CRC32:
    case FL_CK_CRC32C:
        for (int i = 0; i < 4; i++) out[i] = (unsigned char)(c->crc >> (24 - 8 * i));
        n = 4;
        break;
    case FL_CK_CRC64NVME:
        for (int i = 0; i < 8; i++) out[i] = (unsigned char)(c->crc >> (56 - 8 * i));
        n = 8;
        break;
    case FL_CK_SHA1:
    case FL_CK_SHA256:
    case FL_CK_MD5: {
        unsigned int len = 0;
        if (!c->md) break;
        if (!EVP_DigestFinal_ex(c->md, out, &len)) crypto_fail("digest final");
        n = len;
        break;
    }
    default: break;
    }
    fl_cksum_free(c);
    return n;
}

void fl_cksum_final_b64(fl_cksum_t *c, char *out)
{
    unsigned char d[FL_CK_MAX_DIGEST];
    size_t n = fl_cksum_final(c, d);
    fl_base64(d, n, out);
}

void fl_cksum_free(fl_cksum_t *c)
{
    EVP_MD_CTX_free(c->md);
    c->md = NULL;
    c->alg = FL_CK_NONE;
    c->crc = 0;
}

/* ---- one-shot hashes ---- */

static void digest_oneshot(const EVP_MD *md, const void *p, size_t n, unsigned char *out)
{
    if (!EVP_Digest(p, n, out, NULL, md, NULL)) crypto_fail("digest");
}

void fl_sha256(const void *p, size_t n, unsigned char out[32])
{
    digest_oneshot(alg_md(FL_CK_SHA256), p, n, out);
}

void fl_sha256_hex(const void *p, size_t n, char out[65])
{
    unsigned char d[32];
    fl_sha256(p, n, d);
    fl_hex(d, 32, out);
}

void fl_md5(const void *p, size_t n, unsigned char out[16])
{
    digest_oneshot(alg_md(FL_CK_MD5), p, n, out);
}

/* HMAC-SHA256 (RFC 2104) over one EVP context: cheaper than HMAC()/EVP_Q_mac,
 * which fetch and set up an EVP_MAC on every call. */
/* HMAC (RFC 2104) over a 64-byte-block hash whose digest is dlen bytes. */
static void hmac(fl_cksum_alg_t a, size_t dlen, const void *key, size_t keylen, const void *p,
                 size_t n, unsigned char *out)
{
    unsigned char k[64] = { 0 }, pad[64], inner[32];
    const EVP_MD *md = alg_md(a);
    if (keylen > 64) {
        if (!EVP_Digest(key, keylen, k, NULL, md, NULL)) crypto_fail("hmac key");
    } else if (keylen) {
        memcpy(k, key, keylen);
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx) crypto_fail("EVP_MD_CTX_new");
    for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x36;
    if (!EVP_DigestInit_ex2(ctx, md, NULL) || !EVP_DigestUpdate(ctx, pad, 64) ||
        (n && !EVP_DigestUpdate(ctx, p, n)) || !EVP_DigestFinal_ex(ctx, inner, NULL))
        crypto_fail("hmac inner");
    for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x5c;
    if (!EVP_DigestInit_ex2(ctx, md, NULL) || !EVP_DigestUpdate(ctx, pad, 64) ||
        !EVP_DigestUpdate(ctx, inner, dlen) || !EVP_DigestFinal_ex(ctx, out, NULL))
        crypto_fail("hmac outer");
    EVP_MD_CTX_free(ctx);
    OPENSSL_cleanse(k, sizeof k);
    OPENSSL_cleanse(pad, sizeof pad);
    OPENSSL_cleanse(inner, sizeof inner);
}

void fl_hmac_sha256(const void *key, size_t keylen, const void *p, size_t n, unsigned char out[32])
{
    hmac(FL_CK_SHA256, 32, key, keylen, p, n, out);
}

void fl_hmac_sha1(const void *key, size_t keylen, const void *p, size_t n, unsigned char out[20])
{
    hmac(FL_CK_SHA1, 20, key, keylen, p, n, out);
}
