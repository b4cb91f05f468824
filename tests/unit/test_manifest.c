/* Iceberg manifests and manifest lists (src/iceberg/manifest.c): single-value
 * serialization vectors, write -> read round trips for v1/v2/v3, summaries,
 * sequence-number inheritance, named-type reuse, malformed input. */
#include "test.h"
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include "base/mem.h"
#include "iceberg/manifest.h"

static fl_ice_value_t vi(fl_ice_kind_t k, int32_t i) { return (fl_ice_value_t){ .kind = k, .u.i = i }; }
static fl_ice_value_t vl(fl_ice_kind_t k, int64_t l) { return (fl_ice_value_t){ .kind = k, .u.l = l }; }
static fl_ice_value_t vs(const char *s)
{
    return (fl_ice_value_t){ .kind = FL_ICE_STRING, .u.bytes = { (const unsigned char *)s, strlen(s) } };
}

static int bytes_eq(const fl_ice_value_t *v, const char *hex)
{
    fl_buf_t b;
    fl_buf_init(&b, 0);
    if (fl_ice_value_to_bytes(v, &b)) { fl_buf_free(&b); return 0; }
    char h[80] = "";
    if (b.len < 39) fl_hex((const unsigned char *)b.ptr, b.len, h);
    int ok = !strcmp(h, hex);
    if (!ok) fprintf(stderr, "  got %s want %s\n", h, hex);
    fl_buf_free(&b);
    return ok;
}

FL_TEST(manifest_single_value_vectors)
{
    fl_ice_value_t v = { .kind = FL_ICE_BOOLEAN, .u.b = true };
    CHECK(bytes_eq(&v, "01"));
    v = vi(FL_ICE_INT, 34);
    CHECK(bytes_eq(&v, "22000000"));
    v = vi(FL_ICE_DATE, 17486); /* 2017-11-16 */
    CHECK(bytes_eq(&v, "4e440000"));
    v = vl(FL_ICE_LONG, -2);
    CHECK(bytes_eq(&v, "feffffffffffffff"));
    v = vl(FL_ICE_TIMESTAMPTZ, 1510871468000000LL);
    CHECK(bytes_eq(&v, "00c3262d215e0500"));
    v = (fl_ice_value_t){ .kind = FL_ICE_FLOAT, .u.f = 1.0f };
    CHECK(bytes_eq(&v, "0000803f"));
    v = (fl_ice_value_t){ .kind = FL_ICE_DOUBLE, .u.d = -2.5 };
    CHECK(bytes_eq(&v, "00000000000004c0"));
    v = vs("iceberg");
    CHECK(bytes_eq(&v, "69636562657267"));
    v = vs("");
    CHECK(bytes_eq(&v, ""));
    v = (fl_ice_value_t){ .kind = FL_ICE_DECIMAL };
    v.u.dec.unscaled[0] = 0x05;
    v.u.dec.unscaled[1] = 0x8c;
    v.u.dec.len = 2;
    v.u.dec.scale = 2;
    CHECK(bytes_eq(&v, "058c"));
    v = (fl_ice_value_t){ .kind = FL_ICE_UUID };
    memset(v.u.uuid, 0xab, 16);
    CHECK(bytes_eq(&v, "abababababababababababababababab"));
    v = (fl_ice_value_t){ .kind = FL_ICE_NULL };
    fl_buf_t b;
    fl_buf_init(&b, 0);
    CHECK_EQ(fl_ice_value_to_bytes(&v, &b), FL_ERR_INVALID);
    fl_buf_free(&b);

    /* decoding, including promoted forms */
    fl_ice_value_t o;
    REQUIRE(fl_ice_value_from_bytes(FL_ICE_LONG, 0, fl_slice("\xfe\xff\xff\xff", 4), &o) == FL_OK);
    CHECK_EQ(o.u.l, -2);
    REQUIRE(fl_ice_value_from_bytes(FL_ICE_DOUBLE, 0, fl_slice("\x00\x00\x80\x3f", 4), &o) == FL_OK);
    CHECK(o.u.d == 1.0);
    REQUIRE(fl_ice_value_from_bytes(FL_ICE_DATE, 0, fl_slice("\x4e\x44\x00\x00", 4), &o) == FL_OK);
    CHECK_EQ(o.u.i, 17486);
    REQUIRE(fl_ice_value_from_bytes(FL_ICE_DECIMAL, 2, fl_slice("\x05\x8c", 2), &o) == FL_OK);
    CHECK_EQ(o.u.dec.len, 2);
    CHECK_EQ(o.u.dec.scale, 2);
    REQUIRE(fl_ice_value_from_bytes(FL_ICE_BOOLEAN, 0, fl_slice("\x02", 1), &o) == FL_OK);
    CHECK(o.u.b);
    CHECK_EQ(fl_ice_value_from_bytes(FL_ICE_INT, 0, fl_slice("\x01\x02", 2), &o), FL_ERR_INVALID);
    CHECK_EQ(fl_ice_value_from_bytes(FL_ICE_LONG, 0, fl_slice("\x01\x02\x03", 3), &o), FL_ERR_INVALID);
    CHECK_EQ(fl_ice_value_from_bytes(FL_ICE_UUID, 0, fl_slice("\x01", 1), &o), FL_ERR_INVALID);
    CHECK_EQ(fl_ice_value_from_bytes(FL_ICE_DECIMAL, 0, fl_slice("", 0), &o), FL_ERR_INVALID);
    CHECK_EQ(fl_ice_value_from_bytes(FL_ICE_DECIMAL, 0, fl_slice("01234567890123456", 17), &o), FL_ERR_INVALID);
    CHECK_EQ(fl_ice_value_from_bytes(FL_ICE_NULL, 0, fl_slice("", 0), &o), FL_ERR_INVALID);
}

