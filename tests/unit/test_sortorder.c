/* Sort orders (iceberg/sortorder.h): binding the default order from metadata,
 * the lexicographic permutation over types, directions and null orders, and
 * Iceberg's ZOrderByteUtils forms and bit interleave. */
#include "test.h"
#include <math.h>
#include <string.h>
#include "iceberg/schema.h"
#include "iceberg/sortorder.h"

static void schema_of(fl_field_t *root)
{
    memset(root, 0, sizeof *root);
    fl_field_set(root, 0, "table", true, FL_TYPE_STRUCT);
    fl_field_set(fl_field_add_child(root), 1, "d", false, FL_TYPE_DOUBLE);
    fl_field_set(fl_field_add_child(root), 2, "s", false, FL_TYPE_STRING);
    fl_field_set(fl_field_add_child(root), 3, "i", false, FL_TYPE_INT);
}

static fl_sort_order_t order1(int32_t src, bool desc, bool nulls_first)
{
    fl_sort_order_t o = { 1, NULL, 1 };
    o.fields = calloc(1, sizeof *o.fields);
    o.fields[0] = (fl_sort_field_t){ src, { FL_ICE_T_IDENTITY, 0 }, desc, nulls_first };
    return o;
}

FL_TEST(sortorder_from_metadata)
{
    fl_field_t root;
    schema_of(&root);
    json_t *md = json_loads("{\"default-sort-order-id\":2,\"sort-orders\":[{\"order-id\":0,\"fields\":[]},"
                            "{\"order-id\":2,\"fields\":[{\"source-id\":3,\"transform\":\"bucket[4]\",\"direction\":\"desc\","
                            "\"null-order\":\"nulls-last\"},{\"source-id\":2,\"transform\":\"truncate[2]\",\"direction\":"
                            "\"asc\",\"null-order\":\"nulls-first\"}]}]}", 0, NULL);
    fl_sort_order_t o;
    char err[256] = "";
    REQUIRE(fl_sort_order_from_metadata(md, &root, &o, err, sizeof err) == FL_OK);
    CHECK_EQ(o.order_id, 2);
    REQUIRE(o.n == 2);
    CHECK_EQ(o.fields[0].source_id, 3);
    CHECK_EQ(o.fields[0].transform.kind, FL_ICE_T_BUCKET);
    CHECK(o.fields[0].desc && !o.fields[0].nulls_first);
    CHECK(!o.fields[1].desc && o.fields[1].nulls_first);
    fl_sort_order_free(&o);
    /* unsorted */
    json_object_set_new(md, "default-sort-order-id", json_integer(0));
    REQUIRE(fl_sort_order_from_metadata(md, &root, &o, err, sizeof err) == FL_OK);
    CHECK_EQ(o.n, 0);
    /* a transform that does not apply (bucket of a double) */
    json_t *bad = json_loads("{\"default-sort-order-id\":1,\"sort-orders\":[{\"order-id\":1,\"fields\":[{\"source-id\":1,"
                             "\"transform\":\"bucket[4]\",\"direction\":\"asc\",\"null-order\":\"nulls-first\"}]}]}", 0, NULL);
    CHECK(fl_sort_order_from_metadata(bad, &root, &o, err, sizeof err) == FL_ERR_INVALID);
    CHECK(strstr(err, "does not apply") != NULL);
    json_decref(bad);
    json_decref(md);
    fl_field_free(&root);
}

/* Doubles in Iceberg's order, asc and desc, nulls first and last. */
FL_TEST(sortorder_doubles_nulls_directions)
{
    fl_field_t root;
    schema_of(&root);
    fl_vec_t v;
    fl_vec_init(&v, &root);
    const double d[] = { 1.5, -0.0, NAN, -INFINITY, 0.0, -2.0, INFINITY, -NAN, 3.0 };
    const size_t nd = sizeof d / sizeof d[0];
    for (size_t i = 0; i < nd + 1; i++) {
        fl_vec_append_struct(&v);
        if (i == nd) fl_vec_append_null(&v.children[0]);
        else fl_vec_append_f64(&v.children[0], d[i]);
        fl_vec_append_null(&v.children[1]);
        fl_vec_append_null(&v.children[2]);
    }
    uint32_t p[16];
    char err[128];
    fl_sort_order_t o = order1(1, false, true);
    REQUIRE(fl_sort_permutation(&o, false, &v, p, err, sizeof err) == FL_OK);
    /* null, -NaN, -inf, -2, -0, 0, 1.5, 3, inf, NaN */
    const uint32_t asc[] = { 9, 7, 3, 5, 1, 4, 0, 8, 6, 2 };
    for (size_t i = 0; i < 10; i++) CHECK_EQ(p[i], asc[i]);
    o.fields[0].desc = true;
    o.fields[0].nulls_first = false;
    REQUIRE(fl_sort_permutation(&o, false, &v, p, err, sizeof err) == FL_OK);
    const uint32_t desc[] = { 2, 6, 8, 0, 4, 1, 5, 3, 7, 9 };
    for (size_t i = 0; i < 10; i++) CHECK_EQ(p[i], desc[i]);
    fl_sort_order_free(&o);
    fl_vec_free(&v);
    fl_field_free(&root);
}

