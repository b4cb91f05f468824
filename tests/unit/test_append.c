/* The append API over in-memory table ops: a catalog that applies commits with
 * the same requirement/update code as floe's REST catalog, and a storage map.
 * Covers partition routing with more partitions than open files, file rolling,
 * 409 re-basing between two appenders, the unknown-outcome paths, abort, and
 * reading everything back through scan planning and the Parquet reader. */
#include "test.h"
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdio.h>
#include "base/mem.h"
#include "base/uuid.h"
#include "format/avro.h"
#include "format/parquet.h"
#include "iceberg/append.h"
#include "iceberg/manifest.h"
#include "iceberg/metadata.h"
#include "iceberg/scan.h"
#include "mem_table.h"

FL_TEST(append_partitions_roll_rebase_and_read_back)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init(t, &ops);
    REQUIRE(t->md);
    char err[512] = "";
    fl_append_opts_t o = { .max_open_files = 3, .target_file_bytes = 4096 };
    fl_appender_t *a = NULL, *b = NULL;
    REQUIRE(fl_append_open(&a, &ops, &o, err, sizeof err) == FL_OK);
    REQUIRE(fl_append_open(&b, &ops, &o, err, sizeof err) == FL_OK);
    fl_vec_t batch;
    fl_vec_init(&batch, fl_append_schema(a));
    for (int k = 0; k < 4; k++) {
        fl_vec_clear(&batch);
        fill(&batch, k * 500, 500, 6);
        REQUIRE(fl_append_write(a, &batch, err, sizeof err) == FL_OK);
    }
    fl_vec_clear(&batch);
    fill(&batch, 10000, 300, 2);
    CHECK_EQ(fl_append_buffered(b), 0);
    REQUIRE(fl_append_write(b, &batch, err, sizeof err) == FL_OK);
    CHECK(fl_append_buffered(b) > 0);   /* its open files' row groups, in memory */
    CHECK_EQ(fl_append_rows(a), 2000);
    const char *kv[] = { "writer", "a" };
    int64_t sa = -1, sb = -1;
    REQUIRE(fl_append_commit(a, kv, 1, &sa, err, sizeof err) == FL_OK);
    CHECK(sa > 0);
    CHECK_EQ(fl_append_buffered(a), 0);   /* the commit closed them */
    /* b was opened on the empty table: its first commit conflicts, then re-bases. */
    REQUIRE(fl_append_commit(b, NULL, 0, &sb, err, sizeof err) == FL_OK);
    CHECK(sb > 0 && sb != sa);
    CHECK_EQ(t->conflicts, 1);
    CHECK_EQ(fl_iceberg_current_snapshot_id(t->md), sb);
    json_t *snaps = json_object_get(t->md, "snapshots");
    REQUIRE(json_array_size(snaps) == 2);
    json_t *s1 = json_array_get(snaps, 0), *s2 = json_array_get(snaps, 1);
    CHECK_EQ(json_integer_value(json_object_get(s2, "parent-snapshot-id")), sa);
    CHECK_EQ(json_integer_value(json_object_get(s2, "sequence-number")), 2);
    json_t *sum1 = json_object_get(s1, "summary"), *sum2 = json_object_get(s2, "summary");
    CHECK_STR(json_string_value(json_object_get(sum1, "writer")), "a");
    CHECK_STR(json_string_value(json_object_get(sum1, "added-records")), "2000");
    CHECK_STR(json_string_value(json_object_get(sum2, "total-records")), "2300");
    /* 6 categories (+ null) x 5 k buckets (+ null): many more partitions than 3 open
     * files, and files of 4 KiB roll: more files than partitions. */
    int64_t rows, idsum;
    size_t files;
    scan_all(t, &ops, &rows, &idsum, &files);
    CHECK_EQ(rows, 2300);
    int64_t want = 0;
    for (int64_t i = 0; i < 2000; i++) want += i;
    for (int64_t i = 10000; i < 10300; i++) want += i;
    CHECK_EQ(idsum, want);
    CHECK(files > 20);
    /* The re-based attempt's list replaced the first one's. */
    CHECK_EQ(live_objs(t, "snap-"), 2);
    fl_append_free(a);
    fl_append_free(b);
    fl_vec_free(&batch);
    mem_table_free(t);
    free(t);
}

