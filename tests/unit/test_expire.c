/* Snapshot expiry (iceberg/expire.h) over in-memory table ops: the retention rules on crafted
 * metadata (both criteria, refs and tags with their own retention, history.expire.*,
 * gc.enabled=false), and whole runs over tables written with the append API: files reachable
 * from a retained snapshot survive, files only expired snapshots reached are deleted, and only
 * after the commit; a racing writer makes the commit 409 and the job re-plans; an unknown
 * commit outcome deletes nothing unless the reload shows the commit; old metadata.json files
 * beyond write.metadata.previous-versions-max go with delete-after-commit. */
#include "test.h"
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>
#include "base/mem.h"
#include "iceberg/append.h"
#include "iceberg/expire.h"
#include "iceberg/manifest.h"
#include "iceberg/metadata.h"
#include "iceberg/scan.h"

#define H (3600LL * 1000)
#define NOW (1700000000000LL)

/* ---- planning on crafted metadata ---------------------------------------------------- */

/* Metadata with snapshots given as "id:parent:hours-before-NOW" and refs JSON. */
static json_t *crafted(const char *const *snaps, size_t n, const char *refs, const char *props)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        long long id, parent, hours;
        sscanf(snaps[i], "%lld:%lld:%lld", &id, &parent, &hours);
        json_t *s = json_pack("{s:I,s:I,s:s}", "snapshot-id", (json_int_t)id, "timestamp-ms",
                              (json_int_t)(NOW - hours * H), "manifest-list", "mem://none");
        if (parent >= 0) json_object_set_new(s, "parent-snapshot-id", json_integer(parent));
        json_array_append_new(a, s);
    }
    json_t *md = json_pack("{s:i,s:s,s:s,s:o,s:o,s:o}", "format-version", 2, "table-uuid",
                           "9c0a7a76-5b1e-4c3e-9a43-4b7f0f7e0c11", "location", "mem://wh/t", "snapshots", a,
                           "refs", json_loads(refs, 0, NULL), "properties", json_loads(props ? props : "{}", 0, NULL));
    return md;
}

static bool expires(const fl_expire_plan_t *p, int64_t id)
{
    for (size_t i = 0; i < p->n_expire; i++)
        if (p->expire[i] == id) return true;
    return false;
}

FL_TEST(expire_plan_both_criteria)
{
    /* main: 1 <- 2 <- 3 <- 4 <- 5, 100, 80, 50, 30, 10 hours old */
    const char *s[] = { "1:-1:100", "2:1:80", "3:2:50", "4:3:30", "5:4:10" };
    json_t *md = crafted(s, 5, "{\"main\":{\"snapshot-id\":5,\"type\":\"branch\"}}", NULL);
    fl_expire_plan_t p;
    char err[256];
    /* age 40 h, keep 1: 5 and 4 are young, 3..1 are old and beyond the first one */
    fl_expire_opts_t o = { .as_of_ms = NOW, .min_snapshots_to_keep = 1, .max_snapshot_age_ms = 40 * H };
    REQUIRE(fl_expire_plan(md, &o, &p, err, sizeof err) == FL_OK);
    CHECK_EQ(p.n_expire, 3);
    CHECK(expires(&p, 1) && expires(&p, 2) && expires(&p, 3));
    fl_expire_plan_free(&p);
    /* keep 4: old snapshots among the newest four stay (both criteria must be violated) */
    o.min_snapshots_to_keep = 4;
    REQUIRE(fl_expire_plan(md, &o, &p, err, sizeof err) == FL_OK);
    CHECK_EQ(p.n_expire, 1);
    CHECK(expires(&p, 1));
    fl_expire_plan_free(&p);
    /* defaults (1 snapshot, 120 h): nothing is that old */
    fl_expire_opts_t d = { .as_of_ms = NOW };
    REQUIRE(fl_expire_plan(md, &d, &p, err, sizeof err) == FL_OK);
    CHECK_EQ(p.n_expire, 0);
    fl_expire_plan_free(&p);
    /* as of 200 h later everything but the head goes */
    d.as_of_ms = NOW + 200 * H;
    REQUIRE(fl_expire_plan(md, &d, &p, err, sizeof err) == FL_OK);
    CHECK_EQ(p.n_expire, 4);
    CHECK(!expires(&p, 5));
    fl_expire_plan_free(&p);
    /* a table property that retains more wins over the job's setting; one that retains less does not */
    json_object_set_new(json_object_get(md, "properties"), "history.expire.min-snapshots-to-keep", json_string("3"));
    REQUIRE(fl_expire_plan(md, &d, &p, err, sizeof err) == FL_OK);
    CHECK_EQ(p.n_expire, 2);
    fl_expire_plan_free(&p);
    json_object_set_new(json_object_get(md, "properties"), "history.expire.max-snapshot-age-ms", json_string("1"));
    o.min_snapshots_to_keep = 1;
    json_object_del(json_object_get(md, "properties"), "history.expire.min-snapshots-to-keep");
    REQUIRE(fl_expire_plan(md, &o, &p, err, sizeof err) == FL_OK);
    CHECK_EQ(p.n_expire, 3);
    fl_expire_plan_free(&p);
    json_object_set_new(json_object_get(md, "properties"), "history.expire.max-snapshot-age-ms", json_string("x"));
    CHECK(fl_expire_plan(md, &o, &p, err, sizeof err) == FL_ERR_INVALID);
    json_decref(md);
}

