/* Fuzz target: Puffin files, deletion-vector-v1 blobs and portable Roaring bitmaps
 * (iceberg/puffin.h, format/roaring.h). The input is read as a Puffin file (each blob the
 * footer lists is read as a deletion vector), as a deletion-vector blob and as a bare
 * 64-bit bitmap. A bitmap that parses must agree with itself: its values are ascending,
 * as many as its cardinality, and each is contained. Nothing may crash or leak; bad input
 * fails with FL_ERR_INVALID and a message. */
#include "iceberg/puffin.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check(const fl_roaring64_t *r)
{
    int64_t *v = NULL;
    size_t n = 0;
    if (r->cardinality > (1u << 22)) return; /* runs expand: keep the check bounded */
    fl_roaring64_values(r, UINT64_MAX, &v, &n);
    if (n != r->cardinality) abort();
    for (size_t i = 0; i < n; i++) {
        if (i && v[i] <= v[i - 1]) abort();
        if (i % 97 == 0 && !fl_roaring64_contains(r, (uint64_t)v[i])) abort();
    }
    free(v);
}

static void expect_invalid(fl_err_t e, const char *err)
{
    if (e && (e != FL_ERR_INVALID || !err[0])) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fl_slice_t in = fl_slice((const char *)data, size);
    char err[256] = "";
    fl_roaring64_t r;
    fl_err_t e = fl_roaring64_parse(in, &r, err, sizeof err);
    expect_invalid(e, err);
    if (!e) { check(&r); fl_roaring64_free(&r); }
    err[0] = 0;
    e = fl_puffin_dv_parse(in, &r, err, sizeof err);
    expect_invalid(e, err);
    if (!e) { check(&r); fl_roaring64_free(&r); }
    fl_puffin_blob_t *b;
    size_t n;
    err[0] = 0;
    e = fl_puffin_footer(in, &b, &n, err, sizeof err);
    expect_invalid(e, err);
    if (!e) {
        for (size_t i = 0; i < n; i++) {
            err[0] = 0;
            e = fl_puffin_read_dv(in, b, n, i % 2 ? -1 : b[i].offset, b[i].length, b[i].referenced_data_file,
                                  b[i].cardinality, &r, err, sizeof err);
            expect_invalid(e, err);
            if (!e) { check(&r); fl_roaring64_free(&r); }
        }
        fl_puffin_blobs_free(b, n);
    }
    return 0;
}
