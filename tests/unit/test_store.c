/* Tests for the fs object store (src/store/fs.c): round trips with awkward
 * keys, readers surviving overwrites, listing order and roll-up, multipart
 * rules, conditional writes (also racing), sweeping at open, bucket rules,
 * and a SIGKILLed writer. */
#include "test.h"
#include "store/store.h"
#include "base/buf.h"
#include "base/limits.h"
#include "base/time.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <openssl/evp.h>

static void md5_hex(const void *p, size_t n, char out[33])
{
    unsigned char d[16];
    unsigned int dn = 0;
    EVP_Digest(p, n, d, &dn, EVP_md5(), NULL);
    fl_hex(d, 16, out);
}

static fl_err_t put_bytes(fl_store_t *s, const char *b, const char *k, size_t kn,
                          const void *data, size_t n, const fl_put_cond_t *cond, char *etag_out)
{
    fl_blob_w_t *w;
    fl_err_t e = fl_blob_w_open(s, &w);
    if (e) return e;
    if ((e = fl_blob_w_write(w, data, n))) { fl_blob_w_abort(w); return e; }
    fl_obj_meta_t m = { .size = (int64_t)n, .headers = "content-type: text/plain\n" };
    md5_hex(data, n, m.etag);
    if (etag_out) strcpy(etag_out, m.etag);
    return fl_store_put(s, w, b, k, kn, &m, cond);
}

static fl_err_t put_str(fl_store_t *s, const char *b, const char *k, const char *data)
{
    return put_bytes(s, b, k, strlen(k), data, strlen(data), NULL, NULL);
}

/* Whole object contents (malloc'd, NUL-terminated), reading every segment. */
static char *read_all(const fl_obj_t *o)
{
    char *out = malloc((size_t)o->meta.size + 1);
    size_t at = 0;
    for (size_t i = 0; i < o->nsegs; i++) {
        int64_t off = 0;
        while (off < o->segs[i].len) {
            ssize_t k = pread(o->segs[i].fd, out + at, (size_t)(o->segs[i].len - off), off);
            if (k <= 0) { free(out); return NULL; }
            off += k;
            at += (size_t)k;
        }
    }
    out[at] = 0;
    return out;
}

static char *get_str(fl_store_t *s, const char *b, const char *k, size_t kn, fl_err_t *err)
{
    fl_obj_t *o = NULL;
    *err = fl_store_get(s, b, k, kn, &o);
    if (*err) return NULL;
    char *r = read_all(o);
    fl_obj_close(o);
    return r;
}

static int count_files(const char *dir, const char *sub)
{
    char p[512];
    int n = 0;
    for (int i = -1; i < 256; i++) {
        if (i < 0) snprintf(p, sizeof p, "%s/blobs/tmp", dir);
        else snprintf(p, sizeof p, "%s/blobs/%02x", dir, i);
        if (sub && strcmp(sub, i < 0 ? "tmp" : "shards") != 0) continue;
        DIR *d = opendir(p);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d)))
            if (e->d_name[0] != '.') n++;
        closedir(d);
    }
    return n;
}

/* Blob files in the shards once the reaper has unlinked replaced ones. */
static int shard_files(fl_store_t *s, const char *dir)
{
    if (s) fl_store_drain(s);
    return count_files(dir, "shards");
}

static fl_store_t *open_with_bucket(const char **dir_out)
{
    const char *dir = fl_test_tmpdir();
    static char saved[8][320];
    static int ns;
    char *d = saved[ns++ % 8];
    snprintf(d, 320, "%s/store", dir);
    fl_store_t *s = fl_store_open(d);
    if (s && fl_store_bucket_create(s, "b") != FL_OK) { fl_store_close(s); s = NULL; }
    if (dir_out) *dir_out = d;
    return s;
}

FL_TEST(store_roundtrip_awkward_keys)
{
    fl_store_t *s = open_with_bucket(NULL);
    REQUIRE(s);
    char longkey[FL_S3_MAX_KEY_BYTES + 2];
    memset(longkey, 'k', sizeof longkey);
    longkey[FL_S3_MAX_KEY_BYTES] = 0;
    const char *keys[] = { "a", "a/b", "a//b", "../x", "%2F", "with space", "/lead",
                           "trail/", "..", "ünïcødé/ключ/鍵", "a\\b", "\xff\xfe", longkey };
    size_t nk = sizeof keys / sizeof keys[0];
    for (size_t i = 0; i < nk; i++) {
        char data[64];
        snprintf(data, sizeof data, "value-%zu", i);
        CHECK_EQ(put_str(s, "b", keys[i], data), FL_OK);
    }
    for (size_t i = 0; i < nk; i++) {
        char data[64];
        fl_err_t e;
        snprintf(data, sizeof data, "value-%zu", i);
        char *got = get_str(s, "b", keys[i], strlen(keys[i]), &e);
        CHECK_EQ(e, FL_OK);
        CHECK_STR(got, data);
        free(got);
        fl_obj_meta_t m = { 0 };
        CHECK_EQ(fl_store_head(s, "b", keys[i], strlen(keys[i]), &m), FL_OK);
        CHECK_EQ(m.size, (long long)strlen(data));
        CHECK_EQ(m.parts, 0);
        CHECK_STR(m.headers, "content-type: text/plain\n");
        char want[33];
        md5_hex(data, strlen(data), want);
        CHECK_STR(m.etag, want);
        CHECK(m.mtime_ms > 0);
        fl_obj_meta_free(&m);
    }
    /* "a/" was never written although "a/b" and "a//b" were: no path aliasing. */
    fl_obj_meta_t m = { 0 };
    CHECK_EQ(fl_store_head(s, "b", "a/", 2, &m), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_store_head(s, "b", "x", 1, &m), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_store_head(s, "nob", "a", 1, &m), FL_ERR_NO_BUCKET);
    fl_obj_t *o = NULL;
    CHECK_EQ(fl_store_get(s, "nob", "a", 1, &o), FL_ERR_NO_BUCKET);
    CHECK_EQ(fl_store_get(s, "b", "zz", 2, &o), FL_ERR_NOT_FOUND);
    CHECK(o == NULL);

    /* Key validation. */
    char toolong[FL_S3_MAX_KEY_BYTES + 1];
    memset(toolong, 'k', sizeof toolong);
    CHECK_EQ(put_bytes(s, "b", toolong, sizeof toolong, "x", 1, NULL, NULL), FL_ERR_TOO_LARGE);
    CHECK_EQ(put_bytes(s, "b", "", 0, "x", 1, NULL, NULL), FL_ERR_INVALID);
    CHECK_EQ(put_bytes(s, "b", "a\0b", 3, "x", 1, NULL, NULL), FL_ERR_INVALID);
    CHECK_EQ(put_bytes(s, "nob", "k", 1, "x", 1, NULL, NULL), FL_ERR_NO_BUCKET);

    /* Empty object. */
    CHECK_EQ(put_str(s, "b", "empty", ""), FL_OK);
    CHECK_EQ(fl_store_get(s, "b", "empty", 5, &o), FL_OK);
    CHECK_EQ(o->nsegs, 0);
    CHECK_EQ(o->meta.size, 0);
    CHECK_STR(o->meta.etag, "d41d8cd98f00b204e9800998ecf8427e");
    fl_obj_close(o);

    /* Delete everything: blobs are all gone. */
    for (size_t i = 0; i < nk; i++) CHECK_EQ(fl_store_delete(s, "b", keys[i], strlen(keys[i]), NULL), FL_OK);
    CHECK_EQ(fl_store_delete(s, "b", "empty", 5, NULL), FL_OK);
    CHECK_EQ(fl_store_delete(s, "b", "empty", 5, NULL), FL_OK); /* missing: still OK */
    CHECK_EQ(fl_store_delete(s, "nob", "empty", 5, NULL), FL_ERR_NO_BUCKET);
    CHECK_EQ(fl_store_head(s, "b", "a", 1, &m), FL_ERR_NOT_FOUND);
    fl_store_close(s);
}