FL_TEST(expire_plan_refs_tags_and_unreferenced)
{
    /* main: 1 <- 2 <- 3 <- 4; branch b: 2 <- 6 <- 7 (own min-snapshots-to-keep 3);
     * tag keep on 1; tag gone on 3 with max-ref-age-ms 10 h; 8 on no ref (old), 9 on no ref (young) */
    const char *s[] = { "1:-1:300", "2:1:290", "3:2:280", "4:3:270", "6:2:285", "7:6:284", "8:-1:260", "9:-1:1" };
    json_t *md = crafted(s, 8,
        "{\"main\":{\"snapshot-id\":4,\"type\":\"branch\"},"
        "\"b\":{\"snapshot-id\":7,\"type\":\"branch\",\"min-snapshots-to-keep\":3},"
        "\"keep\":{\"snapshot-id\":1,\"type\":\"tag\"},"
        "\"gone\":{\"snapshot-id\":3,\"type\":\"tag\",\"max-ref-age-ms\":36000000}}", NULL);
    fl_expire_plan_t p;
    char err[256];
    fl_expire_opts_t o = { .as_of_ms = NOW };
    REQUIRE(fl_expire_plan(md, &o, &p, err, sizeof err) == FL_OK);
    CHECK(!expires(&p, 4));                           /* main's head */
    CHECK(expires(&p, 3));                            /* only the expired tag named it */
    CHECK(!expires(&p, 7) && !expires(&p, 6) && !expires(&p, 2)); /* b keeps 3 */
    CHECK(!expires(&p, 1));                           /* tagged */
    CHECK(expires(&p, 8));                            /* unreferenced and old */
    CHECK(!expires(&p, 9));                           /* unreferenced and young */
    CHECK_EQ(p.n_expire, 2);
    REQUIRE(p.n_refs == 1);
    CHECK_STR(p.refs[0], "gone");
    /* the commit: assert every ref, remove the tag, then the snapshots */
    json_t *reqs, *ups;
    fl_expire_commit_request(md, &p, &reqs, &ups);
    CHECK_EQ(json_array_size(reqs), 5);
    CHECK_STR(json_string_value(json_object_get(json_array_get(reqs, 0), "type")), "assert-table-uuid");
    CHECK_STR(json_string_value(json_object_get(json_array_get(ups, 0), "action")), "remove-snapshot-ref");
    CHECK_STR(json_string_value(json_object_get(json_array_get(ups, 1), "action")), "remove-snapshots");
    json_decref(reqs);
    json_decref(ups);
    fl_expire_plan_free(&p);
    /* main never ages out, even with a max-ref-age */
    json_object_set_new(json_object_get(json_object_get(md, "refs"), "main"), "max-ref-age-ms", json_integer(1));
    REQUIRE(fl_expire_plan(md, &o, &p, err, sizeof err) == FL_OK);
    CHECK(!expires(&p, 4));
    CHECK_EQ(p.n_refs, 1);
    fl_expire_plan_free(&p);
    /* a table without refs: main is current-snapshot-id */
    json_object_set_new(md, "refs", json_object());
    json_object_set_new(md, "current-snapshot-id", json_integer(7));
    REQUIRE(fl_expire_plan(md, &o, &p, err, sizeof err) == FL_OK);
    CHECK(!expires(&p, 7));
    CHECK(expires(&p, 4) && expires(&p, 6));
    fl_expire_plan_free(&p);
    json_decref(md);
}

