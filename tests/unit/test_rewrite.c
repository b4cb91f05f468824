/* Compaction (iceberg/rewrite.h) over in-memory table ops: grouping per
 * partition and spec, bin-packing, position and equality deletes applied by
 * sequence number and dropped, the starting sequence number on the new files,
 * a racing append (re-based, both land), a racing position delete (that group
 * fails, the delete stays effective), a racing equality delete (still applies
 * to the rewritten rows), and the manifest merge. */
#include "test.h"
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include "base/checksum.h"
#include "base/mem.h"
#include "format/parquet.h"
#include "iceberg/append.h"
#include "iceberg/manifest.h"
#include "iceberg/metadata.h"
#include "iceberg/puffin.h"
#include "iceberg/rewrite.h"
#include "iceberg/scan.h"
#include "mem_table.h"

#define SPEC_CAT "{\"spec-id\":0,\"fields\":[{\"source-id\":2,\"field-id\":1000,\"name\":\"cat\",\"transform\":\"identity\"}]}"
#define SPEC_NONE "{\"spec-id\":0,\"fields\":[]}"

/* One appender commit of rows first..first+n. */
static int64_t append_rows(fl_table_ops_t *ops, int64_t first, int n, int ncat)
{
    char err[256];
    fl_appender_t *a = NULL;
    if (fl_append_open(&a, ops, NULL, err, sizeof err)) return -1;
    fl_vec_t b;
    fl_vec_init(&b, fl_append_schema(a));
    fill(&b, first, n, ncat);
    int64_t sid = -1;
    if (fl_append_write(a, &b, err, sizeof err) || fl_append_commit(a, NULL, 0, &sid, err, sizeof err))
        fprintf(stderr, "append: %s\n", err);
    fl_vec_free(&b);
    fl_append_free(a);
    return sid;
}

static int64_t id_sum(int64_t from, int64_t to)
{
    int64_t s = 0;
    for (int64_t i = from; i < to; i++) s += i;
    return s;
}

static json_t *main_snap(mem_table_t *t)
{
    int64_t id = fl_iceberg_current_snapshot_id(t->md);
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(t->md, "snapshots"), i, s)
        if (json_integer_value(json_object_get(s, "snapshot-id")) == id) return s;
    return NULL;
}

static const char *summary(mem_table_t *t, const char *k)
{
    return json_string_value(json_object_get(json_object_get(main_snap(t), "summary"), k));
}

/* Live entries of the current snapshot: data files, delete files, and how many
 * ADDED-by-the-current-snapshot data entries carry data sequence number seq. */
static void live_entries(mem_table_t *t, size_t *data, size_t *dels, size_t *added_at_seq, int64_t seq,
                         size_t *manifests)
{
    *data = *dels = *added_at_seq = *manifests = 0;
    json_t *s = main_snap(t);
    if (!s) return;
    int64_t sid = json_integer_value(json_object_get(s, "snapshot-id"));
    int i = find_obj(t, json_string_value(json_object_get(s, "manifest-list")));
    if (i < 0) return;
    fl_manifest_file_t *mfs;
    size_t n;
    char err[256];
    if (fl_manifest_list_read(fl_slice(t->objs[i].data.ptr, t->objs[i].data.len), &mfs, &n, err, sizeof err)) return;
    *manifests = n;
    for (size_t m = 0; m < n; m++) {
        int k = find_obj(t, mfs[m].manifest_path);
        if (k < 0) continue;
        fl_manifest_entry_t *en;
        size_t ne;
        if (fl_manifest_read(fl_slice(t->objs[k].data.ptr, t->objs[k].data.len), &mfs[m], &en, &ne, err, sizeof err)) continue;
        for (size_t x = 0; x < ne; x++) {
            if (en[x].status == 2) continue;
            if (en[x].file.content) (*dels)++;
            else (*data)++;
            if (!en[x].file.content && en[x].status == 1 && en[x].snapshot_id == sid && en[x].sequence_number == seq)
                (*added_at_seq)++;
        }
        fl_manifest_entries_free(en, ne);
    }
    fl_manifest_files_free(mfs, n);
}

static fl_err_t buf_sink(void *ctx, const void *p, size_t n) { return fl_buf_add(ctx, p, n); }

/* Write a delete file and commit it (a row delta): content 1 = position
 * deletes (paths[i], pos[i]), 2 = equality deletes on id (ids[i]). cat: the
 * partition value for an identity(cat) spec, NULL for an unpartitioned one. */
static int64_t commit_delete(mem_table_t *t, fl_table_ops_t *ops, int content, const char *cat, const char *const *paths,
                             const int64_t *vals, size_t n)
{
    static int counter;
    fl_field_t ds;
    memset(&ds, 0, sizeof ds);
    fl_field_set(&ds, 0, "table", true, FL_TYPE_STRUCT);
    if (content == 1) {
        fl_field_set(fl_field_add_child(&ds), 2147483546, "file_path", true, FL_TYPE_STRING);
        fl_field_set(fl_field_add_child(&ds), 2147483545, "pos", true, FL_TYPE_LONG);
    } else {
        fl_field_set(fl_field_add_child(&ds), 1, "id", true, FL_TYPE_LONG);
    }
    fl_vec_t v;
    fl_vec_init(&v, &ds);
    for (size_t i = 0; i < n; i++) {
        fl_vec_append_struct(&v);
        if (content == 1) {
            fl_vec_append_bytes(&v.children[0], paths[i], strlen(paths[i]));
            fl_vec_append_i64(&v.children[1], vals[i]);
        } else {
            fl_vec_append_i64(&v.children[0], vals[i]);
        }
    }
    fl_buf_t pq;
    fl_buf_init(&pq, 0);
    fl_pq_writer_t *w;
    fl_pq_writer_open(&w, &ds, NULL, (fl_pq_sink_t){ buf_sink, &pq });
    fl_pq_writer_write(w, &v);
    fl_pq_writer_close(w, NULL);
    fl_pq_writer_free(w);
    char path[128];
    snprintf(path, sizeof path, "mem://wh/t/data/delete-%d.parquet", counter++);
    ops->put(ops->ctx, path, pq.ptr, pq.len);

    fl_data_file_t df;
    memset(&df, 0, sizeof df);
    df.content = content;
    df.file_path = fl_strdup(path);
    df.file_format = fl_strdup("PARQUET");
    df.record_count = (int64_t)n;
    df.file_size_in_bytes = (int64_t)pq.len;
    if (cat) {
        fl_ice_value_t pv = { .kind = FL_ICE_STRING };
        pv.u.bytes.ptr = (const unsigned char *)cat;
        pv.u.bytes.len = strlen(cat);
        fl_data_file_set_partition(&df, 0, &pv);
    }
    if (content == 2) {
        df.equality_ids = fl_malloc(sizeof *df.equality_ids);
        df.equality_ids[0] = 1;
        df.n_equality_ids = 1;
    }
    fl_field_t schema;
    fl_part_spec_t spec;
    char err[256];
    fl_schema_from_metadata(t->md, -1, &schema, NULL, err, sizeof err);
    fl_part_spec_from_metadata(t->md, -1, &schema, &spec, err, sizeof err);
    int64_t parent = fl_iceberg_current_snapshot_id(t->md);
    int64_t seq = json_integer_value(json_object_get(t->md, "last-sequence-number")) + 1;
    int64_t sid = 900000 + counter;
    fl_manifest_writer_t mw;
    memset(&mw, 0, sizeof mw);
    fl_manifest_writer_open(&mw, 2, &schema, 0, &spec, 1, sid, FL_AVRO_CODEC_DEFLATE);
    fl_manifest_entry_t me;
    memset(&me, 0, sizeof me);
    me.status = 1;
    me.has_snapshot_id = true;
    me.snapshot_id = sid;
    me.file = df;
    fl_manifest_writer_add(&mw, &me);
    char mpath[128], lpath[128];
    snprintf(mpath, sizeof mpath, "mem://wh/t/metadata/del-m%d.avro", counter);
    snprintf(lpath, sizeof lpath, "mem://wh/t/metadata/snap-del-%d.avro", counter);
    fl_buf_t mb, lb;
    fl_buf_init(&mb, 0);
    fl_buf_init(&lb, 0);
    fl_manifest_file_t mf;
    fl_manifest_writer_finish(&mw, mpath, seq, &mb, &mf);
    ops->put(ops->ctx, mpath, mb.ptr, mb.len);
    /* list: the delete manifest, then the parent's */
    fl_manifest_file_t *pm = NULL;
    size_t np = 0;
    json_t *ps = main_snap(t);
    int li = ps ? find_obj(t, json_string_value(json_object_get(ps, "manifest-list"))) : -1;
    if (li >= 0) fl_manifest_list_read(fl_slice(t->objs[li].data.ptr, t->objs[li].data.len), &pm, &np, err, sizeof err);
    fl_manifest_file_t *all = fl_calloc(np + 1, sizeof *all);
    all[0] = mf;
    if (np) memcpy(all + 1, pm, np * sizeof *pm);
    fl_manifest_list_write(2, sid, parent, seq, all, np + 1, FL_AVRO_CODEC_DEFLATE, &lb);
    ops->put(ops->ctx, lpath, lb.ptr, lb.len);
    json_t *snap = json_pack("{s:I,s:I,s:I,s:s,s:{s:s},s:i}", "snapshot-id", (json_int_t)sid, "sequence-number",
                             (json_int_t)seq, "timestamp-ms", (json_int_t)1700000000000, "manifest-list", lpath,
                             "summary", "operation", "overwrite", "schema-id", 0);
    if (parent >= 0) json_object_set_new(snap, "parent-snapshot-id", json_integer(parent));
    json_t *upd = json_pack("[{s:s,s:o},{s:s,s:s,s:s,s:I}]", "action", "add-snapshot", "snapshot", snap, "action",
                            "set-snapshot-ref", "ref-name", "main", "type", "branch", "snapshot-id", (json_int_t)sid);
    json_t *newmd = NULL;
    int status = 0;
    json_t *reqs = json_array();
    ops->commit(ops->ctx, reqs, upd, &newmd, &status, err, sizeof err);
    json_decref(reqs);
    json_decref(newmd);
    json_decref(upd);
    free(all);
    fl_manifest_files_free(pm, np);
    fl_manifest_file_free(&mf);
    fl_manifest_writer_free(&mw);
    fl_buf_free(&mb);
    fl_buf_free(&lb);
    fl_buf_free(&pq);
    fl_data_file_free(&df);
    fl_part_spec_free(&spec);
    fl_field_free(&schema);
    fl_vec_free(&v);
    fl_field_free(&ds);
    return status == 200 ? seq : -1;
}