static const char *SCHEMA =
    "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
    "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
    "{\"id\":2,\"name\":\"name\",\"required\":false,\"type\":\"string\"},"
    "{\"id\":3,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz\"},"
    "{\"id\":4,\"name\":\"price\",\"required\":false,\"type\":\"decimal(20, 2)\"},"
    "{\"id\":5,\"name\":\"cost\",\"required\":false,\"type\":\"decimal(20, 2)\"},"
    "{\"id\":6,\"name\":\"u\",\"required\":false,\"type\":\"uuid\"},"
    "{\"id\":7,\"name\":\"x\",\"required\":false,\"type\":\"double\"}]}";

static const char *SPEC =
    "{\"spec-id\":2,\"fields\":["
    "{\"source-id\":2,\"field-id\":1000,\"name\":\"name\",\"transform\":\"identity\"},"
    "{\"source-id\":3,\"field-id\":1001,\"name\":\"ts_day\",\"transform\":\"day\"},"
    "{\"source-id\":1,\"field-id\":1002,\"name\":\"id_bucket\",\"transform\":\"bucket[16]\"}]}";

static const char *SPEC_WIDE =
    "{\"spec-id\":3,\"fields\":["
    "{\"source-id\":4,\"field-id\":1000,\"name\":\"price\",\"transform\":\"identity\"},"
    "{\"source-id\":5,\"field-id\":1001,\"name\":\"cost-x\",\"transform\":\"identity\"},"
    "{\"source-id\":6,\"field-id\":1002,\"name\":\"u\",\"transform\":\"identity\"},"
    "{\"source-id\":7,\"field-id\":1003,\"name\":\"x\",\"transform\":\"identity\"},"
    "{\"source-id\":3,\"field-id\":1004,\"name\":\"ts\",\"transform\":\"identity\"},"
    "{\"source-id\":3,\"field-id\":1005,\"name\":\"ts_hour\",\"transform\":\"hour\"},"
    "{\"source-id\":2,\"field-id\":1006,\"name\":\"name_trunc\",\"transform\":\"truncate[2]\"},"
    "{\"source-id\":2,\"field-id\":1007,\"name\":\"gone\",\"transform\":\"void\"}]}";

typedef struct fixture {
    fl_field_t schema;
    fl_part_spec_t spec;
} fixture_t;

static int setup(fixture_t *fx, const char *spec)
{
    json_error_t je;
    json_t *s = json_loads(SCHEMA, 0, &je), *p = json_loads(spec, 0, &je);
    char err[200];
    int rc = fl_schema_from_json(s, &fx->schema, NULL, err, sizeof err) ||
             fl_part_spec_from_json(p, &fx->schema, &fx->spec, err, sizeof err);
    json_decref(s);
    json_decref(p);
    return rc ? -1 : 0;
}

static void teardown(fixture_t *fx)
{
    fl_part_spec_free(&fx->spec);
    fl_field_free(&fx->schema);
}

static void add_metric(fl_data_file_t *f, int32_t id, int64_t size, const char *lo, size_t lolen)
{
    f->metrics = fl_realloc(f->metrics, (f->n_metrics + 1) * sizeof *f->metrics);
    fl_col_metrics_t *m = &f->metrics[f->n_metrics++];
    memset(m, 0, sizeof *m);
    m->field_id = id;
    m->has_column_size = m->has_value_count = m->has_null_count = true;
    m->column_size = size;
    m->value_count = 100;
    m->null_count = id;
    if (lo) {
        m->has_lower = m->has_upper = true;
        fl_buf_add(&m->lower, lo, lolen);
        fl_buf_add(&m->upper, lo, lolen);
        if (!m->lower.ptr) fl_buf_reserve(&m->lower, 1);
        if (!m->upper.ptr) fl_buf_reserve(&m->upper, 1);
    }
}

