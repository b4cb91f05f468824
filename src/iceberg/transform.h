/* Iceberg partition transforms (table spec "Partition Transforms", Appendix B).
 *
 * A transform is parsed from its spec string ("identity", "bucket[N]",
 * "truncate[W]", "year", "month", "day", "hour", "void") into a small value
 * and applied to one typed value, fl_ice_value_t. Byte-carrying values
 * (string, fixed, binary) never own their bytes: a truncated string points
 * into its source. The human string of a result and the Java-compatible
 * partition path segment ("ts_day=2017-11-16") are produced here too, so
 * writers lay data files out the way Iceberg Java does.
 *
 * Everything here is pure and thread-safe. */
#ifndef FL_ICEBERG_TRANSFORM_H
#define FL_ICEBERG_TRANSFORM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/err.h"

typedef enum fl_ice_kind {
    FL_ICE_NULL = 0,
    FL_ICE_BOOLEAN,
    FL_ICE_INT,
    FL_ICE_LONG,
    FL_ICE_FLOAT,
    FL_ICE_DOUBLE,
    FL_ICE_DECIMAL,        /* unscaled two's-complement big-endian, 1..16 bytes */
    FL_ICE_DATE,           /* days since 1970-01-01 */
    FL_ICE_TIME,           /* microseconds since midnight */
    FL_ICE_TIMESTAMP,      /* microseconds since epoch, no zone */
    FL_ICE_TIMESTAMPTZ,    /* microseconds since epoch, UTC */
    FL_ICE_TIMESTAMP_NS,   /* nanoseconds since epoch, no zone */
    FL_ICE_TIMESTAMPTZ_NS, /* nanoseconds since epoch, UTC */
    FL_ICE_STRING,         /* UTF-8 bytes */
    FL_ICE_UUID,           /* 16 bytes, big-endian */
    FL_ICE_FIXED,
    FL_ICE_BINARY,
} fl_ice_kind_t;

/* A tagged Iceberg value. i: boolean/int/date; l: long/time/timestamp*;
 * bytes: string/fixed/binary (not owned). */
typedef struct fl_ice_value {
    fl_ice_kind_t kind;
    union {
        bool b;
        int32_t i;
        int64_t l;
        float f;
        double d;
        unsigned char uuid[16];
        struct { unsigned char unscaled[16]; uint8_t len; int32_t scale; } dec;
        struct { const unsigned char *ptr; size_t len; } bytes;
    } u;
} fl_ice_value_t;

typedef enum fl_ice_tkind {
    FL_ICE_T_IDENTITY,
    FL_ICE_T_BUCKET,
    FL_ICE_T_TRUNCATE,
    FL_ICE_T_YEAR,
    FL_ICE_T_MONTH,
    FL_ICE_T_DAY,
    FL_ICE_T_HOUR,
    FL_ICE_T_VOID,
} fl_ice_tkind_t;

typedef struct fl_ice_transform {
    fl_ice_tkind_t kind;
    int32_t param; /* N for bucket, W for truncate (> 0); else 0 */
} fl_ice_transform_t;

/* Parse a transform string, case-insensitively as Iceberg Java does.
 * FL_ERR_INVALID for anything else (unknown names, missing or non-positive
 * or out-of-range parameters, trailing bytes). Any thread. */
fl_err_t fl_ice_transform_parse(fl_slice_t s, fl_ice_transform_t *out);

/* Canonical string ("bucket[16]", "day") into out (NUL-terminated, truncated
 * to cap). Returns the full length. Any thread. */
size_t fl_ice_transform_str(const fl_ice_transform_t *t, char *out, size_t cap);

/* Murmur3 x86 32-bit hash of n bytes. Any thread. */
int32_t fl_ice_murmur3_32(const void *p, size_t n, uint32_t seed);

/* The spec's 32-bit hash (Appendix B) of a non-null value, including the
 * boolean/float/double rules the spec gives for types not valid as bucket
 * sources. FL_ERR_INVALID for null or a malformed decimal. Any thread. */
fl_err_t fl_ice_hash(const fl_ice_value_t *v, int32_t *out);

/* The result kind of t applied to a source kind, or FL_ERR_INVALID when the
 * spec does not allow that source type for the transform. Any thread. */
fl_err_t fl_ice_transform_result_kind(const fl_ice_transform_t *t, fl_ice_kind_t src,
                                      fl_ice_kind_t *out);

/* Apply t to in. Null maps to null (kind FL_ICE_NULL); void always gives
 * null. A string/binary result of truncate points into in's bytes, so it
 * lives as long as they do. FL_ERR_INVALID for a source type the transform
 * does not accept (float/double/boolean are not bucket sources). Any thread. */
fl_err_t fl_ice_transform_apply(const fl_ice_transform_t *t, const fl_ice_value_t *in,
                                fl_ice_value_t *out);

/* Append the human string of a transform result v (Iceberg Java
 * toHumanString): "null", years "2017", months "2017-11", days
 * "2017-11-16", hours "2017-11-16-22", ISO times/timestamps, base64 for
 * binary/fixed, plain decimals. Not URL-escaped. Any thread. */
fl_err_t fl_ice_human_string(const fl_ice_transform_t *t, const fl_ice_value_t *v,
                             fl_buf_t *out);

/* Append one partition path segment "name=value" with both sides escaped as
 * java.net.URLEncoder does (space '+', unreserved A-Za-z0-9.-*_ kept, the
 * rest %XX). Callers join segments with '/'. Any thread. */
fl_err_t fl_ice_partition_path_append(fl_buf_t *out, const char *name,
                                      const fl_ice_transform_t *t, const fl_ice_value_t *v);

#endif