FL_TEST(store_put_meta_mismatch)
{
    fl_store_t *s = open_with_bucket(NULL);
    REQUIRE(s);
    fl_blob_w_t *w;
    REQUIRE(fl_blob_w_open(s, &w) == FL_OK);
    CHECK_EQ(fl_blob_w_write(w, "abc", 3), FL_OK);
    CHECK_EQ(fl_blob_w_size(w), 3);
    fl_obj_meta_t m = { .size = 4, .etag = "x" };
    CHECK_EQ(fl_store_put(s, w, "b", "k", 1, &m, NULL), FL_ERR_INVALID);
    fl_blob_w_abort(NULL);
    fl_store_close(s);
}

FL_TEST(store_overwrite_keeps_open_reader)
{
    const char *dir;
    fl_store_t *s = open_with_bucket(&dir);
    REQUIRE(s);
    fl_obj_t *o1 = NULL, *o2 = NULL;
    CHECK_EQ(put_str(s, "b", "k", "first version"), FL_OK);
    REQUIRE(fl_store_get(s, "b", "k", 1, &o1) == FL_OK);
    CHECK_EQ(put_str(s, "b", "k", "second"), FL_OK);
    CHECK_EQ(shard_files(s, dir), 1); /* old blob unlinked */
    char *r = read_all(o1);
    CHECK_STR(r, "first version");
    free(r);
    REQUIRE(fl_store_get(s, "b", "k", 1, &o2) == FL_OK);
    CHECK_EQ(fl_store_delete(s, "b", "k", 1, NULL), FL_OK);
    CHECK_EQ(shard_files(s, dir), 0);
    r = read_all(o2);
    CHECK_STR(r, "second");
    free(r);
    fl_obj_close(o1);
    fl_obj_close(o2);
    fl_store_close(s);
}

FL_TEST(store_copy_fd)
{
    fl_store_t *s = open_with_bucket(NULL);
    REQUIRE(s);
    char path[400];
    snprintf(path, sizeof path, "%s/src", fl_test_tmpdir());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    char big[200000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + i % 26);
    REQUIRE(write(fd, big, sizeof big) == (ssize_t)sizeof big);
    fl_blob_w_t *w;
    REQUIRE(fl_blob_w_open(s, &w) == FL_OK);
    CHECK_EQ(fl_blob_w_write(w, "hdr", 3), FL_OK);
    CHECK_EQ(fl_blob_w_copy_fd(w, fd, 1000, 150000), FL_OK);
    CHECK_EQ(fl_blob_w_size(w), 150003);
    CHECK_EQ(fl_blob_w_copy_fd(w, fd, 199990, 100), FL_ERR_IO); /* past EOF */
    fl_blob_w_abort(w);
    /* a good copy, published */
    REQUIRE(fl_blob_w_open(s, &w) == FL_OK);
    CHECK_EQ(fl_blob_w_copy_fd(w, fd, 1000, 150000), FL_OK);
    fl_obj_meta_t m = { .size = 150000 };
    md5_hex(big + 1000, 150000, m.etag);
    CHECK_EQ(fl_store_put(s, w, "b", "copy", 4, &m, NULL), FL_OK);
    fl_obj_t *o;
    REQUIRE(fl_store_get(s, "b", "copy", 4, &o) == FL_OK);
    char *r = read_all(o);
    REQUIRE(r);
    CHECK_MEM(r, big + 1000, 150000);
    free(r);
    fl_obj_close(o);
    close(fd);
    fl_store_close(s);
}

/* Renders a listing as "k1 k2 P:p1 | next" for compact checks (keys and
 * prefixes merged in order). */
static void list_str(fl_store_t *s, const char *prefix, const char *delim, const char *after,
                     int max, char *out, size_t n)
{
    fl_list_res_t r;
    fl_err_t e = fl_store_list(s, "b", prefix, delim, after, max, &r);
    if (e) { snprintf(out, n, "ERR %d", e); return; }
    size_t i = 0, j = 0, at = 0;
    out[0] = 0;
    while (i < r.nents || j < r.nprefixes) {
        bool take_key = j == r.nprefixes ||
                        (i < r.nents && strcmp(r.ents[i].key, r.prefixes[j]) < 0);
        at += (size_t)snprintf(out + at, n - at, "%s%s%s", at ? " " : "", take_key ? "" : "P:",
                               take_key ? r.ents[i++].key : r.prefixes[j++]);
    }
    if (r.truncated) snprintf(out + at, n - at, " | %s", r.next_after);
    fl_list_res_free(&r);
}