FL_TEST(append_unknown_outcomes_and_abort)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init(t, &ops);
    char err[512] = "";
    fl_appender_t *a = NULL;
    REQUIRE(fl_append_open(&a, &ops, NULL, err, sizeof err) == FL_OK);
    fl_vec_t batch;
    fl_vec_init(&batch, fl_append_schema(a));
    fill(&batch, 0, 100, 3);
    int64_t sid = -1;

    /* The commit lands but the answer is a 500: found on reload, reported as success. */
    t->commit_mode = 1;
    REQUIRE(fl_append_write(a, &batch, err, sizeof err) == FL_OK);
    CHECK(fl_append_commit(a, NULL, 0, &sid, err, sizeof err) == FL_OK);
    CHECK(sid > 0);
    CHECK_EQ(fl_iceberg_current_snapshot_id(t->md), sid);

    /* A 503 that did not land: an error, and the files stay (they might be referenced). */
    t->commit_mode = 2;
    int before = live_objs(t, "/data/");
    REQUIRE(fl_append_write(a, &batch, err, sizeof err) == FL_OK);
    CHECK(fl_append_commit(a, NULL, 0, &sid, err, sizeof err) == FL_ERR_IO);
    CHECK(strstr(err, "unknown") != NULL);
    CHECK(live_objs(t, "/data/") > before);

    /* The commit lands but the answer is a 409: the HTTP client resent the request on a
     * fresh connection after the first send's connection died unanswered (libcurl does so
     * for a reused connection), and the resend found the table moved by the first. The
     * reload finds the snapshot: success, and the committed list and files stay. */
    t->commit_mode = 3;
    int data_before = live_objs(t, "/data/"), meta_before = live_objs(t, "/metadata/");
    REQUIRE(fl_append_write(a, &batch, err, sizeof err) == FL_OK);
    CHECK(fl_append_commit(a, NULL, 0, &sid, err, sizeof err) == FL_OK);
    CHECK_EQ(fl_iceberg_current_snapshot_id(t->md), sid);
    CHECK(live_objs(t, "/data/") > data_before);
    CHECK_EQ(live_objs(t, "/metadata/"), meta_before + 2);   /* its manifest and its list */

    /* Abort deletes what was uploaded since the last commit. */
    t->commit_mode = 0;
    int kept = live_objs(t, "/data/");
    fl_append_opts_t o = { .target_file_bytes = 1 };
    fl_appender_t *c = NULL;
    REQUIRE(fl_append_open(&c, &ops, &o, err, sizeof err) == FL_OK);
    REQUIRE(fl_append_write(c, &batch, err, sizeof err) == FL_OK);
    CHECK(live_objs(t, "/data/") > kept);  /* rolled at 1 byte: uploaded already */
    fl_append_abort(c);
    CHECK_EQ(live_objs(t, "/data/"), kept);
    /* Nothing written: nothing committed. */
    CHECK(fl_append_commit(c, NULL, 0, &sid, err, sizeof err) == FL_OK);
    CHECK_EQ(sid, -1);

    /* A batch of the wrong shape is refused. */
    fl_field_t other;
    fl_field_set(&other, 0, "table", true, FL_TYPE_STRUCT);
    fl_field_set(fl_field_add_child(&other), 1, "id", true, FL_TYPE_LONG);
    fl_vec_t wrong;
    fl_vec_init(&wrong, &other);
    fl_vec_append_struct(&wrong);
    fl_vec_append_i64(&wrong.children[0], 1);
    CHECK(fl_append_write(c, &wrong, err, sizeof err) == FL_ERR_INVALID);
    fl_vec_free(&wrong);
    fl_field_free(&other);

    int64_t rows, idsum;
    size_t files;
    scan_all(t, &ops, &rows, &idsum, &files);
    CHECK_EQ(rows, 200);   /* the 500-answered and the 409-answered commits, each once (the 503 did not land) */
    fl_append_free(a);
    fl_append_free(c);
    fl_vec_free(&batch);
    mem_table_free(t);
    free(t);
}

