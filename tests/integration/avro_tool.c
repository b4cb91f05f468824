/* Test helper for test_avro_interop.py: floe's Avro container reader/writer on the
 * schema {long id, string name, ["null","double"] score}.
 *   avro_tool read FILE          records as JSON lines on stdout
 *   avro_tool meta FILE KEY      one header metadata value on stdout
 *   avro_tool write CODEC FILE   JSON lines from stdin into FILE (meta floe.test=interop,
 *                                small blocks so there are many) */
#include "format/avro.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *schema_json =
    "{\"type\":\"record\",\"name\":\"rec\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"},"
    "{\"name\":\"name\",\"type\":\"string\"},{\"name\":\"score\",\"type\":[\"null\",\"double\"],"
    "\"default\":null}]}";

static char *slurp(FILE *f, size_t *n)
{
    size_t cap = 1 << 16, len = 0, r;
    char *p = malloc(cap);
    while (p && (r = fread(p + len, 1, cap - len, f)) > 0) {
        len += r;
        if (len == cap)
            p = realloc(p, cap *= 2);
    }
    *n = len;
    return p;
}

static int do_read(const char *path, const char *key)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 2;
    }
    size_t n;
    char *file = slurp(f, &n);
    fclose(f);
    fl_avro_reader_t r;
    fl_err_t e = fl_avro_reader_open(&r, fl_slice(file, n));
    if (e) {
        fprintf(stderr, "open: %s\n", fl_err_str(e));
        free(file);
        return 1;
    }
    if (key) {
        fl_slice_t v;
        if ((e = fl_avro_reader_meta(&r, key, &v)) == FL_OK)
            fwrite(v.ptr, 1, v.len, stdout);
        goto out;
    }
    for (;;) {
        fl_slice_t data;
        int64_t count;
        bool done;
        if ((e = fl_avro_reader_next(&r, &data, &count, &done)) || done)
            break;
        fl_avro_dec_t d;
        fl_avro_dec_init(&d, data);
        for (int64_t i = 0; i < count && !e; i++) {
            int64_t id, br;
            fl_slice_t name;
            double score = 0;
            if ((e = fl_avro_get_long(&d, &id)) || (e = fl_avro_get_string(&d, &name)) ||
                (e = fl_avro_get_union(&d, 2, &br)) || (br == 1 && (e = fl_avro_get_double(&d, &score))))
                break;
            json_t *o = json_object();
            json_object_set_new(o, "id", json_integer(id));
            json_object_set_new(o, "name", json_stringn(name.ptr, name.len));
            json_object_set_new(o, "score", br == 1 ? json_real(score) : json_null());
            char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
            puts(s);
            free(s);
            json_decref(o);
        }
        if (!e && fl_avro_dec_left(&d) != 0)
            e = FL_ERR_INVALID;
        if (e)
            break;
    }
out:
    fl_avro_reader_close(&r);
    free(file);
    if (e)
        fprintf(stderr, "read: %s\n", fl_err_str(e));
    return e ? 1 : 0;
}

static int do_write(const char *codec_name, const char *path)
{
    fl_avro_codec_t codec;
    if (fl_avro_codec_parse(fl_slice_cstr(codec_name), &codec)) {
        fprintf(stderr, "unknown codec %s\n", codec_name);
        return 2;
    }
    fl_buf_t out;
    fl_buf_init(&out, 0);
    fl_avro_meta_t meta = { "floe.test", FL_SLICE("interop") };
    fl_avro_writer_t w;
    fl_err_t e = fl_avro_writer_open(&w, &out, codec, schema_json, &meta, 1);
    if (e)
        goto out;
    w.block_bytes = 256;
    char line[65536];
    while (!e && fgets(line, sizeof line, stdin)) {
        json_error_t jerr;
        json_t *o = json_loads(line, 0, &jerr);
        if (!o) {
            e = FL_ERR_INVALID;
            break;
        }
        fl_buf_t *b = fl_avro_writer_record(&w);
        json_t *name = json_object_get(o, "name"), *score = json_object_get(o, "score");
        fl_avro_put_long(b, json_integer_value(json_object_get(o, "id")));
        fl_avro_put_string(b, fl_slice(json_string_value(name), json_string_length(name)));
        if (!score || json_is_null(score)) {
            fl_avro_put_union(b, 0);
        } else {
            fl_avro_put_union(b, 1);
            fl_avro_put_double(b, json_number_value(score));
        }
        json_decref(o);
        e = fl_avro_writer_end_record(&w);
    }
    if (e)
        fl_avro_writer_free(&w);
    else
        e = fl_avro_writer_finish(&w);
    if (!e) {
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(out.ptr, 1, out.len, f) != out.len)
            e = FL_ERR_IO;
        if (f && fclose(f))
            e = FL_ERR_IO;
    }
out:
    fl_buf_free(&out);
    if (e)
        fprintf(stderr, "write: %s\n", fl_err_str(e));
    return e ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "read"))
        return do_read(argv[2], NULL);
    if (argc == 4 && !strcmp(argv[1], "meta"))
        return do_read(argv[2], argv[3]);
    if (argc == 4 && !strcmp(argv[1], "write"))
        return do_write(argv[2], argv[3]);
    fprintf(stderr, "usage: avro_tool read FILE | meta FILE KEY | write CODEC FILE\n");
    return 2;
}