FL_TEST(store_list_order_and_rollup)
{
    fl_store_t *s = open_with_bucket(NULL);
    REQUIRE(s);
    const char *keys[] = { "a", "a/b", "a-b", "a0", "a/c/d", "a//x", "b/1", "b/2", "c",
                           "é", "z--y--w", "z--q", "z-", "pre/x/1", "pre/x/2", "pre/y", "pre/z/3" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        CHECK_EQ(put_str(s, "b", keys[i], keys[i]), FL_OK);
    char out[1024];

    list_str(s, NULL, NULL, NULL, 1000, out, sizeof out);
    CHECK_STR(out, "a a-b a//x a/b a/c/d a0 b/1 b/2 c pre/x/1 pre/x/2 pre/y pre/z/3 z- z--q z--y--w é");
    list_str(s, "", "/", NULL, 1000, out, sizeof out);
    CHECK_STR(out, "a a-b P:a/ a0 P:b/ c P:pre/ z- z--q z--y--w é");
    list_str(s, "a/", "/", NULL, 1000, out, sizeof out);
    CHECK_STR(out, "P:a// a/b P:a/c/");
    list_str(s, "a", NULL, NULL, 1000, out, sizeof out);
    CHECK_STR(out, "a a-b a//x a/b a/c/d a0");
    list_str(s, "pre/", "/", NULL, 1000, out, sizeof out);
    CHECK_STR(out, "P:pre/x/ pre/y P:pre/z/");
    list_str(s, "nomatch", "/", NULL, 1000, out, sizeof out);
    CHECK_STR(out, "");
    /* Multi-character delimiter. */
    list_str(s, "z", "--", NULL, 1000, out, sizeof out);
    CHECK_STR(out, "z- P:z--");
    /* start_after is exclusive and may be any string. */
    list_str(s, NULL, NULL, "a0", 1000, out, sizeof out);
    CHECK_STR(out, "b/1 b/2 c pre/x/1 pre/x/2 pre/y pre/z/3 z- z--q z--y--w é");
    list_str(s, NULL, NULL, "a00", 3, out, sizeof out);
    CHECK_STR(out, "b/1 b/2 c | c");
    list_str(s, "pre/", NULL, "a", 2, out, sizeof out);
    CHECK_STR(out, "pre/x/1 pre/x/2 | pre/x/2");
    list_str(s, "pre/", NULL, "zzz", 2, out, sizeof out);
    CHECK_STR(out, "");
    /* Exactly max_keys left: not truncated. */
    list_str(s, "b/", "/", NULL, 2, out, sizeof out);
    CHECK_STR(out, "b/1 b/2");
    list_str(s, "", "/", NULL, 0, out, sizeof out);
    CHECK_STR(out, "");
    list_str(s, "", "/", NULL, 3, out, sizeof out);
    CHECK_STR(out, "a a-b P:a/ | a/");
    /* Continuing from a common prefix skips the whole group. */
    list_str(s, "", "/", "a/", 2, out, sizeof out);
    CHECK_STR(out, "a0 P:b/ | b/");
    fl_list_res_t r;
    CHECK_EQ(fl_store_list(s, "nob", NULL, NULL, NULL, 10, &r), FL_ERR_NO_BUCKET);
    fl_store_close(s);
}

FL_TEST(store_list_pagination)
{
    fl_store_t *s = open_with_bucket(NULL);
    REQUIRE(s);
    /* 300 keys under each of d0/..d4/ plus top-level keys between them. */
    char key[64];
    for (int d = 0; d < 5; d++) {
        for (int i = 0; i < 300; i++) {
            snprintf(key, sizeof key, "d%d/%04d", d, i);
            CHECK_EQ(put_str(s, "b", key, "x"), FL_OK);
        }
        snprintf(key, sizeof key, "d%d-top", d);
        CHECK_EQ(put_str(s, "b", key, "x"), FL_OK);
    }
    const char *want[] = { "d0-top", "d0/", "d1-top", "d1/", "d2-top", "d2/",
                           "d3-top", "d3/", "d4-top", "d4/" };
    for (int page = 1; page <= 4; page++) {
        char *after = NULL;
        size_t got = 0;
        int calls = 0;
        for (;;) {
            fl_list_res_t r;
            REQUIRE(fl_store_list(s, "b", "", "/", after, page, &r) == FL_OK);
            calls++;
            CHECK(r.nents + r.nprefixes <= (size_t)page);
            for (size_t i = 0, j = 0; i < r.nents || j < r.nprefixes;) {
                bool tk = j == r.nprefixes || (i < r.nents && strcmp(r.ents[i].key, r.prefixes[j]) < 0);
                const char *item = tk ? r.ents[i++].key : r.prefixes[j++];
                if (got < 10) CHECK_STR(item, want[got]);
                got++;
            }
            free(after);
            after = r.truncated ? strdup(r.next_after) : NULL;
            fl_list_res_free(&r);
            if (!after) break;
            REQUIRE(calls < 50);
        }
        CHECK_EQ(got, 10);
    }
    /* Without delimiter: all 1505 keys, pages of 1000. */
    fl_list_res_t r;
    REQUIRE(fl_store_list(s, "b", NULL, NULL, NULL, 1000, &r) == FL_OK);
    CHECK_EQ(r.nents, 1000);
    CHECK(r.truncated);
    char *after = strdup(r.next_after);
    CHECK_STR(after, r.ents[999].key);
    fl_list_res_free(&r);
    REQUIRE(fl_store_list(s, "b", NULL, NULL, after, 1000, &r) == FL_OK);
    CHECK_EQ(r.nents, 505);
    CHECK(!r.truncated);
    CHECK(r.next_after == NULL);
    CHECK_EQ(r.ents[0].size, 1);
    CHECK_STR(r.ents[0].etag, "9dd4e461268c8034f5c8564e155c67a6");
    free(after);
    fl_list_res_free(&r);
    fl_store_close(s);
}

static void part_blob(fl_store_t *s, const char *k, const char *upload, int n, const char *data,
                      char etag[33], fl_err_t *err)
{
    fl_blob_w_t *w;
    *err = fl_blob_w_open(s, &w);
    if (*err) return;
    fl_blob_w_write(w, data, strlen(data));
    md5_hex(data, strlen(data), etag);
    *err = fl_store_mpu_put_part(s, "b", k, strlen(k), upload, n, w, etag, "x-amz-checksum-crc32: AAAA\n");
}

FL_TEST(store_multipart_happy)
{
    const char *dir;
    fl_store_t *s = open_with_bucket(&dir);
    REQUIRE(s);
    char up[FL_STORE_UPLOAD_ID_MAX + 1], e1[33], e2[33], e3[33], e2b[33];
    fl_err_t e;
    REQUIRE(fl_store_mpu_create(s, "b", "mp/obj", 6, "content-type: a/b\n", up) == FL_OK);
    CHECK(strlen(up) > 0 && strlen(up) <= 64);
    part_blob(s, "mp/obj", up, 1, "11111", e1, &e); CHECK_EQ(e, FL_OK);
    part_blob(s, "mp/obj", up, 2, "22222", e2, &e); CHECK_EQ(e, FL_OK);
    part_blob(s, "mp/obj", up, 2, "2222X", e2b, &e); CHECK_EQ(e, FL_OK); /* replaces part 2 */
    part_blob(s, "mp/obj", up, 3, "33", e3, &e); CHECK_EQ(e, FL_OK);
    part_blob(s, "mp/obj", up, 4, "44444", e3 + 0, &e); CHECK_EQ(e, FL_OK);
    md5_hex("33", 2, e3);
    CHECK_EQ(shard_files(s, dir), 4);

    fl_part_info_t *pi;
    size_t np;
    bool trunc;
    char *uh = NULL;
    REQUIRE(fl_store_mpu_parts(s, "b", "mp/obj", 6, up, 0, 2, &pi, &np, &trunc, &uh) == FL_OK);
    CHECK_EQ(np, 2);
    CHECK(trunc);
    CHECK_EQ(pi[0].number, 1);
    CHECK_STR(pi[1].etag, e2b);
    CHECK_EQ(pi[1].size, 5);
    CHECK_STR(pi[1].headers, "x-amz-checksum-crc32: AAAA\n");
    CHECK_STR(uh, "content-type: a/b\n");
    free(uh);
    fl_part_infos_free(pi, np);
    REQUIRE(fl_store_mpu_parts(s, "b", "mp/obj", 6, up, 2, 100, &pi, &np, &trunc, NULL) == FL_OK);
    CHECK_EQ(np, 2);
    CHECK(!trunc);
    CHECK_EQ(pi[0].number, 3);
    fl_part_infos_free(pi, np);

    /* Complete with parts 1, 2 and 4 (3 is left out and discarded); quoted etags ok. */
    char q2[40];
    snprintf(q2, sizeof q2, "\"%s\"", e2b);
    char e4[33];
    md5_hex("44444", 5, e4);
    fl_part_ref_t refs[] = { { 1, e1 }, { 2, q2 }, { 4, e4 } };
    fl_obj_meta_t m;
    CHECK_EQ(fl_store_mpu_complete(s, "b", "mp/obj", 6, up, refs, 3, 5, NULL, NULL, &m), FL_OK);
    /* Expected ETag: md5 of the binary part md5s, "-3". */
    unsigned char cat[48];
    const char *hexes[] = { e1, e2b, e4 };
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 16; j++) {
            unsigned v;
            sscanf(hexes[i] + 2 * j, "%2x", &v);
            cat[i * 16 + j] = (unsigned char)v;
        }
    char want[40];
    md5_hex(cat, sizeof cat, want);
    strcat(want, "-3");
    CHECK_STR(m.etag, want);
    CHECK_EQ(m.size, 15);
    CHECK_EQ(m.parts, 3);
    CHECK_STR(m.headers, "content-type: a/b\n");
    fl_obj_meta_free(&m);
    CHECK_EQ(shard_files(s, dir), 3);

    fl_obj_t *o;
    REQUIRE(fl_store_get(s, "b", "mp/obj", 6, &o) == FL_OK);
    CHECK_EQ(o->nsegs, 3);
    CHECK_EQ(o->part_sizes[2], 5);
    CHECK_EQ(o->meta.parts, 3);
    CHECK_STR(o->meta.etag, want);
    char *r = read_all(o);
    CHECK_STR(r, "111112222X44444");
    free(r);
    fl_obj_close(o);
    CHECK_EQ(fl_store_mpu_parts(s, "b", "mp/obj", 6, up, 0, 10, &pi, &np, &trunc, NULL),
             FL_ERR_NO_UPLOAD);

    /* Final headers override; overwriting a multipart object unlinks all parts. */
    REQUIRE(fl_store_mpu_create(s, "b", "mp/obj", 6, "h1", up) == FL_OK);
    part_blob(s, "mp/obj", up, 1, "abc", e1, &e);
    fl_part_ref_t one[] = { { 1, e1 } };
    CHECK_EQ(fl_store_mpu_complete(s, "b", "mp/obj", 6, up, one, 1, 5, "h2", NULL, NULL), FL_OK);
    CHECK_EQ(fl_store_head(s, "b", "mp/obj", 6, &m), FL_OK);
    CHECK_STR(m.headers, "h2");
    CHECK_EQ(m.parts, 1);
    fl_obj_meta_free(&m);
    CHECK_EQ(shard_files(s, dir), 1);
    CHECK_EQ(put_str(s, "b", "mp/obj", "plain"), FL_OK);
    CHECK_EQ(shard_files(s, dir), 1);
    fl_store_close(s);
}