FL_TEST(append_void_only_spec)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_spec(t, &ops, "{\"spec-id\":0,\"fields\":[{\"source-id\":2,\"field-id\":1000,"
                                 "\"name\":\"cat_void\",\"transform\":\"void\"}]}");
    REQUIRE(t->md);
    char err[512] = "";
    fl_appender_t *a = NULL;
    REQUIRE(fl_append_open(&a, &ops, NULL, err, sizeof err) == FL_OK);
    fl_vec_t batch;
    fl_vec_init(&batch, fl_append_schema(a));
    fill(&batch, 0, 10, 3);
    REQUIRE(fl_append_write(a, &batch, err, sizeof err) == FL_OK);
    int64_t sid = -1;
    REQUIRE(fl_append_commit(a, NULL, 0, &sid, err, sizeof err) == FL_OK);
    int64_t rows, idsum;
    size_t files;
    scan_all(t, &ops, &rows, &idsum, &files);
    CHECK_EQ(rows, 10);
    CHECK_EQ(files, 1);
    fl_append_free(a);
    fl_vec_free(&batch);
    mem_table_free(t);
    free(t);
}

/* The manifest list of snapshot s: its records, and its header first-row-id
 * ("" when absent). */
static void read_list(mem_table_t *t, json_t *s, fl_manifest_file_t **mfs, size_t *n, char *hdr, size_t hdrlen)
{
    *mfs = NULL;
    *n = 0;
    hdr[0] = 0;
    int i = find_obj(t, json_string_value(json_object_get(s, "manifest-list")));
    if (i < 0) return;
    fl_slice_t file = fl_slice(t->objs[i].data.ptr, t->objs[i].data.len);
    char err[256];
    if (fl_manifest_list_read(file, mfs, n, err, sizeof err)) { fprintf(stderr, "list: %s\n", err); return; }
    fl_avro_reader_t r;
    fl_slice_t v;
    if (fl_avro_reader_open(&r, file)) return;
    if (!fl_avro_reader_meta(&r, "first-row-id", &v))
        snprintf(hdr, hdrlen, "%.*s", (int)v.len, (const char *)v.ptr);
    fl_avro_reader_close(&r);
}

/* v3 row lineage: snapshots carry first-row-id / added-rows from the table's
 * next-row-id, recomputed on a 409 re-base; the list assigns first_row_id to
 * the new manifest and keeps the parent's; data files inherit (null). */
