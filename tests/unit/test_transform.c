/* Iceberg partition transforms: the spec's Appendix B hash vectors, the
 * truncate examples, time transforms across 1970, human strings and paths. */
#include "test.h"
#include "iceberg/transform.h"

#define D_2017_11_16 17486                          /* days */
#define T_22_31_08 (81068LL * 1000000)              /* us since midnight */
#define TS_2017 (1510871468LL * 1000000)            /* 2017-11-16T22:31:08Z in us */

static fl_ice_value_t vi(fl_ice_kind_t k, int32_t i) { return (fl_ice_value_t){ .kind = k, .u.i = i }; }
static fl_ice_value_t vl(fl_ice_kind_t k, int64_t l) { return (fl_ice_value_t){ .kind = k, .u.l = l }; }
static fl_ice_value_t vb(fl_ice_kind_t k, const void *p, size_t n)
{
    return (fl_ice_value_t){ .kind = k, .u.bytes = { p, n } };
}
static fl_ice_value_t vdec(const unsigned char *b, uint8_t n, int32_t scale)
{
    fl_ice_value_t v = { .kind = FL_ICE_DECIMAL };
    memcpy(v.u.dec.unscaled, b, n);
    v.u.dec.len = n;
    v.u.dec.scale = scale;
    return v;
}
static fl_ice_transform_t tr(const char *s)
{
    fl_ice_transform_t t = { FL_ICE_T_VOID, -1 };
    fl_ice_transform_parse(fl_slice_cstr(s), &t);
    return t;
}
static int32_t hash(fl_ice_value_t v)
{
    int32_t h = 0;
    if (fl_ice_hash(&v, &h) != FL_OK)
        return 0x7eadbeef;
    return h;
}

FL_TEST(transform_hash_spec_vectors)
{
    static const unsigned char d1420[] = { 0x05, 0x8c };
    static const unsigned char uuid[16] = { 0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4b, 0xbd,
                                            0xa4, 0x79, 0x3f, 0x34, 0x9c, 0xb7, 0x85, 0xe7 };
    static const unsigned char b0123[] = { 0, 1, 2, 3 };
    CHECK_EQ(hash(vi(FL_ICE_INT, 34)), 2017239379);
    CHECK_EQ(hash(vl(FL_ICE_LONG, 34)), 2017239379);
    CHECK_EQ(hash(vdec(d1420, 2, 2)), -500754589);
    CHECK_EQ(hash(vi(FL_ICE_DATE, D_2017_11_16)), -653330422);
    CHECK_EQ(hash(vl(FL_ICE_TIME, T_22_31_08)), -662762989);
    CHECK_EQ(hash(vl(FL_ICE_TIMESTAMP, TS_2017)), -2047944441);
    CHECK_EQ(hash(vl(FL_ICE_TIMESTAMP, TS_2017 + 1)), -1207196810);
    /* 2017-11-16T14:31:08-08:00 is the same instant */
    CHECK_EQ(hash(vl(FL_ICE_TIMESTAMPTZ, TS_2017)), -2047944441);
    CHECK_EQ(hash(vl(FL_ICE_TIMESTAMPTZ, TS_2017 + 1)), -1207196810);
    CHECK_EQ(hash(vl(FL_ICE_TIMESTAMP_NS, TS_2017 * 1000)), -2047944441);
    CHECK_EQ(hash(vl(FL_ICE_TIMESTAMP_NS, TS_2017 * 1000 + 1001)), -1207196810);
    CHECK_EQ(hash(vl(FL_ICE_TIMESTAMPTZ_NS, TS_2017 * 1000 + 1001)), -1207196810);
    CHECK_EQ(hash(vb(FL_ICE_STRING, "iceberg", 7)), 1210000089);
    fl_ice_value_t u = { .kind = FL_ICE_UUID };
    memcpy(u.u.uuid, uuid, 16);
    CHECK_EQ(hash(u), 1488055340);
    CHECK_EQ(hash(vb(FL_ICE_FIXED, b0123, 4)), -188683207);
    CHECK_EQ(hash(vb(FL_ICE_BINARY, b0123, 4)), -188683207);
    /* types the spec does not bucket, hashed per its second table */
    CHECK_EQ(hash((fl_ice_value_t){ .kind = FL_ICE_BOOLEAN, .u.b = true }), 1392991556);
    CHECK_EQ(hash((fl_ice_value_t){ .kind = FL_ICE_FLOAT, .u.f = 1.0f }), -142385009);
    CHECK_EQ(hash((fl_ice_value_t){ .kind = FL_ICE_FLOAT, .u.f = 0.0f }), 1669671676);
    CHECK_EQ(hash((fl_ice_value_t){ .kind = FL_ICE_FLOAT, .u.f = -0.0f }), 1669671676);
    CHECK_EQ(hash((fl_ice_value_t){ .kind = FL_ICE_DOUBLE, .u.d = 1.0 }), -142385009);
    CHECK_EQ(hash((fl_ice_value_t){ .kind = FL_ICE_DOUBLE, .u.d = -0.0 }), 1669671676);
    /* a sign-extended (non-minimal) decimal hashes like its minimal form */
    static const unsigned char d1420_wide[] = { 0x00, 0x00, 0x05, 0x8c };
    CHECK_EQ(hash(vdec(d1420_wide, 4, 2)), -500754589);
    CHECK_EQ(hash((fl_ice_value_t){ .kind = FL_ICE_NULL }), 0x7eadbeef);
    /* murmur3 tails of 1..3 bytes and the empty input */
    CHECK_EQ(fl_ice_murmur3_32("", 0, 0), 0);
    CHECK_EQ(fl_ice_murmur3_32("a", 1, 0), (int32_t)0x3c2569b2);
    CHECK_EQ(fl_ice_murmur3_32("abc", 3, 0), (int32_t)0xb3dd93fa);
    CHECK_EQ(fl_ice_murmur3_32("abcd", 4, 0), 0x43ed676a);
}

