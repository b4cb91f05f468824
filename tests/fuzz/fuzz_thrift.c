/* Fuzz target: Parquet metadata over the Thrift compact reader. The input is
 * decoded as a FileMetaData and as a PageHeader; whatever decodes is encoded
 * again, decoded again, and must compare equal (and re-encode byte-identically). */
#include "format/parquet_meta.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fl_pq_file_meta_t m, m2;
    if (fl_pq_file_meta_decode(data, size, &m) == FL_OK) {
        fl_buf_t b, b2;
        fl_buf_init(&b, 0);
        fl_buf_init(&b2, 0);
        if (fl_pq_file_meta_encode(&m, &b) != FL_OK) abort();
        if (fl_pq_file_meta_decode(b.ptr, b.len, &m2) != FL_OK) abort();
        if (!fl_pq_file_meta_eq(&m, &m2)) abort();
        if (fl_pq_file_meta_encode(&m2, &b2) != FL_OK) abort();
        if (b.len != b2.len || memcmp(b.ptr, b2.ptr, b.len)) abort();
        fl_pq_file_meta_free(&m2);
        fl_pq_file_meta_free(&m);
        fl_buf_free(&b);
        fl_buf_free(&b2);
    }
    fl_pq_page_header_t h, h2;
    size_t used = 0;
    if (fl_pq_page_header_decode(data, size, &h, &used) == FL_OK) {
        fl_buf_t b;
        size_t used2 = 0;
        if (used > size) abort();
        fl_buf_init(&b, 0);
        if (fl_pq_page_header_encode(&h, &b) != FL_OK) abort();
        if (fl_pq_page_header_decode(b.ptr, b.len, &h2, &used2) != FL_OK) abort();
        if (used2 != b.len || !fl_pq_page_header_eq(&h, &h2)) abort();
        fl_pq_page_header_free(&h2);
        fl_pq_page_header_free(&h);
        fl_buf_free(&b);
    }
    return 0;
}