static void make_file(fl_manifest_entry_t *e, int i, const fl_part_spec_t *spec)
{
    memset(e, 0, sizeof *e);
    e->status = 1;
    e->has_snapshot_id = true;
    e->snapshot_id = 777;
    char path[64];
    snprintf(path, sizeof path, "s3://bucket/t/data/f%d.parquet", i);
    e->file.file_path = fl_strdup(path);
    e->file.file_format = fl_strdup("PARQUET");
    e->file.record_count = 10 + i;
    e->file.file_size_in_bytes = 1000 + i;
    fl_ice_value_t v = vs(i == 1 ? "b" : "a");
    if (i == 2) v = (fl_ice_value_t){ .kind = FL_ICE_NULL };
    fl_data_file_set_partition(&e->file, 0, &v);
    v = vi(FL_ICE_DATE, 19000 - i);
    fl_data_file_set_partition(&e->file, 1, &v);
    v = vi(FL_ICE_INT, 3 + i);
    fl_data_file_set_partition(&e->file, 2, &v);
    (void)spec;
    add_metric(&e->file, 1, 111, "\x01\0\0\0\0\0\0\0", 8);
    add_metric(&e->file, 2, 222, "", 0);
    add_metric(&e->file, 3, 333, NULL, 0);
    e->file.metrics[2].has_nan_count = true;
    e->file.n_split_offsets = 2;
    e->file.split_offsets = fl_calloc(2, sizeof(int64_t));
    e->file.split_offsets[0] = 4;
    e->file.split_offsets[1] = 1 << 20;
    e->file.has_sort_order_id = i == 0;
}

