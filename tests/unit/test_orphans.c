/* Unreferenced-file removal (iceberg/orphans.h) over in-memory table ops with listing times and
 * a copy: every referenced file (manifest lists, manifests, data files reachable only from an
 * old retained snapshot, statistics, the metadata-log files, version-hint) is never touched;
 * young orphans and orphans of unknown age stay; old orphans become noncurrent under
 * .noncurrent/<as-of>/; noncurrent objects past nonCurrentDays are deleted; restore brings them
 * back (by key or all, and by itself when a commit references one again); an unreadable
 * manifest makes the run do nothing; no copy callback or gc.enabled=false ends cleanly. */
#include "test.h"
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>
#include "base/mem.h"
#include "iceberg/append.h"
#include "iceberg/manifest.h"
#include "iceberg/metadata.h"
#include "iceberg/orphans.h"

#define DAY FL_ORPHANS_DAY_MS
#define NOW (1700000000000LL)

typedef struct obj { char *uri; fl_buf_t data; int64_t mtime; } obj_t;

typedef struct otab {
    json_t *md;
    char location[256];
    int version;
    obj_t *objs;
    int n_objs;
    int64_t clock;            /* mtime of what is written now */
    int copies, deletes;
    void (*on_list)(struct otab *t);   /* called once at the next listing (a racing commit) */
    const char *vanish;                /* deleted by someone else just before it is copied */
    fl_table_ops_t ops;
} otab_t;

static int ofind(otab_t *t, const char *uri)
{
    for (int i = 0; i < t->n_objs; i++)
        if (t->objs[i].uri && !strcmp(t->objs[i].uri, uri)) return i;
    return -1;
}

static fl_err_t oput_at(otab_t *t, const char *uri, const void *p, size_t n, int64_t mtime)
{
    int i = ofind(t, uri);
    if (i < 0) {
        t->objs = realloc(t->objs, (size_t)(t->n_objs + 1) * sizeof *t->objs);
        i = t->n_objs++;
        t->objs[i].uri = fl_strdup(uri);
        fl_buf_init(&t->objs[i].data, 0);
    }
    fl_buf_reset(&t->objs[i].data);
    t->objs[i].mtime = mtime;
    return fl_buf_add(&t->objs[i].data, p, n);
}

static fl_err_t oput(void *ctx, const char *uri, const void *p, size_t n)
{
    otab_t *t = ctx;
    return oput_at(t, uri, p, n, t->clock);
}

static fl_err_t oput_file(void *ctx, const char *uri, int fd, uint64_t size)
{
    char *b = malloc(size ? size : 1);
    ssize_t got = pread(fd, b, size, 0);
    fl_err_t e = got == (ssize_t)size ? oput(ctx, uri, b, size) : FL_ERR_IO;
    free(b);
    return e;
}

static fl_err_t oget(void *ctx, const char *uri, fl_buf_t *out)
{
    otab_t *t = ctx;
    int i = ofind(t, uri);
    if (i < 0) return FL_ERR_NOT_FOUND;
    return fl_buf_add(out, t->objs[i].data.ptr, t->objs[i].data.len);
}

static fl_err_t odel(void *ctx, const char *uri)
{
    otab_t *t = ctx;
    t->deletes++;
    int i = ofind(t, uri);
    if (i >= 0) {
        free(t->objs[i].uri);
        t->objs[i].uri = NULL;
        fl_buf_free(&t->objs[i].data);
    }
    return FL_OK;
}

static fl_err_t olist(void *ctx, const char *prefix, fl_err_t (*fn)(void *, const char *, uint64_t, int64_t), void *arg)
{
    otab_t *t = ctx;
    if (t->on_list) {
        void (*f)(otab_t *) = t->on_list;
        t->on_list = NULL;
        f(t);
    }
    for (int i = 0; i < t->n_objs; i++)
        if (t->objs[i].uri && !strncmp(t->objs[i].uri, prefix, strlen(prefix))) {
            fl_err_t e = fn(arg, t->objs[i].uri, t->objs[i].data.len, t->objs[i].mtime);
            if (e) return e;
        }
    return FL_OK;
}