/* The live data files of the current snapshot in the partition cat=c (NULL: any). */
static size_t files_in(mem_table_t *t, fl_table_ops_t *ops, const char *cat, char **first)
{
    fl_scan_plan_t plan;
    char err[256];
    if (fl_scan_plan(ops, t->md, -1, &plan, err, sizeof err)) return 0;
    size_t n = 0;
    for (size_t i = 0; i < plan.n_files; i++) {
        const fl_data_file_t *f = &plan.files[i];
        if (cat && (f->n_partition < 1 || f->partition[0].kind != FL_ICE_STRING ||
                    f->partition[0].u.bytes.len != strlen(cat) || memcmp(f->partition[0].u.bytes.ptr, cat, strlen(cat))))
            continue;
        if (first && !n) *first = fl_strdup(f->file_path);
        n++;
    }
    fl_scan_plan_free(&plan);
    return n;
}

FL_TEST(rewrite_binpack_per_partition_starting_seq)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_spec(t, &ops, SPEC_CAT);
    for (int k = 0; k < 8; k++) REQUIRE(append_rows(&ops, k * 30, 30, 3) > 0);
    int64_t rows0, sum0;
    size_t files0;
    scan_all(t, &ops, &rows0, &sum0, &files0);
    CHECK_EQ(rows0, 240);
    CHECK_EQ(files0, 32); /* c0 c1 c2 + null, each commit */
    char err[512] = "";
    fl_rewrite_plan_t plan;
    REQUIRE(fl_rewrite_plan(&ops, NULL, &plan, err, sizeof err) == FL_OK);
    CHECK_EQ(plan.n_groups, 4);
    CHECK_EQ(plan.sequence_number, 8);
    for (size_t g = 0; g < plan.n_groups; g++) CHECK_EQ(plan.groups[g].n_files, 8);
    fl_rewrite_plan_free(&plan);

    fl_rewrite_result_t r;
    REQUIRE(fl_rewrite_run(&ops, NULL, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.groups_committed, 4);
    CHECK_EQ(r.files_in, 32);
    CHECK_EQ(r.files_out, 4);
    CHECK_EQ(r.records_in, 240);
    CHECK_EQ(r.records_out, 240);
    CHECK_EQ(r.commits, 1);
    int64_t rows, sum;
    size_t files;
    scan_all(t, &ops, &rows, &sum, &files);
    CHECK_EQ(rows, 240);
    CHECK_EQ(sum, sum0);
    CHECK_EQ(files, 4);
    CHECK_STR(summary(t, "operation"), "replace");
    CHECK_STR(summary(t, "added-data-files"), "4");
    CHECK_STR(summary(t, "deleted-data-files"), "32");
    CHECK_STR(summary(t, "total-data-files"), "4");
    CHECK_STR(summary(t, "total-records"), "240");
    /* the new files carry the starting snapshot's sequence number (8), not 9 */
    CHECK_EQ(json_integer_value(json_object_get(main_snap(t), "sequence-number")), 9);
    size_t data, dels, at_start, mans;
    live_entries(t, &data, &dels, &at_start, 8, &mans);
    CHECK_EQ(data, 4);
    CHECK_EQ(at_start, 4);
    /* nothing left worth doing */
    REQUIRE(fl_rewrite_plan(&ops, NULL, &plan, err, sizeof err) == FL_OK);
    CHECK_EQ(plan.n_groups, 0);
    fl_rewrite_plan_free(&plan);
    mem_table_free(t);
    free(t);
}

FL_TEST(rewrite_binpack_bounded_groups)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_spec(t, &ops, SPEC_NONE);
    for (int k = 0; k < 10; k++) REQUIRE(append_rows(&ops, k * 50, 50, 3) > 0);
    fl_scan_plan_t sp;
    char err[512] = "";
    REQUIRE(fl_scan_plan(&ops, t->md, -1, &sp, err, sizeof err) == FL_OK);
    int64_t fsz = 0;
    for (size_t i = 0; i < sp.n_files; i++)
        if (sp.files[i].file_size_in_bytes > fsz) fsz = sp.files[i].file_size_in_bytes;
    fl_scan_plan_free(&sp);
    /* a target of ~3.5 files: groups of 3 files (the last one 1 file: left alone) */
    fl_rewrite_opts_t o = { .target_file_bytes = fsz * 7 / 2, .min_file_bytes = fsz * 2 };
    fl_rewrite_plan_t plan;
    REQUIRE(fl_rewrite_plan(&ops, &o, &plan, err, sizeof err) == FL_OK);
    CHECK_EQ(plan.n_groups, 3);
    for (size_t g = 0; g < plan.n_groups; g++) {
        CHECK_EQ(plan.groups[g].n_files, 3);
        CHECK(plan.groups[g].bytes <= o.target_file_bytes);
    }
    fl_rewrite_plan_free(&plan);
    /* commits bounded to ~1 group each */
    o.max_commit_bytes = fsz * 4;
    fl_rewrite_result_t r;
    REQUIRE(fl_rewrite_run(&ops, &o, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.groups_committed, 3);
    CHECK_EQ(r.commits, 3);
    CHECK_EQ(r.files_in, 9);
    int64_t rows, sum;
    size_t files;
    scan_all(t, &ops, &rows, &sum, &files);
    CHECK_EQ(rows, 500);
    CHECK_EQ(sum, id_sum(0, 500));
    CHECK_EQ(files, 1 + r.files_out);
    mem_table_free(t);
    free(t);
}