FL_TEST(manifest_round_trip_partitioned)
{
    fixture_t fx;
    REQUIRE(setup(&fx, SPEC) == 0);
    fl_manifest_writer_t w;
    REQUIRE(fl_manifest_writer_open(&w, 2, &fx.schema, 0, &fx.spec, 0, 777, FL_AVRO_CODEC_DEFLATE) == FL_OK);
    CHECK(strstr(w.avro_schema, "\"name\":\"r102\"") != NULL);
    CHECK(strstr(w.avro_schema, "{\"name\":\"ts_day\",\"type\":[\"null\",{\"type\":\"int\",\"logicalType\":\"date\"}],\"default\":null,\"field-id\":1001}") != NULL);
    CHECK(strstr(w.avro_schema, "\"name\":\"k117_v118\"") != NULL);
    CHECK(strstr(w.avro_schema, "\"element-id\":133") != NULL);
    for (int i = 0; i < 3; i++) {
        fl_manifest_entry_t e;
        make_file(&e, i, &fx.spec);
        if (i == 2) { /* an EXISTING entry with explicit sequence numbers */
            e.status = 0;
            e.has_sequence_number = e.has_file_sequence_number = true;
            e.sequence_number = 4;
            e.file_sequence_number = 3;
        }
        REQUIRE(fl_manifest_writer_add(&w, &e) == FL_OK);
        fl_data_file_free(&e.file);
    }
    /* a partition value of the wrong kind is refused */
    fl_manifest_entry_t bad;
    make_file(&bad, 5, &fx.spec);
    fl_ice_value_t wrong = vs("x");
    fl_data_file_set_partition(&bad.file, 2, &wrong);
    CHECK_EQ(fl_manifest_writer_add(&w, &bad), FL_ERR_INVALID);
    fl_data_file_free(&bad.file);

    fl_buf_t bytes;
    fl_manifest_file_t mf;
    REQUIRE(fl_manifest_writer_finish(&w, "s3://bucket/t/metadata/m0.avro", 9, &bytes, &mf) == FL_OK);
    fl_manifest_writer_free(&w);
    CHECK_EQ(mf.manifest_length, (int64_t)bytes.len);
    CHECK_EQ(mf.partition_spec_id, 2);
    CHECK_EQ(mf.sequence_number, 9);
    CHECK_EQ(mf.min_sequence_number, 4);
    CHECK_EQ(mf.added_files_count, 2);
    CHECK_EQ(mf.existing_files_count, 1);
    CHECK_EQ(mf.added_rows_count, 21);
    CHECK_EQ(mf.existing_rows_count, 12);
    REQUIRE(mf.has_partitions && mf.n_partitions == 3);
    CHECK(mf.partitions[0].contains_null);
    CHECK(mf.partitions[0].has_contains_nan && !mf.partitions[0].contains_nan);
    REQUIRE(mf.partitions[0].has_lower && mf.partitions[0].lower.len == 1);
    CHECK_MEM(mf.partitions[0].lower.ptr, "a", 1);
    CHECK_MEM(mf.partitions[0].upper.ptr, "b", 1);
    CHECK(!mf.partitions[1].contains_null);
    fl_ice_value_t lo, hi;
    REQUIRE(fl_ice_value_from_bytes(FL_ICE_DATE, 0, fl_slice(mf.partitions[1].lower.ptr, mf.partitions[1].lower.len), &lo) == FL_OK);
    REQUIRE(fl_ice_value_from_bytes(FL_ICE_DATE, 0, fl_slice(mf.partitions[1].upper.ptr, mf.partitions[1].upper.len), &hi) == FL_OK);
    CHECK_EQ(lo.u.i, 18998);
    CHECK_EQ(hi.u.i, 19000);

    /* header metadata */
    fl_avro_reader_t ar;
    REQUIRE(fl_avro_reader_open(&ar, fl_slice(bytes.ptr, bytes.len)) == FL_OK);
    CHECK_EQ(ar.codec, FL_AVRO_CODEC_DEFLATE);
    fl_slice_t mv;
    REQUIRE(fl_avro_reader_meta(&ar, "partition-spec-id", &mv) == FL_OK);
    CHECK(fl_slice_eq(mv, "2"));
    REQUIRE(fl_avro_reader_meta(&ar, "format-version", &mv) == FL_OK);
    CHECK(fl_slice_eq(mv, "2"));
    REQUIRE(fl_avro_reader_meta(&ar, "content", &mv) == FL_OK);
    CHECK(fl_slice_eq(mv, "data"));
    REQUIRE(fl_avro_reader_meta(&ar, "partition-spec", &mv) == FL_OK);
    CHECK(fl_slice_eq(mv, "[{\"name\":\"name\",\"transform\":\"identity\",\"source-id\":2,\"field-id\":1000},"
                          "{\"name\":\"ts_day\",\"transform\":\"day\",\"source-id\":3,\"field-id\":1001},"
                          "{\"name\":\"id_bucket\",\"transform\":\"bucket[16]\",\"source-id\":1,\"field-id\":1002}]"));
    REQUIRE(fl_avro_reader_meta(&ar, "schema", &mv) == FL_OK);
    CHECK(mv.len > 10 && !memcmp(mv.ptr, "{\"type\":\"struct\",\"schema-id\":0,", 31));
    fl_avro_reader_close(&ar);

    /* read back, inheriting from the manifest_file */
    fl_manifest_entry_t *es;
    size_t n;
    char err[200] = "";
    REQUIRE(fl_manifest_read(fl_slice(bytes.ptr, bytes.len), &mf, &es, &n, err, sizeof err) == FL_OK);
    REQUIRE(n == 3);
    for (size_t i = 0; i < n; i++) {
        fl_manifest_entry_t *e = &es[i];
        char path[64];
        snprintf(path, sizeof path, "s3://bucket/t/data/f%zu.parquet", i);
        CHECK_STR(e->file.file_path, path);
        CHECK_STR(e->file.file_format, "PARQUET");
        CHECK_EQ(e->file.record_count, 10 + (int)i);
        CHECK_EQ(e->file.file_size_in_bytes, 1000 + (int)i);
        CHECK(e->has_snapshot_id && e->snapshot_id == 777);
        CHECK(e->has_sequence_number && e->has_file_sequence_number);
        CHECK_EQ(e->sequence_number, i == 2 ? 4 : 9);
        CHECK_EQ(e->file_sequence_number, i == 2 ? 3 : 9);
        REQUIRE(e->file.n_partition == 3);
        if (i == 2) CHECK_EQ(e->file.partition[0].kind, FL_ICE_NULL);
        else {
            CHECK_EQ(e->file.partition[0].kind, FL_ICE_STRING);
            CHECK_MEM(e->file.partition[0].u.bytes.ptr, i == 1 ? "b" : "a", 1);
        }
        CHECK_EQ(e->file.partition[1].kind, FL_ICE_DATE);
        CHECK_EQ(e->file.partition[1].u.i, 19000 - (int)i);
        CHECK_EQ(e->file.partition[2].kind, FL_ICE_INT);
        CHECK_EQ(e->file.partition[2].u.i, 3 + (int)i);
        REQUIRE(e->file.n_metrics == 3);
        CHECK_EQ(e->file.metrics[0].field_id, 1);
        CHECK_EQ(e->file.metrics[0].column_size, 111);
        CHECK_EQ(e->file.metrics[1].null_count, 2);
        CHECK(e->file.metrics[0].has_lower && e->file.metrics[0].lower.len == 8);
        CHECK(e->file.metrics[1].has_lower && e->file.metrics[1].lower.len == 0);
        CHECK(!e->file.metrics[2].has_lower);
        CHECK(e->file.metrics[2].has_nan_count && !e->file.metrics[0].has_nan_count);
        REQUIRE(e->file.n_split_offsets == 2);
        CHECK_EQ(e->file.split_offsets[1], 1 << 20);
        CHECK_EQ(e->file.has_sort_order_id, i == 0);
    }
    fl_manifest_entries_free(es, n);
    /* without mf nothing is inherited */
    REQUIRE(fl_manifest_read(fl_slice(bytes.ptr, bytes.len), NULL, &es, &n, err, sizeof err) == FL_OK);
    CHECK(!es[0].has_sequence_number);
    CHECK(es[2].has_sequence_number);
    fl_manifest_entries_free(es, n);

    /* manifest list round trip */
    for (int fv = 1; fv <= 3; fv++) {
        fl_buf_t list;
        fl_buf_init(&list, 0);
        fl_manifest_file_t two[2];
        two[0] = mf;
        two[1] = mf;
        two[1].manifest_path = "s3://bucket/t/metadata/old.avro";
        two[1].has_partitions = false;
        two[1].sequence_number = 5;
        two[1].has_first_row_id = true;
        two[1].first_row_id = 1234;
        REQUIRE(fl_manifest_list_write(fv, 777, fv == 2 ? 555 : -1, 9, two, 2,
                                       fv == 3 ? FL_AVRO_CODEC_NULL : FL_AVRO_CODEC_DEFLATE, &list) == FL_OK);
        REQUIRE(fl_avro_reader_open(&ar, fl_slice(list.ptr, list.len)) == FL_OK);
        REQUIRE(fl_avro_reader_meta(&ar, "parent-snapshot-id", &mv) == FL_OK);
        CHECK(fl_slice_eq(mv, fv == 2 ? "555" : "null"));
        CHECK_EQ(fl_avro_reader_meta(&ar, "sequence-number", &mv), fv == 1 ? FL_ERR_NOT_FOUND : FL_OK);
        fl_avro_reader_close(&ar);
        fl_manifest_file_t *fs;
        REQUIRE(fl_manifest_list_read(fl_slice(list.ptr, list.len), &fs, &n, err, sizeof err) == FL_OK);
        REQUIRE(n == 2);
        CHECK_STR(fs[0].manifest_path, mf.manifest_path);
        CHECK_STR(fs[1].manifest_path, "s3://bucket/t/metadata/old.avro");
        CHECK_EQ(fs[0].manifest_length, mf.manifest_length);
        CHECK_EQ(fs[0].partition_spec_id, 2);
        CHECK_EQ(fs[0].sequence_number, fv == 1 ? 0 : 9);
        CHECK_EQ(fs[1].sequence_number, fv == 1 ? 0 : 5);
        CHECK_EQ(fs[0].min_sequence_number, fv == 1 ? 0 : 4);
        CHECK_EQ(fs[0].added_snapshot_id, 777);
        CHECK_EQ(fs[0].added_files_count, 2);
        CHECK_EQ(fs[0].existing_files_count, 1);
        CHECK_EQ(fs[0].existing_rows_count, 12);
        REQUIRE(fs[0].has_partitions && fs[0].n_partitions == 3);
        CHECK(fs[0].partitions[0].contains_null);
        CHECK(fs[0].partitions[1].has_lower && fs[0].partitions[1].lower.len == 4);
        CHECK(!fs[1].has_partitions);
        CHECK_EQ(fs[1].has_first_row_id, fv == 3);
        fl_manifest_files_free(fs, n);
        fl_buf_free(&list);
    }
    fl_manifest_file_free(&mf);
    fl_buf_free(&bytes);
    teardown(&fx);
}

