/* Fuzz target: the aws-chunked decoder. Input: 2 bytes of split seed, then the
 * body. The body is decoded in four modes (signed chunks; signed chunks with a
 * signed crc32 trailer; unsigned chunks with a crc32c trailer; unsigned with
 * no trailer announced), fed in pieces whose sizes come from the seed, and
 * every payload byte handed out is read (so ASan sees overreads). The key and
 * seed signature are those of the S3 chunked-upload example, so valid signed
 * bodies can be built for the corpus. */
#include "auth/sigv4.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int sink(void *ud, const void *p, size_t n)
{
    unsigned *sum = ud;
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) *sum += b[i];
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fl_sigv4_auth_t base;
    static int ready;
    if (!ready) {
        strcpy(base.amz_date, "20130524T000000Z");
        strcpy(base.scope, "20130524/us-east-1/s3/aws4_request");
        strcpy(base.seed_signature, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
        fl_sigv4_signing_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524", "us-east-1",
                             "s3", base.signing_key);
        ready = 1;
    }
    if (size < 2) return 0;
    unsigned seed = (unsigned)data[0] << 8 | data[1];
    const uint8_t *body = data + 2;
    size_t n = size - 2;
    static const struct { fl_payload_mode_t m; const char *tr; } modes[] = {
        { FL_PAYLOAD_STREAMING_SIGNED, NULL },
        { FL_PAYLOAD_STREAMING_SIGNED_TRAILER, "x-amz-checksum-crc32" },
        { FL_PAYLOAD_STREAMING_UNSIGNED_TRAILER, "x-amz-checksum-crc32c" },
        { FL_PAYLOAD_STREAMING_UNSIGNED_TRAILER, NULL },
    };
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
        fl_sigv4_auth_t a = base;
        a.payload_mode = modes[k].m;
        fl_awschunk_t *d = fl_awschunk_new(&a, modes[k].tr, (seed & 1) ? -1 : (int64_t)(seed >> 4));
        if (!d) abort();
        unsigned sum = 0, s = seed;
        size_t pos = 0;
        fl_err_t e = FL_OK;
        while (pos < n && !e) {
            s = s * 1103515245u + 12345u;
            size_t take = (s >> 16) % 4 == 0 ? 1 : 1 + (s >> 18) % 97;
            if (take > n - pos) take = n - pos;
            e = fl_awschunk_feed(d, body + pos, take, sink, &sum);
            pos += take;
        }
        if (!e) e = fl_awschunk_finish(d);
        const char *v = NULL;
        fl_cksum_alg_t t = fl_awschunk_trailer(d, &v);
        if (t != FL_CK_NONE && (!v || e)) abort();
        (void)fl_awschunk_errmsg(d);
        fl_awschunk_free(d);
    }
    return 0;
}