FL_TEST(rewrite_old_spec_into_current)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_spec(t, &ops, SPEC_NONE);
    REQUIRE(append_rows(&ops, 0, 60, 3) > 0);
    /* evolve: partition by identity(cat) */
    json_t *upd = json_loads("[{\"action\":\"add-spec\",\"spec\":{\"spec-id\":1,\"fields\":[{\"source-id\":2,"
                             "\"field-id\":1000,\"name\":\"cat\",\"transform\":\"identity\"}]}},"
                             "{\"action\":\"set-default-spec\",\"spec-id\":-1}]", 0, NULL);
    json_t *newmd = NULL;
    int st = 0;
    char err[512] = "";
    json_t *reqs = json_array();
    ops.commit(ops.ctx, reqs, upd, &newmd, &st, err, sizeof err);
    json_decref(reqs);
    json_decref(upd);
    json_decref(newmd);
    REQUIRE(st == 200);
    REQUIRE(append_rows(&ops, 60, 60, 3) > 0);
    CHECK_EQ(files_in(t, &ops, NULL, NULL), 5);
    fl_rewrite_plan_t plan;
    REQUIRE(fl_rewrite_plan(&ops, NULL, &plan, err, sizeof err) == FL_OK);
    /* the lone old-spec file is a group of its own; new-spec partitions hold one file each */
    REQUIRE(plan.n_groups == 1);
    CHECK_EQ(plan.groups[0].spec_id, 0);
    CHECK_EQ(plan.groups[0].n_files, 1);
    fl_rewrite_plan_free(&plan);
    fl_rewrite_result_t r;
    REQUIRE(fl_rewrite_run(&ops, NULL, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.files_in, 1);
    CHECK_EQ(r.files_out, 4); /* rows of the old file routed to c0 c1 c2 null */
    int64_t rows, sum;
    size_t files;
    scan_all(t, &ops, &rows, &sum, &files);
    CHECK_EQ(rows, 120);
    CHECK_EQ(sum, id_sum(0, 120));
    CHECK_EQ(files_in(t, &ops, "c1", NULL), 2);
    /* now every file is in spec 1 and two per partition: one more run packs them */
    REQUIRE(fl_rewrite_run(&ops, NULL, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.files_in, 8);
    CHECK_EQ(files_in(t, &ops, NULL, NULL), 4);
    scan_all(t, &ops, &rows, &sum, &files);
    CHECK_EQ(sum, id_sum(0, 120));
    mem_table_free(t);
    free(t);
}

FL_TEST(rewrite_applies_deletes_by_sequence_number)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_spec(t, &ops, SPEC_NONE);
    REQUIRE(append_rows(&ops, 0, 100, 3) > 0);                       /* seq 1 */
    REQUIRE(append_rows(&ops, 100, 100, 3) > 0);                     /* seq 2 */
    char *f0 = NULL;
    REQUIRE(files_in(t, &ops, NULL, &f0) == 2);
    /* which file holds ids 0..99? the one whose id bounds say so: read it */
    fl_scan_plan_t sp;
    char err[512] = "";
    REQUIRE(fl_scan_plan(&ops, t->md, -1, &sp, err, sizeof err) == FL_OK);
    const char *first = NULL;
    for (size_t i = 0; i < sp.n_files; i++)
        for (size_t m = 0; m < sp.files[i].n_metrics; m++)
            if (sp.files[i].metrics[m].field_id == 1 && sp.files[i].metrics[m].has_lower &&
                sp.files[i].metrics[m].lower.ptr[0] == 0 && sp.files[i].metrics[m].lower.len == 8)
                first = sp.files[i].file_path;
    REQUIRE(first);
    /* position deletes (seq 3): rows at 0 and 5 of the first file = ids 0 and 5 */
    const char *paths[] = { first, first };
    int64_t pos[] = { 0, 5 };
    REQUIRE(commit_delete(t, &ops, 1, NULL, paths, pos, 2) == 3);
    /* equality deletes (seq 4): ids 10, 150 */
    int64_t ids[] = { 10, 150 };
    REQUIRE(commit_delete(t, &ops, 2, NULL, NULL, ids, 2) == 4);
    /* a later append (seq 5) with ids 10 and 150 again: the equality delete does not apply to it */
    REQUIRE(append_rows(&ops, 10, 1, 3) > 0);
    REQUIRE(append_rows(&ops, 150, 1, 3) > 0);
    fl_scan_plan_free(&sp);
    fl_rewrite_result_t r;
    REQUIRE(fl_rewrite_run(&ops, NULL, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.groups_committed, 1);
    CHECK_EQ(r.files_in, 4);
    CHECK_EQ(r.files_out, 1);
    CHECK_EQ(r.records_in, 202);
    CHECK_EQ(r.records_out, 198);
    CHECK_EQ(r.delete_files_applied, 2);
    CHECK_EQ(r.delete_files_removed, 2);
    int64_t rows, sum;
    size_t files;
    scan_all(t, &ops, &rows, &sum, &files);
    CHECK_EQ(rows, 198);
    CHECK_EQ(sum, id_sum(0, 200) - 0 - 5 - 10 - 150 + 10 + 150);
    CHECK_EQ(files, 1);
    size_t data, dels, at_start, mans;
    live_entries(t, &data, &dels, &at_start, 6, &mans);
    CHECK_EQ(dels, 0);
    CHECK_EQ(at_start, 1);
    CHECK_STR(summary(t, "removed-delete-files"), "2");
    CHECK_STR(summary(t, "removed-position-delete-files"), "1");
    CHECK_STR(summary(t, "removed-equality-delete-files"), "1");
    free(f0);
    mem_table_free(t);
    free(t);
}

/* More equality delete files than any fixed table holds all apply to one data file (a
 * fixed 8-slot table once read past its end and left the rest unapplied). */
FL_TEST(rewrite_applies_many_equality_delete_files)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_spec(t, &ops, SPEC_NONE);
    REQUIRE(append_rows(&ops, 0, 100, 3) > 0);
    REQUIRE(append_rows(&ops, 100, 100, 3) > 0);
    int64_t gone = 0;
    for (int64_t i = 0; i < 12; i++) {
        int64_t ids[] = { 3 + i * 11 };
        gone += ids[0];
        REQUIRE(commit_delete(t, &ops, 2, NULL, NULL, ids, 1) > 0);
    }
    char err[512] = "";
    fl_rewrite_result_t r;
    REQUIRE(fl_rewrite_run(&ops, NULL, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.groups_committed, 1);
    CHECK_EQ(r.records_out, 200 - 12);
    CHECK_EQ(r.delete_files_removed, 12);
    int64_t rows, sum;
    size_t files;
    scan_all(t, &ops, &rows, &sum, &files);
    CHECK_EQ(rows, 188);
    CHECK_EQ(sum, id_sum(0, 200) - gone);
    mem_table_free(t);
    free(t);
}

/* before_commit hooks: a racing writer */
typedef struct race {
    mem_table_t *t;
    fl_table_ops_t *ops;
    int kind;                   /* 1 append, 2 position delete on c0's file, 3 equality delete */
    char *victim;
    int64_t seq;
} race_t;

static void race_hook(void *ctx)
{
    race_t *r = ctx;
    if (r->kind == 1) {
        r->seq = append_rows(r->ops, 1000, 30, 3);
    } else if (r->kind == 2) {
        const char *paths[] = { r->victim };
        int64_t pos[] = { 1 };
        r->seq = commit_delete(r->t, r->ops, 1, "c0", paths, pos, 1);
    } else {
        int64_t ids[] = { 4 };   /* id 4: cat c1 */
        r->seq = commit_delete(r->t, r->ops, 2, "c1", NULL, ids, 1);
    }
}

FL_TEST(rewrite_racing_append_rebased)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_spec(t, &ops, SPEC_CAT);
    for (int k = 0; k < 4; k++) REQUIRE(append_rows(&ops, k * 30, 30, 3) > 0);
    race_t race = { t, &ops, 1, NULL, 0 };
    fl_rewrite_opts_t o = { .before_commit = race_hook, .before_commit_ctx = &race };
    fl_rewrite_result_t r;
    char err[512] = "";
    REQUIRE(fl_rewrite_run(&ops, &o, &r, err, sizeof err) == FL_OK);
    CHECK(race.seq > 0);
    CHECK_EQ(t->conflicts, 1);
    CHECK_EQ(r.commit_attempts, 2);
    CHECK_EQ(r.groups_committed, 4);
    CHECK_EQ(r.groups_failed, 0);
    int64_t rows, sum;
    size_t files;
    scan_all(t, &ops, &rows, &sum, &files);
    CHECK_EQ(rows, 150);
    CHECK_EQ(sum, id_sum(0, 120) + id_sum(1000, 1030));
    CHECK_EQ(files, 4 + 4); /* 4 compacted + the racing append's 4 */
    /* the replace's parent is the racing append; new files still carry seq 4 (the start) */
    CHECK_STR(summary(t, "operation"), "replace");
    size_t data, dels, at_start, mans;
    live_entries(t, &data, &dels, &at_start, 4, &mans);
    CHECK_EQ(at_start, 4);
    mem_table_free(t);
    free(t);
}

/* A writer faster than compaction: it commits an append before every commit of
 * the job unless the job holds the table (ops.hold). */
typedef struct steady {
    fl_table_ops_t inner, *self;
    bool held;
    int appended;
} steady_t;

static fl_err_t steady_load(void *ctx, json_t **md, char **loc, char *err, size_t errlen)
{
    steady_t *s = ctx;
    return s->inner.load(s->inner.ctx, md, loc, err, errlen);
}

static fl_err_t steady_commit(void *ctx, json_t *reqs, json_t *ups, json_t **md, int *st, char *err, size_t errlen)
{
    steady_t *s = ctx;
    if (!s->held && append_rows(&s->inner, 1000 + 10 * s->appended, 10, 3) > 0) s->appended++;
    return s->inner.commit(s->inner.ctx, reqs, ups, md, st, err, errlen);
}

static void steady_hold(void *ctx, bool on)
{
    steady_t *s = ctx;
    s->held = on;
}

static fl_err_t steady_put(void *ctx, const char *u, const void *p, size_t n) { steady_t *s = ctx; return s->inner.put(s->inner.ctx, u, p, n); }
static fl_err_t steady_put_file(void *ctx, const char *u, int fd, uint64_t n) { steady_t *s = ctx; return s->inner.put_file(s->inner.ctx, u, fd, n); }
static fl_err_t steady_get(void *ctx, const char *u, fl_buf_t *o) { steady_t *s = ctx; return s->inner.get(s->inner.ctx, u, o); }
static fl_err_t steady_del(void *ctx, const char *u) { steady_t *s = ctx; return s->inner.del(s->inner.ctx, u); }

static void steady_run(bool can_hold, fl_rewrite_result_t *r, fl_err_t *e, int64_t *rows, int *appended)
{
    mem_table_t *t = calloc(1, sizeof *t);
    steady_t s = { 0 };
    mem_table_init_spec(t, &s.inner, SPEC_CAT);
    for (int k = 0; k < 4; k++) append_rows(&s.inner, k * 30, 30, 3);
    fl_table_ops_t ops = { &s, steady_load, steady_commit, steady_put, steady_put_file, steady_get, steady_del,
                           NULL, NULL, can_hold ? steady_hold : NULL };
    char err[512] = "";
    *e = fl_rewrite_run(&ops, &(fl_rewrite_opts_t){ 0 }, r, err, sizeof err);
    int64_t sum;
    size_t files;
    scan_all(t, &s.inner, rows, &sum, &files);
    *appended = s.appended;
    mem_table_free(t);
    free(t);
}

FL_TEST(rewrite_holds_the_table_after_losing_to_a_steady_writer)
{
    fl_rewrite_result_t r;
    fl_err_t e;
    int64_t rows;
    int appended;
    /* without hold: every attempt loses; the job gives up (the next run starts over) */
    steady_run(false, &r, &e, &rows, &appended);
    CHECK_EQ(e, FL_ERR_CONFLICT);
    CHECK_EQ(r.groups_committed, 0);
    CHECK_EQ(rows, 120 + 10 * appended);
    /* with hold: the first attempts lose, the one that holds lands */
    steady_run(true, &r, &e, &rows, &appended);
    CHECK_EQ(e, FL_OK);
    CHECK_EQ(r.groups_committed, 4);
    CHECK_EQ(r.groups_failed, 0);
    CHECK_EQ(r.commit_attempts, FL_REWRITE_OPTIMISTIC_ATTEMPTS + 1);
    CHECK_EQ(appended, FL_REWRITE_OPTIMISTIC_ATTEMPTS);
    CHECK_EQ(rows, 120 + 10 * appended);
}

/* A steady writer by the clock: a commit whose base was loaded REWRITE_WINDOW_MS or more before
 * it arrives loses (409), and so does the first. The job backs off before it reloads, so its
 * re-based attempt lands; sleeping after the reload (as before) lost every attempt. */
#define REWRITE_WINDOW_MS 8   /* mem_timed_t (mem_table.h) */