FL_TEST(store_multipart_errors)
{
    const char *dir;
    fl_store_t *s = open_with_bucket(&dir);
    REQUIRE(s);
    char up[FL_STORE_UPLOAD_ID_MAX + 1], e1[33], e2[33], e3[33];
    fl_err_t e;
    REQUIRE(fl_store_mpu_create(s, "b", "k", 1, NULL, up) == FL_OK);
    part_blob(s, "k", up, 1, "small", e1, &e); CHECK_EQ(e, FL_OK);
    part_blob(s, "k", up, 2, "big-enough-part", e2, &e); CHECK_EQ(e, FL_OK);
    part_blob(s, "k", up, 3, "last", e3, &e); CHECK_EQ(e, FL_OK);

    CHECK_EQ(fl_store_mpu_complete(s, "b", "k", 1, up, NULL, 0, 10, NULL, NULL, NULL), FL_ERR_INVALID);
    fl_part_ref_t order[] = { { 2, e2 }, { 1, e1 } };
    CHECK_EQ(fl_store_mpu_complete(s, "b", "k", 1, up, order, 2, 1, NULL, NULL, NULL), FL_ERR_PART_ORDER);
    fl_part_ref_t dup[] = { { 1, e1 }, { 1, e1 } };
    CHECK_EQ(fl_store_mpu_complete(s, "b", "k", 1, up, dup, 2, 1, NULL, NULL, NULL), FL_ERR_PART_ORDER);
    fl_part_ref_t missing[] = { { 1, e1 }, { 5, e3 } };
    CHECK_EQ(fl_store_mpu_complete(s, "b", "k", 1, up, missing, 2, 1, NULL, NULL, NULL), FL_ERR_INVALID_PART);
    fl_part_ref_t badtag[] = { { 1, e2 } };
    CHECK_EQ(fl_store_mpu_complete(s, "b", "k", 1, up, badtag, 1, 1, NULL, NULL, NULL), FL_ERR_INVALID_PART);
    fl_part_ref_t small[] = { { 1, e1 }, { 2, e2 }, { 3, e3 } };
    CHECK_EQ(fl_store_mpu_complete(s, "b", "k", 1, up, small, 3, 10, NULL, NULL, NULL), FL_ERR_TOO_SMALL);
    CHECK_EQ(fl_store_mpu_complete(s, "b", "k", 1, "nosuch", small, 3, 1, NULL, NULL, NULL), FL_ERR_NO_UPLOAD);
    CHECK_EQ(fl_store_mpu_complete(s, "b", "other", 5, up, small, 3, 1, NULL, NULL, NULL), FL_ERR_NO_UPLOAD);
    CHECK_EQ(fl_store_mpu_complete(s, "nob", "k", 1, up, small, 3, 1, NULL, NULL, NULL), FL_ERR_NO_BUCKET);
    /* The last part may be small; failures left the upload intact. */
    fl_part_ref_t ok[] = { { 2, e2 }, { 3, e3 } };
    fl_put_cond_t inm = { .if_none_match_star = true };
    CHECK_EQ(put_str(s, "b", "k", "exists"), FL_OK);
    CHECK_EQ(fl_store_mpu_complete(s, "b", "k", 1, up, ok, 2, 10, NULL, &inm, NULL), FL_ERR_PRECONDITION);
    CHECK_EQ(fl_store_mpu_complete(s, "b", "k", 1, up, ok, 2, 10, NULL, NULL, NULL), FL_OK);
    fl_obj_meta_t m;
    CHECK_EQ(fl_store_head(s, "b", "k", 1, &m), FL_OK);
    CHECK_EQ(m.size, 19);
    fl_obj_meta_free(&m);
    CHECK_EQ(shard_files(s, dir), 2);
    CHECK_EQ(fl_store_mpu_complete(s, "b", "k", 1, up, ok, 2, 10, NULL, NULL, NULL), FL_ERR_NO_UPLOAD);

    /* Bad part arguments, unknown uploads. */
    fl_blob_w_t *w;
    REQUIRE(fl_store_mpu_create(s, "b", "k", 1, NULL, up) == FL_OK);
    REQUIRE(fl_blob_w_open(s, &w) == FL_OK);
    CHECK_EQ(fl_store_mpu_put_part(s, "b", "k", 1, up, 0, w, e1, NULL), FL_ERR_INVALID);
    REQUIRE(fl_blob_w_open(s, &w) == FL_OK);
    CHECK_EQ(fl_store_mpu_put_part(s, "b", "k", 1, up, 10001, w, e1, NULL), FL_ERR_INVALID);
    REQUIRE(fl_blob_w_open(s, &w) == FL_OK);
    CHECK_EQ(fl_store_mpu_put_part(s, "b", "k", 1, up, 1, w, "nothex", NULL), FL_ERR_INVALID);
    REQUIRE(fl_blob_w_open(s, &w) == FL_OK);
    CHECK_EQ(fl_store_mpu_put_part(s, "b", "k", 1, "nosuch", 1, w, e1, NULL), FL_ERR_NO_UPLOAD);
    REQUIRE(fl_blob_w_open(s, &w) == FL_OK);
    CHECK_EQ(fl_store_mpu_put_part(s, "b", "x", 1, up, 1, w, e1, NULL), FL_ERR_NO_UPLOAD);
    CHECK_EQ(count_files(dir, "tmp"), 0);
    CHECK_EQ(shard_files(s, dir), 2);
    char nu[FL_STORE_UPLOAD_ID_MAX + 1];
    CHECK_EQ(fl_store_mpu_create(s, "nob", "k", 1, NULL, nu), FL_ERR_NO_BUCKET);

    /* Abort removes parts. */
    part_blob(s, "k", up, 1, "p1", e1, &e); CHECK_EQ(e, FL_OK);
    part_blob(s, "k", up, 2, "p2", e2, &e); CHECK_EQ(e, FL_OK);
    CHECK_EQ(shard_files(s, dir), 4);
    CHECK_EQ(fl_store_mpu_abort(s, "b", "x", 1, up), FL_ERR_NO_UPLOAD);
    CHECK_EQ(fl_store_mpu_abort(s, "b", "k", 1, up), FL_OK);
    CHECK_EQ(fl_store_mpu_abort(s, "b", "k", 1, up), FL_ERR_NO_UPLOAD);
    CHECK_EQ(shard_files(s, dir), 2);
    part_blob(s, "k", up, 3, "p3", e3, &e); CHECK_EQ(e, FL_ERR_NO_UPLOAD);
    CHECK_EQ(shard_files(s, dir), 2);
    fl_store_close(s);
}

