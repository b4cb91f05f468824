/* Portable Roaring bitmaps (format/roaring.h) and Puffin deletion vectors
 * (iceberg/puffin.h) against bytes real peers wrote: pyroaring's BitMap64
 * serialization (array, run and bitmap containers over two 32-bit keys) and a
 * Puffin file Spark (Iceberg 1.10.1) wrote for a merge-on-read DELETE, whose
 * positions PyIceberg 0.12 decodes as checked below; plus malformed inputs. */
#include "test.h"
#include <stdlib.h>
#include <string.h>
#include "base/checksum.h"
#include "format/roaring.h"
#include "iceberg/puffin.h"
#include "puffin_fixtures.h"

static fl_slice_t S(const unsigned char *p, size_t n) { return fl_slice((const char *)p, n); }

/* The values of PYROARING_MIXED, ascending. */
static size_t mixed_values(int64_t **out)
{
    int64_t *v = malloc(30000 * sizeof *v);
    size_t n = 0;
    for (int64_t i = 0; i < 10; i++) v[n++] = i;
    v[n++] = 70000;
    for (int64_t i = 200000; i < 210000; i++) v[n++] = i;
    v[n++] = (5LL << 32) + 7;
    for (int64_t k = 0; k < 5000; k++) v[n++] = (5LL << 32) + 100000 + 2 * k;
    *out = v;
    return n;
}

FL_TEST(roaring_reads_pyroaring_portable64)
{
    fl_roaring64_t r;
    char err[256] = "";
    REQUIRE(!fl_roaring64_parse(S(PYROARING_MIXED, sizeof PYROARING_MIXED), &r, err, sizeof err));
    int64_t *want;
    size_t nw = mixed_values(&want);
    CHECK_EQ(r.cardinality, nw);
    bool types[3] = { false, false, false };
    for (size_t i = 0; i < r.n; i++) types[r.c[i].type] = true;
    CHECK(types[0] && types[1] && types[2]); /* the fixture covers all three container kinds */
    int64_t *got = NULL;
    size_t ng = 0;
    fl_roaring64_values(&r, UINT64_MAX, &got, &ng);
    if (ng == nw) CHECK_MEM(got, want, nw * sizeof *got);
    else FL_FAIL("%zu values, want %zu", ng, nw);
    for (size_t i = 0; i < nw; i++)
        if (!fl_roaring64_contains(&r, (uint64_t)want[i])) { FL_FAIL("missing %lld", (long long)want[i]); break; }
    CHECK(!fl_roaring64_contains(&r, 10));
    CHECK(!fl_roaring64_contains(&r, 210000));
    CHECK(!fl_roaring64_contains(&r, (5ULL << 32) + 100001));
    CHECK(!fl_roaring64_contains(&r, 1ULL << 32));
    /* a limit cuts the values (positions of a file with that many rows) */
    free(got);
    got = NULL;
    ng = 0;
    fl_roaring64_values(&r, 200005, &got, &ng);
    CHECK_EQ(ng, 16);
    CHECK_EQ(got[15], 200004);
    free(got);
    free(want);
    fl_roaring64_free(&r);
}