FL_TEST(append_v3_row_lineage)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_props(t, &ops,
        "{\"spec-id\":0,\"fields\":[{\"source-id\":2,\"field-id\":1000,\"name\":\"cat\",\"transform\":\"identity\"}]}",
        "{\"format-version\":\"3\"}");
    REQUIRE(t->md);
    CHECK_EQ(json_integer_value(json_object_get(t->md, "format-version")), 3);
    CHECK_EQ(json_integer_value(json_object_get(t->md, "next-row-id")), 0);
    char err[512] = "";
    fl_append_opts_t o = { .target_file_bytes = 4096 };
    fl_appender_t *a = NULL, *b = NULL;
    REQUIRE(fl_append_open(&a, &ops, &o, err, sizeof err) == FL_OK);
    REQUIRE(fl_append_open(&b, &ops, &o, err, sizeof err) == FL_OK);
    fl_vec_t batch;
    fl_vec_init(&batch, fl_append_schema(a));
    fill(&batch, 0, 1000, 4);
    REQUIRE(fl_append_write(a, &batch, err, sizeof err) == FL_OK);
    fl_vec_clear(&batch);
    fill(&batch, 5000, 250, 2);
    REQUIRE(fl_append_write(b, &batch, err, sizeof err) == FL_OK);
    int64_t sa = -1, sb = -1;
    REQUIRE(fl_append_commit(a, NULL, 0, &sa, err, sizeof err) == FL_OK);
    CHECK_EQ(json_integer_value(json_object_get(t->md, "next-row-id")), 1000);
    /* b was opened when next-row-id was 0: it re-bases and starts at 1000. */
    REQUIRE(fl_append_commit(b, NULL, 0, &sb, err, sizeof err) == FL_OK);
    CHECK_EQ(t->conflicts, 1);
    CHECK_EQ(json_integer_value(json_object_get(t->md, "next-row-id")), 1250);
    json_t *snaps = json_object_get(t->md, "snapshots");
    REQUIRE(json_array_size(snaps) == 2);
    json_t *s1 = json_array_get(snaps, 0), *s2 = json_array_get(snaps, 1);
    CHECK_EQ(json_integer_value(json_object_get(s1, "first-row-id")), 0);
    CHECK_EQ(json_integer_value(json_object_get(s1, "added-rows")), 1000);
    CHECK_EQ(json_integer_value(json_object_get(s2, "first-row-id")), 1000);
    CHECK_EQ(json_integer_value(json_object_get(s2, "added-rows")), 250);

    fl_manifest_file_t *mfs;
    size_t n;
    char hdr[32];
    read_list(t, s1, &mfs, &n, hdr, sizeof hdr);
    REQUIRE(n == 1);
    CHECK_STR(hdr, "0");
    CHECK(mfs[0].has_first_row_id);
    CHECK_EQ(mfs[0].first_row_id, 0);
    fl_manifest_files_free(mfs, n);
    read_list(t, s2, &mfs, &n, hdr, sizeof hdr);
    REQUIRE(n == 2);
    CHECK_STR(hdr, "1000");
    CHECK_EQ(mfs[0].added_snapshot_id, sb);
    CHECK(mfs[0].has_first_row_id);
    CHECK_EQ(mfs[0].first_row_id, 1000);
    CHECK_EQ(mfs[0].added_rows_count, 250);
    CHECK_EQ(mfs[1].added_snapshot_id, sa);
    CHECK(mfs[1].has_first_row_id);
    CHECK_EQ(mfs[1].first_row_id, 0);
    /* the new manifest's data files leave first_row_id null (read without the list record) ... */
    int mi = find_obj(t, mfs[0].manifest_path);
    REQUIRE(mi >= 0);
    fl_manifest_entry_t *en = NULL;
    size_t ne = 0;
    REQUIRE(fl_manifest_read(fl_slice(t->objs[mi].data.ptr, t->objs[mi].data.len), NULL, &en, &ne, err,
                             sizeof err) == FL_OK);
    CHECK(ne >= 2);
    int64_t sum = 0;
    for (size_t k = 0; k < ne; k++) {
        CHECK(!en[k].file.has_first_row_id);
        sum += en[k].file.record_count;
    }
    CHECK_EQ(sum, 250);
    fl_manifest_entries_free(en, ne);
    /* ... and inherit it from the manifest's first_row_id, file after file, when read through the list */
    REQUIRE(fl_manifest_read(fl_slice(t->objs[mi].data.ptr, t->objs[mi].data.len), &mfs[0], &en, &ne, err,
                             sizeof err) == FL_OK);
    int64_t next = 1000;
    for (size_t k = 0; k < ne; k++) {
        CHECK(en[k].file.has_first_row_id);
        CHECK_EQ(en[k].file.first_row_id, next);
        next += en[k].file.record_count;
    }
    CHECK_EQ(next, 1250);
    fl_manifest_entries_free(en, ne);
    fl_manifest_files_free(mfs, n);

    int64_t rows, idsum;
    size_t files;
    scan_all(t, &ops, &rows, &idsum, &files);
    CHECK_EQ(rows, 1250);
    fl_append_free(a);
    fl_append_free(b);
    fl_vec_free(&batch);
    mem_table_free(t);
    free(t);
}