/* ---- in-memory table ------------------------------------------------------------------ */

typedef struct obj { char *uri; fl_buf_t data; } obj_t;

typedef struct mtab {
    json_t *md;
    char location[256];
    int version;
    obj_t *objs;
    int n_objs;
    int commit_mode;          /* 0 normal; 1 apply then answer 500; 2 answer 503 without applying */
    int commits, conflicts;
    bool expire_landed;       /* a commit with remove-snapshots was applied */
    int deletes, deletes_before_landing;
    int fail_deletes;         /* answer FL_ERR_IO to deletes */
    /* called once before applying the next commit that removes snapshots (a racing writer) */
    void (*race)(struct mtab *t);
    bool in_race;
    fl_table_ops_t ops;
} mtab_t;

static int mfind(mtab_t *t, const char *uri)
{
    for (int i = 0; i < t->n_objs; i++)
        if (t->objs[i].uri && !strcmp(t->objs[i].uri, uri)) return i;
    return -1;
}

static fl_err_t mput(void *ctx, const char *uri, const void *p, size_t n)
{
    mtab_t *t = ctx;
    int i = mfind(t, uri);
    if (i < 0) {
        t->objs = realloc(t->objs, (size_t)(t->n_objs + 1) * sizeof *t->objs);
        i = t->n_objs++;
        t->objs[i].uri = fl_strdup(uri);
        fl_buf_init(&t->objs[i].data, 0);
    }
    fl_buf_reset(&t->objs[i].data);
    return fl_buf_add(&t->objs[i].data, p, n);
}

static fl_err_t mput_file(void *ctx, const char *uri, int fd, uint64_t size)
{
    char *b = malloc(size ? size : 1);
    ssize_t got = pread(fd, b, size, 0);
    fl_err_t e = got == (ssize_t)size ? mput(ctx, uri, b, size) : FL_ERR_IO;
    free(b);
    return e;
}

static fl_err_t mget(void *ctx, const char *uri, fl_buf_t *out)
{
    mtab_t *t = ctx;
    int i = mfind(t, uri);
    if (i < 0) return FL_ERR_NOT_FOUND;
    return fl_buf_add(out, t->objs[i].data.ptr, t->objs[i].data.len);
}

static fl_err_t mdel(void *ctx, const char *uri)
{
    mtab_t *t = ctx;
    t->deletes++;
    if (!t->expire_landed) t->deletes_before_landing++;
    if (t->fail_deletes) return FL_ERR_IO;
    int i = mfind(t, uri);
    if (i >= 0) {
        free(t->objs[i].uri);
        t->objs[i].uri = NULL;
        fl_buf_free(&t->objs[i].data);
    }
    return FL_OK;
}

static fl_err_t mlist(void *ctx, const char *prefix, fl_err_t (*fn)(void *, const char *, uint64_t, int64_t), void *arg)
{
    mtab_t *t = ctx;
    for (int i = 0; i < t->n_objs; i++)
        if (t->objs[i].uri && !strncmp(t->objs[i].uri, prefix, strlen(prefix))) {
            fl_err_t e = fn(arg, t->objs[i].uri, t->objs[i].data.len, -1);
            if (e) return e;
        }
    return FL_OK;
}

static fl_err_t mload(void *ctx, json_t **md, char **loc, char *err, size_t errlen)
{
    mtab_t *t = ctx;
    (void)err, (void)errlen;
    *md = json_deep_copy(t->md);
    *loc = fl_strdup(t->location);
    return FL_OK;
}

static bool removes_snapshots(json_t *updates)
{
    json_t *u;
    size_t i;
    json_array_foreach(updates, i, u)
        if (!strcmp(json_string_value(json_object_get(u, "action")), "remove-snapshots")) return true;
    return false;
}