static fl_err_t ocopy(void *ctx, const char *src, const char *dst)
{
    otab_t *t = ctx;
    t->copies++;
    if (t->vanish && !strcmp(t->vanish, src)) odel(t, src);
    int i = ofind(t, src);
    if (i < 0) return FL_ERR_NOT_FOUND;
    fl_buf_t b;
    fl_buf_init(&b, 0);
    fl_buf_add(&b, t->objs[i].data.ptr, t->objs[i].data.len);
    fl_err_t e = oput_at(t, dst, b.ptr, b.len, t->clock);
    fl_buf_free(&b);
    return e;
}

static fl_err_t oload(void *ctx, json_t **md, char **loc, char *err, size_t errlen)
{
    otab_t *t = ctx;
    (void)err, (void)errlen;
    *md = json_deep_copy(t->md);
    *loc = fl_strdup(t->location);
    return FL_OK;
}

static fl_err_t ocommit(void *ctx, json_t *reqs, json_t *updates, json_t **md, int *status, char *err, size_t errlen)
{
    otab_t *t = ctx;
    int st = fl_iceberg_check_requirements(t->md, reqs, err, errlen);
    if (st) { *status = st; return FL_OK; }
    json_t *next = fl_iceberg_apply_updates(t->md, updates, t->location, &st, err, errlen);
    if (!next) { *status = st; return FL_OK; }
    json_decref(t->md);
    t->md = next;
    snprintf(t->location, sizeof t->location, "mem://wh/t/metadata/%05d-m.metadata.json", ++t->version);
    char *text = json_dumps(next, JSON_COMPACT);
    oput(t, t->location, text, strlen(text));
    free(text);
    *status = 200;
    *md = json_deep_copy(next);
    return FL_OK;
}

static void otab_init(otab_t *t, const char *props)
{
    memset(t, 0, sizeof *t);
    t->clock = NOW - 30 * DAY;
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
    char *text = json_dumps(t->md, JSON_COMPACT);
    oput(t, t->location, text, strlen(text));
    free(text);
    t->ops = (fl_table_ops_t){ t, oload, ocommit, oput, oput_file, oget, odel, olist, ocopy, NULL };
}

static void otab_free(otab_t *t)
{
    for (int i = 0; i < t->n_objs; i++) { free(t->objs[i].uri); fl_buf_free(&t->objs[i].data); }
    free(t->objs);
    json_decref(t->md);
}

static int64_t append_rows(otab_t *t, int64_t first, int n)
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
    return sid;
}

/* A snapshot on main whose list drops the manifest the snapshot `dropped` added: that
 * snapshot's data file is then reachable only from the older, still retained, snapshots. */
static int64_t drop_manifest(otab_t *t, int64_t dropped)
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
    if (oget(t, json_string_value(json_object_get(hs, "manifest-list")), &buf) ||
        fl_manifest_list_read(fl_slice(buf.ptr, buf.len), &mfs, &n, err, sizeof err)) return -1;
    fl_manifest_file_t *keep = calloc(n + 1, sizeof *keep);
    size_t nk = 0;
    for (size_t m = 0; m < n; m++)
        if (mfs[m].added_snapshot_id != dropped) keep[nk++] = mfs[m];
    int64_t seq = json_integer_value(json_object_get(t->md, "last-sequence-number")) + 1;
    int64_t sid = head + 1000;
    char path[128];
    snprintf(path, sizeof path, "mem://wh/t/metadata/snap-drop-%" PRId64 ".avro", sid);
    fl_buf_t out;
    fl_buf_init(&out, 0);
    fl_manifest_list_write(2, sid, head, seq, keep, nk, FL_AVRO_CODEC_NULL, &out);
    oput(t, path, out.ptr, out.len);
    fl_buf_free(&out);
    free(keep);
    fl_manifest_files_free(mfs, n);
    fl_buf_free(&buf);
    json_t *ups = json_pack("[{s:s,s:{s:I,s:I,s:I,s:I,s:s,s:{s:s},s:i}},{s:s,s:s,s:s,s:I}]",
                            "action", "add-snapshot", "snapshot", "snapshot-id", (json_int_t)sid,
                            "parent-snapshot-id", (json_int_t)head, "sequence-number", (json_int_t)seq,
                            "timestamp-ms", (json_int_t)(NOW - 20 * DAY), "manifest-list", path,
                            "summary", "operation", "delete", "schema-id", 0,
                            "action", "set-snapshot-ref", "ref-name", "main", "type", "branch",
                            "snapshot-id", (json_int_t)sid);
    json_t *md = NULL;
    int st = 0;
    ocommit(t, NULL, ups, &md, &st, err, sizeof err);
    json_decref(ups);
    json_decref(md);
    return st == 200 ? sid : -1;
}

