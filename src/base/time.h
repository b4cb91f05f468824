/* Wall-clock and monotonic time, and the date formats S3 and SigV4 use. */
#ifndef FL_BASE_TIME_H
#define FL_BASE_TIME_H
#include <stdint.h>
#include <stddef.h>
#include <time.h>

int64_t fl_now_ms(void);        /* wall clock, ms since epoch */
int64_t fl_mono_ms(void);       /* monotonic, ms */
/* "Wed, 01 Jan 2025 00:00:00 GMT"; out >= 30 bytes */
void fl_time_rfc1123(int64_t ms, char *out, size_t n);
/* "2025-01-01T00:00:00.000Z"; out >= 25 bytes */
void fl_time_iso8601(int64_t ms, char *out, size_t n);
/* "20250101T000000Z"; out >= 17 bytes */
void fl_time_amz(time_t s, char *out, size_t n);
/* Parse "yyyymmddTHHMMSSZ" -> seconds; -1 if malformed. */
int64_t fl_time_parse_amz(const char *s, size_t n);
/* Parse an HTTP date (RFC 1123, also RFC 850 and asctime) -> seconds; -1 if malformed. */
int64_t fl_time_parse_http(const char *s, size_t n);

#endif