static fl_err_t mcommit(void *ctx, json_t *reqs, json_t *updates, json_t **md, int *status, char *err, size_t errlen)
{
    mtab_t *t = ctx;
    t->commits++;
    bool expiry = removes_snapshots(updates);
    if (expiry && t->race && !t->in_race) {
        void (*race)(mtab_t *) = t->race;
        t->race = NULL;
        t->in_race = true;
        race(t);
        t->in_race = false;
    }
    if (t->commit_mode == 2 && expiry) { *status = 503; return FL_OK; }
    int st = fl_iceberg_check_requirements(t->md, reqs, err, errlen);
    if (st) { *status = st; if (st == 409) t->conflicts++; return FL_OK; }
    json_t *next = fl_iceberg_apply_updates(t->md, updates, t->location, &st, err, errlen);
    if (!next) { *status = st; return FL_OK; }
    json_decref(t->md);
    t->md = next;
    snprintf(t->location, sizeof t->location, "mem://wh/t/metadata/%05d-m.metadata.json", ++t->version);
    char *text = json_dumps(next, JSON_COMPACT);
    mput(t, t->location, text, strlen(text));
    free(text);
    if (expiry) t->expire_landed = true;
    if (t->commit_mode == 1 && expiry) { *status = 500; return FL_OK; }
    *status = 200;
    *md = json_deep_copy(next);
    return FL_OK;
}

static void mtab_init(mtab_t *t, const char *props)
{
    memset(t, 0, sizeof *t);
    char req[1024];
    snprintf(req, sizeof req,
             "{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
             "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"}]},\"properties\":%s}",
             props ? props : "{}");
    json_t *cr = json_loads(req, 0, NULL);
    int st;
    char err[256];
    t->md = fl_iceberg_new_metadata(cr, "mem://wh/t", &st, err, sizeof err);
    json_decref(cr);
    snprintf(t->location, sizeof t->location, "mem://wh/t/metadata/00000-m.metadata.json");
    t->ops = (fl_table_ops_t){ t, mload, mcommit, mput, mput_file, mget, mdel, mlist, NULL, NULL };
}

static void mtab_free(mtab_t *t)
{
    for (int i = 0; i < t->n_objs; i++) { free(t->objs[i].uri); fl_buf_free(&t->objs[i].data); }
    free(t->objs);
    json_decref(t->md);
}

/* Appends ids first..first+n-1 in one snapshot dated hours_ago before NOW; its id. */
static int64_t append_rows(mtab_t *t, int64_t first, int n, int hours_ago)
{
    char err[256];
    fl_appender_t *a = NULL;
    int64_t sid = -1;
    if (fl_append_open(&a, &t->ops, NULL, err, sizeof err)) return -1;
    fl_vec_t b;
    fl_vec_init(&b, fl_append_schema(a));
    for (int64_t i = first; i < first + n; i++) {
        fl_vec_append_struct(&b);
        fl_vec_append_i64(&b.children[0], i);
    }
    if (!fl_append_write(a, &b, err, sizeof err)) fl_append_commit(a, NULL, 0, &sid, err, sizeof err);
    fl_vec_free(&b);
    fl_append_free(a);
    json_t *s, *snaps = json_object_get(t->md, "snapshots");
    size_t i;
    json_array_foreach(snaps, i, s)
        if (json_integer_value(json_object_get(s, "snapshot-id")) == sid)
            json_object_set_new(s, "timestamp-ms", json_integer(NOW - hours_ago * H));
    return sid;
}

/* A "delete" snapshot on main: the head's manifest list without the manifest that holds
 * path_part's file. Returns its id. */
