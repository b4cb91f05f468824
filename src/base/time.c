#include "base/time.h"
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>

int64_t fl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t fl_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *wd[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
static const char *mo[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

void fl_time_rfc1123(int64_t ms, char *out, size_t n)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(out, n, "%s, %02d %s %04d %02d:%02d:%02d GMT", wd[tm.tm_wday], tm.tm_mday,
             mo[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

void fl_time_iso8601(int64_t ms, char *out, size_t n)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

void fl_time_amz(time_t s, char *out, size_t n)
{
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(out, n, "%04d%02d%02dT%02d%02d%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static int digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i])) return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

static int64_t mk(int y, int m, int d, int H, int M, int S)
{
    if (y < 1970 || y > 9999 || m < 1 || m > 12 || d < 1 || d > 31 || H > 23 || M > 59 || S > 60)
        return -1;
    struct tm tm = { .tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = d,
                     .tm_hour = H, .tm_min = M, .tm_sec = S };
    return (int64_t)timegm(&tm);
}

int64_t fl_time_parse_amz(const char *s, size_t n)
{
    if (n != 16 || s[8] != 'T' || s[15] != 'Z') return -1;
    int y = digits(s, 4), m = digits(s + 4, 2), d = digits(s + 6, 2);
    int H = digits(s + 9, 2), M = digits(s + 11, 2), S = digits(s + 13, 2);
    if (y < 0 || m < 0 || d < 0 || H < 0 || M < 0 || S < 0) return -1;
    return mk(y, m, d, H, M, S);
}

static int month(const char *s)
{
    for (int i = 0; i < 12; i++)
        if (strncasecmp(s, mo[i], 3) == 0) return i + 1;
    return -1;
}

int64_t fl_time_parse_http(const char *s, size_t n)
{
    char b[64];
    if (n >= sizeof b) return -1;
    memcpy(b, s, n);
    b[n] = 0;
    char wk[16], mon[8];
    int d, y, H, M, S;
    /* RFC 1123: Sun, 06 Nov 1994 08:49:37 GMT */
    if (sscanf(b, "%15[A-Za-z], %d %3s %d %d:%d:%d GMT", wk, &d, mon, &y, &H, &M, &S) == 7)
        return mk(y, month(mon), d, H, M, S);
    /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
    if (sscanf(b, "%15[A-Za-z], %d-%3s-%d %d:%d:%d GMT", wk, &d, mon, &y, &H, &M, &S) == 7)
        return mk(y < 70 ? y + 2000 : (y < 100 ? y + 1900 : y), month(mon), d, H, M, S);
    /* asctime: Sun Nov  6 08:49:37 1994 */
    if (sscanf(b, "%15s %3s %d %d:%d:%d %d", wk, mon, &d, &H, &M, &S, &y) == 7)
        return mk(y, month(mon), d, H, M, S);
    return -1;
}