FL_TEST(transform_bucket)
{
    fl_ice_transform_t t = tr("bucket[16]");
    fl_ice_value_t in = vi(FL_ICE_INT, 34), out;
    REQUIRE(fl_ice_transform_apply(&t, &in, &out) == FL_OK);
    CHECK_EQ(out.kind, FL_ICE_INT);
    CHECK_EQ(out.u.i, 2017239379 % 16);
    /* negative hash: mask the sign bit first, then mod */
    in = vl(FL_ICE_TIMESTAMP, TS_2017);
    REQUIRE(fl_ice_transform_apply(&t, &in, &out) == FL_OK);
    CHECK_EQ(out.u.i, (-2047944441 & 0x7fffffff) % 16);
    in = (fl_ice_value_t){ .kind = FL_ICE_NULL };
    REQUIRE(fl_ice_transform_apply(&t, &in, &out) == FL_OK);
    CHECK_EQ(out.kind, FL_ICE_NULL);
    in = (fl_ice_value_t){ .kind = FL_ICE_DOUBLE, .u.d = 1.0 };
    CHECK_EQ(fl_ice_transform_apply(&t, &in, &out), FL_ERR_INVALID);
    in = (fl_ice_value_t){ .kind = FL_ICE_FLOAT, .u.f = 1.0f };
    CHECK_EQ(fl_ice_transform_apply(&t, &in, &out), FL_ERR_INVALID);
    fl_buf_t b;
    fl_buf_init(&b, 0);
    in = vi(FL_ICE_INT, 34);
    fl_ice_transform_apply(&t, &in, &out);
    CHECK_EQ(fl_ice_partition_path_append(&b, "id_bucket", &t, &out), FL_OK);
    CHECK_STR(b.ptr, "id_bucket=3");
    fl_buf_free(&b);
}