/* A v2 list has no first-row-id anywhere; a v1 table is refused. */
FL_TEST(append_v2_list_no_row_ids_v1_refused)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init(t, &ops);
    char err[512] = "";
    fl_appender_t *a = NULL;
    REQUIRE(fl_append_open(&a, &ops, NULL, err, sizeof err) == FL_OK);
    fl_vec_t batch;
    fl_vec_init(&batch, fl_append_schema(a));
    fill(&batch, 0, 50, 3);
    REQUIRE(fl_append_write(a, &batch, err, sizeof err) == FL_OK);
    int64_t sid = -1;
    REQUIRE(fl_append_commit(a, NULL, 0, &sid, err, sizeof err) == FL_OK);
    json_t *s = json_array_get(json_object_get(t->md, "snapshots"), 0);
    CHECK(!json_object_get(s, "first-row-id") && !json_object_get(s, "added-rows"));
    CHECK(!json_object_get(t->md, "next-row-id"));
    fl_manifest_file_t *mfs;
    size_t n;
    char hdr[32];
    read_list(t, s, &mfs, &n, hdr, sizeof hdr);
    REQUIRE(n == 1);
    CHECK_STR(hdr, "");
    CHECK(!mfs[0].has_first_row_id);
    fl_manifest_files_free(mfs, n);
    fl_append_free(a);
    fl_vec_free(&batch);
    mem_table_free(t);

    mem_table_init_props(t, &ops, "{\"spec-id\":0,\"fields\":[]}", "{\"format-version\":\"1\"}");
    REQUIRE(t->md);
    a = NULL;
    CHECK(fl_append_open(&a, &ops, NULL, err, sizeof err) == FL_ERR_INVALID);
    CHECK(strstr(err, "format-version 2 and 3") && strstr(err, "v1"));
    CHECK(!a);
    mem_table_free(t);
    free(t);
}

/* A steady competing writer, by the clock: a commit whose base was loaded WINDOW_MS or more
 * before it arrives loses (409, as when another writer commits that often), and so does the
 * first. The retry must back off before it re-bases, not between the re-base and its commit:
 * sleeping after the reload made every later attempt lose (soak: "commit kept conflicting
 * after 16 attempts" with two writers and compaction on one table). */
#define WINDOW_MS 15   /* mem_timed_t (mem_table.h) */

FL_TEST(append_retry_backs_off_before_rebasing)
{
    mem_table_t *t = calloc(1, sizeof *t);
    mem_timed_t s = { .window_ms = WINDOW_MS };
    mem_table_init(t, &s.inner);
    fl_table_ops_t ops = mem_timed_ops(&s);
    char err[512] = "";
    fl_appender_t *a = NULL;
    REQUIRE(fl_append_open(&a, &ops, NULL, err, sizeof err) == FL_OK);
    fl_vec_t batch;
    fl_vec_init(&batch, fl_append_schema(a));
    fill(&batch, 0, 200, 3);
    REQUIRE(fl_append_write(a, &batch, err, sizeof err) == FL_OK);
    int64_t sid = -1;
    fl_err_t e = fl_append_commit(a, NULL, 0, &sid, err, sizeof err);
    CHECK_EQ(e, FL_OK);
    if (e) fprintf(stderr, "  append: %s\n", err);
    CHECK(sid > 0);
    CHECK(s.commits >= 2 && s.commits < 16);
    CHECK_EQ(fl_iceberg_current_snapshot_id(t->md), sid);
    int64_t rows, idsum;
    size_t files;
    scan_all(t, &s.inner, &rows, &idsum, &files);
    CHECK_EQ(rows, 200);
    fl_append_free(a);
    fl_vec_free(&batch);
    mem_table_free(t);
    free(t);
}

/* The two halves of a commit for multi-table transactions (fl_append_prepare / settle): the
 * caller sends the requests itself; a 409 re-bases, an unsupported catalog falls back to a
 * plain commit of the same files, a drop deletes everything written. */