FL_TEST(store_multipart_list)
{
    fl_store_t *s = open_with_bucket(NULL);
    REQUIRE(s);
    char u[5][FL_STORE_UPLOAD_ID_MAX + 1];
    REQUIRE(fl_store_mpu_create(s, "b", "a/1", 3, NULL, u[0]) == FL_OK);
    REQUIRE(fl_store_mpu_create(s, "b", "a/2", 3, NULL, u[1]) == FL_OK);
    usleep(2000);
    REQUIRE(fl_store_mpu_create(s, "b", "a/2", 3, NULL, u[2]) == FL_OK);
    REQUIRE(fl_store_mpu_create(s, "b", "b/1", 3, NULL, u[3]) == FL_OK);
    fl_upload_info_t *v;
    size_t n;
    bool trunc;
    REQUIRE(fl_store_mpu_list(s, "b", "a/", NULL, NULL, 100, &v, &n, &trunc) == FL_OK);
    CHECK_EQ(n, 3);
    CHECK(!trunc);
    CHECK_STR(v[0].key, "a/1");
    CHECK_STR(v[1].upload_id, u[1]);
    CHECK_STR(v[2].upload_id, u[2]);
    fl_upload_infos_free(v, n);
    REQUIRE(fl_store_mpu_list(s, "b", NULL, "a/2", u[1], 1, &v, &n, &trunc) == FL_OK);
    CHECK_EQ(n, 1);
    CHECK(trunc);
    CHECK_STR(v[0].upload_id, u[2]);
    fl_upload_infos_free(v, n);
    REQUIRE(fl_store_mpu_list(s, "b", NULL, "a/2", NULL, 10, &v, &n, &trunc) == FL_OK);
    CHECK_EQ(n, 1);
    CHECK_STR(v[0].key, "b/1");
    CHECK_EQ(v[0].keylen, 3);
    fl_upload_infos_free(v, n);
    CHECK_EQ(fl_store_mpu_list(s, "nob", NULL, NULL, NULL, 10, &v, &n, &trunc), FL_ERR_NO_BUCKET);
    fl_store_close(s);
}