FL_TEST(rewrite_retry_backs_off_before_reloading)
{
    mem_table_t *t = calloc(1, sizeof *t);
    mem_timed_t s = { .window_ms = REWRITE_WINDOW_MS };
    mem_table_init_spec(t, &s.inner, SPEC_CAT);
    for (int k = 0; k < 4; k++) REQUIRE(append_rows(&s.inner, k * 30, 30, 3) > 0);
    fl_table_ops_t ops = mem_timed_ops(&s);
    fl_rewrite_result_t r;
    char err[512] = "";
    fl_err_t e = fl_rewrite_run(&ops, &(fl_rewrite_opts_t){ 0 }, &r, err, sizeof err);
    CHECK_EQ(e, FL_OK);
    if (e) fprintf(stderr, "  rewrite: %s\n", err);
    CHECK_EQ(r.groups_committed, 4);
    CHECK(r.commit_attempts >= 2 && r.commit_attempts < 16);
    int64_t rows, sum;
    size_t files;
    scan_all(t, &s.inner, &rows, &sum, &files);
    CHECK_EQ(rows, 120);
    CHECK_EQ(files, 4);
    mem_table_free(t);
    free(t);
}

FL_TEST(rewrite_racing_position_delete_fails_group)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_spec(t, &ops, SPEC_CAT);
    for (int k = 0; k < 4; k++) REQUIRE(append_rows(&ops, k * 30, 30, 3) > 0);
    race_t race = { t, &ops, 2, NULL, 0 };
    REQUIRE(files_in(t, &ops, "c0", &race.victim) == 4);
    fl_rewrite_opts_t o = { .before_commit = race_hook, .before_commit_ctx = &race };
    fl_rewrite_result_t r;
    char err[512] = "";
    REQUIRE(fl_rewrite_run(&ops, &o, &r, err, sizeof err) == FL_OK);
    CHECK(race.seq > 0);
    CHECK_EQ(r.groups_failed, 1);
    CHECK_EQ(r.groups_committed, 3);
    CHECK(strstr(r.last_failure, "delete file added concurrently") != NULL);
    /* c0 untouched: its 4 files live (the victim among them), the delete live */
    CHECK_EQ(files_in(t, &ops, "c0", NULL), 4);
    CHECK_EQ(files_in(t, &ops, "c1", NULL), 1);
    CHECK(find_obj(t, race.victim) >= 0);
    size_t data, dels, at_start, mans;
    live_entries(t, &data, &dels, &at_start, 4, &mans);
    CHECK_EQ(dels, 1);
    CHECK_EQ(data, 4 + 3);
    /* no orphan output of the failed group: the only files under c0 are the 4 inputs */
    CHECK_EQ(live_objs(t, "data/cat=c0/"), 4);
    /* a later run picks c0 up and applies the delete */
    REQUIRE(fl_rewrite_run(&ops, NULL, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.groups_committed, 1);
    CHECK_EQ(r.records_out, r.records_in - 1);
    CHECK_EQ(r.delete_files_removed, 1);
    free(race.victim);
    mem_table_free(t);
    free(t);
}