static int tx_send(fl_table_ops_t *ops, json_t *reqs, json_t *upd)
{
    json_t *md = NULL;
    int status = 0;
    char err[256];
    ops->commit(ops->ctx, reqs, upd, &md, &status, err, sizeof err);
    json_decref(md);
    json_decref(reqs);
    json_decref(upd);
    return status;
}

FL_TEST(append_prepare_settle_two_phase)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init(t, &ops);
    char err[512] = "";
    fl_appender_t *a = NULL, *b = NULL;
    REQUIRE(fl_append_open(&a, &ops, NULL, err, sizeof err) == FL_OK);
    REQUIRE(fl_append_open(&b, &ops, NULL, err, sizeof err) == FL_OK);
    fl_vec_t batch;
    fl_vec_init(&batch, fl_append_schema(a));
    json_t *reqs = NULL, *upd = NULL;
    int64_t sid = -1, sb = -1;
    /* nothing written: nothing to send */
    REQUIRE(fl_append_prepare(a, NULL, NULL, &reqs, &upd, &sid, err, sizeof err) == FL_OK);
    CHECK(!reqs && !upd && sid == -1);
    fill(&batch, 0, 100, 3);
    REQUIRE(fl_append_write(a, &batch, err, sizeof err) == FL_OK);
    REQUIRE(fl_append_prepare(a, NULL, NULL, &reqs, &upd, &sid, err, sizeof err) == FL_OK);
    REQUIRE(reqs && upd && sid > 0);
    /* another writer lands first: the request conflicts, is re-based and lands */
    fl_vec_clear(&batch);
    fill(&batch, 1000, 10, 1);
    REQUIRE(fl_append_write(b, &batch, err, sizeof err) == FL_OK);
    REQUIRE(fl_append_commit(b, NULL, 0, &sb, err, sizeof err) == FL_OK);
    CHECK_EQ(tx_send(&ops, reqs, upd), 409);
    REQUIRE(fl_append_settle(a, FL_APPEND_CONFLICT, err, sizeof err) == FL_OK);
    CHECK_EQ(live_objs(t, "snap-"), 1);          /* the refused attempt's list is gone */
    int64_t sid2 = -1;
    REQUIRE(fl_append_prepare(a, NULL, NULL, &reqs, &upd, &sid2, err, sizeof err) == FL_OK);
    CHECK_EQ(sid2, sid);                          /* the same snapshot, re-based */
    CHECK_EQ(tx_send(&ops, reqs, upd), 200);
    REQUIRE(fl_append_settle(a, FL_APPEND_LANDED, err, sizeof err) == FL_OK);
    CHECK_EQ(fl_iceberg_current_snapshot_id(t->md), sid);
    int64_t rows, idsum;
    size_t files;
    scan_all(t, &ops, &rows, &idsum, &files);
    CHECK_EQ(rows, 110);
    CHECK_EQ(live_objs(t, "snap-"), 2);
    /* the catalog has no transactions: the prepared files commit on their own */
    fl_vec_clear(&batch);
    fill(&batch, 2000, 20, 1);
    REQUIRE(fl_append_write(a, &batch, err, sizeof err) == FL_OK);
    REQUIRE(fl_append_prepare(a, NULL, NULL, &reqs, &upd, &sid, err, sizeof err) == FL_OK);
    json_decref(reqs);
    json_decref(upd);
    REQUIRE(fl_append_settle(a, FL_APPEND_SINGLE, err, sizeof err) == FL_OK);
    REQUIRE(fl_append_commit(a, NULL, 0, &sid2, err, sizeof err) == FL_OK);
    CHECK_EQ(sid2, sid);
    scan_all(t, &ops, &rows, &idsum, &files);
    CHECK_EQ(rows, 130);
    CHECK_EQ(live_objs(t, "snap-"), 3);
    /* a 409 whose request had landed (a resend's answer): the files are the table's */
    fl_vec_clear(&batch);
    fill(&batch, 2500, 5, 1);
    REQUIRE(fl_append_write(a, &batch, err, sizeof err) == FL_OK);
    REQUIRE(fl_append_prepare(a, NULL, NULL, &reqs, &upd, &sid, err, sizeof err) == FL_OK);
    t->commit_mode = 3;
    CHECK_EQ(tx_send(&ops, reqs, upd), 409);
    t->commit_mode = 0;
    CHECK(fl_append_settle(a, FL_APPEND_CONFLICT, err, sizeof err) == FL_ERR_CONFLICT);
    CHECK(strstr(err, "landed") != NULL);
    CHECK_EQ(fl_iceberg_current_snapshot_id(t->md), sid);
    scan_all(t, &ops, &rows, &idsum, &files);
    CHECK_EQ(rows, 135);
    CHECK_EQ(live_objs(t, "snap-"), 4);
    /* a definite failure: everything the prepare wrote is deleted */
    int manifests = live_objs(t, "-m0.avro"), data = live_objs(t, ".parquet");
    fl_vec_clear(&batch);
    fill(&batch, 3000, 20, 2);
    REQUIRE(fl_append_write(a, &batch, err, sizeof err) == FL_OK);
    REQUIRE(fl_append_prepare(a, NULL, NULL, &reqs, &upd, &sid, err, sizeof err) == FL_OK);
    json_decref(reqs);
    json_decref(upd);
    CHECK_EQ(live_objs(t, "-m0.avro"), manifests + 1);
    REQUIRE(fl_append_settle(a, FL_APPEND_DROP, err, sizeof err) == FL_OK);
    CHECK_EQ(live_objs(t, "-m0.avro"), manifests);
    CHECK_EQ(live_objs(t, ".parquet"), data);
    CHECK_EQ(live_objs(t, "snap-"), 4);
    /* prepared and never settled: freeing the appender deletes it too */
    REQUIRE(fl_append_write(a, &batch, err, sizeof err) == FL_OK);
    REQUIRE(fl_append_prepare(a, NULL, NULL, &reqs, &upd, &sid, err, sizeof err) == FL_OK);
    json_decref(reqs);
    json_decref(upd);
    fl_append_free(a);
    CHECK_EQ(live_objs(t, "-m0.avro"), manifests);
    CHECK_EQ(live_objs(t, "snap-"), 4);
    CHECK_EQ(live_objs(t, ".parquet"), data);
    fl_append_free(b);
    fl_vec_free(&batch);
    mem_table_free(t);
    free(t);
}