/* Every file the metadata references (lists, manifests, live content, metadata-log, current
 * metadata, statistics); how many are missing. */
static int missing_referenced(otab_t *t, int *total)
{
    int missing = 0;
    json_t *s, *uniq = json_object();
    size_t i;
    char err[256];
    fl_buf_t b;
    fl_buf_init(&b, 0);
#define HAVE(p) do { json_object_set_new(uniq, (p), json_true()); if (ofind(t, (p)) < 0) { missing++; fprintf(stderr, "  missing %s\n", (p)); } } while (0)
    HAVE(t->location);
    json_array_foreach(json_object_get(t->md, "metadata-log"), i, s) HAVE(json_string_value(json_object_get(s, "metadata-file")));
    json_array_foreach(json_object_get(t->md, "statistics"), i, s) HAVE(json_string_value(json_object_get(s, "statistics-path")));
    json_array_foreach(json_object_get(t->md, "snapshots"), i, s) {
        const char *list = json_string_value(json_object_get(s, "manifest-list"));
        HAVE(list);
        fl_buf_reset(&b);
        if (oget(t, list, &b)) continue;
        fl_manifest_file_t *mfs = NULL;
        size_t n = 0;
        fl_manifest_list_read(fl_slice(b.ptr, b.len), &mfs, &n, err, sizeof err);
        for (size_t m = 0; m < n; m++) {
            HAVE(mfs[m].manifest_path);
            fl_buf_reset(&b);
            if (oget(t, mfs[m].manifest_path, &b)) continue;
            fl_manifest_entry_t *ents = NULL;
            size_t ne = 0;
            fl_manifest_read(fl_slice(b.ptr, b.len), &mfs[m], &ents, &ne, err, sizeof err);
            for (size_t k = 0; k < ne; k++)
                if (ents[k].status != 2) HAVE(ents[k].file.file_path);
            fl_manifest_entries_free(ents, ne);
        }
        fl_manifest_files_free(mfs, n);
    }
#undef HAVE
    fl_buf_free(&b);
    if (total) *total = (int)json_object_size(uniq);
    json_decref(uniq);
    return missing;
}

static int live(otab_t *t, const char *part)
{
    int n = 0;
    for (int i = 0; i < t->n_objs; i++)
        if (t->objs[i].uri && strstr(t->objs[i].uri, part)) n++;
    return n;
}

/* The test table: appends A, B, C, a snapshot dropping A's manifest, then D (all 30 days old);
 * a statistics file; orphans: old (5 days), young (1 day), undated, a stale metadata.json;
 * a version-hint file; and an object of a sibling table. */
static void build(otab_t *t, const char *props)
{
    otab_init(t, props);
    int64_t a = append_rows(t, 0, 10);
    append_rows(t, 10, 10);
    append_rows(t, 20, 10);
    drop_manifest(t, a);
    append_rows(t, 30, 10);
    oput(t, "mem://wh/t/metadata/stats-1.puffin", "PFA1", 4);
    json_object_set_new(t->md, "statistics",
                        json_pack("[{s:I,s:s,s:i,s:i,s:[]}]", "snapshot-id", (json_int_t)a, "statistics-path",
                                  "mem://wh/t/metadata/stats-1.puffin", "file-size-in-bytes", 4,
                                  "file-footer-size-in-bytes", 4, "blob-metadata"));
    oput_at(t, "mem://wh/t/data/orphan-old.parquet", "old", 3, NOW - 5 * DAY);
    oput_at(t, "mem://wh/t/data/cat=x/orphan-old2.parquet", "old2!", 5, NOW - 4 * DAY);
    oput_at(t, "mem://wh/t/data/orphan-young.parquet", "young", 5, NOW - 1 * DAY);
    oput_at(t, "mem://wh/t/data/orphan-undated.parquet", "?", 1, -1);
    oput_at(t, "mem://wh/t/data/orphan-future.parquet", "f", 1, NOW + DAY);
    oput_at(t, "mem://wh/t/metadata/99999-stale.metadata.json", "{}", 2, NOW - 10 * DAY);
    oput_at(t, "mem://wh/t/metadata/version-hint.text", "4", 1, NOW - 10 * DAY);
    oput_at(t, "mem://wh/t2/data/other.parquet", "other", 5, NOW - 100 * DAY);
}