FL_TEST(manifest_wide_partition_types_and_versions)
{
    fixture_t fx;
    REQUIRE(setup(&fx, SPEC_WIDE) == 0);
    for (int fv = 1; fv <= 3; fv++) {
        fl_manifest_writer_t w;
        REQUIRE(fl_manifest_writer_open(&w, fv, &fx.schema, 0, &fx.spec, 0, 42, FL_AVRO_CODEC_NULL) == FL_OK);
        /* the second decimal(20,2) refers to the first by name; an invalid Avro name is sanitized */
        CHECK(strstr(w.avro_schema, "{\"type\":\"fixed\",\"name\":\"decimal_20_2\",\"size\":9,\"logicalType\":\"decimal\",\"precision\":20,\"scale\":2}") != NULL);
        CHECK(strstr(w.avro_schema, "{\"name\":\"cost_x2Dx\",\"type\":[\"null\",\"decimal_20_2\"],\"default\":null,\"iceberg-field-name\":\"cost-x\",\"field-id\":1001}") != NULL);
        CHECK(strstr(w.avro_schema, "\"logicalType\":\"timestamp-micros\",\"adjust-to-utc\":true") != NULL);
        CHECK(strstr(w.avro_schema, "\"name\":\"uuid_fixed\",\"size\":16,\"logicalType\":\"uuid\"") != NULL);
        CHECK((strstr(w.avro_schema, "block_size_in_bytes") != NULL) == (fv == 1));
        CHECK((strstr(w.avro_schema, "first_row_id") != NULL) == (fv == 3));
        for (int i = 0; i < 3; i++) {
            fl_manifest_entry_t e;
            memset(&e, 0, sizeof e);
            e.status = 1;
            e.file.file_path = fl_strdup(i ? "s3://x/b" : "s3://x/a");
            e.file.record_count = 1;
            fl_ice_value_t v = { .kind = FL_ICE_DECIMAL };
            v.u.dec.unscaled[0] = i ? 0x80 : 0x7f; /* -128 / 127 */
            v.u.dec.len = 1;
            v.u.dec.scale = 2;
            fl_data_file_set_partition(&e.file, 0, &v);
            v.u.dec.unscaled[0] = 0x01;
            fl_data_file_set_partition(&e.file, 1, &v);
            v = (fl_ice_value_t){ .kind = FL_ICE_UUID };
            memset(v.u.uuid, 0x10 * (i + 1), 16);
            fl_data_file_set_partition(&e.file, 2, &v);
            v = (fl_ice_value_t){ .kind = FL_ICE_DOUBLE, .u.d = i == 2 ? NAN : i ? -0.0 : 0.0 };
            fl_data_file_set_partition(&e.file, 3, &v);
            v = vl(FL_ICE_TIMESTAMPTZ, -1 - i);
            fl_data_file_set_partition(&e.file, 4, &v);
            v = vi(FL_ICE_INT, 400000 + i);
            fl_data_file_set_partition(&e.file, 5, &v);
            v = vs(i ? "zz" : "ab");
            fl_data_file_set_partition(&e.file, 6, &v);
            v = (fl_ice_value_t){ .kind = FL_ICE_NULL };
            fl_data_file_set_partition(&e.file, 7, &v);
            e.file.has_first_row_id = fv == 3;
            e.file.first_row_id = 99;
            REQUIRE(fl_manifest_writer_add(&w, &e) == FL_OK);
            fl_data_file_free(&e.file);
        }
        fl_buf_t bytes;
        fl_manifest_file_t mf;
        REQUIRE(fl_manifest_writer_finish(&w, "m.avro", 1, &bytes, &mf) == FL_OK);
        fl_manifest_writer_free(&w);
        REQUIRE(mf.n_partitions == 8);
        CHECK_EQ(mf.partitions[0].lower.len, 1);
        CHECK_EQ((unsigned char)mf.partitions[0].lower.ptr[0], 0x80);
        CHECK_EQ((unsigned char)mf.partitions[0].upper.ptr[0], 0x7f);
        CHECK(mf.partitions[3].contains_nan);
        CHECK_EQ(mf.partitions[3].lower.len, 8);
        CHECK_EQ((unsigned char)mf.partitions[3].lower.ptr[7], 0x80); /* -0.0 < 0.0 */
        CHECK_EQ((unsigned char)mf.partitions[3].upper.ptr[7], 0x00);
        CHECK(mf.partitions[7].contains_null && !mf.partitions[7].has_lower);
        fl_manifest_entry_t *es;
        size_t n;
        char err[200];
        REQUIRE(fl_manifest_read(fl_slice(bytes.ptr, bytes.len), &mf, &es, &n, err, sizeof err) == FL_OK);
        REQUIRE(n == 3);
        const fl_data_file_t *f = &es[1].file;
        REQUIRE(f->n_partition == 8);
        CHECK_EQ(f->partition[0].kind, FL_ICE_DECIMAL);
        CHECK_EQ(f->partition[0].u.dec.len, 1);
        CHECK_EQ(f->partition[0].u.dec.unscaled[0], 0x80);
        CHECK_EQ(f->partition[0].u.dec.scale, 2);
        CHECK_EQ(f->partition[1].kind, FL_ICE_DECIMAL);
        CHECK_EQ(f->partition[2].kind, FL_ICE_UUID);
        CHECK_EQ(f->partition[2].u.uuid[0], 0x20);
        CHECK_EQ(f->partition[3].kind, FL_ICE_DOUBLE);
        CHECK(signbit(f->partition[3].u.d));
        CHECK_EQ(f->partition[4].kind, FL_ICE_TIMESTAMPTZ);
        CHECK_EQ(f->partition[4].u.l, -2);
        CHECK_EQ(f->partition[5].kind, FL_ICE_INT);
        CHECK_EQ(f->partition[6].kind, FL_ICE_STRING);
        CHECK_EQ(f->partition[7].kind, FL_ICE_NULL);
        CHECK_EQ(f->has_first_row_id, fv == 3);
        CHECK(es[0].has_sequence_number);
        CHECK_EQ(es[0].sequence_number, 1);
        fl_manifest_entries_free(es, n);
        fl_manifest_file_free(&mf);
        fl_buf_free(&bytes);
    }
    /* v1 manifests carry data only */
    fl_manifest_writer_t w;
    CHECK_EQ(fl_manifest_writer_open(&w, 1, &fx.schema, 0, &fx.spec, 1, 42, FL_AVRO_CODEC_NULL), FL_ERR_INVALID);
    CHECK_EQ(fl_manifest_writer_open(&w, 4, &fx.schema, 0, &fx.spec, 0, 42, FL_AVRO_CODEC_NULL), FL_ERR_INVALID);
    teardown(&fx);
}