FL_TEST(store_conditional_writes)
{
    fl_store_t *s = open_with_bucket(NULL);
    REQUIRE(s);
    char tag[33], tag2[33], quoted[40];
    fl_put_cond_t inm = { .if_none_match_star = true };
    CHECK_EQ(put_bytes(s, "b", "k", 1, "one", 3, &inm, tag), FL_OK);
    CHECK_EQ(put_bytes(s, "b", "k", 1, "two", 3, &inm, NULL), FL_ERR_PRECONDITION);
    fl_put_cond_t im = { .if_match = "0123456789abcdef0123456789abcdef" };
    CHECK_EQ(put_bytes(s, "b", "k", 1, "two", 3, &im, NULL), FL_ERR_PRECONDITION);
    CHECK_EQ(put_bytes(s, "b", "missing", 7, "two", 3, &im, NULL), FL_ERR_NOT_FOUND);
    fl_put_cond_t star = { .if_match = "*" };
    CHECK_EQ(put_bytes(s, "b", "missing", 7, "two", 3, &star, NULL), FL_ERR_NOT_FOUND);
    snprintf(quoted, sizeof quoted, "\"%s\"", tag);
    im.if_match = quoted;
    CHECK_EQ(put_bytes(s, "b", "k", 1, "two", 3, &im, tag2), FL_OK);
    CHECK_EQ(put_bytes(s, "b", "k", 1, "three", 5, &im, NULL), FL_ERR_PRECONDITION); /* stale etag */
    CHECK_EQ(put_bytes(s, "b", "k", 1, "three", 5, &star, NULL), FL_OK);
    fl_err_t e;
    char *got = get_str(s, "b", "k", 1, &e);
    CHECK_STR(got, "three");
    free(got);
    /* Delete with If-Match. */
    CHECK_EQ(fl_store_delete(s, "b", "k", 1, &im), FL_ERR_PRECONDITION);
    CHECK_EQ(fl_store_delete(s, "b", "nope", 4, &im), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_store_delete(s, "b", "k", 1, &star), FL_OK);
    CHECK_EQ(fl_store_delete(s, "b", "k", 1, NULL), FL_OK);
    fl_store_close(s);
}

typedef struct race_arg {
    fl_store_t *s;
    const char *key;
    int id;
    pthread_barrier_t *bar;
    fl_err_t result;
} race_arg_t;

static void *race_put(void *p)
{
    race_arg_t *a = p;
    char data[32];
    snprintf(data, sizeof data, "writer-%d", a->id);
    fl_blob_w_t *w;
    a->result = fl_blob_w_open(a->s, &w);
    if (a->result) return NULL;
    fl_blob_w_write(w, data, strlen(data));
    fl_obj_meta_t m = { .size = (int64_t)strlen(data) };
    md5_hex(data, strlen(data), m.etag);
    fl_put_cond_t c = { .if_none_match_star = true };
    pthread_barrier_wait(a->bar);
    a->result = fl_store_put(a->s, w, "b", a->key, strlen(a->key), &m, &c);
    return NULL;
}

FL_TEST(store_conditional_race)
{
    const char *dir;
    fl_store_t *s = open_with_bucket(&dir);
    REQUIRE(s);
    enum { T = 8, ROUNDS = 10 };
    for (int round = 0; round < ROUNDS; round++) {
        char key[32];
        snprintf(key, sizeof key, "race/%d", round);
        pthread_t th[T];
        race_arg_t args[T];
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, T);
        for (int i = 0; i < T; i++) {
            args[i] = (race_arg_t){ s, key, i, &bar, FL_ERR_IO };
            pthread_create(&th[i], NULL, race_put, &args[i]);
        }
        int wins = 0, fails = 0, winner = -1;
        for (int i = 0; i < T; i++) {
            pthread_join(th[i], NULL);
            if (args[i].result == FL_OK) { wins++; winner = i; }
            else if (args[i].result == FL_ERR_PRECONDITION) fails++;
        }
        pthread_barrier_destroy(&bar);
        CHECK_EQ(wins, 1);
        CHECK_EQ(fails, T - 1);
        fl_err_t e;
        char want[32];
        snprintf(want, sizeof want, "writer-%d", winner);
        char *got = get_str(s, "b", key, strlen(key), &e);
        CHECK_STR(got, want);
        free(got);
    }
    CHECK_EQ(shard_files(s, dir), ROUNDS);
    CHECK_EQ(count_files(dir, "tmp"), 0);
    fl_store_close(s);
}

/* Group commit: PUTs that meet in one batch keep their own results. Each
 * round, at a barrier: fresh keys (ok), If-None-Match: * on an existing key
 * (precondition), a missing bucket (no bucket) and two writers of one key
 * (both ok, one wins). */
typedef struct gc_arg {
    fl_store_t *s;
    int id, round;
    pthread_barrier_t *bar;
    fl_err_t result;
} gc_arg_t;

static void *gc_put(void *p)
{
    gc_arg_t *a = p;
    char key[48], data[96];
    const char *bucket = "b";
    fl_put_cond_t star = { .if_none_match_star = true }, *cond = NULL;
    switch (a->id % 4) {
    case 0: case 1: snprintf(key, sizeof key, "gc/%d/%d", a->round, a->id); break;
    case 2: snprintf(key, sizeof key, "gc/exists"); cond = &star; break;
    default: snprintf(key, sizeof key, "gc/%d/%d", a->round, a->id); bucket = "nobucket"; break;
    }
    if (a->id == 5) snprintf(key, sizeof key, "gc/%d/%d", a->round, 4); /* same key as id 4 */
    snprintf(data, sizeof data, "%s#%d", key, a->id);
    fl_blob_w_t *w;
    a->result = fl_blob_w_open(a->s, &w);
    if (a->result) return NULL;
    fl_blob_w_write(w, data, strlen(data));
    fl_obj_meta_t m = { .size = (int64_t)strlen(data) };
    md5_hex(data, strlen(data), m.etag);
    pthread_barrier_wait(a->bar);
    a->result = fl_store_put(a->s, w, bucket, key, strlen(key), &m, cond);
    return NULL;
}