static const char *NC_OLD = "mem://wh/t/.noncurrent/1700000000000/data/orphan-old.parquet";

FL_TEST(orphans_noncurrent_paths)
{
    fl_buf_t b;
    fl_buf_init(&b, 0);
    fl_orphans_noncurrent_path("s3://b/t/", "data/x y.parquet", 42, &b);
    CHECK_STR(b.ptr, "s3://b/t/.noncurrent/42/data/x y.parquet");
    int64_t ms = 0;
    const char *rel = NULL;
    REQUIRE(fl_orphans_parse_noncurrent("s3://b/t", b.ptr, &ms, &rel));
    CHECK_EQ(ms, 42);
    CHECK_STR(rel, "data/x y.parquet");
    CHECK(!fl_orphans_parse_noncurrent("s3://b/t", "s3://b/t/.noncurrent/x/data/a", &ms, &rel));
    CHECK(!fl_orphans_parse_noncurrent("s3://b/t", "s3://b/t/.noncurrent/12/", &ms, &rel));
    CHECK(!fl_orphans_parse_noncurrent("s3://b/t", "s3://b/t/.noncurrent/12", &ms, &rel));
    CHECK(!fl_orphans_parse_noncurrent("s3://b/t", "s3://b/t/data/12/a", &ms, &rel));
    CHECK(!fl_orphans_parse_noncurrent("s3://b/t", "s3://b/t2/.noncurrent/12/a", &ms, &rel));
    CHECK(!fl_orphans_parse_noncurrent("s3://b/t", "s3://b/t/.noncurrent/1234567890123456789012/a", &ms, &rel));
    fl_buf_free(&b);
}

