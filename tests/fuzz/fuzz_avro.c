/* Fuzz target: Avro object-container reader. The input is a container file; every block is
 * decompressed and its records decoded as {long id, string name, ["null","double"] score}
 * until the first error. The records decoded are written to a new container (with the input's
 * codec) and read back, which must give the same bytes. Nothing may crash or leak. */
#include "format/avro.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *schema_json =
    "{\"type\":\"record\",\"name\":\"rec\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"},"
    "{\"name\":\"name\",\"type\":\"string\"},{\"name\":\"score\",\"type\":[\"null\",\"double\"]}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fl_avro_reader_t r;
    fl_buf_t recs, file;
    fl_buf_init(&recs, 1 << 20);
    fl_buf_init(&file, 0);
    if (fl_avro_reader_open(&r, fl_slice((const char *)data, size)))
        goto out;
    fl_slice_t v;
    fl_avro_reader_meta(&r, "schema", &v);
    int64_t nrec = 0;
    for (int stop = 0; !stop;) {
        fl_slice_t blk;
        int64_t count;
        bool done;
        if (fl_avro_reader_next(&r, &blk, &count, &done) || done)
            break;
        fl_avro_dec_t d;
        fl_avro_dec_init(&d, blk);
        for (int64_t i = 0; i < count; i++) {
            const unsigned char *start = d.p;
            int64_t id, br;
            fl_slice_t name;
            double score;
            if (fl_avro_get_long(&d, &id) || fl_avro_get_string(&d, &name) ||
                fl_avro_get_union(&d, 2, &br) || (br == 1 && fl_avro_get_double(&d, &score))) {
                stop = 1;
                break;
            }
            if (fl_buf_add(&recs, start, (size_t)(d.p - start))) {
                stop = 1;
                break;
            }
            nrec++;
        }
    }
    /* re-encode what decoded and read it back */
    fl_avro_writer_t w;
    fl_avro_meta_t m = { "fuzz", FL_SLICE("1") };
    if (fl_avro_writer_open(&w, &file, r.codec, schema_json, &m, 1))
        goto out;
    w.block_bytes = 512;
    fl_avro_dec_t d;
    fl_avro_dec_init(&d, fl_slice(recs.ptr, recs.len));
    for (int64_t i = 0; i < nrec; i++) {
        const unsigned char *start = d.p;
        int64_t id, br;
        fl_slice_t name;
        double score;
        if (fl_avro_get_long(&d, &id) || fl_avro_get_string(&d, &name) ||
            fl_avro_get_union(&d, 2, &br) || (br == 1 && fl_avro_get_double(&d, &score)))
            abort();
        if (fl_avro_writer_append(&w, start, (size_t)(d.p - start)))
            abort();
    }
    if (fl_avro_writer_finish(&w))
        abort();
    fl_avro_reader_t r2;
    if (fl_avro_reader_open(&r2, fl_slice(file.ptr, file.len)))
        abort();
    size_t off = 0;
    int64_t got = 0;
    for (;;) {
        fl_slice_t blk;
        int64_t count;
        bool done;
        if (fl_avro_reader_next(&r2, &blk, &count, &done))
            abort();
        if (done)
            break;
        if (blk.len > recs.len - off || memcmp(blk.ptr, recs.ptr + off, blk.len))
            abort();
        off += blk.len;
        got += count;
    }
    if (off != recs.len || got != nrec)
        abort();
    fl_avro_reader_close(&r2);
out:
    fl_avro_reader_close(&r);
    fl_buf_free(&recs);
    fl_buf_free(&file);
    return 0;
}