FL_TEST(store_group_commit_mixed_results)
{
    const char *dir;
    fl_store_t *s = open_with_bucket(&dir);
    REQUIRE(s);
    REQUIRE(put_str(s, "b", "gc/exists", "first") == FL_OK);
    enum { T = 16, ROUNDS = 8 };
    for (int round = 0; round < ROUNDS; round++) {
        pthread_t th[T];
        gc_arg_t args[T];
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, T);
        for (int i = 0; i < T; i++) {
            args[i] = (gc_arg_t){ s, i, round, &bar, FL_ERR_IO };
            pthread_create(&th[i], NULL, gc_put, &args[i]);
        }
        for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
        pthread_barrier_destroy(&bar);
        for (int i = 0; i < T; i++) {
            fl_err_t want = i % 4 == 2 ? FL_ERR_PRECONDITION : i % 4 == 3 ? FL_ERR_NO_BUCKET : FL_OK;
            CHECK_EQ(args[i].result, want);
            if (want || i == 4 || i == 5) continue;
            char key[48], data[96];
            snprintf(key, sizeof key, "gc/%d/%d", round, i);
            snprintf(data, sizeof data, "%s#%d", key, i);
            fl_err_t e;
            char *got = get_str(s, "b", key, strlen(key), &e);
            CHECK_STR(got, data);
            free(got);
        }
        char key[48], d4[64], d5[64];
        snprintf(key, sizeof key, "gc/%d/4", round);
        snprintf(d4, sizeof d4, "%s#4", key);
        snprintf(d5, sizeof d5, "%s#5", key);
        fl_err_t e;
        char *got = get_str(s, "b", key, strlen(key), &e);
        CHECK(got && (!strcmp(got, d4) || !strcmp(got, d5)));
        free(got);
    }
    fl_err_t e;
    char *got = get_str(s, "b", "gc/exists", 9, &e);
    CHECK_STR(got, "first");
    free(got);
    fl_store_drain(s);
    /* per round: ids 0, 1, 4/5 (one survives), 8, 9, 12, 13 -> 7 blobs, plus gc/exists */
    CHECK_EQ(shard_files(s, dir), ROUNDS * 7 + 1);
    CHECK_EQ(count_files(dir, "tmp"), 0);
    fl_store_close(s);
}

typedef struct churn_arg {
    fl_store_t *s;
    int id;
    int bad;
    volatile int *stop;
} churn_arg_t;

/* Writers overwrite one key with uniform contents; readers check every read
 * is one whole version (never torn, never failing). */
static void *churn(void *p)
{
    churn_arg_t *a = p;
    char buf[4096];
    for (int i = 0; i < 300 && !*a->stop; i++) {
        if (a->id < 2) {
            memset(buf, 'a' + (a->id * 300 + i) % 26, sizeof buf);
            if (put_bytes(a->s, "b", "hot", 3, buf, sizeof buf, NULL, NULL) != FL_OK) a->bad++;
        } else {
            fl_obj_t *o;
            fl_err_t e = fl_store_get(a->s, "b", "hot", 3, &o);
            if (e) { a->bad++; continue; }
            char *r = read_all(o);
            if (!r || o->meta.size != 4096) a->bad++;
            else for (int j = 1; j < 4096; j++) if (r[j] != r[0]) { a->bad++; break; }
            free(r);
            fl_obj_close(o);
        }
    }
    return NULL;
}