FL_TEST(roaring_rejects_malformed)
{
    fl_roaring64_t r;
    char err[256] = "";
    size_t n = sizeof PYROARING_MIXED;
    unsigned char *b = malloc(n + 1);
    /* every truncation fails cleanly */
    for (size_t cut = 0; cut < n; cut += (cut < 64 ? 1 : 97)) {
        memcpy(b, PYROARING_MIXED, cut);
        if (!fl_roaring64_parse(S(b, cut), &r, err, sizeof err)) { FL_FAIL("truncated at %zu parsed", cut); fl_roaring64_free(&r); }
    }
    /* trailing garbage */
    memcpy(b, PYROARING_MIXED, n);
    b[n] = 0;
    CHECK(fl_roaring64_parse(S(b, n + 1), &r, err, sizeof err) == FL_ERR_INVALID);
    CHECK(strstr(err, "after the last bitmap") != NULL);
    /* a bad cookie */
    memcpy(b, PYROARING_MIXED, n);
    b[12] ^= 0x55;
    CHECK(fl_roaring64_parse(S(b, n), &r, err, sizeof err) == FL_ERR_INVALID);
    CHECK(strstr(err, "cookie") != NULL);
    /* descending keys: swap the 64-bit keys 0 and 5 by making the first 7 */
    memcpy(b, PYROARING_MIXED, n);
    b[8] = 7;
    CHECK(fl_roaring64_parse(S(b, n), &r, err, sizeof err) == FL_ERR_INVALID);
    /* a huge bitmap count */
    memcpy(b, PYROARING_MIXED, n);
    b[7] = 0x7f;
    CHECK(fl_roaring64_parse(S(b, n), &r, err, sizeof err) == FL_ERR_INVALID);
    free(b);
    /* an array container with values out of order, and a negative (top-bit) key */
    static const unsigned char unsorted[] = { 1, 0, 0, 0, 0, 0, 0, 0, /* one bitmap */ 0, 0, 0, 0, /* key 0 */
                                              0x3a, 0x30, 0, 0, 1, 0, 0, 0, /* no-run cookie, 1 container */
                                              0, 0, 1, 0, /* key 0, card 2 */ 16, 0, 0, 0, /* offset */
                                              5, 0, 3, 0 };
    CHECK(fl_roaring64_parse(S(unsorted, sizeof unsorted), &r, err, sizeof err) == FL_ERR_INVALID);
    CHECK(strstr(err, "ascending") != NULL);
    unsigned char neg[sizeof unsorted];
    memcpy(neg, unsorted, sizeof neg);
    neg[11] = 0x80;
    neg[28] = 3;
    neg[30] = 5;
    CHECK(fl_roaring64_parse(S(neg, sizeof neg), &r, err, sizeof err) == FL_ERR_INVALID);
    neg[11] = 0;
    CHECK(!fl_roaring64_parse(S(neg, sizeof neg), &r, err, sizeof err));
    CHECK_EQ(r.cardinality, 2);
    fl_roaring64_free(&r);
    neg[24] = 12; /* an offset that does not match the layout */
    CHECK(fl_roaring64_parse(S(neg, sizeof neg), &r, err, sizeof err) == FL_ERR_INVALID);
    /* empty: zero bitmaps */
    static const unsigned char empty[8] = { 0 };
    CHECK(!fl_roaring64_parse(S(empty, 8), &r, err, sizeof err));
    CHECK_EQ(r.cardinality, 0);
    fl_roaring64_free(&r);
}

FL_TEST(puffin_dv_blob_framing)
{
    fl_roaring64_t r;
    char err[256] = "";
    size_t n = sizeof PYROARING_DV_SMALL;
    REQUIRE(!fl_puffin_dv_parse(S(PYROARING_DV_SMALL, n), &r, err, sizeof err));
    CHECK_EQ(r.cardinality, 4);
    CHECK(fl_roaring64_contains(&r, 1000) && fl_roaring64_contains(&r, 5) && !fl_roaring64_contains(&r, 4));
    fl_roaring64_free(&r);
    unsigned char *b = malloc(n);
    memcpy(b, PYROARING_DV_SMALL, n);
    b[n - 1] ^= 1; /* CRC */
    CHECK(fl_puffin_dv_parse(S(b, n), &r, err, sizeof err) == FL_ERR_INVALID);
    CHECK(strstr(err, "CRC-32") != NULL);
    memcpy(b, PYROARING_DV_SMALL, n);
    b[4] = 0; /* magic */
    CHECK(fl_puffin_dv_parse(S(b, n), &r, err, sizeof err) == FL_ERR_INVALID);
    CHECK(strstr(err, "magic") != NULL);
    memcpy(b, PYROARING_DV_SMALL, n);
    b[3]++; /* length */
    CHECK(fl_puffin_dv_parse(S(b, n), &r, err, sizeof err) == FL_ERR_INVALID);
    CHECK(strstr(err, "length") != NULL);
    free(b);
}

