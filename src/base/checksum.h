/* Streaming checksums for S3: MD5 (ETags, Content-MD5), CRC32, CRC32C,
 * CRC64/NVME, SHA-1, SHA-256. One context type computes any one of them.
 * Contexts are plain values; no thread affinity. */
#ifndef FL_BASE_CHECKSUM_H
#define FL_BASE_CHECKSUM_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

typedef enum fl_cksum_alg {
    FL_CK_NONE = 0,
    FL_CK_CRC32,
    FL_CK_CRC32C,
    FL_CK_CRC64NVME,
    FL_CK_SHA1,
    FL_CK_SHA256,
    FL_CK_MD5,
} fl_cksum_alg_t;

#define FL_CK_MAX_DIGEST 32

typedef struct fl_cksum {
    fl_cksum_alg_t alg;
    uint64_t crc;      /* CRC state */
    void *md;          /* EVP_MD_CTX for the hashes */
} fl_cksum_t;

/* Algorithm from an S3 name, case-insensitive: "CRC32", "crc32c", "CRC64NVME", "SHA1", "SHA256".
 * FL_CK_NONE if unknown. */
fl_cksum_alg_t fl_cksum_alg_from_name(const char *name, size_t len);
/* From a header name "x-amz-checksum-crc32" etc.; FL_CK_NONE if not a checksum header. */
fl_cksum_alg_t fl_cksum_alg_from_header(const char *name, size_t len);
const char *fl_cksum_name(fl_cksum_alg_t a);        /* "CRC32", ... */
const char *fl_cksum_header(fl_cksum_alg_t a);      /* "x-amz-checksum-crc32", ... */
size_t fl_cksum_digest_len(fl_cksum_alg_t a);       /* 4, 4, 8, 20, 32, 16 */

void fl_cksum_init(fl_cksum_t *c, fl_cksum_alg_t a);
void fl_cksum_update(fl_cksum_t *c, const void *p, size_t n);
/* Writes the digest (big-endian for CRCs, as S3 encodes them) and frees the context. */
size_t fl_cksum_final(fl_cksum_t *c, unsigned char out[FL_CK_MAX_DIGEST]);
/* Final digest as base64 (S3 header form); out >= 48 bytes. Frees the context. */
void fl_cksum_final_b64(fl_cksum_t *c, char *out);
void fl_cksum_free(fl_cksum_t *c); /* releases without a result; safe on a finalised ctx */

/* One-shot helpers. */
uint32_t fl_crc32(uint32_t crc, const void *p, size_t n);
uint32_t fl_crc32c(uint32_t crc, const void *p, size_t n);
uint64_t fl_crc64nvme(uint64_t crc, const void *p, size_t n);
/* CRC-64/ECMA-182 as OSS computes x-oss-hash-crc64ecma (reflected, init and
 * xorout all ones; "123456789" -> 0x995DC9BBDF1939FA); running value from 0. */
uint64_t fl_crc64ecma(uint64_t crc, const void *p, size_t n);
/* The CRC of A||B from crc(A), crc(B) and len(B) (multipart objects). */
uint64_t fl_crc64ecma_combine(uint64_t crc1, uint64_t crc2, uint64_t len2);
void fl_sha256(const void *p, size_t n, unsigned char out[32]);
void fl_sha256_hex(const void *p, size_t n, char out[65]);
void fl_md5(const void *p, size_t n, unsigned char out[16]);
void fl_hmac_sha256(const void *key, size_t keylen, const void *p, size_t n, unsigned char out[32]);
/* HMAC-SHA1, for OSS's V1 signature only. */
void fl_hmac_sha1(const void *key, size_t keylen, const void *p, size_t n, unsigned char out[20]);

#endif