/* Strings by unsigned bytes, prefixes first, embedded zero bytes; stable ties; desc reverses. */
FL_TEST(sortorder_strings)
{
    fl_field_t root;
    schema_of(&root);
    fl_vec_t v;
    fl_vec_init(&v, &root);
    const char *s[] = { "b", "ab", "a", "a\0", "\xc3\xa9", "", "ab", "a\0b" };
    const size_t len[] = { 1, 2, 1, 2, 2, 0, 2, 3 };
    for (size_t i = 0; i < 8; i++) {
        fl_vec_append_struct(&v);
        fl_vec_append_null(&v.children[0]);
        fl_vec_append_bytes(&v.children[1], s[i], len[i]);
        fl_vec_append_null(&v.children[2]);
    }
    uint32_t p[8];
    char err[128];
    fl_sort_order_t o = order1(2, false, true);
    REQUIRE(fl_sort_permutation(&o, false, &v, p, err, sizeof err) == FL_OK);
    /* "", "a", "a\0", "a\0b", "ab"(1), "ab"(6), "b", "é" */
    const uint32_t asc[] = { 5, 2, 3, 7, 1, 6, 0, 4 };
    for (size_t i = 0; i < 8; i++) CHECK_EQ(p[i], asc[i]);
    o.fields[0].desc = true;
    REQUIRE(fl_sort_permutation(&o, false, &v, p, err, sizeof err) == FL_OK);
    const uint32_t desc[] = { 4, 0, 1, 6, 7, 3, 2, 5 };
    for (size_t i = 0; i < 8; i++) CHECK_EQ(p[i], desc[i]);
    fl_sort_order_free(&o);
    fl_vec_free(&v);
    fl_field_free(&root);
}

FL_TEST(sortorder_zorder_bytes_and_interleave)
{
    unsigned char a[8], b[8];
    fl_ice_value_t x = { .kind = FL_ICE_INT };
    x.u.i = -1;
    fl_zorder_bytes(&x, a);
    x.u.i = 0;
    fl_zorder_bytes(&x, b);
    CHECK(memcmp(a, b, 8) < 0);
    CHECK_EQ(b[0], 0x80);
    CHECK_EQ(a[0], 0x7f);
    CHECK_EQ(a[7], 0xff);
    fl_ice_value_t d = { .kind = FL_ICE_DOUBLE };
    d.u.d = -3.0;
    fl_zorder_bytes(&d, a);
    d.u.d = -2.0;
    fl_zorder_bytes(&d, b);
    CHECK(memcmp(a, b, 8) < 0);
    fl_ice_value_t s = { .kind = FL_ICE_STRING };
    s.u.bytes.ptr = (const unsigned char *)"abcdefghij";
    s.u.bytes.len = 10;
    fl_zorder_bytes(&s, a);
    CHECK_MEM(a, "abcdefgh", 8);
    s.u.bytes.len = 2;
    fl_zorder_bytes(&s, a);
    CHECK_MEM(a, "ab\0\0\0\0\0\0", 8);
    fl_ice_value_t n = { .kind = FL_ICE_NULL };
    fl_zorder_bytes(&n, a);
    CHECK_MEM(a, "\0\0\0\0\0\0\0\0", 8);
    /* interleave: column 0 = 0xff.., column 1 = 0x00.. -> 0xaa..; 0xf0/0x0f first bytes */
    unsigned char cols[16], out[16];
    memset(cols, 0xff, 8);
    memset(cols + 8, 0, 8);
    fl_zorder_interleave(cols, 2, out);
    for (int i = 0; i < 16; i++) CHECK_EQ(out[i], 0xaa);
    memset(cols, 0, 16);
    cols[0] = 0xf0;
    cols[8] = 0x0f;
    fl_zorder_interleave(cols, 2, out);
    CHECK_EQ(out[0], 0xaa);
    CHECK_EQ(out[1], 0x55);
    CHECK_EQ(out[2], 0);
}