FL_TEST(puffin_reads_spark_deletion_vectors)
{
    fl_slice_t file = S(SPARK_DV_PUFFIN, sizeof SPARK_DV_PUFFIN);
    fl_puffin_blob_t *b;
    size_t n;
    char err[256] = "";
    REQUIRE(!fl_puffin_footer(file, &b, &n, err, sizeof err));
    REQUIRE(n == 6);
    /* what PyIceberg 0.12 decodes from the same file */
    static const int64_t want[6][4] = { { 0, 1, 3 }, { 0, 1, 2, 4 }, { 0 }, { 7 }, { 0, 1 }, { 8, 9 } };
    static const size_t nwant[6] = { 3, 4, 1, 1, 2, 2 };
    for (size_t i = 0; i < n; i++) {
        CHECK_STR(b[i].type, "deletion-vector-v1");
        CHECK(b[i].codec == NULL);
        REQUIRE(b[i].referenced_data_file != NULL);
        CHECK_EQ(b[i].cardinality, nwant[i]);
        fl_roaring64_t r;
        /* by the manifest entry's offset and size, and by the referenced data file */
        REQUIRE(!fl_puffin_read_dv(file, b, n, b[i].offset, b[i].length, b[i].referenced_data_file, (int64_t)nwant[i], &r, err,
                                   sizeof err));
        int64_t *v = NULL;
        size_t nv = 0;
        fl_roaring64_values(&r, UINT64_MAX, &v, &nv);
        CHECK_EQ(nv, nwant[i]);
        if (nv == nwant[i]) CHECK_MEM(v, want[i], nv * sizeof *v);
        free(v);
        fl_roaring64_free(&r);
        REQUIRE(!fl_puffin_read_dv(file, b, n, -1, -1, b[i].referenced_data_file, -1, &r, err, sizeof err));
        CHECK_EQ(r.cardinality, nwant[i]);
        fl_roaring64_free(&r);
        /* a record count that disagrees, another data file, a range no blob has */
        CHECK(fl_puffin_read_dv(file, b, n, b[i].offset, b[i].length, NULL, 99, &r, err, sizeof err) == FL_ERR_INVALID);
        CHECK(strstr(err, "manifest entry says 99") != NULL);
        CHECK(fl_puffin_read_dv(file, b, n, b[i].offset, b[i].length, "s3://x/other.parquet", -1, &r, err, sizeof err) ==
              FL_ERR_INVALID);
        CHECK(fl_puffin_read_dv(file, b, n, b[i].offset + 1, b[i].length, NULL, -1, &r, err, sizeof err) == FL_ERR_INVALID);
    }
    fl_puffin_blobs_free(b, n);
    /* malformed files */
    size_t len = sizeof SPARK_DV_PUFFIN;
    unsigned char *c = malloc(len);
    memcpy(c, SPARK_DV_PUFFIN, len);
    c[0] = 'X';
    CHECK(fl_puffin_footer(S(c, len), &b, &n, err, sizeof err) == FL_ERR_INVALID);
    CHECK(strstr(err, "not a Puffin file") != NULL);
    memcpy(c, SPARK_DV_PUFFIN, len);
    c[len - 8] = 1; /* compressed footer */
    CHECK(fl_puffin_footer(S(c, len), &b, &n, err, sizeof err) == FL_ERR_INVALID);
    CHECK(strstr(err, "LZ4") != NULL);
    memcpy(c, SPARK_DV_PUFFIN, len);
    c[len - 10] = 0x7f; /* payload size past the file */
    CHECK(fl_puffin_footer(S(c, len), &b, &n, err, sizeof err) == FL_ERR_INVALID);
    for (size_t cut = 0; cut < len; cut += 37)
        if (!fl_puffin_footer(S(SPARK_DV_PUFFIN, cut), &b, &n, err, sizeof err)) { FL_FAIL("cut %zu", cut); fl_puffin_blobs_free(b, n); }
    free(c);
}