FL_TEST(transform_truncate)
{
    fl_ice_transform_t t10 = tr("truncate[10]");
    fl_ice_value_t in, out;
    static const struct { int64_t v, want; } ints[] = {
        { 1, 0 }, { -1, -10 }, { 0, 0 }, { 10, 10 }, { 9, 0 }, { -10, -10 }, { -11, -20 },
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        in = vi(FL_ICE_INT, (int32_t)ints[i].v);
        REQUIRE(fl_ice_transform_apply(&t10, &in, &out) == FL_OK);
        CHECK_EQ(out.kind, FL_ICE_INT);
        CHECK_EQ(out.u.i, ints[i].want);
        in = vl(FL_ICE_LONG, ints[i].v);
        REQUIRE(fl_ice_transform_apply(&t10, &in, &out) == FL_OK);
        CHECK_EQ(out.kind, FL_ICE_LONG);
        CHECK_EQ(out.u.l, ints[i].want);
    }
    /* Java int arithmetic wraps at the minimum */
    in = vi(FL_ICE_INT, INT32_MIN);
    REQUIRE(fl_ice_transform_apply(&t10, &in, &out) == FL_OK);
    CHECK_EQ(out.u.i, INT32_MAX - 1);

    /* decimal W=50, scale 2: 10.65 -> 10.50; -0.01 -> -0.50 */
    fl_ice_transform_t t50 = tr("truncate[50]");
    static const unsigned char d1065[] = { 0x04, 0x29 }, dm1[] = { 0xff };
    in = vdec(d1065, 2, 2);
    REQUIRE(fl_ice_transform_apply(&t50, &in, &out) == FL_OK);
    CHECK_EQ(out.kind, FL_ICE_DECIMAL);
    CHECK_EQ(out.u.dec.len, 2);
    CHECK_EQ(out.u.dec.scale, 2);
    CHECK_MEM(out.u.dec.unscaled, "\x04\x1a", 2);
    fl_buf_t b;
    fl_buf_init(&b, 0);
    CHECK_EQ(fl_ice_human_string(&t50, &out, &b), FL_OK);
    CHECK_STR(b.ptr, "10.50");
    in = vdec(dm1, 1, 2);
    REQUIRE(fl_ice_transform_apply(&t50, &in, &out) == FL_OK);
    CHECK_EQ(out.u.dec.len, 1);
    CHECK_EQ(out.u.dec.unscaled[0], 0xce); /* -50 */
    fl_buf_reset(&b);
    fl_ice_human_string(&t50, &out, &b);
    CHECK_STR(b.ptr, "-0.50");

    /* strings by code points, binary by bytes */
    fl_ice_transform_t t3 = tr("truncate[3]");
    in = vb(FL_ICE_STRING, "iceberg", 7);
    REQUIRE(fl_ice_transform_apply(&t3, &in, &out) == FL_OK);
    CHECK_EQ(out.kind, FL_ICE_STRING);
    CHECK_EQ(out.u.bytes.len, 3);
    CHECK_MEM(out.u.bytes.ptr, "ice", 3);
    in = vb(FL_ICE_STRING, "\xc3\xa9t\xc3\xa9 x", 8); /* "été x" */
    REQUIRE(fl_ice_transform_apply(&t3, &in, &out) == FL_OK);
    CHECK_EQ(out.u.bytes.len, 5);
    in = vb(FL_ICE_STRING, "\xf0\x9f\x98\x80", 4); /* one 4-byte code point */
    REQUIRE(fl_ice_transform_apply(&t3, &in, &out) == FL_OK);
    CHECK_EQ(out.u.bytes.len, 4);
    in = vb(FL_ICE_BINARY, "\x01\x02\x03\x04\x05", 5);
    REQUIRE(fl_ice_transform_apply(&t3, &in, &out) == FL_OK);
    CHECK_EQ(out.u.bytes.len, 3);
    in = vb(FL_ICE_BINARY, "\x01", 1);
    REQUIRE(fl_ice_transform_apply(&t3, &in, &out) == FL_OK);
    CHECK_EQ(out.u.bytes.len, 1);

    /* path: the truncated string, URL-encoded as Java URLEncoder does */
    fl_ice_transform_t t8 = tr("truncate[10]"); /* 10 code points, 11 bytes */
    in = vb(FL_ICE_STRING, "a b/c=d\xc3\xa9~*zz", 14);
    REQUIRE(fl_ice_transform_apply(&t8, &in, &out) == FL_OK);
    fl_buf_reset(&b);
    CHECK_EQ(fl_ice_partition_path_append(&b, "name_trunc", &t8, &out), FL_OK);
    CHECK_STR(b.ptr, "name_trunc=a+b%2Fc%3Dd%C3%A9%7E*");

    in = vi(FL_ICE_DATE, 1);
    CHECK_EQ(fl_ice_transform_apply(&t3, &in, &out), FL_ERR_INVALID);
    fl_buf_free(&b);
}