FL_TEST(store_concurrent_overwrite_and_read)
{
    const char *dir;
    fl_store_t *s = open_with_bucket(&dir);
    REQUIRE(s);
    char buf[4096];
    memset(buf, 'z', sizeof buf);
    REQUIRE(put_bytes(s, "b", "hot", 3, buf, sizeof buf, NULL, NULL) == FL_OK);
    enum { T = 6 };
    pthread_t th[T];
    churn_arg_t args[T];
    volatile int stop = 0;
    for (int i = 0; i < T; i++) {
        args[i] = (churn_arg_t){ s, i, 0, &stop };
        pthread_create(&th[i], NULL, churn, &args[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ(args[i].bad, 0);
    }
    CHECK_EQ(shard_files(s, dir), 1);
    fl_store_close(s);
}

FL_TEST(store_sweep_on_open)
{
    const char *dir;
    fl_store_t *s = open_with_bucket(&dir);
    REQUIRE(s);
    CHECK_EQ(put_str(s, "b", "keep", "kept"), FL_OK);
    char up[FL_STORE_UPLOAD_ID_MAX + 1], e1[33];
    fl_err_t e;
    REQUIRE(fl_store_mpu_create(s, "b", "mp", 2, NULL, up) == FL_OK);
    part_blob(s, "mp", up, 1, "part", e1, &e);
    CHECK_EQ(e, FL_OK);
    fl_store_close(s);

    /* Leftovers: temp files (as if the process died mid-upload) and an orphan
     * blob in a shard; a stray non-blob file stays. */
    char p[512];
    snprintf(p, sizeof p, "%s/blobs/tmp/0123456789abcdef0123456789abcdef", dir);
    close(open(p, O_CREAT | O_WRONLY, 0644));
    snprintf(p, sizeof p, "%s/blobs/tmp/junk", dir);
    close(open(p, O_CREAT | O_WRONLY, 0644));
    snprintf(p, sizeof p, "%s/blobs/ab/ab000000000000000000000000000000", dir);
    close(open(p, O_CREAT | O_WRONLY, 0644));
    snprintf(p, sizeof p, "%s/blobs/ab/README", dir);
    close(open(p, O_CREAT | O_WRONLY, 0644));
    CHECK_EQ(count_files(dir, "tmp"), 2);
    CHECK_EQ(shard_files(NULL, dir), 4);

    s = fl_store_open(dir);
    REQUIRE(s);
    CHECK(fl_store_open(dir) == NULL); /* one opener at a time */
    CHECK_EQ(count_files(dir, "tmp"), 0);
    CHECK_EQ(shard_files(s, dir), 3); /* keep, the part, README */
    char *got = get_str(s, "b", "keep", 4, &e);
    CHECK_STR(got, "kept");
    free(got);

    /* Stale uploads: nothing now, everything a week later. */
    CHECK_EQ(fl_store_sweep(s, fl_now_ms()), FL_OK);
    fl_part_info_t *pi;
    size_t np;
    bool trunc;
    REQUIRE(fl_store_mpu_parts(s, "b", "mp", 2, up, 0, 10, &pi, &np, &trunc, NULL) == FL_OK);
    CHECK_EQ(np, 1);
    fl_part_infos_free(pi, np);
    CHECK_EQ(fl_store_sweep(s, fl_now_ms() + FL_STALE_UPLOAD_S * 1000LL + 1000), FL_OK);
    CHECK_EQ(fl_store_mpu_parts(s, "b", "mp", 2, up, 0, 10, &pi, &np, &trunc, NULL), FL_ERR_NO_UPLOAD);
    CHECK_EQ(shard_files(s, dir), 2);
    fl_store_close(s);
}

FL_TEST(store_buckets)
{
    const char *dir = fl_test_tmpdir();
    fl_store_t *s = fl_store_open(dir);
    REQUIRE(s);
    fl_bucket_info_t bi;
    fl_bucket_info_t *v;
    size_t n;
    CHECK_EQ(fl_store_bucket_list(s, &v, &n), FL_OK);
    CHECK_EQ(n, 0);
    free(v);
    CHECK_EQ(fl_store_bucket_head(s, "zeta", &bi), FL_ERR_NO_BUCKET);
    CHECK_EQ(fl_store_bucket_create(s, "zeta"), FL_OK);
    CHECK_EQ(fl_store_bucket_create(s, "alpha"), FL_OK);
    CHECK_EQ(fl_store_bucket_create(s, "zeta"), FL_ERR_EXISTS);
    CHECK_EQ(fl_store_bucket_head(s, "zeta", &bi), FL_OK);
    CHECK_STR(bi.name, "zeta");
    CHECK(bi.created_ms > 0);
    CHECK_EQ(fl_store_bucket_list(s, &v, &n), FL_OK);
    CHECK_EQ(n, 2);
    if (n == 2) { CHECK_STR(v[0].name, "alpha"); CHECK_STR(v[1].name, "zeta"); }
    free(v);

    CHECK_EQ(put_str(s, "zeta", "obj", "x"), FL_OK);
    CHECK_EQ(fl_store_bucket_delete(s, "zeta"), FL_ERR_NOT_EMPTY);
    CHECK_EQ(fl_store_delete(s, "zeta", "obj", 3, NULL), FL_OK);
    char up[FL_STORE_UPLOAD_ID_MAX + 1];
    CHECK_EQ(fl_store_mpu_create(s, "zeta", "u", 1, NULL, up), FL_OK);
    CHECK_EQ(fl_store_bucket_delete(s, "zeta"), FL_ERR_NOT_EMPTY);
    CHECK_EQ(fl_store_mpu_abort(s, "zeta", "u", 1, up), FL_OK);
    CHECK_EQ(fl_store_bucket_delete(s, "zeta"), FL_OK);
    CHECK_EQ(fl_store_bucket_delete(s, "zeta"), FL_ERR_NO_BUCKET);
    CHECK_EQ(fl_store_bucket_head(s, "zeta", &bi), FL_ERR_NO_BUCKET);
    CHECK_EQ(put_str(s, "zeta", "obj", "x"), FL_ERR_NO_BUCKET);
    char longname[80];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    CHECK_EQ(fl_store_bucket_create(s, longname), FL_ERR_INVALID);
    fl_store_close(s);

    /* Reopen: data persists and the schema is not re-applied. */
    s = fl_store_open(dir);
    REQUIRE(s);
    CHECK_EQ(fl_store_bucket_head(s, "alpha", &bi), FL_OK);
    fl_store_close(s);
}

/* A child process overwrites keys in a loop and reports each acknowledged
 * PUT; it is SIGKILLed mid-stream. After reopening, every key holds its last
 * acknowledged version or the one in flight, whole (etag matches), and no
 * temp file or orphan blob is left. */
FL_TEST(store_survives_sigkill)
{
    enum { KEYS = 8, SIZE = 16384 };
    const char *dir = fl_test_tmpdir();
    char path[400];
    snprintf(path, sizeof path, "%s/store", dir);
    fl_store_t *s = fl_store_open(path);
    REQUIRE(s);
    REQUIRE(fl_store_bucket_create(s, "b") == FL_OK);
    fl_store_close(s);
    int pfd[2];
    REQUIRE(pipe(pfd) == 0);
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        fl_store_t *cs = fl_store_open(path);
        if (!cs) _exit(1);
        static char buf[SIZE];
        for (int seq = 1;; seq++) {
            int k = seq % KEYS;
            char key[16];
            snprintf(key, sizeof key, "k%d", k);
            memset(buf, 'a' + seq % 26, sizeof buf);
            int hn = snprintf(buf, 32, "%d %d\n", k, seq);
            buf[hn] = '#';
            if (put_bytes(cs, "b", key, strlen(key), buf, sizeof buf, NULL, NULL) != FL_OK) _exit(2);
            int ack[2] = { k, seq };
            if (write(pfd[1], ack, sizeof ack) != sizeof ack) _exit(3);
        }
    }
    close(pfd[1]);
    int last[KEYS] = { 0 }, acks = 0, ack[2];
    while (acks < 150 && read(pfd[0], ack, sizeof ack) == sizeof ack) {
        last[ack[0]] = ack[1];
        acks++;
    }
    kill(pid, SIGKILL);
    while (read(pfd[0], ack, sizeof ack) == sizeof ack) last[ack[0]] = ack[1]; /* acks in the pipe */
    close(pfd[0]);
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status));
    CHECK_EQ(acks, 150);

    s = fl_store_open(path);
    REQUIRE(s);
    for (int k = 0; k < KEYS; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", k);
        fl_obj_t *o = NULL;
        fl_err_t e = fl_store_get(s, "b", key, strlen(key), &o);
        if (!last[k]) { CHECK(e == FL_OK || e == FL_ERR_NOT_FOUND); fl_obj_close(o); continue; }
        REQUIRE(e == FL_OK);
        char *r = read_all(o);
        REQUIRE(r);
        int kk = -1, seq = -1;
        sscanf(r, "%d %d", &kk, &seq);
        CHECK_EQ(kk, k);
        CHECK(seq >= last[k]);
        CHECK(seq <= last[k] + KEYS);
        char want[33];
        md5_hex(r, SIZE, want);
        CHECK_STR(o->meta.etag, want);
        free(r);
        fl_obj_close(o);
    }
    CHECK_EQ(count_files(path, "tmp"), 0);
    fl_list_res_t lr;
    REQUIRE(fl_store_list(s, "b", NULL, NULL, NULL, 100, &lr) == FL_OK);
    CHECK_EQ(count_files(path, "shards"), (long long)lr.nents);
    fl_list_res_free(&lr);
    fl_store_close(s);
}

/* fl_store_open_s3 refuses what it cannot use, before serving anything: a URL
 * that is not s3://BUCKET[/PREFIX], an endpoint without a scheme, and a store
 * that does not answer (a closed port: connection refused). */
FL_TEST(store_s3_open_refuses)
{
    const char *dir = fl_test_tmpdir();
    fl_store_s3_cfg_t bad[] = {
        { .url = "http://bucket", .endpoint = "http://127.0.0.1:1" },
        { .url = "s3://", .endpoint = "http://127.0.0.1:1" },
        { .url = "s3:///prefix", .endpoint = "http://127.0.0.1:1" },
        { .url = "s3://bucket", .endpoint = "127.0.0.1:1" },
        { .url = "s3://bucket/p", .endpoint = "http://127.0.0.1:1", .path_style = true,
          .akid = "AKID", .secret = "s3cr3t" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK(fl_store_open_s3(dir, &bad[i]) == NULL);
}
