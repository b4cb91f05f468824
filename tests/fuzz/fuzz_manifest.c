/* Fuzz target: Iceberg manifest lists and manifests. The input is an Avro container file;
 * it is read as a manifest list and as a manifest (with sequence-number inheritance). A list
 * that reads is written again (v2) and must read back with the same paths and counts. A
 * manifest's header "schema" / "partition-spec" go through the schema and spec binding, and
 * when they bind, the entries are written into a new manifest (entries the spec refuses are
 * skipped) which must read back. Nothing may crash or leak. */
#include "iceberg/manifest.h"
#include "iceberg/schema.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void rewrite_list(const fl_manifest_file_t *fs, size_t n)
{
    fl_buf_t out;
    fl_buf_init(&out, 0);
    if (fl_manifest_list_write(2, 1, -1, 1, fs, n, FL_AVRO_CODEC_NULL, &out))
        abort();
    fl_manifest_file_t *back;
    size_t m;
    char err[128];
    if (fl_manifest_list_read(fl_slice(out.ptr, out.len), &back, &m, err, sizeof err) || m != n)
        abort();
    for (size_t i = 0; i < n; i++)
        if (strcmp(back[i].manifest_path, fs[i].manifest_path) ||
            back[i].added_files_count != fs[i].added_files_count ||
            back[i].n_partitions != fs[i].n_partitions)
            abort();
    fl_manifest_files_free(back, m);
    fl_buf_free(&out);
}

static void rewrite_manifest(fl_slice_t file, const fl_manifest_entry_t *es, size_t n)
{
    fl_avro_reader_t r;
    if (fl_avro_reader_open(&r, file))
        return;
    fl_slice_t sj, pj;
    json_t *schema = NULL, *spec = NULL;
    if (!fl_avro_reader_meta(&r, "schema", &sj))
        schema = json_loadb(sj.ptr, sj.len, 0, NULL);
    if (!fl_avro_reader_meta(&r, "partition-spec", &pj))
        spec = json_loadb(pj.ptr, pj.len, JSON_DECODE_ANY, NULL);
    fl_avro_reader_close(&r);
    fl_field_t root;
    fl_part_spec_t ps;
    char err[128];
    if (schema && !fl_schema_from_json(schema, &root, NULL, err, sizeof err)) {
        json_t *back = fl_schema_to_json(&root, 0);
        fl_field_t again;
        if (fl_schema_from_json(back, &again, NULL, err, sizeof err) || !fl_field_eq(&root, &again))
            abort();
        fl_field_free(&again);
        json_decref(back);
        if (spec && !fl_part_spec_from_json(spec, &root, &ps, err, sizeof err)) {
            fl_manifest_writer_t w;
            if (!fl_manifest_writer_open(&w, 2, &root, 0, &ps, 0, 1, FL_AVRO_CODEC_NULL)) {
                size_t added = 0;
                for (size_t i = 0; i < n; i++)
                    if (!fl_manifest_writer_add(&w, &es[i])) added++;
                fl_buf_t out;
                fl_manifest_file_t mf;
                if (fl_manifest_writer_finish(&w, "m", 1, &out, &mf))
                    abort();
                fl_manifest_entry_t *back2;
                size_t m;
                if (fl_manifest_read(fl_slice(out.ptr, out.len), &mf, &back2, &m, err, sizeof err) || m != added)
                    abort();
                fl_manifest_entries_free(back2, m);
                fl_manifest_file_free(&mf);
                fl_buf_free(&out);
            }
            fl_manifest_writer_free(&w);
            fl_part_spec_free(&ps);
        }
        fl_field_free(&root);
    }
    json_decref(schema);
    json_decref(spec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fl_slice_t file = fl_slice((const char *)data, size);
    char err[256];
    fl_manifest_file_t *fs;
    size_t n;
    if (!fl_manifest_list_read(file, &fs, &n, err, sizeof err)) {
        rewrite_list(fs, n);
        fl_manifest_files_free(fs, n);
    }
    fl_manifest_file_t mf = { .sequence_number = 7, .added_snapshot_id = 9 };
    fl_manifest_entry_t *es;
    if (!fl_manifest_read(file, &mf, &es, &n, err, sizeof err)) {
        rewrite_manifest(file, es, n);
        fl_manifest_entries_free(es, n);
    }
    return 0;
}