FL_TEST(rewrite_racing_equality_delete_still_applies)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_spec(t, &ops, SPEC_CAT);
    for (int k = 0; k < 4; k++) REQUIRE(append_rows(&ops, k * 30, 30, 3) > 0);
    race_t race = { t, &ops, 3, NULL, 0 };
    fl_rewrite_opts_t o = { .before_commit = race_hook, .before_commit_ctx = &race };
    fl_rewrite_result_t r;
    char err[512] = "";
    REQUIRE(fl_rewrite_run(&ops, &o, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(race.seq, 5);
    CHECK_EQ(r.groups_committed, 4);
    CHECK_EQ(r.groups_failed, 0);
    /* the rewritten c1 file has data seq 4 < 5: the equality delete still applies;
     * it stays, and the next run applies and drops it */
    size_t data, dels, at_start, mans;
    live_entries(t, &data, &dels, &at_start, 4, &mans);
    CHECK_EQ(dels, 1);
    CHECK_EQ(at_start, 4);
    REQUIRE(fl_rewrite_run(&ops, NULL, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.groups_committed, 1);
    CHECK_EQ(r.delete_files_removed, 1);
    int64_t rows, sum;
    size_t files;
    scan_all(t, &ops, &rows, &sum, &files);
    CHECK_EQ(rows, 119);
    CHECK_EQ(sum, id_sum(0, 120) - 4);
    mem_table_free(t);
    free(t);
}

FL_TEST(rewrite_merges_small_manifests)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_spec(t, &ops, SPEC_CAT);
    for (int k = 0; k < 10; k++) REQUIRE(append_rows(&ops, k * 10, 10, 3) > 0);
    size_t data, dels, at_start, mans;
    live_entries(t, &data, &dels, &at_start, 0, &mans);
    CHECK_EQ(mans, 10);
    size_t data0 = data;
    fl_rewrite_opts_t o = { .skip_data = true, .merge_manifests_min = 4 };
    fl_rewrite_result_t r;
    char err[512] = "";
    REQUIRE(fl_rewrite_run(&ops, &o, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.manifests_replaced, 10);
    CHECK_EQ(r.manifests_created, 1);
    live_entries(t, &data, &dels, &at_start, 0, &mans);
    CHECK_EQ(mans, 1);
    CHECK_EQ(data, data0);
    CHECK_STR(summary(t, "operation"), "replace");
    CHECK_STR(summary(t, "manifests-replaced"), "10");
    CHECK_STR(summary(t, "total-records"), "100");
    int64_t rows, sum;
    size_t files;
    scan_all(t, &ops, &rows, &sum, &files);
    CHECK_EQ(rows, 100);
    CHECK_EQ(sum, id_sum(0, 100));
    /* under the threshold: nothing */
    REQUIRE(fl_rewrite_run(&ops, &o, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.commits, 0);
    mem_table_free(t);
    free(t);
}

/* ---- sort and z-order strategies ---- */

/* One commit of the rows with these ids (fill's shape: cat c<id % 3>, null every
 * 13th; s.k = id % 5, s null every 7th). */
static int64_t append_ids(fl_table_ops_t *ops, const int64_t *ids, size_t n)
{
    char err[256];
    fl_appender_t *a = NULL;
    if (fl_append_open(&a, ops, NULL, err, sizeof err)) return -1;
    fl_vec_t b;
    fl_vec_init(&b, fl_append_schema(a));
    for (size_t i = 0; i < n; i++) fill(&b, ids[i], 1, 3);
    int64_t sid = -1;
    if (fl_append_write(a, &b, err, sizeof err) || fl_append_commit(a, NULL, 0, &sid, err, sizeof err))
        fprintf(stderr, "append: %s\n", err);
    fl_vec_free(&b);
    fl_append_free(a);
    return sid;
}

/* A row as the tests see it: id, and two more columns as integers (-1 = null):
 * the standard table's cat (c<N> -> N) and s.k; the xy table's x and y. */
typedef struct trow {
    int64_t id, a, b;
} trow_t;

typedef struct tfile {
    trow_t *rows;
    size_t n;
    bool has_order;
    int32_t order_id;
    int64_t lo, hi;             /* lower/upper bound of field 1 (id) when long, else of field bound_id as int */
} tfile_t;

static int64_t cell(const fl_vec_t *v, size_t i, bool xy)
{
    if (fl_vec_is_null(v, i)) return -1;
    if (v->field->kind == FL_TYPE_STRING) return fl_vec_bytes_at(v, i).ptr[1] - '0';
    if (v->field->kind == FL_TYPE_STRUCT) return fl_vec_is_null(&v->children[0], i) ? -1 : fl_vec_i32(&v->children[0], i);
    (void)xy;
    return fl_vec_i32(v, i);
}

/* The live files of the current snapshot with their rows; bounds of field bound_id. */
static size_t read_files(mem_table_t *t, fl_table_ops_t *ops, tfile_t **out, int32_t bound_id)
{
    fl_scan_plan_t plan;
    char err[256];
    *out = NULL;
    if (fl_scan_plan(ops, t->md, -1, &plan, err, sizeof err)) return 0;
    tfile_t *fs = calloc(plan.n_files + 1, sizeof *fs);
    for (size_t f = 0; f < plan.n_files; f++) {
        const fl_data_file_t *df = &plan.files[f];
        fs[f].has_order = df->has_sort_order_id;
        fs[f].order_id = df->sort_order_id;
        for (size_t m = 0; m < df->n_metrics; m++) {
            const fl_col_metrics_t *cm = &df->metrics[m];
            if (cm->field_id != bound_id || !cm->has_lower || !cm->has_upper) continue;
            int64_t lo = 0, hi = 0;
            memcpy(&lo, cm->lower.ptr, cm->lower.len <= 8 ? cm->lower.len : 8);
            memcpy(&hi, cm->upper.ptr, cm->upper.len <= 8 ? cm->upper.len : 8);
            if (cm->lower.len == 4) { lo = (int32_t)lo; hi = (int32_t)hi; }
            fs[f].lo = lo;
            fs[f].hi = hi;
        }
        int i = find_obj(t, df->file_path);
        fl_pq_reader_t *r;
        if (i < 0 || fl_pq_reader_open(&r, fl_pq_source_mem(t->objs[i].data.ptr, t->objs[i].data.len))) continue;
        fl_vec_t v;
        memset(&v, 0, sizeof v);
        for (bool done = false; !done;) {
            if (fl_pq_reader_next(r, &v, &done) || done) break;
            bool xy = v.n_children == 3;
            fs[f].rows = realloc(fs[f].rows, (fs[f].n + v.len) * sizeof *fs[f].rows);
            for (size_t k = 0; k < v.len; k++) {
                trow_t *tr = &fs[f].rows[fs[f].n++];
                tr->id = fl_vec_i64(&v.children[0], k);
                tr->a = cell(&v.children[1], k, xy);
                tr->b = cell(&v.children[xy ? 2 : 3], k, xy);
            }
        }
        fl_vec_free(&v);
        fl_pq_reader_free(r);
    }
    size_t n = plan.n_files;
    fl_scan_plan_free(&plan);
    *out = fs;
    return n;
}

static void free_files(tfile_t *fs, size_t n)
{
    for (size_t i = 0; i < n; i++) free(fs[i].rows);
    free(fs);
}

/* Sort key comparators of the tests' orders. */
typedef int (*rowcmp_t)(const trow_t *x, const trow_t *y);

static int cmp_id_desc(const trow_t *x, const trow_t *y) { return (x->id < y->id) - (x->id > y->id); }

/* cat asc nulls-first, then id desc */
static int cmp_cat_nf_id_desc(const trow_t *x, const trow_t *y)
{
    if (x->a != y->a) return x->a < y->a ? -1 : 1; /* null = -1 sorts first */
    return cmp_id_desc(x, y);
}

/* s.k desc nulls-last, then id asc */
static int cmp_k_desc_nl_id(const trow_t *x, const trow_t *y)
{
    if (x->b != y->b) {
        if (x->b < 0) return 1;
        if (y->b < 0) return -1;
        return x->b > y->b ? -1 : 1;
    }
    return (x->id > y->id) - (x->id < y->id);
}

static const rowcmp_t *g_rowcmp;
static int cmp_tfile(const void *x, const void *y)
{
    const tfile_t *a = x, *b = y;
    if (!a->n || !b->n) return (a->n > 0) - (b->n > 0);
    return (*g_rowcmp)(&a->rows[0], &b->rows[0]);
}

/* Every file sorted by cmp, and the files, ordered by their first rows, one
 * sorted sequence (non-overlapping runs). Returns rows seen, their id sum. */
static bool files_sorted(tfile_t *fs, size_t n, rowcmp_t cmp, int64_t *rows, int64_t *sum)
{
    g_rowcmp = &cmp;
    qsort(fs, n, sizeof *fs, cmp_tfile);
    g_rowcmp = NULL;
    *rows = *sum = 0;
    const trow_t *prev = NULL;
    bool ok = true;
    for (size_t f = 0; f < n; f++)
        for (size_t i = 0; i < fs[f].n; i++) {
            if (prev && cmp(prev, &fs[f].rows[i]) > 0) {
                if (ok) fprintf(stderr, "out of order in file %zu row %zu: id %lld after %lld\n", f, i,
                                (long long)fs[f].rows[i].id, (long long)prev->id);
                ok = false;
            }
            prev = &fs[f].rows[i];
            (*rows)++;
            *sum += fs[f].rows[i].id;
        }
    return ok;
}

/* ids 0..n-1 shuffled over k commits: commit c holds ids c, c+k, c+2k ... */
static void append_interleaved(fl_table_ops_t *ops, int64_t n, int k)
{
    int64_t *ids = malloc((size_t)n * sizeof *ids);
    for (int c = 0; c < k; c++) {
        size_t m = 0;
        for (int64_t i = c; i < n; i += k) ids[m++] = (i * 37) % n; /* 37 coprime with n: a permutation */
        append_ids(ops, ids, m);
    }
    free(ids);
}

#define ORDER_ID_DESC "{\"order-id\":1,\"fields\":[{\"source-id\":1,\"transform\":\"identity\",\"direction\":\"desc\",\"null-order\":\"nulls-last\"}]}"
#define PROPS_SNAPPY "{\"write.parquet.compression-codec\":\"snappy\"}"
#define SCHEMA_STD                                                                                                 \
    "{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"}," \
    "{\"id\":2,\"name\":\"cat\",\"required\":false,\"type\":\"string\"},"                                           \
    "{\"id\":3,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz\"},"                                        \
    "{\"id\":4,\"name\":\"s\",\"required\":false,\"type\":{\"type\":\"struct\",\"fields\":["                         \
    "{\"id\":5,\"name\":\"k\",\"required\":false,\"type\":\"int\"}]}}]}"

/* Sort by one column (id desc): the rows come out in order across files whose
 * id bounds do not overlap; rows preserved exactly, deletes applied; the files
 * carry the sort order id. */
FL_TEST(rewrite_sort_one_column_desc)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_schema(t, &ops, SCHEMA_STD, SPEC_NONE, PROPS_SNAPPY, ORDER_ID_DESC);
    REQUIRE(t->md);
    append_interleaved(&ops, 1200, 6);
    int64_t gone[] = { 7, 500 };
    REQUIRE(commit_delete(t, &ops, 2, NULL, NULL, gone, 2) > 0);
    fl_rewrite_opts_t o = { .strategy = FL_REWRITE_SORT, .target_file_bytes = 4096, .min_file_bytes = 1 << 20 };
    fl_rewrite_result_t r;
    char err[512] = "";
    REQUIRE(fl_rewrite_run(&ops, &o, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.strategy, FL_REWRITE_SORT);
    CHECK_EQ(r.sort_order_id, 1);
    CHECK_STR(r.note, "");
    CHECK_EQ(r.groups_committed, 1);
    CHECK_EQ(r.files_in, 6);
    CHECK_EQ(r.records_out, 1198);
    CHECK_EQ(r.sorted_runs, 1);
    CHECK(r.files_out >= 3);
    tfile_t *fs;
    size_t n = read_files(t, &ops, &fs, 1);
    CHECK_EQ(n, r.files_out);
    int64_t rows, sum;
    CHECK(files_sorted(fs, n, cmp_id_desc, &rows, &sum));
    CHECK_EQ(rows, 1198);
    CHECK_EQ(sum, id_sum(0, 1200) - 7 - 500);
    /* bounds: in sorted order (id desc) each file's range lies wholly below the previous one's */
    for (size_t f = 0; f < n; f++) {
        CHECK(fs[f].has_order);
        CHECK_EQ(fs[f].order_id, 1);
        CHECK(fs[f].lo <= fs[f].hi);
        if (f) CHECK(fs[f].hi < fs[f - 1].lo);
    }
    free_files(fs, n);
    /* the bin-packed baseline of the same input overlaps: every file spans (almost) everything */
    mem_table_free(t);
    free(t);
}

/* Two columns, asc nulls-first then desc, in a partitioned table; and desc
 * nulls-last then asc. */
FL_TEST(rewrite_sort_two_columns_nulls)
{
    static const struct {
        const char *order;
        rowcmp_t cmp;
        int32_t bound;
    } cases[] = {
        { "{\"order-id\":1,\"fields\":[{\"source-id\":2,\"transform\":\"identity\",\"direction\":\"asc\",\"null-order\":\"nulls-first\"},"
          "{\"source-id\":1,\"transform\":\"identity\",\"direction\":\"desc\",\"null-order\":\"nulls-last\"}]}",
          cmp_cat_nf_id_desc, 2 },
        { "{\"order-id\":1,\"fields\":[{\"source-id\":5,\"transform\":\"identity\",\"direction\":\"desc\",\"null-order\":\"nulls-last\"},"
          "{\"source-id\":1,\"transform\":\"identity\",\"direction\":\"asc\",\"null-order\":\"nulls-first\"}]}",
          cmp_k_desc_nl_id, 5 },
    };
    for (size_t c = 0; c < 2; c++) {
        mem_table_t *t = calloc(1, sizeof *t);
        fl_table_ops_t ops;
        mem_table_init_schema(t, &ops, SCHEMA_STD, SPEC_NONE, PROPS_SNAPPY, cases[c].order);
        REQUIRE(t->md);
        append_interleaved(&ops, 1000, 5);
        fl_rewrite_opts_t o = { .strategy = FL_REWRITE_AUTO, .target_file_bytes = 4096, .min_file_bytes = 1 << 20 };
        fl_rewrite_result_t r;
        char err[512] = "";
        REQUIRE(fl_rewrite_run(&ops, &o, &r, err, sizeof err) == FL_OK);
        CHECK_EQ(r.strategy, FL_REWRITE_SORT); /* auto with a sort order = sort */
        CHECK(r.files_out >= 2);
        tfile_t *fs;
        size_t n = read_files(t, &ops, &fs, cases[c].bound);
        int64_t rows, sum;
        CHECK(files_sorted(fs, n, cases[c].cmp, &rows, &sum));
        CHECK_EQ(rows, 1000);
        CHECK_EQ(sum, id_sum(0, 1000));
        /* nulls where the order puts them: the first file starts with a null cat
         * (nulls-first), the last file ends with a null s.k (nulls-last) */
        if (c == 0) CHECK_EQ(fs[0].rows[0].a, -1);
        else CHECK_EQ(fs[n - 1].rows[fs[n - 1].n - 1].b, -1);
        free_files(fs, n);
        mem_table_free(t);
        free(t);
    }
}

/* Per partition: each partition's files are a sorted run of their own. */
FL_TEST(rewrite_sort_per_partition)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_schema(t, &ops, SCHEMA_STD, SPEC_CAT, PROPS_SNAPPY, ORDER_ID_DESC);
    REQUIRE(t->md);
    append_interleaved(&ops, 900, 4);
    fl_rewrite_opts_t o = { .strategy = FL_REWRITE_SORT, .target_file_bytes = 4096, .min_file_bytes = 1 << 20 };
    fl_rewrite_result_t r;
    char err[512] = "";
    REQUIRE(fl_rewrite_run(&ops, &o, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.groups_committed, 4); /* c0 c1 c2 null */
    CHECK_EQ(r.records_out, 900);
    tfile_t *fs;
    size_t n = read_files(t, &ops, &fs, 1);
    int64_t total = 0;
    for (int64_t cat = -1; cat < 3; cat++) {
        tfile_t *part = calloc(n + 1, sizeof *part);
        size_t m = 0;
        for (size_t f = 0; f < n; f++)
            if (fs[f].n && fs[f].rows[0].a == cat) part[m++] = fs[f];
        int64_t rows, sum;
        CHECK(files_sorted(part, m, cmp_id_desc, &rows, &sum));
        for (size_t f = 1; f < m; f++) CHECK(part[f].hi < part[f - 1].lo);
        total += rows;
        free(part);
    }
    CHECK_EQ(total, 900);
    free_files(fs, n);
    mem_table_free(t);
    free(t);
}

/* The memory cap splits a group into sorted runs: rows still all there, each run sorted. */
FL_TEST(rewrite_sort_memory_cap_runs)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_schema(t, &ops, SCHEMA_STD, SPEC_NONE, PROPS_SNAPPY, ORDER_ID_DESC);
    REQUIRE(t->md);
    append_interleaved(&ops, 1000, 5);
    fl_rewrite_opts_t o = { .strategy = FL_REWRITE_SORT, .min_file_bytes = 1 << 20, .sort_mem_bytes = 8192 };
    fl_rewrite_result_t r;
    char err[512] = "";
    REQUIRE(fl_rewrite_run(&ops, &o, &r, err, sizeof err) == FL_OK);
    CHECK(r.sorted_runs > 1);
    CHECK_EQ(r.records_out, 1000);
    int64_t rows, sum;
    size_t files;
    scan_all(t, &ops, &rows, &sum, &files);
    CHECK_EQ(rows, 1000);
    CHECK_EQ(sum, id_sum(0, 1000));
    mem_table_free(t);
    free(t);
}

/* No sort order: sort and z-order bin-pack and say so; auto bin-packs quietly. */
FL_TEST(rewrite_sort_without_order_falls_back)
{
    static const fl_rewrite_strategy_t asked[] = { FL_REWRITE_SORT, FL_REWRITE_ZORDER, FL_REWRITE_AUTO };
    for (size_t c = 0; c < 3; c++) {
        mem_table_t *t = calloc(1, sizeof *t);
        fl_table_ops_t ops;
        mem_table_init_spec(t, &ops, SPEC_NONE);
        append_interleaved(&ops, 300, 3);
        fl_rewrite_opts_t o = { .strategy = asked[c] };
        fl_rewrite_result_t r;
        char err[512] = "";
        REQUIRE(fl_rewrite_run(&ops, &o, &r, err, sizeof err) == FL_OK);
        CHECK_EQ(r.strategy, FL_REWRITE_BINPACK);
        CHECK_EQ(r.sorted_runs, 0);
        CHECK_EQ(r.files_in, 3);
        CHECK_EQ(r.files_out, 1);
        if (asked[c] == FL_REWRITE_AUTO) CHECK_STR(r.note, "");
        else CHECK(strstr(r.note, "needs a sort order on the table: bin-packed") != NULL);
        tfile_t *fs;
        size_t n = read_files(t, &ops, &fs, 1);
        REQUIRE(n == 1);
        CHECK(!fs[0].has_order);
        /* bin-pack keeps the input order: not sorted by id */
        int64_t rows, sum;
        CHECK(!files_sorted(fs, n, cmp_id_desc, &rows, &sum) || rows < 2);
        CHECK_EQ(sum, id_sum(0, 300));
        free_files(fs, n);
        mem_table_free(t);
        free(t);
    }
}

/* Z-order over (x, y): a 32x32 grid written in scrambled order; after the
 * rewrite every aligned 8x8 block of points lies in one file (files hold whole
 * z-ranges of 64 points), while the input spread each block over every file. */
FL_TEST(rewrite_zorder_keeps_neighbours_together)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_schema(t, &ops,
                          "{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,\"name\":\"id\",\"required\":true,"
                          "\"type\":\"long\"},{\"id\":2,\"name\":\"x\",\"required\":false,\"type\":\"int\"},"
                          "{\"id\":3,\"name\":\"y\",\"required\":false,\"type\":\"int\"}]}",
                          SPEC_NONE, PROPS_SNAPPY,
                          "{\"order-id\":1,\"fields\":[{\"source-id\":2,\"transform\":\"identity\",\"direction\":\"asc\","
                          "\"null-order\":\"nulls-first\"},{\"source-id\":3,\"transform\":\"identity\",\"direction\":\"asc\","
                          "\"null-order\":\"nulls-first\"}]}");
    REQUIRE(t->md);
    char err[512] = "";
    for (int c = 0; c < 4; c++) {
        fl_appender_t *a = NULL;
        REQUIRE(fl_append_open(&a, &ops, NULL, err, sizeof err) == FL_OK);
        fl_vec_t b;
        fl_vec_init(&b, fl_append_schema(a));
        for (int i = c; i < 1024; i += 4) {
            int p = (i * 37) % 1024;
            fl_vec_append_struct(&b);
            fl_vec_append_i64(&b.children[0], p);
            fl_vec_append_i32(&b.children[1], p % 32);
            fl_vec_append_i32(&b.children[2], p / 32);
        }
        int64_t sid;
        REQUIRE(fl_append_write(a, &b, err, sizeof err) == FL_OK);
        REQUIRE(fl_append_commit(a, NULL, 0, &sid, err, sizeof err) == FL_OK);
        fl_vec_free(&b);
        fl_append_free(a);
    }
    fl_rewrite_opts_t o = { .strategy = FL_REWRITE_ZORDER, .target_file_bytes = 2048, .min_file_bytes = 1 << 20 };
    fl_rewrite_result_t r;
    REQUIRE(fl_rewrite_run(&ops, &o, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.strategy, FL_REWRITE_ZORDER);
    CHECK_EQ(r.records_out, 1024);
    CHECK(r.files_out >= 4);
    tfile_t *fs;
    size_t n = read_files(t, &ops, &fs, 2);
    int64_t rows = 0, sum = 0;
    int *file_of = calloc(1024, sizeof *file_of);
    size_t stripes = 0;
    for (size_t f = 0; f < n; f++) {
        CHECK(!fs[f].has_order); /* z-order is not the table's sort order */
        int64_t x0 = 99, x1 = -1, y0 = 99, y1 = -1;
        for (size_t i = 0; i < fs[f].n; i++) {
            const trow_t *p = &fs[f].rows[i];
            file_of[p->b * 32 + p->a] = (int)f;
            rows++;
            sum += p->id;
            if (p->a < x0) x0 = p->a;
            if (p->a > x1) x1 = p->a;
            if (p->b < y0) y0 = p->b;
            if (p->b > y1) y1 = p->b;
        }
        /* a stripe spans a whole axis (sorting by x alone makes every file one) */
        stripes += x1 - x0 == 31 || y1 - y0 == 31;
    }
    CHECK(stripes * 2 < n);
    CHECK_EQ(rows, 1024);
    CHECK_EQ(sum, id_sum(0, 1024));
    for (int by = 0; by < 32; by += 8)
        for (int bx = 0; bx < 32; bx += 8) {
            int f0 = file_of[by * 32 + bx];
            for (int y = by; y < by + 8; y++)
                for (int x = bx; x < bx + 8; x++) CHECK_EQ(file_of[y * 32 + x], f0);
        }
    free(file_of);
    free_files(fs, n);
    mem_table_free(t);
    free(t);
}

/* ---- v3: deletion vectors and row lineage ---- */

#define V3_PROPS "{\"format-version\":\"3\"}"

/* A deletion-vector-v1 blob of positions pos[0..n) (< 65536, ascending): one
 * array container, as the portable Roaring format lays it out. */
static void dv_blob(fl_buf_t *out, const int64_t *pos, size_t n)
{
    fl_buf_t body;
    fl_buf_init(&body, 0);
    static const unsigned char magic[4] = { 0xD1, 0xD3, 0x39, 0x64 };
    fl_buf_add(&body, magic, 4);
    uint64_t nb = 1;
    uint32_t key = 0, cookie = 12346, nc = 1, off = 16;
    uint16_t ck = 0, card = (uint16_t)(n - 1);
    fl_buf_add(&body, &nb, 8);
    fl_buf_add(&body, &key, 4);
    fl_buf_add(&body, &cookie, 4);
    fl_buf_add(&body, &nc, 4);
    fl_buf_add(&body, &ck, 2);
    fl_buf_add(&body, &card, 2);
    fl_buf_add(&body, &off, 4);
    for (size_t i = 0; i < n; i++) {
        uint16_t v = (uint16_t)pos[i];
        fl_buf_add(&body, &v, 2);
    }
    uint32_t len = (uint32_t)body.len, crc = fl_crc32(0, body.ptr, body.len);
    unsigned char be[4] = { (unsigned char)(len >> 24), (unsigned char)(len >> 16), (unsigned char)(len >> 8), (unsigned char)len };
    fl_buf_add(out, be, 4);
    fl_buf_add(out, body.ptr, body.len);
    unsigned char bc[4] = { (unsigned char)(crc >> 24), (unsigned char)(crc >> 16), (unsigned char)(crc >> 8), (unsigned char)crc };
    fl_buf_add(out, bc, 4);
    fl_buf_free(&body);
}

typedef struct dv_spec {
    const char *data_path;      /* referenced data file */
    const char *cat;            /* its partition */
    int64_t pos[8];
    size_t n;
    bool no_ref;                /* the manifest entry lacks referenced_data_file (malformed) */
} dv_spec_t;

/* One Puffin file holding a DV per spec, committed as a row delta on a v3 table
 * (one delete manifest entry per DV). Returns the sequence number or -1. */
static int64_t commit_dvs(mem_table_t *t, fl_table_ops_t *ops, const dv_spec_t *dvs, size_t n)
{
    static int counter;
    char path[128];
    snprintf(path, sizeof path, "mem://wh/t/data/dv-%d.puffin", counter++);
    fl_buf_t pf;
    fl_buf_init(&pf, 0);
    fl_buf_add(&pf, "PFA1", 4);
    int64_t *offs = calloc(n, sizeof *offs), *lens = calloc(n, sizeof *lens);
    json_t *blobs = json_array();
    for (size_t i = 0; i < n; i++) {
        offs[i] = (int64_t)pf.len;
        dv_blob(&pf, dvs[i].pos, dvs[i].n);
        lens[i] = (int64_t)pf.len - offs[i];
        char card[16];
        snprintf(card, sizeof card, "%zu", dvs[i].n);
        json_array_append_new(blobs, json_pack("{s:s,s:[i],s:i,s:i,s:I,s:I,s:{s:s,s:s}}", "type", "deletion-vector-v1",
                                               "fields", 2147483645, "snapshot-id", -1, "sequence-number", -1, "offset",
                                               (json_int_t)offs[i], "length", (json_int_t)lens[i], "properties",
                                               "referenced-data-file", dvs[i].data_path, "cardinality", card));
    }
    json_t *footer = json_pack("{s:o}", "blobs", blobs);
    char *fj = json_dumps(footer, JSON_COMPACT);
    json_decref(footer);
    fl_buf_add(&pf, "PFA1", 4);
    fl_buf_add(&pf, fj, strlen(fj));
    uint32_t fl = (uint32_t)strlen(fj), flags = 0;
    free(fj);
    fl_buf_add(&pf, &fl, 4);
    fl_buf_add(&pf, &flags, 4);
    fl_buf_add(&pf, "PFA1", 4);
    ops->put(ops->ctx, path, pf.ptr, pf.len);

    fl_field_t schema;
    fl_part_spec_t spec;
    char err[256];
    fl_schema_from_metadata(t->md, -1, &schema, NULL, err, sizeof err);
    fl_part_spec_from_metadata(t->md, -1, &schema, &spec, err, sizeof err);
    int64_t parent = fl_iceberg_current_snapshot_id(t->md);
    int64_t seq = json_integer_value(json_object_get(t->md, "last-sequence-number")) + 1;
    int64_t next = json_integer_value(json_object_get(t->md, "next-row-id"));
    int64_t sid = 800000 + counter;
    fl_manifest_writer_t mw;
    memset(&mw, 0, sizeof mw);
    fl_manifest_writer_open(&mw, 3, &schema, 0, &spec, 1, sid, FL_AVRO_CODEC_DEFLATE);
    for (size_t i = 0; i < n; i++) {
        fl_manifest_entry_t me;
        memset(&me, 0, sizeof me);
        me.status = 1;
        me.has_snapshot_id = true;
        me.snapshot_id = sid;
        me.file.content = 1;
        me.file.file_path = path;
        me.file.file_format = "PUFFIN";
        me.file.record_count = (int64_t)dvs[i].n;
        me.file.file_size_in_bytes = (int64_t)pf.len;
        me.file.referenced_data_file = dvs[i].no_ref ? NULL : (char *)dvs[i].data_path;
        me.file.has_content_offset = true;
        me.file.content_offset = offs[i];
        me.file.content_size_in_bytes = lens[i];
        fl_ice_value_t pv = { .kind = FL_ICE_STRING };
        pv.u.bytes.ptr = (const unsigned char *)dvs[i].cat;
        pv.u.bytes.len = strlen(dvs[i].cat);
        me.file.partition = &pv;
        me.file.n_partition = 1;
        fl_manifest_writer_add(&mw, &me);
    }
    char mpath[128], lpath[128];
    snprintf(mpath, sizeof mpath, "mem://wh/t/metadata/dv-m%d.avro", counter);
    snprintf(lpath, sizeof lpath, "mem://wh/t/metadata/snap-dv-%d.avro", counter);
    fl_buf_t mb, lb;
    fl_buf_init(&mb, 0);
    fl_buf_init(&lb, 0);
    fl_manifest_file_t mf;
    fl_manifest_writer_finish(&mw, mpath, seq, &mb, &mf);
    ops->put(ops->ctx, mpath, mb.ptr, mb.len);
    fl_manifest_file_t *pm = NULL;
    size_t np = 0;
    json_t *ps = main_snap(t);
    int li = ps ? find_obj(t, json_string_value(json_object_get(ps, "manifest-list"))) : -1;
    if (li >= 0) fl_manifest_list_read(fl_slice(t->objs[li].data.ptr, t->objs[li].data.len), &pm, &np, err, sizeof err);
    fl_manifest_file_t *all = fl_calloc(np + 1, sizeof *all);
    all[0] = mf;
    if (np) memcpy(all + 1, pm, np * sizeof *pm);
    int64_t next_after = next;
    fl_manifest_list_write_v3(sid, parent, seq, next, all, np + 1, FL_AVRO_CODEC_DEFLATE, &lb, &next_after);
    ops->put(ops->ctx, lpath, lb.ptr, lb.len);
    json_t *snap = json_pack("{s:I,s:I,s:I,s:s,s:{s:s},s:i,s:I,s:I}", "snapshot-id", (json_int_t)sid, "sequence-number",
                             (json_int_t)seq, "timestamp-ms", (json_int_t)1700000000000, "manifest-list", lpath,
                             "summary", "operation", "delete", "schema-id", 0, "first-row-id", (json_int_t)next,
                             "added-rows", (json_int_t)(next_after - next));
    if (parent >= 0) json_object_set_new(snap, "parent-snapshot-id", json_integer(parent));
    json_t *upd = json_pack("[{s:s,s:o},{s:s,s:s,s:s,s:I}]", "action", "add-snapshot", "snapshot", snap, "action",
                            "set-snapshot-ref", "ref-name", "main", "type", "branch", "snapshot-id", (json_int_t)sid);
    json_t *newmd = NULL;
    int status = 0;
    json_t *reqs = json_array();
    ops->commit(ops->ctx, reqs, upd, &newmd, &status, err, sizeof err);
    if (status != 200) fprintf(stderr, "commit_dvs: %d %s\n", status, err);
    json_decref(reqs);
    json_decref(newmd);
    json_decref(upd);
    free(all);
    fl_manifest_files_free(pm, np);
    fl_manifest_file_free(&mf);
    fl_manifest_writer_free(&mw);
    fl_buf_free(&mb);
    fl_buf_free(&lb);
    fl_buf_free(&pf);
    free(offs);
    free(lens);
    fl_part_spec_free(&spec);
    fl_field_free(&schema);
    return status == 200 ? seq : -1;
}

/* Every live row of the current snapshot with its effective lineage, deletion
 * vectors applied: lin[id] = (row id, last updated seq), -1 = gone. Also
 * counts the live delete entries. ids < cap. */
typedef struct lin { int64_t rid, seq; } lin_t;

static void read_lineage(mem_table_t *t, lin_t *lin, size_t cap, size_t *n_dels)
{
    for (size_t i = 0; i < cap; i++) lin[i] = (lin_t){ -1, -1 };
    *n_dels = 0;
    json_t *s = main_snap(t);
    int li = s ? find_obj(t, json_string_value(json_object_get(s, "manifest-list"))) : -1;
    if (li < 0) return;
    fl_manifest_file_t *mfs;
    size_t nm;
    char err[256];
    if (fl_manifest_list_read(fl_slice(t->objs[li].data.ptr, t->objs[li].data.len), &mfs, &nm, err, sizeof err)) return;
    /* the DVs first: (data path, positions) */
    char *dv_path[64];
    int64_t dv_pos[64][8];
    size_t dv_n[64], ndv = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t m = 0; m < nm; m++) {
            int k = find_obj(t, mfs[m].manifest_path);
            fl_manifest_entry_t *en;
            size_t ne;
            if (k < 0 || fl_manifest_read(fl_slice(t->objs[k].data.ptr, t->objs[k].data.len), &mfs[m], &en, &ne, err,
                                          sizeof err))
                continue;
            for (size_t x = 0; x < ne; x++) {
                const fl_data_file_t *f = &en[x].file;
                if (en[x].status == 2) continue;
                if (pass == 0 && f->content == 1 && ndv < 64) {
                    (*n_dels)++;
                    int o = find_obj(t, f->file_path);
                    fl_roaring64_t bm;
                    fl_puffin_blob_t *pb = NULL;
                    size_t npb = 0;
                    fl_slice_t pfile = o < 0 ? fl_slice("", 0) : fl_slice(t->objs[o].data.ptr, t->objs[o].data.len);
                    if (o < 0 || fl_puffin_footer(pfile, &pb, &npb, err, sizeof err)) continue;
                    fl_err_t de = fl_puffin_read_dv(pfile, pb, npb, f->content_offset, f->content_size_in_bytes,
                                                    f->referenced_data_file, -1, &bm, err, sizeof err);
                    fl_puffin_blobs_free(pb, npb);
                    if (de) continue;
                    int64_t *v = NULL;
                    size_t nv = 0;
                    fl_roaring64_values(&bm, 8, &v, &nv);
                    dv_path[ndv] = fl_strdup(f->referenced_data_file);
                    memcpy(dv_pos[ndv], v, nv * sizeof *v);
                    dv_n[ndv++] = nv;
                    free(v);
                    fl_roaring64_free(&bm);
                }
                if (pass == 1 && f->content == 0) {
                    int o = find_obj(t, f->file_path);
                    fl_pq_reader_t *r;
                    if (o < 0 || fl_pq_reader_open(&r, fl_pq_source_mem(t->objs[o].data.ptr, t->objs[o].data.len)))
                        continue;
                    fl_field_t ps;
                    memset(&ps, 0, sizeof ps);
                    fl_field_set(&ps, 0, "table", true, FL_TYPE_STRUCT);
                    fl_field_set(fl_field_add_child(&ps), 1, "id", true, FL_TYPE_LONG);
                    fl_field_set(fl_field_add_child(&ps), FL_APPEND_ROW_ID_FIELD, "_row_id", false, FL_TYPE_LONG);
                    fl_field_set(fl_field_add_child(&ps), FL_APPEND_LAST_UPDATED_FIELD, "_lus", false, FL_TYPE_LONG);
                    fl_pq_reader_project(r, &ps);
                    fl_vec_t v;
                    memset(&v, 0, sizeof v);
                    int64_t pos = 0;
                    for (bool done = false; !fl_pq_reader_next(r, &v, &done) && !done;)
                        for (size_t i = 0; i < v.len; i++, pos++) {
                            bool del = false;
                            for (size_t d = 0; d < ndv; d++)
                                if (!strcmp(dv_path[d], f->file_path))
                                    for (size_t q = 0; q < dv_n[d]; q++) del |= dv_pos[d][q] == pos;
                            int64_t id = fl_vec_i64(&v.children[0], i);
                            if (del || id < 0 || (size_t)id >= cap) continue;
                            lin[id].rid = !fl_vec_is_null(&v.children[1], i) ? fl_vec_i64(&v.children[1], i)
                                          : f->has_first_row_id ? f->first_row_id + pos : -2;
                            lin[id].seq = !fl_vec_is_null(&v.children[2], i) ? fl_vec_i64(&v.children[2], i)
                                                                             : en[x].sequence_number;
                        }
                    fl_vec_free(&v);
                    fl_field_free(&ps);
                    fl_pq_reader_free(r);
                }
            }
            fl_manifest_entries_free(en, ne);
        }
    for (size_t d = 0; d < ndv; d++) free(dv_path[d]);
    fl_manifest_files_free(mfs, nm);
}

/* The data files of partition cat in the current snapshot, by path. */
static size_t paths_in(mem_table_t *t, fl_table_ops_t *ops, const char *cat, char **out, size_t cap)
{
    fl_scan_plan_t plan;
    char err[256];
    if (fl_scan_plan(ops, t->md, -1, &plan, err, sizeof err)) return 0;
    size_t n = 0;
    for (size_t i = 0; i < plan.n_files && n < cap; i++) {
        const fl_data_file_t *f = &plan.files[i];
        if (f->n_partition < 1 || f->partition[0].kind != FL_ICE_STRING || f->partition[0].u.bytes.len != strlen(cat) ||
            memcmp(f->partition[0].u.bytes.ptr, cat, strlen(cat)))
            continue;
        out[n++] = fl_strdup(f->file_path);
    }
    fl_scan_plan_free(&plan);
    return n;
}

typedef struct dv_race {
    mem_table_t *t;
    fl_table_ops_t *ops;
    dv_spec_t dv;
    int64_t seq;
} dv_race_t;

static void dv_race_hook(void *ctx)
{
    dv_race_t *r = ctx;
    r->seq = commit_dvs(r->t, r->ops, &r->dv, 1);
}

FL_TEST(rewrite_v3_applies_deletion_vectors_keeps_row_lineage)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_props(t, &ops, SPEC_CAT, V3_PROPS);
    for (int k = 0; k < 3; k++) REQUIRE(append_rows(&ops, k * 30, 30, 3) > 0);
    CHECK_EQ(json_integer_value(json_object_get(t->md, "next-row-id")), 90);
    char *c0[4], *c1[4];
    REQUIRE(paths_in(t, &ops, "c0", c0, 4) == 3);
    REQUIRE(paths_in(t, &ops, "c1", c1, 4) == 3);
    /* one Puffin file: a DV on a c0 file and one on a c1 file */
    dv_spec_t dvs[2] = { { c0[0], "c0", { 0, 2 }, 2, false }, { c1[1], "c1", { 1, 3, 5 }, 3, false } };
    REQUIRE(commit_dvs(t, &ops, dvs, 2) > 0);
    lin_t before[100], after[100];
    size_t ndel;
    read_lineage(t, before, 100, &ndel);
    CHECK_EQ(ndel, 2);
    size_t live = 0;
    for (int i = 0; i < 90; i++) live += before[i].rid >= 0;
    CHECK_EQ(live, 85);

    /* a DV committed against another c0 file while the job runs: c0 fails, c1 commits, and
     * of the Puffin file's two entries only c1's is dropped */
    dv_race_t race = { t, &ops, { c0[1], "c0", { 4 }, 1, false }, 0 };
    fl_rewrite_opts_t o = { .before_commit = dv_race_hook, .before_commit_ctx = &race };
    fl_rewrite_result_t r;
    char err[512] = "";
    REQUIRE(fl_rewrite_run(&ops, &o, &r, err, sizeof err) == FL_OK);
    CHECK(race.seq > 0);
    CHECK_EQ(r.groups_failed, 1);
    CHECK_EQ(r.groups_committed, 3); /* c1, c2 and the null partition */
    CHECK(strstr(r.last_failure, "added concurrently") != NULL);
    CHECK_EQ(r.delete_files_removed, 1);
    CHECK_STR(summary(t, "removed-dvs"), "1");
    CHECK_STR(summary(t, "removed-position-deletes"), "3");
    CHECK_STR(summary(t, "removed-delete-files"), "1");
    /* v3 snapshot fields: the replace took row ids for what it added */
    json_t *s = main_snap(t);
    int64_t first = json_integer_value(json_object_get(s, "first-row-id"));
    int64_t added = json_integer_value(json_object_get(s, "added-rows"));
    CHECK(json_object_get(s, "first-row-id") != NULL);
    CHECK(added >= 17);  /* at least the rewritten files' rows (plus rewritten manifests' existing rows) */
    CHECK_EQ(json_integer_value(json_object_get(t->md, "next-row-id")), first + added);
    read_lineage(t, after, 100, &ndel);
    CHECK_EQ(ndel, 2);
    int64_t racing = -1; /* the id the racing DV deleted (still effective) */
    for (int i = 0; i < 90; i++)
        if (before[i].rid >= 0 && after[i].rid < 0) racing = i;
    CHECK(racing >= 0);
    for (int i = 0; i < 90; i++) {
        if (i == racing) continue;
        if (before[i].rid != after[i].rid || before[i].seq != after[i].seq) {
            FL_FAIL("id %d: lineage (%lld, %lld) became (%lld, %lld)", i, (long long)before[i].rid,
                    (long long)before[i].seq, (long long)after[i].rid, (long long)after[i].seq);
            break;
        }
    }
    /* a second run takes c0 with both its DVs; every delete is gone, lineage kept */
    REQUIRE(fl_rewrite_run(&ops, NULL, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.groups_committed, 1);
    CHECK_EQ(r.delete_files_removed, 2);
    CHECK_EQ(r.records_out, r.records_in - 3);
    lin_t last[100];
    read_lineage(t, last, 100, &ndel);
    CHECK_EQ(ndel, 0);
    CHECK_STR(summary(t, "removed-dvs"), "2");
    live = 0;
    for (int i = 0; i < 90; i++) {
        live += last[i].rid >= 0;
        if (i != racing && (last[i].rid != before[i].rid || last[i].seq != before[i].seq)) {
            FL_FAIL("id %d: lineage changed on the second run", i);
            break;
        }
    }
    CHECK_EQ(live, 84);
    for (int i = 0; i < 3; i++) { free(c0[i]); free(c1[i]); }
    mem_table_free(t);
    free(t);
}

/* v3 with the sort strategy: the rows move between files in a new order and
 * still keep their lineage. */
FL_TEST(rewrite_v3_sort_keeps_row_lineage)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_schema(t, &ops, SCHEMA_STD, SPEC_CAT, V3_PROPS, ORDER_ID_DESC);
    REQUIRE(t->md);
    for (int k = 0; k < 3; k++) REQUIRE(append_rows(&ops, k * 30, 30, 3) > 0);
    char *c2[4];
    REQUIRE(paths_in(t, &ops, "c2", c2, 4) == 3);
    dv_spec_t dv = { c2[2], "c2", { 1 }, 1, false };
    REQUIRE(commit_dvs(t, &ops, &dv, 1) > 0);
    lin_t before[100], after[100];
    size_t ndel;
    read_lineage(t, before, 100, &ndel);
    fl_rewrite_opts_t o = { .strategy = FL_REWRITE_SORT };
    fl_rewrite_result_t r;
    char err[512] = "";
    REQUIRE(fl_rewrite_run(&ops, &o, &r, err, sizeof err) == FL_OK);
    CHECK_EQ(r.strategy, FL_REWRITE_SORT);
    CHECK_EQ(r.groups_failed, 0);
    CHECK_EQ(r.delete_files_removed, 1);
    read_lineage(t, after, 100, &ndel);
    CHECK_EQ(ndel, 0);
    size_t live = 0;
    for (int i = 0; i < 90; i++) {
        live += after[i].rid >= 0;
        if (before[i].rid != after[i].rid || before[i].seq != after[i].seq) {
            FL_FAIL("id %d: lineage (%lld, %lld) became (%lld, %lld)", i, (long long)before[i].rid,
                    (long long)before[i].seq, (long long)after[i].rid, (long long)after[i].seq);
            break;
        }
    }
    CHECK_EQ(live, 89);
    for (int i = 0; i < 3; i++) free(c2[i]);
    mem_table_free(t);
    free(t);
}