static int32_t apply_i(const char *ts, fl_ice_value_t in)
{
    fl_ice_transform_t t = tr(ts);
    fl_ice_value_t out;
    if (fl_ice_transform_apply(&t, &in, &out) != FL_OK)
        return 0x7eadbeef;
    return out.u.i;
}

static void human_of(const char *ts, fl_ice_value_t in, char *s, size_t n)
{
    fl_ice_transform_t t = tr(ts);
    fl_ice_value_t out;
    fl_buf_t b;
    fl_buf_init(&b, 0);
    s[0] = 0;
    if (fl_ice_transform_apply(&t, &in, &out) == FL_OK &&
        fl_ice_partition_path_append(&b, "ts", &t, &out) == FL_OK)
        snprintf(s, n, "%s", b.ptr);
    fl_buf_free(&b);
}

FL_TEST(transform_time)
{
    fl_ice_value_t ts = vl(FL_ICE_TIMESTAMP, TS_2017), d = vi(FL_ICE_DATE, D_2017_11_16);
    CHECK_EQ(apply_i("year", ts), 47);
    CHECK_EQ(apply_i("month", ts), 47 * 12 + 10);
    CHECK_EQ(apply_i("day", ts), D_2017_11_16);
    CHECK_EQ(apply_i("hour", ts), D_2017_11_16 * 24 + 22);
    CHECK_EQ(apply_i("year", d), 47);
    CHECK_EQ(apply_i("month", d), 574);
    CHECK_EQ(apply_i("day", d), D_2017_11_16);
    CHECK_EQ(apply_i("hour", d), 0x7eadbeef); /* hour needs a timestamp */
    CHECK_EQ(apply_i("year", vl(FL_ICE_TIMESTAMP_NS, TS_2017 * 1000)), 47);
    CHECK_EQ(apply_i("hour", vl(FL_ICE_TIMESTAMPTZ_NS, TS_2017 * 1000)), D_2017_11_16 * 24 + 22);

    /* pre-1970 floors toward negative infinity */
    fl_ice_value_t m1 = vl(FL_ICE_TIMESTAMP, -1); /* 1969-12-31T23:59:59.999999 */
    CHECK_EQ(apply_i("year", m1), -1);
    CHECK_EQ(apply_i("month", m1), -1);
    CHECK_EQ(apply_i("day", m1), -1);
    CHECK_EQ(apply_i("hour", m1), -1);
    CHECK_EQ(apply_i("day", vl(FL_ICE_TIMESTAMP_NS, -1)), -1);
    fl_ice_value_t y1969 = vl(FL_ICE_TIMESTAMP, -365LL * 86400 * 1000000); /* 1969-01-01 */
    CHECK_EQ(apply_i("year", y1969), -1);
    CHECK_EQ(apply_i("month", y1969), -12);
    CHECK_EQ(apply_i("day", y1969), -365);
    CHECK_EQ(apply_i("year", vl(FL_ICE_TIMESTAMP, -365LL * 86400 * 1000000 - 1)), -2);
    CHECK_EQ(apply_i("month", vi(FL_ICE_DATE, -31)), -1);  /* 1969-12-01 */
    CHECK_EQ(apply_i("month", vi(FL_ICE_DATE, -32)), -2);  /* 1969-11-30 */
    CHECK_EQ(apply_i("year", vi(FL_ICE_DATE, -719528)), -1970); /* 0000-01-01 */

    char s[80];
    human_of("day", ts, s, sizeof s);
    CHECK_STR(s, "ts=2017-11-16");
    human_of("hour", ts, s, sizeof s);
    CHECK_STR(s, "ts=2017-11-16-22");
    human_of("month", ts, s, sizeof s);
    CHECK_STR(s, "ts=2017-11");
    human_of("year", ts, s, sizeof s);
    CHECK_STR(s, "ts=2017");
    human_of("hour", m1, s, sizeof s);
    CHECK_STR(s, "ts=1969-12-31-23");
    human_of("month", m1, s, sizeof s);
    CHECK_STR(s, "ts=1969-12");
    human_of("day", vi(FL_ICE_DATE, -719528), s, sizeof s);
    CHECK_STR(s, "ts=0000-01-01");
    human_of("year", (fl_ice_value_t){ .kind = FL_ICE_NULL }, s, sizeof s);
    CHECK_STR(s, "ts=null");

    fl_ice_transform_t day = tr("day");
    fl_ice_value_t out;
    REQUIRE(fl_ice_transform_apply(&day, &ts, &out) == FL_OK);
    CHECK_EQ(out.kind, FL_ICE_DATE);
}

