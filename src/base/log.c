#include "base/log.h"
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <sys/time.h>

int fl_log_level = FL_LOG_INFO;

void fl_log(int level, const char *fmt, ...)
{
    static const char *names[] = { "debug", "info", "warn", "error" };
    if (level < fl_log_level) return;
    char line[2048];
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, (int)(tv.tv_usec / 1000), names[level & 3]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2) len = sizeof line - 2;
    line[len++] = '\n';
    fwrite(line, 1, len, stderr); /* one write per line: lines never interleave */
}