/* The 409 backoff: full jitter within [0, min(MAX, BASE * 2^(attempt-1))]; draws
 * spread over the whole range (writers racing on one table do not retry in step). */
FL_TEST(append_backoff_full_jitter)
{
    for (int attempt = 1; attempt <= 20; attempt++) {
        int64_t cap = FL_APPEND_BACKOFF_BASE_MS;
        for (int i = 1; i < attempt; i++) cap = cap * 2 > FL_APPEND_BACKOFF_MAX_MS ? FL_APPEND_BACKOFF_MAX_MS : cap * 2;
        CHECK_EQ(fl_append_backoff_ms(attempt, 0), 0);
        CHECK_EQ(fl_append_backoff_ms(attempt, (uint64_t)cap), cap);
        CHECK(fl_append_backoff_ms(attempt, UINT64_MAX) <= cap);
        int lo = INT32_MAX, hi = -1;
        for (int k = 0; k < 2000; k++) {
            int d = fl_append_backoff_ms(attempt, fl_random_u64());
            CHECK(d >= 0 && d <= cap);
            if (d < lo) lo = d;
            if (d > hi) hi = d;
        }
        CHECK(lo <= cap / 10 && hi >= cap - cap / 10);
    }
    CHECK_EQ(fl_append_backoff_ms(1, 1000) <= FL_APPEND_BACKOFF_BASE_MS, 1);
    CHECK_EQ(fl_append_backoff_ms(100, UINT64_MAX / 2) <= FL_APPEND_BACKOFF_MAX_MS, 1);
}