/* A DV entry without referenced_data_file would scope to its whole partition:
 * compaction refuses the table rather than drop deletes it did not apply. */
FL_TEST(rewrite_v3_dv_without_referenced_file_refused)
{
    mem_table_t *t = calloc(1, sizeof *t);
    fl_table_ops_t ops;
    mem_table_init_props(t, &ops, SPEC_CAT, V3_PROPS);
    for (int k = 0; k < 2; k++) REQUIRE(append_rows(&ops, k * 30, 30, 3) > 0);
    char *c0[4];
    REQUIRE(paths_in(t, &ops, "c0", c0, 4) == 2);
    dv_spec_t dv = { c0[0], "c0", { 0 }, 1, true };
    REQUIRE(commit_dvs(t, &ops, &dv, 1) > 0);
    int64_t before = fl_iceberg_current_snapshot_id(t->md);
    fl_rewrite_result_t r;
    char err[512] = "";
    CHECK(fl_rewrite_run(&ops, NULL, &r, err, sizeof err) == FL_ERR_INVALID);
    CHECK(strstr(err, "without referenced_data_file") != NULL);
    CHECK_EQ(fl_iceberg_current_snapshot_id(t->md), before);
    for (int i = 0; i < 2; i++) free(c0[i]);
    mem_table_free(t);
    free(t);
}