FL_TEST(manifest_unpartitioned_and_empty)
{
    fixture_t fx;
    REQUIRE(setup(&fx, "{\"spec-id\":0,\"fields\":[]}") == 0);
    fl_manifest_writer_t w;
    REQUIRE(fl_manifest_writer_open(&w, 2, &fx.schema, 0, &fx.spec, 1, 42, FL_AVRO_CODEC_SNAPPY) == FL_OK);
    CHECK(strstr(w.avro_schema, "{\"type\":\"record\",\"name\":\"r102\",\"fields\":[]}") != NULL);
    fl_buf_t bytes;
    fl_manifest_file_t mf;
    REQUIRE(fl_manifest_writer_finish(&w, "m.avro", 3, &bytes, &mf) == FL_OK);
    fl_manifest_writer_free(&w);
    CHECK_EQ(mf.content, 1);
    CHECK(mf.has_partitions && mf.n_partitions == 0);
    CHECK_EQ(mf.min_sequence_number, 3);
    fl_manifest_entry_t *es;
    size_t n;
    char err[200];
    REQUIRE(fl_manifest_read(fl_slice(bytes.ptr, bytes.len), &mf, &es, &n, err, sizeof err) == FL_OK);
    CHECK_EQ(n, 0);
    fl_manifest_entries_free(es, n);
    fl_buf_t list;
    fl_buf_init(&list, 0);
    REQUIRE(fl_manifest_list_write(2, 1, -1, 1, NULL, 0, FL_AVRO_CODEC_DEFLATE, &list) == FL_OK);
    fl_manifest_file_t *fs;
    REQUIRE(fl_manifest_list_read(fl_slice(list.ptr, list.len), &fs, &n, err, sizeof err) == FL_OK);
    CHECK_EQ(n, 0);
    fl_manifest_files_free(fs, n);
    /* a manifest is not a manifest list and the other way round */
    CHECK_EQ(fl_manifest_list_read(fl_slice(bytes.ptr, bytes.len), &fs, &n, err, sizeof err), FL_ERR_INVALID);
    CHECK(strstr(err, "manifest_path") != NULL);
    CHECK_EQ(fl_manifest_read(fl_slice(list.ptr, list.len), NULL, &es, &n, err, sizeof err), FL_ERR_INVALID);
    fl_buf_free(&list);
    fl_manifest_file_free(&mf);
    fl_buf_free(&bytes);
    teardown(&fx);
}