FL_TEST(transform_identity_human)
{
    char s[120];
    human_of("identity", vl(FL_ICE_TIMESTAMPTZ, TS_2017), s, sizeof s);
    CHECK_STR(s, "ts=2017-11-16T22%3A31%3A08%2B00%3A00");
    human_of("identity", vl(FL_ICE_TIMESTAMP, TS_2017 + 1500), s, sizeof s);
    CHECK_STR(s, "ts=2017-11-16T22%3A31%3A08.0015");
    human_of("identity", vl(FL_ICE_TIMESTAMP_NS, -1), s, sizeof s);
    CHECK_STR(s, "ts=1969-12-31T23%3A59%3A59.999999999");
    human_of("identity", vl(FL_ICE_TIME, T_22_31_08), s, sizeof s);
    CHECK_STR(s, "ts=22%3A31%3A08");
    human_of("identity", vl(FL_ICE_TIME, 22LL * 3600 * 1000000), s, sizeof s);
    CHECK_STR(s, "ts=22%3A00");
    human_of("identity", vl(FL_ICE_TIME, T_22_31_08 + 1000), s, sizeof s);
    CHECK_STR(s, "ts=22%3A31%3A08.001");
    human_of("identity", vb(FL_ICE_BINARY, "\0\1\2\3", 4), s, sizeof s);
    CHECK_STR(s, "ts=AAECAw%3D%3D");
    human_of("identity", (fl_ice_value_t){ .kind = FL_ICE_BOOLEAN, .u.b = true }, s, sizeof s);
    CHECK_STR(s, "ts=true");
    human_of("void", vi(FL_ICE_INT, 5), s, sizeof s);
    CHECK_STR(s, "ts=null");
    human_of("identity", vl(FL_ICE_LONG, -42), s, sizeof s);
    CHECK_STR(s, "ts=-42");

    fl_ice_value_t u = { .kind = FL_ICE_UUID };
    memcpy(u.u.uuid, "\xf7\x9c\x3e\x09\x67\x7c\x4b\xbd\xa4\x79\x3f\x34\x9c\xb7\x85\xe7", 16);
    human_of("identity", u, s, sizeof s);
    CHECK_STR(s, "ts=f79c3e09-677c-4bbd-a479-3f349cb785e7");

    static const struct { double d; const char *want; } dbl[] = {
        { 1.0, "1.0" }, { 0.1, "0.1" }, { -2.5, "-2.5" }, { 1e7, "1.0E7" }, { 123.0, "123.0" },
        { 0.001, "0.001" }, { 1e-4, "1.0E-4" }, { 1234567.5, "1234567.5" }, { 1.5e300, "1.5E300" },
    };
    for (size_t i = 0; i < sizeof dbl / sizeof dbl[0]; i++) {
        fl_ice_transform_t id = tr("identity");
        fl_ice_value_t v = { .kind = FL_ICE_DOUBLE, .u.d = dbl[i].d };
        fl_buf_t b;
        fl_buf_init(&b, 0);
        CHECK_EQ(fl_ice_human_string(&id, &v, &b), FL_OK);
        CHECK_STR(b.ptr, dbl[i].want);
        fl_buf_free(&b);
    }
    fl_ice_transform_t id = tr("identity");
    fl_ice_value_t f = { .kind = FL_ICE_FLOAT, .u.f = 0.1f };
    fl_buf_t b;
    fl_buf_init(&b, 0);
    fl_ice_human_string(&id, &f, &b);
    CHECK_STR(b.ptr, "0.1");
    /* BigDecimal.toString: 0.005 plain, 1E-7 scientific */
    static const unsigned char five[] = { 5 }, one[] = { 1 };
    fl_ice_value_t dv = vdec(five, 1, 3);
    fl_buf_reset(&b);
    fl_ice_human_string(&id, &dv, &b);
    CHECK_STR(b.ptr, "0.005");
    dv = vdec(one, 1, 7);
    fl_buf_reset(&b);
    fl_ice_human_string(&id, &dv, &b);
    CHECK_STR(b.ptr, "1E-7");
    dv = vdec(one, 1, 0);
    fl_buf_reset(&b);
    fl_ice_human_string(&id, &dv, &b);
    CHECK_STR(b.ptr, "1");
    fl_buf_free(&b);

    /* the field name is escaped as well */
    fl_buf_init(&b, 0);
    fl_ice_value_t v = vi(FL_ICE_INT, 7);
    CHECK_EQ(fl_ice_partition_path_append(&b, "a b", &id, &v), FL_OK);
    CHECK_STR(b.ptr, "a+b=7");
    fl_buf_free(&b);
}

