#include "base/uuid.h"
#include "base/buf.h"
#include "base/log.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static void fill(unsigned char *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = getrandom(p + got, n - got, 0);
        if (k < 0) {
            if (errno == EINTR) continue;
            fl_error("getrandom: %s", strerror(errno));
            abort();
        }
        got += (size_t)k;
    }
}

void fl_uuid4(char out[37])
{
    unsigned char r[16];
    char h[33];
    fill(r, sizeof r);
    r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
    r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
    fl_hex(r, 16, h);
    memcpy(out, h, 8);
    out[8] = '-';
    memcpy(out + 9, h + 8, 4);
    out[13] = '-';
    memcpy(out + 14, h + 12, 4);
    out[18] = '-';
    memcpy(out + 19, h + 16, 4);
    out[23] = '-';
    memcpy(out + 24, h + 20, 12);
    out[36] = 0;
}

uint64_t fl_random_u64(void)
{
    uint64_t v;
    fill((unsigned char *)&v, sizeof v);
    return v;
}

void fl_random_hex(char *out, size_t n)
{
    unsigned char r[64];
    while (n) {
        size_t k = n < 2 * sizeof r ? n : 2 * sizeof r;
        char h[2 * sizeof r + 1];
        fill(r, (k + 1) / 2);
        fl_hex(r, (k + 1) / 2, h);
        memcpy(out, h, k);
        out += k;
        n -= k;
    }
    *out = 0;
}