FL_TEST(orphans_two_phases)
{
    otab_t *t = malloc(sizeof *t);
    build(t, NULL);
    int total = 0;
    REQUIRE(missing_referenced(t, &total) == 0);
    CHECK(total > 15);
    int before = live(t, "mem://wh/t/");

    /* dry run: counts, changes nothing */
    fl_orphans_opts_t o = { .as_of_ms = NOW, .dry_run = true };
    fl_orphans_result_t r;
    REQUIRE(fl_orphans_run(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.status, FL_EXPIRE_SUCCESSFUL);
    CHECK_EQ(r.marked, 3);       /* old, old2, stale metadata.json */
    CHECK_EQ(t->copies + t->deletes, 0);
    CHECK_EQ(live(t, "mem://wh/t/"), before);

    /* as of NOW: the three old orphans become noncurrent; the rest stay */
    o.dry_run = false;
    REQUIRE(fl_orphans_run(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.status, FL_EXPIRE_SUCCESSFUL);
    CHECK_EQ(r.marked, 3);
    CHECK_EQ(r.marked_bytes, 3 + 5 + 2);
    CHECK_EQ(r.young, 2);        /* young and future */
    CHECK_EQ(r.in_doubt, 1);     /* undated */
    CHECK_EQ(r.deleted, 0);
    CHECK_EQ(r.errors, 0);
    CHECK_EQ(r.referenced, total);
    CHECK(ofind(t, "mem://wh/t/data/orphan-old.parquet") < 0);
    CHECK(ofind(t, NC_OLD) >= 0);
    CHECK(ofind(t, "mem://wh/t/.noncurrent/1700000000000/data/cat=x/orphan-old2.parquet") >= 0);
    CHECK(ofind(t, "mem://wh/t/.noncurrent/1700000000000/metadata/99999-stale.metadata.json") >= 0);
    CHECK(ofind(t, "mem://wh/t/data/orphan-young.parquet") >= 0);
    CHECK(ofind(t, "mem://wh/t/data/orphan-undated.parquet") >= 0);
    CHECK(ofind(t, "mem://wh/t/data/orphan-future.parquet") >= 0);
    CHECK(ofind(t, "mem://wh/t/metadata/version-hint.text") >= 0);
    CHECK(ofind(t, "mem://wh/t2/data/other.parquet") >= 0);
    CHECK_EQ(missing_referenced(t, NULL), 0);
    CHECK_EQ(live(t, "mem://wh/t/"), before);

    /* 5 days later: the noncurrent ones stay (5 < 10 days); young and future are now old */
    o.as_of_ms = NOW + 5 * DAY;
    REQUIRE(fl_orphans_run(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.marked, 2);
    CHECK_EQ(r.noncurrent, 3);
    CHECK_EQ(r.deleted, 0);
    CHECK(ofind(t, "mem://wh/t/.noncurrent/1700432000000/data/orphan-young.parquet") >= 0);

    /* 11 days later: the first three are deleted; the one marked at +5 days stays */
    o.as_of_ms = NOW + 11 * DAY;
    REQUIRE(fl_orphans_run(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.deleted, 3);
    CHECK_EQ(r.deleted_bytes, 10);
    CHECK_EQ(r.noncurrent, 2);
    CHECK_EQ(r.marked, 0);
    CHECK(ofind(t, NC_OLD) < 0);
    CHECK_EQ(live(t, "/.noncurrent/"), 2);
    CHECK_EQ(missing_referenced(t, NULL), 0);
    CHECK(ofind(t, "mem://wh/t/data/orphan-undated.parquet") >= 0);
    otab_free(t);

    /* custom thresholds */
    build(t, NULL);
    o = (fl_orphans_opts_t){ .as_of_ms = NOW, .unreferenced_days = 7 };
    REQUIRE(fl_orphans_run(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.marked, 1);       /* only the stale metadata file is 10 days old */
    o = (fl_orphans_opts_t){ .as_of_ms = NOW + 2 * DAY, .unreferenced_days = 1, .noncurrent_days = 1 };
    REQUIRE(fl_orphans_run(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.deleted, 1);
    CHECK_EQ(missing_referenced(t, NULL), 0);
    otab_free(t);
    free(t);
}

FL_TEST(orphans_restore)
{
    otab_t *t = malloc(sizeof *t);
    build(t, NULL);
    fl_orphans_opts_t o = { .as_of_ms = NOW };
    fl_orphans_result_t r;
    REQUIRE(fl_orphans_run(&t->ops, &o, &r) == FL_OK);
    REQUIRE(r.marked == 3);
    t->clock = NOW;              /* restored objects are dated now */
    /* by original location and by path under the location */
    const char *keys[] = { "mem://wh/t/data/orphan-old.parquet", "data/cat=x/orphan-old2.parquet" };
    REQUIRE(fl_orphans_restore(&t->ops, keys, 2, false, &r) == FL_OK);
    CHECK_EQ(r.restored, 2);
    CHECK_EQ(r.restored_bytes, 8);
    CHECK(ofind(t, "mem://wh/t/data/orphan-old.parquet") >= 0);
    CHECK(ofind(t, NC_OLD) < 0);
    CHECK_STR(t->objs[ofind(t, "mem://wh/t/data/orphan-old.parquet")].data.ptr, "old");
    /* a key matching nothing */
    const char *bad[] = { "data/nope.parquet" };
    CHECK(fl_orphans_restore(&t->ops, bad, 1, false, &r) != FL_OK);
    CHECK_EQ(r.restored, 0);
    CHECK(strstr(r.message, "data/nope.parquet") != NULL);
    /* all, dry run then for real */
    REQUIRE(fl_orphans_restore(&t->ops, NULL, 0, true, &r) == FL_OK);
    CHECK_EQ(r.restored, 1);
    CHECK_EQ(live(t, "/.noncurrent/"), 1);
    REQUIRE(fl_orphans_restore(&t->ops, NULL, 0, false, &r) == FL_OK);
    CHECK_EQ(r.restored, 1);
    CHECK_EQ(live(t, "/.noncurrent/"), 0);
    CHECK(ofind(t, "mem://wh/t/metadata/99999-stale.metadata.json") >= 0);

    /* marked twice (restored in between): the newest copy comes back, the original is not
     * overwritten when it exists */
    REQUIRE(fl_orphans_run(&t->ops, &o, &r) == FL_OK);     /* restored objects are young now */
    CHECK_EQ(r.marked, 0);
    o.as_of_ms = NOW + 4 * DAY;
    REQUIRE(fl_orphans_run(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.marked, 4);
    oput_at(t, NC_OLD, "older", 5, NOW);
    const char *one[] = { "data/orphan-old.parquet" };
    REQUIRE(fl_orphans_restore(&t->ops, one, 1, false, &r) == FL_OK);
    CHECK_EQ(r.restored, 1);
    CHECK_STR(t->objs[ofind(t, "mem://wh/t/data/orphan-old.parquet")].data.ptr, "old");
    CHECK(ofind(t, NC_OLD) >= 0);
    CHECK(fl_orphans_restore(&t->ops, &NC_OLD, 1, false, &r) != FL_OK);
    CHECK(strstr(r.message, "exists") != NULL);

    /* a noncurrent object that the table references again comes back by itself */
    o.as_of_ms = NOW + 5 * DAY;
    json_object_set_new(t->md, "partition-statistics",
                        json_pack("[{s:I,s:s,s:i}]", "snapshot-id", (json_int_t)fl_iceberg_current_snapshot_id(t->md),
                                  "statistics-path", "mem://wh/t/data/orphan-young.parquet", "file-size-in-bytes", 5));
    REQUIRE(ofind(t, "mem://wh/t/data/orphan-young.parquet") < 0);
    REQUIRE(fl_orphans_run(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.restored, 1);
    CHECK(ofind(t, "mem://wh/t/data/orphan-young.parquet") >= 0);
    CHECK_EQ(missing_referenced(t, NULL), 0);
    otab_free(t);
    free(t);
}

/* A commit that lands while the job lists and names an old object (a late writer registering
 * files it wrote days ago): the job reloads after the listing and leaves it. */
static void late_commit(otab_t *t)
{
    json_t *ups = json_pack("[{s:s,s:I,s:{s:I,s:s,s:i,s:i,s:[]}}]", "action", "set-statistics", "snapshot-id",
                            (json_int_t)fl_iceberg_current_snapshot_id(t->md), "statistics", "snapshot-id",
                            (json_int_t)fl_iceberg_current_snapshot_id(t->md), "statistics-path",
                            "mem://wh/t/data/orphan-old.parquet", "file-size-in-bytes", 3,
                            "file-footer-size-in-bytes", 3, "blob-metadata");
    json_t *md = NULL;
    int st = 0;
    char err[256];
    ocommit(t, NULL, ups, &md, &st, err, sizeof err);
    if (st != 200) fprintf(stderr, "late commit: %d %s\n", st, err);
    json_decref(ups);
    json_decref(md);
}

FL_TEST(orphans_commit_during_listing)
{
    otab_t *t = malloc(sizeof *t);
    build(t, NULL);
    t->on_list = late_commit;
    fl_orphans_opts_t o = { .as_of_ms = NOW };
    fl_orphans_result_t r;
    REQUIRE(fl_orphans_run(&t->ops, &o, &r) == FL_OK);
    CHECK(t->on_list == NULL);
    CHECK(ofind(t, "mem://wh/t/data/orphan-old.parquet") >= 0);
    CHECK_EQ(r.marked, 2);
    CHECK_EQ(missing_referenced(t, NULL), 0);
    otab_free(t);
    /* an orphan deleted by someone else between listing and moving is no error */
    build(t, NULL);
    t->vanish = "mem://wh/t/data/orphan-old.parquet";
    REQUIRE(fl_orphans_run(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.marked, 2);
    CHECK_EQ(r.errors, 0);
    CHECK_EQ(live(t, "/.noncurrent/"), 2);
    otab_free(t);
    free(t);
}

FL_TEST(orphans_unreadable_manifest_does_nothing)
{
    otab_t *t = malloc(sizeof *t);
    build(t, NULL);
    /* lose a manifest of the oldest snapshot (retained): nothing may be marked */
    json_t *s = json_array_get(json_object_get(t->md, "snapshots"), 0);
    fl_buf_t b;
    fl_buf_init(&b, 0);
    char err[256];
    REQUIRE(oget(t, json_string_value(json_object_get(s, "manifest-list")), &b) == FL_OK);
    fl_manifest_file_t *mfs = NULL;
    size_t n = 0;
    REQUIRE(fl_manifest_list_read(fl_slice(b.ptr, b.len), &mfs, &n, err, sizeof err) == FL_OK);
    char lost[256];
    snprintf(lost, sizeof lost, "%s", mfs[0].manifest_path);
    fl_manifest_files_free(mfs, n);
    fl_buf_free(&b);
    /* keep its bytes: a corrupt manifest is as unreadable as a missing one */
    oput_at(t, lost, "garbage", 7, NOW - 30 * DAY);
    int before = live(t, "mem://wh/t/");
    fl_orphans_opts_t o = { .as_of_ms = NOW + 20 * DAY };
    fl_orphans_result_t r;
    CHECK(fl_orphans_run(&t->ops, &o, &r) != FL_OK);
    CHECK_EQ(r.status, FL_EXPIRE_FAILED);
    CHECK(strstr(r.message, lost) != NULL);
    CHECK(strstr(r.message, "nothing marked or deleted") != NULL);
    CHECK_EQ(t->copies + t->deletes, 0);
    odel(t, lost);
    t->deletes = 0;
    CHECK(fl_orphans_run(&t->ops, &o, &r) != FL_OK);
    CHECK(strstr(r.message, "not found") != NULL);
    CHECK_EQ(t->copies + t->deletes, 0);
    CHECK_EQ(live(t, "mem://wh/t/"), before - 1);
    /* a manifest list likewise */
    otab_free(t);
    build(t, NULL);
    s = json_array_get(json_object_get(t->md, "snapshots"), 1);
    odel(t, json_string_value(json_object_get(s, "manifest-list")));
    t->deletes = 0;
    CHECK(fl_orphans_run(&t->ops, &o, &r) != FL_OK);
    CHECK_EQ(t->copies + t->deletes, 0);
    otab_free(t);
    free(t);
}

FL_TEST(orphans_disabled_and_unsupported)
{
    otab_t *t = malloc(sizeof *t);
    build(t, "{\"gc.enabled\":\"false\"}");
    fl_orphans_opts_t o = { .as_of_ms = NOW + 30 * DAY };
    fl_orphans_result_t r;
    REQUIRE(fl_orphans_run(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.status, FL_EXPIRE_DISABLED);
    CHECK(strstr(r.message, "gc.enabled") != NULL);
    CHECK_EQ(t->copies + t->deletes, 0);
    otab_free(t);
    build(t, NULL);
    t->ops.copy = NULL;
    CHECK(fl_orphans_run(&t->ops, &o, &r) != FL_OK);
    CHECK_EQ(r.status, FL_EXPIRE_FAILED);
    CHECK(strstr(r.message, "cannot copy") != NULL);
    CHECK(fl_orphans_restore(&t->ops, NULL, 0, false, &r) != FL_OK);
    o.dry_run = true;            /* a dry run needs no copy */
    REQUIRE(fl_orphans_run(&t->ops, &o, &r) == FL_OK);
    CHECK_EQ(r.marked, 5);
    t->ops.list = NULL;
    CHECK(fl_orphans_run(&t->ops, &o, &r) != FL_OK);
    CHECK(strstr(r.message, "cannot list") != NULL);
    CHECK_EQ(t->deletes, 0);
    otab_free(t);
    free(t);
}

/* fl_io_copy on the local file system (the S3 side runs in test_maint_unreferenced.py). */
#include "iceberg/io.h"

FL_TEST(io_copy_local)
{
    const char *dir = fl_test_tmpdir();
    char a[512], b[512];
    fl_io_t *io = NULL;
    REQUIRE(fl_io_new(NULL, NULL, &io) == FL_OK);
    fl_remote_error_t re;
    snprintf(a, sizeof a, "file://%s/t/data/a.parquet", dir);
    snprintf(b, sizeof b, "file://%s/t/.noncurrent/5/data/a.parquet", dir);
    REQUIRE(fl_io_put(io, a, "abcdef", 6, &re) == FL_OK);
    REQUIRE(fl_io_copy(io, a, b, &re) == FL_OK);
    fl_buf_t got;
    fl_buf_init(&got, 0);
    REQUIRE(fl_io_get(io, b, &got, &re) == FL_OK);
    CHECK_EQ(got.len, 6);
    CHECK_MEM(got.ptr, "abcdef", 6);
    snprintf(a, sizeof a, "file://%s/t/data/missing", dir);
    CHECK(fl_io_copy(io, a, b, &re) == FL_ERR_NOT_FOUND);
    CHECK(fl_io_copy(io, "s3://bkt/k", b, &re) == FL_ERR_INVALID);
    fl_buf_free(&got);
    fl_io_free(io);
}
