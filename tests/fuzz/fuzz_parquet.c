/* Fuzz target: the input is a whole Parquet file read through the reader
 * (memory source): footer, schema, every row group of every column, then the
 * same again through a projection of the file schema onto itself by id with
 * every top-level field made optional. Any error is fine; crashes, leaks and
 * sanitizer reports are not. */
#include "format/parquet.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void read_all(fl_pq_reader_t *r)
{
    fl_vec_t v;
    memset(&v, 0, sizeof v);
    for (int i = 0; i < 1000; i++) {
        bool done = false;
        if (fl_pq_reader_next(r, &v, &done) != FL_OK || done) break;
        fl_buf_t b;
        fl_buf_init(&b, 0);
        for (size_t k = 0; k < v.len && k < 4; k++) (void)fl_vec_json_append(&v, k, &b);
        fl_buf_free(&b);
    }
    fl_vec_free(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fl_pq_reader_t *r = NULL;
    if (fl_pq_reader_open(&r, fl_pq_source_mem(data, size)) != FL_OK) return 0;
    (void)fl_pq_reader_num_rows(r);
    fl_slice_t kv;
    (void)fl_pq_reader_kv(r, "ARROW:schema", &kv);
    read_all(r);
    fl_pq_reader_free(r);

    if (fl_pq_reader_open(&r, fl_pq_source_mem(data, size)) != FL_OK) return 0;
    static const char mapping[] = "[{\"field-id\":1,\"names\":[\"a\",\"id\"]},"
                                  "{\"field-id\":2,\"names\":[\"s\"],\"fields\":[{\"field-id\":3,\"names\":[\"element\",\"x\"]}]}]";
    (void)fl_pq_reader_name_mapping(r, fl_slice(mapping, sizeof mapping - 1));
    fl_field_t exp;
    fl_field_copy(&exp, fl_pq_reader_file_schema(r));
    for (uint32_t i = 0; i < exp.n_children; i++) exp.children[i].required = false;
    if (fl_pq_reader_project(r, &exp) == FL_OK) read_all(r);
    fl_pq_reader_free(r);
    fl_field_free(&exp);
    return 0;
}