static int64_t drop_manifest(mtab_t *t, int64_t first_id_of_dropped, int hours_ago)
{
    int64_t head = fl_iceberg_current_snapshot_id(t->md);
    json_t *hs = NULL, *s;
    size_t i;
    json_array_foreach(json_object_get(t->md, "snapshots"), i, s)
        if (json_integer_value(json_object_get(s, "snapshot-id")) == head) hs = s;
    fl_buf_t buf;
    fl_buf_init(&buf, 0);
    fl_manifest_file_t *mfs = NULL;
    size_t n = 0;
    char err[256];
    if (mget(t, json_string_value(json_object_get(hs, "manifest-list")), &buf) ||
        fl_manifest_list_read(fl_slice(buf.ptr, buf.len), &mfs, &n, err, sizeof err)) return -1;
    /* keep the manifests whose entries do not hold first_id_of_dropped's file: the manifest
     * added by that append is the one whose added_snapshot_id is the dropped snapshot */
    fl_manifest_file_t *keep = calloc(n + 1, sizeof *keep);
    size_t nk = 0;
    for (size_t m = 0; m < n; m++)
        if (mfs[m].added_snapshot_id != first_id_of_dropped) keep[nk++] = mfs[m];
    int64_t seq = json_integer_value(json_object_get(t->md, "last-sequence-number")) + 1;
    int64_t sid = head + 1000;
    char path[128];
    snprintf(path, sizeof path, "mem://wh/t/metadata/snap-drop-%" PRId64 ".avro", sid);
    fl_buf_t out;
    fl_buf_init(&out, 0);
    fl_manifest_list_write(2, sid, head, seq, keep, nk, FL_AVRO_CODEC_NULL, &out);
    mput(t, path, out.ptr, out.len);
    fl_buf_free(&out);
    free(keep);
    fl_manifest_files_free(mfs, n);
    fl_buf_free(&buf);
    json_t *ups = json_pack("[{s:s,s:{s:I,s:I,s:I,s:I,s:s,s:{s:s},s:i}},{s:s,s:s,s:s,s:I}]",
                            "action", "add-snapshot", "snapshot", "snapshot-id", (json_int_t)sid,
                            "parent-snapshot-id", (json_int_t)head, "sequence-number", (json_int_t)seq,
                            "timestamp-ms", (json_int_t)(NOW - hours_ago * H), "manifest-list", path,
                            "summary", "operation", "delete", "schema-id", 0,
                            "action", "set-snapshot-ref", "ref-name", "main", "type", "branch",
                            "snapshot-id", (json_int_t)sid);
    json_t *md = NULL;
    int st = 0;
    mcommit(t, NULL, ups, &md, &st, err, sizeof err);
    json_decref(ups);
    json_decref(md);
    return st == 200 ? sid : -1;
}

/* Every file a snapshot of the current metadata reaches (lists, manifests, content) exists. */
static int missing_reachable(mtab_t *t)
{
    int missing = 0;
    json_t *s;
    size_t i;
    char err[256];
    json_array_foreach(json_object_get(t->md, "snapshots"), i, s) {
        const char *list = json_string_value(json_object_get(s, "manifest-list"));
        fl_buf_t b;
        fl_buf_init(&b, 0);
        if (mget(t, list, &b)) { missing++; fl_buf_free(&b); continue; }
        fl_manifest_file_t *mfs = NULL;
        size_t n = 0;
        fl_manifest_list_read(fl_slice(b.ptr, b.len), &mfs, &n, err, sizeof err);
        for (size_t m = 0; m < n; m++) {
            fl_buf_reset(&b);
            if (mget(t, mfs[m].manifest_path, &b)) { missing++; continue; }
            fl_manifest_entry_t *ents = NULL;
            size_t ne = 0;
            fl_manifest_read(fl_slice(b.ptr, b.len), &mfs[m], &ents, &ne, err, sizeof err);
            for (size_t k = 0; k < ne; k++)
                if (ents[k].status != 2 && mfind(t, ents[k].file.file_path) < 0) missing++;
            fl_manifest_entries_free(ents, ne);
        }
        fl_manifest_files_free(mfs, n);
        fl_buf_free(&b);
    }
    return missing;
}

static int64_t rows_of(mtab_t *t, int64_t snapshot_id)
{
    fl_scan_plan_t plan;
    char err[256];
    if (fl_scan_plan(&t->ops, t->md, snapshot_id, &plan, err, sizeof err)) return -1;
    int64_t r = plan.records;
    for (size_t f = 0; f < plan.n_files; f++)
        if (mfind(t, plan.files[f].file_path) < 0) r = -2;
    fl_scan_plan_free(&plan);
    return r;
}

static int live(mtab_t *t, const char *part)
{
    int n = 0;
    for (int i = 0; i < t->n_objs; i++)
        if (t->objs[i].uri && strstr(t->objs[i].uri, part)) n++;
    return n;
}

/* The table of the run tests: appends A (100 h), B (90 h), C (80 h), then a delete snapshot D
 * (70 h) dropping A's manifest, then E (10 h). */
static void build(mtab_t *t, int64_t ids[5], const char *props)
{
    mtab_init(t, props);
    ids[0] = append_rows(t, 0, 10, 100);
    ids[1] = append_rows(t, 10, 10, 90);
    ids[2] = append_rows(t, 20, 10, 80);
    ids[3] = drop_manifest(t, ids[0], 70);
    ids[4] = append_rows(t, 30, 10, 10);
}

