/* Fuzz target: the request-head parser, then the chunked decoder over the
 * bytes after the head (fed in two pieces to exercise resumption). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "net/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    static fl_http_req_t req;
    int r = fl_http_parse_head(buf, size, &req);
    if (r > 0) {
        if ((size_t)r > size) abort();
        for (size_t i = 0; i < req.nheaders; i++) {
            const fl_http_header_t *h = &req.headers[i];
            if (h->name < buf || h->name + h->name_len > buf + r) abort();
            if (h->value < buf || h->value + h->value_len > buf + r) abort();
        }
        (void)fl_http_header_val(&req, "host");
        const char *in = buf + r;
        size_t n = size - (size_t)r, pos = 0, split = n / 2;
        fl_chunked_t d;
        fl_chunked_init(&d);
        volatile uint8_t sink = 0;
        for (int piece = 0; piece < 2 && !d.done; piece++) {
            size_t end = piece == 0 ? split : n;
            while (pos < end && !d.done) {
                const char *o;
                size_t ol;
                long c = fl_chunked_feed(&d, in + pos, end - pos, &o, &ol);
                if (c < 0) goto out;
                if ((size_t)c > end - pos) abort();
                if (ol && (o < in + pos || o + ol > in + pos + c)) abort();
                for (size_t i = 0; i < ol; i++) sink ^= (uint8_t)o[i];
                pos += (size_t)c;
                if (c == 0 && !d.done) abort(); /* no progress */
            }
        }
        (void)sink;
    }
out:
    free(buf);
    return 0;
}