FL_TEST(transform_parse)
{
    fl_ice_transform_t t;
    char s[32];
    static const char *good[] = { "identity", "bucket[16]", "truncate[3]", "year", "month",
                                  "day", "hour", "void", "bucket[2147483647]" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        REQUIRE(fl_ice_transform_parse(fl_slice_cstr(good[i]), &t) == FL_OK);
        CHECK_EQ(fl_ice_transform_str(&t, s, sizeof s), strlen(good[i]));
        CHECK_STR(s, good[i]);
    }
    CHECK_EQ(fl_ice_transform_parse(FL_SLICE("Bucket[7]"), &t), FL_OK);
    CHECK_EQ(t.kind, FL_ICE_T_BUCKET);
    CHECK_EQ(t.param, 7);
    CHECK_EQ(fl_ice_transform_parse(FL_SLICE("DAY"), &t), FL_OK);
    CHECK_EQ(t.kind, FL_ICE_T_DAY);

    static const char *bad[] = { "", "bucket", "bucket[]", "bucket[0]", "bucket[-1]",
                                 "bucket[1x]", "bucket[2147483648]", "bucket[99999999999999]",
                                 "bucket[16", "bucket16]", "bucket[16]x", "truncate", "truncate[0]",
                                 "truncate[ 3]", "identity ", "days", "years", "foo", "void[1]",
                                 "bucket[+3]", "bucket[[3]]" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (fl_ice_transform_parse(fl_slice_cstr(bad[i]), &t) != FL_ERR_INVALID)
            FL_FAIL("accepted \"%s\"", bad[i]);

    fl_ice_kind_t k;
    CHECK_EQ(fl_ice_transform_result_kind(&(fl_ice_transform_t){ FL_ICE_T_DAY, 0 },
                                          FL_ICE_TIMESTAMPTZ, &k), FL_OK);
    CHECK_EQ(k, FL_ICE_DATE);
    CHECK_EQ(fl_ice_transform_result_kind(&(fl_ice_transform_t){ FL_ICE_T_TRUNCATE, 4 },
                                          FL_ICE_STRING, &k), FL_OK);
    CHECK_EQ(k, FL_ICE_STRING);
    CHECK_EQ(fl_ice_transform_result_kind(&(fl_ice_transform_t){ FL_ICE_T_BUCKET, 4 },
                                          FL_ICE_UUID, &k), FL_OK);
    CHECK_EQ(k, FL_ICE_INT);
    CHECK_EQ(fl_ice_transform_result_kind(&(fl_ice_transform_t){ FL_ICE_T_BUCKET, 4 },
                                          FL_ICE_FLOAT, &k), FL_ERR_INVALID);
    CHECK_EQ(fl_ice_transform_result_kind(&(fl_ice_transform_t){ FL_ICE_T_TRUNCATE, 4 },
                                          FL_ICE_UUID, &k), FL_ERR_INVALID);
}