static bool has_snapshot(mtab_t *t, int64_t id)
{
    json_t *s;
    size_t i;
    json_array_foreach(json_object_get(t->md, "snapshots"), i, s)
        if (json_integer_value(json_object_get(s, "snapshot-id")) == id) return true;
    return false;
}

FL_TEST(expire_run_deletes_only_unreachable_after_commit)
{
    mtab_t *t = malloc(sizeof *t);
    int64_t ids[5];
    build(t, ids, NULL);
    REQUIRE(ids[0] > 0 && ids[3] > 0 && ids[4] > 0);
    CHECK_EQ(rows_of(t, -1), 30);
    CHECK_EQ(live(t, "/data/"), 4);
    /* keep 2 snapshots, 24 h: D and E stay, A B C go; A's data file only A..C reached */
    fl_expire_opts_t o = { .as_of_ms = NOW, .min_snapshots_to_keep = 2, .max_snapshot_age_ms = 24 * H };
    fl_expire_result_t r;
    REQUIRE(fl_expire_snapshots(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.status, FL_EXPIRE_SUCCESSFUL);
    CHECK(r.committed);
    CHECK_EQ(r.attempts, 1);
    CHECK_EQ(r.snapshots_before, 5);
    CHECK_EQ(r.snapshots_removed, 3);
    CHECK(!has_snapshot(t, ids[0]) && !has_snapshot(t, ids[2]) && has_snapshot(t, ids[3]) && has_snapshot(t, ids[4]));
    CHECK_EQ(r.files[FL_EXPIRE_DATA], 1);
    CHECK(r.bytes[FL_EXPIRE_DATA] > 0);
    CHECK_EQ(r.files[FL_EXPIRE_MANIFESTS], 1);
    CHECK_EQ(r.files[FL_EXPIRE_MANIFEST_LISTS], 3);
    CHECK_EQ(r.delete_errors, 0);
    CHECK_EQ(t->deletes_before_landing, 0);
    CHECK_EQ(live(t, "/data/"), 3);
    CHECK_EQ(missing_reachable(t), 0);
    CHECK_EQ(rows_of(t, ids[3]), 20);  /* time travel to the retained delete snapshot */
    CHECK_EQ(rows_of(t, -1), 30);
    fl_expire_result_free(&r);
    /* a second run finds nothing more to do */
    REQUIRE(fl_expire_snapshots(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.snapshots_removed, 0);
    CHECK_EQ(r.attempts, 0);
    fl_expire_result_free(&r);
    mtab_free(t);
    free(t);
}

FL_TEST(expire_run_dry_run_and_gc_disabled)
{
    mtab_t *t = malloc(sizeof *t);
    int64_t ids[5];
    build(t, ids, "{\"gc.enabled\":\"false\"}");
    fl_expire_opts_t o = { .as_of_ms = NOW + 1000 * H };
    fl_expire_result_t r;
    int commits = t->commits;
    CHECK(fl_expire_snapshots(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.status, FL_EXPIRE_DISABLED);
    CHECK(strstr(r.message, "gc.enabled") != NULL);
    CHECK_EQ(t->commits, commits);
    CHECK_EQ(t->deletes, 0);
    fl_expire_result_free(&r);
    mtab_free(t);
    /* dry run: counts, no commit, no delete */
    build(t, ids, NULL);
    o.dry_run = true;
    commits = t->commits;
    REQUIRE(fl_expire_snapshots(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.snapshots_removed, 4);
    CHECK_EQ(r.files[FL_EXPIRE_DATA], 1);
    CHECK_EQ(r.files[FL_EXPIRE_MANIFEST_LISTS], 4);
    CHECK_EQ(t->commits, commits);
    CHECK_EQ(t->deletes, 0);
    CHECK(has_snapshot(t, ids[0]));
    fl_expire_result_free(&r);
    mtab_free(t);
    free(t);
}

static mtab_t *racing_table;
static void racing_writer(mtab_t *t)
{
    /* another writer appends to main between the job's plan and its commit */
    racing_table = t;
    append_rows(t, 100, 5, 1);
}

FL_TEST(expire_run_racing_writer_replans)
{
    mtab_t *t = malloc(sizeof *t);
    int64_t ids[5];
    build(t, ids, NULL);
    t->race = racing_writer;
    fl_expire_opts_t o = { .as_of_ms = NOW, .min_snapshots_to_keep = 2, .max_snapshot_age_ms = 24 * H };
    fl_expire_result_t r;
    REQUIRE(fl_expire_snapshots(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(t->conflicts, 1);
    CHECK_EQ(r.attempts, 2);
    /* re-planned on the writer's snapshot: E and the new one are within 24 h, so D goes too */
    CHECK_EQ(r.snapshots_removed, 4);
    CHECK(has_snapshot(t, ids[4]));
    CHECK_EQ(rows_of(t, -1), 35);   /* the writer's rows are there */
    CHECK_EQ(missing_reachable(t), 0);
    CHECK_EQ(t->deletes_before_landing, 0);
    fl_expire_result_free(&r);
    /* a writer that always wins: the job gives up with S3 Tables' message, deleting nothing */
    mtab_free(t);
    build(t, ids, NULL);
    o.max_attempts = 1;
    t->race = racing_writer;
    CHECK(fl_expire_snapshots(&t->ops, &o, &r) == FL_ERR_CONFLICT);
    CHECK_EQ(r.status, FL_EXPIRE_FAILED);
    CHECK(strstr(r.message, "stale metadata") != NULL);
    CHECK_EQ(t->deletes, 0);
    fl_expire_result_free(&r);
    mtab_free(t);
    free(t);
}

FL_TEST(expire_run_unknown_commit_outcome)
{
    mtab_t *t = malloc(sizeof *t);
    int64_t ids[5];
    build(t, ids, NULL);
    fl_expire_opts_t o = { .as_of_ms = NOW, .min_snapshots_to_keep = 2, .max_snapshot_age_ms = 24 * H };
    fl_expire_result_t r;
    /* 503 and not applied: nothing deleted */
    t->commit_mode = 2;
    CHECK(fl_expire_snapshots(&t->ops, &o, &r) != FL_OK);
    CHECK_EQ(r.status, FL_EXPIRE_FAILED);
    CHECK(!r.committed);
    CHECK_EQ(t->deletes, 0);
    CHECK(has_snapshot(t, ids[0]));
    fl_expire_result_free(&r);
    /* applied but answered 500: the reload shows it landed, files go */
    t->commit_mode = 1;
    REQUIRE(fl_expire_snapshots(&t->ops, &o, &r) == FL_OK);
    CHECK(r.committed);
    CHECK_EQ(r.files[FL_EXPIRE_DATA], 1);
    CHECK_EQ(t->deletes_before_landing, 0);
    CHECK_EQ(missing_reachable(t), 0);
    fl_expire_result_free(&r);
    mtab_free(t);
    free(t);
}

FL_TEST(expire_run_unreadable_retained_manifest_keeps_files)
{
    mtab_t *t = malloc(sizeof *t);
    int64_t ids[5];
    build(t, ids, NULL);
    /* lose E's own manifest: nothing can be proven unreachable any more */
    json_t *s;
    size_t i;
    char err[256];
    json_array_foreach(json_object_get(t->md, "snapshots"), i, s)
        if (json_integer_value(json_object_get(s, "snapshot-id")) == ids[4]) {
            fl_buf_t b;
            fl_buf_init(&b, 0);
            mget(t, json_string_value(json_object_get(s, "manifest-list")), &b);
            fl_manifest_file_t *mfs = NULL;
            size_t n = 0;
            REQUIRE(fl_manifest_list_read(fl_slice(b.ptr, b.len), &mfs, &n, err, sizeof err) == FL_OK);
            mdel(t, mfs[0].manifest_path);
            t->deletes = 0;
            fl_manifest_files_free(mfs, n);
            fl_buf_free(&b);
        }
    fl_expire_opts_t o = { .as_of_ms = NOW, .min_snapshots_to_keep = 2, .max_snapshot_age_ms = 24 * H };
    fl_expire_result_t r;
    REQUIRE(fl_expire_snapshots(&t->ops, &o, &r) == FL_OK);
    CHECK(r.committed);
    CHECK_EQ(r.files[FL_EXPIRE_DATA], 0);
    CHECK_EQ(r.files[FL_EXPIRE_MANIFESTS], 0);
    CHECK(r.delete_errors > 0);
    CHECK_EQ(live(t, "/data/"), 4);
    fl_expire_result_free(&r);
    /* failing deletes are reported, not fatal */
    mtab_free(t);
    build(t, ids, NULL);
    t->fail_deletes = 1;
    REQUIRE(fl_expire_snapshots(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.status, FL_EXPIRE_SUCCESSFUL);
    CHECK_EQ(r.delete_errors, 5);
    CHECK(strstr(r.delete_error, "deleting") != NULL);
    fl_expire_result_free(&r);
    mtab_free(t);
    free(t);
}

FL_TEST(expire_run_trims_previous_metadata_files)
{
    mtab_t *t = malloc(sizeof *t);
    int64_t ids[5];
    build(t, ids, "{\"write.metadata.previous-versions-max\":\"2\","
                  "\"write.metadata.delete-after-commit.enabled\":\"true\"}");
    /* the mem catalog writes a file per commit; the first one (00000) was never stored */
    CHECK_EQ(live(t, ".metadata.json"), 5);
    fl_expire_opts_t o = { .as_of_ms = NOW, .min_snapshots_to_keep = 2, .max_snapshot_age_ms = 24 * H };
    fl_expire_result_t r;
    REQUIRE(fl_expire_snapshots(&t->ops, &o, &r) == FL_OK);
    /* after the expiry commit: the current file and the 2 in the log remain */
    CHECK_EQ(json_array_size(json_object_get(t->md, "metadata-log")), 2);
    CHECK_EQ(live(t, ".metadata.json"), 3);
    CHECK(mfind(t, t->location) >= 0);
    json_t *x;
    size_t i;
    json_array_foreach(json_object_get(t->md, "metadata-log"), i, x)
        CHECK(mfind(t, json_string_value(json_object_get(x, "metadata-file"))) >= 0);
    CHECK_EQ(r.files[FL_EXPIRE_METADATA], 3); /* 00001 .. 00003 */
    fl_expire_result_free(&r);
    mtab_free(t);
    /* without delete-after-commit the files stay for unreferenced-file removal */
    build(t, ids, "{\"write.metadata.previous-versions-max\":\"2\"}");
    REQUIRE(fl_expire_snapshots(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(live(t, ".metadata.json"), 6);
    CHECK_EQ(r.files[FL_EXPIRE_METADATA], 0);
    fl_expire_result_free(&r);
    mtab_free(t);
    free(t);
}

/* fl_io_list over the local file system (the S3 side runs in test_maint_expire.py). */
#include "iceberg/io.h"

static fl_err_t count_listed(void *arg, const char *location, const fl_io_stat_t *st)
{
    json_t *seen = arg;
    json_object_set_new(seen, location, json_integer((json_int_t)st->size));
    return FL_OK;
}

FL_TEST(io_list_local_walks_the_prefix)
{
    const char *dir = fl_test_tmpdir();
    char p[512], pre[512];
    const char *files[] = { "t/metadata/00001-a.metadata.json", "t/metadata/sub/x.avro", "t/data/d.parquet",
                            "t/metadata-other/y", "u/z" };
    fl_io_t *io = NULL;
    REQUIRE(fl_io_new(NULL, NULL, &io) == FL_OK);
    fl_remote_error_t re;
    for (size_t i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "file://%s/%s", dir, files[i]);
        REQUIRE(fl_io_put(io, p, "abc", 3, &re) == FL_OK);
    }
    json_t *seen = json_object();
    snprintf(pre, sizeof pre, "file://%s/t/metadata/", dir);
    REQUIRE(fl_io_list(io, pre, count_listed, seen, &re) == FL_OK);
    CHECK_EQ(json_object_size(seen), 2);
    snprintf(p, sizeof p, "file://%s/t/metadata/sub/x.avro", dir);
    CHECK_EQ(json_integer_value(json_object_get(seen, p)), 3);
    json_object_clear(seen);
    snprintf(pre, sizeof pre, "%s/t/meta", dir);   /* a plain path and a partial name */
    REQUIRE(fl_io_list(io, pre, count_listed, seen, &re) == FL_OK);
    CHECK_EQ(json_object_size(seen), 3);
    json_object_clear(seen);
    snprintf(pre, sizeof pre, "file://%s/nothing/", dir);
    CHECK(fl_io_list(io, pre, count_listed, seen, &re) == FL_OK);
    CHECK_EQ(json_object_size(seen), 0);
    json_decref(seen);
    fl_io_free(io);
}