/* An Avro container holding one record encoded under a hand-written schema. */
static void container(fl_buf_t *out, const char *schema, const void *rec, size_t n)
{
    fl_avro_writer_t w;
    fl_buf_init(out, 0);
    if (fl_avro_writer_open(&w, out, FL_AVRO_CODEC_NULL, schema, NULL, 0)) return;
    if (rec) fl_avro_writer_append(&w, rec, n);
    fl_avro_writer_finish(&w);
    fl_avro_writer_free(&w);
}

FL_TEST(manifest_reads_foreign_shapes)
{
    /* a v1-style manifest list by field id with old names, plus an unknown field */
    const char *v1 =
        "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":["
        "{\"name\":\"manifest_path\",\"type\":\"string\",\"field-id\":500},"
        "{\"name\":\"extra\",\"type\":{\"type\":\"map\",\"values\":[\"null\",\"double\"]}},"
        "{\"name\":\"manifest_length\",\"type\":\"long\",\"field-id\":501},"
        "{\"name\":\"partition_spec_id\",\"type\":\"int\",\"field-id\":502},"
        "{\"name\":\"added_snapshot_id\",\"type\":[\"null\",\"long\"],\"field-id\":503},"
        "{\"name\":\"added_data_files_count\",\"type\":[\"null\",\"int\"],\"field-id\":504}]}";
    fl_buf_t rec, file;
    fl_buf_init(&rec, 0);
    fl_avro_put_cstr(&rec, "s3://m.avro");
    fl_avro_put_block_count(&rec, 1);
    fl_avro_put_cstr(&rec, "k");
    fl_avro_put_union(&rec, 1);
    fl_avro_put_double(&rec, 1.5);
    fl_avro_put_block_count(&rec, 0);
    fl_avro_put_long(&rec, 123);
    fl_avro_put_int(&rec, 0);
    fl_avro_put_union(&rec, 1);
    fl_avro_put_long(&rec, 9);
    fl_avro_put_union(&rec, 1);
    fl_avro_put_int(&rec, 4);
    container(&file, v1, rec.ptr, rec.len);
    fl_manifest_file_t *fs;
    size_t n;
    char err[200] = "";
    REQUIRE(fl_manifest_list_read(fl_slice(file.ptr, file.len), &fs, &n, err, sizeof err) == FL_OK);
    REQUIRE(n == 1);
    CHECK_STR(fs[0].manifest_path, "s3://m.avro");
    CHECK_EQ(fs[0].manifest_length, 123);
    CHECK_EQ(fs[0].added_snapshot_id, 9);
    CHECK_EQ(fs[0].added_files_count, 4);
    CHECK_EQ(fs[0].sequence_number, 0);
    fl_manifest_files_free(fs, n);
    /* a field of the wrong type is an error, not a crash */
    fl_buf_free(&file);
    container(&file, "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":["
                     "{\"name\":\"manifest_path\",\"type\":\"string\",\"field-id\":500},"
                     "{\"name\":\"manifest_length\",\"type\":\"string\",\"field-id\":501}]}",
              "\x02" "a" "\x02" "b", 4);
    CHECK_EQ(fl_manifest_list_read(fl_slice(file.ptr, file.len), &fs, &n, err, sizeof err), FL_ERR_INVALID);
    fl_buf_free(&file);
    /* a self-referencing record does not loop */
    container(&file, "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":["
                     "{\"name\":\"manifest_path\",\"type\":\"string\",\"field-id\":500},"
                     "{\"name\":\"next\",\"type\":[\"null\",\"manifest_file\"]}]}",
              "\x02" "a" "\x02\x02" "b" "\x02\x02" "c" "\x00", 9);
    REQUIRE(fl_manifest_list_read(fl_slice(file.ptr, file.len), &fs, &n, err, sizeof err) == FL_OK);
    CHECK_EQ(n, 1);
    fl_manifest_files_free(fs, n);
    fl_buf_free(&file);
    const char *bad_schemas[] = {
        "[1,2]", "{\"type\":\"record\",\"name\":\"x\"}", "{\"type\":\"nope\"}", "\"string\"",
        "{\"type\":\"record\",\"name\":\"x\",\"fields\":[{\"name\":\"a\",\"type\":\"undefined_name\"}]}",
        "{\"type\":\"record\",\"name\":\"x\",\"fields\":[{\"name\":\"a\",\"type\":[]}]}", "not json",
    };
    for (size_t i = 0; i < sizeof bad_schemas / sizeof bad_schemas[0]; i++) {
        container(&file, bad_schemas[i], NULL, 0);
        err[0] = 0;
        if (fl_manifest_list_read(fl_slice(file.ptr, file.len), &fs, &n, err, sizeof err) != FL_ERR_INVALID || !err[0])
            FL_FAIL("bad schema %zu accepted", i);
        fl_manifest_entry_t *es;
        if (fl_manifest_read(fl_slice(file.ptr, file.len), NULL, &es, &n, err, sizeof err) != FL_ERR_INVALID)
            FL_FAIL("bad schema %zu accepted as a manifest", i);
        fl_buf_free(&file);
    }
    fl_buf_free(&rec);
}

FL_TEST(manifest_malformed_bytes)
{
    fixture_t fx;
    REQUIRE(setup(&fx, SPEC) == 0);
    fl_manifest_writer_t w;
    REQUIRE(fl_manifest_writer_open(&w, 2, &fx.schema, 0, &fx.spec, 0, 777, FL_AVRO_CODEC_NULL) == FL_OK);
    for (int i = 0; i < 2; i++) {
        fl_manifest_entry_t e;
        make_file(&e, i, &fx.spec);
        REQUIRE(fl_manifest_writer_add(&w, &e) == FL_OK);
        fl_data_file_free(&e.file);
    }
    fl_buf_t bytes, list;
    fl_manifest_file_t mf;
    REQUIRE(fl_manifest_writer_finish(&w, "m", 1, &bytes, &mf) == FL_OK);
    fl_manifest_writer_free(&w);
    fl_buf_init(&list, 0);
    REQUIRE(fl_manifest_list_write(2, 1, -1, 1, &mf, 1, FL_AVRO_CODEC_NULL, &list) == FL_OK);
    char err[200];
    const fl_buf_t *files[2] = { &bytes, &list };
    unsigned seed = 12345;
    for (int k = 0; k < 2; k++) {
        const fl_buf_t *src = files[k];
        /* every truncation fails cleanly */
        for (size_t cut = 0; cut < src->len; cut += (cut < src->len - 200 ? 7 : 1)) {
            fl_manifest_entry_t *es;
            fl_manifest_file_t *fs;
            size_t n;
            fl_err_t e1 = fl_manifest_read(fl_slice(src->ptr, cut), &mf, &es, &n, err, sizeof err);
            if (!e1) fl_manifest_entries_free(es, n);
            fl_err_t e2 = fl_manifest_list_read(fl_slice(src->ptr, cut), &fs, &n, err, sizeof err);
            if (!e2) fl_manifest_files_free(fs, n);
            if (!e1 && !e2) FL_FAIL("truncation at %zu accepted by both", cut);
        }
        /* random corruption never crashes */
        char *copy = fl_malloc(src->len);
        for (int round = 0; round < 3000; round++) {
            memcpy(copy, src->ptr, src->len);
            for (int j = 0; j < 1 + round % 4; j++) {
                seed = seed * 1103515245u + 12345u;
                size_t pos = (seed >> 8) % src->len;
                copy[pos] = (char)(seed >> 3);
            }
            fl_manifest_entry_t *es;
            fl_manifest_file_t *fs;
            size_t n;
            if (!fl_manifest_read(fl_slice(copy, src->len), &mf, &es, &n, err, sizeof err))
                fl_manifest_entries_free(es, n);
            if (!fl_manifest_list_read(fl_slice(copy, src->len), &fs, &n, err, sizeof err))
                fl_manifest_files_free(fs, n);
        }
        free(copy);
    }
    fl_buf_free(&list);
    fl_buf_free(&bytes);
    fl_manifest_file_free(&mf);
    teardown(&fx);
}
